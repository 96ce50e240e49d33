#!/bin/sh
# make check: fuzz the lowcomms frame parser for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-lowcomms-frame" \
	"$top_srcdir/tests/corpus/lowcomms-frame" "${FUZZ_RUNS:-200000}"
