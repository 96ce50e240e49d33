/*
 * tests/test-core-solo-shared.c - lone locks folded with their resources
 * in a lockspace with other members (core/solo.c, "Shared lockspaces";
 * issue 14): a lock folds only on a name its node directs; a message of
 * another node naming the resource (a LOOKUP, a REQUEST) unfolds that one
 * resource first, whole or not at all, and the other node's lock then
 * finds this node its master, as it would have unfolded; a recovery
 * unfolds them all before the directory is rebuilt.  The harness:
 * tests/test-core.h.
 */

#include "tests/test-core.h"
#include "core/core_internal.h"

static size_t nsolos(struct cluster *c, int node)
{
	return dlm_solo_count(c->ls[node]);
}

static struct cluster *fold_cluster(int n)
{
	struct cluster *c;

	cluster_fold = 1;
	c = cluster_new(n, 1000);
	cluster_fold = 0;
	return c;
}

static int fail_all(void *arg)
{
	(void)arg;
	return 1;
}

static struct dlm_ls_stats stats(struct cluster *c, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(c->ls[node], &st);
	return st;
}

/* Of two members, each folds the lone locks on the names it directs,
 * and only those: a lock on a name the other directs is an lkb (its
 * lookup, its master's copy); with folding off nothing folds. */
static void test_shared_folds_directed(void **state)
{
	struct cluster *c = fold_cluster(2);
	char mine[16], theirs[16];
	uint32_t a, b;

	(void)state;
	name_directed_by("m", 2, 1, mine, sizeof(mine));
	name_directed_by("t", 2, 2, theirs, sizeof(theirs));
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_status(c, 1, a, 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_folds_shared, 1);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 0);
	b = lock_on(c, 1, 1, theirs, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, b, 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(nsolos(c, 2), 0);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 1);
	assert_int_equal(stats(c, 1).ls_locks, 2);
	assert_int_equal(stats(c, 1).ls_resources, 2);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_status(c, 1, a, -DLM_EUNLOCK);
	assert_int_equal(nsolos(c, 1), 0);
	assert_verified(c);
	cluster_free(c);

	c = cluster_new(2, 1000);
	lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 0);
	cluster_free(c);
}

/* Another node's lock on a folded name: its LOOKUP unfolds that resource
 * (and no other), the directory answers this node, its request waits for
 * the held lock (a bast here), and is granted at the unlock. */
static void test_shared_lookup_unfolds(void **state)
{
	struct cluster *c = fold_cluster(3);
	char mine[16], other[16];
	uint32_t held, keep, want;

	(void)state;
	name_directed_by("m", 3, 1, mine, sizeof(mine));
	name_directed_by("o", 3, 1, other, sizeof(other));
	held = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	keep = lock_on(c, 1, 1, other, DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 2);
	want = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	assert_no_comp(c, 2, want);
	assert_int_equal(last_bast_mode(c, 1, held), DLM_LOCK_EX);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, held, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, want, 0);
	/* still mastered here: a lock of this node on it waits */
	held = lock_on(c, 1, 1, mine, DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 1, held);
	assert_int_equal(nsolos(c, 1), 1);
	assert_status(c, 1, keep, 0);
	assert_verified(c);
	cluster_free(c);
}

/* The LOOKUP that must unfold without memory is not taken (offered
 * again), changing nothing; taken later, it unfolds. */
static void test_shared_lookup_no_memory(void **state)
{
	struct cluster *c = fold_cluster(2);
	char mine[16];
	uint32_t held, want;
	struct qmsg m;

	(void)state;
	name_directed_by("m", 2, 1, mine, sizeof(mine));
	held = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	want = lock_on(c, 2, 2, mine, DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(c->qtail - c->qhead, 1);
	m = c->q[c->qhead++ % MAXQ];
	assert_int_equal(m.to, 1);
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len),
			 -ENOMEM);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(c->qtail - c->qhead, 0);
	assert_verified(c);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len), 0);
	assert_int_equal(nsolos(c, 1), 0);
	drain(c);
	assert_no_comp(c, 2, want);
	assert_int_equal(unlock(c, 1, 1, held, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, want, 0);
	assert_verified(c);
	cluster_free(c);
}

