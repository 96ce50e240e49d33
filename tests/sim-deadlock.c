/*
 * tests/sim-deadlock.c - a deterministic simulator of deadlocks across
 * resources and nodes, and the oracle that judges their detection
 * (core/deadlock.c).
 *
 * One seed builds 2..4 engines with deadlock detection on, a network
 * that delivers one of its oldest few messages at random (reordered
 * across links, FIFO on each, no message delayed for ever), and a few
 * "transaction" clients (owners) spread over the nodes.  An owner locks
 * 2..4 resources one after the other in a random order and mode (EX or
 * PR; sometimes PR first and a conversion to EX at the end), holds them
 * all a while, then unlocks them all.  It never lets go of anything while
 * a request of its own waits: the owner model of the detector, in which
 * two such owners that each hold what the other wants wait forever.  So
 * deadlocks of two, three and more owners, through conversions, across
 * nodes, arise by themselves.  An owner whose request completes with
 * -EDEADLK unlocks everything it holds and starts again later.  Now and
 * then an owner crashes (its locks are purged) and, with --node-deaths, a
 * node dies while probes travel and the others recover without it.
 *
 * The oracle rebuilds the true wait-for graph after every step from the
 * masters' queues (parsed from each engine's dump, in queue order, with
 * the grant rules: a conflicting granted mode; for a new request, a
 * conversion or request ahead whose mode conflicts, and through a
 * compatible one ahead, whatever granted mode blocks it) and the owners of the
 * locks, and checks:
 *   - victim: a request the detector chooses (its log line) was, at some
 *     moment since the probe that found it went out, the youngest request
 *     of a cycle (it reached itself through older requests only): no
 *     request outside a cycle is cancelled, and a cycle whose youngest
 *     member already gave way is not broken again by another;
 *   - bound: no request stays on a cycle longer than DEADLOCK_BOUND of
 *     virtual time (outside recoveries);
 *   - liveness: when new transactions stop, every owner finishes.
 * --fault deadlk-noop (cycles found, never broken) and deadlk-any-victim
 * (every member of a cycle may give way) must be caught; see
 * tests/sim-deadlock.test and sim-broken.test.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/wire.h"

#define MAXNODES	4
#define MAXOWNERS	8
#define MAXRES		6
#define MAXSTEPS	5	/* lock steps of one transaction */
#define MAXQ		4096
#define MAXV		64	/* queued requests the oracle follows */
#define DEADLOCK_MS	200
#define DEADLOCK_BOUND	(4 * DEADLOCK_MS)
#define OPS		4000	/* schedule steps of one seed */
#define QUIESCE_STEPS	400000
#define REORDER		6	/* deliver one of the oldest this many messages */

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return n ? (uint32_t)(r->s % n) : 0;
}

struct qmsg {
	uint32_t from, to;
	size_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

enum ostate { O_IDLE, O_WAIT, O_READY, O_HOLD, O_UNLOCK, O_DEAD };

struct step {
	int res;
	int mode;
	int conv;	/* converts the lock taken at step 'conv - 1' */
};

struct owner {
	int node;		/* 0-based */
	uint64_t id;
	enum ostate state;
	uint64_t next_ms;
	struct step steps[MAXSTEPS];
	int nsteps, cur;
	uint32_t lkid[MAXSTEPS];
	bool held[MAXSTEPS];
	int unlocks;		/* unlocks outstanding */
};

/* What the oracle remembers of one queued request (node, lkid). */
struct vrec {
	bool used, seen;
	uint64_t last_seen;	/* queued at its master then */
	int node;
	uint32_t lkid;
	uint64_t key;
	uint64_t probe_last, probe_prev;
	uint64_t last_ok;	/* youngest on a cycle then (0: never) */
	bool ok_ever;
	uint64_t cycle_since;	/* on a cycle continuously since */
	bool on_cycle;
};

struct sim {
	struct rng rng;
	uint64_t seed;
	int nnodes, nres, nowners;
	struct dlm_core *core[MAXNODES];
	struct dlm_ls *ls[MAXNODES];
	bool alive[MAXNODES];
	bool rc_done[MAXNODES];
	uint32_t event;
	bool recovering;
	struct qmsg *q;
	size_t nq;
	uint64_t now, step;
	struct owner owners[MAXOWNERS];
	struct vrec recs[MAXV * 4];
	/* ASTs are handled after the engine call that made them returns */
	struct { int node; struct dlm_ast a; } astq[256];
	int nastq;
	bool in_asts;
	enum dlm_core_fault fault;
	bool node_deaths, verbose, failed, quiesce;
	char why[512];
	uint64_t victims, deaths, crashes, commits;
	int largest;		/* requests in the largest knot of waits seen */
};

static void fail(struct sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failed)
		return;
	s->failed = true;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

static struct sim *cur_sim;

static int node_of(struct sim *s, void *ctx)
{
	return (int)((struct dlm_core **)ctx - s->core);
}

static void cb_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct sim *s = cur_sim;
	int from = node_of(s, ctx);

