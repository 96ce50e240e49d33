/*
 * core/lock.c - locking: the grant rules, the request/convert/unlock/
 * cancel operations, and the messages that carry them between nodes.
 *
 * Process copies and master copies.  A lock requested by a local client
 * is a "process copy" on this node.  The resource's master holds the
 * authoritative queues; when the master is another node it keeps a
 * "master copy" of the lock (LKBF_MSTCPY), and the two copies know each
 * other's ids (lkb_remid).  When this node masters the resource, the
 * process copy is itself on the master's queues.
 *
 * Finding the master.  A resource's master is found through its directory
 * node (resource.c).  The first lock on an unknown resource asks the
 * directory (LOOKUP); other locks on it wait on res_lookupq until the
 * answer (LOOKUP_REPLY) names the master.  A master that was dropped
 * meanwhile answers a request with -EBADR and the requester looks up
 * again: masters of roots are only ever created by the directory, one
 * record per name, so there is never more than one.  A sub-resource has
 * no record and is never looked up: its master is its parent's, taken
 * from the parent lock at each request, and a child REQUEST carries the
 * parent's key so that the master refuses it (-EBADR) unless it masters
 * the parent too (resource.c, "Sub-resources are mastered with their
 * parent").  With remastering on (core/remaster.c), a root's master may
 * hand it to the one node that uses it: a request that reaches the old
 * master afterwards is refused -EBADR with the new master as a hint
 * (m_nodeid), and a conversion, unlock or cancel for a lock it no longer
 * knows is refused -EBADR too; the new master redoes those locally.
 *
 * The conversation, requester R and master M (each arrow is a message;
 * when R == M none is sent and the same functions run locally):
 *
 *   R --REQUEST--> M      M: do_request(): grant, queue or refuse
 *   R <--REQUEST_REPLY--  status 0 / -EINPROGRESS (queued) / -EAGAIN
 *   R <--GRANT--          later, when a queued lock is granted
 *   R <--BAST--           a granted lock of R blocks someone
 *   R --CONVERT--> M      ... CONVERT_REPLY, like a request
 *   R --UNLOCK--> M       ... UNLOCK_REPLY with -DLM_EUNLOCK
 *   R --CANCEL--> M       ... CANCEL_REPLY with -DLM_ECANCEL, or -EBUSY
 *                         when the lock was granted first (the GRANT is
 *                         then already ahead of the reply on the link)
 *
 * Every message has one sender named after it (send_request(),
 * send_convert_reply(), send_grant(), ... in the "sending" section) and
 * one receive_*() handler named the same way; the four replies share
 * one prologue, receive_reply().
 *
 * Each process copy has at most one operation in flight (lkb_wait_type).
 * A cancel or forced unlock that arrives while a request or conversion is
 * in flight is remembered (LKBF_OVERLAP_*) and sent when the reply comes.
 * Links are FIFO, which the protocol relies on: a GRANT is never
 * overtaken by a later reply from the same master.
 *
 * The grant rules (the "rules" section below):
 *  - A new request is granted when its mode is compatible with every
 *    granted lock (converting locks count with their granted mode) and
 *    nothing is queued ahead of it: convert and wait queues empty.
 *    NOORDER skips the queue test, EXPEDITE (new NL requests only) skips
 *    everything.
 *  - A conversion is granted when compatible with every other granted
 *    lock, regardless of other queued conversions, unless QUECVT asks it
 *    to wait behind them.  Down-conversions are therefore always granted
 *    at once.
 *  - When a lock leaves or weakens, the convert queue is rescanned in
 *    order, then the wait queue in FIFO order until the first request
 *    that cannot be granted (NOORDER requests behind it still can be).
 *  - ALTPR/ALTCW grant the alternate mode (with DLM_SBF_ALTMODE) when the
 *    requested one cannot be granted but the alternate can.
 *  - A conversion that cannot be granted and closes a cycle of converting
 *    locks each blocked by the next one's granted mode is a conversion
 *    deadlock: it is cancelled with -EDEADLK, or with CONVDEADLK its
 *    granted mode is demoted to NL (DLM_SBF_DEMOTED) and it waits on.
 *    A cycle can only be closed by the conversion entering the queue, so
 *    checking there finds every one.  NODLCKWT exempts a lock.
 *  - Blocking ASTs go to every granted lock incompatible with a queued
 *    request (NOQUEUE requests only with NOQUEUEBAST), once per mode:
 *    lkb_highbast remembers the strongest mode already sent and is reset
 *    when the lock is granted anew.
 *  - Ranges: two locks conflict only if their modes are incompatible and
 *    their ranges overlap.
 *  - LVBs: a lock granted PW or EX that converts down (or to the same
 *    mode) or unlocks with VALBLK writes its value into the resource, or
 *    with IVVALBLK marks the resource's value invalid; every other grant
 *    with VALBLK reads the resource's value, with DLM_SBF_VALNOTVALID if
 *    it is invalid.
 *
 * Out of memory (core/alloc.c; dlm-sim --alloc-faults proves it).  The
 * rule: an operation fails with -ENOMEM where it can still be refused,
 * whole, before it changes anything; past that point nothing allocates,
 * or what cannot be had is retried later.  Never is a message dropped:
 * every message that asks for something is answered.
 *  - A local call (dlm_core_lock, dlm_core_unlock) returns -ENOMEM and
 *    has changed nothing.  So that a write never needs memory it cannot
 *    get, an operation with VALBLK that writes a value (not zeros: no
 *    buffer reads as zeros, issue 14) takes room for it at the call
 *    (lvb_room(): the lock's buffer, and the resource's if it writes it
 *    here); a read takes room only when the value it will read is known
 *    here.  A conversion-deadlock search needs no memory for a convert
 *    queue of up to 32 locks; a longer one without it refuses the
 *    conversion (do_convert), or at a new master's recovery fails the
 *    step, to run again (dlm_recover_deadlocks).
 *  - A REQUEST, CONVERT or UNLOCK the master has no memory for (a master
 *    copy, a range record, the room for a value) is answered -ENOMEM and
 *    refused whole: the requester completes the operation with -ENOMEM
 *    and holds what it held.  A refused (or cancelled) conversion or
 *    unlock that was to write leaves its lock's copy of the value not
 *    known (revert_convert, unlock_unwritten): it holds the value that
 *    was not written, which a recovery must not take as the resource's.  A LOOKUP the directory node has no record
 *    for is answered -ENOMEM: the requests waiting for it fail.  The
 *    sender redoing the operation is its client's choice.
 *  - A GRANT, a BAST and the replies only change what exists (buffers
 *    were taken at the call), so they need no memory.
 *  - A wait that finds no memory for its deadlock record is watched again
 *    at the next tick (deadlock.c).
 *  - An unlock or conversion redone because its master changed
 *    (dlm_redo_op) is refused -ENOMEM as above when there is no room
 *    for the value it writes, by the new master or, if this node is the
 *    master now, here (unlock_lkb; dlm_redo_op for a conversion): the
 *    room was taken at the call only where the master was then.  An
 *    unlock keeps its own flags, not forced; but a purged lock's unlock
 *    (its owner went while it was on its way) cannot be refused, as no
 *    one would ask again: done, its value lost as a purge's.  A
 *    down-conversion's write is never lost while its writer is told it
 *    succeeded (test-core-remaster test_down_convert_redone_no_room).
 *  - Left as before, value lost and said so (VALNOTVALID): a forced
 *    unlock's write (a purge cannot be refused), and a read whose
 *    buffer finds no memory at the grant (that reader gets zeros
 *    flagged VALNOTVALID; the resource's value stays valid for the
 *    others): a new request's, when its master was not known here at
 *    the call, or a queued one's.
 *  - Recovery messages and steps: see core/recover.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* ------------------------------------------------------------------ */
/* rules                                                              */
/* ------------------------------------------------------------------ */

/* compat[granted][requested], 1 = compatible; index by DLM_LOCK_* */
static const uint8_t compat_matrix[DLM_NUM_MODES][DLM_NUM_MODES] = {
	/*           NL CR CW PR PW EX */
	/* NL */   {  1, 1, 1, 1, 1, 1 },
	/* CR */   {  1, 1, 1, 1, 1, 0 },
	/* CW */   {  1, 1, 1, 0, 0, 0 },
	/* PR */   {  1, 1, 0, 1, 0, 0 },
	/* PW */   {  1, 1, 0, 0, 0, 0 },
	/* EX */   {  1, 0, 0, 0, 0, 0 },
};

/* quecvt_ok[granted][requested]: conversions that may carry QUECVT
 * (those to a mode that is not already implied by the granted one) */
static const uint8_t quecvt_matrix[DLM_NUM_MODES][DLM_NUM_MODES] = {
	/*           NL CR CW PR PW EX */
	/* NL */   {  0, 1, 1, 1, 1, 1 },
	/* CR */   {  0, 0, 1, 1, 1, 1 },
	/* CW */   {  0, 0, 0, 1, 1, 1 },
	/* PR */   {  0, 0, 1, 0, 1, 1 },
	/* PW */   {  0, 0, 0, 0, 0, 1 },
	/* EX */   {  0, 0, 0, 0, 0, 0 },
};

static const char *const mode_names[DLM_NUM_MODES] = {
	"NL", "CR", "CW", "PR", "PW", "EX"
};

const char *dlm_mode_str(int mode)
{
	if (mode < 0 || mode >= DLM_NUM_MODES)
		return "--";
	return mode_names[mode];
}

static bool mode_valid(int mode)
{
	return mode >= DLM_LOCK_NL && mode <= DLM_LOCK_EX;
}

int dlm_modes_compat(int m1, int m2)
{
	if (!mode_valid(m1) || !mode_valid(m2))
		return 1;	/* IV holds nothing */
	return compat_matrix[m1][m2];
}

static bool fault(const struct dlm_ls *ls, enum dlm_core_fault f)
{
	return ls->ls_core->core_fault == f;
}

static bool compat(const struct dlm_ls *ls, int m1, int m2)
{
	if (fault(ls, DLM_FAULT_COMPAT_PR_PW) &&
	    ((m1 == DLM_LOCK_PR && m2 == DLM_LOCK_PW) ||
	     (m1 == DLM_LOCK_PW && m2 == DLM_LOCK_PR)))
		return true;
	return dlm_modes_compat(m1, m2);
}

static bool ranges_overlap(const struct dlm_ls *ls, const struct dlm_range *a,
			   const struct dlm_range *b)
{
	if (fault(ls, DLM_FAULT_RANGE_IGNORED))
		return false;
	return a->ra_start <= b->ra_end && b->ra_start <= a->ra_end;
}

/* ------------------------------------------------------------------ */
/* queues                                                             */
/* ------------------------------------------------------------------ */

static void count_held(struct dlm_rsb *r, struct dlm_lkb *lkb, int delta)
{
	if (!mode_valid(lkb->lkb_grmode))
		return;
	if (lkb->lkb_grmode > DLM_LOCK_NL)
		r->res_grcount[lkb->lkb_grmode - 1] += (uint32_t)delta;
	if (!dlm_range_is_whole(dlm_lkb_grrange(lkb)))
		r->res_nranged += (uint32_t)delta;
}

/* Take lkb off whatever queue of r it is on. */
static void del_from_queue(struct dlm_ls *ls, struct dlm_rsb *r,
			   struct dlm_lkb *lkb)
{
	if (holds_grmode(lkb))
		count_held(r, lkb, -1);
	if (lkb->lkb_status == DLM_LKSTS_WAITING &&
	    (lkb->lkb_exflags & DLM_LKF_NOORDER))
		r->res_nnoorder--;
	if (lkb->lkb_status != DLM_LKSTS_NONE)
		dlm_list_del(&lkb->lkb_statequeue);
	lkb->lkb_status = DLM_LKSTS_NONE;
	if (lkb->lkb_flags & (LKBF_BLOCKED | LKBF_STUCK | LKBF_AUDIT_SENT))
		dlm_audit_queued(ls, lkb);
	if (lkb->lkb_flags & LKBF_DLWAIT)
		dlm_deadlock_queued(ls, lkb);
}

static void add_to_queue(struct dlm_ls *ls, struct dlm_rsb *r,
			 struct dlm_lkb *lkb, int status)
{
	struct dlm_list *q;
	bool head = lkb->lkb_exflags & DLM_LKF_HEADQUE;

	del_from_queue(ls, r, lkb);
	switch (status) {
	case DLM_LKSTS_GRANTED:
		q = &r->res_grantq;
		head = false;
		break;
	case DLM_LKSTS_CONVERT:
		q = &r->res_convertq;
		break;
	default:
		q = &r->res_waitq;
		if (lkb->lkb_exflags & DLM_LKF_NOORDER)
			r->res_nnoorder++;
		break;
	}
	if (head)
		dlm_list_add_head(&lkb->lkb_statequeue, q);
	else
		dlm_list_add_tail(&lkb->lkb_statequeue, q);
	lkb->lkb_status = (uint8_t)status;
	if (holds_grmode(lkb))
		count_held(r, lkb, 1);
	if (status != DLM_LKSTS_GRANTED && !is_master_copy(lkb)) {
		dlm_audit_queued(ls, lkb);
		dlm_deadlock_queued(ls, lkb);
	}
}

/* Change the granted mode/range of a lock that may be holding. */
static void set_grmode(struct dlm_ls *ls, struct dlm_rsb *r,
		       struct dlm_lkb *lkb, int mode,
		       const struct dlm_range *range)
{
	bool held = holds_grmode(lkb);

	if (held)
		count_held(r, lkb, -1);
	lkb->lkb_grmode = (int8_t)mode;
	/* range is the lock's own: its record is there if it is partial */
	(void)dlm_lkb_set_range(ls, lkb, DLM_LKB_GR, range);
	if (held)
		count_held(r, lkb, 1);
}

/* ------------------------------------------------------------------ */
/* compatibility with what is granted                                 */
/* ------------------------------------------------------------------ */

static bool queue_conflict(const struct dlm_ls *ls, const struct dlm_list *q,
			   const struct dlm_lkb *lkb, int mode,
			   const struct dlm_range *range)
{
	const struct dlm_list *pos;

	dlm_list_for_each(pos, q) {
		const struct dlm_lkb *g = dlm_container_of(pos, struct dlm_lkb,
							   lkb_statequeue);

		if (g == lkb)
			continue;
		if (!compat(ls, g->lkb_grmode, mode) &&
		    ranges_overlap(ls, dlm_lkb_grrange(g), range))
			return true;
	}
	return false;
}

/* Is 'mode' over 'range' compatible with every lock holding a granted
 * mode on r, lkb itself excepted?  Without partial ranges the per-mode
 * counts answer in constant time, however many locks are granted. */
static bool compat_with_granted(struct dlm_ls *ls, const struct dlm_rsb *r,
				const struct dlm_lkb *lkb, int mode,
				const struct dlm_range *range)
{
	int m;

	if (r->res_nranged == 0 || (dlm_range_is_whole(range) &&
				    !fault(ls, DLM_FAULT_RANGE_IGNORED))) {
		bool any_partial = r->res_nranged != 0;

		if (!any_partial) {
			/* NL (not counted) is compatible with any mode */
			for (m = DLM_LOCK_NL + 1; m < DLM_NUM_MODES; m++) {
				uint32_t n = r->res_grcount[m - 1];

				if (holds_grmode(lkb) && lkb->lkb_grmode == m)
					n--;
				if (n && !compat(ls, m, mode))
					return false;
			}
			return true;
		}
	}
	return !queue_conflict(ls, &r->res_grantq, lkb, mode, range) &&
	       !queue_conflict(ls, &r->res_convertq, lkb, mode, range);
}

/* In the convert queue q[0..n-1] (queue order), does q[i] wait for q[j]?
 * Either q[j]'s granted mode conflicts with what q[i] asks for, or q[i]
 * asked to queue behind earlier conversions (QUECVT) and q[j] is one. */
static bool waits_for(const struct dlm_ls *ls, struct dlm_lkb *const *q,
		      size_t i, size_t j)
{
	const struct dlm_lkb *a = q[i], *b = q[j];

	if (i == j)
		return false;
	/* position counts, not how the lock got there: a later HEADQUE
	 * conversion can put itself ahead of an earlier QUECVT one */
	if (j < i && (a->lkb_exflags & DLM_LKF_QUECVT))
		return true;
	return !compat(ls, b->lkb_grmode, a->lkb_rqmode) &&
	       ranges_overlap(ls, dlm_lkb_grrange(b), dlm_lkb_rqrange(a));
}

/* Mark in 'seen' every lock reachable from q[me] along "waits for"
 * (forward) or against it (backward). */
static void reach(const struct dlm_ls *ls, struct dlm_lkb *const *q, size_t n,
		  size_t me, bool forward, bool *seen, size_t *stack)
{
	size_t top = 0, i, j;

	stack[top++] = me;
	while (top) {
		i = stack[--top];
		for (j = 0; j < n; j++) {
			bool edge = forward ? waits_for(ls, q, i, j) :
					      waits_for(ls, q, j, i);

			if (edge && !seen[j]) {
				seen[j] = true;
				stack[top++] = j;
			}
		}
	}
}

/* Does lkb, just queued for conversion, close a cycle of converting locks
 * each waiting for the next?  Every edge of a new cycle involves the lock
 * that entered last, so checking on entry finds them all.  Returns the
 * lock of the cycle to resolve, or NULL: lkb itself if it holds a mode
 * above NL and is not exempt (NODLCKWT), else another member holding a
 * mode above NL (every cycle has one: NL blocks no mode, and queue order
 * alone cannot close a cycle).  Costs O(n^2) in the length of the convert
 * queue, which only holds conversions that are actually blocked.
 *
 * A queue of up to CVDL_ON_STACK conversions is searched without
 * allocating; a longer one needs memory, and without it *nomem is set
 * (the check could not be made: the caller must not leave lkb queued on
 * the guess that it closes no cycle, or a deadlock could hang for good). */
#define CVDL_ON_STACK	32
static struct dlm_lkb *conversion_deadlock(struct dlm_ls *ls, struct dlm_rsb *r,
					   struct dlm_lkb *lkb, bool *nomem)
{
	struct dlm_lkb *q_s[CVDL_ON_STACK], **q = q_s, *victim = NULL;
	size_t stack_s[CVDL_ON_STACK + 1], *stack = stack_s;
	bool fwd_s[CVDL_ON_STACK], bwd_s[CVDL_ON_STACK];
	bool *fwd = fwd_s, *bwd = bwd_s;
	size_t n = 0, me = 0, i;
	struct dlm_list *pos;

	*nomem = false;
	dlm_list_for_each(pos, &r->res_convertq)
		n++;
	if (n < 2)
		return NULL;
	if (n > CVDL_ON_STACK) {
		q = dlm_malloc(ls->ls_core, n * sizeof(*q));
		stack = dlm_malloc(ls->ls_core, (n + 1) * sizeof(*stack));
		fwd = dlm_malloc(ls->ls_core, n * sizeof(*fwd));
		bwd = dlm_malloc(ls->ls_core, n * sizeof(*bwd));
		if (!q || !stack || !fwd || !bwd) {
			*nomem = true;
			goto out;
		}
	}
	memset(fwd, 0, n * sizeof(*fwd));
	memset(bwd, 0, n * sizeof(*bwd));
	i = 0;
	dlm_list_for_each(pos, &r->res_convertq) {
		q[i] = dlm_container_of(pos, struct dlm_lkb, lkb_statequeue);
		if (q[i] == lkb)
			me = i;
		i++;
	}
	reach(ls, q, n, me, true, fwd, stack);
	if (!fwd[me])
		goto out;		/* lkb cannot reach itself: no cycle */
	reach(ls, q, n, me, false, bwd, stack);
	if (lkb->lkb_grmode != DLM_LOCK_NL &&
	    !(lkb->lkb_exflags & DLM_LKF_NODLCKWT)) {
		victim = lkb;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (i == me || !fwd[i] || !bwd[i] || q[i]->lkb_grmode == DLM_LOCK_NL)
			continue;
		if (!(q[i]->lkb_exflags & DLM_LKF_NODLCKWT)) {
			victim = q[i];
			break;
		}
	}
	/* if every lock that could give way is exempt, the deadlock stays,
	 * as NODLCKWT asks */
out:
	if (n > CVDL_ON_STACK) {
		free(q);
		free(stack);
		free(fwd);
		free(bwd);
	}
	return victim;
}

