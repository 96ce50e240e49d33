#!/bin/sh
# tests/test-fencing.sh - fencing tokens through the public API (issue 17).
#
# A one-node dlmd (membership none: no corosync, no network) with its
# sockets in a temporary directory, and tests/test-fencing playing a toy
# storage server and its writers: a holder killed with a write in flight,
# and a holder that writes after its unlock, are refused by the storage
# once the next holder (with a larger token) has written; conversions,
# CW holders, waiting requests and the lock dump (dlmctl lockdump) show
# the tokens they should.  Fails, never skips; every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
DLMD=$top_builddir/plugin/dlmd
DLMCTL=$top_builddir/plugin/dlmctl
PROG=$top_builddir/tests/test-fencing
POLLS=100		# waits: polls of 0.1 s

rc=0
pid=
fail() {
	echo "FAIL: $*" >&2
	rc=1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-fencing.XXXXXX") || exit 1

cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt $POLLS ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -0 "$pid" 2>/dev/null && fail "dlmd did not stop on SIGTERM"
		kill -KILL "$pid" 2>/dev/null
	fi
	if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error' "$dir"/*.out 2>/dev/null; then
		echo "FAIL: sanitizer report" >&2
		rc=1
	fi
	if [ $rc -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "outputs kept in $dir" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

cat >"$dir/dlm.conf" <<EOF2
membership = none
socket_path = $dir/dlmd.sock
control_socket = $dir/ctl.sock
pid_file = $dir/dlmd.pid
configfs_dir = none
log_syslog = no
log_level = debug
EOF2
export DLMD_SOCKET=$dir/dlmd.sock DLMD_CTL_SOCKET=$dir/ctl.sock DLMCTL

"$DLMD" --foreground --config="$dir/dlm.conf" >"$dir/dlmd.out" 2>&1 &
pid=$!
i=0
until "$DLMCTL" status >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt $POLLS ] || ! kill -0 "$pid" 2>/dev/null; then
		fail "dlmd did not start: $(cat "$dir/dlmd.out")"
		exit 1
	fi
	sleep 0.1
done

# bounded: a lock that is never granted must not hang make check
timeout 60 "$PROG" >"$dir/test.out" 2>&1
st=$?
cat "$dir/test.out"
[ $st -eq 0 ] || fail "tests/test-fencing exit $st"
grep -q '^killed: stale write with token [0-9]* refused$' "$dir/test.out" ||
	fail "the killed holder's write was not shown refused"
kill -0 "$pid" 2>/dev/null || fail "dlmd died: $(tail -n 20 "$dir/dlmd.out")"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
