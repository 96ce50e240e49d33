/*
 * tests/test-core.c - unit tests of the lock engine's rules, on one node
 * and on small hand-built clusters of engines joined by an in-memory
 * network that the test drains explicitly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "core/wire.h"

/* ------------------------------------------------------------------ */
/* harness                                                            */
/* ------------------------------------------------------------------ */

#define MAXN	7
#define MAXQ	4096
#define MAXAST	1024

struct qmsg {
	uint32_t from, to;
	size_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

struct rec_ast {
	int node;
	struct dlm_ast a;
	char lvb[DLM_LVB_LEN];
	int has_lvb;
};

struct cluster {
	int n;
	struct dlm_core *core[MAXN + 1];
	struct dlm_ls *ls[MAXN + 1];
	struct qmsg *q;
	size_t qhead, qtail;
	struct rec_ast asts[MAXAST];
	int nasts;
	int nlog_warn;
	uint32_t done_event[MAXN + 1];
	int dead[MAXN + 1];
};

struct nodectx {
	struct cluster *c;
	int node;
} nctx[MAXN + 1];

static void h_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct nodectx *nc = ctx;
	struct cluster *c = nc->c;
	struct qmsg *m;

	assert_true(c->qtail - c->qhead < MAXQ);
	m = &c->q[c->qtail++ % MAXQ];
	m->from = (uint32_t)nc->node;
	m->to = to;
	m->len = len;
	memcpy(m->buf, buf, len);
}

static void h_ast(void *ctx, const struct dlm_ast *a)
{
	struct nodectx *nc = ctx;
	struct cluster *c = nc->c;
	struct rec_ast *r;

	assert_true(c->nasts < MAXAST);
	r = &c->asts[c->nasts++];
	r->node = nc->node;
	r->a = *a;
	r->has_lvb = a->lvb != NULL;
	if (a->lvb)
		memcpy(r->lvb, a->lvb, DLM_LVB_LEN);
	r->a.lvb = NULL;
}

static void h_log(void *ctx, enum dlm_log_level level, const char *line)
{
	struct nodectx *nc = ctx;

	if (level <= DLM_LOG_WARNING)
		nc->c->nlog_warn++;
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "node %d: %s\n", nc->node, line);
}

static void h_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	struct nodectx *nc = ctx;

	(void)ls;
	nc->c->done_event[nc->node] = event;
}

static struct cluster *cluster_new(int n, uint32_t toss_ms)
{
	static const struct dlm_core_ops ops = {
		.send = h_send, .ast = h_ast, .log = h_log, .recovery_done = h_done,
	};
	struct cluster *c = calloc(1, sizeof(*c));
	uint32_t members[MAXN];
	int i;

	assert_non_null(c);
	c->q = calloc(MAXQ, sizeof(*c->q));
	assert_non_null(c->q);
	c->n = n;
	for (i = 0; i < n; i++)
		members[i] = (uint32_t)(i + 1);
	for (i = 1; i <= n; i++) {
		struct dlm_core_config cfg = { .our_nodeid = (uint32_t)i, .toss_ms = toss_ms };

		nctx[i].c = c;
		nctx[i].node = i;
		c->core[i] = dlm_core_new(&cfg, &ops, &nctx[i]);
		assert_non_null(c->core[i]);
		assert_int_equal(dlm_core_ls_create(c->core[i], "test", members,
						    (unsigned)n, NULL, &c->ls[i]), 0);
	}
	return c;
}

static void cluster_free(struct cluster *c)
{
	int i;

	for (i = 1; i <= c->n; i++)
		dlm_core_free(c->core[i]);
	free(c->q);
	free(c);
}

/* Deliver every queued message (and what they cause), in FIFO order. */
static void drain(struct cluster *c)
{
	int guard = 100000;

	while (c->qhead != c->qtail && guard--) {
		struct qmsg *m = &c->q[c->qhead++ % MAXQ];

		if (c->dead[m->to] || c->dead[m->from])
			continue;
		assert_int_equal(dlm_core_receive(c->core[m->to], m->from,
						  m->buf, m->len), 0);
	}
	assert_true(guard > 0);
}

static uint32_t lock_on(struct cluster *c, int node, uint64_t owner,
			const char *name, int mode, uint32_t flags,
			uint32_t parent, const struct dlm_range *range)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = flags, .name = name,
		.namelen = (unsigned)strlen(name), .parent = parent,
		.range = range, .owner = owner, .astarg = owner, .want_bast = 1,
	};
	uint32_t lkid = 0;

	assert_int_equal(dlm_core_lock(c->ls[node], &rq, &lkid), 0);
	assert_int_not_equal(lkid, 0);
	return lkid;
}

static int try_lock(struct cluster *c, int node, uint64_t owner,
		    const char *name, int mode, uint32_t flags)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = flags, .name = name,
		.namelen = (unsigned)strlen(name), .owner = owner,
	};
	uint32_t lkid;

	return dlm_core_lock(c->ls[node], &rq, &lkid);
}

static int convert(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
		   int mode, uint32_t flags, const char *lvb)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = flags | DLM_LKF_CONVERT, .lkid = lkid,
		.owner = owner, .astarg = owner, .lvb = lvb, .want_bast = 1,
	};
	uint32_t out;

	return dlm_core_lock(c->ls[node], &rq, &out);
}

