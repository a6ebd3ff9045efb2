// SPDX-License-Identifier: MIT
/*
 * Hardening (Documentation/debugging.rst):
 *  - CONFIG_HARDENED: a fresh page hands out its blocks in a shuffled order, not in address
 *    order, and two processes shuffle differently.
 *  - CONFIG_GUARD_PAGES: a write one byte past a large block's usable end faults (the child
 *    dies of SIGSEGV); every small segment has an inaccessible page before its first block.
 * Each test is skipped, with a note, when its option is off.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/config.h"
#include "core/segment.h"
#include "unit.h"

#define SHUF_SIZE 48 /* a class no other test relies on the order of */
#define SHUF_N 64

static char out[8192];

/* Allocate SHUF_N blocks from a fresh heap (a new thread) and write their ranks to r. */
static void *shuffle_blocks(void *arg)
{
	unsigned *rank = arg;
	uintptr_t p[SHUF_N], lo = UINTPTR_MAX;

	for (int i = 0; i < SHUF_N; i++) {
		p[i] = (uintptr_t)sefer_malloc(SHUF_SIZE);
		if (p[i] < lo)
			lo = p[i];
	}
	for (int i = 0; i < SHUF_N; i++)
		rank[i] = (unsigned)((p[i] - lo) / SHUF_SIZE);
	for (int i = 0; i < SHUF_N; i++)
		sefer_free((void *)p[i]);
	return NULL;
}

static void fresh_order(unsigned *rank)
{
	pthread_t t;

	/* no ck_assert here: the child modes call this outside a test */
	if (pthread_create(&t, NULL, shuffle_blocks, rank)) {
		memset(rank, 0, SHUF_N * sizeof(*rank));
		return;
	}
	pthread_join(t, NULL);
}

int hardening_child(const char *mode)
{
	if (!strcmp(mode, "shuffle-order")) {
		unsigned rank[SHUF_N];

		fresh_order(rank);
		for (int i = 0; i < SHUF_N; i++)
			fprintf(stderr, "%u ", rank[i]);
		fprintf(stderr, "\n");
		return 0;
	}
	if (!strcmp(mode, "guard-large") || !strcmp(mode, "guard-large-reused")) {
		size_t sizes[] = { 1 << 20, (5 << 20) + 123, 300000 };
		unsigned char *p = NULL;

		if (!strcmp(mode, "guard-large-reused")) {
			/* a large cache re-places a freed segment's block: the guard must follow */
			for (int i = 0; i < 3; i++)
				sefer_free(sefer_malloc(sizes[i] * 2));
		}
		for (int i = 0; i < 3; i++) {
			size_t n;

			p = sefer_malloc(sizes[i]);
			if (!p)
				return 2;
			n = sefer_usable_size(p);
			memset(p, 1, n); /* the whole usable block is writable */
			if (i < 2)
				sefer_free(p);
		}
		if (sefer_check_heap())
			return 3;
		fprintf(stderr, "writing past the end\n");
		p[sefer_usable_size(p)] = 1; /* must fault */
		return 4;
	}
	if (!strcmp(mode, "guard-meta")) {
		/* the byte just before a small segment's first block page is the guard's */
		unsigned char *p = sefer_malloc(64);
		unsigned char *first = (unsigned char *)segment_of(p) + (META_PAGES << SPAGE_SHIFT);

		fprintf(stderr, "reading the guard\n");
		return first[-1] == 0xaa ? 5 : 6; /* must fault */
	}
	return -1;
}

START_TEST(shuffled_not_in_address_order)
{
	unsigned rank[SHUF_N];
	int ascending = 0;

	fresh_order(rank);
	for (int i = 1; i < SHUF_N; i++)
		ascending += rank[i] > rank[i - 1];
	/* address order would be 63 rises; a random order has about 31 */
	ck_assert_msg(ascending < SHUF_N - 8, "%d of %d steps ascend", ascending, SHUF_N - 1);
	fresh_order(rank);
	ascending = 0;
	for (int i = 1; i < SHUF_N; i++)
		ascending += rank[i] > rank[i - 1];
	ck_assert_msg(ascending < SHUF_N - 8, "second heap: %d steps ascend", ascending);
	ck_assert_int_eq(sefer_check_heap(), 0);
}
END_TEST

START_TEST(shuffle_differs_between_processes)
{
	char first[sizeof(out)];
	int st = run_child("shuffle-order", NULL, first, sizeof(first));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, first);
	st = run_child("shuffle-order", NULL, out, sizeof(out));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strcmp(first, out), "two processes shuffled alike: %s", out);
}
END_TEST

/* mode's child must die of SIGSEGV; extra: one more environment variable, or NULL */
static void expect_segv(const char *mode, const char *extra)
{
	/* a TSan build (make check-tsan in a GUARD_PAGES configuration) would catch the SEGV,
	 * report it and exit 66: let the signal kill the child instead */
	static const char tsan[] = "TSAN_OPTIONS=handle_segv=0";
	const char *const env[] = { tsan, extra, NULL };
	int st = run_child(mode, env, out, sizeof(out));

	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "%s: status %d: %s", mode, st,
		      out);
	ck_assert_msg(strstr(out, "writing past") || strstr(out, "reading the guard"), "%s", out);
}

START_TEST(guard_after_large_block)
{
	expect_segv("guard-large", NULL);
}
END_TEST

START_TEST(guard_after_reused_large_block)
{
	expect_segv("guard-large-reused", "SEFER_LARGE_CACHE_BUDGET=1G");
}
END_TEST

START_TEST(guard_before_small_blocks)
{
	expect_segv("guard-meta", NULL);
}
END_TEST

Suite *hardening_suite(void)
{
	Suite *s = suite_create("hardening");
	TCase *tc = tcase_create("hardening");

	if (IS_ENABLED(CONFIG_HARDENED)) {
		tcase_add_test(tc, shuffled_not_in_address_order);
		tcase_add_test(tc, shuffle_differs_between_processes);
	} else {
		printf("CONFIG_HARDENED=n: free-list shuffle tests skipped\n");
	}
	if (IS_ENABLED(CONFIG_GUARD_PAGES) && IS_ENABLED(CONFIG_SANITIZE_ADDRESS)) {
		/* the bytes past a block are poisoned: ASan reports the access before the guard
		 * page can fault (check-asan-poison asserts that report) */
		printf("CONFIG_SANITIZE_ADDRESS=y: guard page tests skipped\n");
	} else if (IS_ENABLED(CONFIG_GUARD_PAGES)) {
		tcase_add_test(tc, guard_after_large_block);
		tcase_add_test(tc, guard_after_reused_large_block);
		tcase_add_test(tc, guard_before_small_blocks);
	} else {
		printf("CONFIG_GUARD_PAGES=n: guard page tests skipped\n");
	}
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
