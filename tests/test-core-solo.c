/*
 * tests/test-core-solo.c - unit tests of lone locks folded with their
 * resources (core/solo.c, issue 14): made only where they may be, seen
 * as locks and resources by every reader, unfolded whole by everything
 * that needs an lkb and an rsb (a second lock, a child, a conversion or
 * an unlock that writes the value, a recovery, a message), and an
 * unfolding without memory fails the call having changed nothing; what
 * leaves a lone lock lone (a cancel, a conversion that only reads, an
 * unlock that writes nothing, a dump) is done folded, answered as the
 * unfolded engine answers (the twin tests: the same calls on an engine
 * that folds and one that does not, the same answers, ASTs and dumps).
 * (The other test-core-* programs run with folding on too under
 * TEST_CORE_FOLD=1.)  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"
#include "core/core_internal.h"

static size_t nsolos(struct cluster *c, int node)
{
	return dlm_solo_count(c->ls[node]);
}

static size_t nlkbs(struct cluster *c, int node)
{
	return c->ls[node]->ls_lkbtbl.ht_count;
}

static size_t nrsbs(struct cluster *c, int node)
{
	return c->ls[node]->ls_rsbtbl.ht_count;
}

/* A lone lock is one record, counted as a lock, a resource and its
 * directory record; its completion and unlock ASTs are those of any
 * lock; its resource goes with it. */
static void test_solo_lock_unlock(void **state)
{
	struct cluster *c = fold_cluster(1);
	struct dlm_ls_stats st;
	struct rec_ast *a;
	uint32_t ex, nl;

	(void)state;
	ex = lock_on(c, 1, 7, "a", DLM_LOCK_EX, 0, 0, NULL);
	nl = lock_on(c, 1, 7, "b", DLM_LOCK_NL, DLM_LKF_NOQUEUE, 0, NULL);
	assert_int_equal(nsolos(c, 1), 2);
	assert_int_equal(nlkbs(c, 1), 0);
	assert_int_equal(nrsbs(c, 1), 0);
	a = comp_of(c, 1, ex);
	assert_non_null(a);
	assert_int_equal(a->a.status, 0);
	assert_int_equal(a->a.grmode, DLM_LOCK_EX);
	assert_int_equal(a->a.astarg, 7);
	assert_int_not_equal(a->a.token, 0);
	assert_int_equal(comp_of(c, 1, nl)->a.token, 0);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 2);
	assert_int_equal(st.ls_resources, 2);
	assert_int_equal(st.ls_dir_entries, 2);
	assert_verified(c);
	/* someone else's: refused, nothing unfolded */
	assert_int_equal(unlock(c, 1, 8, ex, 0, NULL), -EPERM);
	assert_int_equal(nsolos(c, 1), 2);
	assert_int_equal(unlock(c, 1, 7, ex, 0, NULL), 0);
	assert_status(c, 1, ex, -DLM_EUNLOCK);
	assert_int_equal(comp_of(c, 1, ex)->a.grmode, DLM_LOCK_EX);
	assert_int_equal(unlock(c, 1, 7, nl, DLM_LKF_FORCEUNLOCK, NULL), 0);
	assert_status(c, 1, nl, -DLM_EUNLOCK);
	assert_int_equal(unlock(c, 1, 7, nl, 0, NULL), -ENOENT);
	/* the resources stay tossed, as unused rsbs do, until toss_ms */
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 0);
	assert_int_equal(st.ls_resources, 2);
	assert_int_equal(st.ls_dir_entries, 2);
	assert_int_equal(st.ls_tossed, 2);
	assert_int_equal(c->ls[1]->ls_ownertbl.ht_count, 0);
	assert_verified(c);
	dlm_core_tick(c->core[1], 100000);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_resources, 0);
	assert_int_equal(st.ls_dir_entries, 0);
	assert_int_equal(st.ls_tossed, 0);
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	assert_verified(c);
	cluster_free(c);
}

/* A tossed lone lock's resource is taken again by the next lock on its
 * name that may fold (no allocation), dropped by one that may not (an
 * rsb takes its place), and max_tossed bounds them with the rsbs. */
static void test_solo_tossed(void **state)
{
	struct dlm_ls_stats st;
	struct cluster *c;
	uint32_t a, b;
	char name[16];
	int i;

	(void)state;
	cluster_max_tossed = 3;
	c = fold_cluster(1);
	cluster_max_tossed = 0;
	lock_on(c, 1, 1, "keep", DLM_LOCK_NL, 0, 0, NULL);
	a = lock_on(c, 1, 1, "a", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	b = lock_on(c, 1, 1, "a", DLM_LOCK_PR, 0, 0, NULL);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_int_not_equal(a, b);
	assert_status(c, 1, b, 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 0);
	assert_int_equal(nsolos(c, 1), 2);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, b, 0, NULL), 0);
	/* VALBLK does not fold: the tossed one goes, an rsb takes it */
	b = lock_on(c, 1, 1, "a", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_status(c, 1, b, 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 0);
	assert_int_equal(nrsbs(c, 1), 1);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(unlock(c, 1, 1, b, 0, NULL), 0);
	assert_int_equal(c->ls[1]->ls_ntossed, 1);
	assert_verified(c);
	/* five more tossed: three stay in all, tossed solos dropped first
	 * (oldest first), so the rsb and the two newest solos */
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
		assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	}
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_tossed, 3);
	assert_int_equal(st.ls_toss_evicted, 3);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 2);
	assert_int_equal(c->ls[1]->ls_ntossed, 1);
	assert_non_null(dlm_solo_find_key(c->ls[1], (const unsigned char *)"\2t4",
					  3, dlm_hash_bytes("\2t4", 3)));
	assert_null(dlm_solo_find_key(c->ls[1], (const unsigned char *)"\2t1",
				      3, dlm_hash_bytes("\2t1", 3)));
	assert_verified(c);
	cluster_free(c);
}

