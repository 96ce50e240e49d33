/*
 * tests/test-core-remaster.c - unit tests of remastering (core/remaster.c,
 * issue 18): a resource used only by another node than its master moves
 * there with its locks, LVB and token clock; others find it there; it does
 * not move again before remaster_ticks ticks; a lock of a third node or
 * of the master's own client keeps it in place; off when the knob is 0.
 * The harness: tests/test-core.h.
 */

#include "tests/test-core.h"

#define TICKS	50

/* Node 2 converts its lock b on "r" 'rounds' times up to EX and down to
 * NL writing the LVB (v: the last value); *tok: the token of its last EX
 * grant. */
static void convert_rounds(struct cluster *c, uint32_t b, int rounds,
			   char *v, uint64_t *tok)
{
	int i;

	for (i = 0; i < rounds; i++) {
		assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, DLM_LKF_VALBLK,
					 NULL), 0);
		drain(c);
		assert_status(c, 2, b, 0);
		*tok = comp_of(c, 2, b)->a.token;
		snprintf(v, DLM_LVB_LEN, "write %d", i);
		assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_NL, DLM_LKF_VALBLK,
					 v), 0);
		drain(c);
		assert_status(c, 2, b, 0);
	}
}

/* Node 1 masters "r" (it locked it first, then let go). */
static void master_at_1(struct cluster *c)
{
	uint32_t a = lock_on(c, 1, 1, "r", DLM_LOCK_EX, 0, 0, NULL);

	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
}

/* The fixture most tests start from: three engines with remaster_ticks
 * TICKS and the re-point protocol on ('shared' 1) or off, node 1 the
 * master of "r" (master_at_1). */
static struct cluster *r_at_1(uint32_t shared)
{
	struct cluster *c;

	cluster_remaster_ticks = TICKS;
	cluster_remaster_shared = shared;
	c = cluster_new(3, 3600000);
	master_at_1(c);
	return c;
}

/* A lock of 'owner' at 'node' on "r" in 'mode' ('flags'), granted. */
static uint32_t granted_on_r(struct cluster *c, int node, uint64_t owner,
			     int mode, uint32_t flags)
{
	uint32_t lk = lock_on(c, node, owner, "r", mode, flags, 0, NULL);

	drain(c);
	assert_status(c, node, lk, 0);
	return lk;
}

/* Node 2's lock on "r", NL with an LVB. */
static uint32_t nl_lock_2(struct cluster *c)
{
	return granted_on_r(c, 2, 2, DLM_LOCK_NL, DLM_LKF_VALBLK);
}

/* Node 1 masters "r"; node 2 locks it and converts it 'rounds' times
 * (convert_rounds).  Returns node 2's lock. */
static uint32_t use_from_2(struct cluster *c, int rounds, char *v,
			   uint64_t *tok)
{
	uint32_t b;

	master_at_1(c);
	b = nl_lock_2(c);
	convert_rounds(c, b, rounds, v, tok);
	return b;
}

/* The start of a test: three engines with remaster_ticks 'ticks', and
 * node 2 using "r" mastered at node 1 (use_from_2, 40 rounds). */
static struct cluster *start_test(uint32_t ticks, char *v, uint64_t *tok,
				  uint32_t *b)
{
	struct cluster *c;

	cluster_remaster_ticks = ticks;
	c = cluster_new(3, 3600000);
	*b = use_from_2(c, 40, v, tok);
	return c;
}

/* The end of a test: the last lock goes, the cluster with it. */
static void end_test(struct cluster *c, int node, uint64_t owner, uint32_t lk)
{
	assert_int_equal(unlock(c, node, owner, lk, 0, NULL), 0);
	drain(c);
	cluster_free(c);
	cluster_remaster_ticks = 0;
}

/* 40 rounds (80 operations: a whole window of 32 after the one node 1
 * opened, all node 2's):
 * "r" moves to node 2 with its value and token clock; node 3 is sent
 * there (by the directory or the old master) and conflicts are judged
 * there. */
static void test_moves_to_user(void **state)
{
	char v[DLM_LVB_LEN] = "", w[DLM_LVB_LEN];
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b, d;

	(void)state;
	c = start_test(TICKS, v, &tok, &b);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_int_equal(c->nlog_warn, 0);
	/* node 3 reads the value node 2 wrote last, at node 2 */
	d = lock_on(c, 3, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 3, d, 0);
	memset(w, 0, sizeof(w));
	memcpy(w, v, strlen(v) + 1);
	assert_memory_equal(comp_of(c, 3, d)->lvb, w, DLM_LVB_LEN);
	assert_dump_has(c, 3, "resource \"r\" master 2");
	/* node 2's EX now waits for node 3's PR, at node 2 */
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(last_bast_mode(c, 3, d), DLM_LOCK_EX);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	/* fencing tokens keep rising across the move */
	assert_true(comp_of(c, 2, b)->a.token > tok);
	end_test(c, 2, 2, b);
}

/* Hysteresis: once on node 2, "r" stays there for TICKS ticks however
 * much node 3 alone uses it, and moves to node 3 after them. */
