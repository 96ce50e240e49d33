/*
 * plugin/metrics.c - the daemon's numbers as Prometheus text and as JSON.
 *
 * One producer, collect(), walks the daemon's state once and hands every
 * metric family (name, type, help) and every sample (series name, labels,
 * value) to an emitter; the emitter's two formatters print them either in
 * the Prometheus text exposition format 0.0.4:
 *
 *     # HELP dlmd_lock_grants_total Completion ASTs ...
 *     # TYPE dlmd_lock_grants_total counter
 *     dlmd_lock_grants_total{lockspace="alpha"} 42
 *
 * or as a JSON array of families with their samples (dlmctl status
 * --json, key "metrics").  So the endpoint, "dlmctl metrics" and "dlmctl
 * status --json" can never disagree on a number's name, labels or value.
 *
 * The counts themselves are taken elsewhere, inline (metrics.h): this
 * file only reads.  A histogram is printed the Prometheus way: cumulative
 * _bucket series with label le, ending with le="+Inf" (which equals
 * _count), then _sum (seconds) and _count.
 *
 * Label values come from outside (lockspace names are a client's bytes):
 * both formats carry them through dlmd_escape() (graphic ASCII kept,
 * every other byte and '\' as \xHH), then each format's own quoting.
 * The names and their meaning are documented in man/dlmd-metrics.7; a
 * metric added here belongs there too.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define MAX_LABELS	3

struct label {
	const char	*lb_name;
	const char	*lb_value;
};

struct emit {
	struct dlmd_sbuf	*em_sb;
	bool			em_json;
	bool			em_any_family;	/* JSON: a family was opened */
	bool			em_any_sample;	/* JSON: ... and has a sample */
};

/* ------------------------------------------------------------------ */
/* the two formatters                                                  */
/* ------------------------------------------------------------------ */

static void family(struct emit *em, const char *name, const char *type,
		   const char *help)
{
	struct dlmd_sbuf *sb = em->em_sb;

	if (!em->em_json) {
		dlmd_sb_printf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help,
			       name, type);
		return;
	}
	dlmd_sb_printf(sb, "%s{\"name\":\"%s\",\"type\":\"%s\",\"help\":",
		       em->em_any_family ? "]}," : "[", name, type);
	dlmd_json_str(sb, help);
	dlmd_sb_printf(sb, ",\"samples\":[");
	em->em_any_family = true;
	em->em_any_sample = false;
}

/* A label value in the Prometheus format: '"' and '\' escaped ('\' only
 * comes from dlmd_escape's \xHH, so a reader sees the same text as the
 * JSON's). */
static void prom_label_value(struct dlmd_sbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			dlmd_sb_printf(sb, "\\%c", *s);
		else
			dlmd_sb_printf(sb, "%c", *s);
	}
}

/* One sample; the value is printed by the caller's format ("%llu" or
 * "%.9g"), identically in both formats. */
static void sample(struct emit *em, const char *name, const struct label *lb,
		   unsigned int nlb, const char *value)
{
	struct dlmd_sbuf *sb = em->em_sb;
	char safe[DLMD_ESCAPED_SIZE(DLM_LOCKSPACE_LEN + 1)];

	if (!em->em_json) {
		dlmd_sb_printf(sb, "%s", name);
		for (unsigned int i = 0; i < nlb; i++) {
			dlmd_sb_printf(sb, "%s%s=\"", i ? "," : "{", lb[i].lb_name);
			prom_label_value(sb, dlmd_escape(lb[i].lb_value, safe,
							 sizeof(safe)));
			dlmd_sb_printf(sb, "\"");
		}
		dlmd_sb_printf(sb, "%s %s\n", nlb ? "}" : "", value);
		return;
	}
	dlmd_sb_printf(sb, "%s{\"name\":\"%s\",\"labels\":{",
		       em->em_any_sample ? "," : "", name);
	for (unsigned int i = 0; i < nlb; i++) {
		dlmd_sb_printf(sb, "%s\"%s\":", i ? "," : "", lb[i].lb_name);
		dlmd_json_str(sb, dlmd_escape(lb[i].lb_value, safe, sizeof(safe)));
	}
	dlmd_sb_printf(sb, "},\"value\":%s}", value);
	em->em_any_sample = true;
}

