/*
 * core/recover.c - recovery of a lockspace after a membership change.
 *
 * The cluster glue stops the lockspace on every member (locking requests
 * and incoming lock messages are held from then on), agrees on the new
 * member list and an event number E, and starts recovery for E on every
 * member.  The engines then walk these steps together; each ends with a
 * barrier: a node sends RC_STATUS(E, step) to every other member and goes
 * on once it has heard the same from all of them.  Because links are FIFO,
 * everything a node sent in a step has arrived wherever it went before its
 * status for that step does.  The steps are one table, recovery_steps[]
 * below, run by recover_run() top to bottom; it is the kernel's
 * ls_recover() order (fs/dlm/recoverd.c), with the purge and the waiters
 * moved into the first step:
 *
 *   nodes   (kernel: recover_members, waiters_pre, purge)
 *           Forget what the departed nodes were doing: drop messages held
 *           from them; operations in flight to them are kept to redo at
 *           finish; their master copies are purged (an EX/PW lock purged
 *           marks the resource's LVB invalid: the writer may have died
 *           holding a newer value); resources whose master departed are
 *           marked for a new master if we hold locks on them, forgotten
 *           otherwise; unused copies of resources mastered elsewhere
 *           are dropped (unused ones we master stay, LVB and all); all
 *           master lookups in flight are forgotten.         barrier NODES
 *   directory (kernel: recover_directory)
 *           Every node registers each root resource it masters with the
 *           resource's directory node under the new membership
 *           (RC_DIR_ADDS: the keys for one directory node batched, up
 *           to a message's size, as the kernel sends its names in
 *           buffers); sub-resources have no record.  In a partial
 *           rebuild (below) only the roots whose directory node
 *           departed are registered.                        barrier DIR
 *   masters (kernel: recover_masters)
 *           For each root resource marked above, ask its directory node
 *           who masters it now (RC_LOOKUP); the first to ask becomes the
 *           master, as in normal operation.  A directory node holds a
 *           lookup until it passed the DIR barrier itself, so its records
 *           are complete; we wait for our answers.  (A marked child marks
 *           its ancestors, so its root is asked for.)       barrier MASTERS
 *   locks   (kernel: recover_locks)
 *           Each marked sub-resource takes its root's new master (all
 *           roots are settled now; resource.c).  Resend every lock we
 *           hold on a resource whose master changed to the new master
 *           (RC_LOCK) with its state, modes, ranges and LVB, a parent's
 *           before its children's (a child's carries the parent's key,
 *           which the new master then knows); the new master rebuilds
 *           its queues (a lock sent twice, by an aborted earlier attempt,
 *           is recognised by node and id).
 *           A resource's new master is adopted only when all its locks are
 *           acknowledged, so an aborted attempt resends them. barrier LOCKS
 *   done    (kernel: recover_rsbs, recover_grant)
 *           New masters recover each LVB (from a lock held in PR or above,
 *           else the copy with the newest sequence number, compared
 *           as serial numbers across the wrap, marked invalid) and every
 *           master grants what can now be granted, sending completion
 *           and blocking ASTs as usual (held by their receivers until
 *           finish).                                        barrier DONE
 *
 * Then recovery_done(E) is reported, and dlm_core_ls_finish(E) resumes
 * locking: held messages are processed in arrival order, kept operations
 * are redone, requests that wait for a master look it up again.
 *
 * QUIET STEPS.  Each barrier is a round in which every member must run
 * and hear from every other: (s - 1) x s status messages among s
 * survivors, and on a machine where the members share cores, a wait for
 * the slowest to be scheduled (at 16 nodes, 15 daemons on 2 cores).  The
 * masters and locks steps have something to do only where a resource
 * lost its master and a survivor holds a lock on it (RESF_RECOVER_MASTER,
 * set by step_start and nowhere else): the lookups, the resends and
 * their replies are all such a resource's.  So each member says, with
 * its status of step nodes, whether it has any (DLM_MF_RC_NOTHING: none,
 * roots or children).  Once the NODES barrier is passed every member has
 * every member's word, the same on all of them (a member's NODES status
 * is the first of the event it sends, and links are FIFO).  If nobody
 * has any, nobody sends an RC_LOOKUP, RC_LOCK or a reply to one in this
 * event, and the MASTERS and LOCKS barriers order nothing: the steps
 * still run (step_masters sweeps the directory, commit_masters has
 * nothing to commit) but are not announced, and nobody waits for them:
 * a member goes from the DIR barrier through to step done, whose
 * barrier (DONE: every new master has granted before anyone resumes)
 * stays, as do NODES (everyone has started this event and purged before
 * anyone registers: a DIR_ADD of an event the receiver has not started
 * is ignored) and DIR (the directory is complete before it is swept and
 * asked).  Three rounds instead of five when a node that dies took only
 * its own resources' locks with it (bench/bench-recovery, "barrier
 * rounds").  A member that says nothing (the flag is 0: an engine before
 * this change) is taken as having something: the five rounds.  So is a
 * member with remastering's re-point protocol on: it marks resources at
 * the directory step too, after its word (core/remaster.c, MOVED held).
 *
 * PARTIAL DIRECTORY (issue 18).  The full rebuild re-registers every root
 * with its directory node and then sweeps every record no master
 * confirmed: at 16 nodes and 1M locks, 875,000 records, although the
 * directory is placed by rendezvous hashing (core/resource.c,
 * "Directory") and a death moves only the names the dead node directed,
 * about 1/N of them.  So when nobody joined, a directory node keeps the
 * records it has, masters register only the roots whose directory node
 * departed (dir_moved: the last finished event's members chose a
 * departed one), and nothing is swept; what the death or the stop made
 * wrong among the kept records is repaired at the directory step
 * instead, which is the whole argument.  A kept record is right at the
 * stop unless a message about it was in flight, since every record
 * change is a message's effect (or a local call on the directory node
 * itself, which is never in flight); the messages that change a record
 * are LOOKUP (and its reply), REMOVE, the remastering ones, and the
 * recovery ones of the last recovery, which finished.  Case by case:
 *
 *   - A record naming a departed master (its resource needs a new one,
 *     or a departed requester's lookup made it): forgotten at the
 *     directory step (dlm_dir_drop_departed), so the masters step's
 *     RC_LOOKUP makes the first asker master, as after a full rebuild.
 *     (sim-broken.test: partial-keep-dead.)
 *   - A lookup answered before the stop whose answer the requester R
 *     never took (dropped: it is of the last generation): the record
 *     names R, which masters nothing.  R knows each such lookup (its
 *     rsb had RESF_LOOKUP at step_start; RESF_RC_DROP from there) and,
 *     after the NODES barrier, tells the directory node to drop the
 *     record if it names R (RC_DIR_DROP; done in place when R directs
 *     the name).  R's RC_DIR_DROP precedes its DIR status on the link,
 *     so it is done before the record is asked again (RC_LOOKUP waits
 *     for the DIR barrier); R looks up afresh at finish.  A lookup that
 *     had not been answered at the stop is dropped at finish as stale
 *     and made no record.  (tests/test-core-recover.c
 *     test_recover_partial_lost_lookup; partial-keep-orphans.)
 *   - A REMOVE in flight at the stop: the master M freed the resource,
 *     the directory node holds the REMOVE and would drop it at finish as
 *     stale, leaving a record naming a master with no resource (a
 *     request sent there would be refused and looked up again for
 *     ever).  Every REMOVE M sent before its stop is here before M's
 *     NODES status, so at the directory step the directory node does
 *     the REMOVEs of the last generation it holds (held_removes): the
 *     record goes if it still names M.  M cannot have become its master
 *     again meanwhile: only a lookup does that, and one sent after the
 *     REMOVE is answered after it (FIFO) or dropped as stale.
 *     (test_recover_partial_held_remove.)
 *   - A remastering move in flight (core/remaster.c: MIGRATE to the new
 *     master, DIR_MOVE to the directory node; either may have arrived
 *     without the other, the mover may be the dead node): not argued.
 *     A node with remastering on, or that handled any remastering
 *     message since the last full rebuild (ls_rm_seen), votes no, and
 *     the rebuild is full, which repairs it as before.  A move whose
 *     messages reached nobody left nothing to repair.
 *   - A node joining: placement changes for the names the new node now
 *     outweighs everybody for, and the joiner has no records; not
 *     argued: a joiner votes no (its members before are not ours), and
 *     any member whose members before do not include all of ours too.
 *   - Several deaths in one event: the same, each departed node's names
 *     moving to their heaviest survivor (dir_moved asks the members of
 *     the last finished event, whoever of them departed).
 *   - A recovery that restarts mid-way (a stop or a newer start before
 *     finish): the aborted attempt may have swept, registered or looked
 *     up part of the way; not argued: a node votes yes only if its last
 *     recovery finished and nothing started since (ls_rc_clean, set at
 *     finish, cleared by start), so the retry is full.  A lockspace just
 *     created counts as having finished event 0 with the members it was
 *     created with, which is right only if they all created it at once
 *     (dlm_core_ls_create); a node joining creates it with itself alone
 *     (plugin/client.c, dlm-sim's joins), so its members before are not
 *     ours and it votes no: a daemon that died and came back can never
 *     pass for a member that kept its records, even at event 0.
 *   - Members that disagree about the past: the decision must be the
 *     same everywhere (a directory node that keeps records while a
 *     master registers only what moved is fine; one that sweeps while
 *     masters register only what moved loses records).  So each member
 *     votes in its NODES status (DLM_MF_RC_PARTIAL, with its last
 *     finished event and a hash of that event's members) and the
 *     rebuild is partial only if every member voted yes for the same
 *     event and members (all_partial, after the NODES barrier, where
 *     every member has every member's word, as for QUIET STEPS).  An
 *     engine before this change sends no vote: full.
 *
 * The directory step's sweep (sweep_dir) is skipped in a partial
 * rebuild: the kept records are right, the registered ones new, and a
 * survivor directs no name it did not direct before (rendezvous), so
 * it holds no record it should not.  The masters, locks and done steps
 * are unchanged.  A death at N nodes then sends about 1/N of the
 * records (test_recover_partial_dir: 7 nodes, 45 of 289;
 * bench/bench-recovery).
 *
 * NARROW STEPS (issue 18).  The steps after step_start looked at every
 * resource the survivor has (the directory step asked each whether its
 * directory node moved, masters, locks, commit and grant each walked
 * them all, remastering's hooks walked every lock on them, finish
 * walked every resource again for requests waiting for a master),
 * though a death touches only what the dead node mastered, directed or
 * held.  The purge takes only the departed nodes' master copies, and a
 * partial rebuild forgets only the records naming them: each node's are
 * on its own list (resource.c, "By node"), kept as they are made and
 * freed.  When our vote for a partial rebuild is yes, step_start, which
 * still looks at every resource once (what would spare that walk:
 * lists of the resources by master, of our roots by directory node, of
 * those with a lookup in flight, kept on every change of res_nodeid;
 * not done), keeps on ls_rec_rsbs only what a later step can have to do
 * with (touched(): a departed master, ours or an ancestor's; a lookup
 * in flight; a purged lock; requests waiting for a master; remastering's
 * marks; a root of ours whose directory node departed), and every
 * resource aside on ls_rec_all.  Why that is enough: every later step
 * acts only on resources with one of those marks or that take an
 * RC_LOCK, a MIGRATE or a child's RC_LOCK (each tracked as it comes,
 * dlm_recover_track_rsb), and a partial rebuild registers only the
 * roots whose directory node departed; a request made while the
 * lockspace does not run puts its resource on the list too
 * (dlm_recover_held_lookup; without memory for it, finish walks every
 * resource as before).  If the members' votes make the rebuild full
 * after all (one voted no), the directory step first puts every
 * resource of ls_rec_all on the list: from there it is the full
 * recovery, every root registered.  A vote of no (a join, remastering,
 * a restarted recovery) keeps every resource on the list from the
 * start.  (tests/test-core-recover.c test_recover_narrow,
 * test_recover_narrow_then_full; sim-broken.test: narrow-miss-moved.)
 *
 * The lockspace's states (ls_state, changed only by set_state(), which
 * logs each change, and any change not listed here as a bug):
 *
 *   RUNNING     --stop-->                   STOPPED
 *   STOPPED     --start(E)-->               RECOVERING
 *   RECOVERING  --last barrier passed-->    RECOVERED
 *   RECOVERING  --stop, or a step failed--> STOPPED
 *   RECOVERED   --finish(E)-->              RUNNING
 *   RECOVERED   --start(E' > E)-->          RECOVERING
 *   RECOVERED   --stop-->                   STOPPED
 *
 * (a start of a newer event while RECOVERING restarts it in place), and
 * what holds in each:
 *
 *   RUNNING     locking runs; ls_rstep is none.
 *   STOPPED     requests and lock messages are held; recovery messages
 *               are ignored; ls_rstep is none, or the step that failed.
 *   RECOVERING  recovery for ls_event walks the table, in ls_rstep.
 *   RECOVERED   every member passed the last barrier; waits for finish.
 *
 * A stop or a newer event aborts a recovery in progress; every step is
 * safe to run again from the start.  Messages of another event are
 * ignored.
 *
 * Out of memory.  A step, or a recovery message, that finds no memory
 * (RC_DIR_ADDS' records, RC_LOCK's master copy, a message to defer; a
 * held MIGRATE's room on the steps' list, remaster.c install; a new
 * master's search of a convert queue longer than 32 for deadlocks,
 * step_grant) fails
 * the recovery here: recovery_failed(), the lockspace stays stopped and
 * the glue runs recovery again under a newer event on every member, as
 * for any failure of a step; dropping the message instead would leave a
 * directory or a queue short of what it said, for good.  A lock message
 * that arrives while the lockspace does not run and cannot even be held
 * is not taken (dlm_core_receive -ENOMEM): the transport offers it again
 * later, in order.  A start that finds no memory changes nothing and
 * fails like a step.  Known limits: an LVB that lived only on a departed master (no
 * surviving holder in PR or above) cannot be recovered: it is marked
 * invalid (DLM_SBF_VALNOTVALID), never silently stale.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

static const char *step_name(enum dlm_rstep step);

const char *dlm_ls_state_str(enum dlm_ls_state state)
{
	switch (state) {
	case DLM_LS_RUNNING:
		return "running";
	case DLM_LS_STOPPED:
		return "stopped";
	case DLM_LS_RECOVERING:
		return "recovering";
	case DLM_LS_RECOVERED:
		return "recovered";
	}
	return "?";
}

enum dlm_ls_state dlm_core_ls_state(const struct dlm_ls *ls, uint32_t *event,
				    const char **step)
{
	if (event)
		*event = ls->ls_event;
	if (step)
		*step = step_name(ls->ls_rstep);
	return ls->ls_state;
}

/*
 * Every change of ls_state and ls_rstep goes through these two, which
 * report it to the glue's log (at debug level: the glue decides whether
 * to keep it; the engine prints nothing itself).
 */
