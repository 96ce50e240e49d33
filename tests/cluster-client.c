/*
 * tests/cluster-client.c - the lock workload of the cluster tests, and the
 * checker that judges it from outside.
 *
 *   cluster-client work LS DIR NRES MS SEED
 *       For MS milliseconds take EX, PR and PW locks (with VALBLK) on
 *       resources "res-0" .. "res-<NRES-1>" of lockspace LS.  Inside an EX
 *       section increment the resource's counter, kept both in the LVB
 *       (8 bytes, little-endian, then a marker) and in the file DIR/counters/r<N> that
 *       every node's namespace sees; the two must agree whenever the LVB
 *       is valid and carries the marker (an LVB of a resource that nobody
 *       held comes back zeroed, by DLM rules).  Every hold is appended to DIR/logs/<node>-<pid>.log:
 *         H res mode t_granted t_released   (CLOCK_MONOTONIC ns; one kernel,
 *                                           so comparable across nodes)
 *         B res                             about to write an increment
 *         X res old new                     the increment, before unlock
 *         U res                             that EX lock's unlock returned
 *         L res lvb file                    an EX (or final PR) saw a valid LVB
 *                                           that differs from the file
 *         V text                            a violation seen in the client
 *         S ex pr pw errors                 summary at the end
 *   cluster-client final LS DIR NRES
 *       PR+VALBLK on every resource; an LVB that differs from the file is
 *       logged (L) for the checker.
 *   cluster-client check DIR NRES
 *       Read every log: no two incompatible holds of one resource overlap
 *       in time; the increments of each resource form one chain 0,1,2..
 *       without a repeated value (a repeat is a lost update); the file
 *       holds the chain's last value (one more is allowed only when a
 *       client was killed between B and X); a valid LVB differs from
 *       the file only by increments of writers that died inside their EX
 *       section (a dead client's lock is force-unlocked without writing
 *       the LVB, by DLM rules).  Prints the counts and exits
 *       1 on any violation.
 *   cluster-client try LS RES MODE
 *       Request RES in MODE and print "granted" when it is (the test runs
 *       it under timeout(1) to see that nothing is granted).
 *   cluster-client hold LS RES MODE
 *       Take RES in MODE, print "held", sleep until killed.
 *   cluster-client orphan LS RES MODE
 *       As hold, with LKF_PERSISTENT, printing "held PID": killed, it
 *       leaves the lock behind as an orphan of PID on its node.
 *   cluster-client purge LS NODEID PID
 *       dlm_ls_purge(NODEID, PID) and print "purged" (the orphans of PID
 *       on node NODEID; 0: all of them).
 *
 * Node name for logs: $DLM_CLUSTER_NODE (set by dlm-cluster exec).
 */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define NAME_LEN	32
#define LVB_LEN		32
#define MAX_RES		64
#define MAX_HOLDS	(1u << 20)	/* per check run */
#define MAX_XS		(MAX_RES * 65536u)
#define LINE_LEN	256
#define HOLD_MAX_US	3000		/* work: a hold lasts up to this */
#define HOLD_SLEEP_S	3600

#define LKM_NLMODE	0
#define LKM_PRMODE	3
#define LKM_PWMODE	4
#define LKM_EXMODE	5

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int logfd = -1;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line, one write(2) with O_APPEND: lines of different clients never
 * interleave, and a killed client leaves whole lines. */
static void logf_(const char *fmt, ...)
{
	char buf[LINE_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && logfd >= 0 && write(logfd, buf, (size_t)n) != n)
		perror("log write");
}

static int mode_of(const char *s)
{
	if (!strcmp(s, "EX"))
		return LKM_EXMODE;
	if (!strcmp(s, "PW"))
		return LKM_PWMODE;
	if (!strcmp(s, "PR"))
		return LKM_PRMODE;
	return -1;
}

static const char *mode_str(int m)
{
	return m == LKM_EXMODE ? "EX" : m == LKM_PWMODE ? "PW" : "PR";
}

/* compatibility among PR, PW, EX as the DLM's matrix says */
static int compat(int a, int b)
{
	return a == LKM_PRMODE && b == LKM_PRMODE;
}

/* bytes 8..15 of the LVB: present when an EX holder wrote the counter.
 * A resource nobody holds may be dropped (and is, at recovery), and
 * comes back with a zeroed LVB: that is DLM semantics, not a loss. */
