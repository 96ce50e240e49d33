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
#   4. a third node's lock keeps it there: node 3 holds res-0 in NL
#      (beside any mode) while node 1's workload makes nearly every
#      operation on it; with this version's rule (a resource moves only
#      when every lock on it is the new master's, core/remaster.c) res-0
#      stays on node 2, which counts no move, and the checker passes;
#   5. node 3 lets go: node 1's next workload moves res-0 to node 1 (node
#      2 counts the move), then node 2's dlmd, the old master, is
#      SIGKILLed under the workload: it is fenced, nodes 1 and 3 recover,
#      the workload completes and checks, node 1 still masters res-0 and
#      serves node 3; node 2 restarts;
#   6. node 1's dlmd, the new master, is SIGKILLed under a workload of
#      nodes 1 and 3: it is fenced, node 3's workload completes and the
#      checker finds no two holders over the whole run (dead clients
#      included); nodes 2 and 3 agree on one live master of res-0, which
#      grants node 2 an EX lock.
# Without remaster_secs wired into the daemon, node 1 stays master and
# step 2 fails; a move that ignored node 3's lock would fail step 4.
# About 55 s (42-55 s here, 3 runs).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=remaster
NRES=1			# the workload's one resource: res-0
. "$top_srcdir/tests/cluster-test-lib.sh"

t_start=$(date +%s)
say() { echo "$* ($(( $(date +%s) - t_start )) s)"; }

# toss_secs long: node 1's unused copy of res-0, checked after the
# workload, must outlive a slow run on a loaded machine
export DLM_CLUSTER_CONF_EXTRA="scan_secs = 1
toss_secs = 120
remaster_secs = 1
remaster_window = 8"
up_cluster 3
: >"$dir/fence.log"

# remasters_line K: node K's "dlmctl ls" line of moves (only one lockspace
# here; ls_line shows the first two lines of it only)
remasters_line() {
	on "$1" "$DLMCTL" ls 2>/dev/null | grep "^  remasters "
}

moves_are() { # K N: node K's dlmctl ls counts N moves
	[ "$(remasters_line "$1")" = "  remasters $2" ]
}

# dlmd_dies K: SIGKILL node K's dlmd (its clients and corosync stay, as
# after a daemon crash) and wait until the fence agent has run for it
dlmd_dies() {
	"$CLUSTER" kill-dlmd "$dir" "$1"
	wait_for "$WAIT_S" "node $1 to be fenced" grep -q "fence node $1\$" "$dir/fence.log"
}

# restart K: node K back (corosync and dlmd), in the lockspace again
restart() {
	"$CLUSTER" start "$dir" "$1" >/dev/null || { fail "node $1 did not start"; return 1; }
	timeout 30 "$CLUSTER" exec "$dir" "$1" "$CLIENT" try "$LS" "rejoin-$1" EX \
		>"$dir/rejoin.out" 2>&1 ||
		fail "node $1 cannot lock after restarting: $(cat "$dir/rejoin.out")"
}

say "== 1. node 1 locks res-0 first: it masters it"
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

say "== 2. only node 2 uses res-0: it moves there"
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

say "== 3. node 3 under node 2's master: EX still excludes"
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

say "== 4. node 3 holds res-0 in NL: node 1's workload does not move it"
start_client 3 hold "$LS" res-0 NL
third=$last_pid
wait_for "$WAIT_S" "node 3's NL lock on res-0" \
	more_lines "$dir/client-n3.out" '^held' 1
wl_clients=1 workload "$WORK_MS" 1
wait_workload $((WORK_MS / 1000 + 30)) 1
master_is 2 2 master-copy ||
	fail "res-0 left node 2 while node 3 held it: $(on 2 "$DLMCTL" lockdump "$LS")"
master_is 1 2 local-copy ||
	fail "node 1's copy of res-0 does not name node 2: $(on 1 "$DLMCTL" lockdump "$LS")"
remasters_line 2 && fail "node 2 counts a move: $(remasters_line 2)"
check "node 1's workload beside node 3's lock"

say "== 5. node 3 lets go: res-0 moves to node 1, then the old master dies"
kill_client "$third"
workload $((WORK_MS * 3)) 1
wait_for "$WAIT_S" "node 1 to master res-0" master_is 1 1 master-copy
wait_for "$WAIT_S" "node 2 to count the move" moves_are 2 1
dlmd_dies 2
wait_ls 1 "state running members 1 3 " "no recovery to members 1 3"
wait_workload $((WORK_MS * 3 / 1000 + 30)) 1
check "node 1's workload across the move and the old master's death"
master_is 1 1 master-copy ||
	fail "node 1 no longer masters res-0: $(on 1 "$DLMCTL" lockdump "$LS")"
timeout 20 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" res-0 PR \
	>"$dir/try3.out" 2>&1 || fail "node 3 cannot lock res-0: $(cat "$dir/try3.out")"
restart 2
wait_ls 1 "state running members 1 2 3 " "node 2 did not rejoin"

say "== 6. the new master, node 1, dies under the workload of nodes 1 and 3"
workload $((WORK_MS * 2)) 1 3
wait_for "$WAIT_S" "the workload to be under way" workload_busy
dlmd_dies 1
wait_ls 3 "state running members 2 3 " "no recovery to members 2 3"
wait_workload $((WORK_MS * 2 / 1000 + 30)) 3
check "the workload across the new master's death"
timeout 20 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/try2.out" 2>&1 || fail "node 2 cannot lock res-0: $(cat "$dir/try2.out")"
m2=$(master_of 2)
m3=$(master_of 3)
if [ -z "$m2" ] || [ "$m2" != "$m3" ] || [ "$m2" = 1 ]; then
	fail "nodes 2 and 3 do not agree on a live master of res-0: '$m2' '$m3'"
fi
say "== done"
exit $rc
