/*
 * tests/test-u32map.c - plugin/u32map.c's table (struct u32tab) through
 * both its maps, u32map (key -> pointer, 12-byte slots) and u32idx
 * (key -> u32, 8-byte slots): the rules on keys 0 and UINT32_MAX,
 * tombstones inside probe chains, resizes under churn, reserve then fill.
 *
 * The edge-case tests run once a map, given a small table of the map's
 * operations (struct ops) as their state, so both widths take the same
 * cases.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

/* ------------------------------------------------------------------ */
/* One interface over both maps: values are u32s (as pointers for      */
/* u32map, never 0 there, so that NULL means "not there").              */
/* ------------------------------------------------------------------ */

union anymap {
	struct u32map	am_map;
	struct u32idx	am_idx;
};

struct ops {
	struct u32tab	*(*o_tab)(union anymap *m);
	int		(*o_put)(union anymap *m, uint32_t key, uint32_t val);
	bool		(*o_get)(union anymap *m, uint32_t key, uint32_t *val);
	bool		(*o_del)(union anymap *m, uint32_t key, uint32_t *val);
	int		(*o_reserve)(union anymap *m, uint32_t n);
	uint32_t	(*o_count)(union anymap *m);
	void		(*o_free)(union anymap *m);
};

static struct u32tab *map_tab(union anymap *m)
{
	return &m->am_map.um_tab;
}

static int map_put(union anymap *m, uint32_t key, uint32_t val)
{
	return u32map_put(&m->am_map, key, (void *)(uintptr_t)val);
}

static bool map_get(union anymap *m, uint32_t key, uint32_t *val)
{
	void *p = u32map_get(&m->am_map, key);

	*val = (uint32_t)(uintptr_t)p;
	return p != NULL;
}

static bool map_del(union anymap *m, uint32_t key, uint32_t *val)
{
	void *p = u32map_del(&m->am_map, key);

	*val = (uint32_t)(uintptr_t)p;
	return p != NULL;
}

static int map_reserve(union anymap *m, uint32_t n)
{
	return u32map_reserve(&m->am_map, n);
}

static uint32_t map_count(union anymap *m)
{
	return u32map_count(&m->am_map);
}

static void map_free(union anymap *m)
{
	u32map_free(&m->am_map);
}

static struct u32tab *idx_tab(union anymap *m)
{
	return &m->am_idx.ui_tab;
}

static int idx_put(union anymap *m, uint32_t key, uint32_t val)
{
	return u32idx_put(&m->am_idx, key, val);
}

static bool idx_get(union anymap *m, uint32_t key, uint32_t *val)
{
	return u32idx_get(&m->am_idx, key, val);
}

static bool idx_del(union anymap *m, uint32_t key, uint32_t *val)
{
	return u32idx_del(&m->am_idx, key, val);
}

static int idx_reserve(union anymap *m, uint32_t n)
{
	return u32idx_reserve(&m->am_idx, n);
}

static uint32_t idx_count(union anymap *m)
{
	return u32idx_count(&m->am_idx);
}

static void idx_free(union anymap *m)
{
	u32idx_free(&m->am_idx);
}

static const struct ops map_ops = {
	map_tab, map_put, map_get, map_del, map_reserve, map_count, map_free,
};
static const struct ops idx_ops = {
	idx_tab, idx_put, idx_get, idx_del, idx_reserve, idx_count, idx_free,
};

/* The value each test stores under 'key': never 0. */
static uint32_t val_of(uint32_t key)
{
	return (key ^ 0x5a5a5a5au) | 1u;
}

static void assert_has(const struct ops *o, union anymap *m, uint32_t key)
{
	uint32_t v = 0;

	assert_true(o->o_get(m, key, &v));
	assert_int_equal(v, val_of(key));
}

static void assert_lacks(const struct ops *o, union anymap *m, uint32_t key)
{
	uint32_t v;

	assert_false(o->o_get(m, key, &v));
}

/* ------------------------------------------------------------------ */
/* The cases                                                            */
/* ------------------------------------------------------------------ */

/* 0 marks an empty slot and UINT32_MAX a tombstone: neither is a key,
 * put refuses them, get and del find nothing under them, in an empty
 * table (no array yet) and in one with empty slots and tombstones. */
