/*
 * tests/sim-faults.c - node faults (--faults): nodes die and join, and
 * the simulator plays the cluster glue's part in recovery.
 *
 * Death.  At any step of the schedule phase (also while a recovery is
 * under way) a live node may die, as long as another one stays alive.
 * Its engine is freed; everything queued on its links, both ways, is
 * lost, and whatever the survivors send it later too (cb_send).  Its
 * clients and their locks leave the model at once: the node is fenced,
 * so nobody relies on what it held.  Before they go, the LVB model is
 * loosened where the death may make a value stale (see
 * model_node_dies()).
 *
 * Daemon-only death (--daemon-deaths: a share of the deaths).  Only the
 * node's engine dies, as when dlmd alone is killed: its links go as
 * above, but its clients live on, still relying on every lock they were
 * granted, until the glue fences the node (a fence time 20-220 ms later;
 * in the simulator the fence is the moment its clients are known dead
 * and leave the model).  The glue stops the lockspaces at once but
 * starts no recovery before that fence, since recovery gives the dead
 * node's locks away: the client-level safety check catches a glue that
 * does (--fault no-fence-wait, in sim-broken.test).  A fenced node may
 * rejoin later like any dead one.
 *
 * Split (--partitions: a share of the faults).  A minority of the live
 * nodes is cut off the network; the others recover without it once it is
 * fenced, and it is fenced whole (see node_split()).  Whether the cut
 * heals before or after that fence, the lost side's state never merges
 * back: it rejoins empty, later, like any dead node.
 *
 * Join.  When membership is settled, a node may join: a fresh engine
 * under a new id, or a dead id restarted empty.  It creates its
 * lockspaces with the new member list, stopped, and takes part in the
 * recovery like everyone else; its clients start working once it has
 * finished that recovery.  A dead id comes back only after a recovery
 * without it has finished everywhere, so that its old locks are known to
 * be gone (a node that rejoins before its death was recovered is a new
 * incarnation the engines could not tell from the old one).
 *
 * The glue.  On each membership change the event number goes up and
 * every member gets two commands: stop, then start(event, members).  Each
 * command has its own due time, a few ms apart from node to node, as
 * corosync's configuration changes reach the daemons at slightly
 * different moments while messages keep flowing.  A glue step carries out
 * one node's due commands, or finishes that node's lockspaces that
 * reported recovery_done for the event it started last.  A change during
 * a recovery just queues another stop and start: the engine aborts and
 * restarts.  When every live node runs the latest event, the end of the
 * recovery is checked (check_recovered() in sim-check.c).
 *
 * Recovery failed (--alloc-faults: a step out of memory on a node; the
 * engine calls recovery_failed, stays stopped and waits for a newer
 * event, core.h).  The glue does what plugin/cluster.c does: the same
 * members go through stop and start again under a new event
 * (glue_recovery_failed()), once per failed event.
 *
 * The number of node faults per seed is bounded (fault_budget), and so is
 * everything else: a recovery that never ends is reported as a liveness
 * failure by the quiesce phase.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim.h"

#define GLUE_STAGGER_MS		12	/* a command reaches nodes this far apart */
#define FAULT_PERMILLE_IDLE	6	/* chance of a fault per step, settled */
#define FAULT_PERMILLE_BUSY	30	/* ... and while a recovery runs */
#define FAULT_MAX_PER_SEED	4	/* by default (--max-faults K) */
#define JOIN_PCT		35	/* a fault is a join (when one may happen) */
#define DAEMON_DEATH_PCT	40	/* --daemon-deaths: a death is the daemon's only */
#define FENCE_MIN_MS		20	/* a daemon-only death is fenced this late, */
#define FENCE_SPREAD_MS		200	/* ... plus up to this */
#define SPLIT_PCT		30	/* --partitions: a fault is a split */
#define HEAL_MIN_MS		5	/* a split heals this late, */
#define HEAL_SPREAD_MS		300	/* ... plus up to this */
#define SIM_BOUNCES		3	/* --bounce: bounces per seed at most */

static uint32_t node_bit(int node)
{
	return 1u << node;
}

