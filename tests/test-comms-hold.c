/*
 * tests/test-comms-hold.c - plugin/comms.c's HOLD: two daemons' comms.c
 * (nodes 1 and 2, on 127.0.0.1 and 127.0.0.2, one libqb loop) with a
 * fake engine: node 2's dlm_core_receive() refuses (-ENOMEM, "not
 * taken") REFUSALS times the message with counter REFUSE_AT from node 1,
 * then takes it.  comms.c must hold node 1 meanwhile (nothing later from
 * it reaches the engine), count and show the hold, offer the message
 * again on its own (back-off timer), and in the end the engine has taken
 * every message once, in order.  A held node whose daemon leaves
 * (dlmd_comms_node_reset) is no longer held.  And a daemon restarted
 * (node 2's comms made again) is paused by node 1 until node 1 hears of
 * the old one's leave (lowcomms.c, PEER RESTARTED), and the pause counts
 * in dlmd_comms_wait_ms() meanwhile (comms.c, RESTARTED PEER: what
 * cluster.c's UNREACHABLE PEERS judges).  And WATCHING THE PEERS: in a
 * ping-pong (each side answers the other's message at once, one message
 * in flight) a node with peer_spin_us reads the next message by a poll
 * of its watch, where one with peer_spin_us = 0 never watches.  And a
 * node out of the nodelist leaves the node table (dlmd_comms_node_remove)
 * and comes back afresh.  Every wait is bounded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

#define COUNT		500
#define REFUSE_AT	123
#define REFUSALS	3
#define WAIT_MS		10000
#define POLL_MS		5

uint64_t dlmd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the fake engine ------------------------------------------------ */

struct fake_core {
	uint32_t	fc_nodeid;
	unsigned int	fc_refuse_left;	/* refusals still to make */
	unsigned int	fc_refused;
	uint32_t	fc_next;	/* counter expected next from node 1 */
	unsigned int	fc_errors;	/* out of order, twice, lost */
	unsigned int	fc_from2;	/* messages from node 2 (node 1's) */
	bool		fc_later_while_held;	/* one past REFUSE_AT came early */
	/* ping-pong (test_peer_watch): the answer to send at the flush */
	bool		fc_pp_pending;
	uint32_t	fc_pp_answer;
	unsigned int	fc_pp_got;
};

static bool pp_on;		/* the fake engines play ping-pong */
static uint32_t pp_last;	/* node 1 sends counters 0..pp_last */

static struct fake_core cores[2] = { { .fc_nodeid = 1 }, { .fc_nodeid = 2 } };

int dlm_core_receive(struct dlm_core *core, uint32_t from, const void *buf,
		     size_t len)
{
	struct fake_core *fc = (struct fake_core *)core;
	uint32_t counter;

	if (len == sizeof(counter) && from == 2 && fc->fc_nodeid == 1 &&
	    !pp_on) {
		fc->fc_from2++;
		return 0;
	}
	if (len != sizeof(counter) || from != (pp_on ? 3 - fc->fc_nodeid : 1)) {
		fc->fc_errors++;
		return -EBADMSG;
	}
	memcpy(&counter, buf, sizeof(counter));
	if (pp_on) {
		/* node 2 answers each counter, node 1 sends the next */
		fc->fc_pp_got++;
		if (counter != fc->fc_next)
			fc->fc_errors++;
		fc->fc_next = counter + 1;
		if (fc->fc_nodeid == 2 || counter < pp_last) {
			fc->fc_pp_pending = true;
			fc->fc_pp_answer = fc->fc_nodeid == 2 ? counter : counter + 1;
		}
		return 0;
	}
	if (counter == REFUSE_AT && fc->fc_refuse_left) {
		fc->fc_refuse_left--;
		fc->fc_refused++;
		return -ENOMEM;
	}
	if (counter > REFUSE_AT && fc->fc_next <= REFUSE_AT)
		fc->fc_later_while_held = true;
	if (counter != fc->fc_next)
		fc->fc_errors++;
	fc->fc_next = counter + 1;
	return 0;
}

/* ---- what cluster.c would be ---------------------------------------- */

static unsigned int cannot_hold;

