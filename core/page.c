// SPDX-License-Identifier: MIT
/*
 * Pages: bin queues, carving, collecting frees, full pages, finding a page for a bin.
 *
 * Owner thread only, no locks. The one shared field is page->xthread, a list of blocks freed
 * by other threads whose low two bits carry a tag (segment.h):
 *
 *   NORMAL  -> FULL      owner, when it moves the page to heap->full (list empty)
 *   FULL    -> NORMAL    owner, when a local free takes the page out of full
 *   FULL    -> FREEING   the first pusher after the page went full; it then links the page
 *                        into the owner's delayed list ...
 *   FREEING -> NOTIFIED  ... and says so. Owners wait while FREEING (it is a few stores).
 *   NOTIFIED -> NORMAL   owner, draining its delayed list (heap_drain_delayed)
 *   any     -> NEVER     owner abandoning the heap (waits out FREEING first)
 *   NEVER   -> NORMAL    a thread adopting the segment
 *
 * So a page is on a delayed list at most once, and only on its current owner's.
 */
#include <string.h>

#include "core/debug.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/heaps.h"
#include "core/lock.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/span.h"
#include "core/stats.h"
#include "core/unowned.h"

/*
 * A page carves its never-used blocks this many bytes at a time (one block when a block is
 * bigger): carving writes each block's first granule, so what is carved is resident. One OS
 * page, as a class used for a few blocks needs: 16 KiB put mstress at 1.11x mimalloc's peak
 * RSS (40-odd classes in use, a few blocks each), 4 KiB at 1.04x, with no change in speed.
 */
#define EXTEND_BYTES ((size_t)4 << 10)

/* page_count()'s walk: used becomes the figure, and pg a counted page. */
void sefer__page_settle(struct page *pg)
{
	pg->used = page_used(pg);
	pg->uncounted = 0;
}

/*
 * The first page of a bin queue is uncounted, every other page counted (block.h): these three
 * keep it so as pages come and go, and point the direct table of pg's heap (pg: the page
 * pushed or removed) at the new first page at once, for malloc's fast path counts nothing: a
 * slot left at a page no longer first (a page_borrow() answer after a page went to the full
 * queue, and that page back behind another) had malloc hand out blocks its count never saw.
 * A page of the full queue (PAGE_FULL) is always counted; page_to_full() sets the flag before
 * it queues the page there.
 */
static void queue_first_changed(struct page_queue *q, struct page *pg)
{
	struct heap *heap;

	if (q->first && !(q->first->flags & PAGE_FULL))
		page_uncount(q->first);
	if (pg->flags & PAGE_FULL)
		return; /* the full queue */
	heap = atomic_load_explicit(&segment_of(pg)->owner, memory_order_relaxed);
	if (owner_is_heap(heap))
		sefer__heap_direct_update(heap, pg->bin);
}

void sefer__queue_push_front(struct page_queue *q, struct page *pg)
{
	pg->prev = NULL;
	pg->next = q->first;
	if (q->first) {
		page_count(q->first);
		q->first->prev = pg;
	} else {
		q->last = pg;
	}
	q->first = pg;
	queue_first_changed(q, pg);
}

void sefer__queue_push_back(struct page_queue *q, struct page *pg)
{
	pg->next = NULL;
	pg->prev = q->last;
	if (q->last)
		q->last->next = pg;
	else
		q->first = pg;
	q->last = pg;
	if (q->first == pg)
		queue_first_changed(q, pg);
}

void sefer__queue_remove(struct page_queue *q, struct page *pg)
{
	sefer_assert(pg->prev ? pg->prev->next == pg : q->first == pg); /* pg is in q */
	sefer_assert(pg->next ? pg->next->prev == pg : q->last == pg);
	page_count(pg);
	if (pg->prev)
		pg->prev->next = pg->next;
	else
		q->first = pg->next;
	if (pg->next)
		pg->next->prev = pg->prev;
	else
		q->last = pg->prev;
	if (!pg->prev)
		queue_first_changed(q, pg);
	pg->next = pg->prev = NULL;
}

