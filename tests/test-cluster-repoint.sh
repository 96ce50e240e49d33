#!/bin/sh
# tests/test-cluster-repoint.sh - the re-point protocol through the real
# daemon (core/remaster.c, dlm.conf remaster_shared = 1; issue 18), on a
# 3-node cluster: a resource that a third node and the master's own
# client lock too moves to the node that uses it, with their locks.
#
# dlm.conf: remaster_secs = 1, scan_secs = 1, remaster_window = 8,
# remaster_shared = 1, toss_secs = 120.
#   1. node 1 locks res-0 first and lets go: node 1 masters it;
#   2. node 3 (a third node) and node 1 (the master's own client) each
#      hold res-0 in NL;
#   3. node 2's workload makes nearly every operation on res-0: res-0
#      moves to node 2 all the same (node 1 counts the move), node 2's
#      lockdump shows node 3's and node 1's locks as master copies of
#      its own, and nodes 1 and 3 name node 2 as the master; the checker
#      finds the workload's holds and LVBs sound;
#   4. the two holders die: their unlocks (dlmd purges a dead client's
#      locks) reach node 2, which then holds no lock of node 1 or 3 on
#      res-0, and node 3 is granted res-0 in EX there.
# With remaster_shared = 0 (the rule before the protocol) step 3 fails:
# res-0 stays on node 1 while the others hold it.
# About 30 s.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=repoint
NRES=1			# the workload's one resource: res-0
. "$top_srcdir/tests/cluster-test-lib.sh"

t_start=$(date +%s)
say() { echo "$* ($(( $(date +%s) - t_start )) s)"; }

export DLM_CLUSTER_CONF_EXTRA="scan_secs = 1
toss_secs = 120
remaster_secs = 1
remaster_window = 8
remaster_shared = ${REPOINT_SHARED:-1}"
up_cluster 3

say "== 1. node 1 locks res-0 first: it masters it"
for k in 1 2 3; do
	start_client $k hold "$LS" keep-$k PR
	wait_line "$dir/client-n$k.out" held
done
timeout 20 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/first.out" 2>&1 || fail "node 1 cannot lock res-0: $(cat "$dir/first.out")"
master_is 1 1 master-copy ||
	fail "node 1 does not master res-0: $(on 1 "$DLMCTL" lockdump "$LS")"

say "== 2. node 3 and node 1 hold res-0 in NL"
start_client 3 hold "$LS" res-0 NL
third=$last_pid
wait_for "$WAIT_S" "node 3's NL lock on res-0" \
	more_lines "$dir/client-n3.out" '^held' 1
start_client 1 hold "$LS" res-0 NL
own=$last_pid
wait_for "$WAIT_S" "node 1's NL lock on res-0" \
	more_lines "$dir/client-n1.out" '^held' 1

say "== 3. node 2's workload: res-0 moves there with the others' locks"
wl_clients=1 workload "$WORK_MS" 2
wait_for "$WAIT_S" "node 2 to master res-0" master_is 2 2 master-copy
wait_workload $((WORK_MS / 1000 + 30)) 2
on 1 "$DLMCTL" status | grep -qx "remasters 1" ||
	fail "node 1: dlmctl status: $(on 1 "$DLMCTL" status)"
for k in 1 3; do
	master_is $k 2 local-copy ||
		fail "node $k's copy of res-0 does not name node 2: $(on $k "$DLMCTL" lockdump "$LS")"
	has_lock_of 2 $k ||
		fail "node 2 has no lock of node $k on res-0: $(on 2 "$DLMCTL" lockdump "$LS")"
done
check "node 2's workload across the move"

say "== 4. the holders die: their unlocks complete at node 2"
kill_client "$third"
kill_client "$own"
for k in 1 3; do
	wait_for "$WAIT_S" "node 2 to drop node $k's lock" lacks_lock_of 2 $k
done
timeout 20 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/try3.out" 2>&1 || fail "node 3 cannot lock res-0: $(cat "$dir/try3.out")"
master_is 2 2 master-copy ||
	fail "node 2 no longer masters res-0: $(on 2 "$DLMCTL" lockdump "$LS")"
say "== done"
exit $rc
