/* SPDX-License-Identifier: MIT */
/*
 * Segments, the page map and blocks.
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
 *  - a span's descriptor: capacity blocks of block_size from start; used = the carved blocks
 *    handed out (a pending cross-thread free or a policy's block included), the others are
 *    on the free list: used + length(free) == reserved. malloc increments it, a local free
 *    (which pushes onto the free list: the next malloc of the class takes that block back
 *    while it is warm) decrements it, and 0 means the page is empty. Collecting cross-thread
 *    frees subtracts what it moves onto the free list; carving adds none.
 *  - a span's first reserved blocks from start are the carved ones; div_magic and fast_limit
 *    are set as block_start() needs (fast_limit 0 while the page is full); with
 *    CONFIG_DEBUG_DOUBLE_FREE every carved block that is free (on a free list, or held by a
 *    policy) carries its free mark, every one on a cross-thread list not yet collected its
 *    pending mark, and no block handed to the user carries either (see "free marks" below).
 *  - owner is the heap of the owning thread, NULL while abandoned, LARGE_OWNER for large
 *    segments. Only the owner touches the non-atomic fields of a small segment and its pages.
 */
#ifndef SEFER_CORE_SEGMENT_H
#define SEFER_CORE_SEGMENT_H

#include <stdatomic.h>

#include "core/annotate.h"
#include "core/bins.h"
#include "core/config.h"
#include "core/sync.h"

struct heap;

struct block {
	uintptr_t next; /* encoded with CONFIG_HARDENED, see block_next() */
};

/* Tags in the low bits of page->xthread (blocks are 16-byte aligned). */
enum xthread_tag {
	XT_NORMAL = 0,	 /* push the block, nothing else */
	XT_FULL = 1,	 /* page is in the owner's full queue: the pusher notifies the owner */
	XT_FREEING = 2,	 /* a pusher is linking the page into the owner's delayed list */
	XT_NOTIFIED = 3, /* page is on the owner's delayed list; or NEVER while abandoning */
};
#define XT_MASK ((uintptr_t)3)
#define XT_NEVER XT_NOTIFIED /* abandoned / abandoning: pushers only push */

enum page_flags {
	PAGE_FULL = 1, /* in heap->full */
};

struct page {
	/* Owner-only, hot: malloc pops free and counts used; free pushes free, counts used. */
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
	uint8_t in_queue;
	uint8_t pad_;
	uintptr_t start_word; /* the span's first byte, as meta_ptr_hide() stores it: page_start() */
	uint64_t div_magic;  /* floor(2^64 / block_size) + 1, 0 in an unused slot: block_start() */
	uint64_t fast_limit; /* block_limit(), but 0 while full or unused: block_fast_freeable() */

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
	 * force); unused while the slot is in a span (segment.c, "Purge timing") */
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

#define LARGE_OWNER ((struct heap *)1)
/* Held by the allocator itself, by no heap: a spare segment, or an abandoned one being purged.
 * Nobody adopts it and every free into it is refused or pushed like a cross-thread free. */
#define HELD_OWNER ((struct heap *)2)
/* Spare segments kept process-wide (segment.c) */
#define SPARE_MAX (4 * (CONFIG_SEGMENT_CACHE > 0 ? CONFIG_SEGMENT_CACHE : 1))

struct segment {
	_Atomic(struct heap *) owner;
	uint32_t kind;
	int32_t node;
	size_t size; /* bytes mapped */
	uintptr_t cookie;
	struct segment *next, *prev; /* heap's list, abandoned list, or segment cache */
	/* abandoned: the heap that last freed into it (reclaim's hint, heap.c); else stale */
	_Atomic(struct heap *) freed_by;
	struct sync_node reg;	     /* registry of live segments (RCU-walked) */

	/* small segments, owner-only */
	uint64_t free_pages;   /* slots in no span */
	uint64_t dirty_pages;  /* free slots whose memory is committed and was used */
	uint64_t purged_pages; /* free slots purged (given back to the OS) */
	uint64_t purge_at;     /* earliest slot_since + delay of a dirty slot (ms); 0 = none */
	uint32_t used_pages;
	bool has_space;	       /* on heap->segments (else heap->full_segments) */

