/*
 * plugin/cpgmsg.h - the messages dlmds send each other over CPG, all in
 * the one daemon group (plugin/cluster.c's lockspace protocol), and
 * their codec.
 *
 * Every message has a fixed little-endian header:
 *
 *    0 magic "DLMG"   4 version(16) type(16)   8 length (whole message)
 *   12 sender node id   16 target node id (0: everyone; every type
 *      defined here is for everyone, and cluster.c drops one that has a
 *      target: each member must apply it alike)
 *   20 lockspace id (of the name in the body; 0 for ANNOUNCE)
 *   24 sequence (the sender's change count, for logs)
 *
 * followed by a body of the type's layout, and then (since version 3) by
 * the SEAL, which h_length does not count (it covers header and body):
 *
 *    0 incarnation (64 bits, random, chosen once per dlmd process; not 0)
 *    8 sequence (64 bits: 1 for the process's first message, then +1)
 *   16 MAC (32 bytes): HMAC-SHA-512-256 (libsodium crypto_auth) under
 *      the CPG key, of: the sender's CPG node id and pid (le32 each) as
 *      CPG reports them to the receiver, then every byte before the MAC
 *      (header, body, incarnation, sequence)
 *
 * The CPG key is derived from the cluster key (key_file, read once by
 * plugin/comms.c with lc_key_load, the same bytes lowcomms' keys come
 * from) with crypto_kdf, context "dlmdcpg1", its own id: not a key
 * lowcomms uses.  With crypto = none it is 32 zero bytes, a key
 * everyone knows: the seal then proves nothing (plugin/cluster.c, SEALED
 * MESSAGES says what holds then).  A process without the key cannot make
 * a seal that verifies; one that replays a captured message is named by
 * CPG with its own pid, which is not the pid the MAC binds; a message
 * sent again later carries a sequence its receivers have seen.  A lockspace name in a body is
 * a NAME field: 4 bytes of length (1..DLM_LOCKSPACE_LEN), then that many
 * bytes of graphic ASCII other than '/' (no terminating NUL).
 *
 *   JOIN (2), LEAVE (3):   NAME
 *   START (1):             NAME, then
 *       0 last event (0: the sender never ran the lockspace)
 *       4 flags (none defined yet; sent as 0)
 *       8 nmembers   12 nprev
 *      16 the sender's engine settings (since version 5): 16
 *         remaster_secs (0..86400)   20 remaster_window (4..65534)
 *         24 flags: CM_ES_SHARED (1) remaster_shared, CM_ES_FOLD (2)
 *         fold_lone_locks (plugin/cluster.c, EQUAL SETTINGS)
 *      28 nmembers node ids (the change the START answers), then nprev
 *         node ids (the members of the sender's last event)
 *   ANNOUNCE (4):          0 flags (CM_ANN_FIRST, CM_ANN_LAST,
 *                            CM_ANN_VOUCH)
 *                          4 view: the daemon group configuration it
 *                            answers (a hash of its members)
 *                          8 count   12 nvouch
 *                         16 count NAMEs: lockspaces the sender is in,
 *                            then nvouch entries of 16 bytes: 0 node id
 *                            (not 0), 4 CPG pid, 8 incarnation (64
 *                            bits, not 0): every process of the group
 *                            whose message the sender has seen verify
 *                            (itself included), all of them.  Only with
 *                            CM_ANN_VOUCH, which only a FIRST part has:
 *                            the sender can tell every member process
 *                            (it saw each join or verified one of its
 *                            messages), so one not listed never sealed
 *                            a message (plugin/cluster.c, VOUCHING);
 *                            without it nvouch is 0
 *   FAILED (5):            NAME, then 0 event (the sender's last
 *                          decided event of the lockspace; 0: it has no
 *                          instance that ran it), 4 count, 8 count
 *                          entries of 20 bytes: node id, flags, CPG pid,
 *                          incarnation (64 bits; pid and incarnation of
 *                          the process that failed, 0: not known): the
 *                          daemons the sender has recorded as failed out
 *                          of that lockspace and not yet seen fenced, all
 *                          of them (count 0: none any more).  Flags:
 *                          CM_FAILED_DAEMON (1) only its dlmd died
 *                          (proc-down), the node is up; CM_FAILED_FENCING
 *                          (2) the sender saw a FENCE_CLAIM or
 *                          FENCE_RESULT for it since the failure (or has
 *                          one of its own on the way); CM_FAILED_FIRM (4)
 *                          the failure is not a node-down seen from a
 *                          minority side (seen from a majority or the
 *                          tie-breaker half, the even split's other half,
 *                          a removal, a restart).  The event and the
 *                          entries are what a merge's sync needs to forgive
 *                          a failure nobody acted on (plugin/cluster.c,
 *                          FORGIVING A SPLIT).
 *   FENCE_CLAIM (6):       0 node id (the failed node; not 0)
 *                          4 status (0)
 *                          the sender fences that node if its claim is
 *                          the first delivered while nobody holds one
 *   FENCE_RESULT (7):      0 node id   4 status: CM_FENCE_DONE (0, the
 *                          sender fenced it), CM_FENCE_FAILED (1, its
 *                          attempt failed: the next survivor takes over),
 *                          CM_FENCE_RELEASED (2, it gives its claim back
 *                          without a verdict)
 *                          (plugin/fence.c, ONE FENCER)
 *   LS_RESTART (8):        NAME, then 0 event (not 0): the sender's
 *                          recovery of that event failed; every member
 *                          whose last event it is restarts recovery as
 *                          a change of the same members (plugin/
 *                          cluster.c, RECOVERY RETRY)
 *   UNREACH (9):           0 flags (none defined yet; sent as 0)
 *                          4 count   8 count node ids, strictly
 *                            increasing: every peer the sender's
 *                            lowcomms has not got a frame through to
 *                            for peer_unreachable_secs, all of them
 *                            (count 0: it reaches every peer again)
 *                          (plugin/cluster.c, UNREACHABLE PEERS)
 *   CONFIG (10):           0 flags (0, or CM_CONFIG_SYNC alone)
 *                          4 configured nodes (1..DLM_MAX_NODES)
 *                          8 the tie-breaker node id (0: none)
 *                          12 with CM_CONFIG_SYNC only: the view (as an
 *                            ANNOUNCE's) of the sync it was sent at
 *                          what the sender's corosync configuration says
 *                          a split's majority is counted against; every
 *                          member decides with the last one delivered.
 *                          CM_CONFIG_SYNC: the group's pair sent again
 *                          at a sync's start for those who join, taken
 *                          only in that sync, before any other CONFIG
 *                          (plugin/cluster.c, CONFIGURATION CHANGES)
 *
 * Types 6 and 7 came after version 2 was released, without a version
 * change: a version-2 dlmd that does not know them ignores them, as it
 * ignores every type it does not know, and fences by itself (fence.c
 * says why that is safe).  Type 8 came the same way: a dlmd that does
 * not know it leaves a failed recovery waiting until the next
 * membership change, as before.  Type 9 too: a dlmd that does not know
 * it takes no part in removing a node it cannot reach, and removes
 * nothing itself; the others still agree (it is their rule).  Type 10
 * too: a dlmd that does not know it counts majorities against its own
 * configuration, re-read when it changes, as before.
 *
 * Version 1 (a CPG group per lockspace, START only) is not understood,
 * neither is version 2 (the layouts above without the SEAL, so nothing
 * of it can be verified), nor version 3 (FAILED without event, pid,
 * incarnation and the flags FENCING and FIRM: its records cannot say
 * whether a failure may be forgiven), nor version 4 (START without the
 * engine settings: a member could not tell that another's remastering
 * settings differ from its own): a message of another version is
 * refused by the header decoder (-EPROTONOSUPPORT, with the version it
 * carries filled in), and cluster.c logs the sender as refused.
 *
 * The magic "DLMG" is this protocol's own (core/wire.h lists the other
 * dlmd protocols' magics), so an engine message or a lowcomms frame
 * handed to this decoder is refused at the header.
 *
 * The decoders take nothing on trust: a message whose length is not
 * exactly what its header and counts say, of another magic or version,
 * with a bad name, undefined flags, a node id 0, or with more than
 * DLM_MAX_NODES ids or CM_ANN_MAX names, is refused; tests/fuzz-cpg.c checks that whatever
 * they accept encodes back to the same bytes.
 */
