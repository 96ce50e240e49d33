/*
 * tests/test-lowcomms-stress.c: lowcomms under load over TCP loopback:
 * a million small messages without loss, connections shut down under load,
 * an endpoint's socket layer killed and restarted mid-stream, and its
 * context destroyed and recreated mid-stream, each with zero messages lost
 * and zero delivered twice; wire faults injected.  The bodies are the
 * harness's, shared with test-lowcomms-sctp.c (h_transports[H_TCP] says
 * how TCP runs them: no window, so every test counts each message
 * exactly once).
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
#include <unistd.h>

#include <cmocka.h>

#include "tests/test-lowcomms-harness.h"

#define LOOPBACK	"127.0.0.1"

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
		cmocka_unit_test_prestate(h_transport_stream, (void *)&h_transports[H_TCP]),
		cmocka_unit_test_prestate(h_transport_reconnects, (void *)&h_transports[H_TCP]),
		cmocka_unit_test_prestate(h_transport_restart_sockets,
					  (void *)&h_transports[H_TCP]),
		cmocka_unit_test_prestate(h_transport_recreate, (void *)&h_transports[H_TCP]),
		cmocka_unit_test_prestate(h_transport_fault_duplicate,
					  (void *)&h_transports[H_TCP]),
		cmocka_unit_test_prestate(h_transport_fault_skip, (void *)&h_transports[H_TCP]),
		cmocka_unit_test(test_fault_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
