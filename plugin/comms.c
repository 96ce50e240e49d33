/*
 * plugin/comms.c - the daemon's use of lowcomms: engine messages between
 * nodes.
 *
 * One lowcomms context per daemon.  Its file descriptors sit in the libqb
 * loop (lowcomms asks for them through lc_ops); one libqb timer is kept
 * armed for lc_next_timeout().  After every lowcomms event cu_flush
 * (dlmd_flush) delivers what the engine produced and ends in
 * dlmd_comms_kick(), which flushes the context (lc_flush) so that what
 * the engine answered goes out in the same loop turn, and re-arms the
 * timer: the one place that does both.  A message goes out with one
 * send() from that flush and no epoll_ctl (lowcomms asks for POLLOUT only
 * when a socket is full).  An ack for a message read waits for the next
 * message to that node to carry it, and goes alone from the timer when
 * none has within the ack delay (5 ms, lowcomms.c's DELAYED ACKS): in a
 * remote lock pair the requester's next request carries the ack of the
 * reply, so the master wakes once per request, not twice.
 *
 * WATCHING THE PEERS.  Even once per request is a wake-up of a sleeping
 * dlmd, and on a machine with an idle CPU that is the costly part of a
 * remote pair (an interrupt that brings the idle vCPU back: tens of
 * microseconds here, where the message costs a few; the profile is in
 * bench/bench-compare.c's header, "remote").  In a remote pair a
 * master gets the unlock a few microseconds after it answered the lock,
 * and the next lock as soon after the unlock's answer.  So after a
 * round that delivered a peer's message dlmd does not go to sleep at
 * once: for peer_spin_us (dlm.conf, default 0: off) it keeps turning its
 * loop, each turn a poll of every fd with a zero timeout and a
 * sched_yield (peer_job, a timer due at once, as client.c's watch_job),
 * and a message that came meanwhile is read by that poll, without a
 * wake-up.  Nothing is read here that the loop would not read anyway,
 * so order, exactly-once and the cluster key's records are lowcomms'
 * as before; only when it is read changes.  While client.c's watch of
 * the rings turns the loop (and yields) anyway, a turn here does not
 * yield a second time.  A yield that gave the CPU away for long
 * (PEER_YIELD_LONG_NS: something else needs this CPU, and spinning
 * only takes turns from it) ends the watch, and for a while
 * (PEER_OFF_MIN_NS, twice as long after each such yield up to
 * PEER_OFF_MAX_NS, back to none after PEER_GOOD_WATCHES watches without
 * one) no watch begins: dlmd sleeps and is woken by each message, as
 * without it.  peer_spin_us = 0: dlmd sleeps as soon as its loop has
 * nothing to do.
 *
 * What travels: each engine message (already encoded by core/wire.c, which
 * carries its own lockspace id, sender and target) is one lowcomms message
 * of type COMMS_TYPE_ENGINE.  lowcomms delivers in order and exactly once
 * while both nodes keep each other in their tables; comms_deliver() hands
 * each one to dlm_core_receive().
 *
 * Back-pressure: lc_send() never blocks and refuses with -ENOBUFS when a
 * peer's queue is full.  The engine's protocol has no retransmission of its
 * own, so a refused message is never dropped: it goes on a per-node backlog
 * (FIFO, and every later message for that node queues behind it so order
 * is kept) that is retried on every loop turn lowcomms reports progress on
 * and on a short timer.  When not even the backlog entry can be
 * allocated, dlmd_comms_send() says so (-ENOMEM) and the caller keeps the
 * message (engine.c holds it and tries again).  Only a message for a node
 * that is not in the table (any more) is dropped, counted.
 *
 * HOLD: a message the engine did not take.  dlm_core_receive() answers
 * -ENOMEM, having changed nothing, when it could not even keep a message
 * it must keep (core.h; a lock message while the lockspace does not run,
 * a re-point record): the message must be offered again, before anything
 * later from that node (the engine relies on each node's order, which is
 * lowcomms' order).  comms_deliver() then answers lowcomms -EAGAIN:
 * lowcomms holds the node (lowcomms.c, HOLDING A NODE): the frame is not
 * acknowledged and nothing later from the node is delivered; what the
 * node sends meanwhile stays queued unacknowledged on ITS side (bounded
 * by its lowcomms queue, 4 Mi frames or 1 GiB here, then its backlog),
 * so a hold costs this node no memory at all, which is the point: there
 * is none.  Other nodes' messages and our own go on: the engine's
 * protocol assumes nothing about order across senders (dlm-sim delivers
 * any interleaving across links, FIFO per link, and requeues a message
 * not taken at the head of its link).  The held node is resumed
 * (lc_node_resume: a reconnect, and the node resends from the refused
 * frame) HOLD_RETRY_MIN_MS after the refusal, doubling at each new
 * refusal up to HOLD_RETRY_MAX_MS, from our timer or after any call into
 * the engine (it may have freed memory), and at once at the engine's
 * tick (dlmd_comms_retry_held).  It is released when its message is
 * taken, or when its daemon leaves (dlmd_comms_node_reset): the message
 * is then dropped with everything the node had in flight, as core's
 * recovery expects of a departed node (recover.c: what a dead node sent
 * is lost, and its locks are purged or rebuilt from the survivors; the
 * engine never saw this one, so nothing of it needs undoing).  A hold
 * holds back the node's recovery messages as well (one stream): a
 * recovery that needs them waits, here and on the others, until memory
 * returns or the node leaves, as core.h's "offer it again, in order"
 * requires (a recovery message cannot overtake the lock message before
 * it).  A hold
 * older than HOLD_WARN_MS is logged as a warning once per HOLD_LOG_MS;
 * dlmctl status ("comms ... held N not_taken N"), the metrics
 * (dlmd_held_messages, dlmd_peer_messages_not_taken_total) and the stall
 * watchdog (cluster.c: the lockspaces show "stalled") show it.  A peer
 * sees our hold as frames we do not acknowledge: past
 * peer_unreachable_secs it removes us (cluster.c, UNREACHABLE PEERS),
 * the right outcome for a node that stays unable to take messages.
 *
 * Security: unless dlm.conf says crypto = none (logged as a warning at
 * start), the context gets the cluster key from key_file (corosync's
 * authkey by default) and dlmd does not start without a usable one: peers
 * must prove it in a handshake and every frame is sealed (lowcomms/auth.c).
 *
 * THE CLUSTER KEY is read here, once per process, and nowhere else: the
 * same bytes in secret memory give lowcomms' keys (lc_new derives them)
 * and the CPG seal key (dlmd_cm_key_new, plugin/cpgmsg.c), which
 * cluster.c takes once (dlmd_comms_take_cpg_key(), seal_init); then the
 * cluster key is wiped.  Before, cluster.c opened key_file a second time:
 * a file renamed over it between the two opens gave node-to-node traffic
 * one key and the CPG seals another (each peer then refusing half of
 * what it hears), and there were two copies in secret memory.  A key
 * file changed after the start changes nothing until dlmd restarts
 * (man dlm.conf, key_file; tests/test-cluster-keys.sh: node 1's dlmd
 * opens it once, and locks on after it was replaced).
 *
 * NODE TABLE.  cluster.c calls dlmd_comms_node_add() for every node of the
 * corosync nodelist (all rings, up to LC_MAX_ADDRS addresses), at start
 * and again whenever the nodelist changes: a new node is added, a known
 * one whose addresses changed gets the new ones in place
 * (lc_node_set_addrs: queue and sequence state kept, connections to the
 * old addresses closed).  corosync changes a node's address only by a
 * reload that removes it and one that adds it back (it refuses to change
 * it in place).  A node removed from the nodelist leaves the table
 * (dlmd_comms_node_remove: its transport state and metrics freed) once
 * nothing of the membership or fencing needs it any more (cluster.c,
 * NODES LEAVING THE NODELIST); its id, if it comes back (the same host or
 * another one), is added afresh.
 * Before, a moved node kept its first addresses here: its dlmd was
 * refused as "not a cluster node address" and was removed as unreachable
 * (tests/test-cluster-nodelist.sh).
 *
 * Frames lost (lowcomms' ops_frames_lost: a peer resumed past what we
 * got) go up to cluster.c (cu_frames_lost of the table it gave
 * dlmd_comms_init(): dlmd_cluster_frames_lost()), which removes one of the
 * two nodes from the cluster.  This file calls nothing above it by name:
 * after each lowcomms event it hands the engine's output on through the
 * same table (cu_flush: dlmd_flush() of plugin/engine.c).
 *
 * dlmd_comms_node_reset() when a node's daemon left the cluster: its queue
 * and sequence state are dropped and it starts a new lowcomms epoch, in
 * place (lc_node_renew: it allocates nothing), so the next incarnation of
 * that daemon starts afresh.
 *
 * RESTARTED PEER.  A peer's new lowcomms epoch (its dlmd restarted, or
 * someone with the cluster key claims its id) is paused by lowcomms
 * (lowcomms.c, PEER RESTARTED): nothing queued for the node goes to the
 * new life and nothing of the new life reaches the engine, until
 * dlmd_comms_node_reset() above (the CPG leave of the daemon we knew:
 * the restart confirmed; what was queued for the old life is dropped
 * with it, as the engine's recovery expects of a departed node) or the
 * known life is heard again (then it was no restart: its queue is
 * resent, nothing lost).  A pause that the membership never resolves
 * while the known life is not connected counts as a wait in
 * dlmd_comms_wait_ms(), so past peer_unreachable_secs the node is
 * reported and removed through the membership (cluster.c, UNREACHABLE
 * PEERS), never dropped here.  (A remove and an add again failed, out of
 * memory, at the add: the node was gone from the table and its next
 * daemon was refused as "not a cluster node address" until the others
 * removed this one as unreachable; tests/test-cluster-recfaults.sh.)
 *
 * Metrics: each node of the table has a struct dlmd_peer_metrics in
 * cm_peers (made when the node is added, kept across its resets so its
 * counters only grow): engine messages and their payload bytes queued to
 * it and delivered from it, and connections established (lowcomms'
 * ops_established).  Counting is a hash lookup by node id and two adds.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/timerfd.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "lowcomms/lowcomms.h"
#include "plugin/cpgmsg.h"
#include "plugin/dlmd.h"

#define COMMS_TYPE_ENGINE	1
#define COMMS_BACKLOG_RETRY_MS	20
/* A held node is resumed after HOLD_RETRY_MIN_MS, doubling at each new
 * refusal up to HOLD_RETRY_MAX_MS; a hold older than HOLD_WARN_MS is
 * logged as a warning, once per HOLD_LOG_MS. */
