/*
 * tests/test-stop-refuses.c: once dlmd has accepted a stop (main.c
 * on_signal: SIGTERM with no lockspace in use), the loop still finishes
 * its turn; a client's LS_OPEN or LOCK, or a "dlmctl join", read in it
 * is answered ESHUTDOWN rather than served (client.c stop_refuses),
 * so the stop leaves no lockspace in use.  Before that, the same requests
 * are served.  The daemon state is tests/fuzz-daemon.h's (no loop).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/fuzz-daemon.h"
#include "tests/raw-client.h"

#define LS_NAME	"stopls"

/* The status of the REPLY (or COMP_REPLY) the daemon wrote to fd. */
static int32_t reply_status(int fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	assert_true(n > 0);
	assert_int_equal(dlmp_decode(buf, (size_t)n, &m), 0);
	return m.m_u.reply.rp_status;
}

/* LS_OPEN of LS_NAME by c (answered on req); its AST peer in *ast. */
static void open_ls(struct dlmd *d, struct dlmd_client *c, int *ast)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	int sv[2], len;

	raw_ls_msg(&m, DLMP_LS_OPEN, LS_NAME);
	m.m_hdr.h_reqid = 1;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	dlmd_client_request(d, c, buf, (size_t)len, sv[1]);
	*ast = sv[0];
}

static void lock_nl(struct dlmd *d, struct dlmd_client *c)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	int len;

	raw_lock_msg(&m, 0, "res");	/* NL: granted at once */
	m.m_hdr.h_reqid = 2;
	m.m_u.lock.lk_range_end = UINT64_MAX;
	len = dlmp_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	dlmd_client_request(d, c, buf, (size_t)len, -1);
}

static void test_stop_refuses(void **state)
{
	struct dlmd *d = fuzz_daemon_state();
	struct dlmd_client *c1, *c2;
	struct dlmd_ls *dl;
	int s1[2], s2[2], ast1, ast2;
	char join[] = "join other", want[32], *a;

	(void)state;
	assert_int_equal(dlmd_ls_create(d, LS_NAME, 0666, 0, 0, false, &dl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s1), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s2), 0);
	c1 = dlmd_client_new(d, s1[1], 1234, 0, 0);
	c2 = dlmd_client_new(d, s2[1], 1235, 0, 0);
	assert_non_null(c1);
	assert_non_null(c2);
	/* before a stop: c1 opens the lockspace */
	open_ls(d, c1, &ast1);
	dlmd_flush(d);
	assert_int_equal(reply_status(s1[0]), 0);

	/* the stop is accepted (on_signal); the turn goes on */
	d->d_stop_accepted = true;
	open_ls(d, c2, &ast2);
	lock_nl(d, c1);
	dlmd_flush(d);
	assert_int_equal(reply_status(s2[0]), -ESHUTDOWN);
	assert_int_equal(reply_status(s1[0]), -ESHUTDOWN);
	a = dlmd_ctl_answer(d, join);
	assert_non_null(a);
	snprintf(want, sizeof(want), "ERR %d ", ESHUTDOWN);
	assert_true(strncmp(a, want, strlen(want)) == 0);
	free(a);
	assert_null(dlmd_ls_find(d, "other"));
	assert_int_equal(dl->dl_nopen, 1);

	d->d_stop_accepted = false;
	dlmd_client_close(d, c1);
	dlmd_client_close(d, c2);
	close(s1[0]);
	close(s2[0]);
	close(ast1);
	close(ast2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