static void set_state(struct dlm_ls *ls, enum dlm_ls_state state)
{
	/* the transitions the diagram at the top of this file draws */
	static const bool legal[4][4] = {
		[DLM_LS_RUNNING][DLM_LS_STOPPED] = true,
		[DLM_LS_STOPPED][DLM_LS_RECOVERING] = true,
		[DLM_LS_RECOVERING][DLM_LS_STOPPED] = true,
		[DLM_LS_RECOVERING][DLM_LS_RECOVERED] = true,
		[DLM_LS_RECOVERED][DLM_LS_STOPPED] = true,
		[DLM_LS_RECOVERED][DLM_LS_RECOVERING] = true,
		[DLM_LS_RECOVERED][DLM_LS_RUNNING] = true,
	};

	if (ls->ls_state == state)
		return;
	if (!legal[ls->ls_state][state])
		log_ls(ls, DLM_LOG_ERR, "bug: state %s -> %s is not a transition",
		       dlm_ls_state_str(ls->ls_state), dlm_ls_state_str(state));
	else
		log_ls(ls, DLM_LOG_DEBUG, "state %s -> %s (event %u)",
		       dlm_ls_state_str(ls->ls_state), dlm_ls_state_str(state),
		       ls->ls_event);
	ls->ls_state = state;
}

static void set_rstep(struct dlm_ls *ls, enum dlm_rstep step)
{
	if (ls->ls_rstep == step)
		return;
	log_ls(ls, DLM_LOG_DEBUG, "recovery %u: step %s -> %s", ls->ls_event,
	       step_name(ls->ls_rstep), step_name(step));
	ls->ls_rstep = step;
}

int dlm_core_ls_recovery_error(const struct dlm_ls *ls, const char **step)
{
	if (step)
		*step = ls->ls_rc_error ? step_name(ls->ls_rstep) : NULL;
	return ls->ls_rc_error;
}

void dlm_recover_init_ls(struct dlm_ls *ls)
{
	dlm_list_init(&ls->ls_held);
	dlm_list_init(&ls->ls_rc_deferred);
	dlm_list_init(&ls->ls_resend);
	/* created running: event 0 with its members finished (core.h
	 * dlm_core_ls_create; PARTIAL DIRECTORY) */
	ls->ls_rc_clean = true;
}

/* The lists of resources the steps look at go (NARROW STEPS). */
static void rec_free(struct dlm_ls *ls)
{
	free(ls->ls_rec_rsbs);
	ls->ls_rec_rsbs = NULL;
	ls->ls_rec_nrsbs = 0;
	ls->ls_rec_cap = 0;
	free(ls->ls_rec_all);
	ls->ls_rec_all = NULL;
	ls->ls_rec_nall = 0;
}

void dlm_recover_free_ls(struct dlm_ls *ls)
{
	dlm_held_drop(&ls->ls_held, ls, NULL);
	dlm_held_drop(&ls->ls_rc_deferred, ls, NULL);
	rec_free(ls);
	free(ls->ls_prev_members);
	ls->ls_prev_members = NULL;
	ls->ls_nprev_members = 0;
}

/* ------------------------------------------------------------------ */
/* helpers                                                            */
/* ------------------------------------------------------------------ */

static bool fault(const struct dlm_ls *ls, enum dlm_core_fault f)
{
	return ls->ls_core->core_fault == f;
}

static bool departed(const struct dlm_ls *ls, uint32_t nodeid)
{
	if (fault(ls, DLM_FAULT_KEEP_DEAD_MASTER))
		return false;
	return !dlm_ls_is_member(ls, nodeid);
}

/* A snapshot of every rsb, so steps may free or change them while
 * iterating. */
struct rsb_array {
	struct dlm_rsb **ra_v;
	size_t ra_n;
};

static void collect(void *arg, struct dlm_hnode *n)
{
	struct rsb_array *a = arg;

	a->ra_v[a->ra_n++] = dlm_container_of(n, struct dlm_rsb, res_hnode);
}

static int all_rsbs(struct dlm_ls *ls, struct rsb_array *a)
{
	a->ra_n = 0;
	a->ra_v = dlm_malloc(ls->ls_core, (ls->ls_rsbtbl.ht_count + 1) * sizeof(*a->ra_v));
	if (!a->ra_v)
		return -ENOMEM;
	dlm_htab_walk(&ls->ls_rsbtbl, collect, a);
	return 0;
}

static bool has_queued(const struct dlm_rsb *r)
{
	return !dlm_list_empty(&r->res_grantq) ||
	       !dlm_list_empty(&r->res_convertq) ||
	       !dlm_list_empty(&r->res_waitq);
}

static void rc_msg(struct dlm_ls *ls, struct dlm_msg *m, int type)
{
	memset(m, 0, sizeof(*m));
	m->m_type = (uint16_t)type;
	m->m_gen = ls->ls_event;
	m->m_grmode = DLM_LOCK_IV;
	m->m_rqmode = DLM_LOCK_IV;
	m->m_bastmode = DLM_LOCK_IV;
}

static void send_key_msg(struct dlm_ls *ls, int type, const struct dlm_rsb *r,
			 uint32_t nodeid, uint32_t to)
{
	struct dlm_msg m;

	rc_msg(ls, &m, type);
	m.m_key = r->res_key;
	m.m_keylen = r->res_keylen;
	m.m_nodeid = nodeid;
	dlm_send_msg(ls, &m, to);
}

static struct dlm_rcstat *rcstat(struct dlm_ls *ls, uint32_t nodeid)
{
	unsigned int i;

	for (i = 0; i < ls->ls_nrcstat; i++)
		if (ls->ls_rcstat[i].rs_nodeid == nodeid)
			return &ls->ls_rcstat[i];
	if (ls->ls_nrcstat == DLM_MAX_NODES) {
		/* forget nodes that are no longer members */
		unsigned int j = 0;

		for (i = 0; i < ls->ls_nrcstat; i++)
			if (dlm_ls_is_member(ls, ls->ls_rcstat[i].rs_nodeid))
				ls->ls_rcstat[j++] = ls->ls_rcstat[i];
		ls->ls_nrcstat = j;
		if (j == DLM_MAX_NODES)
			return NULL;
	}
	ls->ls_rcstat[ls->ls_nrcstat].rs_nodeid = nodeid;
	ls->ls_rcstat[ls->ls_nrcstat].rs_event = 0;
	ls->ls_rcstat[ls->ls_nrcstat].rs_step = 0;
	return &ls->ls_rcstat[ls->ls_nrcstat++];
}

