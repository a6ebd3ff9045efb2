// SPDX-License-Identifier: MIT
/*
 * Segments: mapping, publication, a segment set's cache of empty segments, release.
 *
 * A small segment is owned by one heap and lives on exactly one of its set's lists
 * (core/segment.h, struct segment_set): with_space (has free page slots), full (none), cache
 * (empty, kept for reuse), or on a list of the segments no heap owns (core/unowned.c: spares,
 * abandoned). Everything here runs on the owner's slow path without locks, except the registry
 * and segment-table updates (publish). Whether a set takes a spare and whether an empty segment
 * becomes one is core/span.c's call: nothing here calls core/unowned.c.
 *
 * Page-slot states (bit masks in the header): in a span (~free_pages, core/span.c); free and
 * never used since mapped (reads as zero); free and dirty (committed, old contents); free and
 * purged (memory given back, core/purge.c; reads as zero when the purge was eager).
 */
#include <string.h>

#include "core/annotate.h"
#include "core/block.h"
#include "core/error.h"
#include "core/heap.h" /* policy_segment_placed: policy.h's hot bodies need struct heap */
#include "core/init.h"
#include "core/large.h"
#include "core/options.h"
#include "core/owned.h"
#include "core/purge.h"
#include "core/segtab.h"
#include "core/stats.h"
#include "sefer/os.h"

/*
 * Tell the OS whether it may back [mem, mem+size), a fresh mapping of sefer's (or its static
 * segment table) that holds what use says, with transparent huge pages, by SEFER_THP (enum
 * thp_mode). A small-object segment is used and purged a 64 KiB page at a time, which a 2 MiB
 * page defeats in a small heap: `large` marks them MADV_NOHUGEPAGE and leaves a large block's
 * segment to the kernel's mode; `auto` leaves a dense heap's new segments to it too, where the
 * huge pages of the newest segment are a small part of the heap and the TLB misses of 4 KiB
 * pages a big part of its time (decommit.rst, "Huge pages"); the segment table is never asked
 * for huge pages (`always` leaves it to the kernel: a bitmap gains nothing from them). "Leave
 * to the kernel" is no advice: a kernel in mode madvise or never gives none. One madvise per
 * mapping, on the slow path that maps it.
 */
void sefer__thp_advise(void *mem, size_t size, enum thp_use use)
{
	unsigned mode = sefer__opt.thp;
	bool to_kernel = mode == THP_SYSTEM ||
			 (use == THP_USE_LARGE && (mode == THP_LARGE || mode == THP_AUTO)) ||
			 (use == THP_USE_DENSE && mode == THP_AUTO) ||
			 (use == THP_USE_TABLE && mode == THP_ALWAYS);

	if (!os_has(SEFER_OS_HUGEPAGE) || to_kernel)
		return;
	sefer__os.hugepage(mem, size, mode == THP_ALWAYS);
}

/*
 * A fresh reservation of size bytes at align for a segment, on node (SEFER_NO_NODE: any), that
 * holds what use says (sefer__thp_advise).
 */
void *sefer__segment_map(size_t size, size_t align, int node, enum thp_use use)
{
	void *mem = sefer__os.reserve(size, align, node);

	if (!mem)
		return NULL;
	sefer__thp_advise(mem, size, use);
	policy_segment_placed(mem, size, node);
	stat_add(&sefer__gstats.segments, &sefer__gstats.segments_peak, 1);
	stat_add(&sefer__gstats.segments_mapped, NULL, 1);
	stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak, (long long)size);
	if (sefer__opt.verbose)
		sefer__message("mapped segment %p (%zu bytes, node %d)", mem, size, node);
	return mem;
}

/* Undo segment_map() of a segment never published (a guard could not be set). */
void sefer__segment_unmap(void *mem, size_t size)
{
	stat_add(&sefer__gstats.segments, NULL, -1);
	stat_add(&sefer__gstats.committed, NULL, -(long long)size);
	annotate_unmap(mem, size);
	sefer__os.release(mem, size);
}

/* A small segment's guard page (core/large.h, "guard pages"): set once, kept for its life. */
static bool small_guard_set(struct segment *seg)
{
	size_t g = guard_bytes();
	size_t at = ((size_t)META_PAGES << SPAGE_SHIFT) - g;

	if (!g || g > GUARD_MAX)
		return true; /* no guard (an OS page larger than the room kept for it) */
	return sefer__os.protect((uint8_t *)seg + at, g, true);
}

