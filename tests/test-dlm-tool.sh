#!/bin/sh
# tests/test-dlm-tool.sh - dlm_tool's verbs against a running dlmd, in the
# established tool's layouts (plugin/dlm_tool.c, man/dlm_tool.8): a
# one-node corosync cluster from tests/dlm-cluster, lock holders from
# tests/test-libdlm-lt.  "ls" is compared with a golden text (the id
# filled in from dlmctl), the other verbs line by line with patterns, and
# the pacemaker controld agent's own pipelines are run on the output.
# Fails (never skips) if corosync cannot run here; always tears down.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
TOOL=$top_builddir/plugin/dlm_tool
LT=$top_builddir/tests/test-libdlm-lt
POLLS=100	# bounded waits: polls of 0.1 s

dir=$(mktemp -d "${TMPDIR:-/tmp}/dlm-tool-test.XXXXXX") || exit 1
rc=0
pids=
h1=
h2=
holders=	# $h1 and $h2 while they run
. "$top_srcdir/tests/cluster-test-lib.sh"

# expect NAME FILE PATTERN: a line of FILE matches the extended regex
expect() {
	grep -Eq -- "$3" "$2" || fail "$1: no line matches '$3' in: $(cat "$2")"
}

wait_exit() {	# PID: its exit status, or 124 (killed) after POLLS polls
	i=0
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $POLLS ] && { kill "$1"; wait "$1"; return 124; }
		sleep 0.1
	done
	wait "$1"
}

if ! "$CLUSTER" up 1 "$dir"; then
	echo "FAIL: cannot bring up the one-node corosync cluster" >&2
	rc=1
	exit 1
fi
. "$dir/env"
export DLMD_CTL_SOCKET

echo "== ls with no lockspace prints nothing"
"$TOOL" ls >"$dir/ls0" || fail "ls exit $?"
[ -s "$dir/ls0" ] && fail "ls without lockspaces: $(cat "$dir/ls0")"

echo "== join"
"$TOOL" join tool-ls >"$dir/join" || fail "join exit $?"
printf 'Joining lockspace "tool-ls" permission 600\ndone\n' | cmp -s - "$dir/join" ||
	fail "join printed: $(cat "$dir/join")"
"$TOOL" -m 0644 join other-ls 2>/dev/null
[ $? -eq 2 ] || fail "join -m 0644 should be refused (dlmd creates with 0600)"

echo "== ls: golden"
id=$("$DLMCTL" ls | sed -n 's/^name tool-ls id \([0-9a-f]*\) .*/\1/p')
ev=$("$DLMCTL" ls | sed -n 's/^name tool-ls .* event \([0-9]*\) .*/\1/p')
[ -n "$id" ] && [ -n "$ev" ] || fail "dlmctl ls: $("$DLMCTL" ls)"
cat >"$dir/ls.golden" <<EOF
dlm lockspaces
name          tool-ls
id            0x$id
flags         0x00000000 
change        member 1 joined 0 remove 0 failed 0 seq $ev,$ev
members       1 

EOF
"$TOOL" ls >"$dir/ls" || fail "ls exit $?"
diff -u "$dir/ls.golden" "$dir/ls" >&2 || fail "dlm_tool ls differs from the golden text"
"$TOOL" ls tool-ls >"$dir/ls1"
cmp -s "$dir/ls.golden" "$dir/ls1" || fail "dlm_tool ls tool-ls: $(cat "$dir/ls1")"
"$TOOL" ls no-such-ls >"$dir/ls2"
[ -s "$dir/ls2" ] && fail "ls of a missing lockspace printed: $(cat "$dir/ls2")"
"$TOOL" -n ls >"$dir/lsn"
expect "ls -n" "$dir/lsn" '^all nodes$'
expect "ls -n" "$dir/lsn" '^nodeid 1 member 1 failed 0 start 1 seq_add 0 seq_rem 0 check none$'
# the controld agent's check: no "wait fencing" on a healthy node
"$TOOL" ls | grep -q "wait fencing" && fail "ls says wait fencing on a healthy node"

echo "== status"
"$TOOL" status >"$dir/status" || fail "status exit $?"
expect status "$dir/status" '^cluster nodeid 1 quorate 1 ring seq [0-9]+ [0-9]+$'
expect status "$dir/status" '^daemon now [0-9]+ fence_pid 0 $'
expect status "$dir/status" '^node 1 M add [0-9]+ rem [0-9]+ fail [0-9]+ fence [0-9]+ at [0-9]+ [0-9]+$'
[ "$(wc -l <"$dir/status")" -eq 3 ] || fail "status: 3 lines expected: $(cat "$dir/status")"
"$TOOL" status -v >"$dir/statusv" || fail "status -v exit $?"
expect "status -v" "$dir/statusv" '^stateful_merge_wait=0$'
expect "status -v" "$dir/statusv" '^our_nodeid=1$'
# the controld agent's pipeline, as it runs it
smw=$("$TOOL" status -v | grep "stateful_merge_wait=" | cut -d= -f2)
[ "$smw" = 0 ] || fail "the controld agent would read stateful_merge_wait '$smw'"

echo "== dump and dump_config"
"$TOOL" dump >"$dir/dump" || fail "dump exit $?"
expect dump "$dir/dump" 'dlmd ready'
expect dump "$dir/dump" 'control: join tool-ls'
"$TOOL" dump_config >"$dir/config" || fail "dump_config exit $?"
expect dump_config "$dir/config" '^port=21064$'
expect dump_config "$dir/config" '^enable_fencing=[01]$'
grep -Ev '^[a-z_]+=[^ ]' "$dir/config" >"$dir/config.bad" &&
	fail "dump_config lines not key=value: $(cat "$dir/config.bad")"

