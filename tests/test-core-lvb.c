/*
 * tests/test-core-lvb.c - unit tests of the lock engine: lock value
 * blocks.  Reads and writes by mode, and what a recovery keeps of them
 * (purged writers, a dead master, sequence numbers across the wrap,
 * unused resources).  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"

static void test_lvb(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	char v1[DLM_LVB_LEN] = "value one", v2[DLM_LVB_LEN] = "value two";
	uint32_t w, r, r2;
	struct rec_ast *ra;

	(void)state;
	w = lock_on(c, 1, 1, "r", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	ra = comp_of(c, 1, w);
	assert_true(ra->has_lvb);
	assert_false(ra->a.sbflags & DLM_SBF_VALNOTVALID);
	/* the writer needs a value to give */
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, NULL), -EINVAL);
	r = lock_on(c, 1, 2, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_int_equal(unlock(c, 1, 1, w, DLM_LKF_VALBLK, v1), 0);
	ra = comp_of(c, 1, r);
	assert_int_equal(ra->a.status, 0);
	assert_memory_equal(ra->lvb, v1, DLM_LVB_LEN);
	assert_dump_has(c, 1, "seq 1 valid");
	/* the reader up-converts, then writes on down-conversion */
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_EX, DLM_LKF_VALBLK, v1), 0);
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_NL, DLM_LKF_VALBLK, v2), 0);
	r2 = lock_on(c, 1, 3, "r", DLM_LOCK_CR, DLM_LKF_VALBLK, 0, NULL);
	assert_memory_equal(comp_of(c, 1, r2)->lvb, v2, DLM_LVB_LEN);
	/* IVVALBLK from a writer invalidates */
	assert_int_equal(convert(c, 1, 2, r, DLM_LOCK_EX, DLM_LKF_VALBLK, v2), 0);
	assert_int_equal(count_asts(c, 1, r, DLM_AST_COMP), 3); /* CR blocks EX */
	assert_int_equal(unlock(c, 1, 3, r2, 0, NULL), 0);
	assert_status(c, 1, r, 0);
	assert_int_equal(unlock(c, 1, 2, r, DLM_LKF_IVVALBLK, NULL), 0);
	assert_dump_has(c, 1, "invalid");
	r2 = lock_on(c, 1, 3, "r", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	assert_true(comp_of(c, 1, r2)->a.sbflags & DLM_SBF_VALNOTVALID);
	cluster_free(c);
}

/* A holder dies on a surviving master: its locks are purged; an EX it
 * held makes the LVB invalid; a PR holder's LVB survives a master death. */
