/*
 * core/deadlock.c - finding and breaking deadlocks across resources and
 * nodes.
 *
 * do_convert() (lock.c) finds the deadlocks that live on one resource:
 * conversions on its convert queue each blocked by the next one's granted
 * mode (CONVDEADLK).  This file finds the others: a client on node 1
 * holds A and waits for B, a client on node 2 holds B and waits for A.
 * The two waits are recorded on different masters, and no master sees a
 * cycle.
 *
 * The wait-for graph.  Its unit is the waiter: one thread of control
 * within a lock owner (the daemon's owner id: a connection and its pid).
 * The established DLM's old detector named a waiter by its transaction
 * id, or by the requesting task (a thread); so does this one.  A
 * dlm_lock_req names its waiter (waiter, waiter_flags): dlmd passes the
 * xid of dlm_ls_lockx when there is one (DLM_WAITER_XID), else the
 * requesting thread's id, so that many threads on one connection are
 * many waiters.  A waiter is taken not to release anything it holds
 * while it waits, and only a requester that blocks waits: a synchronous
 * request (the _wait calls: DLMP_LK_SYNC, DLMP_LK_BLOCKS) or one with
 * an xid (the application declares a transaction).  An async request
 * without xid is marked DLM_WAITER_ASYNC (LKBF_DLASYNC): its caller goes
 * on and may release what it holds, so it never starts a probe and a
 * probe never continues from it.  A lock's waiter is the one of its
 * latest request, new, adoption or conversion: a conversion makes the
 * converting thread the lock's holder as well as the waiter of the
 * conversion (one field, lkb_dl_waiter; a thread converting another
 * thread's lock is taken to have taken it over).  A request with no
 * waiter (0: engine-internal callers, the simulator's clients, whose
 * transactions are one client each) stands for its whole owner, which
 * waits: every other waiter of that owner is the same waiter as it,
 * the owner-wide rule this detector began with, so the simulator's
 * wait-for oracle is unchanged.  Edges:
 *
 *   request W  --waits for-->  lock H   W cannot be granted until H is
 *                                       given up (lock.c,
 *                                       dlm_for_each_blocker: a conflicting
 *                                       granted mode; for a new request a
 *                                       conversion or a request ahead of
 *                                       it whose mode conflicts, and what
 *                                       a compatible one ahead waits for;
 *                                       for a QUECVT conversion those
 *                                       ahead of it);
 *   lock H     --held by-->  waiter T   H's owner's queued requests of
 *                                       H's waiter, those whose requester
 *                                       blocks.
 *
 * A deadlock is a cycle W1 -> H1 -> T1 -> W2 -> ... -> W1.  The first
 * kind of edge is known at W's master, the second at H's owner's node
 * (owners are local: every lock of an owner is a process copy on one
 * node).  A thread that holds H and blocks on a new request W that H
 * keeps waiting (EX held, EX asked on the same resource by the same
 * thread) is a cycle of one waiter: it gets -EDEADLK rather than hang.
 * Orphans have no owner and wait for nothing; a request with an
 * alternate mode (ALTPR/ALTCW) waits for one of two sets of locks and is
 * left out; a lock with an operation in flight (its client is already
 * cancelling, unlocking or converting it) is left out until it settles.
 *
 * Edge chasing.  Nothing happens while no request waits longer than
 * deadlock_ms (dlm_core_config; dlm.conf deadlock_secs): the queued
 * process copies are on ls_dlwait, oldest probe first, and the tick
 * stops at the first one not due.  A request I that has waited that long
 * sends a probe, and again every deadlock_ms while it waits.  A probe
 * names its initiator (node, lock id, age) and a round, and travels:
 *
 *   I's node    --DEADLK_PROBE-->   I's master: for each lock H that
 *                                   blocks I there ...
 *   master      --DEADLK_HOLDER-->  H's owner's node: for each queued
 *                                   request X of H's owner ...
 *   X's node    --DEADLK_PROBE-->   X's master, and so on.
 *
 * Hops inside one node (a local master, a local holder) are not messages
 * but steps of a loop over a small queue (struct walk), so a long local
 * chain costs no stack.  A probe that arrives at H's owner and finds I
 * itself among the owner's queued requests has come back: I waits,
 * through a cycle, for itself.
 *
 * The victim.  A probe is forwarded from a request X only if X is older
 * than its initiator, by the order
 *
 *     (age, node id, lock id)     age: when the request began to wait,
 *                                 on its own node's clock
 *
 * (a lock with NODLCKWT counts as the oldest of all and never starts a
 * probe: it is never the victim, as the flag asks; a cycle of such locks
 * only stays).  So a probe comes back only to the youngest request of a
 * cycle, and every other member's probe dies at it: each cycle is found
 * by exactly one of its members, whichever of them noticed first, and
 * that one is the victim.  It cancels its own request as its client
 * would (dlm_core_unlock with CANCEL), marked LKBF_DEADLK, and the
 * completion AST of that cancel carries -EDEADLK instead of -DLM_ECANCEL
 * (a conversion keeps its granted mode; a new request is gone), the
 * status the established API gives dlm_ls_deadlock_cancel().  Ages of
 * different nodes compare their monotonic clocks, which are not
 * synchronised: "youngest" is exact among one node's requests and an
 * arbitrary but fixed order across nodes, which is all that choosing
 * one victim needs.
 *
 * Loops and cost.  A probe may meet a cycle of older locks that does not
 * lead back to its initiator; each request remembers the last probe
 * forwarded from it (lw_dl_mark, a hash of initiator and round) and
 * forwards it once, and a probe that has taken DLM_DEADLK_MAX_HOPS hops is
 * dropped.  A request that waits legitimately, behind a holder that is
 * not waiting, costs one probe to its master and one to each holder's
 * node per deadlock_ms.  A hop at a holder's node looks at every lock of
 * the holder's owner.
 *
 * Recovery.  Probes carry the sender's generation (m_gen) and one of an
 * older generation is dropped, so a recovery voids every probe in flight
 * (lock ids at new masters are new, too); the requests that still wait
 * probe again in their next round.  Probes that arrive while the
 * lockspace is stopped are held like every lock message and dropped as
 * stale when replayed.  A member that dies in a cycle breaks it: its
 * locks are purged.
 *
 * A member that is wrong.  Probes come from members only, but a member
 * may be buggy (or a forged message may pass the transport's
 * authentication), so what a probe says is checked where it can be:
 * hops out of 1..DLM_DEADLK_MAX_HOPS, an initiator that is not a member
 * or has no lock id or age: dropped and logged; a lock that does not
 * exist here, or is not the one the sender's lock is paired with, or
 * another generation: ignored.  Every hop adds one to the count, so a
 * probe dies after DLM_DEADLK_MAX_HOPS hops whatever its initiator; a
 * request forwards a given probe once (lkb_dl_mark), so a probe that
 * names no real initiator (the youngest age there is, a lock that does
 * not exist) goes round a cycle once and stops: one garbage probe costs
 * at most one message per edge it meets, never more.  A victim is
 * picked only by a probe that comes home as one of the initiator's own
 * recent rounds: its node, lock id and age must be the request's, and
 * its round (the low half of the clock when it went out) one sent during
 * this wait, at most DLM_DEADLK_LATE_ROUNDS rounds of deadlock_ms before
 * the latest (lw_dl_probe_ms), so a HOLDER made up by a member that never
 * saw a probe of that request cannot cancel a request that is in no
 * cycle except by guessing its age to the millisecond.  (Only the latest
 * round was accepted once: a probe whose round trip took longer than
 * deadlock_ms then never came home in time, and the simulator found a
 * cycle never broken.)  What stays out of reach: the master of
 * the resource the initiator waits on sees the real probe and could
 * echo it back; a master that lies can do worse anyway (grant what
 * conflicts), and nothing short of checking every master's queues
 * could tell.
 *
 * Known limits.  Two cycles that share a request can both be broken at
 * once, each by its own youngest member, where one victim would have
 * done: each member found its own cycle whole when its probe went out.
 * A probe is a snapshot taken hop by hop: if a member of the cycle is
 * cancelled by its client (or another victim) after the probe passed it,
 * the victim may give way to a cycle that is already gone; it then gets
 * -EDEADLK for a wait that would have ended.  If its master granted it
 * before the cancel arrived, the grant comes with the cancel still in
 * flight: its completion is held (LKBF_GRANT_HELD, lock.c
 * pcopy_granted) until the cancel's reply ends the cancel, so the client
 * never acts on a lock with a cancel it did not ask for in flight (it
 * was refused -EBUSY: sim-deadlock --node-deaths seed 460,
 * test_cancel_crosses_grant).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* How many rounds late a probe may come home and still break a cycle
 * (recent_round). */
