// SPDX-License-Identifier: MIT
/* Threads: cross-thread free reuse, exit while others free, adoption, stats, lock waits. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/block.h"
#include "core/config.h"
#include "core/heap.h"
#include "core/lock.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer/os.h"
#include "unit.h"

#define RING 4096

/* A single-producer single-consumer ring of pointers. */
struct ring {
	void *_Atomic slot[RING];
	atomic_long stop;
	atomic_long bad; /* blocks whose content changed in flight */
};

static void *consumer(void *arg)
{
	struct ring *r = arg;
	size_t i = 0;

	for (;;) {
		void *p = atomic_exchange(&r->slot[i % RING], NULL);

		if (p) {
			/* counted, not ck_assert'ed: Check records every assertion (slow, and
			 * under ASan its allocations sit in the quarantine and inflate RSS) */
			if (((uint8_t *)p)[0] != 0x5a)
				atomic_fetch_add(&r->bad, 1);
			sefer_free(p);
			i++;
		} else if (atomic_load(&r->stop)) {
			if (!atomic_load(&r->slot[i % RING]))
				break;
		}
	}
	return NULL;
}

START_TEST(producer_consumer_bounded)
{
	/* One thread allocates, another frees: cross-thread frees must be reused, so the
	 * heap stays bounded no matter how many blocks pass through. */
	static struct ring r;
	pthread_t t;
	struct sefer_stats st0, st1;

	size_t rss0 = rss_bytes();

	memset(&r, 0, sizeof(r));
	pthread_create(&t, NULL, consumer, &r);
	sefer_stats_get(&st0, sizeof(st0));
	for (size_t i = 0; i < 4000000; i++) {
		uint8_t *p = sefer_malloc(16 + (i % 8) * 48);

		p[0] = 0x5a;
		while (atomic_load(&r.slot[i % RING]))
			;
		atomic_store(&r.slot[i % RING], p);
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(atomic_load(&r.bad), 0);
	sefer_stats_get(&st1, sizeof(st1));
	/* 4M blocks of up to 400 B (~1 GB in total) passed through; at most RING live at once. */
	ck_assert_msg(rss_bytes() < rss0 + ((size_t)32 << 20), "RSS grew from %zu to %zu", rss0,
		      rss_bytes());
	if (IS_ENABLED(CONFIG_STATS)) {
		ck_assert_msg(st1.segments_peak - st0.segments_peak <= 4,
			      "heap grew by %llu segments",
			      (unsigned long long)(st1.segments_peak - st0.segments_peak));
		ck_assert_uint_ge(st1.xthread_frees - st0.xthread_frees, 3000000);
	}
}
END_TEST

#define NT 4
static void *_Atomic handoff[NT][1000];

static void *alloc_and_exit(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int i = 0; i < 1000; i++) {
		uint8_t *p = sefer_malloc((size_t)(i % 50) * 20 + 8);

		memset(p, id, 8);
		atomic_store(&handoff[id][i], p);
	}
	return NULL; /* exits with every block still live: its segments are abandoned */
}

/*
 * Threads exit holding live blocks that the main thread then frees. With parking off (and no
 * heap parked by an earlier test when the runner does not fork) their segments are abandoned,
 * and the next rounds reclaim them; the parked case is test_generations.c's.
 */
START_TEST(exit_while_others_free)
{
	pthread_t t[NT];
	struct sefer_stats st0, st;
	uint64_t parked_heaps = sefer__opt.parked_heaps;

	sefer__opt.parked_heaps = 0;
	sefer__parked_dismantle();
	sefer_stats_get(&st0, sizeof(st0));
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < NT; i++)
			pthread_create(&t[i], NULL, alloc_and_exit, (void *)(intptr_t)i);
		for (int i = 0; i < NT; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < NT; i++)
			for (int j = 0; j < 1000; j++) {
				uint8_t *p = atomic_exchange(&handoff[i][j], NULL);

				ck_assert_uint_eq(p[0], (uint8_t)i);
				sefer_free(p); /* abandoned: a cross-thread free, reclaimed later */
			}
	}
	sefer_stats_get(&st, sizeof(st));
	sefer__opt.parked_heaps = parked_heaps;
	if (IS_ENABLED(CONFIG_STATS))
		ck_assert_uint_gt(st.reclaimed, st0.reclaimed);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++)
		sefer_free(sefer_malloc((size_t)i % 1000));
	return NULL;
}

