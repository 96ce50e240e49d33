/*
 * tests/test-lowcomms-stress.c: lowcomms under load over TCP loopback:
 * a million small messages without loss, connections shut down under load,
 * and an endpoint's context destroyed and recreated mid-stream, each with
 * zero messages lost and zero delivered twice.  Bounded by MAX_MS per test.
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
#define BIND_TRIES	20

static struct h_world *world_new(int neps, const struct lc_config *cfg)
{
	struct h_world *w = malloc(sizeof(*w));

	assert_non_null(w);
	h_world_init(w);
	for (int i = 0; i < neps; i++) {
		struct lc_config c;

		if (cfg) {
			c = *cfg;
			c.cfg_nodeid = (uint32_t)i + 1;
		}
		assert_int_equal(h_ep_start(w, i, LOOPBACK, 0,
					    cfg ? &c : NULL), 0);
	}
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
};

/* Keep queues topped up until target sent; poll in between. */
static void stream_step(struct h_world *w, const struct stream *s)
{
	for (int dir = 0; dir < (s->st_both ? 2 : 1); dir++) {
		int from = dir, to = 1 - dir;
		long left = s->st_target -
			    (long)w->w_eps[from].ep_tx_next[to + 1];

		if (left > s->st_burst)
			left = s->st_burst;
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

static void test_million(void **state)
{
	const char *env = getenv("LC_STRESS_COUNT");
	struct stream s = { env ? atol(env) : MILLION, false, BURST };
	struct h_world *w = world_new(2, NULL);
	uint64_t start = h_now_ms(), end = start + MAX_MS;

	(void)state;
	while (!stream_sent(w, &s) && h_now_ms() < end)
		stream_step(w, &s);
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	printf("million: %ld messages in %llu ms\n", s.st_target,
	       (unsigned long long)(h_now_ms() - start));
	print_stats(w, "million");
	assert_int_equal(w->w_eps[1].ep_rx_errors, 0);
	assert_int_equal(w->w_eps[1].ep_rx_total, s.st_target);
	world_free(w);
}

/* Shut the connection down from one side or the other, several times,
 * while both directions stream. */
static void test_shutdown_under_load(void **state)
{
	struct stream s = { 200000, true, SLOW_BURST };
	struct h_world *w = world_new(2, NULL);
	uint64_t end = h_now_ms() + MAX_MS;
	int done = 0;
	struct lc_stats st0, st1;

	(void)state;
	while (!stream_sent(w, &s) && h_now_ms() < end) {
		long progress = (long)w->w_eps[1].ep_rx_next[1];

		stream_step(w, &s);
		if (done < SHUTDOWNS &&
		    progress > (done + 1) * (s.st_target / (SHUTDOWNS + 2))) {
			int side = done % 2;
			int fd = lc_node_fd(w->w_eps[side].ep_lc,
					    (uint32_t)(2 - side));

			if (fd >= 0) {
				assert_int_equal(shutdown(fd, SHUT_RDWR), 0);
				done++;
			}
		}
	}
	assert_true(stream_sent(w, &s));
	assert_true(h_run_until(w, acked, NULL, (int)(end - h_now_ms())));
	print_stats(w, "shutdown");
	assert_int_equal(done, SHUTDOWNS);
	lc_get_stats(w->w_eps[0].ep_lc, &st0);
	lc_get_stats(w->w_eps[1].ep_lc, &st1);
	assert_true(st0.st_conn_lost + st1.st_conn_lost >= SHUTDOWNS);
	assert_true(st0.st_frames_resent + st1.st_frames_resent > 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_total, s.st_target);
	}
	world_free(w);
}

/*
 * Node 2's context is destroyed mid-stream and a new one takes its place on
 * the same port.  Node 1 resends what node 2 had not acknowledged; node 2's
 * new context starts from node 1's send base.  The receiving application's
 * counters (kept outside the context) see every message exactly once.
 */
static void test_restart_receiver(void **state)
{
	struct stream s = { 300000, false, SLOW_BURST };
	struct h_world *w = world_new(2, NULL);
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
				rv = h_ep_start(w, 1, LOOPBACK, port, NULL);
				if (rv == -EADDRINUSE)
					h_poll(w, 10);
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
	assert_int_equal(w->w_eps[1].ep_rx_errors, 0);
	assert_int_equal(w->w_eps[1].ep_rx_total, s.st_target);
	world_free(w);
}

/* Injected faults on the wire, both directions: duplicated frames are
 * dropped by the receiver, skipped frames cause a reconnect and a resend. */
static void run_with_fault(enum lc_fault_kind kind, uint32_t every)
{
	struct stream s = { 100000, true, SLOW_BURST };
	struct h_world *w = world_new(2, NULL);
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
	if (kind == LC_FAULT_DUPLICATE)
		assert_true(st[0].st_dups_dropped + st[1].st_dups_dropped >=
			    st[0].st_faults + st[1].st_faults);
	else
		assert_true(st[0].st_conn_lost + st[1].st_conn_lost > 0);
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

static void test_fault_rules(void **state)
{
	struct h_world *w = world_new(1, NULL);
	struct lc_fault bad_skip = { LC_FAULT_SKIP, 0, 1 };
	struct lc_fault bad_every = { LC_FAULT_DUPLICATE, 0, 0 };
	struct lc_fault bad_kind = { (enum lc_fault_kind)9, 0, 3 };
	struct lc_fault none = { LC_FAULT_NONE, 0, 0 };

	(void)state;
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_skip), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_every), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &bad_kind), -EINVAL);
	assert_int_equal(lc_set_fault(w->w_eps[0].ep_lc, &none), 0);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_shutdown_under_load),
		cmocka_unit_test(test_restart_receiver),
		cmocka_unit_test(test_fault_duplicate),
		cmocka_unit_test(test_fault_skip),
		cmocka_unit_test(test_fault_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
