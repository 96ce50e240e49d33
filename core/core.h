/*
 * core/core.h - the dlmd lock engine: public interface.
 *
 * The engine is a state machine.  It owns no socket, no clock, no thread
 * and no file.  One engine instance (struct dlm_core) represents one node
 * of the cluster; it holds that node's lockspaces.  It is driven by four
 * kinds of input:
 *
 *   - local requests from clients on this node: dlm_core_lock(),
 *     dlm_core_unlock(), dlm_core_purge_owner(), dlm_core_purge_orphans();
 *   - messages from other nodes: dlm_core_receive();
 *   - control commands: lockspace create/release, membership;
 *   - the passage of time: dlm_core_tick(now).
 *
 * and answers through the callbacks of struct dlm_core_ops:
 *
 *   - send():  a message (already encoded, see core/wire.h) for node N;
 *   - ast():   a completion or blocking AST for a local client;
 *   - log():   one formatted log line.
 *
 * Callbacks are invoked synchronously from inside the engine's entry points
 * and MUST NOT call back into the engine; the caller queues what it gets
 * and acts after the entry point returns.  This keeps every entry point
 * atomic and lets a simulator deliver messages in any order it likes.
 *
 * Distribution.  A resource name hashes to a directory node among the
 * lockspace members; the directory records which node masters the
 * resource, and the first node that looks a name up becomes its master.
 * Requests on a resource mastered elsewhere travel as messages to the
 * master, which keeps a "master copy" of every lock; answers, grants and
 * blocking ASTs travel back.  See core/lock.c for the protocol in prose.
 *
 * Status codes follow the kernel convention: 0 or a negative errno.
 * Completion ASTs carry 0 (granted), -EAGAIN (NOQUEUE request refused),
 * -EDEADLK (conversion deadlock, conversion cancelled; or a deadlock
 * across resources and nodes whose victim this request was, see
 * core/deadlock.c), -DLM_EUNLOCK
 * (unlock done), -DLM_ECANCEL (cancel done), -EINVAL or -ENOMEM.
 * libdlm turns these into the positive values its API documents.
 */
#ifndef DLMD_CORE_H
#define DLMD_CORE_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------
 * Constants shared with libdlm (same numeric values as the established
 * libdlm / kernel headers).
 * --------------------------------------------------------------------- */

#define DLM_LOCK_IV	(-1)	/* invalid / none */
#define DLM_LOCK_NL	0	/* null */
#define DLM_LOCK_CR	1	/* concurrent read */
#define DLM_LOCK_CW	2	/* concurrent write */
#define DLM_LOCK_PR	3	/* protected read */
#define DLM_LOCK_PW	4	/* protected write */
#define DLM_LOCK_EX	5	/* exclusive */
#define DLM_NUM_MODES	6

#define DLM_LKF_NOQUEUE		0x00000001
#define DLM_LKF_CANCEL		0x00000002
#define DLM_LKF_CONVERT		0x00000004
#define DLM_LKF_VALBLK		0x00000008
#define DLM_LKF_QUECVT		0x00000010
#define DLM_LKF_IVVALBLK	0x00000020
#define DLM_LKF_CONVDEADLK	0x00000040
#define DLM_LKF_PERSISTENT	0x00000080
#define DLM_LKF_NODLCKWT	0x00000100
#define DLM_LKF_NODLCKBLK	0x00000200
#define DLM_LKF_EXPEDITE	0x00000400
#define DLM_LKF_NOQUEUEBAST	0x00000800
#define DLM_LKF_HEADQUE		0x00001000
#define DLM_LKF_NOORDER		0x00002000
#define DLM_LKF_ORPHAN		0x00004000
#define DLM_LKF_ALTPR		0x00008000
#define DLM_LKF_ALTCW		0x00010000
#define DLM_LKF_FORCEUNLOCK	0x00020000
#define DLM_LKF_TIMEOUT		0x00040000

#define DLM_SBF_DEMOTED		0x01
#define DLM_SBF_VALNOTVALID	0x02
#define DLM_SBF_ALTMODE		0x04

