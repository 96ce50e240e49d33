/*
 * tests/test-lowcomms-sctp.c: the loopback tests of TCP, through SCTP.
 *
 * Every endpoint runs with cfg_transport = SCTP: the kernel's SCTP where it
 * exists, libusrsctp (SCTP over UDP, one stack for the whole process, on a
 * free UDP port) where it does not.  The harness and its per-pair counters
 * are those of the TCP tests, so loss, duplication and reordering are caught
 * the same way: ordering between three nodes, a long stream, connections
 * reset under load in both directions, a receiver restarted mid-stream,
 * wire faults, refusal of a stranger, and two addresses per node (one
 * association over both).  Multi-homed failover with a path cut is in
 * test-lowcomms-sctp-netns.sh, which needs namespaces.  Every wait is
 * bounded.
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

#include "tests/test-lowcomms-harness.h"

#define WAIT_MS		20000
#define MAX_MS		120000
#define LOOPBACK	"127.0.0.1"
#define LOOPBACK6	"::1"
/* Messages per direction in test_stream; LC_SCTP_COUNT overrides. */
#define STREAM_COUNT	300000L
#define BURST		20000
#define SLOW_BURST	500
#define RESETS		6
#define RESTARTS	3
#define BIND_TRIES	50
#define WINDOW		5000

static void sctp_config(struct lc_config *cfg, uint32_t nodeid,
			const char *addr)
{
	h_config(cfg, nodeid, addr);
	cfg->cfg_transport = LC_TRANSPORT_SCTP;
	cfg->cfg_sctp_impl = LC_SCTP_AUTO;
	cfg->cfg_sctp_udp_port = 0;
	/* SCTP's own setup is a 4-way handshake and usrsctp's timers are
	 * coarse; leave room on a loaded machine. */
	cfg->cfg_handshake_ms = 5000;
}

static int ep_start(struct h_world *w, int idx, const char *addr, int port)
{
	struct lc_config cfg;

	sctp_config(&cfg, (uint32_t)idx + 1, addr);
	return h_ep_start(w, idx, addr, port, &cfg);
}

static struct h_world *world_new(int neps)
{
	struct h_world *w = malloc(sizeof(*w));

	assert_non_null(w);
	h_world_init(w);
	for (int i = 0; i < neps; i++)
		assert_int_equal(ep_start(w, i, LOOPBACK, 0), 0);
	for (int i = 0; i < neps; i++)
		assert_int_equal(h_ep_add_peers(w, i), 0);
	return w;
}

static void world_free(struct h_world *w)
{
	h_world_fini(w);
	free(w);
}

static bool acked(struct h_world *w, void *unused)
{
	(void)unused;
	if (!h_all_done(w, NULL))
		return false;
	for (int i = 0; i < w->w_neps; i++)
		for (int j = 0; j < w->w_neps; j++)
			if (i != j && w->w_eps[i].ep_lc &&
			    lc_queue_len(w->w_eps[i].ep_lc, (uint32_t)j + 1) > 0)
				return false;
	return true;
}

struct stream {
	long st_target;		/* messages per direction */
	bool st_both;		/* 1 -> 0 as well as 0 -> 1 */
	long st_burst;		/* queued per loop iteration at most */
	long st_window;		/* unacknowledged at most, 0 = no limit */
};

/* Top the queues up (to the window, if any), then poll.  A window keeps
 * the sender in step with the receiver, so that faults injected at given
 * points of progress happen while traffic flows. */
static void stream_step(struct h_world *w, const struct stream *s)
{
	for (int dir = 0; dir < (s->st_both ? 2 : 1); dir++) {
		int from = dir, to = 1 - dir;
		long left = s->st_target -
			    (long)w->w_eps[from].ep_tx_next[to + 1];

		if (left > s->st_burst)
			left = s->st_burst;
		if (s->st_window && w->w_eps[from].ep_lc) {
			long room = s->st_window -
				    lc_queue_len(w->w_eps[from].ep_lc,
						 (uint32_t)to + 1);

			if (left > room)
				left = room;
		}
		if (left > 0 && w->w_eps[from].ep_lc)
			assert_true(h_send(w, from, to, left) >= 0);
	}
	h_poll(w, 1);
}

static bool stream_sent(const struct h_world *w, const struct stream *s)
{
	return (long)w->w_eps[0].ep_tx_next[2] == s->st_target &&
	       (!s->st_both || (long)w->w_eps[1].ep_tx_next[1] == s->st_target);
}

