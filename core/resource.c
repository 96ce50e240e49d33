/*
 * core/resource.c - resources, lock blocks, the resource directory and
 * lock owners: allocation, lookup tables and the toss list.
 *
 * Resource keys.  A resource is named by a key: one or more components,
 * each a length byte followed by 1..DLM_RESNAME_MAXLEN name bytes.  A root
 * resource "abc" has key "\3abc"; the sub-resource "x" locked under a lock
 * on "abc" has key "\3abc\1x".  So a name means a different resource under
 * each parent resource, and any byte may appear in a name.
 *
 * Deep trees.  Parent locks nest without limit, but a key must stay short
 * (it travels in every message, and is hashed and compared on every
 * lookup).  Down to DLM_KEY_PATH_DEPTH levels the key is the whole path as
 * above, which dumps show readably.  A resource below that is named by
 * its parent's key digested (BLAKE2b-256, libsodium's generichash)
 * followed by its own name: "\0" + digest + "\1x".  The digest is of the
 * parent's key, which is itself a path or a digest key, so every node
 * derives the same key for the same path, at a cost independent of the
 * depth.  Two paths share a key only if BLAKE2b-256 collides.  The zero
 * first byte (DLM_KEY_DIGEST_MARK) never starts a path key.
 *
 * Directory.  The key's hash picks the directory node among the
 * lockspace members by rendezvous (highest random weight) hashing: each
 * member weighs the name, (hash, node id) mixed, and the heaviest
 * directs it (dlm_dir_nodeid; issue 18).  Every node computes
 * the same choice from the member list alone, one weight per member.  What it gives: a member that leaves moves exactly the names
 * it directed, each to the next heaviest of the rest, and no other name
 * (the others' weights do not change, so their heaviest is still
 * there); a member that joins takes exactly the names it now outweighs
 * everybody for.  Hash modulo member count, before, moved nearly every
 * name at every change, so a recovery had to rebuild the whole
 * directory; with this one a death rebuilds only the departed node's
 * share (core/recover.c, PARTIAL DIRECTORY).  Two members that weigh a
 * name the same are ordered by node id, the same way everywhere.
 * The directory node keeps a record key -> master for every root
 * resource mastered anywhere; the first node to look a key up becomes
 * its master.  When a master drops an unused resource it tells the
 * directory node (REMOVE), which forgets the record only if that node
 * is still the recorded master.  A lookup from the very node the record
 * names waits (dlm_dir_hold_lookup): only remastering makes one, the
 * node having moved the resource away before the new master's DIR_MOVE
 * came (core/remaster.c, "The directory").
 *
 * Sub-resources are mastered with their parent (issue 18).  A child
 * resource has no directory record and is never looked up: its master is
 * its parent resource's master, and so, down the tree, its root's master.
 * The requester takes it from the parent lock the request names.  So a
 * node that masters a root (it created it, or recovery gave it to it)
 * creates and locks any number of fresh children, at any depth, with no
 * message at all.  This is the OpenVMS lock manager's rule.
 *
 *   Why it is safe.  Safety is "one master per resource at a time": one
 *   master orders all the grants of a resource, so it never grants two
 *   conflicting locks.  A lock on child C of P needs a granted lock on P
 *   from the same owner (lock.c refuses it otherwise), so every node that
 *   can send a request for C holds a granted lock on P and knows P's
 *   master exactly: that lock's master is kept right by the lock protocol
 *   and by recovery.  All of them send C's requests to that one node,
 *   which creates C as master on the first one; the creator itself, being
 *   P's master, is that node.  Concurrent creators of C from several nodes
 *   therefore meet at P's master, which arbitrates as for any resource.
 *   The master of a child REQUEST checks it still masters the parent (the
 *   request carries the parent's key, wire version 3) and else refuses
 *   with -EBADR, and the requester takes the parent's master again: so a
 *   requester whose view is stale (a request that crossed a recovery)
 *   never makes a second master.
 *
 *   Holes, and how each is closed:
 *   - Stale cached children.  A node that once mastered P may keep a
 *     tossed copy of C (with its LVB) while P moves on: dropped, mastered
 *     by another node, then back.  If that old C state came back, the
 *     node would master C while another node did, or hand out a value
 *     older than one written meanwhile.  Rule: a child resource holds its
 *     parent resource (res_parent, counted in the parent's res_nlkbs), so
 *     a parent is tossed only after every child of it is freed, and its
 *     REMOVE reaches the directory only after that; the next master of P
 *     starts with no children and, as for any freed resource, with a zero
 *     LVB (a value lives only while some node keeps the resource: one
 *     unused for toss_ms may come back zero, as tests/sim-model.c
 *     allows).  A tree thus drops one level per toss_ms.  And a requester
 *     never trusts a cached child's master: each request takes it from
 *     the parent again.
 *   - Recovery.  When P's master departs, the directory rebuild gives P a
 *     new master (children register nothing and ask for nothing); then,
 *     after the MASTERS barrier, when every root's master is settled,
 *     each child marked for a new master takes its root's (the root of a
 *     chain is settled before any descendant is looked at, which is the
 *     order by depth).  A node that holds locks only on children still
 *     has its parent locks, so the parents are marked for recovery too;
 *     the locks are resent to the parent's new master, carrying the
 *     parent's key, so that node links the child to its parent.  A
 *     request for a child in flight to the departed master is redone at
 *     finish, to the parent's new master.
 *   - Parent going away while a child request is in flight: the requester
 *     cannot unlock a parent with children (-EBUSY), purges take the
 *     children first, and a parent with an unlock in flight takes no new
 *     child; links are FIFO, so the request reaches P's master before any
 *     later unlock of P.  Persistent sub-locks are refused, so an orphan
 *     parent never has children.
 *   - Deep trees with digest keys: a child's key does not contain its
 *     parent's, so nothing derives the parent from the key; the requester
 *     uses the parent lock it names, and messages carry the parent's key.
 *
 *   What it does not give.  Flat (root) names still pay the directory
 *   round trip before the first lock.  No zero-message scheme is safe for
 *   them: with names the application picks and a directory placed by
 *   hash, the node that would arbitrate a name is fixed before anyone
 *   creates it, so a creator granting itself at once has told nobody; a
 *   second creator elsewhere can do the same before any "I created it"
 *   notice arrives, and both then hold a grant.  Only a name whose every
 *   possible requester must first go through the creator can skip the
 *   directory, and a granted parent lock is exactly that.  The price:
 *   all children of a root share its master, so a hot root concentrates
 *   its whole tree on one node (moving it is remastering's job,
 *   core/remaster.c, which moves a root only once it has no children).
 *
 * Toss list.  A resource with no locks is not freed at once: it stays on
 * the lockspace's toss list (oldest first) for toss_ms, so that locking
 * the same name again costs no directory lookup.  dlm_core_tick() frees
 * what has expired, looking only at the head of the list.  At most
 * max_tossed are kept (dlm_toss_trim): past it the oldest go at once, as
 * if their toss_ms had passed, so that cycling fresh names cannot grow
 * the list (and the directory) without bound.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/core_internal.h"
#include "core/wire.h"

#define LKB_CACHE_MAX	1024
#define QWAIT_CACHE_MAX	1024

/* The rendezvous placement of the directory ("Directory" above): each
 * member weighs the name, (node id, hash) mixed (dlm_hash_u64), and the
 * heaviest directs it; of two that weigh it the same, the higher node
 * id.  That is a total order on the members for each name, so removing
 * any but the first leaves the first first. */
static uint32_t dir_weight(uint32_t node, uint32_t hash)
{
	return dlm_hash_u64(((uint64_t)node << 32) | hash);
}

