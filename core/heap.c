// SPDX-License-Identifier: MIT
/*
 * Heaps: creation, thread exit (abandonment), adoption of abandoned segments, the heap pool.
 *
 * Lock order: enum lock_rank (core/lock.h).
 *   pool_lock       protects the pool of exited and destroyed heaps and the list of all heaps.
 *   abandoned_lock  protects the abandoned-segment list (segments with owner == NULL).
 * A segment leaves the abandoned list only after a thread won the CAS owner NULL -> heap, so
 * exactly one thread adopts it. A purge of abandoned segments holds each one for its duration
 * by the CAS owner NULL -> HELD_OWNER, so no adopter touches it meanwhile. An abandoned
 * segment's freed_by (the last heap that freed into it) is a hint only, written without a
 * lock: a stale or racing value changes which segment is reclaimed first, never whether a
 * reclaim is correct.
 *
 * Thread exit keeps memory warm for the next thread: empty segments become spares, abandoned
 * ones keep their dirty free slots until their purge deadline (segment.c, "Purge timing").
 * The heap that leaves at most one other live heap behind (the last worker of a process
 * whose main thread waits) purges all of it at once, so RSS does not wait for a deadline
 * that no slow path would ever check.
 */
#include <string.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/heaps.h"
#include "core/init.h"
#include "core/lock.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer/os.h"

SEFER_INTERNAL struct page sefer__page_empty;
SEFER_INTERNAL struct heap sefer__heap_empty = {
	.direct = {[0 ... DIRECT_SLOTS - 1] = &sefer__page_empty}};
SEFER_INTERNAL __thread struct heap *sefer__heap __attribute__((tls_model("initial-exec"))) =
	&sefer__heap_empty;
SEFER_INTERNAL __thread struct segment *sefer__owned[OWNED_SLOTS]
	__attribute__((tls_model("initial-exec"))) = {[0 ... OWNED_SLOTS - 1] = OWNED_NONE};

static struct spinlock pool_lock = SPINLOCK_INIT(LOCK_RANK_HEAP_POOL);
static struct heap *heap_pool;
static struct heap *heap_all;
static struct spinlock abandoned_lock = SPINLOCK_INIT(LOCK_RANK_ABANDONED);
static struct segment *abandoned;
static atomic_int heaps_live; /* heaps of running threads */

void sefer__heap_reset(struct heap *heap)
{
	for (size_t i = 0; i < DIRECT_SLOTS; i++)
		heap->direct[i] = &sefer__page_empty;
	memset(heap->bins, 0, sizeof(heap->bins));
	memset(&heap->full, 0, sizeof(heap->full));
	heap->segments = heap->full_segments = heap->cache = NULL;
	heap->ncache = 0;
	heap->next_purge = 0;
	heap->purge_backoff = 0;
	heap->backoff_since = 0;
	heap->purge_deferred = false;
	heap->warm_spans = heap->warm_at_deferral = 0;
	memset(&heap->policy, 0, sizeof(heap->policy));
	heaps_reset(heap);
}

/*
 * A heap's free-list shuffle state (CONFIG_HARDENED, page.c): the process key mixed with a
 * per-heap sequence number through splitmix64, so no two heaps of a process, and no two
 * processes, shuffle alike. A forked child draws a new key first (heap_fork_child).
 */
static void heap_shuffle_seed(struct heap *heap)
{
#if IS_ENABLED(CONFIG_HARDENED)
	static _Atomic(uint64_t) seq;
	uint64_t z = sefer__shuffle_key +
		     (atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed) + 1) *
			     0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	heap->shuffle = z ^ (z >> 31);
#else
	(void)heap;
#endif
}

static void heap_thread_exit(void *arg)
{
	struct heap *heap = arg;

	if (heap && heap == sefer__heap)
		sefer__heap_abandon(heap);
}

/* A heap struct from the pool of exited threads' and destroyed heaps, or newly mapped. */
struct heap *sefer__heap_struct_get(void)
{
	struct heap *heap;

	spin_lock(&pool_lock);
	heap = heap_pool;
	if (heap)
		heap_pool = heap->next_free;
	spin_unlock(&pool_lock);
	if (!heap) {
		size_t size = align_up(sizeof(struct heap), sefer__os_info.page_size);

		heap = sefer__os.reserve(size, sefer__os_info.alloc_granularity, SEFER_NO_NODE);
		if (!heap)
			return NULL;
		spin_init(&heap->fc.large_lock, LOCK_RANK_HEAP_LARGE); /* before fork can see it */
		spin_lock(&pool_lock);
		heap->next_all = heap_all;
		heap_all = heap;
		spin_unlock(&pool_lock);
		stat_add(&sefer__gstats.threads, NULL, 1);
	}
	return heap;
}

