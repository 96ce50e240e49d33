#!/bin/sh
# tests/test-client-perms.sh - an unprivileged user against a dlmd run by
# root.
#
# A one-node dlmd (membership none) whose client socket anyone may
# connect to (socket_mode 0666: the permissions that matter are then
# dlmd's own), and tests/perm-client, run as root, whose child drops to
# nobody: see tests/perm-client.c for the rules it asserts (no lockspace
# creation, a lockspace's mode obeyed, an AST socket only a unix
# SEQPACKET socket of its own, a request ring only on a sealed,
# writable memfd of its own after LS_OPEN, another user's locks and
# orphans out of reach through the ring and the socket alike), and
# tests/ring-hostile, as nobody, which writes its ring while dlmd reads
# it (dlmd must neither crash nor read out of bounds: under the
# sanitizer build its log is checked; a clean client is served after).
# Then
# dlmd's counters show the ring was used, and dlmd is still up; and of
# the 200 refusals of nobody's purges and adoptions of root's orphan,
# a few were logged (at info; the rest at debug), not one line each.
# Needs root (setresuid); skips (77) otherwise.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
POLLS=100		# waits: polls of 0.1 s

rc=0
pid=

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (setresuid)" >&2; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-perms.XXXXXX") || exit 1
chmod 755 "$dir"

cleanup() {
	stop_dlmd
	check_sanitizer "$dir/dlmd.out"
	finish "dlmd: dlmd.out; perm-client: perm.out"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

write_conf "$dir/dlm.conf" "socket_owner = root" "socket_group = root" \
	"socket_mode = 0666" "log_level = debug"
export DLMD_SOCKET=$dir/dlmd.sock DLMD_CTL_SOCKET=$dir/dlmd-ctl.sock
start_dlmd "$dir/dlm.conf" "$dir/dlmd.out"

timeout 60 "$top_builddir/tests/perm-client" >"$dir/perm.out" 2>&1 ||
	fail "perm-client: $(grep -v '^ok ' "$dir/perm.out")"
cat "$dir/perm.out"
n=$(grep -c '^ok ' "$dir/perm.out")
[ "$n" -ge 37 ] || fail "only $n checks passed"
n=$(grep -c 'uid 65534 may not \(adopt\|purge\)' "$dir/dlmd.out")
i=$(grep -c 'info: client pid .* uid 65534 may not \(adopt\|purge\)' "$dir/dlmd.out")
echo "refusals of root's orphans to nobody: $n logged, $i of them at info"
[ "$n" -ge 200 ] || fail "$n refusals logged at any level, want 200 or more"
[ "$i" -le 20 ] || fail "$i refusals logged at info, want at most 20 (10 a minute)"
# a ring written while dlmd reads it (tests/ring-hostile.c), as nobody
timeout 120 "$top_builddir/tests/ring-hostile" 40 >"$dir/hostile.out" 2>&1 ||
	fail "ring-hostile: $(cat "$dir/hostile.out")"
cat "$dir/hostile.out"
kill -0 "$pid" 2>/dev/null || fail "dlmd died under ring-hostile"
rr=$("$DLMCTL" status | sed -n 's/^ring_requests //p')
echo "dlmd took $rr requests from rings; cut $(grep -c 'request ring index out of range' "$dir/dlmd.out") hostile rings"
[ "${rr:-0}" -ge 6 ] || fail "ring_requests $rr: the ring was not used"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
