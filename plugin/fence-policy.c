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
 * successful fencing ("done") that completed at or after the failure.
 * Pacemaker's history is in wall-clock seconds; the failure time is the
 * wall clock when corosync reported it, in seconds, as dlm_controld
 * compares them.  A fencing completed within the same second before the
 * failure is therefore accepted: the window is one second, and it needs
 * a second failure of the node within that second.
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

bool dlmd_fence_pcmk_counts(int64_t failed_s, bool done, int64_t completed_s)
{
	return done && failed_s > 0 && completed_s >= failed_s;
}
