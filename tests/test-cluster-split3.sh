#!/bin/sh
# tests/test-cluster-split3.sh - a three-way split that merges back
# (plugin/cluster.c, FORGIVING A SPLIT), on a 3-node tests/dlm-cluster
# under a contended workload: every node drops all the traffic it
# receives (nftables in its namespace) for SPLIT_S s, so corosync forms
# three one-node rings, none quorate, and nobody may fence; then the
# rings merge.  (tests/test-cluster-lossy.sh reached this by chance, with
# a bad network on one node: LOSSY_LOSS_A=20 LOSSY_LOSS_C=50
# LOSSY_RATE=64kbit.)  Before FORGIVING A SPLIT every node's lockspace
# then waited "fencing of us" for good and every client hung.  Now, when
# the three rings merge at once, every node forgives the other two
# (logged, status fence_forgiven), nobody is fenced or removed, and the
# workload's clients on every node end well (the requests in flight at
# the split were kept by lowcomms and resent); when two merge first, they
# hold a majority, forgive each other and fence the third.  Either way
# the checker finds no two holders and no lost update, and the lockspace
# runs on every node not fenced.  Node 1 also holds a lockspace of its
# own, "lone" (as lvmlockd's per-VG lockspaces often leave a node): the
# others record node 1's failure out of it too, and until node 1 sent a
# record of it without failures nobody was forgiven (review, split3fix).
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=split3
NRES=8
SPLIT_S=${SPLIT3_S:-6}
WORK_MS=$(( (SPLIT_S + 12) * 1000 ))
. "$top_srcdir/tests/cluster-test-lib.sh"

forgiven() { # K: node K's status fence_forgiven
	on "$1" "$DLMCTL" status | sed -n 's/.*fence_forgiven \([0-9]*\).*/\1/p'
}
forgiven_metric() { # K: node K's dlmd_fence_forgiven_total
	on "$1" "$DLMCTL" metrics 2>/dev/null |
		awk '$1 == "dlmd_fence_forgiven_total" { print $2 }'
}

up_cluster 3
on 1 "$DLMCTL" join lone >/dev/null || fail "node 1 cannot join lockspace lone"
workload "$WORK_MS" 1 2 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== every node deaf to the others for $SPLIT_S s"
split_all 1 2 3
sleep "$SPLIT_S"
merge_all 1 2 3
say "== the network is good again"
alone 1 2 3 || fail "the nodes did not split into three one-node rings"
# The rings may merge all at once (nobody fenced: each node forgives the
# other two) or two first: those two hold a majority, forgive each other
# and fence the third, whose clients die with it (the designed way out
# then, said here; any other outcome fails).
settled() { # the lockspace runs on all three again, or a node was fenced
	[ -s "$dir/fence.log" ] && return 0
	for k in 1 2 3; do
		ls_has "$k" "state running members 1 2 3 " || return 1
	done
}
poll "$WAIT_S" settled
fenced_live 1 2 3
case $fenced in
"")	say "   merged all at once: nobody fenced"
	members="1 2 3" want=3 ;;
" "[123])
	say "   two rings merged first: node$fenced fenced by them"
	members=$(echo $live) want=2 ;;
*)	fail "nodes$fenced were fenced"
	members=$(echo $live) want=2 ;;
esac
for k in $live; do
	wait_workload 90 "$k"
done
if [ $rc -ne 0 ]; then
	for k in 1 2 3; do
		echo "   node $k: $(ls_line "$k" | tr '\n' ' ')" >&2
	done
fi
check "after the three-way split"
for k in $live; do
	wait_ls "$k" "state running members $members " \
		"the lockspace does not run again on $members"
	ls_has "$k" "stalled" && fail "node $k's lockspace is stalled"
	n=$(forgiven "$k")
	[ "${n:-0}" -ge $want ] ||
		fail "node $k: status fence_forgiven is '$n', not $want or more"
	m=$(forgiven_metric "$k")
	[ "${m:-x}" = "${n:-y}" ] ||
		fail "node $k: dlmd_fence_forgiven_total is '$m', status says '$n'"
	grep -q "is forgiven" "$dir/n$k/dlmd.out" ||
		fail "node $k does not say what it forgave"
done
lone_runs() { # node 1's own lockspace runs, node 1 its only member
	on 1 "$DLMCTL" ls 2>/dev/null | grep -A1 "^name lone " |
		grep -q "state running members 1 "
}
case " $live " in
*" 1 "*) poll "$WAIT_S" lone_runs ||
		fail "node 1's lockspace lone does not run again" ;;
esac
say "   node 1: $(grep -c 'is forgiven' "$dir/n1/dlmd.out") lines on what was forgiven"
[ $rc -eq 0 ] && echo PASS
exit $rc