	if (s->nq >= MAXQ) {
		fail(s, "network queue full");
		return;
	}
	s->q[s->nq].from = (uint32_t)from + 1;
	s->q[s->nq].to = to;
	s->q[s->nq].len = len;
	memcpy(s->q[s->nq].buf, buf, len);
	s->nq++;
}

static struct owner *find_owner(struct sim *s, int node, uint64_t id)
{
	for (int i = 0; i < s->nowners; i++)
		if (s->owners[i].node == node && s->owners[i].id == id)
			return &s->owners[i];
	return NULL;
}

static void check_victim(struct sim *s, int node, uint32_t lkid);

static void owner_unlock_all(struct sim *s, struct owner *o);

static void handle_ast(struct sim *s, int node, const struct dlm_ast *a)
{
	struct owner *o = find_owner(s, node, a->owner);
	int i;

	if (!o || o->state == O_DEAD) {
		fail(s, "n%d: completion for unknown owner %llu", node + 1,
		     (unsigned long long)a->owner);
		return;
	}
	for (i = 0; i < o->nsteps; i++)
		if (o->lkid[i] == a->lkid)
			break;
	if (i == o->nsteps) {
		fail(s, "n%d: completion for lock %08x the owner never had",
		     node + 1, a->lkid);
		return;
	}
	if (a->status == -DLM_EUNLOCK) {
		o->held[i] = false;
		o->lkid[i] = 0;
		if (--o->unlocks == 0) {
			o->state = O_IDLE;
			o->next_ms = s->now + rnd(&s->rng, 100);
		}
		return;
	}
	if (o->state != O_WAIT) {
		fail(s, "n%d: owner %llu completion (status %d) while not waiting",
		     node + 1, (unsigned long long)o->id, a->status);
		return;
	}
	if (a->status == 0) {
		o->held[i] = true;
		o->cur++;
		o->state = o->cur == o->nsteps ? O_HOLD : O_READY;
		o->next_ms = s->now + rnd(&s->rng, o->state == O_HOLD ? 100 : 30);
		if (o->state == O_HOLD)
			s->commits++;
		return;
	}
	if (a->status == -EDEADLK) {
		/* a new request is gone; a conversion keeps its old mode */
		if (!o->steps[o->cur].conv)
			o->lkid[i] = 0;
		owner_unlock_all(s, o);
		return;
	}
	fail(s, "n%d: lock %08x completed with status %d", node + 1, a->lkid,
	     a->status);
}

static void cb_ast(void *ctx, const struct dlm_ast *a)
{
	struct sim *s = cur_sim;

	if (a->type != DLM_AST_COMP)
		return;
	if (s->nastq == (int)(sizeof(s->astq) / sizeof(s->astq[0]))) {
		fail(s, "AST queue full");
		return;
	}
	s->astq[s->nastq].node = node_of(s, ctx);
	s->astq[s->nastq].a = *a;
	s->astq[s->nastq].a.lvb = NULL;
	s->nastq++;
}

/* Hand the queued ASTs to the owners (whose answers may queue more). */
static void run_asts(struct sim *s)
{
	if (s->in_asts)
		return;
	s->in_asts = true;
	while (s->nastq && !s->failed) {
		int node = s->astq[0].node;
		struct dlm_ast a = s->astq[0].a;

		memmove(&s->astq[0], &s->astq[1], (size_t)(s->nastq - 1) *
			sizeof(s->astq[0]));
		s->nastq--;
		handle_ast(s, node, &a);
	}
	s->in_asts = false;
}

static void cb_log(void *ctx, enum dlm_log_level level, const char *line)
{
	struct sim *s = cur_sim;
	int node = node_of(s, ctx);
	const char *p = strstr(line, "deadlock: lock ");
	unsigned int lkid;

	(void)level;
	if (s->verbose)
		printf("%6llu %6llums n%d: %s\n", (unsigned long long)s->step,
		       (unsigned long long)s->now, node + 1, line);
	if (p && sscanf(p, "deadlock: lock %x", &lkid) == 1)
		check_victim(s, node, lkid);
}

