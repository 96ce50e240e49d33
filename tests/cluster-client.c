/*
 * tests/cluster-client.c - the lock workload of the cluster tests, and the
 * checker that judges it from outside.
 *
 *   cluster-client work LS DIR NRES MS SEED
 *       For MS milliseconds take EX, PR and PW locks (with VALBLK) on
 *       resources "res-0" .. "res-<NRES-1>" of lockspace LS.  Inside an EX
 *       section increment the resource's counter, kept both in the LVB
 *       (8 bytes, little-endian, then a marker) and in the file DIR/counters/r<N> that
 *       every node's namespace sees.  Every step a checker needs is
 *       appended to DIR/logs/<node>-<pid>.log, one write(2) a line, so
 *       a client killed at any point leaves whole lines (times are
 *       CLOCK_MONOTONIC ns; one kernel, so comparable across nodes):
 *         G res mode t                   granted at t (the hold begins)
 *         L res lvb file                 the grant carried a valid LVB with
 *                                        the counter, and it differs from
 *                                        the file (any mode: the file
 *                                        cannot change while we hold it)
 *         B res old t                    EX: about to write old+1 to the file
 *         X res old new t                EX: the file holds new
 *         H res mode t_granted t_released  the hold is over; unlock follows
 *         U res status                   EX: the unlock returned, with the
 *                                        lksb's sb_status (EUNLOCK: the LVB
 *                                        was written)
 *         E res what errno               a call failed
 *         V text                         a violation seen in the client
 *         S ex pr pw errors              summary at the end
 *   cluster-client final LS DIR NRES
 *       PR+VALBLK on every resource; an LVB that differs from the file is
 *       logged (L) for the checker.
 *   cluster-client check DIR NRES
 *       Read every log and judge, exactly (every violation it reports is
 *       one, whatever point the faults killed a client at):
 *       - holds: no two incompatible holds of one resource overlap in
 *         time.  A hold whose client died inside it (G without H) lasts
 *         from its grant to the last thing it did (its B or X);
 *       - increments: each resource's values 0,1,2.. are each
 *         incremented once: by an X, or by a writer that died between
 *         its B and its X (it may or may not have written); a value
 *         incremented twice is a lost update, a value never incremented
 *         below the last is a hole;
 *       - the file holds the last X's value, or more by writers that died
 *         between B and X at the top of the chain;
 *       - LVBs: a valid LVB may lag the file only by increments whose LVB
 *         was not written: the writer died in its EX section, or its
 *         unlock did not end in EUNLOCK (a dead client's lock is force-
 *         unlocked without writing the LVB, by DLM rules).  Any other lag
 *         (an LVB that went backwards) and any LVB ahead of the file are
 *         violations.
 *       Prints the counts and exits 1 on any violation.
 *   cluster-client try LS RES MODE
 *       Request RES in MODE and print "granted" when it is (the test runs
 *       it under timeout(1) to see that nothing is granted).
 *   cluster-client hold LS RES MODE
 *       Take RES in MODE (EX, PW, PR, or NL: a lock beside any other),
 *       print "held", sleep until killed.
 *   cluster-client orphan LS RES MODE
 *       As hold, with LKF_PERSISTENT, printing "held PID": killed, it
 *       leaves the lock behind as an orphan of PID on its node.
 *   cluster-client token-hold LS RES MODE
 *       As hold, printing "held token N": the lock's fencing token
 *       (dlm_ls_lock_token; MODE CW, PW or EX).
 *   cluster-client deadlock LS FIRST SECOND GO
 *       Take FIRST in EX, print "held", wait (at most a minute) until the
 *       file GO exists, then ask for SECOND in EX with dlm_ls_lock_wait
 *       (a blocking request: a waiter to deadlock detection).  Print
 *       "granted" when it is, or "deadlock LKID" (the request's lock id,
 *       in hex as dlmctl ls shows it) when it ends with EDEADLK; either
 *       way let go of everything and exit 0.  Two of them on two nodes
 *       with FIRST and SECOND swapped make a deadlock across nodes.
 *   cluster-client store FILE TOKEN
 *       A toy storage server's check of a write with fencing token TOKEN
 *       to the object kept in FILE (the highest token it accepted, in
 *       decimal, under flock): "accepted" (exit 0) when TOKEN is not
 *       below it, then FILE holds TOKEN; "rejected TOKEN below HIGH"
 *       (exit 3) otherwise.
 *   cluster-client now
 *       Print CLOCK_MONOTONIC in seconds with milliseconds: the clock of
 *       dlmd's flight recorder (dlmctl dump), for timing a recovery.
 *   cluster-client purge LS NODEID PID
 *       dlm_ls_purge(NODEID, PID) and print "purged" (the orphans of PID
 *       on node NODEID; 0: all of them).
 *   cluster-client workfold LS DIR NRES MS SEED
 *       As work, without VALBLK: locks a node alone in LS may fold with
 *       their resources (core/solo.c); no LVBs, so the checker judges
 *       holds and the counter files only.
 *   cluster-client many LS DIR PREFIX FROM TO MODE CMDS
 *       Request PREFIX-<i> for i in [FROM, TO) (at most 131072 of them:
 *       test-cluster-churn's 100000) in MODE (EX, PW, PR, NL),
 *       no VALBLK, blocking ASTs wanted, asynchronously (32 at a time
 *       but for those that wait); print "granted i" for each grant and "held N" once all
 *       N are.  Then obey the lines appended to the file CMDS (polled),
 *       answering each on stdout:
 *         unlock A B      unlock those held of [A, B): "unlocked A B K"
 *         convert I MODE [LVB]  convert lock I (granted, a down-
 *                         conversion: it must not wait) to MODE, with
 *                         VALBLK and the LVB text LVB if given:
 *                         "converted I MODE STATUS"
 *         basts           "basts K": how many of its locks got a BAST
 *         quit            unlock all, print "done", exit 0
 *       Every hold of i < MAX_RES in EX, PW or PR is logged as an H line
 *       to DIR/logs/ when it ends (a checker's history: 'check DIR 64').
 *   cluster-client lvbread LS RES
 *       PR with VALBLK on RES: print "lvb TEXT" (the LVB as a string) or
 *       "lvb invalid", unlock, exit 0.
 *
 * Node name for logs: $DLM_CLUSTER_NODE (set by dlm-cluster exec).
 */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
	if (!strcmp(s, "NL"))
		return LKM_NLMODE;	/* try and hold only: no workload mode */
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

