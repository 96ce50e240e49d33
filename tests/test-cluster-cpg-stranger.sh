#!/bin/sh
# tests/test-cluster-cpg-stranger.sh - a user whom corosync admits to CPG,
# not root, against dlmd's daemon group.
#
# corosync lets the users and groups of its uidgid use CPG (pacemaker
# adds its haclient group when it starts); CPG names their processes by
# the host's node id.  On a 2-node tests/dlm-cluster, lockspace LS runs
# with members 1 2 and node 2's client holds a lock in it.  Node 2's
# corosync is told to admit group nogroup (corosync-cmapctl, as pacemaker
# does for haclient), and tests/cpg-peer forge runs there as
# nobody:nogroup: it joins "dlmd:daemon" beside node 2's dlmd, answers
# the sync with an ANNOUNCE of no lockspace (which made it a known
# daemon), and sends a LEAVE of LS as node 2.  That was taken: node 1
# ran LS with members 1 only while node 2's dlmd held a lock in it.
# Now both dlmds drop its messages, which carry no seal of the cluster
# key (plugin/cluster.c, SEALED MESSAGES), count them (status
# cpg_unverified) and say so in a rate-limited line; having seen it join
# and never seal a message, neither takes it for a dlmd: a lockspace
# joined on both nodes while it stays runs with members 1 2 (its join
# stalled every membership change until it left); LS
# keeps members 1 2 and its event on both nodes throughout, and once
# the stranger has left, a lockspace joined on both nodes runs with
# members 1 2 (the sync ended).
#
# Then a silent-to-dlmd stranger (cpg-peer forge again) stays on node 2
# while dlmds start after it (VOUCHING, CPG protocol 4): node 1's dlmd
# is killed and started again: it cannot tell the stranger from a dlmd
# that has not spoken, node 2's dlmd vouches for the dlmds only, and
# node 1's sync ends while the stranger stays (it waited for it until
# the stranger left); then node 2's dlmd is killed and started again
# beside the stranger of its own node id: it stayed, where it stopped
# (ONE DLMD PER NODE ID took the stranger for a dlmd of node 2).  Each
# time a lockspace joined on both nodes runs with members 1 2 while the
# stranger is still there.  Needs root; the cluster is always torn
# down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
POLLS=600		# bounded waits: polls of 0.1 s
LS=stranger
NRES=2
# how long a stranger stays at most: long beside the join below (a few
# seconds), or the second one beside two dlmd restarts; each leaves as
# soon as the test has seen what it must see beside it (CPG_PEER_STOP)
PEER_S=30
PEER2_S=90

. "$top_srcdir/tests/cluster-test-lib.sh"

export DLM_CLUSTER_FENCING=off
export DLM_CLUSTER_LOG_LEVEL=info
command -v setpriv >/dev/null || { echo "SKIP: no setpriv" >&2; exit 77; }
command -v corosync-cmapctl >/dev/null ||
	{ echo "SKIP: no corosync-cmapctl" >&2; exit 77; }
up_cluster 2

event_of() { # K: node K's event of $LS
	ls_line "$1" | sed -n 's/.* event \([0-9]*\).*/\1/p' | head -n 1
}

say "== $LS on both nodes; node 2 holds a lock in it"
start_client 2 hold "$LS" r-0 EX
wait_line "$dir/client-n2.out" held
on 1 "$DLMCTL" join "$LS" >/dev/null || fail "node 1: join $LS failed"
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " "$LS does not run with members 1 2"
done
ev1=$(event_of 1)
ev2=$(event_of 2)
[ -n "$ev1" ] && [ -n "$ev2" ] || fail "no event in dlmctl ls: $(ls_line 1)"

say "== a process of nobody:nogroup on node 2 joins dlmd:daemon and forges"
on 2 corosync-cmapctl -s uidgid.gid.65534 u8 1 >/dev/null ||
	fail "cannot admit group 65534 to node 2's corosync"
mkdir -p "$dir/peer"
cp "$top_builddir/tests/cpg-peer" "$dir/peer/cpg-peer"
chmod 755 "$dir" "$dir/peer" "$dir/peer/cpg-peer"
on 2 env CPG_PEER_STOP="$dir/peer/stop-1" setpriv --reuid=65534 --regid=65534 \
	--clear-groups "$dir/peer/cpg-peer" forge $PEER_S "$LS" >"$dir/cpg-peer.out" 2>&1 &
peer=$!
poll "$WAIT_S" grep -q "sent an ANNOUNCE" "$dir/cpg-peer.out" ||
	fail "cpg-peer did not get in: $(cat "$dir/cpg-peer.out")"