/* A tossed folded resource named by another node's LOOKUP becomes the
 * tossed rsb it stands for: the name stays mastered here, as unfolded;
 * this node's next lock on it does not fold (an rsb holds the name) and
 * waits for the other node's. */
static void test_shared_tossed_lookup(void **state)
{
	struct cluster *c = fold_cluster(2);
	char mine[16], text[40];
	uint32_t a, theirs;

	(void)state;
	name_directed_by("m", 2, 1, mine, sizeof(mine));
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_int_equal(stats(c, 1).ls_tossed, 1);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	theirs = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, theirs, 0);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	snprintf(text, sizeof(text), "resource \"%s\" master 1", mine);
	assert_dump_has(c, 2, text);
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 0);
	assert_no_comp(c, 1, a);
	assert_int_equal(unlock(c, 2, 2, theirs, 0, NULL), 0);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_verified(c);
	cluster_free(c);
}

/* Without memory for the tossed rsb, the message is not taken and the
 * tossed solo stays. */
static void test_shared_tossed_no_memory(void **state)
{
	struct cluster *c = fold_cluster(2);
	char mine[16];
	uint32_t a, theirs;
	struct qmsg m;

	(void)state;
	name_directed_by("m", 2, 1, mine, sizeof(mine));
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	theirs = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(c->qtail - c->qhead, 1);
	m = c->q[c->qhead++ % MAXQ];
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len),
			 -ENOMEM);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	assert_verified(c);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len), 0);
	drain(c);
	assert_status(c, 2, theirs, 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 0);
	assert_verified(c);
	cluster_free(c);
}

/* A member leaves: the start unfolds every lone lock before the
 * directory is rebuilt, so the survivor's folded names keep their master
 * and the other survivor's lock on one waits for it; after the
 * recovery, lone locks fold again. */
static void test_shared_recovery(void **state)
{
	struct cluster *c = fold_cluster(3);
	uint32_t ids[6], theirs[6];
	char name[16];
	int k;

	(void)state;
	for (k = 0; k < 6; k++) {
		char prefix[8];

		snprintf(prefix, sizeof(prefix), "r%d_", k);
		name_directed_by(prefix, 3, 1, name, sizeof(name));
		ids[k] = lock_on(c, 1, 1, name, DLM_LOCK_PR, 0, 0, NULL);
	}
	assert_int_equal(nsolos(c, 1), 6);
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_int_equal(nsolos(c, 1), 0);
	for (k = 0; k < 6; k++) {
		char prefix[8];

		snprintf(prefix, sizeof(prefix), "r%d_", k);
		name_directed_by(prefix, 3, 1, name, sizeof(name));
		theirs[k] = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	}
	drain(c);
	for (k = 0; k < 6; k++) {
		assert_no_comp(c, 2, theirs[k]);
		assert_int_equal(unlock(c, 1, 1, ids[k], 0, NULL), 0);
	}
	drain(c);
	for (k = 0; k < 6; k++)
		assert_status(c, 2, theirs[k], 0);
	name_directed_by("after", 2, 1, name, sizeof(name));
	lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 1);
	assert_verified(c);
	cluster_free(c);
}

int main(void)
{
	/* these tests choose folding per cluster (fold_cluster) */
	unsetenv("TEST_CORE_FOLD");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_folds_directed),
		cmocka_unit_test(test_shared_lookup_unfolds),
		cmocka_unit_test(test_shared_lookup_no_memory),
		cmocka_unit_test(test_shared_tossed_lookup),
		cmocka_unit_test(test_shared_tossed_no_memory),
		cmocka_unit_test(test_shared_recovery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
