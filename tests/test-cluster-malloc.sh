#!/bin/sh
# tests/test-cluster-malloc.sh - a node short of memory keeps running
# (issue 18).  On a 3-node tests/dlm-cluster, node 3's dlmd has
# tests/malloc-fail.c preloaded, which fails allocations (malloc, calloc,
# realloc) made by dlmd's own code, as a cgroup at its MemoryMax does
# (not its libraries': libqb asserts when some of its own fail, in
# qb_log_dcs_get).  Two clients on each of nodes 1 and 3 run the lock
# workload (cluster-client work) throughout.
#   A. One allocation in MALLOC_EVERY fails on node 3 while node 2 joins
#      and leaves the lockspace over and over (recoveries on 1 and 3).
#   B. The hold (plugin/comms.c, HOLD): dlmd's port is blocked between
#      nodes 1 and 3, so node 1's requests to node 3 wait in node 1's
#      queue; node 2 joins (the lockspace stops everywhere); every
#      allocation of node 3 fails; the port is unblocked: node 3's
#      stopped lockspace must keep what arrives and cannot, so the engine
#      does not take node 1's message (dlm_core_receive -ENOMEM).  dlmd
#      holds it instead of stopping (as it did): node 3 logs the hold,
#      then the warning and the stall watchdog's line; memory comes back,
#      the message is taken, the recovery ends.
# Then: node 3's dlmd still runs and the lockspace runs with members
# 1 2 3 on every node (the node stayed in the cluster); every workload
# client ended in time and every call that failed failed with ENOMEM;
# the checker finds no two incompatible holders and no lost update.  The
# numbers (allocations failed, holds) are printed.  With a sanitizer
# build, whose allocator a preloaded library cannot replace, dlmd fails
# its engine's allocations itself (plugin/engine.c, such builds only):
# the hold is the same, phase A touches the engine only.  ~80 s.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=malloctest
NRES=8
MALLOC_EVERY=${MALLOC_EVERY:-40}
WORK_MS=${CLUSTER_TEST_WORK_MS:-30000}

. "$top_srcdir/tests/cluster-test-lib.sh"

# node 3's dlmd (the one whose dlm.conf is under n3/) short of memory
short_of_memory 3 "$MALLOC_EVERY"
[ -n "$asan" ] &&
	echo "   (a sanitizer build: node 3's engine allocations fail, not all of dlmd's)"
export DLM_CLUSTER_FENCING=off
export DLM_CLUSTER_LOG_LEVEL=info
# node 1 waits on node 3's acks through phase B: not "unreachable"
export DLM_CLUSTER_CONF_EXTRA="peer_unreachable_secs = 120"
logs_first="dlmd: n3/dlmd.out"
# the library's count, written as node 3's dlmd exits
shim_count() {
	grep "^malloc-fail:" "$dir/n3/dlmd.out" | sed "s/^/   node 3: /"
}
after_down=shim_count
t0=$(date +%s)
up_cluster 3

n3count() { # TEXT: lines of node 3's log with TEXT
	grep -c "$1" "$dir/n3/dlmd.out"
}
n3log() { # TEXT [N]: node 3's log has more than N (0) lines with TEXT
	[ "$(n3count "$1")" -gt "${2:-0}" ]
}

wl_clients=2
echo "== workload on nodes 1 and 3 ($WORK_MS ms)"
# node 3's clients first: node 3 masters the resources, so node 1's
# requests travel to it
workload "$WORK_MS" 3 1
wait_for "$WAIT_S" "the workload to be under way" workload_busy

echo "== A. node 3 fails 1 allocation in $MALLOC_EVERY; node 2 joins and leaves"
touch "$dir/malloc-some"
churns=0
while [ $churns -lt 6 ]; do
	timeout 10 "$CLUSTER" exec "$dir" 2 "$DLMCTL" join "$LS" >/dev/null 2>&1
	timeout 10 "$CLUSTER" exec "$dir" 2 "$DLMCTL" leave "$LS" >/dev/null 2>&1
	churns=$((churns + 1))
