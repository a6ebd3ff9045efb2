// SPDX-License-Identifier: MIT
/* Segment and page arithmetic on real allocations, and the segment table. */
#include <stdint.h>
#include <stdlib.h>

#include "core/heap.h"
#include "core/segment.h"
#include "core/segtab.h"
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

Suite *segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, segment_and_page_of);
	tcase_add_test(tc, large_segment_layout);
	tcase_add_test(tc, segment_table_foreign);
	tcase_add_test(tc, metadata_fits);
	tcase_add_test(tc, heap_is_consistent);
	suite_add_tcase(s, tc);
	return s;
}
