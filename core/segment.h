/* SPDX-License-Identifier: MIT */
/*
 * Segments: their layout, the page map, the segment lists, and the segment set a heap owns.
 *
 * A segment is SEGMENT_SIZE bytes aligned to SEGMENT_SIZE (a large segment is bigger, with the
 * same alignment) with struct segment at its start, so segment_of(p) is a mask. Small
 * segments are cut into PAGES_PER_SEGMENT pages; the first META_PAGES hold this header. A run
 * of pages (a span, 1..16 pages) serves one size class and is described by the descriptor of
 * its first page; page_off[] maps every page index to the byte offset of its span's first page
 * descriptor from the segment start (an unused slot to pages[0], a descriptor with span 0).
 *
 * Invariants (checked by sefer_check_heap()):
 *  - free_pages has a bit per page slot not in any span; used_pages counts slots in spans.
 *  - a span's descriptor: capacity blocks of block_size from start; the carved blocks handed
 *    out (a pending cross-thread free or a policy's block included) are reserved minus
 *    length(free), the others being on the free list. A counted page keeps that figure in
 *    used: malloc increments it, a local free (which pushes onto the free list: the next
 *    malloc of the class takes that block back while it is warm) decrements it, and 0 means
 *    the page is empty. Collecting cross-thread frees subtracts what it moves onto the free
 *    list; carving adds none. The first page of each bin queue, the only one malloc pops
 *    from, is uncounted (every build but a memory checker's, block.h): malloc's fast path
 *    counts nothing, used only runs down from UNCOUNTED_BASE, and the figure is the walk of
 *    its free list (page_used()), settled into used when the page stops being first.
 *  - a span's first reserved blocks from start are the carved ones; div_magic and fast_limit
 *    are set as block_start() needs (fast_limit 0 while the page is full); with
 *    CONFIG_DEBUG_DOUBLE_FREE every carved block that is free (on a free list, or held by a
 *    policy) carries its free mark, every one on a cross-thread list not yet collected its
 *    pending mark, and no block handed to the user carries either (core/block.h).
 *  - owner is the heap of the owning thread, or one of the values of core/owner.h. Only the
 *    owner touches the non-atomic fields of a small segment and its pages.
 *
 * The block accessors are in core/block.h, large placement in core/large.h, spans in
 * core/span.h, purging in core/purge.h, spare and abandoned segments in core/unowned.h.
 */
#ifndef SEFER_CORE_SEGMENT_H
#define SEFER_CORE_SEGMENT_H

#include <stdatomic.h>

#include "core/bins.h"
#include "core/config.h"
#include "core/debug.h"
#include "core/owner.h"
#include "core/sync.h"

struct block;

/*
 * page->xthread: the list's first block, a tag in its low bits (blocks are 16-byte aligned),
 * and on 64-bit targets the list's length in the bits above CONFIG_VA_BITS (no block lies
 * above 2^VA_BITS: core/segtab.h), so the owner takes the list and its length in one exchange
 * and need not walk it (page_collect_xthread). A length the field cannot hold reads as
 * XT_COUNT_UNKNOWN, and the owner counts.
 */
enum xthread_tag {
	XT_NORMAL = 0,	 /* push the block, nothing else */
	XT_FULL = 1,	 /* page is in the owner's full queue: the pusher notifies the owner */
	XT_FREEING = 2,	 /* a pusher is linking the page into the owner's delayed list */
	XT_NOTIFIED = 3, /* page is on the owner's delayed list; or NEVER while abandoning */
};
#define XT_MASK ((uintptr_t)3)
#define XT_NEVER XT_NOTIFIED /* abandoned / abandoning: pushers only push */

#if UINTPTR_MAX > 0xffffffffu
#define XT_COUNT_SHIFT CONFIG_VA_BITS
#define XT_PTR_MASK ((((uintptr_t)1 << XT_COUNT_SHIFT) - 1) & ~XT_MASK)
#define XT_COUNT_UNKNOWN ((uint32_t)(UINTPTR_MAX >> XT_COUNT_SHIFT))
_Static_assert(64 - CONFIG_VA_BITS <= 32, "the length field fits a uint32_t");

