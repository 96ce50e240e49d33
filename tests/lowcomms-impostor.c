/*
 * tests/lowcomms-impostor.c: the attacker of issue 12, for the cluster
 * test (tests/test-cluster-impostor.sh).  Run on a node (as an unprivileged
 * user), it connects to a peer's dlmd port from this node's address and
 * claims to be this node:
 *
 *   lowcomms-impostor hello FROM TO PORT CLAIM TARGET
 *       the original attack: a plaintext HELLO with a new epoch;
 *   lowcomms-impostor handshake FROM TO PORT CLAIM TARGET KEYFILE
 *       the key handshake, with the key from KEYFILE if it can read it,
 *       else (said on stdout) with a random key; its FIN carries the MAC
 *       that key makes, right or wrong.
 *
 * It then waits (at most 5 s) for the peer to close the connection.  Exit
 * 0: refused (closed; with a key it could not prove, as it should be);
 * 1: still open, or the peer accepted our proof; 2: usage or setup error.
 *
 *   lowcomms-impostor forge FROM TO PORT CLAIM TARGET KEYFILE LSID
 *       a peer that holds the cluster key (issue 18): the handshake with
 *       it, a HELLO with a new epoch, then one engine message (an
 *       AUDIT_REPLY) for lockspace LSID whose fencing-token clock is near
 *       UINT64_MAX (core/token.c "A clock from the future").  Exit 0 once
 *       the peer acknowledged the frame (lowcomms delivered it; what the
 *       engine made of it the caller checks), 1 if it did not within 5 s
 *       or closed (a peer that knows CLAIM's epoch pauses ours and closes
 *       with no HELLO back: lowcomms.c, PEER RESTARTED), 2 on a usage or
 *       setup error.
 *
 *   lowcomms-impostor flood FROM TO PORT CLAIM TARGET SECONDS
 *       a local user flooding the peer's port from this node's address
 *       (lowcomms.c's bound on connections before their HELLO): for
 *       SECONDS, connection after connection, every other one sending a
 *       well-formed INIT claiming CLAIM (made with a random key: an INIT
 *       proves nothing), the rest silent; FLOOD_KEEP kept open at once,
 *       the oldest closed for each new one.  Says how many it made and
 *       how many the peer had closed by then; exit 0 if it made any.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "core/wire.h"
#include "lowcomms/auth.h"
#include "lowcomms/frame.h"

#define WAIT_MS		5000
#define FLOOD_KEEP	64	/* connections a flood keeps open at once */
/* plugin/comms.c: the lowcomms type of the engine's messages */
#define ENGINE_TYPE	1
/* the forged clock: near the end of the range, past every bound */
#define FORGED_CLOCK	(UINT64_MAX - 5)
#define FORGED_SEQ	1	/* our send base, our only DATA frame's seq */

static int usage(void)
{
	fprintf(stderr,
		"usage: lowcomms-impostor hello FROM TO PORT CLAIM TARGET\n"
		"       lowcomms-impostor handshake FROM TO PORT CLAIM TARGET KEYFILE\n"
		"       lowcomms-impostor forge FROM TO PORT CLAIM TARGET KEYFILE LSID\n"
		"       lowcomms-impostor flood FROM TO PORT CLAIM TARGET SECONDS\n");
	return 2;
}

static int connect_from(const char *from, const char *to, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || inet_pton(AF_INET, from, &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("impostor: socket/bind");
		return -1;
	}
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, to, &sa.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("impostor: connect");
		close(fd);
		return -1;
	}
	return fd;
}

/* Read up to len bytes (want all of them when exact), WAIT_MS at most.
 * Returns bytes read, or -1 when the peer closed or reset. */
static ssize_t read_some(int fd, unsigned char *buf, size_t len, bool exact)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) <= 0)
			break;
		n = recv(fd, buf + got, len - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		if (!exact)
			break;
	}
	return (ssize_t)got;
}

/* 0 if the peer closes within WAIT_MS. */
static int wait_closed(int fd)
{
	unsigned char buf[4096];

	for (;;) {
		ssize_t n = read_some(fd, buf, sizeof(buf), false);

		if (n < 0)
			return 0;
		if (n == 0)
			return 1;
	}
}

