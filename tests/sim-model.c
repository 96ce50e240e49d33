/*
 * tests/sim-model.c - what the simulated clients know, and the checks
 * made from their point of view.
 *
 * Each client keeps, per lock, the mode the engine last told it was
 * granted (l_gmode) and the operation it is waiting for (l_op, plus a
 * cancel or force unlock issued on top).  From that follows the mode the
 * client may rely on at this instant (lock_relied_mode()):
 *
 *   - nothing while a new request or an unlock is pending;
 *   - the granted mode when nothing is pending;
 *   - during a conversion, the weakest mode that covers every mode the
 *     engine may grant meanwhile: the old mode, the new one, the ALTPR /
 *     ALTCW alternative, and NL with CONVDEADLK (the engine may demote).
 *     A down-conversion thus counts as the new, lower mode from the
 *     moment it is issued, and the "middle" conversions PR <-> CW count
 *     as CR, which is compatible with everything either side may meet.
 *
 * Safety at client level: on every resource, the relied-on modes are
 * pairwise compatible unless the locks' ranges are disjoint.
 *
 * The LVB model.  Writers (PW/EX holders releasing with VALBLK or
 * IVVALBLK) of the whole resource are mutually exclusive, so their writes
 * happen in the order they are issued; the model records each one at
 * issue time (r_hist).  A grant at PR or above with VALBLK must carry the
 * latest value, or VALNOTVALID when the latest write was an IVVALBLK.
 * The check is exact while the lock is still held when its AST arrives
 * (no writer can have run since the master granted it); when the client
 * already asked to force it away, a writer may have run, so any value
 * current at some point since the request was issued is accepted.  The
 * value is unknown (no check) after a write by a ranged lock (writers of
 * disjoint ranges hold PW/EX together, so their writes race) and after a
 * writer was purged or forced out mid-operation, until the next clean
 * write.  A resource that had no lock at any master for toss_ms may have
 * been dropped and recreated with a zero, valid LVB: then both that and
 * the previous value are accepted (LVB_MAYBE_RESET).  A write refused
 * -ENOMEM (--alloc-faults) is no write at all: the value before it is
 * the latest again (lvb_unwrite()).
 *
 * AST sanity: an AST must name a lock the client has; a completion must
 * answer a pending request with a status that request can produce; a
 * blocking AST must go to a lock that is granted, asked for basts, and
 * (when nothing is in flight that could change its mode) holds a mode
 * incompatible with the mode the AST says is wanted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim.h"

const char *const sim_mode_names[DLM_NUM_MODES] = {
	"NL", "CR", "CW", "PR", "PW", "EX",
};

/* compat_bits[m]: the set of modes compatible with m (bit per mode).
 * Written out from the DLM's matrix, independent of the engine's table. */
static const unsigned int compat_bits[DLM_NUM_MODES] = {
	[DLM_LOCK_NL] = 0x3f,					/* all */
	[DLM_LOCK_CR] = 0x1f,					/* all but EX */
	[DLM_LOCK_CW] = (1u << DLM_LOCK_NL) | (1u << DLM_LOCK_CR) |
			(1u << DLM_LOCK_CW),
	[DLM_LOCK_PR] = (1u << DLM_LOCK_NL) | (1u << DLM_LOCK_CR) |
			(1u << DLM_LOCK_PR),
	[DLM_LOCK_PW] = (1u << DLM_LOCK_NL) | (1u << DLM_LOCK_CR),
	[DLM_LOCK_EX] = (1u << DLM_LOCK_NL),
};

bool sim_compat(int m1, int m2)
{
	if (m1 < 0 || m2 < 0)
		return true;
	return compat_bits[m1] & (1u << m2);
}

bool sim_ranges_overlap(const struct dlm_range *a, const struct dlm_range *b)
{
	return a->ra_start <= b->ra_end && b->ra_start <= a->ra_end;
}

const char *sim_mode_str(int mode)
{
	if (mode >= 0 && mode < DLM_NUM_MODES)
		return sim_mode_names[mode];
	return mode == DLM_LOCK_IV ? "IV" : "??";
}

void sim_flags_str(uint32_t flags, char *out, size_t outlen)
{
	static const struct {
		uint32_t f;
		const char *n;
	} names[] = {
		{ DLM_LKF_NOQUEUE, "NOQUEUE" }, { DLM_LKF_CANCEL, "CANCEL" },
		{ DLM_LKF_CONVERT, "CONVERT" }, { DLM_LKF_VALBLK, "VALBLK" },
		{ DLM_LKF_QUECVT, "QUECVT" }, { DLM_LKF_IVVALBLK, "IVVALBLK" },
		{ DLM_LKF_CONVDEADLK, "CONVDEADLK" },
		{ DLM_LKF_PERSISTENT, "PERSISTENT" },
		{ DLM_LKF_NODLCKWT, "NODLCKWT" }, { DLM_LKF_NODLCKBLK, "NODLCKBLK" },
		{ DLM_LKF_EXPEDITE, "EXPEDITE" },
		{ DLM_LKF_NOQUEUEBAST, "NOQUEUEBAST" },
		{ DLM_LKF_HEADQUE, "HEADQUE" }, { DLM_LKF_NOORDER, "NOORDER" },
		{ DLM_LKF_ORPHAN, "ORPHAN" }, { DLM_LKF_ALTPR, "ALTPR" },
		{ DLM_LKF_ALTCW, "ALTCW" }, { DLM_LKF_FORCEUNLOCK, "FORCEUNLOCK" },
		{ DLM_LKF_TIMEOUT, "TIMEOUT" },
	};
	size_t o = 0, i;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].f))
			continue;
		flags &= ~names[i].f;
		o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s%s",
				      o ? "|" : "", names[i].n);
	}
	if (flags)
		o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s0x%x",
				      o ? "|" : "", flags);
	if (!o)
		snprintf(out, outlen, "0");
}

/* ------------------------------------------------------------ resources */

/* Root names: 1 byte, 64 bytes, and bytes that are not printable. */
static const unsigned char root_long[DLM_RESNAME_MAXLEN] =
	"LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLz";
static const unsigned char child_long[DLM_RESNAME_MAXLEN] =
	"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
static const struct {
	const unsigned char *name;
	unsigned int len;
} root_names[SIM_NROOT] = {
	{ (const unsigned char *)"a", 1 },
	{ root_long, DLM_RESNAME_MAXLEN },
	{ (const unsigned char *)"\0\1\2", 3 },
	{ (const unsigned char *)"\xffres\n", 5 },
	{ (const unsigned char *)"b", 1 },
}, child_names[SIM_NCHILD] = {
	{ (const unsigned char *)"x", 1 },
	{ (const unsigned char *)"\0", 1 },
	{ child_long, DLM_RESNAME_MAXLEN },
};

