/*
 * tests/test-libdlm.c - libdlm through a running dlmd.
 *
 * Run by tests/test-daemon.sh after "dlm-cluster up 1": DLMD_SOCKET names
 * the daemon.  Every test uses the public API of libdlm.so (pthreads) the
 * way an application would; nothing here touches the engine directly.
 * Two handles on one lockspace are two connections, i.e. two lock owners,
 * which is how one process plays several contending clients.  Tests that
 * need a client to die (SIGKILL) fork one.
 *
 * Waiting is always bounded: wait_for() polls the AST fd for at most
 * AST_TIMEOUT_MS and fails the test otherwise.  That bound, and every
 * other wait for something that must happen, only turns a hang into a
 * failure: it is generous (a minute) and never measures a speed, since
 * under load (a load average past 10, sanitizers) a right answer may
 * take seconds.  The checks that something does NOT happen (assert_quiet,
 * settle, a poll that must see nothing) stay short: on a slow host they
 * can only miss an event that comes late, i.e. pass where they should
 * have failed, never fail a right daemon.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "libdlm/libdlm.h"
#include "libdlm/dlmd_proto.h"

#define LS_NAME		"libdlm-test"
#define AST_TIMEOUT_MS	60000	/* a hang bound, not a speed (see above) */
#define NUM_MODES	6
#define THREADS		16
#define THREAD_ITERS	200
/* raw connections' bound on a blocking recv: the hang bound above */
#define RAW_RECV_TIMEOUT_S	(AST_TIMEOUT_MS / 1000)

#include "tests/raw-client.h"

static dlm_lshandle_t h1, h2, h3;	/* three owners in one lockspace */

/* What the ASTs of one lock saw. */
struct rec {
	volatile int	r_comp;		/* completion ASTs run */
	volatile int	r_bast;		/* blocking ASTs run */
	void		*r_comp_arg;
	void		*r_bast_arg;
	struct dlm_lksb	r_lksb;
	char		r_lvb[DLM_LVB_LEN];
};

static void comp_ast(void *arg)
{
	struct rec *r = arg;

	r->r_comp_arg = arg;
	r->r_comp++;
}

static void bast_ast(void *arg)
{
	struct rec *r = arg;

	r->r_bast_arg = arg;
	r->r_bast++;
}

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->r_lksb.sb_lvbptr = r->r_lvb;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Dispatch the given handles' ASTs until *counter >= want.  0 or -1. */
static int wait_for(volatile int *counter, int want, dlm_lshandle_t a,
		    dlm_lshandle_t b)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;

	while (*counter < want) {
		struct pollfd pfd[2] = {
			{ .fd = dlm_ls_get_fd(a), .events = POLLIN },
			{ .fd = b ? dlm_ls_get_fd(b) : -1, .events = POLLIN },
		};
		uint64_t now = now_ms();

		if (now >= end)
			return -1;
		if (poll(pfd, 2, (int)(end - now)) < 0)
			return -1;
		if (pfd[0].revents)
			dlm_dispatch(pfd[0].fd);
		if (pfd[1].revents)
			dlm_dispatch(pfd[1].fd);
	}
	return 0;
}

/* Nothing more arrives on 'h' within ms.  A short ms is safe: a slow
 * host can only make this miss a late arrival, never fail wrongly. */
static void assert_quiet(dlm_lshandle_t h, int ms)
{
	struct pollfd pfd = { .fd = dlm_ls_get_fd(h), .events = POLLIN };

	assert_int_equal(poll(&pfd, 1, ms), 0);
}

/* Run whatever ASTs arrive on 'h' during ms (a lapse of time, not a
 * wait for something: callers check what did NOT happen meanwhile). */
static void settle(dlm_lshandle_t h, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (uint64_t now = now_ms(); now < end; now = now_ms()) {
		struct pollfd pfd = { .fd = dlm_ls_get_fd(h), .events = POLLIN };

		if (poll(&pfd, 1, (int)(end - now)) > 0)
			dlm_dispatch(pfd.fd);
	}
}

static int lock(dlm_lshandle_t h, int mode, struct rec *r, uint32_t flags,
		const char *name, void *range)
{
	return dlm_ls_lock(h, (uint32_t)mode, &r->r_lksb, flags, name,
			   (unsigned int)strlen(name), 0, comp_ast, r, bast_ast,
			   range);
}

/* Lock and wait for the completion; returns sb_status. */
static int lock_sync(dlm_lshandle_t h, int mode, struct rec *r, uint32_t flags,
		     const char *name)
{
	int want = r->r_comp + 1;

	assert_int_equal(lock(h, mode, r, flags, name, NULL), 0);
	assert_int_equal(wait_for(&r->r_comp, want, h, NULL), 0);
	return r->r_lksb.sb_status;
}

/* The start of many tests: a new lock of r (reset first) on name in
 * mode, granted at once. */
static void lock_granted(dlm_lshandle_t h, int mode, struct rec *r,
			 const char *name)
{
	rec_init(r);
	assert_int_equal(lock_sync(h, mode, r, 0, name), 0);
}

/* A handle of its own on LS_NAME, and name held EX by h2 through blocker
 * (reset first): the start of the tests of requests that wait. */
static dlm_lshandle_t open_blocked(struct rec *blocker, const char *name)
{
	dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);

	assert_non_null(h);
	lock_granted(h2, LKM_EXMODE, blocker, name);
	return h;
}

static int unlock_sync(dlm_lshandle_t h, struct rec *r, uint32_t flags)
{
	int want = r->r_comp + 1;

	assert_int_equal(dlm_ls_unlock(h, r->r_lksb.sb_lkid, flags, &r->r_lksb, r), 0);
	assert_int_equal(wait_for(&r->r_comp, want, h, NULL), 0);
	return r->r_lksb.sb_status;
}

/* r's first completion, waited for on h, is a grant. */
static void assert_granted(dlm_lshandle_t h, struct rec *r)
{
	assert_int_equal(wait_for(&r->r_comp, 1, h, NULL), 0);
	assert_int_equal(r->r_lksb.sb_status, 0);
}

static int group_setup(void **state)
{
	h1 = dlm_new_lockspace(LS_NAME, 0600, 0);
	if (!h1) {
		fprintf(stderr, "dlm_new_lockspace: %s (DLMD_SOCKET=%s)\n",
			strerror(errno), getenv("DLMD_SOCKET"));
		return -1;
	}
	h2 = dlm_open_lockspace(LS_NAME);
	h3 = dlm_open_lockspace(LS_NAME);
	return h2 && h3 ? 0 : -1;
}

static int group_teardown(void **state)
{
	dlm_close_lockspace(h3);
	dlm_close_lockspace(h2);
	return dlm_release_lockspace(LS_NAME, h1, 1) ? -1 : 0;
}

/* ------------------------------------------------------------------ */

static void test_versions(void **state)
{
	uint32_t a = 9, b = 9, c = 9;

	assert_int_equal(dlm_kernel_version(&a, &b, &c), 0);
	/* the kernel device interface dlmd is compatible with: lvmlockd
	 * wants at least 6.0.1 */
	assert_int_equal(a, 6);
	assert_int_equal(b, 0);
	assert_int_equal(c, 2);
	a = b = c = 9;
	dlm_library_version(&a, &b, &c);
	assert_int_equal(a, 6);
	assert_int_equal(b, 0);
	assert_int_equal(c, 2);
	assert_int_equal(sizeof(struct dlm_lksb), 24);
	assert_int_equal(offsetof(struct dlm_lksb, sb_lvbptr), 16);
}

static void test_lockspaces(void **state)
{
	dlm_lshandle_t h, o;
	struct rec r;
	char longname[DLM_LOCKSPACE_LEN + 2];

	errno = 0;
	assert_null(dlm_open_lockspace("no-such-lockspace"));
	assert_int_equal(errno, ENOENT);
	h = dlm_new_lockspace("ls-a", 0600, 0);
	assert_non_null(h);
	errno = 0;
	assert_null(dlm_new_lockspace("ls-a", 0600, DLM_LSFL_NEWEXCL));
	assert_int_equal(errno, EEXIST);
	o = dlm_create_lockspace("ls-a", 0600);	/* exists: opened */
	assert_non_null(o);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	errno = 0;
	assert_null(dlm_create_lockspace(longname, 0600));
	assert_int_equal(errno, EINVAL);
	/* Names are graphic ASCII without '/', and not "." or "..": nothing
	 * that could write a fake line into a log or "dlmctl ls", nor a path
	 * (the kernel's configfs refuses "." and ".." as directories). */
	{
		static const char *const bad[] = { "bad\nname", "a/b", "sp ace",
						   "\x01x", "tab\t", "\x7f", "\xc3\xa9",
						   ".", ".." };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			errno = 0;
			assert_null(dlm_new_lockspace(bad[i], 0600, 0));
			assert_int_equal(errno, EINVAL);
		}
	}
	assert_true(dlm_ls_get_fd(h) >= 0);

	/* Created twice: the first release only undoes one create (as the
	 * kernel counts them), the lockspace and o's lock stay. */
	rec_init(&r);
	assert_int_equal(lock_sync(o, LKM_EXMODE, &r, 0, "res"), 0);
	assert_int_equal(dlm_release_lockspace("ls-a", h, 0), 0);
	assert_int_equal(unlock_sync(o, &r, 0), EUNLOCK);
	/* The last create: while o is open with a lock, release without
	 * force is refused. */
	h = dlm_open_lockspace("ls-a");
	assert_non_null(h);
	rec_init(&r);
	assert_int_equal(lock_sync(o, LKM_EXMODE, &r, 0, "res"), 0);
	assert_int_equal(dlm_release_lockspace("ls-a", h, 0), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(unlock_sync(o, &r, 0), EUNLOCK);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_release_lockspace("ls-a", h, 0), 0);
	errno = 0;
	assert_null(dlm_open_lockspace("ls-a"));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(dlm_ls_lock(NULL, LKM_EXMODE, &r.r_lksb, 0, "x", 1, 0,
				     comp_ast, &r, NULL, NULL), -1);
	assert_int_equal(errno, ENOTCONN);
}

/* Several processes using one lockspace, each creating it and releasing
 * it with force as upstream programs do: a release by one leaves the
 * lockspace to the others (the kernel counts creates); only the last
 * forced release removes it, from under any handle merely opened. */
static void test_shared_release(void **state)
{
	dlm_lshandle_t mine, peek;
	struct rec a, b;
	int p[2], st;
	pid_t pid;
	char c;

	mine = dlm_new_lockspace("ls-shared", 0600, 0);
	assert_non_null(mine);
	rec_init(&a);
	assert_int_equal(lock_sync(mine, LKM_EXMODE, &a, 0, "mine"), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dlm_lshandle_t h = dlm_new_lockspace("ls-shared", 0600, 0);
		struct dlm_lksb lk;

		close(p[0]);
		memset(&lk, 0, sizeof(lk));
		if (!h)
			_exit(2);
		if (dlm_ls_lock_wait(h, LKM_EXMODE, &lk, 0, "theirs", 6, 0, NULL,
				     NULL, NULL) || lk.sb_status)
			_exit(3);
		if (dlm_release_lockspace("ls-shared", h, 1))
			_exit(4);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 0);	/* the child is gone */
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* Our handle and our lock are untouched. */
	peek = dlm_open_lockspace("ls-shared");
	assert_non_null(peek);
	rec_init(&b);
	assert_int_equal(lock_sync(peek, LKM_EXMODE, &b, LKF_NOQUEUE, "mine"), EAGAIN);
	rec_init(&b);
	assert_int_equal(lock_sync(mine, LKM_PRMODE, &b, 0, "more"), 0);
	assert_int_equal(unlock_sync(mine, &b, 0), EUNLOCK);
	/* The last forced release removes it, under peek too. */
	assert_int_equal(dlm_release_lockspace("ls-shared", mine, 1), 0);
	rec_init(&b);
	assert_int_equal(lock(peek, LKM_NLMODE, &b, 0, "gone", NULL), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(dlm_close_lockspace(peek), 0);
	errno = 0;
	assert_null(dlm_open_lockspace("ls-shared"));
	assert_int_equal(errno, ENOENT);
}

static const int compat[NUM_MODES][NUM_MODES] = {
	/* NL CR CW PR PW EX */
	{ 1, 1, 1, 1, 1, 1 },	/* NL */
	{ 1, 1, 1, 1, 1, 0 },	/* CR */
	{ 1, 1, 1, 0, 0, 0 },	/* CW */
	{ 1, 1, 0, 1, 0, 0 },	/* PR */
	{ 1, 1, 0, 0, 0, 0 },	/* PW */
	{ 1, 0, 0, 0, 0, 0 },	/* EX */
};

static void test_mode_pairs(void **state)
{
	for (int held = 0; held < NUM_MODES; held++) {
		for (int req = 0; req < NUM_MODES; req++) {
			struct rec a, b;
			char name[32];
			int st;

			snprintf(name, sizeof(name), "pair-%d-%d", held, req);
			rec_init(&a);
			rec_init(&b);
			assert_int_equal(lock_sync(h1, held, &a, 0, name), 0);
			st = lock_sync(h2, req, &b, LKF_NOQUEUE, name);
			if (compat[held][req]) {
				assert_int_equal(st, 0);
				assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
			} else {
				assert_int_equal(st, EAGAIN);
			}
			assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
		}
	}
}

static void test_asts(void **state)
{
	struct rec a, b;
	int rv;

	rec_init(&b);
	lock_granted(h1, LKM_EXMODE, &a, "asts");
	assert_ptr_equal(a.r_comp_arg, &a);
	assert_true(a.r_lksb.sb_lkid != 0);
	/* sb_status is EINPROG until the AST; sb_lkid set on return. */
	rv = lock(h2, LKM_PRMODE, &b, 0, "asts", NULL);
	assert_int_equal(rv, 0);
	assert_true(b.r_lksb.sb_lkid != 0);
	assert_int_equal(wait_for(&a.r_bast, 1, h1, NULL), 0);
	assert_ptr_equal(a.r_bast_arg, &a);	/* same arg as the completion */
	assert_int_equal(b.r_comp, 0);
	assert_int_equal(b.r_lksb.sb_status, EINPROG);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_granted(h2, &b);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
}

static void test_convert_quecvt(void **state)
{
	struct rec a, b, c, d;

	rec_init(&b);
	rec_init(&c);
	rec_init(&d);
	lock_granted(h1, LKM_NLMODE, &a, "cvt");
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &a, LKF_CONVERT, "cvt"), 0);
	assert_int_equal(lock_sync(h2, LKM_PRMODE, &b, LKF_NOQUEUE, "cvt"), EAGAIN);
	/* Down-conversion is granted at once. */
	assert_int_equal(lock_sync(h1, LKM_CRMODE, &a, LKF_CONVERT, "cvt"), 0);
	lock_granted(h2, LKM_PRMODE, &b, "cvt");
	assert_int_equal(lock_sync(h3, LKM_NLMODE, &c, 0, "cvt"), 0);
	assert_int_equal(lock_sync(h3, LKM_NLMODE, &d, 0, "cvt"), 0);
	/* b converts PR->EX and waits for a's CR. */
	assert_int_equal(lock(h2, LKM_EXMODE, &b, LKF_CONVERT, "cvt", NULL), 0);
	assert_int_equal(wait_for(&a.r_bast, 1, h1, NULL), 0);
	/* NL->CR is compatible with everything granted: without QUECVT it
	 * is granted at once, past b's queued conversion ... */
	assert_int_equal(lock_sync(h3, LKM_CRMODE, &d, LKF_CONVERT, "cvt"), 0);
	/* ... with QUECVT it queues behind b. */
	assert_int_equal(lock(h3, LKM_CRMODE, &c, LKF_CONVERT | LKF_QUECVT, "cvt", NULL), 0);
	settle(h3, 100);	/* d may get a blocking AST meanwhile */
	assert_int_equal(c.r_comp, 1);
	/* QUECVT on a conversion that is not an up-conversion: refused. */
	assert_int_equal(lock(h3, LKM_NLMODE, &d, LKF_CONVERT | LKF_QUECVT, "cvt", NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* Cancel b's conversion: b is back in PR with ECANCEL, and c's
	 * queued conversion is granted. */
	assert_int_equal(dlm_ls_unlock(h2, b.r_lksb.sb_lkid, LKF_CANCEL, &b.r_lksb, &b), 0);
	assert_int_equal(wait_for(&b.r_comp, 2, h2, NULL), 0);
	assert_int_equal(b.r_lksb.sb_status, ECANCEL);
	assert_int_equal(wait_for(&c.r_comp, 2, h3, NULL), 0);
	assert_int_equal(c.r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h3, &c, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h3, &d, 0), EUNLOCK);
}

static void test_lvb(void **state)
{
	struct rec w, r1, r2;

	rec_init(&w);
	rec_init(&r1);
	rec_init(&r2);
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &w, LKF_VALBLK, "lvb"), 0);
	memset(w.r_lvb, 0, DLM_LVB_LEN);
	snprintf(w.r_lvb, DLM_LVB_LEN, "written by the writer");
	/* A reader queues; the writer's down-conversion to NL writes. */
	assert_int_equal(lock(h2, LKM_PRMODE, &r1, LKF_VALBLK, "lvb", NULL), 0);
	assert_int_equal(lock_sync(h1, LKM_NLMODE, &w, LKF_CONVERT | LKF_VALBLK, "lvb"), 0);
	assert_granted(h2, &r1);
	assert_string_equal(r1.r_lvb, "written by the writer");
	assert_int_equal(lock_sync(h3, LKM_CRMODE, &r2, LKF_VALBLK, "lvb"), 0);
	assert_string_equal(r2.r_lvb, "written by the writer");
	assert_int_equal(r2.r_lksb.sb_flags & DLM_SBF_VALNOTVALID, 0);
	assert_int_equal(unlock_sync(h2, &r1, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h3, &r2, 0), EUNLOCK);
	/* The writer invalidates it on unlock from EX: readers are told. */
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &w, LKF_CONVERT | LKF_VALBLK, "lvb"), 0);
	assert_int_equal(unlock_sync(h1, &w, LKF_IVVALBLK), EUNLOCK);
	rec_init(&r1);
	assert_int_equal(lock_sync(h2, LKM_PRMODE, &r1, LKF_VALBLK, "lvb"), 0);
	assert_true(r1.r_lksb.sb_flags & DLM_SBF_VALNOTVALID);
	assert_int_equal(unlock_sync(h2, &r1, 0), EUNLOCK);
	/* VALBLK without a buffer: refused by the library. */
	r1.r_lksb.sb_lvbptr = NULL;
	assert_int_equal(lock(h2, LKM_PRMODE, &r1, LKF_VALBLK, "lvb", NULL), -1);
	assert_int_equal(errno, EINVAL);
}

static void test_cancel_forceunlock(void **state)
{
	struct rec a, b, c;

	rec_init(&b);
	rec_init(&c);
	lock_granted(h1, LKM_EXMODE, &a, "cancel");
	assert_int_equal(lock(h2, LKM_EXMODE, &b, 0, "cancel", NULL), 0);
	assert_int_equal(lock(h3, LKM_EXMODE, &c, 0, "cancel", NULL), 0);
	assert_int_equal(unlock_sync(h2, &b, LKF_CANCEL), ECANCEL);
	assert_int_equal(unlock_sync(h3, &c, LKF_FORCEUNLOCK), EUNLOCK);
	/* Unlocking a granted lock with CANCEL: nothing to cancel.  As with
	 * the kernel's device: success, the status block untouched, and no
	 * completion AST (the _wait form returns at once). */
	assert_int_equal(dlm_ls_unlock(h1, a.r_lksb.sb_lkid, LKF_CANCEL, &a.r_lksb, &a), 0);
	assert_int_equal(a.r_lksb.sb_status, 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, a.r_lksb.sb_lkid, LKF_CANCEL, &a.r_lksb), 0);
	assert_int_equal(a.r_lksb.sb_status, 0);
	{
		int comps = a.r_comp;

		/* the next completion is the conversion's, not a cancel's */
		assert_int_equal(lock_sync(h1, LKM_NLMODE, &a, LKF_CONVERT,
					   "cancel"), 0);
		assert_int_equal(a.r_comp, comps + 1);
	}
	assert_int_equal(dlm_ls_unlock(h1, 0, 0, &a.r_lksb, &a), -1);
	assert_int_equal(errno, EINVAL);
	/* Somebody else's lock. */
	assert_int_equal(dlm_ls_unlock(h2, a.r_lksb.sb_lkid, 0, &a.r_lksb, &a), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_quiet(h2, 50);
	assert_quiet(h3, 50);
}