static int do_hello(int fd, uint32_t claim, uint32_t target)
{
	unsigned char hello[LC_HELLO_LEN];
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = LC_FRAME_VERSION,
		.fh_kind = LC_KIND_HELLO, .fh_length = LC_HELLO_LEN,
		.fh_sender = claim, .fh_target = target, .fh_seq = 1,
	};

	lc_frame_encode(hello, &h);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN, 0xbad0e90c);
	dlm_put_le32(hello + LC_FRAME_HDR_LEN + 4, 0);
	if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello))
		return 0;	/* already refused */
	return wait_closed(fd);
}

static int do_handshake(int fd, uint32_t claim, uint32_t target,
			const char *keyfile)
{
	unsigned char key[LC_KEY_LEN], init[LC_HS_INIT_LEN];
	unsigned char resp[LC_HS_RESP_LEN], fin[LC_HS_FIN_LEN];
	char why[256];
	struct lc_keys keys;
	struct lc_hs_msg m;
	crypto_auth_hmacsha512256_state st;
	struct lc_hs hs;
	enum lc_hs_err err;
	size_t used;

	if (lc_key_load(keyfile, key, why, sizeof(why)) < 0) {
		printf("impostor: %s: trying without the key\n", why);
		randombytes_buf(key, sizeof(key));
	} else {
		printf("impostor: read the key file\n");
	}
	lc_keys_derive(key, &keys);
	lc_hs_start_initiator(&hs, &keys, claim, target, lc_suites_local(),
			      init);
	if (send(fd, init, sizeof(init), MSG_NOSIGNAL) != sizeof(init))
		return 0;
	if (read_some(fd, resp, sizeof(resp), true) != sizeof(resp)) {
		printf("impostor: no RESP\n");
		return wait_closed(fd);
	}
	if (lc_hs_parse(resp, sizeof(resp), &m, &used) != LC_HSERR_NONE) {
		printf("impostor: bad RESP\n");
		return 2;
	}
	err = lc_hs_on_resp(&hs, &m, resp, fin);
	lc_hs_wipe(&hs);
	if (err == LC_HSERR_NONE) {
		printf("impostor: the peer's proof checks out: we hold the key\n");
		return 1;
	}
	printf("impostor: cannot check the peer's proof (%s); sending a FIN "
	       "with our own key's MAC\n", lc_hs_err_str(err));
	memset(fin, 0, sizeof(fin));
	memcpy(fin, init, LC_HS_HDR_LEN);
	fin[5] = LC_HS_FIN;
	dlm_put_le32(fin + 8, LC_HS_FIN_LEN);
	dlm_put_le32(fin + LC_HS_HDR_LEN, claim);
	dlm_put_le32(fin + LC_HS_HDR_LEN + 4, target);
	/* What an honest initiator with our key would send (auth.c's mac_i:
	 * HMAC over "I" || INIT || RESP || FIN without its MAC): with a
	 * wrong key, a well-formed proof of the wrong key. */
	crypto_auth_hmacsha512256_init(&st, keys.k_mac, sizeof(keys.k_mac));
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)"I", 1);
	crypto_auth_hmacsha512256_update(&st, init, sizeof(init));
	crypto_auth_hmacsha512256_update(&st, resp, sizeof(resp));
	crypto_auth_hmacsha512256_update(&st, fin, LC_HS_FIN_LEN - LC_HS_MAC_LEN);
	crypto_auth_hmacsha512256_final(&st, fin + LC_HS_HDR_LEN + 8);
	if (send(fd, fin, sizeof(fin), MSG_NOSIGNAL) != sizeof(fin))
		return 0;
	return wait_closed(fd);
}

/* A frame header of ours at p: sequence FORGED_SEQ, nothing acked. */
static void put_frame(unsigned char *p, uint8_t kind, uint16_t type,
		      size_t len, uint32_t claim, uint32_t target)
{
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = LC_FRAME_VERSION,
		.fh_kind = kind, .fh_type = type, .fh_length = (uint32_t)len,
		.fh_sender = claim, .fh_target = target, .fh_seq = FORGED_SEQ,
	};

	lc_frame_encode(p, &h);
}

/* Seal the frame at rec + LC_REC_HDR_LEN (len bytes) and send it. */
static int send_record(int fd, struct lc_aead *tx, unsigned char *rec,
		       size_t len)
{
	size_t n = lc_rec_seal(tx, rec, len);

	if (!n || send(fd, rec, n, MSG_NOSIGNAL) != (ssize_t)n)
		return -1;
	return 0;
}

/* Read and open the peer's next record into rec (room for max bytes of
 * plaintext and the overhead); its plaintext length, or -1. */