/* The members of the last finished event, hashed (in their order, which
 * is sorted), for the vote of a partial rebuild. */
static uint32_t prev_members_hash(const struct dlm_ls *ls)
{
	uint32_t h = 2166136261u;
	unsigned int i;

	for (i = 0; i < ls->ls_nprev_members; i++)
		h = (h ^ ls->ls_prev_members[i]) * 16777619u;
	return h;
}

/* Tell every other member we finished 'step'. */
static void send_status(struct dlm_ls *ls, enum dlm_rstep step)
{
	unsigned int i;

	for (i = 0; i < ls->ls_nmembers; i++) {
		struct dlm_msg m;

		if (ls->ls_members[i] == dlm_our_nodeid(ls))
			continue;
		rc_msg(ls, &m, DLM_RC_STATUS);
		m.m_status = (int32_t)step;
		if (step == DLM_RS_NODES && ls->ls_rc_nothing)
			m.m_flags = DLM_MF_RC_NOTHING;
		if (step == DLM_RS_NODES && ls->ls_rc_vote) {
			m.m_flags |= DLM_MF_RC_PARTIAL;
			m.m_remid = ls->ls_generation;
			m.m_lkid = prev_members_hash(ls);
		}
		dlm_send_msg(ls, &m, ls->ls_members[i]);
	}
}

/* What a member said with its status of step nodes: no master to
 * recover (QUIET STEPS); a vote for a partial rebuild, for the same last
 * finished event and members as ours (PARTIAL DIRECTORY). */
static bool said_nothing(struct dlm_ls *ls, const struct dlm_rcstat *st)
{
	(void)ls;
	return st->rs_nothing;
}

static bool said_partial(struct dlm_ls *ls, const struct dlm_rcstat *st)
{
	return st->rs_partial && st->rs_pgen == ls->ls_generation &&
	       st->rs_pmhash == prev_members_hash(ls);
}

/* Has every other member finished 'step' of our event (and, with
 * 'said', said so in its status of step nodes)? */
static bool others_passed(struct dlm_ls *ls, enum dlm_rstep step,
			  bool (*said)(struct dlm_ls *ls,
				       const struct dlm_rcstat *st))
{
	unsigned int i;

	for (i = 0; i < ls->ls_nmembers; i++) {
		uint32_t n = ls->ls_members[i];
		struct dlm_rcstat *st;

		if (n == dlm_our_nodeid(ls))
			continue;
		st = rcstat(ls, n);
		if (!st || st->rs_event != ls->ls_event ||
		    st->rs_step < (uint32_t)step || (said && !said(ls, st)))
			return false;
	}
	return true;
}

static bool barrier(struct dlm_ls *ls, enum dlm_rstep step)
{
	return others_passed(ls, step, NULL);
}

/* Did every member, us included, vote for a partial directory rebuild
 * in our event, all with the same last finished event (PARTIAL
 * DIRECTORY)?  Asked only past the NODES barrier. */
static bool all_partial(struct dlm_ls *ls)
{
	return ls->ls_rc_vote && others_passed(ls, DLM_RS_NODES, said_partial);
}

/* Did every member, us included, say it has no master to recover in our
 * event?  Asked only past the NODES barrier. */
static bool all_nothing(struct dlm_ls *ls)
{
	return ls->ls_rc_nothing && others_passed(ls, DLM_RS_NODES, said_nothing);
}

/* ------------------------------------------------------------------ */
/* the steps                                                          */
/* ------------------------------------------------------------------ */

struct lkb_array {
	struct dlm_lkb **la_v;
	size_t la_n;
	struct dlm_ls *la_ls;
};

static void collect_departed(void *arg, struct dlm_hnode *n)
{
	struct lkb_array *a = arg;
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);

	if (is_master_copy(lkb) && departed(a->la_ls, lkb->lkb_nodeid))
		a->la_v[a->la_n++] = lkb;
}

/* Master copies of departed nodes' locks go; a writer among them may
 * have held a newer LVB than the resource's. */
static int purge_departed(struct dlm_ls *ls)
{
	struct lkb_array a = { NULL, 0, ls };
	struct dlm_list *pos;
	size_t i;

	if (fault(ls, DLM_FAULT_SKIP_PURGE))
		return 0;
	if (ls->ls_bynode_lost) {
		/* some node's copies are on no list: every lock is looked at */
		a.la_v = dlm_malloc(ls->ls_core, (ls->ls_lkbtbl.ht_count + 1) *
				    sizeof(*a.la_v));
		if (!a.la_v)
			return -ENOMEM;
		dlm_htab_walk(&ls->ls_lkbtbl, collect_departed, &a);
	} else {
		/* only the departed nodes' master copies (resource.c, "By
		 * node"), taken off their lists first: purging one may end
		 * another lock */
		size_t n = 0;
		unsigned int k;

		for (k = 0; k < ls->ls_nbynode; k++) {
			struct dlm_bynode *b = &ls->ls_bynode[k];

			if (!departed(ls, b->bn_nodeid))
				continue;
			dlm_list_for_each(pos, &b->bn_mstcpys)
				n++;
		}
		a.la_v = dlm_malloc(ls->ls_core, (n + 1) * sizeof(*a.la_v));
		if (!a.la_v)
			return -ENOMEM;
		for (k = 0; k < ls->ls_nbynode; k++) {
			struct dlm_bynode *b = &ls->ls_bynode[k];

			if (!departed(ls, b->bn_nodeid))
				continue;
			dlm_list_for_each(pos, &b->bn_mstcpys)
				a.la_v[a.la_n++] = dlm_container_of(pos,
						struct dlm_lkb, lkb_ownerqueue);
		}
	}
	for (i = 0; i < a.la_n; i++) {
		struct dlm_lkb *lkb = a.la_v[i];
		struct dlm_rsb *r = lkb->lkb_rsb;

		if (holds_grmode(lkb) && lkb->lkb_grmode >= DLM_LOCK_PW)
			r->res_flags |= RESF_VALNOTVALID;
		r->res_flags |= RESF_RECOVER_GRANT;
		dlm_destroy_lkb(ls, lkb);
	}
	if (a.la_n)
		log_ls(ls, DLM_LOG_INFO, "recovery %u: purged %zu locks of departed nodes",
		       ls->ls_event, a.la_n);
	free(a.la_v);
	return 0;
}

static bool dir_moved(const struct dlm_ls *ls, const struct dlm_rsb *r);
static void find_departed(struct dlm_ls *ls);

/* NARROW STEPS: does a step after step_start have anything to do with
 * r (which step_start has just looked at)?  Its master departed, or an
 * ancestor's (RESF_RECOVER_MASTER, marked after this); its lookup was
 * in flight (RESF_RC_DROP); a purge took a lock of its
 * (RESF_RECOVER_GRANT); requests wait for its master (finish);
 * remastering marked it; or we master it, a root, and its directory
 * node departed (a partial rebuild registers it). */
static bool touched(const struct dlm_ls *ls, const struct dlm_rsb *r)
{
	if (r->res_flags & (RESF_RECOVER_MASTER | RESF_RC_DROP |
			    RESF_RECOVER_GRANT | RESF_NEW_MASTER |
			    RESF_REPOINTED | RESF_DIR_UNACKED))
		return true;
	if (!dlm_list_empty(&r->res_lookupq))
		return true;
	return !r->res_parent && r->res_nodeid == dlm_our_nodeid(ls) &&
	       dir_moved(ls, r) && !fault(ls, DLM_FAULT_NARROW_MISS_MOVED);
}

static int step_start(struct dlm_ls *ls)
{
	struct dlm_list *pos, *tmp, gone;
	struct rsb_array a;
	size_t i, kept;
	bool narrow;
	int rv;

	/* messages from departed nodes are void, lookups of an earlier
	 * attempt too */
	dlm_held_drop(&ls->ls_held, ls, dlm_ls_is_member);
	dlm_held_drop(&ls->ls_rc_deferred, ls, NULL);
	/* ...those a new master sent ahead of its MOVED too: replayed when
	 * a held MOVED naming that departed node was taken at the directory
	 * step, its REPOINTs re-pointed our locks to it, and no step looked
	 * for their master again (dlm-sim --alloc-faults 100 --faults
	 * --remaster --repoint --rehot 8 --ops 1000 --bounce --partitions
	 * --daemon-deaths --dir-lag 300 seed 1594: requests never done) */
	dlm_held_drop(&ls->ls_rm_held, ls, dlm_ls_is_member);
	ls->ls_rc_out = 0;

	/* operations in flight to departed nodes: settle those the lock's
	 * resent state depends on, keep the rest to redo at finish (taken
	 * off the list first: settling one may run another lock's op) */
	dlm_list_init(&gone);
	dlm_list_for_each_safe(pos, tmp, &ls->ls_waiters) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_waiter);
		uint32_t to = lkb->lkb_wait_nodeid;

		if (!to || departed(ls, to)) {
			dlm_list_del(&lkb->lkb_waiter);
			dlm_list_add_tail(&lkb->lkb_waiter, &gone);
		}
	}
	while (!dlm_list_empty(&gone)) {
		struct dlm_lkb *lkb = dlm_list_first(&gone, struct dlm_lkb,
						     lkb_waiter);

		dlm_recover_waiter(ls, lkb);
	}

	rv = purge_departed(ls);
	if (rv)
		return rv;

	/* the resources the steps look at: all of them, less the unused
	 * ones, which go (rsbs created while stopped wait for finish); in
	 * a narrow recovery only those the departure touched, the rest
	 * kept aside for a full rebuild (NARROW STEPS) */
	rec_free(ls);
	ls->ls_redo_all = false;
	narrow = ls->ls_rc_vote;
	ls->ls_rc_narrow = narrow;
	if (narrow)
		find_departed(ls);
	rv = all_rsbs(ls, &a);
	if (rv)
		return rv;
	if (narrow) {
		ls->ls_rec_all = a.ra_v;
	} else {
		ls->ls_rec_rsbs = a.ra_v;
		ls->ls_rec_cap = ls->ls_rsbtbl.ht_count + 1;
	}
	/* lookups held for a DIR_MOVE: their requesters look up again at
	 * finish (RESF_RC_DROP below, on their side), in the directory
	 * this recovery rebuilds (resource.c dlm_dir_hold_lookup) */
	dlm_dir_held_drop(ls);
	for (i = 0, kept = 0; i < a.ra_n; i++) {
		struct dlm_rsb *r = a.ra_v[i];

		/* an unused copy of a resource mastered elsewhere carries
		 * nothing; an unused resource we master keeps its LVB (a
		 * surviving writer's value) and is registered like the rest */
		if ((r->res_flags & RESF_TOSSED) && !is_master(ls, r)) {
			dlm_rsb_free(ls, r);
			continue;
		}
		a.ra_v[kept++] = r;	/* in place: i >= kept */
		if (narrow)
			r->res_flags &= ~RESF_REC_TRACKED;
		else
			r->res_flags |= RESF_REC_TRACKED;
		/* lookups in flight are answered by a stale directory (and
		 * their answers dropped: a partial rebuild drops the record
		 * such an answer may have made, step_dir) */
		r->res_flags &= ~RESF_RC_DROP;
		if (r->res_flags & RESF_LOOKUP) {
			r->res_flags |= RESF_RC_DROP;
			ls->ls_nlookups--;
		}
		r->res_flags &= ~RESF_LOOKUP;
		r->res_new_nodeid = 0;
		if (r->res_nodeid && departed(ls, r->res_nodeid)) {
			if (has_queued(r))
				r->res_flags |= RESF_RECOVER_MASTER;
			else
				r->res_nodeid = 0;
		}
		if (dlm_rsb_unused(r))
			/* onto the toss list */
			dlm_rsb_hold(ls, r), dlm_rsb_release(ls, r);
		if (narrow && touched(ls, r) && dlm_recover_track_rsb(ls, r))
			return -ENOMEM;
	}
	if (narrow)
		ls->ls_rec_nall = kept;
	else
		ls->ls_rec_nrsbs = kept;
	/* a child that needs a new master takes its root's: its ancestors
	 * need one too, even those we hold no lock on.  With the re-point
	 * protocol a held MOVED, handled at the directory step after our
	 * NODES word, may mark one yet (remaster.c dlm_remaster_recover: a
	 * copy naming a departed new master): we never say nothing then
	 * (QUIET STEPS; dlm-sim --faults --remaster --repoint --rehot 4
	 * --ops 1500 --nodes 5 seed 783: the steps skipped, the survivor
	 * that took the resource granted its EX over a PR never resent) */
	ls->ls_rc_nothing = !(dlm_remaster_on(ls) &&
			      ls->ls_core->core_cfg.remaster_shared);
	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i], *p;

		if (!(r->res_flags & RESF_RECOVER_MASTER))
			continue;
		ls->ls_rc_nothing = false;	/* QUIET STEPS */
		for (p = r->res_parent; p; p = p->res_parent)
			if (!p->res_nodeid || departed(ls, p->res_nodeid)) {
				p->res_flags |= RESF_RECOVER_MASTER;
				/* (on the list already unless narrow) */
				if (dlm_recover_track_rsb(ls, p))
					return -ENOMEM;
			}
	}
	/* the directory is rebuilt from the masters in the next step: each
	 * record they confirm is kept (or made), the others are swept once
	 * all have registered (sweep_dir) */
	return 0;
}

