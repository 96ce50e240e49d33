/*
 * tests/test-lowcomms-frame.c: the frame format and the reassembler
 * (lowcomms/frame.c), with no sockets: byte layout, every split of a
 * stream, many frames per chunk, garbage, and each rejection rule.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lowcomms/frame.h"

#define LOCAL_ID	2
#define PEER_ID		1
#define MAX_LEN		1024
#define MAX_FRAMES	2048
#define STREAM_MAX	(256 * 1024)
#define GARBAGE_ROUNDS	2000

struct got_frame {
	struct lc_frame_hdr gf_hdr;
	size_t gf_len;
	unsigned char gf_payload[MAX_LEN];
};

struct collector {
	struct got_frame *co_frames;
	size_t co_n;
	int co_stop_at;		/* return an error on this frame, -1 never */
};

static int collect(void *arg, const struct lc_frame_hdr *h,
		   const unsigned char *payload, size_t len)
{
	struct collector *co = arg;
	struct got_frame *g;

	assert_true(co->co_n < MAX_FRAMES);
	assert_int_equal(len, h->fh_length - LC_FRAME_HDR_LEN);
	if (co->co_stop_at >= 0 && co->co_n == (size_t)co->co_stop_at)
		return -EIO;
	g = &co->co_frames[co->co_n++];
	g->gf_hdr = *h;
	g->gf_len = len;
	memcpy(g->gf_payload, payload, len);
	return 0;
}

static void collector_init(struct collector *co)
{
	co->co_frames = calloc(MAX_FRAMES, sizeof(*co->co_frames));
	assert_non_null(co->co_frames);
	co->co_n = 0;
	co->co_stop_at = -1;
}

static struct lc_frame_hdr make_hdr(uint8_t kind, uint32_t len, uint32_t seq)
{
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC,
		.fh_version = LC_FRAME_VERSION,
		.fh_kind = kind,
		.fh_type = kind == LC_KIND_DATA ? (uint16_t)(seq % 5 + 1) : 0,
		.fh_length = len,
		.fh_lsid = seq * 3,
		.fh_sender = PEER_ID,
		.fh_target = LOCAL_ID,
		.fh_seq = seq,
		.fh_ack = seq / 2,
	};
	return h;
}

/* Append a frame of the given kind and payload size to buf. */
static size_t put_frame(unsigned char *buf, uint8_t kind, size_t plen,
			uint32_t seq)
{
	struct lc_frame_hdr h = make_hdr(kind, (uint32_t)(LC_FRAME_HDR_LEN + plen),
					 seq);

	lc_frame_encode(buf, &h);
	for (size_t i = 0; i < plen; i++)
		buf[LC_FRAME_HDR_LEN + i] = (unsigned char)(seq + i);
	return LC_FRAME_HDR_LEN + plen;
}

/* A stream mixing the three kinds and many sizes; returns its length. */
static size_t make_stream(unsigned char *buf, size_t nframes, size_t *kinds)
{
	size_t len = 0;

	for (size_t i = 0; i < nframes; i++) {
		switch (i % 5) {
		case 0:
			len += put_frame(buf + len, LC_KIND_HELLO,
					 LC_HELLO_PAYLOAD_LEN, (uint32_t)i);
			break;
		case 1:
			len += put_frame(buf + len, LC_KIND_ACK, 0, (uint32_t)i);
			break;
		default:
			len += put_frame(buf + len, LC_KIND_DATA,
					 (i * 37) % 300, (uint32_t)i);
			break;
		}
		if (kinds)
			kinds[i] = i % 5;
	}
	return len;
}

static void check_stream_frames(const struct collector *co, size_t nframes)
{
	assert_int_equal(co->co_n, nframes);
	for (size_t i = 0; i < nframes; i++) {
		const struct got_frame *g = &co->co_frames[i];
		size_t plen = i % 5 == 0 ? LC_HELLO_PAYLOAD_LEN :
			      i % 5 == 1 ? 0 : (i * 37) % 300;

		assert_int_equal(g->gf_hdr.fh_seq, i);
		assert_int_equal(g->gf_hdr.fh_lsid, i * 3);
		assert_int_equal(g->gf_hdr.fh_ack, i / 2);
		assert_int_equal(g->gf_len, plen);
		for (size_t b = 0; b < plen; b++)
			assert_int_equal(g->gf_payload[b],
					 (unsigned char)(i + b));
	}
}