#define DLM_DEADLK_LATE_ROUNDS	4

/* What a probe says about where it started. */
struct probe {
	uint32_t	pr_node;	/* the initiator's node */
	uint32_t	pr_lkid;	/* its lock id there */
	uint64_t	pr_key;		/* its age (dlm_deadlock_key) */
	uint32_t	pr_round;	/* which of its probes */
	uint32_t	pr_mark;	/* probe_mark() of the above */
};

enum hop_kind {
	HOP_WAITER,	/* at a master: whom does this queued lock wait for? */
	HOP_HOLDER,	/* at an owner's node: this lock blocks the probe */
};

struct hop {
	uint32_t	h_lkid;
	uint16_t	h_hops;
	uint8_t		h_kind;
};

/* One probe's hops inside this node, done in a loop. */
struct walk {
	struct dlm_ls		*w_ls;
	const struct probe	*w_probe;
	struct hop		*w_q;
	size_t			w_n;
	size_t			w_cap;
	uint16_t		w_hops;	/* hops of the step being done */
};

/* A request's age: larger is younger.  0 for a lock exempt (NODLCKWT),
 * the oldest there is. */
uint64_t dlm_deadlock_key(const struct dlm_lkb *lkb)
{
	if ((lkb->lkb_exflags & DLM_LKF_NODLCKWT) || !lkb->lkb_qwait)
		return 0;
	return lkb->lkb_qwait->lw_dl_start + 1;
}