	/* large segments */
	uintptr_t large_block_word; /* the block, as meta_ptr_hide() stores it: large_block() */
	size_t large_size;     /* usable bytes from large_block */
	size_t large_req;      /* bytes last asked for (malloc, realloc): core/alloc.c */
	struct heap *large_heap; /* the heap that allocated the block (set at each allocation) */
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
 * bytes (an OS page) after the header, before the first block page (segment.c).
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

/* ---- hardened free-list links ---- */
SEFER_INTERNAL_EXTERN uintptr_t sefer__list_key;
SEFER_INTERNAL_EXTERN uint64_t sefer__shuffle_key; /* seeds the heaps' shuffles (heap.c) */

static always_inline uintptr_t link_encode(const struct block *b, const struct block *next)
{
	if (IS_ENABLED(CONFIG_HARDENED))
		return (uintptr_t)next ^ sefer__list_key ^ ((uintptr_t)b >> 4);
	return (uintptr_t)next;
}

SEFER_INTERNAL void sefer__list_corrupt(const struct page *pg, const void *b, uintptr_t bad);

/*
 * ---- free marks (CONFIG_DEBUG_DOUBLE_FREE) ----
 * The second word of every free small block (carved, freed locally or collected, held by a
 * policy) is its *free mark*: the block's address keyed with a per-process secret
 * (sefer_mark_key). malloc clears it (one store into the line it reads the link from), so a
 * block handed to the program never carries it, and a free that finds it is a double free. User
 * data cannot hold it by accident (2^-64 for any one word; a self-pointer, as an empty list head
 * at offset 0 makes, is the bare address, not the mark), and learning the key takes reading
 * freed memory. The free fast path reads the word from the line it writes the link to: no other
 * cache line, where the byte-per-granule live map it replaces cost a second line per malloc and
 * per free and 4 KiB of resident map per 64 KiB page in use.
 *
 * A block on a cross-thread list, not yet collected, carries the *pending mark* instead (the
 * free mark with PENDING_FLIP flipped): a second free finds it, by another thread or by the
 * owner, whose fast path compares the mark's first two bytes only (block_mark_head_matches),
 * which the flip leaves alone, so it goes to free_slow(), which reads the whole word. The
 * collector checks it and writes the free mark.
 *
 * What a mark cannot tell, block_start() does: whether p is where a carved block starts (not
 * inside one, not past the carved ones), in one multiply and one compare.
 */
SEFER_INTERNAL_EXTERN uintptr_t sefer__mark_key;

static always_inline uintptr_t free_mark(const struct block *b)
{
	return (uintptr_t)b ^ sefer__mark_key;
}

/*
 * The bit a pending mark flips: outside the first two bytes of the word in memory, on either
 * byte order of a 64-bit word and on a little-endian 32-bit one.
 */
#define PENDING_FLIP ((uintptr_t)1 << 16)
_Static_assert(sizeof(uintptr_t) == 8 || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "PENDING_FLIP must lie outside the mark's first two bytes");

static always_inline uintptr_t pending_mark(const struct block *b)
{
	return free_mark(b) ^ PENDING_FLIP; /* odd too (sefer_mark_key is) */
}

/*
 * The accessors below are sefer's only accesses to a free block's bytes (its first granule);
 * each opens that granule to the memory checkers around the access (core/annotate.h).
 */
static always_inline void block_mark_free(struct block *b)
{
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		annotate_link_open(b);
		((uintptr_t *)b)[1] = free_mark(b);
		annotate_link_close(b);
	}
}

static always_inline void block_mark_pending(struct block *b)
{
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		annotate_link_open(b);
		/* atomic (relaxed, a plain store): a visit of the owner's heap may peek at it */
		__atomic_store_n(&((uintptr_t *)b)[1], pending_mark(b), __ATOMIC_RELAXED);
		annotate_link_close(b);
	}
}

/* The block is the program's now: no mark (malloc, and a policy handing a block out). */
static always_inline void block_clear_mark(struct block *b)
{
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		annotate_link_open(b);
		((uintptr_t *)b)[1] = 0;
		annotate_link_close(b);
	}
}

/* Does b's second word hold mark (free_mark or pending_mark of b)? */
static always_inline bool block_marked(const struct block *b, uintptr_t mark)
{
	bool marked;

	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return false;
	annotate_link_open(b);
	marked = ((const uintptr_t *)b)[1] == mark;
	annotate_link_close(b);
	return marked;
}

static always_inline bool block_marked_free(const struct block *b)
{
	return block_marked(b, free_mark(b));
}

static always_inline bool block_marked_pending(const struct block *b)
{
	return block_marked(b, pending_mark(b));
}

