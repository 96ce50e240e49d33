/*
 * tests/fuzz-verdict.h - how a fuzz target tells the replay driver
 * (tests/fuzz-main.c) that its real parser refused an input, or part of
 * one, so that tests/corpus-valid.sh can check that every seed of the
 * corpus meant to be valid still decodes: a wire format changed without
 * its seeds re-encoded fails make check instead of fuzzing on garbage.
 * Under libFuzzer nothing defines fuzz_refused and fuzz_refuse does
 * nothing.
 */
#ifndef DLMD_FUZZ_VERDICT_H
#define DLMD_FUZZ_VERDICT_H

/* Defined by tests/fuzz-main.c: WHAT (a parser's name) refused input. */
void fuzz_refused(const char *what) __attribute__((weak));

static inline void fuzz_refuse(const char *what)
{
	if (fuzz_refused)
		fuzz_refused(what);
}

#endif