/* ------------------------------------------------------------------ */
/* ASTs and messages                                                  */
/* ------------------------------------------------------------------ */

/* What every AST about lkb says: which lock, whose, its cookie, and the
 * mode it holds. */
static void ast_of(struct dlm_ast *ast, enum dlm_ast_type type,
		   struct dlm_ls *ls, const struct dlm_lkb *lkb)
{
	*ast = (struct dlm_ast){ .type = type, .ls = ls, .ls_ctx = ls->ls_ctx,
				 .lkid = lkb->lkb_id, .owner = lkb->lkb_ownerid,
				 .astarg = lkb->lkb_astarg,
				 .grmode = lkb->lkb_grmode };
}

static void cast_local(struct dlm_ls *ls, struct dlm_lkb *lkb, int status)
{
	struct dlm_core *core = ls->ls_core;
	struct dlm_ast ast;

	/* a deadlock's victim: its cancel reports the deadlock */
	status = dlm_deadlock_status(lkb, status);
	if (lkb->lkb_flags & (LKBF_PURGED | LKBF_ORPHAN))
		return;
	ast_of(&ast, DLM_AST_COMP, ls, lkb);
	ast.status = status;
	ast.sbflags = lkb->lkb_sbflags;
	ast.bastmode = DLM_LOCK_IV;
	if ((lkb->lkb_flags & LKBF_VALBLK) && status == 0)
		ast.lvb = dlm_lkb_lvb(lkb);
	if (status == 0)
		ast.token = dlm_lkb_token(lkb);
	lkb->lkb_sbflags = 0;
	core->core_ops.ast(core->core_ctx, &ast);
}

static void bast_local(struct dlm_ls *ls, struct dlm_lkb *lkb, int mode)
{
	struct dlm_core *core = ls->ls_core;
	struct dlm_ast ast;

	/* remembered for whoever adopts the lock, should its owner go:
	 * the master sends no repeat */
	if (mode > lkb->lkb_last_bast)
		lkb->lkb_last_bast = (int8_t)mode;
	if (lkb->lkb_flags & (LKBF_PURGED | LKBF_ORPHAN) ||
	    !(lkb->lkb_flags & LKBF_WANT_BAST))
		return;
	ast_of(&ast, DLM_AST_BAST, ls, lkb);
	ast.bastmode = mode;
	core->core_ops.ast(core->core_ctx, &ast);
}

void dlm_send_msg(struct dlm_ls *ls, struct dlm_msg *m, uint32_t to)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	int len;

	m->m_lsid = ls->ls_id;
	m->m_from = dlm_our_nodeid(ls);
	if (!dlm_msg_is_recovery(m->m_type))
		m->m_gen = ls->ls_generation;
	m->m_clock = ls->ls_token;
	m->m_to = to;
	len = dlm_msg_encode(m, buf, sizeof(buf));
	if (len < 0) {
		log_ls(ls, DLM_LOG_ERR, "cannot encode %s for node %u",
		       dlm_msg_type_str(m->m_type), to);
		return;
	}
	ls->ls_msgs_sent++;
	ls->ls_core->core_ops.send(ls->ls_core->core_ctx, to, buf, (size_t)len);
}

/* A message about lkb: ids, modes, flags, ranges, and the LVB when the
 * lock carries one. */
static void lkb_msg(struct dlm_msg *m, int type, const struct dlm_lkb *lkb,
		    int status)
{
	dlm_msg_init(m, type);
	m->m_lkid = lkb->lkb_id;
	m->m_remid = lkb->lkb_remid;
	m->m_exflags = lkb->lkb_exflags;
	m->m_sbflags = lkb->lkb_sbflags;
	m->m_status = status;
	m->m_grmode = lkb->lkb_grmode;
	m->m_rqmode = lkb->lkb_rqmode;
	m->m_owner = lkb->lkb_ownerid;
	m->m_lvbseq = lkb->lkb_lvbseq;
	m->m_token = dlm_lkb_token(lkb);
	m->m_grrange = *dlm_lkb_grrange(lkb);
	m->m_rqrange = *dlm_lkb_rqrange(lkb);
	if (lkb->lkb_flags & LKBF_VALBLK) {
		m->m_lvb = dlm_lkb_lvb(lkb);
		m->m_lvblen = DLM_LVB_LEN;
	}
}

/* To the master copy's owner node, or to a process copy's master. */
static uint32_t lkb_peer(const struct dlm_lkb *lkb)
{
	return is_master_copy(lkb) ? lkb->lkb_nodeid : lkb->lkb_rsb->res_nodeid;
}

/* The common part of the senders below: a message about lkb to its peer. */
static void send_lkb(struct dlm_ls *ls, int type, struct dlm_lkb *lkb,
		     int status)
{
	struct dlm_msg m;

	lkb_msg(&m, type, lkb, status);
	if (type == DLM_MSG_REQUEST) {
		struct dlm_rsb *parent = lkb->lkb_rsb->res_parent;

		m.m_key = lkb->lkb_rsb->res_key;
		m.m_keylen = lkb->lkb_rsb->res_keylen;
		if (parent) {
			/* its master checks it masters the parent too */
			m.m_pkey = parent->res_key;
			m.m_pkeylen = parent->res_keylen;
		}
	}
	dlm_send_msg(ls, &m, lkb_peer(lkb));
	if (is_master_copy(lkb))
		lkb->lkb_sbflags = 0;
}

static void add_waiter(struct dlm_ls *ls, struct dlm_lkb *lkb, int wait_type)
{
	lkb->lkb_wait_type = (uint8_t)wait_type;
	lkb->lkb_wait_nodeid = lkb->lkb_rsb->res_nodeid;
	if (wait_type != DLM_WAIT_LOOKUP && dlm_list_empty(&lkb->lkb_waiter)) {
		dlm_list_add_tail(&lkb->lkb_waiter, &ls->ls_waiters);
		ls->ls_nwaiters++;
	}
	dlm_audit_restart(ls, lkb);
}

static void remove_waiter(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	if (lkb->lkb_wait_type != DLM_WAIT_NONE)
		dlm_audit_restart(ls, lkb);
	lkb->lkb_wait_type = DLM_WAIT_NONE;
	if (lkb->lkb_flags & LKBF_RESEND) {
		lkb->lkb_flags &= ~LKBF_RESEND;
		dlm_list_del(&lkb->lkb_waiter);
	} else if (!dlm_list_empty(&lkb->lkb_waiter)) {
		dlm_list_del(&lkb->lkb_waiter);
		ls->ls_nwaiters--;
	}
}

/* ------------------------------------------------------------------ */
/* sending: one named sender per message                              */
/* ------------------------------------------------------------------ */

/* Process copy to master; each starts the lock's operation in flight. */

static void send_request(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	add_waiter(ls, lkb, DLM_WAIT_REQUEST);
	send_lkb(ls, DLM_MSG_REQUEST, lkb, 0);
}

static void send_convert(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	add_waiter(ls, lkb, DLM_WAIT_CONVERT);
	send_lkb(ls, DLM_MSG_CONVERT, lkb, 0);
}

static void send_cancel(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	add_waiter(ls, lkb, DLM_WAIT_CANCEL);
	send_lkb(ls, DLM_MSG_CANCEL, lkb, 0);
}

/* With the unlock's own flags (lkb_unlock_flags, kept there should it
 * have to be redone: dlm_redo_op, when a master that moved the resource
 * away refuses it, core/remaster.c), and the LVB only with VALBLK. */
static void send_unlock(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	uint32_t flags = lkb->lkb_unlock_flags;
	struct dlm_msg m;

	add_waiter(ls, lkb, DLM_WAIT_UNLOCK);
	lkb_msg(&m, DLM_MSG_UNLOCK, lkb, 0);
	m.m_exflags = flags;
	m.m_flags = (flags & DLM_LKF_FORCEUNLOCK) ? DLM_MF_FORCE : 0;
	if (flags & DLM_LKF_VALBLK) {
		m.m_lvb = dlm_lkb_lvb(lkb);
		m.m_lvblen = DLM_LVB_LEN;
	} else {
		m.m_lvb = NULL;
		m.m_lvblen = 0;
	}
	dlm_send_msg(ls, &m, lkb->lkb_rsb->res_nodeid);
}

/* Master to process copy. */

static void send_request_reply(struct dlm_ls *ls, struct dlm_lkb *lkb, int rv)
{
	send_lkb(ls, DLM_MSG_REQUEST_REPLY, lkb, rv);
}

static void send_convert_reply(struct dlm_ls *ls, struct dlm_lkb *lkb, int rv)
{
	send_lkb(ls, DLM_MSG_CONVERT_REPLY, lkb, rv);
}

static void send_cancel_reply(struct dlm_ls *ls, struct dlm_lkb *lkb, int rv)
{
	send_lkb(ls, DLM_MSG_CANCEL_REPLY, lkb, rv);
}

/* A reply of 'type' to request 'rq' from master copy 'lkid' (0: none) with
 * nothing but a status: a refusal, or an unlock's end.  A CONVERT_REPLY
 * must name its master copy (receive_reply() drops one that does not,
 * and the conversion would wait for ever). */
static void send_reply_lkid(struct dlm_ls *ls, const struct dlm_msg *rq,
			    int type, uint32_t lkid, int status)
{
	struct dlm_msg m;

	dlm_msg_init(&m, type);
	m.m_lkid = lkid;
	m.m_remid = rq->m_lkid;
	m.m_status = status;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	dlm_send_msg(ls, &m, rq->m_from);
}

/* The same naming no master copy. */
static void send_reply_status(struct dlm_ls *ls, const struct dlm_msg *rq,
			      int type, int status)
{
	send_reply_lkid(ls, rq, type, 0, status);
}

/* A queued lock was granted (status 0), or gave way to break a
 * conversion deadlock (-EDEADLK). */
static void send_grant(struct dlm_ls *ls, struct dlm_lkb *lkb, int status)
{
	send_lkb(ls, DLM_MSG_GRANT, lkb, status);
}

/* The granted master copy lkb blocks a request for 'mode'. */
static void send_bast(struct dlm_ls *ls, struct dlm_lkb *lkb, int mode)
{
	struct dlm_msg m;

	lkb_msg(&m, DLM_MSG_BAST, lkb, 0);
	m.m_bastmode = (int8_t)mode;
	m.m_lvblen = 0;
	m.m_lvb = NULL;
	dlm_send_msg(ls, &m, lkb->lkb_nodeid);
}

/* To and from a resource's directory node. */

static void send_lookup(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t dir)
{
	struct dlm_msg m;

	dlm_msg_init(&m, DLM_MSG_LOOKUP);
	m.m_nodeid = dlm_our_nodeid(ls);
	m.m_key = r->res_key;
	m.m_keylen = r->res_keylen;
	dlm_send_msg(ls, &m, dir);
}

static void send_lookup_reply(struct dlm_ls *ls, const struct dlm_msg *rq,
			      int status, uint32_t master)
{
	struct dlm_msg m;

	dlm_msg_init(&m, DLM_MSG_LOOKUP_REPLY);
	m.m_gen = rq->m_gen;
	m.m_status = status;
	m.m_nodeid = master;
	m.m_key = rq->m_key;
	m.m_keylen = rq->m_keylen;
	dlm_send_msg(ls, &m, rq->m_from);
}

void dlm_send_remove(struct dlm_ls *ls, struct dlm_rsb *r)
{
	struct dlm_msg m;

	dlm_msg_init(&m, DLM_MSG_REMOVE);
	m.m_key = r->res_key;
	m.m_keylen = r->res_keylen;
	dlm_send_msg(ls, &m, dlm_dir_nodeid(ls, r->res_hnode.hn_hash));
}

/* Node to node: purge your orphans of 'owner' (with 'group': of every
 * owner in that group). */
static void send_purge(struct dlm_ls *ls, uint32_t nodeid, uint64_t owner,
		       bool group)
{
	struct dlm_msg m;

	dlm_msg_init(&m, DLM_MSG_PURGE);
	m.m_owner = owner;
	m.m_flags = group ? DLM_MF_OWNER_GROUP : 0;
	dlm_send_msg(ls, &m, nodeid);
}


bool dlm_ls_running(const struct dlm_ls *ls)
{
	return ls->ls_state == DLM_LS_RUNNING;
}

/* Keep lkb's operation (lkb_wait_type) to redo when the lockspace runs
 * again: it was asked for while stopped, or was in flight to a node that
 * departed. */
void dlm_resend_later(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	int wait_type = lkb->lkb_wait_type;

	remove_waiter(ls, lkb);
	lkb->lkb_wait_type = (uint8_t)wait_type;
	lkb->lkb_flags |= LKBF_RESEND;
	dlm_list_add_tail(&lkb->lkb_waiter, &ls->ls_resend);
}

/* Tell whoever owns lkb that it has been granted (asynchronously, after
 * the reply to its request). */
static void cast_grant(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	if (is_master_copy(lkb)) {
		if (fault(ls, DLM_FAULT_LOSE_GRANT) && lkb->lkb_id % 4 == 0)
			return;
		send_grant(ls, lkb, 0);
	} else {
		cast_local(ls, lkb, 0);
	}
}

/* Tell whoever owns g that it blocks a request for 'mode'. */
static void bast_lkb(struct dlm_ls *ls, struct dlm_lkb *g, int mode)
{
	if (is_master_copy(g))
		send_bast(ls, g, mode);
	else
		bast_local(ls, g, mode);
}

static void bast_queue(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_list *q,
		       struct dlm_lkb *lkb)
{
	struct dlm_list *pos;

	dlm_list_for_each(pos, q) {
		struct dlm_lkb *g = dlm_container_of(pos, struct dlm_lkb,
						     lkb_statequeue);

		/* sent even to a lock that wants no basts: the owner side
		 * remembers it (lkb_last_bast) for an adopter */
		if (g == lkb)
			continue;
		if (g->lkb_highbast >= lkb->lkb_rqmode)
			continue;
		if (compat(ls, g->lkb_grmode, lkb->lkb_rqmode) ||
		    !ranges_overlap(ls, dlm_lkb_grrange(g), dlm_lkb_rqrange(lkb)))
			continue;
		g->lkb_highbast = lkb->lkb_rqmode;
		bast_lkb(ls, g, lkb->lkb_rqmode);
	}
}

/* Blocking ASTs to every holder that blocks lkb's request. */
static void send_blocking_asts(struct dlm_ls *ls, struct dlm_rsb *r,
			       struct dlm_lkb *lkb)
{
	if (fault(ls, DLM_FAULT_SKIP_BAST))
		return;
	/* nothing granted conflicts: no need to look at each holder */
	if (compat_with_granted(ls, r, lkb, lkb->lkb_rqmode,
	    dlm_lkb_rqrange(lkb)))
		return;
	bast_queue(ls, r, &r->res_grantq, lkb);
	bast_queue(ls, r, &r->res_convertq, lkb);
}

/* ------------------------------------------------------------------ */
/* granting (master side)                                             */
/* ------------------------------------------------------------------ */

/* Does granting (or releasing, mode NL) 'mode' write the lock's LVB into
 * the resource?  A holder in PW or EX going to an equal or lower mode. */
static bool lvb_writes(const struct dlm_lkb *lkb, int mode)
{
	return holds_grmode(lkb) && lkb->lkb_grmode >= DLM_LOCK_PW &&
	       mode <= lkb->lkb_grmode;
}

/* Room for the value an operation with VALBLK will write ('src', to
 * 'mode'; DLM_LOCK_NL for an unlock) or read, taken when it is accepted,
 * where it can still be refused (see "Out of memory" above): the lock's
 * buffer, and the resource's if it writes it here.  Zeros need none (no
 * buffer reads as zeros), so only a value that is not zeros takes room:
 * the one written, or for a read the resource's value if it is known
 * here.  False for want of memory; what was made stays (zeros). */
static bool lvb_room(struct dlm_ls *ls, struct dlm_lkb *lkb, int mode,
		     const char *src)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	bool writes = lvb_writes(lkb, mode), here = r && is_master(ls, r);

	if (writes ? !src || !memcmp(src, dlm_lvb_zero, DLM_LVB_LEN) :
		     !here || !r->res_lvb)
		return true;
	if (!dlm_lvb_room(ls, &lkb->lkb_lvb))
		return false;
	return !writes || !here || dlm_lvb_room(ls, &r->res_lvb);
}

static void lvb_write(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb,
		      uint32_t flags)
{
	if (flags & DLM_LKF_IVVALBLK) {
		r->res_flags |= RESF_VALNOTVALID;
		return;
	}
	if (!(flags & DLM_LKF_VALBLK) || fault(ls, DLM_FAULT_LVB_NO_WRITE))
		return;
	if (!dlm_lvb_store(ls, &r->res_lvb, dlm_lkb_lvb(lkb))) {
		r->res_flags |= RESF_VALNOTVALID;	/* the value is lost */
		return;
	}
	r->res_lvbseq++;
	r->res_flags &= ~RESF_VALNOTVALID;
}

static void lvb_read(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb)
{
	if (!(lkb->lkb_exflags & DLM_LKF_VALBLK)) {
		/* what it read before is no longer known current */
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
		return;
	}
	if (!dlm_lvb_store(ls, &lkb->lkb_lvb, dlm_res_lvb(r))) {
		/* no room for the value: the reader gets zeros, flagged */
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
		lkb->lkb_flags |= LKBF_LVB_STALE;
		lkb->lkb_sbflags |= DLM_SBF_VALNOTVALID;
		return;
	}
	lkb->lkb_lvbseq = r->res_lvbseq;
	lkb->lkb_flags |= LKBF_LVB_KNOWN;
	lkb->lkb_flags &= ~LKBF_LVB_STALE;
	if (r->res_flags & RESF_VALNOTVALID) {
		lkb->lkb_sbflags |= DLM_SBF_VALNOTVALID;
		lkb->lkb_flags |= LKBF_LVB_STALE;
	}
}

/* Grant lkb its requested mode (or 'mode', an alternate), applying the
 * LVB rules, with a new fencing token if the mode writes (token.c), and
 * put it on the grant queue. */
static void grant_lock(struct dlm_ls *ls, struct dlm_rsb *r,
		       struct dlm_lkb *lkb, int mode)
{
	/* by the mode asked for: an up-conversion granted an alternate
	 * mode below the held one reads, as it would have */
	if (lvb_writes(lkb, lkb->lkb_rqmode))
		lvb_write(ls, r, lkb, lkb->lkb_exflags);
	else
		lvb_read(ls, r, lkb);
	if (mode != lkb->lkb_rqmode)
		lkb->lkb_sbflags |= DLM_SBF_ALTMODE;
	set_grmode(ls, r, lkb, mode, dlm_lkb_rqrange(lkb));
	lkb->lkb_token = dlm_token_mode(mode) ? dlm_token_mint(ls) : 0;
	lkb->lkb_rqmode = DLM_LOCK_IV;
	if (!fault(ls, DLM_FAULT_BAST_ONCE))
		lkb->lkb_highbast = DLM_LOCK_IV;
	lkb->lkb_last_bast = DLM_LOCK_IV;
	add_to_queue(ls, r, lkb, DLM_LKSTS_GRANTED);
}

/* The mode lkb can be granted now: its requested one or an alternate
 * one, or IV.  'queue_ok' says the queue order allows a grant. */
