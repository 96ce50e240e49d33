/*
 * tests/sim-check.c - checks made on the engines themselves.
 *
 * After every step each engine is walked (dlm_core_ls_walk) and the locks
 * it reports are kept as a snapshot sorted by (lockspace, lock id); the
 * previous step's snapshot is kept too.  Then:
 *
 *   safety    for every resource, the locks granted by its master (master
 *             copies, and local locks on a resource mastered here; a
 *             converting lock still holds its granted mode) are pairwise
 *             compatible unless their ranges are disjoint; and no resource
 *             has granted locks on two masters at once;
 *   order     a lock granted during this step must not have passed one
 *             queued ahead of it that is still queued after the step: a
 *             new request (not NOORDER or EXPEDITE) passes no conversion
 *             and no older waiter; a QUECVT conversion passes no older
 *             conversion (see check_queue_order() for the rules and for
 *             how queue order is known from outside: each lock's entry
 *             into a queue is seen step by step, HEADQUE goes to the
 *             head, locks entering in one step or rebuilt by a recovery
 *             tie);
 *   stuck     nothing grantable is left queued once a step is over: a
 *             conversion without QUECVT that fits the other holders, a
 *             NOORDER waiter that fits, or the head of a queue (the walk
 *             does not give queue order, so "the head fits" is only
 *             concluded when every member of that queue fits);
 *   counts    each engine's own counts of what its queues hold (granted
 *             modes, ranged locks, NOORDER waiters) match them
 *             (dlm_core_ls_verify).
 *
 *   model     the client model knows exactly the locks the engines hold:
 *             each node's own copies, and each master's copies of other
 *             nodes' locks, against the model's locks, by lock id, with
 *             resource and granted mode (check_model(), at the end of
 *             this file); a lock the model keeps after its client let go
 *             of it (purged, lock_leave()) is forgotten once its engine
 *             no longer shows it, and at the end of the drain the model
 *             must be empty.
 *
 * What these cannot see (a cycle through QUECVT order, a blocking AST
 * that never reached its holder) shows up as a liveness failure in the
 * quiesce phase instead.
 *
 * With --faults only live nodes are walked (a dead node is fenced: its
 * locks count for nothing), so safety holds between a death and the end
 * of its recovery too (at a new master still rebuilding its queues, a
 * conversion the dead master may have done counts with either mode, see
 * mode_unsettled()); order and stuck are judged only on lockspaces that
 * run (recovery rebuilds queues in any order and holds grants).  When a
 * recovery has finished everywhere, check_recovered() adds:
 *
 *   survive   every settled lock of a surviving client (granted, nothing
 *             pending; and every settled orphan) is still on its node with
 *             the mode the client knows, and the master of its resource,
 *             a live node, has it granted in that mode (or, --remaster,
 *             a MIGRATE of the resource on its way to the lock's node
 *             carries the master state; --repoint, the lock's
 *             MIGRATE_LOCK record, or its resource's MIGRATE, is on its
 *             way: moving_here());
 *   departed  no live node has any lock of a node that is dead.
 *
 * Snapshots only compare steps of one node, so lock ids never need
 * translating between nodes, except to find a master copy's request flags
 * in the owning node's client model (remid is the owner's lock id).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/sim.h"

struct walk_arg {
	struct sim	*sim;
	struct sim_snap	*snap;
	int		ls;
	int		node;
	bool		running;
};

static void snap_push(struct sim *sim, struct sim_snap *s, const struct sim_winfo *w)
{
	if (s->s_n == s->s_cap) {
		unsigned int cap = s->s_cap ? 2 * s->s_cap : 128;
		struct sim_winfo *a = realloc(s->s_info, cap * sizeof(*a));

		if (!a) {
			sim_fail(sim, "simulator: out of memory");
			return;
		}
		s->s_info = a;
		s->s_cap = cap;
	}
	s->s_info[s->s_n++] = *w;
}

static void walk_cb(void *arg, const struct dlm_lock_info *li)
{
	struct walk_arg *wa = arg;
	struct sim_winfo w;

	memset(&w, 0, sizeof(w));
	w.w_lkid = li->lkid;
	w.w_remid = li->remid;
	w.w_nodeid = li->nodeid;
	w.w_ls = wa->ls;
	w.w_res = sim_res_find(wa->sim, wa->ls, li->key, li->keylen);
	w.w_status = (uint8_t)li->status;
	w.w_is_master = li->is_master_copy || li->is_master;
	w.w_grmode = (int8_t)li->grmode;
	w.w_rqmode = (int8_t)li->rqmode;
	w.w_grrange = li->grrange;
	w.w_rqrange = li->rqrange;
	w.w_exflags = li->exflags;
	w.w_running = wa->running;
	w.w_next = -1;
	if (w.w_res < 0) {
		char k[200];

		trace_key(li->key, li->keylen, k, sizeof(k));
		sim_fail(wa->sim, "n%d walk: lock %08x on resource %s that no client asked for",
			 wa->node + 1, li->lkid, k);
		return;
	}
	snap_push(wa->sim, wa->snap, &w);
}

static int winfo_cmp(const void *a, const void *b)
{
	const struct sim_winfo *x = a, *y = b;

	if (x->w_ls != y->w_ls)
		return x->w_ls < y->w_ls ? -1 : 1;
	if (x->w_lkid != y->w_lkid)
		return x->w_lkid < y->w_lkid ? -1 : 1;
	return 0;
}

static const struct sim_winfo *snap_find(const struct sim_snap *s, int ls, uint32_t lkid)
{
	struct sim_winfo key;

	key.w_ls = ls;
	key.w_lkid = lkid;
	return s->s_n ? bsearch(&key, s->s_info, s->s_n, sizeof(key), winfo_cmp) : NULL;
}

/* One lock of a master, chained per resource. */
struct sim_held {
	struct sim_winfo *w;
	int node;
	int next;
};