static void test_expedite_altpr(void **state)
{
	struct rec a, b, c;

	rec_init(&b);
	rec_init(&c);
	lock_granted(h1, LKM_EXMODE, &a, "exp");
	assert_int_equal(lock(h2, LKM_PRMODE, &b, 0, "exp", NULL), 0);
	/* An NL request with EXPEDITE passes the waiting PR. */
	assert_int_equal(lock_sync(h3, LKM_NLMODE, &c, LKF_EXPEDITE, "exp"), 0);
	assert_int_equal(unlock_sync(h3, &c, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_int_equal(wait_for(&b.r_comp, 1, h2, NULL), 0);
	/* b holds PR: a PW request with ALTPR is granted PR, flagged. */
	rec_init(&a);
	assert_int_equal(lock_sync(h1, LKM_PWMODE, &a, LKF_ALTPR, "exp"), 0);
	assert_true(a.r_lksb.sb_flags & DLM_SBF_ALTMODE);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
}

static void test_convdeadlk(void **state)
{
	struct rec a, b;

	rec_init(&b);
	lock_granted(h1, LKM_PRMODE, &a, "dl");
	assert_int_equal(lock_sync(h2, LKM_PRMODE, &b, 0, "dl"), 0);
	assert_int_equal(lock(h1, LKM_EXMODE, &a, LKF_CONVERT, "dl", NULL), 0);
	/* b closes the cycle; with CONVDEADLK b is demoted to NL, so a's
	 * conversion is granted and b's waits on. */
	assert_int_equal(lock(h2, LKM_EXMODE, &b, LKF_CONVERT | LKF_CONVDEADLK, "dl", NULL), 0);
	assert_int_equal(wait_for(&a.r_comp, 2, h1, NULL), 0);
	assert_int_equal(a.r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_int_equal(wait_for(&b.r_comp, 2, h2, NULL), 0);
	assert_int_equal(b.r_lksb.sb_status, 0);
	assert_true(b.r_lksb.sb_flags & DLM_SBF_DEMOTED);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);

	/* Without CONVDEADLK the conversion closing the cycle is cancelled
	 * with EDEADLK. */
	rec_init(&b);
	lock_granted(h1, LKM_PRMODE, &a, "dl2");
	assert_int_equal(lock_sync(h2, LKM_PRMODE, &b, 0, "dl2"), 0);
	assert_int_equal(lock(h1, LKM_EXMODE, &a, LKF_CONVERT, "dl2", NULL), 0);
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &b, LKF_CONVERT, "dl2"), EDEADLK);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
	assert_int_equal(wait_for(&a.r_comp, 2, h1, NULL), 0);
	assert_int_equal(a.r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
}

static void test_deadlock_cancel(void **state)
{
	struct rec a, b;

	rec_init(&b);
	lock_granted(h1, LKM_EXMODE, &a, "dlc");
	assert_int_equal(lock(h2, LKM_EXMODE, &b, 0, "dlc", NULL), 0);
	assert_int_equal(dlm_ls_deadlock_cancel(h2, b.r_lksb.sb_lkid, 0), 0);
	assert_int_equal(wait_for(&b.r_comp, 1, h2, NULL), 0);
	assert_int_equal(b.r_lksb.sb_status, EDEADLK);
	/* granted: nothing to cancel; the kernel's device says 0 */
	assert_int_equal(dlm_ls_deadlock_cancel(h1, a.r_lksb.sb_lkid, 0), 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
}

/* The deadlock's victim (its request 'lost', on handle hv, which holds
 * 'vheld') gave way; the survivor's request 'won' (handle hs, holding
 * 'sheld') is granted once the victim's owner lets go. */
static void deadlock_aftermath(dlm_lshandle_t hv, struct rec *lost,
			       struct rec *vheld, dlm_lshandle_t hs,
			       struct rec *won, struct rec *sheld)
{
	assert_int_equal(lost->r_lksb.sb_status, EDEADLK);
	assert_int_equal(won->r_comp, 0);
	assert_int_equal(unlock_sync(hv, vheld, 0), EUNLOCK);
	assert_int_equal(wait_for(&won->r_comp, 1, hs, NULL), 0);
	assert_int_equal(won->r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(hs, won, 0), EUNLOCK);
	assert_int_equal(unlock_sync(hs, sheld, 0), EUNLOCK);
}

/* An async request in transaction *xid (dlm_ls_lockx). */
static int lockx(dlm_lshandle_t h, int mode, struct rec *r, const char *name,
		 uint64_t xid)
{
	return dlm_ls_lockx(h, (uint32_t)mode, &r->r_lksb, 0, name,
			    (unsigned int)strlen(name), 0, comp_ast, r, bast_ast,
			    &xid, NULL);
}

/* Two owners, each holding what the other asks for: dlmd's deadlock
 * detection (dlm.conf deadlock_secs, default 5 s, looked at every
 * scan_secs) cancels the younger request with EDEADLK; the older one is
 * granted when the victim's owner lets go.  The requests are async, so
 * each owner names its transaction (an xid): the application declares
 * that it waits for them (an async request without one waits for
 * nobody). */
static void test_deadlock_detected(void **state)
{
	struct rec a, b, wa, wb;
	uint64_t end;

	rec_init(&a);
	rec_init(&b);
	rec_init(&wa);
	rec_init(&wb);
	assert_int_equal(lockx(h1, LKM_EXMODE, &a, "dd-a", 1), 0);
	assert_int_equal(wait_for(&a.r_comp, 1, h1, NULL), 0);
	assert_int_equal(lockx(h2, LKM_EXMODE, &b, "dd-b", 2), 0);
	assert_int_equal(wait_for(&b.r_comp, 1, h2, NULL), 0);
	assert_int_equal(lockx(h1, LKM_EXMODE, &wb, "dd-b", 1), 0);
	assert_int_equal(lockx(h2, LKM_EXMODE, &wa, "dd-a", 2), 0);
	/* bounded (a hang only): two delays and two scans take ~20 s */
	end = now_ms() + AST_TIMEOUT_MS;
	while (!wa.r_comp && !wb.r_comp && now_ms() < end)
		(void)wait_for(&wa.r_comp, 1, h2, h1);
	assert_int_equal(wa.r_comp + wb.r_comp, 1);
	if (wa.r_comp)	/* h2's request, the younger by its lock id */
		deadlock_aftermath(h2, &wa, &b, h1, &wb, &a);
	else
		deadlock_aftermath(h1, &wb, &a, h2, &wa, &b);
}

/* Longer than dlmd's default deadlock delay (5 s) twice over, with the
 * scans between: a wait this long is probed at least once. */
#define DL_HOLD_MS	12000

struct dl_thread {
	dlm_lshandle_t	t_h;
	const char	*t_first;	/* lock this (EX, waiting) first, or NULL */
	const char	*t_second;	/* then wait for this */
	struct dlm_lksb	t_lk1, t_lk2;
	int		t_rv;		/* wait_status() of the second */
	int		t_stage;	/* 1: t_first held; 2: done */
};

/* A _wait call's outcome: its errno, or the status it left in the lksb
 * (libdlm.so returns 0 and leaves it there; libdlm_lt returns -1). */
static int wait_status(int rv, const struct dlm_lksb *lksb)
{
	return rv ? errno : lksb->sb_status;
}

static int stage_of(struct dl_thread *t)
{
	return __atomic_load_n(&t->t_stage, __ATOMIC_ACQUIRE);
}

static void set_stage(struct dl_thread *t, int stage)
{
	__atomic_store_n(&t->t_stage, stage, __ATOMIC_RELEASE);
}

static void *dl_thread(void *arg)
{
	struct dl_thread *t = arg;

	if (t->t_first) {
		assert_int_equal(dlm_ls_lock_wait(t->t_h, LKM_EXMODE, &t->t_lk1, 0,
						  t->t_first,
						  (unsigned int)strlen(t->t_first),
						  0, NULL, NULL, NULL), 0);
		set_stage(t, 1);
	}
	t->t_rv = wait_status(dlm_ls_lock_wait(t->t_h, LKM_EXMODE, &t->t_lk2, 0,
					       t->t_second,
					       (unsigned int)strlen(t->t_second),
					       0, NULL, NULL, NULL), &t->t_lk2);
	/* a victim lets go of what it holds, so that the other goes on */
	if (t->t_first && t->t_rv)
		assert_int_equal(dlm_ls_unlock_wait(t->t_h, t->t_lk1.sb_lkid, 0,
						    &t->t_lk1), 0);
	set_stage(t, 2);
	return NULL;
}

static void wait_stage(struct dl_thread *t, int stage)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;

	while (stage_of(t) < stage && now_ms() < end)
		usleep(1000);
	assert_int_equal(stage_of(t), stage);
}

/* One handle (one connection, one owner to dlmd) and two threads: the
 * main thread holds EX past the deadlock delay while another thread
 * waits for it in dlm_ls_lock_wait.  The holder does not wait for
 * anything: no deadlock, the waiter is granted after the unlock. */
static void test_deadlock_other_thread(void **state)
{
	struct dl_thread t = { .t_h = h1, .t_second = "dt-thread" };
	pthread_t tid;
	struct rec a;

	lock_granted(h1, LKM_EXMODE, &a, "dt-thread");
	assert_int_equal(pthread_create(&tid, NULL, dl_thread, &t), 0);
	settle(h1, DL_HOLD_MS);
	assert_int_equal(stage_of(&t), 0);	/* still waiting, not cancelled */
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	pthread_join(tid, NULL);
	assert_int_equal(t.t_rv, 0);
	assert_int_equal(t.t_lk2.sb_status, 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, t.t_lk2.sb_lkid, 0, &t.t_lk2), 0);
}

/* An async request queued behind the handle's own EX, held past the
 * delay: its caller does not block on it, so it is granted after the
 * unlock, never EDEADLK. */
static void test_deadlock_async_own(void **state)
{
	struct rec a, w;

	rec_init(&w);
	lock_granted(h1, LKM_EXMODE, &a, "dt-async");
	assert_int_equal(lock(h1, LKM_EXMODE, &w, 0, "dt-async", NULL), 0);
	settle(h1, DL_HOLD_MS);
	assert_int_equal(w.r_comp, 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_granted(h1, &w);
	assert_int_equal(unlock_sync(h1, &w, 0), EUNLOCK);
}

/* Two threads on one handle in a true deadlock: the main thread holds
 * R1 and waits for R2, the other holds R2 and waits for R1, both in
 * dlm_ls_lock_wait.  One of them gets EDEADLK, the other the lock. */
static void test_deadlock_cross_thread(void **state)
{
	struct dl_thread t = { .t_h = h1, .t_first = "dt-r2",
			       .t_second = "dt-r1" };
	struct dlm_lksb r1, r2;
	pthread_t tid;
	int st;

	memset(&r1, 0, sizeof(r1));
	memset(&r2, 0, sizeof(r2));
	assert_int_equal(dlm_ls_lock_wait(h1, LKM_EXMODE, &r1, 0, "dt-r1", 5, 0,
					  NULL, NULL, NULL), 0);
	assert_int_equal(pthread_create(&tid, NULL, dl_thread, &t), 0);
	wait_stage(&t, 1);
	/* the thread's wait for R1 is the older (usually: a slow host may
	 * reverse them, and the test checks either victim) */
	usleep(200000);
	st = wait_status(dlm_ls_lock_wait(h1, LKM_EXMODE, &r2, 0, "dt-r2", 5, 0,
					  NULL, NULL, NULL), &r2);
	if (st) {		/* the victim: let the thread have R1 */
		assert_int_equal(st, EDEADLK);
		assert_int_equal(dlm_ls_unlock_wait(h1, r1.sb_lkid, 0, &r1), 0);
		pthread_join(tid, NULL);
		assert_int_equal(t.t_rv, 0);
		assert_int_equal(dlm_ls_unlock_wait(h1, t.t_lk2.sb_lkid, 0,
						    &t.t_lk2), 0);
		assert_int_equal(dlm_ls_unlock_wait(h1, t.t_lk1.sb_lkid, 0,
						    &t.t_lk1), 0);
	} else {		/* the thread gave way and let go of R2 */
		pthread_join(tid, NULL);
		assert_int_equal(t.t_rv, EDEADLK);
		assert_int_equal(dlm_ls_unlock_wait(h1, r2.sb_lkid, 0, &r2), 0);
		assert_int_equal(dlm_ls_unlock_wait(h1, r1.sb_lkid, 0, &r1), 0);
	}
}

/* A thread that holds EX and waits in dlm_ls_lock_wait for a new EX lock
 * on the same resource waits for itself: EDEADLK, not a hang. */
static void test_deadlock_self(void **state)
{
	struct dlm_lksb a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(dlm_ls_lock_wait(h1, LKM_EXMODE, &a, 0, "dt-self", 7, 0,
					  NULL, NULL, NULL), 0);
	assert_int_equal(wait_status(dlm_ls_lock_wait(h1, LKM_EXMODE, &b, 0,
						      "dt-self", 7, 0, NULL,
						      NULL, NULL), &b), EDEADLK);
	assert_int_equal(dlm_ls_unlock_wait(h1, a.sb_lkid, 0, &a), 0);
}

static void test_parent(void **state)
{
	struct rec p, c1, p2, c2, c3;

	rec_init(&c1);
	rec_init(&p2);
	rec_init(&c2);
	rec_init(&c3);
	lock_granted(h1, LKM_CRMODE, &p, "parent");
	assert_int_equal(dlm_ls_lock(h1, LKM_EXMODE, &c1.r_lksb, 0, "child", 5,
				     p.r_lksb.sb_lkid, comp_ast, &c1, bast_ast, NULL), 0);
	assert_granted(h1, &c1);
	/* Another client's "child" under its own parent on the same parent
	 * resource is the same sub-resource: it conflicts. */
	assert_int_equal(lock_sync(h2, LKM_CRMODE, &p2, 0, "parent"), 0);
	assert_int_equal(dlm_ls_lock(h2, LKM_EXMODE, &c2.r_lksb, LKF_NOQUEUE, "child", 5,
				     p2.r_lksb.sb_lkid, comp_ast, &c2, NULL, NULL), 0);
	assert_int_equal(wait_for(&c2.r_comp, 1, h2, NULL), 0);
	assert_int_equal(c2.r_lksb.sb_status, EAGAIN);
	/* A root resource named "child" is a different resource. */
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &c3, LKF_NOQUEUE, "child"), 0);
	assert_int_equal(unlock_sync(h2, &c3, 0), EUNLOCK);
	/* A parent with children cannot go first; another's parent: EPERM. */
	assert_int_equal(dlm_ls_unlock(h1, p.r_lksb.sb_lkid, 0, &p.r_lksb, &p), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(dlm_ls_lock(h2, LKM_EXMODE, &c2.r_lksb, 0, "x", 1,
				     p.r_lksb.sb_lkid, comp_ast, &c2, NULL, NULL), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(unlock_sync(h1, &c1, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h1, &p, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h2, &p2, 0), EUNLOCK);
}

/* A deep tree, as the established sublocks example builds one (it
 * stopped at the fifth level with EINVAL): a chain DEEP_LEVELS long with
 * SUBLOCKS children at the bottom; the same path from another handle is
 * the same resource; unlocked bottom up; then built again on a handle
 * that is closed with it all held (the daemon purges the tree). */
#define DEEP_LEVELS	40
#define SUBLOCKS	3

static int lock_under(dlm_lshandle_t h, int mode, struct rec *r, uint32_t flags,
		      const char *name, uint32_t parent)
{
	int want = r->r_comp + 1;

	assert_int_equal(dlm_ls_lock(h, (uint32_t)mode, &r->r_lksb, flags, name,
				     (unsigned int)strlen(name), parent, comp_ast,
				     r, bast_ast, NULL), 0);
	assert_int_equal(wait_for(&r->r_comp, want, h, NULL), 0);
	return r->r_lksb.sb_status;
}

static void test_parent_deep(void **state)
{
	static struct rec chain[DEEP_LEVELS], leaf[SUBLOCKS], other[DEEP_LEVELS + 1];
	char name[16];
	dlm_lshandle_t h4;
	struct rec x;
	uint32_t parent = 0;
	int i;

	for (i = 0; i < DEEP_LEVELS; i++) {
		rec_init(&chain[i]);
		snprintf(name, sizeof(name), "level%d", i);
		assert_int_equal(lock_under(h1, LKM_CRMODE, &chain[i], 0, name, parent), 0);
		parent = chain[i].r_lksb.sb_lkid;
	}
	for (i = 0; i < SUBLOCKS; i++) {
		rec_init(&leaf[i]);
		snprintf(name, sizeof(name), "leaf%d", i);
		assert_int_equal(lock_under(h1, LKM_EXMODE, &leaf[i], 0, name, parent), 0);
	}
	/* h2 walks the same path: compatible all the way, then the leaf
	 * is the same resource (EX held: EAGAIN), another name is not */
	parent = 0;
	for (i = 0; i < DEEP_LEVELS; i++) {
		rec_init(&other[i]);
		snprintf(name, sizeof(name), "level%d", i);
		assert_int_equal(lock_under(h2, LKM_CRMODE, &other[i], 0, name, parent), 0);
		parent = other[i].r_lksb.sb_lkid;
	}
	rec_init(&other[DEEP_LEVELS]);
	assert_int_equal(lock_under(h2, LKM_EXMODE, &other[DEEP_LEVELS], LKF_NOQUEUE,
				    "leaf1", parent), EAGAIN);
	assert_int_equal(lock_under(h2, LKM_EXMODE, &other[DEEP_LEVELS], LKF_NOQUEUE,
				    "leaf9", parent), 0);
	/* a parent with children still cannot go first */
	assert_int_equal(dlm_ls_unlock(h1, chain[DEEP_LEVELS - 1].r_lksb.sb_lkid, 0,
				       &chain[DEEP_LEVELS - 1].r_lksb, NULL), -1);
	assert_int_equal(errno, EBUSY);
	for (i = SUBLOCKS - 1; i >= 0; i--)
		assert_int_equal(unlock_sync(h1, &leaf[i], 0), EUNLOCK);
	for (i = DEEP_LEVELS - 1; i >= 0; i--)
		assert_int_equal(unlock_sync(h1, &chain[i], 0), EUNLOCK);
	assert_int_equal(unlock_sync(h2, &other[DEEP_LEVELS], 0), EUNLOCK);
	for (i = DEEP_LEVELS - 1; i >= 0; i--)
		assert_int_equal(unlock_sync(h2, &other[i], 0), EUNLOCK);

	/* closed with a deep EX tree held: all of it goes */
	h4 = dlm_open_lockspace(LS_NAME);
	assert_non_null(h4);
	parent = 0;
	for (i = 0; i < DEEP_LEVELS; i++) {
		rec_init(&chain[i]);
		snprintf(name, sizeof(name), "level%d", i);
		assert_int_equal(lock_under(h4, LKM_EXMODE, &chain[i], 0, name, parent), 0);
		parent = chain[i].r_lksb.sb_lkid;
	}
	rec_init(&x);
	assert_int_equal(lock(h2, LKM_EXMODE, &x, 0, "level0", NULL), 0);
	assert_int_equal(dlm_close_lockspace(h4), 0);
	assert_granted(h2, &x);
	assert_int_equal(unlock_sync(h2, &x, 0), EUNLOCK);
}

static void test_range(void **state)
{
	struct dlm_range r0 = { 0, 99 }, r1 = { 100, 199 }, r2 = { 50, 150 },
			 bad = { 10, 5 };
	struct rec a, b, c;

	rec_init(&a);
	rec_init(&b);
	rec_init(&c);
	assert_int_equal(lock(h1, LKM_EXMODE, &a, 0, "range", &r0), 0);
	assert_granted(h1, &a);
	assert_int_equal(lock(h2, LKM_EXMODE, &b, LKF_NOQUEUE, "range", &r1), 0);
	assert_int_equal(wait_for(&b.r_comp, 1, h2, NULL), 0);
	assert_int_equal(b.r_lksb.sb_status, 0);	/* disjoint */
	assert_int_equal(lock(h3, LKM_EXMODE, &c, LKF_NOQUEUE, "range", &r2), 0);
	assert_int_equal(wait_for(&c.r_comp, 1, h3, NULL), 0);
	assert_int_equal(c.r_lksb.sb_status, EAGAIN);	/* overlaps both */
	rec_init(&c);
	assert_int_equal(lock(h3, LKM_EXMODE, &c, 0, "range", &bad), -1);
	assert_int_equal(errno, EINVAL);
	/* A whole-resource PR waits for both; granted once they go. */
	assert_int_equal(lock(h3, LKM_PRMODE, &c, 0, "range", NULL), 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_int_equal(c.r_comp, 0);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
	assert_granted(h3, &c);
	assert_int_equal(unlock_sync(h3, &c, 0), EUNLOCK);
}

/* Many threads on one handle, _wait forms, one resource: mutual exclusion
 * is checked with a plain counter only the holder touches. */
static volatile int in_cs;
static volatile long cs_entries;
static volatile int cs_violations;

static void *wait_thread(void *arg)
{
	dlm_lshandle_t h = arg;

	for (int i = 0; i < THREAD_ITERS; i++) {
		struct dlm_lksb lksb;

		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, 0, "threads", 7, 0,
				     NULL, NULL, NULL) || lksb.sb_status) {
			cs_violations++;
			return NULL;
		}
		if (in_cs++)
			cs_violations++;
		cs_entries++;
		in_cs--;
		if (dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb) ||
		    lksb.sb_status != EUNLOCK) {
			cs_violations++;
			return NULL;
		}
	}
	return NULL;
}

