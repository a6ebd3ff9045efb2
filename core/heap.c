// SPDX-License-Identifier: MIT
/*
 * Heaps: creation, the direct table, collecting, thread exit, parked heaps, adoption of a
 * segment, the heap pool, the fork handlers.
 *
 * Lock order: enum lock_rank (core/lock.h).
 *   parked_pass_lock  held by a pass over the parked heaps (sefer__parked_each) and by their
 *                     dismantling, so that no parked heap is off the list but the one a pass
 *                     holds, and fork waits for a pass to put it back.
 *   pool_lock       protects the pool of exited and destroyed heaps, the parked heaps and the
 *                   list of all heaps.
 *
 * Thread exit parks the thread's heap whole (below, "parked heaps") for the next thread to take
 * over, pages, free lists and all; a running thread whose heap would map fresh memory for a
 * span takes a parked heap with freed blocks of that class instead, and parks its own
 * (heap_switch). A heap that cannot be parked is dismantled: empty segments become spares,
 * abandoned ones keep their dirty free slots until their purge deadline (core/purge.c,
 * "Timing"; core/unowned.c). The heap that leaves at most one other live heap
 * behind (the last worker of a process whose main thread waits) purges all of it at once
 * (parked heaps dismantled first), so RSS does not wait for a deadline that no slow path would
 * ever check, unless the program showed that its next threads come at once (core/purge.c,
 * "thread generations").
 */
#include <string.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/heaps.h"
#include "core/init.h"
#include "core/lock.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/span.h"
#include "core/stats.h"
#include "core/unowned.h"
#include "sefer/os.h"

SEFER_INTERNAL struct page sefer__page_empty;
SEFER_INTERNAL __thread struct heap *sefer__heap __attribute__((tls_model("initial-exec"))) =
	&sefer__heap_empty;
SEFER_INTERNAL __thread struct page *sefer__direct[DIRECT_TLS_SLOTS] __attribute__((tls_model(
	"initial-exec"))) = {[0 ... DIRECT_TLS_SLOTS - 1] = &sefer__page_empty};
SEFER_INTERNAL __thread struct segment *sefer__owned[OWNED_SLOTS]
	__attribute__((tls_model("initial-exec"))) = {[0 ... OWNED_SLOTS - 1] = OWNED_NONE};

static struct spinlock parked_pass_lock = SPINLOCK_INIT(LOCK_RANK_PARKED_PASS);
static struct spinlock pool_lock = SPINLOCK_INIT(LOCK_RANK_HEAP_POOL);
static struct heap *heap_pool;
static struct heap *heap_all;
static atomic_int heaps_live; /* heaps of running threads */
/* exited threads' heaps kept whole for the next threads (parked heaps, below) */
static struct heap *parked;
SEFER_INTERNAL unsigned sefer__nparked; /* written under pool_lock, read without it as a hint */

/* Slots lo..hi of heap's direct table, and of the caller's copy while heap is its default. */
static void heap_direct_set(struct heap *heap, size_t lo, size_t hi, struct page *pg)
{
	struct page **copy = heap == sefer__heap ? sefer__direct : NULL;

	for (size_t s = lo; s <= hi; s++) {
		heap->direct[s] = pg;
		if (copy && s < DIRECT_TLS_SLOTS)
			copy[s] = pg;
	}
}

/*
 * heap becomes the calling thread's default heap (or &heap_empty: none), its table copied (the
 * slots the copy holds).
 */
static void heap_attach(struct heap *heap)
{
	if (heap == &sefer__heap_empty) {
		for (size_t s = 0; s < DIRECT_TLS_SLOTS; s++)
			sefer__direct[s] = &sefer__page_empty;
	} else {
		memcpy(sefer__direct, heap->direct, sizeof(sefer__direct));
	}
	sefer__heap = heap;
}