#define HOLD_RETRY_MIN_MS	10
#define HOLD_RETRY_MAX_MS	1000
#define HOLD_WARN_MS		5000
#define HOLD_LOG_MS		10000
#define COMMS_QUEUE_FRAMES	(4u * 1024 * 1024)
#define COMMS_QUEUE_BYTES	(1024u * 1024 * 1024)
#define NS_PER_MS		1000000ULL
/* a yield that took longer ends a peer watch (client.c's measure too) */
#define PEER_YIELD_LONG_NS	200000ULL
#define PEER_OFF_MIN_NS		16000000ULL
#define PEER_OFF_MAX_NS		1024000000ULL
#define PEER_GOOD_WATCHES	64

struct comms_backlog {
	struct comms_backlog	*cb_next;
	uint32_t		cb_to;
	size_t			cb_len;
	unsigned char		cb_buf[];
};

struct dlmd_comms {
	struct dlmd		*cm_d;
	const struct dlmd_comms_up *cm_up;	/* cluster.c's */
	struct lc_ctx		*cm_lc;
	qb_loop_timer_handle	cm_timer;	/* when there is no cm_tfd */
	int			cm_tfd;		/* the timerfd, -1: none */
	bool			cm_timer_armed;
	uint64_t		cm_timer_at;	/* ms, CLOCK_MONOTONIC */
	struct comms_backlog	*cm_backlog;
	struct comms_backlog	**cm_backlog_tail;
	uint64_t		cm_nbacklog;
	uint64_t		cm_dropped;	/* to unknown nodes */
	struct u32map		cm_peers;	/* nodeid -> dlmd_peer_metrics */
	/* HOLD: nodes whose message the engine did not take */
	unsigned int		cm_nheld;	/* peers with pm_held_since */
	uint64_t		cm_not_taken;	/* refusals, all peers */
	unsigned int		cm_hold_backoff_ms;
	uint64_t		cm_hold_retry_at;	/* ms */
	uint64_t		cm_hold_log_at;		/* ms: warn again then */
	/* WATCHING THE PEERS */
	bool			cm_delivered;	/* this event delivered */
	bool			cm_peer_job;	/* peer_job queued */
	qb_loop_timer_handle	cm_peer_timer;
	uint64_t		cm_peer_until;	/* ns, CLOCK_MONOTONIC */
	uint64_t		cm_npeer_watches;	/* watches begun */
	uint64_t		cm_npeer_took;	/* events read while watching */
	uint64_t		cm_npeer_yields_long;
	uint64_t		cm_peer_off_ns;	/* the last back-off, 0: none */
	uint64_t		cm_peer_off_until;	/* ns: no watch before */
	unsigned int		cm_peer_good;	/* watches since a long yield */
	/* THE CLUSTER KEY: the CPG key until cluster.c takes it
	 * (lc_secret_alloc; zeros with crypto = none) */
	unsigned char		*cm_cpg_key;
};

