/*
 * tests/test-deadlock.c - deadlock detection across resources and nodes
 * (core/deadlock.c) on three engines joined by an in-memory network:
 * a two-party cycle across two nodes, a three-party cycle across three,
 * one through a conversion, one on a single node, each broken once at
 * its youngest request with -EDEADLK; a request that waits behind a
 * holder, or behind a deadlock it is not part of, is never cancelled;
 * NODLCKWT exempts a request; deadlock_ms 0 turns detection off.
 * A victim's grant that crosses its cancel is completed when the cancel
 * is over, and a blocking AST that came meanwhile after it.  Requests
 * ahead that a request waits behind count with their ranges.
 */
#include <errno.h>
#include <stdbool.h>
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

#define DEADLOCK_MS	2000
#define STEP_MS		100
#define NNODES		3

static struct net *net_new_cfg(uint32_t deadlock_ms)
{
	struct dlm_core_config cfg = {
		.toss_ms = 3600000, .deadlock_ms = deadlock_ms,
	};

	return enet_new(NNODES, "dl", &cfg, STEP_MS);
}

static struct net *net_new(void)
{
	return net_new_cfg(DEADLOCK_MS);
}

static struct dlm_ls_stats stats(struct net *n, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(n->ls[node], &st);
	return st;
}

static uint64_t deadlocks(struct net *n)
{
	uint64_t sum = 0;

	for (int i = 1; i <= NNODES; i++)
		sum += stats(n, i).ls_deadlocks;
	return sum;
}

/* A new lock by waiter 'waiter' (DLM_WAITER_* 'wflags'; 0: the owner as a
 * whole) of 'owner' on 'node'. */
static uint32_t lock_full(struct net *n, int node, const char *name, int mode,
			  uint64_t owner, uint32_t flags, uint64_t waiter,
			  uint32_t wflags)
{
	struct dlm_lock_req rq = {
		.mode = mode, .name = name, .namelen = (unsigned int)strlen(name),
		.owner = owner, .astarg = owner, .flags = flags,
		.waiter = waiter, .waiter_flags = wflags,
	};
	uint32_t lkid = 0;

	assert_int_equal(dlm_core_lock(n->ls[node], &rq, &lkid), 0);
	drain(n);
	pass(n, STEP_MS);	/* every request its own age */
	return lkid;
}

static uint32_t lock_flags(struct net *n, int node, const char *name, int mode,
			   uint64_t owner, uint32_t flags)
{
	return lock_full(n, node, name, mode, owner, flags, 0, 0);
}

/* A request of thread (or xid) 'waiter' of owner 11 on node 1. */
static uint32_t lock_by(struct net *n, const char *name, int mode,
			uint64_t waiter, uint32_t waiter_flags)
{
	return lock_full(n, 1, name, mode, 11, 0, waiter, waiter_flags);
}

static uint32_t lock(struct net *n, int node, const char *name, int mode,
		     uint64_t owner)
{
	return lock_flags(n, node, name, mode, owner, 0);
}

static void convert(struct net *n, int node, uint32_t lkid, int mode,
		    uint64_t owner)
{
	struct dlm_lock_req rq = {
		.mode = mode, .flags = DLM_LKF_CONVERT, .lkid = lkid,
		.owner = owner, .astarg = owner,
	};
	uint32_t out = 0;

	assert_int_equal(dlm_core_lock(n->ls[node], &rq, &out), 0);
	drain(n);
	pass(n, STEP_MS);
}

static void unlock(struct net *n, int node, uint32_t lkid, uint64_t owner)
{
	struct dlm_unlock_req rq = { .lkid = lkid, .owner = owner, .astarg = owner };

	assert_int_equal(dlm_core_unlock(n->ls[node], &rq), 0);
	drain(n);
}

static void assert_granted(struct net *n, int node, uint32_t lkid)
{
	int status = 1;

	assert_int_equal(comps_of(n, node, lkid, &status, NULL), 1);
	assert_int_equal(status, 0);
}

static void assert_pending(struct net *n, int node, uint32_t lkid)
{
	assert_int_equal(comps_of(n, node, lkid, NULL, NULL), 0);
}

static void assert_deadlk(struct net *n, int node, uint32_t lkid)
{
	int status = 0;

	assert_int_equal(comps_of(n, node, lkid, &status, NULL), 1);
	assert_int_equal(status, -EDEADLK);
}

/* Owner 11 on node 1 holds A and waits for B, owner 21 on node 2 holds
 * B and then waits for A (the younger request, made with 'flags'). */
static void two_party_cycle(struct net *n, uint32_t *a1, uint32_t *b2,
			    uint32_t *wb1, uint32_t *wa2, uint32_t flags)
{
	*a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	*b2 = lock(n, 2, "B", DLM_LOCK_EX, 21);
	assert_granted(n, 1, *a1);
	assert_granted(n, 2, *b2);
	*wb1 = lock(n, 1, "B", DLM_LOCK_EX, 11);
	*wa2 = lock_flags(n, 2, "A", DLM_LOCK_EX, 21, flags);
}

