/*
 * core/token.c - fencing tokens: a number with every write grant that
 * storage can use to refuse a writer whose lock was given away.
 *
 * The problem.  A holder of an EX lock can pause (a GC, swap, a stopped
 * VM, a queue of writes in the network) and go on writing after its lock
 * was taken from it: its node was declared dead and fenced too late, its
 * process was killed with writes still in flight, its lock was purged.
 * The lock manager cannot stop such a write, but the storage can, if
 * every grant of a mode that allows writing carries a number that only
 * grows: the storage remembers the highest number it has seen for an
 * object and refuses a write with a lower one.
 *
 * The promise.  Each grant of CW, PW or EX on a resource carries a 64-bit
 * token strictly greater than the token of every earlier grant on that
 * resource with which it conflicts (an earlier grant of an incompatible
 * mode on an overlapping range: one that had to end before this one
 * could start), across master changes (a resource dropped and mastered
 * again elsewhere, a master that died), node deaths and recoveries, for
 * as long as any node keeps the lockspace.  Compatible grants (two CW
 * locks, two EX locks on disjoint ranges) get distinct tokens in the
 * order their master granted them, and may reach their holders in
 * another order.  A conversion between write modes is a grant and gets a
 * new token; a grant of NL, CR or PR carries none (0).  The one
 * exception: a down-conversion (EX to PW or CW) in flight to a master
 * that died is completed by its own node during recovery (lock.c
 * dlm_recover_waiter) and keeps the lock's token, which is safe: the
 * lock held a write mode all along, so nothing conflicting was granted
 * in between.
 *
 * The design: a Lamport clock per lockspace, floored by the recovery
 * generation.  Every node keeps ls_token, the highest token it has
 * minted or heard of in the lockspace.
 *
 *   mint    A master grants a write mode: token = max(ls_token,
 *           E << 32) + 1, where E is the lockspace's latest recovery
 *           event on this node (ls_event: the grants of a recovery's last
 *           step belong to it already); ls_token = token.
 *   carry   Every engine message carries the sender's ls_token in the
 *           wire field m_clock (core/wire.h), and the receiver raises its
 *           own to it when the sender is a member (dlm_core_receive).
 *           Messages about a lock (replies, GRANT, RC_LOCK) also carry
 *           that lock's own token (m_token), which the holder's process
 *           copy and a new master's copy keep.
 *
 * Why it holds.  Two conflicting grants A then B on resource R:
 *
 *  - same master, no recovery between: the master's ls_token only grows,
 *    so B's token is above A's.
 *  - a recovery between them (a node died or joined, the master may have
 *    died with A's holder, so that nobody alive knows A's token): the
 *    cluster glue numbers events E = (newest event any member ran) + 1
 *    (plugin/cluster.c), so B's event is above the event A was granted
 *    under, and the high half of B's token is at least that event while
 *    the high half of A's is at most its own.  Recovery events are agreed
 *    by all members, and the recovery barriers make every member start E
 *    before any grants under it: no node grants under an older event
 *    once any node grants under E.  A joining node with no past starts
 *    at the others' event, never at 0.
 *  - the master changed without a recovery: R went unused, its master X
 *    dropped it (REMOVE to R's directory node D, after X minted A's
 *    token), and Y became master by asking D (LOOKUP_REPLY), or by
 *    asking X while D still named it (X answers -EBADR and Y asks again).
 *    D's record of Y exists only after D received X's REMOVE; every
 *    message in that chain carries its sender's clock, so Y's ls_token is
 *    above A's token before it grants B.  (When two of X, D, Y are one
 *    node the chain goes through that node's own clock.)
 *
 * The directory and every link are inside one lockspace, so one clock per
 * lockspace is enough; tokens of different resources are comparable
 * only in the sense that they are all below the next minted anywhere
 * after hearing of them.  A token minted at the master reaches the holder
 * with its grant (REQUEST_REPLY, CONVERT_REPLY or GRANT) and a new master
 * with the holder's RC_LOCK, so the holder and the dump show the same
 * number; clients read it with dlm_ls_lock_token() (libdlm).
 *
 * A clock from the future.  The clock a message carries is believed (the
 * receiver's own is raised to it), so one member that sends a clock near
 * UINT64_MAX, through a bug or a forged message that passed the
 * transport's authentication, would use up the lockspace's tokens: the
 * next grant would mint UINT64_MAX and every one after it the same
 * (tokens saturate, they never wrap back to small numbers, but equal
 * tokens no longer order conflicting writers).  So the receiver bounds
 * what it hears (dlm_token_heard).  A member's clock is at most what
 * some member minted, and minting under an event needs that event's
 * last recovery step, which every member reaches only after starting
 * the event: so while we have started event E (ls_event), nobody has
 * minted under E + 1 or later, and each legitimate clock is below
 * (E + 2) << 32 (E + 1 would do; one generation of slack covers the
 * carry of a generation past 2^32 grants, see Limits).  One kind of
 * message comes legitimately from further ahead: a recovery message of
 * an event we have not started yet (m_gen above ls_event; a joining
 * node, still at event 0, hears the others' recovery of the event that
 * brings it in, with clocks of generations it never saw).  Its clock is
 * not heard at all, neither believed nor held against it: the floor of
 * that event, once we start it, is above every token minted before it,
 * which is all such a clock could tell us.  (A forger gains nothing
 * from that way in either: an unheard clock changes nothing.)
 * Past that bound a clock is still believed when it is at most
 * TOKEN_AHEAD_MAX (2^24) above our own, so that a lockspace whose
 * tokens did carry past 2^32 in one generation keeps working; a forger
 * can then push our clock by that much per message, 2^40 messages to
 * the end of the range.  A message beyond both is dropped whole (a
 * member's other fields are not to be trusted either), logged (the
 * first, second, fourth, ... of a lockspace) and counted in
 * ls_clock_rejected (dlm_core_ls_stats).  Below the bound a wrong clock
 * can only make tokens jump ahead, which costs nothing: they still only
 * grow.
 *
 * A token above its message's clock.  A message about a lock carries
 * the lock's token (m_token) besides the clock, and the holder's process
 * copy (a grant: REQUEST_REPLY, CONVERT_REPLY, GRANT) or a new master's
 * copy (RC_LOCK) stores it as it comes.  Every token a node has is one
 * it minted (ls_token = token) or one it stored from a message whose
 * clock it heard first (dlm_core_receive hears a member's clock before
 * anything else reads the message; RC_LOCK is taken only in the event
 * we run, so its clock is heard too), and ls_token only grows: so
 * every lock's token is at most its node's clock, and dlm_send_msg
 * writes the clock after the token was minted.  A message whose m_token
 * exceeds its own m_clock was therefore never sent by a correct member:
 * a bug, or a forged message.  Stored, that token would be reported to
 * the holder (dlm_ls_lock_token) as a number no master minted, above
 * the next one a master will mint, so storage would refuse the
 * legitimate writers after it until the clock caught up.  Such a
 * message is dropped whole like a clock from the future, logged and
 * counted in ls_clock_rejected; a grant dropped so leaves its lock
 * waiting (the audit reports it stuck), which is the right outcome for
 * a message that cannot be believed.  The variant that counts alone
 * (DLM_FAULT_TOKEN_RESET) breaks the premise and is not checked.
 *
 * Limits.
 *  - "While any node keeps the lockspace": when every node has left it,
 *    nothing remembers its events or clock, and a new instance starts at
 *    event 1 again.  Storage that must survive that keeps its own epoch
 *    (e.g. resets its high-water marks when it is told the lockspace was
 *    created afresh) or never lets the whole lockspace go.
 *  - One recovery generation holds 2^32 - 1 tokens of one causal chain
 *    (the clock advances by one per write grant it orders); past that the
 *    low half carries into the high half, which still only grows, but a
 *    master that died with its holder after more than 2^32 grants since
 *    the last recovery could have minted tokens above the next
 *    generation's first ones.  A warning is logged once when a
 *    lockspace's low half passes 2^31 (at a million write grants a
 *    second on one chain, that is 35 minutes without a membership
 *    change).
 *  - The token is a fact about the lock manager's order; it protects only
 *    storage that checks it.
 */