/* LKF_VALBLK on every lock of the workload; 0 in workfold */
static uint32_t valblk = LKF_VALBLK;

static int lock_wait_flags(dlm_lshandle_t ls, int mode, struct dlm_lksb *lksb,
			   const char *name, uint32_t flags)
{
	int rv = dlm_ls_lock_wait(ls, (uint32_t)mode, lksb, valblk | flags, name,
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
		uint64_t t0, t1, fv = 0;
		int fd, rv;

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
		logf_("G %u %s %" PRIu64 "\n", r, mode_str(mode), t0);
		fd = open_counter(dir, r);
		if (fd < 0 || file_get(fd, &fv)) {
			logf_("V %u cannot read counter file\n", r);
		} else {
			/* every mode reads: no writer runs while we hold it */
			if (!(lksb.sb_flags & DLM_SBF_VALNOTVALID) &&
			    lvb_has_counter(lvb) && lvb_get(lvb) != fv)
				logf_("L %u %" PRIu64 " %" PRIu64 "\n", r, lvb_get(lvb), fv);
			if (mode == LKM_EXMODE) {
				logf_("B %u %" PRIu64 " %" PRIu64 "\n", r, fv, now_ns());
				if (file_put(fd, fv + 1))
					logf_("V %u cannot write counter file\n", r);
				logf_("X %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r, fv,
				      fv + 1, now_ns());
				lvb_put(lvb, fv + 1);
			}
		}
		if (fd >= 0)
			close(fd);
		if (mode == LKM_EXMODE)
			ex++;
		else if (mode == LKM_PRMODE)
			pr++;
		else
			pw++;
		usleep((useconds_t)(random() % HOLD_MAX_US));
		t1 = now_ns();
		logf_("H %u %s %" PRIu64 " %" PRIu64 "\n", r, mode_str(mode), t0, t1);
		rv = dlm_ls_unlock_wait(ls, lksb.sb_lkid,
					mode == LKM_EXMODE ? valblk : 0, &lksb);
		if (rv < 0) {
			errs++;
			logf_("E %u unlock %d\n", r, -errno);
			break;
		}
		if (mode == LKM_EXMODE)
			logf_("U %u %d\n", r, lksb.sb_status);
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

/* What the logs say happened to each value of a resource's counter. */
#define VAL_X		0x01	/* an X incremented it */
#define VAL_X2		0x02	/* ... and another X too: a lost update */
#define VAL_DEADB	0x04	/* a writer died between its B and X */
#define VAL_LVB_OK	0x08	/* an X whose unlock wrote the LVB */
#define VAL_LVB_LOST	0x10	/* an X whose LVB was not written */
#define MAX_VALS	(MAX_XS / MAX_RES)

/* The parse state of one client's log. */
struct client_state {
	bool		cs_g;		/* inside a hold (G seen, no H yet) */
	unsigned int	cs_g_res;
	int		cs_g_mode;
	uint64_t	cs_g_t0;
	uint64_t	cs_g_last;	/* the last thing done in it */
	bool		cs_b;		/* B seen, no X yet */
	unsigned int	cs_b_res;
	uint64_t	cs_b_old;
	bool		cs_x;		/* X seen, no U yet */
	unsigned int	cs_x_res;
	uint64_t	cs_x_old;
};

struct check {
	unsigned int	c_nres;
	struct hold	*c_holds;
	size_t		c_nholds;
	unsigned char	(*c_val)[MAX_VALS];
	uint64_t	c_maxnew[MAX_RES];
	struct {
		unsigned int r;
		uint64_t lv, fv;
		char who[sizeof(((struct dirent *)0)->d_name)];
	} c_lags[4096];
	size_t		c_nlags;
	unsigned long	c_violations;
	unsigned long	c_deadb, c_lvb_lost;
};

static void add_hold(struct check *c, unsigned int r, int mode, uint64_t t0,
		     uint64_t t1, unsigned int who)
{
	if (r < c->c_nres && mode >= 0 && c->c_nholds < MAX_HOLDS)
		c->c_holds[c->c_nholds++] = (struct hold){ r, mode, t0, t1, who };
}

static void violation(struct check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct check *c, const char *fmt, ...)
{
	va_list ap;

	printf("VIOLATION ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	c->c_violations++;
}

/* The X that cs_x names is over: its LVB was written or not. */
static void close_x(struct check *c, struct client_state *cs, bool written)
{
	if (!cs->cs_x)
		return;
	if (cs->cs_x_res < c->c_nres && cs->cs_x_old < MAX_VALS) {
		c->c_val[cs->cs_x_res][cs->cs_x_old] |= written ? VAL_LVB_OK : VAL_LVB_LOST;
		if (!written)
			c->c_lvb_lost++;
	}
	cs->cs_x = false;
}

/* One line of a client's log (see the file's header for the letters). */
static void check_line(struct check *c, struct client_state *cs, const char *name,
		       const char *line, unsigned int who, unsigned long sums[4])
{
	unsigned int r;
	uint64_t o, n, t0, t1;
	int st;
	char m[8];

	switch (line[0]) {
	case 'G':
		if (sscanf(line, "G %u %7s %" SCNu64, &r, m, &t0) != 3)
			break;
		if (cs->cs_g)	/* cannot happen in a live client: be safe */
			add_hold(c, cs->cs_g_res, cs->cs_g_mode, cs->cs_g_t0,
				 cs->cs_g_last, who);
		cs->cs_g = true;
		cs->cs_g_res = r;
		cs->cs_g_mode = mode_of(m);
		cs->cs_g_t0 = cs->cs_g_last = t0;
		return;
	case 'H':
		if (sscanf(line, "H %u %7s %" SCNu64 " %" SCNu64, &r, m, &t0, &t1) != 4)
			break;
		add_hold(c, r, mode_of(m), t0, t1, who);
		cs->cs_g = false;
		return;
	case 'B':
		if (sscanf(line, "B %u %" SCNu64 " %" SCNu64, &r, &o, &t0) != 3)
			break;
		cs->cs_b = true;
		cs->cs_b_res = r;
		cs->cs_b_old = o;
		if (cs->cs_g && t0 > cs->cs_g_last)
			cs->cs_g_last = t0;
		return;
	case 'X':
		if (sscanf(line, "X %u %" SCNu64 " %" SCNu64 " %" SCNu64, &r, &o, &n, &t0) != 4)
			break;
		if (r >= c->c_nres)
			return;
		cs->cs_b = false;
		if (cs->cs_g && t0 > cs->cs_g_last)
			cs->cs_g_last = t0;
		if (n != o + 1 || o >= MAX_VALS) {
			violation(c, "%s: bad increment %s", name, line);
			return;
		}
		if (c->c_val[r][o] & VAL_X) {
			c->c_val[r][o] |= VAL_X2;
			violation(c, "res-%u: value %" PRIu64 " incremented twice (lost "
				  "update)\n", r, o);
		}
		c->c_val[r][o] |= VAL_X;
		close_x(c, cs, false);	/* no U before the next X: not written */
		cs->cs_x = true;
		cs->cs_x_res = r;
		cs->cs_x_old = o;
		if (n > c->c_maxnew[r])
			c->c_maxnew[r] = n;
		return;
	case 'U':
		if (sscanf(line, "U %u %d", &r, &st) != 2)
			break;
		if (cs->cs_x && cs->cs_x_res == r)
			close_x(c, cs, st == EUNLOCK);
		return;
	case 'E':
		/* a failed unlock wrote nothing; a failed lock had no X */
		if (strstr(line, " unlock "))
			close_x(c, cs, false);
		return;
	case 'L':
		if (sscanf(line, "L %u %" SCNu64 " %" SCNu64, &r, &o, &n) != 3)
			break;
		if (r < c->c_nres && c->c_nlags < sizeof(c->c_lags) / sizeof(c->c_lags[0])) {
			c->c_lags[c->c_nlags].r = r;
			c->c_lags[c->c_nlags].lv = o;
			c->c_lags[c->c_nlags].fv = n;
			snprintf(c->c_lags[c->c_nlags].who, sizeof(c->c_lags[0].who), "%s", name);
			c->c_nlags++;
		}
		return;
	case 'V':
		violation(c, "%s: %s", name, line);
		return;
	case 'S':
		if (sscanf(line, "S %lu %lu %lu %lu", &sums[0], &sums[1], &sums[2], &sums[3]) == 4)
			return;
		break;
	default:
		break;
	}
	violation(c, "%s: a log line the checker does not know: %s", name, line);
}

/* The log ended: the client died (or finished) in the state it was in. */
static void check_eof(struct check *c, struct client_state *cs, unsigned int who)
{
	if (cs->cs_g)		/* died holding: the hold lasted to its last act */
		add_hold(c, cs->cs_g_res, cs->cs_g_mode, cs->cs_g_t0, cs->cs_g_last, who);
	if (cs->cs_b && cs->cs_b_res < c->c_nres && cs->cs_b_old < MAX_VALS) {
		c->c_val[cs->cs_b_res][cs->cs_b_old] |= VAL_DEADB;
		c->c_deadb++;
	}
	close_x(c, cs, false);	/* died before its unlock returned */
}

/* May a valid LVB 'lv' stand beside the file's 'fv'?  Only if every
 * increment in between left the LVB unwritten. */
static bool lag_explained(const struct check *c, unsigned int r, uint64_t lv, uint64_t fv)
{
	if (lv >= fv)
		return false;	/* ahead of the file: nobody writes that */
	for (uint64_t v = lv; v < fv; v++) {
		unsigned char f = v < MAX_VALS ? c->c_val[r][v] : 0;

		if (f & VAL_LVB_OK)
			return false;	/* this one's LVB was written */
		if (!(f & (VAL_LVB_LOST | VAL_DEADB)))
			return false;
	}
	return true;
}

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
	static struct check chk;
	static struct hold holds[MAX_HOLDS];
	static unsigned char vals[MAX_RES][MAX_VALS];
	struct check *c = &chk;
	unsigned long sums_total[4] = { 0 }, clients = 0;
	char path[4096], line[LINE_LEN];
	unsigned int who = 0;
	struct dirent *de;
	DIR *dp;

	c->c_nres = (unsigned int)atoi(argv[3]);
	c->c_holds = holds;
	c->c_val = vals;
	if (!c->c_nres || c->c_nres > MAX_RES)
		return 2;
	snprintf(path, sizeof(path), "%s/logs", dir);
	dp = opendir(path);
	if (!dp) {
		perror(path);
		return 2;
	}
	while ((de = readdir(dp))) {
		struct client_state cs = { 0 };
		unsigned long sums[4] = { 0 };
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/logs/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		who++;
		clients++;
		while (fgets(line, sizeof(line), f))
			check_line(c, &cs, de->d_name, line, who, sums);
		fclose(f);
		check_eof(c, &cs, who);
		for (int i = 0; i < 4; i++)
			sums_total[i] += sums[i];
	}
	closedir(dp);
	for (size_t i = 0; i < c->c_nlags; i++)
		if (!lag_explained(c, c->c_lags[i].r, c->c_lags[i].lv, c->c_lags[i].fv))
			violation(c, "%s: res-%u LVB %" PRIu64 " but file %" PRIu64
				  " (not explained by writers whose LVB was not written)\n",
				  c->c_lags[i].who, c->c_lags[i].r, c->c_lags[i].lv,
				  c->c_lags[i].fv);
	qsort(holds, c->c_nholds, sizeof(holds[0]), cmp_hold);
	/* overlap: against every earlier hold of the resource still open */
	for (size_t i = 0; i < c->c_nholds; i++) {
		for (size_t j = i; j-- > 0;) {
			if (holds[j].h_res != holds[i].h_res)
				break;
			if (holds[j].h_t1 <= holds[i].h_t0)
				continue;
			if (!compat(holds[j].h_mode, holds[i].h_mode))
				violation(c, "res-%u: %s [%" PRIu64 ",%" PRIu64 "] overlaps "
					  "%s [%" PRIu64 ",%" PRIu64 "]\n", holds[i].h_res,
					  mode_str(holds[j].h_mode), holds[j].h_t0,
					  holds[j].h_t1, mode_str(holds[i].h_mode),
					  holds[i].h_t0, holds[i].h_t1);
		}
	}
	for (unsigned int r = 0; r < c->c_nres; r++) {
		int fd = open_counter(dir, r);
		uint64_t fv = 0, max = c->c_maxnew[r];

		if (fd >= 0) {
			file_get(fd, &fv);
			close(fd);
		}
		/* the chain 0..max: every value incremented (by an X, or
		 * maybe by a writer that died after its B) */
		for (uint64_t v = 0; v < max && v < MAX_VALS; v++)
			if (!(vals[r][v] & (VAL_X | VAL_DEADB))) {
				violation(c, "res-%u: the chain ends at %" PRIu64 " but value %"
					  PRIu64 " was never incremented\n", r, max, v);
				break;
			}
		/* the file: the chain's top, or above it by dead writers */
		{
			bool ok = fv >= max;

			for (uint64_t v = max; ok && v < fv; v++)
				if (v >= MAX_VALS || !(vals[r][v] & VAL_DEADB))
					ok = false;
			if (!ok)
				violation(c, "res-%u: file %" PRIu64 ", increments end at %"
					  PRIu64 "\n", r, fv, max);
		}
	}
	{
		uint64_t total = 0;

		for (unsigned int r = 0; r < c->c_nres; r++)
			for (uint64_t v = 0; v < MAX_VALS; v++)
				total += vals[r][v] & VAL_X ? 1 : 0;
		printf("check: %lu clients, %zu holds, %" PRIu64 " EX increments "
		       "(clients report ex %lu pr %lu pw %lu errors %lu; %lu writers "
		       "died mid-write, %lu LVBs unwritten), %lu violation%s\n",
		       clients, c->c_nholds, total, sums_total[0], sums_total[1],
		       sums_total[2], sums_total[3], c->c_deadb, c->c_lvb_lost,
		       c->c_violations, c->c_violations == 1 ? "" : "s");
	}
	return c->c_violations ? 1 : 0;
}

enum try_kind { TRY, HOLD, ORPHAN, TOKEN_HOLD };

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
	if (kind == ORPHAN) {
		printf("held %d\n", (int)getpid());
	} else if (kind == TOKEN_HOLD) {
		uint64_t token = 0;

		if (dlm_ls_lock_token(ls, lksb.sb_lkid, &token)) {
			printf("error token %d\n", errno);
			dlm_close_lockspace(ls);
			return 1;
		}
		printf("held token %" PRIu64 "\n", token);
	} else
		printf("%s\n", kind == HOLD ? "held" : "granted");
	fflush(stdout);
	if (kind != TRY)
		sleep(HOLD_SLEEP_S);
	dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb);
	dlm_close_lockspace(ls);
	return 0;
}

