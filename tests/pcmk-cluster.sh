#!/bin/sh
# tests/pcmk-cluster.sh - pacemaker runs dlmd through the OCF agent
# (ocf:dlmd:dlmd, as a clone) on the 3-host test cluster of
# tests/dlm-cluster, and fences a host with a fence device that really
# stops it.
#
# Set-up: dlm-cluster up 3 (corosync; its own dlmd is stopped through the
# agent, by its pid file); each host gets private pacemaker state
# (/var/lib/pacemaker, /var/log/pacemaker, /run/crm), the agent under
# /usr/lib/ocf/resource.d/dlmd (a private copy of resource.d), the test
# fence agent tests/fence_dlmtest as /usr/sbin/fence_dlmtest (a read-only
# overlay, in the host's mount namespace only), and its dlm.conf at one
# path on every host (/run/dlm-test/dlm.conf, in each host's private
# /run), since a clone has one set of parameters.  pacemakerd on every
# host, its CIB seeded with stonith-enabled=false.
#
# A. fencing disabled (dlm.conf: enable_fencing = 0)
#   1. crm configure primitive + clone: the agent refuses to start while
#      stonith-enabled is false, saying so; allow_stonith_disabled=true
#      lets it start;
#   2. crm resource start: dlmd runs on every host;
#   3. SIGKILL dlmd on host 2: pacemaker's monitor notices and restarts it
#      there (a new pid, a fail count);
#   4. a client on every host holds a lock in one lockspace; SIGKILL
#      host 3's corosync: hosts 1 and 2 keep their dlmd (same pids), the
#      lockspace recovers to members 1 2, host 3's lock is released and
#      host 1's is not; host 3's corosync comes back, pacemaker restarts
#      dlmd there;
#   5. crm resource stop: every dlmd is gone.
# B. fencing through pacemaker (stonith-enabled=true, a stonith primitive
#    with fence_dlmtest, no-quorum-policy=freeze).  dlmd learns of fencing
#    from pacemaker's fencer (dlm.conf fence_pacemaker = yes) when it is
#    built with libstonithd; otherwise through fence_command, a helper
#    that calls stonith_admin.
#   6. the clone starts without allow_stonith_disabled; a client on every
#      host holds a lock; the fence agent is held (DIR/fence-hold) and
#      host 3's link is cut;
#   7. while the fencing operation is pending: the survivors' lockspace
#      waits for fencing node 3, host 3's lock is not granted elsewhere,
#      host 3's dlmd still runs, and the agent's monitor calls the
#      survivors healthy (fencing is pending; crm_mon -A's dlmd-wait line
#      is printed, not checked);
#   8. the hold is released: the fence agent kills host 3's processes,
#      then (and only then) the lockspace recovers to members 1 2 and
#      host 3's lock is granted on host 1;
#   9. host 3 back; host 2's dlmd alone is SIGKILLed (its corosync,
#      pacemaker and lock client stay up): hosts 1 and 3 wait for fencing
#      node 2 (held), host 2's lock is not granted while its holder lives;
#      released, pacemaker's fencer stops host 2, and only then do hosts
#      1 and 3 recover and grant host 2's lock; crm resource stop.
#
# Usage: tests/pcmk-cluster.sh [DIR]   (default: a new temporary directory)
# Exits 77 (skipped) when pacemaker or crmsh is not installed.  Every wait
# is bounded (WAIT_S); a failure prints why and exits 1, keeping DIR.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
FENCE_AGENT=$top_srcdir/tests/fence_dlmtest
AGENT=$top_builddir/ocf/dlmd
LSAN_SUPP=$top_srcdir/tests/pcmk-cluster.supp	# known leaks, each with its bug
LS=pcmktest
POLLS=600	# bound of every wait, in polls of 0.1 s (WAIT_S: in s)
BLOCKED_S=2	# how long "nothing is granted" is watched
HOLD_S=4	# how long fencing is held pending, after the survivors wait
OCF_ROOT=/usr/lib/ocf
CONF=/run/dlm-test/dlm.conf

for t in pacemakerd crm crm_mon crm_resource stonith_admin corosync; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "SKIP: $t is not installed (pacemaker, crmsh: tests/setup-deps)"
		exit 77
	fi