static bool dir_heavier(uint32_t wa, uint32_t a, uint32_t wb, uint32_t b)
{
	return wa > wb || (wa == wb && a > b);
}

/* Does node a come before node b for hash? */
bool dlm_dir_before(uint32_t a, uint32_t b, uint32_t hash)
{
	return dir_heavier(dir_weight(a, hash), a, dir_weight(b, hash), b);
}

uint32_t dlm_dir_nodeid_of(const uint32_t *members, unsigned int n,
			   uint32_t hash)
{
	uint32_t dir = 0, best = 0, w;
	unsigned int i;

	for (i = 0; i < n; i++) {
		w = dir_weight(members[i], hash);
		if (!i || dir_heavier(w, members[i], best, dir)) {
			best = w;
			dir = members[i];
		}
	}
	return dir;
}

uint32_t dlm_dir_nodeid(const struct dlm_ls *ls, uint32_t hash)
{
	return dlm_dir_nodeid_of(ls->ls_members, ls->ls_nmembers, hash);
}

/* ---------------------------------------------------------------- keys */

static_assert(1 + DLM_KEY_DIGEST_LEN + 1 + DLM_RESNAME_MAXLEN <= DLM_MAX_KEYLEN,
	      "a digest key must fit DLM_MAX_KEYLEN");
static_assert(crypto_generichash_BYTES_MIN <= DLM_KEY_DIGEST_LEN &&
	      DLM_KEY_DIGEST_LEN <= crypto_generichash_BYTES_MAX,
	      "generichash must give DLM_KEY_DIGEST_LEN bytes");

static unsigned int key_depth(const unsigned char *key, unsigned int keylen)
{
	unsigned int off = 0, depth = 0;

	while (off < keylen) {
		off += 1u + key[off];
		depth++;
	}
	return depth;
}

int dlm_key_child(const unsigned char *pkey, unsigned int pkeylen,
		  const void *name, unsigned int namelen, unsigned char *out)
{
	unsigned int off = 0;

	if (!name || namelen == 0 || namelen > DLM_RESNAME_MAXLEN)
		return -EINVAL;
	if (pkeylen) {
		if (!pkey || !dlm_key_valid(pkey, pkeylen))
			return -EINVAL;
		if (pkey[0] != DLM_KEY_DIGEST_MARK &&
		    key_depth(pkey, pkeylen) < DLM_KEY_PATH_DEPTH) {
			memcpy(out, pkey, pkeylen);
			off = pkeylen;
		} else {
			out[0] = DLM_KEY_DIGEST_MARK;
			crypto_generichash(out + 1, DLM_KEY_DIGEST_LEN, pkey,
					   pkeylen, NULL, 0);
			off = 1 + DLM_KEY_DIGEST_LEN;
		}
	}
	out[off] = (unsigned char)namelen;
	memcpy(out + off + 1, name, namelen);
	return (int)(off + 1 + namelen);
}

/* Is key the key of a child of the resource keyed pkey?  Its last
 * component is its name under the parent. */
bool dlm_key_is_child(const unsigned char *pkey, unsigned int pkeylen,
		      const unsigned char *key, unsigned int keylen)
{
	unsigned char want[DLM_MAX_KEYLEN];
	unsigned int off = 0, last = 0;
	int n;

	if (!dlm_key_valid(key, keylen) || !dlm_key_valid(pkey, pkeylen))
		return false;
	if (key[0] == DLM_KEY_DIGEST_MARK) {
		last = 1 + DLM_KEY_DIGEST_LEN;
	} else {
		while (off < keylen) {
			last = off;
			off += 1u + key[off];
		}
		if (last == 0)
			return false;	/* a root */
	}
	n = dlm_key_child(pkey, pkeylen, key + last + 1, key[last], want);
	return n == (int)keylen && !memcmp(want, key, keylen);
}

/* ---------------------------------------------------------------- LVBs */

const char dlm_lvb_zero[DLM_LVB_LEN];

bool dlm_lvb_store(struct dlm_ls *ls, char **slot, const char *src)
{
	if (!*slot) {
		if (!memcmp(src, dlm_lvb_zero, DLM_LVB_LEN))
			return true;
		*slot = dlm_malloc(ls->ls_core, DLM_LVB_LEN);
		if (!*slot)
			return false;
	}
	memcpy(*slot, src, DLM_LVB_LEN);
	return true;
}

bool dlm_lvb_room(struct dlm_ls *ls, char **slot)
{
	if (!*slot) {
		*slot = dlm_malloc(ls->ls_core, DLM_LVB_LEN);
		if (*slot)
			memset(*slot, 0, DLM_LVB_LEN);
	}
	return *slot != NULL;
}

/* ---------------------------------------------------------------- rsbs */

/* Memory per resource (issue 14): glibc's malloc adds 8 B to a chunk and
 * rounds it up to 16, so an rsb whose key starts at 168 takes a chunk of
 * 192 B with a key of up to 16 bytes, 208 B up to 32.  Growing the rsb
 * costs 16 B per resource at every 16 B; the bench (bench/bench-core.c)
 * shows where each byte goes. */
static_assert(offsetof(struct dlm_rsb, res_key) <= 168,
	      "struct dlm_rsb outgrew its 192-byte malloc chunk at 16 B keys");
/* res_flags and res_keylen are the bytes of res_hnode's spare word */
static_assert(offsetof(struct dlm_rsb, res_flags) ==
	      offsetof(struct dlm_rsb, res_hnode.hn_spare),
	      "res_flags is not res_hnode's spare word");

struct dlm_rsb *dlm_rsb_find(struct dlm_ls *ls, const unsigned char *key,
			     unsigned int keylen, uint32_t hash)
{
	struct dlm_hnode *n;

	for (n = dlm_htab_chain(&ls->ls_rsbtbl, hash); n; n = n->hn_next) {
		struct dlm_rsb *r = dlm_container_of(n, struct dlm_rsb, res_hnode);

		if (n->hn_hash == hash && r->res_keylen == keylen &&
		    !memcmp(r->res_key, key, keylen))
			return r;
	}
	return NULL;
}

struct dlm_rsb *dlm_rsb_create(struct dlm_ls *ls, const unsigned char *key,
			       unsigned int keylen, uint32_t hash)
{
	struct dlm_rsb *r = dlm_calloc(ls->ls_core, 1, offsetof(struct dlm_rsb, res_key) + keylen);

	if (!r)
		return NULL;
	r->res_lvbseq = ls->ls_core->core_cfg.lvbseq_start;
	r->res_hnode.hn_hash = hash;
	r->res_keylen = (uint16_t)keylen;
	memcpy(r->res_key, key, keylen);
	dlm_list_init(&r->res_grantq);
	dlm_list_init(&r->res_convertq);
	dlm_list_init(&r->res_waitq);
	dlm_list_init(&r->res_lookupq);
	dlm_htab_insert(&ls->ls_rsbtbl, &r->res_hnode);
	return r;
}

bool dlm_rsb_unused(const struct dlm_rsb *r)
{
	return r->res_nlkbs == 0 && !(r->res_flags & RESF_LOOKUP);
}

/* Something (an lkb, or a caller for a while) starts using r. */
void dlm_rsb_hold(struct dlm_ls *ls, struct dlm_rsb *r)
{
	r->res_nlkbs++;
	if (r->res_flags & RESF_TOSSED) {
		r->res_flags &= ~RESF_TOSSED;
		dlm_list_del(&r->res_toss);
		ls->ls_ntossed--;
		memset(r->res_grcount, 0, sizeof(r->res_grcount));
		r->res_nranged = 0;
	}
}

