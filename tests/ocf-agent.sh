#!/bin/sh
# tests/ocf-agent.sh - the OCF resource agent (ocf/dlmd) on a real dlmd.
#
#  1. golden files: the agent's meta-data (paths normalized) against
#     tests/ocf-golden/meta-data.xml, valid against resource-agents'
#     ra-api-1.dtd (xmllint --dtdvalid); validate-all's exit code and
#     exit reason for good and bad parameters against
#     tests/ocf-golden/validate-all.out.  No cluster needed.
#  2. ocf-tester passes every test on the agent against a one-node
#     corosync (tests/dlm-cluster up 1) inside that node's namespaces.
#     The harness's own dlmd is stopped first by the agent (pid file);
#     before that, stop must fail, naming the lockspace, while a client
#     holds a lock in it (dlmd refuses to leave a lockspace in use).
#  3. start's refusals: bad dlm.conf, no corosync (an empty network
#     namespace), stonith-enabled=false without allow_stonith_disabled
#     (a stand-in crm_attribute on PATH plays pacemaker), a CIB that
#     cannot be read under pacemaker; the no-quorum-policy warning.
#  4. monitor's three outcomes: running, not running (dlmd killed, stale
#     pid file; start recovers), failed (dlmd stopped with SIGSTOP so it
#     cannot answer, also while a lockspace waits for fencing; its
#     control socket gone).  A lockspace waiting for fencing is running,
#     however dlmd has the node fenced and whatever the fencer has
#     pending (nothing, or another node's fencing), also through a gap of
#     over 10 s with nothing pending (a stand-in dlmctl adds the wait to
#     the real dlmd's "dlmctl ls", a stand-in stonith_admin plays the
#     fencer).  The wait is reported once per change: the node attribute
#     dlmd-wait through a stand-in attrd_updater (set, kept, deleted when
#     the wait ends), a log line when attrd_updater is absent or fails.
#
# Every wait is bounded (the agent's own bounds, tests/run-test's limit);
# everything started is stopped by PID in the EXIT trap.  Needs root,
# corosync and resource-agents (tests/setup-deps installs them); when they
# are missing the test fails, it never skips.  It runs under
# "make distcheck" too (as root, the namespaces work there).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
GOLDEN=$top_srcdir/tests/ocf-golden
AGENT=$top_builddir/ocf/dlmd
: "${OCF_ROOT:=/usr/lib/ocf}"
DTD_DIR=/usr/share/resource-agents
export OCF_ROOT OCF_RESOURCE_INSTANCE=dlm

rc=0
dir=

missing=""
[ "$(id -u)" = 0 ] || missing="$missing root"
for t in ocf-tester xmllint corosync; do
	command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
[ -r "$OCF_ROOT/lib/heartbeat/ocf-shellfuncs" ] || missing="$missing ocf-shellfuncs"
[ -r "$DTD_DIR/ra-api-1.dtd" ] || missing="$missing ra-api-1.dtd"
if [ -n "$missing" ]; then
	echo "FAIL: missing$missing (run tests/setup-deps)" >&2
	exit 1
fi
[ -x "$AGENT" ] || { echo "FAIL: no agent at $AGENT (make first)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-ocf.XXXXXX") || exit 1
chmod 755 "$dir"
cluster_up=

# Stop whatever dlmd the agent may have left, by its pid file.
# shellcheck disable=SC2317 # called from the EXIT trap
stop_leftovers() {
	pf=$dir/n1/dlmd.pid
	[ -r "$pf" ] || return 0
	pid=$(cat "$pf")
	if [ -n "$pid" ] && [ -d "/proc/$pid" ] &&
	   [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dlmd ]; then
		kill -CONT "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
		i=0
		while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null
	fi
}

# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	if [ -n "$cluster_up" ]; then
		stop_leftovers
		"$CLUSTER" down "$dir" >/dev/null || { echo "FAIL: teardown" >&2; rc=1; }
	fi
	finish
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# ----------------------------------------------------------------------
echo "== meta-data: golden file and ra-api-1.dtd"
# The agent as make builds it, with fixed paths, so the golden file does
# not depend on --prefix.
sed -e 's|@sbindir[@]|/usr/sbin|g' -e 's|@bindir[@]|/usr/bin|g' \
    -e 's|@sysconfdir[@]|/etc|g' -e 's|@PACKAGE_VERSION[@]|VERSION|g' \
    "$top_srcdir/ocf/dlmd.in" >"$dir/agent-golden"
chmod 755 "$dir/agent-golden"
"$dir/agent-golden" meta-data >"$dir/meta-data.xml" || fail "meta-data exit $?"
diff -u "$GOLDEN/meta-data.xml" "$dir/meta-data.xml" ||
	fail "meta-data differs from tests/ocf-golden/meta-data.xml"
"$AGENT" meta-data >"$dir/meta-data-built.xml" || fail "built agent: meta-data exit $?"
for f in meta-data.xml meta-data-built.xml; do
	(cd "$DTD_DIR" && xmllint --noout --nonet --dtdvalid ra-api-1.dtd - <"$dir/$f") ||
		fail "$f is not valid against ra-api-1.dtd"
done
# The same check ocf-tester makes (the DOCTYPE's own DTD, from its dir).
(cd "$DTD_DIR" && xmllint --noout --valid - <"$dir/meta-data-built.xml") ||
	fail "meta-data: xmllint --valid through its DOCTYPE"

# ----------------------------------------------------------------------
echo "== validate-all: exit codes and reasons (golden)"
mkdir -p "$dir/v"
cat >"$dir/v/dlm.conf" <<EOF
pid_file = $dir/v/dlmd.pid
control_socket = $dir/v/dlmd-ctl.sock
EOF
# One case per line: NAME, then VAR=VALUE words for the agent's
# environment (OCF_RESKEY_ implied), "-" for none.
cat >"$dir/v/cases" <<EOF
good -
good-pidfile-socket pidfile=@V@/dlmd.pid socket=@V@/dlmd-ctl.sock
relative-config config=etc/dlm.conf
empty-config config=
missing-config config=/nonexistent/dlm.conf
config-is-dir config=/
stonith-not-bool allow_stonith_disabled=maybe
stonith-true allow_stonith_disabled=true
args-config args=-c/etc/dlm.conf
args-config-long args=--config=/etc/dlm.conf
args-version args=--version
args-operand args=extra
args-ok args=-D
pidfile-differs pidfile=/run/other.pid
socket-differs socket=/run/other.sock
no-daemon daemon=/nonexistent/dlmd
no-dlmctl dlmctl=/nonexistent/dlmctl
globally-unique CRM_meta_globally_unique=true
EOF
: >"$dir/v/out"
while read -r name vars; do
	(
		OCF_RESKEY_config=$dir/v/dlm.conf
		OCF_RESKEY_daemon=$DLMD
		OCF_RESKEY_dlmctl=$DLMCTL
		export OCF_RESKEY_config OCF_RESKEY_daemon OCF_RESKEY_dlmctl
		if [ "$vars" != - ]; then
			for kv in $vars; do
				kv=$(printf '%s' "$kv" | sed "s|@V@|$dir/v|g")
				export "OCF_RESKEY_$kv"
			done
		fi
		"$AGENT" validate-all >/dev/null 2>"$dir/v/err"
		vrc=$?
		reason=$(sed -n 's/^ocf-exit-reason://p' "$dir/v/err")
		echo "$name rc=$vrc${reason:+ reason=$reason}"
	) | sed "s|$dir/v|@V@|g" >>"$dir/v/out"
done <"$dir/v/cases"
( "$AGENT" frobnicate >/dev/null 2>&1; echo "unknown-action rc=$?" ) >>"$dir/v/out"
diff -u "$GOLDEN/validate-all.out" "$dir/v/out" ||
	fail "validate-all differs from tests/ocf-golden/validate-all.out"

# ----------------------------------------------------------------------
echo "== one-node cluster"
if ! "$CLUSTER" up 1 "$dir" >"$dir/up.out" 2>&1; then
	cat "$dir/up.out" >&2
	fail "cannot bring up the one-node corosync cluster"
	exit 1