static void comms_rearm(struct dlmd_comms *cm);

static struct dlmd_peer_metrics *peer(const struct dlmd_comms *cm, uint32_t nodeid)
{
	return nodeid ? u32map_get(&cm->cm_peers, nodeid) : NULL;
}

/* The engine did not take the node's message (HOLD): lowcomms holds the
 * node (our -EAGAIN), we offer it again after the back-off. */
static void hold(struct dlmd_comms *cm, struct dlmd_peer_metrics *pm)
{
	uint64_t now = dlmd_now_ms();

	pm->pm_not_taken++;
	cm->cm_not_taken++;
	if (!pm->pm_held_since) {
		pm->pm_held_since = now;
		if (!cm->cm_nheld++)
			cm->cm_hold_backoff_ms = HOLD_RETRY_MIN_MS;
		log_info("comms: the engine could not take a message from node "
			 "%u (out of memory): it is held, with everything after "
			 "it from that node, and offered again", pm->pm_nodeid);
	}
	cm->cm_hold_retry_at = now + cm->cm_hold_backoff_ms;
	cm->cm_hold_backoff_ms *= 2;
	if (cm->cm_hold_backoff_ms > HOLD_RETRY_MAX_MS)
		cm->cm_hold_backoff_ms = HOLD_RETRY_MAX_MS;
}

static void unhold(struct dlmd_comms *cm, struct dlmd_peer_metrics *pm,
		   const char *why)
{
	uint64_t ms = dlmd_now_ms() - pm->pm_held_since;

	if (ms >= HOLD_WARN_MS)
		log_notice("comms: the message from node %u held for %llu ms is "
			   "%s", pm->pm_nodeid, (unsigned long long)ms, why);
	else
		log_info("comms: the message from node %u held for %llu ms is %s",
			 pm->pm_nodeid, (unsigned long long)ms, why);
	pm->pm_held_since = 0;
	cm->cm_nheld--;
}

static int comms_deliver(void *arg, uint32_t from, uint16_t type, uint32_t lsid,
			 const void *payload, size_t len)
{
	struct dlmd_comms *cm = arg;
	struct dlmd_peer_metrics *pm = peer(cm, from);

	if (type != COMMS_TYPE_ENGINE) {
		log_warn("comms: message of unknown type %u from node %u dropped",
			 type, from);
		return 0;
	}
	if (cm->cm_d->d_cannot_hold)
		return 0;	/* stopping: the engine takes nothing more */
	if (dlm_core_receive(cm->cm_d->d_core, from, payload, len) == -ENOMEM) {
		if (!pm) {
			/* lowcomms knows no node comms.c has no record of
			 * (dlmd_comms_node_add makes it first) */
			cm->cm_up->cu_cannot_hold(cm->cm_d, "a message from "
						  "node (not taken, no record "
						  "to hold it)", from);
			return 0;
		}
		hold(cm, pm);
		return -EAGAIN;
	}
	cm->cm_delivered = true;
	if (pm) {
		if (pm->pm_held_since)
			unhold(cm, pm, "taken");
		pm->pm_msgs_received++;
		pm->pm_bytes_received += len;
	}
	return 0;
}

struct hold_pass {
	struct dlmd_comms	*hp_cm;
	uint64_t		hp_now;
	uint64_t		hp_oldest;	/* ms, 0: none */
	uint32_t		hp_node;	/* its node */
	bool			hp_resume;
};