/* Put r on the toss list if nothing uses it any more. */
static void maybe_toss(struct dlm_ls *ls, struct dlm_rsb *r)
{
	if (!dlm_rsb_unused(r) || (r->res_flags & RESF_TOSSED))
		return;
	r->res_flags |= RESF_TOSSED;
	r->res_toss_time = (uint32_t)ls->ls_core->core_now;
	dlm_list_add_tail(&r->res_toss, &ls->ls_toss);
	ls->ls_ntossed++;
}

/* An lkb stops using r. */
void dlm_rsb_release(struct dlm_ls *ls, struct dlm_rsb *r)
{
	r->res_nlkbs--;
	maybe_toss(ls, r);
}

/* r is a sub-resource of parent: it holds the parent until it is freed,
 * so that a parent is never dropped before its children (resource.c's
 * essay: stale cached children). */
void dlm_rsb_set_parent(struct dlm_ls *ls, struct dlm_rsb *r,
			struct dlm_rsb *parent)
{
	if (r->res_parent)
		return;
	r->res_parent = parent;
	dlm_rsb_hold(ls, parent);
}

/* The root resource of r's tree: the one whose master masters r. */
struct dlm_rsb *dlm_rsb_root(struct dlm_rsb *r)
{
	while (r->res_parent)
		r = r->res_parent;
	return r;
}

static struct dlm_dirent *dir_add(struct dlm_ls *ls, const unsigned char *key,
				  unsigned int keylen, uint32_t hash,
				  uint32_t master, uint32_t event);
static void dir_self_clear(struct dlm_ls *ls, struct dlm_rsb *r);

void dlm_rsb_free(struct dlm_ls *ls, struct dlm_rsb *r)
{
	struct dlm_rsb *parent = r->res_parent;

	if (r->res_flags & RESF_LOOKUP)
		ls->ls_nlookups--;	/* its answer will find no rsb */

	/* a record naming us outlives the rsb that was it (its master
	 * moved away, and the move has not reached the record yet) */
	if (r->res_flags & RESF_DIR) {
		dir_self_clear(ls, r);
		if (!dir_add(ls, r->res_key, r->res_keylen,
			     r->res_hnode.hn_hash, dlm_our_nodeid(ls),
			     r->res_de_event))
			log_ls(ls, DLM_LOG_ERR,
			       "out of memory: a directory record lost");
	}
	if (r->res_flags & RESF_TOSSED) {
		dlm_list_del(&r->res_toss);
		ls->ls_ntossed--;
	}
	dlm_htab_remove(&ls->ls_rsbtbl, &r->res_hnode);
	free(r->res_lvb);
	free(r);
	if (parent)
		dlm_rsb_release(ls, parent); /* tossed after its children */
}

/* The copy of a root we moved away, and its directory record naming us:
 * kept until the new master's DIR_MOVE moves the record (remaster.c),
 * which, freed now, would make us its master again at our next lookup
 * (dlm-sim --seed 1176 --nodes 6 --faults --repoint: two masters). */
static bool toss_must_keep(const struct dlm_ls *ls, const struct dlm_rsb *r)
{
	return !is_master(ls, r) &&
	       (r->res_flags & (RESF_MOVED_AWAY | RESF_DIR)) ==
	       (RESF_MOVED_AWAY | RESF_DIR);
}

/* Kept on: to the end of the toss list, looked at again in toss_ms. */
static void toss_requeue(struct dlm_ls *ls, struct dlm_rsb *r, uint64_t now)
{
	dlm_list_del(&r->res_toss);
	r->res_toss_time = (uint32_t)now;
	dlm_list_add_tail(&r->res_toss, &ls->ls_toss);
}

/* Free tossed r.  A root's master gives up its directory record on the
 * way out. */
static void toss_drop(struct dlm_ls *ls, struct dlm_rsb *r)
{
	if (is_master(ls, r) && !r->res_parent) {
		uint32_t dir = dlm_dir_nodeid(ls, r->res_hnode.hn_hash);

		if (dir == dlm_our_nodeid(ls))
			dlm_dir_remove(ls, r->res_key, r->res_keylen,
				       r->res_hnode.hn_hash, dlm_our_nodeid(ls));
		else
			dlm_send_remove(ls, r);
	}
	dlm_rsb_free(ls, r);
}

/* Free every tossed rsb older than toss_ms (all of them with 'all'). */
void dlm_toss_expire(struct dlm_ls *ls, uint64_t now, bool all)
{
	uint32_t toss_ms = ls->ls_core->core_cfg.toss_ms;

	dlm_solo_toss_expire(ls, now, all);
	while (!dlm_list_empty(&ls->ls_toss)) {
		struct dlm_rsb *r = dlm_list_first(&ls->ls_toss, struct dlm_rsb,
						   res_toss);

		if (!all && (uint32_t)now - r->res_toss_time < toss_ms)
			break;
		if (!all && toss_ms && toss_must_keep(ls, r)) {
			toss_requeue(ls, r, now);
			continue;
		}
		toss_drop(ls, r);
	}
}

/* Past max_tossed unused resources, free the oldest now, exactly as
 * dlm_toss_expire frees them at toss_ms (the same copies kept, the same
 * REMOVE): the toss list is what an unprivileged user grows without
 * bound otherwise, locking and unlocking a new name each time (no lock
 * held, so max_locks_per_uid does not see it), ops/s x toss_ms of them,
 * and as many directory records on the directory nodes.  Called only at
 * the end of an engine entry point (lock, unlock, receive, purge,
 * finish, tick), where nobody holds a pointer to a tossed rsb, and only
 * while the lockspace runs, as expiry; not after a call that failed,
 * which must have done nothing (a refused lock leaves at most its own
 * fresh resource over the bound, until the next call).  Freeing a child
 * may toss its parent: one pass over what was there, so a tree drops a
 * level per call at worst. */
void dlm_toss_trim(struct dlm_ls *ls)
{
	uint32_t max = ls->ls_core->core_cfg.max_tossed;
	uint64_t n;

	/* tossed lone locks' resources first (solo.c): with them, at most
	 * max tossed in all */
	dlm_solo_toss_trim(ls);
	if (!max || ls->ls_ntossed <= max || !dlm_ls_running(ls))
		return;
	for (n = ls->ls_ntossed; n && ls->ls_ntossed > max; n--) {
		struct dlm_rsb *r = dlm_list_first(&ls->ls_toss, struct dlm_rsb,
						   res_toss);

		if (toss_must_keep(ls, r)) {
			toss_requeue(ls, r, ls->ls_core->core_now);
			continue;
		}
		toss_drop(ls, r);
		ls->ls_toss_evicted++;
	}
}

/* ---------------------------------------------------------------- lkbs */

/* An lkb of 168 B takes a 176 B malloc chunk (see the rsb's above): a
 * held lock on a shared resource is that chunk and its lkbtbl bucket. */
static_assert(sizeof(struct dlm_lkb) <= 168,
	      "struct dlm_lkb outgrew its 176-byte malloc chunk");
/* lkb_id and lkb_remid are the bytes of lkb_hnode's hash and spare word */
static_assert(offsetof(struct dlm_lkb, lkb_id) ==
	      offsetof(struct dlm_lkb, lkb_hnode.hn_hash) &&
	      offsetof(struct dlm_lkb, lkb_remid) ==
	      offsetof(struct dlm_lkb, lkb_hnode.hn_spare),
	      "lkb_id is not lkb_hnode's hash");