static bool is_held(const struct sim_winfo *w)
{
	return w->w_is_master && (w->w_status == DLM_LKSTS_GRANTED ||
				  w->w_status == DLM_LKSTS_CONVERT);
}

/*
 * The other mode a converting lock may really hold at a new master that
 * is rebuilding its queues (its lockspace does not run), or IV.  The
 * conversion was in flight to the dead master, which may have done it
 * and granted other locks against the result without its owner hearing:
 * a PR <-> CW conversion may have been granted (the mode asked for), a
 * CONVDEADLK one demoted to NL.  The new master settles which, from the
 * locks granted against it, before it grants anything
 * (dlm_recover_conversions); until then the owner's copy shows the old
 * mode, so safety is judged against either.  Once the lockspace runs
 * every lock's mode is settled and judged exactly.
 */
static int mode_unsettled(const struct sim_winfo *w)
{
	if (w->w_running || w->w_status != DLM_LKSTS_CONVERT)
		return DLM_LOCK_IV;
	if ((w->w_grmode == DLM_LOCK_PR && w->w_rqmode == DLM_LOCK_CW) ||
	    (w->w_grmode == DLM_LOCK_CW && w->w_rqmode == DLM_LOCK_PR))
		return w->w_rqmode;
	if (w->w_exflags & DLM_LKF_CONVDEADLK)
		return DLM_LOCK_NL;
	return DLM_LOCK_IV;
}

static const char *status_str(int st)
{
	switch (st) {
	case DLM_LKSTS_NONE: return "in-flight";
	case DLM_LKSTS_WAITING: return "waiting";
	case DLM_LKSTS_GRANTED: return "granted";
	case DLM_LKSTS_CONVERT: return "converting";
	}
	return "?";
}

/* The request flags of the lock a master sees (the owner's model lock). */
static bool request_flags(struct sim *sim, int node, const struct sim_winfo *w,
			  uint32_t *flags)
{
	const struct sim_lock *lk;
	int owner = node;
	uint32_t lkid = w->w_lkid;

	if (w->w_nodeid != sim->nodes[node].n_id) {
		if (w->w_nodeid < 1 || w->w_nodeid > sim->nnodes)
			return false;
		owner = (int)w->w_nodeid - 1;
		lkid = w->w_remid;
	}
	lk = lock_find(sim, owner, w->w_ls, lkid);
	if (!lk || lk->l_leaving)
		return false;	/* purged (lock_leave): as a lock it does not know */
	*flags = lk->l_req_flags;
	return true;
}

/* ------------------------------------------------------------ order */

/* The flags of w's latest request: the owner's model if it knows the lock,
 * else what the engine recorded (an orphan's, an adopted lock's). */
static uint32_t lock_flags(struct sim *sim, int node, const struct sim_winfo *w)
{
	uint32_t flags;

	return request_flags(sim, node, w, &flags) ? flags : w->w_exflags;
}

static bool is_queued(const struct sim_winfo *w)
{
	return w->w_status == DLM_LKSTS_WAITING || w->w_status == DLM_LKSTS_CONVERT;
}

/* w's entry in its master's previous walk, if it was a master entry of
 * the same resource then. */
static const struct sim_winfo *prev_entry(struct sim *sim, int node,
					  const struct sim_winfo *w)
{
	const struct sim_node *n = &sim->nodes[node];
	const struct sim_winfo *pl = snap_find(&n->n_snap[n->n_cur ^ 1], w->w_ls, w->w_lkid);

	/* --remaster: a process copy that became a lock on its own node's
	 * queues while the lockspace ran (a resource moved here,
	 * core/remaster.c) keeps its place and state: it is not a new
	 * arrival (one that a recovery made so is judged as recovery's) */
	return pl && pl->w_res == w->w_res &&
	       (pl->w_is_master || (sim->opts->o_remaster && pl->w_running &&
				    w->w_running)) ? pl : NULL;
}

/* The key a lock entering one of r's queues at 'node' in this step gets:
 * behind everything (the step's key), or with HEADQUE ahead of every lock
 * already on that queue; while the lockspace does not run (a new master
 * rebuilding its queues), the recovery's key, the same for all of them. */
static int64_t entry_key(struct sim *sim, const struct sim_held *held, int head,
			 int node, int status, uint32_t flags, bool running)
{
	int64_t key = (int64_t)sim->step * 2 + 2, min = INT64_MAX;
	int k;

	if (!running)
		return sim->nodes[node].n_rec_key[held[head].w->w_ls];
	if (!(flags & DLM_LKF_HEADQUE))
		return key;
	for (k = head; k >= 0; k = held[k].next) {
		const struct sim_winfo *q = held[k].w;

		if (held[k].node == node && q->w_status == status && !q->w_qnew &&
		    q->w_qkey < min)
			min = q->w_qkey;
	}
	return min == INT64_MAX ? key : min - 1;
}

/* --repoint: a resource moved to 'node' in this step, its queues rebuilt
 * from the old master's records and the node's own locks: their order
 * there is the old master's, which the keys (taken per node) do not
 * carry, so they all enter afresh, in a tie (order unknown), and the
 * step's grants are not judged (check_queue_order). */
static bool moved_now(const struct sim *sim, int node, const struct sim_winfo *w)
{
	return sim->opts->o_repoint && w->w_is_master &&
	       sim->nodes[node].n_moved_step == sim->step;
}

/* Give every queued lock of one resource (chain 'head') its queue key:
 * kept from the previous walk while it stays on the same queue of the
 * same master, new when it entered one. */
