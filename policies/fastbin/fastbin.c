// SPDX-License-Identifier: MIT
/*
 * fastbin slow paths: give the magazine back to the pages at heap teardown (thread exit), and
 * say how many blocks it holds (stats queries).
 */
#include "core/heap.h"

/*
 * Called by heap_abandon() before it collects the pages, with no page marked full, so a block
 * only needs to go back on its page's free list; emptied pages are freed right after.
 */
void sefer__fastbin_heap_exit(struct heap *h)
{
	struct fastbin_heap *fb = &h->policy.fastbin;

	for (unsigned bin = 1; bin < FASTBIN_BINS; bin++) {
		while (fb->count[bin]) {
			struct block *b = fb->slot[bin][--fb->count[bin]];
			struct segment *seg = segment_of(b);
			struct page *pg = page_of(seg, b);

			(void)page_free_push(pg, b, false); /* emptied pages: freed right after */
		}
	}
}

/*
 * The magazine's blocks per bin, for a stats query on any thread while the owner runs: one
 * volatile read of each count (the owner writes them with plain stores; a snapshot is what is
 * asked for, so the read is left out of ThreadSanitizer's instrumentation).
 */
__attribute__((no_sanitize("thread"))) void sefer__fastbin_held(struct heap *h, uint64_t *counts)
{
	struct fastbin_heap *fb = &h->policy.fastbin;

	for (unsigned bin = 1; bin < FASTBIN_BINS; bin++)
		counts[bin] += *(volatile uint32_t *)&fb->count[bin];
}
