#!/bin/sh
# tests/test-cluster-impostor.sh - issue 12's findings, replayed on a real
# cluster: an unprivileged user on node 1 connects to node 2's dlmd port
# from node 1's address and says "I am node 1"; and a host that takes over
# a dead node's address says it is that node.
#
# tests/dlm-cluster up 3 (a fresh cluster key in DIR/authkey, mode 0600,
# corosync's keyfile and dlmd's key_file; fencing off).  Then, each step
# bounded in time:
#   1. a workload on nodes 1 and 2 (tests/cluster-client work); node 3
#      holds a lock in the same lockspace;
#   2. during it, as nobody on node 1 (who cannot read the key file):
#      a. the original attack, a plaintext HELLO claiming node 1 with a new
#         epoch (tests/lowcomms-impostor hello);
#      b. the key handshake claiming node 1, without the key (it cannot
#         read the file, so it uses a random one): its FIN is refused;
#      node 2 logs why for each, and never sees "node 1 restarted";
#   3. a dlmd given a key file others may read refuses to start, saying so;
#      the lockspace has not recovered (same event, members 1 2 3);
#   4. node 3 dies (corosync and dlmd SIGKILLed); nodes 1 and 2 recover
#      the lockspace to members 1 2;
#   5. from node 3's address (its namespace, as root there, its daemons
#      dead: a host that took the address over), claiming node 3, to
#      nodes 1 and 2: a plaintext HELLO, the handshake without the key,
#      and the handshake with a wrong key (a well-formed FIN with that
#      key's MAC).  Each is refused and logged with why; neither survivor
#      ever sees node 3 prove the key again;
#   6. the workload finishes, the lockspace did not change after node 3's
#      recovery (same event, members 1 2) and the checker finds no
#      violation;
#   7. a forger that holds the key (root on node 2, claiming node 2 to
#      node 1: lowcomms-impostor forge) passes the handshake and offers
#      a HELLO with a new epoch, then an engine message for the
#      lockspace whose token clock is near UINT64_MAX (core/token.c,
#      issue 18).  Node 1 knows the real node 2's epoch, so it pauses
#      the new one (lowcomms.c, PEER RESTARTED): no HELLO back, the
#      message never reaches the engine (no clock_rejected, nothing
#      dropped), and the real node 2 is not disturbed: node 1 hears it
#      again and lifts the pause.  The lockspace is as it was and still
#      serves real clients on both nodes (the drop of node 1's queue at
#      the forger's epoch once stalled them here); the checker finds no
#      violation.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
IMPOSTOR=$top_builddir/tests/lowcomms-impostor
LS=imptest
NRES=8
# long enough to go on through every step up to 6
WORK_MS=${CLUSTER_TEST_WORK_MS:-16000}
NOBODY=65534
DLM_CLUSTER_FENCING=off
DLM_CLUSTER_CRYPTO=on
export DLM_CLUSTER_FENCING DLM_CLUSTER_CRYPTO

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (namespaces, corosync)"
	exit 77
fi
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: no setpriv (util-linux)"; exit 77; }
[ -x "$IMPOSTOR" ] || { echo "FAIL: $IMPOSTOR not built"; exit 1; }

. "$top_srcdir/tests/cluster-test-lib.sh"

ls_line() { on "$1" "$DLMCTL" ls 2>/dev/null | grep "^name $LS "; }
# on K as_nobody CMD...: CMD on node K as nobody, no groups
as_nobody="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"

up_cluster 3
# nobody must be able to run the impostor (the build tree may not be
# reachable for it), not to read the key
cp "$IMPOSTOR" "$dir/impostor" && chmod 755 "$dir/impostor" ||
	{ fail "cannot copy the impostor"; exit 1; }
for k in 1 2 3; do
	grep -q "peers must prove the cluster key" "$dir/n$k/dlmd.out" ||
		{ fail "node $k's dlmd does not run with the cluster key"; exit 1; }
done
grep -q "^ *crypto_cipher: aes256" "$dir/n1/corosync.conf" ||
	fail "corosync does not run with crypto"

echo "== 1. workload on nodes 1 and 2, node 3 holds a lock"
start_client 3 hold "$LS" n3-lock PR
holder=$last_pid
wait_ls 3 "members" "lockspace not on node 3" || exit 1
workload "$WORK_MS" 1 2
wait_ls 1 "members 1 2 3 " "lockspace not on all three nodes" || exit 1
event0=$(ls_line 1 | sed -n 's/.* event \([0-9]*\).*/\1/p')
echo "   lockspace running, event $event0"

echo "== 2. impostors on node 1, as nobody, claiming node 1"
if on 1 $as_nobody cat "$dir/authkey" >/dev/null 2>&1; then
	fail "nobody can read the cluster key"
fi
if on 1 $as_nobody "$dir/impostor" hello 10.213.77.1 10.213.77.2 21064 1 2 \
	>"$dir/impostor-hello.out" 2>&1; then
	echo "   plaintext HELLO: refused"
