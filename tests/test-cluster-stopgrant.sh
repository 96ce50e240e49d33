#!/bin/sh
# tests/test-cluster-stopgrant.sh - a dlmd that stops with clients still
# connected tells none of them of a grant (plugin/client.c
# dlmd_client_fini, d_clients_closing), on a 3-node cluster
# (tests/dlm-cluster up 3, fence_command = dlm-cluster fence,
# deadlock_secs = 0).  SIGTERM is refused while lockspaces are in use,
# so a dlmd stops under its clients only when it loses corosync (or its
# engine cannot go on: out of memory).  Closing its clients then purges
# their locks one by one, and each purge grants what waited behind them:
# a waiter told of such a grant held its lock after its dlmd was gone
# and, once the others had fenced the node and recovered, beside the
# conflicting lock one of theirs took (the fresh-clone run of
# test-cluster-linkcut step 2 saw exactly that).
#
#   1. On node 2, three pairs of tests/stop-client wait on each other
#      (each holds its FIRST in EX and asks for the other's): one pair
#      waits with dlm_ls_lock_wait and its answers in the answer ring,
#      one the same with DLMD_RING=0 (answers on the socket), one with
#      dlm_ls_lock and its completion AST.  Node 2 masters all six
#      resources (checked in its lockdump), so closing either client of
#      a pair grants the other's request at once, whatever order dlmd
#      closes them in: the grant is made every time.  A PR request
#      (cluster-client try) waits behind one of them too.  Node 2's
#      corosync is SIGKILLed, fencing held back (DIR/fence-hold): node
#      2's dlmd stops.  Every request fails ("second error"), none is
#      granted, and each holder's later unlock fails too; the PR waiter
#      reports no grant.
#   2. The same stop with the master elsewhere: node 1 masters r-remote
#      (a client of node 1 holds NL on it first), node 2's client holds
#      EX on it and a request of node 1 for EX waits.  While node 2 is
#      not fenced the request must not be granted: node 2's holder is
#      alive and believes it holds EX, whatever its stopping dlmd did.
#      Then fencing may run; node 2 is fenced, the others recover, node
#      1's request is granted and node 1 takes EX on node 2's resources.
#   3. The other way into that stop: node 3's dlmd runs short of memory
#      (tests/malloc-fail.c preloaded, or its own hook in a sanitizer
#      build: cluster-test-lib.sh short_of_memory) and cannot hold an
#      AST (plugin/engine.c dlmd_cannot_hold), with corosync up.  Node 1
#      masters r-oom, node 3's client holds EX on it, node 1's request
#      waits.  600 PR requests of a node 3 client wait behind an EX of
#      another there; with every allocation failing that EX's holder is
#      killed, and the 600 grants of its purge overflow the AST queue:
#      dlmd stops.  Node 1's request must wait for node 3's fencing as
#      in step 2 (and node 3 must be fenced, once), though corosync
#      there never went.  (Node 2 is started again before: nodes 1
#      and 2 keep quorum once node 3 is fenced.)
# With ee6b64f reverted step 1 fails: one request of every pair says
# "second granted" (the ring's, the socket's and the AST's), every run.
# Step 2 failed before dlmd_client_close left a stopping dlmd's locks to
# recovery: the purge of node 2's EX told node 1, which granted its
# request at once, node 2 not fenced and its holder alive.
# Step 3 failed before a dlmd stopping under such clients left its
# lockspaces and the daemon group uncleanly: it sent its LEAVEs (or
# left the daemon group cleanly), node 1 recovered without fencing node
# 3 and granted its request at once, node 3's holder alive.
# Bounded in time (~40 s after the cluster is up); run under
# flock /work/cluster.lock.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=stopgrant
. "$top_srcdir/tests/cluster-test-lib.sh"
STOPC=$top_builddir/tests/stop-client
GO=$dir/go

# master_of_res K RES: the master of RES in node K's lockdump of $LS
master_of_res() {
	on "$1" "$DLMCTL" lockdump "$LS" 2>/dev/null |
		sed -n "s/^resource \"$2\" master \\([0-9]*\\) .*/\\1/p"
}

# waiting_n K N: node K's lockdump of $LS shows N requests waiting
waiting_n() {
	[ "$(on "$1" "$top_builddir/plugin/dlm_tool" lockdump "$LS" 2>/dev/null |
		grep -c "gr IV rq ")" -ge "$2" ]
}