bool node_usable(const struct sim *sim, int node)
{
	const struct sim_node *n = &sim->nodes[node];

	return n->n_alive && n->n_joined;
}

static bool node_running(const struct sim *sim, int node)
{
	const struct sim_node *n = &sim->nodes[node];
	unsigned int ls;

	if (!n->n_alive || n->n_ncmds)
		return false;
	for (ls = 0; ls < sim->nls; ls++)
		if (dlm_core_ls_state(n->n_ls[ls], NULL, NULL) != DLM_LS_RUNNING)
			return false;
	return true;
}

/* May node a ask node b for something (a remote orphan purge)?  Both
 * run the same membership. */
bool nodes_connected(const struct sim *sim, int a, int b)
{
	if (!sim->opts->o_faults)
		return true;
	return node_usable(sim, a) && node_usable(sim, b) && node_running(sim, a) &&
	       node_running(sim, b) && sim->nodes[a].n_event == sim->nodes[b].n_event;
}

static unsigned int members_array(uint32_t bits, uint32_t *out)
{
	unsigned int n = 0, i;

	for (i = 0; i < SIM_FAULT_MAX_NODES; i++)
		if (bits & (1u << i))
			out[n++] = i + 1;
	return n;
}

/* ------------------------------------------------------------ the glue */

static void queue_cmd(struct sim *sim, int node, enum sim_cmd_kind kind, uint64_t due)
{
	struct sim_node *n = &sim->nodes[node];
	struct sim_cmd *c;

	if (n->n_ncmds == SIM_MAX_CMDS) {
		sim_fail(sim, "simulator: too many glue commands for n%d", node + 1);
		return;
	}
	if (n->n_ncmds == n->n_cmdcap) {
		unsigned int cap = n->n_cmdcap ? 2 * n->n_cmdcap : 16;
		struct sim_cmd *a = realloc(n->n_cmds, cap * sizeof(*a));

		if (!a)
			abort();
		n->n_cmds = a;
		n->n_cmdcap = cap;
	}
	if (n->n_ncmds && due < n->n_cmds[n->n_ncmds - 1].c_due)
		due = n->n_cmds[n->n_ncmds - 1].c_due;
	c = &n->n_cmds[n->n_ncmds++];
	c->c_due = due;
	c->c_kind = (uint8_t)kind;
	c->c_event = sim->event;
	c->c_members = sim->members;
}

/* The latest fence time of a daemon-only death not fenced yet, or 0. */
static uint64_t fence_pending(const struct sim *sim)
{
	uint64_t last = 0;
	unsigned int i;

	for (i = 0; i < sim->nnodes; i++)
		if (sim->nodes[i].n_fence_at > last)
			last = sim->nodes[i].n_fence_at;
	return last;
}

/* A new membership (sim->members): a new event, stop and start for all.
 * The stops come at once; no start comes before every node whose daemon
 * died alone is fenced (unless the glue is broken on purpose: --fault
 * no-fence-wait), since recovery gives that node's locks away. */
static void membership_change(struct sim *sim)
{
	uint64_t fence = sim->opts->o_no_fence_wait ? 0 : fence_pending(sim);
	unsigned int i;

	sim->event++;
	sim_trace(sim, "glue event %u: members %x", sim->event, sim->members);
	for (i = 0; i < sim->nnodes; i++) {
		uint64_t stop, start;

		if (!(sim->members & node_bit((int)i)))
			continue;
		stop = sim->now + rng_below(&sim->rng, GLUE_STAGGER_MS + 1);
		queue_cmd(sim, (int)i, CMD_STOP, stop);
		start = stop + rng_below(&sim->rng, GLUE_STAGGER_MS + 1);
		if (start <= fence)
			start = fence + 1;
		queue_cmd(sim, (int)i, CMD_START, start);
	}
}

/* Node 'node' failed recovery 'event' (cb_recovery_failed): unless a
 * newer event is on its way already, restart with the same members.
 * Called from an engine callback: it only queues glue commands. */
