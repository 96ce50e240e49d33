/*
 * plugin/cpgmsg.c - encode and decode the dlmd CPG messages
 * (layouts in plugin/cpgmsg.h).  No corosync here: the lockspace
 * protocol (plugin/cluster.c) sends and receives, this file only turns
 * structures into bytes and checks bytes before they become structures,
 * and seals and verifies them (libsodium, as lowcomms/auth.c).
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "plugin/cpgmsg.h"
#include "core/le.h"
#include "lowcomms/lowcomms.h"

static_assert(crypto_auth_hmacsha512256_BYTES == CM_MAC_LEN, "MAC length");
static_assert(crypto_auth_hmacsha512256_KEYBYTES == CM_KEY_LEN,
	      "MAC key length");
static_assert(crypto_kdf_KEYBYTES == CM_KEY_LEN, "KDF key length");

#define CM_KDF_CONTEXT	"dlmdcpg1"	/* 8 bytes; lowcomms uses "dlmdlcv1" */
#define CM_KDF_ID	1

/* The header goes on the wire field by field, each at its offset in
 * struct cm_hdr, which has no padding: these pin that layout, the one
 * plugin/cpgmsg.h documents, so a field added or reordered there cannot
 * silently move the bytes of every message. */
#define HOFF(f)		offsetof(struct cm_hdr, f)
static_assert(HOFF(h_magic) == 0, "magic offset");
static_assert(HOFF(h_version) == 4, "version offset");
static_assert(HOFF(h_type) == 6, "type offset");
static_assert(HOFF(h_length) == 8, "length offset");
static_assert(HOFF(h_sender) == 12, "sender offset");
static_assert(HOFF(h_target) == 16, "target offset");
static_assert(HOFF(h_lsid) == 20, "lsid offset");
static_assert(HOFF(h_seq) == 24, "seq offset");
static_assert(sizeof(struct cm_hdr) == CM_HDR_LEN, "header size");

static int name_char_ok(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '/';
}

int dlmd_cm_name_valid(const char *name)
{
	size_t len = strnlen(name, DLM_LOCKSPACE_LEN + 1);

	if (len == 0 || len > DLM_LOCKSPACE_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!name_char_ok((unsigned char)name[i]))
			return 0;
	return 1;
}

static void put_hdr(unsigned char *p, const struct cm_hdr *h, uint16_t type,
		    size_t len)
{
	dlm_put_le32(p + HOFF(h_magic), CM_MAGIC);
	dlm_put_le16(p + HOFF(h_version), CM_VERSION);
	dlm_put_le16(p + HOFF(h_type), type);
	dlm_put_le32(p + HOFF(h_length), (uint32_t)len);
	dlm_put_le32(p + HOFF(h_sender), h->h_sender);
	dlm_put_le32(p + HOFF(h_target), h->h_target);
	dlm_put_le32(p + HOFF(h_lsid), h->h_lsid);
	dlm_put_le32(p + HOFF(h_seq), h->h_seq);
}

/* A NAME field at p; returns its length. */
static size_t put_name(unsigned char *p, const char *name)
{
	size_t n = strlen(name);

	dlm_put_le32(p, (uint32_t)n);
	memcpy(p + 4, name, n);
	return 4 + n;
}

/* Decode a NAME field from p (avail bytes): its length, or 0. */
static size_t get_name(const unsigned char *p, size_t avail,
		       struct cm_name *out, const char **why)
{
	uint32_t n;

	if (avail < 4) {
		*why = "name field cut short";
		return 0;
	}
	n = dlm_get_le32(p);
	if (n == 0 || n > DLM_LOCKSPACE_LEN) {
		*why = "lockspace name of a bad length";
		return 0;
	}
	if (avail - 4 < n) {
		*why = "name field cut short";
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!name_char_ok(p[4 + i])) {
			*why = "lockspace name with a byte that is not graphic "
			       "ASCII, or a '/'";
			return 0;
		}
	}
	memcpy(out->n_name, p + 4, n);
	out->n_name[n] = '\0';
	return 4 + (size_t)n;
}

/* Engine settings out of dlm.conf's ranges, or with undefined flags:
 * NULL if none (the START's settings are what a dlmd can run with). */