# cross NAME HOW FIRST SECOND [ENV...]: a stop-client on node 2 holding
# FIRST, asking for SECOND once GO exists; its lines in $dir/NAME.out
cross() {
	c_name=$1 c_how=$2 c_first=$3 c_second=$4
	shift 4
	"$CLUSTER" exec "$dir" 2 env "$@" "$STOPC" cross "$LS" "$c_first" \
		"$c_second" "$GO" "$c_how" >"$dir/$c_name.out" 2>&1 &
	pids="$pids $!"
	crossers="$crossers $!:$c_name"
	wait_line "$dir/$c_name.out" "held $c_first"
}

# bg K NAME CMD...: CMD on node K in the background, its lines in
# $dir/NAME.out, registered as part of the node (fencing kills it)
bg() {
	k=$1 b_name=$2
	shift 2
	"$CLUSTER" exec "$dir" "$k" "$@" >"$dir/$b_name.out" 2>&1 &
	echo $! >>"$dir/n$k/clients"
	pids="$pids $!"
	last_pid=$!
}

DLM_CLUSTER_CONF_EXTRA="deadlock_secs = 0"
export DLM_CLUSTER_CONF_EXTRA
short_of_memory 3 1	# (only while $dir/malloc-all exists: step 3)
up_cluster 3
: >"$dir/fence.log"
for k in 1 2 3; do
	on $k "$DLMCTL" join "$LS" >/dev/null || fail "node $k cannot join $LS"
done
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "the lockspace is not on all three"
done

say "== 1. node 2's dlmd stops under waiting clients: nobody is told of a grant"
# step 2's resource first: node 1 masters it (its client locks it first)
start_client 1 hold "$LS" r-remote NL
wait_line "$dir/client-n1.out" held
start_client 2 hold "$LS" r-remote EX
remote_holder=$last_pid
wait_line "$dir/client-n2.out" held
crossers=
for how in ring sock async; do
	env=DLMD_RING=1
	mode=wait
	case $how in
	sock) env=DLMD_RING=0 ;;
	async) mode=async ;;
	esac
	cross $how-a $mode r-$how-a r-$how-b $env
	cross $how-b $mode r-$how-b r-$how-a $env
done
for r in r-ring-a r-ring-b r-sock-a r-sock-b r-async-a r-async-b; do
	m=$(master_of_res 2 $r)
	[ "$m" = 2 ] || fail "$r is mastered by node ${m:-none}, not node 2"
done
m=$(master_of_res 2 r-remote)
[ "$m" = 1 ] || fail "r-remote is mastered by node ${m:-none}, not node 1"
touch "$dir/fence-hold" "$GO"
# the six crossed requests, and a PR request behind r-ring-a's holder
wait_for "$WAIT_S" "node 2's six crossed requests to wait" waiting_n 2 6
"$CLUSTER" exec "$dir" 2 env DLMD_RING=0 "$CLIENT" try "$LS" r-ring-a PR \
	>"$dir/pr.out" 2>&1 &
pr=$!
pids="$pids $pr"
wait_for "$WAIT_S" "node 2's PR request to wait" waiting_n 2 7
start_client 1 try "$LS" r-remote EX
remote_waiter=$last_pid
wait_for "$WAIT_S" "node 1's request for r-remote to wait" waiting 1 r-remote
kill -KILL "$(cat "$dir/n2/corosync.pid")"
poll "$WAIT_S" not running 2 dlmd || fail "node 2's dlmd did not stop without corosync"
grep -q "lost connection to corosync" "$dir/n2/dlmd.out" ||
	fail "node 2's dlmd did not stop for the loss of corosync"
