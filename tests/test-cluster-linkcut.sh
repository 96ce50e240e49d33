#!/bin/sh
# tests/test-cluster-linkcut.sh - dlmd's own port cut between two nodes
# that corosync keeps as members (plugin/cluster.c, UNREACHABLE PEERS),
# on a 3-node cluster (tests/dlm-cluster up 3, fence_command =
# dlm-cluster fence; peer_unreachable_secs = 6 here).  "dlm-cluster
# block DIR 2 3" drops TCP port 21064 between nodes 2 and 3 only
# (nftables in their namespaces): corosync and the pairs with node 1 are
# untouched.  A workload on all three nodes locks resources across that
# pair, and its history checker must find no violation.
#
#   1. a blip: the pair is blocked for 2 s (well under the limit) and
#      healed: nothing is reported, nobody is removed or fenced, the
#      workload ends well and the lockspace runs on all three; "dlmctl
#      status" on nodes 2 and 3 shows no peer waiting and none reported
#      unreachable ("unacked none", "unreachable none").
#   2. a cut for good: the locks across the pair wait, the two ends
#      report each other, and every member picks node 3 (a tie: the
#      higher id).  Node 3 is removed from the cluster (its corosync
#      exits) and fenced exactly once, node 2 never; the lockspace
#      recovers on nodes 1 and 2 and their workload completes.  Before
#      this existed, the workload on node 2 waited for ever (a bounded
#      wait, then a failure here).  While the cut lasts, node 2's
#      "dlmctl status" shows node 3's oldest frame waiting unacknowledged
#      ("unacked 3(N s)", N >= 3), then node 3 reported ("unreachable 3"),
#      and --json the same (the node's unacked_ms and unreachable, the
#      "unreachable" list).  The pair is unblocked, node 3 restarts and
#      rejoins.
#   3. node 1's dlmd hangs (SIGSTOP; its corosync runs on) while it
#      holds a lock node 2 asks for; node 3 waits on nothing.  Only node
#      2 reports the pair (1, 2), a tie of degrees: node 1, the end that
#      reports nothing, is removed and fenced once (the lowest other
#      member, node 2, removes it), nodes 2 and 3 never; the lockspace
#      recovers on them and node 2's request is granted.  Before, the
#      higher id went: node 2, the healthy end, was fenced, and the hung
#      dlmd stayed in the cluster.
#   4. node 1's dlmd hangs again, and node 3 joins a lockspace of nodes
#      1 and 2: the change needs node 1's START, and nothing in lowcomms
#      waits for node 1, so no wait above ever saw it: the join waited
#      for ever ("wait members (start from 1)").  Nodes 2 and 3 report
#      node 1 once the START has waited the limit; node 1 is removed and
#      fenced, the lockspace runs on 2 and 3 and node 3's request in it
#      is granted.  Node 1 rejoins.
# LINKCUT_LIMIT=N overrides peer_unreachable_secs (0: the old behaviour,
# to see this test fail).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=linkcut
NRES=4
LIMIT=${LINKCUT_LIMIT:-6}
. "$top_srcdir/tests/cluster-test-lib.sh"

removals() { # K: the lines of node K's dlmd that chose a node to remove
	grep -c "cannot reach each other" "$dir/n$1/dlmd.out" 2>/dev/null || true
}

# crossing MS: the workload, node 3's clients first, so that node 3
# masters the resources (the first node to lock one does) and node 2's
# requests cross the pair that is cut
crossing() {
	workload "$1" 3
	poll "$WAIT_S" workload_busy || fail "the workload did not start on node 3"
	workload "$1" 1 2
	poll "$WAIT_S" workload_busy || fail "the workload did not start on nodes 1 and 2"
}

status_has() { # K REGEX: a line of node K's "dlmctl status" matches REGEX
	on "$1" "$DLMCTL" status | grep -q "$2"
}

# node 2 shows node 3 reported unreachable, in the text and in --json
reported_3() {
	status_has 2 '^unreachable 3$' &&
		on 2 "$DLMCTL" status --json >"$dir/status-cut.json" &&
		grep -q '"unreachable":\[3\]' "$dir/status-cut.json" &&
		grep -q '"nodeid":3,"addr":"[^"]*","unacked_ms":[0-9]*,"unreachable":true' \
			"$dir/status-cut.json"
}

# (the teardown deletes the namespaces, and their rules with them)
unblock() {
	"$CLUSTER" unblock "$dir" 2 3 || fail "cannot unblock nodes 2 and 3"
}