static void hold_peer(void *arg, uint32_t key, void *val)
{
	struct hold_pass *hp = arg;
	struct dlmd_peer_metrics *pm = val;

	if (!pm->pm_held_since)
		return;
	if (!hp->hp_oldest || pm->pm_held_since < hp->hp_oldest) {
		hp->hp_oldest = pm->pm_held_since;
		hp->hp_node = pm->pm_nodeid;
	}
	/* a no-op until the resent message came and was refused again */
	if (hp->hp_resume)
		(void)lc_node_resume(hp->hp_cm->cm_lc, pm->pm_nodeid);
}

/* Offer the held messages again (force: now; else when the back-off has
 * passed), and warn about one held for long. */
static void hold_retry(struct dlmd_comms *cm, bool force)
{
	struct hold_pass hp = { cm, dlmd_now_ms(), 0, 0, false };

	if (!cm->cm_nheld)
		return;
	hp.hp_resume = force || hp.hp_now >= cm->cm_hold_retry_at;
	if (hp.hp_resume)
		cm->cm_hold_retry_at = hp.hp_now + cm->cm_hold_backoff_ms;
	u32map_each(&cm->cm_peers, hold_peer, &hp);
	if (hp.hp_oldest && hp.hp_now - hp.hp_oldest >= HOLD_WARN_MS &&
	    hp.hp_now >= cm->cm_hold_log_at) {
		cm->cm_hold_log_at = hp.hp_now + HOLD_LOG_MS;
		log_warn("comms: out of memory: a message from node %u has not "
			 "been taken by the engine for %llu s (%u node%s held, "
			 "%llu refusals); nothing later from it is read until it "
			 "is", hp.hp_node,
			 (unsigned long long)((hp.hp_now - hp.hp_oldest) / 1000),
			 cm->cm_nheld, cm->cm_nheld == 1 ? "" : "s",
			 (unsigned long long)cm->cm_not_taken);
	}
}

void dlmd_comms_retry_held(struct dlmd *d)
{
	if (d->d_comms) {
		hold_retry(d->d_comms, true);
		comms_rearm(d->d_comms);
	}
}

unsigned int dlmd_comms_held(const struct dlmd *d, uint32_t *nodeid,
			     uint64_t *since_ms)
{
	struct hold_pass hp = { d->d_comms, 0, 0, 0, false };

	if (!d->d_comms || !d->d_comms->cm_nheld)
		return 0;
	u32map_each(&d->d_comms->cm_peers, hold_peer, &hp);
	if (nodeid)
		*nodeid = hp.hp_node;
	if (since_ms)
		*since_ms = hp.hp_oldest;
	return d->d_comms->cm_nheld;
}

/* Send what the backlog holds, in order, until lowcomms refuses again. */
static void backlog_drain(struct dlmd_comms *cm)
{
	struct comms_backlog **pp = &cm->cm_backlog;
	uint32_t blocked[DLM_MAX_NODES];
	unsigned int nblocked = 0;

	while (*pp) {
		struct comms_backlog *b = *pp;
		bool skip = false;
		int rv;

		for (unsigned int i = 0; i < nblocked; i++)
			if (blocked[i] == b->cb_to)
				skip = true;
		if (skip) {
			pp = &b->cb_next;
			continue;
		}
		rv = lc_send(cm->cm_lc, b->cb_to, COMMS_TYPE_ENGINE, 0, b->cb_buf,
			     b->cb_len);
		if (rv == -ENOBUFS || rv == -ENOMEM) {
			if (nblocked < DLM_MAX_NODES)
				blocked[nblocked++] = b->cb_to;
			pp = &b->cb_next;
			continue;
		}
		if (rv) {
			/* the node left our table (lc_node_remove threw
			 * away what was queued for it already) */
			cm->cm_dropped++;
			log_warn("comms: message for node %u dropped: %s", b->cb_to,
				 strerror(-rv));
		}
		*pp = b->cb_next;
		free(b);
		cm->cm_nbacklog--;
	}
	cm->cm_backlog_tail = pp;
}

static void after_event(struct dlmd_comms *cm)
{
	if (cm->cm_backlog)
		backlog_drain(cm);
	/* dlmd_flush() ends in dlmd_comms_kick(): lc_flush and the timer */
	cm->cm_up->cu_flush(cm->cm_d);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void peer_job(void *data);

/* WATCHING THE PEERS: a message was delivered; keep the loop turning for
 * peer_spin_us more. */
static void peer_watch(struct dlmd_comms *cm)
{
	struct dlmd *d = cm->cm_d;
	uint64_t now;

	if (!d->d_loop || !d->d_cfg.cf_peer_spin_us)
		return;
	now = mono_ns();

	if (cm->cm_peer_job) {
		cm->cm_peer_until = now + (uint64_t)d->d_cfg.cf_peer_spin_us * 1000;
		cm->cm_npeer_took++;
		return;
	}
	if (now < cm->cm_peer_off_until)
		return;
	if (cm->cm_peer_off_ns && ++cm->cm_peer_good >= PEER_GOOD_WATCHES) {
		cm->cm_peer_off_ns = 0;
		cm->cm_peer_good = 0;
	}
	cm->cm_peer_until = now + (uint64_t)d->d_cfg.cf_peer_spin_us * 1000;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, 0, cm, peer_job,
			      &cm->cm_peer_timer) != 0)
		return;
	cm->cm_peer_job = true;
	cm->cm_npeer_watches++;
}

