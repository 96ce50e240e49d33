#!/bin/sh
# tests/test-lowcomms-sctp-netns.sh: SCTP multi-homing survives a cut link.
#
# Two network namespaces joined by TWO veth links, one subnet each
# (10.213.80.0/24 and 10.213.81.0/24).  The test addresses exist only inside
# the namespaces: the veth pairs are created there directly, and the root
# namespace gets a `prohibit` route for both subnets first, so nothing there
# can ever send to them (the routes are left in place: they only forbid).
#
# tests/lowcomms-sctp-peer runs as receiver (node 2) in one namespace and as
# sender (node 1) in the other, each with both of its addresses; lowcomms
# makes one SCTP association over both paths.  When the receiver has seen a
# quarter of the stream, the link that carries it (the primary path) is cut:
# the one whose byte counter moved most in the last 0.2 s.  Which one that
# is varies: lowcomms connects to the peer's first address first, but to
# the second when that first connect failed (the receiver not listening
# yet), and cutting the idle link tests no failover at all.  The test
# passes when every message arrives exactly once and in order, the sender
# has every one acknowledged, neither side lost its connection (the
# association failed over to the other path by itself), and the stream
# never stood still for MAX_STALL seconds.
#
# MAX_STALL bounds the failover, not the speed: after a cut, new data moves
# to the other path at the first retransmission timeout, at most 1 s
# (lowcomms/usrsctp.c, FAILOVER), and the receiver measures only time in
# which nothing at all arrived.  A slow or loaded host stretches that by
# scheduling delays, not by seconds: the failovers measured with 12 busy
# loops beside an ASan build (load 16) stood still 0.4 to 1.3 s.  Ten
# seconds is ten times the bound; a stream that stands still that long after a cut has
# lost its failover (issue 10: a minute of silence on a loaded host).  The
# receiver gives up as soon as it has stood still that long, so a failing
# run takes seconds, not the 60 s timeout.
#
# Teardown (trap) stops the two programs by PID and deletes the namespaces
# by name.  Every wait is bounded.  Exit 77 (skip) when not root or without
# ip(8) or network namespaces.
set -u

COUNT=${LC_NETNS_COUNT:-200000}
RATE=${LC_NETNS_RATE:-40000}
TIMEOUT=60		# each program's own limit, seconds
MAX_STALL=${LC_NETNS_MAX_STALL:-10}	# seconds the stream may stand still (see above)
WAIT_TICKS=600		# 0.1 s each: how long the script waits for a step
NET_A=10.213.80
NET_B=10.213.81

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (iproute2)"
PEER=${top_builddir:-.}/tests/lowcomms-sctp-peer
[ -x "$PEER" ] || fail "$PEER not built"
PEER=$(cd "$(dirname "$PEER")" && pwd)/$(basename "$PEER")

NSS=lcsctp-s-$$		# sender's namespace
NSR=lcsctp-r-$$		# receiver's namespace
TMP=$(mktemp -d /tmp/lcsctp.XXXXXX) || fail "mktemp"
SPID=
RPID=

cleanup() {
	for pid in $SPID $RPID; do
		kill "$pid" 2>/dev/null
	done
	for pid in $SPID $RPID; do
		wait "$pid" 2>/dev/null
	done
	ip netns del "$NSS" 2>/dev/null
	ip netns del "$NSR" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip route add prohibit $NET_A.0/24 2>/dev/null || true
ip route add prohibit $NET_B.0/24 2>/dev/null || true
ip netns add "$NSS" 2>/dev/null || skip "cannot create network namespaces"
ip netns add "$NSR" || fail "ip netns add $NSR"

set -e
ip link add s0 netns "$NSS" type veth peer name r0 netns "$NSR"
ip link add s1 netns "$NSS" type veth peer name r1 netns "$NSR"
for ns in "$NSS" "$NSR"; do
	ip -n "$ns" link set lo up
done
ip -n "$NSS" addr add $NET_A.1/24 dev s0
ip -n "$NSS" addr add $NET_B.1/24 dev s1
ip -n "$NSR" addr add $NET_A.2/24 dev r0
ip -n "$NSR" addr add $NET_B.2/24 dev r1
for dev in s0 s1; do ip -n "$NSS" link set $dev up; done
for dev in r0 r1; do ip -n "$NSR" link set $dev up; done
set +e

# Both links answer before the programs start (veth comes up at once, but
# IPv4 DAD-free addresses still need the link to be running).
for net in $NET_A $NET_B; do
	i=0
	until ip netns exec "$NSS" ping -c1 -W1 $net.2 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 20 ] || fail "no ping to $net.2"
		sleep 0.1
	done
