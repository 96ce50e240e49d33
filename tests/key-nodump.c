/*
 * tests/key-nodump.c: a process that holds every kind of key dlmd holds,
 * made the way dlmd makes them, for tests/test-key-nodump.sh to read as a
 * core dump would.
 *
 *   key-nodump KEYFILE
 *   key-nodump -f KEYFILE
 *
 * It loads the cluster key from KEYFILE into a lowcomms context (lc_new:
 * the derived handshake and session-derivation keys, comms.c's path), the
 * CPG seal key (dlmd_cm_key_new from the same read, as comms.c makes it
 * for cluster.c), and runs one
 * handshake per record cipher (ChaCha20-Poly1305, AES-256-GCM, AES-256-OCB
 * where this machine runs them) with lowcomms' handshake and record code,
 * sealing and opening a record each way (the session keys, inside
 * OpenSSL's and libgcrypt's cipher contexts).  First, with the cluster
 * key loaded as comms.c loads it and not yet given to lc_new, it prints
 *   loaded PID
 * and waits for a line on its standard input (the test reads it then:
 * the cluster key is held, and must be in secret memory only).  Then it
 * prints, for the test to derive the session keys from (the keys
 * themselves it never prints, nor computes):
 *   session SUITE INIT-HEX RESP-HEX     one a handshake
 *   ready PID
 * and waits for its standard input to close; then it frees everything
 * and exits 0.  Any failure: a line on stderr, exit 1.
 *
 * With -f it then fills OpenSSL's secure heap: it keys AES-256-GCM
 * contexts (lc_aead_init, as a connection's record layer does) until one
 * went to ordinary memory (lc_secret_fallbacks()), then FILL_MORE more
 * (at most FILL_MAX in all), and prints, before "status" and "ready":
 *   log MESSAGE                         what lc_secret_on_full() said
 *   fill CONTEXTS FALLBACKS             contexts keyed, fallbacks seen
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lowcomms/auth.h"
#include "lowcomms/lowcomms.h"
#include "plugin/cpgmsg.h"

#define NSUITES	3
#define FILL_MAX	20000	/* contexts: 1 MiB / 20000 < 64 bytes each */
#define FILL_MORE	16	/* keyed after the first fallback */

static int no_fd(void *arg, int fd, short events)
{
	(void)arg;
	(void)fd;
	(void)events;
	return 0;
}

static void no_fd_del(void *arg, int fd)
{
	(void)arg;
	(void)fd;
}

static int no_deliver(void *arg, uint32_t from, uint16_t type, uint32_t lsid,
		      const void *payload, size_t len)
{
	(void)arg;
	(void)from;
	(void)type;
	(void)lsid;
	(void)payload;
	(void)len;
	return 0;
}

static void no_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	(void)msg;
}

static const struct lc_ops ops = {
	.ops_deliver = no_deliver,
	.ops_fd_add = no_fd,
	.ops_fd_mod = no_fd,
	.ops_fd_del = no_fd_del,
	.ops_log = no_log,
};

static void on_full(void *arg, const char *msg)
{
	(void)arg;
	printf("log %s\n", msg);
}

/* AES-256-GCM contexts keyed until the secure heap was full (a key of
 * zeros: these are not keys the scan looks for); "fill N F". */
static bool fill(void)
{
	static const unsigned char zeros[LC_AEAD_KEY_LEN];
	struct lc_aead *ae = calloc(FILL_MAX, sizeof(*ae));
	int n = 0;

	if (!ae)
		return false;
	int more = FILL_MORE;

	while (n < FILL_MAX && (!lc_secret_fallbacks() || more-- > 0)) {
		if (lc_aead_init(&ae[n], LC_SUITE_AESGCM, zeros, true) < 0)
			break;
		n++;
	}
	printf("fill %d %lu\n", n, lc_secret_fallbacks());
	for (int i = 0; i < n; i++)
		lc_aead_wipe(&ae[i]);
	free(ae);
	return true;
}

static int die(const char *what)
{
	fprintf(stderr, "key-nodump: %s\n", what);
	return 1;
}

static void print_hex(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
}

/* One record from a to b: sealed, opened, the same bytes. */
static bool one_record(struct lc_aead *tx, struct lc_aead *rx)
{
	static const char text[] = "a lock request";
	unsigned char rec[LC_REC_OVERHEAD + sizeof(text)];
	size_t len, ptlen = 0;

	memcpy(rec + LC_REC_HDR_LEN, text, sizeof(text));
	len = lc_rec_seal(tx, rec, sizeof(text));
	return len && lc_rec_open(rx, rec, len - LC_REC_HDR_LEN, &ptlen) == 0 &&
	       ptlen == sizeof(text) &&
	       !memcmp(rec + LC_REC_HDR_LEN, text, sizeof(text));
}

