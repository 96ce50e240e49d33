/*
 * plugin/cluster.c - the daemon's glue to the cluster stack (corosync):
 * node list, quorum, and the CPG protocol that drives each lockspace's
 * recovery.
 *
 * What comes from where:
 *
 *   our node id      corosync_cfg_local_get() (cfg); cross-checked with
 *                    cmap's nodelist.local_node_pos entry
 *   node list        cmap nodelist.node.<idx>.nodeid and .ring<N>_addr
 *                    (idx is not the id); every node with its addresses is
 *                    given to lowcomms (plugin/comms.c).  The nodelist is
 *                    tracked: a node added later is added to lowcomms.
 *   quorum           libquorum: quorate flag, ring sequence, node view
 *   daemon group     CPG "dlmd:daemon": every dlmd joins it.  A node that
 *                    leaves it (its daemon stopped, or the node failed) has
 *                    its lowcomms state dropped, so that the next daemon
 *                    there starts a new transport epoch; a node that failed
 *                    (reason node-down) is handed to fencing (fence.c),
 *                    saying whether our side of the group held a strict
 *                    majority of the configured nodes then (see SPLIT AND
 *                    MERGE below).
 *   lockspace group  CPG "dlmd:ls:<name>" per lockspace: its members are
 *                    the lockspace's members.
 *
 * THE LOCKSPACE PROTOCOL.  CPG delivers configuration changes (confchg)
 * and messages in one total order, the same on every member (totem's
 * agreed order, extended virtual synchrony).  Everything below relies on
 * that: every member applies the same deterministic rule to the same
 * sequence of events, so every member takes the same decisions at the
 * same point of the sequence, with no further agreement round.
 *
 *  1. confchg.  On every change of the group (a join, a clean leave, a
 *     daemon exit, a node failure) each member at once stops the
 *     lockspace in the engine (dlm_core_ls_stop: requests and lock
 *     messages are held), and forgets whatever it had collected for the
 *     previous change.  Nodes that left with reason node-down, and nodes
 *     whose dlmd left without a clean leave (reason proc-down: it died or
 *     was killed while its node stayed up), are recorded as failed: they
 *     must be fenced before recovery.  Only a clean leave (reason leave:
 *     the lockspace was released, or dlmd stopped cleanly, which
 *     releases every lockspace first) needs no fencing.
 *
 *  2. wait conditions, each member for itself:
 *       quorum   the cluster is quorate, the quorum's node view contains
 *                every member, and it already reflects the change (after
 *                a node failure corosync reports CPG confchg, totem ring,
 *                then quorum; quorum state from before the failure must
 *                not count, or an isolated node would believe itself
 *                quorate and recover alone): either the quorum view no
 *                longer lists the failed nodes or its ring is newer than
 *                the one seen at the change;
 *       fencing  every node that failed out of the lockspace since its
 *                last completed recovery is fenced (fence.c).
 *
 *  3. START.  When its conditions hold, each member multicasts START (in
 *     the lockspace's group, agreed order): the member list of the change
 *     it answers, the last event it took part in (0: it has never run the
 *     lockspace, "fresh"), and the members of that event.
 *
 *  4. decision.  A START counts for the current change when it is
 *     delivered after that change, comes from a member, and carries the
 *     member list of that change (a START answering an older change that
 *     is delivered late carries another list and is ignored).  When every
 *     member's START has been counted, every member decides, at the same
 *     point of the sequence and on the same data:
 *       - stateful merge: members that ran the lockspace ("has state") but
 *         whose last event is older than the newest one reported were cut
 *         off while the others recovered without them (a healed
 *         partition).  Their locks may conflict with what was granted
 *         since: they are LOSERS.  A loser drops its instance of the
 *         lockspace (forced release: its clients lose their locks) and
 *         leaves the group; the others decide nothing and wait for the
 *         change that its leave causes;
 *       - otherwise the event number is E = (newest last event) + 1: it is
 *         larger than every member's previous event (the engine requires
 *         increasing events), the same on every member, and a fresh
 *         joiner learns it from the others' STARTs.
 *     Each member then starts recovery in the engine,
 *     dlm_core_ls_start(E, members), once it is quorate.  The engines run
 *     the recovery steps and their barriers among themselves over
 *     lowcomms (core/recover.c).
 *
 *  5. finish.  The engine's recovery_done(E) means its last barrier was
 *     passed by every member.  If still quorate the member calls
 *     dlm_core_ls_finish(E) and locking resumes; held LS_CREATE replies
 *     of a joining lockspace are sent then.
 *
 *  A newer confchg at any point goes back to 1: the engine aborts a
 *  recovery in progress on stop, and the newer event restarts it.
 *
 * Joining and leaving.  A lockspace created on this node (libdlm, dlmctl
 * join) is created in the engine with this node alone and stopped at
 * once, then its group is joined; the join is a membership change like
 * any other, and the client's create request is answered when the first
 * recovery finishes.  Releasing a lockspace leaves the group (a clean
 * leave for the others: no fencing).  A dlmd killed, or crashed, is a
 * daemon failure (reason proc-down): its node is fenced (DAEMON FAILURE).
 *
 * DAEMON FAILURE.  A dlmd that dies while its node stays up leaves its
 * groups with reason proc-down.  Its clients may still be alive, inside
 * their critical sections, and learn of it only at their next libdlm
 * call: their locks must not be given away before the node is fenced,
 * exactly as for a node failure (the established DLM fences a node whose
 * control daemon fails with lockspaces).  So a proc-down in a lockspace
 * group counts as a failure of the node; as corosync on that node is up,
 * the node stays in the quorum view, and fencing does not wait for a view
 * without it (fence.c: DLMD_FAIL_DAEMON).  A proc-down in the daemon
 * group alone (a dlmd without lockspaces) needs nothing.
 *
 * SPLIT AND MERGE.  A network blip shorter than it takes to fence can
 * still make totem split the ring and merge it again: each side sees the
 * other leave with reason node-down, then come back with reason node-up
 * (a merge: the same daemons, with the state they kept while apart).
 * Fencing that waits for "a quorate view without the victim" then waits
 * forever, as the victim is back in the view.  The rule:
 *  - every member learns of a failure from its own daemon group confchg.
 *    CPG delivers it in the same order on every member of a side, and a
 *    side's membership at that point is what that member records: the
 *    failure was "seen from a majority" iff that side held a strict
 *    majority of the configured nodes (2 * members > nodes, or half with the tie-breaker: below), counted in
 *    the daemon group or, if not there, in the totem ring that corosync
 *    delivers right after (nodes whose corosync runs without a dlmd
 *    count there; daemon_totem_confchg()).  Two disjoint sides never both
 *    hold one, whatever the timing of quorum notifications (which come
 *    after the confchg and, in a fast split-merge, may not come at all).
 *  - a member that saw a node fail from a majority side, and then sees it
 *    merge back (reason node-up) without having fenced it since by a
 *    method that stops nodes (a fence_ack, or enable_fencing = 0, does
 *    not count: such a node may be alive with stale state), removes
 *    it from the cluster (corosync_cfg_kill_node): its corosync exits, its
 *    dlmd with it; it leaves with node-down, is fenced, and can come back
 *    only as a fresh node, with no lockspace state.  It may also be fenced
 *    while still in the view (fence.c: DLMD_FAIL_MAJORITY).
 *  - the formerly isolated side saw the majority fail from a minority
 *    side: after the merge it is quorate again and sees them in the view,
 *    but never removes or fences them (its failures carry no majority
 *    mark, so its fencing waits for a view without them, which never
 *    comes); it is removed instead.  CPG delivers one side's confchgs
 *    identically to every member of that side, so all members of a side
 *    decide alike; at most one side holds a majority, so exactly the
 *    minority side goes.
 *  - nothing recovers in between: lockspaces stopped at the split, and
 *    START waits for the failed node to be fenced on every member.
 * An even split (2 + 2 of 4, or 1 + 1 in a two_node cluster) counts the
 *    half holding the tie-breaker node as the majority: votequorum's
 *    auto_tie_breaker_node where auto_tie_breaker is on (the half it
 *    keeps quorate), else the lowest configured node id (read_tiebreak).
 *    Exactly one of two disjoint halves holds it, so the rule stays
 *    symmetric-safe, and a two_node cluster's blip that merges back
 *    resolves by itself: node 1 (say) removes and fences node 2.  A half
 *    that is not quorate still fences nobody (fence.c), so in a 2 + 2
 *    split without auto_tie_breaker the winning half removes the others
 *    and then waits for quorum, i.e. for them to come back fresh.  The
 *    half without the tie-breaker delays its fence command (fence.c,
 *    DLMD_FAIL_EVEN_LOSER), so in a two_node cluster the halves of a
 *    real partition do not shoot each other: the tie-breaker's wins.
 *
 * LOST FRAMES.  lowcomms delivers engine messages in order and exactly
 * once while both nodes keep each other; a peer resuming past what we got
 * (ops_frames_lost) means messages between two live members are gone for
 * good, and the engines (which have no retransmission of their own) would
 * hang on them.  dlmd_cluster_frames_lost() then removes the higher id of
 * the two from the cluster (both ends, if both notice, pick the same
 * node; corosync_cfg_kill_node, retried for up to a second) and, when
 * that is the peer, fences it at once (DLMD_FAIL_REMOVED: also while it
 * is still in the view); the others recover without it.  It acts once
 * per incarnation of the peer (until it leaves the daemon group).
 *
 * STALLS.  A running lockspace whose operations wait for a remote reply
 * while nothing at all arrives for STALL_MS is shown as "stalled", never
 * "running" (dlmctl ls), and logged; see watchdog_timer().
 *
 * Known limits.
 *  - A START answering an older change whose member list equals the
 *    current one (A -> B -> A within one member's reaction time) is
 *    counted for the current change.  The decision is still the same on
 *    every member; only the reported "last event" of that member may be
 *    one change old, which at worst delays the start by one more change.
 *  - A loser's clients are disconnected from the lockspace; they must
 *    open it again.  Every member runs the fence command for itself.
 *  - A split into three or more sides none of which holds a majority
 *    (or half with the tie-breaker) merges back with every side waiting
 *    to fence the others; nobody is removed, recovery waits for fencing
 *    (or an operator stopping one side; fence_ack is refused while the
 *    node is in the view).
 *  - The majority is counted in configured nodes, one vote each: a
 *    votequorum with unequal votes or a quorum device is not modelled.
 *  - The stall watchdog sees operations waiting for a reply while the
 *    lockspace receives nothing at all; traffic on other resources of
 *    the lockspace hides a lost reply, and a lost grant (a request the
 *    master has queued, whose grant message never arrives) is no waiter.
 *    Lost messages themselves are handled (LOST FRAMES).
 *
 * Losing corosync (POLLHUP on any of its fds, or a dispatch error) stops
 * the daemon with exit code 1: locks cannot be trusted without
 * membership.
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

#include "lowcomms/lowcomms.h"
#include "plugin/cpgmsg.h"
#include "plugin/dlmd.h"

#define DAEMON_GROUP		"dlmd:daemon"
#define LS_GROUP_PREFIX		"dlmd:ls:"
#define CS_RETRIES		50	/* CS_ERR_TRY_AGAIN retries (1 s) */
#define CS_RETRY_US		20000
/* At start-up corosync may still be settling (its IPC not listening yet
 * right after it was started, or TRY_AGAIN during the sync that follows
 * a membership change): connecting is retried for this long, logged. */