static int unlock(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
		  uint32_t flags, const char *lvb)
{
	struct dlm_unlock_req rq = {
		.lkid = lkid, .flags = flags, .lvb = lvb, .owner = owner,
		.astarg = owner,
	};

	return dlm_core_unlock(c->ls[node], &rq);
}

/* The last completion AST for lkid on node (asserting there is one). */
static struct rec_ast *comp_of(struct cluster *c, int node, uint32_t lkid)
{
	int i;

	for (i = c->nasts - 1; i >= 0; i--)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == DLM_AST_COMP)
			return &c->asts[i];
	return NULL;
}

static int count_asts(struct cluster *c, int node, uint32_t lkid, int type)
{
	int i, n = 0;

	for (i = 0; i < c->nasts; i++)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == (enum dlm_ast_type)type)
			n++;
	return n;
}

static int last_bast_mode(struct cluster *c, int node, uint32_t lkid)
{
	int i;

	for (i = c->nasts - 1; i >= 0; i--)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == DLM_AST_BAST)
			return c->asts[i].a.bastmode;
	return DLM_LOCK_IV;
}

static void assert_status(struct cluster *c, int node, uint32_t lkid, int st)
{
	struct rec_ast *r = comp_of(c, node, lkid);

	if (!r)
		fail_msg("no completion AST for lock %08x on node %d", lkid, node);
	if (r->a.status != st)
		fail_msg("lock %08x on node %d: status %d, expected %d", lkid,
			 node, r->a.status, st);
}

static void assert_no_comp(struct cluster *c, int node, uint32_t lkid)
{
	if (comp_of(c, node, lkid))
		fail_msg("unexpected completion AST for lock %08x", lkid);
}

static char *dump(struct cluster *c, int node)
{
	char *text = NULL;

	assert_int_equal(dlm_core_ls_dump(c->ls[node], &text), 0);
	return text;
}

static void assert_dump_has(struct cluster *c, int node, const char *needle)
{
	char *text = dump(c, node);

	if (!strstr(text, needle))
		fail_msg("dump of node %d lacks \"%s\":\n%s", node, needle, text);
	free(text);
}

static void assert_dump_lacks(struct cluster *c, int node, const char *needle)
{
	char *text = dump(c, node);

	if (strstr(text, needle))
		fail_msg("dump of node %d has \"%s\":\n%s", node, needle, text);
	free(text);
}

/* ------------------------------------------------------------------ */
/* tests                                                              */
/* ------------------------------------------------------------------ */

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

static void test_lvb(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	char v1[DLM_LVB_LEN] = "value one", v2[DLM_LVB_LEN] = "value two";
	uint32_t w, r, r2;
	struct rec_ast *ra;

	(void)state;
	w = lock_on(c, 1, 1, "r", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	ra = comp_of(c, 1, w);
	assert_true(ra->has_lvb);
	assert_false(ra->a.sbflags & DLM_SBF_VALNOTVALID);
	/* the writer needs a value to give */
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, NULL), -EINVAL);
	r = lock_on(c, 1, 2, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, v1), 0);
	ra = comp_of(c, 1, r);
	assert_int_equal(ra->a.status, 0);
	assert_memory_equal(ra->lvb, v1, DLM_LVB_LEN);
	assert_dump_has(c, 1, "seq 1 valid");
	/* the reader up-converts, then writes on down-conversion */
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_EX, DLM_LKF_VALBLK, v1), 0);
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_NL, DLM_LKF_VALBLK, v2), 0);
	r2 = lock_on(c, 1, 3, "r", DLM_LOCK_CR, DLM_LKF_VALBLK, 0, NULL);
	assert_memory_equal(comp_of(c, 1, r2)->lvb, v2, DLM_LVB_LEN);
	/* IVVALBLK from a writer invalidates */
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_EX, DLM_LKF_VALBLK, v2), 0);
	assert_int_equal(count_asts(c, 1, r, DLM_AST_COMP), 3); /* CR blocks EX */
	assert_int_equal(unlock(c, 1, 3, r2, 0, NULL), 0);
	assert_status(c, 1, r, 0);
	assert_int_equal(unlock(c, 1, 2, r, DLM_LKF_IVVALBLK, NULL), 0);
	assert_dump_has(c, 1, "invalid");
	r2 = lock_on(c, 1, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_true(comp_of(c, 1, r2)->a.sbflags & DLM_SBF_VALNOTVALID);
	cluster_free(c);
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

static void test_parent_locks(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t p1, p2, k1, k2, q;

	(void)state;
	p1 = lock_on(c, 1, 1, "file", DLM_LOCK_PR, 0, 0, NULL);
	p2 = lock_on(c, 1, 2, "file", DLM_LOCK_PR, 0, 0, NULL);
	k1 = lock_on(c, 1, 1, "blk", DLM_LOCK_EX, 0, p1, NULL);
	assert_status(c, 1, k1, 0);
	/* the same child name under the same parent resource conflicts */
	k2 = lock_on(c, 1, 2, "blk", DLM_LOCK_EX, DLM_LKF_NOQUEUE, p2, NULL);
	assert_status(c, 1, k2, -EAGAIN);
	/* a root resource of the same name is another resource */
	q = lock_on(c, 1, 2, "blk", DLM_LOCK_EX, 0, 0, NULL);
	assert_status(c, 1, q, 0);
	assert_dump_has(c, 1, "resource \"file/blk\"");
	/* a parent with children cannot be unlocked */
	assert_int_equal(unlock(c, 1, 1, p1, 0, NULL), -EBUSY);
	assert_int_equal(unlock(c, 1, 1, p1, DLM_LKF_FORCEUNLOCK, NULL), -EBUSY);
	/* another owner's lock cannot be a parent */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = p1,
		.owner = 2 }, &k2), -EPERM);
	/* a parent that is not granted cannot have children */
	q = lock_on(c, 1, 3, "file2", DLM_LOCK_EX, 0, 0, NULL);
	k2 = lock_on(c, 1, 4, "file2", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = k2,
		.owner = 4 }, &q), -EINVAL);
	/* persistent children are not supported */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = p1,
		.flags = DLM_LKF_PERSISTENT, .owner = 1 }, &q), -EINVAL);
	assert_int_equal(unlock(c, 1, 1, k1, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, p1, 0, NULL), 0);
	/* purging an owner unlocks children before parents */
	p1 = lock_on(c, 1, 5, "tree", DLM_LOCK_EX, 0, 0, NULL);
	k1 = lock_on(c, 1, 5, "a", DLM_LOCK_EX, 0, p1, NULL);
	k2 = lock_on(c, 1, 5, "b", DLM_LOCK_EX, 0, k1, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 5), 3);
	assert_dump_lacks(c, 1, "tree/a/b\"\n  granted");
	assert_dump_lacks(c, 1, "owner 5");
	cluster_free(c);
}

