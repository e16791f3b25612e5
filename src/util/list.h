/* Intrusive doubly linked list (circular, with a head node).
 * Not thread-safe: the owner of the list states the lock that protects it. */
#ifndef NOSTALL_UTIL_LIST_H
#define NOSTALL_UTIL_LIST_H

#include <stddef.h>
#include <stdbool.h>

struct list_node {
	struct list_node *next, *prev;
};

#define list_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void list_init(struct list_node *h) { h->next = h->prev = h; }
static inline bool list_empty(const struct list_node *h) { return h->next == h; }
/* A node that is not on any list points to itself (after list_init or list_del). */
static inline bool list_linked(const struct list_node *n) { return n->next != n; }

static inline void list__insert(struct list_node *n, struct list_node *prev,
				struct list_node *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}
static inline void list_add_head(struct list_node *h, struct list_node *n) { list__insert(n, h, h->next); }
static inline void list_add_tail(struct list_node *h, struct list_node *n) { list__insert(n, h->prev, h); }
/* Insert n just before pos (pos may be the head: then it is a tail add). */
static inline void list_add_before(struct list_node *pos, struct list_node *n) { list__insert(n, pos->prev, pos); }
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}
static inline struct list_node *list_first(const struct list_node *h) { return list_empty(h) ? NULL : h->next; }

#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#endif