static void test_no_bounce(void **state)
{
	char v[DLM_LVB_LEN];
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b, d;
	int i, k;

	(void)state;
	c = start_test(TICKS, v, &tok, &b);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	d = lock_on(c, 3, 3, "r", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	for (k = 0; k < 2; k++) {
		/* 80 operations: two whole windows of node 3's */
		for (i = 0; i < 80; i++) {
			assert_int_equal(convert(c, 3, 3, d, i & 1 ? DLM_LOCK_NL :
						 DLM_LOCK_PR, 0, NULL), 0);
			drain(c);
			assert_status(c, 3, d, 0);
		}
		if (k == 0) {
			/* too soon: it stays */
			assert_dump_has(c, 3, "resource \"r\" master 2");
			for (i = 1; i <= 3; i++)
				dlm_core_tick(c->core[i], 0);
			for (i = 0; i < TICKS; i++) {
				int n;

				for (n = 1; n <= 3; n++)
					dlm_core_tick(c->core[n], (uint64_t)i + 1);
			}
		}
	}
	assert_dump_has(c, 3, "resource \"r\" master 3");
	assert_int_equal(c->nlog_warn, 0);
	end_test(c, 3, 3, d);
}

/* Another node's lock keeps "r" where it is: node 'holder' (3, a third
 * node, or 1, the master's own client) holds it NL while node 2 makes
 * every operation of 80 (whole windows of node 2's), and "r" stays at
 * node 1 (Movable, core/remaster.c: every lock must be the destination's,
 * as this version re-points no other process copy); the holder still
 * holds its lock there, and converts it there.  Once it lets go, node 2's
 * next windows move "r". */
static void keeps_while_held(int holder)
{
	char v[DLM_LVB_LEN];
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b, d;

	c = r_at_1(0);
	d = granted_on_r(c, holder, 3, DLM_LOCK_NL, 0);
	b = nl_lock_2(c);
	convert_rounds(c, b, 40, v, &tok);
	assert_dump_has(c, 1, "resource \"r\" master 1");
	assert_dump_has(c, 2, "resource \"r\" master 1");
	assert_dump_has(c, holder, "resource \"r\" master 1");
	assert_int_equal(convert(c, holder, 3, d, DLM_LOCK_PR, 0, NULL), 0);
	drain(c);
	assert_status(c, holder, d, 0);
	assert_int_equal(unlock(c, holder, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, holder, d, -DLM_EUNLOCK);
	convert_rounds(c, b, 40, v, &tok);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_int_equal(c->nlog_warn, 0);
	end_test(c, 2, 2, b);
}

static void test_third_node_keeps(void **state)
{
	(void)state;
	keeps_while_held(3);
}

static void test_master_client_keeps(void **state)
{
	(void)state;
	keeps_while_held(1);
}

/* Node 2 converts b to EX while 'holder' holds d on "r", which moved to
 * node 2 with d: node 2 keeps the EX waiting and basts the holder; the
 * holder's unlock completes there and node 2's EX is granted.  The end
 * of the tests below. */
static void ex_waits_for(struct cluster *c, int holder, uint32_t d, uint32_t b)
{
	int n = count_asts(c, 2, b, DLM_AST_COMP);

	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), n);
	assert_int_equal(last_bast_mode(c, holder, d), DLM_LOCK_EX);
	assert_int_equal(unlock(c, holder, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, holder, d, -DLM_EUNLOCK);
	assert_status(c, 2, b, 0);
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

/* The re-point protocol (remaster_shared, core/remaster.c "Moving a
 * resource that other nodes lock too"): node 'holder' (3, a third node,
 * or 1, the master's own client) holds "r" NL while node 2 makes every
 * operation of 80, and "r" moves to node 2 all the same, the holder's
 * lock with it: re-pointed at node 2, which judges the holder's later
 * conversion against node 2's own lock (a blocking AST, a grant only
 * after the holder lets go) and takes its unlock. */
static void moves_while_held(int holder)
{
	char v[DLM_LVB_LEN];
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b, d;

	c = r_at_1(1);
	d = granted_on_r(c, holder, 3, DLM_LOCK_NL, 0);
	b = nl_lock_2(c);
	convert_rounds(c, b, 40, v, &tok);
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, holder, "resource \"r\" master 2");
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	/* the holder's conversion reaches node 2 and is granted there */
	assert_int_equal(convert(c, holder, 3, d, DLM_LOCK_PR, 0, NULL), 0);
	drain(c);
	assert_status(c, holder, d, 0);
	/* node 2's EX waits for it, at node 2, which basts the holder; its
	 * unlock completes at node 2, which then grants node 2's EX */
	ex_waits_for(c, holder, d, b);
}

static void test_third_node_moves(void **state)
{
	(void)state;
	moves_while_held(3);
}

static void test_master_client_moves(void **state)
{
	(void)state;
	moves_while_held(1);
}

/* The re-point protocol with an orphan (core/remaster.c, movable(): the
 * rule without the protocol keeps a resource with a persistent or
 * orphaned lock where it is; with it, any lock moves).  Node 'holder' (3,
 * a third node, or 1, the old master) holds "r" NL, PERSISTENT, and its
 * owner 3 goes: the lock is an orphan, on the holder's node only (its
 * master copy does not know), and "r" moves to node 2 with it all the
 * same, the orphan re-pointed like any lock.  Then, with 'adopt', owner
 * 4 adopts it at the holder and converts it to PR at node 2, where node
 * 2's EX waits for it and owner 4 is told (a blocking AST) until it lets
 * go; without, the holder's orphans of owner 3 are purged, the unlock
 * done at node 2.  Either way the holder's node keeps no orphan and
 * node 2's EX is granted. */
static void orphan_moves(int holder, int adopt)
{
	char v[DLM_LVB_LEN];
	struct dlm_ls_stats st;
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b, d, got = 0;
	int comps;

	c = r_at_1(1);
	d = granted_on_r(c, holder, 3, DLM_LOCK_NL, DLM_LKF_PERSISTENT);
	assert_int_equal(dlm_core_purge_owner(c->ls[holder], 3), 1);
	assert_dump_has(c, holder, "orphan");
	b = nl_lock_2(c);
	convert_rounds(c, b, 40, v, &tok);
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, holder, "resource \"r\" master 2");
	assert_dump_has(c, holder, "orphan");
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	if (adopt) {
		assert_int_equal(dlm_core_lock(c->ls[holder],
			&(struct dlm_lock_req){ .mode = DLM_LOCK_NL,
			.name = "r", .namelen = 1, .owner = 4, .astarg = 4,
			.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT,
			.want_bast = 1 }, &got), 0);
		assert_int_equal(got, d);
		assert_dump_lacks(c, holder, "orphan");
		assert_int_equal(convert(c, holder, 4, d, DLM_LOCK_PR, 0,
					 NULL), 0);
		drain(c);
		assert_status(c, holder, d, 0);
		comps = count_asts(c, 2, b, DLM_AST_COMP);
		assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
		drain(c);
		assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), comps);
		assert_int_equal(last_bast_mode(c, holder, d), DLM_LOCK_EX);
		assert_int_equal(unlock(c, holder, 4, d, 0, NULL), 0);
		drain(c);
		assert_status(c, holder, d, -DLM_EUNLOCK);
	} else {
		assert_int_equal(dlm_core_purge_orphans(c->ls[holder], 0, 3),
				 1);
		drain(c);
		/* gone from the new master's queues too: b alone is left */
		dlm_core_ls_stats(c->ls[2], &st);
		assert_int_equal(st.ls_locks, 1);
		dlm_core_ls_stats(c->ls[holder], &st);
		assert_int_equal(st.ls_locks, 0);
		assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
		drain(c);
	}
	assert_status(c, 2, b, 0);
	dlm_core_ls_stats(c->ls[holder], &st);
	assert_int_equal(st.ls_orphans, 0);
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

static void test_orphan_moves_adopted(void **state)
{
	(void)state;
	orphan_moves(3, 1);
	orphan_moves(1, 1);
}

static void test_orphan_moves_purged(void **state)
{
	(void)state;
	orphan_moves(3, 0);
	orphan_moves(1, 0);
}

/* Node 2's conversions on "r" (mastered at 1, node 3 holding it NL) one
 * at a time; with 'cross' set, node 3's conversion to PR is sent right
 * behind the one after which "r" moves (the 'cross'th), so that it
 * reaches node 1 after the move.  Returns the conversion after which
 * "r" moved (0: it did not). */
static int cross_run(struct cluster *c, uint32_t b, uint32_t d, int cross)
{
	int i;

	for (i = 1; i <= 80; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_PR :
					 DLM_LOCK_NL, 0, NULL), 0);
		if (i == cross)
			assert_int_equal(convert(c, 3, 3, d, DLM_LOCK_PR, 0,
						 NULL), 0);
		drain(c);
		assert_status(c, 2, b, 0);
		if (!cross) {
			char *text = dump(c, 1);
			int moved = strstr(text, "resource \"r\" master 2") != NULL;

			free(text);
			if (moved)
				return i;
		}
	}
	return 0;
}

static struct cluster *cross_cluster(uint32_t *b, uint32_t *d)
{
	struct cluster *c;

	c = r_at_1(1);
	*d = granted_on_r(c, 3, 3, DLM_LOCK_NL, 0);
	*b = nl_lock_2(c);
	return c;
}

/* Where the move falls: the conversion of node 2's after which "r"
 * moves, in a first run of a cluster that 'make' starts (without any
 * crossing conversion: the engines are deterministic). */
static int move_falls(struct cluster *(*make)(uint32_t *b, uint32_t *d))
{
	uint32_t b, d;
	struct cluster *c = make(&b, &d);
	int at = cross_run(c, b, d, 0);

	assert_true(at > 0);
	cluster_free(c);
	return at;
}

/* A conversion of node 3's that crosses the move (it reaches the old
 * master after it: refused -EBADR, parked until the REPOINT, redone at
 * node 2) is done exactly once: one completion, granted, and node 2
 * judges it (node 2's EX waits for it). */
static void test_crossing_convert(void **state)
{
	struct cluster *c;
	uint32_t b, d;
	int at;

	(void)state;
	at = move_falls(cross_cluster);

	c = cross_cluster(&b, &d);
	assert_int_equal(count_asts(c, 3, d, DLM_AST_COMP), 1);
	assert_int_equal(cross_run(c, b, d, at), 0);
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_int_equal(count_asts(c, 3, d, DLM_AST_COMP), 2);
	assert_status(c, 3, d, 0);
	ex_waits_for(c, 3, d, b);
}

/* cross_cluster, node 3's lock converted to PR. */
static struct cluster *pr_cluster(uint32_t *b, uint32_t *d)
{
	struct cluster *c = cross_cluster(b, d);

	assert_int_equal(convert(c, 3, 3, *d, DLM_LOCK_PR, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, *d, 0);
	return c;
}

/* pr_cluster, up to node 2's conversion after which "r" moves, which
 * is sent but not delivered yet (where it falls: a first run, the
 * engines being deterministic). */
static struct cluster *at_the_move(uint32_t *b, uint32_t *d)
{
	int at = move_falls(pr_cluster), i;
	struct cluster *c = pr_cluster(b, d);

