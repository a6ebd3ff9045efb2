/* SPDX-License-Identifier: MIT */
/*
 * Remote frees: a thread's batches of cross-thread frees (core/remote.c).
 *
 * A free of a block that another thread's default heap owns does not go onto the block's page
 * at once. The freeing thread links it into an open batch for that page, one of REMOTE_SLOTS
 * slots in its own heap (picked by the page's address), and publishes the batch onto the
 * page's cross-thread list (page->xthread, core/page.c) with one compare-and-swap, the list's
 * length added in the same word (core/segment.h): when the slot is wanted for another page,
 * when the batch holds REMOTE_BATCH_BYTES; and every batch when all of them hold
 * REMOTE_HELD_BYTES, at the thread's next malloc slow path or large request, at sefer_collect
 * and at thread exit (or sefer_thread_done). So a consumer that frees runs of blocks a
 * producer allocated pays one atomic per batch, not one per block, and the owner takes a whole
 * batch as it takes a single block, with no walk.
 *
 * A batched block is in the state of a pushed one: the program freed it, its page counts it
 * as handed out, and with CONFIG_DEBUG_DOUBLE_FREE it carries its pending mark (written by the
 * free, core/block.h), so a second free of it by any thread is reported as it is for a block
 * on the list. What the owner cannot reuse yet is bounded: less than REMOTE_BATCH_BYTES per
 * batch, less than REMOTE_HELD_BYTES (256 KiB) per thread, held at most until one of the points
 * above. 64 slots, not 16: a consumer of blocks of 16..1024 bytes frees into some 20 pages at
 * once, and 16 direct-mapped slots evicted a batch at 30% of its frees.
 *
 * Only frees into a thread's default heap are batched: a segment is given back only when its
 * blocks are all free, and a batched block is not, so a batch never links into memory that is
 * gone. A first-class heap (core/heaps.c) may be destroyed with its segments the moment its
 * last block is freed, so its blocks are pushed at once. So are those of a segment an exited
 * thread abandoned: when the last thread but one exits, the abandoned segments are collected
 * and given back at once (core/heap.c), and a batch of the thread left would keep them; and
 * those of a held segment (core/owner.h), which is passing through.
 *
 * The batches are the freeing thread's alone: no atomics but the publishing CAS.
 */
#ifndef SEFER_CORE_REMOTE_H
#define SEFER_CORE_REMOTE_H

#include "core/block.h"

struct heap;

#define REMOTE_SLOTS 64
#define REMOTE_BATCH_BYTES ((int32_t)16 << 10)
#define REMOTE_HELD_BYTES ((int32_t)256 << 10)

/*
 * An open batch: blocks of one page, newest first, linked as the page's lists are, and a copy
 * of the page's geometry for the checks of CONFIG_DEBUG_DOUBLE_FREE (the xthread line's copies
 * are read once per batch, not once per free). A slot holds a page only while it holds one of
 * its blocks: that block keeps the page in use (counted as handed out), so the page cannot be
 * given back and carved for another size class under the copy, nor its segment unmapped.
 *
 * The slot is found, and told to be the block's, from the block's address alone (remote_key):
 * a free that joins an open batch reads neither the segment table nor the segment header, the
 * page is found from the batch's blocks when it is published. A span of several sefer pages
 * (blocks of 8 KiB and up) may have a batch per page.
 */
struct remote_batch {
	uintptr_t key; /* remote_key() of the sefer page its blocks lie in; 0: the slot is empty */
	struct block *head, *tail;
	/* blocks it takes in all (REMOTE_BATCH_BYTES of them, rounded up; set when the slot
	 * opens for a page, not changed while it holds blocks), and still: published at 0. Its
	 * length is size - left: one counter per free, not a count and a byte count. */
	uint16_t size, left;
	struct block_geometry geo;
} cacheline_aligned;

struct remote_frees {
	uint64_t open;	    /* bit i: slot[i] holds a batch */
	int32_t held_left; /* every batch is published when the batches hold this many more bytes */
	struct remote_batch slot[REMOTE_SLOTS];
};
_Static_assert(REMOTE_SLOTS <= 64, "remote_frees.open has a bit per slot");
#define REMOTE_SLOT_SHIFT 6 /* log2(sizeof(struct remote_batch)): remote_slot() */
_Static_assert(sizeof(struct remote_batch) == (size_t)1 << REMOTE_SLOT_SHIFT,
	       "remote_slot() computes a slot's byte offset");
