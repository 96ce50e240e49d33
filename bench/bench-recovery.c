/*
 * bench/bench-recovery.c - the engine's own cost of recovering from a
 * node death: three engines in one process, connected by an in-memory
 * FIFO network (no sockets, no corosync), hold N locks spread over the
 * three nodes; node 3 dies; the survivors run recovery (stop, start,
 * barriers, directory rebuild, new masters, lock resend, purge, grant)
 * until both have finished.  The time reported is wall-clock for that,
 * messages included (encode, queue, decode), so it bounds what the
 * engine adds to a real cluster's recovery.
 *
 * Usage: bench-recovery [LOCKS [single [NODES]]]   (default 1000000, 3)
 * BENCH_FOLD=1 in the environment: the engines fold lone locks
 * (core/solo.c; dlmd's default), so each node's lone locks on the names
 * it directs are folded, and stay folded through the death (solo.c,
 * "Recovery").
 *
 * By default each resource has two locks, PR from its master and CR from
 * the next node, so recovery purges, remasters and resends.  With
 * "single" each resource has one EX lock, taken by its master (the shape
 * of bench/scale's recovery: every client locks fresh names of its own),
 * so recovery is the directory's rebuild and the walks over every
 * resource.  NODES engines (2..64) hold the locks; the last one dies.
 * Besides their total the recovery's messages are counted by type, with
 * the barrier rounds (RC_STATUS messages over survivors x (survivors -
 * 1)): at 16 nodes, what each of the 15 survivors' dlmds must send,
 * receive and wake for.
 *
 * Besides the wall time it prints this process's CPU time for the
 * recovery (the machine is shared: the CPU time is the steadier figure)
 * and how that CPU time splits over node 1's steps (both survivors'
 * work while node 1 is in a step counts to that step).
 *
 * Where the time goes (issue 18; 2026-12-06, -O2 -g, 2 shared cores,
 * perf record -g on the recovery alone):
 *   locks   CPU     nodes   directory  masters  rest
 *   100k    0.117s  0.033   0.028      0.048    0.008
 *   1M      1.420s  0.386   0.339      0.580    0.115
 * 12x the CPU for 10x the locks: near linear; what grows faster is
 * cache and TLB misses (100k locks' structures fit in the caches, 1M's
 * do not).  No step walks a list per lock.  The profile at 1M: step_dir
 * (its own loop: one cache miss per rsb for res_nodeid and the hash),
 * dir_find and malloc of the rebuilt directory's records
 * (dlm_dir_register), sweep_dir (then a walk of the whole directory,
 * one dlm_htab_remove each, and the table shrinking by repeated halving
 * rehashes as it emptied; now one pass, dlm_htab_sweep, a gain within
 * this machine's noise), step_masters' lookups (dir_find, a miss
 * each), message encode/decode and this harness's queue (memcpy, page
 * faults as it grows); step_start's walk (all_rsbs, collect_departed)
 * and finish's second walk of every rsb (dlm_redo_lookups) after it.
 * free() of the purged locks shows as malloc_consolidate/unlink_chunk.
 * In the daemon (bench/scale, 3 nodes, 1M locks, perf on both
 * survivors) the largest single cost was none of these: the fencing
 * node fork()ed the fence command just before recovery, and every page
 * of its multi-GB heap then took a copy-on-write fault on the first
 * write, which step_start's walk makes (about 3 s there, against 0.3 s
 * on the other survivor); plugin/fence.c now uses posix_spawn().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/wire.h"

#define MAX_NODES	64
static int nnodes = 3;	/* engines; the last one dies */

/* The network: one FIFO of fixed-size slots, grown by doubling, so that
 * the harness itself does not allocate per message. */
struct bmsg {
	uint32_t from, to;
	uint32_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

static struct bmsg *q;
static size_t qcap, qhead, qtail;
static uint64_t nmsgs, nbytes;
static struct dlm_core *cores[MAX_NODES + 1];
static struct dlm_ls *lss[MAX_NODES + 1];
static uint32_t done_event[MAX_NODES + 1];
static int dead[MAX_NODES + 1];
static uint32_t node_of_ctx[MAX_NODES + 1];
static uint64_t by_type[DLM_MSG_MAX + 1];
static uint64_t dir_records;	/* keys in the RC_DIR_ADDS counted */
static int count_types;

static void b_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct bmsg *m;

