/*
 * tests/test-core-solo-shared.c - lone locks folded with their resources
 * in a lockspace with other members (core/solo.c, "Shared lockspaces";
 * issue 14): a lock folds only on a name its node directs; a message of
 * another node naming the resource (a LOOKUP, a REQUEST) unfolds that one
 * resource first, whole or not at all, and the other node's lock then
 * finds this node its master, as it would have unfolded; a recovery
 * leaves folded those whose directory stays here (a death: all of them)
 * and unfolds those whose directory moves to a node that joins
 * (solo.c, "Recovery").  A lock on a name another node directs folds
 * once its lookup made its node master; its expiry sends the REMOVE,
 * and a recovery registers it with its directory node, unfolding none
 * (solo.c, "Names other nodes direct": test_remote_*).  The harness:
 * tests/test-core.h.
 */

#include "tests/test-core.h"
#include "core/core_internal.h"

static size_t nsolos(struct cluster *c, int node)
{
	return dlm_solo_count(c->ls[node]);
}

static struct dlm_ls_stats stats(struct cluster *c, int node)
{
	struct dlm_ls_stats st;

	dlm_core_ls_stats(c->ls[node], &st);
	return st;
}

/* The start most of these tests share: n members folding, name (from
 * prefix, NAME_LEN bytes) one that node 1 directs, and node 1's EX lock on
 * it, folded; *cp the cluster.  Returns the lock's id. */
#define NAME_LEN	16
static uint32_t start_folded_ex(struct cluster **cp, int n,
				const char *prefix, char *name)
{
	struct cluster *c = fold_cluster(n);
	uint32_t id;

	name_directed_by(prefix, (uint32_t)n, 1, name, NAME_LEN);
	id = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 1);
	*cp = c;
	return id;
}

/* The one message in flight, taken off the queue: it is for node 'to'. */
static struct qmsg take_only_msg(struct cluster *c, uint32_t to)
{
	struct qmsg m;

	assert_int_equal(c->qtail - c->qhead, 1);
	m = c->q[c->qhead++ % MAXQ];
	assert_int_equal(m.to, to);
	return m;
}

/* A message from 'from' offered to node 1 with no memory to be had: not
 * taken (-ENOMEM); memory comes back after. */
static void receive_no_memory(struct cluster *c, uint32_t from,
			      const unsigned char *buf, size_t len)
{
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_receive(c->core[1], from, buf, len),
			 -ENOMEM);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
}

/* Node 'holder' (its own client) unlocks 'held': the lock of node
 * 'waiter' that waited for it, 'want', is granted. */
static void unlock_grants(struct cluster *c, int holder, uint32_t held,
			  int waiter, uint32_t want)
{
	assert_int_equal(unlock(c, holder, holder, held, 0, NULL), 0);
	drain(c);
	assert_status(c, waiter, want, 0);
}

/* Of two members, each folds the lone locks on the names it directs at
 * once, and on a name the other directs once its lookup made it master
 * ("Names other nodes direct", below); with folding off nothing folds. */
static void test_shared_folds_directed(void **state)
{
	struct cluster *c = fold_cluster(2);
	char mine[16], theirs[16];
	uint32_t a, b;

	(void)state;
	name_directed_by("m", 2, 1, mine, sizeof(mine));
	name_directed_by("t", 2, 2, theirs, sizeof(theirs));
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_status(c, 1, a, 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_folds_shared, 1);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 0);
	b = lock_on(c, 1, 1, theirs, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, b, 0);
	assert_int_equal(nsolos(c, 1), 2);
	assert_int_equal(nsolos(c, 2), 0);
	assert_int_equal(stats(c, 1).ls_folds_shared, 1);
	assert_int_equal(stats(c, 1).ls_folds_remote, 1);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 0);
	assert_int_equal(stats(c, 1).ls_locks, 2);
	assert_int_equal(stats(c, 1).ls_resources, 2);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_status(c, 1, a, -DLM_EUNLOCK);
	assert_int_equal(nsolos(c, 1), 1);
	assert_verified(c);
	cluster_free(c);

	c = cluster_new(2, 1000);
	lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 0);
	cluster_free(c);
}

/* Another node's lock on a folded name: its LOOKUP unfolds that resource
 * (and no other), the directory answers this node, its request waits for
 * the held lock (a bast here), and is granted at the unlock. */
