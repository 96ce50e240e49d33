/*
 * core/list.h - an intrusive circular doubly-linked list.
 *
 * A struct dlm_list is both the head of a list and the link embedded in
 * each element; an empty list (or an unlinked element) points to itself.
 */
#ifndef DLMD_CORE_LIST_H
#define DLMD_CORE_LIST_H

#include <stddef.h>

struct dlm_list {
	struct dlm_list *next, *prev;
};

#define dlm_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void dlm_list_init(struct dlm_list *l)
{
	l->next = l->prev = l;
}

static inline int dlm_list_empty(const struct dlm_list *l)
{
	return l->next == l;
}

static inline void dlm_list_insert_between(struct dlm_list *n,
					   struct dlm_list *prev,
					   struct dlm_list *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* Append n at the tail of head. */
static inline void dlm_list_add_tail(struct dlm_list *n, struct dlm_list *head)
{
	dlm_list_insert_between(n, head->prev, head);
}

/* Insert n at the head of head. */
static inline void dlm_list_add_head(struct dlm_list *n, struct dlm_list *head)
{
	dlm_list_insert_between(n, head, head->next);
}

/* Unlink n and leave it pointing to itself. */
static inline void dlm_list_del(struct dlm_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	dlm_list_init(n);
}

#define dlm_list_first(head, type, member) \
	(dlm_list_empty(head) ? NULL : dlm_container_of((head)->next, type, member))

#define dlm_list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* Safe against removal of pos. */
#define dlm_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif /* DLMD_CORE_LIST_H */