#define DLM_ECANCEL		0x10001
#define DLM_EUNLOCK		0x10002

#define DLM_LVB_LEN		32	/* bytes in a lock value block */
#define DLM_RESNAME_MAXLEN	64	/* bytes in one resource name */
#define DLM_LOCKSPACE_LEN	64	/* bytes in a lockspace name */
/* Sub-resources (parent locks) nest without limit.  Down to
 * DLM_KEY_PATH_DEPTH levels a resource's key is its whole path; deeper
 * ones are named by a digest of their parent's key (core/resource.c), so
 * a key stays short however deep the tree. */
#define DLM_KEY_PATH_DEPTH	4
#define DLM_KEY_DIGEST_LEN	32	/* BLAKE2b-256 of the parent's key */
#define DLM_KEY_DIGEST_MARK	0	/* first byte of a digest key */
#define DLM_MAX_KEYLEN		(DLM_KEY_PATH_DEPTH * (1 + DLM_RESNAME_MAXLEN))
#define DLM_MAX_NODES		128	/* members of one lockspace */

/* A byte range of a resource, inclusive at both ends. */
struct dlm_range {
	uint64_t ra_start;
	uint64_t ra_end;
};

#define DLM_RANGE_MIN	0ULL
#define DLM_RANGE_MAX	UINT64_MAX

struct dlm_core;
struct dlm_ls;

/* What ast() reports. */
enum dlm_ast_type {
	DLM_AST_COMP = 1,	/* completion AST */
	DLM_AST_BAST = 2,	/* blocking AST */
};

struct dlm_ast {
	enum dlm_ast_type	type;
	struct dlm_ls		*ls;
	void			*ls_ctx;	/* the lockspace's user context */
	uint32_t		lkid;
	uint64_t		owner;		/* the lock's owner */
	uint64_t		astarg;		/* the request's cookie */
	int			status;		/* COMP: 0 or negative code */
	uint32_t		sbflags;	/* COMP: DLM_SBF_* */
	int			grmode;		/* COMP: mode now granted, IV if none */
	int			bastmode;	/* BAST: mode the blocked request wants */
	const char		*lvb;		/* COMP with VALBLK: DLM_LVB_LEN bytes */
	uint64_t		token;		/* COMP granted CW, PW or EX: the
						   fencing token; else 0 */
};

/* Log levels, as syslog's. */
enum dlm_log_level {
	DLM_LOG_ERR = 3,
	DLM_LOG_WARNING = 4,
	DLM_LOG_NOTICE = 5,
	DLM_LOG_INFO = 6,
	DLM_LOG_DEBUG = 7,
};

struct dlm_core_ops {
	/* A message for node 'to'; buf is only valid during the call. */
	void (*send)(void *ctx, uint32_t to, const void *buf, size_t len);
	/* An AST for a local client; ast is only valid during the call. */
	void (*ast)(void *ctx, const struct dlm_ast *ast);
	/* One log line, without a trailing newline.  May be NULL. */
	void (*log)(void *ctx, enum dlm_log_level level, const char *line);
	/* Recovery for 'event' finished its last barrier on this node (every
	 * member has passed it too); call dlm_core_ls_finish().  May be NULL. */
	void (*recovery_done)(void *ctx, struct dlm_ls *ls, uint32_t event);
	/* Recovery for 'event' failed on this node with 'error' (a negative
	 * errno; -ENOMEM is the only cause today).  The lockspace stays
	 * stopped and will not report recovery_done for 'event'; the other
	 * members wait at the barrier of the step that failed.  Recovery
	 * runs again only under a newer event: the glue must have every
	 * member stop and start again (dlm_core_ls_start(E' > event)).  May
	 * be NULL; dlm_core_ls_recovery_error() tells the same later. */
	void (*recovery_failed)(void *ctx, struct dlm_ls *ls, uint32_t event,
				int error);
};