static void test_shared_lookup_unfolds(void **state)
{
	struct cluster *c;
	char mine[NAME_LEN], other[NAME_LEN];
	uint32_t held, keep, want;

	(void)state;
	held = start_folded_ex(&c, 3, "m", mine);
	name_directed_by("o", 3, 1, other, sizeof(other));
	keep = lock_on(c, 1, 1, other, DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 2);
	want = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	assert_no_comp(c, 2, want);
	assert_int_equal(last_bast_mode(c, 1, held), DLM_LOCK_EX);
	assert_verified(c);
	unlock_grants(c, 1, held, 2, want);
	/* still mastered here: a lock of this node on it waits */
	held = lock_on(c, 1, 1, mine, DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 1, held);
	assert_int_equal(nsolos(c, 1), 1);
	assert_status(c, 1, keep, 0);
	assert_verified(c);
	cluster_free(c);
}

/* The LOOKUP that must unfold without memory is not taken (offered
 * again), changing nothing; taken later, it unfolds. */
static void test_shared_lookup_no_memory(void **state)
{
	struct cluster *c;
	char mine[NAME_LEN];
	uint32_t held, want;
	struct qmsg m;

	(void)state;
	held = start_folded_ex(&c, 2, "m", mine);
	want = lock_on(c, 2, 2, mine, DLM_LOCK_PR, 0, 0, NULL);
	m = take_only_msg(c, 1);
	receive_no_memory(c, m.from, m.buf, m.len);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(c->qtail - c->qhead, 0);
	assert_verified(c);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len), 0);
	assert_int_equal(nsolos(c, 1), 0);
	drain(c);
	assert_no_comp(c, 2, want);
	unlock_grants(c, 1, held, 2, want);
	assert_verified(c);
	cluster_free(c);
}

/* A tossed folded resource named by another node's LOOKUP becomes the
 * tossed rsb it stands for: the name stays mastered here, as unfolded;
 * this node's next lock on it does not fold (an rsb holds the name) and
 * waits for the other node's. */
static void test_shared_tossed_lookup(void **state)
{
	struct cluster *c;
	char mine[NAME_LEN], text[40];
	uint32_t a, theirs;

	(void)state;
	a = start_folded_ex(&c, 2, "m", mine);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_int_equal(stats(c, 1).ls_tossed, 1);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	theirs = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, theirs, 0);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	snprintf(text, sizeof(text), "resource \"%s\" master 1", mine);
	assert_dump_has(c, 2, text);
	a = lock_on(c, 1, 1, mine, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 0);
	assert_no_comp(c, 1, a);
	unlock_grants(c, 2, theirs, 1, a);
	assert_verified(c);
	cluster_free(c);
}

/* Without memory for the tossed rsb, the message is not taken and the
 * tossed solo stays. */
static void test_shared_tossed_no_memory(void **state)
{
	struct cluster *c;
	char mine[NAME_LEN];
	uint32_t a, theirs;
	struct qmsg m;

	(void)state;
	a = start_folded_ex(&c, 2, "m", mine);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	theirs = lock_on(c, 2, 2, mine, DLM_LOCK_EX, 0, 0, NULL);
	m = take_only_msg(c, 1);
	receive_no_memory(c, m.from, m.buf, m.len);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	assert_verified(c);
	assert_int_equal(dlm_core_receive(c->core[1], m.from, m.buf, m.len), 0);
	drain(c);
	assert_status(c, 2, theirs, 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 0);
	assert_verified(c);
	cluster_free(c);
}

/* The directory node of root name among members 1..n. */
static uint32_t dir_of(const char *name, uint32_t n)
{
	uint32_t members[MAXN], k;
	unsigned char key[32];

	for (k = 0; k < n; k++)
		members[k] = k + 1;
	key[0] = (unsigned char)strlen(name);
	memcpy(key + 1, name, key[0]);
	return dlm_dir_nodeid_of(members, n, dlm_hash_bytes(key, key[0] + 1u));
}

/* The first 'count' names "<prefix><i>" directed by node 'dir' among
 * 1..n, into names[]. */
static void names_directed_by(const char *prefix, uint32_t n, uint32_t dir,
			      char (*names)[16], int count)
{
	int i, k;

	for (i = 0, k = 0; k < count && i < 100 * count; i++) {
		snprintf(names[k], sizeof(names[k]), "%s%d", prefix, i);
		if (dir_of(names[k], n) == dir)
			k++;
	}
	assert_int_equal(k, count);
}

#define NDEATH	1000

/* A member leaves: no directory of a survivor's name moves (rendezvous),
 * so the recovery leaves every lone lock folded, unfolding none; the
 * other survivor's locks on their names still find this node their
 * master (each LOOKUP unfolds its one resource), and its lone locks
 * still fold and unlock. */
