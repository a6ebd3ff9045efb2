// SPDX-License-Identifier: MIT
/*
 * Windows-only tests: the win32 backend's ops called directly (aligned reservation, NUMA
 * reservation, purge, environment, files, thread-exit through FLS), threads
 * made with CreateThread, and the error reports of invalid and double frees and reallocs, each
 * in a child process (the children are bad_frees.c's, shared with the POSIX runners; this is
 * the Windows counterpart of selftest/unit/test_process.c, which needs fork).
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "sefer/os.h"
#include "bad_frees.h"
#include "unit.h"

Suite *win32_suite(void);

static char out[8192];

static DWORD WINAPI free_it(void *p)
{
	sefer_free(p);
	return 0;
}

static void run_thread(LPTHREAD_START_ROUTINE fn, void *arg)
{
	HANDLE h = CreateThread(NULL, 0, fn, arg, 0, NULL);

	WaitForSingleObject(h, INFINITE);
	CloseHandle(h);
}

/* Free p on a new thread, joined (bad_free_child()'s cross-thread cases). */
static void free_on_thread(void *p)
{
	run_thread(free_it, p);
}

int child_main(const char *mode)
{
	int rc = bad_free_child(mode, free_on_thread);

	if (rc >= 0)
		return rc;
	if (!strcmp(mode, "bad-env")) {
		sefer_free(sefer_malloc(10));
		return 0;
	}
	return 99;
}

/* abort() in the Microsoft C runtime ends the process with exit code 3. */
#define ABORT_CODE 3

static void expect_report(const char *mode, const char *const *env, const char *what,
			  const char *reason, bool aborts)
{
	int code = run_child(mode, env, out, sizeof(out));
	char want[128];
	const char *a = strstr(out, "addr=");

	ck_assert_msg(a, "child printed no address (exit %d): %s", code, out);
	snprintf(want, sizeof(want), "sefer: %s of %.*s (", what, (int)strcspn(a + 5, "\r\n"),
		 a + 5);
	ck_assert_msg(strstr(out, want), "expected '%s' in: %s", want, out);
	ck_assert_msg(strstr(out, reason), "expected reason '%s' in: %s", reason, out);
	ck_assert_msg(code == (aborts ? ABORT_CODE : 0), "exit code %d: %s", code, out);
}

static const struct bad_free bad_frees[] = { BAD_FREES_COMMON };

static const struct bad_free bad_frees_always[] = { BAD_FREES_ALWAYS };

static void expect_bad_free(const struct bad_free *t)
{
	static const char *const warn_env[] = { "SEFER_ON_ERROR=warn", NULL };

	expect_report(t->mode, t->warn ? warn_env : NULL, t->what, t->reason, !t->warn);
}

START_TEST(bad_free_aborts)
{
	expect_bad_free(&bad_frees[_i]);
}
END_TEST

START_TEST(bad_free_always)
{
	expect_bad_free(&bad_frees_always[_i]);
}
END_TEST

START_TEST(bad_env_named)
{
	static const char *const env[] = {"SEFER_PURGE_DELAY_MS=soon", "SEFER_ON_ERROR=maybe",
					  "SEFER_SHOW_STAT=1", NULL};
	int code = run_child("bad-env", env, out, sizeof(out));

	ck_assert_msg(code == 0, "exit code %d: %s", code, out);
	ck_assert_msg(strstr(out, "unknown option SEFER_SHOW_STAT (did you mean SEFER_SHOW_STATS?)"),
		      "%s", out);
	ck_assert_msg(strstr(out, "bad value 'soon' for SEFER_PURGE_DELAY_MS"), "%s", out);
	ck_assert_msg(strstr(out, "bad value 'maybe' for SEFER_ON_ERROR"), "%s", out);
}
END_TEST

/* ---- the backend's ops, called directly ---- */