static int grantable_mode(struct dlm_ls *ls, struct dlm_rsb *r,
			  struct dlm_lkb *lkb, bool queue_ok)
{
	if (!queue_ok)
		return DLM_LOCK_IV;
	if (compat_with_granted(ls, r, lkb, lkb->lkb_rqmode,
	    dlm_lkb_rqrange(lkb)))
		return lkb->lkb_rqmode;
	if ((lkb->lkb_exflags & DLM_LKF_ALTPR) && lkb->lkb_rqmode != DLM_LOCK_PR &&
	    compat_with_granted(ls, r, lkb, DLM_LOCK_PR, dlm_lkb_rqrange(lkb)))
		return DLM_LOCK_PR;
	if ((lkb->lkb_exflags & DLM_LKF_ALTCW) && lkb->lkb_rqmode != DLM_LOCK_CW &&
	    compat_with_granted(ls, r, lkb, DLM_LOCK_CW, dlm_lkb_rqrange(lkb)))
		return DLM_LOCK_CW;
	return DLM_LOCK_IV;
}

/* Grant what the queues now allow, conversions first, then waiters in
 * order; then blocking ASTs for what still waits.  'skip' (may be NULL)
 * is a conversion being handled by the caller, who decides its fate. */
static void grant_pending(struct dlm_ls *ls, struct dlm_rsb *r,
			  struct dlm_lkb *skip)
{
	struct dlm_list *pos, *tmp;
	bool progress = true;

	while (progress) {
		bool ahead = false;

		progress = false;
		dlm_list_for_each_safe(pos, tmp, &r->res_convertq) {
			struct dlm_lkb *c = dlm_container_of(pos, struct dlm_lkb,
							     lkb_statequeue);
			bool queue_ok = !(ahead && (c->lkb_exflags & DLM_LKF_QUECVT));
			int mode = c == skip ? DLM_LOCK_IV :
				   grantable_mode(ls, r, c, queue_ok);

			if (mode == DLM_LOCK_IV) {
				ahead = true;
				continue;
			}
			grant_lock(ls, r, c, mode);
			cast_grant(ls, c);
			progress = true;
		}
	}
	/* waiters: in order behind any conversion, except NOORDER ones */
	if (dlm_list_empty(&r->res_convertq) || r->res_nnoorder ||
	    fault(ls, DLM_FAULT_IGNORE_QUEUE)) {
		bool ahead = !dlm_list_empty(&r->res_convertq) &&
			     !fault(ls, DLM_FAULT_IGNORE_QUEUE);

		dlm_list_for_each_safe(pos, tmp, &r->res_waitq) {
			struct dlm_lkb *w = dlm_container_of(pos, struct dlm_lkb,
							     lkb_statequeue);
			bool queue_ok = !ahead || (w->lkb_exflags & DLM_LKF_NOORDER);
			int mode = grantable_mode(ls, r, w, queue_ok);

			if (mode == DLM_LOCK_IV) {
				if (fault(ls, DLM_FAULT_WAITQ_PASS))
					continue;
				ahead = true;
				if (!r->res_nnoorder)
					break;
				continue;
			}
			grant_lock(ls, r, w, mode);
			cast_grant(ls, w);
		}
	}
	/* what still waits: tell the holders in its way */
	dlm_list_for_each(pos, &r->res_convertq) {
		struct dlm_lkb *c = dlm_container_of(pos, struct dlm_lkb,
						     lkb_statequeue);

		if (c != skip)
			send_blocking_asts(ls, r, c);
	}
	if (!dlm_list_empty(&r->res_waitq))
		send_blocking_asts(ls, r, dlm_list_first(&r->res_waitq,
						     struct dlm_lkb,
						     lkb_statequeue));
}

/* A new request at the master.  Returns 0 (granted), -EINPROGRESS
 * (queued) or -EAGAIN (NOQUEUE and not grantable). */
static int do_request(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb)
{
	dlm_remaster_count(ls, r, is_master_copy(lkb) ? lkb->lkb_nodeid :
			   dlm_our_nodeid(ls));
	bool queue_ok;
	int mode;

	if (lkb->lkb_exflags & DLM_LKF_EXPEDITE) {
		grant_lock(ls, r, lkb, lkb->lkb_rqmode);	/* NL: always */
		return 0;
	}
	/* HEADQUE goes ahead of the waiters, so only conversions are ahead */
	queue_ok = (dlm_list_empty(&r->res_convertq) &&
		    (dlm_list_empty(&r->res_waitq) ||
		     (lkb->lkb_exflags & DLM_LKF_HEADQUE))) ||
		   (lkb->lkb_exflags & DLM_LKF_NOORDER) ||
		   fault(ls, DLM_FAULT_IGNORE_QUEUE);
	mode = grantable_mode(ls, r, lkb, queue_ok);
	if (mode != DLM_LOCK_IV) {
		grant_lock(ls, r, lkb, mode);
		return 0;
	}
	if (lkb->lkb_exflags & DLM_LKF_NOQUEUE) {
		if (lkb->lkb_exflags & DLM_LKF_NOQUEUEBAST)
			send_blocking_asts(ls, r, lkb);
		return -EAGAIN;
	}
	add_to_queue(ls, r, lkb, DLM_LKSTS_WAITING);
	send_blocking_asts(ls, r, lkb);
	return -EINPROGRESS;
}

/* Undo a conversion request: back to the granted mode, on the grant
 * queue.  A conversion that was to write the LVB kept the value it was
 * to write in the lock's copy (convert_lock, receive_convert, to send
 * it along); undone, that is a value nobody wrote, not one this lock
 * read or wrote, so the copy is no longer known: recovery must not take
 * it as the resource's current value (it did, from a PW holder whose
 * write its master had refused -ENOMEM before dying: a reader got as
 * valid a value its writer was told was never written;
 * test-core-recover test_recover_refused_write). */
static void revert_convert(struct dlm_ls *ls, struct dlm_rsb *r,
			   struct dlm_lkb *lkb)
{
	if ((lkb->lkb_exflags & DLM_LKF_VALBLK) && mode_valid(lkb->lkb_rqmode) &&
	    lvb_writes(lkb, lkb->lkb_rqmode))
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
	lkb->lkb_rqmode = DLM_LOCK_IV;
	(void)dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, dlm_lkb_grrange(lkb));
	if (lkb->lkb_status != DLM_LKSTS_GRANTED)
		add_to_queue(ls, r, lkb, DLM_LKSTS_GRANTED);
}

/* A conversion at the master.  lkb is granted, its rqmode/rqrange set.
 * Returns 0 (granted), -EINPROGRESS (queued; lkb_grmode may have been
 * demoted), -EAGAIN (NOQUEUE) or -EDEADLK (deadlock, cancelled).  After
 * answering lkb's owner, the caller runs grant_pending(). */
/* A conversion deadlock's victim gives way: demoted to NL with
 * CONVDEADLK (it waits on), else its conversion is cancelled with
 * -EDEADLK.  Returns true when that victim is 'self', whose answer the
 * caller gives; any other victim is answered here. */
static bool break_deadlock(struct dlm_ls *ls, struct dlm_rsb *r,
			   struct dlm_lkb *victim,
			   struct dlm_lkb *self)
{
	char name[DLM_KEY_TEXT_LEN];
	bool demote = (victim->lkb_exflags & DLM_LKF_CONVDEADLK) &&
		      victim->lkb_grmode != DLM_LOCK_NL;

	dlm_key_format(r->res_key, r->res_keylen, name, sizeof(name));
	log_ls(ls, DLM_LOG_DEBUG, "conversion deadlock on \"%s\": lock %08x %s",
	       name, victim->lkb_id, demote ? "demoted to NL" : "cancelled");
	if (demote) {
		set_grmode(ls, r, victim, DLM_LOCK_NL, dlm_lkb_grrange(victim));
		victim->lkb_sbflags |= DLM_SBF_DEMOTED;
		return false;
	}
	revert_convert(ls, r, victim);
	if (victim == self)
		return true;
	/* another lock gave way: it completes now */
	if (is_master_copy(victim))
		send_grant(ls, victim, -EDEADLK);
	else
		cast_local(ls, victim, -EDEADLK);
	return false;
}

static int do_convert(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb)
{
	dlm_remaster_count(ls, r, is_master_copy(lkb) ? lkb->lkb_nodeid :
			   dlm_our_nodeid(ls));
	struct dlm_lkb *victim;
	bool queue_ok, resolved, nomem;
	int mode;

	queue_ok = !(lkb->lkb_exflags & DLM_LKF_QUECVT) ||
		   dlm_list_empty(&r->res_convertq) ||
		   (lkb->lkb_exflags & DLM_LKF_HEADQUE) ||
		   fault(ls, DLM_FAULT_QUECVT_IGNORED);
	mode = grantable_mode(ls, r, lkb, queue_ok);
	if (mode != DLM_LOCK_IV) {
		/* the caller runs grant_pending(): a down-conversion may free
		 * others, but lkb's own answer must go out first, or a bast
		 * for its new mode could overtake it */
		grant_lock(ls, r, lkb, mode);
		return 0;
	}
	if (lkb->lkb_exflags & DLM_LKF_NOQUEUE) {
		if (lkb->lkb_exflags & DLM_LKF_NOQUEUEBAST)
			send_blocking_asts(ls, r, lkb);
		revert_convert(ls, r, lkb);
		return -EAGAIN;
	}
	add_to_queue(ls, r, lkb, DLM_LKSTS_CONVERT);
	/* resolve deadlocks until none is left: a demotion breaks the
	 * cycles made by the demoted lock's mode, but not those made by
	 * queue order, so a demoted lock still in a cycle is cancelled */
	resolved = false;
	while ((victim = conversion_deadlock(ls, r, lkb, &nomem))) {
		resolved = true;
		if (break_deadlock(ls, r, victim, lkb))
			return -EDEADLK;	/* the caller runs grant_pending() */
	}
	if (nomem) {
		/* not known to close no cycle: refused, back as it was (the
		 * caller runs grant_pending() for what a victim freed) */
		revert_convert(ls, r, lkb);
		return -ENOMEM;
	}
	if (resolved) {
		/* others may now go; lkb's own fate is decided here, so that
		 * it is answered exactly once */
		grant_pending(ls, r, lkb);
		mode = grantable_mode(ls, r, lkb,
				!(lkb->lkb_exflags & DLM_LKF_QUECVT) ||
				dlm_list_first(&r->res_convertq, struct dlm_lkb,
					       lkb_statequeue) == lkb);
		if (mode != DLM_LOCK_IV) {
			grant_lock(ls, r, lkb, mode);
			return 0;	/* the caller runs grant_pending() */
		}
	}
	send_blocking_asts(ls, r, lkb);
	return -EINPROGRESS;
}

/* Unlock at the master: write or invalidate the LVB, leave the queues,
 * grant what that allows.  The caller frees lkb. */
static void do_unlock(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb,
		      uint32_t flags)
{
	if (holds_grmode(lkb) && lkb->lkb_grmode >= DLM_LOCK_PW)
		lvb_write(ls, r, lkb, flags);
	del_from_queue(ls, r, lkb);
	grant_pending(ls, r, NULL);
}

/* Cancel at the master.  -DLM_ECANCEL when a waiting request was removed
 * (the caller frees lkb) or a conversion reverted; -EBUSY when nothing
 * is left to cancel. */
static int do_cancel(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb)
{
	switch (lkb->lkb_status) {
	case DLM_LKSTS_WAITING:
		del_from_queue(ls, r, lkb);
		grant_pending(ls, r, NULL);
		return -DLM_ECANCEL;
	case DLM_LKSTS_CONVERT:
		revert_convert(ls, r, lkb);
		grant_pending(ls, r, NULL);
		return -DLM_ECANCEL;
	default:
		return -EBUSY;
	}
}

/* ------------------------------------------------------------------ */
/* lock blocks: life and death                                        */
/* ------------------------------------------------------------------ */

static int unlock_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb, uint32_t flags,
		      const char *lvb);

/* An unlock that was to write the LVB was refused, the lock held: its
 * copy holds the value that was not written (unlock_lkb keeps it there
 * to send it), no longer known, as for a conversion (revert_convert). */
static void unlock_unwritten(struct dlm_lkb *lkb)
{
	if ((lkb->lkb_unlock_flags & DLM_LKF_VALBLK) &&
	    lvb_writes(lkb, DLM_LOCK_NL))
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
}

/* The LVB kept for lkb's overlapping unlock, off ls_unlock_lvbs (the
 * caller frees it), or NULL: none.  A list, searched only for a lock
 * flagged LKBF_UNLOCK_LVB: such unlocks are rare and short-lived. */
static struct dlm_unlock_lvb *unlock_lvb_take(struct dlm_ls *ls,
					      struct dlm_lkb *lkb)
{
	struct dlm_list *pos;

	if (!(lkb->lkb_flags & LKBF_UNLOCK_LVB))
		return NULL;
	lkb->lkb_flags &= ~LKBF_UNLOCK_LVB;
	dlm_list_for_each(pos, &ls->ls_unlock_lvbs) {
		struct dlm_unlock_lvb *ul =
			dlm_container_of(pos, struct dlm_unlock_lvb, ul_list);

		if (ul->ul_lkb == lkb) {
			dlm_list_del(&ul->ul_list);
			return ul;
		}
	}
	return NULL;
}

/* Force-unlock the purged parents whose last child went.  Unlocking one
 * may free it and so make its own parent childless: that one is queued
 * and taken by the loop here, not by recursion, so a tree of any depth
 * unwinds in constant stack. */
static void unlock_childless(struct dlm_ls *ls)
{
	struct dlm_lkb *lkb;

	if (ls->ls_childless_busy)
		return;		/* an outer call's loop takes it */
	ls->ls_childless_busy = true;
	while ((lkb = ls->ls_childless)) {
		ls->ls_childless = (struct dlm_lkb *)(uintptr_t)lkb->lkb_astarg;
		lkb->lkb_astarg = 0;
		unlock_lkb(ls, lkb, DLM_LKF_FORCEUNLOCK, NULL);
	}
	ls->ls_childless_busy = false;
}

/* lkb leaves its owner's list: the owner record goes with its last lock. */
static void put_owner_of(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_owner *ow = dlm_owner_get(ls, lkb->lkb_ownerid, false);

	lkb->lkb_flags &= ~LKBF_OWNED;
	if (ow)
		dlm_owner_put(ls, ow);
}

/* The parent lock of lkb, or NULL: a parent outlives its children, so its
 * id finds it. */
static struct dlm_lkb *parent_of(struct dlm_ls *ls, const struct dlm_lkb *lkb)
{
	return lkb->lkb_parent_id ? dlm_lkb_find(ls, lkb->lkb_parent_id) : NULL;
}

/* Free lkb, which is on no queue and has no operation in flight. */
static void destroy_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_lkb *parent = parent_of(ls, lkb);
	struct dlm_rsb *r = lkb->lkb_rsb;

	remove_waiter(ls, lkb);
	free(unlock_lvb_take(ls, lkb));
	if (r && lkb->lkb_status != DLM_LKSTS_NONE)
		del_from_queue(ls, r, lkb);
	if (!dlm_list_empty(&lkb->lkb_ownerqueue)) {
		dlm_list_del(&lkb->lkb_ownerqueue);
		if (lkb->lkb_flags & LKBF_ORPHAN)
			ls->ls_norphans--;
		else if (lkb->lkb_flags & LKBF_OWNED)
			put_owner_of(ls, lkb);
	}
	dlm_lkb_free(ls, lkb);
	if (r)
		dlm_rsb_release(ls, r);
	if (parent) {
		parent->lkb_nchildren--;
		if (!parent->lkb_nchildren &&
		    (parent->lkb_flags & LKBF_UNLOCK_CHILDLESS)) {
			parent->lkb_flags &= ~LKBF_UNLOCK_CHILDLESS;
			parent->lkb_astarg = (uintptr_t)ls->ls_childless;
			ls->ls_childless = parent;
			unlock_childless(ls);
		}
	}
}

/* Complete a process copy's unlock or failed request: AST, then free. */
static void finish_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb, int status)
{
	cast_local(ls, lkb, status);
	destroy_lkb(ls, lkb);
}

/* ------------------------------------------------------------------ */
/* process copy side: sending requests                                */
/* ------------------------------------------------------------------ */

/*
 * How a process copy's conversion, cancel or unlock starts: while the
 * lockspace is stopped it is kept (as wait_type, for dlm_redo_op() at
 * finish); where another node masters the resource it goes there by its
 * named sender.  Either way true, and the caller is done; false when this
 * node is the master and the caller does the operation here.  (A new
 * request first needs a master: request_with_master.)
 */
static bool op_kept_or_sent(struct dlm_ls *ls, struct dlm_lkb *lkb,
			    int wait_type,
			    void (*sender)(struct dlm_ls *ls, struct dlm_lkb *lkb))
{
	if (!dlm_ls_running(ls)) {
		lkb->lkb_wait_type = (uint8_t)wait_type;
		dlm_resend_later(ls, lkb);
		return true;
	}
	if (is_master(ls, lkb->lkb_rsb))
		return false;
	if (lkb->lkb_flags & LKBF_REPOINT) {
		/* its resource moved; the new master's REPOINT sends it
		 * (core/remaster.c) */
		lkb->lkb_wait_type = (uint8_t)wait_type;
		lkb->lkb_flags |= LKBF_PARKED;
		return true;
	}
	sender(ls, lkb);
	return true;
}

/* A conversion on the master: answered now unless it waits, and what it
 * releases is granted.  With VALBLK it first takes the room for its value
 * as a remote master does (receive_convert), and is refused -ENOMEM whole
 * without it: at the call the room was taken already when this node was
 * the master then (so this allocates nothing), but a conversion redone
 * here (dlm_redo_op: the old master moved the resource to us and refused
 * it) had room taken at the call only for the lock's buffer; done, a
 * down-conversion's write found no buffer for the resource's value, lost
 * it (VALNOTVALID) and told its writer it succeeded
 * (test-core-remaster test_down_convert_redone_no_room). */
static void convert_here(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	int rv;

	if ((lkb->lkb_exflags & DLM_LKF_VALBLK) &&
	    !lvb_room(ls, lkb, lkb->lkb_rqmode,
		      (lkb->lkb_exflags & DLM_LKF_IVVALBLK) ? NULL :
		      dlm_lkb_lvb(lkb))) {
		revert_convert(ls, r, lkb);
		cast_local(ls, lkb, -ENOMEM);
		return;
	}
	rv = do_convert(ls, r, lkb);
	if (rv != -EINPROGRESS)
		cast_local(ls, lkb, rv);
	grant_pending(ls, r, NULL);
}

/* Run a new request whose master is known. */
static void dispatch_request(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	int rv;

	if (!is_master(ls, r)) {
		send_request(ls, lkb);
		return;
	}
	rv = do_request(ls, r, lkb);
	if (rv == -EINPROGRESS)
		return;
	if (rv == 0)
		cast_local(ls, lkb, 0);
	else
		finish_lkb(ls, lkb, rv);
}

/* Find the master of lkb's resource, then run the request.  A
 * sub-resource's master is its parent's (resource.c), taken afresh each
 * time: no directory, no message, and never a stale cached master. */
static void request_with_master(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	uint32_t dir, master;

	if (r->res_parent && dlm_ls_running(ls)) {
		r->res_nodeid = r->res_parent->res_nodeid;
		if (fault(ls, DLM_FAULT_CHILD_LOCAL))
			r->res_nodeid = dlm_our_nodeid(ls);	/* broken */
		if (!r->res_nodeid) {
			log_ls(ls, DLM_LOG_ERR, "lock %08x: parent's master unknown",
			       lkb->lkb_id);
			finish_lkb(ls, lkb, -EPROTO);
			return;
		}
		dispatch_request(ls, lkb);
		return;
	}
	if (r->res_nodeid && !(r->res_flags & RESF_LOOKUP) &&
	    dlm_ls_running(ls)) {
		dispatch_request(ls, lkb);
		return;
	}
	lkb->lkb_wait_type = DLM_WAIT_LOOKUP;
	dlm_list_add_tail(&lkb->lkb_statequeue, &r->res_lookupq);
	if (!dlm_ls_running(ls)) {
		dlm_recover_held_lookup(ls, r);	/* runs at finish */
		return;
	}
	if (r->res_flags & RESF_LOOKUP)
		return;		/* a lookup is on its way */
	dir = dlm_dir_nodeid(ls, r->res_hnode.hn_hash);
	if (dir == dlm_our_nodeid(ls)) {
		if (dlm_dir_lookup(ls, r->res_key, r->res_keylen,
				   r->res_hnode.hn_hash, dir, &master)) {
			dlm_list_del(&lkb->lkb_statequeue);
			lkb->lkb_wait_type = DLM_WAIT_NONE;
			finish_lkb(ls, lkb, -ENOMEM);
			return;
		}
		dlm_list_del(&lkb->lkb_statequeue);
		lkb->lkb_wait_type = DLM_WAIT_NONE;
		r->res_nodeid = master;
		dispatch_request(ls, lkb);
		return;
	}
	r->res_flags |= RESF_LOOKUP;
	ls->ls_nlookups++;
	send_lookup(ls, r, dir);
}

