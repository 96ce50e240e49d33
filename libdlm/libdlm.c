/*
 * libdlm/libdlm.c - the client library: libdlm.so.3 and, compiled
 * without _REENTRANT, libdlm_lt.so.3.
 *
 * A lockspace handle is two sockets to dlmd (protocol: dlmd_proto.h):
 *
 *   lh_fd      the request connection: requests and their answers;
 *   lh_ast_fd  our end of the AST socketpair whose other end was passed
 *              to the daemon with LS_OPEN; dlm_ls_get_fd() returns it and
 *              dlm_dispatch() reads it.
 *
 * The daemon keeps the AST addresses, arguments and lksb address a lock
 * request gives and returns them in each AST packet, so dispatching needs
 * no table here: the packet says which lksb to fill and which function to
 * call with which argument (as the kernel device does).
 *
 * Requests in flight.  Threads sharing a handle do not take turns: each
 * sends its request (one packet, written whole by the kernel, so sending
 * needs no lock) with a fresh reqid and waits for the answer with that
 * reqid (struct waiter, on its stack, in lh_waiters).  One waiting thread
 * at a time reads lh_fd (lh_reading: leader/follower); it hands each
 * answer to the waiter it belongs to (condition variable per waiter) and
 * keeps reading until its own came, then wakes a thread still waiting to
 * take over.  A thread alone does one send and one recv, with no
 * wake-up of anyone but dlmd (and the reader looks for its answer a
 * while before it sleeps in recv: "Waiting for an answer" below).  At most DLMP_MAX_HELD requests are in flight per
 * handle (more callers wait for room), which is what dlmd holds per
 * connection.  If the connection fails, every waiter gets the error.
 * dlm_ls_lock (async) waits for its REPLY only, while other threads'
 * requests proceed.
 *
 * Synchronous calls (the _wait forms, lock_resource) ask dlmd for the
 * completion in the answer (DLMP_LK_SYNC): the daemon sends no AST for
 * it, and the caller fills its lksb from the COMP_REPLY itself (one
 * packet each way; no AST thread, no hand-over).  A new lock takes its id
 * from the handle's block when it can, as an async one does
 * (sync_send_own_id): sb_lkid is set before it is sent, so that another
 * thread can cancel the waiting call (the cancel's completion, ECANCEL,
 * then ends the wait), and dlmd sends nothing before the completion.
 * Without a block, a new lock that has to wait is first answered with its
 * lock id (DLMP_REPLY_HELD), which goes to sb_lkid at once.  Blocking ASTs
 * of such locks still come through the AST socket and dlm_dispatch/the
 * AST thread.  Orphan adoption (LKF_ORPHAN) is answered by its REPLY
 * alone, as before.  One case keeps the old way: a _wait call made inside
 * an AST routine (in_ast: run by dlm_dispatch or the AST thread) submits
 * an ordinary request with a private completion AST (sync_ast) and
 * dispatches the AST socket inline until it ran, so that blocking ASTs
 * its wait may depend on still run (the AST thread is busy in it).
 * In libdlm_lt there are no threads: the caller sends and reads its own
 * answer.
 *
 * Purging one's own locks (dlm_ls_purge with the caller's pid) drops the
 * ASTs of those locks that were not read yet, as the kernel frees a
 * purged process's queued callbacks.  dlmd cannot take back what it
 * already wrote to the AST socket, so it stamps each AST with the
 * connection's purge epoch (dlmd_proto.h) and the PURGE reply gives the
 * new one; dispatching drops an AST of an older epoch.  A synchronous
 * call waiting on a purged lock is answered by dlmd with a cancel
 * (ECANCEL; an unlock_wait: EUNLOCK).  dlm_dispatch()
 * is given only an fd: a list of the open handles (open_handles) finds
 * the fd's epoch.
 *
 * Async requests in flight.  Async locks on ids of our own (dlmd_proto.h
 * "Lock ids chosen by the client") get no REPLY: their outcome is their
 * completion AST.  The other async requests (conversions, locks under a
 * parent or without an id block, unlocks and cancels) get a REPLY, and
 * those dlmd accepted then their completion AST.  When the lockspace is
 * released under the handle (dlmctl leave, a forced release from another
 * handle, dlmd stopping), dlmd writes each request still waiting a
 * completion with ENOTCONN and closes the AST socket (plugin/client.c
 * ast_lost); but a client that stopped reading has a full socket, and
 * what dlmd queued behind it goes with the socket.  An own-id LOCK that
 * reaches dlmd after the release gets a completion from nobody.  So libdlm
 * remembers every lock with an async request in flight (struct pending,
 * in lh_pend by lock id): an own-id LOCK from before it is sent, any
 * other request when its REPLY says dlmd took it (a record is set aside
 * before it is sent: pend_begin), until its completion AST is read; a
 * cancel adds nothing, its completion being the cancelled request's.
 * When the AST socket reaches its end (no AST can come any more),
 * dispatching completes every lock still waiting with ENOTCONN, through
 * run_ast like an AST of dlmd's, and later async requests fail at once.
 * A completion that did come, dlmd's ENOTCONN too, is read first (the
 * socket is read in order), so none completes twice.  Another thread may
 * read a completion before the requesting thread took the REPLY: while
 * REPLYs are awaited (lh_unanswered) a completion of a lock that waits
 * for nothing is counted early (pd_early), and the REPLY then waits for
 * none; a REPLY taken after the socket ended, its completion not read,
 * fails the call with ENOTCONN, as no completion can come.  Limit: like
 * dlmd's lc_async, a lock waits for one completion at a time, so two
 * requests in flight on one lock (a conversion and a forced unlock from
 * another thread) are completed once if the socket ends.
 *
 * A record stays, idle, until its lock is unlocked, refused or gone, so
 * that an unlock's completion runs the lock's routine and status block
 * when the unlock gives none, as dlmd's does.  An idle record of an own
 * id (pd_keep) lets an async unlock be sent without waiting
 * (DLMP_UL_NOREPLY, dlmd_proto.h "Unlocks without a REPLY"), its record
 * waiting again and completed with ENOTCONN like a LOCK if the socket
 * ends first; its completion AST (EUNLOCK, or a refusal) ends it.  Any
 * other request on an idle lock (a convert, a synchronous unlock) or a
 * child under it clears pd_keep, and that lock's later unlocks wait for
 * their REPLY as before; so do unlocks of locks libdlm never knew.  A
 * synchronous request's answer ends what its lock waited for, as in
 * dlmd.  A purge of our own locks forgets the idle records.  The records
 * live in a hash table that doubles as they grow, recycled through a free
 * list that keeps one for each REPLY awaited, so that a request dlmd took
 * always finds its record without allocating.
 *
 * The request ring.  Once bound, a handle gives dlmd a shared-memory
 * ring (a sealed memfd: dlmd_proto.h "The request ring"), unless
 * $DLMD_RING is "0" or dlmd says no; every request after that is
 * written into the ring (under lh_ringlock, one slot each) instead of
 * sent; ASTs still come on lh_ast_fd.  Answers (REPLY, COMP_REPLY) come
 * through the ring's answer ring (dlmd_proto.h "The answer ring";
 * $DLMD_RING_ANSWERS=0: on lh_fd as above): the thread reading answers
 * (lh_reading) takes them from shared memory, and when it finds none
 * after looking sleeps on the answer ring's tail (futex) instead of in
 * recv ("Waiting for an answer"); a child after fork() gets its answers
 * on lh_fd again (RING ANS_SOCKET, "fork() with handles open").  A
 * request costs a system call only when dlmd said it sleeps:
 * the one thread that swaps the ring's flag from 1 to 0 sends the kick;
 * if that thread's request is one whose answer it waits for (send_packet:
 * a _wait call, a conversion), the request goes on the socket instead
 * of the ring and is its own kick, as cheap as without a ring (dlmd
 * takes what the ring holds before any request it reads from the
 * socket, and the caller sends nothing more until the answer is in).
 * A request without an answer made by an AST routine does not kick at
 * once: the handle is marked (lh_kick_owed) and the kick goes out, if
 * dlmd still sleeps, after RING_KICK_BATCH such requests, when
 * dispatching returns, or before the thread waits for an AST inside a
 * _wait call (kick_flush: the handles are found in open_handles, so a
 * handle closed meanwhile is never touched).
 * A full ring makes the sender sleep on the ring's head (futex) until
 * dlmd takes some; it gives up when lh_fd shows dlmd gone.  With a ring,
 * poll_answers() reads lh_fd only after dlmd raised the ring's notice
 * word (the lockspace released under the handle): nothing else comes
 * there unasked.
 *
 * Waiting reads the AST socket.  dlmd pauses a client whose unread ASTs
 * pass its bound (plugin/client.c "Backpressure"): it takes no request
 * of it until it reads.  A thread that submits many async requests
 * without dispatching (lvmlockd: one thread, a batch, then dispatching)
 * and then waits for dlmd (a REPLY, room in the ring or the request
 * socket, a synchronous completion) would wait for ever: dlmd waits for
 * it to read, it for dlmd.  So every such wait looks at the AST socket
 * every STASH_MS (lh_fd's SO_RCVTIMEO and SO_SNDTIMEO, the ring's futex
 * wait) and moves what it holds into the handle's own queue (lh_stash,
 * ast_stash()), which is the client's memory: dlmd's bound then counts
 * only what the client truly has not read (stopped, or busy elsewhere).
 * Nothing is run there: dispatching (dlm_dispatch, the AST thread, the
 * inline dispatch of a _wait call in_ast) runs the stash first, in
 * order, then reads the socket; every rule above holds as if the
 * stashed ASTs were still in the socket (pend_completed, purge epochs
 * and ENOTCONN at the socket's end are applied when they are run).  The
 * order: the stash is read, and the socket read when it is empty, under
 * open_handles_lock (ast_take), the same lock ast_stash reads under.
 * The socket keeps its last packets (what the last DLMP_MAX_MSG bytes
 * hold), so that it still polls readable while the stash holds ASTs:
 * a program polling dlm_ls_get_fd() and the AST thread still wake up.
 * The kick sent under open_handles_lock (kick_flush) does not stash.
 *
 * Return convention at this API: 0 or -1 with errno.  Internally every
 * function returns 0 or a negative errno, converted once by ret_errno().
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>

#include "libdlm/libdlm.h"
#include "libdlm/dlmd_proto.h"

#define DEFAULT_LS_NAME		"default"
#define DEFAULT_LS_MODE		0600
#define SYNC_POLL_MS		100	/* a sync reader re-checks this often */
#define DISPATCH_MAX		1024	/* ASTs run per dlm_dispatch() call */
#define DISPATCH_BATCH		32	/* ASTs read per recvmmsg */
#define PEND_MIN		256	/* lh_pend's first number of chains */
#define PEND_FREE_MAX		4096	/* lock records kept for reuse */
#define RING_ROOM_WAIT_MS	100	/* a full ring: look at the daemon
					 * this often */
#define RING_ENV		"DLMD_RING"	/* "0": no request ring */
/* "0": answers on the socket even with a request ring */
#define RING_ANS_ENV		"DLMD_RING_ANSWERS"
/* How long a thread waiting for its answer looks for it before it
 * sleeps ("Waiting for an answer" below); $DLMD_SPIN_US overrides it
 * (0: never; at most SPIN_US_MAX). */
#define SPIN_ENV		"DLMD_SPIN_US"
#define SPIN_US_DEFAULT		50
#define SPIN_US_MAX		1000000
/* A wait whose answer did not come while looking: the next 2^k - 1
 * waits (k such failures in a row, at most SPIN_BACKOFF_MAX) sleep at
 * once. */
#define SPIN_BACKOFF_MAX	8
/* A yield that gave the CPU away this long: another process runs on
 * ours (dlmd sharing it hands it back in a few us), and the answer may
 * wait for it: the thread sleeps, and its handle does not look for
 * SPIN_OFF_MIN_NS, twice as long after each such yield up to
 * SPIN_OFF_MAX_NS (back to the least after SPIN_GOOD waits answered
 * while looking). */
#define SPIN_YIELD_LONG_NS	200000ULL
#define SPIN_OFF_MIN_NS		16000000ULL
#define SPIN_OFF_MAX_NS		1024000000ULL
#define SPIN_GOOD		1024
/* Requests AST routines may put in the ring before the kick they owe is
 * sent anyway: dlmd starts on them while the routines go on. */
#define RING_KICK_BATCH		64
/* A thread waiting for dlmd looks at the AST socket this often (see
 * "Waiting reads the AST socket" above), taking at most STASH_BATCH
 * packets a call. */
#define STASH_MS		50
/* LS_OPEN answered EMFILE: dlmd had no fd free for the AST socket we
 * passed (ls_open_on); asked again every OPEN_FD_RETRY_MS, for at most
 * OPEN_FD_WAIT_MS */
#define OPEN_FD_RETRY_MS	100
#define OPEN_FD_WAIT_MS		30000
#define STASH_BATCH		32

#ifdef _REENTRANT
#define MUTEX_T			pthread_mutex_t
#define MUTEX_STATIC_INIT	PTHREAD_MUTEX_INITIALIZER
#define MUTEX_INIT(m)		pthread_mutex_init(m, NULL)
#define MUTEX_DESTROY(m)	pthread_mutex_destroy(m)
#define LOCK(m)			pthread_mutex_lock(m)
#define UNLOCK(m)		pthread_mutex_unlock(m)
#define COND_T			pthread_cond_t
#define COND_INIT(c)		pthread_cond_init(c, NULL)
#define COND_DESTROY(c)		pthread_cond_destroy(c)
#define COND_WAIT(c, m)		pthread_cond_wait(c, m)
#define COND_SIGNAL(c)		pthread_cond_signal(c)
#define THREAD_LOCAL		__thread
#else
#define MUTEX_T			int
#define MUTEX_STATIC_INIT	0
#define MUTEX_INIT(m)		(*(m) = 0)
#define MUTEX_DESTROY(m)	((void)(m))
#define LOCK(m)			((void)(m))
#define UNLOCK(m)		((void)(m))
/* One thread: nobody else reads, so nobody ever waits for a reader. */
#define COND_T			int
#define COND_INIT(c)		(*(c) = 0)
#define COND_DESTROY(c)		((void)(c))
#define COND_WAIT(c, m)		((void)(c), (void)(m))
#define COND_SIGNAL(c)		((void)(c))
#define THREAD_LOCAL
#endif

/* A request in flight on a handle: on the stack of the thread that sent
 * it, in the handle's lh_waiters until its answer came. */
struct waiter {
	struct waiter		*w_next;
	uint32_t		w_reqid;
	bool			w_done;
	bool			w_held_ok;	/* a DLMP_LK_SYNC LOCK: a REPLY
						 * with DLMP_REPLY_HELD is no
						 * answer yet */
	struct dlm_lksb		*w_lksb;	/* ... whose sb_lkid it sets */
	bool			w_socket;	/* sent on lh_fd even with a ring
						 * (an IDS: "Lock ids" below) */
	struct dlmp_msg		w_answer;	/* REPLY or COMP_REPLY */
	COND_T			w_cond;		/* its answer came, or the
						 * reader's turn is ours */
};

