#!/bin/sh
# tests/test-cluster-fold.sh - lone locks folded with their resources
# (core/solo.c, issue 14; dlm.conf fold_lone_locks) on a node alone in its
# lockspace, on names a node directs beside another member, and through
# the lockspace's membership changes, on a 2-node cluster:
#
#   1. Node 1 alone in the lockspace takes 2000 EX, 200 PR and 100 NL
#      locks on names of their own (tests/cluster-client many): all fold
#      (dlmd_lockspace_folded_locks, dlmctl metrics, counts 2300 exactly);
#      a conversion of one with an LVB and a second lock on another
#      unfold those two only.
#   2. Node 2 joins with EX requests on 100 of node 1's EX names: the
#      recovery unfolds those whose directory moves to node 2 and keeps
#      the rest folded (core/solo.c, "Recovery": node 1's gauge drops
#      from 2298 to about half); nothing
#      is granted while node 1 holds; node 1's 100 holders get a BAST
#      each; node 1 unlocks 20 and down-converts one: node 2 gets exactly
#      those 21; node 2 reads the LVBs node 1 wrote (down-converting a
#      lock folded until then) before and after the join; PR beside PR
#      and EX beside NL are granted at once.
#   2b. Beside node 1, node 2 takes $NS EX lone locks on names of their
#      own: all of them fold, those on names node 2 directs at once
#      (core/solo.c, "Shared lockspaces"), the others once node 1's
#      directory answered their lookup ("Names other nodes direct",
#      session 17; the gauge exactly $NS).  Node 1 asks EX on all of them:
#      each LOOKUP or REQUEST unfolds its name (the gauge back to 0), nothing is
#      granted while node 2 holds, node 2's holders get a BAST each;
#      node 2 unlocks them: node 1 gets all $NS.
#   3. Node 2 leaves: node 1 is alone again; the leave unfolds nothing
#      (the gauge as before it); new lone locks fold again (the gauge
#      counts exactly them more), the old ones, unfolded, still block,
#      convert and unlock as locks.
#   4. The history checker across all of it: the workload (VALBLK, never
#      folded) and a workload without VALBLK (its locks fold while node 1
#      is alone) run before, across and after the join and the leave,
#      and the holds of the 'many' clients on the first 64 names are
#      checked too: no overlap of incompatible holds, no lost update.
#   5. Node 1 alone folds 300 EX on k-*; node 2 joins with EX requests
#      on k-0..49 (the join unfolds those whose directory moves, their
#      LOOKUPs the others); node 1's dlmd is killed
#      (dlm-cluster kill-dlmd: its client lives on, holding): node 2
#      grants nothing while node 1 is unfenced (fencing held), then
#      fences it and recovers: its 50 waiters are granted, it masters
#      every k-* name, and alone it takes the other 250 at once, folded.
#   6. The reverse: node 1 restarts and joins (its locks beside node 2's
#      fold only on the names it directs), waits for node 2's k-* holds;
#      node 2's dlmd is killed: nothing granted before node 2 is fenced,
#      then all 300; node 1, alone again, folds new lone locks again and
#      keeps its folded j-* folded through node 2's death.
#   A dump (dlmctl lockdump) of node 1 alone shows the folded locks and
#   leaves them folded (step 1).
# Two nodes with two_node quorum: the survivor of a node killed keeps
# quorum and fences it.
# Seen failing with the unfold at a recovery start taken out
# (core/recover.c dlm_core_ls_start): node 2 was granted EX at once on all
# 100 of node 1's folded EX names, node 1 got no BAST, node 2 read the
# LVB written before the join as empty, the checker found 64 overlapping
# EX holds; with the unfold before a message (core/ls.c) taken out too,
# 54 of 100 granted and 33 overlaps.  Step 2b fails on main (nothing
# folds beside another member); with the unfold before a lock message
# naming the resource taken out (core/solo.c dlm_solo_unfold_msg), node
# 2's gauge stayed at 100, only 100 of its 200 holders got a BAST, node
# 1 was granted EX at once on the 100 names node 2 had folded, and the
# checker found 28 overlaps on s-0..63 and 13 in the workload without
# VALBLK (session 16).  The gauge went to 0 even then
# (names unfold later, too late): it shows that the fold happened, the
# locks' behaviour that the unfold did.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=fold
NRES=4
. "$top_srcdir/tests/cluster-test-lib.sh"

