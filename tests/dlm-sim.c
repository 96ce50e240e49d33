/*
 * tests/dlm-sim.c - the deterministic multi-node simulator of the lock
 * engine.
 *
 * One run ("seed") builds a small cluster in one process: N engines
 * (dlm_core_new, node ids 1..N), one or two lockspaces created on every
 * node with the same member list, a few clients per node, and a simulated
 * network (sim-net.c).  Everything random comes from one seeded PRNG, and
 * time is virtual, so a seed replays exactly.
 *
 * A run has three phases:
 *
 *   schedule  random steps: a client operation (new locks in every mode
 *             with random flags, conversions up and down, unlocks with and
 *             without LVB writes, cancels, force unlocks, parent and range
 *             locks, client crashes, orphan adoption and purging, and
 *             deliberately invalid calls that must be refused), delivery of
 *             one due message, or a clock tick on every node;
 *   quiesce   no new requests; every orphan is purged, and each client
 *             answers the blocking ASTs it got (now or earlier, since the
 *             lock was last granted: a grant makes the engine tell again
 *             what still waits) by releasing or down-converting the lock
 *             as soon as nothing is pending on it.  When the network is
 *             empty and nobody has anything left to do, every request
 *             must have completed (a holder in the way of one that was
 *             told nothing is named: a blocking AST never sent);
 *   drain     every client unlocks everything; time passes beyond the toss
 *             delay; every engine must then be empty (no locks, waiters,
 *             orphans, resources or directory records).
 *
 * The engines' callbacks never re-enter an engine: send() queues the bytes
 * on the link, ast() queues the AST; after each entry point returns, the
 * queued ASTs go to the client model (sim-model.c), then the checks run:
 * client-level safety, engine-level safety, queue order and requests left
 * queued though grantable (sim-check.c), the LVB and AST rules.
 *
 * --avoid NAME steers the generator (or, for one, the checker) around a
 * pattern that trips a known engine bug, so that a run can look past it
 * for others; make check runs with none.  The first violation stops the seed; the report
 * gives the seed, the violation, the last events and every engine's dump.
 *
 * --msg-stats counts the engine messages of the passed seeds by type (the
 * header's type, at every send an engine makes) and prints them with the
 * count per accepted client operation: the simulator's figure of messages
 * per lock operation, for node counts up to SIM_MAX_NODES (64; runs with
 * --faults and the counts a seed picks stay at SIM_FAULT_MAX_NODES).
 *
 * --alloc-faults P makes the engines' allocations fail (core/alloc.c's
 * hook), each with probability P/1000, during the schedule phase; quiesce
 * and drain are the quiet tail without failures.  A call refused with
 * -ENOMEM must have changed nothing (no AST, no message: as any refused
 * call); a request or conversion may complete with -ENOMEM (the client
 * model takes it as a clean failure); a message an engine rejects is a
 * failure as ever (a message dropped for want of memory is lost); a
 * recovery step that fails makes the glue restart recovery under a newer
 * event (recovery_failed, see sim-faults.c).  Safety is checked after
 * every step as always, and in the quiet tail every operation must end.
 *
 * LINK DROPS (--link-drops).  What lowcomms promises the engine, and so
 * all a link may do here (lowcomms/lowcomms.c: RECEIVING, HOLDING A NODE,
 * the epochs, RECONNECT, KNOWN LIMITS; plugin/comms.c): between two
 * nodes that keep each other in their tables, that is until one of their
 * daemons leaves the cluster (dlmd_comms_node_reset -> lc_node_renew: a
 * membership change, which the simulator's deaths and splits model),
 * every message is delivered exactly once and in the order it was sent,
 * per ordered pair, however often the connection drops.  A drop and
 * reconnect (a reset, a cut shorter than the cluster manager notices, a
 * handshake timeout, lc_restart, a hold's resume) costs only time: the
 * sender keeps every frame until its peer's lowcomms acknowledges it and
 * resends its whole unacknowledged queue after the new HELLO; the
 * receiver drops by sequence number what it delivered already (an ack
 * lost with the connection) and closes the connection on a gap (a frame
 * lost: ops_frames_lost, which dlmd answers by removing one of the two
 * nodes from the cluster, a membership change again).  The epochs make
 * this hold only within one incarnation of each end: a new epoch (a
 * restarted daemon, a node reset) is paused until the membership
 * confirms the old life gone, which drops what was queued for it
 * (lowcomms.c, PEER RESTARTED): frames are lost across it, never seen
 * again, which is why dlmd treats it as a new member.  Nothing is promised across pairs, nor about time:
 * a connection that stays down past peer_unreachable_secs gets its peer
 * removed (plugin/cluster.c, UNREACHABLE PEERS), a membership change.
 *
 * So a drop, to the engine, is a pause of one pair's traffic, both ways:
 * what is in flight between the two and what either sends the other
 * while the connection is down arrives after it is back, in order, once,
 * while every other pair goes on; the two directions come back a few ms
 * apart.  A hold (HOLDING A NODE: an engine that could not take a
 * message reads nothing more from that peer until it is resumed, by a
 * reconnect) is the same pause one way only, the other way flowing.
 * --link-drops makes such drops (5..505 ms, up to six a seed, 30% of
 * them one way, during the schedule phase, any two live nodes, with or
 * without node faults; sim-net.c net_link_drop), and nothing else
 * changes: no engine or glue call is made.  What it tests is the engine's reliance on
 * timing across pairs: a pause long enough for other nodes to move a
 * resource, toss it, recover a death, or let an audit meet the pair's
 * messages far out of step.  The broken transports the promise forbids,
 * --fault link-dup (at a drop, the first message in flight each way is
 * resent and not dropped as a duplicate: seen twice) and --fault
 * link-lose (it is not resent: never seen), must be caught by the
 * checks (sim-broken.test).
 *
 * Every loop is bounded; hitting a bound is reported as a liveness failure.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "tests/sim.h"

#define DEFAULT_OPS		300
#define MAX_STEPS_PER_OP	400	/* schedule phase bound: ops * this */
#define MAX_QUIESCE_STEPS	200000
#define MAX_DRAIN_STEPS		200000
#define TICK_MAX_MS		10	/* a tick advances time 1..10 ms */
#define LINK_DROPS_MAX		6	/* --link-drops: per seed at most */
#define LINK_DROP_PERMILLE	8	/* chance of one per schedule step */
#define LINK_DROP_MIN_MS	5	/* a connection is down this long, */
#define LINK_DROP_SPREAD_MS	500	/* ... plus up to this */
#define LINK_HOLD_PCT		30	/* a drop is one way only: a hold */

/* ------------------------------------------------------ fail and trace */

void sim_trace(struct sim *sim, const char *fmt, ...)
{
	char line[SIM_TRACE_TEXT], prefix[40];
	va_list ap;
	int n;

	n = snprintf(prefix, sizeof(prefix), "%6llu %7llums ",
		     (unsigned long long)sim->step, (unsigned long long)sim->now);
	memcpy(line, prefix, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	trace_add(&sim->trace, line);
}

void sim_fail(struct sim *sim, const char *fmt, ...)
{
	va_list ap;

	if (sim->failed)
		return;
	sim->failed = true;
	va_start(ap, fmt);
	vsnprintf(sim->fail_msg, sizeof(sim->fail_msg), fmt, ap);
	va_end(ap);
	sim_trace(sim, "VIOLATION: %s", sim->fail_msg);
}

/* ------------------------------------------------------------ callbacks */

static uint64_t total_moves;	/* --remaster: over all seeds run */
static uint64_t total_move_kills;	/* deaths asked for mid-move */
static uint64_t total_alloc_fails;	/* --alloc-faults: over all seeds run */

/* At a MIGRATE from 'from' to 'to': the node to kill mid-move, the
 * old master, the new one, or (a third of the time, with three nodes or
 * more) another node, which may hold locks the move leaves alone or be
 * the directory node. */
static uint32_t move_victim(struct sim *sim, uint32_t from, uint32_t to)
{
	uint32_t third;

	if (sim->nnodes >= 3 && rng_pct(&sim->rng, 33)) {
		do
			third = 1 + (uint32_t)rng_below(&sim->rng, sim->nnodes);
		while (third == from || third == to);
		return third;
	}
	return rng_pct(&sim->rng, 50) ? to : from;
}

static void cb_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct sim_node *n = ctx;
	struct sim *sim = n->n_sim;

	sim->call_sends++;
	if (to == n->n_id || to < 1 || to > sim->nnodes) {
		sim_fail(sim, "n%u sends a message to node %u", n->n_id, to);
		return;
	}
	if (len >= 8) {		/* the header's type, little-endian at 6 */
		unsigned int type = (unsigned int)((const unsigned char *)buf)[6] |
				    (unsigned int)((const unsigned char *)buf)[7] << 8;

		if (type <= DLM_MSG_MAX)
			sim->n_msgs_type[type]++;
		if (type == DLM_MSG_REMOVE)
			sim->call_removes++;
		/* --remaster --faults: kill the old master, the new one or a
		 * third node (at MIGRATE) or the directory node (at
		 * DIR_MOVE) mid-move */
		if (sim->opts->o_remaster && sim->opts->o_faults &&
		    !sim->kill_next && (type == DLM_MSG_MIGRATE ||
					type == DLM_MSG_DIR_MOVE ||
					type == DLM_MSG_REPOINT) &&
		    rng_pct(&sim->rng, 30) && ++total_move_kills)
			sim->kill_next = (int)(type == DLM_MSG_DIR_MOVE ? to :
					       type == DLM_MSG_REPOINT &&
					       rng_pct(&sim->rng, 50) ? to :
					       move_victim(sim, n->n_id, to));
		/* --bounce: a third node (neither the new master sending
		 * it nor the directory node) dies or is cut off while the
		 * DIR_MOVE is on its way, and joins again as soon as it
		 * may (sim-faults.c faults_step) */
		if (sim->opts->o_bounce && sim->opts->o_faults &&
		    type == DLM_MSG_DIR_MOVE && !sim->kill_next &&
		    !sim->bounce_next && !sim->bounce_rejoin &&
		    sim->nnodes >= 3 && rng_pct(&sim->rng, 70)) {
			uint32_t third = 1 + (uint32_t)rng_below(&sim->rng,
								 sim->nnodes);

			if (third != n->n_id && third != to)
				sim->bounce_next = (int)third;
		}
		/* --dir-lag: the new master's word to the directory is slow
		 * (its link too, FIFO), so that a second move may be decided
		 * before the first one's DIR_MOVE arrives */
		if (sim->opts->o_dir_lag && type == DLM_MSG_DIR_MOVE)
			sim->net.n_lag = 1 + (uint32_t)rng_below(&sim->rng,
							 sim->opts->o_dir_lag);
	}
	if (!sim->nodes[to - 1].n_alive)
		return;		/* a dead node hears nothing */
	if (net_send(&sim->net, &sim->rng, sim->now, n->n_id, to, buf, len, n->n_event))
		sim_fail(sim, "simulator: out of memory");
}

static void cb_ast(void *ctx, const struct dlm_ast *ast)
{
	struct sim_node *n = ctx;
	struct sim *sim = n->n_sim;
	struct sim_ast_rec *a;
	unsigned int i;

	if (sim->nastq == sim->astqcap) {
		unsigned int cap = sim->astqcap ? 2 * sim->astqcap : 64;
		struct sim_ast_rec *q = realloc(sim->astq, cap * sizeof(*q));

		if (!q)
			abort();
		sim->astq = q;
		sim->astqcap = cap;
	}
	a = &sim->astq[sim->nastq++];
	memset(a, 0, sizeof(*a));
	a->a_node = (int)(n - sim->nodes);
	a->a_ls = -1;
	for (i = 0; i < sim->nls; i++)
		if (ast->ls == n->n_ls[i])
			a->a_ls = (int)i;
	a->a_ast = *ast;
	a->a_ast.lvb = NULL;
	if (ast->lvb) {
		a->a_has_lvb = true;
		memcpy(a->a_lvb, ast->lvb, DLM_LVB_LEN);
	}
	if (a->a_ls < 0)
		sim_fail(sim, "n%u: AST names an unknown lockspace", n->n_id);
}


/* --remaster: the engines log each move (core/remaster.c).  A resource
 * that arrived on a node must stay there SIM_REMASTER_TICKS ticks (no
 * bounce); a move the receiver cannot take, or a lock count that does
 * not match, is a protocol error. */
static void remaster_log(struct sim *sim, uint32_t node, const char *line)
{
	const char *p = strstr(line, "remaster: \""), *q;
	char name[96];
	unsigned int i;
	size_t len;

	if (strstr(line, "remaster: node ") || strstr(line, " locks, ") ||
	    strstr(line, "but its master is") || strstr(line, "not master")) {
		sim_fail(sim, "REMASTER: n%u: %s", node, line);
		return;
	}
	if (!p)
		return;
	/* the name: the lockspace prefix and the key between the quotes */
	q = strchr(p + 11, '"');
	if (!q)
		return;
	len = (size_t)(q - line);
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, line, len);
	name[len] = 0;
	for (i = 0; i < sim->narrivals; i++)
		if (sim->arrivals[i].a_node == node &&
		    !strcmp(sim->arrivals[i].a_name, name))
			break;
	if (strstr(q, " moves to node ")) {
		sim->n_moves++;
		total_moves++;
		if (i < sim->narrivals &&
		    sim->nticks - sim->arrivals[i].a_tick < SIM_REMASTER_TICKS)
			sim_fail(sim, "REMASTER: bounce: n%u moves %s away %llu ticks "
				 "after it arrived", node, name,
				 (unsigned long long)(sim->nticks -
						      sim->arrivals[i].a_tick));
		return;
	}
	if (!strstr(q, " moved here from node "))
		return;
	sim->nodes[node - 1].n_moved_step = sim->step;
	if (i == sim->narrivals) {
		if (sim->narrivals == SIM_ARRIVALS) {
			memmove(&sim->arrivals[0], &sim->arrivals[1],
				sizeof(sim->arrivals[0]) * (SIM_ARRIVALS - 1));
			i = --sim->narrivals;
		}
		sim->narrivals++;
	}
	sim->arrivals[i].a_node = node;
	sim->arrivals[i].a_tick = sim->nticks;
	memcpy(sim->arrivals[i].a_name, name, len + 1);
}

static void cb_log(void *ctx, enum dlm_log_level level, const char *line)
{
	struct sim_node *n = ctx;
	struct sim *sim = n->n_sim;

	/* the audit (core/audit.c) calls a lock stuck: a correct engine on a
	 * network that loses nothing never has two copies of a lock that
	 * disagree.  "does not answer" is a judgement of time, and this
	 * network holds a message for any number of steps: not checked */
	if (strstr(line, " is stuck: ") && !strstr(line, "does not answer"))
		sim_fail(sim, "n%u: %s", n->n_id, line);
	if (sim->opts->o_remaster)
		remaster_log(sim, n->n_id, line);
	if (level > DLM_LOG_INFO && !sim->opts->o_verbose)
		return;
	sim_trace(sim, "log  n%u <%d> %s", n->n_id, (int)level, line);
}

/* Recovery of 'event' reached its end on this node: the glue
 * (sim-faults.c) finishes it at a later step. */
static void cb_recovery_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	struct sim_node *n = ctx;
	struct sim *sim = n->n_sim;
	unsigned int i;

	for (i = 0; i < sim->nls; i++)
		if (ls == n->n_ls[i]) {
			n->n_done[i] = event;
			sim_trace(sim, "done n%u ls%u recovery %u", n->n_id, i, event);
			return;
		}
	sim_fail(sim, "n%u: recovery_done names an unknown lockspace", n->n_id);
}

/* A recovery step failed here (--alloc-faults: out of memory): the glue
 * restarts recovery under a newer event. */
static void cb_recovery_failed(void *ctx, struct dlm_ls *ls, uint32_t event,
			       int error)
{
	struct sim_node *n = ctx;
	struct sim *sim = n->n_sim;

	(void)ls;
	sim_trace(sim, "fail n%u recovery %u: %d", n->n_id, event, error);
	if (error != -ENOMEM || !sim->opts->o_alloc_faults) {
		sim_fail(sim, "n%u: recovery %u failed (%d) with no allocation "
			 "failing", n->n_id, event, error);
		return;
	}
	glue_recovery_failed(sim, (int)n->n_id - 1, event);
}

const struct dlm_core_ops sim_core_ops = {
	.send = cb_send,
	.ast = cb_ast,
	.log = cb_log,
	.recovery_done = cb_recovery_done,
	.recovery_failed = cb_recovery_failed,
};

/* --alloc-faults: the engines' allocation hook (core/alloc.c).  Its
 * draws come from a generator of its own, seeded from the seed. */
