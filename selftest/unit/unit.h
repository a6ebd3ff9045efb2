/* SPDX-License-Identifier: MIT */
/* Shared helpers of the Check unit tests. Every suite is one file; main.c runs them all. */
#ifndef SEFER_SELFTEST_UNIT_H
#define SEFER_SELFTEST_UNIT_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "generated/policy_tests.h" /* SEFER_POLICY_TESTS */
#include "sefer.h"

Suite *bins_suite(void);
Suite *segment_suite(void);
Suite *api_suite(void);
Suite *threads_suite(void);
Suite *process_suite(void);
Suite *options_suite(void);
Suite *decommit_suite(void);
/* each policy's suite (policies/<name>/test_<name>.c; SEFER_POLICY_TESTS) */
#define POLICY_SUITE_DECL(name) Suite *name##_suite(void);
SEFER_POLICY_TESTS(POLICY_SUITE_DECL)
Suite *pages_suite(void);
Suite *generations_suite(void);
Suite *hardening_suite(void);
Suite *heaps_suite(void);
Suite *os_suite(void);
Suite *remap_undo_suite(void);
Suite *stats_suite(void);
Suite *fault_suite(void);
Suite *debug_suite(void);

/*
 * A fresh process's state for the test that follows (fresh_state.c): a checked fixture of the
 * suites whose tests assume it, so that they pass with CK_FORK=no too. main() saves the
 * options first.
 */
void unit_fresh_state_save(void);
void unit_fresh_state(void);

/* Built with ASan or TSan: shadow memory dominates RSS, sizes shrink (gcc and clang spellings). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Resident set size of this process in bytes, from /proc/self/statm. */
size_t rss_bytes(void);

#ifdef __linux__
/* How many of the 4 KiB pages of [p, p + n) are in memory (mincore; p page-aligned). */
size_t resident_pages(const void *p, size_t n);
#endif

/*
 * A byte per 4 KiB page of p's offsets [from, to), derived from the offset: page_pattern_fill
 * writes it, page_pattern_bad counts the pages where it differs (a block that moved or was
 * resized must keep it). Inline: every runner has them, the win32 one included.
 */
static inline uint8_t page_pattern(size_t off)
{
	return (uint8_t)((off >> 12) | 1);
}

static inline void page_pattern_fill(uint8_t *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i += 4096)
		p[i] = page_pattern(i);
}

static inline size_t page_pattern_bad(const uint8_t *p, size_t from, size_t to)
{
	size_t bad = 0;

	for (size_t i = from; i < to; i += 4096)
		bad += p[i] != page_pattern(i);
	return bad;
}

/* qsort() and bsearch() order of pointer-sized elements (void * or uintptr_t) by value. */
static inline int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* How many bytes of [p, p + n) are not zero (a calloc block must have none). */
static inline size_t nonzero_bytes(const uint8_t *p, size_t n)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += p[i] != 0;
	return bad;
}

/*
 * Run this test binary again as a child with `mode` as its argument and env assignments
 * `env` (NULL-terminated, may be NULL); capture its stderr into buf. Returns the raw wait
 * status. The child runs child_main() (main.c) which dispatches on mode.
 */
int run_child(const char *mode, const char *const *env, char *buf, size_t len);
/* argv[0] of this test binary, for run_child() (set by main). */
extern const char *unit_self_path;
int child_main(const char *mode);
/* test_fault.c's children (the Check runner only): exit status, or -1 for another mode. */
int fault_child(const char *mode);
/* The hardening suite's child modes (test_hardening.c); -1 for a mode it does not know. */
int hardening_child(const char *mode);
/* The heap hand-off misuse children (test_heaps_move.c); -1 for a mode it does not know. */
int heaps_move_child(const char *mode);

#endif
