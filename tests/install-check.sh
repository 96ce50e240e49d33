#!/bin/sh
# tests/install-check.sh - "make install DESTDIR=..." puts every file where
# a cluster component's files go, and "make uninstall" takes them away.
#
# Checks: dlmd in sbindir, dlmctl in bindir, libdlm.so.3 and
# libdlm_lt.so.3 (with their .so links) in libdir, libdlm.h, libdlm.pc and
# libdlm_lt.pc; the OCF agent at OCF_ROOT/resource.d/dlmd/dlmd naming the
# installed dlmd; dlm.conf under sysconfdir/dlm (and a second install keeps
# an edited one); the systemd unit naming the installed paths; every man
# page, formatted without warnings.  A program built only from the
# installed header, library and pkg-config file runs.  Then uninstall
# leaves nothing but the edited dlm.conf.  Fast; needs no cluster.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
MAKE=${MAKE:-make}

rc=0
. "$top_srcdir/tests/test-lib.sh"

dest=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-install.XXXXXX") || exit 1
# $dest/root is DESTDIR; $dest/work holds this test's own files.
D=$dest/root
W=$dest/work
mkdir -p "$D" "$W" || exit 1
# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
	dir=$dest
	finish "the installed tree: root"
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# The directories this build installs to (ocf/Makefile.inc).
bindir='' sbindir='' libdir='' includedir='' mandir=''
sysconfdir='' pkgconfigdir='' ocfagentdir='' systemdunitdir= lvmlockddropindir=
# MAKEFLAGS from an enclosing "make check" would make -s verbose again.
dirs=$(cd "$top_builddir" && MAKEFLAGS='' $MAKE -s show-install-dirs) ||
	{ fail "make show-install-dirs"; exit 1; }
eval "$dirs"
for v in bindir sbindir libdir includedir sysconfdir mandir \
	 ocfagentdir systemdunitdir pkgconfigdir; do
	eval "val=\${$v-}"
	[ -n "$val" ] || [ "$v" = systemdunitdir ] || fail "make show-install-dirs gave no $v"
done

echo "== make install DESTDIR=$D"
(cd "$top_builddir" && MAKEFLAGS='' $MAKE install DESTDIR="$D") >"$W/install.log" 2>&1 ||
	{ cat "$W/install.log" >&2; fail "make install"; exit 1; }
need() { # TEST PATH WHAT
	test "$1" "$D$2" || fail "$3: $2 missing"
}
need -x "$sbindir/dlmd" "daemon"
need -x "$bindir/dlmctl" "control tool"
need -x "$sbindir/dlmd-configfs" "configfs view runner"
# dlm_tool (and its page) only where configure found no other one
if grep -qFx 'S["INSTALL_DLM_TOOL_TRUE"]=""' "$top_builddir/config.status"; then
	need -x "$sbindir/dlm_tool" "dlm_tool front end"
	need -f "$mandir/man8/dlm_tool.8" "dlm_tool(8)"
else
	[ -e "$D$sbindir/dlm_tool" ] && fail "dlm_tool installed over another DLM's (configure found one)"
fi
grep -q "^conf=$sysconfdir/dlm/dlm.conf$" "$D$sbindir/dlmd-configfs" ||
	fail "dlmd-configfs does not default to $sysconfdir/dlm/dlm.conf"
for l in libdlm libdlm_lt; do
	need -f "$libdir/$l.so.3" "$l soname"
	need -L "$libdir/$l.so" "$l link for -l${l#lib}"
	need -f "$pkgconfigdir/$l.pc" "$l pkg-config file"
done
need -f "$includedir/libdlm.h" "header"
need -x "$ocfagentdir/dlmd" "OCF agent"
need -f "$sysconfdir/dlm/dlm.conf" "default dlm.conf"
if [ -n "${systemdunitdir:-}" ]; then
	need -f "$systemdunitdir/dlmd.service" "systemd unit"
	grep -q "^ExecStart=$sbindir/dlmd .*-c $sysconfdir/dlm/dlm.conf" \
		"$D$systemdunitdir/dlmd.service" ||
		fail "the unit does not name $sbindir/dlmd and $sysconfdir/dlm/dlm.conf"
	need -f "$lvmlockddropindir/dlmd.conf" "lvmlockd.service drop-in"
	grep -q "^ExecStart=$sbindir/dlmd-configfs -c $sysconfdir/dlm/dlm.conf /sbin/lvmlockd " \
		"$D$lvmlockddropindir/dlmd.conf" ||
		fail "the lvmlockd drop-in does not run lvmlockd through $sbindir/dlmd-configfs"
