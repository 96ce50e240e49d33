#!/bin/sh
# tests/test-client-watch.sh - dlmd watches a busy client's request ring
# (plugin/client.c "Watching the rings", dlm.conf client_spin_us).
#
# A one-node dlmd (membership none) and tests/limit-client "cycle",
# which takes and gives back locks with dlm_ls_lock_wait and
# dlm_ls_unlock_wait, one request in flight at a time:
#   1. client_spin_us = 1000000 (a second, far longer than the client
#      takes between two requests): after the first request, which finds
#      dlmd asleep and travels on the socket, every request goes into the
#      ring (ring_requests counts all of them but that one) and none
#      needs a kick; a client that stays, idle, has its ring told dlmd
#      sleeps once the second has passed (ring_watch_ends).  On a machine
#      busy enough that a yield of dlmd's gave its CPU away for long
#      (ring_watch_yields_long), the watch pauses by design, and some
#      requests travel on the socket; in both cases each of the
#      2 * PAIRS requests is counted once, through the ring or on the
#      socket (ring_socket_locks), none kicks, and none took the socket
#      but after dlmd told the ring it sleeps (ring_sleeps, each word
#      taken by one request at most): while dlmd watched, every request
#      went into the ring;
#   2. the same client while the watch is on, killed (SIGKILL) between
#      requests: dlmd goes on serving others (its watch list lost it);
#   3. client_spin_us = 0: dlmd sleeps as soon as a ring is empty, so
#      each _wait request travels on the socket (no ring request), each
#      after dlmd said it sleeps.
# Counts, not times: the only bound is the generous wait for dlmd's
# counters.  Needs root (dlmd's sockets); fails, never skips.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LC=$top_builddir/tests/limit-client
PAIRS=300
POLLS=100		# waits: polls of 0.1 s

one_dlmd_test watch "dlmd's sockets"
bg=
# cleanup_more: the client killed in step 2, if the test ends before
cleanup_more() {
	[ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null && wait "$bg" 2>/dev/null
}

# watch_ended N: ring_watch_ends is at least N
watch_ended() { [ "$(status_value ring_watch_ends)" -ge "$1" ]; }

# cycle PREFIX: PAIRS lock+unlock pairs on names PREFIX-*
cycle() {
	out=$("$LC" cycle watch "$1" $PAIRS 2>&1)
	[ "$out" = "cycled $PAIRS" ] || fail "limit-client cycle $1: $out"
}

# 1. a watch longer than anything the client does
one_dlmd "client_spin_us = 1000000"
"$LC" create watch 0666 >/dev/null || fail "cannot create the lockspace"
# ring_marks: the ring counters now (ring_split counts from them)
ring_marks() {
	req0=$(status_value ring_requests)
	kick0=$(status_value ring_kicks)
	sleeps0=$(status_value ring_sleeps)
	sock0=$(status_value ring_socket_locks)
}
ring_marks
ends0=$(status_value ring_watch_ends)
long0=$(status_value ring_watch_yields_long)
[ -n "$req0" ] && [ -n "$kick0" ] && [ -n "$ends0" ] && [ -n "$long0" ] &&
	[ -n "$sleeps0" ] && [ -n "$sock0" ] ||
	fail "no ring_requests, ring_kicks, ring_watch_ends, ring_watch_yields_long, ring_sleeps or ring_socket_locks in dlmctl status"

# ring_split WHAT: the requests since ring_marks; each of the
# 2 * PAIRS went through the ring (req) or on the socket (sock), none
# kicked (a _wait call that finds dlmd asleep is its own kick), and each
# on the socket took a word of dlmd's that it sleeps (sleeps): none went
# there while dlmd said it watched
ring_split() {
	req=$(($(status_value ring_requests) - req0))
	kicks=$(($(status_value ring_kicks) - kick0))
	sleeps=$(($(status_value ring_sleeps) - sleeps0))
	sock=$(($(status_value ring_socket_locks) - sock0))
	echo "$1: $req requests through the ring, $sock on the socket, told dlmd sleeps $sleeps times, $kicks kicks"
	[ $((req + sock)) -eq $((2 * PAIRS)) ] ||
		fail "$1: $req through the ring + $sock on the socket, want $((2 * PAIRS)) requests"
	[ "$kicks" -eq 0 ] || fail "$1: $kicks kicks, want 0"
	[ "$sock" -le "$sleeps" ] ||
		fail "$1: $sock requests on the socket, but dlmd said it sleeps only $sleeps times"
}
cycle w1
ring_split watched
long=$(($(status_value ring_watch_yields_long) - long0))
if [ "$long" -eq 0 ]; then
	# the first found dlmd asleep (a new ring) and travelled on the
	# socket; the watch never ended, every other went into the ring
	[ "$req" -eq $((2 * PAIRS - 1)) ] ||
		fail "watched: $req of $((2 * PAIRS)) requests came through the ring, want $((2 * PAIRS - 1))"
else
	# another process kept our CPU for long while dlmd yielded: the
	# watch paused (WATCH_OFF_*), each request then found dlmd asleep
	# and took the socket (ring_split counted them)
	echo "note: $long long yields (a busy machine): the watch paused"
fi
# a client that stays, idle, holding a lock: its watch ends
fifo_hold hold 3 "$LC" locks watch 1 0
wait_for 10 "the holder's lock" grep -q "locked 1" "$dir/hold.out"
# ended_or_paused: the holder's watch ended, or the watch paused
ended_or_paused() {
	watch_ended $((ends0 + 1)) || [ "$(status_value ring_watch_yields_long)" -gt "$long0" ]
}
wait_for 10 "the watch to end" ended_or_paused
fifo_release hold 3

# 2. a client killed while dlmd watches its ring
"$LC" cycle watch w2 100000000 >"$dir/killed.out" 2>&1 &
bg=$!
# more_requests N: requests passed N
more_requests() { [ "$(status_value requests)" -gt "$1" ]; }
wait_for 10 "the client to take locks" more_requests $(($(status_value requests) + 100))
kill -KILL "$bg"
wait "$bg" 2>/dev/null
bg=
cycle w3
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
stop_dlmd || fail "dlmd did not stop on SIGTERM"

# 3. no watch: each _wait request wakes dlmd through the socket
one_dlmd "client_spin_us = 0"
"$LC" create watch 0666 >/dev/null || fail "cannot create the lockspace"
ring_marks
cycle w4
ring_split "not watched"
[ "$req" -eq 0 ] || fail "not watched: $req requests came through the ring, want 0"
[ "$(status_value ring_watch_ends)" -eq 0 ] || fail "not watched: a watch ended"
exit $rc
