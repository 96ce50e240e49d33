#!/bin/sh
# tests/test-client-fdpass.sh - fds passed to dlmd whose last close would
# block (plugin/client.c "Passed fds").
#
# A one-node dlmd (membership none) whose socket anyone may connect to,
# and tests/fdpass-client, which drops to nobody and hands dlmd TCP
# sockets with SO_LINGER whose peer does not read (their last close
# waits up to an hour) in each way a client can: with a request, as an
# extra fd, past what dlmd's control buffer holds, unread in the
# connection's queue as it closes, in the queue of its AST socket.
# After each, a request on another connection must be answered: a last
# close that can wait is never dlmd's loop's.  A user with 300 such
# closes waiting is cut and refused (EMFILE) while root is served, and
# served again once they end; past that budget, neither connections
# (2300) nor 64 packets of 253 fds in one wake-up make dlmd hold more
# than ~2x256 + 253 fds (dlmd runs with 1024); nobody maps 64 rings at most (EDQUOT
# after), and only memfds of a ring's exact size that cannot grow.
# A lingering close of a passed socket is interrupted (a signal to its
# user's reaper) and counted (dlmctl status closes_interrupted).
# Then dlmd is still up, and stops.  Needs root (setresuid, dlmd's
# sockets) and 127.0.0.1; fails, never skips.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
FC=$top_builddir/tests/fdpass-client
LC=$top_builddir/tests/limit-client
POLLS=100		# waits: polls of 0.1 s

one_dlmd_test fdpass "setresuid, dlmd's sockets"
# 1024 fds: a user that made dlmd hold more would stall it
one_dlmd "socket_mode = 0666" -- prlimit --nofile=1024:1024
"$LC" create fdpass 0666 >/dev/null || fail "cannot create the lockspace"
timeout 300 "$FC" "$pid" >"$dir/fdpass.out" 2>&1 || fail "fdpass-client: $(grep -v '^ok ' "$dir/fdpass.out")"
cat "$dir/fdpass.out"
n=$(grep -c '^ok ' "$dir/fdpass.out")
[ "$n" -eq 11 ] || fail "$n of the 11 checks passed"
# the interrupted closes are counted (at least the first way's)
ci=$(status_value closes_interrupted)
[ "${ci:-0}" -ge 1 ] || fail "dlmctl status closes_interrupted is '$ci'"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
stop_dlmd || fail "dlmd did not stop on SIGTERM"
