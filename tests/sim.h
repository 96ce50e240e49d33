/*
 * tests/sim.h - the deterministic simulator's shared types.
 *
 * The simulator (tests/dlm-sim.c) runs several engine instances, one per
 * simulated node, in one process.  The pieces:
 *
 *   sim-net.c    the network: one FIFO queue per (from, to) link, every
 *                message stamped with a random delivery time that never
 *                overtakes an earlier message on the same link; a
 *                pair's connection that drops and comes back
 *                (--link-drops: dlm-sim.c, LINK DROPS) only pauses it;
 *   sim-model.c  the clients' view of their locks: what each client may
 *                rely on, what it is waiting for, the LVB every grant must
 *                carry; it consumes the engines' ASTs and checks them;
 *   sim-check.c  the engine-level checks, made by walking every engine,
 *                and the model held against those walks;
 *   sim-trace.c  the ring of recent events printed when a check fails;
 *   dlm-sim.c    the command line, the random schedule and the phases
 *                (schedule, quiesce, drain).
 *
 * Everything lives in one struct sim per seed: no globals, so that a run
 * is a pure function of its seed and options.  The output never contains
 * addresses or wall-clock times, so a seed replays byte for byte.
 *
 *   sim-faults.c node faults (--faults): node death and join, the
 *                daemon's death alone (--daemon-deaths) and network
 *                splits (--partitions), both fenced before recovery, and
 *                the cluster glue's part in recovery (stop, start,
 *                finish), plus the checks made when a recovery has
 *                finished.
 *
 * Node faults are off unless --faults is given; without it a seed runs
 * exactly as it always did (the same random draws, the same output).
 */
#ifndef DLMD_TESTS_SIM_H
#define DLMD_TESTS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "core/wire.h"

/* --nodes up to SIM_MAX_NODES (the message counts of issue 18 at 64);
 * a node count the seed picks, and every run with --faults (whose node
 * sets are 32-bit masks), stays at or below SIM_FAULT_MAX_NODES. */
#define SIM_MAX_NODES		64
#define SIM_FAULT_MAX_NODES	7
#define SIM_MAX_LS		2
#define SIM_MAX_CLIENTS		4	/* per node */
#define SIM_MAX_LOCKS		6	/* per client, in the schedule phase */
#define SIM_NROOT		5	/* root resource names */
#define SIM_NCHILD		3	/* sub-resource names under each resource */
#define SIM_RANGE_SPACE		64	/* ranges are drawn from 0..63 */
#define SIM_KEY_MAX		DLM_MAX_KEYLEN
#define SIM_DEPTH		4	/* default deepest resource (--depth) */
#define SIM_DEPTH_MAX		16
#define SIM_RES_MAX		512	/* interned resources per seed */
#define SIM_RES_HASH		1024	/* > 2 * SIM_RES_MAX, a power of two */
#define SIM_LOCK_HASH		1024	/* buckets of the lock index */
#define SIM_LVB_HIST		16	/* LVB writes remembered per resource */
#define SIM_TRACE_LEN		200	/* events kept for a failure report */
#define SIM_TRACE_TEXT		200	/* bytes per event line */

/* ------------------------------------------------------------------ PRNG */

/* xorshift64*, seeded through splitmix64 so that seeds 1, 2, 3... give
 * unrelated streams. */
struct sim_rng {
	uint64_t rng_s;
};

static inline void rng_seed(struct sim_rng *r, uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	r->rng_s = z ? z : 0x2545f4914f6cdd1dULL;
}

