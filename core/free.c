// SPDX-License-Identifier: MIT
/*
 * Free slow paths: errors, full pages, cross-thread frees, abandoned segments, large objects.
 *
 * Cross-thread free is lock-free: the block joins the freeing thread's batch for its page, which
 * one CAS puts on the page's xthread list (core/remote.h; page.c for the tag protocol). With
 * CONFIG_DEBUG_DOUBLE_FREE every free tests the block's marks (block.h) and that it is a carved
 * block's start: the owner against the page descriptor, another thread against the page
 * geometry copied to the xthread line (or the batch's copy of it), so it reads no cache line
 * the owner writes at every malloc. An owner that walks a collected list checks the pending
 * marks again.
 */
#include <errno.h>

#include "core/align.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/heaps.h"
#include "core/init.h"
#include "core/stats.h"

/* Why p (in a live small segment) is not a freeable block. */
static const char *invalid_reason(struct segment *seg, const void *p, bool *is_double)
{
	struct page *pg = page_of(seg, p);
	size_t off;

	*is_double = false;
	if (!pg->span || !pg->block_size || (const uint8_t *)p < page_start(pg))
		return "not inside an allocated block";
	off = (size_t)((const uint8_t *)p - page_start(pg));
	if (off % pg->block_size)
		return "pointer to the inside of a block";
	/* racy from another thread (reserved is the owner's): only the wording depends on it */
	if (off / pg->block_size >= pg->reserved)
		return "not inside an allocated block";
	*is_double = true;
	return block_freed_reason(p) ?: "block is already free";
}

static __cold void report_bad_free(struct segment *seg, const void *p)
{
	bool dbl;
	const char *why = invalid_reason(seg, p, &dbl);

	sefer__report_error(dbl ? "double free" : "invalid free", p, why);
}

void sefer__free_foreign(const void *p)
{
	struct segment *seg;

	if (!p)
		return;
	if ((seg = sefer__aligned_segment_of(p))) { /* aligned to a segment or more: core/align.h */
		sefer__large_free(seg, (void *)p);
		return;
	}
	sefer__report_error("invalid free", p, "not allocated by sefer");
}

void sefer__free_local_block(struct heap *heap, struct segment *seg, struct page *pg,
			     struct block *b)
{
	block_mark_free(b);
	annotate_block_free(b, pg->block_size);
	heap_stat_call(heap, frees);
	bool emptied = page_free_push(pg, b, false);

	if (pg->flags & PAGE_FULL)
		sefer__page_unfull(heap, pg);
	if (emptied)
		sefer__page_retire(heap, pg);
}

void sefer__large_free(struct segment *seg, void *p)
{
	struct heap *heap = heap_get();

	if (p != large_block(seg)) {
		sefer__report_error("invalid free", p, "pointer to the inside of a large block");
		return;
	}
	if (!atomic_exchange_explicit(&seg->large_live, 0, memory_order_relaxed)) {
		sefer__report_error("double free", p, "large block is already free");
		return;
	}
	annotate_block_free(p, seg->large_size);
	if (heap != &sefer__heap_empty)
		heap_stat_call(heap, frees);
	if (heaps_large_untrack(seg)) /* else a visit of its heap finishes the free */
		sefer__large_release(seg);
}

/* A freed large block's segment: to a policy's cache, or back to the OS. */
void sefer__large_release(struct segment *seg)
{
	if (policy_large_free(heap_get(), seg))
		return;
	sefer__segment_release(seg);
}

/*
 * Why p, in sefer's segment seg, is not a block the program holds, or NULL when it is:
 * realloc's test before it keeps, copies or frees the block (a free makes the same tests on
 * its way). *is_double tells a freed block from a pointer that never was one. Any thread: a
 * small block is checked against its page's copies for other threads and its own mark, which
 * only a free writes; a large one against its segment.
 */
const char *sefer__block_not_held(struct segment *seg, const void *p, bool *is_double)
{
	const char *why;

	*is_double = false;
	if (!slot_has_page(seg, p)) { /* a large segment */
		if (p != large_block(seg))
			return "pointer to the inside of a large block";
		if (!atomic_load_explicit(&seg->large_live, memory_order_relaxed)) {
			*is_double = true;
			return "large block is already free";
		}
		return NULL;
	}
	struct block_geometry g;

	page_xthread_geometry(page_of(seg, p), &g);
	if (!geometry_has_block(&g, p))
		return invalid_reason(seg, p, is_double);
	why = block_freed_reason(p);
	*is_double = why != NULL;
	return why;
}

/* A cross-thread free's whole check (sefer__block_not_held): true when b was reported. */
static bool xthread_free_refused(struct segment *seg, const struct block *b)
{
	bool dbl;
	const char *why = sefer__block_not_held(seg, b, &dbl);

	if (why)
		sefer__report_error(dbl ? "double free" : "invalid free", b, why);
	return why != NULL;
}

static always_inline void batch_add(struct heap *heap, struct remote_batch *rb, struct block *b)
{
	bool joins = rb->key == remote_key(b);

	block_mark_pending(b);
	annotate_block_free(b, rb->geo.block_size);
	heap_stat_call(heap, frees);
	heap_stat_inc(heap, xthread_frees);
	remote_batch_add(&heap->remote, rb, b, joins);
}

/*
 * batch_free()'s checks failed: b is past the batch's copy of the page's geometry (carved
 * since it was taken, or not a block at all), the copy has no bound (geometry_set_limit), or b
 * carries a mark. Asked again from the page (b lies in the batch's sefer page, or in the one
 * it opens for: a live segment's).
 */
static noinline void batch_free_checked(struct heap *heap, struct remote_batch *rb,
					struct block *b)
{
	struct segment *seg = segment_of(b);

