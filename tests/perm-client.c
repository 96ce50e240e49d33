/*
 * tests/perm-client.c - what an unprivileged user may do against a dlmd
 * run by root (tests/test-client-perms.sh starts that dlmd, with a client
 * socket anyone may connect to, and runs this as root).
 *
 * As root it creates lockspace "permpriv" (mode 0600) and "permopen"
 * (0666), takes EX on "R" in permopen (lock id L), and leaves an orphan
 * (a PERSISTENT PR on "O", its connection closed).  Then a child drops
 * to nobody/nogroup with no supplementary groups and checks:
 *
 *   - it may not create a lockspace (EPERM: only an admin may) nor open
 *     permpriv (EACCES: its mode, like a device node's);
 *   - the AST socket it passes at LS_OPEN must be a unix SEQPACKET
 *     socket connected to a peer of its own: a pipe, a file, /dev/null
 *     (ENOTSOCK), a datagram, stream or unconnected socket (EINVAL), one
 *     connected to dlmd's socket (EPERM: root's) are refused, and the
 *     pipe is not made non-blocking;
 *   - a request ring on a hugetlbfs memfd is refused (EINVAL: a hole
 *     punched in it and its huge pages taken, dlmd's next touch of the
 *     ring would be SIGBUS);
 *   - a request ring is refused before the connection is bound to a
 *     lockspace (ENOTCONN), and when the fd passed is not a writable
 *     sealed memfd: a root-owned file it may only read (/etc/passwd),
 *     a regular file of its own, an unsealed memfd (EINVAL), its own
 *     sealed memfd passed read-only (EACCES: dlmd maps it writable);
 *     a second ring is EISCONN;
 *   - through its ring (requests in the shared slots, decoded by dlmd as
 *     its own) and on its socket alike: it may lock its own locks, but
 *     an unlock or a conversion of root's lock L is refused, and through
 *     the ring a cancel and a deadlock cancel of L too (EPERM, not "too
 *     late, nothing to cancel"), and L's fencing token (ENOENT);
 *   - it may neither purge nor adopt root's orphans (EPERM), however
 *     often it asks (PERM_REPEAT times each).
 * Back as root: L is still held (its conversion succeeds) and the
 * orphan still there (root adopts it), so nothing the child tried
 * reached them.
 *
 * Prints "ok WHAT" or "FAIL WHAT: DETAIL" per check; exit 0 iff all
 * passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libdlm/libdlm.h"
#include "libdlm/dlmd_proto.h"
#include "tests/raw-client.h"

#define NOBODY		65534
#define PERM_REPEAT	100	/* refused purges and adoptions, each */

static int failures;

static void check(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok %s\n", what);
	} else {
		printf("FAIL %s: ", what);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		failures++;
	}
	fflush(stdout);
}

static int raw_request(int fd, struct dlmp_msg *msg, int pass_fd)
{
	static uint32_t reqid;
	int rv = raw_send(fd, msg, ++reqid, pass_fd);

	return rv ? rv : raw_reply(fd, reqid);
}

/* LS_OPEN of 'name' passing ast_fd as the AST socket. */
static int raw_ls_open_fd(int fd, const char *name, int ast_fd)
{
	struct dlmp_msg msg;

	raw_ls_msg(&msg, DLMP_LS_OPEN, name);
	return raw_request(fd, &msg, ast_fd);
}

static int raw_ls_open(int fd, const char *name)
{
	int sv[2], rv;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	rv = raw_ls_open_fd(fd, name, sv[1]);
	close(sv[1]);
	/* sv[0], the AST socket's other end, stays open with the process */
	return rv;
}

static int raw_ring_attach(int fd, int memfd)
{
	struct dlmp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_RING;
	msg.m_u.pair.pr_a = DLMP_RING_ATTACH;
	return raw_request(fd, &msg, memfd);
}

/* A memfd of DLMP_RING_BYTES; sealed against shrinking if 'seal'. */
static int ring_memfd(int seal)
{
	int fd = memfd_create("perm-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)DLMP_RING_BYTES) < 0 ||
	    (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)) {
		perror("perm-client: memfd");
		exit(2);
	}
	return fd;
}

