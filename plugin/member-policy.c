/*
 * plugin/member-policy.c - step 4 of the lockspace protocol
 * (plugin/cluster.c's essay): the decision every member takes when every
 * member's START of a change is in, without I/O, so that
 * tests/test-member-policy.c can check it alone.
 *
 * The input is, per member of the change, the last event it took part in
 * as its START reports it (0: it never ran the lockspace, "fresh").  The
 * members themselves are those of the change: every START counted
 * carries the same list.
 *
 *   - A member that ran the lockspace (last event not 0) with an event
 *     older than the newest reported was cut off while the others
 *     recovered without it (a healed partition): its locks may conflict
 *     with what was granted since.  Every such member is a LOSER; nothing
 *     is started, the losers drop their instance and the others wait for
 *     the change their LEAVEs cause.
 *   - Otherwise the event is the newest last event + 1: larger than each
 *     member's previous one (the engine needs increasing events), the
 *     same on every member (they decide on the same data), and a fresh
 *     joiner learns it from the others.  The first start of a lockspace
 *     (everyone fresh) is event 1.
 *   - The newest being UINT32_MAX leaves no event: nothing is started.
 *
 * How long an unreachable member is waited for (UNREACHABLE PEERS in
 * cluster.c): peer_unreachable_secs, but never less than corosync's
 * token + consensus.
 *
 * And when a recovery failed on this node, how long it waits before it
 * restarts recovery on every member (RECOVERY RETRY in cluster.c): 1 s
 * at the first failure, doubling at each failure in a row, at most 30 s.
 *
 * And what a split's majority is counted against (SPLIT AND MERGE): the
 * configured nodes and the tie-breaker node, picked from corosync's
 * quorum.auto_tie_breaker(_node) as votequorum picks it; cluster.c
 * applies a change of them in CPG order (CONFIGURATION CHANGES), so that
 * every member decides with the same pair.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"

void dlmd_decide(const uint32_t *members, const uint32_t *last_events,
		 unsigned int n, struct dlmd_decision *dc)
{
	uint32_t newest = 0;

	dc->dc_nlosers = 0;
	dc->dc_event = 0;
	for (unsigned int i = 0; i < n; i++)
		if (last_events[i] > newest)
			newest = last_events[i];
	dc->dc_newest = newest;
	for (unsigned int i = 0; i < n; i++)
		if (last_events[i] && last_events[i] != newest)
			dc->dc_losers[dc->dc_nlosers++] = members[i];
	if (dc->dc_nlosers)
		dc->dc_kind = DLMD_DECIDE_LOSERS;
	else if (newest == UINT32_MAX)
		dc->dc_kind = DLMD_DECIDE_EXHAUSTED;
	else {
		dc->dc_kind = DLMD_DECIDE_START;
		dc->dc_event = newest + 1;
	}
}

uint64_t dlmd_unreach_limit_ms(uint32_t secs, uint32_t token_ms,
			       uint32_t consensus_ms)
{
	uint64_t limit = (uint64_t)secs * 1000, floor;

	if (!limit)
		return 0;
	if (!consensus_ms)
		consensus_ms = (uint32_t)((uint64_t)token_ms * 6 / 5);
	floor = (uint64_t)token_ms + consensus_ms;
	return limit > floor ? limit : floor;
}

uint32_t dlmd_restart_delay_ms(uint32_t attempt)
{
	uint32_t ms = DLMD_RESTART_FIRST_MS;

	for (uint32_t i = 1; i < attempt && ms < DLMD_RESTART_MAX_MS; i++)
		ms *= 2;
	return ms < DLMD_RESTART_MAX_MS ? ms : DLMD_RESTART_MAX_MS;
}

static bool id_listed(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

uint32_t dlmd_tiebreak_pick(const uint32_t *ids, unsigned int n, bool atb,
			    const char *how)
{
	uint32_t lo = 0, hi = 0, pick = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (!ids[i])
			continue;
		if (!lo || ids[i] < lo)
			lo = ids[i];
		if (ids[i] > hi)
			hi = ids[i];
	}
	if (atb && how && !strcmp(how, "highest")) {
		pick = hi;
	} else if (atb && how && dlmd_tiebreak_valid(how) &&
		   strcmp(how, "lowest")) {
		/* a list, read as votequorum reads it: numbers (strtol,
		 * whitespace before each) until one is 0 or none is there;
		 * its first id that is configured counts (bounded by the
		 * string: each turn consumes a number or ends) */
		for (const char *p = how; !pick;) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p || !v)
				break;
			if (v > 0 && (unsigned long)v <= UINT32_MAX &&
			    id_listed(ids, n, (uint32_t)v))
				pick = (uint32_t)v;
			p = end;
		}
	}
	/* (a string votequorum does not take turns its auto_tie_breaker
	 * off: the lowest id, as without it) */
	return pick ? pick : lo;
}

bool dlmd_tiebreak_valid(const char *how)
{
	char *end;

	if (!strcmp(how, "lowest") || !strcmp(how, "highest"))
		return true;
	/* votequorum: a list if its first number is not 0 */
	return strtol(how, &end, 10) != 0 && end != how;
}

bool dlmd_majority_side(unsigned int nconf, uint32_t tiebreak,
			const uint32_t *ids, unsigned int n)
{
	if (!nconf)
		return false;
	if (2 * n > nconf)
		return true;
	return 2 * n == nconf && tiebreak && id_listed(ids, n, tiebreak);
}
