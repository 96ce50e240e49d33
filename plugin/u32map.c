/*
 * plugin/u32map.c - a hash map from non-zero 32-bit keys to pointers.
 *
 * Open addressing with linear probing over a power-of-two table that
 * doubles when live entries plus tombstones pass half of it, so probe
 * sequences stay short however many locks a client holds.  Key 0 marks an
 * empty slot and DELETED a tombstone; neither is a valid key (lock ids and
 * client serials are never 0, and DELETED is skipped when serials wrap).
 *
 * struct u32idx is the same map from keys to 32-bit values (client.c's
 * lock ids to their records' handles, slab.c): key and value share one
 * 8-byte slot, so a lookup reads one cache line where u32map reads two
 * (its keys and its pointers lie in arrays of their own), and an entry
 * takes 8 B a slot against 12.
 */
#include <errno.h>
#include <stdlib.h>

#include "plugin/dlmd.h"

#define EMPTY		0u
#define DELETED		0xffffffffu
#define MIN_CAP		16u

static uint32_t slot_of(uint32_t key, uint32_t cap)
{
	/* Fibonacci hashing spreads sequential ids. */
	return (uint32_t)((key * 2654435769u) & (cap - 1));
}

void *u32map_get(const struct u32map *m, uint32_t key)
{
	if (!m->um_cap || key == EMPTY || key == DELETED)
		return NULL;
	for (uint32_t i = slot_of(key, m->um_cap), n = 0; n < m->um_cap;
	     i = (i + 1) & (m->um_cap - 1), n++) {
		if (m->um_keys[i] == key)
			return m->um_vals[i];
		if (m->um_keys[i] == EMPTY)
			return NULL;
	}
	return NULL;
}

static int resize(struct u32map *m, uint32_t cap)
{
	uint32_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->um_cap; i++) {
		uint32_t k = m->um_keys[i], j;

		if (k == EMPTY || k == DELETED)
			continue;
		for (j = slot_of(k, cap); keys[j] != EMPTY; j = (j + 1) & (cap - 1))
			;
		keys[j] = k;
		vals[j] = m->um_vals[i];
	}
	free(m->um_keys);
	free(m->um_vals);
	m->um_keys = keys;
	m->um_vals = vals;
	m->um_cap = cap;
	m->um_used = m->um_count;
	return 0;
}

int u32map_reserve(struct u32map *m, uint32_t n)
{
	uint32_t cap = m->um_cap ? m->um_cap : MIN_CAP;

	if (m->um_used + n < m->um_cap / 2)
		return 0;
	while (m->um_count + n >= cap / 2) {
		if (cap > UINT32_MAX / 4)
			return -ENOMEM;
		cap *= 2;
	}
	return resize(m, cap);
}

int u32map_put(struct u32map *m, uint32_t key, void *val)
{
	uint32_t i, tomb = UINT32_MAX;
	int rv;

	if (key == EMPTY || key == DELETED)
		return -EINVAL;
	rv = u32map_reserve(m, 1);
	if (rv)
		return rv;
	for (i = slot_of(key, m->um_cap);; i = (i + 1) & (m->um_cap - 1)) {
		if (m->um_keys[i] == key) {
			m->um_vals[i] = val;
			return 0;
		}
		if (m->um_keys[i] == DELETED && tomb == UINT32_MAX)
			tomb = i;
		if (m->um_keys[i] == EMPTY)
			break;
	}
	if (tomb != UINT32_MAX)
		i = tomb;
	else
		m->um_used++;
	m->um_keys[i] = key;
	m->um_vals[i] = val;
	m->um_count++;
	return 0;
}

void *u32map_del(struct u32map *m, uint32_t key)
{
	if (!m->um_cap || key == EMPTY || key == DELETED)
		return NULL;
	for (uint32_t i = slot_of(key, m->um_cap), n = 0; n < m->um_cap;
	     i = (i + 1) & (m->um_cap - 1), n++) {
		if (m->um_keys[i] == key) {
			void *v = m->um_vals[i];

			m->um_keys[i] = DELETED;
			m->um_vals[i] = NULL;
			m->um_count--;
			return v;
		}
		if (m->um_keys[i] == EMPTY)
			return NULL;
	}
	return NULL;
}