NEX=2000
NPR=200
NNL=100
NW=100		# node 2's EX waiters: f-0 .. f-99
NFREE=20	# of them node 1 unlocks: f-0 .. f-19
NNEW=500	# folded after the leave
NS=200		# node 2's lone locks beside node 1: s-0 .. s-199

export DLM_CLUSTER_QUORUM="two_node: 1"
up_cluster 2 "with two_node"
: >"$dir/fence.log"
for d in fw m-f m-p m-n m-g m-s m-k m-j m-g2; do
	mkdir -p "$dir/$d/logs" "$dir/$d/counters"
	chmod 777 "$dir/$d" "$dir/$d/logs" "$dir/$d/counters"
done

# folded K: node K's dlmd_lockspace_folded_locks of $LS (empty: none)
folded() {
	on "$1" "$DLMCTL" metrics 2>/dev/null |
		sed -n "s/^dlmd_lockspace_folded_locks{lockspace=\"$LS\"} //p"
}
folded_is() { [ "$(folded "$1")" = "$2" ]; }
# wait_folded K N WHAT
wait_folded() {
	poll "$WAIT_S" folded_is "$1" "$2" ||
		fail "node $1: $3: folded_locks $(folded "$1"), not $2"
}
folded_below() { f=$(folded "$1"); [ -n "$f" ] && [ "$f" -lt "$2" ]; }
folded_above() { f=$(folded "$1"); [ -n "$f" ] && [ "$f" -gt "$2" ]; }

# start_many K NAME PREFIX FROM TO MODE: a 'many' client on node K, told
# what to do through $dir/NAME.cmd, answering in $dir/NAME.out, its holds
# of PREFIX-0..63 logged for the checker in $dir/m-PREFIX
start_many() {
	k=$1
	: >"$dir/$2.cmd"
	"$CLUSTER" exec "$dir" "$k" "$CLIENT" many "$LS" "$dir/m-$3" "$3" "$4" \
		"$5" "$6" "$dir/$2.cmd" >"$dir/$2.out" 2>&1 &
	echo $! >>"$dir/n$k/clients"
	pids="$pids $!"
	eval "pid_$2=\$!"
}

# ask NAME COMMAND ANSWER: the command, and its answer's line (the last
# starting with the answer's first word) must start with ANSWER
ask() {
	w=${3%% *}
	n=$(grep -c "^$w" "$dir/$1.out")
	echo "$2" >>"$dir/$1.cmd"
	poll "$WAIT_S" more_lines "$dir/$1.out" "^$w" "$n" ||
		{ fail "$1: no answer to '$2': $(tail -n 3 "$dir/$1.out")"; return 1; }
	got=$(grep "^$w" "$dir/$1.out" | tail -n 1)
	case $got in
	"$3"*) ;;
	*) fail "$1: '$2' answered '$got', not '$3'" ;;
	esac
}

# basts_are NAME N: NAME's locks that got a BAST are N
basts_are() {
	n=$(grep -c "^basts" "$dir/$1.out")
	echo basts >>"$dir/$1.cmd"
	poll 30 more_lines "$dir/$1.out" "^basts" "$n" &&
		[ "$(grep "^basts" "$dir/$1.out" | tail -n 1)" = "basts $2" ]
}

granted_set() { # NAME: the indexes granted to NAME, sorted
	sed -n 's/^granted //p' "$dir/$1.out" | sort -n | tr '\n' ' '
}

# all_basted NAME N WHO: every one of NAME's N EX holders (node WHO's)
# got a BAST, within 60 tries
all_basted() {
	i=0
	until basts_are "$1" "$2"; do
		i=$((i + 1))
		[ $i -ge 60 ] && break
		sleep 0.5
	done
	[ $i -lt 60 ] ||
		fail "node $3's EX holders did not all get a BAST: $(grep "^basts" "$dir/$1.out" | tail -n 1)"
}

# none_granted NAME WHAT: for BLOCKED_S (the point of the step: for this
# long nothing may be granted) nothing is granted to NAME; else WHAT
none_granted() {
	sleep "$BLOCKED_S"
	[ -z "$(granted_set "$1")" ] || fail "$2: $(granted_set "$1")"
}

# quit NAME...: each 'many' client quits and ends
quit() {
	for c in "$@"; do
		ask "$c" quit done
	done
	for c in "$@"; do
		eval "p=\$pid_$c"
		wait_pid "$p" 60 || fail "client $c did not end"
	done
}

