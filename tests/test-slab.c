/*
 * tests/test-slab.c - plugin/slab.c's records and handles, where
 * client.c keeps its lock records (struct lkcb; their index, cl_locks,
 * is a u32idx: tests/test-u32map.c).
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slab_records),
		cmocka_unit_test(test_slab_pages_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
