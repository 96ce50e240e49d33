/*
 * tests/test-slab.c - plugin/slab.c's records and handles, and
 * plugin/u32map.c's u32idx, the pair client.c keeps its lock records in
 * (struct lkcb, cl_locks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

#define REC_SIZE	56
#define NRECS		(3 * SLAB_PAGE_RECS + 5)

/* Records keep what is written in them, each its own, while they live;
 * freed ones come back zeroed. */
static void test_slab_records(void **state)
{
	struct slab s = { 0 };
	uint32_t *h = calloc(NRECS, sizeof(*h));
	unsigned char *p;

	(void)state;
	assert_non_null(h);
	for (uint32_t i = 0; i < NRECS; i++) {
		p = slab_alloc(&s, REC_SIZE, &h[i]);
		assert_non_null(p);
		for (uint32_t j = 0; j < REC_SIZE; j++)
			assert_int_equal(p[j], 0);
		memset(p, (int)(i & 0xff), REC_SIZE);
		memcpy(p, &i, sizeof(i));
	}
	assert_int_equal(s.sl_count, NRECS);
	assert_int_equal(slab_pages(&s), 4);
	for (uint32_t i = 0; i < NRECS; i++) {
		uint32_t v;

		p = slab_rec(&s, h[i]);
		memcpy(&v, p, sizeof(v));
		assert_int_equal(v, i);
		assert_int_equal(p[REC_SIZE - 1], i & 0xff);
	}
	/* free every other one, take them again: all zeroed, the others
	 * untouched */
	for (uint32_t i = 0; i < NRECS; i += 2)
		slab_free(&s, h[i]);
	assert_int_equal(s.sl_count, NRECS / 2);
	for (uint32_t i = 0; i < NRECS; i += 2) {
		p = slab_alloc(&s, REC_SIZE, &h[i]);
		assert_non_null(p);
		for (uint32_t j = 0; j < REC_SIZE; j++)
			assert_int_equal(p[j], 0);
		memcpy(p, &i, sizeof(i));
	}
	assert_int_equal(slab_pages(&s), 4);
	for (uint32_t i = 0; i < NRECS; i++) {
		uint32_t v;

		memcpy(&v, slab_rec(&s, h[i]), sizeof(v));
		assert_int_equal(v, i);
	}
	slab_fini(&s);
	free(h);
}

/* Pages whose records all went are given back but one; their
 * directory slots are used again. */
static void test_slab_pages_back(void **state)
{
	struct slab s = { 0 };
	uint32_t *h = calloc(NRECS, sizeof(*h));

	(void)state;
	assert_non_null(h);
	for (uint32_t i = 0; i < NRECS; i++)
		assert_non_null(slab_alloc(&s, REC_SIZE, &h[i]));
	for (uint32_t i = 0; i < NRECS; i++)
		slab_free(&s, h[i]);
	assert_int_equal(s.sl_count, 0);
	assert_int_equal(slab_pages(&s), 1);
	/* one record taken and dropped, again and again: the spare page,
	 * nothing allocated */
	for (int k = 0; k < 3 * (int)SLAB_PAGE_RECS; k++) {
		assert_non_null(slab_alloc(&s, REC_SIZE, &h[0]));
		slab_free(&s, h[0]);
		assert_int_equal(slab_pages(&s), 1);
	}
	/* up again: the holes are filled before the directory grows */
	for (uint32_t i = 0; i < NRECS; i++)
		assert_non_null(slab_alloc(&s, REC_SIZE, &h[i]));
	assert_int_equal(slab_pages(&s), 4);
	assert_int_equal(s.sl_npages, 4);
	for (uint32_t i = 0; i < NRECS; i++)
		assert_true(h[i] < 4 * SLAB_PAGE_RECS);
	slab_fini(&s);
	free(h);
}

struct each_sum {
	uint64_t	es_keys;
	uint64_t	es_vals;
	uint32_t	es_n;
};

static void sum_each(void *arg, uint32_t key, uint32_t val)
{
	struct each_sum *es = arg;

	es->es_keys += key;
	es->es_vals += val;
	es->es_n++;
}

/* u32idx: put, get, replace, delete (tombstones), grow, each. */
static void test_u32idx(void **state)
{
	struct u32idx m = { 0 };
	struct each_sum es = { 0 };
	uint64_t keys = 0, vals = 0;
	uint32_t v, n = 0;

	(void)state;
	assert_false(u32idx_get(&m, 1, &v));
	assert_int_equal(u32idx_put(&m, 0, 1), -EINVAL);
	assert_int_equal(u32idx_put(&m, UINT32_MAX, 1), -EINVAL);
	for (uint32_t k = 1; k <= 5000; k++)
		assert_int_equal(u32idx_put(&m, k * 7, k ^ 0xdeadbeefu), 0);
	assert_int_equal(m.ui_count, 5000);
	assert_true(m.ui_cap > 2 * m.ui_count);
	for (uint32_t k = 1; k <= 5000; k++) {
		assert_true(u32idx_get(&m, k * 7, &v));
		assert_int_equal(v, k ^ 0xdeadbeefu);
		assert_false(u32idx_get(&m, k * 7 + 1, &v));
	}
	/* replace keeps the count */
	assert_int_equal(u32idx_put(&m, 7, 42), 0);
	assert_true(u32idx_get(&m, 7, &v));
	assert_int_equal(v, 42);
	assert_int_equal(m.ui_count, 5000);
	/* delete the odd ones; the even ones stay found past tombstones */
	for (uint32_t k = 1; k <= 5000; k += 2) {
		assert_true(u32idx_del(&m, k * 7, &v));
		assert_false(u32idx_del(&m, k * 7, &v));
	}
	for (uint32_t k = 1; k <= 5000; k++) {
		assert_int_equal(u32idx_get(&m, k * 7, &v), k % 2 == 0);
		if (k % 2 == 0) {
			keys += k * 7;
			vals += k ^ 0xdeadbeefu;
			n++;
		}
	}
	assert_int_equal(m.ui_count, n);
	u32idx_each(&m, sum_each, &es);
	assert_int_equal(es.es_n, n);
	assert_int_equal(es.es_keys, keys);
	assert_int_equal(es.es_vals, vals);
	/* churn through tombstones: the table does not fill with them */
	for (uint32_t r = 0; r < 20000; r++) {
		assert_int_equal(u32idx_put(&m, 1000000 + r, r), 0);
		assert_true(u32idx_del(&m, 1000000 + r, &v));
		assert_int_equal(v, r);
	}
	assert_int_equal(m.ui_count, n);
	assert_true(m.ui_used < m.ui_cap / 2);
	u32idx_free(&m);
	assert_int_equal(m.ui_cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slab_records),
		cmocka_unit_test(test_slab_pages_back),
		cmocka_unit_test(test_u32idx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
