/*
 * tests/test-core-modes.c - unit tests of the lock engine: modes and
 * queues.  The compatibility matrix, queue order (FIFO, EXPEDITE,
 * NOORDER, HEADQUE), conversions and their deadlocks, blocking and
 * alternate-mode ASTs, cancel and forced unlock, operations overlapping
 * one in flight, refused input.  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"

/* Every pair of modes on one node: the second request is granted exactly
 * when the matrix says compatible; otherwise NOQUEUE refuses it. */
static void test_mode_matrix(void **state)
{
	static const int expect[6][6] = {
		{ 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 0 },
		{ 1, 1, 1, 0, 0, 0 }, { 1, 1, 0, 1, 0, 0 },
		{ 1, 1, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0, 0 },
	};
	int a, b;

	(void)state;
	for (a = 0; a < 6; a++) {
		for (b = 0; b < 6; b++) {
			struct cluster *c = cluster_new(1, 1000);
			uint32_t l1 = lock_on(c, 1, 1, "res", a, 0, 0, NULL);
			uint32_t l2 = lock_on(c, 1, 2, "res", b, DLM_LKF_NOQUEUE, 0, NULL);

			assert_int_equal(dlm_modes_compat(a, b), expect[a][b]);
			assert_status(c, 1, l1, 0);
			assert_status(c, 1, l2, expect[a][b] ? 0 : -EAGAIN);
			cluster_free(c);
		}
	}
}

static void test_fifo_and_expedite(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t ex, pr, nl, nl2;

	(void)state;
	ex = lock_on(c, 1, 1, "r", DLM_LOCK_EX, 0, 0, NULL);
	pr = lock_on(c, 1, 2, "r", DLM_LOCK_PR, 0, 0, NULL);
	assert_no_comp(c, 1, pr);
	/* NL is compatible with EX, but waits behind the queued PR */
	nl = lock_on(c, 1, 3, "r", DLM_LOCK_NL, 0, 0, NULL);
	assert_no_comp(c, 1, nl);
	/* EXPEDITE jumps the queue */
	nl2 = lock_on(c, 1, 4, "r", DLM_LOCK_NL, DLM_LKF_EXPEDITE, 0, NULL);
	assert_status(c, 1, nl2, 0);
	assert_dump_has(c, 1, "waiting");
	assert_int_equal(unlock(c, 1, 1, ex, 0, NULL), 0);
	assert_status(c, 1, ex, -DLM_EUNLOCK);
	assert_status(c, 1, pr, 0);
	assert_status(c, 1, nl, 0);
	cluster_free(c);
}

static void test_noorder_headque(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t pw, ex, cr, pr;

	(void)state;
	pw = lock_on(c, 1, 1, "r", DLM_LOCK_PW, 0, 0, NULL);
	ex = lock_on(c, 1, 2, "r", DLM_LOCK_EX, 0, 0, NULL);
	/* CR is compatible with PW; NOORDER grants it past the queued EX */
	cr = lock_on(c, 1, 3, "r", DLM_LOCK_CR, DLM_LKF_NOORDER, 0, NULL);
	assert_status(c, 1, cr, 0);
	assert_no_comp(c, 1, ex);
	/* HEADQUE puts PR ahead of the EX */
	pr = lock_on(c, 1, 4, "r", DLM_LOCK_PR, DLM_LKF_HEADQUE, 0, NULL);
	assert_no_comp(c, 1, pr);
	assert_int_equal(unlock(c, 1, 1, pw, 0, NULL), 0);
	assert_status(c, 1, pr, 0);
	assert_no_comp(c, 1, ex);
	cluster_free(c);
}