for x in $crossers; do
	p=${x%%:*}
	n=${x#*:}
	wait_pid "$p" "$WAIT_S" || fail "stop-client $n failed or hung: $(cat "$dir/$n.out")"
	grep -q "^second granted" "$dir/$n.out" &&
		fail "$n was told its request was granted by a dlmd that stopped: $(cat "$dir/$n.out")"
	grep -q "^second error" "$dir/$n.out" ||
		fail "$n: its request did not fail: $(cat "$dir/$n.out")"
	grep -q "^unlock error" "$dir/$n.out" ||
		fail "$n: the unlock of its lock did not fail: $(cat "$dir/$n.out")"
	grep -q "^done" "$dir/$n.out" || fail "$n did not end: $(cat "$dir/$n.out")"
	echo "   $n: $(grep '^second\|^unlock' "$dir/$n.out" | tr '\n' ' ')"
done
# (the PR waiter may have been granted nothing or been closed first:
# either way it says "error"; "granted" is the violation)
poll "$WAIT_S" not kill -0 "$pr" 2>/dev/null || fail "the PR waiter hangs"
grep -q "^granted" "$dir/pr.out" &&
	fail "the PR waiter was told of a grant by a dlmd that stopped"
echo "   PR waiter: $(cat "$dir/pr.out")"

say "== 2. a remote master grants nothing before node 2 is fenced"
wait_ls 1 "wait fencing node 2" "node 1 does not wait for fencing node 2"
still_waiting "$remote_waiter" 1 \
	"node 1 was granted r-remote while node 2's holder was alive and unfenced"
kill -0 "$remote_holder" 2>/dev/null || fail "node 2's holder died before fencing"
rm -f "$dir/fence-hold"
wait_pid "$remote_waiter" "$WAIT_S" || fail "node 1's request was not granted after fencing"
[ "$(fences_of 2)" = 1 ] || fail "node 2 fenced $(fences_of 2) times, not once: $(cat "$dir/fence.log")"
wait_ls 1 "state running members 1 3 " "no recovery to members 1 3"
# what node 2's clients would have held beside: node 1 takes it
for r in r-ring-a r-sock-a r-async-a; do
	timeout 30 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" $r EX \
		>"$dir/after.out" 2>&1 || fail "node 1 cannot take $r after the recovery: $(cat "$dir/after.out")"
done
# node 2 back (outside the lockspace): nodes 1 and 2 keep quorum when
# node 3 is fenced in step 3
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start again"

say "== 3. node 3's dlmd stops short of memory, corosync up: fenced first"
bg 1 oom-nl "$CLIENT" hold "$LS" r-oom NL
wait_line "$dir/oom-nl.out" held
bg 3 oom-holder "$CLIENT" hold "$LS" r-oom EX
oom_holder=$last_pid
wait_line "$dir/oom-holder.out" held
m=$(master_of_res 3 r-oom)
[ "$m" = 1 ] || fail "r-oom is mastered by node ${m:-none}, not node 1"
bg 1 oom-waiter "$CLIENT" try "$LS" r-oom EX
oom_waiter=$last_pid
wait_for "$WAIT_S" "node 1's request for r-oom to wait" waiting 1 r-oom
bg 3 burst-holder "$CLIENT" hold "$LS" burst EX
burst_holder=$last_pid
wait_line "$dir/burst-holder.out" held
bg 3 burst "$STOPC" waiters "$LS" burst 600
wait_line "$dir/burst.out" "queued 600"
wait_for "$WAIT_S" "node 3's 600 PR requests to wait" waiting_n 3 600
touch "$dir/fence-hold" "$dir/malloc-all"
sleep 0.5	# (tests/malloc-fail.c looks at the file once per 100 ms at most)
kill_client "$burst_holder"
poll "$WAIT_S" not running 3 dlmd || fail "node 3's dlmd did not stop"
rm -f "$dir/malloc-all"
grep -q "cannot hold (the reserve used up) an AST" "$dir/n3/dlmd.out" ||
	fail "node 3's dlmd did not stop for an AST it could not hold: $(tail -n 5 "$dir/n3/dlmd.out")"
grep -q "stopping while client pid .* holds or waits for locks" "$dir/n3/dlmd.out" ||
	fail "node 3's dlmd did not say it stops under clients"
wait_ls 1 "wait fencing node 3" "node 1 does not wait for fencing node 3"
still_waiting "$oom_waiter" 1 \
	"node 1 was granted r-oom while node 3's holder was alive and unfenced"
kill -0 "$oom_holder" 2>/dev/null || fail "node 3's holder died before fencing"
rm -f "$dir/fence-hold"
wait_pid "$oom_waiter" "$WAIT_S" || fail "node 1's request for r-oom was not granted after fencing"
grep -q "^granted" "$dir/oom-waiter.out" || fail "node 1's r-oom request: $(cat "$dir/oom-waiter.out")"
[ "$(fences_of 3)" = 1 ] || fail "node 3 fenced $(fences_of 3) times, not once: $(cat "$dir/fence.log")"
wait_ls 1 "state running members 1 " "no recovery to member 1 alone"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
