#!/bin/sh
# make check: fuzz the engine's message intake for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-core-msg" \
	"$top_srcdir/tests/corpus/core-msg" "${FUZZ_RUNS:-100000}"