static void test_layout(void **state)
{
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC, .fh_version = 1, .fh_kind = 3,
		.fh_type = 0x0102, .fh_length = 0x03040506,
		.fh_lsid = 0x0708090a, .fh_sender = 0x0b0c0d0e,
		.fh_target = 0x0f101112, .fh_seq = 0x13141516,
		.fh_ack = 0x1718191a,
	};
	static const unsigned char want[LC_FRAME_HDR_LEN] = {
		'D', 'L', 'M', 'F', 1, 3, 0x02, 0x01,
		0x06, 0x05, 0x04, 0x03, 0x0a, 0x09, 0x08, 0x07,
		0x0e, 0x0d, 0x0c, 0x0b, 0x12, 0x11, 0x10, 0x0f,
		0x16, 0x15, 0x14, 0x13, 0x1a, 0x19, 0x18, 0x17,
	};
	unsigned char buf[LC_FRAME_HDR_LEN];
	struct lc_frame_hdr back;

	(void)state;
	lc_frame_encode(buf, &h);
	assert_memory_equal(buf, want, sizeof(want));
	lc_frame_decode(buf, &back);
	assert_memory_equal(&back, &h, sizeof(h));
	lc_frame_set_ack(buf, 0xdeadbeef);
	lc_frame_decode(buf, &back);
	assert_int_equal(back.fh_ack, 0xdeadbeef);
	assert_int_equal(back.fh_seq, 0x13141516);
}

static void test_seq_compare(void **state)
{
	(void)state;
	assert_true(lc_seq_before(1, 2));
	assert_false(lc_seq_before(2, 2));
	assert_true(lc_seq_before(0xfffffff0u, 5));
	assert_true(lc_seq_after(5, 0xfffffff0u));
	assert_false(lc_seq_after(0xfffffff0u, 5));
}

static void test_init_bounds(void **state)
{
	struct lc_reasm ra;

	(void)state;
	assert_int_equal(lc_reasm_init(&ra, LC_HELLO_LEN - 1, 0, 0), -EINVAL);
	assert_int_equal(lc_reasm_init(&ra, LC_FRAME_LEN_LIMIT + 1, 0, 0),
			 -EINVAL);
	assert_int_equal(lc_reasm_init(&ra, LC_HELLO_LEN, 0, 0), 0);
	lc_reasm_free(&ra);
}

/* The whole stream cut in two at every byte, and cut into single bytes. */
static void test_split_every_boundary(void **state)
{
	enum { NFRAMES = 40 };
	unsigned char *buf = malloc(STREAM_MAX);
	struct collector co;
	size_t len;

	(void)state;
	assert_non_null(buf);
	collector_init(&co);
	len = make_stream(buf, NFRAMES, NULL);
	for (size_t cut = 0; cut <= len; cut++) {
		struct lc_reasm ra;

		co.co_n = 0;
		assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID,
					       LOCAL_ID), 0);
		assert_int_equal(lc_reasm_feed(&ra, buf, cut, collect, &co), 0);
		assert_int_equal(lc_reasm_feed(&ra, buf + cut, len - cut,
					       collect, &co), 0);
		check_stream_frames(&co, NFRAMES);
		assert_int_equal(ra.ra_len, 0);
		lc_reasm_free(&ra);
	}
	/* Three pieces: every pair of cuts in the first frames. */
	for (size_t a = 0; a < 120; a++) {
		for (size_t b = a; b < 240; b += 3) {
			struct lc_reasm ra;

			co.co_n = 0;
			assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID,
						       LOCAL_ID), 0);
			assert_int_equal(lc_reasm_feed(&ra, buf, a, collect,
						       &co), 0);
			assert_int_equal(lc_reasm_feed(&ra, buf + a, b - a,
						       collect, &co), 0);
			assert_int_equal(lc_reasm_feed(&ra, buf + b, len - b,
						       collect, &co), 0);
			check_stream_frames(&co, NFRAMES);
			lc_reasm_free(&ra);
		}
	}
	/* One byte at a time. */
	{
		struct lc_reasm ra;

		co.co_n = 0;
		assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID,
					       LOCAL_ID), 0);
		for (size_t i = 0; i < len; i++)
			assert_int_equal(lc_reasm_feed(&ra, buf + i, 1,
						       collect, &co), 0);
		check_stream_frames(&co, NFRAMES);
		lc_reasm_free(&ra);
	}
	free(co.co_frames);
	free(buf);
}