#ifndef DLMD_CPGMSG_H
#define DLMD_CPGMSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define CM_MAGIC		0x474d4c44u	/* "DLMG" little-endian */
#define CM_VERSION		5	/* 5: settings in START; 4: vouching,
					   forgiving; 3: the SEAL */
#define CM_VERSION_SELF_STOP	5	/* the first version whose dlmd, a
					   later joiner beside dlmds of
					   another version, stops itself
					   (cluster.c, ANOTHER VERSION) */
#define CM_KEY_LEN		32	/* the CPG key */
#define CM_MAC_LEN		32
#define CM_SEAL_LEN		(16 + CM_MAC_LEN)	/* inc, seq, MAC */
#define CM_HDR_LEN		28
#define CM_NAME_MAX_LEN		(4 + DLM_LOCKSPACE_LEN)
#define CM_START_FIXED		28	/* last_event, flags, nmembers, nprev,
					   the three settings words */
#define CM_ES_SHARED		1u	/* remaster_shared */
#define CM_ES_FOLD		2u	/* fold_lone_locks */
#define CM_ES_FLAGS		(CM_ES_SHARED | CM_ES_FOLD)
#define CM_ES_SECS_MAX		86400	/* remaster_secs, as dlm.conf */
#define CM_ES_WINDOW_MIN	4	/* remaster_window, as dlm.conf */
#define CM_ES_WINDOW_MAX	65534
#define CM_ANN_FIXED		16	/* flags, view, count, nvouch */
#define CM_ANN_MAX		64	/* names in one ANNOUNCE */
#define CM_ANN_FIRST		1u	/* the first of the sender's set */
#define CM_ANN_LAST		2u	/* the last: the set is complete */
#define CM_ANN_VOUCH		4u	/* (FIRST) the vouch list is whole */
#define CM_VOUCH_LEN		16	/* node id, pid, incarnation */
#define CM_START_MAX_LEN	(CM_HDR_LEN + CM_NAME_MAX_LEN + CM_START_FIXED + \
				 2 * 4 * DLM_MAX_NODES)
