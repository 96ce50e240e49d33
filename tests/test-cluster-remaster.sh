#!/bin/sh
# tests/test-cluster-remaster.sh - remastering through the real daemon
# (core/remaster.c, dlm.conf remaster_secs; issue 18), on a 3-node cluster.
#
# dlm.conf: remaster_secs = 1 and scan_secs = 1 (a move may follow the
# last one after one engine tick), remaster_window = 8, toss_secs = 120.
#   1. node 1 takes res-0 first and releases it: node 1 masters it;
#   2. only node 2's one workload client locks res-0 (EX, PR, PW, many
#      times): within the bound node 2's lockdump shows itself master,
#      node 1 a copy mastered by node 2, and node 1 (the old master, where
#      a move is counted) says "remasters 1" in dlmctl ls and status, and
#      dlmd_remasters_total 1 in its metrics;
#   3. the new master still serves node 3 right: an EX holder on node 2
#      keeps node 3's EX request waiting until it is killed, then node 3
#      is granted; the checker finds the workload's holds and LVBs sound.
# Without remaster_secs wired into the daemon, node 1 stays master and
# step 2 fails.  About 40 s.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=remaster
NRES=1			# the workload's one resource: res-0
. "$top_srcdir/tests/cluster-test-lib.sh"

# toss_secs long: node 1's unused copy of res-0, checked after the
# workload, must outlive a slow run on a loaded machine
export DLM_CLUSTER_CONF_EXTRA="scan_secs = 1
toss_secs = 120
remaster_secs = 1
remaster_window = 8"
up_cluster 3

# remasters_line K: node K's "dlmctl ls" line of moves (only one lockspace
# here; ls_line shows the first two lines of it only)
remasters_line() {
	on "$1" "$DLMCTL" ls 2>/dev/null | grep "^  remasters "
}

# master_is K M ROLE: node K's lockdump of $LS says res-0 is mastered by
# node M, and K's copy is ROLE (master-copy or local-copy)
master_is() {
	on "$1" "$DLMCTL" lockdump "$LS" 2>/dev/null |
		grep -q "^resource \"res-0\" master $2 $3"
}

echo "== 1. node 1 locks res-0 first: it masters it"
# a lock on another resource on each node keeps the lockspace joined there
for k in 1 2 3; do
	start_client $k hold "$LS" keep-$k PR
	wait_line "$dir/client-n$k.out" held
done
timeout 20 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/first.out" 2>&1 || fail "node 1 cannot lock res-0: $(cat "$dir/first.out")"
master_is 1 1 master-copy ||
	fail "node 1 does not master res-0: $(on 1 "$DLMCTL" lockdump "$LS")"
remasters_line 1 && fail "node 1 counts a move before any"

echo "== 2. only node 2 uses res-0: it moves there"
wl_clients=1 workload "$WORK_MS" 2
wait_for "$WAIT_S" "node 2 to master res-0" master_is 2 2 master-copy
wait_workload $((WORK_MS / 1000 + 30)) 2
master_is 1 2 local-copy ||
	fail "node 1's copy of res-0 does not name node 2: $(on 1 "$DLMCTL" lockdump "$LS")"
[ "$(remasters_line 1)" = "  remasters 1" ] ||
	fail "node 1: dlmctl ls: $(on 1 "$DLMCTL" ls)"
on 1 "$DLMCTL" status | grep -qx "remasters 1" ||
	fail "node 1: dlmctl status: $(on 1 "$DLMCTL" status)"
on 1 "$DLMCTL" --json ls | grep -q '"remasters":1}' ||
	fail "node 1: dlmctl --json ls: $(on 1 "$DLMCTL" --json ls)"
on 1 "$DLMCTL" metrics | grep -qx "dlmd_remasters_total{lockspace=\"$LS\"} 1" ||
	fail "node 1: metrics: $(on 1 "$DLMCTL" metrics | grep remaster)"
for k in 2 3; do
	remasters_line $k && fail "node $k counts a move"
done
check "node 2's workload across the move"

echo "== 3. node 3 under node 2's master: EX still excludes"
start_client 2 hold "$LS" res-0 EX
holder=$last_pid
wait_for "$WAIT_S" "node 2's EX holder to hold res-0" \
	more_lines "$dir/client-n2.out" '^held' 1
master_is 2 2 master-copy ||
	fail "node 2 no longer masters res-0: $(on 2 "$DLMCTL" lockdump "$LS")"
: >"$dir/try3.out"
"$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" res-0 EX >"$dir/try3.out" 2>&1 &
waiter=$!
pids="$pids $waiter"
wait_for "$WAIT_S" "node 3's request for res-0 to wait" waiting 3 res-0
sleep "$BLOCKED_S"	# watching that nothing is granted: no event to wait for
grep -q granted "$dir/try3.out" && fail "node 3 was granted res-0 under node 2's EX"
kill_client "$holder"
wait_pid "$waiter" 20 || fail "node 3 was not granted res-0 after node 2's holder died"
grep -q granted "$dir/try3.out" || fail "node 3: $(cat "$dir/try3.out")"
exit $rc