/* Not folded: folding off, VALBLK, PERSISTENT, a partial range, a value,
 * and any lockspace with another member. */
static void test_solo_not_folded(void **state)
{
	struct dlm_range part = { 0, 9 };
	char lvb[DLM_LVB_LEN] = "x";
	struct dlm_lock_req rq = {
		.mode = DLM_LOCK_PR, .name = "v", .namelen = 1, .owner = 1,
		.lvb = lvb,
	};
	struct cluster *c = cluster_new(1, 1000);
	char name[16];
	uint32_t id;

	(void)state;
	lock_on(c, 1, 1, "a", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 0);
	cluster_free(c);

	c = fold_cluster(1);
	lock_on(c, 1, 1, "a", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	lock_on(c, 1, 1, "b", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	lock_on(c, 1, 1, "c", DLM_LOCK_EX, 0, 0, &part);
	assert_int_equal(dlm_core_lock(c->ls[1], &rq, &id), 0);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(nlkbs(c, 1), 4);
	cluster_free(c);

	/* with other members, on a name another node directs: not at the
	 * request (it waits for its lookup), only once the lookup made this
	 * node master (tests/test-core-solo-shared.c) */
	c = fold_cluster(2);
	name_directed_by("a", 2, 2, name, sizeof(name));
	lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	name_directed_by("b", 2, 1, name, sizeof(name));
	lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1) + nsolos(c, 2), 0);
	drain(c);
	assert_int_equal(nsolos(c, 1) + nsolos(c, 2), 2);
	cluster_free(c);
}

/* A second lock on the name finds the first as an lkb on its rsb: it
 * blocks it, basts it, and is granted when it goes. */
static void test_solo_second_lock(void **state)
{
	struct cluster *c = fold_cluster(1);
	uint32_t pr, ex;

	(void)state;
	pr = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 1);
	/* refused: it stays lone (test_solo_trylock_refused) */
	assert_int_equal(try_lock(c, 1, 2, "r", DLM_LOCK_EX, DLM_LKF_NOQUEUE),
			 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_verified(c);
	ex = lock_on(c, 1, 2, "r", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(nlkbs(c, 1), 2);
	assert_int_equal(nrsbs(c, 1), 1);
	assert_no_comp(c, 1, ex);
	assert_int_equal(last_bast_mode(c, 1, pr), DLM_LOCK_EX);
	assert_dump_has(c, 1, "waiting");
	assert_int_equal(unlock(c, 1, 1, pr, 0, NULL), 0);
	assert_status(c, 1, pr, -DLM_EUNLOCK);
	assert_status(c, 1, ex, 0);
	assert_verified(c);
	cluster_free(c);
}

/* A conversion, a cancel and an unlock with a value work on the lock
 * unfolded; a child names an unfolded parent. */
static void test_solo_convert_cancel_child(void **state)
{
	struct cluster *c = fold_cluster(1);
	char lvb[DLM_LVB_LEN] = "value";
	uint32_t a, b, d, child;

	(void)state;
	a = lock_on(c, 1, 1, "a", DLM_LOCK_NL, 0, 0, NULL);
	b = lock_on(c, 1, 1, "b", DLM_LOCK_PW, 0, 0, NULL);
	d = lock_on(c, 1, 1, "d", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 3);
	/* another owner converts nothing */
	assert_int_equal(convert(c, 1, 2, a, DLM_LOCK_EX, 0, NULL), -EPERM);
	assert_int_equal(nsolos(c, 1), 3);
	/* one that makes it persistent is done on it as an lkb */
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, DLM_LKF_PERSISTENT,
				 NULL), 0);
	assert_status(c, 1, a, 0);
	assert_int_equal(comp_of(c, 1, a)->a.grmode, DLM_LOCK_EX);
	assert_int_not_equal(comp_of(c, 1, a)->a.token, 0);
	assert_int_equal(nsolos(c, 1), 2);
	/* a granted lock has nothing to cancel: answered folded */
	assert_int_equal(unlock(c, 1, 1, b, DLM_LKF_CANCEL, NULL), -EBUSY);
	assert_int_equal(nsolos(c, 1), 2);
	/* an unlock from PW with a value writes it: on an rsb */
	assert_int_equal(unlock(c, 1, 1, b, DLM_LKF_VALBLK, lvb), 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_status(c, 1, b, -DLM_EUNLOCK);
	child = lock_on(c, 1, 1, "c", DLM_LOCK_EX, 0, d, NULL);
	assert_status(c, 1, child, 0);
	assert_int_equal(nsolos(c, 1), 0);
	/* the parent is an lkb with a child: not unlocked before it */
	assert_int_equal(unlock(c, 1, 1, d, 0, NULL), -EBUSY);
	assert_verified(c);
	assert_dump_has(c, 1, "lvb 76616c7565");
	cluster_free(c);
}

