#!/bin/sh
# tests/test-daemon.sh - dlmd and libdlm on a real one-node corosync cluster.
#
# Brings the cluster up with tests/dlm-cluster in a temporary directory,
# runs the C tests linked against libdlm.so and libdlm_lt.so through the
# daemon, then checks dlmctl, the single-instance rule and config errors,
# and always tears the cluster down (trap).  If corosync cannot run here
# the test FAILS: it never skips.  A sanitizer report in dlmd's output
# also fails it (dlm-cluster down checks).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
# bounded waits: polls of 0.1 s
POLLS=100

dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-test.XXXXXX") || exit 1
rc=0
pids=
holders=	# the lock holder's PID while one runs (start_holder)
. "$top_srcdir/tests/cluster-test-lib.sh"

# start_holder LS [RESOURCE]: a test-libdlm-lt holder of a lock in LS in
# the background ($holders), fed by the fifo on fd 3 (closing fd 3 makes it
# unlock and exit); returns once it says "held".  The last holder's
# hold.out goes first: its "held" would pass the wait before the new
# holder truncated the file.
start_holder() {
	[ -p "$dir/hold" ] || mkfifo "$dir/hold"
	rm -f "$dir/hold.out"
	"$top_builddir/tests/test-libdlm-lt" hold "$@" <"$dir/hold" >"$dir/hold.out" 2>&1 &
	holders=$!
	exec 3>"$dir/hold"
	wait_line "$dir/hold.out" held
}

# tests/test-libdlm's ring tests count the kicks and socket requests of a
# dlmd that says it sleeps as soon as a ring is empty (some stop it with
# SIGSTOP and expect exactly one kick): no watch of busy rings here
# (dlm.conf client_spin_us; tests/test-client-watch.sh tests the watch).
DLM_CLUSTER_CONF_EXTRA="client_spin_us = 0"
export DLM_CLUSTER_CONF_EXTRA
if ! "$CLUSTER" up 1 "$dir"; then
	echo "FAIL: cannot bring up the one-node corosync cluster; dlmd needs corosync to run here" >&2
	rc=1
	exit 1
fi
. "$dir/env"

echo "== libdlm.so tests"
DLMCTL=$DLMCTL DLMD_PID_1=$DLMD_PID_1 "$top_builddir/tests/test-libdlm" ||
	fail "tests/test-libdlm"
# A client of another client protocol (test_bad_requests: version 99,
# twice on one connection; test_version_mismatch: version 1 soon after)
# is said once per client, naming both versions, its pid and uid: at
# warning, or at debug when another such client was said at warning in
# the last minute (log_level debug here, so both are in dlmd.out).  The
# second request of the version-99 client gives no line at all: without
# the per-client flag it gave a debug line (the minute's limiter alone
# hid it at warning).  test_bad_requests is the first such client in
# this dlmd's life, so its line is the warning.
n=$(grep -c 'speaks client protocol version 99, dlmd speaks' "$dir/n1/dlmd.out")
[ "$n" = 1 ] || fail "a client of protocol 99 said $n times, not once: $(grep 'client protocol version' "$dir/n1/dlmd.out")"
grep 'speaks client protocol version 99' "$dir/n1/dlmd.out" |
	grep -q "warning: client pid [0-9]* uid $(id -u) " ||
	fail "the client protocol warning is not at warning or lacks pid or uid: $(grep 'client protocol version' "$dir/n1/dlmd.out")"
echo "== fencing tokens against a toy storage server"
DLMCTL=$DLMCTL timeout 60 "$top_builddir/tests/test-fencing" ||
	fail "tests/test-fencing"
