/*
 * tests/test-lowcomms-loop.c: lowcomms endpoints talking over TCP loopback
 * in one process: ordering between several nodes, batching, simultaneous
 * connect, refusal of strangers and impostors, backpressure, node removal,
 * IPv6.  Every wait is bounded (WAIT_MS).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowcomms/auth.h"
#include "lowcomms/frame.h"
#include "tests/test-lowcomms-harness.h"

#define WAIT_MS		10000
#define LOOPBACK	"127.0.0.1"
#define STRANGER	"127.0.0.2"

static void assert_clean(const struct h_world *w)
{
	for (int i = 0; i < w->w_neps; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		if (w->w_eps[i].ep_lc)
			for (int j = 0; j < w->w_neps; j++)
				if (j != i)
					assert_int_equal(
						lc_queue_len(w->w_eps[i].ep_lc,
							     (uint32_t)j + 1),
						0);
	}
}

/* Three nodes, each sending to both others in interleaved rounds, with
 * payloads of several sizes: every stream arrives whole and in order. */
static void test_ordering(void **state)
{
	struct h_world *w;

	(void)state;
	w = h_test_ordering(LOOPBACK, NULL, WAIT_MS);
	assert_clean(w);
	h_world_free(w);
}

/* Many small messages queued at once go out in few large writes. */
static void test_batching(void **state)
{
	enum { COUNT = 20000, MAX_WRITES = COUNT / 100 };
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct lc_stats st;

	(void)state;
	/* Connect first, so the count below is about data only. */
	assert_int_equal(h_send(w, 0, 1, 1), 1);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	uint64_t writes0 = st.st_writes;

	assert_int_equal(h_send(w, 0, 1, COUNT), COUNT);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), COUNT);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	printf("batching: %d messages in %llu writes\n", COUNT,
	       (unsigned long long)(st.st_writes - writes0));
	assert_true(st.st_writes - writes0 <= MAX_WRITES);
	assert_int_equal(st.st_frames_resent, 0);
	assert_clean(w);
	h_world_free(w);
}

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);

static unsigned long malloc_calls;	/* through lowcomms and the harness */

void *__wrap_malloc(size_t n)
{
	malloc_calls++;
	return __real_malloc(n);
}

/* Queuing a message allocates nothing of its own: frames go back to back
 * into the node's queue chunks, which are reused once acknowledged.  Then
 * the same with messages of the largest size (each larger than a chunk)
 * between small ones, around a reset that makes the queue go out again:
 * every message arrives once and in order. */
static void test_no_malloc_per_message(void **state)
{
	enum { COUNT = 20000, BIG = 40 };
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	unsigned long calls0;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 1), 1);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	for (int round = 0; round < 3; round++) {
		calls0 = malloc_calls;
		assert_int_equal(h_send(w, 0, 1, COUNT), COUNT);
		printf("no malloc: %d messages queued with %lu mallocs\n",
		       COUNT, malloc_calls - calls0);
		assert_true(malloc_calls - calls0 <= COUNT / 1000);
		assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	}
	for (int i = 0; i < BIG; i++) {
		w->w_eps[0].ep_msg_extra = i % 2 ?
			LC_DEFAULT_MAX_MSG - H_MSG_HDR : (unsigned int)i * 97;
		assert_int_equal(h_send(w, 0, 1, 3), 3);
		if (i == BIG / 2) {
			h_poll(w, 0);
			assert_int_equal(lc_node_reset(w->w_eps[0].ep_lc, 2), 0);
		}
		h_poll(w, 0);
	}
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(w->w_eps[1].ep_rx_total, 1 + 3 * COUNT + 3 * BIG);
	assert_clean(w);
	h_world_free(w);
}

static bool ep1_received(struct h_world *w, void *arg)
{
	return w->w_eps[1].ep_rx_total >= *(const uint64_t *)arg;
}

static bool ep0_received(struct h_world *w, void *arg)
{
	return w->w_eps[0].ep_rx_total >= *(const uint64_t *)arg;
}

/* Acks wait (for a minute: no timer of this test's span fires) for DATA to
 * carry them; only the frame and byte bounds send them sooner. */
static void slow_ack_config(struct lc_config *cfg, uint32_t nodeid,
			    const char *addr)
{
	h_config(cfg, nodeid, addr);
	cfg->cfg_ack_delay_ms = 60000;
}

/* Fire node idx's pending ack timer: lc_timer() at lc_next_timeout(). */
static void fire_ack_timer(struct h_world *w, int idx)
{
	uint64_t at = lc_next_timeout(w->w_eps[idx].ep_lc);

	assert_true(at != UINT64_MAX);
	lc_timer(w->w_eps[idx].ep_lc, at);
}

/* A request/reply ping-pong as dlmd does them (the remote lock pair:
 * request; node 2 answers after the event that delivered it, as its engine
 * replies from dlmd_flush, then flushes; the requester thinks; next
 * request).  The ack for the request rides on the reply, and the
 * requester's ack for the reply rides on its next request: one write per
 * message and no lone ACK frame on either side (before, the replier once
 * wrote an ACK and then the reply, and until this change the requester
 * wrote a lone ACK after every reply, and the replier woke for it).  Every message is one write with no POLLOUT round: nobody calls
 * ops_fd_mod (before, each lc_send asked for POLLOUT and each flush
 * dropped it again: two epoll_ctl calls per message in dlmd). */
static void test_pingpong_no_lone_ack(void **state)
{
	enum { ROUNDS = 200, THINK = 3 };
	struct h_world *w = h_world_new(2, LOOPBACK, slow_ack_config);
	struct lc_stats st0, st1;
	uint64_t want = 0, writes0[2] = { 0 }, acks0[2] = { 0 };
	unsigned long mods0[2] = { 0 };

	(void)state;
	for (int i = 0; i <= ROUNDS; i++) {
		if (i == 1) {
			/* after one warm-up round (the connection) */
			lc_get_stats(w->w_eps[0].ep_lc, &st0);
			lc_get_stats(w->w_eps[1].ep_lc, &st1);
			writes0[0] = st0.st_writes;
			writes0[1] = st1.st_writes;
			acks0[0] = st0.st_acks_sent;
			acks0[1] = st1.st_acks_sent;
			mods0[0] = w->w_eps[0].ep_fd_mods;
			mods0[1] = w->w_eps[1].ep_fd_mods;
		}
		want++;
		assert_int_equal(h_send(w, 0, 1, 1), 1);
		lc_flush(w->w_eps[0].ep_lc);
		assert_true(h_run_until(w, ep1_received, &want, WAIT_MS));
		assert_int_equal(h_send(w, 1, 0, 1), 1);
		lc_flush(w->w_eps[1].ep_lc);
		assert_true(h_run_until(w, ep0_received, &want, WAIT_MS));
		/* The requester's client thinks: loop turns pass. */
		for (int t = 0; t < THINK; t++)
			h_poll(w, 0);
	}
	lc_get_stats(w->w_eps[0].ep_lc, &st0);
	lc_get_stats(w->w_eps[1].ep_lc, &st1);
	printf("ping-pong: %d rounds; requester %llu writes, %llu lone acks, "
	       "%lu fd_mod; replier %llu writes, %llu lone acks, %lu fd_mod\n",
	       ROUNDS, (unsigned long long)(st0.st_writes - writes0[0]),
	       (unsigned long long)(st0.st_acks_sent - acks0[0]),
	       w->w_eps[0].ep_fd_mods - mods0[0],
	       (unsigned long long)(st1.st_writes - writes0[1]),
	       (unsigned long long)(st1.st_acks_sent - acks0[1]),
	       w->w_eps[1].ep_fd_mods - mods0[1]);
	assert_int_equal(st0.st_acks_sent - acks0[0], 0);
	assert_int_equal(st1.st_acks_sent - acks0[1], 0);
	assert_int_equal(st0.st_writes - writes0[0], ROUNDS);
	assert_int_equal(st1.st_writes - writes0[1], ROUNDS);
	assert_int_equal(w->w_eps[0].ep_fd_mods - mods0[0], 0);
	assert_int_equal(w->w_eps[1].ep_fd_mods - mods0[1], 0);
	/* The last reply's ack is owed and waits for its timer; when that
	 * fires the ack goes alone and the replier's queue empties. */
	assert_int_equal(lc_queue_len(w->w_eps[1].ep_lc, 1), 1);
	fire_ack_timer(w, 0);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	lc_get_stats(w->w_eps[0].ep_lc, &st0);
	assert_int_equal(st0.st_acks_sent - acks0[0], 1);
	assert_clean(w);
	h_world_free(w);
}

