#!/bin/sh
# tests/test-libdlm-secure.sh - libdlm in a setuid program takes nothing
# from the invoker's environment.
#
# A program linked with libdlm that runs setuid (or setgid, to be in the
# "dlm group" of socket_group) has an environment its invoker chose.  Were
# DLMD_SOCKET obeyed there, the invoker would point the program at a
# server of their own, pose as dlmd to it (grant every lock at once, so
# two holders of one EX; read the resource names and LVBs it sends).  So
# libdlm reads its variables with secure_getenv(): in a process that
# gained privileges at exec (AT_SECURE) they are ignored.
#
# tests/secenv-client listens at a path and has libdlm open a lockspace
# with DLMD_SOCKET naming that path: run as root, plainly, it must connect
# there (the variable works, so the probe sees it); a setuid-root copy run
# by nobody, with the same DLMD_SOCKET, must not.  Needs root; skips (77)
# where it cannot make a setuid program (a nosuid file system).  The same
# for dlmctl (plugin/ctl-client.c) and DLMD_CTL_SOCKET.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"

rc=0
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a setuid program)" >&2; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody" >&2; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-secenv.XXXXXX") || exit 1
chmod 755 "$dir"
trap 'finish "secenv: plain.out, suid.out"' EXIT
trap 'rc=1; exit 1' INT TERM

prog=$top_builddir/tests/secenv-client
cp "$prog" "$dir/secenv-suid" && chown root:root "$dir/secenv-suid" &&
	chmod 4755 "$dir/secenv-suid" || { fail "cannot make a setuid copy"; exit 1; }

DLMD_SOCKET=$dir/fake.sock timeout 60 "$prog" "$dir/fake.sock" \
	>"$dir/plain.out" 2>&1 || fail "secenv-client: $(cat "$dir/plain.out")"
echo "plain, as root: $(cat "$dir/plain.out")"
grep -qx 'secure 0 connected' "$dir/plain.out" ||
	fail "libdlm did not connect to DLMD_SOCKET in a plain program (the probe is blind)"

DLMD_SOCKET=$dir/fake.sock timeout 60 setpriv --reuid=nobody --regid=nogroup \
	--clear-groups "$dir/secenv-suid" "$dir/fake.sock" >"$dir/suid.out" 2>&1 ||
	fail "setuid secenv-client: $(cat "$dir/suid.out")"
echo "setuid root, run by nobody: $(cat "$dir/suid.out")"
if grep -q '^secure 0 ' "$dir/suid.out"; then
	echo "SKIP: the setuid bit has no effect here (nosuid?)" >&2
	trap - EXIT
	rm -rf "$dir"
	exit 77
fi
grep -qx 'secure 1 not-connected' "$dir/suid.out" ||
	fail "a setuid program's libdlm connected to the invoker's DLMD_SOCKET"

# dlmctl and dlm_tool (plugin/ctl-client.c) read DLMD_CTL_SOCKET the same
# way: plainly it names the socket they try (nothing listens there, so
# they say so and name it); a setuid copy run by nobody must try the
# default socket instead (libdlm/dlmd_proto.h's): it names that one, or,
# where a dlmd listens there, prints its status (nothing listens at the
# invoker's path).  Not naming the invoker's path alone would also pass
# for a dlmctl that did not run at all.
default_ctl=$(sed -n 's/^#define DLMD_DEFAULT_CTL_SOCKET[[:space:]]*"\(.*\)".*/\1/p' \
	"$top_srcdir/libdlm/dlmd_proto.h")
[ -n "$default_ctl" ] ||
	{ fail "no DLMD_DEFAULT_CTL_SOCKET in libdlm/dlmd_proto.h"; exit 1; }
cp "$DLMCTL" "$dir/dlmctl-suid" && chown root:root "$dir/dlmctl-suid" &&
	chmod 4755 "$dir/dlmctl-suid" || { fail "cannot make a setuid dlmctl"; exit 1; }
DLMD_CTL_SOCKET=$dir/fake-ctl.sock timeout 60 "$DLMCTL" status \
	>"$dir/ctl-plain.out" 2>&1
echo "dlmctl, as root: $(cat "$dir/ctl-plain.out")"
grep -q "$dir/fake-ctl.sock" "$dir/ctl-plain.out" ||
	fail "dlmctl did not try DLMD_CTL_SOCKET in a plain run (the probe is blind)"
DLMD_CTL_SOCKET=$dir/fake-ctl.sock timeout 60 setpriv --reuid=nobody \
	--regid=nogroup --clear-groups "$dir/dlmctl-suid" status \
	>"$dir/ctl-suid.out" 2>&1
echo "dlmctl setuid root, run by nobody: $(cat "$dir/ctl-suid.out")"
! grep -q "fake-ctl.sock" "$dir/ctl-suid.out" ||
	fail "a setuid dlmctl used the invoker's DLMD_CTL_SOCKET"
grep -Fq "listening on $default_ctl)" "$dir/ctl-suid.out" ||
	grep -Fq "cannot connect to $default_ctl:" "$dir/ctl-suid.out" ||
	grep -q '^protocol [0-9]' "$dir/ctl-suid.out" ||
	fail "a setuid dlmctl did not try the default socket $default_ctl"
