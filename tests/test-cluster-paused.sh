#!/bin/sh
# tests/test-cluster-paused.sh - a dlmd restarted whose new life a peer
# meets before the old life's CPG leave: lowcomms' PEER RESTARTED path
# ("node 2: a new epoch ... paused") on a real 3-node tests/dlm-cluster,
# forced rather than left to a race (test-cluster-epoch sees it only
# when the race goes that way; in its runs the leave came first):
#   - a client on node 2 holds r (EX) in LS (node 2 masters r); a
#     workload runs on nodes 1 and 3;
#   - node 1's corosync is SIGSTOPped (the token is 8 s here, so the
#     ring waits for it: nobody is removed, and no CPG message is
#     delivered anywhere meanwhile), fencing is held, node 2's dlmd is
#     SIGKILLed, node 1 asks for r and node 2's dlmd is started again at
#     once: its listener is up before its CPG join, and node 1's dlmd,
#     with that request queued for the old life, reconnects to it and meets a new epoch, which it must pause (its
#     log says so), sending it nothing and taking nothing from it;
#   - node 1's corosync is continued: the old life's leave confirms the
#     restart (node 1 logs "node 2 renewed"), fencing is let go, node 2
#     is fenced; node 1's request for r is granted then, not before;
#     the workload ends well, the history checker finds no
#     two holders, and node 2's new life got nothing of its previous one.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=paused
NRES=8
STOP_S=5		# node 1's corosync stopped at most this long (< token)
DLM_CLUSTER_TOKEN_MS=8000
export DLM_CLUSTER_TOKEN_MS
. "$top_srcdir/tests/cluster-test-lib.sh"
cpid=
trap '[ -n "$cpid" ] && kill -CONT "$cpid" 2>/dev/null; cleanup' EXIT

held() { # FILE: the client writing FILE has its lock
	grep -q '^held' "$1" 2>/dev/null
}
paused_n1() { # node 1 paused node 2's new epoch
	grep -q "node 2: a new epoch" "$dir/n1/dlmd.out"
}

up_cluster 3
start_client 2 hold "$LS" r EX
poll "$WAIT_S" held "$dir/client-n2.out" || fail "node 2's client did not get its lock"
workload "$WORK_MS" 1 3
poll "$WAIT_S" workload_busy || fail "the workload did not start"

say "== node 1's corosync stopped, fencing held; node 2's dlmd killed and started again"
touch "$dir/fence-hold"
cpid=$(cat "$dir/n1/corosync.pid")
kill -STOP "$cpid"
"$CLUSTER" kill-dlmd "$dir" 2
# a request for r, which node 2 masters: queued at node 1 for the old
# life, so node 1 connects to node 2 again (the workload may have
# nothing for node 2: its resources are mastered where first locked)
start_client 1 try "$LS" r EX
tpid=$last_pid
"$CLUSTER" start "$dir" 2 >"$dir/start-n2.out" 2>&1 &
spid=$!
poll "$STOP_S" paused_n1 || fail "node 1 did not pause node 2's new epoch within $STOP_S s"
kill -CONT "$cpid"
cpid=
say "== node 1's corosync continued"
wait_pid "$spid" "$WAIT_S" || fail "node 2's dlmd did not restart: $(cat "$dir/start-n2.out")"
poll "$WAIT_S" grep -q "node 2 renewed" "$dir/n1/dlmd.out" ||
	fail "node 1 never renewed node 2 (the leave did not end the pause)"
say "   node 1: $(grep -o "node 2: a new epoch.*" "$dir/n1/dlmd.out" | head -n 1)"
say "   node 1: $(grep -o "node 2 renewed.*" "$dir/n1/dlmd.out" | head -n 1)"
kill -0 "$tpid" 2>/dev/null && ! grep -q granted "$dir/client-n1.out" ||
	fail "node 1's request for r was granted before node 2 was fenced: $(tail -n 2 "$dir/client-n1.out")"
say "== fencing let go: node 2 is fenced, the workload ends"
rm -f "$dir/fence-hold"
wait_pid "$tpid" "$WAIT_S" || fail "node 1's request for r not granted after node 2 was fenced"
wait_workload 60 1 3
check "after node 2's dlmd restarted into node 1's pause"
sed -n '/^=== dlmd start/h; /^=== dlmd start/!H; ${x;p;}' "$dir/n2/dlmd.out" \
	>"$dir/n2-last.out"
if grep -E "unknown lockspace|frames lost|resumes at" "$dir/n2-last.out" >&2; then
	fail "node 2's new dlmd got something of its previous life"
fi
[ $rc -eq 0 ] && echo PASS
exit $rc
