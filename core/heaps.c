// SPDX-License-Identifier: MIT
/*
 * First-class heaps (CONFIG_HEAPS): sefer_heap_new() and friends, Documentation/heaps.rst.
 *
 * A first-class heap is a struct heap like a thread's default heap, with fc.first_class set,
 * owned by the thread that made it. Its small segments name it as their owner, so a free from
 * any thread takes the existing paths: another thread's free is a cross-thread push; the owner
 * thread's first free into a segment misses its owned-segment cache (heap.h), and
 * free_slow() sees that the segment's owner is one of its own heaps (heap_is_mine:
 * owner->fc.home == the caller's default heap), frees locally into that heap, no atomic, and
 * caches the segment in the thread's owned-segment cache: the next frees into it take
 * malloc's free fast path, which retires an emptied page into the segment's owner
 * (page_emptied). Not with a policy that keeps freed small blocks (fastbin): it would keep
 * them in the default heap's magazine.
 *
 * Invariants:
 *  - fc.home is the owner thread's default heap while the heap is owned, HOME_VISITING during
 *    sefer_heap_visit, HOME_DYING during destroy, NULL once orphaned (its owner exited or
 *    called sefer_thread_done) and in a heap that is not first-class. Only the owner changes
 *    it from its default heap; an orphan becomes HOME_DYING by one CAS from NULL, so exactly
 *    one thread destroys it.
 *  - every API call but destroy requires home == the caller's default heap (one compare, in
 *    sefer_heap_malloc too); anything else is reported as a misuse (report_error) and does
 *    nothing. During a visit home is not the owner's, so the owner's own frees of the heap's
 *    small blocks are pushed like cross-thread frees and no page changes under the walk.
 *  - a first-class heap never adopts abandoned segments (page_find: heap_reclaims): destroy
 *    releases what it owns, which must be only what was allocated from it.
 *  - fc.large lists the segments of its live large blocks (linked by seg->next/prev, unused
 *    while a large block is live); seg->large_tracked says whether a segment is on it. The
 *    owner adds at allocation; any thread's free removes, under fc.large_lock, after winning
 *    the large_live exchange (free.c). While a visit walks the list (large_visiting), a free
 *    leaves its segment on the list marked LARGE_FREE_DEFERRED and the visitor releases it
 *    at the end, so the walk reads no segment that was given back. Destroy takes the list
 *    under the lock; a block whose large_live exchange it loses belongs to the free that won.
 *  - the default heap's fc.children lists the thread's first-class heaps (owner only).
 *  - the thread's owned-segment cache (heap.h) may hold segments of its first-class heaps:
 *    owned_forget() drops the entry whenever a heap lets a segment go (destroy included, by
 *    the owner thread or, for an orphan, by a thread whose cache cannot hold it), and a visit
 *    empties the cache before it walks.
 *
 * Lock order: enum lock_rank (core/lock.h); no other lock is taken while a large_lock is held,
 * and fn runs with none held.
 */
#include <errno.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/heaps.h"
#include "core/init.h"
#include "core/purge.h"
#include "core/stats.h"
#include "core/unowned.h"
#include "sefer.h"
#include "sefer/os.h"

static inline struct heap *heap_of(struct sefer_heap *h)
{
	return (struct heap *)h;
}

/* Is heap the calling thread's own, and free to use (not visited, not being destroyed)? */
static always_inline bool heap_owned_here(struct heap *heap)
{
	return likely(atomic_load_explicit(&heap->fc.home, memory_order_relaxed) == heap_get());
}

static __cold noinline void *heap_misuse(struct heap *heap, const char *call)
{
	struct heap *home = atomic_load_explicit(&heap->fc.home, memory_order_relaxed);
	const char *why = !heap->fc.first_class ? "not a live heap (destroyed, or never made)"
			  : home == HOME_VISITING ? "inside sefer_heap_visit of the same heap"
			  : home == HOME_DYING	  ? "the heap is being destroyed"
			  : home == HOME_RELEASED
				  ? "the heap was released: sefer_heap_adopt it first"
			  : !home ? "the heap's thread exited: only sefer_heap_destroy is allowed"
				  : "from a thread that does not own the heap";
	char reason[160];

	sefer__format(reason, sizeof(reason), "%s: %s", call, why);
	sefer__report_error("heap misuse", heap, reason);
	errno = EPERM;
	return NULL;
}