static inline uint64_t rng_next(struct sim_rng *r)
{
	uint64_t x = r->rng_s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->rng_s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform in 0..n-1 (n > 0). */
static inline uint32_t rng_below(struct sim_rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static inline bool rng_pct(struct sim_rng *r, unsigned int percent)
{
	return rng_below(r, 100) < percent;
}

/* --------------------------------------------------------------- network */

struct sim_msg {
	struct sim_msg	*m_next;
	uint64_t	m_due;		/* virtual ms at which it may be delivered */
	uint32_t	m_event;	/* the sender's membership event when sent */
	uint32_t	m_from;
	uint32_t	m_to;
	size_t		m_len;
	unsigned char	m_data[];
};

struct sim_link {
	struct sim_msg	*l_head;
	struct sim_msg	*l_tail;
	uint64_t	l_last_due;	/* FIFO: no message is due before this */
	uint64_t	l_sent;		/* messages queued on the link, ever */
	uint64_t	l_delivered;	/* messages taken off it, ever */
	uint64_t	l_down_until;	/* --link-drops: its connection is down,
					   nothing arrives before this */
};

/* --fault link-dup / link-lose: what lowcomms forbids, done at a link
 * drop (sim-net.c net_link_drop) so that the checks must catch it. */
enum sim_link_fault {
	LINK_FAULT_NONE = 0,
	LINK_FAULT_DUP,		/* a frame in flight is delivered twice */
	LINK_FAULT_LOSE,	/* a frame in flight is never delivered */
};

struct sim_net {
	unsigned int	n_nodes;
	uint32_t	n_max_delay;	/* ms */
	uint64_t	n_inflight;
	uint32_t	n_cut;		/* a partition: these nodes (bit id - 1) ... */
	uint64_t	n_heal_at;	/* ... hear nothing from the others before this */
	uint32_t	n_lag;		/* the next message sent is this much later
					   (ms, --dir-lag), and its link behind it */
	uint64_t	n_sent;
	uint64_t	n_delivered;
	uint64_t	n_link_held;	/* --link-drops: messages a drop held */
	struct sim_link	n_link[SIM_MAX_NODES][SIM_MAX_NODES];	/* [from-1][to-1] */
};

void net_init(struct sim_net *net, unsigned int nnodes, uint32_t max_delay);
int net_send(struct sim_net *net, struct sim_rng *rng, uint64_t now,
	     uint32_t from, uint32_t to, const void *buf, size_t len, uint32_t event);
struct sim_msg *net_pick(struct sim_net *net, struct sim_rng *rng, uint64_t now);
uint64_t net_next_due(const struct sim_net *net);
void net_requeue(struct sim_net *net, struct sim_msg *m, uint64_t due);
void net_drop_node(struct sim_net *net, uint32_t node);
void net_cut(struct sim_net *net, uint32_t cut, uint64_t heal_at);
void net_link_drop(struct sim_net *net, struct sim_rng *rng, uint32_t a,
		   uint32_t b, uint64_t up_at, bool one_way,
		   enum sim_link_fault broken);
void net_free(struct sim_net *net);

/* ----------------------------------------------------------------- model */

/* LVB knowledge per resource (see sim-model.c). */
enum sim_lvb_state {
	LVB_VALID = 0,		/* the value is exactly r_lvb */
	LVB_INVALID,		/* IVVALBLK: grants must say VALNOTVALID */
	LVB_UNKNOWN,		/* a writer was purged or forced out: no check */
	LVB_MAYBE_RESET,	/* unused for toss_ms: maybe freed (zero, valid),
				 * maybe still the previous entry's value */
	LVB_VALID_OR_INVALID,	/* a node died (the master, or a PW/EX holder):
				 * exactly h_value, or flagged VALNOTVALID */
};

struct sim_lvb_hist {
	uint8_t		h_state;
	uint8_t		h_prev_state;	/* LVB_MAYBE_RESET: what it was before */
	uint64_t	h_value;
};

struct sim_res {
	int		r_ls;
	int		r_parent;		/* -1: root */
	int		r_depth;		/* 1: root */
	int		r_child[SIM_NCHILD];	/* interned lazily, -1 */
	uint16_t	r_keylen;
	unsigned char	r_key[SIM_KEY_MAX];
	/* the LVB model: the latest write by issue time */
	uint32_t	r_nwrites;
	uint32_t	r_nloosened;	/* lvb_loosen/lvb_maybe_reset calls */
	struct sim_lvb_hist r_hist[SIM_LVB_HIST];	/* [write % SIM_LVB_HIST] */
	uint64_t	r_empty_since;	/* no lock at any master since; UINT64_MAX: busy */
	/* fencing tokens seen in grants: [whole range][mode class], the
	 * class 0 for CW, 1 for PW and EX (see sim-model.c check_token) */
	uint64_t	r_token_max[2][2];
	/* scratch for the checkers */
	int		r_head;
	uint32_t	r_mark;
};

enum sim_op {
	OP_NONE = 0,
	OP_REQUEST,	/* a new lock request is pending */
	OP_CONVERT,	/* a conversion is pending */
	OP_UNLOCK,	/* an unlock (or force unlock of an idle lock) is pending */
};

struct sim_lock {
	struct sim_lock	*l_hnext;	/* lock index chain */
	struct sim_lock	*l_anext;	/* every lock in the model: sim->locks */
	struct sim_lock	**l_aprevp;
	uint64_t	l_seq;		/* creation order, for stable traces */
	int		l_node;		/* node index 0.. */
	int		l_ls;
	uint32_t	l_lkid;
	int		l_client;	/* -1: orphan */
	uint64_t	l_owner;
	int		l_res;
	struct sim_lock	*l_parent;
	unsigned int	l_nchildren;
	bool		l_ranged;
	struct dlm_range l_range;
	bool		l_want_bast;
	bool		l_persistent;
	bool		l_ever_valblk;	/* some request of this lock had VALBLK */
	bool		l_orphan;
	bool		l_orphan_unsure; /* orphaned with an operation in flight */
	bool		l_purge_asked;	/* a remote orphan purge was sent */
	bool		l_adopted;	/* taken over from an orphan */
	bool		l_leaving;	/* let go without an AST to come (a
					 * crash, an orphan purge): the engine
					 * still has it until its unlock is done */
	int		l_gmode;	/* granted mode as the client knows it; IV: none */
	uint64_t	l_token;	/* fencing token of its latest write grant */
	enum sim_op	l_op;
	int		l_op_mode;	/* requested mode */
	uint32_t	l_op_flags;
	uint64_t	l_op_astarg;
	uint64_t	l_op_nomem;	/* --alloc-faults: allocations failed
					   before its operation began */
	bool		l_op_adopt;	/* the pending request adopts an orphan */
	bool		l_cancel;	/* a cancel is pending */
	bool		l_cancel_unresolved; /* cancel found nothing; its reply may be in flight */
	bool		l_force;	/* a FORCEUNLOCK is pending on top of l_op */
	uint32_t	l_req_flags;	/* flags of the latest request or conversion */
	uint32_t	l_lvb_since;	/* r_nwrites when the request was issued */
	uint32_t	l_wrote;	/* r_nwrites of the write its pending
					 * conversion or unlock recorded, 0: none */
	uint32_t	l_wrote_loosened; /* r_nloosened then */
	unsigned int	l_bast_mask;	/* modes of blocking ASTs not yet acted on */
	unsigned int	l_react_mask;	/* l_bast_mask a pending down-conversion answers */
};

struct sim_client {
	uint64_t	c_owner;
	uint32_t	c_incarnation;
	struct sim_lock	**c_locks;
	unsigned int	c_nlocks;
	unsigned int	c_cap;
};

/* One lock as an engine walk reports it (sim-check.c). */
struct sim_winfo {
	uint32_t	w_lkid;
	uint32_t	w_remid;
	uint32_t	w_nodeid;
	int		w_ls;
	int		w_res;
	uint8_t		w_status;
	uint8_t		w_is_master;	/* counts for the master's grant state */
	int8_t		w_grmode;
	int8_t		w_rqmode;
	struct dlm_range w_grrange;
	struct dlm_range w_rqrange;
	uint32_t	w_exflags;	/* the engine's flags of its latest request */
	bool		w_running;	/* its lockspace was running at the walk */
	bool		w_qnew;		/* entered its queue in this step */
	int64_t		w_qkey;		/* queue order (see sim-check.c): lower
					 * is ahead, equal is unknown */
	int		w_next;		/* per-resource chain, scratch */
};

struct sim_snap {
	struct sim_winfo *s_info;
	unsigned int	s_n;
	unsigned int	s_cap;
};

struct sim;

/* A command of the cluster glue for one node, carried out at c_due. */
enum sim_cmd_kind {
	CMD_STOP = 1,		/* dlm_core_ls_stop on every lockspace */
	CMD_START,		/* dlm_core_ls_start(c_event, c_members) */
};

struct sim_cmd {
	uint64_t	c_due;
	uint8_t		c_kind;
	uint32_t	c_event;
	uint32_t	c_members;	/* bit (id - 1) per member */
};

/* Glue commands queued per node: the queue grows (a node whose commands
 * are not due yet while recoveries fail and restart one after another,
 * under allocation failures, gathers two an event); past this many the
 * run stops as a runaway of the simulator's own. */
#define SIM_MAX_CMDS	4096

struct sim_node {
	struct sim	*n_sim;
	uint32_t	n_id;
	bool		n_alive;
	struct dlm_core	*n_core;
	struct dlm_ls	*n_ls[SIM_MAX_LS];
	unsigned int	n_nclients;
	struct sim_client n_clients[SIM_MAX_CLIENTS];
	struct sim_lock	**n_orphans;
	unsigned int	n_norphans;
	unsigned int	n_orphcap;
	struct sim_snap	n_snap[2];	/* engine walk: previous and current */
	int		n_cur;
	bool		n_ran_prev[SIM_MAX_LS];	/* lockspace running at the last walk */
	/* --repoint: the step in which a resource last moved here (its
	 * queues rebuilt from the old master's records: their order is not
	 * known from outside, sim-check.c order_keys) */
	uint64_t	n_moved_step;
	int64_t		n_rec_key[SIM_MAX_LS];	/* queue key of locks rebuilt while
						 * the lockspace did not run */
	/* --faults: the glue's view of this node */
	bool		n_joined;	/* clients may work (finished a first recovery) */
	uint32_t	n_event;	/* last event started here */
	uint32_t	n_done[SIM_MAX_LS];	/* recovery_done(event) reported */
	struct sim_cmd	*n_cmds;	/* n_cmdcap of them, grown as needed */
	unsigned int	n_ncmds;
	unsigned int	n_cmdcap;
	uint64_t	n_fence_at;	/* its daemon died, its clients live on
					 * until this fence time; 0: none */
};

/* A remote orphan purge in flight: it hits the orphans the target has
 * when it arrives, not those it had when it was sent. */
struct sim_purge {
	int		p_from;
	int		p_to;
	int		p_ls;
	uint64_t	p_owner;
	uint64_t	p_seq;		/* delivered once the link delivered this many */
};

#define SIM_MAX_PURGES	64

struct sim_ast_rec {
	int		a_node;
	int		a_ls;
	struct dlm_ast	a_ast;
	bool		a_has_lvb;
	char		a_lvb[DLM_LVB_LEN];
};

/* --remaster: a resource stays on a master at least this many ticks, and
 * the arrivals remembered to check it (the oldest forgotten first) */
#define SIM_REMASTER_TICKS	20
#define SIM_REMASTER_WINDOW	8
#define SIM_ARRIVALS		64

struct sim_opts {
	uint64_t	o_first;
	uint64_t	o_last;
	int		o_nodes;	/* 0: varies with the seed */
	unsigned int	o_ops;
	unsigned int	o_depth;	/* deepest resource: root is 1 */
	uint32_t	o_lvbseq_start;	/* LVB sequence of a new resource */
	enum dlm_core_fault o_fault;
	bool		o_faults;	/* node deaths and joins, recovery */
	bool		o_daemon_deaths; /* --faults: some deaths are the daemon's only */
	bool		o_no_fence_wait; /* broken glue: recover before the fence */
	bool		o_forget_purged; /* broken model: purged locks leave it at
					  * once (the bookkeeping before lock_leave) */
	bool		o_partitions;	/* --faults: network splits and merges */
	bool		o_link_drops;	/* --link-drops: a pair's connection drops
					   and comes back, no membership change */
	enum sim_link_fault o_link_fault; /* --fault link-dup, link-lose: with
					   --link-drops, a broken transport */
	bool		o_quiet;
	bool		o_msg_stats;	/* --msg-stats: messages by type, per op */
	bool		o_remaster;	/* --remaster: engines move hot resources,
					   one node makes most operations */
	bool		o_repoint;	/* --repoint: with --remaster, a resource
					   others lock too moves, their locks
					   re-pointed (remaster_shared) */
	uint32_t	o_rehot;	/* --rehot K: with --remaster, the hot
					   node changes K times (0: once) */
	bool		o_hot_trees;	/* --hot-trees: with --remaster, the hot
					   node grows deep trees under the hot
					   roots it masters, the others tear
					   theirs down (HOT TREES, dlm-sim.c) */
	bool		o_bounce;	/* --bounce: with --remaster --faults, a
					   third node dies or is cut off at a
					   DIR_MOVE, and joins again at once */
	uint32_t	o_dir_lag;	/* --dir-lag MS: with --remaster, a
					   DIR_MOVE (and its link behind it)
					   is up to MS ms late (0: not) */
	bool		o_verbose;
	unsigned int	o_alloc_faults;	/* --alloc-faults P: while the schedule
					   runs, each engine allocation fails
					   with probability P/1000 */
	uint32_t	o_avoid;	/* AVOID_*: steer clear of known engine bugs */
	uint32_t	o_max_tossed;	/* --max-tossed K: the engines' max_tossed
					   (0: no bound) */
	bool		o_fold;		/* --fold: lone locks folded with their
					   resources (core/solo.c) */
	uint32_t	o_mixed;	/* --mixed N: node N's engine runs with
					   remastering off, the others as
					   --remaster/--repoint say (the unequal
					   settings dlmd refuses, plugin/
					   cluster.c EQUAL SETTINGS); 0: none */
	unsigned int	o_max_faults;	/* --max-faults K: a seed's node faults
					   number 1..K (0: the default) */
};

/* --avoid NAME: stop generating a pattern that trips a known, reported
 * engine bug, so that a run can look for other ones. */
#define AVOID_VALBLK_RELEASE	0x1	/* VALBLK release of a lock requested without it */
#define AVOID_ADOPT_BAST	0x2	/* quiesce: give up adopted locks unasked */
#define AVOID_QUECVT		0x4	/* no conversion with QUECVT */
#define AVOID_LOST_BAST		0x8	/* quiesce: give up every lock, bast or not */
#define AVOID_TOSS		0x10	/* toss_ms of a minute: no re-mastering in a run */
#define AVOID_NOORDER_CONVQ	0x20	/* check: NOORDER waiters may wait for the convert queue */
#define AVOID_PURGE_AST		0x40	/* ignore ASTs a purge_owner call sends its own locks */
#define AVOID_OVERLAP_LVB	0x80	/* a force unlock behind a silent cancel: LVB unknown */
#define AVOID_RECOVERY_TOSS	0x100	/* --faults: a recovery may drop an unused resource's LVB */
#define AVOID_RECOVERY_LVB	0x200	/* --faults: no LVB bytes on a request that writes none */
#define AVOID_RECOVERY_INFLIGHT	0x400	/* --faults check: a recovering master's grants may clash */
#define AVOID_RECOVERY_OVERLAP	0x800	/* --faults: no force unlock or crash while membership changes */

struct sim_trace {
	char		t_text[SIM_TRACE_LEN][SIM_TRACE_TEXT];
	unsigned int	t_next;
	uint64_t	t_count;
	FILE		*t_stream;	/* -v: print every event as it happens */
};

enum sim_phase {
	PHASE_SCHEDULE = 0,
	PHASE_QUIESCE,
	PHASE_DRAIN,
};

struct sim {
	const struct sim_opts *opts;
	uint64_t	seed;
	struct sim_rng	rng;
	unsigned int	nnodes;
	unsigned int	nls;
	uint32_t	toss_ms;
	uint32_t	audit_ms;	/* core/audit.c period */
	uint64_t	now;
	uint64_t	step;
	enum sim_phase	phase;
	struct sim_node	nodes[SIM_MAX_NODES];
	struct sim_net	net;

	/* ASTs queued by the callbacks, delivered after the entry point */
	struct sim_ast_rec *astq;
	unsigned int	nastq;
	unsigned int	astqcap;
	uint64_t	call_sends;	/* messages sent during the current call */
	uint64_t	call_removes;	/* ... of them REMOVEs */
	bool		in_call;

	struct sim_purge purges[SIM_MAX_PURGES];
	uint32_t	crashed[64];	/* lkids purged in this step (node, ls below) */
	int		crashed_node;
	int		crashed_ls[64];
	unsigned int	ncrashed;
	unsigned int	npurges;

	/* the client model */
	struct sim_lock	*lock_hash[SIM_LOCK_HASH];
	struct sim_lock	*locks;		/* the same locks, one list */
	uint64_t	lock_seq;
	struct sim_res	*res;
	unsigned int	nres;
	int		res_hash[SIM_RES_HASH];
	uint32_t	res_mark;
	uint64_t	next_astarg;
	uint64_t	next_lvb;

	/* --faults: membership (sim-faults.c) */
	uint32_t	event;		/* the latest membership event */
	uint32_t	members;	/* its members, bit (id - 1) each */
	uint32_t	checked_event;	/* the last event whose end was checked */
	bool		check_recovered; /* all finished: check after this step */
	unsigned int	fault_budget;	/* node faults left for this seed */
	int		kill_next;	/* node + 1 to kill at the next step
					   (the workload aims at a master) */
	int		bounce_next;	/* --bounce: node + 1 to kill or cut
					   off at the next step ... */
	int		bounce_rejoin;	/* ... and to join again as soon as
					   membership is settled */
	unsigned int	bounces_left;	/* --bounce: per seed, outside the
					   fault budget */
	/* --remaster: the node that makes most operations, the global tick
	 * count, and each resource's arrival on a node (install) */
	int		hot;
	uint64_t	nticks;
	uint64_t	n_moves;
	struct sim_arrival {
		uint32_t	a_node;
		uint64_t	a_tick;
		char		a_name[96];	/* "lsname: key" as logged */
	}		arrivals[SIM_ARRIVALS];
	unsigned int	narrivals;
	uint64_t	n_deaths;
	uint64_t	n_daemon_deaths;
	uint64_t	n_splits;
	uint64_t	n_joins;
	uint64_t	n_fold_steps;	/* --fold: steps after which some engine
					   had a folded lock */
	uint64_t	n_folded_max;	/* ... and the most at once, all nodes */
	unsigned int	link_drops_left; /* --link-drops: per seed */
	uint64_t	n_link_drops;
	uint64_t	n_recoveries;
	/* --alloc-faults: a generator of its own for the engines' allocation
	 * hook; on only during the schedule phase (quiesce and drain are the
	 * quiet tail in which everything must complete) */
	struct sim_rng	alloc_rng;
	bool		alloc_on;
	uint64_t	n_alloc_fails;
	uint64_t	n_unwrites;	/* refused writes undone exactly */
	uint64_t	n_unwrites_unknown; /* ... left unknown (see lvb_unwrite) */
	uint32_t	restart_event;	/* last event restarted after a
					   recovery_failed (sim-faults.c) */

	/* counters for the summary */
	uint64_t	n_ops;
	uint64_t	n_ops_ok;	/* of those, accepted by the engine */
	uint64_t	n_msgs_type[DLM_MSG_MAX + 1];	/* engine sends, by type */
	uint64_t	n_fresh_local;	/* fresh children requested under a
					   parent mastered on the same node */
	uint64_t	n_fresh_msgs;	/* messages those requests sent */
	uint64_t	n_folds_shared;	/* drain: engines' ls_folds_shared */
	uint64_t	n_unfolds_msg;	/* drain: engines' ls_unfolds_msg */
	uint64_t	n_folds_remote;	/* drain: engines' ls_folds_remote */
	uint64_t	n_unfolds_rec;	/* drain: engines' ls_unfolds_rec */
	uint64_t	n_folds_kept_rec;	/* drain: ls_folds_kept_rec */
	uint64_t	n_invalid;
	uint64_t	n_asts;
	uint64_t	n_basts;

	struct sim_trace trace;
	bool		failed;
	char		fail_msg[512];
};

/* How long a resource has been unused (no lock at any master) before its
 * master may have dropped it, value and all: toss_ms, or no time at all
 * with --max-tossed, which drops the oldest unused early. */
static inline uint64_t sim_toss_after(const struct sim *sim)
{
	return sim->opts->o_max_tossed ? 0 : sim->toss_ms;
}

/* dlm-sim.c */
void sim_fail(struct sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sim_trace(struct sim *sim, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* sim-trace.c */
void trace_add(struct sim_trace *t, const char *line);
void trace_print(const struct sim_trace *t, FILE *out);
void trace_key(const unsigned char *key, unsigned int keylen, char *out, size_t outlen);

/* sim-model.c */
extern const char *const sim_mode_names[DLM_NUM_MODES];
bool sim_compat(int m1, int m2);
bool sim_ranges_overlap(const struct dlm_range *a, const struct dlm_range *b);
const char *sim_mode_str(int mode);
void sim_flags_str(uint32_t flags, char *out, size_t outlen);
int sim_res_root(struct sim *sim, int ls, unsigned int name);
int sim_res_child(struct sim *sim, int parent, unsigned int name);
int sim_res_find(struct sim *sim, int ls, const unsigned char *key, unsigned int keylen);
const unsigned char *sim_root_name(unsigned int i, unsigned int *len);
const unsigned char *sim_child_name(unsigned int i, unsigned int *len);
const char *sim_res_str(struct sim *sim, int res, char *buf, size_t len);

struct sim_lock *lock_new(struct sim *sim, int node, int ls, uint32_t lkid,
			  int client, int res);
struct sim_lock *lock_find(struct sim *sim, int node, int ls, uint32_t lkid);
void lock_forget(struct sim *sim, struct sim_lock *lk);
void lock_detach_client(struct sim *sim, struct sim_lock *lk);
void lock_leave(struct sim *sim, struct sim_lock *lk);
void lock_attach_client(struct sim *sim, struct sim_lock *lk, int client);
int lock_relied_mode(const struct sim_lock *lk);
bool lock_is_idle(const struct sim_lock *lk);

void lvb_make(uint64_t value, char *out);
uint64_t lvb_value(const char *lvb);
void lvb_write(struct sim *sim, int res, enum sim_lvb_state st, uint64_t value);
void lvb_unwrite(struct sim *sim, struct sim_lock *lk);
void lvb_maybe_reset(struct sim *sim, int res);

void model_orphan(struct sim *sim, struct sim_lock *lk);
void model_deliver_ast(struct sim *sim, const struct sim_ast_rec *a);
void model_check_clients(struct sim *sim);

void model_node_dies(struct sim *sim, int node);
void model_node_fenced(struct sim *sim, int node);
void model_recovery_toss(struct sim *sim);
void model_recovery_purge(struct sim *sim, int node);

/* sim-check.c */
void check_engines(struct sim *sim);
void check_free(struct sim *sim);
void check_model(struct sim *sim);
void check_model_empty(struct sim *sim);

/* sim-faults.c */
bool node_usable(const struct sim *sim, int node);
bool nodes_connected(const struct sim *sim, int a, int b);
void faults_setup(struct sim *sim);
bool faults_step(struct sim *sim);
bool glue_due(const struct sim *sim);
bool glue_busy(const struct sim *sim);
uint64_t glue_next_due(const struct sim *sim);
void glue_step(struct sim *sim);
void glue_report(struct sim *sim, FILE *out);
void glue_report_stall(struct sim *sim);
void check_recovered(struct sim *sim);
void glue_recovery_failed(struct sim *sim, int node, uint32_t event);
/* dlm-sim.c */
int sim_node_engine_new(struct sim_node *n);
void sim_node_engine_setup(struct sim_node *n);
bool sim_out_of_memory(const struct sim *sim, int rc);
extern const struct dlm_core_ops sim_core_ops;
extern const char *const sim_ls_names[SIM_MAX_LS];
void sim_deliver_asts(struct sim *sim);

#endif /* DLMD_TESTS_SIM_H */
