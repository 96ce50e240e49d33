#!/bin/sh
# tests/test-cluster-upgrade.sh - a rolling upgrade: one node of a running
# cluster runs a dlmd of another CPG protocol version than the others.
# A manual test (not in make check: it needs a second build), run as
#
#   OLD_BUILD=/path/to/old/build flock /work/cluster.lock \
#     env top_srcdir=.. top_builddir=. ../tests/run-test \
#     ../tests/test-cluster-upgrade.sh
#
# from this tree's build directory, where OLD_BUILD is the build directory
# of an older commit with another CPG protocol (e.g. 55b38af, protocol 3,
# the parent of 45cbe72 which made it 4:
#   git worktree add --detach /tmp/old-dlmd 55b38af; cd /tmp/old-dlmd;
#   autoreconf -fi; mkdir build; cd build; ../configure -q; make -j2;
#   make tests/cluster-client).
#
# What a user upgrading node by node expects: either it works, or each
# side says at once, naming both versions, that it refuses the other, and
# nothing stalls silently or grants two incompatible holders.  Both
# orders are run, on a 3-node tests/dlm-cluster:
#   A. nodes 1 and 2 new, node 3's dlmd stopped cleanly (no lockspace)
#      and started from OLD_BUILD (an old node joining a new cluster);
#   B. then node 1 and 2 hold the lockspace on: a client of node 3 asks
#      to join it (bounded wait; an error or a wait, never a grant of
#      what node 1 holds), and a new lockspace on nodes 1 and 2.
#   C. every dlmd stopped; nodes 1 and 2 started old, a client of node 1
#      holds r-up EX; node 3 started new (the first node upgraded).
# The new dlmds must log "speaks CPG protocol version OLD, we speak NEW"
# (NEW: CM_VERSION of this tree's plugin/cpgmsg.h; OLD: that of
# OLD_BUILD's source tree, or OLD_VER if set), the old one the same the
# other way round.  In C the new dlmd must stop
# by itself, saying why (cluster.c ANOTHER VERSION), and node 3 is not
# fenced.  In A the old dlmd knows no such rule: it stalls lockspace
# changes until the watchdog removes and fences node 3 (20 s; printed,
# not failed: the old code cannot be changed).
# Measured before the rule: in C too the new node 3 was fenced after
# 20 s ("has not sent its ANNOUNCE ... its dlmd does not run").
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=uptest
NRES=4
. "$top_srcdir/tests/cluster-test-lib.sh"

[ -n "${OLD_BUILD:-}" ] && [ -x "$OLD_BUILD/plugin/dlmd" ] ||
	{ echo "FAIL: set OLD_BUILD to an older build directory" >&2; rc=1; exit 1; }
# the two CPG protocol versions (plugin/cpgmsg.h, CM_VERSION)
cm_version() { # SRCDIR
	sed -n 's/^#define CM_VERSION[[:space:]][[:space:]]*\([0-9]*\).*/\1/p' \
		"$1/plugin/cpgmsg.h" 2>/dev/null | head -n 1
}
NEW_VER=$(cm_version "$top_srcdir")
OLD_SRC=$(sed -n 's/^abs_top_srcdir = //p' "$OLD_BUILD/Makefile" 2>/dev/null)
OLD_VER=${OLD_VER:-$(cm_version "${OLD_SRC:-/nonexistent}")}
[ -n "$NEW_VER" ] && [ -n "$OLD_VER" ] && [ "$NEW_VER" != "$OLD_VER" ] ||
	{ echo "FAIL: CPG protocol versions not found or equal (new '$NEW_VER', old '$OLD_VER'; set OLD_VER)" >&2; rc=1; exit 1; }
echo "   CPG protocol: old $OLD_VER, new $NEW_VER"
OLD_DLMD=$OLD_BUILD/plugin/dlmd
OLD_CLIENT=$OLD_BUILD/tests/cluster-client
OLD_DLMCTL=$OLD_BUILD/plugin/dlmctl

up_cluster 3
: >"$dir/fence.log"

say "== a lockspace on nodes 1 and 2, node 1 holds r-up EX"
start_client 1 hold "$LS" r-up EX
holder=$last_pid
wait_line "$dir/client-n1.out" held
start_client 2 hold "$LS" r-other EX
wait_line "$dir/client-n2.out" held
for k in 1 2; do
	wait_ls $k "state running members 1 2 " "the lockspace is not on 1 and 2"
done

say "== A. node 3's dlmd stopped (no lockspace), started from $OLD_DLMD"
p3=$(cat "$dir/n3/dlmd.launch-pid")
kill -TERM "$p3"
poll 20 not kill -0 "$p3" 2>/dev/null || fail "node 3's dlmd did not stop on SIGTERM"
DLMD=$OLD_DLMD "$CLUSTER" start "$dir" 3 || fail "the old dlmd did not start on node 3"
sleep 3
echo "   node 3 (old) says: $(grep -i 'protocol\|version' "$dir/n3/dlmd.out" | tail -n 3 | tr '\n' '|')"
for k in 1 2; do
	echo "   node $k (new) says: $(grep -i 'protocol version\|speaks' "$dir/n$k/dlmd.out" | tail -n 2 | tr '\n' '|')"
