// SPDX-License-Identifier: MIT
/*
 * CONFIG_FAULT_INJECTION (core/fault.c): one test per OS op the core calls, failed on purpose
 * in the middle of real work, asserting the exact outcome: a segment map, a heap struct map at
 * thread start, a purge, a guard-page protect (GUARD_PAGES builds), a remap during realloc and
 * during the large cache's re-place, calloc's populate; realloc failing half-way keeps its old
 * block whole; SEFER_FAIL_* read from the environment (a child process). Without the option the
 * suite is empty. check-unit-faults runs it in two builds: with and without guard pages.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "unit.h"

#if IS_ENABLED(CONFIG_FAULT_INJECTION)
#include "core/fault.h"

#define MiB ((size_t)1 << 20)

static uint64_t base_injected[FAULT_OPS], base_calls[FAULT_OPS];

/* Fail every interval-th call of `ops` from now, `times` times (-1: until disarmed). */
static void arm_at(unsigned ops, uint64_t interval, int64_t times)
{
	for (int op = 0; op < FAULT_OPS; op++) {
		base_injected[op] = sefer__fault_injected((enum fault_op)op);
		base_calls[op] = sefer__fault_calls((enum fault_op)op);
	}
	sefer__fault_set(ops, 100, interval, times);
}

/* The same for every call, with no cached segment or dirty page left from before. */
static void arm(unsigned ops, int64_t times)
{
	sefer_collect(true);
	arm_at(ops, 1, times);
}

/* Faults injected into op, and calls of op seen, since the last arm. */
static uint64_t injected(enum fault_op op)
{
	return sefer__fault_injected(op) - base_injected[op];
}

static uint64_t calls(enum fault_op op)
{
	return sefer__fault_calls(op) - base_calls[op];
}

static void disarm(void)
{
	sefer__fault_set(0, 0, 1, 0);
}

static uint8_t byte_at(size_t i, unsigned tag)
{
	return (uint8_t)(i * 131 + (i >> 12) + tag);
}

static void fill(uint8_t *p, size_t n, unsigned tag)
{
	for (size_t i = 0; i < n; i++)
		p[i] = byte_at(i, tag);
}

static size_t bad_bytes(const uint8_t *p, size_t n, unsigned tag)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += p[i] != byte_at(i, tag);
	return bad;
}

static uint64_t segments_now(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st, sizeof(st));
	return st.segments;
}

/*
 * A large block whose segment cannot be mapped (map), or whose guard page cannot be set
 * (protect): NULL, ENOMEM, no segment left mapped; the next call, the one fault spent, works.
 */
static void large_block_fails(enum fault_op op, size_t n, unsigned tag)
{
	uint64_t segs;
	uint8_t *p;

	arm(1u << op, 1);
	segs = segments_now();
	errno = 0;
	p = sefer_malloc(n);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(injected(op), 1);
	ck_assert_uint_eq(segments_now(), segs);
	p = sefer_malloc(n);
	ck_assert_ptr_nonnull(p);
	fill(p, n, tag);
	ck_assert_uint_eq(bad_bytes(p, n, tag), 0);
	sefer_free(p);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}

START_TEST(map_large_block)
{
	large_block_fails(FAULT_MAP, 40 * MiB + 12345, 1);
}
END_TEST

#if IS_ENABLED(CONFIG_HEAPS)
/*
 * Small blocks of a first-class heap until its segment is full and another must be mapped:
 * that map fails (NULL, ENOMEM) and every block handed out before is intact; the next call
 * maps. A guard-page build fails the segment's guard instead (protect), with the same outcome.
 */
static void small_segment_fails(enum fault_op op)
{
	struct sefer_heap *h = sefer_heap_new();
	size_t n = 16 * 1024, cap = 4096, got = 0;
	uint8_t **blocks = calloc(cap, sizeof(*blocks));
	uint8_t *p;

	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(blocks);
	ck_assert_ptr_nonnull(blocks[got++] = sefer_heap_malloc(h, n)); /* its first segment */
	fill(blocks[0], n, 0);
	arm(1u << op, 1);
	for (;;) {
		ck_assert_uint_lt(got, cap);
		errno = 0;
		p = sefer_heap_malloc(h, n);
		if (!p)
			break;
		fill(p, n, (unsigned)got);
		blocks[got++] = p;
	}
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(injected(op), 1);
	ck_assert_uint_gt(got, 1);
	for (size_t i = 0; i < got; i++)
		ck_assert_uint_eq(bad_bytes(blocks[i], n, (unsigned)i), 0);
	p = sefer_heap_malloc(h, n);
	ck_assert_ptr_nonnull(p);
	fill(p, n, 7);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	sefer_heap_destroy(h);
	free(blocks);
}

START_TEST(map_small_segment)
{
	small_segment_fails(FAULT_MAP);
}
END_TEST
#endif /* CONFIG_HEAPS */