static void test_reserved_keys(void **state)
{
	const struct ops *o = *state;
	union anymap m = { 0 };
	uint32_t v;

	assert_lacks(o, &m, 0);
	assert_lacks(o, &m, UINT32_MAX);
	assert_false(o->o_del(&m, 0, &v));
	assert_false(o->o_del(&m, UINT32_MAX, &v));
	assert_int_equal(o->o_put(&m, 0, 1), -EINVAL);
	assert_int_equal(o->o_put(&m, UINT32_MAX, 1), -EINVAL);
	assert_int_equal(o->o_count(&m), 0);
	assert_null(o->o_tab(&m)->t_slots);

	/* the largest and smallest keys there are */
	assert_int_equal(o->o_put(&m, 1, val_of(1)), 0);
	assert_int_equal(o->o_put(&m, UINT32_MAX - 1, val_of(UINT32_MAX - 1)), 0);
	assert_int_equal(o->o_put(&m, 2, val_of(2)), 0);
	assert_true(o->o_del(&m, 2, &v));	/* a tombstone */
	assert_has(o, &m, 1);
	assert_has(o, &m, UINT32_MAX - 1);
	assert_lacks(o, &m, 0);
	assert_lacks(o, &m, UINT32_MAX);
	assert_false(o->o_del(&m, 0, &v));
	assert_false(o->o_del(&m, UINT32_MAX, &v));
	assert_int_equal(o->o_put(&m, 0, 1), -EINVAL);
	assert_int_equal(o->o_put(&m, UINT32_MAX, 1), -EINVAL);
	assert_int_equal(o->o_count(&m), 2);
	o->o_free(&m);
	assert_int_equal(o->o_tab(&m)->t_cap, 0);
	assert_null(o->o_tab(&m)->t_slots);
}

/* Keys that all hash to one slot of the smallest table (16 slots, the
 * Fibonacci hash of u32map.c): one probe chain of CHAIN. */
#define CHAIN		6u
#define MIN_SLOTS	16u

static void chain_keys(uint32_t *keys)
{
	uint32_t n = 0;

	for (uint32_t k = 1; n < CHAIN; k++)
		if (((k * 2654435769u) & (MIN_SLOTS - 1)) == 5)
			keys[n++] = k;
}

/* Every subset of one probe chain deleted: the rest are still found past
 * the tombstones, the deleted ones are not; putting them back reuses the
 * tombstones (no slot taken afresh) and finds them all again. */
static void test_tombstones(void **state)
{
	const struct ops *o = *state;
	uint32_t keys[CHAIN], v;

	chain_keys(keys);
	for (uint32_t mask = 0; mask < 1u << CHAIN; mask++) {
		union anymap m = { 0 };
		uint32_t used;

		for (uint32_t i = 0; i < CHAIN; i++)
			assert_int_equal(o->o_put(&m, keys[i], val_of(keys[i])), 0);
		assert_int_equal(o->o_tab(&m)->t_cap, MIN_SLOTS);
		used = o->o_tab(&m)->t_used;
		for (uint32_t i = 0; i < CHAIN; i++)
			if (mask & 1u << i) {
				assert_true(o->o_del(&m, keys[i], &v));
				assert_int_equal(v, val_of(keys[i]));
				assert_false(o->o_del(&m, keys[i], &v));
			}
		assert_int_equal(o->o_count(&m), CHAIN - __builtin_popcount(mask));
		for (uint32_t i = 0; i < CHAIN; i++)
			if (mask & 1u << i)
				assert_lacks(o, &m, keys[i]);
			else
				assert_has(o, &m, keys[i]);
		/* replacing a live key past tombstones keeps one copy */
		for (uint32_t i = 0; i < CHAIN; i++)
			if (!(mask & 1u << i))
				assert_int_equal(o->o_put(&m, keys[i], val_of(keys[i])), 0);
		assert_int_equal(o->o_count(&m), CHAIN - __builtin_popcount(mask));
		for (uint32_t i = 0; i < CHAIN; i++)
			if (mask & 1u << i)
				assert_int_equal(o->o_put(&m, keys[i], val_of(keys[i])), 0);
		assert_int_equal(o->o_count(&m), CHAIN);
		assert_int_equal(o->o_tab(&m)->t_used, used);
		for (uint32_t i = 0; i < CHAIN; i++) {
			assert_has(o, &m, keys[i]);
			assert_true(o->o_del(&m, keys[i], &v));
		}
		assert_int_equal(o->o_count(&m), 0);
		o->o_free(&m);
	}
}

#define LIVE		1000u
#define CHURN		200000u

/* Many puts and deletes of fresh keys over a steady set of live ones:
 * the tombstones are swept by resizes at the same size (the table does
 * not grow without end, nor fill with tombstones), and every live key
 * keeps its value through them. */
