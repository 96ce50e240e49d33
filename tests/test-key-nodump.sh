#!/bin/sh
# tests/test-key-nodump.sh - no key of dlmd's would be in a core dump.
#
# A core dump of dlmd (a crash, gcore, systemd-coredump) is a file that
# administrators and bug reports copy around; the cluster key, or a key
# derived from it, in one lets its reader join the lock traffic as any
# node or decrypt what was recorded of it.  So every key lives in memory
# marked MADV_DONTDUMP (lowcomms/secret.c), which no core dump contains.
#
# tests/key-nodump holds each kind of key, made by the daemon's own code
# from a key file of random bytes: the cluster key (lowcomms'
# BLAKE2b of the file), lowcomms' two derived keys (handshake MAC, session
# derivation), the CPG seal key (plugin/cpgmsg.c), and the session keys of
# one handshake per record cipher this machine runs (inside OpenSSL's and
# libgcrypt's cipher contexts).  This test derives every one of those
# itself (tests/keyscan.py, Python's BLAKE2b: the same constructions as
# auth.c and cpgmsg.c), reads the process's memory through /proc/PID/mem mapping by
# mapping, and checks:
#   - each key is in some mapping marked "dd" in /proc/PID/smaps (the
#     probe is not blind: the key is held, and found where it should be),
#     but the cluster key, which nothing keeps once it derived the others
#     (finding those shows this test derived it right);
#   - no key is in any other mapping (those a core dump would hold);
#   - nor any piece of the key file's bytes, anywhere.
# It reads the process twice: first with the cluster key just loaded the
# way plugin/comms.c loads it (into secret memory, read(2) straight from
# the file), before lc_new() derives from it, where the cluster key must
# be found, in "dd" mappings only (before, comms.c loaded it into its
# struct lc_config on the stack, and lc_new() copied that struct into the
# heap: both copies were wiped after a moment, but a dump taken in that
# moment held the key); then with every key made.
# Needs to read another process's memory (root, or ptrace allowed).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"

# the derivations and the reading: tests/keyscan.py (no .pyc in the tree)
export KEYSCAN_DIR="$top_srcdir/tests" PYTHONDONTWRITEBYTECODE=1

rc=0
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-nodump.XXXXXX") || exit 1
trap 'finish "key-nodump: out, err"' EXIT
trap 'rc=1; exit 1' INT TERM

( umask 077; head -c 256 /dev/urandom >"$dir/authkey" ) ||
	{ fail "cannot write a key file"; exit 1; }

cat >"$dir/scan.py" <<'EOF'
import os, subprocess, sys

sys.path.insert(0, os.environ['KEYSCAN_DIR'])
from keyscan import derive, judge, pieces, scan, session

keyfile, prog = sys.argv[1], sys.argv[2:]
material = open(keyfile, 'rb').read()
keys = derive(material)
cluster = keys['cluster key']