/* Two clients on two nodes, each holding what the other wants: the
 * younger request gives way with -EDEADLK, once, and the older one is
 * granted when its holder lets go. */
static void test_two_party(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b2, wb1, wa2;

	(void)state;
	two_party_cycle(n, &a1, &b2, &wb1, &wa2, 0);
	pass(n, DEADLOCK_MS / 2);
	assert_int_equal(deadlocks(n), 0);	/* not before the delay */
	pass(n, 2 * DEADLOCK_MS);
	assert_deadlk(n, 2, wa2);
	assert_pending(n, 1, wb1);
	assert_int_equal(stats(n, 2).ls_deadlocks, 1);
	assert_int_equal(stats(n, 2).ls_last_victim, wa2);
	assert_int_equal(stats(n, 1).ls_deadlocks, 0);
	/* the cycle is gone: the survivor waits on, never cancelled */
	pass(n, 5 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 1);
	assert_pending(n, 1, wb1);
	unlock(n, 2, b2, 21);
	assert_granted(n, 1, wb1);
	net_free(n);
}

/* Three clients on three nodes in a ring; a fourth waits behind the
 * ring without being part of it and is never cancelled. */
static void test_three_party(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b2, c3, wb1, wc2, wa3, wb4;

	(void)state;
	a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b2 = lock(n, 2, "B", DLM_LOCK_EX, 21);
	c3 = lock(n, 3, "C", DLM_LOCK_EX, 31);
	wb1 = lock(n, 1, "B", DLM_LOCK_EX, 11);
	wc2 = lock(n, 2, "C", DLM_LOCK_EX, 21);
	wa3 = lock(n, 3, "A", DLM_LOCK_EX, 31);	/* the youngest of the ring */
	wb4 = lock(n, 3, "B", DLM_LOCK_PR, 41);	/* behind it, younger still */
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 3, wa3);
	assert_pending(n, 1, wb1);
	assert_pending(n, 2, wc2);
	assert_pending(n, 3, wb4);
	assert_int_equal(deadlocks(n), 1);
	pass(n, 5 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 1);
	/* the ring's victim lets go of C: everything drains in order */
	unlock(n, 3, c3, 31);
	assert_granted(n, 2, wc2);
	unlock(n, 2, wc2, 21);
	unlock(n, 2, b2, 21);
	assert_granted(n, 1, wb1);
	unlock(n, 1, wb1, 11);
	assert_granted(n, 3, wb4);
	(void)a1;
	net_free(n);
}

/* A cycle through a conversion: the converting lock is the youngest
 * request, its conversion is cancelled with -EDEADLK and it keeps the
 * mode it held. */
static void test_conversion(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b1, b2, wa2;
	int status = 0, grmode = -1;
	char *text = NULL, edge[64];

	(void)state;
	a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b2 = lock(n, 2, "B", DLM_LOCK_PR, 21);
	b1 = lock(n, 1, "B", DLM_LOCK_PR, 11);
	wa2 = lock(n, 2, "A", DLM_LOCK_PR, 21);
	convert(n, 1, b1, DLM_LOCK_EX, 11);	/* the youngest */
	/* the master of B shows the edge: b1's conversion waits for b2 */
	assert_int_equal(dlm_core_ls_dump(n->ls[2], &text), 0);
	snprintf(edge, sizeof(edge), "node 1 remid %08x waits-for %08x\n", b1, b2);
	if (!strstr(text, edge))
		fail_msg("no \"%s\" in the dump:\n%s", edge, text);
	free(text);
	pass(n, 3 * DEADLOCK_MS);
	assert_int_equal(comps_of(n, 1, b1, &status, &grmode), 2);
	assert_int_equal(status, -EDEADLK);
	assert_int_equal(grmode, DLM_LOCK_PR);
	assert_pending(n, 2, wa2);
	assert_int_equal(deadlocks(n), 1);
	unlock(n, 1, a1, 11);
	assert_granted(n, 2, wa2);
	net_free(n);
}

/* A cycle of two clients on one node and one master. */
static void test_one_node(void **state)
{
	struct net *n = net_new();
	uint32_t a, b, wb, wa;

	(void)state;
	a = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b = lock(n, 1, "B", DLM_LOCK_EX, 12);
	wa = lock(n, 1, "A", DLM_LOCK_EX, 12);
	wb = lock(n, 1, "B", DLM_LOCK_EX, 11);	/* the younger */
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 1, wb);
	assert_pending(n, 1, wa);
	assert_int_equal(deadlocks(n), 1);
	assert_int_equal(stats(n, 2).ls_probes_sent + stats(n, 3).ls_probes_sent, 0);
	(void)b;
	unlock(n, 1, a, 11);
	assert_granted(n, 1, wa);
	net_free(n);
}

