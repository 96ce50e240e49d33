#!/bin/sh
# tests/test-configfs-view.sh - dlmd's configfs view and dlmd-configfs on
# one node, and the default paths (issue 13).
#
# Runs in a mount namespace of its own with a private /run, so that dlmd
# runs with a dlm.conf that names no path at all (membership none), as
# from its systemd unit:
#   a. libdlm, with no DLMD_SOCKET in its environment, reaches dlmd at the
#      default /run/dlmd/dlmd.sock, and dlmctl its default control socket;
#   b. the view in /run/dlmd/configfs (the default configfs_dir):
#      cluster attributes, comms/1 with local 1, a lockspace's nodes/1
#      while a client has it, gone once released;
#   c. dlmd-configfs shows it at /sys/kernel/config (which this kernel
#      does not have) to its program only, which keeps the wrapper's PID;
#   d. a second dlmd on the same configfs_dir keeps no view, says so, and
#      leaves the first one's alone; the first one's dlm/ goes when it
#      stops, configfs_dir stays;
#   e. where /sys/kernel/config is configfs with dlm/ (a kernel DLM;
#      faked for statfs by tests/fake-configfs.c over a tmpfs), dlmd keeps
#      no view and logs why, and dlmd-configfs runs its program with the
#      kernel's tree.
# Every wait is bounded; dlmd is stopped by its PID; logs are kept on
# failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
RUN=$top_builddir/ocf/dlmd-configfs
LT=$top_builddir/tests/test-libdlm-lt
FAKE=$top_builddir/tests/.libs/fake-configfs.so
WAIT_S=10	# the bound of every wait, seconds
VIEW=/run/dlmd/configfs/dlm/cluster

if [ "${1:-}" != --inside ]; then
	for f in "$DLMD" "$DLMCTL" "$RUN" "$LT" "$FAKE"; do
		[ -x "$f" ] || [ -r "$f" ] || { echo "FAIL: no $f (make check builds it)" >&2; exit 1; }
	done
	dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmv.XXXXXX") || exit 1
	chmod 755 "$dir"
	unshare --mount --propagation private sh "$0" --inside "$dir"
	rc=$?
	finish
fi

dir=$2
rc=0
dlmd_pids=
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	for p in $dlmd_pids; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	check_sanitizer "$dir"/dlmd*.out
	exit $rc
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

mount -t tmpfs -o mode=755 tmpfs /run || { fail "cannot mount a private /run"; exit 1; }
cat >"$dir/dlm.conf" <<EOF
log_syslog = no
log_level = debug
membership = none
EOF

# spawn_dlmd NAME CONF [ENV...]: dlmd -f in the background, output in
# $dir/dlmd-NAME.out, its PID in $last
spawn_dlmd() {
	sn=$1
	sc=$2
	shift 2
	env "$@" ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 \
		"$DLMD" -f -c "$sc" >"$dir/dlmd-$sn.out" 2>&1 </dev/null &
	last=$!
	dlmd_pids="$dlmd_pids $last"
}

end_dlmd() { # PID: SIGTERM, and it must exit 0
	kill -TERM "$1" 2>/dev/null
	wait "$1"
	sr=$?
	[ $sr -eq 0 ] || fail "dlmd $1 exited with $sr"
}

file_is() { # FILE TEXT: is FILE's content TEXT (one line)?
	[ "$(cat "$1" 2>/dev/null)" = "$2" ]
}

echo "== a. default paths"
spawn_dlmd main "$dir/dlm.conf"
main=$last
wait_for "$WAIT_S" "dlmd made no socket at the default /run/dlmd/dlmd.sock" \
	test -S /run/dlmd/dlmd.sock || exit 1
wait_for "$WAIT_S" "no control socket at the default path" test -S /run/dlmd/dlmd-ctl.sock
env -u DLMD_CTL_SOCKET "$DLMCTL" join viewls || fail "dlmctl join at its default socket"
mkfifo "$dir/hold"
env -u DLMD_SOCKET "$LT" hold viewls <"$dir/hold" >"$dir/hold.out" 2>&1 &
holder=$!
exec 3>"$dir/hold"
wait_for "$WAIT_S" "a libdlm client without DLMD_SOCKET took no lock: $(cat "$dir/hold.out")" \
	grep -q '^held' "$dir/hold.out"
env -u DLMD_CTL_SOCKET "$DLMCTL" ls | grep -q '^name viewls .* clients 1 ' ||
	fail "dlmctl at its default socket does not list viewls with a client"

echo "== b. the view"
file_is "$VIEW/cluster_name" "" || fail "cluster_name: '$(cat "$VIEW/cluster_name")', want empty (no corosync)"
file_is "$VIEW/tcp_port" 21064 || fail "tcp_port: $(cat "$VIEW/tcp_port")"
file_is "$VIEW/protocol" 0 || fail "protocol: $(cat "$VIEW/protocol")"
file_is "$VIEW/comms/1/nodeid" 1 || fail "comms/1/nodeid: $(cat "$VIEW/comms/1/nodeid")"
file_is "$VIEW/comms/1/local" 1 || fail "comms/1/local: $(cat "$VIEW/comms/1/local")"
[ "$(ls "$VIEW/comms")" = 1 ] || fail "comms has $(ls "$VIEW/comms"), want 1"
file_is "$VIEW/spaces/viewls/nodes/1/nodeid" 1 || fail "viewls has no nodes/1/nodeid"
file_is "$VIEW/spaces/viewls/nodes/1/weight" 1 || fail "viewls has no nodes/1/weight"
[ "$(stat -c %a "$VIEW/cluster_name")" = 444 ] || fail "cluster_name is writable"
"$DLMCTL" status | grep -q '^configfs /run/dlmd/configfs on$' ||
	fail "dlmctl status: $("$DLMCTL" status | grep configfs)"