static void peer_job(void *data)
{
	struct dlmd_comms *cm = data;
	uint64_t t0 = mono_ns(), t1;

	cm->cm_peer_job = false;
	if (t0 >= cm->cm_peer_until)
		return;		/* the loop sleeps until an fd or timer */
	if (!cm->cm_d->d_watch_job) {	/* client.c's watch yields */
		sched_yield();
		t1 = mono_ns();
		if (t1 - t0 >= PEER_YIELD_LONG_NS) {
			cm->cm_npeer_yields_long++;
			cm->cm_peer_off_ns = cm->cm_peer_off_ns ?
				cm->cm_peer_off_ns * 2 : PEER_OFF_MIN_NS;
			if (cm->cm_peer_off_ns > PEER_OFF_MAX_NS)
				cm->cm_peer_off_ns = PEER_OFF_MAX_NS;
			cm->cm_peer_off_until = t1 + cm->cm_peer_off_ns;
			cm->cm_peer_good = 0;
			return;
		}
	}
	if (qb_loop_timer_add(cm->cm_d->d_loop, QB_LOOP_HIGH, 0, cm, peer_job,
			      &cm->cm_peer_timer) == 0)
		cm->cm_peer_job = true;
}

static int fd_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_comms *cm = data;

	cm->cm_delivered = false;
	(void)lc_fd_event(cm->cm_lc, fd, (short)revents);
	after_event(cm);
	if (cm->cm_delivered)
		peer_watch(cm);
	return 0;
}

/* HIGH, as clients and membership: libqb runs its lower levels only in
 * some passes of its loop, and a peer's message polled at MED was seen by
 * one epoll_wait, queued, and read after a second one (strace of a remote
 * pair's requester: 6.5 epoll_wait per pair for 4 wake-ups, the master 3
 * for 2).  lowcomms bounds its work per event (READS_PER_EVENT,
 * WRITES_PER_FLUSH), so a busy peer does not hold the loop. */
#define COMMS_FD_PRIO	QB_LOOP_HIGH

static int comms_fd_add(void *arg, int fd, short events)
{
	struct dlmd_comms *cm = arg;

	return qb_loop_poll_add(cm->cm_d->d_loop, COMMS_FD_PRIO, fd, events,
				cm, fd_ready);
}

static int comms_fd_mod(void *arg, int fd, short events)
{
	struct dlmd_comms *cm = arg;

	return qb_loop_poll_mod(cm->cm_d->d_loop, COMMS_FD_PRIO, fd, events,
				cm, fd_ready);
}

static void comms_fd_del(void *arg, int fd)
{
	struct dlmd_comms *cm = arg;

	qb_loop_poll_del(cm->cm_d->d_loop, fd);
}

static void comms_log(void *arg, int level, const char *msg)
{
	qb_log(level, "comms: %s", msg);
}

/* The exactly-once stream from the node is broken: cluster.c decides. */
static void comms_frames_lost(void *arg, uint32_t from, uint32_t expected,
			      uint32_t got)
{
	struct dlmd_comms *cm = arg;

	cm->cm_up->cu_frames_lost(cm->cm_d, from);
}

static void comms_established(void *arg, uint32_t nodeid)
{
	struct dlmd_peer_metrics *pm = peer(arg, nodeid);

	if (pm)
		pm->pm_connects++;
}

static const struct lc_ops comms_ops = {
	.ops_frames_lost = comms_frames_lost,
	.ops_established = comms_established,
	.ops_deliver = comms_deliver,
	.ops_fd_add = comms_fd_add,
	.ops_fd_mod = comms_fd_mod,
	.ops_fd_del = comms_fd_del,
	.ops_log = comms_log,
};

static void on_timer(void *data)
{
	struct dlmd_comms *cm = data;

	cm->cm_timer_armed = false;
	lc_timer(cm->cm_lc, dlmd_now_ms());
	hold_retry(cm, false);
	after_event(cm);
}

static int on_timerfd(int32_t fd, int32_t revents, void *data)
{
	uint64_t n;

	(void)revents;
	if (read(fd, &n, sizeof(n)) < 0 && errno == EAGAIN)
		return 0;	/* re-armed meanwhile, not due */
	on_timer(data);
	return 0;
}

/* Keep one timer armed for the earliest of lowcomms' next deadline and the
 * backlog's retry.  A timerfd in the loop, not a libqb timer: libqb sleeps
 * whole milliseconds rounded down and then polls with a zero timeout
 * until a timer is due, so each of its timers costs up to a millisecond
 * of a CPU spent in epoll_wait(0) (the requester of a remote pair, whose
 * delayed-ack timer is almost always armed, made 35-72 epoll_wait calls a
 * pair that way; bench/bench-compare.c's header, "remote"). */
static void comms_rearm(struct dlmd_comms *cm)
{
	uint64_t now = dlmd_now_ms();
	uint64_t at = lc_next_timeout(cm->cm_lc);

	if (cm->cm_backlog && at > now + COMMS_BACKLOG_RETRY_MS)
		at = now + COMMS_BACKLOG_RETRY_MS;
	if (cm->cm_nheld && at > cm->cm_hold_retry_at)
		at = cm->cm_hold_retry_at;
	if (at == UINT64_MAX)
		return;
	if (cm->cm_timer_armed) {
		if (cm->cm_timer_at <= at)
			return;
		if (cm->cm_tfd < 0)
			qb_loop_timer_del(cm->cm_d->d_loop, cm->cm_timer);
		cm->cm_timer_armed = false;
	}
	if (cm->cm_tfd >= 0) {
		/* absolute; a time already past (never 0: that disarms)
		 * fires at once */
		struct itimerspec its = { .it_value = {
			.tv_sec = (time_t)(at / 1000),
			.tv_nsec = (long)(at % 1000) * 1000000L + 1 } };

		if (timerfd_settime(cm->cm_tfd, TFD_TIMER_ABSTIME, &its,
				    NULL) == 0) {
			cm->cm_timer_armed = true;
			cm->cm_timer_at = at;
		}
		return;
	}
	if (qb_loop_timer_add(cm->cm_d->d_loop, QB_LOOP_MED,
			      (at > now ? at - now : 0) * NS_PER_MS, cm, on_timer,
			      &cm->cm_timer) == 0) {
		cm->cm_timer_armed = true;
		cm->cm_timer_at = at;
	}
}

