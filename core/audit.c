/*
 * core/audit.c - finding a lock that can never make progress.
 *
 * A process copy whose resource is mastered on another node waits in two
 * ways: for the reply to an operation in flight (on ls_waiters), or, once
 * the master queued it, for a GRANT (on ls_blocked, below).  Links are
 * FIFO and exactly-once while both nodes run (lowcomms; a gap is handled
 * as LOST FRAMES by the daemon), so neither wait can be lost by the
 * transport.  But an engine bug, or an operator acknowledging a node that
 * was alive, can leave the two copies disagreeing: the master granted a
 * lock whose owner still waits, or forgot a lock its owner still has
 * queued.  Nothing then ever moves that lock, while everything around it
 * runs: the daemon's "nothing arrived" watchdog cannot see it.
 *
 * The audit asks.  On each tick (dlm_core_tick, the caller's clock) a
 * lock that has waited in the same state for audit_ms gets one AUDIT
 * message to the node it waits for, carrying its ids; that node answers
 * AUDIT_REPLY with the state of its master copy (its lkb_status, or
 * -ENOENT).  Because the link is FIFO both ways and the master answers
 * every operation at once, by the time the answer arrives everything the
 * master sent before it has been received:
 *   - an operation in flight that was sent before the AUDIT and is still
 *     unanswered when AUDIT_REPLY arrives lost its reply;
 *   - a queued lock that the master reports granted lost its GRANT, one it
 *     reports on another queue, or not at all, disagrees with it;
 *   - an AUDIT unanswered after another audit_ms means the node does not
 *     answer (a daemon stopped while corosync keeps it in the view); an
 *     answer that comes later, and agrees, ends that.
 * Such a lock is "stuck": logged once, at error level, with its resource,
 * and counted (dlm_ls_stats.ls_stuck), which the daemon shows as a
 * stalled lockspace.  The audit reports; it repairs nothing: the copies
 * disagree because something is wrong, and guessing which copy is right
 * could grant a lock twice.  A stuck lock stops being one when its state
 * changes (a reply or grant arrives, an operator purges it, recovery
 * rebuilds it).
 *
 * Any change of a lock's wait (an operation sent or answered, a queue
 * entered or left) restarts its clock and voids an audit in flight (each
 * AUDIT carries its send time in m_lvbseq, echoed by the answer, so the
 * answer to an older audit is told from the latest's), and a
 * recovery voids them all (AUDIT_REPLY of an older generation is
 * ignored, and the first tick after a recovery resets every clock), so a
 * stale answer is never compared with a newer state.  A lock that waits
 * legitimately (behind a holder that keeps its lock) costs one AUDIT and
 * one AUDIT_REPLY per audit_ms.
 *
 * Cost.  The tick walks the operations in flight and the queued remote
 * locks that are due: ls_blocked is kept in the order their clocks
 * started (a lock is moved to the tail whenever its clock restarts), so
 * the walk stops at the first one not due.  No lock operation scans.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/core_internal.h"

static const char *status_str(int status)
{
	switch (status) {
	case DLM_LKSTS_GRANTED:
		return "granted";
	case DLM_LKSTS_CONVERT:
		return "converting";
	case DLM_LKSTS_WAITING:
		return "waiting";
	case -ENOENT:
		return "unknown";
	default:
		return "in no queue";
	}
}

static void clear_stuck(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	if (lkb->lkb_flags & LKBF_STUCK) {
		ls->ls_nstuck--;
		log_ls(ls, DLM_LOG_NOTICE, "lock %08x is no longer stuck",
		       lkb->lkb_id);
	}
	lkb->lkb_flags &= ~(LKBF_STUCK | LKBF_AUDIT_SENT);
}

static void restart_clock(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	clear_stuck(ls, lkb);
	lkb->lkb_audit_ms = (uint32_t)ls->ls_core->core_now;
}

/* lkb's wait changed (or ended): its clock restarts, an audit in flight
 * is void. */