static void emit_end(struct emit *em)
{
	if (em->em_json)
		dlmd_sb_printf(em->em_sb, "%s", em->em_any_family ? "]}]" : "[]");
}

static void sample_u(struct emit *em, const char *name, const struct label *lb,
		     unsigned int nlb, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	sample(em, name, lb, nlb, buf);
}

static void sample_f(struct emit *em, const char *name, const struct label *lb,
		     unsigned int nlb, double v)
{
	char buf[48];

	snprintf(buf, sizeof(buf), "%.9g", v);
	sample(em, name, lb, nlb, buf);
}

static double ns_to_s(uint64_t ns)
{
	return (double)ns / (double)DLMD_NS_PER_SEC;
}

/* ------------------------------------------------------------------ */
/* the producer                                                        */
/* ------------------------------------------------------------------ */

/* The uint64_t at byte offset 'off' of dl's dl_metrics. */
static uint64_t ls_field(const struct dlmd_ls *dl, size_t off)
{
	return *(const uint64_t *)((const char *)&dl->dl_metrics + off);
}

/* A counter or gauge with one sample per lockspace. */
static void per_ls(struct emit *em, struct dlmd *d, const char *name,
		   const char *type, const char *help, size_t field_off)
{
	family(em, name, type, help);
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		sample_u(em, name, &lb, 1, ls_field(dl, field_off));
	}
}

#define LM_OFF(field)	offsetof(struct dlmd_ls_metrics, field)

static const char *const op_names[DLMD_OP_COUNT] = {
	[DLMD_OP_LOCK] = "lock", [DLMD_OP_CONVERT] = "convert",
	[DLMD_OP_UNLOCK] = "unlock", [DLMD_OP_CANCEL] = "cancel",
};

static void histogram(struct emit *em, const char *base, const struct label *lb,
		      unsigned int nlb, const struct dlmd_histogram *h)
{
	static const uint64_t bounds[DLMD_LAT_NBOUNDS] = DLMD_LAT_BOUNDS_NS;
	struct label all[MAX_LABELS + 1];
	char name[96], le[32];
	uint64_t cum = 0;

	memcpy(all, lb, nlb * sizeof(*lb));
	all[nlb].lb_name = "le";
	all[nlb].lb_value = le;
	snprintf(name, sizeof(name), "%s_bucket", base);
	for (unsigned int i = 0; i <= DLMD_LAT_NBOUNDS; i++) {
		cum += h->h_buckets[i];
		if (i < DLMD_LAT_NBOUNDS)
			snprintf(le, sizeof(le), "%g", ns_to_s(bounds[i]));
		else
			snprintf(le, sizeof(le), "+Inf");
		sample_u(em, name, all, nlb + 1, cum);
	}
	snprintf(name, sizeof(name), "%s_sum", base);
	sample_f(em, name, lb, nlb, ns_to_s(h->h_sum_ns));
	snprintf(name, sizeof(name), "%s_count", base);
	sample_u(em, name, lb, nlb, h->h_count);
}