/* Queue bounds of 16 frames and 16 KiB: a receiver acks at once when it
 * holds 4 frames or 4 KiB unacknowledged (a quarter of the bounds). */
static void small_queue_config(struct lc_config *cfg, uint32_t nodeid,
			       const char *addr)
{
	slow_ack_config(cfg, nodeid, addr);
	cfg->cfg_queue_frames = 16;
	cfg->cfg_queue_bytes = 16 * 1024;
}

static bool ep0_queue_empty(struct h_world *w, void *arg)
{
	(void)arg;
	return lc_queue_len(w->w_eps[0].ep_lc, 2) == 0;
}

static bool ep0_queue_short(struct h_world *w, void *arg)
{
	(void)arg;
	return lc_queue_len(w->w_eps[0].ep_lc, 2) < 4;
}

/* A peer that only receives never stalls its sender: its ack goes alone
 * when the delay is over, or at once when it holds a quarter of the
 * queue bounds (in frames or in bytes) for it, so the sender's queue
 * always drains, however long the delay. */
static void test_receive_only_peer_acks(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, small_queue_config);
	uint64_t want = 0;
	struct lc_stats st;

	(void)state;
	/* Under the bounds: delivered, the ack waits for its timer. */
	want += 3;
	assert_int_equal(h_send(w, 0, 1, 3), 3);
	assert_true(h_run_until(w, ep1_received, &want, WAIT_MS));
	for (int t = 0; t < 5; t++)
		h_poll(w, 0);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), 3);
	lc_get_stats(w->w_eps[1].ep_lc, &st);
	assert_int_equal(st.st_acks_sent, 0);
	fire_ack_timer(w, 1);
	assert_true(h_run_until(w, ep0_queue_empty, NULL, WAIT_MS));
	lc_get_stats(w->w_eps[1].ep_lc, &st);
	assert_int_equal(st.st_acks_sent, 1);
	/* The frame bound: with no timer (the delay is a minute), the queue
	 * is filled to its bound again and again; it drains to fewer than
	 * 4 frames each time, so lc_send never meets -ENOBUFS. */
	for (int round = 0; round < 10; round++) {
		long room = 16 - lc_queue_len(w->w_eps[0].ep_lc, 2);

		want += (uint64_t)room;
		assert_int_equal(h_send(w, 0, 1, room), room);
		assert_true(h_run_until(w, ep1_received, &want, WAIT_MS));
		assert_true(h_run_until(w, ep0_queue_short, NULL, WAIT_MS));
	}
	/* The byte bound: one message of 5000 bytes is acked at once. */
	w->w_eps[0].ep_msg_extra = 5000;
	want++;
	assert_int_equal(h_send(w, 0, 1, 1), 1);
	assert_true(h_run_until(w, ep0_queue_empty, NULL, WAIT_MS));
	assert_true(h_run_until(w, ep1_received, &want, WAIT_MS));
	assert_clean(w);
	h_world_free(w);
}

/* Both sides send before either has polled: both connect, and they settle
 * on one connection (the one node 1 initiated). */
static void test_simultaneous_connect(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct sockaddr_storage a_local, b_peer;
	socklen_t alen = sizeof(a_local), blen = sizeof(b_peer);
	struct lc_stats s0, s1;
	int fa, fb;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_int_equal(h_send(w, 1, 0, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	/* Let any loser connection finish closing. */
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	fa = lc_node_fd(w->w_eps[0].ep_lc, 2);
	fb = lc_node_fd(w->w_eps[1].ep_lc, 1);
	assert_true(fa >= 0 && fb >= 0);
	/* The same TCP connection seen from both ends. */
	assert_int_equal(getsockname(fa, (struct sockaddr *)&a_local, &alen), 0);
	assert_int_equal(getpeername(fb, (struct sockaddr *)&b_peer, &blen), 0);
	assert_int_equal(alen, blen);
	assert_memory_equal(&a_local, &b_peer, alen);
	lc_get_stats(w->w_eps[0].ep_lc, &s0);
	lc_get_stats(w->w_eps[1].ep_lc, &s1);
	/* A loser may retry once or twice before the winner is adopted. */
	assert_true(s0.st_connects >= 1 && s0.st_connects <= 3);
	assert_true(s1.st_connects >= 1 && s1.st_connects <= 3);
	/* ops_established named the peer once per handshake completed */
	assert_true(w->w_eps[0].ep_established[2] >= 1);
	assert_int_equal(w->w_eps[0].ep_established[2], s0.st_established);
	assert_int_equal(w->w_eps[1].ep_established[1], s1.st_established);
	/* More traffic flows over the one connection. */
	assert_int_equal(h_send(w, 0, 1, 500), 500);
	assert_int_equal(h_send(w, 1, 0, 500), 500);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(lc_node_fd(w->w_eps[0].ep_lc, 2), fa);
	assert_clean(w);
	h_world_free(w);
}

static bool refused_once(struct h_world *w, void *arg)
{
	(void)arg;
	return w->w_eps[0].ep_refused_logs > 0;
}

/* Wait (polling the world) until fd reads EOF or a reset. */
static bool closed_by_peer(struct h_world *w, int fd)
{
	char buf[256];

	for (int i = 0; i < 200; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		h_poll(w, 5);
	}
	return false;
}

static int connect_from(const char *src, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &sa.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	sa.sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, LOOPBACK, &sa.sin_addr), 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* ---- a scripted peer: a raw socket speaking the protocol by hand ---- */

#define SCRIPT_EPOCH	0x5eed0001u
#define SCRIPT_EPOCH2	0x5eed0002u

static void script_send(int fd, uint8_t kind, uint32_t seq, uint32_t ack,
			uint64_t counter, uint32_t epoch, uint32_t known)
{
	unsigned char buf[LC_HELLO_LEN + H_MSG_HDR];
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = LC_FRAME_VERSION,
		.fh_kind = kind, .fh_sender = 2, .fh_target = 1,
		.fh_seq = seq, .fh_ack = ack,
	};
	size_t len = LC_FRAME_HDR_LEN;

	if (kind == LC_KIND_HELLO) {
		dlm_put_le32(buf + LC_FRAME_HDR_LEN, epoch);
		dlm_put_le32(buf + LC_FRAME_HDR_LEN + 4, known);
		len = LC_HELLO_LEN;
	} else if (kind == LC_KIND_DATA) {
		/* What the harness's receiver expects for this counter. */
		h.fh_type = (uint16_t)(counter % 7 + 1);
		h.fh_lsid = (uint32_t)(counter ^ 2);
		for (int i = 0; i < H_MSG_HDR; i++)
			buf[LC_FRAME_HDR_LEN + i] = (unsigned char)(counter >> (8 * i));
		len = LC_FRAME_HDR_LEN + H_MSG_HDR;
	}
	h.fh_length = (uint32_t)len;
	lc_frame_encode(buf, &h);
	assert_int_equal(send(fd, buf, len, 0), (ssize_t)len);
}

/* Read one frame header (and skip its payload), polling the world. */
static bool script_recv(struct h_world *w, int fd, struct lc_frame_hdr *h,
			unsigned char *payload)
{
	unsigned char buf[LC_HELLO_LEN];
	size_t got = 0, want = LC_FRAME_HDR_LEN;

	for (int i = 0; i < 400 && got < want; i++) {
		ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);

		if (n > 0) {
			got += (size_t)n;
			if (got == LC_FRAME_HDR_LEN) {
				lc_frame_decode(buf, h);
				if (h->fh_length > sizeof(buf))
					return false;
				want = h->fh_length;
			}
			continue;
		}
		if (n == 0)
			return false;
		h_poll(w, 5);
	}
	if (got < want)
		return false;
	if (payload)
		memcpy(payload, buf + LC_FRAME_HDR_LEN, want - LC_FRAME_HDR_LEN);
	return true;
}