static void cb_recovery_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	struct sim *s = cur_sim;

	(void)ls;
	if (event == s->event)
		s->rc_done[node_of(s, ctx)] = true;
}

/* ------------------------------------------------------------ owners */

static void request(struct sim *s, struct owner *o)
{
	const struct step *st = &o->steps[o->cur];
	char name[8];
	struct dlm_lock_req rq;
	uint32_t lkid = 0;
	int rv;

	memset(&rq, 0, sizeof(rq));
	snprintf(name, sizeof(name), "r%d", st->res);
	rq.mode = st->mode;
	rq.owner = o->id;
	rq.astarg = o->id;
	if (st->conv) {
		rq.flags = DLM_LKF_CONVERT;
		rq.lkid = o->lkid[st->conv - 1];
	} else {
		rq.name = name;
		rq.namelen = (unsigned int)strlen(name);
	}
	o->state = O_WAIT;
	rv = dlm_core_lock(s->ls[o->node], &rq, &lkid);
	if (rv) {
		fail(s, "n%d: lock request refused: %d", o->node + 1, rv);
		return;
	}
	o->lkid[o->cur] = st->conv ? rq.lkid : lkid;
	run_asts(s);
}

static void owner_unlock_all(struct sim *s, struct owner *o)
{
	o->unlocks = 0;
	o->state = O_UNLOCK;
	for (int i = 0; i < o->nsteps; i++) {
		struct dlm_unlock_req u;

		if (!o->held[i] || o->steps[i].conv)
			continue;	/* a conversion's lock is its step's */
		memset(&u, 0, sizeof(u));
		u.lkid = o->lkid[i];
		u.owner = o->id;
		u.astarg = o->id;
		o->unlocks++;
		if (dlm_core_unlock(s->ls[o->node], &u)) {
			fail(s, "n%d: unlock of %08x refused", o->node + 1, u.lkid);
			return;
		}
	}
	if (!o->unlocks) {
		o->state = O_IDLE;
		o->next_ms = s->now + rnd(&s->rng, 100);
	}
}

static void owner_start(struct sim *s, struct owner *o)
{
	int used[MAXRES] = { 0 };
	int n = 2 + (int)rnd(&s->rng, 3);

	if (n > s->nres)
		n = s->nres;
	memset(o->steps, 0, sizeof(o->steps));
	memset(o->lkid, 0, sizeof(o->lkid));
	memset(o->held, 0, sizeof(o->held));
	o->nsteps = 0;
	o->cur = 0;
	for (int i = 0; i < n; i++) {
		int r;

		do
			r = (int)rnd(&s->rng, (uint32_t)s->nres);
		while (used[r]);
		used[r] = 1;
		o->steps[i].res = r;
		o->steps[i].mode = rnd(&s->rng, 10) < 7 ? DLM_LOCK_EX : DLM_LOCK_PR;
		o->nsteps++;
	}
	/* now and then: a PR lock taken early is converted to EX at the end */
	if (o->nsteps < MAXSTEPS && rnd(&s->rng, 4) == 0) {
		int k = (int)rnd(&s->rng, (uint32_t)o->nsteps);

		o->steps[k].mode = DLM_LOCK_PR;
		o->steps[o->nsteps].res = o->steps[k].res;
		o->steps[o->nsteps].mode = DLM_LOCK_EX;
		o->steps[o->nsteps].conv = k + 1;
		o->nsteps++;
	}
	request(s, o);
}