done
if [ ! -r "$OCF_ROOT/lib/heartbeat/ocf-shellfuncs" ]; then
	echo "SKIP: resource-agents' ocf-shellfuncs is not installed"
	exit 77
fi

rc=0
die() {
	fail "$*"
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (namespaces, corosync, pacemaker)"
[ -x "$AGENT" ] || die "no agent at $AGENT (make first)"
[ -x "$CLIENT" ] || die "no $CLIENT (make check builds it)"

dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/dlmd-pcmk.XXXXXX")}
mkdir -p "$dir" && chmod 755 "$dir"
dir=$(cd "$dir" && pwd)
t_start=$(date +%s)
# on, ls_line, ls_has, wait_ls and WAIT_S; its cleanup and trap give way
# to this test's own below
. "$top_srcdir/tests/cluster-test-lib.sh"

# nsx K CMD...: CMD in host K's namespaces, exec'd in place, so that
# "nsx ... &" leaves the real pid in $! (dlm-cluster exec does too, but
# needs the host's env file).
nsx() {
	k=$1
	shift
	exec nsenter --net="/run/netns/$(cat "$dir/tag")n$k" \
		--mount="$dir/ns/n$k.mnt" --uts="$dir/ns/n$k.uts" "$@"
}

# alive PID NAME: PID runs NAME and is this test's: its command line or
# its environment names DIR (corosync -c DIR/nK/corosync.conf; pacemakerd
# and everything it starts, the agent's dlmd included, inherit
# DLM_TEST_HOST=DIR/nK/; clients have DLMD_SOCKET=DIR/nK/dlmd.sock).
# The name alone is not enough: pids wrap within minutes here, and a
# stale pid file could name another cluster's daemon.
alive() {
	[ -n "$1" ] && [ -r "/proc/$1/cmdline" ] &&
		tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -q "$2" || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$dir/" ||
		tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qF "$dir/"
}

# shellcheck disable=SC2317 # used by the EXIT trap
descendants() { # PID: every process below PID
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

clients=""
# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	rm -f "$dir/fence-hold"
	if [ "$rc" -ne 0 ]; then
		# every dlmd's flight recorder, for the post-mortem
		for k in 1 2 3; do
			timeout 5 "$CLUSTER" exec "$dir" "$k" "$DLMCTL" dump \
				>"$dir/dump-n$k.txt" 2>&1
		done
	fi
	for p in $clients; do
		alive "$p" cluster-client && kill -KILL "$p" 2>/dev/null
	done
	# pacemakerd and everything below it, and the dlmd the agent started
	# (it daemonized: not below pacemakerd) with what it runs, as
	# "pid comm" recorded now; pacemakerd gets TERM (it stops its
	# children itself), whatever is left after 15 s gets KILL.
	: >"$dir/procs"
	for k in 1 2 3; do
		pids=$(cat "$dir/pcmk-$k.pid" "$dir/n$k/dlmd.pid" 2>/dev/null)
		for pid in $pids; do
			for c in $pid $(descendants "$pid"); do
				comm=$(cat "/proc/$c/comm" 2>/dev/null) &&
					alive "$c" "$comm" &&
					echo "$c $comm" >>"$dir/procs"
			done
		done
	done
	# (TERM for the dlmd daemon only, not for the agent script, whose
	# name is dlmd too: pacemaker fences a node whose stop fails.)
	while read -r pid comm; do
		case $comm:$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)") in
		pacemakerd:* | dlmd:dlmd | dlmd:lt-dlmd) kill -TERM "$pid" 2>/dev/null ;;
		esac
	done <"$dir/procs"
	i=0
	while [ "$i" -lt 150 ]; do
		left=0
		while read -r pid comm; do
			alive "$pid" "$comm" && left=1
		done <"$dir/procs"
		[ "$left" = 0 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	while read -r pid comm; do
		alive "$pid" "$comm" && kill -KILL "$pid" 2>/dev/null
	done <"$dir/procs"
	# A sanitizer report of a dlmd run by pacemaker (ASAN_OPTIONS and
	# UBSAN_OPTIONS log_path, given to pacemakerd, reach the agent's dlmd;
	# known leaks are suppressed by tests/pcmk-cluster.supp).
	for f in "$dir"/san.*; do
		[ -e "$f" ] || continue
		echo "sanitizer report in $f:" >&2
		head -n 40 "$f" >&2
		fail "a dlmd run by pacemaker reported a sanitizer error"
	done
	if ! "$CLUSTER" down "$dir" >"$dir/down.out" 2>&1; then
		cat "$dir/down.out" >&2
		fail "dlm-cluster down reported a problem"
	fi
	finish "pacemaker: nK/log-pacemaker, fencing: fence.log, dlmd: dump-nK.txt"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# crm_do ARGS...: crm ARGS on host 1, its chatter kept in DIR/crm.out
crm_do() {
	echo "## crm $*" >>"$dir/crm.out"
	on 1 crm "$@" >>"$dir/crm.out" 2>&1 && return 0
	tail -n 5 "$dir/crm.out" >&2
	return 1
}

agent() { # K ACTION: the agent, by hand, on host K (as pacemaker calls it)
	on "$1" env OCF_ROOT=$OCF_ROOT OCF_RESOURCE_INSTANCE=dlm \
		OCF_RESKEY_config=$CONF OCF_RESKEY_daemon="$DLMD" \
		OCF_RESKEY_dlmctl="$DLMCTL" "$AGENT" "$2" >>"$dir/agent.out" 2>&1
}
running_on() { agent "$1" monitor; }
# shellcheck disable=SC2317 # called through wait_for
all_running() { running_on 1 && running_on 2 && running_on 3; }
# shellcheck disable=SC2317
none_running() { ! running_on 1 && ! running_on 2 && ! running_on 3; }
dlmd_pid() { cat "$dir/n$1/dlmd.pid" 2>/dev/null; }
same_survivors() { # P1 P2: hosts 1 and 2 still run these dlmd pids
	if [ "$(dlmd_pid 1)" != "$1" ] || [ "$(dlmd_pid 2)" != "$2" ]; then
		fail "a survivor's dlmd was restarted ($1 $2 -> $(dlmd_pid 1) $(dlmd_pid 2))"
	fi
}
# shellcheck disable=SC2317
mon_has() { on 1 crm_mon -1 2>/dev/null | grep -q "$1"; }

# hold K RES: a client on host K takes RES in EX and keeps it
hold() {
	# dlm-cluster exec execs nsenter, which execs the client: $! is its pid
	"$CLUSTER" exec "$dir" "$1" "$CLIENT" hold "$LS" "$2" EX \
		>"$dir/client-$2.out" 2>&1 &
	clients="$clients $!"
	echo $! >>"$dir/n$1/clients"
	wait_for $WAIT_S "host $1's client to hold $2" grep -q '^held' "$dir/client-$2.out"
}
# granted K RES SECONDS: a try for RES in EX from host K is granted in time
granted() {
	timeout "$3" "$CLUSTER" exec "$dir" "$1" "$CLIENT" try "$LS" "$2" EX \
		>"$dir/try.out" 2>&1 && grep -q granted "$dir/try.out"
}

# conf LINES: every host's $CONF is its dlm-cluster dlm.conf with its
# fencing lines replaced by LINES (only while no dlmd runs).
conf() {
	for k in 1 2 3; do
		{
			grep -v '^\(enable_fencing\|fence_command\) *=' "$dir/n$k/dlm.conf"
			printf '%s\n' "$1"
		} >"$dir/n$k/dlm-pcmk.conf"
		on "$k" cp "$dir/n$k/dlm-pcmk.conf" "$CONF" || die "host $k: cannot write $CONF"
	done
}

start_pacemaker() { # K
	(nsx "$1" env PCMK_logfile=/var/log/pacemaker/pacemaker.log \
		DLM_TEST_HOST="$dir/n$1/" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$dir/san" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$dir/san" \
		LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$LSAN_SUPP:print_suppressions=0" \
		pacemakerd >>"$dir/n$1/pacemakerd.out" 2>&1 </dev/null) &
	# the subshell execs nsenter, which execs pacemakerd: $! is its pid
	echo $! >"$dir/pcmk-$1.pid"
}

start_corosync() { # K: host K's corosync alone (pacemaker runs dlmd), quorate
	"$CLUSTER" start-corosync "$dir" "$1" >>"$dir/start-corosync.out" ||
		fail "host $1: dlm-cluster start-corosync"
}

# ----------------------------------------------------------------------
echo "== 3 hosts: corosync, pacemaker"
"$CLUSTER" up 3 "$dir" >"$dir/up.out" 2>&1 || { cat "$dir/up.out" >&2; die "dlm-cluster up 3"; }
mkdir -p "$dir/ocf/dlmd" "$dir/fence-bin"
cp -a "$OCF_ROOT/resource.d/." "$dir/ocf/"
cp "$AGENT" "$dir/ocf/dlmd/dlmd"
cp "$FENCE_AGENT" "$dir/fence-bin/fence_dlmtest"
chmod 755 "$dir/fence-bin/fence_dlmtest"
for k in 1 2 3; do
	nd=$dir/n$k
	[ -d "$nd/varlib-pacemaker" ] || cp -a /var/lib/pacemaker "$nd/varlib-pacemaker"
	[ -d "$nd/log-pacemaker" ] || cp -a /var/log/pacemaker "$nd/log-pacemaker"
	mkdir -p "$nd/varlib-pacemaker/cib"
	# Seeded so that the first election does not wait; no crm_feature_set
	# (a newer one than the daemons' makes pacemaker shut down).
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
		mount --bind '$dir/ocf' $OCF_ROOT/resource.d &&
		mount -t overlay overlay -o 'lowerdir=$dir/fence-bin:/usr/sbin' /usr/sbin &&
		mkdir -p /run/crm /run/dlm-test &&
		chown hacluster:haclient /run/crm" ||
		die "host $k: pacemaker mounts"
done
conf "enable_fencing = 0"
for k in 1 2 3; do
	# dlm-cluster's own dlmd: stopped through the agent (pid file).
	agent "$k" stop || fail "host $k: agent stop of dlm-cluster's dlmd"
done
for k in 1 2 3; do
	start_pacemaker "$k"
done
wait_for $WAIT_S "3 hosts online in crm_mon" mon_has 'Online: \[ n1 n2 n3 \]' || exit 1

echo "== A1. the clone refuses to start with stonith-enabled=false"
crm_do configure primitive dlm ocf:dlmd:dlmd \
	params config=$CONF daemon="$DLMD" dlmctl="$DLMCTL" \
	op start timeout=90s op stop timeout=100s \
	op monitor interval=5s timeout=20s meta target-role=Stopped ||
	die "crm configure primitive"
crm_do configure clone dlm-clone dlm meta interleave=true ordered=false ||
	die "crm configure clone"
crm_do resource start dlm-clone || fail "crm resource start (refused case)"
wait_for $WAIT_S "the refusal in crm_mon" mon_has 'stonith-enabled is false'
none_running || fail "dlmd runs although stonith-enabled=false"
crm_do resource stop dlm-clone
crm_do resource param dlm set allow_stonith_disabled true ||
	fail "crm resource param allow_stonith_disabled"
crm_do resource cleanup dlm-clone

echo "== A2. crm resource start: dlmd on every host"
crm_do resource start dlm-clone || fail "crm resource start"
wait_for $WAIT_S "dlmd on every host" all_running || exit 1
tr '\0' '\n' <"/proc/$(dlmd_pid 1)/environ" >"$dir/dlmd-environ"
if ! grep -q "^ASAN_OPTIONS=.*log_path=$dir/san" "$dir/dlmd-environ" ||
   ! grep -q "^LSAN_OPTIONS=.*suppressions=" "$dir/dlmd-environ"; then
	fail "ASAN_OPTIONS or LSAN_OPTIONS did not reach the dlmd pacemaker runs"
fi

echo "== A3. SIGKILL dlmd on host 2: the monitor notices, pacemaker restarts it"
old=$(dlmd_pid 2)
alive "$old" dlmd || fail "host 2's dlmd pid $old is not this test's dlmd"
kill -KILL "$old"
# shellcheck disable=SC2317
restarted() { new=$(dlmd_pid 2) && [ "$new" != "$old" ] && running_on 2; }
wait_for $WAIT_S "a new dlmd on host 2" restarted
on 1 crm_mon -1 --failcounts 2>/dev/null | grep -q 'dlm.*fail-count' ||
	fail "no fail count recorded for the killed dlmd"
echo "   host 2: dlmd pid $old killed, restarted as $(dlmd_pid 2)"

echo "== A4. a lockspace on every host; host 3's corosync killed"
for k in 1 2 3; do
	hold "$k" "held-by-$k" || exit 1
done
wait_ls 1 "state running members 1 2 3 " "the lockspace on all three hosts"
p1=$(dlmd_pid 1)
p2=$(dlmd_pid 2)
pid=$(cat "$dir/n3/corosync.pid")
alive "$pid" corosync || die "host 3's corosync pid $pid is not this test's corosync"
kill -KILL "$pid"
t0=$(date +%s%N)
wait_ls 1 "state running members 1 2 clients" "host 1 recovers to members 1 2"
t1=$(date +%s%N)
wait_ls 2 "state running members 1 2 clients" "host 2 recovers to members 1 2"
echo "   recovery (corosync killed to running on host 1): $(((t1 - t0) / 1000000)) ms"
same_survivors "$p1" "$p2"
if ! running_on 1 || ! running_on 2; then
	fail "the agent's monitor fails on a survivor: $(tail -n 3 "$dir/agent.out")"
fi
granted 1 held-by-3 20 || fail "host 3's lock was not released: $(cat "$dir/try.out")"
granted 2 held-by-1 "$BLOCKED_S" && fail "host 1's lock was lost in recovery"
wait_for $WAIT_S "host 3 offline in crm_mon" mon_has 'OFFLINE: \[ n3 \]'

echo "   host 3's corosync back: pacemaker starts dlmd there again"
while read -r p; do
	alive "$p" cluster-client && kill -KILL "$p" 2>/dev/null
done <"$dir/n3/clients"
: >"$dir/n3/clients"
start_corosync 3
wait_for $WAIT_S "3 hosts online again" mon_has 'Online: \[ n1 n2 n3 \]' || exit 1
wait_for $WAIT_S "dlmd on every host again" all_running || exit 1

echo "== A5. crm resource stop: every dlmd gone"
for p in $clients; do
	alive "$p" cluster-client && kill -KILL "$p" 2>/dev/null
done
clients=""
: >"$dir/n1/clients"
: >"$dir/n2/clients"
crm_do resource stop dlm-clone || fail "crm resource stop"
wait_for $WAIT_S "dlmd gone everywhere" none_running || exit 1

# ----------------------------------------------------------------------
echo "== B6. fencing on: device fence_dlmtest; dlmd waits for pacemaker's fencer"
if ldd "$DLMD" 2>/dev/null | grep -q libstonithd; then
	# dlmd follows the fencer itself (libstonithd): pacemaker fences the
	# lost host, dlmd waits for the fencer's history to say so.
	FENCE_VIA=pacemaker
	conf "fence_pacemaker = yes"
else
	# dlmd built without pacemaker's fencing API: its fence_command asks
	# the fencer to fence node id $1 (merged with the fencing pacemaker
	# schedules itself; --tolerance: done if the node was fenced within
	# the last two minutes).
	FENCE_VIA=fence_command
	cat >"$dir/fence-pcmk" <<EOF
#!/bin/sh
name=\$($(command -v crm_node) -l 2>/dev/null | awk -v id="\$1" '\$1 == id { print \$2 }')
echo "\$(date +%s.%N) dlmd on \$(uname -n) asks to fence node \$1 (\${name:-n\$1})" >>"$dir/fence.log"
exec $(command -v stonith_admin) --reboot "\${name:-n\$1}" --tolerance 120s --timeout 90
EOF
	chmod 755 "$dir/fence-pcmk"
	conf "fence_command = $dir/fence-pcmk"
fi
echo "   dlmd learns of fencing through: $FENCE_VIA"
crm_do configure primitive fence-test stonith:fence_dlmtest \
	params dir="$dir" pcmk_host_list="n1 n2 n3" \
	op monitor interval=60s || die "crm configure primitive fence-test"
crm_do configure property stonith-enabled=true no-quorum-policy=freeze ||
	fail "crm configure property"
crm_do resource param dlm delete allow_stonith_disabled ||
	fail "crm resource param dlm delete allow_stonith_disabled"
wait_for $WAIT_S "the fence device started" mon_has 'fence-test.*Started'
crm_do resource start dlm-clone || fail "crm resource start (fencing on)"
wait_for $WAIT_S "dlmd on every host (fencing on)" all_running || exit 1
for k in 1 2 3; do
	hold "$k" "held-by-$k" || exit 1
done
for k in 1 2 3; do
	wait_ls "$k" "state running members 1 2 3 " "the lockspace on host $k"
done
p1=$(dlmd_pid 1)
p2=$(dlmd_pid 2)
p3=$(dlmd_pid 3)
touch "$dir/fence-hold"
"$CLUSTER" cut "$dir" 3

echo "== B7. fencing pending: recovery waits"
wait_ls 1 "wait fencing node 3" "host 1 waits for fencing node 3"
wait_ls 2 "wait fencing node 3" "host 2 waits for fencing node 3"
# shellcheck disable=SC2317
fence_held() { grep -q 'n3: held' "$dir/fence.log"; }
wait_for $WAIT_S "the fence agent to be called for n3" fence_held
if [ "$FENCE_VIA" = pacemaker ]; then
	ls_has 1 "wait fencing node 3 (pacemaker" ||
		fail "host 1 does not wait for pacemaker's fencer: $(ls_line 1)"
fi
sleep "$HOLD_S"
ls_has 1 "wait fencing node 3" || fail "host 1 stopped waiting for fencing: $(ls_line 1)"
alive "$p3" dlmd || fail "host 3's dlmd died before it was fenced"
granted 1 held-by-3 "$BLOCKED_S" && fail "host 3's lock was granted before host 3 was fenced"
on 1 stonith_admin --history '*' --verbose --output-as xml >"$dir/history-pending.xml" 2>&1
grep -q 'status="pending"' "$dir/history-pending.xml" ||
	fail "the fencer shows no pending operation: $(cat "$dir/history-pending.xml")"
running_on 1 || fail "the agent's monitor fails host 1 while fencing is pending: $(tail -n 3 "$dir/agent.out")"
echo "   hosts 1, 2 wait for fencing node 3; host 3's dlmd (pid $p3) still runs"
# The monitor reports the wait as the node attribute dlmd-wait (shown
# for information only: pacemaker's own monitor may not have run yet).
on 1 crm_mon -1 -A 2>/dev/null | grep 'dlmd-wait' | sed 's/^ */   crm_mon -A: /'

echo "== B8. fencing done: host 3 is stopped, then the lockspace recovers"
t0=$(date +%s%N)
rm -f "$dir/fence-hold"
# shellcheck disable=SC2317
host3_down() {
	! alive "$p3" dlmd && ! alive "$(cat "$dir/pcmk-3.pid")" pacemakerd &&
		! alive "$(cat "$dir/n3/corosync.pid")" corosync
}
wait_for $WAIT_S "host 3's processes to be killed by the fence agent" host3_down
wait_ls 1 "state running members 1 2 clients" "host 1 recovers to members 1 2"
t1=$(date +%s%N)
wait_ls 2 "state running members 1 2 clients" "host 2 recovers to members 1 2"
echo "   fencing released to running on host 1: $(((t1 - t0) / 1000000)) ms"
grep -q 'n3: done' "$dir/fence.log" || fail "the fence agent did not finish: $(cat "$dir/fence.log")"
# the order, from the timestamps (ns): the fence agent had killed host 3
# before host 1 was seen running again
t_done=$(sed -n 's/^\([0-9]*\)\.\([0-9]\{9\}\) .*n3: done$/\1\2/p' "$dir/fence.log" | head -n 1)
if [ -z "$t_done" ] || [ "$t_done" -gt "$t1" ]; then
	fail "host 1 ran again before the fence agent had killed host 3 ($t_done > $t1)"
else
	echo "   fence agent done $(((t1 - t_done) / 1000000)) ms before host 1 was seen running"
fi
granted 1 held-by-3 20 || fail "host 3's lock was not released after fencing: $(cat "$dir/try.out")"
granted 2 held-by-1 "$BLOCKED_S" && fail "host 1's lock was lost in recovery"
same_survivors "$p1" "$p2"
on 1 stonith_admin --history n3 >"$dir/history.out" 2>&1
grep -q 'successful\|fenced' "$dir/history.out" ||
	fail "pacemaker has no successful fencing of n3: $(cat "$dir/history.out")"
if [ "$FENCE_VIA" = fence_command ]; then
	grep -q 'asks to fence node 3' "$dir/fence.log" ||
		fail "dlmd did not ask pacemaker to fence node 3"
fi

echo "== B9. host 3 back; host 2's dlmd alone killed: pacemaker fences host 2 first"
"$CLUSTER" heal "$dir" 3
: >"$dir/n3/clients"
start_corosync 3
start_pacemaker 3
wait_for $WAIT_S "3 hosts online again (fencing on)" mon_has 'Online: \[ n1 n2 n3 \]' || exit 1
wait_for $WAIT_S "dlmd on every host again (fencing on)" all_running || exit 1
hold 3 held-by-3b || exit 1
wait_ls 1 "state running members 1 2 3 " "host 3 back in the lockspace"
p1=$(dlmd_pid 1)
p2=$(dlmd_pid 2)
p3=$(dlmd_pid 3)
holder2=$(tail -n 1 "$dir/n2/clients")
alive "$holder2" cluster-client || die "host 2's holder of held-by-2 is gone"
touch "$dir/fence-hold"
n_before=$(grep -c 'n2: held' "$dir/fence.log")
kill -KILL "$p2"
# Its corosync, pacemaker and the client holding held-by-2 live on: the
# others must fence host 2 (through pacemaker's fencer) before they give
# its lock away, whatever pacemaker's monitor does about the dead dlmd.
wait_ls 1 "wait fencing node 2" "host 1 waits for fencing node 2 after its dlmd died"
wait_ls 3 "wait fencing node 2" "host 3 waits for fencing node 2 after its dlmd died"
# shellcheck disable=SC2317
fence2_held() { [ "$(grep -c 'n2: held' "$dir/fence.log")" -gt "$n_before" ]; }
wait_for $WAIT_S "the fence agent to be called for n2" fence2_held
alive "$holder2" cluster-client || fail "host 2's holder died before host 2 was fenced"
granted 1 held-by-2 "$BLOCKED_S" && fail "host 2's lock was granted while its holder lived and host 2 was not fenced"
t0=$(date +%s%N)
rm -f "$dir/fence-hold"
# shellcheck disable=SC2317
host2_down() {
	! alive "$holder2" cluster-client && ! alive "$(cat "$dir/pcmk-2.pid")" pacemakerd &&
		! alive "$(cat "$dir/n2/corosync.pid")" corosync
}
wait_for $WAIT_S "host 2's processes to be killed by the fence agent" host2_down
wait_ls 1 "state running members 1 3 clients" "host 1 recovers to members 1 3"
t1=$(date +%s%N)
wait_ls 3 "state running members 1 3 clients" "host 3 recovers to members 1 3"
echo "   fencing released to running on host 1: $(((t1 - t0) / 1000000)) ms"
t_done=$(sed -n 's/^\([0-9]*\)\.\([0-9]\{9\}\) .*n2: done$/\1\2/p' "$dir/fence.log" | tail -n 1)
if [ -z "$t_done" ] || [ "$t_done" -gt "$t1" ]; then
	fail "host 1 ran again before the fence agent had killed host 2 (${t_done:-none} > $t1)"
fi
granted 1 held-by-2 20 || fail "host 2's lock was not released after fencing: $(cat "$dir/try.out")"
granted 3 held-by-1 "$BLOCKED_S" && fail "host 1's lock was lost in recovery"
alive "$p1" dlmd && alive "$p3" dlmd || fail "a survivor's dlmd changed: $p1 $p3"
on 1 stonith_admin --history n2 >"$dir/history2.out" 2>&1
grep -q 'successful\|fenced' "$dir/history2.out" ||
	fail "pacemaker has no successful fencing of n2: $(cat "$dir/history2.out")"

for p in $clients; do
	alive "$p" cluster-client && kill -KILL "$p" 2>/dev/null
done
clients=""
crm_do resource stop dlm-clone || fail "crm resource stop (fencing on)"
# shellcheck disable=SC2317
survivors_stopped() { ! alive "$p1" dlmd && ! alive "$p3" dlmd; }
wait_for $WAIT_S "dlmd gone on hosts 1 and 3" survivors_stopped

[ $rc -eq 0 ] && echo "pcmk-cluster: all checks passed in $(($(date +%s) - t_start)) s"
exit $rc