done

ip netns exec "$NSR" "$PEER" recv --id 2 --addr $NET_A.2 --addr $NET_B.2 \
	--peer-id 1 --peer-addr $NET_A.1 --peer-addr $NET_B.1 \
	--count "$COUNT" --timeout $TIMEOUT --progress "$TMP/progress" \
	--max-stall $MAX_STALL \
	>"$TMP/recv.out" 2>"$TMP/recv.err" &
RPID=$!
ip netns exec "$NSS" "$PEER" send --id 1 --addr $NET_A.1 --addr $NET_B.1 \
	--peer-id 2 --peer-addr $NET_A.2 --peer-addr $NET_B.2 \
	--count "$COUNT" --rate "$RATE" --timeout $TIMEOUT \
	>"$TMP/send.out" 2>"$TMP/send.err" &
SPID=$!

# Cut the primary path (the first address) once a quarter has arrived.
i=0
got=0
while [ "$got" -lt $((COUNT / 4)) ]; do
	i=$((i + 1))
	if [ $i -gt $WAIT_TICKS ] || ! kill -0 $RPID 2>/dev/null; then
		cat "$TMP"/*.err "$TMP"/*.out
		fail "stream did not get going (received $got)"
	fi
	sleep 0.1
	got=$(cat "$TMP/progress" 2>/dev/null || echo 0)
done
tx_bytes() {
	ip netns exec "$NSS" cat /sys/class/net/$1/statistics/tx_bytes
}
a0=$(tx_bytes s0)
a1=$(tx_bytes s1)
sleep 0.2
if [ $(($(tx_bytes s0) - a0)) -ge $(($(tx_bytes s1) - a1)) ]; then
	cut=s0 other=s1 net=$NET_A
else
	cut=s1 other=s0 net=$NET_B
fi
other_before=$(tx_bytes $other)
ip -n "$NSS" link set $cut down || fail "cannot cut the link"
echo "cut $net.0/24 ($cut, the busy link) after $got of $COUNT messages"

# Both programs end by themselves (bounded by their --timeout).
i=0
while kill -0 $SPID 2>/dev/null || kill -0 $RPID 2>/dev/null; do
	i=$((i + 1))
	[ $i -le $((WAIT_TICKS + TIMEOUT * 10)) ] || fail "programs did not end"
	# A receiver that gave up on a stall ends the run.
	if ! kill -0 $RPID 2>/dev/null && grep -q stalled "$TMP/recv.out"; then
		kill $SPID 2>/dev/null
	fi
	sleep 0.1
done
wait $SPID; src=$?
wait $RPID; rrc=$?
SPID=
RPID=
other_after=$(tx_bytes $other)
cat "$TMP/send.out" "$TMP/recv.out"
! grep -q stalled "$TMP/recv.out" ||
	fail "the stream stood still for $MAX_STALL s after the cut"
# The rest of the stream (3/4 of it, 64-byte messages) went over the other.
moved=$((other_after - other_before))
echo "after the cut the other link ($other) carried $moved bytes"
[ $moved -gt $((COUNT / 2 * 64)) ] ||
	fail "the other link did not carry the rest of the stream"
[ $src -eq 0 ] || { cat "$TMP/send.err"; fail "sender failed"; }
[ $rrc -eq 0 ] || { cat "$TMP/recv.err"; fail "receiver failed"; }
grep -q "received $COUNT of $COUNT bad 0 conn_lost 0 " "$TMP/recv.out" ||
	fail "receiver did not get every message once, in order, on one association"
grep -q "unacked 0 conn_lost 0 " "$TMP/send.out" ||
	fail "sender lost its association or has unacknowledged messages"
echo "PASS: $COUNT messages over a cut link, none lost, none repeated, no reconnect"
exit 0
