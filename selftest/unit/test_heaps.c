// SPDX-License-Identifier: MIT
/*
 * First-class heaps (core/heaps.c, Documentation/heaps.rst): allocation calls, visit, collect,
 * destroy with pending cross-thread frees, bounded memory over many rounds, owner exit, many
 * heaps per thread, misuse reports. Empty with CONFIG_HEAPS=n.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/options.h"
#include "core/segment.h"
#include "sefer/os.h"
#include "unit.h"

#if IS_ENABLED(CONFIG_HEAPS)

#define LARGE (256 << 10) /* above the largest small class (128 KiB) */

/* ---- a set of pointers the visitor fills ---- */
struct seen {
	void **p;
	size_t *usable;
	size_t n, cap, stop_after;
};

static bool record(void *block, size_t usable, void *arg)
{
	struct seen *s = arg;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->p = realloc(s->p, s->cap * sizeof(*s->p));
		s->usable = realloc(s->usable, s->cap * sizeof(*s->usable));
	}
	s->p[s->n] = block;
	s->usable[s->n] = usable;
	s->n++;
	return !s->stop_after || s->n < s->stop_after;
}

static void seen_free(struct seen *s)
{
	free(s->p);
	free(s->usable);
	memset(s, 0, sizeof(*s));
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Does the visit of h see exactly the n pointers in want (in any order)? */
static void expect_visit(struct sefer_heap *h, void **want, size_t n)
{
	struct seen s = { 0 };
	void **w = malloc((n ? n : 1) * sizeof(*w));

	ck_assert(sefer_heap_visit(h, record, &s));
	ck_assert_uint_eq(s.n, n);
	if (!n) { /* memcpy and qsort want non-NULL pointers even for 0 elements */
		free(w);
		seen_free(&s);
		return;
	}
	memcpy(w, want, n * sizeof(*w));
	qsort(w, n, sizeof(*w), cmp_ptr);
	qsort(s.p, s.n, sizeof(*s.p), cmp_ptr);
	for (size_t i = 0; i < n; i++)
		ck_assert_ptr_eq(s.p[i], w[i]);
	free(w);
	seen_free(&s);
}

static size_t live_heaps(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st);
	return st.heaps;
}

START_TEST(new_malloc_free_destroy)
{
	size_t before = live_heaps();
	struct sefer_heap *h = sefer_heap_new();
	void *p[64];

	ck_assert_ptr_nonnull(h);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(live_heaps(), before + 1);
	for (int i = 0; i < 64; i++) {
		p[i] = sefer_heap_malloc(h, (size_t)(i + 1) * 24);
		ck_assert_ptr_nonnull(p[i]);
		memset(p[i], i, (size_t)(i + 1) * 24);
		ck_assert_uint_ge(sefer_usable_size(p[i]), (size_t)(i + 1) * 24);
	}
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 0; i < 64; i += 2)
		sefer_free(p[i]);
	for (int i = 1; i < 64; i += 2)
		for (size_t k = 0; k < (size_t)(i + 1) * 24; k++)
			ck_assert_uint_eq(((unsigned char *)p[i])[k], (unsigned)i);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(live_heaps(), before);
	sefer_heap_destroy(NULL); /* like free(NULL) */
}
END_TEST

START_TEST(owner_frees_are_local)
{
	/* The owner thread's frees into its own first-class heap are local frees, not pushed
	 * like another thread's (free.c: heap_is_mine). */
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	void *p[1000];

	for (int i = 0; i < 1000; i++)
		p[i] = sefer_heap_malloc(h, 48);
	sefer_stats_get(&st0);
	for (int i = 0; i < 1000; i++)
		sefer_free(p[i]);
	sefer_stats_get(&st1);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.xthread_frees, st0.xthread_frees);
	/* and the blocks are reused by the next allocations from h */
	static void *q[1000];
	size_t reused = 0;

	for (int i = 0; i < 1000; i++) {
		q[i] = sefer_heap_malloc(h, 48);
		for (int k = 0; k < 1000; k++)
			reused += q[i] == p[k];
	}
	ck_assert_uint_ge(reused, 900);
	expect_visit(h, q, 1000);
	sefer_heap_destroy(h);
}
END_TEST

