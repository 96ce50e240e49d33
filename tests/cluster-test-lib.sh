# tests/cluster-test-lib.sh - shell helpers shared by the cluster tests
# (test-cluster.sh, test-cluster-sctp.sh), sourced after they set CLUSTER,
# CLIENT and dir (the cluster's directory), rc=0 and pids= (client PIDs).
# Installs the EXIT trap: clients killed, cluster torn down, logs kept on
# failure.
fail() {
	echo "FAIL: $*" >&2
	rc=1
}

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
	if ! "$CLUSTER" down "$dir"; then
		echo "FAIL: teardown reported a problem" >&2
		rc=1
	fi
	if [ $rc -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "logs kept in $dir (dlmd: $dir/nK/dlmd.out)" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

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
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $(($2 * 10)) ] && return 124
		sleep 0.1
	done
	wait "$1"
}