static void test_shared_death_keeps_folded(void **state)
{
	static char names[NDEATH][16];
	struct cluster *c = fold_cluster(3);
	static uint32_t ids[NDEATH];
	char other[16];
	uint32_t want, keep;
	int k;

	(void)state;
	names_directed_by("d", 3, 1, names, NDEATH);
	for (k = 0; k < NDEATH; k++)
		ids[k] = lock_on(c, 1, 1, names[k], DLM_LOCK_EX, 0, 0, NULL);
	/* a lock of node 2 on a name the dead node directed: its record
	 * moves, as the recovery rebuilds it */
	name_directed_by("o", 3, 3, other, sizeof(other));
	keep = lock_on(c, 2, 2, other, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, keep, 0);
	for (k = 0; k < NDEATH; k++)
		assert_status(c, 1, ids[k], 0);
	assert_int_equal(nsolos(c, 1), NDEATH);
	c->nasts = 0;
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_int_equal(nsolos(c, 1), NDEATH);
	assert_int_equal(stats(c, 1).ls_folded, NDEATH);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, 0);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	assert_verified(c);
	/* node 2's locks on the first hundred: refused (node 1 holds EX);
	 * each one's LOOKUP unfolded its resource only */
	for (k = 0; k < 100; k++)
		lock_on(c, 2, 2, names[k], DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0,
			NULL);
	drain(c);
	for (k = 0; k < c->nasts; k++) {
		assert_int_equal(c->asts[k].node, 2);
		assert_int_equal(c->asts[k].a.status, -EAGAIN);
	}
	assert_int_equal(c->nasts, 100);
	assert_int_equal(nsolos(c, 1), NDEATH - 100);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 100);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, 0);
	/* one still folded, unlocked: node 2's lock on it then waits for
	 * nobody, mastered here */
	assert_int_equal(unlock(c, 1, 1, ids[NDEATH - 1], 0, NULL), 0);
	assert_int_equal(nsolos(c, 1), NDEATH - 101);
	want = lock_on(c, 2, 2, names[NDEATH - 1], DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, want, 0);
	/* one more held by node 1 folds, and node 2's waits for it */
	want = lock_on(c, 1, 1, names[NDEATH - 1], DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 1, want);
	name_directed_by("after", 2, 1, other, sizeof(other));
	lock_on(c, 1, 1, other, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), NDEATH - 100);
	assert_verified(c);
	cluster_free(c);
}

#define NJOIN	300

/* A node joins: exactly the lone locks whose directory moves to it
 * unfold (and are registered with it, the rebuild being full), the
 * rest stay folded; the newcomer's locks on all of them are refused
 * while node 1 holds them, whichever node directs them now. */
static void test_shared_join_unfolds_moved(void **state)
{
	static char names[NJOIN][16];
	struct cluster *c = fold_cluster(3);
	int k, moved = 0;

	(void)state;
	c->dead[3] = 1;
	recover_all(c, 2);
	names_directed_by("j", 2, 1, names, NJOIN);
	for (k = 0; k < NJOIN; k++) {
		lock_on(c, 1, 1, names[k], DLM_LOCK_EX, 0, 0, NULL);
		if (dir_of(names[k], 3) != 1)
			moved++;
	}
	assert_int_equal(nsolos(c, 1), NJOIN);
	assert_true(moved > 0 && moved < NJOIN);
	c->nasts = 0;
	c->dead[3] = 0;
	recover_all(c, 3);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, moved);
	assert_int_equal(nsolos(c, 1), NJOIN - moved);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, moved);
	for (k = 0; k < NJOIN; k++) {
		unsigned char key[16];
		struct dlm_solo *so;

		key[0] = (unsigned char)strlen(names[k]);
		memcpy(key + 1, names[k], key[0]);
		so = dlm_solo_find_key(c->ls[1], key, key[0] + 1u,
				       dlm_hash_bytes(key, key[0] + 1u));
		assert_true(!so == (dir_of(names[k], 3) != 1));
	}
	assert_verified(c);
	for (k = 0; k < NJOIN; k++)
		lock_on(c, 3, 3, names[k], DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0,
			NULL);
	drain(c);
	for (k = 0; k < c->nasts; k++) {
		assert_int_equal(c->asts[k].node, 3);
		assert_int_equal(c->asts[k].a.status, -EAGAIN);
	}
	assert_int_equal(c->nasts, NJOIN);
	assert_int_equal(nsolos(c, 1), 0);
	assert_verified(c);
	cluster_free(c);
}