p = subprocess.Popen(prog + [keyfile], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
pid = None
sessions = 0
bad = 0
for _ in range(100):
    line = p.stdout.readline()	# bounded by the timeout around us
    if not line:
        sys.exit('key-nodump ended early (exit %s)' % p.wait())
    print('key-nodump: ' + line.rstrip())
    w = line.split()
    if w[0] == 'loaded':
        # The cluster key loaded as comms.c loads it, not yet given to
        # lowcomms: held (so found), in secret memory only; and no piece
        # of the file's bytes left anywhere but there.
        if int(w[1]) != p.pid:
            sys.exit('key-nodump: loaded pid %s (want %d)' % (w[1], p.pid))
        print('== the cluster key loaded, before lc_new')
        at_load = {'cluster key': cluster}
        at_load.update(pieces(material))
        bad |= judge(scan(p.pid, at_load), ['cluster key'])
        p.stdin.write('go\n')
        p.stdin.flush()
    elif w[0] == 'session':
        i2a, a2i = session(keys, w[2], w[3])
        keys[w[1] + ' session key, initiator to acceptor'] = i2a
        keys[w[1] + ' session key, acceptor to initiator'] = a2i
        sessions += 1
    elif w[0] == 'ready':
        pid = int(w[1])
        break
if pid != p.pid or not sessions:
    sys.exit('key-nodump: pid %s (want %d), %d handshakes' %
             (pid, p.pid, sessions))

print('== every key made, the cluster key gone')
keys.update(pieces(material))
found = scan(pid, keys)
p.stdin.close()
if p.wait(timeout=120) != 0:
    print('FAIL: key-nodump exited %d' % p.returncode)
    sys.exit(1)
# the cluster key and the file's bytes: not kept (lowcomms and cluster.c
# keep only derived keys); finding the others shows the test derived it
bad |= judge(found, [k for k in keys
                     if k != 'cluster key' and not k.startswith('key file')])
sys.exit(bad)
EOF
timeout 300 python3 "$dir/scan.py" "$dir/authkey" \
	"$top_builddir/tests/key-nodump" >"$dir/out" 2>"$dir/err"
st=$?
cat "$dir/out"
[ -s "$dir/err" ] && cat "$dir/err" >&2
[ "$st" -eq 0 ] || fail "a key of dlmd's would be in a core dump (exit $st)"

# dlmd and this test's program bind every symbol at load time (configure:
# -z now): the dynamic linker's lazy-binding resolver would save the
# vector registers, a key just made among them, on the stack.
if command -v readelf >/dev/null; then
	for prog in "$top_builddir/plugin/dlmd" "$top_builddir/tests/key-nodump"; do
		readelf -d "$prog" | grep -Eq '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' ||
			fail "$prog binds lazily (not linked with -z now)"
	done
else
	echo "not checked that dlmd binds at load time: no readelf"
fi

# A full secure heap is said: key-nodump -f keys AES-256-GCM contexts, as
# connections do, until OpenSSL's secure heap is full and 16 more: one log
# line (lc_secret_on_full(), which dlmd logs), however many keys then went
# to ordinary memory, and the status says it has been full.  The heap
# holds keys only (OpenSSL's one-time setup is done outside it): here
# about 820 contexts fit its 1 MiB, where 532 did while the first one
# pulled that setup in; at least 640 (320 connections) are asked.
timeout 120 "$top_builddir/tests/key-nodump" -f "$dir/authkey" </dev/null \
	>"$dir/out-fill" 2>"$dir/err-fill" ||
	fail "key-nodump -f failed: $(cat "$dir/err-fill")"
grep -v '^session ' "$dir/out-fill"
nlog=$(grep -c "^log .*secure heap is full: the session keys of new connections are now in ordinary memory" "$dir/out-fill")
[ "$nlog" -eq 1 ] ||
	fail "a full secure heap was said $nlog times (want once)"
set -- $(sed -n 's/^fill \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$dir/out-fill") x x
case "$1$2" in
*[!0-9]*|'') fail "no 'fill CONTEXTS FALLBACKS' line" ;;
*)	[ "$2" -ge 2 ] ||
		fail "only $2 keys went to ordinary memory (want 2 or more: the log line once for all)"
	[ "$1" -ge 640 ] ||
		fail "only $1 cipher contexts fit the secure heap (want 640 or more: does OpenSSL's setup fill it?)" ;;
esac
grep -q '^status .*which has been full' "$dir/out-fill" ||
	fail "the status does not say the secure heap has been full"

# The same where nothing may be locked in memory (RLIMIT_MEMLOCK 0, not
# root): the keys are still kept out, and the process goes on.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 &&
	command -v setpriv >/dev/null && command -v prlimit >/dev/null; then
	# nobody may not reach the build tree: a copy of the program here
	cp "$dir/authkey" "$dir/authkey-nobody" &&
		chown nobody "$dir/authkey-nobody" && chmod 755 "$dir" &&
		cp "$top_builddir/tests/key-nodump" "$dir/key-nodump" ||
		{ fail "cannot give nobody a key file and the program"; exit 1; }
	timeout 300 python3 "$dir/scan.py" "$dir/authkey-nobody" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		prlimit --memlock=0 "$dir/key-nodump" \
		>"$dir/out-nolock" 2>"$dir/err-nolock"
	st=$?
	cat "$dir/out-nolock"
	[ -s "$dir/err-nolock" ] && cat "$dir/err-nolock" >&2
	[ "$st" -eq 0 ] ||
		fail "without mlock, a key of dlmd's would be in a core dump (exit $st)"
	grep -q '^key-nodump: status .*not locked in memory' "$dir/out-nolock" ||
		fail "RLIMIT_MEMLOCK 0 did not show in the status (the probe is blind)"
else
	echo "not run without mlock: needs root, user nobody, setpriv, prlimit"
fi
