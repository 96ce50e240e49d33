/*
 * tests/stop-client.c - the client tests/test-cluster-stopgrant.sh runs
 * on the node whose dlmd stops under it (it lost corosync): one half of
 * a pair whose waits cross, through libdlm.so like an application.
 *
 *   stop-client cross LS FIRST SECOND GO HOW
 *       Take FIRST in EX (dlm_ls_lock_wait), print "held FIRST"; wait (at
 *       most GO_SECS) until the file GO exists; then ask for SECOND in
 *       EX, HOW being
 *         wait   dlm_ls_lock_wait: the answer comes in the answer ring,
 *                or on the socket with DLMD_RING=0 in the environment
 *                (a COMP_REPLY, plugin/client.c send_answer);
 *         async  dlm_ls_lock with a completion AST, the AST socket
 *                dispatched here until it ran (plugin/client.c ast_send);
 *       print "second granted" or "second error E" (E: the errno, or the
 *       completion's sb_status, as a number and a name); then unlock
 *       FIRST with dlm_ls_unlock_wait and print "unlock ok" (EUNLOCK) or
 *       "unlock error E"; then "done".  Exit status 0 whatever the
 *       outcome: the test judges the lines.
 *   stop-client waiters LS RES N
 *       N async PR requests on RES (N locks of one handle), print
 *       "queued N"; dispatch until all N completed, then print "granted
 *       G failed F" and exit 0.  Behind an EX they are granted together
 *       when it goes: N ASTs of one engine call (the test's way to make
 *       a dlmd short of memory stop for an AST it cannot hold).
 *
 * Two of them with FIRST and SECOND swapped wait on each other (the test
 * turns deadlock detection off): whichever of the two connections dlmd
 * closes first at its stop, closing it purges its FIRST and grants the
 * other's SECOND, so the grant a stopping dlmd must not tell is made
 * every time, whatever order dlmd closes its clients in.
 *
 * Every line is flushed at once: the test waits for them.  The waits
 * here are bounded (GO_SECS, AST_SECS); the test's own bounds cover the
 * calls into libdlm.
 */
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define LKM_EXMODE	5
#define GO_SECS		60	/* the file GO: give up after */
#define AST_SECS	300	/* async: no completion AST after this (the
				 * test stops first; only a bound) */
#define POLL_MS		100

#define LKM_PRMODE	3
#define MAX_WAITERS	4096

static int completed;		/* async: the completion AST ran */
static struct dlm_lksb waiter_lksb[MAX_WAITERS];
static unsigned int ngranted, nfailed;	/* waiters' completions */

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case ENOTCONN: return "ENOTCONN";
	case ECONNRESET: return "ECONNRESET";
	case EPIPE: return "EPIPE";
	case ECANCEL: return "ECANCEL";
	case EUNLOCK: return "EUNLOCK";
	case EDEADLK: return "EDEADLK";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EINVAL: return "EINVAL";
	case EAGAIN: return "EAGAIN";
	default: return "other";
	}
}

/* "WHAT OK", or "WHAT error E NAME" for rv = -E */
static void report(const char *what, const char *ok, int rv)
{
	if (rv)
		printf("%s error %d %s\n", what, -rv, errno_name(-rv));
	else
		printf("%s %s\n", what, ok);
	fflush(stdout);
}

static void on_completion(void *arg)
{
	(void)arg;
	completed = 1;
}

/* the file GO exists, within GO_SECS */
static int wait_go(const char *go)
{
	for (int i = 0; i < GO_SECS * 1000 / POLL_MS; i++) {
		if (!access(go, F_OK))
			return 0;
		usleep(POLL_MS * 1000);
	}
	return -ETIMEDOUT;
}

/* NAME in EX, waiting in libdlm: 0 granted, else a negative errno (the
 * call's, or the completion's status) */
static int ex_wait(dlm_lshandle_t ls, struct dlm_lksb *lksb,
		   const char *name)
{
	if (dlm_ls_lock_wait(ls, LKM_EXMODE, lksb, 0, name,
			     (unsigned int)strlen(name), 0, NULL, NULL, NULL) < 0)
		return -errno;
	return lksb->sb_status ? -lksb->sb_status : 0;
}