/* The status of a completion for lkb: a deadlock victim's cancel says
 * -EDEADLK.  Called once per completion AST; the mark goes with it. */
int dlm_deadlock_status(struct dlm_lkb *lkb, int status)
{
	if (!(lkb->lkb_flags & LKBF_DEADLK))
		return status;
	lkb->lkb_flags &= ~LKBF_DEADLK;
	return status == -DLM_ECANCEL ? -EDEADLK : status;
}

/* The lock's waiter is the one of its latest request (new, conversion
 * or adoption). */
void dlm_deadlock_set_waiter(struct dlm_lkb *lkb,
			     const struct dlm_lock_req *req)
{
	lkb->lkb_dl_waiter = req->waiter;
	lkb->lkb_flags &= ~(LKBF_DLXID | LKBF_DLASYNC);
	if (req->waiter && (req->waiter_flags & DLM_WAITER_XID))
		lkb->lkb_flags |= LKBF_DLXID;
	if (req->waiter_flags & DLM_WAITER_ASYNC)
		lkb->lkb_flags |= LKBF_DLASYNC;
}

/* Are a and b (process copies of one owner) requests of one waiter?  A
 * lock without waiter information stands for the whole owner. */
static bool same_waiter(const struct dlm_lkb *a, const struct dlm_lkb *b)
{
	if (!a->lkb_dl_waiter || !b->lkb_dl_waiter)
		return true;
	return a->lkb_dl_waiter == b->lkb_dl_waiter &&
	       !((a->lkb_flags ^ b->lkb_flags) & LKBF_DLXID);
}

/* lkb (a process copy) entered or left a queue: keep ls_dlwait in step.
 * Entering a queue starts a new wait, with a new age. */
void dlm_deadlock_queued(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	bool queued = !is_master_copy(lkb) &&
		      (lkb->lkb_status == DLM_LKSTS_WAITING ||
		       lkb->lkb_status == DLM_LKSTS_CONVERT);
	struct dlm_lkb_wait *w;

	if (lkb->lkb_flags & LKBF_DLWAIT) {
		dlm_list_del(&lkb->lkb_qwait->lw_dlwait);
		lkb->lkb_flags &= ~LKBF_DLWAIT;
	}
	if (!queued) {
		dlm_lkb_qwait_put(ls, lkb);
		return;
	}
	w = dlm_lkb_qwait_get(ls, lkb);
	if (!w) {
		/* no memory for its record: the next tick tries again
		 * (rewatch()); until then this wait goes unprobed */
		log_ls(ls, DLM_LOG_WARNING,
		       "lock %08x: no memory to watch its wait for deadlocks",
		       lkb->lkb_id);
		ls->ls_dl_unwatched++;
		return;
	}
	w->lw_dl_start = ls->ls_core->core_now;
	w->lw_dl_probe_ms = w->lw_dl_start;
	w->lw_dl_mark = 0;
	lkb->lkb_flags |= LKBF_DLWAIT;
	dlm_list_add_tail(&w->lw_dlwait, &ls->ls_dlwait);
}