void sefer__heap_reset(struct heap *heap)
{
	heap_direct_set(heap, 0, DIRECT_SLOTS - 1, &sefer__page_empty);
	memset(heap->bins, 0, sizeof(heap->bins));
	memset(&heap->full, 0, sizeof(heap->full));
	sefer_assert(!heap->remote.open); /* published at exit (abandon) */
	remote_frees_reset(&heap->remote);
	sefer__segment_set_reset(&heap->segments, heap);
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

/* Point the direct-table slots of `bin` at its first page (or the empty page). */
void sefer__heap_direct_update(struct heap *heap, unsigned bin)
{
	size_t bs = bin_block_size(bin);

	if (bs > DIRECT_MAX)
		return;
	struct page *pg = heap->bins[bin].first ? heap->bins[bin].first : &sefer__page_empty;
	size_t lo = bin > 1 ? (bin_block_size(bin - 1) >> GRANULE_SHIFT) + 1 : 0;

	heap_direct_set(heap, lo, bs >> GRANULE_SHIFT, pg);
}

/*
 * acquire: pairs with the pusher's release FREEING -> NOTIFIED (free.c), so the pusher's link
 * of pg into our delayed list, and its earlier block pushes, are visible once we see it done.
 */
static void wait_not_freeing(struct page *pg)
{
	while (xt_tag(atomic_load_explicit(&pg->xthread, memory_order_acquire)) == XT_FREEING)
		cpu_relax();
}

void sefer__heap_drain_delayed(struct heap *heap)
{
	/* acquire: pairs with each pusher's release CAS on heap->delayed (free.c); the CASes are
	 * RMWs, so one acquire synchronizes with all of them and every delayed_next written
	 * before a push is visible while we walk the list. */
	struct page *pg = atomic_exchange_explicit(&heap->delayed, NULL, memory_order_acquire);

	while (pg) {
		struct page *next = pg->delayed_next;

		if (atomic_load_explicit(&segment_of(pg)->owner, memory_order_relaxed) == heap) {
			wait_not_freeing(pg);
			sefer__page_delayed_back(heap, pg);
		}
		pg = next;
	}
}

/*
 * Give back the queued pages that are empty. With collect_all, every page's cross-thread frees
 * are collected first (sefer_collect, a heap dismantled or orphaned); without (a heap parked,
 * a pass over the parked heaps), only the lists that empty their page are: one that leaves
 * blocks in use stays for the owner's slow path (page_find), which takes it whole, with no
 * walk, once the page's free list is empty. Collecting it here walked every pushed block (to
 * link it behind the free list), a cache miss each, and malloc missed on them again later:
 * threadgen at 4 threads spent 2.4% of its time in those walks, at each generation's last
 * exit. A list of unknown length is collected. The first page of each bin is uncounted
 * (block.h): whether it is empty takes a walk of its free list, made whole with collect_all and
 * up to first_walk links without; a longer list leaves the page as it is, for the heap's next
 * owner to allocate from first or for the parked heaps' pass after the purge delay, which walks
 * it whole (core/purge.c). Walked whole at every park, a thread that lived for a short round
 * spent 13-15% of larson-rounds' time there. Its bins' direct entries follow the queues
 * (queue_first_changed, page.c). Returns whether a first page was left unwalked.
 */
bool sefer__heap_release_empty(struct heap *heap, bool collect_all, uint32_t first_walk)
{
	bool unwalked = false;

	for (unsigned bin = 1; bin < NBINS; bin++) {
		struct page *pg, *next;

		for (pg = heap->bins[bin].first; pg; pg = next) {
			uint32_t n =
				xt_count(atomic_load_explicit(&pg->xthread, memory_order_relaxed));

			next = pg->next;
			if (PAGE_FIRST_UNCOUNTED && pg->uncounted && !collect_all &&
			    pg->reserved > first_walk) {
				unwalked = true; /* too long a walk here: the first page stays */
				continue;
			}
			uint32_t used = page_used(pg);

			if (collect_all || n == XT_COUNT_UNKNOWN || n >= used) {
				sefer__page_collect_xthread(pg, (uintptr_t)-1);
				used = page_used(pg);
			}
			if (used == 0) {
				sefer__queue_remove(&heap->bins[bin], pg);
				sefer__span_free(&heap->segments, pg);
			}
		}
	}
	heap->segments.kept_until = 0; /* none kept now */
	return unwalked;
}

/* Collect every page's frees, release empty pages, purge (all pending with force). */
void sefer__heap_collect(struct heap *heap, bool force)
{
	remote_flush(&heap_get()->remote); /* the caller's frees into other heaps, too */
	sefer__heap_drain_delayed(heap);
	sefer__heap_release_empty(heap, true, UINT32_MAX);
	sefer__policy_collect_all(heap, force);
	sefer__purge_pass(&heap->segments, force, false); /* forced: parked heaps dismantled */
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
		sefer__thp_advise(heap, size, THP_USE_SMALL);
		heaps_struct_init(heap); /* its large_lock's rank, before fork can see it */
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
	heap->taken_over = false;
	heap_peaks_reset(&heap->stats);
	heap_shuffle_seed(heap);
	heap->segments.live = true;
}

static struct heap *heap_unpark(struct heap *prefer);

/*
 * The calling thread's heap: the parked heap prefer when it is parked (a new thread's first
 * call is a free into prefer's segment: free_by_owner), else any parked heap, else a new one.
 */
struct heap *sefer__heap_init_thread_for(struct heap *prefer)
{
	struct heap *heap;

	sefer__process_init();
	if (sefer__heap != &sefer__heap_empty)
		return sefer__heap; /* made while process_init() ran (recursive allocation) */
	heap = heap_unpark(prefer);
	if (!heap) {
		heap = sefer__heap_struct_get();
		if (!heap)
			return NULL;
		sefer__heap_setup(heap);
	}
	atomic_fetch_add_explicit(&heaps_live, 1, memory_order_relaxed);
	heap_attach(heap);
	/* May allocate (glibc's pthread_setspecific): the heap is already in place. */
	sefer__os.thread_exit_hook(heap_thread_exit, heap);
	return heap;
}

/*
 * Give up what heap holds, the memory of an exited thread: empty segments become spares, those
 * with live blocks go to the abandoned list, dirty slots and all, and the struct goes back to
 * the pool. The caller holds heap alone: its exiting thread (before clearing sefer__heap), or
 * the thread that took it off the parked list. Its first-class heaps were orphaned already.
 */
static void heap_dismantle(struct heap *heap)
{
	/* 1. No pusher may link a page into our delayed list any more. */
	sefer__set_mark_never(&heap->segments);
	/* 2. Forget the delayed list (every page on it is ours and handled below). */
	atomic_store_explicit(&heap->delayed, NULL, memory_order_relaxed);
	/* 3. Collect everything, give back empty pages and segments. */
	heap->segments.live = false;
	while (heap->full.first) {
		struct page *pg = heap->full.first;

		sefer__queue_remove(&heap->full, pg);
		page_clear_full(pg);
		sefer__queue_push_back(&heap->bins[pg->bin], pg);
	}
	sefer__policy_heap_exit_all(heap);
	heap->policy_kept_until = 0;
	heap->first_kept_until = 0;
	sefer__heap_release_empty(heap, true, UINT32_MAX); /* its emptied segments: spares */
	for (unsigned bin = 1; bin < NBINS; bin++) /* the pages leave their queues: counted */
		if (heap->bins[bin].first)
			page_count(heap->bins[bin].first);
	sefer__set_cache_to_spares(&heap->segments);
	/* 4. What still holds live blocks goes to the abandoned list, dirty slots and all. */
	sefer__set_abandon(&heap->segments);
	sefer__heap_reset(heap);
}

/*
 * ---- parked heaps ----
 * A generation of threads (start them, join them, start the next ones) inherits what the last
 * one left warm when a new thread takes over an exited thread's heap whole: its pages stay
 * queued with their free lists, its segments keep their owner (the heap), so the next thread
 * allocates from them at once, with no reclaim walk, no purge and no fault. So thread exit
 * parks its heap: the thread's batched remote frees are flushed, its first-class heaps
 * orphaned, its policies' caches emptied but for what a policy keeps for the next owner
 * (heap_park: the large cache, whose segments the next thread's requests then hit; given back
 * through heap_exit once the purge delay of memory no thread owns has passed, at the next
 * pass over the parked heaps, or when the heap is dismantled: heap->policy_kept_until), its
 * delayed pages and empty pages collected as a slow path would, and the heap joins the parked
 * list (at most SEFER_PARKED_HEAPS; past that it is dismantled). Nobody runs on a parked
 * heap: other threads' frees into it are cross-thread frees into a live heap (its pages'
 * xthread lists, its delayed list), which the next owner collects. A new thread's heap
 * (heap_init_thread) is a parked one when there is one.
 *
 * A running thread switches too (sefer__heap_switch): when its default heap has no block of a
 * class to hand out, none to carve or borrow and no dirty slot for a new span, so that the span
 * would take fresh memory, and a parked heap has freed blocks of that class (on a free list, or
 * pending from other threads' frees), the thread takes that heap and parks its own, as its exit
 * would (its remote batches flushed, its owned-segment cache emptied, its exit hook moved to
 * the new heap). In thread generations the last workers of a generation otherwise carve fresh
 * pages while the heaps of the workers that exited hold the blocks the others freed into them
 * (Documentation/decommit.rst, "a running heap takes a parked one"). Only a heap the thread
 * took over (from an exited thread, or by an earlier switch: heap->taken_over), a thread of a
 * generation: a heap made for its thread holds all that thread kept since it started (a main
 * thread's globals, a test runner's lists), which a switch would park, and the last exit of
 * the workers dismantle, with the thread still running: its live blocks would lie in
 * abandoned segments, and those its thread frees later would keep them so until a slow path
 * somewhere reclaims them (found as check-unit's one-process run left a segment abandoned
 * when its runner thread switched). Not for a thread with first-class heaps (their home is
 * its default heap), nor for them. Whoever holds a page of the old heap across a malloc
 * (realloc's copy) frees into it as any thread does afterwards.
 *
 * Whoever takes a heap off the list under pool_lock holds it alone: a new thread that adopts
 * it, or the purge of the memory no thread owns (core/purge.c), which visits the parked heaps
 * (sefer__parked_each) at the global deadline to collect them and purge their slots that are
 * due (the exiting thread lowers the global deadline to its set's next one), bounds them at a
 * kept hand-off of the last exit like spares and abandoned segments, and dismantles them all
 * (sefer__parked_dismantle) before a forced pass: the last exit that does not keep a
 * hand-off, sefer_collect(true), malloc_trim. So the decommit guarantee holds as for a
 * dismantled heap.
 */
/* Put heap on the parked list. pool_lock held. */
static void parked_push(struct heap *heap) __must_hold(&pool_lock)
{
	__atomic_store_n(&heap->parked, true, __ATOMIC_RELAXED);
	heap->next_free = parked;
	parked = heap;
	__atomic_store_n(&sefer__nparked, sefer__nparked + 1, __ATOMIC_RELAXED);
}

/*
 * Park heap (its thread exiting, sefer__heap cleared): true, or false when SEFER_PARKED_HEAPS
 * are parked.
 */
static always_inline bool heap_park(struct heap *heap)
{
	uint64_t max = sefer__opt.parked_heaps, due;

	if (__atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED) >= max)
		return false;
	sefer__heap_drain_delayed(heap);
	/* a first page too long to walk here: for the next owner, or walked after the delay */
	heap->first_kept_until = sefer__heap_release_empty(heap, false, RELEASE_FIRST_WALK) ?
					 sefer__purge_kept_until() : 0;
	sefer__purge_span_tails(&heap->segments); /* core/purge.c, "span tails" */
	/* the policies keep what the next owner can use (its large cache), until a deadline */
	heap->policy_kept_until = sefer__policy_heap_park_all(heap) ? sefer__purge_kept_until() : 0;
	due = deadline_first(deadline_first(heap->segments.next_purge, heap->policy_kept_until),
			     heap->first_kept_until);
	spin_lock(&pool_lock);
	if (sefer__nparked >= max) {
		spin_unlock(&pool_lock);
		return false;
	}
	parked_push(heap);
	spin_unlock(&pool_lock);
	stat_add(&sefer__gstats.parked, NULL, 1);
	if (IS_ENABLED(CONFIG_DECOMMIT) && due)
		sefer__global_purge_at(due);
	return true;
}

