/*
 * tests/test-member-policy.c - the decision of plugin/member-policy.c:
 * from each member's last event (as its START reports it), the event a
 * change's recovery uses, or the losers of a stateful merge, in the cases
 * the lockspace protocol meets (plugin/cluster.c's essay, step 4).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

static struct dlmd_decision run(const uint32_t *members, const uint32_t *last,
				unsigned int n)
{
	struct dlmd_decision dc;

	memset(&dc, 0xa5, sizeof(dc));
	dlmd_decide(members, last, n, &dc);
	return dc;
}

static void expect_start(const uint32_t *members, const uint32_t *last,
			 unsigned int n, uint32_t event)
{
	struct dlmd_decision dc = run(members, last, n);

	assert_int_equal(dc.dc_kind, DLMD_DECIDE_START);
	assert_int_equal(dc.dc_event, event);
	assert_int_equal(dc.dc_nlosers, 0);
}

/* A lockspace created on several nodes at once: everyone is fresh. */
static void test_first_start(void **state)
{
	const uint32_t m[] = { 1, 2, 3 }, last[] = { 0, 0, 0 };
	const uint32_t alone[] = { 4 }, alone_last[] = { 0 };

	expect_start(m, last, 3, 1);
	expect_start(alone, alone_last, 1, 1);
}

/* No START at all (no members): nothing older, event 1. */
static void test_empty(void **state)
{
	expect_start(NULL, NULL, 0, 1);
}

/* Fresh joiners learn the event from those that ran it. */
static void test_join(void **state)
{
	const uint32_t m[] = { 1, 2, 5 }, last[] = { 7, 7, 0 };
	const uint32_t m2[] = { 1, 2, 3, 4 }, last2[] = { 0, 9, 0, 0 };

	expect_start(m, last, 3, 8);
	expect_start(m2, last2, 4, 10);
}

/* A clean leave or a failure: the rest ran the same event. */
static void test_leave(void **state)
{
	const uint32_t m[] = { 2, 3 }, last[] = { 12, 12 };

	expect_start(m, last, 2, 13);
}

/* A death during a change: the survivors decided event 5 and their
 * recovery never finished; the change that follows is 6 for all, with
 * no loser (they all report the 5 they decided together). */
static void test_death_during_change(void **state)
{
	const uint32_t m[] = { 1, 3 }, last[] = { 5, 5 };
	const uint32_t m2[] = { 1, 3, 4 }, last2[] = { 5, 5, 0 };

	expect_start(m, last, 2, 6);
	/* and a node joining in the same change */
	expect_start(m2, last2, 3, 6);
}

/* A member whose last event differs (cut off while the others went on):
 * every such member is a loser, and nothing starts. */
static void test_stateful_merge(void **state)
{
	const uint32_t m[] = { 1, 2, 3, 4 }, last[] = { 4, 6, 6, 3 };
	const uint32_t m2[] = { 1, 2, 3 }, last2[] = { 6, 0, 4 };
	struct dlmd_decision dc = run(m, last, 4);

	assert_int_equal(dc.dc_kind, DLMD_DECIDE_LOSERS);
	assert_int_equal(dc.dc_newest, 6);
	assert_int_equal(dc.dc_nlosers, 2);
	assert_int_equal(dc.dc_losers[0], 1);
	assert_int_equal(dc.dc_losers[1], 4);
	/* a fresh member never loses */
	dc = run(m2, last2, 3);
	assert_int_equal(dc.dc_kind, DLMD_DECIDE_LOSERS);
	assert_int_equal(dc.dc_nlosers, 1);
	assert_int_equal(dc.dc_losers[0], 3);
}

/* The last event number: nothing can follow it. */
static void test_exhausted(void **state)
{
	const uint32_t m[] = { 1, 2 }, last[] = { UINT32_MAX, UINT32_MAX };
	const uint32_t m2[] = { 1, 2 }, last2[] = { UINT32_MAX - 1, 0 };
	struct dlmd_decision dc = run(m, last, 2);

	assert_int_equal(dc.dc_kind, DLMD_DECIDE_EXHAUSTED);
	assert_int_equal(dc.dc_nlosers, 0);
	expect_start(m2, last2, 2, UINT32_MAX);
}

/* Every member decides on the same data in any order of the list. */
static void test_order_free(void **state)
{
	const uint32_t m[] = { 3, 1, 2 }, last[] = { 0, 8, 8 };

	expect_start(m, last, 3, 9);
}

/* The back-off before restarting a failed recovery: 1 s, doubling at
 * each failure in a row, at most 30 s. */
static void test_restart_delay(void **state)
{
	assert_int_equal(dlmd_restart_delay_ms(0), 1000);
	assert_int_equal(dlmd_restart_delay_ms(1), 1000);
	assert_int_equal(dlmd_restart_delay_ms(2), 2000);
	assert_int_equal(dlmd_restart_delay_ms(3), 4000);
	assert_int_equal(dlmd_restart_delay_ms(5), 16000);
	assert_int_equal(dlmd_restart_delay_ms(6), 30000);
	assert_int_equal(dlmd_restart_delay_ms(7), 30000);
	assert_int_equal(dlmd_restart_delay_ms(UINT32_MAX), 30000);
}