else
	fail "plaintext HELLO impostor: $(tail -n 1 "$dir/impostor-hello.out")"
fi
# node 2 logs at most one rejection a second (a flood must not fill the
# log): the point of this sleep is to pass that second
sleep 1.2
if on 1 $as_nobody "$dir/impostor" handshake 10.213.77.1 10.213.77.2 21064 1 2 \
	"$dir/authkey" >"$dir/impostor-hs.out" 2>&1; then
	echo "   handshake without the key: refused"
else
	fail "handshake impostor: $(tail -n 1 "$dir/impostor-hs.out")"
fi
grep -q "trying without the key" "$dir/impostor-hs.out" ||
	fail "the impostor read the key file"
both_refused() { # node 2 logged the refusals of both impostors
	grep -q "rejecting connection from 10.213.77.1:[0-9]*: peer speaks unauthenticated" "$dir/n2/dlmd.out" &&
		grep -q "rejecting connection from 10.213.77.1:[0-9]* claiming node 1: peer does not prove the cluster key" "$dir/n2/dlmd.out"
}
poll "$WAIT_S" both_refused || fail "node 2 did not log both refusals"
grep "rejecting connection" "$dir/n2/dlmd.out" | sed 's/^/   node 2: /'
if grep -q "node 1 restarted" "$dir/n2/dlmd.out"; then
	fail "node 2 took an impostor for node 1"
fi
st=$(on 2 "$DLMCTL" status 2>/dev/null | grep '^comms ')
case $st in
*" crypto key auth_failed "[1-9]*) echo "   node 2 $(echo "$st" | grep -o 'crypto.*')" ;;
*) fail "dlmctl status on node 2 does not count the refusals: $st" ;;
esac

echo "== 3. a key file others may read: dlmd does not start"
mkdir -p "$dir/bad"
cp "$dir/authkey" "$dir/authkey-open" && chmod 644 "$dir/authkey-open"
sed -e "s|^key_file = .*|key_file = $dir/authkey-open|" \
    -e "s|^socket_path = .*|socket_path = $dir/bad/dlmd.sock|" \
    -e "s|^control_socket = .*|control_socket = $dir/bad/dlmd-ctl.sock|" \
    -e "s|^pid_file = .*|pid_file = $dir/bad/dlmd.pid|" \
    "$dir/n2/dlm.conf" >"$dir/bad/dlm.conf"
if on 2 timeout 30 "$DLMD" -f -c "$dir/bad/dlm.conf" >"$dir/bad/dlmd.out" 2>&1; then
	fail "dlmd started with a key file others may read"
elif grep -q "authkey-open has mode 0644: others may read" "$dir/bad/dlmd.out"; then
	echo "   refused: $(grep -o 'key file .*' "$dir/bad/dlmd.out" | head -n 1)"
else
	fail "dlmd did not say why it refused: $(tail -n 2 "$dir/bad/dlmd.out")"
fi

for k in 1 2; do
	l=$(ls_line $k)
	case $l in
	*"members 1 2 3 "*"event $event0 "*|*"event $event0 "*"members 1 2 3 "*) ;;
	*) fail "node $k: the lockspace changed: $l" ;;
	esac
done
echo "   nodes 1 and 2: members 1 2 3, event $event0 (no recovery)"

echo "== 4. node 3 dies"
"$CLUSTER" kill "$dir" 3 || fail "cannot kill node 3"
kill_client "$holder"
for k in 1 2; do
	wait_ls $k "members 1 2 clients" "node $k did not recover the lockspace without node 3" || exit 1
done
event1=$(ls_line 1 | sed -n 's/.* event \([0-9]*\).*/\1/p')
[ "$event1" = "$event0" ] && fail "no new event after node 3 died"
echo "   nodes 1 and 2 recovered: members 1 2, event $event1"

echo "== 5. a host on node 3's address, claiming node 3"
# From here on, what the survivors log.
for k in 1 2; do
	eval "from$k=\$((\$(wc -l <"\$dir/n$k/dlmd.out") + 1))"
done
since() { eval "tail -n +\$from$1 \"\$dir/n$1/dlmd.out\""; }
three_refused() { # K: node K logged the refusals of the three rounds
	[ "$(since "$1" | grep -c "rejecting connection from 10.213.77.3:[0-9]* claiming node 3: peer does not prove the cluster key")" -ge 2 ] &&
		since "$1" | grep -q "rejecting connection from 10.213.77.3:[0-9]*: peer speaks unauthenticated"
}
head -c 256 /dev/urandom >"$dir/wrong-authkey" && chmod 600 "$dir/wrong-authkey" ||
	fail "cannot make a wrong key"