START_TEST(many_short_threads)
{
	/* Heaps of exited threads are pooled: 500 threads do not mean 500 heaps. */
	struct sefer_stats st0, st1;

	sefer_stats_get(&st0, sizeof(st0));
	for (int i = 0; i < 250; i++) {
		pthread_t a, b;

		pthread_create(&a, NULL, churn, NULL);
		pthread_create(&b, NULL, churn, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	}
	sefer_stats_get(&st1, sizeof(st1));
	if (IS_ENABLED(CONFIG_STATS)) {
		ck_assert_uint_le(st1.threads - st0.threads, 4);
		ck_assert_uint_le(st1.segments, st0.segments + 4);
	}
}
END_TEST

/*
 * No false sharing by the allocator: a block one thread holds never shares a cache line
 * (CACHELINE bytes) with a block another thread holds at the same time, even after the other
 * thread freed this thread's neighbours (the passive case: a free that kept the block in the
 * freeing thread would hand it back there). Each thread allocates from its own heap's pages,
 * and a cross-thread free returns the block to its owner's page (core/free.c).
 */
#define FS_N 256
#define FS_SIZES 5
static const size_t fs_size[FS_SIZES] = { 1, 8, 24, 40, 200 };
static uint8_t *fs_main[FS_SIZES][FS_N];
#define FS_MAX_LINES (FS_SIZES * FS_N * 5) /* a block of 200 B covers at most 5 lines */
static uintptr_t fs_lines[FS_MAX_LINES];
static atomic_int fs_stage;

static void *fs_other(void *arg)
{
	uint8_t *(*mine)[FS_N] = arg;

	/* free the main thread's odd blocks, the neighbours of those it keeps */
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 1; i < FS_N; i += 2)
			sefer_free(fs_main[k][i]);
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++)
			mine[k][i] = sefer_malloc(fs_size[k]);
	atomic_store(&fs_stage, 1);
	while (atomic_load(&fs_stage) != 2) /* hold them while the main thread compares */
		sched_yield();
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++)
			sefer_free(mine[k][i]);
	return NULL;
}

START_TEST(no_line_shared_between_threads)
{
	static uint8_t *other[FS_SIZES][FS_N];
	size_t nlines = 0, shared = 0;
	pthread_t t;

	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++)
			fs_main[k][i] = sefer_malloc(fs_size[k]);
	atomic_store(&fs_stage, 0);
	pthread_create(&t, NULL, fs_other, other);
	while (atomic_load(&fs_stage) != 1)
		sched_yield();
	/* the main thread's blocks now: the even ones it kept, and as many new ones */
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 1; i < FS_N; i += 2)
			fs_main[k][i] = sefer_malloc(fs_size[k]);
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++) {
			uintptr_t a = (uintptr_t)fs_main[k][i];

			for (uintptr_t l = a / CACHELINE; l <= (a + fs_size[k] - 1) / CACHELINE;
			     l++) {
				ck_assert_uint_lt(nlines, FS_MAX_LINES);
				fs_lines[nlines++] = l;
			}
		}
	qsort(fs_lines, nlines, sizeof(fs_lines[0]), cmp_addr);
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++) {
			uintptr_t a = (uintptr_t)other[k][i];

			for (uintptr_t l = a / CACHELINE; l <= (a + fs_size[k] - 1) / CACHELINE;
			     l++)
				shared += bsearch(&l, fs_lines, nlines, sizeof(fs_lines[0]),
						  cmp_addr) != NULL;
		}
	atomic_store(&fs_stage, 2);
	pthread_join(t, NULL);
	ck_assert_msg(shared == 0, "%zu cache lines hold blocks of both threads", shared);
	for (int k = 0; k < FS_SIZES; k++)
		for (int i = 0; i < FS_N; i++)
			sefer_free(fs_main[k][i]);
}
END_TEST

/*
 * A spinlock waiter gives its CPU away once it has spun a while (core/lock.h): while the holder
 * keeps the lock (here it sleeps, as a preempted holder would not run), the waiter yields, and
 * the stats count it. Needs CONFIG_STATS and a backend with a yield op.
 */
static struct spinlock held_lock = SPINLOCK_INIT(LOCK_RANK_HEAP_POOL);
static atomic_int waiter_done;

