/*
 * libdlm/libdlm.c - the client library: libdlm.so.3 and, compiled
 * without _REENTRANT, libdlm_lt.so.3.
 *
 * A lockspace handle is two sockets to dlmd (protocol: dlmd_proto.h):
 *
 *   lh_fd      the request connection: one request, one reply, in turn
 *              (lh_req_lock serialises threads sharing the handle);
 *   lh_ast_fd  our end of the AST socketpair whose other end was passed
 *              to the daemon with LS_OPEN; dlm_ls_get_fd() returns it and
 *              dlm_dispatch() reads it.
 *
 * The daemon keeps the AST addresses, arguments and lksb address a lock
 * request gives and returns them in each AST packet, so dispatching needs
 * no table here: the packet says which lksb to fill and which function to
 * call with which argument (as the kernel device does).
 *
 * Synchronous calls (the _wait forms, lock_resource).  The request is
 * submitted with a private completion AST (sync_ast) whose argument is a
 * struct sync_wait on the caller's stack; the caller then waits until
 * sync_ast marks it done.  Someone must read the AST socket meanwhile:
 *   - if the handle has an AST thread (dlm_ls_pthread_init) and we are
 *     not it, we sleep on the handle's condition variable; the thread's
 *     dispatch runs sync_ast, which broadcasts it;
 *   - otherwise one waiting thread at a time becomes the reader
 *     (lh_reading) and dispatches every AST that arrives, its own and
 *     others', while the rest sleep; when it is done it hands over.  A
 *     reader polls with a timeout (SYNC_POLL_MS) so that an application
 *     thread calling dlm_dispatch() on the same fd cannot leave it
 *     blocked on an AST that thread already ran;
 *   - a wait called from inside an AST (by the AST thread or the current
 *     reader) dispatches inline.
 * In libdlm_lt there are no threads: the caller reads until its
 * operation is done.
 *
 * Purging one's own locks (dlm_ls_purge with the caller's pid) drops the
 * ASTs of those locks that were not read yet, as the kernel frees a
 * purged process's queued callbacks.  dlmd cannot take back what it
 * already wrote to the AST socket, so it stamps each AST with the
 * connection's purge epoch (dlmd_proto.h) and the PURGE reply gives the
 * new one; dispatching drops an AST of an older epoch.  dlm_dispatch()
 * is given only an fd: a list of the open handles (open_handles) finds
 * the fd's epoch.
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
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef _REENTRANT
#include <pthread.h>
#endif

#include "libdlm/libdlm.h"
#include "libdlm/dlmd_proto.h"

#define DEFAULT_LS_NAME		"default"
#define DEFAULT_LS_MODE		0600
#define SYNC_POLL_MS		100	/* a sync reader re-checks this often */
#define DISPATCH_MAX		1024	/* ASTs run per dlm_dispatch() call */

#ifdef _REENTRANT
#define MUTEX_T			pthread_mutex_t
#define MUTEX_STATIC_INIT	PTHREAD_MUTEX_INITIALIZER
#define MUTEX_INIT(m)		pthread_mutex_init(m, NULL)
#define MUTEX_DESTROY(m)	pthread_mutex_destroy(m)
#define LOCK(m)			pthread_mutex_lock(m)
#define UNLOCK(m)		pthread_mutex_unlock(m)
#else
#define MUTEX_T			int
#define MUTEX_STATIC_INIT	0
#define MUTEX_INIT(m)		(*(m) = 0)
#define MUTEX_DESTROY(m)	((void)(m))
#define LOCK(m)			((void)(m))
#define UNLOCK(m)		((void)(m))
#endif

struct ls_handle {
	int		lh_fd;
	int		lh_ast_fd;
	uint32_t	lh_reqid;
	char		lh_name[DLM_LOCKSPACE_LEN + 1];
	MUTEX_T		lh_req_lock;	/* one request at a time on lh_fd */
	uint32_t	lh_ast_epoch;	/* ASTs stamped older: dropped (atomic) */
	struct ls_handle *lh_next;	/* in open_handles */
#ifdef _REENTRANT
	pthread_mutex_t	lh_lock;	/* sync waits, reader hand-over */
	pthread_cond_t	lh_cond;
	bool		lh_reading;
	pthread_t	lh_reader;
	bool		lh_has_thread;
	pthread_t	lh_thread;
	int		lh_stop[2];	/* pipe that stops the AST thread */
#endif
};

