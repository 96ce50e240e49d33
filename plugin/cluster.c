/*
 * plugin/cluster.c - the daemon's glue to the cluster stack (corosync).
 *
 * What comes from where:
 *
 *   our node id      corosync_cfg_local_get() (cfg); cross-checked with
 *                    cmap's nodelist.local_node_pos entry
 *   node list        cmap nodelist.node.<idx>.nodeid (idx is not the id)
 *   quorum           libquorum, tracked for the whole life of the daemon
 *   daemon group     CPG "dlmd:daemon": every dlmd of the cluster joins it;
 *                    it will carry daemon-to-daemon control messages
 *                    (lockspace start/stop barriers, fencing results)
 *   lockspace group  CPG "dlmd:ls:<name>" per lockspace: its member list
 *                    is the lockspace's membership
 *
 * Every CPG and quorum handle's fd sits in the main loop; cpg_dispatch()
 * runs the callbacks from there.  Losing corosync (POLLHUP on any of its
 * fds, or a dispatch error) stops the daemon with exit code 1: locks
 * cannot be trusted without membership.
 *
 * One-node scope (this version): the engine's lockspace members are just
 * us.  A lockspace group's configuration changes are recorded and logged;
 * when another node shows up, ls_members_changed() logs that multi-node
 * recovery is not implemented yet.  That function is where the multi-node
 * work plugs in: stop the lockspace, agree on the member set and an event
 * number over the daemon group, run the engine's recovery, finish.
 * Engine messages for other nodes are dropped (no transport is wired in;
 * lowcomms/ will carry them) with a rate-limited warning.
 *
 * membership = none (dlm.conf) replaces all of this with a fixed
 * one-node cluster whose node id is the config's nodeid; it exists for
 * tests and fuzzing, never for production.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cfg.h>
#include <corosync/cmap.h>
#include <corosync/corotypes.h>
#include <corosync/cpg.h>
#include <corosync/quorum.h>

#include "plugin/dlmd.h"

#define DAEMON_GROUP		"dlmd:daemon"
#define LS_GROUP_PREFIX		"dlmd:ls:"
#define CS_RETRIES		50	/* CS_ERR_TRY_AGAIN retries */
#define CS_RETRY_US		20000
#define DROP_LOG_INTERVAL_MS	10000

struct dlmd_cluster {
	struct dlmd		*cs_d;
	bool			cs_corosync;
	cpg_handle_t		cs_daemon_cpg;
	int			cs_daemon_fd;
	quorum_handle_t		cs_quorum;
	int			cs_quorum_fd;
	bool			cs_quorate;
	uint64_t		cs_ring_seq;
	uint32_t		cs_nodes[DLM_MAX_NODES];
	char			cs_addrs[DLM_MAX_NODES][DLMD_ADDR_LEN];
	unsigned int		cs_nnodes;
	uint64_t		cs_dropped;
	uint64_t		cs_last_drop_log;
};

struct dlmd_cluster_ls {
	struct dlmd		*cl_d;
	struct dlmd_ls		*cl_dl;
	cpg_handle_t		cl_cpg;
	int			cl_fd;
	uint32_t		cl_members[DLM_MAX_NODES];
	unsigned int		cl_nmembers;
};

static const char *cs_str(cs_error_t e)
{
	static char buf[32];

	switch (e) {
	case CS_OK: return "ok";
	case CS_ERR_LIBRARY: return "cannot connect to corosync";
	case CS_ERR_TRY_AGAIN: return "try again";
	case CS_ERR_BAD_HANDLE: return "bad handle";
	case CS_ERR_ACCESS: return "access denied";
	case CS_ERR_EXIST: return "already exists";
	case CS_ERR_NOT_EXIST: return "does not exist";
	default:
		snprintf(buf, sizeof(buf), "corosync error %d", (int)e);
		return buf;
	}
}

static void lost_corosync(struct dlmd *d, const char *what)
{
	log_err("lost connection to corosync (%s); stopping", what);
	d->d_exit_code = 1;
	qb_loop_stop(d->d_loop);
}

/* ------------------------------------------------------------------ */
/* node list and our id                                                */
/* ------------------------------------------------------------------ */

