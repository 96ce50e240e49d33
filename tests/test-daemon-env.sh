#!/bin/sh
# tests/test-daemon-env.sh - a one-node dlmd (membership none, sockets in a
# temporary directory) under what a careless operator or its environment
# does to it, with a client holding a lock (tests/limit-client) throughout:
#   1. signals that are not a stop: SIGHUP (a "reload", a log rotation's
#      kill -HUP, the terminal of a foreground dlmd closing), SIGUSR1,
#      SIGUSR2.  Their default action would kill dlmd, ending every lock
#      of the node (and getting it fenced in a cluster) past the refusal
#      to stop while lockspaces are in use; dlmd logs each and goes on,
#      and the lock is still held.
# Needs root (as the other one-dlmd tests); fails, never skips.  Every
# wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LC=$top_builddir/tests/limit-client
POLLS=100		# waits: polls of 0.1 s

rc=0
pid=
holder=

[ "$(id -u)" = 0 ] || { echo "FAIL: needs root" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-env.XXXXXX") || exit 1

cleanup() {
	exec 4>&- 2>/dev/null
	if [ -n "$holder" ]; then
		kill -KILL "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	stop_dlmd
	check_sanitizer "$dir/dlmd.out"
	finish "dlmd: dlmd.out"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

write_conf "$dir/dlm.conf" "log_level = debug"
export DLMD_SOCKET=$dir/dlmd.sock DLMD_CTL_SOCKET=$dir/dlmd-ctl.sock

# locked_once: the holder said it holds its lock
locked_once() {
	grep -q '^locked 1$' "$dir/holder.out"
}

# lock_held: dlmctl lockdump shows a granted lock in lockspace env
lock_held() {
	"$DLMCTL" lockdump env 2>/dev/null | grep -q 'granted'
}

start_dlmd "$dir/dlm.conf" "$dir/dlmd.out"
"$LC" create env 0600 || fail "cannot create lockspace env"
mkfifo "$dir/holder.fifo"
"$LC" locks env 1 0 <"$dir/holder.fifo" >"$dir/holder.out" 2>&1 &
holder=$!
exec 4>"$dir/holder.fifo"
wait_for 10 "the holder's lock" locked_once || exit 1

echo "== 1. SIGHUP, SIGUSR1, SIGUSR2 do not stop dlmd"
# ignored_lines N: dlmd logged N signals ignored
ignored_lines() {
	[ "$(grep -c 'signal [0-9]* (.*) ignored' "$dir/dlmd.out")" = "$1" ]
}
n=0
for sig in HUP USR1 USR2; do
	n=$((n + 1))
	kill -"$sig" "$pid"
	wait_for 10 "dlmd's line about SIG$sig" ignored_lines $n || break
	kill -0 "$pid" 2>/dev/null || { fail "SIG$sig killed dlmd"; break; }
	"$DLMCTL" status >/dev/null 2>&1 || fail "dlmctl status after SIG$sig"
	lock_held || fail "the lock is gone after SIG$sig: $("$DLMCTL" lockdump env 2>&1)"
done

exec 4>&-
wait_gone "$holder" || fail "the holder did not exit at EOF"
holder=
stop_dlmd || fail "dlmd did not stop on SIGTERM"