START_TEST(calloc_zeroes)
{
	struct sefer_heap *h = sefer_heap_new();
	size_t sizes[] = { 16, 100, 1000, 5000, 70000, LARGE, 3 << 20 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		unsigned char *p = sefer_heap_malloc(h, n), *q;

		memset(p, 0xa5, n);
		sefer_free(p);
		q = sefer_heap_calloc(h, 1, n);
		ck_assert_ptr_nonnull(q);
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(q[i] == 0, "byte %zu of %zu not zero", i, n);
		sefer_free(q);
	}
	errno = 0;
	ck_assert_ptr_null(sefer_heap_calloc(h, SIZE_MAX / 2, 3));
	ck_assert_int_eq(errno, ENOMEM);
	sefer_heap_destroy(h);
}
END_TEST

START_TEST(realloc_within_and_across)
{
	struct sefer_heap *a = sefer_heap_new(), *b = sefer_heap_new();
	unsigned char *p = sefer_heap_realloc(a, NULL, 10), *q;
	size_t n = 10;

	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)i;
	/* grow through small, medium and large sizes, then shrink: contents kept */
	for (size_t to = 100; to <= (2u << 20); to *= 4) {
		p = sefer_heap_realloc(a, p, to);
		ck_assert_ptr_nonnull(p);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(p[i], (unsigned char)i);
		for (size_t i = n; i < to; i++)
			p[i] = (unsigned char)i;
		n = to;
	}
	p = sefer_heap_realloc(a, p, 50);
	for (size_t i = 0; i < 50; i++)
		ck_assert_uint_eq(p[i], (unsigned char)i);
	expect_visit(a, (void **)&p, 1);
	/* across heaps: the block moves into b even where it would fit in place */
	q = sefer_heap_realloc(b, p, 40);
	ck_assert_ptr_ne(q, p);
	for (size_t i = 0; i < 40; i++)
		ck_assert_uint_eq(q[i], (unsigned char)i);
	expect_visit(a, NULL, 0);
	expect_visit(b, (void **)&q, 1);
	/* in place within its own heap */
	ck_assert_ptr_eq(sefer_heap_realloc(b, q, 33), q);
	/* from the default heap into b, and from b to the default heap */
	p = sefer_malloc(64);
	memset(p, 7, 64);
	p = sefer_heap_realloc(b, p, 64);
	ck_assert_uint_eq(p[63], 7);
	void *both[2] = { q, p };

	expect_visit(b, both, 2);
	p = sefer_realloc(p, 64); /* the default heap keeps any block in place */
	ck_assert_ptr_eq(sefer_heap_realloc(b, q, 0), NULL); /* frees */
	expect_visit(b, (void **)&p, 1);
	sefer_heap_destroy(a);
	sefer_heap_destroy(b);
}
END_TEST

/* In a visit: plain realloc of the heap's large block copies it into the default heap. */
static bool realloc_large(void *block, size_t usable, void *arg)
{
	void **out = arg;

	if (usable >= ((size_t)1 << 20))
		*out = sefer_realloc(block, 2 * usable);
	return true;
}

START_TEST(realloc_large_in_heap_moves_pages)
{
	struct sefer_heap *h = sefer_heap_new();
	size_t base = atomic_load(&sefer_large_mapped), grown;
	uint8_t *other = sefer_heap_malloc(h, LARGE), *p = sefer_heap_malloc(h, (size_t)8 << 20);
	size_t before = atomic_load(&sefer_large_mapped);

	page_pattern_fill(p, 0, (size_t)8 << 20);
	p = sefer_heap_realloc(h, p, (size_t)32 << 20);
	grown = atomic_load(&sefer_large_mapped) - before;
	ck_assert_uint_eq(page_pattern_bad(p, 0, (size_t)8 << 20), 0);
	if (sefer_os.remap && !IS_ENABLED(CONFIG_GUARD_PAGES)) {
		/* the pages moved: 24 MiB more mapped, where a copy maps 32 MiB anew */
		ck_assert_uint_lt(grown, (size_t)32 << 20);
	}
	void *both[2] = { other, p };

	expect_visit(h, both, 2); /* the heap's list has the block at its new address */
	uint8_t *q = sefer_heap_realloc(h, p, (size_t)1 << 20);

	ck_assert_uint_eq(page_pattern_bad(q, 0, (size_t)1 << 20), 0);
	both[1] = q;
	expect_visit(h, both, 2);

	/* inside a visit the list is not touched: plain realloc copies into the default heap */
	void *moved = NULL;

	ck_assert(sefer_heap_visit(h, realloc_large, &moved));
	ck_assert_ptr_nonnull(moved);
	ck_assert_ptr_ne(moved, q);
	ck_assert_uint_eq(page_pattern_bad(moved, 0, (size_t)1 << 20), 0);
	expect_visit(h, (void **)&other, 1);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
	/* destroy gave back what the heap held: only the copy in the default heap is left */
	ck_assert_uint_le(atomic_load(&sefer_large_mapped), base + ((size_t)3 << 20));
	sefer_free(moved);
}
END_TEST