/* After the DIR barrier: forget the records no master confirmed (a
 * partial rebuild confirms only what moved, and dropped the rest that
 * was wrong in step_dir). */
static int sweep_dir(struct dlm_ls *ls)
{
	if (!ls->ls_rc_partial)
		dlm_dir_sweep(ls);
	return 0;
}

/* Did r's directory node change with this event: was the one the last
 * finished event's members chose for it one that departed?  Asked only
 * in a partial rebuild, where the members are those less the departed:
 * it did unless some member comes before every departed one (rendezvous,
 * core/resource.c), which the first member tried mostly does, so this
 * costs about one weight per departed node and one more, not one per
 * member (at 1M resources, 16 nodes: 2M weights, not 16M). */
static bool dir_moved_hash(const struct dlm_ls *ls, uint32_t hash)
{
	uint32_t first;
	unsigned int i;

	if (!ls->ls_rc_ndeparted)
		return false;
	first = ls->ls_rc_departed[0];
	for (i = 1; i < ls->ls_rc_ndeparted; i++)
		if (dlm_dir_before(ls->ls_rc_departed[i], first, hash))
			first = ls->ls_rc_departed[i];
	for (i = 0; i < ls->ls_nmembers; i++)
		if (dlm_dir_before(ls->ls_members[i], first, hash))
			return false;
	return true;
}

static bool dir_moved(const struct dlm_ls *ls, const struct dlm_rsb *r)
{
	return dir_moved_hash(ls, r->res_hnode.hn_hash);
}

/* The members of the last finished event that are not ours. */
static void find_departed(struct dlm_ls *ls)
{
	unsigned int i;

	ls->ls_rc_ndeparted = 0;
	for (i = 0; i < ls->ls_nprev_members &&
		    ls->ls_rc_ndeparted < DLM_MAX_NODES; i++)
		if (!dlm_ls_is_member(ls, ls->ls_prev_members[i]))
			ls->ls_rc_departed[ls->ls_rc_ndeparted++] =
				ls->ls_prev_members[i];
}

/* PARTIAL DIRECTORY: the REMOVEs held since the stop (sent in the last
 * finished event, all here once the NODES barrier is passed: links are
 * FIFO) are done now, not dropped at finish as stale: the directory
 * they were sent to was not rebuilt. */
static void held_removes(struct dlm_ls *ls)
{
	struct dlm_list *pos, *tmp;
	unsigned int n = 0;

	dlm_list_for_each_safe(pos, tmp, &ls->ls_held) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_msg m;

		if (dlm_msg_decode(h->h_buf, h->h_len, &m, NULL) ||
		    m.m_type != DLM_MSG_REMOVE || !m.m_keylen ||
		    m.m_gen != ls->ls_generation)
			continue;
		dlm_dir_remove(ls, m.m_key, m.m_keylen,
			       dlm_hash_bytes(m.m_key, m.m_keylen), m.m_from);
		dlm_list_del(&h->h_list);
		free(h);
		n++;
	}
	if (n)
		log_ls(ls, DLM_LOG_DEBUG, "recovery %u: %u REMOVEs held since "
		       "the stop done", ls->ls_event, n);
}

/* The records for one directory node, sent as RC_DIR_ADDS when full
 * and at the end of the step (core/wire.h). */
struct dir_batch {
	unsigned int	db_len;
	unsigned char	db_list[DLM_WIRE_LIST_MAX];
};

static void dir_batch_send(struct dlm_ls *ls, struct dir_batch *b, uint32_t to)
{
	struct dlm_msg m;

	if (!b->db_len)
		return;
	rc_msg(ls, &m, DLM_RC_DIR_ADDS);
	m.m_key = b->db_list;
	m.m_keylen = (uint16_t)b->db_len;
	m.m_nodeid = dlm_our_nodeid(ls);
	dlm_send_msg(ls, &m, to);
	b->db_len = 0;
}

static void dir_batch_add_key(struct dlm_ls *ls, struct dir_batch *b,
			      const unsigned char *key, unsigned int keylen,
			      uint32_t to)
{
	if (b->db_len + 2 + keylen > DLM_WIRE_LIST_MAX)
		dir_batch_send(ls, b, to);
	b->db_list[b->db_len] = (unsigned char)(keylen & 0xff);
	b->db_list[b->db_len + 1] = (unsigned char)(keylen >> 8);
	memcpy(b->db_list + b->db_len + 2, key, keylen);
	b->db_len += 2 + keylen;
}

static void dir_batch_add(struct dlm_ls *ls, struct dir_batch *b,
			  const struct dlm_rsb *r, uint32_t to)
{
	dir_batch_add_key(ls, b, r->res_key, r->res_keylen, to);
}

/* The lone locks folded with their resources (core/solo.c), held or
 * tossed, on names another member directs: roots mastered here, which
 * no walk of the rsbs sees, registered as those are: in a full rebuild
 * all, in a partial one those whose directory node departed (solo.c,
 * "Names other nodes direct").  One this node directs is its own
 * record, as ever. */
static void dir_register_solos(struct dlm_ls *ls, struct dir_batch *batch)
{
	uint32_t us = dlm_our_nodeid(ls);
	size_t b;

	if (!ls->ls_solotbl.ht_count ||
	    fault(ls, DLM_FAULT_FOLD_REMOTE_NO_REGISTER))
		return;
	for (b = 0; b < ls->ls_solotbl.ht_nbuckets; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_solotbl.ht_buckets[b]; n; n = n->hn_next) {
			struct dlm_solo *so = dlm_container_of(n,
					struct dlm_solo, so_keynode);
			unsigned int k;
			uint32_t dir;

			/* (the cheap test first: a death moves few) */
			if (ls->ls_rc_partial && !dir_moved_hash(ls, n->hn_hash))
				continue;
			dir = dlm_dir_nodeid(ls, n->hn_hash);
			if (dir == us)
				continue;
			for (k = 0; k < ls->ls_nmembers &&
				    ls->ls_members[k] != dir; k++)
				;
			if (k < ls->ls_nmembers)	/* a member: always */
				dir_batch_add_key(ls, &batch[k], so->so_key,
						  dlm_solo_keylen(so), dir);
		}
	}
}

/* PARTIAL DIRECTORY: our lookup of r was in flight at the stop, its
 * answer dropped: the record it may have made names us, who do not
 * master r.  It goes (RC_DIR_DROP, or here if we direct r). */
static void rc_dir_drop(struct dlm_ls *ls, struct dlm_rsb *r)
{
	uint32_t us = dlm_our_nodeid(ls);
	uint32_t dir = dlm_dir_nodeid(ls, r->res_hnode.hn_hash);

	r->res_flags &= ~RESF_RC_DROP;
	if (dir == us)
		dlm_dir_remove(ls, r->res_key, r->res_keylen,
			       r->res_hnode.hn_hash, us);
	else
		send_key_msg(ls, DLM_RC_DIR_DROP, r, us, dir);
}

