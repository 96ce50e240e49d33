/*
 * tests/test-lowcomms-sctp.c: the loopback tests of TCP, through SCTP.
 *
 * Every endpoint runs with cfg_transport = SCTP: the kernel's SCTP where it
 * exists, libusrsctp (SCTP over UDP, one stack for the whole process, on a
 * free UDP port) where it does not.  The harness and its per-pair counters
 * are those of the TCP tests, so loss, duplication and reordering are caught
 * the same way: ordering between three nodes, a long stream, connections
 * reset under load in both directions, an endpoint's socket layer killed
 * and restarted mid-stream (exactly once), a receiver's context recreated
 * mid-stream (a new node: repeats allowed, no loss), wire faults (those
 * bodies are the harness's, shared with test-lowcomms-stress.c), refusal
 * of a stranger, and two addresses per node (one association over both);
 * and the choice between the kernel's SCTP and usrsctp.  Multi-homed
 * failover with a path cut is in test-lowcomms-sctp-netns.sh, which needs
 * namespaces.  Every wait is bounded.
 */
#include <errno.h>
#include <netinet/in.h>
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

#define WAIT_MS		20000
#define LOOPBACK	"127.0.0.1"
#define LOOPBACK6	"::1"

/* Which SCTP this run uses, for the log. */
static void test_transport(void **state)
{
	struct h_world *w = h_world_new(1, LOOPBACK, h_sctp_config);
	const char *name = lc_transport_name(w->w_eps[0].ep_lc);

	(void)state;
	printf("transport: %s\n", name);
	assert_non_null(strstr(name, "sctp"));
	if (strstr(name, "usrsctp"))
		assert_true(lc_udp_port(w->w_eps[0].ep_lc) > 0);
	h_world_free(w);
}

static int null_deliver(void *arg, uint32_t from, uint16_t type,
			uint32_t lsid, const void *payload, size_t len)
{
	(void)arg, (void)from, (void)type, (void)lsid, (void)payload,
	(void)len;
	return 0;
}

static int null_fd(void *arg, int fd, short events)
{
	(void)arg, (void)fd, (void)events;
	return 0;
}

static void null_fd_del(void *arg, int fd)
{
	(void)arg, (void)fd;
}

static const struct lc_ops null_ops = {
	.ops_deliver = null_deliver,
	.ops_fd_add = null_fd,
	.ops_fd_mod = null_fd,
	.ops_fd_del = null_fd_del,
};

static void auto_config(struct lc_config *cfg, uint32_t nodeid,
			const char *addr)
{
	h_sctp_config(cfg, nodeid, addr);
	cfg->cfg_sctp_impl = LC_SCTP_AUTO;
}

/*
 * The choice of SCTP follows what this kernel can do: where socket()
 * refuses IPPROTO_SCTP with EPROTONOSUPPORT (as here: no SCTP module),
 * AUTO takes usrsctp and says so in one log line per context, not one per
 * connection, and asking for the kernel's fails with that errno; where the
 * kernel has SCTP, AUTO takes it and logs nothing of the kind.
 */
