// SPDX-License-Identifier: MIT
/* The bin table: every size 0..4 MiB gets a class that fits it, within the waste bound. */
#include "core/bins.h"
#include "core/block.h"
#include "core/segment.h"
#include "unit.h"

START_TEST(every_size_fits)
{
	unsigned prev = 1;

	for (size_t size = 0; size <= SMALL_MAX; size++) {
		unsigned bin = bin_index(size);
		size_t bs = bin_block_size(bin);

		/* Its class is the smallest that holds it: the bin below holds less than size. */
		bool tight = bin == 1 || bin_block_size(bin - 1) < size;
		/* Waste: 16-byte steps up to 128 B, then at most 25% of the request. */
		bool ok = bin >= 1 && bin < NBINS && bs >= size && bs % 16 == 0 && tight &&
			  (bin == prev || bin == prev + 1) &&
			  (size > 128 ? bs - size <= size / 4 : bs - (size ? size : 1) < 16);

		if (!ok)
			ck_abort_msg("size %zu -> bin %u (%zu bytes) breaks the bin rules", size,
				     bin, bs);
		prev = bin;
	}
	ck_assert_uint_eq(prev, NBINS - 1); /* every bin is some size's */
}
END_TEST

/* The layout bins.h describes: where the steps change, and the classes around each change. */
START_TEST(class_layout)
{
	static const struct {
		unsigned bin;
		size_t bs;
	} at[] = {
		{ 1, 16 },    { 8, 128 },   { 9, 160 },   { 12, 256 }, { 13, 320 },
		{ 16, 512 },  { 17, 640 },  { 20, 1024 }, { 21, 1280 }, { 24, 2048 },
		{ 48, (size_t)128 << 10 },
	};

	ck_assert_uint_eq(bin_index(DIRECT_TLS_MAX), 20);
	ck_assert_uint_eq(bin_index(DIRECT_MAX), 28);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		ck_assert_uint_eq(bin_block_size(at[i].bin), at[i].bs);
		ck_assert_uint_eq(bin_index(at[i].bs), at[i].bin);
		if (at[i].bs < SMALL_MAX)
			ck_assert_uint_eq(bin_index(at[i].bs + 1), at[i].bin + 1);
	}
}
END_TEST

START_TEST(classes_round_trip)
{
	for (unsigned bin = 1; bin < NBINS; bin++) {
		size_t bs = bin_block_size(bin);

		ck_assert_uint_eq(bin_index(bs), bin);
		ck_assert_uint_eq(bin_index(bs + 1), bin + 1 < NBINS ? bin + 1 : bin_index(bs + 1));
		ck_assert_uint_ge(bin_span_pages(bin), 1);
		ck_assert_uint_ge((bin_span_pages(bin) << SPAGE_SHIFT) / bs, 1);
		/* SPAN_MIN_BLOCKS a span, but where a span would pass a quarter of a segment */
		if (bin_span_pages(bin) < PAGES_PER_SEGMENT / 4)
			ck_assert_uint_ge((bin_span_pages(bin) << SPAGE_SHIFT) / bs, SPAN_MIN_BLOCKS);
	}
	ck_assert_uint_eq(bin_block_size(NBINS - 1), SMALL_MAX);
}
END_TEST

START_TEST(large_sizes_use_segments)
{
	/* Every size up to 4 MiB is served and usable_size covers it; above SMALL_MAX by a
	 * dedicated segment (checked on a sample: every 4 KiB step plus neighbours). */
	for (size_t size = SMALL_MAX - 64; size <= ((size_t)4 << 20); size += 4093) {
		void *p = sefer_malloc(size);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_ge(sefer_usable_size(p), size);
		ck_assert_uint_lt(sefer_usable_size(p), size + (size > SMALL_MAX ? SPAGE_SIZE : size / 4 + 16));
		sefer_free(p);
	}
}
END_TEST

/*
 * block_start(): one multiply and one compare say whether an offset is the start of one of
 * the first `reserved` blocks (segment.h). Every class, every offset of its span (the odd ones
 * too), a span with nothing, some and all of its blocks carved.
 */
