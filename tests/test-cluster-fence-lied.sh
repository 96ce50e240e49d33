#!/bin/sh
# tests/test-cluster-fence-lied.sh - a fence agent that lies (plugin/
# cluster.c, FENCED ALIVE), on a 3-node tests/dlm-cluster (fence_command
# = dlm-cluster fence; DIR/fence-lie has its next run exit 0 having
# killed nothing, once).
#
#   1. node 3 holds lock-0 EX; node 1 holds lock-1 EX and waits for lock-0.
#      Node 3 is cut off (its switch port down).  Nodes 1 and 2 hold the
#      majority and fence node 3: the agent lies.  They recover without
#      node 3 and grant lock-0 to node 1, while node 3's dlmd and its
#      client still run, the client believing it holds lock-0 (the two
#      holders a lying agent causes, which dlmd cannot undo).  A client
#      on node 3 asks for lock-1 PR meanwhile (node 3's lockspace is
#      stopped: it waits).
#   2. the network heals and node 3's same dlmd merges back.  Nodes 1
#      and 2 each log at crit that node 3 was counted fenced yet its
#      dlmd is back, and count it (status fence_lied, metric
#      dlmd_fence_lied_total).  Node 3's dlmd says at crit it was
#      counted dead and drops the lockspace (or, when node 1's removal
#      comes before its sync's end, stops: a forced release too,
#      without the crit line); its waiting request ends
#      (an error: the drop, or the dlmd's exit with its corosync's
#      removal; or killed by the fencing), never granted (node 1 holds
#      lock-1 EX).  Node 3 is fenced again, for real (a second run of
#      the agent kills it), and removed from the cluster once, by node 1
#      (the lowest survivor) alone.
#   3. node 3 restarts and joins; a workload on all three (on res-0 ..
#      res-3, beside the holds above) runs, and its checker finds no
#      violation.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=lied
NRES=4
. "$top_srcdir/tests/cluster-test-lib.sh"

# client K NAME ARGS...: a cluster-client on node K, its output in
# $dir/NAME.out, registered as part of node K (a fencing kills it)
client() {
	cl_k=$1 cl_name=$2
	shift 2
	"$CLUSTER" exec "$dir" "$cl_k" "$CLIENT" "$@" >"$dir/$cl_name.out" 2>&1 &
	echo $! >>"$dir/n$cl_k/clients"
	pids="$pids $!"
	eval "pid_$cl_name=\$!"
}
said() { # NAME WORD: NAME's output has a line starting with WORD
	grep -q "^$2" "$dir/$1.out" 2>/dev/null
}
wait_said() { # NAME WORD WHAT
	poll "$WAIT_S" said "$1" "$2" ||
		fail "$3: $(tail -n 3 "$dir/$1.out" 2>/dev/null)"
}
lied_count() { # K: node K's status fence_lied
	on "$1" "$DLMCTL" status | sed -n 's/.*fence_lied \([0-9]*\).*/\1/p'
}
lied_metric() { # K: node K's dlmd_fence_lied_total
	on "$1" "$DLMCTL" metrics 2>/dev/null |
		awk '$1 == "dlmd_fence_lied_total" { print $2 }'
}
lies() { grep -c "fence node 3: lied" "$dir/fence.log" 2>/dev/null || true; }
has_lie() { [ "$(lies)" -ge 1 ]; }
fenced3() { [ "$(fences_of 3)" -ge 1 ]; }
exited() { ! kill -0 "$1" 2>/dev/null; }
crit_on() { # K: node K logged FENCED ALIVE of node 3
	grep -q "node 3 was counted fenced .*the same dlmd process" \
		"$dir/n$1/dlmd.out"
}

up_cluster 3
: >"$dir/fence.log"

say "== 1. node 3 holds lock-0 EX, is cut off and 'fenced' by an agent that lies"
client 3 h3 hold "$LS" lock-0 EX
wait_said h3 held "node 3 cannot take lock-0 EX"
client 1 h1b hold "$LS" lock-1 EX
wait_said h1b held "node 1 cannot take lock-1 EX"
client 2 h2 hold "$LS" lock-2 PR
wait_said h2 held "node 2 cannot take lock-2 PR"
client 1 h1a hold "$LS" lock-0 EX
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "the lockspace does not run on all three"
done
still_waiting "$pid_h1a" 1 "node 1 got lock-0 while node 3 holds it EX"
pid3=$(cat "$dir/n3/dlmd.launch-pid")
touch "$dir/fence-lie"
"$CLUSTER" cut "$dir" 3 || fail "cannot cut node 3 off"
poll "$WAIT_S" has_lie || fail "nobody ran the (lying) agent for node 3: $(cat "$dir/fence.log")"
wait_ls 1 "state running members 1 2 " "no recovery to members 1 2 on node 1"
wait_ls 2 "state running members 1 2 " "no recovery to members 1 2 on node 2"
wait_said h1a held "node 1 was not granted lock-0 after node 3's 'fencing'"
[ "$(fences_of 3)" = 0 ] || fail "node 3 fenced for real already: $(cat "$dir/fence.log")"
kill -0 "$pid_h3" 2>/dev/null || fail "node 3's client died: the agent was to lie"
running 3 dlmd || fail "node 3's dlmd died: the agent was to lie"
say "   node 1 holds lock-0 EX, node 3's client believes it does too"
client 3 t3 try "$LS" lock-1 PR
sleep "$BLOCKED_S"	# the point: nothing is granted to it in this long
said t3 granted && fail "node 3, cut off, granted lock-1 PR beside node 1's EX"

