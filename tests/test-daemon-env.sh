#!/bin/sh
# tests/test-daemon-env.sh - a one-node dlmd (membership none, sockets in a
# temporary directory) under what a careless operator or its environment
# does to it, with a client holding a lock (tests/limit-client) throughout:
#   1. signals that are not a stop: SIGHUP (a "reload", a log rotation's
#      kill -HUP, the terminal of a foreground dlmd closing), SIGUSR1,
#      SIGUSR2.  Their default action would kill dlmd, ending every lock
#      of the node (and getting it fenced in a cluster) past the refusal
#      to stop while lockspaces are in use; dlmd logs each and goes on,
#      and the lock is still held.
#   2. a full file system: dlmd's run directory (sockets, pid file,
#      configfs view) is a small tmpfs of its own mount namespace, filled
#      up (blocks and inodes).  Lockspaces are still created and locked
#      in; the view's failure is logged once, not at every write, and
#      "dlmctl status" says it; once there is room again, the view is
#      written whole at the next tick (scan_secs 1): the lockspaces
#      created meanwhile appear, and status says "on" again.
#   3. a very low RLIMIT_NOFILE (6, soft and hard: "ulimit -n 6" before
#      starting it): dlmd refuses to start, exit 1, saying why (it died of
#      SIGSEGV in libqb's qb_loop_signal_add() without a fd for its
#      signal pipe).
#   4. started with stdin, stdout and stderr closed ("dlmd -f <&- >&-
#      2>&-"): they are /dev/null in dlmd, not the first files it opens
#      (the lock file was fd 0, libqb's signal pipe fd 2: the log went
#      into the pipe the loop reads signals from).
#   5. the pid file's directory is to be made on a read-only file
#      system: dlmd runs, and its warning says "Read-only file system"
#      (it said "No such file or directory", of the file, not why), and
#      so does the refusal to start when the lock file's directory is.
#   6. dlmd killed (SIGKILL) under a client holding a lock: the client's
#      next calls on its handle fail with ENOTCONN, as dlm_lock(3) says
#      of a daemon gone (the _wait ones said EPIPE, which a program
#      that reconnects on ENOTCONN took for another error); a dlmd
#      started again serves the lockspace's new users.
#   7. "dlmd -c DIR", a directory for the config file: dlmd refuses to
#      start, exit 1, saying why (it read the directory as an empty file
#      and ran on the defaults: another socket, corosync membership).
#   8. the log's readers stop reading (a journald or syslog daemon that
#      stalls, a "dlmd -f | tee" stopped): /dev/log is a socket whose
#      reader is SIGSTOPped (a private /dev in this mount namespace) and
#      "dlmd -f"'s stderr a pipe whose reader is; lockspaces come and go
#      (log lines at debug) until dlmd's flight recorder notes both full.
#      dlmd goes on serving (dlmctl, a client locking) and counts what it
#      dropped (status log_lines_dropped); once the readers read again,
#      each gets a line saying how many lines it missed, then the rest.
#      (dlmd blocked in the kernel at the next line, for as long as the
#      reader did, serving nothing: after ~10 lines to /dev/log here.)
#   9. a config that is no text file: /dev/zero (dlmd read empty lines
#      from it for ever), a FIFO with no writer (dlmd waited at open for
#      ever), a line with a NUL byte in its value (cut there and taken:
#      "max_clients_per_uid = 5<NUL>0" ran with 5), a key of control
#      bytes (printed raw in the error): each refused, exit 1, saying
#      why, within the bound, the bytes shown as '?'.
#  10. started from a pipeline with a pipe open on a higher fd (a
#      shell's own at 255, a CI runner's, "dlmd 7>&1 | cat"): dlmd, as
#      a daemon (no --foreground, as an init script starts it), keeps
#      none of it: the pipeline ends once the starting dlmd returns, and
#      neither the daemon nor a fence_command it runs has the pipe.  (It
#      kept every fd it was given: the pipeline never ended, "cat" waited
#      on the pipe for as long as dlmd ran.)
#  11. "dlmd -f 2>>FILE" with FILE's file system full (a log partition
#      filled up): dlmd goes on serving, counts the lines it could not
#      write (status log_lines_dropped) and, once there is room again,
#      says first how many were lost and why.  (They were lost without a
#      count or a word: the write's ENOSPC was taken for a stderr that
#      cannot be written at all.)
# Needs root (as the other one-dlmd tests, and unshare -m); fails, never
# skips.  Every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
if [ -z "${DLMD_ENV_NS:-}" ]; then
	# a mount namespace of our own for the small tmpfs
	DLMD_ENV_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