/* Every parked heap, off the list (each held by the caller), linked by next_free. */
static struct heap *parked_take_all(void)
{
	struct heap *all;

	if (!__atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED))
		return NULL;
	spin_lock(&pool_lock);
	all = parked;
	parked = NULL;
	__atomic_store_n(&sefer__nparked, 0, __ATOMIC_RELAXED);
	for (struct heap *h = all; h; h = h->next_free)
		__atomic_store_n(&h->parked, false, __ATOMIC_RELAXED);
	spin_unlock(&pool_lock);
	return all;
}

/* Take heap off the parked list (*link points to it). pool_lock held. */
static void parked_unlink(struct heap **link, struct heap *heap) __must_hold(&pool_lock)
{
	*link = heap->next_free;
	heap->next_free = NULL;
	__atomic_store_n(&heap->parked, false, __ATOMIC_RELAXED);
	__atomic_store_n(&sefer__nparked, sefer__nparked - 1, __ATOMIC_RELAXED);
}

/*
 * The heap *link points to on the parked list (NULL: none), taken off it for the calling thread,
 * its new owner (taken over: it may switch, heap_switch); pool_lock held, and released here.
 */
static always_inline struct heap *parked_take(struct heap **link) __releases(pool_lock)
{
	struct heap *heap = *link;

	if (heap)
		parked_unlink(link, heap);
	spin_unlock(&pool_lock);
	if (heap) {
		heap->taken_over = true;
		heap->policy_kept_until = 0; /* what the policies kept is the new owner's */
		heap->first_kept_until = 0;  /* its first pages too */
		stat_add(&sefer__gstats.parked, NULL, -1);
		sefer__purge_handoff_taken();
	}
	return heap;
}

