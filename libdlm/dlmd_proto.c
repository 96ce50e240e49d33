/*
 * libdlm/dlmd_proto.c - encoding and checking of client protocol messages.
 *
 * The protocol is described at the top of dlmd_proto.h.  This file is the
 * only place that turns bytes into struct dlmp_msg and back; both the
 * daemon and the library link it.  Decoding checks, in order: the packet
 * is at least a header, the magic, the version, that the header's length
 * equals the packet length, that the type is known, that the body is at
 * least the type's fixed size, and that any name length field accounts for
 * exactly the remaining bytes, and that flag bytes (LOCK and UNLOCK bits,
 * COMP_REPLY bits, AST kind) hold only known values.  Nothing is read
 * before its length has been checked.
 */
#include <errno.h>
#include <string.h>

#include "libdlm/dlmd_proto.h"
#include "core/le.h"

struct type_info {
	unsigned int	ti_type;
	const char	*ti_name;
	size_t		ti_fixed;	/* body bytes before any name */
};

static const struct type_info type_table[] = {
	{ DLMP_VERSION_REQ, "version", 0 },
	{ DLMP_LS_CREATE, "ls_create", DLMP_LS_CREATE_LEN },
	{ DLMP_LS_OPEN, "ls_open", DLMP_LS_OPEN_LEN },
	{ DLMP_LS_RELEASE, "ls_release", DLMP_LS_RELEASE_LEN },
	{ DLMP_LOCK, "lock", DLMP_LOCK_LEN },
	{ DLMP_UNLOCK, "unlock", DLMP_UNLOCK_LEN },
	{ DLMP_PURGE, "purge", DLMP_PURGE_LEN },
	{ DLMP_DEADLOCK, "deadlock", DLMP_DEADLOCK_LEN },
	{ DLMP_TOKEN, "token", DLMP_TOKEN_LEN },
	{ DLMP_IDS, "ids", DLMP_IDS_LEN },
	{ DLMP_RING, "ring", DLMP_RING_LEN },
	{ DLMP_REPLY, "reply", DLMP_REPLY_LEN },
	{ DLMP_AST, "ast", DLMP_AST_LEN },
	{ DLMP_COMP_REPLY, "comp_reply", DLMP_COMP_REPLY_LEN },
};
#define NUM_TYPES (sizeof(type_table) / sizeof(type_table[0]))

static const struct type_info *type_find(unsigned int type)
{
	for (size_t i = 0; i < NUM_TYPES; i++)
		if (type_table[i].ti_type == type)
			return &type_table[i];
	return NULL;
}

const char *dlmp_type_str(unsigned int type)
{
	const struct type_info *ti = type_find(type);

	return ti ? ti->ti_name : "unknown";
}

int dlmp_ls_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > DLMP_NAME_MAX)
		return 0;
	/* no directory of the configfs view (or of the kernel's configfs,
	 * where mkdir refuses them) could be named so */
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x21 || c > 0x7e || c == '/')
			return 0;
	}
	return 1;
}

int dlmp_decode_hdr(const void *buf, size_t len, struct dlmp_hdr *hdr)
{
	const unsigned char *p = buf;

	memset(hdr, 0, sizeof(*hdr));
	if (len < DLMP_HDR_LEN)
		return -EBADMSG;
	hdr->h_magic = dlm_get_le32(p);
	hdr->h_version = dlm_get_le16(p + 4);
	hdr->h_type = dlm_get_le16(p + 6);
	hdr->h_length = dlm_get_le32(p + 8);
	hdr->h_reqid = dlm_get_le32(p + 12);
	if (hdr->h_magic != DLMP_MAGIC)
		return -EBADMSG;
	if (hdr->h_version != DLMP_VERSION)
		return -EPROTONOSUPPORT;
	if (hdr->h_length != len)
		return -EBADMSG;
	return 0;
}

/* A lockspace name: 1..DLMP_NAME_MAX bytes, no NUL, exactly the rest. */
static int decode_ls_name(const unsigned char *p, size_t avail,
			  struct dlmp_ls *ls)
{
	if (ls->ls_namelen == 0 || ls->ls_namelen > DLMP_NAME_MAX)
		return -EINVAL;
	if (avail != ls->ls_namelen)
		return -EBADMSG;
	if (memchr(p, '\0', ls->ls_namelen))
		return -EINVAL;
	memcpy(ls->ls_name, p, ls->ls_namelen);
	ls->ls_name[ls->ls_namelen] = '\0';
	return 0;
}

