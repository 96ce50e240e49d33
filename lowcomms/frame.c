/*
 * lowcomms/frame.c: frame format, header checks and stream reassembly (the
 * midcomms role), with no I/O.
 *
 * Every byte that travels between two dlmd nodes belongs to a frame.  A
 * frame is a fixed 32-byte little-endian header followed by a payload:
 *
 *    0      4    5    6      8       12     16       20       24    28    32
 *    +------+----+----+------+-------+------+--------+--------+-----+-----+
 *    |magic |ver |kind| type |length | lsid | sender | target | seq | ack |
 *    +------+----+----+------+-------+------+--------+--------+-----+-----+
 *
 * magic and version come first so that a stream from something that is not
 * a dlmd of this protocol is refused on its first header.  The magic is
 * "DLMF", this protocol's alone (core/wire.h lists the others), so that an
 * engine message or a CPG message mistaken for a frame is refused too.  length counts the
 * header and the payload and is checked before anything else is trusted:
 * too short for the kind, or longer than the configured maximum, and the
 * stream is declared bad.  sender and target are node ids; a stream whose
 * peer is known must carry that peer's id in every frame and ours as the
 * target, so a frame that wandered onto the wrong connection is refused.
 *
 * Three kinds of frame:
 *  - HELLO opens each connection, in each direction, before anything else.
 *    Its seq field is the sender's "send base" (the oldest sequence number
 *    it still holds for this peer), its ack field the sender's cumulative
 *    ack, and its 8-byte payload the sender's epoch for this peer and the
 *    epoch of the receiver as the sender knows it (0 when unknown).  The
 *    epochs let a reconnecting pair tell a dropped connection (same epochs:
 *    carry on from the sequence state both kept) from a restart (new epoch:
 *    the receiving side starts over at the send base).  lowcomms.c explains
 *    the handshake.
 *  - DATA carries one application message: type and lsid are the
 *    application's, seq numbers DATA frames per peer from 1, wrapping, with
 *    wrap-safe comparisons.
 *  - ACK carries only the cumulative ack, sent when there is no DATA frame
 *    to piggy-back it on.  Every frame's ack field is the highest seq the
 *    sender has received in order from the receiver.
 *
 * The reassembler accepts bytes in any split (one byte at a time, many
 * frames in one read) and hands out whole frames.  A whole frame that is in
 * one input chunk is delivered straight from that chunk; only a partial
 * frame at the end of a chunk is copied, into a buffer that grows up to the
 * configured maximum frame length.
 *
 * Known limits: the length field allows 4 GiB but a reassembler refuses more
 * than LC_FRAME_LEN_LIMIT; the header has no checksum (TCP's and SCTP's are
 * trusted against noise; against tampering, frames travel inside the
 * authenticated records of auth.c unless dlm.conf says crypto = none); the kind field is checked here, the application type is not
 * (that is the dispatch table's job in the layer above).
 */
#include "lowcomms/frame.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static_assert(offsetof(struct lc_wire_hdr, wh_magic) == 0, "magic offset");
static_assert(offsetof(struct lc_wire_hdr, wh_version) == 4, "version offset");
static_assert(offsetof(struct lc_wire_hdr, wh_kind) == 5, "kind offset");
static_assert(offsetof(struct lc_wire_hdr, wh_type) == 6, "type offset");
static_assert(offsetof(struct lc_wire_hdr, wh_length) == 8, "length offset");
static_assert(offsetof(struct lc_wire_hdr, wh_lsid) == 12, "lsid offset");
static_assert(offsetof(struct lc_wire_hdr, wh_sender) == 16, "sender offset");
static_assert(offsetof(struct lc_wire_hdr, wh_target) == 20, "target offset");
static_assert(offsetof(struct lc_wire_hdr, wh_seq) == 24, "seq offset");
static_assert(offsetof(struct lc_wire_hdr, wh_ack) == 28, "ack offset");

#define OFF_MAGIC	offsetof(struct lc_wire_hdr, wh_magic)
#define OFF_VERSION	offsetof(struct lc_wire_hdr, wh_version)
#define OFF_KIND	offsetof(struct lc_wire_hdr, wh_kind)
#define OFF_TYPE	offsetof(struct lc_wire_hdr, wh_type)
#define OFF_LENGTH	offsetof(struct lc_wire_hdr, wh_length)
#define OFF_LSID	offsetof(struct lc_wire_hdr, wh_lsid)
#define OFF_SENDER	offsetof(struct lc_wire_hdr, wh_sender)
#define OFF_TARGET	offsetof(struct lc_wire_hdr, wh_target)
#define OFF_SEQ		offsetof(struct lc_wire_hdr, wh_seq)
#define OFF_ACK		offsetof(struct lc_wire_hdr, wh_ack)

