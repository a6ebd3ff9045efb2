// SPDX-License-Identifier: MIT
/*
 * Segments: mapping, spans of pages, purging, release.
 *
 * A small segment is owned by one heap and lives on exactly one of its lists: heap->segments
 * (has free page slots), heap->full_segments (none), heap->cache (empty, kept for reuse), the
 * global abandoned list (owner NULL, see heap.c) or the global spare list (owner HELD_OWNER:
 * empty segments of exited heaps, kept for the next thread). Everything here runs on the owning
 * thread's slow path without locks, except the registry and segment-table updates and the
 * spare list (spare_lock).
 *
 * Purge timing: a slot that becomes free and dirty is purged once it has stayed so for the
 * delay: each dirty slot has its time (its descriptor's slot_since, unused while the slot is
 * in a span) and seg->purge_at is the earliest deadline, which the owner's slow path checks
 * (heap_purge_due). A deadline purges the slots that are due, not every dirty slot of the
 * segment. The delay is SEFER_PURGE_DELAY_MS for segments no heap owns; core/purge.c makes it
 * longer for a heap whose purged slots are soon taken again (backoff), and leaves a heap's
 * slots one more delay when its pass comes late (resuming after a pause). A purged slot's
 * slot_since holds when it was purged (0: by force). The slow path purges after it took what
 * span it needed, and a new span takes dirty slots first (span_alloc): memory one phase of a
 * program freed is reused warm by the next instead of being given back and faulted in again.
 * Empty segments in a heap's cache and on the spare list keep their memory until then too, so a
 * heap that empties and refills a segment, or a thread generation that follows an exited
 * one, reuses warm memory instead of faulting it in again (and the purge's TLB shootdown is
 * saved). Spare and abandoned segments have no owner to purge them: their deadlines feed
 * sefer_purge_at, which every thread's slow path checks (heap_purge_due, global_purge), and
 * the last heap but one to exit purges them all at once (heap_abandon), so an idle process's
 * RSS still follows its live set.
 *
 * Lock order: enum lock_rank (core/lock.h); spare_lock is taken with no other lock held, or
 * inside abandoned_lock.
 *
 * Page-slot states (bit masks in the header): in a span (~free_pages); free and never used
 * since mapped (reads as zero); free and dirty (committed, old contents); free and purged
 * (memory given back; reads as zero when the purge was eager).
 */
#include <errno.h>
#include <string.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/init.h"
#include "core/lock.h"
#include "core/options.h"
#include "core/segtab.h"
#include "core/stats.h"
#include "sefer/os.h"

SEFER_INTERNAL atomic_size_t sefer__large_mapped;

static void *segment_map(struct heap *heap, size_t size, size_t align, int *node)
{
	void *mem;

	*node = policy_segment_node(heap);
	mem = sefer__os.reserve(size, align, *node);
	if (!mem)
		return NULL;
	policy_segment_placed(mem, size, *node);
	stat_add(&sefer__gstats.segments, &sefer__gstats.segments_peak, 1);
	stat_add(&sefer__gstats.segments_mapped, NULL, 1);
	stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak, (long long)size);
	if (sefer__opt.verbose)
		sefer__message("mapped segment %p (%zu bytes, node %d)", mem, size, *node);
	return mem;
}

static void purge_slots(struct segment *seg, uint64_t mask, uint64_t now);

/*
 * ---- guard pages (CONFIG_GUARD_PAGES) ----
 * One OS page made inaccessible through sefer_os.protect: in a small segment the last OS page
 * of the metadata pages (the header ends at least GUARD_MAX before it, segment.h), set once
 * when the segment is mapped and kept for its life (small segments stay small through the
 * cache and the spares); in a large segment the page right after the block's last OS page,
 * moved by large_guard_place() whenever the block is placed for a new size. Both go away
 * with the reservation. 0 when the option is off or the backend lacks SEFER_OS_PROTECT.
 */
static inline size_t guard_bytes(void)
{
	if (!IS_ENABLED(CONFIG_GUARD_PAGES) || !os_has(SEFER_OS_PROTECT))
		return 0;
	return sefer__os_info.page_size;
}

size_t sefer__large_guard_bytes(void)
{
	return guard_bytes();
}

