/* A lock-order checker for test builds (the idea of Linux's lockdep).
 *
 * Each lock that takes part in the documented order (src/extfs/core/write.h) is
 * annotated with a class. Per thread the held locks are recorded; the
 * first time a lock of class A is waited for while one of class B is held,
 * the edge B->A goes into a global graph. An edge that closes a cycle (A
 * was already reachable before B) is a possible deadlock even if this run
 * never hit it: the checker reports both chains - the new edge with the
 * locks this thread holds, and the recorded path back, each edge with the
 * held locks of the thread that recorded it - and aborts (a test may
 * install a callback instead: lockdep_set_report).
 *
 * Same-class nesting is an error unless the class is LOCKDEP_NEST_ASCENDING
 * (two inode locks in inode-number order): then each new lock's order key
 * must be above every held lock of its class. A lock taken by a trylock
 * that succeeded (lockdep_acquire_try) records no edge - it cannot wait -
 * but is held: what is waited for under it adds edges.
 *
 * Compiled with -DNOSTALL_LOCKDEP (the asan and tsan variants, the test-
 * hooks build; Makefile HOOKS_DEFS). Otherwise every call below is a macro
 * that expands to nothing and evaluates no argument (no code, no strings):
 * arguments must have no side effects, and class objects may be declared
 * (extern, incomplete type) without being defined.
 *
 * Locking: the graph is under one internal mutex (a leaf: it is taken and
 * dropped inside these calls only); the held list is thread-local.
 */
#ifndef NOSTALL_UTIL_LOCKDEP_H
#define NOSTALL_UTIL_LOCKDEP_H

#include <stdint.h>

/* Class flags. */
#define LOCKDEP_NEST_ASCENDING 1u /* same class nests in ascending order key */

struct lockdep_class;

/* The report (both chains, several lines) for a test's callback. */
typedef void (*lockdep_report_fn)(const char *report, void *arg);

#ifdef NOSTALL_LOCKDEP

struct lockdep_class {
	const char *name;
	unsigned flags;
	int id; /* 1-based once registered (under the graph lock); 0 before */
};

/* Define a class object: LOCKDEP_CLASS_DEFINE(my_class, "name", flags). */
#define LOCKDEP_CLASS_DEFINE(var, cname, cflags) struct lockdep_class var = {.name = (cname), .flags = (cflags)}

/* Give c its id (done at first use anyway). */
void lockdep_class_register(struct lockdep_class *c);
/* Before waiting for the lock `lock` of class c (order: the key of
 * LOCKDEP_NEST_ASCENDING). */
void lockdep_acquire(struct lockdep_class *c, const void *lock, uint64_t order);
/* A trylock of `lock` succeeded. */
void lockdep_acquire_try(struct lockdep_class *c, const void *lock, uint64_t order);
/* `lock` is released (a lock not recorded as held is ignored: one taken
 * before the checker knew the thread, or by an unannotated path). */
void lockdep_release(const void *lock);
/* Test only: call fn(report, arg) instead of printing and aborting (NULL:
 * back to abort). */
void lockdep_set_report(lockdep_report_fn fn, void *arg);
/* Test only: forget every recorded edge (classes keep their ids). */
void lockdep_reset(void);
/* Locks this thread holds (for tests). */
int lockdep_held_count(void);

#else

#define LOCKDEP_CLASS_DEFINE(var, cname, cflags) extern struct lockdep_class var
#define lockdep_class_register(c) ((void)0)
#define lockdep_acquire(c, lock, order) ((void)0)
#define lockdep_acquire_try(c, lock, order) ((void)0)
#define lockdep_release(lock) ((void)0)
#define lockdep_set_report(fn, arg) ((void)0)
#define lockdep_reset() ((void)0)
#define lockdep_held_count() 0

#endif
#endif