/* Does b's second word hold either of its marks (free, or pending a cross-thread collect)? */
static always_inline bool block_marked_free_or_pending(const struct block *b)
{
	bool marked;

	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return false;
	annotate_link_open(b);
	marked = !((((const uintptr_t *)b)[1] ^ free_mark(b)) & ~PENDING_FLIP);
	annotate_link_close(b);
	return marked;
}

/*
 * Do the first two bytes of b's second word match those of its free mark? The free fast
 * path's test; a match is only a maybe, which free_slow() settles with the whole word. Two
 * bytes, not eight, because of store forwarding: a program that writes a field at offset 8 and
 * frees the block soon after (a bignum's limb, a struct's int or short) has that store still in
 * flight, and a load wider than it waits until it reaches the cache, where a load it contains
 * is forwarded. A malloc/free loop that writes an int at offset 8 ran at a quarter of its speed
 * with the eight-byte load; one that writes a short there at half with the four-byte load.
 * Separate byte stores to offsets 8 and 9 still make it wait. A live block's head matches for
 * 2^-16 of random data; a constant field matches in at most one 16-byte slot in 4096.
 */
static always_inline bool block_mark_head_matches(const struct block *b)
{
	uintptr_t mark = free_mark(b);
	uint16_t head, mark_head;

	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return false;
	annotate_link_open(b);
	__builtin_memcpy(&head, &((const uintptr_t *)b)[1], sizeof(head));
	annotate_link_close(b);
	__builtin_memcpy(&mark_head, &mark, sizeof(mark_head));
	return head == mark_head;
}

static always_inline struct block *block_next(const struct page *pg, const struct block *b)
{
	uintptr_t n;

	annotate_link_open(b);
	if (IS_ENABLED(CONFIG_HARDENED)) {
		n = b->next ^ sefer__list_key ^ ((uintptr_t)b >> 4);
		annotate_link_close(b);
		if (unlikely(n && (n - page_start_addr(pg)) >= page_span_bytes(pg)))
			sefer__list_corrupt(pg, b, n);
		return (struct block *)n;
	}
	n = b->next;
	annotate_link_close(b);
	return (struct block *)n;
}

static always_inline void block_set_next(struct block *b, const struct block *next)
{
	annotate_link_open(b);
	b->next = link_encode(b, next);
	annotate_link_close(b);
}

/* ---- block starts ---- */
static inline uint64_t div_magic_of(uint32_t block_size)
{
	return UINT64_MAX / block_size + 1 + (UINT64_MAX % block_size == block_size - 1);
}

/*
 * floor(off / block_size), given div_magic_of(block_size): one multiply where a divide costs
 * 25-40 cycles (malloc_usable_size, which zmalloc-style wrappers call on every malloc and
 * free, realloc, cross-thread frees). M = floor(2^64 / d) + 1 is ceil(2^64 / d) unless d is a
 * power of two, and then 2^64 / d + 1; the high half of off * M is floor(off / d) for every
 * 32-bit off either way (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
 * 2019: 64 >= 32 + log2(d)). Offsets into a span are below 2^32: spans are at most 1 MiB.
 */
static always_inline uint32_t block_index_of(uint64_t div_magic, uint32_t off)
{
	return (uint32_t)(((unsigned __int128)div_magic * off) >> 64);
}
_Static_assert(CONFIG_SEGMENT_SHIFT < 32, "block_index_of() takes 32-bit offsets");

/* Is off a multiple of block_size? One multiply: off * M modulo 2^64 is below M exactly then. */
static always_inline bool block_offset_divisible(uint64_t div_magic, uint32_t off)
{
	return (uint64_t)off * div_magic < div_magic;
}

/*
 * block_start()'s bound for the blocks pg has carved: reserved * e, where e is what
 * block_size * div_magic exceeds 2^64 by (1 <= e <= block_size).
 */
static inline uint64_t block_limit(const struct page *pg)
{
	return (uint64_t)pg->reserved * (uint64_t)(pg->block_size * pg->div_magic);
}

/*
 * Is p the start of one of pg's carved blocks, with limit = block_limit(pg)? One multiply and
 * one compare. With M = floor(2^64 / d) + 1 and e = d * M - 2^64 (1 <= e <= d), an offset
 * q * d + r (0 <= r < d) times M is q * e + r * M modulo 2^64: q * e when d divides it, at
 * least M when it does not. So off * M < reserved * e holds exactly for the starts of blocks
 * 0 .. reserved - 1 while reserved * e < M, which spans of up to 1 MiB keep far below (2^33
 * against 2^47); after Lemire, Kaser and Kurz, "Faster remainder by direct computation"
 * (2019), brute-forced for every class and offset when this was written. limit 0 fails every
 * pointer: an unused slot, and (fast_limit) a full page. Owner-only.
 */