static void test_churn(void **state)
{
	const struct ops *o = *state;
	union anymap m = { 0 };
	uint32_t v, cap;

	for (uint32_t k = 1; k <= LIVE; k++)
		assert_int_equal(o->o_put(&m, k, val_of(k)), 0);
	cap = o->o_tab(&m)->t_cap;
	for (uint32_t r = 0; r < CHURN; r++) {
		uint32_t k = 1000000u + r;

		assert_int_equal(o->o_put(&m, k, val_of(k)), 0);
		if (r % 3 == 0) {
			/* one of the live ones out and back in */
			uint32_t l = 1 + r % LIVE;

			assert_true(o->o_del(&m, l, &v));
			assert_int_equal(v, val_of(l));
			assert_int_equal(o->o_put(&m, l, val_of(l)), 0);
		}
		assert_true(o->o_del(&m, k, &v));
		assert_int_equal(v, val_of(k));
		assert_true(o->o_tab(&m)->t_used < o->o_tab(&m)->t_cap / 2);
		/* a sweep may double it once (tab_grow: live keys under 3/8) */
		assert_true(o->o_tab(&m)->t_cap <= 2 * cap);
	}
	assert_int_equal(o->o_count(&m), LIVE);
	for (uint32_t k = 1; k <= LIVE; k++)
		assert_has(o, &m, k);
	assert_lacks(o, &m, 1000000u);
	o->o_free(&m);
}

/* Just under half full, put-and-delete of fresh keys: each delete leaves
 * a tombstone and each put counts one more used slot, so the table is
 * swept now and then; a sweep that keeps the size must leave room for
 * many puts (amortised O(1)), not for one.  (The sweep once kept the
 * size whenever the live keys stayed under half: 999 rebuilds of the
 * whole table in 1000 put/delete pairs at 1022 keys of 2048 slots, 3 ms
 * a pair at half a million.) */
static void test_sweep_not_each_put(void **state)
{
	const struct ops *o = *state;
	union anymap m = { 0 };
	uint32_t v, cap, k = 0, rebuilds = 0;
	const unsigned char *slots;

	do {
		k++;
		assert_int_equal(o->o_put(&m, k, val_of(k)), 0);
	} while (o->o_tab(&m)->t_cap < 2048);
	cap = o->o_tab(&m)->t_cap;
	while (o->o_count(&m) < cap / 2 - 2) {
		k++;
		assert_int_equal(o->o_put(&m, k, val_of(k)), 0);
	}
	assert_int_equal(o->o_tab(&m)->t_cap, cap);
	slots = o->o_tab(&m)->t_slots;
	for (uint32_t r = 0; r < 1000; r++) {
		uint32_t f = 5000000u + r;

		assert_int_equal(o->o_put(&m, f, val_of(f)), 0);
		assert_true(o->o_del(&m, f, &v));
		assert_int_equal(v, val_of(f));
		if (o->o_tab(&m)->t_slots != slots) {
			rebuilds++;
			slots = o->o_tab(&m)->t_slots;
		}
	}
	printf("%u rebuilds in 1000 put/delete pairs at %u keys\n", rebuilds,
	       o->o_count(&m));
	assert_true(rebuilds <= 8);
	for (uint32_t j = 1; j <= k; j++)
		assert_has(o, &m, j);
	o->o_free(&m);
}

/* reserve(n) then n puts of new keys: no resize (the array and its size
 * stay), so none of them can fail; over a table with tombstones too. */
static void test_reserve_fill(void **state)
{
	const struct ops *o = *state;
	union anymap m = { 0 };
	unsigned char *slots;
	uint32_t cap, v;

	assert_int_equal(o->o_reserve(&m, 0), 0);
	for (uint32_t n = 1; n <= 300; n += 37) {
		assert_int_equal(o->o_reserve(&m, n), 0);
		slots = o->o_tab(&m)->t_slots;
		cap = o->o_tab(&m)->t_cap;
		assert_non_null(slots);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t k = n * 1000u + i + 1;

			assert_int_equal(o->o_put(&m, k, val_of(k)), 0);
		}
		assert_ptr_equal(o->o_tab(&m)->t_slots, slots);
		assert_int_equal(o->o_tab(&m)->t_cap, cap);
		/* leave tombstones behind for the next round */
		for (uint32_t i = 0; i < n; i += 2) {
			uint32_t k = n * 1000u + i + 1;

			assert_true(o->o_del(&m, k, &v));
		}
	}
	/* what is left is all there */
	for (uint32_t n = 1; n <= 300; n += 37)
		for (uint32_t i = 1; i < n; i += 2)
			assert_has(o, &m, n * 1000u + i + 1);
	/* a reserve the table cannot hold fails and leaves it as it was,
	 * also where the count plus n passes UINT32_MAX */
	cap = o->o_tab(&m)->t_cap;
	assert_int_equal(o->o_reserve(&m, UINT32_MAX / 2), -ENOMEM);
	assert_int_equal(o->o_reserve(&m, UINT32_MAX), -ENOMEM);
	assert_int_equal(o->o_reserve(&m, UINT32_MAX - o->o_count(&m) + 1),
			 -ENOMEM);
	assert_int_equal(o->o_tab(&m)->t_cap, cap);
	o->o_free(&m);
}

