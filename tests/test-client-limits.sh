#!/bin/sh
# tests/test-client-limits.sh - what local clients may take from dlmd.
#
# A one-node dlmd (membership none: no corosync, no network) with its
# sockets in a temporary directory, run with a small RLIMIT_NOFILE, and
# tests/limit-client playing the clients, some as unprivileged users
# (setpriv):
#   1. the client socket has the owner, group and mode of dlm.conf
#      (root, the test's "dlm group" nogroup, 0660): a user outside the
#      group cannot connect (EACCES);
#   2. a user holds at most max_clients_per_uid connections; the next one
#      fails with EUSERS, and the refusals are logged once (rate-limited);
#      root is not limited;
#   3. fd exhaustion: a flood of idle connections uses up dlmd's fds;
#      dlmd does not spin (its CPU time over a few seconds stays low),
#      logs the exhaustion once, and a client that came during the flood
#      is served when it ends; so are a dlmctl status and a GET /metrics
#      (on metrics_listen, a unix socket) that came during it: the
#      control and metrics sockets pause their accept too (dlmd_accept),
#      neither spinning nor refusing;
#   3b. one fd left: a client's connection takes it, so the kernel
#      cannot give dlmd the AST socket its lockspace open passes (it
#      drops it: MSG_CTRUNC, no fd); dlmd logs it and answers EMFILE,
#      and libdlm asks again until dlmd has fds (as a connection waits
#      in the backlog): the client is served once the other connections
#      go, and status counts requests_fd_lost.  (Its bytes were decoded
#      as too long: EBADMSG, and dlm_open_lockspace failed with "Bad
#      message": 82 of 200 clients opening at once under ulimit -n 64.)
#   4. slow clients: a client that does not read its ASTs (stopped, slow)
#      is paused (dlmd takes no request of it until it reads: dlmctl
#      status shows it), never disconnected; four of them together stay
#      under ast_queue_limit, another client is served meanwhile, and
#      when they read each gets every completion; one killed while
#      paused is closed as usual (limit-client sets their AST fds aside:
#      libdlm itself reads the AST socket while it waits for dlmd, so a
#      thread waiting in it reads; tests/test-client-stall.sh);
#   5. a user holds at most max_locks_per_uid locks, over all its
#      connections and the orphans they left; the next lock is refused
#      (EDQUOT, logged once); purging its orphans gives room back; root
#      is not limited.
#   6. unused resources: a user locking and unlocking a new name each
#      time (no lock held, so max_locks_per_uid never sees it) leaves
#      one unused resource per name for toss_secs (an hour here); the
#      lockspace keeps max_tossed_resources of them, no more: the
#      status counts exactly the rest as dropped early (toss_evictions),
#      and the dropped names lock again (issue 14).
#   7. a user who breaks the rules again and again (each time a new
#      connection whose AST socket it shuts down: dlmd cannot write the
#      ASTs it owes and disconnects it) is disconnected every time, and
#      the disconnects are logged a few times a minute, not once each:
#      the rest only at debug level (one warning a disconnect was 2000
#      lines in 60 ms).
# Needs root (setpriv, prlimit); fails, never skips.  Every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LC=$top_builddir/tests/limit-client
NOFILE=80		# dlmd's RLIMIT_NOFILE, soft and hard (step 2 needs
		# 3 x PER_UID x 2 client fds and dlmd's own ~25: lock
		# files, listeners, the loop's)
PER_UID=8		# max_clients_per_uid
AST_LIMIT=262144	# ast_queue_limit, bytes
MAX_LOCKS=100		# max_locks_per_uid
MAX_TOSSED=500		# max_tossed_resources
CYCLE=3000		# names step 6 locks and unlocks
SLOW_LOCKS=2700		# ASTs each slow client leaves unread (its AST
			# socket holds 1000-1400: dlmd AST_SNDBUF; the
			# rest, queued, is under AST_LIMIT for one client
			# and past it for four, without backpressure)
CPU_TICKS_MAX=30	# dlmd's CPU time in CPU_SECS s of flood (clock ticks)
CPU_SECS=3
BREAKS=200		# step 7's disconnects
BREAK_LOG_MAX=20	# ... warnings at most: two minutes' worth (10 each)
POLLS=100		# waits: polls of 0.1 s

one_dlmd_test limits "setpriv, prlimit"