/*
 * used + length(free) == reserved (core/segment.h): every carved block is handed out (or
 * pending, or a policy's) or on the free list. For sefer_assert_expensive(): walks the list,
 * at most reserved + 1 links (a longer one, a cycle, disagrees). Unused without
 * CONFIG_DEBUG_CORE_EXPENSIVE, where the assertions only type-check it.
 */
static inline __attribute__((__unused__)) bool page_counts_agree(const struct page *pg)
{
	uint32_t n = page_free_len(pg);

	if (PAGE_FIRST_UNCOUNTED && pg->uncounted)
		return n <= pg->reserved;
	return pg->used <= pg->reserved && pg->used + n == pg->reserved;
}

#if IS_ENABLED(CONFIG_HARDENED)
/*
 * Randomized free lists: the batch page_extend() carves goes onto the free list in a random
 * order, so the order malloc hands out the blocks of a fresh page is not predictable from
 * outside (an attacker cannot count on the block after a victim being the next one handed
 * out). A per-heap wyrand generator (owner-only, no atomics), seeded per heap from a
 * process-wide random key (heap_shuffle_seed); a Fisher-Yates shuffle of the batch indices.
 * Costs one generator step per carved block, on the slow path only.
 */
static inline uint64_t shuffle_next(struct heap *heap)
{
	__uint128_t t;

	heap->shuffle += 0xa0761d6478bd642fULL;
	t = (__uint128_t)heap->shuffle * (heap->shuffle ^ 0xe7037ed1a0b428dbULL);
	return (uint64_t)(t >> 64) ^ (uint64_t)t;
}

/* Link the n blocks from base onto pg->free in a random order; false when n < 2. */
static bool page_link_shuffled(struct heap *heap, struct page *pg, uint8_t *base, uint32_t n)
{
	uint16_t order[EXTEND_BYTES / GRANULE];
	size_t bs = pg->block_size;
	struct block *head = NULL, *prev = NULL;

	if (n < 2)
		return false;
	for (uint32_t i = 0; i < n; i++)
		order[i] = (uint16_t)i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(((shuffle_next(heap) >> 32) * (uint64_t)(i + 1)) >> 32);
		uint16_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct block *b = (struct block *)(base + order[i] * bs);

		if (prev)
			block_set_next(prev, b);
		else
			head = b;
		block_mark_free(b);
		prev = b;
	}
	block_set_next(prev, pg->free);
	pg->free = head;
	return true;
}
#else
static inline bool page_link_shuffled(struct heap *heap, struct page *pg, uint8_t *base,
				      uint32_t n)
{
	(void)heap, (void)pg, (void)base, (void)n;
	return false;
}
#endif

/*
 * The blocks a carve makes (page_extend) while the span has that many left: EXTEND_BYTES /
 * block_size by div_magic's multiply (a divide was 25-40 cycles of every carve).
 */
static inline uint32_t page_carve_blocks(const struct page *pg)
{
	uint32_t n = block_index_of(pg->div_magic, EXTEND_BYTES);

	return n ? n : 1;
}

/*
 * A carve inside the span's warm slots (span_alloc: an earlier span carved them, and they were
 * not purged since) faults nothing in, so it takes up to WARM_CARVE_BYTES at once: a burst of
 * mallocs into a span a burst of frees gave back comes to the slow path a quarter as often
 * (bulk 1 KiB). Not for a span whose tail a parking heap gives back (span_tail_purgeable: it
 * would keep more of it), nor hardened (its shuffle takes EXTEND_BYTES at most).
 */
#define WARM_CARVE_BYTES ((size_t)16 << 10)

