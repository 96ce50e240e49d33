#!/bin/sh
# tests/test-cluster-dupid.sh - a second dlmd with the node id of a
# running one (a misconfiguration: two dlm.conf files on one host) is
# refused loudly, and locking is never split between the two.
#
# On a 3-node tests/dlm-cluster, node 1's client holds r-dup EX.  A second
# dlmd is started on node 1 (its namespaces, its corosync: node id 1) with
# a copy of node 1's dlm.conf whose socket, control socket and pid file
# are its own, so the single-instance lock (main.c) does not see it:
#   A. same port: it cannot listen on dlmd's port and exits non-zero,
#      saying so;
#   B. another port too (nothing local stops it now): it must exit
#      non-zero saying that node 1 already has a dlmd in the daemon
#      group, and node 1's first dlmd must log the intruder.  A client of
#      the second dlmd asking for r-dup EX is never granted.
# Either way: node 1's first dlmd runs on, nobody is fenced, the
# lockspace keeps members 1 2 3 and its event (no recovery), a try of
# r-dup on node 2 waits while node 1's holder lives and is granted once
# it goes, and the workload's checker finds no two incompatible holders.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=duptest
NRES=4
. "$top_srcdir/tests/cluster-test-lib.sh"

up_cluster 3
: >"$dir/fence.log"

# second_dlmd WHAT [LINE]: start a second dlmd on node 1 from $dir/dup
# (node 1's dlm.conf with its own sockets and pid file, and LINE), wait
# for it to exit (bounded); its PID in dup_pid, its exit status in dup_rc
# (124: still running)
second_dlmd() {
	rm -rf "$dir/dup"
	mkdir -p "$dir/dup"
	grep -v '^socket_path\|^control_socket\|^pid_file' "$dir/n1/dlm.conf" \
		>"$dir/dup/dlm.conf"
	cat >>"$dir/dup/dlm.conf" <<EOF
socket_path = $dir/dup/dlmd.sock
control_socket = $dir/dup/dlmd-ctl.sock
pid_file = $dir/dup/dlmd.pid
${2:-}
EOF
	"$CLUSTER" exec "$dir" 1 "$DLMD" -f -c "$dir/dup/dlm.conf" \
		>"$dir/dup/dlmd.out" 2>&1 </dev/null &
	dup_pid=$!
	holders="${holders:-} $dup_pid"
	# a client of it, while it runs: never granted what node 1 holds
	(sleep 1; timeout 10 "$CLUSTER" exec "$dir" 1 env \
		DLMD_SOCKET="$dir/dup/dlmd.sock" "$CLIENT" try "$LS" r-dup EX) \
		>"$dir/dup/try.out" 2>&1 &
	dup_try=$!
	dup_rc=0
	wait_pid "$dup_pid" 20 || dup_rc=$?
	[ "$dup_rc" != 124 ] && holders=${holders% "$dup_pid"}
	wait "$dup_try" 2>/dev/null
	grep -q granted "$dir/dup/try.out" &&
		fail "$1: the second dlmd granted r-dup EX, which node 1's first dlmd's client holds"
	echo "   second dlmd: exit $dup_rc: $(grep -i 'error\|not starting\|node id\|exiting' "$dir/dup/dlmd.out" | head -n 2 | tr '\n' ' ')"
	[ "$dup_rc" != 0 ] && [ "$dup_rc" != 124 ] ||
		fail "$1: the second dlmd of node 1 did not exit with an error (status $dup_rc)"
	if [ "$dup_rc" = 124 ]; then
		kill -KILL "$dup_pid" 2>/dev/null
		wait "$dup_pid" 2>/dev/null
		holders=${holders% "$dup_pid"}
	fi
}

# nothing changed for the cluster: first dlmd alive, same lockspace event
unchanged() { # WHAT
	running 1 dlmd || fail "$1: node 1's first dlmd is gone"
	for k in 1 2 3; do
		l=$(ls_line $k)
		case $l in
		*"members 1 2 3 "*"event $event0 "*|*"event $event0 "*"members 1 2 3 "*) ;;
		*) fail "$1: node $k: the lockspace changed: $l" ;;
		esac
	done
	[ ! -s "$dir/fence.log" ] || fail "$1: somebody was fenced: $(cat "$dir/fence.log")"
	grep -q "fencing: node 1 failed\|node 1 failed" "$dir/n2/dlmd.out" &&
		fail "$1: node 2 took node 1 for failed"
}

say "== a lockspace on all three, node 1 holds r-dup EX"
start_client 1 hold "$LS" r-dup EX
holder=$last_pid
wait_line "$dir/client-n1.out" held
workload 20000 1 2 3
for k in 1 2 3; do
	wait_ls $k "state running members 1 2 3 " "the lockspace is not on all three"
done
event0=$(ls_line 1 | sed -n 's/.* event \([0-9]*\).*/\1/p')

say "== A. a second dlmd of node 1 on the same port"
second_dlmd A
grep -q "cannot listen on port" "$dir/dup/dlmd.out" ||
	fail "A: the second dlmd does not say it cannot listen: $(tail -n 3 "$dir/dup/dlmd.out")"
unchanged A

say "== B. a second dlmd of node 1 on another port"
second_dlmd B "port = 21065"
grep -q "node 1 already has a dlmd" "$dir/dup/dlmd.out" ||
	fail "B: the second dlmd does not say node 1 has a dlmd already: $(tail -n 5 "$dir/dup/dlmd.out")"
grep -q "a process of node 1 .* that has not identified itself joined" \
	"$dir/n1/dlmd.out" ||
	fail "B: node 1's dlmd does not log the process that joined with its node id"
grep -q "a second dlmd of node 1 .* sealed" "$dir/n1/dlmd.out" ||
	fail "B: node 1's dlmd does not log the second dlmd of its node id"
unchanged B

say "== r-dup: node 2 waits while node 1's holder lives, then is granted"
start_client 2 try "$LS" r-dup EX
waiter=$last_pid
still_waiting "$waiter" 2 "node 2 was granted r-dup while node 1's client holds it"
kill_client "$holder"
wait_pid "$waiter" "$WAIT_S" || fail "node 2's try of r-dup did not end after node 1's holder went"
wait_workload 60 1 2 3
check "the whole run"
"$CLUSTER" status "$dir" >/dev/null || fail "a daemon died: $("$CLUSTER" status "$dir")"
[ $rc -eq 0 ] && echo PASS
exit $rc
