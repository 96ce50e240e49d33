#!/bin/sh
# tests/test-cluster-split3.sh - a three-way split that merges back
# (plugin/cluster.c, FORGIVING A SPLIT), on a 3-node tests/dlm-cluster
# under a contended workload: every node drops all the traffic it
# receives (nftables in its namespace) for SPLIT_S s, so corosync forms
# three one-node rings, none quorate, and nobody may fence; then the
# rings merge.  (tests/test-cluster-lossy.sh reached this by chance, with
# a bad network on one node: LOSSY_LOSS_A=20 LOSSY_LOSS_C=50
# LOSSY_RATE=64kbit.)  Before FORGIVING A SPLIT every node's lockspace
# then waited "fencing of us" for good and every client hung.  Now every
# node forgives the other two (logged, status fence_forgiven), nobody is
# fenced or removed, the workload's clients on every node end well (the
# requests in flight at the split were kept by lowcomms and resent), the
# checker finds no two holders and no lost update, and the lockspace
# runs on all three.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=split3
NRES=8
SPLIT_S=${SPLIT3_S:-6}
WORK_MS=$(( (SPLIT_S + 12) * 1000 ))
. "$top_srcdir/tests/cluster-test-lib.sh"

deaf() { # K: node K hears nothing from the others
	nsenter --net="/run/netns/$(cat "$dir/tag")n$1" nft -f - <<NFT
table inet split3 {
	chain in {
		type filter hook input priority 0; policy drop;
		iif lo accept
	}
}
NFT
}
hears() { # K
	nsenter --net="/run/netns/$(cat "$dir/tag")n$1" \
		nft delete table inet split3
}
forgiven() { # K: node K's status fence_forgiven
	on "$1" "$DLMCTL" status | sed -n 's/.*fence_forgiven \([0-9]*\).*/\1/p'
}

up_cluster 3
workload "$WORK_MS" 1 2 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== every node deaf to the others for $SPLIT_S s"
for k in 1 2 3; do
	eval "lines$k=\$(wc -l <\"\$dir/n$k/dlmd.out\")"
done
for k in 1 2 3; do
	deaf "$k" || fail "nft cannot drop here"
done
sleep "$SPLIT_S"
for k in 1 2 3; do
	hears "$k"
done
say "== the network is good again"
split=yes
for k in 1 2 3; do
	eval "from=\$((lines$k + 1))"
	tail -n "+$from" "$dir/n$k/dlmd.out" |
		grep -q "daemon group members \[$k\]\$" || split=no
done
[ $split = yes ] || fail "the nodes did not split into three one-node rings"
for k in 1 2 3; do
	wait_workload 90 "$k"
done
if [ $rc -ne 0 ]; then
	for k in 1 2 3; do
		echo "   node $k: $(ls_line "$k" | tr '\n' ' ')" >&2
	done
fi
check "after the three-way split"
for k in 1 2 3; do
	f=$(fences_of "$k")
	[ "${f:-0}" -eq 0 ] || fail "node $k was fenced"
	wait_ls "$k" "state running members 1 2 3 " \
		"the lockspace does not run again on all three"
	ls_has "$k" "stalled" && fail "node $k's lockspace is stalled"
	n=$(forgiven "$k")
	[ "${n:-0}" -ge 3 ] || fail "node $k: status fence_forgiven is '$n'"
	grep -q "is forgiven" "$dir/n$k/dlmd.out" ||
		fail "node $k does not say what it forgave"
done
say "   node 1: $(grep -c 'is forgiven' "$dir/n1/dlmd.out") lines on what was forgiven"
[ $rc -eq 0 ] && echo PASS
exit $rc