static void order_keys(struct sim *sim, struct sim_held *held, int head)
{
	int k, pass;

	/* first the locks that stayed, then the new ones (HEADQUE ones go
	 * ahead of those that stayed) */
	for (pass = 0; pass < 2; pass++)
		for (k = head; k >= 0; k = held[k].next) {
			struct sim_winfo *w = held[k].w;
			const struct sim_winfo *pl;

			if (!is_queued(w))
				continue;
			pl = prev_entry(sim, held[k].node, w);
			if (pass == 0) {
				w->w_qnew = !pl || pl->w_status != w->w_status ||
					    moved_now(sim, held[k].node, w);
				if (!w->w_qnew)
					w->w_qkey = pl->w_qkey;
			} else if (w->w_qnew) {
				w->w_qkey = entry_key(sim, held, head, held[k].node,
						      w->w_status,
						      lock_flags(sim, held[k].node, w),
						      w->w_running);
			}
		}
}

static void order_fail(struct sim *sim, int node, const struct sim_winfo *l,
		       const char *how, uint32_t flags, const struct sim_winfo *q)
{
	char r[200];

	sim_fail(sim, "ORDER: master n%d of %s granted %s %08x (now %s, flags %x) "
		 "while %08x (%s %s->%s), queued ahead of it, stays blocked",
		 node + 1, sim_res_str(sim, l->w_res, r, sizeof(r)), how, l->w_lkid,
		 sim_mode_str(l->w_grmode), flags, q->w_lkid, status_str(q->w_status),
		 sim_mode_str(q->w_grmode), sim_mode_str(q->w_rqmode));
}

/*
 * Queue order, for one resource (chain 'head'), judged by what changed at
 * its master since the previous walk (one step).  A lock granted in this
 * step must not have passed a lock that was queued ahead of it and is
 * still queued after the step (it was never grantable in the step, so
 * the rules kept the later one waiting too):
 *
 *   a new request (from the wait queue, or at once on arrival), unless
 *   EXPEDITE or NOORDER: no conversion may stay queued, and no waiter
 *   with a lower key (older; a NOORDER one too: it holds its place);
 *   a conversion from the convert queue with QUECVT: no conversion with
 *   a lower key may stay queued;
 *   a conversion granted on arrival with QUECVT (HEADQUE puts it at the
 *   head, so not then): no conversion queued before the step may stay.
 *
 * Conversions without QUECVT are granted whenever they fit, regardless of
 * the convert queue (the engine's rule, core/lock.c), so their order is
 * not judged.  (The established DLM is stricter here: once queued, such a
 * conversion waits for the ones ahead of it too.  Judging that rule
 * found no difference in thousands of seeds, but it is not the engine's
 * documented rule, so it is not asserted.)  CONVDEADLK: a demoted lock
 * keeps its place (its granted mode drops to NL, it stays queued); a
 * conversion cancelled by a deadlock goes back to its old mode, which is
 * no grant.  A key is the step in which the lock entered its queue, as
 * seen here: several locks entering in one step tie (their order is not
 * known from outside), and so do all locks a new master rebuilt while its
 * lockspace did not run (recovery resends them in any order); locks that
 * arrive after the recovery go behind all of them.  Grants are judged
 * only between two walks of a running lockspace: the step that finishes
 * a recovery grants what the rebuilt queues allow, in an order the
 * outside cannot know.
 */
static void check_queue_order(struct sim *sim, const struct sim_held *held, int head)
{
	int k, j;

	for (k = head; k >= 0 && !sim->failed; k = held[k].next) {
		const struct sim_winfo *l = held[k].w, *pl;
		int node = held[k].node;
		uint32_t flags;
		int64_t key;
		bool conv, arrived;

		if (l->w_status != DLM_LKSTS_GRANTED || !l->w_running ||
		    !sim->nodes[node].n_ran_prev[l->w_ls] ||
		    moved_now(sim, node, l))
			continue;
		pl = prev_entry(sim, node, l);
		if (pl && pl->w_status == DLM_LKSTS_GRANTED) {
			if (pl->w_grmode == l->w_grmode)
				continue;	/* nothing new (or a same-mode conversion) */
			conv = true;		/* converted on arrival */
			arrived = true;
		} else if (pl && pl->w_status == DLM_LKSTS_CONVERT) {
			if (pl->w_grmode == l->w_grmode)
				continue;	/* cancelled, or demoted and cancelled */
			conv = true;
			arrived = false;
		} else {
			conv = false;		/* a new request */
			arrived = !pl || pl->w_status != DLM_LKSTS_WAITING;
		}
		flags = lock_flags(sim, node, l);
		if (flags & DLM_LKF_EXPEDITE)
			continue;
		if (conv && !(flags & DLM_LKF_QUECVT))
			continue;
		if (!conv && (flags & DLM_LKF_NOORDER))
			continue;
		if (conv && arrived && (flags & DLM_LKF_HEADQUE))
			continue;
		key = arrived ? entry_key(sim, held, head, node,
					  conv ? DLM_LKSTS_CONVERT : DLM_LKSTS_WAITING,
					  flags, true) : pl->w_qkey;
		for (j = head; j >= 0; j = held[j].next) {
			const struct sim_winfo *q = held[j].w;

			if (held[j].node != node || q == l || !is_queued(q))
				continue;
			if (conv) {
				if (q->w_status != DLM_LKSTS_CONVERT)
					continue;
				if (arrived ? q->w_qnew : q->w_qkey >= key)
					continue;
			} else if (q->w_status == DLM_LKSTS_WAITING && q->w_qkey >= key) {
				continue;
			}
			order_fail(sim, node, l, conv ? (arrived ? "QUECVT conversion on arrival" :
							 "QUECVT conversion") :
				   arrived ? "new request on arrival" : "waiting request",
				   flags, q);
			return;
		}
	}
}

/* Could w's request be granted against every other held lock of its
 * resource (chain 'head')?  The requested mode, or an ALTPR/ALTCW one. */
