#!/bin/sh
# tests/test-client-astbuf.sh - the AST sockets' big send buffers are
# bounded per user.
#
# dlmd raises the send buffer of each client's AST socket (AST_SNDBUF,
# plugin/client.c; SO_SNDBUFFORCE, past net.core.wmem_max, when it can):
# 1 MB of kernel memory a socket once the kernel doubles it.  One
# unprivileged user with max_clients_per_uid connections could so pin
# that much times the connection count (1 GB at the defaults).  A
# one-node dlmd (membership none) with max_clients_per_uid 40: nobody
# opens a lockspace on 40 connections; dlmd's own ends of their AST
# sockets, as ss(8) shows them (skmem tb, dlmd's process), are raised on
# at most AST_RAISED_PER_UID (8) of them, the rest keep the kernel
# default, and dlmctl status counts the raised ones; root's connections
# are not limited; when nobody's connections close, its budget is free
# again.  Needs root (setpriv) and ss; fails, never skips.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
LC=$top_builddir/tests/limit-client
CONNS=40		# nobody's connections (max_clients_per_uid too)
RAISED_MAX=8		# plugin/client.c AST_RAISED_PER_UID
ROOT_CONNS=12		# root's, all raised
BIG=1048576		# AST_SNDBUF (512 KB) doubled by the kernel
POLLS=100		# waits: polls of 0.1 s

one_dlmd_test astbuf setpriv
command -v ss >/dev/null || { echo "FAIL: needs ss" >&2; exit 1; }

# big_bufs: how many of dlmd's unix sockets have a send buffer of BIG
# or more (ss -x -m -p: the skmem line follows its socket's line)
big_bufs() {
	ss -x -a -m -p -H 2>/dev/null | awk -v p="pid=$pid," -v big=$BIG '
		/^[^ \t]/ || /users:/ { mine = index($0, p) > 0 }
		/skmem:/ { if (mine && match($0, /tb[0-9]+/) &&
			       substr($0, RSTART + 2, RLENGTH - 2) + 0 >= big) n++ }
		END { print n + 0 }'
}

one_dlmd "socket_owner = root" "socket_group = root" \
	"socket_mode = 0666" "log_level = debug" \
	"max_clients_per_uid = $CONNS"
"$LC" create buf 0666 || fail "root cannot create a lockspace"
base=$(big_bufs)
echo "dlmd's big buffers before any client: $base"

echo "== nobody opens the lockspace $CONNS times"
fifo_hold nobody 4 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" open buf $CONNS
poll $((POLLS / 10)) grep -q '^opened' "$dir/nobody.out"
grep -q "^opened $CONNS\$" "$dir/nobody.out" ||
	fail "nobody's connections: $(cat "$dir/nobody.out")"
n=$(($(big_bufs) - base))
echo "dlmd's AST sockets with a big buffer: $n of $CONNS"
[ "$n" -le $RAISED_MAX ] ||
	fail "$n of nobody's $CONNS AST sockets have a big buffer, want at most $RAISED_MAX"
[ "$n" -ge 1 ] || fail "none of nobody's AST sockets has a big buffer"
r=$(status_value ast_sockets_raised)
[ "$r" = "$n" ] || fail "status ast_sockets_raised '$r', ss shows $n"

echo "== root opens it $ROOT_CONNS times: not limited"
fifo_hold root 5 "$LC" open buf $ROOT_CONNS
poll $((POLLS / 10)) grep -q '^opened' "$dir/root.out"
grep -q "^opened $ROOT_CONNS\$" "$dir/root.out" ||
	fail "root's connections: $(cat "$dir/root.out")"
m=$(($(big_bufs) - base - n))
echo "root's AST sockets with a big buffer: $m of $ROOT_CONNS"
[ "$m" -eq $ROOT_CONNS ] || fail "root has $m big AST buffers, want $ROOT_CONNS"
fifo_release root 5

echo "== nobody's connections close: its budget is free again"
fifo_release nobody 4
poll $((POLLS / 10)) test "$(status_value ast_sockets_raised)" = 0 ||
	fail "ast_sockets_raised $(status_value ast_sockets_raised) after every client left"
fifo_hold again 4 setpriv --reuid=nobody --regid=nogroup --clear-groups "$LC" open buf 2
poll $((POLLS / 10)) grep -q '^opened' "$dir/again.out"
n=$(($(big_bufs) - base))
[ "$n" -eq 2 ] || fail "nobody's 2 new connections: $n big AST buffers, want 2"
fifo_release again 4
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