echo "== c. dlmd-configfs"
had=no
[ -e /sys/kernel/config ] && had=yes
got=$("$RUN" -c "$dir/dlm.conf" cat /sys/kernel/config/dlm/cluster/spaces/viewls/nodes/1/nodeid) ||
	fail "dlmd-configfs: exit $?"
[ "$got" = 1 ] || fail "through dlmd-configfs the lockspace's node is '$got'"
now=no
[ -e /sys/kernel/config ] && now=yes
[ "$had" = "$now" ] || fail "dlmd-configfs changed /sys/kernel/config outside its namespace"
"$RUN" sh -c 'echo $$ >"$0"; ls /sys/kernel/mm >/dev/null' "$dir/pid" &
wp=$!
wait $wp || fail "dlmd-configfs sh: exit $?"
[ "$(cat "$dir/pid")" = "$wp" ] || fail "the program has pid $(cat "$dir/pid"), not the wrapper's $wp"
exec 3>&-
wait "$holder" || fail "holder: $(cat "$dir/hold.out")"
holder=
"$DLMCTL" leave viewls || fail "dlmctl leave"
wait_for "$WAIT_S" "spaces/viewls stays after its release" test ! -e "$VIEW/spaces/viewls"

echo "== d. one dlmd per view"
cat >"$dir/dlm2.conf" <<EOF
log_syslog = no
log_level = debug
membership = none
socket_path = $dir/d2.sock
control_socket = $dir/d2-ctl.sock
pid_file = $dir/d2.pid
EOF
spawn_dlmd second "$dir/dlm2.conf"
second=$last
wait_for "$WAIT_S" "the second dlmd did not start" test -S "$dir/d2-ctl.sock"
grep -q "configfs view: /run/dlmd/configfs is kept by another dlmd (pid $main)" "$dir/dlmd-second.out" ||
	fail "the second dlmd does not say the view is another's: $(grep configfs "$dir/dlmd-second.out")"
"$DLMCTL" -s "$dir/d2-ctl.sock" status | grep -q '^configfs /run/dlmd/configfs off (kept by another dlmd)$' ||
	fail "second dlmd's status: $("$DLMCTL" -s "$dir/d2-ctl.sock" status | grep configfs)"
end_dlmd "$second"
test -r "$VIEW/cluster_name" || fail "the second dlmd's stop removed the first one's view"
end_dlmd "$main"
[ ! -e /run/dlmd/configfs/dlm ] || fail "dlm/ stays after dlmd stopped"
[ -d /run/dlmd/configfs ] || fail "configfs_dir went with dlmd (bind mounts of it would break)"

echo "== e. a kernel DLM"
mount -t tmpfs -o mode=755 tmpfs /sys/kernel || { fail "cannot mount a tmpfs on /sys/kernel"; exit 1; }
mkdir -p /sys/kernel/config/dlm/cluster
echo kernel >/sys/kernel/config/dlm/cluster/cluster_name
[ "$(LD_PRELOAD=$FAKE stat -f -c %t /sys/kernel/config)" = 62656570 ] ||
	fail "tests/fake-configfs.c does not fake statfs"
spawn_dlmd kernel "$dir/dlm.conf" LD_PRELOAD="$FAKE"
kern=$last
wait_for "$WAIT_S" "dlmd (kernel DLM present) did not start" test -S /run/dlmd/dlmd-ctl.sock
grep -q "configfs view: not kept: /sys/kernel/config is configfs and has dlm/: the kernel DLM is loaded" \
	"$dir/dlmd-kernel.out" || fail "dlmd does not say why it keeps no view: $(grep configfs "$dir/dlmd-kernel.out")"
[ ! -e /run/dlmd/configfs/dlm ] || fail "dlmd wrote a view beside a kernel DLM"
"$DLMCTL" status | grep -q '^configfs /run/dlmd/configfs refused (a kernel DLM is loaded)$' ||
	fail "status: $("$DLMCTL" status | grep configfs)"
got=$(LD_PRELOAD=$FAKE "$RUN" -c "$dir/dlm.conf" cat /sys/kernel/config/dlm/cluster/cluster_name 2>"$dir/run.err")
[ "$got" = kernel ] || fail "dlmd-configfs beside a kernel DLM shows '$got', not the kernel's tree"
grep -q "the kernel DLM is loaded" "$dir/run.err" || fail "dlmd-configfs does not say why: $(cat "$dir/run.err")"
end_dlmd "$kern"
dlmd_pids=
umount /sys/kernel

[ $rc -eq 0 ] && echo "test-configfs-view: all checks passed"
exit $rc