static void test_recover_purge_and_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v[DLM_LVB_LEN] = "written by 2";
	uint32_t m1, w, r, p;

	(void)state;
	m1 = lock_on(c, 1, 1, "L", DLM_LOCK_NL, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	w = lock_on(c, 2, 2, "L", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_int_equal(convert(c, 2, 2, w, DLM_LOCK_PR, DLM_LKF_VALBLK, v), 0);
	drain(c);
	p = lock_on(c, 3, 3, "L", DLM_LOCK_PW, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 3, p);
	/* node 1 (the master) dies: node 2's PR copy carries the LVB */
	c->dead[1] = 1;
	recover_all(c, 1);
	assert_int_equal(unlock(c, 2, 2, w, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, p, 0);
	assert_false(comp_of(c, 3, p)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(comp_of(c, 3, p)->lvb, v, DLM_LVB_LEN);
	/* now node 3 holds PW and dies; node 2 waits and must be told the
	 * value may be stale */
	r = lock_on(c, 2, 2, "L", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, r);
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_status(c, 2, r, 0);
	assert_true(comp_of(c, 2, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_dump_lacks(c, 2, "node 3");
	assert_dump_has(c, 2, "invalid");
	cluster_free(c);
	(void)m1;
}

/* A CR lock on node (owner: the node id) reads 'name''s LVB, which must
 * be 'expect', and steps down to NL keeping its copy. */
static uint32_t read_then_nl(struct cluster *c, int node, const char *name,
			     const char *expect)
{
	uint32_t lkid = lock_on(c, node, (uint64_t)node, name, DLM_LOCK_CR,
				DLM_LKF_VALBLK, 0, NULL);

	drain(c);
	assert_status(c, node, lkid, 0);
	assert_memory_equal(comp_of(c, node, lkid)->lvb, expect, DLM_LVB_LEN);
	assert_int_equal(convert(c, node, (uint64_t)node, lkid, DLM_LOCK_NL,
				 DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	return lkid;
}

/* Node 'dead' dies; once the others recovered 'event', a new PR lock on
 * node 1 (owner 11) reads name's LVB: its completion. */
static struct rec_ast *read_after_death(struct cluster *c, int dead,
					uint32_t event, const char *name)
{
	uint32_t lkid;

	c->dead[dead] = 1;
	recover_all(c, event);
	lkid = lock_on(c, 1, 11, name, DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, lkid, 0);
	return comp_of(c, 1, lkid);
}

/* The master dies and no survivor holds PR or above: the new master takes
 * the newest copy a survivor read, by sequence number, and the newest is
 * newest across the wrap of the 32-bit sequence (serial-number order, as
 * the kernel's recover_lvb compares). */
static void test_recover_lvb_seq_wrap(void **state)
{
	/* the first write makes the sequence 0xffffffff, the second 0 */
	struct cluster *c = cluster_new_seq(3, 100, 0xfffffffeu);
	char va[DLM_LVB_LEN] = "older, seq 0xffffffff";
	char vb[DLM_LVB_LEN] = "newer, seq 0 (wrapped)";
	struct rec_ast *got;
	uint32_t w;

	(void)state;
	/* node 3 masters W and writes va */
	w = lock_on(c, 3, 3, "W", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_int_equal(convert(c, 3, 3, w, DLM_LOCK_NL, DLM_LKF_VALBLK, va), 0);
	drain(c);
	assert_dump_has(c, 3, "seq 4294967295");
	/* node 1 reads va, then steps down to NL, keeping its copy */
	read_then_nl(c, 1, "W", va);
	/* node 3 writes vb: the sequence wraps to 0 */
	assert_int_equal(convert(c, 3, 3, w, DLM_LOCK_EX, DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	assert_int_equal(comp_of(c, 3, w)->a.grmode, DLM_LOCK_EX);
	assert_int_equal(convert(c, 3, 3, w, DLM_LOCK_NL, DLM_LKF_VALBLK, vb), 0);
	drain(c);
	assert_dump_has(c, 3, "seq 0 ");
	/* node 2 reads vb and steps down to NL */
	read_then_nl(c, 2, "W", vb);
	/* the master dies: the new one must pick vb, flagged invalid (no
	 * holder in PR or above vouches for it) */
	got = read_after_death(c, 3, 1, "W");
	assert_true(got->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(got->lvb, vb, DLM_LVB_LEN);
	cluster_free(c);
}

/* Issue 11 item 5, the finding's sequence: the master of a resource is
 * also its writer; its EX unlock with VALBLK completes at once (the
 * master is local) and writes the value there alone.  The master dies.
 * A survivor's lock with VALBLK holds an older copy (read earlier, now
 * NL).  After recovery the survivor's EX must not be handed the older
 * value as valid: the newest write died with the master, so the value is
 * flagged VALNOTVALID. */
static void test_recover_lost_write_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v1[DLM_LVB_LEN] = "value 1", v2[DLM_LVB_LEN] = "value 2";
	uint32_t w1, w2, r;

	(void)state;
	w1 = lock_on(c, 2, 2, "LW", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, w1, 0);
	assert_int_equal(unlock(c, 2, 2, w1, DLM_LKF_VALBLK, v1), 0);
	drain(c);
	r = lock_on(c, 1, 1, "LW", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, r, 0);
	assert_memory_equal(comp_of(c, 1, r)->lvb, v1, DLM_LVB_LEN);
	assert_int_equal(convert(c, 1, 1, r, DLM_LOCK_NL, DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	w2 = lock_on(c, 2, 2, "LW", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 2, w2, 0);
	assert_int_equal(unlock(c, 2, 2, w2, DLM_LKF_VALBLK, v2), 0);
	drain(c);
	assert_status(c, 2, w2, -DLM_EUNLOCK);
	/* the master, node 2, dies with value 2 written there alone */
	c->dead[2] = 1;
	recover_all(c, 1);
	assert_int_equal(convert(c, 1, 1, r, DLM_LOCK_EX, DLM_LKF_VALBLK, NULL), 0);
	drain(c);
	assert_status(c, 1, r, 0);
	if (!(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID))
		assert_memory_equal(comp_of(c, 1, r)->lvb, v2, DLM_LVB_LEN);
	assert_true(comp_of(c, 1, r)->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_verified(c);
	cluster_free(c);
}

/* A resource no one holds, on a master that survives, keeps the value a
 * writer left in it across a recovery another node's death causes. */
static void test_recover_unused_keeps_lvb(void **state)
{
	struct cluster *c = cluster_new(3, 60000);
	char v[DLM_LVB_LEN] = "left by node 1";
	struct rec_ast *got;
	uint32_t a;

	(void)state;
	a = lock_on(c, 2, 2, "K", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_int_equal(unlock(c, 2, 2, a, 0, NULL), 0);	/* node 2 masters K */
	drain(c);
	a = lock_on(c, 1, 1, "K", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	drain(c);
	assert_dump_has(c, 2, "resource \"K\" master 2 master-copy");
	assert_dump_has(c, 2, "unused");
	got = read_after_death(c, 3, 1, "K");
	assert_false(got->a.sbflags & DLM_SBF_VALNOTVALID);
	assert_memory_equal(got->lvb, v, DLM_LVB_LEN);
	cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lvb),
		cmocka_unit_test(test_recover_purge_and_lvb),
		cmocka_unit_test(test_recover_lvb_seq_wrap),
		cmocka_unit_test(test_recover_unused_keeps_lvb),
		cmocka_unit_test(test_recover_lost_write_lvb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
