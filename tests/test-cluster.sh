#!/bin/sh
# tests/test-cluster.sh - dlmd on a 3-node corosync cluster (network
# namespaces, tests/dlm-cluster up 3), checked from outside.
#
# Scenarios, on one cluster, in order (each bounded in time):
#   a. workload: two clients per node (tests/cluster-client work) take EX,
#      PR and PW locks on NRES shared resources; EX sections increment a
#      counter in the LVB and in a file; the checker finds no overlapping
#      incompatible holds, no lost update, counters = EX sections.
#   b. node failure: during the workload node 2's clients, dlmd and
#      corosync are killed (SIGKILL).  A lock held on node 1 stays held; a
#      lock held on node 2 is released after fencing (the fence agent is
#      dlm-cluster fence) and the request waiting for it on node 3 is
#      granted; the lockspace runs again with members 1 3; the checker
#      passes.  The survivors' metrics (dlmctl metrics, dlmd-metrics(7))
#      show the recoveries with their duration, the fencing wait, and
#      engine messages both ways between nodes 1 and 3.
#   d. restart: node 2 comes back, rejoins the lockspace (members 1 2 3),
#      and a short workload on all three passes the checker.
#   e. remote purge: a client on node 2 is killed holding a PERSISTENT
#      EX lock, which stays as an orphan (node 3 is refused it); from
#      node 1, dlm_ls_purge(2, another pid) leaves it, dlm_ls_purge(2,
#      its pid) removes it on node 2 and node 3 is granted the lock.
#   c. partition: node 3 is cut off.  While fencing is held back
#      (DIR/fence-hold), node 3 (no quorum) grants nothing new and node 1
#      shows it waits for fencing; once fencing may proceed, node 3 is
#      fenced, the majority recovers (members 1 2) and grants; after the
#      link heals node 3 restarts and rejoins.
# At the end the LVBs agree with the files, but for increments of writers
# that died inside their EX section (cluster-client final, then check).
#   f. fencing tokens (issue 17): node 1 takes a new resource EX (so it
#      masters it and holds it: nobody else knows its token) and writes
#      to a toy storage server (cluster-client store) with its token;
#      node 1 is killed; after recovery node 2's EX has a larger token,
#      its write is accepted, and node 1's write arriving late is
#      refused.  Node 1 then restarts and rejoins.
#   g. deadlock across nodes (issue 17): a client on node 1 holds dl-r1
#      EX and one on node 2 holds dl-r2 EX (each node masters the one it
#      took first); then each asks for the other's with dlm_ls_lock_wait
#      (cluster-client deadlock).  Exactly one request ends with EDEADLK
#      within the detection's bound (deadlock_secs, 5 s by default, and
#      its scans), the other is granted once the victim lets go; dlmctl ls
#      on the victim's node shows "deadlocks 1" and the victim's lock id,
#      the other nodes none.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=clustertest
NRES=8
. "$top_srcdir/tests/cluster-test-lib.sh"

up_cluster 3

echo "== a. workload on 3 nodes"
workload "$WORK_MS" 1 2 3
wait_workload $((WORK_MS / 1000 + 30)) 1 2 3
for k in 1 2 3; do
	wait_ls $k "members 1 2 3 .*" "lockspace not on all three" || true
done
check "workload"

echo "== b. node 2 fails during the workload"
start_client 1 hold "$LS" held-by-1 EX
h1=$last_pid
start_client 2 hold "$LS" held-by-2 EX
both_held() { # the holders on nodes 1 and 2 have their locks
	[ "$(grep -c '^held' "$dir/client-n1.out" "$dir/client-n2.out" |
		awk -F: '{s += $2} END {print s}')" -ge 2 ]
}
wait_for "$WAIT_S" "the holders on nodes 1 and 2 to hold" both_held
start_client 3 try "$LS" held-by-2 EX
waiter=$last_pid
workload $((WORK_MS * 2)) 1 2 3
wait_for "$WAIT_S" "the workload to be under way" workload_busy
t0=$(date +%s%N)
"$CLUSTER" kill "$dir" 2
wait_ls 1 "state running members 1 3 " "no recovery to members 1 3"
t1=$(date +%s%N)
echo "   recovery (kill to running on node 1): $(((t1 - t0) / 1000000)) ms"
wait_ls 3 "state running members 1 3 " "node 3 did not recover"
wait_pid "$waiter" 20 || fail "the request waiting for node 2's lock was not granted"
grep -q granted "$dir/client-n3.out" || fail "waiter: $(cat "$dir/client-n3.out")"
# node 1's lock survived: node 3 cannot have it
timeout "$BLOCKED_S" "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" held-by-1 EX >"$dir/try1.out" 2>&1
[ $? -eq 124 ] || fail "node 1's lock was lost: $(cat "$dir/try1.out")"
wait_workload $((WORK_MS * 2 / 1000 + 30)) 1 3
check "node failure"
# metric K SERIES: node K's value of SERIES in "dlmctl metrics" (or "")
metric() {
	on "$1" "$DLMCTL" metrics 2>/dev/null | awk -v s="$2" '$1 == s { print $2 }'
}
for k in 1 3; do
	p=$((4 - k))
	nrec=$(metric $k "dlmd_recoveries_completed_total{lockspace=\"$LS\"}")
	[ "${nrec:-0}" -ge 2 ] ||
		fail "node $k: '$nrec' recoveries completed, want the join's and node 2's failure's"
	last=$(metric $k "dlmd_recovery_last_duration_seconds{lockspace=\"$LS\"}")
	awk -v v="${last:-0}" 'BEGIN { exit !(v > 0) }' ||
		fail "node $k: last recovery took '$last' s"
	nfw=$(metric $k dlmd_fence_waits_total)
	[ "${nfw:-0}" -ge 1 ] || fail "node $k: '$nfw' fencing waits, want node 2's"
	sent=$(metric $k "dlmd_peer_messages_sent_total{node=\"$p\"}")
	recv=$(metric $k "dlmd_peer_messages_received_total{node=\"$p\"}")
	[ "${sent:-0}" -gt 0 ] && [ "${recv:-0}" -gt 0 ] ||
		fail "node $k: messages with node $p: '$sent' sent, '$recv' received"
	echo "   metrics of node $k: $nrec recoveries, the last $last s; $nfw fencing" \
		"wait(s); $sent messages to node $p, $recv from it"
