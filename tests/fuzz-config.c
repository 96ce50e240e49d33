/*
 * tests/fuzz-config.c - fuzz target for dlm.conf's parser.
 *
 * The input is a dlm.conf, fed from memory to dlmd_config_parse() over
 * the defaults.  Besides the sanitizers' verdict (no overflow, no leak,
 * no undefined behaviour on any input), two properties are checked:
 *   - a rejected file leaves no half-parsed string behind: every string
 *     of the configuration is still NUL-terminated inside its field;
 *   - an accepted file round-trips: the effective configuration printed
 *     by dlmd_config_dump() (what "dlmctl config" shows), parsed again
 *     over the defaults, prints the same text.  Lines whose value is the
 *     dump's "(none)" placeholder are left out of the second parse, since
 *     "(none)" means "key not set".
 * The parser's error lines are not printed (errf NULL).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"
#include "tests/fuzz-verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CONF_INPUT	(64 * 1024)

static void check_strings(const struct dlmd_config *cf)
{
	if (!memchr(cf->cf_socket_path, '\0', sizeof(cf->cf_socket_path)) ||
	    !memchr(cf->cf_ctl_socket_path, '\0', sizeof(cf->cf_ctl_socket_path)) ||
	    !memchr(cf->cf_pid_file, '\0', sizeof(cf->cf_pid_file)) ||
	    !memchr(cf->cf_fence_command, '\0', sizeof(cf->cf_fence_command)) ||
	    !memchr(cf->cf_file, '\0', sizeof(cf->cf_file)))
		abort();
}

/* The dump without its "(none)" lines, parsed again: same dump. */
static void round_trip(const struct dlmd_config *cf)
{
	struct dlmd_config again;
	char *first = dlmd_config_dump(cf), *kept, *second, *out;
	const char *line;
	FILE *f;

	if (!first)
		return;		/* out of memory */
	kept = malloc(strlen(first) + 1);
	if (!kept) {
		free(first);
		return;
	}
	out = kept;
	for (line = first; *line; ) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);

		if (len < 10 || memcmp(line + len - 8, " (none)\n", 8)) {
			memcpy(out, line, len);
			out += len;
		}
		line += len;
	}
	*out = '\0';
	dlmd_config_defaults(&again);
	f = fmemopen(kept, strlen(kept), "r");
	if (!f)
		abort();
	if (dlmd_config_parse(&again, f, "dump", NULL))
		abort();	/* the daemon printed what it cannot read */
	fclose(f);
	second = dlmd_config_dump(&again);
	if (second && strcmp(first, second))
		abort();
	free(second);
	free(kept);
	free(first);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlmd_config cf;
	FILE *f;
	int rv;

	if (size == 0 || size > MAX_CONF_INPUT)
		return 0;	/* fmemopen refuses an empty buffer */
	dlmd_config_defaults(&cf);
	f = fmemopen((void *)data, size, "r");
	if (!f)
		abort();
	rv = dlmd_config_parse(&cf, f, "fuzz", NULL);
	fclose(f);
	if (rv)
		fuzz_refuse("dlmd_config_parse");
	check_strings(&cf);
	if (!rv)
		round_trip(&cf);
	return 0;
}