/* A rebuild that is full (a recovery restarted by a newer event) with a
 * lone lock kept folded, unfolded mid-way by a request of its own node:
 * its resource's record here survives the rebuild's sweep (solo.c,
 * solo_de_event), so another node's lock on it still finds this node
 * its master and is refused, not granted a second EX elsewhere. */
static void test_shared_full_rebuild_unfold(void **state)
{
	struct cluster *c;
	uint32_t held, second, theirs;
	char name[NAME_LEN];

	(void)state;
	held = start_folded_ex(&c, 2, "x", name);
	stop_all(c);
	start_all(c, 2);
	start_all(c, 3);	/* restarted: not partial, the rebuild is full */
	second = lock_on(c, 1, 2, name, DLM_LOCK_PR, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 0);
	drain(c);
	finish_all(c, 3);
	drain(c);
	assert_status(c, 1, held, 0);
	assert_no_comp(c, 1, second);
	theirs = lock_on(c, 2, 2, name, DLM_LOCK_EX, DLM_LKF_NOQUEUE, 0, NULL);
	drain(c);
	assert_status(c, 2, theirs, -EAGAIN);
	assert_verified(c);
	cluster_free(c);
}

/* A recovery message naming a folded resource (here an RC_LOOKUP of a
 * stale event) unfolds that one, once the lockspace stopped; one naming
 * none (RC_STATUS) unfolds nothing; without memory it is not taken,
 * nothing changed. */
static void test_shared_rc_msg_unfolds_named(void **state)
{
	struct cluster *c;
	unsigned char buf[DLM_WIRE_MAX_LEN], key[16];
	char name[NAME_LEN], other[NAME_LEN];
	struct dlm_msg m;
	int len;

	(void)state;
	start_folded_ex(&c, 2, "a", name);
	name_directed_by("b", 2, 1, other, sizeof(other));
	lock_on(c, 1, 1, other, DLM_LOCK_EX, 0, 0, NULL);
	assert_int_equal(nsolos(c, 1), 2);
	assert_int_equal(dlm_core_ls_stop(c->ls[1]), 0);
	memset(&m, 0, sizeof(m));
	m.m_type = DLM_RC_STATUS;
	m.m_lsid = dlm_core_ls_id(c->ls[1]);
	m.m_from = 2;
	m.m_to = 1;
	m.m_gen = 1;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	(void)dlm_core_receive(c->core[1], 2, buf, (size_t)len);
	assert_int_equal(nsolos(c, 1), 2);
	key[0] = (unsigned char)strlen(name);
	memcpy(key + 1, name, key[0]);
	m.m_type = DLM_RC_LOOKUP;
	m.m_key = key;
	m.m_keylen = key[0] + 1u;
	m.m_nodeid = 2;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	assert_true(len > 0);
	receive_no_memory(c, 2, buf, (size_t)len);
	assert_int_equal(nsolos(c, 1), 2);
	(void)dlm_core_receive(c->core[1], 2, buf, (size_t)len);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, 1);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 1);
	cluster_free(c);
}

/* A LOOKUP that arrives while this node waits to finish its recovery
 * (the other node finished first) is held, and finds its resource
 * unfolded as it is held: the replay at finish, which cannot offer a
 * message again, needs no memory for it (without that, seed 1516 of
 * dlm-sim --fold --faults --remaster --repoint --bounce --alloc-faults
 * 50: the unfold failed at the replay and the LOOKUP was lost). */
static void test_shared_held_lookup_unfolds(void **state)
{
	struct cluster *c;
	uint32_t held, want;
	char name[NAME_LEN];

	(void)state;
	held = start_folded_ex(&c, 2, "h", name);
	stop_all(c);
	start_all(c, 2);
	drain(c);
	assert_int_equal(dlm_core_ls_finish(c->ls[2], 2), 0);
	want = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);	/* node 1 holds the LOOKUP */
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	dlm_core_set_alloc_hook(c->core[1], fail_all, NULL);
	assert_int_equal(dlm_core_ls_finish(c->ls[1], 2), 0);
	dlm_core_set_alloc_hook(c->core[1], NULL, NULL);
	drain(c);
	assert_no_comp(c, 2, want);
	assert_int_equal(last_bast_mode(c, 1, held), DLM_LOCK_EX);
	unlock_grants(c, 1, held, 2, want);
	assert_verified(c);
	cluster_free(c);
}

/* Remastering (remaster_ticks 50, the re-point protocol) of a name node
 * 1 directs, on which it holds one lock converted 'convs' times (folded
 * with 'fold': counted at the unfold, so_nconv), while node 2 then locks,
 * converts twice and unlocks it over and over: the number of node 2's
 * operations after which the name has moved to node 2 (0: not in 400). */