static int step_dir(struct dlm_ls *ls)
{
	uint32_t us = dlm_our_nodeid(ls);
	struct dir_batch *batch;
	size_t i;
	int rv = 0;

	/* PARTIAL DIRECTORY: only what the departed took is rebuilt.  A
	 * narrow recovery whose rebuild is full after all looks at every
	 * resource from here (NARROW STEPS) */
	ls->ls_rc_partial = all_partial(ls);
	if (ls->ls_rec_all) {
		if (!ls->ls_rc_partial) {
			for (i = 0; i < ls->ls_rec_nall; i++)
				if (dlm_recover_track_rsb(ls, ls->ls_rec_all[i]))
					return -ENOMEM;
			ls->ls_rc_narrow = false;
			log_ls(ls, DLM_LOG_DEBUG, "recovery %u: full directory "
			       "rebuild: the steps look at every resource",
			       ls->ls_event);
		}
		free(ls->ls_rec_all);
		ls->ls_rec_all = NULL;
		ls->ls_rec_nall = 0;
	}

	/* a resource moved to us before the stop is ours to register */
	rv = dlm_remaster_recover(ls);
	if (rv)
		return rv;

	if (ls->ls_rc_partial) {
		log_ls(ls, DLM_LOG_DEBUG, "recovery %u: partial directory "
		       "rebuild", ls->ls_event);
		find_departed(ls);
		if (!fault(ls, DLM_FAULT_PARTIAL_KEEP_DEAD))
			dlm_dir_drop_departed(ls);
		if (!fault(ls, DLM_FAULT_PARTIAL_KEEP_ORPHANS))
			held_removes(ls);
	}

	/* one batch per member, by its place in ls_members (the directory
	 * node of a hash is a member by its place too) */
	batch = dlm_malloc(ls->ls_core, ls->ls_nmembers * sizeof(*batch));
	if (!batch)
		return -ENOMEM;
	for (i = 0; i < ls->ls_nmembers; i++)
		batch[i].db_len = 0;
	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];
		unsigned int k;
		uint32_t dir;

		if (r->res_parent)
			continue;	/* children have no directory record */
		if (r->res_nodeid != us) {
			if ((r->res_flags & RESF_RC_DROP) && ls->ls_rc_partial &&
			    !dir_moved(ls, r) &&
			    !fault(ls, DLM_FAULT_PARTIAL_KEEP_ORPHANS))
				rc_dir_drop(ls, r);
			continue;
		}
		if (ls->ls_rc_partial && !dir_moved(ls, r))
			continue;	/* its record is kept */
		dir = dlm_dir_nodeid(ls, r->res_hnode.hn_hash);
		if (dir == us) {
			rv = dlm_dir_register(ls, r->res_key, r->res_keylen,
					      r->res_hnode.hn_hash, us);
			if (rv)
				break;
			continue;
		}
		for (k = 0; k < ls->ls_nmembers && ls->ls_members[k] != dir; k++)
			;
		if (k < ls->ls_nmembers)
			dir_batch_add(ls, &batch[k], r, dir);
		else	/* dlm_dir_nodeid() gives a member: never */
			send_key_msg(ls, DLM_RC_DIR_ADD, r, us, dir);
	}
	if (!rv)
		dir_register_solos(ls, batch);
	/* what is sent of a failed step does no harm: the retry, under a
	 * newer event, registers everything again */
	for (i = 0; i < ls->ls_nmembers; i++)
		dir_batch_send(ls, &batch[i], ls->ls_members[i]);
	free(batch);
	return rv;
}

/* The directory answered: 'master' masters r from now on. */
static void new_master(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t master)
{
	if (!(r->res_flags & RESF_RECOVER_MASTER))
		return;
	if (master == dlm_our_nodeid(ls)) {
		/* our own locks are on r's queues already */
		r->res_flags &= ~RESF_RECOVER_MASTER;
		r->res_flags |= RESF_NEW_MASTER;
		r->res_nodeid = master;
		r->res_new_nodeid = 0;
	} else {
		r->res_new_nodeid = master;
	}
}

/* RC_LOOKUP: who masters m_key now?  Asked only once our directory is
 * complete (dir_complete, below). */
static int receive_rc_lookup(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen), master = 0;
	struct dlm_msg rp;
	int rv;

	rv = dlm_dir_lookup(ls, m->m_key, m->m_keylen, hash, m->m_from, &master);
	rc_msg(ls, &rp, DLM_RC_LOOKUP_REPLY);
	rp.m_status = rv;
	rp.m_nodeid = master;
	rp.m_key = m->m_key;
	rp.m_keylen = m->m_keylen;
	dlm_send_msg(ls, &rp, m->m_from);
	return 0;
}

static int step_masters(struct dlm_ls *ls)
{
	uint32_t us = dlm_our_nodeid(ls), master;
	size_t i;
	int rv = 0;

	rv = sweep_dir(ls);
	if (rv)
		return rv;
	/* re-points acknowledged before any RC_LOCK comes (remaster.c) */
	dlm_remaster_held_replies(ls);
	if (all_nothing(ls))
		log_ls(ls, DLM_LOG_DEBUG, "recovery %u: no member has a master "
		       "to recover: steps masters and locks are quiet",
		       ls->ls_event);
	/* lookups that came before our directory was complete.  Nothing of
	 * them is lost for want of memory: receive_rc_lookup takes every one
	 * (returns 0); a record it has no memory for is answered -ENOMEM, and
	 * the asker fails its recovery, to run again (receive_rc_lookup_reply),
	 * as when the lookup is not deferred.  (Were a handler here to refuse
	 * -ENOMEM, the right answer would be recovery_failed, as
	 * dlm_recover_receive does, not holding it.)  Probed: dlm-sim --faults
	 * --remaster --repoint --alloc-faults 20..100, 9,500 seeds, 156
	 * deferred lookups replayed, none refused. */
	dlm_held_replay(ls, &ls->ls_rc_deferred, receive_rc_lookup);
	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];
		uint32_t dir;

		if (!(r->res_flags & RESF_RECOVER_MASTER) || r->res_parent)
			continue;	/* children: step_locks */
		dir = dlm_dir_nodeid(ls, r->res_hnode.hn_hash);
		if (dir == us) {
			rv = dlm_dir_lookup(ls, r->res_key, r->res_keylen,
					    r->res_hnode.hn_hash, us, &master);
			if (rv)
				break;
			new_master(ls, r, master);
		} else {
			send_key_msg(ls, DLM_RC_LOOKUP, r, us, dir);
			ls->ls_rc_out++;
		}
	}
	return rv;
}

/* The master a root resource has from this recovery on (0: unknown). */
static uint32_t root_master(const struct dlm_rsb *root)
{
	return (root->res_flags & RESF_RECOVER_MASTER) ? root->res_new_nodeid :
							 root->res_nodeid;
}

/* After the MASTERS barrier every root's master is settled: a child
 * marked for a new master takes its root's (resource.c). */
static void child_new_master(struct dlm_ls *ls, struct dlm_rsb *r)
{
	uint32_t master = root_master(dlm_rsb_root(r));

	if (!master) {
		char name[DLM_KEY_TEXT_LEN];

		dlm_key_format(r->res_key, r->res_keylen, name, sizeof(name));
		log_ls(ls, DLM_LOG_ERR, "recovery %u: \"%s\": root has no master",
		       ls->ls_event, name);
		return;
	}
	new_master(ls, r, master);
}

static void resend_queue(struct dlm_ls *ls, struct dlm_rsb *r,
			 struct dlm_list *q, uint32_t to)
{
	struct dlm_list *pos;

	dlm_list_for_each(pos, q) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_statequeue);
		struct dlm_msg m;

		/* a moved lock re-pointed already at the master that stays
		 * r's: its copy there is the lock, ahead of ours (answers
		 * on their way); r is resent for another lock awaiting its
		 * re-point (remaster.c).  Sent, an unlock done there in
		 * the meantime made it a lock nobody holds (dlm-sim --faults
		 * --remaster --repoint --rehot 8 --ops 1500 --bounce seed
		 * 934) */
		if (dlm_remaster_on(ls) && to == r->res_nodeid &&
		    lkb->lkb_remid && !(lkb->lkb_flags & LKBF_RP_RESENT))
			continue;
		dlm_lkb_to_msg(&m, DLM_RC_LOCK, lkb, lkb->lkb_status);
		m.m_gen = ls->ls_event;
		m.m_key = r->res_key;
		m.m_keylen = r->res_keylen;
		if (r->res_parent) {
			m.m_pkey = r->res_parent->res_key;
			m.m_pkeylen = r->res_parent->res_keylen;
		}
		if (lkb->lkb_status == DLM_LKSTS_GRANTED)
			m.m_rqmode = DLM_LOCK_IV;
		/* a holder's copy that came flagged stays flagged; a lock
		 * that never read or wrote a value sends none */
		m.m_sbflags = (lkb->lkb_flags & LKBF_LVB_STALE) ?
			      DLM_SBF_VALNOTVALID : 0;
		if (!(lkb->lkb_flags & LKBF_LVB_KNOWN)) {
			m.m_lvb = NULL;
			m.m_lvblen = 0;
		}
		dlm_send_msg(ls, &m, to);
		ls->ls_rc_out++;
	}
}

static void resend_rsb(struct dlm_ls *ls, struct dlm_rsb *r)
{
	uint32_t to = r->res_new_nodeid;

	r->res_flags |= RESF_RC_SENT;
	if (!(r->res_flags & RESF_RECOVER_MASTER) || !to)
		return;
	if (fault(ls, DLM_FAULT_SKIP_RESEND))
		return;
	resend_queue(ls, r, &r->res_grantq, to);
	resend_queue(ls, r, &r->res_convertq, to);
	resend_queue(ls, r, &r->res_waitq, to);
}

/* Resend our locks to new masters, a parent's before its children's:
 * links are FIFO, so the new master has met the parent (we hold a lock
 * on it) when a child's lock names it (receive_rc_lock). */
static int step_locks(struct dlm_ls *ls)
{
	struct dlm_rsb **stack = NULL;
	size_t i, n, cap = 0;

	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];

		if (r->res_parent && (r->res_flags & RESF_RECOVER_MASTER) &&
		    !r->res_new_nodeid)
			child_new_master(ls, r);
	}
	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r;

		/* r and its ancestors not yet resent, then resend from the
		 * top (a stack, not recursion: trees have no depth limit) */
		for (n = 0, r = ls->ls_rec_rsbs[i];
		     r && !(r->res_flags & RESF_RC_SENT); r = r->res_parent) {
			if (n == cap) {
				size_t ncap = cap * 2 + 16;
				struct dlm_rsb **v = dlm_realloc(ls->ls_core, stack,
								 ncap * sizeof(*v));

				if (!v) {
					free(stack);
					return -ENOMEM;
				}
				stack = v;
				cap = ncap;
			}
			stack[n++] = r;
		}
		while (n)
			resend_rsb(ls, stack[--n]);
	}
	free(stack);
	for (i = 0; i < ls->ls_rec_nrsbs; i++)
		ls->ls_rec_rsbs[i]->res_flags &= ~RESF_RC_SENT;
	return 0;
}

/* All our resent locks were taken: adopt the new masters. */
static int commit_masters(struct dlm_ls *ls)
{
	size_t i;

	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];

		if ((r->res_flags & RESF_RECOVER_MASTER) && r->res_new_nodeid) {
			r->res_nodeid = r->res_new_nodeid;
			r->res_new_nodeid = 0;
			r->res_flags &= ~RESF_RECOVER_MASTER;
		}
	}
	return 0;
}

/* Is LVB sequence number a after b?  Sequences wrap: compared as serial
 * numbers (RFC 1982), by the sign of the difference, as the kernel does;
 * right while the copies compared are less than 2^31 writes apart. */
static bool seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* A new master's LVB: from a lock held in PR or above (that holder's copy
 * is current: no one could write while it held; still invalid if it was
 * granted so), else the newest copy any lock has, marked invalid. */
