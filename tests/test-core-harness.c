/*
 * tests/test-core-harness.c - the harness of the lock engine's unit
 * tests: see tests/test-core.h.
 */
#include "tests/test-core.h"
#include "core/core_internal.h"

struct nodectx nctx[MAXN + 1];

static void h_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct nodectx *nc = ctx;
	struct cluster *c = nc->c;
	struct qmsg *m;
	struct dlm_msg dm;

	if (!dlm_msg_decode(buf, len, &dm, NULL) && dm.m_type <= DLM_MSG_MAX) {
		const unsigned char *key;
		unsigned int off = 0, keylen;

		c->sent[dm.m_type]++;
		if (dm.m_type == DLM_RC_DIR_ADD)
			c->dir_records++;
		while (dm.m_type == DLM_RC_DIR_ADDS &&
		       dlm_key_list_next(dm.m_key, dm.m_keylen, &off, &key,
					 &keylen))
			c->dir_records++;
	}
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

static void h_failed(void *ctx, struct dlm_ls *ls, uint32_t event, int error)
{
	struct nodectx *nc = ctx;

	(void)ls;
	nc->c->failed_event[nc->node] = event;
	nc->c->failed_error[nc->node] = error;
}

uint32_t cluster_remaster_ticks;
uint32_t cluster_remaster_shared;
uint32_t cluster_max_tossed;
uint32_t cluster_fold;

/* A cluster whose resources start their LVB sequence at 'lvbseq'. */
struct cluster *cluster_new_seq(int n, uint32_t toss_ms, uint32_t lvbseq)
{
	static const struct dlm_core_ops ops = {
		.send = h_send, .ast = h_ast, .log = h_log, .recovery_done = h_done,
		.recovery_failed = h_failed,
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
		struct dlm_core_config cfg = {
			.our_nodeid = (uint32_t)i, .toss_ms = toss_ms,
			.lvbseq_start = lvbseq,
			.remaster_ticks = cluster_remaster_ticks,
			.remaster_shared = cluster_remaster_shared,
			.max_tossed = cluster_max_tossed,
			/* TEST_CORE_FOLD=1 runs every test with lone locks
			 * folded (core/solo.c) */
			.fold = cluster_fold || getenv("TEST_CORE_FOLD"),
		};

		nctx[i].c = c;
		nctx[i].node = i;
		c->core[i] = dlm_core_new(&cfg, &ops, &nctx[i]);
		assert_non_null(c->core[i]);
		assert_int_equal(dlm_core_ls_create(c->core[i], "test", members,
						    (unsigned)n, NULL, &c->ls[i]), 0);
	}
	return c;
}

struct cluster *fold_cluster(int n)
{
	struct cluster *c;

	cluster_fold = 1;
	c = cluster_new(n, 1000);
	cluster_fold = 0;
	return c;
}

int fail_all(void *arg)
{
	(void)arg;
	return 1;
}

struct cluster *cluster_new(int n, uint32_t toss_ms)
{
	return cluster_new_seq(n, toss_ms, 0);
}

void cluster_free(struct cluster *c)
{
	int i;

	for (i = 1; i <= c->n; i++)
		dlm_core_free(c->core[i]);
	free(c->q);
	free(c);
}

/* Deliver every queued message (and what they cause), in FIFO order. */
void drain(struct cluster *c)
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

uint32_t lock_on(struct cluster *c, int node, uint64_t owner,
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

int try_lock(struct cluster *c, int node, uint64_t owner,
	     const char *name, int mode, uint32_t flags)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = flags, .name = name,
		.namelen = (unsigned)strlen(name), .owner = owner,
	};
	uint32_t lkid;

	return dlm_core_lock(c->ls[node], &rq, &lkid);
}

int convert(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
	    int mode, uint32_t flags, const char *lvb)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = flags | DLM_LKF_CONVERT, .lkid = lkid,
		.owner = owner, .astarg = owner, .lvb = lvb, .want_bast = 1,
	};
	uint32_t out;

	return dlm_core_lock(c->ls[node], &rq, &out);
}

int unlock(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
	   uint32_t flags, const char *lvb)
{
	struct dlm_unlock_req rq = {
		.lkid = lkid, .flags = flags, .lvb = lvb, .owner = owner,
		.astarg = owner,
	};

	return dlm_core_unlock(c->ls[node], &rq);
}