void glue_recovery_failed(struct sim *sim, int node, uint32_t event)
{
	if (event != sim->event || sim->restart_event == event) {
		sim_trace(sim, "glue n%d: recovery %u failed, event %u already "
			  "follows", node + 1, event, sim->event);
		return;
	}
	sim->restart_event = event;
	membership_change(sim);
}

static bool fence_due(const struct sim *sim, int node)
{
	const struct sim_node *n = &sim->nodes[node];

	return n->n_fence_at && n->n_fence_at <= sim->now;
}

/* The node whose daemon died is fenced: its clients are dead now, and
 * leave the model (until now they relied on every lock they held). */
static void node_gone(struct sim *sim, int node);

static void fence_node(struct sim *sim, int node)
{
	sim_trace(sim, "FENCE n%d: its clients are gone", node + 1);
	sim->nodes[node].n_fence_at = 0;
	if (sim->nodes[node].n_alive) {
		/* cut off by a split: the whole node goes now */
		model_node_dies(sim, node);
		model_node_fenced(sim, node);
		node_gone(sim, node);
		sim->n_deaths++;
	} else {
		model_node_fenced(sim, node);
	}
}

static bool can_finish(const struct sim *sim, int node, unsigned int ls)
{
	const struct sim_node *n = &sim->nodes[node];
	uint32_t ev;

	if (!n->n_alive || n->n_ncmds || !n->n_event)
		return false;
	return dlm_core_ls_state(n->n_ls[ls], &ev, NULL) == DLM_LS_RECOVERED &&
	       ev == n->n_event && n->n_done[ls] == n->n_event;
}

static bool node_due(const struct sim *sim, int node)
{
	const struct sim_node *n = &sim->nodes[node];
	unsigned int ls;

	if (fence_due(sim, node))
		return true;
	if (!n->n_alive)
		return false;
	if (n->n_ncmds)
		return n->n_cmds[0].c_due <= sim->now;
	for (ls = 0; ls < sim->nls; ls++)
		if (can_finish(sim, node, ls))
			return true;
	return false;
}

bool glue_due(const struct sim *sim)
{
	unsigned int i;

	for (i = 0; i < sim->nnodes; i++)
		if (node_due(sim, (int)i))
			return true;
	return false;
}

bool glue_busy(const struct sim *sim)
{
	unsigned int i;

	for (i = 0; i < sim->nnodes; i++)
		if ((sim->nodes[i].n_alive && !node_running(sim, (int)i)) ||
		    sim->nodes[i].n_fence_at)
			return true;
	return false;
}

uint64_t glue_next_due(const struct sim *sim)
{
	uint64_t best = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_node *n = &sim->nodes[i];

		if (n->n_alive && n->n_ncmds && n->n_cmds[0].c_due < best)
			best = n->n_cmds[0].c_due;
		if (n->n_fence_at && n->n_fence_at < best)
			best = n->n_fence_at;
	}
	return best;
}

static void run_cmd(struct sim *sim, int node, const struct sim_cmd *c)
{
	struct sim_node *n = &sim->nodes[node];
	uint32_t members[SIM_MAX_NODES];
	unsigned int nm = members_array(c->c_members, members), ls;
	int rc;

	if (c->c_kind == CMD_START) {
		model_recovery_purge(sim, node);
		if (sim->opts->o_avoid & AVOID_RECOVERY_TOSS)
			model_recovery_toss(sim);
	}

	for (ls = 0; ls < sim->nls && !sim->failed; ls++) {
		if (c->c_kind == CMD_STOP) {
			rc = dlm_core_ls_stop(n->n_ls[ls]);
			sim_trace(sim, "glue n%d ls%u stop -> %d", node + 1, ls, rc);
			if (rc)
				sim_fail(sim, "n%d ls%u: stop returned %d", node + 1, ls, rc);
		} else {
			n->n_event = c->c_event;
			rc = dlm_core_ls_start(n->n_ls[ls], c->c_event, members, nm);
			sim_trace(sim, "glue n%d ls%u start event %u members %x -> %d",
				  node + 1, ls, c->c_event, c->c_members, rc);
			/* as the daemon: a failed start is a failed recovery */
			if (rc == -ENOMEM && sim->alloc_on)
				glue_recovery_failed(sim, node, c->c_event);
			else if (rc)
				sim_fail(sim, "n%d ls%u: start of event %u returned %d",
					 node + 1, ls, c->c_event, rc);
		}
	}
}

