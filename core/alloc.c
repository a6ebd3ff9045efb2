// SPDX-License-Identifier: MIT
/*
 * Allocation slow paths and the calls built on malloc: calloc, realloc, aligned allocation,
 * usable size. The fast paths are in alloc.h.
 */
#include <errno.h>
#include <string.h>

#include "core/align.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/heaps.h"
#include "core/init.h"
#include "core/large.h"
#include "core/options.h"
#include "core/stats.h"

/*
 * calloc's block holds a range [from, to) that reads as zero without having been written
 * (fresh or purged memory): fault its OS pages in for writing, up to sefer_opt.calloc_prefault
 * bytes into the block (CONFIG_CALLOC_PREFAULT_KB), the page that holds the last of those
 * bytes included. Left alone, a page the program reads before it writes takes two faults on
 * Linux (the read maps the shared zero page, the write replaces it and flushes the other
 * CPUs' TLBs): redis's dict rehash reads every bucket of its new, calloc'ed table before it
 * writes it (Documentation/benchmarks.rst), and a program that checks that its calloc'ed
 * blocks read as zero (tgstress) met it on the last page of each block above a page, where
 * no later block was carved yet (the write faults: 1.7% of tgstress's time, 0.2% with that
 * page faulted in here too). A page that byte from lies inside (not at its start) was written
 * already: the block's link, or the bytes cleared. One page is faulted in by a store of zero
 * (no system call), more by one populate call.
 */
static void prefault_zeroed(void *block, size_t from, size_t to)
{
	size_t ps = sefer__os_info.page_size;
	uintptr_t start, end;

	if (!os_has(SEFER_OS_POPULATE))
		return;
	if (to > sefer__opt.calloc_prefault)
		to = (size_t)sefer__opt.calloc_prefault;
	start = align_up((uintptr_t)block + from, ps);
	end = align_up((uintptr_t)block + to, ps);
	if (start + ps == end)
		*(volatile char *)start = 0; /* start lies in [block + from, block + to) */
	else if (start < end)
		sefer__os.populate((void *)start, end - start);
}

/* Pop pg's first free block for a request of size bytes (zeroed whole with zero). */
static void *pop_block(struct heap *heap, struct page *pg, bool zero, size_t size)
{
	struct block *b = pg->free;
	bool fresh = pg->is_zero;

	/* pg is its queue's first (page_find, a lender, malloc_generic): uncounted (block.h) */
	sefer_assert(!PAGE_FIRST_UNCOUNTED || pg->uncounted);
	alloc_from_page(heap, pg, b, block_next(pg, b));
	if (zero) {
		if (fresh) {	/* carved from zeroed memory: only the link and the mark written */
			b->next = 0;
			((uintptr_t *)b)[1] = 0;
			prefault_zeroed(b, 2 * sizeof(uintptr_t), size);
		}
		else
			memset(b, 0, pg->block_size);
		annotate_block_zeroed(b, pg->block_size);
	}
	annotate_block_trim(b, size, pg->block_size);
	return b;
}

void *sefer__malloc_slow(size_t size, struct heap *heap, bool zero)
{
	if (unlikely(heap == &sefer__heap_empty)) {
		heap = sefer__heap_init_thread();
		if (!heap) {
			errno = ENOMEM;
			return NULL;
		}
	}
	if (size > SMALL_MAX)
		return sefer__large_alloc(heap, size, 0, zero); /* flushes the batches itself */
	/* A latency bound for the thread's batched frees into other heaps (core/remote.h). */
	remote_flush(&heap_get()->remote);
	heap_heartbeat(heap);

	unsigned bin = bin_index(size);
	struct page *pg = sefer__page_find(heap, bin);

	/* switched to a parked heap with freed blocks of bin (heap_switch), which page_find
	 * serves (collected, before any carve behind them) without a span: no second switch */
	while (pg == PAGE_SWITCHED)
		pg = sefer__page_find(heap = heap_get(), bin);
	if (!pg) {
		errno = ENOMEM;
		return NULL;
	}
	return pop_block(heap, pg, zero, size);
}