	for (i = 1; i <= at; i++) {
		assert_int_equal(convert(c, 2, 2, *b, i & 1 ? DLM_LOCK_PR :
					 DLM_LOCK_NL, 0, NULL), 0);
		if (i < at)
			drain(c);
	}
	return c;
}

/* Node 2's REPOINT of node 3's lock (PR) reaches node 3 before node 1's
 * MOVED (other links), and so does a blocking AST of node 2's about it:
 * node 3 holds both until MOVED, then takes them in order (the lock is
 * re-pointed, the blocking AST delivered, its unlock judged at node 2). */
static void test_repoint_before_moved(void **state)
{
	struct cluster *c;
	uint32_t b, d;
	int n;

	(void)state;
	/* node 1 takes the conversion and moves "r" (MOVED to node 3 waits
	 * on its link), node 2 installs and sends the REPOINT, which node 3
	 * gets first */
	c = at_the_move(&b, &d);
	deliver_only(c, 2, 1);
	deliver_only(c, 1, 2);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	deliver_only(c, 2, 3);
	assert_dump_has(c, 3, "resource \"r\" master 1");
	/* node 2's EX conflicts with node 3's PR: a blocking AST, held */
	n = count_asts(c, 2, b, DLM_AST_COMP);
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	deliver_only(c, 2, 3);
	assert_int_equal(last_bast_mode(c, 3, d), DLM_LOCK_IV);
	drain(c);
	assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_int_equal(last_bast_mode(c, 3, d), DLM_LOCK_EX);
	assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), n);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, d, -DLM_EUNLOCK);
	assert_status(c, 2, b, 0);
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

/* A refused request is not re-sent without bound while a move's MIGRATE
 * is delayed (lock.c request_bounced): node 1 moves "r" to node 2 and
 * its link to node 2 holds everything (the MIGRATE with it); node 3, told
 * by MOVED that "r" is at node 2 (its PR awaits the re-point), asks for a
 * new lock there.  Node 2, not installed, refuses; only 3<->2 is
 * delivered for 1,000 rounds and no tick comes: before the bound node 3
 * sent a REQUEST each round (1,001 seen), now 5.  Once the
 * held messages arrive, node 2's REPOINT is the news that sends the
 * request again, and it is granted at node 2. */
static void test_bounce_bounded(void **state)
{
	struct cluster *c;
	unsigned long before, n;
	uint32_t b, d, e;
	int i;

	(void)state;
	c = at_the_move(&b, &d);
	deliver_only(c, 2, 1);		/* node 1 moves "r" */
	deliver_only(c, 1, 3);		/* MOVED: node 3 sends to node 2 */
	assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 1");
	before = c->sent[DLM_MSG_REQUEST];
	e = lock_on(c, 3, 5, "r", DLM_LOCK_NL, 0, 0, NULL);
	for (i = 0; i < 1000; i++) {
		deliver_only(c, 3, 2);
		deliver_only(c, 2, 3);
	}
	n = c->sent[DLM_MSG_REQUEST] - before;
	assert_true(n >= 2);		/* it did bounce */
	assert_true(n <= 8);
	assert_no_comp(c, 3, e);
	assert_dump_has(c, 2, "resource \"r\" master 1");
	drain(c);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_status(c, 3, e, 0);
	assert_dump_lacks(c, 3, "resource \"r\" master 1");
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 5, e, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, e, -DLM_EUNLOCK);
	ex_waits_for(c, 3, d, b);
}

/* A recovery in the middle of a move: node 1 has moved "r" (records,
 * MIGRATE to node 2, MOVED to node 3, all still on the wire) when every
 * node stops; with 'kill_m', node 1 dies with it.  Without a death node 2
 * installs the held MIGRATE at the directory step and node 3, its lock
 * still awaiting the re-point, resends it there, where it matches the
 * master copy node 2 made from its record (no second copy); with node 1
 * dead the move is void and both locks go to a new master.  Either way
 * node 3's lock conflicts with node 2's EX afterwards, at one master. */
static void recovery_mid_move(int kill_m)
{
	struct cluster *c;
	uint32_t b, d;

	c = at_the_move(&b, &d);
	deliver_only(c, 2, 1);		/* node 1 moves "r" */
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 1");
	assert_dump_has(c, 3, "resource \"r\" master 1");
	if (kill_m)
		c->dead[1] = 1;
	recover_all(c, 1);
	assert_status(c, 2, b, 0);
	assert_dump_lacks(c, 2, "resource \"r\" master 1");
	assert_dump_lacks(c, 3, "resource \"r\" master 1");
	if (!kill_m)
		assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_verified(c);
	ex_waits_for(c, 3, d, b);
}

static void test_recovery_mid_move(void **state)
{
	(void)state;
	recovery_mid_move(0);
}

static void test_old_master_dies_mid_move(void **state)
{
	(void)state;
	recovery_mid_move(1);
}

/* A third node dies in the middle of a move (dlm-sim seed 2732): node 3
 * holds "r" PR and node 2's conversion to EX, the one after which "r"
 * moves, waits for it at node 1; node 3 dies before node 2 installs.  At
 * the directory step node 2 installs the held MIGRATE, with no master
 * copy for node 3's record, and the EX, which fits now, is granted by the
 * end of the recovery (before the fix nothing granted it). */
static void test_third_node_dies_mid_move(void **state)
{
	int at = move_falls(pr_cluster), i, n;
	struct cluster *c;
	uint32_t b, d;

	(void)state;
	c = pr_cluster(&b, &d);
	for (i = 1; i < at; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_PR :
					 DLM_LOCK_NL, 0, NULL), 0);
		drain(c);
	}
	n = count_asts(c, 2, b, DLM_AST_COMP);
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	deliver_only(c, 2, 1);		/* queued behind the PR; "r" moves */
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 1");
	c->dead[3] = 1;
	recover_all(c, 1);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), n + 1);
	assert_status(c, 2, b, 0);
	assert_verified(c);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

/* cross_cluster, node 3's lock converted to PW with a value. */
static struct cluster *pw_cluster(uint32_t *b, uint32_t *d)
{
	struct cluster *c = cross_cluster(b, d);

	assert_int_equal(convert(c, 3, 3, *d, DLM_LOCK_PW, DLM_LKF_VALBLK,
				 NULL), 0);
	drain(c);
	assert_status(c, 3, *d, 0);
	return c;
}

/* pw_cluster, node 2 converting CR and NL in turn, and to 'last' (with
 * VALBLK) at its 'at'th conversion, sent but not delivered.  With 'at'
 * 0, until "r" moves: returns the conversion after which it did. */
static int pw_run(struct cluster *c, uint32_t b, int at, int last)
{
	int i;

	for (i = 1; i <= 80; i++) {
		char *text;
		int moved;

		if (i == at) {
			assert_int_equal(convert(c, 2, 2, b, last,
						 DLM_LKF_VALBLK, NULL), 0);
			return i;
		}
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_CR :
					 DLM_LOCK_NL, 0, NULL), 0);
		drain(c);
		assert_status(c, 2, b, 0);
		text = dump(c, 1);
		moved = strstr(text, "resource \"r\" master 2") != NULL;
		free(text);
		if (moved && !at)
			return i;
	}
	return 0;
}

/* As test_third_node_dies_mid_move, node 3 holding PW (a writer, its
 * value maybe newer than the one moved): node 2's EX, granted at the end
 * of the recovery, is told the value is not valid, as after a purge of
 * node 3's lock. */