static const char lvb_magic[8] = { 'd', 'l', 'm', 'c', 'n', 't', '0', '1' };

static int lvb_has_counter(const char *lvb)
{
	return !memcmp(lvb + 8, lvb_magic, sizeof(lvb_magic));
}

static uint64_t lvb_get(const char *lvb)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | (unsigned char)lvb[i];
	return v;
}

static void lvb_put(char *lvb, uint64_t v)
{
	memset(lvb, 0, LVB_LEN);
	for (int i = 0; i < 8; i++)
		lvb[i] = (char)(v >> (8 * i));
	memcpy(lvb + 8, lvb_magic, sizeof(lvb_magic));
}

static int file_get(int fd, uint64_t *v)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*v = n ? strtoull(buf, NULL, 10) : 0;
	return 0;
}

/* One fixed-width pwrite, no truncation: a writer killed at any point
 * leaves either the old or the new value, never an empty file. */
static int file_put(int fd, uint64_t v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%020" PRIu64 "\n", v);

	if (pwrite(fd, buf, (size_t)n, 0) != n)
		return -errno;
	return 0;
}

static int open_counter(const char *dir, unsigned int r)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/counters/r%u", dir, r);
	return open(path, O_RDWR | O_CREAT, 0644);
}

static dlm_lshandle_t get_ls(const char *name)
{
	dlm_lshandle_t ls = dlm_create_lockspace(name, 0666);

	if (!ls)
		ls = dlm_open_lockspace(name);
	if (!ls)
		fprintf(stderr, "cluster-client: lockspace %s: %s\n", name,
			strerror(errno));
	return ls;
}

static int lock_wait_flags(dlm_lshandle_t ls, int mode, struct dlm_lksb *lksb,
			   const char *name, uint32_t flags)
{
	int rv = dlm_ls_lock_wait(ls, (uint32_t)mode, lksb, LKF_VALBLK | flags, name,
				  (unsigned int)strlen(name), 0, NULL, NULL, NULL);

	if (rv < 0)
		return -errno;
	return lksb->sb_status ? -lksb->sb_status : 0;
}

static int lock_wait(dlm_lshandle_t ls, int mode, struct dlm_lksb *lksb,
		     const char *name)
{
	return lock_wait_flags(ls, mode, lksb, name, 0);
}

static int do_work(int argc, char **argv)
{
	const char *dir = argv[3];
	unsigned int nres = (unsigned int)atoi(argv[4]);
	uint64_t end = now_ns() + (uint64_t)atoll(argv[5]) * 1000000ull;
	const char *node = getenv("DLM_CLUSTER_NODE");
	unsigned long ex = 0, pr = 0, pw = 0, errs = 0;
	char path[4096], lvb[LVB_LEN];
	dlm_lshandle_t ls;

	srandom((unsigned int)atoi(argv[6]) ^ (unsigned int)getpid());
	if (!nres || nres > MAX_RES)
		return 2;
	snprintf(path, sizeof(path), "%s/logs/n%s-%d.log", dir, node ? node : "0",
		 (int)getpid());
	logfd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (logfd < 0) {
		perror(path);
		return 1;
	}
	ls = get_ls(argv[2]);
	if (!ls)
		return 1;
	while (now_ns() < end) {
		unsigned int r = (unsigned int)random() % nres;
		int pick = (int)(random() % 4);
		int mode = pick < 2 ? LKM_EXMODE : pick == 2 ? LKM_PRMODE : LKM_PWMODE;
		struct dlm_lksb lksb;
		char name[NAME_LEN];
		uint64_t t0, t1;
		int rv;

		memset(&lksb, 0, sizeof(lksb));
		/* an LVB the DLM does not return must not look like one */
		memset(lvb, 0, sizeof(lvb));
		lksb.sb_lvbptr = lvb;
		snprintf(name, sizeof(name), "res-%u", r);
		rv = lock_wait(ls, mode, &lksb, name);
		if (rv) {
			errs++;
			logf_("E %u lock %d\n", r, rv);
			if (rv == -ECONNRESET || rv == -EPIPE || rv == -ENOTCONN ||
			    rv == -ECONNABORTED)
				break;
			continue;
		}
		t0 = now_ns();
		if (mode == LKM_EXMODE) {
			int fd = open_counter(dir, r);
			uint64_t fv = 0, lv = lvb_get(lvb);

			if (fd < 0 || file_get(fd, &fv)) {
				logf_("V %u cannot read counter file\n", r);
			} else {
				if (!(lksb.sb_flags & DLM_SBF_VALNOTVALID) &&
				    lvb_has_counter(lvb) && lv != fv)
					logf_("L %u %" PRIu64 " %" PRIu64 "\n", r, lv, fv);
				logf_("B %u\n", r);
				if (file_put(fd, fv + 1))
					logf_("V %u cannot write counter file\n", r);
				logf_("X %u %" PRIu64 " %" PRIu64 "\n", r, fv, fv + 1);
				lvb_put(lvb, fv + 1);
			}
			if (fd >= 0)
				close(fd);
			ex++;
		} else if (mode == LKM_PRMODE) {
			pr++;
		} else {
			pw++;
		}
		usleep((useconds_t)(random() % HOLD_MAX_US));
		t1 = now_ns();
		logf_("H %u %s %" PRIu64 " %" PRIu64 "\n", r, mode_str(mode), t0, t1);
		rv = dlm_ls_unlock_wait(ls, lksb.sb_lkid,
					mode == LKM_EXMODE ? LKF_VALBLK : 0, &lksb);
		if (rv < 0) {
			errs++;
			logf_("E %u unlock %d\n", r, -errno);
			break;
		}
		if (mode == LKM_EXMODE)
			logf_("U %u\n", r);
	}
	logf_("S %lu %lu %lu %lu\n", ex, pr, pw, errs);
	printf("node %s pid %d: ex %lu pr %lu pw %lu errors %lu\n", node ? node : "?",
	       (int)getpid(), ex, pr, pw, errs);
	dlm_close_lockspace(ls);
	return 0;
}