/* ------------------------------------------------------------------ */
/* the client entry points                                            */
/* ------------------------------------------------------------------ */

#define NEW_FLAGS (DLM_LKF_NOQUEUE | DLM_LKF_VALBLK | DLM_LKF_CONVDEADLK | \
		   DLM_LKF_PERSISTENT | DLM_LKF_NODLCKWT | DLM_LKF_EXPEDITE | \
		   DLM_LKF_NOQUEUEBAST | DLM_LKF_HEADQUE | DLM_LKF_NOORDER | \
		   DLM_LKF_ORPHAN | DLM_LKF_ALTPR | DLM_LKF_ALTCW | \
		   DLM_LKF_IVVALBLK | DLM_LKF_CONVERT | DLM_LKF_QUECVT)

static int check_range(const struct dlm_range *range, struct dlm_range *out)
{
	if (!range) {
		out->ra_start = DLM_RANGE_MIN;
		out->ra_end = DLM_RANGE_MAX;
		return 0;
	}
	if (range->ra_start > range->ra_end)
		return -EINVAL;
	*out = *range;
	return 0;
}

static void set_astinfo(struct dlm_lkb *lkb, const struct dlm_lock_req *req)
{
	lkb->lkb_astarg = req->astarg;
	if (req->want_bast)
		lkb->lkb_flags |= LKBF_WANT_BAST;
	else
		lkb->lkb_flags &= ~LKBF_WANT_BAST;
}

/* Adopt an orphan: same resource (root name), granted in 'mode', one the
 * requester may take (req->may_adopt); the oldest such orphan first.
 * As in the kernel, adoption is synchronous: the lock id is the answer
 * and no completion AST is queued (the lock was granted long ago).  An
 * orphan of that name in another mode only: -EAGAIN, so the caller can
 * retry in the other mode (lvmlockd does); none at all: -ENOENT. */
static int adopt_orphan(struct dlm_ls *ls, const struct dlm_lock_req *req,
			const unsigned char *key, unsigned int keylen,
			uint32_t *lkid_out)
{
	struct dlm_owner *ow;
	struct dlm_list *pos;
	bool refused = false, other_mode = false;

	dlm_list_for_each(pos, &ls->ls_orphans) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_ownerqueue);
		struct dlm_rsb *r = lkb->lkb_rsb;

		if (r->res_keylen != keylen || memcmp(r->res_key, key, keylen) ||
		    lkb->lkb_status != DLM_LKSTS_GRANTED ||
		    lkb->lkb_wait_type != DLM_WAIT_NONE)
			continue;
		if (lkb->lkb_grmode != req->mode) {
			/* only counts if the requester could take it */
			if (!req->may_adopt ||
			    req->may_adopt(req->may_adopt_arg, lkb->lkb_ownerid))
				other_mode = true;
			else
				refused = true;
			continue;
		}
		if (req->may_adopt &&
		    !req->may_adopt(req->may_adopt_arg, lkb->lkb_ownerid)) {
			refused = true;
			continue;
		}
		ow = dlm_owner_get(ls, req->owner, true);
		if (!ow)
			return -ENOMEM;
		dlm_list_del(&lkb->lkb_ownerqueue);
		ls->ls_norphans--;
		lkb->lkb_flags &= ~(LKBF_ORPHAN | LKBF_PURGED);
		lkb->lkb_flags |= LKBF_OWNED;
		lkb->lkb_ownerid = req->owner;
		dlm_deadlock_set_waiter(lkb, req);
		/* the adoption is the lock's latest request: PERSISTENT if it
		 * says so (as the kernel takes the adopter's flags) */
		if (req->flags & DLM_LKF_PERSISTENT)
			lkb->lkb_exflags |= DLM_LKF_PERSISTENT;
		else
			lkb->lkb_exflags &= ~DLM_LKF_PERSISTENT;
		dlm_list_add_tail(&lkb->lkb_ownerqueue, &ow->ow_locks);
		set_astinfo(lkb, req);
		*lkid_out = lkb->lkb_id;
		if (lkb->lkb_last_bast != DLM_LOCK_IV &&
		    !dlm_modes_compat(lkb->lkb_grmode, lkb->lkb_last_bast)) {
			int mode = lkb->lkb_last_bast;

			lkb->lkb_last_bast = DLM_LOCK_IV;
			bast_local(ls, lkb, mode);
		}
		return 0;
	}
	if (other_mode)
		return -EAGAIN;
	return refused ? -EPERM : -ENOENT;
}

/* Does held lone lock so (solo.c) refuse req, a NOQUEUE request on its
 * name, as do_request refuses it: no mode it may have (its own, an
 * alternate) is compatible with so's, and the lockspace runs
 * (request_with_master).  Then the lone lock stays one: nothing of the
 * request is left (dlm_solo_refuse).  Not with NOQUEUEBAST: the BAST it
 * sends leaves state on the holder (lkb_highbast, lkb_last_bast) that a
 * lone lock does not keep. */
static bool solo_refuses(struct dlm_ls *ls, const struct dlm_solo *so,
			 const struct dlm_lock_req *req)
{
	int held = so->so_grmode;

	return !dlm_solo_is_tossed(so) && dlm_ls_running(ls) &&
	       (req->flags & DLM_LKF_NOQUEUE) &&
	       !(req->flags & (DLM_LKF_NOQUEUEBAST | DLM_LKF_EXPEDITE)) &&
	       !compat(ls, held, req->mode) &&
	       !((req->flags & DLM_LKF_ALTPR) && compat(ls, held, DLM_LOCK_PR)) &&
	       !((req->flags & DLM_LKF_ALTCW) && compat(ls, held, DLM_LOCK_CW));
}

static int request_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
			uint32_t *lkid_out)
{
	unsigned char key[DLM_MAX_KEYLEN];
	unsigned int keylen;
	struct dlm_lkb *parent = NULL, *lkb;
	struct dlm_range range;
	struct dlm_owner *ow;
	struct dlm_solo *so;
	struct dlm_rsb *r;
	uint32_t hash;
	bool fold;
	int rv;

	if (!req->name || req->namelen == 0 || req->namelen > DLM_RESNAME_MAXLEN)
		return -EINVAL;
	if (req->flags & (DLM_LKF_QUECVT | DLM_LKF_IVVALBLK))
		return -EINVAL;		/* conversion-only flags */
	if ((req->flags & DLM_LKF_EXPEDITE) && req->mode != DLM_LOCK_NL)
		return -EINVAL;
	if ((req->flags & DLM_LKF_PERSISTENT) && req->parent)
		return -EINVAL;		/* persistent sub-locks: not supported */
	if (req->newid) {
		/* an id the client took from its own reserved block */
		struct dlm_idblock *ib = dlm_idblock_find(ls, req->newid);
		uint32_t off;

		if (!ib || (req->flags & DLM_LKF_ORPHAN))
			return -EINVAL;
		if (ib->ib_owner != req->owner)
			return -EPERM;
		/* an id past every one the owner used in the block is free
		 * (as a fresh id is, resource.c dlm_lkid_new): the look in
		 * the tables read a cold lock at every call with millions
		 * held.  Marked used here, before the call can still fail:
		 * a later use of it is looked at, that is all. */
		off = req->newid - ib->ib_first;
		if (off < ib->ib_fresh && dlm_lkid_in_use(ls, req->newid))
			return -EEXIST;
		if (off >= ib->ib_fresh)
			ib->ib_fresh = off + 1;
	}
	if (check_range(req->range, &range))
		return -EINVAL;
	if (req->parent) {
		so = dlm_solo_find_id(ls, req->parent);
		/* a parent folded with its resource is an lkb again first
		 * (solo.c); another owner's is refused as below */
		if (so && so->so_ownerid != req->owner)
			return -EPERM;
		if (so && (rv = dlm_solo_unfold(ls, so)))
			return rv;
		parent = dlm_lkb_find(ls, req->parent);
		if (!parent || is_master_copy(parent) ||
		    (parent->lkb_flags & LKBF_ORPHAN))
			return -ENOENT;
		if (parent->lkb_ownerid != req->owner)
			return -EPERM;
		if (!holds_grmode(parent) ||
		    parent->lkb_wait_type == DLM_WAIT_UNLOCK ||
		    (parent->lkb_flags & LKBF_OVERLAP_UNLOCK))
			return -EINVAL;	/* a child lives under a granted parent */
	}
	rv = parent ? dlm_key_child(parent->lkb_rsb->res_key,
				    parent->lkb_rsb->res_keylen, req->name,
				    req->namelen, key) :
		      dlm_key_child(NULL, 0, req->name, req->namelen, key);
	if (rv < 0)
		return rv;
	keylen = (unsigned int)rv;
	if (req->flags & DLM_LKF_ORPHAN)
		return adopt_orphan(ls, req, key, keylen, lkid_out);

	hash = dlm_hash_bytes(key, keylen);
	/* a lone lock on the name is an rsb and an lkb again first (its
	 * resource tossed folded is taken again, or dropped); a free name
	 * may take a lone lock folded with it (solo.c) */
	so = dlm_solo_find_key(ls, key, keylen, hash);
	fold = !parent && dlm_solo_may_fold(ls, req, &range);
	/* (a tossed one is mastered here, whoever directs its name) */
	if (so && fold && dlm_solo_is_tossed(so))
		return dlm_solo_lock_counted(ls, req, so, key, keylen, hash,
					     lkid_out);
	if (so && !parent && solo_refuses(ls, so, req) &&
	    (rv = dlm_solo_refuse(ls, so, req, lkid_out)) <= 0)
		return rv;
	if (so && (rv = dlm_solo_unfold(ls, so)))
		return rv;
	r = dlm_rsb_find(ls, key, keylen, hash);
	if (!r && fold && dlm_solo_may_fold_name(ls, hash) &&
	    !dlm_dir_has_record(ls, key, keylen, hash))
		return dlm_solo_lock_counted(ls, req, NULL, key, keylen, hash,
					     lkid_out);
	if (!r) {
		r = dlm_rsb_create(ls, key, keylen, hash);
		if (!r)
			return -ENOMEM;
		if (parent)
			dlm_rsb_set_parent(ls, r, parent->lkb_rsb);
		/* on the toss list if we fail below */
		dlm_rsb_hold(ls, r);
		dlm_rsb_release(ls, r);
	} else if (parent) {
		dlm_rsb_set_parent(ls, r, parent->lkb_rsb);
	}
	ow = dlm_owner_get(ls, req->owner, true);
	if (!ow)
		return -ENOMEM;
	lkb = dlm_lkb_create(ls, req->newid);
	if (!lkb || !dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &range) ||
	    ((req->flags & DLM_LKF_VALBLK) && is_master(ls, r) && r->res_lvb &&
	     !dlm_lvb_room(ls, &lkb->lkb_lvb))) {
		if (lkb)
			dlm_lkb_free(ls, lkb);
		dlm_owner_put(ls, ow);
		return -ENOMEM;
	}
	lkb->lkb_flags |= LKBF_OWNED;
	lkb->lkb_ownerid = req->owner;
	dlm_list_add_tail(&lkb->lkb_ownerqueue, &ow->ow_locks);
	lkb->lkb_exflags = req->flags;
	lkb->lkb_rqmode = (int8_t)req->mode;
	dlm_deadlock_set_waiter(lkb, req);
	if (req->flags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	/* kept only to be sent along; a new lock reads its value at grant */
	if (req->lvb)
		(void)dlm_lvb_store(ls, &lkb->lkb_lvb, req->lvb);
	set_astinfo(lkb, req);
	if (parent) {
		lkb->lkb_parent_id = parent->lkb_id;
		parent->lkb_nchildren++;
	}
	lkb->lkb_rsb = r;
	dlm_rsb_hold(ls, r);
	*lkid_out = lkb->lkb_id;
	request_with_master(ls, lkb);
	return 0;
}

/* A conversion of a lone lock folded with its resource (solo.c), a
 * granted, idle, whole-range lock alone on its resource, so granted at
 * once whatever it asks: refused as convert_lock below refuses it, or
 * done on the lone lock where it stays one (0); 1: it must be an lkb
 * first.  That is where the conversion writes or invalidates the
 * resource's value (from PW or EX down, with VALBLK or IVVALBLK:
 * grant_lock), asks a partial range, makes the lock persistent, or
 * the lockspace is stopped (op_kept_or_sent keeps an lkb's op).  With
 * VALBLK below that it only reads the value: zeros, never written. */
static int convert_solo(struct dlm_ls *ls, struct dlm_solo *so,
			const struct dlm_lock_req *req, uint32_t *lkid_out)
{
	const uint32_t stays = DLM_LKF_CONVERT | DLM_LKF_VALBLK |
			       DLM_LKF_QUECVT | DLM_LKF_NOQUEUE |
			       DLM_LKF_CONVDEADLK | DLM_LKF_NODLCKWT |
			       DLM_LKF_NOQUEUEBAST | DLM_LKF_HEADQUE |
			       DLM_LKF_NOORDER | DLM_LKF_ALTPR | DLM_LKF_ALTCW;
	int grmode = so->so_grmode;
	bool writes = grmode >= DLM_LOCK_PW && req->mode <= grmode;
	struct dlm_range range;

	if (so->so_ownerid != req->owner)
		return -EPERM;
	if (req->flags & (DLM_LKF_EXPEDITE | DLM_LKF_ORPHAN))
		return -EINVAL;
	if ((req->flags & DLM_LKF_QUECVT) && !quecvt_matrix[grmode][req->mode])
		return -EINVAL;
	if (check_range(req->range, &range))
		return -EINVAL;
	if ((req->flags & DLM_LKF_VALBLK) && writes && !req->lvb)
		return -EINVAL;		/* a writer must give the value */
	if (!dlm_ls_running(ls) || (req->flags & ~stays) ||
	    ((req->flags & DLM_LKF_VALBLK) && writes) ||
	    !dlm_range_is_whole(&range))
		return 1;
	return dlm_solo_convert(ls, so, req, lkid_out);
}

static int convert_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
			uint32_t *lkid_out)
{
	struct dlm_solo *so = dlm_solo_find_id(ls, req->lkid);
	struct dlm_range range;
	struct dlm_lkb *lkb;
	int rv;

	/* a lone lock converts folded, or as an lkb (solo.c) */
	if (so) {
		rv = convert_solo(ls, so, req, lkid_out);
		if (rv <= 0)
			return rv;
		rv = dlm_solo_unfold(ls, so);
		if (rv)
			return rv;
	}
	lkb = dlm_lkb_find(ls, req->lkid);
	if (!lkb || is_master_copy(lkb))
		return -ENOENT;
	if (lkb->lkb_ownerid != req->owner || (lkb->lkb_flags & LKBF_ORPHAN))
		return -EPERM;
	if (req->flags & (DLM_LKF_EXPEDITE | DLM_LKF_ORPHAN))
		return -EINVAL;
	if ((req->flags & DLM_LKF_QUECVT) && mode_valid(lkb->lkb_grmode) &&
	    !quecvt_matrix[lkb->lkb_grmode][req->mode])
		return -EINVAL;
	if (lkb->lkb_status != DLM_LKSTS_GRANTED ||
	    lkb->lkb_wait_type != DLM_WAIT_NONE ||
	    (lkb->lkb_flags & (LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK)))
		return -EBUSY;
	if (check_range(req->range, &range))
		return -EINVAL;
	if (!req->range)
		range = *dlm_lkb_grrange(lkb);
	if ((req->flags & DLM_LKF_VALBLK) && lkb->lkb_grmode >= DLM_LOCK_PW &&
	    req->mode <= lkb->lkb_grmode && !req->lvb)
		return -EINVAL;		/* a writer must give the value */

	if (((req->flags & DLM_LKF_VALBLK) &&
	     !lvb_room(ls, lkb, req->mode, req->lvb)) ||
	    !dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &range))
		return -ENOMEM;
	*lkid_out = lkb->lkb_id;
	lkb->lkb_exflags = req->flags;
	lkb->lkb_rqmode = (int8_t)req->mode;
	lkb->lkb_sbflags = 0;
	dlm_deadlock_set_waiter(lkb, req);
	if (req->flags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	else
		lkb->lkb_flags &= ~LKBF_VALBLK;
	/* the caller's bytes become the lock's copy only when this
	 * conversion writes them: until then lkb_lvb is the value this lock
	 * read, which recovery may take as the resource's */
	if (lvb_writes(lkb, req->mode) && (req->flags & DLM_LKF_IVVALBLK)) {
		lkb->lkb_flags |= LKBF_LVB_STALE;
	} else if (req->lvb && lvb_writes(lkb, req->mode) &&
		   (req->flags & DLM_LKF_VALBLK)) {
		if (dlm_lvb_store(ls, &lkb->lkb_lvb, req->lvb)) {
			lkb->lkb_flags |= LKBF_LVB_KNOWN;
			lkb->lkb_flags &= ~LKBF_LVB_STALE;
		} else {
			lkb->lkb_flags |= LKBF_LVB_STALE;
		}
	}
	set_astinfo(lkb, req);
	if (!op_kept_or_sent(ls, lkb, DLM_WAIT_CONVERT, send_convert))
		convert_here(ls, lkb);
	return 0;
}

int dlm_core_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
		  uint32_t *lkid_out)
{
	uint32_t dummy;
	int rv;

	if (!ls || !req)
		return -EINVAL;
	if (!lkid_out)
		lkid_out = &dummy;
	if (!mode_valid(req->mode) || (req->flags & ~NEW_FLAGS) ||
	    !req->owner)
		return -EINVAL;
	if ((req->flags & DLM_LKF_ALTPR) && (req->flags & DLM_LKF_ALTCW))
		return -EINVAL;
	if (req->flags & DLM_LKF_CONVERT)
		rv = convert_lock(ls, req, lkid_out);
	else
		rv = request_lock(ls, req, lkid_out);
	if (!rv)	/* a refused call does nothing (not even a REMOVE) */
		dlm_toss_trim(ls);
	return rv;
}

/* Unlock (flags may hold FORCEUNLOCK, VALBLK, IVVALBLK) or, with CANCEL,
 * cancel a queued request or conversion of a process copy. */