static void collect_lockspaces(struct emit *em, struct dlmd *d)
{
	static const char *const states[] = {
		"running", "stopped", "recovering", "recovered",
	};
	static const enum dlm_ls_state state_vals[] = {
		DLM_LS_RUNNING, DLM_LS_STOPPED, DLM_LS_RECOVERING,
		DLM_LS_RECOVERED,
	};
	const char *name;

	name = "dlmd_lock_operations_total";
	family(em, name, "counter", "Lock operations the engine accepted from "
	       "this node's clients, by kind (op: lock, convert, unlock, cancel).");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next)
		for (unsigned int op = 0; op < DLMD_OP_COUNT; op++) {
			struct label lb[2] = { { "lockspace", dl->dl_name },
					       { "op", op_names[op] } };

			sample_u(em, name, lb, 2, dl->dl_metrics.lm_ops[op]);
		}
	per_ls(em, d, "dlmd_lock_grants_total", "counter",
	       "Lock and convert requests granted (completion ASTs with status "
	       "0 sent to a client).", LM_OFF(lm_grants));
	per_ls(em, d, "dlmd_lock_waiting_requests", "gauge",
	       "Lock and convert requests accepted whose completion has not "
	       "been sent yet.", LM_OFF(lm_waiting));
	per_ls(em, d, "dlmd_blocking_asts_total", "counter",
	       "Blocking ASTs sent to clients.", LM_OFF(lm_basts));
	name = "dlmd_lock_grant_latency_seconds";
	family(em, name, "histogram", "Time from a lock or convert request's "
	       "arrival at dlmd to its granting completion AST being queued "
	       "to the client.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		histogram(em, name, &lb, 1, &dl->dl_metrics.lm_grant_latency);
	}
	per_ls(em, d, "dlmd_recoveries_started_total", "counter",
	       "Recoveries the engine started (one per membership event, the "
	       "lockspace's first start included).", LM_OFF(lm_recoveries_started));
	per_ls(em, d, "dlmd_recoveries_completed_total", "counter",
	       "Recoveries finished: locking resumed.", LM_OFF(lm_recoveries_done));
	name = "dlmd_recovery_last_duration_seconds";
	family(em, name, "gauge", "The last recovery's duration, from the "
	       "lockspace's stop at the membership change to locking resumed.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		sample_f(em, name, &lb, 1, ns_to_s(dl->dl_metrics.lm_recovery_last_ns));
	}
	name = "dlmd_recovery_duration_seconds_total";
	family(em, name, "counter", "The durations of all finished recoveries, "
	       "summed.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		sample_f(em, name, &lb, 1, ns_to_s(dl->dl_metrics.lm_recovery_total_ns));
	}
	name = "dlmd_lockspace_state";
	family(em, name, "gauge", "The lockspace's state in the engine: 1 for "
	       "the current state (running, stopped, recovering, recovered), "
	       "0 for the others.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		enum dlm_ls_state st = dlm_core_ls_state(dl->dl_core, NULL, NULL);

		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
			struct label lb[2] = { { "lockspace", dl->dl_name },
					       { "state", states[i] } };

			sample_u(em, name, lb, 2, st == state_vals[i]);
		}
	}
	name = "dlmd_lockspace_clients";
	family(em, name, "gauge", "Client connections bound to the lockspace.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		sample_u(em, name, &lb, 1, dl->dl_nopen);
	}
	name = "dlmd_lockspace_members";
	family(em, name, "gauge", "Nodes in the lockspace's current recovery "
	       "event.");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct label lb = { "lockspace", dl->dl_name };

		sample_u(em, name, &lb, 1, dl->dl_nmembers);
	}
	{
		static const struct {
			const char	*name;
			const char	*type;
			const char	*help;
			size_t		off;
		} stats[] = {
			{ "dlmd_lockspace_locks", "gauge", "Lock blocks in "
			  "this node's engine: its clients' locks and the "
			  "master copies of other nodes' locks on resources "
			  "it masters.",
			  offsetof(struct dlm_ls_stats, ls_locks) },
			{ "dlmd_lockspace_resources", "gauge", "Resources in "
			  "this node's engine (unused ones kept for toss_secs "
			  "included).",
			  offsetof(struct dlm_ls_stats, ls_resources) },
			{ "dlmd_lockspace_orphans", "gauge", "Orphaned "
			  "persistent locks.",
			  offsetof(struct dlm_ls_stats, ls_orphans) },
			{ "dlmd_lockspace_remote_waiters", "gauge",
			  "Operations waiting for a reply from another node.",
			  offsetof(struct dlm_ls_stats, ls_waiters) },
			{ "dlmd_deadlocks_total", "counter", "Deadlocks "
			  "broken on this node: cycles of waits whose "
			  "youngest request, of a client of this node, was "
			  "cancelled with EDEADLK.",
			  offsetof(struct dlm_ls_stats, ls_deadlocks) },
			{ "dlmd_clock_rejected_total", "counter", "Messages "
			  "from members dropped because their fencing token "
			  "clock was further ahead than any member's can be, "
			  "or below the lock's token they carried "
			  "(core/token.c).",
			  offsetof(struct dlm_ls_stats, ls_clock_rejected) },
			{ "dlmd_remasters_total", "counter", "Resources this "
			  "node mastered and moved to the node that made "
			  "most of their lock requests (remaster_secs, "
			  "core/remaster.c).",
			  offsetof(struct dlm_ls_stats, ls_remasters) },
			{ "dlmd_lockspace_tossed_resources", "gauge",
			  "Unused resources kept for toss_secs (at most "
			  "max_tossed_resources).",
			  offsetof(struct dlm_ls_stats, ls_tossed) },
			{ "dlmd_toss_evictions_total", "counter", "Unused "
			  "resources dropped before toss_secs because the "
			  "lockspace kept max_tossed_resources of them.",
			  offsetof(struct dlm_ls_stats, ls_toss_evicted) },
			{ "dlmd_lockspace_folded_locks", "gauge", "Of the "
			  "lockspace's locks, those folded alone with their "
			  "resources (fold_lone_locks): lone locks on the "
			  "names this node directs, and on names others "
			  "direct whose lookup made it master.",
			  offsetof(struct dlm_ls_stats, ls_folded) },
		};

		for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
			family(em, stats[i].name, stats[i].type, stats[i].help);
			for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
				struct label lb = { "lockspace", dl->dl_name };
				struct dlm_ls_stats st;

				dlm_core_ls_stats(dl->dl_core, &st);
				sample_u(em, stats[i].name, &lb, 1,
					 *(const uint64_t *)((const char *)&st +
							     stats[i].off));
			}
		}
	}
}