static void test_conversions(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_EX, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_PR, 0, 0, NULL);
	/* a down-conversion is granted at once, and lets the PR in */
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_CR, 0, NULL), 0);
	assert_int_equal(comp_of(c, 1, a)->a.grmode, DLM_LOCK_CR);
	assert_status(c, 1, b, 0);
	/* converting a lock that is not granted, or of another owner */
	assert_int_equal(convert(c, 1, 2, a, DLM_LOCK_EX, 0, NULL), -EPERM);
	assert_int_equal(convert(c, 1, 1, 0x7777, DLM_LOCK_EX, 0, NULL), -ENOENT);
	/* up-conversion blocked by the PR: queued, bast to the PR holder */
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, 0, NULL), 0);
	assert_int_equal(last_bast_mode(c, 1, b), DLM_LOCK_EX);
	assert_dump_has(c, 1, "convert");
	assert_dump_has(c, 1, "CR->EX");
	/* a second conversion while one is queued is refused */
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_PW, 0, NULL), -EBUSY);
	/* QUECVT is only for conversions to a stronger mode */
	assert_int_equal(convert(c, 1, 2, b, DLM_LOCK_NL, DLM_LKF_QUECVT, NULL), -EINVAL);
	assert_int_equal(unlock(c, 1, 2, b, 0, NULL), 0);
	assert_status(c, 1, a, 0);
	assert_int_equal(comp_of(c, 1, a)->a.grmode, DLM_LOCK_EX);
	cluster_free(c);
}

static void test_quecvt(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_NL, 0, 0, NULL);
	d = lock_on(c, 1, 3, "r", DLM_LOCK_NL, 0, 0, NULL);
	/* b wants EX: queued behind a's PR */
	assert_int_equal(convert(c, 1, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	/* d's NL->CR is compatible with everything granted: granted at once
	 * past the queued conversion... */
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_CR, 0, NULL), 0);
	assert_status(c, 1, d, 0);
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_NL, 0, NULL), 0);
	/* ...unless it asks to queue behind it */
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_CR, DLM_LKF_QUECVT, NULL), 0);
	assert_int_equal(count_asts(c, 1, d, DLM_AST_COMP), 3);
	assert_dump_has(c, 1, "NL->CR");
	/* a releases: b gets EX first, d still waits behind it */
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_status(c, 1, b, 0);
	assert_int_equal(count_asts(c, 1, d, DLM_AST_COMP), 3);
	assert_int_equal(convert(c, 1, 2, b, DLM_LOCK_NL, 0, NULL), 0);
	assert_status(c, 1, d, 0);
	assert_int_equal(comp_of(c, 1, d)->a.grmode, DLM_LOCK_CR);
	cluster_free(c);
}

/* QUECVT can deadlock too: d waits behind b, b waits for d's mode. */
static void test_quecvt_deadlock(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_NL, 0, 0, NULL);
	d = lock_on(c, 1, 3, "r", DLM_LOCK_CR, 0, 0, NULL);
	assert_int_equal(convert(c, 1, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_PR, DLM_LKF_QUECVT, NULL), 0);
	assert_status(c, 1, d, -EDEADLK);
	assert_int_equal(comp_of(c, 1, d)->a.grmode, DLM_LOCK_CR);
	cluster_free(c);
	(void)a;
}