/* A queued process copy whose wait can be part of a deadlock: its
 * requester blocks on it, nothing in flight, no cancel or unlock
 * pending, not already a victim. */
static bool waits_quietly(const struct dlm_lkb *lkb)
{
	return (lkb->lkb_flags & LKBF_DLWAIT) &&
	       lkb->lkb_wait_type == DLM_WAIT_NONE &&
	       !(lkb->lkb_flags & (LKBF_DEADLK | LKBF_OVERLAP_CANCEL |
				   LKBF_OVERLAP_UNLOCK | LKBF_PURGED |
				   LKBF_DLASYNC));
}

static uint32_t probe_mark(const struct probe *p)
{
	uint64_t h = p->pr_key * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)p->pr_node << 32 | p->pr_lkid) * 0xc2b2ae3d27d4eb4fULL;
	h ^= (uint64_t)p->pr_round * 0x165667b19e3779f9ULL;
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 32;
	return (uint32_t)h | 1;	/* 0 is "no probe yet" */
}

/* Is request x (a process copy here) older than the probe's initiator? */
static bool is_older(const struct dlm_ls *ls, const struct dlm_lkb *x,
		     const struct probe *p)
{
	uint64_t key = dlm_deadlock_key(x);
	uint32_t node = dlm_our_nodeid(ls);

	if (ls->ls_core->core_fault == DLM_FAULT_DEADLK_ANY_VICTIM)
		return true;
	if (key != p->pr_key)
		return key < p->pr_key;
	if (node != p->pr_node)
		return node < p->pr_node;
	return x->lkb_id < p->pr_lkid;
}

static void push(struct walk *w, enum hop_kind kind, uint32_t lkid)
{
	if (w->w_hops >= DLM_DEADLK_MAX_HOPS)
		return;
	if (w->w_n == w->w_cap) {
		size_t cap = w->w_cap ? 2 * w->w_cap : 16;
		struct hop *q = dlm_realloc(w->w_ls->ls_core, w->w_q,
					    cap * sizeof(*q));

		if (!q) {
			log_ls(w->w_ls, DLM_LOG_WARNING, "deadlock probe dropped: "
			       "out of memory");
			return;
		}
		w->w_q = q;
		w->w_cap = cap;
	}
	w->w_q[w->w_n].h_lkid = lkid;
	w->w_q[w->w_n].h_hops = (uint16_t)(w->w_hops + 1);
	w->w_q[w->w_n].h_kind = (uint8_t)kind;
	w->w_n++;
}

static void send_probe(struct walk *w, int type, uint32_t to, uint32_t lkid,
		       uint32_t remid)
{
	const struct probe *p = w->w_probe;
	struct dlm_msg m;

	if (w->w_hops >= DLM_DEADLK_MAX_HOPS)
		return;
	dlm_msg_init(&m, type);
	m.m_lkid = lkid;
	m.m_remid = remid;
	m.m_nodeid = p->pr_node;
	m.m_lvbseq = p->pr_lkid;
	m.m_owner = p->pr_key;
	m.m_sbflags = p->pr_round;
	m.m_status = w->w_hops + 1;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	m.m_grrange.ra_end = DLM_RANGE_MAX;
	m.m_rqrange.ra_end = DLM_RANGE_MAX;
	w->w_ls->ls_probes_sent++;
	dlm_send_msg(w->w_ls, &m, to);
}

/* The probe leaves request x (a process copy here): to its master. */
static void from_waiter(struct walk *w, struct dlm_lkb *x)
{
	x->lkb_qwait->lw_dl_mark = w->w_probe->pr_mark;
	if (is_master(w->w_ls, x->lkb_rsb))
		push(w, HOP_WAITER, x->lkb_id);
	else
		send_probe(w, DLM_MSG_DEADLK_PROBE, x->lkb_rsb->res_nodeid,
			   x->lkb_id, x->lkb_remid);
}

static void to_holder(void *arg, struct dlm_lkb *h)
{
	struct walk *w = arg;

	if (is_master_copy(h))
		send_probe(w, DLM_MSG_DEADLK_HOLDER, h->lkb_nodeid, h->lkb_id,
			   h->lkb_remid);
	else
		push(w, HOP_HOLDER, h->lkb_id);
}