static void *lock_waiter(void *arg)
{
	(void)arg;
	spin_lock(&held_lock);
	spin_unlock(&held_lock);
	atomic_store(&waiter_done, 1);
	return NULL;
}

START_TEST(spin_waiter_yields)
{
	unsigned long long before = (unsigned long long)atomic_load(&sefer__gstats.lock_yields),
			   after;
	struct timespec ms = { 0, 1000000 };
	pthread_t t;
	int waited = 0, done_while_held;

	spin_lock(&held_lock);
	pthread_create(&t, NULL, lock_waiter, NULL);
	/* hold it until the waiter has yielded; after 10 s the assertions below fail */
	while ((unsigned long long)atomic_load(&sefer__gstats.lock_yields) == before &&
	       waited++ < 10000)
		nanosleep(&ms, NULL);
	after = (unsigned long long)atomic_load(&sefer__gstats.lock_yields);
	done_while_held = atomic_load(&waiter_done);
	spin_unlock(&held_lock);
	pthread_join(t, NULL);
	ck_assert_int_eq(done_while_held, 0);
	ck_assert_uint_gt(after, before);
	ck_assert_int_eq(atomic_load(&waiter_done), 1);
}
END_TEST

/*
 * Remote frees (core/remote.h): a thread that frees another thread's blocks batches them per
 * page and publishes a batch with one CAS. The owner gets every block back: what a live
 * thread still holds is bounded, and nothing is held once it publishes (sefer_collect) or
 * exits. Measured on the blocks' own pages (the owner's counts, after it collects), not the
 * process's in-use total, which thread creation and the test harness move.
 */
#define REMOTE_N 3000

/* What the freer does after go, before it posts freed again (REMOTE_EXIT: exits at once). */
enum remote_then { REMOTE_EXIT, REMOTE_COLLECT, REMOTE_LARGE };

static struct remote_job {
	void **p;
	size_t n;
	sem_t start, freed, go;
	enum remote_then then;
} job;

static void *remote_anchor[REMOTE_N]; /* each page's first block, kept live */
static size_t remote_anchors;

/* After a run's last look at its pages: they may be retired now. */
static void remote_free_anchors(void)
{
	while (remote_anchors)
		sefer_free(remote_anchor[--remote_anchors]);
}

static void *remote_freer(void *arg)
{
	(void)arg;
	sem_wait(&job.start);
	for (size_t i = 0; i < job.n; i++)
		sefer_free(job.p[i]);
	sem_post(&job.freed);
	sem_wait(&job.go); /* blocked, holding its open batches */
	if (job.then != REMOTE_EXIT) {
		if (job.then == REMOTE_COLLECT) {
			sefer_collect(false);
		} else { /* a large block, twice: a miss, then the cache's hit */
			for (int i = 0; i < 2; i++)
				sefer_free(sefer_malloc((size_t)1 << 20));
		}
		sem_post(&job.freed);
		sem_wait(&job.go);
	}
	return NULL;
}

/* 16 classes of 16..976 bytes, a run of 8 blocks each: batches open in many slots */
static size_t remote_size(size_t i, bool mixed)
{
	return mixed ? 16 + ((i / 8) % 16) * 64 : 64;
}

/* The bytes the pages of blocks page_used(q[0 .. n) count as handed out, after the owner
 * collects. */
static uint64_t pages_used_bytes(struct page **pages, size_t npages)
{
	uint64_t sum = 0;

	sefer_collect(false);
	for (size_t i = 0; i < npages; i++)
		sum += (uint64_t)page_used(pages[i]) * pages[i]->block_size;
	return sum;
}

/*
 * The owner allocates n blocks, a freer thread frees them and blocks. Returns the bytes it
 * freed; *pages (npages of them) the pages they are on, *used0 those pages' used bytes before.
 */
static uint64_t remote_run(pthread_t *t, size_t n, bool mixed, enum remote_then then,
			   struct page **pages, size_t *npages, uint64_t *used0)
{
	static void *p[REMOTE_N];
	uint64_t bytes = 0;