static bool grantable(struct sim *sim, const struct sim_held *held, int head,
		      const struct sim_winfo *w, uint32_t flags)
{
	int modes[3] = { w->w_rqmode, DLM_LOCK_IV, DLM_LOCK_IV }, m, k;

	if (flags & DLM_LKF_ALTPR)
		modes[1] = DLM_LOCK_PR;
	if (flags & DLM_LKF_ALTCW)
		modes[2] = DLM_LOCK_CW;
	(void)sim;
	for (m = 0; m < 3; m++) {
		bool ok = modes[m] >= 0;

		for (k = head; k >= 0 && ok; k = held[k].next) {
			const struct sim_winfo *o = held[k].w;

			if (o == w || !is_held(o))
				continue;
			if (!sim_compat(o->w_grmode, modes[m]) &&
			    sim_ranges_overlap(&o->w_grrange, &w->w_rqrange))
				ok = false;
		}
		if (ok)
			return true;
	}
	return false;
}

/* After a step nothing grantable may wait: a conversion without QUECVT
 * that fits, the head of the convert queue (if every conversion fits,
 * whichever is the head fits), or, with no conversion queued, the head of
 * the wait queue (likewise) or a NOORDER waiter that fits. */
static void check_stuck(struct sim *sim, const struct sim_held *held, int head)
{
	const struct sim_winfo *bad = NULL, *w;
	unsigned int nconv = 0, nconv_fit = 0, nwait = 0, nwait_fit = 0;
	int k, node = held[head].node;
	char r[200];

	for (k = head; k >= 0; k = held[k].next)
		if (!held[k].w->w_running)
			return;		/* held for recovery: it waits, rightly */
	for (k = head; k >= 0; k = held[k].next) {
		uint32_t flags = 0;
		bool fit;

		w = held[k].w;
		if (w->w_status != DLM_LKSTS_CONVERT && w->w_status != DLM_LKSTS_WAITING)
			continue;
		if (!request_flags(sim, held[k].node, w, &flags))
			return;		/* an orphan's or a purged lock: unknown */
		fit = grantable(sim, held, head, w, flags);
		if (w->w_status == DLM_LKSTS_CONVERT) {
			nconv++;
			nconv_fit += fit;
			if (fit && !(flags & DLM_LKF_QUECVT))
				bad = w;
		} else {
			nwait++;
			nwait_fit += fit;
			if (fit && (flags & DLM_LKF_NOORDER))
				bad = bad ? bad : w;
		}
	}
	if (nconv && bad && bad->w_status == DLM_LKSTS_WAITING &&
	    (sim->opts->o_avoid & AVOID_NOORDER_CONVQ))
		bad = NULL;
	if (nconv)
		bad = bad ? bad : (nconv_fit == nconv ? held[head].w : NULL);
	else if (nwait && (bad || nwait_fit == nwait))
		bad = bad ? bad : held[head].w;
	if (!bad)
		return;
	sim_fail(sim, "STUCK: master n%d of %s leaves a grantable request queued "
		 "(%u conversions, %u fit; %u waiting, %u fit; e.g. %08x %s %s->%s)",
		 node + 1, sim_res_str(sim, held[head].w->w_res, r, sizeof(r)),
		 nconv, nconv_fit, nwait, nwait_fit, bad->w_lkid,
		 status_str(bad->w_status), sim_mode_str(bad->w_grmode),
		 sim_mode_str(bad->w_rqmode));
}