static int alloc_fail(void *arg)
{
	struct sim_node *n = arg;
	struct sim *sim = n->n_sim;

	if (!sim->alloc_on ||
	    rng_below(&sim->alloc_rng, 1000) >= sim->opts->o_alloc_faults)
		return 0;
	sim->n_alloc_fails++;
	total_alloc_fails++;
	sim_trace(sim, "nomem n%u: an allocation fails", n->n_id);
	return 1;
}

/* Node n's engine (n_id and n_sim set), configured from the run's
 * options: 0, or -ENOMEM with n_core NULL. */
int sim_node_engine_new(struct sim_node *n)
{
	const struct sim *sim = n->n_sim;
	struct dlm_core_config cfg;

	memset(&cfg, 0, sizeof(cfg));	/* deadlock_ms 0, as before */
	cfg.our_nodeid = n->n_id;
	cfg.toss_ms = sim->toss_ms;
	cfg.lvbseq_start = sim->opts->o_lvbseq_start;
	cfg.audit_ms = sim->audit_ms;
	cfg.remaster_ticks = sim->opts->o_remaster ? SIM_REMASTER_TICKS : 0;
	cfg.remaster_window = SIM_REMASTER_WINDOW;
	cfg.remaster_shared = sim->opts->o_repoint;
	if (n->n_id == sim->opts->o_mixed) {
		cfg.remaster_ticks = 0;
		cfg.remaster_shared = 0;
	}
	cfg.max_tossed = sim->opts->o_max_tossed;
	cfg.fold = sim->opts->o_fold;
	n->n_core = dlm_core_new(&cfg, &sim_core_ops, n);
	return n->n_core ? 0 : -ENOMEM;
}

/* A new engine's test switches: the --fault, the allocation hook. */
void sim_node_engine_setup(struct sim_node *n)
{
	dlm_core_set_fault(n->n_core, n->n_sim->opts->o_fault);
	if (n->n_sim->opts->o_alloc_faults)
		dlm_core_set_alloc_hook(n->n_core, alloc_fail, n);
}

/* Whether rc is a call refused for want of memory while allocations may
 * fail: refused cleanly, it changed nothing (call_lock, call_unlock). */
bool sim_out_of_memory(const struct sim *sim, int rc)
{
	return rc == -ENOMEM && sim->alloc_on;
}

/* ------------------------------------------------------- step plumbing */

void sim_deliver_asts(struct sim *sim)
{
	unsigned int i;

	/* model_deliver_ast() never calls the engine, so the queue is stable */
	for (i = 0; i < sim->nastq && !sim->failed; i++)
		if (sim->astq[i].a_ls >= 0)
			model_deliver_ast(sim, &sim->astq[i]);
	sim->nastq = 0;
}

/* --fold: whether the schedule made any engine fold at all (a node
 * folds only while it is its lockspace's only member), for the seed's
 * summary line. */
static void count_folded(struct sim *sim)
{
	struct dlm_ls_stats st;
	uint64_t folded = 0;
	unsigned int i, ls;

	for (i = 0; i < sim->nnodes; i++)
		for (ls = 0; ls < sim->nls; ls++) {
			if (!sim->nodes[i].n_alive || !sim->nodes[i].n_ls[ls])
				continue;
			dlm_core_ls_stats(sim->nodes[i].n_ls[ls], &st);
			folded += st.ls_folded;
		}
	if (folded)
		sim->n_fold_steps++;
	if (folded > sim->n_folded_max)
		sim->n_folded_max = folded;
}

/* After every step: hand the ASTs to the clients, then check. */
static void after_step(struct sim *sim)
{
	sim_deliver_asts(sim);
	sim->ncrashed = 0;
	if (!sim->failed)
		model_check_clients(sim);
	if (!sim->failed)
		check_engines(sim);
	if (!sim->failed)
		check_model(sim);
	if (sim->check_recovered) {
		sim->check_recovered = false;
		if (!sim->failed)
			check_recovered(sim);
	}
	if (sim->opts->o_fold)
		count_folded(sim);
	sim->step++;
}

static void tick_all(struct sim *sim, uint64_t advance)
{
	unsigned int i;

	sim->now += advance;
	sim->nticks++;
	sim_trace(sim, "tick +%llu", (unsigned long long)advance);
	for (i = 0; i < sim->nnodes; i++)
		if (sim->nodes[i].n_alive)
			dlm_core_tick(sim->nodes[i].n_core, sim->now);
}

static void step_tick(struct sim *sim)
{
	tick_all(sim, 1 + rng_below(&sim->rng, TICK_MAX_MS));
}

/* One line per delivered message: its type and the fields that tell
 * what it does, so a failing seed's trace reads as a protocol log. */
static void trace_msg(struct sim *sim, const struct sim_msg *m)
{
	struct dlm_msg d;
	char key[120];
	size_t i, k = 0;

	if (dlm_msg_decode(m->m_data, m->m_len, &d, NULL)) {
		sim_trace(sim, "msg  n%u->n%u len %zu (undecodable)", m->m_from,
			  m->m_to, m->m_len);
		return;
	}
	/* components are length-prefixed: show bytes < 0x20 as '/' */
	for (i = 0; i < d.m_keylen && k + 2 < sizeof(key); i++) {
		unsigned char c = d.m_key[i];

		key[k++] = c >= 0x20 && c < 0x7f ? (char)c : '/';
	}
	key[k] = 0;
	sim_trace(sim, "msg  n%u->n%u %s ev %u lk %08x rem %08x st %d gr %d rq %d "
		  "node %u \"%s\"%s", m->m_from, m->m_to, dlm_msg_type_str(d.m_type),
		  d.m_gen, d.m_lkid, d.m_remid, d.m_status, d.m_grmode, d.m_rqmode,
		  d.m_nodeid, key, d.m_lvb ? " +lvb" : "");
}

/* Deliver one due message; with none due, move time to the next one. */
static void step_deliver(struct sim *sim)
{
	struct sim_msg *m = net_pick(&sim->net, &sim->rng, sim->now);
	int rc;

	if (!m) {
		uint64_t due = net_next_due(&sim->net);

		if (sim->opts->o_faults && glue_next_due(sim) < due)
			due = glue_next_due(sim) > sim->now ? glue_next_due(sim) : sim->now + 1;
		if (due == UINT64_MAX)
			step_tick(sim);
		else
			tick_all(sim, due - sim->now);
		return;
	}
	trace_msg(sim, m);
	rc = dlm_core_receive(sim->nodes[m->m_to - 1].n_core, m->m_from,
			      m->m_data, m->m_len);
	/* not taken for want of memory, nothing changed: the transport
	 * offers it again later, ahead of what followed it (core.h) */
	if (rc == -ENOMEM && sim->alloc_on) {
		sim_trace(sim, "msg  n%u could not take it yet: again later",
			  m->m_to);
		net_requeue(&sim->net, m, sim->now + 1 +
			    rng_below(&sim->rng, TICK_MAX_MS));
		return;
	}
	/* with faults, only a rejection between two live nodes of the same
	 * membership is wrong (the network drops a dead node's messages) */
	if (rc && (!sim->opts->o_faults ||
		   m->m_event == sim->nodes[m->m_to - 1].n_event))
		sim_fail(sim, "n%u rejected a message from n%u (len %zu): %d",
			 m->m_to, m->m_from, m->m_len, rc);
	else if (rc)
		sim_trace(sim, "msg  n%u rejected it (%d): sent in event %u, now in %u",
			  m->m_to, rc, m->m_event, sim->nodes[m->m_to - 1].n_event);
	free(m);
}

/* ---------------------------------------------------- engine entry points */

static uint64_t new_astarg(struct sim *sim)
{
	return ++sim->next_astarg;
}

static void range_str(const struct sim_lock *lk, bool ranged,
		      const struct dlm_range *r, char *out, size_t len)
{
	(void)lk;
	if (!ranged)
		snprintf(out, len, "all");
	else
		snprintf(out, len, "%llu-%llu", (unsigned long long)r->ra_start,
			 (unsigned long long)r->ra_end);
}

static int call_lock(struct sim *sim, int node, int ls, const struct dlm_lock_req *req,
		     uint32_t *lkid, const char *what)
{
	char fl[200], rng[48], name[200];
	uint64_t sends = sim->call_sends;
	unsigned int nast = sim->nastq;
	int rc;

	*lkid = 0;
	sim->n_ops++;
	rc = dlm_core_lock(sim->nodes[node].n_ls[ls], req, lkid);
	if (!rc)
		sim->n_ops_ok++;
	sim_flags_str(req->flags, fl, sizeof(fl));
	range_str(NULL, req->range != NULL, req->range ? req->range : &(struct dlm_range){0, 0},
		  rng, sizeof(rng));
	if (req->flags & DLM_LKF_CONVERT) {
		snprintf(name, sizeof(name), "lk %08x", req->lkid);
	} else {
		unsigned char key[1 + DLM_RESNAME_MAXLEN + 8];
		unsigned int len = req->namelen <= DLM_RESNAME_MAXLEN + 8 ?
				   req->namelen : DLM_RESNAME_MAXLEN + 8;

		key[0] = (unsigned char)len;
		if (req->name && len)
			memcpy(key + 1, req->name, len);
		trace_key(key, req->name ? 1 + len : 1, name, sizeof(name));
		if (!len)
			snprintf(name, sizeof(name), "(empty)");
	}
	sim_trace(sim, "op   n%d ls%d owner %llx %s %s %s flags=%s range=%s parent=%08x "
		  "lvb=v%llu astarg=%llu -> %d lk %08x", node + 1, ls,
		  (unsigned long long)req->owner, what, name, sim_mode_str(req->mode), fl,
		  rng, req->parent, (unsigned long long)(req->lvb ? lvb_value(req->lvb) : 0),
		  (unsigned long long)req->astarg, rc, *lkid);
	if (rc && (sim->nastq != nast || sim->call_sends != sends))
		sim_fail(sim, "refused dlm_core_lock (%d) still emitted %u ASTs, %llu messages",
			 rc, sim->nastq - nast,
			 (unsigned long long)(sim->call_sends - sends));
	return rc;
}

static int call_unlock(struct sim *sim, int node, int ls, const struct dlm_unlock_req *req,
		       const char *what)
{
	char fl[200];
	uint64_t sends = sim->call_sends;
	unsigned int nast = sim->nastq;
	int rc;

	sim->n_ops++;
	rc = dlm_core_unlock(sim->nodes[node].n_ls[ls], req);
	if (!rc)
		sim->n_ops_ok++;
	sim_flags_str(req->flags, fl, sizeof(fl));
	sim_trace(sim, "op   n%d ls%d owner %llx %s lk %08x flags=%s lvb=v%llu astarg=%llu -> %d",
		  node + 1, ls, (unsigned long long)req->owner, what, req->lkid, fl,
		  (unsigned long long)(req->lvb ? lvb_value(req->lvb) : 0),
		  (unsigned long long)req->astarg, rc);
	if (rc && (sim->nastq != nast || sim->call_sends != sends))
		sim_fail(sim, "refused dlm_core_unlock (%d) still emitted %u ASTs, %llu messages",
			 rc, sim->nastq - nast,
			 (unsigned long long)(sim->call_sends - sends));
	return rc;
}

/* The last component of a resource key: the name a request passes. */
static const unsigned char *res_name(const struct sim_res *r, unsigned int *len)
{
	unsigned int i = 0, last = 0;

	if (r->r_key[0] == DLM_KEY_DIGEST_MARK)
		i = 1 + DLM_KEY_DIGEST_LEN;	/* a deep one: digest, then name */
	while (i < r->r_keylen) {
		last = i;
		i += 1u + r->r_key[i];
	}
	*len = r->r_key[last];
	return r->r_key + last + 1;
}

static void pick_range(struct sim *sim, bool *ranged, struct dlm_range *r)
{
	uint64_t s, len;

	*ranged = rng_pct(&sim->rng, 30);
	if (!*ranged) {
		r->ra_start = DLM_RANGE_MIN;
		r->ra_end = DLM_RANGE_MAX;
		return;
	}
	s = rng_below(&sim->rng, SIM_RANGE_SPACE);
	len = rng_below(&sim->rng, 16);
	r->ra_start = s;
	r->ra_end = s + len < SIM_RANGE_SPACE ? s + len : SIM_RANGE_SPACE - 1;
}

/* A true down-conversion: granted at once, never blocked (PR -> CW is a
 * "middle" conversion, not a down-conversion). */
static bool is_down(int from, int to)
{
	return to < from && !(from == DLM_LOCK_PR && to == DLM_LOCK_CW);
}

/* LVB flags for a release (unlock or conversion to 'to') of lk.  A PW/EX
 * holder that has ever used VALBLK always writes or invalidates, so the
 * model never depends on whether the engine remembers an older VALBLK. */
static uint32_t release_lvb_flags(struct sim *sim, const struct sim_lock *lk)
{
	unsigned int r = rng_below(&sim->rng, 100);

	if (lk->l_gmode < DLM_LOCK_PW)
		return r < 10 ? DLM_LKF_VALBLK : 0;	/* a non-writer: no effect */
	if ((sim->opts->o_avoid & AVOID_VALBLK_RELEASE) &&
	    !(lk->l_req_flags & DLM_LKF_VALBLK))
		return r < 80 ? 0 : DLM_LKF_IVVALBLK;
	if (lk->l_ever_valblk)
		return r < 85 ? DLM_LKF_VALBLK : DLM_LKF_IVVALBLK;
	return r < 50 ? 0 : r < 85 ? DLM_LKF_VALBLK : DLM_LKF_IVVALBLK;
}

/* Around the LVB effect of a conversion or unlock the engine accepted:
 * called before it ('after' false) and after it; notes in lk the write
 * recorded, if any, so that lvb_unwrite() can take it back should the
 * operation be refused -ENOMEM later. */
static void lvb_wrote(struct sim *sim, struct sim_lock *lk, bool after)
{
	const struct sim_res *r = &sim->res[lk->l_res];

	if (!after) {
		lk->l_wrote = r->r_nwrites;
		return;
	}
	if (lk->l_wrote == r->r_nwrites) {
		lk->l_wrote = 0;
		return;
	}
	lk->l_wrote = r->r_nwrites;
	lk->l_wrote_loosened = r->r_nloosened;
}

/* Record the LVB effect of a release issued by lk with 'flags'. */
static void release_lvb_effect(struct sim *sim, const struct sim_lock *lk,
			       uint32_t flags, uint64_t value)
{
	if (lk->l_gmode < DLM_LOCK_PW || !(flags & (DLM_LKF_VALBLK | DLM_LKF_IVVALBLK)))
		return;
	/* the caller notes the write (lvb_wrote) for lvb_unwrite */
	/* writers of disjoint ranges of one resource hold PW/EX together:
	 * the order their writes reach the master is not the issue order */
	if (lk->l_ranged)
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
	else if (flags & DLM_LKF_IVVALBLK)
		lvb_write(sim, lk->l_res, LVB_INVALID, 0);
	else if (flags & DLM_LKF_VALBLK)
		lvb_write(sim, lk->l_res, LVB_VALID, value);
}

/* -------------------------------------------------------- client choices */

static struct sim_client *client_of(struct sim *sim, int node, int client)
{
	return &sim->nodes[node].n_clients[client];
}

/* A random lock of the client satisfying 'ok', or NULL. */
static struct sim_lock *pick_lock(struct sim *sim, int node, int client,
				  bool (*ok)(const struct sim_lock *))
{
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *cand[64];
	unsigned int n = 0, i;

	for (i = 0; i < c->c_nlocks && n < 64; i++)
		if (ok(c->c_locks[i]))
			cand[n++] = c->c_locks[i];
	return n ? cand[rng_below(&sim->rng, n)] : NULL;
}

static bool ok_granted_idle(const struct sim_lock *lk)
{
	return lock_is_idle(lk) && lk->l_gmode != DLM_LOCK_IV;
}

/* Granted, idle, and no silent cancel still settling: the engine's
 * answer to any call on it is predictable. */
static bool ok_stable(const struct sim_lock *lk)
{
	return ok_granted_idle(lk) && !lk->l_cancel_unresolved;
}

static bool ok_unlockable(const struct sim_lock *lk)
{
	return ok_granted_idle(lk) && !lk->l_nchildren;
}

static bool ok_cancelable(const struct sim_lock *lk)
{
	return (lk->l_op == OP_REQUEST || lk->l_op == OP_CONVERT) &&
	       !lk->l_cancel && !lk->l_force && !lk->l_op_adopt;
}