# wait_line FILE PATTERN WHAT: poll until FILE has a line matching PATTERN.
wait_line() {
	poll $((POLLS / 10)) grep -q "$2" "$1" ||
		{ fail "$3: no '$2' in $(cat "$1" 2>/dev/null)"; return 1; }
}

cpu_ticks() { # PID: utime + stime
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

one_dlmd "socket_owner = root" "socket_group = nogroup" \
	"socket_mode = 0660" "log_level = debug" \
	"max_clients_per_uid = $PER_UID" "ast_queue_limit = $AST_LIMIT" \
	"max_locks_per_uid = $MAX_LOCKS" "max_tossed_resources = $MAX_TOSSED" \
	"toss_secs = 3600" \
	"configfs_dir = $dir/configfs" "metrics_listen = $dir/metrics.sock" \
	-- prlimit --nofile=$NOFILE:$NOFILE

echo "== 1. the client socket: owner, group, mode from dlm.conf"
perm=$(stat -c '%U %G %a' "$dir/dlmd.sock")
[ "$perm" = "root nogroup 660" ] || fail "socket is '$perm', want 'root nogroup 660'"
"$LC" create lim 0666 || fail "root cannot create a lockspace"
timeout 20 setpriv --reuid=daemon --regid=daemon --clear-groups "$LC" open lim 1 </dev/null >"$dir/outsider.out" 2>&1
grep -q '^error EACCES' "$dir/outsider.out" ||
	fail "a user outside the socket's group: $(cat "$dir/outsider.out")"

echo "== 2. at most $PER_UID connections per user; root is not limited"
fifo_hold nobody1 4 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" open lim $((PER_UID + 4))
wait_line "$dir/nobody1.out" '^opened' "nobody's connections"
grep -q "^opened $PER_UID\$" "$dir/nobody1.out" ||
	fail "nobody opened more or less than $PER_UID: $(cat "$dir/nobody1.out")"
grep -q '^error EUSERS$' "$dir/nobody1.out" ||
	fail "the connection past the limit: $(cat "$dir/nobody1.out")"
timeout 20 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" open lim 1 </dev/null >"$dir/nobody2.out" 2>&1
grep -q '^error EUSERS$' "$dir/nobody2.out" || fail "a second refusal: $(cat "$dir/nobody2.out")"
timeout 20 "$LC" open lim $((PER_UID * 2)) </dev/null >"$dir/root.out" 2>&1
grep -q "^opened $((PER_UID * 2))\$" "$dir/root.out" || fail "root is limited: $(cat "$dir/root.out")"
[ "$(status_value clients_refused)" = 2 ] || fail "clients_refused: $("$DLMCTL" status)"
n=$(grep -c 'refused: the user holds max_clients_per_uid' "$dir/dlmd.out")
[ "$n" = 1 ] || fail "refusals logged $n times in a minute, want once"
fifo_release nobody1 4
# Its connections are gone: nobody may connect again.
timeout 20 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" open lim 1 </dev/null >"$dir/nobody3.out" 2>&1
grep -q '^opened 1$' "$dir/nobody3.out" || fail "nobody after closing: $(cat "$dir/nobody3.out")"

echo "== 3. fds run out: no spinning, one log line, served afterwards"
fifo_hold flood 5 "$LC" connect 400
wait_line "$dir/flood.out" '^connected' "the flood"
wait_line "$dir/dlmd.out" 'accept on client socket' "the fd exhaustion log line"
# A client that comes during the flood waits in the backlog.
fifo_hold late 6 "$LC" open lim 1
# ... and so do a control request (dlmctl's "status", sent by hand:
# dlmctl gives up after 10 s) and a GET /metrics: their sockets have no
# fd to accept with either.  (Not holding the holders' fifo ends.)
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(60)
s.connect(sys.argv[1])
s.sendall(b"status\n")
while True:
    b = s.recv(65536)
    if not b:
        break
    sys.stdout.buffer.write(b)
' "$DLMD_CTL_SOCKET" >"$dir/ctl-late.out" 2>&1 5>&- 6>&- &
ctl_late=$!
holders="$holders $ctl_late"
curl -sS --max-time 60 --unix-socket "$dir/metrics.sock" \
	http://localhost/metrics >"$dir/metrics-late.out" 2>&1 5>&- 6>&- &
metrics_late=$!
holders="$holders $metrics_late"
sleep 1
t0=$(cpu_ticks "$pid")
sleep $CPU_SECS
t1=$(cpu_ticks "$pid")
echo "dlmd used $((t1 - t0)) clock ticks in $CPU_SECS s of fd exhaustion"
[ $((t1 - t0)) -le $CPU_TICKS_MAX ] ||
	fail "dlmd spins while out of fds: $((t1 - t0)) ticks in $CPU_SECS s"
n=$(grep -c 'accept on client socket' "$dir/dlmd.out")
[ "$n" = 1 ] || fail "fd exhaustion logged $n times, want once (rate-limited)"
grep -q '^opened' "$dir/late.out" && fail "the late client was served with no fd free?"
kill -0 "$ctl_late" 2>/dev/null ||
	fail "the control request was answered with no fd free? $(cat "$dir/ctl-late.out")"
kill -0 "$metrics_late" 2>/dev/null ||
	fail "GET /metrics was answered with no fd free? $(cat "$dir/metrics-late.out")"
fifo_release flood 5
wait_line "$dir/late.out" '^opened 1$' "the late client after the flood"
fifo_release late 6
wait_gone "$ctl_late" || fail "the control request still waits after the flood"
wait "$ctl_late" || fail "the control request failed: $(cat "$dir/ctl-late.out")"
grep -q '^clients_refused ' "$dir/ctl-late.out" ||
	fail "the control request during the flood: $(cat "$dir/ctl-late.out")"
wait_gone "$metrics_late" || fail "GET /metrics still waits after the flood"
wait "$metrics_late" || fail "GET /metrics after the flood failed: $(cat "$dir/metrics-late.out")"
grep -q '^dlmd_' "$dir/metrics-late.out" ||
	fail "GET /metrics during the flood: $(cat "$dir/metrics-late.out")"
"$DLMCTL" status >/dev/null || fail "dlmctl status after the flood"

echo "== 3b. one fd left: the AST socket an open passes is dropped"
free_fds() { # dlmd's RLIMIT_NOFILE less the fds it has open below it
	# (an fd it inherited above the limit, as make's or a shell's
	# pipe at 251 or 255, takes no slot: counting it passed here and
	# failed in CI, where there was none)
	ff_n=0
	for ff_f in /proc/"$pid"/fd/*; do
		ff_f=${ff_f##*/}
		[ "$ff_f" -lt $NOFILE ] 2>/dev/null && ff_n=$((ff_n + 1))
	done
	echo $((NOFILE - ff_n))
}
one_free() { [ "$(free_fds)" = 1 ]; }
# (all fds but one taken: dlmd accepts one more connection, and has no
# fd left for what that one passes)
fifo_hold fill 5 "$LC" connect "$(($(free_fds) - 1))"
wait_line "$dir/fill.out" '^connected' "the connections that take the fds"
wait_for 10 "dlmd to accept them, one fd left" one_free
fifo_hold lastfd 6 "$LC" open lim 1
wait_line "$dir/dlmd.out" 'the fd it passed with its ls_open was dropped' \
	"the log line of the dropped AST socket"
