/* SPDX-License-Identifier: MIT */
/*
 * Large segments (core/large.c): one block each, mapped for it, placed past the header at an
 * alignment, with a guard page after the block (CONFIG_GUARD_PAGES), resized by the OS moving
 * the pages where the backend can. A large segment's owner is LARGE_OWNER (core/owner.h).
 */
#ifndef SEFER_CORE_LARGE_H
#define SEFER_CORE_LARGE_H

#include "core/init.h"
#include "core/segment.h"
#include "sefer/os.h"

/*
 * ---- guard pages (CONFIG_GUARD_PAGES) ----
 * One OS page made inaccessible through sefer_os.protect: in a small segment the last OS page
 * of the metadata pages (the header ends at least GUARD_MAX before it, segment.h), set once
 * when the segment is mapped and kept for its life (core/segment.c); in a large segment the
 * page right after the block's last OS page, moved by large_guard_place() whenever the block is
 * placed for a new size. Both go away with the reservation. The guard's size: 0 when the
 * option is off or the backend lacks SEFER_OS_PROTECT.
 */
static inline size_t guard_bytes(void)
{
	if (!IS_ENABLED(CONFIG_GUARD_PAGES) || !os_has(SEFER_OS_PROTECT))
		return 0;
	return sefer__os_info.page_size;
}

/*
 * Offset of a large segment's block from the segment start for an alignment: past the header
 * up to (not including) the page descriptors, aligned to max(align, CACHELINE). Shared with
 * policies that fill large_alloc, which re-place the block of a reused segment.
 */
static inline size_t large_block_offset(size_t align)
{
	size_t a = align > CACHELINE ? align : CACHELINE;

	return align_up(__builtin_offsetof(struct segment, pages), a);
}

SEFER_INTERNAL __must_check bool sefer__large_guard_place(struct segment *seg, size_t off,
							  size_t size);

/* The most a large segment can hold `off` bytes in: what follows, less the guard page. */
static inline size_t large_room(const struct segment *seg, size_t off)
{
	size_t g = guard_bytes();

	return seg->size > off + g ? seg->size - off - g : 0;
}

/*
 * Place a large segment's block `off` bytes in for a request of `size` bytes: large_block and
 * large_size (usable bytes). Without CONFIG_GUARD_PAGES the block gets the rest of the
 * segment; with it the block ends at the first OS page boundary at or after size and the
 * guard page is (moved) there (large.c). False when seg cannot hold the block and a guard
 * (or the guard could not be set): seg is then unchanged. Policies that re-place the block
 * of a reused segment call this.
 */
static inline bool large_place(struct segment *seg, size_t off, size_t size)
{
	if (IS_ENABLED(CONFIG_GUARD_PAGES))
		return sefer__large_guard_place(seg, off, size);
	large_block_set(seg, (uint8_t *)seg + off);
	seg->large_size = seg->size - off;
	return true;
}

SEFER_INTERNAL __must_check struct segment *sefer__segment_alloc_large(size_t size, size_t align,
								       int node);
SEFER_INTERNAL __must_check struct segment *sefer__segment_resize_large(struct segment *seg,
									size_t size, size_t align);
/*
 * Mapped bytes of the large segments, process-wide: in use, cached by a policy, or on their way
 * back to the OS; policies size caches by it. Kept where large segments are mapped and released,
 * never at a malloc or a free: a counter there is a cache line every thread's large malloc and
 * free would write (two threads each freeing and reallocating a 4 MiB buffer ran at a third of
 * one thread's rate on it).
 */
SEFER_INTERNAL_EXTERN atomic_size_t sefer__large_mapped;

#endif
