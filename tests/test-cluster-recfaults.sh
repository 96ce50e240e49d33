#!/bin/sh
# tests/test-cluster-recfaults.sh - faults that meet a recovery, on a
# 3-node tests/dlm-cluster (fence_command = dlm-cluster fence) whose
# node 3 runs dlmd short of memory on demand (tests/malloc-fail.c
# preloaded, as tests/test-cluster-malloc.sh; in a sanitizer build dlmd
# fails its engine's allocations itself), over TCP, or over SCTP on two
# networks with RECFAULTS_PROTO=sctp (tests/test-cluster-recfaults-sctp.sh).
#
# The hold (plugin/comms.c, HOLD), made as in test-cluster-malloc's B:
# dlmd's port is blocked between nodes 1 and 3 while node 1 asks for
# fresh resources, node 2 joins the lockspace (it stops on 1 and 3),
# node 3's allocations all fail, the port is unblocked: node 3's engine
# cannot keep node 1's lock messages and node 3 holds node 1.
#   A. a node dies during the hold: node 2, the joiner, is killed, and
#      fenced; the recovery without it needs node 1's messages, which
#      wait behind the held one: node 1's lockspace is not shown running
#      while they do.  Memory comes back: the held message is taken, the
#      lockspace runs with members 1 3 on both, node 1's requests end.
#   B. the held peer never resends: node 1 is killed (TCP) or its links
#      are cut (SCTP) during the hold.  Node 3 drops the hold when node
#      1's daemon leaves, while memory is still short ("dropped: its
#      daemon left"), and once memory is back the recovery (node 1
#      fenced) and node 2's join end: members 2 3.
#   C. link blips shorter than corosync's token cost nobody: the switch
#      drops node 2's frames for 0.4 s (token 600 ms; dlm-cluster blip,
#      its links stay up: a cut's carrier loss makes it longer), C1 while a
#      workload runs on all three, C2 during a recovery (node 1's next
#      recovery step fails, debug_recovery_fail, as node 2 joins again,
#      and the blip comes while node 1 backs off).  After both: corosync
#      lost no node (it may lose the token and form the ring again, with
#      the same members), nobody was fenced, node 2's join
#      ended well, the lockspace runs on 1 2 3 everywhere, and no peer is
#      left unacknowledged.  (dlm-cluster's knet timers keep even the
#      token: with DLM_CLUSTER_KNET_PING=default, corosync's own, knet
#      took node 2's link down on 4 of 10 such blips and totem lost the
#      token and formed the ring again, same members; with cuts instead
#      of blips the ring often lost node 2.)
#   D. (SCTP) UNREACH: dlmd's SCTP (UDP 9899) blocked between nodes 2 and
#      3 that corosync keeps: node 2 reports node 3 unreachable, node 3 is
#      removed and fenced once, node 2 never; 1 and 2 recover.
# In each: a workload whose checker finds no two incompatible holders
# and no lost update, every call that failed failed with ENOMEM, every
# request ended, and "dlmctl status" on node 3, short of memory or not,
# shows the hold while it lasts and none after (before ctl.c's OUT OF
# MEMORY, it gave no answer then).  A step that fails ends the test.  ~2 min.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=recfaults
NRES=8
PROTO=${RECFAULTS_PROTO:-tcp}
WORK_MS=${CLUSTER_TEST_WORK_MS:-12000}

. "$top_srcdir/tests/cluster-test-lib.sh"

# node 3's dlmd fails every allocation while $dir/malloc-all exists
short_of_memory 3 0
export DLM_CLUSTER_LOG_LEVEL=info
if [ "$PROTO" = sctp ]; then
	DLM_CLUSTER_LINKS=2
	DLM_CLUSTER_CONF_EXTRA="protocol = sctp"
	export DLM_CLUSTER_LINKS DLM_CLUSTER_CONF_EXTRA
fi
logs_first="dlmd: n3/dlmd.out, n1/dlmd.out"

