/*
 * plugin/metrics.h - the daemon's counters, gauges and histograms.
 *
 * The numbers live where they are counted: a lockspace's in its struct
 * dlmd_ls (dl_metrics), a peer's in the comms table, the daemon's in
 * struct dlmd (d_metrics).  Counting is an inline increment on a field the
 * caller already holds: no allocation, no lookup, no lock (one thread).
 * The inline helpers below are all the hot path sees; cluster.c calls them
 * too, so tests/test-cpg-proto.c (which includes cluster.c) links nothing
 * more.
 *
 * metrics.c turns them into samples once per scrape (dlmd_metrics_collect)
 * and prints those either in the Prometheus text format (GET /metrics,
 * "dlmctl metrics") or as JSON ("dlmctl status --json", key "metrics"):
 * one producer, two formatters, so both always carry the same numbers.
 * man/dlmd-metrics.7 documents every metric.
 */
#ifndef DLMD_PLUGIN_METRICS_H
#define DLMD_PLUGIN_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define DLMD_NS_PER_SEC		1000000000ULL

/* The grant latency buckets' upper bounds (ns), 10 us .. 10 s; the last
 * bucket (+Inf) is implicit. */
#define DLMD_LAT_BOUNDS_NS { \
	10000ULL, 25000ULL, 50000ULL, 100000ULL, 250000ULL, 500000ULL, \
	1000000ULL, 2500000ULL, 5000000ULL, 10000000ULL, 25000000ULL, \
	50000000ULL, 100000000ULL, 250000000ULL, 500000000ULL, \
	1000000000ULL, 2500000000ULL, 5000000000ULL, 10000000000ULL }
#define DLMD_LAT_NBOUNDS	19

/* A fixed-bucket histogram: per-bucket (not cumulative) counts, the last
 * one for what exceeds every bound; the sum in ns. */
struct dlmd_histogram {
	uint64_t	h_buckets[DLMD_LAT_NBOUNDS + 1];
	uint64_t	h_count;
	uint64_t	h_sum_ns;
};

/* Lock operations by kind (label op). */
enum dlmd_lock_op {
	DLMD_OP_LOCK = 0,	/* a new lock request */
	DLMD_OP_CONVERT,
	DLMD_OP_UNLOCK,
	DLMD_OP_CANCEL,		/* DLM_LKF_CANCEL, and deadlock cancels */
	DLMD_OP_COUNT
};

/* One lockspace's numbers (struct dlmd_ls's dl_metrics). */
struct dlmd_ls_metrics {
	uint64_t	lm_ops[DLMD_OP_COUNT];	/* accepted by the engine */
	uint64_t	lm_grants;		/* completion ASTs with status 0 */
	uint64_t	lm_waiting;		/* lock/convert requests whose
						 * completion has not been sent */
	uint64_t	lm_basts;		/* blocking ASTs sent */
	struct dlmd_histogram lm_grant_latency;
	uint64_t	lm_recoveries_started;	/* engine starts (events) */
	uint64_t	lm_recoveries_done;	/* finishes: locking resumed */
	uint64_t	lm_recovery_since_ns;	/* stopped at (0: running) */
	uint64_t	lm_recovery_last_ns;	/* stop to finish, the last one */
	uint64_t	lm_recovery_total_ns;
};

/* One peer node's numbers (plugin/comms.c keeps them per node). */
struct dlmd_peer_metrics {
	uint32_t	pm_nodeid;
	uint64_t	pm_msgs_sent;		/* engine messages queued to it */
	uint64_t	pm_bytes_sent;		/* their payload bytes */
	uint64_t	pm_msgs_received;
	uint64_t	pm_bytes_received;
	uint64_t	pm_connects;		/* connections established */
	uint64_t	pm_not_taken;		/* its messages the engine did
						   not take (comms.c, HOLD) */
	uint64_t	pm_held_since;		/* ms: one of them is held
						   since (0: none) */
};

/* The daemon's own (struct dlmd's d_metrics). */
struct dlmd_metrics {
	uint64_t	m_fence_waits;		/* failures that needed fencing */
	uint64_t	m_fence_wait_ns;	/* failure to fenced, summed */
	uint64_t	m_fence_runs_ok;	/* fence_command exit 0 */
	uint64_t	m_fence_runs_failed;
	uint64_t	m_fence_timeouts;	/* of those, timed out */
};

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t dlmd_metrics_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DLMD_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline void dlmd_histogram_observe(struct dlmd_histogram *h,
					  uint64_t ns)
{
	static const uint64_t bounds[DLMD_LAT_NBOUNDS] = DLMD_LAT_BOUNDS_NS;
	unsigned int i = 0;

	while (i < DLMD_LAT_NBOUNDS && ns > bounds[i])
		i++;
	h->h_buckets[i]++;
	h->h_count++;
	h->h_sum_ns += ns;
}