struct dlm_core_config {
	uint32_t	our_nodeid;	/* non-zero */
	uint32_t	toss_ms;	/* keep unused resources this long (default 10000) */
	/* The LVB sequence number of a new resource (default 0); every
	 * write adds one, wrapping.  Tests start it near the wrap. */
	uint32_t	lvbseq_start;
	uint32_t	audit_ms;	/* audit a lock that waits this long
					   (core/audit.c); 0: never */
	uint32_t	deadlock_ms;	/* look for a deadlock through a request
					   that waits this long, and again as
					   often (core/deadlock.c); 0: never */
	/* remastering (core/remaster.c): a resource stays at least this
	 * many dlm_core_tick() calls on a master before it moves; 0: never
	 * move a resource */
	uint32_t	remaster_ticks;
	/* operations per remastering window; 0: DLM_REMASTER_WINDOW (32) */
	uint32_t	remaster_window;
	/* non-zero: a resource that other nodes (or the master's own
	 * clients) lock too may move, their locks re-pointed at the new
	 * master (core/remaster.c, "Moving a resource that other nodes lock
	 * too"); 0: only one locked by the destination alone */
	uint32_t	remaster_shared;
	/* unused resources a lockspace keeps on its toss list at most; past
	 * it the oldest are dropped at once, as toss_ms would drop them
	 * later (resource.c, "Toss list"); 0: no bound */
	uint32_t	max_tossed;
	/* non-zero: a lone lock on a resource of its own, whose name this
	 * node directs (every name, when it is the lockspace's only member),
	 * is one record folded with its resource until anything but its
	 * unlock needs it as an lkb and an rsb (core/solo.c; about 120 B a
	 * lock at 1M instead of 360) */
	uint32_t	fold;
};

/* A fault a test can switch on in one engine instance, to prove that the
 * simulator's checker catches a broken rule.  Never set in production. */
enum dlm_core_fault {
	DLM_FAULT_NONE = 0,
	DLM_FAULT_COMPAT_PR_PW,		/* treat PR and PW as compatible */
	DLM_FAULT_SKIP_BAST,		/* never send blocking ASTs */
	DLM_FAULT_IGNORE_QUEUE,		/* grant new requests past queued ones */
	DLM_FAULT_LVB_NO_WRITE,		/* forget LVB writes on unlock */
	DLM_FAULT_RANGE_IGNORED,	/* treat all ranges as overlapping nothing */
	DLM_FAULT_SKIP_PURGE,		/* recovery keeps departed nodes' locks */
	DLM_FAULT_SKIP_RESEND,		/* recovery does not resend locks to new masters */
	DLM_FAULT_KEEP_DEAD_MASTER,	/* recovery keeps departed masters */
	DLM_FAULT_QUECVT_IGNORED,	/* an arriving conversion ignores QUECVT */
	DLM_FAULT_WAITQ_PASS,		/* a waiter is granted past an older blocked one */
	DLM_FAULT_LOSE_GRANT,		/* a master forgets some GRANT messages */
	DLM_FAULT_TOKEN_RESET,		/* fencing tokens: each node counts alone
					   from 0, ignoring the others and the
					   recovery event (core/token.c) */
	DLM_FAULT_RECOVERY_FAIL_ONCE,	/* the next recovery step fails (-ENOMEM),
					 * once: the glue's retry (no rule broken) */
	DLM_FAULT_DEADLK_NOOP,		/* deadlocks are found but never broken */
	DLM_FAULT_DEADLK_ANY_VICTIM,	/* probes ignore age: every member of a
					   cycle may cancel itself */
	DLM_FAULT_CHILD_LOCAL,		/* a sub-resource is mastered at the
					   requester, not at its parent's master */
	DLM_FAULT_REMASTER_NO_FREEZE,	/* a master that moved a resource away
					   keeps mastering it (core/remaster.c) */
	DLM_FAULT_REMASTER_ANY_OWNER,	/* a resource moves while other nodes
					   lock it too, their locks forgotten
					   (core/remaster.c, "Movable") */
	DLM_FAULT_REMASTER_SKIP_REPOINT, /* a new master sends no REPOINT for
					   the first other node's lock it
					   installs (remaster_shared) */
	DLM_FAULT_REMASTER_EARLY_GRANT,	/* a new master installs each lock
					   record as it arrives and grants at
					   once, before MIGRATE (remaster_shared) */
	DLM_FAULT_PARTIAL_KEEP_DEAD,	/* a partial directory rebuild keeps
					   the records naming a departed master
					   (core/recover.c, PARTIAL DIRECTORY) */
	DLM_FAULT_PARTIAL_KEEP_ORPHANS,	/* ... drops no record of a lookup
					   answered after the stop, does no
					   REMOVE held since the stop */
	DLM_FAULT_REMASTER_DIR_ANSWER,	/* the directory answers the lookup of
					   the node its record names from the
					   record, not after the DIR_MOVE */
	DLM_FAULT_REMASTER_DIR_KEEP_HELD, /* a DIR_MOVE does not answer the
					   lookups the directory holds for it */
	DLM_FAULT_REMASTER_DIR_UNACKED,	/* a new master moves a resource on
					   before the directory node took its
					   DIR_MOVE */
	DLM_FAULT_REFUSED_WRITE,	/* a master that refuses an unlock
					   -ENOMEM writes its value all the
					   same, where the resource has room */
	DLM_FAULT_NARROW_MISS_MOVED,	/* a narrow recovery leaves off its
					   list the roots whose directory node
					   departed: a partial rebuild
					   registers none of them
					   (core/recover.c, NARROW STEPS) */
	DLM_FAULT_BAST_ONCE,		/* a grant keeps the lock's record of
					   the basts sent (lkb_highbast): a
					   mode is sent once per lock, not
					   once per grant */
	DLM_FAULT_FOLD_MSG_SKIP,	/* a lock message naming a resource
					   folded with its lone lock (a
					   LOOKUP, a REQUEST...) does not
					   unfold it first (core/solo.c,
					   "Shared lockspaces") */
	DLM_FAULT_RECFOLD_KEEP_MOVED,	/* a recovery start keeps folded the
					   lone locks whose name's directory
					   moves to a node that joins
					   (core/solo.c, "Recovery") */
	DLM_FAULT_FOLD_REMOTE_NO_REMOVE,	/* a lone lock's resource
					   tossed folded on a name another
					   node directs expires without its
					   REMOVE (core/solo.c, "Names other
					   nodes direct") */
	DLM_FAULT_FOLD_REMOTE_NO_REGISTER,	/* a full directory rebuild
					   registers no lone lock folded on
					   a name another node directs
					   (core/recover.c step_dir) */
};