static void test_threads_wait(void **state)
{
	pthread_t t[THREADS];
	dlm_lshandle_t hs[2];

	hs[0] = dlm_open_lockspace(LS_NAME);
	hs[1] = dlm_open_lockspace(LS_NAME);
	assert_non_null(hs[0]);
	assert_non_null(hs[1]);
	/* Half the threads share a handle without an AST thread (one of
	 * them reads for all), half share one with dlm_ls_pthread_init. */
	assert_int_equal(dlm_ls_pthread_init(hs[1]), 0);
	assert_int_equal(dlm_ls_pthread_init(hs[1]), -1);
	assert_int_equal(errno, EEXIST);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, wait_thread, hs[i % 2]), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(cs_violations, 0);
	assert_int_equal(cs_entries, THREADS * THREAD_ITERS);
	assert_int_equal(dlm_close_lockspace(hs[0]), 0);
	assert_int_equal(dlm_close_lockspace(hs[1]), 0);
}

static void test_pthread_asts(void **state)
{
	dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);
	struct rec a;
	uint64_t end;

	assert_non_null(h);
	assert_int_equal(dlm_ls_pthread_init(h), 0);
	rec_init(&a);
	assert_int_equal(lock(h, LKM_EXMODE, &a, 0, "pthread", NULL), 0);
	/* The AST thread runs the completion: we only watch. */
	end = now_ms() + AST_TIMEOUT_MS;
	while (!a.r_comp && now_ms() < end)
		usleep(1000);
	assert_int_equal(a.r_comp, 1);
	assert_int_equal(a.r_lksb.sb_status, 0);
	/* A _wait call from a thread that is not the AST thread. */
	assert_int_equal(dlm_ls_unlock_wait(h, a.r_lksb.sb_lkid, 0, &a.r_lksb), 0);
	assert_int_equal(a.r_lksb.sb_status, EUNLOCK);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* The child of test_fork_close_thread: it closes the handle it inherited. */
static int close_plain(dlm_lshandle_t h)
{
	return dlm_close_lockspace(h) ? 1 : 0;
}

/* The fork tests: a child of ours runs child(h) on the handle h it
 * inherited, under an alarm of alarm_s seconds (a hang bound), and
 * exits with its result (no cmocka there: 0 or which step failed); we
 * wait for it, and it must have exited 0. */
static void fork_on_handle(dlm_lshandle_t h, int (*child)(dlm_lshandle_t),
			   unsigned int alarm_s)
{
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(alarm_s);
		_exit(child(h));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/*
 * fork() with an AST thread running: a child that closes the handle it
 * inherited (a daemon's clean-up before it execs, say) leaves its
 * parent's alone, as closing a copy of a device fd does.  The pipe that
 * stops the AST thread is shared with the child, and the child's close
 * wrote to it: the parent's thread stopped, and its next completion AST
 * never ran.
 */
static void test_fork_close_thread(void **state)
{
	dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);
	struct rec a;
	uint64_t end;

	assert_non_null(h);
	assert_int_equal(dlm_ls_pthread_init(h), 0);
	fork_on_handle(h, close_plain, AST_TIMEOUT_MS / 1000);
	rec_init(&a);
	assert_int_equal(lock(h, LKM_EXMODE, &a, 0, "forkclose", NULL), 0);
	/* our AST thread runs the completion: we only watch */
	end = now_ms() + AST_TIMEOUT_MS;
	while (!a.r_comp && now_ms() < end)
		usleep(1000);
	assert_int_equal(a.r_comp, 1);
	assert_int_equal(a.r_lksb.sb_status, 0);
	assert_int_equal(dlm_ls_unlock_wait(h, a.r_lksb.sb_lkid, 0, &a.r_lksb), 0);
	assert_int_equal(a.r_lksb.sb_status, EUNLOCK);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* One async lock and unlock of name on h, as a child can check them
 * (no cmocka there): 0, or which step failed. */
static int lock_unlock_plain(dlm_lshandle_t h, const char *name)
{
	struct rec r;

	rec_init(&r);
	if (lock(h, LKM_EXMODE, &r, 0, name, NULL) ||
	    wait_for(&r.r_comp, 1, h, NULL) || r.r_lksb.sb_status)
		return 1;
	if (dlm_ls_unlock(h, r.r_lksb.sb_lkid, 0, &r.r_lksb, &r) ||
	    wait_for(&r.r_comp, 2, h, NULL) || r.r_lksb.sb_status != EUNLOCK)
		return 2;
	return 0;
}

/* The child of test_fork_shared_handle: 8 lock+unlock pairs on h. */
static int lock_unlock_8(dlm_lshandle_t h)
{
	int rv = 0;

	for (int i = 0; i < 8 && !rv; i++)
		rv = lock_unlock_plain(h, "forkshare-c");
	return rv;
}

/*
 * fork() and a handle used by both, in turn: a child locks and unlocks
 * on the handle it inherited (a worker doing one job), its parent
 * waits, then goes on with the same handle, as a kernel device fd
 * shared across fork allows.  The child's copy of the handle wrote the
 * shared request ring with its own count of the slots, and took ids
 * from the parent's block: the parent took the ring for full (its
 * count behind dlmd's) and waited for room for ever.
 */
static void test_fork_shared_handle(void **state)
{
	dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);

	assert_non_null(h);
	assert_int_equal(lock_unlock_plain(h, "forkshare-p0"), 0);
	fork_on_handle(h, lock_unlock_8, AST_TIMEOUT_MS / 1000 * 2);
	/* a hang bound (the parent's requests waited for room in a ring it
	 * took for full): SIGALRM ends the test */
	alarm(AST_TIMEOUT_MS / 1000 * 2);
	for (int i = 0; i < 8; i++)
		assert_int_equal(lock_unlock_plain(h, "forkshare-p"), 0);
	alarm(0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

static void test_default_lockspace(void **state)
{
	struct dlm_lksb lksb;
	int id1, id2;

	memset(&lksb, 0, sizeof(lksb));
	assert_int_equal(dlm_lock_wait(LKM_EXMODE, &lksb, 0, "dflt", 4, 0, NULL,
				       NULL, NULL), 0);
	assert_int_equal(lksb.sb_status, 0);
	assert_true(dlm_get_fd() >= 0);
	assert_int_equal(lock_resource("dflt", LKM_PRMODE, LKF_NOQUEUE, &id1), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(dlm_unlock_wait(lksb.sb_lkid, 0, &lksb), 0);
	assert_int_equal(lksb.sb_status, EUNLOCK);
	assert_int_equal(lock_resource("dflt", LKM_PRMODE, 0, &id1), 0);
	assert_int_equal(lock_resource("dflt", LKM_PRMODE, 0, &id2), 0);
	/* LKF_CONVERT converts the lock *lockid names (old API): id1 PR ->
	 * EX is refused while id2 holds PR, id2 PR -> NL lets it through. */
	{
		int conv = id1, other = id2;

		assert_int_equal(lock_resource("dflt", LKM_EXMODE,
					       LKF_CONVERT | LKF_NOQUEUE, &conv), -1);
		assert_int_equal(errno, EAGAIN);
		assert_int_equal(conv, id1);
		assert_int_equal(lock_resource("dflt", LKM_NLMODE, LKF_CONVERT,
					       &other), 0);
		assert_int_equal(other, id2);
		assert_int_equal(lock_resource("dflt", LKM_EXMODE,
					       LKF_CONVERT | LKF_NOQUEUE, &conv), 0);
		assert_int_equal(conv, id1);
		conv = 0x7ffffff0;
		assert_int_equal(lock_resource("dflt", LKM_EXMODE, LKF_CONVERT,
					       &conv), -1);
		assert_int_equal(errno, ENOENT);
	}
	assert_int_equal(unlock_resource(id1), 0);
	assert_int_equal(unlock_resource(id2), 0);
	assert_int_equal(unlock_resource(id2), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(dlm_pthread_init(), 0);
	assert_int_equal(dlm_pthread_cleanup(), 0);
	{
		dlm_lshandle_t d = dlm_open_lockspace("default");

		assert_non_null(d);
		assert_int_equal(dlm_release_lockspace("default", d, 1), 0);
	}
}

/* ------------------------------------------------------------------ */
/* clients that die                                                    */
/* ------------------------------------------------------------------ */

/* Fork a child that opens the lockspace, locks 'name' in 'mode' with
 * 'flags' and writes one byte to the pipe once the request was accepted
 * (granted unless 'wait_only'), then sleeps until killed. */
static pid_t child_locker(const char *name, int mode, uint32_t flags, bool wait_only)
{
	int p[2];
	pid_t pid;
	char b;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dlm_lshandle_t h = dlm_open_lockspace(LS_NAME);
		struct dlm_lksb lksb;

		close(p[0]);
		memset(&lksb, 0, sizeof(lksb));
		if (!h)
			_exit(2);
		if (wait_only) {
			if (dlm_ls_lock(h, (uint32_t)mode, &lksb, flags, name,
					(unsigned int)strlen(name), 0, NULL, NULL,
					NULL, NULL))
				_exit(3);
		} else if (dlm_ls_lock_wait(h, (uint32_t)mode, &lksb, flags, name,
					    (unsigned int)strlen(name), 0, NULL,
					    NULL, NULL) || lksb.sb_status) {
			_exit(3);
		}
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		for (int i = 0; i < 600; i++)	/* bounded: the test kills us */
			sleep(1);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	return pid;
}

static void kill_child(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
}

static void test_kill_holder(void **state)
{
	struct rec a;
	pid_t pid = child_locker("killed", LKM_EXMODE, 0, false);

	rec_init(&a);
	assert_int_equal(lock(h1, LKM_EXMODE, &a, 0, "killed", NULL), 0);
	assert_quiet(h1, 100);
	assert_int_equal(a.r_comp, 0);
	kill_child(pid);
	/* The dead client's lock is freed at once: we are granted. */
	assert_granted(h1, &a);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
}

static void test_kill_waiter(void **state)
{
	struct rec a, b;
	pid_t pid;

	rec_init(&b);
	lock_granted(h1, LKM_EXMODE, &a, "killwait");
	pid = child_locker("killwait", LKM_EXMODE, 0, true);
	assert_int_equal(wait_for(&a.r_bast, 1, h1, NULL), 0);
	kill_child(pid);
	/* Give the daemon the close, then check the waiter is gone: after
	 * our unlock a NOQUEUE request must be granted at once. */
	assert_int_equal(lock(h2, LKM_EXMODE, &b, 0, "killwait", NULL), 0);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	assert_granted(h2, &b);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
}

static void test_persistent_orphan(void **state)
{
	struct dlm_lksb lk;
	struct rec a, b;
	pid_t pid;

	/* A killed owner's PERSISTENT lock stays, as an orphan. */
	pid = child_locker("orphan", LKM_EXMODE, LKF_PERSISTENT, false);
	kill_child(pid);
	rec_init(&a);
	assert_int_equal(lock_sync(h1, LKM_PRMODE, &a, LKF_NOQUEUE, "orphan"), EAGAIN);
	/* Adopt it as lvmlockd -A 1 does: AST addresses (void *)1, which
	 * must never be called.  In PR: EAGAIN, the orphan is held in
	 * another mode (lvmlockd retries in the other mode); under a name
	 * nobody left: ENOENT. */
	memset(&lk, 0, sizeof(lk));
	assert_int_equal(dlm_ls_lockx(h1, LKM_PRMODE, &lk,
				      LKF_PERSISTENT | LKF_ORPHAN, "orphan", 6, 0,
				      (void *)1, (void *)1, (void *)1, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(dlm_ls_lockx(h1, LKM_EXMODE, &lk,
				      LKF_PERSISTENT | LKF_ORPHAN, "nobody-left", 11,
				      0, (void *)1, (void *)1, (void *)1, NULL,
				      NULL), -1);
	assert_int_equal(errno, ENOENT);
	/* In EX: adopted at once, the lock id and status in the lksb on
	 * return, and no completion AST (it would call (void *)1). */
	memset(&lk, 0, sizeof(lk));
	lk.sb_status = -1;
	assert_int_equal(dlm_ls_lockx(h1, LKM_EXMODE, &lk,
				      LKF_PERSISTENT | LKF_ORPHAN, "orphan", 6, 0,
				      (void *)1, (void *)1, (void *)1, NULL, NULL), 0);
	assert_int_not_equal(lk.sb_lkid, 0);
	assert_int_equal(lk.sb_status, 0);
	assert_quiet(h1, 100);
	/* the handle goes on working (this crashed: the next wait ran the
	 * adoption's AST), and the adopted lock is ours to convert ... */
	lock_granted(h1, LKM_EXMODE, &b, "after-adopt");
	assert_int_equal(unlock_sync(h1, &b, 0), EUNLOCK);
	rec_init(&a);
	a.r_lksb.sb_lkid = lk.sb_lkid;
	assert_int_equal(lock_sync(h1, LKM_PRMODE, &a, LKF_CONVERT | LKF_PERSISTENT,
				   "orphan"), 0);
	rec_init(&b);
	assert_int_equal(lock_sync(h2, LKM_PRMODE, &b, LKF_NOQUEUE, "orphan"), 0);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
	/* ... and to unlock. */
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);

	/* dlm_ls_lock_wait adopts too, and returns at once. */
	pid = child_locker("orphan", LKM_PRMODE, LKF_PERSISTENT, false);
	kill_child(pid);
	memset(&lk, 0, sizeof(lk));
	assert_int_equal(dlm_ls_lock_wait(h1, LKM_EXMODE, &lk, LKF_ORPHAN, "orphan",
					  6, 0, NULL, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(dlm_ls_lock_wait(h1, LKM_PRMODE, &lk, LKF_ORPHAN, "orphan",
					  6, 0, NULL, NULL, NULL), 0);
	assert_int_equal(lk.sb_status, 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, lk.sb_lkid, 0, &lk), 0);
	assert_int_equal(lk.sb_status, EUNLOCK);

	/* Another orphan, purged by the dead process's pid. */
	pid = child_locker("orphan2", LKM_EXMODE, LKF_PERSISTENT, false);
	kill_child(pid);
	rec_init(&b);
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &b, LKF_NOQUEUE, "orphan2"), EAGAIN);
	assert_int_equal(dlm_ls_purge(h2, 0, (int)pid + 100000), 0);
	rec_init(&b);
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &b, LKF_NOQUEUE, "orphan2"), EAGAIN);
	assert_int_equal(dlm_ls_purge(h2, 0, (int)pid), 0);
	rec_init(&b);
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &b, LKF_NOQUEUE, "orphan2"), 0);
	assert_int_equal(unlock_sync(h2, &b, 0), EUNLOCK);
}

/* Adoption and blocking ASTs.  A request queued behind an orphan sends
 * its blocking AST to nobody; dlmd gives it to an adopter that asked for
 * blocking ASTs, so the waiter is not stuck behind a lock whose new owner
 * never hears of it.  lvmlockd adopts with (void *)1 for both ASTs: that
 * is no routine, so libdlm asks for no blocking ASTs and calls nothing,
 * not the missed one nor any later one (this crashed, calling 1). */
static void test_adopt_bast(void **state)
{
	struct dlm_lksb lk;
	struct rec a, b, c;
	pid_t pid;

	pid = child_locker("adopt-bast", LKM_EXMODE, LKF_PERSISTENT, false);
	kill_child(pid);
	rec_init(&a);
	assert_int_equal(lock(h2, LKM_PRMODE, &a, 0, "adopt-bast", NULL), 0);
	assert_quiet(h2, 100);
	memset(&lk, 0, sizeof(lk));
	assert_int_equal(dlm_ls_lockx(h1, LKM_EXMODE, &lk,
				      LKF_PERSISTENT | LKF_ORPHAN, "adopt-bast", 10,
				      0, (void *)1, (void *)1, (void *)1, NULL, NULL), 0);
	assert_int_equal(lk.sb_status, 0);
	/* read whatever comes, as lvmlockd's next _wait call does */
	settle(h1, 200);
	/* a new conflicting request: still nothing is called */
	rec_init(&b);
	assert_int_equal(lock(h3, LKM_EXMODE, &b, 0, "adopt-bast", NULL), 0);
	settle(h1, 200);
	assert_int_equal(a.r_comp, 0);
	assert_int_equal(b.r_comp, 0);
	/* the adopted lock converts and unlocks with real routines */
	rec_init(&c);
	c.r_lksb.sb_lkid = lk.sb_lkid;
	assert_int_equal(lock_sync(h1, LKM_PRMODE, &c, LKF_CONVERT, "adopt-bast"), 0);
	assert_granted(h2, &a);
	assert_int_equal(unlock_sync(h1, &c, 0), EUNLOCK);
	assert_int_equal(unlock_sync(h2, &a, 0), EUNLOCK);
	assert_granted(h3, &b);
	assert_int_equal(unlock_sync(h3, &b, 0), EUNLOCK);

	/* An adopter with a real blocking AST routine gets the one the
	 * orphan missed (and no completion AST). */
	pid = child_locker("adopt-bast2", LKM_EXMODE, LKF_PERSISTENT, false);
	kill_child(pid);
	rec_init(&a);
	assert_int_equal(lock(h2, LKM_PRMODE, &a, 0, "adopt-bast2", NULL), 0);
	assert_quiet(h2, 100);
	rec_init(&c);
	assert_int_equal(lock(h1, LKM_EXMODE, &c, LKF_PERSISTENT | LKF_ORPHAN,
			      "adopt-bast2", NULL), 0);
	assert_int_equal(c.r_lksb.sb_status, 0);
	assert_int_equal(wait_for(&c.r_bast, 1, h1, NULL), 0);
	assert_ptr_equal(c.r_bast_arg, &c);
	assert_int_equal(c.r_comp, 0);
	assert_int_equal(unlock_sync(h1, &c, 0), EUNLOCK);
	assert_granted(h2, &a);
	assert_int_equal(unlock_sync(h2, &a, 0), EUNLOCK);
}

/* ASTs of purged locks that wait unread on the handle's fd are not run
 * (the kernel frees a purged process's queued callbacks): a's blocking
 * AST (c's request) and b's completion, found by dlm_dispatch() or, with
 * 'by_wait', by the next _wait call on the handle. */
static void purge_unread(bool by_wait)
{
	struct pollfd pfd = { .fd = dlm_ls_get_fd(h1), .events = POLLIN };
	struct dlm_lksb lk;
	struct rec a, b, c;

	rec_init(&b);
	rec_init(&c);
	lock_granted(h1, LKM_EXMODE, &a, "own-bast");
	assert_int_equal(lock(h2, LKM_EXMODE, &c, 0, "own-bast", NULL), 0);
	assert_int_equal(lock(h1, LKM_EXMODE, &b, 0, "own-unread", NULL), 0);
	/* a round trip on h1: the daemon has written both ASTs by now */
	assert_int_equal(dlm_ls_purge(h1, 0, 999999), 0);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(dlm_ls_purge(h1, 0, (int)getpid()), 0);
	if (by_wait) {
		memset(&lk, 0, sizeof(lk));
		assert_int_equal(dlm_ls_lock_wait(h1, LKM_NLMODE, &lk, 0, "own-wait",
						  8, 0, NULL, NULL, NULL), 0);
		assert_int_equal(lk.sb_status, 0);
		assert_int_equal(dlm_ls_unlock_wait(h1, lk.sb_lkid, 0, &lk), 0);
	}
	settle(h1, 200);
	assert_int_equal(a.r_bast, 0);
	assert_int_equal(b.r_comp, 0);
	/* c gets the lock a held; h1's ASTs made after the purge do run */
	assert_granted(h2, &c);
	rec_init(&a);
	assert_int_equal(lock(h1, LKM_PRMODE, &a, 0, "own-bast", NULL), 0);
	assert_int_equal(wait_for(&c.r_bast, 1, h2, NULL), 0);
	assert_int_equal(unlock_sync(h2, &c, 0), EUNLOCK);
	assert_granted(h1, &a);
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
}

/* dlm_ls_purge with the caller's own pid, as the kernel does it: the
 * caller's locks on that handle go, PERSISTENT ones too (no orphan), with
 * no AST; the process's other handles keep theirs. */