static void test_many_frames_one_feed(void **state)
{
	enum { NFRAMES = MAX_FRAMES };
	unsigned char *buf = malloc(STREAM_MAX * 4);
	struct collector co;
	struct lc_reasm ra;
	size_t len;

	(void)state;
	assert_non_null(buf);
	collector_init(&co);
	len = make_stream(buf, NFRAMES, NULL);
	assert_true(len <= STREAM_MAX * 4);
	assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID, LOCAL_ID), 0);
	assert_int_equal(lc_reasm_feed(&ra, buf, len, collect, &co), 0);
	check_stream_frames(&co, NFRAMES);
	/* Whole frames in one chunk are never copied. */
	assert_null(ra.ra_buf);
	lc_reasm_free(&ra);
	free(co.co_frames);
	free(buf);
}

/*
 * Two good frames, then the bad one, then a good one.  Whatever the split,
 * the two good frames come out, the feed fails with want_errno and the
 * reason, and the reassembler stays failed.
 */
static void expect_rejected(const unsigned char *bad, size_t bad_len,
			    int want_errno, enum lc_frame_err want_err)
{
	unsigned char buf[4 * MAX_LEN];
	struct collector co;
	size_t len = 0, splits[] = { 0, 1, 7, 31, 32, 33 };

	collector_init(&co);
	len += put_frame(buf + len, LC_KIND_DATA, 10, 0);
	len += put_frame(buf + len, LC_KIND_ACK, 0, 1);
	memcpy(buf + len, bad, bad_len);
	len += bad_len;
	len += put_frame(buf + len, LC_KIND_DATA, 10, 3);

	for (size_t s = 0; s < sizeof(splits) / sizeof(splits[0]); s++) {
		size_t cut = 10 + LC_FRAME_HDR_LEN * 2 + splits[s];
		struct lc_reasm ra;
		int rv;

		co.co_n = 0;
		assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID,
					       LOCAL_ID), 0);
		rv = lc_reasm_feed(&ra, buf, cut, collect, &co);
		if (rv == 0)
			rv = lc_reasm_feed(&ra, buf + cut, len - cut, collect,
					   &co);
		assert_int_equal(rv, want_errno);
		assert_int_equal(ra.ra_err, want_err);
		assert_int_equal(co.co_n, 2);
		/* Sticky. */
		assert_int_equal(lc_reasm_feed(&ra, buf, len, collect, &co),
				 want_errno);
		assert_int_equal(co.co_n, 2);
		lc_reasm_free(&ra);
	}
	free(co.co_frames);
}

static void reject_with(void (*edit)(struct lc_frame_hdr *), size_t plen,
			uint8_t kind, int want_errno, enum lc_frame_err want_err)
{
	unsigned char bad[2 * MAX_LEN];
	struct lc_frame_hdr h = make_hdr(kind,
					 (uint32_t)(LC_FRAME_HDR_LEN + plen), 2);

	memset(bad, 0x5a, sizeof(bad));
	edit(&h);
	lc_frame_encode(bad, &h);
	expect_rejected(bad, LC_FRAME_HDR_LEN + plen, want_errno, want_err);
}

