/*
 * tests/test-lowcomms-stress.c: lowcomms under load over TCP loopback:
 * a million small messages without loss, connections shut down under load,
 * an endpoint's socket layer killed and restarted mid-stream, and its
 * context destroyed and recreated mid-stream, each with zero messages lost
 * and zero delivered twice; wire faults injected.  The bodies are the
 * harness's, shared with test-lowcomms-sctp.c; this file says how TCP
 * runs them.  Bounded by MAX_MS per test.
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

/* Shut the k-th connection down from node 1's side or node 2's. */
static int shutdown_action(struct h_world *w, int k)
{
	int side = k % 2;
	int fd = lc_node_fd(w->w_eps[side].ep_lc, (uint32_t)(2 - side));

	if (fd < 0)
		return 0;
	return shutdown(fd, SHUT_RDWR) == 0 ? 1 : -errno;
}

/*
 * The shared tests (test-lowcomms-harness.h) over TCP, with no window:
 * every test counts each message exactly once.  In the recreate test
 * (node 2's context destroyed mid-stream, a new one on its port: a
 * restarted node with a new epoch) that holds because over TCP the old
 * context's last ack reaches node 1 before the connection's end, so the
 * receiving application's counters (kept outside the context) see every
 * message once.  Not a promise of lowcomms: see KNOWN LIMITS in
 * lowcomms.c, and the same test over SCTP.
 */
static const struct h_transport tcp = {
	.tr_addr = LOOPBACK,
	.tr_config = h_config,
	.tr_max_ms = MAX_MS,
	.tr_stream = 1000000L,
	.tr_stream_env = "LC_STRESS_COUNT",
	.tr_burst = 20000,
	.tr_slow_burst = 500,
	.tr_window = 0,
	.tr_reconnect = shutdown_action,
	.tr_reconnect_name = "shutdown",
	.tr_reconnects = 8,
	.tr_reconnect_count = 200000,
	.tr_restart_count = 200000,
	.tr_restarts = 3,
	.tr_recreate_count = 300000,
	.tr_fault_count = 100000,
};

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
		cmocka_unit_test_prestate(h_transport_stream, (void *)&tcp),
		cmocka_unit_test_prestate(h_transport_reconnects, (void *)&tcp),
		cmocka_unit_test_prestate(h_transport_restart_sockets,
					  (void *)&tcp),
		cmocka_unit_test_prestate(h_transport_recreate, (void *)&tcp),
		cmocka_unit_test_prestate(h_transport_fault_duplicate,
					  (void *)&tcp),
		cmocka_unit_test_prestate(h_transport_fault_skip, (void *)&tcp),
		cmocka_unit_test(test_fault_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