static void recover_lvb(struct dlm_ls *ls, struct dlm_rsb *r)
{
	struct dlm_lkb *best = NULL;
	struct dlm_list *qs[2] = { &r->res_grantq, &r->res_convertq };
	bool current = false;
	int k;

	for (k = 0; k < 2 && !current; k++) {
		struct dlm_list *pos;

		dlm_list_for_each(pos, qs[k]) {
			struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
							       lkb_statequeue);

			if (!(lkb->lkb_flags & LKBF_LVB_KNOWN))
				continue;
			if (lkb->lkb_grmode >= DLM_LOCK_PR) {
				best = lkb;
				current = true;
				break;
			}
			if (!best || seq_after(lkb->lkb_lvbseq, best->lkb_lvbseq))
				best = lkb;
		}
	}
	if (best) {
		if (!dlm_lvb_store(ls, &r->res_lvb, dlm_lkb_lvb(best)))
			current = false;	/* no room: stays not valid */
		r->res_lvbseq = best->lkb_lvbseq;
	} else if (r->res_lvb) {
		memset(r->res_lvb, 0, DLM_LVB_LEN);
	}
	if (current && !(best->lkb_flags & LKBF_LVB_STALE))
		r->res_flags &= ~RESF_VALNOTVALID;
	else
		r->res_flags |= RESF_VALNOTVALID;
}

static int step_grant(struct dlm_ls *ls)
{
	size_t i, nnew = 0;

	/* moved locks their owners did not know were queued go */
	dlm_remaster_unmatched(ls);

	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];

		if (!is_master(ls, r))
			continue;
		if (r->res_flags & RESF_NEW_MASTER) {
			dlm_recover_conversions(ls, r);
			/* no memory to look for deadlocks: the step fails, r
			 * and those after it still marked (touched(): the
			 * next run's list has them), their LVBs not
			 * recovered yet; what ran on r is idempotent */
			if (dlm_recover_deadlocks(ls, r))
				return -ENOMEM;
			/* not a master whose locks' owners resent them to
			 * re-point them (remaster.c): its value came with the
			 * MIGRATE, and no lock's copy may replace it (dlm-sim
			 * --seed 2480 --nodes 6 --faults --repoint: a valid
			 * value lost) */
			if (!(r->res_flags & RESF_REPOINTED))
				recover_lvb(ls, r);
			nnew++;
		}
		if (r->res_flags & (RESF_NEW_MASTER | RESF_RECOVER_GRANT))
			dlm_grant_pending(ls, r);
		r->res_flags &= ~(RESF_NEW_MASTER | RESF_RECOVER_GRANT);
	}
	if (nnew)
		log_ls(ls, DLM_LOG_INFO, "recovery %u: mastering %zu more resources",
		       ls->ls_event, nnew);
	return 0;
}

/* The end of the table: every member passed the last barrier. */
static int step_recovered(struct dlm_ls *ls)
{
	struct dlm_core *core = ls->ls_core;

	set_state(ls, DLM_LS_RECOVERED);
	log_ls(ls, DLM_LOG_INFO, "recovery %u done here, %u members",
	       ls->ls_event, ls->ls_nmembers);
	if (core->core_ops.recovery_done)
		core->core_ops.recovery_done(core->core_ctx, ls, ls->ls_event);
	return 0;
}

/*
 * Recovery as a table, read top to bottom (the row of "none" is where
 * start puts us; it never runs).  Row S is the way into step S from the
 * step before it: once what it waits for has come, the lockspace is in
 * step S, its action runs, and (announce) every other member is told it
 * is done, which is what their barrier on S waits for.  Adding a step is
 * one enum value (core_internal.h) and one row here.  A quiet step is
 * neither announced nor waited for when no member has a master to
 * recover (QUIET STEPS, at the top).
 *
 *   WAIT_NONE      go on at once (the first row, run by start)
 *   WAIT_BARRIER   every member announced the step we are in
 *   WAIT_REPLIES   the replies to the messages we sent in this step
 *                  (ls_rc_out) have all come
 */
enum rc_wait { WAIT_NONE, WAIT_BARRIER, WAIT_REPLIES };

static const struct recovery_step {
	const char	*name;		/* for logs and dlm_core_ls_state() */
	enum rc_wait	wait;
	int		(*action)(struct dlm_ls *ls);	/* NULL: none */
	bool		announce;
	bool		quiet;
} recovery_steps[] = {
	/* step                      name                 waits for      runs            announce quiet */
	[DLM_RS_NONE]            = { "none",              WAIT_NONE,     NULL,           false,   false },
	[DLM_RS_NODES]           = { "nodes",             WAIT_NONE,     step_start,     true,    false },
	[DLM_RS_DIR]             = { "directory",         WAIT_BARRIER,  step_dir,       true,    false },
	[DLM_RS_MASTERS_PENDING] = { "masters (lookups)", WAIT_BARRIER,  step_masters,   false,   false },
	[DLM_RS_MASTERS]         = { "masters",           WAIT_REPLIES,  NULL,           true,    true },
	[DLM_RS_LOCKS_PENDING]   = { "locks (resend)",    WAIT_BARRIER,  step_locks,     false,   false },
	[DLM_RS_LOCKS]           = { "locks",             WAIT_REPLIES,  commit_masters, true,    true },
	[DLM_RS_DONE]            = { "done",              WAIT_BARRIER,  step_grant,     true,    false },
	[DLM_RS_FINISHED]        = { "wait finish",       WAIT_BARRIER,  step_recovered, false,   false },
};

#define NSTEPS	(sizeof(recovery_steps) / sizeof(recovery_steps[0]))

static const char *step_name(enum dlm_rstep step)
{
	return (size_t)step < NSTEPS ? recovery_steps[step].name : "?";
}

static bool step_may_run(struct dlm_ls *ls, const struct recovery_step *s)
{
	switch (s->wait) {
	case WAIT_NONE:
		return true;
	case WAIT_BARRIER:
		/* the barrier on the step we are in, unless it is quiet */
		if (recovery_steps[ls->ls_rstep].quiet && all_nothing(ls))
			return true;
		return barrier(ls, ls->ls_rstep);
	case WAIT_REPLIES:
		return ls->ls_rc_out == 0;
	}
	return false;
}

/* A step failed (out of memory): we stay stopped, announcing nothing
 * more, and tell the glue, which must run recovery again under a new
 * event on every member. */
static void recovery_failed(struct dlm_ls *ls, int error)
{
	struct dlm_core *core = ls->ls_core;

	log_ls(ls, DLM_LOG_ERR, "recovery %u failed in step %s: %d",
	       ls->ls_event, step_name(ls->ls_rstep), error);
	ls->ls_rc_error = error;
	set_state(ls, DLM_LS_STOPPED);
	if (core->core_ops.recovery_failed)
		core->core_ops.recovery_failed(core->core_ctx, ls, ls->ls_event,
					       error);
}

/* Run the table from where we are until a row must wait.  Called on
 * start and on every recovery message. */
static void recover_run(struct dlm_ls *ls)
{
	while (ls->ls_state == DLM_LS_RECOVERING &&
	       (size_t)ls->ls_rstep + 1 < NSTEPS) {
		enum dlm_rstep next = ls->ls_rstep + 1;
		const struct recovery_step *s = &recovery_steps[next];
		int rv;

		if (!step_may_run(ls, s))
			return;
		set_rstep(ls, next);
		rv = s->action ? s->action(ls) : 0;
		if (!rv && ls->ls_core->core_fault == DLM_FAULT_RECOVERY_FAIL_ONCE) {
			ls->ls_core->core_fault = DLM_FAULT_NONE;
			rv = -ENOMEM;
		}
		if (rv) {
			recovery_failed(ls, rv);
			return;
		}
		if (s->announce && !(s->quiet && all_nothing(ls)))
			send_status(ls, next);
	}
}

/* ------------------------------------------------------------------ */
/* control                                                            */
/* ------------------------------------------------------------------ */

int dlm_core_ls_stop(struct dlm_ls *ls)
{
	if (ls->ls_state == DLM_LS_STOPPED)
		return 0;
	if (ls->ls_state != DLM_LS_RUNNING)
		log_ls(ls, DLM_LOG_NOTICE, "recovery %u aborted in step %s",
		       ls->ls_event, step_name(ls->ls_rstep));
	else
		log_ls(ls, DLM_LOG_INFO, "stopped");
	set_state(ls, DLM_LS_STOPPED);
	set_rstep(ls, DLM_RS_NONE);
	return 0;
}

/* Is every member one of the last finished event's (no node joined)? */
static bool members_subset(const struct dlm_ls *ls)
{
	unsigned int i, j;

	if (!ls->ls_nprev_members)
		return false;
	for (i = 0; i < ls->ls_nmembers; i++) {
		for (j = 0; j < ls->ls_nprev_members &&
			    ls->ls_prev_members[j] != ls->ls_members[i]; j++)
			;
		if (j == ls->ls_nprev_members)
			return false;
	}
	return true;
}

int dlm_core_ls_start(struct dlm_ls *ls, uint32_t event,
		      const uint32_t *members, unsigned int nmembers)
{
	uint32_t *old = NULL;
	unsigned int nold = ls->ls_nmembers;
	int rv;

	if (ls->ls_state == DLM_LS_RUNNING)
		return -EBUSY;
	if (event <= ls->ls_event)
		return -EINVAL;
	/* the members change: the lone locks folded with their resources
	 * whose directory moves unfold, the rest stay folded (solo.c,
	 * "Recovery"); without memory the start fails, changing nothing but
	 * the unfolded, and is run again */
	rv = dlm_solo_recover_start(ls, members, nmembers);
	if (rv)
		return rv;
	old = dlm_malloc(ls->ls_core, nold * sizeof(*old));
	if (!old)
		return -ENOMEM;
	memcpy(old, ls->ls_members, nold * sizeof(*old));
	rv = dlm_ls_set_members(ls, members, nmembers);
	if (rv) {
		/* back to the old set: its copy, without allocating again */
		free(ls->ls_members);
		ls->ls_members = old;
		ls->ls_nmembers = nold;
		return rv;
	}
	/* PARTIAL DIRECTORY: our vote.  The members before are those of
	 * the last finished event only if nothing started since. */
	if (ls->ls_rc_clean) {
		free(ls->ls_prev_members);
		ls->ls_prev_members = old;
		ls->ls_nprev_members = nold;
	} else {
		free(old);
	}
	ls->ls_rc_vote = ls->ls_rc_clean && !dlm_remaster_on(ls) &&
			 !ls->ls_rm_seen && members_subset(ls);
	ls->ls_rc_clean = false;
	ls->ls_rc_partial = false;
	ls->ls_event = event;
	ls->ls_rc_error = 0;
	set_state(ls, DLM_LS_RECOVERING);
	set_rstep(ls, DLM_RS_NONE);
	log_ls(ls, DLM_LOG_INFO, "recovery %u started, %u members", event,
	       ls->ls_nmembers);
	recover_run(ls);
	return 0;
}

