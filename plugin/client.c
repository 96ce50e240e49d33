/*
 * plugin/client.c - the client socket.
 *
 * The wire format and the conversation are described in
 * libdlm/dlmd_proto.h.  This file is the daemon's half:
 *
 *   accept     a SOCK_SEQPACKET connection on socket_path; SO_PEERCRED
 *              (and SO_PEERGROUPS) give pid, uid, gid and groups once.
 *              A user past max_clients_per_uid is refused (a REPLY with
 *              reqid 0 and -EUSERS, then close); when fds run out the
 *              socket leaves the loop for a while ("Limits on
 *              connections" below).
 *              The connection gets a serial number; its engine owner id
 *              is (pid << 32) | serial, so dlm_ls_purge(pid) can find the
 *              orphans a process left and each connection is one owner.
 *   request    one packet, decoded by dlmp_decode(); a dispatch table maps
 *              type -> handler; every request gets exactly one answer on
 *              the same connection (a REPLY, or for a DLMP_LK_SYNC request
 *              held until its completion a COMP_REPLY: "held answers"
 *              below).  A packet that does not decode gets a REPLY with
 *              the error; nothing a client sends can stop the loop or
 *              other clients: reads are non-blocking, recvmmsg takes up
 *              to CLIENT_BATCH packets a call and CLIENT_CALLS calls per
 *              wake-up; the answers to what one wake-up took go out in
 *              one sendmmsg (out_batch); a client whose answers cannot be
 *              written at once is disconnected (its socket's send buffer
 *              is raised to CLIENT_SNDBUF so that DLMP_MAX_HELD answers
 *              released together fit).
 *   ASTs       the engine's ASTs are queued by engine.c (the engine must
 *              not be re-entered); dlmd_flush() runs after every entry
 *              point and hands each to dlmd_client_deliver_ast(), which
 *              turns it into a DLMP_AST packet on the owner's AST
 *              socket, adding the per-lock callback values the client
 *              gave (struct lkcb).  If the AST socket is full, packets
 *              wait in a per-client queue written when the socket
 *              drains.  A client whose own queue passes its bound is
 *              paused, never disconnected: no request of it is taken
 *              until it reads ("Backpressure", below).  All clients'
 *              queues together are bounded by ast_queue_limit, the last
 *              resort: past it, the client with the largest queue
 *              among those that do not read is disconnected
 *              (astq_enforce_limit).
 *   close      a connection that closes (exit, crash, SIGKILL) is purged
 *              at once with dlm_core_purge_owner(): its locks go, its
 *              PERSISTENT locks become orphans, and whatever they blocked
 *              is granted (those ASTs go out in the same flush).  The
 *              lockspace records the uid of an owner that left orphans:
 *              adopting or purging them needs that uid or the admin
 *              privilege (root or admin_group; "orphans and their owners").
 *
 * Per-lock state kept here (struct lkcb): the opaque AST addresses and
 * arguments and the lksb address, whether the lock was ever granted (to
 * know when a failed completion ends a new request), whether a
 * deadlock-cancel is pending (the engine has no such call: the daemon
 * cancels and reports the ECANCEL completion as EDEADLK), and the held
 * answers waiting for its completion.  Records lie in the daemon's slab
 * (d_lkcbs, slab.c), 56 B each, named in the client's cl_locks by a
 * 32-bit handle beside the lock id in one 8 B slot (u32idx): 73 B a lock
 * at a million where a malloc'd record and a u32map slot took 89 B
 * (bench/README.md "Memory per held lock").  The slab keeps an empty page
 * so that taking and dropping locks allocates nothing once warm.
 *
 * Held answers.  A LOCK or UNLOCK with DLMP_LK_SYNC that the engine
 * accepts is not answered at once: its reqid goes into the lock's record
 * (lc_sync_lock for a LOCK, lc_sync_unlock for an UNLOCK or cancel; at
 * most one of each, as the engine allows one operation in progress plus
 * a cancel) and dlmd_client_deliver_ast() turns the completion into a
 * COMP_REPLY to each, instead of a DLMP_AST.  A LOCK still waiting after
 * the flush that follows its request gets an interim REPLY
 * (DLMP_REPLY_HELD) with its lock id.  cl_nheld counts them, bounded by DLMP_MAX_HELD (past it a
 * request is refused with -ENOBUFS).  A purge of the client's own locks
 * answers its held ones with a cancel completion; a release of the
 * lockspace under it with -ENOTCONN, and its async requests still
 * waiting get a completion AST with -ENOTCONN before the AST socket
 * closes (ast_lost); a closed connection drops them.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define CLIENT_BATCH	16		/* packets per recvmmsg */
#define CLIENT_CALLS	4		/* recvmmsg calls per wake-up */
/* The fds one packet can carry (the kernel's SCM_MAX_FD): each packet's
 * control buffer holds them all ("Passed fds"). */
#define DLMD_SCM_MAX_FD	253
/* Asked for each connection (the kernel doubles it): 683 answers of 64
 * bytes fit where the default 212992 holds 278, so DLMP_MAX_HELD held
 * answers released together fit with room to spare, and a client that
 * does not read costs at most 2.5 times the default before it is
 * disconnected. */
#define CLIENT_SNDBUF	(256 * 1024)
/* Asked for each AST socket (doubled by the kernel, SO_SNDBUFFORCE when
 * privileged): a client with 1000 async requests in flight (bench-compare
 * async) may have as many ASTs unread, about 1 KB of kernel memory each;
 * at the default 212992 they overflowed into the AST queue, a malloc and
 * a second send each. */
#define AST_SNDBUF	(512 * 1024)
/* AST sockets of one user (other than root) whose buffer is raised to
 * AST_SNDBUF, at most: 8 MB of kernel memory a user; the rest keep the
 * kernel's default buffer (astbuf_raise). */
#define AST_RAISED_PER_UID	8
/* Rings watched at once ("Watching the rings"): each round looks at
 * every one; past this many a ring is told dlmd sleeps as before. */
#define WATCH_MAX	64
/* A yield of a watch round that gave the CPU away this long: something
 * else runs on our CPU (a client sharing it hands it back in a few us);
 * the watch ends, and for WATCH_OFF_MIN_NS no ring is watched, twice as
 * long after each such yield up to WATCH_OFF_MAX_NS, back to the least
 * after WATCH_GOOD_ROUNDS rounds that took requests without one.  A long
 * yield costs a time slice of the other process (about a millisecond):
 * so at most about one per second while it stays. */
#define WATCH_YIELD_LONG_NS	200000ULL
#define WATCH_OFF_MIN_NS	16000000ULL
#define WATCH_OFF_MAX_NS	1024000000ULL
#define WATCH_GOOD_ROUNDS	1024
#define MAX_PEER_GROUPS	64
#define LISTEN_BACKLOG	128
#define AST_PKT_LEN	(DLMP_HDR_LEN + DLMP_AST_LEN)
/* ast_queue_limit's last resort takes only a client whose queue did not
 * move for this long (astq_enforce_limit). */
#define ASTQ_STUCK_MS	2000
#define ACCEPT_PAUSE_MS	500		/* fds ran out: accept again after this */
#define LIMIT_LOG_MS	60000		/* at most one line a minute per limit */
#define NS_PER_MS	1000000ULL

/* 56 bytes on 64-bit machines, in the daemon's slab (d_lkcbs, slab.c:
 * no malloc header, 56 B a lock where a malloc chunk took 64): the flags
 * are bit-fields sharing a word with the wait time (58 bits of
 * CLOCK_MONOTONIC nanoseconds: 9 years of uptime).  cl_locks names it by
 * its slab handle. */
struct lkcb {
	uint64_t	lc_castaddr;
	uint64_t	lc_castparam;
	uint64_t	lc_bastaddr;
	uint64_t	lc_bastparam;
	uint64_t	lc_lksb;
	uint32_t	lc_lock_reqid;
	uint32_t	lc_unlock_reqid;
	uint64_t	lc_wait_ns : 58;	/* a request waits since
						 * (metrics.h), or 0 */
	bool		lc_granted : 1;
	bool		lc_deadlock : 1;
	bool		lc_sync_lock : 1;	/* a LOCK's answer is held */
	bool		lc_sync_unlock : 1;	/* an UNLOCK's answer is held */
	bool		lc_sync_cancel : 1;	/* ... and it was a cancel */
	bool		lc_async : 1;		/* an async request waits for
						 * its completion AST */
};
static_assert(sizeof(void *) != 8 || sizeof(struct lkcb) == 56,
	      "struct lkcb takes 56 bytes of a slab page");

/* A zeroed lock record and its handle in *h, or NULL. */
static struct lkcb *lkcb_new(struct dlmd *d, uint32_t *h)
{
	return slab_alloc(&d->d_lkcbs, sizeof(struct lkcb), h);
}

static void lkcb_free(struct dlmd *d, uint32_t h)
{
	slab_free(&d->d_lkcbs, h);
}

struct ast_out {
	struct ast_out	*ao_next;
	size_t		ao_len;
	unsigned char	ao_buf[AST_PKT_LEN];
};

/* A packet read from the socket of a paused client with a ring, kept
 * until the ring before it is taken ("Backpressure"). */
struct stashed {
	struct stashed	*st_next;
	int		st_fd;			/* passed with it, or -1 */
	size_t		st_len;
	unsigned char	st_buf[];
};

struct dlmd_client {
	struct dlmd	*cl_d;
	int		cl_fd;
	int		cl_ast_fd;		/* -1 until LS_OPEN */
	uint32_t	cl_serial;
	uint64_t	cl_owner;
	pid_t		cl_pid;
	uid_t		cl_uid;
	gid_t		cl_gid;
	gid_t		cl_groups[MAX_PEER_GROUPS];
	unsigned int	cl_ngroups;
	bool		cl_broken;		/* shut down, waiting for close */
	bool		cl_proto_said;		/* its other client protocol
						 * version: warned of (or
						 * counted as not logged) */
	bool		cl_ast_polling;		/* AST fd registered for POLLOUT */
	bool		cl_paused;		/* its unread ASTs passed its
						 * bound: no request taken
						 * ("Backpressure") */
	struct dlmd_ls	*cl_ls;
	struct u32idx	cl_locks;		/* lkid -> its struct lkcb's
						 * handle in d_lkcbs */
	uint32_t	cl_purge_epoch;		/* purges of its own locks, in
						 * each AST (dlmd_proto.h) */
	uint32_t	cl_nheld;		/* held answers (lkcb) */
	/* lock id blocks reserved for it (dlmd_proto.h "Lock ids chosen by
	 * the client"): the one it takes ids from, and the one before,
	 * given back by its next IDS; 0: none */
	uint32_t	cl_ids[2];
	struct ast_out	*cl_astq;
	struct ast_out	**cl_astq_tail;
	uint32_t	cl_astq_len;
	uint64_t	cl_astq_bytes;		/* counted in d_astq_bytes */
	uint64_t	cl_astq_moved_ns;	/* its queue last moved (an AST
						 * written) or began */
	bool		cl_counted;		/* counted in d_uid_conns */
	bool		cl_ast_raised;		/* its AST socket's buffer is
						 * raised: counted in
						 * d_uid_astbufs (if limited)
						 * and d_nast_raised */
	/* its request ring (dlmd_proto.h "The request ring"), mapped, or
	 * NULL; the slots we took (our own count: the ring's rg_head is
	 * only written, never trusted); a drain (ring_job, from a timer
	 * due at once) is queued */
	struct dlmp_ring *cl_ring;
	uint32_t	cl_ring_head;
	/* its answer ring (dlmd_proto.h "The answer ring"): on once the
	 * ATTACH's REPLY is out (armed until then); our own count of the
	 * answers written; full once: on the socket for good; a wake-up is
	 * owed after the batch (out_batch) */
	bool		cl_ans_armed;
	bool		cl_ans_on;
	bool		cl_ans_socket;
	bool		cl_ans_wake;
	uint32_t	cl_ans_tail;
	bool		cl_ring_job;		/* cl_ring_timer is set */
	qb_loop_timer_handle cl_ring_timer;
	/* on d_watch ("Watching the rings") */
	bool		cl_watched;
	struct dlmd_client *cl_watch_next;
	/* socket packets read while it was paused, in order, and its tail */
	struct stashed	*cl_stash;
	struct stashed	**cl_stash_tail;
};

/* The record of the client's lock 'lkid', or NULL. */
static struct lkcb *lkcb_find(const struct dlmd_client *c, uint32_t lkid)
{
	uint32_t h;

	return u32idx_get(&c->cl_locks, lkid, &h) ?
	       slab_rec(&c->cl_d->d_lkcbs, h) : NULL;
}

/* ------------------------------------------------------------------ */
/* passed fds                                                          */
/* ------------------------------------------------------------------ */

/*
 * Passed fds.  Any packet may carry fds (SCM_RIGHTS), and the client may
 * close its own copies at once: dlmd's close is then the last one, and
 * the last close runs the file's release in the thread that makes it.
 * Some releases wait: a TCP socket with SO_LINGER whose peer does not
 * read waits out its linger time (an hour, or for ever); a file of a
 * FUSE file system waits for a FLUSH its server need never answer; a
 * unix socket releases what waits in its queue, fds among it, which
 * may be such files.  dlmd, one thread, served nobody meanwhile, its
 * node's locks and every other node's requests to it stalled: an
 * unprivileged client hung it by passing such a socket with a request
 * (any request), as a second fd, past the fds the control buffer held
 * (the kernel released the rest in our recvmmsg), in a packet left in
 * its connection's queue at its close, or in the queue of the AST
 * socket it gave (tests/test-client-fdpass.sh saw each).  So:
 *
 *   - the control buffer of each packet holds SCM_MAX_FD fds, as many
 *     as one packet can carry: the kernel releases none in our thread
 *     (unless dlmd has no fd free: the request is then answered EMFILE);
 *   - a passed fd dlmd does not keep is closed here only if it is a
 *     memfd (shmem: F_GET_SEALS answers, and its release never waits)
 *     sealed against growing and no larger than a ring (its release
 *     frees all its pages); a socket of a client's (its connection,
 *     its AST socket, one refused) is closed here once what its queue
 *     held was taken out (sock_close); any other fd, and such a socket
 *     whose queue was not emptied, is given to the reaper of the
 *     client's uid: a thread that only closes, started when the uid has
 *     fds to close and none is running, gone once they are closed.  One
 *     thread a uid: a user whose close waits makes only its own closes
 *     wait;
 *   - a close that waits is interrupted: a reaper blocks every signal
 *     but REAP_SIGNAL, whose handler does nothing and has no SA_RESTART;
 *     a timer of the loop's, armed while any reaper runs, sends it to a
 *     reaper whose close has run a second (REAP_KICK_NS), and again each
 *     second it stays in it.  A lingering TCP socket's close ends at the
 *     signal (its data is then sent, or not, by the kernel alone), and
 *     so does a unix socket's whose queue held one; counted
 *     (closes_interrupted).  A FUSE file's FLUSH waits uninterruptibly:
 *     its user's closes still wait for its server, one signal a second
 *     (fs.fuse.max_request_timeout, kernels 6.14 and later, bounds it).
 *     SO_LINGER is not cleared on a passed socket: the client may still
 *     use that socket through another fd, and its close there must keep
 *     the linger it asked for; the signal needs no such change;
 *   - a passed fd is looked at, before it is kept, only by calls that
 *     do not reach its file system (a FUSE file's fstat waits for its
 *     server as its close does): F_GET_SEALS before fstat for a ring,
 *     SO_DOMAIN before fstat for an AST socket;
 *   - a uid other than root with REAP_UID_MAX fds waiting for its reaper
 *     is refused new connections (-EMFILE), and a connection of it that
 *     passes one more is disconnected; one already disconnected is
 *     closed before it reads again, and so is every connection of a uid
 *     with REAP_UID_HELD (twice as many) waiting.  (Twice: a connection
 *     accepted under the bound must not be cut for the closes of its
 *     user's others, as they end, which count too; test-client-fdpass
 *     saw it.)
 *   - the bound, per uid: fds enter dlmd's table only as packets are
 *     read, DLMD_SCM_MAX_FD a packet at most.  A connection's reads
 *     (client_batch) and sock_close's take a packet only while the uid
 *     has fewer than REAP_UID_HELD waiting, and as many at once as keep
 *     it under that (one at least), so it has REAP_UID_HELD +
 *     DLMD_SCM_MAX_FD - 1 (764) at most, and one fd per full jail
 *     (below).  What is not read stays in its socket's queue; a socket
 *     closes here if its queue is empty or holds no fd (a user that
 *     connects and closes, refused, costs no fd), else it is parked in
 *     flight in the uid's jail (reap_park: thousands of sockets a jail
 *     fd; the files they hold are kernel memory, no fd of dlmd's), so
 *     a user past the budget adds no fd a connection
 *     (tests/test-client-fdpass.sh flood, burst, dlmd at 1024 fds).
 *     With closes interrupted, only a user whose closes wait
 *     uninterruptibly (FUSE) stays past the budget for long
 *     (test-client-fdpass interrupt: a lingering socket and 600
 *     connections behind it, dlmd back to its fds at the start in a
 *     second or two; before, 524 held for the linger's hour).
 *     The price: a limited uid's connection reads 2 packets a call, not
 *     CLIENT_BATCH (64 a wake-up still).
 */
#define REAP_UID_MAX	256
#define REAP_UID_HELD	(2 * REAP_UID_MAX)

struct reap_item {
	struct reap_item	*ri_next;
	int			ri_fd;
};

struct reap_uid {
	struct reap_uid		*ru_next;
	uid_t			ru_uid;
	uint32_t		ru_n;		/* fds queued or being closed,
						 * its jail's counting one */
	bool			ru_running;	/* its thread runs */
	pthread_t		ru_thread;	/* that thread */
	uint64_t		ru_close_ns;	/* its close() began (monotonic;
						 * 0: in none) */
	uint64_t		ru_kick_ns;	/* last REAP_SIGNAL to it */
	int			ru_jail[2];	/* sockets in flight: [0] reads
						 * (-1: none), [1] sends */
	struct reap_item	*ru_head;
	struct reap_item	**ru_tail;
};

static struct {
	pthread_mutex_t		rp_mu;
	struct reap_uid		*rp_uids;	/* those with fds, or a thread */
	uint64_t		rp_interrupted;	/* closes signalled */
	/* the loop's thread's alone */
	qb_loop_t		*rp_loop;	/* NULL: no timer (unit tests) */
	bool			rp_timer_armed;
	qb_loop_timer_handle	rp_timer;
} reaper = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL, false, 0 };

/* Interrupting a close that waits: the one signal a reaper takes (dlmd
 * uses no SIGURG: no socket of its has an owner), its handler a no-op
 * installed without SA_RESTART, so that a close waiting interruptibly
 * (a lingering TCP socket's, a unix socket's queue releasing one) ends
 * at once; every other thread blocks it. */
#define REAP_SIGNAL		SIGURG
#define REAP_KICK_NS		(1000 * NS_PER_MS)

static uint64_t reap_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void reap_close(struct reap_uid *ru, int fd)
{
	pthread_mutex_lock(&reaper.rp_mu);
	ru->ru_close_ns = reap_now_ns();
	ru->ru_kick_ns = 0;
	pthread_mutex_unlock(&reaper.rp_mu);
	close(fd);		/* may wait: only this uid's */
	pthread_mutex_lock(&reaper.rp_mu);
	ru->ru_close_ns = 0;
	pthread_mutex_unlock(&reaper.rp_mu);
}

static struct reap_uid *reap_uid_find(uid_t uid)
{
	for (struct reap_uid *ru = reaper.rp_uids; ru; ru = ru->ru_next)
		if (ru->ru_uid == uid)
			return ru;
	return NULL;
}

static void *reap_thread(void *arg)
{
	struct reap_uid *ru = arg;

	pthread_mutex_lock(&reaper.rp_mu);
	for (;;) {
		struct reap_item *ri = ru->ru_head;
		int jail[2];

		if (ri) {
			ru->ru_head = ri->ri_next;
			if (!ru->ru_head)
				ru->ru_tail = &ru->ru_head;
			pthread_mutex_unlock(&reaper.rp_mu);
			reap_close(ru, ri->ri_fd);
			free(ri);
			pthread_mutex_lock(&reaper.rp_mu);
			ru->ru_n--;
			continue;
		}
		if (ru->ru_jail[0] < 0)
			break;
		/* the sockets parked in flight go with its reading end */
		jail[0] = ru->ru_jail[0];
		jail[1] = ru->ru_jail[1];
		ru->ru_jail[0] = ru->ru_jail[1] = -1;
		pthread_mutex_unlock(&reaper.rp_mu);
		if (jail[1] >= 0)
			close(jail[1]);
		reap_close(ru, jail[0]);
		pthread_mutex_lock(&reaper.rp_mu);
		ru->ru_n--;
	}
	/* nothing left (ru_n is 0): the record goes with the thread */
	for (struct reap_uid **pp = &reaper.rp_uids; *pp; pp = &(*pp)->ru_next) {
		if (*pp == ru) {
			*pp = ru->ru_next;
			break;
		}
	}
	pthread_mutex_unlock(&reaper.rp_mu);
	free(ru);
	return NULL;
}