static int ops_until_moved(bool fold, int convs)
{
	char name[16], want[48];
	struct cluster *c;
	uint32_t a, b;
	int k, n = 0;

	cluster_remaster_ticks = 50;
	cluster_remaster_shared = 1;
	cluster_fold = fold;
	c = cluster_new(2, 1000);
	cluster_fold = 0;
	name_directed_by("h", 2, 1, name, sizeof(name));
	snprintf(want, sizeof(want), "resource \"%s\" master 2", name);
	a = lock_on(c, 1, 1, name, DLM_LOCK_NL, 0, 0, NULL);
	for (k = 0; k < convs; k++)
		assert_int_equal(convert(c, 1, 1, a, k & 1 ? DLM_LOCK_NL :
					 DLM_LOCK_CR, 0, NULL), 0);
	assert_int_equal(nsolos(c, 1), fold ? 1 : 0);
	while (n < 400) {
		char *text;
		bool moved;

		b = lock_on(c, 2, 2, name, DLM_LOCK_NL, 0, 0, NULL);
		drain(c);
		assert_status(c, 2, b, 0);
		for (k = 0; k < 2; k++) {
			assert_int_equal(convert(c, 2, 2, b, k ? DLM_LOCK_NL :
						 DLM_LOCK_CR, 0, NULL), 0);
			drain(c);
		}
		n += 3;
		text = dump(c, 1);
		moved = strstr(text, want) != NULL;
		free(text);
		assert_int_equal(unlock(c, 2, 2, b, 0, NULL), 0);
		drain(c);
		if (moved)
			break;
	}
	assert_int_equal(nsolos(c, 1), 0);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	cluster_free(c);
	cluster_remaster_ticks = 0;
	cluster_remaster_shared = 0;
	return n < 400 ? n : 0;
}

/* A folded lock's own operations count towards remastering only when it
 * unfolds (solo.c so_nconv, dlm_solo_unfold), which is before any other
 * node's operation on the name is taken; a node's own operations never
 * start a move (only another node's do, dlm_remaster_consider), and a
 * node folds only names it masters.  So the count each move decision
 * reads is the one the unfolded path has: the name moves after the same
 * number of node 2's operations, folded or not, however much node 1 used
 * it before (review question: does a node whose locks are folded lose
 * the hot resource sooner? no). */
static void test_shared_fold_remaster_counts(void **state)
{
	static const int convs[] = { 0, 1, 7, 31, 32, 40, 100 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(convs) / sizeof(convs[0]); i++) {
		int plain = ops_until_moved(false, convs[i]);

		assert_int_not_equal(plain, 0);
		if (ops_until_moved(true, convs[i]) != plain)
			fail_msg("%d conversions before: the name moved after "
				 "%d operations unfolded, %d folded", convs[i],
				 plain, ops_until_moved(true, convs[i]));
	}
}

/*
 * Names other nodes direct (solo.c): a lone lock whose lookup made this
 * node master folds once granted; its directory node keeps the record
 * naming it; the tossed one is taken again with no message, and its
 * expiry sends the REMOVE; a recovery registers it with its directory
 * node wherever that moves, unfolding none.
 */

/* Node 'node' (its own client) try-locks name EX with NOQUEUE: refused
 * (-EAGAIN: another node's lock, one master). */
static void refused_ex(struct cluster *c, int node, const char *name)
{
	assert_int_equal(try_lock(c, node, node, name, DLM_LOCK_EX,
				  DLM_LKF_NOQUEUE), 0);
	drain(c);
	assert_int_equal(c->asts[c->nasts - 1].node, node);
	assert_int_equal(c->asts[c->nasts - 1].a.status, -EAGAIN);
}

static int has_record(struct cluster *c, int node, const char *name)
{
	unsigned char key[32];

	key[0] = (unsigned char)strlen(name);
	memcpy(key + 1, name, key[0]);
	return dlm_dir_has_record(c->ls[node], key, key[0] + 1u,
				  dlm_hash_bytes(key, key[0] + 1u));
}

/* A lock on a name node 2 directs folds at node 1 once the lookup names
 * node 1 master (one solo, no rsb, no lkb), node 2 keeping the record;
 * node 2's lock on it then reaches node 1, unfolds it, waits for it
 * (a bast), and is granted at its unlock. */