echo "== libdlm_lt.so tests"
"$top_builddir/tests/test-libdlm-lt" || fail "tests/test-libdlm-lt"
echo "== libdlm_lt.so.3 by dlopen, as mdadm and ocfs2-tools load it"
libs=$top_builddir/libdlm/.libs
TEST_DLOPEN_DIR=$libs LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	"$top_builddir/tests/test-dlopen" || fail "tests/test-dlopen"
for lib in libdlm libdlm_lt; do
	soname=$(readelf -d "$libs/$lib.so.3" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$soname" = "$lib.so.3" ] || fail "$lib.so.3 has soname '$soname'"
	# the exports are exactly the version script's globals
	want=$(sed -n '/global:/,/local:/s/^[[:space:]]*\([a-z_]*\);/\1/p' \
		"$top_srcdir/libdlm/$lib.map" | sort)
	have=$(nm -D --defined-only "$libs/$lib.so.3" | awk '$2 ~ /^[TW]$/ { print $3 }' |
		sed 's/@.*//' | sort)
	[ "$want" = "$have" ] ||
		fail "$lib.so.3 exports differ from $lib.map: $(echo "$want" | tr '\n' ' ') / $(echo "$have" | tr '\n' ' ')"
	# unversioned, as the established library's
	readelf -V "$libs/$lib.so.3" | grep -q 'Version definition' &&
		fail "$lib.so.3 defines symbol versions; the established one has none"
	# and the same set as the distribution's libdlm, where one is
	# installed, but for our extensions (fencing tokens, issue 17)
	sys=$(ldconfig -p 2>/dev/null | sed -n "s/^[[:space:]]*$lib\.so\.3 (.*) => //p" | head -n 1)
	if [ -n "$sys" ]; then
		theirs=$(nm -D --defined-only "$sys" | awk '$2 ~ /^[TW]$/ { print $3 }' |
			sed 's/@.*//' | sort)
		have=$(echo "$have" | grep -v -x -e dlm_ls_lock_token -e dlm_lock_token)
		[ "$theirs" = "$have" ] ||
			fail "$lib.so.3 exports differ from $sys: $(echo "$theirs" | tr '\n' ' ')"
	fi
done

echo "== the client socket: as dlm.conf(5) advises, not open to all"
perm=$(stat -c '%U %G %a' "$DLMD_SOCKET")
[ "$perm" = "root nogroup 660" ] || fail "client socket is '$perm', want 'root nogroup 660'"

echo "== dlmctl"
out=$("$DLMCTL" status) || fail "dlmctl status exit $?"
echo "$out" | grep -q '^membership corosync$' || fail "status: membership: $out"
echo "$out" | grep -q '^quorate yes$' || fail "status: quorate: $out"
echo "$out" | grep -q '^nodeid 1$' || fail "status: nodeid: $out"
"$DLMCTL" status --json | grep -q '"membership":"corosync"' || fail "status --json"
"$DLMCTL" join ctl-ls || fail "dlmctl join"
"$DLMCTL" ls | grep -q '^name ctl-ls id [0-9a-f]* state running members 1 ' ||
	fail "dlmctl ls: $("$DLMCTL" ls)"
"$DLMCTL" ls --json | grep -q '"name":"ctl-ls".*"members":\[1\]' ||
	fail "dlmctl ls --json: $("$DLMCTL" ls --json)"
# A client holding a lock shows in the lock dump.
start_holder ctl-ls
"$DLMCTL" lockdump ctl-ls | grep -q 'held-resource' ||
	fail "lockdump: $("$DLMCTL" lockdump ctl-ls)"
"$DLMCTL" ls | grep -q 'clients 1 ' || fail "ls should count 1 client: $("$DLMCTL" ls)"
exec 3>&-
wait "$holders" || fail "lock holder exit status"
holders=
# Client-controlled names never write a line of their own: a resource
# name with a newline prints escaped in the lock dump; a lockspace name
# with one is refused, by dlmctl and by the daemon (tests/test-libdlm).
nl='
'
start_holder ctl-ls "evil${nl}resource \"faked\""
"$DLMCTL" lockdump ctl-ls >"$dir/lockdump.out"
grep -q 'resource "evil\\x0aresource \\x22faked\\x22"' "$dir/lockdump.out" ||
	fail "lockdump does not escape a newline in a resource name: $(cat "$dir/lockdump.out")"
grep -q '^resource "faked' "$dir/lockdump.out" && fail "lockdump printed a faked line"
grep -q '^resource "faked' "$dir/n1/dlmd.out" && fail "dlmd's log has a faked line"
exec 3>&-
wait "$holders" || fail "second lock holder exit status"
holders=
before=$("$DLMCTL" ls | grep -c '^name')
"$DLMCTL" join "bad${nl}name" 2>/dev/null && fail "dlmctl join accepted a name with a newline"
[ "$("$DLMCTL" ls | grep -c '^name')" = "$before" ] ||
	fail "a lockspace name with a newline made lines in dlmctl ls: $("$DLMCTL" ls)"
"$DLMCTL" leave ctl-ls || fail "dlmctl leave"
"$DLMCTL" ls | grep -q ctl-ls && fail "ctl-ls still listed after leave"
"$DLMCTL" lockdump no-such-ls 2>/dev/null && fail "lockdump of a missing lockspace succeeded"
"$DLMCTL" dump | grep -q 'dlmd ready' || fail "dlmctl dump lacks the start-up line"
"$DLMCTL" bogus 2>/dev/null; [ $? -eq 2 ] || fail "dlmctl bogus should exit 2"
DLMD_CTL_SOCKET=$dir/nothing.sock "$DLMCTL" status 2>"$dir/notrunning.err"
[ $? -eq 3 ] || fail "dlmctl without a daemon should exit 3"
grep -q 'not running' "$dir/notrunning.err" || fail "dlmctl without a daemon: $(cat "$dir/notrunning.err")"

echo "== a second dlmd on the same socket"
"$DLMD" -f -c "$dir/n1/dlm.conf" >"$dir/second.out" 2>&1
[ $? -ne 0 ] || fail "a second dlmd started"
grep -q 'already running on socket' "$dir/second.out" || fail "second dlmd: $(cat "$dir/second.out")"
"$DLMCTL" status >/dev/null || fail "the first dlmd suffered from the second"

echo "== config errors"
printf 'port = 21064\nno_such_key = 1\n' >"$dir/bad1.conf"
"$DLMD" -f -c "$dir/bad1.conf" >"$dir/bad1.out" 2>&1
[ $? -ne 0 ] || fail "unknown key accepted"
grep -q "bad1.conf:2: unknown key 'no_such_key'" "$dir/bad1.out" || fail "bad1: $(cat "$dir/bad1.out")"
printf '# comment\n\ntoss_secs = ten\n' >"$dir/bad2.conf"
"$DLMD" -f -c "$dir/bad2.conf" >"$dir/bad2.out" 2>&1
[ $? -ne 0 ] || fail "bad value accepted"
grep -q "bad2.conf:3: bad value 'ten' for toss_secs" "$dir/bad2.out" || fail "bad2: $(cat "$dir/bad2.out")"
for kv in 'remaster_secs = -1' 'remaster_secs = 86401' 'remaster_window = 3' \
	  'remaster_window = 65535'; do
	printf '%s\n' "$kv" >"$dir/bad3.conf"
	"$DLMD" -f -c "$dir/bad3.conf" >"$dir/bad3.out" 2>&1
	[ $? -ne 0 ] || fail "'$kv' accepted"
	grep -q "bad3.conf:1: bad value '${kv#* = }' for ${kv%% *}" "$dir/bad3.out" ||
		fail "'$kv': $(cat "$dir/bad3.out")"
done
"$DLMD" -f -c "$dir/missing.conf" >/dev/null 2>&1 && fail "missing config accepted"

echo "== the daemon is still healthy"
"$CLUSTER" status "$dir" || fail "a daemon died"

# Last, since it stops dlmd.  Stopping with a lockspace in use would hand
# its locks to other nodes under their holders: SIGTERM is refused while a
# client has it open, and while it holds orphaned persistent locks.
echo "== SIGTERM is refused while a lockspace is in use"
refusals() { grep -c 'shutdown refused' "$dir/n1/dlmd.out"; }
wait_refusals() { # N: until dlmd has logged N refusals
	i=0
	until [ "$(refusals)" -ge "$1" ]; do
		i=$((i + 1))
		[ $i -gt $POLLS ] && { fail "dlmd did not refuse SIGTERM (refusal $1)"; return 1; }
		sleep 0.1
	done
}
"$DLMCTL" join stop-ls || fail "dlmctl join stop-ls"
start_holder stop-ls
n=$(refusals)
kill -TERM "$DLMD_PID_1"
wait_refusals $((n + 1))
grep -q 'lockspace stop-ls is in use: 1 client connections, 0 orphaned locks' "$dir/n1/dlmd.out" ||
	fail "the refusal does not name stop-ls and its client"
kill -0 "$DLMD_PID_1" 2>/dev/null || fail "dlmd stopped under a client's lock"
"$DLMCTL" lockdump stop-ls | grep -q 'held-resource' ||
	fail "the held lock is gone after a refused SIGTERM: $("$DLMCTL" lockdump stop-ls)"
# nor does "dlmctl leave" take the lockspace from under its client
"$DLMCTL" leave stop-ls >"$dir/leave.out" 2>&1 && fail "dlmctl leave of a lockspace in use succeeded"
grep -q 'lockspace stop-ls is in use: 1 client connections, 0 orphaned locks' "$dir/leave.out" ||
	fail "dlmctl leave's refusal does not say why: $(cat "$dir/leave.out")"
"$DLMCTL" lockdump stop-ls | grep -q 'held-resource' ||
	fail "the held lock is gone after a refused leave: $("$DLMCTL" lockdump stop-ls)"
exec 3>&-
wait "$holders" || fail "the holder could not unlock after a refused SIGTERM: $(cat "$dir/hold.out")"
holders=
"$top_builddir/tests/test-libdlm-lt" orphan stop-ls orphan-resource >"$dir/orphan.out" 2>&1 ||
	fail "orphan client: $(cat "$dir/orphan.out")"
kill -TERM "$DLMD_PID_1"
wait_refusals $((n + 2))
grep -q 'lockspace stop-ls is in use: 0 client connections, 1 orphaned locks' "$dir/n1/dlmd.out" ||
	fail "the refusal does not count stop-ls's orphan"
kill -0 "$DLMD_PID_1" 2>/dev/null || fail "dlmd stopped with an orphaned lock"
"$DLMCTL" leave stop-ls >"$dir/leave.out" 2>&1 && fail "dlmctl leave of a lockspace with an orphan succeeded"
grep -q 'lockspace stop-ls is in use: 0 client connections, 1 orphaned locks' "$dir/leave.out" ||
	fail "dlmctl leave's refusal does not count the orphan: $(cat "$dir/leave.out")"
"$DLMCTL" leave --force stop-ls || fail "dlmctl leave --force stop-ls"
grep -q 'leave --force stop-ls: dropping the locks of 0 client connections and 1 orphaned locks' \
	"$dir/n1/dlmd.out" || fail "dlmd did not log the forced leave"
kill -TERM "$DLMD_PID_1"
wait_gone "$DLMD_PID_1" || fail "dlmd did not stop on SIGTERM once no lockspace was in use"
grep -q 'dlmd stopped (exit 0)' "$dir/n1/dlmd.out" || fail "dlmd did not stop cleanly: $(tail -n 5 "$dir/n1/dlmd.out")"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
