/*
 * tests/test-fence.c - the fencing decisions of dlmd (plugin/fence-policy.c)
 * and the fence_pacemaker key of dlm.conf (plugin/config.c), without a
 * cluster: which method fences a failed node for every configuration and
 * fencer state, and which results from pacemaker's fencer history let
 * recovery go on.  Runs in both builds (with and without pacemaker's
 * fencing API); the expectations follow dlmd_fence_pcmk_built().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

static void config(struct dlmd_config *cf, bool enabled, enum dlmd_fence_pcmk pcmk,
		   const char *command)
{
	dlmd_config_defaults(cf);
	cf->cf_enable_fencing = enabled;
	cf->cf_fence_pcmk = pcmk;
	snprintf(cf->cf_fence_command, sizeof(cf->cf_fence_command), "%s", command);
}

static void test_disabled_never_waits(void **state)
{
	struct dlmd_config cf;

	for (int p = DLMD_FENCE_PCMK_AUTO; p <= DLMD_FENCE_PCMK_NO; p++) {
		config(&cf, false, (enum dlmd_fence_pcmk)p, "/bin/true");
		assert_int_equal(dlmd_fence_choose(&cf, true), DLMD_FENCE_OFF);
		assert_int_equal(dlmd_fence_choose(&cf, false), DLMD_FENCE_OFF);
	}
}

static void test_auto(void **state)
{
	struct dlmd_config cf;
	bool built = dlmd_fence_pcmk_built();

	/* the fencer answers: pacemaker, even with a fence_command */
	config(&cf, true, DLMD_FENCE_PCMK_AUTO, "fence-it");
	assert_int_equal(dlmd_fence_choose(&cf, true),
			 built ? DLMD_FENCE_PACEMAKER : DLMD_FENCE_COMMAND);
	/* it does not: the command */
	assert_int_equal(dlmd_fence_choose(&cf, false), DLMD_FENCE_COMMAND);
	/* no command either: an operator */
	config(&cf, true, DLMD_FENCE_PCMK_AUTO, "");
	assert_int_equal(dlmd_fence_choose(&cf, true),
			 built ? DLMD_FENCE_PACEMAKER : DLMD_FENCE_MANUAL);
	assert_int_equal(dlmd_fence_choose(&cf, false), DLMD_FENCE_MANUAL);
}

static void test_yes_and_no(void **state)
{
	struct dlmd_config cf;

	if (dlmd_fence_pcmk_built()) {
		/* yes: wait for the fencer even while it is away */
		config(&cf, true, DLMD_FENCE_PCMK_YES, "fence-it");
		assert_int_equal(dlmd_fence_choose(&cf, true), DLMD_FENCE_PACEMAKER);
		assert_int_equal(dlmd_fence_choose(&cf, false), DLMD_FENCE_PACEMAKER);
	}
	/* no: never the fencer */
	config(&cf, true, DLMD_FENCE_PCMK_NO, "fence-it");
	assert_int_equal(dlmd_fence_choose(&cf, true), DLMD_FENCE_COMMAND);
	config(&cf, true, DLMD_FENCE_PCMK_NO, "");
	assert_int_equal(dlmd_fence_choose(&cf, true), DLMD_FENCE_MANUAL);
}

static void test_pacemaker_result_counts(void **state)
{
	const int64_t failed = 1700000000;

	/* fenced at or after the failure */
	assert_true(dlmd_fence_pcmk_counts(failed, true, failed));
	assert_true(dlmd_fence_pcmk_counts(failed, true, failed + 7));
	/* a fencing from before the failure (an earlier incident) */
	assert_false(dlmd_fence_pcmk_counts(failed, true, failed - 1));
	assert_false(dlmd_fence_pcmk_counts(failed, true, failed - 3600));
	/* no successful fencing in the history */
	assert_false(dlmd_fence_pcmk_counts(failed, false, failed + 7));
	assert_false(dlmd_fence_pcmk_counts(failed, false, 0));
	/* no failure recorded: nothing to count for */
	assert_false(dlmd_fence_pcmk_counts(0, true, failed));
}

/* Load a dlm.conf holding 'text'; the load's return value. */
static int load(const char *text, struct dlmd_config *cf)
{
	char path[] = "/tmp/test-fence.XXXXXX";
	int fd = mkstemp(path), rv;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	dlmd_config_defaults(cf);
	rv = dlmd_config_load(cf, path, true);
	unlink(path);
	return rv;
}

static void test_config_key(void **state)
{
	struct dlmd_config cf;
	char *dump;

	dlmd_config_defaults(&cf);
	assert_int_equal(cf.cf_fence_pcmk, DLMD_FENCE_PCMK_AUTO);
	dump = dlmd_config_dump(&cf);
	assert_non_null(dump);
	assert_non_null(strstr(dump, "\nfence_pacemaker = auto\n"));
	free(dump);

	assert_int_equal(load("fence_pacemaker = no\n", &cf), 0);
	assert_int_equal(cf.cf_fence_pcmk, DLMD_FENCE_PCMK_NO);
	assert_int_equal(load("fence_pacemaker = auto\nfence_command = /bin/true\n",
			      &cf), 0);
	assert_int_equal(cf.cf_fence_pcmk, DLMD_FENCE_PCMK_AUTO);
	if (dlmd_fence_pcmk_built()) {
		assert_int_equal(load("fence_pacemaker = yes\n", &cf), 0);
		assert_int_equal(cf.cf_fence_pcmk, DLMD_FENCE_PCMK_YES);
	} else {
		/* a build without the API refuses to promise it */
		assert_true(load("fence_pacemaker = yes\n", &cf) < 0);
	}
	assert_true(load("fence_pacemaker = maybe\n", &cf) < 0);
}

static void test_method_names(void **state)
{
	assert_string_equal(dlmd_fence_method_str(DLMD_FENCE_PACEMAKER), "pacemaker");
	assert_string_equal(dlmd_fence_method_str(DLMD_FENCE_COMMAND), "fence_command");
	assert_string_equal(dlmd_fence_method_str(DLMD_FENCE_MANUAL), "fence_ack");
	assert_string_equal(dlmd_fence_method_str(DLMD_FENCE_OFF), "off");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disabled_never_waits),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_yes_and_no),
		cmocka_unit_test(test_pacemaker_result_counts),
		cmocka_unit_test(test_config_key),
		cmocka_unit_test(test_method_names),
	};

	printf("# pacemaker's fencing API: %s\n",
	       dlmd_fence_pcmk_built() ? "built in" : "not built");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
