#!/bin/sh
# make check: fuzz the lowcomms handshake parser, handshake state machines
# and record opener for a bounded number of runs.
top_srcdir=${top_srcdir:-$(dirname "$0")/..}
top_builddir=${top_builddir:-.}
exec "$top_srcdir/tests/fuzz-run" "$top_builddir/tests/fuzz-lowcomms-auth" \
	"$top_srcdir/tests/corpus/lowcomms-auth" "${FUZZ_RUNS:-200000}"