/* LOCK (a new request on 'name', or a conversion of lkid), not waiting. */
static void lock_msg(struct dlmp_msg *msg, int mode, const char *name,
		     uint32_t convert_lkid)
{
	raw_lock_msg(msg, mode, convert_lkid ? "" : name);
	if (convert_lkid) {
		msg->m_u.lock.lk_flags = LKF_CONVERT;
		msg->m_u.lock.lk_lkid = convert_lkid;
	}
}

static void unlock_msg(struct dlmp_msg *msg, uint32_t lkid)
{
	memset(msg, 0, sizeof(*msg));
	msg->m_hdr.h_type = DLMP_UNLOCK;
	msg->m_u.unlock.ul_lkid = lkid;
}

/* A request of two words (DEADLOCK, TOKEN) on lkid. */
static void pair_msg(struct dlmp_msg *msg, uint16_t type, uint32_t lkid)
{
	memset(msg, 0, sizeof(*msg));
	msg->m_hdr.h_type = type;
	msg->m_u.pair.pr_a = lkid;
}

/* Put msg (reqid) into the ring's next slot and kick dlmd; its REPLY
 * comes on the socket. */
static int ring_request(int fd, struct dlmp_ring *r, struct dlmp_msg *msg,
			uint32_t reqid)
{
	unsigned char *slot = r->rg_slots[r->rg_tail & (DLMP_RING_SLOTS - 1)];
	struct dlmp_msg kick;
	uint32_t len32;
	int len;

	msg->m_hdr.h_reqid = reqid;
	len = dlmp_encode(msg, slot + 8, DLMP_MAX_MSG);
	if (len < 0)
		return len;
	len32 = (uint32_t)len;
	memcpy(slot, &len32, 4);
	memset(slot + 4, 0, 4);
	__atomic_store_n(&r->rg_tail, r->rg_tail + 1, __ATOMIC_SEQ_CST);
	memset(&kick, 0, sizeof(kick));
	kick.m_hdr.h_type = DLMP_RING;
	kick.m_u.pair.pr_a = DLMP_RING_KICK;
	__atomic_store_n(&r->rg_sleeping, 0, __ATOMIC_SEQ_CST);
	if (raw_send(fd, &kick, reqid + 1000, -1))
		return -EIO;
	return raw_reply(fd, reqid);
}

static void drop_to_nobody(void)
{
	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0 || getuid() != NOBODY) {
		perror("perm-client: cannot become nobody");
		exit(2);
	}
}

/* LS_OPEN passing ast_fd, on a connection of its own: refused with
 * 'want'. */
static void ast_fd_refused(int ast_fd, int want, const char *what)
{
	int fd, rv;

	if (ast_fd < 0) {
		check(0, what, "cannot make the fd: %s", strerror(errno));
		return;
	}
	fd = raw_connect();
	if (fd < 0) {
		check(0, what, "cannot connect: %s", strerror(errno));
		return;
	}
	rv = raw_ls_open_fd(fd, "permopen", ast_fd);
	check(rv == want, what, "status %d, want %d", rv, want);
	close(fd);
}

/*
 * The AST socket passed at LS_OPEN must be one end of a unix SEQPACKET
 * socketpair of its own (dlmd writes to it as root): a pipe, a regular
 * file, /dev/null, a datagram or stream socketpair, a socket never
 * connected, one connected to dlmd's own socket (a root peer) are
 * refused (each on a connection of its own), and the pipe is not made
 * non-blocking under its owner; a proper one is taken.
 */
