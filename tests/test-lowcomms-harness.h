/*
 * tests/test-lowcomms-harness.h: several lowcomms endpoints in one process,
 * driven by a small poll loop, for the loopback tests.
 *
 * Endpoint i has node id i + 1.  Each test message carries a 64-bit counter
 * per (sender, receiver) pair; the receiving endpoint checks that counters
 * arrive as 0, 1, 2, ... so any loss, duplicate or reordering is counted in
 * ep_rx_errors, and split into ep_rx_dups (a counter below the next one
 * expected: delivered again) and ep_rx_lost (counters skipped over).
 * Tracking lives in the harness, not in the lowcomms context, so it
 * survives an endpoint being destroyed and recreated.
 *
 * The TCP tests (test-lowcomms-loop, -stress) and the SCTP ones
 * (test-lowcomms-sctp) share all of it; a world's w_config says which
 * transport its endpoints use.  Every wait is bounded in time, every retry
 * in count.
 */
#ifndef DLMD_TEST_LOWCOMMS_HARNESS_H
#define DLMD_TEST_LOWCOMMS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lowcomms/lowcomms.h"

#define H_MAX_EP	4
#define H_MAX_FDS	1024
/* A test message: counter, then filler derived from it. */
#define H_MSG_HDR	8

struct h_world;

struct h_ep {
	struct h_world *ep_world;
	struct lc_ctx *ep_lc;
	struct lc_config ep_cfg;
	uint32_t ep_id;
	int ep_port;
	char ep_addr[64];
	uint64_t ep_tx_next[H_MAX_EP + 1];	/* by receiver node id */
	uint64_t ep_rx_next[H_MAX_EP + 1];	/* by sender node id */
	uint64_t ep_rx_total;
	uint64_t ep_rx_errors;
	uint64_t ep_rx_dups;			/* counters seen before */
	uint64_t ep_rx_lost;			/* counters jumped over */
	uint64_t ep_rx_first_bad;		/* counter of the first error */
	unsigned int ep_msg_extra;		/* extra payload bytes per msg */
	int ep_refused_logs;			/* log lines "refusing ..." */
	int ep_warnings;			/* LOG_WARNING or worse */
	const char *ep_log_needle;		/* count lines containing it */
	int ep_log_hits;
	unsigned long ep_fd_mods;		/* ops_fd_mod calls */
	unsigned int ep_frames_lost;		/* ops_frames_lost calls */
	uint64_t ep_established[H_MAX_EP + 1];	/* ops_established, by node id */
	uint32_t ep_lost_from, ep_lost_expected, ep_lost_got;	/* the last */
	/* ops_deliver refuses (-EAGAIN) the next ep_refuse_left deliveries
	 * of a counter at or past ep_refuse_at, from any node */
	unsigned int ep_refuse_left;
	uint64_t ep_refuse_at;
	unsigned int ep_refused;		/* refusals made */
	uint64_t ep_refused_counter;		/* the last one refused */
};

struct h_fd {
	short hf_events;
	int hf_ep;				/* owner, -1 = unused */
};

/* Fills an endpoint's config (h_config, h_sctp_config). */
typedef void h_config_fn(struct lc_config *cfg, uint32_t nodeid,
			 const char *addr);

struct h_world {
	struct h_ep w_eps[H_MAX_EP];
	int w_neps;
	struct h_fd w_fds[H_MAX_FDS];
	bool w_verbose;
	h_config_fn *w_config;			/* for h_ep_start(.., NULL) */
	/* h_poll() renews a node an endpoint has paused (the membership
	 * confirming a restart: lowcomms.c, PEER RESTARTED), counted */
	bool w_confirm_restarts;
	unsigned int w_restarts_confirmed;
};

void h_world_init(struct h_world *w);
void h_world_fini(struct h_world *w);
/* A world of neps endpoints on addr, configured by config (NULL:
 * h_config), each knowing all the others.  Asserts (cmocka) on failure. */
struct h_world *h_world_new(int neps, const char *addr, h_config_fn *config);
void h_world_free(struct h_world *w);
uint64_t h_now_ms(void);
/* The default endpoint config with fast reconnects, for tests (TCP):
 * authenticated with the test key h_test_key(.., 0), or plaintext when
 * LC_TEST_SECURITY=none is in the environment (the plaintext run). */