static void test_conversion_deadlock(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, x, y;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_EX, 0, NULL), 0);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_COMP), 1);
	/* b closes the cycle: cancelled with EDEADLK, keeps PR */
	assert_int_equal(convert(c, 1, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	assert_status(c, 1, b, -EDEADLK);
	assert_int_equal(comp_of(c, 1, b)->a.grmode, DLM_LOCK_PR);
	cluster_free(c);

	/* with CONVDEADLK the closing lock is demoted to NL instead, which
	 * lets the other conversion through */
	c = cluster_new(1, 1000);
	x = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	y = lock_on(c, 1, 2, "r", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(convert(c, 1, 1, x, DLM_LOCK_EX, 0, NULL), 0);
	assert_int_equal(convert(c, 1, 2, y, DLM_LOCK_EX, DLM_LKF_CONVDEADLK, NULL), 0);
	assert_status(c, 1, x, 0);
	assert_int_equal(comp_of(c, 1, x)->a.grmode, DLM_LOCK_EX);
	assert_int_equal(count_asts(c, 1, y, DLM_AST_COMP), 1);
	assert_dump_has(c, 1, "NL->EX");
	assert_int_equal(unlock(c, 1, 1, x, 0, NULL), 0);
	assert_status(c, 1, y, 0);
	assert_true(comp_of(c, 1, y)->a.sbflags & DLM_SBF_DEMOTED);
	cluster_free(c);
}

static void test_basts(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_EX, 0, 0, NULL);
	/* NOQUEUE: no bast */
	assert_int_equal(try_lock(c, 1, 2, "r", DLM_LOCK_PR, DLM_LKF_NOQUEUE), 0);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_BAST), 0);
	/* NOQUEUEBAST: bast, and still refused */
	assert_int_equal(try_lock(c, 1, 2, "r", DLM_LOCK_PR,
				  DLM_LKF_NOQUEUE | DLM_LKF_NOQUEUEBAST), 0);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_BAST), 1);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	/* a queued CR: bast not repeated for a weaker mode than sent */
	b = lock_on(c, 1, 3, "r", DLM_LOCK_CR, 0, 0, NULL);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_BAST), 1);
	/* a stronger one is */
	d = lock_on(c, 1, 4, "r", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_BAST), 2);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_EX);
	/* after the holder releases, the granted CR blocks the EX: bast */
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_status(c, 1, b, 0);
	assert_int_equal(last_bast_mode(c, 1, b), DLM_LOCK_EX);
	assert_no_comp(c, 1, d);
	cluster_free(c);
}

static void test_altmode(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_EX, DLM_LKF_ALTPR, 0, NULL);
	assert_status(c, 1, b, 0);
	assert_int_equal(comp_of(c, 1, b)->a.grmode, DLM_LOCK_PR);
	assert_true(comp_of(c, 1, b)->a.sbflags & DLM_SBF_ALTMODE);
	assert_int_equal(try_lock(c, 1, 3, "r", DLM_LOCK_EX,
				  DLM_LKF_ALTPR | DLM_LKF_ALTCW), -EINVAL);
	d = lock_on(c, 1, 3, "s", DLM_LOCK_CW, 0, 0, NULL);
	d = lock_on(c, 1, 4, "s", DLM_LOCK_PW, DLM_LKF_ALTCW, 0, NULL);
	assert_status(c, 1, d, 0);
	assert_int_equal(comp_of(c, 1, d)->a.grmode, DLM_LOCK_CW);
	cluster_free(c);
	(void)a;
}

static void test_cancel_and_force(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_EX, 0, 0, NULL);
	b = lock_on(c, 1, 2, "r", DLM_LOCK_EX, 0, 0, NULL);
	/* nothing to cancel on a granted lock */
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_CANCEL, NULL), -EBUSY);
	/* a plain unlock of a queued lock is refused */
	assert_int_equal(unlock(c, 1, 2, b, 0, NULL), -EBUSY);
	assert_int_equal(unlock(c, 1, 2, b, DLM_LKF_CANCEL, NULL), 0);
	assert_status(c, 1, b, -DLM_ECANCEL);
	/* the cancelled lock is gone */
	assert_int_equal(unlock(c, 1, 2, b, 0, NULL), -ENOENT);
	/* cancel a conversion: back to the granted mode */
	d = lock_on(c, 1, 3, "r", DLM_LOCK_NL, 0, 0, NULL);
	assert_int_equal(convert(c, 1, 3, d, DLM_LOCK_PR, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 3, d, DLM_LKF_CANCEL, NULL), 0);
	assert_status(c, 1, d, -DLM_ECANCEL);
	assert_int_equal(comp_of(c, 1, d)->a.grmode, DLM_LOCK_NL);
	/* force unlock of a queued lock */
	b = lock_on(c, 1, 2, "r", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 2, b, DLM_LKF_FORCEUNLOCK, NULL), 0);
	assert_status(c, 1, b, -DLM_EUNLOCK);
	assert_dump_lacks(c, 1, "waiting");
	cluster_free(c);
}