static bool delivered(struct h_world *w, void *arg)
{
	return w->w_eps[0].ep_rx_total >= *(uint64_t *)arg;
}

/* Handshake as node 2; returns the fd. */
static int script_hello(struct h_world *w, uint32_t base, uint32_t epoch,
			uint32_t *their_epoch)
{
	unsigned char payload[LC_HELLO_PAYLOAD_LEN];
	struct lc_frame_hdr h;
	int fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);

	script_send(fd, LC_KIND_HELLO, base, 0, 0, epoch, *their_epoch);
	assert_true(script_recv(w, fd, &h, payload));
	assert_int_equal(h.fh_kind, LC_KIND_HELLO);
	assert_int_equal(h.fh_sender, 1);
	assert_int_equal(h.fh_target, 2);
	/* Node 1 echoes our epoch: it now knows us. */
	assert_int_equal(dlm_get_le32(payload + 4), epoch);
	assert_true(dlm_get_le32(payload) != 0);
	*their_epoch = dlm_get_le32(payload);
	return fd;
}

/*
 * The receive rules, driven frame by frame: duplicates are dropped, a gap
 * or an ack of something never sent closes the connection, a reconnect
 * with the same epoch resumes, one with a new epoch is paused until the
 * application renews the node and then starts over at the peer's send
 * base, and a same-epoch peer that skipped frames is refused.
 */
static void test_scripted_peer(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage ss;
	struct lc_frame_hdr h;
	struct lc_stats st;
	uint32_t their_epoch = 0;
	uint64_t want;
	int fd;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	/* Raw frames from the script: plaintext. */
	w->w_config = h_plain_config;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	/* Node 2 lives at 127.0.0.1 (its port does not matter here). */
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);

	fd = script_hello(w, 1, SCRIPT_EPOCH, &their_epoch);
	script_send(fd, LC_KIND_DATA, 1, 0, 0, 0, 0);
	script_send(fd, LC_KIND_DATA, 2, 0, 1, 0, 0);
	script_send(fd, LC_KIND_DATA, 2, 0, 1, 0, 0);
	script_send(fd, LC_KIND_DATA, 1, 0, 0, 0, 0);
	script_send(fd, LC_KIND_DATA, 3, 0, 2, 0, 0);
	want = 3;
	assert_true(h_run_until(w, delivered, &want, WAIT_MS));
	/* Node 1 acknowledges up to 3, in an ACK frame (it has no data). */
	do {
		assert_true(script_recv(w, fd, &h, NULL));
		assert_int_equal(h.fh_kind, LC_KIND_ACK);
	} while (h.fh_ack != 3);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_dups_dropped, 2);

	/* A gap: 5 after 3.  The caller hears of it (ops_frames_lost). */
	assert_int_equal(w->w_eps[0].ep_frames_lost, 0);
	script_send(fd, LC_KIND_DATA, 5, 0, 4, 0, 0);
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_int_equal(w->w_eps[0].ep_frames_lost, 1);
	assert_int_equal(w->w_eps[0].ep_lost_from, 2);
	assert_int_equal(w->w_eps[0].ep_lost_expected, 4);
	assert_int_equal(w->w_eps[0].ep_lost_got, 5);

	/* Same epoch: resume at 4. */
	fd = script_hello(w, 4, SCRIPT_EPOCH, &their_epoch);
	script_send(fd, LC_KIND_DATA, 4, 0, 3, 0, 0);
	want = 4;
	assert_true(h_run_until(w, delivered, &want, WAIT_MS));
	/* An ack for a frame node 1 never sent. */
	script_send(fd, LC_KIND_ACK, 0, 1000, 0, 0, 0);
	assert_true(closed_by_peer(w, fd));
	close(fd);

	/* New epoch (node 2 restarted): paused, the connection closed
	 * with no HELLO back, until node 1's application confirms node 2's
	 * previous life gone (PEER RESTARTED); node 1 then starts over at
	 * 100, under the epoch it had (the paused life may know it). */
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	script_send(fd, LC_KIND_HELLO, 100, 0, 0, SCRIPT_EPOCH2, their_epoch);
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_true(lc_node_paused(w->w_eps[0].ep_lc, 2));
	assert_int_equal(w->w_eps[0].ep_rx_total, 4);
	assert_int_equal(lc_node_renew(w->w_eps[0].ep_lc, 2), 0);
	assert_false(lc_node_paused(w->w_eps[0].ep_lc, 2));
	fd = script_hello(w, 100, SCRIPT_EPOCH2, &their_epoch);
	script_send(fd, LC_KIND_DATA, 100, 0, 4, 0, 0);
	want = 5;
	assert_true(h_run_until(w, delivered, &want, WAIT_MS));
	close(fd);

	/* Same epoch but the send base jumped past what node 1 has: the
	 * caller hears of it. */
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	script_send(fd, LC_KIND_HELLO, 200, 0, 0, SCRIPT_EPOCH2, their_epoch);
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_int_equal(w->w_eps[0].ep_frames_lost, 2);
	assert_int_equal(w->w_eps[0].ep_lost_from, 2);
	assert_int_equal(w->w_eps[0].ep_lost_expected, 101);
	assert_int_equal(w->w_eps[0].ep_lost_got, 200);

	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_peer_restarts, 1);
	assert_int_equal(st.st_rejected, 3);
	assert_int_equal(w->w_eps[0].ep_rx_total, 5);
	assert_int_equal(w->w_eps[0].ep_rx_errors, 0);
	h_world_free(w);
}

/* A listening socket for node 2's address; returns the fd, port in *port. */
static int script_listen(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, LOOPBACK, &sa.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Accept node 1's next connect to node 2's address (polling the world);
 * -1 if none came. */
static int script_accept(struct h_world *w, int lfd)
{
	for (int i = 0; i < 800; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);

		if (fd >= 0)
			return fd;
		h_poll(w, 5);
	}
	return -1;
}

/* Node 1 connects to node 2's address, where a new life of node 2 (the
 * script, with epoch) listens: it reads node 1's HELLO (*seen_epoch,
 * *seen_seq), answers with its own and is paused (node 1 closes). */
