#!/bin/sh
# tests/test-metrics.sh - dlmd's metrics (plugin/metrics.c) on one node.
#
# A one-node dlmd (membership none: no corosync, no network) with its
# sockets in a temporary directory:
#   1. without metrics_listen nothing listens (no socket of dlmd's in
#      ss -l), "dlmctl status" says "metrics none", and "dlmctl metrics"
#      answers all the same;
#   2. bad metrics_listen values stop dlmd with FILE:LINE;
#   3. with metrics_listen = 127.0.0.1:PORT, tests/metrics-client does N
#      lock/convert/unlock rounds and leaves one request waiting behind a
#      holder that got a blocking AST: the scrape (curl) shows it waiting,
#      then, after the cancel, the counters equal what was done: locks,
#      converts, unlocks, cancels, grants, blocking ASTs; the grant
#      latency histogram's buckets are cumulative, end with le="+Inf",
#      and its count is the grants; every family has # HELP and # TYPE;
#   4. "dlmctl metrics" and "dlmctl status --json" (which parses) carry
#      the same series with the same values as the scrape;
#   5. a client killed while its request waits leaves nothing waiting;
#   5b. a deadlock broken (issue 17): a client (tests/cluster-client
#      deadlock) holds EX and waits in dlm_ls_lock_wait for EX on the
#      same resource, a cycle of one waiter; after deadlock_secs its
#      request ends with EDEADLK and dlmd_deadlocks_total of its
#      lockspace is 1 (0 before it, and for the other lockspace);
#   6. garbage: 404, 405, 400, 505, 431 for what deserves them, a client
#      that never finishes its request is dropped after the timeout, and
#      more than the connection limit are refused at once; dlmd answers
#      GET /metrics afterwards;
#   7. metrics_listen = a unix socket path works the same (curl
#      --unix-socket).
# Fails, never skips; every wait is bounded.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$top_srcdir/tests/test-lib.sh"
MCLIENT=$top_builddir/tests/metrics-client
N=20			# lock/convert/unlock rounds
POLLS=100		# waits: polls of 0.1 s

rc=0
pid=
cpid=

