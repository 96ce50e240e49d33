#!/bin/sh
# tests/test-cluster-nodelist.sh - a node moves to another address while
# the cluster runs, the way corosync allows it (tests/dlm-cluster up 3,
# fence_command = dlm-cluster fence).
#
#   1. the lockspace runs on nodes 1 2 3; node 1 holds EX on r1;
#   2. node 3 stops cleanly (dlmd, then corosync, SIGTERM): nobody is
#      fenced, the lockspace runs on 1 2;
#   3. node 3's interface moves from 10.213.77.3 to 10.213.77.13 and every
#      node's corosync.conf follows, in the two reloads corosync takes
#      (corosync-cfgtool -R; it refuses to change a known node's address
#      in place: "new config has different address for link 0"): one
#      without node 3, one with node 3 at the new address.  The dlmds of
#      nodes 1 and 2 log each change of the configured nodes (what a
#      split's majority is counted against: 2, then 3 again, applied in
#      the daemon group's order: plugin/cluster.c, CONFIGURATION
#      CHANGES), drop node 3 from their lowcomms node table when it is
#      out of the nodelist (NODES LEAVING THE NODELIST; it stayed there
#      for the daemon's life) and add it afresh when it is back, and show
#      node 3 at its new address (dlmctl status);
#   4. node 3 starts and joins: the lockspace runs on 1 2 3 everywhere;
#      node 3's PR request for r1 waits for node 1's EX and is granted
#      when node 1's holder goes; node 3 was never fenced and nobody
#      refused node 3 as "not a cluster node address";
#   5. with auto_tie_breaker on from the start, auto_tie_breaker_node:
#      highest is added to every corosync.conf and reloaded (corosync-
#      cmapctl cannot set these keys: votequorum keeps them read-only,
#      CS_ERR_ACCESS).  votequorum reads them only when corosync starts:
#      runtime.votequorum.atb_type stays as it was on every node (0
#      here: votequorum turns auto_tie_breaker off in a cluster of 3
#      without wait_for_all), and every dlmd says once that the change
#      takes effect only when corosync and dlmd restart and keeps node 1
#      as the tie-breaker: no CONFIG switches to node 3 (one did, in
#      session 19's first run of this step: the dlmds then counted a
#      2 + 2 split against another node than votequorum,
#      plugin/cluster.c, TIE-BREAKER FIXED AT START).
# Before the fix the dlmds kept node 3's first address (lowcomms' node
# table took only new nodes): they refused node 3's connections from its
# new address and connected to the old one, node 3's join never
# finished, and after peer_unreachable_secs (20 s) node 3 was removed as
# unreachable and fenced.  ~40 s.  Run under flock /work/cluster.lock.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=nodelist
. "$top_srcdir/tests/cluster-test-lib.sh"

OLD=10.213.77.3
NEW=10.213.77.13

# auto_tie_breaker on from the start (step 5 changes its node by a reload)
export DLM_CLUSTER_QUORUM="auto_tie_breaker: 1"
up_cluster 3
: >"$dir/fence.log"

# in_nodelist K ADDR: node K's corosync has ADDR in its nodelist
in_nodelist() {
	on "$1" corosync-cmapctl nodelist 2>/dev/null |
		grep -q "ring0_addr (str) = $2\$"
}
# dlmd_sees K ADDR: node K's dlmd lists node 3 at ADDR
dlmd_sees() {
	on "$1" "$DLMCTL" status 2>/dev/null | grep "^nodes " |
		grep -q " 3($2)"
}
# reload: every node's corosync reads its corosync.conf again
reload() {
	on 1 corosync-cfgtool -R >"$dir/reload.out" 2>&1 ||
		fail "corosync-cfgtool -R: $(cat "$dir/reload.out")"
}

say "== 1. the lockspace on 1 2 3, node 1 holds EX on r1"
for k in 1 2 3; do
	on $k "$DLMCTL" join "$LS" >/dev/null || fail "node $k cannot join $LS"
done
wait_ls 1 "state running members 1 2 3 " "lockspace not on all three"
start_client 1 hold "$LS" r1 EX
holder=$last_pid
wait_line "$dir/client-n1.out" held

say "== 2. node 3 stops cleanly"
for what in dlmd.launch-pid corosync.pid; do
	p=$(cat "$dir/n3/$what")
	kill -TERM "$p"
	wait_for "$WAIT_S" "node 3's ${what%%.*} to stop" not kill -0 "$p"
done
wait_ls 1 "state running members 1 2 " "no change to members 1 2"

say "== 3. node 3 moves from $OLD to $NEW: two reloads"
on 3 ip addr del "$OLD/24" dev eth0 || fail "cannot take $OLD from node 3"
on 3 ip addr add "$NEW/24" dev eth0 || fail "cannot give node 3 $NEW"
for k in 1 2 3; do
	perl -0pi -e 's/    node \{\n        name: n3\n.*?\n    \}\n//s' \
		"$dir/n$k/corosync.conf"