#include <errno.h>

#include "core/core_internal.h"
#include "core/wire.h"

/* The low half of a token past which we warn once (see Limits). */
#define TOKEN_LOW_WARN		(UINT64_C(1) << 31)
/* A member's clock may be this far above ours even past the generation
 * bound (see "A clock from the future"). */
#define TOKEN_AHEAD_MAX		(UINT64_C(1) << 24)

static uint64_t token_floor(const struct dlm_ls *ls)
{
	return (uint64_t)ls->ls_event << DLM_TOKEN_GEN_SHIFT;
}

uint64_t dlm_token_mint(struct dlm_ls *ls)
{
	uint64_t t = ls->ls_token;

	if (ls->ls_core->core_fault != DLM_FAULT_TOKEN_RESET &&
	    t < token_floor(ls))
		t = token_floor(ls);
	if (t == UINT64_MAX) {
		/* cannot happen in practice (see Limits and "A clock from
		 * the future"); never wrap: saturate */
		log_ls(ls, DLM_LOG_ERR, "fencing tokens exhausted");
		return t;
	}
	t++;
	if (!ls->ls_token_warned &&
	    (t & DLM_TOKEN_LOW_MASK) >= TOKEN_LOW_WARN) {
		ls->ls_token_warned = true;
		log_ls(ls, DLM_LOG_WARNING,
		       "fencing tokens: %llu grants in event %u; a recovery "
		       "is due before 2^32",
		       (unsigned long long)(t & DLM_TOKEN_LOW_MASK),
		       (unsigned int)(t >> DLM_TOKEN_GEN_SHIFT));
	}
	ls->ls_token = t;
	return t;
}

