/*
 * lowcomms/auth.c: who may join the lock traffic.  The cluster key, the
 * handshake that proves both ends hold it, and the sealed records every
 * frame then travels in.  All cryptography is libsodium's (key hashing,
 * handshake MACs, session keys, nonces), OpenSSL's (the records' AEADs,
 * through EVP) and libgcrypt's (AES-OCB records): nothing here is
 * hand-written.
 *
 * THE KEY.  A cluster shares one secret: by default corosync's authkey
 * (/etc/corosync/authkey), or a file named in dlm.conf.  dlmd never uses
 * those bytes as a key: lc_key_load() hashes the whole file with BLAKE2b
 * personalised "dlmd lowcomms v1" into a 32-byte cluster key, and
 * lc_keys_derive() derives from that, with crypto_kdf (BLAKE2b again) and
 * dlmd's own contexts, one key for handshake MACs and one for deriving
 * session keys.  So nothing dlmd sends or computes is a function of
 * corosync's key that corosync itself also computes.  A key file must be
 * a regular file of LC_KEYFILE_MIN..LC_KEYFILE_MAX bytes, owned by root or
 * by dlmd's own user, that no one but its owner may read or write (mode
 * 0600 or stricter): anyone who can read it can join the lock traffic as
 * any node, so a file others may read is refused, not merely warned
 * about.  Its path is walked from "/", one directory at a time, each
 * opened relative to the one checked before it (key_open()): no
 * component may be a symbolic link, and every directory on the way must
 * belong to root or to dlmd's user and be writable by no one else (a
 * sticky directory, as /tmp, only if what we open in it is root's or
 * ours, which the walk checks next).  Whoever may write to a directory
 * on the path can put a key of their own, or a link to one, in place of
 * the file; O_NOFOLLOW alone checks only the last component.
 *
 * THE HANDSHAKE.  Before lowcomms' own HELLO (lowcomms.c), on every
 * connection, in the clear:
 *
 *   initiator I                                acceptor A
 *   INIT  suites, I, A, nonce_i         -->    A checks that node I may
 *                                              connect from this address
 *                                       <--    RESP  suite, A, I, nonce_r,
 *                                                    mac_a
 *   I checks mac_a                             
 *   FIN   I, A, mac_i                   -->    A checks mac_i
 *   [sealed records, both ways]
 *
 * Every message has the fixed header magic "DLMK", version, type, flags
 * (0) and its whole length, which must be exactly its type's; anything else
 * fails the parse (lc_hs_parse(), fuzzed by tests/fuzz-lowcomms-auth.c).
 * The nonces are 32 fresh random bytes per connection from each side.
 * INIT offers a set of record ciphers (ChaCha20-Poly1305 always,
 * AES-256-OCB and AES-256-GCM where libsodium says AES runs well, i.e. with
 * AES-NI); RESP names the one the acceptor chose (AES-OCB, else AES-GCM, if
 * both have it) and the initiator checks it was offered.  A node built
 * before AES-OCB refuses an INIT that offers it (unknown suite bits): such
 * a node meets a newer one only if the newer one's lc_config cfg_suites
 * leaves AES-OCB out (dlm.conf has no key for that yet), so a cluster
 * moves to this version all at once.  Both MACs cover the offer and the
 * choice, so no one without the key can steer a pair to another cipher.
 *   mac_a = HMAC-SHA-512-256(k_mac, "A" || INIT || RESP without mac_a)
 *   mac_i = HMAC-SHA-512-256(k_mac, "I" || INIT || RESP || FIN without mac_i)
 * Each MAC covers the whole transcript: both node ids, both nonces, the
 * suite, and (by the role letter) which side made it, so a MAC cannot be
 * reflected back at its maker, and one recorded on an earlier connection
 * never matches a new nonce of the verifier's.  A replayed INIT gets a
 * fresh RESP; the replayed FIN then fails mac_i.  The acceptor proves the
 * key first, but learns nothing the initiator has not already sent; a
 * stranger without the key gets a RESP and nothing more.
 *
 * SESSION KEYS.  BLAKE2b-512 keyed with k_sess over "session" || INIT ||
 * RESP: the first half keys initiator-to-acceptor records, the second the
 * other direction.  Fresh per connection (both nonces), bound to both node
 * ids, and different per direction, so a record cannot be replayed onto
 * another connection nor reflected back.
 *
 * RECORDS.  After FIN each side writes records: a 4-byte little-endian
 * length (of the ciphertext with its tag), then the AEAD of the plaintext
 * (ChaCha20-Poly1305 as in RFC 8439, AES-256-GCM, or AES-256-OCB as in RFC
 * 7253 with a 96-bit nonce and 128-bit tag), with the
 * length as associated data and as nonce the direction's record counter (64
 * bits, from 0, one per record).  The plaintext is the lowcomms frame stream, cut
 * wherever a batch ends: one record per batched write, so the cost is one
 * AEAD per write, not per message.  The receiver keeps its own counter, so a
 * record replayed, dropped, reordered or from another connection fails to
 * open; lowcomms then closes the connection and says why, and reliable
 * delivery resends over a new one.
 *
 * WHY THESE PRIMITIVES.  ChaCha20-Poly1305 is the base: fast and
 * constant-time without AES hardware, on every CPU.  With AES-NI,
 * AES-256-GCM is faster, so it is used when both ends have it.  Both come
 * from OpenSSL's EVP interface, keyed once per direction (lc_aead_init(),
 * one cipher context each, so the AES key schedule is expanded once, not
 * per record) and given only the counter nonce per record.  OpenSSL rather
 * than libsodium for the records because the records are the whole cost
 * of a keyed message and OpenSSL's AEADs are the faster ones here: on this
 * project's test machine (Xeon with AES-NI, VAES, AVX-512) sealing 256 KiB
 * in place ran at 6.7 GB/s with OpenSSL 3.0's AES-256-GCM against 2.7 GB/s
 * with libsodium 1.0.18's, and 4.5 against 1.9 GB/s for ChaCha20-Poly1305
 * (bench/bench-lowcomms.c has what that did to the cost per message).
 * The bytes on the wire are the same either way (test-lowcomms-auth checks
 * our records against libsodium's), so nodes built with either interwork.
 * AES-256-OCB is first choice because it is cheaper still, from libgcrypt
 * (1.9 and later run it with VAES where the CPU has it): 13-14 GB/s a pass
 * on the same machine against 4.5-5 for any AES-GCM or ChaCha20-Poly1305
 * in Debian 12 (OpenSSL 3.0's GCM has no VAES code, and its OCB runs at
 * GCM's speed), which makes a keyed message cost about what a plain one
 * does.  OCB is a one-pass AEAD with the same kind of security bound as
 * GCM (nonce-respecting, 128-bit tag; our nonces are counters that never
 * repeat under a key); its patents were released.  test-lowcomms-auth
 * checks libgcrypt's records against OpenSSL's AES-256-OCB byte for byte.
 * A record that fails to open is wiped before it is refused, so nothing
 * unauthenticated is ever left looking like plaintext.  Rather than
 * crypto_secretstream: secretstream makes its own nonces and
 * header and has no notion of our handshake; with explicit per-direction
 * counters the replay rule is ours to state and test, and the session key
 * already binds each stream to this connection.  Counters never repeat
 * under one key: a connection would need 2^64 records.  No public-key
 * cryptography: every node holds the same secret anyway (as corosync's
 * nodes do), so a key exchange would add no protection against an insider
 * and a lot of code; the known limit is that anyone with the key file can
 * pose as any node from that node's address, which is why the key file's
 * mode is checked.  No forward secrecy: whoever records the traffic and
 * later steals the key can decrypt it.
 */