/* The lkb table's hash of a lock id is the id itself.  Ids are handed out
 * in sequence, so they spread evenly over the buckets without mixing, and
 * the bucket of a fresh id (looked at when it is handed out and when its
 * lkb goes in) lies next to the previous one's: with millions of locks
 * held it is in the cache, where a mixed hash would miss it every time.
 * It must stay the identity: lkb_id is the lkb's node's hash. */
static uint32_t lkid_hash(uint32_t id)
{
	return id;
}

struct dlm_lkb *dlm_lkb_find(struct dlm_ls *ls, uint32_t id)
{
	uint32_t hash = lkid_hash(id);
	struct dlm_hnode *n;

	if (!id)
		return NULL;
	for (n = dlm_htab_chain(&ls->ls_lkbtbl, hash); n; n = n->hn_next) {
		struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);

		if (lkb->lkb_id == id)
			return lkb;
	}
	return NULL;
}

/* An object of 'size' bytes (contents undefined): a cached one, or a new
 * one; NULL for want of memory. */
void *dlm_objcache_take(struct dlm_core *core, struct dlm_objcache *oc,
			size_t size)
{
	void *p = oc->oc_head;

	if (!p)
		return dlm_malloc(core, size);
	memcpy(&oc->oc_head, p, sizeof(oc->oc_head));
	oc->oc_count--;
	return p;
}

/* Keep p for reuse, or free it once max are kept. */
void dlm_objcache_give(struct dlm_objcache *oc, void *p, unsigned int max)
{
	if (oc->oc_count >= max) {
		free(p);
		return;
	}
	memcpy(p, &oc->oc_head, sizeof(oc->oc_head));
	oc->oc_head = p;
	oc->oc_count++;
}

void dlm_objcache_drain(struct dlm_objcache *oc)
{
	void *p;

	while ((p = oc->oc_head)) {
		memcpy(&oc->oc_head, p, sizeof(oc->oc_head));
		free(p);
	}
	oc->oc_count = 0;
}

/* A new lkb with id 'id' (unused; 0: a fresh one), on no queue. */
struct dlm_lkb *dlm_lkb_create(struct dlm_ls *ls, uint32_t id)
{
	struct dlm_lkb *lkb = dlm_objcache_take(ls->ls_core, &ls->ls_core->core_lkbs,
						sizeof(*lkb));

	if (!lkb)
		return NULL;
	memset(lkb, 0, sizeof(*lkb));
	if (!id)
		id = dlm_lkid_new(ls);
	lkb->lkb_id = id;	/* and so the node's hash: lkid_hash(id) == id */
	lkb->lkb_grmode = DLM_LOCK_IV;
	lkb->lkb_rqmode = DLM_LOCK_IV;
	lkb->lkb_highbast = DLM_LOCK_IV;
	lkb->lkb_last_bast = DLM_LOCK_IV;
	lkb->lkb_nodeid = dlm_our_nodeid(ls);
	dlm_list_init(&lkb->lkb_statequeue);
	dlm_list_init(&lkb->lkb_ownerqueue);
	dlm_list_init(&lkb->lkb_waiter);
	dlm_htab_insert(&ls->ls_lkbtbl, &lkb->lkb_hnode);
	return lkb;
}

/* Is id some lock's: an lkb's, or a lone lock's folded with its
 * resource (solo.c)? */
bool dlm_lkid_in_use(struct dlm_ls *ls, uint32_t id)
{
	return dlm_lkb_find(ls, id) || dlm_solo_find_id(ls, id);
}

/* Fresh ids.  ls_next_lkid counts up from 1; every id a lock has came
 * from it or from a block reserved for a client (dlm_core_ids_reserve,
 * which moves the counter past the block) or is a folded lock's own id
 * taken back.  So until the counter wraps, no id at or above it is in
 * use or reserved, and the id it hands out needs no look in the tables.
 * That look is what made a lock dearer with millions held (issue 14,
 * bench/README.md "What grows at 10M"): the fresh id's bucket in
 * ls_lkbtbl and ls_soloids (the hash of an id is the id) holds the lock
 * whose id is 2^k less, long cold, and comparing its id missed the cache
 * on every lock.  After 2^32 ids (or a reservation that wrapped) every
 * id is checked, as before: skip 0, ids still in use and ids of blocks
 * reserved for a client. */
uint32_t dlm_lkid_new(struct dlm_ls *ls)
{
	for (;;) {
		uint32_t id = ls->ls_next_lkid++;

		if (!ls->ls_next_lkid)
			ls->ls_lkid_wrapped = true;
		if (!id)
			continue;
		if (!ls->ls_lkid_wrapped)
			return id;
		if (!dlm_lkid_in_use(ls, id) &&
		    !(ls->ls_nidblocks && dlm_idblock_find(ls, id)))
			return id;
	}
}

void dlm_lkb_free(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_core *core = ls->ls_core;

	dlm_htab_remove(&ls->ls_lkbtbl, &lkb->lkb_hnode);
	/* a master copy leaves its node's list ("By node") */
	if (is_master_copy(lkb) && !dlm_list_empty(&lkb->lkb_ownerqueue))
		dlm_list_del(&lkb->lkb_ownerqueue);
	free(lkb->lkb_lvb);
	lkb->lkb_lvb = NULL;
	free(lkb->lkb_ranges);
	lkb->lkb_ranges = NULL;
	dlm_lkb_qwait_put(ls, lkb);
	dlm_objcache_give(&core->core_lkbs, lkb, LKB_CACHE_MAX);
}

const struct dlm_range dlm_range_whole = { DLM_RANGE_MIN, DLM_RANGE_MAX };

bool dlm_lkb_set_range(struct dlm_ls *ls, struct dlm_lkb *lkb, int which,
		       const struct dlm_range *range)
{
	if (!lkb->lkb_ranges) {
		if (dlm_range_is_whole(range))
			return true;
		lkb->lkb_ranges = dlm_malloc(ls->ls_core, 2 * sizeof(*lkb->lkb_ranges));
		if (!lkb->lkb_ranges)
			return false;
		lkb->lkb_ranges[DLM_LKB_GR] = dlm_range_whole;
		lkb->lkb_ranges[DLM_LKB_RQ] = dlm_range_whole;
	}
	lkb->lkb_ranges[which] = *range;
	return true;
}

/* lkb's wait record (struct dlm_lkb_wait), allocated (from the core's
 * cache of free ones if it has one) if lkb has none yet; NULL for want
 * of memory. */
struct dlm_lkb_wait *dlm_lkb_qwait_get(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_lkb_wait *w = lkb->lkb_qwait;

	if (w)
		return w;
	w = dlm_objcache_take(ls->ls_core, &ls->ls_core->core_qwaits, sizeof(*w));
	if (!w)
		return NULL;
	memset(w, 0, sizeof(*w));
	w->lw_lkb = lkb;
	dlm_list_init(&w->lw_dlwait);
	dlm_list_init(&w->lw_blocked);
	lkb->lkb_qwait = w;
	return w;
}

/* lkb's wait record goes once lkb is on neither list that needs it. */
void dlm_lkb_qwait_put(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_lkb_wait *w = lkb->lkb_qwait;

	if (!w || (lkb->lkb_flags & (LKBF_DLWAIT | LKBF_BLOCKED)))
		return;
	lkb->lkb_qwait = NULL;
	dlm_objcache_give(&ls->ls_core->core_qwaits, w, QWAIT_CACHE_MAX);
}

/* ----------------------------------------------------------- id blocks */

