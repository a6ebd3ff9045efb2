/* SPDX-License-Identifier: MIT */
/*
 * The bin table: size classes by register arithmetic, no table walk.
 *
 *   sizes 0..128:      16-byte steps              bins 1..8     (16, 32, ..., 128)
 *   sizes 129..128 KiB: 4 classes per power of 2  bins 9..48    (160, 192, 224, 256, 320, ...)
 *
 * Internal waste is at most 12.5-25% (largest just above a power of two). Sizes above
 * SMALL_MAX are large objects with a dedicated segment.
 */
#ifndef SEFER_CORE_BINS_H
#define SEFER_CORE_BINS_H

#include "core/config.h"

#define SMALL_MAX ((size_t)128 << 10)
#define NBINS 49 /* bin 0 unused */
/*
 * Sizes up to DIRECT_MAX are served straight from the heap's direct table (core/heap.h), those
 * up to DIRECT_TLS_MAX from the calling thread's TLS copy of its first slots: the copy is
 * initial-exec TLS, which a library loaded by dlopen() must fit in glibc's static TLS surplus
 * (2,128 bytes for the whole table did not; Documentation/benchmarks.rst).
 */
#define DIRECT_MAX 4096
#define DIRECT_SLOTS (DIRECT_MAX / GRANULE + 1)
#define DIRECT_TLS_MAX 1024
#define DIRECT_TLS_SLOTS (DIRECT_TLS_MAX / GRANULE + 1)
/*
 * A bin whose blocks are bigger than BORROW_MIN_SIZE may hand out a free block of one of the
 * next BORROW_BINS bins rather than carve one (core/page.c, page_borrow): a small block's
 * usable size is its class's or, above BORROW_MIN_SIZE, up to 7/4 of the size asked for.
 */
#define BORROW_MIN_SIZE 1024
#define BORROW_BINS 2

/*
 * Both halves are computed and one is selected, without a branch: malloc's slow path sees
 * sizes from both sides of 128 in random order (a branch there mispredicted half the time).
 */
static always_inline unsigned bin_index(size_t size)
{
	unsigned small = (unsigned)((size + 15) >> 4) | (size == 0); /* size 0: bin 1 */
	size_t w = size - 1;
	/* floor(log2(w)) for size > 128 (>= 7); for smaller sizes a harmless 6 (ll: LLP64) */
	unsigned b = 63 - (unsigned)__builtin_clzll(w | 127);
	unsigned large = 9 + (b - 7) * 4 + (unsigned)((w >> (b - 2)) & 3);

	unsigned is_small = -(unsigned)(size <= 128); /* all ones or zero: a mask, not a branch */

	return (small & is_small) | (large & ~is_small);
}

static inline size_t bin_block_size(unsigned bin)
{
	if (bin <= 8)
		return (size_t)bin << 4;
	unsigned b = 7 + (bin - 9) / 4, sub = (bin - 9) % 4;

	return (size_t)(5 + sub) << (b - 2);
}

/*
 * A span holds at least SPAN_MIN_BLOCKS blocks: one page for blocks up to 4 KiB, more above
 * (carving is lazy, so a bigger span commits nothing more). With 8, a class above 4 KiB whose
 * count of live blocks wandered around a multiple of 8 kept emptying a span and mapping
 * another: the emptied span's slots waited dirty for the purge delay while the new span
 * faulted in fresh pages (mstress at one thread: 220 KiB of dirty free slots at a moment of
 * its steady state, 16 KiB with 16 blocks a span).
 */
#define SPAN_MIN_BLOCKS 16

/* Pages in the span serving a bin: one page for small blocks, more so a span holds enough. */
static inline unsigned bin_span_pages(unsigned bin)
{
	size_t bs = bin_block_size(bin);
	size_t pages = (SPAN_MIN_BLOCKS * bs + SPAGE_SIZE - 1) >> SPAGE_SHIFT;

	if (pages < 1)
		pages = 1;
	if (pages > PAGES_PER_SEGMENT / 4)
		pages = PAGES_PER_SEGMENT / 4;
	return (unsigned)pages;
}

#endif
