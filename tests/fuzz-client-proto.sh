#!/bin/sh
# make check: fuzz dlmd's client request intake for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-client-proto" \
	"$top_srcdir/tests/corpus/client-proto" "${FUZZ_RUNS:-20000}"