static void script_new_life_reads_hello(struct h_world *w, int lfd,
					uint32_t epoch, uint32_t *seen_epoch,
					uint32_t *seen_seq, bool *stale)
{
	char c;
	unsigned char payload[LC_HELLO_PAYLOAD_LEN];
	struct lc_frame_hdr h;
	int fd = script_accept(w, lfd);

	assert_true(fd >= 0);
	assert_true(script_recv(w, fd, &h, payload));
	assert_int_equal(h.fh_kind, LC_KIND_HELLO);
	*seen_epoch = dlm_get_le32(payload);
	*seen_seq = h.fh_seq;
	if (stale) {
		ssize_t rv = recv(fd, &c, 1, MSG_DONTWAIT);

		*stale = rv == 0 || (rv < 0 && errno == ECONNRESET);
	}
	if (epoch) {
		script_send(fd, LC_KIND_HELLO, 1, 0, 0, epoch, *seen_epoch);
		assert_true(closed_by_peer(w, fd));
	}
	close(fd);
}

/*
 * F4: node 2's life A dies with frames of node 1 queued for it; node 1's
 * reconnects deliver its HELLO to life B, then to life C, which it both
 * pauses.  Then node 1's membership brings A's leave, then B's (renew,
 * renew).  C still lives, knows node 1's epoch from that HELLO and has
 * seen no departure of node 1: node 1's next HELLO must carry the same
 * epoch and send base, or C pauses node 1 until a removal.
 */
static void test_renew_twice_keeps_epoch(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage ss;
	uint32_t their_epoch = 0, e_b, s_b, e_c, s_c, e_next = 0, s_next = 0;
	unsigned char msg[8] = { 0 };
	struct lc_ctx *lc;
	int fd, lfd, port;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	w->w_config = h_plain_config;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	lc = w->w_eps[0].ep_lc;
	lfd = script_listen(&port);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)port, &ss), 0);
	assert_int_equal(lc_node_add(lc, 2, &ss, 1), 0);

	/* life A: known, then gone with frames queued for it */
	fd = script_hello(w, 1, SCRIPT_EPOCH, &their_epoch);
	close(fd);
	for (int i = 0; i < 3; i++)
		assert_int_equal(lc_send(lc, 2, 1, 0, msg, sizeof(msg)), 0);
	/* lives B and C read node 1's HELLO and are paused */
	script_new_life_reads_hello(w, lfd, SCRIPT_EPOCH2, &e_b, &s_b,
				    NULL);
	assert_true(lc_node_paused(lc, 2));
	script_new_life_reads_hello(w, lfd, SCRIPT_EPOCH2 + 1, &e_c, &s_c,
				    NULL);
	assert_true(lc_node_paused(lc, 2));
	assert_int_equal(e_c, e_b);
	assert_int_equal(s_c, s_b);
	/* A's leave, then B's */
	assert_int_equal(lc_node_renew(lc, 2), 0);
	assert_false(lc_node_paused(lc, 2));
	assert_int_equal(lc_node_renew(lc, 2), 0);
	/* something for C: node 1 connects; C sees what it expects.  (A
	 * connect made while paused may still wait in the backlog: the
	 * renew closed it, so it ends right after its HELLO; skip it.) */
	assert_int_equal(lc_send(lc, 2, 1, 0, msg, sizeof(msg)), 0);
	for (int i = 0; i < 5; i++) {
		bool stale;

		script_new_life_reads_hello(w, lfd, 0, &e_next, &s_next,
					    &stale);
		if (!stale)
			break;
	}
	assert_int_equal(e_next, e_c);
	assert_int_equal(s_next, s_c);
	close(lfd);
	h_world_free(w);
}

/* A connection from 127.0.0.2, which no node has, is refused and logged. */
static void test_refuse_unknown_address(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct lc_stats st;
	int fd;

	(void)state;
	fd = connect_from(STRANGER, w->w_eps[0].ep_port);
	assert_true(h_run_until(w, refused_once, NULL, WAIT_MS));
	assert_true(closed_by_peer(w, fd));
	close(fd);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_refused, 1);
	assert_int_equal(st.st_accepts, 0);
	/* The cluster still works. */
	assert_int_equal(h_send(w, 1, 0, 10), 10);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_clean(w);
	h_world_free(w);
}

/* From a known address, but the HELLO names a node that is not ours, or
 * the bytes are not a frame at all: the connection is closed. */
static void test_reject_impostor(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	unsigned char hello[LC_HELLO_LEN];
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = LC_FRAME_VERSION,
		.fh_kind = LC_KIND_HELLO, .fh_length = LC_HELLO_LEN,
		.fh_sender = 9, .fh_target = 1, .fh_seq = 1,
	};
	static const char garbage[] = "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxx";
	struct lc_stats st;
	int fd;

	(void)state;
	lc_frame_encode(hello, &h);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN, 1234);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN + 4, 0);

	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_int_equal(send(fd, hello, sizeof(hello), 0), sizeof(hello));
	assert_true(closed_by_peer(w, fd));
	close(fd);

	/* Claims node 2 but says it is for node 5. */
	h.fh_sender = 2;
	h.fh_target = 5;
	lc_frame_encode(hello, &h);
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_int_equal(send(fd, hello, sizeof(hello), 0), sizeof(hello));
	assert_true(closed_by_peer(w, fd));
	close(fd);

	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_int_equal(send(fd, garbage, sizeof(garbage), 0),
			 sizeof(garbage));
	assert_true(closed_by_peer(w, fd));
	close(fd);

	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_accepts, 3);
	assert_int_equal(st.st_rejected, 3);
	assert_int_equal(st.st_established, 0);
	assert_int_equal(w->w_eps[0].ep_rx_total, 0);
	/* Node 2, the real one, still gets through. */
	assert_int_equal(h_send(w, 1, 0, 10), 10);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_clean(w);
	h_world_free(w);
}

/* A peer that is down: the queue fills to its limit, lc_send says
 * -ENOBUFS; removing the node drops the queue; the API's error codes. */
static void test_backpressure_and_remove(void **state)
{
	enum { LIMIT = 100 };
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage ss;
	struct lc_config cfg;
	unsigned char big[LC_DEFAULT_MAX_MSG + 1] = { 0 };
	int dead_port;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, LOOPBACK);
	cfg.cfg_queue_frames = LIMIT;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	/* A port nobody listens on: bind one and close it. */
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	dead_port = w->w_eps[1].ep_port;
	h_ep_stop(w, 1);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)dead_port, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), -EEXIST);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 1, &ss, 1), -EINVAL);

	assert_int_equal(h_send(w, 0, 1, LIMIT + 10), LIMIT);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), LIMIT);
	for (int i = 0; i < 30; i++)
		h_poll(w, 5);
	assert_int_equal(lc_send(w->w_eps[0].ep_lc, 2, 1, 0, "x", 1),
			 -ENOBUFS);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), LIMIT);

	assert_int_equal(lc_send(w->w_eps[0].ep_lc, 3, 1, 0, "x", 1), -ENOENT);
	assert_int_equal(lc_send(w->w_eps[0].ep_lc, 1, 1, 0, "x", 1), -EINVAL);
	assert_int_equal(lc_node_remove(w->w_eps[0].ep_lc, 2), 0);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), -ENOENT);
	assert_int_equal(lc_node_remove(w->w_eps[0].ep_lc, 2), -ENOENT);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	assert_int_equal(lc_send(w->w_eps[0].ep_lc, 2, 1, 0, big,
				 sizeof(big)), -EMSGSIZE);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), 0);
	h_world_free(w);
}

/* lc_node_paused(ep idx, node id) */
struct paused_arg {
	int pa_ep;
	uint32_t pa_node;
};