fi
cluster_up=1
CONF=$dir/n1/dlm.conf
PIDFILE=$dir/n1/dlmd.pid
# in_node CMD...: run in node 1's namespaces with the agent's parameters.
in_node() {
	"$CLUSTER" exec "$dir" 1 env OCF_ROOT="$OCF_ROOT" \
		OCF_RESOURCE_INSTANCE=dlm OCF_RESKEY_config="$CONF" \
		OCF_RESKEY_daemon="$DLMD" OCF_RESKEY_dlmctl="$DLMCTL" "$@"
}
# agent ACTION [VAR=VALUE...]: output in $dir/agent.out, exit code as ours.
agent() {
	a=$1
	shift
	in_node "$@" "$AGENT" "$a" >"$dir/agent.out" 2>&1
}
reason() { sed -n 's/^ocf-exit-reason://p' "$dir/agent.out"; }
expect() { # EXPECTED-RC WHAT
	got=$1
	shift
	if [ "$got" != "$1" ]; then
		shift
		fail "$*: exit $got, expected $1"
		sed 's/^/    /' "$dir/agent.out" >&2
	fi
}

agent monitor
expect $? 0 "monitor of the harness's dlmd"
# A lockspace in use (a client has it open): dlmd refuses SIGTERM, so
# stop fails at once naming it (pacemaker then fences this node) and
# dlmd keeps the client's lock; once the client is gone, stop works.
in_node "$DLMCTL" join busy-ls || fail "dlmctl join busy-ls"
mkfifo "$dir/hold"
in_node "$top_builddir/tests/test-libdlm-lt" hold busy-ls <"$dir/hold" >"$dir/hold.out" 2>&1 &
holder=$!
exec 3>"$dir/hold"
i=0
until grep -q '^held' "$dir/hold.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 100 ] && { fail "busy-ls holder did not start: $(cat "$dir/hold.out")"; break; }
	sleep 0.1
done
agent stop
expect $? 1 "stop with a lockspace in use"
reason | grep -q 'lockspaces in use: busy-ls (clients 1, orphans 0)' ||
	fail "stop's exit reason does not name busy-ls: $(reason)"
agent monitor
expect $? 0 "monitor after a refused stop"
exec 3>&-
wait "$holder" || fail "the holder could not unlock after a refused stop: $(cat "$dir/hold.out")"
in_node "$DLMCTL" leave busy-ls || fail "dlmctl leave busy-ls"
agent stop
expect $? 0 "stop of the harness's dlmd (by its pid file)"
agent monitor
expect $? 7 "monitor after stop"

echo "== ocf-tester"
in_node ocf-tester -n dlm -o config="$CONF" -o daemon="$DLMD" \
	-o dlmctl="$DLMCTL" "$AGENT" >"$dir/ocf-tester.out" 2>&1
trc=$?
cat "$dir/ocf-tester.out"
[ $trc -eq 0 ] || fail "ocf-tester exit $trc"
grep -q 'passed all tests' "$dir/ocf-tester.out" || fail "ocf-tester did not pass all tests"

echo "== start refuses"
cp "$CONF" "$dir/bad.conf"
echo "no_such_key = 1" >>"$dir/bad.conf"
agent start OCF_RESKEY_config="$dir/bad.conf"
expect $? 6 "start with a bad dlm.conf"
reason | grep -q "unknown key 'no_such_key'" || fail "bad config reason: $(reason)"
agent monitor
expect $? 7 "monitor after the bad-config start"

# No corosync: an empty network namespace has none to talk to.
env OCF_RESKEY_config="$CONF" OCF_RESKEY_daemon="$DLMD" \
	OCF_RESKEY_dlmctl="$DLMCTL" unshare --net "$AGENT" start >"$dir/agent.out" 2>&1
expect $? 1 "start without corosync"
reason | grep -q "corosync is not running" || fail "no-corosync reason: $(reason)"