/* First allocation of a reassembly buffer; it doubles up to ra_max_len. */
#define REASM_MIN_CAP	256

/* Length bounds per kind; a max of 0 means "the configured maximum". */
static const struct {
	const char *name;
	size_t min_len;
	size_t max_len;
} kind_table[LC_KIND_MAX + 1] = {
	[LC_KIND_DATA] = { "data", LC_FRAME_HDR_LEN, 0 },
	[LC_KIND_ACK] = { "ack", LC_FRAME_HDR_LEN, LC_FRAME_HDR_LEN },
	[LC_KIND_HELLO] = { "hello", LC_HELLO_LEN, LC_HELLO_LEN },
};

const char *lc_frame_kind_str(unsigned int kind)
{
	if (kind > LC_KIND_MAX || !kind_table[kind].name)
		return "unknown";
	return kind_table[kind].name;
}

const char *lc_frame_err_str(enum lc_frame_err err)
{
	switch (err) {
	case LC_FERR_NONE: return "ok";
	case LC_FERR_MAGIC: return "bad magic";
	case LC_FERR_VERSION: return "unsupported version";
	case LC_FERR_KIND: return "unknown frame kind";
	case LC_FERR_SHORT: return "frame too short";
	case LC_FERR_LONG: return "frame too long";
	case LC_FERR_SENDER: return "frame from the wrong node";
	case LC_FERR_TARGET: return "frame for another node";
	case LC_FERR_STOPPED: return "frame refused by handler";
	}
	return "unknown error";
}

int lc_frame_err_errno(enum lc_frame_err err)
{
	switch (err) {
	case LC_FERR_NONE: return 0;
	case LC_FERR_MAGIC: return -EBADMSG;
	case LC_FERR_VERSION: return -EPROTONOSUPPORT;
	case LC_FERR_KIND: return -EOPNOTSUPP;
	case LC_FERR_SHORT: return -EPROTO;
	case LC_FERR_LONG: return -EMSGSIZE;
	case LC_FERR_SENDER: return -EPERM;
	case LC_FERR_TARGET: return -EDESTADDRREQ;
	case LC_FERR_STOPPED: return -ECANCELED;
	}
	return -EINVAL;
}

void lc_frame_encode(unsigned char *buf, const struct lc_frame_hdr *h)
{
	dlm_put_le32(buf + OFF_MAGIC, h->fh_magic);
	buf[OFF_VERSION] = h->fh_version;
	buf[OFF_KIND] = h->fh_kind;
	dlm_put_le16(buf + OFF_TYPE, h->fh_type);
	dlm_put_le32(buf + OFF_LENGTH, h->fh_length);
	dlm_put_le32(buf + OFF_LSID, h->fh_lsid);
	dlm_put_le32(buf + OFF_SENDER, h->fh_sender);
	dlm_put_le32(buf + OFF_TARGET, h->fh_target);
	dlm_put_le32(buf + OFF_SEQ, h->fh_seq);
	dlm_put_le32(buf + OFF_ACK, h->fh_ack);
}

void lc_frame_decode(const unsigned char *buf, struct lc_frame_hdr *h)
{
	h->fh_magic = dlm_get_le32(buf + OFF_MAGIC);
	h->fh_version = buf[OFF_VERSION];
	h->fh_kind = buf[OFF_KIND];
	h->fh_type = dlm_get_le16(buf + OFF_TYPE);
	h->fh_length = dlm_get_le32(buf + OFF_LENGTH);
	h->fh_lsid = dlm_get_le32(buf + OFF_LSID);
	h->fh_sender = dlm_get_le32(buf + OFF_SENDER);
	h->fh_target = dlm_get_le32(buf + OFF_TARGET);
	h->fh_seq = dlm_get_le32(buf + OFF_SEQ);
	h->fh_ack = dlm_get_le32(buf + OFF_ACK);
}

void lc_frame_set_ack(unsigned char *buf, uint32_t ack)
{
	dlm_put_le32(buf + OFF_ACK, ack);
}

enum lc_frame_err lc_frame_check(const struct lc_frame_hdr *h, size_t max_len,
				 uint32_t expect_sender, uint32_t local)
{
	size_t kind_max;

	if (h->fh_magic != LC_FRAME_MAGIC)
		return LC_FERR_MAGIC;
	if (h->fh_version != LC_FRAME_VERSION)
		return LC_FERR_VERSION;
	if (h->fh_kind > LC_KIND_MAX || !kind_table[h->fh_kind].name)
		return LC_FERR_KIND;
	if (h->fh_length < kind_table[h->fh_kind].min_len)
		return LC_FERR_SHORT;
	kind_max = kind_table[h->fh_kind].max_len;
	if (!kind_max)
		kind_max = max_len;
	if (h->fh_length > kind_max)
		return LC_FERR_LONG;
	if (expect_sender && h->fh_sender != expect_sender)
		return LC_FERR_SENDER;
	if (local && h->fh_target != local)
		return LC_FERR_TARGET;
	return LC_FERR_NONE;
}