/* Without memory to unfold, the call that needed it fails and nothing
 * changes: the lone lock is still there, whole; with memory again the
 * same calls succeed. */
static void test_solo_unfold_no_memory(void **state)
{
	struct cluster *c = fold_cluster(1);
	uint64_t token;
	char *text;
	uint32_t a;

	(void)state;
	a = lock_on(c, 1, 1, "a", DLM_LOCK_PR, 0, 0, NULL);
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(try_lock(c, 1, 2, "a", DLM_LOCK_PR, 0), -ENOMEM);
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, DLM_LKF_PERSISTENT,
				 NULL), -ENOMEM);
	/* these need no unfolding (nothing to cancel; a dump shows it
	 * folded) */
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_CANCEL, NULL), -EBUSY);
	assert_int_equal(dlm_core_ls_dump(c->ls[1], &text), 0);
	free(text);
	assert_int_equal(dlm_core_ls_stop(c->ls[1]), 0);
	assert_int_equal(dlm_core_ls_start(c->ls[1], 2,
					   (const uint32_t[]){ 1 }, 1), -ENOMEM);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(nlkbs(c, 1), 0);
	assert_int_equal(nrsbs(c, 1), 0);
	assert_int_equal(c->ls[1]->ls_ownertbl.ht_count, 1);
	assert_int_equal(dlm_core_lock_token(c->ls[1], a, 1, &token), -ENOENT);
	assert_verified(c);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_int_equal(dlm_core_ls_start(c->ls[1], 2,
					   (const uint32_t[]){ 1 }, 1), 0);
	drain(c);
	assert_int_equal(dlm_core_ls_finish(c->ls[1], 2), 0);
	/* the same members: it stays folded (solo.c, "Recovery") */
	assert_int_equal(nsolos(c, 1), 1);
	assert_status(c, 1, a, 0);
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, 0, NULL), 0);
	assert_status(c, 1, a, 0);
	assert_int_equal(comp_of(c, 1, a)->a.grmode, DLM_LOCK_EX);
	assert_int_equal(dlm_core_lock_token(c->ls[1], a, 1, &token), 0);
	assert_verified(c);
	cluster_free(c);
}

/* A node alone folds its locks; a node joining finds those whose
 * directory moved to it unfolded by the recovery and the rest folded,
 * all mastered here, and its conflicting lock waits for them. */
static void test_solo_node_joins(void **state)
{
	struct cluster *c = fold_cluster(2);
	uint32_t ids[8], theirs[8];
	unsigned char key[16];
	char name[16];
	int k, stay;

	(void)state;
	c->dead[2] = 1;
	recover_all(c, 2);
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		ids[k] = lock_on(c, 1, 1, name, DLM_LOCK_PR, 0, 0, NULL);
	}
	assert_int_equal(nsolos(c, 1), 8);
	c->dead[2] = 0;
	recover_all(c, 3);
	for (k = 0, stay = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		key[0] = (unsigned char)strlen(name);
		memcpy(key + 1, name, key[0]);
		if (dlm_dir_nodeid_of((const uint32_t[]){ 1, 2 }, 2,
				      dlm_hash_bytes(key, key[0] + 1u)) == 1)
			stay++;
	}
	assert_int_equal(nsolos(c, 1), stay);
	assert_int_equal(c->ls[1]->ls_unfolds_rec, 8 - stay);
	for (k = 0; k < 8; k++) {
		assert_status(c, 1, ids[k], 0);
		snprintf(name, sizeof(name), "k%d", k);
		theirs[k] = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	}
	drain(c);
	for (k = 0; k < 8; k++) {
		assert_no_comp(c, 2, theirs[k]);
		assert_int_equal(last_bast_mode(c, 1, ids[k]), DLM_LOCK_EX);
		assert_int_equal(unlock(c, 1, 1, ids[k], 0, NULL), 0);
	}
	drain(c);
	for (k = 0; k < 8; k++)
		assert_status(c, 2, theirs[k], 0);
	/* node 2's lookups unfolded the rest; its locks are lkbs */
	assert_int_equal(nsolos(c, 1) + nsolos(c, 2), 0);
	assert_verified(c);
	cluster_free(c);
}

/* A message (here one of a node that is no member) is taken only with
 * the lone lock it names unfolded; without memory it is not taken. */