sleep 1		# the client asks again meanwhile, and waits
grep -q . "$dir/lastfd.out" &&
	fail "the client whose AST socket was dropped did not wait: $(cat "$dir/lastfd.out")"
fifo_release fill 5
wait_line "$dir/lastfd.out" '^opened 1$' "the client, once dlmd has fds again"
fifo_release lastfd 6
n=$(status_value requests_fd_lost)
[ "${n:-0}" -ge 1 ] || fail "status requests_fd_lost is '$n'"

echo "== 4. unread ASTs: a client that does not read is paused, never cut"
# Four clients submit SLOW_LOCKS requests each and do not read their
# ASTs (as if stopped): together they would pass AST_LIMIT.  dlmd stops
# taking each one's requests once its own queue passes its bound
# (backpressure): none is cut, all stay connected with their locks, the
# queue stays under AST_LIMIT, and another client is served meanwhile.
# slow_waits NAME: NAME submitted all, or dlmd paused it
slow_waits() {
	eval "sp=\$held_$1"
	grep -q '^submitted' "$dir/$1.out" ||
		"$DLMCTL" status | grep -q "^paused_client pid $sp "
}
for k in 1 2 3 4; do
	fifo_hold slow$k $((k + 3)) "$LC" slow lim $SLOW_LOCKS
	poll $((POLLS / 10)) slow_waits slow$k || fail "slow client $k neither submitted nor paused"
	q=$(status_value ast_queue_bytes)
	[ "$q" -gt 0 ] && [ "$q" -le $AST_LIMIT ] ||
		fail "$k slow clients: ast_queue_bytes $q (limit $AST_LIMIT)"
