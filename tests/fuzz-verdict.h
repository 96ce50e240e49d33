/*
 * tests/fuzz-verdict.h - how a fuzz target tells whoever replays it that
 * its real parser refused an input, or part of one, so that
 * tests/corpus-valid.sh can check that every seed of the corpus meant to
 * be valid still decodes: a wire format changed without its seeds
 * re-encoded fails make check instead of fuzzing on garbage.
 *
 * With the replay driver (tests/fuzz-main.c, which defines fuzz_refused)
 * the verdict goes to it: TARGET -valid FILE...  Under libFuzzer nothing
 * defines fuzz_refused; there, when DLMD_FUZZ_VERDICT is set in the
 * environment, a refusal is a line "fuzz-verdict: refused by WHAT" on
 * stderr, which corpus-valid.sh looks for after running the target on one
 * seed (libFuzzer runs each FILE argument once).  Otherwise it does
 * nothing, and the environment is read once per translation unit.
 */
#ifndef DLMD_FUZZ_VERDICT_H
#define DLMD_FUZZ_VERDICT_H

#include <stdio.h>
#include <stdlib.h>

/* Defined by tests/fuzz-main.c: WHAT (a parser's name) refused input. */
void fuzz_refused(const char *what) __attribute__((weak));

static inline void fuzz_refuse(const char *what)
{
	static int say = -1;

	if (fuzz_refused) {
		fuzz_refused(what);
		return;
	}
	if (say < 0)
		say = getenv("DLMD_FUZZ_VERDICT") != NULL;
	if (say)
		fprintf(stderr, "fuzz-verdict: refused by %s\n", what);
}

#endif
