# tests/test-lib.sh - shell helpers of the tests that keep a directory of
# files (tests/cluster-test-lib.sh, tests/ocf-agent.sh,
# tests/pcmk-cluster.sh, tests/install-check.sh and the one-dlmd tests
# below).  Sourced after rc=0 is set; dir (the test's directory) need
# only be set by the time finish runs.  Sourcing it right after top_srcdir
# is set makes top_srcdir absolute and gives the test top_builddir
# (absolute, exported), DLMD, DLMCTL, CLUSTER (tests/dlm-cluster, which
# runs corosync and dlmd nodes in namespaces) and CLIENT (the cluster
# tests' lock client).

top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
export top_builddir
DLMD=$top_builddir/plugin/dlmd
DLMCTL=$top_builddir/plugin/dlmctl
CLUSTER=$top_srcdir/tests/dlm-cluster
CLIENT=$top_builddir/tests/cluster-client

# fail WHAT: report WHAT, and the test fails at its end
fail() {
	echo "FAIL: $*" >&2
	rc=1
}

# finish [WHERE]: the last step of an EXIT trap.  A passed test's
# directory goes; a failed test's is kept for its logs, WHERE saying which
# of its files to read first.  Exits with rc.
finish() {
	if [ "$rc" -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "files kept in $dir${1:+ ($1)}" >&2
	fi
	exit "$rc"
}

# The tests that run one dlmd of their own, without a cluster
# (test-cli.sh, test-metrics.sh, test-client-*.sh, test-daemon-env.sh),
# also share:

# wait_gone PID: until process PID is gone, for at most POLLS polls of
# 0.1 s; 1 if it is still there
wait_gone() {
	poll $((POLLS / 10)) not kill -0 "$1"
}

# stop_dlmd: the dlmd at $pid, if it runs, gets SIGTERM and POLLS polls
# of 0.1 s to stop, then SIGKILL.  Empties pid.  Returns 1 if SIGTERM
# did not stop it.
stop_dlmd() {
	stopped=0
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		if ! wait_gone "$pid"; then
			stopped=1
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	pid=
	return $stopped
}

# write_conf FILE [LINE...]: a dlm.conf for the test's own dlmd, with no
# cluster (membership none), its sockets and pid file in $dir, no syslog
# and no configfs view; the LINEs ("key = value") follow the defaults,
# and a LINE replaces the default of its key.
write_conf() {
	wc_file=$1
	shift
	: >"$wc_file"
	# (the LINEs end at a "--": one_dlmd's CMD follows)
	for wc_line in "membership = none" "socket_path = $dir/dlmd.sock" \
		"control_socket = $dir/dlmd-ctl.sock" "pid_file = $dir/dlmd.pid" \
		"log_syslog = no" "configfs_dir = none"; do
		wc_given=
		for wc_x in "$@"; do
			[ "$wc_x" = -- ] && break
			[ "${wc_x%% =*}" = "${wc_line%% =*}" ] && wc_given=1
		done
		[ -n "$wc_given" ] || echo "$wc_line" >>"$wc_file"
	done
	for wc_x in "$@"; do
		[ "$wc_x" = -- ] && break
		echo "$wc_x"
	done >>"$wc_file"
}

dlmd_ready() { # OUT PID: dlmd logged it is ready in OUT, or PID is gone
	grep -q 'dlmd ready' "$1" 2>/dev/null || ! kill -0 "$2" 2>/dev/null
}

# start_dlmd CONF OUT [CMD...]: dlmd --foreground with CONF in the
# background (through CMD, if given: prlimit ..., setpriv ...), its PID
# in pid, stdout and stderr in OUT; returns once it says it is ready.  A
# dlmd that does not start ends the test.
start_dlmd() {
	sd_conf=$1
	sd_out=$2
	shift 2
	# emptied here, not only by the redirection below: that one is made
	# in the child, after the fork, and a first dlmd_ready that ran
	# before it read a previous dlmd's "dlmd ready" from the same file
	# (test-client-watch step 3 failed so: "still not ready after 10 s"
	# at once, under load)
	: >"$sd_out"
	"$@" "$DLMD" --foreground --config="$sd_conf" >"$sd_out" 2>&1 </dev/null &
	pid=$!
	poll $((POLLS / 10)) dlmd_ready "$sd_out" "$pid"
	if ! grep -q 'dlmd ready' "$sd_out" 2>/dev/null; then
		# say which: still starting (where it waits), or gone (how)
		if kill -0 "$pid" 2>/dev/null; then
			sd_how="still not ready after $((POLLS / 10)) s, state $(sed -n 's/^State:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null), waiting in $(cat "/proc/$pid/wchan" 2>/dev/null)"
		else
			wait "$pid" 2>/dev/null
			sd_how="exited, status $?"
		fi
		fail "dlmd did not start ($sd_how): $(cat "$sd_out")"
		exit 1
	fi
}

# one_dlmd_test NAME [WHY]: the start of a test that runs one dlmd of its
# own: it needs root (WHY: what for, said when it is not), and fails
# otherwise, never skips; rc=0, pid= and holders= (PIDs the end kills:
# fifo_hold's); dir a new directory dlmd-NAME.XXXXXX, searchable by all
# (unprivileged clients reach the sockets in it); DLMD_SOCKET and
# DLMD_CTL_SOCKET exported for write_conf's sockets; the traps that end
# the test through one_dlmd_end.
one_dlmd_test() {
	rc=0
	pid=
	holders=
	[ "$(id -u)" = 0 ] || { echo "FAIL: needs root${2:+ ($2)}" >&2; exit 1; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-$1.XXXXXX") || exit 1
	chmod 755 "$dir"
	export DLMD_SOCKET=$dir/dlmd.sock DLMD_CTL_SOCKET=$dir/dlmd-ctl.sock
	trap one_dlmd_end EXIT
	trap 'rc=1; exit 1' INT TERM
}

# one_dlmd_end: one_dlmd_test's EXIT trap: the test's own cleanup_more
# first, if it defines one; then every PID in holders is continued (a
# test may have stopped it) and killed, dlmd stopped (stop_dlmd), a
# sanitizer report in any $dir/*.out fails the test; finish.
one_dlmd_end() {
	if command -v cleanup_more >/dev/null 2>&1; then
		cleanup_more
	fi
	for ode_h in $holders; do
		kill -CONT "$ode_h" 2>/dev/null
		kill -KILL "$ode_h" 2>/dev/null
		wait "$ode_h" 2>/dev/null
	done
	stop_dlmd
	check_sanitizer "$dir"/*.out
	finish "dlmd: dlmd.out"
}

# one_dlmd [LINE...] [-- CMD...]: $dir/dlm.conf written (write_conf, with
# the LINEs) and a dlmd started on it (start_dlmd, through CMD if given),
# its output in $dir/dlmd.out, its PID in pid
one_dlmd() {
	write_conf "$dir/dlm.conf" "$@"
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		shift
	done
	[ $# -gt 0 ] && shift
	start_dlmd "$dir/dlm.conf" "$dir/dlmd.out" "$@"
}

# status_value KEY: the value of KEY in dlmctl status
status_value() {
	"$DLMCTL" status | sed -n "s/^$1 //p"
}

# fifo_hold NAME FD CMD...: CMD in the background (its PID in held_NAME
# and holders), its stdin the fifo $dir/NAME.fifo that this shell keeps
# open on FD (3..9), its output in $dir/NAME.out; fifo_release NAME FD
# closes it (EOF: CMD lets go and exits).  The other holders' fifo ends
# stay here, not in CMD: their EOF must not wait for CMD.
fifo_hold() {
	fh_name=$1
	fh_fd=$2
	shift 2
	mkfifo "$dir/$fh_name.fifo"
	"$@" <"$dir/$fh_name.fifo" >"$dir/$fh_name.out" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	eval "held_$fh_name=$!"
	holders="$holders $!"
	eval "exec $fh_fd>\"\$dir/\$fh_name.fifo\""
}

# fifo_release NAME FD: fifo_hold's CMD NAME gets EOF and exits (within
# POLLS polls, or it fails the test and is killed); it leaves holders
fifo_release() {
	eval "exec $2>&-"
	eval "fr_pid=\$held_$1"
	if ! wait_gone "$fr_pid"; then
		fail "$1 did not exit after its stdin closed: $(cat "$dir/$1.out")"
		kill -KILL "$fr_pid" 2>/dev/null
	fi
	wait "$fr_pid" 2>/dev/null
	holders=$(echo " $holders " | sed "s/ $fr_pid / /; s/^ *//; s/ *\$//")
}

# check_sanitizer FILE...: fails the test if a sanitizer reported in any
# of the FILEs (those that do not exist are skipped)
check_sanitizer() {
	if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error' "$@" 2>/dev/null; then
		fail "sanitizer report in $*"
	fi
}

# poll SECONDS CMD...: run CMD (its output discarded) every 0.1 s until
# it succeeds, at most 10 times a second of SECONDS (a slow CMD makes the
# bound longer, not the number of tries smaller); 1 if it never did
poll() {
	poll_left=$(($1 * 10))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $poll_left -le 0 ] && return 1
		sleep 0.1
		poll_left=$((poll_left - 1))
	done
}

# wait_for SECONDS WHAT CMD...: poll, and if CMD never succeeded the test
# fails, saying it timed out waiting for WHAT; 1 then
wait_for() {
	wf_s=$1
	wf_what=$2
	shift 2
	poll "$wf_s" "$@" && return 0
	fail "timed out ($wf_s s) waiting for $wf_what"
	return 1
}

# not CMD...: CMD fails (for wait_for: not running 2 corosync)
not() {
	! "$@"
}