/* The fds of uid's waiting for its reaper. */
static uint32_t reap_pending(uid_t uid)
{
	struct reap_uid *ru;
	uint32_t n;

	pthread_mutex_lock(&reaper.rp_mu);
	ru = reap_uid_find(uid);
	n = ru ? ru->ru_n : 0;
	pthread_mutex_unlock(&reaper.rp_mu);
	return n;
}

static bool uid_limited(uid_t uid);

/* Has uid 'times' REAP_UID_MAX fds waiting for its reaper, or more? */
static bool reap_over(uid_t uid, uint32_t times)
{
	return uid_limited(uid) && reap_pending(uid) >= times * REAP_UID_MAX;
}

/* Every second while a reaper runs: a reaper whose close has run
 * REAP_KICK_NS or more gets REAP_SIGNAL, again each REAP_KICK_NS it
 * stays in it (a close that no signal ends, a FUSE FLUSH, costs one
 * signal a second, no more).  The loop's thread. */
static void reap_arm(void);

static void reap_tick(void *data)
{
	uint64_t now = reap_now_ns();
	bool any;

	(void)data;
	reaper.rp_timer_armed = false;
	pthread_mutex_lock(&reaper.rp_mu);
	for (struct reap_uid *ru = reaper.rp_uids; ru; ru = ru->ru_next) {
		/* in a close: the thread is alive (it takes rp_mu first) */
		if (!ru->ru_close_ns || now - ru->ru_close_ns < REAP_KICK_NS ||
		    (ru->ru_kick_ns && now - ru->ru_kick_ns < REAP_KICK_NS))
			continue;
		if (!ru->ru_kick_ns)
			reaper.rp_interrupted++;
		ru->ru_kick_ns = now;
		pthread_kill(ru->ru_thread, REAP_SIGNAL);
	}
	any = reaper.rp_uids != NULL;
	pthread_mutex_unlock(&reaper.rp_mu);
	if (any)
		reap_arm();
}

static void reap_arm(void)
{
	if (!reaper.rp_loop || reaper.rp_timer_armed)
		return;
	if (qb_loop_timer_add(reaper.rp_loop, QB_LOOP_LOW, REAP_KICK_NS, NULL,
			      reap_tick, &reaper.rp_timer) == 0)
		reaper.rp_timer_armed = true;
}

static void reap_signal_noop(int sig)
{
	(void)sig;
}

/* Once, at startup, in the loop's thread: REAP_SIGNAL's handler
 * (process-wide), blocked here (and so in threads made after). */
static void reap_signal_setup(qb_loop_t *loop)
{
	struct sigaction sa;
	sigset_t one;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = reap_signal_noop;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: the close ends */
	sigaction(REAP_SIGNAL, &sa, NULL);
	sigemptyset(&one);
	sigaddset(&one, REAP_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
	reaper.rp_loop = loop;
}

uint64_t dlmd_client_reap_interrupted(void)
{
	uint64_t n;

	pthread_mutex_lock(&reaper.rp_mu);
	n = reaper.rp_interrupted;
	pthread_mutex_unlock(&reaper.rp_mu);
	return n;
}

/* A thread of one signal, REAP_SIGNAL (dlmd's are the loop's), to close
 * ru's fds. */
static bool reap_start(struct reap_uid *ru)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int rv;

	if (pthread_attr_init(&at))
		return false;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* small: it only calls close() */
	pthread_attr_setstacksize(&at, 64 * 1024);
	sigfillset(&all);
	sigdelset(&all, REAP_SIGNAL);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rv = pthread_create(&t, &at, reap_thread, ru);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (rv == 0)
		ru->ru_thread = t;	/* rp_mu held: read under it */
	return rv == 0;
}

/* uid's record, made if it has none (rp_mu held), its thread started
 * if none runs; NULL without memory or thread. */
static struct reap_uid *reap_uid_get(uid_t uid)
{
	struct reap_uid *ru = reap_uid_find(uid);

	if (ru)
		return ru;	/* one exists while its thread runs */
	ru = calloc(1, sizeof(*ru));
	if (!ru)
		return NULL;
	ru->ru_uid = uid;
	ru->ru_head = NULL;
	ru->ru_tail = &ru->ru_head;
	ru->ru_jail[0] = ru->ru_jail[1] = -1;
	if (!reap_start(ru)) {
		free(ru);
		return NULL;
	}
	ru->ru_running = true;
	ru->ru_next = reaper.rp_uids;
	reaper.rp_uids = ru;
	reap_arm();
	return ru;
}

/* Close fd, which came from a client of uid's (or is a socket of one),
 * without waiting for its release: by uid's reaper.  If no thread can
 * be had (out of memory), here after all, with a log line. */
static void reap_fd(uid_t uid, int fd)
{
	struct reap_item *ri = malloc(sizeof(*ri));
	struct reap_uid *ru;

	if (!ri)
		goto here;
	ri->ri_next = NULL;
	ri->ri_fd = fd;
	pthread_mutex_lock(&reaper.rp_mu);
	ru = reap_uid_get(uid);
	if (!ru) {
		pthread_mutex_unlock(&reaper.rp_mu);
		free(ri);
		goto here;
	}
	/* (a new record's thread waits for rp_mu: it sees ri) */
	*ru->ru_tail = ri;
	ru->ru_tail = &ri->ri_next;
	ru->ru_n++;
	pthread_mutex_unlock(&reaper.rp_mu);
	return;
here:
	log_err("no thread to close a client's fd: closing it in dlmd's own");
	close(fd);
}

/*
 * Park a socket of a client's (uid's) whose queue may hold fds, in flight:
 * sent (SCM_RIGHTS) into uid's jail, a socketpair dlmd made, and our copy
 * closed here (a socket's close only drops our reference: its release,
 * and that of what its queue holds, comes with the jail's, by uid's
 * reaper).  A socket in flight takes no slot of dlmd's fd table: a user
 * whose reaper is stuck makes dlmd hold two fds (the jail's ends) for
 * as many sockets as the jail takes (JAIL_SNDBUF: thousands; then it is
 * given to the reaper as one fd and another is made), not one a
 * connection.  dlmd may pass that many: root is not bound by the
 * kernel's unix_inflight limit.  false: not parked (no memory, no
 * socketpair; EAGAIN handled): the caller gives it to the reaper.
 */
#define JAIL_SNDBUF	(4 * 1024 * 1024)

static bool reap_park(uid_t uid, int fd)
{
	struct reap_uid *ru;
	bool parked = false;

	pthread_mutex_lock(&reaper.rp_mu);
	ru = reap_uid_get(uid);
	/* a jail sealed (full, no memory to queue it) takes no more */
	for (int tries = 0; ru && tries < 2 && !(ru->ru_jail[0] >= 0 &&
						  ru->ru_jail[1] < 0); tries++) {
		union {
			char		b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr	align;
		} cb;
		char byte = 0;
		struct iovec iov = { &byte, 1 };
		struct msghdr mh;
		struct cmsghdr *cm;

		if (ru->ru_jail[0] < 0) {
			int sz = JAIL_SNDBUF;

			if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
				       ru->ru_jail) < 0) {
				ru->ru_jail[0] = ru->ru_jail[1] = -1;
				break;
			}
			/* root's may pass wmem_max; else what it allows */
			if (setsockopt(ru->ru_jail[1], SOL_SOCKET, SO_SNDBUFFORCE,
				       &sz, sizeof(sz)) < 0)
				setsockopt(ru->ru_jail[1], SOL_SOCKET, SO_SNDBUF,
					   &sz, sizeof(sz));
			ru->ru_n++;	/* the jail counts one, as an fd */
		}
		memset(&mh, 0, sizeof(mh));
		memset(&cb, 0, sizeof(cb));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.b;
		mh.msg_controllen = sizeof(cb.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		if (sendmsg(ru->ru_jail[1], &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
			parked = true;
			break;
		}
		/* full (or failed): to the reaper as one fd, and a new one
		 * (the end that sends has nothing queued: it closes here) */
		close(ru->ru_jail[1]);
		ru->ru_jail[1] = -1;
		{
			struct reap_item *ri = malloc(sizeof(*ri));

			if (!ri)	/* sealed: closed as a jail at the end */
				break;
			ri->ri_next = NULL;
			ri->ri_fd = ru->ru_jail[0];
			*ru->ru_tail = ri;
			ru->ru_tail = &ri->ri_next;
			/* ru_n: the jail's count is the item's now */
		}
		ru->ru_jail[0] = ru->ru_jail[1] = -1;
	}
	pthread_mutex_unlock(&reaper.rp_mu);
	if (parked)
		close(fd);	/* not the last reference: the jail holds one */
	return parked;
}

/*
 * Close one of a client's sockets (its connection, its AST socket, one
 * refused) whose queue may hold packets with fds: shut down, so that its
 * peer can add nothing more; then look at the head of its queue
 * (MSG_PEEK with room for no fd: the kernel drops the copies it made for
 * us, never the last references): empty (SO_PASSCRED gives every packet
 * a control message, so the end of the queue, none, is told from a
 * packet of no bytes), it is closed here: its release waits for nothing;
 * a packet with no fd is read and dropped; one with fds is read, each to
 * passed_drop(), while its user has fewer than REAP_UID_HELD fds waiting
 * for its reaper (one packet adds DLMD_SCM_MAX_FD at most).  Past
 * SOCK_DRAIN_MAX packets, when it cannot be read so, or its user over
 * that bound, the socket is parked with its queue (reap_park(): no fd
 * of dlmd's), or given to the reaper.  A client that left nothing there
 * (every one that closes after its answers, and one that connects and
 * closes) costs two calls, no fd, no thread.
 */
#define SOCK_DRAIN_MAX	64

static void passed_drop(uid_t uid, int fd);

static void sock_close(uid_t uid, int fd)
{
	int one = 1;

	shutdown(fd, SHUT_RDWR);
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		goto park;
	for (unsigned int i = 0; i < SOCK_DRAIN_MAX; i++) {
		union {
			char		b[CMSG_SPACE(sizeof(int) * DLMD_SCM_MAX_FD) +
					  CMSG_SPACE(sizeof(struct ucred))];
			struct cmsghdr	align;
		} cb;
		char byte;
		struct iovec iov = { &byte, 1 };
		struct msghdr mh;
		bool fds;
		ssize_t n;

		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(struct ucred));
		n = recvmsg(fd, &mh, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			break;
		if (n == 0 && mh.msg_controllen == 0) {
			close(fd);	/* empty: nothing of the client's */
			return;
		}
		fds = mh.msg_flags & MSG_CTRUNC;
		if (fds && uid_limited(uid) && reap_pending(uid) >= REAP_UID_HELD)
			break;	/* not one more fd of its: parked */
		/* the packet peeked (we alone read here; the shut down
		 * queue only loses its head) */
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cb.b;
		mh.msg_controllen = sizeof(cb.b);
		n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			break;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t k = 0;
			     k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				int f;

				memcpy(&f, CMSG_DATA(cm) + k * sizeof(int),
				       sizeof(int));
				passed_drop(uid, f);
			}
		}
	}
park:
	if (!reap_park(uid, fd))
		reap_fd(uid, fd);
}

/* A passed fd dlmd does not keep (the client's uid 'uid'): a memfd no
 * larger than a ring, that cannot grow, closes here (its release frees
 * that much at most and never waits); anything else by the reaper. */
static void passed_drop(uid_t uid, int fd)
{
	struct stat st;
	int seals;

	if (fd < 0)
		return;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0 && (seals & F_SEAL_GROW) && fstat(fd, &st) == 0 &&
	    st.st_size <= (off_t)DLMP_RING_BYTES)
		close(fd);
	else
		reap_fd(uid, fd);
}

/* ------------------------------------------------------------------ */
/* locks per user                                                      */
/* ------------------------------------------------------------------ */

/*
 * dlm.conf max_locks_per_uid: a uid other than root holds at most that
 * many locks, in all lockspaces together: its connections' locks (their
 * records, struct lkcb) and the orphans they left (their owners' records'
 * counts, below).  One more new lock or adoption is refused -EDQUOT
 * (logged once a minute at most); conversions are not new locks.  Each
 * limited uid that has any has a counter in d_uid_locks, made before the
 * engine takes a lock (so that nothing fails after) and freed at zero; an
 * orphan record points to its uid's counter, so what removes orphans
 * (adoption, purge, a release, pruning) gives their count back.  Orphans
 * a purge asked by another node removed stay counted until the next
 * prune finds none left in their lockspace.
 */
struct uid_locks {
	struct u32map	*ul_map;	/* d_uid_locks */
	uid_t		ul_uid;
	uint64_t	ul_n;
};

static void astbuf_drop(struct dlmd *d, struct dlmd_client *c);
static bool limit_log_due(uint64_t *last_ms, uint64_t *quiet);

static struct uid_locks *uid_locks_of(struct dlmd *d, uid_t uid)
{
	return uid_limited(uid) ? u32map_get(&d->d_uid_locks, (uint32_t)uid) : NULL;
}

/* n of ul's locks are gone (n 0: forget an unused counter). */
static void uid_locks_sub(struct uid_locks *ul, uint64_t n)
{
	if (!ul)
		return;
	if (ul->ul_n > n) {
		ul->ul_n -= n;
		return;
	}
	u32map_del(ul->ul_map, (uint32_t)ul->ul_uid);
	free(ul);
}

/* May c take one more lock?  Its counter exists afterwards (if c is
 * limited); 0, -EDQUOT or -ENOMEM. */
static int uid_locks_reserve(struct dlmd *d, const struct dlmd_client *c)
{
	struct uid_locks *ul;

	if (!uid_limited(c->cl_uid))
		return 0;
	ul = uid_locks_of(d, c->cl_uid);
	if (ul && ul->ul_n >= d->d_cfg.cf_max_locks_per_uid) {
		d->d_nrefused_locks++;
		if (limit_log_due(&d->d_quota_log_ms, &d->d_quota_nquiet)) {
			log_warn("client pid %d uid %u refused a lock: the user "
				 "holds max_locks_per_uid (%u) locks and orphans "
				 "(%llu other refusal%s not logged in the last "
				 "minute)", (int)c->cl_pid, (unsigned)c->cl_uid,
				 d->d_cfg.cf_max_locks_per_uid,
				 (unsigned long long)d->d_quota_nquiet,
				 d->d_quota_nquiet == 1 ? "" : "s");
			d->d_quota_nquiet = 0;
		}
		return -EDQUOT;
	}
	if (ul)
		return 0;
	ul = calloc(1, sizeof(*ul));
	if (!ul || u32map_put(&d->d_uid_locks, (uint32_t)c->cl_uid, ul)) {
		free(ul);
		return -ENOMEM;
	}
	ul->ul_map = &d->d_uid_locks;
	ul->ul_uid = c->cl_uid;
	return 0;
}

/* ------------------------------------------------------------------ */
/* AST delivery                                                        */
/* ------------------------------------------------------------------ */

/* Drop the ASTs waiting for the client's AST socket. */
static void astq_free(struct dlmd *d, struct dlmd_client *c)
{
	struct ast_out *ao;

	if (c->cl_ast_polling && d->d_loop)
		qb_loop_poll_del(d->d_loop, c->cl_ast_fd);
	c->cl_ast_polling = false;
	while ((ao = c->cl_astq)) {
		c->cl_astq = ao->ao_next;
		free(ao);
	}
	c->cl_astq_tail = &c->cl_astq;
	c->cl_astq_len = 0;
	d->d_astq_bytes -= c->cl_astq_bytes;
	c->cl_astq_bytes = 0;
}

static int client_readable(int32_t fd, int32_t revents, void *data);
static void ring_job(void *data);

/* The rest of c's ring later, after the others: a timer due at once, not
 * a job of the loop (libqb polls with a 50 ms timeout while only jobs are
 * due, and runs QB_LOOP_LOW jobs one loop turn in three: the rest of a
 * ring waited up to 50 ms, and its client, told dlmd was awake, did not
 * kick). */
static void ring_job_queue(struct dlmd *d, struct dlmd_client *c)
{
	if (c->cl_ring_job)
		return;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, 0, c, ring_job,
			      &c->cl_ring_timer) == 0)
		c->cl_ring_job = true;
}

/*
 * Backpressure.  A client that does not read its AST socket (stopped by
 * SIGSTOP or a debugger, swapped out, in a long pause, or just slow) is
 * never disconnected for it: it would lose its locks while it still
 * believes it holds them, and the telling would go to a socket it does
 * not read.  Instead, once its own queue of unread ASTs passes its bound
 * (astq_pause_bytes: a sixteenth of ast_queue_limit, 4 MB or
 * about 35000 ASTs by default, on top of the 1000 or more its AST socket
 * holds: generous; libdlm reads the AST socket into the client's own
 * memory while a thread waits for dlmd, so that a thread that sends
 * requests without dispatching in between is not stalled by it; see
 * libdlm.c "Waiting reads the AST socket"), dlmd
 * takes no request of it: its request socket leaves the
 * loop and its ring is not read (no new request, no new completion for
 * it); its locks and held answers stay.  When its queue drains to a
 * quarter of the bound it is resumed: the socket comes back and ring_job
 * takes what its ring holds (a kick it sent meanwhile waits in the
 * socket; ring_job does not need one).  What can still come for a paused
 * client: completions of the requests already taken (at most the
 * CLIENT_BATCH packets one read took: the socket packets of a client
 * with a ring that come after the pause are kept, in order, in
 * cl_stash, until the ring before them is taken after its resumption),
 * BASTs (one
 * per lock and mode at most: the engine does not repeat a BAST for a mode
 * it already sent) and grants of its waiting requests: so its queue is
 * bounded by its locks, which max_locks_per_uid bounds for every user
 * but root.  ast_queue_limit stays as the last resort for what this does
 * not bound (root's clients with very many locks, all paused):
 * astq_enforce_limit, below.  A paused client that dies is seen on its
 * AST socket (polled while its queue is not empty: the send fails,
 * client_break resumes it and the close runs as usual).
 */
static uint64_t astq_pause_bytes(const struct dlmd *d)
{
	return d->d_cfg.cf_ast_queue_limit / 16;
}

static void client_pause(struct dlmd *d, struct dlmd_client *c)
{
	if (c->cl_paused || c->cl_broken)
		return;
	c->cl_paused = true;
	d->d_npauses++;
	d->d_npaused++;
	log_debug("client pid %d serial %u: %u unread ASTs (%llu bytes); its "
		  "requests wait until it reads", (int)c->cl_pid, c->cl_serial,
		  c->cl_astq_len, (unsigned long long)c->cl_astq_bytes);
	if (d->d_loop)
		qb_loop_poll_del(d->d_loop, c->cl_fd);
}

static void client_resume(struct dlmd *d, struct dlmd_client *c)
{
	if (!c->cl_paused)
		return;
	c->cl_paused = false;
	d->d_npaused--;
	log_debug("client pid %d serial %u reads its ASTs again", (int)c->cl_pid,
		  c->cl_serial);
	if (!d->d_loop)
		return;
	if (qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, c->cl_fd, POLLIN, c,
			     client_readable) != 0)
		log_err("client pid %d serial %u: cannot poll its socket again",
			(int)c->cl_pid, c->cl_serial);
	/* what its ring holds: no kick will come for it */
	if (c->cl_ring && !c->cl_broken)
		ring_job_queue(d, c);
}

/*
 * Lines a client can cause again and again.  A client that breaks the
 * rules (closes its AST socket under us, writes a hostile ring, does not
 * read its answers) is disconnected with a warning, and a request for
 * another user's orphans is refused with an info line; each costs any
 * user allowed to connect one connection or one request, so without a
 * bound one user wrote thousands of lines a second to syslog (2000
 * disconnects in 60 ms, each a warning).  Each kind has CLIENT_LOG_BURST
 * lines per LIMIT_LOG_MS; past that its lines go at debug level (the
 * flight recorder keeps them, and log_level debug shows them), and the
 * next line logged says how many were not.
 */
#define CLIENT_LOG_BURST	10

struct log_budget {
	uint64_t	lb_start_ms;	/* this window began; 0: none yet */
	unsigned int	lb_n;		/* lines logged in it */
	uint64_t	lb_quiet;	/* lines not logged since the last one */
};

static struct log_budget break_log_budget, perm_log_budget;

/* May a line of lb's kind be logged now?  If so, *quiet is how many were
 * not since the last one. */
