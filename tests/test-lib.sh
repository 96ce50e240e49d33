# tests/test-lib.sh - the two shell helpers every shell test that keeps a
# directory of files shares (tests/cluster-test-lib.sh, tests/ocf-agent.sh,
# tests/pcmk-cluster.sh).  Sourced after rc=0 is set; dir (the test's
# directory) need only be set by the time finish runs.

# fail WHAT: report WHAT, and the test fails at its end
fail() {
	echo "FAIL: $*" >&2
	rc=1
}

# finish [WHERE]: the last step of an EXIT trap.  A passed test's
# directory goes; a failed test's is kept for its logs, WHERE saying which
# of its files to read first.  Exits with rc.
finish() {
	if [ "$rc" -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "files kept in $dir${1:+ ($1)}" >&2
	fi
	exit "$rc"
}
