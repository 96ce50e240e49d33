/*
 * tests/test-ctl-counters.c - the engine's anomaly counters as dlmctl and
 * the metrics show them (plugin/ctl.c, plugin/metrics.c).
 *
 * The daemon's state as the fuzz targets make it (tests/fuzz-daemon.h:
 * membership none, no main loop, the real engine), a lockspace joined
 * through the control verb, and one engine message handed straight to
 * dlm_core_receive as comms.c would hand it: a message of this node's
 * own (the one member of a lockspace without membership) whose token
 * clock no member can have (core/token.c "A clock from the future").
 * Before it, "ls" has no clock_rejected line, "status" says 0 and the
 * metric is 0; after it, all of them (and the JSON forms) say 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/wire.h"
#include "plugin/dlmd.h"
#include "tests/fuzz-daemon.h"

#define LS_NAME	"clk"

/* The answer to one control line, which must succeed. */
static char *ctl(struct dlmd *d, const char *verb)
{
	char line[64];
	char *a;

	snprintf(line, sizeof(line), "%s", verb);
	a = dlmd_ctl_answer(d, line);
	assert_non_null(a);
	if (strncmp(a, "OK\n", 3))
		fail_msg("%s: %s", verb, a);
	return a;
}

/* Does the answer to 'verb' contain 'needle'? */
static bool answer_has(struct dlmd *d, const char *verb, const char *needle)
{
	char *a = ctl(d, verb);
	bool has = strstr(a, needle) != NULL;

	if (!has)
		print_message("%s answered:\n%s", verb, a);
	free(a);
	return has;
}

/* What comms.c would hand the engine: a reply from ourselves about no
 * lock, carrying token clock 'clock'.  dlm_core_receive's result. */
static int receive_clock(struct dlmd *d, uint64_t clock)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	struct dlm_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	m.m_type = DLM_MSG_REQUEST_REPLY;
	m.m_lsid = dlm_core_ls_name_to_id(LS_NAME);
	m.m_from = d->d_nodeid;
	m.m_to = d->d_nodeid;
	m.m_remid = 0x7ffff001;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	m.m_clock = clock;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	return dlm_core_receive(d->d_core, d->d_nodeid, buf, (size_t)len);
}

static void test_clock_rejected(void **state)
{
	struct dlmd *d = fuzz_daemon_state();

	(void)state;
	free(ctl(d, "join " LS_NAME));
	dlmd_flush(d);
	assert_non_null(dlmd_ls_find(d, LS_NAME));

	assert_false(answer_has(d, "ls", "clock_rejected"));
	assert_true(answer_has(d, "ls-json", "\"clock_rejected\":0}"));
	assert_true(answer_has(d, "status", "\nclock_rejected 0\n"));
	assert_true(answer_has(d, "status-json", "\"clock_rejected\":0,"));
	assert_true(answer_has(d, "metrics",
			       "\ndlmd_clock_rejected_total{lockspace=\""
			       LS_NAME "\"} 0\n"));

	assert_int_equal(receive_clock(d, UINT64_MAX - 1), -ERANGE);

	assert_true(answer_has(d, "ls", "\n  clock_rejected 1\n"));
	assert_true(answer_has(d, "ls-json", "\"clock_rejected\":1}"));
	assert_true(answer_has(d, "status", "\nclock_rejected 1\n"));
	assert_true(answer_has(d, "status-json", "\"clock_rejected\":1,"));
	assert_true(answer_has(d, "metrics",
			       "\ndlmd_clock_rejected_total{lockspace=\""
			       LS_NAME "\"} 1\n"));
	free(ctl(d, "leave-force " LS_NAME));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
