// SPDX-License-Identifier: MIT
/*
 * The large_cache policy: hit, miss, the size window and alignment, budget eviction order,
 * decay over an injected clock, env parsing, a thread's cache kept with its parked heap for the
 * next thread and released when due or dismantled, collect, and the handoff of
 * a block freed by another thread (heapless or not) to its allocating heap, also after that
 * heap's thread exited and its heap was reused.
 * With the policy off, one test checks that a freed large block is unmapped at once.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/annotate.h"
#include "core/heap.h"
#include "core/large.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/segment.h"
#include "core/segtab.h"
#include "selftest/decommit/workload.h"
#include "selftest/unit/keepalive.h"
#include "selftest/unit/unit.h"

#define MiB ((size_t)1 << 20)

#if IS_ENABLED(CONFIG_POLICY_LARGE_CACHE)

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static struct large_cache_heap *cache(void)
{
	return &heap_get()->policy.large_cache;
}

/* A heap for this thread with an empty cache and default options. */
static void setup(void)
{
	sefer_free(sefer_malloc(16));
	sefer__large_cache_heap_exit(heap_get());
	sefer__large_cache_opt.budget = UINT64_MAX;
	sefer__large_cache_opt.headroom = (uint64_t)256 << 20;
	sefer__large_cache_clock = NULL;
}

/* A request no cached segment fits as it is resizes one (segment_resize_large) where it can. */
#define RESIZES ((sefer__os.features & SEFER_OS_REMAP) && !IS_ENABLED(CONFIG_GUARD_PAGES))

static bool cached(const void *p)
{
	for (struct segment *s = cache()->head; s; s = s->next)
		if (s == segment_of(p))
			return true;
	return false;
}

START_TEST(lc_hit)
{
	setup();
	uint8_t *p = sefer_malloc(8 * MiB), *q;
	struct segment *seg = segment_of(p);

	p[0] = 1;
	p[8 * MiB - 1] = 2;
	sefer_free(p);
	ck_assert(segtab_contains(seg));
	ck_assert_uint_eq(cache()->count, 1);
	ck_assert_uint_eq(cache()->bytes, seg->size);
	q = sefer_malloc(8 * MiB);
	ck_assert_ptr_eq(segment_of(q), seg);
	ck_assert_uint_eq(cache()->hits, 1);
	ck_assert_uint_eq(cache()->count, 0);
	ck_assert_uint_ge(sefer_usable_size(q), 8 * MiB);
	/* reused memory is not zero: calloc must clear it */
	sefer_free(q);
	uint8_t *z = sefer_calloc(1, 8 * MiB);

	ck_assert_ptr_eq(segment_of(z), seg);
	ck_assert_uint_eq(z[0], 0);
	ck_assert_uint_eq(z[8 * MiB - 1], 0);
	sefer_free(z);
	/* the cached block's old pointer is still caught as a double free by the core */
	ck_assert_int_eq(atomic_load(&seg->large_live), 0);
}
END_TEST

/*
 * The shared counters (large_cache.c, segment.h): a block freed and asked for again writes
 * neither; a heap's newest cached segment is published when a newer one joins it and not
 * before; the core's count of mapped large bytes moves only when a segment is mapped or
 * released.
 */
START_TEST(lc_publication)
{
	setup();
	size_t pub = sefer__large_cache_published();
	size_t mapped = atomic_load(&sefer__large_mapped);
	void *p = sefer_malloc(4 * MiB), *q;
	size_t p_size = segment_of(p)->size, q_size;
	size_t mapped_p = atomic_load(&sefer__large_mapped), pub_1, pub_hit, pub_2, count_2,
	       unpub_2;
	size_t pub_end, mapped_end, unpub_1, unpub_hit, unpub_end;

	for (int i = 0; i < 100; i++) {
		sefer_free(p);
		p = sefer_malloc(4 * MiB);
	}
	unpub_hit = cache()->unpublished;
	pub_hit = sefer__large_cache_published();
	q = sefer_malloc(9 * MiB); /* both live: two segments */
	q_size = segment_of(q)->size;
	sefer_free(p);
	unpub_1 = cache()->unpublished;
	pub_1 = sefer__large_cache_published();
	sefer_free(q);
	count_2 = cache()->count;
	unpub_2 = cache()->unpublished;
	pub_2 = sefer__large_cache_published();
	sefer__large_cache_collect(heap_get(), true);
	unpub_end = cache()->unpublished;
	pub_end = sefer__large_cache_published();
	mapped_end = atomic_load(&sefer__large_mapped);

	/* measured first, asserted after: Check's assertions allocate through sefer */
	ck_assert_uint_eq(mapped_p, mapped + p_size);
	ck_assert_uint_eq(mapped_end, mapped);
	ck_assert_uint_eq(unpub_hit, 0);
	ck_assert_uint_eq(pub_hit, pub);
	ck_assert_uint_eq(unpub_1, p_size);
	ck_assert_uint_eq(pub_1, pub);
	ck_assert_uint_eq(count_2, 2);
	ck_assert_uint_eq(unpub_2, q_size);
	ck_assert_uint_eq(pub_2, pub + p_size);
	ck_assert_uint_eq(unpub_end, 0);
	ck_assert_uint_eq(pub_end, pub);
	ck_assert_uint_eq(mapped_end, mapped);
}
END_TEST

/*
 * Resizing (segment_resize_large, where the backend has remap): a request no cached segment
 * fits takes one's pages instead of faulting in new ones. A grown block holds the freed block's
 * bytes at the same offsets (its pages moved, not mapped anew) and zeros past them; a shrink
 * keeps the front and gives the rest back to the OS (the mapped large bytes drop). A new block's
 * bytes are not the program's to read (memcheck: undefined), so the test peeks at them.
 */
static uint8_t peek_byte(const uint8_t *p)
{
	uintptr_t w = annotate_peek_word((const uintptr_t *)p); /* p is word-aligned */
	uint8_t b;

	memcpy(&b, &w, 1); /* the byte at p, whatever the byte order */
	return b;
}

