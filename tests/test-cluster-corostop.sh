#!/bin/sh
# tests/test-cluster-corostop.sh - a node's corosync hangs (SIGSTOP: a
# VM paused, swapped out, a stuck disk write of its log) while its dlmd
# and clients run on, on a 3-node tests/dlm-cluster, a workload on every
# node contending on the same names, the history checker watching:
#   1. node 3's corosync stopped for SHORT_S s, a third of the token (3 s
#      here): the ring waits for it; nobody is removed or fenced, and
#      the workload goes on on every node.  (With the usual 600 ms token
#      of a 3-node tests/dlm-cluster, a stop of 300 ms, half of it, lost
#      the token on this loaded machine: node 3 was left out of the new
#      ring and fenced, safely (the checker found no violation), but that
#      is corosync's to judge, not dlmd's;
#   2. node 3's corosync stopped for LONG_S s, past the token: nodes 1
#      and 2 form a ring without it and fence node 3 (its dlmd, still
#      running meanwhile, never learnt it is out); the workload of nodes
#      1 and 2 ends well; the checker finds no two holders: nothing of
#      node 3's was granted elsewhere before node 3 was fenced.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=corostop
NRES=8
SHORT_S=1
LONG_S=6
DLM_CLUSTER_TOKEN_MS=3000
export DLM_CLUSTER_TOKEN_MS
WORK_MS=15000
. "$top_srcdir/tests/cluster-test-lib.sh"
cpid=
trap '[ -n "$cpid" ] && kill -CONT "$cpid" 2>/dev/null; cleanup' EXIT

up_cluster 3
workload "$WORK_MS" 1 2 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"
cpid=$(cat "$dir/n3/corosync.pid")
node3_fenced() {
	f=$(fences_of 3)
	[ "${f:-0}" -gt 0 ]
}

say "== 1. node 3's corosync stopped for $SHORT_S s"
kill -STOP "$cpid"
sleep "$SHORT_S"
kill -CONT "$cpid"
sleep 4		# past a token and a consensus after the stop
f=$(fences_of 3)
[ "${f:-0}" = 0 ] || fail "node 3 fenced after its corosync stopped for $SHORT_S s"
for k in 1 2 3; do
	running "$k" dlmd || fail "node $k's dlmd is gone after node 3's corosync stopped for $SHORT_S s"
done

say "== 2. node 3's corosync stopped for $LONG_S s"
kill -STOP "$cpid"
sleep "$LONG_S"
poll "$WAIT_S" node3_fenced ||
	fail "node 3 not fenced after its corosync stopped for $LONG_S s"
kill -CONT "$cpid" 2>/dev/null
cpid=
wait_workload 60 1 2
check "after node 3's corosync stopped"
for k in 1 2; do
	ls_has "$k" stalled && fail "node $k's lockspace is stalled: $(ls_line "$k")"
done
say "   node 1: $(grep -m 1 -o 'fencing: node 3 .*' "$dir/n1/dlmd.out")"
[ $rc -eq 0 ] && echo PASS
exit $rc