/* The length of the list in v, or XT_COUNT_UNKNOWN. */
static inline uint32_t xt_count(uintptr_t v)
{
	return (uint32_t)(v >> XT_COUNT_SHIFT);
}

/* The length field of a list of v's blocks and n more. */
static inline uintptr_t xt_count_add(uintptr_t v, uint32_t n)
{
	uint32_t c = xt_count(v);

	c = c >= XT_COUNT_UNKNOWN - n ? XT_COUNT_UNKNOWN : c + n;
	return (uintptr_t)c << XT_COUNT_SHIFT;
}
#else /* no room: the owner counts */
#define XT_PTR_MASK (~XT_MASK)
#define XT_COUNT_UNKNOWN 0u

static inline uint32_t xt_count(uintptr_t v)
{
	(void)v;
	return XT_COUNT_UNKNOWN;
}

static inline uintptr_t xt_count_add(uintptr_t v, uint32_t n)
{
	(void)v, (void)n;
	return 0;
}
#endif

static inline uintptr_t xt_ptr(uintptr_t v)
{
	return v & XT_PTR_MASK;
}

static inline uintptr_t xt_tag(uintptr_t v)
{
	return v & XT_MASK;
}

enum page_flags {
	PAGE_FULL = 1, /* in heap->full */
};

struct page {
	/*
	 * Owner-only, hot: malloc pops free, free pushes it and counts used down. malloc pops only
	 * from the first page of a bin queue, which is uncounted (below): it counts used up only
	 * in a memory checker's build, where every page is counted.
	 */
	struct block *free;
	uint32_t used;
	uint16_t flags;
	uint8_t bin;
	uint8_t is_zero; /* every block not yet handed out reads as zero past its first two
			  * words (the link and the free mark) */
	uint32_t block_size;
	uint32_t capacity; /* blocks in the span */
	uint32_t reserved; /* blocks carved from the span so far (the rest is untouched) */
	uint8_t span;	   /* pages in this span; 0 for an unused slot */
	uint8_t index;	   /* page index in the segment */
	uint8_t warm_tail; /* it took dirty slots: past its carved blocks, memory an earlier
			    * span used may still be resident (core/purge.c, "span tails") */
	uint8_t warm_slots; /* its first warm_slots slots were warm_pages when it took them:
			     * carved and resident, so a carve there costs no memory (page_extend) */
	uintptr_t start_word; /* the span's first byte, as meta_ptr_hide() stores it: page_start() */
	uint64_t div_magic;  /* floor(2^64 / block_size) + 1, 0 in an unused slot: block_start() */
	uint64_t fast_limit; /* block_limit(), but 0 while full or unused: block_fast_freeable() */
	uint32_t purged_tail; /* 0, or the offset in the span from which its tail was purged
			       * and is not counted committed (core/purge.c, "span tails") */
	uint8_t uncounted; /* the first page of its bin queue: used is no count (block.h) */

	/* Written by other threads: on its own cache line (shared only with cold queue links). */
	_Atomic(uintptr_t) xthread cacheline_aligned; /* tagged list of cross-thread frees */
	struct page *delayed_next;		       /* link in the owner's delayed list */
	/* Copies of start, block_size, reserved and div_magic for other threads' checks (they must
	 * not read the owner's hot line); written by the owner at page_init / page_extend. */
	_Atomic(uintptr_t) xt_start; /* start_word */
	_Atomic(uint32_t) xt_block_size, xt_reserved;
	_Atomic(uint64_t) xt_div_magic; /* of xt_block_size: block_index_of() */
	struct page *next, *prev;		       /* bin queue or full queue */
	/* a free slot: ms when its span was freed (dirty), or when it was purged (0: purged by
	 * force); unused while the slot is in a span (core/purge.c, "Timing") */
	uint64_t slot_since;
} cacheline_aligned;