static void up_flush(struct dlmd *d)
{
	struct fake_core *fc = (struct fake_core *)d->d_core;

	/* what an engine answered goes out at the flush, as in dlmd */
	if (fc->fc_pp_pending) {
		fc->fc_pp_pending = false;
		assert_int_equal(dlmd_comms_send(d, 3 - fc->fc_nodeid,
						 &fc->fc_pp_answer,
						 sizeof(fc->fc_pp_answer)), 0);
	}
	dlmd_comms_kick(d);
}

static void up_frames_lost(struct dlmd *d, uint32_t nodeid)
{
	fail_msg("frames from node %u lost", nodeid);
}

static void up_cannot_hold(struct dlmd *d, const char *what, uint32_t arg)
{
	cannot_hold++;
}

static const struct dlmd_comms_up up = {
	.cu_flush = up_flush,
	.cu_frames_lost = up_frames_lost,
	.cu_cannot_hold = up_cannot_hold,
};

static struct dlmd daemons[2];
static qb_loop_t *loop;		/* both daemons' */
static const char *const addrs[2][1] = { { "127.0.0.1" }, { "127.0.0.2" } };

/* Daemon i's comms.c on port, knowing the other; or -errno. */
static int start_one(int i, int port)
{
	struct dlmd *d = &daemons[i];
	int rv;

	memset(d, 0, sizeof(*d));
	d->d_nodeid = (uint32_t)i + 1;
	d->d_loop = loop;
	d->d_core = (struct dlm_core *)&cores[i];
	d->d_cfg.cf_port = (uint32_t)port;
	d->d_cfg.cf_crypto_none = true;
	d->d_cfg.cf_protocol = DLMD_PROTO_TCP;
	rv = dlmd_comms_init(d, addrs[i], 1, &up);
	if (rv) {
		dlmd_comms_fini(d);
		return rv;
	}
	assert_int_equal(dlmd_comms_node_add(d, 2 - (uint32_t)i,
					     addrs[1 - i], 1), 0);
	return 0;
}

/* Both daemons' comms.c on port, or -errno (the port is taken). */
static int start_on(int port)
{
	for (int i = 0; i < 2; i++) {
		int rv = start_one(i, port);

		if (rv) {
			if (i)
				dlmd_comms_fini(&daemons[0]);
			return rv;
		}
	}
	return 0;
}

/* On a port nobody else uses (a few tries). */
static void start(void)
{
	int rv = -EADDRINUSE;

	loop = qb_loop_create();
	assert_non_null(loop);
	for (int k = 0; k < 10 && rv; k++)
		rv = start_on(20000 + (int)((getpid() + 997 * k) % 20000));
	assert_int_equal(rv, 0);
}

static void stop_loop(void *data)
{
	qb_loop_stop(loop);
}

/* The loop, for ms. */
static void run(int ms)
{
	qb_loop_timer_handle t;

	assert_int_equal(qb_loop_timer_add(loop, QB_LOOP_LOW,
					   (uint64_t)ms * 1000000ULL, NULL,
					   stop_loop, &t), 0);
	qb_loop_run(loop);
}

static struct dlmd_peer_metrics node1_seen;

static void peer_of_1(void *arg, const struct dlmd_peer_metrics *pm)
{
	if (pm->pm_nodeid == 1)
		node1_seen = *pm;
}

