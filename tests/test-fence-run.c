/*
 * tests/test-fence-run.c - plugin/fence.c running its fence_command, on
 * a libqb loop of its own, with the daemon group and the quorum faked
 * (struct dlmd_fence_up): a command that exits non-zero, one killed by a
 * signal, and /bin/sh that cannot be spawned are each a failed fencing:
 * counted in the metrics, logged at err, retried every FENCE_RETRY_MS,
 * shown by dlmctl's description ("attempt N"), the claim handed on with
 * FAILED, and the node never counted fenced, so recovery keeps waiting.
 * A command that never ends is killed after fence_timeout_secs, with
 * whatever its shell started (its process group), and is a failed
 * fencing too.  A command that SIGKILL does not end (a fence agent in
 * uninterruptible sleep) is given up on: a failed fencing, retried, the
 * claim handed on, and reaped whenever it ends at last; at most
 * FENCE_STUCK_MAX such are kept, then no command starts.  A command
 * that exits 0 is the control.  No cluster: the failed node is reported
 * straight to fence.c.
 *
 * This test builds fence.c with short timings (plugin/Makefile.inc:
 * FENCE_RETRY_MS, the SIGTERM and SIGKILL graces) and FENCE_STUCK_MAX 2.
 *
 * posix_spawn is wrapped (-Wl,--wrap=posix_spawn) so that a test can make
 * it fail as it does when no process can be made, and to learn the pids
 * (and so the process groups) of the commands.  This process is a child
 * subreaper, so what a killed shell leaves behind becomes our child: a
 * test reaps it and then sees the whole group gone.
 *
 * kill is wrapped too (-Wl,--wrap=kill): a process in uninterruptible
 * sleep cannot be made in a test, so the signals fence.c sends to a
 * command marked stuck are not delivered, and it goes on running as a
 * D-state agent would, until the test kills it for real (its late
 * exit).
 *
 * Also the marks fence.c gives a pending failure for cluster.c's FAILED
 * records (dlmd_fence_marks), per kind of failure, and forgiving one
 * (dlmd_fence_forgive), with no command at all.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

#define OUR_NODE	1
#define VICTIM		2
#define TICK_MS		20
/* Only a bound on a hang: run_until ends as soon as the runs it waits
 * for have ended (a timed-out command takes its timeout and up to
 * FENCE_KILL_GRACE_MS, and FENCE_STUCK_GRACE_MS, more), however slow
 * the host. */
#define RUN_LIMIT_MS	60000

/* posix_spawn fails with this while non-zero (0: the real one). */
static int spawn_error;
/* The pids of the commands spawned since the last daemon_with(). */
#define MAX_SPAWNED	16
static pid_t spawned[MAX_SPAWNED];
static unsigned int nspawned;
/* fence_timeout_secs of the next daemons (0: the default) */
static unsigned int timeout_secs;
/* The next this many commands spawned are stuck: kill() of them (their
 * pid or process group) is not delivered. */
static unsigned int stick_next;
static pid_t stuck[MAX_SPAWNED];
static unsigned int nstuck;

int __real_kill(pid_t pid, int sig);
int __wrap_kill(pid_t pid, int sig);

int __wrap_kill(pid_t pid, int sig)
{
	for (unsigned int i = 0; sig && i < nstuck; i++)
		if (pid == stuck[i] || pid == -stuck[i])
			return 0;
	return __real_kill(pid, sig);
}

/* The stuck commands end at last: SIGKILL, for real, to their groups.
 * (Safe: fence.c reaps none of them before this, so no pid was reused.) */
static void unstick_all(void)
{
	for (unsigned int i = 0; i < nstuck; i++)
		assert_int_equal(__real_kill(-stuck[i], SIGKILL), 0);
	nstuck = 0;
	stick_next = 0;
}

/* After a test with stuck commands, even one that failed half-way:
 * none is left running (and the default timeout is back). */
static int unstick_teardown(void **state)
{
	(void)state;
	for (unsigned int i = 0; i < nstuck; i++)
		__real_kill(-stuck[i], SIGKILL);
	nstuck = 0;
	stick_next = 0;
	timeout_secs = 0;
	return 0;
}

int __real_posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[],
		       char *const envp[]);
int __wrap_posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[],
		       char *const envp[]);

