/*
 * core/core_internal.h - the engine's data model, shared by the files of core/.
 *
 * Objects and their prefixes:
 *   struct dlm_core  core_   one node's engine
 *   struct dlm_ls    ls_     a lockspace on this node
 *   struct dlm_rsb   res_    a resource this node knows (master or copy)
 *   struct dlm_lkb   lkb_    a lock: a process copy (owned by a local
 *                            client) or a master copy (this node masters
 *                            the resource, another node owns the lock)
 *   struct dlm_dirent de_    a directory record: resource -> master node
 *   struct dlm_owner  ow_    the locks of one local client
 *   struct dlm_solo   so_    a lone lock folded with its resource
 *                            (solo.c): stands for an lkb and an rsb
 *
 * A lock owned by a local client on a locally mastered resource is one
 * lkb that is both.  Everything recovery needs is carried here: each
 * lkb's owning node and the lock id on the other side (remid), each
 * resource's master, each lockspace's members and the list of operations
 * waiting for a remote reply (ls_waiters).
 */
#ifndef DLMD_CORE_INTERNAL_H
#define DLMD_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "core/htab.h"
#include "core/list.h"
#include "core/wire.h"

/* lkb_flags: internal state bits */
#define LKBF_MSTCPY		0x0001	/* master copy of a remote node's lock */
#define LKBF_ORPHAN		0x0002	/* persistent lock whose owner went away */
#define LKBF_OVERLAP_CANCEL	0x0004	/* cancel requested while an op was in flight */
#define LKBF_OVERLAP_UNLOCK	0x0008	/* force unlock requested while an op was in flight */
#define LKBF_WANT_BAST		0x0010	/* deliver blocking ASTs */
#define LKBF_RANGED		0x0020	/* lkb_grrange is not the whole resource */
#define LKBF_UNLOCK_CHILDLESS	0x0040	/* purge: unlock once the last child is gone */
#define LKBF_PURGED		0x0080	/* owner purged: deliver no more ASTs */
#define LKBF_VALBLK		0x0100	/* the lock carries an LVB */
#define LKBF_RESEND		0x0200	/* op (lkb_wait_type) to redo at finish; on ls_resend */
#define LKBF_LVB_STALE		0x0400	/* lkb_lvb came flagged VALNOTVALID (or was
					 * written with IVVALBLK) */
#define LKBF_LVB_KNOWN		0x0800	/* lkb_lvb holds the value this lock last read
					 * or wrote (VALBLK alone says only that the
					 * latest request asked for one) */
#define LKBF_BLOCKED		0x1000	/* queued at a remote master; on ls_blocked */
#define LKBF_AUDIT_SENT		0x2000	/* an AUDIT about it is unanswered (audit.c) */
#define LKBF_STUCK		0x4000	/* the audit found it cannot make progress */
#define LKBF_OWNED		0x8000	/* on its owner's ow_locks (the owner is
					 * found by lkb_ownerid: no pointer kept,
					 * 8 B less per lock) */
#define LKBF_DLWAIT		0x10000	/* queued process copy; on ls_dlwait (deadlock.c) */
#define LKBF_DEADLK		0x20000	/* chosen as a deadlock's victim: its cancel
					 * completes with -EDEADLK (deadlock.c) */
#define LKBF_DLXID		0x40000	/* lkb_dl_waiter is an xid (deadlock.c) */
#define LKBF_DLASYNC		0x80000	/* its requester does not block on its
					 * request (deadlock.c) */
#define LKBF_UNLOCK_LVB		0x100000 /* the LVB of its overlapping unlock
					  * waits on ls_unlock_lvbs (lock.c) */
#define LKBF_GRANT_HELD	0x200000 /* granted while its deadlock cancel was in
					  * flight: the completion waits for the
					  * cancel's reply (deadlock.c) */
#define LKBF_REPOINT		0x400000 /* remaster.c: a process copy whose
					  * resource moved, awaiting the new
					  * master's REPOINT (lkb_remid 0); a
					  * master copy whose REPOINT is not
					  * acknowledged yet */
#define LKBF_PARKED		0x800000 /* its op (lkb_wait_type) waits for
					  * the re-point, not on ls_waiters */
#define LKBF_RP_HELD		0x1000000 /* a REPOINT for it is held until
					   * its old master's MOVED */
#define LKBF_RP_RESENT		0x2000000 /* remaster.c: awaited its re-point
					   * when a recovery began, so it is
					   * resent to the new master: a GRANT
					   * about it held until its
					   * RC_LOCK_REPLY is void (until
					   * finish) */
/* lock.c: how many times in a row a refusal (-EBADR) sent this request
 * straight on (three bits, 0..7; request_bounced) */
#define LKBF_BOUNCES		0x1C000000
#define LKBF_BOUNCE_ONE		0x04000000

/* lkb_wait_type: the remote operation this process copy waits for */
enum dlm_wait {
	DLM_WAIT_NONE = 0,
	DLM_WAIT_LOOKUP,	/* on res_lookupq: master being looked up */
	DLM_WAIT_REQUEST,
	DLM_WAIT_CONVERT,
	DLM_WAIT_UNLOCK,
	DLM_WAIT_CANCEL,
};

struct dlm_rsb;
struct dlm_owner;
struct dlm_lkb;

/* The part of a process copy used only while it waits in a queue
 * (WAITING or CONVERT): deadlock detection's list and clocks, and the
 * audit's list of waits at a remote master.  Most locks are granted at
 * once and never wait; they carry a NULL pointer instead of these 64
 * bytes.  Allocated when the lock enters ls_dlwait or ls_blocked
 * (dlm_lkb_qwait_get), freed when it is on neither (dlm_lkb_qwait_put). */