const unsigned char *sim_root_name(unsigned int i, unsigned int *len)
{
	*len = root_names[i].len;
	return root_names[i].name;
}

const unsigned char *sim_child_name(unsigned int i, unsigned int *len)
{
	*len = child_names[i].len;
	return child_names[i].name;
}

static uint32_t key_hash(int ls, const unsigned char *key, unsigned int keylen)
{
	uint32_t h = 2166136261u ^ (uint32_t)ls;
	unsigned int i;

	for (i = 0; i < keylen; i++)
		h = (h ^ key[i]) * 16777619u;
	return h;
}

int sim_res_find(struct sim *sim, int ls, const unsigned char *key, unsigned int keylen)
{
	uint32_t h = key_hash(ls, key, keylen) & (SIM_RES_HASH - 1);
	int i;

	while ((i = sim->res_hash[h]) >= 0) {
		const struct sim_res *r = &sim->res[i];

		if (r->r_ls == ls && r->r_keylen == keylen &&
		    !memcmp(r->r_key, key, keylen))
			return i;
		h = (h + 1) & (SIM_RES_HASH - 1);
	}
	return -1;
}

static int res_intern(struct sim *sim, int ls, int parent, const unsigned char *key,
		      unsigned int keylen)
{
	uint32_t h;
	struct sim_res *r;
	int i = sim_res_find(sim, ls, key, keylen), c;

	if (i >= 0)
		return i;
	if (sim->nres >= SIM_RES_MAX || keylen > SIM_KEY_MAX) {
		sim_fail(sim, "simulator: too many resources");
		return 0;
	}
	i = (int)sim->nres++;
	r = &sim->res[i];
	memset(r, 0, sizeof(*r));
	r->r_ls = ls;
	r->r_parent = parent;
	r->r_depth = parent < 0 ? 1 : sim->res[parent].r_depth + 1;
	for (c = 0; c < SIM_NCHILD; c++)
		r->r_child[c] = -1;
	r->r_keylen = (uint16_t)keylen;
	memcpy(r->r_key, key, keylen);
	r->r_hist[0].h_state = LVB_VALID;	/* a new resource: zero, valid */
	r->r_empty_since = sim->now;
	h = key_hash(ls, key, keylen) & (SIM_RES_HASH - 1);
	while (sim->res_hash[h] >= 0)
		h = (h + 1) & (SIM_RES_HASH - 1);
	sim->res_hash[h] = i;
	return i;
}

int sim_res_root(struct sim *sim, int ls, unsigned int name)
{
	unsigned char key[1 + DLM_RESNAME_MAXLEN];

	key[0] = (unsigned char)root_names[name].len;
	memcpy(key + 1, root_names[name].name, root_names[name].len);
	return res_intern(sim, ls, -1, key, 1 + root_names[name].len);
}

/* The sub-resource 'name' under resource 'parent', keyed as the engine
 * keys it (dlm_key_child: the path, or deeper a digest of the parent's
 * key, then the name): a name means a different resource under each
 * parent resource. */
int sim_res_child(struct sim *sim, int parent, unsigned int name)
{
	unsigned char key[SIM_KEY_MAX];
	struct sim_res *p = &sim->res[parent];
	int i, len;

	if (p->r_child[name] >= 0)
		return p->r_child[name];
	len = dlm_key_child(p->r_key, p->r_keylen, child_names[name].name,
			    child_names[name].len, key);
	if (len < 0) {
		sim_fail(sim, "simulator: dlm_key_child failed (%d)", len);
		return 0;
	}
	i = res_intern(sim, p->r_ls, parent, key, (unsigned int)len);
	sim->res[parent].r_child[name] = i;	/* res may have moved? no: fixed array */
	return i;
}

const char *sim_res_str(struct sim *sim, int res, char *buf, size_t len)
{
	const struct sim_res *r = &sim->res[res];
	char k[160];

	trace_key(r->r_key, r->r_keylen, k, sizeof(k));
	snprintf(buf, len, "ls%d:%s", r->r_ls, k);
	return buf;
}

/* ------------------------------------------------------------------ LVB */

/* A unique, recognisable 32-byte value for write number 'value'. */
void lvb_make(uint64_t value, char *out)
{
	unsigned int i;

	for (i = 0; i < 8; i++)
		out[i] = (char)(value >> (8 * i));
	for (i = 8; i < DLM_LVB_LEN; i++)
		out[i] = value ? (char)(value * 7 + i) : 0;
}

/* The write number an LVB carries, or UINT64_MAX if it is no value
 * lvb_make() produced (garbage). */
uint64_t lvb_value(const char *lvb)
{
	char expect[DLM_LVB_LEN];
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)(unsigned char)lvb[i] << (8 * i);
	lvb_make(v, expect);
	return memcmp(expect, lvb, DLM_LVB_LEN) ? UINT64_MAX : v;
}

static const char *const lvb_state_names[] = {
	[LVB_VALID] = "valid",
	[LVB_INVALID] = "invalid",
	[LVB_UNKNOWN] = "unknown",
	[LVB_MAYBE_RESET] = "maybe-reset",
	[LVB_VALID_OR_INVALID] = "valid-or-invalid",
};

static void lvb_trace(struct sim *sim, int res)
{
	const struct sim_res *r = &sim->res[res];
	const struct sim_lvb_hist *h = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	char name[200];

	sim_trace(sim, "lvb  %s write #%u: %s%s%s v%llu", sim_res_str(sim, res, name, sizeof(name)),
		  r->r_nwrites, lvb_state_names[h->h_state],
		  h->h_state == LVB_MAYBE_RESET ? " of " : "",
		  h->h_state == LVB_MAYBE_RESET ? lvb_state_names[h->h_prev_state] : "",
		  (unsigned long long)h->h_value);
}

void lvb_write(struct sim *sim, int res, enum sim_lvb_state st, uint64_t value)
{
	struct sim_res *r = &sim->res[res];
	struct sim_lvb_hist *h;

	r->r_nwrites++;
	h = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	h->h_state = (uint8_t)st;
	h->h_prev_state = (uint8_t)st;
	h->h_value = value;	lvb_trace(sim, res);
}