static int unlock_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb, uint32_t flags,
		      const char *lvb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	bool force = flags & DLM_LKF_FORCEUNLOCK;
	int rv;

	if (flags & DLM_LKF_CANCEL) {
		switch (lkb->lkb_wait_type) {
		case DLM_WAIT_LOOKUP:
			dlm_list_del(&lkb->lkb_statequeue);
			lkb->lkb_wait_type = DLM_WAIT_NONE;
			finish_lkb(ls, lkb, -DLM_ECANCEL);
			return 0;
		case DLM_WAIT_REQUEST:
		case DLM_WAIT_CONVERT:
			if (lkb->lkb_flags & (LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK))
				return -EBUSY;
			lkb->lkb_flags |= LKBF_OVERLAP_CANCEL;
			return 0;
		case DLM_WAIT_NONE:
			break;
		default:
			return -EBUSY;
		}
		if (lkb->lkb_status != DLM_LKSTS_WAITING &&
		    lkb->lkb_status != DLM_LKSTS_CONVERT)
			return -EBUSY;	/* granted: nothing to cancel */
		if (op_kept_or_sent(ls, lkb, DLM_WAIT_CANCEL, send_cancel))
			return 0;
		rv = do_cancel(ls, r, lkb);
		if (lkb->lkb_status == DLM_LKSTS_NONE)
			finish_lkb(ls, lkb, rv);
		else
			cast_local(ls, lkb, rv);
		return 0;
	}

	if (lkb->lkb_nchildren)
		return -EBUSY;
	switch (lkb->lkb_wait_type) {
	case DLM_WAIT_NONE:
		break;
	case DLM_WAIT_LOOKUP:
		if (!force)
			return -EBUSY;
		dlm_list_del(&lkb->lkb_statequeue);
		lkb->lkb_wait_type = DLM_WAIT_NONE;
		finish_lkb(ls, lkb, -DLM_EUNLOCK);
		return 0;
	case DLM_WAIT_UNLOCK:
		return -EBUSY;
	default:
		if (!force || (lkb->lkb_flags & LKBF_OVERLAP_UNLOCK))
			return -EBUSY;
		if (lvb && (flags & DLM_LKF_VALBLK)) {
			/* kept apart: the op in flight may still read an LVB */
			struct dlm_unlock_lvb *ul = dlm_malloc(ls->ls_core, sizeof(*ul));

			if (!ul)
				return -ENOMEM;
			ul->ul_lkb = lkb;
			memcpy(ul->ul_lvb, lvb, DLM_LVB_LEN);
			dlm_list_add_tail(&ul->ul_list, &ls->ls_unlock_lvbs);
			lkb->lkb_flags |= LKBF_UNLOCK_LVB;
		}
		lkb->lkb_unlock_flags = flags;
		lkb->lkb_flags |= LKBF_OVERLAP_UNLOCK;
		lkb->lkb_flags &= ~LKBF_OVERLAP_CANCEL;
		return 0;
	}
	if (lkb->lkb_status != DLM_LKSTS_GRANTED && !force)
		return -EBUSY;
	if (lvb && (flags & DLM_LKF_VALBLK) && lvb_writes(lkb, DLM_LOCK_NL) &&
	    !dlm_lvb_store(ls, &lkb->lkb_lvb, lvb))
		/* no room to keep the value: it is lost, say so (this path
		 * also redoes overlapping unlocks, which must not fail) */
		flags = (flags & ~(uint32_t)DLM_LKF_VALBLK) | DLM_LKF_IVVALBLK;
	lkb->lkb_unlock_flags = flags;
	if (op_kept_or_sent(ls, lkb, DLM_WAIT_UNLOCK, send_unlock))
		return 0;
	if (!force && !(lkb->lkb_flags & LKBF_PURGED) &&
	    (flags & DLM_LKF_VALBLK) && lvb_writes(lkb, DLM_LOCK_NL) &&
	    !lvb_room(ls, lkb, DLM_LOCK_NL, dlm_lkb_lvb(lkb))) {
		/* redone here, the resource's master now (dlm_redo_op: the
		 * old master moved it to us and refused the unlock), with
		 * no room for the value it writes, taken at the call only
		 * where the master was then: refused as a remote master
		 * refuses it, the lock held; done, the value was lost while
		 * its writer was told the unlock succeeded (dlm-sim
		 * --alloc-faults 100 --faults --remaster --repoint --rehot
		 * 8 --ops 1000 --bounce --partitions --daemon-deaths
		 * --dir-lag 300 seed 237).  At the call the room is there.
		 * Not a purged lock's (its owner went while the unlock was
		 * on its way; the purge waited for it): nobody would ask
		 * again, and refused it was held for ever; it is done, as
		 * receive_unlock_reply forces it, and a value it cannot
		 * keep is lost as a purge's is (dlm-sim --alloc-faults 100
		 * --faults --remaster --repoint --rehot 8 --ops 1000
		 * --bounce seed 3743) */
		unlock_unwritten(lkb);
		cast_local(ls, lkb, -ENOMEM);
		if (mode_valid(lkb->lkb_last_bast) && holds_grmode(lkb) &&
		    !dlm_modes_compat(lkb->lkb_grmode, lkb->lkb_last_bast))
			bast_local(ls, lkb, lkb->lkb_last_bast);
		return 0;
	}
	do_unlock(ls, r, lkb, flags);
	finish_lkb(ls, lkb, -DLM_EUNLOCK);
	return 0;
}

int dlm_core_unlock(struct dlm_ls *ls, const struct dlm_unlock_req *req)
{
	const uint32_t allowed = DLM_LKF_CANCEL | DLM_LKF_FORCEUNLOCK |
				 DLM_LKF_VALBLK | DLM_LKF_IVVALBLK;
	struct dlm_solo *so;
	struct dlm_lkb *lkb;
	int rv;

	if (!ls || !req || (req->flags & ~allowed))
		return -EINVAL;
	so = dlm_solo_find_id(ls, req->lkid);
	if (so) {
		/* a lone lock folded with its resource (solo.c): a plain or
		 * forced unlock while running is done on it, its resource
		 * tossed; anything else is done on it as an lkb */
		if (so->so_ownerid != req->owner)
			return -EPERM;
		if ((req->flags & DLM_LKF_VALBLK) &&
		    !(req->flags & DLM_LKF_CANCEL) && !req->lvb)
			return -EINVAL;
		if (req->flags & DLM_LKF_CANCEL) {
			/* granted: nothing to cancel (unlock_lkb), the
			 * cancel's cookie the lock's, as below; answered
			 * without unfolding, so without memory too */
			so->so_astarg = req->astarg;
			return -EBUSY;
		}
		/* an unlock that neither writes nor invalidates the value
		 * (do_unlock: only from PW or EX) is a plain one */
		if ((so->so_grmode < DLM_LOCK_PW ||
		     !(req->flags & (DLM_LKF_VALBLK | DLM_LKF_IVVALBLK))) &&
		    dlm_ls_running(ls)) {
			rv = dlm_solo_unlock(ls, so, req);
			dlm_toss_trim(ls);
			return rv;
		}
		rv = dlm_solo_unfold(ls, so);
		if (rv)
			return rv;
	}
	lkb = dlm_lkb_find(ls, req->lkid);
	if (!lkb || is_master_copy(lkb))
		return -ENOENT;
	if (lkb->lkb_ownerid != req->owner || (lkb->lkb_flags & LKBF_ORPHAN))
		return -EPERM;
	if ((req->flags & DLM_LKF_VALBLK) && !(req->flags & DLM_LKF_CANCEL) &&
	    !req->lvb)
		return -EINVAL;
	if ((req->flags & DLM_LKF_VALBLK) && !(req->flags & DLM_LKF_CANCEL) &&
	    lkb->lkb_wait_type == DLM_WAIT_NONE &&
	    !lvb_room(ls, lkb, DLM_LOCK_NL, req->lvb))
		return -ENOMEM;
	if (lkb->lkb_wait_type == DLM_WAIT_NONE)
		lkb->lkb_astarg = req->astarg;
	rv = unlock_lkb(ls, lkb, req->flags, req->lvb);
	if (!rv)
		dlm_toss_trim(ls);
	return rv;
}

/* ------------------------------------------------------------------ */
/* purging owners and orphans                                         */
/* ------------------------------------------------------------------ */

/* Force-unlock a purged lock, or wait for its children first. */
static void purge_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	lkb->lkb_flags |= LKBF_PURGED;
	if (lkb->lkb_nchildren) {
		lkb->lkb_flags |= LKBF_UNLOCK_CHILDLESS;
		return;
	}
	if (unlock_lkb(ls, lkb, DLM_LKF_FORCEUNLOCK, NULL) == -EBUSY)
		log_ls(ls, DLM_LOG_DEBUG, "purge of %08x deferred: unlock in flight",
		       lkb->lkb_id);
}

static int purge_owner(struct dlm_ls *ls, uint64_t owner, bool orphan);

int dlm_core_purge_owner(struct dlm_ls *ls, uint64_t owner)
{
	int n = purge_owner(ls, owner, true);

	dlm_toss_trim(ls);
	return n;
}

int dlm_core_purge_owner_locks(struct dlm_ls *ls, uint64_t owner)
{
	int n = purge_owner(ls, owner, false);

	dlm_toss_trim(ls);
	return n;
}

/* With 'orphan', PERSISTENT locks become orphans; without, they go too. */
static int purge_owner(struct dlm_ls *ls, uint64_t owner, bool orphan)
{
	struct dlm_owner *ow = dlm_owner_get(ls, owner, false);
	struct dlm_list victims;
	int count = 0;

	if (!ow)
		return 0;
	/* lone locks folded with their resources: unlocked at once,
	 * their resources tossed (solo.c) */
	count = dlm_solo_purge_owner(ls, ow);
	/* newest first: children were created after their parents */
	dlm_list_init(&victims);
	while (!dlm_list_empty(&ow->ow_locks)) {
		struct dlm_lkb *lkb = dlm_container_of(ow->ow_locks.prev,
						       struct dlm_lkb,
						       lkb_ownerqueue);

		count++;
		dlm_list_del(&lkb->lkb_ownerqueue);
		lkb->lkb_flags &= ~LKBF_OWNED;
		if (orphan && (lkb->lkb_exflags & DLM_LKF_PERSISTENT)) {
			lkb->lkb_flags |= LKBF_ORPHAN;
			dlm_list_add_tail(&lkb->lkb_ownerqueue, &ls->ls_orphans);
			ls->ls_norphans++;
		} else {
			/* no AST may reach the departed client, even for a
			 * lock granted while its siblings are unlocked */
			lkb->lkb_flags |= LKBF_PURGED;
			dlm_list_add_tail(&lkb->lkb_ownerqueue, &victims);
		}
	}
	dlm_owner_put(ls, ow);
	while (!dlm_list_empty(&victims)) {
		struct dlm_lkb *lkb = dlm_list_first(&victims, struct dlm_lkb,
						     lkb_ownerqueue);
		struct dlm_lkb *parent = parent_of(ls, lkb);

		dlm_list_del(&lkb->lkb_ownerqueue);
		if (parent && (parent->lkb_flags & LKBF_ORPHAN)) {
			/* an orphan's adopter must not wait for (or be
			 * refused because of) the old owner's children */
			parent->lkb_nchildren--;
			lkb->lkb_parent_id = 0;
		}
		purge_lkb(ls, lkb);
	}
	return count;
}

/* Orphans of 'owner' (0: all), or with 'group' of every owner whose id
 * has 'owner' in its high half. */
static int purge_local_orphans(struct dlm_ls *ls, uint64_t owner, bool group)
{
	struct dlm_list *pos, *tmp;
	int count = 0;

	if (group && !owner)
		return 0;
	dlm_list_for_each_safe(pos, tmp, &ls->ls_orphans) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_ownerqueue);

		if (group ? lkb->lkb_ownerid >> 32 != owner :
		    owner && lkb->lkb_ownerid != owner)
			continue;
		dlm_list_del(&lkb->lkb_ownerqueue);
		ls->ls_norphans--;
		lkb->lkb_flags &= ~LKBF_ORPHAN;
		lkb->lkb_flags |= LKBF_PURGED;
		count++;
		purge_lkb(ls, lkb);
	}
	return count;
}

static int purge_orphans(struct dlm_ls *ls, uint32_t nodeid, uint64_t owner,
			 bool group)
{
	if (nodeid == 0 || nodeid == dlm_our_nodeid(ls)) {
		int n = purge_local_orphans(ls, owner, group);

		dlm_toss_trim(ls);
		return n;
	}
	if (!dlm_ls_is_member(ls, nodeid))
		return -EINVAL;
	send_purge(ls, nodeid, owner, group);
	return 0;
}

int dlm_core_purge_orphans(struct dlm_ls *ls, uint32_t nodeid, uint64_t owner)
{
	return purge_orphans(ls, nodeid, owner, false);
}

int dlm_core_purge_orphan_group(struct dlm_ls *ls, uint32_t nodeid,
				uint32_t group)
{
	return purge_orphans(ls, nodeid, group, true);
}

/* ------------------------------------------------------------------ */
/* receiving                                                          */
/* ------------------------------------------------------------------ */

/* A root resource's key is one path component. */
static bool key_is_root(const unsigned char *key, unsigned int keylen)
{
	return key[0] != DLM_KEY_DIGEST_MARK && 1u + key[0] == keylen;
}

/* A remote request for r, which we master. */
static int request_here(struct dlm_ls *ls, struct dlm_rsb *r,
			const struct dlm_msg *m)
{
	struct dlm_lkb *lkb;
	int rv;

	lkb = dlm_lkb_create(ls, 0);
	if (!lkb || !dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &m->m_rqrange) ||
	    ((m->m_exflags & DLM_LKF_VALBLK) && r->res_lvb &&
	     !dlm_lvb_room(ls, &lkb->lkb_lvb))) {
		if (lkb)
			dlm_lkb_free(ls, lkb);
		send_reply_status(ls, m, DLM_MSG_REQUEST_REPLY, -ENOMEM);
		if (dlm_rsb_unused(r))
			/* onto the toss list */
			dlm_rsb_hold(ls, r), dlm_rsb_release(ls, r);
		return 0;	/* answered: the request fails at its node */
	}
	lkb->lkb_flags = LKBF_MSTCPY;
	lkb->lkb_nodeid = m->m_from;
	dlm_mstcpy_link(ls, lkb);
	lkb->lkb_remid = m->m_lkid;
	lkb->lkb_ownerid = m->m_owner;
	lkb->lkb_exflags = m->m_exflags;
	lkb->lkb_rqmode = m->m_rqmode;
	if (m->m_exflags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	/* the requester wants basts if it asked; it filters them itself */
	lkb->lkb_flags |= LKBF_WANT_BAST;
	lkb->lkb_rsb = r;
	dlm_rsb_hold(ls, r);
	rv = do_request(ls, r, lkb);
	send_request_reply(ls, lkb, rv);
	if (rv != 0 && rv != -EINPROGRESS)
		destroy_lkb(ls, lkb);
	else
		dlm_remaster_consider(ls, r);	/* after the reply: FIFO */
	return 0;
}

/* The master of a sub-resource is its parent's: a child REQUEST names the
 * parent (m_pkey), and we take it only while we master that parent,
 * creating the child as its master if it is new here.  Else -EBADR, and
 * the requester takes its parent's master again. */
static int receive_child_request(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	struct dlm_rsb *p, *r;

	if (!m->m_pkeylen ||
	    !dlm_key_is_child(m->m_pkey, m->m_pkeylen, m->m_key, m->m_keylen))
		return -EBADMSG;
	p = dlm_rsb_find(ls, m->m_pkey, m->m_pkeylen,
			 dlm_hash_bytes(m->m_pkey, m->m_pkeylen));
	r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);
	/* (a master with a lookup in flight is one a move made master
	 * meanwhile: it masters, see receive_request) */
	if (!p || !is_master(ls, p) ||
	    (r && !is_master(ls, r) && (!dlm_list_empty(&r->res_grantq) ||
				    !dlm_list_empty(&r->res_convertq) ||
				    !dlm_list_empty(&r->res_waitq)))) {
		send_reply_status(ls, m, DLM_MSG_REQUEST_REPLY, -EBADR);
		return 0;
	}
	if (!r) {
		r = dlm_rsb_create(ls, m->m_key, m->m_keylen, hash);
		if (!r) {
			send_reply_status(ls, m, DLM_MSG_REQUEST_REPLY, -ENOMEM);
			return 0;	/* answered */
		}
	}
	dlm_rsb_set_parent(ls, r, p);
	/* a copy with no lock on its queues (unused, from when another node
	 * mastered the parent, or with our own requests waiting for the
	 * lockspace to run: they take their master from the parent too) */
	r->res_nodeid = dlm_our_nodeid(ls);
	return request_here(ls, r, m);
}

/* Master side: REQUEST from a remote node. */
static int receive_request(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	struct dlm_rsb *r;

	if (!m->m_keylen || m->m_rqmode < DLM_LOCK_NL)
		return -EBADMSG;
	if (m->m_pkeylen || !key_is_root(m->m_key, m->m_keylen))
		return receive_child_request(ls, m);
	r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);
	/* a master with a lookup in flight (RESF_LOOKUP) is one a MIGRATE
	 * made master while it looked the name up (remaster.c install; the
	 * lookup's reply keeps it): it masters.  Refused, the requester,
	 * whose other locks it masters, forgot its master and refused the
	 * GRANTs that came next (dlm-sim --remaster --repoint --nodes 5
	 * --rehot 8 --ops 2000 --dir-lag 300 seed 510) */
	if (!r || !is_master(ls, r)) {
		/* not (or no longer) the master: the sender looks up again,
		 * or tries the node we moved it to (remaster.c) */
		struct dlm_msg rp;

		dlm_msg_init(&rp, DLM_MSG_REQUEST_REPLY);
		rp.m_remid = m->m_lkid;
		rp.m_status = -EBADR;
		rp.m_grmode = DLM_LOCK_IV;
		rp.m_rqmode = DLM_LOCK_IV;
		if (r && (r->res_flags & RESF_MOVED_AWAY) && !is_master(ls, r))
			rp.m_nodeid = r->res_nodeid;
		dlm_send_msg(ls, &rp, m->m_from);
		return 0;
	}
	return request_here(ls, r, m);
}

/* Master side: find the master copy a message names. */
static struct dlm_lkb *find_mstcpy(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);

	if (!lkb || !is_master_copy(lkb) || lkb->lkb_nodeid != m->m_from ||
	    lkb->lkb_remid != m->m_lkid) {
		if (dlm_remaster_on(ls)) {
			/* moved away, maybe: the sender redoes it at the
			 * new master, or logs (remaster.c); the refusal
			 * names the master copy the op named, which tells
			 * the sender whether it is the one it knows */
			static const uint16_t reply[] = {
				[DLM_MSG_CONVERT] = DLM_MSG_CONVERT_REPLY,
				[DLM_MSG_UNLOCK] = DLM_MSG_UNLOCK_REPLY,
				[DLM_MSG_CANCEL] = DLM_MSG_CANCEL_REPLY,
			};

			if (m->m_type < sizeof(reply) / sizeof(reply[0]) &&
			    reply[m->m_type])
				send_reply_lkid(ls, m, reply[m->m_type],
						m->m_remid, -EBADR);
			return NULL;
		}
		log_ls(ls, DLM_LOG_WARNING,
		       "%s from node %u names unknown lock %08x/%08x",
		       dlm_msg_type_str(m->m_type), m->m_from, m->m_remid,
		       m->m_lkid);
		return NULL;
	}
	return lkb;
}

static int receive_convert(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = find_mstcpy(ls, m);
	int rv;

	if (!lkb)	/* answered -EBADR with remastering on */
		return dlm_remaster_on(ls) ? 0 : -ENOENT;
	if (lkb->lkb_status != DLM_LKSTS_GRANTED || m->m_rqmode < DLM_LOCK_NL) {
		log_ls(ls, DLM_LOG_WARNING, "convert of %08x from node %u: not granted",
		       lkb->lkb_id, m->m_from);
		send_reply_lkid(ls, m, DLM_MSG_CONVERT_REPLY, lkb->lkb_id,
				-EBUSY);
		return -EBUSY;
	}
	if (((m->m_exflags & DLM_LKF_VALBLK) &&
	     !lvb_room(ls, lkb, m->m_rqmode, m->m_lvb)) ||
	    !dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &m->m_rqrange)) {
		send_reply_lkid(ls, m, DLM_MSG_CONVERT_REPLY, lkb->lkb_id,
				-ENOMEM);
		return 0;	/* answered: the conversion fails at its node */
	}
	lkb->lkb_exflags = m->m_exflags;
	lkb->lkb_rqmode = m->m_rqmode;
	lkb->lkb_sbflags = 0;
	if (m->m_exflags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	else
		lkb->lkb_flags &= ~LKBF_VALBLK;
	if (m->m_lvb && !dlm_lvb_store(ls, &lkb->lkb_lvb, m->m_lvb))
		/* no room for the value: a write invalidates instead */
		lkb->lkb_exflags |= DLM_LKF_IVVALBLK;
	rv = do_convert(ls, lkb->lkb_rsb, lkb);
	send_convert_reply(ls, lkb, rv);
	grant_pending(ls, lkb->lkb_rsb, NULL);
	dlm_remaster_consider(ls, lkb->lkb_rsb);	/* after the replies */
	return 0;
}