START_TEST(os_info)
{
	struct sefer_os_info info;

	sefer__os.init(&info);
	ck_assert_uint_eq(info.page_size, 4096);
	ck_assert_uint_eq(info.alloc_granularity, 65536);
	ck_assert_uint_ge(info.node_count, 1);
	ck_assert(!strcmp(sefer__os.name, "win32"));
	/* the optional ops Windows has: no remap, populate or secure; the slots agree */
	ck_assert_uint_eq(sefer__os.features, SEFER_OS_PROTECT | SEFER_OS_NUMA | SEFER_OS_KEEP_ERR |
						      SEFER_OS_RANDOM | SEFER_OS_YIELD | SEFER_OS_ENV |
						      SEFER_OS_PROCINFO);
	ck_assert(sefer_os_features_agree(&sefer__os));
}
END_TEST

/*
 * procinfo: the figures are the process's own (its pid, its executable's name) and move with
 * what it does: touching 16 MiB raises the working set and its peak by about that much.
 */
START_TEST(os_procinfo)
{
	struct sefer_os_procinfo a, b;
	size_t len = 16u << 20;
	char *p;

	memset(&a, 0, sizeof(a));
	sefer__os.procinfo(&a);
	ck_assert_uint_eq(a.pid, GetCurrentProcessId());
	ck_assert_msg(strstr(a.name, ".exe") && !strchr(a.name, '\\'), "name %s", a.name);
	ck_assert(a.have_rss && a.have_cpu && a.have_elapsed);
	ck_assert_uint_gt(a.rss, 0);
	ck_assert_uint_ge(a.rss_peak, a.rss);
	p = sefer_malloc(len);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, len);
	memset(&b, 0, sizeof(b));
	sefer__os.procinfo(&b);
	ck_assert_msg(b.rss >= a.rss + len / 4 * 3, "working set %llu -> %llu",
		      (unsigned long long)a.rss, (unsigned long long)b.rss);
	ck_assert_uint_ge(b.rss_peak, b.rss);
	ck_assert_uint_ge(b.cpu_user_ms + b.cpu_sys_ms, a.cpu_user_ms + a.cpu_sys_ms);
	sefer_free(p);
}
END_TEST

START_TEST(os_reserve_aligned)
{
	enum { N = 24 };
	void *p[N];
	size_t sizes[] = { 65536, SEGMENT_SIZE, 3 * SEGMENT_SIZE + 65536 };
	size_t aligns[] = { 65536, SEGMENT_SIZE, 4 * SEGMENT_SIZE };

	for (int i = 0; i < N; i++) {
		size_t size = sizes[i % 3], align = aligns[(i / 3) % 3];
		int node = i % 2 ? 0 : SEFER_NO_NODE; /* node 0: VirtualAllocExNuma */

		p[i] = sefer__os.reserve(size, align, node);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_msg((uintptr_t)p[i] % align == 0, "%p not aligned to %zu", p[i], align);
		for (size_t off = 0; off < size; off += 4096)
			ck_assert_uint_eq(((uint8_t *)p[i])[off], 0);
		memset(p[i], 0xab, size);
	}
	for (int i = 0; i < N; i++)
		sefer__os.release(p[i], sizes[i % 3]);
	/* released whole: the address is free again */
	MEMORY_BASIC_INFORMATION mbi;

	ck_assert(VirtualQuery(p[0], &mbi, sizeof(mbi)));
	ck_assert_uint_eq(mbi.State, MEM_FREE);
}
END_TEST

START_TEST(os_purge)
{
	size_t size = SEGMENT_SIZE;
	uint8_t *p = sefer__os.reserve(size, SEGMENT_SIZE, SEFER_NO_NODE);

	ck_assert_ptr_nonnull(p);
	memset(p, 0x5a, size);
	ck_assert(sefer__os.purge(p, size / 2, true)); /* eager: reads as zero */
	for (size_t i = 0; i < size / 2; i += 512)
		ck_assert_uint_eq(p[i], 0);
	ck_assert_uint_eq(p[size / 2], 0x5a);
	ck_assert(!sefer__os.purge(p + size / 2, size / 2, false)); /* lazy: still usable */
	p[size - 1] = 7;
	ck_assert_uint_eq(p[size - 1], 7);
	sefer__os.release(p, size);
}
END_TEST

