#!/bin/sh
# tests/test-lvmlockd.sh - Debian's lvmlockd (lvm2-lockd), unmodified, on
# dlmd: a shared VG on a loop device, on a 3-node cluster (tests/dlm-cluster
# up 3).  Issue 13.
#
# Each node runs its own lvmlockd -A 1 (each node's /run is private, so
# each has its own /run/lvm/lvmlockd.socket), started as the shipped
# lvmlockd.service drop-in starts it: through dlmd-configfs, which binds
# dlmd's configfs view at /sys/kernel/config in lvmlockd's own mount
# namespace (this kernel has no /sys/kernel/config at all).  lvmlockd's
# environment has no DLMD_SOCKET: libdlm finds dlmd at the default
# /run/dlmd/dlmd.sock (a link, in the node's private /run, to the socket
# the test cluster gives dlmd).  lvmlockd loads the project's libdlm_lt
# (tests/lvmlockd/.libs, see plugin/Makefile.inc; the ASan runtime is
# preloaded when the build has sanitizers).  This kernel has no
# device-mapper: lvm.conf says global/activation = 0, so LVM takes and
# releases the same locks and changes no device.  Each node has its own
# LVM_SYSTEM_DIR whose filter accepts only the loop device.
#
# In order:
#   0. each node's view has comms/1..3 (nodeid, local, addr, addr_list),
#      read through dlmd-configfs;
#   1. vgcreate --shared on node 1 (lvmlockd reads cluster_name from the
#      view to choose dlm), vgchange --lock-start on every node; the view
#      on node 1 lists the three nodes of lvm_vg1;
#   2. lvcreate; lvchange -aey on node 1, refused on node 2;
#   3. node 1's lvmlockd is killed (SIGKILL) while it holds lv1's EX lock:
#      the lock stays (an orphan, node 2 still refused); lvmlockd -A 1
#      restarted adopts it (lvmlockctl -i lists it ex), and can release
#      it, after which node 2 activates lv1;
#   4. node 2 (holding lv1) is killed whole; after it is fenced node 3
#      activates lv1, and the view shows lvm_vg1 on nodes 1 and 3;
#   5. vgremove on node 3 is refused while node 1 has the lockspace
#      started (lvmlockd counts the view's nodes), allowed once node 1
#      stopped it; the lockspace leaves the view.
# Skips (77) only where lvm2-lockd is not installed and cannot be.  The
# cluster, lvmlockd processes and the loop device (by name) are always
# cleaned up (trap); logs are kept on failure.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
CONFIGFS_RUN=$top_builddir/ocf/dlmd-configfs
LIBDIR=$top_builddir/tests/lvmlockd/.libs
POLLS=300		# bounded waits: polls of 0.1 s
RETRIES=60		# bounded retries of lvm commands: 1 s apart
VIEW=/run/dlmd/configfs/dlm/cluster	# dlmd's default configfs_dir

if ! command -v lvmlockd >/dev/null 2>&1 || ! command -v lvmlockctl >/dev/null 2>&1; then
	"$top_srcdir/tests/setup-deps" >/dev/null 2>&1
	if ! command -v lvmlockd >/dev/null 2>&1; then
		echo "SKIP: lvm2-lockd (lvmlockd) is not installed and cannot be"
		exit 77
	fi
fi
for t in vgcreate lvmlockctl losetup unshare; do
	command -v $t >/dev/null 2>&1 || { echo "FAIL: $t is missing" >&2; exit 1; }
done
[ -x "$CONFIGFS_RUN" ] || { echo "FAIL: no $CONFIGFS_RUN (make)" >&2; exit 1; }
[ -r "$LIBDIR/libdlm_lt.so.3" ] || { echo "FAIL: no $LIBDIR/libdlm_lt.so.3 (make check builds it)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/dlml.XXXXXX") || exit 1
rc=0
pids=
loop=

# The ASan runtime, when the library was built with it (clang links the
# runtime into executables only; lvmlockd is not one of ours), then the
# device-mapper stand-in (tests/fake-dm.c).
preload=
if nm -D --undefined-only "$LIBDIR/libdlm_lt.so.3" 2>/dev/null | grep -q '__asan_init'; then
	for rt in "libclang_rt.asan-$(uname -m).so" libasan.so; do
		p=$(${CC:-cc} -print-file-name="$rt" 2>/dev/null)
		if [ -f "$p" ]; then
			preload=$p
			break
		fi
	done
	[ -n "$preload" ] || { echo "FAIL: the library needs the ASan runtime and ${CC:-cc} names none" >&2; exit 1; }