static int receive_unlock(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = find_mstcpy(ls, m);
	uint32_t flags = m->m_exflags;

	if (!lkb)	/* answered -EBADR with remastering on */
		return dlm_remaster_on(ls) ? 0 : -ENOENT;
	if (lkb->lkb_status != DLM_LKSTS_GRANTED && !(m->m_flags & DLM_MF_FORCE)) {
		send_reply_status(ls, m, DLM_MSG_UNLOCK_REPLY, -EBUSY);
		return -EBUSY;
	}
	if (m->m_lvb && (flags & DLM_LKF_VALBLK) &&
	    !(m->m_flags & DLM_MF_FORCE) &&
	    !lvb_room(ls, lkb, DLM_LOCK_NL, m->m_lvb)) {
		/* refused, the lock as it was: its owner may try again */
		if (fault(ls, DLM_FAULT_REFUSED_WRITE) &&
		    lvb_writes(lkb, DLM_LOCK_NL) && lkb->lkb_rsb->res_lvb) {
			memcpy(lkb->lkb_rsb->res_lvb, m->m_lvb, DLM_LVB_LEN);
			lkb->lkb_rsb->res_lvbseq++;
			lkb->lkb_rsb->res_flags &= ~RESF_VALNOTVALID;
		}
		send_reply_status(ls, m, DLM_MSG_UNLOCK_REPLY, -ENOMEM);
		return 0;
	}
	if (m->m_lvb && !dlm_lvb_store(ls, &lkb->lkb_lvb, m->m_lvb))
		flags |= DLM_LKF_IVVALBLK;	/* no room: the value is lost */
	do_unlock(ls, lkb->lkb_rsb, lkb, flags);
	send_reply_status(ls, m, DLM_MSG_UNLOCK_REPLY, -DLM_EUNLOCK);
	destroy_lkb(ls, lkb);
	return 0;
}

static int receive_cancel(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = find_mstcpy(ls, m);
	int rv;

	if (!lkb)	/* answered -EBADR with remastering on */
		return dlm_remaster_on(ls) ? 0 : -ENOENT;
	rv = do_cancel(ls, lkb->lkb_rsb, lkb);
	send_cancel_reply(ls, lkb, rv);
	if (lkb->lkb_status == DLM_LKSTS_NONE)
		destroy_lkb(ls, lkb);
	return 0;
}

/* Process copy side: find the lock a reply/grant/bast names.  A reply
 * comes from the node the operation went to (the master may have changed
 * meanwhile, if that node said it was not the master); a grant or bast
 * from the master. */
static struct dlm_lkb *find_pcopy(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);
	bool reply = m->m_type >= DLM_MSG_REQUEST_REPLY &&
		     m->m_type <= DLM_MSG_CANCEL_REPLY;

	if (!lkb || is_master_copy(lkb) ||
	    (reply && (lkb->lkb_wait_type == DLM_WAIT_NONE ||
		       lkb->lkb_wait_nodeid != m->m_from)) ||
	    (!reply && lkb->lkb_rsb->res_nodeid != m->m_from)) {
		log_ls(ls, DLM_LOG_WARNING,
		       "%s from node %u names unknown lock %08x",
		       dlm_msg_type_str(m->m_type), m->m_from, m->m_remid);
		return NULL;
	}
	return lkb;
}

/* The master granted a process copy (in a reply or a GRANT). */
static void pcopy_granted(struct dlm_ls *ls, struct dlm_lkb *lkb,
			  const struct dlm_msg *m)
{
	struct dlm_rsb *r = lkb->lkb_rsb;

	lkb->lkb_sbflags |= (uint8_t)m->m_sbflags;
	if (m->m_lvb && (lkb->lkb_flags & LKBF_VALBLK) &&
	    !dlm_lvb_store(ls, &lkb->lkb_lvb, m->m_lvb)) {
		/* no room for the value: the client gets zeros, flagged */
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
		lkb->lkb_flags |= LKBF_LVB_STALE;
		lkb->lkb_sbflags |= DLM_SBF_VALNOTVALID;
	} else if (m->m_lvb && (lkb->lkb_flags & LKBF_VALBLK)) {
		lkb->lkb_flags |= LKBF_LVB_KNOWN;
		if (m->m_sbflags & DLM_SBF_VALNOTVALID)
			lkb->lkb_flags |= LKBF_LVB_STALE;
		else
			lkb->lkb_flags &= ~LKBF_LVB_STALE;
	} else if (!lvb_writes(lkb, m->m_grmode)) {
		/* granted without reading: an older copy is not current */
		lkb->lkb_flags &= ~LKBF_LVB_KNOWN;
	}
	lkb->lkb_lvbseq = m->m_lvbseq;
	lkb->lkb_token = m->m_token;
	set_grmode(ls, r, lkb, m->m_grmode, &m->m_grrange);
	lkb->lkb_rqmode = DLM_LOCK_IV;
	lkb->lkb_last_bast = DLM_LOCK_IV;
	add_to_queue(ls, r, lkb, DLM_LKSTS_GRANTED);
	if ((lkb->lkb_flags & LKBF_DEADLK) &&
	    lkb->lkb_wait_type == DLM_WAIT_CANCEL) {
		/* the deadlock detector's cancel crossed this grant: the
		 * client learns of the grant when the cancel is over, so
		 * that it can never act on the lock (and be refused -EBUSY)
		 * while a cancel it did not ask for is in flight */
		lkb->lkb_flags |= LKBF_GRANT_HELD;
		return;
	}
	cast_local(ls, lkb, 0);
}

/* After a reply ends an operation: the completion of a grant held for
 * it (pcopy_granted), then a cancel or unlock that the client asked for
 * meanwhile. */
static void run_overlap(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	uint32_t f = lkb->lkb_flags;

	if (f & LKBF_GRANT_HELD) {
		lkb->lkb_flags &= ~LKBF_GRANT_HELD;
		cast_local(ls, lkb, 0);
		/* a blocking AST kept meanwhile comes after its grant */
		if (mode_valid(lkb->lkb_last_bast))
			bast_local(ls, lkb, lkb->lkb_last_bast);
	}

	lkb->lkb_flags &= ~(LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK);
	if (f & LKBF_OVERLAP_UNLOCK) {
		struct dlm_unlock_lvb *ul = unlock_lvb_take(ls, lkb);
		uint32_t flags = lkb->lkb_unlock_flags & ~DLM_LKF_CANCEL;

		if (!ul)
			flags &= ~DLM_LKF_VALBLK;
		unlock_lkb(ls, lkb, flags | DLM_LKF_FORCEUNLOCK,
			   ul ? ul->ul_lvb : NULL);
		free(ul);
	}
	else if ((f & LKBF_OVERLAP_CANCEL) &&
		 (lkb->lkb_status == DLM_LKSTS_WAITING ||
		  lkb->lkb_status == DLM_LKSTS_CONVERT))
		unlock_lkb(ls, lkb, DLM_LKF_CANCEL, NULL);
}

/* A refused request goes on at once (request_with_master) at most
 * DLM_BOUNCES_MAX times in a row; the next refusal parks it on its
 * resource's lookup queue, with no lookup in flight, until news of the
 * master: the next dlm_core_tick() (dlm_redo_parked: the tick visits the
 * requests parked since the last one, noted in ls_parked, not every
 * resource), a LOOKUP_REPLY or a REQUEST_REPLY that grants or queues a
 * sibling (receive_request_reply), a MOVED or REPOINT about the resource
 * (remaster.c), a recovery's finish.  Without it, while a move's MIGRATE is delayed
 * (the old master's link to the new one down, say), a request bounced
 * between the two, or through the directory, once per round trip, with
 * nobody granting (remaster.c, "Races"): thousands of messages a second
 * for each such request (test-core-remaster test_bounce_bounded).  A
 * bounded count, no clock: the core keeps time only by ticks. */
#define DLM_BOUNCES_MAX	4
/* ls_parked holds at most this many ids; past it (or without memory to
 * grow it) the tick walks every resource (ls_redo_lookups) */
#define DLM_PARKED_MAX	(1u << 20)

/* Note a parked request for the next tick (dlm_redo_parked). */
static void park_note(struct dlm_ls *ls, const struct dlm_lkb *lkb)
{
	if (ls->ls_nparked == ls->ls_parked_cap) {
		uint32_t nc = ls->ls_parked_cap ? 2 * ls->ls_parked_cap : 16;
		uint32_t *p = nc <= DLM_PARKED_MAX ?
			dlm_realloc(ls->ls_core, ls->ls_parked,
				    nc * sizeof(*p)) : NULL;

		if (!p) {
			ls->ls_redo_lookups = true;
			return;
		}
		ls->ls_parked = p;
		ls->ls_parked_cap = nc;
	}
	ls->ls_parked[ls->ls_nparked++] = lkb->lkb_id;
}

/* The tick: the requests parked since the last one go on (those still
 * parked: an id may name a lock sent on since, or gone, or another lock
 * now; redoing a resource's lookup queue is harmless either way).  No
 * allocation: a request parked again meanwhile is noted after them. */
void dlm_redo_parked(struct dlm_ls *ls)
{
	uint32_t i, n = ls->ls_nparked;

	for (i = 0; i < n; i++) {
		struct dlm_lkb *lkb = dlm_lkb_find(ls, ls->ls_parked[i]);

		if (lkb && !is_master_copy(lkb) && lkb->lkb_rsb &&
		    lkb->lkb_wait_type == DLM_WAIT_LOOKUP)
			dlm_redo_lookups(ls, lkb->lkb_rsb);
	}
	ls->ls_nparked -= n;
	if (ls->ls_nparked)
		memmove(ls->ls_parked, ls->ls_parked + n,
			ls->ls_nparked * sizeof(*ls->ls_parked));
}

static void request_bounced(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	uint32_t n = (lkb->lkb_flags & LKBF_BOUNCES) / LKBF_BOUNCE_ONE;

	lkb->lkb_flags &= ~LKBF_BOUNCES;
	if (n < DLM_BOUNCES_MAX) {
		lkb->lkb_flags |= (n + 1) * LKBF_BOUNCE_ONE;
		request_with_master(ls, lkb);
		return;
	}
	lkb->lkb_wait_type = DLM_WAIT_LOOKUP;
	dlm_list_add_tail(&lkb->lkb_statequeue, &r->res_lookupq);
	park_note(ls, lkb);
}

/* The handlers of the four replies, after receive_reply()'s prologue. */
static void receive_request_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
				  const struct dlm_msg *m)
{
	struct dlm_rsb *r = lkb->lkb_rsb;

	switch (m->m_status) {
	case -EBADR:
		/* the node was not the master (any more): look up again */
		if (lkb->lkb_flags & (LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK)) {
			finish_lkb(ls, lkb, (lkb->lkb_flags & LKBF_OVERLAP_UNLOCK) ?
				   -DLM_EUNLOCK : -DLM_ECANCEL);
			return;
		}
		if (!r->res_parent && r->res_nodeid &&
		    r->res_nodeid != m->m_from) {
			/* stale: since it was sent we learned of another
			 * master (a reply that granted or queued a lock, a
			 * MOVED, a move to us): the request goes there, and
			 * only that node's refusal is news.  Taken as news,
			 * the hint (the refuser's old view) pointed the
			 * resource away from the master that holds our
			 * locks: our own resource, at a node that refused
			 * naming us, and an unlock redone meanwhile went to
			 * node 0 (dlm-sim --hot-trees --repoint --rehot 8
			 * --alloc-faults 50 --faults --daemon-deaths
			 * --nodes 3 --depth 1 seed 707949); or another
			 * node's, whose GRANT then named a lock unknown
			 * (--alloc-faults 20 --nodes 4 --depth 2 seed
			 * 1107685) */
			request_bounced(ls, lkb);
			return;
		}
		if (dlm_remaster_awaits(ls, dlm_rsb_root(r))) {
			/* its old master's MOVED named the new one, where
			 * the request goes again (until it installs) */
			request_bounced(ls, lkb);
			return;
		}
		if (m->m_gen != ls->ls_generation) {
			/* refused before a recovery (held over it): what it
			 * says of the sender is stale, the recovery settled
			 * the master since (a move's new master installs at
			 * the directory step, a dead one's resources go to
			 * a survivor, maybe the sender); ask again where we
			 * know it to be now.  Taken as news, it failed a
			 * child request -EPROTO from its parent's master
			 * (remaster.c; dlm-sim --faults --remaster --repoint
			 * --rehot 4 --ops 1500 --nodes 6 seed 97), and
			 * zeroed a root's master that a cancel redone at
			 * finish was then sent to (node 0: --daemon-deaths
			 * --rehot 4 --nodes 6 seed 583) */
			request_bounced(ls, lkb);
			return;
		}
		if (r->res_parent && r->res_parent->res_nodeid == m->m_from) {
			/* the parent's master says it is not: never loop */
			log_ls(ls, DLM_LOG_ERR,
			       "lock %08x: node %u refuses its child resource",
			       lkb->lkb_id, m->m_from);
			finish_lkb(ls, lkb, -EPROTO);
			return;
		}
		if (r->res_nodeid == m->m_from)
			r->res_nodeid = 0;
		if (!r->res_parent && m->m_nodeid && m->m_nodeid != m->m_from &&
		    m->m_nodeid != dlm_our_nodeid(ls) &&
		    dlm_ls_is_member(ls, m->m_nodeid) &&
		    !(r->res_flags & RESF_LOOKUP))
			r->res_nodeid = m->m_nodeid;	/* it moved there */
		request_bounced(ls, lkb);
		return;
	case 0:
	case -EINPROGRESS:
		/* the node is the master, even if a sibling request was told
		 * otherwise earlier and is looking it up again (a lookup
		 * reply then keeps it: the directory may not know of a move
		 * yet, remaster.c) */
		if (!r->res_nodeid || (dlm_remaster_on(ls) && !r->res_parent))
			r->res_nodeid = m->m_from;
		lkb->lkb_remid = m->m_lkid;
		lkb->lkb_flags &= ~LKBF_BOUNCES;
		/* news of the master for a sibling parked on r (request_
		 * bounced): it goes there now, not at the next tick */
		if (r->res_nodeid == m->m_from)
			dlm_redo_lookups(ls, r);
		if (m->m_status == 0) {
			pcopy_granted(ls, lkb, m);
			run_overlap(ls, lkb);
			return;
		}
		add_to_queue(ls, r, lkb, DLM_LKSTS_WAITING);
		run_overlap(ls, lkb);
		return;
	default:
		finish_lkb(ls, lkb, m->m_status);
		return;
	}
}

static void receive_convert_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
				  const struct dlm_msg *m)
{
	struct dlm_rsb *r = lkb->lkb_rsb;

	switch (m->m_status) {
	case 0:
		pcopy_granted(ls, lkb, m);
		break;
	case -EINPROGRESS:
		lkb->lkb_sbflags |= (uint8_t)m->m_sbflags;
		set_grmode(ls, r, lkb, m->m_grmode, dlm_lkb_grrange(lkb));
		add_to_queue(ls, r, lkb, DLM_LKSTS_CONVERT);
		break;
	default:
		lkb->lkb_sbflags |= (uint8_t)m->m_sbflags;
		revert_convert(ls, r, lkb);
		cast_local(ls, lkb, m->m_status);
		break;
	}
	run_overlap(ls, lkb);
}

static void receive_unlock_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
				 const struct dlm_msg *m)
{
	if (m->m_status == -DLM_EUNLOCK) {
		finish_lkb(ls, lkb, -DLM_EUNLOCK);
		return;
	}
	log_ls(ls, DLM_LOG_WARNING, "unlock of %08x refused by node %u: %d",
	       lkb->lkb_id, m->m_from, m->m_status);
	unlock_unwritten(lkb);
	if (lkb->lkb_flags & LKBF_PURGED) {
		/* its owner went while the unlock was in flight (the purge
		 * waited for it): nobody will ask again, force it now */
		purge_lkb(ls, lkb);
		return;
	}
	cast_local(ls, lkb, m->m_status);
	/* held, the lock still blocks what it blocked meanwhile */
	if (mode_valid(lkb->lkb_last_bast) && holds_grmode(lkb) &&
	    !dlm_modes_compat(lkb->lkb_grmode, lkb->lkb_last_bast))
		bast_local(ls, lkb, lkb->lkb_last_bast);
}

static void receive_cancel_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
				 const struct dlm_msg *m)
{
	struct dlm_rsb *r = lkb->lkb_rsb;

	if (m->m_status == -DLM_ECANCEL) {
		if (lkb->lkb_status == DLM_LKSTS_WAITING) {
			lkb->lkb_flags &= ~LKBF_OVERLAP_UNLOCK;
			finish_lkb(ls, lkb, -DLM_ECANCEL);
			return;
		}
		set_grmode(ls, r, lkb, m->m_grmode, dlm_lkb_grrange(lkb));
		revert_convert(ls, r, lkb);
		cast_local(ls, lkb, -DLM_ECANCEL);
	}
	/* -EBUSY: granted before the cancel arrived; the GRANT came first */
	run_overlap(ls, lkb);
}

/*
 * The four replies: one prologue, then the handler of each.  The reply
 * names the process copy (a convert or cancel reply names the master
 * copy too; a request reply is what tells us its id, an unlock reply
 * needs none), which must be waiting for exactly this operation; the
 * wait ends here.
 */
static int receive_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	static const struct {
		uint8_t	wait;
		void	(*handle)(struct dlm_ls *ls, struct dlm_lkb *lkb,
				  const struct dlm_msg *m);
	} replies[] = {
		[DLM_MSG_REQUEST_REPLY - DLM_MSG_REQUEST_REPLY] =
			{ DLM_WAIT_REQUEST, receive_request_reply },
		[DLM_MSG_CONVERT_REPLY - DLM_MSG_REQUEST_REPLY] =
			{ DLM_WAIT_CONVERT, receive_convert_reply },
		[DLM_MSG_UNLOCK_REPLY - DLM_MSG_REQUEST_REPLY] =
			{ DLM_WAIT_UNLOCK, receive_unlock_reply },
		[DLM_MSG_CANCEL_REPLY - DLM_MSG_REQUEST_REPLY] =
			{ DLM_WAIT_CANCEL, receive_cancel_reply },
	};
	unsigned int i = m->m_type - DLM_MSG_REQUEST_REPLY;
	struct dlm_lkb *lkb = find_pcopy(ls, m);

	if (lkb && m->m_status == -EBADR && m->m_type != DLM_MSG_REQUEST_REPLY &&
	    lkb->lkb_wait_type == replies[i].wait) {
		/* the node moved the resource (to us, or to another node
		 * that re-points the lock: remaster.c) meanwhile: the
		 * operation never took effect there, redo it at the new
		 * master.  Our master's refusal of an op that named a
		 * master copy we no longer know (a recovery since made this
		 * node our master again, from its records or our RC_LOCK:
		 * dlm-sim --seed 2776 --nodes 5 --faults --repoint
		 * --daemon-deaths) is one of them */
		if (lkb->lkb_rsb->res_nodeid == m->m_from &&
		    (!m->m_lkid || m->m_lkid == lkb->lkb_remid)) {
			log_ls(ls, DLM_LOG_ERR, "%s of %08x refused by node %u: "
			       "not master", dlm_msg_type_str(m->m_type),
			       lkb->lkb_id, m->m_from);
			return -EPROTO;
		}
		dlm_redo_op(ls, lkb);
		return 0;
	}
	if (!lkb || (m->m_type == DLM_MSG_CONVERT_REPLY &&
		     lkb->lkb_remid != m->m_lkid))
		return -ENOENT;
	if (lkb->lkb_wait_type != replies[i].wait) {
		log_ls(ls, DLM_LOG_WARNING, "unexpected %s for %08x",
		       dlm_msg_type_str(m->m_type), lkb->lkb_id);
		return -EPROTO;
	}
	remove_waiter(ls, lkb);
	replies[i].handle(ls, lkb, m);
	return 0;
}