done
echo "four slow clients: ast_queue_bytes $q, client_pauses $(status_value client_pauses)"
"$DLMCTL" status | grep '^paused_client '
[ "$(status_value clients_cut_slow)" = 0 ] ||
	fail "a slow client was cut: $(grep disconnecting "$dir/dlmd.out")"
[ "$(status_value client_pauses)" -ge 1 ] || fail "no client was paused: $("$DLMCTL" status)"
[ "$("$DLMCTL" status | grep -c '^paused_client ')" -ge 1 ] ||
	fail "dlmctl status shows no paused client: $("$DLMCTL" status)"
timeout 60 "$LC" locks lim 10 0 </dev/null >"$dir/other.out" 2>&1
grep -q '^locked 10$' "$dir/other.out" || fail "another client meanwhile: $(cat "$dir/other.out")"
for k in 1 2 3 4; do
	fifo_release slow$k $((k + 3))
	# each got every completion: none of its requests or locks was lost
	grep -q '^ast-socket ok$' "$dir/slow$k.out" &&
		grep -q "^submitted $SLOW_LOCKS\$" "$dir/slow$k.out" &&
		grep -q "^completions $SLOW_LOCKS\$" "$dir/slow$k.out" ||
		fail "slow client $k: $(cat "$dir/slow$k.out")"
done
[ "$(status_value clients_cut_slow)" = 0 ] || fail "a slow client was cut"
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"
"$DLMCTL" status | grep -q '^paused_client ' && fail "still paused: $("$DLMCTL" status)"
# a paused client that dies is closed as usual (seen on its AST socket):
# its connection and queue go, nothing stays paused
clients0=$(status_value clients)
fifo_hold slow5 8 "$LC" slow lim $SLOW_LOCKS
poll $((POLLS / 10)) slow_waits slow5 || fail "slow client 5 neither submitted nor paused"
"$DLMCTL" status | grep -q "^paused_client pid $held_slow5 " || fail "slow client 5 not paused"
kill -KILL "$held_slow5"
no_paused() { [ "$(status_value clients_paused)" = 0 ] && [ "$(status_value clients)" = "$clients0" ]; }
poll $((POLLS / 10)) no_paused || fail "a killed paused client stays: $("$DLMCTL" status)"
fifo_release slow5 8
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"

