#!/bin/sh
# make check: fuzz the metrics endpoint's request parser for a bounded
# number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-http" \
	"$top_srcdir/tests/corpus/http" "${FUZZ_RUNS:-200000}"
