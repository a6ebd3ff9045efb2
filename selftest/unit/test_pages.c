// SPDX-License-Identifier: MIT
/*
 * Page queues: a full page that gets a block back goes to the back of its bin queue, so the
 * next malloc does not take that one block and send the page straight back to the full queue
 * (the full/unfull ping-pong that cost larson with thread rounds a third of its cycles).
 * Every block stays accounted for through full -> unfull -> full again.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/block.h"
#include "core/heap.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/span.h"
#include "sefer/os.h"
#include "unit.h"

#define SIZE 896 /* a direct-table class no other test here uses */
#define MAXB 1024

static void *blk[MAXB];

static bool live_twice(size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (blk[i] && blk[i] == blk[j])
				return true;
	return false;
}

START_TEST(unfull_goes_to_the_back)
{
	if (IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return; /* the magazine keeps the freed block: the page stays full */
	struct heap *heap;
	struct page_queue *q;
	struct page *a = NULL, *front;
	unsigned bin = bin_index(SIZE);
	size_t n = 0, slot = (SIZE + GRANULE - 1) >> GRANULE_SHIFT, ai = 0;

	/* Fill pages of the class until three of them are full and a fourth serves. */
	for (int full = 0; full < 3 && n < MAXB; n++) {
		blk[n] = sefer_malloc(SIZE);
		ck_assert_ptr_nonnull(blk[n]);
		memset(blk[n], (int)n, SIZE);
		heap = heap_get();
		full = 0;
		for (struct page *pg = heap->full.first; pg; pg = pg->next)
			full += pg->bin == bin;
	}
	heap = heap_get();
	q = &heap->bins[bin];
	front = q->first;
	ck_assert_ptr_nonnull(front);
	ck_assert_ptr_eq(heap->direct[slot], front);
	/* a block of a full page */
	for (size_t i = 0; i < n && !a; i++) {
		struct page *pg = page_of(segment_of(blk[i]), blk[i]);

		if (pg->flags & PAGE_FULL) {
			a = pg;
			ai = i;
		}
	}
	ck_assert_ptr_nonnull(a);
	sefer_free(blk[ai]);
	blk[ai] = NULL;
	/* unfull: out of the full queue, at the back of the bin queue, not served next */
	ck_assert(!(a->flags & PAGE_FULL));
	ck_assert_ptr_eq(q->last, a);
	ck_assert_ptr_eq(q->first, front);
	ck_assert_ptr_eq(heap->direct[slot], front);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	/* the front page serves until it is full; only then does the freed block come back */
	size_t from_front = 0;
	bool got_a = false;

	for (size_t k = 0; k < 200 && !got_a; k++) {
		void *p = sefer_malloc(SIZE);
		struct page *pg = page_of(segment_of(p), p);

		ck_assert_ptr_nonnull(p);
		got_a = pg == a;
		if (!got_a) {
			ck_assert_ptr_eq(pg, front);
			from_front++;
		}
		ck_assert_uint_lt(n, MAXB);
		blk[n++] = p;
	}
	ck_assert(got_a);
	ck_assert_uint_gt(from_front, 0);
	ck_assert(front->flags & PAGE_FULL);
	/* a is full again with every block accounted for */
	ck_assert(a->flags & PAGE_FULL || a->free == NULL);
	ck_assert(!live_twice(n));
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (size_t i = 0; i < n; i++)
		sefer_free(blk[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A page behind the page being carved serves before a carve when it has at least as many free
 * blocks as a carve makes: a heap touches no fresh memory while it holds free blocks (randpos
 * and threadgen peaked 4-13% higher carving their front page to the end). With fewer it waits
 * behind (unfull_goes_to_the_back). In a first-class heap of its own: no earlier test's pages.
 */
START_TEST(free_blocks_behind_serve_before_a_carve)
{
#if IS_ENABLED(CONFIG_HEAPS)
	if (IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return; /* the magazine keeps freed blocks */
	struct sefer_heap *h = sefer_heap_new();
	struct heap *heap = (struct heap *)h;
	struct page_queue *q = &heap->bins[bin_index(SIZE)];
	struct page *a, *b;
	size_t n = 0, left = 0;
	void *p;

	ck_assert_ptr_nonnull(h);
	/* page a full; page b carving in front of it, its free list used up */
	blk[n++] = sefer_heap_malloc(h, SIZE);
	a = q->first;
	ck_assert_ptr_nonnull(a);
	while (n < MAXB && (q->first == a || q->first->free))
		blk[n++] = sefer_heap_malloc(h, SIZE);
	b = q->first;
	ck_assert_ptr_ne(a, b);
	ck_assert(a->flags & PAGE_FULL);
	ck_assert(!b->free && b->reserved < b->capacity);
	/* a gets all its blocks back but one (so it stays): it goes behind b */
	for (size_t i = 0; i < n; i++) {
		if (page_of(segment_of(blk[i]), blk[i]) != a)
			continue;
		if (left++ == 0)
			continue;
		sefer_free(blk[i]);
		blk[i] = NULL;
	}
	ck_assert_ptr_eq(q->first, b);
	ck_assert_ptr_eq(q->last, a);
	ck_assert_uint_eq(page_used(a), 1);
	p = sefer_heap_malloc(h, SIZE);
	ck_assert_ptr_eq(page_of(segment_of(p), p), a);
	ck_assert(!b->free); /* nothing carved */
	sefer_free(p);
	for (size_t i = 0; i < n; i++)
		sefer_free(blk[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
#endif
}
END_TEST

/* Many rounds of full -> one free -> full: no block handed out twice, none lost. */
START_TEST(full_unfull_churn_accounted)
{
	size_t n = 0;

	for (; n < 400; n++) {
		blk[n] = sefer_malloc(SIZE);
		((uint32_t *)blk[n])[4] = (uint32_t)n;
	}
	for (int round = 0; round < 20000; round++) {
		size_t i = ((size_t)round * 7919) % n;

		ck_assert_uint_eq(((uint32_t *)blk[i])[4], (uint32_t)i);
		sefer_free(blk[i]);
		blk[i] = sefer_malloc(SIZE);
		ck_assert_ptr_nonnull(blk[i]);
		((uint32_t *)blk[i])[4] = (uint32_t)i;
		if (round % 5000 == 0) {
			ck_assert(!live_twice(n));
			ck_assert_uint_eq(sefer_check_heap(), 0);
		}
	}
	for (size_t i = 0; i < n; i++)
		sefer_free(blk[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A page carves its blocks an OS page at a time (one block when a block is bigger): a class
 * a thread uses for a few blocks commits a page of memory, not four (mstress, with 40-odd
 * classes in use, peaked at 1.11x mimalloc's RSS carving 16 KiB at a time, 1.04x at 4 KiB).
 */
static void *first_blocks(void *arg)
{
	static const size_t sizes[] = { 16, 48, 200, 1000, 2048, 3000, 6000, 40000 };

	(void)arg;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = sefer_malloc(sizes[i]);
		struct page *pg = page_of(segment_of(p), p);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_ge(pg->reserved, 1);
		ck_assert_uint_eq(pg->warm_slots, 0); /* nothing dirty: no warm carve */
		/* (used may be more than 1: a policy's magazine keeps freed blocks counted) */
		ck_assert(pg->reserved == 1 || (size_t)pg->reserved * pg->block_size <= 4096);
		sefer_free(p);
	}
	return NULL;
}

/* Run fn in a new thread: a fresh heap, whose first block of each class comes from a new page. */
static void in_fresh_heap(void *(*fn)(void *))
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

START_TEST(carve_one_os_page)
{
	in_fresh_heap(first_blocks);
}
END_TEST

/*
 * used counts the blocks handed out: malloc increments it, a local free pushes the block onto
 * the page's free list (the next malloc of the class takes it back, warm) and decrements it,
 * so used + the free list's length == reserved at every step, and the free that takes used to
 * 0 sees the page empty (page_emptied); the slow paths give an empty page back. The page here
 * is its queue's first: where that page is uncounted (core/block.h) the figure is the walk
 * (page_used), used + length == reserved holds by construction, and what is tested of used
 * itself is that each local free counts it down, from UNCOUNTED_BASE, and malloc does not.
 */
static void *used_counts_handed_out(void *arg)
{
	unsigned bin = bin_index(64);
	struct heap *heap;
	struct page *pg;
	uint32_t used[3], carved[3], reserved[3], raw[3];
	bool same_page = true, lifo, zeroed = true, uncounted;
	void *p[10], *again;

	/*
	 * Measured first, asserted after: the test binary's malloc is sefer's, and Check's
	 * assertions allocate and free (so does the C library in a new thread, before this runs:
	 * its blocks of this class may be live).
	 */
	(void)arg;
	p[0] = sefer_malloc(64);
	heap = heap_get();
	pg = page_of(segment_of(p[0]), p[0]);
	used[0] = page_used(pg);
	carved[0] = page_used(pg) + page_free_len(pg);
	reserved[0] = pg->reserved;
	raw[0] = pg->used;
	uncounted = pg->uncounted;
	for (int i = 1; i < 10; i++) {
		p[i] = sefer_malloc(64);
		same_page &= page_of(segment_of(p[i]), p[i]) == pg;
	}
	used[1] = page_used(pg);
	carved[1] = page_used(pg) + page_free_len(pg);
	reserved[1] = pg->reserved;
	raw[1] = pg->used;
	/* LIFO: the block freed last comes back first; and dirty, it comes back zeroed by calloc
	 * although the page's never-used blocks read as zero (is_zero) */
	memset(p[5], 0xa5, 64);
	sefer_free(p[5]);
	again = sefer_calloc(1, 64);
	lifo = again == p[5];
	for (int i = 0; i < 64; i++)
		zeroed &= ((unsigned char *)again)[i] == 0;
	p[5] = again;
	for (int i = 0; i < 10; i++)
		sefer_free(p[i]);
	used[2] = page_used(pg);
	carved[2] = page_used(pg) + page_free_len(pg);
	reserved[2] = pg->reserved;
	raw[2] = pg->used;

	ck_assert(same_page);
	ck_assert_uint_eq(uncounted, PAGE_FIRST_UNCOUNTED); /* the first page */
	ck_assert_uint_eq(used[1], used[0] + 9); /* malloc counts */
	if (uncounted) {
		ck_assert_uint_eq(raw[1], raw[0]);	/* malloc leaves used alone */
		if (raw[1] > 11 && !policy_keeps_small_blocks())
			ck_assert_uint_eq(raw[2], raw[1] - 11); /* each of 11 local frees counts */
	}
	for (int i = 0; i < 3; i++)
		ck_assert_uint_eq(carved[i], reserved[i]);
	ck_assert_msg(lifo, "the block freed last is not the next one handed out");
	ck_assert_msg(zeroed, "calloc handed out a freed block without clearing it");
	ck_assert_uint_eq(sefer_check_heap(), 0);
	if (policy_keeps_small_blocks())
		return NULL; /* a magazine holds them, counted */
	ck_assert_uint_eq(used[2], used[0] - 1); /* free counts */
	if (used[0] != 1)
		return NULL; /* the C library's blocks of this class are live */
	ck_assert_uint_eq(used[2], 0); /* so the free fast path saw the page empty */
	ck_assert_ptr_eq(heap->bins[bin].first, pg);
	sefer_collect(false);
	struct page *first = heap->bins[bin].first;
	struct page *direct = heap->direct[(64 + GRANULE - 1) >> GRANULE_SHIFT];

	ck_assert_ptr_null(first); /* given back */
	ck_assert_ptr_eq(direct, &sefer__page_empty);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(used_counts_blocks_handed_out)
{
	in_fresh_heap(used_counts_handed_out);
}
END_TEST

/*
 * With CONFIG_DEBUG_DOUBLE_FREE a page whose blocks read as zero (is_zero) has fast_limit 0, so
 * the free fast path needs no test of is_zero: the page's first free goes to free_slow(), which
 * clears is_zero and opens the fast path (page_clear_zero). A class of its own, carved in this
 * fresh heap; its span is fresh memory unless an earlier test's dirty one was reused.
 */
static void *fresh_page_first_free(void *arg)
{
	void *p = sefer_malloc(1536), *q = sefer_malloc(1536);
	struct page *pg = page_of(segment_of(p), p);
	bool was_zero = pg->is_zero;

	(void)arg;
	ck_assert_ptr_eq(page_of(segment_of(q), q), pg);
	ck_assert_uint_eq(pg->fast_limit, page_fast_limit(pg));
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE) && was_zero) {
		ck_assert_uint_eq(pg->fast_limit, 0);
		ck_assert(!block_fast_freeable(pg, p));
	}
	sefer_free(p);
	ck_assert(!pg->is_zero);
	ck_assert_uint_eq(pg->fast_limit, page_fast_limit(pg));
	ck_assert_uint_ne(pg->fast_limit, 0);
	ck_assert(block_fast_freeable(pg, q)); /* the next free takes the fast path */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_free(q);
	return NULL;
}

START_TEST(fresh_page_first_free_opens_fast_path)
{
	in_fresh_heap(fresh_page_first_free);
}
END_TEST

/*
 * An exiting thread's page that keeps live blocks stays as it is, free list included, with
 * used its exact live count: every later look at the abandoned segment (each global purge
 * collects its cross-thread frees and asks whether a page emptied) costs O(1) per page. A page
 * the exit finds empty is given back (test_generations.c: partial_pages_taken_over).
 */
static void *leave_live_blocks(void *arg)
{
	void **p = arg;

	for (int i = 0; i < 40; i++)
		p[i] = sefer_malloc(64);
	for (int i = 1; i < 40; i += 2)
		sefer_free(p[i]); /* 20 back on the free list, 20 live */
	return NULL;
}

START_TEST(abandoned_pages_count_live)
{
	void *p[40];
	pthread_t t;
	struct page *pg;
	bool abandoned;
	uint32_t used, nfree, reserved;

	ck_assert_int_eq(pthread_create(&t, NULL, leave_live_blocks, p), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* measured first (Check allocates), asserted after */
	pg = page_of(segment_of(p[0]), p[0]);
	abandoned = atomic_load(&segment_of(p[0])->owner) == NULL;
	used = page_used(pg);
	nfree = page_free_len(pg);
	reserved = pg->reserved;
	ck_assert_msg(abandoned, "the exited thread's segment is abandoned");
	ck_assert_uint_eq(used + nfree, reserved);
	ck_assert_uint_ge(nfree, 20);
	/* ours, the C library's own blocks of this class, and a magazine's (counted) */
	ck_assert_uint_ge(used, 20);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 0; i < 40; i += 2)
		sefer_free(p[i]);
}
END_TEST

/*
 * Borrowing (page.c, page_borrow): a class above the direct table with no free block takes a
 * free block of the next two classes before it carves or maps, the nearest first, only one
 * as aligned as its own blocks, and never for the direct table's classes.
 */
#define B10K 10240 /* classes 10, 12, 14 and 16 KiB: no other test here uses them */
#define B12K 12288
#define B14K 14336

static void *borrow_blocks(void *arg)
{
	void *a, *b, *p, *c, *d, *lender, *small, *big;
	size_t usable_p;
	bool c_aligned;

	(void)arg;
	a = sefer_malloc(B14K); /* the 14 KiB span's first block: 64 KiB aligned */
	b = sefer_malloc(B14K); /* its second, at 14 KiB: 2 KiB aligned only */
	sefer_free(b);
	p = sefer_malloc(B10K); /* no 10 or 12 KiB page: borrows b */
	usable_p = sefer_usable_size(p);
	sefer_free(p);
	c = sefer_aligned_alloc(4096, B12K); /* 12 KiB blocks are 4 KiB aligned: b is not */
	c_aligned = (uintptr_t)c % 4096 == 0;
	sefer_free(c); /* the 12 KiB page's only block: the page stays, first in its queue */
	d = sefer_malloc(B10K - 100); /* 10 KiB: the 12 KiB page is nearer than the 14 KiB one */
	lender = sefer_malloc(1024);
	sefer_free(lender);	      /* a free 1 KiB block (its page stays, empty) ... */
	small = sefer_malloc(896);    /* ... not lent to 896 B, a class of the direct table */
	big = sefer_malloc(B14K);     /* 14 KiB itself: b, back on its own free list */

	ck_assert_ptr_eq(p, b);
	ck_assert_uint_eq(usable_p, B14K);
	ck_assert_ptr_ne(c, b);
	ck_assert(c_aligned);
	ck_assert_ptr_eq(d, c);
	ck_assert_ptr_ne(small, lender);
	ck_assert_uint_eq(sefer_usable_size(small), 896);
	ck_assert_ptr_eq(big, b);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_free(a);
	sefer_free(big);
	sefer_free(d);
	sefer_free(small);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(borrow_from_larger_class)
{
	if (policy_keeps_small_blocks())
		return; /* a magazine keeps the freed blocks: none is on a page's free list */
	in_fresh_heap(borrow_blocks);
}
END_TEST

/*
 * A span that takes slots an earlier span carved to their end (dirty, not purged since: still
 * resident) carves up to 16 KiB at once (page_extend's WARM_CARVE_BYTES); one on fresh slots
 * carves one OS page. Page a of 1 KiB blocks is filled and emptied while an emptied page of
 * the class (b) is kept at the queue's front, so a's span is freed: its slot is dirty and
 * warm. The next new span, of 896 B blocks (73 to a span, no tail purge), takes it, dirty
 * slots first, and carves 18 blocks; then one of 768 B blocks takes a fresh slot and carves 5.
 */
#define WARM_A 1024
#define WARM_B 896 /* blocks of a direct-table class no other test of this thread uses */
#define WARM_C 768

static void *warm_span_carve(void *arg)
{
	static void *held[128];
	struct page *a, *pg;
	struct segment *seg;
	uint8_t *a_start;
	unsigned slot;
	size_t n;
	void *y, *p, *q;

	(void)arg;
	held[0] = sefer_malloc(WARM_A);
	ck_assert_ptr_nonnull(held[0]);
	a = page_of(segment_of(held[0]), held[0]);
	seg = segment_of(held[0]);
	ck_assert_uint_eq(a->warm_slots, 0); /* the heap's first span: fresh slots */
	for (n = 1; n < 128; n++) {
		held[n] = sefer_malloc(WARM_A);
		ck_assert_ptr_nonnull(held[n]);
		if (page_of(segment_of(held[n]), held[n]) != a)
			break;
	}
	ck_assert_uint_lt(n, 128);
	ck_assert_uint_eq(a->reserved, a->capacity); /* carved to its end */
	ck_assert_uint_lt(a->capacity, TAIL_MIN_BLOCKS);
	y = held[n];
	a_start = page_start(a);
	sefer_free(y); /* b empties first: kept at the front */
	for (size_t i = 0; i < n; i++)
		sefer_free(held[i]); /* a empties behind it: kept (page_retire) */
	ck_assert_uint_eq(page_used(a), 0);
	/* given back as page_retire() gives back a page past the bin's kept bytes */
	sefer__queue_remove(&heap_get()->bins[a->bin], a);
	sefer__span_free(&heap_get()->segments, a);
	slot = (unsigned)((size_t)(a_start - (uint8_t *)seg) >> SPAGE_SHIFT);
	ck_assert(seg->free_pages & seg->dirty_pages & seg->warm_pages & (1ULL << slot));

	p = sefer_malloc(WARM_B);
	ck_assert_ptr_nonnull(p);
	pg = page_of(segment_of(p), p);
	ck_assert_ptr_eq(page_start(pg), a_start);
	ck_assert_uint_eq(pg->warm_slots, 1);
	ck_assert_uint_eq(pg->reserved, (16 << 10) / WARM_B);

	q = sefer_malloc(WARM_C);
	ck_assert_ptr_nonnull(q);
	pg = page_of(segment_of(q), q);
	ck_assert_uint_eq(pg->warm_slots, 0);
	ck_assert_uint_eq(pg->reserved, 4096 / WARM_C);
	sefer_free(p);
	sefer_free(q);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(warm_span_carves_more)
{
	uint64_t delay = sefer__opt.purge_delay_ms;

	if (policy_keeps_small_blocks() || IS_ENABLED(CONFIG_HARDENED))
		return; /* a magazine keeps freed blocks (a never empties); hardened carves 4 KiB */
	if (SPAGE_SIZE / WARM_B >= TAIL_MIN_BLOCKS)
		return; /* pages of 256 KiB and up: these spans' tails are purged, no warm carve */
	/* the fixture leaves nothing dirty; no purge by deadline while the test runs */
	sefer__opt.purge_delay_ms = 60000;
	in_fresh_heap(warm_span_carve);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * realloc's copy frees its old block through the free fast path's sequence (core/alloc.h:
 * free_held_block); a page it empties that is not the first of its bin queue must be retired
 * as any emptied page: kept at the back of the queue (page_retire), which serves it before it
 * carves. Page a fills, b serves the next block, a gets blocks back (to the back of the queue,
 * behind b) but one, which realloc moves to another class.
 */
#define RETIRE_SIZE 720 /* a direct-table class no other test here uses */

static void *realloc_copy_retire(void *arg)
{
	enum { N = 4096 };
	static void *held[N];
	struct page *a, *b;
	size_t n;
	void *q, *r;

	(void)arg;
	held[0] = sefer_malloc(RETIRE_SIZE);
	ck_assert_ptr_nonnull(held[0]);
	a = page_of(segment_of(held[0]), held[0]);
	for (n = 1; n < N; n++) {
		held[n] = sefer_malloc(RETIRE_SIZE);
		ck_assert_ptr_nonnull(held[n]);
		if (page_of(segment_of(held[n]), held[n]) != a)
			break;
	}
	ck_assert_uint_lt(n, N);
	b = page_of(segment_of(held[n]), held[n]);
	for (size_t i = 1; i < n; i++)
		sefer_free(held[i]);
	ck_assert_ptr_eq(heap_get()->bins[a->bin].first, b);
	memset(held[0], 0x5a, RETIRE_SIZE);
	q = sefer_realloc(held[0], 4 * RETIRE_SIZE);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(((uint8_t *)q)[RETIRE_SIZE - 1], 0x5a);
	ck_assert_uint_eq(page_used(a), 0);
	ck_assert_ptr_eq(heap_get()->bins[a->bin].first, b);
	ck_assert_ptr_eq(heap_get()->bins[a->bin].last, a); /* retired: kept at the back */
	r = sefer_malloc(RETIRE_SIZE);
	ck_assert_ptr_eq(page_of(segment_of(r), r), b); /* b still has blocks to carve */
	sefer_free(r);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_free(q);
	sefer_free(held[n]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(realloc_copy_retires_a_page_behind)
{
	if (policy_keeps_small_blocks())
		return; /* a magazine keeps the freed block: the page does not empty */
	in_fresh_heap(realloc_copy_retire);
}
END_TEST

/*
 * Kept empty pages (core/page.c, page_retire): a bin keeps the pages that empty behind its first
 * page at the back of its queue, up to KEPT_EMPTY_BYTES of them, carved, and serves the next
 * round from them; a page past the bound is given back. The pages of a class fill, the first
 * one empties first (and stays first), then the others in turn: KEPT_EMPTY_BYTES' worth stay
 * in the queue, the last two are given back, and a second round as large as the first page and
 * the kept ones holds takes no other page. A span taken for another bin then gives the kept
 * pages back, all but the one that is first by then.
 */
#define KEPT_SIZE 600 /* the 640-byte class, which no other test here uses */
#define KEPT_MAX_PAGES 64

static bool queue_holds(const struct page_queue *q, const struct page *pg)
{
	for (const struct page *t = q->first; t; t = t->next)
		if (t == pg)
			return true;
	return false;
}

/*
 * Fill want pages of size's class whole, from a fresh heap: held[] gets the blocks (at most
 * max), pages[] the pages in the order they filled. Returns how many blocks. The last page
 * filled is its bin's first, with no free block left; the others are in the full queue.
 */
static size_t fill_pages(size_t size, void **held, size_t max, struct page **pages, size_t want)
{
	size_t n = 0, np = 0;

	for (;;) {
		struct page *pg;

		ck_assert_uint_lt(n, max);
		held[n] = sefer_malloc(size);
		ck_assert_ptr_nonnull(held[n]);
		pg = page_of(segment_of(held[n]), held[n]);
		if (!np || pg != pages[np - 1]) {
			ck_assert_uint_lt(np, want);
			pages[np++] = pg;
		}
		n++;
		if (np == want && !pg->free && pg->reserved == pg->capacity)
			return n;
	}
}

static void *kept_empty_round(void *arg)
{
	enum { N = 8192 };
	static void *held[N];
	struct page *pages[KEPT_MAX_PAGES];
	struct page_queue *q;
	size_t n, want, keep;
	void *x;

	(void)arg;
	keep = KEPT_EMPTY_BYTES / ((size_t)bin_span_pages(bin_index(KEPT_SIZE)) << SPAGE_SHIFT);
	want = keep + 3; /* the first page, the kept ones, two to give back */
	ck_assert_uint_le(want, KEPT_MAX_PAGES);
	n = fill_pages(KEPT_SIZE, held, N, pages, want);
	q = &heap_get()->bins[pages[0]->bin];
	ck_assert_ptr_eq(q->first, pages[want - 1]);
	/* the first page empties first, then the others in the order they filled */
	for (size_t i = 0; i < n; i++)
		if (page_of(segment_of(held[i]), held[i]) == pages[want - 1]) {
			sefer_free(held[i]);
			held[i] = NULL;
		}
	ck_assert_uint_eq(page_used(pages[want - 1]), 0);
	ck_assert_ptr_eq(q->first, pages[want - 1]);
	for (size_t i = 0; i < n; i++)
		if (held[i]) {
			sefer_free(held[i]);
			held[i] = NULL;
		}
	for (size_t p = 0; p < keep; p++) {
		ck_assert_msg(queue_holds(q, pages[p]), "kept page %zu of %zu given back", p, keep);
		ck_assert_uint_eq(page_used(pages[p]), 0);
		ck_assert_uint_eq(pages[p]->reserved, pages[p]->capacity); /* still carved */
	}
	ck_assert(!queue_holds(q, pages[keep]));
	ck_assert(!queue_holds(q, pages[keep + 1]));
	ck_assert_uint_eq(pages[keep]->span, 0); /* its slots are free */
	ck_assert_uint_eq(pages[keep + 1]->span, 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	/* a second round as large as the first page and the kept ones serves from them alone */
	n = (keep + 1) * pages[0]->capacity;
	ck_assert_uint_le(n, N);
	for (size_t i = 0; i < n; i++) {
		struct page *pg;
		bool kept = false;

		held[i] = sefer_malloc(KEPT_SIZE);
		ck_assert_ptr_nonnull(held[i]);
		pg = page_of(segment_of(held[i]), held[i]);
		for (size_t p = 0; p < keep; p++)
			kept |= pg == pages[p];
		ck_assert_msg(kept || pg == pages[want - 1],
			      "block %zu of the second round from a page not kept", i);
	}
	for (size_t i = 0; i < n; i++)
		sefer_free(held[i]);
	for (size_t p = 0; p < keep; p++)
		ck_assert(queue_holds(q, pages[p])); /* kept again */
	/* a span taken for another bin gives them back first (page_give_back_kept) */
	x = NULL;
	for (size_t sz = 2 * DIRECT_MAX; !x && sz <= SMALL_MAX / 2; sz += sz / 4) {
		struct heap *heap = heap_get();
		unsigned b = bin_index(sz);

		if (heap->bins[b].first || (b + 1 < NBINS && heap->bins[b + 1].first) ||
		    (b + 2 < NBINS && heap->bins[b + 2].first))
			continue; /* a page of its own, or one to borrow from */
		struct page *first = q->first;

		x = sefer_malloc(sz);
		ck_assert_ptr_nonnull(x);
		for (size_t p = 0; p < keep; p++)
			ck_assert_msg(pages[p] == first || !queue_holds(q, pages[p]),
				      "kept page %zu not given back", p);
		ck_assert_ptr_eq(q->first, first); /* the first page stays */
		ck_assert_ptr_eq(q->last, first);  /* and nothing behind it */
	}
	ck_assert_msg(x != NULL, "no bin without pages to take a span for");
	sefer_free(x);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(empty_pages_kept_then_given_back)
{
	uint64_t delay = sefer__opt.purge_delay_ms;

	if (policy_keeps_small_blocks())
		return; /* a magazine keeps the freed blocks: the pages do not empty */
	/* kept pages go back a purge delay after the first keep (kept_pages_expire tests that):
	 * under valgrind the rounds take longer than the default 50 ms */
	sefer__opt.purge_delay_ms = 60000;
	in_fresh_heap(kept_empty_round);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * page_retire() walks only the empty pages at the back of a bin queue (at most KEPT_SCAN_PAGES),
 * never the pages in use ahead of them, so a long queue neither costs a walk at each retire (a
 * phase that frees a large heap in a random order empties thousands of pages of one bin) nor
 * keeps an emptied page from being kept. The pages of a class fill, each but the first gets all
 * its blocks back but one (back into the bin queue, behind the first), the first empties, and
 * then the next page to empty is kept at the back, behind KEPT_SCAN_PAGES + 1 pages in use.
 */
#define LONG_SIZE 400 /* the 448-byte class, which no other test here uses */

static void *long_queue_round(void *arg)
{
	enum { N = 16384 };
	static void *held[N];
	struct page *pages[KEPT_SCAN_PAGES + 3], *first, *pg;
	struct page_queue *q;
	size_t n, want = KEPT_SCAN_PAGES + 3;

	(void)arg;
	n = fill_pages(LONG_SIZE, held, N, pages, want);
	first = pages[want - 1];
	q = &heap_get()->bins[first->bin];
	ck_assert_ptr_eq(q->first, first);
	/* every page but the first keeps its last block; the first empties */
	for (size_t i = 0; i + 1 < n; i++) {
		pg = page_of(segment_of(held[i]), held[i]);
		if (pg == first || page_of(segment_of(held[i + 1]), held[i + 1]) == pg) {
			sefer_free(held[i]);
			held[i] = NULL;
		}
	}
	sefer_free(held[n - 1]);
	held[n - 1] = NULL;
	ck_assert_uint_eq(page_used(first), 0);
	ck_assert_ptr_eq(q->first, first);
	ck_assert_uint_eq(page_used(pages[0]), 1);
	ck_assert(queue_holds(q, pages[0]));
	for (size_t i = 0; i < n; i++)
		if (held[i] && page_of(segment_of(held[i]), held[i]) == pages[0]) {
			sefer_free(held[i]);
			held[i] = NULL;
		}
	ck_assert_msg(q->last == pages[0], "a page not kept behind a queue of %zu pages",
		      want - 1);
	ck_assert_uint_eq(page_used(pages[0]), 0);
	ck_assert_uint_eq(pages[0]->reserved, pages[0]->capacity); /* kept carved */
	for (size_t i = 0; i < n; i++)
		sefer_free(held[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(long_queue_keeps_nothing)
{
	if (policy_keeps_small_blocks())
		return; /* a magazine keeps the freed blocks: the pages do not empty */
	in_fresh_heap(long_queue_round);
}
END_TEST

/*
 * Kept pages expire (core/page.c, sefer__heap_heartbeat): a purge delay after the first of them
 * was kept, the owner's slow paths that take no span give them back, their slots dirty. A class
 * (the churn's) gets its page first; then two pages of another empty behind its empty first
 * page and are kept; a run of malloc and free of one block of the churn's class, whose page
 * takes a slow call at each free (page_retire: it empties) or, uncounted, at every
 * UNCOUNTED_BASE-th, leaves them before the deadline and gives them back after.
 */
#define EXPIRE_SIZE 200   /* the 224-byte class, which no other test here uses */
#define EXPIRE_CHURN 1200 /* the 1,280-byte class, likewise */

static void churn_one_block(void)
{
	/* an uncounted first page takes the slow call once per UNCOUNTED_BASE frees (block.h) */
	unsigned frees_per_call = PAGE_FIRST_UNCOUNTED ? UNCOUNTED_BASE : 1;

	for (unsigned k = 0; k < 2 * PURGE_BEAT * frees_per_call; k++) {
		void *p = sefer_malloc(EXPIRE_CHURN);

		ck_assert_ptr_nonnull(p);
		sefer_free(p);
	}
}

static void *kept_expire_round(void *arg)
{
	enum { N = 2048 };
	static void *held[N];
	struct page *pages[3];
	struct segment_set *set;
	struct page_queue *q;
	struct timespec ts = { 0, 1000000 };
	uint64_t until, after;
	size_t n;
	bool before_kept;

	(void)arg;
	sefer_free(sefer_malloc(EXPIRE_CHURN)); /* the churn's page: no span taken later */
	set = &heap_get()->segments; /* the thread's heap, made by that malloc */
	n = fill_pages(EXPIRE_SIZE, held, N, pages, 3);
	q = &heap_get()->bins[pages[0]->bin];
	for (size_t i = n; i-- > 0;) /* the last page filled (the first) empties first */
		sefer_free(held[i]);
	ck_assert(queue_holds(q, pages[0]) && queue_holds(q, pages[1]));
	until = set->kept_until;
	ck_assert_msg(until != 0, "a kept page sets the deadline");
	churn_one_block();
	after = sefer__os.clock_ms();
	before_kept = queue_holds(q, pages[0]) && queue_holds(q, pages[1]);
	if (after < until) /* the machine may stall past it: then there is no "before" */
		ck_assert_msg(before_kept, "kept pages given back before their deadline");
	while (sefer__os.clock_ms() < until)
		nanosleep(&ts, NULL);
	churn_one_block();
	ck_assert_msg(!queue_holds(q, pages[0]) && !queue_holds(q, pages[1]),
		      "kept pages still kept a delay after their deadline");
	ck_assert_uint_eq(pages[0]->span, 0); /* their slots are free */
	ck_assert_uint_eq(pages[1]->span, 0);
	ck_assert_ptr_eq(q->first, pages[2]); /* the first page stays */
	ck_assert_uint_eq(set->kept_until, 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(kept_pages_expire)
{
	uint64_t delay = sefer__purge_delay(NULL);

	if (policy_keeps_small_blocks() || !IS_ENABLED(CONFIG_DECOMMIT) || !delay || delay > 1000)
		return; /* pages do not empty; nothing expires; or given back at once */
	in_fresh_heap(kept_expire_round);
}
END_TEST

/*
 * The direct table serves sizes up to DIRECT_MAX (core/bins.h), the thread's TLS copy the first
 * DIRECT_TLS_SLOTS of them: for sizes above the copy, the heap's own slot must follow its bin's
 * first page as pages fill and new ones take over (malloc_generic_default pops from it), and
 * sefer_check_heap() checks every slot. A class of 3,000 B fills a page and then another.
 */
#define TABLE_SIZE 3000 /* the 3,072-byte class, which no other test here uses */

static void *direct_table_round(void *arg)
{
	enum { N = 256 };
	static void *held[N];
	struct heap *heap;
	struct page *first = NULL;
	size_t slot = (TABLE_SIZE + GRANULE - 1) >> GRANULE_SHIFT, pages = 0;

	(void)arg;
	ck_assert_uint_gt(TABLE_SIZE, DIRECT_TLS_MAX);
	ck_assert_uint_le(TABLE_SIZE, DIRECT_MAX);
	for (size_t i = 0; i < N && pages < 3; i++) {
		struct page *pg;

		held[i] = sefer_malloc(TABLE_SIZE);
		ck_assert_ptr_nonnull(held[i]);
		heap = heap_get();
		pg = page_of(segment_of(held[i]), held[i]);
		ck_assert_ptr_eq(pg, heap->bins[bin_index(TABLE_SIZE)].first);
		ck_assert_ptr_eq(heap->direct[slot], pg);
		if (pg != first) {
			first = pg;
			pages++;
		}
	}
	ck_assert_uint_eq(pages, 3); /* two pages filled, a third took over */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (size_t i = 0; i < N; i++)
		sefer_free(held[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(direct_table_above_the_tls_copy)
{
	if (policy_keeps_small_blocks())
		return; /* a magazine may serve the size first */
	in_fresh_heap(direct_table_round);
}
END_TEST

Suite *pages_suite(void)
{
	Suite *s = suite_create("pages");
	TCase *tc = tcase_create("queues");

	tcase_add_checked_fixture(tc, unit_fresh_state, NULL);
	tcase_add_test(tc, unfull_goes_to_the_back);
	tcase_add_test(tc, free_blocks_behind_serve_before_a_carve);
	tcase_add_test(tc, full_unfull_churn_accounted);
	tcase_add_test(tc, carve_one_os_page);
	tcase_add_test(tc, used_counts_blocks_handed_out);
	tcase_add_test(tc, fresh_page_first_free_opens_fast_path);
	tcase_add_test(tc, abandoned_pages_count_live);
	tcase_add_test(tc, borrow_from_larger_class);
	tcase_add_test(tc, realloc_copy_retires_a_page_behind);
	tcase_add_test(tc, warm_span_carves_more);
	tcase_add_test(tc, empty_pages_kept_then_given_back);
	tcase_add_test(tc, kept_pages_expire);
	tcase_add_test(tc, long_queue_keeps_nothing);
	tcase_add_test(tc, direct_table_above_the_tls_copy);
	suite_add_tcase(s, tc);
	return s;
}
