/*
 * lowcomms/auth.h: the cluster key, the authentication handshake and the
 * sealed records of node-to-node traffic (handshake: libsodium; records:
 * OpenSSL's EVP AEADs, and libgcrypt's AES-OCB).
 *
 * Pure code apart from lc_key_load() (which reads a file): no sockets, no
 * clock; the only allocation is each direction's cipher context, made when
 * a handshake completes (lc_aead_init) and freed by lc_hs_wipe() /
 * lc_aead_wipe().  lowcomms.c, the unit tests and the fuzz target use
 * it.  The protocol and the choice of primitives are described at the top
 * of auth.c; lowcomms.c says where it sits in a connection's life.
 */
#ifndef DLMD_LOWCOMMS_AUTH_H
#define DLMD_LOWCOMMS_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lowcomms/lowcomms.h"

/* Key material in a key file: at least this much, at most that much. */
#define LC_KEYFILE_MIN		32
#define LC_KEYFILE_MAX		4096

/* "DLMK" read as a little-endian 32-bit number. */
#define LC_HS_MAGIC		0x4b4d4c44u
#define LC_HS_VERSION		1
/* magic u32, version u8, type u8, flags u16 (0), length u32 */
#define LC_HS_HDR_LEN		12
#define LC_HS_NONCE_LEN		32
#define LC_HS_MAC_LEN		32
/* Record ciphers (key schedule BLAKE2b and handshake MAC HMAC-SHA-512-256
 * in every case).  INIT offers a set, RESP names the one chosen. */
#define LC_SUITE_CHACHA		1u	/* ChaCha20-Poly1305 (IETF): always */
#define LC_SUITE_AESGCM		2u	/* AES-256-GCM: where the CPU has it */
#define LC_SUITE_AESOCB		4u	/* AES-256-OCB (RFC 7253): the same */
#define LC_SUITES_KNOWN		(LC_SUITE_CHACHA | LC_SUITE_AESGCM | \
				 LC_SUITE_AESOCB)
/* The suites this machine runs well: the AES ones only where the CPU has
 * AES-NI and carry-less multiply (libsodium's test), else ChaCha20-Poly1305
 * alone; without them AES is slower than ChaCha20 and harder to make
 * constant-time.  Of those both ends run, the acceptor chooses AES-OCB,
 * then AES-GCM, then ChaCha20-Poly1305 (lc_suite_choose()): the fastest
 * first (auth.c says why). */
uint32_t lc_suites_local(void);
/* The suite an acceptor chooses from the suites both ends run (a set that
 * includes LC_SUITE_CHACHA). */
uint32_t lc_suite_choose(uint32_t both);

enum lc_hs_type {
	LC_HS_INIT = 1,		/* initiator -> acceptor */
	LC_HS_RESP = 2,		/* acceptor -> initiator */
	LC_HS_FIN = 3,		/* initiator -> acceptor */
};

/* Whole lengths, header included. */
#define LC_HS_INIT_LEN	(LC_HS_HDR_LEN + 12 + LC_HS_NONCE_LEN)
#define LC_HS_RESP_LEN	(LC_HS_HDR_LEN + 12 + LC_HS_NONCE_LEN + LC_HS_MAC_LEN)
#define LC_HS_FIN_LEN	(LC_HS_HDR_LEN + 8 + LC_HS_MAC_LEN)
#define LC_HS_MAX_LEN	LC_HS_RESP_LEN

/* A sealed record: length (u32, ciphertext bytes incl. tag), ciphertext. */
#define LC_REC_HDR_LEN		4
#define LC_REC_TAG_LEN		16
#define LC_REC_OVERHEAD		(LC_REC_HDR_LEN + LC_REC_TAG_LEN)

enum lc_hs_err {
	LC_HSERR_NONE = 0,
	LC_HSERR_MORE,		/* not a whole message yet */
	LC_HSERR_PLAINTEXT,	/* a plaintext lowcomms frame (crypto = none) */
	LC_HSERR_MAGIC,
	LC_HSERR_VERSION,
	LC_HSERR_TYPE,		/* unknown, or not the one expected now */
	LC_HSERR_FLAGS,
	LC_HSERR_LENGTH,	/* not the length of its type */
	LC_HSERR_SUITE,
	LC_HSERR_SENDER,	/* not the node expected */
	LC_HSERR_TARGET,	/* not addressed to us */
	LC_HSERR_MAC,		/* does not hold the key, or a replay */
	LC_HSERR_STATE,		/* called in the wrong state (a bug) */
	LC_HSERR_CIPHER,	/* the record cipher could not be set up */
};

const char *lc_hs_err_str(enum lc_hs_err err);

/* A parsed handshake message; pointers into the parsed buffer. */
struct lc_hs_msg {
	uint8_t hm_type;
	uint32_t hm_suite;		/* INIT: offered set; RESP: chosen */
	uint32_t hm_sender;
	uint32_t hm_target;
	const unsigned char *hm_nonce;	/* INIT, RESP */
	const unsigned char *hm_mac;	/* RESP, FIN */
};

/*
 * Parse one handshake message at the start of buf.  Returns LC_HSERR_NONE
 * with *m filled and *used its length; LC_HSERR_MORE when len is short of
 * a whole message that is well-formed so far (*used: bytes needed in all);
 * else why the bytes are not a handshake message.
 */
enum lc_hs_err lc_hs_parse(const unsigned char *buf, size_t len,
			   struct lc_hs_msg *m, size_t *used);

/* The context-wide keys derived from the cluster key. */
struct lc_keys {
	unsigned char k_mac[32];	/* handshake MACs */
	unsigned char k_sess[32];	/* session key derivation */
};

