/*
 * tests/fuzz-main.c: a replay driver for fuzz targets, used when the build
 * has no libFuzzer (gcc, or configure without --enable-fuzzing).
 *
 * It takes the command line shape of libFuzzer so that tests/fuzz-run can
 * call either binary the same way:
 *
 *    TARGET [-runs=N] [-seed=S] [-max_len=L] [-artifact_prefix=P]
 *           [-other=ignored] CORPUS_DIR_OR_FILE...
 *
 * It runs LLVMFuzzerTestOneInput on every corpus file, then N inputs made by
 * mutating corpus files with a PRNG seeded by S (default 1, so a run is
 * reproducible): bit flips, byte overwrites with interesting values,
 * insertions, deletions, duplicated ranges and splices of two inputs.  If an
 * input crashes, a handler writes it to P + "crash-<run>" (when P is given)
 * before the process dies, and the seed and run number are printed.  It
 * finds far less than libFuzzer (no coverage feedback) but catches
 * regressions on the corpus and shallow bugs, with any compiler.
 *
 *    TARGET -valid FILE...
 *
 * runs each FILE once, no mutations, and exits 1 naming every FILE that
 * the target's parser refused (fuzz_refuse, tests/fuzz-verdict.h): the
 * check that the seeds meant valid still decode (tests/corpus-valid.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz-verdict.h"

#define DEFAULT_MAX_LEN		4096
#define MAX_CORPUS		4096
#define MAX_MUTATIONS		8
#define PATH_LEN		4096
#define PROGRESS_EVERY		100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct input {
	uint8_t *in_data;
	size_t in_len;
};

static struct input corpus[MAX_CORPUS];
static size_t ncorpus;
/* What is running now, for the crash handler. */
static const uint8_t *cur_data;
static size_t cur_len;
static unsigned long long cur_run;
static char crash_path[PATH_LEN];
static unsigned long long seed = 1;
/* The parser that refused the input running now, if one did. */
static const char *refused_by;

void fuzz_refused(const char *what)
{
	if (!refused_by)
		refused_by = what;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static void on_crash(int sig)
{
	static const char msg[] = "fuzz-main: crashing input saved\n";
	ssize_t ignored;
	int fd;

	if (crash_path[0] && cur_data) {
		fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			ignored = write(fd, cur_data, cur_len);
			close(fd);
			ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
			(void)ignored;
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int add_file(const char *path, size_t max_len)
{
	struct input *in;
	FILE *f;
	long len;

	if (ncorpus >= MAX_CORPUS)
		return 0;
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return -EIO;
	}
	if ((size_t)len > max_len)
		len = (long)max_len;
	in = &corpus[ncorpus];
	in->in_data = malloc((size_t)len + 1);
	if (!in->in_data) {
		fclose(f);
		return -ENOMEM;
	}
	in->in_len = fread(in->in_data, 1, (size_t)len, f);
	fclose(f);
	ncorpus++;
	return 0;
}

static int add_path(const char *path, size_t max_len)
{
	char child[PATH_LEN];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rv = 0;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return add_file(path, max_len);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && rv == 0) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		if (stat(child, &st) == 0 && S_ISREG(st.st_mode))
			rv = add_file(child, max_len);
	}
	closedir(d);
	return rv;
}

static void run_one(const uint8_t *data, size_t len)
{
	cur_data = data;
	cur_len = len;
	LLVMFuzzerTestOneInput(data, len);
	cur_data = NULL;
}

static const uint8_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 0x20, 0x28,
				       'D', 'L', 'M', 'C' };

