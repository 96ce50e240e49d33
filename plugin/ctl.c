/*
 * plugin/ctl.c - the control socket that dlmctl talks to.
 *
 * Protocol: a SOCK_STREAM unix socket at control_socket (mode 0600, owned
 * by root: only root may inspect or steer the daemon).  The client writes
 * one line, "VERB [ARG]\n", at most CTL_REQ_MAX bytes; the daemon answers
 * with a status line and a body, then closes the connection:
 *
 *     OK\n<body>                 success
 *     ERR <errno> <message>\n    failure
 *
 * Verbs: "ls", "ls-json", "status", "status-json" (the latter with every
 * metric, key "metrics": plugin/metrics.c), "metrics" (the same numbers in
 * the Prometheus text format), "dump" (the flight
 * recorder), "config" (the effective dlm.conf), "lockdump NAME" (the
 * engine's dump of a lockspace), "join NAME" (create the lockspace, mode
 * 0600, like dlm_tool join; it joins the lockspace's group and shows up
 * in "ls" with what it waits for), "leave NAME" (release it; refused
 * while a client has it open or it holds orphans), "leave-force NAME"
 * (release it regardless, dropping those locks) and
 * "fence_ack NODEID" (an operator declares a failed node fenced; refused
 * for a node that is a member of the current cluster view: it is alive)
 * and "debug_frames_lost NODEID" (a test hook: the daemon acts as if
 * lowcomms had found frames from the node lost, see plugin/cluster.c).
 * A failing verb may put its own message in the body: it replaces
 * strerror's in the ERR line.
 * The reply is built whole, then written without blocking; what the
 * socket does not take at once waits for POLLOUT, so a slow dlmctl never
 * stalls lock clients.  A request line not finished within CTL_REQ_MAX
 * bytes is answered with an error.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define CTL_REQ_MAX	512
#define CTL_MODE	0600

struct dlmd_ctl_conn {
	struct dlmd_ctl_conn	*cc_next;
	struct dlmd		*cc_d;
	int			cc_fd;
	char			cc_req[CTL_REQ_MAX + 1];
	size_t			cc_reqlen;
	char			*cc_out;
	bool			cc_out_lent;	/* cc_out is ctl_out_spare */
	size_t			cc_outlen;
	size_t			cc_outoff;
};

/*
 * OUT OF MEMORY.  A daemon short of memory is when an operator asks what
 * it does (comms.c's HOLD shows in "status"), so the control socket
 * answers then too, one connection at a time: a connection that cannot
 * be allocated is ctl_conn_spare, and a reply or its body that cannot
 * grow goes on in a static buffer lent to it (struct dlmd_sbuf's
 * sb_spare): the body's is needed only while the verb runs, the reply's
 * until it is written.  A reply that does not fit either is not sent
 * (the connection closes, as before).
 */
#define CTL_SPARE_LEN	(64 * 1024)
static struct dlmd_ctl_conn ctl_conn_spare;
static bool ctl_conn_spare_busy;
static char ctl_body_spare[CTL_SPARE_LEN];
static char ctl_out_spare[CTL_SPARE_LEN];
static bool ctl_out_spare_busy;

void dlmd_sb_printf(struct dlmd_sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->sb_oom)
		return;
	for (int pass = 0; pass < 2; pass++) {
		size_t room = sb->sb_cap - sb->sb_len;

		va_start(ap, fmt);
		n = vsnprintf(sb->sb_s ? sb->sb_s + sb->sb_len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			sb->sb_oom = true;
			return;
		}
		if ((size_t)n < room) {
			sb->sb_len += (size_t)n;
			return;
		}
		size_t cap = (sb->sb_cap ? sb->sb_cap : 256);

		while (cap < sb->sb_len + (size_t)n + 1)
			cap *= 2;
		char *s = sb->sb_lent ? NULL : realloc(sb->sb_s, cap);

		if (!s && !sb->sb_lent && sb->sb_spare &&
		    sb->sb_spare_cap >= sb->sb_len + (size_t)n + 1) {
			/* out of memory: on in the lent buffer */
			if (sb->sb_len)
				memcpy(sb->sb_spare, sb->sb_s, sb->sb_len);
			free(sb->sb_s);
			s = sb->sb_spare;
			cap = sb->sb_spare_cap;
			sb->sb_lent = true;
		}
		if (!s) {
			sb->sb_oom = true;
			return;
		}
		sb->sb_s = s;
		sb->sb_cap = cap;
	}
}

void dlmd_sb_free(struct dlmd_sbuf *sb)
{
	if (!sb->sb_lent)
		free(sb->sb_s);
	sb->sb_s = NULL;
}