# Pacemaker's cluster properties, played by a stand-in crm_attribute.
mkdir -p "$dir/fake"
cat >"$dir/fake/crm_attribute" <<'EOF'
#!/bin/sh
# Stand-in: prints $FAKE_STONITH for stonith-enabled, $FAKE_NQP for
# no-quorum-policy; fails like an unreachable CIB when FAKE_CIB_DOWN=1.
[ "${FAKE_CIB_DOWN:-0}" = 1 ] && { echo "Could not connect to the CIB" >&2; exit 102; }
case "$*" in
*stonith-enabled*) echo "$FAKE_STONITH" ;;
*no-quorum-policy*) echo "$FAKE_NQP" ;;
*) exit 105 ;;
esac
EOF
chmod 755 "$dir/fake/crm_attribute"
FPATH=$dir/fake:$PATH
agent start PATH="$FPATH" FAKE_STONITH=false FAKE_NQP=freeze
expect $? 6 "start with stonith-enabled=false"
reason | grep -q "stonith-enabled is false" || fail "stonith reason: $(reason)"
agent start PATH="$FPATH" FAKE_CIB_DOWN=1 OCF_RESKEY_CRM_meta_on_node=n1
expect $? 1 "start under pacemaker with an unreadable CIB"
reason | grep -q "cannot read the cluster property" || fail "CIB reason: $(reason)"
agent monitor
expect $? 7 "monitor after refused starts"
agent start PATH="$FPATH" FAKE_STONITH=false FAKE_NQP=stop \
	OCF_RESKEY_allow_stonith_disabled=true
expect $? 0 "start with stonith-enabled=false and allow_stonith_disabled=true"
grep -q "no-quorum-policy is stop" "$dir/agent.out" ||
	fail "no warning about no-quorum-policy: $(cat "$dir/agent.out")"

echo "== monitor: running, failed, not running"
agent monitor
expect $? 0 "monitor of a started dlmd"
pid=$(cat "$PIDFILE")
# A lockspace waiting for fencing is healthy, whatever the fencer does.
in_node "$DLMCTL" -s "$dir/n1/dlmd-ctl.sock" join ocf-ls >/dev/null ||
	fail "dlmctl join ocf-ls"
cat >"$dir/fake/dlmctl" <<EOF
#!/bin/sh
# Stand-in: the real dlmctl (and its exit code), with every lockspace's
# recovery waiting for \$FAKE_WAIT ("wait" line under the lockspace, as
# dlmctl ls prints it; default: fencing node 2, nothing more said).
case " \$* " in
*" ls "*)
	out=\$("$DLMCTL" "\$@" 2>&1)
	frc=\$?
	printf '%s\n' "\$out" | awk -v wait="\${FAKE_WAIT:-fencing node 2}" '
		/^name / {
			sub(/ state [a-z_]+ /, " state stopped ")
			print
			next
		}
		/^  wait / { print "  wait " wait; next }
		{ print }'
	exit \$frc
	;;
*) exec "$DLMCTL" "\$@" ;;
esac
EOF
cat >"$dir/fake/stonith_admin" <<'EOF'
#!/bin/sh
# Stand-in fencer history: one pending operation on $FAKE_PENDING (a node
# name), none when it is empty.
echo '<pacemaker-result api-version="2.25" request="stonith_admin">'
if [ -n "${FAKE_PENDING:-}" ]; then
	echo "  <fence_history><fence_event action=\"reboot\" target=\"$FAKE_PENDING\" status=\"pending\" extended-status=\"pending\"/></fence_history>"
else
	echo '  <fence_history/>'
fi
echo '  <status code="0" message="OK"/>'
echo '</pacemaker-result>'
EOF
mkdir -p "$dir/fake-attrd"
cat >"$dir/fake-attrd/attrd_updater" <<EOF
#!/bin/sh
# Stand-in attrd: records each call; refuses like a node without
# pacemaker when FAKE_ATTRD_DOWN=1.
echo "\$*" >>"$dir/attrd.log"
if [ "\${FAKE_ATTRD_DOWN:-0}" = 1 ]; then
	echo "attrd_updater: Could not update: Connection refused (111)" >&2
	exit 102