/* Back to the pool (heap_reset() done): structs are never unmapped (free.c reads them). */
void sefer__heap_struct_put(struct heap *heap)
{
	spin_lock(&pool_lock);
	heap->next_free = heap_pool;
	heap_pool = heap;
	spin_unlock(&pool_lock);
}

/* A heap from the pool made ready for its owner, the calling thread. */
void sefer__heap_setup(struct heap *heap)
{
	sefer__heap_reset(heap);
	heap_shuffle_seed(heap);
	heap->live = true;
}

struct heap *sefer__heap_init_thread(void)
{
	struct heap *heap;

	sefer__process_init();
	if (sefer__heap != &sefer__heap_empty)
		return sefer__heap; /* made while process_init() ran (recursive allocation) */
	heap = sefer__heap_struct_get();
	if (!heap)
		return NULL;
	sefer__heap_setup(heap);
	atomic_fetch_add_explicit(&heaps_live, 1, memory_order_relaxed);
	sefer__heap = heap;
	/* May allocate (glibc's pthread_setspecific): the heap is already in place. */
	sefer__os.thread_exit_hook(heap_thread_exit, heap);
	return heap;
}

static void segment_mark_never(struct segment *seg)
{
	struct page *pg;

	for_each_span(seg, pg, idx) {
		uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);

		for (;;) {
			if ((old & XT_MASK) == XT_FREEING) {
				cpu_relax();
				old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);
				continue;
			}
			/* acquire: a pusher's release FREEING -> NOTIFIED (free.c) is read here
			 * or earlier in this loop, so its CAS on heap->delayed happens before our
			 * store of NULL to it in heap_abandon() (that store is then later in the
			 * modification order and cannot be overtaken). release: keeps our
			 * earlier page updates ordered before NEVER for whoever reads the tag. */
			if (atomic_compare_exchange_weak_explicit(&pg->xthread, &old,
								  (old & ~XT_MASK) | XT_NEVER,
								  memory_order_acq_rel,
								  memory_order_relaxed))
				break;
		}
	}
}

static void abandoned_unlink(struct segment *seg);

static void abandon_segments(struct heap *heap, struct segment *list)
{
	struct segment *seg, *next;

	for (seg = list; seg; seg = next) {
		uint64_t due = sefer__segment_deadline(seg);

		next = seg->next;
		atomic_store_explicit(&seg->freed_by, NULL, memory_order_relaxed);
		spin_lock(&abandoned_lock);
		seg->prev = NULL;
		seg->next = abandoned;
		if (abandoned)
			abandoned->prev = seg;
		__atomic_store_n(&abandoned, seg, __ATOMIC_RELAXED); /* read unlocked as a hint */
		/* release: an adopter that wins the CAS sees every page as we left it. */
		atomic_store_explicit(&seg->owner, NULL, memory_order_release);
		spin_unlock(&abandoned_lock);
		stat_add(&sefer__gstats.abandoned, NULL, 1);
		if (due)
			sefer__global_purge_at(due);
	}
}

/*
 * seg is abandoned and held (HELD_OWNER): take the frees other threads pushed into its pages
 * and give back the spans that emptied, as its owner would. Returns whether seg is empty.
 */
static bool abandoned_collect(struct segment *seg)
{
	struct page *pg;

	for_each_span(seg, pg, idx) {
		sefer__page_collect_xthread(pg, (uintptr_t)-1); /* the tag stays NEVER */
		if (pg->used == 0)
			sefer__span_free_slots(seg, pg, sefer__heap_purge_delay(NULL));
	}
	return seg->used_pages == 0;
}

/*
 * Purge the dirty slots of abandoned segments that are due (all with force), each held by
 * HELD_OWNER meanwhile, after collecting the frees pushed into them since their thread
 * exited (a main thread freeing what its workers left): a segment that empties becomes a
 * spare. Returns the next deadline or 0.
 */
