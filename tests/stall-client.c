/*
 * tests/stall-client.c - the clients tests/test-client-stall.sh needs to
 * push dlmd's backpressure (plugin/client.c "Backpressure"), through
 * libdlm.so like an application:
 *
 *   stall-client batch LS N       one thread, as lvmlockd: N async NL
 *                                 locks on distinct resources, none of
 *                                 their ASTs dispatched; then a
 *                                 synchronous lock and unlock; then the
 *                                 N completions dispatched; the same with
 *                                 N async conversions to PR (each waits
 *                                 for its REPLY) and N async unlocks.
 *                                 Prints a line per phase ("locks N",
 *                                 "sync 1", "dispatched N", "converts N",
 *                                 "sync 2", "dispatched N", "unlocks N",
 *                                 "sync 3", "dispatched N") and "done";
 *                                 "error WHAT ERRNO-NAME" on a failure.
 *   stall-client hold LS P N      take N PR locks on P-0 .. P-N-1 (each
 *                                 waited for), with a blocking AST;
 *                                 print "held N"; then dispatch, and unlock
 *                                 (waiting) each lock whose blocking AST
 *                                 came, until all N are unlocked; print
 *                                 "basts B" and "unlocked U"; hold until
 *                                 stdin EOF
 *   stall-client contend LS P N   N async EX requests on P-0 .. P-N-1;
 *                                 print "submitted N"; dispatch until all
 *                                 N are granted; print "granted G" and
 *                                 "failed F" (completions with an error)
 *
 * Every line is flushed at once: the shell test waits for them.  Every
 * wait for ASTs is bounded (WAIT_SECS without progress); the test's
 * timeout bounds the calls into libdlm (the hang under test).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define MAX_LOCKS	100000
#define WAIT_SECS	60	/* without an AST: give up */

static struct dlm_lksb lksb[MAX_LOCKS];
static unsigned int ncomp;		/* completion ASTs run */
static unsigned int nbad;		/* ... with an unexpected status */
static int want_status;			/* what each completion should say */
static unsigned char basted[MAX_LOCKS];	/* hold: a BAST came for lock k */
static unsigned char done[MAX_LOCKS];	/* hold: lock k was unlocked */
/* the lockspace handle, kept here so that a client that ends on an error
 * (step 3's holder, cut) leaves it reachable, not leaked */
static dlm_lshandle_t h;
static unsigned int nbast;

static const char *errno_name(int e)
{
	switch (e) {
	case EAGAIN: return "EAGAIN";
	case ENOTCONN: return "ENOTCONN";
	case EPIPE: return "EPIPE";
	case ECONNRESET: return "ECONNRESET";
	case ENOMEM: return "ENOMEM";
	case EDQUOT: return "EDQUOT";
	case EBUSY: return "EBUSY";
	case EINVAL: return "EINVAL";
	default: return "other";
	}
}

static void say(const char *what, long n)
{
	printf("%s %ld\n", what, n);
	fflush(stdout);
}

static int error(const char *what, int e)
{
	printf("error %s %s\n", what, errno_name(e));
	fflush(stdout);
	return 1;
}

static void comp_ast(void *arg)
{
	struct dlm_lksb *sb = &lksb[(size_t)arg];

	ncomp++;
	if (sb->sb_status != want_status)
		nbad++;
}

static void bast_ast(void *arg)
{
	size_t k = (size_t)arg;

	if (!basted[k]) {
		basted[k] = 1;
		nbast++;
	}
}

/* Dispatch until *count reaches want, or WAIT_SECS without any AST. */
static int dispatch_until(dlm_lshandle_t ls, unsigned int *count,
			  unsigned int want)
{
	int fd = dlm_ls_get_fd(ls);
	time_t last = time(NULL);

	while (*count < want) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		unsigned int before = *count;

		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			return -errno;
		if ((pfd.revents & (POLLIN | POLLHUP)) && dlm_dispatch(fd))
			return -errno;
		if (*count != before)
			last = time(NULL);
		else if (time(NULL) - last > WAIT_SECS)
			return -ETIMEDOUT;
	}
	return 0;
}

static void name_of(char *buf, size_t len, const char *prefix, int k)
{
	snprintf(buf, len, "%.32s-%d", prefix, k);
}

/* A synchronous lock and unlock, with ASTs of ours waiting unread. */
static int sync_pair(dlm_lshandle_t ls, int phase)
{
	struct dlm_lksb sb;
	char name[48];

	snprintf(name, sizeof(name), "stall-sync-%d", (int)getpid());
	memset(&sb, 0, sizeof(sb));
	if (dlm_ls_lock_wait(ls, LKM_EXMODE, &sb, 0, name,
			     (unsigned int)strlen(name), 0, NULL, NULL, NULL) ||
	    sb.sb_status)
		return error("sync-lock", sb.sb_status ? sb.sb_status : errno);
	if (dlm_ls_unlock_wait(ls, sb.sb_lkid, 0, &sb) || sb.sb_status != EUNLOCK)
		return error("sync-unlock", errno);
	say("sync", phase);
	return 0;
}