#include "lowcomms/auth.h"
#include "lowcomms/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gcrypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>

static_assert(crypto_auth_BYTES == LC_HS_MAC_LEN, "HMAC length");
static_assert(crypto_auth_KEYBYTES == 32, "HMAC key length");
static_assert(crypto_kdf_KEYBYTES == LC_KEY_LEN, "KDF key length");

#define KEY_PERSONAL	"dlmd lowcomms v1"	/* 16 bytes, BLAKE2b */
#define KDF_CONTEXT	"dlmdlcv1"		/* 8 bytes, crypto_kdf */
#define KDF_ID_MAC	1
#define KDF_ID_SESS	2

/* Offsets inside a message: the body follows the header.  INIT and RESP:
 * suite, sender, target, nonce (RESP: then its MAC); FIN: sender, target,
 * MAC.  Every field little-endian. */
#define OFF_BODY	LC_HS_HDR_LEN
#define BODY_SUITE	0
#define BODY_SENDER	4
#define BODY_TARGET	8
#define BODY_NONCE	12
#define BODY_MAC	(BODY_NONCE + LC_HS_NONCE_LEN)
#define FIN_SENDER	0
#define FIN_TARGET	4
#define FIN_MAC		8
static_assert(OFF_BODY + BODY_NONCE + LC_HS_NONCE_LEN == LC_HS_INIT_LEN,
	      "INIT layout");
static_assert(OFF_BODY + BODY_MAC + LC_HS_MAC_LEN == LC_HS_RESP_LEN,
	      "RESP layout");
static_assert(OFF_BODY + FIN_MAC + LC_HS_MAC_LEN == LC_HS_FIN_LEN,
	      "FIN layout");

const char *lc_hs_err_str(enum lc_hs_err err)
{
	switch (err) {
	case LC_HSERR_NONE: return "ok";
	case LC_HSERR_MORE: return "incomplete handshake message";
	case LC_HSERR_PLAINTEXT:
		return "peer speaks unauthenticated lowcomms (crypto = none there?)";
	case LC_HSERR_MAGIC: return "not a handshake message (bad magic)";
	case LC_HSERR_VERSION: return "unsupported handshake version";
	case LC_HSERR_TYPE: return "unexpected handshake message type";
	case LC_HSERR_FLAGS: return "handshake flags not zero";
	case LC_HSERR_LENGTH: return "handshake message of the wrong length";
	case LC_HSERR_SUITE: return "unsupported cipher suite";
	case LC_HSERR_SENDER: return "handshake from an unexpected node";
	case LC_HSERR_TARGET: return "handshake addressed to another node";
	case LC_HSERR_MAC:
		return "peer does not prove the cluster key (handshake MAC "
		       "mismatch: wrong key, or a replayed handshake)";
	case LC_HSERR_STATE: return "handshake message in the wrong state";
	case LC_HSERR_CIPHER:
		return "cannot set up the record cipher (out of memory?)";
	}
	return "unknown handshake error";
}