static bool log_budget_take(struct log_budget *lb, uint64_t *quiet)
{
	uint64_t now = dlmd_now_ms();

	if (!lb->lb_start_ms || now - lb->lb_start_ms >= LIMIT_LOG_MS) {
		lb->lb_start_ms = now ? now : 1;
		lb->lb_n = 0;
	}
	if (lb->lb_n >= CLIENT_LOG_BURST) {
		lb->lb_quiet++;
		return false;
	}
	lb->lb_n++;
	*quiet = lb->lb_quiet;
	lb->lb_quiet = 0;
	return true;
}

/* " (N other WHATs not logged)", or "" for none. */
static const char *log_quiet_note(char *buf, size_t size, uint64_t quiet,
				  const char *what)
{
	buf[0] = '\0';
	if (quiet)
		snprintf(buf, size, " (%llu other %s%s not logged in the last "
			 "minute)", (unsigned long long)quiet, what,
			 quiet == 1 ? "" : "s");
	return buf;
}

/* Disconnect a client that broke the rules.  Its queued ASTs go at once
 * (nothing more is delivered to it); its locks go when the connection
 * closes, as if it had exited, and the client sees the connection end
 * (ENOTCONN from libdlm), so none is lost without it knowing. */
static void client_break(struct dlmd *d, struct dlmd_client *c, const char *why)
{
	char note[96];
	uint64_t quiet;

	if (c->cl_broken)
		return;
	if (log_budget_take(&break_log_budget, &quiet))
		log_warn("client pid %d uid %u serial %u: %s; disconnecting%s",
			 (int)c->cl_pid, (unsigned)c->cl_uid, c->cl_serial, why,
			 log_quiet_note(note, sizeof(note), quiet, "disconnect"));
	else
		log_debug("client pid %d uid %u serial %u: %s; disconnecting",
			  (int)c->cl_pid, (unsigned)c->cl_uid, c->cl_serial, why);
	c->cl_broken = true;
	astq_free(d, c);
	/* Our own end then reads EOF and the normal close path runs (a
	 * paused client's socket is polled again for it). */
	shutdown(c->cl_fd, SHUT_RDWR);
	client_resume(d, c);
}

struct largest_astq {
	struct dlmd_client	*la_worst;
	uint64_t		la_now_ns;	/* 0: any client */
};

static void find_largest_astq(void *arg, uint32_t key, void *val)
{
	struct largest_astq *la = arg;
	struct dlmd_client *c = val;

	if (c->cl_broken || !c->cl_astq_bytes)
		return;
	if (la->la_now_ns &&
	    la->la_now_ns - c->cl_astq_moved_ns < ASTQ_STUCK_MS * NS_PER_MS)
		return;		/* it reads */
	if (!la->la_worst || c->cl_astq_bytes > la->la_worst->cl_astq_bytes)
		la->la_worst = c;
}

static void astq_enforce_limit(struct dlmd *d);

static void astq_recheck(void *data)
{
	struct dlmd *d = data;

	d->d_astq_timer_armed = false;
	astq_enforce_limit(d);
}

/*
 * The last resort (dlm.conf ast_queue_limit), for what backpressure does
 * not bound: while all clients' queues together hold more, the client
 * with the largest queue among those that do not read (their queue did
 * not move for ASTQ_STUCK_MS) is disconnected, with a log line, and its
 * locks are released as if it had exited.  With backpressure this takes
 * clients whose ASTs are BASTs and grants of their own many locks
 * (root's: other users' are bounded by max_locks_per_uid), never one
 * merely slow to read: a client that reads is given time, however large
 * its queue (the holder cut here releases its locks at once, and their
 * grants may flood a contender that reads: it must not be cut for that;
 * test-client-stall.sh step 3 saw it).  While only readers pass the
 * limit, a timer looks again after ASTQ_STUCK_MS.  Without a loop (unit
 * tests) the largest queue is taken at once.
 */
static void astq_enforce_limit(struct dlmd *d)
{
	while (d->d_astq_bytes > d->d_cfg.cf_ast_queue_limit) {
		struct largest_astq la = {
			NULL, d->d_loop ? dlmd_metrics_now_ns() : 0
		};
		struct dlmd_client *worst;
		char why[200];

		u32map_each(&d->d_clients, find_largest_astq, &la);
		worst = la.la_worst;
		if (!worst) {
			if (d->d_loop && !d->d_astq_timer_armed &&
			    qb_loop_timer_add(d->d_loop, QB_LOOP_LOW,
					      ASTQ_STUCK_MS * NS_PER_MS, d,
					      astq_recheck,
					      &d->d_astq_timer) == 0)
				d->d_astq_timer_armed = true;
			break;
		}
		snprintf(why, sizeof(why), "%u unread ASTs (%llu bytes), none "
			 "read for %u ms, the most of any client, while all "
			 "clients' passed ast_queue_limit (%u bytes) despite "
			 "backpressure; its locks are released",
			 worst->cl_astq_len,
			 (unsigned long long)worst->cl_astq_bytes,
			 d->d_loop ? ASTQ_STUCK_MS : 0,
			 d->d_cfg.cf_ast_queue_limit);
		d->d_ncut_slow++;
		client_break(d, worst, why);
	}
}

static int ast_writable(int32_t fd, int32_t revents, void *data);

static void astq_drain(struct dlmd *d, struct dlmd_client *c)
{
	bool moved = false;

	while (c->cl_astq) {
		struct ast_out *ao = c->cl_astq;
		ssize_t n = send(c->cl_ast_fd, ao->ao_buf, ao->ao_len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			client_break(d, c, "AST socket closed");
			return;
		}
		c->cl_astq = ao->ao_next;
		if (!c->cl_astq)
			c->cl_astq_tail = &c->cl_astq;
		c->cl_astq_len--;
		c->cl_astq_bytes -= sizeof(*ao);
		d->d_astq_bytes -= sizeof(*ao);
		d->d_nasts_sent++;
		free(ao);
		moved = true;
	}
	if (moved && d->d_loop)
		c->cl_astq_moved_ns = dlmd_metrics_now_ns();
	if (c->cl_paused && c->cl_astq_bytes <= astq_pause_bytes(d) / 4)
		client_resume(d, c);
	if (c->cl_astq && !c->cl_ast_polling && d->d_loop) {
		if (qb_loop_poll_add(d->d_loop, QB_LOOP_MED, c->cl_ast_fd, POLLOUT,
				     c, ast_writable) == 0)
			c->cl_ast_polling = true;
	} else if (!c->cl_astq && c->cl_ast_polling) {
		qb_loop_poll_del(d->d_loop, c->cl_ast_fd);
		c->cl_ast_polling = false;
	}
}

static int ast_writable(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_client *c = data;

	astq_drain(c->cl_d, c);
	return 0;
}

/* An encoded AST the socket cannot take now waits in the client's queue
 * ('drain': try to write the queue now). */
static void astq_push(struct dlmd *d, struct dlmd_client *c,
		      const unsigned char *buf, size_t len, bool drain)
{
	struct ast_out *ao = malloc(sizeof(*ao));

	if (!ao) {
		client_break(d, c, "out of memory for ASTs");
		return;
	}
	memcpy(ao->ao_buf, buf, len);
	ao->ao_len = len;
	ao->ao_next = NULL;
	if (!c->cl_astq && d->d_loop)
		c->cl_astq_moved_ns = dlmd_metrics_now_ns();
	*c->cl_astq_tail = ao;
	c->cl_astq_tail = &ao->ao_next;
	c->cl_astq_len++;
	c->cl_astq_bytes += sizeof(*ao);
	d->d_astq_bytes += sizeof(*ao);
	if (c->cl_astq_bytes >= astq_pause_bytes(d))
		client_pause(d, c);
	astq_enforce_limit(d);
	if (drain && !c->cl_broken)
		astq_drain(d, c);
}

/*
 * The ASTs of the client whose requests client_readable() is handling
 * (out_batch.ob_c, below) wait in ast_batch and go in one sendmmsg when
 * it is done with them (or the batch is full): what one wake-up's
 * requests completed costs one write.  What the socket does not take
 * goes to the client's queue, in order.  ASTs of other clients, and of
 * one whose queue is not empty, take the old way.
 */
#define AST_BATCH	64

static struct {
	unsigned int		ab_n;
	unsigned char		ab_buf[AST_BATCH][AST_PKT_LEN];
	struct iovec		ab_iov[AST_BATCH];
	struct mmsghdr		ab_mm[AST_BATCH];
} ast_batch;

static void ast_batch_flush(struct dlmd *d, struct dlmd_client *c)
{
	unsigned int n = ast_batch.ab_n, done = 0;

	ast_batch.ab_n = 0;
	if (!c || !n || c->cl_broken || c->cl_ast_fd < 0)
		return;
	while (done < n) {
		int k = sendmmsg(c->cl_ast_fd, ast_batch.ab_mm + done, n - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			client_break(d, c, "AST socket closed");
			return;
		}
		if (k <= 0)
			break;
		done += (unsigned int)k;
		d->d_nasts_sent += (unsigned int)k;
	}
	for (unsigned int i = done; i < n && !c->cl_broken; i++)
		astq_push(d, c, ast_batch.ab_buf[i], ast_batch.ab_iov[i].iov_len,
			  i + 1 == n);
}

static struct dlmd_client *out_batch_client(void);

static void ast_send(struct dlmd *d, struct dlmd_client *c, const struct dlmp_msg *m)
{
	unsigned char tmp[DLMP_MAX_MSG];
	int len;

	if (c->cl_broken || c->cl_ast_fd < 0 || d->d_clients_closing)
		return;
	len = dlmp_encode(m, tmp, sizeof(tmp));
	if (len < 0 || (size_t)len > AST_PKT_LEN) {
		log_err("cannot encode an AST (%d)", len);
		return;
	}
	if (!c->cl_astq && c == out_batch_client()) {
		unsigned int i;

		if (ast_batch.ab_n == AST_BATCH)
			ast_batch_flush(d, c);
		if (c->cl_broken)
			return;
		if (!c->cl_astq) {
			i = ast_batch.ab_n++;
			memcpy(ast_batch.ab_buf[i], tmp, (size_t)len);
			ast_batch.ab_iov[i].iov_base = ast_batch.ab_buf[i];
			ast_batch.ab_iov[i].iov_len = (size_t)len;
			memset(&ast_batch.ab_mm[i], 0, sizeof(ast_batch.ab_mm[i]));
			ast_batch.ab_mm[i].msg_hdr.msg_iov = &ast_batch.ab_iov[i];
			ast_batch.ab_mm[i].msg_hdr.msg_iovlen = 1;
			return;
		}
	}
	if (!c->cl_astq) {
		/* Straight to the socket. */
		if (send(c->cl_ast_fd, tmp, (size_t)len,
			 MSG_DONTWAIT | MSG_NOSIGNAL) == len) {
			d->d_nasts_sent++;
			return;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			client_break(d, c, "AST socket closed");
			return;
		}
	}
	astq_push(d, c, tmp, (size_t)len, true);
}

/*
 * Answers to the client whose requests client_readable() is handling
 * wait in out_batch and go in one sendmmsg when it is done (or the batch
 * is full): a client with many requests in flight gets the answers to
 * what one read took in one write.  Answers to other clients (held ones
 * that its requests released) are written at once.
 */
#define ANSWER_MAX	(DLMP_HDR_LEN + DLMP_COMP_REPLY_LEN)
#define OUT_BATCH	64

static_assert(DLMP_HDR_LEN + DLMP_REPLY_LEN <= ANSWER_MAX, "REPLY fits");

static struct {
	struct dlmd_client	*ob_c;		/* batching for it, or NULL */
	unsigned int		ob_n;
	unsigned char		ob_buf[OUT_BATCH][ANSWER_MAX];
	struct iovec		ob_iov[OUT_BATCH];
	struct mmsghdr		ob_mm[OUT_BATCH];
} out_batch;

static struct dlmd_client *out_batch_client(void)
{
	return out_batch.ob_c;
}

/* Wake c if it sleeps on its answer ring (dlmd_proto.h "The answer
 * ring": after the tail was stored, a full barrier, then the flag). */