/* me's list of its thread's first-class heaps (owner only) */
static void children_link(struct heap *me, struct heap *heap)
{
	heap->fc.prev_child = NULL;
	heap->fc.next_child = me->fc.children;
	if (me->fc.children)
		me->fc.children->fc.prev_child = heap;
	me->fc.children = heap;
}

static void children_unlink(struct heap *me, struct heap *heap)
{
	if (heap->fc.prev_child)
		heap->fc.prev_child->fc.next_child = heap->fc.next_child;
	else
		me->fc.children = heap->fc.next_child;
	if (heap->fc.next_child)
		heap->fc.next_child->fc.prev_child = heap->fc.prev_child;
	heap->fc.next_child = heap->fc.prev_child = NULL;
}

SEFER_API struct sefer_heap *sefer_heap_new(void)
{
	struct heap *me = heap_get(), *heap;

	if (me == &sefer__heap_empty && !(me = sefer__heap_init_thread())) {
		errno = ENOMEM;
		return NULL;
	}
	heap = sefer__heap_struct_get();
	if (!heap) {
		errno = ENOMEM;
		return NULL;
	}
	sefer__heap_setup(heap);
	__atomic_store_n(&heap->fc.first_class, true, __ATOMIC_RELAXED); /* heap_is_default */
	children_link(me, heap);
	stat_add(&sefer__gstats.heaps, NULL, 1);
	atomic_store_explicit(&heap->fc.home, me, memory_order_relaxed);
	return (struct sefer_heap *)heap;
}

SEFER_API void *sefer_heap_malloc(struct sefer_heap *h, size_t size)
{
	struct heap *heap = heap_of(h);

	if (!heap_owned_here(heap))
		return heap_misuse(heap, "sefer_heap_malloc");
	return heap_malloc_inline(heap, size);
}

SEFER_API void *sefer_heap_calloc(struct sefer_heap *h, size_t n, size_t size)
{
	struct heap *heap = heap_of(h);

	if (!heap_owned_here(heap))
		return heap_misuse(heap, "sefer_heap_calloc");
	return sefer__heap_calloc(heap, n, size);
}

SEFER_API void *sefer_heap_realloc(struct sefer_heap *h, void *p, size_t size)
{
	struct heap *heap = heap_of(h);

	if (!heap_owned_here(heap))
		return heap_misuse(heap, "sefer_heap_realloc");
	return sefer__heap_realloc(heap, p, size);
}

SEFER_API void *sefer_heap_aligned_alloc(struct sefer_heap *h, size_t align, size_t size)
{
	struct heap *heap = heap_of(h);

	if (!heap_owned_here(heap))
		return heap_misuse(heap, "sefer_heap_aligned_alloc");
	return sefer__heap_aligned(heap, align, size);
}

SEFER_API void sefer_heap_collect(struct sefer_heap *h, bool force)
{
	struct heap *heap = heap_of(h);

	if (!heap_owned_here(heap)) {
		heap_misuse(heap, "sefer_heap_collect");
		return;
	}
	sefer__heap_collect(heap, force);
}

/* ---- moving a heap between threads, its figures ---- */

/*
 * The owner lets the heap go: off its thread's list (its exit no longer orphans it), and out
 * of the thread's owned-segment cache, whose fast-path frees would otherwise keep treating
 * the heap's segments as the thread's after another thread adopted it. From here the old
 * owner's frees of its blocks are cross-thread frees, like everyone's.
 */
SEFER_API bool sefer_heap_release(struct sefer_heap *h)
{
	struct heap *heap = heap_of(h), *me = heap_get();

	if (!heap_owned_here(heap)) {
		heap_misuse(heap, "sefer_heap_release");
		return false;
	}
	children_unlink(me, heap);
	owned_forget_all();
	/* release: pairs with the acquire CAS of the adopting (or destroying) thread */
	atomic_store_explicit(&heap->fc.home, HOME_RELEASED, memory_order_release);
	return true;
}