struct dlm_lkb_wait {
	struct dlm_lkb		*lw_lkb;	/* its lock */
	/* deadlock detection (deadlock.c) */
	struct dlm_list		lw_dlwait;	/* ls_dlwait (LKBF_DLWAIT) */
	uint64_t		lw_dl_start;	/* its wait began then: its age */
	uint64_t		lw_dl_probe_ms;	/* its last probe (or wait start) */
	uint32_t		lw_dl_mark;	/* the last probe forwarded from it */
	/* the audit (audit.c) */
	struct dlm_list		lw_blocked;	/* ls_blocked (LKBF_BLOCKED) */
};

struct dlm_lkb {
	/* ls_lkbtbl's node.  A lock id is its own hash (resource.c
	 * lkid_hash), so lkb_id is the node's hn_hash, and lkb_remid its
	 * spare word: the same bytes under the lock's names. */
	union {
		struct dlm_hnode	lkb_hnode;
		struct {
			struct dlm_hnode *lkb_hnode_next; /* hn_next */
			uint32_t	lkb_id;		/* hn_hash */
			uint32_t	lkb_remid;	/* hn_spare: id on the other
							   node (0: none yet) */
		};
	};
	uint32_t		lkb_nodeid;	/* node owning the lock */
	uint32_t		lkb_flags;	/* LKBF_* */
	uint32_t		lkb_exflags;	/* DLM_LKF_* of the current request */
	/* modes are DLM_LOCK_IV (-1) .. DLM_LOCK_EX (5), statuses 0..3,
	 * wait types 0..5: four bits each */
	int8_t			lkb_grmode : 4;
	int8_t			lkb_rqmode : 4;
	int8_t			lkb_highbast : 4;	/* highest mode already basted */
	int8_t			lkb_last_bast : 4;	/* last bast for the current grant */
	uint8_t			lkb_status : 4;		/* DLM_LKSTS_* */
	uint8_t			lkb_wait_type : 4;	/* enum dlm_wait */
	uint8_t			lkb_sbflags;	/* DLM_SBF_* for the next completion */
	uint32_t		lkb_lvbseq;
	uint32_t		lkb_nchildren;
	/* its wait (or audit) started then: the low 32 bits of the clock's
	 * ms, compared wrap-safe (a wait is far shorter than 49 days) */
	uint32_t		lkb_audit_ms;
	uint32_t		lkb_unlock_flags;	/* flags of an unlock to redo */
	uint32_t		lkb_wait_nodeid;	/* node the op in flight went to */
	/* the parent lock's id (0: none); a parent outlives its children
	 * (lkb_nchildren), so the id finds it (lock.c parent_of) */
	uint32_t		lkb_parent_id;
	uint64_t		lkb_token;	/* fencing token of the current write
						   grant (token.c); 0: none */
	struct dlm_rsb		*lkb_rsb;
	uint64_t		lkb_ownerid;	/* owner id (kept for orphans: purge by owner) */
	/* the AST argument; on ls_childless, where a purged lock delivers
	 * no AST, the next lock's address (lock.c unlock_childless) */
	uint64_t		lkb_astarg;
	struct dlm_list		lkb_statequeue;	/* res grant/convert/wait queue, or res_lookupq */
	struct dlm_list		lkb_ownerqueue;	/* ow_locks or ls_orphans */
	struct dlm_list		lkb_waiter;	/* ls_waiters while a remote op is in flight,
						   or ls_resend (LKBF_RESEND) */
	/* while a process copy waits in a queue (LKBF_DLWAIT or
	 * LKBF_BLOCKED): see struct dlm_lkb_wait; NULL otherwise */
	struct dlm_lkb_wait	*lkb_qwait;
	uint64_t		lkb_dl_waiter;	/* who within the owner made its last
						   request (dlm_lock_req.waiter) */
	/* [0] the granted range, [1] the requested one; NULL while both
	 * are the whole resource, as for most locks (dlm_lkb_grrange(),
	 * dlm_lkb_rqrange(), dlm_lkb_set_range()) */
	struct dlm_range	*lkb_ranges;
	char			*lkb_lvb;	/* NULL: all zeros (see dlm_lvb_store) */
};

/* The LVB of a force-unlock asked for while an operation is in flight,
 * kept apart (the operation may still read the lock's own LVB) until the
 * reply comes: rare, so not 8 B in every lkb (lock.c run_overlap). */
struct dlm_unlock_lvb {
	struct dlm_list		ul_list;	/* ls_unlock_lvbs */
	struct dlm_lkb		*ul_lkb;	/* with LKBF_UNLOCK_LVB */
	char			ul_lvb[DLM_LVB_LEN];
};

/* res_flags */
#define RESF_LOOKUP		0x01	/* master lookup in flight */
#define RESF_VALNOTVALID	0x02	/* LVB may be stale */
#define RESF_TOSSED		0x04	/* on ls_toss: unused, kept for a while */
#define RESF_RECOVER_MASTER	0x08	/* recovery: master departed, find a new one */
#define RESF_NEW_MASTER		0x10	/* recovery: we became master, recover LVB */
#define RESF_RECOVER_GRANT	0x20	/* recovery: locks purged, grant again */
#define RESF_RC_SENT		0x40	/* recovery: step_locks resent its locks */
#define RESF_MOVED		0x80	/* remaster.c: moved to or from this node
					 * at tick res_rm_tick */
#define RESF_MOVED_AWAY		0x100	/* remaster.c: we moved it to res_nodeid
					 * (a refused request is told so) */
#define RESF_REPOINTED		0x400	/* remaster.c: master copies made here
					 * from another master's records, which
					 * an RC_LOCK may name (recover.c) */
#define RESF_RC_DROP		0x800	/* recovery: its lookup was in flight at
					 * the stop (recover.c, PARTIAL
					 * DIRECTORY) */
#define RESF_DIR_UNACKED	0x1000	/* remaster.c: moved here, our DIR_MOVE
					 * not acknowledged yet (no move away
					 * meanwhile) */