static inline uint32_t page_carve_warm(const struct page *pg, uint32_t n)
{
	size_t carved = page_carved_bytes(pg);
	size_t warm = (size_t)pg->warm_slots << SPAGE_SHIFT;
	uint32_t m;

	if (IS_ENABLED(CONFIG_HARDENED) || span_tail_purgeable(pg) || carved >= warm)
		return n;
	m = block_index_of(pg->div_magic, (uint32_t)(warm - carved < WARM_CARVE_BYTES ?
						     warm - carved : WARM_CARVE_BYTES));
	return m > n ? m : n;
}

/* Carve up to EXTEND_BYTES of never-used blocks onto the (empty) free list (page_carve_warm). */
static void page_extend(struct heap *heap, struct page *pg)
{
	size_t bs = pg->block_size;
	uint32_t n = page_carve_blocks(pg);

	if (pg->warm_slots)
		n = page_carve_warm(pg, n);

	if (n > pg->capacity - pg->reserved)
		n = pg->capacity - pg->reserved;
	struct block *first = (struct block *)(page_start(pg) + (size_t)pg->reserved * bs);
	struct block *b = first;

	if (!page_link_shuffled(heap, pg, (uint8_t *)first, n)) { /* in address order */
		for (uint32_t i = 1; i < n; i++) {
			struct block *next = (struct block *)((uint8_t *)b + bs);

			block_set_next(b, next);
			block_mark_free(b);
			b = next;
		}
		block_set_next(b, pg->free);
		block_mark_free(b);
		pg->free = first;
	}
	pg->reserved += n;
	pg->fast_limit = page_fast_limit(pg);
	atomic_store_explicit(&pg->xt_reserved, pg->reserved, memory_order_relaxed);
	page_tail_recommit(pg, false); /* the carve may reach into a purged tail */
	stat_add(&sefer__gstats.carved_bytes, NULL, (long long)n * bs);
	sefer__inuse_grown(); /* a peak of in use, maybe (core/inuse.c) */
}

static void page_init(struct heap *heap, struct page *pg, unsigned bin)
{
	pg->bin = (uint8_t)bin;
	pg->block_size = (uint32_t)bin_block_size(bin);
	pg->capacity = (uint32_t)(page_span_bytes(pg) / pg->block_size);
	pg->div_magic = div_magic_of(pg->block_size);
	pg->reserved = 0;
	pg->used = 0;
	pg->flags = 0;
	pg->fast_limit = page_fast_limit(pg); /* 0: nothing carved yet */
	pg->free = NULL;
	atomic_store_explicit(&pg->xthread, XT_NORMAL, memory_order_relaxed);
	atomic_store_explicit(&pg->xt_start, pg->start_word, memory_order_relaxed);
	atomic_store_explicit(&pg->xt_block_size, pg->block_size, memory_order_relaxed);
	atomic_store_explicit(&pg->xt_div_magic, pg->div_magic, memory_order_relaxed);
	page_extend(heap, pg);
	sefer_assert_expensive(page_counts_agree(pg));
}

/*
 * Take the blocks other threads freed into pg and put them on its free list. The tag is kept,
 * or set to new_tag if new_tag != (uintptr_t)-1. Returns whether any block was taken.
 *
 * The list comes with its length (segment.h), so onto an empty free list (page_find(), where
 * nearly every collect happens) it goes whole, without touching a block: the blocks keep
 * their pending marks until malloc clears them (block.h), and the first miss on each is
 * malloc's, right before the program uses it, instead of one here and one there. Onto a
 * non-empty list, or with the length unknown, the list is walked for its tail and length.
 */