/* The per-peer families, one pass over the peers per family. */
struct peer_pass {
	struct emit	*pp_em;
	const char	*pp_name;
	size_t		pp_off;		/* in struct dlmd_peer_metrics */
	bool		pp_reconnects;	/* connections after the first */
};

static void peer_sample(void *arg, const struct dlmd_peer_metrics *pm)
{
	struct peer_pass *pp = arg;
	char node[16];
	struct label lb = { "node", node };
	uint64_t v = *(const uint64_t *)((const char *)pm + pp->pp_off);

	if (pp->pp_reconnects)
		v = v ? v - 1 : 0;
	snprintf(node, sizeof(node), "%u", pm->pm_nodeid);
	sample_u(pp->pp_em, pp->pp_name, &lb, 1, v);
}

static void collect_peers(struct emit *em, struct dlmd *d)
{
	static const struct {
		const char	*name;
		const char	*help;
		size_t		off;
		bool		reconnects;
	} fams[] = {
		{ "dlmd_peer_messages_sent_total", "Engine messages queued for "
		  "the node.", offsetof(struct dlmd_peer_metrics, pm_msgs_sent),
		  false },
		{ "dlmd_peer_bytes_sent_total", "Their bytes (engine payload, "
		  "before framing and encryption).",
		  offsetof(struct dlmd_peer_metrics, pm_bytes_sent), false },
		{ "dlmd_peer_messages_received_total", "Engine messages "
		  "received from the node.",
		  offsetof(struct dlmd_peer_metrics, pm_msgs_received), false },
		{ "dlmd_peer_bytes_received_total", "Their bytes (engine "
		  "payload).", offsetof(struct dlmd_peer_metrics,
					pm_bytes_received), false },
		{ "dlmd_peer_messages_not_taken_total", "Engine messages "
		  "from the node the engine could not take (out of memory) "
		  "and that were held and offered again (each refusal).",
		  offsetof(struct dlmd_peer_metrics, pm_not_taken), false },
		{ "dlmd_peer_connections_total", "Connections to the node "
		  "established (either side opening).",
		  offsetof(struct dlmd_peer_metrics, pm_connects), false },
		{ "dlmd_peer_reconnects_total", "Connections to the node "
		  "established after the first.",
		  offsetof(struct dlmd_peer_metrics, pm_connects), true },
	};

	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		struct peer_pass pp = { em, fams[i].name, fams[i].off,
					fams[i].reconnects };

		family(em, fams[i].name, "counter", fams[i].help);
		dlmd_comms_each_peer(d, peer_sample, &pp);
	}
}