/* A conversion or unlock whose write lvb_write() recorded at the call
 * was refused -ENOMEM: core never applies a refused write (lock.c, "Out
 * of memory": refused whole, before it changes anything; the writer's
 * own copy is marked not known, so no recovery takes it), so the write
 * never happened: the value before it is the latest again, as exactly
 * as it was known then.  That holds only while nothing was recorded on
 * the resource since (the writer held PW or EX, so no clean writer ran;
 * but a ranged writer's, a forced or purged writer's, a death's, or a
 * toss's entry may have come after): then the value is left unknown. */
void lvb_unwrite(struct sim *sim, struct sim_lock *lk)
{
	struct sim_res *r = &sim->res[lk->l_res];
	struct sim_lvb_hist prev, *h;

	if (!lk->l_wrote)
		return;
	if (r->r_nwrites != lk->l_wrote || r->r_nloosened != lk->l_wrote_loosened) {
		sim->n_unwrites_unknown++;
		lvb_write(sim, lk->l_res, LVB_UNKNOWN, 0);
		lk->l_wrote = 0;
		return;
	}
	prev = r->r_hist[(lk->l_wrote - 1) % SIM_LVB_HIST];
	r->r_nwrites++;
	h = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	*h = prev;
	sim->n_unwrites++;
	sim_trace(sim, "lvb  refused write #%u undone", lk->l_wrote);
	lk->l_wrote = 0;
	lvb_trace(sim, lk->l_res);
}

/* The resource had no lock at any master for toss_ms: its master may
 * have dropped it, and with it the value (a new resource starts with a
 * zero, valid LVB).  Until the next write either is right. */
void lvb_maybe_reset(struct sim *sim, int res)
{
	struct sim_res *r = &sim->res[res];
	const struct sim_lvb_hist *cur = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	struct sim_lvb_hist *h;
	uint8_t prev = cur->h_state == LVB_MAYBE_RESET ? cur->h_prev_state : cur->h_state;
	uint64_t value = cur->h_value;

	r->r_nloosened++;
	r->r_nwrites++;
	h = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	h->h_state = LVB_MAYBE_RESET;
	h->h_prev_state = prev;
	h->h_value = value;	lvb_trace(sim, res);
}

/* --faults: a node died that mastered the resource, or held it in PW or
 * EX: the value it had may be lost, so a grant may carry the latest value
 * or say VALNOTVALID; with 'maybe_reset' (no survivor holds a lock there,
 * so a new master starts afresh) a zero, valid LVB is right too. */
static void lvb_loosen(struct sim *sim, int res, bool maybe_reset)
{
	struct sim_res *r = &sim->res[res];
	const struct sim_lvb_hist *cur = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	uint8_t st = cur->h_state;
	uint64_t value = cur->h_value;
	struct sim_lvb_hist *h;

	r->r_nloosened++;
	if (st == LVB_MAYBE_RESET) {
		maybe_reset = true;
		st = cur->h_prev_state;
	}
	if (st == LVB_VALID)
		st = LVB_VALID_OR_INVALID;
	if (!maybe_reset) {
		if (st != cur->h_state)
			lvb_write(sim, res, (enum sim_lvb_state)st, value);
		return;
	}
	r->r_nwrites++;
	h = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	h->h_state = LVB_MAYBE_RESET;
	h->h_prev_state = st;
	h->h_value = value;	lvb_trace(sim, res);
}

/* Does a grant's LVB (value 'got', VALNOTVALID or not) agree with one
 * history entry? */
static bool lvb_agrees(const struct sim_lvb_hist *h, uint64_t got, bool notvalid)
{
	uint8_t st = h->h_state;

	if (st == LVB_MAYBE_RESET) {
		if (!notvalid && got == 0)
			return true;
		st = h->h_prev_state;
	}
	switch (st) {
	case LVB_VALID:
		return !notvalid && got == h->h_value;
	case LVB_INVALID:
		return notvalid;
	case LVB_VALID_OR_INVALID:
		return notvalid || got == h->h_value;
	default:
		return true;
	}
}

/* ---------------------------------------------------------------- locks */

static unsigned int lock_bucket(int node, int ls, uint32_t lkid)
{
	uint32_t h = lkid * 2654435761u ^ (uint32_t)(node * 131 + ls * 7);

	return (h ^ (h >> 16)) & (SIM_LOCK_HASH - 1);
}

struct sim_lock *lock_find(struct sim *sim, int node, int ls, uint32_t lkid)
{
	struct sim_lock *lk;

	for (lk = sim->lock_hash[lock_bucket(node, ls, lkid)]; lk; lk = lk->l_hnext)
		if (lk->l_node == node && lk->l_ls == ls && lk->l_lkid == lkid)
			return lk;
	return NULL;
}

static void orphan_add(struct sim_node *n, struct sim_lock *lk)
{
	if (n->n_norphans == n->n_orphcap) {
		unsigned int cap = n->n_orphcap ? 2 * n->n_orphcap : 8;
		struct sim_lock **a = realloc(n->n_orphans, cap * sizeof(*a));

		if (!a)
			abort();
		n->n_orphans = a;
		n->n_orphcap = cap;
	}
	n->n_orphans[n->n_norphans++] = lk;
}

void lock_attach_client(struct sim *sim, struct sim_lock *lk, int client)
{
	struct sim_client *c = &sim->nodes[lk->l_node].n_clients[client];

	if (c->c_nlocks == c->c_cap) {
		unsigned int cap = c->c_cap ? 2 * c->c_cap : 8;
		struct sim_lock **a = realloc(c->c_locks, cap * sizeof(*a));

		if (!a)
			abort();
		c->c_locks = a;
		c->c_cap = cap;
	}
	c->c_locks[c->c_nlocks++] = lk;
	lk->l_client = client;
	lk->l_owner = c->c_owner;
	lk->l_orphan = false;
}

/* Take a lock off its client's list (or the node's orphan list). */
void lock_detach_client(struct sim *sim, struct sim_lock *lk)
{
	struct sim_node *n = &sim->nodes[lk->l_node];
	struct sim_lock **a;
	unsigned int *cnt, i;

	if (lk->l_orphan) {
		a = n->n_orphans;
		cnt = &n->n_norphans;
	} else if (lk->l_client >= 0) {
		a = n->n_clients[lk->l_client].c_locks;
		cnt = &n->n_clients[lk->l_client].c_nlocks;
	} else {
		return;
	}
	for (i = 0; i < *cnt; i++)
		if (a[i] == lk) {
			memmove(a + i, a + i + 1, (*cnt - i - 1) * sizeof(*a));
			(*cnt)--;
			break;
		}
	lk->l_client = -1;
	lk->l_orphan = false;
}

