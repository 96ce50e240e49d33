#!/bin/sh
# tests/test-socket-paths.sh - dlmd's unix sockets and whoever may write
# their directories.
#
# dlmd made its client socket, its control socket and its metrics socket
# and then set their owner and mode by path (chown, chmod).  Whoever may
# write such a directory (an admin who put metrics_listen in the
# scraper's own directory, say) could swap the fresh socket for a symlink
# in between: root's chmod would then follow it to any file (/etc/shadow
# made 0666).  Here tests/bind-race.c, preloaded into dlmd, wins that race
# every time, pointing all three paths at a canary file of root's (0600);
# the canary must keep its owner, group and mode, and the sockets (the
# files moved aside) have the modes dlm.conf asks from the start (the
# client socket's group, set afterwards, went to the symlink: lost).
# The same writer may plant symlinks before dlmd starts: at the pid file
# (dlmd starts, does not write through it) and at the instance lock file
# next to the client socket (dlmd refuses to start); neither target is
# truncated or written.
# Then a second dlmd with a client socket of its own but one other path
# of a running dlmd's (its control socket, its pid file or its metrics
# socket: a test config that kept a default, say) refuses to start,
# naming the dlmd that has it; the first keeps all three.  (Such a
# second dlmd took the control socket over, and when it stopped removed
# it and the pid file: the first ran on, unreachable by dlmctl and by
# the OCF agent's monitor.)  Nor does one whose control socket is its
# client socket.  A socket path that names a file that is not a socket
# (a typo) is left alone: dlmd says so, and does not start without its
# client or control socket (it runs without its metrics socket).
# Nor does one whose client or control socket lies in a directory
# another user may write (writable by group or others, or owned by
# another user than root, or below such a one that is not sticky): that
# user could replace the socket and pose as dlmd; it does start below a
# sticky directory.  (Or reached through another user's symlink.)  The
# metrics socket gets the same check, and such a user could serve the
# scraper metrics of their own, or hold the metrics socket's lock file
# and keep dlmd from starting: there dlmd makes neither, says so, and
# runs without the metrics endpoint (it made both, and served there).
# Needs root (the owners); skips (77) otherwise.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
POLLS=100		# waits: polls of 0.1 s
RACE=$top_builddir/tests/.libs/bind-race.so

