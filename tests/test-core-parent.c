/*
 * tests/test-core-parent.c - unit tests of the lock engine: parent and
 * range.  Sub-resources under parent locks (to any depth), byte-range
 * locks, and the owners of locks: persistent locks orphaned, adopted and
 * purged.  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"

/* A chain of 'depth' locks of 'owner' on node, each under the one before,
 * all named 'name'; each granted (ASTs checked, then forgotten, so the
 * record does not fill up).  Returns the deepest lock id. */
static uint32_t lock_chain(struct cluster *c, int node, uint64_t owner,
			   const char *name, int mode, unsigned int depth)
{
	uint32_t parent = 0;

	for (unsigned int i = 0; i < depth; i++) {
		parent = lock_on(c, node, owner, name, mode, 0, parent, NULL);
		drain(c);
		assert_status(c, node, parent, 0);
		c->nasts = 0;
	}
	return parent;
}

static void test_parent_locks(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	uint32_t p1, p2, k1, k2, q;

	(void)state;
	p1 = lock_on(c, 1, 1, "file", DLM_LOCK_PR, 0, 0, NULL);
	p2 = lock_on(c, 1, 2, "file", DLM_LOCK_PR, 0, 0, NULL);
	k1 = lock_on(c, 1, 1, "blk", DLM_LOCK_EX, 0, p1, NULL);
	assert_status(c, 1, k1, 0);
	/* the same child name under the same parent resource conflicts */
	k2 = lock_on(c, 1, 2, "blk", DLM_LOCK_EX, DLM_LKF_NOQUEUE, p2, NULL);
	assert_status(c, 1, k2, -EAGAIN);
	/* a root resource of the same name is another resource */
	q = lock_on(c, 1, 2, "blk", DLM_LOCK_EX, 0, 0, NULL);
	assert_status(c, 1, q, 0);
	assert_dump_has(c, 1, "resource \"file/blk\"");
	/* a parent with children cannot be unlocked */
	assert_int_equal(unlock(c, 1, 1, p1, 0, NULL), -EBUSY);
	assert_int_equal(unlock(c, 1, 1, p1, DLM_LKF_FORCEUNLOCK, NULL), -EBUSY);
	/* another owner's lock cannot be a parent */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = p1,
		.owner = 2 }, &k2), -EPERM);
	/* a parent that is not granted cannot have children */
	q = lock_on(c, 1, 3, "file2", DLM_LOCK_EX, 0, 0, NULL);
	k2 = lock_on(c, 1, 4, "file2", DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = k2,
		.owner = 4 }, &q), -EINVAL);
	/* persistent children are not supported */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .parent = p1,
		.flags = DLM_LKF_PERSISTENT, .owner = 1 }, &q), -EINVAL);
	assert_int_equal(unlock(c, 1, 1, k1, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, p1, 0, NULL), 0);
	/* purging an owner unlocks children before parents */
	p1 = lock_on(c, 1, 5, "tree", DLM_LOCK_EX, 0, 0, NULL);
	k1 = lock_on(c, 1, 5, "a", DLM_LOCK_EX, 0, p1, NULL);
	k2 = lock_on(c, 1, 5, "b", DLM_LOCK_EX, 0, k1, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 5), 3);
	assert_dump_lacks(c, 1, "tree/a/b\"\n  granted");
	assert_dump_lacks(c, 1, "owner 5");
	cluster_free(c);
}

/* Parent locks nest without a depth limit (the fifth level was EINVAL),
 * a path means the same resource wherever it is locked from, and a deep
 * tree is purged without recursion (100000 levels overflowed the stack
 * when each parent's unlock ran inside its child's). */