#define CS_STARTUP_RETRIES	500	/* x CS_RETRY_US = 10 s */
#define NODELIST_MAX_KEYS	4096	/* bound on a cmap iteration */
#define MAX_RINGS		8	/* ring0_addr .. ring7_addr */
#define MCAST_RETRY_MS		50	/* after CS_ERR_TRY_AGAIN on a START */
#define NS_PER_MS		1000000ULL
#define STALL_TICK_MS		2000	/* the stall watchdog's period */
#define STALL_MS		10000	/* running, waiters, nothing received */

/* The messages themselves (header, START) and their codec are in
 * plugin/cpgmsg.[ch]. */

/* ------------------------------------------------------------------ */
/* state                                                               */
/* ------------------------------------------------------------------ */

struct cs_node {
	uint32_t	n_id;
	unsigned int	n_naddrs;
	char		n_addrs[LC_MAX_ADDRS][DLMD_ADDR_LEN];
};

struct dlmd_cluster {
	struct dlmd		*cs_d;
	bool			cs_corosync;
	cpg_handle_t		cs_daemon_cpg;
	int			cs_daemon_fd;
	quorum_handle_t		cs_quorum;
	int			cs_quorum_fd;
	bool			cs_quorate;
	uint64_t		cs_ring_seq;		/* of the quorum view */
	uint32_t		cs_qview[DLM_MAX_NODES];
	unsigned int		cs_nqview;
	cmap_handle_t		cs_cmap;
	cmap_track_handle_t	cs_cmap_track;
	int			cs_cmap_fd;
	bool			cs_nodelist_changed;
	struct cs_node		cs_nodes[DLM_MAX_NODES];
	unsigned int		cs_nnodes;
	uint32_t		cs_tiebreak;	/* wins an even split; 0: none */
	/* the daemon group now, and the nodes we lost (node-down) while
	 * our side of the daemon group held a strict majority of the
	 * configured nodes: if one of them merges back, we remove it */
	uint32_t		cs_dmembers[DLM_MAX_NODES];
	unsigned int		cs_ndmembers;
	uint32_t		cs_lost[DLM_MAX_NODES];
	unsigned int		cs_nlost;
	/* lost (node-down) while our daemon group side was no majority:
	 * the totem ring that follows may still show a majority side (nodes
	 * whose corosync runs without a dlmd count there) */
	uint32_t		cs_down[DLM_MAX_NODES];
	unsigned int		cs_ndown;
	/* peers whose lost frames were already acted on (until they leave) */
	uint32_t		cs_gap[DLM_MAX_NODES];
	unsigned int		cs_ngap;
	bool			cs_kick_queued;
	bool			cs_wd_armed;
	qb_loop_timer_handle	cs_wd;
	bool			cs_retry_armed;
	qb_loop_timer_handle	cs_retry;
};