struct ls_handle {
	int		lh_fd;
	int		lh_ast_fd;
	uint32_t	lh_reqid;
	char		lh_name[DLM_LOCKSPACE_LEN + 1];
	MUTEX_T		lh_wlock;	/* the fields below up to lh_dead */
	struct waiter	*lh_waiters;	/* requests in flight */
	unsigned int	lh_nflight;	/* at most DLMP_MAX_HELD */
	unsigned int	lh_nslot_waits;	/* threads waiting for room */
	COND_T		lh_slot_cond;
	bool		lh_reading;	/* a thread reads lh_fd */
	int		lh_dead;	/* the connection failed: -errno */
	uint32_t	lh_ast_epoch;	/* ASTs stamped older: dropped (atomic) */
	/* Lock ids for async new locks (dlmd_proto.h "Lock ids chosen by
	 * the client"): [lh_id_next, lh_id_end) of the block at
	 * lh_id_block (0: none; each LOCK then waits for its id).  Under
	 * lh_idlock, held by an async lock from picking an id until its
	 * LOCK is sent; a synchronous one picks its id, counts it in
	 * lh_id_unsent and lets go before it waits for room to send
	 * (sync_send_own_id), so the IDS giving a block back waits for
	 * lh_id_unsent to be 0 (lh_id_cond): either way it follows every
	 * LOCK using the block. */
	MUTEX_T		lh_idlock;
	uint32_t	lh_id_block;
	uint32_t	lh_id_next;
	uint32_t	lh_id_end;
	unsigned int	lh_id_unsent;
	COND_T		lh_id_cond;
	/* Locks with async requests (see "Async requests in flight"
	 * above), by lock id: lh_pend_size chains (a power of two, 0 at
	 * first), lh_pend_count records, lh_nfree more for reuse on
	 * lh_pfree; lh_unanswered: async requests sent whose REPLY was
	 * not taken yet (each keeps a record on lh_pfree for itself);
	 * lh_gone: the AST socket ended and the waiting ones were
	 * completed.  Under lh_plock. */
	MUTEX_T		lh_plock;
	bool		lh_gone;
	unsigned int	lh_unanswered;
	struct pending	**lh_pend;
	unsigned int	lh_pend_size;
	unsigned int	lh_pend_count;
	struct pending	*lh_pfree;
	unsigned int	lh_nfree;
	struct ls_handle *lh_next;	/* in open_handles */
	/* The request ring (see "The request ring" above), or NULL; the
	 * slots we filled, under lh_ringlock. */
	struct dlmp_ring *lh_ring;
	MUTEX_T		lh_ringlock;
	uint32_t	lh_ring_tail;
	bool		lh_kick_owed;	/* a kick is owed (atomic) */
	/* the ring's answer ring is ours to read (dlmd_proto.h "The answer
	 * ring"), and the answers we took from it; only the thread reading
	 * answers (lh_reading) uses lh_ans_head.  lh_ans_detach: a child
	 * after fork() owes dlmd a RING ANS_SOCKET before its first
	 * request (atomic) */
	bool		lh_ans;
	uint32_t	lh_ans_head;
	bool		lh_ans_detach;
	/* ASTs read ahead by threads waiting for dlmd, oldest first, to be
	 * run before anything still in the AST socket; under
	 * open_handles_lock ("Waiting reads the AST socket"). */
	struct stashed	*lh_stash;
	struct stashed	**lh_stash_tail;
	unsigned int	lh_nstash;
	/* "Waiting for an answer": how long to look (ns, 0: never), waits
	 * left that sleep at once, failures in a row; only the thread
	 * reading lh_fd (lh_reading) uses them */
	uint64_t	lh_spin_ns;
	unsigned int	lh_spin_skip;
	unsigned int	lh_spin_fails;
	uint64_t	lh_spin_off_until;	/* no look before (ns) */
	uint64_t	lh_spin_off_ns;		/* the last such pause, 0 */
	unsigned int	lh_spin_good;		/* looks answered since */
#ifdef _REENTRANT
	pthread_mutex_t	lh_lock;	/* the AST thread's start */
	bool		lh_has_thread;
	pthread_t	lh_thread;
	pid_t		lh_thread_pid;	/* the process the thread runs in */
	int		lh_stop[2];	/* pipe that stops the AST thread */
#endif
};

/* An AST packet read from the AST socket by a thread that waited for
 * dlmd, not run yet (lh_stash; see "Waiting reads the AST socket"). */
struct stashed {
	struct stashed	*st_next;
	unsigned int	st_len;
	unsigned char	st_buf[DLMP_MAX_MSG];
};

/* A lock of ours that an async request was made on: waiting for the
 * completion AST of a request (pd_waiting), or idle (granted, nothing
 * in flight) until it is unlocked.  pd_keep: a lock of our own id whose
 * unlock may go without a REPLY (unlock_noreply).  pd_early counts the
 * completions read before the REPLY of their request was taken (another
 * thread dispatched them first): that REPLY then expects none.  The
 * callback values are those the completion in flight (or the next one)
 * runs with, as dlmd keeps them (struct lkcb in plugin/client.c). */
struct pending {
	struct pending	*pd_next;
	uint32_t	pd_lkid;
	uint32_t	pd_epoch;	/* lh_ast_epoch when sent */
	bool		pd_waiting;
	bool		pd_keep;
	bool		pd_granted;	/* a completion granted it once */
	bool		pd_gone;	/* an early completion ended it */
	uint16_t	pd_early;
	uint64_t	pd_lksb;
	uint64_t	pd_castaddr;
	uint64_t	pd_castparam;
};

/* A synchronous caller's completion record (argument of sync_ast). */
struct sync_wait {
	struct ls_handle	*sw_h;
	bool			sw_done;
};

/* How deep this thread is in AST routines run by dispatch_fd(): a
 * synchronous call made there dispatches inline (sync_wait). */
static THREAD_LOCAL unsigned int in_ast;
/* This thread filled rings from AST routines without a kick (see "The
 * request ring" above; each such handle has lh_kick_owed): they are
 * kicked, if dlmd still sleeps, when dispatching ends or before this
 * thread waits for an AST.  kick_owed_n: requests owed for. */
static THREAD_LOCAL bool kick_owed;
static THREAD_LOCAL unsigned int kick_owed_n;
/* The AST fd of a handle an AST routine of this thread closed: the
 * dispatch_fd() that ran it reads no more of its batch. */
static THREAD_LOCAL int ast_closed = -1;

/* Every handle whose AST fd is open, so that dlm_dispatch(fd) can find
 * the fd's purge epoch.  A process has few handles. */
static MUTEX_T open_handles_lock = MUTEX_STATIC_INIT;
static struct ls_handle *open_handles;

/*
 * Waiting reads the AST socket (see the essay above): a thread waiting
 * for dlmd reads what the AST socket holds into the handle's lh_stash,
 * all but what the last DLMP_MAX_MSG bytes hold, so that the socket still
 * shows readable to whoever polls it (the application, the AST thread,
 * read_once) while the stash holds ASTs: dispatching runs the stash
 * first.  Nothing is run here.  Out of memory it reads less: dlmd then
 * pauses us until the application dispatches, as before.
 */
static void ast_stash(struct ls_handle *h)
{
	struct stashed *st[STASH_BATCH];
	struct mmsghdr mm[STASH_BATCH];
	struct iovec iov[STASH_BATCH];
	int saved = errno;

	LOCK(&open_handles_lock);
	for (;;) {
		int inq = 0, k, n, got;

		if (h->lh_ast_fd < 0 || ioctl(h->lh_ast_fd, SIOCINQ, &inq) < 0)
			break;
		/* no packet is longer than DLMP_MAX_MSG: at least one stays */
		k = inq / DLMP_MAX_MSG - 1;
		if (k <= 0)
			break;
		if (k > STASH_BATCH)
			k = STASH_BATCH;
		for (got = 0; got < k; got++) {
			st[got] = malloc(sizeof(*st[got]));
			if (!st[got])
				break;
		}
		if (!got)
			break;
		memset(mm, 0, sizeof(mm));
		for (int i = 0; i < got; i++) {
			iov[i].iov_base = st[i]->st_buf;
			iov[i].iov_len = sizeof(st[i]->st_buf);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		do {
			n = recvmmsg(h->lh_ast_fd, mm, (unsigned int)got,
				     MSG_DONTWAIT, NULL);
		} while (n < 0 && errno == EINTR);
		for (int i = 0; i < got; i++) {
			if (i >= n) {
				free(st[i]);
				continue;
			}
			st[i]->st_len = mm[i].msg_len;
			st[i]->st_next = NULL;
			*h->lh_stash_tail = st[i];
			h->lh_stash_tail = &st[i]->st_next;
			h->lh_nstash++;
		}
		if (n < got)
			break;
	}
	UNLOCK(&open_handles_lock);
	errno = saved;
}

/* Up to 'max' AST packets to dispatch from fd (of handle h; NULL: found
 * by the fd) into mm's buffers: the stashed ones first (*stashed), else
 * those the socket holds (recvmmsg, not waiting).  Under
 * open_handles_lock, so that no packet is stashed between a look at the
 * stash and the read of the socket: the order of the ASTs holds.  The
 * number, or -1 with errno. */
static int ast_take(int fd, struct ls_handle *h, struct mmsghdr *mm,
		    unsigned int max, bool *stashed)
{
	int n = 0, err = 0;

	LOCK(&open_handles_lock);
	for (struct ls_handle *o = open_handles; !h && o; o = o->lh_next)
		if (o->lh_ast_fd == fd)
			h = o;
	*stashed = h && h->lh_stash;
	if (*stashed) {
		while ((unsigned int)n < max && h->lh_stash) {
			struct stashed *st = h->lh_stash;

			h->lh_stash = st->st_next;
			memcpy(mm[n].msg_hdr.msg_iov->iov_base, st->st_buf,
			       st->st_len);
			mm[n].msg_len = st->st_len;
			free(st);
			n++;
		}
		if (!h->lh_stash)
			h->lh_stash_tail = &h->lh_stash;
		h->lh_nstash -= (unsigned int)n;
	} else {
		n = recvmmsg(fd, mm, max, MSG_DONTWAIT, NULL);
		if (n < 0)
			err = errno;
	}
	UNLOCK(&open_handles_lock);
	if (n < 0)
		errno = err;
	return n;
}

/* What the stash still holds when the handle goes (unregistered: no
 * dispatcher finds it any more). */
static void stash_free(struct ls_handle *h)
{
	while (h->lh_stash) {
		struct stashed *st = h->lh_stash;

		h->lh_stash = st->st_next;
		free(st);
	}
	h->lh_stash_tail = &h->lh_stash;
	h->lh_nstash = 0;
}

static int ret_errno(int rv)
{
	if (rv < 0) {
		errno = -rv;
		return -1;
	}
	return rv;
}

/* $DLMD_SOCKET, and every variable below, through secure_getenv(): in a
 * program that gained privileges at exec (setuid, setgid, file
 * capabilities) the environment is its invoker's, who would otherwise
 * point it at a server of their own posing as dlmd (tests/
 * test-libdlm-secure.sh); there the defaults hold. */
static const char *socket_path(void)
{
	const char *p = secure_getenv(DLMD_SOCKET_ENV);

	return p && *p ? p : DLMD_DEFAULT_SOCKET;
}

/* A new request connection, or a negative errno. */
static int connect_daemon(void)
{
	struct sockaddr_un sa;
	const char *path = socket_path();
	int fd, rv;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		rv = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} while (rv < 0 && errno == EINTR);
	if (rv < 0) {
		rv = -errno;
		close(fd);
		return rv;
	}
	return fd;
}

/* The daemon refused the connection before any request: it sent one
 * REPLY with reqid 0 (dlmd_proto.h; -EUSERS: this user has too many
 * connections) and closed.  Returns that status, or 0 if there is none
 * to read now. */
static int refusal_status(int fd)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg rm;
	ssize_t n;

	/* The daemon closed with our request unread: the socket's pending
	 * ECONNRESET comes first, once; the refusal is queued behind it. */
	for (int tries = 0; tries < 2; tries++) {
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n >= 0 || (errno != ECONNRESET && errno != EPIPE))
			break;
	}
	if (n > 0 && dlmp_decode(buf, (size_t)n, &rm) == 0 &&
	    rm.m_hdr.h_type == DLMP_REPLY && rm.m_hdr.h_reqid == 0 &&
	    rm.m_u.reply.rp_status < 0)
		return rm.m_u.reply.rp_status;
	return 0;
}

/* Send 'msg' on fd (with 'pass_fd' as SCM_RIGHTS if >= 0) and read its
 * reply.  Returns the reply status (0 or negative errno). */
static int do_request(int fd, uint32_t *reqid, struct dlmp_msg *msg,
		      int pass_fd, struct dlmp_reply *reply)
{
	unsigned char buf[DLMP_MAX_MSG];
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh;
	struct dlmp_msg rm;
	ssize_t n;
	int len, rv;

	if (++*reqid == 0)
		++*reqid;	/* reqid 0 is the daemon's refusal */
	msg->m_hdr.h_reqid = *reqid;
	len = dlmp_encode(msg, buf, sizeof(buf));
	if (len < 0)
		return len;
	iov.iov_base = buf;
	iov.iov_len = (size_t)len;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	do {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		rv = -errno;
		if (rv == -EPIPE || rv == -ECONNRESET) {
			int why = refusal_status(fd);

			if (why)
				return why;
		}
		return rv;
	}
	if (n != len)
		return -EIO;
	/* Bounded: the daemon answers every request exactly once; on this
	 * private connection there is no other request in flight. */
	for (;;) {
		do {
			n = recv(fd, buf, sizeof(buf), 0);
		} while (n < 0 && errno == EINTR);
		if (n < 0) {
			rv = -errno;
			if (rv == -ECONNRESET) {
				int why = refusal_status(fd);

				if (why)
					return why;
			}
			return rv;
		}
		if (n == 0)
			return -ENOTCONN;
		rv = dlmp_decode(buf, (size_t)n, &rm);
		if (rv == -EPROTONOSUPPORT)
			return rv;	/* a dlmd of another version */
		if (rv)
			return -EPROTO;
		if (rm.m_hdr.h_type != DLMP_REPLY)
			return -EPROTO;
		if (rm.m_hdr.h_reqid == 0 && rm.m_u.reply.rp_status < 0)
			return rm.m_u.reply.rp_status;	/* refused */
		if (rm.m_hdr.h_reqid == *reqid)
			break;
	}
	*reply = rm.m_u.reply;
	return reply->rp_status;
}

/* w's answer is in (or it gave up): off the list, its slot free for a
 * thread waiting for one.  Under lh_wlock. */
static void waiter_done(struct ls_handle *h, struct waiter *w)
{
	for (struct waiter **pp = &h->lh_waiters; *pp; pp = &(*pp)->w_next) {
		if (*pp == w) {
			*pp = w->w_next;
			break;
		}
	}
	h->lh_nflight--;
	if (h->lh_nslot_waits)
		COND_SIGNAL(&h->lh_slot_cond);
}

/*
 * Requests on a handle's connection (see "Requests in flight" above).
 * req_send() gives the request a reqid, enters 'w' in lh_waiters and
 * sends it; req_wait() returns once w_answer holds its answer.  0 or a
 * negative errno (the connection's failure: then no answer comes).
 */