static bool ok_forceable(const struct sim_lock *lk)
{
	if (lk->l_nchildren || lk->l_cancel || lk->l_force || lk->l_orphan ||
	    lk->l_op == OP_UNLOCK || lk->l_op_adopt)
		return false;
	/* a NOQUEUE request may end before the unlock is seen: ambiguous */
	return !(lk->l_op == OP_REQUEST && (lk->l_op_flags & DLM_LKF_NOQUEUE));
}

static bool ok_parent(const struct sim_lock *lk)
{
	return ok_granted_idle(lk);
}

/* The client's lock on the deepest resource that may be a parent. */
static struct sim_lock *pick_deepest(struct sim *sim, int node, int client)
{
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *best = NULL;
	unsigned int i;

	for (i = 0; i < c->c_nlocks; i++) {
		struct sim_lock *lk = c->c_locks[i];

		if (ok_parent(lk) && (!best || sim->res[lk->l_res].r_depth >
					       sim->res[best->l_res].r_depth))
			best = lk;
	}
	return best;
}

static bool ok_pending_request(const struct sim_lock *lk)
{
	return lk->l_op == OP_REQUEST && !lk->l_cancel && !lk->l_force &&
	       !lk->l_op_adopt;
}

static void new_lock_on(struct sim *sim, int node, int client,
			struct sim_lock *parent, int ls, int res, int mode);
static int master_of(struct sim *sim, int res);

/* Is res a fresh name (no lock on it anywhere: in the model, or in an
 * engine at the last walk) under
 * a parent that node masters, with no recovery under way?  Its request
 * must then send nothing. */
static bool fresh_under_local_parent(struct sim *sim, int node,
				     const struct sim_lock *parent, int res)
{
	unsigned int i;

	if (glue_busy(sim) || !node_usable(sim, node) ||
	    dlm_core_ls_state(sim->nodes[node].n_ls[parent->l_ls], NULL, NULL) !=
	    DLM_LS_RUNNING || master_of(sim, parent->l_res) != node)
		return false;
	for (i = 0; i < SIM_LOCK_HASH; i++) {
		const struct sim_lock *lk;

		for (lk = sim->lock_hash[i]; lk; lk = lk->l_hnext)
			if (lk->l_res == res)
				return false;
	}
	/* nor in any engine at the last walk */
	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_snap *sn = &sim->nodes[i].n_snap[sim->nodes[i].n_cur];
		unsigned int j;

		for (j = 0; j < sn->s_n; j++)
			if (sn->s_info[j].w_res == res)
				return false;
	}
	return true;
}

/* ------------------------------------------------------------ HOT TREES
 *
 * --hot-trees (with --remaster): deep trees that move.  Why they hardly
 * did: a root moves only with no child resource at its master and (without
 * --repoint) only the new master's locks on it (core/remaster.c "Movable"),
 * and only operations on the root itself fill its window (sub-resources
 * have no window of their own: dlm_remaster_count).  With --depth above 4
 * the workload put 7 in 10 new locks under the client's deepest lock, so a
 * hot root nearly always had a child somewhere, the other nodes' trees
 * (or their locks) and its persistent locks held it too, and the hot
 * node's operations were spread over its chains, few on the roots: 1 or 2
 * moves in 20 seeds of --rehot 4 --ops 1500.  (A client's 6 locks at
 * most also kept every chain at depth 6 or less, whatever --depth said.)
 *
 * The workload (the engine's rule unchanged): the hot roots are names 0
 * and 1 of each lockspace.  On a hot root the hot node does not master
 * (yet), its clients tear down their own tree there, deepest lock first,
 * and take and convert bare root locks, each operation counted at the
 * master; on one it masters (the move done, or its own first lookup), a
 * client grows a chain under its deepest lock there down to --depth (it
 * may hold --depth + 2 locks), converts in it and drops its leaves.  The
 * other nodes make no sub-resource under a hot root and, without
 * --repoint, lock no hot root; when one of them is picked, most often the
 * first one that still has locks in a hot tree (an old hot node's) tears
 * them down, deepest first, or cancels one pending there.  Without
 * --repoint no lock on a hot root is persistent (an orphan pins its
 * root).  So each time the hot node changes (--rehot, 4 times unless
 * given) the old trees go, the roots move, and new deep trees grow under
 * roots that moved: the recoveries, faults and deaths of the other
 * options then meet deep trees whose roots changed master. */

/* The root of res's tree. */
static int root_of(const struct sim *sim, int res)
{
	while (sim->res[res].r_parent >= 0)
		res = sim->res[res].r_parent;
	return res;
}

/* Is res in the tree of a hot root (--hot-trees)? */
static bool in_hot_tree(const struct sim *sim, int res)
{
	const struct sim_res *r = &sim->res[root_of(sim, res)];
	const unsigned char *name;
	unsigned int k, len;

	for (k = 0; k < 2; k++) {
		name = sim_root_name(k, &len);
		if (r->r_keylen == 1 + len && !memcmp(r->r_key + 1, name, len))
			return true;
	}
	return false;
}

/* --hot-trees: does the hot node master the root of res's tree (at the
 * last walk)?  Only then may it grow a tree there. */
static bool hot_grows(struct sim *sim, int node, int res)
{
	return node == sim->hot && master_of(sim, root_of(sim, res)) == node;
}

static void cancel_lock(struct sim *sim, struct sim_lock *lk);
static void unlock_lock(struct sim *sim, struct sim_lock *lk, int64_t flags_in);
static void do_unlock(struct sim *sim, int node, int client);
static void convert_lock(struct sim *sim, struct sim_lock *lk, int mode,
			 int64_t force_flags);

/* --hot-trees: the client's deepest unlockable lock in a hot tree (only
 * root's tree if root >= 0; only below the root if 'children') goes, or
 * else a pending request or conversion there is cancelled.  True if it
 * acted. */
static bool hot_teardown_client(struct sim *sim, int node, int client,
				int root, bool children)
{
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *best = NULL, *pending = NULL;
	unsigned int i;

	for (i = 0; i < c->c_nlocks; i++) {
		struct sim_lock *lk = c->c_locks[i];

		if (!in_hot_tree(sim, lk->l_res) ||
		    (root >= 0 && root_of(sim, lk->l_res) != root) ||
		    (children && sim->res[lk->l_res].r_parent < 0))
			continue;
		if (ok_unlockable(lk)) {
			if (!best || sim->res[lk->l_res].r_depth >
				     sim->res[best->l_res].r_depth)
				best = lk;
		} else if (!pending && ok_cancelable(lk)) {
			pending = lk;
		}
	}
	if (best)
		unlock_lock(sim, best, -1);
	else if (pending)
		cancel_lock(sim, pending);
	return best || pending;
}

/* --hot-trees: a node other than the hot one, the first from 'node' on
 * with locks in a hot tree, tears one down.  True if one did. */
static bool hot_teardown(struct sim *sim, int node)
{
	int n, k, i;

	for (i = 0; i < (int)sim->nnodes; i++) {
		n = (node + i) % (int)sim->nnodes;
		if (n == sim->hot || !node_usable(sim, n))
			continue;
		for (k = 0; k < (int)sim->nodes[n].n_nclients; k++)
			if (hot_teardown_client(sim, n, k, -1, false))
				return true;
	}
	return false;
}

static uint64_t total_hot_locks[SIM_DEPTH_MAX + 1];	/* by depth */

/* --hot-trees: one operation of the hot node's client on a hot root's
 * tree (HOT TREES above). */
static void hot_op(struct sim *sim, int node, int client)
{
	struct sim_client *c = client_of(sim, node, client);
	int ls = (int)rng_below(&sim->rng, sim->nls), mode;
	int root = sim_res_root(sim, ls, rng_below(&sim->rng, 2));
	struct sim_lock *top = NULL, *deep = NULL;
	unsigned int i, limit = sim->opts->o_depth + 2;

	for (i = 0; i < c->c_nlocks; i++) {
		struct sim_lock *lk = c->c_locks[i];

		if (root_of(sim, lk->l_res) != root || !ok_parent(lk))
			continue;
		if (lk->l_res == root && !top)
			top = lk;
		if (!deep || sim->res[lk->l_res].r_depth >
			     sim->res[deep->l_res].r_depth)
			deep = lk;
	}
	mode = (int)rng_below(&sim->rng, DLM_NUM_MODES);
	if (!hot_grows(sim, node, root)) {
		/* not ours yet: no tree (it would pin the root where it
		 * is), bare root locks, each operation counted there */
		if (hot_teardown_client(sim, node, client, root, true))
			return;
		if (top && rng_pct(&sim->rng, 70)) {
			if (mode == top->l_gmode && mode >= DLM_LOCK_PW)
				mode = DLM_LOCK_CR;
			convert_lock(sim, top, mode, -1);
		} else if (c->c_nlocks < SIM_MAX_LOCKS) {
			new_lock_on(sim, node, client, NULL, ls, root, mode);
		} else {
			do_unlock(sim, node, client);
		}
		return;
	}
	/* ours: a chain under the deepest lock, down to --depth */
	if (deep && sim->res[deep->l_res].r_depth < (int)sim->opts->o_depth &&
	    c->c_nlocks < limit && rng_pct(&sim->rng, 70))
		new_lock_on(sim, node, client, deep, deep->l_ls,
			    sim_res_child(sim, deep->l_res,
					  rng_below(&sim->rng, SIM_NCHILD)),
			    mode);
	else if (!deep && c->c_nlocks < limit)
		new_lock_on(sim, node, client, NULL, ls, root, mode);
	else if (deep && rng_pct(&sim->rng, 50)) {
		if (mode == deep->l_gmode && mode >= DLM_LOCK_PW)
			mode = DLM_LOCK_CR;
		convert_lock(sim, deep, mode, -1);
	} else if (!hot_teardown_client(sim, node, client, root, true))
		do_unlock(sim, node, client);
}

/* A new lock request, maybe under a parent, maybe ranged. */
static void do_new_lock(struct sim *sim, int node, int client)
{
	struct sim_lock *parent = NULL;
	int ls, res;

	if (sim->opts->o_depth > SIM_DEPTH) {
		/* deep trees: mostly under the client's deepest lock */
		if (rng_pct(&sim->rng, 70))
			parent = pick_deepest(sim, node, client);
	} else if (rng_pct(&sim->rng, sim->opts->o_remaster ? 10 : 30)) {
		/* (--remaster: fewer trees, which do not move) */
		parent = pick_lock(sim, node, client, ok_parent);
	}
	if (parent && sim->res[parent->l_res].r_depth >= (int)sim->opts->o_depth)
		parent = NULL;
	/* --hot-trees: a tree under a hot root only from the hot node,
	 * once it masters the root */
	if (parent && sim->opts->o_hot_trees && in_hot_tree(sim, parent->l_res) &&
	    !hot_grows(sim, node, parent->l_res))
		parent = NULL;
	if (parent) {
		ls = parent->l_ls;
		res = sim_res_child(sim, parent->l_res, rng_below(&sim->rng, SIM_NCHILD));
	} else {
		ls = (int)rng_below(&sim->rng, sim->nls);
		/* --remaster: the hot node mostly uses two roots (--repoint:
		 * the others often lock them too; --hot-trees without
		 * --repoint: never) */
		res = sim_res_root(sim, ls, sim->opts->o_remaster &&
				   rng_pct(&sim->rng, node == sim->hot ? 70 :
					   sim->opts->o_repoint ? 40 : 0) ?
				   rng_below(&sim->rng, 2) :
				   sim->opts->o_hot_trees && !sim->opts->o_repoint &&
				   node != sim->hot ?
				   2 + rng_below(&sim->rng, SIM_NROOT - 2) :
				   rng_below(&sim->rng, SIM_NROOT));
	}
	new_lock_on(sim, node, client, parent, ls, res,
		    (int)rng_below(&sim->rng, DLM_NUM_MODES));
}

/* Request 'res' in 'mode' (flags random) for the client, under parent. */
static void new_lock_on(struct sim *sim, int node, int client,
			struct sim_lock *parent, int ls, int res, int mode)
{
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *lk;
	struct dlm_lock_req req;
	struct dlm_range range;
	const unsigned char *name;
	unsigned int namelen, r;
	bool ranged, fresh;
	uint32_t lkid, flags = 0;
	uint64_t sends, removes;
	int rc;

	if (rng_pct(&sim->rng, 20)) {
		flags |= DLM_LKF_NOQUEUE;
		if (rng_pct(&sim->rng, 40))
			flags |= DLM_LKF_NOQUEUEBAST;
	}
	if (mode == DLM_LOCK_NL && rng_pct(&sim->rng, 30))
		flags |= DLM_LKF_EXPEDITE;
	if (rng_pct(&sim->rng, 10))
		flags |= DLM_LKF_HEADQUE;
	if (rng_pct(&sim->rng, 10))
		flags |= DLM_LKF_NOORDER;
	r = rng_below(&sim->rng, 100);
	if (r < 8)
		flags |= DLM_LKF_ALTPR;
	else if (r < 16)
		flags |= DLM_LKF_ALTCW;
	if (rng_pct(&sim->rng, 5))
		flags |= DLM_LKF_CONVDEADLK;
	if (rng_pct(&sim->rng, 40))
		flags |= DLM_LKF_VALBLK;
	if (!parent && rng_pct(&sim->rng, 12) &&
	    !(sim->opts->o_hot_trees && !sim->opts->o_repoint &&
	      in_hot_tree(sim, res)))	/* an orphan would pin it */
		flags |= DLM_LKF_PERSISTENT;
	if (sim->opts->o_hot_trees && in_hot_tree(sim, res))
		total_hot_locks[sim->res[res].r_depth]++;
	pick_range(sim, &ranged, &range);
	if (sim->opts->o_fold && !parent && rng_pct(&sim->rng, 40)) {
		/* --fold: a plain root request, one that may fold (no
		 * value block, range or PERSISTENT; core/solo.c), more often */
		flags &= ~(uint32_t)(DLM_LKF_VALBLK | DLM_LKF_PERSISTENT);
		ranged = false;
	}
	name = res_name(&sim->res[res], &namelen);

	memset(&req, 0, sizeof(req));
	req.mode = mode;
	req.flags = flags;
	req.name = name;
	req.namelen = namelen;
	req.parent = parent ? parent->l_lkid : 0;
	req.range = ranged ? &range : NULL;
	req.owner = c->c_owner;
	req.astarg = new_astarg(sim);
	req.want_bast = rng_pct(&sim->rng, 92);
	fresh = parent && fresh_under_local_parent(sim, node, parent, res);
	sends = sim->call_sends;
	removes = sim->call_removes;
	rc = call_lock(sim, node, ls, &req, &lkid, "lock");
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "a valid lock request was refused: %d", rc);
		return;
	}
	if (fresh) {
		/* mastered with its parent, here: no message (issue 18).
		 * Not counted: REMOVEs.  The child is mastered here with no
		 * directory record and is in use, so a REMOVE is not its
		 * own: it is dlm_toss_trim's, at the end of the call, for
		 * another resource over --max-tossed (one a refused call
		 * left over the bound, core/resource.c: dlm-sim
		 * --alloc-faults 100 --faults --remaster --repoint --rehot
		 * 8 --ops 1000 --bounce --depth 16 --max-tossed 1 seed 590) */
		uint64_t own = (sim->call_sends - sends) -
			       (sim->call_removes - removes);

		sim->n_fresh_local++;
		sim->n_fresh_msgs += own;
		if (own)
			sim_fail(sim, "FRESH: n%d: a fresh child of a resource mastered "
				 "there sent %llu messages", node + 1,
				 (unsigned long long)own);
	}
	if (lock_find(sim, node, ls, lkid)) {
		sim_fail(sim, "n%d: new lock got id %08x, which is in use", node + 1, lkid);
		return;
	}
	lk = lock_new(sim, node, ls, lkid, client, res);
	lk->l_ranged = ranged;
	lk->l_range = range;
	lk->l_want_bast = req.want_bast;
	lk->l_persistent = flags & DLM_LKF_PERSISTENT;
	lk->l_ever_valblk = flags & DLM_LKF_VALBLK;
	lk->l_op = OP_REQUEST;
	lk->l_op_mode = mode;
	lk->l_op_flags = flags;
	lk->l_req_flags = flags;
	lk->l_op_astarg = req.astarg;
	lk->l_op_nomem = sim->n_alloc_fails;
	lk->l_lvb_since = sim->res[res].r_nwrites;
	if (parent) {
		lk->l_parent = parent;
		parent->l_nchildren++;
	}
}

/* A client's granted, idle lock on resource res (a parent to be). */
static struct sim_lock *client_lock_on(struct sim *sim, int node, int client,
				       int res)
{
	struct sim_client *c = client_of(sim, node, client);
	unsigned int i;

	for (i = 0; i < c->c_nlocks; i++)
		if (c->c_locks[i]->l_res == res && ok_parent(c->c_locks[i]))
			return c->c_locks[i];
	return NULL;
}

