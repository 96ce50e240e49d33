#!/bin/sh
# tests/test-cluster-two-node.sh - an even split that merges back resolves
# by itself (issue 11, item 2; plugin/cluster.c SPLIT AND MERGE): a
# two_node corosync cluster (tests/dlm-cluster up 2, DLM_CLUSTER_QUORUM
# "two_node: 1", fence_command = dlm-cluster fence), where each half of a
# split is one node of two and stays quorate.
#
#   A client on node 2 holds EX.  Fencing is held back (DIR/fence-hold);
#   node 2 is cut for longer than the token, so each node loses the other,
#   and healed, so corosync merges them back with neither fenced.  With no
#   operator: node 1 (the tie-breaker: the lowest configured id) removes
#   node 2 from the cluster (its corosync exits) and never is removed or
#   fenced itself; node 1's waiter for the EX lock is NOT granted while
#   node 2's holder lives unfenced; once fencing may run, node 2 is fenced
#   (its holder dies), the waiter is granted, node 1 runs the lockspace
#   alone and the history checker passes.  Node 2 restarts and rejoins.
#   Then a 3 s cut with fencing free: both halves are quorate, node 1
#   fences node 2 at once and node 2 (delayed: the half without the
#   tie-breaker) never fences node 1.
# Before the tie-break both nodes waited for ever to fence a node that
# was back in the view.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=twonode
NRES=4
. "$top_srcdir/tests/cluster-test-lib.sh"

export DLM_CLUSTER_QUORUM="two_node: 1"
up_cluster 2 "with two_node"
grep -q "two_node: 1" "$dir/n1/corosync.conf" || fail "corosync.conf has no two_node"
: >"$dir/fence.log"
grep -q "breaks even splits" "$dir/n1/dlmd.out" ||
	fail "dlmd does not log its tie-breaker node"
grep -q "node 1 breaks even splits" "$dir/n2/dlmd.out" ||
	fail "node 2 does not take node 1 (the lowest id) as the tie-breaker"

say "== a holder on node 2, a workload on both"
start_client 2 hold "$LS" r-held EX
holder=$last_pid
wait_line "$dir/client-n2.out" held
workload "$WORK_MS" 1 2
wait_workload $((WORK_MS / 1000 + 30)) 1 2
wait_ls 1 "state running members 1 2 " "the lockspace is not on both nodes"
check "before the split"

say "== node 2 cut past the token, fencing held, healed"
touch "$dir/fence-hold"
workload $((WORK_MS * 2)) 1
"$CLUSTER" cut "$dir" 2
wait_ls 1 "wait fencing node 2" "node 1 did not lose node 2"
start_client 1 try "$LS" r-held EX
waiter=$last_pid
"$CLUSTER" heal "$dir" 2
poll "$WAIT_S" not running 2 corosync || fail "node 2 merged back unfenced and was not removed (an even split must resolve by itself)"
grep -q "removing node 2 from the cluster" "$dir/n1/dlmd.out" ||
	fail "node 1 (the tie-breaker) does not say it removed node 2"
grep -q "removing node 1 from the cluster" "$dir/n2/dlmd.out" &&
	fail "node 2 tried to remove the tie-breaker node"
still_waiting "$waiter" 1 "node 1 was granted node 2's EX while node 2's holder was alive and unfenced"
kill -0 "$holder" 2>/dev/null || fail "node 2's holder died before fencing (it should be alive)"
rm -f "$dir/fence-hold"
wait_pid "$waiter" 60 || fail "the waiter was not granted after fencing node 2"
grep -q "fence node 2\$" "$dir/fence.log" || fail "node 2 was not fenced: $(cat "$dir/fence.log")"
grep -q "fence node 1\$" "$dir/fence.log" && fail "node 1 was fenced: $(cat "$dir/fence.log")"
kill -0 "$holder" 2>/dev/null && fail "node 2's holder is still alive after the waiter was granted"
wait_ls 1 "state running members 1 clients" "node 1 does not run the lockspace alone"
running 1 corosync && running 1 dlmd || fail "node 1 went down: $("$CLUSTER" status "$dir")"
wait_workload $((WORK_MS * 2 / 1000 + 30)) 1
check "even split and merge"

say "== node 2 restarts and rejoins"
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start"
timeout 60 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" rejoin-2 EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 2 cannot lock after restarting: $(cat "$dir/rejoin.out")"
wait_ls 1 "state running members 1 2 " "node 2 did not rejoin"

say "== node 2 cut for 3 s, fencing free: node 1 fences node 2, node 2 never node 1"
# both halves are quorate (two_node); node 2's fence command waits 5 s
# (the half without the tie-breaker), node 1's runs at once
n1=$(grep -c "fence node 1\$" "$dir/fence.log")
n2=$(grep -c "fence node 2\$" "$dir/fence.log")
"$CLUSTER" cut "$dir" 2
sleep 3		# the point: a cut of 3 s, past the token
"$CLUSTER" heal "$dir" 2
poll "$WAIT_S" more_lines "$dir/fence.log" "fence node 2\$" "$n2" || fail "node 1 did not fence node 2: $(cat "$dir/fence.log")"
sleep 6	# the point: past node 2's delay it must be gone, not fencing
[ "$(grep -c "fence node 1\$" "$dir/fence.log")" -eq "$n1" ] ||
	fail "node 2 fenced node 1 (the halves shot each other): $(cat "$dir/fence.log")"
running 1 corosync && running 1 dlmd || fail "node 1 went down: $("$CLUSTER" status "$dir")"
wait_ls 1 "state running members 1 clients" "node 1 does not run the lockspace alone"
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start"
timeout 60 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" rejoin-2b EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 2 cannot lock after restarting: $(cat "$dir/rejoin.out")"
wait_ls 1 "state running members 1 2 " "node 2 did not rejoin"

"$CLUSTER" status "$dir" >/dev/null || fail "a daemon died: $("$CLUSTER" status "$dir")"
say "test-cluster-two-node: done"
exit $rc