START_TEST(aligned_alloc_alignments)
{
	struct sefer_heap *h = sefer_heap_new();
	void *p[32];
	size_t n = 0;

	for (size_t a = 8; a <= ((size_t)8 << 20); a *= 2) {
		size_t size = a < 4096 ? 24 : a / 2 + 8;

		p[n] = sefer_heap_aligned_alloc(h, a, size);
		ck_assert_msg(p[n] && ((uintptr_t)p[n] & (a - 1)) == 0, "align %zu: %p", a, p[n]);
		memset(p[n], 1, size);
		n++;
	}
	errno = 0;
	ck_assert_ptr_null(sefer_heap_aligned_alloc(h, 24, 10));
	ck_assert_int_eq(errno, EINVAL);
	expect_visit(h, p, n);
	sefer_heap_destroy(h);
}
END_TEST

START_TEST(visit_sees_live_set)
{
	struct sefer_heap *h = sefer_heap_new();
	enum { N = 3000, NL = 12 };
	static void *p[N + NL];
	void *live[N + NL];
	size_t nlive = 0;
	unsigned seed = 12345;

	for (size_t i = 0; i < N; i++)
		p[i] = sefer_heap_malloc(h, 1 + (rand_r(&seed) % 2000));
	for (size_t i = 0; i < NL; i++)
		p[N + i] = sefer_heap_malloc(h, LARGE + i * 100000);
	for (size_t i = 0; i < N + NL; i++) {
		if (rand_r(&seed) % 3 == 0)
			sefer_free(p[i]);
		else
			live[nlive++] = p[i];
	}
	expect_visit(h, live, nlive);
	/* usable sizes are what sefer_usable_size says */
	struct seen s = { 0 };

	ck_assert(sefer_heap_visit(h, record, &s));
	for (size_t i = 0; i < s.n; i++)
		ck_assert_uint_eq(s.usable[i], sefer_usable_size(s.p[i]));
	seen_free(&s);
	/* fn returning false stops the walk */
	s.stop_after = 10;
	ck_assert(!sefer_heap_visit(h, record, &s));
	ck_assert_uint_eq(s.n, 10);
	seen_free(&s);
	/* the default heap's blocks are never in it */
	void *d = sefer_malloc(100);

	expect_visit(h, live, nlive);
	sefer_free(d);
	sefer_heap_destroy(h);
}
END_TEST

/* fn frees every block it is given (small and large): the frees are safe during the walk */
static bool free_it(void *block, size_t usable, void *arg)
{
	(void)usable;
	++*(size_t *)arg;
	sefer_free(block);
	return true;
}

START_TEST(visit_fn_may_free)
{
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	size_t n = 0;

	/* a first round of owner frees puts h's segment in the owned-segment cache of the
	 * thread's default heap: the frees during the visit must not take that fast path */
	for (int i = 0; i < 100; i++)
		sefer_free(sefer_heap_malloc(h, (size_t)(i % 40) * 30 + 1));
	for (int i = 0; i < 500; i++)
		ck_assert_ptr_nonnull(sefer_heap_malloc(h, (size_t)(i % 40) * 30 + 1));
	for (int i = 0; i < 5; i++)
		ck_assert_ptr_nonnull(sefer_heap_malloc(h, LARGE));
	sefer_stats_get(&st0);
	ck_assert(sefer_heap_visit(h, free_it, &n));
	sefer_stats_get(&st1);
	ck_assert_uint_eq(n, 505);
	/* the owner's small frees during the walk went the cross-thread way (pages unchanged) */
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.xthread_frees - st0.xthread_frees, 500);
	expect_visit(h, NULL, 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
}
END_TEST