# dlmd_dies K OTHER: node K's dlmd is killed with its fencing held back
# ($dir/fence-hold); node OTHER waits for fencing it
dlmd_dies() {
	touch "$dir/fence-hold"
	"$CLUSTER" kill-dlmd "$dir" "$1" || exit 1
	wait_ls "$2" "wait fencing node $1" "node $2 does not wait for fencing node $1" || exit 1
}

# fenced K NAME N: node K's fencing let go; NAME's N locks that waited
# for it are held, and node K was fenced
fenced() {
	rm -f "$dir/fence-hold"
	wait_line "$dir/$2.out" "held $3" || exit 1
	grep -q "fence node $1\$" "$dir/fence.log" || fail "node $1 was not fenced: $(cat "$dir/fence.log")"
}

# workloads MS NODES...: the checked workload (VALBLK, res-0..3, in $dir)
# and one without VALBLK (res-0..63, in $dir/fw) on each node, for MS
workloads() {
	ms=$1
	shift
	workload "$ms" "$@"
	for k in "$@"; do
		start_client "$k" workfold "$LS" "$dir/fw" 64 "$ms" "${k}9"
		echo "$last_pid" >>"$dir/wl-n$k"
	done
}

check_dir() { # DIR NRES WHAT
	if ! "$CLIENT" check "$1" "$2" >"$dir/check.out" 2>&1; then
		fail "$3: checker: $(grep -c VIOLATION "$dir/check.out") violations"
		head -n 20 "$dir/check.out" >&2
	fi
	echo "   $3: $(tail -n 1 "$dir/check.out")"
}

say "== 1. node 1 alone: $NEX EX, $NPR PR, $NNL NL lone locks fold"
start_many 1 mex f 0 $NEX EX
start_many 1 mpr p 0 $NPR PR
start_many 1 mnl n 0 $NNL NL
wait_line "$dir/mex.out" "held $NEX"
wait_line "$dir/mpr.out" "held $NPR"
wait_line "$dir/mnl.out" "held $NNL"
wait_ls 1 "state running members 1 clients" "node 1 is not alone in the lockspace"
ls_has 2 . && fail "node 2 is in the lockspace already"
wait_folded 1 $((NEX + NPR + NNL)) "the lone locks did not fold"
# a dump shows them all, as locks, and unfolds none (review of solo.c:
# a monitor dumping every minute undid the fold for good)
n=$(on 1 "$DLMCTL" lockdump "$LS" 2>/dev/null | grep -c "^  granted ")
[ "$n" = $((NEX + NPR + NNL)) ] || fail "node 1's lockdump shows $n granted locks"
folded_is 1 $((NEX + NPR + NNL)) || fail "a lockdump unfolded lone locks: $(folded 1) left folded"
# a conversion with an LVB unfolds its lock; so does a second lock on a
# name (the try: PR beside PR, granted at once)
ask mex "convert 1001 NL pre-1001" "converted 1001 NL 0"
timeout 60 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" p-5 PR >"$dir/try.out" 2>&1 ||
	fail "a second PR on p-5 was not granted: $(cat "$dir/try.out")"
wait_folded 1 $((NEX + NPR + NNL - 2)) "a conversion and a second lock did not unfold exactly theirs"

say "== 2. node 2 joins, with EX requests on f-0..f-$((NW - 1)), under the workloads"
workloads $((WORK_MS * 3)) 1
poll "$WAIT_S" workload_busy || fail "the workload on node 1 did not start"
start_many 2 w2 f 0 $NW EX
wait_ls 1 "state running members 1 2 " "node 2 did not join"
wait_ls 2 "state running members 1 2 " "node 2 did not join (on node 2)"
# the join unfolds the lone locks whose directory moves to node 2 (about
# half of the 2298: rendezvous) and node 2's LOOKUPs those of f-0..99
# left; the rest stay folded (core/solo.c, "Recovery"); the workload
# (no VALBLK, 64 names) may fold a few more
poll "$WAIT_S" folded_below 1 $(((NEX + NPR + NNL) / 2 + 300)) ||
	fail "the join did not unfold node 1's moved locks: folded_locks $(folded 1)"
folded_above 1 300 ||
	fail "the join unfolded node 1's locks whose directory stayed: folded_locks $(folded 1)"