static void test_purge_own(void **state)
{
	struct rec a, b, c, d;

	rec_init(&b);
	rec_init(&c);
	lock_granted(h1, LKM_EXMODE, &a, "own-plain");
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &b, LKF_PERSISTENT, "own-pers"), 0);
	assert_int_equal(lock_sync(h2, LKM_EXMODE, &c, 0, "own-other"), 0);
	assert_int_equal(dlm_ls_purge(h1, 0, (int)getpid()), 0);
	assert_quiet(h1, 100);
	assert_int_equal(a.r_comp, 1);
	assert_int_equal(b.r_comp, 1);
	/* both free (not orphaned): granted at once elsewhere */
	rec_init(&d);
	assert_int_equal(lock_sync(h3, LKM_EXMODE, &d, LKF_NOQUEUE, "own-plain"), 0);
	assert_int_equal(unlock_sync(h3, &d, 0), EUNLOCK);
	rec_init(&d);
	assert_int_equal(lock_sync(h3, LKM_EXMODE, &d, LKF_NOQUEUE, "own-pers"), 0);
	assert_int_equal(unlock_sync(h3, &d, 0), EUNLOCK);
	/* the lock ids are gone; h2's lock stays */
	assert_int_equal(dlm_ls_unlock(h1, a.r_lksb.sb_lkid, 0, &a.r_lksb, &a), -1);
	rec_init(&d);
	assert_int_equal(lock_sync(h3, LKM_EXMODE, &d, LKF_NOQUEUE, "own-other"), EAGAIN);
	assert_int_equal(unlock_sync(h2, &c, 0), EUNLOCK);
	/* h1 goes on working */
	lock_granted(h1, LKM_EXMODE, &a, "own-plain");
	assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);

	purge_unread(false);
	purge_unread(true);
}

/* ------------------------------------------------------------------ */
/* orphans keep their owner                                            */
/* ------------------------------------------------------------------ */

#define NOBODY		65534		/* the unprivileged users of these tests */
#define OTHER_UID	1		/* "daemon": another unprivileged user */
#define OWN_LS		"orphan-owner"	/* mode 0666: open to everyone */

/* In a child: become uid/gid with supplementary group NOBODY (the test
 * harness's socket group), or stay root for uid 0. */
static void become(uid_t uid, gid_t gid)
{
	gid_t grp = NOBODY;

	if (uid == 0)
		return;
	if (setgroups(1, &grp) || setgid(gid) || setuid(uid))
		_exit(100);
}

/* Fork a child that, as uid/gid, holds a PERSISTENT EX lock on 'name' in
 * OWN_LS, then is killed: its lock becomes an orphan.  Returns its pid. */
static pid_t make_orphan(const char *name, uid_t uid, gid_t gid)
{
	int p[2];
	pid_t pid;
	char b;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dlm_lshandle_t h;
		struct dlm_lksb lksb;

		close(p[0]);
		become(uid, gid);
		h = dlm_open_lockspace(OWN_LS);
		memset(&lksb, 0, sizeof(lksb));
		if (!h || dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, LKF_PERSISTENT, name,
					   (unsigned int)strlen(name), 0, NULL, NULL,
					   NULL) || lksb.sb_status)
			_exit(3);
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		for (int i = 0; i < 600; i++)	/* bounded: the test kills us */
			sleep(1);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	kill_child(pid);
	return pid;
}

/* Is there still an EX holder (the orphan) on 'name'? */
static bool orphan_there(dlm_lshandle_t h, const char *name)
{
	struct rec r;
	int st;

	rec_init(&r);
	st = lock_sync(h, LKM_EXMODE, &r, LKF_NOQUEUE, name);
	if (st == 0)
		assert_int_equal(unlock_sync(h, &r, 0), EUNLOCK);
	return st == EAGAIN;
}

/* One try, as uid/gid in a child: adopt 'name' in EX (pid 0) or purge
 * pid's orphans (pid > 0; -1: all of them).  Returns the child's result:
 * 0 done, else the errno of the refusal (200 + step on other trouble). */
static int try_as(uid_t uid, gid_t gid, const char *name, int pid)
{
	pid_t child = fork();
	int st;

	assert_true(child >= 0);
	if (child == 0) {
		dlm_lshandle_t h;
		struct dlm_lksb lksb;

		become(uid, gid);
		h = dlm_open_lockspace(OWN_LS);
		if (!h)
			_exit(201);
		memset(&lksb, 0, sizeof(lksb));
		if (pid == 0) {
			if (dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, LKF_ORPHAN, name,
					     (unsigned int)strlen(name), 0, NULL,
					     NULL, NULL))
				_exit(errno);
			if (lksb.sb_status)
				_exit(202);
			if (dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb) ||
			    lksb.sb_status != EUNLOCK)
				_exit(203);
			_exit(0);
		}
		if (dlm_ls_purge(h, 0, pid < 0 ? 0 : pid))
			_exit(errno);
		_exit(0);
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Adopting or purging an orphan needs the uid of the owner that left it,
 * or the admin privilege (root here): in a lockspace open to everyone,
 * nobody may not take root's orphan nor purge it, and another user may
 * not take nobody's. */
static void test_orphan_owner(void **state)
{
	dlm_lshandle_t ls = dlm_new_lockspace(OWN_LS, 0666, 0);
	pid_t root_pid, nobody_pid;

	assert_non_null(ls);
	root_pid = make_orphan("root-orphan", 0, 0);
	assert_true(orphan_there(ls, "root-orphan"));
	assert_int_equal(try_as(NOBODY, NOBODY, "root-orphan", 0), EPERM);
	assert_int_equal(try_as(NOBODY, NOBODY, NULL, (int)root_pid), EPERM);
	assert_int_equal(try_as(NOBODY, NOBODY, NULL, -1), 0);	/* none of its own */
	assert_true(orphan_there(ls, "root-orphan"));

	/* nobody's orphans: not another user's to take or purge ... */
	nobody_pid = make_orphan("nobody-orphan", NOBODY, NOBODY);
	assert_int_equal(try_as(OTHER_UID, OTHER_UID, "nobody-orphan", 0), EPERM);
	assert_int_equal(try_as(OTHER_UID, OTHER_UID, NULL, (int)nobody_pid), EPERM);
	assert_int_equal(try_as(OTHER_UID, OTHER_UID, NULL, -1), 0);
	assert_true(orphan_there(ls, "nobody-orphan"));
	/* ... but nobody's own: adopted, and purged by pid and all. */
	assert_int_equal(try_as(NOBODY, NOBODY, "nobody-orphan", 0), 0);
	assert_false(orphan_there(ls, "nobody-orphan"));
	nobody_pid = make_orphan("nobody-orphan", NOBODY, NOBODY);
	assert_int_equal(try_as(NOBODY, NOBODY, NULL, (int)nobody_pid), 0);
	assert_false(orphan_there(ls, "nobody-orphan"));
	make_orphan("nobody-orphan", NOBODY, NOBODY);
	assert_int_equal(try_as(NOBODY, NOBODY, NULL, -1), 0);
	assert_false(orphan_there(ls, "nobody-orphan"));
	assert_true(orphan_there(ls, "root-orphan"));

	/* The admin (root) takes anyone's. */
	make_orphan("nobody-orphan", NOBODY, NOBODY);
	assert_int_equal(try_as(0, 0, "nobody-orphan", 0), 0);
	assert_int_equal(try_as(0, 0, NULL, (int)root_pid), 0);
	assert_false(orphan_there(ls, "root-orphan"));
	assert_int_equal(dlm_release_lockspace(OWN_LS, ls, 1), 0);
}

/* ------------------------------------------------------------------ */
/* requests in flight, completion in the answer (protocol 2, issue 14) */
/* ------------------------------------------------------------------ */

/* A _wait lock in a thread of its own, to be watched from outside. */
struct waiting_lock {
	dlm_lshandle_t		wl_h;
	const char		*wl_name;
	uint32_t		wl_flags;
	struct dlm_lksb		wl_lksb;
	int			wl_rv;
	int			wl_errno;
	volatile int		wl_done;
	pthread_t		wl_thread;
};

static void *waiting_lock_thread(void *arg)
{
	struct waiting_lock *wl = arg;

	errno = 0;
	wl->wl_rv = dlm_ls_lock_wait(wl->wl_h, LKM_EXMODE, &wl->wl_lksb,
				     wl->wl_flags, wl->wl_name,
				     (unsigned int)strlen(wl->wl_name), 0, NULL,
				     NULL, NULL);
	wl->wl_errno = errno;
	__atomic_store_n(&wl->wl_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Start a _wait lock that must block; returns once dlmd told it its lock
 * id (the interim answer) and it still waits. */
static void waiting_lock_start(struct waiting_lock *wl, dlm_lshandle_t h,
			       const char *name)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;

	memset(wl, 0, sizeof(*wl));
	wl->wl_h = h;
	wl->wl_name = name;
	assert_int_equal(pthread_create(&wl->wl_thread, NULL, waiting_lock_thread,
					wl), 0);
	while (!__atomic_load_n(&wl->wl_lksb.sb_lkid, __ATOMIC_ACQUIRE) &&
	       now_ms() < end)
		usleep(1000);
	assert_int_not_equal(wl->wl_lksb.sb_lkid, 0);
	usleep(20000);	/* it must not return: short is safe (see the top) */
	assert_int_equal(wl->wl_done, 0);
	assert_int_equal(wl->wl_lksb.sb_status, EINPROG);
}

/* Wait (bounded) for the waiting lock's call to return. */
static void waiting_lock_join(struct waiting_lock *wl)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;

	while (!__atomic_load_n(&wl->wl_done, __ATOMIC_ACQUIRE) && now_ms() < end)
		usleep(1000);
	assert_int_equal(wl->wl_done, 1);
	pthread_join(wl->wl_thread, NULL);
}

#define PIPE_THREADS	8
#define PIPE_PAIRS	50

struct pair_thread {
	dlm_lshandle_t	pt_h;
	char		pt_name[32];
	int		pt_ok;
};

static void *pair_thread(void *arg)
{
	struct pair_thread *pt = arg;

	for (int i = 0; i < PIPE_PAIRS; i++) {
		struct dlm_lksb lksb;

		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(pt->pt_h, LKM_EXMODE, &lksb, 0, pt->pt_name,
				     (unsigned int)strlen(pt->pt_name), 0, NULL,
				     NULL, NULL) || lksb.sb_status || !lksb.sb_lkid)
			return NULL;
		if (dlm_ls_unlock_wait(pt->pt_h, lksb.sb_lkid, 0, &lksb) ||
		    lksb.sb_status != EUNLOCK)
			return NULL;
	}
	pt->pt_ok = 1;
	return NULL;
}

/* Many threads on one handle have requests in flight together and their
 * answers come in another order than the requests: a _wait lock that
 * blocks does not hold up the threads behind it on the same handle, nor
 * an async request, and completes when its blocker goes. */
static void test_pipelined(void **state)
{
	dlm_lshandle_t hp;
	struct pair_thread pt[PIPE_THREADS];
	pthread_t t[PIPE_THREADS];
	struct waiting_lock wl;
	struct rec blocker, a;
	uint32_t interim;

	hp = open_blocked(&blocker, "pipe-block");
	waiting_lock_start(&wl, hp, "pipe-block");
	interim = wl.wl_lksb.sb_lkid;
	for (int i = 0; i < PIPE_THREADS; i++) {
		pt[i].pt_h = hp;
		pt[i].pt_ok = 0;
		snprintf(pt[i].pt_name, sizeof(pt[i].pt_name), "pipe-%d", i);
		assert_int_equal(pthread_create(&t[i], NULL, pair_thread, &pt[i]), 0);
	}
	/* an async request on the same handle meanwhile */
	rec_init(&a);
	assert_int_equal(lock(hp, LKM_PRMODE, &a, 0, "pipe-async", NULL), 0);
	assert_int_not_equal(a.r_lksb.sb_lkid, 0);
	assert_granted(hp, &a);
	for (int i = 0; i < PIPE_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(pt[i].pt_ok, 1);
	}
	/* all of that was answered while the first request still waits */
	assert_int_equal(wl.wl_done, 0);
	assert_int_equal(wl.wl_lksb.sb_status, EINPROG);
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	waiting_lock_join(&wl);
	assert_int_equal(wl.wl_rv, 0);
	assert_int_equal(wl.wl_lksb.sb_status, 0);
	assert_int_equal(wl.wl_lksb.sb_lkid, interim);
	/* its completion came in its answer: no AST for it on the socket */
	assert_quiet(hp, 100);
	assert_int_equal(dlm_ls_unlock_wait(hp, wl.wl_lksb.sb_lkid, 0, &wl.wl_lksb), 0);
	assert_int_equal(wl.wl_lksb.sb_status, EUNLOCK);
	assert_int_equal(unlock_sync(hp, &a, 0), EUNLOCK);
	assert_int_equal(dlm_close_lockspace(hp), 0);
}

/* A waiting _wait lock ended from another thread of its handle: by an
 * async cancel, by a _wait cancel (both calls get ECANCEL), and by a
 * purge of the handle's own locks; a NOQUEUE _wait lock gets EAGAIN. */
static void test_sync_cancel(void **state)
{
	dlm_lshandle_t hp;
	struct waiting_lock wl;
	struct dlm_lksb cl, nq;
	struct rec blocker;

	hp = open_blocked(&blocker, "cancel-block");

	waiting_lock_start(&wl, hp, "cancel-block");
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(dlm_ls_unlock(hp, wl.wl_lksb.sb_lkid, LKF_CANCEL, &cl, NULL), 0);
	waiting_lock_join(&wl);
	assert_int_equal(wl.wl_rv, 0);
	assert_int_equal(wl.wl_lksb.sb_status, ECANCEL);
	assert_quiet(hp, 100);	/* the waiter had the completion */

	waiting_lock_start(&wl, hp, "cancel-block");
	memset(&cl, 0, sizeof(cl));
	assert_int_equal(dlm_ls_unlock_wait(hp, wl.wl_lksb.sb_lkid, LKF_CANCEL, &cl), 0);
	assert_int_equal(cl.sb_status, ECANCEL);
	waiting_lock_join(&wl);
	assert_int_equal(wl.wl_rv, 0);
	assert_int_equal(wl.wl_lksb.sb_status, ECANCEL);
	assert_quiet(hp, 100);

	memset(&nq, 0, sizeof(nq));
	assert_int_equal(dlm_ls_lock_wait(hp, LKM_EXMODE, &nq, LKF_NOQUEUE,
					  "cancel-block", 12, 0, NULL, NULL, NULL), 0);
	assert_int_equal(nq.sb_status, EAGAIN);

	waiting_lock_start(&wl, hp, "cancel-block");
	assert_int_equal(dlm_ls_purge(hp, 0, (int)getpid()), 0);
	waiting_lock_join(&wl);
	assert_int_equal(wl.wl_rv, 0);
	assert_int_equal(wl.wl_lksb.sb_status, ECANCEL);

	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	assert_int_equal(dlm_close_lockspace(hp), 0);
}

struct sync_convert {
	dlm_lshandle_t	sc_h;
	struct dlm_lksb	*sc_lksb;
	uint32_t	sc_flags;
	int		sc_rv;
	volatile int	sc_done;
};