START_TEST(collect_gives_back)
{
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	static void *p[20000];

	for (int i = 0; i < 20000; i++)
		p[i] = sefer_heap_malloc(h, 512);
	sefer_stats_get(&st0);
	for (int i = 0; i < 20000; i++)
		sefer_free(p[i]);
	sefer_heap_collect(h, true);
	sefer_stats_get(&st1);
	expect_visit(h, NULL, 0);
	/* 10 MB of blocks freed: the pages went back (purged or unmapped) */
	if (IS_ENABLED(CONFIG_STATS) && IS_ENABLED(CONFIG_DECOMMIT))
		ck_assert_msg(st1.committed + (8u << 20) < st0.committed, "committed %llu -> %llu",
			      (unsigned long long)st0.committed, (unsigned long long)st1.committed);
	sefer_heap_destroy(h);
}
END_TEST

START_TEST(large_cache_per_heap)
{
	/* large_cache works per heap: the owner's free of h's large block goes back to h's
	 * cache (handed back, since the freeing call runs on the default heap), h's next large
	 * request reuses it, and destroy gives the cached segment back to the OS. */
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	void *a = sefer_heap_malloc(h, 1 << 20), *b;

	sefer_free(a);
	b = sefer_heap_malloc(h, 1 << 20);
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE))
		ck_assert_ptr_eq(b, a);
	sefer_free(b);
	expect_visit(h, NULL, 0);
	sefer_stats_get(&st0);
	sefer_heap_destroy(h);
	sefer_stats_get(&st1);
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) && IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.segments + 1, st0.segments);
}
END_TEST

/* ---- a destroyed heap's segments leave the owner's owned-segment cache ---- */
#define RECYCLE 150000 /* 64-byte blocks: about three segments */
static void *recycled[RECYCLE];

static void *alloc_recycled(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < RECYCLE; i++)
		recycled[i] = sefer_malloc(64);
	return NULL;
}

START_TEST(destroy_forgets_cached_segments)
{
	/* The owner's frees cache h's segments in its default heap's owned-segment cache; destroy
	 * must drop those entries. Another thread then gets the segments (spares) and exits; the
	 * owner's frees of that thread's blocks must be cross-thread frees, not fast-path frees
	 * into pages that are not its own. */
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	size_t shared = 0;
	pthread_t t;

	for (size_t i = 0; i < RECYCLE; i++) {
		void *p = sefer_heap_malloc(h, 64);

		recycled[i] = p;
		if (i % 1000 == 0)
			sefer_free(p);
	}
	uintptr_t segs[8];
	size_t nsegs = 0;

	for (size_t i = 1; i < RECYCLE && nsegs < 8; i += 1000) {
		uintptr_t s = (uintptr_t)recycled[i] >> SEGMENT_SHIFT;
		bool known = false;

		for (size_t k = 0; k < nsegs; k++)
			known |= segs[k] == s;
		if (!known)
			segs[nsegs++] = s;
	}
	sefer_heap_destroy(h);
	pthread_create(&t, NULL, alloc_recycled, NULL);
	pthread_join(t, NULL);
	for (size_t i = 0; i < RECYCLE; i += 97)
		for (size_t k = 0; k < nsegs; k++)
			shared += (uintptr_t)recycled[i] >> SEGMENT_SHIFT == segs[k];
	sefer_stats_get(&st0);
	for (size_t i = 0; i < RECYCLE; i++)
		sefer_free(recycled[i]);
	sefer_stats_get(&st1);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.xthread_frees - st0.xthread_frees, RECYCLE);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	/* only meaningful when the thread got h's old segments (it does, from the spares, in a
	 * process of its own): say so when it did not */
	if (!shared)
		fprintf(stderr, "destroy_forgets_cached_segments: no segment reused, nothing shown\n");
}
END_TEST

/* ---- cross-thread frees, then destroy ---- */
struct xfree {
	void **p;
	size_t from, to;
};

static void *xfree_run(void *arg)
{
	struct xfree *x = arg;

	for (size_t i = x->from; i < x->to; i++)
		sefer_free(x->p[i]);
	return NULL;
}