SEFER_API bool sefer_heap_adopt(struct sefer_heap *h)
{
	struct heap *heap = heap_of(h), *me = heap_get(), *expect = HOME_RELEASED;

	if (me == &sefer__heap_empty && !(me = sefer__heap_init_thread())) {
		errno = ENOMEM;
		return false;
	}
	if (!heap->fc.first_class ||
	    !atomic_compare_exchange_strong_explicit(&heap->fc.home, &expect, me,
						     memory_order_acquire, memory_order_relaxed)) {
		heap_misuse(heap, expect == me ? "sefer_heap_adopt (the caller owns it already)"
					       : "sefer_heap_adopt (the heap must be released first)");
		return false;
	}
	children_link(me, heap);
	return true;
}

SEFER_API size_t sefer_heap_stats(struct sefer_heap *h, struct sefer_heap_stats *st, size_t size)
{
	struct heap *heap = h ? heap_of(h) : heap_get();
	struct sefer_heap_stats full;
	struct inuse u = { .only = heap };

	if (!st)
		return 0;
	if (h && !heap->fc.first_class) {
		heap_misuse(heap, "sefer_heap_stats");
		__builtin_memset(st, 0, size);
		return 0;
	}
	sefer__inuse_walk(&u);
	__builtin_memset(&full, 0, sizeof(full));
	full.in_use_bytes = u.bytes;
	full.in_use_blocks = u.blocks;
	/* a query is a sample of this heap (sefer__inuse_sample feeds every heap's peak) */
	if (heap != &sefer__heap_empty) {
		inuse_peak_raise(&heap->stats.peak_bytes, u.bytes);
		inuse_peak_raise(&heap->stats.peak_blocks, u.blocks);
	}
	full.in_use_peak_bytes = atomic_load_explicit(&heap->stats.peak_bytes, memory_order_relaxed);
	full.in_use_peak_blocks =
		atomic_load_explicit(&heap->stats.peak_blocks, memory_order_relaxed);
	full.committed = u.committed;
	full.segments = u.small_segments;
	full.large_blocks = u.large_blocks;
	full.large_bytes = u.large_bytes;
	return stats_copy_out(st, size, &full, sizeof(full));
}

/* ---- large blocks ---- */

void sefer__heaps_large_add(struct heap *heap, struct segment *seg)
{
	spin_lock(&heap->fc.large_lock);
	segment_list_push(&heap->fc.large, seg);
	seg->large_tracked = LARGE_TRACKED;
	spin_unlock(&heap->fc.large_lock);
}

static void large_unlink(struct heap *heap, struct segment *seg)
{
	segment_list_remove(&heap->fc.large, seg);
	seg->large_tracked = LARGE_UNTRACKED;
}

bool sefer__heaps_large_remove(struct segment *seg)
{
	struct heap *heap = seg->large_heap;
	bool release = true;

	spin_lock(&heap->fc.large_lock);
	if (seg->large_tracked == LARGE_TRACKED) {
		if (heap->fc.large_visiting) {
			seg->large_tracked = LARGE_FREE_DEFERRED;
			release = false;
		} else {
			large_unlink(heap, seg);
		}
	}
	/* LARGE_UNTRACKED: destroy took the list but lost the large_live exchange to us */
	spin_unlock(&heap->fc.large_lock);
	return release;
}

/*
 * realloc is about to move seg's pages (alloc.c, large_resize): take seg off its heap's list,
 * where its address is, and heaps_large_add() puts it back at the new one. False, and seg
 * stays, unless the heap is one of the calling thread's and is not being visited: no destroy
 * or visit can then walk the list while seg is off it.
 */
bool sefer__heaps_large_detach(struct segment *seg)
{
	struct heap *heap = seg->large_heap;
	bool detached;

	if (!heap_is_mine(heap, heap_get()))
		return false;
	spin_lock(&heap->fc.large_lock);
	detached = seg->large_tracked == LARGE_TRACKED && !heap->fc.large_visiting;
	if (detached)
		large_unlink(heap, seg);
	spin_unlock(&heap->fc.large_lock);
	return detached;
}

