/*
 * tests/test-core-dir.c - unit tests of the lock engine: the directory
 * and remote masters.  Lookups, grants and basts over messages, the toss
 * timer, stale masters, malformed messages, tables growing and
 * shrinking.  The harness: tests/test-core.h.
 */

#include "tests/test-core.h"

/* Three nodes: remote masters, lookups, grants and basts over messages,
 * then the toss timer drops everything, directory records included. */
static void test_three_nodes(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	char v[DLM_LVB_LEN] = "from node 2";
	struct dlm_ls_stats st;
	uint32_t a, b, d;
	int i;

	(void)state;
	a = lock_on(c, 1, 1, "shared", DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	b = lock_on(c, 2, 2, "shared", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	d = lock_on(c, 3, 3, "shared", DLM_LOCK_PR, DLM_LKF_VALBLK, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, b);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	assert_dump_has(c, 1, "master 1 master-copy");
	assert_dump_has(c, 2, "master 1 local-copy");
	assert_dump_has(c, 1, "node 2 remid");
	/* EX holder writes; both remote readers see it */
	memcpy(v, "from node 1", 12);
	assert_int_equal(unlock(c, 1, 1, a, DLM_LKF_VALBLK, v), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_status(c, 3, d, 0);
	assert_memory_equal(comp_of(c, 2, b)->lvb, v, DLM_LVB_LEN);
	assert_memory_equal(comp_of(c, 3, d)->lvb, v, DLM_LVB_LEN);
	/* remote conversion deadlock */
	assert_int_equal(convert(c, 2, 2, b, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_int_equal(convert(c, 3, 3, d, DLM_LOCK_EX, 0, NULL), 0);
	drain(c);
	assert_status(c, 3, d, -EDEADLK);
	assert_int_equal(last_bast_mode(c, 3, d), DLM_LOCK_EX);
	/* remote cancel of the other conversion */
	assert_int_equal(unlock(c, 2, 2, b, DLM_LKF_CANCEL, NULL), 0);
	drain(c);
	assert_status(c, 2, b, -DLM_ECANCEL);
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	assert_int_equal(unlock(c, 3, 3, d, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, -DLM_EUNLOCK);
	assert_status(c, 3, d, -DLM_EUNLOCK);
	/* many names, so that every node masters and directs some */
	for (i = 0; i < 60; i++) {
		char name[16];

		snprintf(name, sizeof(name), "n%d", i);
		lock_on(c, 1 + i % 3, 10 + i, name, DLM_LOCK_PR, 0, 0, NULL);
		lock_on(c, 1 + (i + 1) % 3, 100 + i, name, DLM_LOCK_PR, 0, 0, NULL);
	}
	drain(c);
	for (i = 1; i <= 3; i++) {
		dlm_core_ls_stats(c->ls[i], &st);
		assert_int_equal(st.ls_waiters, 0);
		assert_true(st.ls_dir_entries > 0);
	}
	for (i = 0; i < 60; i++) {
		dlm_core_purge_owner(c->ls[1 + i % 3], 10 + (uint64_t)i);
		dlm_core_purge_owner(c->ls[1 + (i + 1) % 3], 100 + (uint64_t)i);
	}
	drain(c);
	for (i = 1; i <= 3; i++)
		dlm_core_tick(c->core[i], 1000);
	drain(c);
	for (i = 1; i <= 3; i++) {
		dlm_core_ls_stats(c->ls[i], &st);
		assert_int_equal(st.ls_locks, 0);
		assert_int_equal(st.ls_resources, 0);
		assert_int_equal(st.ls_dir_entries, 0);
	}
	assert_int_equal(c->nlog_warn, 0);
	cluster_free(c);
}

/* A master that dropped a resource answers a stale requester, which
 * looks the master up again. */
static void test_stale_master(void **state)
{
	struct cluster *c = cluster_new(3, 100);
	uint32_t a, b;
	int i;

	(void)state;
	a = lock_on(c, 1, 1, "s", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	b = lock_on(c, 2, 2, "s", DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	/* node 1 (master) drops "s"; node 2 still remembers master 1 */
	dlm_core_tick(c->core[1], 1000);
	drain(c);
	assert_dump_has(c, 2, "resource \"s\" master 1 local-copy");
	b = lock_on(c, 2, 2, "s", DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_dump_has(c, 2, "resource \"s\" master 2 master-copy");
	for (i = 1; i <= 3; i++)
		assert_dump_lacks(c, i, "inflight");
	cluster_free(c);
}

/* Malformed and misdirected messages are refused without harm. */
static void test_bad_messages(void **state)
{
	struct cluster *c = cluster_new(2, 100);
	unsigned char buf[DLM_WIRE_MAX_LEN];
	struct dlm_msg m;
	int len, i;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.m_type = DLM_MSG_GRANT;
	m.m_lsid = dlm_core_ls_id(c->ls[1]);
	m.m_from = 2;
	m.m_to = 1;
	m.m_remid = 0x1234;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	/* unknown lock */
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -ENOENT);
	/* wrong sender in the header */
	assert_int_equal(dlm_core_receive(c->core[1], 3, buf, (size_t)len), -EBADMSG);
	/* truncated at every length */
	for (i = 0; i < len; i++)
		assert_true(dlm_core_receive(c->core[1], 2, buf, (size_t)i) < 0);
	/* bad version, bad type, bad key */
	buf[4] = 9;
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EPROTO);
	buf[4] = DLM_WIRE_VERSION;
	buf[6] = 200;
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EOPNOTSUPP);
	m.m_type = DLM_MSG_LOOKUP;
	m.m_key = (const unsigned char *)"\x05" "ab";
	m.m_keylen = 3;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -EBADMSG);
	/* a fencing token with a mode that does not write */
	{
		struct dlm_msg d;
		const char *why = NULL;

		m.m_type = DLM_MSG_GRANT;
		m.m_keylen = 0;
		m.m_token = 7;
		m.m_grmode = DLM_LOCK_PR;
		len = dlm_msg_encode(&m, buf, sizeof(buf));
		assert_int_equal(dlm_msg_decode(buf, (size_t)len, &d, &why),
				 -EBADMSG);
		m.m_grmode = DLM_LOCK_CW;
		m.m_clock = 9;
		len = dlm_msg_encode(&m, buf, sizeof(buf));
		assert_int_equal(dlm_msg_decode(buf, (size_t)len, &d, &why), 0);
		assert_true(d.m_token == 7 && d.m_clock == 9);
		m.m_token = 0;
		m.m_clock = 0;
		m.m_grmode = DLM_LOCK_NL;
	}
	/* unknown lockspace */
	m.m_type = DLM_MSG_GRANT;
	m.m_keylen = 0;
	m.m_lsid = 42;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(dlm_core_receive(c->core[1], 2, buf, (size_t)len), -ENOENT);
	assert_true(c->nlog_warn > 0);
	cluster_free(c);
}

/* Tables grow and shrink: 100k locks on 100k resources and back. */
static void test_growth(void **state)
{
	struct cluster *c = cluster_new(1, 1);
	struct dlm_ls_stats st;
	uint32_t *ids = malloc(100000 * sizeof(*ids));
	char name[16];
	int i;

	(void)state;
	assert_non_null(ids);
	for (i = 0; i < 100000; i++) {
		struct dlm_lock_req rq = { .mode = DLM_LOCK_EX, .name = name,
					   .owner = 1 };

		rq.namelen = (unsigned)snprintf(name, sizeof(name), "g%d", i);
		assert_int_equal(dlm_core_lock(c->ls[1], &rq, &ids[i]), 0);
		c->nasts = 0;
	}
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 100000);
	assert_int_equal(st.ls_resources, 100000);
	for (i = 0; i < 100000; i++) {
		assert_int_equal(unlock(c, 1, 1, ids[i], 0, NULL), 0);
		c->nasts = 0;
	}
	dlm_core_tick(c->core[1], 10);
	dlm_core_ls_stats(c->ls[1], &st);
	assert_int_equal(st.ls_locks, 0);
	assert_int_equal(st.ls_resources, 0);
	free(ids);
	cluster_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_nodes),
		cmocka_unit_test(test_stale_master),
		cmocka_unit_test(test_bad_messages),
		cmocka_unit_test(test_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