/* The highest clock a member's message may carry now (see "A clock from
 * the future"): below the generation after next, or at most
 * TOKEN_AHEAD_MAX above our own clock; saturated, never wrapped. */
static uint64_t clock_limit(const struct dlm_ls *ls)
{
	uint64_t by_gen = UINT64_MAX, by_clock = UINT64_MAX;

	if (ls->ls_event < UINT32_MAX - 1)
		by_gen = (((uint64_t)ls->ls_event + 2) << DLM_TOKEN_GEN_SHIFT) - 1;
	if (ls->ls_token <= UINT64_MAX - TOKEN_AHEAD_MAX)
		by_clock = ls->ls_token + TOKEN_AHEAD_MAX;
	return by_gen > by_clock ? by_gen : by_clock;
}

/* Drop m: count it, and log the first, then ever more rarely (a flood
 * of them must not flood the log).  -ERANGE. */
static int clock_reject(struct dlm_ls *ls, const struct dlm_msg *m,
			const char *why, uint64_t value, uint64_t bound)
{
	ls->ls_clock_rejected++;
	if (!(ls->ls_clock_rejected & (ls->ls_clock_rejected - 1)))
		log_ls(ls, DLM_LOG_WARNING,
		       "dropped a message from node %u: %s %llx is beyond %llx "
		       "(event %u, clock %llx); %llu dropped so",
		       m->m_from, why, (unsigned long long)value,
		       (unsigned long long)bound, ls->ls_event,
		       (unsigned long long)ls->ls_token,
		       (unsigned long long)ls->ls_clock_rejected);
	return -ERANGE;
}

int dlm_token_heard(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint64_t clock = m->m_clock, limit;

	/* the broken variant counts alone: it neither hears the others nor
	 * the generation, so a new master starts from its own count */
	if (ls->ls_core->core_fault == DLM_FAULT_TOKEN_RESET)
		return 0;
	/* the sender's clock bounds every token it has (see "A token above
	 * its message's clock") */
	if (m->m_token > clock)
		return clock_reject(ls, m, "its lock's token", m->m_token, clock);
	if (clock <= ls->ls_token)
		return 0;
	/* the recovery of an event we have not started: its floor covers
	 * what it could tell us */
	if (dlm_msg_is_recovery(m->m_type) && m->m_gen > ls->ls_event)
		return 0;
	limit = clock_limit(ls);
	if (clock > limit)
		return clock_reject(ls, m, "its token clock", clock, limit);
	ls->ls_token = clock;
	return 0;
}

bool dlm_token_mode(int mode)
{
	return mode == DLM_LOCK_CW || mode == DLM_LOCK_PW ||
	       mode == DLM_LOCK_EX;
}

uint64_t dlm_lkb_token(const struct dlm_lkb *lkb)
{
	return dlm_token_mode(lkb->lkb_grmode) ? lkb->lkb_token : 0;
}

int dlm_core_lock_token(struct dlm_ls *ls, uint32_t lkid, uint64_t owner,
			uint64_t *token)
{
	struct dlm_solo *so = dlm_solo_find_id(ls, lkid);
	struct dlm_lkb *lkb = dlm_lkb_find(ls, lkid);

	if (so) {	/* a lone lock folded with its resource (solo.c) */
		if (so->so_ownerid != owner)
			return -EPERM;
		if (!dlm_token_mode(so->so_grmode) || !so->so_token)
			return -ENOENT;
		*token = so->so_token;
		return 0;
	}
	if (!lkb || is_master_copy(lkb) || (lkb->lkb_flags & LKBF_ORPHAN))
		return -ENOENT;
	if (lkb->lkb_ownerid != owner)
		return -EPERM;
	if (!holds_grmode(lkb) || !dlm_lkb_token(lkb))
		return -ENOENT;
	*token = lkb->lkb_token;
	return 0;
}