static const char *settings_bad(const struct cm_settings *es)
{
	if (es->es_remaster_secs > CM_ES_SECS_MAX)
		return "START with remaster_secs over 86400";
	if (es->es_remaster_window < CM_ES_WINDOW_MIN ||
	    es->es_remaster_window > CM_ES_WINDOW_MAX)
		return "START with remaster_window out of 4..65534";
	if (es->es_flags & ~CM_ES_FLAGS)
		return "START with undefined settings flags";
	return NULL;
}

size_t dlmd_cm_start_encode(unsigned char *buf, const struct cm_hdr *h,
			    const struct cm_start *st)
{
	size_t len;
	unsigned char *p;

	if (!dlmd_cm_name_valid(st->st_ls.n_name) ||
	    st->st_nmembers > DLM_MAX_NODES || st->st_nprev > DLM_MAX_NODES)
		return 0;
	if (settings_bad(&st->st_set))
		return 0;
	len = CM_HDR_LEN + 4 + strlen(st->st_ls.n_name) + CM_START_FIXED +
	      4 * ((size_t)st->st_nmembers + st->st_nprev);
	put_hdr(buf, h, CM_START, len);
	p = buf + CM_HDR_LEN;
	p += put_name(p, st->st_ls.n_name);
	dlm_put_le32(p, st->st_last_event);
	dlm_put_le32(p + 4, st->st_flags);
	dlm_put_le32(p + 8, st->st_nmembers);
	dlm_put_le32(p + 12, st->st_nprev);
	dlm_put_le32(p + 16, st->st_set.es_remaster_secs);
	dlm_put_le32(p + 20, st->st_set.es_remaster_window);
	dlm_put_le32(p + 24, st->st_set.es_flags);
	p += CM_START_FIXED;
	for (uint32_t i = 0; i < st->st_nmembers; i++, p += 4)
		dlm_put_le32(p, st->st_members[i]);
	for (uint32_t i = 0; i < st->st_nprev; i++, p += 4)
		dlm_put_le32(p, st->st_prev[i]);
	return len;
}

size_t dlmd_cm_ls_encode(unsigned char *buf, const struct cm_hdr *h,
			 uint16_t type, const char *name)
{
	size_t len;

	if ((type != CM_JOIN && type != CM_LEAVE) || !dlmd_cm_name_valid(name))
		return 0;
	len = CM_HDR_LEN + 4 + strlen(name);
	put_hdr(buf, h, type, len);
	put_name(buf + CM_HDR_LEN, name);
	return len;
}

/* ANNOUNCE flags: defined ones only, VOUCH only with FIRST. */
static bool ann_flags_bad(uint32_t f)
{
	return (f & ~(CM_ANN_FIRST | CM_ANN_LAST | CM_ANN_VOUCH)) ||
	       ((f & CM_ANN_VOUCH) && !(f & CM_ANN_FIRST));
}

size_t dlmd_cm_announce_encode(unsigned char *buf, const struct cm_hdr *h,
			       const struct cm_announce *an)
{
	size_t len = CM_HDR_LEN + CM_ANN_FIXED;
	unsigned char *p;

	if (an->an_count > CM_ANN_MAX || ann_flags_bad(an->an_flags) ||
	    an->an_nvouch > DLM_MAX_NODES ||
	    (!(an->an_flags & CM_ANN_VOUCH) && an->an_nvouch))
		return 0;
	for (uint32_t i = 0; i < an->an_nvouch; i++)
		if (!an->an_vouch[i].v_id || !an->an_vouch[i].v_inc)
			return 0;
	for (uint32_t i = 0; i < an->an_count; i++) {
		if (!dlmd_cm_name_valid(an->an_ls[i].n_name))
			return 0;
		len += 4 + strlen(an->an_ls[i].n_name);
	}
	len += CM_VOUCH_LEN * (size_t)an->an_nvouch;
	put_hdr(buf, h, CM_ANNOUNCE, len);
	p = buf + CM_HDR_LEN;
	dlm_put_le32(p, an->an_flags);
	dlm_put_le32(p + 4, an->an_view);
	dlm_put_le32(p + 8, an->an_count);
	dlm_put_le32(p + 12, an->an_nvouch);
	p += CM_ANN_FIXED;
	for (uint32_t i = 0; i < an->an_count; i++)
		p += put_name(p, an->an_ls[i].n_name);
	for (uint32_t i = 0; i < an->an_nvouch; i++, p += CM_VOUCH_LEN) {
		dlm_put_le32(p, an->an_vouch[i].v_id);
		dlm_put_le32(p + 4, an->an_vouch[i].v_pid);
		dlm_put_le32(p + 8, (uint32_t)an->an_vouch[i].v_inc);
		dlm_put_le32(p + 12, (uint32_t)(an->an_vouch[i].v_inc >> 32));
	}
	return len;
}