static void test_solo_message_unfolds(void **state)
{
	struct cluster *c = fold_cluster(1);
	unsigned char buf[DLM_WIRE_MAX_LEN];
	size_t len = clock_msg(buf, sizeof(buf), dlm_core_ls_id(c->ls[1]),
			       2, 1, 5);

	(void)state;
	struct dlm_msg m;
	int rlen;

	lock_on(c, 1, 1, "a", DLM_LOCK_EX, 0, 0, NULL);
	/* a lock message of a non-member (a stray, a departed node's late
	 * one) is dropped and unfolds nothing, memory or not */
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, len), -EPERM);
	assert_int_equal(nsolos(c, 1), 1);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, len), -EPERM);
	assert_int_equal(nsolos(c, 1), 1);
	/* a recovery message (a new member's, before our stop) is only
	 * noted while the lockspace runs, unfolding nothing; once it has
	 * stopped, it unfolds the one it names first (an RC_STATUS names
	 * none); without memory it is refused, nothing changed */
	memset(&m, 0, sizeof(m));
	m.m_type = DLM_RC_STATUS;
	m.m_lsid = dlm_core_ls_id(c->ls[1]);
	m.m_from = 2;
	m.m_to = 1;
	m.m_gen = 2;
	rlen = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(rlen > 0);
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)rlen), 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(dlm_core_ls_stop(c->ls[1]), 0);
	(void)dlm_core_receive(c->core[1], 2, buf, (size_t)rlen);
	assert_int_equal(nsolos(c, 1), 1);
	m.m_type = DLM_RC_LOOKUP;
	m.m_key = (const unsigned char *)"\001a";
	m.m_keylen = 2;
	m.m_nodeid = 2;
	rlen = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(rlen > 0);
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)rlen),
			 -ENOMEM);
	assert_int_equal(nsolos(c, 1), 1);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	(void)dlm_core_receive(c->core[1], 2, buf, (size_t)rlen);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(nlkbs(c, 1), 1);
	assert_verified(c);
	cluster_free(c);
}

/* A purge takes an owner's lone locks with its others, with no AST;
 * reserved ids are taken by lone locks too, and only once. */
static void test_solo_purge_and_ids(void **state)
{
	struct cluster *c = fold_cluster(1);
	struct dlm_lock_req rq = {
		.mode = DLM_LOCK_EX, .name = "n", .namelen = 1, .owner = 5,
	};
	int nasts;
	uint32_t first, id, x;

	(void)state;
	assert_int_equal(dlm_core_ids_reserve(c->ls[1], 5, &first), 0);
	rq.newid = first + 3;
	assert_int_equal(dlm_core_lock(c->ls[1], &rq, &id), 0);
	assert_int_equal(id, first + 3);
	assert_int_equal(nsolos(c, 1), 1);
	rq.name = "m";
	assert_int_equal(dlm_core_lock(c->ls[1], &rq, &id), -EEXIST);
	lock_on(c, 1, 5, "a", DLM_LOCK_EX, 0, 0, NULL);
	x = lock_on(c, 1, 5, "shared", DLM_LOCK_PR, 0, 0, NULL);
	lock_on(c, 1, 6, "shared", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 2);
	nasts = c->nasts;
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 5), 3);
	assert_int_equal(c->nasts, nasts);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(unlock(c, 1, 5, x, 0, NULL), -ENOENT);
	assert_int_equal(nlkbs(c, 1), 1);
	assert_verified(c);
	cluster_free(c);
}

struct walked {
	int n;
	struct dlm_lock_info li;
};

static void walk_fn(void *arg, const struct dlm_lock_info *li)
{
	struct walked *w = arg;

	w->n++;
	w->li = *li;
}

/* The walk shows a lone lock as the lock it stands for. */
static void test_solo_walk(void **state)
{
	struct cluster *c = fold_cluster(1);
	struct walked w = { 0 };
	uint32_t id;

	(void)state;
	id = lock_on(c, 1, 3, "walk", DLM_LOCK_CW, DLM_LKF_NOQUEUE, 0, NULL);
	dlm_core_ls_walk(c->ls[1], walk_fn, &w);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.li.lkid, id);
	assert_int_equal(w.li.nodeid, 1);
	assert_true(w.li.is_master);
	assert_false(w.li.is_master_copy);
	assert_int_equal(w.li.status, DLM_LKSTS_GRANTED);
	assert_int_equal(w.li.grmode, DLM_LOCK_CW);
	assert_int_equal(w.li.rqmode, DLM_LOCK_IV);
	assert_int_equal(w.li.owner, 3);
	assert_int_equal(w.li.exflags, DLM_LKF_NOQUEUE);
	assert_int_equal(w.li.keylen, 5);
	assert_memory_equal(w.li.key, "\4walk", 5);
	assert_int_equal(w.li.token, comp_of(c, 1, id)->a.token);
	cluster_free(c);
}

/* ---- the folded engine answers as the unfolded one: the same calls on
 * a cluster that folds and one that does not give the same return
 * values, the same ASTs and the same dump ---- */

struct twin {
	struct cluster *f, *u;	/* folds; does not */
	int seen;		/* ASTs compared so far */
};

/* the harness finds a node's cluster by the node (nctx): the one the
 * calls that follow are on */
static void use(struct cluster *c)
{
	int i;

	for (i = 1; i <= c->n; i++)
		nctx[i].c = c;
}

static void twin_new(struct twin *t)
{
	t->f = fold_cluster(1);
	t->u = cluster_new(1, 1000);
	t->seen = 0;
}