static void ans_wake(struct dlmd *d, struct dlmd_client *c)
{
	struct dlmp_ring *r = c->cl_ring;

	c->cl_ans_wake = false;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->rg_ans_sleeping, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&r->rg_ans_sleeping, 0, __ATOMIC_SEQ_CST)) {
		d->d_nans_wakes++;
		syscall(SYS_futex, &r->rg_ans_tail, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
}

/* Put one answer into c's answer ring; false if it has to go on the
 * socket (no ring, not on yet, or the ring was full once: then every
 * later answer goes there too, so that the client, which reads the
 * socket only after the ring, reads them in order).  The client's
 * rg_ans_head is only compared with our own tail: a lie fills the ring
 * early (its answers then come on the socket) or lets us overwrite
 * answers it did not read yet, its own loss. */
static bool ans_put(struct dlmd *d, struct dlmd_client *c, const unsigned char *pkt,
		    int len)
{
	struct dlmp_ring *r = c->cl_ring;
	unsigned char *slot;
	uint32_t n = (uint32_t)len;

	if (!c->cl_ans_on || c->cl_ans_socket)
		return false;
	if (c->cl_ans_tail - __atomic_load_n(&r->rg_ans_head, __ATOMIC_ACQUIRE) >=
	    DLMP_ANS_SLOTS) {
		c->cl_ans_socket = true;
		__atomic_store_n(&r->rg_ans_socket, 1, __ATOMIC_SEQ_CST);
		d->d_nans_full++;
		ans_wake(d, c);
		return false;
	}
	slot = r->rg_ans_slots[c->cl_ans_tail & (DLMP_ANS_SLOTS - 1)];
	memcpy(slot, &n, sizeof(n));
	memset(slot + 4, 0, 4);
	memcpy(slot + 8, pkt, n);
	c->cl_ans_tail++;
	__atomic_store_n(&r->rg_ans_tail, c->cl_ans_tail, __ATOMIC_RELEASE);
	d->d_nans_ring++;
	if (c == out_batch.ob_c)
		c->cl_ans_wake = true;	/* once, after the batch */
	else
		ans_wake(d, c);
	return true;
}

static void out_batch_flush(struct dlmd *d)
{
	struct dlmd_client *c = out_batch.ob_c;
	unsigned int n = out_batch.ob_n, done = 0;

	out_batch.ob_n = 0;
	if (c && c->cl_ans_wake && !c->cl_broken)
		ans_wake(d, c);
	if (!c || !n || c->cl_broken)
		return;
	if (n == 1) {
		/* the common case of one request per wake-up */
		ssize_t len = (ssize_t)out_batch.ob_iov[0].iov_len;

		if (send(c->cl_fd, out_batch.ob_buf[0], (size_t)len,
			 MSG_DONTWAIT | MSG_NOSIGNAL) != len)
			client_break(d, c, "client does not read its replies");
		return;
	}
	while (done < n) {
		int k = sendmmsg(c->cl_fd, out_batch.ob_mm + done, n - done,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			client_break(d, c, "client does not read its replies");
			return;
		}
		done += (unsigned int)k;
	}
}

/* Write one answer on the request connection ('version': the header's;
 * DLMP_VERSION but for a refused request of another version). */
static void send_answer(struct dlmd *d, struct dlmd_client *c,
			const struct dlmp_msg *m, uint16_t version)
{
	unsigned char tmp[DLMP_MAX_MSG], *buf = tmp;
	bool batch = c == out_batch.ob_c;
	int len;

	if (c->cl_broken || d->d_clients_closing)
		return;
	if (batch) {
		if (out_batch.ob_n == OUT_BATCH)
			out_batch_flush(d);
		buf = out_batch.ob_buf[out_batch.ob_n];
	}
	len = dlmp_encode(m, tmp, sizeof(tmp));
	if (len < 0 || (batch && (size_t)len > ANSWER_MAX))
		return;
	if (version != DLMP_VERSION)
		dlmp_set_version(tmp, version);
	else if (m->m_hdr.h_reqid != 0 && ans_put(d, c, tmp, len))
		return;
	if (batch) {
		unsigned int i = out_batch.ob_n++;

		memcpy(buf, tmp, (size_t)len);
		out_batch.ob_iov[i].iov_base = buf;
		out_batch.ob_iov[i].iov_len = (size_t)len;
		memset(&out_batch.ob_mm[i], 0, sizeof(out_batch.ob_mm[i]));
		out_batch.ob_mm[i].msg_hdr.msg_iov = &out_batch.ob_iov[i];
		out_batch.ob_mm[i].msg_hdr.msg_iovlen = 1;
		return;
	}
	if (send(c->cl_fd, buf, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		client_break(d, c, "client does not read its replies");
}

static void send_reply(struct dlmd *d, struct dlmd_client *c, uint32_t reqid,
		       const struct dlmp_reply *rp)
{
	struct dlmp_msg m;

	m.m_hdr.h_type = DLMP_REPLY;
	m.m_hdr.h_reqid = reqid;
	m.m_u.reply = *rp;
	send_answer(d, c, &m, DLMP_VERSION);
}

static void send_comp(struct dlmd *d, struct dlmd_client *c, uint32_t reqid,
		      const struct dlmp_comp *cp)
{
	struct dlmp_msg m;

	m.m_hdr.h_type = DLMP_COMP_REPLY;
	m.m_hdr.h_reqid = reqid;
	m.m_u.comp = *cp;
	send_answer(d, c, &m, DLMP_VERSION);
}

/* Answer the requests held on lock 'cb' with completion 'cp' (its status
 * for a held LOCK; 'unlock_status' for a held UNLOCK that was no cancel,
 * so that a purge can tell each what it gets).  Returns whether there
 * were any. */
static bool answer_held(struct dlmd *d, struct dlmd_client *c, struct lkcb *cb,
			struct dlmp_comp *cp, int32_t unlock_status)
{
	bool any = false;

	if (cb->lc_sync_lock) {
		cb->lc_sync_lock = false;
		c->cl_nheld--;
		send_comp(d, c, cb->lc_lock_reqid, cp);
		any = true;
	}
	if (cb->lc_sync_unlock) {
		int32_t status = cp->cp_status;

		if (!cb->lc_sync_cancel)
			cp->cp_status = unlock_status;
		cb->lc_sync_unlock = false;
		c->cl_nheld--;
		send_comp(d, c, cb->lc_unlock_reqid, cp);
		cp->cp_status = status;
		any = true;
	}
	return any;
}

void dlmd_client_deliver_ast(struct dlmd *d, const struct dlmd_pending_ast *pa)
{
	struct dlmd_client *c = u32map_get(&d->d_clients, (uint32_t)pa->pa_owner);
	struct dlmp_msg m;
	struct lkcb *cb;
	int status = pa->pa_status;
	bool gone = false;

	if (!c || c->cl_owner != pa->pa_owner || !c->cl_ls)
		return;
	cb = lkcb_find(c, pa->pa_lkid);
	if (!cb) {
		log_debug("AST for unknown lock %x of client %u dropped",
			  pa->pa_lkid, c->cl_serial);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_AST;
	m.m_hdr.h_reqid = c->cl_purge_epoch;
	m.m_u.ast.as_lkid = pa->pa_lkid;
	m.m_u.ast.as_grmode = pa->pa_grmode;
	m.m_u.ast.as_bastmode = pa->pa_bastmode;
	m.m_u.ast.as_castaddr = cb->lc_castaddr;
	m.m_u.ast.as_castparam = cb->lc_castparam;
	m.m_u.ast.as_bastaddr = cb->lc_bastaddr;
	m.m_u.ast.as_bastparam = cb->lc_bastparam;
	m.m_u.ast.as_lksb = cb->lc_lksb;
	if (pa->pa_type == DLM_AST_BAST) {
		m.m_u.ast.as_kind = DLMP_AST_BAST;
		c->cl_ls->dl_metrics.lm_basts++;
	} else {
		if (cb->lc_wait_ns)
			dlmd_metrics_wait_end(&c->cl_ls->dl_metrics, cb->lc_wait_ns,
					      status == 0);
		cb->lc_wait_ns = 0;
		cb->lc_async = false;
		m.m_u.ast.as_kind = DLMP_AST_COMP;
		if (cb->lc_deadlock && status == -DLM_ECANCEL) {
			status = -EDEADLK;
			cb->lc_deadlock = false;
		}
		if (status == 0)
			cb->lc_granted = true;
		gone = status == -DLM_EUNLOCK || (!cb->lc_granted && status != 0);
		m.m_u.ast.as_status = status;
		m.m_u.ast.as_sbflags = pa->pa_sbflags;
		if (pa->pa_has_lvb) {
			m.m_u.ast.as_bits = DLMP_LK_LVB;
			memcpy(m.m_u.ast.as_lvb, pa->pa_lvb, DLMP_LVB_LEN);
		}
		if (cb->lc_sync_lock || cb->lc_sync_unlock) {
			/* a synchronous caller waits: the completion is its
			 * answer, and no AST is written */
			struct dlmp_comp cp;

			cp.cp_status = status;
			cp.cp_lkid = pa->pa_lkid;
			cp.cp_sbflags = pa->pa_sbflags;
			cp.cp_bits = m.m_u.ast.as_bits;
			memcpy(cp.cp_lvb, m.m_u.ast.as_lvb, DLMP_LVB_LEN);
			answer_held(d, c, cb, &cp, status);
			goto done;
		}
	}
	ast_send(d, c, &m);
done:
	if (gone) {
		uint32_t h;

		if (u32idx_del(&c->cl_locks, pa->pa_lkid, &h)) {
			uid_locks_sub(uid_locks_of(d, c->cl_uid), 1);
			lkcb_free(d, h);
		}
	}
}

/* ------------------------------------------------------------------ */
/* lockspaces                                                          */
/* ------------------------------------------------------------------ */

struct dlmd_ls *dlmd_ls_find(struct dlmd *d, const char *name)
{
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next)
		if (!strcmp(dl->dl_name, name))
			return dl;
	return NULL;
}

int dlmd_ls_create(struct dlmd *d, const char *name, mode_t mode, uid_t uid,
		   gid_t gid, bool excl, struct dlmd_ls **out)
{
	struct dlmd_ls *dl = dlmd_ls_find(d, name);
	size_t len = strlen(name);
	int rv;

	if (dl) {
		*out = dl;
		if (excl)
			return -EEXIST;
		dl->dl_ncreates++;
		return 0;
	}
	if (len == 0 || len > DLM_LOCKSPACE_LEN || !dlmp_ls_name_valid(name))
		return -EINVAL;
	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	memcpy(dl->dl_name, name, len + 1);
	dl->dl_mode = mode & 0777;
	dl->dl_ncreates = 1;
	dl->dl_uid = uid;
	dl->dl_gid = gid;
	rv = dlmd_cluster_ls_join(d, dl);
	if (rv) {
		log_err("lockspace %s: cannot join its cluster group: %s", name,
			strerror(-rv));
		free(dl);
		return rv;
	}
	rv = dlm_core_ls_create(d->d_core, name, dl->dl_members, dl->dl_nmembers,
				dl, &dl->dl_core);
	if (rv) {
		log_err("lockspace %s: engine refused it: %s", name, strerror(-rv));
		dlmd_cluster_ls_leave(d, dl);
		free(dl);
		return rv;
	}
	dlmd_cluster_ls_created(d, dl);
	dl->dl_next = d->d_lockspaces;
	d->d_lockspaces = dl;
	d->d_nlockspaces++;
	log_notice("lockspace %s created (id %08x, mode 0%o, %u member%s)", name,
		   dlm_core_ls_id(dl->dl_core), (unsigned)dl->dl_mode,
		   dl->dl_nmembers, dl->dl_nmembers == 1 ? "" : "s");
	/* with a cluster its members show once its first recovery starts
	 * (cluster.c); alone it runs as created */
	if (dlmd_cluster_ls_ready(d, dl))
		dlmd_view_ls_changed(d, dl);
	*out = dl;
	return 0;
}

static void orphan_recs_clear(struct dlmd_ls *dl);

static void free_lkcb(void *arg, uint32_t key, uint32_t h)
{
	(void)key;
	lkcb_free(arg, h);
}

/* How the held answers of locks that go without a completion are given
 * (see "Held answers" at the top). */
struct drop_held {
	struct dlmd		*dh_d;
	struct dlmd_client	*dh_c;
	int32_t			dh_error;	/* a REPLY with this, or 0: */
	int32_t			dh_lock_status;	/* COMP_REPLY statuses */
	int32_t			dh_unlock_status;
};

/* A completion AST with 'status' for lock 'lkid', whose callback values
 * are cb's: a request that ends without the engine's (a refused NEWID
 * LOCK or NOREPLY UNLOCK, a lock lost at release; dlmd_proto.h). */
static void ast_send_failed(struct dlmd *d, struct dlmd_client *c,
			    uint32_t lkid, const struct lkcb *cb, int32_t status)
{
	struct dlmp_msg m;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_AST;
	m.m_hdr.h_reqid = c->cl_purge_epoch;
	m.m_u.ast.as_kind = DLMP_AST_COMP;
	m.m_u.ast.as_status = status;
	m.m_u.ast.as_lkid = lkid;
	m.m_u.ast.as_grmode = DLM_LOCK_IV;
	m.m_u.ast.as_bastmode = DLM_LOCK_IV;
	m.m_u.ast.as_castaddr = cb->lc_castaddr;
	m.m_u.ast.as_castparam = cb->lc_castparam;
	m.m_u.ast.as_bastaddr = cb->lc_bastaddr;
	m.m_u.ast.as_bastparam = cb->lc_bastparam;
	m.m_u.ast.as_lksb = cb->lc_lksb;
	ast_send(d, c, &m);
}

/*
 * The lockspace goes (a forced release, from any client, dlmctl or the
 * daemon stopping) while an async request of lock 'key' waits for its
 * completion AST: give it that completion now, with 'status', on the AST
 * socket that is about to close, so that no caller waits for ever
 * (issue 14).  The engine drops its locks without ASTs.  This covers
 * every async request, the ones libdlm also remembers (ids of its own:
 * it forgets one when its completion is read, so none completes twice)
 * and the others (conversions, locks under a parent, unlocks and
 * cancels).  An AST socket already full (a client that stopped reading)
 * keeps what did not fit in its queue, and the queue goes with the
 * socket: libdlm remembers every lock with an async request waiting, as
 * lc_async does here, and completes those whose completion it did not
 * read with ENOTCONN at the socket's end (libdlm.c "Async requests in
 * flight"), so each gets one whatever the socket's state.
 */
static void ast_lost(struct dlmd *d, struct dlmd_client *c, uint32_t key,
		     struct lkcb *cb, int32_t status)
{
	cb->lc_async = false;
	ast_send_failed(d, c, key, cb, status);
}

static void drop_held_one(void *arg, uint32_t key, uint32_t h)
{
	struct drop_held *dh = arg;
	struct dlmd_client *c = dh->dh_c;
	struct lkcb *cb = slab_rec(&dh->dh_d->d_lkcbs, h);
	struct dlmp_reply rp;
	struct dlmp_comp cp;

	if (dh->dh_error) {
		if (cb->lc_async)
			ast_lost(dh->dh_d, c, key, cb, dh->dh_error);
		memset(&rp, 0, sizeof(rp));
		rp.rp_status = dh->dh_error;
		if (cb->lc_sync_lock)
			send_reply(dh->dh_d, c, cb->lc_lock_reqid, &rp);
		if (cb->lc_sync_unlock)
			send_reply(dh->dh_d, c, cb->lc_unlock_reqid, &rp);
		c->cl_nheld -= (uint32_t)cb->lc_sync_lock + (uint32_t)cb->lc_sync_unlock;
		cb->lc_sync_lock = cb->lc_sync_unlock = false;
	} else {
		memset(&cp, 0, sizeof(cp));
		cp.cp_status = dh->dh_lock_status;
		cp.cp_lkid = key;
		answer_held(dh->dh_d, c, cb, &cp, dh->dh_unlock_status);
	}
	lkcb_free(dh->dh_d, h);
}

/* A dropped lock's waiting request will never complete (metrics.h). */
static void end_wait(void *arg, uint32_t key, uint32_t h)
{
	struct dlmd_client *c = arg;
	struct lkcb *cb = slab_rec(&c->cl_d->d_lkcbs, h);

	(void)key;
	if (cb->lc_wait_ns)
		dlmd_metrics_wait_end(&c->cl_ls->dl_metrics, cb->lc_wait_ns,
				      false);
	cb->lc_wait_ns = 0;
}

/* Forget the client's lock records; 'dh' (or NULL: the connection is
 * gone) says how to answer the held requests among them. */
static void drop_lock_records(struct dlmd *d, struct dlmd_client *c,
			      struct drop_held *dh)
{
	uid_locks_sub(uid_locks_of(d, c->cl_uid), u32idx_count(&c->cl_locks));
	if (c->cl_ls)
		u32idx_each(&c->cl_locks, end_wait, c);
	if (dh && (c->cl_nheld || dh->dh_error))
		u32idx_each(&c->cl_locks, drop_held_one, dh);
	else
		u32idx_each(&c->cl_locks, free_lkcb, d);
	u32idx_free(&c->cl_locks);
	c->cl_nheld = 0;
}

/* Give the client's lock id blocks back to the engine. */
static void ids_release_all(struct dlmd_client *c)
{
	for (int i = 0; i < 2; i++) {
		if (c->cl_ids[i])
			dlm_core_ids_release(c->cl_ls->dl_core, c->cl_ids[i]);
		c->cl_ids[i] = 0;
	}
}

/* Is lkid from one of the client's blocks? */
static bool ids_owned(const struct dlmd_client *c, uint32_t lkid)
{
	uint32_t first = lkid & ~(uint32_t)(DLMP_IDS_BLOCK - 1);

	return first && (first == c->cl_ids[0] || first == c->cl_ids[1]);
}

/* A new block for c, its first id and length written at value_at and
 * len_at (the REPLY's fields); 0 or the engine's -errno. */
static int ids_reserve(struct dlmd_client *c, uint32_t *value_at,
		       uint32_t *len_at)
{
	uint32_t first;
	int rv;

	rv = dlm_core_ids_reserve(c->cl_ls->dl_core, c->cl_owner, &first);
	if (rv)
		return rv;
	if (c->cl_ids[1])
		dlm_core_ids_release(c->cl_ls->dl_core, c->cl_ids[1]);
	c->cl_ids[1] = c->cl_ids[0];
	c->cl_ids[0] = first;
	*value_at = first;
	*len_at = DLMP_IDS_BLOCK;
	return 0;
}

static void client_unbind(struct dlmd *d, struct dlmd_client *c, bool answer)
{
	struct drop_held dh = { d, c, -ENOTCONN, 0, 0 };

	if (!c->cl_ls)
		return;
	if (c == out_batch_client())	/* what it was sent goes first */
		ast_batch_flush(d, c);
	drop_lock_records(d, c, answer ? &dh : NULL);
	astq_free(d, c);
	astbuf_drop(d, c);
	if (c->cl_ast_fd >= 0) {
		/* the client may have put fds in its queue ("Passed fds") */
		sock_close(c->cl_uid, c->cl_ast_fd);
	}
	c->cl_ast_fd = -1;
	if (answer)	/* the lockspace is released: its engine took them */
		c->cl_ids[0] = c->cl_ids[1] = 0;
	else
		ids_release_all(c);
	c->cl_ls->dl_nopen--;
	c->cl_ls = NULL;
}

struct unbind_arg {
	struct dlmd	*ua_d;
	struct dlmd_ls	*ua_dl;
	const struct dlmd_client *ua_except;	/* the releasing client */
};

static void unbind_if_bound(void *arg, uint32_t key, void *val)
{
	struct unbind_arg *ua = arg;
	struct dlmd_client *c = val;

	if (c->cl_ls != ua->ua_dl)
		return;
	if (c != ua->ua_except && c->cl_ids[0]) {
		/* a client taking its own lock ids waits for no LOCK's
		 * REPLY: tell it now that the lockspace is gone
		 * (dlmd_proto.h "Lock ids chosen by the client") */
		struct dlmp_reply gone = { .rp_status = -ENOTCONN };

		if (c->cl_ring)	/* look at the socket (dlmd_proto.h) */
			__atomic_store_n(&c->cl_ring->rg_notice, 1,
					 __ATOMIC_SEQ_CST);
		send_reply(ua->ua_d, c, 0, &gone);
	}
	client_unbind(ua->ua_d, c, true);
}

/* In use: a client has it open, or it holds orphaned (persistent) locks
 * whose owner may come back for them. */
bool dlmd_ls_in_use(struct dlmd_ls *dl)
{
	struct dlm_ls_stats st;

	if (dl->dl_nopen)
		return true;
	dlm_core_ls_stats(dl->dl_core, &st);
	return st.ls_orphans != 0;
}

int dlmd_ls_release(struct dlmd *d, struct dlmd_ls *dl, bool force,
		    const struct dlmd_client *except)
{
	struct unbind_arg ua = { d, dl, except };
	uint32_t others = dl->dl_nopen;
	struct dlmd_ls **pp;
	int rv;

	if (except && except->cl_ls == dl)
		others--;
	if (others && !force)
		return -EBUSY;
	rv = dlm_core_ls_release(dl->dl_core, force);
	if (rv)
		return rv;
	u32map_each(&d->d_clients, unbind_if_bound, &ua);
	dlmd_ls_join_done(d, dl, -ECONNABORTED);
	dlmd_cluster_ls_leave(d, dl);
	for (pp = &d->d_lockspaces; *pp; pp = &(*pp)->dl_next) {
		if (*pp == dl) {
			*pp = dl->dl_next;
			break;
		}
	}
	d->d_nlockspaces--;
	dlmd_view_ls_removed(d, dl);
	log_notice("lockspace %s released%s", dl->dl_name, force ? " (forced)" : "");
	orphan_recs_clear(dl);
	free(dl);
	dlmd_flush(d);
	return 0;
}

/* ------------------------------------------------------------------ */
/* orphans and their owners                                            */
/* ------------------------------------------------------------------ */

/*
 * The engine keeps an orphan's owner id ((pid << 32) | serial) but knows
 * nothing of users.  When a client's close leaves orphans, its lockspace
 * records who that owner was (dl_orphan_owners: serial -> owner, uid and
 * how many orphans it left).  Adopting an orphan (DLM_LKF_ORPHAN) or
 * purging it (dlm_ls_purge) then needs the same uid as the owner that
 * left it, or the lockspace-admin privilege (client_is_admin: root or a
 * member of dlm.conf's admin_group).  An orphan without a record (memory
 * ran out when it was made) is an admin's only.  Records go when their
 * orphans are adopted or purged here, and all at once whenever the
 * engine reports no orphan left (a purge asked by another node removes
 * orphans without telling us; until then a record only costs memory).
 */
struct orphan_rec {
	uint64_t	or_owner;
	uid_t		or_uid;
	uint64_t	or_count;	/* orphans it left, at most this many remain */
	struct uid_locks *or_ul;	/* its uid's count ("locks per user") */
};

static void free_val(void *arg, uint32_t key, void *val)
{
	free(val);
}

/* A record is dropped: its orphans leave its uid's count. */
static void orphan_rec_free(struct orphan_rec *rec)
{
	if (!rec)
		return;
	uid_locks_sub(rec->or_ul, rec->or_count);
	free(rec);
}

static void orphan_rec_uncount(void *arg, uint32_t key, void *val)
{
	struct orphan_rec *rec = val;

	rec->or_ul = NULL;
}

static void orphan_rec_free_each(void *arg, uint32_t key, void *val)
{
	orphan_rec_free(val);
}

static void orphan_recs_clear(struct dlmd_ls *dl)
{
	u32map_each(&dl->dl_orphan_owners, orphan_rec_free_each, NULL);
	u32map_free(&dl->dl_orphan_owners);
}

static void orphan_recs_prune(struct dlmd_ls *dl)
{
	struct dlm_ls_stats st;

	if (!u32map_count(&dl->dl_orphan_owners))
		return;
	dlm_core_ls_stats(dl->dl_core, &st);
	if (!st.ls_orphans)
		orphan_recs_clear(dl);
}

static struct orphan_rec *orphan_rec_find(const struct dlmd_ls *dl, uint64_t owner)
{
	struct orphan_rec *rec = u32map_get(&dl->dl_orphan_owners, (uint32_t)owner);

	return rec && rec->or_owner == owner ? rec : NULL;
}

/* c's close left n orphans: recorded, and counted for its uid (ul, its
 * counter, which counts c's locks still). */
static void orphan_rec_add(struct dlmd_ls *dl, const struct dlmd_client *c,
			   struct uid_locks *ul, uint64_t n)
{
	uint32_t key = (uint32_t)c->cl_owner;
	struct orphan_rec *rec = u32map_get(&dl->dl_orphan_owners, key);

	if (rec && rec->or_owner == c->cl_owner) {
		rec->or_count += n;
		if (rec->or_ul)
			rec->or_ul->ul_n += n;
		return;
	}
	if (rec) {
		/* A serial reused after wrapping: the old record is stale. */
		orphan_rec_free(u32map_del(&dl->dl_orphan_owners, key));
	}
	rec = calloc(1, sizeof(*rec));
	if (!rec || u32map_put(&dl->dl_orphan_owners, key, rec)) {
		free(rec);
		log_err("lockspace %s: out of memory recording who left %llu "
			"orphan%s (client pid %d uid %u): only an admin may adopt "
			"or purge them", dl->dl_name, (unsigned long long)n,
			n == 1 ? "" : "s", (int)c->cl_pid, (unsigned)c->cl_uid);
		return;
	}
	rec->or_owner = c->cl_owner;
	rec->or_uid = c->cl_uid;
	rec->or_count = n;
	rec->or_ul = ul;
	if (ul)
		ul->ul_n += n;
}

static void orphan_rec_sub(struct dlmd_ls *dl, uint64_t owner, uint64_t n)
{
	struct orphan_rec *rec = orphan_rec_find(dl, owner);

	if (!rec)
		return;
	if (rec->or_count <= n) {
		orphan_rec_free(u32map_del(&dl->dl_orphan_owners, (uint32_t)owner));
	} else {
		rec->or_count -= n;
		uid_locks_sub(rec->or_ul, n);
	}
}

/* May a client of user 'uid' (admin or not) adopt or purge the orphans
 * that 'owner' left? */
static bool orphan_owner_allowed(const struct dlmd_ls *dl, uint64_t owner,
				 uid_t uid, bool admin)
{
	const struct orphan_rec *rec;

	if (admin)
		return true;
	rec = orphan_rec_find(dl, owner);
	return rec && rec->or_uid == uid;
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static bool client_is_admin(const struct dlmd *d, const struct dlmd_client *c)
{
	if (c->cl_uid == 0)
		return true;
	if (!d->d_cfg.cf_have_admin_group)
		return false;
	if (c->cl_gid == d->d_cfg.cf_admin_gid)
		return true;
	for (unsigned int i = 0; i < c->cl_ngroups; i++)
		if (c->cl_groups[i] == d->d_cfg.cf_admin_gid)
			return true;
	return false;
}

/* Like a device node's permission check, for read+write access. */
static bool client_may_open(const struct dlmd_client *c, const struct dlmd_ls *dl)
{
	unsigned int bits = dl->dl_mode & 7;
	bool in_group = c->cl_gid == dl->dl_gid;

	if (c->cl_uid == 0)
		return true;
	for (unsigned int i = 0; i < c->cl_ngroups && !in_group; i++)
		in_group = c->cl_groups[i] == dl->dl_gid;
	if (c->cl_uid == dl->dl_uid)
		bits = (dl->dl_mode >> 6) & 7;
	else if (in_group)
		bits = (dl->dl_mode >> 3) & 7;
	return (bits & 6) == 6;
}

struct req_ctx {
	struct dlmd		*rq_d;
	struct dlmd_client	*rq_c;
	const struct dlmp_msg	*rq_msg;
	int			rq_fd;		/* passed fd, or -1; handler takes it */
	struct dlmp_reply	rq_reply;
	uint32_t		rq_lkid;	/* a held LOCK's lock */
};

static int req_version(struct req_ctx *rq)
{
	rq->rq_reply.rp_value = DLMP_VERSION_MAJOR;
	rq->rq_reply.rp_value2 = DLMP_VERSION_MINOR;
	rq->rq_reply.rp_value3 = DLMP_VERSION_PATCH;
	return 0;
}

/*
 * A lockspace is usable once its first membership is agreed and recovered
 * (cluster.c); until then the create request is held in dl_waits and
 * answered by dlmd_ls_join_done().
 */
/*
 * A stop that SIGTERM was granted (main.c on_signal: no lockspace in use)
 * ends the loop after its turn; a client's request read in that turn
 * would still create or open a lockspace or take a lock, and the stop
 * would then leave it in use: unclean, the node fenced for nothing.  So
 * from then on those are answered ESHUTDOWN (dlmd is shutting down), and
 * logged once.
 */
static int stop_refuses(struct dlmd *d, const struct dlmd_client *c,
			const char *what)
{
	static bool said;

	if (!d->d_stop_accepted)
		return 0;
	if (!said)
		log_notice("client pid %d: %s refused (ESHUTDOWN): dlmd is "
			   "shutting down", (int)c->cl_pid, what);
	said = true;
	return -ESHUTDOWN;
}

static int req_ls_create(struct req_ctx *rq)
{
	const struct dlmp_ls *l = &rq->rq_msg->m_u.ls;
	struct dlmd_ls *dl;
	struct dlmd_create_wait *w;
	int rv;

	rv = stop_refuses(rq->rq_d, rq->rq_c, "lockspace create");
	if (rv)
		return rv;
	if (!client_is_admin(rq->rq_d, rq->rq_c))
		return -EPERM;
	if (l->ls_flags & ~DLMP_LSFL_NEWEXCL || l->ls_mode > 0777)
		return -EINVAL;
	rv = dlmd_ls_create(rq->rq_d, l->ls_name, l->ls_mode, rq->rq_c->cl_uid,
			    rq->rq_c->cl_gid, l->ls_flags & DLMP_LSFL_NEWEXCL, &dl);
	if (rv || dlmd_cluster_ls_ready(rq->rq_d, dl))
		return rv;
	w = realloc(dl->dl_waits, (dl->dl_nwaits + 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	dl->dl_waits = w;
	w[dl->dl_nwaits].cw_serial = rq->rq_c->cl_serial;
	w[dl->dl_nwaits].cw_reqid = rq->rq_msg->m_hdr.h_reqid;
	dl->dl_nwaits++;
	return DLMD_REPLY_DEFERRED;
}

/*
 * The AST socket a client passes at LS_OPEN (dlmd_proto.h): we write to
 * it, as root, whatever the client made it.  So it must be what libdlm
 * makes, one end of a unix SEQPACKET socketpair of the client's own: not
 * a pipe, a file or a device (a send there fails, but the fd is flagged
 * O_NONBLOCK and given a forced buffer first), not a datagram socket
 * (each packet would carry our credentials to whatever it is connected
 * to, a log socket say), and not a socket connected to another user's
 * server (dlmd's own client socket, or a service that trusts what root
 * writes): its peer must be of the client's uid, unless the client is
 * an admin.  -ENOTSOCK, -EINVAL (another kind of socket, or not
 * connected), -EPERM (another user's peer).
 */
static int ast_socket_check(const struct dlmd *d, const struct dlmd_client *c,
			    int fd)
{
	struct ucred cr;
	socklen_t len;
	int v;

	/* no fstat: a FUSE file's waits for its server ("Passed fds");
	 * getsockopt tells a socket without reaching a file system */
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0)
		return errno == ENOTSOCK ? -ENOTSOCK : -errno;
	if (v != AF_UNIX)
		return -EINVAL;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 ||
	    v != SOCK_SEQPACKET)
		return -EINVAL;
	len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
		return -EINVAL;		/* never connected */
	if (cr.uid != c->cl_uid && !client_is_admin(d, c))
		return -EPERM;
	return 0;
}

/*
 * The AST socket's send buffer.  AST_SNDBUF (SO_SNDBUFFORCE when we may,
 * past net.core.wmem_max) is kernel memory the client can make us fill
 * by not reading: with max_clients_per_uid connections one user could
 * pin 1 MB each (1 GB at the defaults).  So a user other than root gets
 * it on AST_RAISED_PER_UID sockets at most (counted in d_uid_astbufs, as
 * connections are in d_uid_conns); its other AST sockets keep the
 * kernel's default buffer: more of their ASTs wait in the AST queue,
 * bounded as ever (ast_queue_limit, backpressure).  Root is not
 * limited.  A user's budget comes back as its AST sockets close
 * (astbuf_drop).  d_uid_astbufs holds a counter (uint32_t) for each
 * limited uid with any, freed at zero.
 */
static void astbuf_uncount(struct dlmd *d, uid_t uid, uint32_t *n)
{
	if (n && *n)
		--*n;
	if (n && !*n) {
		u32map_del(&d->d_uid_astbufs, (uint32_t)uid);
		free(n);
	}
}

static void astbuf_raise(struct dlmd *d, struct dlmd_client *c, int fd)
{
	uint32_t *n = NULL;
	int sz = AST_SNDBUF;

	if (uid_limited(c->cl_uid)) {
		n = u32map_get(&d->d_uid_astbufs, (uint32_t)c->cl_uid);
		if (n && *n >= AST_RAISED_PER_UID)
			return;		/* the default buffer */
		if (!n) {
			n = calloc(1, sizeof(*n));
			if (!n || u32map_put(&d->d_uid_astbufs,
					     (uint32_t)c->cl_uid, n)) {
				free(n);
				return;
			}
		}
		++*n;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz))) {
		log_debug("AST socket SO_SNDBUF: %s", strerror(errno));
		astbuf_uncount(d, c->cl_uid, n);
		return;
	}
	c->cl_ast_raised = true;
	d->d_nast_raised++;
}

/* c's AST socket closes: its raised buffer is no longer counted. */
static void astbuf_drop(struct dlmd *d, struct dlmd_client *c)
{
	if (!c->cl_ast_raised)
		return;
	c->cl_ast_raised = false;
	d->d_nast_raised--;
	if (uid_limited(c->cl_uid))
		astbuf_uncount(d, c->cl_uid,
			       u32map_get(&d->d_uid_astbufs, (uint32_t)c->cl_uid));
}

static int req_ls_open(struct req_ctx *rq)
{
	struct dlmd_client *c = rq->rq_c;
	struct dlmd_ls *dl;
	int fl;

	if (c->cl_ls)
		return -EISCONN;
	fl = stop_refuses(rq->rq_d, c, "lockspace open");
	if (fl)
		return fl;
	if (rq->rq_fd < 0)
		return -EBADF;
	dl = dlmd_ls_find(rq->rq_d, rq->rq_msg->m_u.ls.ls_name);
	if (!dl)
		return -ENOENT;
	if (!client_may_open(c, dl))
		return -EACCES;
	fl = ast_socket_check(rq->rq_d, c, rq->rq_fd);
	if (fl)
		return fl;
	fl = fcntl(rq->rq_fd, F_GETFL);
	if (fl < 0 || fcntl(rq->rq_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	astbuf_raise(rq->rq_d, c, rq->rq_fd);
	c->cl_ast_fd = rq->rq_fd;
	rq->rq_fd = -1;
	c->cl_ls = dl;
	dl->dl_nopen++;
	log_debug("client pid %d serial %u opened lockspace %s", (int)c->cl_pid,
		  c->cl_serial, dl->dl_name);
	/* its first block of lock ids; without one it still works */
	(void)ids_reserve(c, &rq->rq_reply.rp_value2, &rq->rq_reply.rp_value3);
	return 0;
}

/*
 * RING (dlmd_proto.h "The request ring").  ATTACH maps the client's
 * memfd; the passed fd is closed by the caller afterwards (the mapping
 * keeps the memory).  KICK has no answer: client_readable() takes what
 * the ring holds after every read of the socket, kick or not, and
 * before each request it read there, what the ring held then
 * (ring_catch_up: a request sent on the socket in place of a kick).
 */
static int ring_map(struct dlmd_client *c, int fd)
{
	struct statfs sfs;
	struct stat st;
	void *p;
	int seals;

	/* unsealed, the client could shrink it under our mapping: SIGBUS;
	 * and first: only a memfd answers, without reaching a file system
	 * (a FUSE file's fstat waits for its server: "Passed fds").  Of
	 * the ring's size exactly and sealed against growing too: its
	 * last release, at our munmap once the client let go, frees all
	 * its pages in dlmd's thread (a client's 100 GB memfd, seconds) */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) !=
			 (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size != (off_t)DLMP_RING_BYTES)
		return -EINVAL;
	/* shmem only: a hugetlbfs memfd (MFD_HUGETLB) seals too, but the
	 * client can punch a hole in it (its reservation goes) and take
	 * the free huge pages: our next touch of the ring is SIGBUS */
	if (fstatfs(fd, &sfs) < 0 || sfs.f_type != TMPFS_MAGIC)
		return -EINVAL;
	p = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	c->cl_ring = p;
	c->cl_ring_head = __atomic_load_n(&c->cl_ring->rg_tail, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c->cl_ring->rg_head, c->cl_ring_head, __ATOMIC_RELEASE);
	/* asleep until the first kick */
	__atomic_store_n(&c->cl_ring->rg_sleeping, 1, __ATOMIC_SEQ_CST);
	c->cl_d->d_nring_sleeps++;
	return 0;
}

/*
 * Rings per user.  A ring is the client's memfd, but the pages dlmd
 * touches first (the answer slots it writes; request slots the client
 * never wrote, under a tail set ahead) are allocated by dlmd's fault and
 * charged to dlmd's memory cgroup: up to DLMP_RING_BYTES (540 KB) a
 * ring, which with max_clients_per_uid connections let one user put
 * half a gigabyte on dlmd's account (a dlmd.service MemoryMax then
 * kills dlmd, and the other nodes fence this one).  So a uid other than
 * root maps RINGS_PER_UID rings at most (34 MB); a further ATTACH is
 * refused -EDQUOT and its connection goes on without a ring, as libdlm's
 * does for any refusal (dlmd_proto.h "The request ring").  d_uid_rings
 * counts them (the count as the value, as d_uid_conns), given back as
 * each ring is unmapped.
 */
#define RINGS_PER_UID	64

static uint32_t uid_rings(const struct dlmd *d, uid_t uid)
{
	return (uint32_t)(uintptr_t)u32map_get(&d->d_uid_rings, (uint32_t)uid);
}

static int uid_rings_add(struct dlmd *d, uid_t uid, int delta)
{
	uint32_t n = uid_rings(d, uid) + (uint32_t)delta;

	if (!uid_limited(uid))
		return 0;
	if (!n) {
		u32map_del(&d->d_uid_rings, (uint32_t)uid);
		return 0;
	}
	return u32map_put(&d->d_uid_rings, (uint32_t)uid, (void *)(uintptr_t)n);
}

static int req_ring(struct req_ctx *rq)
{
	struct dlmd_client *c = rq->rq_c;

	int rv;

	if (rq->rq_msg->m_u.pair.pr_a == DLMP_RING_KICK) {
		rq->rq_d->d_nring_kicks++;
		return DLMD_REPLY_DEFERRED;
	}
	if (rq->rq_msg->m_u.pair.pr_a == DLMP_RING_ANS_SOCKET) {
		/* no answer; its answer ring, if any, ends here */
		if (c->cl_ring && (c->cl_ans_on || c->cl_ans_armed)) {
			c->cl_ans_socket = true;
			__atomic_store_n(&c->cl_ring->rg_ans_socket, 1,
					 __ATOMIC_SEQ_CST);
			ans_wake(rq->rq_d, c);
		}
		return DLMD_REPLY_DEFERRED;
	}
	if (rq->rq_msg->m_u.pair.pr_a != DLMP_RING_ATTACH ||
	    rq->rq_msg->m_u.pair.pr_b > DLMP_RING_ANSWERS)
		return -EINVAL;
	if (c->cl_ring)
		return -EISCONN;
	if (rq->rq_fd < 0)
		return -EBADF;
	if (uid_limited(c->cl_uid) &&
	    uid_rings(rq->rq_d, c->cl_uid) >= RINGS_PER_UID)
		return -EDQUOT;
	if (uid_rings_add(rq->rq_d, c->cl_uid, 1))
		return -ENOMEM;
	rv = ring_map(c, rq->rq_fd);
	if (rv)
		uid_rings_add(rq->rq_d, c->cl_uid, -1);
	if (!rv && rq->rq_msg->m_u.pair.pr_b == DLMP_RING_ANSWERS) {
		/* answers into its answer ring once the REPLY to this is
		 * out (dlmd_client_request) */
		c->cl_ans_armed = true;
		c->cl_ans_tail = 0;
		__atomic_store_n(&c->cl_ring->rg_ans_tail, 0, __ATOMIC_RELEASE);
	}
	return rv;
}

/* IDS: the client's block ran out; the block it names is done with. */
static int req_ids(struct req_ctx *rq)
{
	struct dlmd_client *c = rq->rq_c;
	uint32_t done = rq->rq_msg->m_u.pair.pr_a;
	int rv;

	rv = ids_reserve(c, &rq->rq_reply.rp_value, &rq->rq_reply.rp_value2);
	if (rv)
		return rv;
	if (done && done == c->cl_ids[1]) {
		dlm_core_ids_release(c->cl_ls->dl_core, done);
		c->cl_ids[1] = 0;
	}
	return 0;
}

/*
 * dlm_release_lockspace(3), as the kernel counts: every create (LS_CREATE
 * of a new or existing lockspace, "dlmctl join") counts once, and a
 * release only undoes one of them until the last, which removes the
 * lockspace: refused with -EBUSY while other connections are bound to it,
 * unless forced.  So processes sharing a lockspace, each creating and
 * releasing it (with force, as upstream programs do), do not pull it away
 * from under each other.  "dlmctl leave" removes it regardless.
 */
static int req_ls_release(struct req_ctx *rq)
{
	const struct dlmp_ls *l = &rq->rq_msg->m_u.ls;
	struct dlmd_client *c = rq->rq_c;
	struct dlmd_ls *dl;

	if (!client_is_admin(rq->rq_d, c))
		return -EPERM;
	if (l->ls_flags & ~DLMP_RELEASE_FORCE)
		return -EINVAL;
	dl = dlmd_ls_find(rq->rq_d, l->ls_name);
	if (!dl)
		return -ENOENT;
	if (dl->dl_ncreates > 1) {
		dl->dl_ncreates--;
		log_debug("lockspace %s: released by client pid %d, %u other "
			  "create%s keep it", dl->dl_name, (int)c->cl_pid,
			  dl->dl_ncreates, dl->dl_ncreates == 1 ? "" : "s");
		return 0;
	}
	return dlmd_ls_release(rq->rq_d, dl, l->ls_flags & DLMP_RELEASE_FORCE, c);
}

/* DLM_LKF_ORPHAN: the engine asks which orphans the requester may take;
 * the one it took is remembered to update the records. */
struct adopt_check {
	struct dlmd_ls	*ac_dl;
	uid_t		ac_uid;
	bool		ac_admin;
	uint64_t	ac_taken;
};

static int may_adopt(void *arg, uint64_t orphan_owner)
{
	struct adopt_check *ac = arg;

	if (!orphan_owner_allowed(ac->ac_dl, orphan_owner, ac->ac_uid,
				  ac->ac_admin))
		return 0;
	ac->ac_taken = orphan_owner;
	return 1;
}

static int lock_request(struct req_ctx *rq)
{
	const struct dlmp_lock *lk = &rq->rq_msg->m_u.lock;
	struct dlmd_client *c = rq->rq_c;
	struct adopt_check ac = { c->cl_ls, c->cl_uid,
				  client_is_admin(rq->rq_d, c), 0 };
	struct dlm_lock_req req;
	struct dlm_range range;
	struct lkcb *cb = NULL;
	struct uid_locks *ul;
	uint32_t lkid = 0, h = 0;
	/* an adoption is answered by its REPLY alone, held or not */
	bool hold = (lk->lk_bits & DLMP_LK_SYNC) &&
		    !(lk->lk_flags & DLM_LKF_ORPHAN);
	uint64_t arrived = dlmd_metrics_now_ns();
	int rv;

	rv = stop_refuses(rq->rq_d, c, "lock request");
	if (rv)
		return rv;
	if (hold && c->cl_nheld >= DLMP_MAX_HELD)
		return -ENOBUFS;
	if (hold && (lk->lk_flags & DLM_LKF_CONVERT)) {
		struct lkcb *old = lkcb_find(c, lk->lk_lkid);

		if (old && old->lc_sync_lock)
			return -EBUSY;	/* the engine would say so too */
	}
	memset(&req, 0, sizeof(req));
	req.mode = lk->lk_mode;
	req.flags = lk->lk_flags;
	req.lkid = lk->lk_lkid;
	req.name = lk->lk_name;
	req.namelen = lk->lk_namelen;
	req.parent = lk->lk_parent;
	if (lk->lk_bits & DLMP_LK_NEWID) {
		if ((lk->lk_flags & (DLM_LKF_CONVERT | DLM_LKF_ORPHAN)) ||
		    !ids_owned(c, lk->lk_lkid))
			return -EINVAL;
		req.newid = lk->lk_lkid;
		req.lkid = 0;
	}
	if (lk->lk_bits & DLMP_LK_RANGE) {
		range.ra_start = lk->lk_range_start;
		range.ra_end = lk->lk_range_end;
		req.range = &range;
	}
	if (lk->lk_bits & DLMP_LK_LVB)
		req.lvb = lk->lk_lvb;
	req.owner = c->cl_owner;
	req.want_bast = lk->lk_bastaddr != 0;
	/* deadlock detection's waiter: the transaction, else the thread;
	 * only a requester that blocks on it (or declares a transaction)
	 * waits (core/deadlock.c) */
	if (lk->lk_xid) {
		req.waiter = lk->lk_xid;
		req.waiter_flags = DLM_WAITER_XID;
	} else {
		req.waiter = lk->lk_tid;
		if (!(lk->lk_bits & (DLMP_LK_SYNC | DLMP_LK_BLOCKS)))
			req.waiter_flags = DLM_WAITER_ASYNC;
	}
	if (lk->lk_flags & DLM_LKF_ORPHAN) {
		req.may_adopt = may_adopt;
		req.may_adopt_arg = &ac;
	}

	if (!(lk->lk_flags & DLM_LKF_CONVERT)) {
		/* Make room first: once the engine has the lock, nothing
		 * here may fail. */
		rv = uid_locks_reserve(rq->rq_d, c);
		if (rv)
			return rv;
		cb = lkcb_new(rq->rq_d, &h);
		if (!cb || u32idx_reserve(&c->cl_locks, 1)) {
			if (cb)
				lkcb_free(rq->rq_d, h);
			uid_locks_sub(uid_locks_of(rq->rq_d, c->cl_uid), 0);
			return -ENOMEM;
		}
	}
	rv = dlm_core_lock(c->cl_ls->dl_core, &req, &lkid);
	if (rv && cb)
		uid_locks_sub(uid_locks_of(rq->rq_d, c->cl_uid), 0);
	else if (cb && (ul = uid_locks_of(rq->rq_d, c->cl_uid)))
		/* counted before an adopted orphan leaves its owner's count
		 * (the same counter, maybe) */
		ul->ul_n++;
	if (rv) {
		if (rv == -EPERM && (lk->lk_flags & DLM_LKF_ORPHAN)) {
			char note[96];
			uint64_t quiet;

			if (log_budget_take(&perm_log_budget, &quiet))
				log_info("client pid %d uid %u may not adopt "
					 "another user's orphan in lockspace %s%s",
					 (int)c->cl_pid, (unsigned)c->cl_uid,
					 c->cl_ls->dl_name,
					 log_quiet_note(note, sizeof(note), quiet,
							"refusal"));
			else
				log_debug("client pid %d uid %u may not adopt "
					  "another user's orphan in lockspace %s",
					  (int)c->cl_pid, (unsigned)c->cl_uid,
					  c->cl_ls->dl_name);
		}
		if (cb)
			lkcb_free(rq->rq_d, h);
		return rv;
	}
	if (ac.ac_taken) {
		orphan_rec_sub(c->cl_ls, ac.ac_taken, 1);
		orphan_recs_prune(c->cl_ls);
	}
	if (!cb) {
		cb = lkcb_find(c, lkid);
		if (!cb) {
			log_err("lock %x of client %u has no callback record", lkid,
				c->cl_serial);
			rq->rq_reply.rp_value = lkid;
			return 0;
		}
	} else {
		/* An adopted orphan is granted already, and its adoption is
		 * answered by this reply alone: no completion AST follows
		 * (as the kernel's device answers it).  A later failed
		 * completion (a refused conversion) must not end it. */
		cb->lc_granted = (lk->lk_flags & DLM_LKF_ORPHAN) != 0;
		u32idx_put(&c->cl_locks, lkid, h);
	}
	cb->lc_castaddr = lk->lk_castaddr;
	cb->lc_castparam = lk->lk_castparam;
	cb->lc_bastaddr = lk->lk_bastaddr;
	cb->lc_bastparam = lk->lk_bastparam;
	cb->lc_lksb = lk->lk_lksb;
	c->cl_ls->dl_metrics.lm_ops[lk->lk_flags & DLM_LKF_CONVERT ?
				    DLMD_OP_CONVERT : DLMD_OP_LOCK]++;
	if (!ac.ac_taken)	/* an adoption gets no completion */
		cb->lc_wait_ns = dlmd_metrics_wait_begin(&c->cl_ls->dl_metrics,
							 arrived);
	rq->rq_reply.rp_value = lkid;
	if (!hold) {
		cb->lc_async = !ac.ac_taken;
		return 0;
	}
	cb->lc_sync_lock = true;
	cb->lc_lock_reqid = rq->rq_msg->m_hdr.h_reqid;
	c->cl_nheld++;
	rq->rq_lkid = lkid;
	return DLMD_REPLY_HELD;
}

/*
 * LOCK.  An async one with DLMP_LK_NEWID gets no REPLY: the client knows
 * the id already, and the outcome is the completion AST; a refusal is one
 * too, written here with the refusal's status (dlmd_proto.h).
 */
static int req_lock(struct req_ctx *rq)
{
	const struct dlmp_lock *lk = &rq->rq_msg->m_u.lock;
	int rv = lock_request(rq);

	/* a synchronous one is answered as any: a REPLY with the refusal,
	 * else its COMP_REPLY (dlmd_proto.h, version 6) */
	if (!(lk->lk_bits & DLMP_LK_NEWID) || (lk->lk_bits & DLMP_LK_SYNC))
		return rv;
	if (rv < 0) {
		struct lkcb cb = {
			.lc_castaddr = lk->lk_castaddr,
			.lc_castparam = lk->lk_castparam,
			.lc_bastaddr = lk->lk_bastaddr,
			.lc_bastparam = lk->lk_bastparam,
			.lc_lksb = lk->lk_lksb,
		};

		ast_send_failed(rq->rq_d, rq->rq_c, lk->lk_lkid, &cb, rv);
	}
	return DLMD_REPLY_DEFERRED;
}

static int unlock_request(struct req_ctx *rq)
{
	const struct dlmp_unlock *ul = &rq->rq_msg->m_u.unlock;
	struct dlmd_client *c = rq->rq_c;
	struct dlm_unlock_req req;
	struct lkcb *cb = lkcb_find(c, ul->ul_lkid);
	bool hold = (ul->ul_bits & DLMP_LK_SYNC) != 0;
	int rv;

	if ((ul->ul_bits & DLMP_UL_NOREPLY) &&
	    (hold || (ul->ul_flags & DLM_LKF_CANCEL)))
		return -EINVAL;	/* its outcome could be no AST at all */
	if (hold && c->cl_nheld >= DLMP_MAX_HELD)
		return -ENOBUFS;
	if (hold && cb && cb->lc_sync_unlock)
		return -EBUSY;	/* an unlock or cancel is under way */
	memset(&req, 0, sizeof(req));
	req.lkid = ul->ul_lkid;
	req.flags = ul->ul_flags;
	if (ul->ul_bits & DLMP_LK_LVB)
		req.lvb = ul->ul_lvb;
	req.owner = c->cl_owner;
	rv = dlm_core_unlock(c->cl_ls->dl_core, &req);
	if (!rv || (rv == -EBUSY && (req.flags & DLM_LKF_CANCEL)))
		c->cl_ls->dl_metrics.lm_ops[req.flags & DLM_LKF_CANCEL ?
					    DLMD_OP_CANCEL : DLMD_OP_UNLOCK]++;
	if (rv == -EBUSY && (req.flags & DLM_LKF_CANCEL)) {
		/* As the kernel's device answers a cancel that comes too
		 * late (the lock was granted, or a cancel is already under
		 * way): success, and no completion AST for this call. */
		rq->rq_reply.rp_value = DLMP_UNLOCK_NOTHING;
		return 0;
	}
	if (rv)
		return rv;
	cb = lkcb_find(c, ul->ul_lkid);
	if (cb) {
		/* dlm_unlock(3): the last completion AST runs, with the new
		 * argument and status block. */
		cb->lc_castparam = ul->ul_castparam;
		if (ul->ul_castaddr)
			cb->lc_castaddr = ul->ul_castaddr;
		if (ul->ul_lksb)
			cb->lc_lksb = ul->ul_lksb;
	}
	if (!hold || !cb) {
		if (cb)
			cb->lc_async = true;
		return 0;
	}
	cb->lc_sync_unlock = true;
	cb->lc_sync_cancel = (ul->ul_flags & DLM_LKF_CANCEL) != 0;
	cb->lc_unlock_reqid = rq->rq_msg->m_hdr.h_reqid;
	c->cl_nheld++;
	return DLMD_REPLY_HELD;
}

/*
 * UNLOCK.  One with DLMP_UL_NOREPLY gets no REPLY: its outcome is the
 * completion AST, a refusal one with the refusal's status (dlmd_proto.h).
 * A lock without a callback record (its memory ran out) gets no AST from
 * the engine's completion, so that one is written here.
 */
static int req_unlock(struct req_ctx *rq)
{
	const struct dlmp_unlock *ul = &rq->rq_msg->m_u.unlock;
	struct lkcb *cb, ucb;
	int rv = unlock_request(rq);

	if (!(ul->ul_bits & DLMP_UL_NOREPLY))
		return rv;
	cb = lkcb_find(rq->rq_c, ul->ul_lkid);
	if (rv == 0 && cb)
		return DLMD_REPLY_DEFERRED;
	memset(&ucb, 0, sizeof(ucb));
	ucb.lc_castaddr = ul->ul_castaddr;
	ucb.lc_castparam = ul->ul_castparam;
	ucb.lc_lksb = ul->ul_lksb;
	if (cb) {
		if (!ucb.lc_castaddr)
			ucb.lc_castaddr = cb->lc_castaddr;
		if (!ucb.lc_lksb)
			ucb.lc_lksb = cb->lc_lksb;
		ucb.lc_bastaddr = cb->lc_bastaddr;
		ucb.lc_bastparam = cb->lc_bastparam;
	}
	ast_send_failed(rq->rq_d, rq->rq_c, ul->ul_lkid, &ucb,
			rv ? rv : -DLM_EUNLOCK);
	return DLMD_REPLY_DEFERRED;
}

/* The owners of pid's orphans, up to 64 per walk, among those the caller
 * may purge; the others are counted in oo_refused. */
struct orphan_owners {
	const struct dlmd_ls	*oo_dl;
	uint32_t		oo_pid;
	uid_t			oo_uid;
	bool			oo_admin;
	uint64_t		oo_owners[64];
	unsigned int		oo_n;
	bool			oo_more;
	unsigned int		oo_refused;
};

static void collect_orphan_owner(void *arg, const struct dlm_lock_info *li)
{
	struct orphan_owners *oo = arg;

	if (!li->orphan || li->is_master_copy || (li->owner >> 32) != oo->oo_pid)
		return;
	if (!orphan_owner_allowed(oo->oo_dl, li->owner, oo->oo_uid, oo->oo_admin)) {
		oo->oo_refused++;
		return;
	}
	for (unsigned int i = 0; i < oo->oo_n; i++)
		if (oo->oo_owners[i] == li->owner)
			return;
	if (oo->oo_n < sizeof(oo->oo_owners) / sizeof(oo->oo_owners[0]))
		oo->oo_owners[oo->oo_n++] = li->owner;
	else
		oo->oo_more = true;
}

struct user_owners {
	uid_t		uo_uid;
	uint64_t	uo_owners[64];
	unsigned int	uo_n;
};

static void collect_user_owner(void *arg, uint32_t key, void *val)
{
	struct user_owners *uo = arg;
	const struct orphan_rec *rec = val;

	if (rec->or_uid == uo->uo_uid &&
	    uo->uo_n < sizeof(uo->uo_owners) / sizeof(uo->uo_owners[0]))
		uo->uo_owners[uo->uo_n++] = rec->or_owner;
}

/* Purge every orphan this node's records give to user 'uid'.  Bounded:
 * each pass removes the records it collected. */
static int purge_user_orphans(struct dlmd_ls *dl, uid_t uid)
{
	struct user_owners uo;
	int total = 0, rv;

	do {
		memset(&uo, 0, sizeof(uo));
		uo.uo_uid = uid;
		u32map_each(&dl->dl_orphan_owners, collect_user_owner, &uo);
		for (unsigned int i = 0; i < uo.uo_n; i++) {
			rv = dlm_core_purge_orphans(dl->dl_core, 0, uo.uo_owners[i]);
			orphan_rec_free(u32map_del(&dl->dl_orphan_owners,
						   (uint32_t)uo.uo_owners[i]));
			if (rv < 0)
				return rv;
			total += rv;
		}
	} while (uo.uo_n);
	return total;
}

/*
 * dlm_ls_purge(nodeid, pid), as the kernel does it: on this node (nodeid
 * 0 or ours) the orphans that process pid left (pid 0: all orphans),
 * except that the caller's own pid means the caller's own locks on this
 * handle, all of them, PERSISTENT ones too, with no ASTs (the kernel
 * purges the calling process's locks on that device file); on another
 * member the orphans of pid there (a message asks it).  Who may purge
 * what: an admin (root or admin_group) any orphan, here or on another
 * node; anyone else only the orphans that owners of their own uid left
 * on this node: "all" (pid 0) means all of theirs, a pid whose orphans
 * are another user's is -EPERM, and another node's orphans are -EPERM
 * (their owners are known there).
 */
static int req_purge(struct req_ctx *rq)
{
	struct dlmd *d = rq->rq_d;
	struct dlmd_client *c = rq->rq_c;
	struct dlmd_ls *dl = c->cl_ls;
	struct dlm_ls *ls = dl->dl_core;
	uint32_t nodeid = rq->rq_msg->m_u.pair.pr_a;
	uint32_t pid = rq->rq_msg->m_u.pair.pr_b;
	bool admin = client_is_admin(d, c);
	struct orphan_owners oo;
	unsigned int refused = 0;
	int total = 0, rv;

	if (nodeid && nodeid != d->d_nodeid) {
		if (!admin)
			return -EPERM;
		log_info("client pid %d purges the orphans of %s%u on node %u in "
			 "lockspace %s", (int)c->cl_pid, pid ? "pid " : "all",
			 pid ? pid : 0, nodeid, dl->dl_name);
		rv = pid ? dlm_core_purge_orphan_group(ls, nodeid, pid) :
			   dlm_core_purge_orphans(ls, nodeid, 0);
		return rv < 0 ? rv : 0;
	}
	if (pid && pid == (uint32_t)c->cl_pid) {
		rv = dlm_core_purge_owner_locks(ls, c->cl_owner);
		if (rv < 0)
			return rv;
		/* gone without ASTs: forget their callbacks and whatever
		 * ASTs still wait here to be written; those already in the
		 * AST socket carry the old epoch, which libdlm drops once
		 * the reply gave it the new one */
		{
			struct drop_held dh = { d, c, 0, -DLM_ECANCEL, -DLM_EUNLOCK };

			drop_lock_records(d, c, &dh);
		}
		astq_free(d, c);
		c->cl_purge_epoch++;
		log_debug("client pid %d serial %u purged its %d lock%s in "
			  "lockspace %s (AST epoch %u)", (int)c->cl_pid,
			  c->cl_serial, rv, rv == 1 ? "" : "s", dl->dl_name,
			  c->cl_purge_epoch);
		rq->rq_reply.rp_value = (uint32_t)rv;
		rq->rq_reply.rp_value2 = c->cl_purge_epoch;
		return 0;
	}
	if (!pid) {
		if (admin) {
			rv = dlm_core_purge_orphans(ls, 0, 0);
			if (rv >= 0)
				orphan_recs_clear(dl);
		} else {
			rv = purge_user_orphans(dl, c->cl_uid);
		}
		if (rv < 0)
			return rv;
		orphan_recs_prune(dl);
		rq->rq_reply.rp_value = (uint32_t)rv;
		return 0;
	}
	/* Owner ids carry the pid in their high half; the engine matches
	 * owners exactly, so purge each owner of that pid in turn.  Bounded:
	 * each pass removes every orphan of up to 64 owners. */
	do {
		memset(&oo, 0, sizeof(oo));
		oo.oo_dl = dl;
		oo.oo_pid = pid;
		oo.oo_uid = c->cl_uid;
		oo.oo_admin = admin;
		dlm_core_ls_walk(ls, collect_orphan_owner, &oo);
		refused = oo.oo_refused;
		for (unsigned int i = 0; i < oo.oo_n; i++) {
			rv = dlm_core_purge_orphans(ls, 0, oo.oo_owners[i]);
			if (rv < 0)
				return rv;
			orphan_rec_sub(dl, oo.oo_owners[i], (uint64_t)rv);
			total += rv;
		}
	} while (oo.oo_more && oo.oo_n);
	orphan_recs_prune(dl);
	if (!total && refused) {
		char note[96];
		uint64_t quiet;

		if (log_budget_take(&perm_log_budget, &quiet))
			log_info("client pid %d uid %u may not purge pid %u's "
				 "orphans in lockspace %s (another user's)%s",
				 (int)c->cl_pid, (unsigned)c->cl_uid, pid,
				 dl->dl_name, log_quiet_note(note, sizeof(note),
							     quiet, "refusal"));
		else
			log_debug("client pid %d uid %u may not purge pid %u's "
				  "orphans in lockspace %s (another user's)",
				  (int)c->cl_pid, (unsigned)c->cl_uid, pid,
				  dl->dl_name);
		return -EPERM;
	}
	rq->rq_reply.rp_value = (uint32_t)total;
	return 0;
}

static int req_deadlock(struct req_ctx *rq)
{
	struct dlmd_client *c = rq->rq_c;
	uint32_t lkid = rq->rq_msg->m_u.pair.pr_a;
	struct dlm_unlock_req req;
	struct lkcb *cb = lkcb_find(c, lkid);
	int rv;

	if (rq->rq_msg->m_u.pair.pr_b)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	req.lkid = lkid;
	req.flags = DLM_LKF_CANCEL;
	req.owner = c->cl_owner;
	rv = dlm_core_unlock(c->cl_ls->dl_core, &req);
	if (!rv || rv == -EBUSY)
		c->cl_ls->dl_metrics.lm_ops[DLMD_OP_CANCEL]++;
	if (rv == -EBUSY && (req.flags & DLM_LKF_CANCEL)) {
		/* As the kernel's device answers a cancel that comes too
		 * late (the lock was granted, or a cancel is already under
		 * way): success, and no completion AST for this call. */
		rq->rq_reply.rp_value = DLMP_UNLOCK_NOTHING;
		return 0;
	}
	if (rv)
		return rv;
	if (cb)
		cb->lc_deadlock = true;
	return 0;
}

/* The fencing token of one of the client's locks (core/token.c). */
static int req_token(struct req_ctx *rq)
{
	struct dlmd_client *c = rq->rq_c;
	uint64_t token;
	int rv;

	if (rq->rq_msg->m_u.pair.pr_b)
		return -EINVAL;
	rv = dlm_core_lock_token(c->cl_ls->dl_core, rq->rq_msg->m_u.pair.pr_a,
				 c->cl_owner, &token);
	if (rv == -EPERM)
		rv = -ENOENT;	/* another client's lock: not ours to know */
	if (rv)
		return rv;
	rq->rq_reply.rp_value = (uint32_t)token;
	rq->rq_reply.rp_value2 = (uint32_t)(token >> 32);
	return 0;
}

struct req_handler {
	unsigned int	rh_type;
	bool		rh_bound;	/* needs an open lockspace */
	int		(*rh_fn)(struct req_ctx *rq);
};

static const struct req_handler req_table[] = {
	{ DLMP_VERSION_REQ, false, req_version },
	{ DLMP_LS_CREATE, false, req_ls_create },
	{ DLMP_LS_OPEN, false, req_ls_open },
	{ DLMP_LS_RELEASE, false, req_ls_release },
	{ DLMP_LOCK, true, req_lock },
	{ DLMP_UNLOCK, true, req_unlock },
	{ DLMP_PURGE, true, req_purge },
	{ DLMP_DEADLOCK, true, req_deadlock },
	{ DLMP_TOKEN, true, req_token },
	{ DLMP_IDS, true, req_ids },
	{ DLMP_RING, true, req_ring },
};

static bool limit_log_due(uint64_t *last_ms, uint64_t *quiet);

/*
 * A request whose fd did not arrive: it came with one (SCM_RIGHTS: the
 * AST socket of LS_OPEN, the ring of RING ATTACH) but the kernel could
 * not install it, for dlmd had no fd free (RLIMIT_NOFILE), and dropped
 * it (MSG_CTRUNC, no fd).  It is answered EMFILE: the client may try
 * again once dlmd has fds to spare.  (Its bytes were decoded as too
 * long, and the client got EBADMSG, a protocol error, for what is a
 * shortage: 82 of 200 clients opening a lockspace at once under
 * "ulimit -n 64"; tests/test-client-limits.sh step 3b.)
 */
#define DLMD_FD_LOST	(-2)

void dlmd_client_request(struct dlmd *d, struct dlmd_client *c,
			 const void *buf, size_t len, int passed_fd)
{
	struct dlmp_msg msg;
	struct req_ctx rq;
	const struct req_handler *h = NULL;
	int rv;

	memset(&rq, 0, sizeof(rq));
	rq.rq_d = d;
	rq.rq_c = c;
	rq.rq_msg = &msg;
	rq.rq_fd = passed_fd;
	d->d_nrequests++;
	rv = dlmp_decode(buf, len, &msg);
	if (rv == 0 && passed_fd == DLMD_FD_LOST) {
		rq.rq_fd = -1;
		rv = -EMFILE;
		d->d_nfd_lost++;
		if (limit_log_due(&d->d_fdlost_log_ms, &d->d_fdlost_nquiet)) {
			log_err("client pid %d: the fd it passed with its %s was "
				"dropped, dlmd having none free (RLIMIT_NOFILE): "
				"answered EMFILE (%llu more not logged in the last "
				"minute)", (int)c->cl_pid,
				dlmp_type_str(msg.m_hdr.h_type),
				(unsigned long long)d->d_fdlost_nquiet);
			d->d_fdlost_nquiet = 0;
		}
	} else if (rv == 0) {
		for (size_t i = 0; i < sizeof(req_table) / sizeof(req_table[0]); i++)
			if (req_table[i].rh_type == msg.m_hdr.h_type)
				h = &req_table[i];
		if (!h)
			rv = -EOPNOTSUPP;	/* a reply or AST sent to us */
		else if (h->rh_bound && !c->cl_ls)
			rv = -ENOTCONN;
		else
			rv = h->rh_fn(&rq);
	} else if (rv == -EPROTONOSUPPORT && msg.m_hdr.h_magic == DLMP_MAGIC) {
		/* a client built against another libdlm: said at warning,
		 * once per client, and at most once a minute for all */
		d->d_nbad_requests++;
		if (!c->cl_proto_said) {
			c->cl_proto_said = true;
			if (limit_log_due(&d->d_proto_log_ms, &d->d_proto_nquiet)) {
				log_warn("client pid %d uid %u speaks client protocol "
					 "version %u, dlmd speaks %u: its requests "
					 "are refused (EPROTONOSUPPORT); build it "
					 "against this dlmd's libdlm (%llu more such "
					 "clients not logged in the last minute)",
					 (int)c->cl_pid, (unsigned int)c->cl_uid,
					 msg.m_hdr.h_version, DLMP_VERSION,
					 (unsigned long long)d->d_proto_nquiet);
				d->d_proto_nquiet = 0;
			} else {
				/* still once per client (test-daemon.sh
				 * counts these lines too) */
				log_debug("client pid %d uid %u speaks client "
					  "protocol version %u, dlmd speaks %u: "
					  "not said at warning (one such line a "
					  "minute)", (int)c->cl_pid,
					  (unsigned int)c->cl_uid,
					  msg.m_hdr.h_version, DLMP_VERSION);
			}
		}
	} else {
		d->d_nbad_requests++;
		log_debug("client pid %d serial %u: bad %s request (%zu bytes): %s",
			  (int)c->cl_pid, c->cl_serial,
			  dlmp_type_str(msg.m_hdr.h_type), len, strerror(-rv));
	}
	if (rq.rq_fd >= 0) {
		passed_drop(c->cl_uid, rq.rq_fd);
		if (reap_over(c->cl_uid, 1))
			client_break(d, c, "its user passed more fds than dlmd "
				     "could close yet (\"Passed fds\")");
	}
	if (rv == -EPROTONOSUPPORT && msg.m_hdr.h_magic == DLMP_MAGIC) {
		/* in a version the requester can read (dlmd_proto.h) */
		struct dlmp_msg m;

		memset(&m, 0, sizeof(m));
		m.m_hdr.h_type = DLMP_REPLY;
		m.m_hdr.h_reqid = msg.m_hdr.h_reqid;
		m.m_u.reply.rp_status = rv;
		send_answer(d, c, &m, dlmp_reply_version(msg.m_hdr.h_version));
	} else if (rv != DLMD_REPLY_DEFERRED && rv != DLMD_REPLY_HELD) {
		rq.rq_reply.rp_status = rv;
		send_reply(d, c, msg.m_hdr.h_reqid, &rq.rq_reply);
	}
	if (c->cl_ans_armed) {
		/* RING ATTACH answered on the socket: the rest in the ring */
		c->cl_ans_armed = false;
		c->cl_ans_on = true;
	}
	dlmd_flush(d);
	if (rv == DLMD_REPLY_HELD && msg.m_hdr.h_type == DLMP_LOCK &&
	    !(msg.m_u.lock.lk_flags & DLM_LKF_CONVERT) &&
	    !(msg.m_u.lock.lk_bits & DLMP_LK_NEWID)) {
		/* Still waiting after the flush: tell the caller its lock
		 * id now (the COMP_REPLY follows when it completes); one
		 * of its own block it knows already. */
		struct lkcb *cb = lkcb_find(c, rq.rq_lkid);

		if (cb && cb->lc_sync_lock &&
		    cb->lc_lock_reqid == msg.m_hdr.h_reqid) {
			rq.rq_reply.rp_status = 0;
			rq.rq_reply.rp_value = rq.rq_lkid;
			rq.rq_reply.rp_value2 = DLMP_REPLY_HELD;
			send_reply(d, c, msg.m_hdr.h_reqid, &rq.rq_reply);
		}
	}
}

void dlmd_ls_join_done(struct dlmd *d, struct dlmd_ls *dl, int status)
{
	struct dlmp_reply rp;

	for (unsigned int i = 0; i < dl->dl_nwaits; i++) {
		struct dlmd_client *c = u32map_get(&d->d_clients,
						   dl->dl_waits[i].cw_serial);

		if (!c)
			continue;	/* gave up waiting */
		memset(&rp, 0, sizeof(rp));
		rp.rp_status = status;
		send_reply(d, c, dl->dl_waits[i].cw_reqid, &rp);
	}
	free(dl->dl_waits);
	dl->dl_waits = NULL;
	dl->dl_nwaits = 0;
}

/* ------------------------------------------------------------------ */
/* connections                                                         */
/* ------------------------------------------------------------------ */

/*
 * Take the requests in c's ring (dlmd_proto.h "The request ring"), at
 * most DLMP_RING_SLOTS per call: what is left then is taken by ring_job
 * (a timer of the loop due at once) after other clients were served,
 * without a kick.  When the ring is empty and not watched ("Watching the
 * rings"): rg_sleeping = 1, a barrier, and a last look at rg_tail
 * (the client does the mirror image), so that a request added
 * meanwhile either is seen here or gets a kick.  The caller batches the
 * answers (out_batch) and flushes them.
 */
static void ring_job(void *data);

/* Take the next slot of c's ring and handle its request. */
static void ring_take_slot(struct dlmd *d, struct dlmd_client *c)
{
	struct dlmp_ring *r = c->cl_ring;
	unsigned char slot[DLMP_RING_SLOT_LEN];
	uint32_t len;

	/* One copy, then only the copy is read (the client may be writing
	 * the slot right now). */
	memcpy(slot, r->rg_slots[c->cl_ring_head & (DLMP_RING_SLOTS - 1)],
	       sizeof(slot));
	c->cl_ring_head++;
	__atomic_store_n(&r->rg_head, c->cl_ring_head, __ATOMIC_RELEASE);
	memcpy(&len, slot, sizeof(len));
	if (len > DLMP_MAX_MSG)
		len = DLMP_MAX_MSG;	/* then its header's length does not
					 * match: -EBADMSG */
	d->d_nring_requests++;
	dlmd_client_request(d, c, slot + 8, len, -1);
}

/*
 * A request read from the socket of a client with a ring comes after
 * everything its ring holds now (dlmd_proto.h "The request ring": a
 * request the client waits for may travel on the socket when we
 * sleep): take that first, whatever the budget, at most the
 * DLMP_RING_SLOTS the ring can hold.  The tail is read once: what the
 * client adds meanwhile came later than the packet.  Cheap when the
 * ring is empty: one comparison.
 */
static void ring_catch_up(struct dlmd *d, struct dlmd_client *c)
{
	uint32_t avail = __atomic_load_n(&c->cl_ring->rg_tail, __ATOMIC_ACQUIRE) -
			 c->cl_ring_head;

	if (avail == 0)
		return;
	if (avail > DLMP_RING_SLOTS) {
		client_break(d, c, "request ring index out of range");
		return;
	}
	d->d_nring_catchups++;
	/* paused: the rest after its resumption (the packet waits) */
	while (avail-- && !c->cl_broken && !c->cl_paused)
		ring_take_slot(d, c);
}

/* Keep a packet of a paused client with a ring for later (stash_run).
 * Out of memory the client is cut: its request cannot be answered. */
static void stash_push(struct dlmd *d, struct dlmd_client *c, const void *buf,
		       size_t len, int passed_fd)
{
	struct stashed *st = malloc(sizeof(*st) + len);

	if (!st) {
		passed_drop(c->cl_uid, passed_fd);
		client_break(d, c, "out of memory for its requests");
		return;
	}
	st->st_next = NULL;
	st->st_fd = passed_fd;
	st->st_len = len;
	memcpy(st->st_buf, buf, len);
	if (!c->cl_stash)
		c->cl_stash_tail = &c->cl_stash;
	*c->cl_stash_tail = st;
	c->cl_stash_tail = &st->st_next;
}

static void stash_free(struct dlmd_client *c)
{
	struct stashed *st;

	while ((st = c->cl_stash)) {
		c->cl_stash = st->st_next;
		passed_drop(c->cl_uid, st->st_fd);
		free(st);
	}
}

/* Handle the kept packets, each after the ring before it, until the
 * client is paused again.  The caller batches the answers. */
static void stash_run(struct dlmd *d, struct dlmd_client *c)
{
	while (c->cl_stash && !c->cl_paused && !c->cl_broken) {
		struct stashed *st = c->cl_stash;

		ring_catch_up(d, c);
		if (c->cl_paused || c->cl_broken)
			break;
		c->cl_stash = st->st_next;
		dlmd_client_request(d, c, st->st_buf, st->st_len, st->st_fd);
		free(st);
	}
	if (c->cl_broken)
		stash_free(c);
}

/*
 * Watching the rings.  A client that waits for each answer (the _wait
 * calls: bench-compare W1, a lock then its unlock, then the next lock)
 * sends its next request a few microseconds after its answer.  If dlmd
 * said it sleeps in between, that request travels on the socket and
 * wakes dlmd; on a machine with an idle CPU the wake-up is an
 * inter-processor interrupt that brings an idle (on a virtual machine:
 * halted) CPU back, and the answer wakes the client the same way.
 * Profiled (issue 14; perf sched events, 2 vCPUs): a W1 pair cost 4 such
 * wake-ups, each 20-30 us on this VM, when dlmd and the client ran on
 * different CPUs (the scheduler keeps a task on its idle previous CPU
 * even for a synchronous wake-up), against 2-3 us on one CPU.
 *
 * So when a client's ring runs empty dlmd does not say it sleeps at
 * once: the client goes on d_watch, and a timer of the loop due at once
 * (watch_job: every round of the loop still polls the fds, with a zero
 * timeout, and runs the other timers) looks at the watched rings' tails
 * and takes what came, until client_spin_us (dlm.conf) passed without a
 * request.  Meanwhile rg_sleeping stays 0 and the clients add their
 * requests to their rings without a system call.  Each round yields the
 * CPU (sched_yield), so that a client on the same CPU runs at once, and
 * so does anything else that is runnable there; but a yield that gave
 * the CPU away for long (WATCH_YIELD_LONG_NS: a busy process shares our
 * CPU, and a request written meanwhile waited for it, as no kick wakes
 * a dlmd that yielded) ends the watch, and for a while (WATCH_OFF_*,
 * longer after each such yield) rings that run empty are told dlmd
 * sleeps at once, so that a sleeping dlmd is woken, ahead of the busy
 * process, by each request.  When the time is up, each watched ring is
 * told dlmd sleeps as ring_drain does (rg_sleeping = 1, a barrier, a
 * last look at rg_tail: what came meanwhile is taken).  A paused or
 * broken client leaves the watch (a paused one is never told dlmd
 * sleeps: its resumption takes its ring); a closed one leaves it in
 * dlmd_client_close.  At most WATCH_MAX rings are watched at once (each
 * round looks at all).  Without a loop (tests driving client.c
 * directly) or with client_spin_us = 0 nothing is watched.
 */
static void watch_job(void *data);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A timer due at once rather than a job: libqb polls with a 50 ms
 * timeout while only jobs are due, and runs QB_LOOP_LOW jobs one loop
 * turn in three (seen: each request of a watched ring waited 50 ms). */
static bool watch_queue(struct dlmd *d)
{
	if (d->d_watch_job)
		return true;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, 0, d, watch_job,
			      &d->d_watch_timer) != 0)
		return false;
	d->d_watch_job = true;
	return true;
}

/* c's ring is empty: watch it rather than say dlmd sleeps.  false: not
 * watched (the caller tells the ring dlmd sleeps). */
static bool watch_ring(struct dlmd *d, struct dlmd_client *c)
{
	if (!d->d_loop || !d->d_cfg.cf_client_spin_us || d->d_watch_ending)
		return false;
	if (!c->cl_watched && d->d_nwatched >= WATCH_MAX)
		return false;
	if (!c->cl_watched && !d->d_watch && d->d_watch_off_until &&
	    mono_ns() < d->d_watch_off_until)
		return false;
	if (!watch_queue(d))
		return false;
	if (!c->cl_watched) {
		d->d_nwatched++;
		c->cl_watched = true;
		c->cl_watch_next = d->d_watch;
		d->d_watch = c;
	}
	d->d_watch_until = mono_ns() + (uint64_t)d->d_cfg.cf_client_spin_us * 1000;
	return true;
}

static void watch_unlink(struct dlmd *d, struct dlmd_client *c)
{
	if (!c->cl_watched)
		return;
	for (struct dlmd_client **pp = &d->d_watch; *pp; pp = &(*pp)->cl_watch_next) {
		if (*pp == c) {
			*pp = c->cl_watch_next;
			break;
		}
	}
	d->d_nwatched--;
	c->cl_watched = false;
	c->cl_watch_next = NULL;
}

/* Tell c's ring dlmd sleeps; false if a request came meanwhile (then it
 * does not sleep). */
static bool ring_sleep(struct dlmd_client *c)
{
	struct dlmp_ring *r = c->cl_ring;

	__atomic_store_n(&r->rg_sleeping, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->rg_tail, __ATOMIC_SEQ_CST) == c->cl_ring_head)
		return true;
	__atomic_store_n(&r->rg_sleeping, 0, __ATOMIC_RELAXED);
	return false;
}