static void edit_magic(struct lc_frame_hdr *h) { h->fh_magic ^= 1; }
static void edit_version(struct lc_frame_hdr *h) { h->fh_version = 2; }
static void edit_kind0(struct lc_frame_hdr *h) { h->fh_kind = 0; }
static void edit_kind_hi(struct lc_frame_hdr *h) { h->fh_kind = LC_KIND_MAX + 1; }
static void edit_short(struct lc_frame_hdr *h) { h->fh_length = LC_FRAME_HDR_LEN - 1; }
static void edit_zero(struct lc_frame_hdr *h) { h->fh_length = 0; }
static void edit_huge(struct lc_frame_hdr *h) { h->fh_length = 0xffffffffu; }
static void edit_over(struct lc_frame_hdr *h) { h->fh_length = MAX_LEN + 1; }
static void edit_sender(struct lc_frame_hdr *h) { h->fh_sender = 77; }
static void edit_target(struct lc_frame_hdr *h) { h->fh_target = 77; }
static void edit_none(struct lc_frame_hdr *h) { (void)h; }

static void test_reject_rules(void **state)
{
	(void)state;
	reject_with(edit_magic, 4, LC_KIND_DATA, -EBADMSG, LC_FERR_MAGIC);
	reject_with(edit_version, 4, LC_KIND_DATA, -EPROTONOSUPPORT,
		    LC_FERR_VERSION);
	reject_with(edit_kind0, 4, LC_KIND_DATA, -EOPNOTSUPP, LC_FERR_KIND);
	reject_with(edit_kind_hi, 4, LC_KIND_DATA, -EOPNOTSUPP, LC_FERR_KIND);
	reject_with(edit_short, 0, LC_KIND_DATA, -EPROTO, LC_FERR_SHORT);
	reject_with(edit_zero, 0, LC_KIND_DATA, -EPROTO, LC_FERR_SHORT);
	/* HELLO without its payload is too short, ACK with one too long. */
	reject_with(edit_none, 0, LC_KIND_HELLO, -EPROTO, LC_FERR_SHORT);
	reject_with(edit_none, 4, LC_KIND_ACK, -EMSGSIZE, LC_FERR_LONG);
	reject_with(edit_none, LC_HELLO_PAYLOAD_LEN + 1, LC_KIND_HELLO,
		    -EMSGSIZE, LC_FERR_LONG);
	/* Too long is refused from the header alone, before the payload. */
	reject_with(edit_over, 0, LC_KIND_DATA, -EMSGSIZE, LC_FERR_LONG);
	reject_with(edit_huge, 0, LC_KIND_DATA, -EMSGSIZE, LC_FERR_LONG);
	reject_with(edit_sender, 4, LC_KIND_DATA, -EPERM, LC_FERR_SENDER);
	reject_with(edit_target, 4, LC_KIND_DATA, -EDESTADDRREQ,
		    LC_FERR_TARGET);
}

static void test_max_len_exact(void **state)
{
	unsigned char buf[MAX_LEN + 64];
	struct collector co;
	struct lc_reasm ra;
	size_t len;

	(void)state;
	collector_init(&co);
	len = put_frame(buf, LC_KIND_DATA, MAX_LEN - LC_FRAME_HDR_LEN, 9);
	assert_int_equal(lc_reasm_init(&ra, MAX_LEN, 0, 0), 0);
	assert_int_equal(lc_reasm_feed(&ra, buf, len - 1, collect, &co), 0);
	assert_int_equal(lc_reasm_feed(&ra, buf + len - 1, 1, collect, &co),
			 0);
	assert_int_equal(co.co_n, 1);
	assert_int_equal(co.co_frames[0].gf_len, MAX_LEN - LC_FRAME_HDR_LEN);
	lc_reasm_free(&ra);
	free(co.co_frames);
}