/* The reserved block holding id, or NULL (binary search). */
struct dlm_idblock *dlm_idblock_find(const struct dlm_ls *ls, uint32_t id)
{
	uint32_t first = id & ~(DLM_IDS_BLOCK - 1);
	size_t lo = 0, hi = ls->ls_nidblocks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct dlm_idblock *ib = &ls->ls_idblocks[mid];

		if (ib->ib_first == first)
			return ib;
		if (ib->ib_first < first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* May [first, first + DLM_IDS_BLOCK) be reserved: not block 0 (id 0 is
 * no id), not reserved already, no id in use?  The lkb table hashes an id
 * to itself, so the probes walk consecutive buckets. */
static bool idblock_free(const struct dlm_ls *ls, uint32_t first)
{
	uint32_t k;

	if (!first || dlm_idblock_find(ls, first))
		return false;
	/* at or past the counter before it wrapped: no id there was ever
	 * handed out (dlm_lkid_new) */
	if (!ls->ls_lkid_wrapped && first >= ls->ls_next_lkid)
		return true;
	for (k = 0; k < DLM_IDS_BLOCK; k++)
		if (dlm_lkid_in_use((struct dlm_ls *)ls, first + k))
			return false;
	return true;
}

int dlm_core_ids_reserve(struct dlm_ls *ls, uint64_t owner, uint32_t *first)
{
	uint32_t f = (ls->ls_next_lkid + DLM_IDS_BLOCK - 1) & ~(DLM_IDS_BLOCK - 1);
	size_t i;
	int tries;

	if (ls->ls_nidblocks == ls->ls_idblocks_cap) {
		size_t cap = ls->ls_idblocks_cap ? ls->ls_idblocks_cap * 2 : 16;
		struct dlm_idblock *v = dlm_realloc(ls->ls_core,
						    ls->ls_idblocks,
						    cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ls->ls_idblocks = v;
		ls->ls_idblocks_cap = cap;
	}
	for (tries = 0; !idblock_free(ls, f); tries++, f += DLM_IDS_BLOCK)
		if (tries == DLM_IDS_TRIES)
			return -ENOSPC;
	/* the engine's own ids go on past it; a block found past 2^32
	 * takes the counter back below ids in use (dlm_lkid_new) */
	if (f + DLM_IDS_BLOCK <= ls->ls_next_lkid)
		ls->ls_lkid_wrapped = true;
	ls->ls_next_lkid = f + DLM_IDS_BLOCK;
	for (i = ls->ls_nidblocks; i > 0 && ls->ls_idblocks[i - 1].ib_first > f; i--)
		ls->ls_idblocks[i] = ls->ls_idblocks[i - 1];
	ls->ls_idblocks[i].ib_first = f;
	ls->ls_idblocks[i].ib_fresh = 0;	/* idblock_free: none in use */
	ls->ls_idblocks[i].ib_owner = owner;
	ls->ls_nidblocks++;
	*first = f;
	return 0;
}

void dlm_core_ids_release(struct dlm_ls *ls, uint32_t first)
{
	struct dlm_idblock *ib = dlm_idblock_find(ls, first);
	size_t i;

	if (!ib || ib->ib_first != first)
		return;
	for (i = (size_t)(ib - ls->ls_idblocks); i + 1 < ls->ls_nidblocks; i++)
		ls->ls_idblocks[i] = ls->ls_idblocks[i + 1];
	ls->ls_nidblocks--;
}

/* ----------------------------------------------------------- directory */

/* Directory records.  A record of a root this node both directs and
 * masters is the resource's rsb itself, flagged RESF_DIR, its event in
 * res_de_event: at a million resources of our own that is 48 B of
 * record and a bucket of ls_dirtbl less per resource (issue 14).  Every
 * other record (master elsewhere, or ours with no rsb here) is a struct
 * dlm_dirent in ls_dirtbl.  A key has at most one of the two.  The flag
 * says "master: us" whatever res_nodeid says meanwhile: a record changes
 * only through the functions below, as before, and an rsb freed while
 * flagged leaves a dlm_dirent in its place (dlm_rsb_free). */

static struct dlm_dirent *dir_find(struct dlm_ls *ls,
				   const unsigned char *key,
				   unsigned int keylen, uint32_t hash)
{
	struct dlm_hnode *n;

	for (n = dlm_htab_chain(&ls->ls_dirtbl, hash); n; n = n->hn_next) {
		struct dlm_dirent *de = dlm_container_of(n, struct dlm_dirent,
							 de_hnode);

		if (n->hn_hash == hash && de->de_keylen == keylen &&
		    !memcmp(de->de_key, key, keylen))
			return de;
	}
	return NULL;
}

/* The rsb that is key's directory record, or NULL. */
static struct dlm_rsb *dir_self(struct dlm_ls *ls, const unsigned char *key,
				unsigned int keylen, uint32_t hash)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, key, keylen, hash);

	return r && (r->res_flags & RESF_DIR) ? r : NULL;
}

/* Make key's root rsb its record (master us, confirmed in 'event'), if
 * there is one here; the caller found no record of key. */
static bool dir_self_set(struct dlm_ls *ls, const unsigned char *key,
			 unsigned int keylen, uint32_t hash, uint32_t event)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, key, keylen, hash);

	if (!r || r->res_parent)
		return false;
	r->res_flags |= RESF_DIR;
	r->res_de_event = event;
	ls->ls_ndirself++;
	return true;
}

/* Has key a directory record apart from any rsb (a struct dlm_dirent)? */
bool dlm_dir_has_record(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash)
{
	return ls->ls_dirtbl.ht_count && dir_find(ls, key, keylen, hash);
}

/* r, a root just made for a lone lock unfolded (solo.c), is its key's
 * record, as the lone lock was: master us, confirmed in 'event'. */
void dlm_dir_self_adopt(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t event)
{
	r->res_flags |= RESF_DIR;
	r->res_de_event = event;
	ls->ls_ndirself++;
}

static void dir_self_clear(struct dlm_ls *ls, struct dlm_rsb *r)
{
	r->res_flags &= ~RESF_DIR;
	ls->ls_ndirself--;
}

/* ------------------------------------------------------------ By node
 *
 * Each node's master copies here and the directory records here naming
 * it (struct dlm_bynode), kept as they are made and freed: the
 * recovery after its departure purges and forgets those, not every lock
 * and record (recover.c purge_departed, dlm_dir_drop_departed).  A slot
 * is found by a scan from the one found last: a lockspace has a few
 * members, and the slot of a node that left with nothing here is taken
 * again.  Were all DLM_MAX_NODES slots held, the newcomer's copies and
 * records would be on no list: ls_bynode_lost, and recovery walks every
 * lock and record as before. */

struct dlm_bynode *dlm_bynode_find(struct dlm_ls *ls, uint32_t nodeid,
				   bool create)
{
	struct dlm_bynode *b = &ls->ls_bynode[ls->ls_bynode_last];
	unsigned int i;

	if (b->bn_nodeid == nodeid && nodeid)
		return b;
	for (i = 0; i < ls->ls_nbynode; i++)
		if (ls->ls_bynode[i].bn_nodeid == nodeid) {
			ls->ls_bynode_last = i;
			return &ls->ls_bynode[i];
		}
	if (!create || !nodeid)
		return NULL;
	for (i = 0; i < ls->ls_nbynode; i++) {
		b = &ls->ls_bynode[i];
		if (dlm_list_empty(&b->bn_mstcpys) &&
		    dlm_list_empty(&b->bn_dirents) &&
		    !dlm_ls_is_member(ls, b->bn_nodeid))
			break;
	}
	if (i == ls->ls_nbynode) {
		if (i == DLM_MAX_NODES) {
			ls->ls_bynode_lost = true;
			return NULL;
		}
		b = &ls->ls_bynode[ls->ls_nbynode++];
		dlm_list_init(&b->bn_mstcpys);
		dlm_list_init(&b->bn_dirents);
	}
	b->bn_nodeid = nodeid;
	ls->ls_bynode_last = i;
	return b;
}

