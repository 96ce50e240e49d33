/*
 * plugin/cpgmsg.c - encode and decode the dlmd CPG messages
 * (layouts in plugin/cpgmsg.h).  No corosync here: the lockspace
 * protocol (plugin/cluster.c) sends and receives, this file only turns
 * structures into bytes and checks bytes before they become structures.
 */
#include <errno.h>
#include <string.h>

#include "plugin/cpgmsg.h"

static void put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint16_t get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

size_t dlmd_cm_start_encode(unsigned char *buf, const struct cm_hdr *h,
			    const struct cm_start *st)
{
	size_t len = CM_HDR_LEN + CM_START_FIXED +
		     4 * ((size_t)st->st_nmembers + st->st_nprev);
	unsigned char *p = buf;

	put_le32(p, CM_MAGIC);
	put_le16(p + 4, CM_VERSION);
	put_le16(p + 6, CM_START);
	put_le32(p + 8, (uint32_t)len);
	put_le32(p + 12, h->h_sender);
	put_le32(p + 16, h->h_target);
	put_le32(p + 20, h->h_lsid);
	put_le32(p + 24, h->h_seq);
	p += CM_HDR_LEN;
	put_le32(p, st->st_last_event);
	put_le32(p + 4, st->st_flags);
	put_le32(p + 8, st->st_nmembers);
	put_le32(p + 12, st->st_nprev);
	p += CM_START_FIXED;
	for (uint32_t i = 0; i < st->st_nmembers; i++, p += 4)
		put_le32(p, st->st_members[i]);
	for (uint32_t i = 0; i < st->st_nprev; i++, p += 4)
		put_le32(p, st->st_prev[i]);
	return len;
}

int dlmd_cm_hdr_decode(const unsigned char *msg, size_t len, struct cm_hdr *h,
		       const char **why)
{
	if (len < CM_HDR_LEN) {
		*why = "shorter than the header";
		return -EINVAL;
	}
	if (len > CM_MAX_LEN) {
		*why = "longer than any message";
		return -EINVAL;
	}
	h->h_magic = get_le32(msg);
	h->h_version = get_le16(msg + 4);
	h->h_type = get_le16(msg + 6);
	h->h_length = get_le32(msg + 8);
	h->h_sender = get_le32(msg + 12);
	h->h_target = get_le32(msg + 16);
	h->h_lsid = get_le32(msg + 20);
	h->h_seq = get_le32(msg + 24);
	if (h->h_magic != CM_MAGIC) {
		*why = "bad magic";
		return -EINVAL;
	}
	if (h->h_version != CM_VERSION) {
		*why = "unknown version";
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

	if (len < CM_START_FIXED) {
		*why = "START shorter than its fixed part";
		return -EINVAL;
	}
	memset(st, 0, sizeof(*st));
	st->st_last_event = get_le32(p);
	st->st_flags = get_le32(p + 4);
	st->st_nmembers = get_le32(p + 8);
	st->st_nprev = get_le32(p + 12);
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
		st->st_members[i] = get_le32(p);
	for (uint32_t i = 0; i < st->st_nprev; i++, p += 4)
		st->st_prev[i] = get_le32(p);
	return 0;
}