done
rm -f "$dir/malloc-some"
# (nothing more to see without it: end now)
running 3 dlmd || { fail "A: node 3's dlmd is gone: $(grep -i 'out of memory\|stops' "$dir/n3/dlmd.out" | tail -n 2)"; exit 1; }

echo "== B. node 1's messages reach node 3's stopped lockspace with no memory"
joins=$(n3count "change .*joined \[2\]")
holds=$(n3count "could not take a message from node 1")
takes=$(n3count "held for [0-9]* ms is taken")
stalls=$(n3count "stalled: a message from node 1")
# the lockspace runs on 1 and 3, so that node 1's clients send to node 3
for k in 1 3; do
	wait_ls $k "state running members 1 3 " "B: lockspace not running on 1 and 3"
done
"$CLUSTER" block "$dir" 1 3 || fail "cannot block 1-3"
# and lock fresh names there: each one's directory node is 1 or 3 by
# its hash, so LOOKUPs for node 3 wait in node 1's queue (not all 8 on
# node 1: 1 in 256)
tries=
for i in 1 2 3 4 5 6 7 8; do
	start_client 1 try "$LS" "fresh-$i" PR
	tries="$tries $last_pid"
done
sleep 1
"$CLUSTER" exec "$dir" 2 "$DLMCTL" join "$LS" >"$dir/join-b.out" 2>&1 &
joiner=$!
holders="$joiner"
wait_for "$WAIT_S" "node 3's lockspace to stop" n3log "change .*joined \[2\]" "$joins"
touch "$dir/malloc-all"
sleep 0.5
"$CLUSTER" unblock "$dir" 1 3 || fail "cannot unblock 1-3"
wait_for 15 "node 3 to hold a message" n3log "could not take a message from node 1" "$holds" ||
	{ rm -f "$dir/malloc-all"; exit 1; }
wait_for 20 "the stall watchdog on node 3" n3log "stalled: a message from node 1" "$stalls"
n3log "has not been taken by the engine for" || fail "B: no warning about the held message"
running 3 dlmd || fail "B: node 3's dlmd is gone while memory was short"
rm -f "$dir/malloc-all"
wait_for 10 "node 3 to take the held message" n3log "held for [0-9]* ms is taken" "$takes"
wait_pid "$joiner" "$WAIT_S" || fail "B: node 2's join did not end"
holders=

wait_workload $((WORK_MS / 1000 + 40)) 1 3
for p in $tries; do
	wait_pid "$p" "$WAIT_S" || fail "a lock on node 1 asked for in B did not end"
done

echo "== node 3 still in the cluster"
running 3 dlmd || fail "node 3's dlmd is gone: $(grep -i 'out of memory\|cannot' "$dir/n3/dlmd.out" | tail -n 3)"
for k in 1 2 3; do
	wait_ls $k "members 1 2 3 .*" "lockspace not on all three" || true
done
echo "   node 3: $(on 3 "$DLMCTL" status 2>/dev/null | sed -n 's/^comms .*\(held [0-9]* not_taken [0-9]*\).*/\1/p')," \
	"$(grep -c 'could not take' "$dir/n3/dlmd.out") holds logged," \
	"$(grep -c 'recovery [0-9]* finished' "$dir/n3/dlmd.out") recoveries finished"

echo "== every client call ended; failures are ENOMEM only"
errs=$(cat "$dir"/logs/n*.log | awk '$1 == "E" { print $4 }' | sort | uniq -c | tr '\n' ' ')
echo "   failed calls by errno: ${errs:-none}"
cat "$dir"/logs/n*.log | awk '$1 == "E" && $4 != -12 { bad = 1 } END { exit bad }' ||
	fail "a call failed with something else than ENOMEM: $errs"
check "workload"
echo "== $(($(date +%s) - t0)) s with the cluster up"
exit "$rc"
