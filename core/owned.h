/* SPDX-License-Identifier: MIT */
/*
 * The owned-segment cache, one per thread (initial-exec TLS, so the free fast path reads it
 * without loading the heap pointer first): sefer_owned[owned_slot(p)] is OWNED_NONE
 * (core/owner.h) or a small segment that the thread's default heap owns (owner == heap), or one
 * of its first-class heaps (core/heaps.c). The free fast path compares segment_of(p) with that
 * one entry: a match proves p's segment is mapped and the caller's, which the segment table and
 * the owner field would otherwise prove in two dependent loads and ten instructions. Filled by
 * free_slow() when it finds the caller owns the segment; an entry is dropped (owned_forget)
 * before one of the thread's heaps lets the segment go (segment_free, exit), by that thread:
 * only a heap's owner thread lets its segments go while it runs (an exited or orphaned heap's
 * thread has no cache left). The compare keeps the low four bits of the pointer
 * (sefer_free_inline).
 */
#ifndef SEFER_CORE_OWNED_H
#define SEFER_CORE_OWNED_H

#include "core/segment.h"

#define OWNED_SLOTS 8

SEFER_INTERNAL_EXTERN __thread struct segment *sefer__owned[OWNED_SLOTS]
	__attribute__((tls_model("initial-exec")));

static always_inline size_t owned_slot(const void *p)
{
	return ((uintptr_t)p >> SEGMENT_SHIFT) & (OWNED_SLOTS - 1);
}

/* The calling thread's cache entry for p's slot (the fast path compares it with p's key). */
static always_inline uintptr_t owned_entry(const void *p)
{
	return (uintptr_t)sefer__owned[owned_slot(p)];
}

/*
 * What owned_entry(p) holds when p's segment is cached: p's segment with p's low four bits
 * kept, the segment itself exactly when p is on the 16-byte grid, as every block is.
 */
static always_inline uintptr_t owned_key(const void *p)
{
	return (uintptr_t)p & (~SEGMENT_MASK | (GRANULE - 1));
}

/* seg, owned by the calling thread's default heap or one of its first-class heaps */
static inline void owned_set(struct segment *seg)
{
	sefer__owned[owned_slot(seg)] = seg;
}

/* The calling thread lets seg go (or keeps it, but frees may not take the fast path). */
static inline void owned_forget(struct segment *seg)
{
	if (sefer__owned[owned_slot(seg)] == seg)
		sefer__owned[owned_slot(seg)] = OWNED_NONE;
}

static inline void owned_forget_all(void)
{
	struct segment *none = opaque_value(OWNED_NONE);

	for (size_t i = 0; i < OWNED_SLOTS; i++)
		sefer__owned[i] = none;
}

#endif