/* lowcomms/secret.c: the first session key that found OpenSSL's secure
 * heap full (counted in the status, keys_out_of_secure_heap). */
static void secret_full(void *arg, const char *msg)
{
	(void)arg;
	log_warn("comms: %s", msg);
}

int dlmd_comms_init(struct dlmd *d, const char *const *our_addrs,
		    unsigned int naddrs, const struct dlmd_comms_up *up)
{
	struct dlmd_comms *cm = calloc(1, sizeof(*cm));
	struct lc_config cfg;
	unsigned char *key = NULL;	/* the cluster key: lc_secret_alloc */
	int rv;

	if (!cm)
		return -ENOMEM;
	cm->cm_d = d;
	cm->cm_up = up;
	cm->cm_backlog_tail = &cm->cm_backlog;
	cm->cm_tfd = -1;
	lc_config_default(&cfg);
	cfg.cfg_nodeid = d->d_nodeid;
	cfg.cfg_port = (uint16_t)d->d_cfg.cf_port;
	cfg.cfg_sndbuf = (int)d->d_cfg.cf_buffer_size;
	cfg.cfg_rcvbuf = (int)d->d_cfg.cf_buffer_size;
	cfg.cfg_queue_frames = COMMS_QUEUE_FRAMES;
	cfg.cfg_queue_bytes = COMMS_QUEUE_BYTES;
	for (unsigned int i = 0; i < naddrs && cfg.cfg_naddrs < LC_MAX_ADDRS; i++) {
		if (dlmd_comms_addr_parse(our_addrs[i], 0,
					  &cfg.cfg_addrs[cfg.cfg_naddrs]) == 0)
			cfg.cfg_naddrs++;
		else
			log_warn("comms: our address '%s' does not resolve; not "
				 "listening on it", our_addrs[i]);
	}
	if (d->d_cfg.cf_protocol == DLMD_PROTO_SCTP ||
	    (d->d_cfg.cf_protocol == DLMD_PROTO_DETECT && cfg.cfg_naddrs > 1))
		cfg.cfg_transport = LC_TRANSPORT_SCTP;
	if (d->d_cfg.cf_crypto_none) {
		cfg.cfg_security = LC_SEC_NONE;
		log_warn("comms: crypto = none: node-to-node traffic is neither "
			 "authenticated nor encrypted; anything that can connect "
			 "to port %u from a cluster node's address can join the "
			 "lock traffic", (unsigned)cfg.cfg_port);
	} else {
		char why[512];

		/* In secret memory from the file on (lowcomms/secret.c):
		 * no stack or heap copy of it for a core dump to hold. */
		key = lc_secret_alloc(LC_KEY_LEN);
		if (!key) {
			rv = -ENOMEM;
			snprintf(why, sizeof(why), "no memory for the cluster "
				 "key");
		} else {
			rv = lc_key_load(d->d_cfg.cf_key_file, key, why,
					 sizeof(why));
		}
		if (rv < 0) {
			log_err("comms: %s; not starting (dlm.conf: key_file "
				"names the cluster key; crypto = none for "
				"plaintext)", why);
			lc_secret_free(key);
			free(cm);
			return rv;
		}
		cfg.cfg_security = LC_SEC_KEY;
		cfg.cfg_key = key;
		/* before lc_new sets OpenSSL up */
		rv = lc_secret_heap_size(d->d_cfg.cf_secure_heap_size);
		if (rv < 0)
			log_warn("comms: secure_heap_size %u not taken (%s): "
				 "the session keys' heap keeps its size",
				 (unsigned)d->d_cfg.cf_secure_heap_size,
				 strerror(-rv));
		log_info("comms: peers must prove the cluster key (derived from "
			 "%s, read once: a key put there later is read at the "
			 "next start); every frame is authenticated and "
			 "encrypted", d->d_cfg.cf_key_file);
	}
	log_info("comms: %s on port %u, %u local address%s",
		 cfg.cfg_transport == LC_TRANSPORT_SCTP ? "SCTP" : "TCP",
		 (unsigned)cfg.cfg_port, cfg.cfg_naddrs, cfg.cfg_naddrs == 1 ? "" : "es");
	/* THE CLUSTER KEY: both users' keys from this one read */
	cm->cm_cpg_key = dlmd_cm_key_new(key);
	if (!cm->cm_cpg_key) {
		log_err("comms: no memory for the CPG key; not starting");
		lc_secret_free(key);
		free(cm);
		return -ENOMEM;
	}
	cm->cm_lc = lc_new(&cfg, &comms_ops, cm);
	rv = cm->cm_lc ? 0 : -errno;
	lc_secret_free(key);	/* the context keeps only what it derived */
	if (!cm->cm_lc) {
		log_err("comms: cannot create the transport: %s", strerror(-rv));
		lc_secret_free(cm->cm_cpg_key);
		free(cm);
		return rv ? rv : -ENOMEM;
	}
	if (cfg.cfg_security == LC_SEC_KEY) {
		log_info("comms: %s", lc_secret_status());
		/* the heap fills with connections, long after this line */
		lc_secret_on_full(secret_full, NULL);
	}
	if (d->d_loop)
		cm->cm_tfd = timerfd_create(CLOCK_MONOTONIC,
					    TFD_NONBLOCK | TFD_CLOEXEC);
	if (cm->cm_tfd >= 0 &&
	    qb_loop_poll_add(d->d_loop, QB_LOOP_MED, cm->cm_tfd, POLLIN, cm,
			     on_timerfd) != 0) {
		close(cm->cm_tfd);
		cm->cm_tfd = -1;
	}
	if (cm->cm_tfd < 0 && d->d_loop)
		log_warn("comms: no timerfd (%s): libqb's timer instead",
			 strerror(errno));
	d->d_comms = cm;
	rv = lc_listen(cm->cm_lc);
	if (rv) {
		log_err("comms: cannot listen on port %u: %s", d->d_cfg.cf_port,
			strerror(-rv));
		return rv;
	}
	log_info("comms: listening on port %d", lc_listen_port(cm->cm_lc));
	return 0;
}