. "$top_srcdir/tests/test-lib.sh"
LC=$top_builddir/tests/limit-client
POLLS=100		# waits: polls of 0.1 s

one_dlmd_test env "unshare -m"
run=$dir/run
# cleanup_more: the holder goes and dlmd stops (one_dlmd_end's stop then
# finds none) before their file systems are unmounted
cleanup_more() {
	exec 4>&- 2>/dev/null
	for h in $holders; do
		kill -KILL "$h" 2>/dev/null
		wait "$h" 2>/dev/null
	done
	holders=
	stop_dlmd
	umount "$run" 2>/dev/null
	umount "$dir/ro" 2>/dev/null
	[ -n "${c11:-}" ] && kill -KILL "$c11" 2>/dev/null
	umount "$dir/c11/logs" 2>/dev/null
	if [ -n "${own_dev:-}" ]; then
		umount -l /dev 2>/dev/null
		umount -l "$dir/olddev" 2>/dev/null
	fi
}

mkdir "$run" && mount -t tmpfs -o size=1m,nr_inodes=200,mode=0755 dlmd-env "$run" ||
	{ fail "cannot mount a tmpfs on $run"; exit 1; }
export DLMD_SOCKET=$run/dlmd.sock DLMD_CTL_SOCKET=$run/dlmd-ctl.sock
SPACES=$run/configfs/dlm/cluster/spaces

# locked_once: the holder said it holds its lock
locked_once() {
	grep -q '^locked 1$' "$dir/holder.out"
}

# lock_held: dlmctl lockdump shows a granted lock in lockspace env
lock_held() {
	"$DLMCTL" lockdump env 2>/dev/null | grep -q 'granted'
}

one_dlmd "log_level = debug" "scan_secs = 1" \
	"socket_path = $run/dlmd.sock" "control_socket = $run/dlmd-ctl.sock" \
	"pid_file = $run/dlmd.pid" "configfs_dir = $run/configfs"
"$LC" create env 0600 || fail "cannot create lockspace env"
fifo_hold holder 4 "$LC" locks env 1 0
wait_for 10 "the holder's lock" locked_once || exit 1

echo "== 1. SIGHUP, SIGUSR1, SIGUSR2 do not stop dlmd"
# ignored_lines N: dlmd logged N signals ignored
ignored_lines() {
	[ "$(grep -c 'signal [0-9]* (.*) ignored' "$dir/dlmd.out")" = "$1" ]
}
n=0
for sig in HUP USR1 USR2; do
	n=$((n + 1))
	kill -"$sig" "$pid"
	wait_for 10 "dlmd's line about SIG$sig" ignored_lines $n || break
	kill -0 "$pid" 2>/dev/null || { fail "SIG$sig killed dlmd"; break; }
	"$DLMCTL" status >/dev/null 2>&1 || fail "dlmctl status after SIG$sig"
	lock_held || fail "the lock is gone after SIG$sig: $("$DLMCTL" lockdump env 2>&1)"
done

echo "== 2. the run directory's file system full"
dd if=/dev/zero of="$run/fill" bs=4k count=1024 2>/dev/null
i=0
while [ $i -lt 400 ] && (: >"$run/inode$i") 2>/dev/null; do
	i=$((i + 1))
done
[ "$(df --output=avail "$run" | tail -1)" -eq 0 ] || fail "the tmpfs is not full: $(df "$run")"
for ls in full1 full2 full3; do
	"$LC" create $ls 0600 || fail "cannot create lockspace $ls on a full file system"
done
timeout 20 "$LC" locks full1 3 0 </dev/null >"$dir/full.out" 2>&1
grep -q '^locked 3$' "$dir/full.out" || fail "locking on a full file system: $(cat "$dir/full.out")"
"$DLMCTL" status | grep -q '^configfs .*last write failed.*No space left' ||
	fail "status does not say the view failed: $("$DLMCTL" status | grep configfs)"
n=$(grep -c 'configfs view: .*No space left' "$dir/dlmd.out")
[ "$n" = 1 ] || fail "the view's failure logged $n times, want once"
[ -e "$SPACES/full1" ] && fail "full1 is in the view on a full file system?"
# ticks come and fail again, quietly
sleep 2.5
n=$(grep -c 'configfs view: .*No space left' "$dir/dlmd.out")
[ "$n" = 1 ] || fail "the view's failure logged $n times over ticks, want once"