/* A chain of 'depth' locks of 'owner' on node, each under the one before,
 * all named 'name'; each granted (ASTs checked, then forgotten, so the
 * record does not fill up).  Returns the deepest lock id. */
static uint32_t lock_chain(struct cluster *c, int node, uint64_t owner,
			   const char *name, int mode, unsigned int depth)
{
	uint32_t parent = 0;

	for (unsigned int i = 0; i < depth; i++) {
		parent = lock_on(c, node, owner, name, mode, 0, parent, NULL);
		drain(c);
		assert_status(c, node, parent, 0);
		c->nasts = 0;
	}
	return parent;
}

/* Parent locks nest without a depth limit (the fifth level was EINVAL),
 * a path means the same resource wherever it is locked from, and a deep
 * tree is purged without recursion (100000 levels overflowed the stack
 * when each parent's unlock ran inside its child's). */
static void test_parent_deep(void **state)
{
	enum { DEEP = 100000, WIDE = 12 };
	struct cluster *c = cluster_new(2, 1000);
	struct dlm_ls_stats st;
	uint32_t a, b, k;

	(void)state;
	/* the same path from two nodes is one resource, past the depth
	 * where keys become digests */
	a = lock_chain(c, 1, 1, "d", DLM_LOCK_CR, WIDE);
	b = lock_chain(c, 2, 2, "d", DLM_LOCK_CR, WIDE);
	k = lock_on(c, 1, 1, "leaf", DLM_LOCK_EX, DLM_LKF_NOQUEUE, a, NULL);
	drain(c);
	assert_status(c, 1, k, 0);
	k = lock_on(c, 2, 2, "leaf", DLM_LOCK_EX, DLM_LKF_NOQUEUE, b, NULL);
	drain(c);
	assert_status(c, 2, k, -EAGAIN);
	/* ... and another name there is another resource */
	k = lock_on(c, 2, 2, "leaf2", DLM_LOCK_EX, DLM_LKF_NOQUEUE, b, NULL);
	drain(c);
	assert_status(c, 2, k, 0);
	c->nasts = 0;
	/* the dump names a deep one by its parent's digest and its name */
	assert_dump_has(c, 1, "\\#");
	assert_dump_has(c, 1, "/leaf\"");
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 1), WIDE + 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], 2), WIDE + 1);
	drain(c);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 0);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_locks, 0);

	/* Very deep: node 1 masters a chain of DEEP - 1 resources; node 2
	 * locks the same chain and masters one more below it, which node 1
	 * locks last.  Purging node 1's owner waits for that remote unlock,
	 * then unlocks the whole local chain at once, bottom up. */
	a = lock_chain(c, 1, 3, "x", DLM_LOCK_CR, DEEP - 1);
	lock_chain(c, 2, 4, "x", DLM_LOCK_CR, DEEP);
	k = lock_on(c, 1, 3, "x", DLM_LOCK_CR, 0, a, NULL);
	drain(c);
	assert_status(c, 1, k, 0);
	c->nasts = 0;
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 3), DEEP);
	drain(c);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, (uint64_t)DEEP - 1);	/* node 2's master copies */
	assert_int_equal(c->nasts, 0);	/* a purge sends no ASTs */
	assert_dump_lacks(c, 1, "owner 3");

	/* the key of a deep resource: short, the same for the same path,
	 * different under another parent */
	{
		unsigned char k1[DLM_MAX_KEYLEN], k2[DLM_MAX_KEYLEN];
		int l1 = dlm_key_child(NULL, 0, "x", 1, k1), l2;

		for (int i = 0; i < 50; i++) {
			memcpy(k2, k1, (size_t)l1);
			l1 = dlm_key_child(k2, (unsigned int)l1, "x", 1, k1);
			assert_true(l1 > 0 && l1 <= 1 + DLM_KEY_DIGEST_LEN + 2);
		}
		assert_int_equal(k1[0], DLM_KEY_DIGEST_MARK);
		assert_true(dlm_key_valid(k1, (size_t)l1));
		l2 = dlm_key_child(k2, (unsigned int)l1, "y", 1, k1);
		assert_true(l2 > 0);
		assert_int_equal(dlm_key_child(k2, 3, "y", 1, k1), -EINVAL);
		assert_int_equal(dlm_key_child(NULL, 0, "", 0, k1), -EINVAL);
	}
	cluster_free(c);
}