void dlmd_json_str(struct dlmd_sbuf *sb, const char *s)
{
	dlmd_sb_printf(sb, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			dlmd_sb_printf(sb, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			dlmd_sb_printf(sb, "\\u%04x", ch);
		else
			dlmd_sb_printf(sb, "%c", ch);
	}
	dlmd_sb_printf(sb, "\"");
}

/* ------------------------------------------------------------------ */
/* verbs                                                               */
/* ------------------------------------------------------------------ */

static int verb_ls(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	bool first = true;

	if (json)
		dlmd_sb_printf(sb, "[");
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlm_ls_stats st;
		struct dlmd_ls_view v;

		dlm_core_ls_stats(dl->dl_core, &st);
		dlmd_cluster_ls_describe(d, dl, &v);
		if (json) {
			dlmd_sb_printf(sb, "%s{\"name\":", first ? "" : ",");
			dlmd_json_str(sb, dl->dl_name);
			dlmd_sb_printf(sb, ",\"id\":\"%08x\",\"state\":\"%s\","
				  "\"event\":%u,\"wait\":", dlm_core_ls_id(dl->dl_core),
				  v.lv_state, v.lv_event);
			dlmd_json_str(sb, v.lv_wait);
			dlmd_sb_printf(sb, ",\"members\":[");
			for (unsigned int i = 0; i < dl->dl_nmembers; i++)
				dlmd_sb_printf(sb, "%s%u", i ? "," : "", dl->dl_members[i]);
			dlmd_sb_printf(sb, "],\"group\":[");
			for (unsigned int i = 0; i < v.lv_ngroup; i++)
				dlmd_sb_printf(sb, "%s%u", i ? "," : "", v.lv_group[i]);
			dlmd_sb_printf(sb, "],\"clients\":%u,\"resources\":%llu,"
				  "\"locks\":%llu,\"orphans\":%llu,\"mode\":\"0%o\","
				  "\"deadlocks\":%llu,\"last_victim\":\"%08x\","
				  "\"clock_rejected\":%llu,\"remasters\":%llu}",
				  dl->dl_nopen, (unsigned long long)st.ls_resources,
				  (unsigned long long)st.ls_locks,
				  (unsigned long long)st.ls_orphans,
				  (unsigned)dl->dl_mode,
				  (unsigned long long)st.ls_deadlocks,
				  st.ls_last_victim,
				  (unsigned long long)st.ls_clock_rejected,
				  (unsigned long long)st.ls_remasters);
		} else {
			dlmd_sb_printf(sb, "name %s id %08x state %s members",
				  dl->dl_name, dlm_core_ls_id(dl->dl_core), v.lv_state);
			for (unsigned int i = 0; i < dl->dl_nmembers; i++)
				dlmd_sb_printf(sb, " %u", dl->dl_members[i]);
			dlmd_sb_printf(sb, " clients %u resources %llu locks %llu "
				  "orphans %llu event %u group", dl->dl_nopen,
				  (unsigned long long)st.ls_resources,
				  (unsigned long long)st.ls_locks,
				  (unsigned long long)st.ls_orphans, v.lv_event);
			for (unsigned int i = 0; i < v.lv_ngroup; i++)
				dlmd_sb_printf(sb, " %u", v.lv_group[i]);
			dlmd_sb_printf(sb, "\n  wait %s\n", v.lv_wait);
			/* core/deadlock.c: victims chosen on this node */
			dlmd_sb_printf(sb, "  deadlocks %llu last_victim %08x\n",
				  (unsigned long long)st.ls_deadlocks,
				  st.ls_last_victim);
			/* core/token.c: messages dropped for a token clock
			 * no member can have; none on a healthy cluster */
			if (st.ls_clock_rejected)
				dlmd_sb_printf(sb, "  clock_rejected %llu\n",
					  (unsigned long long)st.ls_clock_rejected);
			/* core/remaster.c: resources this node mastered
			 * and moved to the node that used them; only with
			 * remaster_secs */
			if (st.ls_remasters)
				dlmd_sb_printf(sb, "  remasters %llu\n",
					  (unsigned long long)st.ls_remasters);
		}
		first = false;
	}
	if (json)
		dlmd_sb_printf(sb, "]\n");
	return 0;
}

/* The metrics endpoint: "none", "ADDR" (listening) or "ADDR (failed)". */
static const char *metrics_state(const struct dlmd *d)
{
	static char buf[DLMD_SUN_PATH_MAX + 16];

	if (!d->d_cfg.cf_metrics_listen[0])
		return "none";
	snprintf(buf, sizeof(buf), "%s%s", d->d_cfg.cf_metrics_listen,
		 d->d_metrics_fd >= 0 ? "" : " (failed)");
	return buf;
}