struct dlmd_cluster_ls {
	struct dlmd		*cl_d;
	struct dlmd_ls		*cl_dl;
	cpg_handle_t		cl_cpg;
	int			cl_fd;
	bool			cl_in_group;	/* our join was delivered */
	uint32_t		cl_lsid;
	/* the current change */
	uint32_t		cl_members[DLM_MAX_NODES];	/* sorted */
	unsigned int		cl_nmembers;
	uint32_t		cl_change_seq;
	uint32_t		cl_change_down[DLM_MAX_NODES];	/* node-down at it */
	unsigned int		cl_nchange_down;
	uint64_t		cl_change_ring;	/* quorum ring when it came */
	bool			cl_start_sent;
	bool			cl_got[DLM_MAX_NODES];	/* per cl_members[i] */
	uint32_t		cl_start_event[DLM_MAX_NODES];	/* their last events */
	/* failed since the last finished recovery: must be fenced */
	uint32_t		cl_failed[DLM_MAX_NODES];
	unsigned int		cl_nfailed;
	/* decisions */
	uint32_t		cl_last_event;	/* last decided event, 0 = fresh */
	uint32_t		cl_prev[DLM_MAX_NODES];	/* its members */
	unsigned int		cl_nprev;
	bool			cl_decided;	/* for the current change */
	bool			cl_start_pending; /* decided, engine not started */
	uint32_t		cl_recovered;	/* recovery_done(E) seen, or 0 */
	bool			cl_running;
	bool			cl_ever_ran;
	bool			cl_loser;	/* drop at the next kick */
	/* the stall watchdog (running, yet no reply arrives) */
	uint64_t		cl_wd_rx;	/* messages received at 'since' */
	uint64_t		cl_wd_since;	/* ms; 0 = not watching */
	uint64_t		cl_wd_waiters;
	bool			cl_stalled;
	bool			cl_kick;
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

static bool id_in(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void fmt_ids(char *buf, size_t size, const uint32_t *ids, unsigned int n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < n && off + 12 < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%u",
					i ? " " : "", ids[i]);
}

static void kick(struct dlmd_cluster *cs);

/* ------------------------------------------------------------------ */
/* node list                                                           */
/* ------------------------------------------------------------------ */

static const struct cs_node *find_node(const struct dlmd_cluster *cs,
				       uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_nnodes; i++)
		if (cs->cs_nodes[i].n_id == id)
			return &cs->cs_nodes[i];
	return NULL;
}

/*
 * The node whose half wins an even split (SPLIT AND MERGE): votequorum's
 * quorum.auto_tie_breaker_node where auto_tie_breaker is on ("lowest",
 * "highest", or a list of ids whose first configured one counts), else
 * the lowest configured id, so a two_node cluster or a 2 + 2 split that
 * merges back resolves by itself.  With auto_tie_breaker this is the
 * half votequorum keeps quorate.
 */
static void read_tiebreak(struct dlmd_cluster *cs, cmap_handle_t cmap)
{
	uint32_t lo = 0, hi = 0, pick = 0;
	uint8_t atb = 0;
	char *how = NULL;

	for (unsigned int i = 0; i < cs->cs_nnodes; i++) {
		uint32_t id = cs->cs_nodes[i].n_id;

		if (!lo || id < lo)
			lo = id;
		if (id > hi)
			hi = id;
	}
	if (cmap_get_uint8(cmap, "quorum.auto_tie_breaker", &atb) == CS_OK && atb &&
	    cmap_get_string(cmap, "quorum.auto_tie_breaker_node", &how) == CS_OK &&
	    how) {
		if (!strcmp(how, "highest")) {
			pick = hi;
		} else if (strcmp(how, "lowest")) {
			for (char *p = how, *end; *p && !pick; p = end) {
				unsigned long v = strtoul(p, &end, 10);

				if (end == p)
					break;
				if (v && v <= UINT32_MAX && find_node(cs, (uint32_t)v))
					pick = (uint32_t)v;
				while (*end == ' ' || *end == ',')
					end++;
			}
		}
		free(how);
	}
	cs->cs_tiebreak = pick ? pick : lo;
}

/* Read nodelist.node.* into cs_nodes (all rings).  0 or -ENOTCONN. */
static int read_nodelist(struct dlmd_cluster *cs, cmap_handle_t cmap)
{
	cmap_iter_handle_t iter;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	size_t vlen;
	cmap_value_types_t type;
	unsigned int n = 0;

	if (cmap_iter_init(cmap, "nodelist.node.", &iter) != CS_OK)
		return -ENOTCONN;
	for (unsigned int k = 0; k < NODELIST_MAX_KEYS &&
	     cmap_iter_next(cmap, iter, key, &vlen, &type) == CS_OK; k++) {
		size_t kl = strlen(key);
		struct cs_node *nd;
		unsigned int idx;
		uint32_t id;

		if (kl < 7 || strcmp(key + kl - 7, ".nodeid") ||
		    sscanf(key, "nodelist.node.%u.", &idx) != 1)
			continue;
		if (cmap_get_uint32(cmap, key, &id) != CS_OK || !id ||
		    n >= DLM_MAX_NODES)
			continue;
		nd = &cs->cs_nodes[n++];
		memset(nd, 0, sizeof(*nd));
		nd->n_id = id;
		for (unsigned int r = 0; r < MAX_RINGS &&
		     nd->n_naddrs < LC_MAX_ADDRS; r++) {
			char akey[CMAP_KEYNAME_MAXLEN + 1], *addr = NULL;

			snprintf(akey, sizeof(akey), "nodelist.node.%u.ring%u_addr",
				 idx, r);
			if (cmap_get_string(cmap, akey, &addr) != CS_OK || !addr)
				continue;
			snprintf(nd->n_addrs[nd->n_naddrs++], DLMD_ADDR_LEN, "%s",
				 addr);
			free(addr);
		}
	}
	cmap_iter_finalize(cmap, iter);
	cs->cs_nnodes = n;
	read_tiebreak(cs, cmap);
	return 0;
}

static int read_local_id(struct dlmd_cluster *cs, cmap_handle_t cmap)
{
	corosync_cfg_handle_t cfg;
	corosync_cfg_callbacks_t cfg_cb;
	unsigned int local = 0;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	cs_error_t e;

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
		return -ENOENT;
	}
	cs->cs_d->d_nodeid = local;
	return 0;
}

static const char *const *node_addr_ptrs(const struct cs_node *nd,
					 const char **out)
{
	for (unsigned int i = 0; i < nd->n_naddrs; i++)
		out[i] = nd->n_addrs[i];
	return out;
}

/* Give lowcomms every node it does not know yet. */
static void nodes_to_comms(struct dlmd_cluster *cs)
{
	struct dlmd *d = cs->cs_d;

	for (unsigned int i = 0; i < cs->cs_nnodes; i++) {
		const struct cs_node *nd = &cs->cs_nodes[i];
		const char *p[LC_MAX_ADDRS];

		if (nd->n_id == d->d_nodeid || !nd->n_naddrs)
			continue;
		dlmd_comms_node_add(d, nd->n_id, node_addr_ptrs(nd, p),
				    nd->n_naddrs);
	}
}

static void nodelist_notify(cmap_handle_t h, cmap_track_handle_t t,
			    int32_t event, const char *key,
			    struct cmap_notify_value nv,
			    struct cmap_notify_value ov, void *data)
{
	struct dlmd_cluster *cs = data;

	cs->cs_nodelist_changed = true;
	kick(cs);
}

static int cmap_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    cmap_dispatch(cs->cs_cmap, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "cmap");
	return 0;
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
	cs->cs_nqview = 0;
	for (uint32_t i = 0; i < n && i < DLM_MAX_NODES; i++)
		cs->cs_qview[cs->cs_nqview++] = view[i];
	dlmd_view_nodes_changed(cs->cs_d);
	dlmd_fence_kick(cs->cs_d);
	kick(cs);
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
	cs_error_t e = CS_ERR_TRY_AGAIN;

	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = quorum_initialize(&cs->cs_quorum, &cb, &type);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK) {
		log_err("quorum: %s", cs_str(e));
		return -ENOTCONN;
	}
	quorum_context_set(cs->cs_quorum, cs);
	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = quorum_trackstart(cs->cs_quorum,
				      CS_TRACK_CHANGES | CS_TRACK_CURRENT);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK || quorum_fd_get(cs->cs_quorum, &cs->cs_quorum_fd) != CS_OK) {
		log_err("quorum tracking: %s", cs_str(e));
		quorum_finalize(cs->cs_quorum);
		cs->cs_quorum_fd = -1;
		return -ENOTCONN;
	}
	return qb_loop_poll_add(cs->cs_d->d_loop, QB_LOOP_HIGH, cs->cs_quorum_fd,
				POLLIN, cs, quorum_ready);
}