/* The requests held while the lockspace did not run look their masters up
 * now (ls_redo_lookups).  Without memory for the list of resources that
 * takes, the next dlm_core_tick() tries again: a request is never left on
 * a lookup queue that nothing will look at. */
void dlm_recover_redo_lookups(struct dlm_ls *ls)
{
	struct rsb_array a;
	size_t i;

	if (!ls->ls_redo_lookups)
		return;
	if (all_rsbs(ls, &a)) {
		log_ls(ls, DLM_LOG_WARNING, "no memory to look masters up for "
		       "held requests: again at the next tick");
		return;
	}
	ls->ls_redo_lookups = false;
	for (i = 0; i < a.ra_n; i++)
		dlm_redo_lookups(ls, a.ra_v[i]);
	free(a.ra_v);
}

int dlm_core_ls_finish(struct dlm_ls *ls, uint32_t event)
{
	if (ls->ls_state != DLM_LS_RECOVERED || event != ls->ls_event)
		return -EBUSY;
	set_state(ls, DLM_LS_RUNNING);
	set_rstep(ls, DLM_RS_NONE);
	ls->ls_generation = event;
	ls->ls_rc_clean = true;
	if (!ls->ls_rc_partial)
		ls->ls_rm_seen = false;	/* repaired by the full rebuild */

	/* what arrived while we were stopped, in arrival order; what a
	 * handler refuses for want of memory stays held, with all after it,
	 * offered again at each tick and before each message (ls.c) */
	(void)dlm_held_replay_ls(ls);
	dlm_remaster_finish(ls);
	/* operations kept for now */
	while (!dlm_list_empty(&ls->ls_resend)) {
		struct dlm_lkb *lkb = dlm_list_first(&ls->ls_resend,
						     struct dlm_lkb, lkb_waiter);

		dlm_redo_op(ls, lkb);
	}
	/* requests waiting for a master */
	if (ls->ls_rc_narrow && !ls->ls_redo_all) {
		/* NARROW STEPS: every resource a request waits on for its
		 * master is on the list (step_start, dlm_recover_held_lookup) */
		size_t i;

		for (i = 0; i < ls->ls_rec_nrsbs; i++)
			dlm_redo_lookups(ls, ls->ls_rec_rsbs[i]);
	} else {
		ls->ls_redo_lookups = true;
		dlm_recover_redo_lookups(ls);
	}
	ls->ls_rc_narrow = false;
	ls->ls_redo_all = false;
	rec_free(ls);
	dlm_toss_trim(ls);
	log_ls(ls, DLM_LOG_INFO, "recovery %u finished, locking resumed", event);
	return 0;
}

/* ------------------------------------------------------------------ */
/* recovery messages                                                  */
/* ------------------------------------------------------------------ */

/* The ranges an RC_LOCK gives its master copy; false for want of
 * memory, with the lock unchanged. */
static bool lkb_take_ranges(struct dlm_ls *ls, struct dlm_lkb *lkb,
			    const struct dlm_msg *m)
{
	return dlm_lkb_set_range(ls, lkb, DLM_LKB_GR, &m->m_grrange) &&
	       dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &m->m_rqrange);
}

/* Room in ls_rec_rsbs for one more resource: 0, or -ENOMEM. */
static int rec_rsbs_room(struct dlm_ls *ls)
{
	size_t cap = ls->ls_rec_cap * 2 + 16;
	struct dlm_rsb **v;

	if (ls->ls_rec_nrsbs < ls->ls_rec_cap)
		return 0;
	v = dlm_realloc(ls->ls_core, ls->ls_rec_rsbs, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	ls->ls_rec_rsbs = v;
	ls->ls_rec_cap = cap;
	return 0;
}

/* NARROW STEPS: a request on r waits for its master until finish
 * (lock.c request_with_master, while the lockspace does not run); the
 * list finish looks at must have r.  Without memory for it, finish looks
 * at every resource. */
void dlm_recover_held_lookup(struct dlm_ls *ls, struct dlm_rsb *r)
{
	if (ls->ls_rc_narrow && dlm_recover_track_rsb(ls, r))
		ls->ls_redo_all = true;
}

/* Room on the steps' list for one more resource, so that the next
 * dlm_recover_track_rsb() cannot fail: 0, or -ENOMEM (remaster.c
 * install, before it changes anything). */
int dlm_recover_track_room(struct dlm_ls *ls)
{
	return rec_rsbs_room(ls);
}

/* r, found or made after step_start collected the resources (remaster.c
 * installs a MIGRATE at the directory step, maybe on an rsb it creates
 * then), is looked at by the steps from here on: registered in the
 * directory, granted on at the end.  0, or -ENOMEM. */
int dlm_recover_track_rsb(struct dlm_ls *ls, struct dlm_rsb *r)
{
	/* every rsb step_start found is on the list and marked (the rest
	 * it freed); one made since is not marked */
	if (r->res_flags & RESF_REC_TRACKED)
		return 0;
	if (rec_rsbs_room(ls))
		return -ENOMEM;
	ls->ls_rec_rsbs[ls->ls_rec_nrsbs++] = r;
	r->res_flags |= RESF_REC_TRACKED;
	return 0;
}

/* RC_LOCK for a child resource (*rp, NULL: not here) we may not know we
 * master yet: our own step_locks may come after the sender's.  We do
 * when we master its root, as every child's master is its root's; its
 * parent is here, as the sender resent its lock on the parent first.
 * -ENOMEM, or 0 (*rp then is checked as for any RC_LOCK). */
static int rc_child_here(struct dlm_ls *ls, struct dlm_rsb **rp,
			 const struct dlm_msg *m, uint32_t hash)
{
	struct dlm_rsb *p = dlm_rsb_find(ls, m->m_pkey, m->m_pkeylen,
					 dlm_hash_bytes(m->m_pkey, m->m_pkeylen));
	struct dlm_rsb *r = *rp;

	if (!p || !dlm_key_is_child(m->m_pkey, m->m_pkeylen, m->m_key,
				    m->m_keylen) ||
	    root_master(dlm_rsb_root(p)) != dlm_our_nodeid(ls))
		return 0;	/* refused by the caller */
	if (!r) {
		/* the steps after this one look at it too */
		if (rec_rsbs_room(ls))
			return -ENOMEM;
		r = dlm_rsb_create(ls, m->m_key, m->m_keylen, hash);
		if (!r)
			return -ENOMEM;
		ls->ls_rec_rsbs[ls->ls_rec_nrsbs++] = r;
		r->res_flags |= RESF_REC_TRACKED;
		r->res_nodeid = dlm_our_nodeid(ls);
		dlm_rsb_set_parent(ls, r, p);
		*rp = r;
		return 0;
	}
	if (r->res_parent == p) {
		r->res_flags |= RESF_RECOVER_MASTER;
		new_master(ls, r, dlm_our_nodeid(ls));
	}
	return 0;
}

static int receive_rc_lock(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);
	struct dlm_lkb *lkb = NULL;
	struct dlm_list *qs[3];
	struct dlm_msg rp;
	bool recount = false;
	int k, status = 0;

	if (m->m_pkeylen && (!r || !is_master(ls, r)) &&
	    rc_child_here(ls, &r, m, hash))
		/* no memory for the child here: fails the recovery, no
		 * reply.  Answered -ENOMEM, the owner took it for a
		 * refusal and went on with a lock no master had (dlm-sim
		 * --alloc-faults 20 --faults --remaster --repoint --rehot
		 * 8 --ops 1000 --bounce seed 4472) */
		return -ENOMEM;
	if (r && is_master(ls, r) && dlm_recover_track_rsb(ls, r))
		/* a resource made here while we were stopped (a child of
		 * a root we master, that a client of ours locked, say)
		 * is no step's: taking the lock without it, the grant
		 * step never looked at it and the lock waited for ever
		 * on a queue nothing held (dlm-sim --alloc-faults 20
		 * --faults --remaster --repoint --rehot 8 --ops 1000
		 * --bounce --nodes 5 seed 462).  No memory to track it:
		 * the recovery fails, as above */
		return -ENOMEM;
	if (!r || !is_master(ls, r) || m->m_status < DLM_LKSTS_WAITING ||
	    m->m_status > DLM_LKSTS_CONVERT ||
	    (m->m_status != DLM_LKSTS_GRANTED && m->m_rqmode < DLM_LOCK_NL) ||
	    (m->m_status != DLM_LKSTS_WAITING && m->m_grmode < DLM_LOCK_NL)) {
		log_ls(ls, DLM_LOG_ERR, "recovery %u: bad lock %08x from node %u",
		       ls->ls_event, m->m_lkid, m->m_from);
		status = -EBADR;
		goto reply;
	}
	/* already here from an aborted attempt?  Only possible when r took
	 * locks in an earlier event of this recovery (none finished since):
	 * the search is skipped otherwise, keeping a recovery linear in the
	 * number of locks however many share a resource.  res_rc_event is
	 * the first event of this recovery in which r took a lock. */
	qs[0] = &r->res_grantq;
	qs[1] = &r->res_convertq;
	qs[2] = &r->res_waitq;
	if ((int32_t)(r->res_rc_event - ls->ls_generation) <= 0)
		r->res_rc_event = ls->ls_event;
	/* (or r's master copies came from a moved resource's records, and
	 * their owners resend them: remaster.c) */
	for (k = r->res_rc_event == ls->ls_event &&
		 !(r->res_flags & RESF_REPOINTED) ? 3 : 0; k < 3 && !lkb; k++) {
		struct dlm_list *pos;

		dlm_list_for_each(pos, qs[k]) {
			struct dlm_lkb *x = dlm_container_of(pos, struct dlm_lkb,
							     lkb_statequeue);

			if (is_master_copy(x) && x->lkb_nodeid == m->m_from &&
			    x->lkb_remid == m->m_lkid) {
				lkb = x;
				break;
			}
		}
	}
	if (lkb && (r->res_flags & RESF_REPOINTED) &&
	    !(lkb->lkb_flags & LKBF_REPOINT)) {
		/* a moved lock its owner took the REPOINT of (or one an
		 * RC_LOCK matched already): our copy is the lock, ahead of
		 * the owner's, whose answers to its operations are on their
		 * way; resent only because another of its locks on r awaited
		 * its re-point.  Taken in the owner's older state, a granted
		 * conversion went back to CW beside a PR granted since
		 * (dlm-sim --faults --remaster --repoint --rehot 8 --ops
		 * 1500 --bounce seed 531) */
		goto reply;
	}
	if (lkb)
		lkb->lkb_flags &= ~LKBF_REPOINT;
	if (!lkb) {
		lkb = dlm_lkb_create(ls, 0);
		if (lkb && !lkb_take_ranges(ls, lkb, m)) {
			dlm_lkb_free(ls, lkb);
			lkb = NULL;
		}
		if (!lkb)
			return -ENOMEM;	/* fails the recovery: no reply */
		lkb->lkb_flags = LKBF_MSTCPY | LKBF_WANT_BAST;
		lkb->lkb_nodeid = m->m_from;
		dlm_mstcpy_link(ls, lkb);
		lkb->lkb_remid = m->m_lkid;
		lkb->lkb_rsb = r;
		dlm_rsb_hold(ls, r);
	} else {
		/* queued: its modes, ranges and flags change in place below,
		 * and r's counts of them with them.  Not the same only when
		 * it came from a moved resource's record, which its owner may
		 * have converted since (RESF_REPOINTED, remaster.c) */
		dlm_lkb_count(r, lkb, -1);
		recount = true;
		if (!lkb_take_ranges(ls, lkb, m)) {
			dlm_lkb_count(r, lkb, 1);
			return -ENOMEM;	/* fails the recovery: no reply */
		}
	}
	lkb->lkb_ownerid = m->m_owner;
	lkb->lkb_exflags = m->m_exflags;
	lkb->lkb_grmode = m->m_grmode;
	lkb->lkb_rqmode = m->m_rqmode;
	lkb->lkb_lvbseq = m->m_lvbseq;
	lkb->lkb_token = m->m_token;
	if (m->m_exflags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	else
		lkb->lkb_flags &= ~LKBF_VALBLK;
	if (m->m_lvb && dlm_lvb_store(ls, &lkb->lkb_lvb, m->m_lvb)) {
		lkb->lkb_flags |= LKBF_LVB_KNOWN;
	} else {
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
	}
	if (m->m_sbflags & DLM_SBF_VALNOTVALID)
		lkb->lkb_flags |= LKBF_LVB_STALE;
	else
		lkb->lkb_flags &= ~LKBF_LVB_STALE;
	if (recount)
		dlm_lkb_count(r, lkb, 1);
	if (lkb->lkb_status != m->m_status) {
		if (lkb->lkb_status != DLM_LKSTS_NONE) {
			/* re-queue with the counts right */
			int8_t gr = lkb->lkb_grmode;

			dlm_queue_lkb(ls, r, lkb, DLM_LKSTS_WAITING);
			lkb->lkb_grmode = gr;
		}
		dlm_queue_lkb(ls, r, lkb, m->m_status);
	}
	r->res_flags |= RESF_NEW_MASTER;
reply:
	rc_msg(ls, &rp, DLM_RC_LOCK_REPLY);
	rp.m_remid = m->m_lkid;
	rp.m_lkid = lkb ? lkb->lkb_id : 0;
	rp.m_status = status;
	dlm_send_msg(ls, &rp, m->m_from);
	return 0;
}

/* RC_STATUS: the sender finished step m_status of event m_gen. */
static int receive_rc_status(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_rcstat *st = rcstat(ls, m->m_from);

	if (!st)
		return -ENOMEM;
	if (m->m_gen > st->rs_event) {
		st->rs_event = m->m_gen;
		st->rs_step = (uint32_t)m->m_status;
		st->rs_nothing = false;
		st->rs_partial = false;
	} else if (m->m_gen == st->rs_event &&
		   (uint32_t)m->m_status > st->rs_step) {
		st->rs_step = (uint32_t)m->m_status;
	}
	/* the sender's word on its masters to recover (QUIET STEPS) */
	if (m->m_gen == st->rs_event && m->m_status == DLM_RS_NODES) {
		st->rs_nothing = m->m_flags & DLM_MF_RC_NOTHING;
		st->rs_partial = m->m_flags & DLM_MF_RC_PARTIAL;
		st->rs_pgen = m->m_remid;
		st->rs_pmhash = m->m_lkid;
	}
	recover_run(ls);
	return 0;
}

/* RC_DIR_ADD: the sender masters m_key. */
static int receive_rc_dir_add(struct dlm_ls *ls, const struct dlm_msg *m)
{
	return dlm_dir_register(ls, m->m_key, m->m_keylen,
				dlm_hash_bytes(m->m_key, m->m_keylen),
				m->m_nodeid);
}

/* RC_DIR_ADDS: the sender masters every key of the list (wire.h). */
static int receive_rc_dir_adds(struct dlm_ls *ls, const struct dlm_msg *m)
{
	const unsigned char *key;
	unsigned int off = 0, keylen;
	int rv;

	while (dlm_key_list_next(m->m_key, m->m_keylen, &off, &key, &keylen)) {
		rv = dlm_dir_register(ls, key, keylen,
				      dlm_hash_bytes(key, keylen), m->m_nodeid);
		if (rv)
			return rv;
	}
	return 0;
}

/* RC_DIR_DROP: m_nodeid's lookup of m_key was answered after it
 * stopped; the record, if it names m_nodeid, goes (PARTIAL DIRECTORY). */
static int receive_rc_dir_drop(struct dlm_ls *ls, const struct dlm_msg *m)
{
	dlm_dir_remove(ls, m->m_key, m->m_keylen,
		       dlm_hash_bytes(m->m_key, m->m_keylen), m->m_nodeid);
	return 0;
}

/* One of the replies this step waits for came. */
static void reply_came(struct dlm_ls *ls)
{
	if (ls->ls_rc_out)
		ls->ls_rc_out--;
	recover_run(ls);
}

/* RC_LOOKUP_REPLY: m_key's master is m_nodeid. */
static int receive_rc_lookup_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen,
					 dlm_hash_bytes(m->m_key, m->m_keylen));

	if (m->m_status == -ENOMEM) {
		/* the directory node had no memory for the record: r has no
		 * master this recovery can stand by; it runs again */
		recovery_failed(ls, m->m_status);
		return 0;
	}
	if (r && !m->m_status && dlm_ls_is_member(ls, m->m_nodeid))
		new_master(ls, r, m->m_nodeid);
	else
		log_ls(ls, DLM_LOG_ERR, "recovery %u: lookup failed: %d",
		       ls->ls_event, m->m_status);
	reply_came(ls);
	return 0;
}