/* Destroy: every live large block goes back to the OS (no cache keeps a dying heap's). */
static void destroy_large(struct heap *heap)
{
	struct segment *mine = NULL, *seg, *next;

	spin_lock(&heap->fc.large_lock);
	for (seg = heap->fc.large; seg; seg = next) {
		next = seg->next;
		seg->next = seg->prev = NULL;
		seg->large_tracked = LARGE_UNTRACKED;
		/* a free that won the exchange releases the segment itself */
		if (atomic_exchange_explicit(&seg->large_live, 0, memory_order_relaxed)) {
			seg->next = mine;
			mine = seg;
		}
	}
	heap->fc.large = NULL;
	spin_unlock(&heap->fc.large_lock);
	for (seg = mine; seg; seg = next) {
		next = seg->next;
		seg->next = NULL;
		annotate_block_free(large_block(seg), seg->large_size); /* core/annotate.h */
		sefer__segment_release(seg);
	}
}

/* ---- visit ---- */

typedef bool (*visit_fn)(void *block, size_t usable, void *arg);

/* Bits for the blocks of one span: capacity is at most a sefer page of 16-byte blocks. */
#define VISIT_MAP_WORDS (SPAGE_SIZE / GRANULE / 64)

#if !IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)
static void mark_free_list(const struct page *pg, const struct block *b, uint64_t *map)
{
	for (; b; b = block_next(pg, b)) {
		size_t i = (size_t)((const uint8_t *)b - page_start(pg)) / pg->block_size;

		map[i / 64] |= 1ULL << (i % 64);
	}
}
#endif

/*
 * The live blocks of one span, after taking the frees other threads pushed into it. With
 * CONFIG_DEBUG_DOUBLE_FREE the free marks say which are live; without it, a temporary bitmap
 * of the blocks on the page's free lists (the rest of the carved ones are live).
 */
static bool visit_span(struct heap *heap, struct segment *seg, struct page *pg, visit_fn fn,
		       void *arg)
{
	uint64_t map[VISIT_MAP_WORDS];
	uint32_t n, bs;

	sefer__page_collect_xthread(pg, (uintptr_t)-1);
	if ((pg->flags & PAGE_FULL) && pg->free)
		sefer__page_unfull(heap, pg);
	n = pg->reserved;
	bs = pg->block_size;
	if (n > VISIT_MAP_WORDS * 64)
		sefer__report_corruption("page holds more blocks than a page of granules", pg);
	/* A snapshot first: fn may free blocks of this page (pushed, see the top comment). */
	memset(map, 0, ((n + 63) / 64) * sizeof(map[0]));
#if IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)
	for (uint32_t i = 0; i < n; i++)
		if (!block_live((struct block *)(page_start(pg) + (size_t)i * bs)))
			map[i / 64] |= 1ULL << (i % 64);
#else
	(void)seg;
	mark_free_list(pg, pg->free, map);
#endif
	for (uint32_t i = 0; i < n; i++)
		if (!(map[i / 64] >> (i % 64) & 1) && !fn(page_start(pg) + (size_t)i * bs, bs, arg))
			return false;
	return true;
}

static bool visit_small(struct heap *heap, visit_fn fn, void *arg)
{
	struct page *pg;

	/* The list heads are read once: a visit neither adds nor frees spans or segments
	 * (page_unfull moves pages between queues only). */
	for_each_set_segment(&heap->segments, seg, false)
		for_each_span(seg, pg, idx)
			if (!visit_span(heap, seg, pg, fn, arg))
				return false;
	return true;
}

static bool visit_large(struct heap *heap, visit_fn fn, void *arg)
{
	struct segment *first, *seg, *next, *deferred = NULL;
	bool all = true;

	spin_lock(&heap->fc.large_lock);
	heap->fc.large_visiting = true;
	first = heap->fc.large;
	spin_unlock(&heap->fc.large_lock);
	/* Nothing leaves the list now and only this thread adds to it: no lock needed. */
	for (seg = first; seg; seg = seg->next) {
		if (!atomic_load_explicit(&seg->large_live, memory_order_relaxed))
			continue;
		if (!fn(large_block(seg), seg->large_size, arg)) {
			all = false;
			break;
		}
	}
	spin_lock(&heap->fc.large_lock);
	heap->fc.large_visiting = false;
	for (seg = heap->fc.large; seg; seg = next) {
		next = seg->next;
		if (seg->large_tracked == LARGE_FREE_DEFERRED) {
			large_unlink(heap, seg);
			seg->next = deferred;
			deferred = seg;
		}
	}
	spin_unlock(&heap->fc.large_lock);
	for (seg = deferred; seg; seg = next) {
		next = seg->next;
		seg->next = NULL;
		sefer__large_release(seg);
	}
	return all;
}