DLM_CLUSTER_CONF_EXTRA="peer_unreachable_secs = $LIMIT"
export DLM_CLUSTER_CONF_EXTRA
up_cluster 3
: >"$dir/fence.log"

say "== 1. dlmd's port between nodes 2 and 3 blocked for 2 s, then healed"
crossing 9000
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "the lockspace is not on all three"
done
"$CLUSTER" block "$dir" 2 3 || fail "cannot block dlmd's port between nodes 2 and 3"
sleep 2		# the point: a cut this much shorter than the limit
unblock
wait_workload 60 1 2 3
check "blip"
for k in 1 2 3; do
	running $k corosync && running $k dlmd || fail "node $k went down after a blip"
	wait_ls $k "state running members 1 2 3 " "not all three after a blip"
	[ "$(removals $k)" = 0 ] || fail "node $k chose a node to remove after a 2 s blip"
done
[ "$(fences_of 2)" = 0 ] && [ "$(fences_of 3)" = 0 ] ||
	fail "a node was fenced after a blip: $(cat "$dir/fence.log")"
for k in 2 3; do
	poll "$WAIT_S" status_has $k '^unacked none$' ||
		fail "node $k: a peer still unacknowledged after the blip: $(on $k "$DLMCTL" status)"
	status_has $k '^unreachable none$' ||
		fail "node $k reported a peer after a blip: $(on $k "$DLMCTL" status)"
done

say "== 2. the port stays blocked: one end is removed and fenced"
crossing 15000
"$CLUSTER" block "$dir" 2 3 || fail "cannot block dlmd's port between nodes 2 and 3"
# the display: node 3's wait (from 3 s on) and, from the limit on, the
# report, until node 3 leaves
poll "$LIMIT" status_has 2 '^unacked .*3([0-9]* s)' ||
	fail "node 2 does not show node 3 unacknowledged: $(on 2 "$DLMCTL" status)"
w=$(on 2 "$DLMCTL" status | sed -n 's/^unacked.* 3(\([0-9]*\) s).*/\1/p')
[ "${w:-0}" -ge 3 ] || fail "node 2 shows node 3 waiting ${w:-?} s"
if [ "$LIMIT" != 0 ]; then
	poll $((LIMIT + 10)) reported_3 ||
		fail "node 2 does not show node 3 reported unreachable: $(on 2 "$DLMCTL" status)"
fi
# the limit, two watchdog ticks, the removal, fencing, recovery
poll $((LIMIT + 40)) not running 3 corosync ||
	fail "node 3 was not removed: the locks across the cut wait for ever"
for k in 1 2; do
	wait_ls $k "state running members 1 2 " "no recovery without node 3"
done
wait_workload $((WAIT_S * 3)) 1 2
check "cut"
[ "$(fences_of 3)" = 1 ] || fail "node 3 fenced $(fences_of 3) times, not once: $(cat "$dir/fence.log")"
[ "$(fences_of 2)" = 0 ] || fail "node 2 was fenced too: $(cat "$dir/fence.log")"
running 1 corosync && running 1 dlmd && running 2 corosync && running 2 dlmd ||
	fail "node 1 or node 2 went down"
for k in 1 2; do
	grep -q "dlmd on nodes 2 and 3 cannot reach each other .* node 3 (cut off from 1 member, node 2 from 1; the higher id) leaves the cluster" "$dir/n$k/dlmd.out" ||
		fail "node $k does not log the choice of node 3"
done
grep -q "removing node 3 from the cluster" "$dir/n1/dlmd.out" ||
	fail "node 1 (the lowest other member) did not remove node 3"
# fenced before its locks were recovered (never two holders)
for k in 1 2; do
	f=$(grep -n "fencing: node 3 is fenced" "$dir/n$k/dlmd.out" | head -n 1 | cut -d: -f1)
	r=$(grep -n "recovery [0-9]* started, 2 members" "$dir/n$k/dlmd.out" |
		tail -n 1 | cut -d: -f1)
	[ -n "$f" ] && [ -n "$r" ] && [ "$f" -lt "$r" ] ||
		fail "node $k: the recovery without node 3 did not wait for its fencing"
done
unblock
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3 did not start again"
timeout 30 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" rejoin-3 EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 3 cannot lock after restarting: $(cat "$dir/rejoin.out")"
wait_ls 1 "state running members 1 2 3 " "node 3 did not rejoin"

say "== 3. node 1's dlmd hangs while node 2 waits on it"
n_held=$(grep -c '^held$' "$dir/client-n1.out" 2>/dev/null)
start_client 1 hold "$LS" hung-r EX	# node 1 masters hung-r: first to lock it
poll "$WAIT_S" more_lines "$dir/client-n1.out" '^held$' "${n_held:-0}" ||
	fail "node 1 cannot take hung-r"
