/*
 * tests/fuzz-lowcomms-frame.c: fuzz target for the lowcomms frame parser
 * and reassembler (lowcomms/frame.c).
 *
 * Input: byte 0 picks the reassembler's settings, byte 1 seeds how the rest
 * is cut into chunks, the rest is the byte stream.  The stream is fed once
 * whole and once in chunks; both runs must give the same frames (compared by
 * a running hash) and the same error, every frame must pass the header
 * rules, and a failed reassembler must stay failed.  Any difference traps.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lowcomms/frame.h"
#include "tests/fuzz-verdict.h"

#define SETTINGS_BYTES	2
#define SENDER_ID	1
#define LOCAL_ID	2
#define HASH_MUL	1099511628211ull	/* FNV-1a 64 prime */
#define HASH_INIT	14695981039346656037ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct run {
	uint64_t ru_hash;
	size_t ru_frames;
	size_t ru_bytes;
	size_t ru_max_len;
	uint32_t ru_sender;
	uint32_t ru_local;
};

static void check(int cond)
{
	if (!cond)
		__builtin_trap();
}

static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * HASH_MUL;
	return h;
}

static int on_frame(void *arg, const struct lc_frame_hdr *h,
		    const unsigned char *payload, size_t len)
{
	struct run *ru = arg;
	unsigned char enc[LC_FRAME_HDR_LEN];
	struct lc_frame_hdr back;

	check(lc_frame_check(h, ru->ru_max_len, ru->ru_sender, ru->ru_local) ==
	      LC_FERR_NONE);
	check(len + LC_FRAME_HDR_LEN == h->fh_length);
	lc_frame_encode(enc, h);
	lc_frame_decode(enc, &back);
	check(!memcmp(&back, h, sizeof(back)));
	ru->ru_hash = hash_bytes(ru->ru_hash, enc, sizeof(enc));
	ru->ru_hash = hash_bytes(ru->ru_hash, payload, len);
	ru->ru_frames++;
	ru->ru_bytes += h->fh_length;
	return 0;
}

static void setup(struct run *ru, uint8_t settings)
{
	static const size_t max_lens[4] = { LC_HELLO_LEN, 64, 4096, 65536 };

	memset(ru, 0, sizeof(*ru));
	ru->ru_hash = HASH_INIT;
	ru->ru_max_len = max_lens[settings & 3];
	ru->ru_sender = (settings & 4) ? SENDER_ID : 0;
	ru->ru_local = (settings & 8) ? LOCAL_ID : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lc_reasm whole, chunked;
	struct run rw, rc;
	uint32_t cut_state;
	size_t pos = 0;
	int ew, ec = 0;

	if (size < SETTINGS_BYTES)
		return 0;
	setup(&rw, data[0]);
	setup(&rc, data[0]);
	cut_state = data[1] | 0x100u;
	data += SETTINGS_BYTES;
	size -= SETTINGS_BYTES;

	check(lc_reasm_init(&whole, rw.ru_max_len, rw.ru_sender,
			    rw.ru_local) == 0);
	check(lc_reasm_init(&chunked, rc.ru_max_len, rc.ru_sender,
			    rc.ru_local) == 0);
	ew = lc_reasm_feed(&whole, data, size, on_frame, &rw);
	if (ew < 0)
		fuzz_refuse("lc_reasm_feed");
	while (pos < size && ec == 0) {
		size_t chunk;

		cut_state = cut_state * 1103515245u + 12345u;
		chunk = 1 + (cut_state >> 16) % 97;
		if (chunk > size - pos)
			chunk = size - pos;
		ec = lc_reasm_feed(&chunked, data + pos, chunk, on_frame, &rc);
		pos += chunk;
	}
	check(ew <= 0 && ec <= 0);
	check(ew == ec);
	check(whole.ra_err == chunked.ra_err);
	check(rw.ru_frames == rc.ru_frames && rw.ru_hash == rc.ru_hash);
	check(rw.ru_bytes <= size);
	if (ew == 0)
		check(whole.ra_len + rw.ru_bytes == size &&
		      chunked.ra_len == whole.ra_len);
	else
		check(lc_reasm_feed(&whole, data, size, on_frame, &rw) == ew &&
		      rw.ru_frames == rc.ru_frames);
	lc_reasm_free(&whole);
	lc_reasm_free(&chunked);
	return 0;
}