/* A counter of struct dlm_ls_stats (its offset), summed over every
 * lockspace: ls_deadlocks, the deadlock victims chosen on this node
 * (core/deadlock.c), ls_clock_rejected, the messages dropped for
 * their token clock (core/token.c), ls_remasters, the resources moved
 * away from this node (core/remaster.c), ls_tossed and ls_toss_evicted,
 * the unused resources kept and those dropped early for max_tossed
 * (core/resource.c), ls_folded, the lone locks folded with their
 * resources (core/solo.c). */
static unsigned long long stats_total(const struct dlmd *d, size_t off)
{
	unsigned long long n = 0;

	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlm_ls_stats st;

		dlm_core_ls_stats(dl->dl_core, &st);
		n += *(const uint64_t *)((const char *)&st + off);
	}
	return n;
}

/* A counter of "status": "name value" lines, or ,"name":value in JSON. */
struct ctl_counter {
	const char		*cc_name;
	unsigned long long	cc_value;
};

static void put_counters(struct dlmd_sbuf *sb, bool json,
			 const struct ctl_counter *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (json)
			dlmd_sb_printf(sb, ",\"%s\":%llu", c[i].cc_name,
				       c[i].cc_value);
		else
			dlmd_sb_printf(sb, "%s %llu\n", c[i].cc_name,
				       c[i].cc_value);
	}
}

/* "status" shows a peer's unacknowledged wait from this long on: a live
 * peer acks within milliseconds, so seconds mean a cut path or a dlmd
 * that does not run (plugin/cluster.c, UNREACHABLE PEERS). */
#define CTL_UNACKED_SHOW_MS	3000

/* The peers whose oldest frame has waited CTL_UNACKED_SHOW_MS or more
 * without an ack, "unacked 2(12 s) 3(4 s)", and those our last UNREACH
 * reported to the daemon group, "unreachable 2"; "none" for neither.
 * In JSON each node of "nodes" carries its wait (unacked_ms, whatever
 * it is) and the report (unreachable), and "unreachable" lists them. */
static void put_peers(struct dlmd *d, struct dlmd_sbuf *sb,
		      const uint32_t *nodes, unsigned int n)
{
	uint32_t unr[DLM_MAX_NODES];
	unsigned int nunr = dlmd_cluster_unreachable(d, unr, DLM_MAX_NODES);
	bool any = false;

	dlmd_sb_printf(sb, "\nunacked");
	for (unsigned int i = 0; i < n; i++) {
		uint64_t w = dlmd_comms_wait_ms(d, nodes[i]);

		if (w < CTL_UNACKED_SHOW_MS)
			continue;
		dlmd_sb_printf(sb, " %u(%llu s)", nodes[i],
			       (unsigned long long)(w / 1000));
		any = true;
	}
	if (!any)
		dlmd_sb_printf(sb, " none");
	dlmd_sb_printf(sb, "\nunreachable");
	for (unsigned int i = 0; i < nunr; i++)
		dlmd_sb_printf(sb, " %u", unr[i]);
	if (!nunr)
		dlmd_sb_printf(sb, " none");
}

