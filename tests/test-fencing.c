/*
 * tests/test-fencing.c - fencing tokens through the public API, against a
 * toy storage server (issue 17).
 *
 * The storage keeps, per object, the highest fencing token it has seen
 * and refuses a write that carries a lower one (an equal one is the same
 * holder writing again).  Each case makes a writer go stale the ways a
 * lock can be taken from its holder on one node, and shows its write
 * refused once the next holder has written:
 *
 *   killed     a process holds EX, sends a write (token and value) to the
 *              storage and is killed before the storage handles it (the
 *              write was in flight: a network, a queue); dlmd releases
 *              the dead client's lock, the next holder gets a larger
 *              token and writes; then the delayed write arrives: refused;
 *   unlocked   a holder unlocks (or pauses after its unlock was forced)
 *              and writes late: refused after the next holder wrote;
 *   modes      a conversion between write modes is a new grant with a
 *              larger token, a lock held or converting in NL, CR or PR
 *              has none (ENOENT), nor has a waiting request, an unknown
 *              lock id or another handle's lock; CW holders get distinct
 *              tokens; dlmctl lockdump shows the token the owner reads.
 *
 * Run by tests/test-daemon.sh against a one-node cluster ($DLMCTL is the
 * control tool, for the lock dump).  Exits 0, or 1 after saying what
 * failed.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define LS_NAME		"fencing"
#define MAX_OBJECTS	8

static int failures;

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	failures++;
}

/* ------------------------------------------------------------ storage */

struct object {
	char		ob_name[32];
	uint64_t	ob_high;	/* highest token seen */
	uint64_t	ob_value;
};

struct storage {
	struct object	st_obj[MAX_OBJECTS];
	unsigned int	st_n;
};

/* Write 'value' to 'name' with 'token': 0, or -ESTALE (refused). */
static int store_write(struct storage *st, const char *name, uint64_t token,
		       uint64_t value)
{
	struct object *o = NULL;
	unsigned int i;

	for (i = 0; i < st->st_n && !o; i++)
		if (!strcmp(st->st_obj[i].ob_name, name))
			o = &st->st_obj[i];
	if (!o) {
		if (st->st_n == MAX_OBJECTS)
			return -ENOSPC;
		o = &st->st_obj[st->st_n++];
		snprintf(o->ob_name, sizeof(o->ob_name), "%s", name);
	}
	if (token < o->ob_high)
		return -ESTALE;
	o->ob_high = token;
	o->ob_value = value;
	return 0;
}

/* A write as it travels to the storage. */
struct write_req {
	char		wr_name[32];
	uint64_t	wr_token;
	uint64_t	wr_value;
};

/* ------------------------------------------------------------ locking */

static dlm_lshandle_t open_ls(void)
{
	dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);

	if (!h)
		failf("dlm_open_lockspace: %s", strerror(errno));
	return h;
}

/* Lock 'name' in 'mode' (waiting), 0 or the failing errno; *lkid. */
static int lock_wait(dlm_lshandle_t h, const char *name, int mode,
		     uint32_t flags, struct dlm_lksb *lksb)
{
	if (dlm_ls_lock_wait(h, (uint32_t)mode, lksb, flags, name,
			     (unsigned int)strlen(name), 0, NULL, NULL, NULL))
		return errno;
	return lksb->sb_status;
}

static uint64_t token_of(dlm_lshandle_t h, uint32_t lkid, const char *what)
{
	uint64_t t = 0;

	if (dlm_ls_lock_token(h, lkid, &t)) {
		failf("%s: dlm_ls_lock_token: %s", what, strerror(errno));
		return 0;
	}
	if (!t)
		failf("%s: token 0", what);
	return t;
}

static void expect_no_token(dlm_lshandle_t h, uint32_t lkid, const char *what)
{
	uint64_t t = 0;

	errno = 0;
	if (dlm_ls_lock_token(h, lkid, &t) != -1 || errno != ENOENT)
		failf("%s: dlm_ls_lock_token gave token %" PRIu64 " (errno %d), "
		      "want ENOENT", what, t, errno);
}

static void expect_greater(uint64_t t, uint64_t before, const char *what)
{
	if (t <= before)
		failf("%s: token %" PRIu64 " is not above %" PRIu64, what, t,
		      before);
}

/* ---------------------------------------------------------------- cases */