static void owner_act(struct sim *s, struct owner *o)
{
	switch (o->state) {
	case O_IDLE:
		if (!s->quiesce)
			owner_start(s, o);
		break;
	case O_READY:
		request(s, o);
		break;
	case O_HOLD:
		owner_unlock_all(s, o);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------- oracle */

struct vert {
	int node;		/* the process copy's node, 0-based */
	uint32_t lkid;		/* and id */
	uint64_t owner;
	uint64_t key;
	uint64_t probe_ms;
	bool victim;
};

struct graph {
	struct vert v[MAXV];
	int n;
	bool adj[MAXV][MAXV];
};

/* a lock line of a master's dump, in queue order */
struct qline {
	int status;		/* DLM_LKSTS_* */
	int gr, rq;
	int node;		/* owner node, 0-based */
	uint32_t lkid;		/* process copy id there */
};

/* Every node's process copies, read once per step. */
#define MAXPC	256
struct pcopies {
	struct dlm_lock_info li[MAXNODES][MAXPC];
	int n[MAXNODES];
};

struct pc_ctx {
	struct pcopies *pc;
	int node;
};

static void collect_pcopy(void *arg, const struct dlm_lock_info *li)
{
	struct pc_ctx *c = arg;
	int *n = &c->pc->n[c->node];

	if (!li->is_master_copy && *n < MAXPC) {
		c->pc->li[c->node][*n] = *li;
		c->pc->li[c->node][*n].key = NULL;	/* valid during the walk only */
		(*n)++;
	}
}

static struct pcopies pcs;

static int mode_num(const char *m)
{
	static const char *const names[] = { "NL", "CR", "CW", "PR", "PW", "EX" };

	for (int i = 0; i < 6; i++)
		if (!strncmp(m, names[i], 2))
			return i;
	return DLM_LOCK_IV;
}


/* One resource's queues at its master: add its requests and edges to
 * holders (by lock, resolved to owners once every resource is read). */
struct hedge {
	int w;			/* vertex */
	int hnode;
	uint64_t howner;
};

static const struct dlm_lock_info *pcopy(int node, uint32_t lkid)
{
	for (int i = 0; i < pcs.n[node]; i++)
		if (pcs.li[node][i].lkid == lkid)
			return &pcs.li[node][i];
	return NULL;
}

/* Is queued request i (a new request) held back by k: a conversion, or
 * a request ahead of it? */
static bool ahead_of(const struct qline *ql, int i, int k)
{
	return k != i && (ql[k].status == DLM_LKSTS_CONVERT ||
			  (ql[k].status == DLM_LKSTS_WAITING && k < i));
}

/* Does new request i wait until j's holder lets j go?  A granted or
 * converting j whose granted mode conflicts; a conversion or a request
 * ahead whose requested mode conflicts; and what a compatible one ahead
 * waits for: it holds i back only until it is granted itself, so the
 * edge is to the granted modes that conflict with its request (the
 * rule of core/lock.c dlm_for_each_blocker, written out pairwise). */
static bool waits_for(const struct qline *ql, int n, int i, int j)
{
	if (ql[j].status != DLM_LKSTS_WAITING &&
	    !dlm_modes_compat(ql[j].gr, ql[i].rq))
		return true;
	if (ahead_of(ql, i, j) && !dlm_modes_compat(ql[j].rq, ql[i].rq))
		return true;
	if (ql[j].status == DLM_LKSTS_WAITING)
		return false;
	for (int k = 0; k < n; k++)
		if (k != j && ahead_of(ql, i, k) &&
		    dlm_modes_compat(ql[k].rq, ql[i].rq) &&
		    (ql[k].status != DLM_LKSTS_CONVERT ||
		     dlm_modes_compat(ql[k].gr, ql[i].rq)) &&
		    !dlm_modes_compat(ql[j].gr, ql[k].rq))
			return true;
	return false;
}

static void add_resource(struct graph *g, struct qline *ql,
			 int n, struct hedge *he, int *nhe)
{
	for (int i = 0; i < n; i++) {
		const struct dlm_lock_info *p = pcopy(ql[i].node, ql[i].lkid);
		int w;

		if (ql[i].status == DLM_LKSTS_GRANTED || !p || g->n == MAXV)
			continue;
		w = g->n++;
		g->v[w].node = ql[i].node;
		g->v[w].lkid = ql[i].lkid;
		g->v[w].owner = p->owner;
		g->v[w].key = p->dl_key;
		g->v[w].probe_ms = p->dl_probe_ms;
		g->v[w].victim = p->dl_victim;
		for (int j = 0; j < n; j++) {
			bool blocks;

			if (j == i)
				continue;
			if (ql[i].status == DLM_LKSTS_WAITING)
				blocks = waits_for(ql, n, i, j);
			else
				blocks = ql[j].status != DLM_LKSTS_WAITING &&
					 !dlm_modes_compat(ql[j].gr, ql[i].rq);
			if (blocks && *nhe < MAXV * MAXV) {
				const struct dlm_lock_info *h = pcopy(ql[j].node,
								      ql[j].lkid);

				if (!h)
					continue;
				he[*nhe].w = w;
				he[*nhe].hnode = ql[j].node;
				he[*nhe].howner = h->owner;
				(*nhe)++;
			}
		}
	}
}

static void build_graph(struct sim *s, struct graph *g)
{
	static struct hedge he[MAXV * MAXV];
	int nhe = 0;

	memset(g, 0, sizeof(*g));
	for (int node = 0; node < s->nnodes; node++) {
		struct pc_ctx c = { &pcs, node };

		pcs.n[node] = 0;
		if (s->alive[node])
			dlm_core_ls_walk(s->ls[node], collect_pcopy, &c);
	}
	for (int node = 0; node < s->nnodes; node++) {
		struct qline ql[64];
		int nql = 0, master = 0;
		char *text = NULL, *line, *save = NULL;

		if (!s->alive[node])
			continue;
		if (dlm_core_ls_dump(s->ls[node], &text) || !text) {
			fail(s, "n%d: dump failed", node + 1);
			return;
		}
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char q[16], mode[16];
			unsigned int id, rn, rid;
			const char *p;

			if (!strncmp(line, "resource ", 9) || !strncmp(line, "inflight ", 9)) {
				add_resource(g, ql, nql, he, &nhe);
				nql = 0;
				p = strstr(line, " master ");
				master = p && !strncmp(line, "resource ", 9) ?
					 atoi(p + 8) : 0;
				continue;
			}
			if (master != node + 1 || nql == 64 ||
			    sscanf(line, " %15s %x %15s", q, &id, mode) != 3)
				continue;
			memset(&ql[nql], 0, sizeof(ql[nql]));
			if (!strcmp(q, "granted")) {
				ql[nql].status = DLM_LKSTS_GRANTED;
				ql[nql].gr = mode_num(mode);
			} else if (!strcmp(q, "convert")) {
				ql[nql].status = DLM_LKSTS_CONVERT;
				ql[nql].gr = mode_num(mode);
				ql[nql].rq = mode_num(mode + 4);
			} else if (!strcmp(q, "waiting")) {
				ql[nql].status = DLM_LKSTS_WAITING;
				ql[nql].gr = DLM_LOCK_IV;
				ql[nql].rq = mode_num(mode);
			} else {
				continue;
			}
			ql[nql].node = node;
			ql[nql].lkid = id;
			p = strstr(line, " node ");
			if (p && sscanf(p, " node %u remid %x", &rn, &rid) == 2) {
				ql[nql].node = (int)rn - 1;	/* a master copy */
				ql[nql].lkid = rid;
			}
			nql++;
		}
		add_resource(g, ql, nql, he, &nhe);
		free(text);
	}
	/* W waits for H: W -> every queued request of H's owner; a victim
	 * whose cancel is in flight no longer waits */
	for (int e = 0; e < nhe; e++) {
		if (g->v[he[e].w].victim)
			continue;
		for (int x = 0; x < g->n; x++)
			if (g->v[x].node == he[e].hnode &&
			    g->v[x].owner == he[e].howner && !g->v[x].victim)
				g->adj[he[e].w][x] = true;
	}
}

static bool older(const struct vert *a, const struct vert *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->node != b->node)
		return a->node < b->node;
	return a->lkid < b->lkid;
}