done

echo "== d. node 2 restarts and rejoins"
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start"
workload "$WORK_MS" 1 2 3
wait_ls 1 "state running members 1 2 3 " "node 2 did not rejoin"
wait_workload $((WORK_MS / 1000 + 30)) 1 2 3
check "rejoin"
kill_client "$h1"

echo "== e. dlm_ls_purge(nodeid, pid) of an orphan on another node"
start_client 2 orphan "$LS" orphan-on-2 EX
oc=$last_pid
orphan_pid() { # the PID the orphan's owner on node 2 printed
	sed -n 's/^held \([0-9]*\)$/\1/p' "$dir/client-n2.out" | tail -n 1
}
orphan_held() {
	[ -n "$(orphan_pid)" ]
}
wait_for "$WAIT_S" "the orphan's owner to hold" orphan_held
opid=$(orphan_pid)
kill_client "$oc"
wait "$oc" 2>/dev/null
timeout "$BLOCKED_S" "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" orphan-on-2 EX >"$dir/try-o1.out" 2>&1
[ $? -eq 124 ] || fail "the orphan did not stay: $(cat "$dir/try-o1.out")"
on 1 "$CLIENT" purge "$LS" 2 $((opid + 1)) >"$dir/purge1.out" 2>&1 ||
	fail "purge of another pid: $(cat "$dir/purge1.out")"
timeout "$BLOCKED_S" "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" orphan-on-2 EX >"$dir/try-o2.out" 2>&1
[ $? -eq 124 ] || fail "a purge of another pid removed the orphan: $(cat "$dir/try-o2.out")"
on 1 "$CLIENT" purge "$LS" 2 "$opid" >"$dir/purge2.out" 2>&1 ||
	fail "purge of the orphan's pid: $(cat "$dir/purge2.out")"
timeout 10 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" orphan-on-2 EX >"$dir/try-o3.out" 2>&1 ||
	fail "the orphan was not purged on node 2: $(cat "$dir/try-o3.out")"

echo "== c. node 3 is cut off"
touch "$dir/fence-hold"
workload $((WORK_MS * 2)) 1 2 3
wait_for "$WAIT_S" "the workload to be under way" workload_busy
"$CLUSTER" cut "$dir" 3
wait_ls 1 "wait fencing node 3" "node 1 does not wait for fencing node 3"
timeout "$BLOCKED_S" "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" fresh-on-3 EX >"$dir/try3.out" 2>&1
[ $? -eq 124 ] || fail "node 3 without quorum granted a lock: $(cat "$dir/try3.out")"
on 3 "$DLMCTL" ls | grep -q "wait quorum" || fail "node 3 should wait for quorum: $(ls_line 3)"
rm -f "$dir/fence-hold"
wait_ls 1 "state running members 1 2 clients" "the majority did not recover"
timeout 10 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" fresh-on-1 EX >"$dir/try4.out" 2>&1 ||
	fail "the majority grants nothing: $(cat "$dir/try4.out")"
grep -q 'fence node 3$' "$dir/fence.log" || fail "node 3 was not fenced: $(cat "$dir/fence.log")"
"$CLUSTER" heal "$dir" 3
wait_workload $((WORK_MS * 2 / 1000 + 30)) 1 2
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3 did not restart"
start_client 3 try "$LS" after-heal EX
wait_pid "$last_pid" 20 || fail "node 3 cannot lock after rejoining"
wait_ls 1 "state running members 1 2 3 " "node 3 did not rejoin"
check "partition"