/* Guard pages (CONFIG_GUARD_PAGES): protect makes a page PAGE_NOACCESS and back. */
START_TEST(os_protect)
{
	size_t size = SEGMENT_SIZE, pg = 4096; /* the page size os_info checks */
	uint8_t *p = sefer__os.reserve(size, SEGMENT_SIZE, SEFER_NO_NODE);
	MEMORY_BASIC_INFORMATION mbi;

	ck_assert_ptr_nonnull(p);
	ck_assert(sefer__os.features & SEFER_OS_PROTECT);
	p[pg] = 3;
	ck_assert(sefer__os.protect(p + pg, pg, true));
	ck_assert(VirtualQuery(p + pg, &mbi, sizeof(mbi)));
	ck_assert_uint_eq(mbi.Protect, PAGE_NOACCESS);
	ck_assert_uint_eq(mbi.RegionSize, pg);
	p[pg - 1] = 1; /* the neighbours stay writable */
	p[2 * pg] = 2;
	ck_assert(sefer__os.protect(p + pg, pg, false));
	ck_assert(VirtualQuery(p + pg, &mbi, sizeof(mbi)));
	ck_assert_uint_eq(mbi.Protect, PAGE_READWRITE);
	p[pg] = 4;
	ck_assert_uint_eq(p[pg], 4);
	sefer__os.release(p, size);
}
END_TEST

START_TEST(os_env_clock_random)
{
	char buf[8];
	uint64_t r[4] = { 0 };
	LARGE_INTEGER freq, q0, q1;
	uint64_t t0, t1, real_ms;

	/*
	 * The clock is checked against the performance counter: it may lag real time by one
	 * scheduler tick (up to about 16 ms, os.h), on Windows and under wine alike, but it must
	 * advance with it. Sleep() may return early under wine, so the wait runs on the counter.
	 */
	QueryPerformanceFrequency(&freq);
	QueryPerformanceCounter(&q0);
	t0 = sefer__os.clock_ms();

	SetEnvironmentVariableA("SEFER_TEST_VAR", "abcdefghij");
	ck_assert(sefer__os.getenv("SEFER_TEST_VAR", buf, sizeof(buf)));
	ck_assert(!strcmp(buf, "abcdefg")); /* truncated to the buffer */
	{
		char entry[32];
		bool found = false;

		for (size_t i = 0; sefer__os.env_entry(i, entry, sizeof(entry)); i++)
			found |= !strcmp(entry, "SEFER_TEST_VAR=abcdefghij");
		ck_assert_msg(found, "env_entry did not walk to SEFER_TEST_VAR");
	}
	SetEnvironmentVariableA("SEFER_TEST_VAR", NULL);
	ck_assert(!sefer__os.getenv("SEFER_TEST_VAR", buf, sizeof(buf)));
	ck_assert(sefer__os.random_bytes(r, sizeof(r)));
	ck_assert(r[0] || r[1] || r[2] || r[3]);
	do {
		Sleep(20);
		QueryPerformanceCounter(&q1);
		real_ms = (uint64_t)(q1.QuadPart - q0.QuadPart) * 1000 / (uint64_t)freq.QuadPart;
	} while (real_ms < 100);
	t1 = sefer__os.clock_ms();
	ck_assert_uint_ge(t1, t0);
	ck_assert_uint_ge(t1 - t0 + 32, real_ms); /* two ticks of lag at most */
	ck_assert_uint_le(t1 - t0, real_ms + 32);
}
END_TEST