int __wrap_posix_spawn(pid_t *pid, const char *path,
		       const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[],
		       char *const envp[])
{
	int rv;

	if (spawn_error)
		return spawn_error;
	rv = __real_posix_spawn(pid, path, fa, attr, argv, envp);
	if (!rv && nspawned < MAX_SPAWNED)
		spawned[nspawned++] = *pid;
	if (!rv && stick_next && nstuck < MAX_SPAWNED) {
		stick_next--;
		stuck[nstuck++] = *pid;
	}
	return rv;
}

/* What fence.c told the fake daemon group. */
static struct {
	bool		in_group;	/* claims over the group */
	unsigned int	changed;	/* fu_changed calls */
	unsigned int	claims;
	unsigned int	failed;		/* FENCE_RESULT FAILED */
	unsigned int	done;		/* FENCE_RESULT DONE */
} up_seen;

static bool up_in_group(const struct dlmd *d)
{
	(void)d;
	return up_seen.in_group;
}

static bool up_may_claim(const struct dlmd *d, bool learned)
{
	(void)d;
	(void)learned;
	return true;
}

static unsigned int up_members(const struct dlmd *d, uint32_t *ids,
			       unsigned int max)
{
	(void)d;
	if (max < 1)
		return 0;
	ids[0] = OUR_NODE;
	return 1;
}

static bool up_quorate(const struct dlmd *d)
{
	(void)d;
	return true;
}

static bool up_quorum_has(const struct dlmd *d, uint32_t nodeid)
{
	(void)d;
	return nodeid == OUR_NODE;
}

/* Deliveries over the fake group come later, from the loop, as CPG's. */
struct delivery {
	struct dlmd		*dv_d;
	bool			dv_claim;
	uint32_t		dv_nodeid;
	enum dlmd_fence_status	dv_st;
};

static void deliver(void *data)
{
	struct delivery *dv = data;

	if (dv->dv_claim)
		dlmd_fence_claim_delivered(dv->dv_d, OUR_NODE, dv->dv_nodeid);
	else
		dlmd_fence_result_delivered(dv->dv_d, OUR_NODE, dv->dv_nodeid,
					    dv->dv_st);
	free(dv);
}

static int up_send(struct dlmd *d, bool claim, uint32_t nodeid,
		   enum dlmd_fence_status st)
{
	struct delivery *dv = calloc(1, sizeof(*dv));

	assert_non_null(dv);
	assert_int_equal(nodeid, VICTIM);
	if (claim)
		up_seen.claims++;
	else if (st == DLMD_FENCE_FAILED)
		up_seen.failed++;
	else if (st == DLMD_FENCE_DONE)
		up_seen.done++;
	dv->dv_d = d;
	dv->dv_claim = claim;
	dv->dv_nodeid = nodeid;
	dv->dv_st = st;
	assert_int_equal(qb_loop_job_add(d->d_loop, QB_LOOP_HIGH, dv, deliver), 0);
	return 0;
}

static void up_changed(struct dlmd *d)
{
	(void)d;
	up_seen.changed++;
}

static const struct dlmd_fence_up fake_up = {
	.fu_in_group = up_in_group,
	.fu_may_claim = up_may_claim,
	.fu_members = up_members,
	.fu_quorate = up_quorate,
	.fu_quorum_has = up_quorum_has,
	.fu_send = up_send,
	.fu_changed = up_changed,
};

/* Daemons made so far; the log (one per process: libqb keeps its
 * filters) is set up once, in main. */
static unsigned int daemons;

static struct dlmd *daemon_with(const char *command, bool in_group)
{
	struct dlmd *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	dlmd_config_defaults(&d->d_cfg);
	d->d_cfg.cf_enable_fencing = true;
	d->d_cfg.cf_fence_pcmk = DLMD_FENCE_PCMK_NO;
	snprintf(d->d_cfg.cf_fence_command, sizeof(d->d_cfg.cf_fence_command),
		 "%s", command);
	if (timeout_secs)
		d->d_cfg.cf_fence_timeout_secs = timeout_secs;
	d->d_nodeid = OUR_NODE;
	nspawned = 0;
	d->d_loop = qb_loop_create();
	assert_non_null(d->d_loop);
	/* what this daemon logs follows this line in the flight recorder */
	log_notice("test-fence-run: daemon %u", ++daemons);
	memset(&up_seen, 0, sizeof(up_seen));
	up_seen.in_group = in_group;
	assert_int_equal(dlmd_fence_init(d, &fake_up), 0);
	return d;
}