static void test_third_writer_dies_mid_move(void **state)
{
	struct cluster *c;
	uint32_t b, d;
	int at;

	(void)state;
	c = pw_cluster(&b, &d);
	at = pw_run(c, b, 0, 0);
	assert_true(at > 0);
	cluster_free(c);

	c = pw_cluster(&b, &d);
	assert_int_equal(pw_run(c, b, at, DLM_LOCK_EX), at);
	deliver_only(c, 2, 1);		/* queued behind the PW; "r" moves */
	assert_dump_has(c, 1, "resource \"r\" master 2");
	c->dead[3] = 1;
	recover_all(c, 1);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_status(c, 2, b, 0);
	assert_true(comp_of(c, 2, b)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_verified(c);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

/* Node 'node' (its owner 'node') locks "r" NL, converts it to CR and
 * back: 3 operations at the master.  Returns the lock. */
static uint32_t nl_cr_nl(struct cluster *c, int node)
{
	uint32_t lk = lock_on(c, node, (uint64_t)node, "r", DLM_LOCK_NL, 0, 0,
			      NULL);
	int j;

	drain(c);
	for (j = 0; j < 2; j++) {
		assert_int_equal(convert(c, node, (uint64_t)node, lk,
					 j ? DLM_LOCK_NL : DLM_LOCK_CR, 0,
					 NULL), 0);
		drain(c);
	}
	return lk;
}

/* The new master has no copy of "r" when a recovery starts mid-move:
 * node 2 makes 3 of every 4 operations on "r" but lets go of its lock
 * each time, and the window closes on node 3's conversion (node 3 holds
 * "r" throughout), which moves "r" to node 2.  Node 2 installs the held
 * MIGRATE at the directory step on a resource it creates then: it must
 * register it and take node 3's resent lock, so that "r" has one master
 * (before the fix node 3 became master too, and node 2 granted itself
 * an EX over node 3's CR). */
static void test_new_master_without_copy(void **state)
{
	struct cluster *c;
	uint32_t d, e;
	int k, moved = 0;

	(void)state;
	c = r_at_1(1);
	/* 4 operations, then 4 per round: the second window is rounds 8-15 */
	d = nl_cr_nl(c, 3);
	for (k = 0; k < 40 && !moved; k++) {
		char *text;

		e = nl_cr_nl(c, 2);
		assert_dump_lacks(c, 1, "resource \"r\" master 2");
		assert_int_equal(unlock(c, 2, 2, e, 0, NULL), 0);
		drain(c);
		assert_int_equal(convert(c, 3, 3, d, k & 1 ? DLM_LOCK_NL :
					 DLM_LOCK_CR, 0, NULL), 0);
		deliver_only(c, 3, 1);	/* the MIGRATE stays on the wire */
		text = dump(c, 1);
		moved = strstr(text, "resource \"r\" master 2") != NULL;
		free(text);
	}
	assert_true(moved);
	recover_all(c, 1);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_verified(c);
	/* node 2's EX waits for node 3's CR, at node 2 */
	e = lock_on(c, 2, 2, "r", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(count_asts(c, 2, e, DLM_AST_COMP), 0);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, e, 0);
	end_test(c, 2, 2, e);
	cluster_remaster_shared = 0;
}

/* Node 3 unlocks its PR on "r" as node 1 moves it: the unlock is still on
 * its way to node 1 when node 2's REPOINT of the lock reaches node 3
 * ahead of node 1's MOVED (held), and node 1 dies with the unlock and the
 * MOVED undelivered.  The REPOINT says node 2 made a copy of the lock
 * from node 1's record, so node 1 had not done the unlock before the
 * move: recovery must not settle it as done at node 3 and leave node 2
 * that copy, but redo it at node 2 (after the resend matched the copy).
 * Node 2's EX is granted once the unlock completes. */
static void test_unlock_to_dead_old_master(void **state)
{
	struct cluster *c;
	uint32_t b, d;

	(void)state;
	c = at_the_move(&b, &d);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	deliver_only(c, 2, 1);		/* node 1 moves "r" */
	deliver_only(c, 1, 2);		/* node 2 installs: REPOINT to 3 */
	assert_dump_has(c, 2, "resource \"r\" master 2");
	deliver_only(c, 2, 3);		/* held: no MOVED yet */
	assert_dump_has(c, 3, "resource \"r\" master 1");
	c->dead[1] = 1;
	recover_all(c, 1);
	drain(c);
	assert_status(c, 3, d, -DLM_EUNLOCK);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_lacks(c, 2, " node 3 remid ");
	assert_verified(c);
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	end_test(c, 2, 2, b);
	cluster_remaster_shared = 0;
}

/* The old master is not the directory node (issue 18): node 1 masters
 * 'name', which node 3 directs, and moves it to node 2, whose DIR_MOVE
 * stays on its way to node 3.  Node 1's unused copy is tossed and node
 * 1 locks the name again: its LOOKUP reaches node 3 before the DIR_MOVE,
 * and the record there still names node 1.  Node 1 must not become a
 * second master (it did: its EX was granted beside node 2's): the lookup
 * waits for the DIR_MOVE, is answered "node 2", and node 1's EX waits
 * at node 2 for node 2's EX.  Without the re-point protocol and with
 * it (remaster_shared); and with a recovery while the lookup waits, which
 * forgets it: node 1 looks up again at finish, in the rebuilt directory
 * (node 2 registered the name). */
static void old_master_looks_up(uint32_t shared, int recover, int keep_held)
{
	char name[16], held[48], why[256], *text;
	struct cluster *c;
	uint32_t a, b;
	int i, moved = 0;

	cluster_remaster_ticks = TICKS;
	cluster_remaster_shared = shared;
	c = cluster_new(3, 100);
	name_directed_by("d", 3, 3, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	b = lock_on(c, 2, 2, name, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	for (i = 1; i <= 80 && !moved; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_PR :
					 DLM_LOCK_NL, 0, NULL), 0);
		deliver_only(c, 2, 1);
		text = dump(c, 1);
		moved = strstr(text, "master 2") != NULL;
		free(text);
		deliver_only(c, 1, 2);	/* the reply; at the move, MIGRATE */
	}
	assert_true(moved);
	assert_dump_has(c, 2, "master 2");
	/* node 2's DIR_MOVE to node 3 stays queued; node 1 tosses its copy */
	dlm_core_tick(c->core[1], 1000);
	assert_dump_lacks(c, 1, name);
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	assert_status(c, 2, b, 0);
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	deliver_only(c, 1, 3);		/* the LOOKUP, before the DIR_MOVE */
	deliver_only(c, 3, 1);
	assert_dump_lacks(c, 1, "master 1");	/* a second master */
	assert_no_comp(c, 1, a);
	/* the operator sees the held lookup, and the verifier checks it */
	snprintf(held, sizeof(held), "dirheld \"%s\" node 1", name);
	assert_dump_has(c, 3, held);
	assert_verified(c);
	if (keep_held) {
		/* broken: the DIR_MOVE leaves the lookup held, its record
		 * naming node 2 now: node 1 would wait for ever */
		dlm_core_set_fault(c->core[3], DLM_FAULT_REMASTER_DIR_KEEP_HELD);
		drain(c);
		assert_int_equal(dlm_core_ls_verify(c->ls[3], why, sizeof(why)),
				 -EUCLEAN);
		assert_non_null(strstr(why, "held lookup from node 1 whose "
				       "record names another master"));
		cluster_free(c);
		cluster_remaster_shared = 0;
		return;
	}
	if (recover)
		recover_all(c, 1);
	drain(c);			/* the DIR_MOVE, and what follows */
	assert_dump_lacks(c, 3, "dirheld");
	assert_no_comp(c, 1, a);
	assert_dump_has(c, 1, "master 2");
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	drain(c);
	assert_status(c, 1, a, 0);
	/* (with the recovery, the DIR_MOVE is dropped as stale: a warning) */
	assert_int_equal(c->nlog_warn, recover);
	assert_verified(c);
	end_test(c, 1, 1, a);
	cluster_remaster_shared = 0;
}

static void test_old_master_looks_up(void **state)
{
	(void)state;
	old_master_looks_up(0, 0, 0);
}

static void test_old_master_looks_up_shared(void **state)
{
	(void)state;
	old_master_looks_up(1, 0, 0);
}

static void test_old_master_looks_up_recovery(void **state)
{
	(void)state;
	old_master_looks_up(1, 1, 0);
}

/* dlm_core_ls_verify catches a held lookup that the DIR_MOVE did not
 * answer (the broken variant remaster-dir-keep-held). */
static void test_held_lookup_verified(void **state)
{
	(void)state;
	old_master_looks_up(0, 0, 1);
}

/* A conversion deadlock on "r" at node 1 demotes a lock of node 2's to NL
 * (a: PW to EX with CONVDEADLK and QUECVT, waiting for e's CR; b: NL to
 * PR with HEADQUE, ahead of a and blocked by its PW, while a queues
 * behind b), grants b and tells a's
 * owner nothing yet, in the step whose operation may close the window
 * that moves "r" to node 2 ('fill' conversions of another lock of node
 * 2's before shift where it closes).  Node 2 would install a from its own
 * copy, still PW, beside b's PR, and grant a later without the demotion;
 * so "r" does not move while a demotion is untold (remaster.c movable),
 * and a's grant says DLM_SBF_DEMOTED wherever the window closes.  With
 * 'shared' (the re-point protocol) the same: the check once sat in the
 * wrong operand of movable()'s ?: and held only without the protocol
 * (dlm-sim seed 3284). */
static void demoted_at_move(int shared)
{
	int fill, i;

	/* node 1's first operation opens the first window (node 1's): the
	 * second one closes within these */
	for (fill = 24; fill < 72; fill++) {
		struct cluster *c = r_at_1((uint32_t)shared);
		uint32_t a, b, d, e;

		d = lock_on(c, 2, 4, "r", DLM_LOCK_NL, 0, 0, NULL);
		drain(c);
		for (i = 0; i < fill; i++) {
			assert_int_equal(convert(c, 2, 4, d, i & 1 ? DLM_LOCK_NL :
						 DLM_LOCK_CR, 0, NULL), 0);
			drain(c);
		}
		a = lock_on(c, 2, 2, "r", DLM_LOCK_PW, 0, 0, NULL);
		b = lock_on(c, 2, 3, "r", DLM_LOCK_NL, 0, 0, NULL);
		e = lock_on(c, 2, 5, "r", DLM_LOCK_CR, 0, 0, NULL);
		drain(c);
		assert_status(c, 2, a, 0);
		assert_status(c, 2, b, 0);
		assert_status(c, 2, e, 0);
		assert_int_equal(convert(c, 2, 2, a, DLM_LOCK_EX,
					 DLM_LKF_CONVDEADLK | DLM_LKF_QUECVT,
					 NULL), 0);
		drain(c);
		assert_int_equal(convert(c, 2, 3, b, DLM_LOCK_PR,
					 DLM_LKF_HEADQUE, NULL), 0);
		drain(c);
		assert_int_equal(count_asts(c, 2, a, DLM_AST_COMP), 1);
		assert_status(c, 2, b, 0);
		assert_int_equal(comp_of(c, 2, b)->a.grmode, DLM_LOCK_PR);
		assert_int_equal(unlock(c, 2, 3, b, 0, NULL), 0);
		assert_int_equal(unlock(c, 2, 5, e, 0, NULL), 0);
		assert_int_equal(unlock(c, 2, 4, d, 0, NULL), 0);
		drain(c);
		assert_status(c, 2, a, 0);
		if (comp_of(c, 2, a)->a.grmode != DLM_LOCK_EX)
			fail_msg("fill %d: a not granted EX:\n%s\n%s", fill,
				 dump(c, 1), dump(c, 2));
		if (!(comp_of(c, 2, a)->a.sbflags & DLM_SBF_DEMOTED))
			fail_msg("fill %d: a's grant does not say demoted", fill);
		assert_verified(c);
		assert_int_equal(unlock(c, 2, 2, a, 0, NULL), 0);
		drain(c);
		cluster_free(c);
	}
	cluster_remaster_ticks = 0;
	cluster_remaster_shared = 0;
}

static void test_demoted_at_move(void **state)
{
	(void)state;
	demoted_at_move(0);
}

static void test_demoted_at_move_shared(void **state)
{
	(void)state;
	demoted_at_move(1);
}

/* A lock of the master's own client, sent a bast there, moves away with
 * "r", is granted anew at the new master and comes back with "r": a
 * later conflicting request must bast it again (remaster.c forgets the
 * old master's record of basts sent, lkb_highbast; dlm-sim seed 893: it
 * was kept, and two EX conversions waited for ever behind a CR). */
static void test_bast_again_after_return(void **state)
{
	struct cluster *c;
	uint32_t b, d, e, f;
	int i, n;

	(void)state;
	c = r_at_1(1);
	d = granted_on_r(c, 1, 3, DLM_LOCK_CR, 0);
	/* node 3's NOQUEUE EX basts d at node 1, and fails */
	f = lock_on(c, 3, 3, "r", DLM_LOCK_EX,
		    DLM_LKF_NOQUEUE | DLM_LKF_NOQUEUEBAST, 0, NULL);
	drain(c);
	assert_status(c, 3, f, -EAGAIN);
	assert_int_equal(last_bast_mode(c, 1, d), DLM_LOCK_EX);
	/* node 2 makes every operation: "r" moves there, d with it */
	b = nl_lock_2(c);
	for (i = 0; i < 80; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_NL :
					 DLM_LOCK_PW, 0, NULL), 0);
		drain(c);
		assert_status(c, 2, b, 0);
	}
	assert_dump_has(c, 1, "resource \"r\" master 2");
	/* d is granted anew, at node 2 */
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_NL, 0, NULL), 0);
	drain(c);
	assert_status(c, 1, d, 0);
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_CR, 0, NULL), 0);
	drain(c);
	assert_status(c, 1, d, 0);
	for (n = 1; n <= 3; n++)
		dlm_core_tick(c->core[n], 0);
	for (i = 0; i < TICKS; i++)
		for (n = 1; n <= 3; n++)
			dlm_core_tick(c->core[n], (uint64_t)i + 1);
	/* node 1's other client makes every operation: "r" comes back */
	e = lock_on(c, 1, 1, "r", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, e, 0);
	for (i = 0; i < 80; i++) {
		assert_int_equal(convert(c, 1, 1, e, i & 1 ? DLM_LOCK_NL :
					 DLM_LOCK_PR, 0, NULL), 0);
		drain(c);
		assert_status(c, 1, e, 0);
	}
	assert_dump_has(c, 1, "resource \"r\" master 1");
	/* node 3's EX waits for d's CR: d is told */
	n = count_asts(c, 1, d, DLM_AST_BAST);
	f = lock_on(c, 3, 3, "r", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	if (count_asts(c, 1, d, DLM_AST_BAST) != n + 1)
		fail_msg("d (CR) got no bast for node 3's EX:\n%s", dump(c, 1));
	assert_int_equal(unlock(c, 1, 3, d, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, e, 0, NULL), 0);
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, f, 0);
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 3, f, 0, NULL), 0);
	drain(c);
	cluster_free(c);
	cluster_remaster_ticks = 0;
	cluster_remaster_shared = 0;
}

