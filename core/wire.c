/*
 * core/wire.c - encoding and validation of the engine's messages.
 *
 * The layout is drawn in wire.h.  Integers are written byte by byte in
 * little-endian order, so the code is the same on any host and never
 * depends on struct packing.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "core/wire.h"
#include "core/le.h"

static_assert(DLM_WIRE_FIXED_LEN == 128, "wire body layout changed");
static_assert(DLM_WIRE_MAX_LEN <= 65535, "messages must fit 16-bit lengths");

static const char *const type_names[DLM_MSG_MAX + 1] = {
	[DLM_MSG_REQUEST] = "request",
	[DLM_MSG_CONVERT] = "convert",
	[DLM_MSG_UNLOCK] = "unlock",
	[DLM_MSG_CANCEL] = "cancel",
	[DLM_MSG_REQUEST_REPLY] = "request_reply",
	[DLM_MSG_CONVERT_REPLY] = "convert_reply",
	[DLM_MSG_UNLOCK_REPLY] = "unlock_reply",
	[DLM_MSG_CANCEL_REPLY] = "cancel_reply",
	[DLM_MSG_GRANT] = "grant",
	[DLM_MSG_BAST] = "bast",
	[DLM_MSG_LOOKUP] = "lookup",
	[DLM_MSG_REMOVE] = "remove",
	[DLM_MSG_LOOKUP_REPLY] = "lookup_reply",
	[DLM_MSG_PURGE] = "purge",
	[DLM_MSG_AUDIT] = "audit",
	[DLM_MSG_AUDIT_REPLY] = "audit_reply",
	[DLM_MSG_DEADLK_PROBE] = "deadlk_probe",
	[DLM_MSG_DEADLK_HOLDER] = "deadlk_holder",
	[DLM_MSG_MIGRATE] = "migrate",
	[DLM_MSG_DIR_MOVE] = "dir_move",
	[DLM_MSG_MIGRATE_LOCK] = "migrate_lock",
	[DLM_MSG_MOVED] = "moved",
	[DLM_MSG_REPOINT] = "repoint",
	[DLM_MSG_REPOINT_REPLY] = "repoint_reply",
	[DLM_RC_STATUS] = "rc_status",
	[DLM_RC_DIR_ADD] = "rc_dir_add",
	[DLM_RC_DIR_ADDS] = "rc_dir_adds",
	[DLM_RC_DIR_DROP] = "rc_dir_drop",
	[DLM_RC_LOOKUP] = "rc_lookup",
	[DLM_RC_LOOKUP_REPLY] = "rc_lookup_reply",
	[DLM_RC_LOCK] = "rc_lock",
	[DLM_RC_LOCK_REPLY] = "rc_lock_reply",
};

const char *dlm_msg_type_str(int type)
{
	if (type <= 0 || type > DLM_MSG_MAX || !type_names[type])
		return "unknown";
	return type_names[type];
}

int dlm_key_valid(const unsigned char *key, size_t keylen)
{
	size_t off = 0, n;
	int depth = 0;

	if (keylen == 0 || keylen > DLM_MAX_KEYLEN)
		return 0;
	if (key[0] == DLM_KEY_DIGEST_MARK) {
		/* a deep sub-resource: digest of the parent, then its name */
		off = 1 + DLM_KEY_DIGEST_LEN;
		if (keylen <= off)
			return 0;
		n = key[off];
		return n != 0 && n <= DLM_RESNAME_MAXLEN && off + 1 + n == keylen;
	}
	while (off < keylen) {
		n = key[off];
		if (n == 0 || n > DLM_RESNAME_MAXLEN || ++depth > DLM_KEY_PATH_DEPTH)
			return 0;
		off += 1 + n;
	}
	return off == keylen;
}

/* An RC_DIR_ADDS list: records of a 2-byte length (1..DLM_MAX_KEYLEN)
 * and a valid key, filling len exactly. */