#define GO_POLLS	600		/* deadlock: polls of 0.1 s for GO */

static int do_deadlock(char **argv)
{
	dlm_lshandle_t ls = get_ls(argv[2]);
	struct dlm_lksb first, second;
	char lvb1[LVB_LEN], lvb2[LVB_LEN];
	int rv, polls = 0;

	if (!ls)
		return 2;
	memset(&first, 0, sizeof(first));
	memset(&second, 0, sizeof(second));
	first.sb_lvbptr = lvb1;
	second.sb_lvbptr = lvb2;
	rv = lock_wait(ls, LKM_EXMODE, &first, argv[3]);
	if (rv) {
		printf("error %d\n", rv);
		dlm_close_lockspace(ls);
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	while (access(argv[5], F_OK) && ++polls < GO_POLLS)
		usleep(100000);
	rv = polls < GO_POLLS ? lock_wait(ls, LKM_EXMODE, &second, argv[4]) : -ETIMEDOUT;
	if (rv == -EDEADLK)
		printf("deadlock %08x\n", second.sb_lkid);
	else if (!rv)
		printf("granted\n");
	else
		printf("error %d\n", rv);
	fflush(stdout);
	if (!rv)
		dlm_ls_unlock_wait(ls, second.sb_lkid, 0, &second);
	dlm_ls_unlock_wait(ls, first.sb_lkid, 0, &first);
	dlm_close_lockspace(ls);
	return rv && rv != -EDEADLK;
}

static int do_store(char **argv)
{
	char *end, buf[32];
	uint64_t token, high = 0;
	ssize_t n;
	int fd, rv = 0;

	errno = 0;
	token = strtoull(argv[3], &end, 10);
	if (errno || *end || end == argv[3])
		return 2;
	fd = open(argv[2], O_RDWR | O_CREAT, 0644);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		printf("error %d\n", errno);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = 0;
		high = strtoull(buf, NULL, 10);
	}
	if (token < high) {
		printf("rejected %" PRIu64 " below %" PRIu64 "\n", token, high);
		rv = 3;
	} else {
		n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", token);
		if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
			printf("error %d\n", errno);
			rv = 1;
		} else {
			printf("accepted\n");
		}
	}
	close(fd);
	return rv;
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

