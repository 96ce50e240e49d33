/*
 * tests/demo-client.c - one client process of tests/demo.
 *
 *   demo-client writer LS        EX+VALBLK on "config", write the LVB, hold
 *                                until a blocking AST, then down-convert to
 *                                NL (publishing the LVB) and unlock
 *   demo-client reader LS N      PR+VALBLK on "config", print the LVB
 *   demo-client counter LS FILE N  N times: EX on "counter", read FILE,
 *                                write it + 1 (only safe under the lock)
 *   demo-client hold LS RES      EX on RES, then sleep until killed
 *   demo-client wait LS RES      EX on RES (waits), report how long it took
 *
 * Every wait is bounded (DEMO_TIMEOUT_MS).  Output lines start with the
 * role and pid so the interleaving is readable.
 */
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define DEMO_TIMEOUT_MS	20000
#define HOLD_SECS	120

static const char *role = "?";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	printf("  [%-7s %5d] ", role, (int)getpid());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int die(const char *what)
{
	say("%s failed: %s", what, strerror(errno));
	return 1;
}

static volatile int got_bast, got_comp;
static void bast(void *arg) { got_bast++; }
static void comp(void *arg) { got_comp++; }

static int dispatch_until(dlm_lshandle_t ls, volatile int *flag)
{
	long end = now_ms() + DEMO_TIMEOUT_MS;

	while (!*flag && now_ms() < end) {
		struct pollfd p = { .fd = dlm_ls_get_fd(ls), .events = POLLIN };

		if (poll(&p, 1, 100) > 0)
			dlm_dispatch(p.fd);
	}
	return *flag ? 0 : -1;
}

static int writer(dlm_lshandle_t ls)
{
	struct dlm_lksb lksb;
	char lvb[DLM_LVB_LEN];

	memset(&lksb, 0, sizeof(lksb));
	memset(lvb, 0, sizeof(lvb));
	lksb.sb_lvbptr = lvb;
	if (dlm_ls_lock(ls, LKM_EXMODE, &lksb, LKF_VALBLK, "config", 6, 0, comp,
			NULL, bast, NULL) || dispatch_until(ls, &got_comp) ||
	    lksb.sb_status)
		return die("EX lock on config");
	snprintf(lvb, sizeof(lvb), "version=42 by pid %d", (int)getpid());
	say("holds EX on \"config\", value block set to \"%s\"", lvb);
	if (dispatch_until(ls, &got_bast))
		return die("waiting for a blocking AST");
	say("blocking AST: readers are waiting; down-converting EX -> NL (publishes the value)");
	got_comp = 0;
	if (dlm_ls_lock(ls, LKM_NLMODE, &lksb, LKF_CONVERT | LKF_VALBLK, "config", 6,
			0, comp, NULL, NULL, NULL) || dispatch_until(ls, &got_comp))
		return die("down-conversion");
	if (dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb))
		return die("unlock");
	say("released \"config\"");
	return 0;
}

static int reader(dlm_lshandle_t ls, const char *n)
{
	struct dlm_lksb lksb;
	char lvb[DLM_LVB_LEN + 1];
	long t0 = now_ms();

	memset(&lksb, 0, sizeof(lksb));
	memset(lvb, 0, sizeof(lvb));
	lksb.sb_lvbptr = lvb;
	say("reader %s asks for PR on \"config\"", n);
	if (dlm_ls_lock_wait(ls, LKM_PRMODE, &lksb, LKF_VALBLK, "config", 6, 0, NULL,
			     NULL, NULL) || lksb.sb_status)
		return die("PR lock");
	say("reader %s granted PR after %ld ms, value block \"%s\"%s", n, now_ms() - t0,
	    lvb, (lksb.sb_flags & DLM_SBF_VALNOTVALID) ? " (NOT VALID)" : "");
	usleep(200000);
	if (dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb))
		return die("unlock");
	return 0;
}

static int counter(dlm_lshandle_t ls, const char *file, int n)
{
	for (int i = 0; i < n; i++) {
		struct dlm_lksb lksb;
		FILE *f;
		long v = 0;

		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(ls, LKM_EXMODE, &lksb, 0, "counter", 7, 0, NULL,
				     NULL, NULL) || lksb.sb_status)
			return die("EX lock on counter");
		f = fopen(file, "r+");
		if (!f || fscanf(f, "%ld", &v) != 1)
			v = 0;
		if (f) {
			rewind(f);
			fprintf(f, "%ld\n", v + 1);
			fclose(f);
		}
		if (dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb))
			return die("unlock");
	}
	say("did %d increments of the shared counter under EX", n);
	return 0;
}

static int hold(dlm_lshandle_t ls, const char *res)
{
	struct dlm_lksb lksb;

	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_lock_wait(ls, LKM_EXMODE, &lksb, 0, res, (unsigned)strlen(res), 0,
			     NULL, NULL, NULL) || lksb.sb_status)
		return die("EX lock");
	say("holds EX on \"%s\" and will not let go", res);
	sleep(HOLD_SECS);
	return 0;
}

static int waiter(dlm_lshandle_t ls, const char *res)
{
	struct dlm_lksb lksb;
	long t0 = now_ms();

	memset(&lksb, 0, sizeof(lksb));
	say("asks for EX on \"%s\" (held by someone else)", res);
	if (dlm_ls_lock_wait(ls, LKM_EXMODE, &lksb, 0, res, (unsigned)strlen(res), 0,
			     NULL, NULL, NULL) || lksb.sb_status)
		return die("EX lock");
	say("granted EX on \"%s\" after %ld ms", res, now_ms() - t0);
	return dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb) ? die("unlock") : 0;
}

int main(int argc, char **argv)
{
	dlm_lshandle_t ls;
	int rv = 2;

	if (argc < 3) {
		fprintf(stderr, "usage: demo-client ROLE LOCKSPACE [ARGS]\n");
		return 2;
	}
	role = argv[1];
	ls = dlm_open_lockspace(argv[2]);
	if (!ls)
		return die("dlm_open_lockspace");
	if (!strcmp(role, "writer"))
		rv = writer(ls);
	else if (!strcmp(role, "reader") && argc == 4)
		rv = reader(ls, argv[3]);
	else if (!strcmp(role, "counter") && argc == 5)
		rv = counter(ls, argv[3], atoi(argv[4]));
	else if (!strcmp(role, "hold") && argc == 4)
		rv = hold(ls, argv[3]);
	else if (!strcmp(role, "wait") && argc == 4)
		rv = waiter(ls, argv[3]);
	else
		fprintf(stderr, "demo-client: bad arguments\n");
	dlm_close_lockspace(ls);
	return rv;
}
