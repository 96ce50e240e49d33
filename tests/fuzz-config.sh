#!/bin/sh
# make check: fuzz dlm.conf's parser for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-config" \
	"$top_srcdir/tests/corpus/config" "${FUZZ_RUNS:-200000}"