size_t dlmd_cm_failed_encode(unsigned char *buf, const struct cm_hdr *h,
			     const struct cm_failed *fl)
{
	size_t len;
	unsigned char *p;

	if (!dlmd_cm_name_valid(fl->fl_ls.n_name) || fl->fl_count > DLM_MAX_NODES)
		return 0;
	for (uint32_t i = 0; i < fl->fl_count; i++)
		if (!fl->fl_ids[i] || (fl->fl_flags[i] & ~CM_FAILED_FLAGS))
			return 0;
	len = CM_HDR_LEN + 4 + strlen(fl->fl_ls.n_name) + CM_FAILED_FIXED +
	      CM_FAILED_ENTRY * (size_t)fl->fl_count;
	put_hdr(buf, h, CM_FAILED, len);
	p = buf + CM_HDR_LEN;
	p += put_name(p, fl->fl_ls.n_name);
	dlm_put_le32(p, fl->fl_event);
	dlm_put_le32(p + 4, fl->fl_count);
	p += CM_FAILED_FIXED;
	for (uint32_t i = 0; i < fl->fl_count; i++, p += CM_FAILED_ENTRY) {
		dlm_put_le32(p, fl->fl_ids[i]);
		dlm_put_le32(p + 4, fl->fl_flags[i]);
		dlm_put_le32(p + 8, fl->fl_pids[i]);
		dlm_put_le32(p + 12, (uint32_t)fl->fl_incs[i]);
		dlm_put_le32(p + 16, (uint32_t)(fl->fl_incs[i] >> 32));
	}
	return len;
}

size_t dlmd_cm_restart_encode(unsigned char *buf, const struct cm_hdr *h,
			      const struct cm_restart *rs)
{
	size_t len, off;

	if (!dlmd_cm_name_valid(rs->rs_ls.n_name) || !rs->rs_event)
		return 0;
	len = CM_HDR_LEN + 4 + strlen(rs->rs_ls.n_name) + CM_RESTART_FIXED;
	put_hdr(buf, h, CM_RESTART, len);
	off = CM_HDR_LEN + put_name(buf + CM_HDR_LEN, rs->rs_ls.n_name);
	dlm_put_le32(buf + off, rs->rs_event);
	return len;
}

/* The ids of an UNREACH: none 0, strictly increasing (so no repeats,
 * and one set has one encoding). */
static bool unreach_ids_ok(const struct cm_unreach *ur, const char **why)
{
	for (uint32_t i = 0; i < ur->ur_count; i++) {
		if (!ur->ur_ids[i]) {
			*why = "UNREACH with node id 0";
			return false;
		}
		if (i && ur->ur_ids[i] <= ur->ur_ids[i - 1]) {
			*why = "UNREACH with node ids not strictly increasing";
			return false;
		}
	}
	return true;
}

size_t dlmd_cm_unreach_encode(unsigned char *buf, const struct cm_hdr *h,
			      const struct cm_unreach *ur)
{
	const char *why;
	size_t len;

	if (ur->ur_flags || ur->ur_count > DLM_MAX_NODES ||
	    !unreach_ids_ok(ur, &why))
		return 0;
	len = CM_HDR_LEN + CM_UNREACH_FIXED + 4 * (size_t)ur->ur_count;
	put_hdr(buf, h, CM_UNREACH, len);
	dlm_put_le32(buf + CM_HDR_LEN, ur->ur_flags);
	dlm_put_le32(buf + CM_HDR_LEN + 4, ur->ur_count);
	for (uint32_t i = 0; i < ur->ur_count; i++)
		dlm_put_le32(buf + CM_HDR_LEN + CM_UNREACH_FIXED + 4 * i,
			     ur->ur_ids[i]);
	return len;
}

