/*
 * tests/test-audit.c - the engine's audit of waiting locks (core/audit.c)
 * on two engines joined by an in-memory network that can lose chosen
 * messages: a lost grant, a lost reply and a master that stops answering
 * are each reported as a stuck lock, and a lock that merely waits behind
 * a holder never is.
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

#define AUDIT_MS	10000
#define MAXQ		256

struct qmsg {
	uint32_t from, to;
	size_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

struct net {
	struct dlm_core *core[3];
	struct dlm_ls *ls[3];
	struct qmsg q[MAXQ];
	size_t nq;
	uint64_t now;
	int lose_type;		/* drop the next message of this type ... */
	uint32_t lose_to;	/* ... to this node (0: any) */
	int lost;
	int deaf;		/* node whose incoming messages are all lost */
	int stopped;		/* node whose incoming messages wait */
	struct qmsg held[MAXQ];
	size_t nheld;
	int comps[3];		/* completion ASTs per node */
	int last_status[3];
	int stuck_logs[3], unstuck_logs[3];
};

struct ctx {
	struct net *n;
	int node;
} ctxs[3];

static void h_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct ctx *c = ctx;
	struct net *n = c->n;

	assert_true(n->nq < MAXQ);
	n->q[n->nq].from = (uint32_t)c->node;
	n->q[n->nq].to = to;
	n->q[n->nq].len = len;
	memcpy(n->q[n->nq].buf, buf, len);
	n->nq++;
}

static void h_ast(void *ctx, const struct dlm_ast *a)
{
	struct ctx *c = ctx;

	if (a->type == DLM_AST_COMP) {
		c->n->comps[c->node]++;
		c->n->last_status[c->node] = a->status;
	}
}

static void h_log(void *ctx, enum dlm_log_level level, const char *line)
{
	struct ctx *c = ctx;

	if (strstr(line, "is stuck")) {
		assert_int_equal(level, DLM_LOG_ERR);
		c->n->stuck_logs[c->node]++;
	}
	if (strstr(line, "no longer stuck"))
		c->n->unstuck_logs[c->node]++;
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "node %d: %s\n", c->node, line);
}

static struct net *net_new(void)
{
	static const struct dlm_core_ops ops = {
		.send = h_send, .ast = h_ast, .log = h_log,
	};
	static const uint32_t members[] = { 1, 2 };
	struct net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->now = 1000;
	for (int i = 1; i <= 2; i++) {
		struct dlm_core_config cfg = {
			.our_nodeid = (uint32_t)i, .toss_ms = 3600000,
			.audit_ms = AUDIT_MS,
		};

		ctxs[i].n = n;
		ctxs[i].node = i;
		n->core[i] = dlm_core_new(&cfg, &ops, &ctxs[i]);
		assert_non_null(n->core[i]);
		dlm_core_tick(n->core[i], n->now);
		assert_int_equal(dlm_core_ls_create(n->core[i], "audit", members, 2,
						    NULL, &n->ls[i]), 0);
	}
	return n;
}

static void net_free(struct net *n)
{
	for (int i = 1; i <= 2; i++)
		dlm_core_free(n->core[i]);
	free(n);
}

static int msg_type(const struct qmsg *m)
{
	return m->buf[6] | (m->buf[7] << 8);
}

/* Deliver everything queued, in order, losing what the test asks. */
static void drain(struct net *n)
{
	for (int guard = 0; n->nq && guard < 1000; guard++) {
		struct qmsg m = n->q[0];

		memmove(n->q, n->q + 1, (n->nq - 1) * sizeof(n->q[0]));
		n->nq--;
		if ((int)m.to == n->deaf)
			continue;
		if ((int)m.to == n->stopped) {
			assert_true(n->nheld < MAXQ);
			n->held[n->nheld++] = m;
			continue;
		}
		if (n->lose_type && msg_type(&m) == n->lose_type &&
		    (!n->lose_to || m.to == n->lose_to)) {
			n->lose_type = 0;
			n->lost++;
			continue;
		}
		assert_int_equal(dlm_core_receive(n->core[m.to], m.from, m.buf,
						  m.len), 0);
	}
	assert_int_equal(n->nq, 0);
}