/* The last completion AST for lkid on node (asserting there is one). */
struct rec_ast *comp_of(struct cluster *c, int node, uint32_t lkid)
{
	int i;

	for (i = c->nasts - 1; i >= 0; i--)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == DLM_AST_COMP)
			return &c->asts[i];
	return NULL;
}

int count_asts(struct cluster *c, int node, uint32_t lkid, int type)
{
	int i, n = 0;

	for (i = 0; i < c->nasts; i++)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == (enum dlm_ast_type)type)
			n++;
	return n;
}

int last_bast_mode(struct cluster *c, int node, uint32_t lkid)
{
	int i;

	for (i = c->nasts - 1; i >= 0; i--)
		if (c->asts[i].node == node && c->asts[i].a.lkid == lkid &&
		    c->asts[i].a.type == DLM_AST_BAST)
			return c->asts[i].a.bastmode;
	return DLM_LOCK_IV;
}

void assert_status(struct cluster *c, int node, uint32_t lkid, int st)
{
	struct rec_ast *r = comp_of(c, node, lkid);

	if (!r)
		fail_msg("no completion AST for lock %08x on node %d", lkid, node);
	if (r->a.status != st)
		fail_msg("lock %08x on node %d: status %d, expected %d", lkid,
			 node, r->a.status, st);
}

void assert_no_comp(struct cluster *c, int node, uint32_t lkid)
{
	if (comp_of(c, node, lkid))
		fail_msg("unexpected completion AST for lock %08x", lkid);
}

char *dump(struct cluster *c, int node)
{
	char *text = NULL;

	assert_int_equal(dlm_core_ls_dump(c->ls[node], &text), 0);
	return text;
}

void assert_dump_has(struct cluster *c, int node, const char *needle)
{
	char *text = dump(c, node);

	if (!strstr(text, needle))
		fail_msg("dump of node %d lacks \"%s\":\n%s", node, needle, text);
	free(text);
}

void assert_dump_lacks(struct cluster *c, int node, const char *needle)
{
	char *text = dump(c, node);

	if (strstr(text, needle))
		fail_msg("dump of node %d has \"%s\":\n%s", node, needle, text);
	free(text);
}

void stop_all(struct cluster *c)
{
	int i;

	for (i = 1; i <= c->n; i++)
		if (!c->dead[i])
			assert_int_equal(dlm_core_ls_stop(c->ls[i]), 0);
}

void start_all(struct cluster *c, uint32_t event)
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

void finish_all(struct cluster *c, uint32_t event)
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
void recover_all(struct cluster *c, uint32_t event)
{
	stop_all(c);
	start_all(c, event);
	drain(c);
	finish_all(c, event);
}

/* Deliver, in order, only the queued messages from 'from' to 'to' (and
 * none of what they cause); the others stay queued in their order. */
void deliver_only(struct cluster *c, uint32_t from, uint32_t to)
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

void assert_verified(struct cluster *c)
{
	char why[256];
	int i;

	for (i = 1; i <= c->n; i++)
		if (!c->dead[i] && dlm_core_ls_verify(c->ls[i], why, sizeof(why)))
			fail_msg("node %d: %s", i, why);
}

/* A root name "<prefix><i>" whose directory node among nodes 1..n is
 * 'dir' (rendezvous placement, core/resource.c), into name. */
void name_directed_by(const char *prefix, uint32_t n, uint32_t dir,
		      char *name, size_t len)
{
	uint32_t members[MAXN], k;
	unsigned char key[32];
	int i;

	assert_true(n <= MAXN);
	for (k = 0; k < n; k++)
		members[k] = k + 1;
	for (i = 0; i < 1000; i++) {
		snprintf(name, len, "%s%d", prefix, i);
		assert_true(strlen(name) < sizeof(key));
		key[0] = (unsigned char)strlen(name);
		memcpy(key + 1, name, key[0]);
		if (dlm_dir_nodeid_of(members, n, dlm_hash_bytes(key,
							    key[0] + 1u)) == dir)
			return;
	}
	fail_msg("no name directed by node %u", dir);
}