#define CM_ANN_MAX_LEN		(CM_HDR_LEN + CM_ANN_FIXED + \
				 CM_ANN_MAX * CM_NAME_MAX_LEN + \
				 CM_VOUCH_LEN * DLM_MAX_NODES)
#define CM_FAILED_FIXED		8	/* event, count */
#define CM_FAILED_ENTRY		20	/* id, flags, pid, incarnation */
#define CM_FAILED_DAEMON	1u	/* a dlmd failure (proc-down) */
#define CM_FAILED_FENCING	2u	/* a claim or result for it since */
#define CM_FAILED_FIRM		4u	/* not a minority's node-down */
#define CM_FAILED_FLAGS		(CM_FAILED_DAEMON | CM_FAILED_FENCING | \
				 CM_FAILED_FIRM)
#define CM_FAILED_MAX_LEN	(CM_HDR_LEN + CM_NAME_MAX_LEN + CM_FAILED_FIXED + \
				 CM_FAILED_ENTRY * DLM_MAX_NODES)
#define CM_FENCE_LEN		(CM_HDR_LEN + 8)	/* node id, status */
#define CM_RESTART_FIXED	4	/* event */
#define CM_RESTART_MAX_LEN	(CM_HDR_LEN + CM_NAME_MAX_LEN + CM_RESTART_FIXED)
#define CM_UNREACH_FIXED	8	/* flags, count */
#define CM_UNREACH_MAX_LEN	(CM_HDR_LEN + CM_UNREACH_FIXED + 4 * DLM_MAX_NODES)
#define CM_CONFIG_LEN		(CM_HDR_LEN + 12)	/* flags, nodes, tiebreak */
#define CM_CONFIG_SYNC		1u	/* sent again at a sync: + view */
#define CM_CONFIG_SYNC_LEN	(CM_HDR_LEN + 16)
#define CM_FENCE_DONE		0u
#define CM_FENCE_FAILED		1u
#define CM_FENCE_RELEASED	2u
#define CM_MAX2(a, b)		((a) > (b) ? (a) : (b))
#define CM_MAX_LEN		CM_MAX2(CM_MAX2(CM_START_MAX_LEN, CM_ANN_MAX_LEN), \
					CM_FAILED_MAX_LEN)

/* The largest message with its seal: what CPG may carry of ours. */
#define CM_WIRE_MAX_LEN		(CM_MAX_LEN + CM_SEAL_LEN)

