/*
 * tests/test-lowcomms-auth.c: nobody joins the lock traffic without the
 * cluster key (issue 12).  Loopback endpoints with a key, and attackers
 * made of raw sockets on the same host, so that every connection comes
 * from an address the node table admits:
 *  - the impostor of the finding: a plaintext HELLO claiming a node, with a
 *    new epoch (it used to replace the real connection);
 *  - an impostor that speaks the handshake but has no key (a garbage FIN);
 *  - a peer with the wrong key (refused both ways), while two right ones
 *    keep talking;
 *  - a recorded handshake replayed on a new connection;
 *  - a recorded record replayed into a live connection (through a proxy
 *    that copies a whole record): the connection is killed, the reliable
 *    layer resends, and everything arrives exactly once;
 *  - records cut anywhere by the reads (the proxy passes a few KiB at a
 *    time), so that their rest is read straight into the record buffer,
 *    and a byte flipped in such a rest: refused as a replay is;
 *  - the key file rules (missing, short, readable by others, a symlink);
 *  - the records themselves: byte for byte what libsodium's AEADs make
 *    (the earlier releases' record layer, and an independent check of
 *    OpenSSL's), and for AES-OCB (libgcrypt's) what OpenSSL's makes; a
 *    record that fails leaves no plaintext behind.
 * Each refusal must leave a log line saying why, and the real traffic must
 * be delivered exactly once and the real connection never replaced.
 * Every wait is bounded (WAIT_MS).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "lowcomms/auth.h"
#include "lowcomms/frame.h"
#include "tests/test-lowcomms-harness.h"

#define WAIT_MS		10000
#define LOOPBACK	"127.0.0.1"
#define NO_KEY_NEEDLE	"does not prove the cluster key"
#define REPLAY_NEEDLE	"record failed authentication"

/* h_config, always with the test key (whatever LC_TEST_SECURITY says). */
static void auth_config(struct lc_config *cfg, uint32_t nodeid,
			const char *addr)
{
	h_config(cfg, nodeid, addr);
	cfg->cfg_security = LC_SEC_KEY;
	cfg->cfg_key = h_key(0);
}

static void assert_clean(const struct h_world *w)
{
	for (int i = 0; i < w->w_neps; i++) {
		assert_int_equal(w->w_eps[i].ep_rx_errors, 0);
		assert_int_equal(w->w_eps[i].ep_rx_dups, 0);
		assert_int_equal(w->w_eps[i].ep_rx_lost, 0);
	}
}

static int connect_from(const char *src, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, src, &sa.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	sa.sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, LOOPBACK, &sa.sin_addr), 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Read (and drop) what the peer says until it closes; false if it keeps
 * the connection open for ~2 s. */
static bool closed_by_peer(struct h_world *w, int fd)
{
	char buf[512];

	for (int i = 0; i < 400; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		h_poll(w, 5);
	}
	return false;
}

static void send_all(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static struct lc_stats stats(const struct h_world *w, int i)
{
	struct lc_stats st;

	lc_get_stats(w->w_eps[i].ep_lc, &st);
	return st;
}

/* Stream n messages each way between endpoints 0 and 1, all acked. */
static void traffic(struct h_world *w, long n)
{
	assert_int_equal(h_send(w, 0, 1, n), n);
	assert_int_equal(h_send(w, 1, 0, n), n);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
}

/* Nodes 1 and 2 have all they sent to each other delivered and acked. */
static bool pair_acked(struct h_world *w, void *unused)
{
	(void)unused;
	return h_pair_done(w, 0, 1) && h_pair_done(w, 1, 0) &&
	       lc_queue_len(w->w_eps[0].ep_lc, 2) == 0 &&
	       lc_queue_len(w->w_eps[1].ep_lc, 1) == 0;
}

/* ---- the key, the config ------------------------------------------------ */

static void write_file(const char *path, const void *buf, size_t len,
		       mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_key_file(void **state)
{
	char dir[] = "/tmp/lc-auth-XXXXXX", path[64], link[64], why[256];
	unsigned char material[256], key[LC_KEY_LEN], key2[LC_KEY_LEN];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/authkey", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	for (size_t i = 0; i < sizeof(material); i++)
		material[i] = (unsigned char)(i * 7 + 3);

	why[0] = 0;
	assert_int_equal(lc_key_load(path, key, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "cannot open key file"));

	/* Others may read it: refused, and the line says the mode. */
	write_file(path, material, sizeof(material), 0644);
	assert_int_equal(lc_key_load(path, key, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0644"));
	write_file(path, material, sizeof(material), 0640);
	assert_int_equal(lc_key_load(path, key, why, sizeof(why)), -EPERM);

	/* Too short to be a key. */
	write_file(path, material, LC_KEYFILE_MIN - 1, 0600);
	assert_int_equal(lc_key_load(path, key, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "bytes"));

	/* Another user's file: that user could read it. */
	if (geteuid() == 0) {
		write_file(path, material, sizeof(material), 0600);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(lc_key_load(path, key, why, sizeof(why)),
				 -EPERM);
		assert_non_null(strstr(why, "belongs to uid 65534"));
	}

	/* A symlink is not followed, and the line says why. */
	write_file(path, material, sizeof(material), 0600);
	assert_int_equal(symlink(path, link), 0);
	assert_true(lc_key_load(link, key, why, sizeof(why)) < 0);
	assert_non_null(strstr(why, "is a symbolic link"));
	unlink(link);

	/* A FIFO, mode 0600, ours: refused at once, not a start that
	 * blocks in open() until someone writes (the alarm ends a load
	 * that blocks: it did, before the key file was opened O_NONBLOCK). */
	assert_int_equal(mkfifo(link, 0600), 0);
	alarm(20);
	assert_int_equal(lc_key_load(link, key, why, sizeof(why)), -EINVAL);
	alarm(0);
	assert_non_null(strstr(why, "not a regular file"));
	unlink(link);
	/* A device (endless bytes): the same. */
	assert_int_equal(lc_key_load("/dev/zero", key, why, sizeof(why)),
			 -EINVAL);

	/* A huge file (garbage, a log named by mistake): read no further
	 * than one byte past the largest key, refused. */
	{
		size_t big = 4 * 1024 * 1024;
		unsigned char *junk = calloc(1, big);

		assert_non_null(junk);
		write_file(link, junk, big, 0600);
		free(junk);
		assert_int_equal(lc_key_load(link, key, why, sizeof(why)),
				 -EINVAL);
		assert_non_null(strstr(why, "holds over 4096 bytes"));
		unlink(link);
	}

	/* A good one: the key is derived (not the file's bytes) and the same
	 * material always gives the same key, other material another. */
	assert_int_equal(lc_key_load(path, key, why, sizeof(why)), 0);
	assert_int_equal(lc_key_derive(material, sizeof(material), key2), 0);
	assert_memory_equal(key, key2, LC_KEY_LEN);
	assert_memory_not_equal(key, material, LC_KEY_LEN);
	material[100] ^= 1;
	assert_int_equal(lc_key_derive(material, sizeof(material), key2), 0);
	assert_memory_not_equal(key, key2, LC_KEY_LEN);
	assert_int_equal(lc_key_derive(material, LC_KEYFILE_MIN - 1, key2),
			 -EINVAL);

	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* The directories on the key file's path: a symbolic link among them is
 * not followed, and one that others (or another user) may write to, where
 * they could put a key of their own, is refused, the line naming it.  On
 * main, O_NOFOLLOW checked only the last component: a key reached
 * through a linked directory, or in a directory anyone may write to, was
 * taken. */
static void test_key_file_path(void **state)
{
	char dir[] = "/tmp/lc-path-XXXXXX", sub[64], key[96], link[64],
	     lkey[160], why[512];
	unsigned char material[64], k[LC_KEY_LEN];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(key, sizeof(key), "%s/authkey", sub);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(lkey, sizeof(lkey), "%s/authkey", link);
	memset(material, 0x5a, sizeof(material));
	assert_int_equal(mkdir(sub, 0700), 0);
	write_file(key, material, sizeof(material), 0600);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), 0);

	/* A directory on the path is a symbolic link (to a good one). */
	assert_int_equal(symlink(sub, link), 0);
	why[0] = 0;
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "is a symbolic link"));
	assert_non_null(strstr(why, link));
	unlink(link);

	/* Others may write to a directory on the path, or its group may. */
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0777"));
	assert_non_null(strstr(why, sub));
	assert_int_equal(chmod(sub, 0770), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0770"));
	/* A directory higher up the path (not the file's own) is open to
	 * others: refused, naming it; the same reached through "..". */
	assert_int_equal(chmod(sub, 0700), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0777"));
	assert_non_null(strstr(why, dir));
	assert_int_equal(chmod(dir, 0700), 0);
	snprintf(lkey, sizeof(lkey), "%s/../sub/authkey", sub);
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0777"));
	assert_int_equal(chmod(dir, 0700), 0);
	/* A key file with a second name (a hard link) is refused. */
	snprintf(lkey, sizeof(lkey), "%s/second", sub);
	assert_int_equal(linkat(AT_FDCWD, key, AT_FDCWD, lkey, 0), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "hard links"));
	unlink(lkey);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), 0);
	/* Sticky, as /tmp: others cannot replace what is ours in it. */
	assert_int_equal(chmod(sub, 01777), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), 0);
	assert_int_equal(chmod(sub, 0755), 0);
	assert_int_equal(lc_key_load(key, k, why, sizeof(why)), 0);

	/* Another user's directory: that user could swap the file. */
	if (geteuid() == 0) {
		assert_int_equal(chown(sub, 65534, 65534), 0);
		assert_int_equal(lc_key_load(key, k, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "belongs to uid 65534"));
		assert_int_equal(chown(sub, 0, 0), 0);
		assert_int_equal(lc_key_load(key, k, why, sizeof(why)), 0);
	}

	/* Not a path from "/"; a file where a directory should be; a
	 * directory missing; a name that ends in "/". */
	assert_int_equal(lc_key_load("authkey", k, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not an absolute path"));
	snprintf(lkey, sizeof(lkey), "%s/x", key);
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), -ENOTDIR);
	snprintf(lkey, sizeof(lkey), "%s/none/authkey", dir);
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "cannot open key file"));
	snprintf(lkey, sizeof(lkey), "%s/", sub);
	assert_int_equal(lc_key_load(lkey, k, why, sizeof(why)), -EISDIR);

	unlink(key);
	rmdir(sub);
	rmdir(dir);
}