/* Sizes above the direct table (and calloc of any size): bin queue, then the slow path. */
void *sefer__malloc_generic(size_t size, struct heap *heap, bool zero)
{
	if (size <= SMALL_MAX) {
		struct page *pg = heap->bins[bin_index(size)].first;

		if (pg && pg->free)
			return pop_block(heap, pg, zero, size);
	} else if (likely(heap != &sefer__heap_empty)) {
		return sefer__large_alloc(heap, size, 0, zero); /* malloc_slow's large case */
	}
	return sefer__malloc_slow(size, heap, zero);
}

void *sefer__malloc_slow_default(size_t size)
{
	return sefer__malloc_slow(size, heap_get(), false);
}

/*
 * malloc's sizes above the TLS copy of the direct table: up to DIRECT_MAX the heap's table has
 * the page (1-4 KiB blocks without bin_index() and pop_block(): 0.76-0.90x the time of a loop
 * of mallocs and frees of one size, Documentation/benchmarks.rst).
 */
void *sefer__malloc_generic_default(size_t size)
{
	struct heap *heap = heap_get();

	if (size <= DIRECT_MAX) {
		struct page *pg = heap->direct[direct_slot(size)];

		if (likely(pg))
			return direct_malloc(heap, pg, size);
		return sefer__malloc_slow(size, heap, false); /* heap_empty's table: core/heap.h */
	}
	return sefer__malloc_generic(size, heap, false);
}

/*
 * seg, placed for a request of size bytes, becomes heap's live block: with zero, its first
 * `dirty` bytes (those that may not read as zero) are cleared.
 */
static void *large_hand_out(struct heap *heap, struct segment *seg, size_t size, bool zero,
			    size_t dirty)
{
	atomic_store_explicit(&seg->large_live, 1, memory_order_relaxed);
	seg->large_heap = heap;
	seg->large_zero = false;
	seg->large_req = size;
	heaps_large_track(heap, seg);
	heap_stat_inc(heap, large_allocs);
	heap_stat_call(heap, mallocs);
	/* committed grew for it (mapped: dirty 0; resized up: its old pages' bytes): a peak of in
	 * use, maybe (core/inuse.c); a cached segment handed out as it is grew nothing */
	if (dirty != SIZE_MAX)
		sefer__inuse_grown();
	annotate_block_alloc(large_block(seg), seg->large_size);
	if (zero && dirty)
		memset(large_block(seg), 0, dirty < size ? dirty : size);
	if (zero && dirty < size)
		prefault_zeroed(large_block(seg), dirty, size);
	annotate_block_zeroed(large_block(seg), zero ? size : 0);
	annotate_block_trim(large_block(seg), size, seg->large_size);
	return large_block(seg);
}