static bool paused(struct h_world *w, void *arg)
{
	const struct paused_arg *pa = arg;

	return lc_node_paused(w->w_eps[pa->pa_ep].ep_lc, pa->pa_node);
}

/* Node 1 removes node 2 and adds it back (a membership change): node 2
 * pauses node 1's new epoch until its own membership says so too (here:
 * lc_node_renew, as dlmd does at the daemon's leave), and nothing of
 * node 1 is delivered meanwhile; then both directions carry on. */
static void test_remove_and_readd(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct paused_arg pa = { 1, 1 };
	struct sockaddr_storage ss;
	struct lc_stats st;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 300), 300);
	assert_int_equal(h_send(w, 1, 0, 300), 300);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));

	assert_int_equal(lc_node_remove(w->w_eps[0].ep_lc, 2), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[1].ep_port,
				       &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);

	assert_int_equal(h_send(w, 0, 1, 300), 300);
	assert_true(h_run_until(w, paused, &pa, WAIT_MS));
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	assert_int_equal(w->w_eps[1].ep_rx_total, 300);
	assert_int_equal(lc_node_renew(w->w_eps[1].ep_lc, 1), 0);
	assert_int_equal(h_send(w, 1, 0, 300), 300);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	lc_get_stats(w->w_eps[1].ep_lc, &st);
	assert_int_equal(st.st_peer_restarts, 1);
	assert_int_equal(st.st_stale_dropped, 0);
	assert_clean(w);
	h_world_free(w);
}

/* Node 1 is told node 2 moved (dlmd: corosync's nodelist reloaded) to an
 * address where nobody listens: its connection closes, what it sends
 * meanwhile waits; told node 2 is back at its real address, it connects
 * there and everything arrives, once and in order (queue and sequence
 * kept across both changes).  The same addresses again change nothing;
 * an unknown node or no address is refused. */
static void test_set_addrs(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct lc_ctx *lc = w->w_eps[0].ep_lc;
	struct sockaddr_storage real, moved;
	uint64_t want = 300;
	struct lc_stats st;
	int lfd, port;

	(void)state;
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[1].ep_port,
				       &real), 0);
	/* a port bound and closed: nobody listens there */
	lfd = script_listen(&port);
	close(lfd);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)port, &moved), 0);

	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_int_equal(h_send(w, 1, 0, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(lc_node_set_addrs(lc, 2, &real, 1), 0);
	assert_int_equal(lc_node_set_addrs(lc, 3, &real, 1), -ENOENT);
	assert_int_equal(lc_node_set_addrs(lc, 2, &real, 0), -EINVAL);

	assert_int_equal(lc_node_set_addrs(lc, 2, &moved, 1), 1);
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	assert_int_equal(w->w_eps[1].ep_rx_total, 100);
	assert_int_equal(lc_node_set_addrs(lc, 2, &real, 1), 1);
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_true(h_run_until(w, ep1_received, &want, WAIT_MS));
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(w->w_eps[1].ep_rx_total, want);
	lc_get_stats(w->w_eps[1].ep_lc, &st);
	assert_int_equal(st.st_peer_restarts, 0);
	assert_clean(w);
	h_world_free(w);
}

/* Node 2 renews node 1 in place (dlmd: node 1's daemon left) while it
 * holds node 1: no allocation (dlmd does it short of memory: a remove
 * and an add could fail at the add) and the hold goes.  Node 1 pauses
 * node 2's new epoch until it renews node 2 as well (its membership
 * says the same), which drops the 10 frames it had in flight for node
 * 2's previous life; then both directions carry on. */
static void test_renew(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct h_ep *rx = &w->w_eps[1];
	struct paused_arg pa = { 0, 2 };
	struct lc_stats st;
	unsigned long calls0;
	uint64_t end = h_now_ms() + WAIT_MS;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 300), 300);
	assert_int_equal(h_send(w, 1, 0, 300), 300);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	rx->ep_refuse_at = 0;
	rx->ep_refuse_left = 1;
	assert_int_equal(h_send(w, 0, 1, 10), 10);
	while (!lc_node_held(rx->ep_lc, 1) && h_now_ms() < end)
		h_poll(w, 5);
	assert_true(lc_node_held(rx->ep_lc, 1));
	calls0 = malloc_calls;
	assert_int_equal(lc_node_renew(rx->ep_lc, 1), 0);
	assert_int_equal(malloc_calls, calls0);
	assert_false(lc_node_held(rx->ep_lc, 1));
	assert_int_equal(lc_queue_len(rx->ep_lc, 1), 0);
	assert_int_equal(lc_node_renew(rx->ep_lc, 7), -ENOENT);

	assert_true(h_run_until(w, paused, &pa, WAIT_MS));
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), 10);
	assert_int_equal(lc_node_renew(w->w_eps[0].ep_lc, 2), 0);
	assert_false(lc_node_paused(w->w_eps[0].ep_lc, 2));
	assert_int_equal(h_send(w, 0, 1, 300), 300);
	assert_int_equal(h_send(w, 1, 0, 300), 300);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(rx->ep_rx_total, 300 + 300);	/* none twice */
	assert_int_equal(rx->ep_rx_lost, 10);		/* one jump */
	assert_int_equal(rx->ep_rx_errors, 1);
	assert_int_equal(rx->ep_rx_dups, 0);
	assert_int_equal(w->w_eps[0].ep_rx_total, 300 + 300);
	assert_int_equal(w->w_eps[0].ep_rx_errors, 0);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_int_equal(st.st_peer_restarts, 1);
	assert_int_equal(st.st_stale_dropped, 10);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_frames_lost, 0);
		assert_int_equal(lc_queue_len(w->w_eps[i].ep_lc,
					      (uint32_t)(2 - i)), 0);
	}
	h_world_free(w);
}

/* Node 1 paused node 2, or the new context got something. */
static bool paused_or_stale(struct h_world *w, void *unused)
{
	(void)unused;
	return lc_node_paused(w->w_eps[0].ep_lc, 2) ||
	       w->w_eps[1].ep_rx_total > 100 || w->w_eps[0].ep_rx_total > 100;
}

/*
 * Node 2's context is destroyed and made again (its daemon restarted)
 * while node 1 has 50 frames queued for it, before node 1's application
 * hears of it (dlmd: before the old daemon's CPG leave): the new context
 * must receive none of them, whichever side connects first, and node 1
 * takes nothing of the new one either, until its application confirms
 * the restart (lc_node_renew: lowcomms.c, PEER RESTARTED).  Then both
 * directions carry on with no gap reported: the new context got the 20
 * sent after the confirmation, none of the 50.
 */
