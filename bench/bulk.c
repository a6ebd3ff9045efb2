// SPDX-License-Identifier: MIT
/*
 * bulk: allocate 1024 blocks of one size, then free all 1024, repeated.
 *
 * Models batch phases (parse a request into many nodes, drop them all). It
 * is the known weak spot of per-thread magazines: the magazine fills and
 * drains in one go instead of recycling the same few blocks.
 *
 *   bulk --size 64 --ops 4M --threads 2 [--pin] [--seed N]
 *
 * --ops is the number of allocations per thread, rounded up to a multiple
 * of 1024; every allocation is followed later by its free, so the reported
 * ops are twice that.
 */
#include "common.h"

#define BATCH 1024

static void worker(struct worker *w)
{
	size_t size = w->o->size;
	uint64_t rounds = (w->o->ops + BATCH - 1) / BATCH;
	void **blk = xmalloc(BATCH * sizeof(*blk));

	uint64_t r;

	for (r = 0; r < rounds && !bench_expired(w); r++) {
		for (int i = 0; i < BATCH; i++) {
			blk[i] = xmalloc(size);
			touch(blk[i], size);
		}
		for (int i = 0; i < BATCH; i++)
			free(blk[i]);
	}
	free(blk);
	w->ops = r * BATCH * 2;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "bulk", .threads = 1, .ops = 1 << 20, .seed = 42,
		.size = 64,
	};
	uint64_t ops;
	double secs;
	char param[32];

	bench_parse(&o, argc, argv, " [--size BYTES]");
	if (!o.size)
		bench_usage(&o, " [--size BYTES]");
	secs = bench_run_threads(&o, worker, NULL, &ops);
	snprintf(param, sizeof(param), "%zu", o.size);
	bench_report(&o, param, ops, secs);
	return 0;
}