static void collect(struct emit *em, struct dlmd *d)
{
	const struct dlmd_metrics *m = &d->d_metrics;
	char version[32], proto[32];
	struct label info[2] = { { "version", version }, { "protocol", proto } };
	struct label res;

	snprintf(version, sizeof(version), "%s", PACKAGE_VERSION);
	snprintf(proto, sizeof(proto), "%d.%d.%d", DLMP_VERSION_MAJOR,
		 DLMP_VERSION_MINOR, DLMP_VERSION_PATCH);
	family(em, "dlmd_build_info", "gauge", "Always 1; the labels say "
	       "dlmd's version and its client protocol version.");
	sample_u(em, "dlmd_build_info", info, 2, 1);
	family(em, "dlmd_uptime_seconds", "gauge", "Seconds since dlmd started.");
	sample_f(em, "dlmd_uptime_seconds", NULL, 0,
		 (double)(dlmd_now_ms() - d->d_start_ms) / 1000.0);
	family(em, "dlmd_node_id", "gauge", "This node's id.");
	sample_u(em, "dlmd_node_id", NULL, 0, d->d_nodeid);
	family(em, "dlmd_quorate", "gauge", "1 while the cluster is quorate.");
	sample_u(em, "dlmd_quorate", NULL, 0, dlmd_cluster_quorate(d));
	family(em, "dlmd_lockspaces", "gauge", "Lockspaces on this node.");
	sample_u(em, "dlmd_lockspaces", NULL, 0, d->d_nlockspaces);
	family(em, "dlmd_held_messages", "gauge", "Engine messages the "
	       "engine could not take (out of memory) that wait to be offered "
	       "again: our own, and one per peer held (what the peer sent "
	       "after it waits in the peer's queue).");
	sample_u(em, "dlmd_held_messages", NULL, 0, dlmd_held(d, NULL, NULL));
	family(em, "dlmd_own_messages_not_taken_total", "counter", "Our own "
	       "engine messages the engine could not take (each refusal).");
	sample_u(em, "dlmd_own_messages_not_taken_total", NULL, 0,
		 d->d_self_not_taken);
	family(em, "dlmd_session_keys_out_of_secure_heap_total", "counter",
	       "Allocations of session-key memory that found OpenSSL's secure "
	       "heap full and went to ordinary memory (which a core dump "
	       "holds); logged once when it first happens.");
	sample_u(em, "dlmd_session_keys_out_of_secure_heap_total", NULL, 0,
		 dlmd_comms_keys_out_of_secure_heap());
	family(em, "dlmd_clients", "gauge", "Client connections (libdlm).");
	sample_u(em, "dlmd_clients", NULL, 0, dlmd_client_count(d));
	family(em, "dlmd_clients_accepted_total", "counter",
	       "Client connections accepted.");
	sample_u(em, "dlmd_clients_accepted_total", NULL, 0, d->d_nclients_total);
	family(em, "dlmd_clients_refused_total", "counter", "Client connections "
	       "refused: the user had max_clients_per_uid.");
	sample_u(em, "dlmd_clients_refused_total", NULL, 0, d->d_nrefused);
	family(em, "dlmd_clients_cut_slow_total", "counter", "Clients "
	       "disconnected because all clients' unread ASTs passed ast_queue_limit "
	       "despite backpressure (the last resort).");
	sample_u(em, "dlmd_clients_cut_slow_total", NULL, 0, d->d_ncut_slow);
	family(em, "dlmd_client_pauses_total", "counter", "Times a client's "
	       "requests were paused (backpressure) because its own unread "
	       "ASTs passed its bound.");
	sample_u(em, "dlmd_client_pauses_total", NULL, 0, d->d_npauses);
	family(em, "dlmd_clients_paused", "gauge", "Clients whose requests "
	       "wait until they read their ASTs (backpressure).");
	sample_u(em, "dlmd_clients_paused", NULL, 0, d->d_npaused);
	family(em, "dlmd_locks_refused_total", "counter", "Locks refused: the "
	       "user held max_locks_per_uid locks and orphans.");
	sample_u(em, "dlmd_locks_refused_total", NULL, 0, d->d_nrefused_locks);
	family(em, "dlmd_client_requests_total", "counter", "Request packets "
	       "from clients, of every kind, malformed ones included.");
	sample_u(em, "dlmd_client_requests_total", NULL, 0, d->d_nrequests);
	family(em, "dlmd_client_ring_requests_total", "counter", "Requests "
	       "taken from clients' shared-memory request rings.");
	sample_u(em, "dlmd_client_ring_requests_total", NULL, 0,
		 d->d_nring_requests);
	family(em, "dlmd_client_ring_kicks_total", "counter", "Kicks on "
	       "request rings: wake-ups clients asked for (the rest of the "
	       "ring requests needed none).");
	sample_u(em, "dlmd_client_ring_kicks_total", NULL, 0, d->d_nring_kicks);
	family(em, "dlmd_client_ring_catchups_total", "counter", "Request "
	       "packets (kicks included) read from the socket of a client "
	       "with a request ring that found the ring not empty (what it "
	       "held was taken first).");
	sample_u(em, "dlmd_client_ring_catchups_total", NULL, 0,
		 d->d_nring_catchups);
	family(em, "dlmd_client_bad_requests_total", "counter",
	       "Request packets that did not decode.");
	sample_u(em, "dlmd_client_bad_requests_total", NULL, 0, d->d_nbad_requests);
	family(em, "dlmd_asts_sent_total", "counter", "AST packets written "
	       "to clients (completion and blocking).");
	sample_u(em, "dlmd_asts_sent_total", NULL, 0, d->d_nasts_sent);
	family(em, "dlmd_ast_queue_bytes", "gauge", "Bytes of ASTs queued for "
	       "clients that do not read them yet.");
	sample_u(em, "dlmd_ast_queue_bytes", NULL, 0, d->d_astq_bytes);

	collect_lockspaces(em, d);

	family(em, "dlmd_fence_waits_total", "counter", "Node failures that "
	       "had to wait for fencing before recovery.");
	sample_u(em, "dlmd_fence_waits_total", NULL, 0, m->m_fence_waits);
	family(em, "dlmd_fence_forgiven_total", "counter", "Node failures "
	       "dropped unfenced: the node merged back after a split as the "
	       "same process and nobody acted on its failure (ours too).");
	sample_u(em, "dlmd_fence_forgiven_total", NULL, 0, d->d_nfence_forgiven);
	family(em, "dlmd_fence_lied_total", "counter", "Fencings that did not "
	       "stop their node: its same dlmd process was seen again after "
	       "it was counted fenced (or, on that node, this dlmd found itself "
	       "counted dead while it ran).");
	sample_u(em, "dlmd_fence_lied_total", NULL, 0, d->d_nfence_lied);
	family(em, "dlmd_fence_waiting_nodes", "gauge", "Failed nodes waiting "
	       "to be fenced now.");
	sample_u(em, "dlmd_fence_waiting_nodes", NULL, 0, dlmd_fence_waiting(d));
	family(em, "dlmd_fence_wait_seconds_total", "counter", "Time from "
	       "failure to fenced, summed over the waits that ended.");
	sample_f(em, "dlmd_fence_wait_seconds_total", NULL, 0,
		 ns_to_s(m->m_fence_wait_ns));
	family(em, "dlmd_fence_runs_total", "counter", "fence_command runs by "
	       "this node, by result (ok: exit 0, failed: otherwise).");
	res.lb_name = "result";
	res.lb_value = "ok";
	sample_u(em, "dlmd_fence_runs_total", &res, 1, m->m_fence_runs_ok);
	res.lb_value = "failed";
	sample_u(em, "dlmd_fence_runs_total", &res, 1, m->m_fence_runs_failed);
	family(em, "dlmd_fence_timeouts_total", "counter", "fence_command runs "
	       "that were still running after fence_timeout_secs (each one "
	       "also a failed run).");
	sample_u(em, "dlmd_fence_timeouts_total", NULL, 0, m->m_fence_timeouts);
	family(em, "dlmd_fence_unreaped_commands", "gauge", "fence_command runs "
	       "given up on after SIGKILL that have not ended yet.");
	sample_u(em, "dlmd_fence_unreaped_commands", NULL, 0,
		 dlmd_fence_unreaped(d));
	family(em, "dlmd_closes_interrupted_total", "counter", "closes of fds "
	       "passed by clients that took a second or more and were "
	       "signalled to end (a FUSE file's close does not).");
	sample_u(em, "dlmd_closes_interrupted_total", NULL, 0,
		 dlmd_client_reap_interrupted());

	collect_peers(em, d);
	emit_end(em);
}

void dlmd_metrics_prometheus(struct dlmd *d, struct dlmd_sbuf *sb)
{
	struct emit em = { sb, false, false, false };

	collect(&em, d);
}

void dlmd_metrics_json(struct dlmd *d, struct dlmd_sbuf *sb)
{
	struct emit em = { sb, true, false, false };

	collect(&em, d);
}