#define RESF_REC_TRACKED	0x2000	/* recovery: on ls_rec_rsbs, looked at by
					 * the steps (recover.c; stale while
					 * running, set anew by step_start) */
/* marks a finished recovery leaves on a running lockspace's resources
 * (the next step_start sets or clears both for each): nothing to a fold */
#define RESF_REC_STALE		(RESF_REC_TRACKED | RESF_RC_DROP)
#define RESF_DIR		0x200	/* it is its own directory record:
					 * master us, confirmed in res_de_event
					 * (resource.c, "Directory records") */

struct dlm_rsb {
	/* ls_rsbtbl's node, keyed by key; its spare word holds the flags
	 * and the key's length */
	union {
		struct dlm_hnode	res_hnode;
		struct {
			struct dlm_hnode *res_hnode_next;	/* hn_next */
			uint32_t	res_hnode_hash;		/* hn_hash */
			uint16_t	res_flags;		/* hn_spare */
			uint16_t	res_keylen;
		};
	};
	struct dlm_rsb		*res_parent;	/* a sub-resource's parent, held
						   (counted in its res_nlkbs);
						   NULL for a root */
	/* An unused rsb (RESF_TOSSED) holds no lock, so its counts are all
	 * zero: its place on the toss list takes their bytes (resource.c
	 * maybe_toss; dlm_rsb_hold zeroes them again). */
	union {
		struct {
			/* granted locks per mode above NL, at [mode - 1]
			 * (NL conflicts with nothing: not counted) */
			uint32_t	res_grcount[DLM_NUM_MODES - 1];
			/* granted locks with a partial range: past the
			 * toss fields, in what would be the union's
			 * padding.  Nothing relies on tossing leaving it
			 * as it was (C lets a store to a member write the
			 * padding): dlm_rsb_hold zeroes it with the
			 * counts, and a tossed rsb's is read as 0 */
			uint32_t	res_nranged;
		};
		struct {
			struct dlm_list	res_toss;	/* ls_toss */
			/* put there then: the low 32 bits of the
			 * clock's ms, compared wrap-safe (toss_ms is a
			 * 32-bit number of ms) */
			uint32_t	res_toss_time;
		};
	};
	struct dlm_list		res_grantq;
	struct dlm_list		res_convertq;
	struct dlm_list		res_waitq;
	struct dlm_list		res_lookupq;	/* process copies waiting for the master */
	char			*res_lvb;	/* NULL: all zeros (see dlm_lvb_store) */
	/* 32-bit fields last: the key follows the last without padding */
	uint32_t		res_nodeid;	/* master node; 0: unknown */
	uint32_t		res_new_nodeid;	/* recovery: the new master, before commit */
	uint32_t		res_nlkbs;	/* lkbs on any queue of this rsb */
	uint32_t		res_lvbseq;
	uint32_t		res_nnoorder;	/* waiting NOORDER requests */
	/* recovery: the first event of the current recovery (one after
	 * ls_generation) in which it took an RC_LOCK; 0 or older: none */
	uint32_t		res_rc_event;
	/* remastering (remaster.c): the current window's candidate node,
	 * operations counted and the candidate's share, and the low 32 bits
	 * of the tick count at the last move (with RESF_MOVED) */
	uint32_t		res_rm_node;
	uint16_t		res_rm_ops;
	uint16_t		res_rm_hits;
	uint32_t		res_rm_tick;
	uint32_t		res_de_event;	/* with RESF_DIR: as de_event */
	unsigned char		res_key[];	/* see resource.c; allocated to its
						 * length, from offsetof, not sizeof */
};

/* A directory record kept apart from any rsb: one whose master is another
 * node, or ours without an rsb here (else the rsb is it: RESF_DIR). */
struct dlm_dirent {
	struct dlm_hnode	de_hnode;	/* ls_dirtbl */
	struct dlm_list		de_bynode;	/* its master's bn_dirents (not
						   ours: empty) */
	uint32_t		de_master;
	uint32_t		de_event;	/* recovery event that last confirmed it */
	uint16_t		de_keylen;
	unsigned char		de_key[];
};

/* What this node keeps of another node's (resource.c, "By node"): the
 * master copies of its locks and the directory records naming it as
 * master, so that its departure is dealt with in what it left, not in
 * a walk of every lock and record (recover.c, NARROW STEPS). */
struct dlm_bynode {
	uint32_t		bn_nodeid;	/* 0: a free slot */
	struct dlm_list		bn_mstcpys;	/* master copies, by their
						   lkb_ownerqueue (a master
						   copy has no local owner) */
	struct dlm_list		bn_dirents;	/* de_bynode */
};

/* A block of lock ids reserved for one owner (dlm_core_ids_reserve). */
struct dlm_idblock {
	uint32_t		ib_first;	/* a multiple of DLM_IDS_BLOCK */
	/* no id of the block at or past ib_first + ib_fresh has been a
	 * lock's since it was reserved (all were free then): a lock there
	 * needs no look for a duplicate (lock.c request_lock) */
	uint32_t		ib_fresh;
	uint64_t		ib_owner;
};

struct dlm_owner {
	struct dlm_hnode	ow_hnode;	/* ls_ownertbl, keyed by ow_id */
	uint64_t		ow_id;
	struct dlm_list		ow_locks;	/* lkb_ownerqueue, newest last */
	struct dlm_list		ow_solos;	/* so_ownerqueue (solo.c) */
};

/* A lone lock folded with its resource (core/solo.c, issue 14): a
 * granted process copy, whole range, no LVB, no parent and no child,
 * the only lock on a root resource this node masters, and directs or
 * (SOLO_REMOTE) found itself master of by a lookup (solo.c, "Shared
 * lockspaces", "Names other nodes direct").  One record instead of an
 * lkb and an rsb, in tables and a list of its own (ls_solotbl,
 * ls_soloids, ow_solos), so that nothing that walks lkbs or rsbs can
 * take it for either; anything but its own unlock makes it an rsb and
 * an lkb again first (dlm_solo_unfold).  Unlocked, it stays as its
 * resource tossed (so_grmode DLM_LOCK_IV): in ls_solotbl only, on
 * ls_solo_toss by so_ownerqueue, until toss_ms or max_tossed drop it
 * or a lock on its name takes it again. */