bool sefer__page_collect_xthread(struct page *pg, uintptr_t new_tag)
{
	uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);
	uintptr_t tag;

	do {
		if (!xt_ptr(old) && new_tag == (uintptr_t)-1)
			return false;
		tag = new_tag == (uintptr_t)-1 ? xt_tag(old) : new_tag;
		/* acquire: the pushers' writes to the blocks (their links) are visible. */
	} while (!atomic_compare_exchange_weak_explicit(
		&pg->xthread, &old, tag, memory_order_acquire, memory_order_relaxed));
	struct block *head = (struct block *)xt_ptr(old), *b = head, *last = NULL;
	uint32_t n = xt_count(old);

	if (!head)
		return false;
	if (pg->free || n == XT_COUNT_UNKNOWN) {
		for (n = 0; b; b = block_next(pg, b)) {
			/* its owner freed it (free mark) or handed it out again (no mark) */
			if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE) && !block_marked_pending(b))
				sefer__report_corruption(
					"cross-thread free list holds a block that is not pending",
					b);
			last = b;
			n++;
		}
		block_set_next(last, pg->free);
	}
	pg->free = head;
	if (!(PAGE_FIRST_UNCOUNTED && pg->uncounted)) { /* else no count (block.h) */
		sefer_assert(n <= pg->used); /* the pending blocks were counted as handed out */
		pg->used -= n;		     /* handed out until now: pending (segment.h) */
	}
	page_clear_zero(pg);
	sefer_assert_expensive(page_counts_agree(pg));
	return true;
}

/*
 * pg has nothing to allocate: move it to the full queue and ask pushers to notify us.
 * Returns false if blocks arrived meanwhile (pg is usable and stays in its bin queue).
 */
static bool page_to_full(struct heap *heap, struct page *pg)
{
	uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);

	/* nothing to allocate: no free block, nothing left to carve, so every block is out */
	sefer_assert(!pg->free && pg->reserved == pg->capacity && page_used(pg) == pg->reserved);
	sefer_assert(!(pg->flags & PAGE_FULL));

	for (;;) {
		if (xt_ptr(old)) {
			sefer__page_collect_xthread(pg, (uintptr_t)-1);
			return false;
		}
		if (xt_tag(old) != XT_NORMAL)
			break; /* already on the delayed list: draining will bring it back */
		/* release: pairs with the pusher's acquire (free.c, the CAS that takes FULL), so
		 * our earlier reads of pg->delayed_next (heap_drain_delayed) happen before the
		 * pusher writes it: without it a weak-memory CPU could let our old read see the
		 * pusher's new link. */
		if (atomic_compare_exchange_weak_explicit(&pg->xthread, &old, XT_FULL,
							  memory_order_release,
							  memory_order_relaxed))
			break;
	}
	sefer__queue_remove(&heap->bins[pg->bin], pg); /* counted: it was the first, or behind */
	page_set_full(pg);			      /* before: the full queue counts its first */
	sefer__queue_push_back(&heap->full, pg);
	return true;
}

/*
 * A full page got a block back: return it to the *back* of its bin queue. At the front it
 * would serve the next malloc with its one free block and be full again at the one after
 * (full/unfull ping-pong through page_find); at the back the pages ahead of it are used first
 * and it collects more frees meanwhile. The direct table changes only when the queue was
 * empty, since only then does the page become the first.
 */
void sefer__page_unfull(struct heap *heap, struct page *pg)
{
	struct page_queue *q = &heap->bins[pg->bin];
	uintptr_t old = XT_FULL;

	sefer_assert(pg->flags & PAGE_FULL);
	sefer_assert_expensive(page_counts_agree(pg));
	page_clear_full(pg);
	sefer__queue_remove(&heap->full, pg);
	sefer__queue_push_back(q, pg); /* the direct table follows a new first page (queue_*) */
	/* FULL -> NORMAL; if a pusher got there first, draining resets the tag later. */
	atomic_compare_exchange_strong_explicit(&pg->xthread, &old, XT_NORMAL, memory_order_relaxed,
						memory_order_relaxed);
}

/*
 * pg, drained from the delayed list (a pusher found it full), goes back to its bin queue with
 * what was pushed left on its xthread list (NOTIFIED -> NORMAL), for page_find() to collect
 * when it reaches the page: page_unfull() queues it at the back, and the pages ahead of it are
 * used first. Collecting here walked every pushed block while it was still in the freeing
 * thread's cache, and malloc missed on it again when it got there (xfer, a producer and a
 * consumer of 64-byte blocks: a miss per block in the walk and another in malloc).
 */