static uint64_t abandoned_purge(uint64_t now, bool force)
{
	struct segment *emptied = NULL, *next_seg;
	uint64_t next = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !__atomic_load_n(&abandoned, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&abandoned_lock);
	for (struct segment *seg = abandoned; seg; seg = next_seg) {
		struct heap *expect = NULL;

		next_seg = seg->next;
		/* acquire: pairs with the release store of NULL in abandon_segments(). A failed
		 * CAS means an adopter owns it and removes it from the list soon. */
		if (!atomic_compare_exchange_strong_explicit(&seg->owner, &expect, HELD_OWNER,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		if (abandoned_collect(seg)) {
			abandoned_unlink(seg);
			seg->next = emptied;
			emptied = seg;
			continue;
		}
		uint64_t due =
			sefer__segment_purge_due(seg, now, force, sefer__heap_purge_delay(NULL));

		if (due && (!next || due < next))
			next = due;
		/* release: the next adopter sees the purged slot bits */
		atomic_store_explicit(&seg->owner, NULL, memory_order_release);
	}
	spin_unlock(&abandoned_lock);
	for (; emptied; emptied = next_seg) {
		next_seg = emptied->next;
		sefer__segment_spare(emptied, force);
	}
	return next;
}

/*
 * Purge the spare and abandoned segments whose deadline passed (all with force) and set
 * sefer_purge_at to the next deadline. Any thread, no lock held.
 */
void sefer__global_purge(uint64_t now, bool force)
{
	uint64_t next, n;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	atomic_store_explicit(&sefer__purge_at, 0, memory_order_relaxed);
	next = sefer__spare_purge(now, force);
	n = abandoned_purge(now, force);
	if (n && (!next || n < next))
		next = n;
	if (next)
		sefer__global_purge_at(next);
}

void sefer__heap_abandon(struct heap *heap)
{
	struct segment *lists[2] = { heap->segments, heap->full_segments };

	/* 0. The thread's first-class heaps lose their owner (core/heaps.c). */
	sefer__heaps_orphan_children(heap);
	/* 1. No pusher may link a page into our delayed list any more. */
	for (int l = 0; l < 2; l++)
		for (struct segment *seg = lists[l]; seg; seg = seg->next)
			segment_mark_never(seg);
	/* 2. Forget the delayed list (every page on it is ours and handled below). */
	atomic_store_explicit(&heap->delayed, NULL, memory_order_relaxed);
	/* 3. Collect everything, give back empty pages and segments. */
	heap->live = false;
	while (heap->full.first) {
		struct page *pg = heap->full.first;

		sefer__queue_remove(&heap->full, pg);
		page_clear_full(pg);
		sefer__queue_push_back(&heap->bins[pg->bin], pg);
	}
	sefer__policy_heap_exit_all(heap);
	sefer__heap_release_empty(heap); /* segments it empties become spares (!heap->live) */
	sefer__heap_cache_to_spares(heap);
	/* 4. What still holds live blocks goes to the abandoned list, dirty slots and all. */
	abandon_segments(heap, heap->segments);
	abandon_segments(heap, heap->full_segments);
	sefer__heap_reset(heap);
	owned_forget_all(); /* frees after this (later TLS destructors) go to free_slow */
	sefer__heap = &sefer__heap_empty;
	sefer__heap_struct_put(heap);
	/* 5. The last heap but one gone: nobody may come to reuse or purge what exited heaps
	 * kept. Every heap puts its segments on the lists above before this decrement, so the
	 * one that takes the count to 1 or 0 purges all of them. */
	if (atomic_fetch_sub_explicit(&heaps_live, 1, memory_order_seq_cst) <= 2)
		sefer__global_purge(sefer__os.clock_ms(), true);
}

/* Take seg off the abandoned list (its owner CAS won: adopted, or held and emptied).
 * abandoned_lock held. */
static void abandoned_unlink(struct segment *seg) __must_hold(&abandoned_lock)
{
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		__atomic_store_n(&abandoned, seg->next, __ATOMIC_RELAXED);
	if (seg->next)
		seg->next->prev = seg->prev;
	seg->next = seg->prev = NULL;
	stat_add(&sefer__gstats.abandoned, NULL, -1);
}

/* Win seg for heap (owner NULL -> heap). abandoned_lock held. */
static bool abandoned_take(struct heap *heap, struct segment *seg) __must_hold(&abandoned_lock)
{
	struct heap *expect = NULL;

	/* acquire: pairs with the release store of NULL in abandon_segments(). */
	return atomic_compare_exchange_strong_explicit(&seg->owner, &expect, heap,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * The abandoned segment heap should take next: among the first RECLAIM_SCAN of the list, one
 * that heap has freed into since it was abandoned (free_slow sets freed_by), else the first
 * that can be taken. heap holds blocks of the segments it frees into: the next round of
 * threads that takes over its predecessor's blocks (larson-rounds) then reclaims that
 * predecessor's memory, not another lane's, whose blocks another thread is freeing; with the
 * list head alone, two lanes swapped segments at every round and most of their frees became
 * cross-thread frees into a live owner. Returns NULL if none can be taken.
 * abandoned_lock held.
 */
static struct segment *abandoned_pick(struct heap *heap) __must_hold(&abandoned_lock)
{
	struct segment *seg;
	int n = 0;

	for (seg = abandoned; seg && n < RECLAIM_SCAN; seg = seg->next, n++)
		if (atomic_load_explicit(&seg->freed_by, memory_order_relaxed) == heap &&
		    abandoned_take(heap, seg))
			return seg;
	for (seg = abandoned; seg; seg = seg->next)
		if (abandoned_take(heap, seg))
			return seg;
	return NULL;
}

/*
 * Adopt abandoned segments into heap (collecting the frees other threads pushed into them and
 * giving back their empty pages) until one gives `bin` a page to allocate from or has free
 * page slots, at most RECLAIM_TRIES of them, the ones heap has freed into first
 * (abandoned_pick). Called by page_find() when the heap has neither: the memory of exited
 * threads is reused before new memory is mapped. Returns whether any segment was adopted.
 */
bool sefer__abandoned_reclaim(struct heap *heap, unsigned bin)
{
	bool any = false;

	for (int tries = 0; tries < RECLAIM_TRIES; tries++) {
		struct segment *seg;

		if (!__atomic_load_n(&abandoned, __ATOMIC_RELAXED))
			break;
		spin_lock(&abandoned_lock);
		seg = abandoned_pick(heap);
		if (seg)
			abandoned_unlink(seg);
		spin_unlock(&abandoned_lock);
		if (!seg)
			break;
		any = true;
		stat_add(&sefer__gstats.reclaimed, NULL, 1);
		sefer__heap_adopt_segment(heap, seg);
		if (seg->has_space || sefer__page_queue_usable(heap, bin))
			break;
	}
	return any;
}

/*
 * Take over seg (owner already set to heap): collect its frees, queue its pages, free the
 * empty ones but the last: the adopter came for memory, and freeing every span would cache or
 * unmap the segment it just took (and map a fresh one for its next span).
 */
void sefer__heap_adopt_segment(struct heap *heap, struct segment *seg)
{
	struct page *pg;

	seg->has_space = seg->free_pages != 0;
	seg->prev = NULL;
	seg->next = seg->has_space ? heap->segments : heap->full_segments;
	if (seg->next)
		seg->next->prev = seg;
	if (seg->has_space)
		heap->segments = seg;
	else
		heap->full_segments = seg;
	heap_purge_at(heap, seg->purge_at); /* dirty slots keep their deadline, now this heap's */
	for_each_span(seg, pg, idx) {
		pg->delayed_next = NULL;
		page_clear_full(pg);
		sefer__page_collect_xthread(pg, XT_NORMAL);
		sefer__queue_push_back(&heap->bins[pg->bin], pg);
		sefer__heap_direct_update(heap, pg->bin);
	}
	for_each_span(seg, pg, idx) {
		if (pg->used == 0 && seg->used_pages > pg->span) {
			sefer__queue_remove(&heap->bins[pg->bin], pg);
			sefer__heap_direct_update(heap, pg->bin);
			sefer__span_free(heap, pg);
		}
	}
}

void sefer__heap_visit_all(void (*fn)(struct heap *h, void *arg), void *arg)
{
	spin_lock(&pool_lock);
	for (struct heap *h = heap_all; h; h = h->next_all)
		fn(h, arg);
	spin_unlock(&pool_lock);
}

/* Every spinlock, in the lock order (enum lock_rank, core/lock.h). */
void sefer__heap_fork_prepare(void) __acquires(pool_lock) __acquires(abandoned_lock)
	__acquires(spare_lock)
{
	spin_lock(&pool_lock);
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_prepare(h);
	spin_lock(&abandoned_lock);
	sefer__spare_fork_prepare();
}

void sefer__heap_fork_parent(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock)
{
	sefer__spare_fork_parent();
	spin_unlock(&abandoned_lock);
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_parent(h);
	spin_unlock(&pool_lock);
}

void sefer__heap_fork_child(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock)
{
	sefer__spare_fork_child();
	spin_reset(&abandoned_lock);
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_child(h);
	spin_reset(&pool_lock);
	if (IS_ENABLED(CONFIG_HARDENED) && sefer__heap != &sefer__heap_empty) {
		/* the child must not hand out blocks in the order its parent will */
		if (!os_random_bytes(&sefer__shuffle_key, sizeof(sefer__shuffle_key)))
			sefer__shuffle_key ^= sefer__os.clock_ms() * 0x9e3779b97f4a7c15ULL;
		heap_shuffle_seed(sefer__heap);
	}
}