h_config_fn h_config;
/* h_config, always plaintext (tests that script raw frames). */
h_config_fn h_plain_config;
/* A test cluster key; another variant is a different (wrong) key. */
void h_test_key(unsigned char key[LC_KEY_LEN], int variant);
/* The same key in static storage, for a struct lc_config's cfg_key
 * (variant 0 .. H_KEY_VARIANTS - 1). */
#define H_KEY_VARIANTS	8
const unsigned char *h_key(int variant);
/* The same over SCTP: the kernel's or usrsctp per LC_SCTP_IMPL in the
 * environment ("kernel", "user"; default: whichever this kernel allows),
 * usrsctp on a free UDP port. */
h_config_fn h_sctp_config;
/* Create endpoint idx (node id idx + 1) listening on addr, port 0 unless
 * port is given; cfg NULL: the world's w_config.  Returns 0 or a negative
 * errno. */
int h_ep_start(struct h_world *w, int idx, const char *addr, int port,
	       const struct lc_config *cfg);
void h_ep_stop(struct h_world *w, int idx);
/* Destroy endpoint idx's context and create a new one on the same address
 * and port (a restarted node: a new epoch), retrying a bind that is still
 * busy up to H_BIND_TRIES times.  Returns 0 or a negative errno. */
int h_ep_recreate(struct h_world *w, int idx);
/* Kill and restart endpoint idx's socket layer (lc_restart()), keeping its
 * context; retries the listen while the port is busy, as h_ep_recreate. */
int h_ep_restart_sockets(struct h_world *w, int idx);
/* Add every other running endpoint to idx's node table. */
int h_ep_add_peers(struct h_world *w, int idx);
/* One poll round (timeout_ms at most), then timers.  Returns events seen. */
int h_poll(struct h_world *w, int timeout_ms);
/* Poll until done(w, arg) or max_ms elapsed; returns done's last value. */
bool h_run_until(struct h_world *w, bool (*done)(struct h_world *, void *),
		 void *arg, int max_ms);
/* Send up to count next counters from -> to; stops at -ENOBUFS.  Returns
 * how many were queued, or a negative errno on another error. */
long h_send(struct h_world *w, int from, int to, long count);
/* Everything sent from -> to has been delivered. */
bool h_pair_done(const struct h_world *w, int from, int to);
bool h_all_done(struct h_world *w, void *unused);
/* h_all_done, and every queue acknowledged (empty). */
bool h_acked(struct h_world *w, void *unused);
/* Counters of every endpoint, one line each, for the test log. */
void h_print_stats(const struct h_world *w, const char *what);

/* Streaming between endpoints 0 and 1. */
struct h_stream {
	long st_target;		/* messages per direction */
	bool st_both;		/* 1 -> 0 as well as 0 -> 1 */
	long st_burst;		/* queued per loop iteration at most */
	long st_window;		/* unacknowledged at most, 0 = no limit */
};

/* Top the queues up (to the window, if any), then poll once.  A window
 * keeps the sender in step with the receiver, so that faults injected at
 * given points of progress happen while traffic flows. */
void h_stream_step(struct h_world *w, const struct h_stream *s);
bool h_stream_sent(const struct h_world *w, const struct h_stream *s);

/*
 * Something done to the world in the middle of a stream, the k-th time:
 * returns 1 when done, 0 when it cannot be done right now (tried again at
 * the next step), a negative errno on failure.
 */
typedef int h_action_fn(struct h_world *w, int k);

/*
 * Stream s for at most max_ms, calling action n times, the k-th once
 * endpoint 1 has received (k + 1) / (n + 2) of the target, then wait
 * (within the same time) until everything is delivered and acknowledged.
 * Returns how many actions were done, or the action's negative errno; the
 * caller checks h_stream_sent() and h_acked().
 */
int h_stream_with_actions(struct h_world *w, const struct h_stream *s, int n,
			  h_action_fn *action, int max_ms);

/*
 * The socket-layer restart test, shared by TCP and SCTP: endpoints 0 and 1
 * (configured by config, on addr) stream `target` messages each way, with
 * at most a window unacknowledged, and `restarts` times, while frames are
 * in flight, one endpoint (node 2 and node 1 in turn) has its socket layer
 * killed and restarted with lc_restart().  Asserts (cmocka) that every
 * message arrived exactly once: no counter skipped, none seen twice, and
 * that no peer saw a restart of the node (a new epoch).
 */