START_TEST(lc_resize)
{
	setup();
	uint8_t *p = sefer_malloc(8 * MiB), *q, *r;
	size_t moved_bad = 0, zero_bad = 0, kept_bad = 0, mapped_16, mapped_3;

	page_pattern_fill(p, 0, 8 * MiB);
	sefer_free(p);
	q = sefer_malloc(16 * MiB); /* grows the cached 8 MiB segment */
	for (size_t i = 0; i < 8 * MiB; i += 4096)
		moved_bad += peek_byte(q + i) != page_pattern(i);
	for (size_t i = 8 * MiB; i < 16 * MiB; i += 4096)
		zero_bad += peek_byte(q + i) != 0;
	mapped_16 = atomic_load(&sefer__large_mapped);
	sefer_free(q);
	r = sefer_malloc(3 * MiB); /* the cached 16 MiB is more than twice this: shrunk */
	for (size_t i = 0; i < 3 * MiB; i += 4096)
		kept_bad += peek_byte(r + i) != page_pattern(i);
	mapped_3 = atomic_load(&sefer__large_mapped);

	ck_assert_uint_eq(cache()->resizes, 2);
	ck_assert_uint_eq(cache()->hits, 0);
	ck_assert_uint_eq(cache()->misses, 1); /* the first 8 MiB: the cache was empty */
	ck_assert_uint_eq(moved_bad, 0);
	ck_assert_uint_eq(zero_bad, 0);
	ck_assert_uint_eq(kept_bad, 0);
	ck_assert_uint_le(mapped_3 + 12 * MiB, mapped_16);
	ck_assert_uint_ge(sefer_usable_size(r), 3 * MiB);
	sefer_free(r);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A block that realloc grows takes a cached segment with room to grow into (large_regrow);
 * a request over 16 times smaller than the cached segment does not cut it down first.
 */
START_TEST(lc_regrow)
{
	setup();
	uint8_t *old = sefer_malloc(32 * MiB), *p, *q;
	size_t n, mapped;

	sefer_free(old);
	p = sefer_malloc(256 << 10);
	ck_assert_uint_eq(cache()->count, 1); /* spared: neither shrunk nor evicted */
	ck_assert(cached(old));
	page_pattern_fill(p, 0, 256 << 10);
	for (n = 512 << 10; n <= 4 * MiB; n *= 2) { /* the 32 MiB are over 4 times each */
		p = sefer_realloc(p, n);
		page_pattern_fill(p, n / 2, n);
	}
	ck_assert_uint_eq(cache()->regrows, 0);
	p = sefer_realloc(p, 9 * MiB); /* the segment's room is less than 4 times this */
	ck_assert_ptr_eq(p, old);      /* copied into the cached segment */
	ck_assert_uint_eq(cache()->regrows, 1);
	ck_assert_uint_eq(page_pattern_bad(p, 0, 4 * MiB), 0);
	page_pattern_fill(p, 4 * MiB, 9 * MiB);
	/* then it grows into its room: in place, nothing mapped */
	mapped = atomic_load(&sefer__large_mapped);
	for (n = 10 * MiB; n <= 30 * MiB; n += 10 * MiB) {
		q = sefer_realloc(p, n);
		ck_assert_ptr_eq(q, p);
	}
	ck_assert_uint_eq(atomic_load(&sefer__large_mapped), mapped);
	ck_assert_uint_eq(page_pattern_bad(p, 0, 9 * MiB), 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_free(p);
}
END_TEST

#ifdef __linux__
/*
 * calloc from a cached segment grown for it clears the bytes the old segment had, not the
 * fresh pages after them (they read as zero): those stay out of memory (with calloc's
 * prefault off; test_api.c's calloc_prefault tests it).
 */
START_TEST(lc_calloc_resized)
{
	setup();
	uint8_t *p = sefer_malloc(8 * MiB), *q;
	uint64_t prefault = sefer__opt.calloc_prefault;

	sefer__opt.calloc_prefault = 0;
	memset(p, 0xa5, 8 * MiB);
	sefer_free(p);
	q = sefer_calloc(16, MiB); /* grows the cached 8 MiB segment */
	ck_assert_uint_eq(cache()->resizes, 1);
	/* the fresh half first: reading it would map the zero page */
	ck_assert_uint_eq(resident_pages((void *)(((uintptr_t)q + 9 * MiB) & ~(uintptr_t)4095),
				       6 * MiB), 0);
	ck_assert_uint_eq(nonzero_bytes(q, 16 * MiB), 0);
	sefer_free(q);
	sefer__opt.calloc_prefault = prefault;
}
END_TEST
#endif

START_TEST(lc_miss)
{
	setup();
	void *p = sefer_malloc(8 * MiB);
	struct segment *seg = segment_of(p);

	sefer_free(p);
	void *big = sefer_malloc(20 * MiB);   /* larger than cached */
	void *small = sefer_malloc(3 * MiB);  /* cached is more than twice this */

	ck_assert_uint_eq(cache()->hits, 0);
	if (RESIZES) {
		/* 20 MiB took the cached 8 MiB segment's pages; 3 MiB found the cache empty */
		ck_assert_uint_eq(cache()->resizes, 1);
		ck_assert_uint_eq(cache()->misses, 2); /* the first 8 MiB, 3 MiB */
		ck_assert_uint_eq(cache()->count, 0);
	} else {
		ck_assert_ptr_ne(segment_of(big), seg);
		ck_assert_ptr_ne(segment_of(small), seg);
		ck_assert_uint_eq(cache()->misses, 3); /* the first 8 MiB, 20 MiB, 3 MiB */
		ck_assert(cached((uint8_t *)seg + 1));
	}
	sefer_free(big);
	sefer_free(small);
	ck_assert_uint_eq(cache()->count, RESIZES ? 2 : 3);
}
END_TEST

START_TEST(lc_window)
{
	setup();
	void *p = sefer_malloc(10 * MiB);
	struct segment *seg = segment_of(p);
	size_t usable = large_room(seg, large_block_offset(0)); /* less a guard page */

	sefer_free(p);
	/* usable / 2 - 1 is below the window, usable / 2 is its low edge (usable is even): not a
	 * hit (where segments are resized, the segment is shrunk to it instead) */
	void *q = sefer_malloc(usable / 2 - 1);

	ck_assert_uint_eq(cache()->hits, 0);
	if (!RESIZES)
		ck_assert_ptr_ne(segment_of(q), seg);
	sefer_free(q);
	sefer__large_cache_heap_exit(heap_get());
	p = sefer_malloc(10 * MiB);
	seg = segment_of(p);
	sefer_free(p);
	q = sefer_malloc(usable / 2);
	ck_assert_ptr_eq(segment_of(q), seg);
	ck_assert_uint_eq(cache()->hits, 1);
	sefer_free(q);
	/* the high edge: exactly the usable size */
	q = sefer_malloc(usable);
	ck_assert_ptr_eq(segment_of(q), seg);
	ck_assert_uint_eq(cache()->hits, 2);
	sefer_free(q);
	q = sefer_malloc(usable + 1);
	ck_assert_uint_eq(cache()->hits, 2);
	if (!RESIZES)
		ck_assert_ptr_ne(segment_of(q), seg);
	sefer_free(q);
}
END_TEST

/*
 * Past twice the request, a cached segment is handed out as it is while it leaves at most 1 MiB
 * unused and is at most REGROW_ROOM (4) times the room a segment mapped for the request would
 * have (large_cache.c, fits_as_is): a buffer that doubles by realloc from a quarter of its old
 * size (128 KiB + 8 to 512 KiB + 8, as sqlite3's sorter does, again and again) grows back into
 * its old pages in place, mapping nothing. Without guard pages only: with them a block ends at
 * its request and such a hit would only waste the rest.
 */
static size_t mapped_room(size_t size)
{
	size_t off = large_block_offset(0);

	return align_up(off + size, SPAGE_SIZE) - off;
}

START_TEST(lc_regrow_window)
{
	setup();
	const size_t off = large_block_offset(0), slack = MiB, first = (512 << 10) + 8;
	bool room = !IS_ENABLED(CONFIG_GUARD_PAGES);
	uint8_t *p = sefer_malloc(first), *q;
	struct segment *seg = segment_of(p);
	size_t usable = large_room(seg, off), mapped, hits, small;

	page_pattern_fill(p, 0, first);
	sefer_free(p);
	hits = cache()->hits;
	/* the largest request whose own segment would have a quarter of usable less one page */
	small = mapped_room((usable / 4) & ~(SPAGE_SIZE - 1)) - SPAGE_SIZE;
	ck_assert_uint_lt(mapped_room(small) * 4, usable);
	q = sefer_malloc(small); /* over 4 times: not a hit */
	ck_assert_uint_eq(cache()->hits, hits);
	sefer_free(q);
	sefer__large_cache_heap_exit(heap_get());
	p = sefer_malloc(first);
	seg = segment_of(p);
	sefer_free(p);
	q = sefer_malloc((128 << 10) + 8); /* its own segment: 192 KiB, a third of usable */
	ck_assert_uint_ge(mapped_room((128 << 10) + 8) * 4, usable);
	ck_assert_uint_eq(cache()->hits, hits + room);
	if (room) {
		ck_assert_ptr_eq(segment_of(q), seg);
		ck_assert_uint_ge(sefer_usable_size(q), usable);
		mapped = atomic_load(&sefer__large_mapped);
		page_pattern_fill(q, 0, (128 << 10) + 8);
		for (size_t n = (256 << 10) + 8; n <= first; n = 2 * n - 8) {
			ck_assert_ptr_eq(sefer_realloc(q, n), q); /* grows into its room */
			page_pattern_fill(q, (n / 2) & ~(size_t)4095, n);
		}
		ck_assert_uint_eq(atomic_load(&sefer__large_mapped), mapped);
		ck_assert_uint_eq(page_pattern_bad(q, 0, first), 0);
	}
	sefer_free(q);
	sefer__large_cache_heap_exit(heap_get());

	/* the slack bound: 1.5 MiB for a request 1 MiB smaller is a hit, 1 byte smaller not */
	p = sefer_malloc(1536 << 10);
	seg = segment_of(p);
	usable = large_room(seg, off);
	sefer_free(p);
	hits = cache()->hits;
	q = sefer_malloc(usable - slack - 1);
	ck_assert_uint_eq(cache()->hits, hits);
	sefer_free(q);
	sefer__large_cache_heap_exit(heap_get());
	p = sefer_malloc(1536 << 10);
	seg = segment_of(p);
	sefer_free(p);
	q = sefer_malloc(usable - slack);
	ck_assert_uint_eq(cache()->hits, hits + room);
	if (room)
		ck_assert_ptr_eq(segment_of(q), seg);
	sefer_free(q);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

START_TEST(lc_alignment)
{
	setup();
	void *p = sefer_malloc(6 * MiB);
	struct segment *seg = segment_of(p);

	sefer_free(p);
	void *q = sefer_aligned_alloc(MiB, 5 * MiB);

	ck_assert_ptr_eq(segment_of(q), seg);
	ck_assert_uint_eq((uintptr_t)q % MiB, 0);
	ck_assert_uint_ge(sefer_usable_size(q), 5 * MiB);
	memset(q, 7, 5 * MiB);
	sefer_free(q);
	/* back at a small alignment, the block moves back to the front of the segment */
	q = sefer_malloc(5 * MiB);
	ck_assert_ptr_eq(segment_of(q), seg);
	ck_assert_ptr_eq(q, (uint8_t *)seg + large_block_offset(0));
	sefer_free(q);
}
END_TEST

START_TEST(lc_budget_fifo)
{
	setup();
	void *p[4];
	size_t one;

	for (int i = 0; i < 4; i++)
		p[i] = sefer_malloc((size_t)(5 + 3 * i) * MiB); /* 5, 8, 11, 14 MiB: never reused */
	one = segment_of(p[1])->size + segment_of(p[2])->size + segment_of(p[3])->size;
	sefer__large_cache_opt.budget = one;
	for (int i = 0; i < 4; i++) {
		struct segment *s = segment_of(p[i]);

		sefer_free(p[i]);
		ck_assert(segtab_contains(s)); /* i < 3: cached; i == 3: p[0] evicted */
	}
	ck_assert(!segtab_contains(segment_of(p[0])));
	ck_assert_uint_eq(cache()->evictions, 1);
	ck_assert_uint_eq(cache()->count, 3);
	ck_assert_uint_eq(cache()->bytes, one);
	ck_assert_ptr_eq(cache()->head, segment_of(p[1]));
	ck_assert_ptr_eq(cache()->tail, segment_of(p[3]));
	/* a segment larger than the whole budget is not admitted at all */
	sefer__large_cache_opt.budget = 4 * MiB;
	void *big = sefer_malloc(32 * MiB);
	struct segment *bs = segment_of(big);

	sefer_free(big);
	ck_assert(!segtab_contains(bs));
}
END_TEST

START_TEST(lc_decay)
{
	setup();
	void *p[8];
	struct large_cache_heap *c;
	uint64_t delay = sefer__opt.purge_delay_ms;

	sefer__opt.purge_delay_ms = PURGE_DELAY_NEVER; /* the decay alone: no expiry (lc_expiry) */
	sefer__large_cache_clock = fake_clock;
	fake_now = 1000;
	sefer__large_cache_opt.headroom = 0;
	/* live large bytes (never touched) that let admission keep 8 segments: decay alone
	 * shrinks them */
	void *ballast = sefer_malloc(2688 * MiB);

	for (int i = 0; i < 8; i++)
		p[i] = sefer_malloc(5 * MiB);
	for (int i = 0; i < 8; i++)
		sefer_free(p[i]);
	c = cache();
	size_t start = c->bytes, one = segment_of(p[0])->size;

	ck_assert_uint_eq(c->count, 8);
	/* less than a step: nothing goes */
	fake_now += 99;
	sefer__large_cache_collect(heap_get(), false); /* the decay runs (a miss would evict) */
	ck_assert_uint_eq(c->count, 8);
	/* one second: 10% of the excess, rounded up to whole segments */
	fake_now += 901;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_le(c->bytes, start * 9 / 10);
	ck_assert_uint_ge(c->bytes, start * 9 / 10 - one);
	/* oldest first */
	ck_assert(!segtab_contains(segment_of(p[0])));
	ck_assert(cached(p[7]));
	/* a minute later everything above the headroom is gone */
	fake_now += 60000;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(c->count, 0);
	ck_assert_uint_eq(c->decay_ms, 0);
	/* under the headroom nothing decays, however long (expiry, off here, takes them) */
	sefer__large_cache_opt.headroom = 64 * MiB;
	for (int i = 0; i < 4; i++)
		p[i] = sefer_malloc(5 * MiB);
	for (int i = 0; i < 4; i++)
		sefer_free(p[i]);
	for (int i = 0; i < 2; i++) {
		fake_now += 3600 * 1000;
		sefer__large_cache_collect(heap_get(), false);
	}
	ck_assert_uint_eq(c->count, 4);
	sefer_free(ballast);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

static unsigned clock_reads;

static uint64_t counting_clock(void)
{
	clock_reads++;
	return fake_now;
}

/*
 * One block over the headroom freed and asked for again reads no clock (a hit runs the decay
 * on what stays; a free into an empty cache leaves the start to the next call), and the decay
 * still takes that block 100 ms after the cache's next call.
 */
START_TEST(lc_decay_one)
{
	uint64_t delay = sefer__opt.purge_delay_ms;

	setup();
	sefer__opt.purge_delay_ms = PURGE_DELAY_NEVER; /* the decay's clock reads alone */
	sefer__large_cache_opt.headroom = 16 * MiB;
	sefer__large_cache_clock = counting_clock;
	clock_reads = 0;
	fake_now = 5000;

	void *p = sefer_malloc(16 * MiB);
	struct segment *seg = segment_of(p);
	uint64_t hits = cache()->hits;
	unsigned reads_loop, reads_start;
	size_t count_start, count_99, count_100;

	ck_assert_uint_gt(seg->size, 16 * MiB); /* over the headroom alone */
	for (int i = 0; i < 100; i++) {
		sefer_free(p);
		p = sefer_malloc(16 * MiB);
	}
	reads_loop = clock_reads;
	ck_assert_ptr_eq(segment_of(p), seg);
	ck_assert_uint_eq(cache()->hits, hits + 100);
	sefer_free(p);
	ck_assert_uint_eq(clock_reads, 0);
	ck_assert_uint_eq(cache()->count, 1);
	/* the next call starts the clock: nothing goes before 100 ms from there */
	fake_now += 60000;
	sefer__large_cache_collect(heap_get(), false);
	reads_start = clock_reads;
	count_start = cache()->count;
	fake_now += 99;
	sefer__large_cache_collect(heap_get(), false);
	count_99 = cache()->count;
	fake_now += 1;
	sefer__large_cache_collect(heap_get(), false);
	count_100 = cache()->count;

	ck_assert_uint_eq(reads_loop, 0);
	ck_assert_uint_eq(reads_start, 1);
	ck_assert_uint_eq(count_start, 1);
	ck_assert_uint_eq(count_99, 1);
	ck_assert_uint_eq(count_100, 0);
	ck_assert(!segtab_contains(seg));
	ck_assert_uint_eq(cache()->decay_ms, 0);
	/* with two cached over the headroom a free decays at once (the clock runs) */
	void *a = sefer_malloc(16 * MiB), *b = sefer_malloc(16 * MiB);

	sefer__large_cache_opt.headroom = 0;
	clock_reads = 0;
	sefer_free(a);
	ck_assert_uint_eq(clock_reads, 0);
	sefer_free(b);
	ck_assert_uint_ge(clock_reads, 1);
	sefer__large_cache_collect(heap_get(), true);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * Expiry: under the headroom, a segment cached and unused for the purge delay is released at
 * the aging pass after it (collect(false) here), counted from the first pass that saw it; a
 * hit and a free start its age again; with the delay "never" nothing expires.
 */
START_TEST(lc_expiry)
{
	uint64_t delay = sefer__opt.purge_delay_ms;
	struct large_cache_heap *c;

	setup();
	sefer__opt.purge_delay_ms = 50;
	sefer__large_cache_clock = fake_clock;
	fake_now = 10000;
	c = cache();
	uint64_t expired = c->expired, evictions = c->evictions;
	void *a = sefer_malloc(3 * MiB), *b = sefer_malloc(5 * MiB);
	struct segment *sa = segment_of(a), *sb = segment_of(b);
	uint64_t d = sefer__purge_delay(&heap_get()->segments); /* with the heap's backoff */

	sefer_free(a);
	ck_assert(atomic_load(&heap_get()->policy_aging)); /* the heartbeat runs while it is cached */
	sefer__large_cache_collect(heap_get(), false); /* the first pass: a's age starts */
	ck_assert_uint_eq(sa->large_cached_ms, 10000);
	fake_now += d / 2;
	sefer_free(b);
	sefer__large_cache_collect(heap_get(), false); /* b's starts */
	ck_assert_uint_eq(c->count, 2);
	fake_now = 10000 + d - 1;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(c->count, 2);
	fake_now = 10000 + d;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(c->count, 1); /* a, a delay unused since the first pass: released */
	ck_assert(!segtab_contains(sa));
	ck_assert(cached(b));
	ck_assert_uint_eq(c->expired, expired + 1);
	ck_assert_uint_eq(c->evictions, evictions); /* counted apart */
	ck_assert(atomic_load(&heap_get()->policy_aging));
	/* a hit and a free start b's age again */
	fake_now = 10000 + d / 2 + d - 1;
	void *b2 = sefer_malloc(5 * MiB);

	ck_assert_ptr_eq(segment_of(b2), sb);
	sefer_free(b2);
	ck_assert_uint_eq(sb->large_cached_ms, 0);
	fake_now += 1; /* b's first residency would be due now */
	sefer__large_cache_collect(heap_get(), false);
	ck_assert(cached(b2));
	fake_now += d - 1;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert(cached(b2));
	fake_now += 1;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(c->count, 0);
	ck_assert(!segtab_contains(sb));
	ck_assert_uint_eq(c->expired, expired + 2);
	/* the heartbeat's request ends with the cache */
	atomic_store(&heap_get()->policy_aging, false);
	sefer__large_cache_collect(heap_get(), false);
	ck_assert(!atomic_load(&heap_get()->policy_aging));
	/* "never": kept however long */
	sefer__opt.purge_delay_ms = PURGE_DELAY_NEVER;
	sefer_free(sefer_malloc(3 * MiB));
	for (int i = 0; i < 3; i++) {
		fake_now += 3600 * 1000;
		sefer__large_cache_collect(heap_get(), false);
	}
	ck_assert_uint_eq(c->count, 1);
	sefer__large_cache_collect(heap_get(), true);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * A miss soon after an expiry, for a request the released segment could have served (up to twice
 * its size), raises the heap's purge delay, which ages the cache: once per expiry; a request
 * more than twice as large, or one after the longest delay, does not.
 */
START_TEST(lc_expiry_backoff)
{
	uint64_t delay = sefer__opt.purge_delay_ms, t;
	struct segment_set *set;
	unsigned backoff;
	uint64_t backoff_since;
	void *p[3], *big;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	setup();
	set = &heap_get()->segments;
	backoff = set->purge_backoff;
	backoff_since = set->backoff_since;
	set->purge_backoff = 0;
	sefer__opt.purge_delay_ms = 50;
	sefer__large_cache_clock = fake_clock;
	t = fake_now = 100000;
	sefer_free(sefer_malloc(3 * MiB));
	sefer__large_cache_collect(heap_get(), false);
	fake_now = t + 50;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(cache()->count, 0); /* expired at t + 50 */
	fake_now = t + 60;
	big = sefer_malloc(7 * MiB); /* more than twice the 3 MiB segment: no sign */
	ck_assert_uint_eq(set->purge_backoff, 0);
	p[0] = sefer_malloc(3 * MiB); /* 10 ms after: free 60 ms, the delay goes to 200 ms */
	ck_assert_uint_eq(sefer__purge_delay(set), 200);
	p[1] = sefer_malloc(3 * MiB); /* once per expiry */
	p[2] = sefer_malloc(3 * MiB);
	ck_assert_uint_eq(sefer__purge_delay(set), 200);
	for (int i = 0; i < 3; i++)
		sefer_free(p[i]);
	sefer__large_cache_collect(heap_get(), false);
	fake_now = t + 60 + 199;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(cache()->count, 3); /* the raised delay ages the cache */
	fake_now = t + 60 + 200;
	sefer__large_cache_collect(heap_get(), false);
	ck_assert_uint_eq(cache()->count, 0);
	fake_now += 16 * 50; /* the longest delay later: not too soon */
	p[0] = sefer_malloc(3 * MiB);
	ck_assert_uint_eq(sefer__purge_delay(set), 200);
	sefer_free(p[0]);
	sefer_free(big);
	sefer__large_cache_collect(heap_get(), true);
	set->purge_backoff = backoff;
	set->backoff_since = backoff_since;
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * The owner's heartbeat runs the aging passes: a thread that frees a large block and goes on
 * with small blocks only (their slow paths) gets it released a purge delay later (real clock),
 * not before.
 */
START_TEST(lc_expiry_heartbeat)
{
	uint64_t delay = sefer__opt.purge_delay_ms;
	enum { N = 4096 };
	static void *blk[N];

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	setup();
	sefer__opt.purge_delay_ms = 100;
	void *p = sefer_malloc(3 * MiB);
	struct segment *seg = segment_of(p);
	uint64_t start = sefer__os.clock_ms(), d = sefer__purge_delay(&heap_get()->segments);
	bool early = false;

	memset(p, 1, 3 * MiB);
	sefer_free(p);
	/* small blocks only: malloc's slow path and emptied pages (heap_heartbeat) */
	for (int round = 0; segtab_contains(seg); round++) {
		for (int i = 0; i < N; i++)
			blk[i] = sefer_malloc(16 + (size_t)(i % 64) * 16);
		for (int i = 0; i < N; i++)
			sefer_free(blk[i]);
		if (segtab_contains(seg))
			ck_assert_msg(sefer__os.clock_ms() < start + 20 * d + 2000,
				      "a freed 3 MiB block still cached %llu ms later, small "
				      "slow paths running", (unsigned long long)(sefer__os.clock_ms() - start));
		else
			early = sefer__os.clock_ms() < start + d;
		decommit_sleep_ms(1);
	}
	ck_assert_msg(!early, "released before the purge delay (%llu ms)", (unsigned long long)d);
	ck_assert_uint_ge(cache()->expired, 1);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

/*
 * Admission: after a free the caches hold at most max(headroom, live large bytes / 64), the
 * freeing heap's newest segment always (a repeated alloc/free of one big block still hits).
 */
START_TEST(lc_admission)
{
	void *p[10];
	struct large_cache_heap *c;

	setup();
	sefer__large_cache_opt.headroom = 16 * MiB;
	c = cache();
	for (int i = 0; i < 10; i++)
		p[i] = sefer_malloc(6 * MiB);
	for (int i = 0; i < 10; i++)
		sefer_free(p[i]);
	/* nothing else is live: the headroom bounds it, newest kept */
	ck_assert_uint_le(c->bytes, 16 * MiB);
	ck_assert_uint_eq(c->count, 2);
	ck_assert(cached(p[9]) && cached(p[8]));
	ck_assert(!segtab_contains(segment_of(p[0])));
	/* one block larger than the headroom is still kept, alone */
	void *big = sefer_malloc(64 * MiB);

	sefer_free(big);
	ck_assert_uint_eq(c->count, 1);
	ck_assert(cached(big));
	big = sefer_malloc(64 * MiB);
	ck_assert_uint_eq(c->count, 0); /* the hit */
	/* a miss makes room before the core maps: 2 x 6 MiB cached, 12 MiB asked, 16 MiB cap;
	 * where segments are resized, one of them becomes the 12 MiB block instead, and the
	 * other stays (6 + 12 are live and cached then, as 12 + 6 would be after the miss) */
	for (int i = 0; i < 2; i++)
		p[i] = sefer_malloc(6 * MiB);
	for (int i = 0; i < 2; i++)
		sefer_free(p[i]);
	ck_assert_uint_eq(c->count, 2);
	p[0] = sefer_malloc(12 * MiB + 512 * 1024);
	ck_assert_uint_eq(c->count, RESIZES ? 1 : 0);
	sefer_free(p[0]);
	sefer__large_cache_collect(heap_get(), true);
	/* with 4 GiB live, 1/64 of it (64 MiB) may be cached */
	void *ballast = sefer_malloc(4096 * MiB);

	for (int i = 0; i < 10; i++)
		p[i] = sefer_malloc(6 * MiB);
	for (int i = 0; i < 10; i++)
		sefer_free(p[i]);
	ck_assert_uint_eq(c->count, 10);
	ck_assert_uint_le(c->bytes, 64 * MiB);
	sefer_free(ballast);
	sefer_free(big);
	sefer__large_cache_collect(heap_get(), true);
}
END_TEST

static size_t capture_options(const char *budget, char *msg, size_t len)
{
	int fd[2], saved = dup(2);
	ssize_t n;

	ck_assert_int_eq(pipe(fd), 0);
	dup2(fd[1], 2);
	sefer__option_apply(sefer__option_find("LARGE_CACHE_BUDGET"), budget, ORIGIN_ENV);
	dup2(saved, 2);
	close(saved);
	close(fd[1]);
	n = read(fd[0], msg, len - 1);
	close(fd[0]);
	msg[n > 0 ? n : 0] = '\0';
	return (size_t)(n > 0 ? n : 0);
}

START_TEST(lc_env)
{
	char msg[512];

	setup();
	ck_assert_uint_eq(sefer__large_cache_opt.budget, UINT64_MAX);
	ck_assert_uint_eq(capture_options("512M", msg, sizeof(msg)), 0);
	ck_assert_uint_eq(sefer__large_cache_opt.budget, 512 * MiB);
	capture_options("2G", msg, sizeof(msg));
	ck_assert_uint_eq(sefer__large_cache_opt.budget, 2048 * MiB);
	capture_options("64k", msg, sizeof(msg));
	ck_assert_uint_eq(sefer__large_cache_opt.budget, 64 << 10);
	capture_options("1000", msg, sizeof(msg));
	ck_assert_uint_eq(sefer__large_cache_opt.budget, 1000);
	/* bad values: named in a message, the previous value kept */
	sefer__large_cache_opt.budget = UINT64_MAX;
	const char *bad[] = { "12X", "M", "-5", "1.5G", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_uint_gt(capture_options(bad[i], msg, sizeof(msg)), 0);
		ck_assert_ptr_nonnull(strstr(msg, "SEFER_LARGE_CACHE_BUDGET"));
		ck_assert_uint_eq(sefer__large_cache_opt.budget, UINT64_MAX);
	}
	ck_assert_int_eq(sefer_option_set("large_cache_headroom", "1g"), 0);
	ck_assert_uint_eq(sefer__large_cache_opt.headroom, 1024 * MiB);
}
END_TEST

/* sefer_collect() gives the cache back: aged-out entries, or all of it with force. */
START_TEST(lc_collect)
{
	void *p[3];
	struct segment *seg[3];

	setup();
	sefer__large_cache_clock = fake_clock;
	sefer__large_cache_opt.headroom = 0;
	fake_now = 1000;
	void *ballast = sefer_malloc(1280 * MiB); /* admission keeps 3 x 6 MiB (live / 64) */

	for (int i = 0; i < 3; i++) {
		p[i] = sefer_malloc(6 * MiB);
		seg[i] = segment_of(p[i]);
	}
	for (int i = 0; i < 3; i++)
		sefer_free(p[i]);
	ck_assert_uint_eq(cache()->count, 3);
	sefer_collect(false);		/* nothing has aged yet */
	ck_assert_uint_eq(cache()->count, 3);
	fake_now += 60000;		/* a minute: the decay leaves nothing above headroom 0 */
	sefer_collect(false);
	ck_assert_uint_eq(cache()->count, 0);
	for (int i = 0; i < 3; i++)
		ck_assert(!segtab_contains(seg[i]));
	sefer_free(ballast);
	sefer__large_cache_collect(heap_get(), true);

	sefer__large_cache_opt.headroom = (uint64_t)256 << 20;
	void *q = sefer_malloc(6 * MiB);
	struct segment *qs = segment_of(q);

	sefer_free(q);
	ck_assert_uint_eq(cache()->count, 1);
	sefer_collect(false);		/* under headroom: kept */
	ck_assert_uint_eq(cache()->count, 1);
#if IS_ENABLED(CONFIG_MALLOC_FACE)
	int released = malloc_trim(0);	/* force: everything */

	ck_assert_int_eq(released, IS_ENABLED(CONFIG_STATS) ? 1 : 0);
#else
	sefer_collect(true);
#endif
	ck_assert_uint_eq(cache()->count, 0);
	ck_assert(!segtab_contains(qs));
}
END_TEST

static void *alloc_free_exit(void *arg)
{
	void **out = arg;
	void *p = sefer_malloc(6 * MiB);

	out[0] = segment_of(p);
	out[1] = heap_get();
	sefer_free(p);
	ck_assert_uint_eq(heap_get()->policy.large_cache.count, 1);
	return NULL;
}

/*
 * From a clean state (no heap parked, another thread kept alive: the result, for
 * stop_keepalive), a thread caches a 6 MiB segment and exits: out[0] the segment, out[1] its
 * heap.
 */
static pthread_t thread_caches_and_exits(void **out)
{
	pthread_t k, t;

	setup();
	sefer__parked_dismantle();
	k = start_keepalive();
	pthread_create(&t, NULL, alloc_free_exit, out);
	pthread_join(t, NULL);
	return k;
}

/*
 * A thread's cache at its exit: with its heap parked, the cached segment stays for the thread
 * that takes the heap over, whose request of the same size hits it (no new mapping); when the
 * heap is dismantled instead (parking off, or the parked heaps dismantled: the last exit,
 * sefer_collect(true)), it is released.
 */
START_TEST(lc_thread_exit)
{
	void *a[2] = { NULL }, *b[2] = { NULL };
	struct segment *seg;
	struct heap *parked_heap;
	pthread_t k = thread_caches_and_exits(a), t;

	seg = a[0];
	parked_heap = a[1];
	ck_assert_ptr_nonnull(seg);
	if (!parked_heap->parked) { /* SEFER_PARKED_HEAPS=0: dismantled at exit */
		ck_assert(!segtab_contains(seg));
		stop_keepalive(k);
		return;
	}
	ck_assert_msg(segtab_contains(seg), "the parked heap's cached segment was released");
	ck_assert_uint_eq(parked_heap->policy.large_cache.count, 1);
	if (sefer__purge_kept_until()) /* released when due (decommit, a delay not never) */
		ck_assert_uint_ne(parked_heap->policy_kept_until, 0);
	size_t mapped = atomic_load(&sefer__large_mapped);

	pthread_create(&t, NULL, alloc_free_exit, b);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(b[1], parked_heap);	/* the next thread took the heap over */
	ck_assert_ptr_eq(b[0], seg);		/* and its request hit the cached segment */
	ck_assert_uint_eq(atomic_load(&sefer__large_mapped), mapped); /* nothing mapped */
	ck_assert(parked_heap->parked);		/* parked again, the segment cached again */
	ck_assert(segtab_contains(seg));
	sefer__parked_dismantle();
	ck_assert_msg(!segtab_contains(seg), "a dismantled heap's cached segment stayed mapped");
	stop_keepalive(k);
}
END_TEST

/*
 * A parked heap's cached segment is released once the purge delay of memory no thread owns
 * has passed (the next pass over the parked heaps, here run directly), the heap staying parked.
 */
START_TEST(lc_parked_cache_released_when_due)
{
	void *a[2] = { NULL };
	uint64_t delay = sefer__purge_unowned_delay();
	struct heap *parked_heap;
	pthread_t k;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !sefer__opt.parked_heaps || delay > 1000)
		return; /* released only when dismantled (lc_thread_exit) */
	k = thread_caches_and_exits(a);
	parked_heap = a[1];
	ck_assert(parked_heap->parked);
	ck_assert(segtab_contains(a[0]));
	sefer__global_purge(sefer__os.clock_ms(), false); /* not due yet */
	ck_assert_msg(segtab_contains(a[0]), "released before its delay");
	decommit_sleep_ms((long)delay + 20);
	sefer__global_purge(sefer__os.clock_ms(), false);
	ck_assert_msg(!segtab_contains(a[0]), "still cached %llu ms after the parking",
		      (unsigned long long)delay + 20);
	ck_assert(parked_heap->parked);
	ck_assert_uint_eq(parked_heap->policy.large_cache.count, 0);
	ck_assert_uint_eq(parked_heap->policy_kept_until, 0);
	stop_keepalive(k);
}
END_TEST

static void *free_heapless(void *arg)
{
	sefer_thread_done(); /* whatever pthread set-up allocated: no heap now */
	sefer_free(arg);
	return NULL;
}

static void *free_other(void *arg)
{
	sefer_free(sefer_malloc(16)); /* this thread has a heap (maybe a parked one, cache and all) */
	size_t count = heap_get()->policy.large_cache.count;

	sefer_free(arg);
	ck_assert_uint_eq(heap_get()->policy.large_cache.count, count); /* not kept here */
	sefer_thread_done();
	return NULL;
}

/* A block freed by another thread goes back to the heap that allocated it. */
START_TEST(lc_cross_thread)
{
	pthread_t t;

	setup();
	for (int with_heap = 0; with_heap < 2; with_heap++) {
		void *p = sefer_malloc(6 * MiB), *q;
		struct segment *seg = segment_of(p);
		uint64_t hits = cache()->hits, handoffs = cache()->handoffs;

		pthread_create(&t, NULL, with_heap ? free_other : free_heapless, p);
		pthread_join(t, NULL);
		ck_assert(segtab_contains(seg));	/* in our inbox */
		ck_assert_ptr_eq(atomic_load(&heap_get()->policy_remote.large_cache.inbox), seg);
		q = sefer_malloc(6 * MiB);
		ck_assert_ptr_eq(segment_of(q), seg);	/* taken from the inbox, reused */
		ck_assert_uint_eq(cache()->handoffs, handoffs + 1);
		ck_assert_uint_eq(cache()->hits, hits + 1);
		ck_assert_uint_eq(atomic_load(&heap_get()->policy_remote.large_cache.inbox_bytes),
				  0);
		sefer_free(q);
	}
}
END_TEST

/*
 * A block another thread frees goes to our inbox and asks for our heartbeat: a thread that goes
 * on with small blocks only takes it into its cache there and releases it a purge delay later.
 * Before, it waited in the inbox for our next large request, collect or exit.
 */
START_TEST(lc_handoff_aged_by_heartbeat)
{
	uint64_t delay = sefer__opt.purge_delay_ms, start, d;
	enum { N = 4096 };
	static void *blk[N];
	struct heap *h;
	pthread_t t;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	setup();
	sefer__opt.purge_delay_ms = 100;
	h = heap_get();
	void *p = sefer_malloc(3 * MiB);
	struct segment *seg = segment_of(p);
	uint64_t handoffs = cache()->handoffs, expired = cache()->expired;

	memset(p, 1, 3 * MiB);
	atomic_store(&h->policy_aging, false);
	pthread_create(&t, NULL, free_other, p);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(atomic_load(&h->policy_remote.large_cache.inbox), seg);
	ck_assert(atomic_load(&h->policy_aging));
	start = sefer__os.clock_ms();
	d = sefer__purge_delay(&h->segments);
	while (segtab_contains(seg)) {
		for (int i = 0; i < N; i++)
			blk[i] = sefer_malloc(16 + (size_t)(i % 64) * 16);
		for (int i = 0; i < N; i++)
			sefer_free(blk[i]);
		ck_assert_msg(!segtab_contains(seg) ||
				      sefer__os.clock_ms() < start + 20 * d + 2000,
			      "a block handed back %llu ms ago still held, small slow paths running",
			      (unsigned long long)(sefer__os.clock_ms() - start));
		decommit_sleep_ms(1);
	}
	ck_assert_uint_eq(cache()->handoffs, handoffs + 1); /* taken by the heartbeat */
	ck_assert_uint_eq(cache()->expired, expired + 1);
	sefer__opt.purge_delay_ms = delay;
}
END_TEST

static void *alloc_and_exit(void *arg)
{
	void **out = arg;

	out[0] = sefer_malloc(6 * MiB);
	out[1] = heap_get();
	return NULL;
}

struct reuse {
	pthread_barrier_t bar;
	void *block;
	struct heap *heap;
	bool hit;
};

static void *alloc_wait_realloc(void *arg)
{
	struct reuse *r = arg;

	r->block = sefer_malloc(6 * MiB);	/* reopens the inbox of a reused heap */
	r->heap = heap_get();
	pthread_barrier_wait(&r->bar);		/* main frees the block */
	pthread_barrier_wait(&r->bar);
	void *again = sefer_malloc(6 * MiB);

	r->hit = segment_of(again) == segment_of(r->block);
	sefer_free(again);
	return NULL;
}

/* The owner exited: its closed inbox refuses; its heap's next owner reopens it. */
START_TEST(lc_handoff_owner_exited)
{
	pthread_t t;
	void *out[2];
	struct reuse r = { .hit = false };

	setup();
	pthread_create(&t, NULL, alloc_and_exit, out);
	pthread_join(t, NULL);
	struct segment *seg = segment_of(out[0]);
	struct heap *dead = out[1];

	ck_assert_ptr_eq(atomic_load(&dead->policy_remote.large_cache.inbox), (void *)1);
	sefer_free(out[0]);			/* refused by the closed inbox: cached here */
	ck_assert_ptr_eq(atomic_load(&dead->policy_remote.large_cache.inbox), (void *)1);
	ck_assert(cached((uint8_t *)seg + 1));
	sefer__large_cache_heap_exit(heap_get());

	pthread_barrier_init(&r.bar, NULL, 2);
	pthread_create(&t, NULL, alloc_wait_realloc, &r);
	pthread_barrier_wait(&r.bar);
	ck_assert_ptr_eq(r.heap, dead);		/* the pooled heap, taken again */
	sefer_free(r.block);			/* handed back to its (new) owner */
	pthread_barrier_wait(&r.bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&r.bar);
	ck_assert(r.hit);
	ck_assert_uint_eq(cache()->count, 0);
}
END_TEST

Suite *large_cache_suite(void)
{
	Suite *s = suite_create("large_cache");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lc_hit);
	tcase_add_test(tc, lc_miss);
	if (!IS_ENABLED(CONFIG_GUARD_PAGES)) /* with them a block has no room to grow into */
		tcase_add_test(tc, lc_regrow);
	tcase_add_test(tc, lc_publication);
	if (RESIZES)
		tcase_add_test(tc, lc_resize);
#ifdef __linux__
	if (RESIZES)
		tcase_add_test(tc, lc_calloc_resized);
#endif
	tcase_add_test(tc, lc_collect);
	tcase_add_test(tc, lc_handoff_owner_exited);
	tcase_add_test(tc, lc_window);
	tcase_add_test(tc, lc_regrow_window);
	tcase_add_test(tc, lc_alignment);
	tcase_add_test(tc, lc_budget_fifo);
	tcase_add_test(tc, lc_decay);
	tcase_add_test(tc, lc_decay_one);
	tcase_add_test(tc, lc_expiry);
	tcase_add_test(tc, lc_expiry_backoff);
	tcase_add_test(tc, lc_expiry_heartbeat);
	tcase_add_test(tc, lc_admission);
	tcase_add_test(tc, lc_env);
	tcase_add_test(tc, lc_thread_exit);
	tcase_add_test(tc, lc_parked_cache_released_when_due);
	tcase_add_test(tc, lc_cross_thread);
	tcase_add_test(tc, lc_handoff_aged_by_heartbeat);
	suite_add_tcase(s, tc);
	return s;
}

#else /* !CONFIG_POLICY_LARGE_CACHE */

START_TEST(lc_off_releases)
{
	void *p = sefer_malloc(8 * MiB);
	struct segment *seg = segment_of(p);

	sefer_free(p);
	ck_assert(!segtab_contains(seg));
}
END_TEST

Suite *large_cache_suite(void)
{
	Suite *s = suite_create("large_cache");
	TCase *tc = tcase_create("off");

	tcase_add_test(tc, lc_off_releases);
	suite_add_tcase(s, tc);
	return s;
}

#endif
