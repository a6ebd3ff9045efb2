// SPDX-License-Identifier: MIT
/*
 * Segments no heap owns: spares and abandoned segments, their lists, locks and fork handlers.
 *
 * Spares (owner HELD_OWNER, core/owner.h): empty small segments of exiting or destroyed heaps,
 * at most SPARE_MAX, kept dirty for the next thread that needs a segment (span_alloc)
 * until their purge deadline; spare_lock guards the list.
 *
 * Abandoned segments (owner NULL): the small segments of an exited thread that still hold live
 * blocks. abandoned_lock guards the list. A segment leaves it only after a thread won the CAS
 * owner NULL -> heap, so exactly one thread adopts it (abandoned_reclaim, for a heap that needs
 * memory: the memory of exited threads is reused before new memory is mapped). A purge of
 * abandoned segments holds each one for its duration by the CAS owner NULL -> HELD_OWNER, so
 * no adopter touches it meanwhile. An abandoned segment's freed_by (the last heap that freed
 * into it) is a hint only, written without a lock: a stale or racing value changes which
 * segment is reclaimed first, never whether a reclaim is correct.
 *
 * What of these segments is purged and when is core/purge.c's; this file walks the lists under
 * their locks and holds each segment while purge.c works on it. Lock order: enum lock_rank
 * (core/lock.h).
 */
#include "core/annotate.h"
#include "core/block.h"
#include "core/heap.h"
#include "core/lock.h"
#include "core/owned.h"
#include "core/purge.h"
#include "core/stats.h"
#include "core/unowned.h"

#define RECLAIM_TRIES 8 /* abandoned segments adopted at most per page_find() miss */
#define RECLAIM_SCAN 16 /* abandoned segments searched for one the heap freed into */

/* ---- spare segments (empty, of exited heaps) ---- */
static struct spinlock spare_lock = SPINLOCK_INIT(LOCK_RANK_SPARE);
static struct segment *spare;
static unsigned nspare; /* written under spare_lock, read without it as a hint */

/*
 * An empty segment of an exiting heap: keep it for the next thread, dirty until its deadline,
 * or release it when SPARE_MAX are kept already.
 */
void sefer__spare_put(struct segment *seg)
{
	uint64_t due = sefer__segment_deadline(seg);

	sefer_assert(seg->kind == SEG_SMALL && seg->used_pages == 0); /* empty */
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

/* A spare segment for owner (now owned by it), or NULL. */
struct segment *sefer__spare_take(struct heap *owner)
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
		atomic_store_explicit(&seg->owner, owner, memory_order_relaxed);
	}
	spin_unlock(&spare_lock);
	if (seg)
		sefer__purge_handoff_taken();
	return seg;
}

/*
 * fn(seg, arg) on every spare segment, spare_lock held (fn takes no lock); returns the least
 * nonzero value fn returned, 0 if none.
 */
uint64_t sefer__spares_each(uint64_t (*fn)(struct segment *seg, void *arg), void *arg)
{
	uint64_t next = 0;

	if (!__atomic_load_n(&nspare, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&spare_lock);
	for (struct segment *seg = spare; seg; seg = seg->next) {
		next = deadline_first(next, fn(seg, arg));
	}
	spin_unlock(&spare_lock);
	return next;
}

/* Unmap every spare segment now. */
void sefer__spares_release_all(void)
{
	struct segment *all;

	if (!__atomic_load_n(&nspare, __ATOMIC_RELAXED))
		return;
	spin_lock(&spare_lock);
	all = spare;
	spare = NULL;
	__atomic_store_n(&nspare, 0, __ATOMIC_RELAXED);
	spin_unlock(&spare_lock);
	while (all) {
		struct segment *seg = all;

		all = seg->next;
		sefer__segment_release(seg);
	}
}

/* The exiting heap's cached empty segments become spares. */
void sefer__set_cache_to_spares(struct segment_set *set)
{
	while (set->cache) {
		struct segment *seg = set->cache;

		segment_list_remove(&set->cache, seg);
		owned_forget(seg);
		sefer__spare_put(seg);
	}
	set->ncache = 0;
}

/*
 * A destroyed first-class heap gives up seg with every block in it (core/heaps.c): its spans
 * become free dirty slots, their descriptors emptied (a later free of one of the blocks finds
 * nothing carved there and is reported), and seg a spare for any heap, or it is unmapped at once
 * when SPARE_MAX are kept already (then nothing needs resetting). seg is off its set's lists.
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
				uint8_t *b = page_start(pg) + (size_t)i * pg->block_size;

				if (block_live((struct block *)b))
					annotate_block_free(b, pg->block_size);
			}
		}
#endif
		annotate_noaccess(page_start(pg), page_carved_bytes(pg));
	}
#else
	(void)seg;
#endif
}

void sefer__segment_drop(struct segment *seg)
{
	struct page *pg;

	owned_forget(seg);
	annotate_segment_drop(seg);
	if (__atomic_load_n(&nspare, __ATOMIC_RELAXED) >= SPARE_MAX) {
		/* released with its spans: its slots leave committed whole, tails included, and
		 * their blocks the carved bytes (segment_free_slots' accounting, spans kept) */
		for_each_span(seg, pg, idx) {
			page_tail_recommit(pg, true);
			stat_add(&sefer__gstats.carved_bytes, NULL, -(long long)page_carved_bytes(pg));
		}
		sefer__segment_release(seg);
		return;
	}
	for_each_span(seg, pg, idx)
		sefer__segment_free_slots(seg, pg, sefer__purge_unowned_delay());
	sefer__spare_put(seg);
}