/* A parked heap for the calling thread (now its owner), prefer if parked, or NULL. */
static struct heap *heap_unpark(struct heap *prefer)
{
	struct heap *heap, **link = &parked;

	if (!__atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED))
		return NULL;
	spin_lock(&pool_lock);
	if (prefer)
		for (; *link && *link != prefer; link = &(*link)->next_free)
			;
	if (!*link)
		link = &parked;
	heap = parked_take(link);
	if (heap)
		stat_add(&sefer__gstats.adopted, NULL, 1);
	return heap;
}

/*
 * fn(heap, arg) on every parked heap, each held while fn runs (fn takes the locks a heap's
 * owner may take), one at a time so that a new thread finds the others meanwhile; returns the
 * least nonzero value fn returned, 0 if none. One pass at a time (parked_pass_lock).
 */
uint64_t sefer__parked_each(uint64_t (*fn)(struct heap *heap, void *arg), void *arg)
	__acquires(parked_pass_lock) __releases(parked_pass_lock)
{
	static unsigned pass_seq;
	uint64_t next = 0;
	unsigned pass;

	if (!__atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&parked_pass_lock);
	pass = ++pass_seq;
	for (;;) {
		struct heap *heap, **link;

		spin_lock(&pool_lock);
		for (link = &parked; (heap = *link) && heap->parked_pass == pass;
		     link = &heap->next_free)
			;
		if (heap)
			parked_unlink(link, heap);
		spin_unlock(&pool_lock);
		if (!heap)
			break;
		next = deadline_first(next, fn(heap, arg));
		heap->parked_pass = pass;
		spin_lock(&pool_lock);
		parked_push(heap);
		spin_unlock(&pool_lock);
	}
	spin_unlock(&parked_pass_lock);
	return next;
}