/* A request that waits behind a holder that does not wait is probed
 * every period and never cancelled. */
static void test_legitimate_wait(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b1, wa2, wb3;

	(void)state;
	a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b1 = lock(n, 1, "B", DLM_LOCK_EX, 11);
	wa2 = lock(n, 2, "A", DLM_LOCK_EX, 21);
	wb3 = lock(n, 3, "B", DLM_LOCK_EX, 31);
	assert_int_equal(stats(n, 2).ls_probes_sent, 0);	/* none before the delay */
	pass(n, 10 * DEADLOCK_MS);
	assert_true(stats(n, 2).ls_probes_sent >= 4);
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 2, wa2);
	assert_pending(n, 3, wb3);
	unlock(n, 1, a1, 11);
	assert_granted(n, 2, wa2);
	unlock(n, 1, b1, 11);
	assert_granted(n, 3, wb3);
	net_free(n);
}

/* NODLCKWT: the youngest request is exempt, so the other gives way. */
static void test_exempt(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b2, wb1, wa2;

	(void)state;
	two_party_cycle(n, &a1, &b2, &wb1, &wa2, DLM_LKF_NODLCKWT);
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 1, wb1);
	assert_pending(n, 2, wa2);
	assert_int_equal(deadlocks(n), 1);
	unlock(n, 1, a1, 11);
	assert_granted(n, 2, wa2);
	(void)b2;
	net_free(n);
}

/* deadlock_ms 0: nothing is probed and the deadlock stays. */
static void test_off(void **state)
{
	struct net *n = net_new_cfg(0);
	uint32_t a1, b2, wb1, wa2;

	(void)state;
	two_party_cycle(n, &a1, &b2, &wb1, &wa2, 0);
	pass(n, 10 * DEADLOCK_MS);
	assert_pending(n, 1, wb1);
	assert_pending(n, 2, wa2);
	for (int i = 1; i <= NNODES; i++) {
		assert_int_equal(stats(n, i).ls_deadlocks, 0);
		assert_int_equal(stats(n, i).ls_probes_sent, 0);
	}
	(void)a1;
	(void)b2;
	net_free(n);
}

/* Two threads of one owner (one connection): thread 100 holds A past
 * the delay, thread 101 waits for A in a synchronous request.  Thread 100
 * does not wait, so this is no deadlock: 101 is granted when 100 lets
 * go.  The same for an xid. */
static void test_other_thread(void **state)
{
	static const uint32_t kinds[] = { 0, DLM_WAITER_XID };

	(void)state;
	for (size_t k = 0; k < 2; k++) {
		struct net *n = net_new();
		uint32_t a, wa;

		a = lock_by(n, "A", DLM_LOCK_EX, 100, kinds[k]);
		assert_granted(n, 1, a);
		wa = lock_by(n, "A", DLM_LOCK_EX, 101, kinds[k]);
		pass(n, 5 * DEADLOCK_MS);
		assert_pending(n, 1, wa);
		assert_int_equal(deadlocks(n), 0);
		unlock(n, 1, a, 11);
		assert_granted(n, 1, wa);
		net_free(n);
	}
}

/* One thread holds A and queues an async request for A behind it: it
 * does not block on that request, so it is granted after the unlock. */
static void test_async_behind_own(void **state)
{
	struct net *n = net_new();
	uint32_t a, wa;

	(void)state;
	a = lock_by(n, "A", DLM_LOCK_EX, 100, 0);
	wa = lock_by(n, "A", DLM_LOCK_EX, 100, DLM_WAITER_ASYNC);
	pass(n, 5 * DEADLOCK_MS);
	assert_pending(n, 1, wa);
	assert_int_equal(deadlocks(n), 0);
	assert_int_equal(stats(n, 1).ls_deadlocks, 0);
	unlock(n, 1, a, 11);
	assert_granted(n, 1, wa);
	net_free(n);
}

/* An async request never starts a probe, and a probe that reaches a
 * thread whose only queued request is async dies there: thread 100
 * holds A and waits for B asynchronously, thread 101 holds B and waits
 * for A synchronously.  100 may yet unlock A: no deadlock. */
static void test_async_cycle(void **state)
{
	struct net *n = net_new();
	uint32_t a, b, wb, wa;

	(void)state;
	a = lock_by(n, "A", DLM_LOCK_EX, 100, 0);
	b = lock_by(n, "B", DLM_LOCK_EX, 101, 0);
	wb = lock_by(n, "B", DLM_LOCK_EX, 100, DLM_WAITER_ASYNC);
	wa = lock_by(n, "A", DLM_LOCK_EX, 101, 0);
	pass(n, 5 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 1, wa);
	assert_pending(n, 1, wb);
	unlock(n, 1, a, 11);
	assert_granted(n, 1, wa);
	(void)b;
	net_free(n);
}

