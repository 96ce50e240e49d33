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