/* Does v reach itself (only through requests older than v, if 'young')? */
static bool reaches_self(const struct graph *g, int v, bool young)
{
	bool seen[MAXV] = { false };
	int stack[MAXV], top = 0;

	stack[top++] = v;
	while (top) {
		int x = stack[--top];

		for (int y = 0; y < g->n; y++) {
			if (!g->adj[x][y])
				continue;
			if (y == v)
				return true;
			if (seen[y] || (young && !older(&g->v[y], &g->v[v])))
				continue;
			seen[y] = true;
			stack[top++] = y;
		}
	}
	return false;
}

/* Mark in 'out' every request v reaches. */
static void reach_all(const struct graph *g, int v, bool *out)
{
	int stack[MAXV], top = 0;

	stack[top++] = v;
	while (top) {
		int x = stack[--top];

		for (int y = 0; y < g->n; y++) {
			if (g->adj[x][y] && !out[y]) {
				out[y] = true;
				stack[top++] = y;
			}
		}
	}
}

/* How many requests wait in a cycle with v (its strongly connected
 * component), for the report: deadlocks of more than two parties. */
static int knot_size(const struct graph *g, int v)
{
	bool from_v[MAXV] = { false };
	int n = 0;

	reach_all(g, v, from_v);
	for (int y = 0; y < g->n; y++) {
		bool from_y[MAXV] = { false };

		if (!from_v[y])
			continue;
		reach_all(g, y, from_y);
		n += from_y[v];
	}
	return n;
}

static struct vrec *rec_find(struct sim *s, int node, uint32_t lkid, bool create)
{
	struct vrec *free_rec = NULL;
	size_t n = sizeof(s->recs) / sizeof(s->recs[0]);