	job.p = p;
	job.n = 0;
	job.then = then;
	sem_init(&job.start, 0, 0);
	sem_init(&job.freed, 0, 0);
	sem_init(&job.go, 0, 0);
	pthread_create(t, NULL, remote_freer, NULL); /* before: its TLS may be malloc'd */
	*npages = 0;
	remote_anchors = 0;
	for (size_t i = 0; i < n; i++) {
		void *b = sefer_malloc(remote_size(i, mixed));
		struct page *pg;
		size_t k;

		ck_assert_ptr_nonnull(b);
		memset(b, 0x5a, 16);
		pg = page_of(segment_of(b), b);
		for (k = 0; k < *npages && pages[k] != pg; k++)
			;
		if (k == *npages) {
			/* a page's first block stays live (remote_free_anchors): the page is never
			 * retired and its segment never unmapped while the test reads its counts */
			pages[(*npages)++] = pg;
			remote_anchor[remote_anchors++] = b;
			continue;
		}
		p[job.n++] = b;
		bytes += sefer_usable_size(b);
	}
	*used0 = pages_used_bytes(pages, *npages);
	sem_post(&job.start);
	sem_wait(&job.freed);
	return bytes;
}

static void remote_end(pthread_t t)
{
	sem_post(&job.go);
	pthread_join(t, NULL);
	sem_destroy(&job.start);
	sem_destroy(&job.freed);
	sem_destroy(&job.go);
}

/*
 * The owner allocates n blocks, a freer frees them and blocks holding less than
 * REMOTE_HELD_BYTES of them (with few: some); then does `then` (which publishes) and the owner
 * has every block back.
 */
static void remote_publish_check(size_t n, bool mixed, enum remote_then then)
{
	static struct page *pages[REMOTE_N];
	uint64_t used0, freed, held;
	size_t npages;
	pthread_t t;

	freed = remote_run(&t, n, mixed, then, pages, &npages, &used0);
	held = pages_used_bytes(pages, npages) - (used0 - freed);
	ck_assert_msg(held < (uint64_t)REMOTE_HELD_BYTES, "%llu bytes held by a blocked thread",
		      (unsigned long long)held);
	if (freed < (uint64_t)REMOTE_BATCH_BYTES) /* fills no batch: the freer holds them all */
		ck_assert_uint_eq(held, freed);
	sem_post(&job.go); /* publish: sefer_collect, or a large request, in the freer */
	sem_wait(&job.freed);
	ck_assert_uint_eq(pages_used_bytes(pages, npages), used0 - freed);
	remote_end(t);
	remote_free_anchors();
	ck_assert_int_eq(sefer_check_heap(), 0);
}

/* Batched frees reach the owner: all but a bounded rest while the freer lives and blocks (less
 * than REMOTE_HELD_BYTES), all once it publishes. */
START_TEST(remote_batches_reach_owner)
{
	for (int mixed = 0; mixed < 2; mixed++)
		remote_publish_check(REMOTE_N, mixed, REMOTE_COLLECT);
}
END_TEST