START_TEST(block_start_exact)
{
	static struct page pg; /* only start, block_size, div_magic and reserved are read */

	page_set_start(&pg, (uint8_t *)(uintptr_t)SEGMENT_SIZE);
	for (unsigned bin = 1; bin < NBINS; bin++) {
		uint32_t bs = (uint32_t)bin_block_size(bin);
		size_t span = (size_t)bin_span_pages(bin) << SPAGE_SHIFT;
		uint32_t cap = (uint32_t)(span / bs);
		uint32_t reserved[] = { 0, 1, cap / 3, cap - 1, cap };

		pg.block_size = bs;
		pg.div_magic = div_magic_of(bs);
		for (size_t k = 0; k < sizeof(reserved) / sizeof(reserved[0]); k++) {
			pg.reserved = reserved[k];
			uint64_t limit = block_limit(&pg);

			size_t wrong = 0, first = 0;

			/* one assertion per case: Check's are calls, millions of them are slow */
			for (size_t off = 0; off < span; off += (off & 15) == 0 ? 1 : 15) {
				bool want = off % bs == 0 && off / bs < pg.reserved;

				if (block_start(&pg, page_start(&pg) + off, limit) != want && !wrong++)
					first = off;
			}
			ck_assert_msg(!wrong, "block size %u, %u carved: %zu offsets wrong, first %zu",
				      bs, pg.reserved, wrong, first);
		}
	}
}
END_TEST

/*
 * geometry_block_start(): the cross-thread batch's test (core/free.c: batch_free) on a copy of
 * a span's geometry with geometry_set_limit()'s bound. Every class, a span with nothing, some
 * and all of its blocks carved, every offset of the span and of the slot before it (a block
 * below the span's start: the first span of a segment starts after its header). A copy whose
 * div_magic is another class's (two spans' copies mixed, a bad free racing a reuse of the
 * slot) has bound 0 and accepts nothing.
 */
START_TEST(geometry_block_start_exact)
{
	const uintptr_t start = (uintptr_t)SEGMENT_SIZE + SPAGE_SIZE;

	for (unsigned bin = 1; bin < NBINS; bin++) {
		uint32_t bs = (uint32_t)bin_block_size(bin);
		size_t span = (size_t)bin_span_pages(bin) << SPAGE_SHIFT;
		uint32_t cap = (uint32_t)(span / bs);
		uint32_t reserved[] = { 0, 1, cap / 3, cap };
		struct block_geometry g = { .start = start, .div_magic = div_magic_of(bs),
					    .block_size = bs };

		for (size_t k = 0; k < sizeof(reserved) / sizeof(reserved[0]); k++) {
			size_t wrong = 0;
			ptrdiff_t first = 0;

			g.reserved = reserved[k];
			geometry_set_limit(&g);
			for (ptrdiff_t off = -(ptrdiff_t)SPAGE_SIZE; off < (ptrdiff_t)span;
			     off += (off & 15) == 0 ? 1 : 15) {
				bool want = off >= 0 && (size_t)off % bs == 0 &&
					    (size_t)off / bs < g.reserved;
				const struct block *b = (const struct block *)(start + off);

				if (geometry_block_start(&g, b) != want && !wrong++)
					first = off;
			}
			ck_assert_msg(!wrong, "block size %u, %u carved: %zu offsets wrong, first %td",
				      bs, g.reserved, wrong, first);
		}
		for (unsigned other = 1; other < NBINS; other++) {
			struct block_geometry mixed = g;

			if (bin_block_size(other) == bs)
				continue;
			mixed.div_magic = div_magic_of((uint32_t)bin_block_size(other));
			geometry_set_limit(&mixed);
			ck_assert_msg(!mixed.limit, "block size %u with class %u's div_magic: bound %llu",
				      bs, other, (unsigned long long)mixed.limit);
		}
	}
}
END_TEST

/*
 * block_index_of() and block_offset_divisible(): one multiply for off / block_size and for
 * off % block_size == 0 (malloc_usable_size, cross-thread frees). Every class, every offset of
 * its span.
 */
START_TEST(block_index_exact)
{
	for (unsigned bin = 1; bin < NBINS; bin++) {
		uint32_t bs = (uint32_t)bin_block_size(bin);
		uint32_t span = (uint32_t)bin_span_pages(bin) << SPAGE_SHIFT;
		uint64_t magic = div_magic_of(bs);
		uint32_t wrong = 0, first = 0;

		for (uint32_t off = 0; off < span; off++)
			if ((block_index_of(magic, off) != off / bs ||
			     block_offset_divisible(magic, off) != (off % bs == 0)) && !wrong++)
				first = off;
		ck_assert_msg(!wrong, "block size %u: %u offsets wrong, first %u", bs, wrong, first);
	}
}
END_TEST

Suite *bins_suite(void)
{
	Suite *s = suite_create("bins");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, every_size_fits);
	tcase_add_test(tc, class_layout);
	tcase_add_test(tc, classes_round_trip);
	tcase_add_test(tc, large_sizes_use_segments);
	tcase_add_test(tc, block_start_exact);
	tcase_add_test(tc, geometry_block_start_exact);
	tcase_add_test(tc, block_index_exact);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