/* many: a lock's state, its astarg */
#define MANY_MAX	(1u << 17)
#define MANY_INFLIGHT	32
#define MANY_WAIT_MS	60000

struct many_lock {
	struct dlm_lksb	ml_lksb;
	char		ml_lvb[LVB_LEN];
	unsigned int	ml_i;
	int		ml_mode;	/* granted mode; -1: not granted */
	int		ml_want;	/* the mode of its request in flight */
	bool		ml_busy;	/* a request of it is in flight */
	bool		ml_bast;
	uint64_t	ml_t0;
};

static struct many_lock *many_locks;
static unsigned int many_granted, many_basts, many_inflight;
static const char *many_prefix;

static void many_name(char *name, size_t len, unsigned int i)
{
	snprintf(name, len, "%s-%u", many_prefix, i);
}

static bool many_logged(const struct many_lock *ml)
{
	return ml->ml_i < MAX_RES && (ml->ml_mode == LKM_EXMODE ||
				      ml->ml_mode == LKM_PWMODE ||
				      ml->ml_mode == LKM_PRMODE);
}

static void many_comp(void *arg)
{
	struct many_lock *ml = arg;

	ml->ml_busy = false;
	many_inflight--;
	if (ml->ml_lksb.sb_status)
		return;
	if (ml->ml_mode < 0) {
		many_granted++;
		printf("granted %u\n", ml->ml_i);
		fflush(stdout);
	}
	ml->ml_mode = ml->ml_want;
	ml->ml_t0 = now_ns();
}