/* A thread that exits with open batches publishes them: the owner gets every block back. */
START_TEST(remote_exit_loses_nothing)
{
	static struct page *pages[REMOTE_N];

	for (int mixed = 0; mixed < 2; mixed++) {
		size_t n = mixed ? REMOTE_N : 100; /* batches in many slots; one batch, not full */
		uint64_t used0, freed;
		size_t npages;
		pthread_t t;

		freed = remote_run(&t, n, mixed, REMOTE_EXIT, pages, &npages, &used0);
		if (!mixed) /* 6400 bytes fill no batch: the blocked freer holds them */
			ck_assert_uint_gt(pages_used_bytes(pages, npages), used0 - freed);
		remote_end(t);
		ck_assert_uint_eq(pages_used_bytes(pages, npages), used0 - freed);
		remote_free_anchors();
	}
	ck_assert_int_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A thread that allocates only large blocks after its cross-thread frees (a consumer that then
 * fills large buffers) never takes the small slow path: its large requests publish its
 * batches too.
 */
START_TEST(remote_large_malloc_publishes)
{
	remote_publish_check(100, false, REMOTE_LARGE); /* 6400 bytes of 64 B blocks */
}
END_TEST

/*
 * A thread's first call of each kind runs on the empty heap (core/heap.h), whose direct table
 * holds NULL: malloc's 1-4 KiB path tests the slot, realloc and the aligned calls make the heap
 * before they read a table. Each first call returns a usable block (realloc keeps the foreign
 * block's bytes), realloc(p, 0) frees without one, and sefer_check_heap() finds the calling
 * thread's table as it should be before the first call and after it.
 */
enum first_kind {
	FIRST_MALLOC, FIRST_CALLOC, FIRST_REALLOC_NULL, FIRST_REALLOC_FOREIGN, FIRST_REALLOC_ZERO,
	FIRST_ALIGNED, FIRST_POSIX_MEMALIGN, FIRST_MEMALIGN, FIRST_KINDS
};

struct first_call {
	enum first_kind kind;
	unsigned char *foreign; /* the main thread's block, FOREIGN_LEN bytes of a pattern */
	size_t before, after;	/* sefer_check_heap()'s problems */
	bool ok;
};

#define FIRST_SIZE 3000
#define FOREIGN_LEN 100

static void *first_call_thread(void *arg)
{
	struct first_call *fc = arg;
	unsigned char *p = NULL;
	size_t align = 1;

	fc->before = sefer_check_heap();
	switch (fc->kind) {
	case FIRST_MALLOC:
		p = sefer_malloc(FIRST_SIZE);
		break;
	case FIRST_CALLOC:
		p = sefer_calloc(1, FIRST_SIZE);
		for (size_t i = 0; p && i < FIRST_SIZE; i++)
			if (p[i])
				return NULL; /* fc->ok stays false */
		break;
	case FIRST_REALLOC_NULL:
		p = sefer_realloc(NULL, FIRST_SIZE);
		break;
	case FIRST_REALLOC_FOREIGN:
		p = sefer_realloc(fc->foreign, FIRST_SIZE);
		for (size_t i = 0; p && i < FOREIGN_LEN; i++)
			if (p[i] != (unsigned char)(i * 7 + 1))
				return NULL;
		break;
	case FIRST_REALLOC_ZERO:
		fc->ok = sefer_realloc(fc->foreign, 0) == NULL;
		fc->after = sefer_check_heap();
		return NULL;
	case FIRST_ALIGNED:
		p = sefer_aligned_alloc(align = 256, FIRST_SIZE);
		break;
	case FIRST_POSIX_MEMALIGN:
		if (sefer_posix_memalign((void **)&p, align = 64, FIRST_SIZE))
			p = NULL;
		break;
	case FIRST_MEMALIGN:
		p = sefer_memalign(align = 1024, FIRST_SIZE);
		break;
	case FIRST_KINDS:
		break;
	}
	if (p && !((uintptr_t)p & (align - 1))) {
		memset(p, 0xa5, FIRST_SIZE);
		sefer_free(p);
		fc->ok = true;
	}
	fc->after = sefer_check_heap();
	return NULL;
}

START_TEST(first_call_of_each_kind)
{
	for (int k = 0; k < FIRST_KINDS; k++) {
		struct first_call fc = { .kind = (enum first_kind)k };
		pthread_t t;

		fc.foreign = sefer_malloc(FOREIGN_LEN);
		ck_assert_ptr_nonnull(fc.foreign);
		for (size_t i = 0; i < FOREIGN_LEN; i++)
			fc.foreign[i] = (unsigned char)(i * 7 + 1);
		ck_assert_int_eq(pthread_create(&t, NULL, first_call_thread, &fc), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_msg(fc.ok, "first call of kind %d in a new thread failed", k);
		ck_assert_uint_eq(fc.before, 0);
		ck_assert_uint_eq(fc.after, 0);
		if (k != FIRST_REALLOC_FOREIGN && k != FIRST_REALLOC_ZERO)
			sefer_free(fc.foreign);
	}
}
END_TEST

Suite *threads_suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("xthread");

	tcase_add_test(tc, producer_consumer_bounded);
	tcase_add_test(tc, exit_while_others_free);
	tcase_add_test(tc, many_short_threads);
	tcase_add_test(tc, no_line_shared_between_threads);
	tcase_add_test(tc, first_call_of_each_kind);
	if (IS_ENABLED(CONFIG_STATS) && (sefer__os.features & SEFER_OS_YIELD))
		tcase_add_test(tc, spin_waiter_yields);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("remote");
	tcase_add_test(tc, remote_batches_reach_owner);
	tcase_add_test(tc, remote_exit_loses_nothing);
	tcase_add_test(tc, remote_large_malloc_publishes);
	suite_add_tcase(s, tc);
	return s;
}