struct sim_lock *lock_new(struct sim *sim, int node, int ls, uint32_t lkid,
			  int client, int res)
{
	struct sim_lock *lk = calloc(1, sizeof(*lk));
	unsigned int b = lock_bucket(node, ls, lkid);

	if (!lk)
		abort();
	lk->l_seq = ++sim->lock_seq;
	lk->l_node = node;
	lk->l_ls = ls;
	lk->l_lkid = lkid;
	lk->l_client = -1;
	lk->l_res = res;
	lk->l_gmode = DLM_LOCK_IV;
	lk->l_hnext = sim->lock_hash[b];
	sim->lock_hash[b] = lk;
	lk->l_anext = sim->locks;
	if (sim->locks)
		sim->locks->l_aprevp = &lk->l_anext;
	lk->l_aprevp = &sim->locks;
	sim->locks = lk;
	if (client >= 0)
		lock_attach_client(sim, lk, client);
	return lk;
}

/* Drop a lock from the model: it is gone from the engine (or will be, and
 * nobody may hear of it again). */
void lock_forget(struct sim *sim, struct sim_lock *lk)
{
	struct sim_lock **pp = &sim->lock_hash[lock_bucket(lk->l_node, lk->l_ls, lk->l_lkid)];
	unsigned int b;

	lock_detach_client(sim, lk);
	while (*pp && *pp != lk)
		pp = &(*pp)->l_hnext;
	if (*pp)
		*pp = lk->l_hnext;
	*lk->l_aprevp = lk->l_anext;
	if (lk->l_anext)
		lk->l_anext->l_aprevp = lk->l_aprevp;
	if (lk->l_parent)
		lk->l_parent->l_nchildren--;
	if (lk->l_nchildren) {
		/* only after an engine error: keep the model consistent */
		sim_fail(sim, "n%d lock %08x gone while it has %u children",
			 lk->l_node + 1, lk->l_lkid, lk->l_nchildren);
		for (b = 0; b < SIM_LOCK_HASH; b++) {
			struct sim_lock *c;

			for (c = sim->lock_hash[b]; c; c = c->l_hnext)
				if (c->l_parent == lk)
					c->l_parent = NULL;
		}
	}
	free(lk);
}

/*
 * The client let go of lk and will hear nothing more of it: its crash
 * purged it (dlm_core_purge_owner), or an orphan purge on its node took
 * it.  The engine does not drop it then: it force-unlocks it, which for
 * a lock mastered elsewhere is a round trip to the master (a parent's
 * unlock waits for its children's), and until that is done both the
 * owner's copy and the master's are held, granted as they were.  So the
 * model keeps it, relied on by nobody, until the engine's walk no longer
 * shows it (check_model() forgets it then).  A child of a PERSISTENT
 * lock that becomes an orphan in the same crash leaves its parent at
 * once, as the engine detaches it (core/lock.c purge_owner): the orphan
 * must not wait for it.
 */
void lock_leave(struct sim *sim, struct sim_lock *lk)
{
	lock_detach_client(sim, lk);
	lk->l_leaving = true;
	if (lk->l_parent && lk->l_parent->l_persistent && !lk->l_parent->l_leaving) {
		lk->l_parent->l_nchildren--;
		lk->l_parent = NULL;
	}
}

void model_orphan(struct sim *sim, struct sim_lock *lk)
{
	unsigned int i;

	lock_detach_client(sim, lk);
	lk->l_orphan = true;
	lk->l_orphan_unsure = lk->l_op != OP_NONE || lk->l_cancel_unresolved;
	orphan_add(&sim->nodes[lk->l_node], lk);
	/* a purge request still on its way here will take it too */
	for (i = 0; i < sim->npurges; i++) {
		const struct sim_purge *p = &sim->purges[i];

		/* delivered to a stopped lockspace, it waits there for the
		 * end of the recovery */
		if (p->p_to == lk->l_node && p->p_ls == lk->l_ls &&
		    (!p->p_owner || p->p_owner == lk->l_owner) &&
		    (sim->net.n_link[p->p_from][p->p_to].l_delivered < p->p_seq ||
		     !sim->nodes[p->p_to].n_ls[p->p_ls] ||
		     dlm_core_ls_state(sim->nodes[p->p_to].n_ls[p->p_ls], NULL, NULL) !=
		     DLM_LS_RUNNING))
			lk->l_purge_asked = true;
	}
}

/* The weakest mode covering every mode in 'modes' (bit set): a mode
 * compatible with everything any of them is compatible with. */
static int weakest_covering(unsigned int modes)
{
	unsigned int need = 0, best_bits = 0x40;
	int m, best = DLM_LOCK_NL;

	for (m = 0; m < DLM_NUM_MODES; m++)
		if (modes & (1u << m))
			need |= compat_bits[m];
	for (m = 0; m < DLM_NUM_MODES; m++)
		if ((compat_bits[m] & need) == need &&
		    (unsigned int)__builtin_popcount(compat_bits[m]) <
		    (unsigned int)__builtin_popcount(best_bits)) {
			best = m;
			best_bits = compat_bits[m];
		}
	return best;
}

int lock_relied_mode(const struct sim_lock *lk)
{
	unsigned int modes;

	if (lk->l_orphan || lk->l_force || lk->l_leaving)
		return DLM_LOCK_IV;
	switch (lk->l_op) {
	case OP_NONE:
		return lk->l_gmode;
	case OP_CONVERT:
		modes = (1u << lk->l_gmode) | (1u << lk->l_op_mode);
		if (lk->l_op_flags & DLM_LKF_ALTPR)
			modes |= 1u << DLM_LOCK_PR;
		if (lk->l_op_flags & DLM_LKF_ALTCW)
			modes |= 1u << DLM_LOCK_CW;
		if (lk->l_op_flags & DLM_LKF_CONVDEADLK)
			modes |= 1u << DLM_LOCK_NL;
		return weakest_covering(modes);
	default:
		return DLM_LOCK_IV;
	}
}

bool lock_is_idle(const struct sim_lock *lk)
{
	return lk->l_op == OP_NONE && !lk->l_cancel && !lk->l_force &&
	       !lk->l_orphan && !lk->l_leaving;
}

/* ----------------------------------------------------------------- ASTs */

static void lock_desc(struct sim *sim, const struct sim_lock *lk, char *buf, size_t len)
{
	char r[200];

	snprintf(buf, len, "n%d c%d lk %08x %s gr=%s", lk->l_node + 1, lk->l_client,
		 lk->l_lkid, sim_res_str(sim, lk->l_res, r, sizeof(r)),
		 sim_mode_str(lk->l_gmode));
}

