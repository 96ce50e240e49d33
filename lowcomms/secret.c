/*
 * lowcomms/secret.c: memory for key material, kept out of core dumps.
 *
 * A core dump of dlmd (a crash, gcore, abrt or systemd-coredump keeping
 * it where an administrator or a bug report may copy it) must not carry
 * the cluster key nor any key derived from it: whoever holds those can
 * join the lock traffic as any node, or read what was recorded of it.  So
 * every key lives in pages marked MADV_DONTDUMP, locked into memory where
 * RLIMIT_MEMLOCK allows (never swapped out either), between guard pages:
 *
 *   - the keys dlmd holds itself (lowcomms' derived keys, the CPG seal
 *     key, a cluster key on its way from the key file to those, and the
 *     file's bytes, read(2) straight into it by lc_key_load()):
 *     lc_secret_alloc(), which is libsodium's sodium_malloc().  A struct
 *     lc_config only points at the cluster key.  It marks
 *     the pages MADV_DONTDUMP, then mlocks them, and goes on if the lock
 *     fails (RLIMIT_MEMLOCK): the keys then stay out of core dumps but may
 *     be swapped out; lc_secret_status() says so, the daemon logs it, and
 *     dlmd starts all the same.
 *   - the stack: what computes a key leaves copies below its caller's
 *     frame (libsodium's BLAKE2b does not wipe its output buffer, for
 *     one; and the dynamic linker, binding a function at its first call,
 *     saves the vector registers that still hold a key), which a core
 *     dump would hold until something overwrote them; so whatever makes
 *     a key clears the vector registers and wipes that much stack on its
 *     way out (lc_secret_burn_stack()).
 *   - the session keys, which live expanded inside OpenSSL's and
 *     libgcrypt's cipher contexts (auth.c, lc_aead_init()): neither library
 *     lets a caller give a context its memory, so once per process,
 *     before either allocates anything, lc_secret_setup() installs
 *     allocation functions in both that send what is allocated between
 *     lc_secret_begin() and lc_secret_end() (in this thread) to OpenSSL's
 *     secure heap: one mapping, MADV_DONTDUMP, mlocked where it may be,
 *     guard pages (CRYPTO_secure_malloc_init; 1 MiB unless
 *     lc_secret_heap_size(), dlm.conf secure_heap_size, said otherwise);
 *     every other allocation goes to malloc() as before.  A secure heap
 *     that is full falls back to malloc() (counted in the status, said
 *     once; tests/test-cluster-keys.sh fills a running dlmd's).  A program that had OpenSSL
 *     allocate before (so OpenSSL refuses new functions), or that set
 *     libgcrypt up itself, keeps its session keys in ordinary memory, and
 *     the status says that too.
 *
 * tests/test-key-nodump.sh reads a process that holds every kind of key
 * the way a core dump would (all but the MADV_DONTDUMP mappings) and
 * finds none of them, and finds each in the marked mappings.
 */
#include "lowcomms/lowcomms.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gcrypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <sodium.h>

/* OpenSSL's secure heap: a power of two; by default enough for the
 * cipher contexts of a few hundred connections (two directions each,
 * about 1.3 KiB a direction for AES-GCM).  lc_secret_heap_size() (dlm.conf
 * secure_heap_size) sets another before the first use. */
#define SECURE_HEAP_MIN		64

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static size_t heap_bytes = LC_SECRET_HEAP_DEFAULT;
static bool setup_done;			/* setup() ran: heap_bytes is used */
static _Thread_local int secret_depth;	/* lc_secret_begin() nesting */
static bool heap_ready;			/* our OpenSSL functions + heap */
static int heap_rv;			/* CRYPTO_secure_malloc_init() */
static bool openssl_refused;		/* allocated before our setup */
static bool gcrypt_routed;		/* our libgcrypt handlers */
static unsigned long heap_full;		/* key allocations in malloc() */
static bool full_told;			/* full_fn called about that */
static void (*full_fn)(void *arg, const char *msg);	/* lc_secret_on_full */
static void *full_arg;
static int lock_errno;			/* an mlock of lc_secret_alloc's */

static void *secret_or_plain(size_t n)
{
	void *p;

	if (secret_depth && heap_ready) {
		/* NULL file and line: no OpenSSL error queued if full. */
		p = CRYPTO_secure_malloc(n, NULL, 0);
		if (p)
			return p;
		__atomic_add_fetch(&heap_full, 1, __ATOMIC_RELAXED);
	}
	return malloc(n);
}

static bool is_secret(const void *p)
{
	return p && heap_ready && CRYPTO_secure_allocated(p);
}

static void free_either(void *p)
{
	if (is_secret(p))
		CRYPTO_secure_free(p, NULL, 0);	/* it clears what it frees */
	else
		free(p);
}