static void twin_free(struct twin *t)
{
	cluster_free(t->f);
	cluster_free(t->u);
}

/* the ASTs since the last call, and the dumps, are the same */
static void twin_same(struct twin *t)
{
	char *df, *du;
	int i;

	assert_int_equal(t->f->nasts, t->u->nasts);
	for (i = t->seen; i < t->f->nasts; i++) {
		const struct rec_ast *a = &t->f->asts[i], *b = &t->u->asts[i];

		assert_int_equal(a->a.type, b->a.type);
		assert_int_equal(a->a.lkid, b->a.lkid);
		assert_int_equal(a->a.status, b->a.status);
		assert_int_equal(a->a.grmode, b->a.grmode);
		assert_int_equal(a->a.bastmode, b->a.bastmode);
		assert_int_equal(a->a.sbflags, b->a.sbflags);
		assert_int_equal(a->a.astarg, b->a.astarg);
		assert_int_equal(a->a.token, b->a.token);
		assert_int_equal(a->has_lvb, b->has_lvb);
		if (a->has_lvb)
			assert_memory_equal(a->lvb, b->lvb, DLM_LVB_LEN);
	}
	t->seen = t->f->nasts;
	df = dump(t->f, 1);
	du = dump(t->u, 1);
	assert_string_equal(df, du);
	free(df);
	free(du);
	assert_verified(t->f);
	assert_verified(t->u);
}

static uint32_t twin_lock(struct twin *t, uint64_t owner, const char *name,
			  int mode, uint32_t flags)
{
	uint32_t a;

	use(t->f);
	a = lock_on(t->f, 1, owner, name, mode, flags, 0, NULL);
	use(t->u);
	assert_int_equal(lock_on(t->u, 1, owner, name, mode, flags, 0, NULL), a);
	twin_same(t);
	return a;
}

static int twin_convert(struct twin *t, uint64_t owner, uint32_t lkid,
			int mode, uint32_t flags, const char *lvb)
{
	int rv;

	use(t->f);
	rv = convert(t->f, 1, owner, lkid, mode, flags, lvb);
	use(t->u);
	assert_int_equal(convert(t->u, 1, owner, lkid, mode, flags, lvb), rv);
	twin_same(t);
	return rv;
}

static int twin_unlock(struct twin *t, uint64_t owner, uint32_t lkid,
		       uint32_t flags, const char *lvb)
{
	int rv;

	use(t->f);
	rv = unlock(t->f, 1, owner, lkid, flags, lvb);
	use(t->u);
	assert_int_equal(unlock(t->u, 1, owner, lkid, flags, lvb), rv);
	twin_same(t);
	return rv;
}

/* A dump shows lone locks, held and tossed, as the unfolded engine's
 * dump shows their rsbs and lkbs, and leaves them folded (a dump every
 * minute must not undo the fold). */
static void test_solo_dump_folded(void **state)
{
	char lvb[DLM_LVB_LEN] = "value";
	struct twin t;
	uint32_t c, v;
	size_t i;
	char *text;

	(void)state;
	twin_new(&t);
	twin_lock(&t, 1, "ex", DLM_LOCK_EX, 0);
	twin_lock(&t, 2, "pr", DLM_LOCK_PR, DLM_LKF_NOQUEUE);
	twin_lock(&t, 3, "nl", DLM_LOCK_NL, 0);
	twin_lock(&t, 3, "\x01\"odd/", DLM_LOCK_CW, 0);
	c = twin_lock(&t, 1, "gone", DLM_LOCK_PW, 0);
	/* not folded: an LVB; a second lock on a name */
	v = twin_lock(&t, 1, "valblk", DLM_LOCK_EX, DLM_LKF_VALBLK);
	twin_convert(&t, 1, v, DLM_LOCK_NL, DLM_LKF_VALBLK, lvb);
	twin_lock(&t, 2, "ex", DLM_LOCK_NL, 0);
	/* tossed */
	twin_unlock(&t, 1, c, 0, NULL);
	assert_int_equal(nsolos(t.f, 1), 3);
	assert_int_equal(t.f->ls[1]->ls_nsolo_tossed, 1);
	for (i = 0; i < 3; i++) {
		text = dump(t.f, 1);
		free(text);
	}
	assert_int_equal(nsolos(t.f, 1), 3);
	assert_int_equal(t.f->ls[1]->ls_nsolo_tossed, 1);
	assert_dump_has(t.f, 1, "resource \"gone\" master 1 master-copy dir 1 unused");
	assert_dump_has(t.f, 1, "  granted ");
	twin_same(&t);
	twin_free(&t);
}

/* A cancel of a lone lock is answered as the unfolded engine answers a
 * granted lock's (-EBUSY: nothing to cancel; its cookie the cancel's),
 * without unfolding it, so without memory too; an unlock with VALBLK
 * or IVVALBLK below PW writes nothing: done folded. */
