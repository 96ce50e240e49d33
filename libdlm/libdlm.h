/*
 * libdlm.h - the dlmd client library.
 *
 * API-compatible with the established libdlm 4.x: the same functions,
 * types, constants and numeric values, so a program written for that
 * library compiles unchanged against this header and runs against our
 * libdlm.so.3 (or libdlm_lt.so.3, without pthreads).  As with the
 * established header, include <sys/types.h> (for mode_t) before this one.
 *
 * Locks are served by the dlmd daemon over a unix socket: the default
 * path is /run/dlmd/dlmd.sock, and the environment variable DLMD_SOCKET
 * overrides it.  Each open lockspace handle has one file descriptor
 * (dlm_ls_get_fd) that becomes readable when ASTs are waiting;
 * dlm_dispatch() on it runs them.
 *
 * Differences from the established library, all extensions:
 *   - range locks work: 'range' points at a struct dlm_range (two
 *     uint64_t, start and end inclusive); a lock covers only its range,
 *     and locks on disjoint ranges of one resource do not conflict;
 *   - parent locks work: 'parent' names a granted lock of the caller and
 *     the new lock lives on a sub-resource of the parent's resource;
 *   - dlm_unlock_wait() may release a lock taken with dlm_lock() and
 *     dlm_unlock() one taken with dlm_lock_wait();
 *   - dlm_kernel_version() reports the daemon's client protocol version
 *     and dlm_library_version() the protocol version this library speaks.
 */
#ifndef __LIBDLM_H
#define __LIBDLM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Lock value block length. */
#define DLM_LVB_LEN		32

#ifndef BUILDING_LIBDLM
#define DLM_LOCKSPACE_LEN	64
#define DLM_RESNAME_MAXLEN	64

/* Status-block flags (sb_flags). */
#define DLM_SBF_DEMOTED		0x01
#define DLM_SBF_VALNOTVALID	0x02
#define DLM_SBF_ALTMODE		0x04

/* Lockspace flags. */
#define DLM_LSFL_TIMEWARN	0x00000002
#define DLM_LSFL_FS		0x00000004
#define DLM_LSFL_NEWEXCL	0x00000008

/* The lock status block: sb_status holds EINPROG while a request is in
 * progress, then its final status (0 or a positive code); sb_lkid is set
 * when the request is accepted; sb_lvbptr points at DLM_LVB_LEN bytes of
 * the caller's (for LKF_VALBLK). */
struct dlm_lksb {
	int		sb_status;
	uint32_t	sb_lkid;
	char		sb_flags;
	char		*sb_lvbptr;
};
#endif /* BUILDING_LIBDLM */

/* A byte range of a resource, inclusive at both ends (range locks). */
struct dlm_range {
	uint64_t	ra_start;
	uint64_t	ra_end;
};

/* Lock modes. */
#define LKM_NLMODE	0	/* null */
#define LKM_CRMODE	1	/* concurrent read */
#define LKM_CWMODE	2	/* concurrent write */
#define LKM_PRMODE	3	/* protected read */
#define LKM_PWMODE	4	/* protected write */
#define LKM_EXMODE	5	/* exclusive */

/* Lock flags. */
#define LKF_NOQUEUE	0x00000001	/* fail with EAGAIN instead of waiting */
#define LKF_CANCEL	0x00000002	/* unlock: cancel a waiting request */
#define LKF_CONVERT	0x00000004	/* convert the lock sb_lkid names */
#define LKF_VALBLK	0x00000008	/* read / write the lock value block */
#define LKF_QUECVT	0x00000010	/* queue the conversion behind others */
#define LKF_IVVALBLK	0x00000020	/* invalidate the value block */
#define LKF_CONVDEADLK	0x00000040	/* demote to NL to break a deadlock */
#define LKF_PERSISTENT	0x00000080	/* survive the owner as an orphan */
#define LKF_NODLCKWT	0x00000100	/* no deadlock detection wait */
#define LKF_NODLCKBLK	0x00000200	/* not yet implemented */
#define LKF_EXPEDITE	0x00000400	/* grant an NL request at once */
#define LKF_NOQUEUEBAST	0x00000800	/* blocking ASTs for NOQUEUE too */
#define LKF_HEADQUE	0x00001000	/* queue at the head */
#define LKF_NOORDER	0x00002000	/* grant in any order */
#define LKF_ORPHAN	0x00004000	/* adopt an orphan lock */
#define LKF_ALTPR	0x00008000	/* PR as an alternative mode */
#define LKF_ALTCW	0x00010000	/* CW as an alternative mode */
#define LKF_FORCEUNLOCK	0x00020000	/* unlock even if not granted */
#define LKF_TIMEOUT	0x00040000	/* obsolete */
#define LKF_WAIT	0x80000000	/* libdlm: wait for the completion */