static void daemon_free(struct dlmd *d)
{
	dlmd_fence_fini(d);
	qb_loop_destroy(d->d_loop);
	free(d);
}

/* Run the loop until 'runs' fence commands ended (failed + ok) or the
 * node is fenced, or (u_cond) until u_cond holds, at most RUN_LIMIT_MS. */
struct until {
	struct dlmd	*u_d;
	uint64_t	u_runs;
	bool		(*u_cond)(struct dlmd *d);
	uint64_t	u_end;
	qb_loop_timer_handle u_timer;
};

static void until_tick(void *data)
{
	struct until *u = data;
	const struct dlmd_metrics *m = &u->u_d->d_metrics;
	bool done = u->u_cond ? u->u_cond(u->u_d) :
		    m->m_fence_runs_failed + m->m_fence_runs_ok >= u->u_runs ||
		    dlmd_fence_is_done(u->u_d, VICTIM);

	if (done || dlmd_now_ms() >= u->u_end) {
		qb_loop_stop(u->u_d->d_loop);
		return;
	}
	qb_loop_timer_add(u->u_d->d_loop, QB_LOOP_LOW, TICK_MS * 1000000ULL, u,
			  until_tick, &u->u_timer);
}

static void run_until_cond(struct dlmd *d, bool (*cond)(struct dlmd *d),
			   uint64_t runs)
{
	struct until u = { .u_d = d, .u_runs = runs, .u_cond = cond,
			   .u_end = dlmd_now_ms() + RUN_LIMIT_MS };

	qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, TICK_MS * 1000000ULL, &u,
			  until_tick, &u.u_timer);
	qb_loop_run(d->d_loop);
	assert_true(dlmd_now_ms() < u.u_end);
}

static void run_until(struct dlmd *d, uint64_t runs)
{
	run_until_cond(d, NULL, runs);
}

/* How many lines at 'level' ("err ", "notice "; "": any) with 'what'
 * the latest daemon logged (the flight recorder). */
static unsigned int count_logged(const char *level, const char *what)
{
	char *dump = dlmd_log_flight_dump(), marker[64];
	unsigned int found = 0;
	char *l;

	assert_non_null(dump);
	snprintf(marker, sizeof(marker), "test-fence-run: daemon %u\n", daemons);
	l = strstr(dump, marker);
	assert_non_null(l);
	for (; l && *l; l = strchr(l, '\n')) {
		char *nl;

		l += *l == '\n';
		nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		found += !strncmp(strchr(l, ' ') ? strchr(l, ' ') + 1 : l, level,
				  strlen(level)) && strstr(l, what);
		if (nl)
			*nl = '\n';
	}
	if (!found)
		print_message("no %sline with '%s' in:\n%s\n", level, what, dump);
	free(dump);
	return found;
}

/* The latest daemon logged an err line with 'what'. */
static void assert_logged_err(const char *what)
{
	assert_true(count_logged("err ", what) > 0);
}

/* The node failed and fence_command 'command' fails every time: two
 * failed runs, the second a retry; never fenced. */
