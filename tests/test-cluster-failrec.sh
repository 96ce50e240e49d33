#!/bin/sh
# tests/test-cluster-failrec.sh - a recorded failure reaches a dlmd that
# joins the daemon group later (review of CPG protocol 2, item 1), on a
# 3-node tests/dlm-cluster (fence_command = dlm-cluster fence):
#   - node 3's dlmd is stopped cleanly; a client on node 1 holds EX in
#     lockspace LS, of which node 1 is the only member (node 2 is in the
#     daemon group, not in LS);
#   - fencing is held (DIR/fence-hold); node 1's dlmd is SIGKILLed, its
#     client lives on holding the lock; node 2 records node 1's failure
#     out of LS;
#   - node 3's dlmd starts (it saw nothing of this) and a client there
#     asks for the same lock: it must NOT be granted while node 1 is
#     unfenced, and node 3 says it waits for fencing node 1;
#   - node 1's dlmd restarts (its old client still holds the lock) and a
#     client there asks for it too: not granted either, and node 1 says
#     that others record its own failure ("fencing of us");
#   - fencing is let go: node 1 is fenced (its daemons and clients die),
#     then node 3's client is granted.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=failrec
NRES=1
. "$top_srcdir/tests/cluster-test-lib.sh"

held() { # FILE: the client writing FILE has its lock
	grep -q '^held' "$1" 2>/dev/null
}

up_cluster 3
: >"$dir/fence.log"

echo "== node 3's dlmd stops cleanly; node 1 alone holds EX in $LS"
p=$(cat "$dir/n3/dlmd.launch-pid")
kill -TERM "$p"
wait_gone "$p" || fail "node 3's dlmd did not stop"
start_client 1 hold "$LS" r EX
holder=$last_pid
poll "$WAIT_S" held "$dir/client-n1.out" || fail "node 1's client did not get its lock"
wait_ls 1 "state running members 1 clients" "node 1 does not run $LS alone" || true

echo "== fencing held; node 1's dlmd dies, its client lives on"
touch "$dir/fence-hold"
"$CLUSTER" kill-dlmd "$dir" 1
poll "$WAIT_S" grep -q "fencing: node 1 failed" "$dir/n2/dlmd.out" 2>/dev/null ||
	fail "node 2 did not record node 1's failure"

echo "== node 3's dlmd starts and asks for the lock"
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3's dlmd did not start"
start_client 3 try "$LS" r EX
waiter=$last_pid
still_waiting "$waiter" 3 "node 3 was granted the EX lock that node 1's live, unfenced client holds"
kill -0 "$holder" 2>/dev/null || fail "node 1's holder died before fencing"
wait_ls 3 "wait fencing node 1" "node 3 does not wait for fencing node 1" || true

echo "== node 1's dlmd restarts and asks for the lock too"
"$CLUSTER" start "$dir" 1 >/dev/null || fail "node 1's dlmd did not restart"
start_client 1 try "$LS" r EX
waiter1=$last_pid
still_waiting "$waiter1" 1 "node 1's new dlmd granted the EX lock its old client holds"
wait_ls 1 "wait fencing of us" "node 1 does not say that its own failure is recorded" || true
grep -q "records our own failure in it" "$dir/n1/dlmd.out" ||
	fail "node 1's dlmd does not log why it takes no part in $LS"

echo "== fencing let go: node 1 is fenced, then node 3 is granted"
rm -f "$dir/fence-hold"
wait_pid "$waiter" 60 || fail "node 3's client was not granted after node 1 was fenced"
grep -q "fence node 1\$" "$dir/fence.log" || fail "node 1 was not fenced: $(cat "$dir/fence.log")"
kill -0 "$holder" 2>/dev/null && fail "node 1's holder is still alive after node 3 was granted"
[ $rc -eq 0 ] && echo PASS
exit $rc
