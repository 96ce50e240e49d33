/*
 * tests/limit-client.c - the clients tests/test-client-limits.sh needs to
 * push dlmd against its limits, through libdlm.so like an application:
 *
 *   limit-client create LS MODE   create lockspace LS (octal MODE), close
 *                                 the handle (the lockspace stays)
 *   limit-client open LS N        open LS N times (N connections); print
 *                                 "opened K" and, if the K+1st failed,
 *                                 "error ERRNO-NAME"; hold until stdin EOF
 *   limit-client connect N        N bare connections to the client socket,
 *                                 no request; print "connected K"; hold
 *                                 until stdin EOF
 *   limit-client slow LS N        open LS and submit N NL requests on
 *                                 distinct resources (in a thread: dlmd
 *                                 may stop taking them, backpressure),
 *                                 not reading the AST socket until stdin
 *                                 EOF (its fd set aside, /dev/null in its
 *                                 place: libdlm reads the AST socket
 *                                 while it waits for dlmd, so that a
 *                                 thread waiting in it never stalls; this
 *                                 plays a client that reads nothing at
 *                                 all, as one stopped or built on another
 *                                 library); print "submitted K" when done and,
 *                                 on a failure, "error ERRNO-NAME"; after
 *                                 EOF read the AST socket and print
 *                                 "ast-socket" with what reading it says
 *                                 (ok or the errno name, ENOTCONN when the
 *                                 daemon disconnected us), then
 *                                 "completions C" (ASTs received)
 *   limit-client locks LS N P     open LS and take N NL locks on distinct
 *                                 resources, waiting for each (P 1: each
 *                                 PERSISTENT, so that they become orphans
 *                                 when we exit); print "locked K" and, if
 *                                 the K+1st failed, "error ERRNO-NAME";
 *                                 hold until stdin EOF
 *   limit-client purge LS         open LS and purge the orphans our uid
 *                                 left there (dlm_ls_purge pid 0); print
 *                                 "purged" or "error ERRNO-NAME"
 *   limit-client cycle LS P N     open LS and lock (NL, waiting) and unlock
 *                                 N names P-0 .. P-N-1 in turn, holding
 *                                 at most one lock: each leaves an unused
 *                                 resource behind; print "cycled K" and,
 *                                 if the K+1st failed, "error ERRNO-NAME"
 *   limit-client break LS N       N times: open LS, shut its AST socket
 *                                 down (dlmd cannot write the ASTs it
 *                                 owes: it disconnects us for it), lock
 *                                 NL without waiting, and make requests
 *                                 (waiting, at most BREAK_TRIES) until
 *                                 one fails, the connection cut; print
 *                                 "broke K", K the handles cut
 *   limit-client gone LS          open LS, take an EX lock (waiting) and
 *                                 print "held"; at a line on stdin (dlmd
 *                                 is gone by then) try each call on the
 *                                 handle and print "CALL ERRNO-NAME"
 *                                 (or "CALL ok") for dlm_ls_lock_wait,
 *                                 dlm_ls_lock, dlm_ls_unlock_wait and
 *                                 dlm_ls_unlock
 *
 * Every line is flushed at once: the shell test waits for them.  Exit 0
 * unless the arguments or the set-up (not the limit under test) failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define MAX_HANDLES	4096

static const char *errno_name(int e)
{
	switch (e) {
	case EUSERS: return "EUSERS";
	case EAGAIN: return "EAGAIN";
	case ENOTCONN: return "ENOTCONN";
	case EPIPE: return "EPIPE";
	case ECONNRESET: return "ECONNRESET";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EMFILE: return "EMFILE";
	case EDQUOT: return "EDQUOT";
	default: return "other";
	}
}

static void hold(void)
{
	char buf[64];

	while (fgets(buf, sizeof(buf), stdin))
		;
}

static int cmd_create(const char *ls, const char *mode)
{
	dlm_lshandle_t h = dlm_new_lockspace(ls, (mode_t)strtoul(mode, NULL, 8), 0);

	if (!h) {
		fprintf(stderr, "limit-client: create %s: %s\n", ls, strerror(errno));
		return 1;
	}
	return dlm_close_lockspace(h) ? 1 : 0;
}

static int cmd_open(const char *ls, int n)
{
	static dlm_lshandle_t hs[MAX_HANDLES];
	int k, err = 0;

	for (k = 0; k < n; k++) {
		hs[k] = dlm_open_lockspace(ls);
		if (!hs[k]) {
			err = errno;
			break;
		}
	}
	printf("opened %d\n", k);
	if (err)
		printf("error %s\n", errno_name(err));
	fflush(stdout);
	hold();
	while (k--)
		dlm_close_lockspace(hs[k]);
	return 0;
}

static int cmd_connect(int n)
{
	static int fds[MAX_HANDLES];
	const char *path = getenv("DLMD_SOCKET");
	struct sockaddr_un sa;
	int k;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	for (k = 0; k < n; k++) {
		fds[k] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
		if (fds[k] < 0)
			break;
		/* Non-blocking: once the daemon stops accepting, the
		 * backlog fills and connect says EAGAIN instead of waiting. */
		if (connect(fds[k], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			close(fds[k]);
			break;
		}
	}
	printf("connected %d\n", k);
	fflush(stdout);
	hold();
	while (k--)
		close(fds[k]);
	return 0;
}