/* Let ms pass on both nodes, in scan-sized steps, delivering as we go. */
static void pass(struct net *n, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += 5000) {
		n->now += 5000;
		for (int i = 1; i <= 2; i++)
			dlm_core_tick(n->core[i], n->now);
		drain(n);
	}
}

static uint64_t stuck(struct net *n, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(n->ls[node], &st);
	return st.ls_stuck;
}

static uint64_t audits(struct net *n, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(n->ls[node], &st);
	return st.ls_audits_sent;
}

static uint32_t lock(struct net *n, int node, int mode, uint64_t owner)
{
	struct dlm_lock_req rq = {
		.mode = mode, .name = "res", .namelen = 3, .owner = owner,
		.astarg = owner,
	};
	uint32_t lkid = 0;

	assert_int_equal(dlm_core_lock(n->ls[node], &rq, &lkid), 0);
	return lkid;
}

static void unlock(struct net *n, int node, uint32_t lkid, uint64_t owner,
		   uint32_t flags)
{
	struct dlm_unlock_req rq = {
		.lkid = lkid, .owner = owner, .astarg = owner, .flags = flags,
	};

	assert_int_equal(dlm_core_unlock(n->ls[node], &rq), 0);
}

/* Node 1 masters "res" and holds it EX; node 2's EX request is queued
 * there. */
static struct net *setup_queued(uint32_t *held, uint32_t *queued)
{
	struct net *n = net_new();

	*held = lock(n, 1, DLM_LOCK_EX, 11);
	drain(n);
	assert_int_equal(n->comps[1], 1);
	assert_int_equal(n->last_status[1], 0);
	*queued = lock(n, 2, DLM_LOCK_EX, 21);
	drain(n);
	assert_int_equal(n->comps[2], 0);
	return n;
}

/* A lock queued behind a holder for a long time is audited and agreed
 * with, every period, and never called stuck; when the holder lets go it
 * is granted as usual. */
static void test_waiting_is_not_stuck(void **state)
{
	uint32_t held, queued;
	struct net *n = setup_queued(&held, &queued);

	(void)state;
	pass(n, 6 * AUDIT_MS);
	assert_true(audits(n, 2) >= 4);
	assert_int_equal(audits(n, 1), 0);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(stuck(n, 1), 0);
	assert_int_equal(n->stuck_logs[2], 0);
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(n->comps[2], 1);
	assert_int_equal(n->last_status[2], 0);
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 0);
	net_free(n);
}

/* The master grants the queued lock and the GRANT is lost: the audit
 * finds the master's copy granted and the lock is reported stuck (once),
 * within two audit periods, while the holder's node sees nothing wrong. */
