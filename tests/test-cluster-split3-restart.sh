#!/bin/sh
# tests/test-cluster-split3-restart.sh - the three-way split of
# tests/test-cluster-split3.sh, with node 3's dlmd restarted while the
# nodes are apart (plugin/cluster.c, RESTARTED WHILE APART), on a 3-node
# tests/dlm-cluster under a contended workload: every node drops all the
# traffic it receives for SPLIT_S s (three one-node rings, none quorate);
# meanwhile node 3's dlmd is SIGKILLed (its workload clients live on,
# holding their locks) and started again; then the rings merge.  At the
# merge node 3 comes back node-up under another pid: the process that
# failed is gone, its clients are not, so it is not forgiven and must be
# fenced while in the view.  Before, nodes 1 and 2 forgave each other
# and waited for a view without node 3, which never came: the lockspace
# stopped for good ("wait fencing node 3").  Now node 3 is fenced (if two
# rings merge first, a majority may fence a third node too: said), every
# fenced node is started again, the lockspace runs on all three, the
# clients of the nodes never fenced end well, and the checker finds no
# two holders and no lost update.  (Seen failing so with the dlmd of
# main before split4: "wait fencing node 3 (fence_command, attempt 0)".)
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=split3r
NRES=8
SPLIT_S=${SPLIT3_S:-6}
WORK_MS=$(( (SPLIT_S + 12) * 1000 ))
. "$top_srcdir/tests/cluster-test-lib.sh"

new3_alone() { # node 3's new dlmd is up, alone in its daemon group
	sed -n '/^=== dlmd start/h; /^=== dlmd start/!H; ${x;p}' \
		"$dir/n3/dlmd.out" | grep -q "daemon group members \[3\]\$"
}

up_cluster 3
workload "$WORK_MS" 1 2 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== every node deaf to the others; node 3's dlmd restarted meanwhile"
split_all 1 2 3
poll "$WAIT_S" alone 1 2 3 || fail "the nodes did not split into three one-node rings"
old3=$(cat "$dir/n3/dlmd.launch-pid")
"$CLUSTER" kill-dlmd "$dir" 3 || fail "node 3's dlmd could not be killed"
"$CLUSTER" start-dlmd "$dir" 3 >/dev/null || fail "node 3's dlmd did not start again"
new3=$(cat "$dir/n3/dlmd.launch-pid")
[ "$old3" != "$new3" ] || fail "node 3's dlmd has the same pid"
poll "$WAIT_S" new3_alone || fail "node 3's new dlmd did not join its daemon group"
merge_all 1 2 3
say "== the network is good again"

fenced3() { f=$(fences_of 3); [ "${f:-0}" -gt 0 ]; }
if ! poll "$WAIT_S" fenced3; then
	fail "node 3 (its dlmd restarted while apart) was not fenced: $(ls_line 1 | tr '\n' ' ')"
	exit 1
fi
if grep -q "node 3 merged back after a split with another dlmd" \
	"$dir/n1/dlmd.out" "$dir/n2/dlmd.out"; then
	say "   node 3 merged back as another dlmd: fenced while in the view"
else
	say "   node 3 fenced before it merged back (a majority of two rings)"
fi
fenced_live 1 2 3
[ -n "$live" ] || fail "every node was fenced"
[ "$fenced" = " 3" ] || say "   two rings merged first: nodes$fenced fenced"
for k in $live; do
	wait_workload 90 "$k"
done
for k in $live; do
	wait_ls "$k" "state running members $(echo $live) " \
		"the lockspace does not run again on$live"
done

say "== the fenced nodes start again and rejoin"
for k in $fenced; do
	"$CLUSTER" start "$dir" "$k" >/dev/null || fail "node $k did not start"
done
workload 3000 1 2 3
for k in 1 2 3; do
	wait_ls "$k" "state running members 1 2 3 " \
		"the lockspace does not run on all three again"
	ls_has "$k" "stalled" && fail "node $k's lockspace is stalled"
done
wait_workload 90 1 2 3
check "after the three-way split with node 3's dlmd restarted"
[ $rc -eq 0 ] && echo PASS
exit $rc
