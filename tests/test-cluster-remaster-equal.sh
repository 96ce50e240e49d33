#!/bin/sh
# tests/test-cluster-remaster-equal.sh - EQUAL SETTINGS (plugin/cluster.c)
# on a real 3-node cluster: node 2's dlm.conf turns remastering on
# (remaster_secs = 1), nodes 1 and 3 leave it off.
#   1. nodes 1 and 3 join the lockspace (a lock each);
#   2. node 2 asks to join it (dlmctl join): refused, the lockspace gone
#      on node 2 and the join failing there; every node's dlmd logs, at
#      error, "node 2 refused" with both settings;
#   3. nodes 1 and 3 still run it, members 1 3, and lock in it; node 2
#      still takes part in another lockspace it forms alone.
# Before the check node 2 joined and ran the lockspace beside them.
# About 15 s.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=equal
NRES=1
. "$top_srcdir/tests/cluster-test-lib.sh"

export DLM_CLUSTER_LOG_LEVEL=info
export DLM_CLUSTER_CONF_EXTRA="scan_secs = 1"
export DLM_CLUSTER_CONF_EXTRA_N2="remaster_secs = 1"
up_cluster 3

say "== 1. nodes 1 and 3 join $LS (remastering off)"
for k in 1 3; do
	start_client $k hold "$LS" keep-$k PR
	wait_line "$dir/client-n$k.out" held
done
wait_ls 1 "state running members 1 3 " "nodes 1 and 3 do not run $LS"

say "== 2. node 2 (remaster_secs = 1) asks to join: refused"
if timeout 60 "$CLUSTER" exec "$dir" 2 "$DLMCTL" join "$LS" \
	>"$dir/join2.out" 2>&1; then
	fail "node 2 joined $LS: $(cat "$dir/join2.out")"
fi
grep -q "join $LS: the lockspace is gone" "$dir/join2.out" ||
	fail "node 2's join did not fail as refused: $(cat "$dir/join2.out")"
line="lockspace $LS: node 2 refused: it joins with remaster_secs 1 remaster_window 32 remaster_shared 0 fold_lone_locks 1, node [13] runs it with remaster_secs 0"
for k in 1 2 3; do
	poll "$WAIT_S" grep -q "$line" "$dir/n$k/dlmd.out" ||
		fail "node $k did not log node 2's refusal: $(grep "$LS" "$dir/n$k/dlmd.out" | tail -n 5)"
done
grep -q "lockspace $LS: not joined: our remastering settings differ" \
	"$dir/n2/dlmd.out" || fail "node 2 did not log that it did not join"
on 2 "$DLMCTL" ls 2>/dev/null | grep -q "^name $LS " &&
	fail "node 2 still lists $LS: $(on 2 "$DLMCTL" ls)"

say "== 3. nodes 1 and 3 go on; node 2 runs a lockspace of its own"
wait_ls 1 "state running members 1 3 " "nodes 1 and 3 do not run $LS"
wait_ls 3 "state running members 1 3 " "node 3 does not run $LS"
timeout 20 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/try3.out" 2>&1 || fail "node 3 cannot lock in $LS: $(cat "$dir/try3.out")"
timeout 20 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS-2" res-0 EX \
	>"$dir/try2.out" 2>&1 || fail "node 2 cannot lock in $LS-2: $(cat "$dir/try2.out")"
say "== done"
exit $rc