int dlmp_decode(const void *buf, size_t len, struct dlmp_msg *msg)
{
	const unsigned char *p = buf;
	const struct type_info *ti;
	size_t blen;
	int rv;

	memset(msg, 0, sizeof(*msg));
	rv = dlmp_decode_hdr(buf, len, &msg->m_hdr);
	if (rv)
		return rv;
	ti = type_find(msg->m_hdr.h_type);
	if (!ti)
		return -EOPNOTSUPP;
	blen = len - DLMP_HDR_LEN;
	if (blen < ti->ti_fixed)
		return -EBADMSG;
	p += DLMP_HDR_LEN;

	switch (msg->m_hdr.h_type) {
	case DLMP_VERSION_REQ:
		return blen == 0 ? 0 : -EBADMSG;
	case DLMP_LS_CREATE: {
		struct dlmp_ls *ls = &msg->m_u.ls;

		ls->ls_flags = dlm_get_le32(p);
		ls->ls_mode = dlm_get_le32(p + 4);
		ls->ls_namelen = dlm_get_le16(p + 8);
		return decode_ls_name(p + ti->ti_fixed, blen - ti->ti_fixed, ls);
	}
	case DLMP_LS_OPEN: {
		struct dlmp_ls *ls = &msg->m_u.ls;

		ls->ls_namelen = dlm_get_le16(p);
		return decode_ls_name(p + ti->ti_fixed, blen - ti->ti_fixed, ls);
	}
	case DLMP_LS_RELEASE: {
		struct dlmp_ls *ls = &msg->m_u.ls;

		ls->ls_flags = dlm_get_le32(p);
		ls->ls_namelen = dlm_get_le16(p + 4);
		return decode_ls_name(p + ti->ti_fixed, blen - ti->ti_fixed, ls);
	}
	case DLMP_LOCK: {
		struct dlmp_lock *lk = &msg->m_u.lock;

		lk->lk_mode = p[0];
		lk->lk_namelen = p[1];
		lk->lk_bits = p[2];
		lk->lk_flags = dlm_get_le32(p + 4);
		lk->lk_lkid = dlm_get_le32(p + 8);
		lk->lk_parent = dlm_get_le32(p + 12);
		lk->lk_range_start = dlm_get_le64(p + 16);
		lk->lk_range_end = dlm_get_le64(p + 24);
		lk->lk_castaddr = dlm_get_le64(p + 32);
		lk->lk_castparam = dlm_get_le64(p + 40);
		lk->lk_bastaddr = dlm_get_le64(p + 48);
		lk->lk_bastparam = dlm_get_le64(p + 56);
		lk->lk_lksb = dlm_get_le64(p + 64);
		memcpy(lk->lk_lvb, p + 72, DLMP_LVB_LEN);
		lk->lk_tid = dlm_get_le32(p + 104);
		lk->lk_xid = dlm_get_le64(p + 112);
		if (dlm_get_le32(p + 108))
			return -EBADMSG;
		if (lk->lk_bits & ~DLMP_LK_BITS)
			return -EINVAL;
		if ((lk->lk_bits & DLMP_LK_NEWID) && !lk->lk_lkid)
			return -EINVAL;	/* a new lock with its id */
		if (lk->lk_namelen > DLMP_NAME_MAX)
			return -EINVAL;
		if (blen - ti->ti_fixed != lk->lk_namelen)
			return -EBADMSG;
		memcpy(lk->lk_name, p + ti->ti_fixed, lk->lk_namelen);
		return 0;
	}
	case DLMP_UNLOCK: {
		struct dlmp_unlock *ul = &msg->m_u.unlock;

		if (blen != ti->ti_fixed)
			return -EBADMSG;
		ul->ul_lkid = dlm_get_le32(p);
		ul->ul_flags = dlm_get_le32(p + 4);
		ul->ul_bits = p[8];
		ul->ul_castparam = dlm_get_le64(p + 12);
		ul->ul_lksb = dlm_get_le64(p + 20);
		memcpy(ul->ul_lvb, p + 28, DLMP_LVB_LEN);
		ul->ul_castaddr = dlm_get_le64(p + 60);
		if (ul->ul_bits & ~DLMP_UL_BITS)
			return -EINVAL;
		return 0;
	}
	case DLMP_PURGE:
	case DLMP_DEADLOCK:
	case DLMP_TOKEN:
	case DLMP_IDS:
	case DLMP_RING:
		if (blen != ti->ti_fixed)
			return -EBADMSG;
		msg->m_u.pair.pr_a = dlm_get_le32(p);
		msg->m_u.pair.pr_b = dlm_get_le32(p + 4);
		if (msg->m_hdr.h_type == DLMP_IDS && msg->m_u.pair.pr_b)
			return -EINVAL;	/* its pad */
		/* RING: b is ATTACH's answer-ring choice, else a pad */
		if (msg->m_hdr.h_type == DLMP_RING &&
		    (msg->m_u.pair.pr_a == DLMP_RING_ATTACH ?
		     msg->m_u.pair.pr_b > DLMP_RING_ANSWERS : msg->m_u.pair.pr_b))
			return -EINVAL;
		if (msg->m_hdr.h_type == DLMP_RING &&
		    msg->m_u.pair.pr_a != DLMP_RING_ATTACH &&
		    msg->m_u.pair.pr_a != DLMP_RING_KICK &&
		    msg->m_u.pair.pr_a != DLMP_RING_ANS_SOCKET)
			return -EINVAL;
		return 0;
	case DLMP_REPLY: {
		struct dlmp_reply *rp = &msg->m_u.reply;

		if (blen != ti->ti_fixed)
			return -EBADMSG;
		rp->rp_status = (int32_t)dlm_get_le32(p);
		rp->rp_value = dlm_get_le32(p + 4);
		rp->rp_value2 = dlm_get_le32(p + 8);
		rp->rp_value3 = dlm_get_le32(p + 12);
		return 0;
	}
	case DLMP_AST: {
		struct dlmp_ast *as = &msg->m_u.ast;

		if (blen != ti->ti_fixed)
			return -EBADMSG;
		as->as_kind = p[0];
		as->as_grmode = (int8_t)p[1];
		as->as_bastmode = (int8_t)p[2];
		as->as_sbflags = p[3];
		as->as_status = (int32_t)dlm_get_le32(p + 4);
		as->as_lkid = dlm_get_le32(p + 8);
		as->as_bits = dlm_get_le32(p + 12);
		as->as_castaddr = dlm_get_le64(p + 16);
		as->as_castparam = dlm_get_le64(p + 24);
		as->as_bastaddr = dlm_get_le64(p + 32);
		as->as_bastparam = dlm_get_le64(p + 40);
		as->as_lksb = dlm_get_le64(p + 48);
		memcpy(as->as_lvb, p + 56, DLMP_LVB_LEN);
		if (as->as_kind != DLMP_AST_COMP && as->as_kind != DLMP_AST_BAST)
			return -EBADMSG;
		return 0;
	}
	case DLMP_COMP_REPLY: {
		struct dlmp_comp *cp = &msg->m_u.comp;

		if (blen != ti->ti_fixed)
			return -EBADMSG;
		cp->cp_status = (int32_t)dlm_get_le32(p);
		cp->cp_lkid = dlm_get_le32(p + 4);
		cp->cp_sbflags = p[8];
		cp->cp_bits = dlm_get_le32(p + 12);
		memcpy(cp->cp_lvb, p + 16, DLMP_LVB_LEN);
		if (cp->cp_bits & ~(uint32_t)DLMP_LK_LVB)
			return -EBADMSG;
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

static int encode_ls_name(unsigned char *p, size_t room, const struct dlmp_ls *ls)
{
	if (ls->ls_namelen == 0 || ls->ls_namelen > DLMP_NAME_MAX ||
	    ls->ls_namelen > room)
		return -EINVAL;
	memcpy(p, ls->ls_name, ls->ls_namelen);
	return ls->ls_namelen;
}

int dlmp_encode(const struct dlmp_msg *msg, void *buf, size_t size)
{
	unsigned char *p = buf, *b;
	const struct type_info *ti = type_find(msg->m_hdr.h_type);
	size_t len;
	int n = 0;

	if (!ti)
		return -EINVAL;
	if (size < DLMP_HDR_LEN + ti->ti_fixed + DLMP_NAME_MAX)
		return -ENOSPC;
	memset(p, 0, DLMP_HDR_LEN + ti->ti_fixed);
	b = p + DLMP_HDR_LEN;

	switch (msg->m_hdr.h_type) {
	case DLMP_VERSION_REQ:
		break;
	case DLMP_LS_CREATE:
		dlm_put_le32(b, msg->m_u.ls.ls_flags);
		dlm_put_le32(b + 4, msg->m_u.ls.ls_mode);
		dlm_put_le16(b + 8, msg->m_u.ls.ls_namelen);
		n = encode_ls_name(b + ti->ti_fixed, DLMP_NAME_MAX, &msg->m_u.ls);
		break;
	case DLMP_LS_OPEN:
		dlm_put_le16(b, msg->m_u.ls.ls_namelen);
		n = encode_ls_name(b + ti->ti_fixed, DLMP_NAME_MAX, &msg->m_u.ls);
		break;
	case DLMP_LS_RELEASE:
		dlm_put_le32(b, msg->m_u.ls.ls_flags);
		dlm_put_le16(b + 4, msg->m_u.ls.ls_namelen);
		n = encode_ls_name(b + ti->ti_fixed, DLMP_NAME_MAX, &msg->m_u.ls);
		break;
	case DLMP_LOCK: {
		const struct dlmp_lock *lk = &msg->m_u.lock;

		if (lk->lk_namelen > DLMP_NAME_MAX)
			return -EINVAL;
		b[0] = lk->lk_mode;
		b[1] = lk->lk_namelen;
		b[2] = lk->lk_bits;
		dlm_put_le32(b + 4, lk->lk_flags);
		dlm_put_le32(b + 8, lk->lk_lkid);
		dlm_put_le32(b + 12, lk->lk_parent);
		dlm_put_le64(b + 16, lk->lk_range_start);
		dlm_put_le64(b + 24, lk->lk_range_end);
		dlm_put_le64(b + 32, lk->lk_castaddr);
		dlm_put_le64(b + 40, lk->lk_castparam);
		dlm_put_le64(b + 48, lk->lk_bastaddr);
		dlm_put_le64(b + 56, lk->lk_bastparam);
		dlm_put_le64(b + 64, lk->lk_lksb);
		memcpy(b + 72, lk->lk_lvb, DLMP_LVB_LEN);
		dlm_put_le32(b + 104, lk->lk_tid);
		dlm_put_le32(b + 108, 0);
		dlm_put_le64(b + 112, lk->lk_xid);
		memcpy(b + ti->ti_fixed, lk->lk_name, lk->lk_namelen);
		n = lk->lk_namelen;
		break;
	}
	case DLMP_UNLOCK: {
		const struct dlmp_unlock *ul = &msg->m_u.unlock;

		dlm_put_le32(b, ul->ul_lkid);
		dlm_put_le32(b + 4, ul->ul_flags);
		b[8] = ul->ul_bits;
		dlm_put_le64(b + 12, ul->ul_castparam);
		dlm_put_le64(b + 20, ul->ul_lksb);
		memcpy(b + 28, ul->ul_lvb, DLMP_LVB_LEN);
		dlm_put_le64(b + 60, ul->ul_castaddr);
		break;
	}
	case DLMP_PURGE:
	case DLMP_DEADLOCK:
	case DLMP_TOKEN:
	case DLMP_IDS:
	case DLMP_RING:
		dlm_put_le32(b, msg->m_u.pair.pr_a);
		dlm_put_le32(b + 4, msg->m_u.pair.pr_b);
		break;
	case DLMP_REPLY: {
		const struct dlmp_reply *rp = &msg->m_u.reply;

		dlm_put_le32(b, (uint32_t)rp->rp_status);
		dlm_put_le32(b + 4, rp->rp_value);
		dlm_put_le32(b + 8, rp->rp_value2);
		dlm_put_le32(b + 12, rp->rp_value3);
		break;
	}
	case DLMP_AST: {
		const struct dlmp_ast *as = &msg->m_u.ast;

		b[0] = as->as_kind;
		b[1] = (unsigned char)as->as_grmode;
		b[2] = (unsigned char)as->as_bastmode;
		b[3] = as->as_sbflags;
		dlm_put_le32(b + 4, (uint32_t)as->as_status);
		dlm_put_le32(b + 8, as->as_lkid);
		dlm_put_le32(b + 12, as->as_bits);
		dlm_put_le64(b + 16, as->as_castaddr);
		dlm_put_le64(b + 24, as->as_castparam);
		dlm_put_le64(b + 32, as->as_bastaddr);
		dlm_put_le64(b + 40, as->as_bastparam);
		dlm_put_le64(b + 48, as->as_lksb);
		memcpy(b + 56, as->as_lvb, DLMP_LVB_LEN);
		break;
	}
	case DLMP_COMP_REPLY: {
		const struct dlmp_comp *cp = &msg->m_u.comp;

		dlm_put_le32(b, (uint32_t)cp->cp_status);
		dlm_put_le32(b + 4, cp->cp_lkid);
		b[8] = cp->cp_sbflags;
		dlm_put_le32(b + 12, cp->cp_bits);
		memcpy(b + 16, cp->cp_lvb, DLMP_LVB_LEN);
		break;
	}
	}
	if (n < 0)
		return n;
	len = DLMP_HDR_LEN + ti->ti_fixed + (size_t)n;
	dlm_put_le32(p, DLMP_MAGIC);
	dlm_put_le16(p + 4, DLMP_VERSION);
	dlm_put_le16(p + 6, (uint16_t)msg->m_hdr.h_type);
	dlm_put_le32(p + 8, (uint32_t)len);
	dlm_put_le32(p + 12, msg->m_hdr.h_reqid);
	return (int)len;
}

uint16_t dlmp_reply_version(uint16_t version)
{
	if (version >= DLMP_VERSION_OLDEST_REPLY && version <= DLMP_VERSION)
		return version;
	return DLMP_VERSION;
}

void dlmp_set_version(void *buf, uint16_t version)
{
	dlm_put_le16((unsigned char *)buf + 4, version);
}
