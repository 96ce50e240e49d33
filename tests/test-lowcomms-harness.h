/*
 * tests/test-lowcomms-harness.h: several lowcomms endpoints in one process,
 * driven by a small poll loop, for the loopback tests.
 *
 * Endpoint i has node id i + 1.  Each test message carries a 64-bit counter
 * per (sender, receiver) pair; the receiving endpoint checks that counters
 * arrive as 0, 1, 2, ... so any loss, duplicate or reordering is counted in
 * ep_rx_errors.  Tracking lives in the harness, not in the lowcomms context,
 * so it survives an endpoint being destroyed and recreated.
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
	uint64_t ep_rx_first_bad;		/* counter of the first error */
	unsigned int ep_msg_extra;		/* extra payload bytes per msg */
	int ep_refused_logs;			/* log lines "refusing ..." */
	int ep_warnings;			/* LOG_WARNING or worse */
};

struct h_fd {
	short hf_events;
	int hf_ep;				/* owner, -1 = unused */
};

struct h_world {
	struct h_ep w_eps[H_MAX_EP];
	int w_neps;
	struct h_fd w_fds[H_MAX_FDS];
	bool w_verbose;
};

void h_world_init(struct h_world *w);
void h_world_fini(struct h_world *w);
uint64_t h_now_ms(void);
/* The default endpoint config with fast reconnects, for tests. */
void h_config(struct lc_config *cfg, uint32_t nodeid, const char *addr);
/* Create endpoint idx (node id idx + 1) listening on addr, port 0 unless
 * port is given.  Returns 0 or a negative errno. */
int h_ep_start(struct h_world *w, int idx, const char *addr, int port,
	       const struct lc_config *cfg);
void h_ep_stop(struct h_world *w, int idx);
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

#endif