static int read_nodelist(struct dlmd_cluster *cs)
{
	cmap_handle_t cmap;
	cmap_iter_handle_t iter;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	size_t vlen;
	cmap_value_types_t type;
	corosync_cfg_handle_t cfg;
	corosync_cfg_callbacks_t cfg_cb;
	unsigned int local = 0;
	cs_error_t e;
	int rv = 0;

	e = cmap_initialize(&cmap);
	if (e != CS_OK) {
		log_err("cmap: %s (is corosync running?)", cs_str(e));
		return -ENOTCONN;
	}
	cs->cs_nnodes = 0;
	e = cmap_iter_init(cmap, "nodelist.node.", &iter);
	if (e == CS_OK) {
		for (unsigned int n = 0; n < 4096 &&
		     cmap_iter_next(cmap, iter, key, &vlen, &type) == CS_OK; n++) {
			size_t kl = strlen(key);
			char akey[CMAP_KEYNAME_MAXLEN + 1], *addr = NULL;
			unsigned int idx;
			uint32_t id;

			if (kl < 7 || strcmp(key + kl - 7, ".nodeid") ||
			    sscanf(key, "nodelist.node.%u.", &idx) != 1)
				continue;
			if (cmap_get_uint32(cmap, key, &id) != CS_OK || !id ||
			    cs->cs_nnodes >= DLM_MAX_NODES)
				continue;
			/* The address the transport will use (ring0). */
			snprintf(akey, sizeof(akey), "nodelist.node.%u.ring0_addr", idx);
			cs->cs_addrs[cs->cs_nnodes][0] = '\0';
			if (cmap_get_string(cmap, akey, &addr) == CS_OK && addr) {
				snprintf(cs->cs_addrs[cs->cs_nnodes], DLMD_ADDR_LEN, "%s", addr);
				free(addr);
			}
			cs->cs_nodes[cs->cs_nnodes++] = id;
		}
		cmap_iter_finalize(cmap, iter);
	}
	memset(&cfg_cb, 0, sizeof(cfg_cb));
	e = corosync_cfg_initialize(&cfg, &cfg_cb);
	if (e == CS_OK) {
		e = corosync_cfg_local_get(cfg, &local);
		corosync_cfg_finalize(cfg);
	}
	if (e != CS_OK || !local) {
		uint32_t pos;

		/* Fall back to the nodelist entry corosync marks as ours. */
		if (cmap_get_uint32(cmap, "nodelist.local_node_pos", &pos) == CS_OK) {
			snprintf(key, sizeof(key), "nodelist.node.%u.nodeid", pos);
			if (cmap_get_uint32(cmap, key, &local) != CS_OK)
				local = 0;
		}
	}
	if (!local) {
		log_err("cannot find our node id in corosync (cfg, cmap nodelist)");
		rv = -ENOENT;
	}
	cs->cs_d->d_nodeid = local;
	cmap_finalize(cmap);
	return rv;
}

/* ------------------------------------------------------------------ */
/* quorum                                                              */
/* ------------------------------------------------------------------ */

static void quorum_notify(quorum_handle_t h, uint32_t quorate, uint64_t ring_seq,
			  uint32_t n, uint32_t *view)
{
	void *ctx = NULL;
	struct dlmd_cluster *cs;

	if (quorum_context_get(h, (const void **)&ctx) != CS_OK || !ctx)
		return;
	cs = ctx;
	if (cs->cs_quorate != !!quorate)
		log_notice("cluster is %squorate (ring %llu, %u node%s)",
			   quorate ? "" : "not ", (unsigned long long)ring_seq, n,
			   n == 1 ? "" : "s");
	cs->cs_quorate = quorate;
	cs->cs_ring_seq = ring_seq;
}

static int quorum_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    quorum_dispatch(cs->cs_quorum, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "quorum");
	return 0;
}

static int quorum_start(struct dlmd_cluster *cs)
{
	quorum_callbacks_t cb = { .quorum_notify_fn = quorum_notify };
	uint32_t type;
	cs_error_t e;

	e = quorum_initialize(&cs->cs_quorum, &cb, &type);
	if (e != CS_OK) {
		log_err("quorum: %s", cs_str(e));
		return -ENOTCONN;
	}
	quorum_context_set(cs->cs_quorum, cs);
	e = quorum_trackstart(cs->cs_quorum, CS_TRACK_CHANGES | CS_TRACK_CURRENT);
	if (e != CS_OK || quorum_fd_get(cs->cs_quorum, &cs->cs_quorum_fd) != CS_OK) {
		log_err("quorum tracking: %s", cs_str(e));
		quorum_finalize(cs->cs_quorum);
		return -ENOTCONN;
	}
	return qb_loop_poll_add(cs->cs_d->d_loop, QB_LOOP_HIGH, cs->cs_quorum_fd,
				POLLIN, cs, quorum_ready);
}

/* ------------------------------------------------------------------ */
/* CPG                                                                 */
/* ------------------------------------------------------------------ */

static void fmt_members(char *buf, size_t size, const struct cpg_address *a,
			size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off + 12 < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%u",
					i ? " " : "", a[i].nodeid);
}

