#!/bin/sh
# make check: fuzz the dlmd CPG message decoders for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-cpg" \
	"$top_srcdir/tests/corpus/cpg" "${FUZZ_RUNS:-200000}"