static void test_solo_cancel_unlock_folded(void **state)
{
	char lvb[DLM_LVB_LEN] = "not written";
	struct twin t;
	uint32_t a, b, d;

	(void)state;
	twin_new(&t);
	a = twin_lock(&t, 1, "a", DLM_LOCK_EX, 0);
	b = twin_lock(&t, 1, "b", DLM_LOCK_PR, 0);
	d = twin_lock(&t, 1, "d", DLM_LOCK_CW, 0);
	dlm_core_set_alloc_hook(t.f->core[1], fail_all, NULL);
	dlm_core_set_alloc_hook(t.u->core[1], fail_all, NULL);
	assert_int_equal(twin_unlock(&t, 2, a, DLM_LKF_CANCEL, NULL), -EPERM);
	assert_int_equal(twin_unlock(&t, 1, a, DLM_LKF_CANCEL, NULL), -EBUSY);
	assert_int_equal(twin_unlock(&t, 1, a, DLM_LKF_CANCEL |
				     DLM_LKF_FORCEUNLOCK, NULL), -EBUSY);
	assert_int_equal(twin_unlock(&t, 1, b, DLM_LKF_CANCEL |
				     DLM_LKF_VALBLK, NULL), -EBUSY);
	assert_int_equal(nsolos(t.f, 1), 3);
	assert_int_equal(twin_unlock(&t, 1, b, DLM_LKF_VALBLK, lvb), 0);
	assert_int_equal(twin_unlock(&t, 1, d, DLM_LKF_IVVALBLK, NULL), 0);
	dlm_core_set_alloc_hook(t.f->core[1], NULL, NULL);
	dlm_core_set_alloc_hook(t.u->core[1], NULL, NULL);
	assert_int_equal(nsolos(t.f, 1), 1);
	assert_int_equal(nlkbs(t.f, 1), 0);
	/* the cancel's cookie is the lock's, as there */
	assert_int_equal(twin_unlock(&t, 1, a, 0, NULL), 0);
	/* at PW and above they write: an rsb keeps the value */
	b = twin_lock(&t, 1, "b", DLM_LOCK_PW, 0);
	assert_int_equal(twin_unlock(&t, 1, b, DLM_LKF_VALBLK, lvb), 0);
	d = twin_lock(&t, 1, "b", DLM_LOCK_PR, DLM_LKF_VALBLK);
	assert_memory_equal(comp_of(t.f, 1, d)->lvb, lvb, DLM_LVB_LEN);
	twin_free(&t);
}

/* A conversion of a lone lock that leaves it lone (every conversion:
 * it is alone) is done folded unless it writes or invalidates the
 * value (a down-conversion from PW or EX with VALBLK or IVVALBLK), has
 * a partial range, or makes it persistent; with VALBLK below PW it
 * reads the resource's value (zeros) as the unfolded engine does; a
 * refused one leaves it folded. */
static void test_solo_convert_folded(void **state)
{
	char lvb[DLM_LVB_LEN] = "written";
	struct dlm_range part = { 0, 9 };
	struct twin t;
	uint32_t a, b, d;
	size_t n;

	(void)state;
	twin_new(&t);
	a = twin_lock(&t, 1, "a", DLM_LOCK_NL, 0);
	b = twin_lock(&t, 1, "b", DLM_LOCK_EX, 0);
	d = twin_lock(&t, 2, "d", DLM_LOCK_PR, 0);
	/* refused: nothing unfolded */
	assert_int_equal(twin_convert(&t, 1, a, DLM_LOCK_NL, DLM_LKF_EXPEDITE,
				      NULL), -EINVAL);
	assert_int_equal(twin_convert(&t, 1, b, DLM_LOCK_NL, DLM_LKF_VALBLK,
				      NULL), -EINVAL);
	assert_int_equal(twin_convert(&t, 2, d, DLM_LOCK_NL, DLM_LKF_QUECVT,
				      NULL), -EINVAL);
	assert_int_equal(nsolos(t.f, 1), 3);
	/* reads */
	assert_int_equal(twin_convert(&t, 1, a, DLM_LOCK_PR, DLM_LKF_VALBLK,
				      NULL), 0);
	assert_true(comp_of(t.f, 1, a)->has_lvb);
	assert_int_equal(twin_convert(&t, 1, a, DLM_LOCK_EX, DLM_LKF_VALBLK,
				      NULL), 0);
	assert_int_equal(twin_convert(&t, 2, d, DLM_LOCK_EX, DLM_LKF_QUECVT |
				      DLM_LKF_NOQUEUE, NULL), 0);
	/* down without a value: writes nothing */
	assert_int_equal(twin_convert(&t, 1, a, DLM_LOCK_PR, 0, NULL), 0);
	assert_int_equal(twin_convert(&t, 1, b, DLM_LOCK_CW, 0, NULL), 0);
	assert_int_equal(twin_convert(&t, 1, b, DLM_LOCK_EX, 0, NULL), 0);
	assert_int_equal(nsolos(t.f, 1), 3);
	assert_int_equal(nlkbs(t.f, 1), 0);
	/* these unfold */
	n = 3;
	assert_int_equal(twin_convert(&t, 1, b, DLM_LOCK_NL, DLM_LKF_VALBLK,
				      lvb), 0);
	assert_int_equal(nsolos(t.f, 1), --n);
	use(t.f);
	assert_int_equal(convert(t.f, 1, 2, d, DLM_LOCK_PR, 0, NULL), 0);
	use(t.u);
	assert_int_equal(convert(t.u, 1, 2, d, DLM_LOCK_PR, 0, NULL), 0);
	{
		struct dlm_lock_req rq = {
			.mode = DLM_LOCK_NL, .flags = DLM_LKF_CONVERT,
			.lkid = d, .owner = 2, .astarg = 2, .want_bast = 1,
			.range = &part,
		};
		uint32_t out;

		use(t.f);
		assert_int_equal(dlm_core_lock(t.f->ls[1], &rq, &out), 0);
		use(t.u);
		assert_int_equal(dlm_core_lock(t.u->ls[1], &rq, &out), 0);
	}
	twin_same(&t);
	assert_int_equal(nsolos(t.f, 1), --n);
	assert_int_equal(twin_convert(&t, 1, a, DLM_LOCK_NL,
				      DLM_LKF_PERSISTENT, NULL), 0);
	assert_int_equal(nsolos(t.f, 1), --n);
	/* the value written is there for the next reader */
	b = twin_lock(&t, 3, "b", DLM_LOCK_PR, DLM_LKF_VALBLK);
	assert_memory_equal(comp_of(t.f, 1, b)->lvb, lvb, DLM_LVB_LEN);
	twin_free(&t);
}