fi
EOF
chmod 755 "$dir/fake/dlmctl" "$dir/fake/stonith_admin" \
	"$dir/fake-attrd/attrd_updater"
: >"$dir/attrd.log"
# No attrd_updater on this PATH (pacemaker's tools live in /usr/sbin).
NOATTRD_PATH=$dir/fake:/usr/bin:/bin
ATTRD_PATH=$dir/fake-attrd:$dir/fake:/usr/bin:/bin
PATH=$NOATTRD_PATH command -v attrd_updater >/dev/null &&
	fail "attrd_updater found on $NOATTRD_PATH"
fake_monitor() { # EXPECTED-RC WHAT [VAR=VALUE...]: monitor through the stand-ins
	fm_rc=$1
	fm_what=$2
	shift 2
	agent monitor PATH="$NOATTRD_PATH" OCF_RESKEY_dlmctl="$dir/fake/dlmctl" \
		OCF_RESKEY_CRM_meta_timeout=20000 "$@"
	expect $? "$fm_rc" "$fm_what"
}
attrd_calls() { wc -l <"$dir/attrd.log" | tr -d ' '; }

# The gap: waiting for fencing, nothing pending at the fencer, for longer
# than the 10 s the monitor used to allow (then it called dlmd failed and
# pacemaker restarted, or fenced, a healthy survivor).  Without
# attrd_updater the wait is logged, once.
t_gap=$(date +%s)
n=0
while :; do
	t_mon=$(date +%s)
	fake_monitor 0 "monitor: waits for fencing, nothing pending ($n)"
	# not a speed check: a monitor that waits for the fencing would
	# take its whole timeout (20 s less the margin); a loaded machine
	# with sanitizers can take a few seconds for one that does not
	[ $(($(date +%s) - t_mon)) -le 10 ] ||
		fail "monitor of a lockspace waiting for fencing took over 10 s (it waits?)"
	if [ $n = 0 ]; then
		grep -q 'waits for: fencing node 2 (lockspace ocf-ls)' "$dir/agent.out" ||
			fail "monitor does not report the wait: $(cat "$dir/agent.out")"
	else
		grep -q 'waits for' "$dir/agent.out" &&
			fail "monitor reports an unchanged wait again: $(cat "$dir/agent.out")"
	fi
	n=$((n + 1))
	[ $(($(date +%s) - t_gap)) -gt 11 ] && break
	sleep 2
done
echo "   $n monitors over $(($(date +%s) - t_gap)) s of waiting for fencing, nothing pending: running"

# Which node the fencer works on, and how dlmd has it fenced, no longer
# matter: the waits are all healthy, and each is reported as dlmd says it.
for w in "fencing node 2 (pacemaker: not fenced yet)" \
	 "fencing node 2 (pacemaker: fencer not reachable)" \
	 "fencing node 2 (pacemaker: in progress)" \
	 "fencing node 2 (fence_command, attempt 3)" \
	 "fencing node 2 (fence_command by node 3)" \
	 "fencing node 2 (dlmctl fence_ack)" \
	 "quorum (to start)" \
	 "reply (2 operations wait for a remote reply; nothing received for 12 s)"; do
	for p in "" n3 n2; do
		fake_monitor 0 "monitor: '$w', fencer pending on '${p:-none}'" \
			FAKE_WAIT="$w" FAKE_PENDING="$p"
		[ -n "$p" ] && continue
		# (a stalled lockspace's seconds of silence are left out)
		case $w in
		*"; nothing received"*) want="${w%; nothing received*})" ;;
		*) want=$w ;;
		esac
		grep -qF "waits for: $want (lockspace ocf-ls)" "$dir/agent.out" ||
			fail "monitor does not report '$w': $(cat "$dir/agent.out")"
		case $w in
		*fence_ack*)
			grep -q 'run "dlmctl fence_ack NODEID"' "$dir/agent.out" ||
				fail "no fence_ack hint: $(cat "$dir/agent.out")"
			;;
		esac
	done
done