/* each visits every live entry once with its value, none of the
 * deleted ones. */
struct each_sum {
	uint64_t	es_keys;
	uint64_t	es_vals;
	uint32_t	es_n;
};

static void sum_map(void *arg, uint32_t key, void *val)
{
	struct each_sum *es = arg;

	es->es_keys += key;
	es->es_vals += (uint32_t)(uintptr_t)val;
	es->es_n++;
}

static void sum_idx(void *arg, uint32_t key, uint32_t val)
{
	struct each_sum *es = arg;

	es->es_keys += key;
	es->es_vals += val;
	es->es_n++;
}

static void test_each(void **state)
{
	union anymap mm = { 0 }, mi = { 0 };
	struct each_sum sm = { 0 }, si = { 0 };
	uint64_t keys = 0, vals = 0;
	uint32_t v, n = 0;

	(void)state;
	u32map_each(&mm.am_map, sum_map, &sm);
	u32idx_each(&mi.am_idx, sum_idx, &si);
	assert_int_equal(sm.es_n + si.es_n, 0);
	for (uint32_t k = 1; k <= 3000; k++) {
		assert_int_equal(map_put(&mm, k * 13, val_of(k * 13)), 0);
		assert_int_equal(idx_put(&mi, k * 13, val_of(k * 13)), 0);
	}
	for (uint32_t k = 1; k <= 3000; k++) {
		if (k % 3) {
			assert_true(map_del(&mm, k * 13, &v));
			assert_true(idx_del(&mi, k * 13, &v));
		} else {
			keys += k * 13;
			vals += val_of(k * 13);
			n++;
		}
	}
	u32map_each(&mm.am_map, sum_map, &sm);
	u32idx_each(&mi.am_idx, sum_idx, &si);
	assert_int_equal(sm.es_n, n);
	assert_int_equal(sm.es_keys, keys);
	assert_int_equal(sm.es_vals, vals);
	assert_int_equal(si.es_n, n);
	assert_int_equal(si.es_keys, keys);
	assert_int_equal(si.es_vals, vals);
	map_free(&mm);
	idx_free(&mi);
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
	assert_int_equal(u32idx_count(&m), 5000);
	assert_true(m.ui_tab.t_cap > 2 * u32idx_count(&m));
	for (uint32_t k = 1; k <= 5000; k++) {
		assert_true(u32idx_get(&m, k * 7, &v));
		assert_int_equal(v, k ^ 0xdeadbeefu);
		assert_false(u32idx_get(&m, k * 7 + 1, &v));
	}
	/* replace keeps the count */
	assert_int_equal(u32idx_put(&m, 7, 42), 0);
	assert_true(u32idx_get(&m, 7, &v));
	assert_int_equal(v, 42);
	assert_int_equal(u32idx_count(&m), 5000);
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
	assert_int_equal(u32idx_count(&m), n);
	u32idx_each(&m, sum_idx, &es);
	assert_int_equal(es.es_n, n);
	assert_int_equal(es.es_keys, keys);
	assert_int_equal(es.es_vals, vals);
	/* churn through tombstones: the table does not fill with them */
	for (uint32_t r = 0; r < 20000; r++) {
		assert_int_equal(u32idx_put(&m, 1000000 + r, r), 0);
		assert_true(u32idx_del(&m, 1000000 + r, &v));
		assert_int_equal(v, r);
	}
	assert_int_equal(u32idx_count(&m), n);
	assert_true(m.ui_tab.t_used < m.ui_tab.t_cap / 2);
	u32idx_free(&m);
	assert_int_equal(m.ui_tab.t_cap, 0);
}

/* A test run on each map, named after it. */
#define ON_BOTH(f)	{ #f "_map", f, NULL, NULL, (void *)&map_ops }, \
			{ #f "_idx", f, NULL, NULL, (void *)&idx_ops }

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON_BOTH(test_reserved_keys),
		ON_BOTH(test_tombstones),
		ON_BOTH(test_churn),
		ON_BOTH(test_sweep_not_each_put),
		ON_BOTH(test_reserve_fill),
		cmocka_unit_test(test_each),
		cmocka_unit_test(test_u32idx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
