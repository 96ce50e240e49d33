/*
 * tests/fdpass-client.c - a client that passes dlmd fds whose last close
 * would wait (tests/test-client-fdpass.sh runs it as root with dlmd's
 * pid; it becomes nobody, keeping root only as its saved uid to stop
 * and continue dlmd).
 *
 * Any packet on dlmd's socket may carry fds (SCM_RIGHTS); dlmd closes
 * those it does not keep, and when the sender closed its own copies
 * dlmd's close is the last one, which runs the file's release in dlmd.
 * A TCP socket with SO_LINGER set, whose peer does not read, makes that
 * close wait until its data is sent or the linger time passes (an hour
 * here): dlmd, one thread, would serve nobody meanwhile (plugin/client.c
 * "Passed fds").  So this client makes such sockets (a listener on
 * 127.0.0.1 of its own, a connection to it whose accepted end never
 * reads, the sender's buffer filled) and hands them to dlmd each way it
 * can; dlmd is stopped (SIGSTOP) while it sends and closes its copies,
 * so that dlmd's close is the last one every time (a hostile client
 * would merely try until it is):
 *
 *   lsopen   with an LS_OPEN of a lockspace that does not exist;
 *   extra    as the second of two fds passed with one request;
 *   many     as the last of 64 fds passed with one request (past what
 *            dlmd's control buffer held: the kernel released the rest
 *            in dlmd's recvmmsg);
 *   unread   with a packet still in the connection's queue when dlmd
 *            closes it;
 *   astq     in the queue of the AST socket it passed (dlmd never reads
 *            it; closing it releases the queue) - in lockspace LS_NAME,
 *            which the test creates, mode 0666;
 *   rings    (not an fd's close: the ring's memory) RINGS_PER_UID
 *            rings of nobody's mapped, the next refused EDQUOT, root's
 *            not; one mapped again after a close;
 *   ring-size a ring's memfd that can grow, or larger than a ring, is
 *            refused EINVAL (its last release frees it all in dlmd);
 *   budget   300 at once, more than dlmd lets one user have waiting
 *            (client.c REAP_UID_MAX): the connection is cut, a new one
 *            refused with EMFILE while they wait, root's served; once
 *            they are freed, nobody is served again;
 *   flood    past the budget (one connection's packets: a stuck socket
 *            and /dev/null fds), 2000 connections that close at once
 *            and 300 that leave a packet with an fd queued as they
 *            close: dlmd's fds stay under its bound (base + client.c
 *            REAP_UID_HELD + one packet's, + a margin), root served;
 *   interrupt one passed (dlmd's close is its last), the user's
 *            closes flooded behind it: the close is interrupted within a
 *            second or two, dlmd's fds back to their start, the peer
 *            still not reading (first, so that nothing of the others'
 *            waits);
 *   burst    64 packets of 253 fds each (one a stuck socket) queued
 *            while dlmd is stopped, read in one wake-up: dlmd's fds
 *            stay under that bound, root served.  (The test runs dlmd
 *            with 1024 fds: past that it could not answer.)
 *
 * After each of the first five, a second connection asks dlmd something
 * (LS_OPEN of a lockspace that does not exist, no fd: -EBADF) and must
 * get its REPLY within RAW_RECV_TIMEOUT_S; a dlmd stuck in a close gets
 * none.  Prints "ok fdpass WAY ..." or "FAIL fdpass WAY ..." for each;
 * exits 1 on a FAIL.  After a FAIL, and at the end, the accepted ends
 * close with unread data (a reset), which ends any close that waits.
 * Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RAW_RECV_TIMEOUT_S 20
#include "libdlm/dlmd_proto.h"
#include "tests/raw-client.h"

#define LS_NAME		"fdpass"
#define NOBODY		65534
#define LINGER_S	3600
#define MAX_HELD_OPEN	512
#define BUDGET_SOCKETS	300	/* past client.c REAP_UID_MAX (256) */
#define POLLS		100	/* waits: polls of 0.1 s */
#define RINGS		64	/* client.c RINGS_PER_UID */
#define SCM_FDS		253	/* client.c DLMD_SCM_MAX_FD */
/* client.c REAP_UID_HELD, one packet's fds past it, and a margin (the
 * jails of parked sockets, the ways before) */