static void test_kernel_sctp_fallback(void **state)
{
	static const char needle[] = "no SCTP in this kernel";
	struct h_world *w = malloc(sizeof(*w));
	int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP);
	int probe = fd < 0 ? errno : 0;
	struct lc_config cfg;
	struct lc_ctx *ctx;
	const char *name;

	(void)state;
	if (fd >= 0)
		close(fd);
	assert_non_null(w);
	h_world_init(w);
	w->w_config = auto_config;
	w->w_eps[0].ep_log_needle = needle;
	w->w_eps[1].ep_log_needle = needle;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	assert_int_equal(h_ep_add_peers(w, 0), 0);
	assert_int_equal(h_ep_add_peers(w, 1), 0);
	/* Connections (and a reset) do not log it again. */
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_int_equal(h_send(w, 1, 0, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(lc_node_reset(w->w_eps[0].ep_lc, 2), 0);
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	name = lc_transport_name(w->w_eps[0].ep_lc);
	printf("kernel SCTP probe: %s; AUTO picked %s\n",
	       probe ? strerror(probe) : "ok", name);

	if (probe == EPROTONOSUPPORT || probe == ESOCKTNOSUPPORT) {
		assert_string_equal(name, "sctp (usrsctp)");
		for (int i = 0; i < 2; i++)
			assert_int_equal(w->w_eps[i].ep_log_hits, 1);
		/* Asking for the kernel's SCTP fails with socket()'s errno. */
		h_sctp_config(&cfg, 3, LOOPBACK);
		cfg.cfg_sctp_impl = LC_SCTP_KERNEL;
		errno = 0;
		ctx = lc_new(&cfg, &null_ops, NULL);
		assert_null(ctx);
		assert_int_equal(errno, probe);
	} else {
		assert_int_equal(probe, 0);
		assert_string_equal(name, "sctp (kernel)");
		for (int i = 0; i < 2; i++)
			assert_int_equal(w->w_eps[i].ep_log_hits, 0);
	}
	h_world_free(w);
}

/* Three nodes, each sending to both others in interleaved rounds with
 * payloads of several sizes: every stream arrives whole and in order. */
static void test_ordering(void **state)
{
	(void)state;
	h_world_free(h_test_ordering(LOOPBACK, h_sctp_config, WAIT_MS));
}

static bool refused(struct h_world *w, void *arg)
{
	(void)arg;
	return w->w_eps[0].ep_refused_logs > 0;
}

/* An association from an address outside the node table is refused.
 * usrsctp binds only addresses the host really has (not all of 127/8), so
 * the stranger is node 2 on 127.0.0.1, which node 1's table (empty) does
 * not list. */
static void test_refuse_unknown_address(void **state)
{
	struct h_world *w = h_world_new(1, LOOPBACK, h_sctp_config);
	struct sockaddr_storage ss;

	(void)state;
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[0].ep_port,
				       &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[1].ep_lc, 1, &ss, 1), 0);
	assert_int_equal(h_send(w, 1, 0, 10), 10);
	assert_true(h_run_until(w, refused, NULL, WAIT_MS));
	assert_int_equal(w->w_eps[0].ep_rx_total, 0);
	h_world_free(w);
}

/* Two addresses per node (IPv4 and IPv6 loopback, the only two a host
 * surely has): one association over both, traffic flows both ways. */
static void test_two_addresses(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage peer[2];

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	for (int i = 0; i < 2; i++) {
		struct lc_config cfg;

		h_sctp_config(&cfg, (uint32_t)i + 1, LOOPBACK);
		assert_int_equal(lc_addr_parse(LOOPBACK6, 0,
					       &cfg.cfg_addrs[1]), 0);
		cfg.cfg_naddrs = 2;
		assert_int_equal(h_ep_start(w, i, LOOPBACK, 0, &cfg), 0);
	}
	for (int i = 0; i < 2; i++) {
		int j = 1 - i;

		assert_int_equal(lc_addr_parse(LOOPBACK,
					       (uint16_t)w->w_eps[j].ep_port,
					       &peer[0]), 0);
		assert_int_equal(lc_addr_parse(LOOPBACK6,
					       (uint16_t)w->w_eps[j].ep_port,
					       &peer[1]), 0);
		assert_int_equal(lc_node_add(w->w_eps[i].ep_lc, (uint32_t)j + 1,
					     peer, 2), 0);
	}
	for (int round = 0; round < 10; round++) {
		assert_int_equal(h_send(w, 0, 1, 1000), 1000);
		assert_int_equal(h_send(w, 1, 0, 1000), 1000);
		h_poll(w, 1);
	}
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total, 10000);
	}
	h_world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport),
		cmocka_unit_test(test_kernel_sctp_fallback),
		cmocka_unit_test(test_ordering),
		cmocka_unit_test_prestate(h_transport_stream, (void *)&h_transports[H_SCTP]),
		cmocka_unit_test_prestate(h_transport_reconnects,
					  (void *)&h_transports[H_SCTP]),
		cmocka_unit_test_prestate(h_transport_restart_sockets,
					  (void *)&h_transports[H_SCTP]),
		cmocka_unit_test_prestate(h_transport_recreate, (void *)&h_transports[H_SCTP]),
		cmocka_unit_test_prestate(h_transport_fault_duplicate,
					  (void *)&h_transports[H_SCTP]),
		cmocka_unit_test_prestate(h_transport_fault_skip,
					  (void *)&h_transports[H_SCTP]),
		cmocka_unit_test(test_refuse_unknown_address),
		cmocka_unit_test(test_two_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