/*
 * The calling thread's default heap `heap`, one it took over, with heaps parked (page_find's
 * tests, before the call), is about to map a span of bin (no block of bin to hand out, none
 * to carve or borrow): when the span would take fresh memory (no dirty slots), take a parked
 * heap that has freed blocks of bin instead (page_queue_freed), and park `heap` in its place.
 * Returns the new heap, or NULL (no switch: dirty slots, no parked heap with freed blocks of
 * bin, or heap has first-class heaps).
 */
struct heap *sefer__heap_switch(struct heap *heap, unsigned bin)
{
	struct heap *next, **link = &parked;

	if (heap_has_children(heap) ||
	    sefer__span_has_dirty_space(&heap->segments, bin_span_pages(bin)))
		return NULL;
	/* a heap on the list is nobody's: its pages hold still but for the atomic xthread */
	spin_lock(&pool_lock);
	while (*link && !sefer__page_queue_freed(*link, bin))
		link = &(*link)->next_free;
	next = parked_take(link);
	if (!next)
		return NULL;
	remote_flush(&heap->remote);
	owned_forget_all();
	heap_attach(next);
	if (!heap_park(heap)) {
		heap_dismantle(heap);
		sefer__heap_struct_put(heap);
	}
	sefer__os.thread_exit_hook(heap_thread_exit, next);
	stat_add(&sefer__gstats.switches, NULL, 1);
	return next;
}