static int receive_grant(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = find_pcopy(ls, m);

	if (!lkb || lkb->lkb_remid != m->m_lkid)
		return -ENOENT;
	if (lkb->lkb_status != DLM_LKSTS_WAITING &&
	    lkb->lkb_status != DLM_LKSTS_CONVERT) {
		log_ls(ls, DLM_LOG_WARNING, "grant for %08x, which is not queued",
		       lkb->lkb_id);
		return -EPROTO;
	}
	if (m->m_status == -EDEADLK) {
		/* our conversion gave way to break a deadlock */
		revert_convert(ls, lkb->lkb_rsb, lkb);
		cast_local(ls, lkb, -EDEADLK);
		return 0;
	}
	pcopy_granted(ls, lkb, m);
	return 0;
}

static int receive_bast(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = find_pcopy(ls, m);

	if (!lkb)
		return -ENOENT;
	if (m->m_bastmode < DLM_LOCK_NL)
		return -EBADMSG;
	if (!holds_grmode(lkb) ||
	    dlm_modes_compat(lkb->lkb_grmode, m->m_bastmode))
		return 0;	/* stale: the lock changed meanwhile */
	if (lkb->lkb_wait_type == DLM_WAIT_UNLOCK) {
		/* going: its client is not told, but should the master
		 * refuse the unlock (out of memory) it must be, then: the
		 * master sends no repeat (receive_unlock_reply) */
		if (m->m_bastmode > lkb->lkb_last_bast)
			lkb->lkb_last_bast = (int8_t)m->m_bastmode;
		return 0;
	}
	if (lkb->lkb_flags & LKBF_GRANT_HELD) {
		/* its grant's completion is held (pcopy_granted): the
		 * blocking AST follows it (run_overlap) */
		if (m->m_bastmode > lkb->lkb_last_bast)
			lkb->lkb_last_bast = (int8_t)m->m_bastmode;
		return 0;
	}
	bast_local(ls, lkb, m->m_bastmode);
	return 0;
}

static int receive_lookup(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	uint32_t master = 0;
	int rv;

	if (!m->m_keylen)
		return -EBADMSG;
	if (m->m_gen != ls->ls_generation) {
		/* sent before a recovery that moved directories: the sender
		 * looks up again after it */
		log_ls(ls, DLM_LOG_DEBUG, "stale lookup from node %u dropped",
		       m->m_from);
		return 0;
	}
	if (dlm_dir_nodeid(ls, hash) != dlm_our_nodeid(ls) ||
	    !key_is_root(m->m_key, m->m_keylen)) {
		/* sub-resources have no directory record (resource.c) */
		log_ls(ls, DLM_LOG_WARNING,
		       "lookup from node %u for a name we are not directory of",
		       m->m_from);
		rv = -EINVAL;
	} else {
		/* from the node the record names: it moved the resource
		 * away, and the new master's DIR_MOVE is on its way; the
		 * answer waits for it (resource.c dlm_dir_hold_lookup) */
		rv = dlm_dir_hold_lookup(ls, m->m_key, m->m_keylen, hash,
					 m->m_from);
		if (rv)
			return rv < 0 ? rv : 0;	/* -ENOMEM: offered again */
		rv = dlm_dir_lookup(ls, m->m_key, m->m_keylen, hash, m->m_from,
				    &master);
	}
	send_lookup_reply(ls, m, rv, master);
	/* no room for the record: answered, the requests fail at their node */
	return rv == -ENOMEM ? 0 : rv;
}

static int receive_lookup_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	struct dlm_rsb *r;

	if (!m->m_keylen)
		return -EBADMSG;
	if (m->m_gen != ls->ls_generation)
		return 0;	/* answers a lookup from before a recovery */
	r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);
	if (!r || !(r->res_flags & RESF_LOOKUP)) {
		log_ls(ls, DLM_LOG_WARNING, "unexpected lookup reply from node %u",
		       m->m_from);
		return -ENOENT;
	}
	r->res_flags &= ~RESF_LOOKUP;
	ls->ls_nlookups--;
	if (m->m_status || !dlm_ls_is_member(ls, m->m_nodeid)) {
		log_ls(ls, DLM_LOG_ERR, "lookup failed at node %u: %d (master %u)",
		       m->m_from, m->m_status, m->m_nodeid);
		while (!dlm_list_empty(&r->res_lookupq)) {
			struct dlm_lkb *lkb = dlm_list_first(&r->res_lookupq,
							     struct dlm_lkb,
							     lkb_statequeue);

			dlm_list_del(&lkb->lkb_statequeue);
			lkb->lkb_wait_type = DLM_WAIT_NONE;
			finish_lkb(ls, lkb, m->m_status ? m->m_status : -EPROTO);
		}
		/* with no request left (a purge took them meanwhile) r
		 * would stay for ever: to the toss list */
		if (dlm_rsb_unused(r))
			dlm_rsb_hold(ls, r), dlm_rsb_release(ls, r);
		if (m->m_status == -ENOMEM)
			return 0;	/* dealt with: the requests failed */
		return m->m_status ? m->m_status : -EPROTO;
	}
	if (!r->res_nodeid || !dlm_remaster_on(ls))
		r->res_nodeid = m->m_nodeid;
	/* (else a sibling request's reply named the master meanwhile: the
	 * directory may not know of a move yet, remaster.c) */
	/* keep r alive while its waiters run */
	r->res_nlkbs++;
	while (!dlm_list_empty(&r->res_lookupq)) {
		struct dlm_lkb *lkb = dlm_list_first(&r->res_lookupq,
						     struct dlm_lkb, lkb_statequeue);

		dlm_list_del(&lkb->lkb_statequeue);
		lkb->lkb_wait_type = DLM_WAIT_NONE;
		dispatch_request(ls, lkb);
	}
	dlm_rsb_release(ls, r);
	/* made master of a name another node directs, a lone lock granted
	 * here folds with its resource (solo.c); r may be gone */
	if (r->res_nodeid == dlm_our_nodeid(ls))
		dlm_solo_fold_rsb(ls, r);
	return 0;
}

static int receive_remove(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);

	if (!m->m_keylen)
		return -EBADMSG;
	if (m->m_gen != ls->ls_generation)
		return 0;	/* the directory was rebuilt since */
	dlm_dir_remove(ls, m->m_key, m->m_keylen, hash, m->m_from);
	return 0;
}

int dlm_lock_receive(struct dlm_ls *ls, const struct dlm_msg *m)
{
	int held;

	/* a message naming a resource finds its lone lock unfolded first
	 * (solo.c, "Shared lockspaces"); one naming a lock id cannot name
	 * a lone lock's; those that arrive and those replayed alike */
	held = dlm_solo_unfold_msg(ls, m);
	if (held)
		return held;
	held = dlm_remaster_hold(ls, m);
	if (held)	/* until the old master's MOVED; or not kept */
		return held < 0 ? held : 0;
	switch (m->m_type) {
	case DLM_MSG_REQUEST:
		return receive_request(ls, m);
	case DLM_MSG_CONVERT:
		return receive_convert(ls, m);
	case DLM_MSG_UNLOCK:
		return receive_unlock(ls, m);
	case DLM_MSG_CANCEL:
		return receive_cancel(ls, m);
	case DLM_MSG_REQUEST_REPLY:
	case DLM_MSG_CONVERT_REPLY:
	case DLM_MSG_UNLOCK_REPLY:
	case DLM_MSG_CANCEL_REPLY:
		return receive_reply(ls, m);
	case DLM_MSG_GRANT:
		return receive_grant(ls, m);
	case DLM_MSG_BAST:
		return receive_bast(ls, m);
	case DLM_MSG_LOOKUP:
		return receive_lookup(ls, m);
	case DLM_MSG_LOOKUP_REPLY:
		return receive_lookup_reply(ls, m);
	case DLM_MSG_REMOVE:
		return receive_remove(ls, m);
	case DLM_MSG_AUDIT:
	case DLM_MSG_AUDIT_REPLY:
		return dlm_audit_receive(ls, m);
	case DLM_MSG_DEADLK_PROBE:
	case DLM_MSG_DEADLK_HOLDER:
		return dlm_deadlock_receive(ls, m);
	case DLM_MSG_MIGRATE:
	case DLM_MSG_DIR_MOVE:
	case DLM_MSG_MIGRATE_LOCK:
	case DLM_MSG_MOVED:
	case DLM_MSG_REPOINT:
	case DLM_MSG_REPOINT_REPLY:
		return dlm_remaster_receive(ls, m);
	case DLM_MSG_PURGE:
		if ((m->m_flags & DLM_MF_OWNER_GROUP) && m->m_owner > UINT32_MAX)
			return -EINVAL;
		purge_local_orphans(ls, m->m_owner,
				    (m->m_flags & DLM_MF_OWNER_GROUP) != 0);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* ------------------------------------------------------------------ */
/* teardown and inspection                                            */
/* ------------------------------------------------------------------ */

static void free_hnode_lkb(void *arg, struct dlm_hnode *n)
{
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);

	(void)arg;
	free(lkb->lkb_lvb);
	free(lkb->lkb_ranges);
	free(lkb->lkb_qwait);
	free(lkb);
}

static void free_hnode_rsb(void *arg, struct dlm_hnode *n)
{
	struct dlm_rsb *r = dlm_container_of(n, struct dlm_rsb, res_hnode);

	(void)arg;
	free(r->res_lvb);
	free(r);
}

static void free_hnode_dirent(void *arg, struct dlm_hnode *n)
{
	(void)arg;
	free(dlm_container_of(n, struct dlm_dirent, de_hnode));
}

static void free_hnode_owner(void *arg, struct dlm_hnode *n)
{
	(void)arg;
	free(dlm_container_of(n, struct dlm_owner, ow_hnode));
}

/* Drop every object of the lockspace, sending and casting nothing. */
void dlm_lock_drop_all(struct dlm_ls *ls)
{
	dlm_htab_drain(&ls->ls_lkbtbl, free_hnode_lkb, NULL);
	dlm_htab_drain(&ls->ls_rsbtbl, free_hnode_rsb, NULL);
	dlm_htab_drain(&ls->ls_dirtbl, free_hnode_dirent, NULL);
	ls->ls_ndirself = 0;
	dlm_dir_held_drop(ls);
	dlm_solo_drop_all(ls);
	dlm_htab_drain(&ls->ls_ownertbl, free_hnode_owner, NULL);
	while (!dlm_list_empty(&ls->ls_unlock_lvbs)) {
		struct dlm_unlock_lvb *ul = dlm_list_first(&ls->ls_unlock_lvbs,
						struct dlm_unlock_lvb, ul_list);

		dlm_list_del(&ul->ul_list);
		free(ul);
	}
	dlm_list_init(&ls->ls_toss);
	dlm_list_init(&ls->ls_waiters);
	dlm_list_init(&ls->ls_orphans);
	ls->ls_nwaiters = 0;
	ls->ls_nlookups = 0;
	ls->ls_norphans = 0;
}

struct walk_ctx {
	struct dlm_ls *ls;
	void (*fn)(void *arg, const struct dlm_lock_info *li);
	void *arg;
};

static void walk_one(void *arg, struct dlm_hnode *n)
{
	struct walk_ctx *w = arg;
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);
	struct dlm_lock_info li;

	memset(&li, 0, sizeof(li));
	li.lkid = lkb->lkb_id;
	li.remid = lkb->lkb_remid;
	li.nodeid = lkb->lkb_nodeid;
	li.is_master_copy = is_master_copy(lkb);
	li.is_master = lkb->lkb_rsb && is_master(w->ls, lkb->lkb_rsb) &&
		       !(lkb->lkb_rsb->res_flags & RESF_LOOKUP);
	li.status = lkb->lkb_status;
	li.grmode = lkb->lkb_grmode;
	li.rqmode = lkb->lkb_rqmode;
	li.grrange = *dlm_lkb_grrange(lkb);
	li.rqrange = *dlm_lkb_rqrange(lkb);
	li.owner = lkb->lkb_ownerid;
	li.orphan = !!(lkb->lkb_flags & LKBF_ORPHAN);
	li.exflags = lkb->lkb_exflags;
	if (holds_grmode(lkb))
		li.token = dlm_lkb_token(lkb);
	if (lkb->lkb_rsb) {
		li.key = lkb->lkb_rsb->res_key;
		li.keylen = lkb->lkb_rsb->res_keylen;
	}
	if (lkb->lkb_flags & LKBF_DLWAIT) {
		li.dl_key = dlm_deadlock_key(lkb);
		li.dl_probe_ms = lkb->lkb_qwait->lw_dl_probe_ms;
	}
	li.dl_victim = !!(lkb->lkb_flags & LKBF_DEADLK);
	w->fn(w->arg, &li);
}

void dlm_core_ls_walk(struct dlm_ls *ls,
		      void (*fn)(void *arg, const struct dlm_lock_info *li),
		      void *arg)
{
	struct walk_ctx w = { ls, fn, arg };

	dlm_htab_walk(&ls->ls_lkbtbl, walk_one, &w);
	dlm_solo_walk(ls, fn, arg);
}

/* ------------------------------------------------------------------ */
/* for deadlock detection (deadlock.c)                                */
/* ------------------------------------------------------------------ */

/* Call fn for each lock on r that w, queued on r, waits for, by the
 * grant rules above, in the sense of the wait-for graph (deadlock.c):
 * a lock H is an edge when w cannot be granted until H's holder gives H
 * up.  That is a lock holding a mode that conflicts with the one w asks
 * for (ranges overlapping); for a QUECVT conversion, every conversion
 * ahead of it; and for a new request (unless NOORDER) every queued
 * conversion and every request ahead of it that conflicts with w.
 *
 * A queued conversion or a request ahead of a new request w that does
 * not conflict with w holds w back only until it is itself granted
 * (PR behind PR behind a granted EX: when the EX goes, both PRs are
 * granted together).  So it is not an edge: w waits for what it waits
 * for, the granted modes that conflict with its request.  Taking it for
 * an edge to its holder made a false cycle whenever that holder waited,
 * through other resources, for w's own waiter (a transaction with two
 * requests queued, pipelined requests of one owner: test-deadlock
 * test_compatible_ahead_no_cycle), and the detector cancelled a request
 * that would have been granted.  Those requests' modes are gathered,
 * each with the hull of its ranges (a superset: exact for whole-resource
 * locks), and every granted mode conflicting with one of them is an
 * edge of w, except a conversion's conflict with its own request.
 *
 * A request with an alternate mode (ALTPR, ALTCW) or EXPEDITE has none:
 * it waits for one of two sets, which a wait-for edge cannot say, so it
 * is left out of the graph (deadlock.c).  fn must not change r's
 * queues. */
struct awaited {
	uint32_t count[DLM_LOCK_EX + 1];	/* per requested mode */
	struct dlm_range hull[DLM_LOCK_EX + 1];
};

static bool conflicts(const struct dlm_ls *ls, int m1,
		      const struct dlm_range *r1, int m2,
		      const struct dlm_range *r2)
{
	return !compat(ls, m1, m2) && ranges_overlap(ls, r1, r2);
}

static void await_grant(struct awaited *a, int mode,
			const struct dlm_range *range)
{
	struct dlm_range *h;

	if (!mode_valid(mode))
		return;
	h = &a->hull[mode];
	if (!a->count[mode]++) {
		*h = *range;
		return;
	}
	if (range->ra_start < h->ra_start)
		h->ra_start = range->ra_start;
	if (range->ra_end > h->ra_end)
		h->ra_end = range->ra_end;
}

/* Does granted lock h keep one of the awaited grants from happening?
 * (self: h's own awaited request, if h is a conversion gathered in a;
 * DLM_LOCK_IV if none) */
static bool blocks_awaited(const struct dlm_ls *ls, const struct awaited *a,
			   const struct dlm_lkb *h, int self)
{
	for (int m = 0; m <= DLM_LOCK_EX; m++) {
		uint32_t n = a->count[m] - (m == self);

		if (n && conflicts(ls, h->lkb_grmode, dlm_lkb_grrange(h), m,
				   &a->hull[m]))
			return true;
	}
	return false;
}

void dlm_for_each_blocker(struct dlm_ls *ls, const struct dlm_rsb *r,
			  const struct dlm_lkb *w,
			  void (*fn)(void *arg, struct dlm_lkb *h), void *arg)
{
	bool waiting = w->lkb_status == DLM_LKSTS_WAITING;
	bool ordered = waiting && !(w->lkb_exflags & DLM_LKF_NOORDER);
	const struct dlm_range *want = dlm_lkb_rqrange(w);
	struct awaited a;
	bool ahead = true;
	struct dlm_list *pos;

	if (w->lkb_exflags & (DLM_LKF_ALTPR | DLM_LKF_ALTCW | DLM_LKF_EXPEDITE))
		return;
	memset(&a, 0, sizeof(a));
	if (ordered) {
		/* the grants w waits for: compatible conversions and
		 * compatible requests ahead of it */
		dlm_list_for_each(pos, &r->res_convertq) {
			struct dlm_lkb *c = dlm_container_of(pos, struct dlm_lkb,
							     lkb_statequeue);

			if (!conflicts(ls, c->lkb_grmode, dlm_lkb_grrange(c),
				       w->lkb_rqmode, want) &&
			    !conflicts(ls, c->lkb_rqmode, dlm_lkb_rqrange(c),
				       w->lkb_rqmode, want))
				await_grant(&a, c->lkb_rqmode,
					    dlm_lkb_rqrange(c));
		}
		dlm_list_for_each(pos, &r->res_waitq) {
			struct dlm_lkb *q = dlm_container_of(pos, struct dlm_lkb,
							     lkb_statequeue);

			if (q == w)
				break;
			if (!conflicts(ls, q->lkb_rqmode, dlm_lkb_rqrange(q),
				       w->lkb_rqmode, want))
				await_grant(&a, q->lkb_rqmode,
					    dlm_lkb_rqrange(q));
		}
	}
	dlm_list_for_each(pos, &r->res_grantq) {
		struct dlm_lkb *g = dlm_container_of(pos, struct dlm_lkb,
						     lkb_statequeue);

		if (g != w &&
		    (conflicts(ls, g->lkb_grmode, dlm_lkb_grrange(g),
			       w->lkb_rqmode, want) ||
		     blocks_awaited(ls, &a, g, DLM_LOCK_IV)))
			fn(arg, g);
	}
	dlm_list_for_each(pos, &r->res_convertq) {
		struct dlm_lkb *c = dlm_container_of(pos, struct dlm_lkb,
						     lkb_statequeue);
		bool direct;

		if (c == w) {
			ahead = false;
			continue;
		}
		direct = conflicts(ls, c->lkb_grmode, dlm_lkb_grrange(c),
				   w->lkb_rqmode, want) ||
			 (ordered &&
			  conflicts(ls, c->lkb_rqmode, dlm_lkb_rqrange(c),
				    w->lkb_rqmode, want));
		if ((!waiting && ahead && (w->lkb_exflags & DLM_LKF_QUECVT)) ||
		    direct ||
		    blocks_awaited(ls, &a, c,
				   ordered ? c->lkb_rqmode : DLM_LOCK_IV))
			fn(arg, c);
	}
	if (!ordered)
		return;
	dlm_list_for_each(pos, &r->res_waitq) {
		struct dlm_lkb *q = dlm_container_of(pos, struct dlm_lkb,
						     lkb_statequeue);

		if (q == w)
			break;
		if (conflicts(ls, q->lkb_rqmode, dlm_lkb_rqrange(q),
			      w->lkb_rqmode, want))
			fn(arg, q);
	}
}