struct dlm_solo {
	/* ls_solotbl's node, keyed by key; its spare word is the key's
	 * length */
	struct dlm_hnode	so_keynode;
	/* ls_soloids' node: its hash is the lock id (as ls_lkbtbl's),
	 * its spare word the request's DLM_LKF_* flags */
	struct dlm_hnode	so_idnode;
	struct dlm_list		so_ownerqueue;	/* ow_solos; tossed: ls_solo_toss */
	uint64_t		so_ownerid;
	uint64_t		so_astarg;
	uint64_t		so_dl_waiter;	/* as lkb_dl_waiter */
	union {
		uint64_t	so_token;	/* as lkb_token */
		uint64_t	so_toss_time;	/* tossed: put there then (ms) */
	};
	uint32_t		so_flags;	/* LKBF_WANT_BAST, _DLXID, _DLASYNC,
						   _VALBLK, _LVB_KNOWN; solo.c's
						   SOLO_REMOTE */
	uint32_t		so_de_event;	/* as res_de_event (RESF_DIR) */
	int8_t			so_grmode;	/* DLM_LOCK_IV: tossed */
	/* it read the value (zeros) with VALBLK, converted folded: its
	 * lkb_lvbseq is the first one (lvbseq_start), else 0 */
	uint8_t			so_lvbread;
	/* conversions done and requests refused folded:
	 * dlm_remaster_count's, counted at the unfold */
	uint16_t		so_nconv;
	unsigned char		so_key[];	/* allocated to its length */
};

/* A message held for later, as received (ls.c dlm_held_add). */
struct dlm_held {
	struct dlm_list		h_list;
	uint32_t		h_from;
	size_t			h_len;
	unsigned char		h_buf[];
};

/* The latest barrier status heard from one node. */
struct dlm_rcstat {
	uint32_t		rs_nodeid;
	uint32_t		rs_event;
	uint32_t		rs_step;
	bool			rs_nothing;	/* its status of step nodes in
						 * rs_event: no master to recover */
	bool			rs_partial;	/* ... and its vote for a partial
						 * directory rebuild */
	uint32_t		rs_pgen;	/* ... with its last finished event */
	uint32_t		rs_pmhash;	/* ... and that event's members */
};

/* Recovery steps (recover.c); a barrier follows each. */
enum dlm_rstep {
	DLM_RS_NONE = 0,
	DLM_RS_NODES,		/* members agreed; directory cleared */
	DLM_RS_DIR,		/* directory rebuilt */
	DLM_RS_MASTERS_PENDING,	/* waiting for our new-master lookups */
	DLM_RS_MASTERS,		/* new masters chosen */
	DLM_RS_LOCKS_PENDING,	/* waiting for our resent locks to be taken */
	DLM_RS_LOCKS,		/* locks resent */
	DLM_RS_DONE,		/* LVBs recovered, locks granted */
	DLM_RS_FINISHED,	/* waiting for finish */
};