# Debian's python3 first: a version manager's shim in PATH costs ~0.5 s a call
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
for tool in curl "$PYTHON" ss; do
	command -v "$tool" >/dev/null || { echo "FAIL: needs $tool (tests/setup-deps)" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/dlmd-metrics.XXXXXX") || exit 1

cleanup() {
	[ -n "$cpid" ] && kill -KILL "$cpid" 2>/dev/null
	exec 3>&- 2>/dev/null
	stop_dlmd || fail "dlmd did not stop on SIGTERM"
	check_sanitizer "$dir"/*.log
	[ $rc -eq 0 ] && echo "test-metrics: ok"
	finish
}
trap cleanup EXIT
trap 'rc=1; exit 1' INT TERM

# conf FILE [LINE]: the test's dlm.conf (write_conf), logging debug; LINE
# is its line 8
conf() {
	cf=$1
	shift
	write_conf "$cf" "log_level = debug" "$@"
}

ctl() {
	"$DLMCTL" -s "$dir/dlmd-ctl.sock" "$@"
}

# The checks in Python: parsing the text format, comparing with JSON, and
# talking raw HTTP.
cat >"$dir/check.py" <<'EOF'
import json, re, socket, sys, time

def parse_prom(text):
    """{(name, frozenset(labels)): value}, with HELP/TYPE checks."""
    series, helps, types, order = {}, {}, {}, []
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name, help_ = line[7:].split(' ', 1)
            helps[name] = help_
            continue
        if line.startswith('# TYPE '):
            name, type_ = line[7:].split(' ')
            types[name] = type_
            order.append(name)
            continue
        m = line_re.match(line)
        if not m:
            sys.exit('malformed line: %r' % line)
        name, labels = m.group(1), m.group(3) or ''
        fam = re.sub(r'_(bucket|sum|count)$', '', name) \
            if re.sub(r'_(bucket|sum|count)$', '', name) in types and \
            types[re.sub(r'_(bucket|sum|count)$', '', name)] == 'histogram' else name
        if fam not in types or fam not in helps:
            sys.exit('%s has no # HELP or # TYPE before it' % name)
        if order[-1] != fam:
            sys.exit('%s is not under its family %s' % (name, fam))
        lbl = frozenset(label_re.findall(labels))
        key = (name, lbl)
        if key in series:
            sys.exit('series given twice: %r' % (key,))
        series[key] = float(m.group(4))
    for name, t in types.items():
        if not name.startswith('dlmd_'):
            sys.exit('%s: not prefixed dlmd_' % name)
        if t == 'counter' and not name.endswith('_total'):
            sys.exit('counter %s does not end in _total' % name)
    return series, types

def get(series, name, **labels):
    key = (name, frozenset(labels.items()))
    if key not in series:
        sys.exit('no series %s %r' % (name, labels))
    return series[key]

def expect(series, name, want, **labels):
    got = get(series, name, **labels)
    if got != want:
        sys.exit('%s %r = %s, want %s' % (name, labels, got, want))

def json_series(doc):
    out = {}
    for fam in doc['metrics']:
        for s in fam['samples']:
            out[(s['name'], frozenset(s['labels'].items()))] = float(s['value'])
    return out

def histogram(series, name, **labels):
    buckets = []
    for (n, lbl), v in series.items():
        d = dict(lbl)
        if n == name + '_bucket' and all(d.get(k) == x for k, x in labels.items()):
            buckets.append((float('inf') if d['le'] == '+Inf' else float(d['le']), v))
    buckets.sort()
    if not buckets or buckets[-1][0] != float('inf'):
        sys.exit('%s: no le="+Inf" bucket' % name)
    for (b1, v1), (b2, v2) in zip(buckets, buckets[1:]):
        if v2 < v1:
            sys.exit('%s: bucket le=%s (%s) < le=%s (%s): not cumulative'
                     % (name, b2, v2, b1, v1))
    count = get(series, name + '_count', **labels)
    if buckets[-1][1] != count:
        sys.exit('%s: +Inf bucket %s != count %s' % (name, buckets[-1][1], count))
    return count, get(series, name + '_sum', **labels)

def raw(port, data, shut=True, timeout=10):
    """Send data, read the answer to the end; its status line."""
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    got = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    return got.split(b'\r\n', 1)[0].decode('latin-1')

cmd = sys.argv[1]
if cmd == 'waiting':
    series, _ = parse_prom(open(sys.argv[2]).read())
    expect(series, 'dlmd_lock_waiting_requests', 1, lockspace='alpha')
    expect(series, 'dlmd_blocking_asts_total', 1, lockspace='alpha')
    expect(series, 'dlmd_lockspace_clients', 1, lockspace='alpha')
    expect(series, 'dlmd_clients', 1)
elif cmd == 'counts':
    n = int(sys.argv[3])
    series, types = parse_prom(open(sys.argv[2]).read())
    expect(series, 'dlmd_lock_operations_total', n + 2, lockspace='alpha', op='lock')
    expect(series, 'dlmd_lock_operations_total', n, lockspace='alpha', op='convert')
    expect(series, 'dlmd_lock_operations_total', n + 1, lockspace='alpha', op='unlock')
    expect(series, 'dlmd_lock_operations_total', 1, lockspace='alpha', op='cancel')
    expect(series, 'dlmd_lock_grants_total', 2 * n + 1, lockspace='alpha')
    expect(series, 'dlmd_lock_waiting_requests', 0, lockspace='alpha')
    expect(series, 'dlmd_blocking_asts_total', 1, lockspace='alpha')
    expect(series, 'dlmd_lockspace_locks', 0, lockspace='alpha')
    expect(series, 'dlmd_deadlocks_total', 0, lockspace='alpha')
    expect(series, 'dlmd_fence_forgiven_total', 0)
    expect(series, 'dlmd_fence_lied_total', 0)
    expect(series, 'dlmd_lockspace_state', 1, lockspace='alpha', state='running')
    expect(series, 'dlmd_lockspace_state', 0, lockspace='alpha', state='stopped')
    expect(series, 'dlmd_lockspaces', 1)
    expect(series, 'dlmd_clients', 0)
    expect(series, 'dlmd_build_info', 1, version=sys.argv[4], protocol=sys.argv[5])
    count, total = histogram(series, 'dlmd_lock_grant_latency_seconds', lockspace='alpha')
    if count != 2 * n + 1:
        sys.exit('grant latency count %s, want %s grants' % (count, 2 * n + 1))
    if not 0 < total < 10 * count:
        sys.exit('grant latency sum %s s for %s grants' % (total, count))
    if types.get('dlmd_lock_grant_latency_seconds') != 'histogram':
        sys.exit('grant latency is not a histogram')
elif cmd == 'same':
    # the scrape, dlmctl metrics and status --json: the same series, the
    # same values (but the uptime, read at another moment)
    a, _ = parse_prom(open(sys.argv[2]).read())
    b, _ = parse_prom(open(sys.argv[3]).read())
    c = json_series(json.load(open(sys.argv[4])))
    for other, what in ((b, 'dlmctl metrics'), (c, 'status --json')):
        if set(a) != set(other):
            sys.exit('%s has other series than the scrape: %r' %
                     (what, set(a) ^ set(other)))
        for k in a:
            if k[0] != 'dlmd_uptime_seconds' and a[k] != other[k]:
                sys.exit('%s: %r = %s, the scrape says %s' % (what, k, other[k], a[k]))
elif cmd == 'value':
    series, _ = parse_prom(open(sys.argv[2]).read())
    labels = dict(kv.split('=', 1) for kv in sys.argv[4:])
    print('%g' % get(series, sys.argv[3], **labels))
elif cmd == 'garbage':
    port = int(sys.argv[2])
    # a client that never ends its request: dropped after the timeout
    slow = socket.create_connection(('127.0.0.1', port), timeout=15)
    slow.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
    t0 = time.monotonic()
    cases = [
        (b'GET / HTTP/1.0\r\n\r\n', '404'),
        (b'GET /metricsfoo HTTP/1.1\r\nHost: x\r\n\r\n', '404'),
        (b'POST /metrics HTTP/1.0\r\nContent-Length: 2\r\n\r\nab', '405'),
        (b'DELETE /metrics HTTP/1.1\r\n\r\n', '405'),
        (b'garbage\r\n\r\n', '400'),
        (b'GET /metrics\r\n\r\n', '400'),
        (b'GET  /metrics HTTP/1.0\r\n\r\n', '400'),
        (b'\x00\x01\x02\xff\n', '400'),
        (b'get /metrics HTTP/1.0\r\n\r\n', '400'),
        (b'GET /metrics HTTP/2.0\r\n\r\n', '505'),
        (b'GET /metrics HTTP/1.0\r\nX: ' + b'a' * 5000 + b'\r\n\r\n', '431'),
        (b'A' * 10000, '431'),
        (bytes(range(256)) * 8, '400'),
        (b'GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n', '200'),
        (b'GET /metrics HTTP/1.0\n\n', '200'),
    ]
    for data, want in cases:
        status = raw(port, data)
        if status.split(' ')[:2] != ['HTTP/1.0', want]:
            sys.exit('%r answered %r, want %s' % (data[:40], status, want))
    # a request that ends before its head: no answer, closed
    if raw(port, b'GET /metrics HTTP/1.0\r\n') != '':
        sys.exit('an unfinished request was answered')
    # the slow one is closed by dlmd within its timeout (5 s)
    if slow.recv(100) != b'':
        sys.exit('the slow client got an answer')
    took = time.monotonic() - t0
    if not 3 < took < 12:
        sys.exit('the slow client was dropped after %.1f s, want ~5' % took)
    slow.close()
    # the connection limit: 16 idle ones held (a local user keeping the
    # scraper out), the 17th is served and the oldest idle one closed
    # (it was the 17th that was closed, until any user could hold them)
    idle = []
    for i in range(16):
        s = socket.create_connection(('127.0.0.1', port), timeout=5)
        s.sendall(b'GET')
        idle.append(s)
        time.sleep(0.02)
    time.sleep(0.3)
    status = raw(port, b'GET /metrics HTTP/1.0\r\n\r\n')
    if status != 'HTTP/1.0 200 OK':
        sys.exit('with 16 idle connections held: %r' % status)
    # closed before the 17th was accepted: its end is there already
    try:
        if idle[0].recv(100, socket.MSG_DONTWAIT) != b'':
            sys.exit('the oldest idle connection was answered, not closed')
    except BlockingIOError:
        sys.exit('the oldest idle connection is still open')
    for s in idle:
        s.close()
    time.sleep(0.3)
    status = raw(port, b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
    if status != 'HTTP/1.0 200 OK':
        sys.exit('after the garbage: %r' % status)
elif cmd == 'freeport':
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    print(s.getsockname()[1])
    s.close()
else:
    sys.exit('check.py: unknown command ' + cmd)
EOF
check() {
	"$PYTHON" "$dir/check.py" "$@"
}

VERSION=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
PROTO=$("$DLMCTL" --version | sed -n 's/^client protocol //p')

# --- 1. off by default ------------------------------------------------
conf "$dir/off.conf"
start_dlmd "$dir/off.conf" "$dir/dlmd-off.log"
# TCP, UDP and unix listeners of dlmd's: only its two sockets in $dir
sockets=$( (ss -ltnpH; ss -lunpH; ss -lxpH) 2>/dev/null | grep "pid=$pid," |
	awk '{print $5}' | grep -v "^$dir/")
[ -z "$sockets" ] || fail "without metrics_listen dlmd listens on: $sockets"
[ "$( (ss -lxpH) 2>/dev/null | grep -c "pid=$pid,")" = 2 ] ||
	fail "dlmd's unix listeners: $(ss -lxpH 2>/dev/null | grep "pid=$pid,")"
ctl status >"$dir/status-off.out" 2>&1 || fail "dlmctl status: $(cat "$dir/status-off.out")"
grep -qx "metrics none" "$dir/status-off.out" ||
	fail "dlmctl status does not say 'metrics none': $(cat "$dir/status-off.out")"
ctl metrics >"$dir/metrics-off.prom" 2>&1 || fail "dlmctl metrics with the endpoint off"
check value "$dir/metrics-off.prom" dlmd_lockspaces >/dev/null ||
	fail "dlmctl metrics with the endpoint off: $(head -5 "$dir/metrics-off.prom")"
stop_dlmd || fail "dlmd did not stop on SIGTERM"

# --- 2. bad values ----------------------------------------------------
for bad in "localhost:9527" "127.0.0.1:0" "127.0.0.1:70000" "127.0.0.1" "[::1]" \
	   "::1:9527" "relative/path" "300.1.1.1:80"; do
	conf "$dir/bad.conf" "metrics_listen = $bad"
	"$DLMD" --foreground --config="$dir/bad.conf" >"$dir/bad.out" 2>&1
	st=$?
	[ $st -eq 1 ] || fail "metrics_listen = $bad: exit $st, want 1"
	grep -qF "$dir/bad.conf:8: bad value '$bad' for metrics_listen" "$dir/bad.out" ||
		fail "metrics_listen = $bad: $(cat "$dir/bad.out")"
done

# --- 3. counts --------------------------------------------------------
port=$(check freeport)
conf "$dir/on.conf" "metrics_listen = 127.0.0.1:$port"
start_dlmd "$dir/on.conf" "$dir/dlmd-on.log"
url=http://127.0.0.1:$port/metrics
ctl status | grep -qx "metrics 127.0.0.1:$port" || fail "status: $(ctl status | grep metrics)"
mkfifo "$dir/in"
DLMD_SOCKET=$dir/dlmd.sock "$MCLIENT" alpha $N <"$dir/in" >"$dir/client.out" 2>&1 &
cpid=$!
exec 3>"$dir/in"
i=0
until grep -qx waiting "$dir/client.out"; do
	i=$((i + 1))
	if [ $i -gt $POLLS ] || ! kill -0 $cpid 2>/dev/null; then
		fail "metrics-client: $(cat "$dir/client.out")"
		exit 1
	fi
	sleep 0.1
done
curl -sSf "$url" >"$dir/waiting.prom" 2>&1 || fail "scrape: $(cat "$dir/waiting.prom")"
check waiting "$dir/waiting.prom" || fail "while a request waits (waiting.prom)"
echo cancel >&3
exec 3>&-
wait $cpid
st=$?
cpid=
[ $st -eq 0 ] && grep -qx done "$dir/client.out" ||
	fail "metrics-client exit $st: $(cat "$dir/client.out")"
curl -sSf -D "$dir/headers" "$url" >"$dir/scrape.prom" 2>&1 || fail "scrape: $(cat "$dir/scrape.prom")"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$dir/headers" ||
	fail "Content-Type: $(cat "$dir/headers")"
check counts "$dir/scrape.prom" $N "$VERSION" "$PROTO" || fail "counts (scrape.prom)"

# --- 4. the same numbers everywhere ----------------------------------
ctl metrics >"$dir/ctl.prom" || fail "dlmctl metrics"
ctl status --json >"$dir/status.json" || fail "dlmctl status --json"
"$PYTHON" -m json.tool "$dir/status.json" >/dev/null || fail "status --json does not parse"
check same "$dir/scrape.prom" "$dir/ctl.prom" "$dir/status.json" || fail "scrape, dlmctl metrics and status --json differ"

# --- 5. a waiting request whose client dies ---------------------------
echo exit | DLMD_SOCKET=$dir/dlmd.sock "$MCLIENT" beta 0 >"$dir/client2.out" 2>&1 ||
	fail "metrics-client beta: $(cat "$dir/client2.out")"
i=0
while :; do
	curl -sSf "$url" >"$dir/beta.prom" 2>&1
	[ "$(check value "$dir/beta.prom" dlmd_lockspace_clients lockspace=beta)" = 0 ] && break
	i=$((i + 1))
	[ $i -gt $POLLS ] && { fail "beta's client never went away"; break; }
	sleep 0.1
done
[ "$(check value "$dir/beta.prom" dlmd_lock_waiting_requests lockspace=beta)" = 0 ] ||
	fail "a dead client's request still counted waiting: $(grep 'waiting.*beta' "$dir/beta.prom")"
[ "$(check value "$dir/beta.prom" dlmd_lock_grants_total lockspace=beta)" = 1 ] ||
	fail "beta grants: $(grep 'grants.*beta' "$dir/beta.prom")"

# --- 5b. a deadlock broken --------------------------------------------
# deadlock_secs is 5: the victim's answer comes after one period and a scan
DLMD_SOCKET=$dir/dlmd.sock timeout 30 "$CLIENT" deadlock gamma dl-self dl-self \
	"$dir/on.conf" >"$dir/deadlock.out" 2>&1 ||
	fail "cluster-client deadlock: $(cat "$dir/deadlock.out")"
grep -q '^deadlock [0-9a-f]*$' "$dir/deadlock.out" ||
	fail "no EDEADLK for a thread waiting for itself: $(cat "$dir/deadlock.out")"
curl -sSf "$url" >"$dir/deadlock.prom" 2>&1 || fail "scrape: $(cat "$dir/deadlock.prom")"
[ "$(check value "$dir/deadlock.prom" dlmd_deadlocks_total lockspace=gamma)" = 1 ] ||
	fail "gamma's deadlocks: $(grep deadlocks "$dir/deadlock.prom")"
[ "$(check value "$dir/deadlock.prom" dlmd_deadlocks_total lockspace=alpha)" = 0 ] ||
	fail "alpha's deadlocks: $(grep deadlocks "$dir/deadlock.prom")"

# --- 6. garbage -------------------------------------------------------
check garbage $port || fail "garbage"
kill -0 "$pid" 2>/dev/null || fail "dlmd died"
ctl status >/dev/null || fail "dlmctl status after the garbage"
stop_dlmd || fail "dlmd did not stop on SIGTERM"

# --- 7. a unix socket ------------------------------------------------
conf "$dir/unix.conf" "metrics_listen = $dir/metrics.sock"
start_dlmd "$dir/unix.conf" "$dir/dlmd-unix.log"
curl -sSf --unix-socket "$dir/metrics.sock" http://localhost/metrics >"$dir/unix.prom" 2>&1 ||
	fail "scrape over $dir/metrics.sock: $(cat "$dir/unix.prom")"
check value "$dir/unix.prom" dlmd_lockspaces >/dev/null || fail "unix socket scrape"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$dir/metrics.sock" http://localhost/)
[ "$code" = 404 ] || fail "GET / over the unix socket: $code, want 404"
stop_dlmd || fail "dlmd did not stop on SIGTERM"
[ -e "$dir/metrics.sock" ] && fail "dlmd left $dir/metrics.sock behind"
exit $rc