	for (size_t i = 0; i < n; i++) {
		if (s->recs[i].used && s->recs[i].node == node &&
		    s->recs[i].lkid == lkid)
			return &s->recs[i];
		if (!s->recs[i].used && !free_rec)
			free_rec = &s->recs[i];
	}
	if (!create || !free_rec)
		return NULL;
	memset(free_rec, 0, sizeof(*free_rec));
	free_rec->used = true;
	free_rec->node = node;
	free_rec->lkid = lkid;
	return free_rec;
}

/* The detector chose (node, lkid): judge it by what the oracle saw. */
static void check_victim(struct sim *s, int node, uint32_t lkid)
{
	struct vrec *r = rec_find(s, node, lkid, false);
	uint64_t since;

	s->victims++;
	if (!r) {
		fail(s, "n%d: deadlock victim %08x was never a queued request the "
		     "oracle saw", node + 1, lkid);
		return;
	}
	/* the probe that came back went out at the latest probe time, or
	 * at the one before if it was still travelling */
	since = r->probe_prev ? r->probe_prev : r->probe_last;
	if (!r->ok_ever || r->last_ok < since)
		fail(s, "n%d: deadlock victim %08x (age %llu) was not the youngest "
		     "request of a cycle since its probe went out at %llums "
		     "(last seen so: %s%llu)", node + 1, lkid,
		     (unsigned long long)r->key, (unsigned long long)since,
		     r->ok_ever ? "" : "never ", (unsigned long long)r->last_ok);
}

static void oracle(struct sim *s)
{
	static struct graph g;
	size_t nrec = sizeof(s->recs) / sizeof(s->recs[0]);

	for (int i = 0; i < s->nnodes; i++) {
		char why[256];

		if (s->alive[i] && dlm_core_ls_verify(s->ls[i], why, sizeof(why)))
			fail(s, "n%d: %s", i + 1, why);
	}
	if (s->recovering)
		return;
	build_graph(s, &g);
	for (size_t i = 0; i < nrec; i++)
		s->recs[i].seen = false;
	for (int v = 0; v < g.n; v++) {
		struct vrec *r = rec_find(s, g.v[v].node, g.v[v].lkid, true);
		bool cyc, young;

		if (!r) {
			fail(s, "oracle: too many requests");
			return;
		}
		if (r->key != g.v[v].key) {	/* a new wait of the lock */
			uint32_t lkid = r->lkid;
			int node = r->node;

			memset(r, 0, sizeof(*r));
			r->used = true;
			r->node = node;
			r->lkid = lkid;
			r->key = g.v[v].key;
		}
		r->seen = true;
		r->last_seen = s->now;
		if (g.v[v].probe_ms != r->probe_last) {
			r->probe_prev = r->probe_last;
			r->probe_last = g.v[v].probe_ms;
		}
		if (g.v[v].victim)
			continue;
		cyc = reaches_self(&g, v, false);
		young = cyc && reaches_self(&g, v, true);
		if (young) {
			r->last_ok = s->now;
			r->ok_ever = true;
			if (!r->on_cycle) {
				int k = knot_size(&g, v);

				if (k > s->largest)
					s->largest = k;
			}
		}
		if (cyc && !r->on_cycle)
			r->cycle_since = s->now;
		r->on_cycle = cyc;
		if (cyc && s->now - r->cycle_since > DEADLOCK_BOUND)
			fail(s, "n%d: request %08x has been on a cycle of waits since "
			     "%llums: the deadlock was not broken within %dms",
			     g.v[v].node + 1, g.v[v].lkid,
			     (unsigned long long)r->cycle_since, DEADLOCK_BOUND);
	}
	/* a request no longer queued is remembered a while: a probe that
	 * passed it may still come back to it (its cancel then finds it
	 * granted, or cancels it as the youngest of a cycle it was in) */
	for (size_t i = 0; i < nrec; i++) {
		if (!s->recs[i].used || s->recs[i].seen)
			continue;
		s->recs[i].on_cycle = false;
		if (s->now - s->recs[i].last_seen > 2 * DEADLOCK_MS)
			s->recs[i].used = false;
	}
}

/* ------------------------------------------------------------ network */

static void deliver(struct sim *s)
{
	/* one of the oldest few: reordered across links, but no message
	 * waits for ever (a network with a bounded delay) */
	size_t i = rnd(&s->rng, (uint32_t)(s->nq < REORDER ? s->nq : REORDER)), j;
	struct qmsg *m;

	/* FIFO per link: the oldest message on the chosen one's link */
	for (j = 0; j < i; j++)
		if (s->q[j].from == s->q[i].from && s->q[j].to == s->q[i].to)
			break;
	m = malloc(sizeof(*m));
	if (!m) {
		fail(s, "out of memory");
		return;
	}
	*m = s->q[j];
	memmove(&s->q[j], &s->q[j + 1], (s->nq - j - 1) * sizeof(s->q[0]));
	s->nq--;
	if (s->alive[m->from - 1] && s->alive[m->to - 1]) {
		int rv = dlm_core_receive(s->core[m->to - 1], m->from, m->buf,
					  m->len);

		if (rv)
			fail(s, "n%u: message from n%u refused: %d", m->to,
			     m->from, rv);
	}
	free(m);
}

