/*
 * tests/test-dlopen.c - libdlm_lt.so.3 the way mdadm's cluster-md and
 * ocfs2-tools' libo2dlm load it: dlopen() by soname, every entry point
 * through dlsym(), no link-time dependency on libdlm at all.  Run by
 * tests/test-daemon.sh with LD_LIBRARY_PATH pointing at the build's
 * libdlm/.libs, as a consumer finds the installed library (and
 * TEST_DLOPEN_DIR naming that directory: the one loaded must be ours).
 *
 * It resolves the union of what those programs resolve (a missing symbol
 * is how such a program decides "no DLM here"), checks that the _lt
 * variant does not export the pthread helpers, then does their work:
 * open the lockspace or create it (mode O_RDWR as cluster-md passes, or
 * 0600), lock asynchronously and wait for the AST by poll() on
 * dlm_ls_get_fd() and dlm_dispatch(), read and write the LVB, take a
 * blocking AST, unlock asynchronously (EUNLOCK) and with _wait, and
 * release the lockspace with force.  Every wait is bounded.
 */
#include <sys/types.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "libdlm/libdlm.h"

#define SONAME		"libdlm_lt.so.3"
#define POLL_MS		200
#define MAX_POLLS	50	/* 10 s per wait */

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s (errno %d %s)\n", \
			__FILE__, __LINE__, #cond, errno, strerror(errno)); \
		return 1; \
	} \
} while (0)

/* The entry points, as the consumers declare their hooks. */
struct hooks {
	dlm_lshandle_t (*create_lockspace)(const char *, mode_t);
	dlm_lshandle_t (*open_lockspace)(const char *);
	int (*release_lockspace)(const char *, dlm_lshandle_t, int);
	int (*close_lockspace)(dlm_lshandle_t);
	int (*ls_get_fd)(dlm_lshandle_t);
	int (*dispatch)(int);
	int (*ls_lock)(dlm_lshandle_t, uint32_t, struct dlm_lksb *, uint32_t,
		       const void *, unsigned int, uint32_t,
		       void (*)(void *), void *, void (*)(void *),
		       struct dlm_range *);
	int (*ls_unlock)(dlm_lshandle_t, uint32_t, uint32_t,
			 struct dlm_lksb *, void *);
	int (*ls_unlock_wait)(dlm_lshandle_t, uint32_t, uint32_t,
			      struct dlm_lksb *);
	void (*library_version)(uint32_t *, uint32_t *, uint32_t *);
	int (*kernel_version)(uint32_t *, uint32_t *, uint32_t *);
};

struct waiter {
	int	asts;
	int	basts;
};

static void ast(void *arg)
{
	((struct waiter *)arg)->asts++;
}

static void bast(void *arg)
{
	((struct waiter *)arg)->basts++;
}

#define RESOLVE(h, lib, field, name) do { \
	*(void **)(&(h)->field) = dlsym(lib, name); \
	if (!(h)->field) { \
		fprintf(stderr, "dlsym(%s): %s\n", name, dlerror()); \
		return 1; \
	} \
} while (0)

static int resolve(void *lib, struct hooks *h)
{
	/* cluster-md: open, create, release, ls_lock, ls_unlock_wait,
	 * ls_get_fd, dispatch; libo2dlm adds ls_unlock, close and the
	 * version calls. */
	RESOLVE(h, lib, create_lockspace, "dlm_create_lockspace");
	RESOLVE(h, lib, open_lockspace, "dlm_open_lockspace");
	RESOLVE(h, lib, release_lockspace, "dlm_release_lockspace");
	RESOLVE(h, lib, close_lockspace, "dlm_close_lockspace");
	RESOLVE(h, lib, ls_get_fd, "dlm_ls_get_fd");
	RESOLVE(h, lib, dispatch, "dlm_dispatch");
	RESOLVE(h, lib, ls_lock, "dlm_ls_lock");
	RESOLVE(h, lib, ls_unlock, "dlm_ls_unlock");
	RESOLVE(h, lib, ls_unlock_wait, "dlm_ls_unlock_wait");
	RESOLVE(h, lib, library_version, "dlm_library_version");
	RESOLVE(h, lib, kernel_version, "dlm_kernel_version");
	return 0;
}

