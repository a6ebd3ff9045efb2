// SPDX-License-Identifier: MIT
/*
 * mstress: rounds of fill / free half / refill / free all.
 *
 * Each round a worker fills 512 slots with mixed sizes (85% 16..256 B,
 * 12% 257 B..4 KiB, 3% 4..64 KiB), frees half of them in random order
 * (about 1 in 8 of those is handed to the next worker and freed there, unless
 * 256 blocks already wait in its mailbox), refills the holes, and finally
 * frees all 512. Models phases of a program whose live set rises and falls
 * with fragmentation in between, with some objects outliving their thread's
 * interest in them.
 *
 *   mstress --ops 4000 --threads 4 [--pin] [--seed N]
 *
 * --ops is the number of rounds per thread. Reported ops count every
 * malloc and free (1536 per round).
 */
#include "common.h"

#define FILL 512
/* about 8 rounds of hand-offs may wait in a mailbox (common.h) */
#define MAILBOX_CAP 256

static struct mailbox box[MAX_THREADS];
static pthread_barrier_t done;
static int nthreads;

static size_t mixed_size(struct rng *r)
{
	uint64_t x = rng_next(r);
	uint32_t pick = (uint32_t)(x & 0xff);	/* 0..255 */
	uint64_t hi = x >> 32;

	if (pick < 218)				/* ~85% */
		return 16 + (size_t)(hi % (256 - 16 + 1));
	if (pick < 248)				/* ~12% */
		return 257 + (size_t)(hi % (4096 - 257 + 1));
	return 4097 + (size_t)(hi % (65536 - 4097 + 1));	/* ~3% */
}

static void worker(struct worker *w)
{
	struct mailbox *next = &box[(w->idx + 1) % nthreads];
	struct mailbox *mine = &box[w->idx];
	void **slot = xmalloc(FILL * sizeof(*slot));
	uint32_t *order = xmalloc(FILL * sizeof(*order));
	uint64_t rounds = w->o->ops, ops = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (uint64_t round = 0; round < rounds && !bench_expired(w); round++) {
		for (int i = 0; i < FILL; i++) {
			size_t n = mixed_size(&r);

			slot[i] = xmalloc(n);
			touch(slot[i], n);
			order[i] = (uint32_t)i;
		}
		/* Fisher-Yates: the first half of order[] is freed. */
		for (uint32_t i = FILL - 1; i > 0; i--) {
			uint32_t j = rng_below(&r, i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (int k = 0; k < FILL / 2; k++) {
			uint32_t i = order[k];

			if ((rng_next(&r) & 7) != 0 || !mailbox_push(next, slot[i], MAILBOX_CAP)) {
				free(slot[i]);
				ops++;
			}
		}
		for (int k = 0; k < FILL / 2; k++) {
			uint32_t i = order[k];
			size_t n = mixed_size(&r);

			slot[i] = xmalloc(n);
			touch(slot[i], n);
		}
		for (int i = 0; i < FILL; i++)
			free(slot[i]);
		ops += FILL + FILL / 2 + FILL;
		ops += mailbox_drain(mine);
	}
	pthread_barrier_wait(&done);
	ops += mailbox_drain(mine);
	free(order);
	free(slot);
	w->ops = ops;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "mstress", .threads = 1, .ops = 2000, .seed = 42,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	nthreads = o.threads;
	pthread_barrier_init(&done, NULL, (unsigned)o.threads);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "512mixed", ops, secs);
	return 0;
}
