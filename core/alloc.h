/* SPDX-License-Identifier: MIT */
/*
 * The fast paths, inlined into both faces (sefer_* and the malloc family).
 *
 * malloc (size <= DIRECT_TLS_MAX): TLS copy of the heap's direct[size/16] -> page -> pop
 * page->free; up to DIRECT_MAX the heap's direct[size/16] (core/bins.h).
 * free: segment_of(p) -> thread's owned-segment cache hit ? page_of -> push page->free :
 *       slow path (segment table, cross-thread push, large object, full page, foreign).
 * No lock, no atomic read-modify-write, no indirect call: see the disassembly in
 * Documentation/architecture.rst. Everything else is in noinline functions.
 */
#ifndef SEFER_CORE_ALLOC_H
#define SEFER_CORE_ALLOC_H

#include "core/heap.h"
#include "core/segtab.h"

/* size first: it stays in the first argument register the fast path received it in */
SEFER_INTERNAL void *sefer__malloc_slow(size_t size, struct heap *heap, bool zero) noinline;
SEFER_INTERNAL void *sefer__malloc_generic(size_t size, struct heap *heap, bool zero) noinline;
/* The same two for the calling thread's default heap, which they load (sefer_malloc_inline). */
SEFER_INTERNAL void *sefer__malloc_slow_default(size_t size) noinline;
SEFER_INTERNAL void *sefer__malloc_generic_default(size_t size) noinline;
SEFER_INTERNAL void sefer__free_slow(void *p) noinline;
SEFER_INTERNAL void sefer__free_foreign(const void *p) noinline;
SEFER_INTERNAL const char *sefer__block_not_held(struct segment *seg, const void *p,
						 bool *is_double);
SEFER_INTERNAL void sefer__free_local_block(struct heap *heap, struct segment *seg, struct page *pg,
		      struct block *b);
SEFER_INTERNAL void *sefer__calloc_checked(size_t n, size_t size);
SEFER_INTERNAL void *sefer__realloc_any(void *p, size_t size);
SEFER_INTERNAL void *sefer__aligned_any(size_t align, size_t size);
/* The same from a given heap of the calling thread (core/heaps.c); heap_realloc moves a block
 * that is not heap's into it. */
SEFER_INTERNAL void *sefer__heap_calloc(struct heap *heap, size_t n, size_t size);
SEFER_INTERNAL void *sefer__heap_realloc(struct heap *heap, void *p, size_t size);
SEFER_INTERNAL void *sefer__heap_aligned(struct heap *heap, size_t align, size_t size);
SEFER_INTERNAL size_t sefer__usable_size_any(const void *p);
SEFER_INTERNAL void *sefer__large_alloc(struct heap *heap, size_t size, size_t align, bool zero);
SEFER_INTERNAL void sefer__large_free(struct segment *seg, void *p);
SEFER_INTERNAL void sefer__large_release(struct segment *seg);

/*
 * Pop b, pg's first free block, whose successor is next; the whole block becomes the program's
 * (core/annotate.h). pg is the first page of its bin queue, uncounted: no count (core/block.h;
 * memory-checker builds count every page). next is prefetched for the next pop's link load and
 * mark store: a block another CPU freed last is a miss there otherwise (Documentation/
 * benchmarks.rst).
 */
static always_inline void *alloc_from_page(struct heap *heap, struct page *pg, struct block *b,
					   struct block *next)
{
	prefetch_for_write(next);
	pg->free = next;
	if (!PAGE_FIRST_UNCOUNTED) /* else the page is its queue's first, uncounted (block.h) */
		pg->used++;
	block_clear_mark(b);
	heap_stat_call(heap, mallocs);
	annotate_block_alloc(b, pg->block_size);
	return b;
}

/* A small block a policy handed out (it was annotated free when the policy took it). */
static always_inline void *annotate_policy_alloc(void *p, size_t size)
{
	size_t bs = page_of(segment_of(p), p)->block_size;

	annotate_block_alloc(p, bs);
	annotate_block_trim(p, size, bs);
	return p;
}

/*
 * malloc's fast path from pg, the direct table's page for size: pop its first free block, or
 * take the slow path. heap is the table's heap; NULL stands for the calling thread's default
 * heap, which the fast path then never loads (the stats' counts aside).
 */