void sefer__page_delayed_back(struct heap *heap, struct page *pg)
{
	uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(&pg->xthread, &old, (old & ~XT_MASK) | XT_NORMAL,
						      memory_order_relaxed, memory_order_relaxed))
		;
	if (pg->flags & PAGE_FULL)
		sefer__page_unfull(heap, pg);
}

/*
 * Kept empty pages: a bin whose first page is empty keeps the pages that empty behind it, up
 * to KEPT_EMPTY_BYTES of spans (sixteen 64 KiB pages; core/heap.h), carved and with their free
 * lists whole, at the back of its queue: page_find() serves from them, before it carves, once
 * the pages ahead have nothing. An alloc-N/free-N pattern over more than two pages of a bin gave
 * back every page but the first at each round's frees and mapped and carved them again at the
 * next round's mallocs: bulk's 256-byte row (1024 blocks a round, four pages) spent about a
 * fifth of its time there, its 1 KiB row (16 pages) a sixth while the bound was four pages
 * (Documentation/benchmarks.rst). The bound is per bin and counted over the whole queue, its
 * empty pages but the first, so a kept page that a page back from the full queue (page_unfull)
 * went behind still counts; a queue too long to walk keeps nothing more (queue_kept_bytes).
 * They are ordinary empty pages of the queue: heap_collect() and thread exit give them back
 * with the others (heap_release_empty), a span taken for another bin first
 * (page_give_back_kept, below), and the owner's slow paths a purge delay after the first of
 * them was kept (page_kept_deadline, sefer__heap_heartbeat).
 */

/*
 * Bytes of the spans at the back of q that hold no block, its first page aside: the bin's kept
 * pages (page_retire puts them there). SIZE_MAX (keep nothing more) past KEPT_SCAN_PAGES of
 * them (core/heap.h): the walk stops at the first page in use, so it never grows with the
 * queue (a phase that frees a large heap in a random order empties thousands of pages of one
 * bin, and a walk of the whole queue at each would be quadratic).
 */
static size_t queue_kept_bytes(const struct page_queue *q)
{
	size_t bytes = 0;
	unsigned n = 0;

	for (const struct page *t = q->last; t && t != q->first && t->used == 0; t = t->prev) {
		if (++n > KEPT_SCAN_PAGES)
			return SIZE_MAX;
		bytes += page_span_bytes(t);
	}
	return bytes;
}

/* Is pg on no delayed list, with no cross-thread free pushed (the tag NORMAL, no list)? */
static inline bool page_xthread_normal(const struct page *pg)
{
	return atomic_load_explicit(&pg->xthread, memory_order_relaxed) == XT_NORMAL;
}

/*
 * The heap is about to take a span for bin: the other bins give back their kept empty pages
 * first (each queue's run of empty pages at its back, page_retire's), so that memory kept for
 * another bin's next round is never beside new memory taken (the span takes their slots warm
 * if it fits there: core/span.c), the way an owner's dirty slots are purged when its slow path
 * takes a span (core/purge.c). A page on a delayed list stays (page_retire's test).
 */
static void page_give_back_kept(struct heap *heap, unsigned bin)
{
	for (unsigned b = 1; b < NBINS; b++) {
		struct page_queue *q = &heap->bins[b];
		struct page *pg;

		if (b == bin)
			continue;
		while ((pg = q->last) && pg != q->first && pg->used == 0 &&
		       page_xthread_normal(pg)) {
			sefer__queue_remove(q, pg);
			sefer__span_free(&heap->segments, pg);
		}
	}
}

/*
 * A page was kept: unless pages kept before are still waiting, the heap's kept pages are given
 * back one purge delay from now (sefer__heap_heartbeat), if no span for another bin took them
 * first. One clock read per deadline, not per page kept.
 */