	if (qtail == qcap) {
		if (qhead > 0) {	/* compact */
			memmove(q, q + qhead, (qtail - qhead) * sizeof(*q));
			qtail -= qhead;
			qhead = 0;
		}
		if (qtail == qcap) {
			size_t ncap = qcap ? qcap * 2 : 4096;
			struct bmsg *nq = realloc(q, ncap * sizeof(*q));

			if (!nq) {
				perror("realloc");
				exit(1);
			}
			q = nq;
			qcap = ncap;
		}
	}
	if (count_types) {
		struct dlm_msg dm;

		if (!dlm_msg_decode(buf, len, &dm, NULL) &&
		    dm.m_type <= DLM_MSG_MAX) {
			const unsigned char *key;
			unsigned int off = 0, keylen;

			by_type[dm.m_type]++;
			while (dm.m_type == DLM_RC_DIR_ADDS &&
			       dlm_key_list_next(dm.m_key, dm.m_keylen, &off,
						 &key, &keylen))
				dir_records++;
		}
	}
	m = &q[qtail++];
	m->from = *(uint32_t *)ctx;
	m->to = to;
	m->len = (uint32_t)len;
	memcpy(m->buf, buf, len);
	nmsgs++;
	nbytes += len;
}

static void b_ast(void *ctx, const struct dlm_ast *a)
{
	(void)ctx;
	if (a->type == DLM_AST_COMP && a->status != 0 &&
	    a->status != -DLM_EUNLOCK) {
		fprintf(stderr, "bench-recovery: unexpected status %d\n", a->status);
		exit(1);
	}
}

/* Node 1's recovery steps, timed (CPU time of this process, both
 * survivors' work included) as the engine enters each: its debug log
 * reports every change of step. */
#define MAX_STEPS	32
static struct {
	char	name[48];
	double	at;
} steps[MAX_STEPS];
static unsigned int nsteps;
static int timing_steps;

static double clock_s(clockid_t clk);

static void b_log(void *ctx, enum dlm_log_level level, const char *line)
{
	const char *p = strstr(line, ": step ");

	(void)level;
	if (!timing_steps || *(uint32_t *)ctx != 1 || !p || nsteps == MAX_STEPS)
		return;
	p = strstr(p, " -> ");
	if (!p)
		return;
	snprintf(steps[nsteps].name, sizeof(steps[nsteps].name), "%s", p + 4);
	steps[nsteps++].at = clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static void b_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	(void)ls;
	done_event[*(uint32_t *)ctx] = event;
}

static void drain(void)
{
	static struct bmsg cur;	/* the queue may move while cur is handled */

	while (qhead < qtail) {
		struct bmsg *m = &cur;

		/* the message's own bytes, not the whole slot */
		memcpy(&cur, &q[qhead], offsetof(struct bmsg, buf));
		memcpy(cur.buf, q[qhead++].buf, cur.len);
		if (!dead[m->to] && !dead[m->from] &&
		    dlm_core_receive(cores[m->to], m->from, m->buf, m->len)) {
			fprintf(stderr, "bench-recovery: message refused\n");
			exit(1);
		}
	}
	qhead = qtail = 0;
}

