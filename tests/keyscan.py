"""tests/keyscan.py: dlmd's keys, made from a key file as dlmd makes
them, and a reading of a process's memory the way a core dump would take
it (tests/test-key-nodump.sh, tests/test-cluster-keys.sh).

  python3 keyscan.py PID KEYFILE
      reads process PID (a running dlmd that loaded KEYFILE): the cluster
      key, lowcomms' two derived keys, the CPG seal key and pieces of the
      key file; exit 1 if one of them is in a mapping a core dump holds
      (not marked "dd") or a derived key is nowhere (the probe is blind).
"""
import hashlib, re, struct, sys


def kdf(master, ident, context):
    # libsodium crypto_kdf_derive_from_key: BLAKE2b keyed with master,
    # salt = id (le64) and zeros, personal = context and zeros
    return hashlib.blake2b(b'', digest_size=32, key=master,
                           salt=struct.pack('<Q', ident) + bytes(8),
                           person=context + bytes(8)).digest()


def derive(material):
    """auth.c lc_key_derive, lc_keys_derive; cpgmsg.c dlmd_cm_key_derive"""
    cluster = hashlib.blake2b(material, digest_size=32, salt=bytes(16),
                              person=b'dlmd lowcomms v1').digest()
    return {'cluster key': cluster,
            'lowcomms MAC key': kdf(cluster, 1, b'dlmdlcv1'),
            'lowcomms session-derivation key': kdf(cluster, 2, b'dlmdlcv1'),
            'CPG seal key': kdf(cluster, 1, b'dlmdcpg1')}


def pieces(material):
    """Pieces of the key file itself: its bytes are the secret too."""
    return {'key file bytes, piece %d' % i: material[at:at + 32]
            for i, at in enumerate((0, len(material) // 2,
                                    len(material) - 32))}


def session(keys, init_hex, resp_hex):
    """auth.c derive_session: BLAKE2b-512 keyed with the session-derivation
    key over "session\\0" || INIT || RESP: (initiator's, acceptor's)"""
    out = hashlib.blake2b(b'session\0' + bytes.fromhex(init_hex) +
                          bytes.fromhex(resp_hex), digest_size=64,
                          key=keys['lowcomms session-derivation key']
                          ).digest()
    return out[:32], out[32:]


def scan(pid, keys):
    """{name: [mapping, ...]}: where each of keys is in pid's memory."""
    maps = []
    cur = None
    for line in open('/proc/%d/smaps' % pid):
        m = re.match(r'([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)',
                     line)
        if m:
            cur = {'lo': int(m.group(1), 16), 'hi': int(m.group(2), 16),
                   'perms': m.group(3), 'name': m.group(4), 'rss': 0,
                   'flags': []}
            maps.append(cur)
        elif line.startswith('Rss:'):
            cur['rss'] = int(line.split()[1])
        elif line.startswith('VmFlags:'):
            cur['flags'] = line.split()[1:]
    found = {k: [] for k in keys}
    unread = 0
    CHUNK = 1 << 24
    with open('/proc/%d/mem' % pid, 'rb', buffering=0) as mem:
        for mp in maps:
            # a core dump holds none of a "dd" mapping: one is read only
            # to find the keys there, and not if huge (ASan's shadow)
            if not mp['rss'] or ('dd' in mp['flags'] and
                                 mp['hi'] - mp['lo'] > 1 << 30):
                continue
            where = '%x-%x %s %s%s' % (mp['lo'], mp['hi'], mp['perms'],
                                        mp['name'] or '[anon]',
                                        ' (dd)' if 'dd' in mp['flags']
                                        else '')
            at = mp['lo']
            while at < mp['hi']:
                n = min(CHUNK + 64, mp['hi'] - at)
                try:
                    mem.seek(at)
                    data = mem.read(n)
                except OSError:
                    unread += 1
                    break
                for k, v in keys.items():
                    if v in data and where not in found[k]:
                        found[k].append(where)
                at += CHUNK
    print('mappings with pages: %d, unreadable: %d' %
          (sum(1 for mp in maps if mp['rss']), unread))
    return found


def judge(found, must):
    """1 if a key is outside "dd" mappings, or one of must is nowhere."""
    bad = 0
    for k, where in found.items():
        dumped = [w for w in where if not w.endswith('(dd)')]
        print('%s: found in %s' % (k, ', '.join(where) or 'no mapping'))
        if not where and k in must:
            print('FAIL: %s not found at all (the probe is blind)' % k)
            bad = 1
        elif dumped:
            print('FAIL: %s would be in a core dump (%s)' %
                  (k, ', '.join(dumped)))
            bad = 1
    return bad


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: keyscan.py PID KEYFILE')
    material = open(sys.argv[2], 'rb').read()
    keys = derive(material)
    keys.update(pieces(material))
    sys.exit(judge(scan(int(sys.argv[1]), keys),
                   ['lowcomms MAC key', 'lowcomms session-derivation key',
                    'CPG seal key']))