static always_inline bool block_start(const struct page *pg, const void *p, uint64_t limit)
{
	return ((uintptr_t)p - page_start_addr(pg)) * pg->div_magic < limit;
}

/*
 * The free fast path's test: may the owner free b into pg right here? A carved block start
 * without the free or pending mark (their common head: block_mark_head_matches), in a page
 * that is not full: a full page's fast_limit is 0 (page_set_full), so one test sends a bad
 * free, a free into a full page and a head that happens to match to free_slow, which tells
 * them apart with the whole word. Without CONFIG_DEBUG_DOUBLE_FREE only fullness is tested.
 */
static always_inline bool block_unmarked_start(const struct page *pg, const struct block *b,
						 uint64_t limit, bool head_only)
{
	/* two tests, each unlikely to fail: the compiler lays the fast path out as one line */
	if (unlikely(!block_start(pg, b, limit)))
		return false;
	return likely(head_only ? !block_mark_head_matches(b) : !block_marked_free_or_pending(b));
}

static always_inline bool block_fast_freeable(const struct page *pg, const struct block *b)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return !pg->flags;
	return block_unmarked_start(pg, b, pg->fast_limit, true);
}

/* The same for the owner's slow paths, full pages included, with the whole mark. */
static inline bool block_freeable(const struct page *pg, const struct block *b)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return true;
	return block_unmarked_start(pg, b, block_limit(pg), false);
}

/*
 * Owner, or any thread that has stopped the owner (checks, visits): is b, a carved block, the
 * program's? Pending blocks are (the owner has not taken them back yet). b may be live, so its
 * mark is peeked at, not opened (core/annotate.h). Always true without
 * CONFIG_DEBUG_DOUBLE_FREE (the callers then ask the free lists).
 */
static inline bool block_live(const struct block *b)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return true;
	return annotate_peek_word(&((const uintptr_t *)b)[1]) != free_mark(b);
}

/*
 * Any thread: why b, a carved block start that may be live, is not the program's (its free or
 * its pending mark), or NULL. The mark is peeked at, not opened (core/annotate.h). Always NULL
 * without CONFIG_DEBUG_DOUBLE_FREE.
 */
static always_inline const char *block_freed_reason(const struct block *b)
{
	uintptr_t mark;

	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return NULL;
	mark = annotate_peek_word(&((const uintptr_t *)b)[1]);
	if (mark == free_mark(b))
		return "block is already free";
	if (mark == pending_mark(b))
		return "block is already free (cross-thread, pending)";
	return NULL;
}

/* Does p's slot of seg map a page descriptor? Always in a small segment, never in a large one. */
static always_inline bool slot_has_page(const struct segment *seg, const void *p)
{
	return seg->page_off[((uintptr_t)p & SEGMENT_MASK) >> SPAGE_SHIFT] != 0;
}

/* What pg->fast_limit must be: block_limit(), or 0 while the page is full. */
static inline uint64_t page_fast_limit(const struct page *pg)
{
	return pg->flags & PAGE_FULL ? 0 : block_limit(pg);
}

/* pg goes into (out of) its heap's full queue: the flag, and the fast path's limit. */
static inline void page_set_full(struct page *pg)
{
	pg->flags |= PAGE_FULL;
	pg->fast_limit = page_fast_limit(pg);
}

static inline void page_clear_full(struct page *pg)
{
	pg->flags &= (uint16_t)~PAGE_FULL;
	pg->fast_limit = page_fast_limit(pg);
}

/*
 * Offset of a large segment's block from the segment start for an alignment: past the header
 * up to (not including) the page descriptors, aligned to max(align, CACHELINE). Shared with
 * policies that fill large_alloc, which re-place the block of a reused segment.
 */
static inline size_t large_block_offset(size_t align)
{
	size_t a = align > CACHELINE ? align : CACHELINE;

	return align_up(__builtin_offsetof(struct segment, pages), a);
}

SEFER_INTERNAL __must_check bool sefer__large_guard_place(struct segment *seg, size_t off,
							  size_t size);
SEFER_INTERNAL size_t sefer__large_guard_bytes(void);