static double clock_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static void lock1(int node, uint64_t owner, const char *name, unsigned len,
		  int mode)
{
	struct dlm_lock_req rq = { .mode = mode, .name = name, .namelen = len,
				   .owner = owner };
	uint32_t id;

	if (dlm_core_lock(lss[node], &rq, &id)) {
		fprintf(stderr, "bench-recovery: lock failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static const struct dlm_core_ops ops = {
		.send = b_send, .ast = b_ast, .log = b_log,
		.recovery_done = b_done,
	};
	unsigned long nlocks = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	int single = argc > 2 && !strcmp(argv[2], "single");
	unsigned long nres = single ? nlocks : nlocks / 2, i;
	uint32_t members[MAX_NODES], survivors[MAX_NODES];
	int last;
	struct dlm_ls_stats st;
	double t0, t1, t2, c1, c2;
	uint64_t m0;
	char name[32];
	int n;

	if (argc > 3)
		nnodes = atoi(argv[3]);
	if (nnodes < 2 || nnodes > MAX_NODES) {
		fprintf(stderr, "bench-recovery: nnodes is 2..%d\n", MAX_NODES);
		return 2;
	}
	last = nnodes;
	for (n = 1; n <= nnodes; n++)
		members[n - 1] = survivors[n - 1] = (uint32_t)n;
	for (n = 1; n <= nnodes; n++) {
		struct dlm_core_config cfg = { .our_nodeid = (uint32_t)n,
						 .toss_ms = 3600000 };

		cfg.fold = getenv("BENCH_FOLD") && *getenv("BENCH_FOLD") == '1';

		node_of_ctx[n] = (uint32_t)n;
		cores[n] = dlm_core_new(&cfg, &ops, &node_of_ctx[n]);
		if (!cores[n] || dlm_core_ls_create(cores[n], "bench", members,
						    nnodes, NULL, &lss[n])) {
			fprintf(stderr, "bench-recovery: setup failed\n");
			return 1;
		}
	}
	/* a first recovery before any lock, as a daemon's joins run (here
	 * with nothing changed: the death below is the second) */
	for (n = 1; n <= nnodes; n++)
		dlm_core_ls_stop(lss[n]);
	for (n = 1; n <= nnodes; n++)
		if (dlm_core_ls_start(lss[n], 1, members, (unsigned int)nnodes)) {
			fprintf(stderr, "bench-recovery: start failed\n");
			return 1;
		}
	drain();
	for (n = 1; n <= nnodes; n++)
		if (done_event[n] != 1 || dlm_core_ls_finish(lss[n], 1)) {
			fprintf(stderr, "bench-recovery: node %d did not finish\n", n);
			return 1;
		}
	/* each resource: a PR lock from its first requester (which becomes
	 * its master) and a CR lock from the next node */
	t0 = now_s();
	for (i = 0; i < nres; i++) {
		unsigned len = (unsigned)snprintf(name, sizeof(name), "res%lu", i);
		int first = 1 + (int)(i % nnodes);

		lock1(first, 1, name, len, single ? DLM_LOCK_EX : DLM_LOCK_PR);
		if ((i & 1023) == 0)
			drain();
	}
	drain();
	for (i = 0; i < nres && !single; i++) {
		unsigned len = (unsigned)snprintf(name, sizeof(name), "res%lu", i);
		int second = 1 + (int)((i + 1) % nnodes);

		lock1(second, 2, name, len, DLM_LOCK_CR);
		if ((i & 1023) == 0)
			drain();
	}
	drain();
	t1 = now_s();
	printf("dlmd engine recovery benchmark (%d engines in one process)\n",
	       nnodes);
	printf("%-44s %12lu\n", "locks held", single ? nres : nres * 2);
	for (n = 1; n <= nnodes; n++) {
		dlm_core_ls_stats(lss[n], &st);
		printf("  node %d: %llu lock blocks, %llu resources, %llu "
		       "folded\n", n, (unsigned long long)st.ls_locks,
		       (unsigned long long)st.ls_resources,
		       (unsigned long long)st.ls_folded);
	}
	printf("%-44s %10.3f s\n", "time to take them", t1 - t0);

	if (getenv("BENCH_SETUP_ONLY"))
		return 0;
	/* the last node dies */
	dead[last] = 1;
	m0 = nmsgs;
	timing_steps = 1;
	count_types = 1;
	t1 = now_s();
	c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (n = 1; n < last; n++)
		dlm_core_ls_stop(lss[n]);
	for (n = 1; n < last; n++)
		if (dlm_core_ls_start(lss[n], 2, survivors,
				      (unsigned int)last - 1)) {
			fprintf(stderr, "bench-recovery: start failed\n");
			return 1;
		}
	drain();
	for (n = 1; n < last; n++) {
		if (done_event[n] != 2) {
			fprintf(stderr, "bench-recovery: node %d did not finish\n", n);
			return 1;
		}
		dlm_core_ls_finish(lss[n], 2);
	}
	drain();
	t2 = now_s();
	c2 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	count_types = 0;
	printf("recovery after node %d died (engine only)     %10.3f s\n",
	       last, t2 - t1);
	printf("%-44s %10.3f s\n", "  of which CPU time (this process)", c2 - c1);
	for (i = 0; i < nsteps; i++)
		printf("  CPU while node 1 in step %-18s %10.3f s\n", steps[i].name,
		       (i + 1 < nsteps ? steps[i + 1].at : c2) - steps[i].at);
	printf("%-44s %12llu\n", "recovery messages",
	       (unsigned long long)(nmsgs - m0));
	for (i = 0; i <= DLM_MSG_MAX; i++)
		if (by_type[i])
			printf("  %-42s %12llu\n", dlm_msg_type_str((int)i),
			       (unsigned long long)by_type[i]);
	printf("%-44s %12llu\n", "  directory records in them",
	       (unsigned long long)dir_records);
	printf("%-44s %12.1f\n", "barrier rounds (RC_STATUS / (s x (s-1)))",
	       (double)by_type[DLM_RC_STATUS] / ((last - 1) * (last - 2 > 0 ? last - 2 : 1)));
	for (n = 1; n < last; n++) {
		dlm_core_ls_stats(lss[n], &st);
		printf("  node %d after: %llu lock blocks, %llu resources\n", n,
		       (unsigned long long)st.ls_locks,
		       (unsigned long long)st.ls_resources);
	}
	for (n = 1; n <= nnodes; n++)
		dlm_core_free(cores[n]);
	free(q);
	return 0;
}
