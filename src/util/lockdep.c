/* The lock-order checker (util/lockdep.h). Compiled to nothing without
 * -DNOSTALL_LOCKDEP. */
#include "util/lockdep.h"

#ifdef NOSTALL_LOCKDEP

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CLASSES 64
#define MAX_HELD 48
#define CHAIN_LEN 240

struct held {
	struct lockdep_class *c;
	const void *lock;
	uint64_t order;
};

static _Thread_local struct held held[MAX_HELD];
static _Thread_local int nheld;
static _Thread_local bool overflowed;

/* The graph (under graph_lock): edge[b][a] when a was waited for under b;
 * why[b][a]: the held classes of the thread that recorded it. */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lockdep_class *classes[MAX_CLASSES + 1];
static int nclasses;
static bool edge[MAX_CLASSES + 1][MAX_CLASSES + 1];
static char *why[MAX_CLASSES + 1][MAX_CLASSES + 1];
static lockdep_report_fn report_fn;
static void *report_arg;

static void register_locked(struct lockdep_class *c)
{
	if (c->id || nclasses == MAX_CLASSES)
		return;
	classes[++nclasses] = c;
	c->id = nclasses;
}

void lockdep_class_register(struct lockdep_class *c)
{
	pthread_mutex_lock(&graph_lock);
	register_locked(c);
	pthread_mutex_unlock(&graph_lock);
}

void lockdep_set_report(lockdep_report_fn fn, void *arg)
{
	pthread_mutex_lock(&graph_lock);
	report_fn = fn;
	report_arg = arg;
	pthread_mutex_unlock(&graph_lock);
}

void lockdep_reset(void)
{
	pthread_mutex_lock(&graph_lock);
	for (int b = 0; b <= MAX_CLASSES; b++)
		for (int a = 0; a <= MAX_CLASSES; a++) {
			edge[b][a] = false;
			free(why[b][a]);
			why[b][a] = NULL;
		}
	pthread_mutex_unlock(&graph_lock);
}

int lockdep_held_count(void)
{
	return nheld;
}

/* "B (key) -> C (key) -> ..." of this thread's held locks. */
static void held_chain(char *out, size_t len)
{
	size_t o = 0;
	out[0] = '\0';
	for (int i = 0; i < nheld && o < len; i++) {
		int w = snprintf(out + o, len - o, "%s%s(%llu)", i ? " -> " : "", held[i].c->name,
				 (unsigned long long)held[i].order);
		if (w < 0)
			break;
		o += (size_t)w;
	}
	if (!nheld)
		snprintf(out, len, "(nothing)");
}

/* Deliver a report (graph_lock held; dropped around the callback). */
static void report_locked(const char *text)
{
	lockdep_report_fn fn = report_fn;
	void *arg = report_arg;
	if (fn) {
		pthread_mutex_unlock(&graph_lock);
		fn(text, arg);
		pthread_mutex_lock(&graph_lock);
		return;
	}
	fprintf(stderr, "%s", text);
	fflush(stderr);
	abort();
}

/* A path from->...->to in the graph (BFS), as "X -> Y [held: ...]\n"
 * lines into out; false when none. */
static bool path_find(int from, int to, char *out, size_t len)
{
	int prev[MAX_CLASSES + 1], queue[MAX_CLASSES + 1], qh = 0, qt = 0;
	for (int i = 0; i <= MAX_CLASSES; i++)
		prev[i] = -1;
	prev[from] = from;
	queue[qt++] = from;
	while (qh < qt) {
		int x = queue[qh++];
		if (x == to)
			break;
		for (int y = 1; y <= nclasses; y++)
			if (edge[x][y] && prev[y] < 0) {
				prev[y] = x;
				queue[qt++] = y;
			}
	}
	if (prev[to] < 0)
		return false;
	/* Walk back, then print forward. */
	int path[MAX_CLASSES + 1], n = 0;
	for (int x = to; x != from; x = prev[x])
		path[n++] = x;
	path[n++] = from;
	size_t o = 0;
	out[0] = '\0';
	for (int i = n - 1; i > 0 && o < len; i--) {
		int b = path[i], a = path[i - 1];
		int w = snprintf(out + o, len - o, "    %s -> %s   (recorded holding: %s)\n", classes[b]->name,
				 classes[a]->name, why[b][a] ? why[b][a] : "?");
		if (w < 0)
			break;
		o += (size_t)w;
	}
	return true;
}

/* c is about to be waited for: check and record the edges from every held
 * class (graph_lock held). */
static void edges_add_locked(struct lockdep_class *c, const void *lock, uint64_t order)
{
	char chain[CHAIN_LEN];
	held_chain(chain, sizeof chain);
	for (int i = 0; i < nheld; i++) {
		struct lockdep_class *b = held[i].c;
		if (b == c) {
			if ((c->flags & LOCKDEP_NEST_ASCENDING) && order > held[i].order)
				continue;
			char text[1024];
			snprintf(text, sizeof text,
				 "nostall lockdep: lock-order inversion: %s(%llu) taken while holding %s(%llu)%s\n"
				 "  this thread holds: %s\n",
				 c->name, (unsigned long long)order, b->name, (unsigned long long)held[i].order,
				 (c->flags & LOCKDEP_NEST_ASCENDING) ? " (same class: ascending order only)"
								     : " (same class may not nest)",
				 chain);
			report_locked(text);
			continue;
		}
		if (edge[b->id][c->id])
			continue;
		char back[2048];
		if (path_find(c->id, b->id, back, sizeof back)) {
			char text[3072];
			snprintf(text, sizeof text,
				 "nostall lockdep: lock-order inversion: %s taken while holding %s\n"
				 "  new: %s -> %s   (this thread holds: %s)\n"
				 "  but already recorded:\n%s",
				 c->name, b->name, b->name, c->name, chain, back);
			report_locked(text);
			/* not recorded: the report names the first offender only */
			continue;
		}
		edge[b->id][c->id] = true;
		why[b->id][c->id] = strdup(chain);
	}
	(void)lock;
}

static void held_push(struct lockdep_class *c, const void *lock, uint64_t order)
{
	if (nheld == MAX_HELD) {
		overflowed = true;
		return;
	}
	held[nheld++] = (struct held){.c = c, .lock = lock, .order = order};
}

void lockdep_acquire(struct lockdep_class *c, const void *lock, uint64_t order)
{
	pthread_mutex_lock(&graph_lock);
	register_locked(c);
	for (int i = 0; i < nheld; i++)
		if (!held[i].c->id)
			register_locked(held[i].c);
	if (c->id)
		edges_add_locked(c, lock, order);
	pthread_mutex_unlock(&graph_lock);
	held_push(c, lock, order);
}

void lockdep_acquire_try(struct lockdep_class *c, const void *lock, uint64_t order)
{
	lockdep_class_register(c); /* ids are read under graph_lock only */
	held_push(c, lock, order);
}

void lockdep_release(const void *lock)
{
	/* The latest acquisition of lock (locks are not always released in
	 * reverse order). */
	for (int i = nheld - 1; i >= 0; i--) {
		if (held[i].lock != lock)
			continue;
		memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof held[0]);
		nheld--;
		return;
	}
}

#endif