static void check_lvb(struct sim *sim, struct sim_lock *lk, const struct sim_ast_rec *a)
{
	const struct sim_res *r = &sim->res[lk->l_res];
	const struct sim_lvb_hist *cur = &r->r_hist[r->r_nwrites % SIM_LVB_HIST];
	bool notvalid = a->a_ast.sbflags & DLM_SBF_VALNOTVALID;
	uint64_t got;
	uint32_t w;
	char d[300], want[64];

	lock_desc(sim, lk, d, sizeof(d));
	if (!a->a_has_lvb) {
		sim_fail(sim, "LVB: %s granted %s with VALBLK but the AST carries no LVB",
			 d, sim_mode_str(a->a_ast.grmode));
		return;
	}
	got = lvb_value(a->a_lvb);
	/* --alloc-faults: a reader whose buffer found no memory after its
	 * request was accepted is told zeros, not valid (lock.c "Out of
	 * memory"); the resource's value is untouched for the others */
	if (notvalid && got == 0 && sim->opts->o_alloc_faults &&
	    sim->n_alloc_fails > lk->l_op_nomem)
		return;
	/* unused for toss_ms until this grant: maybe a fresh resource */
	if (r->r_empty_since != UINT64_MAX &&
	    sim->now - r->r_empty_since >= sim_toss_after(sim) && !notvalid &&
	    got == 0)
		return;
	if (!lk->l_force) {
		/* still held: exactly the latest write */
		if (lvb_agrees(cur, got, notvalid))
			return;
		if (cur->h_state == LVB_INVALID ||
		    (cur->h_state == LVB_MAYBE_RESET && cur->h_prev_state == LVB_INVALID))
			snprintf(want, sizeof(want), "VALNOTVALID (IVVALBLK)");
		else
			snprintf(want, sizeof(want), "v%llu%s%s",
				 (unsigned long long)cur->h_value,
				 cur->h_state == LVB_MAYBE_RESET ? " or v0 (tossed)" : "",
				 cur->h_state == LVB_VALID_OR_INVALID ||
				 (cur->h_state == LVB_MAYBE_RESET &&
				  cur->h_prev_state == LVB_VALID_OR_INVALID) ?
				 " or VALNOTVALID (a node died)" : "");
		sim_fail(sim, "LVB: %s: grant carries %s%llu%s, the latest write is %s",
			 d, got == UINT64_MAX ? "garbage " : "v",
			 (unsigned long long)(got == UINT64_MAX ? 0 : got),
			 notvalid ? " VALNOTVALID" : "", want);
		return;
	}
	/* a release was issued since: any value current since the request */
	if (r->r_nwrites - lk->l_lvb_since >= SIM_LVB_HIST)
		return;
	for (w = lk->l_lvb_since; w <= r->r_nwrites; w++)
		if (lvb_agrees(&r->r_hist[w % SIM_LVB_HIST], got, notvalid))
			return;
	sim_fail(sim, "LVB: %s: grant carries %s%llu%s, not a value current since the "
		 "request (write #%u..#%u)", d, got == UINT64_MAX ? "garbage " : "v",
		 (unsigned long long)(got == UINT64_MAX ? 0 : got),
		 notvalid ? " VALNOTVALID" : "", lk->l_lvb_since, r->r_nwrites);
}

/* A completion with status 0: is the granted mode one the request allows? */
/*
 * Fencing tokens (core/token.c): a grant of CW, PW or EX carries a token
 * above that of every grant seen before on the resource that conflicts
 * with it, a grant of another mode carries none.  "Seen before" is the
 * order of the completions here: two conflicting grants complete in the
 * order the master(s) made them, because the first must be released
 * before the second is made and a release needs the grant's completion
 * first (a holder that died before its completion never shows it).
 * Compatible grants (CW with CW; any two on disjoint ranges) may
 * complete in either order, so each grant is compared only with the
 * highest token of each class it conflicts with: among write modes
 * only CW and CW are compatible, and two ranges are known to overlap
 * when one of them is the whole resource.  A grant may keep the token
 * its lock had (a down-conversion that recovery completed: core/lock.c
 * dlm_recover_waiter).  A grant that completes with a force unlock
 * pending is not compared: the client let the lock go before it heard of
 * the grant, so the master may have released it and granted others
 * (completed here first) before the grant reaches the client, which then
 * holds an old token and nothing else; that is what tokens are for.
 * Every seed checks this, faults included.
 */
static bool token_mode(int mode)
{
	return mode == DLM_LOCK_CW || mode == DLM_LOCK_PW || mode == DLM_LOCK_EX;
}

static void check_token(struct sim *sim, struct sim_lock *lk,
			const struct dlm_ast *ast, const char *d)
{
	struct sim_res *r = &sim->res[lk->l_res];
	int whole = !lk->l_ranged, cls = ast->grmode != DLM_LOCK_CW;
	uint64_t t = ast->token, floor = 0;
	int w, c;

	if (!token_mode(ast->grmode)) {
		if (t)
			sim_fail(sim, "%s: granted %s with fencing token %llx", d,
				 sim_mode_str(ast->grmode), (unsigned long long)t);
		return;
	}
	if (!t) {
		sim_fail(sim, "%s: granted %s without a fencing token", d,
			 sim_mode_str(ast->grmode));
		return;
	}
	if (t == lk->l_token)
		return;		/* kept */
	if (lk->l_force) {
		lk->l_token = t;
		return;
	}
	/* a whole-range grant overlaps every earlier one, a ranged one the
	 * whole-range ones; PW/EX conflict with both classes, CW with PW/EX */
	for (w = 0; w < 2; w++)
		for (c = 0; c < 2; c++)
			if ((whole || w) && (cls || c) && r->r_token_max[w][c] > floor)
				floor = r->r_token_max[w][c];
	if (t <= floor) {
		sim_fail(sim, "TOKEN: %s: granted %s with fencing token %llx, not "
			 "above %llx of an earlier conflicting grant", d,
			 sim_mode_str(ast->grmode), (unsigned long long)t,
			 (unsigned long long)floor);
		return;
	}
	if (t > r->r_token_max[whole][cls])
		r->r_token_max[whole][cls] = t;
	lk->l_token = t;
}