/* ------------------------------------------------------------------ */
/* the lockspace protocol                                              */
/* ------------------------------------------------------------------ */

static int member_index(const struct dlmd_cluster_ls *cl, uint32_t id)
{
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (cl->cl_members[i] == id)
			return (int)i;
	return -1;
}

/* NULL when this node may send its START for the current change, else
 * what it waits for. */
static const char *start_blocker(const struct dlmd_cluster_ls *cl,
				 char *buf, size_t size)
{
	const struct dlmd_cluster *cs = cl->cl_d->d_cluster;
	bool view_current = cs->cs_ring_seq > cl->cl_change_ring;

	if (!cs->cs_quorate)
		return "quorum";
	for (unsigned int i = 0; i < cl->cl_nchange_down; i++)
		if (id_in(cs->cs_qview, cs->cs_nqview, cl->cl_change_down[i]) &&
		    !view_current)
			return "quorum (view older than the change)";
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (!id_in(cs->cs_qview, cs->cs_nqview, cl->cl_members[i]))
			return "quorum (member not in the quorum view)";
	for (unsigned int i = 0; i < cl->cl_nfailed; i++) {
		if (!dlmd_fence_is_done(cl->cl_d, cl->cl_failed[i])) {
			char what[80];

			dlmd_fence_describe(cl->cl_d, cl->cl_failed[i], what,
					    sizeof(what));
			snprintf(buf, size, "fencing %s", what);
			return buf;
		}
	}
	return NULL;
}

static int send_start(struct dlmd_cluster_ls *cl)
{
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h = {
		.h_sender = cl->cl_d->d_nodeid,
		.h_lsid = cl->cl_lsid,
		.h_seq = cl->cl_change_seq,
	};
	struct cm_start st;
	struct iovec iov;
	size_t len;
	cs_error_t e;

	memset(&st, 0, sizeof(st));
	st.st_last_event = cl->cl_last_event;
	st.st_nmembers = cl->cl_nmembers;
	memcpy(st.st_members, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	st.st_nprev = cl->cl_nprev;
	memcpy(st.st_prev, cl->cl_prev, cl->cl_nprev * sizeof(uint32_t));
	len = dlmd_cm_start_encode(buf, &h, &st);
	iov.iov_base = buf;
	iov.iov_len = len;
	e = cpg_mcast_joined(cl->cl_cpg, CPG_TYPE_AGREED, &iov, 1);
	if (e == CS_ERR_TRY_AGAIN)
		return -EAGAIN;
	if (e != CS_OK) {
		log_err("lockspace %s: cannot send START: %s", cl->cl_dl->dl_name,
			cs_str(e));
		return -ENOTCONN;
	}
	log_debug("lockspace %s: START sent for change %u (last event %u)",
		  cl->cl_dl->dl_name, cl->cl_change_seq, cl->cl_last_event);
	return 0;
}

/* Every member's START is in: decide, the same way on every member. */
static void decide(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	uint32_t newest = 0, losers[DLM_MAX_NODES];
	unsigned int nlosers = 0;
	char m[DLM_MAX_NODES * 11 + 1];

	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (cl->cl_start_event[i] > newest)
			newest = cl->cl_start_event[i];
	for (unsigned int i = 0; i < cl->cl_nmembers; i++) {
		uint32_t last = cl->cl_start_event[i];

		if (last && last != newest)
			losers[nlosers++] = cl->cl_members[i];
	}
	if (nlosers) {
		fmt_ids(m, sizeof(m), losers, nlosers);
		log_err("lockspace %s: stateful merge: node(s) %s ran it with an "
			"event older than %u (cut off while the others recovered); "
			"they drop their instance", cl->cl_dl->dl_name, m, newest);
		if (id_in(losers, nlosers, d->d_nodeid)) {
			cl->cl_loser = true;
			kick(d->d_cluster);
		}
		return;
	}
	if (newest == UINT32_MAX) {
		log_err("lockspace %s: event numbers exhausted", cl->cl_dl->dl_name);
		return;
	}
	cl->cl_decided = true;
	cl->cl_start_pending = true;
	cl->cl_last_event = newest + 1;
	memcpy(cl->cl_prev, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	cl->cl_nprev = cl->cl_nmembers;
	fmt_ids(m, sizeof(m), cl->cl_members, cl->cl_nmembers);
	log_notice("lockspace %s: members [%s] agreed, event %u",
		   cl->cl_dl->dl_name, m, cl->cl_last_event);
}

static void replies_after_join(struct dlmd_cluster_ls *cl, int status)
{
	dlmd_ls_join_done(cl->cl_d, cl->cl_dl, status);
}

/* Move the lockspace on as far as the conditions allow.  Never called
 * from inside an engine callback. */
static void ls_progress(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_ls *dl = cl->cl_dl;
	char buf[96];
	int rv;

	if (!cl->cl_in_group || cl->cl_loser)
		return;
	if (!cl->cl_start_sent) {
		if (start_blocker(cl, buf, sizeof(buf)))
			return;
		rv = send_start(cl);
		if (rv == -EAGAIN) {
			dlmd_cluster_retry_later(d);
			return;
		}
		if (rv)
			return;
		cl->cl_start_sent = true;
	}
	if (!cl->cl_decided)
		return;
	if (cl->cl_start_pending) {
		if (!d->d_cluster->cs_quorate)
			return;
		rv = dlm_core_ls_start(dl->dl_core, cl->cl_last_event,
				       cl->cl_members, cl->cl_nmembers);
		if (rv) {
			log_err("lockspace %s: engine refused to start event %u: %s",
				dl->dl_name, cl->cl_last_event, strerror(-rv));
			cl->cl_start_pending = false;
			return;
		}
		cl->cl_start_pending = false;
		memcpy(dl->dl_members, cl->cl_members,
		       cl->cl_nmembers * sizeof(uint32_t));
		dl->dl_nmembers = cl->cl_nmembers;
		dlmd_view_ls_changed(d, dl);
		dlmd_flush(d);
	}
	if (cl->cl_recovered == cl->cl_last_event && !cl->cl_running) {
		if (!d->d_cluster->cs_quorate)
			return;
		rv = dlm_core_ls_finish(dl->dl_core, cl->cl_last_event);
		if (rv) {
			log_err("lockspace %s: finish of event %u refused: %s",
				dl->dl_name, cl->cl_last_event, strerror(-rv));
			return;
		}
		cl->cl_running = true;
		cl->cl_nfailed = 0;
		log_notice("lockspace %s: recovery %u finished, locking resumed "
			   "(%u member%s)", dl->dl_name, cl->cl_last_event,
			   cl->cl_nmembers, cl->cl_nmembers == 1 ? "" : "s");
		if (!cl->cl_ever_ran) {
			cl->cl_ever_ran = true;
			replies_after_join(cl, 0);
		}
		dlmd_flush(d);
	}
}

static void ls_drop_as_loser(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_ls *dl = cl->cl_dl;

	log_err("lockspace %s: our instance is stale; releasing it (its clients "
		"lose their locks)", dl->dl_name);
	if (dlmd_ls_release(d, dl, true, NULL))
		log_err("lockspace %s: cannot release it", dl->dl_name);
}

static void kick_job(void *data)
{
	struct dlmd_cluster *cs = data;
	struct dlmd *d = cs->cs_d;
	bool again = true;

	cs->cs_kick_queued = false;
	if (cs->cs_nodelist_changed) {
		cs->cs_nodelist_changed = false;
		if (cs->cs_cmap && read_nodelist(cs, cs->cs_cmap) == 0)
			nodes_to_comms(cs);
	}
	/* a loser's release changes the list: start over after one */
	for (unsigned int pass = 0; again && pass < DLM_MAX_NODES; pass++) {
		again = false;
		for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
			struct dlmd_cluster_ls *cl = dl->dl_cluster;

			if (!cl)
				continue;
			if (cl->cl_loser) {
				ls_drop_as_loser(cl);
				again = true;
				break;
			}
			ls_progress(cl);
		}
	}
}

static void kick(struct dlmd_cluster *cs)
{
	if (cs->cs_kick_queued)
		return;
	if (qb_loop_job_add(cs->cs_d->d_loop, QB_LOOP_HIGH, cs, kick_job) == 0)
		cs->cs_kick_queued = true;
}

static void retry_timer(void *data)
{
	struct dlmd_cluster *cs = data;

	cs->cs_retry_armed = false;
	kick(cs);
}

/* The stall watchdog: a running lockspace with operations waiting for a
 * remote reply that receives nothing at all for STALL_MS cannot make
 * progress (a reply every request gets at once from a live master was
 * lost, or the peer hangs).  It is then shown as "stalled", not
 * "running", and logged; it is "running" again when a message arrives or
 * nothing waits any more. */
static void watchdog_timer(void *data)
{
	struct dlmd_cluster *cs = data;
	struct dlmd *d = cs->cs_d;
	uint64_t now = dlmd_now_ms();

	cs->cs_wd_armed = false;
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;
		struct dlm_ls_stats st;

		if (!cl)
			continue;
		dlm_core_ls_stats(dl->dl_core, &st);
		if (!cl->cl_running || !st.ls_waiters ||
		    st.ls_msgs_received != cl->cl_wd_rx || !cl->cl_wd_since) {
			if (cl->cl_stalled)
				log_notice("lockspace %s: no longer stalled (%s)",
					   dl->dl_name, !cl->cl_running ? "stopped" :
					   !st.ls_waiters ? "nothing waits" :
					   "a message arrived");
			cl->cl_stalled = false;
			cl->cl_wd_rx = st.ls_msgs_received;
			cl->cl_wd_since = now;
			continue;
		}
		cl->cl_wd_waiters = st.ls_waiters;
		if (!cl->cl_stalled && now - cl->cl_wd_since >= STALL_MS) {
			cl->cl_stalled = true;
			log_err("lockspace %s: stalled: %llu operation%s wait for a "
				"remote reply and nothing arrived for %llu s",
				dl->dl_name, (unsigned long long)st.ls_waiters,
				st.ls_waiters == 1 ? "" : "s",
				(unsigned long long)((now - cl->cl_wd_since) / 1000));
		}
	}
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, STALL_TICK_MS * NS_PER_MS, cs,
			      watchdog_timer, &cs->cs_wd) == 0)
		cs->cs_wd_armed = true;
}

