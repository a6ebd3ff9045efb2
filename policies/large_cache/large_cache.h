/* SPDX-License-Identifier: MIT */
/*
 * The large_cache policy: freed large segments kept (pages committed) for reuse.
 *
 * Per heap, a FIFO list of cached large segments (oldest first) and their mapped bytes. Only
 * the heap's own thread touches it (or whoever holds the heap while it is parked: the list
 * stays with a parked heap for its next owner, heap_park). A segment freed by another thread
 * is handed back to the heap that allocated it through a lock-free inbox, so a pipeline (one
 * thread allocates, another frees) hits the cache too. See policies/large_cache/large_cache.c
 * for the rules and Documentation/policies/large_cache.rst for the numbers.
 */
#ifndef SEFER_POLICY_LARGE_CACHE_H
#define SEFER_POLICY_LARGE_CACHE_H

#include <stdatomic.h>

#include "core/options.h"

struct large_cache_heap {
	struct segment *head, *tail; /* cached segments, oldest first (linked by next/prev) */
	size_t bytes;		     /* mapped bytes of the cached segments */
	size_t unpublished;	     /* tail's bytes, not yet in cached_total (or 0): see .c */
	size_t count;
	uint64_t decay_ms; /* start of the current decay step; 0 while bytes <= headroom;
			    * DECAY_PENDING: started by the next call (see .c) */
	uint64_t hits, misses, evictions, handoffs;
	uint64_t expired; /* released after a purge delay unused (expire), not in evictions */
	uint64_t expired_ms;  /* the last aging pass that released some (0: none since a miss) */
	size_t expired_size;  /* the largest segment it released */
	uint64_t resizes; /* requests served by resizing a cached segment (segment_resize_large) */
	uint64_t regrows; /* realloc growths served with room to grow further (large_regrow) */
};

/*
 * The handoff inbox: large segments this heap allocated and other threads freed, pushed
 * lock-free by the freeing thread, taken by the owner (policy_heap_remote: never reset).
 */
struct large_cache_remote {
	_Atomic(struct segment *) inbox; /* LIFO through seg->next; LC_INBOX_CLOSED: refused */
	atomic_size_t inbox_bytes;	 /* mapped bytes in the inbox, bounded by the budget */
};

/* SEFER_LARGE_CACHE_BUDGET (default unbounded) and SEFER_LARGE_CACHE_HEADROOM (16 MiB). */
struct large_cache_options {
	uint64_t budget;
	uint64_t headroom;
};

SEFER_INTERNAL_EXTERN struct large_cache_options sefer__large_cache_opt;
/* Their table (core/options.h), and its length without the terminator. */
#define LARGE_CACHE_OPTIONS 2
SEFER_INTERNAL_EXTERN struct sefer_option sefer__large_cache_options[LARGE_CACHE_OPTIONS + 1];
/* Test hook: the clock the decay reads (NULL: sefer_os.clock_ms). */
SEFER_INTERNAL_EXTERN uint64_t (*sefer__large_cache_clock)(void);
/* Test hook: the cached bytes published to all heaps (cached_total, see large_cache.c). */
SEFER_INTERNAL size_t sefer__large_cache_published(void);

SEFER_INTERNAL void sefer__large_cache_heap_exit(struct heap *h);
SEFER_INTERNAL bool sefer__large_cache_heap_park(struct heap *h);
SEFER_INTERNAL void sefer__large_cache_collect(struct heap *h, bool force);
SEFER_INTERNAL struct segment *sefer__large_cache_alloc(struct heap *h, size_t size, size_t align,
							size_t *dirty);
SEFER_INTERNAL __must_check bool sefer__large_cache_free(struct heap *h, struct segment *s);
SEFER_INTERNAL struct segment *sefer__large_cache_regrow(struct heap *h, size_t size);
SEFER_INTERNAL void sefer__large_cache_print_stats(void);

/*
 * Included (through include/generated/policies.h) only when CONFIG_POLICY_LARGE_CACHE=y.
 * Slow-path slots only; the contract of each is at struct sefer_policy_ops (core/policy.h).
 */
static const struct sefer_policy_ops policy_large_cache = {
	.name = "large_cache",
	.heap_exit = sefer__large_cache_heap_exit,
	.heap_park = sefer__large_cache_heap_park,
	.collect = sefer__large_cache_collect,
	.large_alloc = sefer__large_cache_alloc,
	.large_free = sefer__large_cache_free,
	.large_regrow = sefer__large_cache_regrow,
	.print_stats = sefer__large_cache_print_stats,
	.options = sefer__large_cache_options,
};

#endif