/* Encode and send one request on the socket.  One packet is one
 * request, written whole: threads need no lock to send.  A full socket
 * (dlmd paused us: "Waiting reads the AST socket") makes the send time
 * out every STASH_MS (SO_SNDTIMEO); the AST socket is read meanwhile,
 * unless 'stash' is false (a kick sent under open_handles_lock). */
static int send_socket_on(struct ls_handle *h, struct dlmp_msg *msg, bool stash)
{
	unsigned char buf[DLMP_MAX_MSG];
	ssize_t n;
	int len;

	if (__atomic_load_n(&h->lh_ans_detach, __ATOMIC_ACQUIRE) &&
	    __atomic_exchange_n(&h->lh_ans_detach, false, __ATOMIC_ACQ_REL)) {
		/* a child after fork(): the parent reads the answer ring,
		 * we read the socket ("fork() with handles open") */
		struct dlmp_msg det;

		memset(&det, 0, sizeof(det));
		det.m_hdr.h_type = DLMP_RING;
		det.m_hdr.h_reqid = 0xffffffffu;	/* no answer */
		det.m_u.pair.pr_a = DLMP_RING_ANS_SOCKET;
		len = dlmp_encode(&det, buf, sizeof(buf));
		if (len < 0 || send(h->lh_fd, buf, (size_t)len, MSG_NOSIGNAL) != len)
			return -ENOTCONN;
	}
	len = dlmp_encode(msg, buf, sizeof(buf));
	if (len < 0)
		return len;
	for (;;) {
		n = send(h->lh_fd, buf, (size_t)len, MSG_NOSIGNAL);
		if (n >= 0 || errno == EINTR) {
			if (n >= 0)
				break;
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		if (stash)
			ast_stash(h);
	}
	if (n == len)
		return 0;
	/* dlmd closed the connection (it stopped, or cut us): ENOTCONN, as
	 * when a read finds the end (dlm_lock(3): "the daemon went away");
	 * the _wait calls said EPIPE */
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		return -ENOTCONN;
	return n < 0 ? -errno : -EIO;
}

static int send_socket(struct ls_handle *h, struct dlmp_msg *msg)
{
	return send_socket_on(h, msg, true);
}

/* Kick dlmd: it said it sleeps (rg_sleeping), and this thread is the
 * one that took the flag.  The kick gets no answer. */
static int ring_kick(struct ls_handle *h)
{
	struct dlmp_msg kick;

	memset(&kick, 0, sizeof(kick));
	kick.m_hdr.h_type = DLMP_RING;
	kick.m_u.pair.pr_a = DLMP_RING_KICK;
	LOCK(&h->lh_wlock);
	if (++h->lh_reqid == 0)
		++h->lh_reqid;
	kick.m_hdr.h_reqid = h->lh_reqid;
	UNLOCK(&h->lh_wlock);
	return send_socket_on(h, &kick, false);
}

/* The ring is full (dlmd has not taken slot 'head' yet): sleep until it
 * takes some, or a while (lh_ringlock held: other senders would find it
 * full too).  0, or a negative errno when dlmd is gone. */
static int ring_wait_room(struct ls_handle *h, uint32_t head)
{
	struct dlmp_ring *r = h->lh_ring;
	struct timespec ts = { 0, RING_ROOM_WAIT_MS * 1000000L };
	struct pollfd pfd = { .fd = h->lh_fd, .events = 0 };

	__atomic_store_n(&r->rg_waiting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->rg_head, __ATOMIC_SEQ_CST) != head)
		return 0;
	/* it has all our slots to take: make sure it is awake */
	if (__atomic_load_n(&r->rg_sleeping, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&r->rg_sleeping, 0, __ATOMIC_SEQ_CST)) {
		int rv = ring_kick(h);

		if (rv)
			return rv;
	}
	syscall(SYS_futex, &r->rg_head, FUTEX_WAIT, head, &ts, NULL, 0);
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)))
		return -ENOTCONN;
	/* dlmd may have paused us for ASTs nobody reads while we wait */
	if (__atomic_load_n(&r->rg_head, __ATOMIC_SEQ_CST) == head)
		ast_stash(h);
	return 0;
}

/* The kicks owed (kick_owed), to the rings whose dlmd still sleeps.
 * The handles are found in open_handles, under its lock, so that one
 * another thread closed meanwhile is not touched.  A failed kick is not
 * reported: the connection is gone, and what was in the ring gets its
 * completion from the AST socket's end. */
static void kick_flush(void)
{
	if (!kick_owed)
		return;
	kick_owed = false;
	kick_owed_n = 0;
	LOCK(&open_handles_lock);
	for (struct ls_handle *h = open_handles; h; h = h->lh_next) {
		struct dlmp_ring *r = h->lh_ring;

		if (!r || !__atomic_exchange_n(&h->lh_kick_owed, false,
					       __ATOMIC_SEQ_CST))
			continue;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&r->rg_sleeping, __ATOMIC_SEQ_CST) &&
		    __atomic_exchange_n(&r->rg_sleeping, 0, __ATOMIC_SEQ_CST))
			(void)ring_kick(h);
	}
	UNLOCK(&open_handles_lock);
}

/* Put one request into the ring (dlmd_proto.h "The request ring"), and
 * kick dlmd only if it said it sleeps.  'defer': a request without an
 * answer; made by an AST routine, its kick waits until dispatching ends
 * (kick_owed), so that the requests a batch of ASTs makes cost one. */
static int ring_send(struct ls_handle *h, struct dlmp_msg *msg, bool defer)
{
	struct dlmp_ring *r = h->lh_ring;
	unsigned char *slot;
	uint32_t len32;
	int len;

	LOCK(&h->lh_ringlock);
	for (;;) {
		uint32_t head = __atomic_load_n(&r->rg_head, __ATOMIC_ACQUIRE);
		int rv;

		if (h->lh_ring_tail - head < DLMP_RING_SLOTS)
			break;
		rv = ring_wait_room(h, head);
		if (rv) {
			UNLOCK(&h->lh_ringlock);
			return rv;
		}
	}
	slot = r->rg_slots[h->lh_ring_tail & (DLMP_RING_SLOTS - 1)];
	len = dlmp_encode(msg, slot + 8, DLMP_MAX_MSG);
	if (len < 0) {
		UNLOCK(&h->lh_ringlock);
		return len;
	}
	len32 = (uint32_t)len;
	memcpy(slot, &len32, sizeof(len32));
	memset(slot + 4, 0, 4);
	h->lh_ring_tail++;
	__atomic_store_n(&r->rg_tail, h->lh_ring_tail, __ATOMIC_SEQ_CST);
	UNLOCK(&h->lh_ringlock);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&r->rg_sleeping, __ATOMIC_SEQ_CST))
		return 0;
	if (defer && in_ast) {
		__atomic_store_n(&h->lh_kick_owed, true, __ATOMIC_SEQ_CST);
		kick_owed = true;
		if (++kick_owed_n >= RING_KICK_BATCH)
			kick_flush();
		return 0;
	}
	if (__atomic_exchange_n(&r->rg_sleeping, 0, __ATOMIC_SEQ_CST))
		return ring_kick(h);
	return 0;
}

/* One request whose answer the caller waits for: through the ring if
 * the handle has one, unless dlmd said it sleeps and this thread takes
 * the flag: then the request itself goes on the socket, its own kick
 * (one send instead of a slot and a kick; dlmd takes everything in the
 * ring before it handles a request read from the socket, so the order
 * of the requests holds).  That also serves a kick owed by this
 * thread's AST routines for the handle. */
static int send_packet(struct ls_handle *h, struct dlmp_msg *msg)
{
	struct dlmp_ring *r = h->lh_ring;

	if (!r)
		return send_socket(h, msg);
	if (__atomic_load_n(&r->rg_sleeping, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&r->rg_sleeping, 0, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&h->lh_kick_owed, false, __ATOMIC_SEQ_CST);
		return send_socket(h, msg);
	}
	return ring_send(h, msg, false);
}

static void handle_dead(struct ls_handle *h, int err);

static int req_send(struct ls_handle *h, struct dlmp_msg *msg, struct waiter *w)
{
	int rv;

	w->w_done = false;
	COND_INIT(&w->w_cond);
	LOCK(&h->lh_wlock);
	while (h->lh_nflight >= DLMP_MAX_HELD && !h->lh_dead) {
		h->lh_nslot_waits++;
		COND_WAIT(&h->lh_slot_cond, &h->lh_wlock);
		h->lh_nslot_waits--;
	}
	if (h->lh_dead) {
		rv = h->lh_dead;
		UNLOCK(&h->lh_wlock);
		COND_DESTROY(&w->w_cond);
		return rv;
	}
	if (++h->lh_reqid == 0)
		++h->lh_reqid;	/* reqid 0 is the daemon's refusal */
	w->w_reqid = h->lh_reqid;
	w->w_next = h->lh_waiters;
	h->lh_waiters = w;
	h->lh_nflight++;
	UNLOCK(&h->lh_wlock);

	msg->m_hdr.h_reqid = w->w_reqid;
	rv = w->w_socket ? send_socket(h, msg) : send_packet(h, msg);
	if (!rv)
		return 0;
	LOCK(&h->lh_wlock);
	waiter_done(h, w);
	if (rv == -ENOTCONN)	/* the connection is gone: so is the handle */
		handle_dead(h, rv);
	UNLOCK(&h->lh_wlock);
	COND_DESTROY(&w->w_cond);
	return rv;
}

/* The connection failed: every request in flight fails with 'err'. */
static void handle_dead(struct ls_handle *h, int err)
{
	if (!h->lh_dead)
		h->lh_dead = err;
	for (struct waiter *w = h->lh_waiters; w; w = w->w_next)
		COND_SIGNAL(&w->w_cond);
	if (h->lh_nslot_waits) {
#ifdef _REENTRANT
		pthread_cond_broadcast(&h->lh_slot_cond);
#endif
	}
}

/* Hand one packet read from lh_fd to the request it answers (lh_wlock
 * held). */
static void take_answer(struct ls_handle *h, const unsigned char *buf, ssize_t n,
			int err)
{
	struct dlmp_msg m;
	struct waiter *w;
	int rv;

	if (n < 0) {
		if (err == -ECONNRESET) {
			int why = refusal_status(h->lh_fd);

			if (why)
				err = why;
		}
		handle_dead(h, err);
		return;
	}
	if (n == 0) {
		handle_dead(h, -ENOTCONN);
		return;
	}
	rv = dlmp_decode(buf, (size_t)n, &m);
	if (rv) {
		/* another version's dlmd, or garbage: nothing it sends can
		 * be trusted to answer the right request */
		handle_dead(h, rv == -EPROTONOSUPPORT ? rv : -EPROTO);
		return;
	}
	if (m.m_hdr.h_type == DLMP_REPLY && m.m_hdr.h_reqid == 0 &&
	    m.m_u.reply.rp_status < 0) {
		handle_dead(h, m.m_u.reply.rp_status);	/* refused */
		return;
	}
	if (m.m_hdr.h_type != DLMP_REPLY && m.m_hdr.h_type != DLMP_COMP_REPLY) {
		handle_dead(h, -EPROTO);
		return;
	}
	for (w = h->lh_waiters; w; w = w->w_next)
		if (w->w_reqid == m.m_hdr.h_reqid && !w->w_done)
			break;
	if (!w)
		return;		/* nobody asked: not ours to act on */
	if (w->w_held_ok && m.m_hdr.h_type == DLMP_REPLY &&
	    m.m_u.reply.rp_status == 0 &&
	    m.m_u.reply.rp_value2 == DLMP_REPLY_HELD) {
		/* the lock waits: its id now, its completion later */
		if (w->w_lksb)
			w->w_lksb->sb_lkid = m.m_u.reply.rp_value;
		return;
	}
	w->w_answer = m;
	w->w_done = true;
	COND_SIGNAL(&w->w_cond);
}

/* Nobody reads lh_fd now: the reader's turn passes to a thread still
 * waiting for an answer (lh_wlock held). */
static void pass_reader_turn(struct ls_handle *h)
{
	if (h->lh_reading)
		return;
	for (struct waiter *o = h->lh_waiters; o; o = o->w_next) {
		if (!o->w_done) {
			COND_SIGNAL(&o->w_cond);
			break;
		}
	}
}

/*
 * Waiting for an answer.  A thread that waits for its answer first
 * looks for it without sleeping (in the answer ring, a load of its tail;
 * without one, recv with MSG_DONTWAIT; yielding the CPU between looks)
 * for lh_spin_ns, then sleeps (on the answer ring's futex, or in recv).  Profiled
 * (issue 14, perf sched events on a 2-vCPU VM): when the client and dlmd
 * run on different CPUs, each wake-up of a sleeper is an interrupt that
 * brings an idle (halted) virtual CPU back, 20-30 us, four per lock +
 * unlock pair where the pair's work is a few us; dlmd, for its part,
 * watches a client's request ring for a while after its last request
 * (plugin/client.c "Watching the rings").  The look yields (sched_yield),
 * so a client sharing one CPU with dlmd lets it run at once.  It adapts:
 * a wait whose answer did not come while looking (a lock that has to
 * wait, a busy dlmd) makes the next ones sleep at once, 2^k - 1 of them
 * after k such waits in a row (SPIN_BACKOFF_MAX), so that many clients
 * waiting on a busy daemon do not take its CPU.  A yield that gave the
 * CPU away for long (SPIN_YIELD_LONG_NS: a busy process shares ours,
 * and the answer waited for it) stops the looks for a while
 * (SPIN_OFF_*): sleeping, we are woken ahead of it when the answer
 * comes.
 */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t spin_ns_env(void)
{
	const char *env = secure_getenv(SPIN_ENV);
	char *end;
	unsigned long us;

	if (!env || !*env)
		return SPIN_US_DEFAULT * 1000ULL;
	errno = 0;
	us = strtoul(env, &end, 10);
	if (errno || *end || us > SPIN_US_MAX)
		return SPIN_US_DEFAULT * 1000ULL;
	return us * 1000ULL;
}

/* Take the next answer from the answer ring (dlmd_proto.h "The answer
 * ring"), as recv() would: its length, or -1 with EAGAIN when there is
 * none.  Once the ring is empty and dlmd said its answers go on the
 * socket (or raised rg_notice: a refusal waits there), the socket is
 * looked at instead.  dlmd fills a slot before it stores the tail, and
 * writes no slot we have not given back (rg_ans_head). */
static ssize_t ans_look(struct ls_handle *h, unsigned char *buf, size_t len)
{
	struct dlmp_ring *r = h->lh_ring;
	bool sock = __atomic_load_n(&r->rg_ans_socket, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&r->rg_notice, __ATOMIC_ACQUIRE);
	uint32_t tail = __atomic_load_n(&r->rg_ans_tail, __ATOMIC_ACQUIRE);

	if (tail != h->lh_ans_head) {
		const unsigned char *slot =
			r->rg_ans_slots[h->lh_ans_head & (DLMP_ANS_SLOTS - 1)];
		uint32_t n;

		memcpy(&n, slot, sizeof(n));
		if (n > len)
			n = (uint32_t)len;	/* then it does not decode */
		memcpy(buf, slot + 8, n);
		h->lh_ans_head++;
		__atomic_store_n(&r->rg_ans_head, h->lh_ans_head, __ATOMIC_RELEASE);
		return (ssize_t)n;
	}
	if (sock)
		return recv(h->lh_fd, buf, len, MSG_DONTWAIT);
	errno = EAGAIN;
	return -1;
}