fi
[ -r "$LIBDIR/fake-dm.so" ] || { echo "FAIL: no $LIBDIR/fake-dm.so (make check builds it)" >&2; exit 1; }
preload="${preload:+$preload:}$LIBDIR/fake-dm.so"

. "$top_srcdir/tests/cluster-test-lib.sh"

# After the cluster's teardown the loop device is detached (by its name,
# only if it still has our image behind it).
detach_loop() {
	if [ -n "$loop" ] && losetup "$loop" 2>/dev/null | grep -qF "$dir/disk.img"; then
		losetup -d "$loop" || fail "cannot detach $loop"
	fi
}
after_down=detach_loop
logs_first="lvmlockd: nK/lvmlockd.out, lvm: lvm.log"

# lvm K CMD...: an LVM command on node K with its own lvm.conf; its
# output goes to lvm.log (and to $dir/last.out).
on_lvm() {
	lk=$1
	shift
	echo "--- n$lk: $* ($(date +%T.%N))" >>"$dir/lvm.log"
	"$CLUSTER" exec "$dir" "$lk" env LVM_SYSTEM_DIR="$dir/n$lk/lvm" \
		LVM_SUPPRESS_FD_WARNINGS=1 "$@" >"$dir/last.out" 2>&1
	lrv=$?
	cat "$dir/last.out" >>"$dir/lvm.log"
	echo "--- exit $lrv" >>"$dir/lvm.log"
	return $lrv
}

# lvm_retry K WHAT CMD...: until CMD succeeds on node K (bounded).
lvm_retry() {
	rk=$1
	rwhat=$2
	shift 2
	ri=0
	until on_lvm "$rk" "$@"; do
		ri=$((ri + 1))
		if [ $ri -ge $RETRIES ]; then
			fail "$rwhat: $(tail -n 3 "$dir/last.out" | tr '\n' ' ')"
			return 1
		fi
		sleep 1
	done
}

# start_lvmlockd K: node K's lvmlockd -A 1, as the drop-in starts it
start_lvmlockd() {
	sk=$1
	on "$sk" rm -f /run/lvm/lvmlockd.socket /run/lvmlockd.pid
	echo "=== lvmlockd start $(date +%T.%N)" >>"$dir/n$sk/lvmlockd.out"
	"$CLUSTER" exec "$dir" "$sk" env -u DLMD_SOCKET \
		LD_LIBRARY_PATH="$LIBDIR" LD_PRELOAD="$preload" \
		FAKE_DM_TABLE="$dir/n$sk/dm-table" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$CONFIGFS_RUN" lvmlockd -D -A 1 >>"$dir/n$sk/lvmlockd.out" 2>&1 &
	eval "lvmlockd_$sk=$!"
	pids="$pids $!"
	poll "$WAIT_S" lvmlockd_up "$sk" "$!" && lvmlockd_up "$sk" ||
		{ fail "node $sk: lvmlockd did not start: $(tail -n 5 "$dir/n$sk/lvmlockd.out")"; return 1; }
}