say "   node 1 keeps $(folded 1) of its lone locks folded through the join"
all_basted mex $NW 1
none_granted w2 "node 2 was granted EX while node 1 held it"
workloads "$WORK_MS" 2
ask mex "unlock 0 $NFREE" "unlocked 0 $NFREE $NFREE"
ask mex "convert 50 NL" "converted 50 NL 0"
ask mex "convert 1500 NL mid-1500" "converted 1500 NL 0"
want="$(seq 0 $((NFREE - 1)) | tr '\n' ' ')50 "
poll "$WAIT_S" more_lines "$dir/w2.out" "^granted" "$NFREE" ||
	fail "node 2 did not get the names node 1 let go: $(granted_set w2)"
sleep "$BLOCKED_S"	# the point: nothing else may be granted meanwhile
[ "$(granted_set w2)" = "$want" ] ||
	fail "node 2 was granted '$(granted_set w2)', not exactly '$want'"
for r in f-1001:pre-1001 f-1500:mid-1500; do
	out=$(timeout 60 "$CLUSTER" exec "$dir" 2 "$CLIENT" lvbread "$LS" "${r%%:*}" 2>&1)
	[ "$out" = "lvb ${r#*:}" ] ||
		fail "node 2 read ${r%%:*}'s LVB as '$out', not '${r#*:}'"
done
start_many 2 r2 p 0 10 PR
wait_line "$dir/r2.out" "held 10"
timeout 60 "$CLUSTER" exec "$dir" 2 "$CLIENT" try "$LS" n-7 EX >"$dir/try.out" 2>&1 ||
	fail "EX beside node 1's NL was not granted: $(cat "$dir/try.out")"
wait_workload $((WORK_MS * 3 / 1000 + 60)) 1 2
quit w2 r2

say "== 2b. beside node 1, node 2 folds its lone locks, on any name"
wait_folded 2 0 "node 2 holds folded locks before it took any"
start_many 2 ms2 s 0 $NS EX
wait_line "$dir/ms2.out" "held $NS"
wait_folded 2 $NS "not all of node 2's lone locks folded beside node 1 (those on names node 1 directs fold once their lookup is answered)"
say "   node 2 folded $(folded 2) of its $NS lone locks"
start_many 1 w1 s 0 $NS EX
poll "$WAIT_S" folded_is 2 0 ||
	fail "node 1's lookups did not unfold node 2's locks: folded_locks $(folded 2)"
all_basted ms2 $NS 2
none_granted w1 "node 1 was granted EX while node 2 held it"
ask ms2 "unlock 0 $NS" "unlocked 0 $NS $NS"
poll "$WAIT_S" more_lines "$dir/w1.out" "^granted" $((NS - 1)) ||
	fail "node 1 did not get the names node 2 let go: $(grep -c "^granted" "$dir/w1.out") of $NS"
quit w1 ms2

say "== 3. node 2 leaves: node 1 alone folds new lone locks again"
kept=$(folded 1)
on 2 "$DLMCTL" leave "$LS" >"$dir/leave.out" 2>&1 ||
	fail "node 2 cannot leave: $(cat "$dir/leave.out")"
wait_ls 1 "state running members 1 clients" "node 1 is not alone after node 2 left"
folded_is 1 "$kept" || fail "the leave changed node 1's folded locks: $(folded 1), not $kept"
start_many 1 mnew g 0 $NNEW EX
wait_line "$dir/mnew.out" "held $NNEW"
wait_folded 1 $((kept + NNEW)) "the new lone locks did not fold (exactly)"
# the old ones, unfolded, are still locks
start_client 1 try "$LS" f-70 EX
waiter=$last_pid
still_waiting "$waiter" 1 "f-70 was granted EX while node 1's old EX held it"
ask mex "unlock 70 71" "unlocked 70 71 1"
wait_pid "$waiter" 60 || fail "f-70 was not granted once unlocked"
ask mex "convert 60 PR" "converted 60 PR 0"
timeout 60 "$CLUSTER" exec "$dir" 1 "$CLIENT" try "$LS" f-60 PR >"$dir/try.out" 2>&1 ||
	fail "PR beside the old lock converted to PR was not granted: $(cat "$dir/try.out")"
ask mex "unlock 20 40" "unlocked 20 40 20"
workloads "$WORK_MS" 1
wait_workload $((WORK_MS / 1000 + 60)) 1
# (f-20..39, 60 and 70 were unfolded by node 2's LOOKUPs in step 2)
wait_folded 1 $((kept + NNEW)) "after a workload, node 1 alone does not count exactly its $NNEW new lone locks and $kept old"