/* Two threads of one owner in a cycle of synchronous waits: one gives
 * way, the younger. */
static void test_cross_thread(void **state)
{
	struct net *n = net_new();
	uint32_t a, b, wb, wa;

	(void)state;
	a = lock_by(n, "A", DLM_LOCK_EX, 100, 0);
	b = lock_by(n, "B", DLM_LOCK_EX, 101, 0);
	wb = lock_by(n, "B", DLM_LOCK_EX, 100, 0);
	wa = lock_by(n, "A", DLM_LOCK_EX, 101, 0);	/* the younger */
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 1, wa);
	assert_pending(n, 1, wb);
	assert_int_equal(deadlocks(n), 1);
	unlock(n, 1, b, 11);
	assert_granted(n, 1, wb);
	(void)a;
	net_free(n);
}

/* A thread that holds EX on A and waits synchronously for a new EX lock
 * on A waits for itself: it gets -EDEADLK instead of hanging. */
static void test_self(void **state)
{
	struct net *n = net_new();
	uint32_t a, wa;

	(void)state;
	a = lock_by(n, "A", DLM_LOCK_EX, 100, 0);
	wa = lock_by(n, "A", DLM_LOCK_EX, 100, 0);
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 1, wa);
	assert_int_equal(deadlocks(n), 1);
	(void)a;
	net_free(n);
}

/* A request queued behind a compatible request waits only for that
 * request's grant, not for its holder to let go (core/lock.c
 * dlm_for_each_blocker).  (a) One owner pipelines two PR requests behind
 * another node's EX: when the EX goes, both are granted; they were never
 * a cycle (dlmd's test_held_limit got -EDEADLK here under load).
 * (b) Transaction 200 (an xid) waits for PR on A behind X's EX and for
 * EX on B held by U; U then waits for PR on A, behind 200's PR.  U waits
 * for X, not for 200: no cycle, nobody is cancelled, and everything is
 * granted in turn. */
static void test_compatible_ahead_no_cycle(void **state)
{
	struct net *n = net_new();
	uint32_t x, w1, w2, b, ta, tb, ua;

	(void)state;
	x = lock(n, 2, "A", DLM_LOCK_EX, 21);
	w1 = lock(n, 1, "A", DLM_LOCK_PR, 11);
	w2 = lock(n, 1, "A", DLM_LOCK_PR, 11);
	pass(n, 5 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 1, w1);
	assert_pending(n, 1, w2);
	unlock(n, 2, x, 21);
	assert_granted(n, 1, w1);
	assert_granted(n, 1, w2);
	net_free(n);

	n = net_new();
	x = lock(n, 3, "A", DLM_LOCK_EX, 31);
	b = lock(n, 2, "B", DLM_LOCK_EX, 21);
	ta = lock_full(n, 1, "A", DLM_LOCK_PR, 11, 0, 200, DLM_WAITER_XID);
	tb = lock_full(n, 1, "B", DLM_LOCK_EX, 11, 0, 200, DLM_WAITER_XID);
	ua = lock(n, 2, "A", DLM_LOCK_PR, 21);
	pass(n, 5 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 1, ta);
	assert_pending(n, 1, tb);
	assert_pending(n, 2, ua);
	unlock(n, 3, x, 31);
	assert_granted(n, 1, ta);
	assert_granted(n, 2, ua);
	unlock(n, 2, b, 21);
	assert_granted(n, 1, tb);
	net_free(n);
}

/* ... but what the compatible request ahead waits for, the one behind
 * waits for too: X holds PW on R and waits for S, held by U; T's PR on
 * R waits for X's PW; U's CR on R (compatible with PW and PR) waits
 * behind T, so for X: a real cycle U -> X -> U, found, and its youngest
 * request gives way; T is not part of it and waits on. */
static void test_compatible_ahead_cycle(void **state)
{
	struct net *n = net_new();
	uint32_t xr, us, tr, xs, ur;

	(void)state;
	xr = lock(n, 3, "R", DLM_LOCK_PW, 31);
	us = lock(n, 2, "S", DLM_LOCK_EX, 21);
	tr = lock(n, 1, "R", DLM_LOCK_PR, 11);
	xs = lock(n, 3, "S", DLM_LOCK_EX, 31);
	ur = lock(n, 2, "R", DLM_LOCK_CR, 21);	/* the youngest of the cycle */
	pass(n, 3 * DEADLOCK_MS);
	assert_deadlk(n, 2, ur);
	assert_pending(n, 3, xs);
	assert_pending(n, 1, tr);
	assert_int_equal(deadlocks(n), 1);
	unlock(n, 2, us, 21);
	assert_granted(n, 3, xs);
	(void)xr;
	net_free(n);
}