static const struct lc_ops null_ops;

static int ignore_deliver(void *arg, uint32_t from, uint16_t type,
			  uint32_t lsid, const void *payload, size_t len)
{
	(void)arg; (void)from; (void)type; (void)lsid; (void)payload;
	(void)len;
	return 0;
}

static int ignore_fd(void *arg, int fd, short events)
{
	(void)arg; (void)fd; (void)events;
	return 0;
}

static void ignore_fd_del(void *arg, int fd)
{
	(void)arg; (void)fd;
}

/* Plaintext only when asked for: a config that says nothing, or a key
 * that was never set, is refused. */
static void test_config_must_choose(void **state)
{
	static const struct lc_ops ops = {
		.ops_deliver = ignore_deliver, .ops_fd_add = ignore_fd,
		.ops_fd_mod = ignore_fd, .ops_fd_del = ignore_fd_del,
	};
	struct lc_config cfg;
	struct lc_ctx *ctx;

	(void)state;
	(void)null_ops;
	lc_config_default(&cfg);
	cfg.cfg_nodeid = 1;
	errno = 0;
	assert_null(lc_new(&cfg, &ops, NULL));
	assert_int_equal(errno, EINVAL);
	cfg.cfg_security = LC_SEC_KEY;
	errno = 0;
	assert_null(lc_new(&cfg, &ops, NULL));
	assert_int_equal(errno, EINVAL);
	cfg.cfg_key = h_key(0);
	ctx = lc_new(&cfg, &ops, NULL);
	assert_non_null(ctx);
	lc_destroy(ctx);
	cfg.cfg_security = LC_SEC_NONE;
	ctx = lc_new(&cfg, &ops, NULL);
	assert_non_null(ctx);
	lc_destroy(ctx);
}

/* ---- the handshake, message by message ------------------------------------ */

/* Run a whole handshake between initiator a (node 1) and acceptor b (node
 * 2); the messages are left in init, resp, fin. */