static void test_hold(void **state)
{
	struct fake_core *rx = &cores[1];
	uint64_t end, since = 0;
	uint32_t node = 0;
	unsigned int held_seen = 0;
	char status[512];

	(void)state;
	start();
	rx->fc_refuse_left = REFUSALS;
	for (uint32_t c = 0; c < COUNT; c++)
		assert_int_equal(dlmd_comms_send(&daemons[0], 2, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[0]);
	end = dlmd_now_ms() + WAIT_MS;
	while (rx->fc_next < COUNT && dlmd_now_ms() < end) {
		run(POLL_MS);
		if (dlmd_comms_held(&daemons[1], &node, &since)) {
			held_seen++;
			assert_int_equal(node, 1);
			assert_true(since > 0);
			/* nothing after the refused one was taken */
			assert_int_equal(rx->fc_next, REFUSE_AT);
		}
	}
	assert_int_equal(rx->fc_next, COUNT);
	assert_int_equal(rx->fc_errors, 0);
	assert_false(rx->fc_later_while_held);
	assert_int_equal(rx->fc_refused, REFUSALS);
	assert_true(held_seen > 0);
	assert_int_equal(dlmd_comms_held(&daemons[1], NULL, NULL), 0);
	assert_int_equal(cannot_hold, 0);
	dlmd_comms_each_peer(&daemons[1], peer_of_1, NULL);
	assert_int_equal(node1_seen.pm_not_taken, REFUSALS);
	assert_int_equal(node1_seen.pm_held_since, 0);
	assert_int_equal(node1_seen.pm_msgs_received, COUNT);	/* taken */
	dlmd_comms_status(&daemons[1], status, sizeof(status));
	printf("node 2: %s\n", status);
	assert_non_null(strstr(status, "held 0 not_taken 3"));

	/* held again, then node 1's daemon leaves: the hold goes with it */
	rx->fc_refuse_left = 1;
	rx->fc_next = REFUSE_AT;
	{
		uint32_t c = REFUSE_AT;

		assert_int_equal(dlmd_comms_send(&daemons[0], 2, &c, sizeof(c)), 0);
	}
	dlmd_comms_kick(&daemons[0]);
	end = dlmd_now_ms() + WAIT_MS;
	while (!dlmd_comms_held(&daemons[1], NULL, NULL) && dlmd_now_ms() < end)
		run(POLL_MS);
	assert_int_equal(dlmd_comms_held(&daemons[1], NULL, NULL), 1);
	dlmd_comms_node_reset(&daemons[1], 1, addrs[0], 1);
	assert_int_equal(dlmd_comms_held(&daemons[1], NULL, NULL), 0);
	for (int i = 0; i < 2; i++)
		dlmd_comms_fini(&daemons[i]);
	qb_loop_destroy(loop);
}

/*
 * Node 2's daemon restarts (its comms made again on the same port) and
 * has something to say to node 1 before node 1 hears of the old one's
 * leave: node 1 pauses the new epoch (nothing reaches node 1's engine),
 * and though node 1 has nothing queued, dlmd_comms_wait_ms() grows, so
 * a leave that never came would end in a removal (cluster.c,
 * UNREACHABLE PEERS); the leave (dlmd_comms_node_reset) ends the pause
 * and the new daemon's message arrives, once.
 */
static void test_restart_paused(void **state)
{
	uint32_t c = 7;
	uint64_t end;
	int port, rv = -EADDRINUSE;

	(void)state;
	memset(cores, 0, sizeof(cores));
	cores[0].fc_nodeid = 1;
	cores[1].fc_nodeid = 2;
	start();
	port = (int)daemons[0].d_cfg.cf_port;
	for (uint32_t k = 0; k < 10; k++)
		assert_int_equal(dlmd_comms_send(&daemons[0], 2, &k, sizeof(k)), 0);
	dlmd_comms_kick(&daemons[0]);
	end = dlmd_now_ms() + WAIT_MS;
	while (cores[1].fc_next < 10 && dlmd_now_ms() < end)
		run(POLL_MS);
	assert_int_equal(cores[1].fc_next, 10);
	run(50);	/* the acks */
	assert_int_equal(dlmd_comms_wait_ms(&daemons[0], 2), 0);

	/* node 2's daemon restarts: same address and port, new epoch */
	dlmd_comms_fini(&daemons[1]);
	end = dlmd_now_ms() + WAIT_MS;
	while (rv == -EADDRINUSE && dlmd_now_ms() < end) {
		rv = start_one(1, port);
		if (rv == -EADDRINUSE)
			run(50);
	}
	assert_int_equal(rv, 0);
	assert_int_equal(dlmd_comms_send(&daemons[1], 1, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[1]);
	end = dlmd_now_ms() + WAIT_MS;
	while (dlmd_comms_wait_ms(&daemons[0], 2) < 200 &&
	       dlmd_now_ms() < end)
		run(POLL_MS);
	assert_true(dlmd_comms_wait_ms(&daemons[0], 2) >= 200);
	assert_int_equal(cores[0].fc_from2, 0);
	assert_int_equal(cores[0].fc_errors, 0);

	/* the old daemon's leave reaches node 1 */
	dlmd_comms_node_reset(&daemons[0], 2, addrs[1], 1);
	assert_int_equal(dlmd_comms_wait_ms(&daemons[0], 2), 0);
	end = dlmd_now_ms() + WAIT_MS;
	while (!cores[0].fc_from2 && dlmd_now_ms() < end)
		run(POLL_MS);
	run(50);
	assert_int_equal(cores[0].fc_from2, 1);
	assert_int_equal(cores[0].fc_errors, 0);
	assert_int_equal(dlmd_comms_wait_ms(&daemons[0], 2), 0);
	for (int i = 0; i < 2; i++)
		dlmd_comms_fini(&daemons[i]);
	qb_loop_destroy(loop);
}

/* "peer_watches W peer_watch_took T peer_yields_long Y" of d's status */
static void watch_counts(struct dlmd *d, unsigned long long *w,
			 unsigned long long *t, unsigned long long *y)
{
	char status[512];
	const char *p;

	dlmd_comms_status(d, status, sizeof(status));
	p = strstr(status, "peer_watches ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "peer_watches %llu peer_watch_took %llu "
				"peer_yields_long %llu", w, t, y), 3);
}

/* PP_ROUNDS counters node 1 -> node 2 and back, one in flight; node 2's
 * watch counts.  Bounded: at most WAIT_MS. */
#define PP_ROUNDS	200
static void ping_pong(uint32_t spin_us, bool client_watch,
		      unsigned long long *w, unsigned long long *t,
		      unsigned long long *y)
{
	uint32_t c = 0;
	uint64_t end;

	memset(cores, 0, sizeof(cores));
	cores[0].fc_nodeid = 1;
	cores[1].fc_nodeid = 2;
	start();
	daemons[1].d_cfg.cf_peer_spin_us = spin_us;
	/* as if client.c's watch turned node 2's loop (and yielded): the
	 * peer watch then does not yield itself */
	daemons[1].d_watch_job = client_watch;
	pp_on = true;
	pp_last = PP_ROUNDS - 1;
	assert_int_equal(dlmd_comms_send(&daemons[0], 2, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[0]);
	end = dlmd_now_ms() + WAIT_MS;
	while (cores[0].fc_pp_got < PP_ROUNDS && dlmd_now_ms() < end)
		run(POLL_MS);
	pp_on = false;
	daemons[1].d_watch_job = false;
	assert_int_equal(cores[1].fc_pp_got, PP_ROUNDS);
	assert_int_equal(cores[0].fc_pp_got, PP_ROUNDS);
	assert_int_equal(cores[0].fc_errors, 0);
	assert_int_equal(cores[1].fc_errors, 0);
	watch_counts(&daemons[1], w, t, y);
	printf("peer_spin_us %u%s: peer_watches %llu peer_watch_took %llu "
	       "peer_yields_long %llu\n", spin_us,
	       client_watch ? " (client watch)" : "", *w, *t, *y);
	for (int i = 0; i < 2; i++)
		dlmd_comms_fini(&daemons[i]);
	qb_loop_destroy(loop);
}

static void test_peer_watch(void **state)
{
	unsigned long long w, t, y;

	(void)state;
	/* off: node 2 sleeps after each message, never watches */
	ping_pong(0, false, &w, &t, &y);
	assert_int_equal(w, 0);
	assert_int_equal(t, 0);
	/* a second's watch, no yields of its own (client.c's watch turns
	 * the loop): it ends only when a second passed without a message,
	 * so each of the PP_ROUNDS messages (one read each: one in flight)
	 * began a watch or was read by one, nearly all by one */
	ping_pong(1000000, true, &w, &t, &y);
	assert_int_equal(w + t, PP_ROUNDS);
	assert_int_equal(y, 0);
	assert_true(w >= 1);
	assert_true(t >= 1);
	/* yielding: a message began a watch, was read by one, or came
	 * while watches were off after a long yield (another process on
	 * this CPU: how many is the machine's).  (Not asserted: w <= 1 + y,
	 * "every watch but the first follows a long yield": a test held
	 * off its CPU for over a second outside the yield ends a watch
	 * by its second without a yield counted, as a loaded CI machine
	 * may.) */
	ping_pong(1000000, false, &w, &t, &y);
	assert_true(w + t <= PP_ROUNDS);
	assert_true(w >= 1);
}

static unsigned int npeers;

static void count_peer(void *arg, const struct dlmd_peer_metrics *pm)
{
	npeers++;
	if (pm->pm_nodeid == 1)
		node1_seen = *pm;
}

/*
 * Node 1 leaves node 2's nodelist (cluster.c, NODES LEAVING THE
 * NODELIST: dlmd_comms_node_remove): node 2 drops its hold on node 1's
 * message, its metrics and its lowcomms entry (a message for node 1 is
 * dropped, not queued).  Node 1's id comes back (the same host, or
 * another one given the id): it is added afresh, with new counters, and
 * once node 1 hears that node 2's old life is gone (its leave,
 * dlmd_comms_node_reset) a message gets through, once.
 */
static void test_node_remove(void **state)
{
	struct fake_core *rx = &cores[1];
	unsigned int from2;
	uint32_t c = REFUSE_AT;
	uint64_t end;

	(void)state;
	memset(cores, 0, sizeof(cores));
	cores[0].fc_nodeid = 1;
	cores[1].fc_nodeid = 2;
	start();
	/* node 2 holds a message of node 1 */
	rx->fc_refuse_left = 1;
	rx->fc_next = REFUSE_AT;
	assert_int_equal(dlmd_comms_send(&daemons[0], 2, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[0]);
	end = dlmd_now_ms() + WAIT_MS;
	while (!dlmd_comms_held(&daemons[1], NULL, NULL) && dlmd_now_ms() < end)
		run(POLL_MS);
	assert_int_equal(dlmd_comms_held(&daemons[1], NULL, NULL), 1);
	npeers = 0;
	dlmd_comms_each_peer(&daemons[1], count_peer, NULL);
	assert_int_equal(npeers, 1);

	dlmd_comms_node_remove(&daemons[1], 1);
	assert_int_equal(dlmd_comms_held(&daemons[1], NULL, NULL), 0);
	npeers = 0;
	dlmd_comms_each_peer(&daemons[1], count_peer, NULL);
	assert_int_equal(npeers, 0);
	from2 = cores[0].fc_from2;
	assert_int_equal(dlmd_comms_send(&daemons[1], 1, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[1]);
	run(200);
	assert_int_equal(cores[0].fc_from2, from2);	/* dropped */
	assert_int_equal(dlmd_comms_wait_ms(&daemons[1], 1), 0);

	/* the id comes back: afresh */
	assert_int_equal(dlmd_comms_node_add(&daemons[1], 1, addrs[0], 1), 0);
	npeers = 0;
	memset(&node1_seen, 0xff, sizeof(node1_seen));
	dlmd_comms_each_peer(&daemons[1], count_peer, NULL);
	assert_int_equal(npeers, 1);
	assert_int_equal(node1_seen.pm_msgs_received, 0);
	assert_int_equal(node1_seen.pm_not_taken, 0);
	dlmd_comms_node_reset(&daemons[0], 2, addrs[1], 1);
	assert_int_equal(dlmd_comms_send(&daemons[1], 1, &c, sizeof(c)), 0);
	dlmd_comms_kick(&daemons[1]);
	end = dlmd_now_ms() + WAIT_MS;
	while (cores[0].fc_from2 == from2 && dlmd_now_ms() < end)
		run(POLL_MS);
	assert_int_equal(cores[0].fc_from2, from2 + 1);
	assert_int_equal(cores[0].fc_errors, 0);
	for (int i = 0; i < 2; i++)
		dlmd_comms_fini(&daemons[i]);
	qb_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold),
		cmocka_unit_test(test_restart_paused),
		cmocka_unit_test(test_peer_watch),
		cmocka_unit_test(test_node_remove),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
