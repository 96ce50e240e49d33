/*
 * tests/daemon-direct.h - clients of the daemon state of
 * tests/fuzz-daemon.h (no loop, membership none) whose requests a test
 * hands to the daemon's code directly (tests/test-stop-orphans.c,
 * tests/test-stop-refuses.c): a client on a socket pair, a request
 * encoded and handed in, the status of the REPLY it got, and the
 * teardown.  Include after <cmocka.h> (failures are cmocka assertions).
 */
#ifndef DLMD_TESTS_DAEMON_DIRECT_H
#define DLMD_TESTS_DAEMON_DIRECT_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "tests/fuzz-daemon.h"
#include "tests/raw-client.h"

struct dd_client {
	struct dlmd_client	*dc_c;
	int			dc_sock;	/* our end of its socket */
	int			dc_ast;		/* our end of its AST socket
						 * (from dd_open_ls), or -1 */
};

/* A client of pid's on a new socket pair. */
static inline void dd_client_new(struct dlmd *d, struct dd_client *dc,
				 pid_t pid)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	dc->dc_c = dlmd_client_new(d, sv[1], pid, 0, 0);
	assert_non_null(dc->dc_c);
	dc->dc_sock = sv[0];
	dc->dc_ast = -1;
}

/* Hand m (with reqid) to the daemon as dc's request, passing fd (-1:
 * none). */
static inline void dd_request(struct dlmd *d, struct dd_client *dc,
			      struct dlmp_msg *m, uint32_t reqid, int fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	int len;

	m->m_hdr.h_reqid = reqid;
	len = dlmp_encode(m, buf, sizeof(buf));
	assert_true(len > 0);
	dlmd_client_request(d, dc->dc_c, buf, (size_t)len, fd);
}

/* LS_OPEN of the lockspace 'name' (reqid 1), with a new AST socket. */
static inline void dd_open_ls(struct dlmd *d, struct dd_client *dc,
			      const char *name)
{
	struct dlmp_msg m;
	int sv[2];

	raw_ls_msg(&m, DLMP_LS_OPEN, name);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	dd_request(d, dc, &m, 1, sv[1]);
	dc->dc_ast = sv[0];
}

/* A LOCK of the resource 'name' in mode with flags (reqid 2), the whole
 * range. */
static inline void dd_lock(struct dlmd *d, struct dd_client *dc, int mode,
			   const char *name, uint32_t flags)
{
	struct dlmp_msg m;

	raw_lock_msg(&m, mode, name);
	m.m_u.lock.lk_flags = flags;
	m.m_u.lock.lk_range_end = UINT64_MAX;
	dd_request(d, dc, &m, 2, -1);
}

/* The status of the next REPLY (or COMP_REPLY) the daemon wrote to dc;
 * there must be one already. */
static inline int32_t dd_reply_status(struct dd_client *dc)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	ssize_t n = recv(dc->dc_sock, buf, sizeof(buf), MSG_DONTWAIT);

	assert_true(n > 0);
	assert_int_equal(dlmp_decode(buf, (size_t)n, &m), 0);
	return m.m_u.reply.rp_status;
}

/* The client goes (the daemon closes its ends). */
static inline void dd_client_close(struct dlmd *d, struct dd_client *dc)
{
	dlmd_client_close(d, dc->dc_c);
	dc->dc_c = NULL;
}

/* Our ends closed, once the client has gone. */
static inline void dd_client_fds_close(struct dd_client *dc)
{
	close(dc->dc_sock);
	if (dc->dc_ast >= 0)
		close(dc->dc_ast);
	dc->dc_sock = dc->dc_ast = -1;
}

#endif
