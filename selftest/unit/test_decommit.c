// SPDX-License-Identifier: MIT
/*
 * Decommit (CONFIG_DECOMMIT): RSS follows the live set.
 *
 *  - 1 GiB in small blocks over two threads, all freed, half of each thread's blocks by the
 *    other thread; the threads exit; after the purge delay RSS (/proc/self/statm) is back
 *    within a few MiB of where it started.
 *  - producer/consumer: one thread allocates, another frees, far more bytes than RSS may grow.
 *  - a thread that freed a phase's blocks and goes on running in the pages it kept (malloc and
 *    free of a few blocks, no new span): RSS comes back all the same (heap_heartbeat).
 *
 * Under a sanitizer the sizes shrink and RSS is not checked (shadow memory dominates). With
 * CONFIG_DECOMMIT off the same runs must still be correct; RSS is not checked either.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/heap.h"
#include "core/options.h"
#include "sefer/os.h"
#include "selftest/decommit/workload.h"
#include "unit.h"

#define MiB ((size_t)1 << 20)
#define TOTAL (SANITIZED ? 64 * MiB : 1024 * MiB)
#define CHECK_RSS (IS_ENABLED(CONFIG_DECOMMIT) && !SANITIZED)
#define SLACK (6 * MiB)

struct half {
	void **blk;
	size_t n;
};

static struct half halves[2];
static pthread_barrier_t barrier;

/* Pointer arrays come from mmap so they do not count in the allocator's RSS story. */
static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static void *churn_thread(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct half *mine = &halves[me], *other = &halves[!me];
	size_t bytes = 0, n = 0;

	while (bytes < TOTAL / 2) {
		size_t sz = decommit_block_size(n);
		unsigned char *p = sefer_malloc(sz);

		ck_assert_ptr_nonnull(p);
		p[0] = (unsigned char)n;
		p[sz - 1] = (unsigned char)me;
		mine->blk[n++] = p;
		bytes += sz;
	}
	mine->n = n;
	pthread_barrier_wait(&barrier);
	/* the first half of my blocks, and the second half of the other thread's */
	for (size_t i = 0; i < mine->n / 2; i++)
		sefer_free(mine->blk[i]);
	pthread_barrier_wait(&barrier);
	for (size_t i = other->n / 2; i < other->n; i++)
		sefer_free(other->blk[i]);
	pthread_barrier_wait(&barrier);
	return NULL;
}

START_TEST(decommit_rss_returns)
{
	size_t cap = TOTAL / 32 + 1024, start, peak = 0, end;
	pthread_t t[2];

	sefer_collect(true);
	start = rss_bytes();
	for (int i = 0; i < 2; i++)
		halves[i].blk = map(cap * sizeof(void *));
	pthread_barrier_init(&barrier, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn_thread, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < 2; i++)
		munmap(halves[i].blk, cap * sizeof(void *));
	peak = rss_bytes();
	decommit_sleep_ms((long)sefer__opt.purge_delay_ms + 20);
	end = rss_bytes();
	if (CHECK_RSS)
		ck_assert_msg(
			end <= start + SLACK,
			"RSS %zu KiB at start, %zu KiB after the threads exited, %zu KiB after "
			"the purge delay (more than %zu KiB above the start)",
			start >> 10, peak >> 10, end >> 10, SLACK >> 10);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

static struct decommit_pipe pipe_q = { .alloc = sefer_malloc, .release = sefer_free };

START_TEST(decommit_prodcons_bounded)
{
	size_t total = (SANITIZED ? 256 : 2048) * MiB / 512; /* blocks: 2 GiB through the ring */
	size_t start, peak = 0;
	pthread_t p, c;

	sefer_collect(true);
	start = rss_bytes();
	pipe_q.total = total;
	pthread_create(&p, NULL, decommit_producer, &pipe_q);
	pthread_create(&c, NULL, decommit_consumer, &pipe_q);
	while (atomic_load(&pipe_q.tail) < total) {
		size_t now = rss_bytes();

		peak = now > peak ? now : peak;
		decommit_sleep_ms(2);
	}
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	/* 4096 blocks in flight are ~2 MiB: the rest is pages waiting for their frees */
	if (CHECK_RSS)
		ck_assert_msg(peak <= start + 4 * SLACK, "RSS grew from %zu KiB to %zu KiB",
			      start >> 10, peak >> 10);
}
END_TEST

/*
 * A thread frees everything it allocated and goes on with a few blocks of a class it used,
 * whose page empties and fills again: it takes no span, so only the owner's other slow paths
 * can purge what it freed (core/heap.h, heap_heartbeat). Before those did, a second of it kept
 * all of it resident.
 */
#define RUNNING_TOTAL (SANITIZED ? 16 * MiB : 64 * MiB)

struct running_case {
	size_t start, freed, end;
	bool check; /* RSS drops at a purge (MADV_DONTNEED; MADV_FREE leaves it to the kernel) */
};

static void *running_thread(void *arg)
{
	struct running_case *c = arg;
	size_t cap = RUNNING_TOTAL / 48, n = 0;
	void **blk = map(cap * sizeof(void *)), *few[64];
	uint64_t until;

	for (size_t bytes = 0; bytes + 48 <= RUNNING_TOTAL && n < cap; bytes += 48) {
		unsigned char *p = sefer_malloc(48);

		ck_assert_ptr_nonnull(p);
		p[0] = p[47] = 1;
		blk[n++] = p;
	}
	for (size_t i = 0; i < n; i++)
		sefer_free(blk[i]);
	munmap(blk, cap * sizeof(void *));
	c->freed = rss_bytes();
	/* a few delays: a late pass defers once (core/purge.c, "resuming") */
	until = sefer__os.clock_ms() + 4 * sefer__opt.purge_delay_ms + 100;
	do {
		for (unsigned k = 0; k < 256; k++) {
			for (int i = 0; i < 64; i++) {
				few[i] = sefer_malloc(40); /* the 48-byte class: its first page */
				ck_assert_ptr_nonnull(few[i]);
			}
			for (int i = 0; i < 64; i++)
				sefer_free(few[i]);
		}
		c->end = rss_bytes();
	} while (c->check && c->end > c->start + SLACK && sefer__os.clock_ms() < until);
	return NULL;
}

START_TEST(decommit_running_thread_returns)
{
	struct running_case c = { 0 };
	pthread_t t;

	if (!sefer__opt.purge_delay_ms || sefer__opt.purge_delay_ms > 1000 ||
	    policy_keeps_small_blocks())
		return; /* purged at once, or never; or a magazine serves the run (no slow path) */
	sefer_collect(true);
	c.start = rss_bytes();
	c.check = CHECK_RSS && IS_ENABLED(CONFIG_PURGE_DONTNEED);
	pthread_create(&t, NULL, running_thread, &c);
	pthread_join(t, NULL);
	if (c.check)
		ck_assert_msg(c.end <= c.start + SLACK,
			      "RSS %zu KiB at start, %zu KiB after the frees, %zu KiB after up to "
			      "four purge delays of malloc and free in the pages kept (more than "
			      "%zu KiB above the start)",
			      c.start >> 10, c.freed >> 10, c.end >> 10, SLACK >> 10);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

Suite *decommit_suite(void)
{
	Suite *s = suite_create("decommit");
	TCase *tc = tcase_create("rss");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, decommit_rss_returns);
	tcase_add_test(tc, decommit_prodcons_bounded);
	tcase_add_test(tc, decommit_running_thread_returns);
	suite_add_tcase(s, tc);
	return s;
}