void dlm_audit_restart(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	restart_clock(ls, lkb);
	if (lkb->lkb_flags & LKBF_BLOCKED) {
		dlm_list_del(&lkb->lkb_qwait->lw_blocked);
		dlm_list_add_tail(&lkb->lkb_qwait->lw_blocked, &ls->ls_blocked);
	}
}

static void unlink_blocked(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	if (lkb->lkb_flags & LKBF_BLOCKED) {
		dlm_list_del(&lkb->lkb_qwait->lw_blocked);
		lkb->lkb_flags &= ~LKBF_BLOCKED;
		ls->ls_nblocked--;
		dlm_lkb_qwait_put(ls, lkb);
	}
}

/* Is lkb a process copy queued (WAITING or CONVERT) at a remote master? */
static bool queued_remote(struct dlm_ls *ls, const struct dlm_lkb *lkb)
{
	return (lkb->lkb_status == DLM_LKSTS_WAITING ||
		lkb->lkb_status == DLM_LKSTS_CONVERT) &&
	       !is_master_copy(lkb) && lkb->lkb_rsb &&
	       lkb->lkb_rsb->res_nodeid && !is_master(ls, lkb->lkb_rsb);
}

/* Put lkb, queued at a remote master, on ls_blocked.  Without memory for
 * its wait record it is left off and counted: the next tick tries again
 * (reaudit()). */
static void watch_queued(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_lkb_wait *w = dlm_lkb_qwait_get(ls, lkb);

	if (!w) {
		log_ls(ls, DLM_LOG_WARNING,
		       "lock %08x: no memory to audit its wait (tried again at "
		       "the next audit)", lkb->lkb_id);
		ls->ls_audit_unwatched++;
		return;
	}
	dlm_list_add_tail(&w->lw_blocked, &ls->ls_blocked);
	lkb->lkb_flags |= LKBF_BLOCKED;
	ls->ls_nblocked++;
}

/* The process copy lkb is now queued (WAITING or CONVERT) at a remote
 * master, or no longer: keep ls_blocked in step. */
void dlm_audit_queued(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	unlink_blocked(ls, lkb);
	restart_clock(ls, lkb);
	if (queued_remote(ls, lkb))
		watch_queued(ls, lkb);
}

static void mark_stuck(struct dlm_ls *ls, struct dlm_lkb *lkb, const char *why)
{
	char name[DLM_KEY_TEXT_LEN];

	if (lkb->lkb_flags & LKBF_STUCK)
		return;
	lkb->lkb_flags |= LKBF_STUCK;
	ls->ls_nstuck++;
	dlm_key_format(lkb->lkb_rsb->res_key, lkb->lkb_rsb->res_keylen, name,
		       sizeof(name));
	log_ls(ls, DLM_LOG_ERR,
	       "lock %08x on resource %s is stuck: %s; it cannot make progress "
	       "(dlmctl lockdump shows it; a recovery or purging its owner ends it)",
	       lkb->lkb_id, name, why);
}

/* The node lkb waits for: where its operation went, or its master. */
static uint32_t audit_peer(const struct dlm_lkb *lkb)
{
	if (lkb->lkb_wait_type != DLM_WAIT_NONE)
		return lkb->lkb_wait_nodeid;
	return lkb->lkb_rsb->res_nodeid;
}

static void send_audit(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_msg m;

	dlm_msg_init(&m, DLM_MSG_AUDIT);
	m.m_lkid = lkb->lkb_id;
	m.m_remid = lkb->lkb_remid;
	m.m_status = lkb->lkb_status;
	m.m_grmode = lkb->lkb_grmode;
	m.m_rqmode = lkb->lkb_rqmode;
	lkb->lkb_flags |= LKBF_AUDIT_SENT;
	lkb->lkb_audit_ms = (uint32_t)ls->ls_core->core_now;
	/* which audit this is: an answer to an earlier one is stale */
	m.m_lvbseq = lkb->lkb_audit_ms;
	ls->ls_audits_sent++;
	dlm_send_msg(ls, &m, audit_peer(lkb));
}