static void test_restarted_peer_gets_no_stale(void **state)
{
	(void)state;
	for (int first = 0; first < 2; first++) {
		struct h_world *w = h_world_new(2, LOOPBACK, NULL);
		struct h_ep *rx = &w->w_eps[1];
		struct lc_stats st;

		assert_int_equal(h_send(w, 0, 1, 100), 100);
		assert_int_equal(h_send(w, 1, 0, 100), 100);
		assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
		assert_int_equal(rx->ep_rx_total, 100);

		/* queued, not yet written: the old context never reads them */
		assert_int_equal(h_send(w, 0, 1, 50), 50);
		assert_int_equal(h_ep_recreate(w, 1), 0);
		/* first == 1: the new context has something to say and
		 * connects too (maybe first) */
		if (first)
			assert_int_equal(h_send(w, 1, 0, 5), 5);
		assert_true(h_run_until(w, paused_or_stale, NULL, WAIT_MS));
		/* a while paused: node 1 keeps trying the address, and
		 * nothing crosses either way */
		for (int i = 0; i < 40; i++)
			h_poll(w, 5);
		assert_int_equal(rx->ep_rx_total, 100);
		assert_int_equal(w->w_eps[0].ep_rx_total, 100);
		assert_true(lc_node_paused(w->w_eps[0].ep_lc, 2));
		assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 2), 50);
		assert_true(lc_node_paused_ms(w->w_eps[0].ep_lc, 2,
					      h_now_ms()) > 0);

		/* the membership confirms: node 2's old daemon left */
		assert_int_equal(lc_node_renew(w->w_eps[0].ep_lc, 2), 0);
		assert_int_equal(h_send(w, 0, 1, 20), 20);
		assert_int_equal(h_send(w, 1, 0, 20), 20);
		assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
		assert_int_equal(rx->ep_rx_total, 120);
		assert_int_equal(rx->ep_rx_lost, 50);
		assert_int_equal(rx->ep_rx_dups, 0);
		assert_int_equal(rx->ep_rx_errors, 1);
		assert_int_equal(w->w_eps[0].ep_rx_total, 100 + 20 + 5 * first);
		assert_int_equal(w->w_eps[0].ep_rx_errors, 0);
		for (int i = 0; i < 2; i++)
			assert_int_equal(w->w_eps[i].ep_frames_lost, 0);
		lc_get_stats(w->w_eps[0].ep_lc, &st);
		assert_int_equal(st.st_peer_restarts, 1);
		assert_int_equal(st.st_stale_dropped, 50);
		h_world_free(w);
	}
}

/* Node 2 has every counter node 1 sent it, and node 1 every one of node
 * 2's (the impostor's are not counted there: they would be errors). */
static bool real_pair_done(struct h_world *w, void *unused)
{
	(void)unused;
	return h_pair_done(w, 0, 1) && h_pair_done(w, 1, 0) &&
	       lc_queue_len(w->w_eps[0].ep_lc, 2) == 0 &&
	       lc_queue_len(w->w_eps[1].ep_lc, 1) == 0;
}

/*
 * Someone with the cluster key claims node 2 (endpoint 3: a context of
 * node id 2 on node 2's address, another port) while the real node 2
 * lives: node 1 pauses that epoch and takes nothing from it.  Node 1's
 * connection to the real node 2 is then reset with 50 frames queued
 * each way: node 1 tries node 2's address again though paused, hears
 * the known epoch, lifts the pause and resends: every frame of both
 * real nodes arrives exactly once and none of the impostor's.  (Before
 * the pause, the impostor's HELLO replaced the real connection, took
 * node 1's queue and acked it away: frames lost between two live
 * nodes, test-cluster-impostor step 7's stall.)
 */
static void test_new_epoch_then_known_back(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct h_ep *imp = &w->w_eps[2];
	struct paused_arg pa = { 0, 2 };
	struct sockaddr_storage ss;
	struct lc_config cfg;
	struct lc_stats st;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_int_equal(h_send(w, 1, 0, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));

	w->w_config(&cfg, 2, LOOPBACK);
	assert_int_equal(h_ep_start(w, 2, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[0].ep_port,
				       &ss), 0);
	assert_int_equal(lc_node_add(imp->ep_lc, 1, &ss, 1), 0);
	assert_int_equal(h_send(w, 2, 0, 5), 5);
	assert_true(h_run_until(w, paused, &pa, WAIT_MS));
	/* the real node 2 is connected: no pause time counts */
	assert_int_equal(lc_node_paused_ms(w->w_eps[0].ep_lc, 2, h_now_ms()),
			 0);

	assert_int_equal(h_send(w, 0, 1, 50), 50);
	assert_int_equal(h_send(w, 1, 0, 50), 50);
	assert_int_equal(lc_node_reset(w->w_eps[0].ep_lc, 2), 0);
	assert_true(h_run_until(w, real_pair_done, NULL, WAIT_MS));
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_total, 150);
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_frames_lost, 0);
	}
	assert_int_equal(imp->ep_rx_total, 0);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_true(st.st_peer_restarts >= 1);
	assert_true(st.st_pauses_lifted >= 1);
	assert_int_equal(st.st_stale_dropped, 0);
	assert_int_equal(st.st_msgs_delivered, 150);
	h_world_free(w);
}

/* The application refuses a message (out of memory) three times: the
 * node is held, nothing later from it is delivered while it is, and
 * each lc_node_resume() offers that message again first; in the end
 * every message arrived once and in order, and the held node's own
 * traffic the other way was acknowledged all along.  A node removed
 * while held is no longer held. */
static void test_hold_and_resume(void **state)
{
	enum { COUNT = 2000, REFUSE_AT = 300, REFUSALS = 3 };
	struct h_world *w = h_world_new(2, LOOPBACK, NULL);
	struct h_ep *rx = &w->w_eps[1];
	struct sockaddr_storage ss;
	struct lc_stats st;
	unsigned int held_polls = 0, resumes = 0;
	uint64_t end = h_now_ms() + WAIT_MS;

	(void)state;
	rx->ep_refuse_at = REFUSE_AT;
	rx->ep_refuse_left = REFUSALS;
	assert_int_equal(h_send(w, 0, 1, COUNT), COUNT);
	assert_int_equal(h_send(w, 1, 0, COUNT), COUNT);
	while (!h_acked(w, NULL) && h_now_ms() < end) {
		h_poll(w, 5);
		if (!lc_node_held(rx->ep_lc, 1))
			continue;
		/* held: the refused one is next, nothing after it came */
		assert_int_equal(rx->ep_rx_next[1], rx->ep_refused_counter);
		assert_int_equal(rx->ep_refused_counter, REFUSE_AT);
		if (++held_polls % 4 == 0) {
			assert_int_equal(lc_node_resume(rx->ep_lc, 1), 0);
			resumes++;
		}
	}
	assert_true(h_acked(w, NULL));
	assert_int_equal(rx->ep_refused, REFUSALS);
	assert_int_equal(resumes, REFUSALS);
	assert_int_equal(rx->ep_rx_next[1], COUNT);
	assert_int_equal(rx->ep_rx_total, COUNT);	/* none twice */
	lc_get_stats(rx->ep_lc, &st);
	assert_int_equal(st.st_not_taken, REFUSALS);
	assert_int_equal(st.st_resumes, REFUSALS);
	assert_int_equal(st.st_msgs_delivered, COUNT);
	printf("hold: %llu frames left unread while held, %llu resent\n",
	       (unsigned long long)st.st_held_skipped,
	       (unsigned long long)st.st_dups_dropped);
	assert_false(lc_node_held(rx->ep_lc, 1));
	assert_int_equal(lc_node_resume(rx->ep_lc, 1), 0);	/* not held */
	assert_int_equal(lc_node_resume(rx->ep_lc, 7), -ENOENT);
	assert_clean(w);

	/* held, then the node is removed: the hold goes with it */
	rx->ep_refuse_at = 0;
	rx->ep_refuse_left = 1;
	assert_int_equal(h_send(w, 0, 1, 10), 10);
	end = h_now_ms() + WAIT_MS;
	while (!lc_node_held(rx->ep_lc, 1) && h_now_ms() < end)
		h_poll(w, 5);
	assert_true(lc_node_held(rx->ep_lc, 1));
	assert_int_equal(lc_node_remove(rx->ep_lc, 1), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)w->w_eps[0].ep_port,
				       &ss), 0);
	assert_int_equal(lc_node_add(rx->ep_lc, 1, &ss, 1), 0);
	assert_false(lc_node_held(rx->ep_lc, 1));
	h_world_free(w);
}