/* ---- abandoned segments (of exited threads, with live blocks) ---- */
static struct spinlock abandoned_lock = SPINLOCK_INIT(LOCK_RANK_ABANDONED);
static struct segment *abandoned;

static void segment_mark_never(struct segment *seg)
{
	struct page *pg;

	for_each_span(seg, pg, idx) {
		uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);

		for (;;) {
			if ((old & XT_MASK) == XT_FREEING) {
				cpu_relax();
				old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);
				continue;
			}
			/* acquire: a pusher's release FREEING -> NOTIFIED (free.c) is read here
			 * or earlier in this loop, so its CAS on heap->delayed happens before our
			 * store of NULL to it in heap_abandon() (that store is then later in the
			 * modification order and cannot be overtaken). release: keeps our
			 * earlier page updates ordered before NEVER for whoever reads the tag. */
			if (atomic_compare_exchange_weak_explicit(&pg->xthread, &old,
								  (old & ~XT_MASK) | XT_NEVER,
								  memory_order_acq_rel,
								  memory_order_relaxed))
				break;
		}
	}
}

static void abandoned_unlink(struct segment *seg);

static void abandon_segments(struct segment *list)
{
	struct segment *seg, *next;

	for (seg = list; seg; seg = next) {
		uint64_t due = sefer__segment_deadline(seg);

		sefer_assert(seg->used_pages > 0); /* the empty ones went to the spares */
		next = seg->next;
		atomic_store_explicit(&seg->freed_by, NULL, memory_order_relaxed);
		spin_lock(&abandoned_lock);
		seg->prev = NULL;
		seg->next = abandoned;
		if (abandoned)
			abandoned->prev = seg;
		__atomic_store_n(&abandoned, seg, __ATOMIC_RELAXED); /* read unlocked as a hint */
		/* release: an adopter that wins the CAS sees every page as we left it. */
		atomic_store_explicit(&seg->owner, NULL, memory_order_release);
		spin_unlock(&abandoned_lock);
		stat_add(&sefer__gstats.abandoned, NULL, 1);
		if (due)
			sefer__global_purge_at(due);
	}
}

/*
 * seg is abandoned and held (HELD_OWNER): take the frees other threads pushed into its pages
 * and give back the spans that emptied, as its owner would. Returns whether seg is empty.
 */
static bool abandoned_collect(struct segment *seg)
{
	struct page *pg;

	for_each_span(seg, pg, idx) {
		sefer__page_collect_xthread(pg, (uintptr_t)-1); /* the tag stays NEVER */
		if (pg->used == 0)
			sefer__segment_free_slots(seg, pg, sefer__purge_unowned_delay());
	}
	return seg->used_pages == 0;
}

/*
 * Each abandoned segment that no adopter holds, held by HELD_OWNER meanwhile, after collecting
 * the frees pushed into it since its thread exited (a main thread freeing what its workers
 * left): fn(seg, arg) on it if it still holds live blocks, under abandoned_lock (fn takes no
 * lock). Those that emptied leave the list and come back through *emptied, linked by next and
 * still held (the caller makes them spares). Returns the least nonzero value fn returned.
 */
uint64_t sefer__abandoned_each_held(uint64_t (*fn)(struct segment *seg, void *arg), void *arg,
				    struct segment **emptied)
{
	struct segment *next_seg;
	uint64_t next = 0;