static bool id_listed(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* "paused_client ..." lines (text) or JSON objects, one per client
 * paused for its unread ASTs (client.c "Backpressure"). */
struct paused_out {
	struct dlmd_sbuf	*po_sb;
	bool			po_json;
	bool			po_first;
};

static void put_paused(void *arg, const struct dlmd_paused_client *pc)
{
	struct paused_out *po = arg;

	if (po->po_json)
		dlmd_sb_printf(po->po_sb, "%s{\"pid\":%d,\"uid\":%u,\"serial\":%u,"
			       "\"queued_asts\":%u}", po->po_first ? "" : ",",
			       (int)pc->pc_pid, (unsigned)pc->pc_uid,
			       pc->pc_serial, pc->pc_queued_asts);
	else
		dlmd_sb_printf(po->po_sb, "paused_client pid %d uid %u serial %u "
			       "queued_asts %u\n", (int)pc->pc_pid,
			       (unsigned)pc->pc_uid, pc->pc_serial,
			       pc->pc_queued_asts);
	po->po_first = false;
}

static int verb_status(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	struct paused_out pl = { sb, json, true };
	uint32_t nodes[DLM_MAX_NODES];
	unsigned int n = dlmd_cluster_nodes(d, nodes, DLM_MAX_NODES);
	unsigned long long up = (unsigned long long)((dlmd_now_ms() - d->d_start_ms) / 1000);
	const struct ctl_counter reqs[] = {
		{ "requests", d->d_nrequests },
		{ "bad_requests", d->d_nbad_requests },
		{ "ring_requests", d->d_nring_requests },
		{ "ring_kicks", d->d_nring_kicks },
		{ "ring_catchups", d->d_nring_catchups },
		{ "ring_answers", d->d_nans_ring },
		{ "ring_answer_wakes", d->d_nans_wakes },
		{ "ring_answers_full", d->d_nans_full },
		{ "ring_watch_ends", d->d_nwatch_sleeps },
		{ "ring_watch_yields_long", d->d_nwatch_yields_long },
		{ "ring_sleeps", d->d_nring_sleeps },
		{ "ring_socket_locks", d->d_nring_socket_locks },
		{ "asts_sent", d->d_nasts_sent },
		{ "ast_queue_bytes", d->d_astq_bytes },
		{ "ast_sockets_raised", d->d_nast_raised },
		{ "clients_refused", d->d_nrefused },
		{ "clients_cut_slow", d->d_ncut_slow },
		{ "client_pauses", d->d_npauses },
		{ "clients_paused", d->d_npaused },
		{ "locks_refused", d->d_nrefused_locks },
		{ "fence_timeouts", d->d_metrics.m_fence_timeouts },
		{ "fence_unreaped", dlmd_fence_unreaped(d) },
		{ "closes_interrupted", dlmd_client_reap_interrupted() },
		{ "log_lines_dropped", dlmd_log_dropped() },
		{ "requests_fd_lost", d->d_nfd_lost },
		{ "cpg_unverified", d->d_ncpg_unverified },
		{ "fence_forgiven", d->d_nfence_forgiven },
		{ "fence_lied", d->d_nfence_lied },
	};
	/* the engine's, summed over the lockspaces */
	const struct ctl_counter engine[] = {
		{ "deadlocks",
		  stats_total(d, offsetof(struct dlm_ls_stats, ls_deadlocks)) },
		{ "clock_rejected",
		  stats_total(d, offsetof(struct dlm_ls_stats,
					  ls_clock_rejected)) },
		{ "remasters",
		  stats_total(d, offsetof(struct dlm_ls_stats, ls_remasters)) },
		{ "tossed",
		  stats_total(d, offsetof(struct dlm_ls_stats, ls_tossed)) },
		{ "toss_evictions",
		  stats_total(d, offsetof(struct dlm_ls_stats,
					  ls_toss_evicted)) },
		{ "folded_locks",
		  stats_total(d, offsetof(struct dlm_ls_stats, ls_folded)) },
	};

	if (json) {
		uint32_t unr[DLM_MAX_NODES];
		unsigned int nunr = dlmd_cluster_unreachable(d, unr, DLM_MAX_NODES);

		dlmd_sb_printf(sb, "{\"pid\":%d,\"nodeid\":%u,\"membership\":\"%s\","
			  "\"quorate\":%s,\"nodes\":[", (int)getpid(), d->d_nodeid,
			  dlmd_cluster_source_str(d),
			  dlmd_cluster_quorate(d) ? "true" : "false");
		for (unsigned int i = 0; i < n; i++) {
			dlmd_sb_printf(sb, "%s{\"nodeid\":%u,\"addr\":", i ? "," : "", nodes[i]);
			dlmd_json_str(sb, dlmd_cluster_node_addr(d, nodes[i]));
			dlmd_sb_printf(sb, ",\"unacked_ms\":%llu,\"unreachable\":%s}",
				       (unsigned long long)dlmd_comms_wait_ms(d, nodes[i]),
				       id_listed(unr, nunr, nodes[i]) ? "true" : "false");
		}
		dlmd_sb_printf(sb, "],\"unreachable\":[");
		for (unsigned int i = 0; i < nunr; i++)
			dlmd_sb_printf(sb, "%s%u", i ? "," : "", unr[i]);
		dlmd_sb_printf(sb, "],\"lockspaces\":%u,\"clients\":%u,"
			  "\"uptime_secs\":%llu", d->d_nlockspaces,
			  dlmd_client_count(d), up);
		put_counters(sb, json, reqs, sizeof(reqs) / sizeof(reqs[0]));
		dlmd_sb_printf(sb, ",\"protocol\":\"%d.%d.%d\",\"configfs\":",
			  DLMP_VERSION_MAJOR, DLMP_VERSION_MINOR,
			  DLMP_VERSION_PATCH);
		dlmd_json_str(sb, dlmd_view_state(d));
		dlmd_sb_printf(sb, ",\"configfs_dir\":");
		dlmd_json_str(sb, d->d_cfg.cf_configfs_dir);
		dlmd_sb_printf(sb, ",\"socket\":");
		dlmd_json_str(sb, d->d_cfg.cf_socket_path);
		put_counters(sb, json, engine, sizeof(engine) / sizeof(engine[0]));
		dlmd_sb_printf(sb, ",\"paused_clients\":[");
		dlmd_client_each_paused(d, put_paused, &pl);
		dlmd_sb_printf(sb, "],\"metrics_listen\":");
		dlmd_json_str(sb, metrics_state(d));
		/* every metric, as GET /metrics has them (metrics.c) */
		dlmd_sb_printf(sb, ",\"metrics\":");
		dlmd_metrics_json(d, sb);
		dlmd_sb_printf(sb, "}\n");
		return 0;
	}
	dlmd_sb_printf(sb, "pid %d\nnodeid %u\nmembership %s\nquorate %s\nnodes",
		  (int)getpid(), d->d_nodeid, dlmd_cluster_source_str(d),
		  dlmd_cluster_quorate(d) ? "yes" : "no");
	for (unsigned int i = 0; i < n; i++)
		dlmd_sb_printf(sb, " %u(%s)", nodes[i], dlmd_cluster_node_addr(d, nodes[i]));
	{
		char comms[512];	/* the comms line: ~130 letters, 9 numbers of up to 20 digits */

		dlmd_comms_status(d, comms, sizeof(comms));
		dlmd_sb_printf(sb, "\ncomms %s", comms);
		put_peers(d, sb, nodes, n);
		dlmd_fence_status(d, comms, sizeof(comms));
		dlmd_sb_printf(sb, "\nfencing %s", comms);
	}
	dlmd_sb_printf(sb, "\nlockspaces %u\nclients %u\nuptime %llu s\n",
		  d->d_nlockspaces, dlmd_client_count(d), up);
	put_counters(sb, json, reqs, sizeof(reqs) / sizeof(reqs[0]));
	dlmd_sb_printf(sb, "protocol %d.%d.%d\nsocket %s\nconfigfs %s %s\nmetrics %s\n",
		  DLMP_VERSION_MAJOR, DLMP_VERSION_MINOR, DLMP_VERSION_PATCH,
		  d->d_cfg.cf_socket_path,
		  d->d_cfg.cf_configfs_dir[0] ? d->d_cfg.cf_configfs_dir : "-",
		  dlmd_view_state(d), metrics_state(d));
	put_counters(sb, json, engine, sizeof(engine) / sizeof(engine[0]));
	dlmd_client_each_paused(d, put_paused, &pl);
	return 0;
}

/* Every metric in the Prometheus text format, as GET /metrics answers
 * (there is no endpoint unless dlm.conf asks for one; this always works). */
static int verb_metrics(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb,
			bool json)
{
	dlmd_metrics_prometheus(d, sb);
	return 0;
}

static int verb_dump(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	char *s = dlmd_log_flight_dump();

	if (!s)
		return -ENOMEM;
	dlmd_sb_printf(sb, "%s", s);
	free(s);
	return 0;
}

static int verb_config(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	char *s = dlmd_config_dump(&d->d_cfg);

	if (!s)
		return -ENOMEM;
	dlmd_sb_printf(sb, "%s", s);
	free(s);
	return 0;
}

/* The lockspace named 'arg', or NULL with "no lockspace 'NAME'" in 'sb'
 * (the ERR line's message: strerror's "No such file or directory" names
 * nothing an operator can look for). */
static struct dlmd_ls *find_ls(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb)
{
	struct dlmd_ls *dl = dlmd_ls_find(d, arg);

	if (!dl) {
		char safe[DLMD_ESCAPED_SIZE(CTL_REQ_MAX)];

		dlmd_sb_printf(sb, "no lockspace '%s'",
			  dlmd_escape(arg, safe, sizeof(safe)));
	}
	return dl;
}

static int verb_lockdump(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	struct dlmd_ls *dl = find_ls(d, arg, sb);
	char *text = NULL;
	int rv;

	if (!dl)
		return -ENOENT;
	rv = dlm_core_ls_dump(dl->dl_core, &text);
	if (rv)
		return rv;
	dlmd_sb_printf(sb, "%s", text);
	free(text);
	return 0;
}

static int verb_join(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	struct dlmd_ls *dl;

	if (!*arg || strlen(arg) > DLM_LOCKSPACE_LEN)
		return -EINVAL;
	/* a stop was granted: nothing new to leave (client.c stop_refuses) */
	if (d->d_stop_accepted)
		return -ESHUTDOWN;
	return dlmd_ls_create(d, arg, CTL_MODE, 0, 0, false, &dl);
}

/*
 * "leave": the lockspace goes, with whatever creates of it remain, but
 * only when nobody uses it: releasing it under a client's granted lock
 * would let another node take that lock while the client still believes
 * it holds it.  So a client connection or an orphaned lock makes it
 * -EBUSY, naming them.  "leave-force" releases it regardless (the
 * clients' locks are dropped and their connections unbound), logged.
 */
static int leave(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool force)
{
	struct dlmd_ls *dl = find_ls(d, arg, sb);
	struct dlm_ls_stats st;

	if (!dl)
		return -ENOENT;
	dlm_core_ls_stats(dl->dl_core, &st);
	if (dlmd_ls_in_use(dl)) {
		if (!force) {
			dlmd_sb_printf(sb, "lockspace %s is in use: %u client connections, "
				  "%llu orphaned locks; stop its users (or adopt or "
				  "purge the orphans) first, or leave --force",
				  dl->dl_name, dl->dl_nopen,
				  (unsigned long long)st.ls_orphans);
			log_warn("control: leave %s refused: in use (%u client "
				 "connections, %llu orphaned locks)", dl->dl_name,
				 dl->dl_nopen, (unsigned long long)st.ls_orphans);
			return -EBUSY;
		}
		log_warn("control: leave --force %s: dropping the locks of %u "
			 "client connections and %llu orphaned locks", dl->dl_name,
			 dl->dl_nopen, (unsigned long long)st.ls_orphans);
	}
	return dlmd_ls_release(d, dl, true, NULL);
}

static int verb_leave(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb, bool json)
{
	return leave(d, arg, sb, false);
}

static int verb_leave_force(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb,
			    bool json)
{
	return leave(d, arg, sb, true);
}

static int verb_fence_ack(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb,
			  bool json)
{
	char *end;
	unsigned long id = strtoul(arg, &end, 10);

	char why[160];
	int rv;

	if (*end || !id || id > UINT32_MAX) {
		char safe[DLMD_ESCAPED_SIZE(CTL_REQ_MAX)];

		dlmd_sb_printf(sb, "'%s' is not a node id",
			  dlmd_escape(arg, safe, sizeof(safe)));
		return -EINVAL;
	}
	rv = dlmd_fence_ack(d, (uint32_t)id, why, sizeof(why));
	if (rv)
		dlmd_sb_printf(sb, "%s", why);
	return rv;
}

/* A test hook: act as if lowcomms had found frames from the node lost
 * (what plugin/cluster.c does then is the policy under test). */
static int verb_debug_frames_lost(struct dlmd *d, const char *arg,
				  struct dlmd_sbuf *sb, bool json)
{
	char *end;
	unsigned long id = strtoul(arg, &end, 10);

	if (*end || !id || id > UINT32_MAX || id == d->d_nodeid)
		return -EINVAL;
	log_warn("control: debug_frames_lost %lu (a test of the policy)", id);
	dlmd_cluster_frames_lost(d, (uint32_t)id);
	return 0;
}

static int verb_debug_recovery_fail(struct dlmd *d, const char *arg,
				    struct dlmd_sbuf *sb, bool json)
{
	log_warn("control: debug_recovery_fail (a test of the recovery retry)");
	dlm_core_set_fault(d->d_core, DLM_FAULT_RECOVERY_FAIL_ONCE);
	return 0;
}

struct ctl_verb {
	const char	*cv_name;
	bool		cv_needs_arg;
	bool		cv_json;
	int		(*cv_fn)(struct dlmd *d, const char *arg, struct dlmd_sbuf *sb,
				 bool json);
};

static const struct ctl_verb verbs[] = {
	{ "ls", false, false, verb_ls },
	{ "ls-json", false, true, verb_ls },
	{ "status", false, false, verb_status },
	{ "status-json", false, true, verb_status },
	{ "dump", false, false, verb_dump },
	{ "config", false, false, verb_config },
	{ "metrics", false, false, verb_metrics },
	{ "lockdump", true, false, verb_lockdump },
	{ "join", true, false, verb_join },
	{ "leave", true, false, verb_leave },
	{ "leave-force", true, false, verb_leave_force },
	{ "fence_ack", true, false, verb_fence_ack },
	{ "debug_frames_lost", true, false, verb_debug_frames_lost },
	{ "debug_recovery_fail", false, false, verb_debug_recovery_fail },
};

static void ctl_execute(struct dlmd *d, char *line, struct dlmd_sbuf *out)
{
	struct dlmd_sbuf body = { .sb_spare = ctl_body_spare,
				  .sb_spare_cap = sizeof(ctl_body_spare) };
	const struct ctl_verb *v = NULL;
	char *arg = strchr(line, ' ');
	int rv;

	if (arg)
		*arg++ = '\0';
	else
		arg = line + strlen(line);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(verbs[i].cv_name, line))
			v = &verbs[i];
	if (!v) {
		char safe[DLMD_ESCAPED_SIZE(64)];

		dlmd_sb_printf(out, "ERR %d unknown command '%s'\n", EINVAL,
			  dlmd_escape(line, safe, sizeof(safe)));
		return;
	}
	if (v->cv_needs_arg && !*arg) {
		dlmd_sb_printf(out, "ERR %d %s needs an argument\n", EINVAL, line);
		return;
	}
	{
		char safe[DLMD_ESCAPED_SIZE(CTL_REQ_MAX)];

		log_debug("control: %s %s", line, dlmd_escape(arg, safe, sizeof(safe)));
	}
	rv = v->cv_fn(d, arg, &body, v->cv_json);
	if (!rv && body.sb_oom)
		rv = -ENOMEM;
	if (rv && body.sb_len && !body.sb_oom)
		dlmd_sb_printf(out, "ERR %d %s\n", -rv, body.sb_s);
	else if (rv)
		dlmd_sb_printf(out, "ERR %d %s\n", -rv, strerror(-rv));
	else
		dlmd_sb_printf(out, "OK\n%s", body.sb_s ? body.sb_s : "");
	dlmd_sb_free(&body);
}

