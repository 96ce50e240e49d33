#!/bin/sh
# tests/test-cluster-preflood.sh - lowcomms' bound on connections before
# their HELLO (lowcomms.c prehello_bound: at most 8 per address, the
# oldest silent one closed first) on a real cluster: a local user on
# node 1 floods node 2's dlmd port from node 1's address while node 1's
# dlmd connects to node 2 again and again; node 1's dlmd still gets
# through every time.
#
# tests/dlm-cluster up 2 (the cluster key on: a handshake, INIT RESP FIN,
# comes before the HELLO; fencing off).  Node 2 may not open a dlmd
# connection to node 1 (an nftables rule in node 2 drops its SYNs to
# port 21064), so every connection between the two is node 1's, to the
# port the flood hits.  Then, each wait bounded:
#   1. a workload on both nodes (their locks need each other);
#   2. as nobody on node 1, for FLOOD_S seconds: connection after
#      connection to node 2's port from node 1's address, every other one
#      sending a well-formed INIT claiming node 1 (tests/lowcomms-impostor
#      flood), 64 kept open; node 2 logs that it closed some of them;
#   3. RECONNECTS times during the flood: node 1's dlmd connections are
#      cut (ss -K in node 1), and node 1's dlmd connects to node 2 again
#      and finishes its handshake ("connected to node 2" on node 1);
#   4. the workload ends well, the checker finds no violation; how many
#      connects of node 1's dlmd it took is said (attempts beyond the
#      RECONNECTS were evicted or failed: counted, not a failure, as long
#      as each cut was followed by a connection in time).
# Needs root (namespaces, corosync, nftables, ss -K), as every cluster
# test; skips without setpriv, nft or ss.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
IMPOSTOR=$top_builddir/tests/lowcomms-impostor
LS=preflood
NRES=8
FLOOD_S=40		# the flood's length: longer than steps 2-3 need
RECONNECTS=5		# step 3's cuts
WORK_MS=${CLUSTER_TEST_WORK_MS:-30000}	# the workload: through step 3
NOBODY=65534
N1=10.213.77.1
N2=10.213.77.2
DLM_CLUSTER_FENCING=off
DLM_CLUSTER_CRYPTO=on
export DLM_CLUSTER_FENCING DLM_CLUSTER_CRYPTO

for c in setpriv nft ss; do
	command -v $c >/dev/null 2>&1 || { echo "SKIP: no $c"; exit 77; }
done
[ -x "$IMPOSTOR" ] || { echo "FAIL: $IMPOSTOR not built"; exit 1; }

. "$top_srcdir/tests/cluster-test-lib.sh"
logs_first="dlmd: n1/dlmd.out n2/dlmd.out; flood: flood.out"
flood=
# the flood is a child of ours (dlm-cluster exec, not a node's client)
after_down='[ -z "$flood" ] || { kill -KILL "$flood" 2>/dev/null; wait "$flood" 2>/dev/null; }'

up_cluster 2
cp "$IMPOSTOR" "$dir/impostor" && chmod 755 "$dir/impostor" ||
	{ fail "cannot copy the impostor"; exit 1; }
for k in 1 2; do
	grep -q "peers must prove the cluster key" "$dir/n$k/dlmd.out" ||
		{ fail "node $k's dlmd does not run with the cluster key"; exit 1; }
done
# node 2 opens no dlmd connection to node 1
on 2 nft -f - <<EOF || { fail "cannot add node 2's nftables rule"; exit 1; }
table inet preflood {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr $N1 tcp dport 21064 tcp flags syn drop
	}
}
EOF

# cut_1_2: node 1's dlmd connections (to node 2, the only peer) reset
cut_1_2() {
	on 1 ss -K -t '( dport = :21064 or sport = :21064 )' >/dev/null 2>&1
}
connected_n() { # node 1's "connected to node 2" lines
	grep -c 'connected to node 2 (outgoing' "$dir/n1/dlmd.out"
}
connects_n() { # node 1's connects to node 2
	grep -c 'connecting to node 2 at' "$dir/n1/dlmd.out"
}
evicted_n() { # node 2's closes of connections before their HELLO
	grep -c 'connections from one address before their HELLO' "$dir/n2/dlmd.out"
}

echo "== 1. a workload on both nodes"
cut_1_2
workload "$WORK_MS" 1 2
wait_for "$WAIT_S" "the workload's first locks" workload_busy || exit 1
c0=$(connected_n)
a0=$(connects_n)

echo "== 2. nobody on node 1 floods node 2's port from node 1's address"
on 1 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	"$dir/impostor" flood $N1 $N2 21064 1 2 $FLOOD_S >"$dir/flood.out" 2>&1 &
flood=$!
more_evicted() { [ "$(evicted_n)" -gt 0 ]; }
wait_for "$WAIT_S" "node 2 closing flood connections" more_evicted || exit 1

echo "== 3. node 1's dlmd connects again, $RECONNECTS times, under the flood"
more_connected() { [ "$(connected_n)" -gt "$1" ]; }
i=0
while [ $i -lt $RECONNECTS ]; do
	i=$((i + 1))
	c=$(connected_n)
	cut_1_2
	wait_for "$WAIT_S" "node 1's connection $i to node 2" more_connected "$c" || break
	kill -0 "$flood" 2>/dev/null || { fail "the flood ended before cut $i"; break; }
done
c1=$(connected_n)
a1=$(connects_n)
echo "node 1: $((a1 - a0)) connects to node 2, $((c1 - c0)) handshakes finished; node 2 closed $(evicted_n) flood connections"

echo "== 4. the workload ends well"
wait_workload $((WORK_MS / 1000 + WAIT_S)) 1 2
check "after the flood"
wait_pid "$flood" $((FLOOD_S + WAIT_S)) || fail "the flood did not end well"
flood=
grep '^impostor: flood' "$dir/flood.out"
grep -q '^impostor: flood: [1-9]' "$dir/flood.out" ||
	fail "the flood made no connection: $(tail -n 3 "$dir/flood.out")"

[ $rc -eq 0 ] && echo "PASS"
exit $rc