/* One lock's turn: audit it, or judge an audit nobody answered. */
static void audit_one(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	char why[96];

	if (lkb->lkb_flags & LKBF_STUCK)
		return;	/* until its state changes, or a late answer comes */
	if (lkb->lkb_flags & LKBF_REPOINT) {
		/* its resource moved: its new master's id comes with the
		 * REPOINT (remaster.c); its wait starts again then */
		dlm_audit_restart(ls, lkb);
		return;
	}
	if (lkb->lkb_flags & LKBF_AUDIT_SENT) {
		/* the audit stays outstanding: its answer, however late,
		 * is still judged (and may end this) */
		snprintf(why, sizeof(why), "node %u does not answer (an audit "
			 "is unanswered)", audit_peer(lkb));
		mark_stuck(ls, lkb, why);
		return;
	}
	send_audit(ls, lkb);
}

static void reaudit_one(void *arg, struct dlm_hnode *n)
{
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);
	struct dlm_ls *ls = arg;

	if ((lkb->lkb_flags & LKBF_BLOCKED) || !queued_remote(ls, lkb))
		return;
	if (lkb->lkb_wait_type == DLM_WAIT_NONE)
		restart_clock(ls, lkb);
	watch_queued(ls, lkb);
}

/* Put on ls_blocked the waits dlm_audit_queued() could not record for
 * want of memory: one walk of the locks per tick, only after such a
 * failure; what fails again is counted again for the next tick.  A wait
 * put on now starts its clock now: it is audited one period later.
 * Unless an operation of the lock is in flight (a cancel, a conversion):
 * the clock and the stuck mark are then that operation's audit's (on
 * ls_waiters), and are left alone; restarting them at every retry, tick
 * after tick while memory stays short, would keep that audit from ever
 * being due, and a lost reply from being found.  The wait then goes on
 * ls_blocked with its older clock, out of order, harmlessly: the walk
 * skips a lock with an operation in flight, and the answer puts it back
 * in clock order (dlm_audit_restart). */
static void reaudit(struct dlm_ls *ls)
{
	ls->ls_audit_unwatched = 0;
	dlm_htab_walk(&ls->ls_lkbtbl, reaudit_one, ls);
}

void dlm_audit_tick(struct dlm_ls *ls)
{
	uint64_t now = ls->ls_core->core_now;
	uint32_t period = ls->ls_core->core_cfg.audit_ms;
	struct dlm_list *pos;

	if (!period || !dlm_ls_running(ls))
		return;
	if (ls->ls_audit_unwatched)
		reaudit(ls);
	if (ls->ls_audit_gen != ls->ls_generation) {
		/* a recovery ran: every wait starts afresh */
		ls->ls_audit_gen = ls->ls_generation;
		dlm_list_for_each(pos, &ls->ls_waiters)
			restart_clock(ls, dlm_container_of(pos, struct dlm_lkb,
							   lkb_waiter));
		dlm_list_for_each(pos, &ls->ls_blocked)
			restart_clock(ls, dlm_container_of(pos,
							   struct dlm_lkb_wait,
							   lw_blocked)->lw_lkb);
		return;
	}
	dlm_list_for_each(pos, &ls->ls_waiters) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_waiter);

		if ((uint32_t)now - lkb->lkb_audit_ms >= period &&
		    audit_peer(lkb) != dlm_our_nodeid(ls))
			audit_one(ls, lkb);
	}
	/* ls_blocked is in clock order; each one audited moves to the tail */
	for (uint64_t n = ls->ls_nblocked; n && !dlm_list_empty(&ls->ls_blocked);
	     n--) {
		struct dlm_lkb_wait *qw = dlm_list_first(&ls->ls_blocked,
							 struct dlm_lkb_wait,
							 lw_blocked);
		struct dlm_lkb *lkb = qw->lw_lkb;

		if ((uint32_t)now - lkb->lkb_audit_ms < period)
			break;
		if (lkb->lkb_wait_type != DLM_WAIT_NONE) {
			/* an operation in flight: audited as a waiter, and
			 * back in clock order when it is answered */
			dlm_list_del(&qw->lw_blocked);
			dlm_list_add_tail(&qw->lw_blocked, &ls->ls_blocked);
			continue;
		}
		if (lkb->lkb_rsb->res_nodeid == 0 ||
		    is_master(ls, lkb->lkb_rsb)) {
			/* recovery made us its master, or it has none yet */
			unlink_blocked(ls, lkb);
			clear_stuck(ls, lkb);
			continue;
		}
		audit_one(ls, lkb);
		dlm_list_del(&qw->lw_blocked);
		dlm_list_add_tail(&qw->lw_blocked, &ls->ls_blocked);
	}
}