static void handshake(struct lc_hs *a, struct lc_hs *b,
		      const struct lc_keys *keys, uint32_t suites,
		      unsigned char *init, unsigned char *resp,
		      unsigned char *fin)
{
	struct lc_hs_msg m;
	size_t used;

	lc_hs_start_initiator(a, keys, 1, 2, suites, init);
	lc_hs_start_acceptor(b, keys, 2, suites);
	assert_int_equal(lc_hs_parse(init, LC_HS_INIT_LEN, &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(b, &m, init, resp), LC_HSERR_NONE);
	assert_int_equal(lc_hs_parse(resp, LC_HS_RESP_LEN, &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(a, &m, resp, fin), LC_HSERR_NONE);
	assert_int_equal(lc_hs_parse(fin, LC_HS_FIN_LEN, &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_fin(b, &m, fin), LC_HSERR_NONE);
}

/*
 * Replays and tampering, without sockets: an old RESP offered to a new
 * initiator, an old FIN to a new acceptor, a RESP whose cipher choice was
 * changed in flight (a downgrade), an INIT for another node, and records
 * of one connection offered to another.  Each is refused, and says why.
 */
static void test_handshake_rules(void **state)
{
	unsigned char key[LC_KEY_LEN], init[LC_HS_INIT_LEN];
	unsigned char resp[LC_HS_RESP_LEN], fin[LC_HS_FIN_LEN];
	unsigned char init2[LC_HS_INIT_LEN], resp2[LC_HS_RESP_LEN];
	unsigned char fin2[LC_HS_FIN_LEN], rec[64], rec0[64];
	uint32_t both = LC_SUITE_CHACHA | LC_SUITE_AESGCM;
	struct lc_hs a, b, a2, b2;
	struct lc_keys keys;
	struct lc_hs_msg m;
	size_t used, pt;

	(void)state;
	h_test_key(key, 0);
	lc_keys_derive(key, &keys);
	handshake(&a, &b, &keys, LC_SUITE_CHACHA, init, resp, fin);

	/* An old RESP does not answer a new INIT (new nonce). */
	lc_hs_start_initiator(&a2, &keys, 1, 2, LC_SUITE_CHACHA, init2);
	assert_int_equal(lc_hs_parse(resp, sizeof(resp), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(&a2, &m, resp, fin2), LC_HSERR_MAC);
	assert_non_null(strstr(lc_hs_err_str(LC_HSERR_MAC), "replayed"));

	/* An old INIT gets a new RESP; the old FIN does not match it. */
	lc_hs_start_acceptor(&b2, &keys, 2, LC_SUITE_CHACHA);
	assert_int_equal(lc_hs_parse(init, sizeof(init), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(&b2, &m, init, resp2), LC_HSERR_NONE);
	assert_memory_not_equal(resp, resp2, sizeof(resp));
	assert_int_equal(lc_hs_parse(fin, sizeof(fin), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_fin(&b2, &m, fin), LC_HSERR_MAC);

	/* The cipher choice is under the MAC: flipping it is caught. */
	lc_hs_start_initiator(&a2, &keys, 1, 2, both, init2);
	lc_hs_start_acceptor(&b2, &keys, 2, both);
	assert_int_equal(lc_hs_parse(init2, sizeof(init2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(&b2, &m, init2, resp2), LC_HSERR_NONE);
	dlm_put_le32(resp2 + LC_HS_HDR_LEN,
		     dlm_get_le32(resp2 + LC_HS_HDR_LEN) == LC_SUITE_AESGCM ?
		     LC_SUITE_CHACHA : LC_SUITE_AESGCM);
	assert_int_equal(lc_hs_parse(resp2, sizeof(resp2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(&a2, &m, resp2, fin2), LC_HSERR_MAC);
	/* So is AES-OCB, the first choice, turned into AES-GCM. */
	lc_hs_start_initiator(&a2, &keys, 1, 2, LC_SUITES_KNOWN, init2);
	lc_hs_start_acceptor(&b2, &keys, 2, LC_SUITES_KNOWN);
	assert_int_equal(lc_hs_parse(init2, sizeof(init2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(&b2, &m, init2, resp2), LC_HSERR_NONE);
	assert_int_equal(dlm_get_le32(resp2 + LC_HS_HDR_LEN), LC_SUITE_AESOCB);
	dlm_put_le32(resp2 + LC_HS_HDR_LEN, LC_SUITE_AESGCM);
	assert_int_equal(lc_hs_parse(resp2, sizeof(resp2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(&a2, &m, resp2, fin2), LC_HSERR_MAC);
	/* ... and a choice that was not offered is refused outright. */
	lc_hs_start_initiator(&a2, &keys, 1, 2, LC_SUITE_CHACHA, init2);
	lc_hs_start_acceptor(&b2, &keys, 2, both);
	assert_int_equal(lc_hs_parse(init2, sizeof(init2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(&b2, &m, init2, resp2), LC_HSERR_NONE);
	assert_int_equal(dlm_get_le32(resp2 + LC_HS_HDR_LEN), LC_SUITE_CHACHA);
	dlm_put_le32(resp2 + LC_HS_HDR_LEN, LC_SUITE_AESGCM);
	assert_int_equal(lc_hs_parse(resp2, sizeof(resp2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_resp(&a2, &m, resp2, fin2), LC_HSERR_SUITE);

	/* An INIT for node 3 at node 2. */
	lc_hs_start_initiator(&a2, &keys, 1, 3, LC_SUITE_CHACHA, init2);
	lc_hs_start_acceptor(&b2, &keys, 2, LC_SUITE_CHACHA);
	assert_int_equal(lc_hs_parse(init2, sizeof(init2), &m, &used),
			 LC_HSERR_NONE);
	assert_int_equal(lc_hs_on_init(&b2, &m, init2, resp2),
			 LC_HSERR_TARGET);

	/* A record of the first connection does not open on a second one
	 * between the same nodes, nor back towards its sender. */
	handshake(&a2, &b2, &keys, LC_SUITE_CHACHA, init2, resp2, fin2);
	memcpy(rec0 + LC_REC_HDR_LEN, "lock", 4);
	lc_rec_seal(&a.hs_tx, rec0, 4);
	/* (A failed open may wipe the buffer: each try gets a copy.) */
	memcpy(rec, rec0, sizeof(rec));
	assert_int_equal(lc_rec_open(&b2.hs_rx, rec, 4 + LC_REC_TAG_LEN, &pt),
			 -EBADMSG);
	memcpy(rec, rec0, sizeof(rec));
	assert_int_equal(lc_rec_open(&a.hs_rx, rec, 4 + LC_REC_TAG_LEN, &pt),
			 -EBADMSG);
	memcpy(rec, rec0, sizeof(rec));
	assert_int_equal(lc_rec_open(&b.hs_rx, rec, 4 + LC_REC_TAG_LEN, &pt),
			 0);
	assert_int_equal(pt, 4);
	assert_memory_equal(rec + LC_REC_HDR_LEN, "lock", 4);
	/* The same record twice: the second is a replay. */
	memcpy(rec, rec0, sizeof(rec));
	assert_int_equal(lc_rec_open(&b.hs_rx, rec, 4 + LC_REC_TAG_LEN, &pt),
			 -EBADMSG);
	/* A changed length header (the associated data) is caught too. */
	memcpy(rec + LC_REC_HDR_LEN, "lock", 4);
	lc_rec_seal(&a.hs_tx, rec, 4);
	rec[0] ^= 1;
	assert_int_equal(lc_rec_open(&b.hs_rx, rec, 4 + LC_REC_TAG_LEN, &pt),
			 -EBADMSG);
	lc_hs_wipe(&a);
	lc_hs_wipe(&b);
	lc_hs_wipe(&a2);
	lc_hs_wipe(&b2);
}

/* ---- the record layer against libsodium and OpenSSL --------------------- */

/* OpenSSL's AES-256-OCB (96-bit nonce, 128-bit tag) of one record, in
 * place: seal (ct_len 0) or open (ct_len: ciphertext and tag); 0 or -1. */
static int openssl_ocb(const unsigned char *key, const unsigned char *nonce,
		       unsigned char *rec, size_t ptlen, size_t ct_len)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	unsigned char *p = rec + LC_REC_HDR_LEN;
	bool seal = !ct_len;
	size_t len = seal ? ptlen : ct_len - LC_REC_TAG_LEN;
	int n = 0, f = 0, ok;

	assert_non_null(x);
	ok = EVP_CipherInit_ex2(x, EVP_aes_256_ocb(), NULL, NULL, seal,
				NULL) == 1 &&
	     EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) == 1 &&
	     EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, LC_REC_TAG_LEN,
				 seal ? NULL : p + len) == 1 &&
	     EVP_CipherInit_ex2(x, NULL, key, nonce, seal, NULL) == 1 &&
	     EVP_CipherUpdate(x, NULL, &n, rec, LC_REC_HDR_LEN) == 1 &&
	     EVP_CipherUpdate(x, p, &n, p, (int)len) == 1 &&
	     EVP_CipherFinal_ex(x, p + n, &f) == 1 &&
	     (!seal || EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG,
					   LC_REC_TAG_LEN, p + len) == 1);
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

/* A reference view of one record: seal (or open) ptlen bytes at
 * rec + LC_REC_HDR_LEN with key and counter, as libsodium makes them (the
 * records before OpenSSL, auth.c's RECORDS paragraph), and for AES-OCB,
 * which libsodium lacks, as OpenSSL does. */
static size_t ref_seal(uint32_t suite, const unsigned char *key,
		       uint64_t counter, unsigned char *rec, size_t ptlen)
{
	unsigned char nonce[12] = { 0 };
	unsigned long long clen = 0;

	for (int i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(counter >> (8 * i));
	dlm_put_le32(rec, (uint32_t)(ptlen + LC_REC_TAG_LEN));
	if (suite == LC_SUITE_AESOCB) {
		assert_int_equal(openssl_ocb(key, nonce, rec, ptlen, 0), 0);
		clen = ptlen + LC_REC_TAG_LEN;
	} else if (suite == LC_SUITE_AESGCM)
		crypto_aead_aes256gcm_encrypt(rec + LC_REC_HDR_LEN, &clen,
					      rec + LC_REC_HDR_LEN, ptlen, rec,
					      LC_REC_HDR_LEN, NULL, nonce, key);
	else
		crypto_aead_chacha20poly1305_ietf_encrypt(
			rec + LC_REC_HDR_LEN, &clen, rec + LC_REC_HDR_LEN,
			ptlen, rec, LC_REC_HDR_LEN, NULL, nonce, key);
	return LC_REC_HDR_LEN + (size_t)clen;
}

static int ref_open(uint32_t suite, const unsigned char *key,
		    uint64_t counter, unsigned char *rec, size_t ct_len)
{
	unsigned char nonce[12] = { 0 };
	unsigned long long mlen = 0;

	for (int i = 0; i < 8; i++)
		nonce[i] = (unsigned char)(counter >> (8 * i));
	if (suite == LC_SUITE_AESOCB)
		return openssl_ocb(key, nonce, rec, 0, ct_len);
	if (suite == LC_SUITE_AESGCM)
		return crypto_aead_aes256gcm_decrypt(
			rec + LC_REC_HDR_LEN, &mlen, NULL, rec + LC_REC_HDR_LEN,
			ct_len, rec, LC_REC_HDR_LEN, nonce, key);
	return crypto_aead_chacha20poly1305_ietf_decrypt(
		rec + LC_REC_HDR_LEN, &mlen, NULL, rec + LC_REC_HDR_LEN,
		ct_len, rec, LC_REC_HDR_LEN, nonce, key);
}

/*
 * Each suite the machine runs, at record sizes around the AEADs' block
 * and bulk boundaries: a record lc_rec_seal() makes is byte for byte the
 * one libsodium (for AES-OCB, OpenSSL) makes with the same key and
 * counter, and theirs opens with lc_rec_open(), counter after counter.  A
 * changed byte, a direction used the wrong way, or a record out of turn
 * does not open, and a failed open leaves zeros, not unauthenticated
 * plaintext.
 */
static void test_record_layer(void **state)
{
	static const size_t sizes[] = { 1, 15, 16, 17, 64, 255, 256, 288,
					1056, 4099, 65536 + 7 };
	uint32_t suites[3] = { LC_SUITE_CHACHA, LC_SUITE_AESGCM,
			       LC_SUITE_AESOCB };
	size_t max = 65536 + 7 + LC_REC_OVERHEAD;
	unsigned char *a = malloc(max), *b = malloc(max), *pt = malloc(max);
	unsigned char key[LC_AEAD_KEY_LEN];
	struct lc_aead tx, rx;
	size_t len, got;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(pt);
	assert_true(sodium_init() >= 0);
	for (size_t i = 0; i < LC_AEAD_KEY_LEN; i++)
		key[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < max; i++)
		pt[i] = (unsigned char)(i * 13 + 5);
	assert_int_equal(lc_aead_init(&tx, 3, key, true), -EINVAL);
	for (int si = 0; si < 3; si++) {
		uint32_t suite = suites[si];

		if (!(lc_suites_local() & suite))
			continue;
		assert_int_equal(lc_aead_init(&tx, suite, key, true), 0);
		assert_int_equal(lc_aead_init(&rx, suite, key, false), 0);
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k];
			uint64_t ctr = tx.ae_counter;

			/* Ours, then the reference's, of the same record. */
			memcpy(a + LC_REC_HDR_LEN, pt, n);
			len = lc_rec_seal(&tx, a, n);
			assert_int_equal(len, n + LC_REC_OVERHEAD);
			memcpy(b + LC_REC_HDR_LEN, pt, n);
			assert_int_equal(ref_seal(suite, key, ctr, b, n), len);
			assert_memory_equal(a, b, len);
			/* The reference opens ours. */
			assert_int_equal(ref_open(suite, key, ctr, b,
						     len - LC_REC_HDR_LEN), 0);
			assert_memory_equal(b + LC_REC_HDR_LEN, pt, n);
			/* A sealing direction does not open. */
			assert_int_equal(lc_rec_open(&tx, a, len - LC_REC_HDR_LEN,
						     &got), -EBADMSG);
			/* One changed byte (the last of the tag, or of the
			 * length header): refused, zeros left. */
			a[len - 1 - (k % 2) * (len - 1)] ^= 0x40;
			assert_int_equal(lc_rec_open(&rx, a, len - LC_REC_HDR_LEN,
						     &got), -EBADMSG);
			for (size_t j = 0; j < n; j++)
				assert_int_equal(a[LC_REC_HDR_LEN + j], 0);
			assert_int_equal(rx.ae_counter, ctr);
			/* The reference's record, whole: opens, once. */
			memcpy(b + LC_REC_HDR_LEN, pt, n);
			ref_seal(suite, key, ctr, b, n);
			memcpy(a, b, len);
			assert_int_equal(lc_rec_open(&rx, b, len - LC_REC_HDR_LEN,
						     &got), 0);
			assert_int_equal(got, n);
			assert_memory_equal(b + LC_REC_HDR_LEN, pt, n);
			assert_int_equal(lc_rec_open(&rx, a, len - LC_REC_HDR_LEN,
						     &got), -EBADMSG);
		}
		/* A record from two counters ahead does not open either. */
		memcpy(b + LC_REC_HDR_LEN, pt, 100);
		ref_seal(suite, key, rx.ae_counter + 1, b, 100);
		assert_int_equal(lc_rec_open(&rx, b, 100 + LC_REC_TAG_LEN, &got),
				 -EBADMSG);
		lc_aead_wipe(&tx);
		lc_aead_wipe(&rx);
		assert_null(tx.ae_ctx);
		assert_null(tx.ae_ocb);
	}
	/* No cipher: nothing seals, nothing opens. */
	memset(&tx, 0, sizeof(tx));
	assert_int_equal(lc_rec_seal(&tx, a, 10), 0);
	assert_int_equal(lc_rec_open(&tx, a, 10 + LC_REC_TAG_LEN, &got),
			 -EBADMSG);
	free(a);
	free(b);
	free(pt);
}

/* ---- impostors on the node's own address --------------------------------- */

/* The finding: from node 2's address, a plaintext HELLO claiming node 2
 * with a new epoch.  Without a key it replaced the real connection. */
static void test_impostor_plaintext_hello(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, auth_config);
	unsigned char hello[LC_HELLO_LEN];
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = LC_FRAME_VERSION,
		.fh_kind = LC_KIND_HELLO, .fh_length = LC_HELLO_LEN,
		.fh_sender = 2, .fh_target = 1, .fh_seq = 1,
	};
	struct lc_stats before, after;
	int fd;

	(void)state;
	traffic(w, 100);
	before = stats(w, 0);
	w->w_eps[0].ep_log_needle = "unauthenticated lowcomms";
	lc_frame_encode(hello, &h);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN, 0xbad0e90c);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN + 4, 0);
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	send_all(fd, hello, sizeof(hello));
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_int_equal(w->w_eps[0].ep_log_hits, 1);
	/* The real node 2 is still the one connected, and traffic flows. */
	traffic(w, 100);
	after = stats(w, 0);
	assert_int_equal(after.st_peer_restarts, 0);
	assert_int_equal(after.st_conn_lost, before.st_conn_lost);
	assert_int_equal(after.st_established, before.st_established);
	assert_int_equal(after.st_rejected, before.st_rejected + 1);
	assert_int_equal(w->w_eps[0].ep_rx_total, 200);
	assert_clean(w);
	h_world_free(w);
}

/* An impostor that speaks the handshake, claims node 2, but has no key:
 * it gets a RESP and nothing else; its FIN is refused. */
static void test_impostor_without_key(void **state)
{
	struct h_world *w = h_world_new(2, LOOPBACK, auth_config);
	struct lc_keys wrong;
	unsigned char wrong_key[LC_KEY_LEN];
	unsigned char init[LC_HS_INIT_LEN], fin[LC_HS_FIN_LEN];
	unsigned char resp[LC_HS_RESP_LEN];
	struct lc_stats before, after;
	struct lc_hs hs;
	size_t got = 0;
	int fd;

	(void)state;
	traffic(w, 100);
	before = stats(w, 0);
	w->w_eps[0].ep_log_needle = NO_KEY_NEEDLE;
	h_test_key(wrong_key, 7);
	lc_keys_derive(wrong_key, &wrong);
	lc_hs_start_initiator(&hs, &wrong, 2, 1, LC_SUITE_CHACHA, init);
	fd = connect_from(LOOPBACK, w->w_eps[0].ep_port);
	send_all(fd, init, sizeof(init));
	for (int i = 0; i < 400 && got < sizeof(resp); i++) {
		ssize_t n = recv(fd, resp + got, sizeof(resp) - got,
				 MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		h_poll(w, 5);
	}
	assert_int_equal(got, sizeof(resp));
	/* It cannot check node 1's proof, and cannot make its own: send a
	 * FIN with a made-up MAC. */
	memcpy(fin, init, LC_HS_HDR_LEN);
	fin[5] = LC_HS_FIN;
	dlm_put_le32(fin + 8, LC_HS_FIN_LEN);
	dlm_put_le32(fin + LC_HS_HDR_LEN, 2);
	dlm_put_le32(fin + LC_HS_HDR_LEN + 4, 1);
	memset(fin + LC_HS_HDR_LEN + 8, 0x5a, LC_HS_MAC_LEN);
	send_all(fd, fin, sizeof(fin));
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_int_equal(w->w_eps[0].ep_log_hits, 1);
	traffic(w, 100);
	after = stats(w, 0);
	assert_int_equal(after.st_auth_failed, before.st_auth_failed + 1);
	assert_int_equal(after.st_conn_lost, before.st_conn_lost);
	assert_int_equal(after.st_peer_restarts, 0);
	assert_int_equal(w->w_eps[0].ep_rx_total, 200);
	assert_clean(w);
	h_world_free(w);
}

/* Node 3 has the wrong key: it never gets in (nor lets node 1 in), says
 * why, and nodes 1 and 2 go on undisturbed. */
static void test_wrong_key(void **state)
{
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;
	struct lc_stats st1, st3;

	(void)state;
	assert_non_null(w);
	h_world_init(w);
	w->w_config = auth_config;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	auth_config(&cfg, 3, LOOPBACK);
	cfg.cfg_key = h_key(3);
	assert_int_equal(h_ep_start(w, 2, LOOPBACK, 0, &cfg), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(h_ep_add_peers(w, i), 0);
	w->w_eps[0].ep_log_needle = NO_KEY_NEEDLE;
	w->w_eps[2].ep_log_needle = NO_KEY_NEEDLE;

	/* Node 3 -> node 1: node 1 answers, node 3 finds node 1's proof
	 * wrong; node 1 -> node 3: the same the other way. */
	assert_int_equal(h_send(w, 2, 0, 10), 10);
	assert_int_equal(h_send(w, 0, 2, 10), 10);
	assert_int_equal(h_send(w, 0, 1, 300), 300);
	assert_int_equal(h_send(w, 1, 0, 300), 300);
	assert_true(h_run_until(w, pair_acked, NULL, WAIT_MS));
	for (int i = 0; i < 50 && (w->w_eps[2].ep_log_hits < 2 ||
				   w->w_eps[0].ep_log_hits < 1); i++)
		h_poll(w, 20);
	st1 = stats(w, 0);
	st3 = stats(w, 2);
	assert_true(w->w_eps[2].ep_log_hits >= 2);
	assert_true(w->w_eps[0].ep_log_hits >= 1);
	assert_true(st3.st_auth_failed >= 1);
	assert_true(st1.st_auth_failed >= 1);
	assert_int_equal(st3.st_established, 0);
	assert_int_equal(w->w_eps[2].ep_rx_total, 0);
	assert_int_equal(w->w_eps[0].ep_rx_total, 300);
	assert_int_equal(lc_queue_len(w->w_eps[0].ep_lc, 3), 10);
	assert_int_equal(lc_queue_len(w->w_eps[2].ep_lc, 1), 10);
	assert_clean(w);

	/* With the right key, node 3's queue goes through, exactly once. */
	w->w_eps[2].ep_cfg = cfg;
	w->w_eps[2].ep_cfg.cfg_key = h_key(0);
	lc_destroy(w->w_eps[2].ep_lc);
	w->w_eps[2].ep_lc = NULL;
	w->w_eps[2].ep_tx_next[1] = 0;
	cfg = w->w_eps[2].ep_cfg;
	cfg.cfg_port = (uint16_t)w->w_eps[2].ep_port;
	assert_int_equal(h_ep_start(w, 2, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(h_ep_add_peers(w, 2), 0);
	assert_int_equal(h_send(w, 2, 0, 10), 10);
	assert_true(h_run_until(w, h_acked, NULL, WAIT_MS));
	assert_int_equal(w->w_eps[2].ep_rx_total, 10);
	assert_int_equal(w->w_eps[0].ep_rx_total, 310);
	assert_clean(w);
	h_world_free(w);
}

/* Node 1 offers ChaCha20-Poly1305 only (a CPU without AES-NI), or all
 * but AES-OCB (a node built before it), or everything: both directions
 * use ChaCha20-Poly1305, AES-GCM, AES-OCB (where this CPU runs AES well),
 * whatever node 2 could run, and traffic flows. */
static void cipher_choice(uint32_t offer, const char *needle)
{
	struct h_world *w = malloc(sizeof(*w));
	struct lc_config cfg;

	assert_non_null(w);
	h_world_init(w);
	w->w_config = auth_config;
	auth_config(&cfg, 1, LOOPBACK);
	cfg.cfg_suites = offer;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, &cfg), 0);
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(h_ep_add_peers(w, i), 0);
		w->w_eps[i].ep_log_needle = needle;
	}
	traffic(w, 2000);
	/* One line at each end of each connection (the needle is a debug
	 * line; the harness counts lines at every level). */
	assert_true(w->w_eps[0].ep_log_hits >= 1);
	assert_true(w->w_eps[1].ep_log_hits >= 1);
	assert_int_equal(w->w_eps[0].ep_rx_total, 2000);
	assert_int_equal(w->w_eps[1].ep_rx_total, 2000);
	assert_clean(w);
	h_world_free(w);
}

static void test_cipher_choice(void **state)
{
	bool aes = lc_suites_local() & LC_SUITE_AESOCB;

	(void)state;
	cipher_choice(LC_SUITE_CHACHA, "key (ChaCha20-Poly1305)");
	cipher_choice(LC_SUITE_CHACHA | LC_SUITE_AESGCM,
		      aes ? "key (AES-256-GCM)" : "key (ChaCha20-Poly1305)");
	cipher_choice(LC_SUITES_KNOWN,
		      aes ? "key (AES-256-OCB)" : "key (ChaCha20-Poly1305)");
}

/* ---- replays, through a recording proxy ------------------------------------ */

/*
 * Sits between node 1 (which knows node 2 at the proxy's port) and node 2.
 * Node 1 -> node 2 bytes are cut at record boundaries (after the INIT and
 * FIN of each connection) so that a whole record can be sent twice; the
 * bytes of the first connection are recorded.  Node 2 -> node 1 bytes pass
 * untouched.  Traffic is kept small, so the loopback buffers never fill.
 * In dribble mode (px_dribble) node 1's bytes go on px_dribble at a time,
 * one piece per pump whatever the record boundaries, and with px_tamper
 * one byte PX_TAMPER_AT into the next record longer than twice that is
 * flipped on its way.
 */
#define PX_BUF		(1 << 20)
#define PX_HS_BYTES	(LC_HS_INIT_LEN + LC_HS_FIN_LEN)
#define PX_TAMPER_AT	(40 * 1024)

struct proxy {
	int px_listen;
	int px_client;
	int px_server;
	int px_port;
	int px_dst_port;
	int px_conns;
	size_t px_hs_left;
	unsigned char px_buf[PX_BUF];
	size_t px_len;
	unsigned char px_rec[PX_BUF];	/* the first connection, node 1 -> 2 */
	size_t px_rec_len;
	bool px_replay;			/* send the next whole record twice */
	int px_replayed;
	/* Dribble mode; offsets count node 1's bytes on this connection. */
	size_t px_dribble;		/* bytes per pump, 0: off */
	size_t px_sent;			/* forwarded; px_buf: what follows */
	size_t px_next_rec;		/* where the next record starts */
	bool px_tamper;			/* flip a byte in the next long one */
	size_t px_tamper_at;		/* that byte, until flipped (0: none) */
	int px_tampered;
};

static void proxy_init(struct proxy *px, int dst_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	memset(px, 0, sizeof(*px));
	px->px_client = px->px_server = -1;
	px->px_dst_port = dst_port;
	px->px_listen = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(px->px_listen >= 0);
	assert_int_equal(inet_pton(AF_INET, LOOPBACK, &sa.sin_addr), 1);
	assert_int_equal(bind(px->px_listen, (struct sockaddr *)&sa,
			      sizeof(sa)), 0);
	assert_int_equal(listen(px->px_listen, 8), 0);
	assert_int_equal(getsockname(px->px_listen, (struct sockaddr *)&sa,
				     &len), 0);
	px->px_port = ntohs(sa.sin_port);
}

static void proxy_drop(struct proxy *px)
{
	if (px->px_client >= 0)
		close(px->px_client);
	if (px->px_server >= 0)
		close(px->px_server);
	px->px_client = px->px_server = -1;
	px->px_len = 0;
}

static void proxy_fini(struct proxy *px)
{
	proxy_drop(px);
	close(px->px_listen);
}

/* Send to a proxy socket; false if the other end is gone. */
static bool px_send(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/* Dribble mode: walk the record headers that have arrived, and flip the
 * byte to tamper with once it is there. */
static void proxy_scan(struct proxy *px)
{
	size_t at, n;

	for (;;) {
		if (px->px_tamper_at) {
			if (px->px_tamper_at >= px->px_sent + px->px_len)
				return;
			px->px_buf[px->px_tamper_at - px->px_sent] ^= 0x01;
			px->px_tamper_at = 0;
			px->px_tampered++;
		}
		at = px->px_next_rec - px->px_sent;
		if (at + LC_REC_HDR_LEN > px->px_len)
			return;
		n = LC_REC_HDR_LEN + dlm_get_le32(px->px_buf + at);
		if (px->px_tamper && n > 2 * PX_TAMPER_AT) {
			px->px_tamper = false;
			px->px_tamper_at = px->px_next_rec + PX_TAMPER_AT;
		}
		px->px_next_rec += n;
	}
}

/* Dribble mode: forward the next piece, never past a record header not yet
 * read whole or the byte still to be flipped. */
static void proxy_dribble(struct proxy *px)
{
	size_t end = px->px_sent + px->px_len, n;

	if (px->px_next_rec < end)
		end = px->px_next_rec;
	if (px->px_tamper_at && px->px_tamper_at < end)
		end = px->px_tamper_at;
	n = end - px->px_sent;
	if (n > px->px_dribble)
		n = px->px_dribble;
	if (!n)
		return;
	if (!px_send(px->px_server, px->px_buf, n)) {
		proxy_drop(px);
		return;
	}
	memmove(px->px_buf, px->px_buf + n, px->px_len - n);
	px->px_len -= n;
	px->px_sent += n;
}

/* Forward what can be forwarded of node 1's bytes. */
static void proxy_forward(struct proxy *px)
{
	size_t off = 0, n;
	bool record;

	while (off < px->px_len) {
		record = !px->px_hs_left;
		if (!record) {
			n = px->px_len - off < px->px_hs_left ?
			    px->px_len - off : px->px_hs_left;
			px->px_hs_left -= n;
		} else {
			if (px->px_len - off < LC_REC_HDR_LEN)
				break;
			n = LC_REC_HDR_LEN + dlm_get_le32(px->px_buf + off);
			if (px->px_len - off < n)
				break;
		}
		if (!px_send(px->px_server, px->px_buf + off, n)) {
			proxy_drop(px);
			return;
		}
		if (record && px->px_replay) {
			/* The same record again: a replay. */
			px->px_replay = false;
			px->px_replayed++;
			if (!px_send(px->px_server, px->px_buf + off, n)) {
				proxy_drop(px);
				return;
			}
		}
		off += n;
	}
	memmove(px->px_buf, px->px_buf + off, px->px_len - off);
	px->px_len -= off;
}

static void proxy_pump(struct proxy *px)
{
	unsigned char buf[65536];
	struct pollfd p[3] = {
		{ .fd = px->px_listen, .events = POLLIN },
		{ .fd = px->px_client, .events = POLLIN },
		{ .fd = px->px_server, .events = POLLIN },
	};
	ssize_t n;

	if (px->px_dribble && px->px_server >= 0)
		proxy_dribble(px);
	if (poll(p, 3, 0) <= 0)
		return;
	if ((p[0].revents & POLLIN) && px->px_client < 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET };

		px->px_client = accept(px->px_listen, NULL, NULL);
		assert_true(px->px_client >= 0);
		px->px_server = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(px->px_server >= 0);
		assert_int_equal(inet_pton(AF_INET, LOOPBACK, &sa.sin_addr), 1);
		sa.sin_port = htons((uint16_t)px->px_dst_port);
		assert_int_equal(connect(px->px_server, (struct sockaddr *)&sa,
					 sizeof(sa)), 0);
		px->px_hs_left = PX_HS_BYTES;
		px->px_len = 0;
		px->px_sent = 0;
		px->px_next_rec = PX_HS_BYTES;
		px->px_tamper_at = 0;
		px->px_conns++;
		return;
	}
	if (p[1].revents) {
		n = recv(px->px_client, px->px_buf + px->px_len,
			 PX_BUF - px->px_len, MSG_DONTWAIT);
		if (n <= 0) {
			proxy_drop(px);
			return;
		}
		if (px->px_conns == 1 &&
		    px->px_rec_len + (size_t)n <= sizeof(px->px_rec)) {
			memcpy(px->px_rec + px->px_rec_len,
			       px->px_buf + px->px_len, (size_t)n);
			px->px_rec_len += (size_t)n;
		}
		px->px_len += (size_t)n;
		if (px->px_dribble)
			proxy_scan(px);
		else
			proxy_forward(px);
	}
	if (p[2].revents) {
		n = recv(px->px_server, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0) {
			proxy_drop(px);
			return;
		}
		if (!px_send(px->px_client, buf, (size_t)n))
			proxy_drop(px);
	}
}

struct px_wait {
	struct proxy *pw_px;
	bool (*pw_done)(struct h_world *w, void *arg);
};

/* h_run_until's condition, pumping the proxy on every turn. */
static bool px_until(struct h_world *w, void *arg)
{
	struct px_wait *pw = arg;

	for (int i = 0; i < 8; i++)
		proxy_pump(pw->pw_px);
	return pw->pw_done(w, NULL);
}

/* Nodes 1 and 2; node 1 reaches node 2 through px. */
static struct h_world *proxied_world(struct proxy *px)
{
	struct h_world *w = malloc(sizeof(*w));
	struct sockaddr_storage ss;

	assert_non_null(w);
	h_world_init(w);
	w->w_config = auth_config;
	assert_int_equal(h_ep_start(w, 0, LOOPBACK, 0, NULL), 0);
	assert_int_equal(h_ep_start(w, 1, LOOPBACK, 0, NULL), 0);
	proxy_init(px, w->w_eps[1].ep_port);
	assert_int_equal(lc_addr_parse(LOOPBACK, (uint16_t)px->px_port, &ss),
			 0);
	assert_int_equal(lc_node_add(w->w_eps[0].ep_lc, 2, &ss, 1), 0);
	assert_int_equal(h_ep_add_peers(w, 1), 0);
	return w;
}

/* A record of a live connection sent a second time: node 2 kills the
 * connection and says why; node 1 reconnects, resends, and every message
 * arrives exactly once. */
static void test_replayed_record(void **state)
{
	static struct proxy px;
	struct h_world *w = proxied_world(&px);
	struct px_wait pw = { &px, h_acked };
	struct lc_stats st;

	(void)state;
	w->w_eps[1].ep_log_needle = REPLAY_NEEDLE;
	assert_int_equal(h_send(w, 0, 1, 200), 200);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	assert_int_equal(px.px_conns, 1);

	px.px_replay = true;
	assert_int_equal(h_send(w, 0, 1, 200), 200);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	assert_int_equal(px.px_replayed, 1);
	assert_int_equal(w->w_eps[1].ep_log_hits, 1);
	st = stats(w, 1);
	assert_int_equal(st.st_auth_failed, 1);
	/* Whatever the killed connection had not delivered, and what comes
	 * next, goes over a new one. */
	assert_int_equal(h_send(w, 0, 1, 200), 200);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	st = stats(w, 1);
	assert_int_equal(px.px_conns, 2);
	assert_int_equal(w->w_eps[1].ep_rx_total, 600);
	assert_int_equal(st.st_peer_restarts, 0);
	assert_clean(w);
	h_world_free(w);
	proxy_fini(&px);
}

/* Records cut anywhere by node 2's reads, a large one arriving over many
 * reads (its rest read straight into the record buffer): all delivered once
 * and in order.  Then a byte flipped deep inside a large record: node 2
 * refuses it, and the messages arrive exactly once over a new connection. */
#define CUT_MSGS	2000
#define CUT_MSG_EXTRA	1000
#define CUT_DRIBBLE	3001	/* odd, so cuts fall in headers too */

static void test_records_cut_by_reads(void **state)
{
	static struct proxy px;
	struct h_world *w = proxied_world(&px);
	struct px_wait pw = { &px, h_acked };
	struct lc_stats st;

	(void)state;
	px.px_dribble = CUT_DRIBBLE;
	w->w_eps[0].ep_msg_extra = CUT_MSG_EXTRA;
	w->w_eps[1].ep_log_needle = REPLAY_NEEDLE;
	assert_int_equal(h_send(w, 0, 1, CUT_MSGS), CUT_MSGS);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	st = stats(w, 1);
	assert_int_equal(st.st_auth_failed, 0);
	assert_int_equal(px.px_conns, 1);
	assert_int_equal(w->w_eps[1].ep_rx_total, CUT_MSGS);
	/* It did come in pieces. */
	assert_true(st.st_reads > CUT_MSGS * CUT_MSG_EXTRA / PX_BUF);

	px.px_tamper = true;
	assert_int_equal(h_send(w, 0, 1, CUT_MSGS), CUT_MSGS);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	assert_int_equal(px.px_tampered, 1);
	assert_int_equal(w->w_eps[1].ep_log_hits, 1);
	st = stats(w, 1);
	assert_int_equal(st.st_auth_failed, 1);
	assert_int_equal(px.px_conns, 2);
	assert_int_equal(w->w_eps[1].ep_rx_total, 2 * CUT_MSGS);
	assert_int_equal(st.st_peer_restarts, 0);
	assert_clean(w);
	h_world_free(w);
	proxy_fini(&px);
}

/* The first connection's bytes from node 1 (INIT, FIN, records), replayed
 * whole on a new connection from node 1's address: node 2 answers the INIT
 * with a fresh nonce, so the old FIN does not prove anything. */
static void test_replayed_handshake(void **state)
{
	static struct proxy px;
	struct h_world *w = proxied_world(&px);
	struct px_wait pw = { &px, h_acked };
	struct lc_stats before, after;
	int fd;

	(void)state;
	assert_int_equal(h_send(w, 0, 1, 200), 200);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	assert_true(px.px_rec_len > PX_HS_BYTES);
	before = stats(w, 1);
	w->w_eps[1].ep_log_needle = NO_KEY_NEEDLE;

	fd = connect_from(LOOPBACK, w->w_eps[1].ep_port);
	send_all(fd, px.px_rec, px.px_rec_len);
	assert_true(closed_by_peer(w, fd));
	close(fd);
	assert_int_equal(w->w_eps[1].ep_log_hits, 1);
	after = stats(w, 1);
	assert_int_equal(after.st_auth_failed, before.st_auth_failed + 1);
	assert_int_equal(w->w_eps[1].ep_rx_total, 200);

	/* The real connection was not touched and still works. */
	assert_int_equal(h_send(w, 0, 1, 200), 200);
	assert_true(h_run_until(w, px_until, &pw, WAIT_MS));
	after = stats(w, 1);
	assert_int_equal(after.st_conn_lost, before.st_conn_lost);
	assert_int_equal(px.px_conns, 1);
	assert_int_equal(w->w_eps[1].ep_rx_total, 400);
	assert_clean(w);
	h_world_free(w);
	proxy_fini(&px);
}

#if defined(__x86_64__)
/* zmm16-31 (AVX-512's; vzeroall leaves them) from and to 16 * 64 bytes. */
__attribute__((noinline, target("avx512f")))
static void zmm16_31_set(const unsigned char *from)
{
	__asm__ __volatile__(
		"vmovdqu64 0(%0), %%zmm16\n\t"
		"vmovdqu64 64(%0), %%zmm17\n\t"
		"vmovdqu64 128(%0), %%zmm18\n\t"
		"vmovdqu64 192(%0), %%zmm19\n\t"
		"vmovdqu64 256(%0), %%zmm20\n\t"
		"vmovdqu64 320(%0), %%zmm21\n\t"
		"vmovdqu64 384(%0), %%zmm22\n\t"
		"vmovdqu64 448(%0), %%zmm23\n\t"
		"vmovdqu64 512(%0), %%zmm24\n\t"
		"vmovdqu64 576(%0), %%zmm25\n\t"
		"vmovdqu64 640(%0), %%zmm26\n\t"
		"vmovdqu64 704(%0), %%zmm27\n\t"
		"vmovdqu64 768(%0), %%zmm28\n\t"
		"vmovdqu64 832(%0), %%zmm29\n\t"
		"vmovdqu64 896(%0), %%zmm30\n\t"
		"vmovdqu64 960(%0), %%zmm31"
		:: "r"(from) : "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
		    "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",
		    "xmm28", "xmm29", "xmm30", "xmm31", "memory");
}

__attribute__((noinline, target("avx512f")))
static void zmm16_31_get(unsigned char *to)
{
	__asm__ __volatile__(
		"vmovdqu64 %%zmm16, 0(%0)\n\t"
		"vmovdqu64 %%zmm17, 64(%0)\n\t"
		"vmovdqu64 %%zmm18, 128(%0)\n\t"
		"vmovdqu64 %%zmm19, 192(%0)\n\t"
		"vmovdqu64 %%zmm20, 256(%0)\n\t"
		"vmovdqu64 %%zmm21, 320(%0)\n\t"
		"vmovdqu64 %%zmm22, 384(%0)\n\t"
		"vmovdqu64 %%zmm23, 448(%0)\n\t"
		"vmovdqu64 %%zmm24, 512(%0)\n\t"
		"vmovdqu64 %%zmm25, 576(%0)\n\t"
		"vmovdqu64 %%zmm26, 640(%0)\n\t"
		"vmovdqu64 %%zmm27, 704(%0)\n\t"
		"vmovdqu64 %%zmm28, 768(%0)\n\t"
		"vmovdqu64 %%zmm29, 832(%0)\n\t"
		"vmovdqu64 %%zmm30, 896(%0)\n\t"
		"vmovdqu64 %%zmm31, 960(%0)"
		:: "r"(to) : "memory");
}
#endif

/* lc_secret_burn_stack() leaves no key in AVX-512's zmm16-31 (glibc's
 * memcpy uses them there; a signal frame would save them on the stack):
 * a pattern put in all sixteen is gone after it. */
/* secure_heap_size: a power of two in range, and only before OpenSSL is
 * set up (the earlier tests did that: the size in use is still taken). */
static void test_secure_heap_size(void **state)
{
	(void)state;
	lc_secret_setup();
	assert_int_equal(lc_secret_heap_size(3000), -EINVAL);
	assert_int_equal(lc_secret_heap_size(LC_SECRET_HEAP_MIN / 2), -EINVAL);
	assert_int_equal(lc_secret_heap_size((size_t)LC_SECRET_HEAP_MAX * 2),
			 -EINVAL);
	assert_int_equal(lc_secret_heap_size(LC_SECRET_HEAP_DEFAULT), 0);
	assert_int_equal(lc_secret_heap_size(LC_SECRET_HEAP_MIN), -EBUSY);
	assert_non_null(strstr(lc_secret_status(), "secure heap (1024 KiB)"));
}

static void test_burn_clears_zmm16_31(void **state)
{
	(void)state;
#if defined(__x86_64__)
	unsigned char pat[16 * 64], after[16 * 64], zeros[16 * 64];

	if (!__builtin_cpu_supports("avx512f")) {
		print_message("no AVX-512 here: nothing to clear\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (unsigned char)(0xa5 ^ i);
	memset(after, 0x5a, sizeof(after));
	memset(zeros, 0, sizeof(zeros));
	/* the probe is not blind: what is set reads back */
	zmm16_31_set(pat);
	zmm16_31_get(after);
	assert_memory_equal(after, pat, sizeof(pat));
	zmm16_31_set(pat);
	lc_secret_burn_stack();
	zmm16_31_get(after);
	assert_memory_equal(after, zeros, sizeof(zeros));
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_key_file_path),
		cmocka_unit_test(test_config_must_choose),
		cmocka_unit_test(test_handshake_rules),
		cmocka_unit_test(test_record_layer),
		cmocka_unit_test(test_impostor_plaintext_hello),
		cmocka_unit_test(test_impostor_without_key),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_cipher_choice),
		cmocka_unit_test(test_replayed_record),
		cmocka_unit_test(test_records_cut_by_reads),
		cmocka_unit_test(test_replayed_handshake),
		cmocka_unit_test(test_burn_clears_zmm16_31),
		cmocka_unit_test(test_secure_heap_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