static void child_ast_fds(void)
{
	int fd, p[2], sv[2], f, fl;

	if (pipe2(p, O_CLOEXEC) < 0) {
		p[0] = -1;
		p[1] = -1;
	}
	ast_fd_refused(p[1], -ENOTSOCK, "AST fd: a pipe refused");
	fl = p[1] >= 0 ? fcntl(p[1], F_GETFL) : -1;
	check(fl >= 0 && !(fl & O_NONBLOCK), "AST fd: the pipe left blocking",
	      "flags %#x", (unsigned int)fl);
	f = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	ast_fd_refused(f, -ENOTSOCK, "AST fd: a regular file refused");
	if (f >= 0)
		close(f);
	f = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ast_fd_refused(f, -ENOTSOCK, "AST fd: /dev/null refused");
	if (f >= 0)
		close(f);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		sv[1] = -1;
	ast_fd_refused(sv[1], -EINVAL, "AST fd: a datagram socket refused");
	if (sv[1] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		sv[1] = -1;
	ast_fd_refused(sv[1], -EINVAL, "AST fd: a stream socket refused");
	if (sv[1] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	f = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ast_fd_refused(f, -EINVAL, "AST fd: an unconnected socket refused");
	if (f >= 0)
		close(f);
	f = raw_connect();	/* a socket whose peer is dlmd's, root's */
	ast_fd_refused(f, -EPERM,
		       "AST fd: a socket connected to root's refused");
	if (f >= 0)
		close(f);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}
	fd = raw_connect();
	f = fd >= 0 ? raw_ls_open(fd, "permopen") : -ENOTCONN;
	check(f == 0, "AST fd: a socketpair of its own opens", "status %d", f);
	if (fd >= 0)
		close(fd);
}

#define HUGE_LEN	(2u << 20)	/* a huge page, the usual size */

/*
 * A request ring on a hugetlbfs memfd (MFD_HUGETLB, sealed against
 * shrinking) is refused EINVAL, on a connection of its own.  Were it
 * taken, this is what the client would do: punch a hole in it (its huge
 * page reservation goes), take every free huge page, and kick: dlmd's
 * next touch of the ring needs a page there is none of, SIGBUS.  Where
 * the kernel has no hugetlbfs the check is skipped (said so).
 */
static void child_ring_hugetlb(void)
{
	struct dlmp_msg kick;
	int fd, hf, rv;

	hf = memfd_create("perm-huge", MFD_CLOEXEC | MFD_ALLOW_SEALING |
			  MFD_HUGETLB);
	if (hf < 0 || ftruncate(hf, HUGE_LEN) < 0 ||
	    fcntl(hf, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		check(1, "ring on a hugetlb memfd (skipped: no hugetlbfs memfd "
		      "here)", " ");
		if (hf >= 0)
			close(hf);
		return;
	}
	fd = raw_connect();
	rv = fd >= 0 ? raw_ls_open(fd, "permopen") : -ENOTCONN;
	check(rv == 0, "nobody opens permopen (hugetlb ring)", "status %d", rv);
	if (rv) {
		close(hf);
		if (fd >= 0)
			close(fd);
		return;
	}
	rv = raw_ring_attach(fd, hf);
	check(rv == -EINVAL, "ring on a hugetlb memfd refused", "status %d", rv);
	if (rv == 0) {
		/* taken: the attack, to show what it costs */
		if (fallocate(hf, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			      HUGE_LEN) == 0) {
			for (int i = 0; i < 4096; i++)
				if (mmap(NULL, HUGE_LEN, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
					 -1, 0) == MAP_FAILED)
					break;
		}
		memset(&kick, 0, sizeof(kick));
		kick.m_hdr.h_type = DLMP_RING;
		kick.m_u.pair.pr_a = DLMP_RING_KICK;
		raw_send(fd, &kick, 77, -1);
		sleep(1);
	}
	close(hf);
	close(fd);
}

/* The rings: refused fds, then a good one, and what goes through it. */
static void child_rings(uint32_t root_lkid)
{
	struct dlmp_msg msg;
	struct dlmp_ring *r;
	char path[64];
	struct stat before, after;
	int fd, mfd, ro, tf, pw, rv;

	fd = raw_connect();
	check(fd >= 0, "nobody connects", "%s", strerror(errno));
	if (fd < 0)
		return;
	mfd = ring_memfd(1);
	rv = raw_ring_attach(fd, mfd);
	check(rv == -ENOTCONN, "ring before LS_OPEN refused", "status %d", rv);
	rv = raw_ls_open(fd, "permopen");
	check(rv == 0, "nobody opens permopen (0666)", "status %d", rv);

	pw = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	if (pw >= 0 && fstat(pw, &before) == 0) {
		rv = raw_ring_attach(fd, pw);
		check(rv == -EINVAL, "ring on a root file it may read refused",
		      "status %d", rv);
		check(stat("/etc/passwd", &after) == 0 &&
		      after.st_size == before.st_size &&
		      after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
		      after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
		      "/etc/passwd untouched", "changed");
		close(pw);
	}
	tf = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tf >= 0 && ftruncate(tf, (off_t)DLMP_RING_BYTES) == 0) {
		rv = raw_ring_attach(fd, tf);
		check(rv == -EINVAL, "ring on a regular file refused", "status %d",
		      rv);
	}
	if (tf >= 0)
		close(tf);
	ro = ring_memfd(0);
	rv = raw_ring_attach(fd, ro);
	check(rv == -EINVAL, "ring on an unsealed memfd refused", "status %d", rv);
	close(ro);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro >= 0) {
		rv = raw_ring_attach(fd, ro);
		check(rv == -EACCES, "ring on a read-only fd refused", "status %d",
		      rv);
		close(ro);
	}

	r = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (r == MAP_FAILED) {
		perror("perm-client: mmap");
		exit(2);
	}
	rv = raw_ring_attach(fd, mfd);
	check(rv == 0, "ring on its sealed memfd", "status %d", rv);
	rv = raw_ring_attach(fd, mfd);
	check(rv == -EISCONN, "a second ring refused", "status %d", rv);

	/* through the ring: its own lock, then root's */
	lock_msg(&msg, LKM_NLMODE, "N", 0);
	rv = ring_request(fd, r, &msg, 101);
	check(rv == 0, "ring: nobody locks its own", "status %d", rv);
	unlock_msg(&msg, root_lkid);
	rv = ring_request(fd, r, &msg, 102);
	check(rv != 0 && rv != -ETIME, "ring: unlock of root's lock refused",
	      "status %d", rv);
	lock_msg(&msg, LKM_NLMODE, NULL, root_lkid);
	rv = ring_request(fd, r, &msg, 103);
	check(rv != 0 && rv != -ETIME, "ring: conversion of root's lock refused",
	      "status %d", rv);
	/* a cancel, a deadlock cancel: refused, not "nothing to cancel" */
	unlock_msg(&msg, root_lkid);
	msg.m_u.unlock.ul_flags = LKF_CANCEL;
	rv = ring_request(fd, r, &msg, 104);
	check(rv == -EPERM, "ring: cancel of root's lock refused", "status %d", rv);
	pair_msg(&msg, DLMP_DEADLOCK, root_lkid);
	rv = ring_request(fd, r, &msg, 105);
	check(rv == -EPERM, "ring: deadlock cancel of root's lock refused",
	      "status %d", rv);
	/* another client's lock: not even its fencing token */
	pair_msg(&msg, DLMP_TOKEN, root_lkid);
	rv = ring_request(fd, r, &msg, 106);
	check(rv == -ENOENT, "ring: token of root's lock refused", "status %d", rv);
	check(__atomic_load_n(&r->rg_head, __ATOMIC_ACQUIRE) == 6,
	      "dlmd took the six from the ring", "head %u", r->rg_head);

	/* the same on the socket */
	unlock_msg(&msg, root_lkid);
	rv = raw_request(fd, &msg, -1);
	check(rv != 0 && rv != -ETIME, "socket: unlock of root's lock refused",
	      "status %d", rv);
	lock_msg(&msg, LKM_NLMODE, NULL, root_lkid);
	rv = raw_request(fd, &msg, -1);
	check(rv != 0 && rv != -ETIME, "socket: conversion of root's lock refused",
	      "status %d", rv);
	munmap(r, DLMP_RING_BYTES);
	close(mfd);
	close(fd);
}