/* A probe that comes home a round late (its round trip took longer
 * than deadlock_ms) still breaks the cycle at once: the round it carries
 * is one of the request's recent ones.  Node 1 (A's master) holds wa2's
 * first probe past its next round, whose probe is lost; when node 1
 * lets it through, wa2 gives way without waiting for a third round. */
static void test_late_probe(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b2, wb1, wa2;

	(void)state;
	two_party_cycle(n, &a1, &b2, &wb1, &wa2, 0);
	n->stopped = 1;
	pass(n, DEADLOCK_MS);		/* round 1 goes out, held at node 1 */
	assert_int_equal(deadlocks(n), 0);
	n->stopped = 0;			/* round 1 stays held */
	n->lose_type = DLM_MSG_DEADLK_PROBE;
	n->lose_to = 1;
	pass(n, DEADLOCK_MS);		/* round 2 goes out and is lost */
	assert_int_equal(n->lost, 1);
	assert_int_equal(deadlocks(n), 0);
	release_held(n);
	drain(n);			/* round 1 comes home, late */
	assert_deadlk(n, 2, wa2);
	assert_pending(n, 1, wb1);
	assert_int_equal(deadlocks(n), 1);
	(void)a1;
	(void)b2;
	net_free(n);
}

/* Stop node 1's incoming messages the moment a victim is chosen: its
 * cancel then waits while the master can grant first. */
static void stop_node1_at_victim(struct net *n, int node,
				 enum dlm_log_level level, const char *line)
{
	(void)node;
	(void)level;
	if (strstr(line, "youngest request of a cycle"))
		n->stopped = 1;
}

/* The victim's cancel crosses its grant: wa2 is chosen, its cancel to
 * A's master (node 1) is held there, and node 1's client lets A go, so
 * the master grants wa2 first.  The grant reaches node 2 with the cancel
 * still in flight: its completion waits for the cancel's reply (nothing
 * to cancel), and then the lock is simply granted and can be converted
 * (before, the grant's completion came at once and a conversion made on
 * it was refused -EBUSY: sim-deadlock --node-deaths seed 460). */
static void test_cancel_crosses_grant(void **state)
{
	struct net *n = net_new();
	struct dlm_lock_req rq = {
		.mode = DLM_LOCK_PR, .flags = DLM_LKF_CONVERT, .owner = 21,
		.astarg = 21,
	};
	uint32_t a1, b2, wb1, wa2, out = 0;
	int status = 1;

	(void)state;
	two_party_cycle(n, &a1, &b2, &wb1, &wa2, 0);
	n->on_log = stop_node1_at_victim;
	pass(n, 3 * DEADLOCK_MS);
	assert_int_equal(n->stopped, 1);	/* the victim was chosen */
	assert_int_equal(stats(n, 2).ls_last_victim, wa2);
	n->on_log = NULL;
	n->stopped = 0;			/* the cancel stays held */
	unlock(n, 1, a1, 11);		/* the master grants wa2 */
	assert_pending(n, 2, wa2);	/* not while the cancel is out */
	release_held(n);
	drain(n);
	assert_int_equal(comps_of(n, 2, wa2, &status, NULL), 1);
	assert_int_equal(status, 0);	/* granted: nothing was cancelled */
	rq.lkid = wa2;
	assert_int_equal(dlm_core_lock(n->ls[2], &rq, &out), 0);
	drain(n);
	(void)b2;
	(void)wb1;
	net_free(n);
}

/* The blocking AST of a grant held for its cancel (core/lock.c:
 * receive_bast with LKBF_GRANT_HELD keeps it in lkb_last_bast;
 * run_overlap delivers the grant's completion, then it).  As in
 * test_cancel_crosses_grant, wa2 (which asks for blocking ASTs) is the
 * victim, its cancel held at A's master, node 1, whose client lets A
 * go: the master grants wa2.  Then owner 12 on node 1 asks for PR on A:
 * the master sends wa2 a blocking AST, which reaches node 2 while the
 * grant's completion is still held.  When the cancel's reply comes,
 * wa2's client sees the completion (EX) and then the blocking AST (PR),
 * never the blocking AST of a lock it does not know it holds. */