/* A lone lock converted folded, then unfolded by a node's join (its
 * name is one the joiner directs: the others stay folded, solo.c
 * "Recovery"), is the lock the unfolded engine has: the same dump, the
 * same value read (recovery may take a reader's copy as the
 * resource's). */
static void test_solo_convert_then_join(void **state)
{
	struct cluster *f = fold_cluster(2), *u = cluster_new(2, 1000);
	struct cluster *cs[2] = { f, u };
	char *df, *du, name[16];
	int i;

	(void)state;
	name_directed_by("r", 2, 2, name, sizeof(name));
	for (i = 0; i < 2; i++) {
		struct cluster *c = cs[i];
		uint32_t a;

		use(c);
		c->dead[2] = 1;
		recover_all(c, 2);
		a = lock_on(c, 1, 1, name, DLM_LOCK_NL, 0, 0, NULL);
		assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_PR,
					 DLM_LKF_VALBLK, NULL), 0);
		assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_NL, 0, NULL), 0);
		assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, 0, NULL), 0);
		if (c == f)
			assert_int_equal(nsolos(c, 1), 1);
		c->dead[2] = 0;
		recover_all(c, 3);
	}
	assert_int_equal(nsolos(f, 1), 0);
	df = dump(f, 1);
	du = dump(u, 1);
	assert_string_equal(df, du);
	free(df);
	free(du);
	assert_verified(f);
	cluster_free(f);
	cluster_free(u);
}

/* A NOQUEUE request that a held lone lock refuses (no mode it may take
 * is compatible) is refused as the unfolded engine refuses it (the
 * completion -EAGAIN, a lock id taken) and leaves the lone lock folded:
 * a try-lock on it unfolded it for good; it needs no memory either.
 * One it does not refuse (an alternate mode that fits, NOQUEUEBAST's
 * BAST) unfolds it as before. */
static void test_solo_trylock_refused(void **state)
{
	struct twin t;
	uint32_t ex, pr, id;

	(void)state;
	twin_new(&t);
	ex = twin_lock(&t, 1, "ex", DLM_LOCK_EX, 0);
	pr = twin_lock(&t, 1, "pr", DLM_LOCK_PR, 0);
	id = twin_lock(&t, 2, "ex", DLM_LOCK_NL, DLM_LKF_NOQUEUE);
	assert_int_equal(nsolos(t.f, 1), 1);	/* NL beside EX: granted */
	twin_unlock(&t, 2, id, 0, NULL);
	twin_unlock(&t, 1, ex, 0, NULL);
	ex = twin_lock(&t, 1, "ex2", DLM_LOCK_EX, 0);
	id = twin_lock(&t, 2, "ex2", DLM_LOCK_PR, DLM_LKF_NOQUEUE);
	assert_int_equal(comp_of(t.f, 1, id)->a.status, -EAGAIN);
	id = twin_lock(&t, 1, "pr", DLM_LOCK_EX, DLM_LKF_NOQUEUE |
		       DLM_LKF_ALTCW);
	assert_int_equal(comp_of(t.f, 1, id)->a.status, -EAGAIN);
	assert_int_equal(nsolos(t.f, 1), 2);
	assert_int_equal(nlkbs(t.f, 1), 0);
	/* without memory: refused all the same, nothing unfolded */
	use(t.f);
	dlm_core_set_alloc_hook(t.f->core[1], fail_all, NULL);
	assert_int_equal(try_lock(t.f, 1, 3, "ex2", DLM_LOCK_CW,
				  DLM_LKF_NOQUEUE), 0);
	dlm_core_set_alloc_hook(t.f->core[1], NULL, NULL);
	assert_int_equal(nsolos(t.f, 1), 2);
	assert_verified(t.f);
	use(t.u);
	assert_int_equal(try_lock(t.u, 1, 3, "ex2", DLM_LOCK_CW,
				  DLM_LKF_NOQUEUE), 0);
	twin_same(&t);
	/* these unfold: an alternate that fits; a BAST to send */
	id = twin_lock(&t, 2, "pr", DLM_LOCK_EX, DLM_LKF_NOQUEUE |
		       DLM_LKF_ALTPR);
	assert_int_equal(comp_of(t.f, 1, id)->a.status, 0);
	assert_int_equal(nsolos(t.f, 1), 1);
	id = twin_lock(&t, 2, "ex2", DLM_LOCK_EX, DLM_LKF_NOQUEUE |
		       DLM_LKF_NOQUEUEBAST);
	assert_int_equal(comp_of(t.f, 1, id)->a.status, -EAGAIN);
	assert_int_equal(last_bast_mode(t.f, 1, ex), DLM_LOCK_EX);
	assert_int_equal(nsolos(t.f, 1), 0);
	(void)pr;
	twin_free(&t);
}