/* End the watch: every watched ring is told dlmd sleeps (what came
 * meanwhile taken first). */
static void watch_end(struct dlmd *d)
{
	struct dlmd_client *c;

	d->d_watch_ending = true;
	while ((c = d->d_watch)) {
		d->d_watch = c->cl_watch_next;
		d->d_nwatched--;
		c->cl_watched = false;
		c->cl_watch_next = NULL;
		if (c->cl_broken || c->cl_paused || !c->cl_ring)
			continue;
		/* ring_drain tells it dlmd sleeps (no watch while ending) */
		if (!ring_sleep(c))
			dlmd_client_ring_take(d, c);
		else
			d->d_nring_sleeps++;
		d->d_nwatch_sleeps++;
	}
	d->d_watch_ending = false;
}

static void watch_job(void *data)
{
	struct dlmd *d = data;
	bool took = false;

	d->d_watch_job = false;
	for (struct dlmd_client **pp = &d->d_watch, *c; (c = *pp);) {
		if (c->cl_broken || c->cl_paused || !c->cl_ring) {
			*pp = c->cl_watch_next;
			d->d_nwatched--;
			c->cl_watched = false;
			c->cl_watch_next = NULL;
			continue;
		}
		/* a tail out of range is ring_drain's to judge */
		if (__atomic_load_n(&c->cl_ring->rg_tail, __ATOMIC_ACQUIRE) !=
		    c->cl_ring_head) {
			took = true;
			dlmd_client_ring_take(d, c);	/* watched again */
		}
		pp = &c->cl_watch_next;
	}
	if (!d->d_watch)
		return;
	if (took && d->d_watch_off_ns && ++d->d_watch_good >= WATCH_GOOD_ROUNDS) {
		d->d_watch_off_ns = 0;
		d->d_watch_good = 0;
	}
	/* after a request too: its client, on our CPU, reads the answer and
	 * writes its next request before we look again */
	{
		uint64_t t0 = mono_ns(), t1;

		if (!took && t0 >= d->d_watch_until) {
			watch_end(d);
			return;
		}
		sched_yield();
		t1 = mono_ns();
		if (t1 - t0 >= WATCH_YIELD_LONG_NS) {
			/* what a client put in its ring meanwhile waited
			 * (nothing wakes a dlmd that yielded): sleep, and be
			 * woken, for a while */
			d->d_watch_off_ns = d->d_watch_off_ns ?
				d->d_watch_off_ns * 2 : WATCH_OFF_MIN_NS;
			if (d->d_watch_off_ns > WATCH_OFF_MAX_NS)
				d->d_watch_off_ns = WATCH_OFF_MAX_NS;
			d->d_watch_off_until = t1 + d->d_watch_off_ns;
			d->d_watch_good = 0;
			d->d_nwatch_yields_long++;
			watch_end(d);
			return;
		}
	}
	if (!watch_queue(d))
		watch_end(d);
}