static void check_grant(struct sim *sim, struct sim_lock *lk, const struct sim_ast_rec *a)
{
	const struct dlm_ast *ast = &a->a_ast;
	uint32_t fl = lk->l_op_flags;
	int alt = (fl & DLM_LKF_ALTPR) ? DLM_LOCK_PR :
		  (fl & DLM_LKF_ALTCW) ? DLM_LOCK_CW : DLM_LOCK_IV;
	bool altmode = ast->sbflags & DLM_SBF_ALTMODE;
	bool write_conv;
	char d[300];

	lock_desc(sim, lk, d, sizeof(d));
	check_token(sim, lk, ast, d);
	if (ast->grmode == lk->l_op_mode) {
		if (altmode)
			sim_fail(sim, "%s: granted the requested %s but ALTMODE is set",
				 d, sim_mode_str(ast->grmode));
	} else if (ast->grmode == alt && alt != DLM_LOCK_IV) {
		if (!altmode)
			sim_fail(sim, "%s: granted the alternate mode %s without ALTMODE",
				 d, sim_mode_str(ast->grmode));
	} else {
		sim_fail(sim, "%s: granted %s, requested %s (flags %x)", d,
			 sim_mode_str(ast->grmode), sim_mode_str(lk->l_op_mode), fl);
		return;
	}
	if ((ast->sbflags & DLM_SBF_DEMOTED) &&
	    !(lk->l_op == OP_CONVERT && (fl & DLM_LKF_CONVDEADLK)))
		sim_fail(sim, "%s: DEMOTED on a request without CONVDEADLK", d);
	if (!(fl & DLM_LKF_VALBLK) || ast->grmode < DLM_LOCK_PR)
		return;
	/* a PW/EX holder converting down writes the LVB; it reads nothing */
	write_conv = lk->l_op == OP_CONVERT && lk->l_gmode >= DLM_LOCK_PW &&
		     ast->grmode <= lk->l_gmode;
	if (!write_conv)
		check_lvb(sim, lk, a);
}

/* The pending request of lk got its answer. */
static void op_done(struct sim_lock *lk)
{
	lk->l_react_mask = 0;
	if (lk->l_force) {
		lk->l_force = false;
		lk->l_op = OP_UNLOCK;		/* the force unlock goes on */
	} else {
		lk->l_op = OP_NONE;
	}
	if (lk->l_cancel) {
		/* the cancel found nothing to cancel; it ends silently */
		lk->l_cancel = false;
		lk->l_cancel_unresolved = true;
	}
	lk->l_op_adopt = false;
}

static void handle_comp(struct sim *sim, struct sim_lock *lk, const struct sim_ast_rec *a)
{
	const struct dlm_ast *ast = &a->a_ast;
	int st = ast->status;
	uint32_t fl = lk->l_op_flags;
	char d[300];

	lock_desc(sim, lk, d, sizeof(d));
	switch (lk->l_op) {
	case OP_NONE:
		sim_fail(sim, "%s: completion (status %d) with no request pending%s",
			 d, st, lk->l_cancel_unresolved ?
			 " (a cancel that found nothing must stay silent)" : "");
		return;
	case OP_REQUEST:
		if (st == 0) {
			check_grant(sim, lk, a);
			lk->l_gmode = ast->grmode;
			op_done(lk);
			return;
		}
		if (ast->grmode != DLM_LOCK_IV)
			sim_fail(sim, "%s: failed request (status %d) reports grmode %s",
				 d, st, sim_mode_str(ast->grmode));
		if (st == -EAGAIN && (fl & DLM_LKF_NOQUEUE) && !lk->l_op_adopt) {
			lock_forget(sim, lk);
		} else if (st == -DLM_ECANCEL && lk->l_cancel) {
			lock_forget(sim, lk);
		} else if (st == -DLM_EUNLOCK && lk->l_force) {
			lock_forget(sim, lk);
		} else if (st == -ENOMEM && sim->opts->o_alloc_faults &&
			   !lk->l_op_adopt) {
			lock_forget(sim, lk);	/* failed cleanly */
		} else {
			sim_fail(sim, "%s: request (%s flags %x%s%s) completed with "
				 "unexpected status %d", d, sim_mode_str(lk->l_op_mode), fl,
				 lk->l_cancel ? ", cancel pending" : "",
				 lk->l_force ? ", force unlock pending" : "", st);
			lock_forget(sim, lk);
		}
		return;
	case OP_CONVERT:
		if (st == 0) {
			check_grant(sim, lk, a);
			lk->l_gmode = ast->grmode;
			/* granted anew: the blocking ASTs it got were about
			 * the grant it had.  The engine sends them once per
			 * mode and grant (lkb_highbast, reset at each grant),
			 * so a request still in the way of the new grant is
			 * told again; a client that kept the old ones would
			 * hide a blocking AST the engine failed to send (a
			 * stale lkb_highbast: seed 893) */
			lk->l_bast_mask = 0;
			op_done(lk);
			return;
		}
		if (st == -DLM_EUNLOCK && lk->l_force) {
			lock_forget(sim, lk);
			return;
		}
		if ((st == -EAGAIN && (fl & DLM_LKF_NOQUEUE)) ||
		    (st == -ENOMEM && sim->opts->o_alloc_faults) ||
		    (st == -EDEADLK && !(fl & DLM_LKF_CONVDEADLK)) ||
		    (st == -DLM_ECANCEL && lk->l_cancel)) {
			bool demoted = (fl & DLM_LKF_CONVDEADLK) && st == -DLM_ECANCEL &&
				       ast->grmode == DLM_LOCK_NL;

			if (ast->grmode != lk->l_gmode && !demoted)
				sim_fail(sim, "%s: conversion to %s ended with status %d "
					 "and grmode %s, expected the old mode", d,
					 sim_mode_str(lk->l_op_mode), st,
					 sim_mode_str(ast->grmode));
			if (st == -DLM_ECANCEL) {
				lk->l_cancel = false;	/* it did cancel */
				lk->l_gmode = ast->grmode;
			}
			/* refused for want of memory: a write recorded at
			 * the call did not happen (lvb_unwrite) */
			if (st == -ENOMEM)
				lvb_unwrite(sim, lk);
			/* a down-conversion answering blocking ASTs did not
			 * happen: they are unanswered again */
			lk->l_bast_mask |= lk->l_react_mask;
			op_done(lk);
			return;
		}
		sim_fail(sim, "%s: conversion to %s (flags %x%s%s) completed with unexpected "
			 "status %d", d, sim_mode_str(lk->l_op_mode), fl,
			 lk->l_cancel ? ", cancel pending" : "",
			 lk->l_force ? ", force unlock pending" : "", st);
		op_done(lk);
		return;
	case OP_UNLOCK:
		if (st == -ENOMEM && sim->opts->o_alloc_faults && !lk->l_force) {
			/* refused, the lock as it was; its write did not
			 * happen (lvb_unwrite); blocking ASTs unanswered again */
			lvb_unwrite(sim, lk);
			lk->l_bast_mask |= lk->l_react_mask;
			op_done(lk);
			return;
		}
		if (st != -DLM_EUNLOCK)
			sim_fail(sim, "%s: unlock completed with status %d", d, st);
		lock_forget(sim, lk);
		return;
	}
}