static int child(uint32_t root_lkid, pid_t root_pid)
{
	struct dlm_lksb lksb;
	dlm_lshandle_t h;
	int rv;

	drop_to_nobody();
	h = dlm_new_lockspace("permnew", 0666, 0);
	check(!h && errno == EPERM, "nobody may not create a lockspace",
	      "%s", h ? "created" : strerror(errno));
	h = dlm_open_lockspace("permpriv");
	check(!h && errno == EACCES, "nobody may not open permpriv (0600)",
	      "%s", h ? "opened" : strerror(errno));
	child_ast_fds();
	child_ring_hugetlb();
	child_rings(root_lkid);

	h = dlm_open_lockspace("permopen");
	check(h != NULL, "libdlm: nobody opens permopen", "%s", strerror(errno));
	if (!h)
		return 1;
	/* nor release it (only an admin may) */
	check(dlm_release_lockspace("permopen", dlm_open_lockspace("permopen"),
				    1) < 0 && errno == EPERM,
	      "nobody may not release permopen", "%s", strerror(errno));
	rv = dlm_ls_purge(h, 0, (int)root_pid);
	check(rv < 0 && errno == EPERM, "nobody may not purge root's orphans",
	      "rv %d %s", rv, strerror(errno));
	memset(&lksb, 0, sizeof(lksb));
	rv = dlm_ls_lock_wait(h, LKM_PRMODE, &lksb,
			      LKF_ORPHAN | LKF_PERSISTENT, "O", 1, 0,
			      NULL, NULL, NULL);
	check((rv < 0 && errno == EPERM) || (rv == 0 && lksb.sb_status == -EPERM),
	      "nobody may not adopt root's orphan", "rv %d errno %s status %d",
	      rv, strerror(errno), lksb.sb_status);
	/* again and again: each refused (and dlmd logs a few of them only:
	 * tests/test-client-perms.sh counts) */
	{
		int refused = 0;

		for (int i = 0; i < PERM_REPEAT; i++) {
			rv = dlm_ls_purge(h, 0, (int)root_pid);
			refused += rv < 0 && errno == EPERM;
			memset(&lksb, 0, sizeof(lksb));
			rv = dlm_ls_lock_wait(h, LKM_PRMODE, &lksb,
					      LKF_ORPHAN | LKF_PERSISTENT, "O",
					      1, 0, NULL, NULL, NULL);
			refused += (rv < 0 && errno == EPERM) ||
				   (rv == 0 && lksb.sb_status == -EPERM);
		}
		check(refused == 2 * PERM_REPEAT,
		      "nobody's purges and adoptions of root's orphan, repeated, "
		      "all refused", "%d of %d", refused, 2 * PERM_REPEAT);
	}
	dlm_close_lockspace(h);
	return failures ? 1 : 0;
}