static void test_range_locks(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	struct dlm_range r1 = { 0, 99 }, r2 = { 100, 199 }, r3 = { 50, 150 };
	struct dlm_range bad = { 10, 5 };
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "f", DLM_LOCK_EX, 0, 0, &r1);
	b = lock_on(c, 1, 2, "f", DLM_LOCK_EX, 0, 0, &r2);
	assert_status(c, 1, a, 0);
	assert_status(c, 1, b, 0);
	d = lock_on(c, 1, 3, "f", DLM_LOCK_PR, 0, 0, &r3);
	assert_no_comp(c, 1, d);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	assert_int_equal(last_bast_mode(c, 1, b), DLM_LOCK_PR);
	assert_dump_has(c, 1, "range 0-63");
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_no_comp(c, 1, d);
	assert_int_equal(unlock(c, 1, 2, b, 0, NULL), 0);
	assert_status(c, 1, d, 0);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .range = &bad,
		.owner = 2 }, &a), -EINVAL);
	cluster_free(c);
}

/* may_adopt for test_orphans: only orphans of owner *arg. */
static int adopt_only_owner(void *arg, uint64_t orphan_owner)
{
	return orphan_owner == *(uint64_t *)arg;
}

static void test_orphans(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	struct dlm_ls_stats st;
	uint32_t p, n, w, adopted = 0;
	int nasts;

	(void)state;
	p = lock_on(c, 1, 7, "keep", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	n = lock_on(c, 1, 7, "drop", DLM_LOCK_EX, 0, 0, NULL);
	w = lock_on(c, 1, 8, "keep", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 7), 2);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 1);
	assert_dump_has(c, 1, "orphan");
	assert_no_comp(c, 1, w);		/* the orphan still holds EX */
	nasts = c->nasts;
	/* adopt: wrong mode (EAGAIN: try the other mode, as the kernel
	 * answers), no such name (ENOENT), then right mode */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), -EAGAIN);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "kept", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), -ENOENT);
	/* another mode, but not the requester's to take: -EPERM */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 6 } },
		&adopted), -EPERM);
	/* the caller's may_adopt refuses it: -EPERM, the orphan stays */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 6 } },
		&adopted), -EPERM);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 1);
	/* ... and is asked about the orphan's owner: 7 */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 7 } },
		&adopted), 0);
	assert_int_equal(adopted, p);
	/* adoption is synchronous: no completion AST, as in the kernel */
	assert_int_equal(c->nasts, nasts);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 9), 1);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), 0);
	assert_int_equal(adopted, p);
	assert_int_equal(c->nasts, nasts);
	/* the adopter owns it: it converts it like any lock of its own */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .lkid = p, .flags = DLM_LKF_CONVERT | DLM_LKF_PERSISTENT,
		.owner = 9 }, &adopted), 0);
	assert_status(c, 1, p, 0);
	/* orphan it again and purge it */
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 9), 1);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 0, 12345), 0);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 0, 9), 1);
	assert_status(c, 1, w, 0);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 99, 0), -EINVAL);
	/* an adoption without PERSISTENT makes the lock an ordinary one:
	 * its adopter's exit unlocks it */
	p = lock_on(c, 1, 10, "again", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 10), 1);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "again", .namelen = 5,
		.flags = DLM_LKF_ORPHAN, .owner = 11 }, &adopted), 0);
	assert_int_equal(adopted, p);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 11), 1);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 0);
	cluster_free(c);
	(void)n;
}

/* dlm_ls_purge(nodeid, pid) on another node: the orphans of every owner
 * of that owner group (the daemon's pid), and only those, go there. */
static void test_purge_orphan_group(void **state)
{
	struct cluster *c = cluster_new(2, 1000);
	const uint64_t a1 = (5ULL << 32) | 1, a2 = (5ULL << 32) | 2;
	const uint64_t b1 = (6ULL << 32) | 1;
	struct dlm_ls_stats st;

	(void)state;
	lock_on(c, 2, a1, "ga1", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	lock_on(c, 2, a2, "ga2", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	lock_on(c, 2, b1, "gb1", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	drain(c);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], a1), 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], a2), 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], b1), 1);
	drain(c);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 3);
	/* group 0 matches nobody; an unknown node is refused */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[2], 0, 0), 0);
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[1], 99, 5), -EINVAL);
	/* from node 1: a message asks node 2 */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[1], 2, 5), 0);
	drain(c);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 1);
	assert_dump_has(c, 2, "gb1");
	/* locally */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[2], 0, 6), 1);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 0);
	drain(c);
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

/* Three nodes: remote masters, lookups, grants and basts over messages,
 * then the toss timer drops everything, directory records included. */