static void handle_bast(struct sim *sim, struct sim_lock *lk, const struct sim_ast_rec *a)
{
	int bm = a->a_ast.bastmode;
	char d[300];

	lock_desc(sim, lk, d, sizeof(d));
	sim->n_basts++;
	if (bm < 0 || bm >= DLM_NUM_MODES) {
		sim_fail(sim, "%s: blocking AST with bad mode %d", d, bm);
		return;
	}
	if (!lk->l_want_bast)
		sim_fail(sim, "%s: blocking AST for a lock that asked for none", d);
	else if (lk->l_gmode == DLM_LOCK_IV)
		sim_fail(sim, "%s: blocking AST for a lock that was never granted", d);
	else if (lk->l_op == OP_NONE && sim_compat(lk->l_gmode, bm))
		sim_fail(sim, "%s: blocking AST for %s, which %s does not block", d,
			 sim_mode_str(bm), sim_mode_str(lk->l_gmode));
	lk->l_bast_mask |= 1u << bm;
}

void model_deliver_ast(struct sim *sim, const struct sim_ast_rec *a)
{
	const struct dlm_ast *ast = &a->a_ast;
	struct sim_lock *lk = lock_find(sim, a->a_node, a->a_ls, ast->lkid);
	char line[SIM_TRACE_TEXT];

	sim->n_asts++;
	if (ast->type == DLM_AST_BAST)
		snprintf(line, sizeof(line), "ast  n%d ls%d lk %08x owner %llx BAST %s",
			 a->a_node + 1, a->a_ls, ast->lkid,
			 (unsigned long long)ast->owner, sim_mode_str(ast->bastmode));
	else
	{
		char lv[40] = "", tok[32] = "";

		if (a->a_has_lvb)
			snprintf(lv, sizeof(lv), " lvb=v%llu",
				 (unsigned long long)lvb_value(a->a_lvb));
		if (ast->token)
			snprintf(tok, sizeof(tok), " tok=%llx",
				 (unsigned long long)ast->token);
		snprintf(line, sizeof(line), "ast  n%d ls%d lk %08x owner %llx COMP "
			 "status %d gr=%s sb=%x%s%s", a->a_node + 1, a->a_ls, ast->lkid,
			 (unsigned long long)ast->owner, ast->status,
			 sim_mode_str(ast->grmode), ast->sbflags, lv, tok);
	}
	sim_trace(sim, "%s", line);
	if (ast->type != DLM_AST_BAST && ast->type != DLM_AST_COMP) {
		sim_fail(sim, "AST of unknown type %d", ast->type);
		return;
	}
	if (ast->type == DLM_AST_COMP &&
	    (ast->sbflags & ~(uint32_t)(DLM_SBF_DEMOTED | DLM_SBF_VALNOTVALID |
					DLM_SBF_ALTMODE))) {
		sim_fail(sim, "completion for lock %08x with unknown sbflags %x",
			 ast->lkid, ast->sbflags);
		return;
	}
	/* a lock its client let go of (lock_leave) hears nothing either */
	if ((!lk || lk->l_leaving) && (sim->opts->o_avoid & AVOID_PURGE_AST)) {
		unsigned int i;

		for (i = 0; i < sim->ncrashed; i++)
			if (sim->crashed_node == a->a_node && sim->crashed_ls[i] == a->a_ls &&
			    sim->crashed[i] == ast->lkid)
				return;
	}
	if (!lk || lk->l_leaving) {
		sim_fail(sim, "AST for lock %08x on n%d ls%d, which no client has%s",
			 ast->lkid, a->a_node + 1, a->a_ls,
			 lk ? " (its client let go of it)" : "");
		return;
	}
	if (lk->l_orphan) {
		sim_fail(sim, "AST for orphaned lock %08x on n%d", ast->lkid, a->a_node + 1);
		return;
	}
	if (ast->owner != lk->l_owner) {
		sim_fail(sim, "AST for lock %08x names owner %llx, the lock is %llx's",
			 ast->lkid, (unsigned long long)ast->owner,
			 (unsigned long long)lk->l_owner);
		return;
	}
	if (ast->type == DLM_AST_BAST)
		handle_bast(sim, lk, a);
	else
		handle_comp(sim, lk, a);
}

/* ------------------------------------------------- client-level safety */

void model_check_clients(struct sim *sim)
{
	struct sim_lock *held[1024];
	int next[1024];
	unsigned int nheld = 0, n, c, i;
	uint32_t mark = ++sim->res_mark;

	for (n = 0; n < sim->nnodes; n++)
		for (c = 0; c < sim->nodes[n].n_nclients; c++) {
			const struct sim_client *cl = &sim->nodes[n].n_clients[c];

			for (i = 0; i < cl->c_nlocks; i++) {
				struct sim_lock *lk = cl->c_locks[i];
				struct sim_res *r = &sim->res[lk->l_res];
				int m = lock_relied_mode(lk);

				if (m <= DLM_LOCK_NL)
					continue;	/* NL conflicts with nothing */
				if (nheld == 1024) {
					sim_fail(sim, "simulator: too many locks");
					return;
				}
				if (r->r_mark != mark) {
					r->r_mark = mark;
					r->r_head = -1;
				}
				held[nheld] = lk;
				next[nheld] = r->r_head;
				r->r_head = (int)nheld++;
			}
		}
	for (i = 0; i < nheld; i++) {
		int j;

		for (j = next[i]; j >= 0; j = next[j]) {
			const struct sim_lock *a = held[i], *b = held[j];
			int ma = lock_relied_mode(a), mb = lock_relied_mode(b);
			char da[300], db[300];

			if (sim_compat(ma, mb) || !sim_ranges_overlap(&a->l_range, &b->l_range))
				continue;
			lock_desc(sim, a, da, sizeof(da));
			lock_desc(sim, b, db, sizeof(db));
			sim_fail(sim, "SAFETY (clients): %s relies on %s [%llu-%llu] while "
				 "%s relies on %s [%llu-%llu]", da, sim_mode_str(ma),
				 (unsigned long long)a->l_range.ra_start,
				 (unsigned long long)a->l_range.ra_end, db, sim_mode_str(mb),
				 (unsigned long long)b->l_range.ra_start,
				 (unsigned long long)b->l_range.ra_end);
			return;
		}
	}
}