#if IS_ENABLED(CONFIG_HEAPS) && IS_ENABLED(CONFIG_STATS)
/* A thread's first malloc whose heap struct cannot be mapped: NULL and ENOMEM, no crash; its
 * next malloc sets the heap up. */
struct thread_result {
	void *first, *second;
	int first_errno;
};

static void *thread_start(void *arg)
{
	struct thread_result *r = arg;

	errno = 0;
	r->first = sefer_malloc(64);
	r->first_errno = errno;
	r->second = sefer_malloc(64);
	if (r->second)
		memset(r->second, 0x5a, 64);
	sefer_free(r->second);
	return NULL;
}

START_TEST(map_heap_struct_at_thread_start)
{
	struct sefer_heap *h[256];
	struct thread_result r = { 0 };
	struct sefer_stats st;
	uint64_t mapped;
	unsigned k = 0;
	pthread_t t;

	/* empty the pool of exited threads' heap structs: make heaps until one is mapped */
	sefer_stats_get(&st, sizeof(st));
	mapped = st.threads;
	do {
		ck_assert_uint_lt(k, 256);
		h[k] = sefer_heap_new();
		ck_assert_ptr_nonnull(h[k]);
		sefer_stats_get(&st, sizeof(st));
		k++;
	} while (st.threads == mapped);
	arm(1u << FAULT_MAP, 1);
	ck_assert_int_eq(pthread_create(&t, NULL, thread_start, &r), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_ptr_null(r.first);
	ck_assert_int_eq(r.first_errno, ENOMEM);
	ck_assert_ptr_nonnull(r.second);
	ck_assert_uint_eq(injected(FAULT_MAP), 1);
	disarm();
	while (k)
		sefer_heap_destroy(h[--k]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST
#endif /* CONFIG_HEAPS && CONFIG_STATS: the pool drained by counting maps */

#if IS_ENABLED(CONFIG_DECOMMIT)
/*
 * Purges the OS refuses (sefer_collect(true) with every purge failing): nothing counted as
 * given back (an eager purge; a lazy one reports nothing either way), and the pages, which
 * still hold their old contents, are not taken for zeroed memory: calloc clears them. Once
 * purges work again they are given back.
 */
START_TEST(purge_refused)
{
	enum { N = 512, SIZE = 1000 };
	uint8_t *p[N];
	struct sefer_stats before, after;

	sefer_collect(true);
	for (int i = 0; i < N; i++) {
		p[i] = sefer_malloc(SIZE);
		ck_assert_ptr_nonnull(p[i]);
		memset(p[i], 0xa5, SIZE);
	}
	for (int i = 0; i < N; i++)
		sefer_free(p[i]);
	sefer_stats_get(&before, sizeof(before));
	arm_at(1u << FAULT_PURGE, 1, FAULT_TIMES_UNLIMITED);
	sefer_collect(true);
	sefer_stats_get(&after, sizeof(after));
	ck_assert_uint_gt(injected(FAULT_PURGE), 0);
	if (IS_ENABLED(CONFIG_PURGE_DONTNEED))
		ck_assert_uint_eq(after.purged, before.purged);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 0; i < N; i++) {
		p[i] = sefer_calloc(1, SIZE);
		ck_assert_ptr_nonnull(p[i]);
		for (int j = 0; j < SIZE; j++)
			ck_assert_msg(!p[i][j], "calloc block %d byte %d is %#x", i, j, p[i][j]);
	}
	for (int i = 0; i < N; i++)
		sefer_free(p[i]);
	disarm();
	sefer_collect(true);
	sefer_stats_get(&after, sizeof(after));
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_gt(after.purged, before.purged);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST
#endif /* CONFIG_DECOMMIT */

#if IS_ENABLED(CONFIG_GUARD_PAGES)
#if IS_ENABLED(CONFIG_HEAPS)
START_TEST(protect_small_segment)
{
	small_segment_fails(FAULT_PROTECT);
}
END_TEST
#endif

START_TEST(protect_large_block)
{
	large_block_fails(FAULT_PROTECT, 24 * MiB + 777, 3);
}
END_TEST

/*
 * A cached large segment placed again for another size moves its guard page: with every
 * protect failing the old placement stands, the request is served another way or fails with
 * ENOMEM, and every byte of what it returns is usable (no guard left inside it).
 */
START_TEST(protect_replace)
{
	size_t n = 20 * MiB;

	/* interval 1: the old guard's lift fails; 2: the lift works, the new guard's set fails
	 * and the old guard is put back; 3: the third protect fails, wherever it falls */
	for (unsigned interval = 1; interval <= 3; interval++) {
		uint8_t *p = sefer_malloc(n), *q;

		ck_assert_ptr_nonnull(p);
		fill(p, n, 4);
		sefer_free(p); /* cached (CONFIG_POLICY_LARGE_CACHE) */
		arm_at(1u << FAULT_PROTECT, interval, FAULT_TIMES_UNLIMITED);
		errno = 0;
		q = sefer_malloc(n - 3 * MiB);
		ck_assert_uint_gt(calls(FAULT_PROTECT), 0);
		if (q) {
			fill(q, n - 3 * MiB, 5);
			ck_assert_uint_eq(bad_bytes(q, n - 3 * MiB, 5), 0);
			sefer_free(q);
		} else {
			ck_assert_int_eq(errno, ENOMEM);
		}
		disarm();
		ck_assert_uint_eq(sefer_check_heap(), 0);
		sefer_collect(true);
	}
}
END_TEST
#endif /* CONFIG_GUARD_PAGES */

#if !IS_ENABLED(CONFIG_GUARD_PAGES) && defined(__linux__)
/* realloc of a large block whose pages the OS will not move: copied instead, contents kept. */
START_TEST(remap_realloc_copies)
{
	size_t n = 9 * MiB;
	uint8_t *p = sefer_malloc(n), *q;

	ck_assert_ptr_nonnull(p);
	fill(p, n, 6);
	arm(1u << FAULT_REMAP, 1);
	q = sefer_realloc(p, 3 * n);
	ck_assert_uint_eq(injected(FAULT_REMAP), 1);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(bad_bytes(q, n, 6), 0);
	memset(q + n, 1, 2 * n);
	sefer_free(q);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* The large cache re-places a cached segment for another size by remap: refused, it maps. */
START_TEST(remap_cache_replace)
{
	size_t n = 12 * MiB;
	uint8_t *p = sefer_malloc(n), *q;

	ck_assert_ptr_nonnull(p);
	sefer_free(p);
	arm_at(1u << FAULT_REMAP, 1, FAULT_TIMES_UNLIMITED);
	q = sefer_malloc(3 * n);
	ck_assert_ptr_nonnull(q);
	memset(q, 2, 3 * n);
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE))
		ck_assert_uint_gt(injected(FAULT_REMAP), 0);
	/* and with maps refused too: NULL, ENOMEM */
	sefer_free(q);
	arm_at(1u << FAULT_REMAP | 1u << FAULT_MAP, 1, FAULT_TIMES_UNLIMITED);
	errno = 0;
	ck_assert_ptr_null(sefer_malloc(5 * n));
	ck_assert_int_eq(errno, ENOMEM);
	disarm();
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST
#endif

/*
 * realloc failing half-way, whatever path it takes (remap, regrow, a new segment, a copy):
 * NULL, ENOMEM, and the old block whole and readable, for a large and a small block.
 */
START_TEST(realloc_keeps_old_block)
{
	size_t sizes[][2] = { { 9 * MiB, 40 * MiB }, { 9 * MiB, 1 * MiB + 5 }, { 3000, 48 * MiB } };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i][0], to = sizes[i][1];
		uint8_t *p = sefer_malloc(n);

		ck_assert_ptr_nonnull(p);
		fill(p, n, (unsigned)i);
		arm(1u << FAULT_MAP | 1u << FAULT_REMAP | 1u << FAULT_PROTECT,
		    FAULT_TIMES_UNLIMITED);
		errno = 0;
		ck_assert_ptr_null(sefer_realloc(p, to));
		ck_assert_int_eq(errno, ENOMEM);
		ck_assert_uint_gt(injected(FAULT_MAP) + injected(FAULT_REMAP) + injected(FAULT_PROTECT), 0);
		disarm();
		ck_assert_uint_eq(bad_bytes(p, n, (unsigned)i), 0);
		ck_assert_uint_ge(sefer_usable_size(p), n);
		sefer_free(p);
	}
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* calloc's prefault skipped: the block still reads as zero and takes writes. */
START_TEST(populate_skipped)
{
	size_t n = 6 * MiB;
	uint8_t *p;
	size_t nonzero = 0;

	arm(1u << FAULT_POPULATE, FAULT_TIMES_UNLIMITED);
	p = sefer_calloc(1, n);
	ck_assert_ptr_nonnull(p);
	if (IS_ENABLED(CONFIG_BACKEND_LINUX) && CONFIG_CALLOC_PREFAULT_KB > 0)
		ck_assert_uint_gt(injected(FAULT_POPULATE), 0);
	for (size_t i = 0; i < n; i++)
		nonzero += p[i] != 0;
	ck_assert_uint_eq(nonzero, 0);
	memset(p, 3, n);
	sefer_free(p);
	disarm();
}
END_TEST

/*
 * Every 3rd map fails, at most twice: the kernel's interval and times. Nine large mallocs
 * make at least one map each (a configuration may add one, such as a heap struct's): exactly
 * two faults are injected, on map calls 3 and 6, and a malloc returns NULL exactly when a
 * fault met one of its maps.
 */
START_TEST(interval_and_times)
{
	void *p[9];
	int nulls = 0;

	sefer_collect(true);
	arm_at(1u << FAULT_MAP, 3, 2);
	for (int i = 0; i < 9; i++) {
		uint64_t before = injected(FAULT_MAP), first = calls(FAULT_MAP) + 1;
		bool hit;

		p[i] = sefer_malloc(20 * MiB + (size_t)i * 4096);
		hit = injected(FAULT_MAP) != before;
		nulls += !p[i];
		ck_assert_msg(!p[i] == hit, "call %d: %p, fault %s", i, p[i], hit ? "met" : "not met");
		/* the map calls this malloc made: first .. calls(); a fault only on the 3rd, 6th */
		for (uint64_t c = first; c <= calls(FAULT_MAP) && hit; c++)
			hit = c != 3 && c != 6;
		ck_assert_msg(!hit, "call %d: a fault outside map calls 3 and 6 (calls %llu..%llu)", i,
			      (unsigned long long)first, (unsigned long long)calls(FAULT_MAP));
	}
	ck_assert_int_eq(nulls, 2);
	ck_assert_uint_eq(injected(FAULT_MAP), 2);
	ck_assert_uint_ge(calls(FAULT_MAP), 9);
	for (int i = 0; i < 9; i++)
		sefer_free(p[i]);
	disarm();
}
END_TEST

/* The child of env_options: eight large mallocs, then what it saw on stderr. */
int fault_child(const char *mode)
{
	int nulls = 0;

	if (strcmp(mode, "fault-env"))
		return -1;
	for (int i = 0; i < 8; i++) {
		void *p = sefer_malloc(20 * MiB + (size_t)i * 4096);

		nulls += !p;
		sefer_free(p);
	}
	fprintf(stderr, "nulls=%d injected=%llu\n", nulls,
		(unsigned long long)sefer__fault_injected(FAULT_MAP));
	return 0;
}

/* SEFER_FAIL_* from the environment: exactly one map fails (TIMES=1), the second (INTERVAL=2),
 * reported as it happens and at exit (VERBOSE=1); with PROBABILITY=0 none. */
START_TEST(env_options)
{
	const char *env[] = { "SEFER_FAIL_OPS=map,purge", "SEFER_FAIL_INTERVAL=2",
			      "SEFER_FAIL_TIMES=1", "SEFER_VERBOSE=1", NULL };
	const char *off[] = { "SEFER_FAIL_OPS=map", "SEFER_FAIL_PROBABILITY=0", NULL };
	char out[8192];
	int st = run_child("fault-env", env, out, sizeof(out));

	/* the second map of the process fails, which may be the child's first large block or,
	 * by configuration, a small segment of an earlier allocation */
	ck_assert_msg(st == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, " injected=1\n") && !strstr(out, "nulls=2"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: fault injection: map of "), "%s", out);
	ck_assert_msg(strstr(out, " failed (call 2)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: fault injection: calls failed: map 1 of "), "%s", out);
	st = run_child("fault-env", off, out, sizeof(out));
	ck_assert_msg(st == 0 && strstr(out, "nulls=0 injected=0"), "status %d: %s", st, out);
}
END_TEST
#else
int fault_child(const char *mode)
{
	(void)mode;
	return -1;
}
#endif /* CONFIG_FAULT_INJECTION */

Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 60);
#if IS_ENABLED(CONFIG_FAULT_INJECTION)
	tcase_add_test(tc, map_large_block);
#if IS_ENABLED(CONFIG_HEAPS)
	tcase_add_test(tc, map_small_segment);
#endif
#if IS_ENABLED(CONFIG_HEAPS) && IS_ENABLED(CONFIG_STATS)
	tcase_add_test(tc, map_heap_struct_at_thread_start);
#endif
#if IS_ENABLED(CONFIG_DECOMMIT)
	tcase_add_test(tc, purge_refused);
#endif
#if IS_ENABLED(CONFIG_GUARD_PAGES)
#if IS_ENABLED(CONFIG_HEAPS)
	tcase_add_test(tc, protect_small_segment);
#endif
	tcase_add_test(tc, protect_large_block);
	tcase_add_test(tc, protect_replace);
#endif
#if !IS_ENABLED(CONFIG_GUARD_PAGES) && defined(__linux__)
	tcase_add_test(tc, remap_realloc_copies);
	tcase_add_test(tc, remap_cache_replace);
#endif
	tcase_add_test(tc, realloc_keeps_old_block);
	tcase_add_test(tc, populate_skipped);
	tcase_add_test(tc, interval_and_times);
	tcase_add_test(tc, env_options);
#endif
	suite_add_tcase(s, tc);
	return s;
}