/* NAME in EX, async: its completion AST dispatched here */
static int ex_async(dlm_lshandle_t ls, struct dlm_lksb *lksb,
		    const char *name)
{
	int fd = dlm_ls_get_fd(ls);

	if (fd < 0)
		return -errno;
	if (dlm_ls_lock(ls, LKM_EXMODE, lksb, 0, name, (unsigned int)strlen(name),
			0, on_completion, NULL, NULL, NULL) < 0)
		return -errno;
	for (int i = 0; !completed && i < AST_SECS * 1000 / POLL_MS; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR)
			return -errno;
		if (pfd.revents && dlm_dispatch(fd) < 0 && !completed)
			return -errno;
	}
	if (!completed)
		return -ETIMEDOUT;
	return lksb->sb_status ? -lksb->sb_status : 0;
}

static int do_cross(char **argv)
{
	const char *lsname = argv[2], *first = argv[3], *second = argv[4];
	const char *go = argv[5], *how = argv[6];
	struct dlm_lksb lk1, lk2;
	dlm_lshandle_t ls;
	int rv;

	if (strcmp(how, "wait") && strcmp(how, "async"))
		return 2;
	ls = dlm_create_lockspace(lsname, 0666);
	if (!ls)
		ls = dlm_open_lockspace(lsname);
	if (!ls) {
		report("lockspace", "", -errno);
		return 1;
	}
	memset(&lk1, 0, sizeof(lk1));
	memset(&lk2, 0, sizeof(lk2));
	rv = ex_wait(ls, &lk1, first);
	if (rv) {
		report("first", "", rv);
		dlm_close_lockspace(ls);
		return 1;
	}
	printf("held %s\n", first);
	fflush(stdout);
	rv = wait_go(go);
	if (!rv)
		rv = !strcmp(how, "wait") ? ex_wait(ls, &lk2, second) :
			ex_async(ls, &lk2, second);
	report("second", "granted", rv);
	rv = dlm_ls_unlock_wait(ls, lk1.sb_lkid, 0, &lk1) < 0 ? -errno :
		lk1.sb_status == EUNLOCK ? 0 : -lk1.sb_status;
	report("unlock", "ok", rv);
	dlm_close_lockspace(ls);	/* (a dead handle is freed too) */
	printf("done\n");
	fflush(stdout);
	return 0;
}

static void on_waiter(void *arg)
{
	const struct dlm_lksb *lksb = arg;

	if (lksb->sb_status)
		nfailed++;
	else
		ngranted++;
}

static int do_waiters(char **argv)
{
	const char *res = argv[3];
	int n = atoi(argv[4]), fd, i;
	dlm_lshandle_t ls;

	if (n <= 0 || n > MAX_WAITERS)
		return 2;
	ls = dlm_create_lockspace(argv[2], 0666);
	if (!ls)
		ls = dlm_open_lockspace(argv[2]);
	if (!ls || (fd = dlm_ls_get_fd(ls)) < 0) {
		report("lockspace", "", -errno);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (dlm_ls_lock(ls, LKM_PRMODE, &waiter_lksb[i], 0, res,
				(unsigned int)strlen(res), 0, on_waiter,
				&waiter_lksb[i], NULL, NULL) < 0) {
			report("lock", "", -errno);
			dlm_close_lockspace(ls);
			return 1;
		}
	}
	printf("queued %d\n", n);
	fflush(stdout);
	for (i = 0; ngranted + nfailed < (unsigned int)n &&
	     i < AST_SECS * 1000 / POLL_MS; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR)
			break;
		if (pfd.revents && dlm_dispatch(fd) < 0)
			break;
	}
	printf("granted %u failed %u\n", ngranted, nfailed);
	fflush(stdout);
	dlm_close_lockspace(ls);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "cross"))
		return do_cross(argv);
	if (argc == 5 && !strcmp(argv[1], "waiters"))
		return do_waiters(argv);
	fprintf(stderr, "usage: stop-client cross LS FIRST SECOND GO wait|async\n"
		"       stop-client waiters LS RES N\n");
	return 2;
}
