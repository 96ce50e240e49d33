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

#include "tests/daemon-direct.h"

#define LS_NAME	"stopls"

static void test_stop_refuses(void **state)
{
	struct dlmd *d = fuzz_daemon_state();
	struct dd_client cl[2];
	struct dlmd_ls *dl;
	char join[] = "join other", want[32], *a;

	(void)state;
	assert_int_equal(dlmd_ls_create(d, LS_NAME, 0666, 0, 0, false, &dl), 0);
	dd_client_new(d, &cl[0], 1234);
	dd_client_new(d, &cl[1], 1235);
	/* before a stop: cl[0] opens the lockspace */
	dd_open_ls(d, &cl[0], LS_NAME);
	dlmd_flush(d);
	assert_int_equal(dd_reply_status(&cl[0]), 0);

	/* the stop is accepted (on_signal); the turn goes on */
	d->d_stop_accepted = true;
	dd_open_ls(d, &cl[1], LS_NAME);
	dd_lock(d, &cl[0], DLM_LOCK_NL, "res", 0);	/* NL: granted at once */
	dlmd_flush(d);
	assert_int_equal(dd_reply_status(&cl[1]), -ESHUTDOWN);
	assert_int_equal(dd_reply_status(&cl[0]), -ESHUTDOWN);
	a = dlmd_ctl_answer(d, join);
	assert_non_null(a);
	snprintf(want, sizeof(want), "ERR %d ", ESHUTDOWN);
	assert_true(strncmp(a, want, strlen(want)) == 0);
	free(a);
	assert_null(dlmd_ls_find(d, "other"));
	assert_int_equal(dl->dl_nopen, 1);

	d->d_stop_accepted = false;
	dd_client_close(d, &cl[0]);
	dd_client_close(d, &cl[1]);
	dd_client_fds_close(&cl[0]);
	dd_client_fds_close(&cl[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