/* A synchronous caller's completion record (argument of sync_ast). */
struct sync_wait {
	struct ls_handle	*sw_h;
	bool			sw_done;
};

/* Every handle whose AST fd is open, so that dlm_dispatch(fd) can find
 * the fd's purge epoch.  A process has few handles. */
static MUTEX_T open_handles_lock = MUTEX_STATIC_INIT;
static struct ls_handle *open_handles;

static int ret_errno(int rv)
{
	if (rv < 0) {
		errno = -rv;
		return -1;
	}
	return rv;
}

static const char *socket_path(void)
{
	const char *p = getenv(DLMD_SOCKET_ENV);

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
	/* Bounded: the daemon answers every request exactly once, in order. */
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

static int handle_request(struct ls_handle *h, struct dlmp_msg *msg,
			  struct dlmp_reply *reply)
{
	int rv;

	LOCK(&h->lh_req_lock);
	rv = do_request(h->lh_fd, &h->lh_reqid, msg, -1, reply);
	UNLOCK(&h->lh_req_lock);
	return rv;
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

static void handle_register(struct ls_handle *h)
{
	LOCK(&open_handles_lock);
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

static void handle_free(struct ls_handle *h)
{
	if (h->lh_ast_fd >= 0)
		handle_unregister(h);
	if (h->lh_fd >= 0)
		close(h->lh_fd);
	if (h->lh_ast_fd >= 0)
		close(h->lh_ast_fd);
	MUTEX_DESTROY(&h->lh_req_lock);
#ifdef _REENTRANT
	pthread_mutex_destroy(&h->lh_lock);
	pthread_cond_destroy(&h->lh_cond);
#endif
	free(h);
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
	MUTEX_INIT(&h->lh_req_lock);
#ifdef _REENTRANT
	pthread_mutex_init(&h->lh_lock, NULL);
	pthread_cond_init(&h->lh_cond, NULL);
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
	rv = do_request(fd, &h->lh_reqid, &msg, sv[1], &reply);
	close(sv[1]);
	if (rv) {
		close(sv[0]);
		*err = rv;
		handle_free(h);
		return NULL;
	}
	h->lh_ast_fd = sv[0];
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

/* Was this AST written before the latest purge of our own locks?  Its
 * header's reqid carries the purge epoch it was made in (serial number
 * arithmetic: the epoch wraps). */
static bool is_stale_ast(const struct dlmp_msg *m, uint32_t epoch)
{
	return (int32_t)(m->m_hdr.h_reqid - epoch) < 0;
}

/* Run up to DISPATCH_MAX waiting ASTs of handle 'h' (NULL: found by its
 * fd), dropping those made before a purge of our own locks.  0, or
 * negative errno (-ENOTCONN when the daemon closed the socket). */
static int dispatch_fd(int fd, struct ls_handle *h)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;

	for (int i = 0; i < DISPATCH_MAX; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		uint32_t epoch = 0;
		bool have_epoch = true;

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOTCONN;
		if (dlmp_decode(buf, (size_t)n, &m) || m.m_hdr.h_type != DLMP_AST)
			continue;	/* not from dlmd: ignore */
		/* read per AST: a purge may end while we dispatch */
		if (h)
			epoch = __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE);
		else
			have_epoch = fd_ast_epoch(fd, &epoch);
		if (have_epoch && is_stale_ast(&m, epoch))
			continue;	/* its lock was purged */
		run_ast(&m.m_u.ast);
	}
	return 0;
}

int dlm_dispatch(int fd)
{
	return ret_errno(dispatch_fd(fd, NULL));
}

static void sync_ast(void *arg)
{
	struct sync_wait *sw = arg;

#ifdef _REENTRANT
	struct ls_handle *h = sw->sw_h;

	/* 'sw' may vanish as soon as the waiter sees sw_done. */
	pthread_mutex_lock(&h->lh_lock);
	sw->sw_done = true;
	pthread_cond_broadcast(&h->lh_cond);
	pthread_mutex_unlock(&h->lh_lock);
#else
	sw->sw_done = true;
#endif
}

/* Read the AST socket once (waiting up to SYNC_POLL_MS) and dispatch. */
static int read_once(struct ls_handle *h)
{
	struct pollfd pfd = { .fd = h->lh_ast_fd, .events = POLLIN };
	int n = poll(&pfd, 1, SYNC_POLL_MS);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return 0;
	return dispatch_fd(h->lh_ast_fd, h);
}

/* Wait until sync_ast has run for 'sw'.  0 or negative errno. */
static int sync_wait(struct ls_handle *h, struct sync_wait *sw)
{
	int rv = 0;

#ifdef _REENTRANT
	pthread_t self = pthread_self();
	bool inline_reader = (h->lh_has_thread && pthread_equal(h->lh_thread, self));

	pthread_mutex_lock(&h->lh_lock);
	if (h->lh_reading && pthread_equal(h->lh_reader, self))
		inline_reader = true;
	while (!sw->sw_done && !rv) {
		if (inline_reader) {
			pthread_mutex_unlock(&h->lh_lock);
			rv = read_once(h);
			pthread_mutex_lock(&h->lh_lock);
			continue;
		}
		if (h->lh_has_thread || h->lh_reading) {
			pthread_cond_wait(&h->lh_cond, &h->lh_lock);
			continue;
		}
		h->lh_reading = true;
		h->lh_reader = self;
		pthread_mutex_unlock(&h->lh_lock);
		rv = read_once(h);
		pthread_mutex_lock(&h->lh_lock);
		h->lh_reading = false;
		pthread_cond_broadcast(&h->lh_cond);
	}
	pthread_mutex_unlock(&h->lh_lock);
#else
	while (!sw->sw_done && !rv)
		rv = read_once(h);
#endif
	return rv;
}

/* ------------------------------------------------------------------ */
/* locking                                                             */
/* ------------------------------------------------------------------ */

static int ls_lock(struct ls_handle *h, uint32_t mode, struct dlm_lksb *lksb,
		   uint32_t flags, const void *name, unsigned int namelen,
		   uint32_t parent, ast_fn astaddr, void *astarg,
		   ast_fn bastaddr, void *bastarg, const struct dlm_range *range)
{
	struct dlmp_msg msg;
	struct dlmp_lock *lk = &msg.m_u.lock;
	struct dlmp_reply reply;
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
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_LOCK;
	lk->lk_mode = (uint8_t)mode;
	lk->lk_flags = flags & ~LKF_WAIT;
	if (flags & LKF_CONVERT) {
		lk->lk_lkid = lksb->sb_lkid;
	} else {
		lk->lk_namelen = (uint8_t)namelen;
		memcpy(lk->lk_name, name, namelen);
		lk->lk_parent = parent;
	}
	if (range) {
		lk->lk_bits |= DLMP_LK_RANGE;
		lk->lk_range_start = range->ra_start;
		lk->lk_range_end = range->ra_end;
	}
	if ((flags & LKF_VALBLK) && lksb->sb_lvbptr) {
		lk->lk_bits |= DLMP_LK_LVB;
		memcpy(lk->lk_lvb, lksb->sb_lvbptr, DLM_LVB_LEN);
	}
	lk->lk_castaddr = is_routine(astaddr) ? (uint64_t)(uintptr_t)astaddr : 0;
	lk->lk_castparam = (uint64_t)(uintptr_t)astarg;
	/* no routine: dlmd sends this lock no blocking ASTs at all */
	lk->lk_bastaddr = is_routine(bastaddr) ? (uint64_t)(uintptr_t)bastaddr : 0;
	lk->lk_bastparam = (uint64_t)(uintptr_t)bastarg;
	lk->lk_lksb = (uint64_t)(uintptr_t)lksb;
	lksb->sb_status = EINPROG;
	rv = handle_request(h, &msg, &reply);
	if (rv)
		return rv;
	if (!(flags & LKF_CONVERT))
		lksb->sb_lkid = reply.rp_value;
	if (flags & LKF_ORPHAN) {
		/* An adoption is done when the reply comes and no AST
		 * follows (as with the kernel, whose write() returns the lock
		 * id): the status block is complete now. */
		lksb->sb_status = 0;
		lksb->sb_flags = 0;
	}
	return 0;
}

/* *nothing is set when a cancel had nothing to cancel: no AST follows and
 * the status block keeps its status. */
static int ls_unlock(struct ls_handle *h, uint32_t lkid, uint32_t flags,
		     struct dlm_lksb *lksb, ast_fn astaddr, void *astarg,
		     bool *nothing)
{
	struct dlmp_msg msg;
	struct dlmp_unlock *ul = &msg.m_u.unlock;
	struct dlmp_reply reply;
	int old_status = lksb ? lksb->sb_status : 0, rv;

	if (!h)
		return -ENOTCONN;
	if (!lkid)
		return -EINVAL;
	memset(&msg, 0, sizeof(msg));
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
	if (lksb)
		lksb->sb_status = EINPROG;
	rv = handle_request(h, &msg, &reply);
	if (!rv && reply.rp_value == DLMP_UNLOCK_NOTHING) {
		if (lksb)
			lksb->sb_status = old_status;
		if (nothing)
			*nothing = true;
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
			       NULL, NULL, bastaddr, bastarg, range);
	rv = ls_lock(h, mode, lksb, flags, name, namelen, parent, sync_ast, &sw,
		     bastaddr, bastarg, range);
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
	rv = ls_unlock(h, lkid, flags, lksb, sync_ast, &sw, &nothing);
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
				 astaddr, astarg, bastaddr, astarg, range));
}