/* The node whose engine masters res at the last walk, or -1. */
static int master_of(struct sim *sim, int res)
{
	unsigned int i, j;

	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_snap *sn = &sim->nodes[i].n_snap[sim->nodes[i].n_cur];

		if (!sim->nodes[i].n_alive)
			continue;
		for (j = 0; j < sn->s_n; j++)
			if (sn->s_info[j].w_res == res && sn->s_info[j].w_is_master)
				return (int)i;
	}
	return -1;
}

/* Concurrent creators (issue 18): every node with a client holding a
 * lock on the parent asks for the same fresh child at once, in strong
 * modes; they must meet at the parent's master.  With --faults, the
 * parent's master sometimes dies right then, with the requests in
 * flight or the child just created there. */
static void do_creators(struct sim *sim, int node, int client)
{
	struct sim_lock *parent = pick_lock(sim, node, client, ok_parent), *p;
	int res, n, k, master;

	if (!parent || sim->res[parent->l_res].r_depth >= (int)sim->opts->o_depth ||
	    (sim->opts->o_hot_trees && in_hot_tree(sim, parent->l_res) &&
	     !hot_grows(sim, node, parent->l_res))) {
		do_new_lock(sim, node, client);
		return;
	}
	res = sim_res_child(sim, parent->l_res, rng_below(&sim->rng, SIM_NCHILD));
	sim_trace(sim, "creators of %d under %d", res, parent->l_res);
	for (n = 0; n < (int)sim->nnodes && !sim->failed; n++) {
		if (!node_usable(sim, n))
			continue;
		for (k = 0; k < (int)sim->nodes[n].n_nclients; k++) {
			if (client_of(sim, n, k)->c_nlocks >= SIM_MAX_LOCKS ||
			    (sim->opts->o_hot_trees && n != sim->hot &&
			     in_hot_tree(sim, parent->l_res)))
				continue;
			p = client_lock_on(sim, n, k, parent->l_res);
			if (!p)
				continue;
			new_lock_on(sim, n, k, p, p->l_ls, res,
				    rng_pct(&sim->rng, 50) ? DLM_LOCK_EX :
							     DLM_LOCK_PW);
			break;
		}
	}
	if (sim->opts->o_faults && !sim->failed && rng_pct(&sim->rng, 20)) {
		master = master_of(sim, parent->l_res);
		if (master >= 0)
			sim->kill_next = master + 1;	/* at the next step */
	}
}

/* Convert lk to 'mode' (a quiesce reaction passes flags; -1: random). */
static void convert_lock(struct sim *sim, struct sim_lock *lk, int mode, int64_t force_flags)
{
	struct dlm_lock_req req;
	char lvb[DLM_LVB_LEN];
	uint64_t value = 0;
	uint32_t flags = DLM_LKF_CONVERT, lkid;
	int rc;

	if (force_flags >= 0) {
		flags |= (uint32_t)force_flags;
	} else {
		if (rng_pct(&sim->rng, 15)) {
			flags |= DLM_LKF_NOQUEUE;
			if (rng_pct(&sim->rng, 40))
				flags |= DLM_LKF_NOQUEUEBAST;
		}
		if (mode > lk->l_gmode && rng_pct(&sim->rng, 20) &&
		    !(sim->opts->o_avoid & AVOID_QUECVT))
			flags |= DLM_LKF_QUECVT;
		if (rng_pct(&sim->rng, 25))
			flags |= DLM_LKF_CONVDEADLK;
		if (rng_pct(&sim->rng, 8))
			flags |= DLM_LKF_ALTPR;
		else if (rng_pct(&sim->rng, 8))
			flags |= DLM_LKF_ALTCW;
		if (rng_pct(&sim->rng, 8))
			flags |= DLM_LKF_HEADQUE;
		if (rng_pct(&sim->rng, 8))
			flags |= DLM_LKF_NOORDER;
		/* PERSISTENT lives in the flags of the latest request (as
		 * in the kernel): a conversion without it ends persistence */
		if (lk->l_persistent && rng_pct(&sim->rng, 85))
			flags |= DLM_LKF_PERSISTENT;
		if (is_down(lk->l_gmode, mode) || mode == lk->l_gmode)
			flags |= release_lvb_flags(sim, lk);
		else if (rng_pct(&sim->rng, 40))
			flags |= DLM_LKF_VALBLK;
	}
	if (flags & DLM_LKF_VALBLK) {
		value = ++sim->next_lvb;
		lvb_make(value, lvb);
	}
	memset(&req, 0, sizeof(req));
	req.mode = mode;
	req.flags = flags;
	req.lkid = lk->l_lkid;
	req.range = lk->l_ranged ? &lk->l_range : NULL;
	req.lvb = (flags & DLM_LKF_VALBLK) ? lvb : NULL;
	/* --avoid recovery-lvb: bytes only with a conversion that writes them
	 * (recovery takes a PR+ holder's buffer for the resource's value) */
	if ((sim->opts->o_avoid & AVOID_RECOVERY_LVB) &&
	    !(lk->l_gmode >= DLM_LOCK_PW && mode <= lk->l_gmode))
		req.lvb = NULL;
	req.owner = lk->l_owner;
	req.astarg = new_astarg(sim);
	req.want_bast = lk->l_want_bast;
	rc = call_lock(sim, lk->l_node, lk->l_ls, &req, &lkid, "convert");
	if (rc == -EBUSY && lk->l_cancel_unresolved)
		return;		/* the silent cancel is still on its way */
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "a valid conversion %s->%s of lk %08x was refused: %d",
			 sim_mode_str(lk->l_gmode), sim_mode_str(mode), lk->l_lkid, rc);
		return;
	}
	lk->l_cancel_unresolved = false;
	lk->l_persistent = flags & DLM_LKF_PERSISTENT;
	lvb_wrote(sim, lk, false);
	if (is_down(lk->l_gmode, mode))
		release_lvb_effect(sim, lk, flags, value);
	else if (lk->l_gmode >= DLM_LOCK_PW &&
		 (((flags & DLM_LKF_ALTPR) && DLM_LOCK_PR < lk->l_gmode) ||
		  ((flags & DLM_LKF_ALTCW) && DLM_LOCK_CW < lk->l_gmode)) &&
		 (flags & (DLM_LKF_VALBLK | DLM_LKF_IVVALBLK)))
		/* granted the weaker alternate, this "up" conversion is a
		 * down-conversion at the master and writes the buffer */
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
	lvb_wrote(sim, lk, true);
	if (flags & DLM_LKF_VALBLK)
		lk->l_ever_valblk = true;
	lk->l_op = OP_CONVERT;
	lk->l_op_mode = mode;
	lk->l_op_flags = flags;
	lk->l_req_flags = flags;
	lk->l_op_astarg = req.astarg;
	lk->l_op_nomem = sim->n_alloc_fails;
	lk->l_lvb_since = sim->res[lk->l_res].r_nwrites;
}

static void do_convert(struct sim *sim, int node, int client)
{
	struct sim_lock *lk = pick_lock(sim, node, client, ok_granted_idle);
	int mode;

	if (!lk)
		return;
	do
		mode = (int)rng_below(&sim->rng, DLM_NUM_MODES);
	while (mode == lk->l_gmode && mode >= DLM_LOCK_PW);
	convert_lock(sim, lk, mode, -1);
}

/* Unlock lk ('flags' < 0: random LVB flags). */
static void unlock_lock(struct sim *sim, struct sim_lock *lk, int64_t flags_in)
{
	struct dlm_unlock_req req;
	char lvb[DLM_LVB_LEN];
	uint64_t value = 0;
	uint32_t flags = flags_in >= 0 ? (uint32_t)flags_in : release_lvb_flags(sim, lk);
	int rc;

	/* --avoid recovery-lvb: a non-writer's unlock passes no LVB bytes */
	if ((sim->opts->o_avoid & AVOID_RECOVERY_LVB) && lk->l_gmode < DLM_LOCK_PW)
		flags &= ~(uint32_t)DLM_LKF_VALBLK;
	if (flags & DLM_LKF_VALBLK) {
		value = ++sim->next_lvb;
		lvb_make(value, lvb);
	}
	memset(&req, 0, sizeof(req));
	req.lkid = lk->l_lkid;
	req.flags = flags;
	req.lvb = (flags & DLM_LKF_VALBLK) ? lvb : NULL;
	req.owner = lk->l_owner;
	req.astarg = new_astarg(sim);
	rc = call_unlock(sim, lk->l_node, lk->l_ls, &req, "unlock");
	if (rc == -EBUSY && lk->l_cancel_unresolved)
		return;
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "a valid unlock of lk %08x was refused: %d", lk->l_lkid, rc);
		return;
	}
	lk->l_cancel_unresolved = false;
	lvb_wrote(sim, lk, false);
	release_lvb_effect(sim, lk, flags, value);
	lvb_wrote(sim, lk, true);
	lk->l_op = OP_UNLOCK;
	lk->l_op_astarg = req.astarg;
	lk->l_op_nomem = sim->n_alloc_fails;
}

static void do_unlock(struct sim *sim, int node, int client)
{
	struct sim_lock *lk = pick_lock(sim, node, client, ok_unlockable);

	if (lk)
		unlock_lock(sim, lk, -1);
}

static void do_cancel(struct sim *sim, int node, int client)
{
	struct sim_lock *lk = pick_lock(sim, node, client, ok_cancelable);

	if (lk)
		cancel_lock(sim, lk);
}

/* Cancel lk's pending request or conversion. */
static void cancel_lock(struct sim *sim, struct sim_lock *lk)
{
	struct dlm_unlock_req req;
	int rc;

	memset(&req, 0, sizeof(req));
	req.lkid = lk->l_lkid;
	req.flags = DLM_LKF_CANCEL;
	req.owner = lk->l_owner;
	req.astarg = new_astarg(sim);
	rc = call_unlock(sim, lk->l_node, lk->l_ls, &req, "cancel");
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "cancel of pending lk %08x refused: %d", lk->l_lkid, rc);
		return;
	}
	lk->l_cancel = true;
}

static void do_force(struct sim *sim, int node, int client)
{
	struct sim_lock *lk = pick_lock(sim, node, client, ok_forceable);
	struct dlm_unlock_req req;
	char lvb[DLM_LVB_LEN];
	uint64_t value = 0;
	uint32_t flags = DLM_LKF_FORCEUNLOCK;
	int rc, top;

	if (!lk)
		return;
	if (lk->l_op == OP_NONE)
		flags |= release_lvb_flags(sim, lk);
	if (flags & DLM_LKF_VALBLK) {
		value = ++sim->next_lvb;
		lvb_make(value, lvb);
	}
	memset(&req, 0, sizeof(req));
	req.lkid = lk->l_lkid;
	req.flags = flags;
	req.lvb = (flags & DLM_LKF_VALBLK) ? lvb : NULL;
	req.owner = lk->l_owner;
	req.astarg = new_astarg(sim);
	rc = call_unlock(sim, node, lk->l_ls, &req, "force");
	if (rc == -EBUSY && lk->l_cancel_unresolved)
		return;
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "force unlock of lk %08x refused: %d", lk->l_lkid, rc);
		return;
	}
	if (lk->l_op == OP_NONE && lk->l_cancel_unresolved &&
	    (sim->opts->o_avoid & AVOID_OVERLAP_LVB) && lk->l_gmode >= DLM_LOCK_PW &&
	    (flags & (DLM_LKF_VALBLK | DLM_LKF_IVVALBLK)))
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
	else if (lk->l_op == OP_NONE && sim->opts->o_alloc_faults &&
		 lk->l_gmode >= DLM_LOCK_PW &&
		 (flags & (DLM_LKF_VALBLK | DLM_LKF_IVVALBLK)))
		/* a forced unlock is never refused: a master with no room
		 * for its value invalidates it instead (lock.c, "Out of
		 * memory") */
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
	else if (lk->l_op == OP_NONE)
		release_lvb_effect(sim, lk, flags, value);
	lk->l_cancel_unresolved = false;
	if (lk->l_op == OP_NONE) {
		lk->l_op = OP_UNLOCK;
		return;
	}
	/* forced out mid-operation: whether it writes the LVB is not ours to say */
	top = lk->l_gmode > lk->l_op_mode ? lk->l_gmode : lk->l_op_mode;
	if (top >= DLM_LOCK_PW)
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
	lk->l_force = true;
}

/* The client crashes: its locks are purged, persistent ones orphaned;
 * it comes back as a new owner.  The purged ones stay in the model until
 * the engine has unlocked them (lock_leave). */
static void do_crash(struct sim *sim, int node, int client)
{
	struct sim_client *c = client_of(sim, node, client);
	unsigned int ls, i, depth;
	int rc, expect;

	for (ls = 0; ls < sim->nls; ls++) {
		expect = 0;
		for (i = 0; i < c->c_nlocks; i++)
			if (c->c_locks[i]->l_ls == (int)ls)
				expect++;
		rc = dlm_core_purge_owner(sim->nodes[node].n_ls[ls], c->c_owner);
		sim_trace(sim, "op   n%d ls%u crash of owner %llx -> %d", node + 1, ls,
			  (unsigned long long)c->c_owner, rc);
		if (rc != expect)
			sim_fail(sim, "purge_owner(%llx) on n%d ls%u returned %d, the owner has %d locks",
				 (unsigned long long)c->c_owner, node + 1, ls, rc, expect);
	}
	/* children first: deepest resources first */
	for (depth = sim->opts->o_depth; depth >= 1; depth--) {
		i = 0;
		while (i < c->c_nlocks) {
			struct sim_lock *lk = c->c_locks[i];
			int top = lk->l_gmode;

			if (sim->res[lk->l_res].r_depth != (int)depth) {
				i++;
				continue;
			}
			if (lk->l_op == OP_REQUEST || lk->l_op == OP_CONVERT)
				top = top > lk->l_op_mode ? top : lk->l_op_mode;
			if (lk->l_persistent) {
				if (lk->l_op != OP_NONE && top >= DLM_LOCK_PW)
					lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
				model_orphan(sim, lk);
			} else {
				if (top >= DLM_LOCK_PW)
					lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
				if (sim->ncrashed < 64) {
					sim->crashed_node = node;
					sim->crashed_ls[sim->ncrashed] = lk->l_ls;
					sim->crashed[sim->ncrashed++] = lk->l_lkid;
				}
				if (sim->opts->o_forget_purged)
					lock_forget(sim, lk);	/* broken on purpose */
				else
					lock_leave(sim, lk);
			}
		}
	}
	c->c_incarnation++;
	c->c_owner = ((uint64_t)(node + 1) << 32) | ((uint64_t)(client + 1) << 16) |
		     c->c_incarnation;
}

/* Purge orphans here or (by message) on another node. */
static void purge_orphans(struct sim *sim, int node, int ls, int target, uint64_t owner)
{
	struct sim_node *t = &sim->nodes[target];
	unsigned int i, exact = 0, asked = 0;
	uint32_t nodeid;
	int rc;

	nodeid = target == node ? (rng_pct(&sim->rng, 50) ? 0 : t->n_id) : t->n_id;
	for (i = 0; i < t->n_norphans; i++) {
		struct sim_lock *o = t->n_orphans[i];

		if (o->l_ls != ls || (owner && o->l_owner != owner))
			continue;
		/* asked: a remote purge may have got it first; unsure: the
		 * operation in flight when it was orphaned may end it */
		if (o->l_purge_asked || o->l_orphan_unsure)
			asked++;
		else
			exact++;
	}
	rc = dlm_core_purge_orphans(sim->nodes[node].n_ls[ls], nodeid, owner);
	sim_trace(sim, "op   n%d ls%d purge orphans of owner %llx on node %u -> %d",
		  node + 1, ls, (unsigned long long)owner, nodeid, rc);
	if (target == node) {
		if (rc < (int)exact || rc > (int)(exact + asked))
			sim_fail(sim, "purge_orphans on n%d returned %d, expected %u..%u",
				 node + 1, rc, exact, exact + asked);
	} else if (rc != 0) {
		sim_fail(sim, "remote purge_orphans returned %d, expected 0", rc);
	} else {
		const struct sim_link *l = &sim->net.n_link[node][target];
		unsigned int k, n = 0;

		/* forget delivered requests, remember this one */
		for (k = 0; k < sim->npurges; k++) {
			const struct sim_purge *p = &sim->purges[k];

			const struct sim_node *t2 = &sim->nodes[p->p_to];

			if (!t2->n_alive || !t2->n_ls[p->p_ls])
				continue;	/* gone with its node */
			if (sim->net.n_link[p->p_from][p->p_to].l_delivered < p->p_seq ||
			    dlm_core_ls_state(t2->n_ls[p->p_ls], NULL, NULL) !=
			    DLM_LS_RUNNING)
				sim->purges[n++] = *p;
		}
		sim->npurges = n;
		if (n == SIM_MAX_PURGES) {
			sim_fail(sim, "simulator: too many purges in flight");
		} else {
			sim->purges[n].p_from = node;
			sim->purges[n].p_to = target;
			sim->purges[n].p_ls = ls;
			sim->purges[n].p_owner = owner;
			sim->purges[n].p_seq = l->l_sent;
			sim->npurges++;
		}
	}
	i = 0;
	while (i < t->n_norphans) {
		struct sim_lock *o = t->n_orphans[i];
		int top = o->l_gmode;

		if (o->l_ls != ls || (owner && o->l_owner != owner)) {
			i++;
			continue;
		}
		if (o->l_op == OP_REQUEST || o->l_op == OP_CONVERT)
			top = top > o->l_op_mode ? top : o->l_op_mode;
		if (top >= DLM_LOCK_PW && !o->l_purge_asked)
			lvb_write(sim, o->l_res, LVB_UNKNOWN, 0);
		if (target == node && sim->opts->o_forget_purged) {
			lock_forget(sim, o);	/* broken on purpose */
		} else if (target == node) {
			lock_leave(sim, o);
		} else {
			o->l_purge_asked = true;
			i++;
		}
	}
}

