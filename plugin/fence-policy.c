/*
 * plugin/fence-policy.c - the decisions of fencing (plugin/fence.c),
 * without I/O, so that tests/test-fence.c can check them alone.
 *
 * Which method fences a failed node, from dlm.conf:
 *
 *   enable_fencing = 0            off: the node counts as fenced at once.
 *   fence_pacemaker = yes         pacemaker: recovery waits until
 *                                 pacemaker's fencer reports the node
 *                                 fenced, also while the fencer is not
 *                                 reachable (it may come back).
 *   fence_pacemaker = auto        pacemaker while dlmd is connected to the
 *     (default)                   fencer; otherwise as "no".
 *   fence_pacemaker = no          fence_command when one is configured,
 *                                 else manual (dlmctl fence_ack).
 *
 * The choice is made again at every attempt (a failure, the retry timer,
 * a quorum change), so "auto" moves to fence_command when the fencer
 * goes away and back when it returns.  An operator's dlmctl fence_ack
 * counts in every method.
 *
 * A result from pacemaker counts for a failure only when it is a
 * successful fencing ("done") newer than the latest one in the fencer's
 * history read at the failure, both by the fencer's own times
 * (dlmd_fence_pcmk_counts, pm_known): this node's clock plays no part.
 * Only when that history could not be read (the fencer unreachable then)
 * is the failure's wall-clock time, in seconds, compared with the
 * fencing's, as dlm_controld compares them: a fencing completed within
 * the same second before the failure is then accepted (a window of one
 * second, which needs a second failure of the node within it).
 *
 * ONE FENCER (plugin/fence.c's essay has the protocol).  Which survivor
 * fences a failed node is the turn below, kept per failed node by every
 * member of the daemon group from the same totally ordered stream:
 *
 *   CLAIM from X        accepted iff nobody holds the claim: X fences;
 *                       a claim delivered while another holds is
 *                       ignored by every member alike (two nodes that
 *                       claim at once: the first delivered wins)
 *   RESULT done         the node is fenced: the claim ends, whoever
 *                       held it, and the rotation starts over
 *   RESULT failed       X's attempt failed: its claim ends and the turn
 *                       passes to the next candidate after X
 *   RESULT released     X gives the claim back without a verdict
 *   X leaves the group  its claim ends (the next candidate takes over)
 *
 * Candidates are the daemon group's members but the failed ones, in
 * ascending node id, rotated to start after the last node whose attempt
 * failed: without failures the lowest id claims first; after node X
 * failed, the next higher id (wrapping around), so that a survivor that
 * cannot reach the fence device does not keep the turn.  Only the rank
 * is a choice; the claims arbitrate, so members that disagree on the
 * ranks for a moment (one has seen a confchg the other has not yet)
 * still never have two claims accepted.
 */
#include "plugin/dlmd.h"

const char *dlmd_fence_method_str(enum dlmd_fence_method m)
{
	switch (m) {
	case DLMD_FENCE_OFF:
		return "off";
	case DLMD_FENCE_PACEMAKER:
		return "pacemaker";
	case DLMD_FENCE_COMMAND:
		return "fence_command";
	case DLMD_FENCE_MANUAL:
		return "fence_ack";
	}
	return "?";
}

bool dlmd_fence_pcmk_built(void)
{
#ifdef HAVE_PACEMAKER_FENCING
	return true;
#else
	return false;
#endif
}

enum dlmd_fence_method dlmd_fence_choose(const struct dlmd_config *cf,
					 bool fencer_connected)
{
	if (!cf->cf_enable_fencing)
		return DLMD_FENCE_OFF;
	if (dlmd_fence_pcmk_built()) {
		if (cf->cf_fence_pcmk == DLMD_FENCE_PCMK_YES)
			return DLMD_FENCE_PACEMAKER;
		if (cf->cf_fence_pcmk == DLMD_FENCE_PCMK_AUTO && fencer_connected)
			return DLMD_FENCE_PACEMAKER;
	}
	return cf->cf_fence_command[0] ? DLMD_FENCE_COMMAND : DLMD_FENCE_MANUAL;
}

bool dlmd_fence_pcmk_counts(const struct dlmd_fence_pcmk_mark *since, bool done,
			    int64_t done_s, int64_t done_ns)
{
	if (!done || since->pm_wall_s <= 0)
		return false;
	if (since->pm_known)
		return done_ns > since->pm_done_ns;
	return done_s >= since->pm_wall_s;
}

