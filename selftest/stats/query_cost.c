// SPDX-License-Identifier: MIT
/*
 * The cost of a stats query on a busy process (check-stats.sh prints it; sefer(3) quotes it):
 * THREADS threads each keep a live set of small blocks and churn it (malloc/free) while the
 * main thread times sefer_stats_get() and sefer_heap_stats(NULL) over QUERIES calls; then
 * again with the threads idle (their live sets kept), the walk without the owners' writes.
 * Usage: query-cost [threads] [blocks per thread]. Prints the segments walked and the times.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sefer.h"

#define QUERIES 200

static atomic_int stop, ready, pause_churn;
static size_t nblocks = 20000;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *worker(void *arg)
{
	void **p = sefer_malloc(nblocks * sizeof(void *));
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (size_t i = 0; i < nblocks; i++)
		p[i] = sefer_malloc(16 + (i % 64) * 16);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&stop)) {
		if (atomic_load(&pause_churn)) {
			sched_yield();
			continue;
		}
		size_t i = (size_t)rand_r(&seed) % nblocks;

		sefer_free(p[i]);
		p[i] = sefer_malloc(16 + (i % 64) * 16);
	}
	for (size_t i = 0; i < nblocks; i++)
		sefer_free(p[i]);
	sefer_free(p);
	return NULL;
}

static void query_all(void *st)
{
	sefer_stats_get(st, sizeof(struct sefer_stats));
}

static void query_own(void *st)
{
	sefer_heap_stats(NULL, st, sizeof(struct sefer_heap_stats));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Microseconds per call: the median of BATCHES batches of QUERIES / BATCHES calls. On a
 * machine with fewer cores than threads the query thread is preempted now and then; the
 * median leaves those batches out.
 */
#define BATCHES 20
static double per_call(void (*q)(void *), void *st)
{
	double b[BATCHES];

	for (int i = 0; i < BATCHES; i++) {
		double t0 = now_us();

		for (int j = 0; j < QUERIES / BATCHES; j++)
			q(st);
		b[i] = (now_us() - t0) / (QUERIES / BATCHES);
	}
	qsort(b, BATCHES, sizeof(b[0]), cmp_double);
	return b[BATCHES / 2];
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 64;
	pthread_t *t;
	struct sefer_stats st;
	struct sefer_heap_stats hs;
	double all, one, idle;

	if (argc > 2)
		nblocks = (size_t)atol(argv[2]);
	t = calloc((size_t)threads, sizeof(*t));
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	while (atomic_load(&ready) < threads)
		;
	all = per_call(query_all, &st);
	one = per_call(query_own, &hs);
	atomic_store(&pause_churn, 1);
	idle = per_call(query_all, &st);
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("query-cost: %d threads churning, %llu segments, %llu blocks in use: "
	       "sefer_stats_get %.1f us, sefer_heap_stats %.1f us per call (medians); threads "
	       "idle: "
	       "sefer_stats_get %.1f us\n",
	       threads, (unsigned long long)st.segments, (unsigned long long)st.in_use_blocks, all,
	       one, idle);
	free(t);
	/* a snapshot of churning heaps: within a tenth of the live set */
	return all > 0 && st.in_use_blocks * 10 >= (unsigned long long)threads * nblocks * 9 ? 0
											     : 1;
}