/* One look for an answer without sleeping: as recv() with MSG_DONTWAIT. */
static ssize_t answer_look(struct ls_handle *h, unsigned char *buf, size_t len)
{
	if (h->lh_ans)
		return ans_look(h, buf, len);
	return recv(h->lh_fd, buf, len, MSG_DONTWAIT);
}

/* Sleep until the answer ring has an answer (or dlmd gone, a refusal on
 * the socket): the answer as recv() gives it.  The futex wait times out
 * every STASH_MS: then the AST socket is read ("Waiting reads the AST
 * socket") and the request socket looked at (a dlmd that died wakes
 * nobody; its end reads as 0).  Once dlmd's answers go on the socket,
 * the socket is read as without a ring. */
static ssize_t ans_sleep(struct ls_handle *h, unsigned char *buf, size_t len)
{
	struct dlmp_ring *r = h->lh_ring;
	struct timespec ts = { 0, STASH_MS * 1000000L };
	ssize_t n;

	for (;;) {
		n = ans_look(h, buf, len);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
			       errno != EINTR))
			return n;
		if (__atomic_load_n(&r->rg_ans_socket, __ATOMIC_ACQUIRE))
			return -2;	/* the caller reads the socket */
		__atomic_store_n(&r->rg_ans_sleeping, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&r->rg_ans_tail, __ATOMIC_SEQ_CST) ==
		    h->lh_ans_head &&
		    syscall(SYS_futex, &r->rg_ans_tail, FUTEX_WAIT, h->lh_ans_head,
			    &ts, NULL, 0) < 0 && errno == ETIMEDOUT) {
			struct pollfd pfd = { .fd = h->lh_fd, .events = POLLIN };

			__atomic_store_n(&r->rg_ans_sleeping, 0, __ATOMIC_SEQ_CST);
			ast_stash(h);
			if (poll(&pfd, 1, 0) == 1 &&
			    __atomic_load_n(&r->rg_ans_tail, __ATOMIC_ACQUIRE) ==
			    h->lh_ans_head) {
				n = recv(h->lh_fd, buf, len, MSG_DONTWAIT);
				if (n >= 0 || (errno != EAGAIN &&
					       errno != EWOULDBLOCK && errno != EINTR))
					return n;
			}
			continue;
		}
		/* woken (dlmd cleared the flag), or the answer came first */
		__atomic_store_n(&r->rg_ans_sleeping, 0, __ATOMIC_SEQ_CST);
	}
}

/* One answer (from the answer ring, or lh_fd), as recv(): -1 with errno
 * on failure. */
static ssize_t read_answer(struct ls_handle *h, unsigned char *buf, size_t len)
{
	ssize_t n;

	if (h->lh_spin_ns && h->lh_spin_skip) {
		h->lh_spin_skip--;
	} else if (h->lh_spin_ns) {
		uint64_t t0 = mono_ns(), end = t0 + h->lh_spin_ns;

		/* with an answer ring, a look costs nothing: once first */
		if (h->lh_ans) {
			n = ans_look(h, buf, len);
			if (n >= 0)
				return n;
		}
		/* yield first: the answer needs dlmd to run, at once if it
		 * shares our CPU */
		while (t0 >= h->lh_spin_off_until) {
			uint64_t t1;

			sched_yield();
			t1 = mono_ns();
			if (t1 - t0 >= SPIN_YIELD_LONG_NS) {
				h->lh_spin_off_ns = h->lh_spin_off_ns ?
					h->lh_spin_off_ns * 2 : SPIN_OFF_MIN_NS;
				if (h->lh_spin_off_ns > SPIN_OFF_MAX_NS)
					h->lh_spin_off_ns = SPIN_OFF_MAX_NS;
				h->lh_spin_off_until = t1 + h->lh_spin_off_ns;
				h->lh_spin_good = 0;
				break;
			}
			n = answer_look(h, buf, len);
			if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
				       errno != EINTR)) {
				h->lh_spin_fails = 0;
				if (h->lh_spin_off_ns &&
				    ++h->lh_spin_good >= SPIN_GOOD) {
					h->lh_spin_off_ns = 0;
					h->lh_spin_good = 0;
				}
				return n;
			}
			t0 = mono_ns();
			if (t0 >= end) {
				if (h->lh_spin_fails < SPIN_BACKOFF_MAX)
					h->lh_spin_fails++;
				h->lh_spin_skip = (1u << h->lh_spin_fails) - 1;
				break;
			}
		}
	}
	if (h->lh_ans) {
		n = ans_sleep(h, buf, len);
		if (n != -2)
			return n;
	}
	/* the receive times out every STASH_MS (SO_RCVTIMEO): dlmd may
	 * have paused us for ASTs nobody reads while we wait ("Waiting
	 * reads the AST socket") */
	for (;;) {
		n = recv(h->lh_fd, buf, len, 0);
		if (n >= 0)
			break;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			ast_stash(h);
		else if (errno != EINTR)
			break;
	}
	return n;
}

static int req_wait(struct ls_handle *h, struct waiter *w)
{
	unsigned char buf[DLMP_MAX_MSG];
	int rv = 0;

	LOCK(&h->lh_wlock);
	while (!w->w_done) {
		ssize_t n;
		int err = 0;

		if (h->lh_dead) {
			rv = h->lh_dead;
			break;
		}
		if (h->lh_reading) {
			/* another thread reads; it wakes us when our answer
			 * came or when it stops reading */
			COND_WAIT(&w->w_cond, &h->lh_wlock);
			continue;
		}
		h->lh_reading = true;
		UNLOCK(&h->lh_wlock);
		n = read_answer(h, buf, sizeof(buf));
		if (n < 0)
			err = -errno;
		LOCK(&h->lh_wlock);
		h->lh_reading = false;
		take_answer(h, buf, n, err);
	}
	waiter_done(h, w);
	pass_reader_turn(h);
	UNLOCK(&h->lh_wlock);
	COND_DESTROY(&w->w_cond);
	return rv;
}

/* A request that gets no answer at all (a LOCK with DLMP_LK_NEWID). */
static int send_unanswered(struct ls_handle *h, struct dlmp_msg *msg)
{
	int rv;

	LOCK(&h->lh_wlock);
	if (h->lh_dead) {
		UNLOCK(&h->lh_wlock);
		return h->lh_dead;
	}
	if (++h->lh_reqid == 0)
		++h->lh_reqid;
	msg->m_hdr.h_reqid = h->lh_reqid;
	UNLOCK(&h->lh_wlock);
	rv = h->lh_ring ? ring_send(h, msg, true) : send_socket(h, msg);
	if (rv == -ENOTCONN) {
		LOCK(&h->lh_wlock);
		handle_dead(h, rv);
		UNLOCK(&h->lh_wlock);
	}
	return rv;
}

/* A request that gets a REPLY (no DLMP_LK_SYNC): its status.  'socket':
 * sent on the socket even with a ring. */
static int request_on(struct ls_handle *h, struct dlmp_msg *msg,
		      struct dlmp_reply *reply, bool socket)
{
	struct waiter w;
	int rv;

	w.w_held_ok = false;
	w.w_lksb = NULL;
	w.w_socket = socket;
	rv = req_send(h, msg, &w);
	if (!rv)
		rv = req_wait(h, &w);
	if (rv)
		return rv;
	if (w.w_answer.m_hdr.h_type != DLMP_REPLY)
		return -EPROTO;
	*reply = w.w_answer.m_u.reply;
	return reply->rp_status;
}

static int handle_request(struct ls_handle *h, struct dlmp_msg *msg,
			  struct dlmp_reply *reply)
{
	return request_on(h, msg, reply, false);
}

static int set_ls_name(struct dlmp_ls *l, const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len > DLM_LOCKSPACE_LEN || !dlmp_ls_name_valid(name))
		return -EINVAL;
	memcpy(l->ls_name, name, len + 1);
	l->ls_namelen = (uint16_t)len;
	return 0;
}

/* ------------------------------------------------------------------ */
/* lockspace handles                                                   */
/* ------------------------------------------------------------------ */

/*
 * fork() with handles open.  A child shares each handle's connection
 * and AST socket with its parent, as it would share the kernel device's
 * fd, and may use it (a worker forked to do one job on its parent's
 * handle, the parent waiting): the locks are the connection's, whoever
 * asks.  But its copy of the handle must not use what only works with
 * one writer: the request ring (its own count of the slots it filled,
 * the ring shared: after a child's requests through the ring the
 * parent's next ones went to slots dlmd had passed, and waited for
 * ever) and the block of lock ids (the parent's next ids were the ones
 * its child had used).  So in the child each inherited handle forgets
 * both (its requests go on the socket, its new locks get their ids from
 * dlmd) and the requests in flight of threads it does not have; and as
 * the parent reads the answer ring, the child's first request is led by
 * a RING ANS_SOCKET (lh_ans_detach): from then on every answer of the
 * connection comes on the socket, which both read (the parent once its
 * ring is empty).
 */
static bool fork_handler_set;

static void fork_prepare(void)
{
	LOCK(&open_handles_lock);
}

static void fork_parent(void)
{
	UNLOCK(&open_handles_lock);
}

static void fork_child(void)
{
	for (struct ls_handle *h = open_handles; h; h = h->lh_next) {
		if (h->lh_ring)
			munmap(h->lh_ring, DLMP_RING_BYTES);
		h->lh_ring = NULL;
		h->lh_ans_detach = h->lh_ans;
		h->lh_ans = false;
		h->lh_kick_owed = false;
		h->lh_id_block = h->lh_id_next = h->lh_id_end = 0;
		h->lh_id_unsent = 0;
		h->lh_waiters = NULL;
		h->lh_nflight = 0;
		h->lh_nslot_waits = 0;
		h->lh_reading = false;
	}
	UNLOCK(&open_handles_lock);
}

static void handle_register(struct ls_handle *h)
{
	LOCK(&open_handles_lock);
	if (!fork_handler_set &&
	    pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
		fork_handler_set = true;
	h->lh_next = open_handles;
	open_handles = h;
	UNLOCK(&open_handles_lock);
}

static void handle_unregister(struct ls_handle *h)
{
	LOCK(&open_handles_lock);
	for (struct ls_handle **pp = &open_handles; *pp; pp = &(*pp)->lh_next) {
		if (*pp == h) {
			*pp = h->lh_next;
			break;
		}
	}
	UNLOCK(&open_handles_lock);
}

/* The purge epoch of the handle whose AST fd is 'fd'; false for an fd
 * that is none of ours (its ASTs are then all run). */
static bool fd_ast_epoch(int fd, uint32_t *epoch)
{
	bool found = false;

	LOCK(&open_handles_lock);
	for (struct ls_handle *h = open_handles; h; h = h->lh_next) {
		if (h->lh_ast_fd == fd) {
			*epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
			found = true;
			break;
		}
	}
	UNLOCK(&open_handles_lock);
	return found;
}

/* Was this AST written before the latest purge of our own locks?  Its
 * header's reqid carries the purge epoch it was made in (serial number
 * arithmetic: the epoch wraps). */
static bool is_stale_ast(const struct dlmp_msg *m, uint32_t epoch)
{
	return (int32_t)(m->m_hdr.h_reqid - epoch) < 0;
}

/* The chain lock 'lkid' would be on (lh_plock held). */
static struct pending **pend_chain(struct ls_handle *h, uint32_t lkid)
{
	return &h->lh_pend[lkid & (h->lh_pend_size - 1)];
}

static struct pending *pend_find_locked(struct ls_handle *h, uint32_t lkid)
{
	struct pending *pd = h->lh_pend_size ? *pend_chain(h, lkid) : NULL;

	while (pd && pd->pd_lkid != lkid)
		pd = pd->pd_next;
	return pd;
}

/* Twice the chains (lh_plock held): a handle may hold many locks, each
 * with its record.  On failure the chains just grow longer. */
static void pend_grow_locked(struct ls_handle *h)
{
	unsigned int size = h->lh_pend_size ? h->lh_pend_size * 2 : PEND_MIN;
	struct pending **old = h->lh_pend, **t = calloc(size, sizeof(*t));

	if (!t)
		return;
	for (unsigned int i = 0; i < h->lh_pend_size; i++) {
		while (old[i]) {
			struct pending *pd = old[i];

			old[i] = pd->pd_next;
			pd->pd_next = t[pd->pd_lkid & (size - 1)];
			t[pd->pd_lkid & (size - 1)] = pd;
		}
	}
	free(old);
	h->lh_pend = t;
	h->lh_pend_size = size;
}

/* A record off its chain goes to the handle's free list (lh_plock held),
 * which keeps one for each request whose REPLY is awaited. */
static void pend_free_locked(struct ls_handle *h, struct pending *pd)
{
	h->lh_pend_count--;
	if (h->lh_nfree >= PEND_FREE_MAX + h->lh_unanswered) {
		free(pd);
		return;
	}
	pd->pd_next = h->lh_pfree;
	h->lh_pfree = pd;
	h->lh_nfree++;
}

/* A record for lock 'lkid', idle, on its chain (lh_plock held): from
 * the free list if 'reserved' or it has more than the requests awaiting
 * their REPLY keep there, else allocated.  NULL: out of memory. */
static struct pending *pend_new_locked(struct ls_handle *h, uint32_t lkid,
				       bool reserved)
{
	struct pending *pd = NULL;

	if (h->lh_pend_count >= h->lh_pend_size)
		pend_grow_locked(h);
	if (!h->lh_pend_size)
		return NULL;
	if (h->lh_pfree && (reserved || h->lh_nfree > h->lh_unanswered)) {
		pd = h->lh_pfree;
		h->lh_pfree = pd->pd_next;
		h->lh_nfree--;
	} else {
		pd = malloc(sizeof(*pd));
		if (!pd)
			return NULL;
	}
	memset(pd, 0, sizeof(*pd));
	pd->pd_lkid = lkid;
	pd->pd_next = *pend_chain(h, lkid);
	*pend_chain(h, lkid) = pd;
	h->lh_pend_count++;
	return pd;
}

/* Take lock 'lkid''s record off its chain and free it (lh_plock held). */
static void pend_drop_locked(struct ls_handle *h, uint32_t lkid)
{
	if (!h->lh_pend_size)
		return;
	for (struct pending **pp = pend_chain(h, lkid); *pp; pp = &(*pp)->pd_next) {
		if ((*pp)->pd_lkid == lkid) {
			struct pending *pd = *pp;

			*pp = pd->pd_next;
			pend_free_locked(h, pd);
			return;
		}
	}
}

/* Remember async lock 'lk' (an id of our own) before its LOCK is sent:
 * 0, -ENOTCONN when the AST socket has ended, or -ENOMEM. */
static int pend_add(struct ls_handle *h, const struct dlmp_lock *lk)
{
	struct pending *pd;

	LOCK(&h->lh_plock);
	if (h->lh_gone) {
		UNLOCK(&h->lh_plock);
		return -ENOTCONN;
	}
	pd = pend_new_locked(h, lk->lk_lkid, false);
	if (!pd) {
		UNLOCK(&h->lh_plock);
		return -ENOMEM;
	}
	pd->pd_waiting = true;
	pd->pd_keep = true;
	pd->pd_epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
	pd->pd_lksb = lk->lk_lksb;
	pd->pd_castaddr = lk->lk_castaddr;
	pd->pd_castparam = lk->lk_castparam;
	UNLOCK(&h->lh_plock);
	return 0;
}

static void pend_drop(struct ls_handle *h, uint32_t lkid)
{
	LOCK(&h->lh_plock);
	pend_drop_locked(h, lkid);
	UNLOCK(&h->lh_plock);
}

/* Lock pd's request ended with 'status' (a completion AST, or the answer
 * of a synchronous call): the lock is idle now, or gone (unlocked, its
 * lockspace gone, or a new lock refused), and its record with it unless
 * a REPLY still expects an early completion (lh_plock held). */
static void pend_ended_locked(struct ls_handle *h, struct pending *pd,
			      int32_t status)
{
	pd->pd_waiting = false;
	if (status == 0)
		pd->pd_granted = true;
	else
		pd->pd_keep = false;	/* refused: the old way from now */
	if ((status == -EUNLOCK || status == -ENOTCONN || !pd->pd_granted) &&
	    !pd->pd_early)
		pend_drop_locked(h, pd->pd_lkid);
}

/* A completion AST 'm' was read from h's AST socket: it ends the request
 * its lock waits for.  One of a lock that waits for nothing may answer
 * a request whose REPLY was not taken yet: it is counted early.  One
 * made before a purge of our own locks is void (lh_plock held). */
static void pend_completed_locked(struct ls_handle *h, const struct dlmp_msg *m)
{
	struct pending *pd = pend_find_locked(h, m->m_u.ast.as_lkid);
	uint32_t epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);

	if (is_stale_ast(m, epoch)) {
		if (pd)
			pend_drop_locked(h, pd->pd_lkid);
		return;
	}
	if (pd && pd->pd_waiting) {
		pend_ended_locked(h, pd, m->m_u.ast.as_status);
		return;
	}
	if (!h->lh_unanswered)
		return;
	if (!pd)
		pd = pend_new_locked(h, m->m_u.ast.as_lkid, true);
	if (!pd)
		return;
	pd->pd_early++;
	if (m->m_u.ast.as_status == 0)
		pd->pd_granted = true;
	if (m->m_u.ast.as_status == -EUNLOCK || m->m_u.ast.as_status == -ENOTCONN)
		pd->pd_gone = true;
}