static int do_final(int argc, char **argv)
{
	const char *dir = argv[3];
	unsigned int nres = (unsigned int)atoi(argv[4]);
	dlm_lshandle_t ls = get_ls(argv[2]);
	char path[4096];
	int bad = 0;

	if (!ls)
		return 1;
	snprintf(path, sizeof(path), "%s/logs/final-%d.log", dir, (int)getpid());
	logfd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	for (unsigned int r = 0; r < nres; r++) {
		struct dlm_lksb lksb;
		char name[NAME_LEN], lvb[LVB_LEN];
		uint64_t fv = 0;
		int fd = open_counter(dir, r);

		memset(&lksb, 0, sizeof(lksb));
		lksb.sb_lvbptr = lvb;
		snprintf(name, sizeof(name), "res-%u", r);
		if (lock_wait(ls, LKM_PRMODE, &lksb, name)) {
			printf("VIOLATION final: cannot lock %s\n", name);
			bad = 1;
			continue;
		}
		if (fd < 0 || file_get(fd, &fv))
			fv = 0;
		if (fd >= 0)
			close(fd);
		/* the checker decides whether a lag is explained by writers
		 * that died inside their EX section */
		if (!(lksb.sb_flags & DLM_SBF_VALNOTVALID) && lvb_has_counter(lvb) &&
		    lvb_get(lvb) != fv) {
			logf_("L %u %" PRIu64 " %" PRIu64 "\n", r, lvb_get(lvb), fv);
			printf("final: %s lvb %" PRIu64 " file %" PRIu64 " (left to the "
			       "checker)\n", name, lvb_get(lvb), fv);
		}
		dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb);
	}
	dlm_close_lockspace(ls);
	printf("final: %u resources read%s\n", nres, bad ? ", some could not be locked" : "");
	return bad;
}

struct hold {
	unsigned int	h_res;
	int		h_mode;
	uint64_t	h_t0;
	uint64_t	h_t1;
	unsigned int	h_who;
};

static int cmp_hold(const void *a, const void *b)
{
	const struct hold *x = a, *y = b;

	if (x->h_res != y->h_res)
		return x->h_res < y->h_res ? -1 : 1;
	return x->h_t0 < y->h_t0 ? -1 : x->h_t0 > y->h_t0;
}