static void test_held_grant_bast(void **state)
{
	struct net *n = net_new();
	struct dlm_lock_req rq = {
		.mode = DLM_LOCK_EX, .name = "A", .namelen = 1, .owner = 21,
		.astarg = 21, .want_bast = 1,
	};
	uint32_t a1, b2, wb1, wa2 = 0, pr;
	int types[4], modes[4];

	(void)state;
	a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b2 = lock(n, 2, "B", DLM_LOCK_EX, 21);
	wb1 = lock(n, 1, "B", DLM_LOCK_EX, 11);
	assert_int_equal(dlm_core_lock(n->ls[2], &rq, &wa2), 0);
	drain(n);
	n->on_log = stop_node1_at_victim;
	pass(n, 3 * DEADLOCK_MS);
	assert_int_equal(n->stopped, 1);	/* the victim was chosen */
	assert_int_equal(stats(n, 2).ls_last_victim, wa2);
	n->on_log = NULL;
	n->stopped = 0;			/* the cancel stays held */
	unlock(n, 1, a1, 11);		/* the master grants wa2 */
	pr = lock(n, 1, "A", DLM_LOCK_PR, 12);	/* and sends it a BAST */
	assert_int_equal(asts_of(n, 2, wa2, types, modes, 4), 0);
	release_held(n);
	drain(n);
	assert_int_equal(asts_of(n, 2, wa2, types, modes, 4), 2);
	assert_int_equal(types[0], DLM_AST_COMP);
	assert_int_equal(modes[0], DLM_LOCK_EX);
	assert_int_equal(types[1], DLM_AST_BAST);
	assert_int_equal(modes[1], DLM_LOCK_PR);
	assert_pending(n, 1, pr);
	unlock(n, 2, wa2, 21);
	assert_granted(n, 1, pr);
	(void)b2;
	(void)wb1;
	net_free(n);
}

/* A request of 'owner' on 'node' for 'mode' on R's bytes [start, end]. */
static uint32_t lock_range(struct net *n, int node, int mode, uint64_t owner,
			   uint64_t start, uint64_t end)
{
	struct dlm_range rg = { .ra_start = start, .ra_end = end };
	struct dlm_lock_req rq = {
		.mode = mode, .name = "R", .namelen = 1, .range = &rg,
		.owner = owner, .astarg = owner,
	};
	uint32_t lkid = 0;

	assert_int_equal(dlm_core_lock(n->ls[node], &rq, &lkid), 0);
	drain(n);
	pass(n, STEP_MS);
	return lkid;
}

/* What compatible requests ahead wait for, with ranges (core/lock.c
 * dlm_for_each_blocker: the hull of their ranges, per mode).  Owner 41
 * holds PW on R [0,99] and at 'p_start' (100 bytes); T1 (owner 11) and
 * T2 (owner 12) ask for PR on [0,99] and [200,299] and wait; owner 31
 * holds PW on R at 'g_start' (11 bytes) and waits for S, held by owner
 * 21, whose CR on [700,799] (compatible with everything) waits behind T1
 * and T2, so for their grants.  Owner 31's PW blocks one of those only
 * if its range meets one of theirs: then 21 -> 31 -> 21 is a real
 * cycle, broken at its youngest request, 21's CR; otherwise there is
 * none. */
static void ranged_ahead(uint64_t p_start, uint64_t g_start, bool cycle)
{
	struct net *n = net_new();
	uint32_t p1, p2, g, us, t1, t2, xs, ur;

	p1 = lock_range(n, 3, DLM_LOCK_PW, 41, 0, 99);
	p2 = lock_range(n, 3, DLM_LOCK_PW, 41, p_start, p_start + 99);
	g = lock_range(n, 3, DLM_LOCK_PW, 31, g_start, g_start + 10);
	us = lock(n, 2, "S", DLM_LOCK_EX, 21);
	assert_granted(n, 3, p1);
	assert_granted(n, 3, p2);
	assert_granted(n, 3, g);
	t1 = lock_range(n, 1, DLM_LOCK_PR, 11, 0, 99);
	t2 = lock_range(n, 1, DLM_LOCK_PR, 12, 200, 299);
	xs = lock(n, 3, "S", DLM_LOCK_EX, 31);
	ur = lock_range(n, 2, DLM_LOCK_CR, 21, 700, 799);
	pass(n, 5 * DEADLOCK_MS);
	assert_pending(n, 1, t1);
	assert_pending(n, 1, t2);
	assert_pending(n, 3, xs);
	if (cycle) {
		assert_deadlk(n, 2, ur);
		assert_int_equal(deadlocks(n), 1);
		unlock(n, 2, us, 21);
		assert_granted(n, 3, xs);
	} else {
		assert_pending(n, 2, ur);
		assert_int_equal(deadlocks(n), 0);
		unlock(n, 3, p1, 41);
		unlock(n, 3, p2, 41);
		assert_granted(n, 1, t1);
		assert_granted(n, 1, t2);
		assert_granted(n, 2, ur);
		unlock(n, 2, us, 21);
		assert_granted(n, 3, xs);
	}
	net_free(n);
}

/* T2 waits for owner 41's PW on [200,299]; owner 31's PW at [500,510]
 * meets neither awaited range: no edge, no cycle (a whole-resource view
 * of the awaited grants made one, and cancelled 21's CR). */
static void test_ranged_ahead_disjoint(void **state)
{
	(void)state;
	ranged_ahead(200, 500, false);
}

/* Owner 31's PW at [250,260] is what T2 waits for (owner 41's second
 * PW is at [400,499], out of the way): it meets only T2's range, the
 * second of the hull, and the cycle is real: found. */