static void do_purge_orphans(struct sim *sim, int node)
{
	int target = rng_pct(&sim->rng, 60) ? node : (int)rng_below(&sim->rng, sim->nnodes);
	int ls = (int)rng_below(&sim->rng, sim->nls);
	struct sim_node *t;
	uint64_t owner = 0;

	/* --faults: ask another node only within one running membership */
	if (target != node && !nodes_connected(sim, node, target))
		target = node;
	t = &sim->nodes[target];

	if (t->n_norphans && rng_pct(&sim->rng, 50))
		owner = t->n_orphans[rng_below(&sim->rng, t->n_norphans)]->l_owner;
	purge_orphans(sim, node, ls, target, owner);
}

/* A client adopts an orphan of its node (same name, same mode). */
static void do_adopt(struct sim *sim, int node, int client)
{
	struct sim_node *n = &sim->nodes[node];
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *o = NULL, *got = NULL;
	struct dlm_lock_req req;
	const unsigned char *name;
	unsigned int namelen, i;
	uint32_t lkid;
	int rc;

	if (!n->n_norphans || c->c_nlocks >= SIM_MAX_LOCKS)
		return;
	o = n->n_orphans[rng_below(&sim->rng, n->n_norphans)];
	/* an adoption answers at once, but not while the lockspace is held */
	if (sim->opts->o_faults &&
	    dlm_core_ls_state(n->n_ls[o->l_ls], NULL, NULL) != DLM_LS_RUNNING)
		return;
	if (o->l_orphan_unsure || o->l_purge_asked || o->l_gmode == DLM_LOCK_IV)
		return;
	/* an orphan of unknown state on the same resource could match */
	for (i = 0; i < n->n_norphans; i++) {
		const struct sim_lock *x = n->n_orphans[i];

		if (x->l_ls == o->l_ls && x->l_res == o->l_res &&
		    (x->l_orphan_unsure || x->l_purge_asked))
			return;
	}
	name = res_name(&sim->res[o->l_res], &namelen);
	memset(&req, 0, sizeof(req));
	req.mode = o->l_gmode;
	req.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT;
	req.name = name;
	req.namelen = namelen;
	req.owner = c->c_owner;
	req.astarg = new_astarg(sim);
	req.want_bast = 1;
	rc = call_lock(sim, node, o->l_ls, &req, &lkid, "adopt");
	if (sim_out_of_memory(sim, rc))
		return;
	if (rc) {
		sim_fail(sim, "adopting orphan lk %08x (%s) refused: %d", o->l_lkid,
			 sim_mode_str(o->l_gmode), rc);
		return;
	}
	for (i = 0; i < n->n_norphans; i++) {
		struct sim_lock *x = n->n_orphans[i];

		if (x->l_lkid == lkid && x->l_ls == o->l_ls)
			got = x;
	}
	if (!got || got->l_res != o->l_res || got->l_gmode != o->l_gmode) {
		sim_fail(sim, "adopt returned lk %08x, not a matching orphan", lkid);
		return;
	}
	lock_detach_client(sim, got);
	lock_attach_client(sim, got, client);
	/* Adoption is synchronous, as in the kernel: the lock is the
	 * client's now and no completion AST follows (one would find no
	 * request pending and fail the run). */
	got->l_want_bast = true;
	got->l_op = OP_NONE;
	got->l_op_adopt = false;
	got->l_adopted = true;
	got->l_op_mode = got->l_gmode;
	got->l_op_flags = req.flags;
	got->l_op_astarg = req.astarg;
	got->l_bast_mask = 0;
	sim_deliver_asts(sim);
}

/* ------------------------------------------------------ invalid requests */

static void expect_refused(struct sim *sim, int rc, int want, const char *what)
{
	sim->n_invalid++;
	if (rc != want && !sim_out_of_memory(sim, rc))
		sim_fail(sim, "invalid request (%s) returned %d, expected %d", what, rc, want);
}

static void do_invalid(struct sim *sim, int node, int client)
{
	struct sim_client *c = client_of(sim, node, client);
	struct sim_lock *lk;
	struct dlm_lock_req req;
	struct dlm_unlock_req ureq;
	struct dlm_range range;
	unsigned char longname[DLM_RESNAME_MAXLEN + 1];
	unsigned int namelen;
	const unsigned char *name = sim_root_name(rng_below(&sim->rng, SIM_NROOT), &namelen);
	uint32_t lkid;
	int ls = (int)rng_below(&sim->rng, sim->nls), rc, i;

	memset(&req, 0, sizeof(req));
	req.mode = DLM_LOCK_PR;
	req.name = name;
	req.namelen = namelen;
	req.owner = c->c_owner;
	req.astarg = new_astarg(sim);
	memset(&ureq, 0, sizeof(ureq));
	ureq.owner = c->c_owner;
	ureq.astarg = new_astarg(sim);

	switch (rng_below(&sim->rng, 19)) {
	case 0:
		req.mode = rng_pct(&sim->rng, 50) ? DLM_NUM_MODES : DLM_LOCK_IV;
		rc = call_lock(sim, node, ls, &req, &lkid, "bad-mode");
		expect_refused(sim, rc, -EINVAL, "bad mode");
		break;
	case 1:
		req.namelen = 0;
		rc = call_lock(sim, node, ls, &req, &lkid, "namelen-0");
		expect_refused(sim, rc, -EINVAL, "namelen 0");
		break;
	case 2:
		memset(longname, 'n', sizeof(longname));
		req.name = longname;
		req.namelen = sizeof(longname);
		rc = call_lock(sim, node, ls, &req, &lkid, "name-too-long");
		expect_refused(sim, rc, -EINVAL, "name of 65 bytes");
		break;
	case 3:
		req.flags = DLM_LKF_CONVERT;
		req.lkid = 0xfff00000u + rng_below(&sim->rng, 1000);
		rc = call_lock(sim, node, ls, &req, &lkid, "convert-unknown");
		expect_refused(sim, rc, -ENOENT, "convert of an unknown lock");
		break;
	case 4:
		ureq.lkid = 0xfff00000u + rng_below(&sim->rng, 1000);
		rc = call_unlock(sim, node, ls, &ureq, "unlock-unknown");
		expect_refused(sim, rc, -ENOENT, "unlock of an unknown lock");
		break;
	case 5:
		lk = pick_lock(sim, node, client, ok_pending_request);
		if (!lk)
			break;
		req.flags = DLM_LKF_CONVERT;
		req.lkid = lk->l_lkid;
		rc = call_lock(sim, node, lk->l_ls, &req, &lkid, "convert-ungranted");
		expect_refused(sim, rc, -EBUSY, "convert of a lock not granted");
		break;
	case 6:
		lk = NULL;
		for (i = 0; i < (int)c->c_nlocks && !lk; i++)
			if (ok_stable(c->c_locks[i]) && c->c_locks[i]->l_nchildren)
				lk = c->c_locks[i];
		if (!lk)
			break;
		ureq.lkid = lk->l_lkid;
		rc = call_unlock(sim, node, lk->l_ls, &ureq, "unlock-parent");
		expect_refused(sim, rc, -EBUSY, "unlock of a parent with children");
		break;
	case 7:
		/* another client's lock on this node */
		if (sim->nodes[node].n_nclients < 2)
			break;
		lk = pick_lock(sim, node, (client + 1) % (int)sim->nodes[node].n_nclients,
			       ok_stable);
		if (!lk)
			break;
		req.flags = DLM_LKF_CONVERT;
		req.lkid = lk->l_lkid;
		rc = call_lock(sim, node, lk->l_ls, &req, &lkid, "convert-not-mine");
		expect_refused(sim, rc, -EPERM, "convert of another client's lock");
		break;
	case 8:
		req.flags = DLM_LKF_EXPEDITE;
		req.mode = 1 + (int)rng_below(&sim->rng, DLM_NUM_MODES - 1);
		rc = call_lock(sim, node, ls, &req, &lkid, "expedite-not-nl");
		expect_refused(sim, rc, -EINVAL, "EXPEDITE with a mode other than NL");
		break;
	case 9:
		req.flags = DLM_LKF_QUECVT;
		rc = call_lock(sim, node, ls, &req, &lkid, "quecvt-new");
		expect_refused(sim, rc, -EINVAL, "QUECVT on a new request");
		break;
	case 10:
		lk = pick_lock(sim, node, client, ok_stable);
		if (!lk || lk->l_gmode == DLM_LOCK_NL)
			break;
		req.flags = DLM_LKF_CONVERT | DLM_LKF_QUECVT;
		req.lkid = lk->l_lkid;
		req.mode = (int)rng_below(&sim->rng, (uint32_t)lk->l_gmode + 1);
		if (lk->l_gmode == DLM_LOCK_PR && req.mode == DLM_LOCK_CW)
			req.mode = DLM_LOCK_NL;
		rc = call_lock(sim, node, lk->l_ls, &req, &lkid, "quecvt-down");
		expect_refused(sim, rc, -EINVAL, "QUECVT on a conversion that is not up");
		break;
	case 11:
		range.ra_start = 10;
		range.ra_end = 9;
		req.range = &range;
		rc = call_lock(sim, node, ls, &req, &lkid, "range-reversed");
		expect_refused(sim, rc, -EINVAL, "range with start > end");
		break;
	case 12:
		req.owner = 0;
		rc = call_lock(sim, node, ls, &req, &lkid, "owner-0");
		expect_refused(sim, rc, -EINVAL, "owner 0");
		break;
	case 13:
		req.parent = 0xfff00000u + rng_below(&sim->rng, 1000);
		rc = call_lock(sim, node, ls, &req, &lkid, "parent-unknown");
		/* the engine says ENOENT (unknown lock id); core.h lists
		 * "bad parent" under EINVAL: both are refusals */
		if (rc == -EINVAL)
			rc = -ENOENT;
		expect_refused(sim, rc, -ENOENT, "unknown parent");
		break;
	case 14:
		lk = pick_lock(sim, node, client, ok_pending_request);
		if (!lk)
			break;
		req.parent = lk->l_lkid;
		req.name = (const unsigned char *)"x";
		req.namelen = 1;
		rc = call_lock(sim, node, lk->l_ls, &req, &lkid, "parent-ungranted");
		expect_refused(sim, rc, -EINVAL, "parent not granted");
		break;
	case 15:
		req.flags = DLM_LKF_ALTPR | DLM_LKF_ALTCW;
		rc = call_lock(sim, node, ls, &req, &lkid, "altpr-altcw");
		expect_refused(sim, rc, -EINVAL, "ALTPR with ALTCW");
		break;
	case 16:
		/* no orphan has this name: "n" * 17 is never used */
		memset(longname, 'n', 17);
		req.name = longname;
		req.namelen = 17;
		req.flags = DLM_LKF_ORPHAN;
		rc = call_lock(sim, node, ls, &req, &lkid, "adopt-none");
		expect_refused(sim, rc, -ENOENT, "adopt with no orphan");
		break;
	case 17:
		lk = pick_lock(sim, node, client, ok_stable);
		if (!lk)
			break;
		ureq.lkid = lk->l_lkid;
		ureq.flags = DLM_LKF_CONVERT;
		rc = call_unlock(sim, node, lk->l_ls, &ureq, "unlock-bad-flags");
		expect_refused(sim, rc, -EINVAL, "unlock with CONVERT");
		break;
	case 18:
		lk = pick_lock(sim, node, client, ok_pending_request);
		if (!lk)
			break;
		ureq.lkid = lk->l_lkid;
		rc = call_unlock(sim, node, lk->l_ls, &ureq, "unlock-ungranted");
		expect_refused(sim, rc, -EBUSY, "unlock of a lock not granted");
		break;
	}
}

/* ----------------------------------------------------- quiesce reactions */

/* The modes of the blocking ASTs lk got, all compatible with 'mode'? */
static bool bast_satisfied(const struct sim_lock *lk, int mode)
{
	int m;

	for (m = 0; m < DLM_NUM_MODES; m++)
		if ((lk->l_bast_mask & (1u << m)) && !sim_compat(mode, m))
			return false;
	return true;
}

static bool ok_react(const struct sim_lock *lk)
{
	if (!lock_is_idle(lk) || lk->l_gmode <= DLM_LOCK_NL)
		return false;
	return lk->l_bast_mask != 0;
}

/* Answer the blocking ASTs of lk: unlock it or convert it down to a mode
 * compatible with every mode the ASTs asked for. */
static void react(struct sim *sim, struct sim_lock *lk)
{
	int cand[DLM_NUM_MODES], n = 0, m;

	if (bast_satisfied(lk, lk->l_gmode)) {
		lk->l_bast_mask = 0;
		return;
	}
	if (!lk->l_nchildren && rng_pct(&sim->rng, 50)) {
		unlock_lock(sim, lk, -1);
		if (lk->l_op == OP_UNLOCK)
			lk->l_bast_mask = 0;
		return;
	}
	for (m = 0; m < lk->l_gmode; m++)
		if (is_down(lk->l_gmode, m) && bast_satisfied(lk, m))
			cand[n++] = m;
	m = cand[rng_below(&sim->rng, (uint32_t)n)];	/* NL always qualifies */
	convert_lock(sim, lk, m, release_lvb_flags(sim, lk) |
		     (lk->l_persistent ? DLM_LKF_PERSISTENT : 0));
	if (lk->l_op == OP_CONVERT) {
		lk->l_react_mask = lk->l_bast_mask;
		lk->l_bast_mask = 0;
	}
}

/* ------------------------------------------------------- schedule phase */

static void client_op(struct sim *sim)
{
	int node = (int)rng_below(&sim->rng, sim->nnodes), client, k;
	struct sim_client *c;
	unsigned int r;
	struct sim_lock *lk;

	/* --remaster: one node makes most of the operations */
	if (sim->opts->o_remaster && rng_pct(&sim->rng, 80))
		node = sim->hot;

	/* --faults: the next live node whose clients work */
	for (k = 0; k < (int)sim->nnodes && !node_usable(sim, node); k++)
		node = (node + 1) % (int)sim->nnodes;
	if (!node_usable(sim, node))
		return;
	client = (int)rng_below(&sim->rng, sim->nodes[node].n_nclients);
	c = client_of(sim, node, client);
	r = rng_below(&sim->rng, 100);
	/* --hot-trees: trees under the hot roots (HOT TREES above) */
	if (sim->opts->o_hot_trees) {
		if (node == sim->hot && rng_pct(&sim->rng, 50)) {
			hot_op(sim, node, client);
			return;
		}
		if (node != sim->hot && rng_pct(&sim->rng, 90) &&
		    hot_teardown(sim, node))
			return;
	}
	/* --remaster: the other nodes give their locks up more often, so
	 * that the hot node is, at times, a root's only user */
	if (sim->opts->o_remaster && !sim->opts->o_repoint && node != sim->hot &&
	    rng_pct(&sim->rng, 40)) {
		do_unlock(sim, node, client);
		return;
	}

	if (r < 30) {
		if (c->c_nlocks < SIM_MAX_LOCKS && rng_pct(&sim->rng, 10))
			do_creators(sim, node, client);
		else if (c->c_nlocks < SIM_MAX_LOCKS)
			do_new_lock(sim, node, client);
		else
			do_unlock(sim, node, client);
	} else if (r < 52) {
		do_convert(sim, node, client);
	} else if (r < 64) {
		do_unlock(sim, node, client);
	} else if (r < 72) {
		do_cancel(sim, node, client);
	} else if (r < 76) {
		if (!(sim->opts->o_avoid & AVOID_RECOVERY_OVERLAP) || !glue_busy(sim))
			do_force(sim, node, client);
	} else if (r < 84) {
		lk = pick_lock(sim, node, client, ok_react);
		if (lk)
			react(sim, lk);
	} else if (r < 86) {
		if (!(sim->opts->o_avoid & AVOID_RECOVERY_OVERLAP) || !glue_busy(sim))
			do_crash(sim, node, client);
	} else if (r < 88) {
		do_purge_orphans(sim, node);
	} else if (r < 92) {
		do_adopt(sim, node, client);
	} else {
		do_invalid(sim, node, client);
	}
}

