/*
 * core/htab.c - growable intrusive hash table (see htab.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/htab.h"

#define HTAB_MIN_BUCKETS 16

int dlm_htab_init(struct dlm_htab *ht)
{
	ht->ht_buckets = calloc(HTAB_MIN_BUCKETS, sizeof(*ht->ht_buckets));
	if (!ht->ht_buckets)
		return -ENOMEM;
	ht->ht_nbuckets = HTAB_MIN_BUCKETS;
	ht->ht_count = 0;
	return 0;
}

void dlm_htab_destroy(struct dlm_htab *ht)
{
	free(ht->ht_buckets);
	ht->ht_buckets = NULL;
	ht->ht_nbuckets = 0;
	ht->ht_count = 0;
}

static void rehash(struct dlm_htab *ht, size_t nbuckets)
{
	struct dlm_hnode **nb = calloc(nbuckets, sizeof(*nb));
	size_t i;

	if (!nb)
		return;		/* keep the old size: correct, just slower */
	for (i = 0; i < ht->ht_nbuckets; i++) {
		struct dlm_hnode *n = ht->ht_buckets[i], *next;

		for (; n; n = next) {
			size_t b = n->hn_hash & (nbuckets - 1);

			next = n->hn_next;
			n->hn_next = nb[b];
			nb[b] = n;
		}
	}
	free(ht->ht_buckets);
	ht->ht_buckets = nb;
	ht->ht_nbuckets = nbuckets;
}

void dlm_htab_insert(struct dlm_htab *ht, struct dlm_hnode *n)
{
	size_t b;

	if (ht->ht_count >= 2 * ht->ht_nbuckets)
		rehash(ht, ht->ht_nbuckets * 2);
	b = n->hn_hash & (ht->ht_nbuckets - 1);
	n->hn_next = ht->ht_buckets[b];
	ht->ht_buckets[b] = n;
	ht->ht_count++;
}

void dlm_htab_remove(struct dlm_htab *ht, struct dlm_hnode *n)
{
	struct dlm_hnode **pp = &ht->ht_buckets[n->hn_hash & (ht->ht_nbuckets - 1)];

	for (; *pp; pp = &(*pp)->hn_next) {
		if (*pp == n) {
			*pp = n->hn_next;
			n->hn_next = NULL;
			ht->ht_count--;
			break;
		}
	}
	if (ht->ht_nbuckets > HTAB_MIN_BUCKETS &&
	    ht->ht_count < ht->ht_nbuckets / 8)
		rehash(ht, ht->ht_nbuckets / 2);
}

size_t dlm_htab_sweep(struct dlm_htab *ht,
		      bool (*drop)(void *arg, struct dlm_hnode *n), void *arg)
{
	size_t i, removed = 0, nbuckets;

	for (i = 0; i < ht->ht_nbuckets; i++) {
		struct dlm_hnode **pp = &ht->ht_buckets[i];

		while (*pp) {
			struct dlm_hnode *n = *pp, *next = n->hn_next;

			if (drop(arg, n)) {
				*pp = next;
				removed++;
			} else {
				pp = &n->hn_next;
			}
		}
	}
	ht->ht_count -= removed;
	/* dlm_htab_remove halves whenever the count falls below an eighth */
	nbuckets = ht->ht_nbuckets;
	while (nbuckets > HTAB_MIN_BUCKETS && ht->ht_count < nbuckets / 8)
		nbuckets /= 2;
	if (nbuckets != ht->ht_nbuckets)
		rehash(ht, nbuckets);
	return removed;
}

void dlm_htab_walk(const struct dlm_htab *ht,
		   void (*fn)(void *arg, struct dlm_hnode *n), void *arg)
{
	size_t i;

	for (i = 0; i < ht->ht_nbuckets; i++) {
		struct dlm_hnode *n;

		for (n = ht->ht_buckets[i]; n; n = n->hn_next)
			fn(arg, n);
	}
}

void dlm_htab_drain(struct dlm_htab *ht,
		    void (*fn)(void *arg, struct dlm_hnode *n), void *arg)
{
	size_t i;

	for (i = 0; i < ht->ht_nbuckets; i++) {
		struct dlm_hnode *n = ht->ht_buckets[i], *next;

		ht->ht_buckets[i] = NULL;
		for (; n; n = next) {
			next = n->hn_next;
			fn(arg, n);
		}
	}
	ht->ht_count = 0;
}

uint32_t dlm_hash_bytes(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return dlm_hash_u32(h);
}

uint32_t dlm_hash_u32(uint32_t v)
{
	/* murmur3's finaliser: every input bit affects every output bit */
	v ^= v >> 16;
	v *= 0x85ebca6bu;
	v ^= v >> 13;
	v *= 0xc2b2ae35u;
	v ^= v >> 16;
	return v;
}

uint32_t dlm_hash_u64(uint64_t v)
{
	return dlm_hash_u32((uint32_t)v ^ dlm_hash_u32((uint32_t)(v >> 32)));
}
