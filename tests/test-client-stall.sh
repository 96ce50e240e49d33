#!/bin/sh
# tests/test-client-stall.sh - no client stalls itself or others through
# dlmd's backpressure (plugin/client.c "Backpressure": a client whose
# unread ASTs pass ast_queue_limit/16 is paused, its requests not taken,
# until it reads).
#
# A one-node dlmd (membership none) with a small ast_queue_limit, and
# tests/stall-client playing the clients:
#   1. one thread, as lvmlockd: N async locks without dispatching, then a
#      synchronous lock and unlock, then dispatching; the same with N
#      async conversions (each waits for its REPLY) and N async unlocks;
#      with the request ring and without (DLMD_RING=0, the socket fills),
#      on libdlm and on libdlm_lt.
#      dlmd pauses it (client_pauses grows), yet every call returns and
#      every completion comes: while libdlm waits for dlmd it keeps the
#      ASTs dlmd sent in the client's own memory (libdlm.c "Waiting
#      reads the AST socket").  Before that, the call after ~1500 unread
#      ASTs (here) waited for ever;
#   2. a holder of N locks others contend for is stopped (SIGSTOP): the
#      blocking ASTs pile up for it, it is paused (dlmctl status), the
#      contender waits (it is right to: the locks are held); after
#      SIGCONT the holder runs its blocking ASTs and unlocks, the
#      contender gets every lock, nothing is lost, the pause ends.  A
#      holder stopped then killed: its locks go, the contender gets them;
#   3. a stopped root holder of more locks than ast_queue_limit's worth
#      of blocking ASTs: the last resort (astq_enforce_limit) disconnects
#      it, logging why (clients_cut_slow); the contender gets every lock
#      and another client is served; the holder sees it lost its
#      connection.
#      Before, the grants the cut released to the contender, more than
#      the limit at once, cut the contender too, though it read.
# Needs root (the last resort is for root's clients); fails, never
# skips.  Every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
SC=$top_builddir/tests/stall-client
AST_LIMIT=262144	# ast_queue_limit, bytes: a client is paused past
			# 16 KB of queued ASTs (~140), all are cut past 256 KB
			# (~2200); its AST socket holds 1000-1400 more
BATCH=6000		# step 1's requests per phase: past the pause
HOLD=2500		# step 2's locks: past the pause, under the limit
HOLD_CUT=6000		# step 3's: past the limit
CALL_SECS=${STALL_CALL_SECS:-180}	# a stall-client run (the hang under test: timeout)
POLLS=600		# waits: polls of 0.1 s

one_dlmd_test stall "the last resort is for root's clients"

# bg NAME CMD...: run CMD in the background, its stdin a fifo held open
# by a sleep (eof_NAME) until "eof NAME", its output in $dir/NAME.out,
# its pid in pid_NAME.
bg() {
	name=$1
	shift
	mkfifo "$dir/$name.fifo"
	"$@" <"$dir/$name.fifo" >"$dir/$name.out" 2>&1 &
	eval "pid_$name=$!"
	holders="$holders $!"
	# the fifo's writer: open, then EOF when "eof NAME" kills it
	sleep $((CALL_SECS * 2)) >"$dir/$name.fifo" &
	eval "eof_$name=$!"
	holders="$holders $!"
}

eof() { # NAME: its stdin ends
	eval "kill \$eof_$1"
}

# finished NAME: wait until NAME exits (CALL_SECS), its status in st
finished() {
	eval "fp=\$pid_$1"
	if ! poll $CALL_SECS not kill -0 "$fp"; then
		fail "$1 still runs after $CALL_SECS s: $(tr '\n' ' ' <"$dir/$1.out")"
		kill -CONT "$fp" 2>/dev/null
		kill -KILL "$fp" 2>/dev/null
	fi
	wait "$fp" 2>/dev/null
	st=$?
}

has_line() { grep -q "^$2\$" "$dir/$1.out"; }

# paused PID: dlmctl status lists PID as paused
paused() { "$DLMCTL" status | grep -q "^paused_client pid $1 "; }

one_dlmd "log_level = debug" "ast_queue_limit = $AST_LIMIT"