/*
 * A metadata word that holds the address of a block's first byte (a span's start, a large
 * block) is stored through meta_ptr_hide(). Under CONFIG_VALGRIND the word is the address's
 * complement, a kernel-half value that is no pointer: memcheck scans sefer's segments for
 * pointers when it looks for leaks, and a plain copy of the address there made a leaked block
 * that starts a span or a large segment "still reachable" instead of "definitely lost".
 * Elsewhere the key is 0 and the code is what a plain pointer field would give.
 */
#define META_PTR_KEY (IS_ENABLED(CONFIG_VALGRIND) ? ~(uintptr_t)0 : (uintptr_t)0)

static always_inline uintptr_t meta_ptr_hide(const void *p)
{
	return (uintptr_t)p ^ META_PTR_KEY;
}

static always_inline uintptr_t meta_ptr_show(uintptr_t word)
{
	return word ^ META_PTR_KEY;
}

static always_inline uintptr_t page_start_addr(const struct page *pg)
{
	return meta_ptr_show(pg->start_word);
}

static always_inline uint8_t *page_start(const struct page *pg)
{
	return (uint8_t *)page_start_addr(pg);
}

static inline void page_set_start(struct page *pg, uint8_t *start)
{
	pg->start_word = meta_ptr_hide(start);
}

_Static_assert(__builtin_offsetof(struct page, xthread) == CACHELINE,
	       "the owner's fields of struct page must fit its first cache line");

enum segment_kind { SEG_SMALL = 1, SEG_LARGE = 2 };

struct segment {
	_Atomic(struct heap *) owner;
	uint32_t kind;
	int32_t node;
	size_t size; /* bytes mapped */
	uintptr_t cookie;
	struct segment *next, *prev; /* heap's list, abandoned list, or segment cache */
	/* abandoned: the heap that last freed into it (reclaim's hint, unowned.c); else stale */
	_Atomic(struct heap *) freed_by;
	struct sync_node reg;	     /* registry of live segments (RCU-walked) */

	/* small segments, owner-only */
	uint64_t free_pages;   /* slots in no span */
	uint64_t dirty_pages;  /* free slots whose memory is committed and was used */
	uint64_t purged_pages; /* free slots purged (given back to the OS) */
	uint64_t unowned_purged; /* of those, purged while no heap owned it (core/purge.c) */
	uint64_t handoff_pages;  /* free slots a kept last exit handed to the next threads */
	/* dirty slots the span that last held them carved to their end: resident whole (read
	 * only with dirty_pages: a purge clears the dirty bit, not this one); span_alloc's
	 * warm_slots */
	uint64_t warm_pages;
	uint64_t purge_at;     /* earliest slot_since + delay of a dirty slot (ms); 0 = none */
	uint32_t used_pages;
	bool has_space;	       /* on its set's with_space list (else its full list) */

	/* large segments */
	uintptr_t large_block_word; /* the block, as meta_ptr_hide() stores it: large_block() */
	size_t large_size;     /* usable bytes from large_block */
	size_t large_req;      /* bytes last asked for (malloc, realloc): core/alloc.c */
	struct heap *large_heap; /* the heap that allocated the block (set at each allocation) */
	/* cached freed (a policy's, policies/large_cache): ms at which the cache's aging pass first
	 * saw it there, 0 = not yet */
	uint64_t large_cached_ms;
	_Atomic int large_live; /* 1 while allocated (double-free check) */
	bool large_zero;
#if IS_ENABLED(CONFIG_HEAPS)
	uint8_t large_tracked; /* on large_heap's list of live large blocks (core/heaps.c) */
#endif
#if IS_ENABLED(CONFIG_GUARD_PAGES)
	uint8_t *large_guard; /* the inaccessible page right after the block, or NULL */
#endif

	/* page_of() in one load and one add; never 0 in a small segment (an unused slot maps to
	 * pages[0]), always 0 in a large one (never written): usable_size_any()'s test */
	uint16_t page_off[PAGES_PER_SEGMENT];
	struct page pages[PAGES_PER_SEGMENT];
};

/* A large segment's block (meta_ptr_hide() above says why it is stored as a word). */
static always_inline uint8_t *large_block(const struct segment *seg)
{
	return (uint8_t *)meta_ptr_show(seg->large_block_word);
}