/* Status codes beyond errno. */
#define ECANCEL		0x10001		/* the request was cancelled */
#define EUNLOCK		0x10002		/* the unlock completed */
#define EINPROG		0x10003		/* sb_status: in progress */

typedef void *dlm_lshandle_t;

int dlm_kernel_version(uint32_t *maj, uint32_t *min, uint32_t *patch);
void dlm_library_version(uint32_t *maj, uint32_t *min, uint32_t *patch);

#ifdef _REENTRANT
/* Synchronous lock in the default lockspace; *lockid identifies it. */
int lock_resource(const char *resource, int mode, int flags, int *lockid);
int unlock_resource(int lockid);
#endif

/* The default lockspace ("default", created with mode 0600 if absent). */
int dlm_lock(uint32_t mode, struct dlm_lksb *lksb, uint32_t flags,
	     const void *name, unsigned int namelen, uint32_t parent,
	     void (*astaddr)(void *astarg), void *astarg,
	     void (*bastaddr)(void *astarg), void *range);
int dlm_lock_wait(uint32_t mode, struct dlm_lksb *lksb, uint32_t flags,
		  const void *name, unsigned int namelen, uint32_t parent,
		  void *bastarg, void (*bastaddr)(void *bastarg), void *range);
int dlm_unlock(uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb,
	       void *astarg);
int dlm_unlock_wait(uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb);
int dlm_get_fd(void);

/* Run the ASTs waiting on fd (from dlm_ls_get_fd or dlm_get_fd). */
int dlm_dispatch(int fd);

/* Lockspaces. */
dlm_lshandle_t dlm_create_lockspace(const char *name, mode_t mode);
dlm_lshandle_t dlm_new_lockspace(const char *name, mode_t mode, uint32_t flags);
int dlm_release_lockspace(const char *name, dlm_lshandle_t ls, int force);
dlm_lshandle_t dlm_open_lockspace(const char *name);
int dlm_close_lockspace(dlm_lshandle_t ls);
int dlm_ls_get_fd(dlm_lshandle_t ls);

/* Locking in a lockspace.  The completion and the blocking AST both get
 * astarg; 'range' is NULL or a struct dlm_range. */
int dlm_ls_lock(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		uint32_t flags, const void *name, unsigned int namelen,
		uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
		void (*bastaddr)(void *astarg), void *range);
int dlm_ls_lockx(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		 uint32_t flags, const void *name, unsigned int namelen,
		 uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
		 void (*bastaddr)(void *astarg), uint64_t *xid, uint64_t *timeout);
int dlm_ls_unlock(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags,
		  struct dlm_lksb *lksb, void *astarg);
int dlm_ls_lock_wait(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb,
		     uint32_t flags, const void *name, unsigned int namelen,
		     uint32_t parent, void *bastarg,
		     void (*bastaddr)(void *bastarg), void *range);
int dlm_ls_unlock_wait(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags,
		       struct dlm_lksb *lksb);
int dlm_ls_deadlock_cancel(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags);
int dlm_ls_purge(dlm_lshandle_t ls, int nodeid, int pid);

/* An extension of this implementation (not in the established libdlm):
 * the fencing token of lock lkid, granted CW, PW or EX, a number larger
 * than that of every earlier conflicting grant on its resource.  See
 * dlm_ls_lock_token(3). */
#define DLM_HAVE_LOCK_TOKEN 1
int dlm_ls_lock_token(dlm_lshandle_t ls, uint32_t lkid, uint64_t *token);
int dlm_lock_token(uint32_t lkid, uint64_t *token);

#ifdef _REENTRANT
/* A thread per lockspace that runs its ASTs. */
int dlm_pthread_init(void);
int dlm_ls_pthread_init(dlm_lshandle_t ls);
int dlm_pthread_cleanup(void);
#endif

#ifdef __cplusplus
}
#endif

#endif /* __LIBDLM_H */
