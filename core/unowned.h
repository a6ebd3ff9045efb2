/* SPDX-License-Identifier: MIT */
/*
 * Segments no heap owns (core/unowned.c): spares (owner HELD_OWNER: empty segments of exited
 * or destroyed heaps, kept for the next thread) and abandoned segments (owner NULL: segments
 * of exited threads that still hold live blocks, adopted by heaps that need memory). Their
 * lists, their locks and the fork handlers of those locks.
 *
 * Lock order: enum lock_rank (core/lock.h); spare_lock is taken with no other lock held, or
 * inside abandoned_lock.
 */
#ifndef SEFER_CORE_UNOWNED_H
#define SEFER_CORE_UNOWNED_H

#include "core/segment.h"

/* Spare segments kept process-wide */
#define SPARE_MAX (4 * (CONFIG_SEGMENT_CACHE > 0 ? CONFIG_SEGMENT_CACHE : 1))

SEFER_INTERNAL void sefer__spare_put(struct segment *seg);
SEFER_INTERNAL __must_check struct segment *sefer__spare_take(struct heap *owner);
SEFER_INTERNAL void sefer__set_cache_to_spares(struct segment_set *set);
SEFER_INTERNAL void sefer__segment_drop(struct segment *seg);
SEFER_INTERNAL uint64_t sefer__spares_each(uint64_t (*fn)(struct segment *seg, void *arg),
					   void *arg);
SEFER_INTERNAL void sefer__spares_release_all(void);

SEFER_INTERNAL void sefer__set_mark_never(struct segment_set *set);
SEFER_INTERNAL void sefer__set_abandon(struct segment_set *set);
SEFER_INTERNAL bool sefer__abandoned_reclaim(struct heap *heap, unsigned bin);
SEFER_INTERNAL uint64_t sefer__abandoned_each_held(uint64_t (*fn)(struct segment *seg, void *arg),
						   void *arg, struct segment **emptied);

SEFER_INTERNAL void sefer__unowned_fork_prepare(void) __acquires(abandoned_lock)
	__acquires(spare_lock);
SEFER_INTERNAL void sefer__unowned_fork_parent(void) __releases(spare_lock)
	__releases(abandoned_lock);
SEFER_INTERNAL void sefer__unowned_fork_child(void) __releases(spare_lock)
	__releases(abandoned_lock);

#endif