/* Whether node 2's engine refuses its allocations (fail_while). */
static int fail_on;

static int fail_while(void *arg)
{
	(void)arg;
	return fail_on;
}

/* Deliver the first queued message from 'from' to 'to' (none of what it
 * causes); the others stay queued in their order. */
static void deliver_first(struct cluster *c, uint32_t from, uint32_t to)
{
	size_t i, n = c->qtail - c->qhead;

	for (i = 0; i < n; i++) {
		struct qmsg *m = &c->q[(c->qhead + i) % MAXQ];
		struct qmsg one;
		size_t j;

		if (m->from != from || m->to != to)
			continue;
		one = *m;
		for (j = i; j + 1 < n; j++)
			c->q[(c->qhead + j) % MAXQ] = c->q[(c->qhead + j + 1) % MAXQ];
		c->qtail--;
		assert_int_equal(dlm_core_receive(c->core[to], from, one.buf,
						  one.len), 0);
		return;
	}
	fail_msg("no message from node %u to node %u", from, to);
}

/* Allocations node 2 makes in the directory step of its recovery, the
 * one it refuses (dir_fail_at: how many it lets through first; -1:
 * none refused, or it was). */
static int dir_fail_at = -1;

static int fail_in_dir_step(void *arg)
{
	const char *step = NULL;

	return dlm_core_ls_state(arg, NULL, &step) == DLM_LS_RECOVERING &&
	       step && !strcmp(step, "directory") && dir_fail_at >= 0 &&
	       dir_fail_at-- == 0;
}

/* Deliver the queued messages (and what they cause) in FIFO order, all
 * but those from 'from' to 'to', which stay queued in their order. */
static void drain_but(struct cluster *c, uint32_t from, uint32_t to)
{
	int guard = 100000;

	while (guard--) {
		size_t i, n = c->qtail - c->qhead;

		for (i = 0; i < n; i++) {
			struct qmsg *m = &c->q[(c->qhead + i) % MAXQ];

			if (m->from != from || m->to != to)
				break;
		}
		if (i == n)
			return;
		deliver_first(c, c->q[(c->qhead + i) % MAXQ].from,
			      c->q[(c->qhead + i) % MAXQ].to);
	}
	fail_msg("drain_but: no end");
}

static void settle(struct cluster *c, bool hold_1_to_2)
{
	if (hold_1_to_2)
		drain_but(c, 1, 2);
	else
		drain(c);
}

/* As test_new_master_without_copy's loop for 'name', mastered by node
 * 'm' (it locked it first), node 'h' holding it throughout: node 2 makes
 * most operations and lets go each time, until 'name' moves to node 2,
 * the MIGRATE left on the wire.  Nothing from node 1 to node 2 is
 * delivered meanwhile if 'hold'.  Returns node h's lock. */
