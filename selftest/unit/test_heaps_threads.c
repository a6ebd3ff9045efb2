// SPDX-License-Identifier: MIT
/*
 * First-class heaps across threads (core/heaps.c, Documentation/heaps.rst): a destroyed heap's
 * segments leave the owner's owned-segment cache, destroy with cross-thread frees pending,
 * visit while other threads free, bounded memory over many rounds, owner exit (the heap is
 * orphaned, its blocks stay valid), many heaps per thread, fork, misuse reports. Part of the
 * "heaps" suite (test_heaps.c adds these tests). Empty with CONFIG_HEAPS=n.
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
#include "heaps.h"

#if IS_ENABLED(CONFIG_HEAPS)

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
	sefer_stats_get(&st0, sizeof(st0));
	for (size_t i = 0; i < RECYCLE; i++)
		sefer_free(recycled[i]);
	sefer_stats_get(&st1, sizeof(st1));
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_eq(st1.xthread_frees - st0.xthread_frees, RECYCLE);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	/* only meaningful when the thread got h's old segments (it does, from the spares, in a
	 * process of its own): say so when it did not */
	if (!shared)
		fprintf(stderr,
			"destroy_forgets_cached_segments: no segment reused, nothing shown\n");
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

	sefer_stats_get(&st0, sizeof(st0));
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
	sefer_stats_get(&st1, sizeof(st1));
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
	atomic_int started; /* the owner has visited once: the frees may begin */
	atomic_int done;
};

static void *free_slowly(void *arg)
{
	struct slow_free *f = arg;

	while (!atomic_load(&f->started))
		sched_yield();
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
	struct slow_free f = { p, N, 0, 0 };
	unsigned long sum = 0;
	int visits = 0;
	pthread_t t;

	for (size_t i = 0; i < N; i++) {
		p[i] = sefer_heap_malloc(h,
					 i % 40 == 0 ? LARGE + (i % 3) * 4096 : 16 + (i % 64) * 8);
		memset(p[i], 1, 16);
	}
	pthread_create(&t, NULL, free_slowly, &f);
	/* the frees start after the first visit, which so sees live blocks however the
	 * threads are scheduled (a loaded machine ran all 4000 frees before it, sum == 0) */
	while (!atomic_load(&f.done) || visits < 3) {
		sefer_heap_visit(h, touch, &sum);
		if (!visits++)
			atomic_store(&f.started, 1);
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

	sefer_stats_get(&st, sizeof(st));
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
		sefer_stats_get(&st, sizeof(st));
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
		enum on_error was = sefer__opt.on_error;

		sefer__opt.on_error = ON_ERROR_WARN;
		errno = 0;
		ck_assert_ptr_null(sefer_heap_malloc(o.h, 10));
		ck_assert_int_eq(errno, EPERM);
		sefer__opt.on_error = was;
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
		sefer_heap_visit(h, seen_record, &s);
		qsort(want, 3, sizeof(*want), cmp_addr);
		qsort(s.p, s.n, sizeof(*s.p), cmp_addr);
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
	enum on_error was = sefer__opt.on_error;
	char out[2048];
	int saved;
	FILE *f;
	pthread_t t;
	void *r = (void *)1, *arg = h;

	ck_assert_ptr_nonnull(sefer_heap_malloc(h, 8));
	sefer__opt.on_error = ON_ERROR_WARN;
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
	sefer__opt.on_error = was;
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

void heaps_add_thread_tests(TCase *tc)
{
	tcase_add_test(tc, visit_while_others_free);
	tcase_add_test(tc, destroy_forgets_cached_segments);
	tcase_add_test(tc, xthread_frees_then_destroy);
	tcase_add_test(tc, destroy_with_pending_xthread_frees);
	tcase_add_test(tc, bounded_over_rounds);
	tcase_add_test(tc, owner_exit_orphans);
	tcase_add_test(tc, many_heaps);
	tcase_add_test(tc, fork_child_uses_heap);
	tcase_add_test(tc, misuse_reported);
}

#endif
