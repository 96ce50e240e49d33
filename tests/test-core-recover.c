/*
 * tests/test-core-recover.c - unit tests of the lock engine: recovery.
 * A master dying, a step running out of memory, requests held and
 * resent, operations in flight, aborted recoveries and joins (recovery
 * of LVBs: tests/test-core-lvb.c).  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"
#include "core/core_internal.h"

/* Allocation failures on demand: the engine's malloc() calls come here
 * (linked with -Wl,--wrap=malloc); the one 'malloc_countdown' calls
 * ahead fails. */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static int malloc_countdown = -1;

void *__wrap_malloc(size_t size)
{
	if (malloc_countdown >= 0 && malloc_countdown-- == 0)
		return NULL;
	return __real_malloc(size);
}

/* LVB buffers are allocated only when a lock gives a value (issue 14):
 * a lock that never uses one, or writes only zeros, allocates none, and a
 * write whose buffer cannot be allocated is refused whole (-ENOMEM, the
 * lock still held, the value as it was: core/lock.c "Out of memory"),
 * rather than taken and the value lost; with memory again it goes
 * through. */
static void test_lazy_lvb_out_of_memory(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	char zero[DLM_LVB_LEN] = { 0 }, v[DLM_LVB_LEN] = "value";
	uint32_t w, r;

	(void)state;
	w = lock_on(c, 1, 1, "r", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	/* zeros need no buffer: an unlock writing them allocates nothing */
	malloc_countdown = 0;
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, zero), 0);
	assert_int_equal(malloc_countdown, 0);
	malloc_countdown = -1;
	assert_dump_has(c, 1, "seq 1 valid");
	/* a value's buffer fails: the unlock is refused, nothing changed */
	w = lock_on(c, 1, 1, "r", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	malloc_countdown = 0;
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, v), -ENOMEM);
	malloc_countdown = -1;
	assert_dump_has(c, 1, "seq 1 valid");
	assert_dump_has(c, 1, "granted");
	/* with memory again, the same unlock goes through: kept and valid */
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, v), 0);
	r = lock_on(c, 1, 2, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_false(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(comp_of(c, 1, r)->lvb, v, DLM_LVB_LEN);
	cluster_free(c);
}

/* A lock's ranges get a record of their own only when one is partial
 * (issue 14): that record's allocation failing refuses the request or
 * conversion with -ENOMEM and changes nothing; with memory again both
 * go through. */
static void test_lazy_ranges_out_of_memory(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	struct dlm_range part = { 16, 32 };
	struct dlm_lock_req rq = { .mode = DLM_LOCK_PR, .name = "r",
				   .namelen = 1, .owner = 1, .range = &part };
	uint32_t a, b, id = 0;

	(void)state;
	a = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, NULL);
	/* the lkb is allocated, its range record is not */
	malloc_countdown = 1;
	assert_int_equal(dlm_core_lock(c->ls[1], &rq, &id), -ENOMEM);
	malloc_countdown = -1;
	assert_dump_lacks(c, 1, "rqrange");
	assert_dump_lacks(c, 1, "range 10-20");
	/* a conversion to a partial range, likewise */
	malloc_countdown = 0;
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .flags = DLM_LKF_CONVERT, .lkid = a,
		.owner = 1, .range = &part }, &id), -ENOMEM);
	malloc_countdown = -1;
	assert_dump_lacks(c, 1, "range 10-20");
	b = lock_on(c, 1, 1, "r", DLM_LOCK_PR, 0, 0, &part);
	assert_status(c, 1, b, 0);
	assert_dump_has(c, 1, "range 10-20");
	assert_int_equal(convert(c, 1, 1, a, DLM_LOCK_NL, 0, NULL), 0);
	cluster_free(c);
}

/* The master dies: a survivor becomes master, survivors' locks are
 * resent with their state, the dead node's lock is gone, and the waiter
 * it blocked is granted. */
static void test_recover_master_dies(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	char *text;

	(void)state;
	x = lock_on(c, 3, 3, "R", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, x, 0);
	a = lock_on(c, 1, 1, "R", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	b = lock_on(c, 2, 2, "R", DLM_LOCK_NL, DLM_LKF_EXPEDITE, 0, NULL);
	drain(c);
	assert_no_comp(c, 1, a);
	assert_status(c, 2, b, 0);
	assert_dump_has(c, 1, "resource \"R\" master 3 local-copy");
	text = dump(c, 3);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "before (node 3, master):\n%s", text);
	free(text);

	c->dead[3] = 1;
	recover_all(c, 1);
	/* node 1 or 2 masters R now; node 3's EX is gone: PR granted */
	assert_status(c, 1, a, 0);
	assert_true(comp_of(c, 1, a)->a.sbflags & DLM_SBF_VALNOTVALID);
	text = dump(c, 1);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "after (node 1):\n%s", text);
	assert_non_null(strstr(text, "resource \"R\""));
	assert_null(strstr(text, "master 3"));
	free(text);
	/* locking goes on: node 2 converts up, waits for node 1's PR */
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(count_asts(c, 2, b, DLM_AST_COMP), 1);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_EX);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(comp_of(c, 2, b)->a.grmode, DLM_LOCK_EX);
	cluster_free(c);
}

static int fail_alloc(void *arg)
{
	(void)arg;
	return 1;
}

/* A down-conversion (or, with 'by_unlock', an unlock) with a value that
 * the master refused for want of memory (-ENOMEM: the lock stays PW, the
 * write did not happen) left the value it was to write in its process
 * copy (convert_lock and unlock_lkb keep it there to send it), marked
 * known; when the master then died, recovery took that copy, a PW
 * holder's, as the resource's current value, and a reader got as valid
 * a value its writer was told was never written.  Now a conversion or
 * unlock that was to write and is undone (revert_convert,
 * unlock_unwritten) leaves its copy unknown: the new master has no
 * current copy and the reader gets the value flagged not valid, as
 * after any master death that took the value with it. */