static ssize_t read_record(int fd, struct lc_aead *rx, unsigned char *rec,
			   size_t max)
{
	size_t ct, pt;

	if (read_some(fd, rec, LC_REC_HDR_LEN, true) != LC_REC_HDR_LEN)
		return -1;
	ct = lc_rec_ct_len(rec, max);
	if (!ct || read_some(fd, rec + LC_REC_HDR_LEN, ct, true) != (ssize_t)ct ||
	    lc_rec_open(rx, rec, ct, &pt))
		return -1;
	return (ssize_t)pt;
}

/* Does the plaintext p (len bytes: whole frames) acknowledge seq? */
static bool acks(const unsigned char *p, size_t len, uint32_t seq)
{
	while (len >= LC_FRAME_HDR_LEN) {
		struct lc_frame_hdr h;

		lc_frame_decode(p, &h);
		if (h.fh_length < LC_FRAME_HDR_LEN || h.fh_length > len)
			return false;
		if (h.fh_kind != LC_KIND_HELLO && !lc_seq_before(h.fh_ack, seq))
			return true;
		p += h.fh_length;
		len -= h.fh_length;
	}
	return false;
}

static int do_forge(int fd, uint32_t claim, uint32_t target,
		    const char *keyfile, uint32_t lsid)
{
	static unsigned char rec[LC_REC_OVERHEAD + 65536];
	unsigned char key[LC_KEY_LEN], init[LC_HS_INIT_LEN];
	unsigned char resp[LC_HS_RESP_LEN], fin[LC_HS_FIN_LEN];
	unsigned char *pt = rec + LC_REC_HDR_LEN;
	char why[256];
	struct lc_keys keys;
	struct lc_hs_msg m;
	struct lc_frame_hdr h;
	struct dlm_msg dm;
	struct lc_hs hs;
	int len, rv = 1;
	size_t used;

	if (lc_key_load(keyfile, key, why, sizeof(why)) < 0) {
		printf("impostor: %s: a forger needs the key\n", why);
		return 2;
	}
	lc_keys_derive(key, &keys);
	lc_hs_start_initiator(&hs, &keys, claim, target, lc_suites_local(),
			      init);
	if (send(fd, init, sizeof(init), MSG_NOSIGNAL) != sizeof(init) ||
	    read_some(fd, resp, sizeof(resp), true) != sizeof(resp) ||
	    lc_hs_parse(resp, sizeof(resp), &m, &used) != LC_HSERR_NONE ||
	    lc_hs_on_resp(&hs, &m, resp, fin) != LC_HSERR_NONE ||
	    send(fd, fin, sizeof(fin), MSG_NOSIGNAL) != sizeof(fin)) {
		printf("impostor: the key handshake failed\n");
		goto out;
	}
	printf("impostor: the key handshake passed\n");
	/* HELLO: a new epoch, our send base; the peer's epoch unknown */
	put_frame(pt, LC_KIND_HELLO, 0, LC_HELLO_LEN, claim, target);
	dlm_put_le32(pt + LC_FRAME_HDR_LEN, randombytes_random() | 1);
	dlm_put_le32(pt + LC_FRAME_HDR_LEN + 4, 0);
	if (send_record(fd, &hs.hs_tx, rec, LC_HELLO_LEN) ||
	    read_record(fd, &hs.hs_rx, rec, sizeof(rec) - LC_REC_OVERHEAD) <
	    LC_HELLO_LEN) {
		printf("impostor: no HELLO back\n");
		goto out;
	}
	lc_frame_decode(pt, &h);
	if (h.fh_kind != LC_KIND_HELLO) {
		printf("impostor: answered with frame kind %u\n", h.fh_kind);
		goto out;
	}
	printf("impostor: the peer took our HELLO\n");
	/* the engine message: a clock from the future */
	memset(&dm, 0, sizeof(dm));
	dm.m_type = DLM_MSG_AUDIT_REPLY;
	dm.m_lsid = lsid;
	dm.m_from = claim;
	dm.m_to = target;
	dm.m_status = -ENOENT;
	dm.m_grmode = dm.m_rqmode = dm.m_bastmode = -1;
	dm.m_clock = FORGED_CLOCK;
	len = dlm_msg_encode(&dm, pt + LC_FRAME_HDR_LEN,
			     sizeof(rec) - LC_REC_OVERHEAD - LC_FRAME_HDR_LEN);
	if (len < 0) {
		printf("impostor: cannot encode: %s\n", strerror(-len));
		rv = 2;
		goto out;
	}
	put_frame(pt, LC_KIND_DATA, ENGINE_TYPE, LC_FRAME_HDR_LEN + (size_t)len,
		  claim, target);
	if (send_record(fd, &hs.hs_tx, rec, LC_FRAME_HDR_LEN + (size_t)len)) {
		printf("impostor: cannot send the message\n");
		goto out;
	}
	printf("impostor: sent %s for lockspace %08x with clock %llx\n",
	       dlm_msg_type_str(dm.m_type), lsid,
	       (unsigned long long)FORGED_CLOCK);
	for (;;) {
		ssize_t n = read_record(fd, &hs.hs_rx, rec,
					sizeof(rec) - LC_REC_OVERHEAD);

		if (n < 0) {
			printf("impostor: no acknowledgement\n");
			break;
		}
		if (acks(pt, (size_t)n, FORGED_SEQ)) {
			printf("impostor: the peer acknowledged it\n");
			rv = 0;
			break;
		}
	}
out:
	lc_hs_wipe(&hs);
	sodium_memzero(key, sizeof(key));
	return rv;
}

