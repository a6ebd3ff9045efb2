// SPDX-License-Identifier: MIT
/*
 * Remote frees: the freeing thread's batches (core/remote.h) and the one sequence that puts a
 * chain of blocks onto a page's cross-thread list (xthread_push; the tag protocol is page.c's).
 *
 * Why batches: with a CAS per block on the page's xthread word, that word's cache line moves
 * between the freeing thread's core and the owner's, which takes the list with its own CAS
 * whenever its page runs dry. One CAS per batch of blocks of one page divides that by the
 * batch's length (xfer, a consumer freeing a producer's blocks, callgrind over 1M frees: 64 B,
 * one CAS per 224 blocks; 16..1024 B, one per 9), and the batch's length rides in the same CAS
 * (core/segment.h), so the owner takes list and length in one exchange and need not walk the
 * list. The batch keeps a copy of its page's geometry for the free checks, and is found from
 * the block's address (remote_key), so a free that joins an open batch reads no line of the
 * page descriptor, the segment header or the segment table at all.
 */
#include "core/heap.h"
#include "core/remote.h"

void sefer__xthread_push(struct page *pg, struct block *head, struct block *tail, uint32_t n)
{
	uintptr_t old = atomic_load_explicit(&pg->xthread, memory_order_relaxed), tag, next;

	do {
		tag = old & XT_MASK;
		block_set_next(tail, (struct block *)xt_ptr(old));
		next = (uintptr_t)head | (tag == XT_FULL ? XT_FREEING : tag) | xt_count_add(old, n);
		/* release: the owner's acquire in collect sees the links (and pending marks)
		 * written before; acquire: when we take FULL, the owner's earlier writes
		 * (page_to_full's release) are visible before we write pg->delayed_next. */
	} while (!atomic_compare_exchange_weak_explicit(
		&pg->xthread, &old, next, memory_order_acq_rel, memory_order_relaxed));
	if (tag != XT_FULL)
		return;

	/* We moved the page FULL -> FREEING: tell its owner, which cannot change meanwhile.
	 * acquire is not what makes this safe: the owner wrote seg->owner before its release
	 * CAS to FULL, which our acq_rel CAS above read, so the value is already visible; heap
	 * structs are never unmapped and `delayed` is atomic. Kept as acquire for clarity. */
	struct heap *owner = atomic_load_explicit(&segment_of(pg)->owner, memory_order_acquire);
	struct page *first = atomic_load_explicit(&owner->delayed, memory_order_relaxed);

	/* release: publishes pg->delayed_next to the owner's acquire exchange (heap.c). */
	do
		pg->delayed_next = first;
	while (!atomic_compare_exchange_weak_explicit(&owner->delayed, &first, pg,
						      memory_order_release, memory_order_relaxed));
	/* release FREEING -> NOTIFIED: pairs with the owner's acquire in wait_not_freeing() and
	 * segment_mark_never(), which then know the delayed-list link above is complete. */
	old = atomic_load_explicit(&pg->xthread, memory_order_relaxed);
	while ((old & XT_MASK) == XT_FREEING &&
	       !atomic_compare_exchange_weak_explicit(&pg->xthread, &old,
						      (old & ~XT_MASK) | XT_NOTIFIED,
						      memory_order_release, memory_order_relaxed))
		;
}

void sefer__remote_batch_publish(struct remote_frees *r, struct remote_batch *rb)
{
	uint32_t n = (uint32_t)(rb->size - rb->left);

	sefer__xthread_push(page_of(segment_of(rb->head), rb->head), rb->head, rb->tail, n);
	rb->key = 0;
	r->open &= ~((uint64_t)1 << (rb - r->slot));
	r->held_left += (int32_t)(n * rb->geo.block_size); /* as remote_batch_add() took them */
}

void sefer__remote_flush_all(struct remote_frees *r)
{
	while (r->open)
		sefer__remote_batch_publish(r, &r->slot[__builtin_ctzll(r->open)]);
	r->held_left = REMOTE_HELD_BYTES;
}

struct remote_batch *sefer__remote_batch_open(struct remote_frees *r, struct remote_batch *rb,
					      struct page *pg)
{
	uint32_t bs = atomic_load_explicit(&pg->xt_block_size, memory_order_relaxed);

	if (bs >= (uint32_t)REMOTE_BATCH_BYTES)
		return NULL; /* a batch of one: no slot taken from the others */
	if (rb->key)
		sefer__remote_batch_publish(r, rb);
	page_xthread_geometry(pg, &rb->geo);
	geometry_set_limit(&rb->geo);
	/* at most REMOTE_BATCH_BYTES; a copy read across a change (a bad free, refused when it
	 * is checked) may have any size, 0 included */
	bs = rb->geo.block_size;
	rb->size = (uint16_t)(bs ? (REMOTE_BATCH_BYTES + bs - 1) / bs : 1);
	return rb;
}
