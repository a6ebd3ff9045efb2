/* SPDX-License-Identifier: MIT */
/*
 * Blocks: the links of the page free lists (encoded with CONFIG_HARDENED), the free and
 * pending marks of CONFIG_DEBUG_DOUBLE_FREE, the block-start test of the free paths, and the
 * one sequence that puts a block back on its page's free list (page_free_push).
 *
 * The invariants these accessors keep are the page's (core/segment.h): used + length(free) ==
 * reserved, and with CONFIG_DEBUG_DOUBLE_FREE every carved free block carries its free mark.
 */
#ifndef SEFER_CORE_BLOCK_H
#define SEFER_CORE_BLOCK_H

#include "core/annotate.h"
#include "core/segment.h"

struct block {
	uintptr_t next; /* encoded with CONFIG_HARDENED, see block_next() */
};

/* ---- hardened free-list links ---- */
SEFER_INTERNAL_EXTERN uintptr_t sefer__list_key;
SEFER_INTERNAL_EXTERN uint64_t sefer__shuffle_key; /* seeds the heaps' shuffles (heap.c) */

static always_inline uintptr_t link_encode(const struct block *b, const struct block *next)
{
	if (IS_ENABLED(CONFIG_HARDENED))
		return (uintptr_t)next ^ sefer__list_key ^ ((uintptr_t)b >> 4);
	return (uintptr_t)next;
}

/* The link stored in b's first word, decoded: the address of the next free block, or 0. */
static always_inline uintptr_t link_decode(const struct block *b, uintptr_t stored)
{
	return link_encode(b, (const struct block *)stored); /* the same xor */
}

/*
 * Reports b's link bad (block_link_bad) and aborts. It returns void * only so that the malloc
 * fast path reaches it by a tail jump, not a call that would need a stack frame.
 */
SEFER_INTERNAL void *sefer__list_corrupt(const struct page *pg, const void *b, uintptr_t bad)
	__cold;

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
 * A block freed by another thread than its owner carries the *pending mark* instead (the free
 * mark with PENDING_FLIP flipped), written by that free: in the freeing thread's batch
 * (core/remote.h), on the page's cross-thread list, and on the free list after the owner
 * collected it, until malloc hands it out again (collecting does not touch the blocks:
 * page_collect_xthread). A second free finds it, by any thread, the owner's fast path
 * included: that compares the mark's first two bytes only (block_mark_head_matches), which the
 * flip leaves alone, so it goes to free_slow(), which reads the whole word.
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

/* b's link, decoded with CONFIG_HARDENED: the next free block of b's page, or 0. */
static always_inline uintptr_t block_link(const struct block *b)
{
	uintptr_t n;

	annotate_link_open(b);
	n = b->next;
	annotate_link_close(b);
	return link_decode(b, n);
}

/*
 * Is n, the link read from b, one of pg's free blocks, to be reported rather than followed? The
 * end of the list (0) never is. With CONFIG_HARDENED a link outside pg's span is (the link is
 * encoded, so a write over it decodes to a random value, almost never inside). Otherwise with
 * CONFIG_DEBUG_FREE_LIST a link outside b's segment is: what a write after free leaves in a
 * block's first word (bytes of a string, a number, a pointer into another segment, 0 excepted)
 * is one, and the test is a xor and a compare with no load, where the span's costs two loads
 * and four more instructions on malloc's fast path (Documentation/debugging.rst). Each test
 * fails first and only then is 0 told apart.
 */
static always_inline bool block_link_bad(const struct page *pg, const struct block *b,
					 uintptr_t n)
{
	if (IS_ENABLED(CONFIG_HARDENED))
		return unlikely((n - page_start_addr(pg)) >= page_span_bytes(pg)) && n;
	if (IS_ENABLED(CONFIG_DEBUG_FREE_LIST))
		return unlikely((n ^ (uintptr_t)b) >= SEGMENT_SIZE) && n;
	return false;
}

/* b's successor on pg's free list; a bad link (block_link_bad) is reported, then abort. */
static always_inline struct block *block_next(const struct page *pg, const struct block *b)
{
	uintptr_t n = block_link(b);

	if (unlikely(block_link_bad(pg, b, n)))
		sefer__list_corrupt(pg, b, n);
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
 * A span's geometry as another thread sees it: its copies on the xthread line (core/segment.h,
 * page_xthread_geometry) or, for the page of an open batch of remote frees, the batch's copy of
 * them (core/remote.h). reserved only grows while the span is in use, so an older copy may
 * refuse a block carved since, never accept one that is not.
 */