int lc_reasm_init(struct lc_reasm *ra, size_t max_len, uint32_t expect_sender,
		  uint32_t local)
{
	memset(ra, 0, sizeof(*ra));
	if (max_len < LC_HELLO_LEN || max_len > LC_FRAME_LEN_LIMIT)
		return -EINVAL;
	ra->ra_max_len = max_len;
	ra->ra_sender = expect_sender;
	ra->ra_local = local;
	return 0;
}

void lc_reasm_free(struct lc_reasm *ra)
{
	free(ra->ra_buf);
	ra->ra_buf = NULL;
	ra->ra_len = 0;
	ra->ra_cap = 0;
}

void lc_reasm_set_sender(struct lc_reasm *ra, uint32_t expect_sender)
{
	ra->ra_sender = expect_sender;
}

static int fail(struct lc_reasm *ra, enum lc_frame_err err, int rv)
{
	ra->ra_err = err;
	ra->ra_errno = rv ? rv : lc_frame_err_errno(err);
	return ra->ra_errno;
}

/* Decode and check the header at buf; on success *h is filled. */
static int check_header(struct lc_reasm *ra, const unsigned char *buf,
			struct lc_frame_hdr *h)
{
	enum lc_frame_err err;

	lc_frame_decode(buf, h);
	err = lc_frame_check(h, ra->ra_max_len, ra->ra_sender, ra->ra_local);
	if (err != LC_FERR_NONE)
		return fail(ra, err, 0);
	return 0;
}

static int deliver(struct lc_reasm *ra, const struct lc_frame_hdr *h,
		   const unsigned char *frame, lc_frame_fn fn, void *arg)
{
	int rv;

	rv = fn(arg, h, frame + LC_FRAME_HDR_LEN,
		h->fh_length - LC_FRAME_HDR_LEN);
	if (rv < 0)
		return fail(ra, LC_FERR_STOPPED, rv);
	return 0;
}

int lc_buf_reserve(unsigned char **buf, size_t *cap, size_t want,
		   size_t min_cap)
{
	size_t n = *cap ? *cap : min_cap;
	unsigned char *p;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* Make room for want bytes in the carry buffer. */
static int reserve(struct lc_reasm *ra, size_t want)
{
	int rv = lc_buf_reserve(&ra->ra_buf, &ra->ra_cap, want, REASM_MIN_CAP);

	return rv ? fail(ra, LC_FERR_NONE, rv) : 0;
}

static int append(struct lc_reasm *ra, const unsigned char *p, size_t n)
{
	int rv = reserve(ra, ra->ra_len + n);

	if (rv < 0)
		return rv;
	memcpy(ra->ra_buf + ra->ra_len, p, n);
	ra->ra_len += n;
	return 0;
}

int lc_reasm_feed(struct lc_reasm *ra, const void *data, size_t len,
		  lc_frame_fn fn, void *arg)
{
	const unsigned char *p = data;
	struct lc_frame_hdr h;
	size_t take;
	int rv;

	if (ra->ra_errno)
		return ra->ra_errno;

	/* Finish the frame carried over from earlier feeds. */
	if (ra->ra_len) {
		if (ra->ra_len < LC_FRAME_HDR_LEN) {
			take = LC_FRAME_HDR_LEN - ra->ra_len;
			if (take > len)
				take = len;
			rv = append(ra, p, take);
			if (rv < 0)
				return rv;
			p += take;
			len -= take;
			if (ra->ra_len < LC_FRAME_HDR_LEN)
				return 0;
		}
		rv = check_header(ra, ra->ra_buf, &h);
		if (rv < 0)
			return rv;
		take = h.fh_length - ra->ra_len;
		if (take > len)
			take = len;
		rv = append(ra, p, take);
		if (rv < 0)
			return rv;
		p += take;
		len -= take;
		if (ra->ra_len < h.fh_length)
			return 0;
		ra->ra_len = 0;
		rv = deliver(ra, &h, ra->ra_buf, fn, arg);
		if (rv < 0)
			return rv;
	}

	/* Whole frames straight from the input. */
	while (len >= LC_FRAME_HDR_LEN) {
		rv = check_header(ra, p, &h);
		if (rv < 0)
			return rv;
		if (h.fh_length > len)
			break;
		rv = deliver(ra, &h, p, fn, arg);
		if (rv < 0)
			return rv;
		p += h.fh_length;
		len -= h.fh_length;
	}

	/* Keep the partial frame at the end for the next feed. */
	if (len)
		return append(ra, p, len);
	return 0;
}