static void test_ranged_ahead_cycle(void **state)
{
	(void)state;
	ranged_ahead(400, 250, true);
}

/* Probes are rejected when malformed and ignored when stale. */
static void test_probe_checks(void **state)
{
	struct net *n = net_new();
	unsigned char buf[DLM_WIRE_MAX_LEN];
	struct dlm_msg m;
	int len;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.m_type = DLM_MSG_DEADLK_PROBE;
	m.m_lsid = dlm_core_ls_id(n->ls[1]);
	m.m_from = 2;
	m.m_to = 1;
	m.m_nodeid = 2;
	m.m_lvbseq = 5;
	m.m_owner = 7;
	m.m_status = DLM_DEADLK_MAX_HOPS + 1;	/* too many hops */
	m.m_grrange.ra_end = DLM_RANGE_MAX;
	m.m_rqrange.ra_end = DLM_RANGE_MAX;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(dlm_core_receive(n->core[1], 2, buf, (size_t)len), -EBADMSG);
	m.m_status = 1;
	m.m_nodeid = 9;				/* not a member */
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(n->core[1], 2, buf, (size_t)len), -EBADMSG);
	m.m_nodeid = 2;
	m.m_remid = 12345;			/* no such lock: ignored */
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(n->core[1], 2, buf, (size_t)len), 0);
	assert_int_equal(n->nq, 0);
	net_free(n);
}

/* The lock info of lkid on node (dlm_core_ls_walk). */
struct find_li {
	uint32_t		fl_lkid;
	struct dlm_lock_info	fl_li;
	int			fl_found;
};

static void find_li_fn(void *arg, const struct dlm_lock_info *li)
{
	struct find_li *f = arg;

	if (li->lkid == f->fl_lkid && !li->is_master_copy) {
		f->fl_li = *li;
		f->fl_found = 1;
	}
}

static struct dlm_lock_info lock_info(struct net *n, int node, uint32_t lkid)
{
	struct find_li f = { .fl_lkid = lkid };

	dlm_core_ls_walk(n->ls[node], find_li_fn, &f);
	assert_true(f.fl_found);
	return f.fl_li;
}

/* A probe message of 'type' from node 'from' to 'to' about lock 'remid'
 * there ('lkid' at the sender), initiated by lock 'init' of node
 * 'inode' with age 'key', round 'round', 'hops' so far; the receiver's
 * answer. */
static int forge_probe(struct net *n, int type, int from, int to,
		       uint32_t lkid, uint32_t remid, uint32_t inode,
		       uint32_t init, uint64_t key, uint32_t round, int hops,
		       uint32_t gen)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	struct dlm_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	m.m_type = (uint16_t)type;
	m.m_lsid = dlm_core_ls_id(n->ls[to]);
	m.m_from = (uint32_t)from;
	m.m_to = (uint32_t)to;
	m.m_lkid = lkid;
	m.m_remid = remid;
	m.m_nodeid = inode;
	m.m_lvbseq = init;
	m.m_owner = key;
	m.m_sbflags = round;
	m.m_status = hops;
	m.m_gen = gen;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	m.m_grrange.ra_end = DLM_RANGE_MAX;
	m.m_rqrange.ra_end = DLM_RANGE_MAX;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	return dlm_core_receive(n->core[to], (uint32_t)from, buf, (size_t)len);
}

static uint64_t probes_sent(struct net *n)
{
	uint64_t sum = 0;

	for (int i = 1; i <= NNODES; i++)
		sum += stats(n, i).ls_probes_sent;
	return sum;
}

/* A member that sends garbage probes (a bug, or forged ones past the
 * transport's authentication): probes naming locks that do not exist,
 * of another generation, at the hop limit, the youngest possible age
 * looping through a cycle that never breaks, and a HOLDER that names a
 * waiting request as its own initiator although no cycle exists.
 * Nothing crashes, every garbage probe costs a bounded number of
 * messages, and no request that is not in a cycle is cancelled. */