# The node attribute: set once per change, deleted when the wait ends.
fake_monitor 0 "monitor: wait reported to attrd" PATH="$ATTRD_PATH" \
	OCF_RESKEY_CRM_meta_on_node=n1
grep -qx -- '-n dlmd-wait -N n1 -U fencing node 2 (lockspace ocf-ls)' "$dir/attrd.log" ||
	fail "no dlmd-wait attribute set: $(cat "$dir/attrd.log")"
ac=$(attrd_calls)
fake_monitor 0 "monitor: the same wait again" PATH="$ATTRD_PATH" \
	OCF_RESKEY_CRM_meta_on_node=n1
[ "$(attrd_calls)" = "$ac" ] || fail "attribute set again for an unchanged wait: $(cat "$dir/attrd.log")"
fake_monitor 0 "monitor: a new wait, attrd down" PATH="$ATTRD_PATH" \
	FAKE_ATTRD_DOWN=1 FAKE_WAIT="fencing node 2 (pacemaker: in progress)"
tail -n 1 "$dir/attrd.log" | grep -qx -- '-n dlmd-wait -U fencing node 2 (pacemaker: in progress) (lockspace ocf-ls)' ||
	fail "attrd down: no attempt to set the attribute: $(cat "$dir/attrd.log")"
grep -q 'cannot update the node attribute dlmd-wait' "$dir/agent.out" ||
	fail "attrd down: not logged: $(cat "$dir/agent.out")"
agent monitor PATH="$ATTRD_PATH" OCF_RESKEY_CRM_meta_on_node=n1
expect $? 0 "monitor: the wait is over"
tail -n 1 "$dir/attrd.log" | grep -qx -- '-n dlmd-wait -N n1 -D' ||
	fail "dlmd-wait not deleted when the wait ended: $(cat "$dir/attrd.log")"
ac=$(attrd_calls)
agent monitor PATH="$ATTRD_PATH" OCF_RESKEY_CRM_meta_on_node=n1
expect $? 0 "monitor: still no wait"
[ "$(attrd_calls)" = "$ac" ] || fail "attrd called with nothing to change: $(cat "$dir/attrd.log")"

# Waiting for fencing does not hide a dlmd that does not answer.
kill -STOP "$pid"
fake_monitor 1 "monitor of a dlmd that waits for fencing and does not answer"
kill -CONT "$pid"
reason | grep -q "does not answer" || fail "stuck (fencing) reason: $(reason)"
in_node "$DLMCTL" -s "$dir/n1/dlmd-ctl.sock" leave ocf-ls >/dev/null ||
	fail "dlmctl leave ocf-ls"

# Its control socket gone: dlmctl cannot reach it, failed.
mv "$dir/n1/dlmd-ctl.sock" "$dir/n1/dlmd-ctl.sock.away"
agent monitor
mrc=$?
mv "$dir/n1/dlmd-ctl.sock.away" "$dir/n1/dlmd-ctl.sock"
expect $mrc 1 "monitor of a dlmd whose control socket is gone"
reason | grep -q "does not answer" || fail "socket-gone reason: $(reason)"

# Alive but not answering (dlmctl gives up after its own 10 s).
kill -STOP "$pid"
agent monitor
mrc=$?
kill -CONT "$pid"
expect $mrc 1 "monitor of a dlmd that does not answer"
reason | grep -q "does not answer" || fail "stuck reason: $(reason)"
agent monitor
expect $? 0 "monitor once it answers again"

# Killed: not running; a stale pid file and socket do not stop a start.
kill -KILL "$pid"
i=0
while [ -d "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
agent monitor
expect $? 7 "monitor after SIGKILL"
agent start
expect $? 0 "start after SIGKILL (stale pid file and socket)"
[ "$(cat "$PIDFILE")" != "$pid" ] || fail "pid file still names the killed dlmd"
agent stop
expect $? 0 "final stop"
agent monitor
expect $? 7 "monitor after the final stop"
[ ! -e "$PIDFILE" ] || fail "pid file left after stop"

[ $rc -eq 0 ] && echo "ocf-agent: all checks passed"
exit $rc