static void many_bast(void *arg)
{
	struct many_lock *ml = arg;

	if (!ml->ml_bast)
		many_basts++;
	ml->ml_bast = true;
}

/* Run the ASTs that come within ms milliseconds. */
static void many_dispatch(dlm_lshandle_t ls, int ms)
{
	struct pollfd p = { .fd = dlm_ls_get_fd(ls), .events = POLLIN };

	if (poll(&p, 1, ms) > 0)
		dlm_dispatch(p.fd);
}

static int many_request(dlm_lshandle_t ls, struct many_lock *ml, int mode,
			uint32_t flags)
{
	char name[NAME_LEN];

	many_name(name, sizeof(name), ml->ml_i);
	ml->ml_want = mode;
	ml->ml_busy = true;
	many_inflight++;
	if (dlm_ls_lock(ls, (uint32_t)mode, &ml->ml_lksb, flags, name,
			(unsigned int)strlen(name), 0, many_comp, ml, many_bast,
			NULL)) {
		ml->ml_busy = false;
		many_inflight--;
		return -errno;
	}
	return 0;
}

static void many_release(dlm_lshandle_t ls, struct many_lock *ml)
{
	struct dlm_lksb lksb = ml->ml_lksb;

	if (ml->ml_mode < 0)
		return;
	if (many_logged(ml))
		logf_("H %u %s %" PRIu64 " %" PRIu64 "\n", ml->ml_i,
		      mode_str(ml->ml_mode), ml->ml_t0, now_ns());
	dlm_ls_unlock_wait(ls, ml->ml_lksb.sb_lkid, 0, &lksb);
	ml->ml_mode = -1;
}