static void test_bad_input(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	char longname[DLM_RESNAME_MAXLEN + 1];
	uint32_t lkid;
	int nasts;

	(void)state;
	memset(longname, 'x', sizeof(longname));
	nasts = c->nasts;
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = 6, .name = "r", .namelen = 1, .owner = 1 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = -1, .name = "r", .namelen = 1, .owner = 1 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = 1, .name = longname, .namelen = sizeof(longname),
		.owner = 1 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = 1, .name = "r", .namelen = 0, .owner = 1 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = 1, .name = "r", .namelen = 1, .owner = 0 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = 1, .name = "r", .namelen = 1, .owner = 1,
		.flags = 0x40000000 }, &lkid), -EINVAL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .name = "r", .namelen = 1, .owner = 1,
		.flags = DLM_LKF_EXPEDITE }, &lkid), -EINVAL);
	assert_int_equal(unlock(c, 1, 1, 0xdead, 0, NULL), -ENOENT);
	assert_int_equal(unlock(c, 1, 1, 0, 0, NULL), -ENOENT);
	assert_int_equal(unlock(c, 1, 1, 1, 0x40000000, NULL), -EINVAL);
	/* a 64-byte name is fine */
	lock_on(c, 1, 1, "0123456789012345678901234567890123456789012345678901234567890123",
		DLM_LOCK_NL, 0, 0, NULL);
	assert_int_equal(c->nasts, nasts + 1);
	/* lockspace names */
	assert_int_equal(dlm_core_ls_create(c->core[1], "test", (uint32_t[]){ 1 },
					    1, NULL, NULL), -EEXIST);
	assert_int_equal(dlm_core_ls_create(c->core[1], "", (uint32_t[]){ 1 },
					    1, NULL, NULL), -EINVAL);
	assert_int_equal(dlm_core_ls_create(c->core[1], "other", (uint32_t[]){ 2 },
					    1, NULL, NULL), -EINVAL);
	assert_int_equal(dlm_core_ls_release(c->ls[1], 0), -EBUSY);
	cluster_free(c);
}

/* Operations overlapping a request in flight. */
static void test_overlaps(void **state)
{
	struct cluster *c = cluster_new(2, 100);
	uint32_t a, b, d;
	const char *name = NULL;
	char nm[8];
	int i;

	(void)state;
	/* find a name mastered on node 1 (first requester) with dir on 2 */
	for (i = 0; i < 100 && !name; i++) {
		snprintf(nm, sizeof(nm), "o%d", i);
		a = lock_on(c, 1, 1, nm, DLM_LOCK_EX, 0, 0, NULL);
		drain(c);
		name = nm;
	}
	assert_status(c, 1, a, 0);
	/* node 2 asks, then cancels before the request reaches the master */
	b = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 2, 2, b, DLM_LKF_CANCEL, NULL), 0);
	drain(c);
	assert_status(c, 2, b, -DLM_ECANCEL);
	/* request then force unlock while in flight */
	d = lock_on(c, 2, 3, name, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 2, 3, d, DLM_LKF_FORCEUNLOCK, NULL), 0);
	assert_int_equal(unlock(c, 2, 3, d, DLM_LKF_FORCEUNLOCK, NULL), -EBUSY);
	drain(c);
	assert_status(c, 2, d, -DLM_EUNLOCK);
	assert_dump_lacks(c, 1, "waiting");
	/* cancel that loses the race with the grant: no ECANCEL */
	d = lock_on(c, 2, 3, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);	/* GRANT in flight */
	assert_int_equal(unlock(c, 2, 3, d, DLM_LKF_CANCEL, NULL), 0);
	drain(c);
	assert_status(c, 2, d, 0);
	assert_int_equal(count_asts(c, 2, d, DLM_AST_COMP), 1);
	cluster_free(c);
}