static void test_three_nodes(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v[DLM_LVB_LEN] = "from node 2";
	struct dlm_ls_stats st;
	uint32_t a, b, d;
	int i;

	(void)state;
	a = lock_on(c, 1, 1, "shared", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	b = lock_on(c, 2, 2, "shared", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	d = lock_on(c, 3, 3, "shared", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, b);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	assert_dump_has(c, 1, "master 1 master-copy");
	assert_dump_has(c, 2, "master 1 local-copy");
	assert_dump_has(c, 1, "node 2 remid");
	/* EX holder writes; both remote readers see it */
	memcpy(v, "from node 1", 12);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_status(c, 3, d, 0);
	assert_memory_equal(comp_of(c, 2, b)->lvb, v, DLM_LVB_LEN);
	assert_memory_equal(comp_of(c, 3, d)->lvb, v, DLM_LVB_LEN);
	/* remote conversion deadlock */
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(convert(c, 3, 3, d, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, d, -EDEADLK);
	assert_int_equal(last_bast_mode(c, 3, d), DLM_LOCK_EX);
	/* remote cancel of the other conversion */
	assert_int_equal(unlock(c, 2, 2, b, DLM_LKF_CANCEL, NULL), 0);
	drain(c);
	assert_status(c, 2, b, -DLM_ECANCEL);
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, -DLM_EUNLOCK);
	assert_status(c, 3, d, -DLM_EUNLOCK);
	/* many names, so that every node masters and directs some */
	for (i = 0; i < 60; i++) {
		char name[16];

		snprintf(name, sizeof(name), "n%d", i);
		lock_on(c, 1 + i % 3, 10 + i, name, DLM_LOCK_PR, 0, 0, NULL);
		lock_on(c, 1 + (i + 1) % 3, 100 + i, name, DLM_LOCK_PR, 0, 0, NULL);
	}
	drain(c);
	for (i = 1; i <= 3; i++) {
		dlm_core_ls_stats(c->ls[i], &st);
		assert_int_equal(st.ls_waiters, 0);
		assert_true(st.ls_dir_entries > 0);
	}
	for (i = 0; i < 60; i++) {
		dlm_core_purge_owner(c->ls[1 + i % 3], 10 + (uint64_t)i);
		dlm_core_purge_owner(c->ls[1 + (i + 1) % 3], 100 + (uint64_t)i);
	}
	drain(c);
	for (i = 1; i <= 3; i++)
		dlm_core_tick(c->core[i], 1000);
	drain(c);
	for (i = 1; i <= 3; i++) {
		dlm_core_ls_stats(c->ls[i], &st);
		assert_int_equal(st.ls_locks, 0);
		assert_int_equal(st.ls_resources, 0);
		assert_int_equal(st.ls_dir_entries, 0);
	}
	assert_int_equal(c->nlog_warn, 0);
	cluster_free(c);
}

/* A master that dropped a resource answers a stale requester, which
 * looks the master up again. */
static void test_stale_master(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t a, b;
	int i;

	(void)state;
	a = lock_on(c, 1, 1, "s", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	b = lock_on(c, 2, 2, "s", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	/* node 1 (master) drops "s"; node 2 still remembers master 1 */
	dlm_core_tick(c->core[1], 1000);
	drain(c);
	assert_dump_has(c, 2, "resource \"s\" master 1 local-copy");
	b = lock_on(c, 2, 2, "s", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_dump_has(c, 2, "resource \"s\" master 2 master-copy");
	for (i = 1; i <= 3; i++)
		assert_dump_lacks(c, i, "inflight");
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

/* Malformed and misdirected messages are refused without harm. */
static void test_bad_messages(void **state)
{
	struct cluster *c = cluster_new(2, 100);
	unsigned char buf[DLM_WIRE_MAX_LEN];
	struct dlm_msg m;
	int len, i;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.m_type = DLM_MSG_GRANT;
	m.m_lsid = dlm_core_ls_id(c->ls[1]);
	m.m_from = 2;
	m.m_to = 1;
	m.m_remid = 0x1234;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	/* unknown lock */
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -ENOENT);
	/* wrong sender in the header */
	assert_int_equal(dlm_core_receive(c->core[1], 3, buf, (size_t)len), -EBADMSG);
	/* truncated at every length */
	for (i = 0; i < len; i++)
		assert_true(dlm_core_receive(c->core[1], 2, buf, (size_t)i) < 0);
	/* bad version, bad type, bad key */
	buf[4] = 9;
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EPROTO);
	buf[4] = DLM_WIRE_VERSION;
	buf[6] = 200;
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EOPNOTSUPP);
	m.m_type = DLM_MSG_LOOKUP;
	m.m_key = (const unsigned char *)"\x05" "ab";
	m.m_keylen = 3;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EBADMSG);
	/* unknown lockspace */
	m.m_type = DLM_MSG_GRANT;
	m.m_keylen = 0;
	m.m_lsid = 42;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -ENOENT);
	assert_true(c->nlog_warn > 0);
	cluster_free(c);
}

/* Tables grow and shrink: 100k locks on 100k resources and back. */
static void test_growth(void **state)
{
	struct cluster *c = cluster_new(1, 1);
	struct dlm_ls_stats st;
	uint32_t *ids = malloc(100000 * sizeof(*ids));
	char name[16];
	int i;

	(void)state;
	assert_non_null(ids);
	for (i = 0; i < 100000; i++) {
		struct dlm_lock_req rq = { .mode = DLM_LOCK_EX, .name = name,
					   .owner = 1 };

		rq.namelen = (unsigned)snprintf(name, sizeof(name), "g%d", i);
		assert_int_equal(dlm_core_lock(c->ls[1], &rq, &ids[i]), 0);
		c->nasts = 0;
	}
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 100000);
	assert_int_equal(st.ls_resources, 100000);
	for (i = 0; i < 100000; i++) {
		assert_int_equal(unlock(c, 1, 1, ids[i], 0, NULL), 0);
		c->nasts = 0;
	}
	dlm_core_tick(c->core[1], 10);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 0);
	assert_int_equal(st.ls_resources, 0);
	free(ids);
	cluster_free(c);
}

