/*
 * core/wire.h - the engine's node-to-node messages.
 *
 * Every message is one fixed little-endian header followed by one fixed
 * body and two variable parts (resource key, LVB) whose lengths the body
 * gives.  Nothing is read before the length checks pass:
 *
 *   offset size  header
 *        0    4  magic      DLM_WIRE_MAGIC, the bytes "DLMW"
 *        4    2  version    DLM_WIRE_VERSION
 *        6    2  type       enum dlm_msg_type
 *        8    4  length     whole message, header included
 *       12    4  lsid       global lockspace id
 *       16    4  from       sender node id
 *       20    4  to         target node id
 *                body
 *       24    4  lkid       sender's lock id
 *       28    4  remid      receiver's lock id
 *       32    4  exflags    DLM_LKF_* of the request
 *       36    4  sbflags    DLM_SBF_*
 *       40    4  flags      DLM_MF_* (message flags)
 *       44    4  status     signed result code
 *       48    4  nodeid     a node id (master in lookups)
 *       52    4  lvbseq     LVB sequence number
 *       56    8  owner      lock owner
 *       64   32  ranges     granted start,end; requested start,end
 *       96    1  grmode     signed
 *       97    1  rqmode     signed
 *       98    1  bastmode   signed
 *       99    1  pad        zero
 *      100    2  keylen     0..DLM_MAX_KEYLEN
 *      102    2  lvblen     0 or DLM_LVB_LEN
 *      104    4  gen        lockspace generation: the sender's last
 *                           finished recovery event (recovery messages:
 *                           the event being recovered)
 *      108    8  token      the fencing token of the lock the message is
 *                           about (0: none; non-zero only with a grmode
 *                           of CW, PW or EX; see core/token.c)
 *      116    8  clock      the sender's token clock (core/token.c)
 *      124    2  pkeylen    0..DLM_MAX_KEYLEN: the parent resource's key
 *                           (REQUEST and RC_LOCK of a sub-resource: its
 *                           master is the parent's, see core/resource.c)
 *      126    2  pad        zero
 *      128       key bytes, then parent key bytes, then LVB bytes
 *
 * Versions.  A decoder accepts its own version only: version 2 added
 * token and clock (fencing tokens, issue 17) and a version-1 engine
 * cannot order tokens, so the two must not share a lockspace (dlmd of
 * both versions in one cluster is not supported anyway, see
 * plugin/cluster.c).  Version 3 added the parent key (sub-resources
 * mastered with their parent, issue 18): a version-2 engine would look
 * children up in the directory and master them elsewhere.  Version 4
 * added MIGRATE and DIR_MOVE (remastering, issue 18) and the hint in a
 * REQUEST_REPLY refusing -EBADR (m_nodeid: the master the refuser knows
 * of): a version-3 engine would drop them and strand the moved locks.
 * Version 5 added MIGRATE_LOCK, MOVED, REPOINT and REPOINT_REPLY (a
 * resource that other nodes lock too moves with their locks, issue 18),
 * and RC_DIR_ADDS (below): a version-4 engine would keep its locks
 * pointing at the old master, and would drop RC_DIR_ADDS as an unknown
 * type, rebuild its directory without those records and then give a
 * name a second master.  Version 6 placed the directory by rendezvous
 * hashing (core/resource.c, "Directory") instead of hash modulo member
 * count, and added RC_DIR_DROP and the partial directory rebuild's vote
 * in RC_STATUS (DLM_MF_RC_PARTIAL, m_remid: the sender's last finished
 * event, m_lkid: its members hashed; core/recover.c, PARTIAL
 * DIRECTORY): a version-5 engine would look names up at other
 * directory nodes, so one name could get two masters.
 * A message of another version is dropped and logged (-EPROTO).
 *
 * RC_DIR_ADDS.  A recovery's directory rebuild registers every root
 * resource with its directory node (core/recover.c): at 16 nodes and 1M
 * locks, 875,000 records, which one message each made 875,000 messages
 * of 128 bytes of header for a key of about 10.  RC_DIR_ADDS carries
 * many records for one directory node, all mastered by m_nodeid: its
 * variable part is not one key but a list, keylen giving its length
 * (3..DLM_WIRE_LIST_MAX), each record a 2-byte length (1..DLM_MAX_KEYLEN)
 * and that many bytes of a valid key, the records filling the list
 * exactly; no parent key, no LVB, m_nodeid not 0.  dlm_key_list_next()
 * walks a decoded one.
 *
 * The transport (lowcomms) adds its own framing, sequencing and acks
 * around this; the engine relies only on per-link FIFO delivery.
 *
 * Magics.  Each dlmd protocol has its own: "DLMW" this engine wire,
 * "DLMF" the lowcomms frame (lowcomms/frame.h), "DLMK" the lowcomms
 * handshake (lowcomms/auth.h), "DLMG" the daemon group's CPG messages
 * (plugin/cpgmsg.h) and "DLMP" the client protocol
 * (libdlm/dlmd_proto.h), so that bytes of one handed to another's
 * decoder are refused at the first field.  tests/test-cpg-proto.c pins
 * that they differ.
 */