static int key_list_valid(const unsigned char *list, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n;

		if (len - off < 2)
			return 0;
		n = dlm_get_le16(list + off);
		off += 2;
		if (n == 0 || n > DLM_MAX_KEYLEN || n > len - off ||
		    !dlm_key_valid(list + off, n))
			return 0;
		off += n;
	}
	return 1;
}

int dlm_msg_encode(const struct dlm_msg *m, unsigned char *buf, size_t buflen)
{
	size_t len = DLM_WIRE_FIXED_LEN + m->m_keylen + m->m_pkeylen +
		     m->m_lvblen;
	unsigned int keymax = m->m_type == DLM_RC_DIR_ADDS ? DLM_WIRE_LIST_MAX :
							    DLM_MAX_KEYLEN;

	if (m->m_keylen > keymax || m->m_pkeylen > DLM_MAX_KEYLEN ||
	    (m->m_lvblen != 0 && m->m_lvblen != DLM_LVB_LEN) || len > buflen)
		return -EINVAL;
	dlm_put_le32(buf + 0, DLM_WIRE_MAGIC);
	dlm_put_le16(buf + 4, DLM_WIRE_VERSION);
	dlm_put_le16(buf + 6, m->m_type);
	dlm_put_le32(buf + 8, (uint32_t)len);
	dlm_put_le32(buf + 12, m->m_lsid);
	dlm_put_le32(buf + 16, m->m_from);
	dlm_put_le32(buf + 20, m->m_to);
	dlm_put_le32(buf + 24, m->m_lkid);
	dlm_put_le32(buf + 28, m->m_remid);
	dlm_put_le32(buf + 32, m->m_exflags);
	dlm_put_le32(buf + 36, m->m_sbflags);
	dlm_put_le32(buf + 40, m->m_flags);
	dlm_put_le32(buf + 44, (uint32_t)m->m_status);
	dlm_put_le32(buf + 48, m->m_nodeid);
	dlm_put_le32(buf + 52, m->m_lvbseq);
	dlm_put_le64(buf + 56, m->m_owner);
	dlm_put_le64(buf + 64, m->m_grrange.ra_start);
	dlm_put_le64(buf + 72, m->m_grrange.ra_end);
	dlm_put_le64(buf + 80, m->m_rqrange.ra_start);
	dlm_put_le64(buf + 88, m->m_rqrange.ra_end);
	buf[96] = (unsigned char)m->m_grmode;
	buf[97] = (unsigned char)m->m_rqmode;
	buf[98] = (unsigned char)m->m_bastmode;
	buf[99] = 0;
	dlm_put_le16(buf + 100, m->m_keylen);
	dlm_put_le16(buf + 102, m->m_lvblen);
	dlm_put_le32(buf + 104, m->m_gen);
	dlm_put_le64(buf + 108, m->m_token);
	dlm_put_le64(buf + 116, m->m_clock);
	dlm_put_le16(buf + 124, m->m_pkeylen);
	dlm_put_le16(buf + 126, 0);
	if (m->m_keylen)
		memcpy(buf + DLM_WIRE_FIXED_LEN, m->m_key, m->m_keylen);
	if (m->m_pkeylen)
		memcpy(buf + DLM_WIRE_FIXED_LEN + m->m_keylen, m->m_pkey,
		       m->m_pkeylen);
	if (m->m_lvblen)
		memcpy(buf + DLM_WIRE_FIXED_LEN + m->m_keylen + m->m_pkeylen,
		       m->m_lvb, m->m_lvblen);
	return (int)len;
}

static int mode_ok(int8_t mode)
{
	return mode >= DLM_LOCK_IV && mode <= DLM_LOCK_EX;
}

/* A lock's queue (DLM_LKSTS_*) and its modes agree: a holder has a
 * granted mode, a waiter a requested one. */