/* ---------------------------------------------------------------------
 * Engine lifecycle and time
 * --------------------------------------------------------------------- */

/* Returns NULL on allocation failure or a zero node id. */
struct dlm_core *dlm_core_new(const struct dlm_core_config *cfg,
			      const struct dlm_core_ops *ops, void *ctx);
/* Frees every lockspace without emitting anything. */
void dlm_core_free(struct dlm_core *core);
uint32_t dlm_core_nodeid(const struct dlm_core *core);
/* The current time in milliseconds (monotonic, caller's clock).  Drops
 * resources that have been unused for toss_ms. */
void dlm_core_tick(struct dlm_core *core, uint64_t now_ms);
void dlm_core_set_fault(struct dlm_core *core, enum dlm_core_fault fault);
/* Tests only, never the daemon: fail(arg) is asked before each allocation
 * this engine makes; non-zero makes it fail as if memory ran out (see
 * core/alloc.c).  fail NULL (the default): no allocation fails on purpose. */
void dlm_core_set_alloc_hook(struct dlm_core *core, int (*fail)(void *arg),
			     void *arg);

/* ---------------------------------------------------------------------
 * Lockspaces
 * --------------------------------------------------------------------- */

/* Create the local instance of lockspace 'name' (1..DLM_LOCKSPACE_LEN
 * bytes, NUL-terminated).  'members' are the node ids taking part (this
 * node included); every member must create the lockspace with the same
 * member set.  It runs at once, as if event 0 with those members had
 * finished (an empty directory, the same everywhere): so several
 * members are for a lockspace they all create at once; a node joining
 * one that runs elsewhere creates it with itself alone and is let in by
 * a recovery (core/recover.c, PARTIAL DIRECTORY: else it would take part
 * as a member that kept its directory records).  -EEXIST if it exists,
 * -EINVAL for a bad name or members. */