bool dlmd_fence_pcmk_ask_failed(const struct dlmd_fence_pcmk_mark *asked,
				bool pending, int64_t failed_s, int64_t failed_ns,
				int64_t done_s, int64_t done_ns)
{
	if (pending || asked->pm_wall_s <= 0)
		return false;
	if (asked->pm_known)
		return failed_ns > asked->pm_failed_ns &&
		       done_ns <= asked->pm_done_ns;
	return failed_s >= asked->pm_wall_s && done_s < asked->pm_wall_s;
}

/*
 * The marks of a pending failure (cluster.c, FORGIVING A SPLIT): FENCING
 * when anything may be about to kill the node, here or elsewhere;
 * FIRM when the failure is not a node-down seen from a minority side.
 * A fencing pacemaker's fencer has under way (in its history, not done)
 * is FENCING though dlmd neither asked for it nor claimed it: pacemaker's
 * own policy or an operator started it, and dlmd claims and asks nothing
 * while one is under way (fence.c, pcmk_should_ask; for a node-down it
 * asks only after fence_pacemaker_wait_secs with none).  Forgiven, the
 * node would keep its locks and be killed a moment later all the same:
 * a new failure, whose recovery waits for a fencing newer than the
 * fencer's history at that failure.  The fencing that killed it ended
 * before its node-down reached us, so it is in that history and does not
 * count (dlmd_fence_pcmk_counts); dlmd asks for another once the wait is
 * over.  Nothing saved, a second reboot and the wait paid: not forgiven.
 */
unsigned int dlmd_fence_marks_of(const struct dlmd_fence_pending *p)
{
	unsigned int m = 0;

	if (p->fp_seen || p->fp_claim_sent || p->fp_running ||
	    p->fp_pcmk_asked || p->fp_pcmk_pending || p->fp_claimed)
		m |= DLMD_FENCE_MARK_FENCING;
	if (p->fp_in_view_ok || p->fp_daemon || p->fp_even_loser)
		m |= DLMD_FENCE_MARK_FIRM;
	return m;
}

bool dlmd_fence_turn_claim(struct dlmd_fence_turn *t, uint32_t from)
{
	if (t->ft_claimer && t->ft_claimer != from)
		return false;
	t->ft_claimer = from;
	return true;
}

bool dlmd_fence_turn_result(struct dlmd_fence_turn *t, uint32_t from,
			    enum dlmd_fence_status st)
{
	bool held = t->ft_claimer && t->ft_claimer == from;

	switch (st) {
	case DLMD_FENCE_DONE:
		/* fenced: whoever held the claim, it is over */
		t->ft_claimer = 0;
		t->ft_last_failed = 0;
		break;
	case DLMD_FENCE_FAILED:
		if (held) {
			t->ft_claimer = 0;
			t->ft_last_failed = from;
		}
		break;
	case DLMD_FENCE_RELEASED:
		if (held)
			t->ft_claimer = 0;
		break;
	}
	return held;
}

bool dlmd_fence_turn_left(struct dlmd_fence_turn *t, uint32_t id)
{
	if (!t->ft_claimer || t->ft_claimer != id)
		return false;
	t->ft_claimer = 0;
	return true;
}

int dlmd_fence_turn_rank(const struct dlmd_fence_turn *t, const uint32_t *members,
			 unsigned int n, const uint32_t *skip, unsigned int nskip,
			 uint32_t self)
{
	uint32_t cand[DLM_MAX_NODES];
	unsigned int k = 0, start = 0;
	int pos = -1;

	/* the candidates, sorted (members come in any order) */
	for (unsigned int i = 0; i < n && k < DLM_MAX_NODES; i++) {
		uint32_t id = members[i];
		bool out = !id;
		unsigned int j;

		for (j = 0; j < nskip && !out; j++)
			out = skip[j] == id;
		for (j = 0; j < k && !out; j++)
			out = cand[j] == id;	/* twice (two processes) */
		if (out)
			continue;
		for (j = k; j > 0 && cand[j - 1] > id; j--)
			cand[j] = cand[j - 1];
		cand[j] = id;
		k++;
	}
	for (unsigned int i = 0; i < k; i++)
		if (cand[i] == self)
			pos = (int)i;
	if (pos < 0)
		return -1;
	/* rotated: the first candidate after the last one that failed */
	if (t->ft_last_failed) {
		while (start < k && cand[start] <= t->ft_last_failed)
			start++;
		if (start == k)
			start = 0;
	}
	return (int)(((unsigned int)pos + k - start) % k);
}