static void test_sender_any_until_set(void **state)
{
	unsigned char buf[256];
	struct collector co;
	struct lc_reasm ra;
	size_t len;

	(void)state;
	collector_init(&co);
	len = put_frame(buf, LC_KIND_ACK, 0, 1);
	assert_int_equal(lc_reasm_init(&ra, MAX_LEN, 0, LOCAL_ID), 0);
	assert_int_equal(lc_reasm_feed(&ra, buf, len, collect, &co), 0);
	lc_reasm_set_sender(&ra, PEER_ID + 1);
	assert_int_equal(lc_reasm_feed(&ra, buf, len, collect, &co), -EPERM);
	assert_int_equal(co.co_n, 1);
	lc_reasm_free(&ra);
	free(co.co_frames);
}

static void test_callback_stops(void **state)
{
	unsigned char buf[1024];
	struct collector co;
	struct lc_reasm ra;
	size_t len;

	(void)state;
	collector_init(&co);
	co.co_stop_at = 1;
	len = make_stream(buf, 4, NULL);
	assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID, LOCAL_ID), 0);
	assert_int_equal(lc_reasm_feed(&ra, buf, len, collect, &co), -EIO);
	assert_int_equal(ra.ra_err, LC_FERR_STOPPED);
	assert_int_equal(co.co_n, 1);
	lc_reasm_free(&ra);
	free(co.co_frames);
}

/* Random bytes, and valid streams with random bytes flipped: never a
 * crash, never a frame that breaks the rules. */
static void test_garbage(void **state)
{
	unsigned char *buf = malloc(STREAM_MAX);
	struct collector co;
	unsigned int seed = 12345;

	(void)state;
	assert_non_null(buf);
	collector_init(&co);
	for (int round = 0; round < GARBAGE_ROUNDS; round++) {
		struct lc_reasm ra;
		size_t len, pos = 0;
		int rv = 0;

		if (round % 2) {
			len = (size_t)(rand_r(&seed) % 4096);
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)rand_r(&seed);
			/* Half the time, a plausible header prefix. */
			if (round % 4 == 1 && len >= 6) {
				dlm_put_le32(buf, LC_FRAME_MAGIC);
				buf[4] = LC_FRAME_VERSION;
			}
		} else {
			len = make_stream(buf, 20, NULL);
			for (int f = 0; f < 3; f++)
				buf[rand_r(&seed) % len] ^=
					(unsigned char)(1 + rand_r(&seed) % 255);
		}
		co.co_n = 0;
		assert_int_equal(lc_reasm_init(&ra, MAX_LEN, PEER_ID,
					       LOCAL_ID), 0);
		while (pos < len && rv == 0) {
			size_t chunk = 1 + (size_t)rand_r(&seed) % 200;

			if (chunk > len - pos)
				chunk = len - pos;
			rv = lc_reasm_feed(&ra, buf + pos, chunk, collect, &co);
			pos += chunk;
		}
		assert_true(rv == 0 || rv == ra.ra_errno);
		assert_true(rv == 0 || ra.ra_err != LC_FERR_NONE);
		for (size_t i = 0; i < co.co_n; i++) {
			const struct lc_frame_hdr *h = &co.co_frames[i].gf_hdr;

			assert_int_equal(lc_frame_check(h, MAX_LEN, PEER_ID,
							LOCAL_ID),
					 LC_FERR_NONE);
		}
		lc_reasm_free(&ra);
	}
	free(co.co_frames);
	free(buf);
}

static void test_strings(void **state)
{
	(void)state;
	for (int e = LC_FERR_NONE; e <= LC_FERR_STOPPED; e++) {
		assert_non_null(lc_frame_err_str((enum lc_frame_err)e));
		assert_true(lc_frame_err_errno((enum lc_frame_err)e) <= 0);
	}
	assert_string_equal(lc_frame_kind_str(LC_KIND_DATA), "data");
	assert_string_equal(lc_frame_kind_str(0), "unknown");
	assert_string_equal(lc_frame_kind_str(200), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_seq_compare),
		cmocka_unit_test(test_init_bounds),
		cmocka_unit_test(test_split_every_boundary),
		cmocka_unit_test(test_many_frames_one_feed),
		cmocka_unit_test(test_reject_rules),
		cmocka_unit_test(test_max_len_exact),
		cmocka_unit_test(test_sender_any_until_set),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