int dlm_core_ls_create(struct dlm_core *core, const char *name,
		       const uint32_t *members, unsigned int nmembers,
		       void *ls_ctx, struct dlm_ls **out);
/* Release the local instance.  -EBUSY if locks remain and !force; with
 * force, every local lock is dropped (no ASTs). */
int dlm_core_ls_release(struct dlm_ls *ls, int force);
struct dlm_ls *dlm_core_ls_find(struct dlm_core *core, const char *name);

/* ---------------------------------------------------------------------
 * Recovery control (see core/recover.c for the steps and barriers)
 *
 * The cluster glue drives each lockspace as the seeds' dlm_controld did:
 * on a membership change it stops the lockspace on every member, agrees
 * on the new member list and a cluster-wide event number E (increasing),
 * and starts recovery for E on every member.  The engines then run the
 * recovery steps among themselves, with a barrier after each, and each
 * reports recovery_done(E); the glue then calls finish(E).  A stop (or a
 * start of a newer event) during recovery aborts it; the next start runs
 * it again from the beginning.
 * --------------------------------------------------------------------- */

enum dlm_ls_state {
	DLM_LS_RUNNING = 0,	/* locking enabled */
	DLM_LS_STOPPED,		/* new work held, incoming messages held */
	DLM_LS_RECOVERING,	/* recovery for an event in progress */
	DLM_LS_RECOVERED,	/* recovery done, waiting for finish */
};

/* Suspend locking: local requests are accepted but held, incoming lock
 * messages are held, until finish.  Idempotent. */
int dlm_core_ls_stop(struct dlm_ls *ls);
/* Set the members for event E and start recovery.  -EINVAL for a bad
 * member list or an event not newer than the last one started; -EBUSY if
 * the lockspace was not stopped. */
int dlm_core_ls_start(struct dlm_ls *ls, uint32_t event,
		      const uint32_t *members, unsigned int nmembers);
/* Resume locking after recovery E: process held messages and requests.
 * -EBUSY if recovery E has not reached its end here. */
int dlm_core_ls_finish(struct dlm_ls *ls, uint32_t event);
enum dlm_ls_state dlm_core_ls_state(const struct dlm_ls *ls, uint32_t *event,
				    const char **step);
const char *dlm_ls_state_str(enum dlm_ls_state state);
/* 0, or the error with which the recovery last started failed here (see
 * recovery_failed); *step (may be NULL) names the step that failed. */
int dlm_core_ls_recovery_error(const struct dlm_ls *ls, const char **step);
struct dlm_ls *dlm_core_ls_find_id(struct dlm_core *core, uint32_t lsid);
uint32_t dlm_core_ls_id(const struct dlm_ls *ls);
const char *dlm_core_ls_name(const struct dlm_ls *ls);
/* The global lockspace id: a hash of the name, the same on every node. */
uint32_t dlm_core_ls_name_to_id(const char *name);