static unsigned int slow_ncomp;		/* completion ASTs received */

static void count_ast(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&slow_ncomp, 1, __ATOMIC_RELAXED);
}

struct slow_args {
	dlm_lshandle_t	sa_h;
	int		sa_n;
};

/* Submit the requests; dlmd may stop taking them until we read. */
static void *slow_submit(void *arg)
{
	struct slow_args *sa = arg;
	static struct dlm_lksb lksb[65536];
	int k, err = 0;
	char name[32];

	for (k = 0; k < sa->sa_n; k++) {
		snprintf(name, sizeof(name), "slow-%d-%d", (int)getpid(), k);
		if (dlm_ls_lock(sa->sa_h, LKM_NLMODE, &lksb[k], 0, name,
				(unsigned int)strlen(name), 0, count_ast, NULL,
				NULL, NULL)) {
			err = errno;
			break;
		}
	}
	printf("submitted %d\n", k);
	if (err)
		printf("error %s\n", errno_name(err));
	fflush(stdout);
	return NULL;
}

/* 0, or the errno reading the AST socket failed with. */
static int slow_read(dlm_lshandle_t h, int n)
{
	while (__atomic_load_n(&slow_ncomp, __ATOMIC_RELAXED) < (unsigned int)n) {
		struct pollfd pfd = { .fd = dlm_ls_get_fd(h), .events = POLLIN };

		if (poll(&pfd, 1, 1000) <= 0)
			return 0;
		if (dlm_dispatch(pfd.fd))
			return errno ? errno : EIO;
	}
	return 0;
}

static int cmd_slow(const char *ls, int n)
{
	dlm_lshandle_t h = dlm_open_lockspace(ls);
	struct slow_args sa = { h, n };
	pthread_t th;
	int rv, astfd, aside, null;

	if (!h)
		return 1;
	/* nobody reads the AST socket, libdlm included, until EOF */
	astfd = dlm_ls_get_fd(h);
	aside = dup(astfd);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (aside < 0 || null < 0 || dup2(null, astfd) < 0)
		return 1;
	if (n > 65536 || pthread_create(&th, NULL, slow_submit, &sa))
		return 1;
	hold();
	if (dup2(aside, astfd) < 0)
		return 1;
	close(aside);
	close(null);
	/* Read the AST socket until all came or it is quiet for a second
	 * (then once more after the submitting thread is done): ASTs, or
	 * EOF if the daemon cut us. */
	rv = slow_read(h, n);
	pthread_join(th, NULL);
	if (rv == 0)
		rv = slow_read(h, n);
	if (rv == 0)
		printf("ast-socket ok\n");
	else
		printf("ast-socket %s\n", errno_name(rv));
	printf("completions %u\n", __atomic_load_n(&slow_ncomp, __ATOMIC_RELAXED));
	fflush(stdout);
	dlm_close_lockspace(h);
	return 0;
}

static int cmd_locks(const char *ls, int n, int persistent)
{
	dlm_lshandle_t h = dlm_open_lockspace(ls);
	struct dlm_lksb lksb;
	int k, err = 0, rv;
	char name[32];

	if (!h)
		return 1;
	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "q-%d-%d", (int)getpid(), k);
		memset(&lksb, 0, sizeof(lksb));
		rv = dlm_ls_lock_wait(h, LKM_NLMODE, &lksb,
				      persistent ? LKF_PERSISTENT : 0, name,
				      (unsigned int)strlen(name), 0, NULL, NULL,
				      NULL);
		if (rv || lksb.sb_status) {
			err = rv ? errno : -lksb.sb_status;
			break;
		}
	}
	printf("locked %d\n", k);
	if (err)
		printf("error %s\n", errno_name(err));
	fflush(stdout);
	hold();
	return 0;	/* exit: the locks go, PERSISTENT ones become orphans */
}