_Static_assert(REMOTE_BATCH_BYTES <= UINT16_MAX,
	       "remote_batch.size holds a batch of 1-byte blocks");

SEFER_INTERNAL struct remote_batch *sefer__remote_batch_open(struct remote_frees *r,
							     struct remote_batch *rb,
							     struct page *pg);
SEFER_INTERNAL void sefer__remote_batch_publish(struct remote_frees *r, struct remote_batch *rb);
SEFER_INTERNAL void sefer__remote_flush_all(struct remote_frees *r);
/* Push the chain head .. tail (n blocks of pg, linked, tail's link unset) onto pg's list. */
SEFER_INTERNAL void sefer__xthread_push(struct page *pg, struct block *head, struct block *tail,
					uint32_t n);

/*
 * A batch's key: the last byte of the sefer page (SPAGE_SIZE, aligned) that p lies in, never 0
 * (an empty slot's), whatever p is (NULL and foreign pointers reach free_slow too).
 */
static always_inline uintptr_t remote_key(const void *p)
{
	return (uintptr_t)p | (SPAGE_SIZE - 1);
}

/*
 * The slot of the page p lies in: the page's index in its segment, mixed with the segment's
 * (pages at one index of two threads' segments, laid out alike, would take turns in one slot).
 * Computed as the slot's byte offset, where indexing cost xfer's cross-thread free three more
 * instructions.
 */
static always_inline struct remote_batch *remote_slot(struct remote_frees *r, const void *p)
{
	uintptr_t a = (uintptr_t)p;
	uintptr_t off = ((a >> (SPAGE_SHIFT - REMOTE_SLOT_SHIFT)) ^
			 (a >> (SEGMENT_SHIFT - REMOTE_SLOT_SHIFT))) &
			((uintptr_t)(REMOTE_SLOTS - 1) << REMOTE_SLOT_SHIFT);

	return (struct remote_batch *)((char *)r->slot + off);
}

/*
 * The batch b, a block of pg freed by the calling thread into another thread's default heap,
 * joins (its geometry set), or NULL when pg's blocks are too big to batch: push it at once.
 */
static always_inline struct remote_batch *remote_batch_for(struct remote_frees *r,
							   struct page *pg,
							   const struct block *b)
{
	struct remote_batch *rb = remote_slot(r, b);

	if (likely(rb->key == remote_key(b)))
		return rb;
	return sefer__remote_batch_open(r, rb, pg);
}

/*
 * b, a block checked and marked pending, joins rb = remote_batch_for(r, pg, b); joins is
 * rb->key == remote_key(b), read by the caller before it marked b: the compiler reloads
 * rb->key after the mark's atomic store, and the test it then cannot drop cost xfer's
 * cross-thread free five instructions and a jump.
 */
static always_inline void remote_batch_add(struct remote_frees *r, struct remote_batch *rb,
					   struct block *b, bool joins)
{
	if (joins) {
		block_set_next(b, rb->head);
		rb->head = b;
	} else {
		rb->key = remote_key(b);
		rb->head = rb->tail = b;
		rb->left = rb->size;
		r->open |= (uint64_t)1 << (rb - r->slot);
	}
	r->held_left -= (int32_t)rb->geo.block_size;
	if (unlikely(r->held_left <= 0)) {
		rb->left--; /* b is in the batch: size - left counts it */
		sefer__remote_flush_all(r);
	} else if (!--rb->left) {
		sefer__remote_batch_publish(r, rb);
	}
}

/* Publish every open batch of the calling thread's (a latency bound: core/remote.h). */
static inline void remote_flush(struct remote_frees *r)
{
	if (r->open)
		sefer__remote_flush_all(r);
}

static inline void remote_frees_reset(struct remote_frees *r)
{
	r->held_left = REMOTE_HELD_BYTES;
	/* Only the open slots hold a key (publish clears both): a thread that never frees into
	 * another heap leaves the slots of a fresh heap struct untouched, not even read (struct
	 * heap keeps them last, core/heap.h). */
	for (uint64_t m = r->open; m; m &= m - 1)
		r->slot[__builtin_ctzll(m)].key = 0;
	r->open = 0;
}

#endif
