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
#include "plugin/dlmd.h"
#include "tests/fuzz-daemon.h"
#include "tests/test-core.h"

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

/* Fail unless the answer to 'verb' contains 'needle' (or, with
 * !want, lacks it), printing the answer. */
static void check_answer(struct dlmd *d, const char *verb, const char *needle,
			 bool want)
{
	char *a = ctl(d, verb);

	if ((strstr(a, needle) != NULL) != want)
		fail_msg("%s: '%s' %s in:\n%s", verb, needle,
			 want ? "missing" : "present", a);
	free(a);
}

/* What comms.c would hand the engine: a message of our own carrying
 * token clock 'clock' (clock_msg).  dlm_core_receive's result. */
static int receive_clock(struct dlmd *d, uint64_t clock)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	size_t len = clock_msg(buf, sizeof(buf), dlm_core_ls_name_to_id(LS_NAME),
			       d->d_nodeid, d->d_nodeid, clock);

	return dlm_core_receive(d->d_core, d->d_nodeid, buf, len);
}

/* Every form of the count says n: "ls" has its line only when n > 0. */
static void assert_counted(struct dlmd *d, unsigned int n)
{
	char s[128];

	snprintf(s, sizeof(s), "\n  clock_rejected %u\n", n);
	check_answer(d, "ls", n ? s : "clock_rejected", n > 0);
	snprintf(s, sizeof(s), "\"clock_rejected\":%u,", n);
	check_answer(d, "ls-json", s, true);
	snprintf(s, sizeof(s), "\nclock_rejected %u\n", n);
	check_answer(d, "status", s, true);
	snprintf(s, sizeof(s), "\"clock_rejected\":%u,", n);
	check_answer(d, "status-json", s, true);
	snprintf(s, sizeof(s), "\ndlmd_clock_rejected_total{lockspace=\""
		 LS_NAME "\"} %u\n", n);
	check_answer(d, "metrics", s, true);
}

/* Remastering (core/remaster.c) needs a second node, so here only its
 * zero: no "remasters" line in "ls", 0 in the other forms.  The count of
 * a real move is checked by tests/test-cluster-remaster.sh. */
static void assert_no_remasters(struct dlmd *d)
{
	check_answer(d, "ls", "remasters", false);
	check_answer(d, "ls-json", "\"remasters\":0}", true);
	check_answer(d, "status", "\nremasters 0\n", true);
	check_answer(d, "status-json", "\"remasters\":0", true);
	check_answer(d, "metrics", "\ndlmd_remasters_total{lockspace=\""
		     LS_NAME "\"} 0\n", true);
}

static void test_clock_rejected(void **state)
{
	struct dlmd *d = fuzz_daemon_state();

	(void)state;
	free(ctl(d, "join " LS_NAME));
	dlmd_flush(d);
	assert_non_null(dlmd_ls_find(d, LS_NAME));
	assert_counted(d, 0);
	assert_no_remasters(d);
	assert_int_equal(receive_clock(d, UINT64_MAX - 1), -ERANGE);
	assert_counted(d, 1);
	free(ctl(d, "leave-force " LS_NAME));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
