#!/bin/sh
# tests/test-cluster-epoch.sh - a dlmd killed and restarted at once while
# a peer sends to it (lowcomms.c, PEER RESTARTED: a new epoch is paused
# until the old daemon's leave confirms the restart), on a 3-node
# tests/dlm-cluster (fence_command = dlm-cluster fence):
#   - a client on node 2 holds a lock in lockspace LS, so node 2 is a
#     member and masters some of the workload's resources; a workload
#     runs on nodes 1 and 3 (their requests for those go to node 2);
#   - node 2's dlmd is SIGKILLed and started again at once, before or
#     after node 1 hears of the old one's leave (the test says which it
#     saw: "node 2: a new epoch ... paused" in node 1's log means the new
#     dlmd's HELLO came first: node 1 sent it nothing and took nothing
#     from it until the leave, which dropped what node 1 had queued for
#     the old one);
#     fencing is held meanwhile, so that node 2's corosync stays up and
#     the new dlmd starts in well under a second;
#   - fencing is let go: node 2 is fenced (the old dlmd died with a
#     lockspace), the workload ends well and the history checker finds
#     no violation;
#   - node 2's new dlmd logged no frames lost and no message of node 1
#     for a lockspace it does not have (a frame of its previous life);
#     the test says which peers paused the new dlmd's epoch meanwhile.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=epoch
NRES=8
. "$top_srcdir/tests/cluster-test-lib.sh"

held() { # FILE: the client writing FILE has its lock
	grep -q '^held' "$1" 2>/dev/null
}

up_cluster 3
start_client 2 hold "$LS" r EX
poll "$WAIT_S" held "$dir/client-n2.out" || fail "node 2's client did not get its lock"
workload "$WORK_MS" 1 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== fencing held; node 2's dlmd killed and started again at once"
touch "$dir/fence-hold"
"$CLUSTER" kill-dlmd "$dir" 2
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2's dlmd did not restart"
say "== fencing let go: node 2 is fenced, the workload ends"
rm -f "$dir/fence-hold"
wait_workload 60 1 3
check "after node 2's dlmd restarted"

# what node 1 saw first: the new dlmd's HELLO or the old one's leave
first=$(grep -m 1 -o "node 2: a new epoch [0-9a-f]* where [0-9a-f]* is known\|node 2's daemon left" \
	"$dir/n1/dlmd.out")
say "   node 1 saw first: ${first:-neither}"
# which peers paused the new dlmd's epoch before the leave (said, not
# judged: the race goes either way, and what matters is checked below)
for k in 1 3; do
	p=$(grep -c "node 2: a new epoch" "$dir/n$k/dlmd.out")
	[ "$p" -gt 0 ] || continue
	say "   node $k paused node 2's new epoch ($p pauses); at the leave: $(grep -o "node 2 renewed: [0-9]* frames.*" "$dir/n$k/dlmd.out" | tail -n 1)"
done
# node 2's new life: from its last start line on
sed -n '/^=== dlmd start/h; /^=== dlmd start/!H; ${x;p;}' "$dir/n2/dlmd.out" \
	>"$dir/n2-last.out"
if grep -E "unknown lockspace|frames lost|resumes at" "$dir/n2-last.out" >&2; then
	fail "node 2's new dlmd got something of its previous life"
fi
[ $rc -eq 0 ] && echo PASS
exit $rc