logc() { # K TEXT: lines of node K's log with TEXT
	grep -c "$2" "$dir/n$1/dlmd.out" 2>/dev/null || true
}
logn() { # K TEXT N: node K's log has more than N lines with TEXT
	[ "$(logc "$1" "$2")" -gt "$3" ]
}
held_of() { # K: "held N" of node K's dlmctl status (empty: no answer)
	on "$1" "$DLMCTL" status 2>/dev/null | sed -n 's/^comms .* held \([0-9]*\) not_taken.*/\1/p'
}
held_is() { [ "$(held_of "$1")" = "$2" ]; }
running_ls() { ls_has "$1" "state running "; }

# restart K: node K back (corosync if needed, dlmd), in the lockspace
restart() {
	"$CLUSTER" start "$dir" "$1" >/dev/null || { fail "node $1 did not start"; return 1; }
	timeout 30 "$CLUSTER" exec "$dir" "$1" "$CLIENT" try "$LS" rejoin-$1 EX \
		>"$dir/rejoin.out" 2>&1 || fail "node $1 cannot lock after restarting: $(cat "$dir/rejoin.out")"
}

# hold STEP: node 3 holds node 1's messages (above); node 2's join in
# the background (joiner), node 1's requests in tries
hold() {
	for k in 1 3; do
		wait_ls $k "state running members 1 3 " "$1: not running on 1 and 3 alone" || return 1
	done
	joins=$(logc 3 "change .*joined \[2\]")
	holds=$(logc 3 "could not take a message from node 1")
	"$CLUSTER" block "$dir" 1 3 || fail "$1: cannot block 1-3"
	tries=
	for i in 1 2 3 4 5 6 7 8; do
		start_client 1 try "$LS" "fresh-$1-$i" PR
		tries="$tries $last_pid"
	done
	sleep 1		# the point: node 1's requests are sent into the cut
	"$CLUSTER" exec "$dir" 2 "$DLMCTL" join "$LS" >"$dir/join-$1.out" 2>&1 &
	joiner=$!
	holders="$joiner"
	wait_for "$WAIT_S" "$1: node 3's lockspace to stop" logn 3 "change .*joined \[2\]" "$joins"
	touch "$dir/malloc-all"
	sleep 0.5	# (node 3's lockspace stopped: what comes must be kept)
	"$CLUSTER" unblock "$dir" 1 3 || fail "$1: cannot unblock 1-3"
	wait_for 15 "$1: node 3 to hold a message of node 1" \
		logn 3 "could not take a message from node 1" "$holds" || return 1
	# dlmctl status answers with no memory (ctl.c, OUT OF MEMORY) and
	# shows the hold
	h=$(held_of 3)
	echo "   node 3 holds node 1; its dlmctl status: held ${h:-(no answer)}"
	[ "${h:-0}" -ge 1 ] || fail "$1: node 3's status does not show the hold: held ${h:-(no answer)}"
}

# memory_back STEP: node 3's allocations succeed again
memory_back() {
	rm -f "$dir/malloc-all"
	running 3 dlmd || fail "$1: node 3's dlmd is gone while memory was short"
}

# errors_enomem: every failed call of the workload failed with ENOMEM
errors_enomem() {
	cat "$dir"/logs/n*.log | awk '$1 == "E" && $4 != -12 { bad = 1 } END { exit bad }' ||
		fail "a call failed with something else than ENOMEM: $(cat "$dir"/logs/n*.log |
			awk '$1 == "E" { print $4 }' | sort | uniq -c | tr '\n' ' ')"
}

up_cluster 3 "over $PROTO"
: >"$dir/fence.log"

say "== A. node 3 holds node 1's messages, node 2 dies in the recovery"
workload "$WORK_MS" 3 1
wait_for "$WAIT_S" "the workload to be under way" workload_busy
hold A
f2=$(fences_of 2)
"$CLUSTER" kill "$dir" 2
wait_for "$WAIT_S" "node 2 to be fenced" more_lines "$dir/fence.log" "fence node 2\$" "$f2"
# node 1's recovery without node 2 waits for node 3, which holds node 1
not running_ls 1 || fail "A: node 1 shows its lockspace running while node 3 holds its messages: $(ls_line 1)"
logn 3 "held for [0-9]* ms is taken" 0 && fail "A: node 3 took the held message with no memory"
memory_back A
logn 3 "cannot record node" 0 && fail "A: node 3 lost its record of node 2's failure"
wait_for 20 "A: node 3 to take the held message" logn 3 "held for [0-9]* ms is taken" 0
for k in 1 3; do
	wait_ls $k "state running members 1 3 " "A: no recovery to members 1 3"