/* A handshake between a (node 1) and b (node 2) that picks suite. */
static bool handshake(struct lc_hs *a, struct lc_hs *b,
		      const struct lc_keys *keys, uint32_t suite)
{
	unsigned char init[LC_HS_INIT_LEN], resp[LC_HS_RESP_LEN];
	unsigned char fin[LC_HS_FIN_LEN];
	struct lc_hs_msg m;
	size_t used;

	lc_hs_start_initiator(a, keys, 1, 2, suite, init);
	lc_hs_start_acceptor(b, keys, 2, suite);
	return lc_hs_parse(init, sizeof(init), &m, &used) == LC_HSERR_NONE &&
	       lc_hs_on_init(b, &m, init, resp) == LC_HSERR_NONE &&
	       lc_hs_parse(resp, sizeof(resp), &m, &used) == LC_HSERR_NONE &&
	       lc_hs_on_resp(a, &m, resp, fin) == LC_HSERR_NONE &&
	       lc_hs_parse(fin, sizeof(fin), &m, &used) == LC_HSERR_NONE &&
	       lc_hs_on_fin(b, &m, fin) == LC_HSERR_NONE &&
	       a->hs_tx.ae_suite == suite &&
	       one_record(&a->hs_tx, &b->hs_rx) &&
	       one_record(&b->hs_tx, &a->hs_rx);
}

int main(int argc, char **argv)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} suites[NSUITES] = {
		{ LC_SUITE_CHACHA, "chacha20-poly1305" },
		{ LC_SUITE_AESGCM, "aes-256-gcm" },
		{ LC_SUITE_AESOCB, "aes-256-ocb" },
	};
	struct lc_hs *hs = NULL;
	struct lc_config cfg;
	struct lc_keys *keys = NULL;
	unsigned char *ck = NULL, *cpg = NULL, *cluster;
	struct lc_ctx *ctx;
	char why[512], buf[64];
	uint32_t local;
	int rv, n = 0;

	bool do_fill = argc == 3 && !strcmp(argv[1], "-f");

	if (argc != 2 && !do_fill)
		return die("usage: key-nodump [-f] KEYFILE");
	if (do_fill)
		argv++;
	setvbuf(stdout, NULL, _IOLBF, 0);
	lc_secret_on_full(on_full, NULL);
	lc_config_default(&cfg);
	cfg.cfg_nodeid = 1;
	cfg.cfg_security = LC_SEC_KEY;
	/* comms.c's path: the cluster key in secret memory, read there from
	 * the file; the context derives its keys from it, then it goes. */
	cluster = lc_secret_alloc(LC_KEY_LEN);
	if (!cluster)
		return die("out of memory");
	if (lc_key_load(argv[1], cluster, why, sizeof(why)) < 0)
		return die(why);
	cfg.cfg_key = cluster;
	printf("loaded %ld\n", (long)getpid());
	if (read(STDIN_FILENO, buf, sizeof(buf)) <= 0 && !do_fill)
		return die("no go-on line on stdin");
	/* The CPG seal key from the same read (comms.c derives it, for
	 * cluster.c's seal_init to take). */
	cpg = dlmd_cm_key_new(cluster);
	if (!cpg)
		return die("out of memory");
	ctx = lc_new(&cfg, &ops, NULL);
	lc_secret_free(cluster);
	if (!ctx)
		return die("lc_new failed");
	/* lowcomms.c's handshakes, with keys derived as lc_new derives them
	 * (its own are private to it), in the same kind of memory. */
	ck = lc_secret_alloc(LC_KEY_LEN);
	keys = lc_secret_alloc(sizeof(*keys));
	hs = calloc(2 * NSUITES, sizeof(*hs));
	if (!ck || !keys || !hs)
		return die("out of memory");
	if (lc_key_load(argv[1], ck, why, sizeof(why)) < 0)
		return die(why);
	lc_keys_derive(ck, keys);
	lc_secret_free(ck);
	local = lc_suites_local();
	for (int i = 0; i < NSUITES; i++) {
		if (!(local & suites[i].bit))
			continue;
		if (!handshake(&hs[2 * n], &hs[2 * n + 1], keys, suites[i].bit))
			return die("a handshake or a record failed");
		printf("session %s ", suites[i].name);
		print_hex(hs[2 * n].hs_init, LC_HS_INIT_LEN);
		printf(" ");
		print_hex(hs[2 * n].hs_resp, LC_HS_RESP_LEN);
		printf("\n");
		n++;
	}
	if (do_fill && !fill())
		return die("out of memory");
	printf("status %s\n", lc_secret_status());
	printf("ready %ld\n", (long)getpid());
	/* Until the test has read us. */
	while ((rv = (int)read(STDIN_FILENO, buf, sizeof(buf))) != 0)
		if (rv < 0 && errno != EINTR)
			break;
	for (int i = 0; i < 2 * n; i++)
		lc_hs_wipe(&hs[i]);
	free(hs);
	lc_secret_free(keys);
	lc_secret_free(cpg);
	lc_destroy(ctx);
	return 0;
}
