// SPDX-License-Identifier: MIT
/*
 * The in-use peak of threads that each fit in one segment (check-stats.sh): THREADS threads
 * each allocate BLOCKS blocks of SIZE bytes (about 3 MB: one 4 MiB segment per thread's heap),
 * wait until all of them hold their set, free it and exit. Nothing queries the stats meanwhile,
 * so the peak is what the slow paths sampled (core/inuse.c). The sets grow by carving, so it
 * must miss less than a step (4 MiB here) and what the pages being filled had carved and not
 * handed out (less than a 64 KiB page per heap). Sampled at a new segment only, as the peak
 * was until 2026-12-08, a heap's first segment took no sample and it read nothing of the 12 MB.
 * Prints the peak and the live total; exits 1 when the peak is below that.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sefer.h"

#define THREADS 4
#define BLOCKS	3000
#define SIZE	1000

static pthread_barrier_t all_live;
static unsigned long long usable[THREADS];

static void *worker(void *arg)
{
	unsigned long long *mine = arg;
	static __thread void *blk[BLOCKS];

	for (int i = 0; i < BLOCKS; i++) {
		blk[i] = sefer_malloc(SIZE);
		if (!blk[i])
			abort();
		*mine += sefer_usable_size(blk[i]);
	}
	pthread_barrier_wait(&all_live);
	for (int i = 0; i < BLOCKS; i++)
		sefer_free(blk[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	struct sefer_stats st;
	unsigned long long total = 0, lost;

	pthread_barrier_init(&all_live, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, &usable[i]))
			return 2;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	sefer_stats_get(&st, sizeof(st));
	for (int i = 0; i < THREADS; i++)
		total += usable[i];
	/* what the last sample may have missed: the bound's step and a 64 KiB page per heap */
	lost = (4ULL << 20) + THREADS * (64ULL << 10);
	printf("peak-threads: in-use peak %llu bytes of %llu live at once (%u threads, %d blocks"
	       " of %d B each; at least %llu wanted)\n",
	       (unsigned long long)st.in_use_peak_bytes, total, THREADS, BLOCKS, SIZE,
	       total - lost);
	return st.in_use_peak_bytes + lost >= total ? 0 : 1;
}