static int do_check(int argc, char **argv)
{
	const char *dir = argv[2];
	unsigned int nres = (unsigned int)atoi(argv[3]);
	static struct hold holds[MAX_HOLDS];
	static unsigned char seen[MAX_RES][MAX_XS / MAX_RES];
	/* increments whose writer never released its EX (it died inside) */
	static unsigned char died[MAX_RES][MAX_XS / MAX_RES];
	static struct {
		unsigned int r;
		uint64_t lv, fv;
		char who[sizeof(((struct dirent *)0)->d_name)];
	} lags[4096];
	size_t nlags = 0;
	uint64_t maxnew[MAX_RES] = { 0 }, nx[MAX_RES] = { 0 };
	unsigned int begins[MAX_RES] = { 0 }, ends[MAX_RES] = { 0 };
	size_t nholds = 0;
	unsigned long violations = 0, ex = 0, pr = 0, pw = 0, errs = 0, clients = 0;
	char path[4096], line[LINE_LEN];
	unsigned int who = 0;
	struct dirent *de;
	DIR *dp;

	if (!nres || nres > MAX_RES)
		return 2;
	snprintf(path, sizeof(path), "%s/logs", dir);
	dp = opendir(path);
	if (!dp) {
		perror(path);
		return 2;
	}
	while ((de = readdir(dp))) {
		unsigned int b[MAX_RES] = { 0 };
		int open_x = -1;	/* resource of an X not yet closed by U */
		uint64_t open_o = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/logs/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		who++;
		clients++;
		while (fgets(line, sizeof(line), f)) {
			unsigned int r;
			unsigned long a1, a2, a3, a4;
			uint64_t o, n, t0, t1;
			char m[8];

			if (sscanf(line, "U %u", &r) == 1) {
				if ((int)r == open_x)
					open_x = -1;
			} else if (sscanf(line, "H %u %7s %" SCNu64 " %" SCNu64, &r, m, &t0, &t1) == 4) {
				if (r < nres && nholds < MAX_HOLDS)
					holds[nholds++] = (struct hold){ r, mode_of(m), t0, t1, who };
			} else if (sscanf(line, "X %u %" SCNu64 " %" SCNu64, &r, &o, &n) == 3) {
				if (r >= nres)
					continue;
				ends[r]++;
				if (b[r])
					b[r]--;
				if (n != o + 1 || o >= sizeof(seen[0])) {
					printf("VIOLATION %s: bad increment %s", de->d_name, line);
					violations++;
					continue;
				}
				if (seen[r][o]) {
					printf("VIOLATION res-%u: value %" PRIu64 " incremented "
					       "twice (lost update)\n", r, o);
					violations++;
				}
				seen[r][o] = 1;
				nx[r]++;
				if (open_x >= 0 && open_o < sizeof(died[0]))
					died[open_x][open_o] = 1;
				open_x = (int)r;
				open_o = o;
				if (n > maxnew[r])
					maxnew[r] = n;
			} else if (sscanf(line, "B %u", &r) == 1) {
				if (r < nres) {
					begins[r]++;
					b[r]++;
				}
			} else if (sscanf(line, "L %u %" SCNu64 " %" SCNu64, &r, &o, &n) == 3) {
				if (r < nres && nlags < sizeof(lags) / sizeof(lags[0])) {
					lags[nlags].r = r;
					lags[nlags].lv = o;
					lags[nlags].fv = n;
					snprintf(lags[nlags].who, sizeof(lags[0].who), "%s",
						 de->d_name);
					nlags++;
				}
			} else if (line[0] == 'V') {
				printf("VIOLATION %s: %s", de->d_name, line);
				violations++;
			} else if (sscanf(line, "S %lu %lu %lu %lu", &a1, &a2, &a3, &a4) == 4) {
				ex += a1;
				pr += a2;
				pw += a3;
				errs += a4;
			}
		}
		fclose(f);
		/* the log ends inside an EX section: that writer died there */
		if (open_x >= 0 && open_o < sizeof(died[0]))
			died[open_x][open_o] = 1;
		(void)b;
	}
	closedir(dp);
	/* an LVB may lag the file only by increments of writers that died
	 * holding EX (their lock was purged without writing the LVB) */
	for (size_t i = 0; i < nlags; i++) {
		bool ok = lags[i].lv < lags[i].fv;

		for (uint64_t v = lags[i].lv; ok && v < lags[i].fv; v++)
			if (v >= sizeof(died[0]) || !died[lags[i].r][v])
				ok = false;
		if (!ok) {
			printf("VIOLATION %s: res-%u LVB %" PRIu64 " but file %" PRIu64
			       " (not explained by dead writers)\n", lags[i].who,
			       lags[i].r, lags[i].lv, lags[i].fv);
			violations++;
		}
	}
	qsort(holds, nholds, sizeof(holds[0]), cmp_hold);
	/* overlap: against every earlier hold of the resource still open */
	for (size_t i = 0; i < nholds; i++) {
		for (size_t j = i; j-- > 0;) {
			if (holds[j].h_res != holds[i].h_res)
				break;
			if (holds[j].h_t1 <= holds[i].h_t0)
				continue;
			if (!compat(holds[j].h_mode, holds[i].h_mode)) {
				printf("VIOLATION res-%u: %s [%" PRIu64 ",%" PRIu64 "] overlaps "
				       "%s [%" PRIu64 ",%" PRIu64 "]\n", holds[i].h_res,
				       mode_str(holds[j].h_mode), holds[j].h_t0,
				       holds[j].h_t1, mode_str(holds[i].h_mode),
				       holds[i].h_t0, holds[i].h_t1);
				violations++;
			}
		}
	}
	for (unsigned int r = 0; r < nres; r++) {
		int fd = open_counter(dir, r);
		uint64_t fv = 0;
		unsigned int unfinished = begins[r] - ends[r];

		if (fd >= 0) {
			file_get(fd, &fv);
			close(fd);
		}
		/* the chain 0..max must be complete */
		if (nx[r] != maxnew[r]) {
			printf("VIOLATION res-%u: %" PRIu64 " increments but the chain "
			       "ends at %" PRIu64 "\n", r, nx[r], maxnew[r]);
			violations++;
		}
		if (fv < maxnew[r] || fv > maxnew[r] + unfinished) {
			printf("VIOLATION res-%u: file %" PRIu64 ", increments %" PRIu64
			       " (+%u unfinished)\n", r, fv, maxnew[r], unfinished);
			violations++;
		}
	}
	{
		uint64_t total = 0;

		for (unsigned int r = 0; r < nres; r++)
			total += nx[r];
		printf("check: %lu clients, %zu holds, %" PRIu64 " EX increments "
		       "(clients report ex %lu pr %lu pw %lu errors %lu), "
		       "%lu violation%s\n", clients, nholds, total, ex, pr, pw, errs,
		       violations, violations == 1 ? "" : "s");
	}
	return violations ? 1 : 0;
}