rm -f "$run/fill" "$run"/inode*
# view_caught_up: every lockspace made meanwhile is in the view
view_caught_up() {
	for ls in full1 full2 full3 env; do
		[ "$(cat "$SPACES/$ls/nodes/1/nodeid" 2>/dev/null)" = 1 ] || return 1
	done
}
wait_for 10 "the lockspaces in the view once there is room" view_caught_up
wait_for 10 "the log line saying the view is right again" \
	grep -q 'configfs view: up to date again' "$dir/dlmd.out"
"$DLMCTL" status | grep -q "^configfs $run/configfs on\$" ||
	fail "status after the view caught up: $("$DLMCTL" status | grep configfs)"
left=$(ls -A "$SPACES" | grep '^\.')
[ -z "$left" ] || fail "temporaries left in the view: $left"

echo "== 3. too few fds to start"
mkdir "$dir/low"
write_conf "$dir/low.conf" "socket_path = $dir/low/dlmd.sock" \
	"control_socket = $dir/low/dlmd-ctl.sock" "pid_file = $dir/low/dlmd.pid"
timeout 20 prlimit --nofile=6:6 "$DLMD" --foreground --config="$dir/low.conf" \
	>"$dir/low.out" 2>&1 </dev/null
st=$?
[ $st = 1 ] || fail "dlmd with 6 fds: exit status $st, want 1: $(tail -n 3 "$dir/low.out")"
grep -q 'RLIMIT_NOFILE is 6 .*not starting' "$dir/low.out" ||
	fail "dlmd with 6 fds does not say why it stops: $(tail -n 3 "$dir/low.out")"

echo "== 4. started with fds 0, 1 and 2 closed"
mkdir "$dir/closed"
write_conf "$dir/closed.conf" "socket_path = $dir/closed/dlmd.sock" \
	"control_socket = $dir/closed/dlmd-ctl.sock" "pid_file = $dir/closed/dlmd.pid"
"$DLMD" --foreground --config="$dir/closed.conf" <&- >&- 2>&- &
closed=$!
# closed_ready: its control socket answers
closed_ready() {
	DLMD_CTL_SOCKET=$dir/closed/dlmd-ctl.sock "$DLMCTL" status
}
if wait_for 20 "the dlmd started with fds 0-2 closed" closed_ready; then
	for fd in 0 1 2; do
		t=$(readlink "/proc/$closed/fd/$fd")
		[ "$t" = /dev/null ] || fail "fd $fd of a dlmd started with it closed is $t, not /dev/null"
	done
fi
kill -TERM "$closed"
wait_gone "$closed" || { fail "the dlmd started with fds closed did not stop"; kill -KILL "$closed"; }
wait "$closed" 2>/dev/null

echo "== 5. the pid file's and lock file's directories on a read-only file system"
mkdir "$dir/ro" "$dir/ro-run"
mount -t tmpfs -o ro dlmd-env-ro "$dir/ro" || fail "cannot mount a read-only tmpfs"
write_conf "$dir/ro.conf" "socket_path = $dir/ro-run/dlmd.sock" \
	"control_socket = $dir/ro-run/dlmd-ctl.sock" "pid_file = $dir/ro/sub/dlmd.pid"
"$DLMD" --foreground --config="$dir/ro.conf" >"$dir/ro.out" 2>&1 </dev/null &
ro=$!
# ro_said: the dlmd with its pid file on the read-only file system logged
# its warning or is gone
ro_said() {
	grep -q 'pid file' "$dir/ro.out" || ! kill -0 "$ro" 2>/dev/null
}
wait_for 20 "the pid file's warning" ro_said
grep -q "pid file $dir/ro/sub/dlmd.pid: Read-only file system" "$dir/ro.out" ||
	fail "the pid file's warning: $(grep 'pid file' "$dir/ro.out")"
kill -0 "$ro" 2>/dev/null || fail "dlmd stopped for want of its pid file: $(tail -n 3 "$dir/ro.out")"
kill -TERM "$ro" 2>/dev/null
wait_gone "$ro" || { fail "that dlmd did not stop"; kill -KILL "$ro"; }
wait "$ro" 2>/dev/null
write_conf "$dir/ro2.conf" "socket_path = $dir/ro/run/dlmd.sock" \
	"control_socket = $dir/ro-run/dlmd-ctl.sock" "pid_file = $dir/ro-run/dlmd.pid"