static void free_peer(void *arg, uint32_t key, void *val)
{
	free(val);
}

void dlmd_comms_fini(struct dlmd *d)
{
	struct dlmd_comms *cm = d->d_comms;

	if (!cm)
		return;
	if (cm->cm_timer_armed && cm->cm_tfd < 0)
		qb_loop_timer_del(d->d_loop, cm->cm_timer);
	if (cm->cm_tfd >= 0) {
		qb_loop_poll_del(d->d_loop, cm->cm_tfd);
		close(cm->cm_tfd);
	}
	if (cm->cm_peer_job)
		qb_loop_timer_del(d->d_loop, cm->cm_peer_timer);
	lc_destroy(cm->cm_lc);
	while (cm->cm_backlog) {
		struct comms_backlog *b = cm->cm_backlog;

		cm->cm_backlog = b->cb_next;
		free(b);
	}
	u32map_each(&cm->cm_peers, free_peer, NULL);
	u32map_free(&cm->cm_peers);
	lc_secret_free(cm->cm_cpg_key);
	free(cm);
	d->d_comms = NULL;
}

unsigned char *dlmd_comms_take_cpg_key(struct dlmd *d)
{
	unsigned char *key = d->d_comms ? d->d_comms->cm_cpg_key : NULL;

	if (key)
		d->d_comms->cm_cpg_key = NULL;
	return key;
}

int dlmd_comms_addr_parse(const char *text, uint16_t port,
			  struct sockaddr_storage *ss)
{
	struct addrinfo hints, *res = NULL;
	int rv;

	if (lc_addr_parse(text, port, ss) == 0)
		return 0;
	/* a host name in the nodelist: resolve it once */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rv = getaddrinfo(text, NULL, &hints, &res);
	if (rv || !res)
		return -ENOENT;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	freeaddrinfo(res);
	return 0;
}

int dlmd_comms_node_add(struct dlmd *d, uint32_t nodeid,
			const char *const *addrs, unsigned int naddrs)
{
	struct sockaddr_storage ss[LC_MAX_ADDRS];
	int n = 0, rv;

	if (!d->d_comms)
		return 0;
	for (unsigned int i = 0; i < naddrs && n < LC_MAX_ADDRS; i++) {
		if (dlmd_comms_addr_parse(addrs[i], 0, &ss[n]) == 0)
			n++;
		else
			log_warn("comms: node %u address '%s' does not resolve",
				 nodeid, addrs[i]);
	}
	if (!n)
		return -EINVAL;
	if (!peer(d->d_comms, nodeid)) {
		struct dlmd_peer_metrics *pm = calloc(1, sizeof(*pm));

		if (!pm || u32map_put(&d->d_comms->cm_peers, nodeid, pm)) {
			free(pm);
			return -ENOMEM;
		}
		pm->pm_nodeid = nodeid;
	}
	rv = lc_node_add(d->d_comms->cm_lc, nodeid, ss, n);
	if (rv == -EEXIST) {
		/* known: its nodelist entry may have moved (NODE TABLE) */
		rv = lc_node_set_addrs(d->d_comms->cm_lc, nodeid, ss, n);
		if (rv == 1)
			log_notice("comms: node %u now at %s%s (the nodelist "
				   "changed)", nodeid, addrs[0],
				   n > 1 ? " and more" : "");
		else if (rv)
			log_warn("comms: node %u: cannot take its new addresses: "
				 "%s", nodeid, strerror(-rv));
		return rv < 0 ? rv : 0;
	}
	if (rv)
		log_warn("comms: cannot add node %u: %s", nodeid, strerror(-rv));
	else
		log_debug("comms: node %u added with %d address%s", nodeid, n,
			  n == 1 ? "" : "es");
	return rv;
}

static void backlog_forget(struct dlmd_comms *cm, uint32_t nodeid)
{
	struct comms_backlog **pp = &cm->cm_backlog;

	while (*pp) {
		struct comms_backlog *b = *pp;

		if (b->cb_to == nodeid) {
			*pp = b->cb_next;
			free(b);
			cm->cm_nbacklog--;
		} else {
			pp = &b->cb_next;
		}
	}
	cm->cm_backlog_tail = pp;
}

void dlmd_comms_node_reset(struct dlmd *d, uint32_t nodeid,
			   const char *const *addrs, unsigned int naddrs)
{
	struct dlmd_comms *cm = d->d_comms;
	int rv;

	if (!cm || nodeid == d->d_nodeid)
		return;
	backlog_forget(cm, nodeid);
	/* its message not taken goes with what it had in flight */
	if (peer(cm, nodeid) && peer(cm, nodeid)->pm_held_since)
		unhold(cm, peer(cm, nodeid), "dropped: its daemon left");
	/* in place: a remove and an add could find no memory for the add,
	 * and the node's next daemon would be refused for good */
	rv = lc_node_renew(cm->cm_lc, nodeid);
	if (rv && rv != -ENOENT)
		log_warn("comms: cannot reset node %u: %s", nodeid, strerror(-rv));
	else
		log_info("comms: node %u's daemon left: connection state dropped",
			 nodeid);
	if (rv == -ENOENT)
		dlmd_comms_node_add(d, nodeid, addrs, naddrs);
	comms_rearm(cm);
}

