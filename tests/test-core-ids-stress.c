/*
 * Lock ids are never handed out twice in one lockspace: a randomized run
 * of the engine (1 to 3 nodes, folding on and off) mixing client-chosen
 * ids from reserved blocks (in random and repeated order, some under
 * another owner's name), block reservations and releases, engine-chosen
 * ids, unlocks, the id counter pushed near 2^32 (so it wraps) and full
 * recoveries; after every step the lock table and the folded locks' ids
 * of each node hold no id twice, and an id in use is never accepted
 * again.  Written by session 19's review of the fresh-id shortcut
 * (dlm_lkid_new, ib_fresh in core/): it fails with the ib_fresh look
 * removed ("id 1024 in use was taken again") and with the wrap flag never
 * set ("duplicate lock id 1").  SEEDS=N runs N seeds (default 5; 80 ran clean in review).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "core/core_internal.h"
#include "tests/test-core.h"

struct ids { uint32_t *v; size_t n, cap; };
static void collect(void *arg, struct dlm_hnode *n)
{
	struct ids *s = arg;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			fail_msg("no memory");
	}
	s->v[s->n++] = n->hn_hash;
}
static int cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}
static void check_unique(struct cluster *c, int node, unsigned step)
{
	struct ids s = {0};
	dlm_htab_walk(&c->ls[node]->ls_lkbtbl, collect, &s);
	dlm_htab_walk(&c->ls[node]->ls_soloids, collect, &s);
	if (s.n) qsort(s.v, s.n, 4, cmp);
	for (size_t i = 1; i < s.n; i++)
		if (s.v[i] == s.v[i - 1])
			fail_msg("step %u node %d: duplicate lock id %u", step, node, s.v[i]);
	free(s.v);
}

struct held { int node; uint64_t owner; uint32_t id; };
struct blk { int node; uint64_t owner; uint32_t first; int live; };

static unsigned long long rs;
static uint32_t rnd(void) { rs = rs * 6364136223846793005ULL + 1442695040888963407ULL; return (uint32_t)(rs >> 33); }

static void run(unsigned seed, int nodes, int fold, int rres)
{
	struct cluster *c = fold ? fold_cluster(nodes) : cluster_new(nodes, 1000);
	struct held h[4096]; int nh = 0;
	struct blk b[512]; int nb = 0;
	uint32_t ev = 2;
	char name[16];
	rs = seed;
	for (unsigned step = 0; step < 6000; step++) {
		int node = 1 + (int)(rnd() % (uint32_t)nodes);
		uint32_t op = rnd() % 100;
		struct dlm_ls *ls = c->ls[node];
		if (op < 8 && nb < 512 && (rres == 8 || step < 150)) {
			uint64_t o = 1 + rnd() % 3; uint32_t f;
			if (dlm_core_ids_reserve(ls, o, &f) == 0)
				b[nb++] = (struct blk){ node, o, f, 1 };
		} else if (op < 11 && nb) {
			struct blk *x = &b[rnd() % (uint32_t)nb];
			if (x->live) { dlm_core_ids_release(c->ls[x->node], x->first); x->live = 0; }
		} else if (op < 55 && nb && nh < 4096) {
			struct blk *x = &b[rnd() % (uint32_t)nb];
			uint32_t off = (rnd() & 1) ? rnd() % 8 : rnd() % DLM_IDS_BLOCK;
			uint32_t id = x->first + off, lkid = 0;
			uint64_t o = (rnd() % 10 == 0) ? 1 + rnd() % 3 : x->owner;
			ls = c->ls[x->node];
			bool inuse = dlm_lkid_in_use(ls, id);
			snprintf(name, sizeof(name), "n%u", rnd() % 40);
			struct dlm_lock_req rq = { .mode = (rnd() & 1) ? DLM_LOCK_NL : DLM_LOCK_EX,
				.flags = DLM_LKF_NOQUEUE, .name = name, .namelen = (unsigned)strlen(name),
				.owner = o, .astarg = o, .newid = id };
			int rv = dlm_core_lock(ls, &rq, &lkid);
			if (rv == 0 && inuse)
				fail_msg("step %u: id %u in use was taken again", step, id);
			if (rv == 0 && lkid == id && x->live && dlm_lkid_in_use(ls, id))
				h[nh++] = (struct held){ x->node, o, id };
		} else if (op < 80 && nh < 4096) {
			uint64_t o = 1 + rnd() % 3; uint32_t lkid = 0;
			snprintf(name, sizeof(name), "n%u", rnd() % 40);
			struct dlm_lock_req rq = { .mode = (rnd() & 1) ? DLM_LOCK_NL : DLM_LOCK_PR,
				.flags = DLM_LKF_NOQUEUE, .name = name, .namelen = (unsigned)strlen(name),
				.owner = o, .astarg = o };
			if (dlm_core_lock(ls, &rq, &lkid) == 0 && lkid)
				h[nh++] = (struct held){ node, o, lkid };
		} else if (op < 95 && nh) {
			int k = (int)(rnd() % (uint32_t)nh);
			if (k < 20) continue;
			(void)unlock(c, h[k].node, h[k].owner, h[k].id, 0, NULL);
			h[k] = h[--nh];
		} else if (op < 97) {
			/* as if many ids went by: the counter only moves on */
			uint32_t to = UINT32_MAX - (rnd() % (rres == 8 ? 3000 : 100));
			if (!ls->ls_lkid_wrapped && ls->ls_next_lkid < to && rnd() % 4 == 0)
				ls->ls_next_lkid = to;
		} else if (nodes > 1) {
			recover_all(c, ev++);
		}
		drain(c);
		c->nasts = 0;
		for (int i = 1; i <= nodes; i++)
			check_unique(c, i, step);
		if (step % 200 == 0)
			assert_verified(c);
	}
	cluster_free(c);
}

static void test_no_duplicate_ids(void **state)
{
	(void)state;
	const char *e = getenv("SEEDS");
	unsigned n = e ? (unsigned)atoi(e) : 5;
	for (unsigned s = 1; s <= n; s++) {
		for (int r = 1; r <= 8; r *= 8) { run(s, 1, 0, r); run(s, 1, 1, r); run(s, 2, 0, r); run(s, 2, 1, r); run(s, 3, 1, r); }
	}
}
int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_no_duplicate_ids) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