static void check_fails(const char *command, bool in_group, int spawn_err,
			const char *logged)
{
	struct dlmd *d = daemon_with(command, in_group);
	char desc[128];

	spawn_error = spawn_err;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	run_until(d, 2);
	spawn_error = 0;
	assert_int_equal(d->d_metrics.m_fence_runs_failed, 2);
	assert_int_equal(d->d_metrics.m_fence_runs_ok, 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	assert_false(dlmd_fence_killed(d, VICTIM));
	assert_int_equal(dlmd_fence_waiting(d), 1);
	assert_int_equal(up_seen.changed, 0);
	assert_int_equal(up_seen.done, 0);
	if (in_group) {
		/* each attempt claimed, and handed on with FAILED */
		assert_int_equal(up_seen.claims, 2);
		assert_int_equal(up_seen.failed, 2);
	}
	dlmd_fence_describe(d, VICTIM, desc, sizeof(desc));
	assert_non_null(strstr(desc, "fence_command"));
	assert_true(strstr(desc, "attempt 2") || strstr(desc, "attempt 3"));
	assert_logged_err(logged);
	daemon_free(d);
}

static void test_command_exits_nonzero(void **state)
{
	(void)state;
	check_fails("exit 3;", false, 0, "exit status 3");
	check_fails("exit 3;", true, 0, "exit status 3");
}

static void test_command_killed(void **state)
{
	(void)state;
	check_fails("kill -KILL $$;", false, 0, "killed by signal 9");
	check_fails("kill -KILL $$;", true, 0, "killed by signal 9");
}

static void test_spawn_fails(void **state)
{
	(void)state;
	check_fails("true", false, EAGAIN, "cannot run /bin/sh");
	check_fails("true", true, EAGAIN, "cannot run /bin/sh");
	check_fails("true", true, ENOENT, "cannot run /bin/sh");
}

/* Has our child pid ended (a zombie, not reaped)? */
static bool has_ended(pid_t pid)
{
	siginfo_t si;

	si.si_pid = 0;
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == pid;
}

/* Every command spawned is gone with its whole process group: the
 * shell reaped by fence.c, what it started (ours, as the subreaper)
 * reaped here.  The wait only bounds a hang: fence.c has sent SIGKILL to
 * the group before it reaped the shell. */
static void assert_groups_gone(void)
{
	struct timespec tick = { 0, TICK_MS * 1000000L };

	assert_true(nspawned >= 2);
	for (unsigned int i = 0; i < nspawned; i++) {
		pid_t pg = spawned[i];
		int waited = 0;

		/* reaped: not even a zombie */
		assert_int_equal(kill(pg, 0), -1);
		assert_int_equal(errno, ESRCH);
		for (;;) {
			pid_t p = waitpid(-pg, NULL, WNOHANG);

			if (p < 0) {
				assert_int_equal(errno, ECHILD);
				break;
			}
			if (p == 0) {
				assert_true(waited < RUN_LIMIT_MS);
				nanosleep(&tick, NULL);
				waited += TICK_MS;
			}
		}
		assert_int_equal(kill(-pg, 0), -1);
		assert_int_equal(errno, ESRCH);
	}
}

/* A command that never ends (a shell running sleep) is killed after
 * fence_timeout_secs: a failed attempt, retried; nothing survives it.
 * Then one that ignores SIGTERM, and so its sleep too: SIGKILL. */
static void test_command_times_out(void **state)
{
	(void)state;
	timeout_secs = 1;
	check_fails("sleep 1000;", false, 0,
		    "fence command for node 2 timed out after 1 s, killed");
	assert_groups_gone();
	check_fails("sleep 1000;", true, 0,
		    "fence command for node 2 timed out after 1 s, killed");
	assert_groups_gone();
	check_fails("trap '' TERM; sleep 1000;", true, 0,
		    "fence command for node 2 timed out after 1 s, killed");
	assert_groups_gone();
	timeout_secs = 0;
}

/* dlmctl's description of the node (dlmctl ls) and dlmctl status say
 * that the first command, timed out, is being terminated. */
static bool is_terminating(struct dlmd *d)
{
	char desc[160], status[256], want[64];

	dlmd_fence_describe(d, VICTIM, desc, sizeof(desc));
	dlmd_fence_status(d, status, sizeof(status));
	snprintf(want, sizeof(want), "timed out: terminating pid %d",
		 nspawned ? (int)spawned[0] : -1);
	return strstr(desc, want) && strstr(status, want);
}

static bool none_unreaped(struct dlmd *d)
{
	return dlmd_fence_unreaped(d) == 0;
}

static bool spawned_three(struct dlmd *d)
{
	(void)d;
	return nspawned >= 3;
}

/* A daemon whose fence command ("sleep 1000", timed out after 1 s) has
 * begun for the failed victim, the first 'stick' commands stuck. */
static struct dlmd *stuck_daemon(unsigned int stick)
{
	struct dlmd *d;

	timeout_secs = 1;
	d = daemon_with("sleep 1000;", true);
	stick_next = stick;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	return d;
}

/* A command that does not end on SIGKILL (a fence agent in D state) is
 * given up on: a failed attempt and a timeout, logged once, the claim
 * handed on (FAILED), and a new command started; the stuck one is kept
 * and reaped when it ends at last. */
static void test_command_stuck(void **state)
{
	struct dlmd *d;
	char line[256];

	(void)state;
	d = stuck_daemon(1);
	/* past its timeout, dlmctl says the command is being terminated */
	run_until_cond(d, is_terminating, 0);
	assert_int_equal(dlmd_fence_unreaped(d), 0);
	/* given up on, then the retry runs (and times out: it is killed) */
	run_until(d, 2);
	assert_int_equal(nspawned, 2);
	assert_int_equal(d->d_metrics.m_fence_runs_failed, 2);
	assert_int_equal(d->d_metrics.m_fence_runs_ok, 0);
	assert_int_equal(d->d_metrics.m_fence_timeouts, 2);
	assert_int_equal(dlmd_fence_unreaped(d), 1);
	assert_int_equal(up_seen.claims, 2);
	assert_int_equal(up_seen.failed, 2);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	snprintf(line, sizeof(line), "fence command pid %d for node 2 did not "
		 "exit after SIGKILL; treating as failed", (int)spawned[0]);
	assert_int_equal(count_logged("err ", line), 1);
	dlmd_fence_status(d, line, sizeof(line));
	assert_non_null(strstr(line, "1 command given up on after SIGKILL"));
	/* the stuck one still runs: not reaped, nor killed */
	assert_int_equal(kill(spawned[0], 0), 0);
	assert_false(has_ended(spawned[0]));
	/* it ends at last: fence.c reaps it */
	unstick_all();
	run_until_cond(d, none_unreaped, 0);
	dlmd_fence_status(d, line, sizeof(line));
	assert_null(strstr(line, "given up on"));
	assert_int_equal(kill(spawned[0], 0), -1);
	assert_int_equal(errno, ESRCH);
	snprintf(line, sizeof(line), "fence command pid %d for node 2 ended",
		 (int)spawned[0]);
	assert_int_equal(count_logged("notice ", line), 1);
	daemon_free(d);
	assert_groups_gone();
}

/* FENCE_STUCK_MAX (2 here) stuck commands: no more is started, each
 * attempt fails and is handed on; once they end, commands run again. */
static void test_stuck_limit(void **state)
{
	struct dlmd *d;

	(void)state;
	d = stuck_daemon(MAX_SPAWNED);
	run_until(d, 3);
	assert_int_equal(nspawned, 2);
	assert_int_equal(dlmd_fence_unreaped(d), 2);
	assert_int_equal(d->d_metrics.m_fence_runs_failed, 3);
	assert_int_equal(d->d_metrics.m_fence_timeouts, 2);
	assert_int_equal(up_seen.failed, 3);
	/* at err the first time, then at debug (rate-limited) */
	assert_true(count_logged("", "not started (2 fence commands did not "
				 "exit after SIGKILL)") > 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	unstick_all();
	run_until_cond(d, none_unreaped, 0);
	run_until_cond(d, spawned_three, 0);
	daemon_free(d);
	assert_groups_gone();
}

/* The control: exit 0 fences it, once. */
static void test_command_succeeds(void **state)
{
	struct dlmd *d;

	(void)state;
	d = daemon_with("true", true);
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	run_until(d, 1);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	assert_true(dlmd_fence_killed(d, VICTIM));
	assert_int_equal(d->d_metrics.m_fence_runs_ok, 1);
	assert_int_equal(d->d_metrics.m_fence_runs_failed, 0);
	assert_int_equal(up_seen.done, 1);
	assert_int_equal(up_seen.changed, 1);
	assert_int_equal(dlmd_fence_waiting(d), 0);
	daemon_free(d);
}

/*
 * What fence.c's table says of a pending failure for cluster.c's FAILED
 * records (dlmd_fence_marks: FORGIVING A SPLIT), per kind of failure, and
 * what forgiving one does (dlmd_fence_forgive).  No fence command (the
 * manual method): nothing starts a fencing by itself.
 */
static void test_marks_and_forgive(void **state)
{
	const unsigned int firm[] = { DLMD_FAIL_DAEMON, DLMD_FAIL_MAJORITY,
				      DLMD_FAIL_REMOVED, DLMD_FAIL_EVEN_LOSER };
	struct dlmd *d;
	char why[128];

	(void)state;
	d = daemon_with("", false);
	/* none pending: no marks, nothing to forgive */
	assert_int_equal(dlmd_fence_marks(d, VICTIM), 0);
	assert_false(dlmd_fence_forgive(d, VICTIM, "test"));
	/* a node-down seen from a minority: neither mark */
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	assert_int_equal(dlmd_fence_marks(d, VICTIM), 0);
	/* every other kind: FIRM, not FENCING */
	for (unsigned int i = 0; i < sizeof(firm) / sizeof(firm[0]); i++) {
		dlmd_fence_node_failed(d, 10 + i, firm[i]);
		assert_int_equal(dlmd_fence_marks(d, 10 + i),
				 DLMD_FENCE_MARK_FIRM);
	}
	/* a pending node-down whose dlmd then joins afresh: FIRM */
	dlmd_fence_node_failed(d, 20, DLMD_FAIL_NODE);
	assert_int_equal(dlmd_fence_marks(d, 20), 0);
	dlmd_fence_node_failed(d, 20, DLMD_FAIL_RESTARTED);
	assert_int_equal(dlmd_fence_marks(d, 20), DLMD_FENCE_MARK_FIRM);
	/* another member's claim delivered since the failure: FENCING */
	dlmd_fence_node_failed(d, 21, DLMD_FAIL_NODE);
	dlmd_fence_claim_delivered(d, 3, 21);
	assert_int_equal(dlmd_fence_marks(d, 21), DLMD_FENCE_MARK_FENCING);
	/* fenced (fence_ack): no marks, nothing to forgive */
	dlmd_fence_node_failed(d, 22, DLMD_FAIL_NODE);
	assert_int_equal(dlmd_fence_ack(d, 22, why, sizeof(why)), 0);
	assert_int_equal(dlmd_fence_marks(d, 22), 0);
	assert_false(dlmd_fence_forgive(d, 22, "test"));

	/* forgiven: done, as by no method that stops it, counted once;
	 * said at info, with why, per node: a merge may forgive many, and
	 * cluster.c says once per merge, at warning, which it forgave */
	assert_true(dlmd_fence_forgive(d, 20, "test"));
	assert_true(dlmd_fence_forgive(d, 21, "test"));
	assert_int_equal(d->d_nfence_forgiven, 2);
	d->d_nfence_forgiven = 0;
	assert_true(dlmd_fence_forgive(d, VICTIM, "test"));
	assert_true(dlmd_fence_is_done(d, VICTIM));
	assert_false(dlmd_fence_killed(d, VICTIM));
	assert_int_equal(dlmd_fence_marks(d, VICTIM), 0);
	assert_int_equal(d->d_nfence_forgiven, 1);
	assert_false(dlmd_fence_forgive(d, VICTIM, "test"));
	assert_int_equal(d->d_nfence_forgiven, 1);
	assert_int_equal(count_logged("warning ", "forgiven"), 0);
	assert_int_equal(count_logged("info ", "node 2's failure is forgiven, "
				      "not fenced (test)"), 1);
	assert_int_equal(count_logged("info ", "is forgiven, not fenced"), 3);
	/* its next failure is a new one, to be fenced, also in the same
	 * millisecond as the forgiving (as here, mostly: it counted as
	 * fenced before fence.c's node_failed kept them apart) */
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	assert_int_equal(dlmd_fence_marks(d, VICTIM), 0);
	daemon_free(d);
}

/* A fence command running for a node-down failure: FENCING. */
static void test_marks_command_runs(void **state)
{
	struct dlmd *d;

	(void)state;
	d = daemon_with("exec sleep 60", false);
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_int_equal(nspawned, 1);
	assert_int_equal(dlmd_fence_marks(d, VICTIM), DLMD_FENCE_MARK_FENCING);
	daemon_free(d);		/* ends the command (its process group) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_succeeds),
		cmocka_unit_test(test_command_exits_nonzero),
		cmocka_unit_test(test_command_killed),
		cmocka_unit_test(test_spawn_fails),
		cmocka_unit_test(test_command_times_out),
		cmocka_unit_test_teardown(test_command_stuck, unstick_teardown),
		cmocka_unit_test_teardown(test_stuck_limit, unstick_teardown),
		cmocka_unit_test(test_marks_and_forgive),
		cmocka_unit_test(test_marks_command_runs),
	};

	struct dlmd_config cf;
	int rv;

	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		return 1;
	dlmd_config_defaults(&cf);
	if (dlmd_log_init(&cf, false))
		return 1;
	rv = cmocka_run_group_tests(tests, NULL, NULL);
	dlmd_log_fini();
	return rv;
}
