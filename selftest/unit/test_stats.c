// SPDX-License-Identifier: MIT
/*
 * Stats (core/stats.c, core/inuse.c, core/face_glibc.c): the caller's struct size (an old,
 * smaller struct and a newer, bigger one), bytes and blocks in use against a known live set,
 * without the blocks other threads freed, the peak sampled on the slow path, and mallinfo2's
 * glibc meanings.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "unit.h"

/* sefer 0.1's struct sefer_stats, written out by hand: fourteen fields, then a canary */
struct stats_v0_1 {
	uint64_t mallocs, frees, xthread_frees, large_allocs, segments, segments_peak,
		segments_mapped, committed, committed_peak, purged, abandoned, reclaimed, threads,
		heaps;
	uint64_t canary;
};

#define CANARY 0x5efe2ca4a7ULL

START_TEST(old_size_struct)
{
	struct stats_v0_1 old;
	struct sefer_stats now;
	void *p = sefer_malloc(100); /* a segment at least (the malloc face may be off) */
	size_t n;

	memset(&old, 0xa5, sizeof(old));
	old.canary = CANARY;
	n = sefer_stats_get((struct sefer_stats *)&old, offsetof(struct stats_v0_1, canary));
	ck_assert_uint_eq(n, 14 * sizeof(uint64_t));
	ck_assert_uint_eq(old.canary, CANARY); /* nothing written past the caller's size */
	sefer_stats_get(&now, sizeof(now));
	/* the same figures where the layouts agree (a quiet process: nothing moves) */
	ck_assert_uint_eq(old.segments, now.segments);
	ck_assert_uint_eq(old.committed, now.committed);
	ck_assert_uint_eq(old.threads, now.threads);
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_gt(old.segments, 0);
	/* less than a field: that many bytes, no more */
	memset(&old, 0xa5, sizeof(old));
	n = sefer_stats_get((struct sefer_stats *)&old, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(old.frees, 0xa5a5a5a5a5a5a5a5ULL);
	ck_assert_uint_eq(sefer_stats_get(NULL, 8), 0);
	sefer_free(p);
}
END_TEST

START_TEST(newer_struct_zero_tail)
{
	struct {
		struct sefer_stats st;
		uint64_t later[5]; /* fields a newer header would have */
	} big;

	memset(&big, 0xff, sizeof(big));
	ck_assert_uint_eq(sefer_stats_get(&big.st, sizeof(big)), sizeof(struct sefer_stats));
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(big.later[i], 0);
	ck_assert_uint_ne(big.st.in_use_bytes, UINT64_MAX);
}
END_TEST

enum { NSMALL = 1000, NLARGE = 3 };

struct live_set {
	void *small[NSMALL], *large[NLARGE];
	uint64_t small_bytes, large_bytes;
};

static void live_set_make(struct live_set *ls, void *(*alloc)(size_t))
{
	ls->small_bytes = ls->large_bytes = 0;
	for (int i = 0; i < NSMALL; i++) {
		ls->small[i] = alloc(100 + (size_t)(i % 7) * 100);
		ck_assert_ptr_nonnull(ls->small[i]);
		ls->small_bytes += sefer_usable_size(ls->small[i]);
	}
	for (int i = 0; i < NLARGE; i++) {
		ls->large[i] = alloc((size_t)(i + 1) << 20);
		ck_assert_ptr_nonnull(ls->large[i]);
		ls->large_bytes += sefer_usable_size(ls->large[i]);
	}
}

static void live_set_free(struct live_set *ls)
{
	for (int i = 0; i < NSMALL; i++)
		sefer_free(ls->small[i]);
	for (int i = 0; i < NLARGE; i++)
		sefer_free(ls->large[i]);
}

START_TEST(in_use_counts_known_set)
{
	static struct live_set ls;
	struct sefer_stats a, b, c;

	sefer_stats_get(&a, sizeof(a));
	live_set_make(&ls, sefer_malloc);
	sefer_stats_get(&b, sizeof(b));
	ck_assert_uint_eq(b.in_use_blocks - a.in_use_blocks, NSMALL + NLARGE);
	ck_assert_uint_eq(b.in_use_bytes - a.in_use_bytes, ls.small_bytes + ls.large_bytes);
	ck_assert_uint_eq(b.large_blocks - a.large_blocks, NLARGE);
	ck_assert_uint_eq(b.large_bytes - a.large_bytes, ls.large_bytes);
	ck_assert_uint_ge(b.in_use_peak_bytes, b.in_use_bytes);
	ck_assert_uint_ge(b.in_use_peak_blocks, b.in_use_blocks);
	if (IS_ENABLED(CONFIG_STATS)) /* committed is counted with CONFIG_STATS */
		ck_assert_uint_le(b.in_use_bytes, b.committed);
	live_set_free(&ls);
	sefer_stats_get(&c, sizeof(c));
	ck_assert_uint_eq(c.in_use_blocks, a.in_use_blocks);
	ck_assert_uint_eq(c.in_use_bytes, a.in_use_bytes);
	/* the peak stays where the query saw it (peaks are kept with CONFIG_STATS) */
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_ge(c.in_use_peak_bytes, b.in_use_bytes);
}
END_TEST

/* The calling thread's heap's figures (CONFIG_HEAPS; left zero without it) */
static void heap_stats_of_mine(struct sefer_heap_stats *st)
{
#if IS_ENABLED(CONFIG_HEAPS)
	sefer_heap_stats(NULL, st, sizeof(*st));
#else
	(void)st;
#endif
}

static void *free_set(void *arg)
{
	if (arg)
		live_set_free(arg); /* the batches of these cross-thread frees go out at the exit */
	return NULL;
}

/*
 * Blocks another thread freed are not in use, though their pages count them as handed out
 * until the owner, this thread, collects the cross-thread lists (core/inuse.c): it neither
 * allocates nor frees between the other thread's frees and the queries, so nothing collects
 * them. In use before, not after, by the process's figures and the heap's; a 32-bit target
 * has no room for the lists' lengths and counts them until collected.
 */
START_TEST(in_use_without_cross_thread_frees)
{
	static struct live_set ls;
	struct sefer_stats a, b, c;
	struct sefer_heap_stats ha = {0}, hb = {0}, hc = {0};
	pthread_t t;

	/* a thread made and joined first: glibc keeps what it allocated for one (its DTV) */
	ck_assert_int_eq(pthread_create(&t, NULL, free_set, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	sefer_stats_get(&a, sizeof(a));
	heap_stats_of_mine(&ha);
	live_set_make(&ls, sefer_malloc);
	sefer_stats_get(&b, sizeof(b));
	heap_stats_of_mine(&hb);
	ck_assert_uint_eq(b.in_use_blocks - a.in_use_blocks, NSMALL + NLARGE);
	if (IS_ENABLED(CONFIG_HEAPS))
		ck_assert_uint_eq(hb.in_use_bytes - ha.in_use_bytes,
				  ls.small_bytes + ls.large_bytes);
	ck_assert_int_eq(pthread_create(&t, NULL, free_set, &ls), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	sefer_stats_get(&c, sizeof(c));
	heap_stats_of_mine(&hc);
	if (UINTPTR_MAX <= 0xffffffffu)
		return;
	ck_assert_uint_eq(c.in_use_blocks, a.in_use_blocks);
	ck_assert_uint_eq(c.in_use_bytes, a.in_use_bytes);
	ck_assert_uint_eq(hc.in_use_blocks, ha.in_use_blocks);
	ck_assert_uint_eq(hc.in_use_bytes, ha.in_use_bytes);
}
END_TEST

/* No query while the set grows: the slow path's samples (a new segment) catch the peak. */
START_TEST(peak_sampled_on_slow_path)
{
	enum { N = 60000, SIZE = 1000 }; /* about 60 MB in small blocks: 15 segments */
	static void *p[N];
	struct sefer_stats st;
	uint64_t total = 0;

	for (int i = 0; i < N; i++) {
		p[i] = sefer_malloc(SIZE);
		total += sefer_usable_size(p[i]);
	}
	for (int i = 0; i < N; i++)
		sefer_free(p[i]);
	sefer_stats_get(&st, sizeof(st));
	ck_assert_uint_lt(st.in_use_bytes, total / 10);
	if (IS_ENABLED(CONFIG_STATS)) /* a lower bound, missing at most the last stretch */
		ck_assert_msg(st.in_use_peak_bytes >= total * 3 / 4 &&
				      st.in_use_peak_bytes <= st.committed_peak,
			      "peak %llu of %llu allocated",
			      (unsigned long long)st.in_use_peak_bytes, (unsigned long long)total);
}
END_TEST

#if IS_ENABLED(CONFIG_MALLOC_FACE)
static void *plain_malloc(size_t n)
{
	return malloc(n);
}

/* glibc's meanings: uordblks the small bytes in use, hblks/hblkhd the large (mmapped) blocks,
 * arena what backs the small ones, fordblks the free bytes inside arena */
START_TEST(mallinfo2_meanings)
{
	static struct live_set ls;
	struct mallinfo2 a, b;

	a = mallinfo2();
	live_set_make(&ls, plain_malloc);
	b = mallinfo2();
	ck_assert_uint_eq(b.uordblks - a.uordblks, ls.small_bytes);
	ck_assert_uint_eq(b.hblks - a.hblks, NLARGE);
	ck_assert_uint_ge(b.hblkhd - a.hblkhd, ls.large_bytes);
	ck_assert_uint_eq(b.arena, b.uordblks + b.fordblks);
	ck_assert_uint_ge(b.arena, b.uordblks);
	live_set_free(&ls);
	b = mallinfo2();
	ck_assert_uint_eq(b.uordblks, a.uordblks);
	ck_assert_uint_eq(b.hblks, a.hblks);
}
END_TEST
#endif

START_TEST(print_to_file)
{
	char buf[8192];
	FILE *f = tmpfile();
	size_t n;

	sefer_stats_print(f, SEFER_STATS_JSON);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	ck_assert_msg(buf[0] == '{' && strstr(buf, "\"in_use_bytes\": ") &&
			      strstr(buf, "\"classes\": [") && strstr(buf, "]}\n"),
		      "%s", buf);
	f = tmpfile();
	sefer_stats_print(f, SEFER_STATS_CLASSES);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	ck_assert_msg(strstr(buf, "sefer: stats of ") && strstr(buf, "in use") &&
			      strstr(buf, "block size"),
		      "%s", buf);
}
END_TEST

Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("stats");

	tcase_add_test(tc, old_size_struct);
	tcase_add_test(tc, newer_struct_zero_tail);
	tcase_add_test(tc, in_use_counts_known_set);
	tcase_add_test(tc, in_use_without_cross_thread_frees);
	tcase_add_test(tc, peak_sampled_on_slow_path);
#if IS_ENABLED(CONFIG_MALLOC_FACE)
	tcase_add_test(tc, mallinfo2_meanings);
#endif
	tcase_add_test(tc, print_to_file);
	suite_add_tcase(s, tc);
	return s;
}