echo "== 5. at most $MAX_LOCKS locks per user, orphans included; root is not limited"
asnobody() { timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
# expect_locks NAME K [ERR]: NAME.out says "locked K" (and "error ERR")
expect_locks() {
	grep -q "^locked $2\$" "$dir/$1.out" &&
		{ [ $# -lt 3 ] || grep -q "^error $3\$" "$dir/$1.out"; } ||
		fail "$1: want locked $2 ${3:-}: $(cat "$dir/$1.out")"
}
asnobody "$LC" locks lim $((MAX_LOCKS + 5)) 0 </dev/null >"$dir/q1.out" 2>&1
expect_locks q1 $MAX_LOCKS EDQUOT
n=$(grep -c 'refused a lock: the user holds max_locks_per_uid' "$dir/dlmd.out")
[ "$n" = 1 ] || fail "lock refusals logged $n times, want once"
# its locks went with it: the same again, over two connections at once
fifo_hold q2 4 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" locks lim 60 0
wait_line "$dir/q2.out" '^locked' "nobody's first connection"
expect_locks q2 60
asnobody "$LC" locks lim 60 0 </dev/null >"$dir/q3.out" 2>&1
expect_locks q3 $((MAX_LOCKS - 60)) EDQUOT
fifo_release q2 4
# orphans count: 60 left behind, then room for 40 only
asnobody "$LC" locks lim 60 1 </dev/null >"$dir/q4.out" 2>&1
expect_locks q4 60
asnobody "$LC" locks lim 60 0 </dev/null >"$dir/q5.out" 2>&1
expect_locks q5 $((MAX_LOCKS - 60)) EDQUOT
asnobody "$LC" purge lim </dev/null >"$dir/q6.out" 2>&1
grep -q '^purged$' "$dir/q6.out" || fail "nobody's purge: $(cat "$dir/q6.out")"
asnobody "$LC" locks lim $MAX_LOCKS 0 </dev/null >"$dir/q7.out" 2>&1
expect_locks q7 $MAX_LOCKS
timeout 60 "$LC" locks lim $((MAX_LOCKS * 2)) 0 </dev/null >"$dir/q8.out" 2>&1
expect_locks q8 $((MAX_LOCKS * 2))
[ "$(status_value locks_refused)" = 3 ] || fail "locks_refused: $("$DLMCTL" status)"

echo "== 6. at most $MAX_TOSSED unused resources kept"
t0=$(status_value tossed)
e0=$(status_value toss_evictions)
[ -n "$t0" ] && [ "$t0" -le $MAX_TOSSED ] || fail "tossed before: $("$DLMCTL" status)"
asnobody "$LC" cycle lim fresh $CYCLE </dev/null >"$dir/c1.out" 2>&1
grep -q "^cycled $CYCLE\$" "$dir/c1.out" || fail "nobody's cycle: $(cat "$dir/c1.out")"
t1=$(status_value tossed)
e1=$(status_value toss_evictions)
echo "unused resources kept: $t0 -> $t1; dropped early: $e0 -> $e1"
[ "$t1" = $MAX_TOSSED ] || fail "tossed $t1 after $CYCLE fresh names, want $MAX_TOSSED"
# each name past the room left pushed the oldest out
[ $((e1 - e0)) = $((CYCLE - (MAX_TOSSED - t0))) ] ||
	fail "toss_evictions $e0 -> $e1 after $CYCLE names ($t0 kept before)"
r=$("$DLMCTL" ls | sed -n 's/.* resources \([0-9]*\) .*/\1/p')
[ "$r" = $MAX_TOSSED ] || fail "lockspace resources $r: $("$DLMCTL" ls)"
# the same names again: all were dropped, every one locks again
asnobody "$LC" cycle lim fresh $CYCLE </dev/null >"$dir/c2.out" 2>&1
grep -q "^cycled $CYCLE\$" "$dir/c2.out" || fail "nobody's second cycle: $(cat "$dir/c2.out")"
[ "$(status_value tossed)" = $MAX_TOSSED ] || fail "tossed after the second cycle: $("$DLMCTL" status)"
[ "$(status_value toss_evictions)" = $((e1 + CYCLE)) ] ||
	fail "toss_evictions after the second cycle: $("$DLMCTL" status)"
"$DLMCTL" metrics | grep -q "^dlmd_toss_evictions_total{lockspace=\"lim\"} $((e1 + CYCLE))\$" ||
	fail "metrics: $("$DLMCTL" metrics | grep toss)"

echo "== 7. $BREAKS disconnects of a user breaking the rules, a few logged"
w0=$(grep -c 'warning: client pid .*; disconnecting' "$dir/dlmd.out")
asnobody "$LC" break lim $BREAKS </dev/null >"$dir/b1.out" 2>&1
grep -q "^broke $BREAKS\$" "$dir/b1.out" || fail "nobody's breaks: $(cat "$dir/b1.out")"
# every one was logged at some level (log_level debug here) ...
n=$(grep -c "uid $(id -u nobody) serial .*: AST socket closed; disconnecting" "$dir/dlmd.out")
[ "$n" -ge $BREAKS ] || fail "$n disconnects logged at any level, want $BREAKS"
# ... and few as warnings
w=$(($(grep -c 'warning: client pid .*; disconnecting' "$dir/dlmd.out") - w0))
echo "$BREAKS disconnects: $w logged as warnings"
[ "$w" -le $BREAK_LOG_MAX ] ||
	fail "$w disconnect warnings for $BREAKS disconnects, want at most $BREAK_LOG_MAX"

echo "== the daemon is still healthy"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
timeout 20 "$LC" open lim 1 </dev/null >"$dir/last.out" 2>&1
grep -q '^opened 1$' "$dir/last.out" || fail "a client at the end: $(cat "$dir/last.out")"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
