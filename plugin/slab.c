/*
 * plugin/slab.c - records of one size, named by 32-bit handles.
 *
 * What a record costs where each is its own malloc chunk: malloc's 8 B
 * header and the rounding up to its 16 B steps (client.c's struct lkcb,
 * 56 B, took a 64 B chunk), and a 64-bit pointer in whatever finds it.
 * Here records lie side by side in pages of SLAB_PAGE_RECS, one malloc a
 * page, and a record is named by a 32-bit handle, its page's place in
 * the directory times SLAB_PAGE_RECS plus its own place in the page: a
 * map keeps a handle beside its 32-bit key in one 8 B slot (u32map.c's
 * struct u32idx).  A record stays where it is while it lives, so a
 * pointer to it (slab_rec) stays good until it is freed.
 *
 * Each page keeps its own list of free records (a free record's first 4
 * bytes hold the next one's place + 1; the records past sp_fresh were
 * never handed out and are on no list) and its count in use; the pages
 * with a free record are on sl_avail, whose head gives the next record.
 * A page whose last record goes is given back to malloc, unless no other
 * page is empty: that one is kept (sl_spare), so that taking and dropping
 * records one at a time allocates nothing.  Its directory slot is reused
 * (sl_holes).  Every call is O(1) but a directory that doubles.
 */
#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"

#define SLAB_MAX_PAGES	(UINT32_MAX / SLAB_PAGE_RECS + 1)
#define SLAB_MIN_DIR	8u

static_assert(offsetof(struct slab_page, sp_recs) % 8 == 0,
	      "records start 8-byte aligned");

static void avail_push(struct slab *s, struct slab_page *p)
{
	p->sp_prev = NULL;
	p->sp_next = s->sl_avail;
	if (s->sl_avail)
		s->sl_avail->sp_prev = p;
	s->sl_avail = p;
}

static void avail_unlink(struct slab *s, struct slab_page *p)
{
	if (p->sp_prev)
		p->sp_prev->sp_next = p->sp_next;
	else
		s->sl_avail = p->sp_next;
	if (p->sp_next)
		p->sp_next->sp_prev = p->sp_prev;
	p->sp_prev = p->sp_next = NULL;
}

/* A new empty page on sl_avail, or NULL (no memory, or no handle left). */
static struct slab_page *page_new(struct slab *s)
{
	struct slab_page *p;
	uint32_t idx;

	if (!s->sl_nholes && s->sl_npages == s->sl_dircap) {
		uint32_t cap = s->sl_dircap ? s->sl_dircap * 2 : SLAB_MIN_DIR;
		struct slab_page **pages;
		uint32_t *holes;

		if (s->sl_dircap >= SLAB_MAX_PAGES)
			return NULL;
		if (cap > SLAB_MAX_PAGES)
			cap = SLAB_MAX_PAGES;
		pages = realloc(s->sl_pages, cap * sizeof(*pages));
		if (!pages)
			return NULL;
		s->sl_pages = pages;
		holes = realloc(s->sl_holes, cap * sizeof(*holes));
		if (!holes)
			return NULL;	/* the larger directory is kept */
		s->sl_holes = holes;
		s->sl_dircap = cap;
	}
	p = malloc(offsetof(struct slab_page, sp_recs) +
		   (size_t)SLAB_PAGE_RECS * s->sl_size);
	if (!p)
		return NULL;
	idx = s->sl_nholes ? s->sl_holes[--s->sl_nholes] : s->sl_npages++;
	s->sl_pages[idx] = p;
	p->sp_index = idx;
	p->sp_used = 0;
	p->sp_fresh = 0;
	p->sp_free = 0;
	avail_push(s, p);
	return p;
}

void *slab_alloc(struct slab *s, size_t size, uint32_t *handle)
{
	struct slab_page *p;
	uint32_t i;
	void *rec;

	if (!s->sl_size)
		s->sl_size = size;
	p = s->sl_avail;
	if (!p && !(p = page_new(s)))
		return NULL;
	if (p->sp_free) {
		i = p->sp_free - 1;
		rec = p->sp_recs + (size_t)i * s->sl_size;
		memcpy(&p->sp_free, rec, sizeof(p->sp_free));
	} else {
		i = p->sp_fresh++;
		rec = p->sp_recs + (size_t)i * s->sl_size;
	}
	if (p == s->sl_spare)
		s->sl_spare = NULL;
	if (++p->sp_used == SLAB_PAGE_RECS)
		avail_unlink(s, p);
	s->sl_count++;
	memset(rec, 0, s->sl_size);
	*handle = p->sp_index * SLAB_PAGE_RECS + i;
	return rec;
}

void slab_free(struct slab *s, uint32_t handle)
{
	struct slab_page *p = s->sl_pages[handle / SLAB_PAGE_RECS];
	uint32_t i = handle % SLAB_PAGE_RECS;

	if (p->sp_used-- == SLAB_PAGE_RECS)
		avail_push(s, p);
	s->sl_count--;
	memcpy(p->sp_recs + (size_t)i * s->sl_size, &p->sp_free,
	       sizeof(p->sp_free));
	p->sp_free = i + 1;
	if (p->sp_used)
		return;
	if (!s->sl_spare) {
		s->sl_spare = p;
		return;
	}
	avail_unlink(s, p);
	s->sl_pages[p->sp_index] = NULL;
	s->sl_holes[s->sl_nholes++] = p->sp_index;
	free(p);
}

uint32_t slab_pages(const struct slab *s)
{
	return s->sl_npages - s->sl_nholes;
}

void slab_fini(struct slab *s)
{
	for (uint32_t i = 0; i < s->sl_npages; i++)
		free(s->sl_pages[i]);
	free(s->sl_pages);
	free(s->sl_holes);
	memset(s, 0, sizeof(*s));
}