/* Counters for tests, benchmarks and dlmctl. */
struct dlm_ls_stats {
	uint64_t	ls_resources;	/* resources in the table (incl. tossed) */
	uint64_t	ls_locks;	/* lock blocks (process and master copies) */
	uint64_t	ls_dir_entries;	/* directory records kept here */
	uint64_t	ls_waiters;	/* operations waiting for a remote reply,
					   and lookups in flight */
	uint64_t	ls_orphans;	/* orphaned persistent locks */
	uint64_t	ls_msgs_sent;
	uint64_t	ls_msgs_received;
	uint64_t	ls_stuck;	/* locks the audit found cannot progress */
	uint64_t	ls_audits_sent;
	uint64_t	ls_deadlocks;	/* deadlock victims chosen on this node */
	uint32_t	ls_last_victim;	/* lock id of the latest one (0: none) */
	uint64_t	ls_probes_sent;	/* deadlock probes sent (core/deadlock.c) */
	uint64_t	ls_clock_rejected;	/* messages dropped: their token
						   clock was implausibly far
						   ahead, or below the lock
						   token they carry
						   (core/token.c) */
	uint64_t	ls_remasters;	/* resources this node mastered and
					   moved to another node
					   (core/remaster.c) */
	uint64_t	ls_tossed;	/* unused resources kept (toss list) */
	uint64_t	ls_toss_evicted;	/* unused resources dropped before
						   toss_ms because max_tossed
						   were kept */
	uint64_t	ls_folded;	/* of ls_locks, lone locks folded with
					   their resources (solo.c): on the
					   names this node directs */
	uint64_t	ls_folds_shared;	/* lone locks folded while
						   the lockspace had other
						   members (solo.c) */
	uint64_t	ls_unfolds_msg;	/* lone locks (held or tossed)
					   unfolded for a lock message
					   naming their resource */
	uint64_t	ls_unfolds_rec;	/* lone locks (held or tossed)
					   unfolded by recovery: at a start
					   their directory moves, or a
					   recovery message names them */
	uint64_t	ls_folds_kept_rec;	/* lone locks (held) a
						   recovery start left
						   folded, summed over the
						   starts (solo.c) */
	uint64_t	ls_folds_remote;	/* lone locks folded on names
						   other members direct, once
						   their lookup made this node
						   master (solo.c) */
};
void dlm_core_ls_stats(const struct dlm_ls *ls, struct dlm_ls_stats *st);

/* ---------------------------------------------------------------------
 * Locking
 * --------------------------------------------------------------------- */

#define DLM_WAITER_XID		0x1	/* dlm_lock_req.waiter is an xid */
#define DLM_WAITER_ASYNC	0x2	/* the requester does not block on it */

struct dlm_lock_req {
	int			mode;		/* DLM_LOCK_NL..EX */
	uint32_t		flags;		/* DLM_LKF_* */
	uint32_t		lkid;		/* with DLM_LKF_CONVERT: the lock */
	const void		*name;		/* new locks: 1..DLM_RESNAME_MAXLEN bytes */
	unsigned int		namelen;
	uint32_t		parent;		/* new locks: parent lock id or 0 */
	uint32_t		newid;		/* new locks: the id to give it, from a
						 * block 'owner' reserved with
						 * dlm_core_ids_reserve(); 0: the
						 * engine picks one */
	const struct dlm_range	*range;		/* NULL: the whole resource */
	const char		*lvb;		/* VALBLK: DLM_LVB_LEN bytes to write */
	uint64_t		owner;		/* the client (non-zero) */
	uint64_t		astarg;		/* cookie handed back in ASTs */
	int			want_bast;	/* deliver blocking ASTs */
	/* Deadlock detection (deadlock.c): who within the owner makes the
	 * request.  waiter: a thread id, or with DLM_WAITER_XID the
	 * application's transaction id; 0: no such information, the owner
	 * as a whole.  DLM_WAITER_ASYNC: nobody blocks on the request (an
	 * async request without xid), so it never makes its waiter wait. */
	uint64_t		waiter;
	uint32_t		waiter_flags;	/* DLM_WAITER_* */
	/* With DLM_LKF_ORPHAN: may the requester adopt an orphan whose
	 * original owner was 'orphan_owner'?  NULL: any orphan.  The caller
	 * decides (the daemon compares users); the engine only asks. */
	int			(*may_adopt)(void *arg, uint64_t orphan_owner);
	void			*may_adopt_arg;
};

/* The key of resource 'name' (1..DLM_RESNAME_MAXLEN bytes) under the
 * resource whose key is 'pkey' (NULL, 0: a root resource), written to
 * 'out' (DLM_MAX_KEYLEN bytes).  Its cost does not depend on the depth.
 * Returns the key's length, or -EINVAL for a bad name or parent key.
 * The engine names resources with it; the simulator too. */
int dlm_key_child(const unsigned char *pkey, unsigned int pkeylen,
		  const void *name, unsigned int namelen, unsigned char *out);