/* One node's due commands, or its finishes. */
void glue_step(struct sim *sim)
{
	int cand[SIM_MAX_NODES], ncand = 0, node, rc;
	struct sim_node *n;
	unsigned int i, ls;
	bool all;

	/* a fence first: a start may wait for it */
	for (i = 0; i < sim->nnodes; i++)
		if (fence_due(sim, (int)i)) {
			fence_node(sim, (int)i);
			return;
		}
	for (i = 0; i < sim->nnodes; i++)
		if (node_due(sim, (int)i))
			cand[ncand++] = (int)i;
	if (!ncand)
		return;
	node = cand[rng_below(&sim->rng, (uint32_t)ncand)];
	n = &sim->nodes[node];
	if (n->n_ncmds) {
		while (n->n_ncmds && n->n_cmds[0].c_due <= sim->now && !sim->failed) {
			struct sim_cmd c = n->n_cmds[0];

			memmove(n->n_cmds, n->n_cmds + 1, (n->n_ncmds - 1) * sizeof(c));
			n->n_ncmds--;
			run_cmd(sim, node, &c);
		}
	} else {
		for (ls = 0; ls < sim->nls && !sim->failed; ls++) {
			if (!can_finish(sim, node, ls))
				continue;
			rc = dlm_core_ls_finish(n->n_ls[ls], n->n_event);
			sim_trace(sim, "glue n%d ls%u finish event %u -> %d", node + 1, ls,
				  n->n_event, rc);
			if (rc)
				sim_fail(sim, "n%d ls%u: finish of event %u returned %d",
					 node + 1, ls, n->n_event, rc);
		}
	}
	if (sim->failed)
		return;
	all = node_running(sim, node);
	if (all && !n->n_joined) {
		n->n_joined = true;
		sim_trace(sim, "glue n%d joined: its clients start", node + 1);
	}
	if (!glue_busy(sim) && sim->checked_event != sim->event) {
		sim->checked_event = sim->event;
		sim->check_recovered = true;
		sim->n_recoveries++;
		sim_trace(sim, "glue event %u finished everywhere", sim->event);
	}
}

/* ------------------------------------------------------- death, join */

static void node_dies(struct sim *sim, int node, bool daemon_only)
{
	struct sim_node *n = &sim->nodes[node];

	if (daemon_only) {
		n->n_fence_at = sim->now + FENCE_MIN_MS +
				rng_below(&sim->rng, FENCE_SPREAD_MS + 1);
		sim_trace(sim, "DAEMON DEATH n%d (event %u): its clients live on until "
			  "it is fenced at %llums", node + 1, n->n_event,
			  (unsigned long long)n->n_fence_at);
		sim->n_daemon_deaths++;
	} else {
		sim_trace(sim, "DEATH n%d (event %u)", node + 1, n->n_event);
	}
	model_node_dies(sim, node);
	if (!daemon_only)
		model_node_fenced(sim, node);
	node_gone(sim, node);
	sim->members &= ~node_bit(node);
	sim->n_deaths++;
	membership_change(sim);
}

/* The engine of a dead node goes, and its traffic. */
static void node_gone(struct sim *sim, int node)
{
	struct sim_node *n = &sim->nodes[node];
	unsigned int ls;

	net_drop_node(&sim->net, n->n_id);
	dlm_core_free(n->n_core);
	n->n_core = NULL;
	for (ls = 0; ls < SIM_MAX_LS; ls++) {
		n->n_ls[ls] = NULL;
		n->n_done[ls] = 0;
		n->n_ran_prev[ls] = false;
	}
	n->n_alive = false;
	n->n_joined = false;
	n->n_event = 0;
	n->n_ncmds = 0;
	n->n_snap[0].s_n = 0;
	n->n_snap[1].s_n = 0;
}