static inline void large_block_set(struct segment *seg, uint8_t *block)
{
	seg->large_block_word = meta_ptr_hide(block);
}

/*
 * With CONFIG_GUARD_PAGES the metadata pages keep room for a guard page of up to GUARD_MAX
 * bytes (an OS page) after the header, before the first block page (core/large.h).
 */
#define GUARD_MAX (IS_ENABLED(CONFIG_GUARD_PAGES) ? (size_t)16 << 10 : (size_t)0)
#define META_PAGES ((sizeof(struct segment) + GUARD_MAX + SPAGE_SIZE - 1) >> SPAGE_SHIFT)
#define ALL_PAGES_MASK                                                                            \
	((PAGES_PER_SEGMENT == 64 ? ~0ULL : ((1ULL << PAGES_PER_SEGMENT) - 1)) &                 \
	 ~((1ULL << META_PAGES) - 1))
_Static_assert(META_PAGES < PAGES_PER_SEGMENT / 2, "segment header too big for the page size");
_Static_assert(__builtin_offsetof(struct segment, pages[PAGES_PER_SEGMENT]) <= UINT16_MAX,
	       "page_off must reach every page descriptor");

/* The page_off value of page index idx's descriptor. */
static inline uint16_t page_desc_off(size_t idx)
{
	return (uint16_t)__builtin_offsetof(struct segment, pages[idx]);
}

static always_inline struct segment *segment_of(const void *p)
{
	return (struct segment *)((uintptr_t)p & ~(uintptr_t)SEGMENT_MASK);
}

static always_inline struct page *page_of(struct segment *seg, const void *p)
{
	size_t idx = ((uintptr_t)p & SEGMENT_MASK) >> SPAGE_SHIFT;

	return (struct page *)((uint8_t *)seg + seg->page_off[idx]);
}

static inline size_t page_span_bytes(const struct page *pg)
{
	return (size_t)pg->span << SPAGE_SHIFT;
}

/* The bytes of pg's carved blocks, in use or free: from the span's start to the carve's end. */
static inline size_t page_carved_bytes(const struct page *pg)
{
	return (size_t)pg->reserved * pg->block_size;
}

/* Doubly linked lists of segments through next/prev (a segment set's lists, the spares, a
 * first-class heap's large blocks): the caller holds whatever lock guards the list. */
static inline void segment_list_push(struct segment **head, struct segment *seg)
{
	seg->prev = NULL;
	seg->next = *head;
	if (*head)
		(*head)->prev = seg;
	*head = seg;
}

static inline void segment_list_remove(struct segment **head, struct segment *seg)
{
	sefer_assert(seg->prev ? seg->prev->next == seg : *head == seg); /* seg is on this list */
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		*head = seg->next;
	if (seg->next)
		seg->next->prev = seg->prev;
	seg->next = seg->prev = NULL;
}

/*
 * A small segment's slot states agree (for assertions, core/debug.h): dirty and purged slots
 * are free ones and none is both, and used_pages counts the slots in spans (the header's not).
 */
/* The slot bits of a run of n slots from slot idx. */
static inline uint64_t segment_slot_bits(unsigned n, unsigned idx)
{
	return (n == 64 ? ~0ULL : ((1ULL << n) - 1)) << idx;
}

static inline bool segment_slots_agree(const struct segment *seg)
{
	return !((seg->dirty_pages | seg->purged_pages) & ~seg->free_pages) &&
	       !(seg->dirty_pages & seg->purged_pages) && !(seg->free_pages & ~ALL_PAGES_MASK) &&
	       !(seg->unowned_purged & ~seg->purged_pages) &&
	       seg->used_pages == (uint32_t)__builtin_popcountll(ALL_PAGES_MASK & ~seg->free_pages);
}

/* Every span head of a small segment. */
#define for_each_span(seg, pg, idx)                                                          \
	for (size_t idx = META_PAGES; idx < PAGES_PER_SEGMENT;                                 \
	     idx += (seg)->pages[idx].span ? (seg)->pages[idx].span : 1)                       \
		if (((pg) = &(seg)->pages[idx])->span)

