#!/bin/sh
# tests/test-cluster-16.sh - dlmd on 16 nodes on this machine (issue 18),
# checked from outside.  Not in make check (16 corosyncs and 16 dlmds on
# CI's 2 cores beside the rest of the suite is too much); run it alone,
# as root, from a build directory:
#
#   top_builddir=. ../tests/test-cluster-16.sh [N]      (N: 4..16, default 16)
#
# On one cluster (tests/dlm-cluster up N), in order, every wait bounded:
#   a. every node joins lockspace "c16" (all at once) and the lockspace
#      runs with all N members on node 1 and on node N;
#   b. workload: one cluster-client per node takes EX, PR and PW locks on
#      NRES shared resources (LVB and file counters); the checker finds no
#      overlapping incompatible holds and no lost update;
#   c. node failure: node N holds an EX lock that node 2 waits for; during
#      a second workload on every node, node N (clients, dlmd, corosync)
#      is killed.  The survivors fence it (fence.log: "fence node N"), the
#      lockspace runs again with members 1..N-1 on node 1 and node N-1,
#      node 2's waiter is granted, the survivors' workload ends well and
#      the checker passes; every surviving daemon still runs.
# The cluster is always torn down (trap); logs are kept on failure.  The
# time of each step is printed (kill to running again included).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
N=${1:-16}
case $N in
[4-9] | 1[0-6]) ;;
*) echo "usage: test-cluster-16.sh [N]   (N: 4..16)" >&2; exit 2 ;;
esac
LS=c16
NRES=16
# bounded waits, polls of 0.1 s: corosync's token is 2.55 s at 16 nodes
# (dlm-cluster), and fencing and recovery share 2 loaded cores with 16
# daemons
POLLS=900
[ "$(id -u)" = 0 ] || { echo "test-cluster-16: needs root" >&2; exit 1; }
[ -x "$CLIENT" ] || { echo "test-cluster-16: no $CLIENT (build first)" >&2; exit 1; }

. "$top_srcdir/tests/cluster-test-lib.sh"

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# members FROM TO: "FROM FROM+1 .. TO", as dlmctl ls prints them
members() { seq -s ' ' "$1" "$2"; }

wl_clients=1	# workload MS NODES...: one client per node

t=$(date +%s%N)
up_cluster "$N"
echo "   up: $(ms_since "$t") ms"

echo "== a. $N nodes join $LS"
t=$(date +%s%N)
jp=
for k in $(seq 1 "$N"); do
	on "$k" "$DLMCTL" join "$LS" >"$dir/join-$k.out" 2>&1 &
	jp="$jp $!"
done
for p in $jp; do
	wait_pid "$p" 60 || fail "a join did not end well"
done
wait_ls 1 "state running members $(members 1 "$N") " "lockspace not on all $N (node 1)"
wait_ls "$N" "state running members $(members 1 "$N") " "lockspace not on all $N (node $N)"
echo "   joined and running on all: $(ms_since "$t") ms"

echo "== b. workload on every node"
t=$(date +%s%N)
workload "$WORK_MS" $(seq 1 "$N")
wait_workload $((WORK_MS / 1000 + 60)) $(seq 1 "$N")
echo "   $N clients, $WORK_MS ms each: done after $(ms_since "$t") ms"
check "workload"

echo "== c. node $N fails during the workload"
start_client "$N" hold "$LS" held-by-last EX
wait_line "$dir/client-n$N.out" held
start_client 2 try "$LS" held-by-last EX
waiter=$last_pid
workload $((WORK_MS * 2)) $(seq 1 "$N")
wait_for "$WAIT_S" "the workload to be under way" workload_busy
t=$(date +%s%N)
"$CLUSTER" kill "$dir" "$N"
left=$(members 1 $((N - 1)))
wait_ls 1 "state running members $left clients" "no recovery to members 1..$((N - 1))"
echo "   kill to running on node 1 (corosync detection, fencing, recovery): $(ms_since "$t") ms"
wait_ls $((N - 1)) "state running members $left clients" "node $((N - 1)) did not recover"
grep -q "fence node $N\$" "$dir/fence.log" 2>/dev/null ||
	fail "node $N was not fenced: $(cat "$dir/fence.log" 2>/dev/null)"
wait_pid "$waiter" 60 || fail "the request waiting for node $N's lock was not granted"
grep -q granted "$dir/client-n2.out" || fail "waiter: $(cat "$dir/client-n2.out")"
wait_workload $((WORK_MS * 2 / 1000 + 90)) $(seq 1 $((N - 1)))
check "node failure"
for k in $(seq 1 $((N - 1))); do
	"$CLUSTER" status "$dir" 2>/dev/null | grep -q "^n$k dlmd .* running" ||
		fail "node $k's dlmd died"
done
[ $rc -eq 0 ] && echo "PASS"
exit $rc
