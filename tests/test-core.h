/*
 * tests/test-core.h - the harness of the lock engine's unit tests
 * (tests/test-core-*.c): small clusters of engines, one per node id
 * 1..n, joined by an in-memory network that a test drains explicitly,
 * recording every AST, log warning and recovery callback.  The tests
 * are split by concern: modes and queues, LVBs, parent and range,
 * directory, recovery.
 */
#ifndef DLMD_TEST_CORE_H
#define DLMD_TEST_CORE_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"
#include "core/wire.h"

#define MAXN	7
#define MAXQ	4096
#define MAXAST	1024

struct qmsg {
	uint32_t from, to;
	size_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

struct rec_ast {
	int node;
	struct dlm_ast a;
	char lvb[DLM_LVB_LEN];
	int has_lvb;
};

struct cluster {
	int n;
	struct dlm_core *core[MAXN + 1];
	struct dlm_ls *ls[MAXN + 1];
	struct qmsg *q;
	size_t qhead, qtail;
	struct rec_ast asts[MAXAST];
	int nasts;
	int nlog_warn;
	uint32_t done_event[MAXN + 1];
	uint32_t failed_event[MAXN + 1];
	int failed_error[MAXN + 1];
	int dead[MAXN + 1];
	unsigned long sent[DLM_MSG_MAX + 1];	/* messages sent, by type */
	unsigned long dir_records;	/* keys in RC_DIR_ADD(S) sent */
};

struct nodectx {
	struct cluster *c;
	int node;
};
extern struct nodectx nctx[MAXN + 1];

/* remaster_ticks of the engines cluster_new makes (0: no remastering) */
extern uint32_t cluster_remaster_ticks;
extern uint32_t cluster_remaster_shared;	/* the re-point protocol */
extern uint32_t cluster_max_tossed;	/* max_tossed (0: no bound) */
extern uint32_t cluster_fold;	/* fold lone locks (core/solo.c) */
struct cluster *cluster_new_seq(int n, uint32_t toss_ms, uint32_t lvbseq);
struct cluster *cluster_new(int n, uint32_t toss_ms);
/* cluster_new(n, 1000) with fold_lone_locks on (core/solo.c) */
struct cluster *fold_cluster(int n);
/* an allocation hook (core/alloc.c) that fails every allocation */
int fail_all(void *arg);
void cluster_free(struct cluster *c);
void drain(struct cluster *c);
uint32_t lock_on(struct cluster *c, int node, uint64_t owner,
		 const char *name, int mode, uint32_t flags,
		 uint32_t parent, const struct dlm_range *range);
int try_lock(struct cluster *c, int node, uint64_t owner,
	     const char *name, int mode, uint32_t flags);
int convert(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
	    int mode, uint32_t flags, const char *lvb);
int unlock(struct cluster *c, int node, uint64_t owner, uint32_t lkid,
	   uint32_t flags, const char *lvb);
struct rec_ast *comp_of(struct cluster *c, int node, uint32_t lkid);
int count_asts(struct cluster *c, int node, uint32_t lkid, int type);
int last_bast_mode(struct cluster *c, int node, uint32_t lkid);
void assert_status(struct cluster *c, int node, uint32_t lkid, int st);
void assert_no_comp(struct cluster *c, int node, uint32_t lkid);
char *dump(struct cluster *c, int node);
void assert_dump_has(struct cluster *c, int node, const char *needle);
void assert_dump_lacks(struct cluster *c, int node, const char *needle);
void stop_all(struct cluster *c);
void start_all(struct cluster *c, uint32_t event);
void finish_all(struct cluster *c, uint32_t event);
void recover_all(struct cluster *c, uint32_t event);
void deliver_only(struct cluster *c, uint32_t from, uint32_t to);
void assert_verified(struct cluster *c);
/* A root name "<prefix><i>" whose directory node among nodes 1..n is
 * 'dir', into name. */
void name_directed_by(const char *prefix, uint32_t n, uint32_t dir,
		      char *name, size_t len);

/* Encoded into buf, a message from node 'from' to node 'to' in lockspace
 * 'lsid' whose only meaning is its token clock 'clock': a reply about a
 * lock nobody has, which the receiver ignores (-ENOENT) once it heard
 * the clock (core/token.c).  Its length. */
static inline size_t clock_msg(unsigned char *buf, size_t buflen,
			       uint32_t lsid, uint32_t from, uint32_t to,
			       uint64_t clock)
{
	struct dlm_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	m.m_type = DLM_MSG_REQUEST_REPLY;
	m.m_lsid = lsid;
	m.m_from = from;
	m.m_to = to;
	m.m_remid = 0x7ffff001;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	m.m_clock = clock;
	len = dlm_msg_encode(&m, buf, buflen);
	assert_true(len > 0);
	return (size_t)len;
}

#endif /* DLMD_TEST_CORE_H */