/* One mutation of buf (len bytes, room for max_len) in place. */
static size_t mutate_once(uint8_t *buf, size_t len, size_t max_len)
{
	size_t pos, n;

	switch (rnd_below(7)) {
	case 0: /* flip a bit */
		if (len)
			buf[rnd_below(len)] ^= (uint8_t)(1u << rnd_below(8));
		break;
	case 1: /* random byte */
		if (len)
			buf[rnd_below(len)] = (uint8_t)rnd();
		break;
	case 2: /* interesting byte */
		if (len)
			buf[rnd_below(len)] =
				interesting[rnd_below(sizeof(interesting))];
		break;
	case 3: /* insert random bytes */
		n = 1 + rnd_below(8);
		if (len + n > max_len)
			break;
		pos = rnd_below(len + 1);
		memmove(buf + pos + n, buf + pos, len - pos);
		for (size_t i = 0; i < n; i++)
			buf[pos + i] = (uint8_t)rnd();
		len += n;
		break;
	case 4: /* delete a range */
		if (!len)
			break;
		pos = rnd_below(len);
		n = 1 + rnd_below(len - pos);
		memmove(buf + pos, buf + pos + n, len - pos - n);
		len -= n;
		break;
	case 5: /* duplicate a range at the end */
		if (!len)
			break;
		pos = rnd_below(len);
		n = 1 + rnd_below(len - pos);
		if (len + n > max_len)
			n = max_len - len;
		memmove(buf + len, buf + pos, n);
		len += n;
		break;
	default: { /* splice in part of another input */
		const struct input *o = &corpus[rnd_below(ncorpus)];

		if (!o->in_len)
			break;
		pos = rnd_below(len + 1);
		n = 1 + rnd_below(o->in_len);
		if (pos + n > max_len)
			n = max_len - pos;
		memcpy(buf + pos, o->in_data + rnd_below(o->in_len - n + 1), n);
		if (pos + n > len)
			len = pos + n;
		break;
	}
	}
	return len;
}

/* -valid: run each input once; 1 if a parser refused any. */
static int check_valid(char **argv, int argc)
{
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		ncorpus = 0;
		if (add_path(argv[i], DEFAULT_MAX_LEN) < 0 || ncorpus != 1) {
			fprintf(stderr, "fuzz-main: %s: not one readable file\n",
				argv[i]);
			return 2;
		}
		refused_by = NULL;
		run_one(corpus[0].in_data, corpus[0].in_len);
		free(corpus[0].in_data);
		if (refused_by) {
			printf("refused by %s: %s\n", refused_by, argv[i]);
			bad = 1;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	unsigned long long runs = 0;
	size_t max_len = DEFAULT_MAX_LEN;
	const char *prefix = NULL;
	uint8_t *buf;
	int rv;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-valid"))
			return check_valid(argv, argc);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "-runs=", 6))
			runs = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "-seed=", 6))
			seed = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "-max_len=", 9))
			max_len = strtoul(a + 9, NULL, 10);
		else if (!strncmp(a, "-artifact_prefix=", 17))
			prefix = a + 17;
		else if (a[0] == '-')
			continue;	/* a libFuzzer flag we do not need */
		else if ((rv = add_path(a, max_len)) < 0) {
			fprintf(stderr, "fuzz-main: %s: %s\n", a,
				strerror(-rv));
			return 2;
		}
	}
	if (!max_len)
		max_len = DEFAULT_MAX_LEN;
	signal(SIGSEGV, on_crash);
	signal(SIGABRT, on_crash);
	signal(SIGILL, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGFPE, on_crash);
	signal(SIGTRAP, on_crash);

	for (size_t i = 0; i < ncorpus; i++) {
		if (prefix)
			snprintf(crash_path, sizeof(crash_path),
				 "%scrash-corpus-%zu", prefix, i);
		run_one(corpus[i].in_data, corpus[i].in_len);
	}
	fprintf(stderr, "fuzz-main: %zu corpus inputs ok\n", ncorpus);

	buf = malloc(max_len + 1);
	if (!buf)
		return 2;
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	for (cur_run = 0; cur_run < runs; cur_run++) {
		size_t len = 0, nmut = 1 + rnd_below(MAX_MUTATIONS);

		if (ncorpus) {
			const struct input *in = &corpus[rnd_below(ncorpus)];

			len = in->in_len < max_len ? in->in_len : max_len;
			memcpy(buf, in->in_data, len);
		}
		for (size_t m = 0; m < nmut; m++)
			len = mutate_once(buf, len, max_len);
		if (prefix)
			snprintf(crash_path, sizeof(crash_path),
				 "%scrash-%llu", prefix, cur_run);
		run_one(buf, len);
		if (cur_run && cur_run % PROGRESS_EVERY == 0)
			fprintf(stderr, "fuzz-main: %llu runs (seed %llu)\n",
				cur_run, seed);
	}
	fprintf(stderr, "fuzz-main: done, %llu mutated runs, seed %llu\n",
		runs, seed);
	free(buf);
	for (size_t i = 0; i < ncorpus; i++)
		free(corpus[i].in_data);
	return 0;
}