done
grep -q "name: n3" "$dir/n1/corosync.conf" && fail "node 3 still in corosync.conf"
reload
wait_for "$WAIT_S" "node 3 to leave node 1's nodelist" not in_nodelist 1 "$OLD"
for k in 1 2; do
	wait_for "$WAIT_S" "node $k's dlmd to log the nodelist's 2 nodes" \
		grep -q "configuration applies from here on: 2 configured nodes (was 3)" \
		"$dir/n$k/dlmd.out"
	# its daemon left cleanly: nothing needs its lowcomms state
	wait_for "$WAIT_S" "node $k's dlmd to drop node 3 from its node table" \
		grep -q "comms: node 3 is out of the nodelist, the daemon group and fencing" \
		"$dir/n$k/dlmd.out"
done
for k in 1 2 3; do
	sed -i '$d' "$dir/n$k/corosync.conf"
	printf '    node {\n        name: n3\n        nodeid: 3\n        ring0_addr: %s\n    }\n}\n' \
		"$NEW" >>"$dir/n$k/corosync.conf"
done
reload
for k in 1 2; do
	wait_for "$WAIT_S" "node 3 at $NEW in node $k's nodelist" in_nodelist $k "$NEW"
	wait_for "$WAIT_S" "node $k's dlmd to list node 3 at $NEW" dlmd_sees $k "$NEW"
	wait_for "$WAIT_S" "node $k's dlmd to log the nodelist's 3 nodes" \
		grep -q "configuration applies from here on: 3 configured nodes (was 2)" \
		"$dir/n$k/dlmd.out"
done

say "== 4. node 3 starts at $NEW and joins"
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3 did not start at $NEW"
on 3 "$DLMCTL" join "$LS" >"$dir/join3.out" 2>&1 ||
	fail "node 3 cannot join $LS: $(cat "$dir/join3.out")"
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "lockspace not on 1 2 3 after node 3 moved"
done
start_client 3 try "$LS" r1 PR
waiter=$last_pid
still_waiting "$waiter" 3 "node 3 was granted PR on r1 while node 1 held EX"
kill_client "$holder"
wait_pid "$waiter" "$WAIT_S" ||
	fail "node 3's PR on r1 was not granted after node 1's EX went: $(tail -n 2 "$dir/client-n3.out")"
[ "$(fences_of 3)" = 0 ] || fail "node 3 was fenced: $(cat "$dir/fence.log")"
for k in 1 2; do
	grep -q "not a cluster node address" "$dir/n$k/dlmd.out" &&
		fail "node $k refused node 3: $(grep "not a cluster node address" "$dir/n$k/dlmd.out" | head -n 1)"
done
for k in 1 2 3; do
	ls_has $k "state running members 1 2 3 " || fail "node $k: lockspace not on 1 2 3 at the end: $(ls_line $k)"
done

say "== 5. auto_tie_breaker_node: highest, by a reload"
atb_type() { # K: what node K's votequorum runs
	on "$1" corosync-cmapctl -g runtime.votequorum.atb_type 2>&1
}
for k in 1 2 3; do
	eval "atb_before_$k=\$(atb_type $k)"
done
for k in 1 2 3; do
	sed -i 's/^    auto_tie_breaker: 1$/&\n    auto_tie_breaker_node: highest/' \
		"$dir/n$k/corosync.conf"
done
grep -q "auto_tie_breaker_node: highest" "$dir/n1/corosync.conf" ||
	fail "no auto_tie_breaker_node in corosync.conf"
reload
# each dlmd reads the keys (cmap tracking) when its corosync has reloaded;
# it says the change is not followed, in the same step that would have
# sent a CONFIG
for k in 1 2 3; do
	wait_for "$WAIT_S" "node $k's dlmd to say the tie-breaker change waits for a restart" \
		grep -q "votequorum reads them only when corosync starts" \
		"$dir/n$k/dlmd.out"
done
# what votequorum runs: as before the reload
for k in 1 2 3; do
	t=$(atb_type $k)
	eval "b=\$atb_before_$k"
	case $t in
	*"(u32) = "[0-9]*) ;;
	*) fail "node $k: no runtime.votequorum.atb_type: $t" ;;
	esac
	[ "$t" = "$b" ] ||
		fail "node $k: votequorum's atb_type changed by the reload: $b, now $t"
done
# a barrier: every node joins a second lockspace (its CPG messages come
# after any CONFIG the dlmds sent before, in corosync's one order)
for k in 1 2 3; do
	on $k "$DLMCTL" join barrier >/dev/null || fail "node $k cannot join barrier"
done
LS=barrier
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "barrier lockspace not on 1 2 3"
done
LS=nodelist
for k in 1 2 3; do
	grep -q "node 3 breaks even splits (was 1)" "$dir/n$k/dlmd.out" &&
		fail "node $k's dlmd followed the reload's tie-breaker: $(grep "breaks even splits" "$dir/n$k/dlmd.out" | tail -n 1)"
	[ "$(grep -c "votequorum reads them only when corosync starts" "$dir/n$k/dlmd.out")" = 1 ] ||
		fail "node $k: the tie-breaker change not said exactly once"
done
say "done"
