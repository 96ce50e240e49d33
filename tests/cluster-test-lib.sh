# tests/cluster-test-lib.sh - shell helpers shared by the cluster tests
# (tests/test-cluster*.sh, tests/test-lvmlockd.sh) and the one-node ones
# (test-daemon.sh, test-dlm-tool.sh), sourced after they source
# tests/test-lib.sh (which gives CLUSTER and CLIENT) and set what they
# want other than the defaults below.  Sourcing it gives the test (unless
# it set them) dir, a fresh directory for the cluster named after the
# test, rc=0 and pids= (client PIDs).
# Installs the EXIT trap: clients killed, cluster torn down, logs kept on
# failure.  A test may also keep in holders the PIDs of its own background
# children not started by dlm-cluster exec (lock holders fed by a fifo on
# fd 3 or 4): the trap kills and reaps them and closes fds 3 and 4 before
# the teardown.  Only unreaped children belong there: it takes a PID out
# once it has waited for it.  A test that leaves more behind sets
# after_down to a command the trap runs after the teardown, and
# logs_first to the files a reader of a failure starts with.

# Defaults of the cluster tests, each kept if the test set it first:
# POLLS, the bound of every wait in polls of 0.1 s; BLOCKED_S, how long
# "nothing is granted" is watched; WORK_MS, a workload round
# (CLUSTER_TEST_WORK_MS in the environment overrides it).
: "${POLLS:=300}"
: "${BLOCKED_S:=3}"
: "${WORK_MS:=${CLUSTER_TEST_WORK_MS:-3000}}"
if [ -z "${dir:-}" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/$(basename "$0" .sh).XXXXXX") || exit 1
fi
: "${rc:=0}"
: "${pids:=}"

# The bound of every wait, in seconds, for wait_for: the test's POLLS
# polls of 0.1 s.
WAIT_S=$((POLLS / 10))

# kill_client PID: SIGKILL PID only while it is still a client of this
# cluster (dlm-cluster exec put DLM_CLUSTER_DIR=DIR in its environment).
# pid_max is 32768 here and PIDs wrap within minutes under the tests: a
# PID from a list may since belong to another process, another test's
# dlmd for one, which a bare kill would take down at its start.
kill_client() {
	tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" |
		grep -qxF "DLM_CLUSTER_DIR=$(cd "$dir" && pwd)" &&
		kill -KILL "$1" 2>/dev/null
}

cleanup() {
	for p in $pids; do
		kill_client "$p"
	done
	for p in ${holders:-}; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	exec 3>&- 4>&- 2>/dev/null
	if ! "$CLUSTER" down "$dir"; then
		echo "FAIL: teardown reported a problem" >&2
		rc=1
	fi
	${after_down:-:}
	finish "${logs_first:-dlmd: nK/dlmd.out}"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# up_cluster N [WHAT]: bring up an N-node cluster in $dir (its dlm.conf
# gets DLM_CLUSTER_CONF_EXTRA, if exported) with the workload's shared
# logs and counters directories; the test ends at once if it cannot,
# saying so (WHAT: what else the cluster was to have)
up_cluster() {
	if ! "$CLUSTER" up "$1" "$dir"; then
		echo "FAIL: cannot bring up the $1-node cluster${2:+ $2}" >&2
		rc=1
		exit 1
	fi
	mkdir -p "$dir/logs" "$dir/counters"
	chmod 777 "$dir/logs" "$dir/counters"
}

# short_of_memory K EVERY: from here on node K's dlmd, however
# dlm-cluster (re)starts it, fails one allocation of its own in EVERY
# while $dir/malloc-some exists and every one while $dir/malloc-all does
# (tests/malloc-fail.c preloaded, as a cgroup at its MemoryMax does; not
# its libraries': libqb asserts when some of its own fail).  A
# sanitizer's allocator cannot be replaced by a preloaded library: in
# such a build (asan=1 after this) dlmd fails its engine's allocations
# itself on the same files (plugin/engine.c test_alloc_setup, such builds
# only).  DLMD becomes a wrapper in $dir; call it before up_cluster.
short_of_memory() {
	som_real=$(cd "$(dirname "$DLMD")" && pwd)/$(basename "$DLMD")
	som_shim=$top_builddir/tests/.libs/malloc-fail.so
	asan=
	nm "$som_real" 2>/dev/null | grep -q __asan_init && asan=1
	if [ -n "$asan" ]; then
		som_env="DLMD_TEST_ALLOC_FAIL_EVERY=$2 DLMD_TEST_ALLOC_FAIL_FILE=$dir/malloc-some DLMD_TEST_ALLOC_FAIL_ALL_FILE=$dir/malloc-all"
	elif [ -r "$som_shim" ]; then
		som_env="MALLOC_FAIL_EVERY=$2 MALLOC_FAIL_FILE=$dir/malloc-some MALLOC_FAIL_ALL_FILE=$dir/malloc-all MALLOC_FAIL_CALLER=program LD_PRELOAD=$(cd "$(dirname "$som_shim")" && pwd)/$(basename "$som_shim")"
	else
		fail "no $som_shim (make check builds it)"
		exit 1
	fi
	cat >"$dir/dlmd" <<EOF
#!/bin/sh
case "\$*" in
*/n$1/dlm.conf*) exec env $som_env "$som_real" "\$@" ;;
esac
exec "$som_real" "\$@"
EOF
	chmod +x "$dir/dlmd"
	DLMD=$dir/dlmd
	export DLMD
}

# say TEXT: TEXT and the seconds since t_start (set before sourcing
# this file, or here)
: "${t_start:=$(date +%s)}"
say() { echo "$* ($(( $(date +%s) - t_start )) s)"; }

# fences_of K: how many times node K was fenced so far (a test whose
# dlm.conf has fence_command = dlm-cluster fence, logging to
# $dir/fence.log)
fences_of() {
	grep -c "fence node $1\$" "$dir/fence.log" 2>/dev/null || true
}

# A split into one-node rings, and the merge (test-cluster-split3.sh,
# test-cluster-split3-restart.sh).  deaf K: node K hears nothing from
# the others (nftables in its namespace drops all it receives but on
# lo); hears K: it hears them again.
deaf() {
	nsenter --net="/run/netns/$(cat "$dir/tag")n$1" nft -f - <<NFT
table inet split3 {
	chain in {
		type filter hook input priority 0; policy drop;
		iif lo accept
	}
}
NFT
}
hears() { # K
	nsenter --net="/run/netns/$(cat "$dir/tag")n$1" \
		nft delete table inet split3
}

# split_all K...: these nodes deaf to each other, each dlmd.out's length
# noted first for alone
split_all() {
	for sp_k in "$@"; do
		eval "sp_lines$sp_k=\$(wc -l <\"\$dir/n\$sp_k/dlmd.out\")"
	done
	for sp_k in "$@"; do
		deaf "$sp_k" || { fail "nft cannot drop here"; return 1; }
	done
}

# alone K...: each of these nodes has logged, since split_all, a daemon
# group of itself alone
alone() {
	for sp_k in "$@"; do
		eval "sp_from=\$((sp_lines$sp_k + 1))"
		tail -n "+$sp_from" "$dir/n$sp_k/dlmd.out" |
			grep -q "daemon group members \[$sp_k\]\$" || return 1
	done
}

# merge_all K...: these nodes hear each other again, all at once as near
# as may be (so their rings merge together)
merge_all() {
	sp_hp=
	for sp_k in "$@"; do
		hears "$sp_k" &
		sp_hp="$sp_hp $!"
	done
	for sp_p in $sp_hp; do
		wait "$sp_p"
	done
}

# fenced_live K...: fenced, the nodes of these fenced so far (fences_of),
# and live, the others (each list with a space before every id)
fenced_live() {
	fenced= live=
	for sp_k in "$@"; do
		sp_f=$(fences_of "$sp_k")
		if [ "${sp_f:-0}" -gt 0 ]; then
			fenced="$fenced $sp_k"
		else
			live="$live $sp_k"
		fi
	done
}

running() { # K NAME: is node K's NAME (dlmd, corosync) alive?
	case $2 in
	dlmd) p=$(cat "$dir/n$1/dlmd.launch-pid" 2>/dev/null) ;;
	corosync) p=$(cat "$dir/n$1/corosync.pid" 2>/dev/null) ;;
	esac
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "$2"
}

