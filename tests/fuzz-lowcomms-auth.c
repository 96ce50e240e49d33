/*
 * tests/fuzz-lowcomms-auth.c: fuzz target for the cluster-key handshake
 * parser and state machines, and the record opener (lowcomms/auth.c).
 *
 * Input: byte 0 picks what the bytes are fed to, the rest is a stream.
 *  - The stream is cut into handshake messages by lc_hs_parse() for as long
 *    as it parses.  Every message it accepts must have its type's exact
 *    length, and one byte less of it must not parse; a "need more" answer
 *    must ask for more than it was given.
 *  - Accepted messages drive an acceptor (INIT, then FIN) and an initiator
 *    (RESP) holding a fixed key: a FIN or RESP can never pass, because the
 *    fuzzer cannot make a MAC without the key.
 *  - What is left, if byte 0 says so, is opened as records with a session
 *    key the fuzzer does not know (ChaCha20-Poly1305, or AES-256-GCM or
 *    AES-256-OCB if byte 0 says so and the CPU has AES): nothing may open.
 * Once per process a real handshake between two parties is run to check
 * that the fixed key does work.  Any violation traps.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lowcomms/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
	if (!cond)
		__builtin_trap();
}

static struct lc_keys keys;

static size_t type_len(uint8_t type)
{
	return type == LC_HS_INIT ? LC_HS_INIT_LEN :
	       type == LC_HS_RESP ? LC_HS_RESP_LEN :
	       type == LC_HS_FIN ? LC_HS_FIN_LEN : 0;
}

/* The key works: a whole handshake between two honest parties, the
 * initiator offering `offer`, the acceptor able to run `can`. */