static int dispatched(dlm_lshandle_t ls, unsigned int n)
{
	int rv = dispatch_until(ls, &ncomp, n);

	if (rv)
		return error("dispatch", -rv);
	if (nbad)
		return error("completion-status", EINVAL);
	say("dispatched", (long)ncomp);
	ncomp = 0;
	return 0;
}

static int cmd_batch(const char *ls, int n)
{
	h = dlm_new_lockspace(ls, 0600, 0);
	char name[48];
	int k;

	if (!h)
		return error("open", errno);
	want_status = 0;
	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "stall-%d-%d", (int)getpid(), k);
		if (dlm_ls_lock(h, LKM_NLMODE, &lksb[k], 0, name,
				(unsigned int)strlen(name), 0, comp_ast,
				(void *)(size_t)k, NULL, NULL))
			return error("lock", errno);
	}
	say("locks", n);
	if (sync_pair(h, 1) || dispatched(h, (unsigned int)n))
		return 1;
	for (k = 0; k < n; k++) {
		if (dlm_ls_lock(h, LKM_PRMODE, &lksb[k], LKF_CONVERT, NULL, 0, 0,
				comp_ast, (void *)(size_t)k, NULL, NULL))
			return error("convert", errno);
	}
	say("converts", n);
	if (sync_pair(h, 2) || dispatched(h, (unsigned int)n))
		return 1;
	want_status = EUNLOCK;
	for (k = 0; k < n; k++) {
		if (dlm_ls_unlock(h, lksb[k].sb_lkid, 0, &lksb[k],
				  (void *)(size_t)k))
			return error("unlock", errno);
	}
	say("unlocks", n);
	if (sync_pair(h, 3) || dispatched(h, (unsigned int)n))
		return 1;
	printf("done\n");
	fflush(stdout);
	dlm_close_lockspace(h);
	return 0;
}

static int cmd_hold(const char *ls, const char *prefix, int n)
{
	h = dlm_new_lockspace(ls, 0600, 0);
	unsigned int nunlocked = 0;
	char name[48];
	int k, rv;

	if (!h)
		return error("open", errno);
	for (k = 0; k < n; k++) {
		name_of(name, sizeof(name), prefix, k);
		if (dlm_ls_lock_wait(h, LKM_PRMODE, &lksb[k], 0, name,
				     (unsigned int)strlen(name), 0,
				     (void *)(size_t)k, bast_ast, NULL) ||
		    lksb[k].sb_status)
			return error("lock", lksb[k].sb_status ? lksb[k].sb_status :
				     errno);
	}
	say("held", n);
	/* each blocking AST: let that lock go; until all went */
	while (nunlocked < (unsigned int)n) {
		unsigned int before = nbast;

		rv = dispatch_until(h, &nbast, before + 1);
		if (rv)
			return error("dispatch", -rv);
		for (k = 0; k < n; k++) {
			if (!basted[k] || done[k])
				continue;
			if (dlm_ls_unlock_wait(h, lksb[k].sb_lkid, 0, &lksb[k]) ||
			    lksb[k].sb_status != EUNLOCK)
				return error("unlock", errno);
			done[k] = 1;
			nunlocked++;
		}
	}
	say("basts", nbast);
	say("unlocked", nunlocked);
	while (fgets(name, sizeof(name), stdin))
		;
	dlm_close_lockspace(h);
	return 0;
}

static int cmd_contend(const char *ls, const char *prefix, int n)
{
	h = dlm_new_lockspace(ls, 0600, 0);
	char name[48];
	int k, rv;

	if (!h)
		return error("open", errno);
	want_status = 0;
	for (k = 0; k < n; k++) {
		name_of(name, sizeof(name), prefix, k);
		if (dlm_ls_lock(h, LKM_EXMODE, &lksb[k], 0, name,
				(unsigned int)strlen(name), 0, comp_ast,
				(void *)(size_t)k, NULL, NULL))
			return error("lock", errno);
	}
	say("submitted", n);
	/* a holder may be stopped for long: wait without a deadline of our
	 * own while it is stopped (the test's timeout bounds us) */
	do
		rv = dispatch_until(h, &ncomp, (unsigned int)n);
	while (rv == -ETIMEDOUT);
	if (rv)
		return error("dispatch", -rv);
	say("granted", (long)(ncomp - nbad));
	say("failed", nbad);
	dlm_close_lockspace(h);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 3 ? atoi(argv[argc - 1]) : 0;

	if (n < 0 || n > MAX_LOCKS)
		return 2;
	if (argc == 4 && !strcmp(argv[1], "batch"))
		return cmd_batch(argv[2], n);
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2], argv[3], n);
	if (argc == 5 && !strcmp(argv[1], "contend"))
		return cmd_contend(argv[2], argv[3], n);
	fprintf(stderr, "usage: stall-client batch LS N | hold LS P N | "
		"contend LS P N\n");
	return 2;
}
