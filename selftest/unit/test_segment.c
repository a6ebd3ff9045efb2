// SPDX-License-Identifier: MIT
/* Segment and page arithmetic on real allocations, and the segment table. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/heap.h"
#include "core/options.h"
#include "core/segment.h"
#include "core/segtab.h"
#include "sefer/os.h"
#include "unit.h"

START_TEST(segment_and_page_of)
{
	for (size_t size = 1; size <= SMALL_MAX; size = size * 3 / 2 + 1) {
		uint8_t *p = sefer_malloc(size);
		struct segment *seg = segment_of(p);
		struct page *pg = page_of(seg, p);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)seg % SEGMENT_SIZE, 0);
		ck_assert(segtab_contains(seg));
		ck_assert_uint_eq(seg->kind, SEG_SMALL);
		ck_assert_ptr_eq(atomic_load(&seg->owner), heap_get());
		ck_assert_uint_ge(pg->index, META_PAGES);
		ck_assert_uint_eq((uintptr_t)pg->start, (uintptr_t)seg + ((size_t)pg->index << SPAGE_SHIFT));
		ck_assert(p >= pg->start && p < pg->start + page_span_bytes(pg));
		ck_assert_uint_eq((size_t)(p - pg->start) % pg->block_size, 0);
		ck_assert_uint_eq(pg->block_size, bin_block_size(bin_index(size)));
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		sefer_free(p);
	}
}
END_TEST

START_TEST(large_segment_layout)
{
	size_t size = (size_t)5 << 20;
	uint8_t *p = sefer_malloc(size);
	struct segment *seg = segment_of(p);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(seg->kind, SEG_LARGE);
	ck_assert_ptr_eq(seg->large_block, p);
	ck_assert_uint_ge(seg->large_size, size);
	ck_assert(segtab_contains(seg));
	p[0] = 1;
	p[size - 1] = 2;
	sefer_free(p);
}
END_TEST

START_TEST(segment_table_foreign)
{
	int on_stack = 0;
	static int in_data;

	ck_assert(!sefer_owns(&on_stack));
	ck_assert(!sefer_owns(&in_data));
	ck_assert(!sefer_owns(NULL));
	ck_assert(!sefer_owns((void *)UINTPTR_MAX));
	ck_assert(!sefer_owns((void *)((uintptr_t)1 << 62)));
	void *p = sefer_malloc(10);

	ck_assert(sefer_owns(p));
	sefer_free(p);
}
END_TEST

START_TEST(metadata_fits)
{
	ck_assert_uint_le(sizeof(struct segment), META_PAGES << SPAGE_SHIFT);
	ck_assert_uint_le(META_PAGES, PAGES_PER_SEGMENT / 2);
	ck_assert_uint_eq(sizeof(struct page) % 64, 0);
	ck_assert_uint_eq(__builtin_offsetof(struct page, xthread) % 64, 0);
	ck_assert_uint_eq(sizeof(struct heap) % 64, 0);
}
END_TEST

START_TEST(heap_is_consistent)
{
	void *p[4096];

	for (int i = 0; i < 4096; i++)
		p[i] = sefer_malloc((size_t)(i * 37) % 3000 + 1);
	for (int i = 0; i < 4096; i += 2)
		sefer_free(p[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 1; i < 4096; i += 2)
		sefer_free(p[i]);
	sefer_collect(true);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * Purge timing and warm reuse (segment.c): a slot is purged once it stayed free and dirty for
 * the delay, not because another slot of its segment is due; a new span takes a dirty slot
 * before a purged or never used one.
 */
struct purge_case {
	bool same_segment, a_due_first, b_later, a_purged, b_kept, b_next, warm_taken;
};

#define SLOT(i) ((uint64_t)1 << (i))

static void *purge_after_the_delay(void *arg)
{
	struct purge_case *c = arg;
	void *keep = sefer_malloc(16); /* this thread's heap, a segment it keeps */
	struct heap *heap = heap_get();
	struct page *a = span_alloc(heap, 1), *b = span_alloc(heap, 1), *n;
	struct segment *seg = segment_of(a);
	unsigned ia = a->index, ib = b->index;
	uint64_t delay = sefer_opt.purge_delay_ms, due, then;
	struct timespec ts = { 0, 1000000 };

	/* Measured first, asserted after: Check's assertions allocate through sefer. */
	c->same_segment = seg == segment_of(b) && seg == segment_of(keep) && ia < ib;
	span_free(heap, a);
	due = seg->purge_at;
	c->a_due_first = due == seg->pages[ia].dirty_since + delay;
	then = sefer_os.clock_ms();
	while (sefer_os.clock_ms() == then) /* the clock may tick every few ms (os.h) */
		nanosleep(&ts, NULL);
	span_free(heap, b);
	c->b_later = seg->pages[ib].dirty_since > seg->pages[ia].dirty_since && seg->purge_at == due;
	segment_purge(heap, seg, due, false); /* the pass at a's deadline, wherever the clock is */
	c->a_purged = (seg->purged_pages & SLOT(ia)) && !(seg->dirty_pages & SLOT(ia));
	c->b_kept = (seg->dirty_pages & SLOT(ib)) && !(seg->purged_pages & SLOT(ib));
	c->b_next = seg->purge_at == seg->pages[ib].dirty_since + delay;
	n = span_alloc(heap, 1); /* a's slot is lower, purged; b's is dirty */
	c->warm_taken = n->index == ib;
	span_free(heap, n);
	sefer_free(keep);
	return NULL;
}

START_TEST(purge_after_the_delay_warm_first)
{
	struct purge_case c = { 0 };
	pthread_t t;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !sefer_opt.purge_delay_ms)
		return; /* nothing is purged, or everything at once */
	ck_assert_int_eq(pthread_create(&t, NULL, purge_after_the_delay, &c), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_msg(c.same_segment, "two one-slot spans of a fresh heap share its segment");
	ck_assert_msg(c.a_due_first, "the segment's deadline is its first dirty slot's");
	ck_assert_msg(c.b_later, "a slot freed later keeps the earlier deadline pending");
	ck_assert_msg(c.a_purged, "at its deadline the first slot is purged");
	ck_assert_msg(c.b_kept, "the slot freed later is not purged with it");
	ck_assert_msg(c.b_next, "the segment's next deadline is that slot's");
	ck_assert_msg(c.warm_taken, "a new span takes the dirty slot, not the lower purged one");
}
END_TEST

Suite *segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, segment_and_page_of);
	tcase_add_test(tc, large_segment_layout);
	tcase_add_test(tc, segment_table_foreign);
	tcase_add_test(tc, metadata_fits);
	tcase_add_test(tc, heap_is_consistent);
	tcase_add_test(tc, purge_after_the_delay_warm_first);
	suite_add_tcase(s, tc);
	return s;
}