/* RC_LOCK_REPLY: the new master took our lock m_remid as m_lkid. */
static int receive_rc_lock_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);

	if (lkb && !is_master_copy(lkb) && !m->m_status) {
		lkb->lkb_remid = m->m_lkid;
		dlm_remaster_rc_reply(ls, lkb, m->m_from);
	} else
		log_ls(ls, DLM_LOG_ERR,
		       "recovery %u: node %u refused lock %08x: %d",
		       ls->ls_event, m->m_from, m->m_remid, m->m_status);
	reply_came(ls);
	return 0;
}

/* Our directory is complete: we passed the DIR barrier. */
static bool dir_complete(struct dlm_ls *ls)
{
	return ls->ls_rstep > DLM_RS_DIR ||
	       (ls->ls_rstep == DLM_RS_DIR && barrier(ls, DLM_RS_DIR));
}

#define RC_ANY_EVENT	0x1	/* taken in any state, of any event */
#define RC_KEY		0x2	/* must carry a resource key */
#define ANY_STEP	DLM_RS_NONE

/*
 * Every recovery message, its handler and what it needs.  A message of
 * another event, or in a lockspace not recovering, or from a non-member
 * is ignored (unless RC_ANY_EVENT); one that may only come in one step
 * ('step') is a protocol error in another; one whose handler is not
 * 'ready' yet is held (ls_rc_deferred) and handed to it by the step that
 * makes it ready.
 */
static const struct rc_handler {
	int		(*handle)(struct dlm_ls *ls, const struct dlm_msg *m);
	unsigned int	flags;
	enum dlm_rstep	step;			/* the only step it may come in */
	bool		(*ready)(struct dlm_ls *ls);	/* NULL: always */
} rc_handlers[] = {
#define RC(type)	[(type) - DLM_RC_STATUS]
	/* message              handler                  needs         only in step            held until */
	RC(DLM_RC_STATUS)       = { receive_rc_status,       RC_ANY_EVENT, ANY_STEP,               NULL },
	RC(DLM_RC_DIR_ADD)      = { receive_rc_dir_add,      RC_KEY,       ANY_STEP,               NULL },
	RC(DLM_RC_LOOKUP)       = { receive_rc_lookup,       RC_KEY,       ANY_STEP,               dir_complete },
	RC(DLM_RC_LOOKUP_REPLY) = { receive_rc_lookup_reply, RC_KEY,       DLM_RS_MASTERS_PENDING, NULL },
	RC(DLM_RC_LOCK)         = { receive_rc_lock,         RC_KEY,       ANY_STEP,               NULL },
	RC(DLM_RC_LOCK_REPLY)   = { receive_rc_lock_reply,   0,            DLM_RS_LOCKS_PENDING,   NULL },
	RC(DLM_RC_DIR_ADDS)     = { receive_rc_dir_adds,     RC_KEY,       ANY_STEP,               NULL },
	RC(DLM_RC_DIR_DROP)     = { receive_rc_dir_drop,     RC_KEY,       ANY_STEP,               NULL },
#undef RC
};

int dlm_recover_receive(struct dlm_ls *ls, const struct dlm_msg *m,
			const void *buf, size_t len)
{
	const struct rc_handler *h;
	size_t i;
	int rv;

	if (m->m_type < DLM_RC_STATUS)
		return -EOPNOTSUPP;
	i = (size_t)(m->m_type - DLM_RC_STATUS);
	if (i >= sizeof(rc_handlers) / sizeof(rc_handlers[0]) ||
	    !rc_handlers[i].handle)
		return -EOPNOTSUPP;
	h = &rc_handlers[i];
	if (!(h->flags & RC_ANY_EVENT) &&
	    (ls->ls_state != DLM_LS_RECOVERING || m->m_gen != ls->ls_event ||
	     !dlm_ls_is_member(ls, m->m_from))) {
		log_ls(ls, DLM_LOG_DEBUG, "ignored %s of event %u from node %u",
		       dlm_msg_type_str(m->m_type), m->m_gen, m->m_from);
		return 0;
	}
	if ((h->flags & RC_KEY) && !m->m_keylen)
		return -EBADMSG;
	if (h->step != ANY_STEP && ls->ls_rstep != h->step)
		return -EPROTO;
	if (h->ready && !h->ready(ls))
		rv = dlm_held_add(ls, &ls->ls_rc_deferred, m->m_from, buf, len);
	else
		rv = h->handle(ls, m);
	if (rv == -ENOMEM && ls->ls_state == DLM_LS_RECOVERING) {
		/* a recovery message we have no memory for: this recovery
		 * cannot end; it runs again under a newer event (every step
		 * is safe to run again), what the message said with it */
		recovery_failed(ls, rv);
		return 0;
	}
	return rv;
}