size_t dlmd_cm_config_encode(unsigned char *buf, const struct cm_hdr *h,
			     const struct cm_config *cg)
{
	bool sync = cg->cg_flags == CM_CONFIG_SYNC;
	size_t len = sync ? CM_CONFIG_SYNC_LEN : CM_CONFIG_LEN;

	if ((cg->cg_flags && !sync) || (!sync && cg->cg_view) ||
	    !cg->cg_nnodes || cg->cg_nnodes > DLM_MAX_NODES)
		return 0;
	put_hdr(buf, h, CM_CONFIG, len);
	dlm_put_le32(buf + CM_HDR_LEN, cg->cg_flags);
	dlm_put_le32(buf + CM_HDR_LEN + 4, cg->cg_nnodes);
	dlm_put_le32(buf + CM_HDR_LEN + 8, cg->cg_tiebreak);
	if (sync)
		dlm_put_le32(buf + CM_HDR_LEN + 12, cg->cg_view);
	return len;
}

static bool fence_ok(uint16_t type, const struct cm_fence *fc)
{
	if (!fc->fc_nodeid)
		return false;
	if (type == CM_FENCE_CLAIM)
		return fc->fc_status == 0;
	return type == CM_FENCE_RESULT && fc->fc_status <= CM_FENCE_RELEASED;
}

size_t dlmd_cm_fence_encode(unsigned char *buf, const struct cm_hdr *h,
			    uint16_t type, const struct cm_fence *fc)
{
	if (!fence_ok(type, fc))
		return 0;
	put_hdr(buf, h, type, CM_FENCE_LEN);
	dlm_put_le32(buf + CM_HDR_LEN, fc->fc_nodeid);
	dlm_put_le32(buf + CM_HDR_LEN + 4, fc->fc_status);
	return CM_FENCE_LEN;
}

int dlmd_cm_hdr_decode(const unsigned char *msg, size_t len, struct cm_hdr *h,
		       const char **why)
{
	if (len < CM_HDR_LEN) {
		*why = "shorter than the header";
		return -EINVAL;
	}
	h->h_magic = dlm_get_le32(msg + HOFF(h_magic));
	h->h_version = dlm_get_le16(msg + HOFF(h_version));
	h->h_type = dlm_get_le16(msg + HOFF(h_type));
	h->h_length = dlm_get_le32(msg + HOFF(h_length));
	h->h_sender = dlm_get_le32(msg + HOFF(h_sender));
	h->h_target = dlm_get_le32(msg + HOFF(h_target));
	h->h_lsid = dlm_get_le32(msg + HOFF(h_lsid));
	h->h_seq = dlm_get_le32(msg + HOFF(h_seq));
	if (h->h_magic != CM_MAGIC) {
		*why = "bad magic";
		return -EINVAL;
	}
	if (h->h_version != CM_VERSION) {
		*why = "another protocol version";
		return -EPROTONOSUPPORT;
	}
	if (len > CM_MAX_LEN) {
		*why = "longer than any message";
		return -EINVAL;
	}
	if (h->h_length != len) {
		*why = "length differs from the header's";
		return -EINVAL;
	}
	return 0;
}

int dlmd_cm_start_decode(const unsigned char *body, size_t len,
			 struct cm_start *st, const char **why)
{
	const unsigned char *p = body;
	size_t nl;

