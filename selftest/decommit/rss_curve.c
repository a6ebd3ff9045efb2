// SPDX-License-Identifier: MIT
/*
 * rss_curve: the decommit scenario as an ordinary malloc program, to run under any allocator
 * with LD_PRELOAD (Documentation/decommit.rst has the numbers).
 *
 *   phase 1: two threads allocate TOTAL MiB (default 1024) of small blocks (32..992 B),
 *            then free them all, half of each thread's blocks freed by the other thread;
 *            the threads exit. RSS (/proc/self/statm) is printed at each step and then at
 *            +10, +50, +100, +500 and +1000 ms.
 *   phase 2: a producer thread allocates, a consumer thread frees (4096 blocks in flight),
 *            2 GiB through the ring; the peak RSS seen while it runs is printed.
 *
 *   rss_curve [TOTAL_MIB]
 * Output lines: "rss <label> <MiB>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "selftest/decommit/workload.h"

#define MiB ((size_t)1 << 20)

static size_t total_bytes;
static void **blk[2];
static size_t nblk[2];
static pthread_barrier_t barrier;

static double rss_mib(void)
{
	return (double)proc_rss_bytes() / (double)MiB;
}

static void *churn(void *arg)
{
	int me = (int)(intptr_t)arg;
	size_t bytes = 0, n = 0;

	while (bytes < total_bytes / 2) {
		size_t sz = decommit_block_size(n);
		unsigned char *p = malloc(sz);

		if (!p)
			abort();
		p[0] = 1;
		p[sz - 1] = 2;
		blk[me][n++] = p;
		bytes += sz;
	}
	nblk[me] = n;
	pthread_barrier_wait(&barrier);
	if (me == 0)
		printf("rss peak %.1f\n", rss_mib());
	pthread_barrier_wait(&barrier);
	for (size_t i = 0; i < nblk[me] / 2; i++)
		free(blk[me][i]);
	pthread_barrier_wait(&barrier);
	for (size_t i = nblk[!me] / 2; i < nblk[!me]; i++)
		free(blk[!me][i]);
	pthread_barrier_wait(&barrier);
	if (me == 0)
		printf("rss freed %.1f\n", rss_mib());
	return NULL;
}

static struct decommit_pipe pipe_q = { .alloc = malloc, .release = free };

int main(int argc, char **argv)
{
	size_t cap;
	pthread_t t[2];
	static const long at[] = { 10, 50, 100, 500, 1000 };
	long slept = 0;
	double peak = 0;

	total_bytes = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1024) * MiB;
	cap = total_bytes / 32 + 1024;
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("rss start %.1f\n", rss_mib());
	for (int i = 0; i < 2; i++) {
		blk[i] = mmap(NULL, cap * sizeof(void *), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (blk[i] == MAP_FAILED)
			return 1;
	}
	pthread_barrier_init(&barrier, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		munmap(blk[i], cap * sizeof(void *));
	printf("rss exited %.1f\n", rss_mib());
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		decommit_sleep_ms(at[i] - slept);
		slept = at[i];
		printf("rss +%ldms %.1f\n", at[i], rss_mib());
	}

	size_t n = 2048 * MiB / 512;
	double base = rss_mib();

	pipe_q.total = n;
	pthread_create(&t[0], NULL, decommit_producer, &pipe_q);
	pthread_create(&t[1], NULL, decommit_consumer, &pipe_q);
	while (atomic_load(&pipe_q.tail) < n) {
		double r = rss_mib();

		peak = r > peak ? r : peak;
		decommit_sleep_ms(2);
	}
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	printf("rss prodcons-base %.1f\n", base);
	printf("rss prodcons-peak %.1f\n", peak);
	printf("rss prodcons-end %.1f\n", rss_mib());
	return 0;
}