#ifndef DLMD_CORE_WIRE_H
#define DLMD_CORE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"

#define DLM_WIRE_MAGIC		0x574d4c44u	/* "DLMW" little-endian */
#define DLM_WIRE_VERSION	6
#define DLM_WIRE_HDR_LEN	24
#define DLM_WIRE_FIXED_LEN	128
/* A resource key is at most DLM_MAX_KEYLEN bytes (core/core.h); a
 * message carries at most two (its own and its parent's). */
#define DLM_WIRE_MAX_LEN	(DLM_WIRE_FIXED_LEN + 2 * DLM_MAX_KEYLEN + \
				 DLM_LVB_LEN)
/* The longest key list an RC_DIR_ADDS carries: the rest of a message of
 * the largest size. */
#define DLM_WIRE_LIST_MAX	(DLM_WIRE_MAX_LEN - DLM_WIRE_FIXED_LEN)

enum dlm_msg_type {
	DLM_MSG_REQUEST = 1,
	DLM_MSG_CONVERT = 2,
	DLM_MSG_UNLOCK = 3,
	DLM_MSG_CANCEL = 4,
	DLM_MSG_REQUEST_REPLY = 5,
	DLM_MSG_CONVERT_REPLY = 6,
	DLM_MSG_UNLOCK_REPLY = 7,
	DLM_MSG_CANCEL_REPLY = 8,
	DLM_MSG_GRANT = 9,
	DLM_MSG_BAST = 10,
	DLM_MSG_LOOKUP = 11,
	DLM_MSG_REMOVE = 12,
	DLM_MSG_LOOKUP_REPLY = 13,
	DLM_MSG_PURGE = 14,
	DLM_MSG_AUDIT = 15,		/* what state is your copy of my lock in?
					   (m_lvbseq: the audit's cookie) */
	DLM_MSG_AUDIT_REPLY = 16,	/* m_status: its lkb_status, or -ENOENT;
					   m_lvbseq echoed */
	/* deadlock probes (core/deadlock.c); both carry the probe in
	 * m_nodeid (the initiating lock's node), m_lvbseq (its lock id),
	 * m_owner (its age), m_sbflags (the probe's round) and m_status (the
	 * hops so far, 0..DLM_DEADLK_MAX_HOPS) */
	DLM_MSG_DEADLK_PROBE = 17,	/* to a master: whom does the lock
					   m_remid (yours) / m_lkid (mine) wait for? */
	DLM_MSG_DEADLK_HOLDER = 18,	/* to a holder's node: lock m_remid
					   (yours) / m_lkid (mine) blocks the probe */
	/* remastering (core/remaster.c) */
	DLM_MSG_MIGRATE = 19,		/* old master to new: you master m_key now;
					   its LVB (always carried), m_lvbseq,
					   m_nodeid = the locks I had on it (all
					   yours; with remaster_shared, the
					   MIGRATE_LOCK records sent before),
					   m_flags DLM_MF_VALNOTVALID */
	DLM_MSG_DIR_MOVE = 20,		/* new master to directory node: m_key
					   moved from m_nodeid to the sender;
					   with DLM_MF_DIR_ACK, directory node
					   to new master m_nodeid: taken */
	DLM_MSG_MIGRATE_LOCK = 21,	/* old master to new, before MIGRATE: one
					   lock of m_key; m_status its queue
					   (DLM_LKSTS_*), m_nodeid its owner
					   node, m_remid the owner's lock id,
					   modes, ranges, flags, owner, token,
					   LVB as the lock's */
	DLM_MSG_MOVED = 22,		/* old master to another owner node:
					   m_key is mastered by m_nodeid now */
	DLM_MSG_REPOINT = 23,		/* new master to an owner node: your lock
					   m_remid is my master copy m_lkid;
					   m_nodeid you, m_status its queue */
	DLM_MSG_REPOINT_REPLY = 24,	/* owner node to new master: your master
					   copy m_remid of my lock m_lkid is
					   re-pointed; m_nodeid me */
	/* recovery (core/recover.c) */
	DLM_RC_STATUS = 32,		/* barrier: step m_status of event m_gen done */
	DLM_RC_DIR_ADD = 33,		/* directory record: key -> m_nodeid */
	DLM_RC_LOOKUP = 34,		/* who masters key now? */
	DLM_RC_LOOKUP_REPLY = 35,
	DLM_RC_LOCK = 36,		/* a lock resent to its resource's new master */
	DLM_RC_LOCK_REPLY = 37,
	DLM_RC_DIR_ADDS = 38,		/* directory records: a list of keys
					 * -> m_nodeid (RC_DIR_ADDS above) */
	DLM_RC_DIR_DROP = 39,		/* forget key's record if it names
					 * m_nodeid (core/recover.c) */
	DLM_MSG_MAX = 39,
};

