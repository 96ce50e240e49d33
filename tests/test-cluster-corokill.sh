#!/bin/sh
# tests/test-cluster-corokill.sh - corosync alone dies on one node of a
# 3-node cluster (tests/dlm-cluster up 3, fence_command = dlm-cluster
# fence) while that node's dlmd and a client holding a lock stay up.
#
#   1. A client on node 2 holds EX on r-held, a request of node 1 for it
#      waits; node 2's corosync is SIGKILLed.  Node 2's dlmd has lost its
#      membership: it must not go on as a member.  While fencing is held
#      back (DIR/fence-hold) node 1's waiter must NOT be granted: node 2's
#      holder is alive and still believes it holds EX, whatever node 2's
#      dlmd did with its lock; node 1 waits for fencing node 2.  Once
#      fencing may run, node 2 is fenced (its client dies) and only then
#      is the waiter granted.  Node 2 (corosync and dlmd) restarts and
#      rejoins.  (dlmd stops when it loses corosync, its client's lock
#      dropped with it; this passed when it was written: it guards that.)
#   2. Node 2 is killed again and the test starts it again as soon as
#      the fence agent has begun (its "fence node 2" line), while the
#      agent still runs (DIR/fence-slow holds it after its kill).  The
#      start waits for that fence run (dlm-cluster, wait_fence_runs); the
#      run ends "done", and node 2 rejoins.  Before, the start went on,
#      the agent found node 2's new corosync and dlmd in the pid files
#      and failed (dlmd retried the fencing much later, killing the
#      restarted node: the 32 s fencing probe3 saw).
# Bounded in time; run under flock /work/cluster.lock.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=corokill
. "$top_srcdir/tests/cluster-test-lib.sh"

up_cluster 3
: >"$dir/fence.log"

echo "== 1. node 2's corosync dies, its dlmd and its client holding EX stay up"
start_client 2 hold "$LS" r-held EX
holder=$last_pid
wait_line "$dir/client-n2.out" held
for k in 1 3; do
	on $k "$DLMCTL" join "$LS" >/dev/null || fail "node $k cannot join $LS"
done
for k in 1 3; do
	wait_ls $k "state running members 1 2 3 " "lockspace not on all three"
done
touch "$dir/fence-hold"
start_client 1 try "$LS" r-held EX
waiter=$last_pid
wait_for "$WAIT_S" "node 1's request for r-held to wait" waiting 1 r-held
kill -KILL "$(cat "$dir/n2/corosync.pid")"
wait_ls 1 "wait fencing node 2" "node 1 does not wait for fencing node 2"
still_waiting "$waiter" 1 "node 1 was granted node 2's EX lock while node 2's holder was alive and unfenced"
kill -0 "$holder" 2>/dev/null || fail "node 2's holder died before fencing (it should be alive)"
# not_member: node 2's dlmd does not go on as a member (it stops: it
# lost corosync), whatever it did with its client's lock
not_member() {
	! running 2 dlmd || ! ls_has 2 "state running"
}
wait_for "$WAIT_S" "node 2's dlmd to stop acting as a member" not_member
rm -f "$dir/fence-hold"
wait_pid "$waiter" 30 || fail "the waiter was not granted after fencing"
grep -q "fence node 2\$" "$dir/fence.log" || fail "node 2 was not fenced: $(cat "$dir/fence.log")"
kill -0 "$holder" 2>/dev/null && fail "node 2's holder is still alive after the waiter was granted"
wait_ls 1 "state running members 1 3 " "no recovery to members 1 3"
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start again"
timeout 30 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" rejoin-2 EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 2 cannot lock after restarting: $(cat "$dir/rejoin.out")"
wait_ls 1 "state running members 1 2 3 " "node 2 did not rejoin"

echo "== 2. node 2 killed again; the test restarts it while its fence agent runs"
touch "$dir/fence-slow"
n2=$(fences_of 2)
ends=$(grep -c "fence node 2: \(done\|failed\)" "$dir/fence.log")
"$CLUSTER" kill "$dir" 2 || fail "cannot kill node 2"
wait_for "$WAIT_S" "the fence agent to begin on node 2" \
	more_lines "$dir/fence.log" "fence node 2\$" "$n2"
"$CLUSTER" start "$dir" 2 >"$dir/start2.out" 2>&1 &
starter=$!
# the start waits for the fence run (or, before, went on and finished)
start_held() {
	grep -q "waits for the fence run of node 2" "$dir/start2.out" ||
		! kill -0 "$starter" 2>/dev/null
}
wait_for "$WAIT_S" "the start to wait for the fence run, or to end" start_held
rm -f "$dir/fence-slow"
wait_pid "$starter" 120 || fail "node 2 did not start again: $(cat "$dir/start2.out")"
wait_for "$WAIT_S" "the fence run of node 2 to end" \
	more_lines "$dir/fence.log" "fence node 2: \(done\|failed\)" "$ends"
grep "fence node 2: \(done\|failed\)" "$dir/fence.log" |
	tail -n +$((ends + 1)) | head -n 1 | grep -q ": done" ||
	fail "the fence run of node 2 raced its restart: $(cat "$dir/fence.log")"
running 2 dlmd || fail "node 2's dlmd does not run after its restart"
timeout 30 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" rejoin-2b EX \
	>"$dir/rejoin2.out" 2>&1 ||
	fail "node 2 cannot lock after its second restart: $(cat "$dir/rejoin2.out")"
wait_ls 1 "state running members 1 2 3 " "node 2 did not rejoin after its restart"
echo "== done"