/* Submit a new lock request or a conversion.  Returns 0 when submitted
 * (the outcome arrives as a completion AST, which may be delivered before
 * this returns) or a negative errno when refused outright: -EINVAL (bad
 * mode, flags, name or range; a parent that is not granted; a resource
 * QUECVT or IVVALBLK on a new request;
 * EXPEDITE other than on a new NL request; ALTPR with ALTCW; QUECVT on a
 * conversion that is not to a stronger mode; PERSISTENT with a parent),
 * -ENOENT (unknown lock or parent id, or no orphan to adopt), -EBUSY (an
 * operation on the lock is in progress), -EPERM (lock or parent owned by
 * another client; with ORPHAN: orphans match but may_adopt refused every
 * one), -EAGAIN (with ORPHAN: an orphan of that name the requester may
 * take is granted in another mode only), -ENOMEM.  The lock id is stored
 * in *lkid_out as soon as the request is accepted.  An adoption (ORPHAN)
 * is complete when this returns 0: no completion AST follows, as in the
 * kernel (a bast the orphan missed is repeated to the adopter).
 *
 * Flags apply to the request that carries them, as in the kernel: a
 * lock is PERSISTENT (orphaned rather than unlocked when its owner is
 * purged) if its latest request said so.  An alternate mode (ALTPR,
 * ALTCW) may be weaker than the mode held before a conversion; the LVB
 * rules then treat the grant as a down-conversion. */
int dlm_core_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
		  uint32_t *lkid_out);

/* Lock ids chosen by the client (issue 14).  A client that wants to know
 * a new lock's id before its request reaches the engine (libdlm's async
 * dlm_ls_lock returns it at once) takes ids from a block of DLM_IDS_BLOCK
 * consecutive ids reserved for it: dlm_core_ids_reserve() finds a block
 * in which no id is in use, past the ids handed out so far, and the
 * engine picks no id of a reserved block for anyone else; a new lock
 * request with req->newid set takes that id, which must lie in a block
 * reserved by the same owner and be unused (else -EINVAL, -EPERM or
 * -EEXIST).  So ids stay unique in the lockspace and are not reused while
 * live.  dlm_core_ids_release() gives a block back (its ids in use stay
 * with their locks); a released block is not handed out again before the
 * id counter wraps, and then only if none of its ids is in use.  Returns
 * 0 and the block's first id, -ENOMEM, or -ENOSPC (no free block after
 * DLM_IDS_TRIES). */
#define DLM_IDS_SHIFT		10
#define DLM_IDS_BLOCK		(1u << DLM_IDS_SHIFT)
#define DLM_IDS_TRIES		64
int dlm_core_ids_reserve(struct dlm_ls *ls, uint64_t owner, uint32_t *first);
void dlm_core_ids_release(struct dlm_ls *ls, uint32_t first);

struct dlm_unlock_req {
	uint32_t		lkid;
	uint32_t		flags;		/* CANCEL, FORCEUNLOCK, VALBLK, IVVALBLK */
	const char		*lvb;		/* VALBLK: DLM_LVB_LEN bytes to write */
	uint64_t		owner;
	uint64_t		astarg;
};

/* Unlock or cancel.  0 when submitted (completion AST -DLM_EUNLOCK or
 * -DLM_ECANCEL follows; a cancel that finds nothing left to cancel ends
 * with the lock's own completion instead); -ENOENT unknown lock, -EBUSY
 * lock not granted / operation in progress / has children, -EPERM owned
 * by another client, -EINVAL bad flags. */
int dlm_core_unlock(struct dlm_ls *ls, const struct dlm_unlock_req *req);

/* A client went away: force-unlock all its locks (children before
 * parents), except PERSISTENT ones, which become orphans.  No ASTs are
 * delivered for the purged locks.  Returns the number of locks affected. */
int dlm_core_purge_owner(struct dlm_ls *ls, uint64_t owner);

/* The same, but PERSISTENT locks are unlocked too (dlm_ls_purge with the
 * caller's own pid, as the kernel does it). */
int dlm_core_purge_owner_locks(struct dlm_ls *ls, uint64_t owner);

