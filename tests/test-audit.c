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
#include "tests/engine-net-harness.h"

#define AUDIT_MS	10000
#define STEP_MS		5000	/* the audit's scan */

/* "is stuck" and "no longer stuck" log lines, per node, of the current
 * test's network */
static int stuck_logs[3], unstuck_logs[3];

static void count_stuck_logs(struct net *n, int node, enum dlm_log_level level,
			     const char *line)
{
	(void)n;
	if (strstr(line, "is stuck")) {
		assert_int_equal(level, DLM_LOG_ERR);
		stuck_logs[node]++;
	}
	if (strstr(line, "no longer stuck"))
		unstuck_logs[node]++;
}

static struct net *net_new_cfg(uint32_t toss_ms, uint32_t audit_ms)
{
	struct dlm_core_config cfg = {
		.toss_ms = toss_ms, .audit_ms = audit_ms,
	};
	struct net *n;

	memset(stuck_logs, 0, sizeof(stuck_logs));
	memset(unstuck_logs, 0, sizeof(unstuck_logs));
	n = enet_new(2, "audit", &cfg, STEP_MS);
	n->on_log = count_stuck_logs;
	return n;
}

static struct net *net_new(void)
{
	return net_new_cfg(3600000, AUDIT_MS);
}

/* Completion ASTs on node, and the last one's status. */
static int comps_on(struct net *n, int node)
{
	return comps_of(n, node, 0, NULL, NULL);
}

static int last_status(struct net *n, int node)
{
	int status = 1;

	assert_true(comps_of(n, node, 0, &status, NULL) > 0);
	return status;
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
	assert_int_equal(comps_on(n, 1), 1);
	assert_int_equal(last_status(n, 1), 0);
	*queued = lock(n, 2, DLM_LOCK_EX, 21);
	drain(n);
	assert_int_equal(comps_on(n, 2), 0);
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
	assert_int_equal(stuck_logs[2], 0);
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(comps_on(n, 2), 1);
	assert_int_equal(last_status(n, 2), 0);
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
	assert_int_equal(comps_on(n, 2), 0);
	assert_int_equal(stuck(n, 2), 0);
	pass(n, 2 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(stuck_logs[2], 1);
	assert_int_equal(stuck(n, 1), 0);
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(stuck_logs[2], 1);	/* reported once */
	assert_int_equal(stuck(n, 2), 1);
	/* the owner gives up: a cancel settles it (the master answers that
	 * the lock is granted: -EBUSY, then the unlock frees it) */
	unlock(n, 2, queued, 21, DLM_LKF_FORCEUNLOCK);
	drain(n);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(unstuck_logs[2], 1);
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
	assert_int_equal(stuck_logs[2], 1);
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
	assert_int_equal(stuck_logs[2], 1);
	n->deaf = 0;
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(comps_on(n, 2), 1);
	assert_int_equal(last_status(n, 2), 0);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(unstuck_logs[2], 1);
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
	assert_int_equal(stuck_logs[2], 1);
	n->stopped = 0;
	release_held(n);
	drain(n);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(unstuck_logs[2], 1);
	assert_int_equal(comps_on(n, 2), 0);	/* still queued, rightly */
	pass(n, 3 * AUDIT_MS);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(stuck_logs[2], 1);
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(comps_on(n, 2), 1);
	net_free(n);
}

static int fail_all(void *arg)
{
	(void)arg;
	return 1;
}

/* Node 2 has no memory when its request is queued at node 1, the master
 * (the reply says "queued"): its wait cannot be put on the audit's list.
 * It is put there at the next audit pass, so when its GRANT is lost it is
 * still found stuck.  (It went unaudited until it was queued again.) */
static void test_nomem_retried(void **state)
{
	struct net *n = net_new();
	uint32_t held, queued;

	(void)state;
	held = lock(n, 1, DLM_LOCK_EX, 11);
	drain(n);
	assert_int_equal(comps_on(n, 1), 1);
	queued = lock(n, 2, DLM_LOCK_EX, 21);
	dlm_core_set_alloc_hook(n->core[2], fail_all, NULL);
	drain(n);		/* the reply "queued" finds no memory */
	dlm_core_set_alloc_hook(n->core[2], NULL, NULL);
	assert_int_equal(comps_on(n, 2), 0);
	n->lose_type = DLM_MSG_GRANT;
	unlock(n, 1, held, 11, 0);
	drain(n);
	assert_int_equal(n->lost, 1);
	assert_int_equal(comps_on(n, 2), 0);
	pass(n, 3 * AUDIT_MS);
	assert_true(audits(n, 2) >= 1);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(stuck_logs[2], 1);
	unlock(n, 2, queued, 21, DLM_LKF_FORCEUNLOCK);
	drain(n);
	assert_int_equal(stuck(n, 2), 0);
	net_free(n);
}

/* Node 2's request is queued at node 1 while node 2 has no memory, which
 * stays short: its wait is not on the audit's list, and every audit pass
 * tries again and fails.  Node 2 then cancels the request and the
 * CANCEL_REPLY is lost: the cancel, an operation in flight, is audited
 * one period later and its lost reply found.  Before (seen failing: no
 * audit, nothing stuck) each retry restarted the lock's clock, shared
 * with the cancel's audit, which was never due while memory was short. */
static void test_nomem_retry_keeps_inflight_audit(void **state)
{
	struct net *n = net_new();
	uint32_t held, queued;

	(void)state;
	held = lock(n, 1, DLM_LOCK_EX, 11);
	drain(n);
	assert_int_equal(comps_on(n, 1), 1);
	queued = lock(n, 2, DLM_LOCK_EX, 21);
	dlm_core_set_alloc_hook(n->core[2], fail_all, NULL);
	drain(n);		/* the reply "queued" finds no memory */
	assert_int_equal(comps_on(n, 2), 0);
	pass(n, AUDIT_MS);	/* retried, and failing, at each pass */
	assert_int_equal(audits(n, 2), 0);
	n->lose_type = DLM_MSG_CANCEL_REPLY;
	unlock(n, 2, queued, 21, DLM_LKF_CANCEL);
	drain(n);
	assert_int_equal(n->lost, 1);
	assert_int_equal(comps_on(n, 2), 0);
	pass(n, 3 * AUDIT_MS);
	assert_true(audits(n, 2) >= 1);
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(stuck_logs[2], 1);
	pass(n, 3 * AUDIT_MS);	/* the retries leave the mark alone */
	assert_int_equal(stuck(n, 2), 1);
	assert_int_equal(unstuck_logs[2], 0);
	dlm_core_set_alloc_hook(n->core[2], NULL, NULL);
	(void)held;
	net_free(n);
}

/* audit_ms 0 turns it off: nothing is sent, nothing reported. */
static void test_audit_off(void **state)
{
	struct net *n = net_new_cfg(1000, 0);

	(void)state;
	lock(n, 2, DLM_LOCK_EX, 21);	/* a lookup to node 1, never answered */
	n->nq = 0;
	for (uint64_t t = 0; t < 10; t++)
		dlm_core_tick(n->core[2], 1000 + t * 60000);
	assert_int_equal(audits(n, 2), 0);
	assert_int_equal(stuck(n, 2), 0);
	assert_int_equal(n->nq, 0);
	net_free(n);
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
		cmocka_unit_test(test_nomem_retried),
		cmocka_unit_test(test_nomem_retry_keeps_inflight_audit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
