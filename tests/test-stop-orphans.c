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

#include "tests/daemon-direct.h"

#define LS_NAME	"orphls"

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
	struct dd_client cl[2];
	struct dlmd_ls *dl;

	(void)state;
	assert_int_equal(dlmd_ls_create(d, LS_NAME, 0666, 0, 0, false, &dl), 0);
	dd_client_new(d, &cl[0], 1234);
	dd_client_new(d, &cl[1], 1235);
	dd_open_ls(d, &cl[0], LS_NAME);
	dd_open_ls(d, &cl[1], LS_NAME);
	dd_lock(d, &cl[0], DLM_LOCK_EX, "kept", DLM_LKF_PERSISTENT);
	dd_lock(d, &cl[1], DLM_LOCK_EX, "plain", 0);
	dlmd_flush(d);
	assert_int_equal(dd_reply_status(&cl[0]), 0);	/* the open */
	assert_int_equal(dd_reply_status(&cl[1]), 0);
	assert_int_equal(dd_reply_status(&cl[0]), 0);	/* the lock */
	assert_int_equal(dd_reply_status(&cl[1]), 0);
	dd_client_close(d, &cl[0]);
	dd_client_close(d, &cl[1]);
	dlmd_flush(d);
	assert_int_equal(orphans(dl), 1);
	assert_false(d->d_stop_unclean);

	/* the stop: no client left, the orphan still there */
	dlmd_client_fini(d);
	assert_true(d->d_stop_unclean);
	dd_client_fds_close(&cl[0]);
	dd_client_fds_close(&cl[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_with_orphans_unclean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
