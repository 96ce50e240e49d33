/*
 * tests/test-htab.c - the engine's hash table (core/htab.c): a sweep
 * removes exactly the nodes its callback picks, each once, and leaves the
 * table the size removing them one by one would have (recovery sweeps the
 * directory with it, issue 18).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/htab.h"

#define N	1000

struct item {
	struct dlm_hnode	it_hnode;	/* first: the node is the item */
	unsigned int		it_id;
	unsigned int		it_dropped;	/* times the sweep took it */
};

static struct item items[N], others[N];

static void fill(struct dlm_htab *ht, struct item *v)
{
	assert_int_equal(dlm_htab_init(ht), 0);
	for (unsigned int i = 0; i < N; i++) {
		v[i].it_id = i;
		v[i].it_dropped = 0;
		v[i].it_hnode.hn_hash = dlm_hash_u32(i);
		dlm_htab_insert(ht, &v[i].it_hnode);
	}
}

/* keep the first 'arg' ids */
static bool drop_from(void *arg, struct dlm_hnode *n)
{
	struct item *it = (struct item *)n;

	if (it->it_id < *(unsigned int *)arg)
		return false;
	it->it_dropped++;
	return true;
}

static void count(void *arg, struct dlm_hnode *n)
{
	unsigned int *seen = arg;

	seen[((struct item *)n)->it_id]++;
}

static void sweep_keeps(unsigned int keep)
{
	struct dlm_htab swept, one_by_one;
	unsigned int seen[N] = { 0 };

	/* the same removals, one at a time */
	fill(&one_by_one, others);
	for (unsigned int i = keep; i < N; i++)
		dlm_htab_remove(&one_by_one, &others[i].it_hnode);

	fill(&swept, items);
	assert_int_equal(dlm_htab_sweep(&swept, drop_from, &keep), N - keep);
	assert_int_equal(swept.ht_count, keep);
	assert_int_equal(swept.ht_nbuckets, one_by_one.ht_nbuckets);
	dlm_htab_walk(&swept, count, seen);
	for (unsigned int i = 0; i < N; i++) {
		assert_int_equal(seen[i], i < keep ? 1 : 0);
		assert_int_equal(items[i].it_dropped, i < keep ? 0 : 1);
	}
	/* still a working table */
	for (unsigned int i = keep; i < N; i++)
		dlm_htab_insert(&swept, &items[i].it_hnode);
	assert_int_equal(swept.ht_count, N);
	dlm_htab_destroy(&swept);
	dlm_htab_destroy(&one_by_one);
}

static void test_sweep_none(void **state)
{
	sweep_keeps(N);
}

static void test_sweep_half(void **state)
{
	sweep_keeps(N / 2);
}

static void test_sweep_most(void **state)
{
	/* the table shrinks, several halvings at once */
	sweep_keeps(10);
}

static void test_sweep_all(void **state)
{
	sweep_keeps(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sweep_none),
		cmocka_unit_test(test_sweep_half),
		cmocka_unit_test(test_sweep_most),
		cmocka_unit_test(test_sweep_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