/*
 * A split (--partitions): the nodes in 'cut', fewer than half of the live
 * ones, lose the network to the others until heal_at (their messages both
 * ways are held, then arrive: see sim-net.c).  The quorate side sees them
 * leave: a new membership without them, stopped at once and started only
 * once they are fenced.  The cut-off side has no quorum: its glue stops
 * its lockspaces and starts nothing; its clients live on, relying on
 * their locks.  The fence comes 20-220 ms after the split, before or after
 * the heal: the cut-off nodes die whole then (the established way: a node
 * that was lost never merges back with its old state; it may rejoin
 * empty later, as any dead node).  After a heal before the fence, what
 * the cut-off nodes sent before they stopped reaches the others, who
 * must not take it as current.
 */
static void node_split(struct sim *sim, uint32_t cut)
{
	uint64_t fence = sim->now + FENCE_MIN_MS + rng_below(&sim->rng, FENCE_SPREAD_MS + 1);
	uint64_t heal = sim->now + HEAL_MIN_MS + rng_below(&sim->rng, HEAL_SPREAD_MS + 1);
	unsigned int i;

	sim_trace(sim, "SPLIT nodes %x cut off until %llums, fenced at %llums", cut,
		  (unsigned long long)heal, (unsigned long long)fence);
	net_cut(&sim->net, cut, heal);
	for (i = 0; i < sim->nnodes; i++) {
		struct sim_node *n = &sim->nodes[i];

		if (!(cut & node_bit((int)i)))
			continue;
		n->n_fence_at = fence;
		n->n_ncmds = 0;		/* no quorum: no start comes */
		queue_cmd(sim, (int)i, CMD_STOP,
			  sim->now + rng_below(&sim->rng, GLUE_STAGGER_MS + 1));
	}
	sim->members &= ~cut;
	sim->n_splits++;
	membership_change(sim);
}

static int node_joins(struct sim *sim, int node)
{
	struct sim_node *n = &sim->nodes[node];
	uint32_t members[SIM_MAX_NODES];
	unsigned int nm, ls, c;
	int rc;

	if ((unsigned int)node >= sim->nnodes)
		sim->nnodes = (unsigned int)node + 1;
	n->n_sim = sim;
	n->n_id = (uint32_t)node + 1;
	sim_trace(sim, "JOIN n%d", node + 1);
	if (sim_node_engine_new(n))
		return -ENOMEM;
	dlm_core_tick(n->n_core, sim->now);
	n->n_alive = true;
	n->n_joined = false;
	n->n_event = 0;
	n->n_ncmds = 0;
	sim->members |= node_bit(node);
	/* with itself alone, as dlmd does: the recovery that lets it in
	 * gives it the members (core.h dlm_core_ls_create) */
	members[0] = n->n_id;
	nm = 1;
	for (ls = 0; ls < sim->nls; ls++) {
		n->n_done[ls] = 0;
		n->n_ran_prev[ls] = false;
		rc = dlm_core_ls_create(n->n_core, sim_ls_names[ls], members, nm, n,
					&n->n_ls[ls]);
		if (rc)
			return rc;
		/* held until the recovery that lets it in */
		rc = dlm_core_ls_stop(n->n_ls[ls]);
		if (rc)
			return rc;
	}
	/* after the lockspaces: the glue's create is not under test */
	sim_node_engine_setup(n);
	n->n_nclients = 2 + rng_below(&sim->rng, SIM_MAX_CLIENTS - 1);
	for (c = 0; c < SIM_MAX_CLIENTS; c++) {
		struct sim_client *cl = &n->n_clients[c];

		if (cl->c_nlocks)
			sim_fail(sim, "simulator: n%d client %u kept locks over its death",
				 node + 1, c);
		cl->c_incarnation++;
		cl->c_owner = ((uint64_t)(node + 1) << 32) | ((uint64_t)(c + 1) << 16) |
			      cl->c_incarnation;
	}
	if (n->n_norphans)
		sim_fail(sim, "simulator: n%d kept orphans over its death", node + 1);
	n->n_snap[0].s_n = 0;
	n->n_snap[1].s_n = 0;
	sim->n_joins++;
	membership_change(sim);
	return 0;
}

