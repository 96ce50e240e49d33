#!/bin/sh
# tests/pcmk-cluster.sh - pacemaker runs dlmd through the OCF agent on the
# 3-node test cluster (tests/dlm-cluster up 3).  Not in make check yet.
#
#   1. bring up 3 nodes (corosync; dlm-cluster's own dlmd is stopped by
#      the agent, by its pid file), give each node private pacemaker
#      state (/var/lib/pacemaker, /var/log/pacemaker, /run/crm), the agent
#      under /usr/lib/ocf/resource.d/dlmd (a private copy of resource.d),
#      and the node's dlm.conf at the same path on every node
#      (/run/dlm-test/dlm.conf, in each node's private /run) since a clone
#      has one set of parameters; start pacemakerd on every node;
#   2. crm configure primitive + clone (interleave=true); the CIB has
#      stonith-enabled=false, so first check that the agent refuses to
#      start without allow_stonith_disabled, then allow it;
#   3. crm resource start: dlmd runs on every node;
#   4. SIGKILL dlmd on node 2: pacemaker's monitor notices, the clone
#      instance is restarted there (a new pid);
#   5. crm resource stop: every dlmd is gone;
#   teardown: pacemakerd and everything else stopped by PID.
#
# Usage: tests/pcmk-cluster.sh [DIR]   (default: a new temporary directory)
# Every wait is bounded (WAIT_S); a failure prints why and exits 1.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
CLUSTER=$top_srcdir/tests/dlm-cluster
AGENT=$top_builddir/ocf/dlmd
DLMD=$top_builddir/plugin/dlmd
DLMCTL=$top_builddir/plugin/dlmctl
export top_builddir
N=3
WAIT_S=60
OCF_ROOT=/usr/lib/ocf

rc=0
fail() {
	echo "FAIL: $*" >&2
	rc=1
}
die() {
	fail "$*"
	exit 1
}

for t in pacemakerd crm crm_mon corosync; do
	command -v "$t" >/dev/null 2>&1 || die "$t is not installed (tests/setup-deps)"
done
[ "$(id -u)" = 0 ] || die "needs root"
[ -x "$AGENT" ] || die "no agent at $AGENT (make first)"

dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/dlmd-pcmk.XXXXXX")}
mkdir -p "$dir" && chmod 755 "$dir"
dir=$(cd "$dir" && pwd)

on() { # K CMD...: run CMD on node K
	k=$1
	shift
	"$CLUSTER" exec "$dir" "$k" "$@"
}

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	for k in 1 2 3; do
		pf=$dir/pcmk-$k.pid
		[ -r "$pf" ] || continue
		pid=$(cat "$pf")
		if [ -d "/proc/$pid" ] &&
		   [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pacemakerd ]; then
			kill -TERM "$pid" 2>/dev/null
		fi
	done
	for k in 1 2 3; do
		pf=$dir/pcmk-$k.pid
		[ -r "$pf" ] || continue
		pid=$(cat "$pf")
		i=0
		while [ -d "/proc/$pid" ] && [ "$i" -lt 300 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
		# pacemaker's children of this node (their pids, from /proc)
		for c in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
			kill -KILL "$c" 2>/dev/null
		done
	done
	# any dlmd the agent started, by the node's pid file
	for k in 1 2 3; do
		pf=$dir/n$k/dlmd.pid
		[ -r "$pf" ] || continue
		pid=$(cat "$pf")
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dlmd ] && kill -TERM "$pid" 2>/dev/null
	done
	for k in 1 2 3; do
		on "$k" sh -c 'umount /usr/lib/ocf/resource.d /var/lib/pacemaker /var/log/pacemaker' 2>/dev/null
	done
	"$CLUSTER" down "$dir" >/dev/null 2>&1 || true
	if [ "$rc" -eq 0 ]; then
		rm -rf "$dir"
	else
		echo "files kept in $dir" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# wait_for SECONDS WHAT CMD...: until CMD succeeds, bounded.
wait_for() {
	wf_end=$(($(date +%s) + $1))
	wf_what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$wf_end" ] || { fail "timed out waiting for $wf_what"; return 1; }
		sleep 0.5
	done
}

echo "== $N nodes"
"$CLUSTER" up "$N" "$dir" || die "dlm-cluster up $N"

# Private pacemaker state, the agent, and one config path for all nodes.
mkdir -p "$dir/ocf"
cp -a "$OCF_ROOT/resource.d/." "$dir/ocf/"
mkdir -p "$dir/ocf/dlmd"
cp "$AGENT" "$dir/ocf/dlmd/dlmd"
for k in 1 2 3; do
	nd=$dir/n$k
	[ -d "$nd/varlib-pacemaker" ] || cp -a /var/lib/pacemaker "$nd/varlib-pacemaker"
	[ -d "$nd/log-pacemaker" ] || cp -a /var/log/pacemaker "$nd/log-pacemaker"
	mkdir -p "$nd/varlib-pacemaker/cib"
	cat >"$nd/varlib-pacemaker/cib/cib.xml" <<'EOF'