static uint32_t moving_to_2(struct cluster *c, const char *name, int m,
			    int h, bool hold)
{
	char want[64];
	uint32_t d, e;
	int k, j, moved = 0;

	snprintf(want, sizeof(want), "resource \"%s\" master 2", name);
	e = lock_on(c, m, (uint64_t)m, name, DLM_LOCK_EX, 0, 0, NULL);
	settle(c, hold);
	assert_status(c, m, e, 0);
	assert_int_equal(unlock(c, m, (uint64_t)m, e, 0, NULL), 0);
	settle(c, hold);
	/* 4 operations, then 4 per round: a window closes on node h's */
	d = lock_on(c, h, (uint64_t)h, name, DLM_LOCK_NL, 0, 0, NULL);
	settle(c, hold);
	for (j = 0; j < 2; j++) {
		assert_int_equal(convert(c, h, (uint64_t)h, d, j ? DLM_LOCK_NL :
					 DLM_LOCK_CR, 0, NULL), 0);
		settle(c, hold);
	}
	for (k = 0; k < 40 && !moved; k++) {
		char *text;

		e = lock_on(c, 2, 2, name, DLM_LOCK_NL, 0, 0, NULL);
		settle(c, hold);
		snprintf(want, sizeof(want), "resource \"%s\" master 2", name);
		for (j = 0; j < 2; j++) {
			assert_int_equal(convert(c, 2, 2, e, j ? DLM_LOCK_NL :
						 DLM_LOCK_CR, 0, NULL), 0);
			settle(c, hold);
		}
		text = dump(c, m);
		assert_null(strstr(text, want));	/* not yet */
		free(text);
		assert_int_equal(unlock(c, 2, 2, e, 0, NULL), 0);
		settle(c, hold);
		assert_int_equal(convert(c, h, (uint64_t)h, d, k & 1 ?
					 DLM_LOCK_NL : DLM_LOCK_CR, 0, NULL),
				 0);
		deliver_only(c, (uint32_t)h, (uint32_t)m);
		text = dump(c, m);
		moved = strstr(text, want) != NULL;
		free(text);
	}
	assert_true(moved);
	return d;
}

/* Two resources move to node 2 as a recovery starts, their MIGRATEs
 * (from node 1 and node 3) held there, and node 2 has no copy of either
 * (it let go, and its unused copies were dropped: max_tossed 1, and the
 * one unused resource it keeps is one it masters), so the directory
 * step's installs make both, and each must be put on the steps' list:
 * one place was spare.  Node 2 refusing its 'fail_at'th allocation of
 * that step (-1: none): returns whether it did.  Either way both must
 * end with one master, node 2. */
static bool new_masters_without_copy(int fail_at)
{
	char r[16], s[16], t[16], want[64];
	uint32_t d1, d3, e;
	struct cluster *c;
	bool refused;
	int n;

	name_directed_by("r", 3, 1, r, sizeof(r));
	name_directed_by("s", 3, 3, s, sizeof(s));
	name_directed_by("t", 3, 2, t, sizeof(t));
	cluster_remaster_ticks = TICKS;
	cluster_remaster_shared = 1;
	cluster_max_tossed = 1;
	c = cluster_new(3, 3600000);
	d3 = moving_to_2(c, r, 1, 3, false);
	d1 = moving_to_2(c, s, 3, 1, true);
	/* node 2 masters t, unused: the one it keeps (local: nothing
	 * sent, nothing delivered, both MIGRATEs still on the wire;
	 * VALBLK: an rsb even with TEST_CORE_FOLD=1, not a lone lock) */
	e = lock_on(c, 2, 2, t, DLM_LOCK_NL, DLM_LKF_VALBLK, 0, NULL);
	assert_status(c, 2, e, 0);
	assert_int_equal(unlock(c, 2, 2, e, 0, NULL), 0);
	snprintf(want, sizeof(want), "resource \"%s\"", r);
	assert_dump_lacks(c, 2, want);
	snprintf(want, sizeof(want), "resource \"%s\"", s);
	assert_dump_lacks(c, 2, want);
	dir_fail_at = fail_at;
	dlm_core_set_alloc_hook(c->core[2], fail_in_dir_step, c->ls[2]);
	stop_all(c);
	start_all(c, 1);
	drain(c);
	dlm_core_set_alloc_hook(c->core[2], NULL, NULL);
	refused = fail_at >= 0 && dir_fail_at < 0;
	dir_fail_at = -1;
	if (c->failed_event[2] == 1)
		recover_all(c, 2);
	else
		finish_all(c, 1);
	for (n = 1; n <= 3; n++) {
		char *text = dump(c, n);
		const char *name = n == 1 ? s : r;	/* the holder's */

		if (n != 2) {
			snprintf(want, sizeof(want), "resource \"%s\" master 2",
				 name);
			if (!strstr(text, want))
				fail_msg("allocation %d of node 2's directory "
					 "step refused: \"%s\" has two "
					 "masters:\n%s", fail_at, name, text);
		}
		free(text);
	}
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 3, d3, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, d1, 0, NULL), 0);
	drain(c);
	assert_verified(c);
	cluster_free(c);
	cluster_remaster_ticks = 0;
	cluster_remaster_shared = 0;
	cluster_max_tossed = 0;
	return refused;
}

/* ...with each allocation of node 2's directory step refused in turn,
 * the recovery failing and run again.  The second install found no room
 * to put the resource it made on the steps' list
 * (dlm_recover_track_rsb), logged it and went on: the resource was never
 * registered, and its holder at node 1 became its master too. */
static void test_new_masters_without_copy_no_memory(void **state)
{
	int k;

	(void)state;
	assert_false(new_masters_without_copy(-1));
	for (k = 0; k < 200 && new_masters_without_copy(k); k++)
		;
	assert_true(k < 200);
}

/* Node 2's lock b on "r" (node 1 masters it) converted NL <-> CR until
 * "r" moves to node 2; node 2's other lock e (owner 'eowner') holds PW
 * all along.  With 'cross' the 'cross'th conversion is followed at once
 * (undelivered) by e's down-conversion to NL writing 'v' (with
 * 'by_unlock', e's unlock writing it).  Returns the conversion after
 * which "r" moved (0: it did not, or 'cross' was reached). */
static int cr_run(struct cluster *c, uint32_t b, uint32_t e, uint64_t eowner,
		  int cross, int by_unlock, const char *v)
{
	int i;

	for (i = 1; i <= 80; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_CR :
					 DLM_LOCK_NL, 0, NULL), 0);
		if (i == cross) {
			if (by_unlock)
				assert_int_equal(unlock(c, 2, eowner, e,
							DLM_LKF_VALBLK, v), 0);
			else
				assert_int_equal(convert(c, 2, eowner, e,
							 DLM_LOCK_NL,
							 DLM_LKF_VALBLK, v), 0);
			return 0;
		}
		drain(c);
		assert_status(c, 2, b, 0);
		if (!cross) {
			char *text = dump(c, 1);
			int moved = strstr(text, "resource \"r\" master 2") != NULL;

			free(text);
			if (moved)
				return i;
		}
	}
	return 0;
}

/* Node 1 masters "r", whose value is zeros; node 2 holds e PW with
 * VALBLK (owner 'eowner') and b NL (owner 2). */
static struct cluster *ex_cluster(uint32_t *b, uint32_t *e, uint64_t eowner)
{
	struct cluster *c;

	c = r_at_1(0);
	*e = granted_on_r(c, 2, eowner, DLM_LOCK_PW, DLM_LKF_VALBLK);
	*b = granted_on_r(c, 2, 2, DLM_LOCK_NL, 0);
	return c;
}

/* A down-conversion with a value, PW -> NL, in flight from node 2 to
 * node 1 as node 1 moves "r" to node 2: node 1 refuses it (-EBADR), and
 * node 2, master now, redoes it on its own queues (dlm_redo_op ->
 * convert_here).  At the call the room for the value was taken for the
 * lock's buffer only (node 1 mastered "r"), and the MIGRATE brought
 * zeros, so the resource has none: with no memory at the redo the
 * conversion must be refused (-ENOMEM, e still PW), as node 1 would have
 * refused it, not done with the value lost (VALNOTVALID) while its
 * writer is told it succeeded; as the unlock redone the same way (dlm-sim
 * seeds 6203, 237).  Retried with memory, its value reaches a reader. */