static void *sync_convert_thread(void *arg)
{
	struct sync_convert *sc = arg;

	sc->sc_rv = dlm_ls_lock_wait(sc->sc_h, LKM_EXMODE, sc->sc_lksb,
				     LKF_CONVERT | sc->sc_flags, NULL, 0, 0, NULL,
				     NULL, NULL);
	__atomic_store_n(&sc->sc_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Conversions and value blocks through the _wait forms: the flags
 * (DEMOTED) and the LVB come in the completion the answer carries. */
static void test_sync_convert_lvb(void **state)
{
	struct dlm_lksb a, b;
	struct sync_convert sc;
	struct rec ar;
	char lvb[DLM_LVB_LEN], got[DLM_LVB_LEN];
	pthread_t t;
	uint64_t end;

	/* CONVDEADLK: b's conversion closes a cycle, b is demoted to NL so
	 * that a's (async) conversion is granted, and b's waits on */
	rec_init(&ar);
	memset(&b, 0, sizeof(b));
	assert_int_equal(lock_sync(h1, LKM_PRMODE, &ar, 0, "sdl"), 0);
	assert_int_equal(dlm_ls_lock_wait(h2, LKM_PRMODE, &b, 0, "sdl", 3, 0, NULL,
					  NULL, NULL), 0);
	assert_int_equal(b.sb_status, 0);
	assert_int_equal(lock(h1, LKM_EXMODE, &ar, LKF_CONVERT, "sdl", NULL), 0);
	memset(&sc, 0, sizeof(sc));
	sc.sc_h = h2;
	sc.sc_lksb = &b;
	sc.sc_flags = LKF_CONVDEADLK;
	assert_int_equal(pthread_create(&t, NULL, sync_convert_thread, &sc), 0);
	assert_int_equal(wait_for(&ar.r_comp, 2, h1, NULL), 0);
	assert_int_equal(ar.r_lksb.sb_status, 0);
	usleep(20000);	/* it must not return: short is safe (see the top) */
	assert_int_equal(sc.sc_done, 0);
	assert_int_equal(unlock_sync(h1, &ar, 0), EUNLOCK);
	end = now_ms() + AST_TIMEOUT_MS;
	while (!__atomic_load_n(&sc.sc_done, __ATOMIC_ACQUIRE) && now_ms() < end)
		usleep(1000);
	pthread_join(t, NULL);
	assert_int_equal(sc.sc_rv, 0);
	assert_int_equal(b.sb_status, 0);
	assert_true(b.sb_flags & DLM_SBF_DEMOTED);
	assert_int_equal(dlm_ls_unlock_wait(h2, b.sb_lkid, 0, &b), 0);
	assert_int_equal(b.sb_status, EUNLOCK);

	/* without CONVDEADLK the closing conversion fails at once */
	rec_init(&ar);
	memset(&b, 0, sizeof(b));
	assert_int_equal(lock_sync(h1, LKM_PRMODE, &ar, 0, "sdl2"), 0);
	assert_int_equal(dlm_ls_lock_wait(h2, LKM_PRMODE, &b, 0, "sdl2", 4, 0, NULL,
					  NULL, NULL), 0);
	assert_int_equal(lock(h1, LKM_EXMODE, &ar, LKF_CONVERT, "sdl2", NULL), 0);
	assert_int_equal(dlm_ls_lock_wait(h2, LKM_EXMODE, &b, LKF_CONVERT, NULL, 0, 0,
					  NULL, NULL, NULL), 0);
	assert_int_equal(b.sb_status, EDEADLK);
	assert_int_equal(dlm_ls_unlock_wait(h2, b.sb_lkid, 0, &b), 0);
	assert_int_equal(wait_for(&ar.r_comp, 2, h1, NULL), 0);
	assert_int_equal(ar.r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(h1, &ar, 0), EUNLOCK);

	/* the value block, written by an EX unlock, read by a PR lock */
	memset(&a, 0, sizeof(a));
	memset(lvb, 0, sizeof(lvb));
	a.sb_lvbptr = lvb;
	assert_int_equal(dlm_ls_lock_wait(h1, LKM_EXMODE, &a, LKF_VALBLK, "slvb", 4,
					  0, NULL, NULL, NULL), 0);
	assert_int_equal(a.sb_status, 0);
	memcpy(lvb, "sync value block, 32 bytes long", DLM_LVB_LEN);
	assert_int_equal(dlm_ls_unlock_wait(h1, a.sb_lkid, LKF_VALBLK, &a), 0);
	assert_int_equal(a.sb_status, EUNLOCK);
	memset(&b, 0, sizeof(b));
	memset(got, 0, sizeof(got));
	b.sb_lvbptr = got;
	assert_int_equal(dlm_ls_lock_wait(h2, LKM_PRMODE, &b, LKF_VALBLK, "slvb", 4,
					  0, NULL, NULL, NULL), 0);
	assert_int_equal(b.sb_status, 0);
	assert_memory_equal(got, "sync value block, 32 bytes long", DLM_LVB_LEN);
	assert_int_equal(dlm_ls_unlock_wait(h2, b.sb_lkid, 0, &b), 0);
	assert_quiet(h1, 50);
	assert_quiet(h2, 50);
}

#define FLIGHT_THREADS	(DLMP_MAX_HELD + 44)

struct flight {
	dlm_lshandle_t	fl_h;
	struct dlm_lksb	fl_lksb;
	int		fl_rv;
	int		fl_errno;
};

static void *flight_thread(void *arg)
{
	struct flight *fl = arg;

	errno = 0;
	fl->fl_rv = dlm_ls_lock_wait(fl->fl_h, LKM_PRMODE, &fl->fl_lksb, 0,
				     "flight-block", 12, 0, NULL, NULL, NULL);
	fl->fl_errno = errno;
	return NULL;
}

/* More _wait calls waiting on one handle than dlmd holds answers for a
 * connection: libdlm keeps the excess until there is room, so none is
 * refused (ENOBUFS), and all are granted once the blocker goes. */
static void test_inflight_cap(void **state)
{
	static struct flight fl[FLIGHT_THREADS];
	static pthread_t t[FLIGHT_THREADS];
	dlm_lshandle_t hp;
	pthread_attr_t attr;
	struct rec blocker;

	hp = open_blocked(&blocker, "flight-block");
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
	for (int i = 0; i < FLIGHT_THREADS; i++) {
		memset(&fl[i], 0, sizeof(fl[i]));
		fl[i].fl_h = hp;
		assert_int_equal(pthread_create(&t[i], &attr, flight_thread, &fl[i]), 0);
	}
	pthread_attr_destroy(&attr);
	/* most threads wait by now; one that comes later is granted at
	 * once, which the checks below accept as well */
	usleep(300000);
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	for (int i = 0; i < FLIGHT_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(fl[i].fl_rv, 0);
		assert_int_equal(fl[i].fl_lksb.sb_status, 0);
	}
	for (int i = 0; i < FLIGHT_THREADS; i++)
		assert_int_equal(dlm_ls_unlock_wait(hp, fl[i].fl_lksb.sb_lkid, 0,
						    &fl[i].fl_lksb), 0);
	assert_int_equal(dlm_close_lockspace(hp), 0);
}

/* An async own-id lock (dlm_ls_lock) while a _wait call of the same
 * handle waits for room to send: DLMP_MAX_HELD _wait locks in flight,
 * all queued behind a blocker, and one more that picked its id and waits
 * for a slot.  The async lock goes out at once and is granted; libdlm
 * held the handle's id mutex across that slot wait, so the async lock
 * waited for the blocker's release, which this caller (the blocker's
 * holder here) was to do only after it: a deadlock, turned into a
 * failure by the bounded join below. */
#define SLOT_THREADS	(DLMP_MAX_HELD + 1)

struct async_try {
	dlm_lshandle_t	at_h;
	struct rec	at_rec;
	int		at_rv;
	volatile int	at_done;
};

static void *async_try_thread(void *arg)
{
	struct async_try *at = arg;

	at->at_rv = dlm_ls_lock(at->at_h, LKM_EXMODE, &at->at_rec.r_lksb, 0,
				"slot-free", 9, 0, comp_ast, &at->at_rec, NULL,
				NULL);
	at->at_done = 1;
	return NULL;
}

static void test_async_past_slot_wait(void **state)
{
	static struct flight fl[SLOT_THREADS];
	static pthread_t t[SLOT_THREADS];
	static struct async_try at;
	struct timespec until;
	dlm_lshandle_t hp;
	pthread_attr_t attr;
	pthread_t ta;
	struct rec blocker;
	int joined;

	hp = open_blocked(&blocker, "flight-block");
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
	for (int i = 0; i < SLOT_THREADS; i++) {
		memset(&fl[i], 0, sizeof(fl[i]));
		fl[i].fl_h = hp;
		assert_int_equal(pthread_create(&t[i], &attr, flight_thread, &fl[i]), 0);
	}
	/* every one picked its id (set before it is sent): DLMP_MAX_HELD
	 * are in flight, queued, and the last waits for a slot */
	for (int i = 0; i < SLOT_THREADS; i++) {
		uint64_t end = now_ms() + AST_TIMEOUT_MS;

		while (!*(volatile uint32_t *)&fl[i].fl_lksb.sb_lkid &&
		       now_ms() < end)
			usleep(1000);
		assert_int_not_equal(*(volatile uint32_t *)&fl[i].fl_lksb.sb_lkid, 0);
	}
	memset(&at, 0, sizeof(at));
	at.at_h = hp;
	assert_int_equal(pthread_create(&ta, &attr, async_try_thread, &at), 0);
	pthread_attr_destroy(&attr);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += AST_TIMEOUT_MS / 1000;
	joined = pthread_timedjoin_np(ta, NULL, &until);
	if (joined) {
		/* let it all go before failing */
		unlock_sync(h2, &blocker, 0);
		pthread_join(ta, NULL);
		for (int i = 0; i < SLOT_THREADS; i++)
			pthread_join(t[i], NULL);
		fail_msg("an async lock waited behind a _wait call's slot wait");
	}
	assert_int_equal(at.at_rv, 0);
	assert_granted(hp, &at.at_rec);
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	for (int i = 0; i < SLOT_THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(fl[i].fl_rv, 0);
		assert_int_equal(fl[i].fl_lksb.sb_status, 0);
	}
	for (int i = 0; i < SLOT_THREADS; i++)
		assert_int_equal(dlm_ls_unlock_wait(hp, fl[i].fl_lksb.sb_lkid, 0,
						    &fl[i].fl_lksb), 0);
	assert_int_equal(unlock_sync(hp, &at.at_rec, 0), EUNLOCK);
	assert_int_equal(dlm_close_lockspace(hp), 0);
}

/* A _wait lock outstanding when its lockspace is released by force
 * fails with ENOTCONN instead of waiting for ever. */
static void test_sync_release(void **state)
{
	dlm_lshandle_t hx = dlm_new_lockspace("sync-release", 0600, 0);
	dlm_lshandle_t hw = dlm_open_lockspace("sync-release");
	struct waiting_lock wl;
	struct dlm_lksb held;

	assert_non_null(hx);
	assert_non_null(hw);
	memset(&held, 0, sizeof(held));
	assert_int_equal(dlm_ls_lock_wait(hx, LKM_EXMODE, &held, 0, "rel", 3, 0,
					  NULL, NULL, NULL), 0);
	assert_int_equal(held.sb_status, 0);
	waiting_lock_start(&wl, hw, "rel");
	assert_int_equal(dlm_release_lockspace("sync-release", hx, 1), 0);
	waiting_lock_join(&wl);
	assert_int_equal(wl.wl_rv, -1);
	assert_int_equal(wl.wl_errno, ENOTCONN);
	assert_int_equal(dlm_close_lockspace(hw), 0);
}

/* ------------------------------------------------------------------ */
/* malformed requests, straight on the socket                          */
/* ------------------------------------------------------------------ */

/* Send raw bytes, read the reply; returns its status. */
static int raw_exchange(int fd, const void *buf, size_t len, uint32_t want_reqid)
{
	unsigned char rb[DLMP_MAX_MSG];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct dlmp_msg m;
	ssize_t n;

	assert_int_equal(send(fd, buf, len, 0), (ssize_t)len);
	assert_int_equal(poll(&pfd, 1, AST_TIMEOUT_MS), 1);
	n = recv(fd, rb, sizeof(rb), 0);
	assert_true(n > 0);
	assert_int_equal(dlmp_decode(rb, (size_t)n, &m), 0);
	assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
	assert_int_equal(m.m_hdr.h_reqid, want_reqid);
	return m.m_u.reply.rp_status;
}

/* Read one answer (waiting up to AST_TIMEOUT_MS) into *m; its length. */
static int raw_read(int fd, struct dlmp_msg *m)
{
	unsigned char rb[DLMP_MAX_MSG];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	assert_int_equal(poll(&pfd, 1, AST_TIMEOUT_MS), 1);
	n = recv(fd, rb, sizeof(rb), 0);
	assert_true(n > 0);
	assert_int_equal(dlmp_decode(rb, (size_t)n, m), 0);
	return (int)n;
}

static void test_bad_requests(void **state)
{
	unsigned char buf[DLMP_MAX_MSG * 2];
	struct dlmp_msg m;
	int fd = raw_connect(), len;

	/* A valid VERSION request first. */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	m.m_hdr.h_reqid = 7;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), 0);
	/* Short packet, bad magic. */
	assert_int_equal(raw_exchange(fd, "xy", 2, 0), -EBADMSG);
	buf[0] ^= 0xff;
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EBADMSG);
	buf[0] ^= 0xff;
	/* Unknown version: the reply still echoes the request id. */
	buf[4] = 99;
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EPROTONOSUPPORT);
	/* again: dlmd warns of a client's version once (test-daemon.sh
	 * counts the lines) */
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EPROTONOSUPPORT);
	buf[4] = DLMP_VERSION;
	/* Length field not the packet length. */
	buf[8] = (unsigned char)(len + 1);
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EBADMSG);
	buf[8] = (unsigned char)len;
	/* Unknown type; a reply type sent to the daemon. */
	buf[6] = 200;
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EOPNOTSUPP);
	buf[6] = DLMP_REPLY;
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 7), -EBADMSG);
	buf[6] = DLMP_VERSION_REQ;
	/* Oversized packet. */
	memset(buf + len, 0xaa, sizeof(buf) - (size_t)len);
	assert_int_equal(raw_exchange(fd, buf, sizeof(buf), 7), -EBADMSG);
	/* A LOCK before LS_OPEN. */
	raw_lock_msg(&m, LKM_EXMODE, "x");
	m.m_hdr.h_reqid = 8;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 8), -ENOTCONN);
	/* LOCK whose name length disagrees with the packet. */
	buf[DLMP_HDR_LEN + 1] = 2;
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 8), -EBADMSG);
	/* LS_CREATE of a name with a newline, past libdlm's own check: the
	 * daemon refuses it too (it would write fake lines in its log). */
	raw_ls_msg(&m, DLMP_LS_CREATE, "x\nfake line");
	m.m_hdr.h_reqid = 11;
	m.m_u.ls.ls_mode = 0600;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 11), -EINVAL);
	/* LS_OPEN without the AST socket. */
	raw_ls_msg(&m, DLMP_LS_OPEN, LS_NAME);
	m.m_hdr.h_reqid = 9;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 9), -EBADF);
	/* The connection still works, and so do others. */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	m.m_hdr.h_reqid = 10;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 10), 0);
	close(fd);
	{
		struct rec a;

		rec_init(&a);
		assert_int_equal(lock_sync(h1, LKM_EXMODE, &a, 0, "after-bad"), 0);
		assert_int_equal(unlock_sync(h1, &a, 0), EUNLOCK);
	}
	/* Bad arguments at the API. */
	{
		struct dlm_lksb lksb;
		char name[DLM_RESNAME_MAXLEN + 1];

		memset(&lksb, 0, sizeof(lksb));
		memset(name, 'n', sizeof(name));
		assert_int_equal(dlm_ls_lock(h1, LKM_EXMODE, &lksb, 0, name, sizeof(name),
					     0, comp_ast, NULL, NULL, NULL), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(dlm_ls_lock(h1, 6, &lksb, 0, "m", 1, 0, comp_ast,
					     NULL, NULL, NULL), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(dlm_ls_lock(h1, LKM_EXMODE, &lksb, LKF_TIMEOUT, "m", 1,
					     0, comp_ast, NULL, NULL, NULL), -1);
		assert_int_equal(errno, EINVAL);
		lksb.sb_lkid = 0x7ffffff0;
		assert_int_equal(dlm_ls_lock(h1, LKM_EXMODE, &lksb, LKF_CONVERT, NULL, 0,
					     0, comp_ast, NULL, NULL, NULL), -1);
		assert_int_equal(errno, ENOENT);
	}
}

/*
 * Open LS_NAME through a fake daemon: fake runs in a thread, given the
 * listening socket /tmp/dlmd-<tag>.<pid>.sock that DLMD_SOCKET names for
 * the time of the open.  Returns what dlm_open_lockspace() returned, and
 * its errno in *err; the real daemon is back in DLMD_SOCKET before any
 * assertion, so that a failure does not leave the tests after this one
 * talking to the fake.
 */
static dlm_lshandle_t open_via_fake(const char *tag, void *(*fake)(void *),
				    int *err)
{
	char path[64], *saved = strdup(getenv("DLMD_SOCKET"));
	struct sockaddr_un sa;
	dlm_lshandle_t h;
	pthread_t t;
	int lfd;

	assert_non_null(saved);
	snprintf(path, sizeof(path), "/tmp/dlmd-%s.%d.sock", tag, (int)getpid());
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_true(lfd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(pthread_create(&t, NULL, fake, &lfd), 0);
	setenv("DLMD_SOCKET", path, 1);
	errno = 0;
	h = dlm_open_lockspace(LS_NAME);
	*err = errno;
	setenv("DLMD_SOCKET", saved, 1);
	pthread_join(t, NULL);
	close(lfd);
	unlink(path);
	free(saved);
	return h;
}

/* A daemon that refuses a connection (max_clients_per_uid) sends a REPLY
 * with reqid 0 and closes.  A fake daemon here does it after our request
 * arrived, without reading it, which makes the socket report ECONNRESET
 * before the refusal (the order a busy dlmd can produce): libdlm still
 * returns the refusal's errno, EUSERS. */
static void *fake_refuser(void *arg)
{
	int lfd = *(int *)arg, cfd;
	struct pollfd pfd;
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	int len;

	cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		return NULL;
	pfd.fd = cfd;
	pfd.events = POLLIN;
	poll(&pfd, 1, AST_TIMEOUT_MS);		/* the request is queued */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_REPLY;
	m.m_u.reply.rp_status = -EUSERS;
	len = dlmp_encode(&m, buf, sizeof(buf));
	if (len > 0 && send(cfd, buf, (size_t)len, MSG_NOSIGNAL) != len)
		fprintf(stderr, "fake daemon: send: %s\n", strerror(errno));
	close(cfd);
	return NULL;
}

static void test_refused_connection(void **state)
{
	dlm_lshandle_t h;
	int err;

	h = open_via_fake("refuse", fake_refuser, &err);
	assert_null(h);
	assert_int_equal(err, EUSERS);
}

/* Send request m on raw connection fd with 'pass' attached
 * (SCM_RIGHTS), and read its REPLY into m. */
static void raw_request_fd(int fd, struct dlmp_msg *m, int pass)
{
	uint32_t reqid = m->m_hdr.h_reqid;

	assert_int_equal(raw_send(fd, m, reqid, pass), 0);
	raw_read(fd, m);
	assert_int_equal(m->m_hdr.h_type, DLMP_REPLY);
	assert_int_equal(m->m_hdr.h_reqid, reqid);
}

/* Bind raw connection 'fd' to LS_NAME; returns our end of its AST
 * socket, and in *block and *nids (when not NULL) the block of lock ids
 * reserved for it. */
static int raw_open_ids(int fd, uint32_t reqid, uint32_t *block, uint32_t *nids)
{
	struct dlmp_msg m;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	raw_ls_msg(&m, DLMP_LS_OPEN, LS_NAME);
	m.m_hdr.h_reqid = reqid;
	raw_request_fd(fd, &m, sv[1]);
	close(sv[1]);
	assert_int_equal(m.m_u.reply.rp_status, 0);
	if (block)
		*block = m.m_u.reply.rp_value2;
	if (nids)
		*nids = m.m_u.reply.rp_value3;
	return sv[0];
}

static int raw_open(int fd, uint32_t reqid)
{
	return raw_open_ids(fd, reqid, NULL, NULL);
}

/* A synchronous LOCK with an id of the client's own block (protocol 6)
 * that has to wait gets no interim REPLY: its one answer is the
 * COMP_REPLY when it is granted; one with an id not of the block is
 * refused by a plain REPLY at once, and no AST is written for either. */
static void test_sync_own_id(void **state)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	struct rec blocker;
	struct pollfd pfd;
	uint32_t block = 0, nids = 0;
	int fd = raw_connect(), ast_fd, len;

	(void)state;
	lock_granted(h2, LKM_EXMODE, &blocker, "sync-own-id");
	ast_fd = raw_open_ids(fd, 1, &block, &nids);
	assert_true(block != 0 && nids >= 2);
	raw_lock_msg(&m, LKM_PRMODE, "sync-own-id");
	m.m_hdr.h_reqid = 2;
	m.m_u.lock.lk_bits = DLMP_LK_SYNC | DLMP_LK_NEWID;
	m.m_u.lock.lk_lkid = block;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
	/* an id not of the block: refused at once, as the call's answer */
	m.m_hdr.h_reqid = 3;
	m.m_u.lock.lk_lkid = block + nids;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 3), -EINVAL);
	/* nothing came for the waiting lock before that refusal, and nothing
	 * comes now (the interim REPLY would be here already: it follows
	 * the request's flush; short is safe, see the top) */
	pfd.fd = fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 100), 0);
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_type, DLMP_COMP_REPLY);
	assert_int_equal(m.m_hdr.h_reqid, 2);
	assert_int_equal(m.m_u.comp.cp_status, 0);
	assert_int_equal(m.m_u.comp.cp_lkid, block);
	/* no AST for either */
	pfd.fd = ast_fd;
	assert_int_equal(poll(&pfd, 1, 100), 0);
	close(fd);
	close(ast_fd);
}

/* dlmd holds at most DLMP_MAX_HELD answers per connection: a raw client
 * that pipelines that many waiting _wait locks gets each its interim
 * answer, and the next is refused with ENOBUFS, not performed; a cancel
 * asking to wait is refused too, while one that does not ask is done.
 * When the blocker goes, the held PR locks are granted together and all
 * their answers reach the client (none is lost to a full socket). */
static void test_held_limit(void **state)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	struct rec blocker;
	uint32_t first_lkid = 0;
	int fd = raw_connect(), ast_fd, len, interims = 0;

	lock_granted(h2, LKM_EXMODE, &blocker, "held-limit");
	ast_fd = raw_open(fd, 1);
	for (uint32_t i = 0; i <= DLMP_MAX_HELD; i++) {
		raw_lock_msg(&m, LKM_PRMODE, "held-limit");
		m.m_hdr.h_reqid = 100 + i;
		m.m_u.lock.lk_bits = DLMP_LK_SYNC;
		len = dlmp_encode(&m, buf, sizeof(buf));
		assert_int_equal(send(fd, buf, (size_t)len, 0), len);
	}
	for (uint32_t i = 0; i <= DLMP_MAX_HELD; i++) {
		raw_read(fd, &m);
		assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
		assert_int_equal(m.m_hdr.h_reqid, 100 + i);
		if (i < DLMP_MAX_HELD) {
			assert_int_equal(m.m_u.reply.rp_status, 0);
			assert_int_equal(m.m_u.reply.rp_value2, DLMP_REPLY_HELD);
			if (!first_lkid)
				first_lkid = m.m_u.reply.rp_value;
			interims++;
		} else {
			assert_int_equal(m.m_u.reply.rp_status, -ENOBUFS);
		}
	}
	assert_int_equal(interims, DLMP_MAX_HELD);
	/* a cancel that would be held: refused; an async one: done, and its
	 * completion is the held lock's answer (ECANCEL), not an AST */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_UNLOCK;
	m.m_hdr.h_reqid = 1000;
	m.m_u.unlock.ul_lkid = first_lkid;
	m.m_u.unlock.ul_flags = LKF_CANCEL;
	m.m_u.unlock.ul_bits = DLMP_LK_SYNC;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 1000), -ENOBUFS);
	m.m_hdr.h_reqid = 1001;
	m.m_u.unlock.ul_bits = 0;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
	{
		bool got_reply = false, got_comp = false;

		for (int k = 0; k < 2; k++) {
			raw_read(fd, &m);
			if (m.m_hdr.h_type == DLMP_REPLY) {
				assert_int_equal(m.m_hdr.h_reqid, 1001);
				assert_int_equal(m.m_u.reply.rp_status, 0);
				got_reply = true;
			} else {
				assert_int_equal(m.m_hdr.h_type, DLMP_COMP_REPLY);
				assert_int_equal(m.m_hdr.h_reqid, 100);
				assert_int_equal(m.m_u.comp.cp_status, -ECANCEL);
				assert_int_equal(m.m_u.comp.cp_lkid, first_lkid);
				got_comp = true;
			}
		}
		assert_true(got_reply && got_comp);
	}
	{
		struct pollfd pfd = { .fd = ast_fd, .events = POLLIN };

		/* nothing may come: short is safe (see the top) */
		assert_int_equal(poll(&pfd, 1, 100), 0);
	}
	/* the other DLMP_MAX_HELD - 1 are granted together */
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
	{
		static bool seen[DLMP_MAX_HELD];

		memset(seen, 0, sizeof(seen));
		for (uint32_t i = 1; i < DLMP_MAX_HELD; i++) {
			raw_read(fd, &m);
			assert_int_equal(m.m_hdr.h_type, DLMP_COMP_REPLY);
			assert_int_equal(m.m_u.comp.cp_status, 0);
			assert_true(m.m_hdr.h_reqid > 100 &&
				    m.m_hdr.h_reqid < 100 + DLMP_MAX_HELD);
			assert_false(seen[m.m_hdr.h_reqid - 100]);
			seen[m.m_hdr.h_reqid - 100] = true;
		}
	}
	/* closing drops the granted locks, once dlmd has seen the close:
	 * NOQUEUE EX succeeds (bounded: a hang only) */
	close(fd);
	close(ast_fd);
	{
		uint64_t end = now_ms() + AST_TIMEOUT_MS;
		int rv = EAGAIN;

		while (rv == EAGAIN && now_ms() < end) {
			rec_init(&blocker);
			rv = lock_sync(h2, LKM_EXMODE, &blocker, LKF_NOQUEUE,
				       "held-limit");
			if (rv == EAGAIN)
				usleep(10000);
		}
		assert_int_equal(rv, 0);
	}
	assert_int_equal(unlock_sync(h2, &blocker, 0), EUNLOCK);
}