static void ring_drain(struct dlmd *d, struct dlmd_client *c)
{
	struct dlmp_ring *r = c->cl_ring;
	unsigned int budget = DLMP_RING_SLOTS;

	/* paused (backpressure): not a slot more, and no rg_sleeping = 1
	 * either (a kick would wait unread): its resumption comes back */
	while (!c->cl_broken && !c->cl_paused) {
		uint32_t avail = __atomic_load_n(&r->rg_tail, __ATOMIC_ACQUIRE) -
				 c->cl_ring_head;

		if (avail > DLMP_RING_SLOTS) {
			client_break(d, c, "request ring index out of range");
			return;
		}
		if (avail == 0) {
			if (watch_ring(d, c))
				break;
			__atomic_store_n(&r->rg_sleeping, 1, __ATOMIC_SEQ_CST);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&r->rg_tail, __ATOMIC_SEQ_CST) ==
			    c->cl_ring_head) {
				d->d_nring_sleeps++;
				break;
			}
			__atomic_store_n(&r->rg_sleeping, 0, __ATOMIC_RELAXED);
			continue;
		}
		if (budget == 0) {
			/* fair to the others: the rest after them (without a
			 * loop, or if the job cannot be queued: now) */
			if (d->d_loop)
				ring_job_queue(d, c);
			if (c->cl_ring_job)
				break;
			budget = DLMP_RING_SLOTS;
		}
		ring_take_slot(d, c);
		budget--;
	}
	/* a client waits for room: wake it (its rg_waiting, our rg_head) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!c->cl_broken && __atomic_load_n(&r->rg_waiting, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&r->rg_waiting, 0, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &r->rg_head, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

void dlmd_client_socket_request(struct dlmd *d, struct dlmd_client *c,
				const void *buf, size_t len, int passed_fd)
{
	struct dlmp_msg m;

	/* a LOCK or UNLOCK the ring could have carried: libdlm sends it
	 * on the socket only when it finds dlmd said it sleeps, and takes
	 * the flag (ring_sleeps; tests/test-client-watch.sh) */
	if (c->cl_ring && dlmp_decode(buf, len, &m) == 0 &&
	    (m.m_hdr.h_type == DLMP_LOCK || m.m_hdr.h_type == DLMP_UNLOCK))
		d->d_nring_socket_locks++;
	if (c->cl_ring && !c->cl_stash && !c->cl_paused)
		ring_catch_up(d, c);	/* the order */
	if (c->cl_broken) {
		passed_drop(c->cl_uid, passed_fd);
		return;
	}
	if (c->cl_ring && (c->cl_stash || c->cl_paused)) {
		/* paused before the ring in front of it was taken, or
		 * behind packets that were: later, in order */
		stash_push(d, c, buf, len, passed_fd);
		return;
	}
	dlmd_client_request(d, c, buf, len, passed_fd);
}