	memset(st, 0, sizeof(*st));
	nl = get_name(p, len, &st->st_ls, why);
	if (!nl)
		return -EINVAL;
	p += nl;
	len -= nl;
	if (len < CM_START_FIXED) {
		*why = "START shorter than its fixed part";
		return -EINVAL;
	}
	st->st_last_event = dlm_get_le32(p);
	st->st_flags = dlm_get_le32(p + 4);
	st->st_nmembers = dlm_get_le32(p + 8);
	st->st_nprev = dlm_get_le32(p + 12);
	st->st_set.es_remaster_secs = dlm_get_le32(p + 16);
	st->st_set.es_remaster_window = dlm_get_le32(p + 20);
	st->st_set.es_flags = dlm_get_le32(p + 24);
	*why = settings_bad(&st->st_set);
	if (*why)
		return -EINVAL;
	if (st->st_nmembers > DLM_MAX_NODES || st->st_nprev > DLM_MAX_NODES) {
		*why = "START with more node ids than a lockspace has members";
		return -EINVAL;
	}
	if (len != CM_START_FIXED + 4 * ((size_t)st->st_nmembers + st->st_nprev)) {
		*why = "START length differs from its counts";
		return -EINVAL;
	}
	p += CM_START_FIXED;
	for (uint32_t i = 0; i < st->st_nmembers; i++, p += 4)
		st->st_members[i] = dlm_get_le32(p);
	for (uint32_t i = 0; i < st->st_nprev; i++, p += 4)
		st->st_prev[i] = dlm_get_le32(p);
	return 0;
}

int dlmd_cm_ls_decode(const unsigned char *body, size_t len,
		      struct cm_name *name, const char **why)
{
	size_t nl = get_name(body, len, name, why);

	if (!nl)
		return -EINVAL;
	if (nl != len) {
		*why = "JOIN/LEAVE longer than its name";
		return -EINVAL;
	}
	return 0;
}

int dlmd_cm_announce_decode(const unsigned char *body, size_t len,
			    struct cm_announce *an, const char **why)
{
	const unsigned char *p = body;

	if (len < CM_ANN_FIXED) {
		*why = "ANNOUNCE shorter than its fixed part";
		return -EINVAL;
	}
	an->an_flags = dlm_get_le32(p);
	an->an_view = dlm_get_le32(p + 4);
	an->an_count = dlm_get_le32(p + 8);
	an->an_nvouch = dlm_get_le32(p + 12);
	if (ann_flags_bad(an->an_flags)) {
		*why = "ANNOUNCE with undefined flags, or VOUCH without FIRST";
		return -EINVAL;
	}
	if (an->an_count > CM_ANN_MAX) {
		*why = "ANNOUNCE with too many names";
		return -EINVAL;
	}
	if (an->an_nvouch > DLM_MAX_NODES ||
	    (!(an->an_flags & CM_ANN_VOUCH) && an->an_nvouch)) {
		*why = "ANNOUNCE with too many vouches, or some without VOUCH";
		return -EINVAL;
	}
	p += CM_ANN_FIXED;
	len -= CM_ANN_FIXED;
	for (uint32_t i = 0; i < an->an_count; i++) {
		size_t nl = get_name(p, len, &an->an_ls[i], why);

		if (!nl)
			return -EINVAL;
		p += nl;
		len -= nl;
	}
	if (len != CM_VOUCH_LEN * (size_t)an->an_nvouch) {
		*why = "ANNOUNCE length differs from its names and vouches";
		return -EINVAL;
	}
	for (uint32_t i = 0; i < an->an_nvouch; i++, p += CM_VOUCH_LEN) {
		struct cm_vouch *v = &an->an_vouch[i];

		v->v_id = dlm_get_le32(p);
		v->v_pid = dlm_get_le32(p + 4);
		v->v_inc = dlm_get_le32(p + 8) |
			   (uint64_t)dlm_get_le32(p + 12) << 32;
		if (!v->v_id || !v->v_inc) {
			*why = "ANNOUNCE vouching for node id 0 or incarnation 0";
			return -EINVAL;
		}
	}
	return 0;
}

int dlmd_cm_failed_decode(const unsigned char *body, size_t len,
			  struct cm_failed *fl, const char **why)
{
	const unsigned char *p = body;
	size_t nl;