void sefer__segment_publish(struct segment *seg)
{
	sefer__sync_registry_add(&seg->reg);
	sefer__segtab_insert(seg);
}

/* Undo segment_publish() before seg is unmapped or moved. */
void sefer__segment_unpublish(struct segment *seg)
{
	sefer__segtab_remove(seg);
	sefer__sync_registry_del(&seg->reg);
	/* Walkers (stats, checks) may still be reading the header: wait them out. */
	sefer__sync_synchronize();
}

/* A set made empty for owner (a heap struct reset for reuse). */
void sefer__segment_set_reset(struct segment_set *set, struct heap *owner)
{
	*set = (struct segment_set){ .owner = owner };
}

/*
 * seg, now owned by set's heap (adopted, or a spare taken), goes on the list its free slots
 * say; its dirty slots keep their deadline, now the set's.
 */
void sefer__segment_set_add(struct segment_set *set, struct segment *seg)
{
	sefer_assert(atomic_load_explicit(&seg->owner, memory_order_relaxed) == set->owner);
	seg->has_space = seg->free_pages != 0;
	segment_list_push(seg->has_space ? &set->with_space : &set->full, seg);
	set_purge_at(set, seg->purge_at);
}

/*
 * Does set hold at least CONFIG_THP_DENSE_SEGMENTS segments with spans? A set maps a segment
 * only when the ones it holds have no room for a span, so a new one is then a dense heap's
 * (THP_USE_DENSE): its huge pages are at most one part in that many of the slots the heap has
 * taken (slots, not bytes in use: decommit.rst, "Huge pages"). Walks at most that many
 * segments, once per mapping.
 */
static bool segment_set_dense(const struct segment_set *set)
{
	unsigned n = 0;

	for_each_set_segment(set, seg, false)
		if (++n >= CONFIG_THP_DENSE_SEGMENTS)
			return true;
	return false;
}

/* A fresh small segment for set, on node: nothing in a span, every slot unused. */
static struct segment *segment_map_small(struct segment_set *set, int node)
{
	bool dense = sefer__opt.thp == THP_AUTO && segment_set_dense(set);
	struct segment *seg = sefer__segment_map(SEGMENT_SIZE, SEGMENT_SIZE, node,
						 dense ? THP_USE_DENSE : THP_USE_SMALL);

	if (!seg)
		return NULL;
	if (IS_ENABLED(CONFIG_GUARD_PAGES) && !small_guard_set(seg)) {
		sefer__segment_unmap(seg, SEGMENT_SIZE);
		return NULL;
	}
	seg->kind = SEG_SMALL;
	seg->node = node;
	seg->size = SEGMENT_SIZE;
	seg->cookie = (uintptr_t)seg ^ sefer__list_key;
	seg->free_pages = ALL_PAGES_MASK;
	/* Every slot maps to pages[0], an unused descriptor (nothing carved) until a span takes
	 * it: a free into a free slot is no block start and is reported. */
	uint16_t unused = opaque_value((uint16_t)page_desc_off(0));

	for (size_t i = 0; i < PAGES_PER_SEGMENT; i++)
		seg->page_off[i] = unused;
	/* past the header nothing is the program's until a block is handed out */
	annotate_noaccess((uint8_t *)seg + sizeof(*seg), SEGMENT_SIZE - sizeof(*seg));
	atomic_store_explicit(&seg->owner, set->owner, memory_order_relaxed);
	sefer__segment_publish(seg);
	return seg;
}

/* seg, which has free slots, goes onto set's with_space list. */
static struct segment *segment_list_with_space(struct segment_set *set, struct segment *seg)
{
	seg->has_space = true;
	segment_list_push(&set->with_space, seg);
	return seg;
}

/*
 * An empty segment of set's cache, moved onto its with_space list, or NULL when the cache is
 * empty. span_alloc() (core/span.c) asks here first: a cached segment is set's own and warm.
 */
struct segment *sefer__segment_cache_take(struct segment_set *set)
{
	struct segment *seg = set->cache;

	if (!seg)
		return NULL;
	segment_list_remove(&set->cache, seg);
	set->ncache--;
	return segment_list_with_space(set, seg);
}

