#!/bin/sh
# tests/test-cluster-repoint-faults.sh - the re-point protocol (dlm.conf
# remaster_shared = 1, core/remaster.c; issue 18) under a dlmd's death
# on a real 3-node cluster: the sibling of test-cluster-repoint.sh, which
# shows the move without faults.
#
# dlm.conf as test-cluster-repoint.sh's.  Node 1 locks res-0 first (it
# masters it).  Then one step per victim in REPOINT_VICTIMS (default
# "old new third"), each on the 3 nodes:
#   the current master M (what node 1..3's lockdump names), the mover
#   N = the next node and the third node T = the one after; T and M's own
#   client each hold res-0 in NL; N's workload makes res-0 move to N
#   and, the moment N's lockdump says N masters it, the victim's dlmd is
#   SIGKILLed: old = M, new = N, third = T.  Then:
#     - the victim is fenced and the two survivors recover (dlmctl ls
#       "state running members" of the two);
#     - N's workload (unless N died) ends well, and a new workload on
#       both survivors does: the lockspace runs again;
#     - the checker finds no violation over the whole run so far (dead
#       clients included);
#     - both survivors' lockdumps name one master of res-0, a live one;
#     - each surviving NL holder's lock is on that master (a master copy
#       of it where the holder is another node), and when the holder is
#       killed its unlock completes there; the holder's node then gets
#       res-0 in EX;
#   and the victim restarts and rejoins.
# The step "blip" kills nothing: the moment M's dlmd logs the move to N,
# N's link is cut for 0.4 s (less than corosync's 600 ms token, as
# tests/cluster-soak's "blip"), so that the move's messages (records,
# MIGRATE, N's REPOINTs and DIR_MOVE) wait in the network; either nothing
# else happens, or corosync splits and the node it leaves in the minority
# (N, or, after the merge, another one) is removed and fenced (then it is
# the victim above, restarted at the end of the step).  Either way the
# same checks: no violation, the survivors (all three, or the two left)
# name one live master, the holders' locks are there and usable.
# REPOINT_KILL_AFTER=S (seconds, by hand) kills S after N's workload has
# begun instead, wherever the move is then (it is due at the first engine
# tick that sees N's share of the window: about 1 s in).
# About 45 s here without the blip (40-57 s, 17 runs; the kill and the
# recovery take about 12 s a step); with it 60-105 s (27 runs on a
# machine shared with other clusters; every blip split corosync here).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=rpfault
NRES=1			# the workload's one resource: res-0
. "$top_srcdir/tests/cluster-test-lib.sh"

t_start=$(date +%s)
say() { echo "$* ($(( $(date +%s) - t_start )) s)"; }

export DLM_CLUSTER_CONF_EXTRA="scan_secs = 1
toss_secs = 120
remaster_secs = 1
remaster_window = 8
remaster_shared = 1"
up_cluster 3
: >"$dir/fence.log"

# dlmd_dies K: SIGKILL node K's dlmd (its clients and corosync stay, as
# after a daemon crash) and wait until the fence agent has run for it
dlmd_dies() {
	"$CLUSTER" kill-dlmd "$dir" "$1"
	wait_for "$WAIT_S" "node $1 to be fenced" \
		more_lines "$dir/fence.log" "fence node $1\$" "$2"
}

# restart K: node K back (corosync and dlmd), in the lockspace again
# with a lock of its own
restart() {
	"$CLUSTER" start "$dir" "$1" >/dev/null || { fail "node $1 did not start"; return 1; }
	rs_h=$(holds "$1")
	start_client "$1" hold "$LS" "keep-$1" PR
	wait_for "$WAIT_S" "node $1's lock after restarting" \
		more_lines "$dir/client-n$1.out" '^held' "$rs_h"
}

holds() { # K: how many "held" lines node K's clients have printed
	grep -c '^held' "$dir/client-n$1.out" 2>/dev/null
}

moves() { # N: how many moves of res-0 to node N any node's dlmd logged
	cat "$dir"/n[123]/dlmd.out 2>/dev/null | grep -c "res-0.* moves to node $1 "
}

# blip_at_move M N: in the background, the moment a dlmd logs one more
# move of res-0 to node N, cut node N's link for 0.4 s (polls of 10 ms,
# for 30 s at most); its PID in $blipper.  Any dlmd, not only M's: the
# window may first see the third node's NL request as most of the
# traffic and move res-0 there, which then moves it on to N (a
# fresh-clone run: 1 -> 3 -> 2 within a second)
blip_at_move() {
	ba_base=$(moves "$2")
	(
		i=0
		while [ "$(moves "$2")" -le "$ba_base" ] && [ $i -lt 3000 ]; do
			sleep 0.01
			i=$((i + 1))
		done
		[ $i -lt 3000 ] || exit 1
		"$CLUSTER" cut "$dir" "$2"
		sleep 0.4
		"$CLUSTER" heal "$dir" "$2"
	) &
	blipper=$!
	holders="${holders:-} $blipper"
}

say "== node 1 locks res-0 first: it masters it"
for k in 1 2 3; do
	start_client $k hold "$LS" keep-$k PR
	wait_line "$dir/client-n$k.out" held
done
timeout 20 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" res-0 EX \
	>"$dir/first.out" 2>&1 || fail "node 1 cannot lock res-0: $(cat "$dir/first.out")"
master_is 1 1 master-copy ||
	fail "node 1 does not master res-0: $(on 1 "$DLMCTL" lockdump "$LS")"

