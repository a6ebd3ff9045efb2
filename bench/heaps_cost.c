// SPDX-License-Identifier: MIT
/*
 * What a first-class heap costs against the thread's own heap (Documentation/heaps.rst):
 *   1. alloc/free churn: rounds of 1000 allocations of 16..256 bytes then their frees, through
 *      sefer_malloc/sefer_free and through sefer_heap_malloc/sefer_free;
 *   2. allocation alone: N blocks of 32 bytes through each;
 *   3. giving N live 32-byte blocks back: sefer_free one by one against sefer_heap_destroy;
 *   4. the life of a small heap: sefer_heap_new, 10 allocations of 64 bytes, destroy.
 * Linked with libsefer.a (make bench-heaps). Prints ns per operation; the best of 5 runs.
 *   heaps-cost [N]   (default N = 1000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sefer.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define ROUND 1000
#define RUNS 5

static void **ptrs;

static double churn(struct sefer_heap *h, size_t rounds)
{
	double t = now_ns();

	for (size_t r = 0; r < rounds; r++) {
		for (size_t i = 0; i < ROUND; i++) {
			size_t size = 16 + ((i * 7 + r) & 15) * 15;

			ptrs[i] = h ? sefer_heap_malloc(h, size) : sefer_malloc(size);
		}
		for (size_t i = 0; i < ROUND; i++)
			sefer_free(ptrs[i]);
	}
	return (now_ns() - t) / (double)(rounds * ROUND);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	double best[7];

	ptrs = malloc(n * sizeof(*ptrs));
	if (!ptrs)
		return 1;
	for (int k = 0; k < 7; k++)
		best[k] = 1e30;
	for (int run = 0; run < RUNS; run++) {
		struct sefer_heap *h = sefer_heap_new();
		double t, v[7];

		v[0] = churn(NULL, n / ROUND);
		v[1] = churn(h, n / ROUND);

		t = now_ns();
		for (size_t i = 0; i < n; i++)
			ptrs[i] = sefer_malloc(32);
		v[2] = (now_ns() - t) / (double)n;
		t = now_ns();
		for (size_t i = 0; i < n; i++)
			sefer_free(ptrs[i]);
		v[4] = (now_ns() - t) / 1e6; /* ms for all n */

		t = now_ns();
		for (size_t i = 0; i < n; i++)
			ptrs[i] = sefer_heap_malloc(h, 32);
		v[3] = (now_ns() - t) / (double)n;
		t = now_ns();
		sefer_heap_destroy(h);
		v[5] = (now_ns() - t) / 1e6;

		t = now_ns();
		for (int i = 0; i < 10000; i++) {
			struct sefer_heap *s = sefer_heap_new();

			for (int k = 0; k < 10; k++)
				ptrs[k] = sefer_heap_malloc(s, 64); /* freed by the destroy */
			sefer_heap_destroy(s);
		}
		v[6] = (now_ns() - t) / 10000;
		for (int k = 0; k < 7; k++)
			if (v[k] < best[k])
				best[k] = v[k];
	}
	printf("churn 16..256 B, rounds of %d: malloc+free %.2f ns/pair, heap_malloc+free %.2f "
	       "ns/pair\n", ROUND, best[0], best[1]);
	printf("allocation alone, %zu x 32 B:    malloc %.2f ns, heap_malloc %.2f ns\n", n,
	       best[2], best[3]);
	printf("giving back %zu x 32 B:          free one by one %.2f ms, heap_destroy %.2f ms\n",
	       n, best[4], best[5]);
	printf("a small heap's life (new, 10 x 64 B, destroy): %.0f ns\n", best[6]);
	free(ptrs);
	return 0;
}