# lvmlockd_up K [PID]: node K's lvmlockd has its socket (or PID is gone)
lvmlockd_up() {
	on "$1" test -S /run/lvm/lvmlockd.socket ||
		{ [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; }
}

kill_lvmlockd() { # K: SIGKILL node K's lvmlockd, wait until gone
	eval "kp=\$lvmlockd_$1"
	kill_client "$kp"
	wait "$kp" 2>/dev/null
}

# dm_active K on|off: what node K's device-mapper stand-in lists as
# active: vg1/lv1 after an activation there, nothing after deactivation
# (lvmlockd -A 1 adopts the locks of active LVs only).
dm_active() {
	if [ "$2" = on ]; then
		# (stdout only: lvm warns on stderr that activation is off)
		da_ids=$("$CLUSTER" exec "$dir" "$1" env LVM_SYSTEM_DIR="$dir/n$1/lvm" \
			LVM_SUPPRESS_FD_WARNINGS=1 lvs --noheadings -o vg_uuid,lv_uuid \
			vg1/lv1 2>/dev/null) || fail "node $1: lvs uuids"
		# shellcheck disable=SC2046,SC2086 # two words: the uuids
		set -- "$1" $(echo $da_ids | sed 's/-//g')
		echo "vg1-lv1 LVM-$2$3" >"$dir/n$1/dm-table"
	else
		: >"$dir/n$1/dm-table"
	fi
}

# view_nodes K LS: the node ids under node K's view of lockspace LS
view_nodes() {
	on "$1" ls "$VIEW/spaces/$2/nodes" 2>/dev/null | sort -n | tr '\n' ' '
}

view_is() { # K LS "IDS ": node K's view of LS has nodes IDS
	[ "$(view_nodes "$1" "$2")" = "$3" ]
}

wait_view() { # K LS "IDS " WHAT
	poll "$WAIT_S" view_is "$1" "$2" "$3" ||
		{ fail "$4: node $1's view of $2 has nodes '$(view_nodes "$1" "$2")', want '$3'"; return 1; }
}

# comms_ok K: node K's comms/, read through dlmd-configfs at
# /sys/kernel/config as lvmlockd reads it (lvm 2.03.17 and later find
# their node id there): nodes 1 2 3, each with nodeid, local (1 for K
# only), addr and the node's address in addr_list.
comms_ok() {
	on "$1" "$CONFIGFS_RUN" sh -c '
		c=/sys/kernel/config/dlm/cluster/comms
		[ "$(ls "$c" | sort -n | tr "\n" " ")" = "1 2 3 " ] || exit 1
		for j in 1 2 3; do
			[ "$(cat "$c/$j/nodeid")" = "$j" ] || exit 1
			l=0
			[ "$j" = "$0" ] && l=1
			[ "$(cat "$c/$j/local")" = "$l" ] || exit 1
			[ -f "$c/$j/addr" ] || exit 1
			grep -qx "AF_INET.10.213.77.$j" "$c/$j/addr_list" || exit 1
		done' "$1"
}

if ! "$CLUSTER" up 3 "$dir"; then
	echo "FAIL: cannot bring up the 3-node cluster" >&2
	rc=1
	exit 1
fi
truncate -s 64M "$dir/disk.img" || { fail "truncate"; exit 1; }
loop=$(losetup -f --show "$dir/disk.img") || { fail "losetup"; loop=; exit 1; }
echo "loop device $loop"
for k in 1 2 3; do
	mkdir -p "$dir/n$k/lvm"
	cat >"$dir/n$k/lvm/lvm.conf" <<EOF
devices {
	filter = [ "a|^$loop\$|", "r|.*|" ]
	global_filter = [ "a|^$loop\$|", "r|.*|" ]
	scan = [ "/dev" ]
	use_devicesfile = 0
	obtain_device_list_from_udev = 0
	external_device_info_source = "none"
	md_component_detection = 0
	multipath_component_detection = 0
	fw_raid_component_detection = 0
}
global {
	use_lvmlockd = 1
	activation = 0
	event_activation = 0
	use_lvmpolld = 0
	system_id_source = "none"
}
activation {
	udev_sync = 0
	udev_rules = 0
	monitoring = 0
}
backup {
	backup = 0
	archive = 0
}
EOF
	on $k sh -c "mkdir -p /run/dlmd /run/lvm && ln -sf '$dir/n$k/dlmd.sock' /run/dlmd/dlmd.sock" ||
		fail "node $k: cannot link the default socket path"
	on $k test -r "$VIEW/cluster_name" || fail "node $k: dlmd wrote no view in $VIEW"
done
for k in 1 2 3; do
	poll "$WAIT_S" comms_ok $k ||
		fail "node $k: comms/ is not nodes 1 2 3 with nodeid, local, addr, addr_list"
done
for k in 1 2 3; do
	start_lvmlockd $k || exit 1
done

echo "== 1. vgcreate --shared, --lock-start on every node"
on_lvm 1 pvcreate "$loop" || fail "pvcreate: $(cat "$dir/last.out")"
on_lvm 1 vgcreate --shared vg1 "$loop" || fail "vgcreate --shared: $(cat "$dir/last.out")"
on_lvm 1 vgs -o vg_name,vg_lock_type,vg_lock_args --noheadings vg1 || fail "vgs"
grep -q "vg1 *dlm *1.0.0:dlmtest" "$dir/last.out" ||
	fail "vg1 is not a dlm VG of cluster dlmtest: $(cat "$dir/last.out")"
for k in 1 2 3; do
	on_lvm $k vgchange --lock-start vg1 || fail "node $k: --lock-start: $(cat "$dir/last.out")"
done
wait_view 1 lvm_vg1 "1 2 3 " "lock-start on three nodes"
wait_view 1 lvm_global "1 2 3 " "the global lockspace on three nodes"

echo "== 2. lvcreate; exclusive activation on node 1, refused on node 2"
on_lvm 1 lvcreate -an -n lv1 -L 8M vg1 || fail "lvcreate: $(cat "$dir/last.out")"
on_lvm 1 lvchange -aey vg1/lv1 || fail "node 1: lvchange -aey: $(cat "$dir/last.out")"
dm_active 1 on
if on_lvm 2 lvchange -aey vg1/lv1; then
	fail "node 2 activated lv1 exclusively while node 1 has it"
fi
grep -q "locked by other host" "$dir/last.out" ||
	fail "node 2's refusal does not say why: $(cat "$dir/last.out")"

echo "== 3. node 1's lvmlockd killed holding lv1's EX, restarted with -A 1"
kill_lvmlockd 1
on 1 "$DLMCTL" ls | grep -q "^name lvm_vg1 .* orphans [1-9]" ||
	fail "no orphan left in lvm_vg1 on node 1: $(on 1 "$DLMCTL" ls)"
if on_lvm 2 lvchange -aey vg1/lv1; then
	fail "node 2 activated lv1 while node 1's orphaned lock holds it"
fi
start_lvmlockd 1 || exit 1
lv_adopted() { # node 1's lvmlockd holds lv1's lock EX
	on 1 lvmlockctl -i 2>/dev/null | grep -q "^LK LV ex"
}
poll "$WAIT_S" lv_adopted ||
	fail "lvmlockd -A 1 did not adopt lv1's lock: $(on 1 lvmlockctl -i 2>&1 | tr '\n' ' ')"
grep -q "adopt_dlm" "$dir/n1/lvmlockd.out" || fail "lvmlockd's log shows no adoption"
if on_lvm 2 lvchange -aey vg1/lv1; then
	fail "node 2 activated lv1 while node 1's adopted lock holds it"
fi
on_lvm 1 lvchange -an vg1/lv1 || fail "node 1 cannot release the adopted lock: $(cat "$dir/last.out")"
dm_active 1 off
on_lvm 2 lvchange -aey vg1/lv1 || fail "node 2: lvchange -aey after node 1 released: $(cat "$dir/last.out")"

echo "== 4. node 2 (holding lv1) killed; node 3 activates after fencing"
kill_lvmlockd 2
"$CLUSTER" kill "$dir" 2
lvm_retry 3 "node 3: lvchange -aey after node 2 failed" lvchange -aey vg1/lv1
grep -q "fence node 2" "$dir/fence.log" 2>/dev/null || fail "node 2 was not fenced"
wait_view 1 lvm_vg1 "1 3 " "node 2 gone from the lockspace"
on 1 test -d "$VIEW/comms/2" && fail "node 2 still in node 1's comms/"

echo "== 5. vgremove counts the lockspace's hosts"
on_lvm 3 lvchange -an vg1/lv1 || fail "node 3: lvchange -an: $(cat "$dir/last.out")"
if on_lvm 3 vgremove -y vg1; then
	fail "vgremove on node 3 while node 1 has the lockspace started"
fi
grep -q "not stopped on other hosts" "$dir/last.out" ||
	fail "vgremove's refusal does not say why: $(cat "$dir/last.out")"
on_lvm 1 vgchange --lock-stop vg1 || fail "node 1: --lock-stop: $(cat "$dir/last.out")"
wait_view 3 lvm_vg1 "3 " "node 1 stopped the lockspace"
on_lvm 3 vgremove -y vg1 || fail "vgremove: $(cat "$dir/last.out")"
poll "$WAIT_S" not on 3 test -d "$VIEW/spaces/lvm_vg1" ||
	fail "lvm_vg1 stays in node 3's view after vgremove"

for k in 1 2 3; do
	if grep -q 'ERROR: AddressSanitizer\|runtime error:' "$dir/n$k/lvmlockd.out"; then
		fail "sanitizer report in node $k's lvmlockd (libdlm): $(grep -A 5 'ERROR: \|runtime error:' "$dir/n$k/lvmlockd.out" | head -n 10)"
	fi
done
[ $rc -eq 0 ] && echo "test-lvmlockd: all checks passed"
exit $rc