void u32map_each(const struct u32map *m, void (*fn)(void *arg, uint32_t key, void *val),
		 void *arg)
{
	for (uint32_t i = 0; i < m->um_cap; i++)
		if (m->um_keys[i] != EMPTY && m->um_keys[i] != DELETED)
			fn(arg, m->um_keys[i], m->um_vals[i]);
}

void u32map_free(struct u32map *m)
{
	free(m->um_keys);
	free(m->um_vals);
	m->um_keys = NULL;
	m->um_vals = NULL;
	m->um_cap = m->um_count = m->um_used = 0;
}

/* ------------------------------------------------------------------ */
/* u32idx: key in the low 32 bits of a slot, its value in the high     */
/* ------------------------------------------------------------------ */

static uint32_t slot_key(uint64_t slot)
{
	return (uint32_t)slot;
}

static uint32_t slot_val(uint64_t slot)
{
	return (uint32_t)(slot >> 32);
}

bool u32idx_get(const struct u32idx *m, uint32_t key, uint32_t *val)
{
	if (!m->ui_cap || key == EMPTY || key == DELETED)
		return false;
	for (uint32_t i = slot_of(key, m->ui_cap), n = 0; n < m->ui_cap;
	     i = (i + 1) & (m->ui_cap - 1), n++) {
		uint64_t s = m->ui_slots[i];

		if (slot_key(s) == key) {
			*val = slot_val(s);
			return true;
		}
		if (slot_key(s) == EMPTY)
			return false;
	}
	return false;
}

static int idx_resize(struct u32idx *m, uint32_t cap)
{
	uint64_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->ui_cap; i++) {
		uint32_t k = slot_key(m->ui_slots[i]), j;

		if (k == EMPTY || k == DELETED)
			continue;
		for (j = slot_of(k, cap); slot_key(slots[j]) != EMPTY;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = m->ui_slots[i];
	}
	free(m->ui_slots);
	m->ui_slots = slots;
	m->ui_cap = cap;
	m->ui_used = m->ui_count;
	return 0;
}

int u32idx_reserve(struct u32idx *m, uint32_t n)
{
	uint32_t cap = m->ui_cap ? m->ui_cap : MIN_CAP;

	if (m->ui_used + n < m->ui_cap / 2)
		return 0;
	while (m->ui_count + n >= cap / 2) {
		if (cap > UINT32_MAX / 4)
			return -ENOMEM;
		cap *= 2;
	}
	return idx_resize(m, cap);
}

int u32idx_put(struct u32idx *m, uint32_t key, uint32_t val)
{
	uint32_t i, tomb = UINT32_MAX;
	int rv;

	if (key == EMPTY || key == DELETED)
		return -EINVAL;
	rv = u32idx_reserve(m, 1);
	if (rv)
		return rv;
	for (i = slot_of(key, m->ui_cap);; i = (i + 1) & (m->ui_cap - 1)) {
		uint32_t k = slot_key(m->ui_slots[i]);

		if (k == key)
			break;
		if (k == DELETED && tomb == UINT32_MAX)
			tomb = i;
		if (k == EMPTY) {
			if (tomb != UINT32_MAX)
				i = tomb;
			else
				m->ui_used++;
			m->ui_count++;
			break;
		}
	}
	m->ui_slots[i] = (uint64_t)val << 32 | key;
	return 0;
}

bool u32idx_del(struct u32idx *m, uint32_t key, uint32_t *val)
{
	if (!m->ui_cap || key == EMPTY || key == DELETED)
		return false;
	for (uint32_t i = slot_of(key, m->ui_cap), n = 0; n < m->ui_cap;
	     i = (i + 1) & (m->ui_cap - 1), n++) {
		uint64_t s = m->ui_slots[i];

		if (slot_key(s) == key) {
			*val = slot_val(s);
			m->ui_slots[i] = DELETED;
			m->ui_count--;
			return true;
		}
		if (slot_key(s) == EMPTY)
			return false;
	}
	return false;
}

void u32idx_each(const struct u32idx *m,
		 void (*fn)(void *arg, uint32_t key, uint32_t val), void *arg)
{
	for (uint32_t i = 0; i < m->ui_cap; i++) {
		uint32_t k = slot_key(m->ui_slots[i]);

		if (k != EMPTY && k != DELETED)
			fn(arg, k, slot_val(m->ui_slots[i]));
	}
}

void u32idx_free(struct u32idx *m)
{
	free(m->ui_slots);
	m->ui_slots = NULL;
	m->ui_cap = m->ui_count = m->ui_used = 0;
}