enum cm_type {
	CM_START = 1,
	CM_JOIN = 2,
	CM_LEAVE = 3,
	CM_ANNOUNCE = 4,
	CM_FAILED = 5,
	CM_FENCE_CLAIM = 6,
	CM_FENCE_RESULT = 7,
	CM_RESTART = 8,
	CM_UNREACH = 9,
	CM_CONFIG = 10,
};

struct cm_hdr {
	uint32_t	h_magic;
	uint16_t	h_version;
	uint16_t	h_type;
	uint32_t	h_length;
	uint32_t	h_sender;
	uint32_t	h_target;
	uint32_t	h_lsid;
	uint32_t	h_seq;
};

struct cm_name {
	char		n_name[DLM_LOCKSPACE_LEN + 1];	/* NUL-terminated */
};

/* A daemon's engine settings, as its dlm.conf says (EQUAL SETTINGS). */
struct cm_settings {
	uint32_t	es_remaster_secs;	/* 0: remastering off */
	uint32_t	es_remaster_window;
	uint32_t	es_flags;		/* CM_ES_* */
};

struct cm_start {
	struct cm_name	st_ls;
	uint32_t	st_last_event;		/* 0: fresh */
	uint32_t	st_flags;		/* none defined yet */
	struct cm_settings st_set;		/* the sender's */
	uint32_t	st_nmembers;
	uint32_t	st_members[DLM_MAX_NODES];
	uint32_t	st_nprev;
	uint32_t	st_prev[DLM_MAX_NODES];
};

/* A process an ANNOUNCE vouches for: it has sealed a message. */
struct cm_vouch {
	uint32_t	v_id;			/* not 0 */
	uint32_t	v_pid;
	uint64_t	v_inc;			/* not 0 */
};

struct cm_announce {
	uint32_t	an_flags;		/* CM_ANN_FIRST | LAST | VOUCH */
	uint32_t	an_view;		/* the configuration it answers */
	uint32_t	an_count;
	struct cm_name	an_ls[CM_ANN_MAX];
	uint32_t	an_nvouch;		/* 0 without CM_ANN_VOUCH */
	struct cm_vouch	an_vouch[DLM_MAX_NODES];
};

struct cm_failed {
	struct cm_name	fl_ls;
	uint32_t	fl_event;	/* the sender's last event of it, 0: none */
	uint32_t	fl_count;
	uint32_t	fl_ids[DLM_MAX_NODES];
	uint32_t	fl_flags[DLM_MAX_NODES];	/* CM_FAILED_* */
	uint32_t	fl_pids[DLM_MAX_NODES];	/* CPG pid it failed with, 0: */
	uint64_t	fl_incs[DLM_MAX_NODES];	/* its incarnation; 0: unknown */
};

struct cm_restart {
	struct cm_name	rs_ls;
	uint32_t	rs_event;		/* whose recovery failed; not 0 */
};

struct cm_unreach {
	uint32_t	ur_flags;		/* 0 */
	uint32_t	ur_count;
	uint32_t	ur_ids[DLM_MAX_NODES];	/* strictly increasing */
};

struct cm_config {
	uint32_t	cg_flags;		/* 0 or CM_CONFIG_SYNC */
	uint32_t	cg_nnodes;		/* 1..DLM_MAX_NODES */
	uint32_t	cg_tiebreak;		/* 0: none */
	uint32_t	cg_view;		/* CM_CONFIG_SYNC only, else 0 */
};

struct cm_fence {
	uint32_t	fc_nodeid;		/* the failed node */
	uint32_t	fc_status;		/* CM_FENCE_*; 0 in a CLAIM */
};

/* The SEAL's incarnation and sequence. */
struct cm_seal {
	uint64_t	se_inc;			/* not 0 */
	uint64_t	se_seq;			/* not 0 */
};

/* Is 'name' a valid lockspace name on the wire (1..DLM_LOCKSPACE_LEN
 * bytes of graphic ASCII, no '/')? */
int dlmd_cm_name_valid(const char *name);

/* Each encoder writes the whole message into buf (CM_MAX_LEN bytes);
 * h_magic, h_version, h_type and h_length are filled in here.  They
 * return its length, or 0 if the structure cannot be encoded (a bad
 * name, too many ids or names). */