static void test_remote_folds_after_lookup(void **state)
{
	struct cluster *c = fold_cluster(2);
	uint32_t a, b;
	char theirs[16];

	(void)state;
	name_directed_by("t", 2, 2, theirs, sizeof(theirs));
	a = lock_on(c, 1, 1, theirs, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_folds_remote, 1);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 0);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	assert_int_equal(stats(c, 1).ls_locks, 1);
	assert_int_equal(stats(c, 1).ls_resources, 1);
	assert_true(has_record(c, 2, theirs));
	assert_verified(c);
	/* a try-lock of node 2: refused by node 1's unfolded lock */
	assert_int_equal(try_lock(c, 2, 2, theirs, DLM_LOCK_EX,
				  DLM_LKF_NOQUEUE), 0);
	drain(c);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(stats(c, 1).ls_unfolds_msg, 1);
	b = lock_on(c, 2, 2, theirs, DLM_LOCK_PR, 0, 0, NULL);
	drain(c);
	assert_no_comp(c, 2, b);
	assert_int_equal(last_bast_mode(c, 1, a), DLM_LOCK_PR);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_verified(c);
	cluster_free(c);
}

/* Not everything folds after its lookup: a lock with a value block,
 * two locks waiting for the same lookup, a lock mastered by the other
 * node. */
static void test_remote_not_folded(void **state)
{
	struct cluster *c = fold_cluster(2);
	char n1[16], n2[16], n3[16];

	(void)state;
	name_directed_by("v", 2, 2, n1, sizeof(n1));
	name_directed_by("w", 2, 2, n2, sizeof(n2));
	name_directed_by("x", 2, 2, n3, sizeof(n3));
	lock_on(c, 1, 1, n1, DLM_LOCK_EX, DLM_LKF_VALBLK, 0, NULL);
	lock_on(c, 1, 1, n2, DLM_LOCK_PR, 0, 0, NULL);
	lock_on(c, 1, 2, n2, DLM_LOCK_PR, 0, 0, NULL);
	lock_on(c, 2, 2, n3, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	lock_on(c, 1, 1, n3, DLM_LOCK_NL, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 0);
	/* n3: node 2 folded it, node 1's lookup unfolded it */
	assert_int_equal(nsolos(c, 2), 0);
	assert_int_equal(stats(c, 1).ls_folds_remote, 0);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 4);
	assert_verified(c);
	cluster_free(c);
}

/* Unlocked, it stays tossed and is taken again with no message; at
 * toss_ms its REMOVE reaches the directory node, which forgets the
 * record, and node 2 then masters the name itself. */