/* Version 1 (one request at a time, no held answers) and version 2 do
 * not talk: a version-1 request is refused in a version-1 REPLY, which
 * an old libdlm reads as EPROTONOSUPPORT; and libdlm reads an old
 * dlmd's refusal of its request (tested with a fake one) as the same. */
static void *fake_old_dlmd(void *arg)
{
	int lfd = *(int *)arg, cfd;
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m, rq;
	ssize_t n;
	int len;

	cfd = accept(lfd, NULL, NULL);
	if (cfd < 0)
		return NULL;
	n = recv(cfd, buf, sizeof(buf), 0);
	/* what a version-1 dlmd does with any version-2 request */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_REPLY;
	if (n > 0 && dlmp_decode(buf, (size_t)n, &rq) == 0)
		m.m_hdr.h_reqid = rq.m_hdr.h_reqid;
	m.m_u.reply.rp_status = -EPROTONOSUPPORT;
	len = dlmp_encode(&m, buf, sizeof(buf));
	dlmp_set_version(buf, 1);
	if (len > 0 && send(cfd, buf, (size_t)len, MSG_NOSIGNAL) != len)
		fprintf(stderr, "fake old dlmd: send: %s\n", strerror(errno));
	close(cfd);
	return NULL;
}

static void test_version_mismatch(void **state)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	dlm_lshandle_t h;
	int fd = raw_connect(), err, len;
	ssize_t n;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	m.m_hdr.h_reqid = 3;
	len = dlmp_encode(&m, buf, sizeof(buf));
	dlmp_set_version(buf, 1);
	assert_int_equal(send(fd, buf, (size_t)len, 0), len);
	n = recv(fd, buf, sizeof(buf), 0);
	assert_int_equal(n, DLMP_HDR_LEN + DLMP_REPLY_LEN);
	assert_int_equal(dlmp_decode(buf, (size_t)n, &m), -EPROTONOSUPPORT);
	assert_int_equal(m.m_hdr.h_version, 1);
	dlmp_set_version(buf, DLMP_VERSION);	/* the layout is version 1's */
	assert_int_equal(dlmp_decode(buf, (size_t)n, &m), 0);
	assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
	assert_int_equal(m.m_hdr.h_reqid, 3);
	assert_int_equal(m.m_u.reply.rp_status, -EPROTONOSUPPORT);
	close(fd);

	h = open_via_fake("old", fake_old_dlmd, &err);
	assert_null(h);
	assert_int_equal(err, EPROTONOSUPPORT);
}

/* Permissions: an unprivileged client may lock in a lockspace whose mode
 * allows it, may not create or remove lockspaces, and may not open one
 * whose mode excludes it. */
static void test_permissions(void **state)
{
	dlm_lshandle_t open_ls = dlm_new_lockspace("perm-open", 0666, 0);
	dlm_lshandle_t closed_ls = dlm_new_lockspace("perm-closed", 0600, 0);
	pid_t pid;
	int st;

	assert_non_null(open_ls);
	assert_non_null(closed_ls);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dlm_lshandle_t h;
		struct dlm_lksb lksb;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (dlm_new_lockspace("perm-new", 0666, 0) || errno != EPERM)
			_exit(11);
		if (dlm_open_lockspace("perm-closed") || errno != EACCES)
			_exit(12);
		h = dlm_open_lockspace("perm-open");
		if (!h)
			_exit(13);
		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, 0, "p", 1, 0, NULL, NULL,
				     NULL) || lksb.sb_status)
			_exit(14);
		if (dlm_release_lockspace("perm-open", h, 1) == 0 || errno != EPERM)
			_exit(15);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(dlm_release_lockspace("perm-open", open_ls, 1), 0);
	assert_int_equal(dlm_release_lockspace("perm-closed", closed_ls, 1), 0);
}

/* Async locks take their ids from the handle's block (protocol 3, issue
 * 14): dlm_ls_lock returns with sb_lkid set without waiting for dlmd,
 * even while dlmd is stopped; ids stay distinct across blocks and
 * handles, and each completion names its lock. */
#define OWNID_LOCKS	2500	/* crosses two block boundaries */
#define OWNID_STOPPED	10
static struct rec ownid[2][OWNID_LOCKS];
static pid_t ownid_dlmd;

static void ownid_alarm(int sig)
{
	(void)sig;
	kill(ownid_dlmd, SIGCONT);	/* never leave dlmd stopped */
	_exit(1);
}

/* Whether process 'pid' is stopped (state T in /proc/PID/stat). */
static bool proc_stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold spaces and ')' */
	return p && p[1] == ' ' && p[2] == 'T';
}

/* SIGSTOP dlmd and wait until it is stopped: kill() returns before the
 * signal takes it off its CPU, and a dlmd still running took the first
 * request's kick, slept again, and was kicked a second time (seen on a
 * loaded machine: ring_kicks one more than test_ring_requests counts,
 * the second kick read after the count). */
static void ownid_stop(void)
{
	assert_int_equal(kill(ownid_dlmd, SIGSTOP), 0);
	for (int i = 0; i < 10000 && !proc_stopped(ownid_dlmd); i++)
		usleep(1000);
	assert_true(proc_stopped(ownid_dlmd));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Dispatch on h until n records of v have their completion. */
static void wait_all(dlm_lshandle_t h, struct rec *v, int n)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;
	int done = 0;

	while (done < n) {
		struct pollfd pfd = { .fd = dlm_ls_get_fd(h), .events = POLLIN };

		assert_true(now_ms() < end);
		if (poll(&pfd, 1, 100) > 0)
			dlm_dispatch(pfd.fd);
		for (done = 0; done < n && v[done].r_comp; done++)
			;
	}
}

static void test_async_own_ids(void **state)
{
	static uint32_t ids[2 * OWNID_LOCKS];
	dlm_lshandle_t h[2];
	const char *pid = getenv("DLMD_PID_1");
	char name[32];
	int k, i, n = 0;

	(void)state;
	h[0] = dlm_new_lockspace("ls-ownids", 0600, 0);
	assert_non_null(h[0]);
	h[1] = dlm_open_lockspace("ls-ownids");
	assert_non_null(h[1]);
	for (i = 0; i < OWNID_LOCKS; i++) {
		for (k = 0; k < 2; k++) {
			rec_init(&ownid[k][i]);
			snprintf(name, sizeof(name), "own-%d-%d", k, i);
			assert_int_equal(lock(h[k], LKM_NLMODE, &ownid[k][i], 0,
					      name, NULL), 0);
			assert_int_not_equal(ownid[k][i].r_lksb.sb_lkid, 0);
			ids[n++] = ownid[k][i].r_lksb.sb_lkid;
		}
	}
	qsort(ids, (size_t)n, sizeof(ids[0]), cmp_u32);
	for (i = 1; i < n; i++)
		assert_int_not_equal(ids[i - 1], ids[i]);
	for (k = 0; k < 2; k++) {
		wait_all(h[k], ownid[k], OWNID_LOCKS);
		for (i = 0; i < OWNID_LOCKS; i++) {
			assert_int_equal(ownid[k][i].r_lksb.sb_status, 0);
			assert_ptr_equal(ownid[k][i].r_comp_arg, &ownid[k][i]);
		}
	}
	/* dlmd stopped: the calls still return, with their ids */
	if (pid && atoi(pid) > 0) {
		ownid_dlmd = (pid_t)atoi(pid);
		signal(SIGALRM, ownid_alarm);
		alarm(AST_TIMEOUT_MS / 1000 + 1);
		ownid_stop();
		for (i = 0; i < OWNID_STOPPED; i++) {
			rec_init(&ownid[0][i]);
			snprintf(name, sizeof(name), "stopped-%d", i);
			assert_int_equal(lock(h[0], LKM_EXMODE, &ownid[0][i], 0,
					      name, NULL), 0);
			assert_int_not_equal(ownid[0][i].r_lksb.sb_lkid, 0);
			assert_int_equal(ownid[0][i].r_lksb.sb_status, EINPROG);
		}
		assert_int_equal(kill(ownid_dlmd, SIGCONT), 0);
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		wait_all(h[0], ownid[0], OWNID_STOPPED);
		for (i = 0; i < OWNID_STOPPED; i++)
			assert_int_equal(ownid[0][i].r_lksb.sb_status, 0);
	} else {
		print_message("DLMD_PID_1 not set: the stopped-daemon part skipped\n");
	}
	assert_int_equal(dlm_close_lockspace(h[1]), 0);
	assert_int_equal(dlm_release_lockspace("ls-ownids", h[0], 1), 0);
}

/* A raw connection dlmd has accepted (it answered a VERSION_REQ), and
 * in buf (*len bytes) a forced LS_RELEASE of 'ls' with reqid 2, to send
 * on it. */
static int raw_release_conn(const char *ls, unsigned char *buf, int *len)
{
	struct dlmp_msg m;
	int fd = raw_connect();

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	m.m_hdr.h_reqid = 1;
	*len = dlmp_encode(&m, buf, DLMP_MAX_MSG);
	assert_int_equal(raw_exchange(fd, buf, (size_t)*len, 1), 0);	/* accepted */
	raw_ls_msg(&m, DLMP_LS_RELEASE, ls);
	m.m_hdr.h_reqid = 2;
	m.m_u.ls.ls_flags = DLMP_RELEASE_FORCE;
	*len = dlmp_encode(&m, buf, DLMP_MAX_MSG);
	assert_true(*len > 0);
	return fd;
}

/* Async locks (ids of the handle's own) sent after their lockspace was
 * released with force under the handle, before libdlm read dlmd's notice
 * of it: each still completes, with ENOTCONN, never hangs (issue 14).
 * dlmd is stopped while the release (on a connection of its own, sent
 * first) and the locks are queued, so that it handles the release
 * first; without DLMD_PID_1 the locks simply follow the release. */