static void test_ipv6(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	(void)state;
	assert_non_null(w);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		free(w);
		skip();
	}
	close(fd);
	free(w);
	w = h_world_new(3, "::1", NULL);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if (i != j)
				assert_int_equal(h_send(w, i, j, 1000), 1000);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_clean(w);
	h_world_free(w);
}

/* A dual-stack wildcard listener admits an IPv4 peer by its address. */
static void test_wildcard_listener(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, NULL);
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	assert_int_equal(h_ep_add_peers(w, 0), 0);
	assert_int_equal(h_ep_add_peers(w, 1), 0);
	assert_int_equal(h_send(w, 1, 0, 100), 100);
	assert_int_equal(h_send(w, 0, 1, 100), 100);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_clean(w);
	h_world_free(w);
}

/* A known address that connects and says nothing is dropped after the
 * handshake time. */
static void test_handshake_timeout(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;
	struct sockaddr_storage ss;
	uint64_t t0;
	int fd;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, LOOPBACK);
	cfg.cfg_handshake_ms = 100;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	t0 = h_now_ms();
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_true(closed_by_peer(w, fd));
	assert_true(h_now_ms() - t0 >= 90);
	close(fd);
	h_world_free(w);
}

static bool accepted_n(struct h_world *w, void *arg)
{
	struct lc_stats st;

	lc_get_stats(w->w_eps[0].ep_lc, &st);
	return st.st_accepts >= *(uint64_t *)arg;
}

/* Many connections from a node's address (anyone on that machine may
 * make them) that never say HELLO: at most 8 stay open at once, the
 * oldest closed for each new one (each kept an fd until the handshake
 * time ran out: 64 such connections here kept 64). */
static void test_prehello_bound(void **state)
{
	enum { CONNS = 64, BOUND = 8 };
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;
	struct sockaddr_storage ss;
	uint64_t want = CONNS;
	int fds[CONNS], open_n = 0;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, LOOPBACK);
	cfg.cfg_handshake_ms = 600000;	/* none ends by its time here */
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	for (int i = 0; i < CONNS; i++) {
		fds[i] = connect_from(LOOPBACK, w->w_eps[0].ep_port);
		h_poll(w, 0);
	}
	assert_true(h_run_until(w, accepted_n, &want, WAIT_MS));
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	for (int i = 0; i < CONNS; i++) {
		char b;
		ssize_t n = recv(fds[i], &b, 1, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			open_n++;
		close(fds[i]);
	}
	assert_true(open_n <= BOUND);
	assert_true(open_n >= 1);	/* the newest are still served */
	h_world_free(w);
}

/* The same bound against a node's own dlmd: a connection that has begun
 * its handshake (here the first four bytes of its first message, the
 * magic, as a dlmd sends at once on connecting) is not the one closed
 * while others
 * from its address have sent nothing: a local user on that node opening
 * silent connections evicts its own, not the node's dlmd's handshake
 * (it did: the oldest went, whatever it had sent). */
