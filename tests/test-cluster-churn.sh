#!/bin/sh
# tests/test-cluster-churn.sh - a node dies while two others join and
# leave a lockspace in a tight loop and a client holding 100000 locks
# is SIGKILLed, on a 3-node tests/dlm-cluster (fence_command =
# dlm-cluster fence).  No test injected these before (probe6); they
# passed on main when written: a guard, not a reproducer.
#
#   - lockspace LS: node 3's client holds r-held EX; node 2's client
#     (cluster-client many) holds NLOCKS EX locks big-0.. (a third or so
#     mastered by node 3), node 1's client waits for the first NWAIT of
#     them in PR; the lock workload runs on nodes 1 and 2 (res-*);
#   - lockspace CH: node 3 holds a lock in it; nodes 1 and 2 each run, in
#     a loop, dlmctl join CH, a short lock workload in CH (its own
#     history, in DIR/ch), dlmctl leave CH;
#   - at once: node 2's many client is SIGKILLed and node 3 killed
#     (corosync, dlmd, clients).
# Then, each wait bounded: node 3 is fenced exactly once; node 1's
# waiter is granted all NWAIT (node 2's locks purged, node 3's recovered
# away); LS and CH run on nodes 1 and 2 (CH: between rounds of the loop);
# every round of the loop after the fault ends well and the loops go on
# (ROUNDS_AFTER more each); node 1 is granted r-held; node 3 restarts
# and locks again; both histories pass the checker (no two holders, no
# lost update, no LVB that went backwards).  About 90 s.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=churnls
CH=churnch
NRES=4
NLOCKS=${NLOCKS:-100000}
NWAIT=${NWAIT:-1000}
ROUNDS_AFTER=${ROUNDS_AFTER:-10}
WORK_MS=${CLUSTER_TEST_WORK_MS:-12000}
. "$top_srcdir/tests/cluster-test-lib.sh"
export DLM_CLUSTER_LOG_LEVEL=info

up_cluster 3
: >"$dir/fence.log"
mkdir -p "$dir/ch/logs" "$dir/ch/counters"
chmod 777 "$dir/ch" "$dir/ch/logs" "$dir/ch/counters"

echo "== LS: node 3 holds r-held, node 2 $NLOCKS locks, node 1 waits for $NWAIT"
start_client 3 hold "$LS" r-held EX
wait_line "$dir/client-n3.out" held
start_client 3 hold "$CH" ch-held PR
poll "$WAIT_S" more_lines "$dir/client-n3.out" '^held' 1 ||
	{ fail "node 3 did not get its lock in $CH"; exit 1; }
: >"$dir/cmds2"
: >"$dir/cmds1"
# (their histories: none; NLOCKS/NWAIT locks of "big-" are not res-*)
mkdir -p "$dir/big/logs"
"$CLUSTER" exec "$dir" 2 "$CLIENT" many "$LS" "$dir/big" big 0 "$NLOCKS" EX \
	"$dir/cmds2" >"$dir/many-n2.out" 2>&1 &
big=$!
holders=$big
poll 120 has_line "$dir/many-n2.out" "held $NLOCKS" ||
	{ fail "node 2 did not get its $NLOCKS locks: $(tail -n 2 "$dir/many-n2.out")"; exit 1; }
say "node 2 holds $NLOCKS"
"$CLUSTER" exec "$dir" 1 "$CLIENT" many "$LS" "$dir/big" big 0 "$NWAIT" PR \
	"$dir/cmds1" >"$dir/many-n1.out" 2>&1 &
waiter=$!
holders="$big $waiter"
wl_clients=2
workload "$WORK_MS" 1 2
wait_for "$WAIT_S" "the workload to be under way" workload_busy