static void page_kept_deadline(struct heap *heap)
{
	struct segment_set *set = &heap->segments;
	uint64_t delay;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || set->kept_until)
		return;
	delay = sefer__purge_delay(set);
	if (delay_is_never(delay))
		return; /* kept until a span, a collect or the thread's exit */
	set->kept_until = sefer__os.clock_ms() + delay;
}

/*
 * A heartbeat (heap_heartbeat, core/heap.h): the kept pages past their deadline go back (their
 * slots turn dirty, purged a delay later), the policies give back what aged out in their keep
 * (collect(h, false), while one keeps some: heap_keep_aging), then the purge pass.
 */
void sefer__heap_heartbeat(struct heap *heap)
{
	struct segment_set *set = &heap->segments;

	if (set->kept_until && sefer__os.clock_ms() >= set->kept_until) {
		set->kept_until = 0;
		page_give_back_kept(heap, 0); /* every bin's */
	}
	if (atomic_load_explicit(&heap->policy_aging, memory_order_relaxed)) {
		/* set again by a policy that still keeps some, or a thread that hands it some */
		atomic_store_explicit(&heap->policy_aging, false, memory_order_relaxed);
		sefer__policy_collect_all(heap, false);
	}
	sefer__purge_pass(set, false, true);
}

/*
 * used dropped to 0 on a local free. The page goes to the back of its queue, kept there while
 * the empty pages at the back hold up to KEPT_EMPTY_BYTES (above), else given back, so
 * alloc-N/free-N patterns do not map and carve pages every round: page_find_walk() serves a
 * page all free before it carves (page_free_worth_a_carve). The first page stays first, and
 * whether it is empty is not asked: it is uncounted (block.h), and only a walk would tell.
 * heap_collect() and thread exit give back the empty pages left.
 */
static void page_retire(struct heap *heap, struct page *pg)
{
	struct page_queue *q = &heap->bins[pg->bin];
	uintptr_t x = atomic_load_explicit(&pg->xthread, memory_order_relaxed);

	if (PAGE_FIRST_UNCOUNTED && pg->uncounted) {
		pg->used = UNCOUNTED_BASE; /* its count ran down (block.h): a heartbeat, no more */
		return;
	}
	sefer_assert(pg->used == 0);
	if ((pg->flags & PAGE_FULL) || q->first == pg)
		return;
	if (xt_tag(x) == XT_FREEING || xt_tag(x) == XT_NOTIFIED)
		return; /* on the delayed list: retired when drained and freed again */
	/*
	 * Not on a delayed list, and no pusher can put it there now: a tag of FULL goes with
	 * PAGE_FULL (page_to_full, page_unfull), and with no block out nobody frees into it.
	 */
	sefer_assert(page_xthread_normal(pg));
	sefer_assert_expensive(page_counts_agree(pg));
	sefer__queue_remove(q, pg); /* not the first: the direct table is unchanged */
	size_t kept = queue_kept_bytes(q);

	if (kept == SIZE_MAX || kept + page_span_bytes(pg) > KEPT_EMPTY_BYTES) {
		sefer__span_free(&heap->segments, pg);
	} else {
		sefer__queue_push_back(q, pg);
		page_kept_deadline(heap);
	}
}

void sefer__page_retire(struct heap *heap, struct page *pg)
{
	page_retire(heap, pg);
	heap_heartbeat(heap); /* after: it may give back kept pages, pg among them */
}

/*
 * The free fast path emptied pg, a page of the caller's default heap or, through the owned-
 * segment cache, of one of the thread's first-class heaps: retire it in its owner.
 */
void sefer__page_emptied(struct page *pg)
{
	sefer__page_retire(atomic_load_explicit(&segment_of(pg)->owner, memory_order_relaxed), pg);
}