/* A lock or convert request the engine took: it waits for its completion
 * from now on.  Returns the time to keep for dlmd_metrics_completed(). */
static inline uint64_t dlmd_metrics_wait_begin(struct dlmd_ls_metrics *lm,
					       uint64_t arrived_ns)
{
	lm->lm_waiting++;
	return arrived_ns ? arrived_ns : 1;
}

/* The completion of a request that began at 'began_ns' is sent (granted:
 * status 0); or, with granted false, the request ended otherwise
 * (refused, cancelled, or its client went away). */
static inline void dlmd_metrics_wait_end(struct dlmd_ls_metrics *lm,
					 uint64_t began_ns, bool granted)
{
	if (lm->lm_waiting)
		lm->lm_waiting--;
	if (!granted)
		return;
	lm->lm_grants++;
	{
		uint64_t now = dlmd_metrics_now_ns();

		dlmd_histogram_observe(&lm->lm_grant_latency,
				       now > began_ns ? now - began_ns : 0);
	}
}

/* The lockspace stopped for a membership change (a recovery begins,
 * unless one is already under way). */
static inline void dlmd_metrics_ls_stopped(struct dlmd_ls_metrics *lm)
{
	if (!lm->lm_recovery_since_ns)
		lm->lm_recovery_since_ns = dlmd_metrics_now_ns();
}

/* The engine started recovery for an event. */
static inline void dlmd_metrics_recovery_started(struct dlmd_ls_metrics *lm)
{
	lm->lm_recoveries_started++;
	dlmd_metrics_ls_stopped(lm);
}

/* Recovery finished: locking resumed. */
static inline void dlmd_metrics_recovery_done(struct dlmd_ls_metrics *lm)
{
	uint64_t now = dlmd_metrics_now_ns();
	uint64_t took = lm->lm_recovery_since_ns && now > lm->lm_recovery_since_ns ?
			now - lm->lm_recovery_since_ns : 0;

	lm->lm_recoveries_done++;
	lm->lm_recovery_last_ns = took;
	lm->lm_recovery_total_ns += took;
	lm->lm_recovery_since_ns = 0;
}

struct dlmd;
struct dlmd_sbuf;

/* Every metric of the daemon in the Prometheus text format (version
 * 0.0.4), appended to sb. */
void dlmd_metrics_prometheus(struct dlmd *d, struct dlmd_sbuf *sb);
/* The same samples as a JSON array (no newline), appended to sb:
 * [{"name":..,"type":..,"help":..,"samples":[{"name":..,"labels":{..},
 * "value":..}]}] */
void dlmd_metrics_json(struct dlmd *d, struct dlmd_sbuf *sb);

/* The HTTP endpoint (plugin/metrics-http.c, dlm.conf metrics_listen). */
int dlmd_metrics_listen(struct dlmd *d);
void dlmd_metrics_fini(struct dlmd *d);

/* What an HTTP request asks (dlmd_http_parse), as the status to answer. */
enum dlmd_http_verdict {
	DLMD_HTTP_MORE = 0,		/* incomplete: read on */
	DLMD_HTTP_OK = 200,		/* GET /metrics */
	DLMD_HTTP_BAD_REQUEST = 400,
	DLMD_HTTP_NOT_FOUND = 404,
	DLMD_HTTP_BAD_METHOD = 405,
	DLMD_HTTP_TOO_LARGE = 431,	/* head over DLMD_HTTP_REQ_MAX */
	DLMD_HTTP_BAD_VERSION = 505,
};
#define DLMD_HTTP_REQ_MAX	4096	/* request line and headers, bytes */
/* Judge the first len bytes received of a request (plugin/http-parse.c:
 * no I/O; the fuzz target tests/fuzz-http.c drives it). */
enum dlmd_http_verdict dlmd_http_parse(const char *buf, size_t len);
/* The reason phrase of a verdict ("Not Found"). */
const char *dlmd_http_reason(enum dlmd_http_verdict v);

#endif /* DLMD_PLUGIN_METRICS_H */