/* --remaster: does the hot node change after 'ops' operations?  Once a
 * third of the way, or with --rehot K at each K+2nd of the way, K times
 * (so that a resource moves again and again, its locks re-pointed by one
 * move after another). */
static bool rehot_due(const struct sim *sim, uint64_t ops)
{
	uint64_t k = sim->opts->o_rehot ? sim->opts->o_rehot : 1, j;

	for (j = 1; j <= k; j++)
		if (ops == j * sim->opts->o_ops / (k + 2))
			return true;
	return false;
}

static uint64_t total_link_drops;	/* --link-drops: over all seeds run */
static uint64_t total_link_held;	/* messages those drops held */

/* --link-drops: the connection between two live nodes drops now and
 * comes back later (LINK DROPS above).  True when it acted. */
static bool link_drop_step(struct sim *sim)
{
	uint32_t live[SIM_MAX_NODES], a, b, n = 0, i;
	bool one_way;
	uint64_t up;

	if (!sim->link_drops_left ||
	    rng_below(&sim->rng, 1000) >= LINK_DROP_PERMILLE)
		return false;
	for (i = 0; i < sim->nnodes; i++)
		if (sim->nodes[i].n_alive)
			live[n++] = i + 1;
	if (n < 2)
		return false;
	a = live[rng_below(&sim->rng, n)];
	do
		b = live[rng_below(&sim->rng, n)];
	while (b == a);
	up = sim->now + LINK_DROP_MIN_MS +
	     rng_below(&sim->rng, LINK_DROP_SPREAD_MS + 1);
	one_way = rng_pct(&sim->rng, LINK_HOLD_PCT);
	sim_trace(sim, "LINK n%u %s n%u down until %llums%s", a,
		  one_way ? "->" : "<->", b, (unsigned long long)up,
		  sim->opts->o_link_fault == LINK_FAULT_DUP ? " (broken: dup)" :
		  sim->opts->o_link_fault == LINK_FAULT_LOSE ? " (broken: lose)" : "");
	net_link_drop(&sim->net, &sim->rng, a, b, up, one_way,
		      sim->opts->o_link_fault);
	sim->link_drops_left--;
	sim->n_link_drops++;
	return true;
}

static void phase_schedule(struct sim *sim)
{
	uint64_t ops = 0, max = (uint64_t)sim->opts->o_ops * MAX_STEPS_PER_OP + 1000;

	sim->phase = PHASE_SCHEDULE;
	sim->alloc_on = sim->opts->o_alloc_faults != 0;
	while (ops < sim->opts->o_ops && !sim->failed) {
		unsigned int r = rng_below(&sim->rng, 100);

		if (sim->step >= max) {
			sim_fail(sim, "LIVENESS: schedule phase exceeded %llu steps",
				 (unsigned long long)max);
			return;
		}
		if (sim->opts->o_faults && faults_step(sim)) {
			/* a node died or joined, or the glue acted */
		} else if (sim->opts->o_link_drops && link_drop_step(sim)) {
			/* a connection dropped */
		} else if (r < 40) {
			/* --remaster: another node takes over the hot roots
			 * a third of the way, so that they move to it */
			if (sim->opts->o_remaster && rehot_due(sim, ops) &&
			    sim->nnodes > 1)
				sim->hot = (sim->hot + 1 +
					    (int)rng_below(&sim->rng, sim->nnodes - 1)) %
					   (int)sim->nnodes;
			client_op(sim);
			ops++;
		} else if (r < 88) {
			step_deliver(sim);
		} else {
			step_tick(sim);
		}
		after_step(sim);
	}
}

/* ----------------------------------------------------- quiesce and drain */

typedef bool (*lock_pred)(const struct sim_lock *);

/* Every lock of every client satisfying 'ok', at most 'max'. */
static unsigned int all_locks(struct sim *sim, lock_pred ok, struct sim_lock **out,
			      unsigned int max)
{
	unsigned int n = 0, i, c, k;

	for (i = 0; i < sim->nnodes; i++)
		for (c = 0; c < sim->nodes[i].n_nclients && sim->nodes[i].n_alive; c++) {
			const struct sim_client *cl = &sim->nodes[i].n_clients[c];

			for (k = 0; k < cl->c_nlocks && n < max; k++)
				if (ok(cl->c_locks[k]))
					out[n++] = cl->c_locks[k];
		}
	return n;
}

/* In quiesce, a lock that asked for no blocking ASTs is given up anyway:
 * its client cannot know it blocks anybody. */
static bool ok_release_nobast(const struct sim_lock *lk)
{
	return lock_is_idle(lk) && !lk->l_want_bast && lk->l_gmode > DLM_LOCK_NL;
}

/* With --avoid adopt-bast: an adopted lock may block a request whose
 * blocking AST went to the orphan, so nobody heard it. */
static bool ok_release_adopted(const struct sim_lock *lk)
{
	return lock_is_idle(lk) && lk->l_adopted && lk->l_gmode > DLM_LOCK_NL;
}

/* With --avoid lost-bast: every lock, as a client that polls would. */
static bool ok_release_any(const struct sim_lock *lk)
{
	return lock_is_idle(lk) && lk->l_gmode > DLM_LOCK_NL && !lk->l_bast_mask;
}

static bool ok_pending(const struct sim_lock *lk)
{
	return lk->l_op != OP_NONE || lk->l_cancel || lk->l_force;
}

/* A granted lock of a live client, idle, that asked for blocking ASTs
 * and has none to answer (it got none since it was last granted:
 * sim-model.c forgets them at a grant), in the way of w's request. */
static bool told_nothing(const struct sim_lock *g, const struct sim_lock *w)
{
	static const struct dlm_range all = { 0, UINT64_MAX };

	return g != w && g->l_res == w->l_res && g->l_ls == w->l_ls &&
	       g->l_client >= 0 && !g->l_leaving && lock_is_idle(g) &&
	       g->l_want_bast && !g->l_bast_mask &&
	       g->l_gmode > DLM_LOCK_NL && g->l_gmode != DLM_LOCK_IV &&
	       !sim_compat(g->l_gmode, w->l_op_mode) &&
	       sim_ranges_overlap(g->l_ranged ? &g->l_range : &all,
				  w->l_ranged ? &w->l_range : &all);
}

/* The quiesce ended with requests pending.  Its clients answer every
 * blocking AST they got, so a request in the way of an idle holder that
 * was told nothing is a blocking AST the engines never sent (or lost):
 * each such holder is named ("told nothing"). */
static void report_stuck(struct sim *sim, const char *phase)
{
	struct sim_lock *stuck[8];
	unsigned int n = all_locks(sim, ok_pending, stuck, 8), i;
	char buf[1536], r[200];
	size_t o = 0;
	const struct sim_lock *g;

	buf[0] = '\0';
	for (i = 0; i < n && o < sizeof(buf) - 200; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o,
				      "%s n%d lk %08x %s op=%d %s->%s flags=%x%s%s", i ? ";" : "",
				      stuck[i]->l_node + 1, stuck[i]->l_lkid,
				      sim_res_str(sim, stuck[i]->l_res, r, sizeof(r)),
				      stuck[i]->l_op, sim_mode_str(stuck[i]->l_gmode),
				      sim_mode_str(stuck[i]->l_op_mode), stuck[i]->l_op_flags,
				      stuck[i]->l_cancel ? " cancel" : "",
				      stuck[i]->l_force ? " force" : "");
	for (i = 0; i < n && o < sizeof(buf) - 200; i++) {
		if (stuck[i]->l_op != OP_REQUEST && stuck[i]->l_op != OP_CONVERT)
			continue;
		for (g = sim->locks; g && o < sizeof(buf) - 200; g = g->l_anext)
			if (sim->nodes[g->l_node].n_alive &&
			    told_nothing(g, stuck[i]))
				o += (size_t)snprintf(buf + o, sizeof(buf) - o,
						      "; told nothing: n%d lk %08x %s "
						      "blocks lk %08x",
						      g->l_node + 1, g->l_lkid,
						      sim_mode_str(g->l_gmode),
						      stuck[i]->l_lkid);
	}
	sim_fail(sim, "LIVENESS (%s): %u+ requests never completed:%s", phase, n, buf);
}

static void purge_all_orphans(struct sim *sim)
{
	unsigned int n, ls;

	for (n = 0; n < sim->nnodes && !sim->failed; n++)
		for (ls = 0; ls < sim->nls && !sim->failed; ls++) {
			if (!sim->nodes[n].n_alive)
				continue;
			purge_orphans(sim, (int)n, (int)ls, (int)n, 0);
			after_step(sim);
		}
}

static void phase_quiesce(struct sim *sim)
{
	struct sim_lock *cand[1024];
	unsigned int n, idle = 0;
	uint64_t steps;

	sim->phase = PHASE_QUIESCE;
	sim->alloc_on = false;		/* the quiet tail */
	sim_trace(sim, "=== quiesce");
	purge_all_orphans(sim);
	for (steps = 0; steps < MAX_QUIESCE_STEPS && !sim->failed; steps++) {
		n = all_locks(sim, ok_react, cand, 1024);
		n += all_locks(sim, ok_release_nobast, cand + n, 1024 - n);
		if (sim->opts->o_avoid & AVOID_ADOPT_BAST)
			n += all_locks(sim, ok_release_adopted, cand + n, 1024 - n);
		if (sim->opts->o_avoid & AVOID_LOST_BAST)
			n += all_locks(sim, ok_release_any, cand + n, 1024 - n);
		/* a reaction refused while a recovery holds the reply it
		 * waits for must not keep time from moving */
		bool glue_waits = sim->opts->o_faults && glue_busy(sim) &&
				  !sim->net.n_inflight;

		if (sim->opts->o_faults && glue_due(sim) && rng_pct(&sim->rng, 50)) {
			glue_step(sim);		/* membership settles meanwhile */
			idle = 0;
		} else if (n && (rng_pct(&sim->rng, 50) ||
				 (!sim->net.n_inflight && !glue_waits))) {
			struct sim_lock *lk = cand[rng_below(&sim->rng, n)];

			if (lk->l_want_bast && lk->l_bast_mask)
				react(sim, lk);
			else if (!lk->l_nchildren && rng_pct(&sim->rng, 50))
				unlock_lock(sim, lk, -1);
			else
				convert_lock(sim, lk, DLM_LOCK_NL, release_lvb_flags(sim, lk));
			idle = 0;
		} else if (sim->net.n_inflight) {
			if (rng_pct(&sim->rng, 90))
				step_deliver(sim);
			else
				step_tick(sim);
			idle = 0;
		} else if (sim->opts->o_faults && glue_busy(sim)) {
			/* a recovery is under way with nothing in flight */
			if (glue_due(sim)) {
				glue_step(sim);
			} else if (glue_next_due(sim) != UINT64_MAX) {
				tick_all(sim, glue_next_due(sim) > sim->now ?
					 glue_next_due(sim) - sim->now : 1);
			} else {
				glue_report_stall(sim);
				return;
			}
		} else {
			/* nothing moves: let timers run, then judge */
			if (++idle > 3 || !all_locks(sim, ok_pending, cand, 1))
				break;
			tick_all(sim, sim->toss_ms + 1);
		}
		after_step(sim);
	}
	if (sim->failed)
		return;
	if (steps >= MAX_QUIESCE_STEPS)
		sim_fail(sim, "LIVENESS: quiesce did not settle in %u steps", MAX_QUIESCE_STEPS);
	else if (sim->opts->o_faults && glue_busy(sim))
		glue_report_stall(sim);
	else if (all_locks(sim, ok_pending, cand, 1))
		report_stuck(sim, "quiesce");
}

static bool ok_drainable(const struct sim_lock *lk)
{
	return ok_granted_idle(lk) && !lk->l_nchildren;
}

static bool ok_any(const struct sim_lock *lk)
{
	(void)lk;
	return true;
}

static void phase_drain(struct sim *sim)
{
	struct sim_lock *cand[1024];
	struct dlm_ls_stats st;
	unsigned int n, i, ls, round;
	uint64_t steps;

	sim->phase = PHASE_DRAIN;
	sim_trace(sim, "=== drain");
	for (steps = 0; steps < MAX_DRAIN_STEPS && !sim->failed; steps++) {
		n = all_locks(sim, ok_drainable, cand, 1024);
		if (n && (rng_pct(&sim->rng, 50) || !sim->net.n_inflight)) {
			unlock_lock(sim, cand[rng_below(&sim->rng, n)], -1);
		} else if (sim->net.n_inflight) {
			step_deliver(sim);
		} else if (all_locks(sim, ok_any, cand, 1)) {
			/* a lock with a silent cancel still settling, or stuck */
			step_tick(sim);
			if (steps > MAX_DRAIN_STEPS / 2) {
				report_stuck(sim, "drain");
				return;
			}
		} else {
			break;
		}
		after_step(sim);
	}
	if (sim->failed)
		return;
	if (steps >= MAX_DRAIN_STEPS) {
		sim_fail(sim, "LIVENESS: drain did not finish in %u steps", MAX_DRAIN_STEPS);
		return;
	}
	/* let every resource expire, and the REMOVE messages land; a
	 * parent resource is tossed only once its children are freed, so a
	 * tree takes a round per level (core/resource.c) */
	for (round = 0; round < 3 + sim->opts->o_depth && !sim->failed;
	     round++) {
		tick_all(sim, sim->toss_ms + 1);
		after_step(sim);
		for (steps = 0; sim->net.n_inflight && !sim->failed; steps++) {
			if (steps > MAX_DRAIN_STEPS) {
				sim_fail(sim, "LIVENESS: messages keep flowing after the drain");
				return;
			}
			step_deliver(sim);
			after_step(sim);
		}
	}
	for (i = 0; i < sim->nnodes && !sim->failed; i++)
		for (ls = 0; ls < sim->nls && !sim->failed; ls++) {
			if (!sim->nodes[i].n_alive)
				continue;
			dlm_core_ls_stats(sim->nodes[i].n_ls[ls], &st);
			sim->n_folds_shared += st.ls_folds_shared;
			sim->n_unfolds_msg += st.ls_unfolds_msg;
			sim->n_unfolds_rec += st.ls_unfolds_rec;
			sim->n_folds_kept_rec += st.ls_folds_kept_rec;
			sim->n_folds_remote += st.ls_folds_remote;
			if (st.ls_locks || st.ls_waiters || st.ls_orphans ||
			    st.ls_resources || st.ls_dir_entries)
				sim_fail(sim, "DRAIN: n%u ls%u not empty after everything was "
					 "unlocked and tossed: %llu locks, %llu waiters, %llu "
					 "orphans, %llu resources, %llu directory entries",
					 i + 1, ls, (unsigned long long)st.ls_locks,
					 (unsigned long long)st.ls_waiters,
					 (unsigned long long)st.ls_orphans,
					 (unsigned long long)st.ls_resources,
					 (unsigned long long)st.ls_dir_entries);
		}
	if (!sim->failed && sim->net.n_inflight)
		sim_fail(sim, "DRAIN: %llu messages still in flight",
			 (unsigned long long)sim->net.n_inflight);
	check_model_empty(sim);
}

/* ------------------------------------------------------------- a seed */

const char *const sim_ls_names[SIM_MAX_LS] = { "sim0", "sim-1" };