struct dlm_ls {
	struct dlm_list		ls_list;	/* core_lockspaces */
	struct dlm_core		*ls_core;
	void			*ls_ctx;
	uint32_t		ls_id;
	char			ls_name[DLM_LOCKSPACE_LEN + 1];
	uint32_t		*ls_members;	/* sorted */
	unsigned int		ls_nmembers;
	struct dlm_htab		ls_rsbtbl;
	struct dlm_htab		ls_lkbtbl;
	struct dlm_htab		ls_dirtbl;
	uint64_t		ls_ndirself;	/* rsbs that are their own
						   directory record
						   (RESF_DIR) */
	struct dlm_htab		ls_ownertbl;
	/* lone locks folded with their resources (solo.c): by key, by id */
	struct dlm_htab		ls_solotbl;
	struct dlm_htab		ls_soloids;
	struct dlm_list		ls_solo_toss;	/* tossed solos, oldest first */
	uint64_t		ls_nsolo_tossed;
	uint64_t		ls_folds_shared;	/* see dlm_ls_stats */
	uint64_t		ls_unfolds_msg;
	uint64_t		ls_unfolds_rec;
	uint64_t		ls_folds_kept_rec;
	uint64_t		ls_folds_remote;
	/* of ls_solotbl, those folded after a lookup (solo.c SOLO_REMOTE):
	 * their records are on other nodes */
	uint64_t		ls_nsolo_remote;
	uint32_t		ls_next_lkid;
	/* ls_next_lkid went past 2^32 - 1 (or a block reservation took it
	 * back): ids it hands out may be in use (resource.c dlm_lkid_new) */
	bool			ls_lkid_wrapped;
	struct dlm_idblock	*ls_idblocks;	/* reserved, sorted by ib_first */
	size_t			ls_nidblocks;
	size_t			ls_idblocks_cap;
	struct dlm_list		ls_toss;	/* unused rsbs, oldest first */
	struct dlm_list		ls_waiters;	/* lkbs waiting for a remote reply */
	struct dlm_list		ls_orphans;
	/* purged parents whose last child went, to force-unlock in a loop
	 * rather than by recursion up a deep tree (lock.c destroy_lkb) */
	struct dlm_lkb		*ls_childless;	/* linked by lkb_astarg */
	struct dlm_list		ls_unlock_lvbs;	/* struct dlm_unlock_lvb */
	bool			ls_childless_busy;
	uint64_t		ls_nwaiters;
	/* resources with a LOOKUP in flight (RESF_LOOKUP): they wait for a
	 * remote reply too (ls_stats ls_waiters counts both) */
	uint64_t		ls_nlookups;
	/* the audit (audit.c) */
	struct dlm_list		ls_blocked;	/* process copies queued at a remote
						   master, oldest wait first */
	uint64_t		ls_nblocked;
	uint64_t		ls_nstuck;	/* LKBF_STUCK locks */
	uint64_t		ls_audits_sent;
	uint32_t		ls_audit_gen;	/* ls_generation the clocks belong to */
	uint32_t		ls_audit_unwatched; /* remote waits left off
						       ls_blocked for want of
						       memory, at most
						       (retried at tick) */
	/* deadlock detection (deadlock.c) */
	struct dlm_list		ls_dlwait;	/* queued process copies, the one
						   probed longest ago first */
	uint32_t		ls_dl_unwatched; /* queued process copies left off
						    ls_dlwait for want of memory,
						    at most (retried at tick) */
	uint64_t		ls_deadlocks;	/* victims chosen here */
	uint64_t		ls_remasters;	/* resources moved away (remaster.c) */
	uint32_t		ls_last_victim;	/* the latest one's lock id */
	uint64_t		ls_probes_sent;
	uint64_t		ls_norphans;
	uint64_t		ls_msgs_sent;
	uint64_t		ls_msgs_received;
	uint64_t		ls_token;	/* token clock (token.c) */
	uint64_t		ls_clock_rejected;	/* token.c */
	bool			ls_token_warned;
	/* recovery; both changed only by recover.c set_state/set_rstep */
	enum dlm_ls_state	ls_state;
	enum dlm_rstep		ls_rstep;
	uint32_t		ls_event;	/* last event started */
	uint32_t		ls_generation;	/* last event finished */
	uint32_t		ls_rc_out;	/* recovery replies we wait for */
	bool			ls_rc_nothing;	/* no rsb of ours needs a new
						 * master (recover.c) */
	/* PARTIAL DIRECTORY (recover.c): the members of the event before
	 * ls_event, whether it finished and nothing started since
	 * (ls_rc_clean), our vote and the members' decision */
	uint32_t		*ls_prev_members;
	unsigned int		ls_nprev_members;
	uint32_t		ls_rc_departed[DLM_MAX_NODES];	/* of them,
						   not ours (a partial rebuild) */
	unsigned int		ls_rc_ndeparted;
	bool			ls_rc_clean;
	bool			ls_rc_vote;
	bool			ls_rc_partial;
	bool			ls_rm_seen;	/* a remastering message handled
						 * since the last full rebuild */
	int			ls_rc_error;	/* the last start failed in ls_rstep */
	bool			ls_redo_lookups; /* the next tick redoes the
						    held lookups: finish found
						    no memory, or a refused
						    request was parked with no
						    memory to note it in
						    ls_parked (lock.c
						    request_bounced) */
	/* lock.c request_bounced: the ids of the requests parked since the
	 * last tick (each on its resource's lookup queue), which the tick
	 * sends on: it costs what is parked, not what is held */
	uint32_t		*ls_parked;
	uint32_t		ls_nparked;
	uint32_t		ls_parked_cap;
	struct dlm_list		ls_held;	/* messages held while stopped */
	/* remaster.c: MIGRATE_LOCK records kept until their MIGRATE, and
	 * messages of a new master held until the old one's MOVED */
	struct dlm_list		ls_rm_records;
	struct dlm_list		ls_rm_held;
	/* resource.c: LOOKUPs the directory holds until a DIR_MOVE */
	struct dlm_list		ls_dir_held;
	struct dlm_list		ls_rc_deferred;	/* RC_LOOKUPs before our DIR barrier */
	struct dlm_list		ls_resend;	/* lkbs with an op to redo at finish */
	struct dlm_rsb		**ls_rec_rsbs;	/* resources the steps look at
						   (recover.c, NARROW STEPS:
						   all of them, or only those
						   the departure touched) */
	size_t			ls_rec_nrsbs;
	size_t			ls_rec_cap;	/* room in ls_rec_rsbs */
	/* NARROW STEPS (recover.c): every resource when step_start ran,
	 * kept until the directory step knows whether the rebuild is
	 * partial (NULL: ls_rec_rsbs holds them all) */
	struct dlm_rsb		**ls_rec_all;
	size_t			ls_rec_nall;
	bool			ls_rc_narrow;	/* ls_rec_rsbs is the touched
						 * share only */
	bool			ls_redo_all;	/* a request held for finish is
						 * on no list: finish looks at
						 * every resource */
	/* resource.c, "By node": one slot per node seen, found by a scan
	 * (a few members; a slot of a departed node with nothing left is
	 * taken again); ls_bynode_lost: a node found no slot, its master
	 * copies and records are on no list, and recovery walks them all */
	struct dlm_bynode	ls_bynode[DLM_MAX_NODES];
	unsigned int		ls_nbynode;
	unsigned int		ls_bynode_last;	/* the slot found last */
	bool			ls_bynode_lost;
	struct dlm_rcstat	ls_rcstat[DLM_MAX_NODES];
	unsigned int		ls_nrcstat;
	uint64_t		ls_ntossed;	/* rsbs on ls_toss */
	uint64_t		ls_toss_evicted; /* dropped early: max_tossed */
};

/* Freed objects of one size kept for reuse, linked through their first
 * pointer's bytes (resource.c). */
struct dlm_objcache {
	void			*oc_head;
	unsigned int		oc_count;
};

struct dlm_core {
	struct dlm_core_config	core_cfg;
	struct dlm_core_ops	core_ops;
	void			*core_ctx;
	uint64_t		core_now;
	uint64_t		core_ticks;	/* dlm_core_tick() calls (remaster.c) */
	enum dlm_core_fault	core_fault;
	int			(*core_alloc_fail)(void *arg);	/* tests only (alloc.c) */
	void			*core_alloc_arg;
	struct dlm_list		core_lockspaces;
	struct dlm_objcache	core_lkbs;	/* free lkbs */
	struct dlm_objcache	core_qwaits;	/* free wait records */
};

