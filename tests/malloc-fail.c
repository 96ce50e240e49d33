/*
 * tests/malloc-fail.c - an LD_PRELOAD library that makes malloc(),
 * calloc() and realloc() fail (NULL, errno ENOMEM), as they do when a
 * cgroup's MemoryMax is reached, for the daemon-level test of what dlmd
 * does then (tests/test-cluster-malloc.sh).
 *
 * Environment, read at the first allocation:
 *   MALLOC_FAIL_EVERY=N     one call in N fails (0 or unset: none); a
 *                           counter, not a random draw: every run of the
 *                           same calls fails the same ones
 *   MALLOC_FAIL_AFTER_MS=D  none fails during the first D ms after the
 *                           first allocation (the process starts first)
 *   MALLOC_FAIL_FILE=PATH   and only while PATH exists (looked at once
 *                           per 100 ms at most: a test says when)
 *   MALLOC_FAIL_ALL_FILE=PATH
 *                           while PATH exists, every call fails (memory
 *                           short for a while: a test makes it return)
 *   MALLOC_FAIL_CALLER=program
 *                           only calls made by the program's own code
 *                           count and fail, not those of its libraries
 *                           (libqb asserts on some failed allocations,
 *                           e.g. qb_log_dcs_get(): what is under test is
 *                           the program's handling, not theirs)
 * LD_PRELOAD and these are taken out of the environment at load, so that
 * programs the process runs (dlmd's fence_command) allocate normally.
 * A call of size 0 and free() are never failed.  At exit a line on
 * stderr says how many calls were failed.
 *
 * The real functions come from dlsym(RTLD_NEXT); dlsym itself may
 * allocate (calloc) before they are known, which a small static arena
 * serves.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_EVERY_MS	100

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static unsigned long every;
static uint64_t start_at;		/* ms, monotonic */
static char go_file[256], all_file[256];
static bool go = true, all;		/* as the files were last seen */
static uint64_t next_check;
static unsigned long calls, failed;
/* MALLOC_FAIL_CALLER=program: the program's executable segments */
#define MAX_SEGS	8
static bool program_only;
static uintptr_t seg_lo[MAX_SEGS], seg_hi[MAX_SEGS];
static int nsegs;

/* dlsym's own allocations, before the real functions are known */
static unsigned char arena[4096] __attribute__((aligned(16)));
static size_t arena_used;
static bool resolving;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void report(void)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "malloc-fail: %lu of %lu "
			 "allocations failed (those looked at)\n", failed, calls);

	if (n > 0 && write(2, line, (size_t)n) < 0)
		return;
}

/* The first object dl_iterate_phdr() reports is the program. */
static int program_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	for (int i = 0; i < info->dlpi_phnum && nsegs < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		seg_lo[nsegs] = info->dlpi_addr + ph->p_vaddr;
		seg_hi[nsegs] = seg_lo[nsegs] + ph->p_memsz;
		nsegs++;
	}
	return 1;
}

static bool from_program(const void *ret)
{
	uintptr_t a = (uintptr_t)ret;

	for (int i = 0; i < nsegs; i++)
		if (a >= seg_lo[i] && a < seg_hi[i])
			return true;
	return false;
}

static void init(void)
{
	const char *e;

	if (real_malloc || resolving)
		return;
	resolving = true;
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	resolving = false;
	e = getenv("MALLOC_FAIL_EVERY");
	every = e ? strtoul(e, NULL, 10) : 0;
	e = getenv("MALLOC_FAIL_AFTER_MS");
	start_at = now_ms() + (e ? strtoull(e, NULL, 10) : 0);
	e = getenv("MALLOC_FAIL_FILE");
	if (e)
		snprintf(go_file, sizeof(go_file), "%s", e);
	e = getenv("MALLOC_FAIL_ALL_FILE");
	if (e)
		snprintf(all_file, sizeof(all_file), "%s", e);
	e = getenv("MALLOC_FAIL_CALLER");
	if (e && !strcmp(e, "program")) {
		program_only = true;
		dl_iterate_phdr(program_segments, NULL);
	}
	unsetenv("LD_PRELOAD");
	unsetenv("MALLOC_FAIL_EVERY");
	unsetenv("MALLOC_FAIL_AFTER_MS");
	unsetenv("MALLOC_FAIL_FILE");
	unsetenv("MALLOC_FAIL_ALL_FILE");
	unsetenv("MALLOC_FAIL_CALLER");
	if (every || all_file[0])
		atexit(report);
}

__attribute__((constructor)) static void load(void)
{
	init();
}

/* Whether this call, made from ret, fails. */
static bool fail_now(size_t size, const void *ret)
{
	uint64_t now;

	if ((!every && !all_file[0]) || !size ||
	    (program_only && !from_program(ret)))
		return false;
	now = now_ms();
	if (now < start_at)
		return false;
	if (now >= next_check) {
		next_check = now + CHECK_EVERY_MS;
		go = !go_file[0] || !access(go_file, F_OK);
		all = all_file[0] && !access(all_file, F_OK);
	}
	if (!all && (!go || !every))
		return false;
	if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) % (all ? 1 : every))
		return false;
	__atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
	return true;
}

static void *arena_alloc(size_t size)
{
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (arena_used + size > sizeof(arena))
		return NULL;
	p = arena + arena_used;
	arena_used += size;
	return p;
}

static bool in_arena(const void *p)
{
	return (const unsigned char *)p >= arena &&
	       (const unsigned char *)p < arena + sizeof(arena);
}

void *malloc(size_t size)
{
	init();
	if (!real_malloc)
		return arena_alloc(size);
	if (fail_now(size, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return real_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	void *p;

	init();
	if (!real_calloc) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		p = arena_alloc(n * size);
		if (p)
			memset(p, 0, n * size);
		return p;
	}
	if (fail_now(n * size, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return real_calloc(n, size);
}

void *realloc(void *old, size_t size)
{
	init();
	if (in_arena(old) || !real_realloc) {
		/* an arena block is never grown in place: copy it out */
		void *p = malloc(size);
		size_t n = size;

		if (p && old) {
			if (n > (size_t)(arena + sizeof(arena) -
					 (const unsigned char *)old))
				n = (size_t)(arena + sizeof(arena) -
					     (const unsigned char *)old);
			memcpy(p, old, n);
		}
		return p;
	}
	if (fail_now(size, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return real_realloc(old, size);
}

void free(void *p)
{
	if (!p || in_arena(p))
		return;
	init();
	if (real_free)
		real_free(p);
}