static void test_parent_deep(void **state)
{
	enum { DEEP = 100000, WIDE = 12 };
	struct cluster *c = cluster_new(2, 1000);
	struct dlm_ls_stats st;
	uint32_t a, b, k;

	(void)state;
	/* the same path from two nodes is one resource, past the depth
	 * where keys become digests */
	a = lock_chain(c, 1, 1, "d", DLM_LOCK_CR, WIDE);
	b = lock_chain(c, 2, 2, "d", DLM_LOCK_CR, WIDE);
	k = lock_on(c, 1, 1, "leaf", DLM_LOCK_EX, DLM_LKF_NOQUEUE, a, NULL);
	drain(c);
	assert_status(c, 1, k, 0);
	k = lock_on(c, 2, 2, "leaf", DLM_LOCK_EX, DLM_LKF_NOQUEUE, b, NULL);
	drain(c);
	assert_status(c, 2, k, -EAGAIN);
	/* ... and another name there is another resource */
	k = lock_on(c, 2, 2, "leaf2", DLM_LOCK_EX, DLM_LKF_NOQUEUE, b, NULL);
	drain(c);
	assert_status(c, 2, k, 0);
	c->nasts = 0;
	/* the dump names a deep one by its parent's digest and its name */
	assert_dump_has(c, 1, "\\#");
	assert_dump_has(c, 1, "/leaf\"");
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 1), WIDE + 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], 2), WIDE + 1);
	drain(c);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 0);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_locks, 0);

	/* Very deep: node 1 masters a chain of DEEP - 1 resources; node 2
	 * locks the same chain and one more below it, which node 1 locks
	 * last.  All are mastered with their root on node 1 (issue 18), so
	 * purging node 1's owner unlocks the whole chain at once, bottom up,
	 * and leaves node 2's DEEP master copies. */
	a = lock_chain(c, 1, 3, "x", DLM_LOCK_CR, DEEP - 1);
	lock_chain(c, 2, 4, "x", DLM_LOCK_CR, DEEP);
	k = lock_on(c, 1, 3, "x", DLM_LOCK_CR, 0, a, NULL);
	drain(c);
	assert_status(c, 1, k, 0);
	c->nasts = 0;
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 3), DEEP);
	drain(c);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, (uint64_t)DEEP);	/* node 2's master copies */
	assert_int_equal(c->nasts, 0);	/* a purge sends no ASTs */
	assert_dump_lacks(c, 1, "owner 3");

	/* the key of a deep resource: short, the same for the same path,
	 * different under another parent */
	{
		unsigned char k1[DLM_MAX_KEYLEN], k2[DLM_MAX_KEYLEN];
		int l1 = dlm_key_child(NULL, 0, "x", 1, k1), l2;

		for (int i = 0; i < 50; i++) {
			memcpy(k2, k1, (size_t)l1);
			l1 = dlm_key_child(k2, (unsigned int)l1, "x", 1, k1);
			assert_true(l1 > 0 && l1 <= 1 + DLM_KEY_DIGEST_LEN + 2);
		}
		assert_int_equal(k1[0], DLM_KEY_DIGEST_MARK);
		assert_true(dlm_key_valid(k1, (size_t)l1));
		l2 = dlm_key_child(k2, (unsigned int)l1, "y", 1, k1);
		assert_true(l2 > 0);
		assert_int_equal(dlm_key_child(k2, 3, "y", 1, k1), -EINVAL);
		assert_int_equal(dlm_key_child(NULL, 0, "", 0, k1), -EINVAL);
	}
	cluster_free(c);
}

static void test_range_locks(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	struct dlm_range r1 = { 0, 99 }, r2 = { 100, 199 }, r3 = { 50, 150 };
	struct dlm_range bad = { 10, 5 };
	uint32_t a, b, d;

	(void)state;
	a = lock_on(c, 1, 1, "f", DLM_LOCK_EX, 0, 0, &r1);
	b = lock_on(c, 1, 2, "f", DLM_LOCK_EX, 0, 0, &r2);
	assert_status(c, 1, a, 0);
	assert_status(c, 1, b, 0);
	d = lock_on(c, 1, 3, "f", DLM_LOCK_PR, 0, 0, &r3);
	assert_no_comp(c, 1, d);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	assert_int_equal(last_bast_mode(c, 1, b), DLM_LOCK_PR);
	assert_dump_has(c, 1, "range 0-63");
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_no_comp(c, 1, d);
	assert_int_equal(unlock(c, 1, 2, b, 0, NULL), 0);
	assert_status(c, 1, d, 0);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_NL, .name = "x", .namelen = 1, .range = &bad,
		.owner = 2 }, &a), -EINVAL);
	cluster_free(c);
}

/* may_adopt for test_orphans: only orphans of owner *arg. */
static int adopt_only_owner(void *arg, uint64_t orphan_owner)
{
	return orphan_owner == *(uint64_t *)arg;
}

static void test_orphans(void **state)
{
	struct cluster *c = cluster_new(1, 1000);
	struct dlm_ls_stats st;
	uint32_t p, n, w, adopted = 0;
	int nasts;

	(void)state;
	p = lock_on(c, 1, 7, "keep", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	n = lock_on(c, 1, 7, "drop", DLM_LOCK_EX, 0, 0, NULL);
	w = lock_on(c, 1, 8, "keep", DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 7), 2);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 1);
	assert_dump_has(c, 1, "orphan");
	assert_no_comp(c, 1, w);		/* the orphan still holds EX */
	nasts = c->nasts;
	/* adopt: wrong mode (EAGAIN: try the other mode, as the kernel
	 * answers), no such name (ENOENT), then right mode */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), -EAGAIN);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "kept", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), -ENOENT);
	/* another mode, but not the requester's to take: -EPERM */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 6 } },
		&adopted), -EPERM);
	/* the caller's may_adopt refuses it: -EPERM, the orphan stays */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 6 } },
		&adopted), -EPERM);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 1);
	/* ... and is asked about the orphan's owner: 7 */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9,
		.may_adopt = adopt_only_owner, .may_adopt_arg = &(uint64_t){ 7 } },
		&adopted), 0);
	assert_int_equal(adopted, p);
	/* adoption is synchronous: no completion AST, as in the kernel */
	assert_int_equal(c->nasts, nasts);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 9), 1);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "keep", .namelen = 4,
		.flags = DLM_LKF_ORPHAN | DLM_LKF_PERSISTENT, .owner = 9 },
		&adopted), 0);
	assert_int_equal(adopted, p);
	assert_int_equal(c->nasts, nasts);
	/* the adopter owns it: it converts it like any lock of its own */
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_PR, .lkid = p, .flags = DLM_LKF_CONVERT | DLM_LKF_PERSISTENT,
		.owner = 9 }, &adopted), 0);
	assert_status(c, 1, p, 0);
	/* orphan it again and purge it */
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 9), 1);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 0, 12345), 0);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 0, 9), 1);
	assert_status(c, 1, w, 0);
	assert_int_equal(dlm_core_purge_orphans(c->ls[1], 99, 0), -EINVAL);
	/* an adoption without PERSISTENT makes the lock an ordinary one:
	 * its adopter's exit unlocks it */
	p = lock_on(c, 1, 10, "again", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 10), 1);
	assert_int_equal(dlm_core_lock(c->ls[1], &(struct dlm_lock_req){
		.mode = DLM_LOCK_EX, .name = "again", .namelen = 5,
		.flags = DLM_LKF_ORPHAN, .owner = 11 }, &adopted), 0);
	assert_int_equal(adopted, p);
	assert_int_equal(dlm_core_purge_owner(c->ls[1], 11), 1);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_orphans, 0);
	cluster_free(c);
	(void)n;
}

