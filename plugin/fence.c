/*
 * plugin/fence.c - making sure a failed node is dead before its locks are
 * given away.
 *
 * When corosync reports that a node FAILED (a CPG confchg with reason
 * node-down, as opposed to a clean leave or a daemon exit), recovery of
 * every lockspace that had it as a member waits until the node is known
 * fenced: otherwise a node that is merely cut off could still be writing
 * under locks the survivors are about to grant to others.
 *
 * Per node the table keeps the time of the latest failure and the time of
 * the latest successful fencing; a node is "fenced" when the second is not
 * older than the first.  How a node gets fenced, by configuration:
 *
 *   enable_fencing = 0      never waits (tests; a cluster whose storage
 *                           needs no protection): marked fenced at once.
 *   fence_command = CMD     run "CMD NODEID" through /bin/sh; exit 0
 *                           means the node is fenced.  A failure is retried
 *                           every FENCE_RETRY_MS (logged rate-limited).
 *                           Every surviving daemon runs it for itself, so
 *                           the command must be idempotent.
 *   neither                 nothing can fence: recovery waits until an
 *                           operator runs "dlmctl fence_ack NODEID".
 *
 * Pacemaker's fencing API (stonith_api_time_helper) is not linked in this
 * version: a pacemaker cluster configures fence_command with a helper that
 * asks the fencer (for example "stonith_admin --reboot").
 *
 * Only a quorate node runs the command, and only once the quorum view no
 * longer lists the victim (corosync reports the CPG change before the
 * quorum change, so quorum state at the moment of a failure is stale): a
 * node cut off alone would otherwise fence the majority.  The command runs in a child process; its exit is noticed through
 * SIGCHLD, delivered by the libqb loop (so no handler runs inside other
 * code).  At most one command per node runs at a time.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define FENCE_RETRY_MS		2000
#define FENCE_LOG_INTERVAL_MS	10000
#define FENCE_CMD_MAX		1024
#define NS_PER_MS		1000000ULL

struct fence_node {
	uint32_t	fn_nodeid;
	uint64_t	fn_failed_at;	/* ms; 0 = never failed */
	uint64_t	fn_fenced_at;	/* ms; 0 = never fenced */
	pid_t		fn_pid;		/* running command, or 0 */
	uint64_t	fn_started_at;	/* when the running command began */
	uint64_t	fn_last_log;
	unsigned int	fn_attempts;
	bool		fn_retry_armed;
	qb_loop_timer_handle fn_retry;
};

struct dlmd_fence {
	struct dlmd		*fe_d;
	struct fence_node	fe_nodes[DLM_MAX_NODES];
	unsigned int		fe_nnodes;
	bool			fe_sigchld;
};

static struct fence_node *fnode(struct dlmd_fence *fe, uint32_t nodeid,
				bool create)
{
	for (unsigned int i = 0; i < fe->fe_nnodes; i++)
		if (fe->fe_nodes[i].fn_nodeid == nodeid)
			return &fe->fe_nodes[i];
	if (!create || fe->fe_nnodes >= DLM_MAX_NODES)
		return NULL;
	memset(&fe->fe_nodes[fe->fe_nnodes], 0, sizeof(fe->fe_nodes[0]));
	fe->fe_nodes[fe->fe_nnodes].fn_nodeid = nodeid;
	return &fe->fe_nodes[fe->fe_nnodes++];
}

static bool is_fenced(const struct fence_node *fn)
{
	return !fn->fn_failed_at || fn->fn_fenced_at >= fn->fn_failed_at;
}

static void run_command(struct dlmd_fence *fe, struct fence_node *fn);

static void fenced(struct dlmd_fence *fe, struct fence_node *fn, const char *how)
{
	fn->fn_fenced_at = dlmd_now_ms();
	if (fn->fn_fenced_at < fn->fn_failed_at)
		fn->fn_fenced_at = fn->fn_failed_at;
	log_notice("fencing: node %u is fenced (%s)", fn->fn_nodeid, how);
	dlmd_cluster_fencing_changed(fe->fe_d);
}

struct retry_arg {
	struct dlmd_fence	*ra_fe;
	uint32_t		ra_nodeid;
};

static void retry_timer(void *data)
{
	struct retry_arg *ra = data;
	struct fence_node *fn = fnode(ra->ra_fe, ra->ra_nodeid, false);
	struct dlmd_fence *fe = ra->ra_fe;

	free(ra);
	if (!fn)
		return;
	fn->fn_retry_armed = false;
	if (!is_fenced(fn) && !fn->fn_pid)
		run_command(fe, fn);
}

static void schedule_retry(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct retry_arg *ra;

	if (fn->fn_retry_armed)
		return;
	ra = malloc(sizeof(*ra));
	if (!ra)
		return;
	ra->ra_fe = fe;
	ra->ra_nodeid = fn->fn_nodeid;
	if (qb_loop_timer_add(fe->fe_d->d_loop, QB_LOOP_LOW,
			      FENCE_RETRY_MS * NS_PER_MS, ra, retry_timer,
			      &fn->fn_retry) == 0)
		fn->fn_retry_armed = true;
	else
		free(ra);
}