static void test_remote_toss_expire_removes(void **state)
{
	struct cluster *c = fold_cluster(2);
	unsigned long lookups;
	uint32_t a, b;
	char theirs[16];

	(void)state;
	name_directed_by("t", 2, 2, theirs, sizeof(theirs));
	a = lock_on(c, 1, 1, theirs, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	assert_int_equal(nsolos(c, 1), 0);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	lookups = c->sent[DLM_MSG_LOOKUP];
	a = lock_on(c, 1, 1, theirs, DLM_LOCK_PR, 0, 0, NULL);
	assert_status(c, 1, a, 0);
	assert_int_equal(c->sent[DLM_MSG_LOOKUP], lookups);
	assert_int_equal(c->qhead, c->qtail);
	assert_int_equal(nsolos(c, 1), 1);
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	dlm_core_tick(c->core[1], 500);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 1);
	assert_true(has_record(c, 2, theirs));
	dlm_core_tick(c->core[1], 5000);
	assert_int_equal(c->ls[1]->ls_nsolo_tossed, 0);
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	drain(c);
	assert_false(has_record(c, 2, theirs));
	/* node 2 masters it now (and directs it: it folds there) */
	b = lock_on(c, 2, 2, theirs, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(nsolos(c, 2), 1);
	refused_ex(c, 1, theirs);
	assert_verified(c);
	cluster_free(c);
}

/* The REMOVE/LOOKUP race: node 3 directs the name, node 1 folded it and
 * unlocked it.  Node 2's lookup is answered "node 1"; then node 1's
 * tossed solo expires (REMOVE to node 3) before node 2's REQUEST comes:
 * node 1 refuses it (-EBADR), node 2 looks up again behind the REMOVE
 * and is made master: one master, the record naming it. */
static void test_remote_remove_lookup_race(void **state)
{
	struct cluster *c = fold_cluster(3);
	uint32_t a, b;
	char name[16];

	(void)state;
	name_directed_by("r", 3, 3, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	b = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	deliver_only(c, 2, 3);		/* LOOKUP: "node 1" */
	deliver_only(c, 3, 2);		/* its reply: REQUEST to node 1 */
	dlm_core_tick(c->core[1], 5000);	/* REMOVE to node 3 */
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	assert_true(has_record(c, 3, name));
	/* node 1 again: node 2 masters it now */
	refused_ex(c, 1, name);
	assert_verified(c);
	cluster_free(c);
}

/* A REQUEST that reaches node 1 while its tossed solo is still there
 * (node 2 took its master from the record) finds the tossed resource it
 * stands for, mastered here: granted as master copy at node 1. */
static void test_remote_tossed_request(void **state)
{
	struct cluster *c = fold_cluster(3);
	uint32_t a, b;
	char name[16];

	(void)state;
	name_directed_by("q", 3, 3, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	b = lock_on(c, 2, 2, name, DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_status(c, 2, b, 0);
	assert_int_equal(c->ls[1]->ls_solotbl.ht_count, 0);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 1);
	assert_int_equal(c->ls[1]->ls_lkbtbl.ht_count, 1);	/* its copy */
	assert_verified(c);
	cluster_free(c);
}

#define NREMOTE	200

/* Node 'node' try-locks (EX, NOQUEUE) every one of names, while node 1
 * holds each folded: how many it was granted (0 unless two masters);
 * the ASTs are all node's (c->nasts 0 before). */
static int trylock_all(struct cluster *c, uint32_t node,
		       char names[][16], enum dlm_core_fault fault)
{
	int k, granted = 0;

	for (k = 0; k < NREMOTE; k++)
		lock_on(c, node, node, names[k], DLM_LOCK_EX, DLM_LKF_NOQUEUE,
			0, NULL);
	drain(c);
	for (k = 0; k < c->nasts; k++) {
		assert_int_equal(c->asts[k].node, node);
		if (c->asts[k].a.status == 0)
			granted++;
	}
	assert_int_equal(c->nasts, NREMOTE);
	if (!fault)
		assert_verified(c);
	return granted;
}

/* A death moves the directory of the names the dead node directed: node
 * 1's lone locks folded on them stay folded (none unfolds) and are
 * registered with their new directory node (node 2, or node 1 itself,
 * where each is its own record), so node 2's try-locks on all of them
 * are refused.  Registering none of them (the fault) lets node 2 become
 * a second master and be granted. */
static void remote_death(enum dlm_core_fault fault, int *granted)
{
	static char names[NREMOTE][16];
	struct cluster *c = fold_cluster(3);
	int k;

	names_directed_by("d", 3, 3, names, NREMOTE);
	for (k = 0; k < NREMOTE; k++)
		lock_on(c, 1, 1, names[k], DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), NREMOTE);
	dlm_core_set_fault(c->core[1], fault);
	c->nasts = 0;
	c->dead[3] = 1;
	recover_all(c, 2);
	assert_int_equal(nsolos(c, 1), NREMOTE);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, 0);
	assert_int_equal(c->ls[1]->ls_rsbtbl.ht_count, 0);
	*granted = trylock_all(c, 2, names, fault);
	cluster_free(c);
}

static void test_remote_death_registers(void **state)
{
	int granted;

	(void)state;
	remote_death(DLM_FAULT_NONE, &granted);
	assert_int_equal(granted, 0);
	remote_death(DLM_FAULT_FOLD_REMOTE_NO_REGISTER, &granted);
	assert_true(granted > 0);	/* two masters */
}

/* A node joins (a full rebuild): node 1's lone locks folded on names
 * node 2 directed stay folded, none unfolds, and each is registered
 * with its directory node, node 2 or the joiner: the joiner's try-locks
 * on all of them are refused.  Registering none (the fault) lets the
 * joiner master the names it now directs beside node 1. */
static void remote_join(enum dlm_core_fault fault, int *granted)
{
	static char names[NREMOTE][16];
	struct cluster *c = fold_cluster(3);
	int k;

	c->dead[3] = 1;
	recover_all(c, 2);
	names_directed_by("j", 2, 2, names, NREMOTE);
	for (k = 0; k < NREMOTE; k++)
		lock_on(c, 1, 1, names[k], DLM_LOCK_EX, 0, 0, NULL);
	drain(c);
	assert_int_equal(nsolos(c, 1), NREMOTE);
	dlm_core_set_fault(c->core[1], fault);
	c->nasts = 0;
	c->dead[3] = 0;
	recover_all(c, 3);
	assert_int_equal(nsolos(c, 1), NREMOTE);
	assert_int_equal(stats(c, 1).ls_unfolds_rec, 0);
	*granted = trylock_all(c, 3, names, fault);
	cluster_free(c);
}

static void test_remote_join_registers(void **state)
{
	int granted;

	(void)state;
	remote_join(DLM_FAULT_NONE, &granted);
	assert_int_equal(granted, 0);
	remote_join(DLM_FAULT_FOLD_REMOTE_NO_REGISTER, &granted);
	assert_true(granted > 0);	/* two masters */
}

/* A conversion while a join's recovery runs (after step_start, before
 * the directory step) unfolds a lone lock folded after its lookup: the
 * rsb it becomes is registered at the directory step as the solo would
 * have been, and the joiner's try-lock on it is refused.  (dlm-sim
 * --fold --faults seed 26: unregistered, the full rebuild's sweep lost
 * the record and another node became a second master.) */
static void test_remote_unfold_while_recovering(void **state)
{
	static char names[NREMOTE][16];
	struct cluster *c = fold_cluster(3);
	uint32_t ids[NREMOTE];
	int k, moved = -1;

	(void)state;
	c->dead[3] = 1;
	recover_all(c, 2);
	names_directed_by("u", 2, 2, names, NREMOTE);
	for (k = 0; k < NREMOTE; k++) {
		ids[k] = lock_on(c, 1, 1, names[k], DLM_LOCK_EX, 0, 0, NULL);
		if (moved < 0 && dir_of(names[k], 3) == 3)
			moved = k;
	}
	drain(c);
	assert_true(moved >= 0);
	assert_int_equal(nsolos(c, 1), NREMOTE);
	c->dead[3] = 0;
	stop_all(c);
	start_all(c, 3);
	/* down to PR while recovering: it unfolds */
	assert_int_equal(convert(c, 1, 1, ids[moved], DLM_LOCK_PR, 0, NULL), 0);
	assert_int_equal(nsolos(c, 1), NREMOTE - 1);
	drain(c);
	finish_all(c, 3);
	c->nasts = 0;
	refused_ex(c, 3, names[moved]);
	assert_verified(c);
	cluster_free(c);
}

/* A lock asked for while the lockspace is stopped for a join (a full
 * rebuild: every resource marked as looked at by the recovery), on a
 * name node 2 directs, is looked up at the finish and granted alone: it
 * folds like any other (the recovery's marks mean nothing once the
 * lockspace runs; review finding: they kept it from folding). */
static void test_remote_folds_after_full_rebuild(void **state)
{
	struct cluster *c = fold_cluster(3);
	char name[16];
	uint32_t a;

	(void)state;
	c->dead[3] = 1;
	recover_all(c, 2);
	c->dead[3] = 0;
	stop_all(c);
	name_directed_by("f", 3, 2, name, sizeof(name));
	a = lock_on(c, 1, 1, name, DLM_LOCK_EX, 0, 0, NULL);
	start_all(c, 3);
	drain(c);
	finish_all(c, 3);
	drain(c);
	assert_status(c, 1, a, 0);
	assert_int_equal(nsolos(c, 1), 1);
	assert_int_equal(stats(c, 1).ls_folds_remote, 1);
	assert_true(has_record(c, 2, name));
	assert_verified(c);
	assert_int_equal(unlock(c, 1, 1, a, 0, NULL), 0);
	drain(c);
	assert_verified(c);
	cluster_free(c);
}

int main(void)
{
	/* these tests choose folding per cluster (fold_cluster) */
	unsetenv("TEST_CORE_FOLD");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_folds_directed),
		cmocka_unit_test(test_shared_lookup_unfolds),
		cmocka_unit_test(test_shared_lookup_no_memory),
		cmocka_unit_test(test_shared_tossed_lookup),
		cmocka_unit_test(test_shared_tossed_no_memory),
		cmocka_unit_test(test_shared_death_keeps_folded),
		cmocka_unit_test(test_shared_join_unfolds_moved),
		cmocka_unit_test(test_shared_full_rebuild_unfold),
		cmocka_unit_test(test_shared_rc_msg_unfolds_named),
		cmocka_unit_test(test_shared_held_lookup_unfolds),
		cmocka_unit_test(test_shared_fold_remaster_counts),
		cmocka_unit_test(test_remote_folds_after_lookup),
		cmocka_unit_test(test_remote_not_folded),
		cmocka_unit_test(test_remote_toss_expire_removes),
		cmocka_unit_test(test_remote_remove_lookup_race),
		cmocka_unit_test(test_remote_tossed_request),
		cmocka_unit_test(test_remote_death_registers),
		cmocka_unit_test(test_remote_join_registers),
		cmocka_unit_test(test_remote_unfold_while_recovering),
		cmocka_unit_test(test_remote_folds_after_full_rebuild),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
