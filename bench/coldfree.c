// SPDX-License-Identifier: MIT
/*
 * coldfree: frees of blocks whose cache lines have gone cold.
 *
 * Each round a worker fills --blocks live blocks of --size bytes (writing
 * each block's last byte), then frees them all in a random order. With
 * 100,000 blocks of 64 B (6.4 MiB a worker) a block's line has left the
 * CPU's L1 and L2 caches by the time it is freed, and the free is the first
 * access to it. --read 1 reads each block's first word just before its free,
 * as a program that looks at an object before freeing it does (randpos,
 * for one): the miss is then the program's.
 *
 * Models the teardown of a large structure built long before, and a free of
 * a block that another CPU wrote last. An allocator that reads the freed
 * block (a double-free check on its own line) waits there for the miss; one
 * that only writes it (the free-list link) leaves the miss to the store
 * buffer (Documentation/benchmarks.rst, "What a configuration change
 * costs").
 *
 *   coldfree --ops 8 --threads 1 [--size 64] [--blocks 100000] [--read 0|1]
 *
 * --ops is the number of rounds per thread; reported ops count every malloc
 * and free (2 per block per round).
 */
#include "common.h"

struct cold {
	uint64_t blocks;
	int read;
};

static volatile uint64_t sink;

static void worker(struct worker *w)
{
	const struct cold *c = w->arg;
	size_t size = w->o->size, n = c->blocks;
	void **slot = xmalloc(n * sizeof(*slot));
	uint32_t *order = xmalloc(n * sizeof(*order));
	uint64_t ops = 0, sum = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (uint64_t round = 0; round < w->o->ops && !bench_expired(w); round++) {
		for (size_t i = 0; i < n; i++) {
			slot[i] = xmalloc(size);
			((volatile char *)slot[i])[size - 1] = (char)i;
			order[i] = (uint32_t)i;
		}
		for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
			uint32_t j = rng_below(&r, (uint32_t)(i + 1)), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (size_t i = 0; i < n; i++) {
			void *p = slot[order[i]];

			if (c->read)
				sum += *(volatile unsigned char *)p;
			free(p);
		}
		ops += 2 * n;
	}
	sink += sum;
	free(order);
	free(slot);
	w->ops = ops;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "coldfree", .threads = 1, .ops = 8, .seed = 42, .size = 64,
	};
	struct cold c;
	void *args[MAX_THREADS];
	uint64_t ops;
	double secs;
	char param[48];

	c.blocks = bench_take_u64(&o, &argc, argv, "--blocks", 100000);
	c.read = (int)bench_take_u64(&o, &argc, argv, "--read", 0);
	bench_parse(&o, argc, argv, " [--size N] [--blocks N] [--read 0|1]");
	if (!o.size || !c.blocks || c.blocks > UINT32_MAX)
		bench_usage(&o, " [--size N] [--blocks N] [--read 0|1]");
	for (int i = 0; i < o.threads; i++)
		args[i] = &c;
	secs = bench_run_threads(&o, worker, args, &ops);
	snprintf(param, sizeof(param), "%zuB%s", o.size, c.read ? "-read" : "");
	bench_report(&o, param, ops, secs);
	return 0;
}