fi
if [ -x "$D$ocfagentdir/dlmd" ]; then
	grep -q "^DLMD_DEFAULT_DAEMON=\"$sbindir/dlmd\"" "$D$ocfagentdir/dlmd" ||
		fail "the agent's default daemon is not $sbindir/dlmd"
	grep -q "^DLMD_DEFAULT_CONFIG=\"$sysconfdir/dlm/dlm.conf\"" "$D$ocfagentdir/dlmd" ||
		fail "the agent's default config is not $sysconfdir/dlm/dlm.conf"
fi
cmp -s "$top_srcdir/plugin/dlm.conf.example" "$D$sysconfdir/dlm/dlm.conf" ||
	fail "dlm.conf is not plugin/dlm.conf.example"

echo "== man pages"
for m in man8/dlmd.8 man8/dlmctl.8 man5/dlm.conf.5 man7/dlmd-metrics.7 man3/libdlm.3 \
	 man3/dlm_create_lockspace.3 man3/dlm_new_lockspace.3 \
	 man3/dlm_open_lockspace.3 man3/dlm_close_lockspace.3 \
	 man3/dlm_release_lockspace.3 man3/dlm_ls_get_fd.3 \
	 man3/dlm_lock.3 man3/dlm_lock_wait.3 man3/dlm_ls_lock.3 \
	 man3/dlm_ls_lock_wait.3 man3/dlm_ls_lockx.3 \
	 man3/dlm_unlock.3 man3/dlm_unlock_wait.3 man3/dlm_ls_unlock.3 \
	 man3/dlm_ls_unlock_wait.3 man3/dlm_dispatch.3 man3/dlm_get_fd.3 \
	 man3/dlm_pthread_init.3 man3/dlm_ls_pthread_init.3 \
	 man3/dlm_pthread_cleanup.3 man3/lock_resource.3 \
	 man3/unlock_resource.3 man3/dlm_ls_purge.3 \
	 man3/dlm_ls_deadlock_cancel.3 man3/dlm_kernel_version.3 \
	 man3/dlm_ls_lock_token.3 man3/dlm_lock_token.3 \
	 man3/dlm_library_version.3; do
	need -f "$mandir/$m" "man page"
done
if command -v groff >/dev/null 2>&1; then
	for m in "$D$mandir"/man*/*; do
		[ -f "$m" ] || continue
		# .so aliases resolve against the man tree's top.
		warn=$(cd "$D$mandir" && groff -t -man -ww -z -Tutf8 "$m" 2>&1)
		[ -z "$warn" ] || fail "$m: $warn"
	done
else
	echo "groff not installed: man pages not formatted"
fi

echo "== a program built from the installed files"
cat >"$W/prog.c" <<'EOF'
#include <sys/types.h>
#include <stdio.h>
#include <libdlm.h>

int main(void)
{
	uint32_t maj, min, patch;

	dlm_library_version(&maj, &min, &patch);
	printf("libdlm device interface %u.%u.%u\n", maj, min, patch);
	return 0;
}
EOF
for l in libdlm libdlm_lt; do
	flags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_LIBDIR="$D$pkgconfigdir" \
		pkg-config --cflags --libs "$l") ||
		{ fail "pkg-config --cflags --libs $l"; continue; }
	# shellcheck disable=SC2086 # flags is a list of options
	${CC:-cc} ${SAN_CFLAGS:-} -o "$W/prog-$l" "$W/prog.c" $flags >"$W/cc.out" 2>&1 ||
		{ cat "$W/cc.out" >&2; fail "cannot build against installed $l ($flags)"; continue; }
	LD_LIBRARY_PATH=$D$libdir "$W/prog-$l" | grep -q '^libdlm device interface 6\.0\.2$' ||
		fail "a program linked with installed $l does not run"
done

echo "== install again: an edited dlm.conf is kept"
echo "# edited by the admin" >>"$D$sysconfdir/dlm/dlm.conf"
(cd "$top_builddir" && MAKEFLAGS='' $MAKE install DESTDIR="$D") >/dev/null 2>&1 ||
	fail "second make install"
grep -q "edited by the admin" "$D$sysconfdir/dlm/dlm.conf" ||
	fail "a second install overwrote the admin's dlm.conf"

echo "== make uninstall"
(cd "$top_builddir" && MAKEFLAGS='' $MAKE uninstall DESTDIR="$D") >/dev/null 2>&1 ||
	fail "make uninstall"
left=$(cd "$D" && find . -type f -o -type l | sort)
[ "$left" = "./${sysconfdir#/}/dlm/dlm.conf" ] ||
	fail "uninstall left: $(echo "$left" | tr '\n' ' ') (only the edited dlm.conf may stay)"

[ $rc -eq 0 ] && echo "install-check: all checks passed"
exit $rc