	memset(fl, 0, sizeof(*fl));
	nl = get_name(p, len, &fl->fl_ls, why);
	if (!nl)
		return -EINVAL;
	p += nl;
	len -= nl;
	if (len < CM_FAILED_FIXED) {
		*why = "FAILED shorter than its fixed part";
		return -EINVAL;
	}
	fl->fl_event = dlm_get_le32(p);
	fl->fl_count = dlm_get_le32(p + 4);
	if (fl->fl_count > DLM_MAX_NODES) {
		*why = "FAILED with more node ids than a lockspace has members";
		return -EINVAL;
	}
	if (len != CM_FAILED_FIXED + CM_FAILED_ENTRY * (size_t)fl->fl_count) {
		*why = "FAILED length differs from its count";
		return -EINVAL;
	}
	p += CM_FAILED_FIXED;
	for (uint32_t i = 0; i < fl->fl_count; i++, p += CM_FAILED_ENTRY) {
		fl->fl_ids[i] = dlm_get_le32(p);
		fl->fl_flags[i] = dlm_get_le32(p + 4);
		fl->fl_pids[i] = dlm_get_le32(p + 8);
		fl->fl_incs[i] = (uint64_t)dlm_get_le32(p + 12) |
				 (uint64_t)dlm_get_le32(p + 16) << 32;
		if (!fl->fl_ids[i]) {
			*why = "FAILED with node id 0";
			return -EINVAL;
		}
		if (fl->fl_flags[i] & ~CM_FAILED_FLAGS) {
			*why = "FAILED with undefined flags";
			return -EINVAL;
		}
	}
	return 0;
}

int dlmd_cm_restart_decode(const unsigned char *body, size_t len,
			   struct cm_restart *rs, const char **why)
{
	size_t nl;

	memset(rs, 0, sizeof(*rs));
	nl = get_name(body, len, &rs->rs_ls, why);
	if (!nl)
		return -EINVAL;
	if (len - nl != CM_RESTART_FIXED) {
		*why = "LS_RESTART length differs from its layout";
		return -EINVAL;
	}
	rs->rs_event = dlm_get_le32(body + nl);
	if (!rs->rs_event) {
		*why = "LS_RESTART of event 0";
		return -EINVAL;
	}
	return 0;
}

int dlmd_cm_fence_decode(const unsigned char *body, size_t len, uint16_t type,
			 struct cm_fence *fc, const char **why)
{
	if (len != CM_FENCE_LEN - CM_HDR_LEN) {
		*why = "FENCE_CLAIM/FENCE_RESULT of a bad length";
		return -EINVAL;
	}
	fc->fc_nodeid = dlm_get_le32(body);
	fc->fc_status = dlm_get_le32(body + 4);
	if (!fc->fc_nodeid) {
		*why = "FENCE_CLAIM/FENCE_RESULT of node id 0";
		return -EINVAL;
	}
	if (!fence_ok(type, fc)) {
		*why = "FENCE_CLAIM/FENCE_RESULT with an undefined status";
		return -EINVAL;
	}
	return 0;
}

int dlmd_cm_config_decode(const unsigned char *body, size_t len,
			  struct cm_config *cg, const char **why)
{
	if (len != CM_CONFIG_LEN - CM_HDR_LEN &&
	    len != CM_CONFIG_SYNC_LEN - CM_HDR_LEN) {
		*why = "CONFIG of a bad length";
		return -EINVAL;
	}
	cg->cg_flags = dlm_get_le32(body);
	cg->cg_nnodes = dlm_get_le32(body + 4);
	cg->cg_tiebreak = dlm_get_le32(body + 8);
	cg->cg_view = 0;
	if (cg->cg_flags & ~CM_CONFIG_SYNC) {
		*why = "CONFIG with undefined flags";
		return -EINVAL;
	}
	if ((cg->cg_flags == CM_CONFIG_SYNC) !=
	    (len == CM_CONFIG_SYNC_LEN - CM_HDR_LEN)) {
		*why = "CONFIG whose length does not match its flags";
		return -EINVAL;
	}
	if (cg->cg_flags == CM_CONFIG_SYNC)
		cg->cg_view = dlm_get_le32(body + 12);
	if (!cg->cg_nnodes || cg->cg_nnodes > DLM_MAX_NODES) {
		*why = "CONFIG of no or too many nodes";
		return -EINVAL;
	}
	return 0;
}