	*emptied = NULL;
	if (!__atomic_load_n(&abandoned, __ATOMIC_RELAXED))
		return 0;
	spin_lock(&abandoned_lock);
	for (struct segment *seg = abandoned; seg; seg = next_seg) {
		struct heap *expect = NULL;

		next_seg = seg->next;
		/* acquire: pairs with the release store of NULL in abandon_segments(). A failed
		 * CAS means an adopter owns it and removes it from the list soon. */
		if (!atomic_compare_exchange_strong_explicit(&seg->owner, &expect, HELD_OWNER,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		if (abandoned_collect(seg)) {
			abandoned_unlink(seg);
			seg->next = *emptied;
			*emptied = seg;
			continue;
		}
		next = deadline_first(next, fn(seg, arg));
		/* release: the next adopter sees what fn changed (the purged slot bits) */
		atomic_store_explicit(&seg->owner, NULL, memory_order_release);
	}
	spin_unlock(&abandoned_lock);
	return next;
}

/* An exiting heap's segments: no pusher may link a page into its delayed list any more. */
void sefer__set_mark_never(struct segment_set *set)
{
	for_each_set_segment(set, seg, false)
		segment_mark_never(seg);
}

/* What still holds live blocks goes to the abandoned list, dirty slots and all. */
void sefer__set_abandon(struct segment_set *set)
{
	abandon_segments(set->with_space);
	abandon_segments(set->full);
	set->with_space = set->full = NULL;
}

/* Take seg off the abandoned list (its owner CAS won: adopted, or held and emptied).
 * abandoned_lock held. */
static void abandoned_unlink(struct segment *seg) __must_hold(&abandoned_lock)
{
	sefer_assert(spin_held(&abandoned_lock));
	sefer_assert(seg->prev ? seg->prev->next == seg : abandoned == seg);
	/* won by its owner CAS: adopted, or held (HELD_OWNER) and emptied */
	sefer_assert(atomic_load_explicit(&seg->owner, memory_order_relaxed) != NULL);
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		__atomic_store_n(&abandoned, seg->next, __ATOMIC_RELAXED);
	if (seg->next)
		seg->next->prev = seg->prev;
	seg->next = seg->prev = NULL;
	stat_add(&sefer__gstats.abandoned, NULL, -1);
}

/* Win seg for heap (owner NULL -> heap). abandoned_lock held. */
static bool abandoned_take(struct heap *heap, struct segment *seg) __must_hold(&abandoned_lock)
{
	struct heap *expect = NULL;

	sefer_assert(spin_held(&abandoned_lock));
	/* acquire: pairs with the release store of NULL in abandon_segments(). */
	return atomic_compare_exchange_strong_explicit(&seg->owner, &expect, heap,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * The abandoned segment heap should take next: among the first RECLAIM_SCAN of the list, one
 * that heap has freed into since it was abandoned (free_slow sets freed_by), else the first
 * that can be taken. heap holds blocks of the segments it frees into: the next round of
 * threads that takes over its predecessor's blocks (larson-rounds) then reclaims that
 * predecessor's memory, not another lane's, whose blocks another thread is freeing; with the
 * list head alone, two lanes swapped segments at every round and most of their frees became
 * cross-thread frees into a live owner. Returns NULL if none can be taken.
 * abandoned_lock held.
 */
static struct segment *abandoned_pick(struct heap *heap) __must_hold(&abandoned_lock)
{
	struct segment *seg;
	int n = 0;

	for (seg = abandoned; seg && n < RECLAIM_SCAN; seg = seg->next, n++)
		if (atomic_load_explicit(&seg->freed_by, memory_order_relaxed) == heap &&
		    abandoned_take(heap, seg))
			return seg;
	for (seg = abandoned; seg; seg = seg->next)
		if (abandoned_take(heap, seg))
			return seg;
	return NULL;
}

/*
 * Adopt abandoned segments into heap (collecting the frees other threads pushed into them and
 * giving back their empty pages) until one gives `bin` a page to allocate from or has free
 * page slots, at most RECLAIM_TRIES of them, the ones heap has freed into first
 * (abandoned_pick). Called by page_find() when the heap has neither: the memory of exited
 * threads is reused before new memory is mapped. Returns whether any segment was adopted.
 */
bool sefer__abandoned_reclaim(struct heap *heap, unsigned bin)
{
	bool any = false;

	for (int tries = 0; tries < RECLAIM_TRIES; tries++) {
		struct segment *seg;

		if (!__atomic_load_n(&abandoned, __ATOMIC_RELAXED))
			break;
		spin_lock(&abandoned_lock);
		seg = abandoned_pick(heap);
		if (seg)
			abandoned_unlink(seg);
		spin_unlock(&abandoned_lock);
		if (!seg)
			break;
		any = true;
		stat_add(&sefer__gstats.reclaimed, NULL, 1);
		sefer__heap_adopt_segment(heap, seg);
		if (seg->has_space || sefer__page_queue_usable(heap, bin))
			break;
	}
	if (any)
		sefer__purge_handoff_taken();
	return any;
}

/* Fork handlers (core/heap.c calls them inside pool_lock and the large locks). */
void sefer__unowned_fork_prepare(void) __acquires(abandoned_lock) __acquires(spare_lock)
{
	spin_lock(&abandoned_lock);
	spin_lock(&spare_lock);
}

void sefer__unowned_fork_parent(void) __releases(spare_lock) __releases(abandoned_lock)
{
	spin_unlock(&spare_lock);
	spin_unlock(&abandoned_lock);
}

void sefer__unowned_fork_child(void) __releases(spare_lock) __releases(abandoned_lock)
{
	spin_reset(&spare_lock);
	spin_reset(&abandoned_lock);
}