done
wait_pid "$joiner" "$WAIT_S"	# (its node died: it ends, either way)
holders=
for p in $tries; do
	wait_pid "$p" "$WAIT_S" || fail "A: a request of node 1 made during the hold did not end"
done
poll "$WAIT_S" held_is 3 0 || fail "A: node 3 still shows a hold: held $(held_of 3)"
wait_workload $((WORK_MS / 1000 + 40)) 3 1
errors_enomem
check "A"
[ "$(fences_of 2)" = $((f2 + 1)) ] || fail "A: node 2 fenced $(fences_of 2) times: $(cat "$dir/fence.log")"

[ $rc -eq 0 ] || exit 1
say "== B. node 3 holds node 1's messages, node 1 goes for good"
"$CLUSTER" start "$dir" 2 >/dev/null || fail "node 2 did not start again"
workload "$WORK_MS" 3
hold B
f1=$(fences_of 1)
drops=$(logc 3 "dropped: its daemon left")
if [ "$PROTO" = sctp ]; then
	"$CLUSTER" cut "$dir" 1
else
	"$CLUSTER" kill "$dir" 1
fi
# node 3 lets the hold go with node 1's daemon, memory or not
wait_for "$WAIT_S" "B: node 3 to drop node 1's held message" \
	logn 3 "held for [0-9]* ms is dropped: its daemon left" "$drops"
h=$(held_of 3)
[ "$h" = 0 ] || fail "B: node 3's status (no memory) after node 1 left: held ${h:-(no answer)}"
memory_back B
poll "$WAIT_S" held_is 3 0 || fail "B: node 3 still shows a hold after node 1 left: held $(held_of 3)"
wait_for "$WAIT_S" "node 1 to be fenced" more_lines "$dir/fence.log" "fence node 1\$" "$f1"
for k in 2 3; do
	wait_ls $k "state running members 2 3 " "B: no recovery to members 2 3"
done
wait_pid "$joiner" "$WAIT_S" || fail "B: node 2's join did not end well: $(cat "$dir/join-B.out")"
holders=
wait_workload $((WORK_MS / 1000 + 40)) 3
errors_enomem
check "B"
running 2 dlmd && running 3 dlmd || fail "B: node 2 or 3 went down"
[ "$PROTO" = sctp ] && "$CLUSTER" heal "$dir" 1
poll "$WAIT_S" not running 1 corosync || fail "B: node 1 still up"
restart 1

[ $rc -eq 0 ] || exit 1
say "== C. node 2's links blip (0.4 s, under the token) out of recovery and in one"
# lost: the nodes corosync's new rings lost so far, on all nodes (a blip
# here loses totem's token now and then, and the ring is formed again:
# with the same members, it costs nobody)
lost() { cat "$dir"/n[123]/corosync.log | grep -c "A new membership.*Members left"; }
memberships() { cat "$dir"/n[123]/corosync.log | grep -c "A new membership"; }
links_down() { cat "$dir"/n[123]/corosync.log | grep -c "link: [0-9] is down"; }
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "C: not running on all three"
done
rings=$(memberships)
losses=$(lost)
downs=$(links_down)
fences=$(grep -c . "$dir/fence.log")
# C1: out of recovery, the workload on all three
workload 4000 1 2 3
wait_for "$WAIT_S" "the workload to be under way" workload_busy
# the point: a blip shorter than corosync's token (600 ms)
"$CLUSTER" blip "$dir" 2 0.4 || fail "C1: dlm-cluster blip failed"
wait_workload 60 1 2 3
check "C1"
[ "$(lost)" = "$losses" ] ||
	fail "C1: corosync lost a node: $(grep -h "A new membership.*Members left" "$dir"/n[123]/corosync.log | tail -n 6)"
