/*
 * tests/metrics-client.c - a client with a known count of lock operations,
 * for tests/test-metrics.sh to compare with what dlmd's metrics say.
 *
 *   metrics-client LS N
 *
 * Creates lockspace LS (mode 0600; it stays when we exit) and, through
 * libdlm as an application would:
 *   1. N times on resource "rI": lock EX, convert to NL, unlock (all
 *      waited for): N locks, N converts, N unlocks, 2N grants;
 *   2. takes EX on "hot" with a blocking AST, then asks for EX on "hot"
 *      again with a second lock: that request waits and the holder gets
 *      a blocking AST.  Prints "waiting" once the blocking AST came, then
 *      reads a line from stdin:
 *        "cancel"  cancels the waiting request (its completion is
 *                  ECANCEL), unlocks the holder, prints "done", exits 0;
 *        anything else or EOF: exits at once, the request still waiting
 *                  (dlmd drops it with the connection).
 * So after "cancel": locks N+2, converts N, unlocks N+1, cancels 1,
 * grants 2N+1, blocking ASTs 1, nothing waiting.
 * Every wait is bounded (WAIT_MS); exit 1 with a line on stderr when
 * something does not happen.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define WAIT_MS		10000
#define POLL_MS		100

static int basts;
static int comps;

static void on_bast(void *arg)
{
	(void)arg;
	basts++;
}

static void on_comp(void *arg)
{
	(void)arg;
	comps++;
}

static int die(const char *what, int e)
{
	fprintf(stderr, "metrics-client: %s: %s\n", what, strerror(e));
	return 1;
}

/* Dispatch ASTs until *counter reaches want; false on timeout. */
static int dispatch_until(dlm_lshandle_t ls, const int *counter, int want)
{
	struct pollfd pfd = { dlm_ls_get_fd(ls), POLLIN, 0 };

	for (int waited = 0; *counter < want && waited < WAIT_MS; waited += POLL_MS) {
		if (poll(&pfd, 1, POLL_MS) > 0)
			dlm_dispatch(pfd.fd);
	}
	return *counter >= want;
}

int main(int argc, char **argv)
{
	struct dlm_lksb lksb, hold, wait_lksb;
	dlm_lshandle_t ls;
	char line[64];
	int n;

	if (argc != 3 || (n = atoi(argv[2])) < 0) {
		fprintf(stderr, "usage: metrics-client LS N\n");
		return 2;
	}
	ls = dlm_create_lockspace(argv[1], 0600);
	if (!ls)
		return die("create lockspace", errno);
	for (int i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "r%d", i);
		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(ls, LKM_EXMODE, &lksb, 0, name, strlen(name), 0,
				     NULL, NULL, NULL) || lksb.sb_status)
			return die("lock", lksb.sb_status ? lksb.sb_status : errno);
		if (dlm_ls_lock_wait(ls, LKM_NLMODE, &lksb, LKF_CONVERT, name,
				     strlen(name), 0, NULL, NULL, NULL) ||
		    lksb.sb_status)
			return die("convert", lksb.sb_status ? lksb.sb_status : errno);
		if (dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb) ||
		    lksb.sb_status != EUNLOCK)
			return die("unlock", lksb.sb_status ? lksb.sb_status : errno);
	}
	memset(&hold, 0, sizeof(hold));
	if (dlm_ls_lock_wait(ls, LKM_EXMODE, &hold, 0, "hot", 3, 0, NULL, on_bast,
			     NULL) || hold.sb_status)
		return die("lock hot", hold.sb_status ? hold.sb_status : errno);
	memset(&wait_lksb, 0, sizeof(wait_lksb));
	if (dlm_ls_lock(ls, LKM_EXMODE, &wait_lksb, 0, "hot", 3, 0, on_comp, NULL,
			NULL, NULL))
		return die("second lock on hot", errno);
	if (!dispatch_until(ls, &basts, 1))
		return die("no blocking AST", ETIMEDOUT);
	if (comps)
		return die("the second request was not left waiting", EINVAL);
	printf("waiting\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strcmp(line, "cancel\n"))
		_exit(0);
	if (dlm_ls_unlock(ls, wait_lksb.sb_lkid, LKF_CANCEL, &wait_lksb, NULL))
		return die("cancel", errno);
	if (!dispatch_until(ls, &comps, 1))
		return die("no completion for the cancel", ETIMEDOUT);
	if (wait_lksb.sb_status != ECANCEL)
		return die("cancel status", wait_lksb.sb_status);
	if (dlm_ls_unlock_wait(ls, hold.sb_lkid, 0, &hold) ||
	    hold.sb_status != EUNLOCK)
		return die("unlock hot", hold.sb_status ? hold.sb_status : errno);
	dlm_close_lockspace(ls);
	printf("done\n");
	return 0;
}