struct bynode_count {
	struct dlm_ls	*bc_ls;
	uint64_t	bc_n[DLM_MAX_NODES];
	uint64_t	bc_off;		/* on no list, or another node's */
};

static void count_mstcpy(void *arg, struct dlm_hnode *n)
{
	struct bynode_count *bc = arg;
	struct dlm_lkb *lkb = dlm_container_of(n, struct dlm_lkb, lkb_hnode);
	struct dlm_bynode *b;

	if (!is_master_copy(lkb))
		return;
	b = dlm_bynode_find(bc->bc_ls, lkb->lkb_nodeid, false);
	if (!b) {
		bc->bc_off++;
		return;
	}
	bc->bc_n[b - bc->bc_ls->ls_bynode]++;
	if (dlm_list_empty(&lkb->lkb_ownerqueue))
		bc->bc_off++;
}

static void count_dirent(void *arg, struct dlm_hnode *n)
{
	struct bynode_count *bc = arg;
	struct dlm_dirent *de = dlm_container_of(n, struct dlm_dirent,
						 de_hnode);
	struct dlm_bynode *b;

	if (de->de_master == dlm_our_nodeid(bc->bc_ls)) {
		if (!dlm_list_empty(&de->de_bynode))
			bc->bc_off++;
		return;
	}
	b = dlm_bynode_find(bc->bc_ls, de->de_master, false);
	if (!b)
		bc->bc_off++;
	else
		bc->bc_n[b - bc->bc_ls->ls_bynode]++;
}

/* Checks (dlm_core_ls_verify): every master copy and every record naming
 * another node is on that node's list, and the lists hold nothing else.
 * One walk of the locks and records: for tests. */
int dlm_bynode_verify(struct dlm_ls *ls, char *why, size_t whylen)
{
	struct bynode_count *bc;
	unsigned int i, pass;
	int rv = 0;

	if (ls->ls_bynode_lost)
		return 0;	/* recovery walks everything */
	bc = dlm_malloc(ls->ls_core, sizeof(*bc));
	if (!bc)
		return 0;	/* not checked */
	for (pass = 0; pass < 2 && !rv; pass++) {
		memset(bc, 0, sizeof(*bc));
		bc->bc_ls = ls;
		if (pass == 0)
			dlm_htab_walk(&ls->ls_lkbtbl, count_mstcpy, bc);
		else
			dlm_htab_walk(&ls->ls_dirtbl, count_dirent, bc);
		for (i = 0; i < ls->ls_nbynode && !bc->bc_off; i++) {
			const struct dlm_list *pos, *head = pass == 0 ?
				&ls->ls_bynode[i].bn_mstcpys :
				&ls->ls_bynode[i].bn_dirents;
			uint32_t node = ls->ls_bynode[i].bn_nodeid;
			uint64_t k = 0;
			bool other = false;

			/* each entry is one of the node's (so, counted as
			 * many as are the node's, every one is there) */
			dlm_list_for_each(pos, head) {
				k++;
				if (pass == 0 ?
				    (!is_master_copy(dlm_container_of(pos,
						struct dlm_lkb, lkb_ownerqueue)) ||
				     dlm_container_of(pos, struct dlm_lkb,
						lkb_ownerqueue)->lkb_nodeid != node) :
				    dlm_container_of(pos, struct dlm_dirent,
						de_bynode)->de_master != node)
					other = true;
			}
			if (other) {
				snprintf(why, whylen, "node %u's list of %s "
					 "holds another's", node, pass == 0 ?
					 "master copies" : "records");
				rv = -EUCLEAN;
				break;
			}
			if (k != bc->bc_n[i]) {
				snprintf(why, whylen, "node %u's list holds %llu "
					 "%s, %llu are its",
					 ls->ls_bynode[i].bn_nodeid,
					 (unsigned long long)k,
					 pass == 0 ? "master copies" : "records",
					 (unsigned long long)bc->bc_n[i]);
				rv = -EUCLEAN;
				break;
			}
		}
		if (bc->bc_off && !rv) {
			snprintf(why, whylen, "%llu %s on no list or another "
				 "node's", (unsigned long long)bc->bc_off,
				 pass == 0 ? "master copies" : "records");
			rv = -EUCLEAN;
		}
	}
	free(bc);
	return rv;
}

/* lkb, a master copy whose lkb_nodeid is set, goes on its node's list. */
void dlm_mstcpy_link(struct dlm_ls *ls, struct dlm_lkb *lkb)
{
	struct dlm_bynode *b = dlm_bynode_find(ls, lkb->lkb_nodeid, true);

	if (b)
		dlm_list_add_tail(&lkb->lkb_ownerqueue, &b->bn_mstcpys);
}

/* de's master is 'master' from now on. */
static void dir_set_master(struct dlm_ls *ls, struct dlm_dirent *de,
			   uint32_t master)
{
	struct dlm_bynode *b;

	de->de_master = master;
	if (!dlm_list_empty(&de->de_bynode))
		dlm_list_del(&de->de_bynode);
	if (master == dlm_our_nodeid(ls))
		return;		/* never departs */
	b = dlm_bynode_find(ls, master, true);
	if (b)
		dlm_list_add_tail(&de->de_bynode, &b->bn_dirents);
}

/* A record goes, its table's node already unlinked or not. */
static void dir_free(struct dlm_dirent *de)
{
	if (!dlm_list_empty(&de->de_bynode))
		dlm_list_del(&de->de_bynode);
	free(de);
}

/* A new record of key, which the caller found missing: master 'master',
 * confirmed in 'event'.  NULL when out of memory. */
static struct dlm_dirent *dir_add(struct dlm_ls *ls, const unsigned char *key,
				  unsigned int keylen, uint32_t hash,
				  uint32_t master, uint32_t event)
{
	struct dlm_dirent *de;

	de = dlm_malloc(ls->ls_core, offsetof(struct dlm_dirent, de_key) + keylen);
	if (!de)
		return NULL;
	de->de_hnode.hn_hash = hash;
	dlm_list_init(&de->de_bynode);
	dir_set_master(ls, de, master);
	de->de_event = event;
	de->de_keylen = (uint16_t)keylen;
	memcpy(de->de_key, key, keylen);
	dlm_htab_insert(&ls->ls_dirtbl, &de->de_hnode);
	return de;
}

static void dir_del(struct dlm_ls *ls, struct dlm_dirent *de)
{
	dlm_htab_remove(&ls->ls_dirtbl, &de->de_hnode);
	dir_free(de);
}

/* de's master became us: its rsb, when there is one, takes it over. */
static void dir_settle(struct dlm_ls *ls, struct dlm_dirent *de)
{
	if (de->de_master == dlm_our_nodeid(ls) &&
	    dir_self_set(ls, de->de_key, de->de_keylen, de->de_hnode.hn_hash,
			 de->de_event))
		dir_del(ls, de);
}