/* ... of AST fd 'fd' (of handle h; NULL: found by the fd). */
static void pend_completed(int fd, struct ls_handle *h, const struct dlmp_msg *m)
{
	if (h) {
		LOCK(&h->lh_plock);
		pend_completed_locked(h, m);
		UNLOCK(&h->lh_plock);
		return;
	}
	LOCK(&open_handles_lock);
	for (h = open_handles; h; h = h->lh_next) {
		if (h->lh_ast_fd == fd) {
			LOCK(&h->lh_plock);
			pend_completed_locked(h, m);
			UNLOCK(&h->lh_plock);
			break;
		}
	}
	UNLOCK(&open_handles_lock);
}

/* A synchronous call on lock 'lkid' got its completion in its answer
 * (COMP_REPLY): it ended what the lock waited for, as in dlmd. */
static void pend_sync_done(struct ls_handle *h, uint32_t lkid, int32_t status)
{
	struct pending *pd;

	LOCK(&h->lh_plock);
	pd = pend_find_locked(h, lkid);
	if (pd)
		pend_ended_locked(h, pd, status);
	UNLOCK(&h->lh_plock);
}

/* A request other than a NOREPLY UNLOCK is sent on lock 'lkid', or a
 * child lock under it: libdlm no longer knows whether its unlock would
 * be refused; its later unlocks wait for their REPLY.  'drop': a
 * synchronous request, which replaces the lock's callback values with
 * none: an idle record goes. */
static void pend_forget(struct ls_handle *h, uint32_t lkid, bool drop)
{
	struct pending *pd;

	LOCK(&h->lh_plock);
	pd = pend_find_locked(h, lkid);
	if (pd && drop && !pd->pd_waiting && !pd->pd_early)
		pend_drop_locked(h, lkid);
	else if (pd)
		pd->pd_keep = false;
	UNLOCK(&h->lh_plock);
}

/* An async request that is answered by a REPLY and then by a completion
 * AST (a conversion, a lock under a parent or without an id of our own,
 * an unlock that waits for its REPLY) is about to be sent: a record is
 * set aside for it, *epoch is the purge epoch it is sent in.  0,
 * -ENOTCONN when the AST socket has ended, or -ENOMEM. */
static int pend_begin(struct ls_handle *h, uint32_t *epoch)
{
	struct pending *pd;
	int rv = 0;

	LOCK(&h->lh_plock);
	if (!h->lh_pend_size)
		pend_grow_locked(h);
	if (h->lh_gone) {
		rv = -ENOTCONN;
	} else if (!h->lh_pend_size) {
		rv = -ENOMEM;
	} else if (h->lh_nfree <= h->lh_unanswered) {
		pd = malloc(sizeof(*pd));
		if (pd) {
			pd->pd_next = h->lh_pfree;
			h->lh_pfree = pd;
			h->lh_nfree++;
		} else {
			rv = -ENOMEM;
		}
	}
	if (!rv)
		h->lh_unanswered++;
	*epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
	UNLOCK(&h->lh_plock);
	return rv;
}

/* What a request pend_begin() set a record aside for is. */
enum pend_kind { PK_NEW, PK_CONVERT, PK_UNLOCK };

/*
 * The REPLY of a request pend_begin() set a record aside for was taken:
 * 'accepted' says dlmd took it, so a completion AST of lock 'lkid' is
 * owed, which runs with the callback values given (an unlock's keep the
 * lock's routine and status block when it gives none, as in dlmd).  0,
 * or -ENOTCONN when the AST socket ended before: no completion can come,
 * and the call fails instead.
 */
static int pend_end(struct ls_handle *h, bool accepted, enum pend_kind kind,
		    uint32_t lkid, uint32_t epoch, uint64_t castaddr,
		    uint64_t castparam, uint64_t lksb)
{
	bool unlock = kind == PK_UNLOCK;
	struct pending *pd;
	int rv = 0;

	LOCK(&h->lh_plock);
	h->lh_unanswered--;
	if (!accepted)
		goto out;
	pd = pend_find_locked(h, lkid);
	if (!pd) {
		/* the record set aside: NULL only if a stray early
		 * completion took it and memory ran out */
		pd = pend_new_locked(h, lkid, true);
		if (!pd)
			goto out;
		pd->pd_granted = kind != PK_NEW;
	} else if (pd->pd_early) {
		/* its completion was read already */
		pd->pd_granted = !pd->pd_gone && (pd->pd_granted || kind != PK_NEW);
	}
	pd->pd_keep = false;
	pd->pd_epoch = epoch;
	pd->pd_castparam = castparam;
	if (castaddr || !unlock)
		pd->pd_castaddr = castaddr;
	if (lksb || !unlock)
		pd->pd_lksb = lksb;
	if (pd->pd_early) {
		if (--pd->pd_early == 0) {
			pd->pd_gone = false;
			if (!pd->pd_waiting && !pd->pd_granted)
				pend_drop_locked(h, lkid);
		}
	} else if (h->lh_gone) {
		rv = -ENOTCONN;
		if (!pd->pd_waiting)
			pend_drop_locked(h, lkid);
	} else {
		pd->pd_waiting = true;
	}
out:
	UNLOCK(&h->lh_plock);
	return rv;
}

/* Our own locks were purged: the idle ones are gone without ASTs. */
static void pend_purged(struct ls_handle *h)
{
	LOCK(&h->lh_plock);
	for (unsigned int i = 0; i < h->lh_pend_size; i++) {
		for (struct pending **pp = &h->lh_pend[i]; *pp;) {
			struct pending *pd = *pp;

			if (!pd->pd_waiting && !pd->pd_early) {
				*pp = pd->pd_next;
				pend_free_locked(h, pd);
			} else {
				pp = &pd->pd_next;
			}
		}
	}
	UNLOCK(&h->lh_plock);
}

/* The AST socket of h ended: no completion comes any more.  Takes out
 * every lock still waiting for one (a chain by pd_next), forgets the
 * others and refuses later requests; *epoch is the handle's purge
 * epoch. */
static struct pending *pend_take_all(struct ls_handle *h, uint32_t *epoch)
{
	struct pending *all = NULL;

	LOCK(&h->lh_plock);
	h->lh_gone = true;
	for (unsigned int i = 0; i < h->lh_pend_size; i++) {
		while (h->lh_pend[i]) {
			struct pending *pd = h->lh_pend[i];

			h->lh_pend[i] = pd->pd_next;
			if (!pd->pd_waiting) {
				pend_free_locked(h, pd);
				continue;
			}
			h->lh_pend_count--;
			pd->pd_next = all;
			all = pd;
		}
	}
	UNLOCK(&h->lh_plock);
	*epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
	return all;
}

/* Every record of h, on its chains and on the free list. */
static void pend_free_all(struct ls_handle *h)
{
	struct pending *pd;

	for (unsigned int i = 0; i < h->lh_pend_size; i++) {
		while ((pd = h->lh_pend[i])) {
			h->lh_pend[i] = pd->pd_next;
			free(pd);
		}
	}
	free(h->lh_pend);
	while ((pd = h->lh_pfree)) {
		h->lh_pfree = pd->pd_next;
		free(pd);
	}
}

static void handle_free(struct ls_handle *h)
{
	if (h->lh_ast_fd >= 0)
		handle_unregister(h);
	stash_free(h);
	if (in_ast && h->lh_ast_fd >= 0)
		ast_closed = h->lh_ast_fd;
	if (h->lh_fd >= 0)
		close(h->lh_fd);
	if (h->lh_ast_fd >= 0)
		close(h->lh_ast_fd);
	MUTEX_DESTROY(&h->lh_wlock);
	MUTEX_DESTROY(&h->lh_idlock);
	COND_DESTROY(&h->lh_id_cond);
	pend_free_all(h);
	MUTEX_DESTROY(&h->lh_plock);
	COND_DESTROY(&h->lh_slot_cond);
	if (h->lh_ring)
		munmap(h->lh_ring, DLMP_RING_BYTES);
	MUTEX_DESTROY(&h->lh_ringlock);
#ifdef _REENTRANT
	pthread_mutex_destroy(&h->lh_lock);
#endif
	free(h);
}

/* Give the bound connection a request ring (dlmd_proto.h "The request
 * ring"), unless $DLMD_RING is "0".  Without one (no memfd, dlmd said
 * no) requests go on the socket: nothing fails here. */
static void ring_attach(struct ls_handle *h)
{
	const char *env = secure_getenv(RING_ENV);
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	void *p;
	int fd, rv;

	if (env && strcmp(env, "0") == 0)
		return;
	fd = memfd_create("dlmd-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return;
	if (ftruncate(fd, (off_t)DLMP_RING_BYTES) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		close(fd);
		return;
	}
	p = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return;
	}
	env = secure_getenv(RING_ANS_ENV);
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_RING;
	msg.m_u.pair.pr_a = DLMP_RING_ATTACH;
	msg.m_u.pair.pr_b = env && strcmp(env, "0") == 0 ? 0 : DLMP_RING_ANSWERS;
	rv = do_request(h->lh_fd, &h->lh_reqid, &msg, fd, &reply);
	close(fd);
	if (rv) {
		munmap(p, DLMP_RING_BYTES);
		return;
	}
	h->lh_ring = p;
	h->lh_ans = msg.m_u.pair.pr_b == DLMP_RING_ANSWERS;
	h->lh_ans_head = 0;
}

/* Bind connection 'fd' (owned by the handle from now) to lockspace
 * 'name'.  Returns the handle or NULL with *err set. */
static struct ls_handle *ls_open_on(int fd, const char *name, int *err)
{
	struct ls_handle *h = calloc(1, sizeof(*h));
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	int sv[2], rv;