/* The most a large segment can hold `off` bytes in: what follows, less the guard page. */
static inline size_t large_room(const struct segment *seg, size_t off)
{
	size_t g = IS_ENABLED(CONFIG_GUARD_PAGES) ? sefer__large_guard_bytes() : 0;

	return seg->size > off + g ? seg->size - off - g : 0;
}

/*
 * Place a large segment's block `off` bytes in for a request of `size` bytes: large_block and
 * large_size (usable bytes). Without CONFIG_GUARD_PAGES the block gets the rest of the
 * segment; with it the block ends at the first OS page boundary at or after size and the
 * guard page is (moved) there (segment.c). False when seg cannot hold the block and a guard
 * (or the guard could not be set): seg is then unchanged. Policies that re-place the block
 * of a reused segment call this.
 */
static inline bool large_place(struct segment *seg, size_t off, size_t size)
{
	if (IS_ENABLED(CONFIG_GUARD_PAGES))
		return sefer__large_guard_place(seg, off, size);
	large_block_set(seg, (uint8_t *)seg + off);
	seg->large_size = seg->size - off;
	return true;
}

/* Doubly linked lists of segments through next/prev (a heap's lists, the spares, a first-class
 * heap's large blocks): the caller holds whatever lock guards the list. */
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
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		*head = seg->next;
	if (seg->next)
		seg->next->prev = seg->prev;
	seg->next = seg->prev = NULL;
}

/* segment.c */
SEFER_INTERNAL __must_check struct segment *sefer__segment_alloc_small(struct heap *heap);
SEFER_INTERNAL __must_check struct segment *sefer__segment_alloc_large(struct heap *heap,
								       size_t size, size_t align);
SEFER_INTERNAL void sefer__segment_free(struct heap *heap, struct segment *seg);
SEFER_INTERNAL void sefer__segment_release(struct segment *seg);
SEFER_INTERNAL __must_check struct segment *sefer__segment_resize_large(struct segment *seg,
									size_t size, size_t align);
/*
 * Mapped bytes of the large segments, process-wide: in use, cached by a policy, or on their way
 * back to the OS; policies size caches by it. Kept where large segments are mapped and released,
 * never at a malloc or a free: a counter there is a cache line every thread's large malloc and
 * free would write (two threads each freeing and reallocating a 4 MiB buffer ran at a third of
 * one thread's rate on it).
 */
SEFER_INTERNAL_EXTERN atomic_size_t sefer__large_mapped;
SEFER_INTERNAL __must_check struct page *sefer__span_alloc(struct heap *heap, unsigned pages);
SEFER_INTERNAL bool sefer__heap_has_span_space(struct heap *heap, unsigned pages);
SEFER_INTERNAL void sefer__span_free(struct heap *heap, struct page *pg);
SEFER_INTERNAL void sefer__segment_purge(struct heap *heap, struct segment *seg, uint64_t now,
					 bool force);
SEFER_INTERNAL void sefer__heap_cache_to_spares(struct heap *heap);
SEFER_INTERNAL void sefer__span_free_slots(struct segment *seg, struct page *pg, uint64_t delay);
SEFER_INTERNAL void sefer__segment_drop(struct heap *heap, struct segment *seg);
SEFER_INTERNAL void sefer__segment_spare(struct segment *seg, bool force);
SEFER_INTERNAL uint64_t sefer__segment_deadline(struct segment *seg);
SEFER_INTERNAL uint64_t sefer__segment_purge_due(struct segment *seg, uint64_t now, bool force,
			   uint64_t delay);
SEFER_INTERNAL uint64_t sefer__heap_purge_delay(const struct heap *heap);
SEFER_INTERNAL void sefer__heap_purge_calm(struct heap *heap, uint64_t now);
SEFER_INTERNAL bool sefer__heap_purge_deferred(struct heap *heap, uint64_t now);
SEFER_INTERNAL void sefer__purge_backoff_check(struct heap *heap, struct segment *seg,
					       uint64_t purged);
SEFER_INTERNAL void sefer__purge_dirty(struct segment *seg);
SEFER_INTERNAL uint64_t sefer__spare_purge(uint64_t now, bool force);
SEFER_INTERNAL void sefer__global_purge_at(uint64_t when);
SEFER_INTERNAL_EXTERN _Atomic(uint64_t) sefer__purge_at;
SEFER_INTERNAL void sefer__spare_fork_prepare(void) __acquires(spare_lock);
SEFER_INTERNAL void sefer__spare_fork_parent(void) __releases(spare_lock);
SEFER_INTERNAL void sefer__spare_fork_child(void) __releases(spare_lock);

#endif