void check_engines(struct sim *sim)
{
	uint32_t mark = ++sim->res_mark;
	unsigned int i, j, ls;
	struct sim_held *held = NULL;
	unsigned int nheld = 0, cap = 0;

	for (i = 0; i < sim->nnodes && !sim->failed; i++) {
		struct sim_node *n = &sim->nodes[i];
		struct sim_snap *cur = &n->n_snap[n->n_cur ^ 1];

		if (!n->n_alive)
			continue;
		cur->s_n = 0;
		for (ls = 0; ls < sim->nls; ls++) {
			struct walk_arg wa = { sim, cur, (int)ls, (int)i,
				dlm_core_ls_state(n->n_ls[ls], NULL, NULL) == DLM_LS_RUNNING };

			dlm_core_ls_walk(n->n_ls[ls], walk_cb, &wa);
		}
		/* the engine's own counts (granted modes, ranged, NOORDER)
		 * against its queues: a count off by one blocks or lets
		 * through grants long before any lock looks wrong (seed
		 * 1901 of --faults --remaster --repoint --daemon-deaths) */
		for (ls = 0; ls < sim->nls; ls++) {
			char why[256];

			if (dlm_core_ls_verify(n->n_ls[ls], why, sizeof(why)))
				sim_fail(sim, "COUNTS: n%u ls%u: %s", i + 1, ls, why);
		}
		if (cur->s_n > 1)
			qsort(cur->s_info, cur->s_n, sizeof(*cur->s_info), winfo_cmp);
		for (j = 1; j < cur->s_n; j++)
			if (!winfo_cmp(&cur->s_info[j - 1], &cur->s_info[j]))
				sim_fail(sim, "n%u walk: lock id %08x appears twice",
					 i + 1, cur->s_info[j].w_lkid);
		for (ls = 0; ls < sim->nls; ls++)
			if (dlm_core_ls_state(n->n_ls[ls], NULL, NULL) != DLM_LS_RUNNING &&
			    (n->n_ran_prev[ls] || !n->n_rec_key[ls]))
				n->n_rec_key[ls] = (int64_t)sim->step * 2 + 1;
		n->n_cur ^= 1;
	}
	if (sim->failed)
		return;

	/* resources with no lock at any master: their LVB may be tossed */
	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_snap *s = &sim->nodes[i].n_snap[sim->nodes[i].n_cur];

		for (j = 0; j < s->s_n; j++)
			if (s->s_info[j].w_is_master)
				sim->res[s->s_info[j].w_res].r_mark = mark;
	}
	for (i = 0; i < sim->nres; i++) {
		struct sim_res *r = &sim->res[i];

		if (r->r_mark != mark) {
			if (r->r_empty_since == UINT64_MAX)
				r->r_empty_since = sim->now;
		} else if (r->r_empty_since != UINT64_MAX) {
			if (sim->now - r->r_empty_since >= sim_toss_after(sim))
				lvb_maybe_reset(sim, (int)i);
			r->r_empty_since = UINT64_MAX;
		}
	}
	mark = ++sim->res_mark;

	/* pool every master's locks by resource */
	for (i = 0; i < sim->nnodes; i++) {
		struct sim_snap *s = &sim->nodes[i].n_snap[sim->nodes[i].n_cur];

		if (!sim->nodes[i].n_alive)
			continue;
		for (j = 0; j < s->s_n; j++) {
			struct sim_winfo *w = &s->s_info[j];
			struct sim_res *r;

			if (!w->w_is_master || w->w_status == DLM_LKSTS_NONE)
				continue;
			if (nheld == cap) {
				void *a;

				cap = cap ? 2 * cap : 256;
				a = realloc(held, cap * sizeof(*held));
				if (!a) {
					free(held);
					sim_fail(sim, "simulator: out of memory");
					return;
				}
				held = a;
			}
			r = &sim->res[w->w_res];
			if (r->r_mark != mark) {
				r->r_mark = mark;
				r->r_head = -1;
			}
			held[nheld].w = w;
			held[nheld].node = (int)i;
			held[nheld].next = r->r_head;
			r->r_head = (int)nheld++;
		}
	}
	for (i = 0; i < nheld && !sim->failed; i++) {
		const struct sim_winfo *a = held[i].w;
		int k;

		if (!is_held(a) || a->w_grmode <= DLM_LOCK_NL)
			continue;
		/* --avoid recovery-inflight: a lock whose unlock or down-
		 * conversion the dead master had done comes back as it was */
		if (!a->w_running && (sim->opts->o_avoid & AVOID_RECOVERY_INFLIGHT))
			continue;
		if (mode_unsettled(a) == DLM_LOCK_NL)
			continue;
		for (k = held[i].next; k >= 0; k = held[k].next) {
			const struct sim_winfo *b = held[k].w;
			char r[200];

			if (!is_held(b) || b->w_grmode <= DLM_LOCK_NL)
				continue;
			if (held[i].node != held[k].node) {
				sim_fail(sim, "SAFETY (engines): %s has granted locks on two masters, "
					 "n%d (%08x %s) and n%d (%08x %s)",
					 sim_res_str(sim, a->w_res, r, sizeof(r)), held[i].node + 1,
					 a->w_lkid, sim_mode_str(a->w_grmode), held[k].node + 1,
					 b->w_lkid, sim_mode_str(b->w_grmode));
				break;
			}
			if (sim_compat(a->w_grmode, b->w_grmode) ||
			    !sim_ranges_overlap(&a->w_grrange, &b->w_grrange))
				continue;
			if (mode_unsettled(b) == DLM_LOCK_NL ||
			    (mode_unsettled(a) >= 0 &&
			     sim_compat(mode_unsettled(a), b->w_grmode)) ||
			    (mode_unsettled(b) >= 0 &&
			     sim_compat(a->w_grmode, mode_unsettled(b))) ||
			    (mode_unsettled(a) >= 0 && mode_unsettled(b) >= 0 &&
			     sim_compat(mode_unsettled(a), mode_unsettled(b))))
				continue;
			sim_fail(sim, "SAFETY (engines): master n%d of %s grants %08x %s [%llu-%llu] "
				 "(node %u) and %08x %s [%llu-%llu] (node %u)", held[i].node + 1,
				 sim_res_str(sim, a->w_res, r, sizeof(r)),
				 a->w_lkid, sim_mode_str(a->w_grmode),
				 (unsigned long long)a->w_grrange.ra_start,
				 (unsigned long long)a->w_grrange.ra_end, a->w_nodeid,
				 b->w_lkid, sim_mode_str(b->w_grmode),
				 (unsigned long long)b->w_grrange.ra_start,
				 (unsigned long long)b->w_grrange.ra_end, b->w_nodeid);
			break;
		}
	}
	/* nothing grantable may be left queued (per resource, once: at the
	 * chain's head entry) */
	mark = ++sim->res_mark;
	for (i = 0; i < nheld && !sim->failed; i++) {
		struct sim_res *r = &sim->res[held[i].w->w_res];

		if (r->r_mark == mark)
			continue;
		r->r_mark = mark;
		order_keys(sim, held, r->r_head);
		check_queue_order(sim, held, r->r_head);
		if (!sim->failed)
			check_stuck(sim, held, r->r_head);
	}
	free(held);
	for (i = 0; i < sim->nnodes; i++)
		for (ls = 0; ls < sim->nls; ls++)
			sim->nodes[i].n_ran_prev[ls] = sim->nodes[i].n_alive &&
				dlm_core_ls_state(sim->nodes[i].n_ls[ls], NULL, NULL) ==
				DLM_LS_RUNNING;
}

void check_free(struct sim *sim)
{
	unsigned int i;

	for (i = 0; i < SIM_MAX_NODES; i++) {
		free(sim->nodes[i].n_snap[0].s_info);
		free(sim->nodes[i].n_snap[1].s_info);
	}
}


/* --------------------------------------------- the end of a recovery */

struct mkey {
	int		k_ls;
	uint32_t	k_nodeid;	/* the owner */
	uint32_t	k_lkid;		/* the owner's lock id */
	int		k_node;		/* the master holding this copy */
	const struct sim_winfo *k_w;
};

static int mkey_cmp(const void *a, const void *b)
{
	const struct mkey *x = a, *y = b;

	if (x->k_ls != y->k_ls)
		return x->k_ls < y->k_ls ? -1 : 1;
	if (x->k_nodeid != y->k_nodeid)
		return x->k_nodeid < y->k_nodeid ? -1 : 1;
	if (x->k_lkid != y->k_lkid)
		return x->k_lkid < y->k_lkid ? -1 : 1;
	return 0;
}

