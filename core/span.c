// SPDX-License-Identifier: MIT
/*
 * Spans: where a run of page slots for one size class goes among a segment set's small
 * segments, and what its slots become when it is given back.
 *
 * A new span goes on the policy's node first and takes dirty slots first (memory one phase of
 * a program freed is reused warm by the next instead of being purged and faulted in again);
 * only when no segment of the set has room does the set take another segment: its cache's, a
 * spare (an exited heap's empty segment, core/unowned.c), or a new one (core/segment.c). A
 * freed span's slots become free and dirty, timed for purging (segment_free_slots); a segment
 * it empties is kept, released, or made a spare when its heap is exiting. Owner-only, no locks.
 */
#include "core/purge.h"
#include "core/segment.h"
#include "core/span.h"
#include "core/unowned.h"
#include "sefer/os.h" /* SEFER_NO_NODE */

/* First slot of a run of n free slots in mask, or -1. */
static int find_run(uint64_t free, unsigned n)
{
	uint64_t r = free;

	for (unsigned k = 1; k < n && r; k++)
		r &= free >> k;
	return r ? __builtin_ctzll(r) : -1;
}

/*
 * A segment of set with a run of n free slots, on `node` unless node < 0; NULL if none. With
 * warm, only runs of dirty slots: memory the program used and freed, still committed.
 */
static struct segment *find_space(struct segment_set *set, unsigned n, int node, bool warm,
				  int *idx)
{
	for (struct segment *seg = set->with_space; seg; seg = seg->next) {
		if (node >= 0 && seg->node != node)
			continue;
		*idx = find_run(warm ? seg->free_pages & seg->dirty_pages : seg->free_pages, n);
		if (*idx >= 0)
			return seg;
	}
	return NULL;
}

/* Where span_alloc() puts a span of n slots: the policy's node first, dirty slots first. */
static struct segment *span_place(struct segment_set *set, unsigned n, int node, int *idx)
{
	struct segment *seg = NULL;

	if (node >= 0 && !(seg = find_space(set, n, node, true, idx)))
		seg = find_space(set, n, node, false, idx);
	if (!seg && !(seg = find_space(set, n, SEFER_NO_NODE, true, idx)))
		seg = find_space(set, n, SEFER_NO_NODE, false, idx);
	return seg;
}

/* Is there a run of n dirty free slots in the set's segments (memory a span reuses warm)? */
bool sefer__span_has_dirty_space(struct segment_set *set, unsigned n)
{
	int idx;

	return find_space(set, n, SEFER_NO_NODE, true, &idx) != NULL;
}

/* Is there a run of n free slots in the set's segments? */
bool sefer__span_has_space(struct segment_set *set, unsigned n)
{
	int idx;

	return find_space(set, n, SEFER_NO_NODE, false, &idx) != NULL;
}

/* A span of n slots of set, on node if the set has room there (SEFER_NO_NODE: anywhere). */
struct page *sefer__span_alloc(struct segment_set *set, unsigned n, int node)
{
	int idx = -1;
	struct segment *seg = span_place(set, n, node, &idx);

	if (!seg) {
		/* a segment the set has not placed spans in yet: its cache's, else a spare (an
		 * exited heap's empty segment), else a new one */
		seg = sefer__segment_cache_take(set);
		if (!seg)
			seg = sefer__segment_alloc_small(set, sefer__spare_take(set->owner), node);
		if (!seg)
			return NULL;
		idx = find_run(seg->free_pages, n);
	}

	sefer_assert(idx >= 0 && segment_slots_agree(seg));
	uint64_t bits = segment_slot_bits(n, (unsigned)idx);
	struct page *pg = &seg->pages[idx];
	uint64_t purged = seg->purged_pages & bits;

	sefer_assert((seg->free_pages & bits) == bits); /* the span takes free slots only */

	pg->is_zero = !(seg->dirty_pages & bits) && (!purged || IS_ENABLED(CONFIG_PURGE_DONTNEED));
	pg->warm_tail = (seg->dirty_pages & bits) != 0;
	uint64_t cold = ~((seg->warm_pages & seg->dirty_pages & bits) >> idx);

	pg->warm_slots = (uint8_t)(cold ? __builtin_ctzll(cold) : 64);
	sefer__purge_span_taken(set, seg, bits);
	seg->free_pages &= ~bits;
	seg->dirty_pages &= ~bits;
	seg->purged_pages &= ~bits;
	seg->used_pages += n;
	for (unsigned i = 0; i < n; i++)
		seg->page_off[idx + i] = page_desc_off((size_t)idx);
	pg->span = (uint8_t)n;
	pg->index = (uint8_t)idx;
	page_set_start(pg, (uint8_t *)seg + ((size_t)idx << SPAGE_SHIFT));
	if (!seg->free_pages || find_run(seg->free_pages, 1) < 0) {
		segment_list_remove(&set->with_space, seg);
		seg->has_space = false;
		segment_list_push(&set->full, seg);
	}
	return pg;
}

void sefer__span_free(struct segment_set *set, struct page *pg)
{
	struct segment *seg = segment_of(pg);
	bool had_space = seg->has_space;

	sefer__segment_free_slots(seg, pg, sefer__purge_delay(set));
	if (!had_space) {
		segment_list_remove(&set->full, seg);
		segment_list_push(&set->with_space, seg);
	}
	if (seg->used_pages == 0) {
		sefer__segment_unlist(set, seg);
		if (set->live)
			sefer__segment_free(set, seg);
		else
			sefer__spare_put(seg); /* an exiting heap's: for the next thread */
		return;
	}
	sefer__purge_schedule(set, seg);
}