/* A lockspace group changed.  One node: just record and log it. */
static void ls_members_changed(struct dlmd_cluster_ls *cl)
{
	for (unsigned int i = 0; i < cl->cl_nmembers; i++) {
		if (cl->cl_members[i] != cl->cl_d->d_nodeid) {
			log_warn("lockspace %s: node %u joined its group, but "
				 "multi-node recovery is not implemented yet; "
				 "the lockspace stays local", cl->cl_dl->dl_name,
				 cl->cl_members[i]);
			return;
		}
	}
}

static void ls_confchg(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t nmembers,
		       const struct cpg_address *left, size_t nleft,
		       const struct cpg_address *joined, size_t njoined)
{
	struct dlmd_cluster_ls *cl = NULL;
	char m[256], l[256], j[256];

	if (cpg_context_get(h, (void **)&cl) != CS_OK || !cl)
		return;
	fmt_members(m, sizeof(m), members, nmembers);
	fmt_members(l, sizeof(l), left, nleft);
	fmt_members(j, sizeof(j), joined, njoined);
	log_info("lockspace %s: group members [%s] joined [%s] left [%s]",
		 cl->cl_dl->dl_name, m, j, l);
	cl->cl_nmembers = 0;
	for (size_t i = 0; i < nmembers && i < DLM_MAX_NODES; i++)
		cl->cl_members[cl->cl_nmembers++] = members[i].nodeid;
	ls_members_changed(cl);
}

static void daemon_confchg(cpg_handle_t h, const struct cpg_name *group,
			   const struct cpg_address *members, size_t nmembers,
			   const struct cpg_address *left, size_t nleft,
			   const struct cpg_address *joined, size_t njoined)
{
	char m[256];

	fmt_members(m, sizeof(m), members, nmembers);
	log_info("daemon group members [%s]", m);
}

static void cpg_deliver(cpg_handle_t h, const struct cpg_name *group,
			uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	log_debug("CPG message of %zu bytes from node %u in %.*s ignored "
		  "(no daemon messages defined yet)", len, nodeid,
		  (int)group->length, group->value);
}

static int ls_cpg_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster_ls *cl = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    cpg_dispatch(cl->cl_cpg, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cl->cl_d, "lockspace group");
	return 0;
}

static int daemon_cpg_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    cpg_dispatch(cs->cs_daemon_cpg, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "daemon group");
	return 0;
}

/* Connect a CPG handle, join 'name'.  0 or -ENOTCONN. */
static int cpg_open(const char *name, cpg_confchg_fn_t confchg, void *ctx,
		    cpg_handle_t *h, int *fd)
{
	cpg_model_v1_data_t model;
	struct cpg_name gn;
	cs_error_t e;

	memset(&model, 0, sizeof(model));
	model.model = CPG_MODEL_V1;
	model.cpg_deliver_fn = cpg_deliver;
	model.cpg_confchg_fn = confchg;
	model.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF;
	e = cpg_model_initialize(h, CPG_MODEL_V1, (cpg_model_data_t *)&model, ctx);
	if (e != CS_OK) {
		log_err("cpg for %s: %s", name, cs_str(e));
		return -ENOTCONN;
	}
	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "%s", name);
	for (int i = 0; i < CS_RETRIES; i++) {
		e = cpg_join(*h, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);	/* bounded; corosync asks us to retry */
	}
	if (e != CS_OK || cpg_fd_get(*h, fd) != CS_OK) {
		log_err("cpg join %s: %s", name, cs_str(e));
		cpg_finalize(*h);
		return -ENOTCONN;
	}
	return 0;
}

static void cpg_close(const char *name, cpg_handle_t h)
{
	struct cpg_name gn;
	cs_error_t e;

	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "%s", name);
	for (int i = 0; i < CS_RETRIES; i++) {
		e = cpg_leave(h, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	cpg_finalize(h);
}

/* ------------------------------------------------------------------ */
/* interface                                                           */
/* ------------------------------------------------------------------ */

int dlmd_cluster_init(struct dlmd *d)
{
	struct dlmd_cluster *cs = calloc(1, sizeof(*cs));
	int rv;

	if (!cs)
		return -ENOMEM;
	cs->cs_d = d;
	cs->cs_daemon_fd = -1;
	cs->cs_quorum_fd = -1;
	d->d_cluster = cs;
	if (d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE) {
		d->d_nodeid = d->d_cfg.cf_nodeid;
		cs->cs_nodes[0] = d->d_nodeid;
		snprintf(cs->cs_addrs[0], DLMD_ADDR_LEN, "127.0.0.1");
		cs->cs_nnodes = 1;
		cs->cs_quorate = true;
		log_notice("membership none: a one-node cluster, node id %u",
			   d->d_nodeid);
		return 0;
	}
	cs->cs_corosync = true;
	rv = read_nodelist(cs);
	if (rv)
		return rv;
	rv = quorum_start(cs);
	if (rv)
		return rv;
	rv = cpg_open(DAEMON_GROUP, daemon_confchg, cs, &cs->cs_daemon_cpg,
		      &cs->cs_daemon_fd);
	if (rv)
		return rv;
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cs->cs_daemon_fd, POLLIN,
			      cs, daemon_cpg_ready);
	if (rv)
		return rv;
	log_notice("corosync: we are node %u of %u configured node%s", d->d_nodeid,
		   cs->cs_nnodes, cs->cs_nnodes == 1 ? "" : "s");
	for (unsigned int i = 0; i < cs->cs_nnodes; i++)
		log_info("node %u address %s", cs->cs_nodes[i],
			 cs->cs_addrs[i][0] ? cs->cs_addrs[i] : "(none)");
	return 0;
}