/* Cancel a process copy's queued request on behalf of the deadlock
 * detector, as its client would (dlm_core_unlock with CANCEL). */
int dlm_cancel_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	return unlock_lkb(ls, lkb, DLM_LKF_CANCEL, NULL);
}

/* ------------------------------------------------------------------ */
/* for recovery (recover.c)                                           */
/* ------------------------------------------------------------------ */

void dlm_grant_pending(struct dlm_ls *ls, struct dlm_rsb *r)
{
	grant_pending(ls, r, NULL);
}

void dlm_queue_lkb(struct dlm_ls *ls, struct dlm_rsb *r, struct dlm_lkb *lkb,
		   int status)
{
	add_to_queue(ls, r, lkb, status);
}

/* At the tail whatever its flags: a queue rebuilt from another's in that
 * queue's order (remaster.c), where HEADQUE did its work already. */
void dlm_queue_lkb_tail(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_lkb *lkb, int status)
{
	uint32_t exflags = lkb->lkb_exflags;

	lkb->lkb_exflags &= ~(uint32_t)DLM_LKF_HEADQUE;
	add_to_queue(ls, r, lkb, status);
	lkb->lkb_exflags = exflags;
}

/* r's counts of what its queued lkb holds and asks (granted modes,
 * ranged locks, NOORDER waiters): recover.c takes lkb's out (delta -1)
 * before it changes them in place, keeping its queue position, and puts
 * them back (+1) after. */
void dlm_lkb_count(struct dlm_rsb *r, struct dlm_lkb *lkb, int delta)
{
	if (holds_grmode(lkb))
		count_held(r, lkb, delta);
	if (lkb->lkb_status == DLM_LKSTS_WAITING &&
	    (lkb->lkb_exflags & DLM_LKF_NOORDER))
		r->res_nnoorder += (uint32_t)delta;
}

/* A lone lock unfolded (solo.c): lkb, new and granted nothing yet, is
 * granted 'mode' on r, its new rsb, as grant_lock grants a request on an
 * empty resource without VALBLK (the token is the solo's, not a new
 * one). */
void dlm_grant_unfolded(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_lkb *lkb, int mode)
{
	set_grmode(ls, r, lkb, mode, &dlm_range_whole);
	lkb->lkb_rqmode = DLM_LOCK_IV;
	lkb->lkb_highbast = DLM_LOCK_IV;
	lkb->lkb_last_bast = DLM_LOCK_IV;
	add_to_queue(ls, r, lkb, DLM_LKSTS_GRANTED);
}

void dlm_destroy_lkb(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	destroy_lkb(ls, lkb);
}

void dlm_lkb_to_msg(struct dlm_msg *m, int type, const struct dlm_lkb *lkb,
		    int status)
{
	lkb_msg(m, type, lkb, status);
}

/* Run the requests of r that waited for its master (lookupq) again. */
void dlm_redo_lookups(struct dlm_ls *ls, struct dlm_rsb *r)
{
	struct dlm_list todo;

	if (dlm_list_empty(&r->res_lookupq) || (r->res_flags & RESF_LOOKUP))
		return;
	dlm_list_init(&todo);
	while (!dlm_list_empty(&r->res_lookupq)) {
		struct dlm_list *n = r->res_lookupq.next;

		dlm_list_del(n);
		dlm_list_add_tail(n, &todo);
	}
	while (!dlm_list_empty(&todo)) {
		struct dlm_lkb *lkb = dlm_list_first(&todo, struct dlm_lkb,
						     lkb_statequeue);

		dlm_list_del(&lkb->lkb_statequeue);
		lkb->lkb_wait_type = DLM_WAIT_NONE;
		request_with_master(ls, lkb);
	}
}

/* Is gr -> rq (with ranges) a down-conversion: does rq conflict with
 * nothing gr did not conflict with, over no more of the resource? */
static bool is_down_conversion(const struct dlm_lkb *lkb)
{
	const struct dlm_range *gr, *rq;
	int m;

	if (!mode_valid(lkb->lkb_grmode) || !mode_valid(lkb->lkb_rqmode))
		return false;
	for (m = DLM_LOCK_NL; m <= DLM_LOCK_EX; m++)
		if (dlm_modes_compat(lkb->lkb_grmode, m) &&
		    !dlm_modes_compat(lkb->lkb_rqmode, m))
			return false;
	gr = dlm_lkb_grrange(lkb);
	rq = dlm_lkb_rqrange(lkb);
	return rq->ra_start >= gr->ra_start && rq->ra_end <= gr->ra_end;
}

/* PR <-> CW: neither mode covers the other. */
static bool is_middle_conversion(int gr, int rq)
{
	return (gr == DLM_LOCK_PR && rq == DLM_LOCK_CW) ||
	       (gr == DLM_LOCK_CW && rq == DLM_LOCK_PR);
}

/*
 * Recovery (start step): lkb's operation was in flight to a master that
 * departed, which may or may not have done it before it died.  Settle
 * now, with the reply the master would have sent, what must be settled
 * before the locks are resent, so that the new master never holds a
 * lock in a mode its owner has given up while another lock was granted
 * against it:
 *   unlock            done (the lock is not resent);
 *   cancel            done (a waiting request goes; a conversion reverts);
 *   down-conversion   granted (the lock is resent in the lower mode; a
 *                     writer's LVB goes with it);
 *   PR <-> CW, or     queued, as the master would have answered; the new
 *   CONVDEADLK        master settles what the dead one had done: granted
 *                     the new mode, or demoted the lock to NL
 *                     (dlm_recover_conversions).  A NOQUEUE PR <-> CW
 *                     conversion too: the dead master may have granted it
 *                     at once and then granted locks against the new
 *                     mode (a PR beside it, taken back to CW: dlm-sim
 *                     --faults --remaster --repoint --rehot 8 --ops 1500
 *                     --bounce --dir-lag 300 seed 636); if the new master
 *                     finds no such lock it may have to wait, NOQUEUE or
 *                     not (a NOQUEUE conversion never waits otherwise).
 *                     A NOQUEUE CONVDEADLK one was never queued, so never
 *                     demoted.
 * Anything else (requests, up-conversions, other NOQUEUE conversions) is
 * kept and redone at finish: the lock's old state is safe to resend.
 * The replies made up here are handed to receive_reply, its result
 * ignored: it returns 0, -ENOENT or -EPROTO, never -ENOMEM (no reply is
 * refused for want of memory: its handlers settle that themselves), so
 * none is lost.
 */
void dlm_recover_waiter(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_msg m;

	memset(&m, 0, sizeof(m));
	m.m_from = lkb->lkb_wait_nodeid;
	m.m_remid = lkb->lkb_id;
	m.m_lkid = lkb->lkb_remid;
	m.m_grmode = lkb->lkb_grmode;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	m.m_grrange = *dlm_lkb_grrange(lkb);
	if (dlm_remaster_on(ls) && is_master(ls, lkb->lkb_rsb)) {
		/* the departed node moved the resource to us before the op
		 * reached it (core/remaster.c): it never took effect there,
		 * and is redone here at finish, like one it refused */
		dlm_resend_later(ls, lkb);
		return;
	}
	if (dlm_remaster_on(ls) &&
	    ((lkb->lkb_flags & LKBF_REPOINT) ||
	     ((lkb->lkb_flags & LKBF_RP_HELD) &&
	      (lkb->lkb_wait_type == DLM_WAIT_UNLOCK ||
	       lkb->lkb_wait_type == DLM_WAIT_CANCEL)) ||
	     (lkb->lkb_rsb->res_nodeid &&
	      lkb->lkb_rsb->res_nodeid != lkb->lkb_wait_nodeid))) {
		/* the departed node moved the resource, and told us so
		 * (MOVED) after every reply it sent us about it: the op
		 * reached it after the move, never took effect there, and
		 * the new master holds the lock as it was (its record).  It
		 * is redone there at finish, not settled here: a cancel or
		 * unlock settled as done would leave the new master a copy
		 * nobody resends or unlocks (dlm-sim --seed 2144 --nodes 6
		 * --faults --repoint --daemon-deaths).  Likewise an unlock
		 * or cancel whose lock the new master's REPOINT (held, its
		 * MOVED lost with the old master) names: had the old master
		 * done it before the move, the lock (a request, for a
		 * cancel; a conversion's revert is the same either way)
		 * had no record there (test-core-remaster,
		 * test_unlock_to_dead_old_master).  And one whose lock the
		 * new master re-pointed already (MOVED came while the op
		 * was on its way to the old master, then the REPOINT, both
		 * before the old master's refusal, lost with it): the lock
		 * names another master than the one the op went to, which
		 * only MOVED does to a lock with an op in flight, and MOVED
		 * came after every reply of the old master's (dlm-sim
		 * --faults --remaster --repoint --rehot 8 --ops 1500
		 * --bounce --dir-lag 300 seed 546: a cancel settled as
		 * done, the new master kept the request's record) */
		dlm_resend_later(ls, lkb);
		return;
	}
	switch (lkb->lkb_wait_type) {
	case DLM_WAIT_UNLOCK:
		m.m_type = DLM_MSG_UNLOCK_REPLY;
		m.m_status = -DLM_EUNLOCK;
		(void)receive_reply(ls, &m);
		return;
	case DLM_WAIT_CANCEL:
		m.m_type = DLM_MSG_CANCEL_REPLY;
		/* granted meanwhile (the GRANT came first): nothing left */
		m.m_status = lkb->lkb_status == DLM_LKSTS_WAITING ||
			     lkb->lkb_status == DLM_LKSTS_CONVERT ? -DLM_ECANCEL : -EBUSY;
		(void)receive_reply(ls, &m);
		return;
	case DLM_WAIT_CONVERT:
		m.m_type = DLM_MSG_CONVERT_REPLY;
		if (is_down_conversion(lkb)) {
			/* a cancel behind it finds nothing; an unlock runs
			 * at finish */
			m.m_status = 0;
			m.m_grmode = lkb->lkb_rqmode;
			m.m_grrange = *dlm_lkb_rqrange(lkb);
			uint32_t id = lkb->lkb_id;
			bool stale = lkb->lkb_flags & LKBF_LVB_STALE;

			m.m_lvbseq = lkb->lkb_lvbseq;
			/* the lock wrote all along: it keeps its token
			 * (token.c) */
			if (dlm_token_mode(lkb->lkb_rqmode))
				m.m_token = dlm_lkb_token(lkb);
			if (lkb->lkb_flags & LKBF_VALBLK) {
				m.m_lvb = dlm_lkb_lvb(lkb);
				m.m_lvblen = DLM_LVB_LEN;
				/* a conversion that reads gets the lock's own
				 * copy: current only if read at a grant of PR
				 * or above it still holds (no one could write
				 * since); otherwise it is flagged */
				if (!lvb_writes(lkb, lkb->lkb_rqmode) &&
				    (!(lkb->lkb_flags & LKBF_LVB_KNOWN) ||
				     (lkb->lkb_flags & LKBF_LVB_STALE) ||
				     lkb->lkb_grmode < DLM_LOCK_PR))
					m.m_sbflags |= DLM_SBF_VALNOTVALID;
			}
			(void)receive_reply(ls, &m);
			/* an IVVALBLK write (or a value that came flagged)
			 * stays flagged in the copy recovery sends */
			lkb = dlm_lkb_find(ls, id);
			if (lkb && stale)
				lkb->lkb_flags |= LKBF_LVB_STALE;
			return;
		}
		/* the dead master may have granted a PR <-> CW conversion,
		 * or demoted a CONVDEADLK one to NL, and granted other locks
		 * against the new mode: queue it, and let the new master
		 * settle the mode (a cancel or unlock behind it runs at
		 * finish) */
		if (is_middle_conversion(lkb->lkb_grmode, lkb->lkb_rqmode) ||
		    ((lkb->lkb_exflags & DLM_LKF_CONVDEADLK) &&
		     !(lkb->lkb_exflags & DLM_LKF_NOQUEUE))) {
			m.m_status = -EINPROGRESS;
			(void)receive_reply(ls, &m);
			return;
		}
		break;	/* the old mode is safe: redone at finish */
	default:
		break;
	}
	dlm_resend_later(ls, lkb);
}

/*
 * Recovery, at a new master once every lock is in: a conversion queued at
 * the dead master may have been changed there without its owner hearing
 * of it, and other locks granted against the new state.  When a granted
 * lock conflicts with a converting lock's mode, the dead master must have
 * done so: a PR <-> CW conversion was granted (take it in the new mode;
 * the grant that follows tells the owner), a CONVDEADLK one was demoted
 * to NL (it waits on; its owner hears DLM_SBF_DEMOTED with the grant).
 */
void dlm_recover_conversions(struct dlm_ls *ls, struct dlm_rsb *r)
{
	struct dlm_list *pos, *qpos;
	struct dlm_list *qs[2] = { &r->res_grantq, &r->res_convertq };

	dlm_list_for_each(pos, &r->res_convertq) {
		struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
						       lkb_statequeue);
		bool conflict = false;
		int k;

		if (!is_middle_conversion(lkb->lkb_grmode, lkb->lkb_rqmode) &&
		    !((lkb->lkb_exflags & DLM_LKF_CONVDEADLK) &&
		      lkb->lkb_grmode > DLM_LOCK_NL))
			continue;
		for (k = 0; k < 2 && !conflict; k++)
			dlm_list_for_each(qpos, qs[k]) {
				struct dlm_lkb *g = dlm_container_of(qpos, struct dlm_lkb,
								     lkb_statequeue);

				if (g == lkb || !mode_valid(g->lkb_grmode))
					continue;
				if (!compat(ls, g->lkb_grmode, lkb->lkb_grmode) &&
				    ranges_overlap(ls, dlm_lkb_grrange(g), dlm_lkb_grrange(lkb))) {
					conflict = true;
					break;
				}
			}
		if (!conflict)
			continue;
		if (is_middle_conversion(lkb->lkb_grmode, lkb->lkb_rqmode)) {
			log_ls(ls, DLM_LOG_DEBUG,
			       "recovery: conversion of %08x to %s taken as granted",
			       lkb->lkb_id, lkb->lkb_rqmode == DLM_LOCK_PR ? "PR" : "CW");
			set_grmode(ls, r, lkb, lkb->lkb_rqmode,
				   dlm_lkb_grrange(lkb));
		} else {
			log_ls(ls, DLM_LOG_DEBUG,
			       "recovery: converting lock %08x taken as demoted to NL",
			       lkb->lkb_id);
			set_grmode(ls, r, lkb, DLM_LOCK_NL,
				   dlm_lkb_grrange(lkb));
			lkb->lkb_sbflags |= DLM_SBF_DEMOTED;
		}
	}
}

/* Recovery, at a new master once every lock is in: the queues were
 * rebuilt from the owners' copies, and no conversion passed through
 * do_convert here, so look for conversion deadlocks among them now (each
 * resolution demotes a lock or takes one off the convert queue, so this
 * ends).  0, or -ENOMEM: a search of more than CVDL_ON_STACK conversions
 * found no memory, so a deadlock may be left; the caller fails the step
 * with r still marked, and the recovery's next run searches again.
 * Logged and skipped, the deadlock stayed for good: the rebuilt queue's
 * order can close a cycle the old master never had
 * (test-core-recover test_recover_deadlock_no_memory). */
int dlm_recover_deadlocks(struct dlm_ls *ls, struct dlm_rsb *r)
{
	bool again = true;

	while (again) {
		struct dlm_list *pos;

		again = false;
		dlm_list_for_each(pos, &r->res_convertq) {
			struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
							       lkb_statequeue);
			bool nomem;
			struct dlm_lkb *victim = conversion_deadlock(ls, r, lkb,
								     &nomem);

			if (nomem) {
				log_ls(ls, DLM_LOG_ERR, "lock %08x: no "
				       "memory to look for a conversion "
				       "deadlock", lkb->lkb_id);
				return -ENOMEM;
			}
			if (!victim)
				continue;
			/* false: no lock is 'self' here; each victim is
			 * answered by break_deadlock itself */
			(void)break_deadlock(ls, r, victim, NULL);
			again = true;
			break;
		}
	}
	return 0;
}

/* Redo the operation kept by dlm_resend_later(), now that the lockspace
 * runs again. */
void dlm_redo_op(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_rsb *r = lkb->lkb_rsb;
	uint32_t id = lkb->lkb_id;
	int wait_type = lkb->lkb_wait_type;

	remove_waiter(ls, lkb);
	/* a cancel or force unlock (a purge) came while the op was in
	 * flight to a departed master: the op never took effect anywhere
	 * (the new master has the lock as it was), so finish it here
	 * rather than redo it and undo it.  Not a down-conversion: that is
	 * never queued, so no cancel can stop it (and it may write the
	 * LVB); it is done, then the overlap runs. */
	if ((lkb->lkb_flags & (LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK)) &&
	    (wait_type == DLM_WAIT_REQUEST ||
	     (wait_type == DLM_WAIT_CONVERT && !is_down_conversion(lkb)))) {
		bool unlock = lkb->lkb_flags & LKBF_OVERLAP_UNLOCK;

		if (wait_type == DLM_WAIT_REQUEST) {
			lkb->lkb_flags &= ~(LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK);
			finish_lkb(ls, lkb, unlock ? -DLM_EUNLOCK : -DLM_ECANCEL);
			return;
		}
		revert_convert(ls, r, lkb);
		if (!unlock) {
			lkb->lkb_flags &= ~LKBF_OVERLAP_CANCEL;
			cast_local(ls, lkb, -DLM_ECANCEL);
			return;
		}
		run_overlap(ls, lkb);
		return;
	}
	switch (wait_type) {
	case DLM_WAIT_REQUEST:
		if (r->res_nodeid && !dlm_ls_is_member(ls, r->res_nodeid))
			r->res_nodeid = 0;
		request_with_master(ls, lkb);
		break;
	case DLM_WAIT_CONVERT:
		/* the lockspace runs: sent, or done here; either way
		 * refused -ENOMEM whole, the lock as it was, when there is
		 * no room for its value (convert_here, receive_convert); done
		 * here, the value was lost while its writer was told the
		 * conversion succeeded (dlm-sim --alloc-faults 20 --faults
		 * --remaster --repoint --rehot 8 --ops 1000 --bounce --nodes 3
		 * seed 1221) */
		if (op_kept_or_sent(ls, lkb, DLM_WAIT_CONVERT, send_convert))
			return;
		convert_here(ls, lkb);
		break;
	case DLM_WAIT_UNLOCK:
		/* with its own flags: forced only if its client forced it.
		 * Forced, a master with no room for the value it writes
		 * took it all the same, lost the value (VALNOTVALID) and
		 * answered that it succeeded (an unlock parked for a
		 * REPOINT: dlm-sim --alloc-faults 20 --faults --remaster
		 * --repoint --rehot 8 --ops 1000 --bounce seed 6203);
		 * unforced it refuses it -ENOMEM whole, the lock held (see
		 * "Out of memory").  Forced should it be refused here,
		 * which it is not expected to be: the lock was granted at
		 * the call, and nothing but this unlock was in flight */
		if (unlock_lkb(ls, lkb, lkb->lkb_unlock_flags, NULL) < 0 &&
		    unlock_lkb(ls, lkb, lkb->lkb_unlock_flags | DLM_LKF_FORCEUNLOCK,
			       NULL) < 0)
			log_ls(ls, DLM_LOG_WARNING, "unlock of %08x not redone",
			       id);
		break;
	case DLM_WAIT_CANCEL:
		(void)unlock_lkb(ls, lkb, DLM_LKF_CANCEL, NULL);
		break;
	default:
		break;
	}
	/* a cancel or unlock asked for meanwhile, once this op is over */
	lkb = dlm_lkb_find(ls, id);
	if (lkb && lkb->lkb_wait_type == DLM_WAIT_NONE)
		run_overlap(ls, lkb);
}


