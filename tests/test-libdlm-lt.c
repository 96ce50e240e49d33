/*
 * tests/test-libdlm-lt.c - libdlm_lt.so (no pthreads) through a running
 * dlmd: the _wait forms dispatch in the caller, and in this variant a
 * failed final status becomes -1/errno.  The AST fd and dlm_dispatch
 * work as in libdlm.so.  Run by tests/test-daemon.sh.
 *
 * "test-libdlm-lt hold LOCKSPACE [RESOURCE]" instead takes an EX lock on
 * RESOURCE (default "held-resource"), prints "held" and keeps it until
 * stdin reaches EOF (the shell test uses it to see a lock in "dlmctl
 * lockdump", and how a name with a newline is printed there).
 * "test-libdlm-lt orphan LOCKSPACE RESOURCE" takes a PERSISTENT EX lock
 * on RESOURCE, prints "orphaned" and closes the lockspace without
 * unlocking it, so that the lock stays behind as an orphan.
 */
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "libdlm/libdlm.h"

#define LS_NAME		"lt-test"
#define AST_TIMEOUT_MS	5000

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s (errno %d %s)\n", \
			__FILE__, __LINE__, #cond, errno, strerror(errno)); \
		return 1; \
	} \
} while (0)

static int done;

static void ast(void *arg)
{
	done = *(int *)arg;
}

static int hold(const char *lsname, const char *resname)
{
	dlm_lshandle_t h = dlm_open_lockspace(lsname);
	struct dlm_lksb lksb;
	char buf[64];

	CHECK(h != NULL);
	memset(&lksb, 0, sizeof(lksb));
	CHECK(dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, 0, resname,
			       (unsigned int)strlen(resname), 0, NULL, NULL,
			       NULL) == 0);
	printf("held\n");
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	CHECK(dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb) == 0);
	CHECK(dlm_close_lockspace(h) == 0);
	return 0;
}

static int orphan(const char *lsname, const char *resname)
{
	dlm_lshandle_t h = dlm_open_lockspace(lsname);
	struct dlm_lksb lksb;

	CHECK(h != NULL);
	memset(&lksb, 0, sizeof(lksb));
	CHECK(dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, LKF_PERSISTENT, resname,
			       (unsigned int)strlen(resname), 0, NULL, NULL,
			       NULL) == 0);
	CHECK(dlm_close_lockspace(h) == 0);
	printf("orphaned\n");
	return 0;
}

int main(int argc, char **argv)
{
	dlm_lshandle_t h1, h2;
	struct dlm_lksb a, b;
	struct pollfd pfd;
	int tag = 42;

	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "hold"))
		return hold(argv[2], argc == 4 ? argv[3] : "held-resource");
	if (argc == 4 && !strcmp(argv[1], "orphan"))
		return orphan(argv[2], argv[3]);
	h1 = dlm_new_lockspace(LS_NAME, 0600, 0);
	CHECK(h1 != NULL);
	h2 = dlm_open_lockspace(LS_NAME);
	CHECK(h2 != NULL);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK(dlm_ls_lock_wait(h1, LKM_EXMODE, &a, 0, "r", 1, 0, NULL, NULL, NULL) == 0);
	CHECK(a.sb_status == 0 && a.sb_lkid != 0);
	/* lt: a refused NOQUEUE request is -1/EAGAIN from the _wait call. */
	CHECK(dlm_ls_lock_wait(h2, LKM_PRMODE, &b, LKF_NOQUEUE, "r", 1, 0, NULL, NULL,
			       NULL) == -1 && errno == EAGAIN);
	CHECK(b.sb_status == EAGAIN);
	/* Asynchronous request, completion through dlm_dispatch. */
	CHECK(dlm_ls_lock(h2, LKM_PRMODE, &b, 0, "r", 1, 0, ast, &tag, NULL, NULL) == 0);
	CHECK(b.sb_status == EINPROG);
	CHECK(dlm_ls_unlock_wait(h1, a.sb_lkid, 0, &a) == 0);
	CHECK(a.sb_status == EUNLOCK);
	pfd.fd = dlm_ls_get_fd(h2);
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, AST_TIMEOUT_MS) == 1);
	CHECK(dlm_dispatch(pfd.fd) == 0);
	CHECK(done == 42 && b.sb_status == 0);
	CHECK(dlm_ls_unlock_wait(h2, b.sb_lkid, 0, &b) == 0);
	CHECK(dlm_close_lockspace(h2) == 0);
	CHECK(dlm_release_lockspace(LS_NAME, h1, 0) == 0);
	printf("test-libdlm-lt: ok\n");
	return 0;
}