/* One request line (without its newline) answered as the socket would
 * answer it: malloc'd "OK\n<body>" or "ERR <errno> <message>\n", NULL
 * when out of memory.  For tests/fuzz-ctl.c. */
char *dlmd_ctl_answer(struct dlmd *d, char *line)
{
	struct dlmd_sbuf out = { 0 };

	ctl_execute(d, line, &out);
	if (out.sb_oom) {
		free(out.sb_s);
		return NULL;
	}
	return out.sb_s;
}

/* ------------------------------------------------------------------ */
/* connections                                                         */
/* ------------------------------------------------------------------ */

static void ctl_close(struct dlmd_ctl_conn *cc)
{
	struct dlmd *d = cc->cc_d;

	for (struct dlmd_ctl_conn **pp = &d->d_ctl_conns; *pp; pp = &(*pp)->cc_next) {
		if (*pp == cc) {
			*pp = cc->cc_next;
			break;
		}
	}
	qb_loop_poll_del(d->d_loop, cc->cc_fd);
	close(cc->cc_fd);
	if (cc->cc_out_lent)
		ctl_out_spare_busy = false;
	else
		free(cc->cc_out);
	if (cc == &ctl_conn_spare)
		ctl_conn_spare_busy = false;
	else
		free(cc);
}

int dlmd_send_rest(int fd, const char *buf, size_t len, size_t *off)
{
	while (*off < len) {
		ssize_t n = send(fd, buf + *off, len - *off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		*off += (size_t)n;
	}
	return 1;
}

static int ctl_ready(int32_t fd, int32_t revents, void *data);

static void ctl_write(struct dlmd_ctl_conn *cc)
{
	if (dlmd_send_rest(cc->cc_fd, cc->cc_out, cc->cc_outlen,
			   &cc->cc_outoff) == 0) {
		qb_loop_poll_mod(cc->cc_d->d_loop, QB_LOOP_LOW, cc->cc_fd,
				 POLLOUT, cc, ctl_ready);
		return;
	}
	ctl_close(cc);
}

static int ctl_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_ctl_conn *cc = data;
	struct dlmd_sbuf out = { 0 };
	char *nl;
	ssize_t n;

	if (!ctl_out_spare_busy) {
		out.sb_spare = ctl_out_spare;
		out.sb_spare_cap = sizeof(ctl_out_spare);
	}

	if (cc->cc_out) {
		ctl_write(cc);
		return 0;
	}
	n = recv(fd, cc->cc_req + cc->cc_reqlen, CTL_REQ_MAX - cc->cc_reqlen,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) {
		ctl_close(cc);
		return 0;
	}
	cc->cc_reqlen += (size_t)n;
	cc->cc_req[cc->cc_reqlen] = '\0';
	nl = memchr(cc->cc_req, '\n', cc->cc_reqlen);
	if (!nl && cc->cc_reqlen < CTL_REQ_MAX)
		return 0;
	if (!nl || memchr(cc->cc_req, '\0', (size_t)(nl - cc->cc_req)))
		dlmd_sb_printf(&out, "ERR %d request line too long or malformed\n", EINVAL);
	else {
		*nl = '\0';
		ctl_execute(cc->cc_d, cc->cc_req, &out);
	}
	if (out.sb_oom || !out.sb_s) {
		dlmd_sb_free(&out);
		ctl_close(cc);
		return 0;
	}
	cc->cc_out = out.sb_s;
	cc->cc_out_lent = out.sb_lent;
	if (out.sb_lent)
		ctl_out_spare_busy = true;
	cc->cc_outlen = out.sb_len;
	ctl_write(cc);
	return 0;
}