on() { # K CMD...: run CMD on node K
	k=$1
	shift
	"$CLUSTER" exec "$dir" "$k" "$@"
}

# start_client K ARGS...: a cluster-client on node K in the background,
# registered as part of the node (dlm-cluster kill takes it down too)
start_client() {
	k=$1
	shift
	"$CLUSTER" exec "$dir" "$k" "$CLIENT" "$@" >>"$dir/client-n$k.out" 2>&1 &
	echo $! >>"$dir/n$k/clients"
	pids="$pids $!"
	last_pid=$!
}

# wait_pid PID SECONDS: 0 if it exits in time with status 0
wait_pid() {
	poll "$2" not kill -0 "$1" 2>/dev/null || return 124
	wait "$1"
}

# still_waiting PID K WHAT: node K's client PID (a "try") is not granted
# for BLOCKED_S: the point of the sleep is that for this long nothing may
# be granted, so there is no event to wait for.  Else the test fails,
# saying WHAT and the client's last lines.
still_waiting() {
	sleep "$BLOCKED_S"
	kill -0 "$1" 2>/dev/null ||
		fail "$3: $(tail -n 2 "$dir/client-n$2.out")"
}

has_line() { # FILE TEXT: FILE has a line starting with TEXT
	grep -q "^$2" "$1" 2>/dev/null
}