/* A deadlock probe travels at most this many hops (core/deadlock.c). */
#define DLM_DEADLK_MAX_HOPS	1024

static inline int dlm_msg_is_recovery(int type)
{
	return type >= DLM_RC_STATUS;
}

/* Message flags (m_flags). */
#define DLM_MF_FORCE		0x1	/* UNLOCK: force (lock may be queued) */
#define DLM_MF_ORPHAN		0x2	/* lock is an orphan */
#define DLM_MF_OWNER_GROUP	0x4	/* PURGE: m_owner is an owner group */
#define DLM_MF_VALNOTVALID	0x8	/* MIGRATE: the LVB may be stale */
#define DLM_MF_RC_NOTHING	0x10	/* RC_STATUS of step nodes: the sender
					 * has no resource whose master
					 * departed (core/recover.c, QUIET
					 * STEPS) */
#define DLM_MF_DIR_ACK		0x40	/* DIR_MOVE: the directory node's answer
					 * (core/remaster.c, "The directory") */
#define DLM_MF_RC_PARTIAL	0x20	/* RC_STATUS of step nodes: the sender
					 * may rebuild only the directory that
					 * moved; m_remid its last finished
					 * event, m_lkid a hash of that event's
					 * members (core/recover.c, PARTIAL
					 * DIRECTORY) */

/* A decoded message.  key and lvb point into the received buffer. */
struct dlm_msg {
	uint16_t	m_type;
	uint32_t	m_lsid;
	uint32_t	m_from;
	uint32_t	m_to;
	uint32_t	m_lkid;
	uint32_t	m_remid;
	uint32_t	m_exflags;
	uint32_t	m_sbflags;
	uint32_t	m_flags;
	int32_t		m_status;
	uint32_t	m_nodeid;
	uint32_t	m_lvbseq;
	uint64_t	m_owner;
	struct dlm_range m_grrange;
	struct dlm_range m_rqrange;
	int8_t		m_grmode;
	int8_t		m_rqmode;
	int8_t		m_bastmode;
	uint16_t	m_keylen;
	uint16_t	m_lvblen;
	uint16_t	m_pkeylen;
	uint32_t	m_gen;
	uint64_t	m_token;
	uint64_t	m_clock;
	const unsigned char *m_key;
	const unsigned char *m_pkey;	/* parent's key, or NULL */
	const char	*m_lvb;
};

/* A message of 'type' with every other field zero: the one builder every
 * sender starts from, filling in what its message carries. */
static inline void dlm_msg_init(struct dlm_msg *m, int type)
{
	memset(m, 0, sizeof(*m));
	m->m_type = (uint16_t)type;
}

const char *dlm_msg_type_str(int type);

/* The next key of a decoded RC_DIR_ADDS's list (m_key, m_keylen) from
 * *off (start at 0): true with *key and *keylen set and *off moved past
 * it, false at the end.  The decoder checked the list. */
static inline bool dlm_key_list_next(const unsigned char *list,
				     unsigned int listlen, unsigned int *off,
				     const unsigned char **key,
				     unsigned int *keylen)
{
	if (*off + 2 > listlen)
		return false;
	*keylen = (unsigned int)list[*off] | (unsigned int)list[*off + 1] << 8;
	*key = list + *off + 2;
	*off += 2 + *keylen;
	return true;
}

/* Encode m into buf (at least DLM_WIRE_MAX_LEN bytes).  Returns the
 * length, or -EINVAL if a length field is out of range. */
int dlm_msg_encode(const struct dlm_msg *m, unsigned char *buf, size_t buflen);

/* Decode and validate.  Returns 0 or -EBADMSG (truncated, bad magic,
 * length mismatch, bad key), -EPROTO (other version), -EOPNOTSUPP
 * (unknown type), -ERANGE (mode or range out of bounds).  'why' (may be
 * NULL) receives a static description of the first problem found. */
int dlm_msg_decode(const void *buf, size_t len, struct dlm_msg *m,
		   const char **why);

/* Check a resource key's structure (core/resource.c): a path of
 * 1..DLM_KEY_PATH_DEPTH components of 1..DLM_RESNAME_MAXLEN bytes each,
 * or a zero byte, a parent digest and one such component, exactly
 * filling keylen. */
int dlm_key_valid(const unsigned char *key, size_t keylen);

#endif /* DLMD_CORE_WIRE_H */