/* Lock ids chosen by the client from a reserved block (issue 14): the
 * engine takes them, refuses ids outside the owner's blocks or in use,
 * and never picks an id of a reserved block for anyone else. */
static int lock_newid(struct cluster *c, uint64_t owner, const char *name,
		      uint32_t newid, uint32_t *lkid)
{
	struct dlm_lock_req rq = {
		.mode = DLM_LOCK_EX, .name = name,
		.namelen = (unsigned)strlen(name), .owner = owner,
		.newid = newid,
	};

	*lkid = 0;
	return dlm_core_lock(c->ls[1], &rq, lkid);
}

static void test_client_chosen_ids(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t f, g, id, k;
	char name[16];

	(void)state;
	/* some ids handed out before the block */
	for (k = 0; k < 10; k++) {
		snprintf(name, sizeof(name), "pre%u", k);
		(void)lock_on(c, 1, 2, name, DLM_LOCK_NL, 0, 0, NULL);
	}
	assert_int_equal(dlm_core_ids_reserve(c->ls[1], 1, &f), 0);
	assert_int_not_equal(f, 0);
	assert_int_equal(f % DLM_IDS_BLOCK, 0);
	assert_int_equal(lock_newid(c, 1, "a", f + 5, &id), 0);
	assert_int_equal(id, f + 5);
	assert_status(c, 1, id, 0);
	assert_int_equal(lock_newid(c, 1, "b", f + 5, &id), -EEXIST);
	/* ids past the highest the owner used are taken without a look
	 * (lock.c, ib_fresh); below it a duplicate is still refused */
	assert_int_equal(lock_newid(c, 1, "c", f + 9, &id), 0);
	assert_int_equal(lock_newid(c, 1, "d", f + 2, &id), 0);
	assert_int_equal(lock_newid(c, 1, "e", f + 2, &id), -EEXIST);
	assert_int_equal(lock_newid(c, 1, "e", f + 9, &id), -EEXIST);
	assert_int_equal(lock_newid(c, 1, "e", f + 10, &id), 0);
	assert_int_equal(lock_newid(c, 1, "f", f + 10, &id), -EEXIST);
	assert_int_equal(lock_newid(c, 2, "b", f + 6, &id), -EPERM);
	assert_int_equal(lock_newid(c, 1, "b", f + DLM_IDS_BLOCK, &id), -EINVAL);
	/* the engine's own ids go on past the block */
	for (k = 0; k < 300; k++) {
		snprintf(name, sizeof(name), "e%u", k);
		id = lock_on(c, 1, 2, name, DLM_LOCK_NL, 0, 0, NULL);
		assert_true(id < f || id >= f + DLM_IDS_BLOCK);
	}
	assert_int_equal(dlm_core_ids_reserve(c->ls[1], 1, &g), 0);
	assert_true(g >= f + DLM_IDS_BLOCK);
	/* released: its ids are no longer the owner's; its live lock stays */
	dlm_core_ids_release(c->ls[1], f);
	assert_int_equal(lock_newid(c, 1, "b", f + 6, &id), -EINVAL);
	assert_int_equal(lock_newid(c, 1, "b", g, &id), 0);
	assert_int_equal(id, g);
	assert_int_equal(unlock(c, 1, 1, f + 5, 0, NULL), 0);
	cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_matrix),
		cmocka_unit_test(test_fifo_and_expedite),
		cmocka_unit_test(test_noorder_headque),
		cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_quecvt),
		cmocka_unit_test(test_quecvt_deadlock),
		cmocka_unit_test(test_conversion_deadlock),
		cmocka_unit_test(test_basts),
		cmocka_unit_test(test_altmode),
		cmocka_unit_test(test_cancel_and_force),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_client_chosen_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