static void accept_resume(void *data)
{
	struct dlmd_accept_pause *ap = data;

	ap->ap_timer = 0;
	if (*ap->ap_fd >= 0 &&
	    qb_loop_poll_add(ap->ap_loop, QB_LOOP_LOW, *ap->ap_fd, POLLIN,
			     ap->ap_data, ap->ap_accept))
		qb_loop_timer_add(ap->ap_loop, QB_LOOP_LOW,
				  DLMD_ACCEPT_PAUSE_MS * 1000000ULL, ap,
				  accept_resume, &ap->ap_timer);
}

int dlmd_accept(struct dlmd_accept_pause *ap)
{
	int cfd = accept4(*ap->ap_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd >= 0 || errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR || errno == ECONNABORTED)
		return cfd;
	/* Out of fds (the client socket logs that): the connection stays
	 * queued, so wait rather than be called again at once. */
	qb_loop_poll_del(ap->ap_loop, *ap->ap_fd);
	qb_loop_timer_add(ap->ap_loop, QB_LOOP_LOW,
			  DLMD_ACCEPT_PAUSE_MS * 1000000ULL, ap, accept_resume,
			  &ap->ap_timer);
	return -1;
}

void dlmd_accept_unpause(struct dlmd_accept_pause *ap)
{
	if (ap->ap_timer) {
		qb_loop_timer_del(ap->ap_loop, ap->ap_timer);
		ap->ap_timer = 0;
	}
}

