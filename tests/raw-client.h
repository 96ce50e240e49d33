/*
 * tests/raw-client.h - a bare client of dlmd's socket, for the tests that
 * must send what libdlm would not (tests/perm-client.c,
 * tests/ring-hostile.c, tests/test-libdlm.c): a connection, one packet
 * (with an fd passed), the REPLY to a request.  Every wait is bounded
 * (RAW_RECV_TIMEOUT_S, which a test may define first).  Also the
 * requests they build, raw_ls_msg() and raw_lock_msg(), which the tests
 * that hand requests to the daemon's code directly use too
 * (tests/daemon-direct.h).  Inline: a test need not use them all.
 */
#ifndef DLMD_TESTS_RAW_CLIENT_H
#define DLMD_TESTS_RAW_CLIENT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "libdlm/dlmd_proto.h"

#ifndef RAW_RECV_TIMEOUT_S
#define RAW_RECV_TIMEOUT_S 10
#endif

/* A request of 'type' (DLMP_LS_OPEN, _LS_CREATE, _LS_RELEASE) naming the
 * lockspace 'name'; every other field 0. */
static inline void raw_ls_msg(struct dlmp_msg *m, uint16_t type, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->m_hdr.h_type = type;
	m->m_u.ls.ls_namelen = (uint16_t)strlen(name);
	memcpy(m->m_u.ls.ls_name, name, strlen(name));
}

/* A DLMP_LOCK of the resource 'name' (no NUL: DLMP_NAME_MAX bytes at
 * most) in 'mode'; every other field 0. */
static inline void raw_lock_msg(struct dlmp_msg *m, int mode, const char *name)
{
	memset(m, 0, sizeof(*m));
	m->m_hdr.h_type = DLMP_LOCK;
	m->m_u.lock.lk_mode = (uint8_t)mode;
	m->m_u.lock.lk_namelen = (uint8_t)strlen(name);
	memcpy(m->m_u.lock.lk_name, name, strlen(name));
}

/* A bare connection to $DLMD_SOCKET, or -1. */
static inline int raw_connect(void)
{
	const char *path = getenv("DLMD_SOCKET");
	struct timeval tv = { RAW_RECV_TIMEOUT_S, 0 };
	struct sockaddr_un sa;
	int fd;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	/* a bound on every wait for an answer */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send msg (with reqid) on fd, passing pass_fd (-1: none). */
static inline int raw_send(int fd, struct dlmp_msg *msg, uint32_t reqid, int pass_fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	union {
		char		b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh;
	int len;

	msg->m_hdr.h_reqid = reqid;
	len = dlmp_encode(msg, buf, sizeof(buf));
	if (len < 0)
		return len;
	iov.iov_base = buf;
	iov.iov_len = (size_t)len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = sizeof(cbuf.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == len ? 0 : -EIO;
}

/* The status of the REPLY to reqid (other answers skipped); -ETIME if
 * none came. */
static inline int raw_reply(int fd, uint32_t reqid)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0)
			return -ETIME;
		if (dlmp_decode(buf, (size_t)n, &m) == 0 &&
		    m.m_hdr.h_type == DLMP_REPLY && m.m_hdr.h_reqid == reqid)
			return m.m_u.reply.rp_status;
	}
}

#endif
