/*
 * tests/fuzz-ctl.c - fuzz target for dlmd's control socket (dlmctl).
 *
 * The input is what a control client writes, cut into request lines at
 * '\n' as plugin/ctl.c cuts them (a line with a NUL byte, or longer than
 * the socket takes, is refused before it gets here, so the target skips
 * those too).  Each line goes through dlmd_ctl_answer(), the code the
 * socket runs, against one daemon state (membership none, no main loop)
 * made at the first input and kept: lockspaces that an input joined are
 * left at its end, so every input starts from the same state.  Besides the
 * sanitizers' verdict, every answer must be well formed: "OK\n" and a
 * body, or "ERR <errno> <text>\n" with a positive errno and one line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"
#include "tests/fuzz-daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE	512	/* CTL_REQ_MAX in plugin/ctl.c */
#define MAX_LINES	32

static void check_answer(const char *a)
{
	const char *p;
	char *end;
	long err;

	if (!strncmp(a, "OK\n", 3))
		return;
	if (strncmp(a, "ERR ", 4))
		abort();
	err = strtol(a + 4, &end, 10);
	if (err <= 0 || *end != ' ')
		abort();
	p = strchr(a, '\n');
	if (!p || p[1] != '\0')
		abort();	/* an error is one line */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlmd *d = fuzz_daemon_state();
	char line[MAX_LINE + 1];
	size_t off = 0;

	for (int i = 0; i < MAX_LINES && off < size; i++) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (data + off)) : size - off;
		char *answer;

		if (len <= MAX_LINE && !memchr(data + off, '\0', len)) {
			memcpy(line, data + off, len);
			line[len] = '\0';
			answer = dlmd_ctl_answer(d, line);
			if (answer)
				check_answer(answer);
			free(answer);
		}
		off += len + 1;
	}
	while (d->d_lockspaces)
		if (dlmd_ls_release(d, d->d_lockspaces, true, NULL))
			abort();
	return 0;
}