void dlmd_cluster_retry_later(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (cs->cs_retry_armed)
		return;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, MCAST_RETRY_MS * NS_PER_MS,
			      cs, retry_timer, &cs->cs_retry) == 0)
		cs->cs_retry_armed = true;
}

void dlmd_cluster_fencing_changed(struct dlmd *d)
{
	if (d->d_cluster)
		kick(d->d_cluster);
}

void dlmd_cluster_recovery_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	struct dlmd *d = ctx;

	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		if (dl->dl_core != ls || !dl->dl_cluster)
			continue;
		dl->dl_cluster->cl_recovered = event;
		kick(d->d_cluster);
	}
}

/* A START from 'from' in the lockspace's group. */
static void receive_start(struct dlmd_cluster_ls *cl, uint32_t from,
			  const unsigned char *p, size_t len)
{
	struct cm_start st;
	int idx = member_index(cl, from);
	const char *why;
	bool same;

	if (dlmd_cm_start_decode(p, len, &st, &why)) {
		log_warn("lockspace %s: malformed START from node %u dropped: %s",
			 cl->cl_dl->dl_name, from, why);
		return;
	}
	if (!cl->cl_in_group || idx < 0)
		return;
	same = st.st_nmembers == cl->cl_nmembers &&
	       !memcmp(st.st_members, cl->cl_members, cl->cl_nmembers * 4);
	if (!same) {
		log_debug("lockspace %s: START from node %u answers an older "
			  "change; ignored", cl->cl_dl->dl_name, from);
		return;
	}
	if (cl->cl_got[idx] || cl->cl_decided)
		return;
	cl->cl_got[idx] = true;
	cl->cl_start_event[idx] = st.st_last_event;
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (!cl->cl_got[i])
			return;
	decide(cl);
	ls_progress(cl);
}

/* Messages in a lockspace group (the daemon group carries none yet). */
static void ls_deliver(cpg_handle_t h, const struct cpg_name *group,
			uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	struct dlmd_cluster_ls *cl = NULL;
	const unsigned char *p = msg;
	struct cm_hdr hd;
	const char *why;

	if (dlmd_cm_hdr_decode(p, len, &hd, &why)) {
		log_warn("CPG message of %zu bytes from node %u dropped: %s", len,
			 nodeid, why);
		return;
	}
	if (hd.h_sender != nodeid) {
		log_warn("CPG message from node %u says it is from node %u: dropped",
			 nodeid, hd.h_sender);
		return;
	}
	if (cpg_context_get(h, (void **)&cl) != CS_OK || !cl)
		return;
	if (hd.h_target && hd.h_target != cl->cl_d->d_nodeid)
		return;
	switch (hd.h_type) {
	case CM_START:
		if (hd.h_lsid != cl->cl_lsid)
			return;
		receive_start(cl, nodeid, p + CM_HDR_LEN, len - CM_HDR_LEN);
		break;
	default:
		log_debug("CPG message of unknown type %u from node %u ignored",
			  hd.h_type, nodeid);
		break;
	}
}

