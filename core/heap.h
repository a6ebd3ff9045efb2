/* SPDX-License-Identifier: MIT */
/*
 * Heaps: one per thread, found through an initial-exec TLS pointer.
 *
 * Before a thread's first allocation its TLS pointer is &heap_empty, a static heap, all zero.
 * The thread's TLS copy of the direct table (sefer__direct below) points at a page with no free
 * block, so malloc's fast path up to DIRECT_TLS_MAX needs no initialisation check: the first call
 * falls into the slow path, which creates the heap. heap_empty's own table holds NULL (it lies
 * in .bss: core/heap_empty.c): the callers that read a heap's table (sizes up to DIRECT_MAX)
 * take the thread's heap from heap_get_made(), which makes it first, or test the slot (malloc's
 * sizes above DIRECT_TLS_MAX). A heap passed to sefer_heap_malloc() is a made one.
 *
 * A heap owns small segments (owner == heap) and their pages. All its fields are the owning
 * thread's alone, except `delayed` (other threads push full pages that received a cross-
 * thread free). Heap structs are never unmapped: at thread exit a heap is abandoned (its
 * segments handed to the abandoned list) and the struct goes to a pool for the next thread.
 *
 * The direct table: direct[s] is the first page of the bin that serves sizes (16s-15 .. 16s),
 * or &page_empty while that bin's queue is empty; the queue functions that change a queue's
 * first page update it (page.c, queue_first_changed: heap_direct_update of the page's owner),
 * so nothing else needs to. sefer_check_heap() checks it.
 *
 * First-class heaps (CONFIG_HEAPS, core/heaps.c) are the same struct, made by sefer_heap_new()
 * for the calling thread; struct heap_fc below holds what they add.
 *
 * Lock order: enum lock_rank (core/lock.h).
 */
#ifndef SEFER_CORE_HEAP_H
#define SEFER_CORE_HEAP_H

#include <errno.h>

#include "core/block.h"
#include "core/lock.h"
#include "core/owned.h"
#include "core/policy.h"
#include "core/purge.h"
#include "core/remote.h"
#include "core/segment.h"

struct page_queue {
	struct page *first, *last;
};

struct heap_stats {
	uint64_t mallocs, frees, xthread_frees, large_allocs;
	/* In use, sampled (core/inuse.c): the highest figures seen, and the running sums of
	 * the sample being taken (its generation in the top 16 bits). Any thread writes them. */
	_Atomic(uint64_t) peak_bytes, peak_blocks, sample_bytes, sample_blocks;
};

/* A heap struct taken for a new thread or heap: its in-use peaks start again. */
static inline void heap_peaks_reset(struct heap_stats *s)
{
	atomic_store_explicit(&s->peak_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&s->peak_blocks, 0, memory_order_relaxed);
}

/*
 * What a first-class heap (sefer_heap_new, core/heaps.c) adds to a heap. A thread's default
 * heap has first_class false and home NULL. home is the default heap of the thread that owns
 * a first-class heap, NULL once that thread exited (orphaned), or a marker while it is visited
 * or destroyed: "home == the caller's default heap" is the ownership test, one compare.
 */
struct heap_fc {
	_Atomic(struct heap *) home;
	bool first_class;
	struct heap *children;			/* default heap: its thread's first-class heaps */
	struct heap *next_child, *prev_child;	/* first-class heap: link in home->children */
	struct spinlock large_lock;		/* large, large_visiting, seg->large_tracked */
	struct segment *large;			/* live large blocks' segments (next/prev links) */
	bool large_visiting;			/* frees of large blocks are left to the visitor */
};

