/*
 * bench/bench-core.c - the lock engine alone, in process, one node:
 *
 *   - lock+unlock pairs per second on one resource and on a rotating set
 *     of resources;
 *   - for 10k, 1M and 10M held locks (each on its own resource, the worst
 *     case, and all on one resource): heap bytes per held lock, and the
 *     time of one lock+unlock pair on 1000 rotating resources meanwhile
 *     (the median of ROUNDS rounds), with its ratio to the 10k row (an
 *     operation must not grow much more expensive with the number of
 *     locks held; issue 14's goal is <= 1.3x at 10M, and <= 200 B per
 *     held lock at 1M).
 *
 * Where the bytes of a held lock on its own resource go (one node, so the
 * node is also the directory node; the sizes are printed by the bench):
 *   lkb (the lock)                     sizeof(struct dlm_lkb)
 *   rsb (its resource), name inline    sizeof(struct dlm_rsb) + key length
 *   dirent (directory record)          sizeof(struct dlm_dirent) + key
 *   hash buckets, lkb + rsb + dirent   8 B each per entry at load 1..1/2
 *                                      (4 B at load 2..1 since session 14)
 *   malloc: 8 B of header per chunk, rounded up to 16 B, for each of
 *   the three allocations.
 * Before issue 14's shrink (lkb 256, rsb 216, dirent 32 B): 272 + 240 +
 * 48 chunk bytes + 24 bucket bytes = 585 B per lock at 1M.  The first
 * shrink (lazy LVB buffers, narrower fields, no owner pointer, keys
 * allocated from offsetof) brought it to 489 B; deadlock detection and
 * fencing tokens then added 64 B to the lkb.
 *
 * Where the bytes go at 1M (Dec 6, before the side record; "h123456",
 * a 7-byte key; measured 553 B, on one resource 296 B):
 *   lkb 280 B, one malloc chunk of             288 B
 *     of which used only while the lock waits in a queue (deadlock
 *     probe list, age, probe clock, mark; audit list): 60 B + holes
 *     ranges (grrange, rqrange), whole-resource for most locks: 32 B
 *   rsb 176 B + key 7 B, one chunk of          192 B
 *   dirent 32 B + key 7 B, one chunk of         48 B
 *   buckets of ls_lkbtbl, ls_rsbtbl, ls_dirtbl: 2^20 pointers each
 *   for 1M entries                           3 x 8.4 B = 25 B
 *   malloc: 8 B header per chunk, rounded to 16 B: 8-15 B of each
 *   of the 3 chunks is overhead (counted in the chunk sizes above)
 *   total 288 + 192 + 48 + 25 = 553 B.
 * dlmd adds, per lock of a client (plugin/client.c; not in this bench):
 *   struct lkcb 72 B, a chunk of 80 B (AST addresses and arguments, the
 *   lksb address, held-answer ids, the wait clock, a free-list link),
 *   and its slot in the client's lkid map (u32map, 4 B key + 8 B value,
 *   load below 1/2: 2^21 slots for 1M locks, 25 B), about 105 B; with
 *   the daemon's other overheads bench-libdlm --rss saw ~610 B per lock.
 *
 * Then (issue 14, Dec 6) the fields a lock uses only while it waits in a
 * queue went to a side record (struct dlm_lkb_wait, 64 B, allocated
 * when a process copy enters a queue and freed when it leaves: 48 B
 * out of the lkb), its two ranges to a record allocated only for a
 * partial range (32 B out), and lkb_audit_ms into a hole: lkb 280 ->
 * 200 B, a malloc chunk of 208 B instead of 288 B.  Measured in one
 * sitting, before -> after, bytes per held lock:
 *                          10k        1M         10M
 *   own resources        569 -> 489  553 -> 473  583 -> 503
 *   one resource         301 -> 221  296 -> 216  301 -> 221
 * dlmd's resident bytes per held lock, bench-libdlm --rss 1000000 (NL,
 * own resources), the same sitting: 674 -> 594 B.
 * (on one resource a lock is its lkb chunk and its lkbtbl bucket: 208 +
 * 8 B; the pair times of the same runs, 10M/10k, were 2.51x -> 0.89x
 * on own resources and 1.21x -> 1.05x on one, on a machine loaded 12-14
 * deep: noise, not a result either way.)
 *
 * Then (issue 14, Dec 6, later) the directory record of a root this
 * node both directs and masters became the rsb itself (RESF_DIR: no
 * dirent, no ls_dirtbl bucket); the rsb lost its NL count and
 * res_rc_gen (200 -> 192 B), then its own toss link and toss time, which
 * an unused rsb keeps over its (then all zero) granted counts (192 ->
 * 176 B); the lkb lost lkb_unlock_lvb (an overlapping unlock's LVB
 * waits on ls_unlock_lvbs instead) and lkb_childless_next (lkb_astarg
 * links a purged parent on ls_childless): 200 -> 184 B.
 * Where the bytes go now at 1M on own resources (key "\7h123456", 8 B):
 *   lkb 184 B, one malloc chunk of             192 B
 *   rsb 176 B + key 8 B, one chunk of          192 B
 *   directory record: the rsb itself             0 B
 *   buckets of ls_lkbtbl, ls_rsbtbl: 2^20 pointers each
 *   for 1M entries                           2 x 8.4 B = 17 B
 *   total 192 + 192 + 17 = 401 B (measured 401).
 * On one resource: the lkb chunk and its bucket, 192 + 8 = 200 B.  At
 * 10M the keys are 9 B ("\8h1234567"): the rsb takes a 208 B chunk, the
 * buckets 2^24 for 10M entries, 2 x 13.4 B: 192 + 208 + 27 = 427 B.
 * Measured in one sitting, bytes per held lock, main -> dirent as rsb
 * -> rsb 192 B -> lkb 184 B -> rsb 176 B (each step back to back with
 * the one before):
 *            10k                              1M
 *   own      521 -> 459 -> 443 -> 427 -> 411  505 -> 449 -> 433 -> 417 -> 401
 *   one res  221 -> 221 -> 221 -> 205 -> 205  216 -> 216 -> 216 -> 200 -> 200
 *   10M (one run only, after the rsb went to 192 B): own resources 457,
 *   one resource 221; by the chunks the two later steps make that 425
 *   and 205 (not measured).
 * (main had grown from 473 to 505 B at 1M since the side record: the
 * rsb took remastering's fields, 176 -> 200 B.  Pair times, 10M/10k in
 * that one run: 2.05x on own resources, 1.35x on one, with the machine
 * loaded about 11 deep: not a measurement of the change.)
 * dlmd's resident bytes per held lock (bench-libdlm --rss 1000000, NL,
 * keys "rss-123456", 11 B: its rsb chunk was 224 B at 200 and 192 B,
 * 208 B at 176), the same steps: 610 -> 554 -> 554 -> 538 -> 522 B; of
 * that, dlmd's own lock records: struct lkcb 72 B (an 80 B chunk) and
 * its lkid map slot (~25 B).
 *
 * Then (issue 14, Dec 6, session 12) the padding went: the lkb's id
 * and remote id became its hash node's hash and spare word (the lkb
 * table hashes an id to itself), its modes, status and wait type 4-bit
 * fields, its parent pointer the parent's id: lkb 184 -> 168 B, a 176 B
 * chunk.  The rsb's flags and key length went into its node's spare
 * word, res_nranged into the tail of the granted-count union, its 32-bit
 * fields to the end: the key starts at 168, not 176, so keys of 9-16 B
 * take a 192 B chunk, not 208.  One sitting, load average 7-9:
 *                   10k          1M           10M
 *   own resources   411 -> 395   401 -> 385   425 -> 395 B
 *   one resource    205 -> 189   200 -> 184   205 -> 189 B
 * (10M on main: one run, the same sitting.)  dlmd with a libdlm client
 * (bench-libdlm --rss 1000000, 11 B keys): 506 -> 474 B.
 *
 * Then (issue 14, Dec 6, session 14) res_ls went: the rsb no longer
 * names its lockspace; every function that reaches an rsb already has
 * it (is_master, dlm_rsb_hold/release/free and lock.c's queue, grant
 * and LVB helpers take it; the compiler found every use).  rsb 168 ->
 * 160 B: the key starts at 160, so keys of up to 8 B take a 176 B
 * chunk (192 before) and keys of 9-24 B stay in 192 B.  One sitting,
 * 21:17-21:24 UTC, load average 3-7, main 673726e -> this step:
 *                   10k          1M           10M
 *   own resources   395 -> 379   385 -> 369   395 -> 393 B
 *   one resource    189 -> 189   184 -> 184   189 -> 189 B
 *   cpu per pair, 10M/10k, own resources: 1.18x -> 1.14x (noise).
 * dlmd with a libdlm client (bench-libdlm --rss 1000000, keys of 11 B,
 * whose rsb chunk stays 192 B): 474 -> 474 B, as the chunks predict.
 *
 * Then the hash tables grow at two elements a bucket, not one (htab.h):
 * a table's buckets cost 4-8 B an element instead of 8-16 (4.2 B at
 * 1M and 6.6 B at 10k and 10M, each of lkbtbl and rsbtbl).  Chains are
 * longer (<= 2 on average) but the array is half the size, and at 10M
 * that array's TLB misses were what made a pair dearer (see the README).
 * One sitting, 21:34-21:39 UTC, load average 5-8, previous step -> this:
 *                   10k          1M           10M
 *   own resources   379 -> 365   369 -> 360   393 -> 380 B
 *   one resource    189 -> 183   184 -> 180   189 -> 183 B
 * cpu per pair (--held, two runs each, ns): at 10k 186, 184 -> 194, 201;
 * at 10M 213, 228 -> 193, 200: 10M/10k 1.19x -> 1.00x.  dlmd with a
 * libdlm client (bench-libdlm --rss 1000000): 474 -> 466 B.
 *
 * Then (issue 14, Dec 7, session 15) the fold (core/solo.c, whose
 * essay has the design and its rules): a lone lock on a resource of
 * its own, on a node alone in its lockspace, granted at once, without
 * LVB, range, parent or PERSISTENT, is one struct dlm_solo:
 *     key node (next, hash, keylen)            16   ls_solotbl
 *     id node (next, lkid, exflags)            16   ls_soloids
 *     owner link (ow_solos)                    16
 *     ownerid, astarg, dl_waiter, token        32
 *     flags, directory event, grmode            9
 *     key                                     8-16
 *   89 B + key: a 112 B chunk for keys of up to 15 B, and 2 x 4.2 B
 *   of buckets at 1M: 120 B a lock (measured 120, rest 0).
 * Unfolded into an rsb and an lkb, whole or nothing (-ENOMEM changing
 * nothing), by anything else that reaches it: a second lock on the
 * name, a child, a conversion, an unlock with a value or a cancel, a
 * recovery's start, any message, a dump.  Unlocked, it stays as its
 * resource tossed (grmode IV, in ls_solotbl only) until toss_ms or
 * max_tossed, as an unused rsb does; freed at once instead, the pair
 * at 10M walked cold chains of ls_solotbl to find a fresh name absent
 * (77% of its samples) and took 1.5x its time at 10k.  One sitting,
 * 00:36-00:52 UTC, load 4-13, --no-fold -> fold -> fold with the toss:
 *                   10k          1M           10M
 *   own resources   365 -> 125   360 -> 120   380 -> 125 B
 *   one resource    183 -> 183   180 -> 180   183 -> 183 B
 *   cpu per pair, 10M/10k, own resources: 1.11x -> 1.50x -> 1.13x
 *   (--held runs, two each: folded 1.20x, 1.22x, at 149-159 ns against
 *   250-252 ns unfolded at 10M).
 * dlmd with a libdlm client (bench-libdlm --rss 1000000, 11 B keys):
 * 466 -> 210 B (fold_lone_locks 0 -> 1): the solo's 112 B chunk and
 * 8.4 B of buckets, dlmd's lkcb (64 B chunk) and lkid map slot (25 B).
 *
 * Then (issue 14, Dec 7, session 19) the time, not the bytes: a lock
 * no longer asks whether the id the counter hands it is in use until
 * the counter wraps (resource.c dlm_lkid_new): that look read the cold
 * held lock in the fresh id's bucket and made a PR pair beside 1M NL
 * holders 1.43x-1.64x its 10k CPU (0.99x-1.04x after, seven runs each,
 * bench/README.md "What grows with the locks held"); bucket arrays of
 * 4 MB or more ask for huge pages (htab.c), no byte more.
 *
 * Not covered by the fold (the goal's 200 B holds only where it
 * applies): a lockspace with other members (a solo would have to unfold
 * in every message handler that names a resource: LOOKUP, REQUEST,
 * DIR_MOVE and the remastering messages, the directory rebuild); locks
 * with an LVB, a range, a parent or PERSISTENT; a resource with two
 * locks (180 B a lock, its lkb); dlmd's own 89 B a lock.
 *
 * Smaller single steps left for the unfolded lkb and rsb, in order of
 * size:
 *   - the lkb's remote-operation fields (lkb_waiter, lkb_wait_nodeid,
 *     lkb_unlock_flags: 24 B, used only while a reply is awaited) into
 *     a side record; add_waiter() must then be able to fail before the
 *     send, and its callers with it (lock.c); lkb_audit_ms, used only by
 *     waiters and blocked locks, could ride along (lkb 168 -> 140 B: a
 *     144 B chunk, -32 B);
 *   - the rsb's recovery-only res_new_nodeid and remastering's 12 B
 *     (rsb 160 -> 144: 8 B keys in a 160 B chunk, -16 B);
 *   - lkb_astarg (8 B): dlmd keeps its own per-lock record and passes
 *     no cookie; the simulator and unit tests check it;
 *   - malloc's 8 B per chunk (a slab of fixed-size lkbs; it would hide
 *     use-after-free from the ASan build unless off there);
 *   - dlmd's lkid map (25 B a lock at 1M): the lkb could carry dlmd's
 *     struct lkcb pointer (lkb_astarg) and dlmd find it through the
 *     engine, if it can walk a client's locks there (its owner list).
 *
 * Each heap row is followed by its breakdown, measured on the live
 * objects (malloc_usable_size of one held lock's lkb and rsb and of any
 * side record, each table's buckets per lock); "rest" is what the
 * measured total leaves over (0 when the list is complete).  Dec 6,
 * session 14, 1M on own resources: lkb 168 B in a 176 B chunk, rsb
 * 160 + 8 B in a 176 B chunk, lkbtbl and rsbtbl 4.2 B each, rest 0:
 * 360 B.  Before that session's two steps (rsb 168 + 8 B in 192 B,
 * buckets 8.4 B each: 385 B), dlmd added,
 * with a libdlm client (bench-libdlm --rss 1000000, keys "rss-123456",
 * 11 B, the rsb's chunk 192 B): struct lkcb 56 B in a 64 B chunk and its
 * lkid map slot (u32map, 12 B a slot at load 1/4..1/2, 25 B a lock at
 * 1M), 176 + 192 + 17 + 64 + 25 = 474 B, measured 474 B (506 before
 * the session-12 shrink, with 192 + 208 for lkb and rsb).
 * Session 15: dlmd's records in a slab (plugin/slab.c, 56 B each, no
 * malloc chunk) and its map's slot 8 B (u32idx, 16.8 B a lock at 1M):
 * 73 B where it was 89; with the fold, bench-libdlm --rss 1000000
 * measured 194 B per lock against 210 B (bench/README.md).
 *
 * Times come from CLOCK_MONOTONIC and vary with the machine; compare the
 * rows of one run with each other, not with another machine's numbers.
 * The 10M rows need about 6 GB of memory and a minute; --no-10m leaves
 * them out, --quick runs 10k and 100k only.
 * --held N runs only the rows of N held locks (to profile one size).
 * --no-fold runs the engine with lone locks unfolded (core/solo.c).
 * --members N: a lockspace of N members (the others never answer), every
 * name one this node directs: lone locks fold there too since session 16
 * (core/solo.c, "Shared lockspaces").
 * --unfold N: N locks held, then all unfolded at once as a recovery start
 * did before session 16 (dlm_solo_unfold_all; now a start unfolds only
 * the names a joiner takes, core/solo.c "Recovery"): its time and heap.
 * --spread (with --members N): the names are spread over every member's
 * directory, as a node's names are; the other members answer each
 * LOOKUP with this node as master (a directory node with no record), so
 * a lone lock on a name another member directs folds once its lookup is
 * answered (core/solo.c, "Names other nodes direct", session 17).
 * --client-ids: every lock takes its id from a block reserved for its
 * owner, in sequence, as dlmd's clients do (core/lock.c ib_fresh).
 * Usage: bench-core [--members N [--spread]] [--client-ids] [--unfold N |
 *                   [--no-fold] [--quick | --no-10m | --held N]]
 */
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/core_internal.h"