/* Undo segment_map() of a segment never published (a guard could not be set). */
static void segment_unmap(void *mem, size_t size)
{
	stat_add(&sefer__gstats.segments, NULL, -1);
	stat_add(&sefer__gstats.committed, NULL, -(long long)size);
	annotate_unmap(mem, size);
	sefer__os.release(mem, size);
}

static bool small_guard_set(struct segment *seg)
{
	size_t g = guard_bytes();
	size_t at = ((size_t)META_PAGES << SPAGE_SHIFT) - g;

	if (!g || g > GUARD_MAX)
		return true; /* no guard (an OS page larger than the room kept for it) */
	return sefer__os.protect((uint8_t *)seg + at, g, true);
}

bool sefer__large_guard_place(struct segment *seg, size_t off, size_t size)
{
	size_t g = guard_bytes();
	size_t end;

	if (!g) {
		seg->large_block = (uint8_t *)seg + off;
		seg->large_size = seg->size - off;
		return true;
	}
	end = align_up(off + size, g);
	if (end < off || end > seg->size || seg->size - end < g)
		return false;
#if IS_ENABLED(CONFIG_GUARD_PAGES)
	uint8_t *guard = (uint8_t *)seg + end;

	if (guard != seg->large_guard) {
		/* the new guard first, then lift the old one (it may lie inside the new block):
		 * on failure the old placement stands whole */
		if (!sefer__os.protect(guard, g, true))
			return false;
		if (seg->large_guard && !sefer__os.protect(seg->large_guard, g, false)) {
			/* a page left inaccessible here would fault inside this block or a later
			 * one, far from the cause: stop at the cause instead */
			if (!sefer__os.protect(guard, g, false))
				sefer__report_corruption("guard page cannot be lifted", guard);
			return false;
		}
		seg->large_guard = guard;
	}
#endif
	seg->large_block = (uint8_t *)seg + off;
	seg->large_size = end - off;
	return true;
}

static void segment_publish(struct segment *seg)
{
	sefer__sync_registry_add(&seg->reg);
	sefer__segtab_insert(seg);
}

/* Undo segment_publish() before seg is unmapped or moved. */
static void segment_unpublish(struct segment *seg)
{
	sefer__segtab_remove(seg);
	sefer__sync_registry_del(&seg->reg);
	/* Walkers (stats, checks) may still be reading the header: wait them out. */
	sefer__sync_synchronize();
}

/*
 * Everything of large segment seg past its header is not the program's until large_alloc()
 * hands out the block (nor is what a later placement leaves between header and block).
 */
static void annotate_large_unplaced(const struct segment *seg)
{
	annotate_noaccess(seg->pages, seg->size - __builtin_offsetof(struct segment, pages));
}

/* ---- spare segments (empty, of exited heaps) ---- */
static struct spinlock spare_lock = SPINLOCK_INIT(LOCK_RANK_SPARE);
static struct segment *spare;
static unsigned nspare; /* written under spare_lock, read without it as a hint */
/* earliest spare/abandoned purge deadline, 0 = none */
SEFER_INTERNAL _Atomic(uint64_t) sefer__purge_at;