/* A holder killed with its write in flight. */
static void case_killed(struct storage *st)
{
	struct write_req wr;
	struct dlm_lksb lksb;
	dlm_lshandle_t h;
	int fds[2], rv, status;
	pid_t pid;

	if (pipe(fds)) {
		failf("pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		failf("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		dlm_lshandle_t ch = dlm_open_lockspace(LS_NAME);
		struct dlm_lksb cl;

		close(fds[0]);
		memset(&wr, 0, sizeof(wr));
		if (!ch || lock_wait(ch, "obj-killed", LKM_EXMODE, 0, &cl) ||
		    dlm_ls_lock_token(ch, cl.sb_lkid, &wr.wr_token))
			_exit(2);
		snprintf(wr.wr_name, sizeof(wr.wr_name), "obj-killed");
		wr.wr_value = 1;
		if (write(fds[1], &wr, sizeof(wr)) != (ssize_t)sizeof(wr))
			_exit(2);
		for (;;)
			pause();	/* until killed, still holding EX */
	}
	close(fds[1]);
	/* the write arrives, and waits in the storage's queue */
	if (read(fds[0], &wr, sizeof(wr)) != (ssize_t)sizeof(wr)) {
		failf("killed: the holder did not get its lock");
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(fds[0]);
		return;
	}
	close(fds[0]);
	printf("killed: holder %d has token %" PRIu64 "\n", (int)pid, wr.wr_token);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	h = open_ls();
	if (!h)
		return;
	rv = lock_wait(h, "obj-killed", LKM_EXMODE, 0, &lksb);
	if (rv) {
		failf("killed: the next holder: %s", strerror(rv));
	} else {
		uint64_t t = token_of(h, lksb.sb_lkid, "killed: next holder");

		printf("killed: next holder has token %" PRIu64 "\n", t);
		expect_greater(t, wr.wr_token, "killed: next holder");
		if (store_write(st, "obj-killed", t, 2))
			failf("killed: the next holder's write was refused");
		/* the dead holder's write comes out of the queue now */
		rv = store_write(st, wr.wr_name, wr.wr_token, wr.wr_value);
		if (rv != -ESTALE)
			failf("killed: the stale write was not refused (%d)", rv);
		else
			printf("killed: stale write with token %" PRIu64
			       " refused\n", wr.wr_token);
		dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb);
	}
	dlm_close_lockspace(h);
}

/* A holder that writes after its lock went to another. */
static void case_unlocked(struct storage *st, dlm_lshandle_t a,
			  dlm_lshandle_t b)
{
	struct dlm_lksb la, lb;
	uint64_t ta, tb;

	if (lock_wait(a, "obj-unlocked", LKM_PWMODE, 0, &la)) {
		failf("unlocked: first holder");
		return;
	}
	ta = token_of(a, la.sb_lkid, "unlocked: first holder");
	if (store_write(st, "obj-unlocked", ta, 1))
		failf("unlocked: the first holder's write was refused");
	dlm_ls_unlock_wait(a, la.sb_lkid, 0, &la);
	expect_no_token(a, la.sb_lkid, "unlocked: after the unlock");
	if (lock_wait(b, "obj-unlocked", LKM_EXMODE, 0, &lb)) {
		failf("unlocked: second holder");
		return;
	}
	tb = token_of(b, lb.sb_lkid, "unlocked: second holder");
	expect_greater(tb, ta, "unlocked: second holder");
	if (store_write(st, "obj-unlocked", tb, 2))
		failf("unlocked: the second holder's write was refused");
	if (store_write(st, "obj-unlocked", ta, 3) != -ESTALE)
		failf("unlocked: the first holder's late write was not refused");
	else
		printf("unlocked: late write with token %" PRIu64 " refused "
		       "after %" PRIu64 "\n", ta, tb);
	dlm_ls_unlock_wait(b, lb.sb_lkid, 0, &lb);
}

/* Does "$DLMCTL lockdump" show lock 'lkid' with 'token'? */
static int dump_shows(uint32_t lkid, uint64_t token)
{
	const char *ctl = getenv("DLMCTL");
	char cmd[512], line[1024], want[64], id[16];
	int found = 0;
	FILE *f;

	if (!ctl) {
		failf("DLMCTL is not set");
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "\"%s\" lockdump %s", ctl, LS_NAME);
	snprintf(id, sizeof(id), " %08x ", lkid);
	snprintf(want, sizeof(want), " token %" PRIu64 "\n", token);
	f = popen(cmd, "r");
	if (!f) {
		failf("popen %s: %s", cmd, strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof(line), f))
		if (strstr(line, id) && strstr(line, want))
			found = 1;
	pclose(f);
	return found;
}

static void no_ast(void *arg)
{
	(void)arg;
}