	if (!h) {
		close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	h->lh_fd = fd;
	h->lh_ast_fd = -1;
	h->lh_stash_tail = &h->lh_stash;
	h->lh_spin_ns = spin_ns_env();
	MUTEX_INIT(&h->lh_wlock);
	MUTEX_INIT(&h->lh_idlock);
	COND_INIT(&h->lh_id_cond);
	MUTEX_INIT(&h->lh_plock);
	MUTEX_INIT(&h->lh_ringlock);
	COND_INIT(&h->lh_slot_cond);
#ifdef _REENTRANT
	pthread_mutex_init(&h->lh_lock, NULL);
	h->lh_stop[0] = h->lh_stop[1] = -1;
#endif
	snprintf(h->lh_name, sizeof(h->lh_name), "%s", name);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		*err = -errno;
		handle_free(h);
		return NULL;
	}
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_LS_OPEN;
	set_ls_name(&msg.m_u.ls, name);
	/* A dlmd out of fds (RLIMIT_NOFILE) cannot take the AST socket we
	 * pass: the kernel drops it and dlmd answers EMFILE.  We wait, as a
	 * connection waits in dlmd's backlog while it cannot accept, and
	 * ask again: the socket is still ours (tests/test-client-limits.sh
	 * step 3b). */
	for (int waited = 0;; waited += OPEN_FD_RETRY_MS) {
		rv = do_request(fd, &h->lh_reqid, &msg, sv[1], &reply);
		if (rv != -EMFILE || waited >= OPEN_FD_WAIT_MS)
			break;
		poll(NULL, 0, OPEN_FD_RETRY_MS);
	}
	close(sv[1]);
	if (rv) {
		close(sv[0]);
		*err = rv;
		handle_free(h);
		return NULL;
	}
	h->lh_ast_fd = sv[0];
	if (reply.rp_value2 && reply.rp_value3 == DLMP_IDS_BLOCK) {
		h->lh_id_block = h->lh_id_next = reply.rp_value2;
		h->lh_id_end = reply.rp_value2 + DLMP_IDS_BLOCK;
	}
	ring_attach(h);
	/* waits for dlmd wake up to read the AST socket ("Waiting reads
	 * the AST socket") */
	{
		struct timeval tv = { 0, STASH_MS * 1000 };

		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	handle_register(h);
	return h;
}

static struct ls_handle *ls_new(const char *name, mode_t mode, uint32_t flags,
				bool create, int *err)
{
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	uint32_t reqid = 0;
	int fd, rv;

	memset(&msg, 0, sizeof(msg));
	rv = set_ls_name(&msg.m_u.ls, name);
	if (rv) {
		*err = rv;
		return NULL;
	}
	fd = connect_daemon();
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	if (create) {
		msg.m_hdr.h_type = DLMP_LS_CREATE;
		msg.m_u.ls.ls_flags = flags & DLMP_LSFL_NEWEXCL;
		msg.m_u.ls.ls_mode = (uint32_t)(mode & 0777);
		rv = do_request(fd, &reqid, &msg, -1, &reply);
		if (rv) {
			close(fd);
			*err = rv;
			return NULL;
		}
	}
	return ls_open_on(fd, name, err);
}

dlm_lshandle_t dlm_new_lockspace(const char *name, mode_t mode, uint32_t flags)
{
	int err = 0;
	struct ls_handle *h = ls_new(name, mode, flags, true, &err);

	if (!h)
		errno = -err;
	return h;
}

dlm_lshandle_t dlm_create_lockspace(const char *name, mode_t mode)
{
	return dlm_new_lockspace(name, mode, 0);
}

dlm_lshandle_t dlm_open_lockspace(const char *name)
{
	int err = 0;
	struct ls_handle *h = ls_new(name, 0, 0, false, &err);

	if (!h)
		errno = -err;
	return h;
}

#ifdef _REENTRANT
static void stop_thread(struct ls_handle *h)
{
	char b = 0;

	if (!h->lh_has_thread)
		return;
	if (h->lh_thread_pid != getpid()) {
		/* A child after fork() closing the handle it inherited:
		 * the thread is its parent's, which the pipe, shared, would
		 * stop (the parent's ASTs then never ran); as closing a
		 * device fd in a child leaves the parent's alone, only our
		 * copies go. */
		close(h->lh_stop[0]);
		close(h->lh_stop[1]);
		h->lh_has_thread = false;
		return;
	}
	if (write(h->lh_stop[1], &b, 1) < 0)
		(void)0;	/* the pipe cannot be full: one byte, once */
	if (pthread_equal(h->lh_thread, pthread_self()))
		pthread_detach(h->lh_thread);	/* closing from an AST */
	else
		pthread_join(h->lh_thread, NULL);
	close(h->lh_stop[0]);
	close(h->lh_stop[1]);
	h->lh_has_thread = false;
}
#endif

int dlm_close_lockspace(dlm_lshandle_t ls)
{
	struct ls_handle *h = ls;

	if (!h)
		return ret_errno(-ENOTCONN);
#ifdef _REENTRANT
	stop_thread(h);
#endif
	handle_free(h);
	return 0;
}

int dlm_release_lockspace(const char *name, dlm_lshandle_t ls, int force)
{
	struct ls_handle *h = ls;
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	uint32_t reqid = 0;
	int rv, fd;

	memset(&msg, 0, sizeof(msg));
	rv = set_ls_name(&msg.m_u.ls, name);
	if (rv)
		return ret_errno(rv);
	msg.m_hdr.h_type = DLMP_LS_RELEASE;
	msg.m_u.ls.ls_flags = force ? DLMP_RELEASE_FORCE : 0;
	if (h) {
		rv = handle_request(h, &msg, &reply);
		if (rv)
			return ret_errno(rv);
		return dlm_close_lockspace(h);
	}
	fd = connect_daemon();
	if (fd < 0)
		return ret_errno(fd);
	rv = do_request(fd, &reqid, &msg, -1, &reply);
	close(fd);
	return ret_errno(rv);
}

int dlm_ls_get_fd(dlm_lshandle_t ls)
{
	struct ls_handle *h = ls;

	if (!h)
		return ret_errno(-ENOTCONN);
	return h->lh_ast_fd;
}

/* ------------------------------------------------------------------ */
/* ASTs                                                                */
/* ------------------------------------------------------------------ */

typedef void (*ast_fn)(void *arg);

/* No code lives in the first page (Linux never maps it for a program's
 * text), so an AST address below this is a marker, not a routine:
 * lvmlockd's adoption passes (void *)1 for both ASTs, meaning "none".
 * libdlm never calls such an address, and never asks dlmd for blocking
 * ASTs a caller gave no routine for. */
#define AST_MIN_ADDR	4096u

static bool is_routine(ast_fn fn)
{
	return (uintptr_t)fn >= AST_MIN_ADDR;
}

static void run_ast(const struct dlmp_ast *as)
{
	if (as->as_kind == DLMP_AST_COMP) {
		struct dlm_lksb *lksb = (struct dlm_lksb *)(uintptr_t)as->as_lksb;
		ast_fn fn = (ast_fn)(uintptr_t)as->as_castaddr;

		if (lksb) {
			if ((as->as_bits & DLMP_LK_LVB) && lksb->sb_lvbptr)
				memcpy(lksb->sb_lvbptr, as->as_lvb, DLM_LVB_LEN);
			lksb->sb_flags = (char)as->as_sbflags;
			lksb->sb_lkid = as->as_lkid;
			lksb->sb_status = -as->as_status;
		}
		if (is_routine(fn))
			fn((void *)(uintptr_t)as->as_castparam);
	} else {
		ast_fn fn = (ast_fn)(uintptr_t)as->as_bastaddr;

		if (is_routine(fn))
			fn((void *)(uintptr_t)as->as_bastparam);
	}
}


/* The AST socket 'fd' (of handle h; NULL: found by the fd) ended: run
 * the completion, with ENOTCONN, of every lock of ours whose async
 * request had none (see "Async requests in flight" above).  One sent
 * before a later purge of our own locks gets none, as its AST would be
 * dropped. */
static void complete_pending(int fd, struct ls_handle *h)
{
	struct pending *all = NULL;
	uint32_t epoch = 0;

	if (h) {
		all = pend_take_all(h, &epoch);
	} else {
		LOCK(&open_handles_lock);
		for (h = open_handles; h; h = h->lh_next) {
			if (h->lh_ast_fd == fd) {
				all = pend_take_all(h, &epoch);
				break;
			}
		}
		UNLOCK(&open_handles_lock);
	}
	while (all) {
		struct pending *pd = all;
		struct dlmp_ast as;

		all = pd->pd_next;
		if ((int32_t)(pd->pd_epoch - epoch) >= 0) {
			memset(&as, 0, sizeof(as));
			as.as_kind = DLMP_AST_COMP;
			as.as_status = -ENOTCONN;
			as.as_lkid = pd->pd_lkid;
			as.as_castaddr = pd->pd_castaddr;
			as.as_castparam = pd->pd_castparam;
			as.as_lksb = pd->pd_lksb;
			in_ast++;
			run_ast(&as);
			in_ast--;
		}
		free(pd);
	}
}

/* Run up to DISPATCH_MAX waiting ASTs of handle 'h' (NULL: found by its
 * fd), dropping those made before a purge of our own locks.  They are
 * read DISPATCH_BATCH packets a call (recvmmsg); fewer than asked for
 * means the socket is empty, so a lone AST costs one call.  0, or
 * negative errno (-ENOTCONN when the daemon closed the socket: the
 * async locks still waiting for a completion then get theirs).  An AST
 * routine may close the handle: dispatching stops there (ast_closed). */
static int dispatch_batches(int fd, struct ls_handle *h)
{
	unsigned char bufs[DISPATCH_BATCH][DLMP_MAX_MSG];
	struct mmsghdr mm[DISPATCH_BATCH];
	struct iovec iov[DISPATCH_BATCH];
	struct dlmp_msg m;
	int done = 0;

	while (done < DISPATCH_MAX) {
		bool stashed;
		int n;

		memset(mm, 0, sizeof(mm));
		for (int i = 0; i < DISPATCH_BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		n = ast_take(fd, h, mm, DISPATCH_BATCH, &stashed);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			if (errno != ECONNRESET)
				return -errno;
			n = 0;
		}
		if (n == 0) {
			complete_pending(fd, h);
			return -ENOTCONN;
		}
		for (int i = 0; i < n; i++) {
			uint32_t epoch = 0;
			bool have_epoch = true;

			if (mm[i].msg_len == 0) {
				complete_pending(fd, h);
				return -ENOTCONN;
			}
			if (dlmp_decode(bufs[i], mm[i].msg_len, &m) ||
			    m.m_hdr.h_type != DLMP_AST)
				continue;	/* not from dlmd: ignore */
			if (m.m_u.ast.as_kind == DLMP_AST_COMP)
				pend_completed(fd, h, &m);
			/* read per AST: a purge may end while we dispatch */
			if (h)
				epoch = __atomic_load_n(&h->lh_ast_epoch,
							__ATOMIC_ACQUIRE);
			else
				have_epoch = fd_ast_epoch(fd, &epoch);
			if (have_epoch && is_stale_ast(&m, epoch))
				continue;	/* its lock was purged */
			in_ast++;
			run_ast(&m.m_u.ast);
			in_ast--;
			if (ast_closed == fd) {
				ast_closed = -1;	/* h and fd are gone */
				return -EBADF;
			}
			if (!in_ast)
				ast_closed = -1;	/* another handle's */
		}
		done += n;
		if (n < DISPATCH_BATCH && !stashed)
			return 0;
	}
	return 0;
}

/* dispatch_batches(), then the kick its AST routines' requests owe
 * (also when called from an AST routine: one that dispatches while it
 * waits gets its requests taken). */
static int dispatch_fd(int fd, struct ls_handle *h)
{
	int rv = dispatch_batches(fd, h);

	kick_flush();
	return rv;
}

int dlm_dispatch(int fd)
{
	return ret_errno(dispatch_fd(fd, NULL));
}

/* The completion AST of a synchronous call made inside an AST routine:
 * sw_done is the last thing it touches, as 'sw' may vanish as soon as
 * the waiter sees it. */
static void sync_ast(void *arg)
{
	struct sync_wait *sw = arg;

	__atomic_store_n(&sw->sw_done, true, __ATOMIC_RELEASE);
}

/* Read the AST socket once (waiting up to SYNC_POLL_MS) and dispatch. */
static int read_once(struct ls_handle *h)
{
	struct pollfd pfd = { .fd = h->lh_ast_fd, .events = POLLIN };
	int n;

	kick_flush();	/* what we wait for may be in the ring */
	n = poll(&pfd, 1, SYNC_POLL_MS);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return 0;
	return dispatch_fd(h->lh_ast_fd, h);
}

/* Inside an AST routine: dispatch every AST that comes (ours, and the
 * blocking ASTs our wait may depend on) until sync_ast has run for 'sw'.
 * The timeout lets us see an AST another thread (the AST thread, or a
 * dlm_dispatch caller) ran for us.  0 or negative errno. */
static int sync_wait(struct ls_handle *h, struct sync_wait *sw)
{
	int rv = 0;

	while (!__atomic_load_n(&sw->sw_done, __ATOMIC_ACQUIRE) && !rv)
		rv = read_once(h);
	return rv;
}

/* Fill the status block from a COMP_REPLY, as run_ast does from an AST. */
static void comp_to_lksb(const struct dlmp_comp *cp, struct dlm_lksb *lksb)
{
	if ((cp->cp_bits & DLMP_LK_LVB) && lksb->sb_lvbptr)
		memcpy(lksb->sb_lvbptr, cp->cp_lvb, DLM_LVB_LEN);
	lksb->sb_flags = (char)cp->cp_sbflags;
	lksb->sb_lkid = cp->cp_lkid;
	lksb->sb_status = -cp->cp_status;
}

/* ------------------------------------------------------------------ */
/* locking                                                             */
/* ------------------------------------------------------------------ */

/* A LOCK.  'sync': ask for the completion in the answer (DLMP_LK_SYNC)
 * and wait for it; the status block is then complete on return. */
/* Flags an async new lock may carry and still take its id from the
 * handle's block: those the daemon accepts on any new lock.  A request
 * with others, a parent, an invalid mode combination or range goes the
 * slow way, so that its refusal is still this call's return value. */
#define OWN_ID_FLAGS	(LKF_NOQUEUE | LKF_VALBLK | LKF_CONVDEADLK | \
			 LKF_PERSISTENT | LKF_NODLCKWT | LKF_EXPEDITE | \
			 LKF_NOQUEUEBAST | LKF_HEADQUE | LKF_NOORDER | \
			 LKF_ALTPR | LKF_ALTCW)

static bool may_use_own_id(uint32_t mode, uint32_t flags, uint32_t parent,
			   const struct dlm_range *range)
{
	flags &= ~LKF_WAIT;
	return !parent && !(flags & ~OWN_ID_FLAGS) &&
	       !((flags & LKF_EXPEDITE) && mode != LKM_NLMODE) &&
	       !((flags & LKF_ALTPR) && (flags & LKF_ALTCW)) &&
	       !(range && range->ra_start > range->ra_end);
}

/* The calling thread's id, asked of the kernel once per thread (and
 * again in a child after fork). */
static THREAD_LOCAL uint32_t my_tid;
static bool tid_atfork;

static void tid_forget(void)
{
	my_tid = 0;
}

static uint32_t cur_tid(void)
{
	if (!my_tid) {
		if (!__atomic_exchange_n(&tid_atfork, true, __ATOMIC_ACQ_REL))
			pthread_atfork(NULL, NULL, tid_forget);
		my_tid = (uint32_t)gettid();
	}
	return my_tid;
}

/* Read, without blocking, what dlmd sent on the request connection that
 * nobody waits for: a release of the lockspace under this handle (a
 * REPLY with reqid 0 and -ENOTCONN) must fail the next async lock as
 * the REPLY it no longer waits for would have. */
static void poll_answers(struct ls_handle *h)
{
	unsigned char buf[DLMP_MAX_MSG];
	ssize_t n;
	int err;

	if (h->lh_ring && !__atomic_load_n(&h->lh_ring->rg_notice, __ATOMIC_ACQUIRE))
		return;		/* nothing unasked for was sent */
	LOCK(&h->lh_wlock);
	while (!h->lh_reading && !h->lh_dead) {
		h->lh_reading = true;
		UNLOCK(&h->lh_wlock);
		n = recv(h->lh_fd, buf, sizeof(buf), MSG_DONTWAIT);
		err = n < 0 ? -errno : 0;
		LOCK(&h->lh_wlock);
		h->lh_reading = false;
		if (n < 0 && (err == -EAGAIN || err == -EWOULDBLOCK || err == -EINTR))
			break;
		take_answer(h, buf, n, err);
	}
	pass_reader_turn(h);
	UNLOCK(&h->lh_wlock);
}

/*
 * Lock ids of our own block (dlmd_proto.h "Lock ids chosen by the
 * client"), lh_idlock held: 0 when lh_id_next is one to use, -EAGAIN
 * when the handle has no block (a dlmd that could not reserve one: the
 * caller then asks dlmd for the id), or the failed connection's error.
 * A used-up block is given back for a new one with IDS, on the socket
 * even with a ring: every LOCK with an id of the old block was sent
 * before it, and dlmd takes what the ring holds before each request it
 * reads from the socket, so none of them comes after the IDS, wherever
 * it went; on the ring the IDS could overtake a synchronous LOCK that
 * went on the socket as its own kick (send_packet).  A synchronous LOCK
 * whose id was picked may still wait for room to send (lh_id_unsent):
 * the IDS waits for it first.
 */