/* Has a page of bin's queue a block to hand out, now or after collecting? (reclaim's test) */
bool sefer__page_queue_usable(struct heap *heap, unsigned bin)
{
	for (struct page *pg = heap->bins[bin].first; pg; pg = pg->next)
		if (pg->free || pg->reserved < pg->capacity ||
		    xt_ptr(atomic_load_explicit(&pg->xthread, memory_order_relaxed)))
			return true;
	return false;
}

/*
 * Has a page of bin's queue a carve's worth of blocks that were freed, on its free list or
 * pending from other threads' frees (memory in use before, where a carve would touch fresh
 * pages)? heap_switch's test of a parked heap, which nobody runs on. Fewer are not worth a
 * switch: a page whose last blocks come back one at a time had threads switch back and forth
 * (larson-rounds at four threads: 300-1,400 a run).
 */
bool sefer__page_queue_freed(struct heap *heap, unsigned bin)
{
	for (struct page *pg = heap->bins[bin].first; pg; pg = pg->next) {
		uintptr_t x = atomic_load_explicit(&pg->xthread, memory_order_relaxed);
		uint32_t want = page_carve_blocks(pg), freed = page_free_upto(pg, want);

		if (xt_ptr(x))
			freed += xt_count(x) == XT_COUNT_UNKNOWN ? want : xt_count(x);
		if (freed >= want)
			return true;
	}
	return false;
}

/*
 * Borrowing: a bin above the direct table (blocks over BORROW_MIN_SIZE, bins.h) that is out of free
 * blocks takes a free block of one of the next BORROW_BINS bins, the nearest first, before it
 * carves a block never used or maps a new span: at most 1.75x the size asked for (sized.c's
 * slack allows 2x). The page stays in its own bin's queue and the block goes back to it when
 * freed. A class's carved blocks stay resident while its span lives, so without borrowing the
 * peak RSS is the sum over the classes of each one's peak, where glibc's coalescing pays about
 * the peak of the sum: mstress (3% of its blocks 4-64 KiB, 16 classes) peaked at 1.57x glibc's
 * RSS at one thread and 1.22x with it, larson 1.43x and 1.34x at 4 threads (Documentation/
 * decommit.rst, "Peak RSS of the small rows"). The block must be as aligned as one of bin's:
 * an aligned request picks a class whose blocks are multiples of the alignment (alloc.c).
 */
static struct page *page_borrow(struct heap *heap, unsigned bin)
{
	size_t bs = bin_block_size(bin);
	uintptr_t misalign = (bs & -bs) - 1;

	if (bs <= BORROW_MIN_SIZE)
		return NULL;
	for (unsigned b = bin + 1; b <= bin + BORROW_BINS && b < NBINS; b++) {
		struct page *pg = heap->bins[b].first;

		if (pg && pg->free && !((uintptr_t)pg->free & misalign))
			return pg;
	}
	return NULL;
}

/*
 * Has pg, behind a page with blocks left to carve, at least as many free blocks as a carve
 * makes (page_extend)? Then they serve before any block is carved: a block never used costs a
 * page of memory the first time it is touched, a free one nothing. With fewer, the page waits
 * behind (the full/unfull ping-pong of page_unfull), and serves when nothing is left to carve.
 * Exact once its cross-thread frees are collected (page_find); low while some are pending.
 */
static inline bool page_free_worth_a_carve(const struct page *pg)
{
	uint32_t want = page_carve_blocks(pg);

	return page_free_upto(pg, want) >= want;
}

/*
 * The slow call of a bin whose one page is being carved: the front page has no free block,
 * no cross-thread free pending, no page behind it and blocks left to carve, and the heap no
 * delayed page. page_find_walk() would come to the same carve (or borrow) after its queue
 * walk and collect; a burst of mallocs into fresh pages comes here once per carve (bulk's
 * 1 KiB blocks: every fourth malloc). NULL: walk the queue.
 */
