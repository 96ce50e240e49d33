#!/bin/sh
# tests/test-cluster-keys.sh - the keys of a running dlmd, on a 2-node
# cluster (tests/dlm-cluster up 2) whose secure heap is too small for
# a single connection's session keys (dlm.conf secure_heap_size = 1024,
# the smallest).
#
#   1. The nodes lock across the cluster all the same: a client on each
#      node takes and releases EX on the same resource.
#   2. Each dlmd said the full heap once (however many keys then went to
#      ordinary memory), counts them in dlmctl status
#      (keys_out_of_secure_heap) and in the metrics
#      (dlmd_session_keys_out_of_secure_heap_total), 2 or more (a
#      connection keys both directions), and said its heap's size.
#   3. Node 1's dlmd read as a core dump would read it (tests/keyscan.py):
#      no cluster key, no piece of the key file, and its derived keys
#      (lowcomms' two, the CPG seal key) only in memory kept out of core
#      dumps, where they are found (the probe is not blind).  The session
#      keys are not looked for: here they are in ordinary memory, which
#      is what step 2 says.
#   4. The key file is read once (plugin/comms.c, THE CLUSTER KEY): node
#      1's dlmd, run under strace from its start, opens it exactly once
#      for lowcomms' keys and the CPG seal key both, and not again after
#      a new key was renamed over it, while a new lockspace (CPG messages
#      sealed, lock traffic between the nodes) works under the old key:
#      a replaced key file changes nothing until a restart.  Before, it
#      was opened twice (comms.c, then cluster.c's seal_init): a file
#      renamed over it in between gave the two users different keys.
# Bounded in time; run under flock /work/cluster.lock.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LS=keys
. "$top_srcdir/tests/cluster-test-lib.sh"

DLM_CLUSTER_CONF_EXTRA="secure_heap_size = 1024"
export DLM_CLUSTER_CONF_EXTRA
# Node 1's dlmd under strace, its opens only (-D: the PID dlm-cluster
# starts stays dlmd's, the tracer is a grandchild; -I 1: a SIGTERM,
# which -o FILE would have it block, detaches it, in step 4).
command -v strace >/dev/null || { echo "SKIP: no strace" >&2; exit 77; }
keys_real=$(cd "$(dirname "$DLMD")" && pwd)/$(basename "$DLMD")
cat >"$dir/dlmd" <<EOF
#!/bin/sh
case "\$*" in
*/n1/dlm.conf*) exec strace -D -I 1 -f -qq --seccomp-bpf -e signal=none \\
	-e trace=open,openat,openat2 -o "$dir/n1-opens.out" "$keys_real" "\$@" ;;
esac
exec "$keys_real" "\$@"
EOF
chmod +x "$dir/dlmd"
DLMD=$dir/dlmd
export DLMD
up_cluster 2

# lock_across WHEN: both nodes join $LS, and a client on each in turn
# takes and releases EX on the same resource (WHEN: for the failures)
lock_across() {
	for k in 1 2; do
		on $k "$DLMCTL" join "$LS" >/dev/null ||
			fail "node $k cannot join $LS $1"
	done
	for k in 1 2; do
		wait_ls $k "state running members 1 2 " "$LS not on both nodes $1"
	done
	for k in 1 2 1 2; do
		timeout 30 "$CLUSTER" exec "$dir" $k "$CLIENT" try "$LS" shared EX \
			>>"$dir/lock.out" 2>&1 ||
			fail "node $k cannot take EX on shared $1: $(tail -n 3 "$dir/lock.out")"
	done
}

echo "== 1. locks across the cluster with the secure heap full"
lock_across "with the secure heap full"

echo "== 2. said once, counted"
out_of_heap() { # K: node K's keys_out_of_secure_heap
	on "$1" "$DLMCTL" status 2>/dev/null |
		sed -n 's/.* keys_out_of_secure_heap \([0-9][0-9]*\).*/\1/p'
}
for k in 1 2; do
	n=$(out_of_heap $k)
	echo "node $k: keys_out_of_secure_heap ${n:-(none)}"
	[ -n "$n" ] && [ "$n" -ge 2 ] ||
		fail "node $k: keys_out_of_secure_heap '${n:-}' (want 2 or more)"
	m=$(on $k "$DLMCTL" metrics 2>/dev/null |
		sed -n 's/^dlmd_session_keys_out_of_secure_heap_total \([0-9][0-9]*\)$/\1/p')
	echo "node $k: dlmd_session_keys_out_of_secure_heap_total ${m:-(none)}"
	[ -n "$m" ] && [ "$m" -ge 2 ] ||
		fail "node $k: metric dlmd_session_keys_out_of_secure_heap_total '${m:-}' (want 2 or more)"
	said=$(grep -c "comms: OpenSSL's secure heap is full: the session keys of new connections are now in ordinary memory" "$dir/n$k/dlmd.out")
	[ "$said" -eq 1 ] ||
		fail "node $k said the full secure heap $said times (want once)"
	grep -q "session keys in OpenSSL's secure heap (1 KiB)" "$dir/n$k/dlmd.out" ||
		fail "node $k did not say its secure heap's size (secure_heap_size not taken?)"
done

echo "== 3. node 1's dlmd read as a core dump would be"
PYTHONDONTWRITEBYTECODE=1 timeout 300 python3 "$top_srcdir/tests/keyscan.py" \
	"$(cat "$dir/n1/dlmd.launch-pid")" "$dir/authkey" >"$dir/scan.out" 2>&1 ||
	fail "a key of node 1's dlmd would be in a core dump: $(cat "$dir/scan.out")"
cat "$dir/scan.out"

echo "== 4. the key file read once; a key put there later changes nothing"
(umask 077 && head -c 256 /dev/urandom >"$dir/authkey.new") ||
	fail "cannot write a new key"
mv "$dir/authkey.new" "$dir/authkey" || fail "cannot replace the key file"
LS=$LS-2
lock_across "after the key file changed"
# Detach the tracer (its output is complete once it is gone): dlmd's
# TracerPid, if that is our strace.
untraced() { # PID: no tracer
	grep -q '^TracerPid:[[:space:]]*0$' "/proc/$1/status"
}
n1=$(cat "$dir/n1/dlmd.launch-pid")
tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$n1/status" 2>/dev/null)
if [ -n "$tracer" ] && [ "$tracer" != 0 ] &&
   tr '\0' ' ' <"/proc/$tracer/cmdline" 2>/dev/null |
	grep -qF "$dir/n1-opens.out"; then
	kill "$tracer"
	# not kill -0: the tracer is not our child, it may stay a zombie
	poll 10 untraced "$n1" ||
		fail "node 1's tracer $tracer does not detach"
else
	fail "node 1's dlmd is not traced (TracerPid '${tracer:-}')"
fi
# The opens of the key file itself (a walk of its directories opens
# them O_PATH; those are not reads of the key).
grep 'authkey"' "$dir/n1-opens.out" | grep -v O_PATH
opens=$(grep 'authkey"' "$dir/n1-opens.out" | grep -vc O_PATH)
[ "$opens" -eq 1 ] ||
	fail "node 1's dlmd opened the key file $opens times (want once)"