/* Fresh lock ids (resource.c dlm_lkid_new): until the counter wraps, the
 * id it hands out is taken without a look in the tables (issue 14: that
 * look cost a cache miss a lock with millions held); after the wrap, and
 * after a block reservation that took the counter back, an id still in
 * use by an lkb or a folded lock, or in a reserved block, is skipped as
 * it always was. */
static void test_lkid_wrap(void **state)
{
	struct cluster *c = fold_cluster(1);
	struct dlm_ls *ls = c->ls[1];
	uint32_t solo, lk1, lk2, f, g, id, top[3], k;
	char name[16];

	(void)state;
	solo = lock_on(c, 1, 7, "s", DLM_LOCK_EX, 0, 0, NULL);
	lk1 = lock_on(c, 1, 7, "x", DLM_LOCK_NL, 0, 0, NULL);
	lk2 = lock_on(c, 1, 7, "x", DLM_LOCK_NL, 0, 0, NULL);
	assert_int_equal(solo, 1);
	assert_non_null(dlm_solo_find_id(ls, solo));
	/* "x" unfolded at its second lock: ids 2 and 3 are lkbs */
	assert_int_equal(lk1, 2);
	assert_int_equal(lk2, 3);
	assert_int_equal(dlm_core_ids_reserve(ls, 7, &f), 0);
	assert_int_equal(f, DLM_IDS_BLOCK);
	assert_false(ls->ls_lkid_wrapped);
	/* the last ids before 2^32, then past it: 0 and the ids of the
	 * solo and the two lkbs are skipped */
	ls->ls_next_lkid = UINT32_MAX - 2;
	for (k = 0; k < 3; k++) {
		snprintf(name, sizeof(name), "top%u", k);
		top[k] = lock_on(c, 1, 7, name, DLM_LOCK_EX, 0, 0, NULL);
		assert_int_equal(top[k], UINT32_MAX - 2 + k);
	}
	assert_true(ls->ls_lkid_wrapped);
	id = lock_on(c, 1, 7, "w1", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(id, 4);
	/* and the ids of the reserved block */
	ls->ls_next_lkid = f - 1;
	id = lock_on(c, 1, 7, "w2", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(id, f - 1);
	id = lock_on(c, 1, 7, "w3", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(id, f + DLM_IDS_BLOCK);
	assert_verified(c);
	cluster_free(c);

	/* a reservation past 2^32 finds a block below the ids in use */
	c = fold_cluster(1);
	ls = c->ls[1];
	ls->ls_next_lkid = 2 * DLM_IDS_BLOCK;
	id = lock_on(c, 1, 7, "hi", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(id, 2 * DLM_IDS_BLOCK);
	ls->ls_next_lkid = UINT32_MAX - 10;
	assert_int_equal(dlm_core_ids_reserve(ls, 7, &g), 0);
	assert_int_equal(g, DLM_IDS_BLOCK);
	id = lock_on(c, 1, 7, "next", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(id, 2 * DLM_IDS_BLOCK + 1);
	assert_true(ls->ls_lkid_wrapped);
	assert_verified(c);
	cluster_free(c);
}

int main(void)
{
	/* these tests choose folding per cluster (fold_cluster) */
	unsetenv("TEST_CORE_FOLD");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_solo_lock_unlock),
		cmocka_unit_test(test_solo_tossed),
		cmocka_unit_test(test_solo_not_folded),
		cmocka_unit_test(test_solo_second_lock),
		cmocka_unit_test(test_solo_convert_cancel_child),
		cmocka_unit_test(test_solo_unfold_no_memory),
		cmocka_unit_test(test_solo_node_joins),
		cmocka_unit_test(test_solo_message_unfolds),
		cmocka_unit_test(test_solo_purge_and_ids),
		cmocka_unit_test(test_solo_walk),
		cmocka_unit_test(test_solo_dump_folded),
		cmocka_unit_test(test_solo_cancel_unlock_folded),
		cmocka_unit_test(test_solo_convert_folded),
		cmocka_unit_test(test_solo_convert_then_join),
		cmocka_unit_test(test_solo_trylock_refused),
		cmocka_unit_test(test_lkid_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
