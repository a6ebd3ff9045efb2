// SPDX-License-Identifier: MIT
/*
 * First-class heaps (core/heaps.c, Documentation/heaps.rst), in one thread: allocation calls,
 * visit, collect, the per-heap large cache. The tests across threads (destroy with pending
 * cross-thread frees, bounded memory over many rounds, owner exit, many heaps per thread, fork,
 * misuse reports) are in test_heaps_threads.c; this file owns the suite. Empty with
 * CONFIG_HEAPS=n.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/large.h"
#include "core/segment.h"
#include "heaps.h"
#include "sefer/os.h"

#if IS_ENABLED(CONFIG_HEAPS)

/* ---- a set of pointers the visitor fills (heaps.h) ---- */
bool seen_record(void *block, size_t usable, void *arg)
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

void seen_free(struct seen *s)
{
	free(s->p);
	free(s->usable);
	memset(s, 0, sizeof(*s));
}

void expect_visit(struct sefer_heap *h, void **want, size_t n)
{
	struct seen s = { 0 };
	void **w = malloc((n ? n : 1) * sizeof(*w));

	ck_assert(sefer_heap_visit(h, seen_record, &s));
	ck_assert_uint_eq(s.n, n);
	if (!n) { /* memcpy and qsort want non-NULL pointers even for 0 elements */
		free(w);
		seen_free(&s);
		return;
	}
	memcpy(w, want, n * sizeof(*w));
	qsort(w, n, sizeof(*w), cmp_addr);
	qsort(s.p, s.n, sizeof(*s.p), cmp_addr);
	for (size_t i = 0; i < n; i++)
		ck_assert_ptr_eq(s.p[i], w[i]);
	free(w);
	seen_free(&s);
}

size_t live_heaps(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st, sizeof(st));
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
	sefer_stats_get(&st0, sizeof(st0));
	for (int i = 0; i < 1000; i++)
		sefer_free(p[i]);
	sefer_stats_get(&st1, sizeof(st1));
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
	size_t base = atomic_load(&sefer__large_mapped), grown;
	uint8_t *other = sefer_heap_malloc(h, LARGE), *p = sefer_heap_malloc(h, (size_t)8 << 20);
	size_t before = atomic_load(&sefer__large_mapped);

	page_pattern_fill(p, 0, (size_t)8 << 20);
	p = sefer_heap_realloc(h, p, (size_t)32 << 20);
	grown = atomic_load(&sefer__large_mapped) - before;
	ck_assert_uint_eq(page_pattern_bad(p, 0, (size_t)8 << 20), 0);
	if ((sefer__os.features & SEFER_OS_REMAP) && !IS_ENABLED(CONFIG_GUARD_PAGES)) {
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
	ck_assert_uint_le(atomic_load(&sefer__large_mapped), base + ((size_t)3 << 20));
	sefer_free(moved);
}
END_TEST

/*
 * Plain realloc of h's blocks: kept at its address (in place, or resized there by the OS), a
 * block stays h's; moved (copied, into a segment a policy kept, or by the OS moving its pages),
 * it is the default heap's, whichever way it moved, so h's visit no longer lists it and
 * destroying h leaves it alone.
 */
START_TEST(plain_realloc_moves_out_of_heap)
{
	struct sefer_heap *h = sefer_heap_new();
	const size_t grown = (size_t)6 << 20, kept = ((size_t)2 << 20) - 4096;
	uint8_t *p[3] = { sefer_heap_malloc(h, 100), sefer_heap_malloc(h, (size_t)2 << 20),
			  sefer_heap_malloc(h, (size_t)8 << 20) };
	uint8_t *q[3];
	void *in_h[3];
	size_t n = 0, moved = 0;

	memset(p[0], 5, 100);
	page_pattern_fill(p[1], 0, kept);
	page_pattern_fill(p[2], 0, (size_t)1 << 20);
	ck_assert_ptr_eq(sefer_realloc(p[0], 90), p[0]);
	ck_assert_ptr_eq(sefer_realloc(p[1], kept), p[1]);
	expect_visit(h, (void **)p, 3);
	q[0] = sefer_realloc(p[0], 5000);	      /* a bigger class: copied */
	q[1] = sefer_realloc(p[1], grown);	      /* past its room: kept segment, OS or copy */
	q[2] = sefer_realloc(p[2], (size_t)1 << 20); /* by more than half: OS or copy */
	ck_assert_ptr_ne(q[0], p[0]);
	for (int i = 0; i < 3; i++) {
		if (q[i] == p[i])
			in_h[n++] = q[i];
		else
			moved |= 1u << i;
	}
	expect_visit(h, in_h, n);
	sefer_heap_destroy(h);
	/* what moved is intact after the destroy */
	for (size_t i = 0; i < 90; i++)
		ck_assert_uint_eq(q[0][i], 5);
	if (moved & 2)
		ck_assert_uint_eq(page_pattern_bad(q[1], 0, kept), 0);
	if (moved & 4)
		ck_assert_uint_eq(page_pattern_bad(q[2], 0, (size_t)1 << 20), 0);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 0; i < 3; i++)
		if (moved & (1u << i))
			sefer_free(q[i]);
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

	ck_assert(sefer_heap_visit(h, seen_record, &s));
	for (size_t i = 0; i < s.n; i++)
		ck_assert_uint_eq(s.usable[i], sefer_usable_size(s.p[i]));
	seen_free(&s);
	/* fn returning false stops the walk */
	s.stop_after = 10;
	ck_assert(!sefer_heap_visit(h, seen_record, &s));
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
	sefer_stats_get(&st0, sizeof(st0));
	ck_assert(sefer_heap_visit(h, free_it, &n));
	sefer_stats_get(&st1, sizeof(st1));
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
	sefer_stats_get(&st0, sizeof(st0));
	for (int i = 0; i < 20000; i++)
		sefer_free(p[i]);
	sefer_heap_collect(h, true);
	sefer_stats_get(&st1, sizeof(st1));
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
	sefer_stats_get(&st0, sizeof(st0));
	sefer_heap_destroy(h);
	sefer_stats_get(&st1, sizeof(st1));
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) && IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.segments + 1, st0.segments);
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
	tcase_add_test(tc, plain_realloc_moves_out_of_heap);
	tcase_add_test(tc, aligned_alloc_alignments);
	tcase_add_test(tc, visit_sees_live_set);
	tcase_add_test(tc, visit_fn_may_free);
	tcase_add_test(tc, collect_gives_back);
	tcase_add_test(tc, large_cache_per_heap);
	heaps_add_thread_tests(tc);
	heaps_add_move_tests(tc);
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