static int ctl_accept(int32_t fd, int32_t revents, void *data)
{
	struct dlmd *d = data;
	struct dlmd_ctl_conn *cc;
	int cfd = dlmd_accept(&d->d_ctl_pause);

	if (cfd < 0)
		return 0;
	cc = calloc(1, sizeof(*cc));
	if (!cc && !ctl_conn_spare_busy) {
		/* OUT OF MEMORY: the spare */
		cc = &ctl_conn_spare;
		memset(cc, 0, sizeof(*cc));
		ctl_conn_spare_busy = true;
	}
	if (!cc) {
		close(cfd);
		return 0;
	}
	cc->cc_d = d;
	cc->cc_fd = cfd;
	if (qb_loop_poll_add(d->d_loop, QB_LOOP_LOW, cfd, POLLIN, cc, ctl_ready)) {
		close(cfd);
		if (cc == &ctl_conn_spare)
			ctl_conn_spare_busy = false;
		else
			free(cc);
		return 0;
	}
	cc->cc_next = d->d_ctl_conns;
	d->d_ctl_conns = cc;
	return 0;
}

int dlmd_ctl_listen(struct dlmd *d)
{
	const char *path = d->d_cfg.cf_ctl_socket_path;
	struct sockaddr_un sa;
	int fd, rv;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Owner-only from the start: nobody else connects, ever. */
	rv = dlmd_bind_unix(fd, (struct sockaddr *)&sa, sizeof(sa), CTL_MODE);
	if (!rv && listen(fd, 16) < 0)
		rv = -errno;
	if (rv < 0) {
		log_err("control socket %s: %s", path, strerror(-rv));
		close(fd);
		return rv;
	}
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_LOW, fd, POLLIN, d, ctl_accept);
	if (rv) {
		close(fd);
		return rv;
	}
	d->d_ctl_fd = fd;
	d->d_ctl_pause = (struct dlmd_accept_pause){ d->d_loop, &d->d_ctl_fd,
						     ctl_accept, d, 0 };
	return 0;
}

void dlmd_ctl_fini(struct dlmd *d)
{
	while (d->d_ctl_conns)
		ctl_close(d->d_ctl_conns);
	dlmd_accept_unpause(&d->d_ctl_pause);
	if (d->d_ctl_fd >= 0) {
		qb_loop_poll_del(d->d_loop, d->d_ctl_fd);
		close(d->d_ctl_fd);
		unlink(d->d_cfg.cf_ctl_socket_path);
		d->d_ctl_fd = -1;
	}
}