void dlmd_cluster_fini(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (!cs)
		return;
	if (cs->cs_corosync) {
		if (cs->cs_daemon_fd >= 0) {
			qb_loop_poll_del(d->d_loop, cs->cs_daemon_fd);
			cpg_close(DAEMON_GROUP, cs->cs_daemon_cpg);
		}
		if (cs->cs_quorum_fd >= 0) {
			qb_loop_poll_del(d->d_loop, cs->cs_quorum_fd);
			quorum_trackstop(cs->cs_quorum);
			quorum_finalize(cs->cs_quorum);
		}
	}
	if (cs->cs_dropped)
		log_info("%llu engine message(s) for other nodes were dropped",
			 (unsigned long long)cs->cs_dropped);
	free(cs);
	d->d_cluster = NULL;
}

int dlmd_cluster_ls_join(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster_ls *cl = calloc(1, sizeof(*cl));
	char name[CPG_MAX_NAME_LENGTH];
	int rv;

	if (!cl)
		return -ENOMEM;
	cl->cl_d = d;
	cl->cl_dl = dl;
	cl->cl_fd = -1;
	if (d->d_cluster->cs_corosync) {
		snprintf(name, sizeof(name), "%s%s", LS_GROUP_PREFIX, dl->dl_name);
		rv = cpg_open(name, ls_confchg, cl, &cl->cl_cpg, &cl->cl_fd);
		if (rv) {
			free(cl);
			return rv;
		}
		rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cl->cl_fd, POLLIN,
				      cl, ls_cpg_ready);
		if (rv) {
			cpg_close(name, cl->cl_cpg);
			free(cl);
			return rv;
		}
	}
	/* One node: the lockspace's members are us. */
	dl->dl_members[0] = d->d_nodeid;
	dl->dl_nmembers = 1;
	dl->dl_cluster = cl;
	return 0;
}

void dlmd_cluster_ls_leave(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster_ls *cl = dl->dl_cluster;
	char name[CPG_MAX_NAME_LENGTH];

	if (!cl)
		return;
	if (cl->cl_fd >= 0) {
		snprintf(name, sizeof(name), "%s%s", LS_GROUP_PREFIX, dl->dl_name);
		qb_loop_poll_del(d->d_loop, cl->cl_fd);
		cpg_close(name, cl->cl_cpg);
	}
	free(cl);
	dl->dl_cluster = NULL;
}

void dlmd_cluster_send(struct dlmd *d, uint32_t to, const void *buf, size_t len)
{
	struct dlmd_cluster *cs = d->d_cluster;
	uint64_t now = dlmd_now_ms();

	cs->cs_dropped++;
	if (now - cs->cs_last_drop_log >= DROP_LOG_INTERVAL_MS ||
	    cs->cs_last_drop_log == 0) {
		log_warn("no transport to node %u yet: %llu message(s) dropped so far",
			 to, (unsigned long long)cs->cs_dropped);
		cs->cs_last_drop_log = now;
	}
}

bool dlmd_cluster_quorate(const struct dlmd *d)
{
	return d->d_cluster && d->d_cluster->cs_quorate;
}

const char *dlmd_cluster_source_str(const struct dlmd *d)
{
	return d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE ? "none" : "corosync";
}

const char *dlmd_cluster_node_addr(const struct dlmd *d, uint32_t nodeid)
{
	const struct dlmd_cluster *cs = d->d_cluster;

	for (unsigned int i = 0; cs && i < cs->cs_nnodes; i++)
		if (cs->cs_nodes[i] == nodeid)
			return cs->cs_addrs[i];
	return "";
}

unsigned int dlmd_cluster_nodes(const struct dlmd *d, uint32_t *ids, unsigned int max)
{
	const struct dlmd_cluster *cs = d->d_cluster;
	unsigned int n = 0;

	for (; cs && n < cs->cs_nnodes && n < max; n++)
		ids[n] = cs->cs_nodes[n];
	return n;
}