static void *realloc_either(void *p, size_t n)
{
	void *q;

	if (!is_secret(p))
		return p || !secret_depth ? realloc(p, n) : secret_or_plain(n);
	if (!n) {
		free_either(p);
		return NULL;
	}
	q = CRYPTO_secure_malloc(n, NULL, 0);
	if (!q) {
		__atomic_add_fetch(&heap_full, 1, __ATOMIC_RELAXED);
		q = malloc(n);
	}
	if (!q)
		return NULL;
	memcpy(q, p, CRYPTO_secure_actual_size(p) < n ?
		     CRYPTO_secure_actual_size(p) : n);
	free_either(p);
	return q;
}

/* OpenSSL's forms. */
static void *ossl_malloc(size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return secret_or_plain(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line)
{
	(void)file;
	(void)line;
	return realloc_either(p, n);
}

static void ossl_free(void *p, const char *file, int line)
{
	(void)file;
	(void)line;
	free_either(p);
}

/* libgcrypt's: it asks no "secure" memory of us (auth.c disables its own
 * secure memory); what it allocates inside begin/end is secret anyway. */
static int gcry_never_secure(const void *p)
{
	(void)p;
	return 0;
}

/* OpenSSL's one-time work for the record ciphers, done here, outside
 * lc_secret_begin/end, with a key of zeros: the first cipher context
 * keyed inside them would otherwise pull OpenSSL's own setup (the default
 * library context, the provider, the fetched methods: about 340 KiB, a
 * third of the heap) into the secure heap, where only keys belong.  What
 * it caches then lives in ordinary memory and holds no key. */
static void warm_up(void)
{
	static const unsigned char zeros[32];
	const EVP_CIPHER *ciphers[] = {
		EVP_aes_256_gcm(), EVP_chacha20_poly1305(),
	};

	for (size_t i = 0; i < sizeof(ciphers) / sizeof(ciphers[0]); i++) {
		EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();

		if (!x)
			return;
		(void)EVP_EncryptInit_ex(x, ciphers[i], NULL, zeros, zeros);
		(void)EVP_DecryptInit_ex(x, ciphers[i], NULL, zeros, zeros);
		EVP_CIPHER_CTX_free(x);
	}
	ERR_clear_error();
}

static void setup(void)
{
	if (CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
		heap_rv = CRYPTO_secure_malloc_init(heap_bytes,
						    SECURE_HEAP_MIN);
		heap_ready = heap_rv != 0;
		if (heap_ready)
			warm_up();
	} else {
		openssl_refused = true;
	}
	/* Before libgcrypt is initialised: a program that did that itself
	 * keeps its own allocator. */
	if (heap_ready && !gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
		gcry_set_allocation_handler(secret_or_plain, secret_or_plain,
					    gcry_never_secure, realloc_either,
					    free_either);
		gcrypt_routed = true;
	}
}

void lc_secret_setup(void)
{
	pthread_once(&setup_once, setup);
	__atomic_store_n(&setup_done, true, __ATOMIC_RELAXED);
}

int lc_secret_heap_size(size_t bytes)
{
	if (bytes < LC_SECRET_HEAP_MIN || bytes > LC_SECRET_HEAP_MAX ||
	    (bytes & (bytes - 1)))
		return -EINVAL;
	if (__atomic_load_n(&setup_done, __ATOMIC_RELAXED))
		return bytes == heap_bytes ? 0 : -EBUSY;
	heap_bytes = bytes;
	return 0;
}

void lc_secret_begin(void)
{
	lc_secret_setup();
	secret_depth++;
}

/* Once, the first time the secure heap was found full: outside begin/end
 * (what the log line allocates goes to malloc), never from inside an
 * allocation function of OpenSSL's or libgcrypt's. */
static void tell_full(void)
{
	void (*fn)(void *, const char *) =
		__atomic_load_n(&full_fn, __ATOMIC_ACQUIRE);

	if (!fn || !__atomic_load_n(&heap_full, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&full_told, true, __ATOMIC_RELAXED))
		return;
	fn(full_arg, "OpenSSL's secure heap is full: the session keys of "
		     "new connections are now in ordinary memory (a core dump "
		     "would hold them)");
}

void lc_secret_end(void)
{
	if (--secret_depth == 0)
		tell_full();
}

void lc_secret_on_full(void (*fn)(void *arg, const char *msg), void *arg)
{
	full_arg = arg;
	__atomic_store_n(&full_fn, fn, __ATOMIC_RELEASE);
}

unsigned long lc_secret_fallbacks(void)
{
	return __atomic_load_n(&heap_full, __ATOMIC_RELAXED);
}

void *lc_secret_alloc(size_t len)
{
	void *p;

	if (sodium_init() < 0) {
		errno = EIO;
		return NULL;
	}
	p = sodium_malloc(len);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	/* sodium_malloc() marked the pages MADV_DONTDUMP and tried to lock
	 * them, without saying whether that worked: the same lock again
	 * tells (pages locked already cost nothing more).  The system call
	 * itself: AddressSanitizer makes mlock() a no-op that succeeds. */
	if (syscall(SYS_mlock, p, len) < 0 && !lock_errno)
		lock_errno = errno ? errno : ENOMEM;
	memset(p, 0, len);
	return p;
}

/* How deep below its caller lc_secret_burn_stack() wipes: more than the
 * frames of the libsodium, OpenSSL and libgcrypt calls that make keys
 * (their BLAKE2b final leaves its output in a buffer it does not wipe). */
#define BURN_BYTES	(16 * 1024)

#if defined(__x86_64__)
/* AVX-512's sixteen more registers, which vzeroall leaves as they are and
 * glibc's memcpy and memset use on such machines (so they may hold a key
 * that was copied); a signal frame saves them on the stack like the
 * others.  Its own function: the assembler takes EVEX instructions only
 * where the target has AVX-512. */
__attribute__((noinline, target("avx512f")))
static void clear_zmm16_31(void)
{
	__asm__ __volatile__(
		"vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
		"vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
		"vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
		"vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
		"vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
		"vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
		"vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
		"vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
		"vpxord %%zmm24, %%zmm24, %%zmm24\n\t"
		"vpxord %%zmm25, %%zmm25, %%zmm25\n\t"
		"vpxord %%zmm26, %%zmm26, %%zmm26\n\t"
		"vpxord %%zmm27, %%zmm27, %%zmm27\n\t"
		"vpxord %%zmm28, %%zmm28, %%zmm28\n\t"
		"vpxord %%zmm29, %%zmm29, %%zmm29\n\t"
		"vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
		"vpxord %%zmm31, %%zmm31, %%zmm31"
		::: "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
		    "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",
		    "xmm28", "xmm29", "xmm30", "xmm31", "memory");
}
#endif

/* The vector registers first: libsodium's BLAKE2b leaves a key it made in
 * them, and the first call of a function bound lazily (the dynamic
 * linker's resolver saves every register on the stack, below that depth;
 * configure links with -z now where the linker takes it, so that our
 * programs bind none lazily) or a signal handler would copy them into
 * memory: vzeroall (zmm0-15 whole), and zmm16-31 where AVX-512 has
 * them (clear_zmm16_31: a direct call).  Then the stack, with plain
 * stores: no call that could be such a first call.  Not instrumented by
 * AddressSanitizer, so that the array is on the real stack (not a fake
 * frame of ASan's) and is not a frame with redzones. */
__attribute__((noinline, no_sanitize_address))
void lc_secret_burn_stack(void)
{
	unsigned char burn[BURN_BYTES];
	volatile unsigned char *p = burn;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512f"))
		clear_zmm16_31();
	if (__builtin_cpu_supports("avx"))
		__asm__ __volatile__("vzeroall" ::: "memory");
	else
		__asm__ __volatile__(
			"pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\t"
			"pxor %%xmm2, %%xmm2\n\tpxor %%xmm3, %%xmm3\n\t"
			"pxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
			"pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\t"
			"pxor %%xmm8, %%xmm8\n\tpxor %%xmm9, %%xmm9\n\t"
			"pxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
			"pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\t"
			"pxor %%xmm14, %%xmm14\n\tpxor %%xmm15, %%xmm15"
			::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
			    "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
			    "xmm12", "xmm13", "xmm14", "xmm15", "memory");
#endif
	for (size_t i = 0; i < sizeof(burn); i++)
		p[i] = 0;
	__asm__ __volatile__("" : : "r"(burn) : "memory");
}

void lc_secret_free(void *p)
{
	sodium_free(p);	/* zeroes it, unlocks, unmaps; NULL is fine */
}

const char *lc_secret_status(void)
{
	static char buf[400];
	size_t n;

	lc_secret_setup();
	n = (size_t)snprintf(buf, sizeof(buf),
		"keys kept out of core dumps (MADV_DONTDUMP)%s",
		lock_errno ? "" : ", locked in memory");
	if (lock_errno)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			", not locked in memory (mlock: %s; RLIMIT_MEMLOCK?)",
			strerror(lock_errno));
	if (n >= sizeof(buf))
		return buf;
	if (openssl_refused)
		snprintf(buf + n, sizeof(buf) - n,
			 "; session keys in ordinary memory (OpenSSL "
			 "allocated before lowcomms could route it)");
	else if (!heap_ready)
		snprintf(buf + n, sizeof(buf) - n,
			 "; session keys in ordinary memory (no OpenSSL "
			 "secure heap)");
	else
		snprintf(buf + n, sizeof(buf) - n,
			 "; session keys in OpenSSL's secure heap (%zu KiB)%s%s%s",
			 heap_bytes / 1024, heap_rv == 2 ? " (not locked: mlock or madvise "
					"failed)" : "",
			 gcrypt_routed ? "" : ", AES-OCB's in ordinary memory "
					      "(libgcrypt set up before us)",
			 __atomic_load_n(&heap_full, __ATOMIC_RELAXED) ?
				", which has been full (some in ordinary "
				"memory)" : "");
	return buf;
}
