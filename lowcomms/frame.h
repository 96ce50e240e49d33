/*
 * lowcomms/frame.h: the wire frame of node-to-node messages (the midcomms
 * role) and a reassembler that turns a byte stream into whole frames.
 *
 * Pure code: no sockets, no clock, no allocation outside the reassembler's
 * own buffer.  lowcomms.c, the unit tests and the fuzz target all use it.
 * The protocol itself is described at the top of frame.c.
 */
#ifndef DLMD_LOWCOMMS_FRAME_H
#define DLMD_LOWCOMMS_FRAME_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "core/le.h"

/* "DLMF" read as a little-endian 32-bit number; see frame.c for why each
 * dlmd protocol has its own magic. */
#define LC_FRAME_MAGIC		0x464d4c44u
#define LC_FRAME_VERSION	1
#define LC_FRAME_HDR_LEN	32
/* Payload of a HELLO frame: sender epoch, epoch of the receiver as known. */
#define LC_HELLO_PAYLOAD_LEN	8
#define LC_HELLO_LEN		(LC_FRAME_HDR_LEN + LC_HELLO_PAYLOAD_LEN)
/* Largest frame (header included) a reassembler may be configured for. */
#define LC_FRAME_LEN_LIMIT	(16u << 20)

/* What a frame is for lowcomms itself; the application's own message type
 * travels in the type field of DATA frames and is opaque here. */
enum lc_frame_kind {
	LC_KIND_DATA = 1,	/* sequenced application message */
	LC_KIND_ACK = 2,	/* carries only the cumulative ack */
	LC_KIND_HELLO = 3,	/* first frame on a connection, both ways */
};
#define LC_KIND_MAX LC_KIND_HELLO

/*
 * The header as it is on the wire: every field little-endian, naturally
 * aligned, no padding.  Code never casts a buffer to this type; it exists to
 * pin offsets and the size (see the static_asserts in frame.c) and as
 * documentation of the layout.
 */
struct lc_wire_hdr {
	uint32_t wh_magic;	/* LC_FRAME_MAGIC */
	uint8_t wh_version;	/* LC_FRAME_VERSION */
	uint8_t wh_kind;	/* enum lc_frame_kind */
	uint16_t wh_type;	/* application type (DATA), else 0 */
	uint32_t wh_length;	/* header + payload, bytes */
	uint32_t wh_lsid;	/* lockspace id, opaque to lowcomms */
	uint32_t wh_sender;	/* node id of the sender */
	uint32_t wh_target;	/* node id of the receiver */
	uint32_t wh_seq;	/* DATA: sequence number; HELLO: send base */
	uint32_t wh_ack;	/* cumulative ack: all seq <= ack received */
};
static_assert(sizeof(struct lc_wire_hdr) == LC_FRAME_HDR_LEN,
	      "wire header must be 32 bytes");

/* A decoded header, host byte order. */
struct lc_frame_hdr {
	uint32_t fh_magic;
	uint8_t fh_version;
	uint8_t fh_kind;
	uint16_t fh_type;
	uint32_t fh_length;
	uint32_t fh_lsid;
	uint32_t fh_sender;
	uint32_t fh_target;
	uint32_t fh_seq;
	uint32_t fh_ack;
};

/* Why a frame was rejected; lc_frame_err_errno() gives the errno. */
enum lc_frame_err {
	LC_FERR_NONE = 0,
	LC_FERR_MAGIC,		/* -EBADMSG */
	LC_FERR_VERSION,	/* -EPROTONOSUPPORT */
	LC_FERR_KIND,		/* -EOPNOTSUPP: unknown kind */
	LC_FERR_SHORT,		/* -EPROTO: length below the kind's minimum */
	LC_FERR_LONG,		/* -EMSGSIZE: length above the kind's maximum */
	LC_FERR_SENDER,		/* -EPERM: not the node this stream is from */
	LC_FERR_TARGET,		/* -EDESTADDRREQ: not addressed to us */
	LC_FERR_STOPPED,	/* the frame callback returned an error */
};

const char *lc_frame_err_str(enum lc_frame_err err);
int lc_frame_err_errno(enum lc_frame_err err);
const char *lc_frame_kind_str(unsigned int kind);

/* Sequence numbers wrap; compare them as the kernel does. */
static inline int lc_seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline int lc_seq_after(uint32_t a, uint32_t b)
{
	return lc_seq_before(b, a);
}

/* Write the 32-byte header for h into buf. */
void lc_frame_encode(unsigned char *buf, const struct lc_frame_hdr *h);
/* Read a header from buf (at least LC_FRAME_HDR_LEN bytes); no checks. */
void lc_frame_decode(const unsigned char *buf, struct lc_frame_hdr *h);
/* Overwrite the ack field of an encoded frame. */
void lc_frame_set_ack(unsigned char *buf, uint32_t ack);

/*
 * Check a decoded header against the rules: magic, version, known kind,
 * length within the kind's bounds (max_len caps DATA frames), sender equal
 * to expect_sender unless that is 0, target equal to local unless 0.
 * Returns LC_FERR_NONE or the first rule broken.
 */
enum lc_frame_err lc_frame_check(const struct lc_frame_hdr *h, size_t max_len,
				 uint32_t expect_sender, uint32_t local);

/* Called for each whole, checked frame.  Return 0 to go on, or a negative
 * errno to stop: the reassembler then fails with that error. */
typedef int (*lc_frame_fn)(void *arg, const struct lc_frame_hdr *h,
			   const unsigned char *payload, size_t payload_len);

/*
 * Reassembler: feed it bytes as they arrive, in any split; it calls back
 * once per whole frame, in order.  The first bad frame poisons it: that and
 * every later feed return the same error, and ra_err says why.
 */
struct lc_reasm {
	unsigned char *ra_buf;		/* partial frame carried between feeds */
	size_t ra_len;			/* bytes held in ra_buf */
	size_t ra_cap;			/* allocated size of ra_buf */
	size_t ra_max_len;		/* largest DATA frame accepted */
	uint32_t ra_sender;		/* expected sender, 0 = any */
	uint32_t ra_local;		/* our node id, 0 = do not check */
	enum lc_frame_err ra_err;	/* why it failed, or LC_FERR_NONE */
	int ra_errno;			/* sticky negative errno, or 0 */
};

/* max_len: largest frame, header included, between LC_HELLO_LEN and
 * LC_FRAME_LEN_LIMIT.  Returns 0 or -EINVAL. */
/* Grow *buf (*cap bytes allocated, 0: none yet) to hold want bytes,
 * doubling from min_cap: 0, or -ENOMEM with *buf and *cap unchanged.
 * The reassembler's carry buffer and lowcomms.c's record buffer. */
int lc_buf_reserve(unsigned char **buf, size_t *cap, size_t want,
		   size_t min_cap);

int lc_reasm_init(struct lc_reasm *ra, size_t max_len, uint32_t expect_sender,
		  uint32_t local);
void lc_reasm_free(struct lc_reasm *ra);
/* Change the expected sender (once a stream's peer is known). */
void lc_reasm_set_sender(struct lc_reasm *ra, uint32_t expect_sender);
/* Returns 0, or a negative errno on a bad frame, a callback error or
 * -ENOMEM.  Frames before the bad one have been delivered. */
int lc_reasm_feed(struct lc_reasm *ra, const void *data, size_t len,
		  lc_frame_fn fn, void *arg);

#endif /* DLMD_LOWCOMMS_FRAME_H */
