/* SPDX-License-Identifier: MIT */
/*
 * Remote frees: a thread's batches of cross-thread frees (core/remote.c).
 *
 * A free of a block that another thread's default heap owns does not go onto the block's page
 * at once. The freeing thread links it into an open batch for that page, one of REMOTE_SLOTS
 * slots in its own heap (picked by the page's address), and publishes the batch onto the
 * page's cross-thread list (page->xthread, core/page.c) with one compare-and-swap: when the
 * slot is wanted for another page, when the batch holds REMOTE_BATCH_BYTES, every
 * REMOTE_SWEEP_FREES cross-thread frees, at the thread's next malloc slow path, at
 * sefer_collect and at thread exit (or sefer_thread_done). So a consumer that frees runs of
 * blocks a producer allocated pays one atomic per batch, not one per block, and its owner
 * collects a whole batch as it collects a single block.
 *
 * A batched block is in the state of a pushed one: the program freed it, its page counts it
 * as handed out, and with CONFIG_DEBUG_DOUBLE_FREE it carries its pending mark (written by the
 * free, core/block.h), so a second free of it by any thread is reported as it is for a block
 * on the list. What the owner cannot reuse yet is bounded: less than REMOTE_BATCH_BYTES per
 * slot, REMOTE_SLOTS * REMOTE_BATCH_BYTES (256 KiB) per thread, held at most until one of the
 * points above.
 *
 * Only frees into a thread's default heap are batched. A first-class heap (core/heaps.c) may
 * be destroyed with its segments the moment its last block is freed, and a batch must never
 * hold a link into memory that is gone; an abandoned or held segment (core/owner.h) is pushed
 * at once too, so that a thread reclaiming it finds its blocks.
 *
 * The batches are the freeing thread's alone: no atomics but the publishing CAS.
 */
#ifndef SEFER_CORE_REMOTE_H
#define SEFER_CORE_REMOTE_H

#include "core/block.h"

struct heap;

#define REMOTE_SLOTS 16
#define REMOTE_BATCH_BYTES ((int32_t)16 << 10)
#define REMOTE_SWEEP_FREES 4096

/*
 * An open batch: blocks of one page, newest first, linked as the page's lists are, and a copy
 * of the page's geometry for the checks of CONFIG_DEBUG_DOUBLE_FREE (the xthread line's copies
 * are read once per batch, not once per free). A slot holds a page only while it holds one of
 * its blocks: that block keeps the page in use (counted as handed out), so the page cannot be
 * given back and carved for another size class under the copy.
 */
struct remote_batch {
	struct page *page; /* NULL: the slot is empty */
	struct block *head, *tail;
	int32_t bytes_left; /* published when it reaches 0 or less */
	uint32_t count;
	struct block_geometry geo;
} cacheline_aligned;

struct remote_frees {
	uint32_t open;	     /* bit i: slot[i] holds a batch */
	uint32_t sweep_left; /* cross-thread frees until every batch is published */
	struct remote_batch slot[REMOTE_SLOTS];
};
_Static_assert(REMOTE_SLOTS <= 32, "remote_frees.open has a bit per slot");

SEFER_INTERNAL struct remote_batch *sefer__remote_batch_open(struct remote_frees *r,
							     struct remote_batch *rb,
							     struct page *pg);
SEFER_INTERNAL void sefer__remote_batch_publish(struct remote_frees *r, struct remote_batch *rb);
SEFER_INTERNAL void sefer__remote_flush_all(struct remote_frees *r);
/* Push the chain head .. tail (n blocks of pg, linked, tail's link unset) onto pg's list. */
SEFER_INTERNAL void sefer__xthread_push(struct page *pg, struct block *head, struct block *tail,
					uint32_t n);

/* The slot of pg: its descriptor's index in its segment, mixed with the segment's address. */
static always_inline struct remote_batch *remote_slot(struct remote_frees *r,
						      const struct page *pg)
{
	uintptr_t a = (uintptr_t)pg;

	return &r->slot[((a / sizeof(struct page)) ^ (a >> SEGMENT_SHIFT)) & (REMOTE_SLOTS - 1)];
}

/*
 * The batch a block of pg, freed by the calling thread into another thread's default heap,
 * joins (its geometry set), or NULL when pg's blocks are too big to batch: push it at once.
 */
static always_inline struct remote_batch *remote_batch_for(struct remote_frees *r,
							   struct page *pg)
{
	struct remote_batch *rb = remote_slot(r, pg);

	if (likely(rb->page == pg))
		return rb;
	return sefer__remote_batch_open(r, rb, pg);
}

/* b, a block of pg checked and marked pending, joins rb = remote_batch_for(r, pg). */
static always_inline void remote_batch_add(struct remote_frees *r, struct remote_batch *rb,
					   struct page *pg, struct block *b)
{
	if (rb->page == pg) {
		block_set_next(b, rb->head);
		rb->head = b;
		rb->count++;
	} else {
		rb->page = pg;
		rb->head = rb->tail = b;
		rb->count = 1;
		rb->bytes_left = REMOTE_BATCH_BYTES;
		r->open |= 1u << (rb - r->slot);
	}
	rb->bytes_left -= (int32_t)rb->geo.block_size;
	if (rb->bytes_left <= 0)
		sefer__remote_batch_publish(r, rb);
	if (unlikely(--r->sweep_left == 0)) {
		r->sweep_left = REMOTE_SWEEP_FREES;
		sefer__remote_flush_all(r);
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
	r->open = 0;
	r->sweep_left = REMOTE_SWEEP_FREES;
	for (unsigned i = 0; i < REMOTE_SLOTS; i++)
		r->slot[i].page = NULL;
}

#endif