echo "== 1. one thread submits a batch without dispatching, then calls again"
for run in "1 $SC" "0 $SC" "1 $SC-lt" "0 $SC-lt"; do
	ring=${run%% *}
	prog=${run#* }
	b=batch$ring${prog##*stall-client}
	p0=$(status_value client_pauses)
	DLMD_RING=$ring timeout $CALL_SECS "$prog" batch stall $BATCH \
		</dev/null >"$dir/$b.out" 2>&1
	st=$?
	p1=$(status_value client_pauses)
	echo "$b: exit $st, client_pauses $p0 -> $p1: $(tr '\n' ' ' <"$dir/$b.out")"
	[ $st = 0 ] && has_line $b done ||
		fail "$b: the batch client (exit $st, 124: hung): $(cat "$dir/$b.out")"
	for l in "locks $BATCH" "sync 1" "converts $BATCH" "sync 2" \
		"unlocks $BATCH" "sync 3"; do
		has_line $b "$l" || fail "$b: no '$l'"
	done
	[ "$(grep -c "^dispatched $BATCH\$" "$dir/$b.out")" = 3 ] ||
		fail "$b: completions lost: $(cat "$dir/$b.out")"
	# the test tested something: dlmd did pause it
	[ "$p1" -gt "$p0" ] || fail "$b: dlmd never paused the batch client"
done
[ "$(status_value clients_cut_slow)" = 0 ] || fail "a batch client was cut"
[ "$(status_value clients_paused)" = 0 ] || fail "still paused: $("$DLMCTL" status)"
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"

echo "== 2. a stopped holder: blocking ASTs pile up, it is paused; SIGCONT: all go on"
bg holder "$SC" hold stall h2 $HOLD
wait_for $((POLLS / 10)) "the holder's locks" has_line holder "held $HOLD"
kill -STOP "$pid_holder"
p0=$(status_value client_pauses)
bg contend "$SC" contend stall h2 $HOLD
wait_for $((POLLS / 10)) "the contender's requests" has_line contend "submitted $HOLD"
wait_for $((POLLS / 10)) "the stopped holder paused" paused "$pid_holder"
"$DLMCTL" status | grep '^paused_client '
echo "stopped holder: ast_queue_bytes $(status_value ast_queue_bytes)"
has_line contend "granted $HOLD" && fail "the contender got locks the stopped holder holds"
kill -0 "$pid_contend" || fail "the contender ended: $(cat "$dir/contend.out")"
kill -CONT "$pid_holder"
finished contend
[ $st = 0 ] && has_line contend "granted $HOLD" && has_line contend "failed 0" ||
	fail "the contender after SIGCONT (exit $st): $(cat "$dir/contend.out")"
wait_for $((POLLS / 10)) "the holder's unlocks" has_line holder "unlocked $HOLD"
has_line holder "basts $HOLD" || fail "the holder's blocking ASTs: $(cat "$dir/holder.out")"
eof holder
finished holder
[ $st = 0 ] || fail "the holder (exit $st): $(cat "$dir/holder.out")"
[ "$(status_value client_pauses)" -gt "$p0" ] || fail "no pause counted"
[ "$(status_value clients_paused)" = 0 ] || fail "still paused: $("$DLMCTL" status)"
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"
grep -q 'reads its ASTs again' "$dir/dlmd.out" || fail "no resumption logged"

echo "== 2b. a stopped holder is killed: its locks go to the contender"
bg holder2 "$SC" hold stall h2b $HOLD
wait_for $((POLLS / 10)) "the second holder's locks" has_line holder2 "held $HOLD"
kill -STOP "$pid_holder2"
bg contend2 "$SC" contend stall h2b $HOLD
wait_for $((POLLS / 10)) "the contender's requests" has_line contend2 "submitted $HOLD"
wait_for $((POLLS / 10)) "the stopped holder paused" paused "$pid_holder2"
kill -KILL "$pid_holder2"
finished contend2
[ $st = 0 ] && has_line contend2 "granted $HOLD" && has_line contend2 "failed 0" ||
	fail "the contender after the holder's death (exit $st): $(cat "$dir/contend2.out")"
[ "$(status_value clients_paused)" = 0 ] || fail "still paused: $("$DLMCTL" status)"
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"
[ "$(status_value clients_cut_slow)" = 0 ] || fail "a holder was cut"

echo "== 3. a stopped root holder of too many locks: the last resort cuts it"
bg holder3 "$SC" hold stall h3 $HOLD_CUT
wait_for $((POLLS / 10)) "the third holder's locks" has_line holder3 "held $HOLD_CUT"
kill -STOP "$pid_holder3"
bg contend3 "$SC" contend stall h3 $HOLD_CUT
wait_for $((POLLS / 10)) "the contender's requests" has_line contend3 "submitted $HOLD_CUT"
finished contend3
[ $st = 0 ] && has_line contend3 "granted $HOLD_CUT" && has_line contend3 "failed 0" ||
	fail "the contender of the cut holder (exit $st): $(cat "$dir/contend3.out")"
[ "$(status_value clients_cut_slow)" = 1 ] || fail "clients_cut_slow: $("$DLMCTL" status)"
grep "passed ast_queue_limit" "$dir/dlmd.out" | grep -q "pid $pid_holder3 uid 0 " ||
	fail "the cut is not logged: $(grep disconnecting "$dir/dlmd.out")"
grep 'passed ast_queue_limit' "$dir/dlmd.out"
[ "$(status_value ast_queue_bytes)" = 0 ] || fail "ASTs still queued: $("$DLMCTL" status)"
# another client is served
DLMD_RING=1 timeout $CALL_SECS "$SC" batch stall 10 </dev/null >"$dir/after.out" 2>&1 ||
	fail "a client after the cut: $(cat "$dir/after.out")"
has_line after done || fail "a client after the cut: $(cat "$dir/after.out")"
# the holder learns it lost its locks: its connection ended
kill -CONT "$pid_holder3"
finished holder3
grep -q '^error .* \(ENOTCONN\|EPIPE\)$' "$dir/holder3.out" ||
	fail "the cut holder did not see its connection end: $(cat "$dir/holder3.out")"

echo "== the daemon is still healthy"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