/* Dismantle every parked heap (before a forced purge of what no thread owns). */
void sefer__parked_dismantle(void) __acquires(parked_pass_lock) __releases(parked_pass_lock)
{
	struct heap *heap;

	if (!__atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED))
		return;
	spin_lock(&parked_pass_lock); /* a pass's heap back on the list first */
	heap = parked_take_all();

	while (heap) {
		struct heap *next = heap->next_free;

		stat_add(&sefer__gstats.parked, NULL, -1);
		heap_dismantle(heap);
		sefer__heap_struct_put(heap);
		heap = next;
	}
	spin_unlock(&parked_pass_lock);
}

void sefer__heap_abandon(struct heap *heap)
{
	/* The thread's batched frees into other heaps (core/remote.h) reach their owners: a
	 * batch outliving its thread would hold their blocks for good. First: a batch may hold
	 * blocks of segments this heap adopted, which the collect below takes. */
	remote_flush(&heap->remote);
	/* The thread's first-class heaps lose their owner (core/heaps.c). */
	sefer__heaps_orphan_children(heap);
	/* Frees after this (later TLS destructors) go to free_slow, as cross-thread frees: the
	 * heap may be another thread's as soon as it is parked. */
	owned_forget_all();
	heap_attach(&sefer__heap_empty);
	if (!heap_park(heap)) {
		heap_dismantle(heap);
		sefer__heap_struct_put(heap);
	}
	/* The last heap but one gone: nobody may come to reuse or purge what exited heaps
	 * kept. Every heap is parked or puts its segments on the lists above before this
	 * decrement, so the one that takes the count to 1 or 0 purges all of them, unless the
	 * program showed that its next threads come at once (core/purge.c, "thread
	 * generations"). */
	if (atomic_fetch_sub_explicit(&heaps_live, 1, memory_order_seq_cst) <= 2)
		sefer__purge_last_exit();
}

/*
 * Take over seg (owner already set to heap): collect its frees, queue its pages, free the
 * empty ones but the last: the adopter came for memory, and freeing every span would cache or
 * unmap the segment it just took (and map a fresh one for its next span).
 */
void sefer__heap_adopt_segment(struct heap *heap, struct segment *seg)
{
	struct page *pg;

	sefer_assert(atomic_load_explicit(&seg->owner, memory_order_relaxed) == heap);
	sefer__segment_set_add(&heap->segments, seg);
	for_each_span(seg, pg, idx) {
		pg->delayed_next = NULL;
		page_clear_full(pg);
		sefer__page_collect_xthread(pg, XT_NORMAL);
		sefer__queue_push_back(&heap->bins[pg->bin], pg); /* and the direct table */
	}
	for_each_span(seg, pg, idx) {
		if (page_used(pg) == 0 && seg->used_pages > pg->span) {
			sefer__queue_remove(&heap->bins[pg->bin], pg);
			sefer__span_free(&heap->segments, pg);
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
void sefer__heap_fork_prepare(void) __acquires(parked_pass_lock) __acquires(pool_lock)
	__acquires(abandoned_lock) __acquires(spare_lock)
{
	spin_lock(&parked_pass_lock);
	spin_lock(&pool_lock);
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_prepare(h);
	sefer__unowned_fork_prepare();
}

void sefer__heap_fork_parent(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock) __releases(parked_pass_lock)
{
	sefer__unowned_fork_parent();
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_parent(h);
	spin_unlock(&pool_lock);
	spin_unlock(&parked_pass_lock);
}

void sefer__heap_fork_child(void) __releases(spare_lock) __releases(abandoned_lock)
	__releases(pool_lock) __releases(parked_pass_lock)
{
	sefer__unowned_fork_child();
	for (struct heap *h = heap_all; h; h = h->next_all)
		heaps_fork_child(h);
	spin_reset(&pool_lock);
	spin_reset(&parked_pass_lock);
	if (IS_ENABLED(CONFIG_HARDENED) && sefer__heap != &sefer__heap_empty) {
		/* the child must not hand out blocks in the order its parent will */
		if (!os_random_bytes(&sefer__shuffle_key, sizeof(sefer__shuffle_key)))
			sefer__shuffle_key ^= sefer__os.clock_ms() * 0x9e3779b97f4a7c15ULL;
		heap_shuffle_seed(sefer__heap);
	}
}