static void xthread_then_destroy(bool collect_first)
{
	enum { N = 8000, T = 3 };
	static void *p[N];
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_stats st0, st1;
	pthread_t t[T];
	struct xfree x[T];

	sefer_stats_get(&st0);
	for (size_t i = 0; i < N; i++)
		p[i] = sefer_heap_malloc(h, i % 7 == 0 ? LARGE : 16 + (i % 50) * 16);
	/* threads free the first 3/4; the owner keeps the rest live */
	for (int k = 0; k < T; k++) {
		x[k] = (struct xfree){ p, (size_t)k * N / 4, (size_t)(k + 1) * N / 4 };
		pthread_create(&t[k], NULL, xfree_run, &x[k]);
	}
	for (int k = 0; k < T; k++)
		pthread_join(t[k], NULL);
	if (collect_first) {
		expect_visit(h, p + 3 * N / 4, N - 3 * N / 4);
		sefer_heap_collect(h, false);
	}
	/* else every remote free of a small block is still pending in an xthread list */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_stats_get(&st1);
	if (IS_ENABLED(CONFIG_STATS)) {
		ck_assert_uint_ge(st1.xthread_frees - st0.xthread_frees, 3 * N / 4 * 6 / 7 - 10);
		/* the heap's segments went to the spares or the OS: at most a few stay mapped */
		ck_assert_msg(st1.segments <= st0.segments + 16, "segments %llu -> %llu",
			      (unsigned long long)st0.segments, (unsigned long long)st1.segments);
	}
	/* the memory is good for the next heap */
	h = sefer_heap_new();
	for (size_t i = 0; i < N; i++)
		p[i] = sefer_heap_malloc(h, 16 + (i % 50) * 16);
	expect_visit(h, p, N);
	sefer_heap_destroy(h);
}

/*
 * fn asks sefer about every block it is given, which reads the block's segment header: a large
 * block freed meanwhile must still be mapped (its release waits for the visit to end). Not the
 * block's contents: reading memory another thread is freeing is the program's data race.
 */
static bool touch(void *block, size_t usable, void *arg)
{
	*(unsigned long *)arg += sefer_usable_size(block) == usable;
	return true;
}

struct slow_free {
	void **p;
	size_t n;
	atomic_int done;
};

static void *free_slowly(void *arg)
{
	struct slow_free *f = arg;

	for (size_t i = 0; i < f->n; i++) {
		sefer_free(f->p[i]);
		if (i % 64 == 0)
			sched_yield();
	}
	atomic_store(&f->done, 1);
	return NULL;
}