[ $rc -eq 0 ] || exit 1
# C2: node 1's next recovery step fails (debug_recovery_fail) as node 2
# joins again; node 2's links blip while node 1 backs off
on 2 "$DLMCTL" leave "$LS" >/dev/null 2>&1 || fail "C: node 2 cannot leave"
for k in 1 3; do
	wait_ls $k "state running members 1 3 " "C: not running on 1 and 3 alone"
done
workload "$WORK_MS" 3 1
wait_for "$WAIT_S" "the workload to be under way" workload_busy
backoffs=$(logc 1 "restarting it everywhere in")
on 1 "$DLMCTL" debug_recovery_fail >/dev/null 2>&1 || fail "C: debug_recovery_fail"
"$CLUSTER" exec "$dir" 2 "$DLMCTL" join "$LS" >"$dir/join-C.out" 2>&1 &
joiner=$!
holders="$joiner"
wait_for "$WAIT_S" "C: node 1's recovery with node 2 to fail and back off" \
	logn 1 "restarting it everywhere in" "$backoffs"
"$CLUSTER" blip "$dir" 2 0.4 || fail "C2: dlm-cluster blip failed"	# the point, again
wait_pid "$joiner" "$WAIT_S" || fail "C: node 2's join failed: $(cat "$dir/join-C.out")"
holders=
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "C: not all three after the blip in recovery"
done
wait_workload $((WORK_MS / 1000 + 40)) 3 1
check "C2"
# what the blips cost: nothing
[ "$(lost)" = "$losses" ] ||
	fail "C: corosync lost a node: $(grep -h "A new membership.*Members left" "$dir"/n[123]/corosync.log | tail -n 6)"
[ "$(grep -c . "$dir/fence.log")" = "$fences" ] || fail "C: a node was fenced: $(cat "$dir/fence.log")"
for k in 1 2 3; do
	running $k corosync && running $k dlmd || fail "C: node $k went down"
	poll "$WAIT_S" on $k sh -c "\"$DLMCTL\" status | grep -q '^unacked none\$'" ||
		fail "C: node $k still waits for a peer's ack: $(on $k "$DLMCTL" status | grep '^unacked')"
done
echo "   after both blips: $(($(memberships) - rings)) new ring lines (same members), $(($(links_down) - downs)) knet links taken down"

[ $rc -eq 0 ] || exit 1
if [ "$PROTO" = sctp ]; then
	say "== D. dlmd's SCTP blocked between nodes 2 and 3: one is removed"
	running 2 dlmd || { poll "$WAIT_S" not running 2 corosync; restart 2; }
	on 2 "$CLIENT" try "$LS" rejoin-2d EX >/dev/null 2>&1
	workload 30000 3
	wait_for "$WAIT_S" "the workload on node 3" workload_busy
	workload 30000 1 2
	wait_for "$WAIT_S" "the workload on nodes 1 and 2" workload_busy
	f2=$(fences_of 2)
	f3=$(fences_of 3)
	"$CLUSTER" block "$dir" 2 3 || fail "D: cannot block 2-3"
	reported() { on 2 "$DLMCTL" status | grep -q '^unreachable 3$'; }
	poll 40 reported || fail "D: node 2 does not show node 3 unreachable: $(on 2 "$DLMCTL" status)"
	poll 40 not running 3 corosync || fail "D: node 3 was not removed"
	for k in 1 2; do
		wait_ls $k "state running members 1 2 " "D: no recovery without node 3"
	done
	wait_workload 60 1 2
	check "D"
	[ "$(fences_of 3)" = $((f3 + 1)) ] || fail "D: node 3 fenced $(fences_of 3) times: $(cat "$dir/fence.log")"
	[ "$(fences_of 2)" = "$f2" ] || fail "D: node 2 was fenced: $(cat "$dir/fence.log")"
	grep -q "dlmd on nodes 2 and 3 cannot reach each other" "$dir/n1/dlmd.out" ||
		fail "D: node 1 does not log the cut pair"
	# (fenced before its corosync's exit was seen: not fenced again)
	echo "   $(grep -h "node 3 left after we fenced it" "$dir"/n[12]/dlmd.out | head -n 1)"
	"$CLUSTER" unblock "$dir" 2 3
fi

echo "   fence.log:"
sed 's/^/     /' "$dir/fence.log"
[ $rc -eq 0 ] && echo PASS
exit $rc