START_TEST(os_files)
{
	char dir[MAX_PATH], path[MAX_PATH + 32];
	char buf[64];
	DWORD n = GetTempPathA(sizeof(dir), dir);

	ck_assert(n > 0 && n < sizeof(dir));
	snprintf(path, sizeof(path), "%ssefer-test-%lu.bin", dir,
		 (unsigned long)GetCurrentProcessId());
	DeleteFileA(path);
	ck_assert_int_eq(sefer__os.open_file(path, 0), -ENOENT);
	sefer_file_t f = sefer__os.open_file(path, SEFER_OPEN_CREATE | SEFER_OPEN_EXCL);

	ck_assert_msg(f >= 0, "open: %lld", (long long)f);
	ck_assert_int_eq(sefer__os.open_file(path, SEFER_OPEN_CREATE | SEFER_OPEN_EXCL), -EEXIST);
	ck_assert_int_eq(sefer__os.pwrite(f, "world", 5, 6), 5);
	ck_assert_int_eq(sefer__os.pwrite(f, "hello ", 6, 0), 6);
	ck_assert_int_eq(sefer__os.file_size(f), 11);
	ck_assert_int_eq(sefer__os.pread(f, buf, sizeof(buf), 0), 11);
	ck_assert(!memcmp(buf, "hello world", 11));
	ck_assert_int_eq(sefer__os.pread(f, buf, 5, 6), 5);
	ck_assert(!memcmp(buf, "world", 5));
	ck_assert_int_eq(sefer__os.pread(f, buf, 5, 100), 0); /* past the end */
	ck_assert_int_eq(sefer__os.sync(f), 0);
	ck_assert_int_eq(sefer__os.truncate(f, 5), 0);
	ck_assert_int_eq(sefer__os.file_size(f), 5);
	ck_assert_int_eq(sefer__os.truncate(f, (uint64_t)1 << 20), 0);
	ck_assert_int_eq(sefer__os.file_size(f), 1 << 20);
	ck_assert_int_eq(sefer__os.pwrite(f, "x", 1, ((uint64_t)1 << 32) + 1),
			 1); /* 64-bit offset */
	ck_assert_int_eq(sefer__os.pread(f, buf, 1, ((uint64_t)1 << 32) + 1), 1);
	ck_assert_int_eq(buf[0], 'x');
	ck_assert_int_eq(sefer__os.lock_file(f, false), 0);

	sefer_file_t g = sefer__os.open_file(path, 0);
	sefer_file_t r1, r2;

	ck_assert(g >= 0);
	ck_assert_int_eq(sefer__os.lock_file(g, false), -EWOULDBLOCK);
	ck_assert_int_eq(sefer__os.lock_file(g, true), -EWOULDBLOCK); /* no reader past a writer */
	sefer__os.close_file(f);
	ck_assert_int_eq(sefer__os.lock_file(g, false), 0); /* the lock went with its handle */
	sefer__os.close_file(g);

	/* Readers share: two read-only handles lock at once and read; a writer is refused. */
	r1 = sefer__os.open_file(path, SEFER_OPEN_READ);
	r2 = sefer__os.open_file(path, SEFER_OPEN_READ);
	g = sefer__os.open_file(path, 0);
	ck_assert(r1 >= 0 && r2 >= 0 && g >= 0);
	ck_assert_int_eq(sefer__os.lock_file(r1, true), 0);
	ck_assert_int_eq(sefer__os.lock_file(r2, true), 0);
	ck_assert_int_eq(sefer__os.pread(r2, buf, 1, ((uint64_t)1 << 32) + 1), 1);
	ck_assert_int_eq(buf[0], 'x');
	ck_assert_int_eq(sefer__os.lock_file(g, false), -EWOULDBLOCK);
	sefer__os.close_file(r1);
	ck_assert_int_eq(sefer__os.lock_file(g, false), -EWOULDBLOCK); /* r2 still reads */
	sefer__os.close_file(r2);
	ck_assert_int_eq(sefer__os.lock_file(g, false), 0);
	sefer__os.close_file(g);
	ck_assert(DeleteFileA(path));
}
END_TEST

/* ---- threads made with CreateThread: FLS thread exit pools their heaps ---- */

static atomic_int hook_calls;

static void count_exit(void *arg)
{
	(void)arg;
	atomic_fetch_add(&hook_calls, 1);
}

