/* SPDX-License-Identifier: MIT */
/*
 * Process-wide counters. Per-heap counters (mallocs, frees, ...) are plain owner-only
 * increments in struct heap; the ones here change on slow paths only and are atomics.
 */
#ifndef SEFER_CORE_STATS_H
#define SEFER_CORE_STATS_H

#include <stdatomic.h>

#include "core/config.h"

struct global_stats {
	atomic_llong segments, segments_peak, segments_mapped;
	atomic_llong committed, committed_peak;
	atomic_llong purged;
	atomic_llong purge_backoffs; /* a purge delay raised: purged memory needed again */
	atomic_llong handoffs_kept;  /* last workers' exits that left their memory to the next */
	atomic_llong abandoned, reclaimed;
	atomic_llong parked, adopted; /* exited threads' heaps parked now, taken over whole */
	atomic_llong switches; /* default heaps swapped for a parked one (heap_switch) */
	atomic_llong lock_yields; /* spinlock waiters that gave their CPU away (core/lock.h) */
	atomic_llong threads;
	atomic_llong heaps; /* first-class heaps alive */
	/* bytes of the small blocks carved, free or not: what small blocks in use fit in
	 * (page_extend adds; a span's free and a segment dropped with its spans take off) */
	atomic_llong carved_bytes;
	/* In use (core/inuse.c): the highest totals seen at a sample, and the bound then */
	atomic_llong inuse_peak_bytes, inuse_peak_blocks, sampled_bound;
};

SEFER_INTERNAL_EXTERN struct global_stats sefer__gstats;

static inline void stat_max(atomic_llong *peak, long long v)
{
	long long old = atomic_load_explicit(peak, memory_order_relaxed);

	while (v > old && !atomic_compare_exchange_weak_explicit(
				  peak, &old, v, memory_order_relaxed, memory_order_relaxed))
		;
}

static inline void inuse_peak_raise(_Atomic(uint64_t) *peak, uint64_t v)
{
	uint64_t old = atomic_load_explicit(peak, memory_order_relaxed);

	while (v > old && !atomic_compare_exchange_weak_explicit(
				  peak, &old, v, memory_order_relaxed, memory_order_relaxed))
		;
}

static inline void stat_add(atomic_llong *c, atomic_llong *peak, long long delta)
{
	if (!IS_ENABLED(CONFIG_STATS))
		return;
	long long v = atomic_fetch_add_explicit(c, delta, memory_order_relaxed) + delta;

	if (peak)
		stat_max(peak, v);
}

SEFER_INTERNAL void sefer__stats_at_exit(void);

struct sefer_stats;
struct class_use;
/* Every figure of struct sefer_stats now, one sample; classes: NULL or NBINS entries. */
SEFER_INTERNAL void sefer__stats_collect(struct sefer_stats *st, struct class_use *classes);
/*
 * The contract of the stats calls that take the caller's struct size (sefer_stats_get,
 * sefer_heap_stats, sefer_pstats_get): the first size bytes of dst from a full struct of
 * full_size, zeros past it; returns the bytes filled with figures. Header-only: persist's
 * tool links without the core.
 */
static inline size_t stats_copy_out(void *dst, size_t size, const void *src, size_t full_size)
{
	size_t n = size < full_size ? size : full_size;

	__builtin_memcpy(dst, src, n);
	if (size > n)
		__builtin_memset((char *)dst + n, 0, size - n);
	return n;
}

/*
 * Bytes and blocks in use, computed by walking the segment registry (core/inuse.c): no
 * counter on the allocation paths. A block counts from its malloc until its free is taken
 * back by the page's owner (a cross-thread free waits in the page until then).
 */
struct heap;

struct class_use {
	uint64_t spans, blocks, capacity; /* spans of the class, blocks in use, blocks they hold */
};

struct inuse {
	struct heap *only;		      /* NULL: every heap; else this heap's blocks */
	struct class_use *classes;	      /* NULL, or NBINS entries to add to */
	uint64_t bytes, blocks;		      /* in use, small and large */
	uint64_t large_blocks, large_bytes;   /* large blocks in use */
	uint64_t small_segments, small_bytes; /* small segments, their bytes mapped */
	uint64_t committed;		      /* only: bytes of its segments backed now */
	uint64_t gen;			      /* per-heap sample generation (0: none) */
};

/* Fill *u (u->only and u->classes set by the caller, the rest zeroed here) from one walk. */
SEFER_INTERNAL void sefer__inuse_walk(struct inuse *u);
/* Process totals now; raise the process and per-heap peaks with them. */
SEFER_INTERNAL void sefer__inuse_sample(struct inuse *u);
/* A carve or a large block grew the bound in use lies under: sample if a peak may be new. */
SEFER_INTERNAL void sefer__inuse_grown(void);

#endif