say "== 2. the network heals: node 3's same dlmd merges back"
ring_from=$(($(wc -l <"$dir/n1/corosync.log") + 1))
"$CLUSTER" heal "$dir" 3 || fail "cannot heal node 3"
for k in 1 2; do
	poll "$WAIT_S" crit_on $k ||
		fail "node $k does not log at crit that node 3's fenced dlmd is back"
done
grep -q "node 3 was counted fenced .*pid $pid3" "$dir/n1/dlmd.out" ||
	fail "node 1's crit line does not name node 3's dlmd (pid $pid3)"
grep "node 3 was counted fenced" "$dir/n1/dlmd.out" | head -n 1 | sed 's/^/   n1: /'
for k in 1 2; do
	n=$(lied_count $k)
	[ "${n:-0}" -ge 1 ] || fail "node $k: status fence_lied is '$n', not 1 or more"
	m=$(lied_metric $k)
	[ "${m:-x}" = "${n:-y}" ] ||
		fail "node $k: dlmd_fence_lied_total is '$m', status says '$n'"
done
poll "$WAIT_S" fenced3 || fail "node 3 was not fenced again: $(cat "$dir/fence.log")"
poll "$WAIT_S" exited "$pid_t3" || fail "node 3's waiting request neither ended nor died"
said t3 granted && fail "node 3 granted lock-1 PR after the merge, beside node 1's EX"
# Node 3's dlmd drops the lockspace either way (forced: its clients
# lose their locks).  Nodes 1 and 2 act at its first message after the
# merge, node 3 at its sync's end: node 1's removal may stop node 3's
# corosync first (seen in 1 of 3 runs), and its dlmd then stops.
grep -q "lockspace $LS released (forced)" "$dir/n3/dlmd.out" ||
	fail "node 3's dlmd did not drop lockspace $LS"
if grep -q "this dlmd was counted dead" "$dir/n3/dlmd.out"; then
	grep -q "$LS: stopped -> stale (this dlmd was counted dead (FENCED ALIVE))" \
		"$dir/n3/dlmd.out" || fail "node 3 knew, yet did not drop $LS"
	say "   node 3 learned at its sync's end that it was counted dead"
elif grep -q "lost connection to corosync" "$dir/n3/dlmd.out"; then
	say "   node 3's corosync was removed before its sync's end: its dlmd stopped"
else
	fail "node 3's dlmd neither learned it was counted dead nor stopped"
fi
echo "   node 3's request: $(cat "$dir/t3.out" | tr '\n' ' ')"
poll "$WAIT_S" not running 3 dlmd || fail "node 3's dlmd survived its second fencing"
poll "$WAIT_S" exited "$pid_h3" || fail "node 3's client survived its second fencing"
[ "$(lies)" = 1 ] || fail "the agent lied $(lies) times, not once"
# one removal: a second one, sent at the same moment by the other
# survivor, reached node 3's corosync restarted after its fencing and
# stopped it (seen so before the lowest survivor alone removed)
n=$(cat "$dir/n1/dlmd.out" "$dir/n2/dlmd.out" |
	grep -c "removing node 3 from the cluster")
[ "$n" = 1 ] || fail "node 3 was removed $n times, not once"
# Node 3 restarts once the survivors' ring is without it, as a real
# reboot takes longer than that: a removal still on its way then is
# corosync's, not what this test is about.
ring_12() {
	tail -n "+$ring_from" "$dir/n1/corosync.log" |
		grep -q "\[QUORUM\] Members\[2\]: 1 2\$"
}
poll "$WAIT_S" ring_12 || fail "node 1's corosync has no ring of nodes 1 and 2"

say "== 3. node 3 restarts and joins; a workload on all three"
"$CLUSTER" start "$dir" 3 >/dev/null || fail "node 3 did not start again"
on 3 "$DLMCTL" join "$LS" >/dev/null || fail "node 3 cannot join $LS again"
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "the lockspace does not run on all three again"
done
workload "$WORK_MS" 1 2 3
wait_workload 90 1 2 3
check "after the lying agent"
[ "$(fences_of 3)" = 1 ] || fail "node 3 fenced $(fences_of 3) times, not once for real"
for k in 1 2; do
	[ "$(fences_of $k)" = 0 ] || fail "node $k was fenced"
done
echo "   fence.log:"
sed 's/^/     /' "$dir/fence.log"
[ $rc -eq 0 ] && echo PASS
exit $rc