static DWORD WINAPI hook_thread(void *arg)
{
	(void)arg;
	ck_assert(sefer__os.thread_exit_hook(count_exit, (void *)1));
	return 0;
}

static DWORD WINAPI churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++)
		sefer_free(sefer_malloc((size_t)i % 3000 + 1));
	return 0;
}

START_TEST(thread_exit_via_fls)
{
	struct sefer_stats st0, st1;

	sefer_stats_get(&st0, sizeof(st0));
	for (int i = 0; i < 100; i++)
		run_thread(churn, NULL);
	sefer_stats_get(&st1, sizeof(st1));
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_msg(st1.threads - st0.threads <= 2,
			      "%llu heaps for 100 sequential threads",
			      (unsigned long long)(st1.threads - st0.threads));
	/* the hook itself, with a private callback (the last registration wins process-wide,
	 * so the allocator's own hook is re-registered by the next new heap) */
	atomic_store(&hook_calls, 0);
	run_thread(hook_thread, NULL);
	ck_assert_int_eq(atomic_load(&hook_calls), 1);
}
END_TEST

static void *_Atomic mailbox[4][2000];

static DWORD WINAPI producer(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int i = 0; i < 2000; i++) {
		uint8_t *p = sefer_malloc((size_t)(i % 60) * 16 + 8);

		memset(p, id + 1, 8);
		atomic_store(&mailbox[id][i], p);
	}
	return 0;
}

START_TEST(cross_thread_free_createthread)
{
	HANDLE h[4];

	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 4; i++)
			h[i] = CreateThread(NULL, 0, producer, (void *)(intptr_t)i, 0, NULL);
		WaitForMultipleObjects(4, h, TRUE, INFINITE);
		for (int i = 0; i < 4; i++) {
			CloseHandle(h[i]);
			for (int j = 0; j < 2000; j++) {
				uint8_t *p = atomic_exchange(&mailbox[i][j], NULL);

				ck_assert_uint_eq(p[0], i + 1);
				sefer_free(
					p); /* its heap is gone: abandoned segment, adopted here */
			}
		}
	}
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

START_TEST(fast_path_cost)
{
	/* Not a pass/fail bound: prints what a malloc/free pair costs with mingw's emulated TLS
	 * (every heap_get() is a call to __emutls_get_address), for Documentation. */
	LARGE_INTEGER f, a, b;
	enum { N = 5000000 };
	void *volatile sink;

	QueryPerformanceFrequency(&f);
	QueryPerformanceCounter(&a);
	for (int i = 0; i < N; i++) {
		sink = sefer_malloc(32);
		sefer_free(sink);
	}
	QueryPerformanceCounter(&b);
	printf("  malloc+free(32): %.1f ns per pair\n",
	       (double)(b.QuadPart - a.QuadPart) * 1e9 / (double)f.QuadPart / N);
}
END_TEST

Suite *win32_suite(void)
{
	Suite *s = suite_create("win32");
	TCase *to = tcase_create("os");
	TCase *tt = tcase_create("threads");
	TCase *te = tcase_create("errors");

	tcase_add_test(to, os_info);
	tcase_add_test(to, os_reserve_aligned);
	tcase_add_test(to, os_procinfo);
	tcase_add_test(to, os_purge);
	tcase_add_test(to, os_protect);
	tcase_add_test(to, os_env_clock_random);
	tcase_add_test(to, os_files);
	suite_add_tcase(s, to);
	tcase_add_test(tt, thread_exit_via_fls);
	tcase_add_test(tt, cross_thread_free_createthread);
	tcase_add_test(tt, fast_path_cost);
	suite_add_tcase(s, tt);
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		tcase_add_loop_test(te, bad_free_aborts, 0,
				    (int)(sizeof(bad_frees) / sizeof(bad_frees[0])));
	}
	tcase_add_loop_test(te, bad_free_always, 0,
			    (int)(sizeof(bad_frees_always) / sizeof(bad_frees_always[0])));
	tcase_add_test(te, bad_env_named);
	suite_add_tcase(s, te);
	return s;
}