more_lines() { # FILE REGEX N: FILE has more than N lines matching REGEX
	[ "$(grep -c "$2" "$1" 2>/dev/null)" -gt "$3" ]
}

# waiting K RES: node K's lockdump of $LS shows a request for RES waiting
waiting() {
	on "$1" "$top_builddir/plugin/dlm_tool" lockdump "$LS" 2>/dev/null |
		grep -q "gr IV rq .. .*\"$2\"\$"
}

# wait_line FILE TEXT: until FILE has a line starting with TEXT
# (bounded by POLLS polls of 0.1 s)
wait_line() {
	poll "$WAIT_S" has_line "$1" "$2" ||
		{ fail "no '$2' in $1: $(cat "$1")"; return 1; }
}

# The helpers below also need DLMCTL, LS, NRES and POLLS (bounded waits,
# polls of 0.1 s).

ls_line() { # K: node K's "dlmctl ls" lines for $LS
	on "$1" "$DLMCTL" ls 2>/dev/null | grep -A1 "^name $LS "
}

ls_has() { # K REGEX: node K's ls output matches REGEX
	ls_line "$1" | grep -q "$2"
}

# wait_ls K REGEX WHAT: until node K's ls output matches REGEX
wait_ls() {
	poll "$WAIT_S" ls_has "$1" "$2" ||
		{ fail "node $1: $3; dlmctl ls: $(ls_line "$1")"; return 1; }
}

busy_logs() { # how many workload clients (of any round) have locked
	find "$dir/logs" -name 'n*.log' -size +0 2>/dev/null | wc -l
}

workload() { # MS NODES...: two clients per node (wl_clients, if set)
	ms=$1
	shift
	wl_mark=$(busy_logs)
	wl_n=0
	for k in "$@"; do
		: >"$dir/wl-n$k"
		for c in $(seq 1 "${wl_clients:-2}"); do
			start_client "$k" work "$LS" "$dir" $NRES "$ms" "$k$c"
			echo "$last_pid" >>"$dir/wl-n$k"
			wl_n=$((wl_n + 1))
		done
	done
}

# workload_busy: every client of the last workload call has locked once
# (what a test waits for before it injects a fault into the workload)
workload_busy() {
	[ "$(busy_logs)" -ge $((wl_mark + wl_n)) ]
}

wait_workload() { # SECONDS NODES...: the clients of these nodes end well
	s=$1
	shift
	for k in "$@"; do
		for p in $(cat "$dir/wl-n$k"); do
			wait_pid "$p" "$s" || fail "a workload client on node $k ($p) failed or hung"
		done
	done
}

check() { # WHAT
	if ! "$CLIENT" check "$dir" $NRES >"$dir/check.out" 2>&1; then
		fail "$1: checker: $(grep -c VIOLATION "$dir/check.out") violations"
		head -n 20 "$dir/check.out" >&2
	fi
	echo "   $(tail -n 1 "$dir/check.out")"
}

# The remastering tests' look at one resource, res-0, in node K's
# lockdump of $LS (test-cluster-remaster, -repoint, -repoint-faults).
# master_is K M ROLE: res-0 is mastered by node M, and K's copy is ROLE
# (master-copy or local-copy)
master_is() {
	on "$1" "$DLMCTL" lockdump "$LS" 2>/dev/null |
		grep -q "^resource \"res-0\" master $2 $3"
}

master_of() { # K: the master of res-0 in node K's lockdump (empty: none)
	on "$1" "$DLMCTL" lockdump "$LS" 2>/dev/null |
		sed -n 's/^resource "res-0" master \([0-9]*\) .*/\1/p'
}

# has_lock_of K N: node K's res-0 has a master copy of node N's lock
has_lock_of() {
	on "$1" "$DLMCTL" lockdump "$LS" 2>/dev/null |
		sed -n '/^resource "res-0"/,/^resource/p' | grep -q " node $2 remid "
}

lacks_lock_of() { ! has_lock_of "$@"; }