void faults_setup(struct sim *sim)
{
	unsigned int i;

	sim->members = 0;
	for (i = 0; i < sim->nnodes; i++)
		sim->members |= node_bit((int)i);
	sim->event = 0;
	sim->checked_event = 0;
	sim->fault_budget = 1 + rng_below(&sim->rng, sim->opts->o_max_faults ?
					  sim->opts->o_max_faults : FAULT_MAX_PER_SEED);
	sim->bounces_left = sim->opts->o_bounce ? SIM_BOUNCES : 0;
	sim->bounce_next = 0;
	sim->bounce_rejoin = 0;
}

/* A fault now?  Returns true when it acted (the step is used). */
static bool try_fault(struct sim *sim)
{
	int alive = 0, dead[SIM_MAX_NODES], ndead = 0, live[SIM_MAX_NODES], node, rc;
	bool can_die, can_join;
	unsigned int i;

	for (i = 0; i < sim->nnodes; i++) {
		if (sim->nodes[i].n_fence_at)
			continue;	/* cut off or half dead: left to the fence */
		if (sim->nodes[i].n_alive)
			live[alive++] = (int)i;
		else
			dead[ndead++] = (int)i;
	}
	can_die = alive >= 2;
	can_join = !glue_busy(sim) && (ndead || sim->nnodes < SIM_FAULT_MAX_NODES);
	if (!can_die && !can_join)
		return false;
	if (can_join && (!can_die || rng_pct(&sim->rng, JOIN_PCT))) {
		if (ndead && (sim->nnodes == SIM_FAULT_MAX_NODES || rng_pct(&sim->rng, 50)))
			node = dead[rng_below(&sim->rng, (uint32_t)ndead)];
		else
			node = (int)sim->nnodes;
		rc = node_joins(sim, node);
		if (rc)
			sim_fail(sim, "n%d could not join: %d", node + 1, rc);
	} else if (sim->opts->o_partitions && alive >= 3 && !glue_busy(sim) &&
		   rng_pct(&sim->rng, SPLIT_PCT)) {
		uint32_t cut = 0;
		unsigned int ncut = 1 + rng_below(&sim->rng, (uint32_t)(alive - 1) / 2);

		while (ncut--) {
			do
				node = live[rng_below(&sim->rng, (uint32_t)alive)];
			while (cut & node_bit(node));
			cut |= node_bit(node);
		}
		node_split(sim, cut);
	} else {
		node = live[rng_below(&sim->rng, (uint32_t)alive)];
		node_dies(sim, node, sim->opts->o_daemon_deaths &&
			  rng_pct(&sim->rng, DAEMON_DEATH_PCT));
	}
	sim->fault_budget--;
	return true;
}

/* Kill node now if a fault may happen (the workload aims one at a
 * resource's master): as try_fault's deaths, from the same budget. */
static bool faults_kill(struct sim *sim, int node)
{
	unsigned int i;
	int alive = 0;

	if (!sim->fault_budget || sim->nodes[node].n_fence_at ||
	    !sim->nodes[node].n_alive)
		return false;
	for (i = 0; i < sim->nnodes; i++)
		if (sim->nodes[i].n_alive && !sim->nodes[i].n_fence_at)
			alive++;
	if (alive < 2)
		return false;
	node_dies(sim, node, sim->opts->o_daemon_deaths &&
		  rng_pct(&sim->rng, DAEMON_DEATH_PCT));
	sim->fault_budget--;
	return true;
}

/* --bounce: the third node picked at a DIR_MOVE dies (or is cut off)
 * now, SIM_BOUNCES times a seed at most, outside the fault budget; then
 * it joins again at the first step when it may (membership settled,
 * fenced).  True when it acted. */