static int own_id_ready(struct ls_handle *h)
{
	if (h->lh_id_block && h->lh_id_next == h->lh_id_end) {
		struct dlmp_msg ids;
		struct dlmp_reply reply;
		int rv;

		while (h->lh_id_unsent)
			COND_WAIT(&h->lh_id_cond, &h->lh_idlock);
		memset(&ids, 0, sizeof(ids));
		ids.m_hdr.h_type = DLMP_IDS;
		ids.m_u.pair.pr_a = h->lh_id_block;
		rv = request_on(h, &ids, &reply, true);
		if (rv || !reply.rp_value || reply.rp_value2 != DLMP_IDS_BLOCK) {
			h->lh_id_block = 0;
			if (rv && rv != -ENOSPC && rv != -ENOMEM)
				return rv;	/* the connection failed */
		} else {
			h->lh_id_block = h->lh_id_next = reply.rp_value;
			h->lh_id_end = reply.rp_value + DLMP_IDS_BLOCK;
		}
	}
	return h->lh_id_block ? 0 : -EAGAIN;
}

/*
 * An async new lock with an id of our own block: sb_lkid is set and the
 * LOCK sent without waiting; its outcome is its completion AST (one with
 * an error status if dlmd cannot take it: out of memory).  -EAGAIN when
 * the handle has no block.
 */
static int lock_with_own_id(struct ls_handle *h, struct dlmp_msg *msg,
			    struct dlm_lksb *lksb)
{
	int rv;

	poll_answers(h);
	LOCK(&h->lh_idlock);
	rv = own_id_ready(h);
	if (rv) {
		UNLOCK(&h->lh_idlock);
		return rv;
	}
	msg->m_u.lock.lk_lkid = h->lh_id_next;
	msg->m_u.lock.lk_bits |= DLMP_LK_NEWID;
	/* remembered before it is sent: its completion may be read at once */
	rv = pend_add(h, &msg->m_u.lock);
	if (rv) {
		UNLOCK(&h->lh_idlock);
		return rv == -ENOMEM ? -EAGAIN : rv;
	}
	lksb->sb_lkid = h->lh_id_next;
	rv = send_unanswered(h, msg);
	if (!rv)
		h->lh_id_next++;
	else
		pend_drop(h, msg->m_u.lock.lk_lkid);
	UNLOCK(&h->lh_idlock);
	return rv;
}

/*
 * A synchronous new lock with an id of our own block (protocol 6): sb_lkid
 * is set before the LOCK is sent, so dlmd sends no interim REPLY with the
 * id when the lock has to wait (a remote master, a conflict): one packet
 * each way whatever happens.  Sent, not waited for; -EAGAIN (nothing
 * sent) when the handle has no block.
 *
 * The id is picked under lh_idlock, which is let go before req_send,
 * which may wait for room (DLMP_MAX_HELD requests in flight: synchronous
 * locks that wait for a grant): holding it there made every async
 * own-id locker of the handle wait too, for as long as those grants
 * took, the holder of the lock that blocks them perhaps among them.
 * lh_id_unsent keeps the IDS that gives the block back after this LOCK
 * (own_id_ready).  An id picked but not sent (the connection failed) is
 * simply never used.
 */
static int sync_send_own_id(struct ls_handle *h, struct dlmp_msg *msg,
			    struct waiter *w, struct dlm_lksb *lksb)
{
	int rv;

	LOCK(&h->lh_idlock);
	rv = own_id_ready(h);
	if (rv) {
		UNLOCK(&h->lh_idlock);
		return rv;
	}
	msg->m_u.lock.lk_lkid = h->lh_id_next++;
	msg->m_u.lock.lk_bits |= DLMP_LK_NEWID;
	lksb->sb_lkid = msg->m_u.lock.lk_lkid;
	h->lh_id_unsent++;
	UNLOCK(&h->lh_idlock);
	rv = req_send(h, msg, w);
	LOCK(&h->lh_idlock);
	if (!--h->lh_id_unsent) {
#ifdef _REENTRANT
		pthread_cond_broadcast(&h->lh_id_cond);
#endif
	}
	UNLOCK(&h->lh_idlock);
	return rv;
}

static int ls_lock(struct ls_handle *h, uint32_t mode, struct dlm_lksb *lksb,
		   uint32_t flags, const void *name, unsigned int namelen,
		   uint32_t parent, ast_fn astaddr, void *astarg,
		   ast_fn bastaddr, void *bastarg, const struct dlm_range *range,
		   bool sync, bool blocks, uint64_t xid)
{
	struct dlmp_msg msg;
	struct dlmp_lock *lk = &msg.m_u.lock;
	struct waiter w;
	uint32_t epoch, saved_lkid = 0;
	bool track, ok, own;
	int rv;

	if (!h)
		return -ENOTCONN;
	if (!lksb || mode > LKM_EXMODE)
		return -EINVAL;
	if ((flags & LKF_VALBLK) && !lksb->sb_lvbptr)
		return -EINVAL;
	if (!(flags & LKF_CONVERT) &&
	    (!name || namelen == 0 || namelen > DLM_RESNAME_MAXLEN))
		return -EINVAL;
	memset(&msg.m_hdr, 0, sizeof(msg.m_hdr));
	memset(lk, 0, offsetof(struct dlmp_lock, lk_lvb));
	msg.m_hdr.h_type = DLMP_LOCK;
	lk->lk_mode = (uint8_t)mode;
	lk->lk_flags = flags & ~LKF_WAIT;
	if (flags & LKF_CONVERT) {
		lk->lk_lkid = lksb->sb_lkid;
		pend_forget(h, lk->lk_lkid, sync);
	} else {
		lk->lk_namelen = (uint8_t)namelen;
		memcpy(lk->lk_name, name, namelen);
		lk->lk_parent = parent;
		if (parent)	/* a parent with children cannot go first */
			pend_forget(h, parent, false);
	}
	if (range) {
		lk->lk_bits |= DLMP_LK_RANGE;
		lk->lk_range_start = range->ra_start;
		lk->lk_range_end = range->ra_end;
	}
	if ((flags & LKF_VALBLK) && lksb->sb_lvbptr) {
		lk->lk_bits |= DLMP_LK_LVB;
		memcpy(lk->lk_lvb, lksb->sb_lvbptr, DLM_LVB_LEN);
	} else {
		memset(lk->lk_lvb, 0, DLMP_LVB_LEN);
	}
	if (sync)
		lk->lk_bits |= DLMP_LK_SYNC;
	/* who waits for it, for deadlock detection (dlmd_proto.h) */
	if (blocks)
		lk->lk_bits |= DLMP_LK_BLOCKS;
	lk->lk_tid = cur_tid();
	lk->lk_xid = xid;
	lk->lk_castaddr = is_routine(astaddr) ? (uint64_t)(uintptr_t)astaddr : 0;
	lk->lk_castparam = (uint64_t)(uintptr_t)astarg;
	/* no routine: dlmd sends this lock no blocking ASTs at all */
	lk->lk_bastaddr = is_routine(bastaddr) ? (uint64_t)(uintptr_t)bastaddr : 0;
	lk->lk_bastparam = (uint64_t)(uintptr_t)bastarg;
	lk->lk_lksb = (uint64_t)(uintptr_t)lksb;
	lksb->sb_status = EINPROG;
	if (!sync && !(flags & (LKF_CONVERT | LKF_ORPHAN)) &&
	    may_use_own_id(mode, flags, parent, range)) {
		rv = lock_with_own_id(h, &msg, lksb);
		if (rv != -EAGAIN)
			return rv;
		/* no block of ids: wait for the id as before */
	}
	/* its completion AST is promised even if the socket ends first */
	track = !sync && !(flags & LKF_ORPHAN);
	if (track) {
		rv = pend_begin(h, &epoch);
		if (rv)
			return rv;
	}
	w.w_held_ok = sync && !(flags & LKF_CONVERT);
	w.w_lksb = lksb;
	w.w_socket = false;
	rv = -EAGAIN;
	own = sync && !(flags & (LKF_CONVERT | LKF_ORPHAN)) &&
	      may_use_own_id(mode, flags, parent, range);
	if (own) {
		saved_lkid = lksb->sb_lkid;
		rv = sync_send_own_id(h, &msg, &w, lksb);
		own = rv != -EAGAIN;
	}
	if (rv == -EAGAIN)
		rv = req_send(h, &msg, &w);
	if (!rv)
		rv = req_wait(h, &w);
	if (track) {
		ok = !rv && w.w_answer.m_hdr.h_type == DLMP_REPLY &&
		     !w.w_answer.m_u.reply.rp_status;
		int trv = pend_end(h, ok, (flags & LKF_CONVERT) ? PK_CONVERT : PK_NEW,
				   (flags & LKF_CONVERT) ? lk->lk_lkid :
				   w.w_answer.m_u.reply.rp_value, epoch,
				   lk->lk_castaddr, lk->lk_castparam, lk->lk_lksb);

		if (trv)
			rv = trv;
	}
	if (rv)
		return rv;
	if (w.w_answer.m_hdr.h_type == DLMP_COMP_REPLY) {
		if (!sync)
			return -EPROTO;
		comp_to_lksb(&w.w_answer.m_u.comp, lksb);
		if (flags & LKF_CONVERT)
			pend_sync_done(h, lk->lk_lkid, w.w_answer.m_u.comp.cp_status);
		return 0;
	}
	if (w.w_answer.m_u.reply.rp_status) {
		if (own)	/* refused: no lock has that id */
			lksb->sb_lkid = saved_lkid;
		return w.w_answer.m_u.reply.rp_status;
	}
	if (!(flags & LKF_CONVERT))
		lksb->sb_lkid = w.w_answer.m_u.reply.rp_value;
	if ((flags & LKF_ORPHAN) || sync) {
		/* An adoption is done when the reply comes and no AST
		 * follows (as with the kernel, whose write() returns the lock
		 * id): the status block is complete now. */
		lksb->sb_status = 0;
		lksb->sb_flags = 0;
	}
	return 0;
}

/*
 * An async unlock of a lock libdlm knows granted and idle, sent with
 * DLMP_UL_NOREPLY (dlmd_proto.h "Unlocks without a REPLY"): its outcome
 * is its completion AST, which the record (now PD_UNLOCKING) promises
 * even if the AST socket ends first.  -EAGAIN: not such a lock, the
 * caller waits for the REPLY instead.
 */
static int unlock_noreply(struct ls_handle *h, struct dlmp_msg *msg)
{
	const struct dlmp_unlock *ul = &msg->m_u.unlock;
	struct pending *pd, old;
	int rv;

	LOCK(&h->lh_plock);
	if (h->lh_gone) {
		UNLOCK(&h->lh_plock);
		return -ENOTCONN;
	}
	pd = pend_find_locked(h, ul->ul_lkid);
	if (!pd || pd->pd_waiting || pd->pd_early || !pd->pd_keep) {
		UNLOCK(&h->lh_plock);
		return -EAGAIN;
	}
	old = *pd;
	pd->pd_waiting = true;
	pd->pd_epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
	pd->pd_castparam = ul->ul_castparam;
	if (ul->ul_castaddr)
		pd->pd_castaddr = ul->ul_castaddr;
	if (ul->ul_lksb)
		pd->pd_lksb = ul->ul_lksb;
	UNLOCK(&h->lh_plock);
	msg->m_u.unlock.ul_bits |= DLMP_UL_NOREPLY;
	rv = send_unanswered(h, msg);
	if (rv) {
		/* not sent: the lock is as it was */
		LOCK(&h->lh_plock);
		pd = pend_find_locked(h, old.pd_lkid);
		if (pd && pd->pd_waiting) {
			old.pd_next = pd->pd_next;
			*pd = old;
		}
		UNLOCK(&h->lh_plock);
	}
	return rv;
}

/* An UNLOCK.  *nothing is set when a cancel had nothing to cancel: no
 * completion follows and the status block keeps its status.  'sync':
 * as for ls_lock. */
static int ls_unlock(struct ls_handle *h, uint32_t lkid, uint32_t flags,
		     struct dlm_lksb *lksb, ast_fn astaddr, void *astarg,
		     bool *nothing, bool sync)
{
	struct dlmp_msg msg;
	struct dlmp_unlock *ul = &msg.m_u.unlock;
	struct waiter w;
	int old_status = lksb ? lksb->sb_status : 0, rv;
	uint32_t epoch;
	bool track, ok;

	if (!h)
		return -ENOTCONN;
	if (!lkid)
		return -EINVAL;
	memset(&msg.m_hdr, 0, sizeof(msg.m_hdr));
	memset(ul, 0, sizeof(*ul));
	msg.m_hdr.h_type = DLMP_UNLOCK;
	ul->ul_lkid = lkid;
	ul->ul_flags = flags & ~LKF_WAIT;
	ul->ul_castparam = (uint64_t)(uintptr_t)astarg;
	ul->ul_castaddr = (uint64_t)(uintptr_t)astaddr;
	ul->ul_lksb = (uint64_t)(uintptr_t)lksb;
	if ((flags & LKF_VALBLK) && lksb && lksb->sb_lvbptr) {
		ul->ul_bits |= DLMP_LK_LVB;
		memcpy(ul->ul_lvb, lksb->sb_lvbptr, DLM_LVB_LEN);
	}
	if (sync)
		ul->ul_bits |= DLMP_LK_SYNC;
	if (lksb)
		lksb->sb_status = EINPROG;
	if (!sync && !(ul->ul_flags & ~LKF_VALBLK) &&
	    (!(ul->ul_flags & LKF_VALBLK) || (ul->ul_bits & DLMP_LK_LVB))) {
		rv = unlock_noreply(h, &msg);
		if (rv != -EAGAIN) {
			if (rv && lksb)
				lksb->sb_status = old_status;
			return rv;
		}
	}
	pend_forget(h, lkid, sync);
	/* a cancel's completion is the cancelled request's */
	track = !sync && !(flags & LKF_CANCEL);
	if (track) {
		rv = pend_begin(h, &epoch);
		if (rv) {
			if (lksb)
				lksb->sb_status = old_status;
			return rv;
		}
	}
	w.w_held_ok = false;
	w.w_lksb = NULL;
	w.w_socket = false;
	rv = req_send(h, &msg, &w);
	if (!rv)
		rv = req_wait(h, &w);
	if (track) {
		ok = !rv && w.w_answer.m_hdr.h_type == DLMP_REPLY &&
		     !w.w_answer.m_u.reply.rp_status &&
		     w.w_answer.m_u.reply.rp_value != DLMP_UNLOCK_NOTHING;
		int trv = pend_end(h, ok, PK_UNLOCK, lkid, epoch, ul->ul_castaddr,
				   ul->ul_castparam, ul->ul_lksb);

		if (trv)
			rv = trv;
	}
	if (rv)
		return rv;
	if (w.w_answer.m_hdr.h_type == DLMP_COMP_REPLY) {
		if (!sync || !lksb)
			return -EPROTO;
		comp_to_lksb(&w.w_answer.m_u.comp, lksb);
		pend_sync_done(h, lkid, w.w_answer.m_u.comp.cp_status);
		return 0;
	}
	rv = w.w_answer.m_u.reply.rp_status;
	if (!rv && w.w_answer.m_u.reply.rp_value == DLMP_UNLOCK_NOTHING) {
		if (lksb)
			lksb->sb_status = old_status;
		if (nothing)
			*nothing = true;
	} else if (!rv && sync && lksb) {
		/* answered at once though we asked to wait: the daemon had
		 * no record of the lock's callbacks (its memory ran out), so
		 * no completion of any kind follows */
		lksb->sb_status = (flags & LKF_CANCEL) ? ECANCEL : EUNLOCK;
	}
	return rv;
}