void h_test_restart_sockets(const char *addr, h_config_fn *config,
			    long target, int restarts, int max_ms);

/*
 * The bodies the TCP and SCTP tests share: each builds a world of
 * endpoints on addr configured by config, asserts (cmocka) what holds over
 * every transport and returns the world, for the transport's own checks;
 * the caller frees it.
 */
/* Three endpoints each send to both others in interleaved rounds, with
 * payloads of several sizes: every stream arrives whole and in order. */
struct h_world *h_test_ordering(const char *addr, h_config_fn *config,
				int wait_ms);
/* Stream s between endpoints 0 and 1, with fault (NULL: none) injected at
 * both, until sent and acknowledged within max_ms; prints the time and the
 * counters under what.  Every receiver got each message exactly once (and,
 * with a fault, the fault was injected at both ends). */
struct h_world *h_test_stream(const char *addr, h_config_fn *config,
			      const struct h_stream *s,
			      const struct lc_fault *fault, int max_ms,
			      const char *what);
/* Stream s while action is done n times (h_stream_with_actions): all n
 * done, everything sent and acknowledged.  Nothing about the receivers. */
struct h_world *h_test_actions(const char *addr, h_config_fn *config,
			       const struct h_stream *s, int n,
			       h_action_fn *action, int max_ms,
			       const char *what);
/* h_test_actions with an action that kills a connection (n times): the
 * connections did die, n times at least, with frames in flight that were
 * resent, and every receiver got each message exactly once.  Frees the
 * world. */
void h_test_reconnects(const char *addr, h_config_fn *config,
		       const struct h_stream *s, int n, h_action_fn *action,
		       int max_ms, const char *what);
/* Stream s while node 2's context is recreated n times (h_ep_recreate,
 * while node 1 has frames in flight to it), each restart confirmed as
 * the membership would (w_confirm_restarts): node 1 paused n new epochs
 * of node 2, and each was confirmed.  What node 2 received is for the
 * transport's test to judge. */
struct h_world *h_test_recreate(const char *addr, h_config_fn *config,
				const struct h_stream *s, int n, int max_ms);

/*
 * The tests every transport runs, written once: a transport's test file
 * lists them with cmocka_unit_test_prestate(h_transport_x, &its_transport)
 * and keeps only what is its own.  Where the transports differ it is in
 * this table, not in a second copy of a test.
 */
struct h_transport {
	const char	*tr_addr;
	h_config_fn	*tr_config;
	int		tr_max_ms;
	long		tr_stream;	/* messages of the long stream */
	const char	*tr_stream_env;	/* overrides tr_stream, if set */
	long		tr_burst;	/* queued per step in the long stream */
	long		tr_slow_burst;	/* ... in the others: many steps */
	/* Unacknowledged at most, 0 = no limit. */
	long		tr_window;
	h_action_fn	*tr_reconnect;	/* kills the k-th connection */
	const char	*tr_reconnect_name;
	int		tr_reconnects;
	long		tr_reconnect_count;	/* messages each way */
	long		tr_restart_count;	/* h_test_restart_sockets */
	int		tr_restarts;
	long		tr_recreate_count;
	long		tr_fault_count;
};
enum h_transport_id { H_TCP, H_SCTP };
/* Indexed by enum h_transport_id (the table in test-lowcomms-harness.c
 * says why they differ). */
extern const struct h_transport h_transports[];
/* A long stream one way: nothing lost, nothing repeated, batched (far
 * fewer writes than messages). */
void h_transport_stream(void **state);
/* tr_reconnects connections killed while both directions stream:
 * h_test_reconnects. */
void h_transport_reconnects(void **state);
/* The socket layer killed and restarted mid-stream: h_test_restart_sockets,
 * tr_restarts + 1 times. */
void h_transport_restart_sockets(void **state);
/* Node 2's context recreated mid-stream tr_restarts times, each restart
 * confirmed: no repeat, and no gap but what node 1 dropped for the old
 * contexts (lowcomms.c, PEER RESTARTED). */
void h_transport_recreate(void **state);
/* Injected wire faults both ways: duplicated frames are dropped by the
 * receiver, a skipped frame costs a reconnect and a resend. */
void h_transport_fault_duplicate(void **state);
void h_transport_fault_skip(void **state);

/* Bound on bind retries after an endpoint's sockets are closed. */
#define H_BIND_TRIES	100
#define H_BIND_WAIT_MS	20

#endif