static bool settled(const struct sim_lock *lk)
{
	if (lk->l_gmode == DLM_LOCK_IV || lk->l_cancel_unresolved)
		return false;
	if (lk->l_orphan)
		return lk->l_op == OP_NONE && !lk->l_cancel && !lk->l_force &&
		       !lk->l_orphan_unsure && !lk->l_purge_asked;
	return lock_is_idle(lk);
}

/* --repoint: lk's master copy is on its way from the old master to the
 * new one (core/remaster.c): its MIGRATE_LOCK record is on a link, or the
 * resource's MIGRATE is.  The records that went before a MIGRATE may have
 * arrived: the new master keeps them, inert, until the MIGRATE installs
 * them, so they are on no link and in no lockdump while it is on its way.
 * (Any MIGRATE of the resource: the lock walk does not say which master
 * lk's node names, its w_nodeid is lk's own node, and the check by that
 * missed a third node's lock whose record had arrived, seed 4650 of
 * --faults --remaster --repoint --nodes 6; a record lost is caught by the
 * count MIGRATE carries, remaster.c.) */
static bool repoint_in_flight(struct sim *sim, const struct sim_lock *lk,
			      uint32_t lsid)
{
	const struct sim_res *r = &sim->res[lk->l_res];
	unsigned int f, t;

	for (f = 0; f < sim->nnodes; f++)
		for (t = 0; t < sim->nnodes; t++) {
			const struct sim_msg *sm;

			for (sm = sim->net.n_link[f][t].l_head; sm; sm = sm->m_next) {
				struct dlm_msg m;

				if (dlm_msg_decode(sm->m_data, sm->m_len, &m, NULL) ||
				    m.m_lsid != lsid)
					continue;
				if (m.m_type == DLM_MSG_MIGRATE_LOCK &&
				    m.m_nodeid == (uint32_t)lk->l_node + 1 &&
				    m.m_remid == lk->l_lkid)
					return true;
				if (m.m_type == DLM_MSG_MIGRATE &&
				    m.m_keylen == r->r_keylen &&
				    !memcmp(m.m_key, r->r_key, r->r_keylen))
					return true;
			}
		}
	return false;
}

/* --remaster: a MIGRATE of lk's resource to lk's own node is on the
 * network.  A move made after its sender finished the recovery (moves
 * run only while the lockspace runs) can still be in flight when the
 * recovery has finished everywhere: the master state, lk's master copy
 * with it, is then in the message, and lk's node masters it on arrival
 * (core/remaster.c). */
static bool moving_here(struct sim *sim, const struct sim_lock *lk)
{
	const struct sim_res *r = &sim->res[lk->l_res];
	uint32_t lsid = dlm_core_ls_id(sim->nodes[lk->l_node].n_ls[lk->l_ls]);
	unsigned int f;

	if (!sim->opts->o_remaster)
		return false;
	for (f = 0; f < sim->nnodes; f++) {
		const struct sim_msg *sm;

		for (sm = sim->net.n_link[f][lk->l_node].l_head; sm; sm = sm->m_next) {
			struct dlm_msg m;

			if (!dlm_msg_decode(sm->m_data, sm->m_len, &m, NULL) &&
			    m.m_type == DLM_MSG_MIGRATE && m.m_lsid == lsid &&
			    m.m_keylen == r->r_keylen &&
			    !memcmp(m.m_key, r->r_key, r->r_keylen))
				return true;
		}
	}
	return sim->opts->o_repoint &&
	       repoint_in_flight(sim, lk, lsid);
}

static void check_survivor(struct sim *sim, const struct sim_lock *lk,
			   const struct mkey *keys, unsigned int nkeys)
{
	const struct sim_node *n = &sim->nodes[lk->l_node];
	const struct sim_winfo *w = snap_find(&n->n_snap[n->n_cur], lk->l_ls, lk->l_lkid);
	struct mkey key, *m;
	char r[200];

	sim_res_str(sim, lk->l_res, r, sizeof(r));
	if (!w || w->w_res != lk->l_res) {
		sim_fail(sim, "RECOVERY: n%d lost lock %08x (%s %s) of a surviving %s",
			 lk->l_node + 1, lk->l_lkid, r, sim_mode_str(lk->l_gmode),
			 lk->l_orphan ? "orphan" : "client");
		return;
	}
	if (w->w_status != DLM_LKSTS_GRANTED || w->w_grmode != lk->l_gmode) {
		sim_fail(sim, "RECOVERY: n%d lock %08x on %s is %s %s, its client holds %s",
			 lk->l_node + 1, lk->l_lkid, r, status_str(w->w_status),
			 sim_mode_str(w->w_grmode), sim_mode_str(lk->l_gmode));
		return;
	}
	if (w->w_is_master)
		return;		/* mastered on its own node */
	key.k_ls = lk->l_ls;
	key.k_nodeid = n->n_id;
	key.k_lkid = lk->l_lkid;
	m = nkeys ? bsearch(&key, keys, nkeys, sizeof(key), mkey_cmp) : NULL;
	if (!m && moving_here(sim, lk))
		return;
	if (!m) {
		sim_fail(sim, "RECOVERY: no master has n%d's lock %08x (%s %s)",
			 lk->l_node + 1, lk->l_lkid, r, sim_mode_str(lk->l_gmode));
		return;
	}
	if ((m > keys && !mkey_cmp(m - 1, m)) || (m + 1 < keys + nkeys && !mkey_cmp(m + 1, m))) {
		sim_fail(sim, "RECOVERY: n%d's lock %08x (%s) has two master copies",
			 lk->l_node + 1, lk->l_lkid, r);
		return;
	}
	if (m->k_w->w_res != lk->l_res || m->k_w->w_status != DLM_LKSTS_GRANTED ||
	    m->k_w->w_grmode != lk->l_gmode)
		sim_fail(sim, "RECOVERY: master n%d has n%d's lock %08x (%s %s) as %s %s",
			 m->k_node + 1, lk->l_node + 1, lk->l_lkid, r,
			 sim_mode_str(lk->l_gmode), status_str(m->k_w->w_status),
			 sim_mode_str(m->k_w->w_grmode));
}