/* Unlock orphans whose original owner was 'owner' (0: all orphans) on
 * node 'nodeid' (0 or ours: this node; another member: a message asks
 * it).  Returns the number of local orphans purged, or -EINVAL. */
int dlm_core_purge_orphans(struct dlm_ls *ls, uint32_t nodeid, uint64_t owner);

/* The same for the orphans of every owner whose id has 'group' in its
 * high 32 bits (the daemon puts a client's pid there, so this is
 * dlm_ls_purge(nodeid, pid) on any member).  'group' 0 matches none. */
int dlm_core_purge_orphan_group(struct dlm_ls *ls, uint32_t nodeid,
				uint32_t group);

/* Feed a message received from node 'from'.  Returns 0, or a negative
 * errno after logging why the message was rejected (malformed, unknown
 * lockspace, unknown lock, sender not a member).  A request or conversion
 * that finds no memory here is answered -ENOMEM (the operation fails at
 * its node) and returns 0: the message was dealt with; so is a recovery
 * message that fails the recovery for want of memory (recovery_failed).
 * -ENOMEM: the message could not even be kept (a lockspace that does not
 * run holds what arrives) and was not taken, nothing changed: the caller
 * must offer it again later, before any later message from that node. */
int dlm_core_receive(struct dlm_core *core, uint32_t from,
		     const void *buf, size_t len);

/* ---------------------------------------------------------------------
 * Inspection
 * --------------------------------------------------------------------- */

/* The debug dump of a lockspace: a malloc'd NUL-terminated text listing
 * every resource in name order with its master, directory node, LVB and
 * queues.  Returns 0 or -ENOMEM.  Format: see core/dump.c. */
int dlm_core_ls_dump(struct dlm_ls *ls, char **text);

/* Walk every lock block of the lockspace (process and master copies);
 * for tests and checkers.  'fn' must not modify the engine. */
struct dlm_lock_info {
	uint32_t	lkid;
	uint32_t	remid;
	uint32_t	nodeid;		/* node that owns the lock */
	int		is_master_copy;
	int		is_master;	/* this node masters the resource */
	int		status;		/* DLM_LKSTS_* below */
	int		grmode;
	int		rqmode;
	struct dlm_range grrange;
	struct dlm_range rqrange;
	uint64_t	owner;
	int		orphan;
	uint32_t	exflags;	/* DLM_LKF_* of the lock's latest request */
	const unsigned char *key;	/* resource key (see core/resource.c) */
	unsigned int	keylen;
	uint64_t	token;		/* fencing token while granted CW, PW or
					   EX (core/token.c); else 0 */
	/* deadlock detection (core/deadlock.c), queued process copies: */
	uint64_t	dl_key;		/* its age: larger is younger; 0 exempt */
	uint64_t	dl_probe_ms;	/* its latest probe went out then */
	int		dl_victim;	/* its deadlock cancel is in flight */
};
#define DLM_LKSTS_NONE		0	/* not on a queue (request in flight) */
#define DLM_LKSTS_WAITING	1
#define DLM_LKSTS_GRANTED	2
#define DLM_LKSTS_CONVERT	3
void dlm_core_ls_walk(struct dlm_ls *ls,
		      void (*fn)(void *arg, const struct dlm_lock_info *li),
		      void *arg);

/* The fencing token of lock 'lkid' of client 'owner' (core/token.c):
 * 0 and *token, or -ENOENT (no such lock, or it does not hold CW, PW or
 * EX now: not granted, converting from a mode that does not write, or
 * an orphan) or -EPERM (another client's lock). */
int dlm_core_lock_token(struct dlm_ls *ls, uint32_t lkid, uint64_t owner,
			uint64_t *token);

/* Check the lockspace's internal invariants (queue membership, per-mode
 * counts, the lookups the directory holds for a DIR_MOVE).  0, or
 * -EUCLEAN with a description in 'why'.  For tests. */
int dlm_core_ls_verify(struct dlm_ls *ls, char *why, size_t whylen);

const char *dlm_mode_str(int mode);
int dlm_modes_compat(int mode1, int mode2);

#endif /* DLMD_CORE_H */