/* The _wait forms' final status: the pthread library leaves it in the
 * lksb and returns 0; the lt library turns failures into -1/errno. */
static int wait_result(const struct dlm_lksb *lksb)
{
#ifdef _REENTRANT
	(void)lksb;
	return 0;
#else
	if (lksb->sb_status == 0 || lksb->sb_status == EUNLOCK)
		return 0;
	return -lksb->sb_status;
#endif
}

static int ls_lock_wait(struct ls_handle *h, uint32_t mode, struct dlm_lksb *lksb,
			uint32_t flags, const void *name, unsigned int namelen,
			uint32_t parent, void *bastarg, ast_fn bastaddr,
			const struct dlm_range *range)
{
	struct sync_wait sw = { .sw_h = h, .sw_done = false };
	int rv;

	if (flags & LKF_ORPHAN)	/* adopted at once: no AST to wait for */
		return ls_lock(h, mode, lksb, flags, name, namelen, parent,
			       NULL, NULL, bastaddr, bastarg, range, false,
			       true, 0);
	if (!in_ast) {
		rv = ls_lock(h, mode, lksb, flags, name, namelen, parent, NULL,
			     NULL, bastaddr, bastarg, range, true, true, 0);
		return rv ? rv : wait_result(lksb);
	}
	rv = ls_lock(h, mode, lksb, flags, name, namelen, parent, sync_ast, &sw,
		     bastaddr, bastarg, range, false, true, 0);
	if (rv)
		return rv;
	rv = sync_wait(h, &sw);
	if (rv)
		return rv;
	return wait_result(lksb);
}

static int ls_unlock_wait(struct ls_handle *h, uint32_t lkid, uint32_t flags,
			  struct dlm_lksb *lksb)
{
	struct sync_wait sw = { .sw_h = h, .sw_done = false };
	bool nothing = false;
	int rv;

	if (!lksb)
		return -EINVAL;
	if (!in_ast) {
		rv = ls_unlock(h, lkid, flags, lksb, NULL, NULL, &nothing, true);
		return rv || nothing ? rv : wait_result(lksb);
	}
	rv = ls_unlock(h, lkid, flags, lksb, sync_ast, &sw, &nothing, false);
	if (rv || nothing)
		return rv;
	rv = sync_wait(h, &sw);
	if (rv)
		return rv;
	return wait_result(lksb);
}

int dlm_ls_lock(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		uint32_t flags, const void *name, unsigned int namelen,
		uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
		void (*bastaddr)(void *astarg), void *range)
{
	if (flags & LKF_WAIT)
		return ret_errno(ls_lock_wait(ls, mode, lksb, flags, name, namelen,
					      parent, astarg, bastaddr, range));
	return ret_errno(ls_lock(ls, mode, lksb, flags, name, namelen, parent,
				 astaddr, astarg, bastaddr, astarg, range, false,
				 false, 0));
}

int dlm_ls_lockx(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		 uint32_t flags, const void *name, unsigned int namelen,
		 uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
		 void (*bastaddr)(void *astarg), uint64_t *xid, uint64_t *timeout)
{
	/* A non-zero transaction id is deadlock detection's waiter: the
	 * application blocks on the transaction's requests (dlmd_proto.h).
	 * Lock timeouts are gone (LKF_TIMEOUT is refused). */
	(void)timeout;
	return ret_errno(ls_lock(ls, mode, lksb, flags, name, namelen, parent,
				 astaddr, astarg, bastaddr, astarg, NULL, false,
				 false, xid ? *xid : 0));
}

int dlm_ls_unlock(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags,
		  struct dlm_lksb *lksb, void *astarg)
{
	return ret_errno(ls_unlock(ls, lkid, flags, lksb, NULL, astarg, NULL, false));
}

int dlm_ls_lock_wait(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		     uint32_t flags, const void *name, unsigned int namelen,
		     uint32_t parent, void *bastarg,
		     void (*bastaddr)(void *bastarg), void *range)
{
	return ret_errno(ls_lock_wait(ls, mode, lksb, flags, name, namelen, parent,
				      bastarg, bastaddr, range));
}

int dlm_ls_unlock_wait(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags,
		       struct dlm_lksb *lksb)
{
	return ret_errno(ls_unlock_wait(ls, lkid, flags, lksb));
}

/* A request whose body is two words (DEADLOCK, TOKEN, PURGE): its status,
 * the answer in *reply. */
static int pair_request(struct ls_handle *h, uint16_t type, uint32_t a,
			uint32_t b, struct dlmp_reply *reply)
{
	struct dlmp_msg msg;

	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = type;
	msg.m_u.pair.pr_a = a;
	msg.m_u.pair.pr_b = b;
	return handle_request(h, &msg, reply);
}

int dlm_ls_deadlock_cancel(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags)
{
	struct ls_handle *h = ls;
	struct dlmp_reply reply;

	if (!h)
		return ret_errno(-ENOTCONN);
	return ret_errno(pair_request(h, DLMP_DEADLOCK, lkid, flags, &reply));
}

int dlm_ls_lock_token(dlm_lshandle_t ls, uint32_t lkid, uint64_t *token)
{
	struct ls_handle *h = ls;
	struct dlmp_reply reply;
	int rv;

	if (!h)
		return ret_errno(-ENOTCONN);
	if (!token)
		return ret_errno(-EINVAL);
	rv = pair_request(h, DLMP_TOKEN, lkid, 0, &reply);
	if (rv == 0)
		*token = (uint64_t)reply.rp_value | ((uint64_t)reply.rp_value2 << 32);
	return ret_errno(rv < 0 ? rv : 0);
}

int dlm_ls_purge(dlm_lshandle_t ls, int nodeid, int pid)
{
	struct ls_handle *h = ls;
	struct dlmp_reply reply;
	int rv;

	if (!h)
		return ret_errno(-ENOTCONN);
	if (nodeid < 0 || pid < 0)
		return ret_errno(-EINVAL);
	rv = pair_request(h, DLMP_PURGE, (uint32_t)nodeid, (uint32_t)pid, &reply);
	/* Our own locks purged: their unread ASTs are void from now on.  (A
	 * dlmd without purge epochs answers 0, which changes nothing.) */
	if (rv == 0 && (int32_t)(reply.rp_value2 -
				 __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE)) > 0) {
		__atomic_store_n(&h->lh_ast_epoch, reply.rp_value2, __ATOMIC_RELEASE);
		pend_purged(h);
	}
	return ret_errno(rv < 0 ? rv : 0);
}

/* ------------------------------------------------------------------ */
/* the default lockspace                                               */
/* ------------------------------------------------------------------ */

#ifdef _REENTRANT
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
static struct ls_handle *default_ls;

/* The default lockspace handle, opened (or created) on first use. */
static struct ls_handle *get_default(int *err)
{
	struct ls_handle *h;

#ifdef _REENTRANT
	pthread_mutex_lock(&default_lock);
#endif
	h = default_ls;
	if (!h) {
		h = ls_new(DEFAULT_LS_NAME, 0, 0, false, err);
		if (!h && *err == -ENOENT)
			h = ls_new(DEFAULT_LS_NAME, DEFAULT_LS_MODE, 0, true, err);
		default_ls = h;
	}
#ifdef _REENTRANT
	pthread_mutex_unlock(&default_lock);
#endif
	return h;
}

int dlm_lock(uint32_t mode, struct dlm_lksb *lksb, uint32_t flags,
	     const void *name, unsigned int namelen, uint32_t parent,
	     void (*astaddr)(void *astarg), void *astarg,
	     void (*bastaddr)(void *astarg), void *range)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return dlm_ls_lock(h, mode, lksb, flags, name, namelen, parent, astaddr,
			   astarg, bastaddr, range);
}

int dlm_lock_wait(uint32_t mode, struct dlm_lksb *lksb, uint32_t flags,
		  const void *name, unsigned int namelen, uint32_t parent,
		  void *bastarg, void (*bastaddr)(void *bastarg), void *range)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return ret_errno(ls_lock_wait(h, mode, lksb, flags, name, namelen, parent,
				      bastarg, bastaddr, range));
}

int dlm_unlock(uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb, void *astarg)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return ret_errno(ls_unlock(h, lkid, flags, lksb, NULL, astarg, NULL, false));
}

int dlm_unlock_wait(uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return ret_errno(ls_unlock_wait(h, lkid, flags, lksb));
}

int dlm_lock_token(uint32_t lkid, uint64_t *token)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return dlm_ls_lock_token(h, lkid, token);
}

int dlm_get_fd(void)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return h->lh_ast_fd;
}

/* ------------------------------------------------------------------ */
/* versions                                                            */
/* ------------------------------------------------------------------ */

int dlm_kernel_version(uint32_t *maj, uint32_t *min, uint32_t *patch)
{
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	uint32_t reqid = 0;
	int fd, rv;

	fd = connect_daemon();
	if (fd < 0)
		return ret_errno(fd);
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_VERSION_REQ;
	rv = do_request(fd, &reqid, &msg, -1, &reply);
	close(fd);
	if (rv)
		return ret_errno(rv);
	/* A daemon that speaks our protocol gives the kernel device
	 * interface's semantics: report that version, as the established
	 * library reports the kernel's. */
	if (reply.rp_value != DLMP_VERSION_MAJOR)
		return ret_errno(-EPROTO);
	if (maj)
		*maj = DLMP_DEVICE_COMPAT_MAJOR;
	if (min)
		*min = DLMP_DEVICE_COMPAT_MINOR;
	if (patch)
		*patch = DLMP_DEVICE_COMPAT_PATCH;
	return 0;
}

void dlm_library_version(uint32_t *maj, uint32_t *min, uint32_t *patch)
{
	if (maj)
		*maj = DLMP_DEVICE_COMPAT_MAJOR;
	if (min)
		*min = DLMP_DEVICE_COMPAT_MINOR;
	if (patch)
		*patch = DLMP_DEVICE_COMPAT_PATCH;
}

/* ------------------------------------------------------------------ */
/* pthread helpers (libdlm.so only)                                    */
/* ------------------------------------------------------------------ */

#ifdef _REENTRANT
static void *ast_thread(void *arg)
{
	struct ls_handle *h = arg;
	struct pollfd pfd[2] = {
		{ .fd = h->lh_ast_fd, .events = POLLIN },
		{ .fd = h->lh_stop[0], .events = POLLIN },
	};

	/* Runs until dlm_close_lockspace / dlm_pthread_cleanup writes to
	 * the stop pipe or the daemon goes away. */
	for (;;) {
		int n = poll(pfd, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || pfd[1].revents)
			break;
		if (pfd[0].revents & POLLIN) {
			if (dispatch_fd(h->lh_ast_fd, h) == -ENOTCONN)
				break;
		} else if (pfd[0].revents & (POLLHUP | POLLERR)) {
			/* the end: dispatch_fd completes what waits for it */
			dispatch_fd(h->lh_ast_fd, h);
			break;
		}
	}
	return NULL;
}

int dlm_ls_pthread_init(dlm_lshandle_t ls)
{
	struct ls_handle *h = ls;
	int rv;

	if (!h)
		return ret_errno(-ENOTCONN);
	pthread_mutex_lock(&h->lh_lock);
	if (h->lh_has_thread) {
		pthread_mutex_unlock(&h->lh_lock);
		return ret_errno(-EEXIST);
	}
	if (pipe2(h->lh_stop, O_CLOEXEC) < 0) {
		rv = -errno;
		pthread_mutex_unlock(&h->lh_lock);
		return ret_errno(rv);
	}
	h->lh_thread_pid = getpid();
	rv = -pthread_create(&h->lh_thread, NULL, ast_thread, h);
	if (rv) {
		close(h->lh_stop[0]);
		close(h->lh_stop[1]);
	} else {
		h->lh_has_thread = true;
	}
	pthread_mutex_unlock(&h->lh_lock);
	return ret_errno(rv);
}

int dlm_pthread_init(void)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return dlm_ls_pthread_init(h);
}

int dlm_pthread_cleanup(void)
{
	struct ls_handle *h;

	pthread_mutex_lock(&default_lock);
	h = default_ls;
	default_ls = NULL;
	pthread_mutex_unlock(&default_lock);
	if (h)
		dlm_close_lockspace(h);
	return 0;
}

/* lock_resource / unlock_resource: synchronous locks in the default
 * lockspace; the status blocks live here, found by lock id. */
struct resource_lock {
	struct resource_lock	*rl_next;
	struct dlm_lksb		rl_lksb;
};

static pthread_mutex_t resource_locks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct resource_lock *resource_locks;

int lock_resource(const char *resource, int mode, int flags, int *lockid)
{
	struct resource_lock *rl;
	int err = 0, rv;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	if (!resource || !lockid || mode < 0)
		return ret_errno(-EINVAL);
	if (flags & LKF_CONVERT) {
		/* Convert the lock *lockid names, in its own status block
		 * (it stays on the list; the caller does not unlock it
		 * meanwhile, as with the established library). */
		pthread_mutex_lock(&resource_locks_lock);
		for (rl = resource_locks; rl; rl = rl->rl_next)
			if ((int)rl->rl_lksb.sb_lkid == *lockid)
				break;
		pthread_mutex_unlock(&resource_locks_lock);
		if (!rl)
			return ret_errno(-ENOENT);
		rv = ls_lock_wait(h, (uint32_t)mode, &rl->rl_lksb, (uint32_t)flags,
				  resource, (unsigned int)strlen(resource), 0, NULL,
				  NULL, NULL);
		if (!rv && rl->rl_lksb.sb_status)
			rv = -rl->rl_lksb.sb_status;
		return ret_errno(rv);
	}
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return ret_errno(-ENOMEM);
	rv = ls_lock_wait(h, (uint32_t)mode, &rl->rl_lksb, (uint32_t)flags, resource,
			  (unsigned int)strlen(resource), 0, NULL, NULL, NULL);
	if (!rv && rl->rl_lksb.sb_status)
		rv = -rl->rl_lksb.sb_status;
	if (rv) {
		free(rl);
		return ret_errno(rv);
	}
	*lockid = (int)rl->rl_lksb.sb_lkid;
	pthread_mutex_lock(&resource_locks_lock);
	rl->rl_next = resource_locks;
	resource_locks = rl;
	pthread_mutex_unlock(&resource_locks_lock);
	return 0;
}

int unlock_resource(int lockid)
{
	struct resource_lock *rl = NULL, **pp;
	int err = 0, rv;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	pthread_mutex_lock(&resource_locks_lock);
	for (pp = &resource_locks; *pp; pp = &(*pp)->rl_next) {
		if ((int)(*pp)->rl_lksb.sb_lkid == lockid) {
			rl = *pp;
			*pp = rl->rl_next;
			break;
		}
	}
	pthread_mutex_unlock(&resource_locks_lock);
	if (!rl)
		return ret_errno(-ENOENT);
	rv = ls_unlock_wait(h, rl->rl_lksb.sb_lkid, 0, &rl->rl_lksb);
	if (!rv && rl->rl_lksb.sb_status != EUNLOCK)
		rv = -rl->rl_lksb.sb_status;
	free(rl);
	return ret_errno(rv);
}
#endif /* _REENTRANT */
