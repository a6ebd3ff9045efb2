/* SPDX-License-Identifier: MIT */
/*
 * First-class heaps (CONFIG_HEAPS, core/heaps.c): the hooks the core calls. With the option
 * off they are static inline no-ops and a heap is always a thread's default heap.
 */
#ifndef SEFER_CORE_HEAPS_H
#define SEFER_CORE_HEAPS_H

#include "core/heap.h"

#if IS_ENABLED(CONFIG_HEAPS)
/* seg->large_tracked, under the heap's large_lock */
enum large_track {
	LARGE_UNTRACKED = 0,	 /* a default heap's block, or taken off the list by destroy */
	LARGE_TRACKED = 1,	 /* on large_heap's list */
	LARGE_FREE_DEFERRED = 2, /* freed while the heap was visited: the visitor releases it */
};

SEFER_INTERNAL void sefer__heaps_orphan_children(struct heap *home);
SEFER_INTERNAL void sefer__heaps_large_add(struct heap *heap, struct segment *seg);
SEFER_INTERNAL bool sefer__heaps_large_remove(struct segment *seg);
SEFER_INTERNAL bool sefer__heaps_large_detach(struct segment *seg);

/* A heap struct just mapped (heap_struct_get), before the fork handlers can see it. */
static inline void heaps_struct_init(struct heap *heap)
{
	spin_init(&heap->fc.large_lock, LOCK_RANK_HEAP_LARGE);
}

/* A heap struct made ready for reuse (heap_reset): not first-class, no owner, no children. */
static inline void heaps_reset(struct heap *heap)
{
	atomic_store_explicit(&heap->fc.home, NULL, memory_order_relaxed);
	__atomic_store_n(&heap->fc.first_class, false, __ATOMIC_RELAXED); /* heap_is_default */
	heap->fc.children = heap->fc.next_child = heap->fc.prev_child = NULL;
	heap->fc.large = NULL; /* large_lock is free here: it is never reset but in a fork child */
	heap->fc.large_visiting = false;
}

/* May heap adopt abandoned segments? Not a first-class heap: destroy frees what it owns. */
static inline bool heap_reclaims(const struct heap *heap)
{
	return !heap->fc.first_class;
}

/* Has the thread whose default heap is heap first-class heaps (their home is heap)? Owner. */
static inline bool heap_has_children(const struct heap *heap)
{
	return heap->fc.children != NULL;
}

/* Is owner (a small segment's owner field) a first-class heap of the thread whose default
 * heap is me? Any thread; owner may be NULL or HELD_OWNER (core/owner.h). */
static inline bool heap_is_mine(const struct heap *owner, const struct heap *me)
{
	return owner_is_heap(owner) &&
	       atomic_load_explicit(&((struct heap *)owner)->fc.home, memory_order_relaxed) == me;
}

/*
 * Is owner (a small segment's owner field, read by any thread) a thread's default heap? Not a
 * first-class heap, which destroy may drop with its segments (core/remote.h), nor a sentinel.
 * Relaxed: a stale owner read this way belongs to a heap struct now reused, and the segment is
 * then abandoned, not a first-class heap's (heaps never adopt).
 */
static inline bool heap_is_default(const struct heap *owner)
{
	return owner_is_heap(owner) &&
	       !__atomic_load_n(&((const struct heap *)owner)->fc.first_class, __ATOMIC_RELAXED);
}

/* large_alloc: a first-class heap keeps a list of its large blocks (visit, destroy). */
static inline void heaps_large_track(struct heap *heap, struct segment *seg)
{
	if (heap->fc.first_class)
		sefer__heaps_large_add(heap, seg);
	else
		seg->large_tracked = LARGE_UNTRACKED;
}

/* Is seg's live block on a first-class heap's list (which holds its address)? */
static inline bool heaps_large_tracked(const struct segment *seg)
{
	return seg->large_tracked != LARGE_UNTRACKED;
}

/*
 * large_free, after the block was marked free: take seg off its heap's list. False when a
 * visit of the heap runs: the visitor finishes the free when it is done (heaps.c).
 */
static inline bool heaps_large_untrack(struct segment *seg)
{
	return !seg->large_tracked || sefer__heaps_large_remove(seg);
}

/*
 * Every heap's, first-class or not (the flag may change meanwhile: the lock is cheap). The
 * fork handlers (heap.c) take them in a loop, one per heap, which sparse's lock count, made
 * per path, cannot follow: each large_lock is shown to sparse as dropped right after it is
 * taken and taken again right before it is dropped, so sparse counts none of them (it does
 * count the handlers' other locks).
 */
static inline void heaps_fork_prepare(struct heap *h)
{
	spin_lock_nested(&h->fc.large_lock);
	__release(&h->fc.large_lock);
}

static inline void heaps_fork_parent(struct heap *h)
{
	__acquire(&h->fc.large_lock);
	spin_unlock(&h->fc.large_lock);
}

static inline void heaps_fork_child(struct heap *h)
{
	__acquire(&h->fc.large_lock);
	spin_reset(&h->fc.large_lock);
}
#else
static inline void heaps_struct_init(struct heap *heap)
{
	(void)heap;
}

static inline void heaps_reset(struct heap *heap)
{
	(void)heap;
}

static inline void sefer__heaps_orphan_children(struct heap *home)
{
	(void)home;
}

static inline bool heap_reclaims(const struct heap *heap)
{
	(void)heap;
	return true;
}

static inline bool heap_has_children(const struct heap *heap)
{
	(void)heap;
	return false;
}

static inline bool heap_is_mine(const struct heap *owner, const struct heap *me)
{
	(void)owner, (void)me;
	return false;
}

static inline bool heap_is_default(const struct heap *owner)
{
	return owner_is_heap(owner);
}

static inline void heaps_large_track(struct heap *heap, struct segment *seg)
{
	(void)heap, (void)seg;
}

static inline bool sefer__heaps_large_detach(struct segment *seg)
{
	(void)seg;
	return false;
}

static inline void sefer__heaps_large_add(struct heap *heap, struct segment *seg)
{
	(void)heap, (void)seg;
}

static inline bool heaps_large_tracked(const struct segment *seg)
{
	(void)seg;
	return false;
}

static inline bool heaps_large_untrack(struct segment *seg)
{
	(void)seg;
	return true;
}

static inline void heaps_fork_prepare(struct heap *h)
{
	(void)h;
}

static inline void heaps_fork_parent(struct heap *h)
{
	(void)h;
}

static inline void heaps_fork_child(struct heap *h)
{
	(void)h;
}
#endif

#endif