timeout 20 "$DLMD" --foreground --config="$dir/ro2.conf" >"$dir/ro2.out" 2>&1 </dev/null
st=$?
[ $st = 1 ] || fail "dlmd whose lock file cannot be made: exit status $st, want 1"
grep -q "cannot open lock file $dir/ro/run/dlmd.sock.lock: Read-only file system" "$dir/ro2.out" ||
	fail "the lock file's refusal: $(cat "$dir/ro2.out")"
umount "$dir/ro"

fifo_release holder 4
stop_dlmd || fail "dlmd did not stop on SIGTERM"

echo "== 6. dlmd killed under a client: ENOTCONN, then served again"
start_dlmd "$dir/dlm.conf" "$dir/dlmd-gone.out"
"$LC" create gone 0600 || fail "cannot create lockspace gone"
fifo_hold gone 4 "$LC" gone gone
wait_for 10 "the client's lock" grep -q '^held$' "$dir/gone.out"
kill -KILL "$pid"
wait_gone "$pid" || fail "dlmd did not die of SIGKILL"
pid=
echo >&4
fifo_release gone 4
for call in lock_wait lock unlock_wait unlock; do
	grep -q "^$call ENOTCONN\$" "$dir/gone.out" ||
		fail "$call with dlmd gone: $(grep "^$call " "$dir/gone.out"), want ENOTCONN"
done
start_dlmd "$dir/dlm.conf" "$dir/dlmd-again.out"
"$LC" create gone 0600 || fail "the lockspace cannot be made again"
timeout 20 "$LC" locks gone 1 0 </dev/null >"$dir/again.out" 2>&1
grep -q '^locked 1$' "$dir/again.out" || fail "a new client after the restart: $(cat "$dir/again.out")"
stop_dlmd || fail "the restarted dlmd did not stop on SIGTERM"

echo "== 7. a directory for the config file"
mkdir "$dir/confdir"
timeout 20 "$DLMD" --foreground --config="$dir/confdir" >"$dir/confdir.out" 2>&1 </dev/null
st=$?
[ $st = 1 ] || fail "dlmd -c DIR: exit status $st, want 1: $(cat "$dir/confdir.out")"
grep -q "$dir/confdir: cannot read: Is a directory" "$dir/confdir.out" ||
	fail "dlmd -c DIR did not say why: $(cat "$dir/confdir.out")"

echo "== 8. the log's readers stop reading"
# A /dev of our own (this mount namespace's), with the devices the rest
# needs and /dev/log a datagram socket read by a python3 process that
# copies what it reads into syslog.out.
PYTHON=$(command -v /usr/bin/python3 || command -v python3)
mkdir "$dir/olddev" "$dir/l8"
chmod 755 "$dir/l8"
if mount --bind /dev "$dir/olddev" && mount -t tmpfs -o mode=0755 dlmd-env-dev /dev; then
	own_dev=1
	for n in null zero urandom random; do
		: >"/dev/$n" && mount --bind "$dir/olddev/$n" "/dev/$n" ||
			fail "cannot give the private /dev its $n"
	done
else
	fail "cannot mount a /dev of our own"
	exit 1
fi
"$PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
out = open(sys.argv[1], "ab", buffering=0)
out.write(b"bound\n")
while True:
    out.write(s.recv(4096) + b"\n")
' "$dir/syslog.out" </dev/null 2>"$dir/syslog.err" &
syslogd=$!
holders="$holders $syslogd"
wait_for 10 "the syslog reader" grep -q '^bound$' "$dir/syslog.out" || exit 1
mkfifo "$dir/stderr.fifo"
cat "$dir/stderr.fifo" >"$dir/dlmd-log.out" &
errcat=$!
holders="$holders $errcat"
export DLMD_SOCKET=$dir/l8/dlmd.sock DLMD_CTL_SOCKET=$dir/l8/dlmd-ctl.sock
write_conf "$dir/l8.conf" "log_syslog = yes" "log_level = debug" \
	"socket_path = $DLMD_SOCKET" "control_socket = $DLMD_CTL_SOCKET" \
	"pid_file = $dir/l8/dlmd.pid"
"$DLMD" --foreground --config="$dir/l8.conf" >"$dir/stderr.fifo" 2>&1 </dev/null &
pid=$!
wait_for 20 "dlmd with a syslog socket and a stderr pipe" \
	grep -q 'dlmd ready' "$dir/dlmd-log.out" || exit 1