/* Master side: report the state of the master copy an AUDIT names. */
static int receive_audit(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);
	struct dlm_msg r;

	dlm_msg_init(&r, DLM_MSG_AUDIT_REPLY);
	r.m_remid = m->m_lkid;
	r.m_lvbseq = m->m_lvbseq;
	if (lkb && is_master_copy(lkb) && lkb->lkb_nodeid == m->m_from &&
	    lkb->lkb_remid == m->m_lkid) {
		r.m_lkid = lkb->lkb_id;
		r.m_status = lkb->lkb_status;
		r.m_grmode = lkb->lkb_grmode;
		r.m_rqmode = lkb->lkb_rqmode;
	} else {
		r.m_lkid = m->m_remid;
		r.m_status = -ENOENT;
		r.m_grmode = DLM_LOCK_IV;
		r.m_rqmode = DLM_LOCK_IV;
	}
	dlm_send_msg(ls, &r, m->m_from);
	return 0;
}

/* Process copy side: compare the master's answer with our copy. */
static int receive_audit_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);
	char why[128];

	if (!lkb || is_master_copy(lkb) || !(lkb->lkb_flags & LKBF_AUDIT_SENT) ||
	    m->m_lvbseq != lkb->lkb_audit_ms ||
	    m->m_gen != ls->ls_generation || audit_peer(lkb) != m->m_from)
		return 0;	/* a stale answer: the lock has moved on */
	lkb->lkb_flags &= ~LKBF_AUDIT_SENT;
	if (lkb->lkb_wait_type != DLM_WAIT_NONE) {
		/* sent before the AUDIT, answered at once by its node, and
		 * the reply did not come ahead of AUDIT_REPLY */
		static const char *const ops[] = {
			[DLM_WAIT_REQUEST] = "request", [DLM_WAIT_CONVERT] = "convert",
			[DLM_WAIT_UNLOCK] = "unlock", [DLM_WAIT_CANCEL] = "cancel",
		};
		const char *op = lkb->lkb_wait_type < sizeof(ops) / sizeof(ops[0]) &&
				 ops[lkb->lkb_wait_type] ? ops[lkb->lkb_wait_type] :
				 "operation";

		snprintf(why, sizeof(why), "node %u answered an audit but never "
			 "our %s, sent before it", m->m_from, op);
		mark_stuck(ls, lkb, why);
		return 0;
	}
	if (!(lkb->lkb_flags & LKBF_BLOCKED))
		return 0;
	if (m->m_status == lkb->lkb_status && m->m_rqmode == lkb->lkb_rqmode) {
		/* both copies agree: it waits behind others (a master that
		 * did not answer in time has answered now) */
		clear_stuck(ls, lkb);
		lkb->lkb_audit_ms = (uint32_t)ls->ls_core->core_now;
		return 0;
	}
	snprintf(why, sizeof(why), "it is %s %s here but %s %s/%s at its master, "
		 "node %u", status_str(lkb->lkb_status),
		 dlm_mode_str(lkb->lkb_rqmode), status_str(m->m_status),
		 dlm_mode_str(m->m_grmode), dlm_mode_str(m->m_rqmode), m->m_from);
	mark_stuck(ls, lkb, why);
	return 0;
}

int dlm_audit_receive(struct dlm_ls *ls, const struct dlm_msg *m)
{
	if (m->m_type == DLM_MSG_AUDIT)
		return receive_audit(ls, m);
	return receive_audit_reply(ls, m);
}