/* --------------------------------------------------------- node death */

/* Node 'node''s engine died (--faults; with its clients, or alone).
 * Where that may lose an LVB, loosen the model: on resources it held in
 * PW/EX (granted or asked for: a purged writer makes the value invalid,
 * unless its release got there first), and on resources no survivor is
 * seen to master (it may have been the master; with no surviving holder
 * either, the resource may come back afresh).  Its clients' locks stay
 * until model_node_fenced(). */
void model_node_dies(struct sim *sim, int node)
{
	bool *dead_writer = calloc(sim->nres + 1, sizeof(bool));
	bool *live_master = calloc(sim->nres + 1, sizeof(bool));
	bool *live_holder = calloc(sim->nres + 1, sizeof(bool));
	unsigned int i, j, b;

	if (!dead_writer || !live_master || !live_holder) {
		sim_fail(sim, "simulator: out of memory");
		goto out;
	}
	for (b = 0; b < SIM_LOCK_HASH; b++) {
		const struct sim_lock *lk;

		for (lk = sim->lock_hash[b]; lk; lk = lk->l_hnext) {
			int top = lk->l_gmode;

			if (lk->l_node != node)
				continue;
			if ((lk->l_op == OP_REQUEST || lk->l_op == OP_CONVERT) &&
			    lk->l_op_mode > top)
				top = lk->l_op_mode;
			if (top >= DLM_LOCK_PW)
				dead_writer[lk->l_res] = true;
		}
	}
	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_node *n = &sim->nodes[i];
		const struct sim_snap *s = &n->n_snap[n->n_cur];

		if ((int)i == node || !n->n_alive)
			continue;
		for (j = 0; j < s->s_n; j++) {
			const struct sim_winfo *w = &s->s_info[j];

			if (w->w_status == DLM_LKSTS_NONE || w->w_nodeid < 1 ||
			    w->w_nodeid > sim->nnodes || (int)w->w_nodeid - 1 == node ||
			    !sim->nodes[w->w_nodeid - 1].n_alive)
				continue;	/* the dead node's own locks go too */
			if (w->w_is_master)
				live_master[w->w_res] = true;
			if (w->w_status == DLM_LKSTS_GRANTED || w->w_status == DLM_LKSTS_CONVERT)
				live_holder[w->w_res] = true;
		}
	}
	for (i = 0; i < sim->nres; i++)
		if (dead_writer[i] || !live_master[i])
			lvb_loosen(sim, (int)i, !live_holder[i]);
out:
	free(dead_writer);
	free(live_master);
	free(live_holder);
}

/* Node 'node' is fenced: its clients' locks and its orphans leave the
 * model, nobody relies on them. */
void model_node_fenced(struct sim *sim, int node)
{
	unsigned int b;

	/* forget every lock of the node: parents and children go together */
	for (b = 0; b < SIM_LOCK_HASH; b++) {
		struct sim_lock *lk;

		for (lk = sim->lock_hash[b]; lk; lk = lk->l_hnext)
			if (lk->l_node == node) {
				lk->l_parent = NULL;
				lk->l_nchildren = 0;
			}
	}
	for (b = 0; b < SIM_LOCK_HASH; b++) {
		while (sim->lock_hash[b]) {
			struct sim_lock *lk = sim->lock_hash[b];

			while (lk && lk->l_node != node)
				lk = lk->l_hnext;
			if (!lk)
				break;
			lock_forget(sim, lk);
		}
	}
}

/* --avoid recovery-toss: a recovery drops every resource nobody holds a
 * lock on, and its LVB with it, however recently it was written. */
void model_recovery_toss(struct sim *sim)
{
	bool *held = calloc(sim->nres + 1, sizeof(bool));
	unsigned int i, j;

	if (!held) {
		sim_fail(sim, "simulator: out of memory");
		return;
	}
	for (i = 0; i < sim->nnodes; i++) {
		const struct sim_node *n = &sim->nodes[i];
		const struct sim_snap *s = &n->n_snap[n->n_cur];

		if (!n->n_alive)
			continue;
		for (j = 0; j < s->s_n; j++) {
			const struct sim_winfo *w = &s->s_info[j];

			if (w->w_status != DLM_LKSTS_NONE && w->w_nodeid >= 1 &&
			    w->w_nodeid <= sim->nnodes && sim->nodes[w->w_nodeid - 1].n_alive)
				held[w->w_res] = true;
		}
	}
	for (i = 0; i < sim->nres; i++)
		if (!held[i])
			lvb_maybe_reset(sim, (int)i);
	free(held);
}

/* Node 'node' starts a recovery: it purges the master copies of dead
 * nodes' locks.  Until now a dead node's waiting PW/EX request could still
 * be granted here (its grant is lost on the way), and a purged PW/EX
 * holder makes the LVB invalid, so loosen those resources once more. */
void model_recovery_purge(struct sim *sim, int node)
{
	const struct sim_node *n = &sim->nodes[node];
	const struct sim_snap *s = &n->n_snap[n->n_cur];
	unsigned int j;

	for (j = 0; j < s->s_n; j++) {
		const struct sim_winfo *w = &s->s_info[j];

		if (!w->w_is_master || w->w_nodeid < 1 || w->w_nodeid > sim->nnodes ||
		    sim->nodes[w->w_nodeid - 1].n_alive)
			continue;
		if (w->w_grmode >= DLM_LOCK_PW || w->w_rqmode >= DLM_LOCK_PW)
			lvb_loosen(sim, w->w_res, false);
	}
	/* A release by a PW/EX holder still in flight may have gone to a
	 * master that died (the node learns of it only now): the value it
	 * wrote may be lost with that master, and is then flagged.  An
	 * unlock in flight to a dead master (a client's, or a purge after a
	 * crash) is taken as done: if that was the last lock there, the
	 * resource may start afresh. */
	for (j = 0; j < s->s_n; j++) {
		const struct sim_winfo *w = &s->s_info[j];
		const struct sim_lock *lk;

		if (w->w_nodeid != (uint32_t)node + 1 || w->w_status == DLM_LKSTS_NONE)
			continue;
		lk = lock_find(sim, node, w->w_ls, w->w_lkid);
		if (!lk || lk->l_leaving || lk->l_op == OP_UNLOCK || lk->l_force)
			lvb_loosen(sim, w->w_res, true);
		else if (lk->l_gmode >= DLM_LOCK_PW && lk->l_op == OP_CONVERT)
			lvb_loosen(sim, w->w_res, false);
	}
}