/* Lower the global deadline to `when` (a spare or abandoned segment has dirty slots). */
void sefer__global_purge_at(uint64_t when)
{
	uint64_t cur = atomic_load_explicit(&sefer__purge_at, memory_order_relaxed);

	while ((!cur || when < cur) &&
	       !atomic_compare_exchange_weak_explicit(&sefer__purge_at, &cur, when,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* seg's next purge deadline: when its longest-dirty slot is due; 0 if no slot is dirty. */
uint64_t sefer__segment_deadline(struct segment *seg)
{
	if (!IS_ENABLED(CONFIG_DECOMMIT) || !seg->dirty_pages)
		return 0;
	return seg->purge_at;
}

/*
 * Purge the slots of seg that have been dirty for the delay at `now` (every dirty slot with
 * force) and return its next deadline, 0 when no slot stays dirty. Its owner, or the holder
 * of HELD_OWNER.
 */
uint64_t sefer__segment_purge_due(struct segment *seg, uint64_t now, bool force, uint64_t delay)
{
	uint64_t due = 0, next = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return 0;
	if (force) {
		sefer__purge_dirty(seg);
		return 0;
	}
	if (!seg->purge_at || now < seg->purge_at)
		return sefer__segment_deadline(seg);
	for (uint64_t m = seg->dirty_pages; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint64_t at = seg->pages[i].slot_since + delay;

		if (now >= at)
			due |= (uint64_t)1 << i;
		else if (!next || at < next)
			next = at;
	}
	purge_slots(seg, due, now);
	seg->purge_at = next;
	return next;
}

/*
 * An empty segment of an exiting heap: keep it for the next thread, dirty until its deadline,
 * or release it when SPARE_MAX are kept already.
 */
static void spare_put(struct segment *seg)
{
	uint64_t due = sefer__segment_deadline(seg);

	spin_lock(&spare_lock);
	if (nspare >= SPARE_MAX) {
		spin_unlock(&spare_lock);
		sefer__segment_release(seg);
		return;
	}
	atomic_store_explicit(&seg->owner, HELD_OWNER, memory_order_relaxed);
	segment_list_push(&spare, seg);
	__atomic_store_n(&nspare, nspare + 1, __ATOMIC_RELAXED);
	spin_unlock(&spare_lock);
	if (due)
		sefer__global_purge_at(due);
}

/*
 * An empty segment that no heap owns (an abandoned one whose last blocks were freed by other
 * threads): a spare, purged at once with force. No lock held.
 */
void sefer__segment_spare(struct segment *seg, bool force)
{
	if (force)
		sefer__purge_dirty(seg);
	spare_put(seg);
}

/* A spare segment for heap (now owned by it), or NULL. */
static struct segment *spare_take(struct heap *heap)
{
	struct segment *seg;

	if (!__atomic_load_n(&nspare, __ATOMIC_RELAXED))
		return NULL;
	spin_lock(&spare_lock);
	seg = spare;
	if (seg) {
		segment_list_remove(&spare, seg);
		__atomic_store_n(&nspare, nspare - 1, __ATOMIC_RELAXED);
		/* relaxed: spare_lock orders the last holder's writes to the header before ours */
		atomic_store_explicit(&seg->owner, heap, memory_order_relaxed);
	}
	spin_unlock(&spare_lock);
	return seg;
}

/* Purge the spare segments that are due (all with force); returns the next deadline or 0. */
uint64_t sefer__spare_purge(uint64_t now, bool force)
{
	uint64_t next = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !__atomic_load_n(&nspare, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&spare_lock);
	if (force && IS_ENABLED(CONFIG_PURGE_FREE)) {
		/* MADV_FREE leaves a purged range resident until the kernel needs it: what must
		 * go back now (the last exit, sefer_collect(true)) is unmapped instead. */
		struct segment *all = spare;

		spare = NULL;
		__atomic_store_n(&nspare, 0, __ATOMIC_RELAXED);
		spin_unlock(&spare_lock);
		while (all) {
			struct segment *seg = all;

			all = seg->next;
			sefer__segment_release(seg);
		}
		return 0;
	}
	for (struct segment *seg = spare; seg; seg = seg->next) {
		uint64_t due =
			sefer__segment_purge_due(seg, now, force, sefer__heap_purge_delay(NULL));

		if (due && (!next || due < next))
			next = due;
	}
	spin_unlock(&spare_lock);
	return next;
}

void sefer__spare_fork_prepare(void) __acquires(spare_lock)
{
	spin_lock(&spare_lock);
}

void sefer__spare_fork_parent(void) __releases(spare_lock)
{
	spin_unlock(&spare_lock);
}

void sefer__spare_fork_child(void) __releases(spare_lock)
{
	spin_reset(&spare_lock);
}

struct segment *sefer__segment_alloc_small(struct heap *heap)
{
	struct segment *seg;
	int node;

	seg = heap->cache;
	if (seg) {
		segment_list_remove(&heap->cache, seg);
		heap->ncache--;
	} else if ((seg = spare_take(heap))) {
		heap_purge_at(heap, seg->purge_at); /* its deadline moves to this heap */
	} else {
		seg = segment_map(heap, SEGMENT_SIZE, SEGMENT_SIZE, &node);
		if (!seg)
			return NULL;
		if (IS_ENABLED(CONFIG_GUARD_PAGES) && !small_guard_set(seg)) {
			segment_unmap(seg, SEGMENT_SIZE);
			return NULL;
		}
		seg->kind = SEG_SMALL;
		seg->node = node;
		seg->size = SEGMENT_SIZE;
		seg->cookie = (uintptr_t)seg ^ sefer__list_key;
		seg->free_pages = ALL_PAGES_MASK;
		/* Every slot maps to pages[0], an unused descriptor (nothing carved) until a span
		 * takes it: a free into a free slot is no block start and is reported. */
		for (size_t i = 0; i < PAGES_PER_SEGMENT; i++)
			seg->page_off[i] = page_desc_off(0);
		/* past the header nothing is the program's until a block is handed out */
		annotate_noaccess((uint8_t *)seg + sizeof(*seg), SEGMENT_SIZE - sizeof(*seg));
		atomic_store_explicit(&seg->owner, heap, memory_order_relaxed);
		segment_publish(seg);
	}
	seg->has_space = true;
	segment_list_push(&heap->segments, seg);
	return seg;
}

struct segment *sefer__segment_alloc_large(struct heap *heap, size_t size, size_t align)
{
	size_t off = large_block_offset(align);
	size_t g = guard_bytes();
	/* with a guard: the block's OS pages, then the guard page, within the segment */
	size_t total = g ? align_up(align_up(off + size, g) + g, SPAGE_SIZE)
			 : align_up(off + size, SPAGE_SIZE);
	struct segment *seg;
	int node;

	if (size > SIZE_MAX / 2 || off > SIZE_MAX / 2 || total < size)
		return NULL;
	/* From SEGMENT_SIZE up the block lies `align` into a reservation aligned to it (align.h).
	 */
	seg = segment_map(heap, total, align > SEGMENT_SIZE ? align : SEGMENT_SIZE, &node);
	if (!seg)
		return NULL;
	seg->kind = SEG_LARGE;
	seg->node = node;
	seg->size = total;
	seg->cookie = (uintptr_t)seg ^ sefer__list_key;
	if (!large_place(seg, off, size)) {
		segment_unmap(seg, total);
		return NULL;
	}
	seg->large_zero = true;
	annotate_large_unplaced(seg);
	atomic_store_explicit(&seg->owner, LARGE_OWNER, memory_order_relaxed);
	segment_publish(seg);
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
	segment_unpublish(seg);
	annotate_unmap(seg, old);
	moved = sefer__os.remap(seg, old, total, SEGMENT_SIZE);
	if (!moved) {
		annotate_large_unplaced(seg);
		segment_publish(seg);
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
	segment_publish(moved);
	return moved;
}

void sefer__segment_release(struct segment *seg)
{
	segment_unpublish(seg);
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

/* Give back the memory of the dirty slots in mask, at `now` (0: by force, not by a deadline). */
static void purge_slots(struct segment *seg, uint64_t mask, uint64_t now)
{
	uint64_t done = mask & seg->dirty_pages;

	mask = done;
	if (!mask)
		return;
	for (uint64_t m = done; m; m &= m - 1)
		seg->pages[__builtin_ctzll(m)].slot_since = now;
	while (mask) {
		unsigned lo = (unsigned)__builtin_ctzll(mask);
		uint64_t run = mask >> lo;
		unsigned len = ~run ? (unsigned)__builtin_ctzll(~run) : 64 - lo;

		sefer__os.purge((uint8_t *)seg + ((size_t)lo << SPAGE_SHIFT),
				(size_t)len << SPAGE_SHIFT, IS_ENABLED(CONFIG_PURGE_DONTNEED));
		mask &= len >= 64 ? 0 : ~(((1ULL << len) - 1) << lo);
	}
	long long bytes = (long long)__builtin_popcountll(done) << SPAGE_SHIFT;

	seg->dirty_pages &= ~done;
	seg->purged_pages |= done;
	stat_add(&sefer__gstats.committed, NULL, -bytes);
	stat_add(&sefer__gstats.purged, NULL, bytes);
}

/* Give back every dirty slot of seg now (its owner, or the holder of HELD_OWNER). */
void sefer__purge_dirty(struct segment *seg)
{
	purge_slots(seg, seg->dirty_pages, 0);
	seg->purge_at = 0;
}

/* What of the heap's segment seg is due; its next deadline becomes the heap's. */
void sefer__segment_purge(struct heap *heap, struct segment *seg, uint64_t now, bool force)
{
	heap_purge_at(heap,
		      sefer__segment_purge_due(seg, now, force, sefer__heap_purge_delay(heap)));
}

/* Slots of seg became dirty (span_free_slots): its deadline becomes the heap's. */
static void schedule_purge(struct heap *heap, struct segment *seg)
{
	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	if (sefer__heap_purge_delay(heap) == 0) {
		sefer__purge_dirty(seg);
		return;
	}
	heap_purge_at(heap, sefer__segment_deadline(seg));
}

/*
 * An empty small segment: keep it in the heap's cache, dirty until its purge deadline (an
 * alloc-N/free-N pattern that empties a segment refills it warm), or unmap it. An exiting
 * heap's empty segments become spares for the next thread.
 */
void sefer__segment_free(struct heap *heap, struct segment *seg)
{
	owned_forget(seg);
	segment_list_remove(seg->has_space ? &heap->segments : &heap->full_segments, seg);
	if (!heap->live) {
		spare_put(seg);
		return;
	}
	if (CONFIG_SEGMENT_CACHE > 0 && heap->ncache + 1 <= (unsigned)CONFIG_SEGMENT_CACHE) {
		segment_list_push(&heap->cache, seg);
		heap->ncache++;
		schedule_purge(heap, seg);
		return;
	}
	sefer__segment_release(seg);
}

/* The exiting heap's cached empty segments become spares. */
void sefer__heap_cache_to_spares(struct heap *heap)
{
	while (heap->cache) {
		struct segment *seg = heap->cache;

		segment_list_remove(&heap->cache, seg);
		owned_forget(seg);
		spare_put(seg);
	}
	heap->ncache = 0;
}

/* First slot of a run of n free slots in mask, or -1. */
static int find_run(uint64_t free, unsigned n)
{
	uint64_t r = free;

	for (unsigned k = 1; k < n && r; k++)
		r &= free >> k;
	return r ? __builtin_ctzll(r) : -1;
}

/*
 * A segment of heap with a run of n free slots, on `node` unless node < 0; NULL if none. With
 * warm, only runs of dirty slots: memory the program used and freed, still committed.
 */
static struct segment *find_space(struct heap *heap, unsigned n, int node, bool warm, int *idx)
{
	for (struct segment *seg = heap->segments; seg; seg = seg->next) {
		if (node >= 0 && seg->node != node)
			continue;
		*idx = find_run(warm ? seg->free_pages & seg->dirty_pages : seg->free_pages, n);
		if (*idx >= 0)
			return seg;
	}
	return NULL;
}

/* Where span_alloc() puts a span of n slots: the policy's node first, dirty slots first. */
static struct segment *span_place(struct heap *heap, unsigned n, int node, int *idx)
{
	struct segment *seg = NULL;

	if (node >= 0 && !(seg = find_space(heap, n, node, true, idx)))
		seg = find_space(heap, n, node, false, idx);
	if (!seg && !(seg = find_space(heap, n, SEFER_NO_NODE, true, idx)))
		seg = find_space(heap, n, SEFER_NO_NODE, false, idx);
	return seg;
}

/* Is there a run of n free slots in the heap's segments? */
bool sefer__heap_has_span_space(struct heap *heap, unsigned n)
{
	int idx;

	return find_space(heap, n, SEFER_NO_NODE, false, &idx) != NULL;
}

struct page *sefer__span_alloc(struct heap *heap, unsigned n)
{
	int idx = -1;
	struct segment *seg = span_place(heap, n, policy_segment_node(heap), &idx);

	if (!seg) {
		seg = sefer__segment_alloc_small(heap);
		if (!seg)
			return NULL;
		idx = find_run(seg->free_pages, n);
	}

	uint64_t bits = (n == 64 ? ~0ULL : ((1ULL << n) - 1)) << idx;
	struct page *pg = &seg->pages[idx];
	uint64_t purged = seg->purged_pages & bits;

	pg->is_zero = !(seg->dirty_pages & bits) && (!purged || IS_ENABLED(CONFIG_PURGE_DONTNEED));
	if (seg->dirty_pages & bits)
		heap->warm_spans++;
	if (purged) {
		sefer__purge_backoff_check(heap, seg, purged);
		stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak,
			 (long long)__builtin_popcountll(purged) << SPAGE_SHIFT);
	}
	seg->free_pages &= ~bits;
	seg->dirty_pages &= ~bits;
	seg->purged_pages &= ~bits;
	seg->used_pages += n;
	for (unsigned i = 0; i < n; i++)
		seg->page_off[idx + i] = page_desc_off(idx);
	pg->span = (uint8_t)n;
	pg->index = (uint8_t)idx;
	pg->start = (uint8_t *)seg + ((size_t)idx << SPAGE_SHIFT);
	if (!seg->free_pages || find_run(seg->free_pages, 1) < 0) {
		segment_list_remove(&heap->segments, seg);
		seg->has_space = false;
		segment_list_push(&heap->full_segments, seg);
	}
	return pg;
}


/*
 * The slots of pg's span become free and dirty, its descriptor empty. span_free() for a heap's
 * segment; alone for a segment no heap owns, held with HELD_OWNER (heap.c), whose caller
 * purges or spares it.
 */
void sefer__span_free_slots(struct segment *seg, struct page *pg, uint64_t delay)
{
	unsigned n = pg->span, idx = pg->index;
	uint64_t bits = (n == 64 ? ~0ULL : ((1ULL << n) - 1)) << idx;

	if (IS_ENABLED(CONFIG_DECOMMIT)) {
		uint64_t now = sefer__os.clock_ms();

		for (unsigned i = 0; i < n; i++)
			seg->pages[idx + i].slot_since = now;
		if (!seg->purge_at)
			seg->purge_at = now + delay;
	}
	memset(pg, 0, __builtin_offsetof(struct page, xthread)); /* limits 0: frees refused */
	atomic_store_explicit(&pg->xthread, 0, memory_order_relaxed);
	atomic_store_explicit(&pg->xt_block_size, 0, memory_order_relaxed); /* frees: refused */
	pg->next = pg->prev = pg->delayed_next = NULL;
	seg->free_pages |= bits;
	seg->dirty_pages |= bits;
	seg->used_pages -= n;
	seg->has_space = true;
}

void sefer__span_free(struct heap *heap, struct page *pg)
{
	struct segment *seg = segment_of(pg);
	bool had_space = seg->has_space;

	sefer__span_free_slots(seg, pg, sefer__heap_purge_delay(heap));
	if (!had_space) {
		segment_list_remove(&heap->full_segments, seg);
		segment_list_push(&heap->segments, seg);
	}
	if (seg->used_pages == 0) {
		sefer__segment_free(heap, seg);
		return;
	}
	schedule_purge(heap, seg);
}

/*
 * A destroyed first-class heap gives up seg with every block in it (core/heaps.c): its spans
 * become free dirty slots, their descriptors emptied (a later free of one of the blocks finds
 * nothing carved there and is reported), and seg a spare for any heap, or it is unmapped at once
 * when SPARE_MAX are kept already (then nothing needs resetting). seg is off heap's lists.
 */
/*
 * Every block of seg is given up at once (segment_drop): the memory checkers forget the live
 * ones (memcheck: a FREELIKE each, found by their marks once the blocks other threads pushed,
 * already free to memcheck, are collected) and the spans become unaddressable. Empty when
 * neither checker is configured.
 */
static void annotate_segment_drop(struct segment *seg)
{
#if IS_ENABLED(CONFIG_VALGRIND) || IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	struct page *pg;

	for_each_span(seg, pg, idx) {
#if IS_ENABLED(CONFIG_VALGRIND)
		if (sefer__on_valgrind) {
			sefer__page_collect_xthread(pg, (uintptr_t)-1);
			for (uint32_t i = 0; i < pg->reserved; i++) {
				uint8_t *b = pg->start + (size_t)i * pg->block_size;

				if (block_live((struct block *)b))
					annotate_block_free(b, pg->block_size);
			}
		}
#endif
		annotate_noaccess(pg->start, (size_t)pg->reserved * pg->block_size);
	}
#else
	(void)seg;
#endif
}

void sefer__segment_drop(struct heap *heap, struct segment *seg)
{
	struct page *pg;

	owned_forget(seg);
	annotate_segment_drop(seg);
	if (__atomic_load_n(&nspare, __ATOMIC_RELAXED) >= SPARE_MAX) {
		sefer__segment_release(seg);
		return;
	}
	for_each_span(seg, pg, idx)
		sefer__span_free_slots(seg, pg, sefer__heap_purge_delay(NULL));
	spare_put(seg);
}