static int cmd_purge(const char *ls)
{
	dlm_lshandle_t h = dlm_open_lockspace(ls);

	if (!h)
		return 1;
	if (dlm_ls_purge(h, 0, 0))
		printf("error %s\n", errno_name(errno));
	else
		printf("purged\n");
	fflush(stdout);
	dlm_close_lockspace(h);
	return 0;
}

static int cmd_cycle(const char *ls, const char *prefix, int n)
{
	dlm_lshandle_t h = dlm_open_lockspace(ls);
	struct dlm_lksb lksb;
	int k, err = 0, rv;
	char name[64];

	if (!h)
		return 1;
	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "%.32s-%d", prefix, k);
		memset(&lksb, 0, sizeof(lksb));
		rv = dlm_ls_lock_wait(h, LKM_NLMODE, &lksb, 0, name,
				      (unsigned int)strlen(name), 0, NULL, NULL,
				      NULL);
		if (rv || lksb.sb_status) {
			err = rv ? errno : -lksb.sb_status;
			break;
		}
		rv = dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb);
		if (rv || lksb.sb_status != EUNLOCK) {
			err = rv ? errno : -lksb.sb_status;
			break;
		}
	}
	printf("cycled %d\n", k);
	if (err)
		printf("error %s\n", errno_name(err));
	fflush(stdout);
	dlm_close_lockspace(h);
	return 0;
}

static void break_ast(void *arg)
{
	(void)arg;
}

#define BREAK_TRIES	1000

static int cmd_break(const char *ls, int n)
{
	int k, cut = 0;

	for (k = 0; k < n; k++) {
		dlm_lshandle_t h = dlm_open_lockspace(ls);
		struct dlm_lksb lksb, w;

		if (!h)
			return 1;
		shutdown(dlm_ls_get_fd(h), SHUT_RDWR);
		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock(h, LKM_NLMODE, &lksb, 0, "break", 5, 0, break_ast,
				NULL, NULL, NULL) == 0) {
			for (int t = 0; t < BREAK_TRIES; t++) {
				memset(&w, 0, sizeof(w));
				if (dlm_ls_lock_wait(h, LKM_NLMODE, &w, 0, "break-w",
						     7, 0, NULL, NULL, NULL)) {
					cut++;
					break;
				}
			}
		}
		dlm_close_lockspace(h);
	}
	printf("broke %d\n", cut);
	fflush(stdout);
	return 0;
}

static void gone_said(const char *call, int rv)
{
	printf("%s %s\n", call, rv ? errno_name(errno) : "ok");
	fflush(stdout);
}

static int cmd_gone(const char *ls)
{
	dlm_lshandle_t h = dlm_open_lockspace(ls);
	struct dlm_lksb lksb, w;
	char buf[64];

	if (!h)
		return 1;
	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, 0, "gone", 4, 0, NULL, NULL,
			     NULL) || lksb.sb_status)
		return 1;
	printf("held\n");
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	memset(&w, 0, sizeof(w));
	gone_said("lock_wait", dlm_ls_lock_wait(h, LKM_EXMODE, &w, 0, "gone-2", 6,
						0, NULL, NULL, NULL));
	memset(&w, 0, sizeof(w));
	gone_said("lock", dlm_ls_lock(h, LKM_EXMODE, &w, 0, "gone-3", 6, 0,
				      break_ast, NULL, NULL, NULL));
	gone_said("unlock_wait", dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb));
	gone_said("unlock", dlm_ls_unlock(h, lksb.sb_lkid, 0, &lksb, NULL));
	dlm_close_lockspace(h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "create"))
		return cmd_create(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "open"))
		return cmd_open(argv[2], atoi(argv[3]) > MAX_HANDLES ? MAX_HANDLES :
				atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "connect"))
		return cmd_connect(atoi(argv[2]) > MAX_HANDLES ? MAX_HANDLES :
				   atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "slow"))
		return cmd_slow(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "locks"))
		return cmd_locks(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "purge"))
		return cmd_purge(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "cycle"))
		return cmd_cycle(argv[2], argv[3], atoi(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "gone"))
		return cmd_gone(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "break"))
		return cmd_break(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: limit-client create LS MODE | open LS N | "
		"connect N | slow LS N | locks LS N P | purge LS | "
		"cycle LS P N | break LS N | gone LS\n");
	return 2;
}