enum try_kind { TRY, HOLD, ORPHAN };

static int do_try(int argc, char **argv, enum try_kind kind)
{
	dlm_lshandle_t ls = get_ls(argv[2]);
	struct dlm_lksb lksb;
	char lvb[LVB_LEN];
	int mode = mode_of(argv[4]), rv;

	if (!ls || mode < 0)
		return 2;
	memset(&lksb, 0, sizeof(lksb));
	lksb.sb_lvbptr = lvb;
	rv = lock_wait_flags(ls, mode, &lksb, argv[3],
			     kind == ORPHAN ? LKF_PERSISTENT : 0);
	if (rv) {
		printf("error %d\n", rv);
		dlm_close_lockspace(ls);
		return 1;
	}
	if (kind == ORPHAN)
		printf("held %d\n", (int)getpid());
	else
		printf("%s\n", kind == HOLD ? "held" : "granted");
	fflush(stdout);
	if (kind != TRY)
		sleep(HOLD_SLEEP_S);
	dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb);
	dlm_close_lockspace(ls);
	return 0;
}

static int do_purge(int argc, char **argv)
{
	dlm_lshandle_t ls = get_ls(argv[2]);
	int rv;

	if (!ls)
		return 2;
	rv = dlm_ls_purge(ls, atoi(argv[3]), atoi(argv[4]));
	if (rv)
		printf("error %d\n", errno);
	else
		printf("purged\n");
	dlm_close_lockspace(ls);
	return rv ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "work"))
		return do_work(argc, argv);
	if (argc == 5 && !strcmp(argv[1], "final"))
		return do_final(argc, argv);
	if (argc == 4 && !strcmp(argv[1], "check"))
		return do_check(argc, argv);
	if (argc == 5 && !strcmp(argv[1], "try"))
		return do_try(argc, argv, TRY);
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return do_try(argc, argv, HOLD);
	if (argc == 5 && !strcmp(argv[1], "orphan"))
		return do_try(argc, argv, ORPHAN);
	if (argc == 5 && !strcmp(argv[1], "purge"))
		return do_purge(argc, argv);
	fprintf(stderr, "usage: cluster-client work LS DIR NRES MS SEED | final LS DIR NRES |\n"
		"       check DIR NRES | try LS RES MODE | hold LS RES MODE |\n"
		"       orphan LS RES MODE | purge LS NODEID PID\n");
	return 2;
}