int lc_key_derive(const void *material, size_t len,
		  unsigned char key[LC_KEY_LEN])
{
	unsigned char salt[crypto_generichash_blake2b_SALTBYTES] = { 0 };

	if (sodium_init() < 0)
		return -EIO;
	if (len < LC_KEYFILE_MIN || len > LC_KEYFILE_MAX)
		return -EINVAL;
	crypto_generichash_blake2b_salt_personal(
		key, LC_KEY_LEN, material, len, NULL, 0, salt,
		(const unsigned char *)KEY_PERSONAL);
	lc_secret_burn_stack();
	return 0;
}

/* A directory on the key file's path (fd: opened O_PATH; its name: the
 * first namelen bytes of path) that no one but root or us may change:
 * root's or ours, not writable by group or others unless sticky (then
 * its entry we open next is checked to be root's or ours: the walk
 * checks every directory, lc_key_load the file).  0 or -EPERM. */
static int key_dir_ok(int fd, const char *path, int namelen, char *why,
		      size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int rv = -errno;

		snprintf(why, whylen, "cannot stat %.*s on the path of key "
			 "file %s: %s", namelen, path, path, strerror(errno));
		return rv;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, whylen, "directory %.*s on the path of key file "
			 "%s belongs to uid %u: that user can put another key "
			 "there; it must be root's or ours", namelen, path, path,
			 (unsigned)st.st_uid);
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(why, whylen, "directory %.*s on the path of key file "
			 "%s has mode %04o: others may put another key there; "
			 "only its owner may write to it", namelen, path, path,
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* The key file opened by a walk of its absolute path from "/" (THE KEY):
 * each directory opened O_PATH | O_NOFOLLOW relative to the one before,
 * after that one passed key_dir_ok(), so what was checked is what the
 * next step opens in, whatever is renamed meanwhile.  A symbolic link
 * anywhere on the path is refused, saying which.  The fd, or a negative
 * errno with why. */
static int key_open(const char *path, char *why, size_t whylen)
{
	const char *comp = path, *end;
	char name[NAME_MAX + 1];
	struct stat st;
	int dfd, fd, rv;

	if (path[0] != '/') {
		snprintf(why, whylen, "key file %s is not an absolute path",
			 path);
		return -EINVAL;
	}
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rv = -errno;
		snprintf(why, whylen, "cannot open / for key file %s: %s",
			 path, strerror(errno));
		return rv;
	}
	rv = key_dir_ok(dfd, path, 1, why, whylen);
	for (;;) {
		if (rv < 0)
			goto out;
		while (*comp == '/')
			comp++;
		end = strchr(comp, '/');
		if (!end)
			break;		/* comp: the file's own name */
		if ((size_t)(end - comp) > NAME_MAX) {
			rv = -ENAMETOOLONG;
			snprintf(why, whylen, "cannot open key file %s: %s",
				 path, strerror(-rv));
			goto out;
		}
		memcpy(name, comp, (size_t)(end - comp));
		name[end - comp] = 0;
		fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			rv = -errno;
			snprintf(why, whylen, "cannot open key file %s: %.*s: %s",
				 path, (int)(end - path), path, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(dfd);
		dfd = fd;
		if (S_ISLNK(st.st_mode)) {
			rv = -ELOOP;
			snprintf(why, whylen, "%.*s on the path of key file %s is "
				 "a symbolic link (not followed: name the real "
				 "path)", (int)(end - path), path, path);
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			rv = -ENOTDIR;
			snprintf(why, whylen, "cannot open key file %s: %.*s is "
				 "not a directory", path, (int)(end - path), path);
			goto out;
		}
		rv = key_dir_ok(dfd, path, (int)(end - path), why, whylen);
		comp = end;
	}
	if (!*comp) {
		rv = -EISDIR;
		snprintf(why, whylen, "key file %s names a directory", path);
		goto out;
	}
	fd = openat(dfd, comp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
			       O_NONBLOCK);
	if (fd < 0) {
		rv = -errno;
		if (errno == ELOOP)
			snprintf(why, whylen, "key file %s is a symbolic link "
				 "(not followed: name the file itself)", path);
		else
			snprintf(why, whylen, "cannot open key file %s: %s",
				 path, strerror(errno));
		goto out;
	}
	rv = fd;
out:
	close(dfd);
	return rv;
}

/* The key file's bytes are read (read(2), no stdio buffer) into secret
 * memory (lowcomms/secret.c), not a stack buffer: they are the cluster's
 * secret as much as the key made of them.  Opened without blocking: a
 * FIFO (or a device) named as the key file is refused by the checks
 * below instead of blocking the daemon's start in open() until someone
 * writes to it. */
int lc_key_load(const char *path, unsigned char key[LC_KEY_LEN], char *why,
		size_t whylen)
{
	const size_t cap = LC_KEYFILE_MAX + 1;
	unsigned char *buf;
	struct stat st;
	ssize_t got;
	size_t len = 0;
	int fd, rv;

	fd = key_open(path, why, whylen);
	if (fd < 0)
		return fd;
	buf = lc_secret_alloc(cap);
	if (!buf) {
		rv = -ENOMEM;
		snprintf(why, whylen, "no memory to read key file %s", path);
		close(fd);
		return rv;
	}
	if (fstat(fd, &st) < 0) {
		rv = -errno;
		snprintf(why, whylen, "cannot stat key file %s: %s", path,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rv = -EINVAL;
		snprintf(why, whylen, "key file %s is not a regular file",
			 path);
		goto out;
	}
	/* A second name for the file: in a sticky directory (/tmp) anyone
	 * may make the key's name, before it exists, a hard link to some
	 * other root-owned file (where fs.protected_hardlinks is 0). */
	if (st.st_nlink > 1) {
		rv = -EPERM;
		snprintf(why, whylen, "key file %s has %lu names (hard links): "
			 "give it one", path, (unsigned long)st.st_nlink);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		rv = -EPERM;
		snprintf(why, whylen,
			 "key file %s belongs to uid %u: that user may read it "
			 "(and join the lock traffic); it must be root's or ours",
			 path, (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		rv = -EPERM;
		snprintf(why, whylen,
			 "key file %s has mode %04o: others may read or change "
			 "it (and join the lock traffic); make it 0600 or 0400",
			 path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	for (;;) {
		got = read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rv = -errno;
			snprintf(why, whylen, "cannot read key file %s: %s",
				 path, strerror(errno));
			goto out;
		}
		if (!got || len + (size_t)got == cap) {
			len += (size_t)got;
			break;
		}
		len += (size_t)got;
	}
	if (len < LC_KEYFILE_MIN || len > LC_KEYFILE_MAX) {
		rv = -EINVAL;
		snprintf(why, whylen,
			 "key file %s holds %s%zu bytes; a key must have "
			 "%d..%d bytes", path, len > LC_KEYFILE_MAX ? "over " : "",
			 len > LC_KEYFILE_MAX ? (size_t)LC_KEYFILE_MAX : len,
			 LC_KEYFILE_MIN, LC_KEYFILE_MAX);
		goto out;
	}
	rv = lc_key_derive(buf, len, key);
	if (rv < 0)
		snprintf(why, whylen, "libsodium failed to initialise");
out:
	lc_secret_free(buf);	/* wipes it */
	close(fd);
	return rv;
}

/* libgcrypt, made ready once per process: the version check initialises
 * it.  Not its own secure memory: what it allocates for a session key
 * (ocb_init()) goes to OpenSSL's secure heap, as OpenSSL's contexts do
 * (lowcomms/secret.c, lc_secret_setup(), which must come first); a
 * program that initialised libgcrypt itself keeps its settings. */
static bool gcrypt_ready(void)
{
	lc_secret_setup();
	if (gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P))
		return true;
	if (!gcry_check_version(GCRYPT_VERSION))
		return false;
	gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
	gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	return true;
}

/* Whether this libgcrypt runs AES-256-OCB (not in FIPS mode, say): a
 * suite is offered only if a handshake that chooses it can key it. */
static bool ocb_runs(void)
{
	gcry_cipher_hd_t h;

	if (!gcrypt_ready() ||
	    gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_OCB, 0))
		return false;
	gcry_cipher_close(h);
	return true;
}

uint32_t lc_suites_local(void)
{
	if (sodium_init() < 0 || !crypto_aead_aes256gcm_is_available())
		return LC_SUITE_CHACHA;
	return LC_SUITE_CHACHA | LC_SUITE_AESGCM |
	       (ocb_runs() ? LC_SUITE_AESOCB : 0);
}

uint32_t lc_suite_choose(uint32_t both)
{
	if (both & LC_SUITE_AESOCB)
		return LC_SUITE_AESOCB;
	if (both & LC_SUITE_AESGCM)
		return LC_SUITE_AESGCM;
	return LC_SUITE_CHACHA;
}

void lc_keys_derive(const unsigned char cluster_key[LC_KEY_LEN],
		    struct lc_keys *keys)
{
	crypto_kdf_derive_from_key(keys->k_mac, sizeof(keys->k_mac),
				   KDF_ID_MAC, KDF_CONTEXT, cluster_key);
	crypto_kdf_derive_from_key(keys->k_sess, sizeof(keys->k_sess),
				   KDF_ID_SESS, KDF_CONTEXT, cluster_key);
	lc_secret_burn_stack();
}

/* ---- messages --------------------------------------------------------- */

static size_t type_len(unsigned int type)
{
	switch (type) {
	case LC_HS_INIT: return LC_HS_INIT_LEN;
	case LC_HS_RESP: return LC_HS_RESP_LEN;
	case LC_HS_FIN: return LC_HS_FIN_LEN;
	}
	return 0;
}

static void put_hdr(unsigned char *p, uint8_t type)
{
	dlm_put_le32(p, LC_HS_MAGIC);
	p[4] = LC_HS_VERSION;
	p[5] = type;
	dlm_put_le16(p + 6, 0);
	dlm_put_le32(p + 8, (uint32_t)type_len(type));
}

enum lc_hs_err lc_hs_parse(const unsigned char *buf, size_t len,
			   struct lc_hs_msg *m, size_t *used)
{
	size_t want;
	uint32_t magic, length;
	const unsigned char *b = buf + OFF_BODY;

	*used = LC_HS_HDR_LEN;
	memset(m, 0, sizeof(*m));
	/* Judge the magic as soon as it is there, so that a plaintext peer
	 * is named as such rather than waited for. */
	if (len < 4)
		return LC_HSERR_MORE;
	magic = dlm_get_le32(buf);
	if (magic == LC_FRAME_MAGIC)
		return LC_HSERR_PLAINTEXT;
	if (magic != LC_HS_MAGIC)
		return LC_HSERR_MAGIC;
	if (len < 5)
		return LC_HSERR_MORE;
	if (buf[4] != LC_HS_VERSION)
		return LC_HSERR_VERSION;
	if (len < LC_HS_HDR_LEN)
		return LC_HSERR_MORE;
	want = type_len(buf[5]);
	if (!want)
		return LC_HSERR_TYPE;
	if (dlm_get_le16(buf + 6))
		return LC_HSERR_FLAGS;
	length = dlm_get_le32(buf + 8);
	if (length != want)
		return LC_HSERR_LENGTH;
	*used = want;
	if (len < want)
		return LC_HSERR_MORE;
	m->hm_type = buf[5];
	switch (m->hm_type) {
	case LC_HS_INIT:
	case LC_HS_RESP:
		m->hm_suite = dlm_get_le32(b + BODY_SUITE);
		m->hm_sender = dlm_get_le32(b + BODY_SENDER);
		m->hm_target = dlm_get_le32(b + BODY_TARGET);
		m->hm_nonce = b + BODY_NONCE;
		if (m->hm_type == LC_HS_RESP) {
			m->hm_mac = b + BODY_MAC;
			if (m->hm_suite != LC_SUITE_CHACHA &&
			    m->hm_suite != LC_SUITE_AESGCM &&
			    m->hm_suite != LC_SUITE_AESOCB)
				return LC_HSERR_SUITE;
		} else if (!(m->hm_suite & LC_SUITE_CHACHA) ||
			   (m->hm_suite & ~LC_SUITES_KNOWN)) {
			return LC_HSERR_SUITE;
		}
		break;
	case LC_HS_FIN:
		m->hm_sender = dlm_get_le32(b + FIN_SENDER);
		m->hm_target = dlm_get_le32(b + FIN_TARGET);
		m->hm_mac = b + FIN_MAC;
		break;
	}
	return LC_HSERR_NONE;
}

/* HMAC over role || parts. */
static void transcript_mac(const struct lc_keys *keys, char role,
			   const unsigned char *a, size_t alen,
			   const unsigned char *b, size_t blen,
			   const unsigned char *c, size_t clen,
			   unsigned char mac[LC_HS_MAC_LEN])
{
	crypto_auth_hmacsha512256_state st;
	unsigned char r = (unsigned char)role;

	crypto_auth_hmacsha512256_init(&st, keys->k_mac, sizeof(keys->k_mac));
	crypto_auth_hmacsha512256_update(&st, &r, 1);
	crypto_auth_hmacsha512256_update(&st, a, alen);
	crypto_auth_hmacsha512256_update(&st, b, blen);
	if (clen)
		crypto_auth_hmacsha512256_update(&st, c, clen);
	crypto_auth_hmacsha512256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

static enum lc_hs_err fail(struct lc_hs *hs, enum lc_hs_err err)
{
	hs->hs_state = LC_HSS_FAILED;
	return err;
}

static enum lc_hs_err derive_session(struct lc_hs *hs)
{
	static const unsigned char label[] = "session";
	crypto_generichash_state st;
	unsigned char out[64];
	uint32_t suite = dlm_get_le32(hs->hs_resp + OFF_BODY + BODY_SUITE);
	int rv;

	crypto_generichash_init(&st, hs->hs_keys->k_sess,
				sizeof(hs->hs_keys->k_sess), sizeof(out));
	crypto_generichash_update(&st, label, sizeof(label));
	crypto_generichash_update(&st, hs->hs_init, sizeof(hs->hs_init));
	crypto_generichash_update(&st, hs->hs_resp, sizeof(hs->hs_resp));
	crypto_generichash_final(&st, out, sizeof(out));
	/* First half: initiator to acceptor; second: the other way. */
	rv = lc_aead_init(&hs->hs_tx, suite,
			  hs->hs_initiator ? out : out + 32, true);
	if (!rv)
		rv = lc_aead_init(&hs->hs_rx, suite,
				  hs->hs_initiator ? out + 32 : out, false);
	sodium_memzero(out, sizeof(out));
	sodium_memzero(&st, sizeof(st));
	lc_secret_burn_stack();
	if (rv < 0) {
		lc_aead_wipe(&hs->hs_tx);
		lc_aead_wipe(&hs->hs_rx);
		return fail(hs, LC_HSERR_CIPHER);
	}
	hs->hs_state = LC_HSS_DONE;
	return LC_HSERR_NONE;
}

int lc_hs_start_initiator(struct lc_hs *hs, const struct lc_keys *keys,
			  uint32_t local, uint32_t peer, uint32_t suites,
			  unsigned char out[LC_HS_INIT_LEN])
{
	unsigned char *b = out + OFF_BODY;

	memset(hs, 0, sizeof(*hs));
	hs->hs_initiator = true;
	hs->hs_local = local;
	hs->hs_peer = peer;
	hs->hs_keys = keys;
	hs->hs_suites = (suites & LC_SUITES_KNOWN) | LC_SUITE_CHACHA;
	put_hdr(out, LC_HS_INIT);
	dlm_put_le32(b + BODY_SUITE, hs->hs_suites);
	dlm_put_le32(b + BODY_SENDER, local);
	dlm_put_le32(b + BODY_TARGET, peer);
	randombytes_buf(b + BODY_NONCE, LC_HS_NONCE_LEN);
	memcpy(hs->hs_init, out, LC_HS_INIT_LEN);
	hs->hs_state = LC_HSS_WAIT_RESP;
	return 0;
}

void lc_hs_start_acceptor(struct lc_hs *hs, const struct lc_keys *keys,
			  uint32_t local, uint32_t suites)
{
	memset(hs, 0, sizeof(*hs));
	hs->hs_local = local;
	hs->hs_keys = keys;
	hs->hs_suites = (suites & LC_SUITES_KNOWN) | LC_SUITE_CHACHA;
	hs->hs_state = LC_HSS_WAIT_INIT;
}

enum lc_hs_err lc_hs_on_init(struct lc_hs *hs, const struct lc_hs_msg *m,
			     const unsigned char *raw,
			     unsigned char out[LC_HS_RESP_LEN])
{
	unsigned char *b = out + OFF_BODY;

	if (hs->hs_state != LC_HSS_WAIT_INIT)
		return fail(hs, LC_HSERR_STATE);
	if (m->hm_type != LC_HS_INIT)
		return fail(hs, LC_HSERR_TYPE);
	if (m->hm_target != hs->hs_local)
		return fail(hs, LC_HSERR_TARGET);
	if (!m->hm_sender || m->hm_sender == hs->hs_local)
		return fail(hs, LC_HSERR_SENDER);
	hs->hs_peer = m->hm_sender;
	memcpy(hs->hs_init, raw, LC_HS_INIT_LEN);
	put_hdr(out, LC_HS_RESP);
	dlm_put_le32(b + BODY_SUITE,
		     lc_suite_choose(m->hm_suite & hs->hs_suites));
	dlm_put_le32(b + BODY_SENDER, hs->hs_local);
	dlm_put_le32(b + BODY_TARGET, hs->hs_peer);
	randombytes_buf(b + BODY_NONCE, LC_HS_NONCE_LEN);
	transcript_mac(hs->hs_keys, 'A', hs->hs_init, LC_HS_INIT_LEN, out,
		       LC_HS_RESP_LEN - LC_HS_MAC_LEN, NULL, 0,
		       b + BODY_MAC);
	memcpy(hs->hs_resp, out, LC_HS_RESP_LEN);
	hs->hs_state = LC_HSS_WAIT_FIN;
	return LC_HSERR_NONE;
}

enum lc_hs_err lc_hs_on_resp(struct lc_hs *hs, const struct lc_hs_msg *m,
			     const unsigned char *raw,
			     unsigned char out[LC_HS_FIN_LEN])
{
	unsigned char mac[LC_HS_MAC_LEN];
	unsigned char *b = out + OFF_BODY;
	int diff;

	if (hs->hs_state != LC_HSS_WAIT_RESP)
		return fail(hs, LC_HSERR_STATE);
	if (m->hm_type != LC_HS_RESP)
		return fail(hs, LC_HSERR_TYPE);
	if (m->hm_sender != hs->hs_peer)
		return fail(hs, LC_HSERR_SENDER);
	if (m->hm_target != hs->hs_local)
		return fail(hs, LC_HSERR_TARGET);
	if (!(m->hm_suite & hs->hs_suites))
		return fail(hs, LC_HSERR_SUITE);
	transcript_mac(hs->hs_keys, 'A', hs->hs_init, LC_HS_INIT_LEN, raw,
		       LC_HS_RESP_LEN - LC_HS_MAC_LEN, NULL, 0, mac);
	diff = sodium_memcmp(mac, m->hm_mac, LC_HS_MAC_LEN);
	sodium_memzero(mac, sizeof(mac));
	if (diff)
		return fail(hs, LC_HSERR_MAC);
	memcpy(hs->hs_resp, raw, LC_HS_RESP_LEN);
	put_hdr(out, LC_HS_FIN);
	dlm_put_le32(b + FIN_SENDER, hs->hs_local);
	dlm_put_le32(b + FIN_TARGET, hs->hs_peer);
	transcript_mac(hs->hs_keys, 'I', hs->hs_init, LC_HS_INIT_LEN,
		       hs->hs_resp, LC_HS_RESP_LEN, out,
		       LC_HS_FIN_LEN - LC_HS_MAC_LEN, b + FIN_MAC);
	return derive_session(hs);
}

enum lc_hs_err lc_hs_on_fin(struct lc_hs *hs, const struct lc_hs_msg *m,
			    const unsigned char *raw)
{
	unsigned char mac[LC_HS_MAC_LEN];
	int diff;

	if (hs->hs_state != LC_HSS_WAIT_FIN)
		return fail(hs, LC_HSERR_STATE);
	if (m->hm_type != LC_HS_FIN)
		return fail(hs, LC_HSERR_TYPE);
	if (m->hm_sender != hs->hs_peer)
		return fail(hs, LC_HSERR_SENDER);
	if (m->hm_target != hs->hs_local)
		return fail(hs, LC_HSERR_TARGET);
	transcript_mac(hs->hs_keys, 'I', hs->hs_init, LC_HS_INIT_LEN,
		       hs->hs_resp, LC_HS_RESP_LEN, raw,
		       LC_HS_FIN_LEN - LC_HS_MAC_LEN, mac);
	diff = sodium_memcmp(mac, m->hm_mac, LC_HS_MAC_LEN);
	sodium_memzero(mac, sizeof(mac));
	if (diff)
		return fail(hs, LC_HSERR_MAC);
	return derive_session(hs);
}

void lc_hs_wipe(struct lc_hs *hs)
{
	lc_aead_wipe(&hs->hs_tx);
	lc_aead_wipe(&hs->hs_rx);
	sodium_memzero(hs, sizeof(*hs));
}

/* ---- records ------------------------------------------------------------ */

/* Both AEADs' nonce: 96 bits, the record counter in its first 64. */
#define REC_NONCE_LEN	12

static const EVP_CIPHER *suite_cipher(uint32_t suite)
{
	switch (suite) {
	case LC_SUITE_AESGCM: return EVP_aes_256_gcm();
	case LC_SUITE_CHACHA: return EVP_chacha20_poly1305();
	}
	return NULL;
}

/* AES-256-OCB, 96-bit nonce, 128-bit tag (libgcrypt's defaults but the
 * nonce length, which each record's setiv gives). */
static int ocb_init(struct lc_aead *ae, const unsigned char *key, bool seal)
{
	gcry_cipher_hd_t h;

	if (!gcrypt_ready())
		return -ENOMEM;
	lc_secret_begin();
	if (gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_OCB, 0)) {
		lc_secret_end();
		return -ENOMEM;
	}
	if (gcry_cipher_setkey(h, key, LC_AEAD_KEY_LEN)) {
		gcry_cipher_close(h);
		lc_secret_end();
		return -ENOMEM;
	}
	lc_secret_end();
	ae->ae_ocb = h;
	ae->ae_suite = LC_SUITE_AESOCB;
	ae->ae_seal = seal;
	return 0;
}

int lc_aead_init(struct lc_aead *ae, uint32_t suite,
		 const unsigned char key[LC_AEAD_KEY_LEN], bool seal)
{
	const EVP_CIPHER *cipher = suite_cipher(suite);
	EVP_CIPHER_CTX *x;

	memset(ae, 0, sizeof(*ae));
	if (suite == LC_SUITE_AESOCB)
		return ocb_init(ae, key, seal);
	if (!cipher)
		return -EINVAL;
	/* The context and what OpenSSL allocates to key it (the expanded
	 * key) in memory kept out of core dumps (lowcomms/secret.c). */
	lc_secret_begin();
	x = EVP_CIPHER_CTX_new();
	if (!x) {
		lc_secret_end();
		return -ENOMEM;
	}
	/* Both ciphers take a 96-bit nonce and a 256-bit key by default.
	 * The key is expanded once here; each record sets only its nonce. */
	if (EVP_CipherInit_ex2(x, cipher, key, NULL, seal, NULL) != 1 ||
	    EVP_CIPHER_CTX_get_key_length(x) != LC_AEAD_KEY_LEN ||
	    EVP_CIPHER_CTX_get_iv_length(x) != REC_NONCE_LEN) {
		EVP_CIPHER_CTX_free(x);
		lc_secret_end();
		return -ENOMEM;
	}
	lc_secret_end();
	ae->ae_ctx = x;
	ae->ae_suite = suite;
	ae->ae_seal = seal;
	return 0;
}

void lc_aead_wipe(struct lc_aead *ae)
{
	/* Freeing a context clears its key schedule (OpenSSL cleanses,
	 * libgcrypt wipes a handle it closes). */
	EVP_CIPHER_CTX_free(ae->ae_ctx);
	if (ae->ae_ocb)
		gcry_cipher_close(ae->ae_ocb);
	memset(ae, 0, sizeof(*ae));
}

/* The nonce: the record counter, little-endian, then 4 zero bytes. */
static void record_nonce(uint64_t counter, unsigned char n[REC_NONCE_LEN])
{
	memset(n, 0, REC_NONCE_LEN);
	for (int i = 0; i < 8; i++)
		n[i] = (unsigned char)(counter >> (8 * i));
}

/* Largest plaintext of one record: OpenSSL takes int lengths. */
#define REC_PT_MAX	((size_t)INT_MAX - LC_REC_OVERHEAD)

/* The OCB forms of lc_rec_seal() and lc_rec_open(): the same record. */
static bool ocb_seal(gcry_cipher_hd_t h, const unsigned char *nonce,
		     unsigned char *rec, size_t ptlen)
{
	unsigned char *pt = rec + LC_REC_HDR_LEN;

	return !gcry_cipher_setiv(h, nonce, REC_NONCE_LEN) &&
	       !gcry_cipher_authenticate(h, rec, LC_REC_HDR_LEN) &&
	       !gcry_cipher_final(h) &&
	       !gcry_cipher_encrypt(h, pt, ptlen, NULL, 0) &&
	       !gcry_cipher_gettag(h, pt + ptlen, LC_REC_TAG_LEN);
}

static bool ocb_open(gcry_cipher_hd_t h, const unsigned char *nonce,
		     unsigned char *rec, size_t len)
{
	unsigned char *ct = rec + LC_REC_HDR_LEN;

	return !gcry_cipher_setiv(h, nonce, REC_NONCE_LEN) &&
	       !gcry_cipher_authenticate(h, rec, LC_REC_HDR_LEN) &&
	       !gcry_cipher_final(h) &&
	       !gcry_cipher_decrypt(h, ct, len, NULL, 0) &&
	       !gcry_cipher_checktag(h, ct + len, LC_REC_TAG_LEN);
}

size_t lc_rec_seal(struct lc_aead *tx, unsigned char *rec, size_t ptlen)
{
	unsigned char nonce[REC_NONCE_LEN];
	unsigned char *pt = rec + LC_REC_HDR_LEN;
	int n = 0, fin = 0;

	if ((!tx->ae_ctx && !tx->ae_ocb) || !tx->ae_seal || !ptlen ||
	    ptlen > REC_PT_MAX)
		return 0;
	dlm_put_le32(rec, (uint32_t)(ptlen + LC_REC_TAG_LEN));
	record_nonce(tx->ae_counter, nonce);
	if (tx->ae_ocb) {
		if (!ocb_seal(tx->ae_ocb, nonce, rec, ptlen))
			return 0;
		tx->ae_counter++;
		return LC_REC_HDR_LEN + ptlen + LC_REC_TAG_LEN;
	}
	/* In place: the ciphertext overwrites the plaintext, the tag
	 * follows it; the length header is the associated data. */
	if (EVP_EncryptInit_ex2(tx->ae_ctx, NULL, NULL, nonce, NULL) != 1 ||
	    EVP_EncryptUpdate(tx->ae_ctx, NULL, &n, rec, LC_REC_HDR_LEN) != 1 ||
	    EVP_EncryptUpdate(tx->ae_ctx, pt, &n, pt, (int)ptlen) != 1 ||
	    (size_t)n != ptlen ||
	    EVP_EncryptFinal_ex(tx->ae_ctx, pt + n, &fin) != 1 || fin != 0 ||
	    EVP_CIPHER_CTX_ctrl(tx->ae_ctx, EVP_CTRL_AEAD_GET_TAG,
				LC_REC_TAG_LEN, pt + ptlen) != 1)
		return 0;
	tx->ae_counter++;
	return LC_REC_HDR_LEN + ptlen + LC_REC_TAG_LEN;
}

size_t lc_rec_ct_len(const unsigned char hdr[LC_REC_HDR_LEN], size_t max_pt)
{
	size_t len = dlm_get_le32(hdr);

	if (len < LC_REC_TAG_LEN + 1 || len > max_pt + LC_REC_TAG_LEN)
		return 0;
	return len;
}

int lc_rec_open(struct lc_aead *rx, unsigned char *rec, size_t ct_len,
		size_t *ptlen)
{
	unsigned char nonce[REC_NONCE_LEN];
	unsigned char *ct = rec + LC_REC_HDR_LEN;
	size_t len = ct_len - LC_REC_TAG_LEN;
	int n = 0, fin = 0;

	if ((!rx->ae_ctx && !rx->ae_ocb) || rx->ae_seal ||
	    ct_len <= LC_REC_TAG_LEN || ct_len > REC_PT_MAX + LC_REC_TAG_LEN)
		return -EBADMSG;
	record_nonce(rx->ae_counter, nonce);
	if (rx->ae_ocb) {
		/* Decrypted in place before the tag is checked: on failure
		 * the bytes are wiped, as below. */
		if (!ocb_open(rx->ae_ocb, nonce, rec, len)) {
			OPENSSL_cleanse(ct, len);
			return -EBADMSG;
		}
		rx->ae_counter++;
		*ptlen = len;
		return 0;
	}
	/* Decrypted in place; the tag is checked at Final, and until then
	 * (and for good if it fails) the bytes are not plaintext anyone
	 * may use. */
	if (EVP_DecryptInit_ex2(rx->ae_ctx, NULL, NULL, nonce, NULL) != 1 ||
	    EVP_DecryptUpdate(rx->ae_ctx, NULL, &n, rec, LC_REC_HDR_LEN) != 1 ||
	    EVP_DecryptUpdate(rx->ae_ctx, ct, &n, ct, (int)len) != 1 ||
	    (size_t)n != len ||
	    EVP_CIPHER_CTX_ctrl(rx->ae_ctx, EVP_CTRL_AEAD_SET_TAG,
				LC_REC_TAG_LEN, ct + len) != 1 ||
	    EVP_DecryptFinal_ex(rx->ae_ctx, ct + n, &fin) != 1 || fin != 0) {
		OPENSSL_cleanse(ct, len);
		return -EBADMSG;
	}
	rx->ae_counter++;
	*ptlen = len;
	return 0;
}
