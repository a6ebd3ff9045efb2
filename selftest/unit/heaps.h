/* SPDX-License-Identifier: MIT */
/*
 * What the first-class heap suite's two files share: test_heaps.c (the heap calls, visit and
 * collect, in one thread; it owns the suite) and test_heaps_threads.c (heaps across threads:
 * destroy with cross-thread frees pending, bounded memory over rounds, owner exit, many heaps
 * per thread, fork, misuse reports). Used only with CONFIG_HEAPS=y.
 */
#ifndef SEFER_SELFTEST_HEAPS_H
#define SEFER_SELFTEST_HEAPS_H

#include <stdbool.h>
#include <stddef.h>

#include "unit.h"

#define LARGE (256 << 10) /* above the largest small class (128 KiB) */

/* A set of pointers the visitor fills: seen_record() is a sefer_heap_visit() callback. */
struct seen {
	void **p;
	size_t *usable;
	size_t n, cap, stop_after;
};

bool seen_record(void *block, size_t usable, void *arg);
void seen_free(struct seen *s);
/* Does the visit of h see exactly the n pointers in want (in any order)? Asserts it does. */
void expect_visit(struct sefer_heap *h, void **want, size_t n);
/* The live heaps sefer_stats_get() counts. */
size_t live_heaps(void);
/* Add test_heaps_threads.c's tests to the suite's test case. */
void heaps_add_thread_tests(TCase *tc);
/* Add test_heaps_move.c's tests (hand-off between threads, sefer_heap_stats). */
void heaps_add_move_tests(TCase *tc);

#endif