echo "== final LVBs"
on 1 "$CLIENT" final "$LS" "$dir" $NRES || fail "cannot read the final LVBs"
check "final LVBs"

echo "== f. fencing tokens: node 1 dies holding EX; its late write is refused"
# token_of K: the token of node K's latest token-hold ("held token N")
token_of() {
	sed -n 's/^held token \([0-9]*\)$/\1/p' "$dir/client-n$1.out" | tail -n 1
}
# store K TOKEN: a write with TOKEN to the toy storage, from node K
store() {
	on "$1" "$CLIENT" store "$dir/store-fenced-obj" "$2"
}
has_token() { # K: node K's token-hold has its token
	[ -n "$(token_of "$1")" ]
}
# hold_token K WHAT: node K takes fenced-obj EX; wait for its token
hold_token() {
	start_client "$1" token-hold "$LS" fenced-obj EX
	poll "$WAIT_S" has_token "$1" || fail "$2"
}
hold_token 1 "node 1 did not get fenced-obj"
t1=$(token_of 1)
store 1 "${t1:-0}" >"$dir/store1.out" 2>&1 ||
	fail "node 1's write was refused: $(cat "$dir/store1.out")"
"$CLUSTER" kill "$dir" 1
wait_ls 2 "state running members 2 3 " "no recovery to members 2 3"
hold_token 2 "node 2 did not get fenced-obj after node 1 died"
t2_pid=$last_pid
t2=$(token_of 2)
echo "   tokens: node 1's $t1, node 2's $t2 after node 1 died"
[ "${t2:-0}" -gt "${t1:-0}" ] || fail "node 2's token '$t2' is not above node 1's '$t1'"
store 2 "${t2:-0}" >"$dir/store2.out" 2>&1 ||
	fail "node 2's write was refused: $(cat "$dir/store2.out")"
# node 1's write, delayed until now (a paused writer, a slow network)
store 2 "${t1:-0}" >"$dir/store3.out" 2>&1
st=$?
[ $st -eq 3 ] && grep -q "^rejected ${t1:-0} below ${t2:-0}\$" "$dir/store3.out" ||
	fail "node 1's stale write (exit $st): $(cat "$dir/store3.out")"
kill_client "$t2_pid"
"$CLUSTER" start "$dir" 1 >/dev/null || fail "node 1 did not restart"
start_client 1 try "$LS" after-tokens EX
wait_pid "$last_pid" 20 || fail "node 1 cannot lock after rejoining"

echo "== g. deadlock across nodes: one victim gets EDEADLK, the other is granted"
dl_out() { # K: node K's deadlock client's output
	cat "$dir/dl-n$1.out" 2>/dev/null
}
dl_line() { # K: node K's "deadlocks N last_victim ID" line for $LS
	on "$1" "$DLMCTL" ls 2>/dev/null | grep -A2 "^name $LS " | grep deadlocks
}
dl_pid=
for k in 1 2; do
	"$CLUSTER" exec "$dir" $k "$CLIENT" deadlock "$LS" dl-r$k dl-r$((3 - k)) \
		"$dir/dl-go" >"$dir/dl-n$k.out" 2>&1 &
	echo $! >>"$dir/n$k/clients"
	pids="$pids $!"
	dl_pid="$dl_pid $!"
	poll "$WAIT_S" has_line "$dir/dl-n$k.out" 'held$' ||
		fail "node $k did not get dl-r$k: $(dl_out $k)"
done
touch "$dir/dl-go"
# deadlock_secs (5 s) before the first probe, a scan, and room to spare
for p in $dl_pid; do
	wait_pid "$p" 30 || fail "a deadlocked client ($p) hung or failed"
done
victim=
for k in 1 2; do
	case "$(dl_out $k | tail -n 1)" in
	"deadlock "*) victim="$victim $k" ;;
	granted) ;;
	*) fail "node $k's deadlocked client: $(dl_out $k)" ;;
	esac
done
victim=${victim# }
case "$victim" in
1 | 2)
	lkid=$(dl_out "$victim" | sed -n 's/^deadlock \([0-9a-f]*\)$/\1/p')
	echo "   victim: node $victim's request $lkid"
	dl_line "$victim" | grep -q "deadlocks 1 last_victim $lkid\$" ||
		fail "node $victim does not show its victim $lkid: $(dl_line "$victim")"
	for k in 1 2 3; do
		[ $k -eq "$victim" ] && continue
		dl_line $k | grep -q "deadlocks 0 " ||
			fail "node $k counts a deadlock it did not break: $(dl_line $k)"
	done ;;
*) fail "want one victim, got '$victim': node 1 $(dl_out 1); node 2 $(dl_out 2)" ;;
esac
"$CLUSTER" status "$dir" >/dev/null || fail "a daemon died: $("$CLUSTER" status "$dir")"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
