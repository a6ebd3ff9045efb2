/* SPDX-License-Identifier: MIT */
/*
 * Who owns what: the values a segment's owner, a first-class heap's home and an owned-segment
 * cache entry take that are not a heap or a segment. Every one of them is defined here, and
 * the tests that tell a real heap from them name each value: none depends on their numeric
 * order.
 *
 * seg->owner (core/segment.h) is one of
 *   a heap          the heap of the owning thread (a default heap or a first-class one);
 *   NULL            abandoned: its thread exited (core/unowned.c), any heap may adopt it;
 *   LARGE_OWNER     a large segment: one block, freed by whoever frees it;
 *   HELD_OWNER      held by the allocator itself, by no heap: a spare segment, or an abandoned
 *                   one being purged. Nobody adopts it and every free into it is refused or
 *                   pushed like a cross-thread free.
 * heap->fc.home (core/heap.h, first-class heaps) is the owning thread's default heap, NULL once
 * that thread exited, or HOME_VISITING / HOME_DYING while the heap is visited or destroyed.
 * sefer_owned[] (core/heap.h) holds a segment or OWNED_NONE.
 */
#ifndef SEFER_CORE_OWNER_H
#define SEFER_CORE_OWNER_H

#include "core/config.h"

struct heap;
struct segment;

#define LARGE_OWNER ((struct heap *)1)
#define HELD_OWNER ((struct heap *)2)
#define HOME_VISITING ((struct heap *)3)
#define HOME_DYING ((struct heap *)4)

/* Is owner (a small or large segment's owner field) a heap, not a sentinel nor NULL? */
static inline bool owner_is_heap(const struct heap *owner)
{
	return owner && owner != LARGE_OWNER && owner != HELD_OWNER;
}

/*
 * An empty owned-segment cache entry. The free fast path compares an entry with the pointer
 * masked to its segment, low four bits kept (core/alloc.h), so OWNED_NONE has a bit the masked
 * pointer never has (bit 4): it matches no pointer, NULL and 1 included.
 */
#define OWNED_NONE ((struct segment *)GRANULE)

#endif
