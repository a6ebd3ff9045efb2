// SPDX-License-Identifier: MIT
/*
 * fastbin slow path: give the magazine back to the pages at heap teardown (thread exit).
 * Called by heap_abandon() before it collects the pages, with no page marked full, so a block
 * only needs to go back on its page's free list; emptied pages are freed right after.
 */
#include "core/heap.h"

void sefer__fastbin_heap_exit(struct heap *h)
{
	struct fastbin_heap *fb = &h->policy.fastbin;

	for (unsigned bin = 1; bin < FASTBIN_BINS; bin++) {
		while (fb->count[bin]) {
			struct block *b = fb->slot[bin][--fb->count[bin]];
			struct segment *seg = segment_of(b);
			struct page *pg = page_of(seg, b);

			(void)page_free_push(pg, b); /* emptied pages: freed right after */
		}
	}
}
