#!/bin/sh
# make check: fuzz the control socket (dlmctl) for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-ctl" \
	"$top_srcdir/tests/corpus/ctl" "${FUZZ_RUNS:-50000}"