/* At a master: lkb (a master copy, or a local process copy) is queued. */
static void at_waiter(struct walk *w, struct dlm_lkb *lkb)
{
	if (lkb->lkb_status != DLM_LKSTS_WAITING &&
	    lkb->lkb_status != DLM_LKSTS_CONVERT)
		return;
	dlm_for_each_blocker(w->w_ls, lkb->lkb_rsb, lkb, to_holder, w);
}

/* x closes a cycle and is its youngest request: it gives way. */
static void break_cycle(struct dlm_ls *ls, struct dlm_lkb *x)
{
	char name[DLM_KEY_TEXT_LEN];
	uint32_t id = x->lkb_id;
	int rv;

	if (ls->ls_core->core_fault == DLM_FAULT_DEADLK_NOOP)
		return;
	dlm_key_format(x->lkb_rsb->res_key, x->lkb_rsb->res_keylen, name,
		       sizeof(name));
	x->lkb_flags |= LKBF_DEADLK;
	rv = dlm_cancel_lkb(ls, x);	/* may free x */
	if (rv) {
		x->lkb_flags &= ~LKBF_DEADLK;
		log_ls(ls, DLM_LOG_WARNING, "deadlock through lock %08x on "
		       "\"%s\": cannot cancel it (%d)", id, name, rv);
		return;
	}
	ls->ls_deadlocks++;
	ls->ls_last_victim = id;
	log_ls(ls, DLM_LOG_NOTICE, "deadlock: lock %08x on \"%s\" is the "
	       "youngest request of a cycle of waits; its request is "
	       "cancelled with EDEADLK", id, name);
}

/* Is 'round' one of x's recent probes: sent during this wait, at most
 * DLM_DEADLK_LATE_ROUNDS rounds before its latest?  A probe takes a few
 * messages to come home, and a request probes every deadlock_ms: when a
 * round trip takes longer than that (a slow link, a busy node; the
 * simulator's network found it), only the latest round would never
 * match, and a cycle would never be broken. */
static bool recent_round(const struct dlm_ls *ls, const struct dlm_lkb *x,
			 uint32_t round)
{
	const struct dlm_lkb_wait *w = x->lkb_qwait;
	uint32_t latest = (uint32_t)w->lw_dl_probe_ms;
	uint64_t window = (uint64_t)ls->ls_core->core_cfg.deadlock_ms *
			  DLM_DEADLK_LATE_ROUNDS;

	if (w->lw_dl_probe_ms - w->lw_dl_start < window)
		window = w->lw_dl_probe_ms - w->lw_dl_start;
	return (uint32_t)(latest - round) <= window;
}

/* At an owner's node: lock h (a process copy here) blocks the probe.
 * Its owner's queued requests wait for whatever keeps them queued. */
static void at_holder(struct walk *w, struct dlm_lkb *h)
{
	const struct probe *p = w->w_probe;
	struct dlm_ls *ls = w->w_ls;
	bool home = p->pr_node == dlm_our_nodeid(ls);
	struct dlm_owner *ow;
	struct dlm_list *pos;

	if (h->lkb_wait_type != DLM_WAIT_NONE ||
	    !(h->lkb_flags & LKBF_OWNED) || (h->lkb_flags & LKBF_PURGED))
		return;	/* its client acts on it, or it is an orphan */
	ow = dlm_owner_get(ls, h->lkb_ownerid, false);
	if (!ow)
		return;
	dlm_list_for_each(pos, &ow->ow_locks) {
		struct dlm_lkb *x = dlm_container_of(pos, struct dlm_lkb,
						     lkb_ownerqueue);

		if (!waits_quietly(x) || !same_waiter(x, h))
			continue;
		if (home && x->lkb_id == p->pr_lkid &&
		    dlm_deadlock_key(x) == p->pr_key &&
		    recent_round(ls, x, p->pr_round)) {
			break_cycle(ls, x);
			return;	/* x may be gone, and ow_locks changed */
		}
		if (x->lkb_qwait->lw_dl_mark != p->pr_mark &&
		    is_older(ls, x, p))
			from_waiter(w, x);
	}
}

/* Do the hops queued inside this node. */
static void walk_run(struct walk *w)
{
	while (w->w_n) {
		struct hop hop = w->w_q[--w->w_n];
		struct dlm_lkb *lkb = dlm_lkb_find(w->w_ls, hop.h_lkid);

		/* looked up again: a victim's cancel may have freed it */
		if (!lkb || is_master_copy(lkb) || !lkb->lkb_rsb)
			continue;
		w->w_hops = hop.h_hops;
		if (hop.h_kind == HOP_WAITER) {
			if (is_master(w->w_ls, lkb->lkb_rsb))
				at_waiter(w, lkb);
		} else {
			at_holder(w, lkb);
		}
	}
	free(w->w_q);
	w->w_q = NULL;
	w->w_cap = 0;
}

