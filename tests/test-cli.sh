#!/bin/sh
# tests/test-cli.sh - what the command lines say to a new user.
#
# dlmd, dlmctl, dlm_tool and dlmd-configfs, the GNU way: --help on
# standard output with exit 0, --version with the package version, long
# options (dlmd --foreground --config=FILE starts the daemon here), and a
# usage error said in one line on standard error with a pointer to --help,
# exit 2.  Then dlmctl against a one-node dlmd (membership none: no
# corosync, no network, sockets in a temporary directory): a command
# without its argument says what is missing, a lockspace it does not have
# is "no lockspace 'NAME'", an empty ls says so, options go before or
# after the command.  Fails, never skips; every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
DLM_TOOL=$top_builddir/plugin/dlm_tool
CONFIGFS=$top_builddir/ocf/dlmd-configfs
POLLS=100		# waits: polls of 0.1 s

rc=0
pid=

VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
[ -n "$VERSION" ] || { echo "FAIL: no PACKAGE_VERSION in $top_builddir/Makefile" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-cli.XXXXXX") || exit 1

cleanup() {
	stop_dlmd
	check_sanitizer "$dir"/*.err "$dir/dlmd.out"
	finish
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# run NAME CMD...: CMD's stdout in $dir/NAME.out, stderr in $dir/NAME.err,
# exit status in $st.
run() {
	name=$1
	shift
	"$@" >"$dir/$name.out" 2>"$dir/$name.err" </dev/null
	st=$?
}

# expect NAME STATUS WHERE TEXT: the last run exited STATUS and its
# stdout (WHERE=out) or stderr (err) has a line that is exactly TEXT.
expect() {
	[ "$st" = "$2" ] ||
		fail "$1: exit $st, want $2; stdout: $(cat "$dir/$1.out"); stderr: $(cat "$dir/$1.err")"
	grep -qxF -- "$4" "$dir/$1.$3" ||
		fail "$1: no line '$4' on std$3: $(cat "$dir/$1.$3")"
}

# usage_error NAME PROG TEXT: the last run was a usage error of PROG that
# said TEXT, then "Try 'PROG --help' ...", on stderr only.
usage_error() {
	expect "$1" 2 err "$3"
	expect "$1" 2 err "Try '$2 --help' for more information."
	[ -s "$dir/$1.out" ] && fail "$1: a usage error printed on stdout: $(cat "$dir/$1.out")"
	return 0
}

# help_and_version PROG PATH VERSION-LINE: -h/--help on stdout, exit 0,
# nothing on stderr; -V/--version's first line.
help_and_version() {
	for o in -h --help; do
		run "$1$o" "$2" "$o"
		[ "$st" = 0 ] || fail "$1 $o: exit $st, want 0"
		grep -q "^Usage: $1 " "$dir/$1$o.out" || fail "$1 $o: no usage line: $(cat "$dir/$1$o.out")"
		[ -s "$dir/$1$o.err" ] && fail "$1 $o wrote on stderr: $(cat "$dir/$1$o.err")"
	done
	for o in -V --version; do
		run "$1$o" "$2" "$o"
		[ "$st" = 0 ] || fail "$1 $o: exit $st, want 0"
		[ "$(head -n 1 "$dir/$1$o.out")" = "$3" ] ||
			fail "$1 $o: first line '$(head -n 1 "$dir/$1$o.out")', want '$3'"
	done
}

echo "== --help and --version"
help_and_version dlmd "$DLMD" "dlmd $VERSION"
help_and_version dlmctl "$DLMCTL" "dlmctl (dlmd) $VERSION"
help_and_version dlmd-configfs "$CONFIGFS" "dlmd-configfs (dlmd) $VERSION"
# dlm_tool's usage keeps the established tool's layout ("Usage:" alone)
for o in -h --help; do
	run "dlm_tool$o" "$DLM_TOOL" "$o"
	expect "dlm_tool$o" 0 out "Usage:"
done
for o in -V --version; do
	run "dlm_tool$o" "$DLM_TOOL" "$o"
	expect "dlm_tool$o" 0 out "dlm_tool (dlmd) $VERSION"
done

echo "== usage errors: one line saying what is wrong, exit 2"
run dlmd-bogus "$DLMD" --bogus
usage_error dlmd-bogus dlmd "$DLMD: unrecognized option '--bogus'"
run dlmd-operand "$DLMD" extra
usage_error dlmd-operand dlmd "dlmd: unexpected argument 'extra' (dlmd takes no operands)"
run dlmd-noarg "$DLMD" --config
usage_error dlmd-noarg dlmd "$DLMD: option '--config' requires an argument"
run ctl-none "$DLMCTL"
usage_error ctl-none dlmctl "dlmctl: missing the command"
run ctl-bogus "$DLMCTL" bogus
usage_error ctl-bogus dlmctl "dlmctl: unknown command 'bogus'"
run ctl-lockdump "$DLMCTL" lockdump
usage_error ctl-lockdump dlmctl "dlmctl: lockdump: missing the lockspace name"
run ctl-join "$DLMCTL" join
usage_error ctl-join dlmctl "dlmctl: join: missing the lockspace name"
run ctl-leave "$DLMCTL" leave --force
usage_error ctl-leave dlmctl "dlmctl: leave: missing the lockspace name"
run ctl-fence "$DLMCTL" fence_ack
usage_error ctl-fence dlmctl "dlmctl: fence_ack: missing the node id"
run ctl-fence-bad "$DLMCTL" fence_ack node2
usage_error ctl-fence-bad dlmctl "dlmctl: fence_ack: 'node2' is not a node id"
run ctl-ls-arg "$DLMCTL" ls x
usage_error ctl-ls-arg dlmctl "dlmctl: ls takes no argument, not 'x'"
run ctl-extra "$DLMCTL" lockdump a b
usage_error ctl-extra dlmctl "dlmctl: lockdump takes one argument; 'b' is one too many"
run ctl-json "$DLMCTL" dump --json
usage_error ctl-json dlmctl "dlmctl: --json goes with ls and status, not dump"
run ctl-force "$DLMCTL" -f lockdump x
usage_error ctl-force dlmctl "dlmctl: --force goes with leave, not lockdump"
run ctl-opt "$DLMCTL" --bogus ls
usage_error ctl-opt dlmctl "$DLMCTL: unrecognized option '--bogus'"
run ctl-socket "$DLMCTL" ls --socket
usage_error ctl-socket dlmctl "$DLMCTL: option '--socket' requires an argument"
run cfs-none "$CONFIGFS"
usage_error cfs-none dlmd-configfs "dlmd-configfs: missing the PROGRAM to run"
run cfs-bogus "$CONFIGFS" --bogus true
usage_error cfs-bogus dlmd-configfs "dlmd-configfs: unrecognized option '--bogus'"
run cfs-noarg "$CONFIGFS" --dir
usage_error cfs-noarg dlmd-configfs "dlmd-configfs: option '--dir' requires an argument"

echo "== dlmd started with long options"
write_conf "$dir/dlm.conf"
# the socket from --socket / -s, not from the environment
unset DLMD_CTL_SOCKET
SOCK=$dir/dlmd-ctl.sock
start_dlmd "$dir/dlm.conf" "$dir/dlmd.out"

echo "== dlmctl against it"
run ls-empty "$DLMCTL" --socket="$SOCK" ls
expect ls-empty 0 out "no lockspaces"
run ls-empty-json "$DLMCTL" ls --json -s "$SOCK"
expect ls-empty-json 0 out "[]"
run lockdump-nosuch "$DLMCTL" -s "$SOCK" lockdump nosuch
expect lockdump-nosuch 1 err "dlmctl: lockdump nosuch: no lockspace 'nosuch'"
run leave-nosuch "$DLMCTL" -s "$SOCK" leave nosuch
expect leave-nosuch 1 err "dlmctl: leave nosuch: no lockspace 'nosuch'"
run tool-lockdump-nosuch env DLMD_CTL_SOCKET="$SOCK" "$DLM_TOOL" lockdump nosuch
expect tool-lockdump-nosuch 1 err "dlm_tool: no lockspace 'nosuch'"
run join "$DLMCTL" join cli-ls --sock "$SOCK"
[ "$st" = 0 ] || fail "dlmctl join cli-ls --sock: exit $st: $(cat "$dir/join.err")"
run ls-one "$DLMCTL" -s "$SOCK" ls
grep -q '^name cli-ls id [0-9a-f]* state running ' "$dir/ls-one.out" ||
	fail "dlmctl ls after join: $(cat "$dir/ls-one.out")"
grep -q 'no lockspaces' "$dir/ls-one.out" && fail "ls with a lockspace says there are none"
# options after the command and its argument, and before it
run leave "$DLMCTL" leave cli-ls --force -s "$SOCK"
[ "$st" = 0 ] || fail "dlmctl leave cli-ls --force: exit $st: $(cat "$dir/leave.err")"
run ls-again "$DLMCTL" -s "$SOCK" ls
expect ls-again 0 out "no lockspaces"
# a lockspace name that looks like an option, after "--"
run join-dash "$DLMCTL" -s "$SOCK" join -- -dash-ls
[ "$st" = 0 ] || fail "dlmctl join -- -dash-ls: exit $st: $(cat "$dir/join-dash.err")"
run leave-dash "$DLMCTL" -s "$SOCK" leave -- -dash-ls
[ "$st" = 0 ] || fail "dlmctl leave -- -dash-ls: exit $st: $(cat "$dir/leave-dash.err")"

[ $rc -eq 0 ] && echo "PASS"
exit $rc
