#!/bin/sh
# tests/corpus-valid.sh - the fuzz corpus still speaks the wire formats.
#
# Every seed of tests/corpus/FORMAT goes once through its fuzz target
# (tests/fuzz-FORMAT), whose real parser says whether it refused the
# seed (tests/fuzz-verdict.h).  A seed listed in tests/corpus-refused
# must be refused, every other one must decode: a format changed without
# its seeds re-encoded fails here, instead of leaving the fuzzers to
# mutate inputs the parser throws away at the first byte.  A target
# built with the replay driver (tests/fuzz-main.c) is run with -valid on
# the files.  One linked with libFuzzer (configure --enable-fuzzing)
# knows no -valid (libFuzzer warns "unrecognized flag" and runs the
# files, exit 0, so a seed meant to be refused looked as if it decoded):
# it is run on one seed at a time with DLMD_FUZZ_VERDICT set, and a
# refusal is its line "fuzz-verdict: refused by ..." on stderr.
#
# Formats checked: client-proto, core-msg, cpg, lowcomms-frame, config,
# http.  (ctl and lowcomms-auth are not: a ctl answer and an auth stream
# have no single verdict of their parser.)
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
CORPUS=${CORPUS:-$top_srcdir/tests/corpus}	# another copy, to test this test
LIST=$top_srcdir/tests/corpus-refused
rc=0

# libfuzzer BIN: was the target linked with libFuzzer (not fuzz-main.c)?
libfuzzer() {
	grep -q 'use -help=1' "$1"
}

# verdict BIN FILE...: 0 if every FILE decodes, 1 if the parser refused
# one (named on stdout), 2 if a run failed otherwise.
verdict() {
	vbin=$1
	shift
	if ! libfuzzer "$vbin"; then
		"$vbin" -valid "$@"
		return
	fi
	vrc=0
	for vf in "$@"; do
		vout=$(DLMD_FUZZ_VERDICT=1 "$vbin" "$vf" 2>&1) || {
			printf '%s\n' "$vout" >&2
			return 2
		}
		case $vout in
		*"fuzz-verdict: refused by"*)
			echo "refused: $vf"
			vrc=1 ;;
		esac
	done
	return $vrc
}

# refused FORMAT NAME: is the seed listed as meant to be refused?
refused() {
	grep -q "^$1/$2[[:space:]]" "$LIST" || grep -qx "$1/$2" "$LIST"
}

for fmt in client-proto core-msg cpg lowcomms-frame config http; do
	bin=$top_builddir/tests/fuzz-$fmt
	[ -x "$bin" ] || { echo "FAIL: no $bin (make check builds it)" >&2; exit 1; }
	valid= bad= nv=0 nb=0
	for f in "$CORPUS/$fmt"/*; do
		name=$(basename "$f")
		if refused "$fmt" "$name"; then
			bad="$bad $f"
			nb=$((nb + 1))
		else
			valid="$valid $f"
			nv=$((nv + 1))
		fi
	done
	# shellcheck disable=SC2086 # the lists are words (no spaces in names)
	if [ -n "$valid" ] && ! verdict "$bin" $valid; then
		echo "FAIL: $fmt: a seed meant valid is refused (re-encode it, or list it in tests/corpus-refused)" >&2
		rc=1
	fi
	for f in $bad; do
		st=0
		verdict "$bin" "$f" >/dev/null || st=$?
		if [ $st -ne 1 ]; then
			echo "FAIL: $fmt: $(basename "$f") is listed in tests/corpus-refused but decodes (exit $st)" >&2
			rc=1
		fi
	done
	echo "$fmt: $nv seeds decode, $nb refused as listed"
done
# a listed seed that is gone
while read -r entry _; do
	case $entry in '#'* | '') continue ;; esac
	[ -e "$CORPUS/$entry" ] || { echo "FAIL: tests/corpus-refused lists $entry: no such seed" >&2; rc=1; }
done <"$LIST"
exit $rc