for role in ${REPOINT_VICTIMS:-old new third blip}; do
	[ "$rc" = 0 ] || break
	m=
	for k in 1 2 3; do
		m=$(master_of $k)
		[ -n "$m" ] && break
	done
	[ -n "$m" ] || { fail "no node names a master of res-0"; break; }
	n=$((m % 3 + 1))
	t=$((n % 3 + 1))
	case $role in
	old) v=$m ;;
	new) v=$n ;;
	third) v=$t ;;
	blip) v=$n ;;
	*) fail "unknown victim $role"; break ;;
	esac
	if [ $role = blip ]; then
		say "== $role: res-0 moves from node $m to node $n beside node $t's lock; node $n's link is cut for 0.4 s as it does"
	else
		say "== $role: res-0 moves from node $m to node $n beside node $t's lock; node $v's dlmd dies"
	fi
	fences=$(grep -c "fence node $v\$" "$dir/fence.log")
	all_fences=$(grep -c "fence node [123]\$" "$dir/fence.log")
	ht=$(holds $t)
	start_client $t hold "$LS" res-0 NL
	third=$last_pid
	hm=$(holds $m)
	start_client $m hold "$LS" res-0 NL
	own=$last_pid
	wait_for "$WAIT_S" "node $t's NL lock on res-0" \
		more_lines "$dir/client-n$t.out" '^held' "$ht"
	wait_for "$WAIT_S" "node $m's NL lock on res-0" \
		more_lines "$dir/client-n$m.out" '^held' "$hm"
	[ $role = blip ] && blip_at_move $m $n
	wl_clients=1 workload $((WORK_MS * 2)) $n
	if [ $role = blip ]; then
		# the blip, then time for corosync to split if it does (a
		# token and its consensus: under 1.5 s), and for the fence
		if ! wait "$blipper"; then
			fail "blip: res-0 never moved to node $n (from node $m)"
			break
		fi
		holders=$(echo "$holders" | sed "s/ $blipper\$//")
		sleep 3
		v=0
		for k in 1 2 3; do
			ls_has $k "state running members 1 2 3 " || v=x
		done
		if more_lines "$dir/fence.log" "fence node [123]\$" "$all_fences" ||
		   [ $v = x ]; then
			# corosync split: the node it left in the minority (N,
			# or another one after the merge) is removed and fenced
			wait_for "$WAIT_S" "a node to be fenced after the split" \
				more_lines "$dir/fence.log" "fence node [123]\$" "$all_fences"
			v=$(grep "fence node [123]\$" "$dir/fence.log" |
			    sed -n "$((all_fences + 1))s/.*fence node //p")
			say "   the blip split corosync: node $v was removed and fenced"
		else
			say "   the blip passed: nobody removed"
		fi
	elif [ -n "${REPOINT_KILL_AFTER:-}" ]; then
		# a fault injection point, not an assertion: the kill lands
		# before, during or after the move, which is checked by nothing
		wait_for "$WAIT_S" "node $n's workload to be under way" workload_busy
		sleep "$REPOINT_KILL_AFTER"
	else
		wait_for "$WAIT_S" "node $n to master res-0" master_is $n $n master-copy
	fi
	[ $role = blip ] || dlmd_dies $v "$fences"
	surv=
	for k in 1 2 3; do
		[ $k = $v ] || surv="$surv $k"
	done
	for k in $surv; do
		wait_ls $k "state running members$surv " "no recovery to members$surv"
	done
	if [ $v != $n ]; then
		wait_workload $((WORK_MS * 2 / 1000 + 30)) $n
	else
		for p in $(cat "$dir/wl-n$n"); do
			kill_client "$p"
		done
	fi
	workload "$WORK_MS" $surv
	wait_workload $((WORK_MS / 1000 + 30)) $surv
	check "$role: the workload across node $v's death"
	ms=
	for k in $surv; do
		ms="$ms $(master_of $k)"
	done
	set -- $ms
	lm=$1
	for mk in "$@"; do
		[ "$mk" = "$lm" ] || lm=
	done
	if [ $# != $(echo $surv | wc -w) ] || [ -z "$lm" ] || [ "$lm" = "$v" ]; then
		fail "$role: nodes$surv do not agree on a live master of res-0: '$ms'"
		continue
	fi
	for h in $m $t; do
		[ $h = $v ] && continue
		if [ $h = $m ]; then p=$own; else p=$third; fi
		kill -0 "$p" 2>/dev/null ||
			fail "$role: node $h's NL holder died: $(tail -n 2 "$dir/client-n$h.out")"
		if [ $h != "$lm" ]; then
			has_lock_of "$lm" $h ||
				fail "$role: node $lm has no lock of node $h on res-0: $(on "$lm" "$DLMCTL" lockdump "$LS")"
		fi
		kill_client "$p"
		if [ $h != "$lm" ]; then
			wait_for "$WAIT_S" "node $lm to drop node $h's lock" lacks_lock_of "$lm" $h
		fi
		timeout 20 "$CLUSTER" exec "$dir" $h "$CLIENT" try "$LS" res-0 EX \
			>"$dir/try.out" 2>&1 ||
			fail "$role: node $h cannot lock res-0: $(cat "$dir/try.out")"
	done
	for p in $own $third; do
		kill_client "$p"
	done
	[ $v = 0 ] || restart $v
	for k in 1 2 3; do
		wait_ls $k "state running members 1 2 3 " "node $v did not rejoin"
	done
done
say "== done"
exit $rc
