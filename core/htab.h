/*
 * core/htab.h - an intrusive chained hash table that grows with load.
 *
 * Elements embed a struct dlm_hnode carrying the element's 32-bit hash.
 * The table doubles its bucket array whenever it holds twice as many
 * elements as buckets, so chains stay short (average length <= 2) however
 * many elements there are, at 4-8 B of bucket per element rather than
 * 8-16 (issue 14: at 10M elements the smaller array also misses the TLB
 * less, which more than pays for the longer chains); lookups walk one
 * bucket and compare keys in the caller, which knows the element type.
 * It shrinks when it falls below an eighth full, so a lockspace that once
 * held a million locks gives the memory back.  Resizing is a full rehash
 * (amortised O(1) per insert).
 */
#ifndef DLMD_CORE_HTAB_H
#define DLMD_CORE_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dlm_hnode {
	struct dlm_hnode *hn_next;
	uint32_t hn_hash;
	uint32_t hn_spare;	/* not the table's: its element's to use */
};

struct dlm_htab {
	struct dlm_hnode **ht_buckets;
	size_t ht_nbuckets;	/* a power of two */
	size_t ht_count;
};

int dlm_htab_init(struct dlm_htab *ht);
void dlm_htab_destroy(struct dlm_htab *ht);
/* Insert a node whose hn_hash is set.  Never fails: when growing fails for
 * lack of memory the table keeps its size and chains get longer. */
void dlm_htab_insert(struct dlm_htab *ht, struct dlm_hnode *n);
void dlm_htab_remove(struct dlm_htab *ht, struct dlm_hnode *n);

/* First node of the chain for 'hash'; follow hn_next, compare hn_hash. */
static inline struct dlm_hnode *dlm_htab_chain(const struct dlm_htab *ht,
					       uint32_t hash)
{
	return ht->ht_buckets[hash & (ht->ht_nbuckets - 1)];
}

/* Visit every node; fn may not modify the table. */
void dlm_htab_walk(const struct dlm_htab *ht,
		   void (*fn)(void *arg, struct dlm_hnode *n), void *arg);

/* Remove, in one pass, every node for which drop(arg, n) returns true
 * (drop may free it: the table is done with n when drop returns), then
 * shrink once to the size removing them one by one would have left.
 * Returns how many were removed. */
size_t dlm_htab_sweep(struct dlm_htab *ht,
		      bool (*drop)(void *arg, struct dlm_hnode *n), void *arg);

/* Empty the table without per-node removal, calling fn on every node
 * (which may free it).  The table stays usable. */
void dlm_htab_drain(struct dlm_htab *ht,
		    void (*fn)(void *arg, struct dlm_hnode *n), void *arg);

/* 32-bit hash of a byte string (FNV-1a with a final avalanche). */
uint32_t dlm_hash_bytes(const void *buf, size_t len);
/* Hash of a 32/64-bit integer key. */
uint32_t dlm_hash_u32(uint32_t v);
uint32_t dlm_hash_u64(uint64_t v);

#endif /* DLMD_CORE_HTAB_H */