static void test_lost_grant(void **state)
{
	uint32_t held, queued;
	struct net *n = setup_queued(&held, &queued);

	(void)state;
	n->lose_type = DLM_MSG_GRANT;
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(n->lost, 1);
	assert_int_equal(n->comps[2], 0);
	assert_int_equal(stuck(n, 2), 0);
	pass(n, 2 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(n->stuck_logs[2], 1);
	assert_int_equal(stuck(n, 1), 0);
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(n->stuck_logs[2], 1);	/* reported once */
	assert_int_equal(stuck(n, 2), 1);
	/* the owner gives up: a cancel settles it (the master answers that
	 * the lock is granted: -EBUSY, then the unlock frees it) */
	unlock(n, 2, queued, 21, DLM_LKF_FORCEUNLOCK);
	drain(n);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(n->unstuck_logs[2], 1);
	net_free(n);
}

/* The reply to a request is lost: the master answers the audit, which it
 * can only do after answering the request, so the request's reply was
 * lost. */
static void test_lost_reply(void **state)
{
	struct net *n = net_new();
	uint32_t held;

	(void)state;
	held = lock(n, 1, DLM_LOCK_EX, 11);
	drain(n);
	n->lose_type = DLM_MSG_REQUEST_REPLY;
	lock(n, 2, DLM_LOCK_PR, 21);
	drain(n);
	assert_int_equal(n->lost, 1);
	pass(n, AUDIT_MS / 2);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(audits(n, 2), 0);
	pass(n, AUDIT_MS / 2);	/* one period: audited and answered */
	assert_int_equal(audits(n, 2), 1);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(n->stuck_logs[2], 1);
	(void)held;
	net_free(n);
}

/* The master stops answering (its daemon stopped; the network is fine):
 * an audit unanswered for a whole period reports the lock stuck; when
 * the master comes back and grants it, it is no longer stuck. */
static void test_master_silent(void **state)
{
	uint32_t held, queued;
	struct net *n = setup_queued(&held, &queued);

	(void)state;
	n->deaf = 1;
	pass(n, AUDIT_MS);
	assert_int_equal(stuck(n, 2), 0);
	pass(n, 2 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(n->stuck_logs[2], 1);
	n->deaf = 0;
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(n->comps[2], 1);
	assert_int_equal(n->last_status[2], 0);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(n->unstuck_logs[2], 1);
	net_free(n);
}

/* The master's daemon is stopped for a while (its messages wait, none is
 * lost): the lock is reported stuck, and the late answer, which agrees,
 * ends that without any change of the lock. */
static void test_master_late(void **state)
{
	uint32_t held, queued;
	struct net *n = setup_queued(&held, &queued);

	(void)state;
	n->stopped = 1;
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(n->stuck_logs[2], 1);
	n->stopped = 0;
	memcpy(n->q + n->nq, n->held, n->nheld * sizeof(n->q[0]));
	n->nq += n->nheld;
	n->nheld = 0;
	drain(n);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(n->unstuck_logs[2], 1);
	assert_int_equal(n->comps[2], 0);	/* still queued, rightly */
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(n->stuck_logs[2], 1);
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(n->comps[2], 1);
	net_free(n);
}

/* audit_ms 0 turns it off: nothing is sent, nothing reported. */
static void test_audit_off(void **state)
{
	static const struct dlm_core_ops ops = { .send = h_send, .ast = h_ast,
						 .log = h_log };
	struct dlm_core_config cfg = { .our_nodeid = 2, .toss_ms = 1000 };
	static const uint32_t members[] = { 1, 2 };
	struct net *n = calloc(1, sizeof(*n));
	struct dlm_ls_stats st;

	(void)state;
	assert_non_null(n);
	ctxs[2].n = n;
	ctxs[2].node = 2;
	n->core[2] = dlm_core_new(&cfg, &ops, &ctxs[2]);
	assert_non_null(n->core[2]);
	assert_int_equal(dlm_core_ls_create(n->core[2], "audit", members, 2,
					    NULL, &n->ls[2]), 0);
	lock(n, 2, DLM_LOCK_EX, 21);	/* a lookup to node 1, never answered */
	n->nq = 0;
	for (uint64_t t = 0; t < 10; t++)
		dlm_core_tick(n->core[2], 1000 + t * 60000);
	dlm_core_ls_stats(n->ls[2], &st);
	assert_int_equal(st.ls_audits_sent, 0);
	assert_int_equal(st.ls_stuck, 0);
	assert_int_equal(n->nq, 0);
	dlm_core_free(n->core[2]);
	free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waiting_is_not_stuck),
		cmocka_unit_test(test_lost_grant),
		cmocka_unit_test(test_lost_reply),
		cmocka_unit_test(test_master_silent),
		cmocka_unit_test(test_master_late),
		cmocka_unit_test(test_audit_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