int dlmd_cm_unreach_decode(const unsigned char *body, size_t len,
			   struct cm_unreach *ur, const char **why)
{
	memset(ur, 0, sizeof(*ur));
	if (len < CM_UNREACH_FIXED) {
		*why = "UNREACH shorter than its fixed part";
		return -EINVAL;
	}
	ur->ur_flags = dlm_get_le32(body);
	ur->ur_count = dlm_get_le32(body + 4);
	if (ur->ur_flags) {
		*why = "UNREACH with undefined flags";
		return -EINVAL;
	}
	if (ur->ur_count > DLM_MAX_NODES) {
		*why = "UNREACH with more node ids than a cluster has nodes";
		return -EINVAL;
	}
	if (len != CM_UNREACH_FIXED + 4 * (size_t)ur->ur_count) {
		*why = "UNREACH length differs from its count";
		return -EINVAL;
	}
	for (uint32_t i = 0; i < ur->ur_count; i++)
		ur->ur_ids[i] = dlm_get_le32(body + CM_UNREACH_FIXED + 4 * i);
	return unreach_ids_ok(ur, why) ? 0 : -EINVAL;
}

/* ---- the SEAL ---------------------------------------------------------- */

void dlmd_cm_key_derive(const unsigned char cluster_key[CM_KEY_LEN],
			unsigned char key[CM_KEY_LEN])
{
	crypto_kdf_derive_from_key(key, CM_KEY_LEN, CM_KDF_ID, CM_KDF_CONTEXT,
				   cluster_key);
	lc_secret_burn_stack();
}

unsigned char *dlmd_cm_key_new(const unsigned char *cluster_key)
{
	unsigned char *key = lc_secret_alloc(CM_KEY_LEN);	/* zeroed */

	if (key && cluster_key)
		dlmd_cm_key_derive(cluster_key, key);
	return key;
}

/* The MAC of msg[0 .. len) as sent by (nodeid, pid). */
static void seal_mac(unsigned char mac[CM_MAC_LEN], const unsigned char *msg,
		     size_t len, const unsigned char key[CM_KEY_LEN],
		     uint32_t nodeid, uint32_t pid)
{
	crypto_auth_hmacsha512256_state st;
	unsigned char who[8];

	dlm_put_le32(who, nodeid);
	dlm_put_le32(who + 4, pid);
	crypto_auth_hmacsha512256_init(&st, key, CM_KEY_LEN);
	crypto_auth_hmacsha512256_update(&st, who, sizeof(who));
	crypto_auth_hmacsha512256_update(&st, msg, len);
	crypto_auth_hmacsha512256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

size_t dlmd_cm_seal(unsigned char *buf, size_t len,
		    const unsigned char key[CM_KEY_LEN], uint32_t nodeid,
		    uint32_t pid, const struct cm_seal *se)
{
	unsigned char *t = buf + len;

	dlm_put_le64(t, se->se_inc);
	dlm_put_le64(t + 8, se->se_seq);
	seal_mac(t + 16, buf, len + 16, key, nodeid, pid);
	return len + CM_SEAL_LEN;
}

int dlmd_cm_open(const unsigned char *msg, size_t len,
		 const unsigned char key[CM_KEY_LEN], uint32_t nodeid,
		 uint32_t pid, struct cm_seal *se, size_t *inner,
		 const char **why)
{
	unsigned char mac[CM_MAC_LEN];
	const unsigned char *t;
	int bad;

	if (len < CM_HDR_LEN + CM_SEAL_LEN) {
		*why = "shorter than a header and a seal";
		return -EBADMSG;
	}
	if (len > CM_WIRE_MAX_LEN) {
		*why = "longer than any sealed message";
		return -EBADMSG;
	}
	t = msg + len - CM_SEAL_LEN;
	seal_mac(mac, msg, len - CM_MAC_LEN, key, nodeid, pid);
	bad = sodium_memcmp(mac, t + 16, CM_MAC_LEN);
	sodium_memzero(mac, sizeof(mac));
	if (bad) {
		*why = "its MAC does not verify (not sealed with the cluster "
		       "key by this CPG process)";
		return -EBADMSG;
	}
	se->se_inc = dlm_get_le64(t);
	se->se_seq = dlm_get_le64(t + 8);
	if (!se->se_inc || !se->se_seq) {
		*why = "incarnation or sequence 0";
		return -EBADMSG;
	}
	*inner = len - CM_SEAL_LEN;
	return 0;
}