	if (xthread_free_refused(seg, b))
		return;
	page_xthread_geometry(page_of(seg, b), &rb->geo);
	geometry_set_limit(&rb->geo);
	batch_add(heap, rb, b);
}

/*
 * b, a block freed by the calling thread, joins rb, an open batch for its page or one
 * remote_batch_for() opened for it (remote.h). With CONFIG_DEBUG_DOUBLE_FREE it is checked
 * against the batch's copy of the page's geometry, in the freeing thread's own cache, and its
 * mark.
 */
static always_inline void batch_free(struct heap *heap, struct remote_batch *rb, struct block *b)
{
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE) &&
	    unlikely(!geometry_block_start(&rb->geo, b) || block_freed(b))) {
		batch_free_checked(heap, rb, b);
		return;
	}
	batch_add(heap, rb, b);
}

/*
 * b, a block of pg that another heap owns (owner, as free_slow() read it) or that an exited
 * thread left: batched for its owner (core/remote.h) when that is a thread's default heap, or
 * checked, marked pending and pushed at once: into a first-class heap, an abandoned or a held
 * segment, from a thread with no heap, or a block too big to batch.
 */
static void xthread_free(struct heap *heap, struct heap *owner, struct segment *seg,
			 struct page *pg, struct block *b)
{
	/* batched for a live default heap's owner to collect; a parked heap has none (its
	 * frees are pushed at once, for whoever adopts or dismantles it) */
	if (heap != &sefer__heap_empty && heap_is_default(owner) &&
	    !__atomic_load_n(&owner->parked, __ATOMIC_RELAXED)) {
		struct remote_batch *rb = remote_batch_for(&heap->remote, pg, b);

		if (rb) {
			batch_free(heap, rb, b);
			return;
		}
	}
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		if (xthread_free_refused(seg, b))
			return;
		block_mark_pending(b);
	}
	annotate_block_free(b, pg->block_size);
	if (heap != &sefer__heap_empty) {
		heap_stat_call(heap, frees);
		heap_stat_inc(heap, xthread_frees);
	}
	sefer__xthread_push(pg, b, b, 1);
}

/* free_slow() for a block of a page with no open batch: its segment's owner decides. */
static noinline void free_by_owner(struct heap *heap, struct segment *seg, struct page *pg,
				   void *p)
{
	struct heap *owner = atomic_load_explicit(&seg->owner, memory_order_relaxed);

	if (owner == LARGE_OWNER) {
		sefer__large_free(seg, p);
		return;
	}
	/* A thread's first call a free into a parked heap's segment (the next thread of a lane
	 * freeing what its predecessor left): it takes that heap over, and the free is local.
	 * Read the owner again: the heap is ours now, the segment may not be (a stale read). */
	if (heap == &sefer__heap_empty) {
		heap = sefer__heap_init_thread_for(owner_is_heap(owner) ? owner : NULL);
		if (!heap)
			heap = &sefer__heap_empty; /* no heap to be had: a cross-thread free */
		owner = atomic_load_explicit(&seg->owner, memory_order_relaxed);
	}
	/* Ours: the default heap's, or one of this thread's first-class heaps' (core/heaps.c: a
	 * local free into that heap). Either is cached for the fast path, which frees into seg's
	 * page and retires an emptied page into seg's owner (page_emptied); a first-class heap's
	 * not with a policy that keeps freed blocks in the caller's heap (they would change
	 * heaps). */
	if (owner == heap || heap_is_mine(owner, heap)) {
		if (owner == heap || !policy_keeps_small_blocks())
			owned_set(seg); /* the next frees take the fast path */
		/* Local but not plain: a full page, a pointer off the granule grid, or not a
		 * freeable block (block.h: block_freeable). */
		if (((uintptr_t)p & (GRANULE - 1)) || !block_freeable(pg, p)) {
			report_bad_free(seg, p);
			return;
		}
		sefer__free_local_block(owner, seg, pg, p);
		return;
	}
	/* Another heap's, or abandoned by an exited thread: pushed like any cross-thread free.
	 * A thread that needs memory reclaims abandoned segments and collects these frees
	 * (unowned.c). Adopting on free instead made a thread that frees old items (the next
	 * generation taking over its predecessor's, a main thread reaping its workers) own
	 * every segment it touched and spread its allocations over all of them: threadgen at
	 * two threads peaked at 2x mimalloc's RSS that way, and at 1.0x without. Freeing into
	 * an abandoned segment marks it as this heap's to reclaim first (abandoned_pick). */
	if (!owner && atomic_load_explicit(&seg->freed_by, memory_order_relaxed) != heap)
		atomic_store_explicit(&seg->freed_by, heap, memory_order_relaxed);
	xthread_free(heap, owner, seg, pg, p);
}

void sefer__free_slow(void *p)
{
	struct heap *heap = heap_get();
	struct remote_batch *rb = remote_slot(&heap->remote, p);

	/* for writing: a block another thread wrote last (a cross-thread free, the common case
	 * here) comes over once, not shared first and taken over when its mark is written (a
	 * prefetch of a pointer that turns out foreign does not fault) */
	prefetch_for_write(p);
	/* p's sefer page has an open batch, so it is a live page of a thread's default heap
	 * (remote.h), in a mapped segment: no segment table, no owner to ask. (It may be this
	 * thread's by now, an adopted segment: the block then reaches it through its xthread
	 * list, as it would have from the batch.) */
	if (rb->key == remote_key(p)) {
		batch_free(heap, rb, p);
		return;
	}
	struct segment *seg = segment_of(p);

	if (unlikely(!segtab_contains(seg))) {
		sefer__free_foreign(p);
		return;
	}
	free_by_owner(heap, seg, page_of(seg, p), p);
}