struct block_geometry {
	uintptr_t start;    /* the span's first byte */
	uint64_t div_magic; /* div_magic_of(block_size) */
	uint64_t limit;	    /* geometry_set_limit(): block_start()'s bound, or 0 */
	uint32_t block_size, reserved;
};

/* Is b one of the carved blocks of a span of geometry g? Any thread. */
static always_inline bool geometry_has_block(const struct block_geometry *g, const struct block *b)
{
	uintptr_t off = (uintptr_t)b - g->start;
	uint32_t i;

	if (!g->block_size || (uintptr_t)b < g->start || off >= SEGMENT_SIZE)
		return false;
	i = block_index_of(g->div_magic, (uint32_t)off);
	return (uint32_t)off == i * g->block_size && i < g->reserved;
}

/* pg's geometry from its copies on the xthread line. Any thread. */
static inline void page_xthread_geometry(const struct page *pg, struct block_geometry *g)
{
	g->start = meta_ptr_show(atomic_load_explicit(&pg->xt_start, memory_order_relaxed));
	g->div_magic = atomic_load_explicit(&pg->xt_div_magic, memory_order_relaxed);
	g->block_size = atomic_load_explicit(&pg->xt_block_size, memory_order_relaxed);
	g->reserved = atomic_load_explicit(&pg->xt_reserved, memory_order_relaxed);
}

/*
 * g->limit: block_start()'s bound (block_limit()) for g, so that geometry_block_start() tests a
 * block in one multiply and one compare, where geometry_has_block() takes some twenty
 * instructions (a cross-thread free's batch: core/remote.h). The copies are read one at a time
 * and may mix two of a slot's spans when the free is a bad one (a block of a span freed since):
 * a div_magic that is not block_size's could make the bound accept the inside of a block, so
 * the bound is 0 (every block goes to the full test) unless div_magic is block_size's. One
 * divide per batch, not per free.
 */
static inline void geometry_set_limit(struct block_geometry *g)
{
	g->limit = 0;
	if (g->block_size && g->div_magic == div_magic_of(g->block_size))
		g->limit = (uint64_t)g->reserved * (uint64_t)(g->block_size * g->div_magic);
}

/*
 * Is b, in one of g's span's slots, one of its carved blocks, with g->limit set? The test of
 * block_start() below on g's copies: a false answer is only a maybe (a stale or unset bound),
 * which geometry_has_block() settles.
 */
static always_inline bool geometry_block_start(const struct block_geometry *g,
					       const struct block *b)
{
	return ((uintptr_t)b - g->start) * g->div_magic < g->limit;
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

/*
 * Does pg still pass the page half of block_fast_freeable()? For a block that passed the whole
 * test before the caller made pg full (realloc mallocs between its test and its free, and the
 * new block may come from the same page): the block's half (a carved start, no mark) cannot
 * have changed meanwhile.
 */
static always_inline bool page_fast_open(const struct page *pg)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return !pg->flags;
	return pg->fast_limit != 0;
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
 * program's? Not with either mark: a pending block was freed, though its page counts it as
 * handed out until the owner collects it (and a collected one may keep the mark on the free
 * list: page_collect_xthread). b may be live, so its mark is peeked at, not opened
 * (core/annotate.h). Always true without CONFIG_DEBUG_DOUBLE_FREE (the callers then ask the
 * free lists).
 */
static inline bool block_live(const struct block *b)
{
	uintptr_t mark;

	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return true;
	mark = annotate_peek_word(&((const uintptr_t *)b)[1]);
	return mark != free_mark(b) && mark != pending_mark(b);
}

/*
 * Any thread: does b, a carved block start that may be live, carry either of its marks? One
 * load and one compare: block_freed_reason() says which.
 */
static always_inline bool block_freed(const struct block *b)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return false;
	return !((annotate_peek_word(&((const uintptr_t *)b)[1]) ^ free_mark(b)) & ~PENDING_FLIP);
}