/* dlm_ls_purge(nodeid, pid) on another node: the orphans of every owner
 * of that owner group (the daemon's pid), and only those, go there. */
static void test_purge_orphan_group(void **state)
{
	struct cluster *c = cluster_new(2, 1000);
	const uint64_t a1 = (5ULL << 32) | 1, a2 = (5ULL << 32) | 2;
	const uint64_t b1 = (6ULL << 32) | 1;
	struct dlm_ls_stats st;

	(void)state;
	lock_on(c, 2, a1, "ga1", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	lock_on(c, 2, a2, "ga2", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	lock_on(c, 2, b1, "gb1", DLM_LOCK_EX, DLM_LKF_PERSISTENT, 0, NULL);
	drain(c);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], a1), 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], a2), 1);
	assert_int_equal(dlm_core_purge_owner(c->ls[2], b1), 1);
	drain(c);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 3);
	/* group 0 matches nobody; an unknown node is refused */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[2], 0, 0), 0);
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[1], 99, 5), -EINVAL);
	/* from node 1: a message asks node 2 */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[1], 2, 5), 0);
	drain(c);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 1);
	assert_dump_has(c, 2, "gb1");
	/* locally */
	assert_int_equal(dlm_core_purge_orphan_group(c->ls[2], 0, 6), 1);
	dlm_core_ls_stats(c->ls[2], &st);
	assert_int_equal(st.ls_orphans, 0);
	drain(c);
	cluster_free(c);
}

/* The dump's "dir" of a resource (core/dump.c) on node 'node': the node
 * number it names, or 0 for "dir parent"; fails when the resource is
 * missing or the field is neither. */
static unsigned int dump_dir(struct cluster *c, int node, const char *path)
{
	char *text = dump(c, node), needle[64], *p;
	unsigned int dir = 0;

	snprintf(needle, sizeof(needle), "resource \"%s\" master ", path);
	p = strstr(text, needle);
	if (!p)
		fail_msg("node %d has no resource %s:\n%s", node, path, text);
	p = strstr(p, " dir ");
	assert_non_null(p);
	p += 5;
	if (strncmp(p, "parent", 6) && sscanf(p, "%u", &dir) != 1)
		fail_msg("node %d, %s: dir %.20s", node, path, p);
	free(text);
	return dir;
}

/* A sub-resource is mastered with its parent and has no directory
 * record (issue 18): the dump says "dir parent" for it, on its master
 * and on a node with a local copy, and a root's directory node. */
static void test_child_dump(void **state)
{
	struct cluster *c = cluster_new(3, 1000);
	uint32_t p1, p2;
	unsigned int dir;

	(void)state;
	p1 = lock_on(c, 1, 1, "p", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	p2 = lock_on(c, 2, 2, "p", DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, p1, 0);
	assert_status(c, 2, p2, 0);
	assert_status(c, 1, lock_on(c, 1, 1, "kid", DLM_LOCK_EX, 0, p1, NULL), 0);
	lock_on(c, 2, 2, "kid", DLM_LOCK_NL, 0, p2, NULL);
	drain(c);
	assert_dump_has(c, 1, "resource \"p/kid\" master 1 master-copy dir parent\n");
	assert_dump_has(c, 2, "resource \"p/kid\" master 1 local-copy dir parent\n");
	/* the root's directory node is a member, the same one on both */
	dir = dump_dir(c, 1, "p");
	assert_true(dir >= 1 && dir <= 3);
	assert_int_equal(dump_dir(c, 2, "p"), dir);
	assert_int_equal(dump_dir(c, 2, "p/kid"), 0);
	cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parent_locks),
		cmocka_unit_test(test_parent_deep),
		cmocka_unit_test(test_child_dump),
		cmocka_unit_test(test_range_locks),
		cmocka_unit_test(test_orphans),
		cmocka_unit_test(test_purge_orphan_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