static int setup(struct sim *sim)
{
	uint32_t members[SIM_MAX_NODES];
	unsigned int i, ls, c;
	int rc;

	sim->nnodes = sim->opts->o_nodes ? (unsigned int)sim->opts->o_nodes
					 : 1 + rng_below(&sim->rng, SIM_FAULT_MAX_NODES);
	sim->nls = 1 + rng_below(&sim->rng, SIM_MAX_LS);
	sim->toss_ms = 50 + rng_below(&sim->rng, 451);
	if (sim->opts->o_avoid & AVOID_TOSS)
		sim->toss_ms = 60000;
	sim->now = 1000;
	/* with faults, nodes may join under new ids up to SIM_FAULT_MAX_NODES */
	net_init(&sim->net, sim->opts->o_faults ? SIM_FAULT_MAX_NODES : sim->nnodes,
		 1 + rng_below(&sim->rng, 40));
	/* audits often, so that many meet messages in flight */
	sim->audit_ms = 20 * sim->net.n_max_delay + 100;
	for (i = 0; i < SIM_RES_HASH; i++)
		sim->res_hash[i] = -1;
	sim->res = calloc(SIM_RES_MAX, sizeof(*sim->res));
	if (!sim->res)
		return -ENOMEM;
	for (i = 0; i < sim->nnodes; i++)
		members[i] = i + 1;
	for (i = 0; i < sim->nnodes; i++) {
		struct sim_node *n = &sim->nodes[i];

		n->n_sim = sim;
		n->n_id = i + 1;
		n->n_alive = true;
		if (sim_node_engine_new(n))
			return -ENOMEM;
		sim_node_engine_setup(n);
		dlm_core_tick(n->n_core, sim->now);
		for (ls = 0; ls < sim->nls; ls++) {
			rc = dlm_core_ls_create(n->n_core, sim_ls_names[ls], members,
						sim->nnodes, n, &n->n_ls[ls]);
			if (rc)
				return rc;
		}
		n->n_nclients = 2 + rng_below(&sim->rng, SIM_MAX_CLIENTS - 1);
		for (c = 0; c < SIM_MAX_CLIENTS; c++)
			n->n_clients[c].c_owner = ((uint64_t)(i + 1) << 32) |
						  ((uint64_t)(c + 1) << 16);
	}
	for (ls = 0; ls < sim->nls; ls++)
		for (i = 0; i < SIM_NROOT; i++)
			sim_res_root(sim, (int)ls, i);
	sim_trace(sim, "seed %llu: %u nodes, %u lockspaces, toss %u ms, delay <= %u ms, "
		  "fault %d", (unsigned long long)sim->seed, sim->nnodes, sim->nls,
		  sim->toss_ms, sim->net.n_max_delay, (int)sim->opts->o_fault);
	for (i = 0; i < sim->nnodes; i++)
		sim->nodes[i].n_joined = true;
	if (sim->opts->o_remaster)
		sim->hot = (int)rng_below(&sim->rng, sim->nnodes);
	if (sim->opts->o_faults)
		faults_setup(sim);
	if (sim->opts->o_link_drops)
		sim->link_drops_left = 1 + rng_below(&sim->rng, LINK_DROPS_MAX);
	return 0;
}

static void dump_engines(struct sim *sim, FILE *out)
{
	unsigned int i, ls;

	for (i = 0; i < sim->nnodes; i++)
		for (ls = 0; ls < sim->nls; ls++) {
			char *text = NULL;

			if (!sim->nodes[i].n_ls[ls])
				continue;
			fprintf(out, "--- dump n%u ls%u (%s) ---\n", i + 1, ls, sim_ls_names[ls]);
			if (dlm_core_ls_dump(sim->nodes[i].n_ls[ls], &text) == 0 && text)
				fputs(text, out);
			else
				fprintf(out, "(dump failed)\n");
			free(text);
		}
}

static void teardown(struct sim *sim)
{
	unsigned int i, b;

	for (b = 0; b < SIM_LOCK_HASH; b++) {
		struct sim_lock *lk, *next;

		for (lk = sim->lock_hash[b]; lk; lk = next) {
			next = lk->l_hnext;
			free(lk);
		}
	}
	for (i = 0; i < sim->nnodes; i++) {
		struct sim_node *n = &sim->nodes[i];
		unsigned int c;

		if (n->n_core)
			dlm_core_free(n->n_core);
		for (c = 0; c < SIM_MAX_CLIENTS; c++)
			free(n->n_clients[c].c_locks);
		free(n->n_orphans);
		free(n->n_cmds);
	}
	check_free(sim);
	net_free(&sim->net);
	free(sim->astq);
	free(sim->res);
}

static const struct {
	const char *name;
	enum dlm_core_fault fault;
} fault_names[] = {
	{ "none", DLM_FAULT_NONE },
	{ "compat", DLM_FAULT_COMPAT_PR_PW },
	{ "skip-bast", DLM_FAULT_SKIP_BAST },
	{ "ignore-queue", DLM_FAULT_IGNORE_QUEUE },
	{ "lvb-no-write", DLM_FAULT_LVB_NO_WRITE },
	{ "range-ignored", DLM_FAULT_RANGE_IGNORED },
	{ "skip-purge", DLM_FAULT_SKIP_PURGE },
	{ "skip-resend", DLM_FAULT_SKIP_RESEND },
	{ "keep-dead-master", DLM_FAULT_KEEP_DEAD_MASTER },
	{ "quecvt-ignored", DLM_FAULT_QUECVT_IGNORED },
	{ "waitq-pass", DLM_FAULT_WAITQ_PASS },
	{ "lose-grant", DLM_FAULT_LOSE_GRANT },
	{ "token-reset", DLM_FAULT_TOKEN_RESET },
	{ "child-local", DLM_FAULT_CHILD_LOCAL },
	{ "remaster-no-freeze", DLM_FAULT_REMASTER_NO_FREEZE },
	{ "remaster-any-owner", DLM_FAULT_REMASTER_ANY_OWNER },
	{ "remaster-skip-repoint", DLM_FAULT_REMASTER_SKIP_REPOINT },
	{ "remaster-early-grant", DLM_FAULT_REMASTER_EARLY_GRANT },
	{ "remaster-dir-answer", DLM_FAULT_REMASTER_DIR_ANSWER },
	{ "remaster-dir-unacked", DLM_FAULT_REMASTER_DIR_UNACKED },
	{ "remaster-dir-keep-held", DLM_FAULT_REMASTER_DIR_KEEP_HELD },
	{ "partial-keep-dead", DLM_FAULT_PARTIAL_KEEP_DEAD },
	{ "partial-keep-orphans", DLM_FAULT_PARTIAL_KEEP_ORPHANS },
	{ "refused-write", DLM_FAULT_REFUSED_WRITE },
	{ "narrow-miss-moved", DLM_FAULT_NARROW_MISS_MOVED },
	{ "bast-once", DLM_FAULT_BAST_ONCE },
	{ "fold-msg-skip", DLM_FAULT_FOLD_MSG_SKIP },
	{ "recfold-keep-moved", DLM_FAULT_RECFOLD_KEEP_MOVED },
	{ "fold-remote-no-remove", DLM_FAULT_FOLD_REMOTE_NO_REMOVE },
	{ "fold-remote-no-register", DLM_FAULT_FOLD_REMOTE_NO_REGISTER },
};

static const struct {
	const char *name;
	uint32_t bit;
} avoid_names[] = {
	{ "valblk-release", AVOID_VALBLK_RELEASE },
	{ "adopt-bast", AVOID_ADOPT_BAST },
	{ "quecvt", AVOID_QUECVT },
	{ "lost-bast", AVOID_LOST_BAST },
	{ "toss", AVOID_TOSS },
	{ "noorder-convq", AVOID_NOORDER_CONVQ },
	{ "purge-ast", AVOID_PURGE_AST },
	{ "overlap-lvb", AVOID_OVERLAP_LVB },
	{ "recovery-toss", AVOID_RECOVERY_TOSS },
	{ "recovery-lvb", AVOID_RECOVERY_LVB },
	{ "recovery-inflight", AVOID_RECOVERY_INFLIGHT },
	{ "recovery-overlap", AVOID_RECOVERY_OVERLAP },
};

static const char *fault_name(enum dlm_core_fault f)
{
	unsigned int i;

	for (i = 0; i < sizeof(fault_names) / sizeof(fault_names[0]); i++)
		if (fault_names[i].fault == f)
			return fault_names[i].name;
	return "?";
}

/* --msg-stats: the passed seeds' engine messages by type and their
 * accepted client operations (dlm_core_lock and dlm_core_unlock calls
 * that returned 0: a request, a conversion, an unlock or a cancel each
 * count one), summed over the run */
static struct {
	uint64_t	ms_seeds;
	uint64_t	ms_ops;
	uint64_t	ms_type[DLM_MSG_MAX + 1];
	uint64_t	ms_fresh, ms_fresh_msgs;	/* see msg_stats_print */
	uint64_t	ms_folds_shared, ms_unfolds_msg, ms_folds_remote;
	uint64_t	ms_unfolds_rec, ms_folds_kept_rec;
} msg_stats;

static void msg_stats_add(const struct sim *sim)
{
	unsigned int t;

	msg_stats.ms_seeds++;
	msg_stats.ms_ops += sim->n_ops_ok;
	msg_stats.ms_fresh += sim->n_fresh_local;
	msg_stats.ms_fresh_msgs += sim->n_fresh_msgs;
	msg_stats.ms_folds_shared += sim->n_folds_shared;
	msg_stats.ms_unfolds_msg += sim->n_unfolds_msg;
	msg_stats.ms_folds_remote += sim->n_folds_remote;
	msg_stats.ms_unfolds_rec += sim->n_unfolds_rec;
	msg_stats.ms_folds_kept_rec += sim->n_folds_kept_rec;
	for (t = 0; t <= DLM_MSG_MAX; t++)
		msg_stats.ms_type[t] += sim->n_msgs_type[t];
}

/* The table: each type that was sent, its count and count per
 * operation; then the normal-operation and recovery totals. */
static void msg_stats_print(const struct sim_opts *opts)
{
	uint64_t all = 0, rc = 0, ops = msg_stats.ms_ops ? msg_stats.ms_ops : 1;
	unsigned int t;

	printf("dlm-sim: fresh children requested under a parent mastered on the "
	       "requesting node: %llu, remote messages they sent: %llu\n",
	       (unsigned long long)msg_stats.ms_fresh,
	       (unsigned long long)msg_stats.ms_fresh_msgs);
	/* counted by the engines alive at each seed's drain */
	printf("dlm-sim: lone locks folded in lockspaces with other members: "
	       "%llu, unfolded for a message naming their resource: %llu\n",
	       (unsigned long long)msg_stats.ms_folds_shared,
	       (unsigned long long)msg_stats.ms_unfolds_msg);
	printf("dlm-sim: lone locks folded on names other members direct, "
	       "once their lookup made the node master: %llu\n",
	       (unsigned long long)msg_stats.ms_folds_remote);
	printf("dlm-sim: lone locks a recovery start left folded: %llu, "
	       "unfolded by recovery (their directory moved, or a recovery "
	       "message named them): %llu\n",
	       (unsigned long long)msg_stats.ms_folds_kept_rec,
	       (unsigned long long)msg_stats.ms_unfolds_rec);
	if (opts->o_nodes)
		printf("dlm-sim: messages, %llu seeds of %d nodes, %llu accepted operations\n",
		       (unsigned long long)msg_stats.ms_seeds, opts->o_nodes,
		       (unsigned long long)msg_stats.ms_ops);
	else
		printf("dlm-sim: messages, %llu seeds (node counts by seed), %llu accepted "
		       "operations\n", (unsigned long long)msg_stats.ms_seeds,
		       (unsigned long long)msg_stats.ms_ops);
	printf("  %-20s %12s %10s\n", "type", "messages", "per op");
	for (t = 1; t <= DLM_MSG_MAX; t++) {
		if (!msg_stats.ms_type[t])
			continue;
		printf("  %-20s %12llu %10.3f\n", dlm_msg_type_str((int)t),
		       (unsigned long long)msg_stats.ms_type[t],
		       (double)msg_stats.ms_type[t] / (double)ops);
		all += msg_stats.ms_type[t];
		if (dlm_msg_is_recovery((int)t))
			rc += msg_stats.ms_type[t];
	}
	printf("  %-20s %12llu %10.3f\n", "normal operation", (unsigned long long)(all - rc),
	       (double)(all - rc) / (double)ops);
	printf("  %-20s %12llu %10.3f\n", "recovery", (unsigned long long)rc,
	       (double)rc / (double)ops);
	printf("  %-20s %12llu %10.3f\n", "all", (unsigned long long)all,
	       (double)all / (double)ops);
}

/* Run one seed; 0 when every check held. */
static int run_seed(const struct sim_opts *opts, uint64_t seed)
{
	struct sim *sim = calloc(1, sizeof(*sim));
	unsigned int i;
	int rc;

	if (!sim) {
		fprintf(stderr, "dlm-sim: out of memory\n");
		return 1;
	}
	sim->opts = opts;
	sim->seed = seed;
	rng_seed(&sim->rng, seed);
	rng_seed(&sim->alloc_rng, seed ^ 0xa110cfa11ULL);
	if (opts->o_verbose)
		sim->trace.t_stream = stdout;
	rc = setup(sim);
	if (rc) {
		sim_fail(sim, "setup failed: %d", rc);
	} else {
		phase_schedule(sim);
		if (!sim->failed)
			phase_quiesce(sim);
		if (!sim->failed)
			phase_drain(sim);
	}
	if (sim->failed) {
		printf("FAIL seed %llu (nodes %u, lockspaces %u, toss %u ms, ops %u): %s\n",
		       (unsigned long long)seed, sim->nnodes, sim->nls, sim->toss_ms,
		       opts->o_ops, sim->fail_msg);
		trace_print(&sim->trace, stdout);
		if (opts->o_faults)
			glue_report(sim, stdout);
		dump_engines(sim, stdout);
		printf("FAIL seed %llu: %s\n", (unsigned long long)seed, sim->fail_msg);
		printf("replay: dlm-sim --seed %llu --ops %u", (unsigned long long)seed,
		       opts->o_ops);
		if (opts->o_nodes)
			printf(" --nodes %d", opts->o_nodes);
		if (opts->o_depth != SIM_DEPTH)
			printf(" --depth %u", opts->o_depth);
		if (opts->o_lvbseq_start)
			printf(" --lvbseq-start %u", opts->o_lvbseq_start);
		if (opts->o_max_tossed)
			printf(" --max-tossed %u", opts->o_max_tossed);
		if (opts->o_fold)
			printf(" --fold");
		if (opts->o_mixed)
			printf(" --mixed %u", opts->o_mixed);
		if (opts->o_faults)
			printf(" --faults");
		if (opts->o_max_faults)
			printf(" --max-faults %u", opts->o_max_faults);
		if (opts->o_remaster)
			printf(" --remaster");
		if (opts->o_repoint)
			printf(" --repoint");
		if (opts->o_rehot)
			printf(" --rehot %u", opts->o_rehot);
		if (opts->o_hot_trees)
			printf(" --hot-trees");
		if (opts->o_dir_lag)
			printf(" --dir-lag %u", opts->o_dir_lag);
		if (opts->o_bounce)
			printf(" --bounce");
		if (opts->o_daemon_deaths)
			printf(" --daemon-deaths");
		if (opts->o_partitions)
			printf(" --partitions");
		if (opts->o_link_drops)
			printf(" --link-drops");
		if (opts->o_alloc_faults)
			printf(" --alloc-faults %u", opts->o_alloc_faults);
		if (opts->o_fault)
			printf(" --fault %s", fault_name(opts->o_fault));
		if (opts->o_no_fence_wait)
			printf(" --fault no-fence-wait");
		if (opts->o_forget_purged)
			printf(" --fault forget-purged");
		if (opts->o_link_fault)
			printf(" --fault %s", opts->o_link_fault == LINK_FAULT_DUP ?
			       "link-dup" : "link-lose");
		for (i = 0; i < sizeof(avoid_names) / sizeof(avoid_names[0]); i++)
			if (opts->o_avoid & avoid_names[i].bit)
				printf(" --avoid %s", avoid_names[i].name);
		printf("\n");
	} else if (!opts->o_quiet) {
		printf("seed %llu ok: %u nodes, %u ls, %llu steps, %llu ops (%llu invalid), "
		       "%llu messages, %llu ASTs (%llu blocking)\n",
		       (unsigned long long)seed, sim->nnodes, sim->nls,
		       (unsigned long long)sim->step, (unsigned long long)sim->n_ops,
		       (unsigned long long)sim->n_invalid,
		       (unsigned long long)sim->net.n_sent, (unsigned long long)sim->n_asts,
		       (unsigned long long)sim->n_basts);
		if (opts->o_faults)
			printf("seed %llu faults: %llu deaths (%llu of the daemon only), "
			       "%llu splits, %llu joins, %llu recoveries finished, "
			       "last event %u\n", (unsigned long long)seed,
			       (unsigned long long)sim->n_deaths,
			       (unsigned long long)sim->n_daemon_deaths,
			       (unsigned long long)sim->n_splits,
			       (unsigned long long)sim->n_joins,
			       (unsigned long long)sim->n_recoveries, sim->event);
		if (opts->o_fold)
			printf("seed %llu fold: a lock folded after %llu steps, "
			       "at most %llu at once\n", (unsigned long long)seed,
			       (unsigned long long)sim->n_fold_steps,
			       (unsigned long long)sim->n_folded_max);
		if (opts->o_alloc_faults)
			printf("seed %llu: %llu allocations failed, %llu refused "
			       "writes undone, %llu left unknown\n",
			       (unsigned long long)seed,
			       (unsigned long long)sim->n_alloc_fails,
			       (unsigned long long)sim->n_unwrites,
			       (unsigned long long)sim->n_unwrites_unknown);
	}
	rc = sim->failed ? 1 : 0;
	total_link_drops += sim->n_link_drops;
	total_link_held += sim->net.n_link_held;
	if (!rc && opts->o_msg_stats)
		msg_stats_add(sim);
	teardown(sim);
	free(sim);
	return rc;
}

