#!/bin/sh
# tests/test-client-kill.sh - clients SIGKILLed at any point of their
# libdlm calls, many times over, leave nothing behind in dlmd.
#
# A one-node dlmd (membership none); ROUNDS rounds, each starting two
# clients of one lockspace and SIGKILLing both after 0 to 399 ms (from
# /dev/urandom, from the first request of theirs dlmd served (each round
# must reach dlmd): wherever they are, in a lock, a conversion, an unlock,
# an asynchronous batch, the lockspace's open), through the request ring
# and, every other round, the socket (DLMD_RING=0):
#   - tests/cluster-client work: EX/PR/PW with LVBs on NRES resources,
#     two at a time (contention: waiting requests, blocking ASTs);
#   - tests/cluster-client many: 400 EX (and 400 PR over half of them)
#     asynchronously, 32 in flight;
#   - tests/limit-client locks: 300 locks, PERSISTENT (orphans when it
#     dies) or not.
# Then (every wait bounded): dlmd has no client left, the lockspace no
# lock but orphans, no AST queued and no client paused; a purge of all
# orphans leaves no lock; the history checker finds no two incompatible
# holders and no lost LVB update; a fresh client gets EX on every name
# any round used (nothing left granted or waiting); dlmd runs and no
# sanitizer spoke.  Found nothing when written (kept as a guard).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
POLLS=300
ROUNDS=${CLIENT_KILL_ROUNDS:-32}
NRES=8
LS=killed
CC=$top_builddir/tests/cluster-client
LC=$top_builddir/tests/limit-client

one_dlmd_test kill
one_dlmd
mkdir -p "$dir/w/logs" "$dir/w/counters" "$dir/w2/logs" "$dir/w2/counters"
: >"$dir/w/cmds"
"$LC" create "$LS" 0600 >"$dir/create.out" 2>&1 ||
	fail "cannot create $LS: $(cat "$dir/create.out")"

# a client in the background, its PID in last
bgc() {
	"$@" >/dev/null 2>&1 </dev/null &
	last=$!
}

# requests_past N: dlmd has served more than N requests
requests_past() { [ "$(status_value requests)" -gt "$1" ]; }
i=0
while [ $i -lt $ROUNDS ]; do
	i=$((i + 1))
	req0=$(status_value requests)
	ring=1
	[ $((i % 2)) = 0 ] && ring=0
	case $((i % 4)) in
	0|2)	bgc env DLMD_RING=$ring "$CC" work "$LS" "$dir/w" $NRES 3000 $i
		p1=$last
		bgc env DLMD_RING=$ring "$CC" work "$LS" "$dir/w" $NRES 3000 $((i + 1000))
		p2=$last ;;
	1)	bgc env DLMD_RING=$ring "$CC" many "$LS" "$dir/w" p 0 400 EX "$dir/w/cmds"
		p1=$last
		bgc env DLMD_RING=$ring "$CC" many "$LS" "$dir/w" p 200 600 PR "$dir/w/cmds"
		p2=$last ;;
	3)	# limit-client holds until its stdin ends: a fifo nobody closes
		mkfifo "$dir/fifo$i"
		env DLMD_RING=$ring "$LC" locks "$LS" 300 $(( (i / 4) % 2 )) \
			<"$dir/fifo$i" >/dev/null 2>&1 &
		p1=$!
		exec 5>"$dir/fifo$i"
		bgc env DLMD_RING=$ring "$CC" many "$LS" "$dir/w" q 0 300 NL "$dir/w/cmds"
		p2=$last ;;
	esac
	# the round's clients reached dlmd (a request of theirs at least,
	# so that no round passes having done nothing); then the kill
	poll $((POLLS / 10)) requests_past "$req0" ||
		fail "round $i: no request of its clients reached dlmd"
	ms=$(( $(od -An -N2 -tu2 /dev/urandom) % 400 ))
	sleep "$(printf '0.%03d' "$ms")"
	kill -KILL "$p1" "$p2" 2>/dev/null
	wait "$p1" "$p2" 2>/dev/null
	exec 5>&-
	rm -f "$dir/fifo$i"
done

no_clients() { [ "$(status_value clients)" = 0 ]; }
poll $((POLLS / 10)) no_clients ||
	fail "dlmd still has clients after every one was killed: $(status_value clients)"
ls_val() { # KEY: its value in dlmctl ls's line for $LS
	"$DLMCTL" ls | sed -n "s/^name $LS .* $1 \([0-9]*\).*/\1/p"
}
locks=$(ls_val locks)
orphans=$(ls_val orphans)
echo "   after $ROUNDS rounds: $("$DLMCTL" ls | head -n 1)"
[ -n "$locks" ] && [ "$locks" = "$orphans" ] ||
	fail "locks other than orphans are left: locks $locks, orphans $orphans"
[ "$(status_value ast_queue_bytes)" = 0 ] ||
	fail "ASTs still queued: $(status_value ast_queue_bytes) bytes"
[ "$(status_value clients_paused)" = 0 ] ||
	fail "clients still paused: $(status_value clients_paused)"

"$CC" purge "$LS" 0 0 >"$dir/purge.out" 2>&1 ||
	fail "purge of the orphans failed: $(cat "$dir/purge.out")"
[ "$(ls_val locks)" = 0 ] && [ "$(ls_val orphans)" = 0 ] ||
	fail "locks left after the purge: $("$DLMCTL" ls | head -n 1)"

"$CC" check "$dir/w" $NRES >"$dir/check.out" 2>&1 ||
	fail "checker: $(grep -c VIOLATION "$dir/check.out") violations: $(head -n 5 "$dir/check.out")"
echo "   $(tail -n 1 "$dir/check.out")"
holds=$(tail -n 1 "$dir/check.out" | sed -n 's/.* \([0-9][0-9]*\) holds.*/\1/p')
[ "${holds:-0}" -gt 0 ] || fail "the clients held no lock in $ROUNDS rounds"

# every name used is free: EX on all of them, each granted
: >"$dir/cmds-after"
for set in "p 0 600" "q 0 300" "res 0 $NRES"; do
	# shellcheck disable=SC2086
	set -- $set
	: >"$dir/after.out"
	"$CC" many "$LS" "$dir/w2" "$1" "$2" "$3" EX "$dir/cmds-after" \
		>"$dir/after.out" 2>&1 &
	ap=$!
	poll $((POLLS / 10)) grep -q "^held $3\$" "$dir/after.out" ||
		fail "a fresh client did not get EX on all of $1-$2..$(( $3 - 1 )): $(tail -n 1 "$dir/after.out")"
	echo quit >>"$dir/cmds-after"
	poll $((POLLS / 10)) not kill -0 "$ap" || kill -KILL "$ap" 2>/dev/null
	wait "$ap" 2>/dev/null
	: >"$dir/cmds-after"
done
kill -0 "$pid" 2>/dev/null || fail "dlmd is gone"
[ $rc -eq 0 ] && echo PASS
exit $rc