START_TEST(visit_while_others_free)
{
	/* Another thread frees small and large blocks of h while its owner visits h again and
	 * again: large frees are left to the visitor meanwhile (LARGE_FREE_DEFERRED), small ones
	 * pushed; every visit is memory-safe and once the frees are done h is empty. */
	enum { N = 4000 };
	static void *p[N];
	struct sefer_heap *h = sefer_heap_new();
	struct slow_free f = { p, N, 0 };
	unsigned long sum = 0;
	int visits = 0;
	pthread_t t;

	for (size_t i = 0; i < N; i++) {
		p[i] = sefer_heap_malloc(h, i % 40 == 0 ? LARGE + (i % 3) * 4096 : 16 + (i % 64) * 8);
		memset(p[i], 1, 16);
	}
	pthread_create(&t, NULL, free_slowly, &f);
	while (!atomic_load(&f.done) || visits < 3) {
		sefer_heap_visit(h, touch, &sum);
		visits++;
	}
	pthread_join(t, NULL);
	expect_visit(h, NULL, 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
	ck_assert_uint_gt(sum, 0);
}
END_TEST

START_TEST(xthread_frees_then_destroy)
{
	xthread_then_destroy(true);
}
END_TEST

START_TEST(destroy_with_pending_xthread_frees)
{
	xthread_then_destroy(false);
}
END_TEST

START_TEST(bounded_over_rounds)
{
	struct sefer_stats st;
	uint64_t max_segments = 0, max_committed = 0, base;
	enum { ROUNDS = 2000 };

	sefer_stats_get(&st);
	base = st.committed;
	uint64_t heaps0 = st.heaps;

	for (int r = 0; r < ROUNDS; r++) {
		struct sefer_heap *h = sefer_heap_new();

		for (int i = 0; i < 300; i++) {
			size_t n = 16 + (size_t)((i * 37 + r) % 3000);

			ck_assert_ptr_nonnull(sefer_heap_malloc(h, n));
		}
		if (r % 4 == 0)
			ck_assert_ptr_nonnull(sefer_heap_malloc(h, LARGE + (size_t)r * 64));
		sefer_heap_destroy(h);
		sefer_stats_get(&st);
		if (st.segments > max_segments)
			max_segments = st.segments;
		if (st.committed > max_committed)
			max_committed = st.committed;
	}
	if (IS_ENABLED(CONFIG_STATS)) {
		/* one round needs about two segments; the spares hold at most SPARE_MAX */
		ck_assert_msg(max_segments < 48, "segments reached %llu",
			      (unsigned long long)max_segments);
		ck_assert_msg(max_committed < base + ((uint64_t)96 << 20),
			      "committed reached %llu MiB (from %llu MiB)",
			      (unsigned long long)max_committed >> 20,
			      (unsigned long long)base >> 20);
		ck_assert_uint_eq(st.heaps, heaps0);
	}
}
END_TEST

/* ---- owner exit: the heap is orphaned, its blocks stay valid, another thread destroys it ---- */
struct orphan {
	struct sefer_heap *h;
	void *p[200];
};

static void *make_and_exit(void *arg)
{
	struct orphan *o = arg;

	o->h = sefer_heap_new();
	for (int i = 0; i < 200; i++) {
		o->p[i] = sefer_heap_malloc(o->h, i % 20 == 0 ? LARGE : 32 + (size_t)i * 8);
		memset(o->p[i], 0x3c, 32);
	}
	return NULL;
}

static void orphan_case(bool visit_misuse)
{
	struct orphan o;
	pthread_t t;

	pthread_create(&t, NULL, make_and_exit, &o);
	pthread_join(t, NULL);
	for (int i = 0; i < 200; i++)
		ck_assert_uint_eq(((unsigned char *)o.p[i])[31], 0x3c);
	for (int i = 0; i < 200; i += 2)
		sefer_free(o.p[i]); /* freeable from any thread */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	if (visit_misuse) {
		/* the orphan serves no allocation: reported, NULL (SEFER_ON_ERROR=warn) */
		enum on_error was = sefer_opt.on_error;

		sefer_opt.on_error = ON_ERROR_WARN;
		errno = 0;
		ck_assert_ptr_null(sefer_heap_malloc(o.h, 10));
		ck_assert_int_eq(errno, EPERM);
		sefer_opt.on_error = was;
	}
	sefer_heap_destroy(o.h);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}

START_TEST(owner_exit_orphans)
{
	orphan_case(false);
}
END_TEST

/* ---- many heaps per thread ---- */
START_TEST(many_heaps)
{
	enum { H = 64, B = 200 };
	struct sefer_heap *h[H];
	static void *p[H][B];
	unsigned seed = 7;
	size_t before = live_heaps();

	for (int i = 0; i < H; i++)
		ck_assert_ptr_nonnull(h[i] = sefer_heap_new());
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(live_heaps(), before + H);
	for (int b = 0; b < B; b++)
		for (int i = 0; i < H; i++) {
			p[i][b] = sefer_heap_malloc(h[i], 8 + (rand_r(&seed) % 600));
			*(int *)p[i][b] = i;
		}
	for (int i = 0; i < H; i++) {
		for (int b = 0; b < B; b++)
			ck_assert_int_eq(*(int *)p[i][b], i);
		expect_visit(h[i], p[i], B);
	}
	ck_assert_uint_eq(sefer_check_heap(), 0);
	/* destroy in a scattered order */
	for (int k = 0; k < H; k++)
		sefer_heap_destroy(h[(k * 37) % H]);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(live_heaps(), before);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* ---- fork: the forking thread's heaps work in the child (the locks were reset) ---- */
START_TEST(fork_child_uses_heap)
{
	struct sefer_heap *h = sefer_heap_new();
	void *small = sefer_heap_malloc(h, 100), *large = sefer_heap_malloc(h, LARGE);
	pid_t pid;
	int status = -1;

	pid = fork();
	if (pid == 0) {
		void *q = sefer_heap_malloc(h, 200), *l2 = sefer_heap_malloc(h, LARGE);
		void *want[3] = { small, q, l2 };
		struct seen s = { 0 };
		int bad = 0;

		sefer_free(large);
		sefer_heap_visit(h, record, &s);
		qsort(want, 3, sizeof(*want), cmp_ptr);
		qsort(s.p, s.n, sizeof(*s.p), cmp_ptr);
		bad |= s.n != 3;
		for (size_t i = 0; !bad && i < 3; i++)
			bad |= s.p[i] != want[i];
		sefer_heap_destroy(h);
		_exit(bad || sefer_check_heap() ? 1 : 0);
	}
	ck_assert_msg(pid > 0, "fork failed");
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	void *both[2] = { small, large };

	expect_visit(h, both, 2);
	sefer_heap_destroy(h);
}
END_TEST

/* ---- misuse: reported (SEFER_ON_ERROR=warn here), never followed ---- */
static char *capture_begin(int *saved, FILE **f)
{
	fflush(stderr);
	*f = tmpfile();
	*saved = dup(2);
	dup2(fileno(*f), 2);
	return NULL;
}

static void capture_end(int saved, FILE *f, char *buf, size_t len)
{
	size_t n;

	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void *malloc_on(void *arg)
{
	return sefer_heap_malloc(arg, 32);
}

static bool visit_mallocs(void *block, size_t usable, void *arg)
{
	(void)block, (void)usable;
	*(void **)arg = sefer_heap_malloc(*(struct sefer_heap **)arg, 16);
	return false;
}

START_TEST(misuse_reported)
{
	struct sefer_heap *h = sefer_heap_new();
	enum on_error was = sefer_opt.on_error;
	char out[2048];
	int saved;
	FILE *f;
	pthread_t t;
	void *r = (void *)1, *arg = h;

	ck_assert_ptr_nonnull(sefer_heap_malloc(h, 8));
	sefer_opt.on_error = ON_ERROR_WARN;
	capture_begin(&saved, &f);
	/* another thread allocates from h */
	pthread_create(&t, NULL, malloc_on, h);
	pthread_join(t, &r);
	/* fn allocates from the heap it visits */
	sefer_heap_visit(h, visit_mallocs, &arg);
	capture_end(saved, f, out, sizeof(out));
	ck_assert_ptr_null(r);
	ck_assert_ptr_null(arg);
	ck_assert_msg(strstr(out, "heap misuse") && strstr(out, "does not own the heap"), "%s",
		      out);
	ck_assert_msg(strstr(out, "inside sefer_heap_visit"), "%s", out);
	/* a destroyed heap: every call is a misuse, the free of an old block an invalid free */
	void *p = sefer_heap_malloc(h, 64);

	sefer_heap_destroy(h);
	capture_begin(&saved, &f);
	errno = 0;
	r = sefer_heap_malloc(h, 8);
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		sefer_free(p);
	capture_end(saved, f, out, sizeof(out));
	sefer_opt.on_error = was;
	ck_assert_ptr_null(r);
	ck_assert_msg(strstr(out, "not a live heap"), "%s", out);
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE))
		ck_assert_msg(strstr(out, "invalid free"), "%s", out);
	capture_begin(&saved, &f);
	orphan_case(true);
	capture_end(saved, f, out, sizeof(out));
	ck_assert_msg(strstr(out, "thread exited"), "%s", out);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

Suite *heaps_suite(void)
{
	Suite *s = suite_create("heaps");
	TCase *tc = tcase_create("heaps");

	tcase_add_test(tc, new_malloc_free_destroy);
	tcase_add_test(tc, owner_frees_are_local);
	tcase_add_test(tc, calloc_zeroes);
	tcase_add_test(tc, realloc_within_and_across);
	tcase_add_test(tc, realloc_large_in_heap_moves_pages);
	tcase_add_test(tc, aligned_alloc_alignments);
	tcase_add_test(tc, visit_sees_live_set);
	tcase_add_test(tc, visit_fn_may_free);
	tcase_add_test(tc, collect_gives_back);
	tcase_add_test(tc, large_cache_per_heap);
	tcase_add_test(tc, visit_while_others_free);
	tcase_add_test(tc, destroy_forgets_cached_segments);
	tcase_add_test(tc, xthread_frees_then_destroy);
	tcase_add_test(tc, destroy_with_pending_xthread_frees);
	tcase_add_test(tc, bounded_over_rounds);
	tcase_add_test(tc, owner_exit_orphans);
	tcase_add_test(tc, many_heaps);
	tcase_add_test(tc, fork_child_uses_heap);
	tcase_add_test(tc, misuse_reported);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

#else

Suite *heaps_suite(void)
{
	return suite_create("heaps"); /* CONFIG_HEAPS=n: nothing to test */
}

#endif