/* One direction of a session: cipher and key (an OpenSSL cipher context,
 * or for AES-OCB a libgcrypt one, the key already expanded) and record
 * counter (the AEAD nonce).  Zeroed: no cipher yet (lc_aead_init() keys
 * it; lc_aead_wipe() frees it). */
struct evp_cipher_ctx_st;	/* OpenSSL's EVP_CIPHER_CTX */
struct gcry_cipher_handle;	/* libgcrypt's, gcry_cipher_hd_t */
struct lc_aead {
	struct evp_cipher_ctx_st *ae_ctx;
	struct gcry_cipher_handle *ae_ocb;
	uint64_t ae_counter;
	uint32_t ae_suite;
	bool ae_seal;			/* sealing (else opening) */
};

#define LC_AEAD_KEY_LEN		32

/* Key one direction for suite (one LC_SUITE_*), to seal records or to
 * open them, counter 0.  ae must be zeroed or wiped.  0, -EINVAL (unknown
 * suite) or -ENOMEM. */
int lc_aead_init(struct lc_aead *ae, uint32_t suite,
		 const unsigned char key[LC_AEAD_KEY_LEN], bool seal);
/* Free ae's cipher context (its key is wiped with it); ae is zeroed. */
void lc_aead_wipe(struct lc_aead *ae);

enum lc_hs_state {
	LC_HSS_IDLE = 0,
	LC_HSS_WAIT_INIT,	/* acceptor */
	LC_HSS_WAIT_RESP,	/* initiator */
	LC_HSS_WAIT_FIN,	/* acceptor */
	LC_HSS_DONE,
	LC_HSS_FAILED,
};

struct lc_hs {
	enum lc_hs_state hs_state;
	bool hs_initiator;
	uint32_t hs_local;
	uint32_t hs_peer;	/* expected (initiator) or claimed (acceptor) */
	uint32_t hs_suites;	/* we offer (initiator) or accept (acceptor) */
	const struct lc_keys *hs_keys;
	unsigned char hs_init[LC_HS_INIT_LEN];	/* the transcript */
	unsigned char hs_resp[LC_HS_RESP_LEN];
	struct lc_aead hs_tx;	/* set when DONE */
	struct lc_aead hs_rx;
};

/* Derive a context's keys from the cluster key (lc_config's cfg_key). */
void lc_keys_derive(const unsigned char cluster_key[LC_KEY_LEN],
		    struct lc_keys *keys);

/* Initiator: fill out with INIT for peer, offering suites (a set that
 * includes LC_SUITE_CHACHA).  hs is overwritten: it must be new or wiped
 * (a completed handshake holds cipher contexts; lc_hs_wipe() frees them).
 * The same holds for lc_hs_start_acceptor(). */
int lc_hs_start_initiator(struct lc_hs *hs, const struct lc_keys *keys,
			  uint32_t local, uint32_t peer, uint32_t suites,
			  unsigned char out[LC_HS_INIT_LEN]);
/* Acceptor: wait for INIT; suites: what we can run.  It chooses with
 * lc_suite_choose() from what both sides run. */
void lc_hs_start_acceptor(struct lc_hs *hs, const struct lc_keys *keys,
			  uint32_t local, uint32_t suites);
/* Acceptor, on INIT (raw: its bytes, m: parsed).  The caller has checked
 * that m->hm_sender may connect from where it did.  Fills out with RESP. */
enum lc_hs_err lc_hs_on_init(struct lc_hs *hs, const struct lc_hs_msg *m,
			     const unsigned char *raw,
			     unsigned char out[LC_HS_RESP_LEN]);
/* Initiator, on RESP: checks the acceptor's proof, fills out with FIN;
 * then DONE, hs_tx/hs_rx set (LC_HSERR_CIPHER if they cannot be). */
enum lc_hs_err lc_hs_on_resp(struct lc_hs *hs, const struct lc_hs_msg *m,
			     const unsigned char *raw,
			     unsigned char out[LC_HS_FIN_LEN]);
/* Acceptor, on FIN: checks the initiator's proof; then DONE. */
enum lc_hs_err lc_hs_on_fin(struct lc_hs *hs, const struct lc_hs_msg *m,
			    const unsigned char *raw);
/* Wipe the handshake's secrets and free its cipher contexts. */
void lc_hs_wipe(struct lc_hs *hs);

/*
 * Seal the plaintext at rec + LC_REC_HDR_LEN (ptlen bytes, not 0) in place:
 * writes the length header, encrypts, appends the tag.  rec must have room
 * for ptlen + LC_REC_OVERHEAD bytes.  Returns the record's whole length,
 * or 0 if the cipher failed (no cipher, ptlen out of range, or OpenSSL
 * itself: the connection must then be dropped).
 */
size_t lc_rec_seal(struct lc_aead *tx, unsigned char *rec, size_t ptlen);
/* The ciphertext length a record header announces, or 0 if it is out of
 * bounds (below a tag and one byte, or above max_pt + tag). */
size_t lc_rec_ct_len(const unsigned char hdr[LC_REC_HDR_LEN], size_t max_pt);
/* Open a whole record in place (rec: header + ct_len bytes).  Returns 0
 * with the plaintext at rec + LC_REC_HDR_LEN, *ptlen its length, or
 * -EBADMSG (forged, corrupted, replayed or out of order; the bytes that
 * did not authenticate are zeroed, never left as plaintext). */
int lc_rec_open(struct lc_aead *rx, unsigned char *rec, size_t ct_len,
		size_t *ptlen);

#endif /* DLMD_LOWCOMMS_AUTH_H */