static always_inline void *direct_malloc(struct heap *heap, struct page *pg, size_t size)
{
	struct block *b = pg->free;

	if (likely(b)) {
		uintptr_t next = block_link(b);
		void *p;

		if (unlikely(block_link_bad(pg, b, next)))
			return sefer__list_corrupt(pg, b, next); /* aborts */
		p = alloc_from_page(heap ? heap : heap_get(), pg, b, (struct block *)next);
		annotate_block_trim(p, size, pg->block_size);
		return p;
	}
	return heap ? sefer__malloc_slow(size, heap, false) : sefer__malloc_slow_default(size);
}

static always_inline size_t direct_slot(size_t size)
{
	return (size + GRANULE - 1) >> GRANULE_SHIFT;
}

/* malloc from heap, the calling thread's (its default heap or one of its first-class ones). */
static always_inline void *heap_malloc_inline(struct heap *heap, size_t size)
{
	void *p = policy_small_alloc(heap, size);

	if (p)
		return annotate_policy_alloc(p, size);
	if (likely(size <= DIRECT_MAX))
		return direct_malloc(heap, heap->direct[direct_slot(size)], size);
	return sefer__malloc_generic(size, heap, false);
}

/*
 * malloc from the calling thread's default heap: its page from the TLS copy of the table; above
 * DIRECT_TLS_MAX, malloc_generic_default() pops from the heap's own table (a jump and the heap
 * pointer's load more, which the path up to DIRECT_TLS_MAX does not pay).
 */
static always_inline void *sefer_malloc_inline(size_t size)
{
	void *p = policy_small_alloc(heap_get(), size);

	if (p)
		return annotate_policy_alloc(p, size);
	if (likely(size <= DIRECT_TLS_MAX))
		return direct_malloc(NULL, sefer__direct[direct_slot(size)], size);
	return sefer__malloc_generic_default(size);
}

/*
 * The free fast path once its tests passed: b, a carved block start of pg (a page of the
 * calling thread's, not full) without its free or pending mark, goes back to its page, or to
 * the heap's policy. realloc's copy path frees its old block through here too, having made
 * those tests before it copied (page_held_here, page_fast_open).
 *
 * first_test (realloc's copy): an emptied page that is the first of the calling thread's
 * default heap's bin queue stays where it is, page_retire()'s first test, made here without
 * the call. A vector grown by doubling empties its old block's page at every realloc (the
 * page's one block), and that page is the first of its queue: 8 instructions per realloc,
 * 3% of vecgrow's CPU time (Documentation/benchmarks.rst). The free fast path leaves the
 * test to page_retire(): its budget (check-fastpath) has no room for it. Where the first page
 * is uncounted (block.h) its count running out is no emptying, and the call it asks for is
 * its heartbeat: no test.
 */
static always_inline void free_held_block(struct page *pg, struct block *b, bool first_test)
{
	struct heap *heap = heap_get();

	block_mark_free(b);
	annotate_block_free(b, pg->block_size);
	if (policy_small_free(heap, pg, b))
		return;
	heap_stat_call(heap, frees);
	if (page_free_push(pg, b, true) &&
	    (PAGE_FIRST_UNCOUNTED || !first_test || heap->bins[pg->bin].first != pg))
		sefer__page_emptied(pg); /* into seg's owner (heap, or first-class) */
}

static always_inline void sefer_free_inline(void *p)
{
	/* The thread's owned-segment cache (heap.h) proves p's segment is mapped and ours;
	 * anything else, NULL, foreign and misaligned pointers included, is sorted out by
	 * free_slow(). seg comes from p, not from the cache entry, so the page-map load does not
	 * wait for the entry's. The heap pointer is loaded only by what needs it (a policy, the
	 * call counters). */
	uintptr_t key = owned_key(p);

	if (likely(owned_entry(p) == key)) {
		struct segment *seg = (struct segment *)key;
		struct page *pg = page_of(seg, p);
		struct block *b = p;

		if (likely(block_fast_freeable(pg, b))) {
			free_held_block(pg, b, false);
			return;
		}
	}
	sefer__free_slow(p); /* not cached, full page, double free, another owner, large, foreign */
}

#endif