for k in 1 2; do
	poll "$WAIT_S" grep -q "that did not verify dropped.* from node 2 pid" \
		"$dir/n$k/dlmd.out" ||
		fail "node $k logged no drop of the stranger's messages"
	n=$(on "$k" "$DLMCTL" status | sed -n 's/.*cpg_unverified \([0-9]*\).*/\1/p')
	[ "${n:-0}" -ge 1 ] || fail "node $k: status cpg_unverified is '$n'"
done
for k in 1 2; do
	ls_has "$k" "state running members 1 2 " ||
		fail "node $k: $LS lost node 2 to the stranger: $(ls_line "$k")"
done

say "== while it stays, a lockspace joined on both nodes runs"
LS=stranger-during
for k in 1 2; do
	on "$k" "$DLMCTL" join "$LS" >/dev/null || fail "node $k: join $LS failed"
done
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " "$LS does not run beside the stranger"
done
kill -0 "$peer" 2>/dev/null || fail "the stranger left before $LS ran"
LS=stranger
touch "$dir/peer/stop-1"	# seen beside it: it may leave (CPG_PEER_STOP)
wait_pid "$peer" $((PEER_S + 30)) || fail "cpg-peer failed: $(cat "$dir/cpg-peer.out")"

say "== the stranger left: $LS as it was, a new lockspace runs on both"
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " "$LS changed"
done
[ "$(event_of 1)" = "$ev1" ] && [ "$(event_of 2)" = "$ev2" ] ||
	fail "$LS recovered meanwhile: events $ev1 $ev2 -> $(event_of 1) $(event_of 2)"
LS=stranger-after
for k in 1 2; do
	on "$k" "$DLMCTL" join "$LS" >/dev/null || fail "node $k: join $LS failed"
done
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " "$LS does not run with members 1 2"
done

# lines of node K's dlmd.out after line N0 that match REGEX
logged_since() { # K N0 REGEX
	tail -n "+$(( $2 + 1 ))" "$dir/n$1/dlmd.out" | grep -q "$3"
}

say "== a second stranger on node 2 stays; node 1's dlmd starts again beside it"
on 2 env CPG_PEER_STOP="$dir/peer/stop-2" setpriv --reuid=65534 --regid=65534 \
	--clear-groups "$dir/peer/cpg-peer" forge $PEER2_S "$LS" >"$dir/cpg-peer2.out" 2>&1 &
peer2=$!
poll "$WAIT_S" grep -q "sent an ANNOUNCE" "$dir/cpg-peer2.out" ||
	fail "the second cpg-peer did not get in: $(cat "$dir/cpg-peer2.out")"
n0=$(wc -l <"$dir/n1/dlmd.out")
"$CLUSTER" kill-dlmd "$dir" 1 || fail "cannot kill node 1's dlmd"
"$CLUSTER" start "$dir" 1 || fail "cannot start node 1's dlmd again"
LS=stranger-newcomer
for k in 1 2; do
	on "$k" "$DLMCTL" join "$LS" >/dev/null || fail "node $k: join $LS failed"
done
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " \
		"$LS does not run after node 1's dlmd started beside a stranger"
done
logged_since 1 "$n0" "does not vouch for it: no dlmd" ||
	fail "node 1's new dlmd did not tell the stranger apart"
kill -0 "$peer2" 2>/dev/null || fail "the stranger left before $LS ran"

say "== node 2's dlmd starts again beside the stranger of its own node id"
n0=$(wc -l <"$dir/n2/dlmd.out")
"$CLUSTER" kill-dlmd "$dir" 2 || fail "cannot kill node 2's dlmd"
"$CLUSTER" start "$dir" 2 || fail "cannot start node 2's dlmd again"
LS=stranger-own-node
for k in 1 2; do
	on "$k" "$DLMCTL" join "$LS" >/dev/null || fail "node $k: join $LS failed"
done
for k in 1 2; do
	wait_ls "$k" "state running members 1 2 " \
		"$LS does not run after node 2's dlmd started beside its node's stranger"
done
running 2 dlmd || fail "node 2's new dlmd stopped beside the stranger"
logged_since 2 "$n0" "is no dlmd: we stay" ||
	fail "node 2's new dlmd did not say it stays"
if logged_since 2 "$n0" "already has a dlmd"; then
	fail "node 2's new dlmd took the stranger for a dlmd"
fi
kill -0 "$peer2" 2>/dev/null || fail "the stranger left before $LS ran"
touch "$dir/peer/stop-2"
wait_pid "$peer2" $((PEER2_S + 30)) ||
	fail "the second cpg-peer failed: $(cat "$dir/cpg-peer2.out")"