say "== 4. the history checker"
quit mex mpr mnl mnew
wait_folded 1 0 "locks stay folded after their clients unlocked"
check_dir "$dir" $NRES "the workload (VALBLK)"
check_dir "$dir/fw" 64 "the workload without VALBLK (folds alone)"
for p in f p g s; do
	check_dir "$dir/m-$p" 64 "the holds of $p-0..63"
done
"$CLUSTER" status "$dir" >/dev/null || fail "a daemon died: $("$CLUSTER" status "$dir")"

NK=300		# k-*: node 1's folded EX
NKW=50		# of them node 2 waits for

say "== 5. node 1 alone folds; node 2 joins; node 1's dlmd dies, fenced: node 2 takes over"
wait_ls 1 "state running members 1 clients" "node 1 is not alone before step 5" || exit 1
start_many 1 mk k 0 $NK EX
wait_line "$dir/mk.out" "held $NK" || exit 1
wait_folded 1 $NK "node 1's lone locks on k-* did not fold" || exit 1
start_many 2 kw k 0 $NKW EX
wait_ls 2 "state running members 1 2 " "node 2 did not join again" || exit 1
# about half move to node 2 and unfold; node 2's LOOKUPs unfold those of
# k-0..49 that stayed: about 125 stay folded
poll "$WAIT_S" folded_below 1 $((NK - NKW)) ||
	fail "node 2's join did not unfold node 1's moved k-* locks: $(folded 1)"
folded_above 1 50 ||
	fail "node 2's join unfolded node 1's k-* locks whose directory stayed: $(folded 1)"
dlmd_dies 1 2
none_granted kw "node 2 was granted k-* while node 1's holder lived unfenced"
kill -0 "$pid_mk" 2>/dev/null || fail "node 1's holder died with its dlmd"
fenced 1 kw $NKW
kill -0 "$pid_mk" 2>/dev/null && fail "node 1's holder outlived its node's fencing"
wait_ls 2 "state running members 2 clients" "node 2 does not run the lockspace alone" || exit 1
start_many 2 kr k $NKW $NK EX
wait_line "$dir/kr.out" "held $((NK - NKW))" || exit 1
# node 2 masters every k-* name (the others folded: lone, node 2 alone)
n=$(on 2 "$DLMCTL" lockdump "$LS" 2>/dev/null |
	grep -c '^resource "k-[0-9]*" master 2 master-copy dir 2$')
[ "$n" = $NK ] || fail "node 2 masters $n of the $NK k-* names"
wait_folded 2 $((NK - NKW)) "node 2 alone did not fold the names node 1 held" || exit 1

NJ=100		# j-*: node 1's locks beside node 2
NJF=200		# g2-*: node 1's folded when alone again

say "== 6. node 1 back; node 2's dlmd dies, fenced: node 1 alone folds again"
"$CLUSTER" start "$dir" 1 >/dev/null || fail "node 1 did not start again"
start_many 1 jn j 0 $NJ EX
wait_line "$dir/jn.out" "held $NJ" || exit 1
wait_ls 1 "state running members 1 2 " "node 1 did not join again" || exit 1
# beside node 2, node 1 folds only the j-* names it directs (2b), which
# node 2's death (a recovery start) leaves folded (core/solo.c,
# "Recovery")
jkept=$(folded 1)
[ "${jkept:-x}" -le $NJ ] 2>/dev/null ||
	fail "node 1 folded $jkept beside node 2, of $NJ lone locks"
start_many 1 kb k 0 $NK EX
dlmd_dies 2 1
none_granted kb "node 1 was granted k-* while node 2's holders lived unfenced"
fenced 2 kb $NK
wait_ls 1 "state running members 1 clients" "node 1 does not run the lockspace alone" || exit 1
start_many 1 gn g2 0 $NJF EX
wait_line "$dir/gn.out" "held $NJF" || exit 1
# node 2's death left node 1's folded j-* folded
wait_folded 1 $((NJF + jkept)) "node 1 alone again did not fold (exactly) its new lone locks" || exit 1
ask jn "unlock 0 $NJ" "unlocked 0 $NJ $NJ"
ask kb "convert 7 NL" "converted 7 NL 0"
wait_folded 1 $NJF "unlocking j-* and converting unfolded locks left other than the $NJF new folded" || exit 1
running 1 dlmd && running 1 corosync || fail "node 1 went down: $("$CLUSTER" status "$dir")"
say "test-cluster-fold: done"
exit $rc