/*
 * The small segments one heap owns, and what decides when their free slots are purged: what
 * the segment, span and purge code works on (they never see the rest of struct heap). Every
 * small segment of the set is on exactly one of its lists; owner-only, no locks.
 */
struct segment_set {
	struct segment *with_space; /* small segments with free page slots */
	struct segment *full;	    /* small segments with none */
	struct segment *cache;	    /* empty segments kept for reuse */
	unsigned ncache;
	/* the owner runs: empty segments go to the cache; else (exiting, destroyed) to the
	 * spares (core/unowned.c) */
	bool live;
	struct heap *owner; /* what seg->owner holds for the set's segments */
	/* Purge timing (core/purge.c). The set's purge delay is SEFER_PURGE_DELAY_MS <<
	 * purge_backoff: raised when a span takes slots purged a short while ago, lowered after
	 * a calm spell. */
	uint64_t next_purge; /* ms of the earliest pending purge, 0 = none */
	unsigned purge_backoff;
	uint64_t backoff_since; /* ms of the last change of purge_backoff */
	bool purge_deferred;	/* a late pass left the slots for one more delay ("resuming") */
	uint64_t warm_spans;	   /* spans that took dirty slots */
	uint64_t warm_at_deferral; /* warm_spans when the pass deferred */
	unsigned purge_beat;	   /* the owner's slow paths that took no span (heap_heartbeat) */
	/* ms from which the owner's kept empty pages are given back (core/page.c), 0 = none
	 * kept since: the heartbeat runs while it is set (purge_heartbeat_due) */
	uint64_t kept_until;
};

/*
 * Every segment of set on the lists that hold spans (with_space, full) and, with with_cache,
 * its cache's empty ones too. The list heads are read once, at the start, and seg->next after
 * the body, as the loops this replaced did.
 */
#define for_each_set_segment(set, seg, with_cache)                                            \
	for (struct segment *const *list_ = (struct segment *const[3]){                        \
		     (set)->with_space, (set)->full, (set)->cache },                             \
				   *const *lists_end_ = list_ + ((with_cache) ? 3 : 2);         \
	     list_ < lists_end_; list_++)                                                      \
		for (struct segment *seg = *list_; seg; seg = seg->next)

/* segment.c: mapping, publication, a set's cache, release */
/* What a fresh mapping holds, for the huge-page advice SEFER_THP gives it (sefer__thp_advise). */
enum thp_use {
	THP_USE_SMALL, /* a small-object segment of a small heap; a heap struct */
	THP_USE_DENSE, /* a small-object segment of a heap with CONFIG_THP_DENSE_SEGMENTS of them */
	THP_USE_LARGE, /* a large block's segment */
	THP_USE_TABLE, /* the segment table: as SMALL, but never asked for huge pages */
};

SEFER_INTERNAL void *sefer__segment_map(size_t size, size_t align, int node, enum thp_use use);
SEFER_INTERNAL void sefer__thp_advise(void *mem, size_t size, enum thp_use use);
SEFER_INTERNAL void sefer__segment_unmap(void *mem, size_t size);
SEFER_INTERNAL void sefer__segment_publish(struct segment *seg);
SEFER_INTERNAL void sefer__segment_unpublish(struct segment *seg);
SEFER_INTERNAL struct segment *sefer__segment_cache_take(struct segment_set *set);
SEFER_INTERNAL __must_check struct segment *
sefer__segment_alloc_small(struct segment_set *set, struct segment *seg, int node);
SEFER_INTERNAL void sefer__segment_free_slots(struct segment *seg, struct page *pg, uint64_t delay);
SEFER_INTERNAL void sefer__segment_unlist(struct segment_set *set, struct segment *seg);
SEFER_INTERNAL void sefer__segment_free(struct segment_set *set, struct segment *seg);
SEFER_INTERNAL void sefer__segment_release(struct segment *seg);
SEFER_INTERNAL void sefer__segment_set_reset(struct segment_set *set, struct heap *owner);
SEFER_INTERNAL void sefer__segment_set_add(struct segment_set *set, struct segment *seg);

#endif