struct heap {
	struct page *direct[DIRECT_SLOTS]; /* size/16 -> first page of its bin (fast path) */
	struct page_queue bins[NBINS];	   /* pages that may have free blocks */
	struct page_queue full;		   /* pages with none, waiting for frees */
	_Atomic(struct page *) delayed cacheline_aligned; /* full pages that got xthread frees */
	bool parked; /* on the parked list (core/heap.c): any thread reads it, relaxed */
	/* taken over from an exited thread, or by a switch (core/heap.c, "parked heaps"), not
	 * made for its thread: only such a heap switches (heap_switch). Its owner's. */
	bool taken_over;
	/* parked with policy state kept for its next owner (heap_park): the ms from which the
	 * purge releases it (core/purge.c, parked_purge_due); 0 if nothing is kept, or if only the
	 * heap's dismantling releases it (no decommit, or a delay of never). Written by whoever
	 * holds the heap (its exiting thread, a pass, its next owner). */
	uint64_t policy_kept_until;
	/* parked with a first page its exit did not walk (heap_release_empty): the ms from which
	 * the purge walks it whole (parked_purge_due); 0 if none. Written as policy_kept_until. */
	uint64_t first_kept_until;
	struct segment_set segments; /* its small segments (segment.c, span.c, purge.c) */
	struct heap_stats stats;
	struct policy_heap policy; /* per-heap state of the enabled policies */
	/* a policy keeps memory of this heap that ages on the purge clock, or another thread
	 * handed it some (heap_keep_aging): the owner's heartbeat runs the policies' collect(h,
	 * false) while it is set. Beside what those threads write (the policies' remote state);
	 * never reset (a stale one costs one collect) */
	atomic_bool policy_aging;
	struct policy_heap_remote policy_remote; /* what other threads reach: never reset */
#if IS_ENABLED(CONFIG_HARDENED)
	uint64_t shuffle; /* free-list shuffle generator state (page.c), owner-only */
#endif
#if IS_ENABLED(CONFIG_HEAPS)
	/* first-class heap state (core/heaps.c); its own line: every cross-thread free reads
	 * fc.home (heap_is_mine), which must not share a line the owner writes on its paths */
	struct heap_fc fc cacheline_aligned;
#endif
	struct heap *next_all;	   /* every heap ever made (stats) */
	struct heap *next_free;	   /* pool of heaps of exited threads, or the parked ones */
	unsigned parked_pass;	   /* the last pass over parked heaps that visited it */
	/*
	 * This thread's batches of cross-thread frees (remote.h): last, 4 KiB of slots, so a
	 * thread that never frees into another heap leaves the struct's second OS page
	 * untouched (remote_frees_reset writes only the slots that were set).
	 */
	struct remote_frees remote;
} cacheline_aligned;

SEFER_INTERNAL_EXTERN struct heap sefer__heap_empty;
SEFER_INTERNAL_EXTERN struct page sefer__page_empty;
SEFER_INTERNAL_EXTERN __thread struct heap *sefer__heap __attribute__((tls_model("initial-exec")));
/*
 * The calling thread's copy of its default heap's direct table (initial-exec TLS, as the
 * owned-segment cache in owned.h): malloc's fast path reads the page straight from it,
 * without loading the heap pointer first. A dependent load fewer on the way to the block:
 * bignum's malloc took 1.4x snmalloc's samples with the table behind the heap pointer
 * (Documentation/benchmarks.rst). It holds the table's first DIRECT_TLS_SLOTS slots (bins.h)
 * and always equals them: heap_direct_set() writes both while the heap is the caller's default,
 * and heap_attach() copies them when sefer__heap changes; only the heap's owner thread writes
 * either then.
 */
SEFER_INTERNAL_EXTERN __thread struct page *sefer__direct[DIRECT_TLS_SLOTS]
	__attribute__((tls_model("initial-exec")));

static always_inline struct heap *heap_get(void)
{
	return sefer__heap;
}

#if IS_ENABLED(CONFIG_STATS)
#define heap_stat_inc(h, field) ((h)->stats.field++)
#else
#define heap_stat_inc(h, field) ((void)(h))
#endif
/*
 * mallocs and frees are counted on the fast paths only with CONFIG_STATS_CALLS: two
 * read-modify-writes of memory per malloc/free pair cost 11% of a 16-byte alloc/free loop.
 */
#if IS_ENABLED(CONFIG_STATS_CALLS)
#define heap_stat_call(h, field) ((h)->stats.field++)
#else
#define heap_stat_call(h, field) ((void)(h))
#endif

/* heap.c */
SEFER_INTERNAL __must_check struct heap *sefer__heap_init_thread_for(struct heap *prefer);

/* The calling thread's heap, made now: a parked one when there is one. */
static inline struct heap *sefer__heap_init_thread(void)
{
	return sefer__heap_init_thread_for(NULL);
}

/*
 * The calling thread's default heap, made now if it has none yet (heap_empty, whose direct
 * table is not to be read); NULL with errno ENOMEM when it cannot be made.
 */
static always_inline struct heap *heap_get_made(void)
{
	struct heap *heap = heap_get();

	if (unlikely(heap == &sefer__heap_empty) && !(heap = sefer__heap_init_thread()))
		errno = ENOMEM;
	return heap;
}

SEFER_INTERNAL __must_check struct heap *sefer__heap_struct_get(void);
SEFER_INTERNAL void sefer__heap_struct_put(struct heap *heap);
SEFER_INTERNAL void sefer__heap_setup(struct heap *heap);
SEFER_INTERNAL void sefer__heap_reset(struct heap *heap);
SEFER_INTERNAL void sefer__heap_abandon(struct heap *heap);
SEFER_INTERNAL void sefer__heap_adopt_segment(struct heap *heap, struct segment *seg);
SEFER_INTERNAL void sefer__heap_direct_update(struct heap *heap, unsigned bin);
SEFER_INTERNAL void sefer__heap_drain_delayed(struct heap *heap);
SEFER_INTERNAL void sefer__heap_collect(struct heap *heap, bool force);
SEFER_INTERNAL bool sefer__heap_release_empty(struct heap *heap, bool collect_all,
					     uint32_t first_walk);
