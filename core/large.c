// SPDX-License-Identifier: MIT
/*
 * Large segments: one block each, mapped for it (core/segment.c maps and publishes), the block
 * placed past the header with its guard page after it (CONFIG_GUARD_PAGES, core/large.h), and
 * resized in place of a new mapping where the backend can move pages (sefer_os.remap).
 */
#include "core/annotate.h"
#include "core/block.h"
#include "core/error.h"
#include "core/heap.h" /* policy_segment_placed: policy.h's hot bodies need struct heap */
#include "core/large.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer/os.h"

SEFER_INTERNAL atomic_size_t sefer__large_mapped;

bool sefer__large_guard_place(struct segment *seg, size_t off, size_t size)
{
	size_t g = guard_bytes();
	size_t end;

	if (!g) {
		large_block_set(seg, (uint8_t *)seg + off);
		seg->large_size = seg->size - off;
		return true;
	}
	end = align_up(off + size, g);
	if (end < off || end > seg->size || seg->size - end < g)
		return false;
#if IS_ENABLED(CONFIG_GUARD_PAGES)
	uint8_t *guard = (uint8_t *)seg + end;

	if (guard != seg->large_guard) {
		/*
		 * Lift the old guard (it may lie inside the new block), then set the new one. On
		 * failure the old placement stands, every byte of its block usable: a failed lift
		 * changed nothing; a failed set puts the old guard back, and should that fail too
		 * (mprotect splits mappings: ENOMEM past vm.max_map_count) the segment goes on
		 * without a guard. Setting the new guard first would need the undo of a set,
		 * which may fail in turn and leave an inaccessible page inside a block.
		 */
		if (seg->large_guard && !sefer__os.protect(seg->large_guard, g, false))
			return false;
		if (!sefer__os.protect(guard, g, true)) {
			if (seg->large_guard && !sefer__os.protect(seg->large_guard, g, true))
				seg->large_guard = NULL;
			return false;
		}
		seg->large_guard = guard;
	}
#endif
	large_block_set(seg, (uint8_t *)seg + off);
	seg->large_size = end - off;
	return true;
}

/*
 * Everything of large segment seg past its header is not the program's until large_alloc()
 * hands out the block (nor is what a later placement leaves between header and block).
 */
static void annotate_large_unplaced(const struct segment *seg)
{
	annotate_noaccess(seg->pages, seg->size - __builtin_offsetof(struct segment, pages));
}

/* A large segment for a block of size bytes at align, mapped on node (SEFER_NO_NODE: any). */
struct segment *sefer__segment_alloc_large(size_t size, size_t align, int node)
{
	size_t off = large_block_offset(align);
	size_t g = guard_bytes();
	/* with a guard: the block's OS pages, then the guard page, within the segment */
	size_t total = g ? align_up(align_up(off + size, g) + g, SPAGE_SIZE)
			 : align_up(off + size, SPAGE_SIZE);
	struct segment *seg;

	if (size > SIZE_MAX / 2 || off > SIZE_MAX / 2 || total < size)
		return NULL;
	/* From SEGMENT_SIZE up the block lies `align` into a reservation aligned to it (align.h).
	 */
	seg = sefer__segment_map(total, align > SEGMENT_SIZE ? align : SEGMENT_SIZE, node,
				 THP_USE_LARGE);
	if (!seg)
		return NULL;
	seg->kind = SEG_LARGE;
	seg->node = node;
	seg->size = total;
	seg->cookie = (uintptr_t)seg ^ sefer__list_key;
	if (!large_place(seg, off, size)) {
		sefer__segment_unmap(seg, total);
		return NULL;
	}
	seg->large_zero = true;
	annotate_large_unplaced(seg);
	atomic_store_explicit(&seg->owner, LARGE_OWNER, memory_order_relaxed);
	sefer__segment_publish(seg);
	atomic_fetch_add_explicit(&sefer__large_mapped, total, memory_order_relaxed);
	return seg;
}

/*
 * seg, a large segment whose block nobody else may touch meanwhile (a policy's cached one, or
 * the block the calling thread is reallocating), resized for a request of `size` bytes at
 * `align` (up to SEGMENT_SIZE / 2) by the OS moving its pages (sefer_os.remap), with its block
 * placed: the pages it had are not faulted in again, and a shrink gives the rest back. A
 * program that replaces a buffer by one of another size so reuses the memory it freed, and
 * realloc copies nothing. The header moves with the pages (large_live, large_heap and the
 * rest stay); seg is unpublished while it moves (a stale pointer to it finds no segment).
 * NULL when the backend has no remap, with guard pages, or when the OS refused: seg is then
 * unchanged and published again. The caller annotates the block (core/annotate.h).
 */
struct segment *sefer__segment_resize_large(struct segment *seg, size_t size, size_t align)
{
	size_t off = large_block_offset(align);
	size_t total = align_up(off + size, SPAGE_SIZE), old = seg->size;
	struct segment *moved;

	if (!os_has(SEFER_OS_REMAP) || IS_ENABLED(CONFIG_GUARD_PAGES) || size > SIZE_MAX / 2 ||
	    total < size || align > SEGMENT_SIZE / 2)
		return NULL;
	sefer__segment_unpublish(seg);
	annotate_unmap(seg, old);
	moved = sefer__os.remap(seg, old, total, SEGMENT_SIZE);
	if (!moved) {
		annotate_large_unplaced(seg);
		sefer__segment_publish(seg);
		return NULL;
	}
	policy_segment_placed(moved, total, moved->node);
	moved->size = total;
	moved->cookie = (uintptr_t)moved ^ sefer__list_key;
	moved->next = moved->prev = NULL;
	large_place(moved, off, size); /* cannot fail without guard pages */
	annotate_large_unplaced(moved);
	stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak,
		 (long long)total - (long long)old);
	if (total > old)
		atomic_fetch_add_explicit(&sefer__large_mapped, total - old, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&sefer__large_mapped, old - total, memory_order_relaxed);
	if (sefer__opt.verbose)
		sefer__message("resized segment %p (%zu bytes) to %p (%zu bytes)", (void *)seg, old,
			       (void *)moved, total);
	sefer__segment_publish(moved);
	return moved;
}