/* The master of key; 'requester' becomes it when there is none yet. */
int dlm_dir_lookup(struct dlm_ls *ls, const unsigned char *key,
		   unsigned int keylen, uint32_t hash, uint32_t requester,
		   uint32_t *master)
{
	struct dlm_dirent *de = dir_find(ls, key, keylen, hash);
	struct dlm_rsb *r;

	/* during recovery: confirmed by its master's registration or by a
	 * lookup after the directory's rebuild, so the sweep keeps it */
	if (de) {
		de->de_event = ls->ls_event;
		*master = de->de_master;
		return 0;
	}
	*master = dlm_our_nodeid(ls);
	if ((r = dir_self(ls, key, keylen, hash))) {
		r->res_de_event = ls->ls_event;
		return 0;
	}
	if (requester == *master &&
	    dir_self_set(ls, key, keylen, hash, ls->ls_event))
		return 0;
	if (!dir_add(ls, key, keylen, hash, requester, ls->ls_event))
		return -ENOMEM;
	*master = requester;
	return 0;
}

/* Recovery: 'master' says it masters key.  A record not yet confirmed
 * in this event (left from before: its master may be gone) takes the
 * new master; two masters claiming one resource in one event is a bug
 * somewhere, logged, and the first claim kept. */
int dlm_dir_register(struct dlm_ls *ls, const unsigned char *key,
		     unsigned int keylen, uint32_t hash, uint32_t master)
{
	struct dlm_dirent *de = dir_find(ls, key, keylen, hash);
	uint32_t us = dlm_our_nodeid(ls), old;
	char name[DLM_KEY_TEXT_LEN];
	struct dlm_rsb *r = NULL;

	/* missing: add it here, not through dlm_dir_lookup, which would
	 * look it up again (at 1M resources a rebuild is one miss each) */
	if (!de && !(r = dir_self(ls, key, keylen, hash))) {
		if (master == us &&
		    dir_self_set(ls, key, keylen, hash, ls->ls_event))
			return 0;
		return dir_add(ls, key, keylen, hash, master,
			       ls->ls_event) ? 0 : -ENOMEM;
	}
	old = de ? de->de_master : us;
	if (old != master) {
		dlm_key_format(key, keylen, name, sizeof(name));
		if ((de ? de->de_event : r->res_de_event) == ls->ls_event) {
			log_ls(ls, DLM_LOG_ERR,
			       "recovery %u: nodes %u and %u both master \"%s\"",
			       ls->ls_event, old, master, name);
			return 0;
		}
		log_ls(ls, DLM_LOG_DEBUG, "directory: \"%s\" master %u, was %u",
		       name, master, old);
		if (r) {
			if (!dir_add(ls, key, keylen, hash, master,
				     ls->ls_event))
				return -ENOMEM;
			dir_self_clear(ls, r);
			return 0;
		}
		dir_set_master(ls, de, master);
	}
	if (r) {
		r->res_de_event = ls->ls_event;
		return 0;
	}
	de->de_event = ls->ls_event;
	dir_settle(ls, de);
	return 0;
}

void dlm_dir_remove(struct dlm_ls *ls, const unsigned char *key,
		    unsigned int keylen, uint32_t hash, uint32_t master)
{
	struct dlm_dirent *de = dir_find(ls, key, keylen, hash);
	struct dlm_rsb *r = de ? NULL : dir_self(ls, key, keylen, hash);
	uint32_t cur = de ? de->de_master : r ? dlm_our_nodeid(ls) : 0;
	char name[DLM_KEY_TEXT_LEN];

	if ((!de && !r) || cur != master) {
		dlm_key_format(key, keylen, name, sizeof(name));
		log_ls(ls, DLM_LOG_DEBUG,
		       "remove of \"%s\" from node %u ignored: master is %u",
		       name, master, cur);
		return;
	}
	if (r)
		dir_self_clear(ls, r);
	else
		dir_del(ls, de);
}

/* A LOOKUP held by the directory node: from the node key's record names,
 * which moved the resource away (remaster.c, "The directory"). */
struct dlm_dir_held {
	struct dlm_list		dh_list;	/* ls_dir_held */
	uint32_t		dh_node;	/* the requester */
	uint16_t		dh_keylen;
	unsigned char		dh_key[];
};

/* A LOOKUP of key from 'requester': held (1) if key's record names the
 * requester, else 0 (the caller answers it from the record); -ENOMEM,
 * nothing changed.  A node never looks up a name it masters, and the
 * record stops naming a master that drops the resource before any lookup
 * of its own comes (its REMOVE comes first on the link); so a record
 * naming the requester is one whose master moved the resource away and
 * whose new master's DIR_MOVE has not come yet.  Answered "you", the
 * requester would master a fresh copy beside the new master; it is
 * answered once a DIR_MOVE moves the record (dlm_dir_move), or never,
 * when a recovery comes first (dlm_dir_held_drop), after which the
 * requester looks up again. */
int dlm_dir_hold_lookup(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash, uint32_t requester)
{
	struct dlm_dirent *de = dir_find(ls, key, keylen, hash);
	char name[DLM_KEY_TEXT_LEN];
	struct dlm_dir_held *dh;

	if (!de || de->de_master != requester ||
	    requester == dlm_our_nodeid(ls) ||
	    ls->ls_core->core_fault == DLM_FAULT_REMASTER_DIR_ANSWER)
		return 0;
	dh = dlm_malloc(ls->ls_core, offsetof(struct dlm_dir_held, dh_key) +
			keylen);
	if (!dh)
		return -ENOMEM;
	dh->dh_node = requester;
	dh->dh_keylen = (uint16_t)keylen;
	memcpy(dh->dh_key, key, keylen);
	dlm_list_add_tail(&dh->dh_list, &ls->ls_dir_held);
	dlm_key_format(key, keylen, name, sizeof(name));
	log_ls(ls, DLM_LOG_DEBUG, "directory: lookup of \"%s\" from node %u, "
	       "its recorded master, waits for the move", name, requester);
	return 1;
}

/* key's record moved to 'master': answer the lookups held for it. */
static void dir_answer_held(struct dlm_ls *ls, const unsigned char *key,
			    unsigned int keylen, uint32_t master)
{
	struct dlm_list *pos, *tmp;

	dlm_list_for_each_safe(pos, tmp, &ls->ls_dir_held) {
		struct dlm_dir_held *dh = dlm_container_of(pos,
						struct dlm_dir_held, dh_list);
		struct dlm_msg m;

		if (dh->dh_keylen != keylen || memcmp(dh->dh_key, key, keylen))
			continue;
		dlm_msg_init(&m, DLM_MSG_LOOKUP_REPLY);
		m.m_nodeid = master;
		m.m_key = dh->dh_key;
		m.m_keylen = dh->dh_keylen;
		dlm_send_msg(ls, &m, dh->dh_node);
		dlm_list_del(&dh->dh_list);
		free(dh);
	}
}

/* Forget the held lookups (a recovery, or the lockspace goes). */
void dlm_dir_held_drop(struct dlm_ls *ls)
{
	while (!dlm_list_empty(&ls->ls_dir_held)) {
		struct dlm_dir_held *dh = dlm_list_first(&ls->ls_dir_held,
						struct dlm_dir_held, dh_list);

		dlm_list_del(&dh->dh_list);
		free(dh);
	}
}

/* Each held lookup, oldest first (the dump). */
void dlm_dir_held_each(struct dlm_ls *ls,
		       void (*fn)(void *arg, const unsigned char *key,
				  unsigned int keylen, uint32_t node),
		       void *arg)
{
	const struct dlm_list *pos;

	dlm_list_for_each(pos, &ls->ls_dir_held) {
		const struct dlm_dir_held *dh =
			dlm_container_of(pos, struct dlm_dir_held, dh_list);

		fn(arg, dh->dh_key, dh->dh_keylen, dh->dh_node);
	}
}