#define GONE_LOCKS	4
static void test_async_gone(void **state)
{
	static struct rec g[GONE_LOCKS], late;
	unsigned char buf[DLMP_MAX_MSG];
	const char *pid = getenv("DLMD_PID_1");
	dlm_lshandle_t h, o;
	struct dlmp_msg m;
	struct rec held;
	char name[32];
	int fd, len, i, rv;

	(void)state;
	h = dlm_new_lockspace("ls-gone", 0600, 0);
	assert_non_null(h);
	o = dlm_open_lockspace("ls-gone");
	assert_non_null(o);
	rec_init(&held);
	assert_int_equal(lock_sync(o, LKM_EXMODE, &held, 0, "held"), 0);
	fd = raw_release_conn("ls-gone", buf, &len);
	if (pid && atoi(pid) > 0) {
		ownid_dlmd = (pid_t)atoi(pid);
		signal(SIGALRM, ownid_alarm);
		alarm(AST_TIMEOUT_MS / 1000 + 1);
		ownid_stop();
		assert_int_equal(send(fd, buf, (size_t)len, 0), (ssize_t)len);
		for (i = 0; i < GONE_LOCKS; i++) {
			rec_init(&g[i]);
			snprintf(name, sizeof(name), "gone-%d", i);
			assert_int_equal(lock(o, LKM_EXMODE, &g[i], 0, name, NULL), 0);
		}
		assert_int_equal(kill(ownid_dlmd, SIGCONT), 0);
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		raw_read(fd, &m);
		assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
		assert_int_equal(m.m_hdr.h_reqid, 2);
		assert_int_equal(m.m_u.reply.rp_status, 0);
	} else {
		print_message("DLMD_PID_1 not set: the release simply comes first\n");
		assert_int_equal(raw_exchange(fd, buf, (size_t)len, 2), 0);
		for (i = 0; i < GONE_LOCKS; i++) {
			rec_init(&g[i]);
			snprintf(name, sizeof(name), "gone-%d", i);
			rv = lock(o, LKM_EXMODE, &g[i], 0, name, NULL);
			if (rv) {
				assert_int_equal(errno, ENOTCONN);
				g[i].r_comp = 1;	/* refused by the call */
				g[i].r_lksb.sb_status = ENOTCONN;
			}
		}
	}
	close(fd);
	/* bounded: wait_all fails the test after AST_TIMEOUT_MS */
	wait_all(o, g, GONE_LOCKS);
	for (i = 0; i < GONE_LOCKS; i++) {
		assert_int_equal(g[i].r_comp, 1);
		assert_int_equal(g[i].r_lksb.sb_status, ENOTCONN);
	}
	/* Nothing more comes, and a later lock fails at once. */
	assert_int_equal(dlm_dispatch(dlm_ls_get_fd(o)), -1);
	assert_int_equal(errno, ENOTCONN);
	for (i = 0; i < GONE_LOCKS; i++)
		assert_int_equal(g[i].r_comp, 1);
	rec_init(&late);
	assert_int_equal(lock(o, LKM_NLMODE, &late, 0, "late", NULL), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* Async requests that are not new locks of ids of the handle's own (a
 * conversion, a lock under a parent) get a REPLY and then wait in dlmd
 * for their completion.  When the lockspace is released with force from
 * another handle while they wait, each still completes, with ENOTCONN,
 * within a bound, never hangs (issue 14). */
static void test_async_release_old_path(void **state)
{
	static struct rec hold, cv, par, other_par, child_hold, child;
	dlm_lshandle_t h, o, r;

	(void)state;
	h = dlm_new_lockspace("ls-oldpath", 0600, 0);
	assert_non_null(h);
	o = dlm_open_lockspace("ls-oldpath");
	assert_non_null(o);
	rec_init(&hold);
	rec_init(&cv);
	rec_init(&par);
	rec_init(&other_par);
	rec_init(&child_hold);
	rec_init(&child);
	/* o holds EX; h's NL converting to EX waits behind it */
	assert_int_equal(lock_sync(o, LKM_EXMODE, &hold, 0, "cv"), 0);
	assert_int_equal(lock_sync(h, LKM_NLMODE, &cv, 0, "cv"), 0);
	assert_int_equal(lock(h, LKM_EXMODE, &cv, LKF_CONVERT, "cv", NULL), 0);
	/* o holds EX on the sub-resource "child" of "par"; h's lock on it
	 * under its own parent waits */
	assert_int_equal(lock_sync(o, LKM_CRMODE, &other_par, 0, "par"), 0);
	assert_int_equal(lock_under(o, LKM_EXMODE, &child_hold, 0, "child",
				    other_par.r_lksb.sb_lkid), 0);
	assert_int_equal(lock_sync(h, LKM_CRMODE, &par, 0, "par"), 0);
	assert_int_equal(dlm_ls_lock(h, LKM_EXMODE, &child.r_lksb, 0, "child", 5,
				     par.r_lksb.sb_lkid, comp_ast, &child,
				     bast_ast, NULL), 0);
	/* both queued: nothing completes */
	settle(h, 200);
	assert_int_equal(cv.r_comp, 1);
	assert_int_equal(child.r_comp, 0);
	/* released with force from a third handle */
	r = dlm_open_lockspace("ls-oldpath");
	assert_non_null(r);
	assert_int_equal(dlm_release_lockspace("ls-oldpath", r, 1), 0);
	/* bounded: wait_for fails after AST_TIMEOUT_MS */
	assert_int_equal(wait_for(&cv.r_comp, 2, h, NULL), 0);
	assert_int_equal(cv.r_lksb.sb_status, ENOTCONN);
	assert_int_equal(wait_for(&child.r_comp, 1, h, NULL), 0);
	assert_int_equal(child.r_lksb.sb_status, ENOTCONN);
	/* each once: the socket then ends */
	assert_int_equal(dlm_dispatch(dlm_ls_get_fd(h)), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(cv.r_comp, 2);
	assert_int_equal(child.r_comp, 1);
	assert_int_equal(par.r_comp, 1);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* Dispatch h until its AST socket ends (dlm_dispatch fails with
 * ENOTCONN), within ms. */
static void dispatch_to_end(dlm_lshandle_t h, uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = dlm_ls_get_fd(h), .events = POLLIN };

		assert_true(now_ms() < end);
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (dlm_dispatch(pfd.fd) < 0) {
			assert_int_equal(errno, ENOTCONN);
			return;
		}
	}
}

/* Async requests of every kind in flight while the client has stopped
 * reading its AST socket: the socket is full and dlmd's queue for the
 * client holds the rest when the lockspace is released with force from
 * another handle.  Whatever dlmd could not write goes with the socket,
 * its ENOTCONN completions too; still every request gets exactly one
 * completion when the socket is dispatched to its end (issue 14). */
#define FULL_LOCKS	4000	/* granted ASTs: more than the socket holds */
static void test_async_release_full_socket(void **state)
{
	static struct rec fill[FULL_LOCKS], hold, cv, cv2, par, other_par,
		child_hold, child, ul;
	dlm_lshandle_t h, o, r;
	char name[32];
	int i;

	(void)state;
	h = dlm_new_lockspace("ls-fullsock", 0600, 0);
	assert_non_null(h);
	o = dlm_open_lockspace("ls-fullsock");
	assert_non_null(o);
	/* o holds EX of "cv"; h's NL locks there will convert behind it;
	 * o holds EX of "child" under its "par"; h's lock there under its
	 * own "par" will wait */
	rec_init(&hold);
	rec_init(&cv);
	rec_init(&cv2);
	rec_init(&par);
	rec_init(&other_par);
	rec_init(&child_hold);
	rec_init(&child);
	rec_init(&ul);
	assert_int_equal(lock_sync(o, LKM_EXMODE, &hold, 0, "cv"), 0);
	assert_int_equal(lock_sync(h, LKM_NLMODE, &cv, 0, "cv"), 0);
	assert_int_equal(lock_sync(h, LKM_NLMODE, &cv2, 0, "cv"), 0);
	assert_int_equal(lock_sync(o, LKM_CRMODE, &other_par, 0, "par"), 0);
	assert_int_equal(lock_under(o, LKM_EXMODE, &child_hold, 0, "child",
				    other_par.r_lksb.sb_lkid), 0);
	assert_int_equal(lock_sync(h, LKM_CRMODE, &par, 0, "par"), 0);
	/* converted since its grant: libdlm no longer tracks it */
	assert_int_equal(lock_sync(h, LKM_NLMODE, &ul, 0, "ul"), 0);
	assert_int_equal(lock_sync(h, LKM_EXMODE, &ul, LKF_CONVERT, "ul"), 0);

	/* h stops reading: many granted ASTs fill its socket and dlmd's
	 * queue */
	for (i = 0; i < FULL_LOCKS; i++) {
		rec_init(&fill[i]);
		snprintf(name, sizeof(name), "fill-%d", i);
		assert_int_equal(lock(h, LKM_EXMODE, &fill[i], 0, name, NULL), 0);
	}
	/* then requests of the old way, each waiting for its completion */
	assert_int_equal(lock(h, LKM_EXMODE, &cv, LKF_CONVERT, "cv", NULL), 0);
	assert_int_equal(lock(h, LKM_EXMODE, &cv2, LKF_CONVERT, "cv", NULL), 0);
	assert_int_equal(dlm_ls_unlock(h, cv2.r_lksb.sb_lkid, LKF_CANCEL,
				       &cv2.r_lksb, &cv2), 0);
	assert_int_equal(dlm_ls_lock(h, LKM_EXMODE, &child.r_lksb, 0, "child", 5,
				     par.r_lksb.sb_lkid, comp_ast, &child,
				     bast_ast, NULL), 0);
	assert_int_equal(dlm_ls_unlock(h, ul.r_lksb.sb_lkid, 0, &ul.r_lksb, &ul), 0);

	/* released with force from a third handle */
	r = dlm_open_lockspace("ls-fullsock");
	assert_non_null(r);
	assert_int_equal(dlm_release_lockspace("ls-fullsock", r, 1), 0);

	/* dispatched to the socket's end, within a bound */
	dispatch_to_end(h, AST_TIMEOUT_MS);
	for (i = 0; i < FULL_LOCKS; i++) {
		assert_int_equal(fill[i].r_comp, 1);
		if (fill[i].r_lksb.sb_status != 0)
			assert_int_equal(fill[i].r_lksb.sb_status, ENOTCONN);
	}
	/* the first completion of each was its grant */
	assert_int_equal(cv.r_comp, 2);
	assert_int_equal(cv.r_lksb.sb_status, ENOTCONN);
	assert_int_equal(cv2.r_comp, 2);
	if (cv2.r_lksb.sb_status != ECANCEL)
		assert_int_equal(cv2.r_lksb.sb_status, ENOTCONN);
	assert_int_equal(child.r_comp, 1);
	assert_int_equal(child.r_lksb.sb_status, ENOTCONN);
	assert_int_equal(ul.r_comp, 3);
	if (ul.r_lksb.sb_status != EUNLOCK)
		assert_int_equal(ul.r_lksb.sb_status, ENOTCONN);
	/* nothing more comes */
	assert_int_equal(dlm_dispatch(dlm_ls_get_fd(h)), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(cv.r_comp, 2);
	assert_int_equal(child.r_comp, 1);
	assert_int_equal(ul.r_comp, 3);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* A forced release with 100000 async requests in flight on one handle,
 * which reads nothing meanwhile: half new locks of ids of its own, half
 * locks under a parent (each answered by a REPLY first), all waiting
 * behind another handle's locks.  Each completes exactly once, with
 * ENOTCONN, within a bound (issue 14). */
#define MANY_REQS	100000
#define MANY_RES	16
static void test_async_release_many(void **state)
{
	static struct rec many[MANY_REQS], hold[MANY_RES], par, other_par,
		child_hold;
	dlm_lshandle_t h, o, r;
	char name[32];
	int i;

	(void)state;
	h = dlm_new_lockspace("ls-many", 0600, 0);
	assert_non_null(h);
	o = dlm_open_lockspace("ls-many");
	assert_non_null(o);
	for (i = 0; i < MANY_RES; i++) {
		snprintf(name, sizeof(name), "many-%d", i);
		lock_granted(o, LKM_EXMODE, &hold[i], name);
	}
	rec_init(&par);
	rec_init(&other_par);
	rec_init(&child_hold);
	assert_int_equal(lock_sync(o, LKM_CRMODE, &other_par, 0, "par"), 0);
	assert_int_equal(lock_under(o, LKM_EXMODE, &child_hold, 0, "child",
				    other_par.r_lksb.sb_lkid), 0);
	assert_int_equal(lock_sync(h, LKM_CRMODE, &par, 0, "par"), 0);
	for (i = 0; i < MANY_REQS; i++) {
		rec_init(&many[i]);
		if (i % 2) {
			assert_int_equal(dlm_ls_lock(h, LKM_EXMODE, &many[i].r_lksb,
						     0, "child", 5,
						     par.r_lksb.sb_lkid, comp_ast,
						     &many[i], NULL, NULL), 0);
		} else {
			snprintf(name, sizeof(name), "many-%d", i % MANY_RES);
			assert_int_equal(dlm_ls_lock(h, LKM_EXMODE, &many[i].r_lksb,
						     0, name, strlen(name), 0,
						     comp_ast, &many[i], NULL,
						     NULL), 0);
		}
	}
	r = dlm_open_lockspace("ls-many");
	assert_non_null(r);
	assert_int_equal(dlm_release_lockspace("ls-many", r, 1), 0);
	dispatch_to_end(h, 3 * AST_TIMEOUT_MS);	/* MANY_REQS: a long hang bound */
	for (i = 0; i < MANY_REQS; i++) {
		assert_int_equal(many[i].r_comp, 1);
		assert_int_equal(many[i].r_lksb.sb_status, ENOTCONN);
	}
	assert_int_equal(dlm_dispatch(dlm_ls_get_fd(h)), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* Wait (bounded) until each of v[0..n) ran 'want' completions: the AST
 * thread runs them. */
static void wait_comps_thread(struct rec *v, int n, int want)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;
	int i = 0;

	while (i < n) {
		if (v[i].r_comp >= want) {
			i++;
			continue;
		}
		assert_true(now_ms() < end);
		usleep(1000);
	}
}

/* Async conversions (answered by a REPLY, then a completion) while the
 * AST thread reads the completions, often before the converting thread
 * took the REPLY: libdlm counts those early.  Each runs exactly once;
 * when the lockspace is then released with force, only the request still
 * waiting (a conversion behind another handle's lock) gets ENOTCONN, and
 * none of the finished ones completes again (issue 14). */
#define EARLY_LOCKS	32
#define EARLY_ROUNDS	50
static void test_async_early_completions(void **state)
{
	static struct rec r[EARLY_LOCKS], hold, sentinel;
	dlm_lshandle_t h, o, x;
	char name[32];
	int i, round;

	(void)state;
	h = dlm_new_lockspace("ls-early", 0600, 0);
	assert_non_null(h);
	o = dlm_open_lockspace("ls-early");
	assert_non_null(o);
	lock_granted(o, LKM_EXMODE, &hold, "sentinel");
	lock_granted(h, LKM_NLMODE, &sentinel, "sentinel");
	for (i = 0; i < EARLY_LOCKS; i++) {
		snprintf(name, sizeof(name), "early-%d", i);
		lock_granted(h, LKM_NLMODE, &r[i], name);
	}
	assert_int_equal(dlm_ls_pthread_init(h), 0);
	for (round = 0; round < EARLY_ROUNDS; round++) {
		for (i = 0; i < EARLY_LOCKS; i++) {
			snprintf(name, sizeof(name), "early-%d", i);
			assert_int_equal(lock(h, round % 2 ? LKM_NLMODE : LKM_EXMODE,
					      &r[i], LKF_CONVERT, name, NULL), 0);
		}
		wait_comps_thread(r, EARLY_LOCKS, 2 + round);
		for (i = 0; i < EARLY_LOCKS; i++) {
			assert_int_equal(r[i].r_comp, 2 + round);
			assert_int_equal(r[i].r_lksb.sb_status, 0);
		}
	}
	assert_int_equal(lock(h, LKM_EXMODE, &sentinel, LKF_CONVERT, "sentinel",
			      NULL), 0);
	x = dlm_open_lockspace("ls-early");
	assert_non_null(x);
	assert_int_equal(dlm_release_lockspace("ls-early", x, 1), 0);
	wait_comps_thread(&sentinel, 1, 2);
	/* stops the AST thread: whatever it had to run has run */
	assert_int_equal(dlm_close_lockspace(h), 0);
	assert_int_equal(sentinel.r_comp, 2);
	assert_int_equal(sentinel.r_lksb.sb_status, ENOTCONN);
	for (i = 0; i < EARLY_LOCKS; i++)
		assert_int_equal(r[i].r_comp, 1 + EARLY_ROUNDS);
	assert_int_equal(dlm_close_lockspace(o), 0);
}

/* Async unlocks of granted, idle locks wait for no REPLY (protocol 4,
 * issue 14): with dlmd stopped, dlm_ls_unlock of such a lock returns 0
 * at once and its EUNLOCK completion comes when dlmd runs again.  An
 * unlock of an unknown or already unlocked lock id, or of one purged,
 * still fails from the call (ENOENT); a lock converted since its
 * grant is unlocked the old way; and such an unlock sent after its
 * lockspace was released with force under the handle completes with
 * ENOTCONN. */
#define NOREPLY_LOCKS	8
static void test_async_unlock_noreply(void **state)
{
	static struct rec r[NOREPLY_LOCKS], c, p, g;
	unsigned char buf[DLMP_MAX_MSG];
	const char *pid = getenv("DLMD_PID_1");
	dlm_lshandle_t h, o;
	char name[32];
	int fd, len, i;

	(void)state;
	if (!pid || atoi(pid) <= 0) {
		print_message("DLMD_PID_1 not set: skipped\n");
		return;
	}
	ownid_dlmd = (pid_t)atoi(pid);
	h = dlm_new_lockspace("ls-noreply", 0600, 0);
	assert_non_null(h);
	for (i = 0; i < NOREPLY_LOCKS; i++) {
		rec_init(&r[i]);
		snprintf(name, sizeof(name), "nr-%d", i);
		assert_int_equal(lock(h, LKM_EXMODE, &r[i], 0, name, NULL), 0);
	}
	wait_all(h, r, NOREPLY_LOCKS);
	for (i = 0; i < NOREPLY_LOCKS; i++)
		assert_int_equal(r[i].r_lksb.sb_status, 0);
	signal(SIGALRM, ownid_alarm);
	alarm(AST_TIMEOUT_MS / 1000 + 1);
	ownid_stop();
	for (i = 0; i < NOREPLY_LOCKS; i++) {
		r[i].r_comp = 0;
		assert_int_equal(dlm_ls_unlock(h, r[i].r_lksb.sb_lkid, 0,
					       &r[i].r_lksb, &r[i]), 0);
		assert_int_equal(r[i].r_lksb.sb_status, EINPROG);
	}
	assert_int_equal(kill(ownid_dlmd, SIGCONT), 0);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	wait_all(h, r, NOREPLY_LOCKS);
	for (i = 0; i < NOREPLY_LOCKS; i++) {
		assert_int_equal(r[i].r_comp, 1);
		assert_int_equal(r[i].r_lksb.sb_status, EUNLOCK);
		assert_ptr_equal(r[i].r_comp_arg, &r[i]);
		/* unlocked already: no such lock, said by the call */
		assert_int_equal(dlm_ls_unlock(h, r[i].r_lksb.sb_lkid, 0,
					       &r[i].r_lksb, &r[i]), -1);
		assert_int_equal(errno, ENOENT);
	}
	assert_int_equal(dlm_ls_unlock(h, 0x7ffffff0u, 0, &r[0].r_lksb, &r[0]), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(dlm_ls_unlock(h, 0, 0, &r[0].r_lksb, &r[0]), -1);
	assert_int_equal(errno, EINVAL);
	/* converted since its grant: the unlock waits for its REPLY */
	rec_init(&c);
	assert_int_equal(lock_sync(h, LKM_PRMODE, &c, 0, "nr-conv"), 0);
	c.r_comp = 0;
	assert_int_equal(lock(h, LKM_EXMODE, &c, LKF_CONVERT, "nr-conv", NULL), 0);
	wait_all(h, &c, 1);
	assert_int_equal(c.r_lksb.sb_status, 0);
	assert_int_equal(unlock_sync(h, &c, 0), EUNLOCK);
	/* purged: no lock any more, the unlock fails from the call */
	rec_init(&p);
	assert_int_equal(lock_sync(h, LKM_EXMODE, &p, 0, "nr-purged"), 0);
	assert_int_equal(dlm_ls_purge(h, 0, getpid()), 0);
	assert_int_equal(dlm_ls_unlock(h, p.r_lksb.sb_lkid, 0, &p.r_lksb, &p), -1);
	assert_int_equal(errno, ENOENT);

	/* released under the handle before the unlock reached dlmd */
	o = dlm_open_lockspace("ls-noreply");
	assert_non_null(o);
	rec_init(&g);
	assert_int_equal(lock(o, LKM_EXMODE, &g, 0, "nr-gone", NULL), 0);
	wait_all(o, &g, 1);
	assert_int_equal(g.r_lksb.sb_status, 0);
	fd = raw_release_conn("ls-noreply", buf, &len);
	/* dlmd handled the release; libdlm has read nothing of it yet */
	assert_int_equal(raw_exchange(fd, buf, (size_t)len, 2), 0);
	g.r_comp = 0;
	assert_int_equal(dlm_ls_unlock(o, g.r_lksb.sb_lkid, 0, &g.r_lksb, &g), 0);
	close(fd);
	wait_all(o, &g, 1);
	assert_int_equal(g.r_comp, 1);
	assert_int_equal(g.r_lksb.sb_status, ENOTCONN);
	assert_int_equal(dlm_close_lockspace(o), 0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* dlm_dispatch reads many ASTs at once (issue 14); an AST routine that
 * closes the handle ends the dispatch there: the ASTs read with it are
 * not run for the closed handle. */
static dlm_lshandle_t close_in_ast_h;

static void close_in_ast(void *arg)
{
	struct rec *r = arg;

	r->r_comp++;
	assert_int_equal(dlm_close_lockspace(close_in_ast_h), 0);
}

static void test_dispatch_close_in_ast(void **state)
{
	static struct rec r[4];
	const char *pid = getenv("DLMD_PID_1");
	struct pollfd pfd;
	char name[32];
	int i, fd;

	(void)state;
	if (!pid || atoi(pid) <= 0) {
		print_message("DLMD_PID_1 not set: skipped\n");
		return;
	}
	ownid_dlmd = (pid_t)atoi(pid);
	close_in_ast_h = dlm_open_lockspace(LS_NAME);
	assert_non_null(close_in_ast_h);
	fd = dlm_ls_get_fd(close_in_ast_h);
	/* all four completions wait in the socket before one is read */
	signal(SIGALRM, ownid_alarm);
	alarm(AST_TIMEOUT_MS / 1000 + 1);
	ownid_stop();
	for (i = 0; i < 4; i++) {
		rec_init(&r[i]);
		snprintf(name, sizeof(name), "close-in-ast-%d", i);
		assert_int_equal(dlm_ls_lock(close_in_ast_h, LKM_EXMODE, &r[i].r_lksb,
					     0, name, (unsigned int)strlen(name), 0,
					     close_in_ast, &r[i], NULL, NULL), 0);
	}
	assert_int_equal(kill(ownid_dlmd, SIGCONT), 0);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	pfd.fd = fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, AST_TIMEOUT_MS), 1);
	/* the other three follow the first at once (if one came later, the
	 * one dispatch below still runs one completion only) */
	usleep(100000);
	assert_int_equal(dlm_dispatch(fd), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(r[0].r_comp + r[1].r_comp + r[2].r_comp + r[3].r_comp, 1);
}

/* ------------------------------------------------------------------ */
/* the request ring (dlmd_proto.h "The request ring")                  */
/* ------------------------------------------------------------------ */

/* One counter of "dlmctl status" ($DLMCTL, set by test-daemon.sh). */
static uint64_t ctl_counter(const char *name)
{
	const char *dlmctl = getenv("DLMCTL");
	char cmd[512], line[256], key[128];
	unsigned long long v;
	bool found = false;
	uint64_t value = 0;
	FILE *f;

	assert_non_null(dlmctl);
	snprintf(cmd, sizeof(cmd), "'%s' status", dlmctl);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %llu", key, &v) == 2 && !strcmp(key, name)) {
			value = v;
			found = true;
		}
	assert_int_equal(pclose(f), 0);
	assert_true(found);
	return value;
}

/* With dlmd stopped (pid ownid_dlmd), n async EX locks on h named
 * PREFIX-i, completion routine 'ast' with argument &v[i]; then dlmd goes
 * on. */
static void locks_while_stopped(dlm_lshandle_t h, struct rec *v, int n,
				const char *prefix, void (*ast)(void *))
{
	char name[32];

	signal(SIGALRM, ownid_alarm);
	alarm(AST_TIMEOUT_MS / 1000 + 1);
	ownid_stop();
	for (int i = 0; i < n; i++) {
		rec_init(&v[i]);
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		assert_int_equal(dlm_ls_lock(h, LKM_EXMODE, &v[i].r_lksb, 0, name,
					     (unsigned int)strlen(name), 0, ast,
					     &v[i], NULL, NULL), 0);
	}
	assert_int_equal(kill(ownid_dlmd, SIGCONT), 0);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

static void ring_wait_on_socket(dlm_lshandle_t h);

/* Async requests go through the handle's ring, and a kick is sent only
 * when dlmd said it sleeps: with dlmd stopped, RING_LOCKS locks are put
 * in the ring and only the first kicks it (dlmd cannot clear the flag
 * meanwhile).  Then with $DLMD_RING=0 a handle has no ring, and its
 * requests go on the socket as before. */
#define RING_LOCKS	64
static void test_ring_requests(void **state)
{
	static struct rec g[RING_LOCKS];
	const char *pid = getenv("DLMD_PID_1");
	uint64_t req0, kick0;
	dlm_lshandle_t h;
	struct rec r;

	(void)state;
	assert_non_null(pid);
	ownid_dlmd = (pid_t)atoi(pid);
	assert_true(ownid_dlmd > 0);
	h = dlm_new_lockspace("ls-ring", 0600, 0);
	assert_non_null(h);
	req0 = ctl_counter("ring_requests");
	kick0 = ctl_counter("ring_kicks");
	locks_while_stopped(h, g, RING_LOCKS, "ring", comp_ast);
	wait_all(h, g, RING_LOCKS);
	for (int i = 0; i < RING_LOCKS; i++)
		assert_int_equal(g[i].r_lksb.sb_status, 0);
	assert_int_equal(ctl_counter("ring_requests") - req0, RING_LOCKS);
	assert_int_equal(ctl_counter("ring_kicks") - kick0, 1);
	ring_wait_on_socket(h);
	assert_int_equal(dlm_release_lockspace("ls-ring", h, 1), 0);

	/* no ring asked for: the socket, as before */
	setenv("DLMD_RING", "0", 1);
	h = dlm_open_lockspace(LS_NAME);
	unsetenv("DLMD_RING");
	assert_non_null(h);
	req0 = ctl_counter("ring_requests");
	rec_init(&r);
	assert_int_equal(dlm_ls_lock_wait(h, LKM_PRMODE, &r.r_lksb, 0, "ring-s",
					  6, 0, NULL, NULL, NULL), 0);
	assert_int_equal(r.r_lksb.sb_status, 0);
	rec_init(&g[0]);
	assert_int_equal(lock(h, LKM_EXMODE, &g[0], 0, "ring-s2", NULL), 0);
	wait_all(h, g, 1);
	assert_int_equal(g[0].r_lksb.sb_status, 0);
	assert_int_equal(ctl_counter("ring_requests"), req0);
	assert_int_equal(dlm_close_lockspace(h), 0);
}

/* Requests made by AST routines during one dlm_dispatch() owe one kick,
 * sent when dispatching ends: none of them reaches dlmd before (dlmd
 * sleeps: it took everything and nobody kicked), then all do.  Each
 * completion of a first round of locks takes a second lock; the last
 * routine to run looks at ring_requests, still where the first round
 * left it. */
#define CHAIN_LOCKS	32
static struct rec chain1[CHAIN_LOCKS], chain2[CHAIN_LOCKS];
static dlm_lshandle_t chain_h;
static int chain_ran;
static uint64_t chain_req_in_last;

static void chain_ast(void *arg)
{
	struct rec *r = arg;
	int i = (int)(r - chain1);
	char name[32];

	r->r_comp++;
	snprintf(name, sizeof(name), "chain2-%d", i);
	rec_init(&chain2[i]);
	assert_int_equal(lock(chain_h, LKM_EXMODE, &chain2[i], 0, name, NULL), 0);
	if (++chain_ran == CHAIN_LOCKS)
		chain_req_in_last = ctl_counter("ring_requests");
}

static void test_ring_kick_per_dispatch(void **state)
{
	const char *pid = getenv("DLMD_PID_1");
	uint64_t req0, kick0, end;

	(void)state;
	assert_non_null(pid);
	ownid_dlmd = (pid_t)atoi(pid);
	chain_h = dlm_new_lockspace("ls-chain", 0600, 0);
	assert_non_null(chain_h);
	req0 = ctl_counter("ring_requests");
	locks_while_stopped(chain_h, chain1, CHAIN_LOCKS, "chain1", chain_ast);
	/* dlmd took them in one wake-up and wrote their completions in the
	 * same one, before it answers dlmctl */
	end = now_ms() + AST_TIMEOUT_MS;
	while (ctl_counter("ring_requests") - req0 < CHAIN_LOCKS)
		assert_true(now_ms() < end);
	assert_int_equal(ctl_counter("ring_requests") - req0, CHAIN_LOCKS);
	kick0 = ctl_counter("ring_kicks");
	chain_ran = 0;
	assert_int_equal(dlm_dispatch(dlm_ls_get_fd(chain_h)), 0);
	assert_int_equal(chain_ran, CHAIN_LOCKS);
	/* none of the second round was taken while the routines ran */
	assert_int_equal(chain_req_in_last - req0, CHAIN_LOCKS);
	wait_all(chain_h, chain2, CHAIN_LOCKS);
	for (int i = 0; i < CHAIN_LOCKS; i++)
		assert_int_equal(chain2[i].r_lksb.sb_status, 0);
	assert_int_equal(ctl_counter("ring_requests") - req0, 2 * CHAIN_LOCKS);
	assert_int_equal(ctl_counter("ring_kicks") - kick0, 1);
	assert_int_equal(dlm_release_lockspace("ls-chain", chain_h, 1), 0);
}

/* A memfd of 'size' bytes, sealed against shrinking if 'seal'. */
static int ring_memfd(size_t size, bool seal)
{
	int fd = memfd_create("test-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	if (seal)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return fd;
}

/* RING ATTACH of 'mfd' on raw connection fd: the REPLY's status. */
static int raw_ring_attach(int fd, int mfd, uint32_t reqid)
{
	struct dlmp_msg m;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_RING;
	m.m_hdr.h_reqid = reqid;
	m.m_u.pair.pr_a = DLMP_RING_ATTACH;
	raw_request_fd(fd, &m, mfd);
	return m.m_u.reply.rp_status;
}

/* A kick, on a connection that may be gone already. */
static void raw_ring_kick(int fd, uint32_t reqid)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_RING;
	m.m_hdr.h_reqid = reqid;
	m.m_u.pair.pr_a = DLMP_RING_KICK;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	(void)send(fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Wait up to AST_TIMEOUT_MS for the end of raw connection fd, reading
 * (and dropping) whatever answers come first. */
static bool raw_wait_closed(int fd)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;
	unsigned char rb[DLMP_MAX_MSG];

	while (now_ms() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(fd, rb, sizeof(rb), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
	return false;
}

struct scribble {
	volatile unsigned char	*sc_mem;
	volatile bool		sc_stop;
	unsigned int		sc_seed;
};

/* Write random bytes all over the ring (header words included) until
 * told to stop, as a hostile client could while dlmd reads it. */
static void *scribble_ring(void *arg)
{
	struct scribble *sc = arg;

	while (!sc->sc_stop) {
		size_t at = (size_t)rand_r(&sc->sc_seed) % DLMP_RING_BYTES;

		sc->sc_mem[at] = (unsigned char)rand_r(&sc->sc_seed);
		if (at % 7 == 0)	/* the tail, often, near or far */
			__atomic_store_n((uint32_t *)sc->sc_mem,
					 (uint32_t)rand_r(&sc->sc_seed) %
					 (2 * DLMP_RING_SLOTS), __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The client writes the ring at any moment and dlmd trusts nothing in
 * it: a memfd unsealed or too small is refused; malformed slots are
 * refused one by one like malformed packets; a tail out of range
 * disconnects that client; a thread scribbling over a ring while it
 * kicks harms nobody but itself.  dlmd keeps serving h1 throughout. */
static void test_ring_hostile(void **state)
{
	const char *pid = getenv("DLMD_PID_1");
	struct dlmp_ring *ring;
	struct scribble sc;
	struct dlmp_msg m;
	pthread_t t;
	struct rec r;
	unsigned char *slot;
	uint32_t len32;
	int fd, ast, mfd;

	(void)state;
	assert_non_null(pid);
	fd = raw_connect();
	ast = raw_open(fd, 1);
	mfd = ring_memfd(DLMP_RING_BYTES, false);
	assert_int_equal(raw_ring_attach(fd, mfd, 2), -EINVAL);	/* unsealed */
	close(mfd);
	mfd = ring_memfd(DLMP_RING_BYTES - 1, true);
	assert_int_equal(raw_ring_attach(fd, mfd, 3), -EINVAL);	/* too small */
	close(mfd);
	mfd = ring_memfd(DLMP_RING_BYTES, true);
	assert_int_equal(raw_ring_attach(fd, mfd, 4), 0);
	assert_int_equal(raw_ring_attach(fd, mfd, 5), -EISCONN);
	ring = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(ring != MAP_FAILED);
	close(mfd);

	/* slot 0: a length past any packet, over garbage */
	slot = ring->rg_slots[0];
	len32 = 100000;
	memcpy(slot, &len32, 4);
	memset(slot + 8, 0xa5, DLMP_MAX_MSG);
	/* slot 1: a LOCK whose header length is not the slot's */
	raw_lock_msg(&m, LKM_EXMODE, "host");
	m.m_hdr.h_reqid = 21;
	slot = ring->rg_slots[1];
	len32 = (uint32_t)dlmp_encode(&m, slot + 8, DLMP_MAX_MSG) - 1;
	memcpy(slot, &len32, 4);
	/* slot 2: a VERSION request, well formed: answered */
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	m.m_hdr.h_reqid = 22;
	slot = ring->rg_slots[2];
	len32 = (uint32_t)dlmp_encode(&m, slot + 8, DLMP_MAX_MSG);
	memcpy(slot, &len32, 4);
	__atomic_store_n(&ring->rg_tail, 3, __ATOMIC_SEQ_CST);
	raw_ring_kick(fd, 6);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
	assert_true(m.m_u.reply.rp_status < 0);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_reqid, 21);
	assert_int_equal(m.m_u.reply.rp_status, -EBADMSG);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_reqid, 22);
	assert_int_equal(m.m_u.reply.rp_status, 0);
	assert_int_equal(m.m_u.reply.rp_value, DLMP_VERSION_MAJOR);
	assert_int_equal(__atomic_load_n(&ring->rg_head, __ATOMIC_SEQ_CST), 3);
	/* a tail far past what the ring holds: that client goes */
	__atomic_store_n(&ring->rg_tail, 3 + 5 * DLMP_RING_SLOTS, __ATOMIC_SEQ_CST);
	raw_ring_kick(fd, 7);
	assert_true(raw_wait_closed(fd));
	close(fd);
	close(ast);
	munmap(ring, DLMP_RING_BYTES);
	rec_init(&r);
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &r, 0, "ring-host-1"), 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, r.r_lksb.sb_lkid, 0, &r.r_lksb), 0);

	/* a ring scribbled over while its client kicks */
	fd = raw_connect();
	ast = raw_open(fd, 1);
	mfd = ring_memfd(DLMP_RING_BYTES, true);
	assert_int_equal(raw_ring_attach(fd, mfd, 2), 0);
	sc.sc_mem = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE,
			 MAP_SHARED, mfd, 0);
	assert_true(sc.sc_mem != MAP_FAILED);
	close(mfd);
	sc.sc_stop = false;
	sc.sc_seed = 14;
	assert_int_equal(pthread_create(&t, NULL, scribble_ring, &sc), 0);
	for (int i = 0; i < 2000; i++) {
		unsigned char rb[DLMP_MAX_MSG];

		raw_ring_kick(fd, 100 + (uint32_t)i);
		while (recv(fd, rb, sizeof(rb), MSG_DONTWAIT) > 0)
			;
	}
	sc.sc_stop = true;
	pthread_join(t, NULL);
	close(fd);
	close(ast);
	munmap((void *)sc.sc_mem, DLMP_RING_BYTES);
	assert_int_equal(kill((pid_t)atoi(pid), 0), 0);	/* dlmd lives */
	rec_init(&r);
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &r, 0, "ring-host-2"), 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, r.r_lksb.sb_lkid, 0, &r.r_lksb), 0);
}

/* The next answer of raw connection fd's answer ring (waiting up to
 * AST_TIMEOUT_MS) into *m, taken (rg_ans_head moves). */
static void raw_ans_read(struct dlmp_ring *ring, uint32_t *head, struct dlmp_msg *m)
{
	uint64_t end = now_ms() + AST_TIMEOUT_MS;
	const unsigned char *slot;
	uint32_t len;

	while (__atomic_load_n(&ring->rg_ans_tail, __ATOMIC_ACQUIRE) == *head) {
		assert_true(now_ms() < end);
		usleep(1000);
	}
	slot = ring->rg_ans_slots[*head & (DLMP_ANS_SLOTS - 1)];
	memcpy(&len, slot, 4);
	assert_true(len <= DLMP_MAX_MSG);
	assert_int_equal(dlmp_decode(slot + 8, len, m), 0);
	(*head)++;
	__atomic_store_n(&ring->rg_ans_head, *head, __ATOMIC_RELEASE);
}

/* A VERSION request with reqid 'reqid' on raw connection fd (socket). */
static void raw_version_send(int fd, uint32_t reqid)
{
	struct dlmp_msg m;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_VERSION_REQ;
	assert_int_equal(raw_send(fd, &m, reqid, -1), 0);
}

/* The answer ring (dlmd_proto.h "The answer ring", protocol 7).  libdlm
 * takes its answers from it (ring_answers counts them), and with
 * $DLMD_RING_ANSWERS=0 from the socket, and with $DLMD_SPIN_US=0 (it
 * sleeps on the futex at once) as well.  A raw client: answers come into
 * the ring, not the socket; ATTACH with a b other than 0 or 1 is
 * refused; a client lying in rg_ans_head (more taken than written: the
 * ring looks full) gets rg_ans_socket and its answers on the socket; a
 * RING ANS_SOCKET does the same; and a client scribbling over the whole
 * memfd, answer ring included, while it asks for answers harms nobody
 * but itself. */
/* RING ATTACH of memfd 'mfd' on raw connection 'fd' (request 'reqid',
 * pr_b 'choice'); its REPLY's status */
static int ring_attach(int fd, int mfd, uint32_t reqid, uint32_t choice)
{
	struct dlmp_msg m;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_RING;
	m.m_hdr.h_reqid = reqid;
	m.m_u.pair.pr_a = DLMP_RING_ATTACH;
	m.m_u.pair.pr_b = choice;
	raw_request_fd(fd, &m, mfd);
	return m.m_u.reply.rp_status;
}

/* A raw client on 'fd' attaches a new sealed ring with its answers in
 * it; the ring, mapped */
static void *ring_attach_answers(int fd)
{
	int mfd = ring_memfd(DLMP_RING_BYTES, true);
	void *mem;

	assert_int_equal(ring_attach(fd, mfd, 2, DLMP_RING_ANSWERS), 0);
	mem = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		   mfd, 0);
	assert_true(mem != MAP_FAILED);
	close(mfd);
	return mem;
}

static void test_ring_answers(void **state)
{
	const char *pid = getenv("DLMD_PID_1");
	uint64_t a0, full0;
	struct dlmp_ring *ring;
	struct scribble sc;
	struct dlmp_msg m;
	dlm_lshandle_t h;
	unsigned char rb[DLMP_MAX_MSG];
	uint32_t head = 0;
	pthread_t t;
	struct rec r;
	int fd, ast, mfd;

	(void)state;
	assert_non_null(pid);
	/* libdlm, looking and sleeping */
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1)
			setenv("DLMD_SPIN_US", "0", 1);
		if (pass == 2)
			setenv("DLMD_RING_ANSWERS", "0", 1);
		h = dlm_open_lockspace(LS_NAME);
		unsetenv("DLMD_SPIN_US");
		unsetenv("DLMD_RING_ANSWERS");
		assert_non_null(h);
		a0 = ctl_counter("ring_answers");
		for (int i = 0; i < 20; i++) {
			rec_init(&r);
			assert_int_equal(dlm_ls_lock_wait(h, LKM_EXMODE, &r.r_lksb, 0,
							  "ring-ans", 8, 0, NULL,
							  NULL, NULL), 0);
			assert_int_equal(r.r_lksb.sb_status, 0);
			assert_int_equal(dlm_ls_unlock_wait(h, r.r_lksb.sb_lkid, 0,
							    &r.r_lksb), 0);
			assert_int_equal(r.r_lksb.sb_status, EUNLOCK);
		}
		if (pass < 2)
			assert_true(ctl_counter("ring_answers") - a0 >= 40);
		else
			assert_int_equal(ctl_counter("ring_answers"), a0);
		assert_int_equal(dlm_close_lockspace(h), 0);
	}

	/* a raw client: its answers in the ring */
	fd = raw_connect();
	ast = raw_open(fd, 1);
	mfd = ring_memfd(DLMP_RING_BYTES, true);
	assert_int_equal(ring_attach(fd, mfd, 2, 2 /* no such choice */),
			 -EINVAL);
	/* its REPLY on the socket */
	assert_int_equal(ring_attach(fd, mfd, 3, DLMP_RING_ANSWERS), 0);
	ring = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	assert_true(ring != MAP_FAILED);
	close(mfd);
	a0 = ctl_counter("ring_answers");
	full0 = ctl_counter("ring_answers_full");
	raw_version_send(fd, 30);
	raw_ans_read(ring, &head, &m);
	assert_int_equal(m.m_hdr.h_type, DLMP_REPLY);
	assert_int_equal(m.m_hdr.h_reqid, 30);
	assert_int_equal(m.m_u.reply.rp_value, DLMP_VERSION_MAJOR);
	assert_int_equal(ctl_counter("ring_answers") - a0, 1);
	assert_true(recv(fd, rb, sizeof(rb), MSG_DONTWAIT) < 0);
	/* a lie: more taken than written; the ring looks full */
	__atomic_store_n(&ring->rg_ans_head, head + 7, __ATOMIC_SEQ_CST);
	raw_version_send(fd, 31);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_reqid, 31);
	assert_int_equal(m.m_u.reply.rp_value, DLMP_VERSION_MAJOR);
	assert_int_equal(__atomic_load_n(&ring->rg_ans_socket, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(ctl_counter("ring_answers_full") - full0, 1);
	/* for good: the socket even with room again */
	__atomic_store_n(&ring->rg_ans_head, head, __ATOMIC_SEQ_CST);
	raw_version_send(fd, 32);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_reqid, 32);
	assert_int_equal(__atomic_load_n(&ring->rg_ans_tail, __ATOMIC_SEQ_CST), head);
	close(fd);
	close(ast);
	munmap(ring, DLMP_RING_BYTES);

	/* RING ANS_SOCKET (what a child after fork() sends) */
	fd = raw_connect();
	ast = raw_open(fd, 1);
	ring = ring_attach_answers(fd);
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_RING;
	m.m_u.pair.pr_a = DLMP_RING_ANS_SOCKET;
	assert_int_equal(raw_send(fd, &m, 3, -1), 0);
	raw_version_send(fd, 4);
	raw_read(fd, &m);
	assert_int_equal(m.m_hdr.h_reqid, 4);
	assert_int_equal(__atomic_load_n(&ring->rg_ans_socket, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(__atomic_load_n(&ring->rg_ans_tail, __ATOMIC_SEQ_CST), 0);
	close(fd);
	close(ast);
	munmap(ring, DLMP_RING_BYTES);

	/* the whole memfd scribbled over while its client asks for answers
	 * on the socket and through the ring */
	fd = raw_connect();
	ast = raw_open(fd, 1);
	sc.sc_mem = ring_attach_answers(fd);
	sc.sc_stop = false;
	sc.sc_seed = 15;
	assert_int_equal(pthread_create(&t, NULL, scribble_ring, &sc), 0);
	for (int i = 0; i < 2000; i++) {
		struct dlmp_ring *rg = (struct dlmp_ring *)sc.sc_mem;
		uint32_t v = (uint32_t)rand_r(&sc.sc_seed);

		/* dlmd's words of the answer ring, as a liar writes them */
		__atomic_store_n(&rg->rg_ans_head, v % 4 ? v % (3 * DLMP_ANS_SLOTS) : v,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&rg->rg_ans_sleeping, v & 1, __ATOMIC_RELAXED);
		__atomic_store_n(&rg->rg_ans_tail, v >> 3, __ATOMIC_RELAXED);
		memset(&m, 0, sizeof(m));
		m.m_hdr.h_type = DLMP_VERSION_REQ;
		m.m_hdr.h_reqid = 100 + (uint32_t)i;
		{
			int len = dlmp_encode(&m, rb, sizeof(rb));

			assert_true(len > 0);
			if (send(fd, rb, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
			    (errno == EPIPE || errno == ECONNRESET))
				break;	/* dlmd cut us: allowed */
		}
		raw_ring_kick(fd, 5000 + (uint32_t)i);
		while (recv(fd, rb, sizeof(rb), MSG_DONTWAIT) > 0)
			;
	}
	sc.sc_stop = true;
	pthread_join(t, NULL);
	close(fd);
	close(ast);
	munmap((void *)sc.sc_mem, DLMP_RING_BYTES);
	assert_int_equal(kill((pid_t)atoi(pid), 0), 0);	/* dlmd lives */
	rec_init(&r);
	assert_int_equal(lock_sync(h1, LKM_EXMODE, &r, 0, "ring-ans-2"), 0);
	assert_int_equal(dlm_ls_unlock_wait(h1, r.r_lksb.sb_lkid, 0, &r.r_lksb), 0);
}

/* A _wait call while dlmd sleeps (it took everything; nothing since)
 * travels on the socket, its own kick: neither the ring nor a kick is
 * used for it, and it is answered. */
static void ring_wait_on_socket(dlm_lshandle_t h)
{
	uint64_t req0 = ctl_counter("ring_requests");
	uint64_t kick0 = ctl_counter("ring_kicks");
	struct rec r;

	rec_init(&r);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(dlm_ls_lock_wait(h, LKM_PRMODE, &r.r_lksb, 0,
						  "ring-w", 6, 0, NULL, NULL,
						  NULL), 0);
		assert_int_equal(r.r_lksb.sb_status, 0);
		assert_int_equal(dlm_ls_unlock_wait(h, r.r_lksb.sb_lkid, 0,
						    &r.r_lksb), 0);
		assert_int_equal(r.r_lksb.sb_status, EUNLOCK);
	}
	assert_int_equal(ctl_counter("ring_requests"), req0);
	assert_int_equal(ctl_counter("ring_kicks"), kick0);
}

/* The order of a ring client's requests when one of them travels on the
 * socket: an AST routine puts a new lock in the ring (its kick owed
 * until dispatching ends, so dlmd still sleeps), then converts that
 * lock with a _wait call, which goes on the socket.  dlmd must take the
 * ring first: handled before the lock it names, the conversion would
 * find no such lock. */
static dlm_lshandle_t order_h;
static struct rec order_x;
static int order_rv = -2, order_status = -1;
static uint64_t order_req_before, order_catch_before;

static void order_ast(void *arg)
{
	(void)arg;
	rec_init(&order_x);
	/* dlmd took "order-a" and its kick before this AST was sent */
	order_req_before = ctl_counter("ring_requests");
	order_catch_before = ctl_counter("ring_catchups");
	assert_int_equal(dlm_ls_lock(order_h, LKM_EXMODE, &order_x.r_lksb, 0,
				     "order-x", 7, 0, comp_ast, &order_x, NULL,
				     NULL), 0);
	/* in the ring, not taken: dlmd sleeps */
	assert_int_equal(ctl_counter("ring_requests"), order_req_before);
	order_rv = dlm_ls_lock_wait(order_h, LKM_NLMODE, &order_x.r_lksb,
				    LKF_CONVERT, NULL, 0, 0, NULL, NULL, NULL);
	order_status = order_x.r_lksb.sb_status;
}

static void test_ring_socket_order(void **state)
{
	struct rec a;

	(void)state;
	order_h = dlm_new_lockspace("ls-order", 0600, 0);
	assert_non_null(order_h);
	rec_init(&a);
	assert_int_equal(dlm_ls_lock(order_h, LKM_EXMODE, &a.r_lksb, 0,
				     "order-a", 7, 0, order_ast, &a, NULL,
				     NULL), 0);
	{
		struct pollfd pfd = { .fd = dlm_ls_get_fd(order_h),
				      .events = POLLIN };
		uint64_t end = now_ms() + AST_TIMEOUT_MS;

		while (order_rv == -2) {
			assert_true(now_ms() < end);
			if (poll(&pfd, 1, 100) > 0)
				assert_int_equal(dlm_dispatch(pfd.fd), 0);
		}
	}
	assert_int_equal(order_rv, 0);
	assert_int_equal(order_status, 0);
	/* the lock was granted first, then converted */
	assert_int_equal(order_x.r_comp, 1);
	assert_int_equal(ctl_counter("ring_requests") - order_req_before, 1);
	assert_int_equal(ctl_counter("ring_catchups") - order_catch_before, 1);
	assert_int_equal(dlm_release_lockspace("ls-order", order_h, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_lockspaces),
		cmocka_unit_test(test_shared_release),
		cmocka_unit_test(test_mode_pairs),
		cmocka_unit_test(test_asts),
		cmocka_unit_test(test_convert_quecvt),
		cmocka_unit_test(test_lvb),
		cmocka_unit_test(test_cancel_forceunlock),
		cmocka_unit_test(test_expedite_altpr),
		cmocka_unit_test(test_convdeadlk),
		cmocka_unit_test(test_deadlock_cancel),
		cmocka_unit_test(test_deadlock_detected),
		cmocka_unit_test(test_deadlock_other_thread),
		cmocka_unit_test(test_deadlock_async_own),
		cmocka_unit_test(test_deadlock_cross_thread),
		cmocka_unit_test(test_deadlock_self),
		cmocka_unit_test(test_parent),
		cmocka_unit_test(test_parent_deep),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_threads_wait),
		cmocka_unit_test(test_pthread_asts),
		cmocka_unit_test(test_fork_close_thread),
		cmocka_unit_test(test_fork_shared_handle),
		cmocka_unit_test(test_default_lockspace),
		cmocka_unit_test(test_kill_holder),
		cmocka_unit_test(test_kill_waiter),
		cmocka_unit_test(test_persistent_orphan),
		cmocka_unit_test(test_adopt_bast),
		cmocka_unit_test(test_purge_own),
		cmocka_unit_test(test_orphan_owner),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_sync_cancel),
		cmocka_unit_test(test_sync_convert_lvb),
		cmocka_unit_test(test_sync_release),
		cmocka_unit_test(test_inflight_cap),
		cmocka_unit_test(test_async_past_slot_wait),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_refused_connection),
		cmocka_unit_test(test_held_limit),
		cmocka_unit_test(test_sync_own_id),
		cmocka_unit_test(test_version_mismatch),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_async_own_ids),
		cmocka_unit_test(test_async_gone),
		cmocka_unit_test(test_async_release_old_path),
		cmocka_unit_test(test_async_release_full_socket),
		cmocka_unit_test(test_async_release_many),
		cmocka_unit_test(test_async_early_completions),
		cmocka_unit_test(test_async_unlock_noreply),
		cmocka_unit_test(test_dispatch_close_in_ast),
		cmocka_unit_test(test_ring_requests),
		cmocka_unit_test(test_ring_kick_per_dispatch),
		cmocka_unit_test(test_ring_hostile),
		cmocka_unit_test(test_ring_answers),
		cmocka_unit_test(test_ring_socket_order),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