static void run_command(struct dlmd_fence *fe, struct fence_node *fn)
{
	const char *cmd = fe->fe_d->d_cfg.cf_fence_command;
	char line[FENCE_CMD_MAX + 16];
	uint64_t now = dlmd_now_ms();
	pid_t pid;

	/* Only a quorate partition fences (dlm_controld's
	 * enable_quorum_fencing): a node cut off alone must not shoot the
	 * majority.  Retried until quorum comes or the node is fenced. */
	if (!dlmd_cluster_quorate(fe->fe_d) ||
	    dlmd_cluster_quorum_has(fe->fe_d, fn->fn_nodeid)) {
		if (now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS) {
			log_notice("fencing: node %u waits for a quorate view "
				   "without it", fn->fn_nodeid);
			fn->fn_last_log = now;
		}
		schedule_retry(fe, fn);
		return;
	}
	snprintf(line, sizeof(line), "%s %u", cmd, fn->fn_nodeid);
	pid = fork();
	if (pid < 0) {
		log_err("fencing: cannot fork for node %u: %s", fn->fn_nodeid,
			strerror(errno));
		schedule_retry(fe, fn);
		return;
	}
	if (pid == 0) {
		sigset_t all;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	fn->fn_pid = pid;
	fn->fn_started_at = now;
	fn->fn_attempts++;
	if (fn->fn_attempts == 1 || now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS) {
		log_notice("fencing: running '%s' (attempt %u)", line,
			   fn->fn_attempts);
		fn->fn_last_log = now;
	}
}

static int32_t on_sigchld(int32_t sig, void *data)
{
	struct dlmd_fence *fe = data;

	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];
		int status;
		pid_t p;

		if (!fn->fn_pid)
			continue;
		p = waitpid(fn->fn_pid, &status, WNOHANG);
		if (p != fn->fn_pid)
			continue;
		fn->fn_pid = 0;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			/* only a command started after the failure counts */
			if (fn->fn_started_at >= fn->fn_failed_at) {
				fn->fn_attempts = 0;
				fenced(fe, fn, "fence_command exit 0");
			} else {
				run_command(fe, fn);
			}
		} else {
			log_debug("fencing: command for node %u failed (status "
				  "%d); retrying in %d ms", fn->fn_nodeid, status,
				  FENCE_RETRY_MS);
			schedule_retry(fe, fn);
		}
	}
	return 0;
}

int dlmd_fence_init(struct dlmd *d)
{
	struct dlmd_fence *fe = calloc(1, sizeof(*fe));

	if (!fe)
		return -ENOMEM;
	fe->fe_d = d;
	d->d_fence = fe;
	if (d->d_cfg.cf_enable_fencing && d->d_cfg.cf_fence_command[0]) {
		if (qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGCHLD, fe,
				       on_sigchld, NULL) == 0)
			fe->fe_sigchld = true;
	}
	if (!d->d_cfg.cf_enable_fencing)
		log_notice("fencing disabled (enable_fencing = 0): failed nodes' "
			   "locks are released without fencing them");
	else if (!d->d_cfg.cf_fence_command[0])
		log_notice("fencing enabled without fence_command: recovery after "
			   "a node failure waits for 'dlmctl fence_ack NODEID'");
	return 0;
}

void dlmd_fence_fini(struct dlmd *d)
{
	struct dlmd_fence *fe = d->d_fence;

	if (!fe)
		return;
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (fn->fn_pid) {
			kill(fn->fn_pid, SIGTERM);
			waitpid(fn->fn_pid, NULL, 0);
		}
		/* a pending retry timer owns a small allocation; the loop is
		 * destroyed right after, which is the only way it leaks */
	}
	free(fe);
	d->d_fence = NULL;
}

void dlmd_fence_node_failed(struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn;
	uint64_t now = dlmd_now_ms();

	if (!fe || nodeid == d->d_nodeid)
		return;
	fn = fnode(fe, nodeid, true);
	if (!fn) {
		log_err("fencing: node table full; node %u not recorded", nodeid);
		return;
	}
	/* one failure may be reported by several groups: keep the first
	 * report of an unfenced failure */
	if (!is_fenced(fn))
		return;
	fn->fn_failed_at = now ? now : 1;
	fn->fn_attempts = 0;
	log_notice("fencing: node %u failed", nodeid);
	if (!d->d_cfg.cf_enable_fencing) {
		fenced(fe, fn, "fencing disabled");
		return;
	}
	if (d->d_cfg.cf_fence_command[0] && !fn->fn_pid)
		run_command(fe, fn);
}

void dlmd_fence_kick(struct dlmd *d)
{
	struct dlmd_fence *fe = d->d_fence;

	if (!fe || !d->d_cfg.cf_enable_fencing || !d->d_cfg.cf_fence_command[0])
		return;
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (!is_fenced(fn) && !fn->fn_pid)
			run_command(fe, fn);
	}
}

bool dlmd_fence_is_done(const struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn;

	if (!fe)
		return true;
	fn = fnode(fe, nodeid, false);
	return !fn || is_fenced(fn);
}

int dlmd_fence_ack(struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, false) : NULL;

	if (!fn || is_fenced(fn))
		return -ENOENT;
	fenced(fe, fn, "acknowledged by an operator");
	return 0;
}