/* The links of a first page's free list a thread's exit walks to find it empty (heap.c). */
#define RELEASE_FIRST_WALK 16
/* Parked heaps (heap.c): a pass over them, their dismantling (core/purge.c's passes). */
SEFER_INTERNAL uint64_t sefer__parked_each(uint64_t (*fn)(struct heap *heap, void *arg),
					   void *arg);
SEFER_INTERNAL void sefer__parked_dismantle(void);
SEFER_INTERNAL void sefer__heap_visit_all(void (*fn)(struct heap *h, void *arg), void *arg);
/* Fork handlers: prepare returns holding every spinlock but the registry's, taken in the lock
 * order (enum lock_rank, core/lock.h; abandoned_lock and spare_lock are core/unowned.c's),
 * parent and child drop them. */
SEFER_INTERNAL void sefer__heap_fork_prepare(void) __acquires(parked_pass_lock)
	__acquires(pool_lock) __acquires(abandoned_lock) __acquires(spare_lock);
SEFER_INTERNAL void sefer__heap_fork_parent(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock) __releases(parked_pass_lock);
SEFER_INTERNAL void sefer__heap_fork_child(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock) __releases(parked_pass_lock);

/* page.c */
SEFER_INTERNAL void sefer__queue_push_front(struct page_queue *q, struct page *pg);
SEFER_INTERNAL void sefer__queue_push_back(struct page_queue *q, struct page *pg);
SEFER_INTERNAL void sefer__queue_remove(struct page_queue *q, struct page *pg);
SEFER_INTERNAL __must_check struct page *sefer__page_find(struct heap *heap, unsigned bin);
/* page_find's answer when the calling thread switched to a parked heap instead (heap_switch) */
#define PAGE_SWITCHED ((struct page *)1)
SEFER_INTERNAL struct heap *sefer__heap_switch(struct heap *heap, unsigned bin);
SEFER_INTERNAL_EXTERN unsigned sefer__nparked; /* parked heaps (a hint, read relaxed) */
SEFER_INTERNAL bool sefer__page_collect_xthread(struct page *pg, uintptr_t new_tag);
SEFER_INTERNAL void sefer__page_retire(struct heap *heap, struct page *pg);
/*
 * A bin keeps this many bytes of emptied spans behind its first page (page_retire), at the back
 * of its queue, counted over at most KEPT_SCAN_PAGES of them (more keep nothing more), for a
 * purge delay after the first of them was kept (segment_set.kept_until).
 */
#define KEPT_EMPTY_BYTES ((size_t)1 << 20)
#define KEPT_SCAN_PAGES 32
SEFER_INTERNAL void sefer__page_emptied(struct page *pg) noinline;
SEFER_INTERNAL void sefer__heap_heartbeat(struct heap *heap);

/*
 * The owner's slow paths that take no span (a page emptied, malloc's slow path): every
 * PURGE_BEAT-th of them while a deadline is pending, what is due is given back (purge.h).
 */
static inline void heap_heartbeat(struct heap *heap)
{
	if (purge_heartbeat_due(&heap->segments,
				atomic_load_explicit(&heap->policy_aging, memory_order_relaxed)))
		sefer__heap_heartbeat(heap);
}

/*
 * A policy keeps memory of heap that collect(heap, false) gives back once it aged (policy.h):
 * the owner's heartbeat runs that collect (and clears this) while it does, so the policy calls
 * it whenever it starts keeping some and at each collect that leaves some kept; another thread
 * calls it after it handed heap's policy some (a segment pushed on its inbox), and since the
 * owner clears it before its collect takes the inbox, no push is left unasked. Any thread: a
 * relaxed store, no clock read.
 */
static inline void heap_keep_aging(struct heap *heap)
{
	atomic_store_explicit(&heap->policy_aging, true, memory_order_relaxed);
}
SEFER_INTERNAL bool sefer__page_queue_usable(struct heap *heap, unsigned bin);
SEFER_INTERNAL bool sefer__page_queue_freed(struct heap *heap, unsigned bin);
SEFER_INTERNAL void sefer__page_unfull(struct heap *heap, struct page *pg);
SEFER_INTERNAL void sefer__page_delayed_back(struct heap *heap, struct page *pg);

/* Hot-path bodies of the policies, which need struct heap (core/policy_hot.h). */
#include "core/policy_hot.h"

#endif
