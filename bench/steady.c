// SPDX-License-Identifier: MIT
/*
 * steady: keep 256 blocks live; each step frees one chosen at random and
 * allocates its replacement (random size 16..256 B, multiples of 8).
 *
 * Models a long-running process whose live set does not grow: caches,
 * session tables, small-object churn in an interpreter. It is the strength
 * of per-thread magazines, since the freed block is reused next.
 *
 *   steady --ops 8M --threads 2 [--pin] [--seed N] [--size MAX]
 *
 * --ops is the number of replace steps per thread (one free plus one
 * malloc each, so reported ops are twice that).
 */
#include "common.h"

#define LIVE 256

static void worker(struct worker *w)
{
	struct rng r;
	void *blk[LIVE];
	size_t max = w->o->size;
	uint64_t steps = w->o->ops;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (int i = 0; i < LIVE; i++) {
		size_t n = 16 + 8 * rng_below(&r, (uint32_t)(max - 16) / 8 + 1);

		blk[i] = xmalloc(n);
		touch(blk[i], n);
	}
	uint64_t s;

	for (s = 0; s < steps; s++) {
		uint64_t x = rng_next(&r);
		uint32_t i = (uint32_t)(x % LIVE);
		size_t n = 16 + 8 * (size_t)((x >> 32) % ((max - 16) / 8 + 1));

		free(blk[i]);
		blk[i] = xmalloc(n);
		touch(blk[i], n);
		if ((s & 4095) == 4095 && bench_expired(w)) {
			s++;
			break;
		}
	}
	for (int i = 0; i < LIVE; i++)
		free(blk[i]);
	w->ops = s * 2 + 2 * LIVE;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "steady", .threads = 1, .ops = 1 << 22, .seed = 42,
		.size = 256,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, " [--size MAXBYTES]");
	if (o.size < 16)
		bench_usage(&o, " [--size MAXBYTES>=16]");
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "256live", ops, secs);
	return 0;
}