/* peer_unreachable_secs, raised to corosync's token + consensus */
static void test_unreach_limit(void **state)
{
	(void)state;
	/* off stays off */
	assert_int_equal(dlmd_unreach_limit_ms(0, 30000, 36000), 0);
	/* the default 20 s above a short token */
	assert_int_equal(dlmd_unreach_limit_ms(20, 1000, 1200), 20000);
	assert_int_equal(dlmd_unreach_limit_ms(20, 3000, 0), 20000);
	/* cloud guides' token 30 s: 20 s would remove a node corosync keeps */
	assert_int_equal(dlmd_unreach_limit_ms(20, 30000, 36000), 66000);
	/* consensus unknown: corosync's default 1.2 x token */
	assert_int_equal(dlmd_unreach_limit_ms(3, 20000, 0), 44000);
	assert_int_equal(dlmd_unreach_limit_ms(86400, UINT32_MAX, UINT32_MAX),
			 (uint64_t)UINT32_MAX * 2);
}

/* The tie-breaker as votequorum picks it: auto_tie_breaker off, or no
 * auto_tie_breaker_node, is the lowest id; "highest"; a list counts its
 * first configured id (ids not configured, 0 and junk skipped or ending
 * it); nothing configured, none. */
static void test_tiebreak_pick(void **state)
{
	const uint32_t ids[] = { 3, 1, 4, 2 };

	assert_int_equal(dlmd_tiebreak_pick(ids, 4, false, "highest"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, NULL), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "lowest"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "highest"), 4);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "3"), 3);
	/* votequorum's list: numbers while they are not 0 (strtol, so
	 * whitespace between them; anything else ends it) */
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "9 0 2 3"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "9 2 3"), 2);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, " 5 3"), 3);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "3,2"), 3);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "9,2"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "-1 2"), 2);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "9"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, "x 3"), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 4, true, ""), 1);
	assert_int_equal(dlmd_tiebreak_pick(ids, 0, true, "highest"), 0);
	assert_int_equal(dlmd_tiebreak_pick(NULL, 0, false, NULL), 0);
}

/* What votequorum accepts as auto_tie_breaker_node: "lowest",
 * "highest", or a string that starts with a number other than 0 (a
 * list); anything else turns its auto_tie_breaker off. */
static void test_tiebreak_valid(void **state)
{
	assert_true(dlmd_tiebreak_valid("lowest"));
	assert_true(dlmd_tiebreak_valid("highest"));
	assert_true(dlmd_tiebreak_valid("2 3"));
	assert_true(dlmd_tiebreak_valid(" 2"));
	assert_true(dlmd_tiebreak_valid("3,2"));
	assert_true(dlmd_tiebreak_valid("-1"));
	assert_false(dlmd_tiebreak_valid(""));
	assert_false(dlmd_tiebreak_valid("Lowest"));
	assert_false(dlmd_tiebreak_valid("lowest "));
	assert_false(dlmd_tiebreak_valid("0 2"));
	assert_false(dlmd_tiebreak_valid("x 3"));
}

/* A strict majority wins; an even half only with the tie-breaker; no
 * configured nodes, no majority.  Two disjoint halves never both win,
 * whichever tie-breaker both count with. */
static void test_majority_side(void **state)
{
	const uint32_t a[] = { 1, 2 }, b[] = { 3, 4 }, three[] = { 1, 2, 3 };

	assert_true(dlmd_majority_side(4, 1, three, 3));
	assert_true(dlmd_majority_side(4, 1, a, 2));
	assert_false(dlmd_majority_side(4, 1, b, 2));
	assert_false(dlmd_majority_side(4, 3, a, 2));
	assert_true(dlmd_majority_side(4, 3, b, 2));
	assert_false(dlmd_majority_side(4, 0, a, 2));
	assert_false(dlmd_majority_side(0, 1, a, 2));
	assert_false(dlmd_majority_side(5, 1, a, 2));
	for (uint32_t tb = 0; tb <= 5; tb++)
		assert_false(dlmd_majority_side(4, tb, a, 2) &&
			     dlmd_majority_side(4, tb, b, 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_start),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_leave),
		cmocka_unit_test(test_death_during_change),
		cmocka_unit_test(test_stateful_merge),
		cmocka_unit_test(test_exhausted),
		cmocka_unit_test(test_order_free),
		cmocka_unit_test(test_restart_delay),
		cmocka_unit_test(test_unreach_limit),
		cmocka_unit_test(test_tiebreak_pick),
		cmocka_unit_test(test_tiebreak_valid),
		cmocka_unit_test(test_majority_side),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
