/*
 * tests/test-stop-orphans.c: a stop that is not SIGTERM's (the engine
 * cannot go on, dlmd_cannot_hold; corosync lost) with orphaned
 * persistent locks in a lockspace and no client holding any is unclean
 * (client.c dlmd_client_fini, commit 93d5c0c): d_stop_unclean, which
 * makes cluster.c leave the lockspaces and the daemon group as a dlmd
 * that died does (no LEAVE, no cpg_leave: the others fence this node
 * before they recover the orphans; that path is test-cluster-stopgrant
 * step 3's, which reaches it through a client's locks).  The only way
 * into that stop with corosync up is running out of memory for an AST
 * or a message with the reserve used up, which a lockspace of orphans
 * alone gives no handle on in a cluster test; the decision is made
 * here, in the function every such stop calls, on the daemon state of
 * tests/fuzz-daemon.h (no loop, membership none, the real engine).
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

#define LS_NAME	"orphls"

/* The status of the next REPLY the daemon wrote to fd. */
static int32_t reply_status(int fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	assert_true(n > 0);
	assert_int_equal(dlmp_decode(buf, (size_t)n, &m), 0);
	return m.m_u.reply.rp_status;
}

static void request(struct dlmd *d, struct dlmd_client *c,
		    const struct dlmp_msg *m, int fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	int len = dlmp_encode(m, buf, sizeof(buf));

	assert_true(len > 0);
	dlmd_client_request(d, c, buf, (size_t)len, fd);
}

static void open_ls(struct dlmd *d, struct dlmd_client *c, int *ast)
{
	struct dlmp_msg m;
	int sv[2];

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_LS_OPEN;
	m.m_hdr.h_reqid = 1;
	m.m_u.ls.ls_namelen = (uint16_t)strlen(LS_NAME);
	memcpy(m.m_u.ls.ls_name, LS_NAME, strlen(LS_NAME));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	request(d, c, &m, sv[1]);
	*ast = sv[0];
}

/* An EX lock on 'name', persistent or not: granted at once. */
static void lock_ex(struct dlmd *d, struct dlmd_client *c, const char *name,
		    uint32_t flags)
{
	struct dlmp_msg m;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_LOCK;
	m.m_hdr.h_reqid = 2;
	m.m_u.lock.lk_mode = DLM_LOCK_EX;
	m.m_u.lock.lk_flags = flags;
	m.m_u.lock.lk_namelen = (uint8_t)strlen(name);
	memcpy(m.m_u.lock.lk_name, name, strlen(name));
	m.m_u.lock.lk_range_end = UINT64_MAX;
	request(d, c, &m, -1);
}

static uint64_t orphans(struct dlmd_ls *dl)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(dl->dl_core, &st);
	return st.ls_orphans;
}

/* A client takes a persistent lock and goes: the lock is an orphan, no
 * client holds anything; the stop is unclean.  Its client gone first,
 * the non-persistent lock of another is purged: that alone left clean. */
static void test_stop_with_orphans_unclean(void **state)
{
	struct dlmd *d = fuzz_daemon_state();
	struct dlmd_client *c1, *c2;
	struct dlmd_ls *dl;
	int s1[2], s2[2], ast1, ast2;

	(void)state;
	assert_int_equal(dlmd_ls_create(d, LS_NAME, 0666, 0, 0, false, &dl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s1), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s2), 0);
	c1 = dlmd_client_new(d, s1[1], 1234, 0, 0);
	c2 = dlmd_client_new(d, s2[1], 1235, 0, 0);
	assert_non_null(c1);
	assert_non_null(c2);
	open_ls(d, c1, &ast1);
	open_ls(d, c2, &ast2);
	lock_ex(d, c1, "kept", DLM_LKF_PERSISTENT);
	lock_ex(d, c2, "plain", 0);
	dlmd_flush(d);
	assert_int_equal(reply_status(s1[0]), 0);	/* the open */
	assert_int_equal(reply_status(s2[0]), 0);
	assert_int_equal(reply_status(s1[0]), 0);	/* the lock */
	assert_int_equal(reply_status(s2[0]), 0);
	dlmd_client_close(d, c1);
	dlmd_client_close(d, c2);
	dlmd_flush(d);
	assert_int_equal(orphans(dl), 1);
	assert_false(d->d_stop_unclean);

	/* the stop: no client left, the orphan still there */
	dlmd_client_fini(d);
	assert_true(d->d_stop_unclean);
	close(s1[0]);
	close(s2[0]);
	close(ast1);
	close(ast2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_with_orphans_unclean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