static void ring_job(void *data)
{
	struct dlmd_client *c = data;

	c->cl_ring_job = false;
	dlmd_client_ring_take(c->cl_d, c);
}

void dlmd_client_ring_take(struct dlmd *d, struct dlmd_client *c)
{
	if (!c->cl_ring || c->cl_broken)
		return;
	out_batch.ob_c = c;
	out_batch.ob_n = 0;
	stash_run(d, c);
	if (!c->cl_stash)
		ring_drain(d, c);
	ast_batch_flush(d, c);
	out_batch_flush(d);
	out_batch.ob_c = NULL;
}

static int client_readable(int32_t fd, int32_t revents, void *data);

/*
 * Limits on connections.
 *
 * Per user: a uid other than root may hold at most max_clients_per_uid
 * connections (dlm.conf); one more is accepted only to be told so and
 * closed: the daemon sends a REPLY with reqid 0 and status -EUSERS
 * before any request (libdlm/dlmd_proto.h), which libdlm reports as
 * errno EUSERS.  Each connection costs the daemon two fds (the request
 * connection and, once a lockspace is open, the AST socket), so this
 * keeps one user from taking them all.
 *
 * Fds running out anyway (many users, a low RLIMIT_NOFILE): accept fails
 * with EMFILE/ENFILE while the connection stays queued, so a level-
 * triggered poll would call us again at once, for ever.  Instead the
 * listening socket leaves the loop for ACCEPT_PAUSE_MS and comes back
 * (new clients wait in the backlog meanwhile, and are served once fds
 * are free), and the failure is logged once a minute at most, with how
 * many times it happened in between.
 */
static uint32_t uid_conns(const struct dlmd *d, uid_t uid)
{
	return (uint32_t)(uintptr_t)u32map_get(&d->d_uid_conns, (uint32_t)uid);
}

/* Root (uid 0) is not counted; nor is uid 0xffffffff (not a user, and
 * not a key the map can hold). */
static bool uid_limited(uid_t uid)
{
	return uid != 0 && (uint32_t)uid != UINT32_MAX;
}

static int uid_conns_add(struct dlmd *d, uid_t uid, int delta)
{
	uint32_t n = uid_conns(d, uid) + (uint32_t)delta;

	if (!n) {
		u32map_del(&d->d_uid_conns, (uint32_t)uid);
		return 0;
	}
	return u32map_put(&d->d_uid_conns, (uint32_t)uid, (void *)(uintptr_t)n);
}

/* Log a limit's event at most once per LIMIT_LOG_MS; *quiet counts the
 * ones not logged.  Returns whether to log now. */
static bool limit_log_due(uint64_t *last_ms, uint64_t *quiet)
{
	uint64_t now = dlmd_now_ms();

	if (*last_ms && now - *last_ms < LIMIT_LOG_MS) {
		(*quiet)++;
		return false;
	}
	*last_ms = now ? now : 1;
	return true;
}

/* Tell a connection we will not serve it why, then close it. */
static void refuse_conn(struct dlmd *d, int fd, const struct ucred *cr, int status)
{
	struct dlmp_msg m;
	unsigned char buf[DLMP_MAX_MSG];
	int len;

	memset(&m, 0, sizeof(m));
	m.m_hdr.h_type = DLMP_REPLY;
	m.m_hdr.h_reqid = 0;
	m.m_u.reply.rp_status = status;
	len = dlmp_encode(&m, buf, sizeof(buf));
	if (len > 0 && send(fd, buf, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL) != len)
		log_debug("client pid %d: cannot send the refusal: %s", (int)cr->pid,
			  strerror(errno));
	/* what it sent before we accepted it may hold fds ("Passed fds") */
	sock_close(cr->uid, fd);
	d->d_nrefused++;
	if (limit_log_due(&d->d_refuse_log_ms, &d->d_refuse_nquiet)) {
		log_warn("client pid %d uid %u refused: %s (%llu other refusal%s "
			 "not logged in the last minute)", (int)cr->pid,
			 (unsigned)cr->uid, status == -EUSERS ?
			 "the user holds max_clients_per_uid connections" :
			 strerror(-status),
			 (unsigned long long)d->d_refuse_nquiet,
			 d->d_refuse_nquiet == 1 ? "" : "s");
		d->d_refuse_nquiet = 0;
	}
}

static int listen_readable(int32_t fd, int32_t revents, void *data);

static void accept_resume(void *data)
{
	struct dlmd *d = data;

	d->d_accept_paused = false;
	if (qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, d->d_listen_fd, POLLIN, d,
			     listen_readable) != 0) {
		log_err("cannot watch the client socket again; retrying");
		d->d_accept_paused = true;
		qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH,
				  ACCEPT_PAUSE_MS * NS_PER_MS, d, accept_resume,
				  &d->d_accept_timer);
	}
}

static void accept_pause(struct dlmd *d, int err)
{
	if (limit_log_due(&d->d_accept_log_ms, &d->d_accept_nquiet)) {
		log_err("accept on client socket: %s; not accepting new clients "
			"for %u ms at a time until fds are free (%u clients; %llu "
			"more such pause%s not logged in the last minute)",
			strerror(err), ACCEPT_PAUSE_MS, dlmd_client_count(d),
			(unsigned long long)d->d_accept_nquiet,
			d->d_accept_nquiet == 1 ? "" : "s");
		d->d_accept_nquiet = 0;
	}
	qb_loop_poll_del(d->d_loop, d->d_listen_fd);
	d->d_accept_paused = true;
	qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, ACCEPT_PAUSE_MS * NS_PER_MS, d,
			  accept_resume, &d->d_accept_timer);
}