void check_recovered(struct sim *sim)
{
	struct mkey *keys = NULL;
	unsigned int nkeys = 0, cap = 0, i, j, b;
	for (i = 0; i < sim->nnodes && !sim->failed; i++) {
		const struct sim_node *n = &sim->nodes[i];
		const struct sim_snap *s = &n->n_snap[n->n_cur];

		if (!n->n_alive)
			continue;
		for (j = 0; j < s->s_n; j++) {
			const struct sim_winfo *w = &s->s_info[j];
			char r[200];

			if (w->w_nodeid < 1 || w->w_nodeid > sim->nnodes ||
			    !sim->nodes[w->w_nodeid - 1].n_alive) {
				sim_fail(sim, "DEPARTED: after recovery n%u still has lock %08x "
					 "(%s %s %s) of departed node %u", i + 1, w->w_lkid,
					 sim_res_str(sim, w->w_res, r, sizeof(r)),
					 status_str(w->w_status), sim_mode_str(w->w_grmode),
					 w->w_nodeid);
				break;
			}
			if (!w->w_is_master || w->w_nodeid == n->n_id)
				continue;
			if (nkeys == cap) {
				struct mkey *a;

				cap = cap ? 2 * cap : 256;
				a = realloc(keys, cap * sizeof(*a));
				if (!a) {
					sim_fail(sim, "simulator: out of memory");
					goto out;
				}
				keys = a;
			}
			keys[nkeys].k_ls = w->w_ls;
			keys[nkeys].k_nodeid = w->w_nodeid;
			keys[nkeys].k_lkid = w->w_remid;
			keys[nkeys].k_node = (int)i;
			keys[nkeys].k_w = w;
			nkeys++;
		}
	}
	if (sim->failed)
		goto out;
	if (nkeys > 1)
		qsort(keys, nkeys, sizeof(*keys), mkey_cmp);
	for (b = 0; b < SIM_LOCK_HASH && !sim->failed; b++) {
		const struct sim_lock *lk;

		for (lk = sim->lock_hash[b]; lk && !sim->failed; lk = lk->l_hnext)
			if (sim->nodes[lk->l_node].n_alive && settled(lk))
				check_survivor(sim, lk, keys, nkeys);
	}
out:
	free(keys);
}


/* ------------------------------------------- the model against the engines */

/*
 * After every step the model must know exactly the locks the engines hold
 * for its clients: each live node's own copies (not the master copies it
 * keeps for other nodes) against the model's locks of that node, by lock
 * id.  Every lock an engine has must be in the model, on the same
 * resource, in a mode the model allows (model_modes()); every lock in the
 * model must be in its engine, unless it may have gone without a word:
 * a lock its client let go of (lock_leave: purged, its force unlock in
 * flight), an orphan a remote purge was sent for, an orphan with an
 * operation in flight that may end it.  Those the engine no longer shows
 * are forgotten here, children before their parents.  A model that lost
 * or kept a lock would otherwise go unnoticed: the checks that read the
 * model (holders at client level, LVB, tokens, liveness) judge only the
 * locks it has.
 */

#define MODE_BIT(m)	(1u << ((m) + 1))	/* IV (-1) is bit 0 */

static bool may_vanish(const struct sim_lock *lk)
{
	return lk->l_leaving ||
	       (lk->l_orphan && (lk->l_purge_asked || lk->l_orphan_unsure));
}

/* The granted modes lk's copy in its engine may show now; 'master': its
 * master's copy, which may have granted what the owner hears later. */
static unsigned int model_modes(const struct sim_lock *lk, bool master)
{
	unsigned int m = MODE_BIT(lk->l_gmode);
	uint32_t fl = lk->l_op_flags;

	if (lk->l_op != OP_REQUEST && lk->l_op != OP_CONVERT)
		return m;
	/* a conversion that waits may be demoted to NL (reported later) */
	if (lk->l_op == OP_CONVERT && (fl & DLM_LKF_CONVDEADLK))
		m |= MODE_BIT(DLM_LOCK_NL);
	/* purged or orphaned with the operation in flight: it may end
	 * without an AST, in any mode the operation could produce */
	if (master || lk->l_leaving || lk->l_orphan) {
		m |= MODE_BIT(lk->l_op_mode);
		if (fl & DLM_LKF_ALTPR)
			m |= MODE_BIT(DLM_LOCK_PR);
		if (fl & DLM_LKF_ALTCW)
			m |= MODE_BIT(DLM_LOCK_CW);
		if (fl & DLM_LKF_CONVDEADLK)
			m |= MODE_BIT(DLM_LOCK_NL);
	}
	return m;
}

static void model_lock_str(struct sim *sim, const struct sim_lock *lk, char *buf, size_t len)
{
	char r[200];

	snprintf(buf, len, "n%d lock %08x (%s %s, %s%s)", lk->l_node + 1, lk->l_lkid,
		 sim_res_str(sim, lk->l_res, r, sizeof(r)), sim_mode_str(lk->l_gmode),
		 lk->l_leaving ? "purged" : lk->l_orphan ? "orphan" : "client",
		 lk->l_op == OP_NONE ? "" : lk->l_op == OP_REQUEST ? ", request pending" :
		 lk->l_op == OP_CONVERT ? ", conversion pending" : ", unlock pending");
}

/* A lock master 'node' keeps for another node, outside recoveries: the
 * owner's model has it (a master drops its copy before the owner hears
 * of an unlock, a cancel or a refusal), on that resource, in a mode the
 * model allows.  Outside recoveries on both sides: an owner that started
 * a recovery the master has not yet settles at once what it had sent a
 * departed master (lock.c dlm_recover_waiter: an unlock done), and with
 * --repoint that master may have moved the lock to a live one, whose
 * copy from the record goes only at its own grant step (remaster.c
 * dlm_remaster_unmatched; --faults --remaster --repoint --rehot 8 --ops
 * 1500 --bounce seed 1103 failed here while the master still ran the
 * event before).  A copy that outlives the recovery is caught once both
 * run the same event. */