static always_inline struct page *page_find_carving(struct heap *heap, unsigned bin)
{
	struct page *pg = heap->bins[bin].first;

	if (!pg || pg->free || pg->next || pg->reserved >= pg->capacity ||
	    xt_ptr(atomic_load_explicit(&pg->xthread, memory_order_relaxed)) ||
	    atomic_load_explicit(&heap->delayed, memory_order_relaxed))
		return NULL;
	if (pg->block_size > BORROW_MIN_SIZE) {
		struct page *lend = page_borrow(heap, bin);

		if (lend)
			return lend;
	}
	page_extend(heap, pg);
	return pg;
}

/*
 * A page of `bin` with a free block, at the front of its queue, or a larger bin's
 * page to borrow a block from (page_borrow); NULL when out of memory.
 * Order: the bin's queue up to its first page with blocks left to carve; behind that page, a
 * page with as many free blocks as a carve makes (page_free_worth_a_carve); a carve; then
 * (when the heap's segments have no room for a new span) abandoned segments of exited
 * threads, then a new span. Without the look behind the carving page, a
 * heap carved its newest page to the end while the pages behind it held the blocks other
 * threads had freed (randpos at 4 threads: peak RSS 22.0 MiB against 19.0 with it).
 */
static noinline struct page *page_find_walk(struct heap *heap, unsigned bin)
{
	struct page_queue *q = &heap->bins[bin];
	struct page *pg, *next, *carve;
	bool reclaimed = false;

	if (atomic_load_explicit(&heap->delayed, memory_order_relaxed))
		sefer__heap_drain_delayed(heap);
retry:
	carve = NULL;
	for (pg = q->first; pg; pg = next) {
		next = pg->next;
		if (!pg->free)
			sefer__page_collect_xthread(pg, (uintptr_t)-1);
		if (pg->free) {
			if (!carve || page_free_worth_a_carve(pg))
				goto found;
			continue; /* behind: served once nothing is left to carve */
		}
		if (pg->reserved < pg->capacity) {
			if (!carve)
				carve = pg;
			continue;
		}
		if (!page_to_full(heap, pg))
			goto found;
	}
	if (carve) {
		struct page *lend = page_borrow(heap, bin);

		if (lend)
			return lend;
		pg = carve;
		page_extend(heap, pg);
		goto found;
	}
	if (!reclaimed && heap_reclaims(heap) &&
	    !sefer__span_has_space(&heap->segments, bin_span_pages(bin))) {
		reclaimed = true;
		if (sefer__abandoned_reclaim(heap, bin))
			goto retry;
	}
	if ((pg = page_borrow(heap, bin)))
		return pg;
	/* the caller's default heap, one it took over: a parked heap with freed blocks of bin
	 * rather than fresh memory (heap_switch) */
	if (heap == sefer__heap && heap->taken_over &&
	    __atomic_load_n(&sefer__nparked, __ATOMIC_RELAXED) && sefer__heap_switch(heap, bin))
		return PAGE_SWITCHED;
	page_give_back_kept(heap, bin);
	pg = sefer__span_alloc(&heap->segments, bin_span_pages(bin), policy_segment_node(heap));
	/* after the span took the dirty slots it wanted (core/span.c) */
	if (IS_ENABLED(CONFIG_DECOMMIT) && purge_pending(&heap->segments))
		sefer__purge_pass(&heap->segments, false, true);
	if (!pg)
		return NULL;
	page_init(heap, pg, bin);
	sefer__queue_push_front(q, pg); /* and the direct table (queue_first_changed) */
	return pg;
found:
	sefer_assert(pg->free && pg->bin == bin); /* a block to hand out, of this bin */
	if (q->first != pg) {
		sefer__queue_remove(q, pg);
		sefer__queue_push_front(q, pg);
	}
	return pg;
}

/* page_find_walk()'s answer, the carving case (page_find_carving) without the walk. */
struct page *sefer__page_find(struct heap *heap, unsigned bin)
{
	struct page *pg = page_find_carving(heap, bin);

	return pg ? pg : page_find_walk(heap, bin);
}