static void tick(struct sim *s)
{
	s->now += 1 + rnd(&s->rng, 10);
	for (int i = 0; i < s->nnodes; i++)
		if (s->alive[i])
			dlm_core_tick(s->core[i], s->now);
}

static int alive_members(struct sim *s, uint32_t *m)
{
	int n = 0;

	for (int i = 0; i < s->nnodes; i++)
		if (s->alive[i])
			m[n++] = (uint32_t)i + 1;
	return n;
}

/* A node dies: its owners with it; the others stop and recover. */
static void node_death(struct sim *s)
{
	uint32_t members[MAXNODES];
	int victim = (int)rnd(&s->rng, (uint32_t)s->nnodes), n;

	if (!s->alive[victim] || alive_members(s, members) <= 2)
		return;
	s->alive[victim] = false;
	s->deaths++;
	for (int i = 0; i < s->nowners; i++)
		if (s->owners[i].node == victim)
			s->owners[i].state = O_DEAD;
	n = alive_members(s, members);
	s->event++;
	s->recovering = true;
	for (int i = 0; i < s->nnodes; i++) {
		if (!s->alive[i])
			continue;
		s->rc_done[i] = false;
		(void)dlm_core_ls_stop(s->ls[i]);
	}
	for (int i = 0; i < s->nnodes; i++)
		if (s->alive[i] &&
		    dlm_core_ls_start(s->ls[i], s->event, members, (unsigned)n))
			fail(s, "n%d: recovery start refused", i + 1);
}

static void recovery_check(struct sim *s)
{
	if (!s->recovering)
		return;
	for (int i = 0; i < s->nnodes; i++)
		if (s->alive[i] && !s->rc_done[i])
			return;
	for (int i = 0; i < s->nnodes; i++)
		if (s->alive[i] && dlm_core_ls_finish(s->ls[i], s->event))
			fail(s, "n%d: finish refused", i + 1);
	s->recovering = false;
	/* cycles are judged afresh after a recovery */
	for (size_t i = 0; i < sizeof(s->recs) / sizeof(s->recs[0]); i++)
		s->recs[i].on_cycle = false;
}

static void one_step(struct sim *s)
{
	uint32_t r = rnd(&s->rng, 100);

	s->step++;
	if (s->nq && r < 55) {
		deliver(s);
	} else if (r < 75 || s->recovering) {
		tick(s);
	} else if (!s->quiesce && s->node_deaths && r == 98 &&
		   rnd(&s->rng, 10) == 0) {
		node_death(s);
	} else if (!s->quiesce && r == 99 && rnd(&s->rng, 20) == 0) {
		{
			/* an owner crashes: its locks are purged */
			struct owner *o = &s->owners[rnd(&s->rng, (uint32_t)s->nowners)];

			if (o->state != O_DEAD && s->alive[o->node]) {
				(void)dlm_core_purge_owner(s->ls[o->node], o->id);
				o->state = O_IDLE;
				o->unlocks = 0;
				o->id += 1000;	/* comes back as a new owner */
				o->next_ms = s->now + 50;
				s->crashes++;
			}
		}
	} else {
		struct owner *o = &s->owners[rnd(&s->rng, (uint32_t)s->nowners)];

		if (o->state != O_DEAD && s->now >= o->next_ms)
			owner_act(s, o);
	}
	run_asts(s);
	recovery_check(s);
	run_asts(s);
	oracle(s);
}

static bool all_done(struct sim *s)
{
	if (s->nq || s->recovering)
		return false;
	for (int i = 0; i < s->nowners; i++)
		if (s->owners[i].state != O_DEAD && s->owners[i].state != O_IDLE)
			return false;
	return true;
}