/* --------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dlm-sim [--seeds N [--from F] | --seed S] [--nodes K] [--ops M] [--depth D]\n"
		"               [--faults [--daemon-deaths] [--partitions] [--max-faults K]] [--fault NAME]\n"
		"               [--lvbseq-start Q] [--alloc-faults P] [--msg-stats]\n"
		"               [--max-tossed K] [--fold] [--remaster [--repoint] [--rehot K] [--mixed N]\n"
		"               [--hot-trees] [--dir-lag MS] [--bounce]] [--link-drops]\n"
		"               [--quiet] [-v]\n"
		"  --seeds N     run seeds 1..N, stop at the first violation (default 100)\n"
		"  --seed S      run seed S only\n"
		"  --from F      with --seeds N: run seeds F..N\n"
		"  --nodes K     K nodes (1..%d, with --faults 1..%d; default:\n"
		"                chosen by the seed, 1..%d)\n"
		"  --ops M       client operations per seed (default %d)\n"
		"  --depth D     sub-resources nest D levels deep at most, root 1\n"
		"                (1..%d, default %d; below %d their keys are digests)\n"
		"  --faults      nodes die and join (the engines recover), checked\n"
		"                after every step and at the end of each recovery\n"
		"  --daemon-deaths  with --faults: some deaths are the daemon's only;\n"
		"                its clients live on (relying on their locks) until\n"
		"                the glue fences the node; no recovery starts before\n"
		"                that fence\n"
		"  --max-faults K  with --faults: a seed has 1..K node faults\n"
		"                (deaths, joins, splits; default 4), so that with\n"
		"                K large deaths come in a row and during recovery\n"
		"  --partitions  with --faults: the network splits; the side without\n"
		"                quorum stops and is fenced (it may rejoin empty later),\n"
		"                messages across the cut arrive if it heals first\n"
		"  --link-drops  the connection of two nodes drops and comes back\n"
		"                with no membership change: their messages both\n"
		"                ways pause 5..505 ms, then arrive in order, once\n"
		"                (lowcomms' promise; see the file's LINK DROPS)\n"
		"  --fault NAME  break the engines on purpose: compat, skip-bast,\n"
		"                ignore-queue, lvb-no-write, range-ignored,\n"
		"                quecvt-ignored, waitq-pass, lose-grant,\n"
		"                token-reset, child-local, bast-once (a mode's\n"
		"                blocking AST is sent once per lock, not per grant);\n"
		"                with --remaster:\n"
		"                remaster-no-freeze, remaster-any-owner,\n"
		"                remaster-dir-answer, remaster-dir-unacked,\n"
		"                remaster-dir-keep-held; with\n"
		"                --repoint: remaster-skip-repoint,\n"
		"                remaster-early-grant; with\n"
		"                --faults: skip-purge, skip-resend, keep-dead-master,\n"
		"                partial-keep-dead, partial-keep-orphans,\n"
		"                narrow-miss-moved; with\n"
		"                --alloc-faults: refused-write (a refused unlock\n"
		"                writes its value all the same);\n"
		"                no-fence-wait breaks the glue: recovery starts before\n"
		"                a daemon-only death is fenced\n"
		"                forget-purged breaks the model: a purged lock\n"
		"                leaves it before the engines let it go\n"
		"                link-dup, link-lose (with --link-drops) break the\n"
		"                transport: at a drop, a message in flight is seen\n"
		"                twice, or never\n"
		"  --avoid NAME  do not generate a pattern that trips a known engine\n"
		"                bug (valblk-release, adopt-bast, quecvt, lost-bast,\n"
		"                toss, noorder-convq, purge-ast, overlap-lvb,\n"
		"                recovery-toss, recovery-lvb, recovery-inflight,\n"
		"                recovery-overlap)\n"
		"  --lvbseq-start Q  resources' LVB sequence numbers start at Q\n"
		"                (0..4294967295, default 0): near the top, they\n"
		"                wrap within a run\n"
		"  --max-tossed K  each engine keeps K unused resources per\n"
		"                lockspace at most (max_tossed), dropping the\n"
		"                oldest early; the model then lets any resource\n"
		"                that was unused come back with a zero value\n"
		"  --fold        a lone lock on a resource of its own whose\n"
		"                name its node directs (every name, on a node\n"
		"                alone in its lockspace) is folded with its\n"
		"                resource (core/solo.c) until it must unfold;\n"
		"                2 in 5 root requests are plain (no value\n"
		"                block, range or PERSISTENT), to fold more\n"
		"  --remaster    engines move hot resources (core/remaster.c); one\n"
		"                node makes most operations, mostly on two roots;\n"
		"                a move faster than the hysteresis allows fails\n"
		"  --mixed N     node N's engine runs with remastering off (the\n"
		"                unequal settings dlmd refuses at a join); needs\n"
		"                --remaster, and a node N (--nodes, --faults)\n"
		"  --repoint     with --remaster: resources that other nodes (and\n"
		"                the master's own clients) lock too move, their\n"
		"                locks re-pointed (remaster_shared); the others\n"
		"                lock the hot roots too\n"
		"  --alloc-faults P  while the schedule runs, each allocation of\n"
		"                an engine fails with probability P/1000 (1..1000);\n"
		"                then a quiet tail in which everything must end\n"
		"  --rehot K     with --remaster: the hot node changes K times\n"
		"                (default once, a third of the way), so that\n"
		"                resources move again and again\n"
		"  --hot-trees   --remaster with deep trees that move: the hot node\n"
		"                locks the hot roots bare until they move to it,\n"
		"                then grows chains under them down to --depth; the\n"
		"                others tear their trees there down (--rehot\n"
		"                defaults to 4)\n"
		"  --dir-lag MS  with --remaster: each DIR_MOVE (and what follows\n"
		"                it on its link) is up to MS ms late, so that a\n"
		"                second move may overtake the first one's\n"
		"                notification\n"
		"  --bounce      with --remaster --faults: at a DIR_MOVE, a third\n"
		"                node dies (or, with --partitions, is cut off) and\n"
		"                joins again as soon as membership settles\n"
		"  --msg-stats   at the end, the engine messages of the passed seeds\n"
		"                by type, and per accepted client operation\n"
		"  --quiet       print only failures and the summary\n"
		"  -v            print every event of the run as it happens\n",
		SIM_MAX_NODES, SIM_FAULT_MAX_NODES, SIM_FAULT_MAX_NODES, DEFAULT_OPS, SIM_DEPTH_MAX, SIM_DEPTH,
		DLM_KEY_PATH_DEPTH);
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seeds", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "from", required_argument, NULL, 'F' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ "depth", required_argument, NULL, 'd' },
		{ "fault", required_argument, NULL, 'f' },
		{ "faults", no_argument, NULL, 'N' },
		{ "daemon-deaths", no_argument, NULL, 'D' },
		{ "partitions", no_argument, NULL, 'P' },
		{ "link-drops", no_argument, NULL, 'K' },
		{ "avoid", required_argument, NULL, 'a' },
		{ "lvbseq-start", required_argument, NULL, 'L' },
		{ "max-tossed", required_argument, NULL, 'T' },
		{ "fold", no_argument, NULL, 'O' },
		{ "mixed", required_argument, NULL, 'x' },
		{ "max-faults", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "msg-stats", no_argument, NULL, 'M' },
		{ "remaster", no_argument, NULL, 'R' },
		{ "repoint", no_argument, NULL, 'X' },
		{ "alloc-faults", required_argument, NULL, 'A' },
		{ "rehot", required_argument, NULL, 'H' },
		{ "hot-trees", no_argument, NULL, 'W' },
		{ "dir-lag", required_argument, NULL, 'G' },
		{ "bounce", no_argument, NULL, 'B' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_opts opts;
	uint64_t v, seed, passed = 0, from = 0;
	unsigned int i;
	int c;

	memset(&opts, 0, sizeof(opts));
	opts.o_first = 1;
	opts.o_last = 100;
	opts.o_ops = DEFAULT_OPS;
	opts.o_depth = SIM_DEPTH;
	while ((c = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (!parse_u64(optarg, &v) || !v)
				goto bad;
			opts.o_first = 1;
			opts.o_last = v;
			break;
		case 'F':
			if (!parse_u64(optarg, &v) || !v)
				goto bad;
			from = v;
			break;
		case 's':
			if (!parse_u64(optarg, &v))
				goto bad;
			opts.o_first = opts.o_last = v;
			break;
		case 'n':
			if (!parse_u64(optarg, &v) || v < 1 || v > SIM_MAX_NODES)
				goto bad;
			opts.o_nodes = (int)v;
			break;
		case 'o':
			if (!parse_u64(optarg, &v) || v > 1000000)
				goto bad;
			opts.o_ops = (unsigned int)v;
			break;
		case 'd':
			if (!parse_u64(optarg, &v) || v < 1 || v > SIM_DEPTH_MAX)
				goto bad;
			opts.o_depth = (unsigned int)v;
			break;
		case 'f':
			/* a fault of the simulated cluster glue, not of the engines */
			if (!strcmp(optarg, "no-fence-wait")) {
				opts.o_no_fence_wait = true;
				break;
			}
			/* nor this one: of the client model */
			if (!strcmp(optarg, "forget-purged")) {
				opts.o_forget_purged = true;
				break;
			}
			/* nor these: of the transport (LINK DROPS) */
			if (!strcmp(optarg, "link-dup")) {
				opts.o_link_fault = LINK_FAULT_DUP;
				break;
			}
			if (!strcmp(optarg, "link-lose")) {
				opts.o_link_fault = LINK_FAULT_LOSE;
				break;
			}
			for (i = 0; i < sizeof(fault_names) / sizeof(fault_names[0]); i++)
				if (!strcmp(optarg, fault_names[i].name))
					break;
			if (i == sizeof(fault_names) / sizeof(fault_names[0]))
				goto bad;
			opts.o_fault = fault_names[i].fault;
			break;
		case 'a':
			for (i = 0; i < sizeof(avoid_names) / sizeof(avoid_names[0]); i++)
				if (!strcmp(optarg, avoid_names[i].name))
					break;
			if (i == sizeof(avoid_names) / sizeof(avoid_names[0]))
				goto bad;
			opts.o_avoid |= avoid_names[i].bit;
			break;
		case 'T':
			if (!parse_u64(optarg, &v) || !v || v > UINT32_MAX)
				goto bad;
			opts.o_max_tossed = (uint32_t)v;
			break;
		case 'O':
			opts.o_fold = true;
			break;
		case 'x':
			if (!parse_u64(optarg, &v) || !v || v > SIM_MAX_NODES)
				goto bad;
			opts.o_mixed = (uint32_t)v;
			break;
		case 'm':
			if (!parse_u64(optarg, &v) || !v || v > 1000)
				goto bad;
			opts.o_max_faults = (unsigned int)v;
			break;
		case 'L':
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				goto bad;
			opts.o_lvbseq_start = (uint32_t)v;
			break;
		case 'N':
			opts.o_faults = true;
			break;
		case 'D':
			opts.o_daemon_deaths = true;
			break;
		case 'P':
			opts.o_partitions = true;
			break;
		case 'K':
			opts.o_link_drops = true;
			break;
		case 'q':
			opts.o_quiet = true;
			break;
		case 'M':
			opts.o_msg_stats = true;
			break;
		case 'R':
			opts.o_remaster = true;
			break;
		case 'X':
			opts.o_remaster = true;
			opts.o_repoint = true;
			break;
		case 'A':
			if (!parse_u64(optarg, &v) || v < 1 || v > 1000)
				goto bad;
			opts.o_alloc_faults = (unsigned int)v;
			break;
		case 'H':
			if (!parse_u64(optarg, &v) || !v || v > 64)
				goto bad;
			opts.o_rehot = (uint32_t)v;
			break;
		case 'B':
			opts.o_bounce = true;
			break;
		case 'W':
			opts.o_remaster = true;
			opts.o_hot_trees = true;
			break;
		case 'G':
			if (!parse_u64(optarg, &v) || !v || v > 60000)
				goto bad;
			opts.o_dir_lag = (uint32_t)v;
			break;
		case 'v':
			opts.o_verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	if ((opts.o_daemon_deaths || opts.o_no_fence_wait || opts.o_partitions ||
	     opts.o_max_faults) && !opts.o_faults) {
		fprintf(stderr, "dlm-sim: --daemon-deaths, --partitions, --max-faults "
			"and --fault no-fence-wait need --faults\n");
		return 2;
	}
	if (opts.o_link_fault && !opts.o_link_drops) {
		fprintf(stderr, "dlm-sim: --fault link-dup and link-lose need "
			"--link-drops\n");
		return 2;
	}
	if (opts.o_hot_trees && !opts.o_rehot)
		opts.o_rehot = 4;
	/* --mixed N that no engine would see tests nothing: say so */
	if (opts.o_mixed && !opts.o_remaster) {
		fprintf(stderr, "dlm-sim: --mixed needs --remaster (or --repoint, "
			"--hot-trees): without it no engine remasters\n");
		return 2;
	}
	if (opts.o_mixed > (uint32_t)(opts.o_nodes && !opts.o_faults ?
				      opts.o_nodes : SIM_FAULT_MAX_NODES)) {
		fprintf(stderr, "dlm-sim: --mixed %u: no node %u (node ids run "
			"1 to %d%s)\n", opts.o_mixed, opts.o_mixed,
			opts.o_nodes && !opts.o_faults ? opts.o_nodes :
			SIM_FAULT_MAX_NODES, opts.o_nodes && !opts.o_faults ?
			" with --nodes" : ", the most a seed picks or --faults "
			"joins");
		return 2;
	}
	if (opts.o_faults && opts.o_nodes > SIM_FAULT_MAX_NODES) {
		fprintf(stderr, "dlm-sim: --faults runs up to %d nodes\n",
			SIM_FAULT_MAX_NODES);
		return 2;
	}
	if (from) {
		if (from > opts.o_last)
			goto bad;
		opts.o_first = from;
	}
	for (seed = opts.o_first; seed <= opts.o_last; seed++) {
		if (run_seed(&opts, seed))
			return 1;
		passed++;
	}
	printf("dlm-sim: %llu seed%s passed (seeds %llu..%llu, ops %u%s%s%s%s%s%s)\n",
	       (unsigned long long)passed, passed == 1 ? "" : "s",
	       (unsigned long long)opts.o_first, (unsigned long long)opts.o_last, opts.o_ops,
	       opts.o_faults ? ", node faults" : "",
	       opts.o_daemon_deaths ? ", daemon-only deaths" : "",
	       opts.o_partitions ? ", partitions" : "",
	       opts.o_no_fence_wait ? ", glue fault no-fence-wait" : "",
	       opts.o_fault ? ", fault " : "",
	       opts.o_fault ? fault_name(opts.o_fault) : "");
	if (opts.o_alloc_faults)
		printf("dlm-sim: %llu engine allocations failed (%u in 1000 while "
		       "the schedule ran)\n", (unsigned long long)total_alloc_fails,
		       opts.o_alloc_faults);
	if (opts.o_link_drops)
		printf("dlm-sim: %llu link drops, %llu messages held across them\n",
		       (unsigned long long)total_link_drops,
		       (unsigned long long)total_link_held);
	if (opts.o_msg_stats)
		msg_stats_print(&opts);
	if (opts.o_remaster) {
		printf("dlm-sim: %llu resources moved (remastering), %llu deaths "
		       "asked for mid-move\n", (unsigned long long)total_moves,
		       (unsigned long long)total_move_kills);
		if (opts.o_hot_trees) {
			printf("dlm-sim: hot trees: locks requested by depth:");
			for (i = 1; i <= opts.o_depth; i++)
				printf(" %llu", (unsigned long long)total_hot_locks[i]);
			printf("\n");
		}
		/* a dominated resource must move somewhere in a real run */
		if (!total_moves && passed >= 20) {
			printf("FAIL: no resource moved in %llu seeds\n",
			       (unsigned long long)passed);
			return 1;
		}
	}
	return 0;
bad:
	usage(stderr);
	return 2;
}