void *sefer__large_alloc(struct heap *heap, size_t size, size_t align, bool zero)
{
	struct segment *seg;
	size_t dirty = SIZE_MAX;

	/* a request the machine could never back (os.h, max_request; at most PTRDIFF_MAX) */
	if (size > sefer__os_info.max_request) {
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * Every large request is a slow path for the thread's batched frees into other heaps
	 * (core/remote.h): a thread that allocates only large blocks never reaches malloc_slow.
	 * One load of a line of its own when it holds none.
	 */
	remote_flush(&heap_get()->remote);
	/* A cached segment is aligned to SEGMENT_SIZE only: larger alignments map their own. */
	seg = align <= SEGMENT_SIZE / 2 ? policy_large_alloc(heap, size, align, &dirty) : NULL;
	if (!seg) {
		seg = sefer__segment_alloc_large(size, align, policy_segment_node(heap));
		if (!seg) {
			errno = ENOMEM;
			return NULL;
		}
		dirty = seg->large_zero ? 0 : SIZE_MAX;
	}
	return large_hand_out(heap, seg, size, zero, dirty);
}

void *sefer__heap_calloc(struct heap *heap, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return sefer__malloc_generic(total, heap, true);
}

void *sefer__calloc_checked(size_t n, size_t size)
{
	return sefer__heap_calloc(heap_get(), n, size);
}

/* Usable bytes of the block p points into, p in sefer's segment seg. */
static always_inline size_t usable_size_in(struct segment *seg, const void *p)
{
	if (unlikely(!slot_has_page(seg, p))) {
		if (atomic_load_explicit(&seg->owner, memory_order_relaxed) != LARGE_OWNER)
			return 0;
		return seg->large_size - (size_t)((const uint8_t *)p - large_block(seg));
	}
	struct page *pg = page_of(seg, p);
	uint32_t off = (uint32_t)((const uint8_t *)p - page_start(pg));

	if (!pg->block_size)
		return 0;
	if (likely(block_offset_divisible(pg->div_magic, off)))
		return pg->block_size;
	return (size_t)(block_index_of(pg->div_magic, off) + 1) * pg->block_size - off;
}

/* NULL, a foreign pointer, or a block of a segment aligned beyond SEGMENT_SIZE. */
static noinline size_t usable_size_elsewhere(const void *p)
{
	struct segment *seg = p ? sefer__aligned_segment_of(p) : NULL;

	return seg ? usable_size_in(seg, p) : 0;
}

/*
 * malloc_usable_size: wrappers that count their bytes (redis's zmalloc) call it on every malloc
 * and free, so a small block costs no load of the segment's owner (a large segment's page_off
 * is 0, segment.h), no divide and no stack frame.
 */
size_t sefer__usable_size_any(const void *p)
{
	struct segment *seg = segment_of(p);

	if (unlikely(!p || !segtab_contains(seg)))
		return usable_size_elsewhere(p);
	return usable_size_in(seg, p);
}

/* Is p (ours, not NULL) a block of heap? */
static bool block_of_heap(struct heap *heap, const void *p)
{
	struct segment *seg = segment_of(p);
	struct heap *owner;

	if (!segtab_contains(seg) && !(seg = sefer__aligned_segment_of(p)))
		return false;
	owner = atomic_load_explicit(&seg->owner, memory_order_relaxed);
	return owner == LARGE_OWNER ? seg->large_heap == heap : owner == heap;
}

/*
 * The page of p when p is a block the calling thread's heaps hold, by the free fast path's
 * tests: its segment in the owned cache, a carved block start of a page that is not full, no
 * free or pending mark. NULL is only a maybe (another thread's block, a full page, a large
 * block): block_not_held() then decides. realloc then frees p, once it is copied, by
 * free_held_block() with no second lookup. The mark is peeked at (block_freed), not opened
 * and closed as the free paths' accessors do: p may be live, and closing its first granule
 * would hide the block's first 16 bytes from the copy and from the program under ASan and
 * memcheck (core/annotate.h).
 */
static always_inline struct page *page_held_here(const void *p)
{
	uintptr_t key = owned_key(p);
	struct page *pg;

	if (owned_entry(p) != key)
		return NULL;
	pg = page_of((struct segment *)key, p);
	if (!block_start(pg, p, pg->fast_limit) || block_freed(p))
		return NULL;
	return pg;
}

/*
 * realloc of a large block to a size that needs another segment size (larger, or large and
 * less than half): its segment resized by the OS moving its pages (segment_resize_large), so
 * no byte is copied and none faulted in again, and a shrink gives the tail back (glibc
 * resizes its mmapped chunks with mremap too). A first-class heap's block leaves the heap's
 * list, which holds its address, while it moves (heaps_large_detach). NULL where that cannot
 * be done: no remap op or guard pages, an aligned block, the block of a first-class heap that
 * is another thread's or is being visited; the caller then copies. A block that moves is
 * `heap`'s, as a copy would be: plain realloc of a first-class heap's block that the OS moves
 * leaves that heap for the caller's default heap; resized in place, it stays. The bytes the
 * program had and keeps stay defined to memcheck, the rest is undefined.
 */
static void *large_resize(struct heap *heap, struct segment *seg, void *p, size_t size)
{
	size_t usable = seg->large_size, kept = annotate_live_bytes(p, usable);
	struct heap *tracker = heaps_large_tracked(seg) ? seg->large_heap : NULL;
	struct segment *moved;

	if (p != (uint8_t *)seg + large_block_offset(0) ||
	    (tracker && !sefer__heaps_large_detach(seg)))
		return NULL;
	annotate_block_free(p, usable);
	moved = sefer__segment_resize_large(seg, size, 0);
	if (tracker && moved && moved != seg && tracker != heap) {
		moved->large_heap = heap; /* plain realloc moved it: the caller's default heap's */
		heaps_large_track(heap, moved);
	} else if (tracker) {
		sefer__heaps_large_add(tracker,
				       moved ? moved : seg); /* seg is gone when it moved */
	}
	if (!moved) {
		/* unchanged: the block is the program's again, as it was */
		annotate_block_alloc(p, usable);
		annotate_block_zeroed(p, kept);
		annotate_block_trim(p, kept, usable);
		return NULL;
	}
	moved->large_req = size;
	p = large_block(moved);
	annotate_block_alloc(p, moved->large_size);
	annotate_block_zeroed(p, kept < size ? kept : size);
	annotate_block_trim(p, size, moved->large_size);
	return p;
}

/*
 * realloc growing a large block past its room by a quarter of it or more: into a segment a
 * policy kept (large_regrow) that has room for the block to grow further, copying it. Those
 * pages are in memory already, where a resize faults in every new page, and a fault costs
 * several times a copy of its bytes: a vector that doubles to 32 MiB again and again copied
 * this way faults in (a new vector's first few MiB) a fraction of what it would (all 32 MiB).
 */
static void *large_regrow(struct heap *heap, struct segment *seg, void *p, size_t size)
{
	size_t avail = seg->large_size;
	struct segment *to;
	void *q;

	if (heap == &sefer__heap_empty || size - avail < avail / 4 ||
	    !(to = policy_large_regrow(heap, size)))
		return NULL;
	q = large_hand_out(heap, to, size, false, SIZE_MAX);
	memcpy(q, p, annotate_live_bytes(p, avail));
	sefer_free_inline(p);
	return q;
}

/*
 * realloc of a large block seg holds, by a heap that may keep it (realloc_in): the block, in
 * place or moved, or NULL when the caller is to copy it.
 *  - a size it holds that is no less than the last request or than half the block: in place
 *    (so a block that got room to grow grows into it);
 *  - growing past it: large_regrow, else large_resize;
 *  - shrinking by more than half to a size that stays large: large_resize.
 */
static void *large_realloc(struct heap *heap, struct segment *seg, void *p, size_t size)
{
	size_t avail = seg->large_size;
	void *q;

	if (size <= avail && (size >= seg->large_req || size >= avail / 2)) {
		seg->large_req = size;
		annotate_block_resize(p, size, avail);
		return p;
	}
	if (size > sefer__os_info.max_request)
		return NULL; /* never backed: the caller's malloc fails with ENOMEM, p untouched */
	if (size > avail && (q = large_regrow(heap, seg, p, size)))
		return q;
	if (size > avail || size > SMALL_MAX)
		return large_resize(heap, seg, p, size);
	return NULL;
}

/* realloc from heap; with any_heap a block of another heap may stay where it is. */
static always_inline void *realloc_in(struct heap *heap, void *p, size_t size, bool any_heap)
{
	if (p && size == 0) {
		/* glibc's behaviour, which programs replacing it rely on: free and return NULL. */
		sefer_free_inline(p);
		return NULL;
	}
	/* the thread's first call: heap_empty's direct table is not to be read (core/heap.h) */
	if (unlikely(heap == &sefer__heap_empty) && !(heap = heap_get_made()))
		return NULL;
	if (!p)
		return heap_malloc_inline(heap, size);
	struct page *pg = page_held_here(p);
	size_t avail;

	if (likely(pg)) {
		avail = pg->block_size;
	} else {
		struct segment *seg = segment_of(p);
		const char *why;
		bool freed;

		if (!segtab_contains(seg) && !(seg = sefer__aligned_segment_of(p))) {
			sefer__report_error("realloc", p, "not allocated by sefer");
			errno = EINVAL;
			return NULL;
		}
		/* a freed block or an inner pointer would be kept in place, or copied and freed */
		if ((why = sefer__block_not_held(seg, p, &freed))) {
			sefer__report_error(freed ? "realloc after free" : "invalid realloc", p,
					    why);
			errno = EINVAL;
			return NULL;
		}
		avail = usable_size_in(seg, p);
		if (!slot_has_page(seg, p) && (any_heap || block_of_heap(heap, p))) {
			void *q = large_realloc(heap, seg, p, size);

			if (q)
				return q;
		}
	}

	/* In place when it fits and would not waste more than half the block. */
	if (size <= avail && size >= avail / 2 && (any_heap || block_of_heap(heap, p))) {
		annotate_block_resize(p, size, avail);
		return p;
	}
	struct heap *home = heap_get();
	void *q = heap_malloc_inline(heap, size);

	if (!q)
		return NULL;
	avail = annotate_live_bytes(p, avail); /* with ASan: only what the program was given */
	memcpy(q, p, size < avail ? size : avail);
	/* The malloc may have switched the thread to a parked heap (heap_switch): pg is then
	 * another heap's, freed into as any thread does. */
	if (likely(pg) && likely(page_fast_open(pg)) && likely(home == heap_get()))
		free_held_block(pg, p, true); /* page_held_here() made the free fast path's tests */
	else
		sefer_free_inline(p);
	return q;
}

void *sefer__realloc_any(void *p, size_t size)
{
	return realloc_in(heap_get(), p, size, true);
}

void *sefer__heap_realloc(struct heap *heap, void *p, size_t size)
{
	return realloc_in(heap, p, size, false);
}

/*
 * Aligned allocation without waste beyond the alignment. Spans start on sefer-page
 * boundaries, and a size class that is a multiple of `align` keeps every block aligned; the
 * class of align_up(size, align) always is one (see Documentation/architecture.rst), so small
 * requests need no interior pointers. Larger alignments get a large segment whose block is
 * placed at an aligned offset; every power of two up to MAX_ALIGN is served, from SEGMENT_SIZE
 * up by a reservation aligned to it (align.h).
 */
void *sefer__heap_aligned(struct heap *heap, size_t align, size_t size)
{
	if (is_pow2(align) && align <= GRANULE)
		return heap_malloc_inline(heap, size);
	if (!is_pow2(align) || align > MAX_ALIGN || size > PTRDIFF_MAX) {
		errno = is_pow2(align) ? ENOMEM : EINVAL;
		return NULL;
	}
	size_t n = align_up(size ? size : 1, align);

	if (n <= SMALL_MAX && align <= SPAGE_SIZE) {
		void *p = heap_malloc_inline(heap, n);

		annotate_block_trim(p, size, n);
		return p;
	}
	if (heap == &sefer__heap_empty && !(heap = sefer__heap_init_thread())) {
		errno = ENOMEM;
		return NULL;
	}
	return sefer__large_alloc(heap, size ? size : 1, align, false);
}

void *sefer__aligned_any(size_t align, size_t size)
{
	struct heap *heap = heap_get_made();

	return heap ? sefer__heap_aligned(heap, align, size) : NULL;
}