size_t dlmd_cm_start_encode(unsigned char *buf, const struct cm_hdr *h,
			    const struct cm_start *st);
/* JOIN or LEAVE (type) of lockspace 'name'. */
size_t dlmd_cm_ls_encode(unsigned char *buf, const struct cm_hdr *h,
			 uint16_t type, const char *name);
size_t dlmd_cm_announce_encode(unsigned char *buf, const struct cm_hdr *h,
			       const struct cm_announce *an);
size_t dlmd_cm_failed_encode(unsigned char *buf, const struct cm_hdr *h,
			     const struct cm_failed *fl);
size_t dlmd_cm_restart_encode(unsigned char *buf, const struct cm_hdr *h,
			      const struct cm_restart *rs);
size_t dlmd_cm_unreach_encode(unsigned char *buf, const struct cm_hdr *h,
			      const struct cm_unreach *ur);
size_t dlmd_cm_config_encode(unsigned char *buf, const struct cm_hdr *h,
			     const struct cm_config *cg);
/* FENCE_CLAIM or FENCE_RESULT (type). */
size_t dlmd_cm_fence_encode(unsigned char *buf, const struct cm_hdr *h,
			    uint16_t type, const struct cm_fence *fc);

/* The header of a message of 'len' bytes: 0, or -EINVAL with *why, or
 * -EPROTONOSUPPORT (another version; h->h_version says which). */
int dlmd_cm_hdr_decode(const unsigned char *msg, size_t len, struct cm_hdr *h,
		       const char **why);
/* A body (what follows the header): 0, or -EINVAL with *why. */
int dlmd_cm_start_decode(const unsigned char *body, size_t len,
			 struct cm_start *st, const char **why);
int dlmd_cm_ls_decode(const unsigned char *body, size_t len,
		      struct cm_name *name, const char **why);
int dlmd_cm_announce_decode(const unsigned char *body, size_t len,
			    struct cm_announce *an, const char **why);
int dlmd_cm_failed_decode(const unsigned char *body, size_t len,
			  struct cm_failed *fl, const char **why);
int dlmd_cm_restart_decode(const unsigned char *body, size_t len,
			   struct cm_restart *rs, const char **why);
int dlmd_cm_unreach_decode(const unsigned char *body, size_t len,
			   struct cm_unreach *ur, const char **why);
int dlmd_cm_config_decode(const unsigned char *body, size_t len,
			  struct cm_config *cg, const char **why);
/* The body of a FENCE_CLAIM or FENCE_RESULT (type). */
int dlmd_cm_fence_decode(const unsigned char *body, size_t len, uint16_t type,
			 struct cm_fence *fc, const char **why);

/* The CPG key from the cluster key (lowcomms/lowcomms.h, lc_key_load). */
void dlmd_cm_key_derive(const unsigned char cluster_key[CM_KEY_LEN],
			unsigned char key[CM_KEY_LEN]);
/* The CPG key from the cluster key (NULL: crypto = none, the key of
 * zeros) that comms.c read from key_file once for both of its users
 * (plugin/comms.c, THE CLUSTER KEY), in memory kept out of core dumps
 * (lc_secret_alloc; free it with lc_secret_free).  NULL: no memory. */
unsigned char *dlmd_cm_key_new(const unsigned char *cluster_key);
/* Append the SEAL to the 'len' bytes of an encoded message in buf (which
 * has room for CM_SEAL_LEN more), as sent by CPG process (nodeid, pid).
 * Returns the sealed length. */
size_t dlmd_cm_seal(unsigned char *buf, size_t len,
		    const unsigned char key[CM_KEY_LEN], uint32_t nodeid,
		    uint32_t pid, const struct cm_seal *se);
/* Verify the SEAL of a message of 'len' bytes that CPG says process
 * (nodeid, pid) sent: 0 with *se and *inner (the length of header and
 * body) filled in, or -EBADMSG with *why (too short or long, a bad MAC,
 * incarnation or sequence 0).  Nothing but the seal is checked here. */
int dlmd_cm_open(const unsigned char *msg, size_t len,
		 const unsigned char key[CM_KEY_LEN], uint32_t nodeid,
		 uint32_t pid, struct cm_seal *se, size_t *inner,
		 const char **why);

#endif
