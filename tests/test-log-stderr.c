/*
 * tests/test-log-stderr.c: dlmd's stderr log sink never waits for its
 * reader (plugin/log.c, SINKS THAT NEVER WAIT).  stderr is a pty whose
 * reader never reads: a pty says POLLOUT while any room is left, so a
 * blocking write of a whole line into the last few bytes stopped the
 * daemon there.  Every wait is bounded: alarm() ends a stuck run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

#define LINES		4000	/* ~1.6 MB: far past a pty's 64 KiB */
#define GUARD_SECS	60	/* a blocked write is killed by SIGALRM */

/* config.c asks fence.c, which this test does not link */
bool dlmd_fence_pcmk_built(void)
{
	return false;
}

static void test_stalled_pty(void **state)
{
	struct dlmd_config cf;
	char fill[400];
	int master, slave, saved, flags;

	(void)state;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(slave, STDERR_FILENO), STDERR_FILENO);
	flags = fcntl(STDERR_FILENO, F_GETFL);
	dlmd_config_defaults(&cf);
	assert_int_equal(dlmd_log_init(&cf, true), 0);
	memset(fill, 'x', sizeof(fill) - 1);
	fill[sizeof(fill) - 1] = '\0';
	alarm(GUARD_SECS);
	for (int i = 0; i < LINES; i++)
		log_warn("line %d %s", i, fill);
	alarm(0);
	/* the reader never read: lines were dropped, none waited */
	assert_true(dlmd_log_dropped() > 0);
	/* fd 2's own flags are left as they were (a shell shares them) */
	assert_int_equal(fcntl(STDERR_FILENO, F_GETFL), flags);
	dlmd_log_fini();
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(slave);
	close(master);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stalled_pty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