#define FDS_BOUND	(2 * 256 + SCM_FDS + 64)

static pid_t dlmd_pid;
static int dlmd_fds0;	/* dlmd's fds at the start */
static int listener = -1;
static int accepted[MAX_HELD_OPEN];
static unsigned int naccepted;

/* A TCP socket whose close lingers: connected to our own listener, whose
 * end never reads, its send buffer full, SO_LINGER LINGER_S. */
static int lingering_socket(void)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	struct linger lg = { 1, LINGER_S };
	int small = 4096, fd, a, n = 0;
	char buf[65536];

	if (listener < 0) {
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (listener < 0 ||
		    bind(listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(listener, 16) < 0)
			return -1;
	}
	if (getsockname(listener, (struct sockaddr *)&sa, &salen) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	a = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (a < 0 || naccepted == MAX_HELD_OPEN) {
		close(fd);
		if (a >= 0)
			close(a);
		return -1;
	}
	setsockopt(a, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	accepted[naccepted++] = a;
	memset(buf, 'x', sizeof(buf));
	/* fill until the peer's window and our buffer are full (bounded) */
	while (n < 4096 && send(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		n++;
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send msg on fd with the nfds fds in fds[]. */
static int send_fds(int fd, struct dlmp_msg *msg, uint32_t reqid,
		    const int *fds, unsigned int nfds)
{
	unsigned char buf[DLMP_MAX_MSG];
	union {
		char		b[CMSG_SPACE(sizeof(int) * SCM_FDS)];
		struct cmsghdr	align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	int len;

	msg->m_hdr.h_reqid = reqid;
	len = dlmp_encode(msg, buf, sizeof(buf));
	if (len < 0 || nfds > SCM_FDS || nfds == 0)
		return -1;
	iov.iov_base = buf;
	iov.iov_len = (size_t)len;
	memset(&mh, 0, sizeof(mh));
	memset(&cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.b;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == len ? 0 : -1;
}

/* dlmd stopped (SIGSTOP) or continued, so that its close of what we pass
 * comes after ours, deterministically: a hostile client would merely
 * try again until it does.  Root for the signal (our saved uid). */
static void dlmd_hold(bool stop)
{
	if (seteuid(0) < 0 || kill(dlmd_pid, stop ? SIGSTOP : SIGCONT) < 0 ||
	    seteuid(NOBODY) < 0) {
		perror("signalling dlmd");
		_exit(1);
	}
}

/* The status of a request on a fresh connection (-ETIME: none came;
 * the refusal of the connection, if it is refused). */
static int dlmd_ask(void)
{
	struct dlmp_msg m;
	int fd = raw_connect(), st;

	if (fd < 0)
		return -ECONNREFUSED;
	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	if (raw_send(fd, &m, 1, -1) < 0) {
		/* refused and closed already: the refusal waits */
		st = raw_reply(fd, 0);
	} else {
		unsigned char buf[DLMP_MAX_MSG];
		struct dlmp_msg a;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		/* refused with our request unread: the reset comes first,
		 * then the refusal */
		if (n < 0 && errno == ECONNRESET)
			n = recv(fd, buf, sizeof(buf), 0);
		st = -ETIME;
		if (n > 0 && dlmp_decode(buf, (size_t)n, &a) == 0 &&
		    a.m_hdr.h_type == DLMP_REPLY)
			st = a.m_u.reply.rp_status;
		else
			printf("# dlmd_ask: recv %zd (%s)\n", n,
			       n < 0 ? strerror(errno) : "");
	}
	close(fd);
	return st;
}

/* Does dlmd still answer?  A request on a fresh connection. */
static bool dlmd_answers(void)
{
	struct dlmp_msg m;
	int fd = raw_connect(), st;

	if (fd < 0)
		return false;
	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	st = raw_send(fd, &m, 1, -1) == 0 ? raw_reply(fd, 1) : -ETIME;
	close(fd);
	return st != -ETIME;
}

static int failures;

/* The accepted ends close with unread data: a reset, which ends any
 * lingering close of their peers. */
static void release_all(void)
{
	for (unsigned int i = 0; i < naccepted; i++)
		close(accepted[i]);
	naccepted = 0;
}

static void verdict(const char *way, bool passed_ok)
{
	if (!passed_ok) {
		printf("FAIL fdpass %s: could not set it up\n", way);
		failures++;
	} else if (dlmd_answers()) {
		printf("ok fdpass %s: dlmd answers\n", way);
	} else {
		printf("FAIL fdpass %s: dlmd does not answer within %d s\n",
		       way, RAW_RECV_TIMEOUT_S);
		failures++;
		release_all();	/* frees dlmd for the next way */
	}
	fflush(stdout);
}

/* An LS_OPEN of a lockspace that does not exist, carrying 'fds'. */
static bool pass_with_open(const int *fds, unsigned int nfds, bool wait_reply)
{
	struct dlmp_msg m;
	int fd = raw_connect();
	bool ok;

	if (fd < 0)
		return false;
	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	dlmd_hold(true);
	ok = send_fds(fd, &m, 7, fds, nfds) == 0;
	/* ours go: dlmd holds the last copies */
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	dlmd_hold(false);
	if (ok && wait_reply)
		ok = raw_reply(fd, 7) != -ETIME;
	close(fd);
	return ok;
}

static void way_lsopen(void)
{
	int s = lingering_socket();

	verdict("lsopen", s >= 0 && pass_with_open(&s, 1, false));
}

static void way_extra(void)
{
	int fds[2] = { -1, -1 };

	fds[1] = lingering_socket();
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	verdict("extra", fds[0] >= 0 && fds[1] >= 0 &&
		pass_with_open(fds, 2, false));
}

static void way_many(void)
{
	int fds[64];
	bool ok = true;

	for (unsigned int i = 0; i < 63; i++) {
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		ok = ok && fds[i] >= 0;
	}
	fds[63] = lingering_socket();
	ok = ok && fds[63] >= 0;
	verdict("many", ok && pass_with_open(fds, 64, false));
}

/* Packets with the socket left in the connection's queue as it closes:
 * dlmd reads them (EOF comes after them) or purges them at its close. */
static void way_unread(void)
{
	struct dlmp_msg m;
	int fd = raw_connect(), s = lingering_socket();
	bool ok = fd >= 0 && s >= 0;

	if (ok) {
		/* a packet too long for any request: its fd rides along */
		raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
		dlmd_hold(true);
		ok = send_fds(fd, &m, 9, &s, 1) == 0;
		close(s);
		close(fd);
		dlmd_hold(false);
	} else {
		if (s >= 0)
			close(s);
		if (fd >= 0)
			close(fd);
	}
	verdict("unread", ok);
}

/* In the receive queue of the AST socket dlmd holds. */
static void way_astq(void)
{
	struct dlmp_msg m;
	int sv[2], fd = raw_connect(), s = lingering_socket();
	bool ok = fd >= 0 && s >= 0;

	if (ok && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		ok = false;
	if (ok) {
		raw_ls_msg(&m, DLMP_LS_OPEN, LS_NAME);
		ok = raw_send(fd, &m, 3, sv[1]) == 0 && raw_reply(fd, 3) == 0;
		if (!ok)
			printf("# astq: LS_OPEN %s refused\n", LS_NAME);
	}
	if (ok) {
		/* into dlmd's end of the AST socket: never read there */
		raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
		ok = send_fds(sv[0], &m, 1, &s, 1) == 0;
		close(sv[1]);
	}
	if (s >= 0)
		close(s);
	/* dlmd closes its AST socket as this connection closes */
	if (fd >= 0)
		close(fd);
	verdict("astq", ok);
	if (ok)
		close(sv[0]);
}

/* More fds than its user may have waiting: its connection is cut, its
 * new ones refused (EMFILE), root's still served; once its closes end,
 * it is served again. */
static void way_budget(void)
{
	int fd = raw_connect(), fds[60], st;
	struct dlmp_msg m;
	bool ok = fd >= 0;

	dlmd_hold(true);
	for (unsigned int p = 0; ok && p < BUDGET_SOCKETS / 60; p++) {
		unsigned int k;

		for (k = 0; k < 60; k++) {
			fds[k] = lingering_socket();
			if (fds[k] < 0)
				break;
		}
		raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
		ok = k == 60 && send_fds(fd, &m, 20 + p, fds, 60) == 0;
		for (unsigned int i = 0; i < k; i++)
			close(fds[i]);
	}
	dlmd_hold(false);
	if (!ok) {
		printf("FAIL fdpass budget: could not set it up\n");
		failures++;
		return;
	}
	/* dlmd cuts it once past the budget: its socket ends */
	for (unsigned int i = 0; i < 1000; i++) {
		unsigned char buf[DLMP_MAX_MSG];

		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			break;
	}
	close(fd);
	st = dlmd_ask();
	if (st != -EMFILE) {
		printf("FAIL fdpass budget: a new connection got %d, not the "
		       "refusal EMFILE\n", st);
		failures++;
	}
	if (seteuid(0) < 0)
		_exit(1);
	st = dlmd_ask();
	if (seteuid(NOBODY) < 0)
		_exit(1);
	if (st == -ETIME || st == -EMFILE || st == -ECONNREFUSED) {
		printf("FAIL fdpass budget: root not served (%d)\n", st);
		failures++;
	}
	release_all();
	for (unsigned int i = 0; i < POLLS && (st = dlmd_ask()) == -EMFILE; i++)
		usleep(100000);
	if (st == -EMFILE || st == -ETIME) {
		printf("FAIL fdpass budget: still refused (%d) once its closes "
		       "ended\n", st);
		failures++;
		return;
	}
	printf("ok fdpass budget: cut, refused EMFILE while its closes waited, "
	       "root served, served again after\n");
}

/* The fds dlmd has open (root, to read its /proc), or -1. */
static int dlmd_nfds(void)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	if (seteuid(0) < 0)
		_exit(1);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)dlmd_pid);
	dir = opendir(path);
	if (seteuid(NOBODY) < 0)
		_exit(1);
	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/* dlmd's fds under FDS_BOUND past the start, root served, and nobody
 * once its closes end ("ok" printed by the caller). */
static bool after_attack(const char *way)
{
	int n = dlmd_nfds(), st;
	bool ok = true;

	printf("# %s: dlmd has %d fds (%d at the start)\n", way, n, dlmd_fds0);
	if (n < 0 || n > dlmd_fds0 + FDS_BOUND) {
		printf("FAIL fdpass %s: dlmd holds %d fds, more than %d + %d\n",
		       way, n, dlmd_fds0, FDS_BOUND);
		ok = false;
	}
	if (seteuid(0) < 0)
		_exit(1);
	st = dlmd_ask();
	if (seteuid(NOBODY) < 0)
		_exit(1);
	if (st == -ETIME || st == -EMFILE || st == -ECONNREFUSED) {
		printf("FAIL fdpass %s: root not served (%d)\n", way, st);
		ok = false;
	}
	release_all();
	for (unsigned int i = 0; i < POLLS && (st = dlmd_ask()) == -EMFILE; i++)
		usleep(100000);
	if (st == -EMFILE || st == -ETIME) {
		printf("FAIL fdpass %s: still refused (%d) once its closes "
		       "ended\n", way, st);
		ok = false;
	}
	if (!ok)
		failures++;
	return ok;
}

/* Wait (bounded) until dlmd cuts fd: its socket ends. */
static void wait_cut(int fd)
{
	for (unsigned int i = 0; i < 1000; i++) {
		unsigned char buf[DLMP_MAX_MSG];

		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			break;
	}
}

/* nul[] (SCM_FDS - 1 of /dev/null) and a stuck socket in *s. */
static bool open_fds(int *nul, int *s)
{
	for (unsigned int i = 0; i < SCM_FDS; i++)
		nul[i] = -1;
	for (unsigned int i = 0; i < SCM_FDS - 1; i++) {
		nul[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul[i] < 0)
			return false;
	}
	*s = lingering_socket();
	return *s >= 0;
}

static void close_fds(int *nul)
{
	for (unsigned int i = 0; i < SCM_FDS - 1; i++)
		if (nul[i] >= 0)
			close(nul[i]);
}

/* A stuck close is interrupted: one lingering socket passed (its peer
 * kept, never reading), our copy closed, then SCM_FDS - 1 of /dev/null
 * with a request and INTERRUPT_CONNS connections that leave a packet
 * with an fd queued as they close.  Before, the user's reaper waited in
 * the first close for LINGER_S, the rest waited behind it in dlmd's fd
 * table and the connections' sockets were parked in a jail (fds of
 * dlmd's): dlmd's table stayed that much over its start.  Now the
 * reaper's close is interrupted after a second or so: dlmd's fds come
 * back to what they were (a margin of 4) while the peer still does not
 * read, and nobody is served. */
#define INTERRUPT_CONNS	600

static void way_interrupt(void)
{
	int nul[SCM_FDS], s = -1, fd = raw_connect(), n = -1, st;
	int nleft = 0;
	struct dlmp_msg m;
	bool ok = fd >= 0 && open_fds(nul, &s);

	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	dlmd_hold(true);
	ok = ok && send_fds(fd, &m, 70, &s, 1) == 0 &&
	     send_fds(fd, &m, 71, nul, SCM_FDS - 1) == 0;
	if (s >= 0)
		close(s);
	dlmd_hold(false);
	for (unsigned int i = 0; ok && i < INTERRUPT_CONNS; i++) {
		int k = raw_connect();

		if (k >= 0 && send_fds(k, &m, 72, nul, 1) == 0)
			nleft++;
		if (k >= 0)
			close(k);
	}
	close_fds(nul);
	if (fd >= 0)
		close(fd);
	if (!ok || nleft < INTERRUPT_CONNS / 2) {
		printf("FAIL fdpass interrupt: could not set it up (%d)\n",
		       nleft);
		failures++;
		release_all();
		return;
	}
	printf("# interrupt: dlmd has %d fds after the flood (%d at the "
	       "start)\n", dlmd_nfds(), dlmd_fds0);
	/* bounded: LINGER_S before, a second or two after */
	for (unsigned int i = 0; i < 2 * POLLS; i++) {
		n = dlmd_nfds();
		if (n >= 0 && n <= dlmd_fds0 + 4)
			break;
		usleep(100000);
	}
	st = dlmd_ask();
	release_all();
	if (n < 0 || n > dlmd_fds0 + 4 || st == -EMFILE || st == -ETIME) {
		printf("FAIL fdpass interrupt: dlmd still holds %d fds (%d at "
		       "the start; its peer not reading), nobody got %d\n",
		       n, dlmd_fds0, st);
		failures++;
		return;
	}
	printf("ok fdpass interrupt: the lingering close was interrupted, "
	       "%d connections with an fd closed, dlmd back to %d fds\n",
	       nleft, n);
}

/* Past the budget, connections that cost dlmd an fd each, once. */
static void way_flood(void)
{
	int nul[SCM_FDS], fds[SCM_FDS], s = -1, fd = raw_connect(), st;
	int nconn = 0, nleft = 0;
	struct dlmp_msg m;
	bool ok = fd >= 0 && open_fds(nul, &s);

	/* the request's fd, then the stuck socket: dlmd drops it first,
	 * so that all the others wait behind it */
	fds[0] = nul[0];
	fds[1] = s;
	memcpy(fds + 2, nul + 1, sizeof(int) * (SCM_FDS - 2));
	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	dlmd_hold(true);
	/* 505 waiting: past REAP_UID_MAX */
	ok = ok && send_fds(fd, &m, 30, fds, SCM_FDS) == 0 &&
	     send_fds(fd, &m, 31, nul, SCM_FDS - 1) == 0;
	if (s >= 0)
		close(s);
	dlmd_hold(false);
	if (fd >= 0) {
		wait_cut(fd);
		close(fd);
	}
	st = ok ? dlmd_ask() : 0;
	if (st != -EMFILE) {
		printf("# flood: not past the budget: %d\n", st);
		ok = false;
	}
	for (unsigned int i = 0; ok && i < 2000; i++) {
		int k = raw_connect();

		if (k >= 0) {
			nconn++;
			close(k);
		}
	}
	for (unsigned int i = 0; ok && i < 300; i++) {
		int k = raw_connect();

		if (k >= 0 && send_fds(k, &m, 40, nul, 1) == 0)
			nleft++;
		if (k >= 0)
			close(k);
	}
	close_fds(nul);
	if (!ok || nconn < 1000 || nleft < 150) {
		printf("FAIL fdpass flood: could not set it up (%d, %d)\n",
		       nconn, nleft);
		failures++;
		release_all();
		return;
	}
	if (after_attack("flood"))
		printf("ok fdpass flood: %d connections and %d with an fd past "
		       "the budget, dlmd's fds bounded, root served\n",
		       nconn, nleft);
}

/* 64 packets of SCM_FDS fds in one wake-up of dlmd's. */
static void way_burst(void)
{
	int nul[SCM_FDS], s = -1, fd = raw_connect(), nsent = 0;
	struct dlmp_msg m;
	bool ok = fd >= 0 && open_fds(nul, &s);

	memmove(nul + 1, nul, sizeof(int) * (SCM_FDS - 1));
	nul[0] = s;
	raw_ls_msg(&m, DLMP_LS_OPEN, "fdpass-none");
	dlmd_hold(true);
	for (unsigned int p = 0; ok && p < 64; p++) {
		/* the first with the stuck socket, then /dev/null's */
		if (send_fds(fd, &m, 50 + p, p ? nul + 1 : nul,
			     p ? SCM_FDS - 1 : SCM_FDS) < 0)
			break;
		nsent++;
	}
	if (s >= 0)
		close(s);
	close_fds(nul + 1);
	dlmd_hold(false);
	if (fd >= 0) {
		wait_cut(fd);
		close(fd);
	}
	if (!ok || nsent < 16) {
		printf("FAIL fdpass burst: could not set it up (%d packets)\n",
		       nsent);
		failures++;
		release_all();
		return;
	}
	if (after_attack("burst"))
		printf("ok fdpass burst: %d packets of %d fds in one wake-up, "
		       "dlmd's fds bounded, root served\n", nsent, SCM_FDS);
}

/* A connection bound to LS_NAME (its AST socket's other end in *ast),
 * or -1. */
static int bound_conn(int *ast)
{
	struct dlmp_msg m;
	int sv[2], fd = raw_connect();

	if (fd < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		close(fd);
		return -1;
	}
	raw_ls_msg(&m, DLMP_LS_OPEN, LS_NAME);
	if (raw_send(fd, &m, 3, sv[1]) < 0 || raw_reply(fd, 3) != 0) {
		close(fd);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	close(sv[1]);
	*ast = sv[0];
	return fd;
}

/* RING ATTACH on fd with a memfd of 'size' sealed with 'seals': its
 * status. */
static int attach_ring_of(int fd, size_t size, int seals)
{
	struct dlmp_msg m;
	int mfd = memfd_create("fdpass-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING), st;

	if (mfd < 0)
		return -ENOMEM;
	if (ftruncate(mfd, (off_t)size) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, seals) < 0) {
		close(mfd);
		return -ENOMEM;
	}
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_RING;
	m.m_u.pair.pr_a = DLMP_RING_ATTACH;
	m.m_u.pair.pr_b = DLMP_RING_ANSWERS;
	st = raw_send(fd, &m, 5, mfd) < 0 ? -EIO : raw_reply(fd, 5);
	close(mfd);
	return st;
}

/* ... of the right size, sealed as libdlm seals it. */
static int attach_ring(int fd)
{
	return attach_ring_of(fd, DLMP_RING_BYTES, F_SEAL_SHRINK | F_SEAL_GROW);
}

/* A ring's memfd that can grow, or is larger than a ring, is refused
 * (EINVAL): its last release, at dlmd's munmap, would free all of it in
 * dlmd's thread. */
static void way_ring_size(void)
{
	int ast, fd, grow = -EIO, big = -EIO;

	/* each on a connection of its own: one accepted takes the next
	 * answer into its ring */
	if ((fd = bound_conn(&ast)) >= 0) {
		grow = attach_ring_of(fd, DLMP_RING_BYTES, F_SEAL_SHRINK);
		close(fd);
		close(ast);
	}
	if ((fd = bound_conn(&ast)) >= 0) {
		big = attach_ring_of(fd, 2 * DLMP_RING_BYTES,
				     F_SEAL_SHRINK | F_SEAL_GROW);
		close(fd);
		close(ast);
	}
	if (grow == -EINVAL && big == -EINVAL) {
		printf("ok fdpass ring-size: a growable ring and a larger one "
		       "refused EINVAL\n");
	} else {
		printf("FAIL fdpass ring-size: a growable ring got %d, a larger "
		       "one %d, not EINVAL\n", grow, big);
		failures++;
	}
}

/* Rings whose pages dlmd's own faults allocate, on dlmd's memory
 * account: RINGS_PER_UID (64) of nobody's are mapped, the next one is
 * refused EDQUOT (the connection goes on without), root's is not; once
 * one of nobody's connections closed, a ring of it is mapped again. */
static void way_rings(void)
{
	int conns[RINGS + 1], asts[RINGS + 1], fd, ast, st = 0;
	unsigned int n = 0;
	bool ok = true;

	for (; n < RINGS; n++) {
		conns[n] = bound_conn(&asts[n]);
		if (conns[n] < 0 || (st = attach_ring(conns[n])) != 0) {
			if (conns[n] >= 0) {
				close(conns[n]);
				close(asts[n]);
			}
			printf("FAIL fdpass rings: ring %u of nobody's: %d\n", n, st);
			failures++;
			ok = false;
			break;
		}
	}
	if (ok) {
		conns[n] = bound_conn(&asts[n]);
		st = conns[n] >= 0 ? attach_ring(conns[n]) : -EIO;
		if (st != -EDQUOT) {
			printf("FAIL fdpass rings: ring %u of nobody's got %d, "
			       "not EDQUOT\n", n, st);
			failures++;
			ok = false;
		}
		if (conns[n] >= 0)
			n++;
	}
	if (ok) {
		if (seteuid(0) < 0)
			_exit(1);
		fd = bound_conn(&ast);
		st = fd >= 0 ? attach_ring(fd) : -EIO;
		if (fd >= 0) {
			close(fd);
			close(ast);
		}
		if (seteuid(NOBODY) < 0)
			_exit(1);
		if (st != 0) {
			printf("FAIL fdpass rings: root's ring got %d\n", st);
			failures++;
			ok = false;
		}
	}
	if (ok) {
		/* one of nobody's goes: a ring of it is taken again (once
		 * dlmd saw the close) */
		close(conns[0]);
		close(asts[0]);
		conns[0] = -1;
		st = -EDQUOT;
		for (unsigned int i = 0; i < POLLS && st == -EDQUOT; i++) {
			fd = bound_conn(&ast);
			st = fd >= 0 ? attach_ring(fd) : -EIO;
			if (fd >= 0) {
				close(fd);
				close(ast);
			}
			if (st == -EDQUOT)
				usleep(100000);
		}
		if (st != 0) {
			printf("FAIL fdpass rings: after a close, nobody's ring "
			       "got %d\n", st);
			failures++;
			ok = false;
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		if (conns[i] >= 0) {
			close(conns[i]);
			close(asts[i]);
		}
	}
	if (ok)
		printf("ok fdpass rings: %d of nobody's mapped, the next refused "
		       "EDQUOT, root's mapped, one again after a close\n", RINGS);
}

int main(int argc, char **argv)
{
	gid_t g = NOBODY;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2 || geteuid() != 0) {
		fprintf(stderr, "usage, as root: fdpass-client DLMD-PID\n");
		return 2;
	}
	dlmd_pid = (pid_t)atoi(argv[1]);
	/* nobody, but for the saved uid (dlmd_hold) */
	if (setgroups(1, &g) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, 0) < 0) {
		perror("dropping to nobody");
		_exit(1);
	}
	{
		/* room for a packet's SCM_FDS and the stuck sockets */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2048 &&
		    rl.rlim_max > rl.rlim_cur) {
			rl.rlim_cur = rl.rlim_max < 2048 ? rl.rlim_max : 2048;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	dlmd_fds0 = dlmd_nfds();
	if (!dlmd_answers()) {
		printf("FAIL fdpass: dlmd does not answer at the start\n");
		fflush(stdout);
		_exit(1);
	}
	way_interrupt();
	way_lsopen();
	way_extra();
	way_many();
	way_unread();
	way_astq();
	way_budget();
	way_flood();
	way_burst();
	way_rings();
	way_ring_size();
	release_all();
	/* _exit: a sanitizer's leak check at exit cannot ptrace a process
	 * that changed its uids (tests/secenv-client.c) */
	fflush(stdout);
	_exit(failures ? 1 : 0);
}