echo "== lockdump and lockdebug: a holder and a waiter"
mkfifo "$dir/in1" "$dir/in2"
"$LT" hold tool-ls held-resource <"$dir/in1" >"$dir/h1.out" 2>&1 &
h1=$!
holders=$h1
exec 3>"$dir/in1"
wait_line "$dir/h1.out" held
# (not with holder 1's fifo open: it would never see its EOF)
"$LT" hold tool-ls held-resource <"$dir/in2" >"$dir/h2.out" 2>&1 3>&- &
h2=$!
holders="$h1 $h2"
exec 4>"$dir/in2"
i=0
until "$TOOL" lockdump tool-ls | grep -q 'gr IV rq EX'; do
	i=$((i + 1))
	[ $i -gt $POLLS ] && { fail "the waiter never showed: $("$TOOL" lockdump tool-ls)"; break; }
	sleep 0.1
done
"$TOOL" lockdump tool-ls >"$dir/lockdump" || fail "lockdump exit $?"
expect lockdump "$dir/lockdump" "^id [0-9a-f]{8} gr EX rq IV pid $h1 master 0 \"held-resource\"\$"
expect lockdump "$dir/lockdump" "^id [0-9a-f]{8} gr IV rq EX pid $h2 master 0 \"held-resource\"\$"
[ "$(wc -l <"$dir/lockdump")" -eq 2 ] || fail "lockdump: 2 lines expected: $(cat "$dir/lockdump")"
"$TOOL" -M lockdump tool-ls >"$dir/lockdumpm"
cmp -s "$dir/lockdump" "$dir/lockdumpm" ||
	fail "-M on one node (no master copies) changed lockdump: $(cat "$dir/lockdumpm")"
"$TOOL" lockdebug tool-ls >"$dir/lockdebug" || fail "lockdebug exit $?"
cat >"$dir/lockdebug.pat" <<EOF
^\$
^Resource len 13  "held-resource"\$
^Master\$
^Granted\$
^[0-9a-f]{8} EX pid $h1\$
^Convert\$
^Waiting\$
^[0-9a-f]{8} IV \\(EX\\) pid $h2\$
EOF
n=$(wc -l <"$dir/lockdebug")
[ "$n" -eq 8 ] || fail "lockdebug: 8 lines expected: $(cat "$dir/lockdebug")"
i=0
while IFS= read -r pat; do
	i=$((i + 1))
	sed -n "${i}p" "$dir/lockdebug" | grep -Eq -- "$pat" ||
		fail "lockdebug line $i: '$(sed -n "${i}p" "$dir/lockdebug")' does not match '$pat'"
done <"$dir/lockdebug.pat"
"$TOOL" -v lockdebug tool-ls >"$dir/lockdebugv"
expect "lockdebug -v" "$dir/lockdebugv" '^LVB [0-9a-f]{64} seq [0-9]+ valid$'
exec 3>&-
wait_exit "$h1" || fail "holder 1 exit status: $(cat "$dir/h1.out")"
h1=
holders=$h2
wait_line "$dir/h2.out" held
"$TOOL" lockdump tool-ls >"$dir/lockdump2"
expect "lockdump after" "$dir/lockdump2" "^id [0-9a-f]{8} gr EX rq IV pid $h2 master 0 \"held-resource\"\$"
# leave, like dlmctl's, does not take the lockspace from under its holder
"$TOOL" leave tool-ls >"$dir/leave-busy" 2>&1 && fail "leave of a lockspace in use succeeded"
expect "leave in use" "$dir/leave-busy" '^dlm_tool: lockspace tool-ls is in use: 1 client connections'
"$TOOL" lockdump tool-ls | grep -q "gr EX rq IV pid $h2 " ||
	fail "the lock is gone after a refused leave: $("$TOOL" lockdump tool-ls)"
exec 4>&-
wait_exit "$h2" || fail "holder 2 exit status: $(cat "$dir/h2.out")"
h2=
holders=

echo "== fence_ack, leave, errors"
"$TOOL" fence_ack 1 2>"$dir/fa.err"
[ $? -eq 1 ] || fail "fence_ack of a live member should fail with 1"
expect "fence_ack" "$dir/fa.err" '^dlm_tool: .*node 1'
"$TOOL" leave tool-ls >"$dir/leave" || fail "leave exit $?"
printf 'Leaving lockspace "tool-ls"\ndone\n' | cmp -s - "$dir/leave" ||
	fail "leave printed: $(cat "$dir/leave")"
"$TOOL" ls | grep -q tool-ls && fail "tool-ls still listed after leave"
"$TOOL" lockdump tool-ls 2>/dev/null && fail "lockdump of a left lockspace succeeded"
"$TOOL" lockdump 2>/dev/null; [ $? -eq 2 ] || fail "lockdump without a name should exit 2"
"$TOOL" bogus 2>/dev/null; [ $? -eq 2 ] || fail "an unknown verb should exit 2"
DLMD_CTL_SOCKET=$dir/nothing.sock "$TOOL" ls 2>"$dir/nr.err"
[ $? -eq 3 ] || fail "dlm_tool without a daemon should exit 3"
expect "not running" "$dir/nr.err" 'not running'

"$CLUSTER" status "$dir" || fail "a daemon died"
[ $rc -eq 0 ] && echo "PASS"
exit $rc