static void refused_write(int by_unlock)
{
	struct cluster *c = cluster_new(3, 3600000);
	char v[DLM_LVB_LEN] = "refused";
	struct rec_ast *a;
	uint32_t x, w, r;

	x = lock_on(c, 1, 1, "R", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, x, 0);
	assert_int_equal(unlock(c, 1, 1, x, 0, NULL), 0);
	drain(c);
	w = lock_on(c, 2, 2, "R", DLM_LOCK_PW, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, w, 0);
	assert_dump_has(c, 2, "resource \"R\" master 1");
	/* node 1, the master, has no room for the value: refused */
	dlm_core_set_alloc_hook(c->core[1], fail_alloc, NULL);
	if (by_unlock)
		assert_int_equal(unlock(c, 2, 2, w, DLM_LKF_VALBLK, v), 0);
	else
		assert_int_equal(convert(c, 2, 2, w, DLM_LOCK_NL,
					 DLM_LKF_VALBLK, v), 0);
	drain(c);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	assert_status(c, 2, w, -ENOMEM);
	assert_dump_has(c, 2, " PW ");
	c->dead[1] = 1;
	recover_all(c, 1);
	r = lock_on(c, 3, 3, "R", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 3, r);
	/* released without a write */
	assert_int_equal(unlock(c, 2, 2, w, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, r, 0);
	a = comp_of(c, 3, r);
	if (!(a->a.sbflags & DLM_SBF_VALNOTVALID) && a->has_lvb &&
	    !memcmp(a->lvb, v, DLM_LVB_LEN))
		fail_msg("a reader got \"%s\" as valid: a write refused "
			 "before the master died", v);
	assert_true(a->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_verified(c);
	cluster_free(c);
}

static void test_recover_refused_write(void **state)
{
	(void)state;
	refused_write(0);
}

/* The same with an unlock the master refused (receive_unlock_reply). */
static void test_recover_refused_unlock_write(void **state)
{
	(void)state;
	refused_write(1);
}

/* QUIET STEPS (core/recover.c): the barriers on the masters and locks
 * steps are left out when no survivor holds a lock on a resource the dead
 * node mastered (3 rounds of RC_STATUS among the survivors, not 5), and
 * kept when one does; either way the survivors' locks are there after. */
static void test_recover_quiet_steps(void **state)
{
	struct cluster *c = cluster_new(4, 100);
	uint32_t l[5], x;
	char name[8], line[48];
	int k;

	(void)state;
	/* each node an EX on a name of its own: it masters it */
	for (k = 1; k <= 4; k++) {
		snprintf(name, sizeof(name), "own%d", k);
		l[k] = lock_on(c, k, (uint64_t)k, name, DLM_LOCK_EX, 0, 0, NULL);
		drain(c);
		assert_status(c, k, l[k], 0);
	}
	memset(c->sent, 0, sizeof(c->sent));
	c->dead[4] = 1;
	recover_all(c, 1);
	/* 3 survivors, 2 statuses each per round: nodes, directory, done */
	assert_int_equal(c->sent[DLM_RC_STATUS], 3 * 2 * 3);
	assert_int_equal(c->sent[DLM_RC_LOOKUP] + c->sent[DLM_RC_LOCK], 0);
	for (k = 1; k <= 3; k++) {
		snprintf(line, sizeof(line), "resource \"own%d\" master %d", k, k);
		assert_dump_has(c, k, line);
	}
	/* a survivor's lock on a resource node 3 masters: all five rounds */
	x = lock_on(c, 1, 9, "own3", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, x, 0);
	memset(c->sent, 0, sizeof(c->sent));
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_int_equal(c->sent[DLM_RC_STATUS], 2 * 1 * 5);
	assert_int_equal(c->sent[DLM_RC_LOCK], 0);	/* node 1 masters it now */
	assert_dump_has(c, 1, "resource \"own3\" master 1");
	/* locking goes on: node 2 takes own3 beside node 1's NL */
	x = lock_on(c, 2, 2, "own3", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, x, 0);
	cluster_free(c);
}

static uint64_t token_of(struct cluster *c, int node, uint64_t owner,
			 uint32_t lkid)
{
	uint64_t t = 0;

	assert_int_equal(dlm_core_lock_token(c->ls[node], lkid, owner, &t), 0);
	assert_int_equal(comp_of(c, node, lkid)->a.token, t);
	return t;
}

/* Fencing tokens (core/token.c): every write grant on a resource carries
 * a larger token than the ones before it, when the master dies together
 * with the holder (nobody alive knows the last token), and when a
 * resource is dropped and mastered again elsewhere without a recovery. */
static void test_recover_token(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, y, a, u[1];
	uint64_t t, t0, last;
	int i;

	(void)state;
	/* node 3 masters T and holds it EX: nobody else hears the token */
	x = lock_on(c, 3, 3, "T", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, x, 0);
	t0 = token_of(c, 3, 3, x);
	assert_true(t0 > 0);
	/* converting down to PR: no token; back up to EX: a larger one */
	assert_int_equal(convert(c, 3, 3, x, DLM_LOCK_PR, 0, NULL), 0);
	drain(c);
	assert_int_equal(dlm_core_lock_token(c->ls[3], x, 3, &t), -ENOENT);
	assert_int_equal(dlm_core_lock_token(c->ls[3], x, 1, &t), -EPERM);
	assert_int_equal(convert(c, 3, 3, x, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	t = token_of(c, 3, 3, x);
	assert_true(t > t0);
	t0 = t;
	{
		char needle[64];

		snprintf(needle, sizeof(needle), " owner 3 token %llu\n",
			 (unsigned long long)t);
		assert_dump_has(c, 3, needle);
	}
	c->dead[3] = 1;
	recover_all(c, 1);
	a = lock_on(c, 1, 1, "T", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	t = token_of(c, 1, 1, a);
	if (t <= t0)
		fail_msg("token %llx after the master died, %llx before",
			 (unsigned long long)t, (unsigned long long)t0);
	{
		/* the master's copy shows the owner's number */
		char needle[64], *text = dump(c, 1);
		int m = strstr(text, "resource \"T\" master 2") ? 2 : 1;

		free(text);
		snprintf(needle, sizeof(needle), " token %llu\n",
			 (unsigned long long)t);
		assert_dump_has(c, 1, needle);
		assert_dump_has(c, m, needle);
	}

	/* node 2 masters U and mints a few tokens; U goes unused and is
	 * dropped; node 1 then masters it: its tokens go on above */
	y = lock_on(c, 2, 2, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	for (i = 0; i < 4; i++) {
		assert_int_equal(convert(c, 2, 2, y, i % 2 ? DLM_LOCK_EX :
					 DLM_LOCK_NL, 0, NULL), 0);
		drain(c);
	}
	last = token_of(c, 2, 2, y);
	assert_int_equal(unlock(c, 2, 2, y, 0, NULL), 0);
	drain(c);
	for (i = 1; i <= 2; i++)
		dlm_core_tick(c->core[i], 1000);
	drain(c);
	assert_dump_lacks(c, 2, "resource \"U\"");
	/* the directory's clock told node 1 what node 2 minted */
	u[0] = lock_on(c, 1, 1, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, u[0], 0);
	assert_dump_has(c, 1, "resource \"U\" master 1");
	t = token_of(c, 1, 1, u[0]);
	if (t <= last)
		fail_msg("token %llx after a new master, %llx before",
			 (unsigned long long)t, (unsigned long long)last);
	cluster_free(c);
}

/* A message from node 'from' to node 'to' carrying token clock 'clock'
 * (clock_msg).  dlm_core_receive's result: -ERANGE if it was dropped for
 * its clock. */
static int send_clock(struct cluster *c, int from, int to, uint64_t clock)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	size_t len = clock_msg(buf, sizeof(buf), dlm_core_ls_id(c->ls[to]),
			       (uint32_t)from, (uint32_t)to, clock);

	return dlm_core_receive(c->core[to], (uint32_t)from, buf, len);
}

/* Lock 'name' EX on node 1 (its master), unlock it, return the token. */
static uint64_t write_grant(struct cluster *c, const char *name)
{
	uint32_t x = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	uint64_t t;

	drain(c);
	assert_status(c, 1, x, 0);
	t = token_of(c, 1, 1, x);
	assert_int_equal(unlock(c, 1, 1, x, 0, NULL), 0);
	drain(c);
	return t;
}

/* A member that sends a clock near UINT64_MAX (a bug, a forged message)
 * must not use up the lockspace's fencing tokens: such a message is
 * dropped, logged and counted, and later tokens still grow; a clock a
 * member can have (below the generation after next) is heard
 * (core/token.c "A clock from the future"). */
static void test_forged_clock(void **state)
{
	struct cluster *c = cluster_new(2, 100);
	struct dlm_ls_stats st;
	uint64_t t0, t1, t2, heard;
	int warn, rv;

	(void)state;
	t0 = write_grant(c, "F");
	warn = c->nlog_warn;
	rv = send_clock(c, 2, 1, UINT64_MAX - 1);
	/* the damage it would do: equal (saturated) tokens */
	t1 = write_grant(c, "F");
	t2 = write_grant(c, "F");
	if (!(t0 < t1 && t1 < t2) || t2 >= (UINT64_C(2) << 32))
		fail_msg("tokens %llx %llx %llx after a forged clock",
			 (unsigned long long)t0, (unsigned long long)t1,
			 (unsigned long long)t2);
	assert_int_equal(rv, -ERANGE);
	assert_true(c->nlog_warn > warn);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_clock_rejected, 1);
	/* the generation after next, at event 0: refused too */
	assert_int_equal(send_clock(c, 2, 1, UINT64_C(2) << 32), -ERANGE);
	/* just below it: heard, tokens go on above */
	heard = (UINT64_C(2) << 32) - 1;
	assert_int_not_equal(send_clock(c, 2, 1, heard), -ERANGE);
	t1 = write_grant(c, "F");
	assert_true(t1 > heard);
	/* after a recovery to event 1 the bound moves up a generation */
	recover_all(c, 1);
	assert_int_not_equal(send_clock(c, 2, 1, (UINT64_C(3) << 32) - 1),
			     -ERANGE);
	assert_int_equal(send_clock(c, 2, 1, UINT64_MAX), -ERANGE);
	t2 = write_grant(c, "F");
	assert_true(t2 > (UINT64_C(3) << 32) - 1);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_clock_rejected, 3);
	assert_verified(c);
	cluster_free(c);
}

/* A grant whose lock token exceeds the clock of its own message (a bug,
 * a forged message) is dropped, logged and counted, not stored: the
 * sender's clock bounds every token it has (core/token.c "A token above
 * its message's clock").  Node 1 masters G and holds EX; node 2 waits
 * for EX; node 1's unlock sends node 2 a GRANT, which the network
 * alters before node 2 gets it. */
static void test_forged_token(void **state)
{
	struct cluster *c = cluster_new(2, 100);
	unsigned char orig[DLM_WIRE_MAX_LEN];
	struct dlm_ls_stats st;
	struct dlm_msg m;
	const char *why;
	uint32_t x, y;
	size_t forged = SIZE_MAX;
	int warn;

	(void)state;
	x = lock_on(c, 1, 1, "G", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, x, 0);
	y = lock_on(c, 2, 2, "G", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, y);
	assert_int_equal(unlock(c, 1, 1, x, 0, NULL), 0);
	for (size_t i = c->qhead; i < c->qtail; i++) {
		struct qmsg *q = &c->q[i % MAXQ];
		int len;

		memcpy(orig, q->buf, q->len);
		assert_int_equal(dlm_msg_decode(orig, q->len, &m, &why), 0);
		if (q->from != 1 || q->to != 2 || m.m_type != DLM_MSG_GRANT)
			continue;
		assert_true(m.m_token > 0 && m.m_token <= m.m_clock);
		m.m_token = m.m_clock + 1;
		len = dlm_msg_encode(&m, q->buf, sizeof(q->buf));
		assert_true(len > 0);
		q->len = (size_t)len;
		forged = i;
	}
	assert_true(forged != SIZE_MAX);
	warn = c->nlog_warn;
	/* drain(), but the forged one is refused */
	while (c->qhead != c->qtail) {
		size_t i = c->qhead++;
		struct qmsg *q = &c->q[i % MAXQ];

		assert_int_equal(dlm_core_receive(c->core[q->to], q->from,
						  q->buf, q->len),
				 i == forged ? -ERANGE : 0);
	}
	/* not granted with a token nobody minted */
	assert_no_comp(c, 2, y);
	assert_true(c->nlog_warn > warn);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_clock_rejected, 1);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_clock_rejected, 0);
	cluster_free(c);
}

/* A recovery step runs out of memory on one node: that node stays
 * stopped, says so (recovery_failed, dlm_core_ls_recovery_error), and
 * announces nothing, so the others wait at the barrier of the step that
 * failed; recovery under the next event succeeds. */
static void test_recover_enomem(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t members[2] = { 1, 2 };
	const char *step = NULL;
	uint32_t a, b, x;
	int k, rv = -ENOMEM;

	(void)state;
	x = lock_on(c, 3, 3, "R", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	/* (one after the other: which request reaches the master first
	 * depends on where R's directory is) */
	a = lock_on(c, 1, 1, "R", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	b = lock_on(c, 2, 2, "R", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_no_comp(c, 2, b);
	c->dead[3] = 1;
	stop_all(c);
	/* fail node 1's allocations one at a time until one fails inside
	 * recovery rather than in dlm_core_ls_start itself */
	for (k = 0; k < 50 && rv == -ENOMEM; k++) {
		malloc_countdown = k;
		rv = dlm_core_ls_start(c->ls[1], 1, members, 2);
		malloc_countdown = -1;
	}
	assert_int_equal(rv, 0);
	assert_int_equal(c->failed_event[1], 1);
	assert_int_equal(c->failed_error[1], -ENOMEM);
	assert_int_equal(dlm_core_ls_recovery_error(c->ls[1], &step), -ENOMEM);
	assert_string_equal(step, "nodes");
	assert_int_equal(dlm_core_ls_state(c->ls[1], NULL, NULL), DLM_LS_STOPPED);
	/* node 2 waits for node 1's NODES status, which never comes */
	assert_int_equal(dlm_core_ls_start(c->ls[2], 1, members, 2), 0);
	drain(c);
	assert_int_equal(dlm_core_ls_state(c->ls[2], NULL, &step),
			 DLM_LS_RECOVERING);
	assert_string_equal(step, "nodes");
	assert_int_equal(c->done_event[1], 0);
	assert_int_equal(c->done_event[2], 0);
	assert_int_equal(dlm_core_ls_finish(c->ls[1], 1), -EBUSY);
	/* the glue runs recovery again under a new event */
	recover_all(c, 2);
	assert_int_equal(dlm_core_ls_recovery_error(c->ls[1], &step), 0);
	assert_null(step);
	assert_int_equal(c->failed_event[2], 0);
	/* node 3's PR is gone; node 1's PR blocks node 2's EX until unlocked */
	assert_no_comp(c, 2, b);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	cluster_free(c);
	(void)x;
}

/* Requests made while stopped, and requests in flight to a node that
 * dies, complete after recovery. */
static void test_recover_held_and_resent(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b, d;
	char v[DLM_LVB_LEN] = "survivor's write";

	(void)state;
	x = lock_on(c, 3, 3, "Q", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	a = lock_on(c, 1, 1, "Z", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 3, x, 0);
	assert_status(c, 1, a, 0);
	/* node 1 unlocks Z writing an LVB; Z is mastered on node 1 or wherever
	 * the first request went; then a request to Q's master (node 3) is
	 * in flight when node 3 dies */
	b = lock_on(c, 2, 2, "Q", DLM_LOCK_PR, 0, 0, NULL);
	c->dead[3] = 1;
	stop_all(c);
	/* while stopped: a new request and an unlock are accepted, held */
	d = lock_on(c, 2, 2, "new", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	assert_no_comp(c, 2, d);
	start_all(c, 7);
	drain(c);
	finish_all(c, 7);
	assert_status(c, 2, b, 0);
	assert_status(c, 2, d, 0);
	assert_status(c, 1, a, -DLM_EUNLOCK);
	/* the survivor's LVB write was kept */
	a = lock_on(c, 2, 2, "Z", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, a, 0);
	assert_memory_equal(comp_of(c, 2, a)->lvb, v, DLM_LVB_LEN);
	cluster_free(c);
}

/* An unlock the master did just before it died: the lock it released
 * must not come back to the new master next to the lock granted in its
 * place (the reply the dead master never sent is taken as given). */
static void test_recover_inflight_unlock(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	char *text;

	(void)state;
	x = lock_on(c, 3, 3, "U", DLM_LOCK_NL, 0, 0, NULL);	/* node 3 masters U */
	drain(c);
	a = lock_on(c, 1, 1, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	b = lock_on(c, 2, 2, "U", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, b);
	c->nasts = 0;
	/* node 1 unlocks; node 3 does it and grants node 2, whose GRANT
	 * arrives; the unlock reply to node 1 is lost as node 3 dies */
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	deliver_only(c, 1, 3);
	deliver_only(c, 3, 2);
	assert_status(c, 2, b, 0);
	assert_no_comp(c, 1, a);
	c->dead[3] = 1;
	stop_all(c);
	start_all(c, 1);
	drain(c);
	/* recovered, not yet finished: one EX holder, node 2's */
	assert_status(c, 1, a, -DLM_EUNLOCK);
	assert_verified(c);
	text = dump(c, 1);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "after recovery (node 1):\n%s", text);
	assert_null(strstr(text, "owner 1\n"));
	free(text);
	finish_all(c, 1);
	assert_verified(c);
	assert_int_equal(count_asts(c, 1, a, DLM_AST_COMP), 1);
	(void)x;
	cluster_free(c);
}

/* Recovery 1 is aborted right after the new master took a resent lock
 * (its reply not yet back); recovery 2 resends it: the new master keeps
 * one copy, not two. */
static void test_recover_abort_dedupe(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t x, a, b;
	int steps, rc_locks = 0, i, n;
	char *text, *p;

	(void)state;
	x = lock_on(c, 3, 3, "D", DLM_LOCK_NL, 0, 0, NULL);	/* node 3 masters D */
	drain(c);
	a = lock_on(c, 1, 1, "D", DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 2, 2, "D", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_status(c, 2, b, 0);
	c->dead[3] = 1;
	stop_all(c);
	start_all(c, 1);
	for (steps = 0; steps < 1000 && c->qhead != c->qtail && !rc_locks; steps++) {
		struct qmsg *m = &c->q[c->qhead++ % MAXQ];
		struct dlm_msg d;

		if (c->dead[m->to] || c->dead[m->from])
			continue;
		assert_int_equal(dlm_msg_decode(m->buf, m->len, &d, NULL), 0);
		if (d.m_type == DLM_RC_LOCK)
			rc_locks++;
		assert_int_equal(dlm_core_receive(c->core[m->to], m->from,
						  m->buf, m->len), 0);
	}
	assert_int_equal(rc_locks, 1);
	stop_all(c);
	start_all(c, 2);
	drain(c);
	finish_all(c, 2);
	for (i = 1; i <= 2; i++) {
		text = dump(c, i);
		if (getenv("TEST_CORE_VERBOSE"))
			fprintf(stderr, "node %d after:\n%s", i, text);
		for (n = 0, p = text; (p = strstr(p, " remid ")); p++)
			n++;
		if (strstr(text, "master-copy"))
			assert_int_equal(n, 1);	/* the other node's lock, once */
		free(text);
	}
	assert_verified(c);
	(void)x;
	cluster_free(c);
}

/* PARTIAL DIRECTORY (core/recover.c): 7 nodes, each the master of 60
 * names of its own; node 7 dies.  Only the names whose directory node
 * was node 7 are registered again (a survivor keeps the records it
 * directs: rendezvous placement moves no other name), about 1/7 of the
 * full rebuild's; the records naming node 7 go.  Then every name is
 * still where its master is: another node's NOQUEUE EX on it is refused
 * (a lost record would make that node a second master, and grant it),
 * and node 7's names get new masters. */
#define PD_NAMES	60
static void test_recover_partial_dir(void **state)
{
	struct cluster *c = cluster_new(7, 100000);
	uint32_t before[7] = { 1, 2, 3, 4, 5, 6, 7 };
	unsigned long want = 0, full = 0;
	unsigned char key[16];
	char name[16];
	int n, i, other;
	uint32_t lk;

	(void)state;
	for (n = 1; n <= 7; n++) {
		for (i = 0; i < PD_NAMES; i++) {
			uint32_t hash, olddir, newdir;

			snprintf(name, sizeof(name), "n%d-%d", n, i);
			lk = lock_on(c, n, (uint64_t)n, name, DLM_LOCK_EX, 0, 0,
				     NULL);
			drain(c);
			assert_status(c, n, lk, 0);
			if (n == 7)
				continue;
			key[0] = (unsigned char)strlen(name);
			memcpy(key + 1, name, key[0]);
			hash = dlm_hash_bytes(key, key[0] + 1u);
			olddir = dlm_dir_nodeid_of(before, 7, hash);
			newdir = dlm_dir_nodeid_of(before, 6, hash);
			/* a survivor that directs what it masters registers
			 * it without a message */
			if (newdir != (uint32_t)n) {
				full++;
				if (olddir == 7)
					want++;
			}
			/* rendezvous: only node 7's names move */
			if (olddir != 7)
				assert_int_equal(newdir, olddir);
		}
	}
	assert_true(want > 0);
	recover_all(c, 1);	/* a first recovery, as a join runs */
	c->dir_records = 0;
	c->dead[7] = 1;
	recover_all(c, 2);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "partial: %lu records sent (full: %lu)\n",
			c->dir_records, full);
	assert_int_equal(c->dir_records, want);
	assert_true(c->dir_records * 3 < full);
	/* every survivor's name is held by its master: a NOQUEUE EX from
	 * another node is refused */
	for (n = 1; n <= 6; n++) {
		other = n % 6 + 1;
		for (i = 0; i < PD_NAMES; i++) {
			snprintf(name, sizeof(name), "n%d-%d", n, i);
			lk = lock_on(c, other, 100 + (uint64_t)other, name,
				     DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0, NULL);
			drain(c);
			assert_status(c, other, lk, -EAGAIN);
		}
	}
	/* node 7's names: free, one master each */
	for (i = 0; i < PD_NAMES; i++) {
		snprintf(name, sizeof(name), "n7-%d", i);
		lk = lock_on(c, 1 + i % 6, 200, name, DLM_LOCK_EX, 0, 0, NULL);
		drain(c);
		assert_status(c, 1 + i % 6, lk, 0);
		lk = lock_on(c, 1 + (i + 1) % 6, 201, name, DLM_LOCK_EX,
			     DLM_LKF_NOQUEUE, 0, NULL);
		drain(c);
		assert_status(c, 1 + (i + 1) % 6, lk, -EAGAIN);
	}
	assert_verified(c);
	cluster_free(c);
}

static uint64_t dir_entries(struct cluster *c, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(c->ls[node], &st);
	return st.ls_dir_entries;
}

/* PARTIAL DIRECTORY: node 1 drops the resource it masters and sends its
 * REMOVE to the directory node, node 2, which stops before taking it;
 * node 4 dies.  Node 2's record of node 1 is not rebuilt, so the held
 * REMOVE is done at the directory step, not dropped at finish as stale:
 * else the record would name node 1 for ever, and node 3's request,
 * told to go to node 1, would be refused and looked up again without
 * end. */
static void test_recover_partial_held_remove(void **state)
{
	struct cluster *c = cluster_new(4, 10);
	char name[16];
	uint32_t a, b;

	(void)state;
	recover_all(c, 1);	/* a first recovery, as a join runs */
	name_directed_by("pd", 4, 2, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(dir_entries(c, 2), 1);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	dlm_core_tick(c->core[1], 1000);	/* tossed: REMOVE to node 2 */
	assert_true(c->qhead != c->qtail);
	c->dead[4] = 1;
	stop_all(c);
	start_all(c, 2);
	drain(c);
	assert_int_equal(dir_entries(c, 2), 0);
	finish_all(c, 2);
	b = lock_on(c, 3, 3, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, b, 0);
	assert_dump_has(c, 3, "master 3");
	cluster_free(c);
}

/* PARTIAL DIRECTORY: node 1's lookup reaches the directory node, node 2,
 * which records node 1 as the master; the answer comes after the stop
 * and is dropped.  Node 4 dies.  Node 1 has node 2 drop that record
 * (RC_DIR_DROP) before the directory is asked again: else, had node 1
 * given up its request meanwhile, the record would name a master that
 * masters nothing. */
static void test_recover_partial_lost_lookup(void **state)
{
	struct cluster *c = cluster_new(4, 100);
	char name[16];
	uint32_t a;

	(void)state;
	recover_all(c, 1);	/* a first recovery, as a join runs */
	name_directed_by("pd", 4, 2, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	deliver_only(c, 1, 2);		/* the lookup; its answer waits */
	assert_int_equal(dir_entries(c, 2), 1);
	c->dead[4] = 1;
	stop_all(c);
	memset(c->sent, 0, sizeof(c->sent));
	start_all(c, 2);
	drain(c);
	assert_int_equal(c->sent[DLM_RC_DIR_DROP], 1);
	assert_int_equal(dir_entries(c, 2), 0);
	/* node 1 looks up again at finish and masters it */
	finish_all(c, 2);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(dir_entries(c, 2), 1);
	assert_dump_has(c, 1, "master 1");
	cluster_free(c);
}

/* NARROW STEPS: 4 nodes, each masters NR_NAMES names (one EX lock
 * each, as bench/bench-recovery's "single"); node 4 dies.  After step
 * start, a survivor's steps look only at what the death touched: its
 * roots whose directory node was node 4 (and nothing else here), not
 * every resource.  A request made while recovering, on a fresh name,
 * waits for its master until finish, which looks it up: granted.
 * With 'full', node 2 has handled a remastering message since the last
 * rebuild (ls_rm_seen: it votes no), so the rebuild is full although
 * nodes 1 and 3 started narrow: they look at every resource from the
 * directory step on and register every root, else the sweep would drop
 * the records of the names they master and another node, told by the
 * directory that nobody masters them, would be granted an EX beside
 * theirs. */
#define NR_NAMES	40
static void narrow_recovery(bool full)
{
	struct cluster *c = cluster_new(4, 100000);
	uint32_t before[4] = { 1, 2, 3, 4 }, lk, late;
	size_t moved[4] = { 0, 0, 0, 0 }, folded[4] = { 0, 0, 0, 0 };
	unsigned char key[16];
	char name[16];
	int n, i;

	recover_all(c, 1);	/* a first recovery, as a join runs */
	for (n = 1; n <= 4; n++)
		for (i = 0; i < NR_NAMES; i++) {
			snprintf(name, sizeof(name), "r%d-%d", n, i);
			lk = lock_on(c, n, (uint64_t)n, name, DLM_LOCK_EX, 0,
				     0, NULL);
			drain(c);
			assert_status(c, n, lk, 0);
			key[0] = (unsigned char)strlen(name);
			memcpy(key + 1, name, key[0]);
			if (n < 4 && dlm_dir_nodeid_of(before, 4,
					dlm_hash_bytes(key, key[0] + 1u)) == 4) {
				moved[n]++;
				/* (with TEST_CORE_FOLD=1, folded after its
				 * lookup: registered from the solo table,
				 * not the list; core/solo.c, "Names other
				 * nodes direct") */
				if (dlm_solo_find_key(c->ls[n], key,
						key[0] + 1u, dlm_hash_bytes(key,
						key[0] + 1u)))
					folded[n]++;
			}
		}
	if (full)
		c->ls[2]->ls_rm_seen = true;
	c->dead[4] = 1;
	stop_all(c);
	start_all(c, 2);
	for (n = 1; n <= 3; n++) {
		assert_int_equal(c->ls[n]->ls_rc_narrow, n != 2 || !full);
		if (n != 2 || !full)
			assert_int_equal(c->ls[n]->ls_rec_nrsbs,
					 moved[n] - folded[n]);
		else	/* (with TEST_CORE_FOLD=1, less the lone locks a
			 * recovery leaves folded: core/solo.c, "Recovery") */
			assert_int_equal(c->ls[n]->ls_rec_nrsbs,
					 NR_NAMES - dlm_solo_count(c->ls[n]));
	}
	/* a fresh name, locked while the lockspace recovers */
	late = lock_on(c, 1, 1, "late", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	for (n = 1; n <= 3; n++)
		assert_int_equal(c->ls[n]->ls_rc_partial, !full);
	finish_all(c, 2);
	drain(c);
	assert_status(c, 1, late, 0);
	/* every survivor's name is held by its master */
	for (n = 1; n <= 3; n++)
		for (i = 0; i < NR_NAMES; i++) {
			int other = n % 3 + 1;

			snprintf(name, sizeof(name), "r%d-%d", n, i);
			lk = lock_on(c, other, 100 + (uint64_t)other, name,
				     DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0, NULL);
			drain(c);
			assert_status(c, other, lk, -EAGAIN);
		}
	lk = lock_on(c, 2, 102, "late", DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0, NULL);
	drain(c);
	assert_status(c, 2, lk, -EAGAIN);
	assert_verified(c);
	cluster_free(c);
}

static void test_recover_narrow(void **state)
{
	(void)state;
	narrow_recovery(false);
}

static void test_recover_narrow_then_full(void **state)
{
	(void)state;
	narrow_recovery(true);
}

/* A recovery aborted half way by a newer event, then a node joining. */
static void test_recover_abort_and_join(void **state)
{
	struct cluster *c = cluster_new(4, 100);
	uint32_t ids[4][8];
	char name[8];
	int i, k, steps;

	(void)state;
	/* node 4 is not a member at first */
	c->dead[4] = 1;
	for (i = 1; i <= 3; i++) {
		assert_int_equal(dlm_core_ls_stop(c->ls[i]), 0);
		assert_int_equal(dlm_core_ls_start(c->ls[i], 1,
				 (uint32_t[]){ 1, 2, 3 }, 3), 0);
	}
	drain(c);
	finish_all(c, 1);
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		for (i = 1; i <= 3; i++)
			ids[i][k] = lock_on(c, i, (uint64_t)i, name, DLM_LOCK_PR,
					    0, 0, NULL);
	}
	drain(c);
	/* node 2 dies; recovery 2 is interrupted after a few messages */
	c->dead[2] = 1;
	stop_all(c);
	start_all(c, 2);
	for (steps = 0; steps < 5 && c->qhead != c->qtail; steps++) {
		struct qmsg *m = &c->q[c->qhead++ % MAXQ];

		if (!c->dead[m->to] && !c->dead[m->from])
			dlm_core_receive(c->core[m->to], m->from, m->buf, m->len);
	}
	/* node 4 joins: event 3 supersedes 2 */
	c->dead[4] = 0;
	stop_all(c);
	start_all(c, 3);
	drain(c);
	finish_all(c, 3);
	/* every survivor's lock is still there, granted; node 2's are gone */
	for (k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "k%d", k);
		for (i = 1; i <= 3; i += 2)
			assert_status(c, i, ids[i][k], 0);
		/* an EX from the new node waits for both PR holders */
		ids[0][k] = lock_on(c, 4, 4, name, DLM_LOCK_EX, 0, 0, NULL);
	}
	drain(c);
	for (k = 0; k < 8; k++) {
		assert_no_comp(c, 4, ids[0][k]);
		assert_int_equal(unlock(c, 1, 1, ids[1][k], 0, NULL), 0);
		assert_int_equal(unlock(c, 3, 3, ids[3][k], 0, NULL), 0);
	}
	drain(c);
	for (k = 0; k < 8; k++)
		assert_status(c, 4, ids[0][k], 0);
	assert_dump_lacks(c, 1, "node 2 ");
	assert_int_equal(c->nlog_warn, 0);
	cluster_free(c);
}

/* A resource made here while we were stopped is no recovery step's
 * (step_start collected them before; "rsbs created while stopped wait
 * for finish").  Node 3 masters root 'name' and its child "x", where
 * node 1's PW waits behind node 3's EX; node 3 dies.  Once the
 * recovery has begun (step_start ran), node 2's client locks "x" under
 * its lock on the root (node 2 makes the rsb then) and gives it up
 * again.  Node 2 becomes the root's
 * master, so the child's, and node 1 resends its waiting PW (RC_LOCK)
 * to it: node 2 found "x" already its own and queued the lock on an rsb
 * no step visits, so the grant step never granted it and it waited for
 * ever, alone on its queue (dlm-sim seed 462).  Now receive_rc_lock
 * tracks it (RESF_REC_TRACKED): granted at the recovery's end. */
static void test_recover_child_made_while_stopped(void **state)
{
	struct cluster *c = cluster_new(3, 3600000);
	uint32_t p1, p2, p3, k1, k2, k3;
	char name[16];

	(void)state;
	/* node 2 directs the root among the survivors: it asks itself
	 * first and becomes its master */
	name_directed_by("R", 2, 2, name, sizeof(name));
	p3 = lock_on(c, 3, 3, name, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 3, p3, 0);
	p1 = lock_on(c, 1, 1, name, DLM_LOCK_NL, 0, 0, NULL);
	p2 = lock_on(c, 2, 2, name, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, p1, 0);
	assert_status(c, 2, p2, 0);
	k3 = lock_on(c, 3, 3, "x", DLM_LOCK_EX, 0, p3, NULL);
	drain(c);
	assert_status(c, 3, k3, 0);
	k1 = lock_on(c, 1, 1, "x", DLM_LOCK_PW, 0, p1, NULL);
	drain(c);
	assert_no_comp(c, 1, k1);
	assert_dump_lacks(c, 2, "/x\"");
	c->dead[3] = 1;
	stop_all(c);
	start_all(c, 1);
	/* recovery begun (step_start ran), before node 1's resend: node 2
	 * makes the child, its request held, then given up */
	k2 = lock_on(c, 2, 2, "x", DLM_LOCK_NL, 0, p2, NULL);
	assert_dump_has(c, 2, "/x\"");
	assert_int_equal(unlock(c, 2, 2, k2, DLM_LKF_CANCEL, NULL), 0);
	drain(c);
	finish_all(c, 1);
	drain(c);
	assert_dump_has(c, 2, " master 2");
	if (!comp_of(c, 1, k1))
		fail_msg("node 1's PW on a child node 2 made while stopped "
			 "was not granted by the recovery:\n%s", dump(c, 2));
	assert_status(c, 1, k1, 0);
	assert_verified(c);
	cluster_free(c);
}

/* Allocations fail on one node while its recovery is in the grant step
 * ("done"): arg is its lockspace. */
static int fail_in_grant_step(void *arg)
{
	const char *step = NULL;

	return dlm_core_ls_state(arg, NULL, &step) == DLM_LS_RECOVERING &&
	       step && !strcmp(step, "done");
}

/* A new master's convert queue may hold a conversion deadlock the old
 * master never had (the queue is rebuilt in another order), which the
 * grant step breaks (lock.c dlm_recover_deadlocks).  Its search of a
 * queue of more than 32 conversions needs memory; without it, the
 * search was logged and skipped, and the deadlock stayed for good: here
 * node 3's PR->PW QUECVT conversion B, queued behind 33 NL->EX ones of
 * node 2's that its PR blocks, neither ever granted (every conversion
 * hung, unlocks or not).  Now the grant step fails the recovery for
 * want of memory, the resource still marked, and the next run breaks
 * the deadlock (B gives way, -EDEADLK). */
static void test_recover_deadlock_no_memory(void **state)
{
	struct cluster *c = cluster_new(3, 3600000);
	uint32_t x, cl, b, a[33];
	char name[16];
	size_t i;

	(void)state;
	/* a name whose directory is node 2's with or without node 1 */
	name_directed_by("D", 3, 2, name, sizeof(name));
	x = lock_on(c, 1, 1, name, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_dump_has(c, 1, " master 1");
	cl = lock_on(c, 3, 3, name, DLM_LOCK_PR, 0, 0, NULL);
	b = lock_on(c, 3, 3, name, DLM_LOCK_PR, 0, 0, NULL);
	for (i = 0; i < 33; i++)
		a[i] = lock_on(c, 2, 2, name, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	/* at node 1, B is queued first, the NL->EX ones behind it: no
	 * cycle (B waits for C's PR only) */
	assert_int_equal(convert(c, 3, 3, b, DLM_LOCK_PW, DLM_LKF_QUECVT,
				 NULL), 0);
	drain(c);
	for (i = 0; i < 33; i++)
		assert_int_equal(convert(c, 2, 2, a[i], DLM_LOCK_EX, 0, NULL),
				 0);
	drain(c);
	assert_int_equal(count_asts(c, 3, b, DLM_AST_COMP), 1);
	assert_int_equal(count_asts(c, 2, a[0], DLM_AST_COMP), 1);
	/* node 1 dies: node 2 masters the name, its own conversions first
	 * on the queue, B behind them, waiting for them (QUECVT) as they
	 * wait for its PR */
	c->dead[1] = 1;
	stop_all(c);
	dlm_core_set_alloc_hook(c->core[2], fail_in_grant_step, c->ls[2]);
	start_all(c, 1);
	drain(c);
	dlm_core_set_alloc_hook(c->core[2], NULL, NULL);
	assert_dump_has(c, 2, " master 2");
	if (c->failed_event[2] == 1) {
		assert_int_equal(c->failed_error[2], -ENOMEM);
		recover_all(c, 2);
	} else {
		finish_all(c, 1);
	}
	if (count_asts(c, 3, b, DLM_AST_COMP) != 2)
		fail_msg("a conversion deadlock rebuilt by the new master was "
			 "left for want of memory:\n%s", dump(c, 2));
	assert_status(c, 3, b, -EDEADLK);
	assert_verified(c);
	/* and the rest goes on: C's PR, then B's, let node 2's EX through */
	assert_int_equal(unlock(c, 3, 3, cl, 0, NULL), 0);
	assert_int_equal(unlock(c, 3, 3, b, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, a[0], 0);
	assert_int_equal(comp_of(c, 2, a[0])->a.grmode, DLM_LOCK_EX);
	assert_verified(c);
	cluster_free(c);
	(void)x;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_ranges_out_of_memory),
		cmocka_unit_test(test_recover_master_dies),
		cmocka_unit_test(test_recover_quiet_steps),
		cmocka_unit_test(test_recover_partial_dir),
		cmocka_unit_test(test_recover_partial_held_remove),
		cmocka_unit_test(test_recover_partial_lost_lookup),
		cmocka_unit_test(test_recover_narrow),
		cmocka_unit_test(test_recover_narrow_then_full),
		cmocka_unit_test(test_recover_enomem),
		cmocka_unit_test(test_recover_token),
		cmocka_unit_test(test_forged_clock),
		cmocka_unit_test(test_forged_token),
		cmocka_unit_test(test_recover_held_and_resent),
		cmocka_unit_test(test_recover_inflight_unlock),
		cmocka_unit_test(test_recover_abort_dedupe),
		cmocka_unit_test(test_recover_abort_and_join),
		cmocka_unit_test(test_lazy_lvb_out_of_memory),
		cmocka_unit_test(test_recover_refused_write),
		cmocka_unit_test(test_recover_refused_unlock_write),
		cmocka_unit_test(test_recover_child_made_while_stopped),
		cmocka_unit_test(test_recover_deadlock_no_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