static void ls_confchg(cpg_handle_t h, const struct cpg_name *group,
		       const struct cpg_address *members, size_t nmembers,
		       const struct cpg_address *left, size_t nleft,
		       const struct cpg_address *joined, size_t njoined)
{
	struct dlmd_cluster_ls *cl = NULL;
	struct dlmd *d;
	struct dlmd_ls *dl;
	char m[DLM_MAX_NODES * 11 + 1], j[DLM_MAX_NODES * 11 + 1],
	     l[DLM_MAX_NODES * 11 + 1];
	uint32_t ids[DLM_MAX_NODES];
	unsigned int n = 0, ndaemon_down = 0;
	bool us = false;

	if (cpg_context_get(h, (void **)&cl) != CS_OK || !cl)
		return;
	d = cl->cl_d;
	dl = cl->cl_dl;
	for (size_t i = 0; i < nmembers && n < DLM_MAX_NODES; i++) {
		if (members[i].nodeid == d->d_nodeid)
			us = true;
		if (!id_in(ids, n, members[i].nodeid))
			ids[n++] = members[i].nodeid;
	}
	if (!us)
		return;		/* our own leave, or not joined yet */
	qsort(ids, n, sizeof(ids[0]), cmp_u32);
	cl->cl_in_group = true;
	memcpy(cl->cl_members, ids, n * sizeof(ids[0]));
	cl->cl_nmembers = n;
	cl->cl_change_seq++;
	cl->cl_change_ring = d->d_cluster->cs_ring_seq;
	cl->cl_nchange_down = 0;
	for (size_t i = 0; i < nleft; i++) {
		uint32_t id = left[i].nodeid;

		if (id == d->d_nodeid)
			continue;
		if (left[i].reason == CPG_REASON_NODEDOWN) {
			cl->cl_change_down[cl->cl_nchange_down++] = id;
			/* the daemon group's report says from which side */
			dlmd_fence_node_failed(d, id, DLMD_FAIL_NODE);
		} else if (left[i].reason == CPG_REASON_PROCDOWN) {
			/* its dlmd died without leaving: its clients may
			 * still run inside their locks */
			ndaemon_down++;
			dlmd_fence_node_failed(d, id, DLMD_FAIL_DAEMON);
		} else {
			continue;	/* a clean leave: nothing to fence */
		}
		if (!id_in(cl->cl_failed, cl->cl_nfailed, id))
			cl->cl_failed[cl->cl_nfailed++] = id;
	}
	/* 1. stop at once, forget the previous change's STARTs */
	dlm_core_ls_stop(dl->dl_core);
	cl->cl_running = false;
	cl->cl_start_sent = false;
	cl->cl_decided = false;
	cl->cl_start_pending = false;
	cl->cl_recovered = 0;
	memset(cl->cl_got, 0, sizeof(cl->cl_got));
	{
		uint32_t a[DLM_MAX_NODES], b[DLM_MAX_NODES];
		unsigned int na = 0, nb = 0;

		for (size_t i = 0; i < njoined && na < DLM_MAX_NODES; i++)
			a[na++] = joined[i].nodeid;
		for (size_t i = 0; i < nleft && nb < DLM_MAX_NODES; i++)
			b[nb++] = left[i].nodeid;
		fmt_ids(m, sizeof(m), ids, n);
		fmt_ids(j, sizeof(j), a, na);
		fmt_ids(l, sizeof(l), b, nb);
	}
	log_notice("lockspace %s: change %u: members [%s] joined [%s] left [%s]%s; "
		   "stopped", dl->dl_name, cl->cl_change_seq, m, j, l,
		   cl->cl_nchange_down ? " (node failure)" :
		   ndaemon_down ? " (dlmd failure: to be fenced)" : "");
	ls_progress(cl);
}

static void daemon_deliver(cpg_handle_t h, const struct cpg_name *group,
			   uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	log_debug("daemon group: message of %zu bytes from node %u ignored "
		  "(no daemon messages defined yet)", len, nodeid);
}

static void ls_totem_confchg(cpg_handle_t h, struct cpg_ring_id ring,
			     uint32_t n, const uint32_t *list)
{
	/* the quorum callback carries what the protocol needs */
}

static void id_remove(uint32_t *ids, unsigned int *n, uint32_t id)
{
	for (unsigned int i = 0; i < *n; i++) {
		if (ids[i] == id) {
			ids[i] = ids[--*n];
			return;
		}
	}
}

/* Make node 'id' leave the cluster: its corosync exits (and with it its
 * dlmd, which cannot run without corosync), so that it drops out of the
 * view, gets fenced and can only come back as a fresh node. */
static void remove_node(struct dlmd_cluster *cs, uint32_t id, const char *why)
{
	corosync_cfg_handle_t cfg;
	corosync_cfg_callbacks_t cb;
	cs_error_t e;

	memset(&cb, 0, sizeof(cb));
	e = corosync_cfg_initialize(&cfg, &cb);
	if (e == CS_OK) {
		for (int i = 0; i < CS_RETRIES; i++) {
			e = corosync_cfg_kill_node(cfg, id, why);
			if (e != CS_ERR_TRY_AGAIN)
				break;
			usleep(CS_RETRY_US);	/* bounded: 1 s */
		}
		corosync_cfg_finalize(cfg);
	}
	if (e != CS_OK)
		log_err("cannot remove node %u from the cluster (%s): %s", id,
			why, cs_str(e));
	else
		log_err("removing node %u from the cluster (corosync_cfg_kill_node): "
			"%s", id, why);
}

/* Does our side (IDS, the daemon group's or the ring's) hold a strict
 * majority of the configured nodes, or exactly half of them with the
 * tie-breaker node?  Two disjoint sides never both do. */
static bool majority_side(const struct dlmd_cluster *cs, const uint32_t *ids,
			  unsigned int n)
{
	if (!cs->cs_nnodes)
		return false;
	if (2 * n > cs->cs_nnodes)
		return true;
	return 2 * n == cs->cs_nnodes && cs->cs_tiebreak &&
	       id_in(ids, n, cs->cs_tiebreak);
}

static void daemon_confchg(cpg_handle_t h, const struct cpg_name *group,
			   const struct cpg_address *members, size_t nmembers,
			   const struct cpg_address *left, size_t nleft,
			   const struct cpg_address *joined, size_t njoined)
{
	struct dlmd_cluster *cs = NULL;
	uint32_t ids[DLM_MAX_NODES];
	unsigned int n = 0;
	char m[DLM_MAX_NODES * 11 + 1];
	bool majority;

	if (cpg_context_get(h, (void **)&cs) != CS_OK || !cs)
		return;
	for (size_t i = 0; i < nmembers && n < DLM_MAX_NODES; i++)
		if (!id_in(ids, n, members[i].nodeid))
			ids[n++] = members[i].nodeid;
	memcpy(cs->cs_dmembers, ids, n * sizeof(ids[0]));
	cs->cs_ndmembers = n;
	majority = majority_side(cs, ids, n);
	fmt_ids(m, sizeof(m), ids, n);
	log_info("daemon group members [%s]", m);
	for (size_t i = 0; i < njoined; i++) {
		uint32_t id = joined[i].nodeid;
		char why[128];

		if (id == cs->cs_d->d_nodeid)
			continue;
		if (joined[i].reason == CPG_REASON_NODEUP &&
		    id_in(cs->cs_lost, cs->cs_nlost, id) &&
		    dlmd_fence_killed(cs->cs_d, id)) {
			/* fenced for real since: a new incarnation whose
			 * corosync merged with ours */
			log_info("node %u is back after it was fenced", id);
		} else if (joined[i].reason == CPG_REASON_NODEUP &&
			   id_in(cs->cs_lost, cs->cs_nlost, id)) {
			/* A split healed: the node we lost comes back with
			 * the state it kept while cut off (its locks, its
			 * transport sequence); it never merges. */
			snprintf(why, sizeof(why), "dlmd: node %u merged back after "
				 "a split; its state is stale", id);
			remove_node(cs, id, why);
			/* its failure carries DLMD_FAIL_MAJORITY: it is fenced
			 * even while still in the view */
		} else if (joined[i].reason == CPG_REASON_NODEUP) {
			log_notice("node %u merged back after a split; we were on "
				   "the smaller side: the majority removes it or us",
				   id);
		}
		id_remove(cs->cs_lost, &cs->cs_nlost, id);
		id_remove(cs->cs_down, &cs->cs_ndown, id);
		id_remove(cs->cs_gap, &cs->cs_ngap, id);
	}
	for (size_t i = 0; i < nleft; i++) {
		uint32_t id = left[i].nodeid;
		const struct cs_node *nd = find_node(cs, id);
		const char *p[LC_MAX_ADDRS];
		bool still;

		if (id == cs->cs_d->d_nodeid)
			continue;
		id_remove(cs->cs_gap, &cs->cs_ngap, id);
		if (left[i].reason == CPG_REASON_NODEDOWN) {
			dlmd_fence_node_failed(cs->cs_d, id, majority ?
					       DLMD_FAIL_MAJORITY :
					       2 * n == cs->cs_nnodes ?
					       DLMD_FAIL_EVEN_LOSER : DLMD_FAIL_NODE);
			if (majority && !id_in(cs->cs_lost, cs->cs_nlost, id) &&
			    cs->cs_nlost < DLM_MAX_NODES)
				cs->cs_lost[cs->cs_nlost++] = id;
			else if (!majority && !id_in(cs->cs_down, cs->cs_ndown, id) &&
				 cs->cs_ndown < DLM_MAX_NODES)
				cs->cs_down[cs->cs_ndown++] = id;
		}
		/* a node still in the group (another dlmd of it) keeps it */
		still = false;
		for (unsigned int k = 0; k < n; k++)
			if (ids[k] == id)
				still = true;
		if (!still && nd)
			dlmd_comms_node_reset(cs->cs_d, id, node_addr_ptrs(nd, p),
					      nd->n_naddrs);
	}
	kick(cs);
}