static bool bounce_step(struct sim *sim)
{
	int node, alive = 0;
	unsigned int i;

	if (sim->bounce_next) {
		node = sim->bounce_next - 1;
		sim->bounce_next = 0;
		if (!sim->bounces_left || !sim->nodes[node].n_alive ||
		    sim->nodes[node].n_fence_at)
			return false;
		for (i = 0; i < sim->nnodes; i++)
			if (sim->nodes[i].n_alive && !sim->nodes[i].n_fence_at)
				alive++;
		if (alive < 3)
			return false;
		sim_trace(sim, "BOUNCE n%d", node + 1);
		if (sim->opts->o_partitions && !glue_busy(sim) &&
		    rng_pct(&sim->rng, 50))
			node_split(sim, node_bit(node));
		else
			node_dies(sim, node, sim->opts->o_daemon_deaths &&
				  rng_pct(&sim->rng, DAEMON_DEATH_PCT));
		sim->bounces_left--;
		sim->bounce_rejoin = node + 1;
		return true;
	}
	if (sim->bounce_rejoin && !glue_busy(sim)) {
		int rc;

		node = sim->bounce_rejoin - 1;
		if (sim->nodes[node].n_alive || sim->nodes[node].n_fence_at)
			return false;	/* fenced later */
		sim->bounce_rejoin = 0;
		rc = node_joins(sim, node);
		if (rc)
			sim_fail(sim, "n%d could not join: %d", node + 1, rc);
		return true;
	}
	return false;
}

bool faults_step(struct sim *sim)
{
	bool busy = glue_busy(sim);

	if (bounce_step(sim))
		return true;
	if (sim->kill_next) {
		int node = sim->kill_next - 1;

		sim->kill_next = 0;
		if (faults_kill(sim, node))
			return true;
	}
	if (glue_due(sim) && rng_pct(&sim->rng, 30)) {
		glue_step(sim);
		return true;
	}
	if (sim->fault_budget &&
	    rng_below(&sim->rng, 1000) < (busy ? FAULT_PERMILLE_BUSY : FAULT_PERMILLE_IDLE))
		return try_fault(sim);
	return false;
}

/* ------------------------------------------------------------- reports */

void glue_report(struct sim *sim, FILE *out)
{
	unsigned int i, ls, k;

	fprintf(out, "--- membership: event %u, members %x, checked %u ---\n",
		sim->event, sim->members, sim->checked_event);
	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_node *n = &sim->nodes[i];

		fprintf(out, "n%u %s%s event %u", i + 1, n->n_alive ? "alive" : "dead",
			n->n_alive && !n->n_joined ? " joining" : "", n->n_event);
		for (ls = 0; n->n_alive && ls < sim->nls; ls++) {
			const char *step;
			uint32_t ev;
			enum dlm_ls_state st = dlm_core_ls_state(n->n_ls[ls], &ev, &step);

			fprintf(out, "; ls%u %s event %u step %s done %u", ls,
				dlm_ls_state_str(st), ev, step, n->n_done[ls]);
		}
		for (k = 0; n->n_alive && k < n->n_ncmds; k++)
			fprintf(out, "; cmd %s event %u at %llums",
				n->n_cmds[k].c_kind == CMD_STOP ? "stop" : "start",
				n->n_cmds[k].c_event, (unsigned long long)n->n_cmds[k].c_due);
		fprintf(out, "\n");
	}
}

/* Nothing moves and a recovery has not ended: say where it waits. */
void glue_report_stall(struct sim *sim)
{
	char buf[400];
	size_t o = 0;
	unsigned int i, ls;

	buf[0] = '\0';
	for (i = 0; i < sim->nnodes && o < sizeof(buf) - 80; i++) {
		const struct sim_node *n = &sim->nodes[i];

		for (ls = 0; n->n_alive && ls < sim->nls && o < sizeof(buf) - 80; ls++) {
			const char *step;
			uint32_t ev;
			enum dlm_ls_state st = dlm_core_ls_state(n->n_ls[ls], &ev, &step);

			if (st == DLM_LS_RUNNING)
				continue;
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " n%u ls%u %s %u (%s);",
					      i + 1, ls, dlm_ls_state_str(st), ev, step);
		}
	}
	sim_fail(sim, "LIVENESS: recovery of event %u never ends, nothing in flight:%s",
		 sim->event, buf);
}