rc=0
pid=

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root" >&2; exit 77; }
[ -f "$RACE" ] || { echo "FAIL: no $RACE" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-sockpaths.XXXXXX") || exit 1
chmod 755 "$dir"

cleanup() {
	stop_dlmd
	check_sanitizer "$dir/dlmd.out" "$dir/a.out" "$dir/b.out"
	finish "dlmd: dlmd.out"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# conf_with FILE KEY VALUE LINE...: write_conf FILE with the LINEs, the
# one of KEY (added if none is) saying "KEY = VALUE"
conf_with() {
	cw_file=$1
	cw_key=$2
	cw_line="$2 = $3"
	shift 3
	cw_given=
	for cw_x; do
		shift
		if [ "${cw_x%% =*}" = "$cw_key" ]; then
			cw_x=$cw_line
			cw_given=1
		fi
		set -- "$@" "$cw_x"
	done
	[ -n "$cw_given" ] || set -- "$@" "$cw_line"
	write_conf "$cw_file" "$@"
}

# refused WHAT CONF OUT PATTERN: a dlmd on CONF (its output in OUT) does
# not start, exit 1, and says PATTERN; WHAT names the case in a failure
refused() {
	timeout 5 "$DLMD" --foreground --config="$2" >"$3" 2>&1 </dev/null
	st=$?
	[ $st = 1 ] || fail "$1: dlmd exit $st, want 1: $(cat "$3")"
	grep -q "$4" "$3" || fail "$1: '$4' not said: $(cat "$3")"
}

# runs WHAT CONF OUT: a dlmd on CONF (its output in OUT) starts and runs
# until timeout stops it
runs() {
	timeout 3 "$DLMD" --foreground --config="$2" >"$3" 2>&1 </dev/null
	st=$?
	[ $st = 124 ] && grep -q 'dlmd ready' "$3" || fail "$1: exit $st: $(cat "$3")"
}

mkdir "$dir/run" "$dir/run2"
for c in canary canary-pid canary-lock; do
	echo secret >"$dir/$c"
	chmod 600 "$dir/$c"
done
canary=$dir/canary
# untouched FILE: still "secret", root's, 0600
untouched() {
	[ "$(cat "$1")" = secret ] && [ "$(stat -c '%U %G %a' "$1")" = "root root 600" ]
}

# a symlink at the instance lock file: dlmd does not start
ln -s "$dir/canary-lock" "$dir/run2/dlmd.sock.lock"
write_conf "$dir/dlm2.conf" "socket_path = $dir/run2/dlmd.sock" \
	"control_socket = $dir/run2/ctl.sock" "pid_file = $dir/run2/dlmd.pid"
refused "its lock file a symlink" "$dir/dlm2.conf" "$dir/dlmd2.out" \
	"cannot open lock file $dir/run2/dlmd.sock.lock"
untouched "$dir/canary-lock" ||
	fail "the lock file's symlink target was written: $(cat "$dir/canary-lock")"

ln -s "$dir/canary-pid" "$dir/run/dlmd.pid"
write_conf "$dir/dlm.conf" "socket_owner = root" "socket_group = nogroup" \
	"socket_mode = 0660" "log_level = debug" \
	"socket_path = $dir/run/dlmd.sock" "control_socket = $dir/run/ctl.sock" \
	"metrics_listen = $dir/run/metrics.sock" "pid_file = $dir/run/dlmd.pid"
export DLMD_SOCKET=$dir/run/dlmd.sock DLMD_CTL_SOCKET=$dir/run/ctl.sock
start_dlmd "$dir/dlm.conf" "$dir/dlmd.out" env LD_PRELOAD="$RACE" \
	BIND_RACE_DIR="$dir/run" BIND_RACE_TARGET="$canary" \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0

n=$(grep -c '^bind-race: .* now points to' "$dir/dlmd.out")
[ "$n" = 3 ] || fail "the race was won $n times, want 3: $(cat "$dir/dlmd.out")"
got=$(stat -c '%U %G %a' "$canary")
[ "$got" = "root root 600" ] ||
	fail "the canary behind the symlinks became '$got' (was root root 600)"
for s in dlmd.sock:"root root 660" ctl.sock:"root root 600" \
	 metrics.sock:"root root 666"; do
	f=${s%%:*}
	want=${s#*:}
	got=$(stat -c '%U %G %a' "$dir/run/$f.moved")
	[ "$got" = "$want" ] || fail "$f is '$got', want '$want'"
done
untouched "$dir/canary-pid" ||
	fail "the pid file's symlink target was written: $(cat "$dir/canary-pid")"
grep -q "pid file $dir/run/dlmd.pid: " "$dir/dlmd.out" ||
	fail "no warning about the pid file"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
stop_dlmd

echo "== a second dlmd sharing a path of the first's"
mkdir "$dir/run4"
a=$dir/run4/a
write_conf "$dir/a.conf" "socket_path = $a.sock" "control_socket = $a-ctl.sock" \
	"pid_file = $a.pid" "metrics_listen = $a-metrics.sock"
export DLMD_SOCKET=$a.sock DLMD_CTL_SOCKET=$a-ctl.sock
start_dlmd "$dir/a.conf" "$dir/a.out"
for shared in "control_socket = $a-ctl.sock" "pid_file = $a.pid" \
	      "metrics_listen = $a-metrics.sock"; do
	key=${shared%% =*}
	b=$dir/run4/b-$key
	conf_with "$dir/b.conf" "$key" "${shared#* = }" "socket_path = $b.sock" \
		"control_socket = $b-ctl.sock" "pid_file = $b.pid" \
		"metrics_listen = $b-metrics.sock"
	# if it starts, it stops after a few seconds, as an operator's would;
	# it must name the first
	refused "a second dlmd sharing $key" "$dir/b.conf" "$dir/b.out" \
		"another dlmd (pid $pid) .* ${shared#* = }"
	"$DLMCTL" status >/dev/null 2>&1 ||
		fail "after a second dlmd sharing $key the first has no control socket"
	[ "$(cat "$a.pid" 2>/dev/null)" = "$pid" ] ||
		fail "after a second dlmd sharing $key the pid file is '$(cat "$a.pid" 2>&1)', want $pid"
	[ -S "$a-metrics.sock" ] ||
		fail "after a second dlmd sharing $key the first has no metrics socket"
done
kill -0 "$pid" 2>/dev/null || fail "the first dlmd died"
# one dlmd whose control socket is its client socket: it does not start
# (the control socket replaced the client socket, which clients then
# could not reach)
write_conf "$dir/c.conf" "socket_path = $dir/run4/c.sock" \
	"control_socket = $dir/run4/c.sock" "pid_file = $dir/run4/c.pid"
refused "one socket for clients and control" "$dir/c.conf" "$dir/c.out" \
	'socket_path and control_socket are the same file'
# a socket path that names a file, not a socket (a typo: the config
# file's path): dlmd does not remove it (it did, as root, taking it for
# a stale socket); without the client or control socket it does not
# start, without the metrics socket it runs
for key in socket_path control_socket metrics_listen; do
	f=$dir/run4/file-$key
	echo secret >"$f"
	chmod 600 "$f"
	conf_with "$dir/d.conf" "$key" "$f" "socket_path = $dir/run4/d.sock" \
		"control_socket = $dir/run4/d-ctl.sock" "pid_file = $dir/run4/d.pid"
	if [ $key = metrics_listen ]; then
		runs "$key naming a file" "$dir/d.conf" "$dir/d.out"
		grep -q "$f exists and is not a socket" "$dir/d.out" ||
			fail "$key naming a file: not said: $(cat "$dir/d.out")"
	else
		refused "$key naming a file" "$dir/d.conf" "$dir/d.out" \
			"$f exists and is not a socket"
	fi
	untouched "$f" || fail "$key naming a file: the file was removed or written"
done

echo "== a socket directory another user may write"
# Whoever may write the directory of the client or control socket can
# put a socket of their own in its place and pose as dlmd to clients
# and dlmctl.  dlmd does not start there: the socket's own directory
# writable by group or others (sticky or not: while dlmd is down anyone
# could put a socket there), one above it so writable without the
# sticky bit, or one owned by another user than root; it does start in
# a directory of root's under a sticky, world-writable one (as the
# tests' own under /tmp).
mkdir "$dir/open" "$dir/grp" "$dir/theirs" "$dir/sticky" "$dir/open/deep" \
	"$dir/linked"
ln -s "$dir/linked" "$dir/link"
chown -h nobody "$dir/link"
chmod 777 "$dir/open"
chmod 775 "$dir/grp"
chgrp nogroup "$dir/grp"
chown nobody "$dir/theirs"
chmod 1777 "$dir/sticky"
mkdir "$dir/sticky/ok"
for bad in socket_path:open socket_path:grp socket_path:theirs \
	   socket_path:open/deep socket_path:sticky socket_path:link \
	   control_socket:open control_socket:theirs control_socket:sticky \
	   control_socket:link; do
	key=${bad%%:*}
	sd=$dir/${bad#*:}
	conf_with "$dir/e.conf" "$key" "$sd/e-$key.sock" \
		"socket_path = $dir/run4/e.sock" \
		"control_socket = $dir/run4/e-ctl.sock" "pid_file = $dir/run4/e.pid"
	refused "$key in $bad" "$dir/e.conf" "$dir/e.out" \
		"$key .* another user could replace"
	ls "$sd" | grep -q 'e.*sock' && fail "$key in $bad: a socket or lock file was made: $(ls "$sd")"
done
write_conf "$dir/f.conf" "socket_path = $dir/sticky/ok/f.sock" \
	"control_socket = $dir/sticky/ok/f-ctl.sock" "pid_file = $dir/run4/f.pid"
runs "sockets in a root directory under a sticky one" "$dir/f.conf" "$dir/f.out"

echo "== the metrics socket in a directory another user may write"
# The same check for metrics_listen: that user could serve dlmd's
# metrics to the scraper, or hold the socket's lock file and so keep
# dlmd from starting.  The metrics socket is not made (nor its lock
# file), said, and dlmd runs without it, as when it cannot listen.
for bad in open grp theirs sticky link; do
	sd=$dir/$bad
	conf_with "$dir/m.conf" metrics_listen "$sd/m.sock" \
		"socket_path = $dir/run4/m.sock" \
		"control_socket = $dir/run4/m-ctl.sock" "pid_file = $dir/run4/m.pid"
	runs "metrics_listen in $bad" "$dir/m.conf" "$dir/m.out"
	grep -q "metrics_listen $sd/m.sock: .*another user could replace" "$dir/m.out" ||
		fail "metrics_listen in $bad: not said: $(cat "$dir/m.out")"
	ls -A "$sd" | grep -q 'm\.sock' &&
		fail "metrics_listen in $bad: a socket or lock file was made: $(ls -A "$sd")"
done

[ $rc -eq 0 ] && echo "PASS"
exit $rc