static void start_probe(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct probe p;
	struct walk w;

	memset(&p, 0, sizeof(p));
	p.pr_node = dlm_our_nodeid(ls);
	p.pr_lkid = lkb->lkb_id;
	p.pr_key = dlm_deadlock_key(lkb);
	p.pr_round = (uint32_t)ls->ls_core->core_now;
	p.pr_mark = probe_mark(&p);
	memset(&w, 0, sizeof(w));
	w.w_ls = ls;
	w.w_probe = &p;
	from_waiter(&w, lkb);
	walk_run(&w);
}

static void rewatch_one(void *arg, struct dlm_hnode *n)
{
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);

	if (!is_master_copy(lkb) && !(lkb->lkb_flags & LKBF_DLWAIT) &&
	    (lkb->lkb_status == DLM_LKSTS_WAITING ||
	     lkb->lkb_status == DLM_LKSTS_CONVERT))
		dlm_deadlock_queued(arg, lkb);
}

/* Watch the waits that dlm_deadlock_queued() could not record for want of
 * memory: one walk of the locks, only after such a failure; what fails
 * again is counted again for the next tick. */
static void rewatch(struct dlm_ls *ls)
{
	ls->ls_dl_unwatched = 0;
	dlm_htab_walk(&ls->ls_lkbtbl, rewatch_one, ls);
}

void dlm_deadlock_tick(struct dlm_ls *ls)
{
	uint64_t now = ls->ls_core->core_now;
	uint32_t delay = ls->ls_core->core_cfg.deadlock_ms;

	if (ls->ls_dl_unwatched && dlm_ls_running(ls))
		rewatch(ls);
	if (!delay || !dlm_ls_running(ls))
		return;
	/* oldest probe first: each one probed goes to the tail, with a
	 * clock that is not due, so this ends */
	while (!dlm_list_empty(&ls->ls_dlwait)) {
		struct dlm_lkb_wait *qw = dlm_list_first(&ls->ls_dlwait,
							 struct dlm_lkb_wait,
							 lw_dlwait);
		struct dlm_lkb *lkb = qw->lw_lkb;

		if (now - qw->lw_dl_probe_ms < delay)
			break;
		qw->lw_dl_probe_ms = now;
		dlm_list_del(&qw->lw_dlwait);
		dlm_list_add_tail(&qw->lw_dlwait, &ls->ls_dlwait);
		if (waits_quietly(lkb) && dlm_deadlock_key(lkb))
			start_probe(ls, lkb);
	}
}

int dlm_deadlock_receive(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);
	struct probe p;
	struct walk w;

	if (m->m_status <= 0 || m->m_status > DLM_DEADLK_MAX_HOPS ||
	    !dlm_ls_is_member(ls, m->m_nodeid) || m->m_lvbseq == 0 ||
	    m->m_owner == 0) {
		log_ls(ls, DLM_LOG_WARNING, "dropped malformed %s from node %u",
		       dlm_msg_type_str(m->m_type), m->m_from);
		return -EBADMSG;
	}
	if (m->m_gen != ls->ls_generation || !ls->ls_core->core_cfg.deadlock_ms)
		return 0;	/* from before a recovery, or we take no part */
	memset(&p, 0, sizeof(p));
	p.pr_node = m->m_nodeid;
	p.pr_lkid = m->m_lvbseq;
	p.pr_key = m->m_owner;
	p.pr_round = m->m_sbflags;
	p.pr_mark = probe_mark(&p);
	memset(&w, 0, sizeof(w));
	w.w_ls = ls;
	w.w_probe = &p;
	w.w_hops = (uint16_t)m->m_status;
	if (!lkb || lkb->lkb_remid != m->m_lkid || !lkb->lkb_rsb)
		return 0;	/* gone meanwhile */
	if (m->m_type == DLM_MSG_DEADLK_PROBE) {
		if (is_master_copy(lkb) && lkb->lkb_nodeid == m->m_from)
			at_waiter(&w, lkb);
	} else if (!is_master_copy(lkb) &&
		   lkb->lkb_rsb->res_nodeid == m->m_from) {
		at_holder(&w, lkb);
	}
	walk_run(&w);
	return 0;
}