static void test_prehello_prefers_silent(void **state)
{
	enum { OLD = 8, NEW = 24, BOUND = 8 };
	/* little-endian LC_HS_MAGIC, a handshake message's start (with a
	 * key), or LC_FRAME_MAGIC, a HELLO frame's (LC_TEST_SECURITY=none) */
	static const unsigned char hs_magic[4] = { 0x44, 0x4c, 0x4d, 0x4b };
	static const unsigned char frame_magic[4] = { 0x44, 0x4c, 0x4d, 0x46 };
	const unsigned char *magic;
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;
	struct sockaddr_storage ss;
	uint64_t want;
	int fds[OLD + NEW], talker, open_n = 0;
	char b;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, LOOPBACK);
	magic = cfg.cfg_security == LC_SEC_NONE ? frame_magic : hs_magic;
	cfg.cfg_handshake_ms = 600000;	/* none ends by its time here */
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	for (int i = 0; i < OLD; i++) {
		fds[i] = connect_from(LOOPBACK, w->w_eps[0].ep_port);
		h_poll(w, 0);
	}
	want = OLD;
	assert_true(h_run_until(w, accepted_n, &want, WAIT_MS));
	talker = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_true(talker >= 0);
	assert_int_equal(send(talker, magic, 4, 0), 4);
	want = OLD + 1;
	assert_true(h_run_until(w, accepted_n, &want, WAIT_MS));
	for (int i = 0; i < 10; i++)
		h_poll(w, 5);
	errno = 0;
	assert_int_equal(recv(talker, &b, 1, MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	for (int i = OLD; i < OLD + NEW; i++) {
		fds[i] = connect_from(LOOPBACK, w->w_eps[0].ep_port);
		h_poll(w, 0);
	}
	want = OLD + 1 + NEW;
	assert_true(h_run_until(w, accepted_n, &want, WAIT_MS));
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	/* the talker is still open (no EOF, no reset) */
	errno = 0;
	assert_int_equal(recv(talker, &b, 1, MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	for (int i = 0; i < OLD + NEW; i++) {
		ssize_t n = recv(fds[i], &b, 1, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			open_n++;
		close(fds[i]);
	}
	close(talker);
	assert_true(open_n + 1 <= BOUND);	/* the bound still holds */
	assert_true(open_n >= 1);
	h_world_free(w);
}

/* fd's peer has not closed it: what it sent read and dropped, no EOF
 * and no reset behind it */
static bool still_open(int fd)
{
	char buf[512];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
}

/* With the key: a connection that has proved it (INIT, RESP, FIN) but
 * has not yet sent its HELLO is a node's dlmd, or one who holds the key
 * and could pose as any node anyway; the local user who floods the port
 * from that node's address can start handshakes (an INIT proves nothing)
 * but not finish one.  Such a connection is not closed while its
 * address's unproved ones are there to go (the oldest went, whatever it
 * had proved). */
static void test_prehello_keeps_proved(void **state)
{
	enum { TALKERS = 24, BOUND = 8 };
	struct h_world *w;
	struct lc_config cfg;
	struct sockaddr_storage ss;
	struct lc_keys keys, other;
	struct lc_hs hs;
	struct lc_hs_msg m;
	unsigned char key[LC_KEY_LEN], init[LC_HS_INIT_LEN];
	unsigned char resp[LC_HS_RESP_LEN], fin[LC_HS_FIN_LEN];
	size_t used, got = 0;
	uint64_t want;
	int prover, fds[TALKERS], open_n = 0;

	(void)state;
	h_config(&cfg, 1, LOOPBACK);
	if (cfg.cfg_security == LC_SEC_NONE)
		skip();		/* nothing to prove */
	w = malloc(sizeof(*w));
	assert_non_null(w);
	h_world_init(w);
	cfg.cfg_handshake_ms = 600000;	/* none ends by its time here */
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	/* node 2's dlmd: its handshake, all but the HELLO */
	lc_keys_derive(cfg.cfg_key, &keys);
	prover = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	assert_int_equal(lc_hs_start_initiator(&hs, &keys, 2, 1,
					       lc_suites_local(), init), 0);
	assert_int_equal(send(prover, init, sizeof(init), 0), sizeof(init));
	for (int i = 0; i < 400 && got < sizeof(resp); i++) {
		ssize_t n = recv(prover, resp + got, sizeof(resp) - got,
				 MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		else
			h_poll(w, 5);
	}
	assert_int_equal(got, sizeof(resp));
	assert_int_equal(lc_hs_parse(resp, sizeof(resp), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(&hs, &m, resp, fin), LC_HSERR_NONE);
	lc_hs_wipe(&hs);
	assert_int_equal(send(prover, fin, sizeof(fin), 0), sizeof(fin));
	for (int i = 0; i < 10; i++)
		h_poll(w, 5);
	/* the flood: each connection a well-formed INIT, without the key */
	h_test_key(key, 1);
	lc_keys_derive(key, &other);
	for (int i = 0; i < TALKERS; i++) {
		fds[i] = connect_from(LOOPBACK, w->w_eps[0].ep_port);
		assert_int_equal(lc_hs_start_initiator(&hs, &other, 2, 1,
						       lc_suites_local(), init), 0);
		lc_hs_wipe(&hs);
		assert_int_equal(send(fds[i], init, sizeof(init), 0),
				 sizeof(init));
		h_poll(w, 0);
	}
	want = 1 + TALKERS;
	assert_true(h_run_until(w, accepted_n, &want, WAIT_MS));
	for (int i = 0; i < 20; i++)
		h_poll(w, 5);
	assert_true(still_open(prover));
	for (int i = 0; i < TALKERS; i++) {
		open_n += still_open(fds[i]);
		close(fds[i]);
	}
	close(prover);
	assert_true(open_n + 1 <= BOUND);	/* the bound still holds */
	assert_true(open_n >= 1);
	h_world_free(w);
}

static bool accepted_one(struct h_world *w, void *arg)
{
	struct lc_stats st;

	(void)arg;
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	return st.st_accepts == 1;
}

/* Out of fds (a low RLIMIT_NOFILE, every client taking some): accept()
 * fails with EMFILE while the connection stays queued.  The listener must
 * leave the poll set for a while instead of waking the loop at once, for
 * ever (100% CPU, an "accept" log line each time), and the failure is
 * logged once; when fds are free again the connection is accepted. */
static void test_accept_out_of_fds(void **state)
{
	enum { ROUNDS = 50, FILL_MAX = H_MAX_FDS };
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;
	struct sockaddr_storage ss;
	struct rlimit old, low;
	int fill[FILL_MAX], nfill = 0, lfd = -1, fd;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	h_config(&cfg, 1, LOOPBACK);
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(lc_addr_parse(LOOPBACK, 1, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	for (int i = 0; i < H_MAX_FDS; i++)
		if (w->w_fds[i].hf_ep == 0)
			lfd = i;
	assert_true(lfd >= 0);
	w->w_eps[0].ep_log_needle = "accept: ";
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);

	/* Every fd below the limit in use. */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (;;) {
		int f = dup(0);

		if (f < 0) {
			assert_int_equal(errno, EMFILE);
			break;
		}
		assert_true(nfill < FILL_MAX);
		fill[nfill++] = f;
	}
	/* The first round meets the queued connection: EMFILE, and the
	 * listener is no longer watched. */
	assert_int_equal(h_poll(w, WAIT_MS), 1);
	assert_int_equal(w->w_eps[0].ep_log_hits, 1);
	assert_int_equal(w->w_fds[lfd].hf_events & POLLIN, 0);
	/* It comes back to try again, but says so only once. */
	for (int i = 0; i < ROUNDS; i++)
		h_poll(w, 10);
	assert_int_equal(w->w_eps[0].ep_log_hits, 1);

	while (nfill)
		close(fill[--nfill]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_true(h_run_until(w, accepted_one, NULL, WAIT_MS));
	assert_int_equal(w->w_fds[lfd].hf_events & POLLIN, POLLIN);
	assert_int_equal(w->w_eps[0].ep_log_hits, 1);
	close(fd);
	h_world_free(w);
}

/* Node 2 is down when node 1 starts sending: connects fail and back off;
 * when node 2 comes up on its port, the queue drains, in order.  Meanwhile
 * lc_node_wait_ms() says how long the oldest frame has waited; 0 again
 * once everything is acked. */
static void test_peer_comes_up_late(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage ss;
	struct lc_stats st;
	uint64_t t0, t1, now, waited;
	int port, rv = -EADDRINUSE;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	/* Learn a free port, then leave it unbound for a while. */
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	port = w->w_eps[1].ep_port;
	h_ep_stop(w, 1);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)port, &ss), 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	/* nothing queued: no wait (PEER UNREACHABLE) */
	assert_int_equal(lc_node_wait_ms(w->w_eps[0].ep_lc, 2, h_now_ms()), 0);
	t0 = h_now_ms();
	assert_int_equal(h_send(w, 0, 1, 1000), 1000);
	t1 = h_now_ms();
	for (int i = 0; i < 20; i++)
		h_poll(w, 10);
	lc_get_stats(w->w_eps[0].ep_lc, &st);
	assert_true(st.st_connects >= 2);
	assert_int_equal(st.st_established, 0);
	assert_true(lc_next_timeout(w->w_eps[0].ep_lc) != UINT64_MAX);
	/* the oldest frame has waited since it was queued, through the
	 * reconnect attempts */
	now = h_now_ms();
	waited = lc_node_wait_ms(w->w_eps[0].ep_lc, 2, now);
	assert_true(waited >= now - t1 && waited <= now - t0);
	assert_true(waited > 0);
	assert_int_equal(lc_node_wait_ms(w->w_eps[0].ep_lc, 3, now), 0);

	for (int t = 0; t < 100 && rv == -EADDRINUSE; t++) {
		rv = h_ep_start(w, 1, LOOPBACK, port, NULL);
		if (rv == -EADDRINUSE)
			h_poll(w, 10);
	}
	if (rv == -EADDRINUSE) {
		/* The port learned above was left free, and something else
		 * on the machine (another test's connection took it as its
		 * ephemeral port, in a parallel make check) holds it now:
		 * this run cannot bring node 2 up where node 1 looks for it.
		 * Not the code under test; say so and skip. */
		print_message("port %d taken by another socket meanwhile: "
			      "skipped\n", port);
		h_world_free(w);
		skip();
	}
	assert_int_equal(rv, 0);
	assert_int_equal(h_ep_add_peers(w, 1), 0);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	/* everything acked: the wait is over */
	assert_int_equal(lc_node_wait_ms(w->w_eps[0].ep_lc, 2, h_now_ms()), 0);
	assert_clean(w);
	h_world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordering),
		cmocka_unit_test(test_batching),
		cmocka_unit_test(test_pingpong_no_lone_ack),
		cmocka_unit_test(test_receive_only_peer_acks),
		cmocka_unit_test(test_no_malloc_per_message),
		cmocka_unit_test(test_simultaneous_connect),
		cmocka_unit_test(test_refuse_unknown_address),
		cmocka_unit_test(test_reject_impostor),
		cmocka_unit_test(test_scripted_peer),
		cmocka_unit_test(test_backpressure_and_remove),
		cmocka_unit_test(test_remove_and_readd),
		cmocka_unit_test(test_hold_and_resume),
		cmocka_unit_test(test_renew),
		cmocka_unit_test(test_set_addrs),
		cmocka_unit_test(test_renew_twice_keeps_epoch),
		cmocka_unit_test(test_restarted_peer_gets_no_stale),
		cmocka_unit_test(test_new_epoch_then_known_back),
		cmocka_unit_test(test_handshake_timeout),
		cmocka_unit_test(test_prehello_bound),
		cmocka_unit_test(test_prehello_prefers_silent),
		cmocka_unit_test(test_prehello_keeps_proved),
		cmocka_unit_test(test_peer_comes_up_late),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_wildcard_listener),
		cmocka_unit_test(test_accept_out_of_fds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
