/*
 * plugin/u32map.c - hash maps from 32-bit keys: to pointers (u32map) and
 * to 32-bit values (u32idx).
 *
 * Both are one table (struct u32tab): open addressing with linear probing
 * over a power-of-two array of slots that doubles when live entries plus
 * tombstones pass half of it, so probe sequences stay short however many
 * locks a client holds.  A slot is the key (4 B) and the value right
 * after it, unaligned (memcpy): 8 B for u32idx (client.c's lock ids to
 * their records' handles, slab.c), 4 + sizeof(void *) for u32map; a
 * lookup reads one cache line.  Key 0 marks an empty slot and DELETED a
 * tombstone; neither is a valid key (lock ids and client serials are
 * never 0, and DELETED is skipped when serials wrap).
 *
 * The slot size is a parameter of the table's functions, not a field of
 * the table: the lookups, puts and deletes are inline and each map calls
 * them with a constant, so each gets the code of a table of its own
 * width (no multiply or copy of run-time length), the resize included.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"

#define EMPTY		0u
#define DELETED		0xffffffffu
#define NONE		UINT32_MAX	/* "no slot" from the probes */
#define MIN_CAP		16u
#define KEY_SIZE	sizeof(uint32_t)
#define MAP_SLOT	(KEY_SIZE + sizeof(void *))
#define IDX_SLOT	(KEY_SIZE + sizeof(uint32_t))

static uint32_t slot_of(uint32_t key, uint32_t cap)
{
	/* Fibonacci hashing spreads sequential ids. */
	return (uint32_t)((key * 2654435769u) & (cap - 1));
}

static inline unsigned char *slot_at(const struct u32tab *t, uint32_t i, size_t ss)
{
	return t->t_slots + (size_t)i * ss;
}

static inline uint32_t key_at(const struct u32tab *t, uint32_t i, size_t ss)
{
	uint32_t k;

	memcpy(&k, slot_at(t, i, ss), sizeof(k));
	return k;
}

static inline void set_key(struct u32tab *t, uint32_t i, size_t ss, uint32_t key)
{
	memcpy(slot_at(t, i, ss), &key, sizeof(key));
}

static inline bool valid_key(uint32_t key)
{
	return key != EMPTY && key != DELETED;
}

/* The slot holding 'key', or NONE. */
static inline uint32_t tab_find(const struct u32tab *t, uint32_t key, size_t ss)
{
	if (!t->t_cap || !valid_key(key))
		return NONE;
	for (uint32_t i = slot_of(key, t->t_cap), n = 0; n < t->t_cap;
	     i = (i + 1) & (t->t_cap - 1), n++) {
		uint32_t k = key_at(t, i, ss);

		if (k == key)
			return i;
		if (k == EMPTY)
			return NONE;
	}
	return NONE;
}

/* Rehash every live entry into a new array of 'cap' slots: the
 * tombstones go. */
static inline int tab_resize(struct u32tab *t, uint32_t cap, size_t ss)
{
	struct u32tab n = { .t_cap = cap, .t_count = t->t_count,
			    .t_used = t->t_count };

	n.t_slots = calloc(cap, ss);
	if (!n.t_slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->t_cap; i++) {
		uint32_t k = key_at(t, i, ss), j;

		if (!valid_key(k))
			continue;
		for (j = slot_of(k, cap); key_at(&n, j, ss) != EMPTY;
		     j = (j + 1) & (cap - 1))
			;
		memcpy(slot_at(&n, j, ss), slot_at(t, i, ss), ss);
	}
	free(t->t_slots);
	*t = n;
	return 0;
}

/* Called when live slots and tombstones reach half the array.  The new
 * array doubles until the live keys and n fill under 3/8 of it, so that
 * a sweep of tombstones at the same size leaves room for at least cap/8
 * more puts before the next one (each rebuild costs O(cap): amortised
 * O(1) a put).  At "under 1/2" a table just under half full of live
 * keys was rebuilt at the same size on every put after a delete
 * (test-u32map test_sweep_not_each_put: 999 rebuilds in 1000 pairs). */
static inline int tab_grow(struct u32tab *t, uint32_t n, size_t ss)
{
	uint32_t cap = t->t_cap ? t->t_cap : MIN_CAP;

	while ((uint64_t)t->t_count + n >= (uint64_t)cap / 2 - cap / 8) {
		if (cap > UINT32_MAX / 4)
			return -ENOMEM;
		cap *= 2;
	}
	return tab_resize(t, cap, ss);
}

/* The resize of each width, out of line (it is rare) and of its width
 * (a constant slot size: no copy of run-time length per entry). */
static __attribute__((noinline)) int map_grow(struct u32tab *t, uint32_t n)
{
	return tab_grow(t, n, MAP_SLOT);
}

static __attribute__((noinline)) int idx_grow(struct u32tab *t, uint32_t n)
{
	return tab_grow(t, n, IDX_SLOT);
}

static inline int tab_reserve(struct u32tab *t, uint32_t n, size_t ss)
{
	if ((uint64_t)t->t_used + n < t->t_cap / 2)	/* no wrap at any n */
		return 0;
	return ss == IDX_SLOT ? idx_grow(t, n) : map_grow(t, n);
}

/* The slot 'key' is to take, its key written (over a tombstone where the
 * probe passed one) and counted, or where it already is; the caller
 * writes the value.  0, -EINVAL or -ENOMEM. */
