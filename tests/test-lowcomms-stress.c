/*
 * tests/test-lowcomms-stress.c: lowcomms under load over TCP loopback:
 * a million small messages without loss, connections shut down under load,
 * an endpoint's socket layer killed and restarted mid-stream, and its
 * context destroyed and recreated mid-stream, each with zero messages lost
 * and zero delivered twice.  Bounded by MAX_MS per test.
 *
 * LC_STRESS_COUNT overrides the message count of the million test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/test-lowcomms-harness.h"

#define MAX_MS		60000
#define LOOPBACK	"127.0.0.1"
#define MILLION		1000000L
/* Messages queued per loop iteration while streaming. */
#define BURST		20000
#define SHUTDOWNS	8
/* ... in the reconnect tests, so that they span many iterations. */
#define SLOW_BURST	500
#define RESTARTS	3

static void test_million(void **state)
{
	const char *env = getenv("LC_STRESS_COUNT");
	struct h_stream s = { env ? atol(env) : MILLION, false, BURST, 0 };

	(void)state;
	h_world_free(h_test_stream(LOOPBACK, h_config, &s, NULL, MAX_MS,
				   "million"));
}

/* Shut the k-th connection down from node 1's side or node 2's. */
static int shutdown_action(struct h_world *w, int k)
{
	int side = k % 2;
	int fd = lc_node_fd(w->w_eps[side].ep_lc, (uint32_t)(2 - side));

	if (fd < 0)
		return 0;
	return shutdown(fd, SHUT_RDWR) == 0 ? 1 : -errno;
}

/* Shut the connection down from one side or the other, several times,
 * while both directions stream. */
static void test_shutdown_under_load(void **state)
{
	struct h_stream s = { 200000, true, SLOW_BURST, 0 };

	(void)state;
	h_test_reconnects(LOOPBACK, h_config, &s, SHUTDOWNS, shutdown_action,
			  MAX_MS, "shutdown");
}

/* Kill and restart node 2's socket layer, then node 1's, mid-stream both
 * ways (lc_restart(): the contexts and their sequence state live on):
 * nothing lost, nothing delivered twice. */
static void test_restart_sockets(void **state)
{
	(void)state;
	h_test_restart_sockets(LOOPBACK, h_config, 200000, RESTARTS + 1,
			       MAX_MS);
}

/*
 * Node 2's context is destroyed mid-stream and a new one takes its place on
 * the same port: a restarted node, with a new epoch.  Node 1 resends what
 * node 2 had not acknowledged; node 2's new context starts from node 1's
 * send base.  Over TCP the old context's last ack reaches node 1 before the
 * connection's end, so the receiving application's counters (kept outside
 * the context) see every message exactly once.  (Not a promise of
 * lowcomms: see KNOWN LIMITS in lowcomms.c, and the same test over SCTP.)
 */
static void test_recreate_receiver(void **state)
{
	struct h_stream s = { 300000, false, SLOW_BURST, 0 };
	struct h_world *w;

	(void)state;
	w = h_test_recreate(LOOPBACK, h_config, &s, RESTARTS, MAX_MS);
	assert_int_equal(w->w_eps[1].ep_rx_errors, 0);
	assert_int_equal(w->w_eps[1].ep_rx_total, s.st_target);
	h_world_free(w);
}

/* Injected faults on the wire, both directions: duplicated frames are
 * dropped by the receiver, skipped frames cause a reconnect and a resend. */
static void run_with_fault(enum lc_fault_kind kind, uint32_t every)
{
	struct h_stream s = { 100000, true, SLOW_BURST, 0 };
	struct lc_fault flt = { kind, 0, every };
	struct h_world *w;
	struct lc_stats st[2];

	w = h_test_stream(LOOPBACK, h_config, &s, &flt, MAX_MS,
			  kind == LC_FAULT_SKIP ? "skip" : "duplicate");
	for (int i = 0; i < 2; i++)
		lc_get_stats(w->w_eps[i].ep_lc, &st[i]);
	if (kind == LC_FAULT_DUPLICATE)
		assert_true(st[0].st_dups_dropped + st[1].st_dups_dropped >=
			    st[0].st_faults + st[1].st_faults);
	else
		assert_true(st[0].st_conn_lost + st[1].st_conn_lost > 0);
	h_world_free(w);
}

static void test_fault_duplicate(void **state)
{
	(void)state;
	run_with_fault(LC_FAULT_DUPLICATE, 7);
}

static void test_fault_skip(void **state)
{
	(void)state;
	run_with_fault(LC_FAULT_SKIP, 9973);
}

static void test_fault_rules(void **state)
{
	struct h_world *w = h_world_new(1, LOOPBACK, NULL);
	struct lc_fault bad_skip = { LC_FAULT_SKIP, 0, 1 };
	struct lc_fault bad_every = { LC_FAULT_DUPLICATE, 0, 0 };
	struct lc_fault bad_kind = { (enum lc_fault_kind)9, 0, 3 };
	struct lc_fault none = { LC_FAULT_NONE, 0, 0 };

	(void)state;
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_skip), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_every), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_kind), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &none), 0);
	h_world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_shutdown_under_load),
		cmocka_unit_test(test_restart_sockets),
		cmocka_unit_test(test_recreate_receiver),
		cmocka_unit_test(test_fault_duplicate),
		cmocka_unit_test(test_fault_skip),
		cmocka_unit_test(test_fault_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
