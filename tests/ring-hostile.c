/*
 * tests/ring-hostile.c - a client that writes its request ring while
 * dlmd reads it (tests/test-client-perms.sh runs it as root against a
 * root-run dlmd: it creates lockspace "ringhostile", mode 0666, and its
 * child drops to nobody for the rest, then root releases it).
 *
 * The ring (libdlm/dlmd_proto.h "The request ring") is the client's
 * memory, mapped by dlmd; dlmd must copy each slot once and read only the
 * copy, never index with what the client wrote, and cut a connection whose
 * tail is out of range.  So, ROUNDS times, on a fresh connection bound to
 * ringhostile with a ring attached:
 *
 *   a racer thread, for ROUND_MS: fills slots with requests (good LOCKs
 *   and UNLOCKs, torn ones, garbage), publishes them, and then, while
 *   dlmd may be copying them, rewrites their length words (0, one past
 *   DLMP_MAX_MSG, 2^32 - 1, ...) and bytes, and flips the length words
 *   of the slots dlmd reads next (at its rg_head) between a good one and
 *   a huge one, over and over; writes rg_head, rg_sleeping
 *   and rg_waiting, which are dlmd's; and in one round in four moves the
 *   tail backwards or far ahead;
 *   the main thread kicks dlmd, sends requests on the socket (each makes
 *   dlmd catch up with the ring first) and drains its answers and ASTs.
 *
 * dlmd may disconnect such a client; it must not crash or read out of
 * bounds (the test's dlmd runs under ASan/UBSan in the sanitizer build and
 * its log is checked).  At the end a well-behaved libdlm client of the
 * same user must still lock and unlock there: prints "ok ring-hostile
 * ..." and exits 0, else "FAIL ..." and 1.  Every wait is bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"
#include "libdlm/dlmd_proto.h"
#include "tests/raw-client.h"

#define LS_NAME		"ringhostile"
#define ROUND_MS	150
#define NOBODY		65534

struct round {
	struct dlmp_ring	*rd_ring;
	atomic_bool		rd_stop;
	bool			rd_wild_tail;	/* may move the tail out of range */
	unsigned int		rd_seed;
	unsigned long		rd_published;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void drain(int fd)
{
	unsigned char buf[DLMP_MAX_MSG];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* A request as the racer writes it: a LOCK or UNLOCK, good or not. */
static int make_request(unsigned char *out, unsigned int *seed)
{
	struct dlmp_msg m;
	unsigned int r = (unsigned int)rand_r(seed);
	int len;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_reqid = 1000000 + (r & 0xffff);
	if (r & 1) {
		m.m_hdr.h_type = DLMP_LOCK;
		m.m_u.lock.lk_mode = (uint8_t)(r >> 8) % 7;
		snprintf((char *)m.m_u.lock.lk_name, sizeof(m.m_u.lock.lk_name),
			 "hostile-%u", (r >> 12) & 15);
		m.m_u.lock.lk_namelen = (uint8_t)strlen((char *)m.m_u.lock.lk_name);
		m.m_u.lock.lk_castaddr = 1;
		if (r & 2)
			m.m_u.lock.lk_flags = LKF_CONVERT;
		m.m_u.lock.lk_lkid = (r >> 16) & 0xff;
	} else {
		m.m_hdr.h_type = DLMP_UNLOCK;
		m.m_u.unlock.ul_lkid = (r >> 16) & 0xff;
	}
	len = dlmp_encode(&m, out, DLMP_MAX_MSG);
	return len < 0 ? 0 : len;
}

static const uint32_t bad_lens[] = {
	0, 1, 7, DLMP_HDR_LEN, DLMP_MAX_MSG, DLMP_MAX_MSG + 1, 0x10000,
	0x7fffffff, 0x80000000u, 0xffffffffu,
};

static void *racer(void *arg)
{
	struct round *rd = arg;
	struct dlmp_ring *r = rd->rd_ring;
	unsigned int seed = rd->rd_seed;
	uint32_t tail = __atomic_load_n(&r->rg_tail, __ATOMIC_RELAXED);

	while (!atomic_load(&rd->rd_stop)) {
		unsigned int op = (unsigned int)rand_r(&seed) % 16;
		unsigned char *slot = r->rg_slots[tail & (DLMP_RING_SLOTS - 1)];
		/* one dlmd may be copying now: published, not yet taken */
		unsigned char *taken = r->rg_slots[(tail - 1) & (DLMP_RING_SLOTS - 1)];
		uint32_t len32;
		int len;

		if (op < 8) {
			/* a request, published, then its length rewritten */
			len = make_request(slot + 8, &seed);
			len32 = (uint32_t)len;
			memcpy(slot, &len32, 4);
			memset(slot + 4, 0, 4);
			/* a full ring (dlmd is behind): not published, but
			 * in a wild round (rg_head is garbage there anyway) */
			if (rd->rd_wild_tail ||
			    tail - __atomic_load_n(&r->rg_head, __ATOMIC_ACQUIRE) <
			    DLMP_RING_SLOTS) {
				tail++;
				__atomic_store_n(&r->rg_tail, tail, __ATOMIC_RELEASE);
				rd->rd_published++;
			}
			len32 = bad_lens[(unsigned int)rand_r(&seed) %
					 (sizeof(bad_lens) / sizeof(bad_lens[0]))];
			memcpy(slot, &len32, 4);
		} else if (op < 11 && !rd->rd_wild_tail) {
			/* where dlmd reads next (its rg_head, true in a tame
			 * round): flip the length words between a good one
			 * and a huge one, so that a check and a use of two
			 * fetches would see different lengths */
			uint32_t head = __atomic_load_n(&r->rg_head, __ATOMIC_ACQUIRE);

			for (int j = 0; j < 4096; j++) {
				for (uint32_t k = 0; k < 4 && head + k != tail; k++) {
					unsigned char *sl =
						r->rg_slots[(head + k) & (DLMP_RING_SLOTS - 1)];

					__atomic_store_n((uint32_t *)sl, j & 1 ?
							 DLMP_MAX_MSG - 8 : 0xfff0u,
							 __ATOMIC_RELAXED);
				}
			}
		} else if (op < 11) {
			/* tear a published slot while it may be read */
			for (int i = 0; i < 16; i++)
				taken[(unsigned int)rand_r(&seed) % DLMP_RING_SLOT_LEN] =
					(unsigned char)rand_r(&seed);
			len32 = bad_lens[(unsigned int)rand_r(&seed) %
					 (sizeof(bad_lens) / sizeof(bad_lens[0]))];
			memcpy(taken, &len32, 4);
		} else if (op < 14) {
			/* dlmd's words: it must not believe them */
			if (rd->rd_wild_tail)
				__atomic_store_n(&r->rg_head, (uint32_t)rand_r(&seed),
						 __ATOMIC_RELAXED);
			__atomic_store_n(&r->rg_sleeping, (uint32_t)rand_r(&seed) & 1,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&r->rg_waiting, 1, __ATOMIC_RELAXED);
		} else if (rd->rd_wild_tail) {
			/* backwards or far ahead: dlmd cuts the connection */
			uint32_t t = (op & 1) ? tail - 1 - ((uint32_t)rand_r(&seed) & 7) :
				     tail + DLMP_RING_SLOTS + 1 +
				     ((uint32_t)rand_r(&seed) & 0xffff);

			__atomic_store_n(&r->rg_tail, t, __ATOMIC_RELEASE);
			__atomic_store_n(&r->rg_tail, tail, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

/* One round; 0, or -1 if it could not be set up (not dlmd's refusal of a
 * hostile ring, which is allowed). */
static unsigned long published;

static int one_round(unsigned int n)
{
	struct dlmp_msg msg;
	struct round rd;
	pthread_t th;
	int fd, sv[2], mfd, rv;
	uint32_t reqid = 1;
	uint64_t end;

	fd = raw_connect();
	if (fd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	raw_ls_msg(&msg, DLMP_LS_OPEN, LS_NAME);
	rv = raw_send(fd, &msg, reqid, sv[1]) ? -EIO : raw_reply(fd, reqid);
	close(sv[1]);
	if (rv) {
		fprintf(stderr, "ring-hostile: LS_OPEN: %d\n", rv);
		return -1;
	}
	mfd = memfd_create("hostile-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0 || ftruncate(mfd, (off_t)DLMP_RING_BYTES) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	memset(&rd, 0, sizeof(rd));
	rd.rd_ring = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE,
			  MAP_SHARED, mfd, 0);
	if (rd.rd_ring == MAP_FAILED)
		return -1;
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_RING;
	msg.m_u.pair.pr_a = DLMP_RING_ATTACH;
	reqid++;
	rv = raw_send(fd, &msg, reqid, mfd) ? -EIO : raw_reply(fd, reqid);
	close(mfd);
	if (rv) {
		fprintf(stderr, "ring-hostile: RING: %d\n", rv);
		return -1;
	}
	rd.rd_wild_tail = n % 4 == 3;
	rd.rd_seed = 0x5eed + n;
	atomic_init(&rd.rd_stop, false);
	if (pthread_create(&th, NULL, racer, &rd))
		return -1;
	end = now_ms() + ROUND_MS;
	while (now_ms() < end) {
		/* a kick, and a request on the socket (dlmd catches up with
		 * the ring before it); a refused send: we were cut */
		memset(&msg, 0, sizeof(msg));
		msg.m_hdr.h_type = DLMP_RING;
		msg.m_u.pair.pr_a = DLMP_RING_KICK;
		if (raw_send(fd, &msg, ++reqid, -1))
			break;
		memset(&msg, 0, sizeof(msg));
		msg.m_hdr.h_type = DLMP_UNLOCK;
		msg.m_u.unlock.ul_lkid = reqid & 0xff;
		if (raw_send(fd, &msg, ++reqid, -1))
			break;
		drain(fd);
		drain(sv[0]);
	}
	atomic_store(&rd.rd_stop, true);
	pthread_join(th, NULL);
	published += rd.rd_published;
	munmap(rd.rd_ring, DLMP_RING_BYTES);
	close(sv[0]);
	close(fd);
	return 0;
}

static int child(unsigned int rounds)
{
	struct dlm_lksb lksb;
	dlm_lshandle_t h;
	int rv;

	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0 || getuid() != NOBODY) {
		perror("ring-hostile: cannot become nobody");
		return 2;
	}

	for (unsigned int i = 0; i < rounds; i++) {
		if (one_round(i)) {
			printf("FAIL ring-hostile: round %u could not start\n", i);
			return 1;
		}
	}
	/* dlmd still serves this user, properly */
	h = dlm_open_lockspace(LS_NAME);
	memset(&lksb, 0, sizeof(lksb));
	rv = h ? dlm_ls_lock_wait(h, LKM_EXMODE, &lksb, 0, "after-hostile", 13, 0,
				  NULL, NULL, NULL) : -1;
	if (rv || lksb.sb_status ||
	    dlm_ls_unlock_wait(h, lksb.sb_lkid, 0, &lksb) ||
	    lksb.sb_status != EUNLOCK) {
		printf("FAIL ring-hostile: a clean client after %u rounds: rv %d "
		       "status %d errno %s\n", rounds, rv, lksb.sb_status,
		       strerror(errno));
		return 1;
	}
	dlm_close_lockspace(h);
	printf("ok ring-hostile: %u rounds, %lu requests published in rings "
	       "written under dlmd, then a clean lock and unlock\n", rounds,
	       published);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 20;
	dlm_lshandle_t h;
	int status;
	pid_t p;

	if (getuid() != 0) {
		fprintf(stderr, "ring-hostile: run me as root\n");
		return 2;
	}
	h = dlm_new_lockspace(LS_NAME, 0666, 0);
	if (!h) {
		perror("ring-hostile: create " LS_NAME);
		return 2;
	}
	fflush(stdout);
	p = fork();
	if (p < 0)
		return 2;
	if (p == 0) {
		status = child(rounds);
		fflush(stdout);
		_exit(status);
	}
	if (waitpid(p, &status, 0) != p || !WIFEXITED(status))
		status = 2;
	else
		status = WEXITSTATUS(status);
	if (dlm_release_lockspace(LS_NAME, h, 1)) {
		printf("FAIL ring-hostile: root cannot release " LS_NAME ": %s\n",
		       strerror(errno));
		return 1;
	}
	return status;
}