static void check_master_copy(struct sim *sim, int node, const struct sim_winfo *w)
{
	const struct sim_node *owner;
	const struct sim_lock *lk;
	char d[300], r[200];

	if (!w->w_running || w->w_status == DLM_LKSTS_NONE || w->w_nodeid < 1 ||
	    w->w_nodeid > sim->nnodes || !sim->nodes[w->w_nodeid - 1].n_alive)
		return;
	owner = &sim->nodes[w->w_nodeid - 1];
	if (owner->n_event != sim->nodes[node].n_event || !owner->n_ls[w->w_ls] ||
	    dlm_core_ls_state(owner->n_ls[w->w_ls], NULL, NULL) != DLM_LS_RUNNING)
		return;
	lk = lock_find(sim, (int)w->w_nodeid - 1, w->w_ls, w->w_remid);
	if (!lk) {
		sim_fail(sim, "MODEL: master n%d holds n%u's lock %08x (%s %s %s) that "
			 "the model does not know", node + 1, w->w_nodeid, w->w_remid,
			 sim_res_str(sim, w->w_res, r, sizeof(r)), status_str(w->w_status),
			 sim_mode_str(w->w_grmode));
		return;
	}
	if (w->w_res == lk->l_res && (model_modes(lk, true) & MODE_BIT(w->w_grmode)))
		return;
	model_lock_str(sim, lk, d, sizeof(d));
	if (w->w_res != lk->l_res)
		sim_fail(sim, "MODEL: %s is on %s at its master n%d", d,
			 sim_res_str(sim, w->w_res, r, sizeof(r)), node + 1);
	else
		sim_fail(sim, "MODEL: %s is %s %s at its master n%d", d,
			 status_str(w->w_status), sim_mode_str(w->w_grmode), node + 1);
}

/* One lock of node's walk: its own copy against the model (a master copy
 * of another node's lock: check_master_copy()).  False once failed. */
static bool check_walk_entry(struct sim *sim, int node, const struct sim_winfo *w)
{
	const struct sim_lock *lk;
	char d[300], r[200];

	if (w->w_nodeid != sim->nodes[node].n_id) {
		check_master_copy(sim, node, w);
		return !sim->failed;
	}
	lk = lock_find(sim, node, w->w_ls, w->w_lkid);
	if (!lk) {
		sim_fail(sim, "MODEL: n%d's engine holds lock %08x (%s %s %s) that the "
			 "model does not know", node + 1, w->w_lkid,
			 sim_res_str(sim, w->w_res, r, sizeof(r)), status_str(w->w_status),
			 sim_mode_str(w->w_grmode));
		return false;
	}
	if (w->w_res == lk->l_res && (model_modes(lk, false) & MODE_BIT(w->w_grmode)))
		return true;
	model_lock_str(sim, lk, d, sizeof(d));
	if (w->w_res != lk->l_res)
		sim_fail(sim, "MODEL: %s is on %s in its engine", d,
			 sim_res_str(sim, w->w_res, r, sizeof(r)));
	else
		sim_fail(sim, "MODEL: %s is %s %s in its engine", d,
			 status_str(w->w_status), sim_mode_str(w->w_grmode));
	return false;
}

void check_model(struct sim *sim)
{
	struct sim_lock **gone = NULL, *lk;
	unsigned int ngone = 0, cap = 0, i, j;
	bool progress;
	char d[300];

	/* every lock an engine holds is in the model */
	for (i = 0; i < sim->nnodes && !sim->failed; i++) {
		const struct sim_snap *s = &sim->nodes[i].n_snap[sim->nodes[i].n_cur];

		for (j = 0; sim->nodes[i].n_alive && j < s->s_n; j++)
			if (!check_walk_entry(sim, (int)i, &s->s_info[j]))
				break;
	}
	/* every lock in the model is in its engine, or may have gone */
	for (lk = sim->locks; lk && !sim->failed; lk = lk->l_anext) {
		const struct sim_node *n = &sim->nodes[lk->l_node];

		if (!n->n_alive || snap_find(&n->n_snap[n->n_cur], lk->l_ls, lk->l_lkid))
			continue;
		if (!may_vanish(lk)) {
			model_lock_str(sim, lk, d, sizeof(d));
			sim_fail(sim, "MODEL: %s is not in its engine", d);
			break;
		}
		if (ngone == cap) {
			struct sim_lock **a;

			cap = cap ? 2 * cap : 16;
			a = realloc(gone, cap * sizeof(*a));
			if (!a) {
				sim_fail(sim, "simulator: out of memory");
				break;
			}
			gone = a;
		}
		gone[ngone++] = lk;
	}
	/* forget those gone, children first; lock_forget() reports a
	 * parent gone before a child */
	do {
		progress = false;
		for (i = 0; i < ngone; i++)
			if (gone[i] && !gone[i]->l_nchildren) {
				sim_trace(sim, "gone n%d ls%d lk %08x", gone[i]->l_node + 1,
					  gone[i]->l_ls, gone[i]->l_lkid);
				lock_forget(sim, gone[i]);
				gone[i] = NULL;
				progress = true;
			}
	} while (progress);
	for (i = 0; i < ngone; i++)
		if (gone[i])
			lock_forget(sim, gone[i]);
	free(gone);
}

/* At the end of a run nothing may be left in the model either. */
void check_model_empty(struct sim *sim)
{
	const struct sim_lock *lk;
	char d[300];

	for (lk = sim->locks; lk && !sim->failed; lk = lk->l_anext)
		if (sim->nodes[lk->l_node].n_alive) {
			model_lock_str(sim, lk, d, sizeof(d));
			sim_fail(sim, "MODEL: %s is still in the model after the drain", d);
		}
}
