// SPDX-License-Identifier: MIT
/*
 * The fastbin policy: LIFO reuse through the magazine, the depth bound, classes above the
 * magazine untouched, free marks kept right, and the magazine given back at thread exit.
 * With the policy off, one test checks the plain page LIFO the core gives instead.
 */
#include <pthread.h>

#include "core/heap.h"
#include "core/segtab.h"
#include "selftest/unit/unit.h"

#if IS_ENABLED(CONFIG_POLICY_FASTBIN)

START_TEST(fb_classes)
{
	ck_assert_uint_eq(bin_index(FASTBIN_MAX) + 1, FASTBIN_BINS);
	ck_assert_uint_eq(bin_block_size(FASTBIN_BINS - 1), FASTBIN_MAX);
}
END_TEST

START_TEST(fb_lifo_and_depth)
{
	void *p[CONFIG_FASTBIN_DEPTH + 8];
	struct fastbin_heap *fb;
	unsigned bin = bin_index(200);

	/*
	 * The first free into a segment takes the slow path, which fills the heap's owned-segment
	 * cache and never offers the block to the magazine. Whether an earlier free in this
	 * process (the test runner's own) did that already depends on the configuration: make
	 * sure here (found by make check-randconfig, with DEBUG_DOUBLE_FREE and DECOMMIT off).
	 */
	sefer_free(sefer_malloc(200));
	for (int i = 0; i < CONFIG_FASTBIN_DEPTH + 8; i++)
		p[i] = sefer_malloc(200);
	fb = &heap_get()->policy.fastbin;
	ck_assert_uint_eq(fb->count[bin], 0);
	for (int i = 0; i < CONFIG_FASTBIN_DEPTH + 8; i++)
		sefer_free(p[i]);
	ck_assert_uint_eq(fb->count[bin], CONFIG_FASTBIN_DEPTH);
	/* any size of the class gets the newest magazine block back */
	void *q = sefer_malloc(193);

	ck_assert_ptr_eq(q, p[CONFIG_FASTBIN_DEPTH - 1]);
	ck_assert_uint_eq(fb->count[bin], CONFIG_FASTBIN_DEPTH - 1);
	sefer_free(q);
	/* blocks above the magazine's classes never enter it */
	void *big = sefer_malloc(4000);

	sefer_free(big);
	for (unsigned b = 0; b < FASTBIN_BINS; b++)
		ck_assert_uint_le(fb->count[b], CONFIG_FASTBIN_DEPTH);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

static void *churn_and_exit(void *arg)
{
	void *p[64];

	for (int i = 0; i < 64; i++)
		p[i] = sefer_malloc(16 + (size_t)i * 16);
	for (int i = 0; i < 64; i++)
		sefer_free(p[i]);
	*(struct segment **)arg = segment_of(p[0]);
	return NULL;
}

START_TEST(fb_thread_exit_returns_blocks)
{
	struct segment *seg = NULL;
	pthread_t t;

	pthread_create(&t, NULL, churn_and_exit, &seg);
	pthread_join(t, NULL);
	/* every page emptied, so the segment was cached or released, not abandoned */
	ck_assert(!segtab_contains(seg) || atomic_load(&seg->owner) != NULL);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

Suite *fastbin_suite(void)
{
	Suite *s = suite_create("fastbin");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, fb_classes);
	tcase_add_test(tc, fb_lifo_and_depth);
	tcase_add_test(tc, fb_thread_exit_returns_blocks);
	suite_add_tcase(s, tc);
	return s;
}

#else /* !CONFIG_POLICY_FASTBIN */

START_TEST(fb_off_page_lifo)
{
	void *p = sefer_malloc(200), *keep = sefer_malloc(200), *again;
	struct page *pg = page_of(segment_of(p), p);
	bool on_page;

	sefer_free(p);
	on_page = pg->free == p; /* measured first: Check allocates */
	again = sefer_malloc(200);
	ck_assert_msg(on_page, "straight onto its page's free list: no magazine");
	ck_assert_ptr_eq(again, p);
	sefer_free(again);
	sefer_free(keep);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

Suite *fastbin_suite(void)
{
	Suite *s = suite_create("fastbin");
	TCase *tc = tcase_create("off");

	tcase_add_test(tc, fb_off_page_lifo);
	suite_add_tcase(s, tc);
	return s;
}

#endif