static void print_stats(const struct h_world *w, const char *what)
{
	for (int i = 0; i < w->w_neps; i++) {
		struct lc_stats st;

		if (!w->w_eps[i].ep_lc)
			continue;
		lc_get_stats(w->w_eps[i].ep_lc, &st);
		printf("%s: node %d sent %llu delivered %llu writes %llu "
		       "resent %llu dups %llu lost %llu restarts %llu\n",
		       what, i + 1, (unsigned long long)st.st_msgs_sent,
		       (unsigned long long)st.st_msgs_delivered,
		       (unsigned long long)st.st_writes,
		       (unsigned long long)st.st_frames_resent,
		       (unsigned long long)st.st_dups_dropped,
		       (unsigned long long)st.st_conn_lost,
		       (unsigned long long)st.st_peer_restarts);
	}
}

/* Which SCTP this run uses, for the log. */
static void test_transport(void **state)
{
	struct h_world *w = world_new(1);
	const char *name = lc_transport_name(w->w_eps[0].ep_lc);

	(void)state;
	printf("transport: %s\n", name);
	assert_non_null(strstr(name, "sctp"));
	if (strstr(name, "usrsctp"))
		assert_true(lc_udp_port(w->w_eps[0].ep_lc) > 0);
	world_free(w);
}

/* Three nodes, each sending to both others in interleaved rounds with
 * payloads of several sizes: every stream arrives whole and in order. */
static void test_ordering(void **state)
{
	enum { NEPS = 3, ROUNDS = 50, PER_ROUND = 40 };
	struct h_world *w = world_new(NEPS);

	(void)state;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NEPS; i++) {
			w->w_eps[i].ep_msg_extra = (unsigned int)((r * 131) % 900);
			for (int j = 0; j < NEPS; j++)
				if (i != j)
					assert_int_equal(h_send(w, i, j,
								PER_ROUND),
							 PER_ROUND);
		}
		h_poll(w, 0);
	}
	assert_true(h_run_until(w, acked, NULL, WAIT_MS));
	for (int i = 0; i < NEPS; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total,
				 (NEPS - 1) * ROUNDS * PER_ROUND);
	}
	world_free(w);
}

/* A long stream one way: nothing lost, nothing repeated, batched. */
static void test_stream(void **state)
{
	const char *env = getenv("LC_SCTP_COUNT");
	struct stream s = { env ? atol(env) : STREAM_COUNT, false, BURST, 0 };
	struct h_world *w = world_new(2);
	uint64_t start = h_now_ms(), end = start + MAX_MS;
	struct lc_stats st;

	(void)state;
	while (!stream_sent(w, &s) && h_now_ms() < end)
		stream_step(w, &s);
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	printf("stream: %ld messages in %llu ms\n", s.st_target,
	       (unsigned long long)(h_now_ms() - start));
	print_stats(w, "stream");
	assert_int_equal(w->w_eps[1].ep_rx_errors, 0);
	assert_int_equal(w->w_eps[1].ep_rx_total, s.st_target);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_true(st.st_writes < (uint64_t)s.st_target / 10);
	world_free(w);
}

/* Reset the association from one side or the other, several times, while
 * both directions stream: every message exactly once. */
static void test_reset_under_load(void **state)
{
	struct stream s = { 200000, true, SLOW_BURST, WINDOW };
	struct h_world *w = world_new(2);
	uint64_t end = h_now_ms() + MAX_MS;
	struct lc_stats st0, st1;
	int done = 0;

	(void)state;
	while (!stream_sent(w, &s) && h_now_ms() < end) {
		long progress = (long)w->w_eps[1].ep_rx_next[1];

		stream_step(w, &s);
		if (done < RESETS &&
		    progress > (done + 1) * (s.st_target / (RESETS + 2))) {
			int side = done % 2;

			if (lc_node_reset(w->w_eps[side].ep_lc,
					  (uint32_t)(2 - side)) == 0)
				done++;
		}
	}
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	print_stats(w, "reset");
	assert_int_equal(done, RESETS);
	lc_get_stats(w->w_eps[0].ep_lc, &st0);
	lc_get_stats(w->w_eps[1].ep_lc, &st1);
	assert_true(st0.st_conn_lost + st1.st_conn_lost >= RESETS);
	assert_true(st0.st_frames_resent + st1.st_frames_resent > 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total, s.st_target);
	}
	world_free(w);
}