/* The held lookups are what dlm_dir_hold_lookup keeps: each of a root
 * key whose record is a dirent naming the requester, another node
 * (while running: a member, and we the key's directory node), each
 * requester once per key (its rsb has RESF_LOOKUP: one lookup at a
 * time).  A record that moved on without answering one would leave its
 * requester waiting for ever.  0, or -EUCLEAN with the first broken one
 * in 'why'. */
int dlm_dir_held_verify(struct dlm_ls *ls, char *why, size_t whylen)
{
	bool running = dlm_ls_running(ls);
	char name[DLM_KEY_TEXT_LEN];
	const struct dlm_list *pos, *p2;

	dlm_list_for_each(pos, &ls->ls_dir_held) {
		const struct dlm_dir_held *dh =
			dlm_container_of(pos, struct dlm_dir_held, dh_list);
		uint32_t hash = dlm_hash_bytes(dh->dh_key, dh->dh_keylen);
		const struct dlm_dirent *de = dir_find(ls, dh->dh_key,
						       dh->dh_keylen, hash);
		const char *bad = NULL;

		if (dh->dh_key[0] == DLM_KEY_DIGEST_MARK ||
		    1u + dh->dh_key[0] != dh->dh_keylen)
			bad = "not a root";
		else if (dh->dh_node == dlm_our_nodeid(ls))
			bad = "from us";
		else if (!de)
			bad = "without a record";
		else if (de->de_master != dh->dh_node)
			bad = "whose record names another master";
		else if (running && !dlm_ls_is_member(ls, dh->dh_node))
			bad = "from a node that is not a member";
		else if (running && dlm_dir_nodeid(ls, hash) != dlm_our_nodeid(ls))
			bad = "of a name we do not direct";
		for (p2 = pos->next; !bad && p2 != &ls->ls_dir_held;
		     p2 = p2->next) {
			const struct dlm_dir_held *d2 =
				dlm_container_of(p2, struct dlm_dir_held,
						 dh_list);

			if (d2->dh_node == dh->dh_node &&
			    d2->dh_keylen == dh->dh_keylen &&
			    !memcmp(d2->dh_key, dh->dh_key, dh->dh_keylen))
				bad = "held twice";
		}
		if (!bad)
			continue;
		dlm_key_format(dh->dh_key, dh->dh_keylen, name, sizeof(name));
		snprintf(why, whylen, "%s: held lookup from node %u %s", name,
			 dh->dh_node, bad);
		return -EUCLEAN;
	}
	return 0;
}

/* Remastering: key's master moved from 'old' to 'master'.  False, with
 * the master the record names in *cur, when that was not 'old'. */
int dlm_dir_move(struct dlm_ls *ls, const unsigned char *key,
		 unsigned int keylen, uint32_t hash, uint32_t old,
		 uint32_t master, uint32_t *cur)
{
	struct dlm_dirent *de = dir_find(ls, key, keylen, hash);
	struct dlm_rsb *r = de ? NULL : dir_self(ls, key, keylen, hash);
	uint32_t dummy;

	if (!de && !r)
		return dlm_dir_lookup(ls, key, keylen, hash, master, &dummy) ?
		       -ENOMEM : 1;
	*cur = de ? de->de_master : dlm_our_nodeid(ls);
	if (*cur != old)
		return 0;
	if (de) {
		dir_set_master(ls, de, master);
		dir_settle(ls, de);
		if (master != old && !dlm_list_empty(&ls->ls_dir_held) &&
		    ls->ls_core->core_fault != DLM_FAULT_REMASTER_DIR_KEEP_HELD)
			dir_answer_held(ls, key, keylen, master);
	} else if (master != old) {
		/* out of memory: nothing changed, the caller refuses the
		 * move (a record left naming the old master outlived the
		 * resource: its new master's REMOVE was ignored) */
		if (!dir_add(ls, key, keylen, hash, master, r->res_de_event))
			return -ENOMEM;
		dir_self_clear(ls, r);
	}
	return 1;
}

/* A record no master confirmed in this event goes. */
static bool unconfirmed(void *arg, struct dlm_hnode *n)
{
	struct dlm_dirent *de = dlm_container_of(n, struct dlm_dirent, de_hnode);

	if (de->de_event == *(const uint32_t *)arg)
		return false;
	dir_free(de);
	return true;
}

static void unconfirmed_self(void *arg, struct dlm_hnode *n)
{
	struct dlm_rsb *r = dlm_container_of(n, struct dlm_rsb, res_hnode);
	struct dlm_ls *ls = arg;

	if ((r->res_flags & RESF_DIR) && r->res_de_event != ls->ls_event)
		dir_self_clear(ls, r);
}

/* Recovery, after the DIR barrier: forget the records no master
 * confirmed (one pass over each table; ls_dirtbl shrinks once). */
void dlm_dir_sweep(struct dlm_ls *ls)
{
	dlm_htab_sweep(&ls->ls_dirtbl, unconfirmed, &ls->ls_event);
	if (ls->ls_ndirself)
		dlm_htab_walk(&ls->ls_rsbtbl, unconfirmed_self, ls);
}

/* A record naming a master that is no longer a member goes. */
static bool departed_master(void *arg, struct dlm_hnode *n)
{
	struct dlm_dirent *de = dlm_container_of(n, struct dlm_dirent, de_hnode);

	if (dlm_ls_is_member(arg, de->de_master))
		return false;
	dir_free(de);
	return true;
}

/* Recovery, a partial rebuild (recover.c, PARTIAL DIRECTORY): forget
 * the records of departed masters.  The records that are rsbs name us.
 * Each record naming another node is on its node's list ("By node"):
 * only the departed nodes' are looked at, unless some node found no
 * slot. */
void dlm_dir_drop_departed(struct dlm_ls *ls)
{
	unsigned int i;

	if (ls->ls_bynode_lost) {
		dlm_htab_sweep(&ls->ls_dirtbl, departed_master, ls);
		return;
	}
	for (i = 0; i < ls->ls_nbynode; i++) {
		struct dlm_bynode *b = &ls->ls_bynode[i];

		if (dlm_ls_is_member(ls, b->bn_nodeid))
			continue;
		while (!dlm_list_empty(&b->bn_dirents))
			dir_del(ls, dlm_list_first(&b->bn_dirents,
						   struct dlm_dirent,
						   de_bynode));
	}
}

/* -------------------------------------------------------------- owners */

struct dlm_owner *dlm_owner_get(struct dlm_ls *ls, uint64_t id, bool create)
{
	uint32_t hash = dlm_hash_u64(id);
	struct dlm_owner *ow;
	struct dlm_hnode *n;

	for (n = dlm_htab_chain(&ls->ls_ownertbl, hash); n; n = n->hn_next) {
		ow = dlm_container_of(n, struct dlm_owner, ow_hnode);
		if (ow->ow_id == id)
			return ow;
	}
	if (!create)
		return NULL;
	ow = dlm_malloc(ls->ls_core, sizeof(*ow));
	if (!ow)
		return NULL;
	ow->ow_id = id;
	ow->ow_hnode.hn_hash = hash;
	dlm_list_init(&ow->ow_locks);
	dlm_list_init(&ow->ow_solos);
	dlm_htab_insert(&ls->ls_ownertbl, &ow->ow_hnode);
	return ow;
}

/* Free the owner record once it holds no locks. */
void dlm_owner_put(struct dlm_ls *ls, struct dlm_owner *ow)
{
	if (!dlm_list_empty(&ow->ow_locks) || !dlm_list_empty(&ow->ow_solos))
		return;
	dlm_htab_remove(&ls->ls_ownertbl, &ow->ow_hnode);
	free(ow);
}