SEFER_API bool sefer_heap_visit(struct sefer_heap *h, visit_fn fn, void *arg)
{
	struct heap *heap = heap_of(h), *me = heap_get();
	bool all;

	if (!heap_owned_here(heap)) {
		heap_misuse(heap, "sefer_heap_visit");
		return false;
	}
	atomic_store_explicit(&heap->fc.home, HOME_VISITING, memory_order_relaxed);
	/* The owner's frees must not reach heap's pages during the walk: no fast path either
	 * (the cache refills on the next slow frees) */
	owned_forget_all();
	sefer__heap_drain_delayed(heap);
	all = visit_small(heap, fn, arg) && visit_large(heap, fn, arg);
	atomic_store_explicit(&heap->fc.home, me, memory_order_relaxed);
	return all;
}

/* ---- destroy and orphaning ---- */

static void drop_segments(struct segment *seg)
{
	struct segment *next;

	for (; seg; seg = next) {
		next = seg->next;
		sefer__segment_drop(seg);
	}
}

SEFER_API void sefer_heap_destroy(struct sefer_heap *h)
{
	struct heap *heap = heap_of(h), *me = heap_get(), *expect = me;

	if (!heap)
		return;
	if (!heap->fc.first_class) {
		heap_misuse(heap, "sefer_heap_destroy");
		return;
	}
	if (me == &sefer__heap_empty ||
	    !atomic_compare_exchange_strong_explicit(&heap->fc.home, &expect, HOME_DYING,
						     memory_order_relaxed, memory_order_relaxed)) {
		/* An orphan or a released heap: acquire pairs with the release store of NULL at
		 * its thread's exit (of HOME_RELEASED by sefer_heap_release), so every write the
		 * owner made to the heap is seen here. */
		expect = atomic_load_explicit(&heap->fc.home, memory_order_relaxed);
		if ((expect && expect != HOME_RELEASED) ||
		    !atomic_compare_exchange_strong_explicit(&heap->fc.home, &expect, HOME_DYING,
							     memory_order_acquire,
							     memory_order_relaxed)) {
			heap_misuse(heap, "sefer_heap_destroy");
			return;
		}
	} else {
		children_unlink(me, heap);
	}
	/* Policy teardown first (large_cache releases its cache and closes its inbox), then
	 * every block at once: large segments to the OS, small ones to the spares. */
	sefer__policy_heap_exit_all(heap);
	destroy_large(heap);
	atomic_store_explicit(&heap->delayed, NULL, memory_order_relaxed);
	drop_segments(heap->segments.with_space);
	drop_segments(heap->segments.full);
	drop_segments(heap->segments.cache);
	heap->segments.live = false;
	sefer__heap_reset(heap); /* first_class false, home NULL: later calls on h are misuses */
	stat_add(&sefer__gstats.heaps, NULL, -1);
	sefer__heap_struct_put(heap);
}

/*
 * home's thread exits (or calls sefer_thread_done): its first-class heaps are orphaned. Each
 * keeps its segments and live blocks (any thread may still free them, and one may destroy
 * the heap); what it holds free goes back now, since no owner will run its slow paths again.
 */
void sefer__heaps_orphan_children(struct heap *home)
{
	struct heap *heap, *next;

	for (heap = home->fc.children; heap; heap = next) {
		next = heap->fc.next_child;
		heap->fc.next_child = heap->fc.prev_child = NULL;
		sefer__heap_drain_delayed(heap);
		sefer__heap_release_empty(heap, true, UINT32_MAX);
		sefer__policy_heap_exit_all(heap);
		sefer__set_cache_to_spares(&heap->segments);
		if (IS_ENABLED(CONFIG_DECOMMIT))
			sefer__purge_set(&heap->segments, sefer__os.clock_ms(), true);
		/* release: pairs with the acquire CAS of the thread that destroys the orphan */
		atomic_store_explicit(&heap->fc.home, NULL, memory_order_release);
	}
	home->fc.children = NULL;
}