/* Poll the lockspace fd and dispatch until *count reaches want. */
static int wait_for(const struct hooks *h, int fd, const int *count, int want)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int i;

	for (i = 0; i < MAX_POLLS && *count < want; i++) {
		int n = poll(&pfd, 1, POLL_MS);

		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0 && h->dispatch(fd) != 0)
			return -1;
	}
	return *count >= want ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *lsname = argc > 1 ? argv[1] : "dlopen-test";
	char lvb[DLM_LVB_LEN], lvb2[DLM_LVB_LEN];
	struct dlm_lksb a, b;
	struct waiter wa = { 0, 0 }, wb = { 0, 0 };
	struct hooks h;
	dlm_lshandle_t ls, ls2;
	uint32_t maj, min, patch;
	void *lib;
	int fd;

	lib = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen(%s): %s\n", SONAME, dlerror());
		return 1;
	}
	/* A distribution's own libdlm may be installed too: with
	 * TEST_DLOPEN_DIR set, the one loaded must come from there. */
	if (getenv("TEST_DLOPEN_DIR")) {
		const char *dir = getenv("TEST_DLOPEN_DIR");
		struct link_map *map = NULL;

		CHECK(dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map);
		if (strncmp(map->l_name, dir, strlen(dir)) != 0) {
			fprintf(stderr, "loaded %s, not from %s\n", map->l_name, dir);
			return 1;
		}
	}
	CHECK(resolve(lib, &h) == 0);
	/* libdlm_lt has no pthread helpers and no old lock_resource API */
	CHECK(dlsym(lib, "dlm_pthread_init") == NULL);
	CHECK(dlsym(lib, "dlm_ls_pthread_init") == NULL);
	CHECK(dlsym(lib, "lock_resource") == NULL);
	h.library_version(&maj, &min, &patch);
	CHECK(maj == 6);
	CHECK(h.kernel_version(&maj, &min, &patch) == 0 && maj == 6);

	/* cluster-md: open, else create with O_RDWR as its mode */
	ls = h.open_lockspace(lsname);
	CHECK(ls == NULL);
	ls = h.create_lockspace(lsname, O_RDWR);
	CHECK(ls != NULL);
	/* libo2dlm: create again with 0600 while it exists: a second handle */
	ls2 = h.create_lockspace(lsname, 0600);
	CHECK(ls2 != NULL);
	fd = h.ls_get_fd(ls);
	CHECK(fd >= 0);

	/* EX with an LVB, completion by poll + dispatch */
	memset(&a, 0, sizeof(a));
	memset(lvb, 0, sizeof(lvb));
	a.sb_lvbptr = lvb;
	CHECK(h.ls_lock(ls, LKM_EXMODE, &a, LKF_VALBLK, "bitmap0000", 10, 0,
			ast, &wa, bast, NULL) == 0);
	CHECK(wait_for(&h, fd, &wa.asts, 1) == 0);
	CHECK(a.sb_status == 0 && a.sb_lkid != 0);
	memcpy(lvb, "cluster-md event 1", 19);
	/* down-convert to NL writes the LVB */
	CHECK(h.ls_lock(ls, LKM_NLMODE, &a, LKF_CONVERT | LKF_VALBLK,
			"bitmap0000", 10, 0, ast, &wa, bast, NULL) == 0);
	CHECK(wait_for(&h, fd, &wa.asts, 2) == 0);
	CHECK(a.sb_status == 0);
	/* back to EX, then a PR from the other handle blocks: bast to us */
	CHECK(h.ls_lock(ls, LKM_EXMODE, &a, LKF_CONVERT | LKF_VALBLK,
			"bitmap0000", 10, 0, ast, &wa, bast, NULL) == 0);
	CHECK(wait_for(&h, fd, &wa.asts, 3) == 0);
	CHECK(a.sb_status == 0);
	CHECK(memcmp(lvb, "cluster-md event 1", 19) == 0);

	memset(&b, 0, sizeof(b));
	memset(lvb2, 0, sizeof(lvb2));
	b.sb_lvbptr = lvb2;
	CHECK(h.ls_lock(ls2, LKM_PRMODE, &b, LKF_NOQUEUE | LKF_VALBLK,
			"bitmap0000", 10, 0, ast, &wb, NULL, NULL) == 0);
	CHECK(wait_for(&h, h.ls_get_fd(ls2), &wb.asts, 1) == 0);
	CHECK(b.sb_status == EAGAIN);
	CHECK(h.ls_lock(ls2, LKM_PRMODE, &b, LKF_VALBLK, "bitmap0000", 10, 0,
			ast, &wb, NULL, NULL) == 0);
	CHECK(wait_for(&h, fd, &wa.basts, 1) == 0);
	CHECK(wb.asts == 1);

	/* asynchronous unlock: the AST says EUNLOCK; then the PR is granted
	 * with the value the EX holder wrote */
	CHECK(h.ls_unlock(ls, a.sb_lkid, 0, &a, &wa) == 0);
	CHECK(wait_for(&h, fd, &wa.asts, 4) == 0);
	CHECK(a.sb_status == EUNLOCK);
	CHECK(wait_for(&h, h.ls_get_fd(ls2), &wb.asts, 2) == 0);
	CHECK(b.sb_status == 0);
	CHECK(memcmp(lvb2, "cluster-md event 1", 19) == 0);
	CHECK(h.ls_unlock_wait(ls2, b.sb_lkid, 0, &b) == 0);
	CHECK(b.sb_status == EUNLOCK);

	CHECK(h.release_lockspace(lsname, ls2, 1) == 0);
	/* still there for the first handle: creates are counted */
	memset(&a, 0, sizeof(a));
	CHECK(h.ls_lock(ls, LKM_PRMODE, &a, 0, "token", 5, 0, ast, &wa, NULL,
			NULL) == 0);
	CHECK(wait_for(&h, fd, &wa.asts, 5) == 0);
	CHECK(a.sb_status == 0);
	CHECK(h.ls_unlock_wait(ls, a.sb_lkid, 0, &a) == 0);
	CHECK(h.release_lockspace(lsname, ls, 1) == 0);
	CHECK(h.open_lockspace(lsname) == NULL);
	CHECK(dlclose(lib) == 0);
	printf("test-dlopen: ok\n");
	return 0;
}