static int do_many(char **argv)
{
	const char *dir = argv[3], *node = getenv("DLM_CLUSTER_NODE");
	unsigned int from = (unsigned int)atoi(argv[5]);
	unsigned int to = (unsigned int)atoi(argv[6]), n, next = 0;
	unsigned int limit = MANY_INFLIGHT, idle = 0;
	int mode = mode_of(argv[7]);
	dlm_lshandle_t ls;
	char path[4096], line[LINE_LEN];
	FILE *cmds = NULL;
	bool all = false;

	if (to <= from || to - from > MANY_MAX || mode < 0)
		return 2;
	n = to - from;
	many_prefix = argv[4];
	many_locks = calloc(n, sizeof(*many_locks));
	if (!many_locks)
		return 1;
	snprintf(path, sizeof(path), "%s/logs/n%s-m%d.log", dir, node ? node : "0",
		 (int)getpid());
	logfd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	ls = get_ls(argv[2]);
	if (!ls || logfd < 0)
		return 1;
	for (unsigned int k = 0; k < n; k++) {
		many_locks[k].ml_i = from + k;
		many_locks[k].ml_mode = -1;
		many_locks[k].ml_lksb.sb_lvbptr = many_locks[k].ml_lvb;
	}
	/* the requests, MANY_INFLIGHT at a time; when none is answered
	 * for 10 polls, those in flight wait (a completion comes only when
	 * they are granted) and MANY_INFLIGHT more go */
	while (next < n) {
		unsigned int before;

		while (next < n && many_inflight < limit) {
			int rv = many_request(ls, &many_locks[next], mode, 0);

			if (rv) {
				printf("error request %u %d\n", from + next, rv);
				return 1;
			}
			next++;
		}
		before = many_inflight;
		many_dispatch(ls, 20);
		if (many_inflight < before) {
			idle = 0;
		} else if (++idle >= 10) {
			limit += MANY_INFLIGHT;
			idle = 0;
		}
	}
	for (;;) {
		if (!all && many_granted == n) {
			all = true;
			printf("held %u\n", n);
			fflush(stdout);
		}
		many_dispatch(ls, 50);
		if (!cmds)
			cmds = fopen(argv[8], "r");
		if (cmds)
			clearerr(cmds);	/* read on past the EOF met last time */
		while (cmds && fgets(line, sizeof(line), cmds)) {
			unsigned int a, b;
			char m[8], lvb[LVB_LEN];
			int k;

			if (line[strlen(line) - 1] != '\n') {
				/* half a line: read it again whole */
				fseek(cmds, -(long)strlen(line), SEEK_CUR);
				break;
			}
			if (sscanf(line, "unlock %u %u", &a, &b) == 2) {
				unsigned int done = 0;

				for (unsigned int i = a; i < b; i++)
					if (i >= from && i < to &&
					    many_locks[i - from].ml_mode >= 0) {
						many_release(ls, &many_locks[i - from]);
						done++;
					}
				printf("unlocked %u %u %u\n", a, b, done);
			} else if ((k = sscanf(line, "convert %u %7s %31s", &a, m,
					       lvb)) >= 2) {
				struct many_lock *ml;
				int to_mode = mode_of(m);

				if (a < from || a >= to || to_mode < 0 ||
				    many_locks[a - from].ml_mode < 0) {
					printf("error convert %u\n", a);
					continue;
				}
				ml = &many_locks[a - from];
				if (many_logged(ml))
					logf_("H %u %s %" PRIu64 " %" PRIu64 "\n",
					      ml->ml_i, mode_str(ml->ml_mode),
					      ml->ml_t0, now_ns());
				if (k == 3) {
					memset(ml->ml_lvb, 0, sizeof(ml->ml_lvb));
					snprintf(ml->ml_lvb, sizeof(ml->ml_lvb), "%s", lvb);
				}
				if (many_request(ls, ml, to_mode, LKF_CONVERT |
						 (k == 3 ? LKF_VALBLK : 0))) {
					printf("error convert %u %d\n", a, errno);
					continue;
				}
				{
					uint64_t end = now_ns() +
						       MANY_WAIT_MS * 1000000ull;

					while (ml->ml_busy && now_ns() < end)
						many_dispatch(ls, 20);
				}
				printf("converted %u %s %d\n", a, m,
				       ml->ml_busy ? -ETIMEDOUT : -ml->ml_lksb.sb_status);
			} else if (!strncmp(line, "basts", 5)) {
				printf("basts %u\n", many_basts);
			} else if (!strncmp(line, "quit", 4)) {
				for (unsigned int i = 0; i < n; i++)
					many_release(ls, &many_locks[i]);
				printf("done\n");
				fflush(stdout);
				dlm_close_lockspace(ls);
				return 0;
			} else {
				printf("error command %s", line);
			}
			fflush(stdout);
		}
	}
}