/* ------------------------------------------------------------------ */
/* recovery                                                           */
/* ------------------------------------------------------------------ */

static void stop_all(struct cluster *c)
{
	int i;

	for (i = 1; i <= c->n; i++)
		if (!c->dead[i])
			assert_int_equal(dlm_core_ls_stop(c->ls[i]), 0);
}

static void start_all(struct cluster *c, uint32_t event)
{
	uint32_t members[MAXN];
	unsigned int n = 0;
	int i;

	for (i = 1; i <= c->n; i++)
		if (!c->dead[i])
			members[n++] = (uint32_t)i;
	for (i = 1; i <= c->n; i++)
		if (!c->dead[i])
			assert_int_equal(dlm_core_ls_start(c->ls[i], event,
							   members, n), 0);
}

static void finish_all(struct cluster *c, uint32_t event)
{
	int i;

	for (i = 1; i <= c->n; i++) {
		if (c->dead[i])
			continue;
		if (c->done_event[i] != event)
			fail_msg("node %d did not finish recovery %u", i, event);
		assert_int_equal(dlm_core_ls_finish(c->ls[i], event), 0);
	}
	drain(c);
}

/* The nodes still alive recover event 'event' and resume. */
static void recover_all(struct cluster *c, uint32_t event)
{
	stop_all(c);
	start_all(c, event);
	drain(c);
	finish_all(c, event);
}

/* The master dies: a survivor becomes master, survivors' locks are
 * resent with their state, the dead node's lock is gone, and the waiter
 * it blocked is granted. */
static void test_recover_master_dies(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	char *text;

	(void)state;
	x = lock_on(c, 3, 3, "R", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, x, 0);
	a = lock_on(c, 1, 1, "R", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	b = lock_on(c, 2, 2, "R", DLM_LOCK_NL, DLM_LKF_EXPEDITE, 0, NULL);
	drain(c);
	assert_no_comp(c, 1, a);
	assert_status(c, 2, b, 0);
	assert_dump_has(c, 1, "resource \"R\" master 3 local-copy");
	text = dump(c, 3);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "before (node 3, master):\n%s", text);
	free(text);

	c->dead[3] = 1;
	recover_all(c, 1);
	/* node 1 or 2 masters R now; node 3's EX is gone: PR granted */
	assert_status(c, 1, a, 0);
	assert_true(comp_of(c, 1, a)->a.sbflags & DLM_SBF_VALNOTVALID);
	text = dump(c, 1);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "after (node 1):\n%s", text);
	assert_non_null(strstr(text, "resource \"R\""));
	assert_null(strstr(text, "master 3"));
	free(text);
	/* locking goes on: node 2 converts up, waits for node 1's PR */
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), 1);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_EX);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(comp_of(c, 2, b)->a.grmode, DLM_LOCK_EX);
	cluster_free(c);
}

/* A holder dies on a surviving master: its locks are purged; an EX it
 * held makes the LVB invalid; a PR holder's LVB survives a master death. */