/*
 * Node 2's context is destroyed mid-stream and a new one takes its SCTP
 * port; node 1 resends what was not acknowledged and nothing is lost.
 * Unlike TCP, messages the old context delivered in its last read may come
 * again: its final ack is written, but if data from node 1 arrives while the
 * socket closes, SCTP aborts the association, and node 1's usrsctp reports
 * the ABORT before the ack it had received (lowcomms.c's KNOWN LIMITS: a
 * receiver that is destroyed may see its last messages again).  So this test
 * allows duplicates, at most a window per restart, but no gap: every
 * delivery that was not in order must have been a repeat.
 */
static void test_restart_receiver(void **state)
{
	struct stream s = { 200000, false, SLOW_BURST, WINDOW };
	struct h_world *w = world_new(2);
	uint64_t end = h_now_ms() + MAX_MS;
	int restarts = 0;
	struct lc_stats st;

	(void)state;
	while (!stream_sent(w, &s) && h_now_ms() < end) {
		long progress = (long)w->w_eps[1].ep_rx_next[1];

		stream_step(w, &s);
		if (restarts < RESTARTS &&
		    progress > (restarts + 1) * (s.st_target / (RESTARTS + 2)) &&
		    lc_node_fd(w->w_eps[0].ep_lc, 2) >= 0 &&
		    lc_queue_len(w->w_eps[0].ep_lc, 2) > 0) {
			int port = w->w_eps[1].ep_port, rv = -EADDRINUSE;

			h_ep_stop(w, 1);
			for (int t = 0; t < BIND_TRIES && rv == -EADDRINUSE;
			     t++) {
				rv = ep_start(w, 1, LOOPBACK, port);
				if (rv == -EADDRINUSE)
					h_poll(w, 20);
			}
			assert_int_equal(rv, 0);
			assert_int_equal(h_ep_add_peers(w, 1), 0);
			restarts++;
		}
	}
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	print_stats(w, "restart");
	assert_int_equal(restarts, RESTARTS);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_peer_restarts, RESTARTS);
	printf("restart: %llu messages delivered again after a restart\n",
	       (unsigned long long)w->w_eps[1].ep_rx_errors);
	assert_true(h_pair_done(w, 0, 1));
	/* Each repeat counts once as an error and once in the total; a gap
	 * or a reordering would make this smaller. */
	assert_int_equal(w->w_eps[1].ep_rx_total - w->w_eps[1].ep_rx_errors,
			 s.st_target);
	assert_true(w->w_eps[1].ep_rx_errors <= (uint64_t)RESTARTS * WINDOW);
	world_free(w);
}

static void run_with_fault(enum lc_fault_kind kind, uint32_t every)
{
	struct stream s = { 50000, true, SLOW_BURST, WINDOW };
	struct h_world *w = world_new(2);
	struct lc_fault flt = { kind, 0, every };
	uint64_t end = h_now_ms() + MAX_MS;
	struct lc_stats st[2];

	for (int i = 0; i < 2; i++)
		assert_int_equal(lc_set_fault(w->w_eps[i].ep_lc, &flt), 0);
	while (!stream_sent(w, &s) && h_now_ms() < end)
		stream_step(w, &s);
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	print_stats(w, kind == LC_FAULT_SKIP ? "skip" : "duplicate");
	for (int i = 0; i < 2; i++) {
		lc_get_stats(w->w_eps[i].ep_lc, &st[i]);
		assert_true(st[i].st_faults > 0);
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total, s.st_target);
	}
	world_free(w);
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
	struct h_world *w = world_new(1);
	struct sockaddr_storage ss;

	(void)state;
	assert_int_equal(ep_start(w, 1, LOOPBACK, 0), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[0].ep_port,
				       &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[1].ep_lc, 1, &ss, 1), 0);
	assert_int_equal(h_send(w, 1, 0, 10), 10);
	assert_true(h_run_until(w, refused, NULL, WAIT_MS));
	assert_int_equal(w->w_eps[0].ep_rx_total, 0);
	world_free(w);
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

		sctp_config(&cfg, (uint32_t)i + 1, LOOPBACK);
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
	assert_true(h_run_until(w, acked, NULL, WAIT_MS));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total, 10000);
	}
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport),
		cmocka_unit_test(test_ordering),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_reset_under_load),
		cmocka_unit_test(test_restart_receiver),
		cmocka_unit_test(test_fault_duplicate),
		cmocka_unit_test(test_fault_skip),
		cmocka_unit_test(test_refuse_unknown_address),
		cmocka_unit_test(test_two_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