/* alloc.c: every allocation of a running engine, so a test can fail it */
void *dlm_malloc(struct dlm_core *core, size_t size);
void *dlm_calloc(struct dlm_core *core, size_t n, size_t size);
void *dlm_realloc(struct dlm_core *core, void *p, size_t size);

/* ls.c */
void dlm_core_log(struct dlm_core *core, enum dlm_log_level level,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define log_ls(ls, level, fmt, ...) \
	dlm_core_log((ls)->ls_core, level, "%s: " fmt, (ls)->ls_name, ##__VA_ARGS__)
bool dlm_ls_is_member(const struct dlm_ls *ls, uint32_t nodeid);
int dlm_ls_set_members(struct dlm_ls *ls, const uint32_t *members,
		       unsigned int n);
int dlm_dispatch_msg(struct dlm_ls *ls, const struct dlm_msg *m);
int dlm_held_add(struct dlm_ls *ls, struct dlm_list *q, uint32_t from,
		 const void *buf, size_t len);
void dlm_held_replay(struct dlm_ls *ls, struct dlm_list *q,
		     int (*handle)(struct dlm_ls *ls, const struct dlm_msg *m));
int dlm_held_replay_ls(struct dlm_ls *ls);
void dlm_held_drop(struct dlm_list *q, const struct dlm_ls *ls,
		   bool (*keep)(const struct dlm_ls *ls, uint32_t from));
uint32_t dlm_our_nodeid(const struct dlm_ls *ls);

/* resource.c: keys, rsbs, lkbs, directory, owners */
uint32_t dlm_dir_nodeid(const struct dlm_ls *ls, uint32_t hash);
uint32_t dlm_dir_nodeid_of(const uint32_t *members, unsigned int n,
			   uint32_t hash);
bool dlm_dir_before(uint32_t a, uint32_t b, uint32_t hash);
struct dlm_rsb *dlm_rsb_find(struct dlm_ls *ls, const unsigned char *key,
			     unsigned int keylen, uint32_t hash);
struct dlm_rsb *dlm_rsb_create(struct dlm_ls *ls, const unsigned char *key,
			       unsigned int keylen, uint32_t hash);
void dlm_rsb_hold(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_rsb_release(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_rsb_free(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_rsb_set_parent(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_rsb *parent);
struct dlm_rsb *dlm_rsb_root(struct dlm_rsb *r);
bool dlm_key_is_child(const unsigned char *pkey, unsigned int pkeylen,
		      const unsigned char *key, unsigned int keylen);
bool dlm_rsb_unused(const struct dlm_rsb *r);
void dlm_toss_expire(struct dlm_ls *ls, uint64_t now, bool all);
void dlm_toss_trim(struct dlm_ls *ls);

void *dlm_objcache_take(struct dlm_core *core, struct dlm_objcache *oc,
			size_t size);
void dlm_objcache_give(struct dlm_objcache *oc, void *p, unsigned int max);
void dlm_objcache_drain(struct dlm_objcache *oc);
struct dlm_lkb *dlm_lkb_create(struct dlm_ls *ls, uint32_t id);
struct dlm_idblock *dlm_idblock_find(const struct dlm_ls *ls, uint32_t id);
struct dlm_lkb *dlm_lkb_find(struct dlm_ls *ls, uint32_t id);
void dlm_lkb_free(struct dlm_ls *ls, struct dlm_lkb *lkb);
bool dlm_lkb_set_range(struct dlm_ls *ls, struct dlm_lkb *lkb, int which,
		       const struct dlm_range *range);
struct dlm_lkb_wait *dlm_lkb_qwait_get(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_lkb_qwait_put(struct dlm_ls *ls, struct dlm_lkb *lkb);

/* The directory: a record is a struct dlm_dirent or an rsb (RESF_DIR),
 * so it is read and changed only through these (resource.c). */
int dlm_dir_lookup(struct dlm_ls *ls, const unsigned char *key,
		   unsigned int keylen, uint32_t hash, uint32_t requester,
		   uint32_t *master);
void dlm_dir_remove(struct dlm_ls *ls, const unsigned char *key,
		    unsigned int keylen, uint32_t hash, uint32_t master);
int dlm_dir_register(struct dlm_ls *ls, const unsigned char *key,
		     unsigned int keylen, uint32_t hash, uint32_t master);
int dlm_dir_hold_lookup(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash, uint32_t requester);
void dlm_dir_held_drop(struct dlm_ls *ls);
void dlm_dir_held_each(struct dlm_ls *ls,
		       void (*fn)(void *arg, const unsigned char *key,
				  unsigned int keylen, uint32_t node),
		       void *arg);
int dlm_dir_held_verify(struct dlm_ls *ls, char *why, size_t whylen);
int dlm_dir_move(struct dlm_ls *ls, const unsigned char *key,
		 unsigned int keylen, uint32_t hash, uint32_t old,
		 uint32_t master, uint32_t *cur);
void dlm_dir_sweep(struct dlm_ls *ls);
void dlm_dir_drop_departed(struct dlm_ls *ls);

struct dlm_owner *dlm_owner_get(struct dlm_ls *ls, uint64_t id, bool create);
void dlm_owner_put(struct dlm_ls *ls, struct dlm_owner *ow);
bool dlm_lkid_in_use(struct dlm_ls *ls, uint32_t id);
/* A fresh lock id from ls_next_lkid: not 0, not in use, in no reserved
 * block. */
uint32_t dlm_lkid_new(struct dlm_ls *ls);
bool dlm_dir_has_record(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash);
void dlm_dir_self_adopt(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t event);

/* solo.c: lone locks folded with their resources */
struct dlm_solo *dlm_solo_find_id(struct dlm_ls *ls, uint32_t id);
struct dlm_solo *dlm_solo_find_key(struct dlm_ls *ls, const unsigned char *key,
				   unsigned int keylen, uint32_t hash);
int dlm_solo_unfold(struct dlm_ls *ls, struct dlm_solo *so);
int dlm_solo_unfold_id(struct dlm_ls *ls, uint32_t id);
int dlm_solo_unfold_key(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash);
int dlm_solo_unfold_all(struct dlm_ls *ls);
static inline size_t dlm_solo_count(const struct dlm_ls *ls)
{
	return ls->ls_soloids.ht_count;
}
static inline bool dlm_solo_is_tossed(const struct dlm_solo *so)
{
	return so->so_grmode == DLM_LOCK_IV;
}
static inline unsigned int dlm_solo_keylen(const struct dlm_solo *so)
{
	return so->so_keynode.hn_spare;
}
static inline uint32_t dlm_solo_lkid(const struct dlm_solo *so)
{
	return so->so_idnode.hn_hash;	/* 0: tossed */
}
void dlm_solo_toss_expire(struct dlm_ls *ls, uint64_t now, bool all);
void dlm_solo_toss_trim(struct dlm_ls *ls);
bool dlm_solo_may_fold(struct dlm_ls *ls, const struct dlm_lock_req *req,
		       const struct dlm_range *range);
bool dlm_solo_may_fold_name(struct dlm_ls *ls, uint32_t hash);
int dlm_solo_unfold_msg(struct dlm_ls *ls, const struct dlm_msg *m);
int dlm_solo_recover_start(struct dlm_ls *ls, const uint32_t *members,
			   unsigned int nmembers);
int dlm_solo_unfold_rc(struct dlm_ls *ls, const struct dlm_msg *m);
int dlm_solo_lock_counted(struct dlm_ls *ls, const struct dlm_lock_req *req,
			  struct dlm_solo *tossed, const unsigned char *key,
			  unsigned int keylen, uint32_t hash, uint32_t *lkid_out);
int dlm_solo_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
		  struct dlm_solo *tossed, const unsigned char *key,
		  unsigned int keylen, uint32_t hash, uint32_t *lkid_out);
int dlm_solo_unlock(struct dlm_ls *ls, struct dlm_solo *so,
		    const struct dlm_unlock_req *req);
int dlm_solo_convert(struct dlm_ls *ls, struct dlm_solo *so,
		     const struct dlm_lock_req *req, uint32_t *lkid_out);
int dlm_solo_refuse(struct dlm_ls *ls, struct dlm_solo *so,
		    const struct dlm_lock_req *req, uint32_t *lkid_out);
int dlm_solo_purge_owner(struct dlm_ls *ls, struct dlm_owner *ow);
void dlm_solo_drop_all(struct dlm_ls *ls);
void dlm_solo_walk(struct dlm_ls *ls,
		   void (*fn)(void *arg, const struct dlm_lock_info *li),
		   void *arg);
int dlm_solo_verify(struct dlm_ls *ls, char *why, size_t whylen);
void dlm_solo_fold_rsb(struct dlm_ls *ls, struct dlm_rsb *r);

/* Lock value blocks are allocated lazily: most locks never use one, and
 * 32 bytes in every lkb and rsb were a tenth of a held lock's memory.  A
 * NULL buffer reads as 32 zero bytes; storing zeros into it allocates
 * nothing.  dlm_lvb_store() fails only for want of memory, which an
 * operation's call rules out by taking room first (dlm_lvb_room()); where
 * it fails all the same, its callers treat the value as lost, the way the
 * DLM treats any value it cannot vouch for: flagged not valid
 * (VALNOTVALID), never invented. */
extern const char dlm_lvb_zero[DLM_LVB_LEN];
bool dlm_lvb_store(struct dlm_ls *ls, char **slot, const char *src);
/* Room for a value in *slot (zeros, as NULL means): false for want of
 * memory.  Taken when an operation with VALBLK is accepted (lock.c,
 * "Out of memory"), so that its value's later write or read, deep in the
 * grant logic where nothing can be refused, finds room. */
bool dlm_lvb_room(struct dlm_ls *ls, char **slot);

static inline const char *dlm_lkb_lvb(const struct dlm_lkb *lkb)
{
	return lkb->lkb_lvb ? lkb->lkb_lvb : dlm_lvb_zero;
}

static inline const char *dlm_res_lvb(const struct dlm_rsb *r)
{
	return r->res_lvb ? r->res_lvb : dlm_lvb_zero;
}

/* lock.c */
void dlm_send_msg(struct dlm_ls *ls, struct dlm_msg *m, uint32_t to);
int dlm_lock_receive(struct dlm_ls *ls, const struct dlm_msg *m);
void dlm_lock_drop_all(struct dlm_ls *ls);
void dlm_send_remove(struct dlm_ls *ls, struct dlm_rsb *r);

/* lock.c, for recover.c */
bool dlm_ls_running(const struct dlm_ls *ls);
void dlm_grant_pending(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_queue_lkb(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb,
		   int status);
void dlm_queue_lkb_tail(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_lkb *lkb, int status);
void dlm_lkb_count(struct dlm_rsb *r, struct dlm_lkb *lkb, int delta);
void dlm_destroy_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_resend_later(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_recover_waiter(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_recover_conversions(struct dlm_ls *ls, struct dlm_rsb *r);
int dlm_recover_deadlocks(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_redo_op(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_redo_lookups(struct dlm_ls *ls, struct dlm_rsb *r);
void dlm_redo_parked(struct dlm_ls *ls);
void dlm_recover_redo_lookups(struct dlm_ls *ls);
void dlm_lkb_to_msg(struct dlm_msg *m, int type, const struct dlm_lkb *lkb,
		    int status);
void dlm_grant_unfolded(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_lkb *lkb, int mode);

/* recover.c */
int dlm_recover_track_rsb(struct dlm_ls *ls, struct dlm_rsb *r);
int dlm_recover_track_room(struct dlm_ls *ls);
void dlm_recover_held_lookup(struct dlm_ls *ls, struct dlm_rsb *r);
struct dlm_bynode *dlm_bynode_find(struct dlm_ls *ls, uint32_t nodeid,
				   bool create);
void dlm_mstcpy_link(struct dlm_ls *ls, struct dlm_lkb *lkb);
int dlm_bynode_verify(struct dlm_ls *ls, char *why, size_t whylen);
int dlm_recover_receive(struct dlm_ls *ls, const struct dlm_msg *m,
			const void *buf, size_t len);
void dlm_recover_init_ls(struct dlm_ls *ls);
void dlm_recover_free_ls(struct dlm_ls *ls);

/* token.c: a token is (recovery event << DLM_TOKEN_GEN_SHIFT) plus a
 * count */
#define DLM_TOKEN_GEN_SHIFT	32
#define DLM_TOKEN_LOW_MASK	((UINT64_C(1) << DLM_TOKEN_GEN_SHIFT) - 1)
uint64_t dlm_token_mint(struct dlm_ls *ls);
struct dlm_msg;
int dlm_token_heard(struct dlm_ls *ls, const struct dlm_msg *m);
bool dlm_token_mode(int mode);
/* lkb's token if it holds (or last held, when not granted) a write mode */
uint64_t dlm_lkb_token(const struct dlm_lkb *lkb);

/* audit.c */
void dlm_audit_restart(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_audit_queued(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_audit_tick(struct dlm_ls *ls);
int dlm_audit_receive(struct dlm_ls *ls, const struct dlm_msg *m);

/* lock.c, for deadlock.c */
void dlm_for_each_blocker(struct dlm_ls *ls, const struct dlm_rsb *r,
			  const struct dlm_lkb *w,
			  void (*fn)(void *arg, struct dlm_lkb *h), void *arg);
int dlm_cancel_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb);

/* deadlock.c */
void dlm_deadlock_queued(struct dlm_ls *ls, struct dlm_lkb *lkb);
void dlm_deadlock_set_waiter(struct dlm_lkb *lkb,
			     const struct dlm_lock_req *req);
void dlm_deadlock_tick(struct dlm_ls *ls);
int dlm_deadlock_receive(struct dlm_ls *ls, const struct dlm_msg *m);
int dlm_deadlock_status(struct dlm_lkb *lkb, int status);
uint64_t dlm_deadlock_key(const struct dlm_lkb *lkb);

/* remaster.c */
void dlm_remaster_count(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t nodeid);
void dlm_remaster_consider(struct dlm_ls *ls, struct dlm_rsb *r);
int dlm_remaster_receive(struct dlm_ls *ls, const struct dlm_msg *m);
int dlm_remaster_recover(struct dlm_ls *ls);
int dlm_remaster_hold(struct dlm_ls *ls, const struct dlm_msg *m);
bool dlm_remaster_awaits(struct dlm_ls *ls, const struct dlm_rsb *r);
void dlm_remaster_free_ls(struct dlm_ls *ls);
void dlm_remaster_finish(struct dlm_ls *ls);
void dlm_remaster_unmatched(struct dlm_ls *ls);
void dlm_remaster_held_replies(struct dlm_ls *ls);
void dlm_remaster_rc_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
			   uint32_t from);
static inline bool dlm_remaster_on(const struct dlm_ls *ls)
{
	return ls->ls_core->core_cfg.remaster_ticks != 0;
}

/* dump.c */
/* The size of the text dlm_key_format() writes for any key: each byte
 * of a key may print as 4 ("\xHH"), plus the separators and a digest
 * mark's head, and the NUL. */
#define DLM_KEY_TEXT_LEN	(DLM_MAX_KEYLEN * 4 + 8)
void dlm_key_format(const unsigned char *key, unsigned int keylen,
		    char *out, size_t outlen);

/* r's lockspace is not kept in the rsb (8 B a resource): its caller
 * knows it */
static inline bool is_master(const struct dlm_ls *ls, const struct dlm_rsb *r)
{
	return r->res_nodeid == dlm_our_nodeid(ls);
}

static inline bool dlm_range_is_whole(const struct dlm_range *r)
{
	return r->ra_start == DLM_RANGE_MIN && r->ra_end == DLM_RANGE_MAX;
}

/* A lock's ranges: most locks cover the whole resource and keep no
 * range record.  dlm_lkb_set_range(ls, lkb, DLM_LKB_GR or DLM_LKB_RQ, range)
 * allocates the record when a range is not the whole resource; it fails
 * (false) only for want of memory, and never when the record is there
 * already (a range copied from the lock's own other range). */
#define DLM_LKB_GR	0
#define DLM_LKB_RQ	1
extern const struct dlm_range dlm_range_whole;

static inline const struct dlm_range *dlm_lkb_grrange(const struct dlm_lkb *lkb)
{
	return lkb->lkb_ranges ? &lkb->lkb_ranges[DLM_LKB_GR] : &dlm_range_whole;
}

static inline const struct dlm_range *dlm_lkb_rqrange(const struct dlm_lkb *lkb)
{
	return lkb->lkb_ranges ? &lkb->lkb_ranges[DLM_LKB_RQ] : &dlm_range_whole;
}

/* A lock on the grant or convert queue holds its granted mode. */
static inline bool holds_grmode(const struct dlm_lkb *lkb)
{
	return lkb->lkb_status == DLM_LKSTS_GRANTED ||
	       lkb->lkb_status == DLM_LKSTS_CONVERT;
}

static inline bool is_master_copy(const struct dlm_lkb *lkb)
{
	return lkb->lkb_flags & LKBF_MSTCPY;
}

#endif /* DLMD_CORE_INTERNAL_H */