/* On one lock of handle a: EX, then PR (no token), PW (a new, larger
 * one), NL (none), CW; and a CW of handle b beside it. */
static void case_modes(dlm_lshandle_t a, dlm_lshandle_t b)
{
	struct dlm_lksb la, lb, lc;
	uint64_t t1, t2, tc1, tc2;

	if (lock_wait(a, "obj-modes", LKM_EXMODE, 0, &la)) {
		failf("modes: EX");
		return;
	}
	t1 = token_of(a, la.sb_lkid, "modes: EX");
	if (!dump_shows(la.sb_lkid, t1))
		failf("modes: dlmctl lockdump does not show lock %08x with token "
		      "%" PRIu64, la.sb_lkid, t1);
	expect_no_token(b, la.sb_lkid, "modes: another handle's lock");
	expect_no_token(a, 0x7fffffffu, "modes: an unknown lock id");
	/* b waits for EX behind a's EX: no token while waiting */
	memset(&lb, 0, sizeof(lb));
	if (dlm_ls_lock(b, LKM_EXMODE, &lb, 0, "obj-modes", 9, 0, no_ast, NULL,
			NULL, NULL)) {
		failf("modes: waiting request: %s", strerror(errno));
	} else {
		expect_no_token(b, lb.sb_lkid, "modes: a waiting request");
		if (dlm_ls_unlock_wait(b, lb.sb_lkid, LKF_CANCEL, &lb) ||
		    lb.sb_status != ECANCEL)
			failf("modes: cancel of the waiting request: %s, status %d",
			      strerror(errno), lb.sb_status);
	}
	if (lock_wait(a, "obj-modes", LKM_PRMODE, LKF_CONVERT, &la))
		failf("modes: convert to PR");
	expect_no_token(a, la.sb_lkid, "modes: PR");
	if (lock_wait(a, "obj-modes", LKM_PWMODE, LKF_CONVERT, &la))
		failf("modes: convert to PW");
	t2 = token_of(a, la.sb_lkid, "modes: PW");
	expect_greater(t2, t1, "modes: PW after EX");
	if (lock_wait(a, "obj-modes", LKM_NLMODE, LKF_CONVERT, &la))
		failf("modes: convert to NL");
	expect_no_token(a, la.sb_lkid, "modes: NL");
	/* two CW holders: distinct tokens, both above the PW */
	if (lock_wait(a, "obj-modes", LKM_CWMODE, LKF_CONVERT, &la) ||
	    lock_wait(b, "obj-modes", LKM_CWMODE, 0, &lc)) {
		failf("modes: CW");
		return;
	}
	tc1 = token_of(a, la.sb_lkid, "modes: first CW");
	tc2 = token_of(b, lc.sb_lkid, "modes: second CW");
	expect_greater(tc1, t2, "modes: first CW");
	expect_greater(tc2, tc1, "modes: second CW");
	dlm_ls_unlock_wait(b, lc.sb_lkid, 0, &lc);
	dlm_ls_unlock_wait(a, la.sb_lkid, 0, &la);
	/* the default lockspace's form, on a lock that does not exist */
	errno = 0;
	{
		uint64_t t = 0;

		if (dlm_lock_token(0x7ffffffeu, &t) != -1 || errno != ENOENT)
			failf("dlm_lock_token of no lock: errno %d, want ENOENT",
			      errno);
	}
	if (dlm_ls_lock_token(a, 1, NULL) != -1 || errno != EINVAL)
		failf("dlm_ls_lock_token with NULL: errno %d, want EINVAL", errno);
	printf("modes: EX %" PRIu64 ", PW %" PRIu64 ", CW %" PRIu64 " and %"
	       PRIu64 "\n", t1, t2, tc1, tc2);
}

int main(void)
{
	struct storage st;
	dlm_lshandle_t ls, a, b;

	memset(&st, 0, sizeof(st));
	ls = dlm_create_lockspace(LS_NAME, 0600);
	if (!ls) {
		fprintf(stderr, "FAIL: dlm_create_lockspace: %s\n", strerror(errno));
		return 1;
	}
	case_killed(&st);
	a = open_ls();
	b = open_ls();
	if (a && b) {
		case_unlocked(&st, a, b);
		case_modes(a, b);
	}
	if (a)
		dlm_close_lockspace(a);
	if (b)
		dlm_close_lockspace(b);
	if (dlm_release_lockspace(LS_NAME, ls, 1))
		failf("dlm_release_lockspace: %s", strerror(errno));
	if (failures)
		return 1;
	printf("PASS\n");
	return 0;
}