grep -q 'dlmd.*ready' "$dir/syslog.out" || fail "syslog did not get dlmd's lines: $(cat "$dir/syslog.out")"
kill -STOP "$syslogd" "$errcat"
# both_full: the flight recorder says both sinks filled up
both_full() {
	d8=$("$DLMCTL" dump) || return 1
	echo "$d8" | grep -q 'syslog (/dev/log) is full' &&
		echo "$d8" | grep -q 'stderr is full'
}
i=0
while [ $i -lt 400 ] && ! both_full; do
	if ! timeout 20 "$LC" create "log$i" 0600 ||
	   ! timeout 20 "$DLMCTL" leave "log$i" >/dev/null 2>&1; then
		fail "dlmd stopped serving while its log readers did not read ($i lockspaces in; dlmd in $(cat "/proc/$pid/wchan" 2>/dev/null))"
		exit 1
	fi
	i=$((i + 1))
done
both_full || fail "after $i lockspaces the flight recorder notes no full sink: $("$DLMCTL" dump 2>&1 | tail -n 5)"
timeout 20 "$LC" create log-locks 0600 || fail "cannot create a lockspace with the log readers stopped"
timeout 20 "$LC" locks log-locks 5 0 </dev/null >"$dir/l8-locks.out" 2>&1
grep -q '^locked 5$' "$dir/l8-locks.out" || fail "a client with the log readers stopped: $(cat "$dir/l8-locks.out")"
dropped=$(status_value log_lines_dropped)
[ "${dropped:-0}" -gt 0 ] || fail "status log_lines_dropped is '$dropped' with both readers stopped"
kill -CONT "$syslogd" "$errcat"
"$LC" create log-after 0600 || fail "cannot create a lockspace once the readers read"
wait_for 10 "the line telling syslog what it missed" \
	grep -q 'dlmd\[[0-9]*\]: [0-9]* log lines dropped: the log.s reader did not keep up' "$dir/syslog.out"
wait_for 10 "the line telling stderr what it missed" \
	grep -q '[0-9]* log lines dropped: the log.s reader did not keep up' "$dir/dlmd-log.out"
wait_for 10 "the lines after that on syslog" grep -q 'lockspace log-after created' "$dir/syslog.out"
wait_for 10 "the lines after that on stderr" grep -q 'lockspace log-after created' "$dir/dlmd-log.out"
"$DLMCTL" leave log-after >/dev/null 2>&1
"$DLMCTL" leave log-locks >/dev/null 2>&1
stop_dlmd || fail "dlmd did not stop on SIGTERM after its log readers stalled"
check_sanitizer "$dir/dlmd-log.out"

echo "== 9. a config that is no text file"
mkdir "$dir/c9"
mkfifo "$dir/c9/fifo"
write_conf "$dir/c9/nul.conf" "socket_path = $dir/c9/dlmd.sock" \
	"control_socket = $dir/c9/dlmd-ctl.sock" "pid_file = $dir/c9/dlmd.pid"
cp "$dir/c9/nul.conf" "$dir/c9/ctl.conf"
printf 'max_clients_per_uid = 5\000\060\n' >>"$dir/c9/nul.conf"
printf '\001\033[2Jkey = 1\n' >>"$dir/c9/ctl.conf"
# refused FILE WHAT PATTERN: dlmd -c FILE exits 1 within the bound,
# its output matching PATTERN
refused() {
	timeout 20 "$DLMD" --foreground --config="$1" >"$dir/c9/out" 2>&1 </dev/null
	st=$?
	[ $st = 1 ] || fail "dlmd -c $2: exit status $st, want 1 (124: still running after 20 s): $(head -c 300 "$dir/c9/out")"
	grep -q "$3" "$dir/c9/out" || fail "dlmd -c $2 does not say why: $(head -c 300 "$dir/c9/out")"
}
refused /dev/zero /dev/zero '/dev/zero: cannot read: not a regular file'
refused "$dir/c9/fifo" "a FIFO" "fifo: cannot read: not a regular file"
refused "$dir/c9/nul.conf" "a NUL byte" 'nul.conf:7: a NUL byte'
refused "$dir/c9/ctl.conf" "control bytes" "ctl.conf:7: unknown key '??\[2Jkey'"
LC_ALL=C grep -q '[^[:print:][:space:]]' "$dir/c9/out" &&
	fail "the error about a key of control bytes has them raw: $(od -c "$dir/c9/out" | head -n 5)"