static int do_lvbread(char **argv)
{
	dlm_lshandle_t ls = get_ls(argv[2]);
	struct dlm_lksb lksb;
	char lvb[LVB_LEN + 1];
	int rv;

	if (!ls)
		return 2;
	memset(&lksb, 0, sizeof(lksb));
	memset(lvb, 0, sizeof(lvb));
	lksb.sb_lvbptr = lvb;
	rv = lock_wait(ls, LKM_PRMODE, &lksb, argv[3]);
	if (rv) {
		printf("error %d\n", rv);
		dlm_close_lockspace(ls);
		return 1;
	}
	if (lksb.sb_flags & DLM_SBF_VALNOTVALID)
		printf("lvb invalid\n");
	else
		printf("lvb %s\n", lvb);
	dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb);
	dlm_close_lockspace(ls);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "work"))
		return do_work(argc, argv);
	if (argc == 7 && !strcmp(argv[1], "workfold")) {
		valblk = 0;
		return do_work(argc, argv);
	}
	if (argc == 9 && !strcmp(argv[1], "many"))
		return do_many(argv);
	if (argc == 4 && !strcmp(argv[1], "lvbread"))
		return do_lvbread(argv);
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
	if (argc == 5 && !strcmp(argv[1], "token-hold"))
		return do_try(argc, argv, TOKEN_HOLD);
	if (argc == 6 && !strcmp(argv[1], "deadlock"))
		return do_deadlock(argv);
	if (argc == 4 && !strcmp(argv[1], "store"))
		return do_store(argv);
	if (argc == 2 && !strcmp(argv[1], "now")) {
		struct timespec ts;

		/* the clock of dlmd's flight recorder (dlmctl dump) */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("%lld.%03ld\n", (long long)ts.tv_sec, ts.tv_nsec / 1000000);
		return 0;
	}
	fprintf(stderr, "usage: cluster-client work LS DIR NRES MS SEED | final LS DIR NRES |\n"
		"       check DIR NRES | try LS RES MODE | hold LS RES MODE |\n"
		"       orphan LS RES MODE | purge LS NODEID PID |\n"
		"       token-hold LS RES MODE | deadlock LS FIRST SECOND GO |\n"
		"       store FILE TOKEN | now | workfold LS DIR NRES MS SEED |\n"
		"       many LS DIR PREFIX FROM TO MODE CMDS | lvbread LS RES\n");
	return 2;
}