static int queue_ok(int32_t status, int8_t grmode, int8_t rqmode)
{
	if (status != DLM_LKSTS_WAITING && status != DLM_LKSTS_GRANTED &&
	    status != DLM_LKSTS_CONVERT)
		return 0;
	if (status != DLM_LKSTS_WAITING && grmode < DLM_LOCK_NL)
		return 0;
	return status == DLM_LKSTS_GRANTED || rqmode >= DLM_LOCK_NL;
}

#define FAIL(code, text) do { if (why) *why = (text); return (code); } while (0)

int dlm_msg_decode(const void *buf, size_t len, struct dlm_msg *m,
		   const char **why)
{
	const unsigned char *p = buf;

	if (len < DLM_WIRE_HDR_LEN)
		FAIL(-EBADMSG, "shorter than the header");
	if (dlm_get_le32(p) != DLM_WIRE_MAGIC)
		FAIL(-EBADMSG, "bad magic");
	if (dlm_get_le16(p + 4) != DLM_WIRE_VERSION)
		FAIL(-EPROTO, "unsupported version");
	if (dlm_get_le32(p + 8) != len)
		FAIL(-EBADMSG, "length field does not match");
	if (len < DLM_WIRE_FIXED_LEN)
		FAIL(-EBADMSG, "shorter than the fixed body");
	memset(m, 0, sizeof(*m));
	m->m_type = dlm_get_le16(p + 6);
	if (m->m_type == 0 || m->m_type > DLM_MSG_MAX || !type_names[m->m_type])
		FAIL(-EOPNOTSUPP, "unknown message type");
	m->m_lsid = dlm_get_le32(p + 12);
	m->m_from = dlm_get_le32(p + 16);
	m->m_to = dlm_get_le32(p + 20);
	m->m_lkid = dlm_get_le32(p + 24);
	m->m_remid = dlm_get_le32(p + 28);
	m->m_exflags = dlm_get_le32(p + 32);
	m->m_sbflags = dlm_get_le32(p + 36);
	m->m_flags = dlm_get_le32(p + 40);
	m->m_status = (int32_t)dlm_get_le32(p + 44);
	m->m_nodeid = dlm_get_le32(p + 48);
	m->m_lvbseq = dlm_get_le32(p + 52);
	m->m_owner = dlm_get_le64(p + 56);
	m->m_grrange.ra_start = dlm_get_le64(p + 64);
	m->m_grrange.ra_end = dlm_get_le64(p + 72);
	m->m_rqrange.ra_start = dlm_get_le64(p + 80);
	m->m_rqrange.ra_end = dlm_get_le64(p + 88);
	m->m_grmode = (int8_t)p[96];
	m->m_rqmode = (int8_t)p[97];
	m->m_bastmode = (int8_t)p[98];
	m->m_keylen = dlm_get_le16(p + 100);
	m->m_lvblen = dlm_get_le16(p + 102);
	m->m_gen = dlm_get_le32(p + 104);
	m->m_token = dlm_get_le64(p + 108);
	m->m_clock = dlm_get_le64(p + 116);
	m->m_pkeylen = dlm_get_le16(p + 124);
	if (p[99] != 0 || dlm_get_le16(p + 126) != 0)
		FAIL(-EBADMSG, "non-zero padding");
	if (m->m_type == DLM_RC_DIR_ADDS) {
		if (m->m_keylen < 3 || m->m_keylen > DLM_WIRE_LIST_MAX ||
		    m->m_pkeylen || m->m_lvblen || !m->m_nodeid)
			FAIL(-EBADMSG, "directory records without keys or node");
	} else if (m->m_keylen > DLM_MAX_KEYLEN) {
		FAIL(-EBADMSG, "key too long");
	}
	if (m->m_pkeylen > DLM_MAX_KEYLEN)
		FAIL(-EBADMSG, "key too long");
	if (m->m_lvblen != 0 && m->m_lvblen != DLM_LVB_LEN)
		FAIL(-EBADMSG, "bad LVB length");
	if ((size_t)DLM_WIRE_FIXED_LEN + m->m_keylen + m->m_pkeylen +
	    m->m_lvblen != len)
		FAIL(-EBADMSG, "variable parts do not fill the message");
	if (m->m_type == DLM_RC_DIR_ADDS) {
		if (!key_list_valid(p + DLM_WIRE_FIXED_LEN, m->m_keylen))
			FAIL(-EBADMSG, "malformed key list");
	} else if (m->m_keylen &&
		   !dlm_key_valid(p + DLM_WIRE_FIXED_LEN, m->m_keylen)) {
		FAIL(-EBADMSG, "malformed resource key");
	}
	if (m->m_pkeylen && (!m->m_keylen ||
			     !dlm_key_valid(p + DLM_WIRE_FIXED_LEN + m->m_keylen,
					    m->m_pkeylen)))
		FAIL(-EBADMSG, "malformed parent key");
	if (!mode_ok(m->m_grmode) || !mode_ok(m->m_rqmode) ||
	    !mode_ok(m->m_bastmode))
		FAIL(-ERANGE, "mode out of range");
	if (m->m_token && m->m_grmode != DLM_LOCK_CW &&
	    m->m_grmode != DLM_LOCK_PW && m->m_grmode != DLM_LOCK_EX)
		FAIL(-EBADMSG, "fencing token with a mode that does not write");
	if (m->m_grrange.ra_start > m->m_grrange.ra_end ||
	    m->m_rqrange.ra_start > m->m_rqrange.ra_end)
		FAIL(-ERANGE, "range start after end");
	if ((m->m_type == DLM_MSG_MIGRATE || m->m_type == DLM_MSG_DIR_MOVE) &&
	    (!m->m_keylen || m->m_pkeylen || !m->m_nodeid))
		FAIL(-EBADMSG, "remastering message without key or node");
	if (m->m_type == DLM_RC_DIR_ADD &&
	    (!m->m_keylen || m->m_pkeylen || m->m_lvblen || !m->m_nodeid))
		FAIL(-EBADMSG, "directory record without key or node");
	if (m->m_type == DLM_RC_DIR_DROP &&
	    (!m->m_keylen || m->m_pkeylen || m->m_lvblen || !m->m_nodeid))
		FAIL(-EBADMSG, "directory drop without key or node");
	if (m->m_type == DLM_MSG_MIGRATE && m->m_lvblen != DLM_LVB_LEN)
		FAIL(-EBADMSG, "migrate without the resource's LVB");
	if (m->m_type >= DLM_MSG_MIGRATE_LOCK &&
	    m->m_type <= DLM_MSG_REPOINT_REPLY &&
	    (!m->m_keylen || m->m_pkeylen || !m->m_nodeid))
		FAIL(-EBADMSG, "re-point message without key or owner node");
	if ((m->m_type == DLM_MSG_MIGRATE_LOCK ||
	     m->m_type == DLM_MSG_REPOINT) &&
	    !queue_ok(m->m_status, m->m_grmode, m->m_rqmode))
		FAIL(-ERANGE, "lock record with a bad queue or modes");
	if ((m->m_type == DLM_MSG_MIGRATE_LOCK && !m->m_remid) ||
	    ((m->m_type == DLM_MSG_REPOINT ||
	      m->m_type == DLM_MSG_REPOINT_REPLY) &&
	     (!m->m_remid || !m->m_lkid)))
		FAIL(-EBADMSG, "re-point message without a lock id");
	m->m_key = m->m_keylen ? p + DLM_WIRE_FIXED_LEN : NULL;
	m->m_pkey = m->m_pkeylen ? p + DLM_WIRE_FIXED_LEN + m->m_keylen : NULL;
	m->m_lvb = m->m_lvblen ? (const char *)(p + DLM_WIRE_FIXED_LEN +
						m->m_keylen + m->m_pkeylen) : NULL;
	return 0;
}