struct dlmd_client *dlmd_client_new(struct dlmd *d, int fd, pid_t pid,
				    uid_t uid, gid_t gid)
{
	struct dlmd_client *c = calloc(1, sizeof(*c));
	uint32_t serial;

	if (!c)
		return NULL;
	/* Serials are never 0 nor the map's tombstone, nor in use. */
	for (unsigned int tries = 0;; tries++) {
		serial = ++d->d_next_serial;
		if (serial != 0 && serial != UINT32_MAX &&
		    !u32map_get(&d->d_clients, serial))
			break;
		if (tries > 16) {
			free(c);
			return NULL;
		}
	}
	c->cl_d = d;
	c->cl_fd = fd;
	c->cl_ast_fd = -1;
	c->cl_serial = serial;
	c->cl_owner = ((uint64_t)(uint32_t)pid << 32) | serial;
	c->cl_pid = pid;
	c->cl_uid = uid;
	c->cl_gid = gid;
	c->cl_astq_tail = &c->cl_astq;
	if (u32map_put(&d->d_clients, serial, c)) {
		free(c);
		return NULL;
	}
	d->d_nclients_total++;
	return c;
}

void dlmd_client_close(struct dlmd *d, struct dlmd_client *c)
{
	if (c->cl_ls && d->d_clients_closing) {
		/* dlmd stops under its clients (dlmd_client_fini): their
		 * locks stay in the engine, dropped whole with the lockspace
		 * after.  A purge here would tell the other nodes: a remote
		 * master would grant a conflicting request of theirs at once,
		 * while this client, alive and its node not fenced yet, still
		 * believes it holds its lock (test-cluster-stopgrant step 2).
		 * Its node's fencing ends such holds, then they recover. */
		log_debug("client pid %d serial %u closed at the stop: its "
			  "locks are left to recovery", (int)c->cl_pid,
			  c->cl_serial);
		client_unbind(d, c, false);
	} else if (c->cl_ls) {
		struct dlmd_ls *dl = c->cl_ls;
		struct dlm_ls_stats before, after;
		int n;

		dlm_core_ls_stats(dl->dl_core, &before);
		n = dlm_core_purge_owner(dl->dl_core, c->cl_owner);
		dlm_core_ls_stats(dl->dl_core, &after);
		if (after.ls_orphans > before.ls_orphans)
			orphan_rec_add(dl, c, uid_locks_of(d, c->cl_uid),
				       after.ls_orphans - before.ls_orphans);
		log_debug("client pid %d serial %u closed: %d lock%s purged",
			  (int)c->cl_pid, c->cl_serial, n, n == 1 ? "" : "s");
		client_unbind(d, c, false);
	}
	if (c->cl_counted)
		uid_conns_add(d, c->cl_uid, -1);
	if (c->cl_paused)
		d->d_npaused--;
	if (c->cl_ring_job && d->d_loop)
		qb_loop_timer_del(d->d_loop, c->cl_ring_timer);
	watch_unlink(d, c);
	stash_free(c);
	if (c->cl_ring) {
		munmap(c->cl_ring, DLMP_RING_BYTES);
		uid_rings_add(d, c->cl_uid, -1);
	}
	u32map_del(&d->d_clients, c->cl_serial);
	if (d->d_loop)
		qb_loop_poll_del(d->d_loop, c->cl_fd);
	/* what waits in its queue may hold fds ("Passed fds") */
	sock_close(c->cl_uid, c->cl_fd);
	free(c);
	dlmd_flush(d);
}

static void read_peer_creds(int fd, struct dlmd_client *c)
{
	gid_t groups[MAX_PEER_GROUPS];
	socklen_t glen = sizeof(groups);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
		c->cl_ngroups = glen / sizeof(gid_t);
		memcpy(c->cl_groups, groups, c->cl_ngroups * sizeof(gid_t));
	}
}

/* The fd passed with a packet (SCM_RIGHTS), or -1; any more are closed
 * (only one is ever expected; "Passed fds"). */
static int passed_fd(struct msghdr *mh, uid_t uid)
{
	int passed = -1;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (passed < 0)
				passed = f;
			else
				passed_drop(uid, f);
		}
	}
	return passed;
}

/*
 * Packets to read at once from a connection of uid's: each may carry
 * DLMD_SCM_MAX_FD fds, all in dlmd's table once read, so a user whose
 * fds wait for its reaper gets as many as keep them under REAP_UID_HELD
 * (one at least: then DLMD_SCM_MAX_FD past it at most), and no more is
 * read once it is there ("Passed fds").  Root's, CLIENT_BATCH.
 */
static int client_batch(uid_t uid)
{
	uint32_t pending, n;

	if (!uid_limited(uid))
		return CLIENT_BATCH;
	pending = reap_pending(uid);
	n = pending < REAP_UID_HELD ?
		(REAP_UID_HELD - pending) / DLMD_SCM_MAX_FD : 0;
	return n < 1 ? 1 : n > CLIENT_BATCH ? CLIENT_BATCH : (int)n;
}

/*
 * Up to CLIENT_BATCH packets per recvmmsg, so that a pipelining client's
 * requests cost one read, and a lone request costs no second read that
 * finds the socket empty (fewer packets than asked for: it is empty).
 */
static int client_readable(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_client *c = data;
	struct dlmd *d = c->cl_d;
	static unsigned char bufs[CLIENT_BATCH][DLMP_MAX_MSG + 1];
	static union {
		char		buf[CMSG_SPACE(sizeof(int) * DLMD_SCM_MAX_FD)];
		struct cmsghdr	align;
	} cbufs[CLIENT_BATCH];
	struct mmsghdr mm[CLIENT_BATCH];
	struct iovec iov[CLIENT_BATCH];
	uint64_t ring0 = d->d_nring_requests;

	if (c->cl_broken || reap_over(c->cl_uid, 2)) {
		/* broken: not one more read, what waits in its queue goes
		 * with its socket (sock_close); its user's fds wait for its
		 * reaper: likewise ("Passed fds") */
		client_break(d, c, "its user passed more fds than dlmd could "
			     "close yet (\"Passed fds\")");
		ast_batch.ab_n = 0;
		dlmd_client_close(d, c);
		return 0;
	}
	out_batch.ob_c = c;
	out_batch.ob_n = 0;
	if (c->cl_stash)
		stash_run(d, c);	/* resumed: what it sent before */
	/* paused (backpressure) by what it took: no more (the packets one
	 * recvmmsg read are handled; the rest wait in the socket) */
	for (int call = 0, got = 0; got < CLIENT_CALLS * CLIENT_BATCH &&
	     !c->cl_paused; call++) {
		int vlen = client_batch(c->cl_uid), n;

		for (int i = 0; i < vlen; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_control = cbufs[i].buf;
			mm[i].msg_hdr.msg_controllen = sizeof(cbufs[i].buf);
		}
		n = recvmmsg(fd, mm, (unsigned int)vlen,
			     MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (n <= 0) {
			out_batch.ob_c = NULL;
			ast_batch.ab_n = 0;
			dlmd_client_close(d, c);
			return 0;
		}
		for (int i = 0; i < n; i++) {
			struct msghdr *mh = &mm[i].msg_hdr;
			int passed = passed_fd(mh, c->cl_uid);
			size_t len = mm[i].msg_len;

			if (len == 0) {
				/* end of file (a zero-length packet is none
				 * of ours either) */
				passed_drop(c->cl_uid, passed);
				for (int k = i + 1; k < n; k++)
					passed_drop(c->cl_uid, passed_fd(&mm[k].msg_hdr,
									 c->cl_uid));
				out_batch.ob_c = NULL;
				ast_batch.ab_n = 0;
				dlmd_client_close(d, c);
				return 0;
			}
			if (c->cl_broken) {
				/* read with it (counted in client_batch) */
				passed_drop(c->cl_uid, passed);
				continue;
			}
			if (!(mh->msg_flags & MSG_TRUNC) &&
			    (mh->msg_flags & MSG_CTRUNC) && passed < 0)
				/* its fd, dropped: we have none free */
				passed = DLMD_FD_LOST;
			else if (mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC))
				/* Too long for any request: decoding fails on
				 * length. */
				len = sizeof(bufs[i]);
			dlmd_client_socket_request(d, c, bufs[i], len, passed);
		}
		got += n;
		if (n < vlen)
			break;
		if (c->cl_broken || reap_over(c->cl_uid, 2)) {
			/* not one more read: the rest stays in its queue,
			 * for sock_close ("Passed fds") */
			client_break(d, c, "its user passed more fds than "
				     "dlmd could close yet (\"Passed fds\")");
			out_batch.ob_c = NULL;
			ast_batch.ab_n = 0;
			dlmd_client_close(d, c);
			return 0;
		}
		/* the ring taken before its packets counts against this
		 * wake-up too: the rest after the others (the poll is
		 * level-triggered) */
		if (d->d_nring_requests - ring0 >= DLMP_RING_SLOTS)
			break;
	}
	if (c->cl_ring && !c->cl_stash)
		ring_drain(d, c);
	ast_batch_flush(d, c);
	out_batch_flush(d);
	out_batch.ob_c = NULL;
	return 0;
}

static int listen_readable(int32_t fd, int32_t revents, void *data)
{
	struct dlmd *d = data;

	for (int i = 0; i < CLIENT_BATCH; i++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct dlmd_client *c;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection
			 * stays queued; wait instead of spinning. */
			accept_pause(d, errno);
			return 0;
		}
		if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
			log_warn("SO_PEERCRED: %s", strerror(errno));
			/* its queue may hold fds ("Passed fds"): no user */
			sock_close((uid_t)-1, cfd);
			continue;
		}
		if (uid_limited(cr.uid) &&
		    uid_conns(d, cr.uid) >= d->d_cfg.cf_max_clients_per_uid) {
			refuse_conn(d, cfd, &cr, -EUSERS);
			continue;
		}
		if (reap_over(cr.uid, 1)) {
			/* its passed fds wait for its reaper ("Passed fds") */
			refuse_conn(d, cfd, &cr, -EMFILE);
			continue;
		}
		if (uid_limited(cr.uid) && uid_conns_add(d, cr.uid, 1)) {
			refuse_conn(d, cfd, &cr, -ENOMEM);
			continue;
		}
		c = dlmd_client_new(d, cfd, cr.pid, cr.uid, cr.gid);
		if (!c) {
			log_err("out of memory for a new client");
			if (uid_limited(cr.uid))
				uid_conns_add(d, cr.uid, -1);
			refuse_conn(d, cfd, &cr, -ENOMEM);
			continue;
		}
		c->cl_counted = uid_limited(cr.uid);
		read_peer_creds(cfd, c);
		{
			/* room for DLMP_MAX_HELD answers released at once (the
			 * kernel caps it at net.core.wmem_max) */
			int sndbuf = CLIENT_SNDBUF;

			if (setsockopt(cfd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				       sizeof(sndbuf)) < 0)
				log_debug("SO_SNDBUF: %s", strerror(errno));
		}
		/* HIGH, as membership: libqb runs the lower levels only in
		 * every second or third pass of its loop, so a request
		 * polled at MED waited for one more (empty) epoll_wait half
		 * of the time (issue 14: 1.5 epoll_wait per request, now 1;
		 * the peer connections are at HIGH too, comms.c) */
		if (qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cfd, POLLIN, c,
				     client_readable) != 0) {
			log_err("cannot watch client fd %d", cfd);
			if (c->cl_counted)
				uid_conns_add(d, cr.uid, -1);
			u32map_del(&d->d_clients, c->cl_serial);
			sock_close(cr.uid, cfd);
			free(c);
			continue;
		}
		log_debug("client pid %d uid %d connected (serial %u)", (int)cr.pid,
			  (int)cr.uid, c->cl_serial);
	}
	return 0;
}

/*
 * Bind fd to the unix socket path sa names, the socket file made with
 * 'mode' by the umask of the call (then restored; the daemon is one
 * thread).  A socket already at the path is stale (its lock is ours,
 * main.c) and goes first; any other file stays: -EEXIST.  Nothing is done to the path once it exists: whoever may write
 * its directory could swap the new socket for a symlink before a chmod or
 * chown of the path, which would follow it, as root, to any file
 * (tests/test-socket-paths.sh).  -errno.
 */
int dlmd_bind_unix(int fd, const struct sockaddr *sa, socklen_t len, mode_t mode)
{
	const char *path = ((const struct sockaddr_un *)sa)->sun_path;
	mode_t old_umask;
	struct stat st;
	int rv;

	/* What is at the path: a socket a crash left (ours: the lock on the
	 * path is held, main.c), removed; anything else is not ours to
	 * remove (a socket_path = /etc/dlm/dlm.conf typo deleted the
	 * config file, as root) */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("%s exists and is not a socket: not removing it "
				"(check dlm.conf)", path);
			return -EEXIST;
		}
		unlink(path);
	}
	old_umask = umask(~mode & 0777);
	rv = bind(fd, sa, len);

	rv = rv < 0 ? -errno : 0;
	umask(old_umask);
	return rv;
}

int dlmd_client_listen(struct dlmd *d)
{
	const struct dlmd_config *cf = &d->d_cfg;
	struct sockaddr_un sa;
	int fd, rv;

	reap_signal_setup(d->d_loop);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cf->cf_socket_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Created with dlm.conf's mode, owned by us: until the owner and
	 * group are set, only our own user and group may connect.  They are
	 * set on the path without following a symlink (dlmd_bind_unix: what
	 * is at the path may no longer be our socket). */
	rv = dlmd_bind_unix(fd, (struct sockaddr *)&sa, sizeof(sa),
			    cf->cf_socket_mode);
	if (!rv && fchownat(AT_FDCWD, cf->cf_socket_path, cf->cf_socket_uid,
			    cf->cf_socket_gid, AT_SYMLINK_NOFOLLOW) < 0)
		rv = -errno;
	if (!rv && listen(fd, LISTEN_BACKLOG) < 0)
		rv = -errno;
	if (rv < 0) {
		log_err("client socket %s: %s", cf->cf_socket_path, strerror(-rv));
		close(fd);
		return rv;
	}
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, fd, POLLIN, d, listen_readable);
	if (rv) {
		close(fd);
		return rv;
	}
	d->d_listen_fd = fd;
	log_info("listening for clients on %s (mode 0%o)", cf->cf_socket_path,
		 (unsigned)cf->cf_socket_mode);
	return 0;
}

struct close_all {
	struct dlmd_client	*ca_list[64];
	unsigned int		ca_n;
};

static void collect_client(void *arg, uint32_t key, void *val)
{
	struct close_all *ca = arg;

	if (ca->ca_n < sizeof(ca->ca_list) / sizeof(ca->ca_list[0]))
		ca->ca_list[ca->ca_n++] = val;
}

/* A client bound to a lockspace with lock records (held, waiting, or
 * in conversion) at the stop: see dlmd_client_fini. */
static void note_unclean(void *arg, uint32_t key, void *val)
{
	struct dlmd *d = arg;
	const struct dlmd_client *c = val;

	(void)key;
	if (c->cl_ls && u32idx_count(&c->cl_locks) && !d->d_stop_unclean) {
		d->d_stop_unclean = true;
		log_err("stopping while client pid %d (and maybe others) holds "
			"or waits for locks in lockspace %s: no lockspace is "
			"left cleanly, the other nodes fence this one before "
			"they recover its locks", (int)c->cl_pid,
			c->cl_ls->dl_name);
	}
}

void dlmd_client_fini(struct dlmd *d)
{
	struct close_all ca;

	/* dlmd is stopping: SIGTERM (refused while a lockspace is in use:
	 * no client is bound to one then), or it lost corosync, or its
	 * engine cannot go on, under clients that hold and wait for locks.
	 * Closing those purged their locks, and a purge grants what waited
	 * behind them: a client told of such a grant held it after this
	 * daemon was gone and, once the other nodes had fenced us and
	 * recovered the lock for one of theirs, beside it: two holders
	 * (test-cluster-linkcut step 2 saw a PW granted at node 3's stop
	 * overlap the PR node 1 then took).  And a purge of a lock whose
	 * master is another node told that node at once, which granted a
	 * request of its own while our client, alive and not fenced,
	 * still held the lock.  So from here a closed client's locks are
	 * left to recovery (dlmd_client_close), and no answer and no AST
	 * goes to any client: each sees its connection end (ENOTCONN);
	 * test-cluster-stopgrant. */
	d->d_clients_closing = true;
	/* Such a client may go on believing it holds its locks: no other
	 * node may take them before ours is fenced.  Left cleanly (dlmd
	 * stopping for an engine that cannot go on, corosync still up),
	 * the others recovered them at once, fencing nobody: a request of
	 * node 1 was granted beside the EX a live client of ours held
	 * (test-cluster-stopgrant step 3).  So our lockspaces and the
	 * daemon group are left as by a dlmd that died (cluster.c). */
	u32map_each(&d->d_clients, note_unclean, d);
	/* Orphaned persistent locks stand for an owner that may come back
	 * for them (SIGTERM is refused while there are any): left cleanly,
	 * the others would recover them away at once, unfenced. */
	for (struct dlmd_ls *dl = d->d_lockspaces;
	     dl && !d->d_stop_unclean; dl = dl->dl_next) {
		struct dlm_ls_stats st;

		dlm_core_ls_stats(dl->dl_core, &st);
		if (st.ls_orphans) {
			d->d_stop_unclean = true;
			log_err("stopping while lockspace %s holds %llu orphaned "
				"locks: no lockspace is left cleanly, the other "
				"nodes fence this one before they recover them",
				dl->dl_name, (unsigned long long)st.ls_orphans);
		}
	}
	/* Close in batches: the map may not change while it is walked. */
	do {
		ca.ca_n = 0;
		u32map_each(&d->d_clients, collect_client, &ca);
		for (unsigned int i = 0; i < ca.ca_n; i++)
			dlmd_client_close(d, ca.ca_list[i]);
	} while (ca.ca_n);
	u32map_free(&d->d_clients);
	u32map_free(&d->d_uid_conns);
	u32map_each(&d->d_uid_astbufs, free_val, NULL);
	u32map_free(&d->d_uid_astbufs);
	u32map_free(&d->d_uid_rings);
	/* lockspaces released after this find their orphans uncounted */
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next)
		u32map_each(&dl->dl_orphan_owners, orphan_rec_uncount, NULL);
	u32map_each(&d->d_uid_locks, free_val, NULL);
	u32map_free(&d->d_uid_locks);
	slab_fini(&d->d_lkcbs);
	if (d->d_accept_paused && d->d_loop)
		qb_loop_timer_del(d->d_loop, d->d_accept_timer);
	d->d_accept_paused = false;
	if (d->d_astq_timer_armed && d->d_loop)
		qb_loop_timer_del(d->d_loop, d->d_astq_timer);
	d->d_astq_timer_armed = false;
	if (reaper.rp_timer_armed && reaper.rp_loop)
		qb_loop_timer_del(reaper.rp_loop, reaper.rp_timer);
	reaper.rp_timer_armed = false;
	reaper.rp_loop = NULL;
	if (d->d_listen_fd >= 0) {
		if (d->d_loop)
			qb_loop_poll_del(d->d_loop, d->d_listen_fd);
		close(d->d_listen_fd);
		unlink(d->d_cfg.cf_socket_path);
		d->d_listen_fd = -1;
	}
}

unsigned int dlmd_client_nheld(const struct dlmd_client *c)
{
	return c->cl_nheld;
}

struct paused_each {
	void	(*pe_fn)(void *arg, const struct dlmd_paused_client *pc);
	void	*pe_arg;
};

static void each_paused(void *arg, uint32_t key, void *val)
{
	struct paused_each *pe = arg;
	const struct dlmd_client *c = val;
	struct dlmd_paused_client pc;

	(void)key;
	if (!c->cl_paused)
		return;
	pc.pc_pid = c->cl_pid;
	pc.pc_uid = c->cl_uid;
	pc.pc_serial = c->cl_serial;
	pc.pc_queued_asts = c->cl_astq_len;
	pe->pe_fn(pe->pe_arg, &pc);
}

void dlmd_client_each_paused(struct dlmd *d,
			     void (*fn)(void *arg,
					const struct dlmd_paused_client *pc),
			     void *arg)
{
	struct paused_each pe = { fn, arg };

	u32map_each(&d->d_clients, each_paused, &pe);
}

unsigned int dlmd_client_count(const struct dlmd *d)
{
	return u32map_count(&d->d_clients);
}