static void test_down_convert_redone_no_room(void **state)
{
	char v[DLM_LVB_LEN] = "written by e";
	struct cluster *c;
	struct rec_ast *a;
	uint32_t b, e, d;
	int at;

	(void)state;
	c = ex_cluster(&b, &e, 2);
	at = cr_run(c, b, e, 2, 0, 0, v);
	assert_true(at > 0);
	cluster_free(c);

	c = ex_cluster(&b, &e, 2);
	assert_int_equal(cr_run(c, b, e, 2, at, 0, v), 0);
	deliver_only(c, 2, 1);		/* "r" moves; e's CONVERT refused */
	assert_dump_has(c, 1, "resource \"r\" master 2");
	deliver_first(c, 1, 2);		/* b's CONVERT_REPLY */
	deliver_first(c, 1, 2);		/* MIGRATE */
	assert_dump_has(c, 2, "resource \"r\" master 2");
	dlm_core_set_alloc_hook(c->core[2], fail_while, NULL);
	fail_on = 1;
	deliver_first(c, 1, 2);		/* -EBADR: e redone at node 2 */
	fail_on = 0;
	dlm_core_set_alloc_hook(c->core[2], NULL, NULL);
	a = comp_of(c, 2, e);
	assert_non_null(a);
	if (a->a.status == 0) {
		/* what a reader gets then */
		drain(c);
		d = lock_on(c, 3, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
		drain(c);
		a = comp_of(c, 3, d);
		fail_msg("down-conversion redone without room for its value "
			 "told its writer it succeeded; a reader then got "
			 "\"%.32s\"%s", a && a->has_lvb ? a->lvb : "?",
			 a && (a->a.sbflags & DLM_SBF_VALNOTVALID) ?
			 " VALNOTVALID" : "");
	}
	assert_status(c, 2, e, -ENOMEM);
	drain(c);
	assert_verified(c);
	/* still PW: node 3's PR waits for it */
	d = lock_on(c, 3, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 3, d);
	assert_int_equal(convert(c, 2, 2, e, DLM_LOCK_NL, DLM_LKF_VALBLK, v),
			 0);
	drain(c);
	assert_status(c, 2, e, 0);
	assert_status(c, 3, d, 0);
	a = comp_of(c, 3, d);
	assert_true(a->has_lvb);
	assert_false(a->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_string_equal(a->lvb, v);
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	assert_int_equal(unlock(c, 2, 2, e, 0, NULL), 0);
	end_test(c, 2, 2, b);
}

/* The same with an unlock writing the value, whose owner (5) goes (a
 * client's crash: dlm_core_purge_owner) while the unlock is on its way
 * to node 1: the purge waits for it (LKBF_PURGED, "unlock in flight").
 * Node 1 moves "r" to node 2 and refuses the unlock (-EBADR); node 2,
 * master now, redoes it with no room for its value.  A live owner's
 * unlock is refused -ENOMEM there (seed 237), but no one would ask again
 * for this one: refused, e held PW for ever and node 3's PR waited
 * behind it (dlm-sim seed 3743).  It is done; its value, not kept, is
 * lost as a purge's: the reader is told so (VALNOTVALID). */
static void test_purged_unlock_redone_no_room(void **state)
{
	char v[DLM_LVB_LEN] = "written by e";
	struct cluster *c;
	struct rec_ast *a;
	uint32_t b, e, d;
	int at, comps;

	(void)state;
	c = ex_cluster(&b, &e, 5);
	at = cr_run(c, b, e, 5, 0, 1, v);
	assert_true(at > 0);
	cluster_free(c);

	c = ex_cluster(&b, &e, 5);
	assert_int_equal(cr_run(c, b, e, 5, at, 1, v), 0);
	/* owner 5 goes: the purge waits for the unlock in flight */
	comps = count_asts(c, 2, e, DLM_AST_COMP);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], 5), 1);
	deliver_only(c, 2, 1);		/* "r" moves; e's UNLOCK refused */
	assert_dump_has(c, 1, "resource \"r\" master 2");
	deliver_first(c, 1, 2);		/* b's CONVERT_REPLY */
	deliver_first(c, 1, 2);		/* MIGRATE */
	assert_dump_has(c, 2, "resource \"r\" master 2");
	assert_dump_has(c, 2, " PW ");
	dlm_core_set_alloc_hook(c->core[2], fail_while, NULL);
	fail_on = 1;
	deliver_first(c, 1, 2);		/* -EBADR: e's unlock redone here */
	fail_on = 0;
	dlm_core_set_alloc_hook(c->core[2], NULL, NULL);
	drain(c);
	/* no AST reaches the purged owner, whatever happened */
	assert_int_equal(count_asts(c, 2, e, DLM_AST_COMP), comps);
	d = lock_on(c, 3, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	if (!comp_of(c, 3, d))
		fail_msg("a purged lock's unlock redone without room was "
			 "refused: the lock is held for ever, a PR waits "
			 "behind it:\n%s", dump(c, 2));
	assert_dump_lacks(c, 2, " PW ");
	assert_status(c, 3, d, 0);
	a = comp_of(c, 3, d);
	assert_true(a->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	end_test(c, 2, 2, b);
}

/* remaster_ticks 0: nothing moves. */
static void test_off(void **state)
{
	char v[DLM_LVB_LEN];
	struct cluster *c;
	uint64_t tok = 0;
	uint32_t b;

	(void)state;
	c = start_test(0, v, &tok, &b);
	assert_dump_has(c, 2, "resource \"r\" master 1");
	end_test(c, 2, 2, b);
}

/* How many messages wait from 'from' to 'to'. */
static int queued_msgs(struct cluster *c, uint32_t from, uint32_t to)
{
	size_t n = c->qtail - c->qhead, i;
	int k = 0;

	for (i = 0; i < n; i++) {
		struct qmsg *q = &c->q[(c->qhead + i) % MAXQ];

		k += q->from == from && q->to == to;
	}
	return k;
}

/* 'rounds' conversions NL <-> PR of node 'node's lock lk, each drained. */
static void flip_rounds(struct cluster *c, int node, uint32_t lk, int rounds)
{
	int i;

	for (i = 0; i < rounds; i++) {
		assert_int_equal(convert(c, node, (uint64_t)node, lk,
					 i & 1 ? DLM_LOCK_NL : DLM_LOCK_PR, 0,
					 NULL), 0);
		drain(c);
		assert_status(c, node, lk, 0);
	}
}

/* The stale-refusal rule (lock.c receive_request_reply): a refusal from
 * a node other than the master learned since it was sent is no news.
 * Four nodes: "r" moves from node 1 to node 2, then to node 4; node 1's
 * copy still says node 2.  Node 3, which knew "r" at node 1 (it locked
 * it there first), sends two requests there; node 1 refuses both with
 * its hint, node 2.  The first refusal is news: node 3 follows it to
 * node 2, is refused again (hint 4), and is granted at node 4.  Then the
 * second refusal arrives: stale, it must send the request to node 4 and
 * leave "r" at node 4.  With the rule switched off (seen failing) the
 * old hint pointed "r" away, at node 2, where the request went. */
static void test_stale_refusal(void **state)
{
	struct cluster *c;
	uint32_t a, b, d, e1, e2;
	int i, n;

	(void)state;
	cluster_remaster_ticks = TICKS;
	c = cluster_new(4, 3600000);
	master_at_1(c);
	a = granted_on_r(c, 3, 3, DLM_LOCK_NL, 0);
	assert_int_equal(unlock(c, 3, 3, a, 0, NULL), 0);
	drain(c);
	/* node 2's operations move "r" there */
	b = nl_lock_2(c);
	flip_rounds(c, 2, b, 80);
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	drain(c);
	/* then node 4's, after TICKS ticks, move it on to node 4 */
	d = lock_on(c, 4, 4, "r", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 4, d, 0);
	flip_rounds(c, 4, d, 80);
	for (i = 0; i <= TICKS; i++)
		for (n = 1; n <= 4; n++)
			dlm_core_tick(c->core[n], (uint64_t)i + 1);
	flip_rounds(c, 4, d, 80);
	assert_dump_has(c, 4, "resource \"r\" master 4");
	assert_dump_has(c, 2, "resource \"r\" master 4");
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 3, "resource \"r\" master 1");
	/* node 3's two requests, both to node 1, both refused there */
	e1 = lock_on(c, 3, 31, "r", DLM_LOCK_NL, 0, 0, NULL);
	e2 = lock_on(c, 3, 32, "r", DLM_LOCK_NL, 0, 0, NULL);
	assert_int_equal(queued_msgs(c, 3, 1), 2);
	deliver_only(c, 3, 1);
	assert_int_equal(queued_msgs(c, 1, 3), 2);
	/* the first refusal: to node 2, refused (hint 4), to node 4 */
	deliver_first(c, 1, 3);
	for (i = 0; i < 4; i++) {
		deliver_only(c, 3, 2);
		deliver_only(c, 2, 3);
		deliver_only(c, 3, 4);
		deliver_only(c, 4, 3);
	}
	assert_status(c, 3, e1, 0);
	assert_dump_has(c, 3, "resource \"r\" master 4");
	/* the second, stale: the request goes to node 4, "r" stays */
	assert_int_equal(queued_msgs(c, 1, 3), 1);
	deliver_first(c, 1, 3);
	assert_dump_has(c, 3, "resource \"r\" master 4");
	assert_int_equal(queued_msgs(c, 3, 2), 0);
	assert_int_equal(queued_msgs(c, 3, 4), 1);
	drain(c);
	assert_status(c, 3, e2, 0);
	assert_dump_has(c, 3, "resource \"r\" master 4");
	assert_int_equal(c->nlog_warn, 0);
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 31, e1, 0, NULL), 0);
	assert_int_equal(unlock(c, 3, 32, e2, 0, NULL), 0);
	assert_int_equal(unlock(c, 4, 4, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, e2, -DLM_EUNLOCK);
	cluster_free(c);
	cluster_remaster_ticks = 0;
}