<cib validate-with="pacemaker-3.9" epoch="1" num_updates="0" admin_epoch="0">
  <configuration>
    <crm_config>
      <cluster_property_set id="cib-bootstrap-options">
        <nvpair id="opt-stonith" name="stonith-enabled" value="false"/>
        <nvpair id="opt-dcdead" name="dc-deadtime" value="2s"/>
        <nvpair id="opt-recheck" name="cluster-recheck-interval" value="10s"/>
      </cluster_property_set>
    </crm_config>
    <nodes/><resources/><constraints/>
  </configuration>
  <status/>
</cib>
EOF
	chown -R hacluster:haclient "$nd/varlib-pacemaker/cib"
	chmod 600 "$nd/varlib-pacemaker/cib/cib.xml"
	rm -f "$nd/varlib-pacemaker/cib/cib.xml.sig"
	on "$k" sh -c "
		mount --bind '$nd/varlib-pacemaker' /var/lib/pacemaker &&
		mount --bind '$nd/log-pacemaker' /var/log/pacemaker &&
		mount --bind '$dir/ocf' /usr/lib/ocf/resource.d &&
		mkdir -p /run/crm /run/dlm-test &&
		chown hacluster:haclient /run/crm &&
		cp '$nd/dlm.conf' /run/dlm-test/dlm.conf" ||
		die "node $k: pacemaker mounts"
	# dlm-cluster's own dlmd: stopped through the agent (pid file).
	on "$k" env OCF_ROOT=$OCF_ROOT OCF_RESOURCE_INSTANCE=dlm \
		OCF_RESKEY_config=/run/dlm-test/dlm.conf OCF_RESKEY_daemon="$DLMD" \
		OCF_RESKEY_dlmctl="$DLMCTL" "$AGENT" stop >/dev/null 2>&1 ||
		fail "node $k: agent stop of dlm-cluster's dlmd"
done

echo "== pacemaker"
for k in 1 2 3; do
	# nsenter execs in place: $! is pacemakerd's pid
	nsenter --net="/run/netns/$(cat "$dir/tag")n$k" --mount="$dir/ns/n$k.mnt" \
		--uts="$dir/ns/n$k.uts" env PCMK_logfile=/var/log/pacemaker/pacemaker.log \
		pacemakerd >"$dir/n$k/pacemakerd.out" 2>&1 </dev/null &
	echo $! >"$dir/pcmk-$k.pid"
done
wait_for $WAIT_S "3 nodes online" sh -c \
	"'$CLUSTER' exec '$dir' 1 crm_mon -1 | grep -q 'Online: \[ n1 n2 n3 \]'" || exit 1

running_on() { # K: the agent's monitor says dlmd runs on node K
	on "$1" env OCF_ROOT=$OCF_ROOT OCF_RESOURCE_INSTANCE=dlm \
		OCF_RESKEY_config=/run/dlm-test/dlm.conf OCF_RESKEY_daemon="$DLMD" \
		OCF_RESKEY_dlmctl="$DLMCTL" "$AGENT" monitor >/dev/null 2>&1
}
# shellcheck disable=SC2317 # called through wait_for
all_running() { running_on 1 && running_on 2 && running_on 3; }
none_running() { ! running_on 1 && ! running_on 2 && ! running_on 3; }

echo "== the clone refuses to start with stonith-enabled=false"
on 1 crm configure primitive dlm ocf:dlmd:dlmd \
	params config=/run/dlm-test/dlm.conf daemon="$DLMD" dlmctl="$DLMCTL" \
	op start timeout=90s op stop timeout=100s \
	op monitor interval=5s timeout=20s meta target-role=Stopped ||
	die "crm configure primitive"
on 1 crm configure clone dlm-clone dlm meta interleave=true ordered=false ||
	die "crm configure clone"
on 1 crm resource start dlm-clone || fail "crm resource start (refused case)"
wait_for $WAIT_S "the refusal in crm_mon" sh -c \
	"'$CLUSTER' exec '$dir' 1 crm_mon -1 | grep -q 'stonith-enabled is false'"
none_running || fail "dlmd runs although stonith-enabled=false"
on 1 crm resource stop dlm-clone
on 1 crm resource param dlm set allow_stonith_disabled true ||
	fail "crm resource param allow_stonith_disabled"
on 1 crm resource cleanup dlm-clone >/dev/null 2>&1

echo "== crm resource start"
on 1 crm resource start dlm-clone || fail "crm resource start"
wait_for $WAIT_S "dlmd on every node" all_running
on 1 crm_mon -1

echo "== kill dlmd on node 2: monitor notices, pacemaker restarts it"
old=$(cat "$dir/n2/dlmd.pid")
kill -KILL "$old"
wait_for $WAIT_S "a new dlmd on node 2" sh -c \
	"[ -r '$dir/n2/dlmd.pid' ] && [ \"\$(cat '$dir/n2/dlmd.pid')\" != '$old' ] &&
	 '$CLUSTER' exec '$dir' 2 '$DLMCTL' -s '$dir/n2/dlmd-ctl.sock' status"
on 1 crm_mon -1 --failcounts | grep -q 'dlm.*fail-count' ||
	fail "no failcount recorded for the killed dlmd"

echo "== crm resource stop"
on 1 crm resource stop dlm-clone || fail "crm resource stop"
wait_for $WAIT_S "dlmd gone everywhere" none_running

[ $rc -eq 0 ] && echo "pcmk-cluster: all checks passed"
exit $rc