static void self_test(uint32_t offer, uint32_t can)
{
	unsigned char init[LC_HS_INIT_LEN], resp[LC_HS_RESP_LEN];
	unsigned char fin[LC_HS_FIN_LEN], rec[64];
	struct lc_hs a, b;
	struct lc_hs_msg m;
	size_t used, pt;

	lc_hs_start_initiator(&a, &keys, 1, 2, offer, init);
	lc_hs_start_acceptor(&b, &keys, 2, can);
	check(lc_hs_parse(init, sizeof(init), &m, &used) == LC_HSERR_NONE);
	check(lc_hs_on_init(&b, &m, init, resp) == LC_HSERR_NONE);
	check(lc_hs_parse(resp, sizeof(resp), &m, &used) == LC_HSERR_NONE);
	check(lc_hs_on_resp(&a, &m, resp, fin) == LC_HSERR_NONE);
	check(lc_hs_parse(fin, sizeof(fin), &m, &used) == LC_HSERR_NONE);
	check(lc_hs_on_fin(&b, &m, fin) == LC_HSERR_NONE);
	check(a.hs_tx.ae_suite == b.hs_rx.ae_suite);
	check(a.hs_tx.ae_suite == lc_suite_choose(offer & can));
	check(offer == LC_SUITE_CHACHA || can == LC_SUITE_CHACHA ||
	      (lc_suites_local() & LC_SUITE_AESOCB) == 0 ||
	      a.hs_tx.ae_suite == LC_SUITE_AESOCB);
	memcpy(rec + LC_REC_HDR_LEN, "hello", 5);
	used = lc_rec_seal(&a.hs_tx, rec, 5);
	check(used == 5 + LC_REC_OVERHEAD);
	check(lc_rec_ct_len(rec, 64) == 5 + LC_REC_TAG_LEN);
	check(lc_rec_open(&b.hs_rx, rec, 5 + LC_REC_TAG_LEN, &pt) == 0);
	check(pt == 5 && !memcmp(rec + LC_REC_HDR_LEN, "hello", 5));
	/* The same record again is a replay. */
	memcpy(rec + LC_REC_HDR_LEN, "hello", 5);
	a.hs_tx.ae_counter = 0;
	lc_rec_seal(&a.hs_tx, rec, 5);
	check(lc_rec_open(&b.hs_rx, rec, 5 + LC_REC_TAG_LEN, &pt) < 0);
	lc_hs_wipe(&a);
	lc_hs_wipe(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	unsigned char out[LC_HS_MAX_LEN], init[LC_HS_INIT_LEN];
	unsigned char rec[4096];
	struct lc_hs acc, ini;
	struct lc_hs_msg m;
	struct lc_aead rx;
	enum lc_hs_err err;
	uint8_t mode;
	size_t used, pos = 0;

	if (!ready) {
		unsigned char material[64], key[LC_KEY_LEN];

		memset(material, 0x42, sizeof(material));
		check(lc_key_derive(material, sizeof(material), key) == 0);
		lc_keys_derive(key, &keys);
		self_test(LC_SUITE_CHACHA, LC_SUITE_CHACHA);
		self_test(LC_SUITE_CHACHA, lc_suites_local());
		self_test(lc_suites_local(), LC_SUITE_CHACHA);
		self_test(lc_suites_local(), lc_suites_local());
		ready = 1;
	}
	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	lc_hs_start_acceptor(&acc, &keys, 2, lc_suites_local());
	lc_hs_start_initiator(&ini, &keys, 2, 1, lc_suites_local(), init);

	while (pos < size) {
		err = lc_hs_parse(data + pos, size - pos, &m, &used);
		if (err == LC_HSERR_MORE) {
			check(used > size - pos);
			break;
		}
		if (err != LC_HSERR_NONE)
			break;
		check(used == type_len(m.hm_type) && used <= size - pos);
		check(lc_hs_parse(data + pos, used - 1, &m, &used) ==
		      LC_HSERR_MORE);
		check(lc_hs_parse(data + pos, size - pos, &m, &used) ==
		      LC_HSERR_NONE);
		switch (m.hm_type) {
		case LC_HS_INIT:
			if (acc.hs_state == LC_HSS_WAIT_INIT)
				(void)lc_hs_on_init(&acc, &m, data + pos, out);
			else
				check(lc_hs_on_init(&acc, &m, data + pos,
						    out) != LC_HSERR_NONE);
			break;
		case LC_HS_RESP:
			check(lc_hs_on_resp(&ini, &m, data + pos, out) !=
			      LC_HSERR_NONE);
			break;
		case LC_HS_FIN:
			check(lc_hs_on_fin(&acc, &m, data + pos) !=
			      LC_HSERR_NONE);
			break;
		}
		pos += used;
	}
	check(acc.hs_state != LC_HSS_DONE && ini.hs_state != LC_HSS_DONE);

	if (mode & 1) {
		unsigned char sess[LC_AEAD_KEY_LEN];

		/* Any suite, by the mode byte. */
		uint32_t suite = (mode & 4) ? LC_SUITE_AESOCB :
				 (mode & 2) ? LC_SUITE_AESGCM : LC_SUITE_CHACHA;

		if (!(lc_suites_local() & suite))
			suite = LC_SUITE_CHACHA;
		memset(sess, 0x17, sizeof(sess));
		check(lc_aead_init(&rx, suite, sess, false) == 0);
		while (size - pos >= LC_REC_HDR_LEN) {
			size_t ct = lc_rec_ct_len(data + pos,
						  sizeof(rec) - LC_REC_OVERHEAD);
			size_t pt;

			if (!ct || size - pos < LC_REC_HDR_LEN + ct)
				break;
			memcpy(rec, data + pos, LC_REC_HDR_LEN + ct);
			check(lc_rec_open(&rx, rec, ct, &pt) < 0);
			check(rx.ae_counter == 0);
			pos += LC_REC_HDR_LEN + ct;
		}
		lc_aead_wipe(&rx);
	}
	lc_hs_wipe(&acc);
	lc_hs_wipe(&ini);
	return 0;
}