/* Node 2's conversions of its lock b on "r" (mastered at node 1, locked
 * by nobody else, the rule without the re-point protocol), each drained,
 * up to the 'last'th, of which only node 2 -> 1 is delivered (0: until "r"
 * moves).  Returns the conversion after which "r" moved (0: it did not):
 * with 'last', node 1 has then sent its reply and MIGRATE to node 2,
 * still on the wire. */
static int alone_run(struct cluster *c, uint32_t b, int last)
{
	int i;

	for (i = 1; i <= 80; i++) {
		assert_int_equal(convert(c, 2, 2, b, i & 1 ? DLM_LOCK_PR :
					 DLM_LOCK_NL, 0, NULL), 0);
		if (i == last) {
			deliver_only(c, 2, 1);
			return i;
		}
		drain(c);
		assert_status(c, 2, b, 0);
		if (!last) {
			char *text = dump(c, 1);
			int moved = strstr(text, "resource \"r\" master 2") != NULL;

			free(text);
			if (moved)
				return i;
		}
	}
	return 0;
}

/* Three engines, "r" mastered at node 1 and used by node 2 alone, which
 * it moves to; node 1's MIGRATE is held on its link to node 2.  Node 3
 * (no lock on "r" yet) asks for an NL lock: refused by node 1 (moved to
 * 2), by node 2 (not installed), again and again through the directory,
 * until it is parked (lock.c request_bounced); every other link is
 * drained.  Returns the cluster; *b: node 2's lock, *e: node 3's. */
static struct cluster *parked_at_3(uint32_t *b, uint32_t *e)
{
	struct cluster *c;
	int at;

	c = r_at_1(0);
	*b = nl_lock_2(c);
	at = alone_run(c, *b, 0);
	assert_true(at > 0);
	cluster_free(c);
	c = r_at_1(0);
	*b = nl_lock_2(c);
	assert_int_equal(alone_run(c, *b, at), at);
	drain_but(c, 1, 2);
	assert_dump_has(c, 1, "resource \"r\" master 2");
	assert_dump_has(c, 2, "resource \"r\" master 1");
	*e = lock_on(c, 3, 32, "r", DLM_LOCK_NL, 0, 0, NULL);
	drain_but(c, 1, 2);
	assert_no_comp(c, 3, *e);
	assert_dump_has(c, 3, "lookup");
	assert_true(queued_msgs(c, 1, 2) > 0);
	return c;
}

/* The end of parked_at_3's tests: e granted, every lock unlocked. */
static void parked_end(struct cluster *c, uint32_t b, uint32_t e)
{
	assert_status(c, 3, e, 0);
	assert_dump_has(c, 3, "resource \"r\" master 2");
	assert_verified(c);
	assert_int_equal(unlock(c, 3, 32, e, 0, NULL), 0);
	end_test(c, 2, 2, b);
}

/* A sibling's REQUEST_REPLY names the master: the parked request goes
 * there at once (lock.c receive_request_reply), not at the next tick.
 * Node 2 installs "r"; node 3's second request, sent to node 2 (the
 * last refusal's hint), is granted; no tick comes.  Before (seen
 * failing) the parked one waited for the tick. */
static void test_sibling_reply_wakes_parked(void **state)
{
	struct cluster *c;
	uint32_t b, e, f;

	(void)state;
	c = parked_at_3(&b, &e);
	deliver_only(c, 1, 2);
	assert_dump_has(c, 2, "resource \"r\" master 2");
	f = lock_on(c, 3, 31, "r", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, f, 0);
	assert_status(c, 3, e, 0);
	assert_int_equal(unlock(c, 3, 31, f, 0, NULL), 0);
	drain(c);
	parked_end(c, b, e);
}

/* The tick sends a parked request on from the list of those parked
 * (dlm_redo_parked), without walking (or allocating for) every resource:
 * with every allocation of node 3's refused, its tick still sends the
 * request.  Before (seen failing) the tick made an array of all the
 * resources, and without memory for it warned and sent nothing. */
static void test_tick_sends_parked(void **state)
{
	struct cluster *c;
	unsigned long before;
	uint32_t b, e;

	(void)state;
	c = parked_at_3(&b, &e);
	deliver_only(c, 1, 2);
	drain(c);
	assert_no_comp(c, 3, e);	/* nothing told node 3 */
	before = c->sent[DLM_MSG_REQUEST] + c->sent[DLM_MSG_LOOKUP];
	dlm_core_set_alloc_hook(c->core[3], fail_all, NULL);
	dlm_core_tick(c->core[3], 1);
	dlm_core_set_alloc_hook(c->core[3], NULL, NULL);
	assert_int_equal(c->sent[DLM_MSG_REQUEST] + c->sent[DLM_MSG_LOOKUP],
			 before + 1);
	assert_int_equal(c->nlog_warn, 0);
	drain(c);
	/* a second tick finds nothing parked: nothing sent */
	before = c->sent[DLM_MSG_REQUEST] + c->sent[DLM_MSG_LOOKUP];
	dlm_core_tick(c->core[3], 2);
	assert_int_equal(c->sent[DLM_MSG_REQUEST] + c->sent[DLM_MSG_LOOKUP],
			 before);
	parked_end(c, b, e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moves_to_user),
		cmocka_unit_test(test_no_bounce),
		cmocka_unit_test(test_third_node_keeps),
		cmocka_unit_test(test_master_client_keeps),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_third_node_moves),
		cmocka_unit_test(test_master_client_moves),
		cmocka_unit_test(test_orphan_moves_adopted),
		cmocka_unit_test(test_orphan_moves_purged),
		cmocka_unit_test(test_crossing_convert),
		cmocka_unit_test(test_repoint_before_moved),
		cmocka_unit_test(test_recovery_mid_move),
		cmocka_unit_test(test_old_master_dies_mid_move),
		cmocka_unit_test(test_third_node_dies_mid_move),
		cmocka_unit_test(test_third_writer_dies_mid_move),
		cmocka_unit_test(test_new_master_without_copy),
		cmocka_unit_test(test_new_masters_without_copy_no_memory),
		cmocka_unit_test(test_unlock_to_dead_old_master),
		cmocka_unit_test(test_old_master_looks_up),
		cmocka_unit_test(test_old_master_looks_up_shared),
		cmocka_unit_test(test_old_master_looks_up_recovery),
		cmocka_unit_test(test_held_lookup_verified),
		cmocka_unit_test(test_demoted_at_move),
		cmocka_unit_test(test_demoted_at_move_shared),
		cmocka_unit_test(test_down_convert_redone_no_room),
		cmocka_unit_test(test_purged_unlock_redone_no_room),
		cmocka_unit_test(test_bast_again_after_return),
		cmocka_unit_test(test_bounce_bounded),
		cmocka_unit_test(test_stale_refusal),
		cmocka_unit_test(test_sibling_reply_wakes_parked),
		cmocka_unit_test(test_tick_sends_parked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