# at most one rejection a second is logged per node: a pause per round
# (the sleep's point is to pass that second)
for round in hello nokey wrongkey; do
	sleep 1.2
	for t in 1 2; do
		case $round in
		hello) args="hello 10.213.77.3 10.213.77.$t 21064 3 $t" ;;
		nokey) args="handshake 10.213.77.3 10.213.77.$t 21064 3 $t $dir/n3/no-such-key" ;;
		wrongkey) args="handshake 10.213.77.3 10.213.77.$t 21064 3 $t $dir/wrong-authkey" ;;
		esac
		out=$dir/takeover-$round-$t.out
		if on 3 "$dir/impostor" $args >"$out" 2>&1; then
			echo "   $round to node $t: refused"
		else
			fail "$round impostor to node $t: $(tail -n 1 "$out")"
		fi
	done
done
grep -q "trying without the key" "$dir/takeover-nokey-1.out" ||
	fail "the keyless impostor had a key"
grep -q "read the key file" "$dir/takeover-wrongkey-1.out" &&
grep -q "cannot check the peer's proof" "$dir/takeover-wrongkey-1.out" ||
	fail "the wrong-key impostor did not run with its own key"
for k in 1 2; do
	poll "$WAIT_S" three_refused $k || fail "node $k did not log the three refusals"
	since $k | grep "rejecting connection" | sed "s/^/   node $k: /"
	if since $k | grep -E -q "node 3 (at [^ ]* )?proved the cluster key|node 3 restarted"; then
		fail "node $k took the host on node 3's address for node 3"
	fi
done

echo "== 6. the lock traffic did not notice"
wait_workload $((WORK_MS / 1000 + 60)) 1 2
for k in 1 2; do
	l=$(ls_line $k)
	case $l in
	*"members 1 2 clients"*"event $event1 "*) ;;
	*) fail "node $k: the lockspace changed: $l" ;;
	esac
	st=$(on $k "$DLMCTL" status 2>/dev/null | grep '^comms ')
	echo "   node $k: $(echo "$st" | grep -o 'crypto.*')"
done
echo "   nodes 1 and 2: members 1 2, event $event1 (no recovery since node 3's)"
check "the whole run"

echo "== 7. a forger with the key, on node 2, claiming node 2: a new epoch, paused"
lsid=$(ls_line 1 | sed -n 's/.* id \([0-9a-f]*\) .*/\1/p')
[ -n "$lsid" ] || fail "no lockspace id in node 1's dlmctl ls"
from1=$(($(wc -l <"$dir/n1/dlmd.out") + 1))
if on 2 "$dir/impostor" forge 10.213.77.2 10.213.77.1 21064 2 1 "$dir/authkey" \
	"$lsid" >"$dir/forge.out" 2>&1; then
	fail "node 1 took the forger's epoch: $(grep -o 'sent .*' "$dir/forge.out")"
elif grep -q "the key handshake passed" "$dir/forge.out" &&
     grep -q "no HELLO back" "$dir/forge.out"; then
	echo "   forger: the key handshake passed, no HELLO back"
else
	fail "forger: $(tail -n 2 "$dir/forge.out" | tr '\n' ' ')"
fi
paused_1() { since 1 | grep -q "node 2: a new epoch [0-9a-f]* where [0-9a-f]* is known"; }
poll "$WAIT_S" paused_1 || fail "node 1 did not log the paused epoch"
since 1 | grep "node 2: a new epoch" | head -n 1 | sed 's/^.*node 2:/   node 1: node 2:/'
for k in 1 2; do
	l=$(ls_line $k)
	case $l in
	*"members 1 2 clients"*"event $event1 "*) ;;
	*) fail "node $k: the lockspace changed after the forgery: $l" ;;
	esac
done
# real clients on both nodes still get their locks (on resources
# mastered on either node: node 1 and 2 still talk)
for k in 1 2; do
	if on $k timeout 60 "$CLIENT" final "$LS" "$dir" $NRES \
		>"$dir/final-$k.out" 2>&1; then
		echo "   node $k: a client took PR on all $NRES resources"
	else
		fail "node $k: a client after the forgery: $(tail -n 1 "$dir/final-$k.out")"
	fi
done
# the real node 2 was heard again: the forger's epoch was no restart
lifted_1() { since 1 | grep -q "epoch [0-9a-f]* heard again.*pause lifted"; }
poll "$WAIT_S" lifted_1 || fail "node 1 did not lift the pause on hearing node 2"
since 1 | grep "pause lifted" | head -n 1 | sed 's/^.*node 2:/   node 1: node 2:/'
# the forged message never reached node 1's engine
if on 1 "$DLMCTL" ls 2>/dev/null | grep -q "^  clock_rejected [1-9]"; then
	fail "node 1's engine got the forged message (clock_rejected)"
fi
if since 1 | grep -q "dropped a message from node 2"; then
	fail "node 1's engine got the forged message: $(since 1 | grep "dropped a message from node 2" | head -n 1)"
fi
since 1 | grep -E "renewed|frames lost|resumes at" >&2 &&
	fail "node 1 dropped or lost frames of the real node 2"
check "after the forgery"
[ $rc -eq 0 ] && echo PASS
exit $rc