done
grep -q "speaks CPG protocol version $OLD_VER, we speak $NEW_VER" "$dir/n1/dlmd.out" ||
	fail "A: node 1 (new) does not name both versions"
running 3 dlmd && echo "   node 3's old dlmd runs on" || echo "   node 3's old dlmd exited"

say "== B. a client of node 3 asks to join $LS (r-up EX, held by node 1)"
(timeout 20 "$CLUSTER" exec "$dir" 3 "$OLD_CLIENT" try "$LS" r-up EX) \
	>"$dir/n3-try.out" 2>&1
echo "   node 3's try: exit $?: $(tail -n 2 "$dir/n3-try.out" | tr '\n' '|')"
grep -q granted "$dir/n3-try.out" && fail "B: node 3 (old) granted r-up EX held by node 1"
echo "   node 3 ls: $(on 3 "$OLD_DLMCTL" ls 2>&1 | head -n 3 | tr '\n' '|')"
for k in 1 2; do
	echo "   node $k ls: $(ls_line $k | tr '\n' '|')"
done

say "== B2. a new lockspace on nodes 1 and 2 while node 3 (old) is in the group"
(timeout 20 "$CLUSTER" exec "$dir" 1 "$CLIENT" try uptest2 r-a EX) >"$dir/n1-new.out" 2>&1
echo "   node 1's new lockspace: exit $?: $(tail -n 2 "$dir/n1-new.out" | tr '\n' '|')"
echo "   node 1 status: $(on 1 "$DLMCTL" status 2>&1 | grep -i 'refus\|stranger\|version\|wait' | head -n 5 | tr '\n' '|')"
echo "   fences: $(cat "$dir/fence.log")"

say "== C. the other order: nodes 1 and 2 old, node 3 new joining them"
kill_client "$holder"
for p in $pids; do kill_client "$p"; done
sleep 1
for k in 1 2 3; do
	p=$(cat "$dir/n$k/dlmd.launch-pid")
	kill -TERM "$p"
	poll 20 not kill -0 "$p" 2>/dev/null || echo "   node $k's dlmd did not stop on SIGTERM: $(tail -n 2 "$dir/n$k/dlmd.out" | tr '\n' '|')"
done
for k in 1 2 3; do
	kill -KILL "$(cat "$dir/n$k/dlmd.launch-pid")" 2>/dev/null
done
echo "   fences so far: $(cat "$dir/fence.log" | tr '\n' '|')"
fences_a=$(grep -c "fence node 3" "$dir/fence.log")
for k in 1 2; do
	DLMD=$OLD_DLMD "$CLUSTER" start "$dir" $k || fail "C: the old dlmd did not start on node $k"
done
(timeout 30 "$CLUSTER" exec "$dir" 1 "$OLD_CLIENT" hold "$LS" r-up EX) >"$dir/c-hold1.out" 2>&1 &
c_hold=$!
poll 20 grep -q held "$dir/c-hold1.out" || echo "   C: node 1's (old) client not held: $(cat "$dir/c-hold1.out")"
"$CLUSTER" start "$dir" 3 >"$dir/c-start3.out" 2>&1 ||
	echo "   C: node 3's new dlmd did not come up (it stops among old ones)"
sleep 3
echo "   node 3 (new) says: $(grep -i 'protocol version\|speaks' "$dir/n3/dlmd.out" | tail -n 2 | tr '\n' '|')"
echo "   node 1 (old) says: $(grep -i 'protocol version\|speaks' "$dir/n1/dlmd.out" | tail -n 2 | tr '\n' '|')"
(timeout 20 "$CLUSTER" exec "$dir" 3 "$CLIENT" try "$LS" r-up EX) >"$dir/c-try3.out" 2>&1
echo "   C: node 3's try: exit $?: $(tail -n 2 "$dir/c-try3.out" | tr '\n' '|')"
grep -q granted "$dir/c-try3.out" && fail "C: node 3 (new) granted r-up EX held by node 1 (old)"
echo "   node 3 ls: $(on 3 "$DLMCTL" ls 2>&1 | head -n 2 | tr '\n' '|')"
echo "   node 1 ls: $(on 1 "$OLD_DLMCTL" ls 2>&1 | head -n 2 | tr '\n' '|')"
kill "$c_hold" 2>/dev/null
echo "   fences: $(cat "$dir/fence.log" | tr '\n' '|')"
grep -q "runs dlmd with CPG protocol version $OLD_VER, we speak $NEW_VER: mixing versions is refused, and this dlmd" "$dir/n3/dlmd.out" ||
	fail "C: the new dlmd of node 3 does not say it stops among old ones"
running 3 dlmd && fail "C: the new dlmd of node 3 runs on beside the old ones"
[ "$(grep -c "fence node 3" "$dir/fence.log")" = "$fences_a" ] ||
	fail "C: node 3 was fenced for running the new dlmd"
for k in 1 2 3; do
	echo "--- node $k: errors, version, fencing, removals, exits"
	grep -h "error\|speaks\|fenc\|remov\|stop\|exit\|cannot reach" "$dir/n$k/dlmd.out" |
		grep -v debug | head -n 25
done
[ -n "${UPGRADE_KEEP:-}" ] && cp -r "$dir" "$UPGRADE_KEEP"
[ $rc -eq 0 ] && echo PASS
exit $rc