static inline int tab_put(struct u32tab *t, uint32_t key, size_t ss, uint32_t *slot)
{
	uint32_t i, tomb = NONE;
	int rv;

	if (!valid_key(key))
		return -EINVAL;
	rv = tab_reserve(t, 1, ss);
	if (rv)
		return rv;
	for (i = slot_of(key, t->t_cap);; i = (i + 1) & (t->t_cap - 1)) {
		uint32_t k = key_at(t, i, ss);

		if (k == key)
			break;
		if (k == DELETED && tomb == NONE)
			tomb = i;
		if (k == EMPTY) {
			if (tomb != NONE)
				i = tomb;
			else
				t->t_used++;
			t->t_count++;
			set_key(t, i, ss, key);
			break;
		}
	}
	*slot = i;
	return 0;
}

/* Turn the live slot 'i' into a tombstone; the caller has read its
 * value (a tombstone's value is never read again). */
static inline void tab_erase(struct u32tab *t, uint32_t i, size_t ss)
{
	set_key(t, i, ss, DELETED);
	t->t_count--;
}

/* The first live slot at or after 'i', or t_cap. */
static uint32_t tab_next(const struct u32tab *t, uint32_t i, size_t ss)
{
	while (i < t->t_cap && !valid_key(key_at(t, i, ss)))
		i++;
	return i;
}

static void tab_free(struct u32tab *t)
{
	free(t->t_slots);
	*t = (struct u32tab){ 0 };
}

/* ------------------------------------------------------------------ */
/* u32map: a pointer after each key                                    */
/* ------------------------------------------------------------------ */

static void *map_val(const struct u32tab *t, uint32_t i)
{
	void *v;

	memcpy(&v, slot_at(t, i, MAP_SLOT) + KEY_SIZE, sizeof(v));
	return v;
}

void *u32map_get(const struct u32map *m, uint32_t key)
{
	uint32_t i = tab_find(&m->um_tab, key, MAP_SLOT);

	return i == NONE ? NULL : map_val(&m->um_tab, i);
}

int u32map_reserve(struct u32map *m, uint32_t n)
{
	return tab_reserve(&m->um_tab, n, MAP_SLOT);
}

int u32map_put(struct u32map *m, uint32_t key, void *val)
{
	uint32_t i;
	int rv = tab_put(&m->um_tab, key, MAP_SLOT, &i);

	if (!rv)
		memcpy(slot_at(&m->um_tab, i, MAP_SLOT) + KEY_SIZE, &val, sizeof(val));
	return rv;
}

void *u32map_del(struct u32map *m, uint32_t key)
{
	uint32_t i = tab_find(&m->um_tab, key, MAP_SLOT);
	void *v;

	if (i == NONE)
		return NULL;
	v = map_val(&m->um_tab, i);
	tab_erase(&m->um_tab, i, MAP_SLOT);
	return v;
}

void u32map_each(const struct u32map *m, void (*fn)(void *arg, uint32_t key, void *val),
		 void *arg)
{
	const struct u32tab *t = &m->um_tab;

	for (uint32_t i = tab_next(t, 0, MAP_SLOT); i < t->t_cap;
	     i = tab_next(t, i + 1, MAP_SLOT))
		fn(arg, key_at(t, i, MAP_SLOT), map_val(t, i));
}

void u32map_free(struct u32map *m)
{
	tab_free(&m->um_tab);
}

/* ------------------------------------------------------------------ */
/* u32idx: a 32-bit value after each key                               */
/* ------------------------------------------------------------------ */

static uint32_t idx_val(const struct u32tab *t, uint32_t i)
{
	uint32_t v;

	memcpy(&v, slot_at(t, i, IDX_SLOT) + KEY_SIZE, sizeof(v));
	return v;
}

bool u32idx_get(const struct u32idx *m, uint32_t key, uint32_t *val)
{
	uint32_t i = tab_find(&m->ui_tab, key, IDX_SLOT);

	if (i == NONE)
		return false;
	*val = idx_val(&m->ui_tab, i);
	return true;
}

int u32idx_reserve(struct u32idx *m, uint32_t n)
{
	return tab_reserve(&m->ui_tab, n, IDX_SLOT);
}

int u32idx_put(struct u32idx *m, uint32_t key, uint32_t val)
{
	uint32_t i;
	int rv = tab_put(&m->ui_tab, key, IDX_SLOT, &i);

	if (!rv)
		memcpy(slot_at(&m->ui_tab, i, IDX_SLOT) + KEY_SIZE, &val, sizeof(val));
	return rv;
}

bool u32idx_del(struct u32idx *m, uint32_t key, uint32_t *val)
{
	uint32_t i = tab_find(&m->ui_tab, key, IDX_SLOT);

	if (i == NONE)
		return false;
	*val = idx_val(&m->ui_tab, i);
	tab_erase(&m->ui_tab, i, IDX_SLOT);
	return true;
}

void u32idx_each(const struct u32idx *m,
		 void (*fn)(void *arg, uint32_t key, uint32_t val), void *arg)
{
	const struct u32tab *t = &m->ui_tab;

	for (uint32_t i = tab_next(t, 0, IDX_SLOT); i < t->t_cap;
	     i = tab_next(t, i + 1, IDX_SLOT))
		fn(arg, key_at(t, i, IDX_SLOT), idx_val(t, i));
}

void u32idx_free(struct u32idx *m)
{
	tab_free(&m->ui_tab);
}
