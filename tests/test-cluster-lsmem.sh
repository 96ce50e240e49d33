#!/bin/sh
# tests/test-cluster-lsmem.sh - what many lockspaces cost corosync
# (issue 11 item 7): on a 2-node tests/dlm-cluster, NLS lockspaces are
# joined on both nodes; once every one of them runs with members 1 2,
# corosync's memory on each node is measured against the zero-lockspace
# baseline taken before:
#   - the resident set of the corosync process (Rss in /proc/PID/smaps_rollup:
#     its heap and the IPC rings it has touched);
#   - the bytes in the node's private /dev/shm (libqb's IPC rings, one set
#     per client connection, created at connect).
# Each may grow by at most MAX_KB_PER_LS per lockspace.  A CPG connection
# per lockspace costs corosync megabytes each (about 3.4 MB of rings); a
# lockspace carried over the one daemon group costs it nothing beyond the
# messages.  Then a lock is taken in the last lockspace on both nodes (the
# lockspaces work), all are left, and the lockspaces are gone.
# The cluster is always torn down (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
NLS=${LSMEM_NLS:-200}
MAX_KB_PER_LS=${LSMEM_MAX_KB:-64}
POLLS=1200		# bounded waits: polls of 0.1 s
LS=lsmem-$NLS

. "$top_srcdir/tests/cluster-test-lib.sh"

export DLM_CLUSTER_FENCING=off
export DLM_CLUSTER_LOG_LEVEL=info
up_cluster 2

rss_kb() { # K: Rss of node K's corosync, kB
	awk '/^Rss:/ { print $2 }' "/proc/$(cat "$dir/n$1/corosync.pid")/smaps_rollup"
}
shm_kb() { # K: kB in node K's /dev/shm
	on "$1" du -sk /dev/shm | awk '{ print $1 }'
}
running() { # K: how many lockspaces of node K run with members 1 2
	on "$1" "$DLMCTL" ls 2>/dev/null | grep -c "^name lsmem-[0-9]* id [0-9a-f]* state running members 1 2 "
}
all_running() { # K: all NLS lockspaces of node K run with members 1 2
	[ "$(running "$1")" -eq "$NLS" ]
}

# (the sleeps before the two measurements let the daemons settle: there
# is no event of "done growing" to wait for)
sleep 1
for k in 1 2; do
	eval "rss0_$k=$(rss_kb $k) shm0_$k=$(shm_kb $k)"
done
echo "== baseline: corosync rss $rss0_1 kB / $rss0_2 kB, /dev/shm $shm0_1 kB / $shm0_2 kB"

echo "== $NLS lockspaces joined on both nodes"
for k in 1 2; do
	(
		i=1
		while [ $i -le $NLS ]; do
			if ! on "$k" "$DLMCTL" join "lsmem-$i" >/dev/null; then
				echo "FAIL: node $k: join lsmem-$i failed" >&2
				exit 1
			fi
			i=$((i + 1))
		done
	) &
	eval "jp_$k=$!"
done
wait "$jp_1" || rc=1
wait "$jp_2" || rc=1
[ $rc -eq 0 ] || exit 1
for k in 1 2; do
	poll "$WAIT_S" all_running $k ||
		fail "node $k: only $(running $k) of $NLS lockspaces run with members 1 2"
done
[ $rc -eq 0 ] || exit 1
sleep 1
for k in 1 2; do
	eval "rss=$(rss_kb $k) shm=$(shm_kb $k) rss0=\$rss0_$k shm0=\$shm0_$k"
	drss=$(( (rss - rss0) / NLS ))
	dshm=$(( (shm - shm0) / NLS ))
	echo "   node $k: corosync rss $rss kB (+$drss kB per lockspace), /dev/shm $shm kB (+$dshm kB per lockspace)"
	[ $drss -le "$MAX_KB_PER_LS" ] ||
		fail "node $k: corosync's resident set grew by $drss kB per lockspace (at most $MAX_KB_PER_LS)"
	[ $dshm -le "$MAX_KB_PER_LS" ] ||
		fail "node $k: corosync's /dev/shm grew by $dshm kB per lockspace (at most $MAX_KB_PER_LS)"
done

echo "== a lock in $LS on both nodes"
NRES=2
for k in 1 2; do
	start_client "$k" work "$LS" "$dir" $NRES 1000 "${k}1"
	eval "wp_$k=$last_pid"
done
wait_pid "$wp_1" 60 || fail "the client on node 1 failed or hung"
wait_pid "$wp_2" 60 || fail "the client on node 2 failed or hung"
check "two clients in $LS"

echo "== a process of CPG protocol version 1 in the daemon group is refused"
PEER=$top_builddir/tests/cpg-peer
PEER_S=20	# at most; long beside the join below (about a second)
on 2 env CPG_PEER_STOP="$dir/peer-stop" "$PEER" 1 $PEER_S >"$dir/cpg-peer.out" 2>&1 &
peer=$!
poll "$WAIT_S" grep -q "speaks CPG protocol version 1, we speak 5: mixing versions is refused" \
	"$dir/n1/dlmd.out" 2>/dev/null || fail "node 1 logged no refusal of the version-1 peer"
# it joined after the dlmds and never sealed a message: no dlmd to them
# (plugin/cluster.c, SEALED MESSAGES), so lockspaces change members while
# it is a member, and running ones run on
LS=lsmem-mixed
on 1 "$DLMCTL" join lsmem-mixed >"$dir/join-mixed.out" 2>&1 ||
	fail "dlmctl join lsmem-mixed failed: $(cat "$dir/join-mixed.out")"
kill -0 "$peer" 2>/dev/null || fail "the peer left before lsmem-mixed ran"
wait_ls 1 "state running members 1 clients" "lsmem-mixed does not run beside the peer"
LS=lsmem-1
ls_line 1 | grep -q "state running members 1 2 " ||
	fail "lsmem-1 stopped while the peer was a member: $(ls_line 1)"
touch "$dir/peer-stop"	# seen beside it: it may leave (CPG_PEER_STOP)
wait_pid "$peer" $((PEER_S + 30)) || fail "cpg-peer failed: $(cat "$dir/cpg-peer.out")"
on 1 "$DLMCTL" leave lsmem-mixed >/dev/null || fail "leave lsmem-mixed failed"

echo "== all lockspaces left"
for k in 1 2; do
	(
		i=1
		while [ $i -le $NLS ]; do
			on "$k" "$DLMCTL" leave "lsmem-$i" >/dev/null ||
				echo "FAIL: node $k: leave lsmem-$i failed" >&2
			i=$((i + 1))
		done
	) &
	eval "jp_$k=$!"
done
wait "$jp_1" "$jp_2"
for k in 1 2; do
	n=$(on "$k" "$DLMCTL" ls 2>/dev/null | grep -c "^name ")
	[ "$n" -eq 0 ] || fail "node $k still has $n lockspaces"
done
exit $rc
