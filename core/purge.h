/* SPDX-License-Identifier: MIT */
/*
 * Purging (core/purge.c): giving the memory of free dirty page slots back to the OS, and when.
 * Per slot, per segment, per segment set (a heap's), and process-wide for the segments no heap
 * owns (core/unowned.c walks those, purge.c decides what of each is due).
 */
#ifndef SEFER_CORE_PURGE_H
#define SEFER_CORE_PURGE_H

#include "core/init.h"
#include "core/segment.h"

/* Lower set's earliest purge deadline to `when` (0: nothing due). */
static inline void set_purge_at(struct segment_set *set, uint64_t when)
{
	if (when && (!set->next_purge || when < set->next_purge))
		set->next_purge = when;
}

/* a segment's slots */
SEFER_INTERNAL void sefer__purge_dirty(struct segment *seg);
SEFER_INTERNAL uint64_t sefer__segment_deadline(struct segment *seg);
SEFER_INTERNAL uint64_t sefer__segment_purge_due(struct segment *seg, uint64_t now, bool force,
						 uint64_t delay);
SEFER_INTERNAL void sefer__purge_slots_freed(struct segment *seg, uint64_t bits, uint64_t delay);
/* a segment set's timing and passes */
SEFER_INTERNAL uint64_t sefer__purge_delay(const struct segment_set *set);
SEFER_INTERNAL void sefer__purge_span_taken(struct segment_set *set, struct segment *seg,
					    uint64_t bits);
SEFER_INTERNAL void sefer__purge_schedule(struct segment_set *set, struct segment *seg);
SEFER_INTERNAL void sefer__segment_purge(struct segment_set *set, struct segment *seg,
					 uint64_t now, bool force);
SEFER_INTERNAL void sefer__purge_span_tails(struct segment_set *set);
SEFER_INTERNAL void sefer__purge_tail_recommit(struct page *pg, bool whole);
SEFER_INTERNAL void sefer__purge_set(struct segment_set *set, uint64_t now, bool force);
SEFER_INTERNAL void sefer__purge_pass(struct segment_set *set, bool force, bool on_the_way);
SEFER_INTERNAL void sefer__purge_calm(struct segment_set *set, uint64_t now);
SEFER_INTERNAL bool sefer__purge_deferred(struct segment_set *set, uint64_t now);
SEFER_INTERNAL void sefer__purge_backoff_check(struct segment_set *set, struct segment *seg,
					       uint64_t purged);
SEFER_INTERNAL void sefer__purge_backoff_wanted(struct segment_set *set, uint64_t since,
					       uint64_t now);
/* the segments no heap owns (spares, abandoned): one process-wide deadline */
SEFER_INTERNAL_EXTERN _Atomic(uint64_t) sefer__purge_at;
SEFER_INTERNAL_EXTERN _Atomic(unsigned) sefer__unowned_backoff; /* their delay's backoff */
SEFER_INTERNAL void sefer__global_purge_at(uint64_t when);
SEFER_INTERNAL void sefer__global_purge(uint64_t now, bool force);
SEFER_INTERNAL uint64_t sefer__purge_unowned_delay(void);
SEFER_INTERNAL uint64_t sefer__purge_kept_until(void);

/* A base delay this long is "never" (mallopt's M_TRIM_THRESHOLD < 0): no backoff applies. */
static inline bool delay_is_never(uint64_t base)
{
	return base > ((uint64_t)1 << 48);
}

/* The earlier of two deadlines (ms), 0 standing for none. */
static inline uint64_t deadline_first(uint64_t a, uint64_t b)
{
	return a && (!b || a < b) ? a : b;
}
/* thread generations: the last worker's exit, and the next threads taking what it left */
SEFER_INTERNAL void sefer__purge_last_exit(void);
SEFER_INTERNAL void sefer__purge_handoff_taken(void);
SEFER_INTERNAL void sefer__purge_handoff_used(struct segment *seg, uint64_t bits);

/* Is a purge pass worth a look (the set's deadline, or the global one, set)? */
static inline bool purge_pending(const struct segment_set *set)
{
	return set->next_purge || atomic_load_explicit(&sefer__purge_at, memory_order_relaxed);
}

/*
 * The owner's slow paths that take no span look at the deadlines too: a page emptied
 * (page_retire) and malloc's slow path, every PURGE_BEAT-th of them while a deadline is
 * pending, its dirty slots' or its kept pages' (set->kept_until; one clock read:
 * heap_heartbeat, core/heap.h), or while a policy keeps memory that ages (aging: the heap's
 * policy_aging, heap_keep_aging). Without them a thread that freed a phase's memory and went
 * on in the pages it had, taking no span, never purged it: 400,000 blocks of 48 B freed, then
 * a second of malloc/free of a few blocks, kept all 23 MiB resident
 * (Documentation/decommit.rst).
 */
#define PURGE_BEAT 64

static inline bool purge_heartbeat_due(struct segment_set *set, bool aging)
{
	return IS_ENABLED(CONFIG_DECOMMIT) &&
	       unlikely(purge_pending(set) || set->kept_until || aging) &&
	       !(++set->purge_beat & (PURGE_BEAT - 1));
}

/*
 * Does a heap's parking give back pg's tail past its carved blocks (core/purge.c, "span
 * tails")? Only a span of TAIL_MIN_BLOCKS blocks or more: blocks up to 256 B in 64 KiB pages.
 */
#define TAIL_MIN_BLOCKS 256

static inline bool span_tail_purgeable(const struct page *pg)
{
	return pg->capacity >= TAIL_MIN_BLOCKS;
}

/* The bytes of pg's span from its start to the first OS page no carved block touches. */
static inline size_t span_carved_bytes(const struct page *pg)
{
	return align_up(page_carved_bytes(pg), sefer__os_info.page_size);
}

/*
 * pg's purged tail, if it has one (core/purge.c, "span tails"), counts committed again: whole
 * when the span is freed or its segment released, else up to where a carve now reaches.
 */
static always_inline void page_tail_recommit(struct page *pg, bool whole)
{
	if (IS_ENABLED(CONFIG_DECOMMIT) && unlikely(pg->purged_tail))
		sefer__purge_tail_recommit(pg, whole);
}

#endif