/*
 * The totem ring of the daemon group's connection: corosync delivers it
 * after the group's confchg of the same change.  A node lost while our
 * side of the daemon group was no majority may still have been lost from
 * a majority ring (nodes whose corosync runs without a dlmd count there):
 * if this ring no longer has it and holds a strict majority of the
 * configured nodes, the failure is marked as seen from a majority.  A
 * ring that has it again (a fast merge) decides nothing.  Rings and
 * daemon groups of two disjoint sides are disjoint, so this keeps the
 * rule symmetric-safe (SPLIT AND MERGE).
 */
static void daemon_totem_confchg(cpg_handle_t h, struct cpg_ring_id ring,
				 uint32_t n, const uint32_t *list)
{
	struct dlmd_cluster *cs = NULL;

	if (cpg_context_get(h, (void **)&cs) != CS_OK || !cs)
		return;
	for (unsigned int i = 0; i < cs->cs_ndown;) {
		uint32_t id = cs->cs_down[i];

		if (id_in(list, n, id)) {
			id_remove(cs->cs_down, &cs->cs_ndown, id);
			continue;
		}
		if (!majority_side(cs, list, n)) {
			i++;
			continue;
		}
		log_notice("node %u was lost from a ring of %u of %u nodes: a "
			   "majority side%s", id, n, cs->cs_nnodes,
			   2 * n == cs->cs_nnodes ? " (the half with the "
			   "tie-breaker node)" : "");
		if (!dlmd_fence_is_done(cs->cs_d, id))
			dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_MAJORITY);
		if (!id_in(cs->cs_lost, cs->cs_nlost, id) &&
		    cs->cs_nlost < DLM_MAX_NODES)
			cs->cs_lost[cs->cs_nlost++] = id;
		id_remove(cs->cs_down, &cs->cs_ndown, id);
	}
}

void dlmd_cluster_frames_lost(struct dlmd *d, uint32_t peer)
{
	struct dlmd_cluster *cs = d->d_cluster;
	uint32_t victim;
	char why[128];

	if (!cs || !cs->cs_corosync || peer == d->d_nodeid)
		return;
	if (!id_in(cs->cs_dmembers, cs->cs_ndmembers, peer)) {
		log_warn("comms: frames from node %u lost, but its daemon is not "
			 "in the cluster (its transport state is reset when it "
			 "comes back)", peer);
		return;
	}
	if (id_in(cs->cs_gap, cs->cs_ngap, peer))
		return;		/* acted on already */
	if (cs->cs_ngap < DLM_MAX_NODES)
		cs->cs_gap[cs->cs_ngap++] = peer;
	/* Both ends may notice; both pick the same node: the higher id. */
	victim = peer > d->d_nodeid ? peer : d->d_nodeid;
	log_err("comms: frames between node %u and us were lost while both are "
		"members: the lock state between us cannot be trusted; node %u "
		"(the higher id) leaves the cluster, is fenced, and the others "
		"recover", peer, victim);
	snprintf(why, sizeof(why), "dlmd: frames lost between nodes %u and %u",
		 d->d_nodeid, peer);
	remove_node(cs, victim, why);
	/* and fence it at once, without waiting for it to leave the view */
	if (victim != d->d_nodeid)
		dlmd_fence_node_failed(d, victim, DLMD_FAIL_REMOVED);
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
static int cpg_open(const char *name, cpg_deliver_fn_t deliver,
		    cpg_confchg_fn_t confchg, cpg_totem_confchg_fn_t totem,
		    void *ctx, int retries, cpg_handle_t *h, int *fd)
{
	cpg_model_v1_data_t model;
	struct cpg_name gn;
	cs_error_t e = CS_ERR_TRY_AGAIN;

	memset(&model, 0, sizeof(model));
	model.model = CPG_MODEL_V1;
	model.cpg_deliver_fn = deliver;
	model.cpg_confchg_fn = confchg;
	model.cpg_totem_confchg_fn = totem;
	model.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF;
	for (int i = 0; i < retries; i++) {
		e = cpg_model_initialize(h, CPG_MODEL_V1,
					 (cpg_model_data_t *)&model, ctx);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK) {
		log_err("cpg for %s: %s", name, cs_str(e));
		return -ENOTCONN;
	}
	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "%s", name);
	for (int i = 0; i < retries; i++) {
		e = cpg_join(*h, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		if (i == CS_RETRIES)
			log_notice("cpg join %s: corosync still says try again; "
				   "retrying", name);
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

static int cmap_start(struct dlmd_cluster *cs)
{
	cs_error_t e = CS_ERR_TRY_AGAIN;
	int rv;

	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = cmap_initialize(&cs->cs_cmap);
		if (e != CS_ERR_LIBRARY && e != CS_ERR_TRY_AGAIN)
			break;
		if (i == 0)
			log_notice("cmap: %s; retrying for up to %d s", cs_str(e),
				   CS_STARTUP_RETRIES * CS_RETRY_US / 1000000);
		usleep(CS_RETRY_US);	/* bounded; before the loop runs */
	}
	if (e != CS_OK) {
		log_err("cmap: %s (is corosync running?)", cs_str(e));
		cs->cs_cmap = 0;
		return -ENOTCONN;
	}
	rv = read_nodelist(cs, cs->cs_cmap);
	if (!rv)
		rv = read_local_id(cs, cs->cs_cmap);
	if (rv)
		return rv;
	e = cmap_track_add(cs->cs_cmap, "nodelist.node.",
			   CMAP_TRACK_ADD | CMAP_TRACK_DELETE | CMAP_TRACK_MODIFY |
			   CMAP_TRACK_PREFIX, nodelist_notify, cs, &cs->cs_cmap_track);
	if (e != CS_OK || cmap_fd_get(cs->cs_cmap, &cs->cs_cmap_fd) != CS_OK) {
		log_warn("cmap: cannot track the nodelist (%s); nodes added later "
			 "need a dlmd restart", cs_str(e));
		cs->cs_cmap_fd = -1;
		return 0;
	}
	return qb_loop_poll_add(cs->cs_d->d_loop, QB_LOOP_LOW, cs->cs_cmap_fd,
				POLLIN, cs, cmap_ready);
}

int dlmd_cluster_init(struct dlmd *d)
{
	struct dlmd_cluster *cs = calloc(1, sizeof(*cs));
	const struct cs_node *self;
	const char *p[LC_MAX_ADDRS];
	int rv;

	if (!cs)
		return -ENOMEM;
	cs->cs_d = d;
	cs->cs_daemon_fd = -1;
	cs->cs_quorum_fd = -1;
	cs->cs_cmap_fd = -1;
	d->d_cluster = cs;
	if (d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE) {
		d->d_nodeid = d->d_cfg.cf_nodeid;
		cs->cs_nodes[0].n_id = d->d_nodeid;
		cs->cs_nodes[0].n_naddrs = 1;
		snprintf(cs->cs_nodes[0].n_addrs[0], DLMD_ADDR_LEN, "127.0.0.1");
		cs->cs_nnodes = 1;
		cs->cs_quorate = true;
		log_notice("membership none: a one-node cluster, node id %u",
			   d->d_nodeid);
		return dlmd_fence_init(d);
	}
	cs->cs_corosync = true;
	rv = cmap_start(cs);
	if (rv)
		return rv;
	rv = dlmd_fence_init(d);
	if (rv)
		return rv;
	self = find_node(cs, d->d_nodeid);
	rv = dlmd_comms_init(d, self ? node_addr_ptrs(self, p) : NULL,
			     self ? self->n_naddrs : 0);
	if (rv)
		return rv;
	nodes_to_comms(cs);
	rv = quorum_start(cs);
	if (rv)
		return rv;
	rv = cpg_open(DAEMON_GROUP, daemon_deliver, daemon_confchg,
		      daemon_totem_confchg, cs,
		      CS_STARTUP_RETRIES, &cs->cs_daemon_cpg, &cs->cs_daemon_fd);
	if (rv) {
		cs->cs_daemon_fd = -1;
		return rv;
	}
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cs->cs_daemon_fd, POLLIN,
			      cs, daemon_cpg_ready);
	if (rv)
		return rv;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, STALL_TICK_MS * NS_PER_MS, cs,
			      watchdog_timer, &cs->cs_wd) == 0)
		cs->cs_wd_armed = true;
	log_notice("corosync: we are node %u of %u configured node%s; node %u "
		   "breaks even splits", d->d_nodeid, cs->cs_nnodes,
		   cs->cs_nnodes == 1 ? "" : "s", cs->cs_tiebreak);
	for (unsigned int i = 0; i < cs->cs_nnodes; i++)
		log_info("node %u address %s%s", cs->cs_nodes[i].n_id,
			 cs->cs_nodes[i].n_naddrs ? cs->cs_nodes[i].n_addrs[0] : "(none)",
			 cs->cs_nodes[i].n_naddrs > 1 ? " (and more rings)" : "");
	return 0;
}