/* Has the peer closed fd (EOF or reset)? */
static bool peer_closed(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

	if (n == 0)
		return true;
	if (n > 0)	/* a RESP waits: it may still close later */
		return false;
	return errno != EAGAIN && errno != EWOULDBLOCK;
}

static uint64_t flood_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int do_flood(const char *from, const char *to, int port, uint32_t claim,
		    uint32_t target, unsigned int secs)
{
	int fds[FLOOD_KEEP];
	uint64_t end = flood_now_ms() + (uint64_t)secs * 1000;
	unsigned long made = 0, inits = 0, closed = 0, failed = 0;
	unsigned char key[LC_KEY_LEN];
	struct lc_keys keys;

	for (int i = 0; i < FLOOD_KEEP; i++)
		fds[i] = -1;
	randombytes_buf(key, sizeof(key));
	lc_keys_derive(key, &keys);
	while (flood_now_ms() < end) {
		int *slot = &fds[made % FLOOD_KEEP];
		int fd;

		if (*slot >= 0) {
			closed += peer_closed(*slot);
			close(*slot);
			*slot = -1;
		}
		fd = connect_from(from, to, port);
		if (fd < 0) {
			failed++;
			usleep(10000);
			continue;
		}
		if (made % 2) {
			unsigned char init[LC_HS_INIT_LEN];
			struct lc_hs hs;

			lc_hs_start_initiator(&hs, &keys, claim, target,
					      lc_suites_local(), init);
			lc_hs_wipe(&hs);
			if (send(fd, init, sizeof(init), MSG_NOSIGNAL) ==
			    sizeof(init))
				inits++;
		}
		*slot = fd;
		made++;
	}
	for (int i = 0; i < FLOOD_KEEP; i++) {
		if (fds[i] < 0)
			continue;
		closed += peer_closed(fds[i]);
		close(fds[i]);
	}
	printf("impostor: flood: %lu connections (%lu with an INIT), %lu "
	       "closed by the peer, %lu connects failed\n", made, inits,
	       closed, failed);
	return made ? 0 : 1;
}

int main(int argc, char **argv)
{
	int fd, rv;
	uint32_t claim, target;

	if (argc < 7)
		return usage();
	claim = (uint32_t)strtoul(argv[5], NULL, 0);
	target = (uint32_t)strtoul(argv[6], NULL, 0);
	if (sodium_init() < 0)
		return 2;
	if (!strcmp(argv[1], "flood") && argc == 8)
		return do_flood(argv[2], argv[3], atoi(argv[4]), claim, target,
				(unsigned int)strtoul(argv[7], NULL, 0));
	fd = connect_from(argv[2], argv[3], atoi(argv[4]));
	if (fd < 0)
		return 2;
	if (!strcmp(argv[1], "hello") && argc == 7)
		rv = do_hello(fd, claim, target);
	else if (!strcmp(argv[1], "handshake") && argc == 8)
		rv = do_handshake(fd, claim, target, argv[7]);
	else if (!strcmp(argv[1], "forge") && argc == 9) {
		rv = do_forge(fd, claim, target, argv[7],
			      (uint32_t)strtoul(argv[8], NULL, 16));
		close(fd);
		printf("impostor: %s\n", rv == 0 ? "delivered" : rv == 1 ?
		       "NOT delivered" : "error");
		return rv;
	} else
		rv = usage();
	close(fd);
	printf("impostor: %s\n", rv == 0 ? "refused" : rv == 1 ? "NOT refused" :
	       "error");
	return rv;
}