static int run_seed(uint64_t seed, enum dlm_core_fault fault, bool deaths,
		    bool verbose, bool quiet)
{
	static const struct dlm_core_ops ops = {
		.send = cb_send, .ast = cb_ast, .log = cb_log,
		.recovery_done = cb_recovery_done,
	};
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t members[MAXNODES];
	int rc = 0;

	if (!s || !(s->q = malloc(MAXQ * sizeof(*s->q)))) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	cur_sim = s;
	s->seed = seed;
	s->rng.s = seed * 0x9e3779b97f4a7c15ULL + 1;
	s->fault = fault;
	s->node_deaths = deaths;
	s->verbose = verbose;
	s->now = 1000;
	/* node deaths need a survivor pair: at least three nodes then */
	s->nnodes = deaths ? 3 + (int)rnd(&s->rng, MAXNODES - 2) :
			     2 + (int)rnd(&s->rng, MAXNODES - 1);
	s->nres = 3 + (int)rnd(&s->rng, MAXRES - 2);
	s->nowners = 3 + (int)rnd(&s->rng, MAXOWNERS - 2);
	for (int i = 0; i < s->nnodes; i++) {
		struct dlm_core_config cfg = {
			.our_nodeid = (uint32_t)i + 1, .toss_ms = 500,
			.deadlock_ms = DEADLOCK_MS,
		};

		members[i] = (uint32_t)i + 1;
		s->alive[i] = true;
		s->core[i] = dlm_core_new(&cfg, &ops, &s->core[i]);
		if (!s->core[i]) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		dlm_core_set_fault(s->core[i], fault);
		dlm_core_tick(s->core[i], s->now);
	}
	for (int i = 0; i < s->nnodes; i++)
		if (dlm_core_ls_create(s->core[i], "dl", members,
				       (unsigned)s->nnodes, NULL, &s->ls[i]))
			fail(s, "n%d: lockspace create failed", i + 1);
	for (int i = 0; i < s->nowners; i++) {
		s->owners[i].node = (int)rnd(&s->rng, (uint32_t)s->nnodes);
		s->owners[i].id = (uint64_t)i + 1;
		s->owners[i].next_ms = s->now + rnd(&s->rng, 50);
	}
	for (int i = 0; i < OPS && !s->failed; i++)
		one_step(s);
	s->quiesce = true;
	for (int i = 0; i < QUIESCE_STEPS && !s->failed && !all_done(s); i++)
		one_step(s);
	if (!s->failed && !all_done(s))
		fail(s, "owners still busy after %d quiesce steps (a deadlock "
		     "that was never broken?)", QUIESCE_STEPS);
	if (s->failed) {
		printf("FAIL seed %llu: %s\n", (unsigned long long)seed, s->why);
		rc = 1;
	} else if (!quiet) {
		printf("ok seed %llu: %d nodes, %d owners, %d resources, %llu "
		       "transactions, %llu victims (largest knot %d), %llu "
		       "crashes, %llu deaths\n",
		       (unsigned long long)seed, s->nnodes, s->nowners, s->nres,
		       (unsigned long long)s->commits,
		       (unsigned long long)s->victims, s->largest,
		       (unsigned long long)s->crashes,
		       (unsigned long long)s->deaths);
	}
	for (int i = 0; i < s->nnodes; i++)
		dlm_core_free(s->core[i]);
	free(s->q);
	free(s);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "from", required_argument, NULL, 'f' },
		{ "fault", required_argument, NULL, 'F' },
		{ "node-deaths", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t from = 1, count = 200;
	enum dlm_core_fault fault = DLM_FAULT_NONE;
	bool deaths = false, verbose = false, quiet = false;
	unsigned long long victims = 0;
	int c, failed = 0;

	while ((c = getopt_long(argc, argv, "s:n:f:F:dvq", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			from = strtoull(optarg, NULL, 10);
			count = 1;
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'f':
			from = strtoull(optarg, NULL, 10);
			break;
		case 'F':
			if (!strcmp(optarg, "deadlk-noop"))
				fault = DLM_FAULT_DEADLK_NOOP;
			else if (!strcmp(optarg, "deadlk-any-victim"))
				fault = DLM_FAULT_DEADLK_ANY_VICTIM;
			else {
				fprintf(stderr, "unknown fault %s\n", optarg);
				return 2;
			}
			break;
		case 'd':
			deaths = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'q':
			quiet = true;
			break;
		default:
			fprintf(stderr, "usage: %s [--seed S | --from S --seeds N] "
				"[--fault deadlk-noop|deadlk-any-victim] "
				"[--node-deaths] [-v] [-q]\n", argv[0]);
			return 2;
		}
	}
	for (uint64_t seed = from; seed < from + count; seed++) {
		if (run_seed(seed, fault, deaths, verbose, quiet)) {
			failed++;
			break;
		}
	}
	(void)victims;
	if (!failed)
		printf("sim-deadlock: %llu seeds ok\n", (unsigned long long)count);
	return failed ? 1 : 0;
}
