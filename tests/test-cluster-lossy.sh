#!/bin/sh
# tests/test-cluster-lossy.sh - a network that is bad but not cut, on a
# 3-node tests/dlm-cluster, while clients on every node contend on the
# same names and the history checker watches.  This kernel has no
# sch_netem, so the faults are what nftables and tc's tbf give, on node
# 2 (its network namespace), both ways where the tool allows:
#   a. LOSS_A % of node 2's packets dropped at random, in and out
#      (nft numgen), for PHASE_S s: corosync's and dlmd's alike;
#   b. node 2's sending squeezed through a token bucket (tbf, RATE):
#      its packets wait behind each other, a delay that grows and
#      shrinks with the load (jitter), for PHASE_S s;
#   c. LOSS_C % dropped, in and out, for PHASE_S s.
# Whatever the membership makes of it (a token lost, node 2 removed and
# fenced: said, not judged), the workload's clients on every node not
# fenced end well, the checker finds no two holders and no lost update,
# and no live node's lockspace is left stalled.  Harsher settings
# (LOSSY_LOSS_A=20 LOSSY_LOSS_C=50 LOSSY_RATE=64kbit) split all three
# nodes into singletons once, and the cluster stalled for good (the
# three-way split of plugin/cluster.c's known limits): the test fails
# then, saying what each lockspace waits for.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=lossy
NRES=8
PHASE_S=${LOSSY_PHASE_S:-5}
LOSS_A=${LOSSY_LOSS_A:-10}
LOSS_C=${LOSSY_LOSS_C:-30}
RATE=${LOSSY_RATE:-256kbit}
WORK_MS=$(( (PHASE_S * 3 + 4) * 1000 ))
. "$top_srcdir/tests/cluster-test-lib.sh"

ns2() { # CMD...: in node 2's network namespace
	nsenter --net="/run/netns/$(cat "$dir/tag")n2" "$@"
}
loss() { # PERCENT: drop that much of node 2's traffic, in and out
	ns2 nft -f - <<NFT
table inet lossy {
	chain in {
		type filter hook input priority 0; policy accept;
		numgen random mod 100 < $1 drop
	}
	chain out {
		type filter hook output priority 0; policy accept;
		numgen random mod 100 < $1 drop
	}
}
NFT
}
unloss() {
	ns2 nft delete table inet lossy
}

up_cluster 3
workload "$WORK_MS" 1 2 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== a. $LOSS_A % of node 2's packets lost, both ways, $PHASE_S s"
loss "$LOSS_A" || fail "nft cannot drop at random here (numgen)"
sleep "$PHASE_S"
unloss
say "== b. node 2 sends through a token bucket ($RATE), $PHASE_S s"
ns2 tc qdisc add dev eth0 root tbf rate "$RATE" burst 16kbit latency 1s ||
	fail "tc tbf"
sleep "$PHASE_S"
ns2 tc qdisc del dev eth0 root
say "== c. $LOSS_C % of node 2's packets lost, both ways, $PHASE_S s"
loss "$LOSS_C" || fail "nft cannot drop at random here (numgen)"
sleep "$PHASE_S"
unloss
say "== the network is good again; the workload ends"
fenced=
for k in 1 2 3; do
	f=$(fences_of $k)
	[ "${f:-0}" -gt 0 ] && fenced="$fenced $k"
done
say "   fenced:${fenced:- none}; daemon group changes seen by node 1: $(grep -c 'daemon group members' "$dir/n1/dlmd.out"), token losses: $(grep -c 'A processor failed' "$dir/n1/corosync.log")"
for k in 1 2 3; do
	case " $fenced " in *" $k "*) continue ;; esac
	wait_workload 60 "$k"
done
# what each live node's lockspace waits for, if the workload hung
if [ $rc -ne 0 ]; then
	for k in 1 2 3; do
		echo "   node $k: $(ls_line "$k" | tr '\n' ' ')" >&2
	done
fi
check "after the bad network"
for k in 1 2 3; do
	case " $fenced " in *" $k "*) continue ;; esac
	if ls_has "$k" stalled; then
		fail "node $k's lockspace is stalled: $(ls_line "$k")"
	fi
done
for k in 1 2 3; do
	say "   node $k: $(grep -c 'comms: closing connection' "$dir/n$k/dlmd.out") connections closed, $(grep -c 'unreachable' "$dir/n$k/dlmd.out") unreachable lines"
done
[ $rc -eq 0 ] && echo PASS
exit $rc
