#!/bin/sh
# tests/test-cluster-sctp.sh - two networks between the nodes, dlmd over
# SCTP: cutting one network changes nothing visible.
#
# tests/dlm-cluster up 3 with DLM_CLUSTER_LINKS=2 (10.213.77.K and
# 10.213.78.K, corosync links 0 and 1) and dlm.conf "protocol = sctp"
# (one association per peer over both addresses; usrsctp here, since
# this kernel has no SCTP).  Then, each step bounded in time:
#   1. a workload on all three nodes (tests/cluster-client work);
#   2. during it, node 3's first link is cut: a lock held on node 1 and
#      wanted on node 3 is released and node 3 is granted it, so lock
#      traffic crossed between them over the second network; the link
#      heals, then node 2's second link is cut for a while and heals;
#   3. the lockspace never recovered (same event, members 1 2 3 on every
#      node) and the checker finds no violation in the workload.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=sctptest
NRES=8
WORK_MS=${CLUSTER_TEST_WORK_MS:-6000}
DLM_CLUSTER_LINKS=2
DLM_CLUSTER_CONF_EXTRA="protocol = sctp"
export DLM_CLUSTER_LINKS DLM_CLUSTER_CONF_EXTRA

. "$top_srcdir/tests/cluster-test-lib.sh"

ls_line() { on "$1" "$DLMCTL" ls 2>/dev/null | grep "^name $LS "; }

held_count() { grep -c '^held' "$dir/client-n$1.out" 2>/dev/null || true; }

wait_held() { # K N WHAT: until node K's clients printed N "held" lines
	poll "$WAIT_S" more_lines "$dir/client-n$1.out" '^held' $(($2 - 1)) ||
		{ fail "$3"; return 1; }
}

up_cluster 3 "with two links"
if ! grep -q "added with 2 addresses" "$dir/n1/dlmd.out" ||
   ! grep -q "listening on .*(sctp" "$dir/n1/dlmd.out"; then
	fail "dlmd is not on SCTP with two addresses per node"
	exit 1
fi

echo "== 1. workload on 3 nodes, over SCTP on two networks"
workload "$WORK_MS" 1 2 3
wait_ls 1 "members 1 2 3 " "lockspace not on all three nodes" || exit 1
event0=$(ls_line 1 | sed -n 's/.* event \([0-9]*\).*/\1/p')
echo "   lockspace running, event $event0"

echo "== 2. node 3's first link cut during the workload"
start_client 1 hold "$LS" crossing EX
h1=$last_pid
wait_held 1 1 "node 1 did not get its lock" || exit 1
"$CLUSTER" cut "$dir" 3 1 || fail "cut node 3 link 1"
start_client 3 hold "$LS" crossing EX
h3=$last_pid
wait_for "$WAIT_S" "node 3's request for crossing to wait" waiting 3 crossing
[ "$(held_count 3)" -eq 0 ] || fail "node 3 was granted a lock node 1 holds"
kill_client "$h1"		# node 1's holder goes: its lock is released
wait_held 3 1 "node 3 was not granted the lock over the second network" &&
	echo "   node 3 granted the lock node 1 released, its first link down"
kill_client "$h3"
# one network at a time: node 3 heals before node 2 loses the other one
# (both cut at once would leave nodes 2 and 3 no network in common)
# (no daemon shows when SCTP takes a healed path back into use: the
# sleeps give it that time)
"$CLUSTER" heal "$dir" 3 1 || fail "heal node 3 link 1"
sleep 2
"$CLUSTER" cut "$dir" 2 2 || fail "cut node 2 link 2"
sleep 2		# the point: a cut that changes nothing visible
"$CLUSTER" heal "$dir" 2 2 || fail "heal node 2 link 2"

echo "== 3. nothing visible changed"
wait_workload $((WORK_MS / 1000 + 60)) 1 2 3
for k in 1 2 3; do
	l=$(ls_line $k)
	case $l in
	*"members 1 2 3 "*"event $event0 "*|*"event $event0 "*"members 1 2 3 "*) ;;
	*) fail "node $k: the lockspace changed: $l" ;;
	esac
done
echo "   every node: members 1 2 3, event $event0 (no recovery)"
check "the whole run"
[ $rc -eq 0 ] && echo PASS
exit $rc