int main(void)
{
	struct dlm_lksb lk, orphan;
	dlm_lshandle_t priv, open_h, oh;
	pid_t p;
	int status, rv;

	if (getuid() != 0) {
		fprintf(stderr, "perm-client: run me as root\n");
		return 2;
	}
	priv = dlm_new_lockspace("permpriv", 0600, 0);
	open_h = dlm_new_lockspace("permopen", 0666, 0);
	if (!priv || !open_h) {
		perror("perm-client: create");
		return 2;
	}
	memset(&lk, 0, sizeof(lk));
	if (dlm_ls_lock_wait(open_h, LKM_EXMODE, &lk, 0, "R", 1, 0, NULL, NULL,
			     NULL) || lk.sb_status) {
		fprintf(stderr, "perm-client: root's lock: %d\n", lk.sb_status);
		return 2;
	}
	/* root's orphan: a PERSISTENT lock whose connection closes */
	oh = dlm_open_lockspace("permopen");
	memset(&orphan, 0, sizeof(orphan));
	if (!oh || dlm_ls_lock_wait(oh, LKM_PRMODE, &orphan, LKF_PERSISTENT,
				    "O", 1, 0, NULL, NULL, NULL) ||
	    orphan.sb_status) {
		fprintf(stderr, "perm-client: root's orphan\n");
		return 2;
	}
	dlm_close_lockspace(oh);
	fflush(stdout);

	p = fork();
	if (p < 0)
		return 2;
	if (p == 0)
		_exit(child(lk.sb_lkid, getppid()));
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == 2) {
		fprintf(stderr, "perm-client: the child did not run its checks\n");
		return 2;
	}
	if (WEXITSTATUS(status))
		failures++;

	/* nothing the child tried reached root's lock or orphan */
	rv = dlm_ls_lock_wait(open_h, LKM_NLMODE, &lk, LKF_CONVERT, "R", 1, 0,
			      NULL, NULL, NULL);
	check(rv == 0 && lk.sb_status == 0, "root's lock still held",
	      "rv %d status %d", rv, lk.sb_status);
	memset(&orphan, 0, sizeof(orphan));
	rv = dlm_ls_lock_wait(open_h, LKM_PRMODE, &orphan,
			      LKF_ORPHAN | LKF_PERSISTENT, "O", 1, 0,
			      NULL, NULL, NULL);
	check(rv == 0 && orphan.sb_status == 0, "root's orphan still there",
	      "rv %d status %d", rv, orphan.sb_status);
	dlm_ls_unlock_wait(open_h, orphan.sb_lkid, 0, &orphan);
	dlm_ls_unlock_wait(open_h, lk.sb_lkid, 0, &lk);
	dlm_release_lockspace("permopen", open_h, 1);
	dlm_release_lockspace("permpriv", priv, 1);
	return failures ? 1 : 0;
}