static void test_probe_garbage(void **state)
{
	struct net *n = net_new();
	uint32_t a1, b2, wb1, wa2, c2, c1, r;
	struct dlm_lock_info wb1_li, wa2_li, c1_li;
	uint64_t before;

	(void)state;
	/* a cycle that never breaks: both requests exempt (NODLCKWT) */
	a1 = lock(n, 1, "A", DLM_LOCK_EX, 11);
	b2 = lock(n, 2, "B", DLM_LOCK_EX, 21);
	wb1 = lock_flags(n, 1, "B", DLM_LOCK_EX, 11, DLM_LKF_NODLCKWT);
	wa2 = lock_flags(n, 2, "A", DLM_LOCK_EX, 21, DLM_LKF_NODLCKWT);
	/* owner 11 also holds C, mastered by node 2 */
	c2 = lock(n, 2, "C", DLM_LOCK_NL, 22);
	c1 = lock(n, 1, "C", DLM_LOCK_NL, 11);
	assert_granted(n, 1, c1);
	pass(n, 3 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 0);
	assert_int_equal(probes_sent(n), 0);
	wb1_li = lock_info(n, 1, wb1);
	wa2_li = lock_info(n, 2, wa2);
	c1_li = lock_info(n, 1, c1);

	/* locks that do not exist, either kind */
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, 777, 0x7777,
				     3, 5, 9, 1, 1, 0), 0);
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_HOLDER, 2, 1, 777, 0x7777,
				     1, wb1, 9, 1, 1, 0), 0);
	assert_int_equal(n->nq, 0);
	/* another generation */
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
				     wb1_li.remid, 3, 5, UINT64_MAX, 1, 1, 7), 0);
	assert_int_equal(n->nq, 0);
	/* hop counts out of range are refused; at the limit nothing goes on */
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
				     wb1_li.remid, 3, 5, UINT64_MAX, 1, 65535, 0),
			 -EBADMSG);
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
				     wb1_li.remid, 3, 5, UINT64_MAX, 1, -1, 0),
			 -EBADMSG);
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
				     wb1_li.remid, 3, 5, UINT64_MAX, 1,
				     DLM_DEADLK_MAX_HOPS, 0), 0);
	assert_int_equal(n->nq, 0);
	/* the youngest age there is, from a lock that does not exist, into
	 * the cycle: it goes round once and dies at the marks; many rounds
	 * of it cost as many times that */
	before = probes_sent(n);
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
				     wb1_li.remid, 3, 5, UINT64_MAX, 1, 1, 0), 0);
	drain(n);
	if (probes_sent(n) - before > 4)
		fail_msg("one garbage probe made %llu",
			 (unsigned long long)(probes_sent(n) - before));
	before = probes_sent(n);
	for (r = 2; r < 102; r++) {
		assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_PROBE, 1, 2, wb1,
					     wb1_li.remid, 3, 5, UINT64_MAX, r,
					     1, 0), 0);
		drain(n);
	}
	if (probes_sent(n) - before > 100 * 4)
		fail_msg("100 garbage probes made %llu",
			 (unsigned long long)(probes_sent(n) - before));
	/* nor does such a probe pick a victim among members of the cycle
	 * that are not its initiator */
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 1, wb1);
	assert_pending(n, 2, wa2);

	(void)a1;
	(void)b2;
	(void)c2;
	(void)wa2_li;
	(void)c1_li;
	net_free(n);

	/* Owner 11 holds C (mastered by node 2) and waits for B behind
	 * owner 21, who waits for nothing: no cycle.  A HOLDER from C's
	 * master saying that 11's lock on C blocks a probe of wb1's (its
	 * age right, a round wb1 never sent) is no cycle wb1 started: wb1
	 * is not cancelled. */
	n = net_new();
	c2 = lock(n, 2, "C", DLM_LOCK_NL, 22);
	c1 = lock(n, 1, "C", DLM_LOCK_NL, 11);
	b2 = lock(n, 2, "B", DLM_LOCK_EX, 21);
	wb1 = lock(n, 1, "B", DLM_LOCK_EX, 11);
	pass(n, 3 * DEADLOCK_MS);
	assert_int_equal(deadlocks(n), 0);
	wb1_li = lock_info(n, 1, wb1);
	c1_li = lock_info(n, 1, c1);
	assert_true(wb1_li.dl_key != 0);
	assert_int_equal(forge_probe(n, DLM_MSG_DEADLK_HOLDER, 2, 1,
				     c1_li.remid, c1, 1, wb1, wb1_li.dl_key,
				     (uint32_t)wb1_li.dl_probe_ms + 1, 2, 0), 0);
	drain(n);
	assert_int_equal(deadlocks(n), 0);
	assert_pending(n, 1, wb1);
	(void)b2;
	(void)c2;
	net_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_party),
		cmocka_unit_test(test_three_party),
		cmocka_unit_test(test_conversion),
		cmocka_unit_test(test_one_node),
		cmocka_unit_test(test_legitimate_wait),
		cmocka_unit_test(test_exempt),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_probe_checks),
		cmocka_unit_test(test_probe_garbage),
		cmocka_unit_test(test_other_thread),
		cmocka_unit_test(test_async_behind_own),
		cmocka_unit_test(test_async_cycle),
		cmocka_unit_test(test_cross_thread),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_compatible_ahead_no_cycle),
		cmocka_unit_test(test_compatible_ahead_cycle),
		cmocka_unit_test(test_late_probe),
		cmocka_unit_test(test_cancel_crosses_grant),
		cmocka_unit_test(test_held_grant_bast),
		cmocka_unit_test(test_ranged_ahead_disjoint),
		cmocka_unit_test(test_ranged_ahead_cycle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