echo "== CH: nodes 1 and 2 join, lock and leave in a loop"
# churn K: node K's loop; a line per round in DIR/churn-nK ("ok" or what
# failed); stops when DIR/stop-churn exists
churn() {
	i=0
	while [ ! -e "$dir/stop-churn" ]; do
		r=ok
		timeout 30 "$CLUSTER" exec "$dir" "$1" "$DLMCTL" join "$CH" \
			>/dev/null 2>&1 || r="join failed"
		[ "$r" = ok ] && { timeout 30 "$CLUSTER" exec "$dir" "$1" "$CLIENT" \
			work "$CH" "$dir/ch" $NRES 200 "c$1$i" >/dev/null 2>&1 ||
			r="work failed"; }
		timeout 30 "$CLUSTER" exec "$dir" "$1" "$DLMCTL" leave "$CH" \
			>/dev/null 2>&1 || r="$r, leave failed"
		echo "$r $(date +%s.%N)" >>"$dir/churn-n$1"
		i=$((i + 1))
	done
}
: >"$dir/churn-n1"
: >"$dir/churn-n2"
churn 1 &
c1=$!
churn 2 &
c2=$!
holders="$big $waiter $c1 $c2"
rounds() { # K: rounds node K's loop ended
	wc -l <"$dir/churn-n$1"
}
wait_for "$WAIT_S" "both loops to turn" eval '[ "$(rounds 1)" -ge 3 ] && [ "$(rounds 2)" -ge 3 ]'

echo "== node 2's many client SIGKILLed and node 3 killed, at once"
r1=$(rounds 1)
r2=$(rounds 2)
kill -KILL "$big"
"$CLUSTER" kill "$dir" 3
wait "$big" 2>/dev/null
holders="$waiter $c1 $c2"
say "killed"

poll "$WAIT_S" has_line "$dir/many-n1.out" "held $NWAIT" ||
	fail "node 1's waiter was not granted its $NWAIT locks: $(grep -c '^granted' "$dir/many-n1.out") granted"
say "node 1 holds its $NWAIT"
for k in 1 2; do
	wait_ls $k "state running members 1 2 " "$LS not running on 1 2"
done
wait_for "$WAIT_S" "both loops to turn $ROUNDS_AFTER more times" \
	eval '[ "$(rounds 1)" -ge $((r1 + ROUNDS_AFTER + 1)) ] && [ "$(rounds 2)" -ge $((r2 + ROUNDS_AFTER + 1)) ]'
touch "$dir/stop-churn"
for p in $c1 $c2; do
	wait_pid "$p" 60 || fail "a join/leave loop did not stop"
done
holders=$waiter
# the round under way at the fault may have failed; none after it
for k in 1 2; do
	r=$(eval echo "\$r$k")
	bad=$(tail -n +$((r + 2)) "$dir/churn-n$k" | grep -vc '^ok ')
	[ "$bad" = 0 ] || fail "node $k: $bad rounds of the loop failed after the fault: $(tail -n +$((r + 2)) "$dir/churn-n$k" | grep -v '^ok ' | head -n 3)"
	echo "   node $k: $(rounds $k) rounds, $(grep -vc '^ok ' "$dir/churn-n$k") failed (all before or at the fault)"
done
[ "$(fences_of 3)" = 1 ] || fail "node 3 fenced $(fences_of 3) times, not once: $(cat "$dir/fence.log")"
for k in 1 2; do
	[ "$(fences_of $k)" = 0 ] || fail "node $k was fenced: $(cat "$dir/fence.log")"
done

echo "quit" >>"$dir/cmds1"
wait_pid "$waiter" 60 || fail "node 1's waiter did not end"
holders=
wait_workload $((WORK_MS / 1000 + 60)) 1 2
timeout 30 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" r-held EX \
	>"$dir/try.out" 2>&1 || fail "node 1 not granted r-held: $(cat "$dir/try.out")"

echo "== node 3 back"
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3 did not start"
for l in "$LS" "$CH"; do
	timeout 30 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$l" back EX \
		>"$dir/back.out" 2>&1 || fail "node 3 cannot lock in $l: $(cat "$dir/back.out")"
done

check "$LS"
if ! "$CLIENT" check "$dir/ch" $NRES >"$dir/check-ch.out" 2>&1; then
	fail "$CH: checker: $(grep -c VIOLATION "$dir/check-ch.out") violations"
	head -n 20 "$dir/check-ch.out" >&2
fi
echo "   $CH: $(tail -n 1 "$dir/check-ch.out")"
exit "$rc"