f2=$(fences_of 2)
f3=$(fences_of 3)
p1=$(cat "$dir/n1/dlmd.launch-pid")
kill -STOP "$p1"
n_granted=$(grep -c '^granted$' "$dir/client-n2.out" 2>/dev/null)
start_client 2 try "$LS" hung-r EX
# the limit, three reports of node 2 (two ticks), the removal, fencing
poll $((LIMIT + 40)) not running 1 corosync ||
	fail "node 1 (its dlmd stopped) was not removed"
for k in 2 3; do
	wait_ls $k "state running members 2 3 " "no recovery without node 1"
done
poll "$WAIT_S" more_lines "$dir/client-n2.out" '^granted$' "${n_granted:-0}" ||
	fail "node 2's request for hung-r was not granted without node 1"
[ "$(fences_of 1)" = 1 ] || fail "node 1 fenced $(fences_of 1) times, not once: $(cat "$dir/fence.log")"
[ "$(fences_of 2)" = "$f2" ] && [ "$(fences_of 3)" = "$f3" ] ||
	fail "a node whose dlmd runs was fenced: $(cat "$dir/fence.log")"
for k in 2 3; do
	running $k corosync && running $k dlmd || fail "node $k went down"
	grep -q "dlmd on nodes 1 and 2 cannot reach each other .* node 1 (cut off from 1 member, node 2 from 1; the end that reports nothing) leaves the cluster" "$dir/n$k/dlmd.out" ||
		fail "node $k does not log the choice of node 1"
done
grep -q "removing node 1 from the cluster" "$dir/n2/dlmd.out" ||
	fail "node 2 (the lowest other member) did not remove node 1"
kill -CONT "$p1" 2>/dev/null	# if it is still there (it was not fenced)
"$CLUSTER" start "$dir" 1 >/dev/null || fail "node 1 did not start again"
timeout 30 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" rejoin-1 EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 1 cannot lock after restarting: $(cat "$dir/rejoin.out")"
wait_ls 2 "state running members 1 2 3 " "node 1 did not rejoin"

say "== 4. node 1's dlmd hangs while a join needs its START"
for k in 1 2; do
	n_held=$(grep -c '^held$' "$dir/client-n$k.out" 2>/dev/null)
	start_client $k hold hung4 h4-$k PR
	poll "$WAIT_S" more_lines "$dir/client-n$k.out" '^held$' "${n_held:-0}" ||
		fail "node $k cannot lock in lockspace hung4"
done
f1=$(fences_of 1)
f2=$(fences_of 2)
f3=$(fences_of 3)
p1=$(cat "$dir/n1/dlmd.launch-pid")
kill -STOP "$p1"
n_granted=$(grep -c '^granted$' "$dir/client-n3.out" 2>/dev/null)
start_client 3 try hung4 h4-3 EX
poll $((LIMIT + 40)) not running 1 corosync ||
	fail "node 1 (its dlmd stopped, a join waiting for its START) was not removed"
LS=hung4
for k in 2 3; do
	wait_ls $k "state running members 2 3 " "hung4 does not run without node 1"
done
LS=linkcut
poll "$WAIT_S" more_lines "$dir/client-n3.out" '^granted$' "${n_granted:-0}" ||
	fail "node 3's request in hung4 was not granted without node 1"
[ "$(fences_of 1)" = $((f1 + 1)) ] || fail "node 1 fenced $(fences_of 1) times in all, not $((f1 + 1)): $(cat "$dir/fence.log")"
[ "$(fences_of 2)" = "$f2" ] && [ "$(fences_of 3)" = "$f3" ] ||
	fail "a node whose dlmd runs was fenced: $(cat "$dir/fence.log")"
grep -q "node 1 has not sent its START of a lockspace change" "$dir/n2/dlmd.out" ||
	fail "node 2 does not log why it reports node 1"
kill -CONT "$p1" 2>/dev/null
"$CLUSTER" start "$dir" 1 >/dev/null || fail "node 1 did not start again"
timeout 30 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" rejoin-1b EX \
	>"$dir/rejoin.out" 2>&1 || fail "node 1 cannot lock after restarting: $(cat "$dir/rejoin.out")"

echo "   fence.log:"
sed 's/^/     /' "$dir/fence.log"
"$CLUSTER" status "$dir" >/dev/null || fail "a daemon died: $("$CLUSTER" status "$dir")"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