int dlm_ls_lockx(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		 uint32_t flags, const void *name, unsigned int namelen,
		 uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
		 void (*bastaddr)(void *astarg), uint64_t *xid, uint64_t *timeout)
{
	/* Transaction ids only fed the kernel's removed deadlock detector
	 * and lock timeouts are gone (LKF_TIMEOUT is refused). */
	(void)xid;
	(void)timeout;
	return ret_errno(ls_lock(ls, mode, lksb, flags, name, namelen, parent,
				 astaddr, astarg, bastaddr, astarg, NULL));
}

int dlm_ls_unlock(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags,
		  struct dlm_lksb *lksb, void *astarg)
{
	return ret_errno(ls_unlock(ls, lkid, flags, lksb, NULL, astarg, NULL));
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

int dlm_ls_deadlock_cancel(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags)
{
	struct ls_handle *h = ls;
	struct dlmp_msg msg;
	struct dlmp_reply reply;

	if (!h)
		return ret_errno(-ENOTCONN);
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_DEADLOCK;
	msg.m_u.pair.pr_a = lkid;
	msg.m_u.pair.pr_b = flags;
	return ret_errno(handle_request(h, &msg, &reply));
}

int dlm_ls_purge(dlm_lshandle_t ls, int nodeid, int pid)
{
	struct ls_handle *h = ls;
	struct dlmp_msg msg;
	struct dlmp_reply reply;
	int rv;

	if (!h)
		return ret_errno(-ENOTCONN);
	if (nodeid < 0 || pid < 0)
		return ret_errno(-EINVAL);
	memset(&msg, 0, sizeof(msg));
	msg.m_hdr.h_type = DLMP_PURGE;
	msg.m_u.pair.pr_a = (uint32_t)nodeid;
	msg.m_u.pair.pr_b = (uint32_t)pid;
	rv = handle_request(h, &msg, &reply);
	/* Our own locks purged: their unread ASTs are void from now on.  (A
	 * dlmd without purge epochs answers 0, which changes nothing.) */
	if (rv == 0 && (int32_t)(reply.rp_value2 -
				 __atomic_load_n(&h->lh_ast_epoch, __ATOMIC_ACQUIRE)) > 0)
		__atomic_store_n(&h->lh_ast_epoch, reply.rp_value2, __ATOMIC_RELEASE);
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
	return ret_errno(ls_unlock(h, lkid, flags, lksb, NULL, astarg, NULL));
}

int dlm_unlock_wait(uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb)
{
	int err = 0;
	struct ls_handle *h = get_default(&err);

	if (!h)
		return ret_errno(err);
	return ret_errno(ls_unlock_wait(h, lkid, flags, lksb));
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