static uint64_t nasts;

/* --spread: names spread over every member's directory; the other
 * members answer each LOOKUP as a directory node with no record does
 * (the asker becomes master: this node), after the call that sent it
 * (b_deliver).  Any other message is unexpected. */
static int spread;
static struct dlm_core *core;
#define B_QMAX	64
static unsigned char b_q[B_QMAX][DLM_WIRE_MAX_LEN];
static size_t b_qlen[B_QMAX];
static uint32_t b_qfrom[B_QMAX];
static unsigned b_qn;

static void b_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct dlm_msg m;
	int n;

	(void)ctx;
	if (!spread || dlm_msg_decode(buf, len, &m, NULL) ||
	    m.m_type != DLM_MSG_LOOKUP || b_qn == B_QMAX) {
		fprintf(stderr, "bench-core: unexpected message\n");
		exit(1);
	}
	m.m_type = DLM_MSG_LOOKUP_REPLY;
	m.m_status = 0;
	m.m_nodeid = 1;
	m.m_from = to;
	m.m_to = 1;
	m.m_clock = 0;
	n = dlm_msg_encode(&m, b_q[b_qn], sizeof(b_q[b_qn]));
	if (n < 0) {
		fprintf(stderr, "bench-core: cannot encode a lookup reply\n");
		exit(1);
	}
	b_qlen[b_qn] = (size_t)n;
	b_qfrom[b_qn++] = to;
}