/* The same asking: does b, a carved block, carry its pending mark? */
static inline bool block_pending(const struct block *b)
{
	if (!IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		return false;
	return annotate_peek_word(&((const uintptr_t *)b)[1]) == pending_mark(b);
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

/*
 * What pg->fast_limit must be: block_limit(), or 0 while the page is full or, with
 * CONFIG_DEBUG_DOUBLE_FREE, while it is_zero. The free fast path then never finds is_zero set:
 * a fresh page's first free goes to free_slow(), which clears it (page_free_push) once, and
 * the fast path tests nothing for it (without the option it tests is_zero itself).
 */
static inline uint64_t page_fast_limit(const struct page *pg)
{
	if ((pg->flags & PAGE_FULL) || (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE) && pg->is_zero))
		return 0;
	return block_limit(pg);
}

/* pg's blocks no longer all read as zero: is_zero off, and the fast path's limit with it. */
static inline void page_clear_zero(struct page *pg)
{
	pg->is_zero = 0;
	pg->fast_limit = page_fast_limit(pg);
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
 * b, a block of pg the owner freed (its free mark written), goes onto pg's free list: LIFO, so
 * the next malloc of the class takes it back while it is warm. One block fewer is the
 * program's (segment.h: used + length(free) == reserved). Returns whether pg is empty now; the
 * caller handles that and a full page. The free fast path (from_fast_path: it passed
 * block_fast_freeable()), free_local_block() and the fastbin policy giving its blocks back all
 * push through here.
 */
static always_inline bool page_free_push(struct page *pg, struct block *b, bool from_fast_path)
{
	block_set_next(b, pg->free);
	pg->free = b;
	/* With CONFIG_DEBUG_DOUBLE_FREE the fast path has no is_zero to clear (page_fast_limit).
	 * Otherwise a load and a predicted branch: a store on every free cost 3-4% in tight
	 * alloc/free loops (bignum, 16-byte bulk). */
	if (!(from_fast_path && IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) && unlikely(pg->is_zero))
		page_clear_zero(pg);
	return unlikely(--pg->used == 0);
}

/*
 * ---- the uncounted first page ----
 * A read-modify-write of used on every malloc was 4-7% of a malloc/free loop's time (steady at
 * one thread: Documentation/benchmarks.rst), so the first page of a bin queue counts nothing
 * when malloc pops: it is the only page malloc pops from (the direct table's, page_find's
 * answer moved to the front, a lender's). Its free fast path still counts down, from
 * UNCOUNTED_BASE: at 0 it takes the slow call a page that empties takes (page_emptied), which
 * starts the count again and beats the heap's heartbeat (heap_heartbeat), so a thread that
 * mallocs and frees in its first pages only still gives back what its purge deadlines make
 * due, as it did when that page emptied. Its blocks handed out are reserved minus the length
 * of its free list: page_used() walks it where a figure is needed (at most capacity links: a
 * heap's slow paths, the statistics, the checks), and page_count() settles it into used when
 * the page leaves the front of its queue (the queue functions, page.c), so every other page is
 * counted exactly as it was.
 * Builds for a memory checker count every page: another thread's statistics would read the
 * free blocks of a first page, which the checker owns (core/inuse.c).
 */
#define PAGE_FIRST_UNCOUNTED (!IS_ENABLED(CONFIG_VALGRIND) && !IS_ENABLED(CONFIG_SANITIZE_ADDRESS))
#define UNCOUNTED_BASE ((uint32_t)1024) /* frees per slow call: 64 calls per heartbeat */

/* The length of pg's free list, counted up to max links. */
static inline uint32_t page_free_len_upto(const struct page *pg, uint32_t max)
{
	uint32_t n = 0;

	for (const struct block *b = pg->free; b && n < max; b = block_next(pg, b))
		n++;
	return n;
}

/* The length of pg's free list: at most reserved + 1 links (a longer one is a cycle). */
static inline uint32_t page_free_len(const struct page *pg)
{
	return page_free_len_upto(pg, pg->reserved + 1);
}

/* The free blocks of pg, up to max: a counted page's figure, an uncounted one's bounded walk. */
static inline uint32_t page_free_upto(const struct page *pg, uint32_t max)
{
	if (PAGE_FIRST_UNCOUNTED && pg->uncounted)
		return page_free_len_upto(pg, max);
	return pg->reserved - pg->used;
}

/* The blocks of pg handed out (segment.h): used, or for an uncounted page the walk. Owner. */
static inline uint32_t page_used(const struct page *pg)
{
	if (PAGE_FIRST_UNCOUNTED && pg->uncounted) {
		uint32_t n = page_free_len(pg);

		return n < pg->reserved ? pg->reserved - n : 0;
	}
	return pg->used;
}

/* pg becomes the first page of its bin queue: uncounted from now. Owner. */
static inline void page_uncount(struct page *pg)
{
	if (PAGE_FIRST_UNCOUNTED && !pg->uncounted) {
		pg->uncounted = 1;
		pg->used = UNCOUNTED_BASE;
	}
}

SEFER_INTERNAL void sefer__page_settle(struct page *pg);

/* pg stops being the first page of its queue (or leaves its heap): counted again. Owner. */
static always_inline void page_count(struct page *pg)
{
	if (PAGE_FIRST_UNCOUNTED && pg->uncounted)
		sefer__page_settle(pg); /* page.c: out of line, in the hot text */
}

#endif