/*
 * A small segment with free slots for set, on its with_space list: seg (a spare of another
 * heap's that the caller took, core/unowned.c), else a fresh one on node. NULL when out of
 * memory.
 */
struct segment *sefer__segment_alloc_small(struct segment_set *set, struct segment *seg, int node)
{
	if (seg)
		set_purge_at(set, seg->purge_at); /* its deadline moves to this set */
	else if (!(seg = segment_map_small(set, node)))
		return NULL;
	return segment_list_with_space(set, seg);
}

/*
 * The slots of pg's span become free and dirty, its descriptor empty. span_free() (core/span.c)
 * for a set's segment; alone for a segment no heap owns, held with HELD_OWNER
 * (core/unowned.c), whose caller purges or spares it.
 */
void sefer__segment_free_slots(struct segment *seg, struct page *pg, uint64_t delay)
{
	unsigned n = pg->span, idx = pg->index;
	uint64_t bits = segment_slot_bits(n, idx);

	/* a span's slots, all in use: not freed twice, nor a descriptor that heads no span */
	sefer_assert(n && !(seg->free_pages & bits) && seg->used_pages >= n);
	/*
	 * Its first `carved` slots are resident while dirty: carved blocks reach to their end
	 * (to within a block of at most 4 KiB, whose OS page is then touched; a purged tail lies
	 * past the carved blocks). Counted in 4 KiB, the least OS page: at most n. The low
	 * `carved` of the n bits: bits shifted down by n - carved, within bits.
	 */
	unsigned carved = (unsigned)((page_carved_bytes(pg) + 4095) >> SPAGE_SHIFT);

	sefer_assert(carved <= n);
	seg->warm_pages = (seg->warm_pages & ~bits) | (bits >> (n - carved) & bits);
	page_tail_recommit(pg, true); /* the slots count committed whole while dirty */
	sefer__purge_slots_freed(seg, bits, delay);
	stat_add(&sefer__gstats.carved_bytes, NULL, -(long long)page_carved_bytes(pg));
	memset(pg, 0, __builtin_offsetof(struct page, xthread)); /* limits 0: frees refused */
	atomic_store_explicit(&pg->xthread, 0, memory_order_relaxed);
	atomic_store_explicit(&pg->xt_block_size, 0, memory_order_relaxed); /* frees: refused */
	pg->next = pg->prev = pg->delayed_next = NULL;
	seg->free_pages |= bits;
	seg->dirty_pages |= bits;
	seg->used_pages -= n;
	seg->has_space = true;
	sefer_assert(segment_slots_agree(seg));
}

/* Take seg, empty, off set's lists; the caller then keeps or releases it, or makes it a spare. */
void sefer__segment_unlist(struct segment_set *set, struct segment *seg)
{
	sefer_assert(seg->used_pages == 0 && seg->free_pages == ALL_PAGES_MASK); /* empty */
	owned_forget(seg);
	segment_list_remove(seg->has_space ? &set->with_space : &set->full, seg);
}

/*
 * An empty small segment of set, off its lists (sefer__segment_unlist): keep it in the set's
 * cache, dirty until its purge deadline (an alloc-N/free-N pattern that empties a segment
 * refills it warm), or unmap it.
 */
void sefer__segment_free(struct segment_set *set, struct segment *seg)
{
	if (CONFIG_SEGMENT_CACHE > 0 && set->ncache + 1 <= (unsigned)CONFIG_SEGMENT_CACHE) {
		segment_list_push(&set->cache, seg);
		set->ncache++;
		sefer__purge_schedule(set, seg);
		return;
	}
	sefer__segment_release(seg);
}

void sefer__segment_release(struct segment *seg)
{
	sefer__segment_unpublish(seg);
	stat_add(&sefer__gstats.segments, NULL, -1);
	stat_add(&sefer__gstats.committed, NULL,
		 -(long long)(seg->size -
			      (size_t)__builtin_popcountll(seg->purged_pages) * SPAGE_SIZE));
	if (seg->kind == SEG_LARGE)
		atomic_fetch_sub_explicit(&sefer__large_mapped, seg->size, memory_order_relaxed);
	if (sefer__opt.verbose)
		sefer__message("released segment %p (%zu bytes)", (void *)seg, seg->size);
	annotate_unmap(seg, seg->size);
	sefer__os.release(seg, seg->size);
}