echo "== 10. started with a pipe on higher fds: the daemon keeps none"
mkdir "$dir/c10"
write_conf "$dir/c10/dlm.conf" "socket_path = $dir/c10/dlmd.sock" \
	"control_socket = $dir/c10/dlmd-ctl.sock" "pid_file = $dir/c10/dlmd.pid"
# a pipe on fd 7 (sh takes no fds above 9); the pipeline ends when its
# last writer is gone.  And a FIFO on fd 9, to find it by name in the
# daemon's fds after (its own fds take the same numbers).
mkfifo "$dir/c10/fifo"
timeout 20 sh -c '"$1" --config="$2" 7>&1 9<>"$3" >/dev/null 2>&1 </dev/null | cat >/dev/null' \
	sh "$DLMD" "$dir/c10/dlm.conf" "$dir/c10/fifo"
st=$?
[ $st = 0 ] || fail "the pipeline that started dlmd as a daemon with a pipe on fd 7: exit status $st, want 0 (124: it did not end within 20 s: the daemon holds the pipe)"
# c10_ready: the daemon's control socket answers
c10_ready() {
	DLMD_CTL_SOCKET=$dir/c10/dlmd-ctl.sock "$DLMCTL" status >/dev/null 2>&1
}
c10=
wait_for 20 "the daemonized dlmd" c10_ready &&
	c10=$(cat "$dir/c10/dlmd.pid" 2>/dev/null)
if [ -n "$c10" ] && kill -0 "$c10" 2>/dev/null; then
	for f in "/proc/$c10/fd/"*; do
		[ "$(readlink "$f")" = "$dir/c10/fifo" ] &&
			fail "the daemon kept the FIFO it was started with on fd 9, as $f"
	done
	kill -TERM "$c10"
	wait_gone "$c10" || { fail "the daemonized dlmd did not stop"; kill -KILL "$c10"; }
else
	fail "no daemonized dlmd (pid file: '$c10')"
fi

echo "== 11. stderr a file on a full file system"
mkdir -p "$dir/c11/logs"
mount -t tmpfs -o size=64k dlmd-env-log "$dir/c11/logs" ||
	{ fail "cannot mount a tmpfs on $dir/c11/logs"; exit 1; }
write_conf "$dir/c11/dlm.conf" "socket_path = $dir/c11/dlmd.sock" \
	"control_socket = $dir/c11/dlmd-ctl.sock" "pid_file = $dir/c11/dlmd.pid" \
	"log_level = debug"
c11_ctl() { # dlmctl ARGS... of the c11 dlmd
	DLMD_CTL_SOCKET=$dir/c11/dlmd-ctl.sock "$DLMCTL" "$@"
}
c11_ready() {
	c11_ctl status >/dev/null 2>&1
}
"$DLMD" --foreground --config="$dir/c11/dlm.conf" >>"$dir/c11/logs/dlmd.out" 2>&1 </dev/null &
c11=$!
if wait_for 20 "the dlmd logging to a small file system" c11_ready; then
	# fill it: dd stops at ENOSPC
	dd if=/dev/zero of="$dir/c11/logs/fill" bs=1k count=256 2>/dev/null
	# (the file's last page takes a few lines more: 40 lockspaces, each
	# 4 lines at debug, are past it)
	for i in $(seq 1 40); do
		DLMD_SOCKET=$dir/c11/dlmd.sock "$LC" create "full$i" 0600 ||
			fail "lockspace full$i not created while the log's file system is full"
	done
	kill -0 "$c11" 2>/dev/null || fail "dlmd died when its log's file system was full"
	d11=$(c11_ctl status | sed -n 's/^log_lines_dropped //p')
	[ "${d11:-0}" -gt 0 ] ||
		fail "status log_lines_dropped is '$d11' after lines were lost to a full file system"
	rm -f "$dir/c11/logs/fill"
	DLMD_SOCKET=$dir/c11/dlmd.sock "$LC" create room 0600 || fail "lockspace room not created"
	wait_for 10 "the note of the lines lost to the full file system" \
		grep -q "[0-9]* log lines dropped: the log's file system was full" "$dir/c11/logs/dlmd.out"
	wait_for 10 "the lines after it" grep -q "lockspace room created" "$dir/c11/logs/dlmd.out"
fi
kill -TERM "$c11"
if ! wait_gone "$c11"; then
	c11_ctl leave --force full1 >/dev/null 2>&1
	kill -KILL "$c11"
fi
wait "$c11" 2>/dev/null
c11=
check_sanitizer "$dir/c11/logs/dlmd.out"
umount "$dir/c11/logs"