static void b_deliver(void)
{
	unsigned i;

	for (i = 0; i < b_qn; i++)
		if (dlm_core_receive(core, b_qfrom[i], b_q[i], b_qlen[i])) {
			fprintf(stderr, "bench-core: lookup reply refused\n");
			exit(1);
		}
	b_qn = 0;
}

static void b_ast(void *ctx, const struct dlm_ast *a)
{
	(void)ctx;
	if (a->type == DLM_AST_COMP && a->status != 0 &&
	    a->status != -DLM_EUNLOCK) {
		fprintf(stderr, "bench-core: unexpected status %d\n", a->status);
		exit(1);
	}
	nasts++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static struct dlm_ls *ls;
/* lone locks folded with their resources (core/solo.c); --no-fold: not */
static int fold = 1;
/* --members N: the lockspace has members 1..N, this node 1; the other
 * nodes never answer, so every name the bench locks is one this node
 * directs (directed_name): the case solo.c folds in a shared lockspace */
static uint32_t nmembers = 1;
/* the 1000 rotating names of the pairs, and the name of "one" */
static char pair_names[1000][16];
static unsigned pair_lens[1000];
static char one_name[16];
static unsigned one_len;

/* The i-th name "<prefix><j>" (j = 0, 1, ...) whose directory node is
 * this one, into buf (len bytes); its length.  *next: where the search
 * for the next goes on (the caller's counter, from 0). */
static unsigned directed_name(const char *prefix, size_t *next, char *buf,
			      size_t len)
{
	uint32_t members[16], i;

	for (i = 0; i < nmembers; i++)
		members[i] = i + 1;
	for (;;) {
		unsigned char key[40];
		unsigned n = (unsigned)snprintf(buf, len, "%s%zu", prefix,
						(*next)++);

		if (nmembers == 1 || spread)
			return n;
		key[0] = (unsigned char)n;
		memcpy(key + 1, buf, n);
		if (dlm_dir_nodeid_of(members, nmembers,
				      dlm_hash_bytes(key, n + 1u)) == 1)
			return n;
	}
}

/* --client-ids: every lock takes its id as dlmd's clients take theirs
 * (libdlm lh_id_next), in sequence from a block of DLM_IDS_BLOCK
 * reserved for its owner (owners 1-3 here), a new block when one is
 * used up; else the engine hands the ids out */
static int client_ids;
static uint32_t blk_next[4], blk_end[4];

static void setup(void)
{
	static const struct dlm_core_ops ops = { .send = b_send, .ast = b_ast };
	struct dlm_core_config cfg = { .our_nodeid = 1, .toss_ms = 10000,
				       .fold = (uint32_t)fold };
	uint32_t members[16], i;

	for (i = 0; i < nmembers; i++)
		members[i] = i + 1;
	memset(blk_next, 0, sizeof(blk_next));
	memset(blk_end, 0, sizeof(blk_end));
	core = dlm_core_new(&cfg, &ops, NULL);
	if (!core || dlm_core_ls_create(core, "bench", members, nmembers,
					NULL, &ls)) {
		fprintf(stderr, "bench-core: setup failed\n");
		exit(1);
	}
}

static void teardown(void)
{
	dlm_core_free(core);
	core = NULL;
	ls = NULL;
}

static uint32_t lock1(const char *name, unsigned len, int mode, uint64_t owner)
{
	struct dlm_lock_req rq = { .mode = mode, .name = name, .namelen = len,
				   .owner = owner };
	uint32_t id;

	if (client_ids) {
		/* as a libdlm client: ids in sequence from its blocks */
		if (blk_next[owner] == blk_end[owner]) {
			if (dlm_core_ids_reserve(ls, owner, &blk_next[owner])) {
				fprintf(stderr, "bench-core: no id block\n");
				exit(1);
			}
			blk_end[owner] = blk_next[owner] + DLM_IDS_BLOCK;
		}
		rq.newid = blk_next[owner]++;
	}
	if (dlm_core_lock(ls, &rq, &id)) {
		fprintf(stderr, "bench-core: lock failed\n");
		exit(1);
	}
	if (b_qn)
		b_deliver();
	return id;
}

static void unlock1(uint32_t id, uint64_t owner)
{
	struct dlm_unlock_req u = { .lkid = id, .owner = owner };

	if (dlm_core_unlock(ls, &u)) {
		fprintf(stderr, "bench-core: unlock failed\n");
		exit(1);
	}
}

/* Hold n locks, each on its own resource "h<i>". */
static uint32_t *hold_many(size_t n)
{
	uint32_t *ids = malloc(n * sizeof(*ids));
	char name[32];
	size_t i, next = 0;

	for (i = 0; i < n; i++) {
		unsigned len = directed_name("h", &next, name, sizeof(name));

		ids[i] = lock1(name, len, DLM_LOCK_PR, 2);
	}
	return ids;
}

/* Pairs per second: lock EX + unlock on 'nnames' rotating names. */
static double pairs_rate(size_t iters, unsigned nnames)
{
	double t0, t1;
	size_t i;

	t0 = now_s();
	for (i = 0; i < iters; i++) {
		unsigned k = (unsigned)(i % nnames);
		uint32_t id = lock1(pair_names[k], pair_lens[k], DLM_LOCK_EX, 1);

		unlock1(id, 1);
	}
	t1 = now_s();
	return (double)iters / (t1 - t0);
}

/* The time of one pair: the median of ROUNDS rounds of n pairs each (on
 * a shared machine one round can be several times slower than the next).
 * one_resource: PR on "one" (beside its NL holders); else EX on 1000
 * rotating resources. */
#define ROUNDS	5

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* This thread's CPU time: unlike the wall clock, it leaves out the time
 * the bench waits for a core on a loaded machine. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall and CPU ns of one pair, each the median of its ROUNDS rounds. */
static double pair_ns(size_t n, int one_resource, double *cpu_ns)
{
	double v[ROUNDS], c[ROUNDS];
	int r;

	for (r = 0; r < ROUNDS; r++) {
		double c0 = cpu_s();

		if (one_resource) {
			double t0 = now_s();
			size_t j;

			for (j = 0; j < n; j++)
				unlock1(lock1(one_name, one_len,
					      DLM_LOCK_PR, 1), 1);
			v[r] = (now_s() - t0) * 1e9 / (double)n;
		} else {
			v[r] = 1e9 / pairs_rate(n, 1000);
		}
		c[r] = (cpu_s() - c0) * 1e9 / (double)n;
	}
	qsort(v, ROUNDS, sizeof(v[0]), cmp_double);
	qsort(c, ROUNDS, sizeof(c[0]), cmp_double);
	*cpu_ns = c[ROUNDS / 2];
	return v[ROUNDS / 2];
}

/* The malloc chunk an object takes: its usable size and glibc's 8-byte
 * header (what the heap figures below count). */
static size_t chunk(const void *p)
{
	return p ? malloc_usable_size((void *)p) + 8 : 0;
}

/* Where the bytes of the n held locks 'ids' go, measured on the live
 * objects: the chunks of one lock's lkb and rsb (and of any side record
 * they hold), each table's bucket bytes per lock, and what is left of
 * the measured total (heap per lock) after those. */
static void breakdown(const uint32_t *ids, size_t n, double total)
{
	struct dlm_solo *so = dlm_solo_find_id(ls, ids[n / 2]);
	struct dlm_lkb *lkb = dlm_lkb_find(ls, ids[n / 2]);
	struct dlm_rsb *r = lkb ? lkb->lkb_rsb : NULL;
	struct dlm_lkb *first = dlm_lkb_find(ls, ids[0]);
	double bl, br, bd, side, sum;
	size_t lc, rc, nshared;

	if (so) {
		/* a lone lock folded with its resource: one chunk, and its
		 * buckets in the two solo tables */
		bl = (double)ls->ls_soloids.ht_nbuckets * sizeof(void *) / (double)n;
		br = (double)ls->ls_solotbl.ht_nbuckets * sizeof(void *) / (double)n;
		printf("  solo %zu B + key %u B in a %zu B chunk (%zu of %zu "
		       "locks folded)\n", (size_t)offsetof(struct dlm_solo, so_key),
		       so->so_keynode.hn_spare, chunk(so), dlm_solo_count(ls), n);
		printf("  buckets per lock: soloids %.1f B, solotbl %.1f B; "
		       "rest %.1f B\n", bl, br,
		       total - (double)chunk(so) - bl - br);
		return;
	}
	if (!lkb || !r) {
		fprintf(stderr, "bench-core: held lock %u not found\n", ids[n / 2]);
		exit(1);
	}
	/* the rows hold all their locks on one resource or each on its own */
	nshared = n > 1 && first && first->lkb_rsb == r ? n : 1;
	lc = chunk(lkb);
	/* a resource shared by all n locks costs each of them nothing */
	rc = nshared > 1 ? 0 : chunk(r);
	side = (double)(chunk(lkb->lkb_lvb) + chunk(lkb->lkb_ranges) +
			chunk(lkb->lkb_qwait) + (nshared > 1 ? 0 : chunk(r->res_lvb)));
	bl = (double)ls->ls_lkbtbl.ht_nbuckets * sizeof(void *) / (double)n;
	br = nshared > 1 ? 0 : (double)ls->ls_rsbtbl.ht_nbuckets *
			       sizeof(void *) / (double)n;
	bd = (double)ls->ls_dirtbl.ht_count ?
	     (double)ls->ls_dirtbl.ht_nbuckets * sizeof(void *) / (double)n : 0;
	sum = (double)lc + (double)rc + side + bl + br + bd;
	printf("  lkb %zu B in a %zu B chunk; rsb %zu B + key %u B in a %zu B "
	       "chunk%s; side records %.0f B\n", sizeof(*lkb), lc,
	       (size_t)offsetof(struct dlm_rsb, res_key), r->res_keylen,
	       chunk(r), nshared > 1 ? " (shared)" : "", side);
	printf("  buckets per lock: lkbtbl %.1f B, rsbtbl %.1f B, dirtbl %.1f B "
	       "(%zu directory records); rest %.1f B\n", bl, br, bd,
	       ls->ls_dirtbl.ht_count, total - sum);
}

/* Heap bytes per lock while the locks 'ids' hold (the ids array aside). */
static double per_lock(size_t before, size_t after, size_t n)
{
	return (double)(after - before - n * sizeof(uint32_t)) / (double)n;
}

/* --unfold: n locks held (folded), then every one unfolded at once, as
 * a recovery start did before core/solo.c's "Recovery"
 * (dlm_solo_unfold_all): its time and the heap it takes. */
static void unfold_row(size_t n)
{
	size_t before, mid, after, folded;
	uint32_t *ids;
	double t0, c0, t, c;
	char label[80];
	int rv;

	setup();
	before = heap_used();
	ids = hold_many(n);
	mid = heap_used();
	folded = dlm_solo_count(ls);
	t0 = now_s();
	c0 = cpu_s();
	rv = dlm_solo_unfold_all(ls);
	c = cpu_s() - c0;
	t = now_s() - t0;
	after = heap_used();
	if (rv || dlm_solo_count(ls)) {
		fprintf(stderr, "bench-core: unfold all failed: %d\n", rv);
		exit(1);
	}
	snprintf(label, sizeof(label), "unfold all %zu lone locks (of %zu)",
		 folded, n);
	printf("%-52s %11.1f ms  cpu %.1f ms; heap %.0f -> %.0f B a lock\n",
	       label, t * 1e3, c * 1e3, per_lock(before, mid, n),
	       per_lock(before, after, n));
	free(ids);
	teardown();
}

/* --members N and --unfold N (anywhere): taken out of argv, before the
 * positional options below are read. */
static size_t unfold_n;

static int shift_opts(int *argc, char **argv)
{
	int i = 1, j;

	while (i < *argc) {
		if (i + 1 < *argc && !strcmp(argv[i], "--members")) {
			nmembers = (uint32_t)strtoul(argv[i + 1], NULL, 10);
			if (nmembers < 1 || nmembers > 16) {
				fprintf(stderr, "bench-core: --members 1..16\n");
				return -1;
			}
		} else if (i + 1 < *argc && !strcmp(argv[i], "--unfold")) {
			unfold_n = (size_t)strtoull(argv[i + 1], NULL, 10);
		} else if (!strcmp(argv[i], "--client-ids") ||
			   !strcmp(argv[i], "--spread")) {
			if (argv[i][2] == 'c')
				client_ids = 1;
			else
				spread = 1;
			for (j = i; j + 1 <= *argc; j++)
				argv[j] = argv[j + 1];
			*argc -= 1;
			continue;
		} else {
			i++;
			continue;
		}
		for (j = i; j + 2 <= *argc; j++)
			argv[j] = argv[j + 2];
		*argc -= 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* --no-fold first: the engine as before core/solo.c */
	int shifted = shift_opts(&argc, argv);
	int nofold = argc > 1 && !strcmp(argv[1], "--no-fold");
	int quick = argc > 1 + nofold && !strcmp(argv[1 + nofold], "--quick");
	int no10m = argc > 1 + nofold && !strcmp(argv[1 + nofold], "--no-10m");
	size_t iters = quick ? 200000 : 2000000;
	size_t held[3] = { 10000, quick ? 100000 : 1000000, 10000000 };
	int nheld = quick || no10m ? 2 : 3;
	/* --held N: only the rows of N held locks (to profile one size) */
	int only = argc > 2 + nofold && !strcmp(argv[1 + nofold], "--held");
	double base_own = 0, base_one = 0, base_own_cpu = 0, base_one_cpu = 0;
	int k;

	fold = !nofold;
	if (shifted)
		return 2;
	{
		size_t next = 0;

		for (k = 0; k < 1000; k++)
			pair_lens[k] = directed_name("p", &next, pair_names[k],
						     sizeof(pair_names[k]));
		next = 0;
		one_len = directed_name("one", &next, one_name,
					sizeof(one_name));
	}
	if (unfold_n) {
		printf("dlmd core engine benchmark: unfold (%u members)\n",
		       nmembers);
		unfold_row(unfold_n);
		return 0;
	}
	if (only) {
		held[0] = (size_t)strtoull(argv[2 + nofold], NULL, 10);
		nheld = 1;
		if (!held[0]) {
			fprintf(stderr, "usage: bench-core [--members N [--spread]] [--client-ids] [--unfold N | [--no-fold] [--quick | --no-10m | --held N]]\n");
			return 2;
		}
	}
	printf("dlmd core engine benchmark (one node, in process)%s%s%s",
	       quick ? " [quick]" : "", fold ? "" : " [no fold]",
	       client_ids ? " [client-chosen ids]" : "");
	if (nmembers > 1)
		printf(" [%u members: %s]", nmembers, spread ?
		       "names spread over all, this node master of each" :
		       "names this node directs");
	printf("\n");
	printf("sizes: lkb %zu B, rsb %zu B + key, dirent %zu B + key, "
	       "owner %zu B, solo %zu B + key\n", sizeof(struct dlm_lkb),
	       sizeof(struct dlm_rsb), sizeof(struct dlm_dirent),
	       sizeof(struct dlm_owner), offsetof(struct dlm_solo, so_key));
	printf("%-52s %14s\n", "case", "result");

	setup();
	printf("%-52s %11.0f /s\n", "lock+unlock pairs, 1 resource",
	       pairs_rate(iters, 1));
	printf("%-52s %11.0f /s\n", "lock+unlock pairs, 1000 resources",
	       pairs_rate(iters, 1000));
	teardown();

	for (k = 0; k < nheld; k++) {
		char label[80];
		uint32_t *ids;
		size_t before, after, i;
		double ns, cpu;

		setup();
		before = heap_used();
		ids = hold_many(held[k]);
		after = heap_used();
		snprintf(label, sizeof(label),
			 "heap per held lock, %zu locks on own resources", held[k]);
		printf("%-52s %11.0f B\n", label, per_lock(before, after, held[k]));
		breakdown(ids, held[k], per_lock(before, after, held[k]));
		if (nmembers > 1) {
			struct dlm_ls_stats st;

			dlm_core_ls_stats(ls, &st);
			printf("  folded %llu of %zu: on names directed here "
			       "%llu, after a lookup %llu; directory records "
			       "here %llu\n", (unsigned long long)st.ls_folded,
			       held[k], (unsigned long long)st.ls_folds_shared,
			       (unsigned long long)st.ls_folds_remote,
			       (unsigned long long)st.ls_dir_entries);
		}
		ns = pair_ns(iters / ROUNDS, 0, &cpu);
		if (!k) {
			base_own = ns;
			base_own_cpu = cpu;
		}
		snprintf(label, sizeof(label),
			 "one lock+unlock pair while %zu locks held", held[k]);
		printf("%-52s %11.0f ns  (%.2fx)  cpu %.0f ns (%.2fx)\n", label,
		       ns, ns / base_own, cpu, cpu / base_own_cpu);
		for (i = 0; i < held[k]; i++)
			unlock1(ids[i], 2);
		free(ids);
		teardown();

		setup();
		before = heap_used();
		ids = malloc(held[k] * sizeof(*ids));
		for (i = 0; i < held[k]; i++)
			ids[i] = lock1(one_name, one_len, DLM_LOCK_NL, 3);
		after = heap_used();
		snprintf(label, sizeof(label),
			 "heap per held lock, %zu locks on one resource", held[k]);
		printf("%-52s %11.0f B\n", label, per_lock(before, after, held[k]));
		breakdown(ids, held[k], per_lock(before, after, held[k]));
		ns = pair_ns(iters / 4 / ROUNDS, 1, &cpu);
		if (!k) {
			base_one = ns;
			base_one_cpu = cpu;
		}
		snprintf(label, sizeof(label),
			 "one PR lock+unlock pair beside %zu NL holders", held[k]);
		printf("%-52s %11.0f ns  (%.2fx)  cpu %.0f ns (%.2fx)\n", label,
		       ns, ns / base_one, cpu, cpu / base_one_cpu);
		free(ids);
		teardown();
	}
	printf("(%llu ASTs delivered)\n", (unsigned long long)nasts);
	return 0;
}