int dlmd_comms_node_remove(struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_comms *cm = d->d_comms;
	struct dlmd_peer_metrics *pm;
	int rv;

	if (!cm || nodeid == d->d_nodeid)
		return 0;
	rv = lc_node_remove(cm->cm_lc, nodeid);
	if (rv && rv != -ENOENT) {
		log_warn("comms: cannot remove node %u: %s", nodeid, strerror(-rv));
		return rv;
	}
	backlog_forget(cm, nodeid);
	pm = peer(cm, nodeid);
	if (pm && pm->pm_held_since)
		unhold(cm, pm, "dropped: its node left the nodelist");
	free(u32map_del(&cm->cm_peers, nodeid));
	log_info("comms: node %u left the nodelist: its connection state and "
		 "counters are dropped", nodeid);
	comms_rearm(cm);
	return 0;
}

uint64_t dlmd_comms_wait_ms(const struct dlmd *d, uint32_t nodeid)
{
	const struct dlmd_comms *cm = d->d_comms;
	uint64_t now, wait, paused;

	if (!cm || nodeid == d->d_nodeid)
		return 0;
	now = dlmd_now_ms();
	wait = lc_node_wait_ms(cm->cm_lc, nodeid, now);
	/* a new epoch paused while its known life is not connected (a
	 * restart whose leave has not come): a wait too (RESTARTED PEER) */
	paused = lc_node_paused_ms(cm->cm_lc, nodeid, now);
	return paused > wait ? paused : wait;
}

int dlmd_comms_send(struct dlmd *d, uint32_t to, const void *buf, size_t len)
{
	struct dlmd_comms *cm = d->d_comms;
	struct dlmd_peer_metrics *pm;
	struct comms_backlog *b;
	int rv = -ENOBUFS;

	if (!cm)
		return 0;
	/* keep order: nothing overtakes a message already in the backlog */
	for (b = cm->cm_backlog; b; b = b->cb_next)
		if (b->cb_to == to)
			break;
	pm = peer(cm, to);
	if (!b)
		rv = lc_send(cm->cm_lc, to, COMMS_TYPE_ENGINE, 0, buf, len);
	if (rv == 0)
		goto queued;
	if (rv != -ENOBUFS && rv != -ENOMEM) {
		cm->cm_dropped++;
		log_warn("comms: message for node %u dropped: %s", to, strerror(-rv));
		return 0;
	}
	b = malloc(sizeof(*b) + len);
	if (!b)
		return -ENOMEM;	/* the caller holds it (engine.c) */
	b->cb_next = NULL;
	b->cb_to = to;
	b->cb_len = len;
	memcpy(b->cb_buf, buf, len);
	*cm->cm_backlog_tail = b;
	cm->cm_backlog_tail = &b->cb_next;
	cm->cm_nbacklog++;
queued:
	if (pm) {
		pm->pm_msgs_sent++;
		pm->pm_bytes_sent += len;
	}
	return 0;
}

/* Called once dlmd_flush() has handed every queued message over. */
void dlmd_comms_kick(struct dlmd *d)
{
	struct dlmd_comms *cm = d->d_comms;

	if (!cm)
		return;
	/* the engine ran: memory may have been freed (within the back-off) */
	hold_retry(cm, false);
	lc_flush(cm->cm_lc);
	comms_rearm(cm);
}

void dlmd_comms_status(const struct dlmd *d, char *buf, size_t size)
{
	const struct dlmd_comms *cm = d->d_comms;
	struct lc_stats st;

	if (!cm) {
		snprintf(buf, size, "none");
		return;
	}
	lc_get_stats(cm->cm_lc, &st);
	snprintf(buf, size, "sent %llu delivered %llu connects %llu established "
		 "%llu lost %llu peer_restarts %llu backlog %llu crypto %s "
		 "auth_failed %llu held %u not_taken %llu peer_watches %llu "
		 "peer_watch_took %llu peer_yields_long %llu "
		 "keys_out_of_secure_heap %lu",
		 (unsigned long long)st.st_msgs_sent,
		 (unsigned long long)st.st_msgs_delivered,
		 (unsigned long long)st.st_connects,
		 (unsigned long long)st.st_established,
		 (unsigned long long)st.st_conn_lost,
		 (unsigned long long)st.st_peer_restarts,
		 (unsigned long long)cm->cm_nbacklog,
		 cm->cm_d->d_cfg.cf_crypto_none ? "none" : "key",
		 (unsigned long long)st.st_auth_failed, cm->cm_nheld,
		 (unsigned long long)cm->cm_not_taken,
		 (unsigned long long)cm->cm_npeer_watches,
		 (unsigned long long)cm->cm_npeer_took,
		 (unsigned long long)cm->cm_npeer_yields_long,
		 lc_secret_fallbacks());
}

uint64_t dlmd_comms_keys_out_of_secure_heap(void)
{
	return lc_secret_fallbacks();
}

struct each_peer {
	void	(*ep_fn)(void *arg, const struct dlmd_peer_metrics *pm);
	void	*ep_arg;
};

static void each_peer(void *arg, uint32_t key, void *val)
{
	struct each_peer *ep = arg;

	ep->ep_fn(ep->ep_arg, val);
}

void dlmd_comms_each_peer(const struct dlmd *d,
			  void (*fn)(void *arg, const struct dlmd_peer_metrics *pm),
			  void *arg)
{
	struct each_peer ep = { fn, arg };

	if (d->d_comms)
		u32map_each(&d->d_comms->cm_peers, each_peer, &ep);
}