static void test_recover_purge_and_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v[DLM_LVB_LEN] = "written by 2";
	uint32_t m1, w, r, p;

	(void)state;
	m1 = lock_on(c, 1, 1, "L", DLM_LOCK_NL, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	w = lock_on(c, 2, 2, "L", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_int_equal(convert(c, 2, 2, w, DLM_LOCK_PR, DLM_LKF_VALBLK, v), 0);
	drain(c);
	p = lock_on(c, 3, 3, "L", DLM_LOCK_PW, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 3, p);
	/* node 1 (the master) dies: node 2's PR copy carries the LVB */
	c->dead[1] = 1;
	recover_all(c, 1);
	assert_int_equal(unlock(c, 2, 2, w, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, p, 0);
	assert_false(comp_of(c, 3, p)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(comp_of(c, 3, p)->lvb, v, DLM_LVB_LEN);
	/* now node 3 holds PW and dies; node 2 waits and must be told the
	 * value may be stale */
	r = lock_on(c, 2, 2, "L", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, r);
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_status(c, 2, r, 0);
	assert_true(comp_of(c, 2, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_dump_lacks(c, 2, "node 3");
	assert_dump_has(c, 2, "invalid");
	cluster_free(c);
	(void)m1;
}

/* Requests made while stopped, and requests in flight to a node that
 * dies, complete after recovery. */
static void test_recover_held_and_resent(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b, d;
	char v[DLM_LVB_LEN] = "survivor's write";

	(void)state;
	x = lock_on(c, 3, 3, "Q", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	a = lock_on(c, 1, 1, "Z", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 3, x, 0);
	assert_status(c, 1, a, 0);
	/* node 1 unlocks Z writing an LVB; Z is mastered on node 1 or wherever
	 * the first request went; then a request to Q's master (node 3) is
	 * in flight when node 3 dies */
	b = lock_on(c, 2, 2, "Q", DLM_LOCK_PR, 0, 0, NULL);
	c->dead[3] = 1;
	stop_all(c);
	/* while stopped: a new request and an unlock are accepted, held */
	d = lock_on(c, 2, 2, "new", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	assert_no_comp(c, 2, d);
	start_all(c, 7);
	drain(c);
	finish_all(c, 7);
	assert_status(c, 2, b, 0);
	assert_status(c, 2, d, 0);
	assert_status(c, 1, a, -DLM_EUNLOCK);
	/* the survivor's LVB write was kept */
	a = lock_on(c, 2, 2, "Z", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, a, 0);
	assert_memory_equal(comp_of(c, 2, a)->lvb, v, DLM_LVB_LEN);
	cluster_free(c);
}


/* Deliver, in order, only the queued messages from 'from' to 'to' (and
 * none of what they cause); the others stay queued in their order. */
static void deliver_only(struct cluster *c, uint32_t from, uint32_t to)
{
	size_t n = c->qtail - c->qhead, i, keep = 0;
	struct qmsg *tmp = calloc(n ? n : 1, sizeof(*tmp));

	assert_non_null(tmp);
	for (i = 0; i < n; i++)
		tmp[i] = c->q[(c->qhead + i) % MAXQ];
	c->qhead = c->qtail = 0;
	for (i = 0; i < n; i++)
		if (!(tmp[i].from == from && tmp[i].to == to))
			c->q[c->qtail++ % MAXQ] = tmp[keep++, i];
	for (i = 0; i < n; i++)
		if (tmp[i].from == from && tmp[i].to == to)
			assert_int_equal(dlm_core_receive(c->core[to], from, tmp[i].buf,
							  tmp[i].len), 0);
	free(tmp);
}

static void assert_verified(struct cluster *c)
{
	char why[256];
	int i;

	for (i = 1; i <= c->n; i++)
		if (!c->dead[i] && dlm_core_ls_verify(c->ls[i], why, sizeof(why)))
			fail_msg("node %d: %s", i, why);
}

/* An unlock the master did just before it died: the lock it released
 * must not come back to the new master next to the lock granted in its
 * place (the reply the dead master never sent is taken as given). */
static void test_recover_inflight_unlock(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	char *text;

	(void)state;
	x = lock_on(c, 3, 3, "U", DLM_LOCK_NL, 0, 0, NULL);	/* node 3 masters U */
	drain(c);
	a = lock_on(c, 1, 1, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	b = lock_on(c, 2, 2, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, b);
	c->nasts = 0;
	/* node 1 unlocks; node 3 does it and grants node 2, whose GRANT
	 * arrives; the unlock reply to node 1 is lost as node 3 dies */
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	deliver_only(c, 1, 3);
	deliver_only(c, 3, 2);
	assert_status(c, 2, b, 0);
	assert_no_comp(c, 1, a);
	c->dead[3] = 1;
	stop_all(c);
	start_all(c, 1);
	drain(c);
	/* recovered, not yet finished: one EX holder, node 2's */
	assert_status(c, 1, a, -DLM_EUNLOCK);
	assert_verified(c);
	text = dump(c, 1);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "after recovery (node 1):\n%s", text);
	assert_null(strstr(text, "owner 1\n"));
	free(text);
	finish_all(c, 1);
	assert_verified(c);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_COMP), 1);
	(void)x;
	cluster_free(c);
}

/* Issue 11 item 5, the finding's sequence: the master of a resource is
 * also its writer; its EX unlock with VALBLK completes at once (the
 * master is local) and writes the value there alone.  The master dies.
 * A survivor's lock with VALBLK holds an older copy (read earlier, now
 * NL).  After recovery the survivor's EX must not be handed the older
 * value as valid: the newest write died with the master, so the value is
 * flagged VALNOTVALID. */
static void test_recover_lost_write_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v1[DLM_LVB_LEN] = "value 1", v2[DLM_LVB_LEN] = "value 2";
	uint32_t w1, w2, r;

	(void)state;
	w1 = lock_on(c, 2, 2, "LW", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, w1, 0);
	assert_int_equal(unlock(c, 2, 2, w1, DLM_LKF_VALBLK, v1), 0);
	drain(c);
	r = lock_on(c, 1, 1, "LW", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, r, 0);
	assert_memory_equal(comp_of(c, 1, r)->lvb, v1, DLM_LVB_LEN);
	assert_int_equal(convert(c, 1, 1, r, DLM_LOCK_NL, DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	w2 = lock_on(c, 2, 2, "LW", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, w2, 0);
	assert_int_equal(unlock(c, 2, 2, w2, DLM_LKF_VALBLK, v2), 0);
	drain(c);
	assert_status(c, 2, w2, -DLM_EUNLOCK);
	/* the master, node 2, dies with value 2 written there alone */
	c->dead[2] = 1;
	recover_all(c, 1);
	assert_int_equal(convert(c, 1, 1, r, DLM_LOCK_EX, DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	assert_status(c, 1, r, 0);
	if (!(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID))
		assert_memory_equal(comp_of(c, 1, r)->lvb, v2, DLM_LVB_LEN);
	assert_true(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_verified(c);
	cluster_free(c);
}

/* A resource no one holds, on a master that survives, keeps the value a
 * writer left in it across a recovery another node's death causes. */
static void test_recover_unused_keeps_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 60000);
	char v[DLM_LVB_LEN] = "left by node 1";
	uint32_t a, r;

	(void)state;
	a = lock_on(c, 2, 2, "K", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_int_equal(unlock(c, 2, 2, a, 0, NULL), 0);	/* node 2 masters K */
	drain(c);
	a = lock_on(c, 1, 1, "K", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	drain(c);
	assert_dump_has(c, 2, "resource \"K\" master 2 master-copy");
	assert_dump_has(c, 2, "unused");
	c->dead[3] = 1;
	recover_all(c, 1);
	r = lock_on(c, 1, 1, "K", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, r, 0);
	assert_false(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(comp_of(c, 1, r)->lvb, v, DLM_LVB_LEN);
	cluster_free(c);
}


/* Recovery 1 is aborted right after the new master took a resent lock
 * (its reply not yet back); recovery 2 resends it: the new master keeps
 * one copy, not two. */
static void test_recover_abort_dedupe(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	int steps, rc_locks = 0, i, n;
	char *text, *p;

	(void)state;
	x = lock_on(c, 3, 3, "D", DLM_LOCK_NL, 0, 0, NULL);	/* node 3 masters D */
	drain(c);
	a = lock_on(c, 1, 1, "D", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 2, 2, "D", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_status(c, 2, b, 0);
	c->dead[3] = 1;
	stop_all(c);
	start_all(c, 1);
	for (steps = 0; steps < 1000 && c->qhead != c->qtail && !rc_locks; steps++) {
		struct qmsg *m = &c->q[c->qhead++ % MAXQ];
		struct dlm_msg d;

		if (c->dead[m->to] || c->dead[m->from])
			continue;
		assert_int_equal(dlm_msg_decode(m->buf, m->len, &d, NULL), 0);
		if (d.m_type == DLM_RC_LOCK)
			rc_locks++;
		assert_int_equal(dlm_core_receive(c->core[m->to], m->from,
						  m->buf, m->len), 0);
	}
	assert_int_equal(rc_locks, 1);
	stop_all(c);
	start_all(c, 2);
	drain(c);
	finish_all(c, 2);
	for (i = 1; i <= 2; i++) {
		text = dump(c, i);
		if (getenv("TEST_CORE_VERBOSE"))
			fprintf(stderr, "node %d after:\n%s", i, text);
		for (n = 0, p = text; (p = strstr(p, " remid ")); p++)
			n++;
		if (strstr(text, "master-copy"))
			assert_int_equal(n, 1);	/* the other node's lock, once */
		free(text);
	}
	assert_verified(c);
	(void)x;
	cluster_free(c);
}

/* A recovery aborted half way by a newer event, then a node joining. */
static void test_recover_abort_and_join(void **state)
{
	struct cluster *c = cluster_new(4, 100);
	uint32_t ids[4][8];
	char name[8];
	int i, k, steps;

	(void)state;
	/* node 4 is not a member at first */
	c->dead[4] = 1;
	for (i = 1; i <= 3; i++) {
		assert_int_equal(dlm_core_ls_stop(c->ls[i]), 0);
		assert_int_equal(dlm_core_ls_start(c->ls[i], 1,
				 (uint32_t[]){ 1, 2, 3 }, 3), 0);
	}
	drain(c);
	finish_all(c, 1);
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		for (i = 1; i <= 3; i++)
			ids[i][k] = lock_on(c, i, (uint64_t)i, name, DLM_LOCK_PR,
					    0, 0, NULL);
	}
	drain(c);
	/* node 2 dies; recovery 2 is interrupted after a few messages */
	c->dead[2] = 1;
	stop_all(c);
	start_all(c, 2);
	for (steps = 0; steps < 5 && c->qhead != c->qtail; steps++) {
		struct qmsg *m = &c->q[c->qhead++ % MAXQ];

		if (!c->dead[m->to] && !c->dead[m->from])
			dlm_core_receive(c->core[m->to], m->from, m->buf, m->len);
	}
	/* node 4 joins: event 3 supersedes 2 */
	c->dead[4] = 0;
	stop_all(c);
	start_all(c, 3);
	drain(c);
	finish_all(c, 3);
	/* every survivor's lock is still there, granted; node 2's are gone */
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		for (i = 1; i <= 3; i += 2)
			assert_status(c, i, ids[i][k], 0);
		/* an EX from the new node waits for both PR holders */
		ids[0][k] = lock_on(c, 4, 4, name, DLM_LOCK_EX, 0, 0, NULL);
	}
	drain(c);
	for (k = 0; k < 8; k++) {
		assert_no_comp(c, 4, ids[0][k]);
		assert_int_equal(unlock(c, 1, 1, ids[1][k], 0, NULL), 0);
		assert_int_equal(unlock(c, 3, 3, ids[3][k], 0, NULL), 0);
	}
	drain(c);
	for (k = 0; k < 8; k++)
		assert_status(c, 4, ids[0][k], 0);
	assert_dump_lacks(c, 1, "node 2 ");
	assert_int_equal(c->nlog_warn, 0);
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
		cmocka_unit_test(test_lvb),
		cmocka_unit_test(test_cancel_and_force),
		cmocka_unit_test(test_parent_locks),
		cmocka_unit_test(test_parent_deep),
		cmocka_unit_test(test_range_locks),
		cmocka_unit_test(test_orphans),
		cmocka_unit_test(test_purge_orphan_group),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_three_nodes),
		cmocka_unit_test(test_stale_master),
		cmocka_unit_test(test_overlaps),
		cmocka_unit_test(test_bad_messages),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_recover_master_dies),
		cmocka_unit_test(test_recover_purge_and_lvb),
		cmocka_unit_test(test_recover_held_and_resent),
		cmocka_unit_test(test_recover_abort_and_join),
		cmocka_unit_test(test_recover_inflight_unlock),
		cmocka_unit_test(test_recover_unused_keeps_lvb),
		cmocka_unit_test(test_recover_lost_write_lvb),
		cmocka_unit_test(test_recover_abort_dedupe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