void dlmd_cluster_fini(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (!cs)
		return;
	if (cs->cs_kick_queued)
		qb_loop_job_del(d->d_loop, QB_LOOP_HIGH, cs, kick_job);
	if (cs->cs_retry_armed)
		qb_loop_timer_del(d->d_loop, cs->cs_retry);
	if (cs->cs_wd_armed)
		qb_loop_timer_del(d->d_loop, cs->cs_wd);
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
		if (cs->cs_cmap_fd >= 0)
			qb_loop_poll_del(d->d_loop, cs->cs_cmap_fd);
		if (cs->cs_cmap)
			cmap_finalize(cs->cs_cmap);
	}
	dlmd_comms_fini(d);
	dlmd_fence_fini(d);
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
	cl->cl_lsid = dlm_core_ls_name_to_id(dl->dl_name);
	dl->dl_members[0] = d->d_nodeid;
	dl->dl_nmembers = 1;
	dl->dl_cluster = cl;
	if (!d->d_cluster->cs_corosync) {
		/* one node: the lockspace runs as created */
		cl->cl_running = cl->cl_ever_ran = true;
		return 0;
	}
	snprintf(name, sizeof(name), "%s%s", LS_GROUP_PREFIX, dl->dl_name);
	rv = cpg_open(name, ls_deliver, ls_confchg, ls_totem_confchg, cl,
		      CS_RETRIES, &cl->cl_cpg,
		      &cl->cl_fd);
	if (rv)
		goto fail;
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cl->cl_fd, POLLIN, cl,
			      ls_cpg_ready);
	if (rv) {
		cpg_close(name, cl->cl_cpg);
		goto fail;
	}
	return 0;
fail:
	dl->dl_cluster = NULL;
	free(cl);
	return rv;
}

void dlmd_cluster_ls_created(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster_ls *cl = dl->dl_cluster;

	/* held until the first membership is agreed and recovered */
	if (cl && !cl->cl_running)
		dlm_core_ls_stop(dl->dl_core);
}

bool dlmd_cluster_ls_ready(const struct dlmd *d, const struct dlmd_ls *dl)
{
	return dl->dl_cluster && dl->dl_cluster->cl_ever_ran;
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
	dlmd_comms_send(d, to, buf, len);
}

bool dlmd_cluster_quorum_has(const struct dlmd *d, uint32_t nodeid)
{
	const struct dlmd_cluster *cs = d->d_cluster;

	return cs && cs->cs_corosync && id_in(cs->cs_qview, cs->cs_nqview, nodeid);
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
	const struct cs_node *nd = d->d_cluster ? find_node(d->d_cluster, nodeid) : NULL;

	return nd && nd->n_naddrs ? nd->n_addrs[0] : "";
}

unsigned int dlmd_cluster_nodes(const struct dlmd *d, uint32_t *ids, unsigned int max)
{
	const struct dlmd_cluster *cs = d->d_cluster;
	unsigned int n = 0;

	for (; cs && n < cs->cs_nnodes && n < max; n++)
		ids[n] = cs->cs_nodes[n].n_id;
	return n;
}

void dlmd_cluster_ls_describe(const struct dlmd *d, const struct dlmd_ls *dl,
			      struct dlmd_ls_view *v)
{
	const struct dlmd_cluster_ls *cl = dl->dl_cluster;
	const char *step = "";
	uint32_t ev = 0;
	enum dlm_ls_state st = dlm_core_ls_state(dl->dl_core, &ev, &step);

	memset(v, 0, sizeof(*v));
	v->lv_state = dlm_ls_state_str(st);
	v->lv_event = ev;
	if (!cl) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "-");
		return;
	}
	memcpy(v->lv_group, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	v->lv_ngroup = cl->cl_nmembers;
	if (cl->cl_running && cl->cl_stalled) {
		v->lv_state = "stalled";
		snprintf(v->lv_wait, sizeof(v->lv_wait), "reply (%llu operation%s "
			 "wait for a remote reply; nothing received for %llu s)",
			 (unsigned long long)cl->cl_wd_waiters,
			 cl->cl_wd_waiters == 1 ? "" : "s",
			 (unsigned long long)((dlmd_now_ms() - cl->cl_wd_since) / 1000));
	} else if (cl->cl_running || !d->d_cluster->cs_corosync) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "none");
	} else if (!cl->cl_in_group) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "join (group)");
	} else if (!cl->cl_start_sent) {
		char buf[96];
		const char *why = start_blocker(cl, buf, sizeof(buf));

		snprintf(v->lv_wait, sizeof(v->lv_wait), "%s",
			 why ? why : "start (sending)");
	} else if (!cl->cl_decided) {
		size_t off = (size_t)snprintf(v->lv_wait, sizeof(v->lv_wait),
					      "members (start from");

		for (unsigned int i = 0; i < cl->cl_nmembers &&
		     off + 12 < sizeof(v->lv_wait); i++)
			if (!cl->cl_got[i])
				off += (size_t)snprintf(v->lv_wait + off,
							sizeof(v->lv_wait) - off,
							" %u", cl->cl_members[i]);
		snprintf(v->lv_wait + off, sizeof(v->lv_wait) - off, ")");
	} else if (cl->cl_start_pending) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "quorum (to start)");
	} else if (cl->cl_recovered != cl->cl_last_event) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "recovery step %s", step);
	} else {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "quorum (to finish)");
	}
}
