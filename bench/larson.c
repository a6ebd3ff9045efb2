// SPDX-License-Identifier: MIT
/*
 * larson: server-style churn in the manner of Larson and Krishnan's
 * benchmark (written from its description, not its code).
 *
 * Each worker owns a working set of 768 slots. A step picks a random slot,
 * releases the block in it and puts a new block of random size there:
 * 16..512 B, with about 3% of blocks 513 B..8 KiB. Every 16th released block
 * is not freed by its allocating thread but handed to the next worker
 * (through a lock-free mailbox, bounded at 32 waiting blocks) and freed there,
 * as a server hands a request buffer to another thread. Workers are
 * pre-spawned and released together by a barrier; each does a fixed budget
 * of steps.
 *
 *   larson --ops 2M --threads 4 [--pin] [--seed N]
 *
 * --ops is the number of steps per thread; every step is one malloc and one
 * free (the free may run on another thread), so reported ops are twice the
 * steps, plus the prefill and teardown.
 */
#include "common.h"

#define SLOTS		768
#define HANDOFF_EVERY	16
#define DRAIN_EVERY	64
/* about 8 drain intervals of hand-offs may wait in a mailbox (common.h) */
#define MAILBOX_CAP	32

struct larson_shared {
	int threads;
	pthread_barrier_t done;
	struct mailbox box[MAX_THREADS];
};

static struct larson_shared shared;

static size_t larson_size(struct rng *r)
{
	uint64_t x = rng_next(r);

	if ((x & 0xffff) < 1966)	/* ~3% of 65536 */
		return 513 + (size_t)((x >> 32) % (8192 - 512));
	return 16 + (size_t)((x >> 32) % (512 - 16 + 1));
}

static void worker(struct worker *w)
{
	struct mailbox *next = &shared.box[(w->idx + 1) % shared.threads];
	struct mailbox *mine = &shared.box[w->idx];
	void **slot = xmalloc(SLOTS * sizeof(*slot));
	uint64_t steps = w->o->ops, ops = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (int i = 0; i < SLOTS; i++) {
		size_t n = larson_size(&r);

		slot[i] = xmalloc(n);
		touch(slot[i], n);
	}
	ops += SLOTS;
	for (uint64_t s = 1; s <= steps; s++) {
		uint32_t i = rng_below(&r, SLOTS);
		size_t n = larson_size(&r);

		bool handed = s % HANDOFF_EVERY == 0 && mailbox_push(next, slot[i], MAILBOX_CAP);

		if (!handed)
			free(slot[i]);	/* else freed over there */
		slot[i] = xmalloc(n);
		touch(slot[i], n);
		ops += 1 + !handed;
		if (s % DRAIN_EVERY == 0) {
			ops += mailbox_drain(mine);
			if (s % 4096 == 0 && bench_expired(w))
				break;
		}
	}
	/* Nobody pushes after everyone has passed this point. */
	pthread_barrier_wait(&shared.done);
	ops += mailbox_drain(mine);
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	free(slot);
	w->ops = ops + SLOTS;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "larson", .threads = 1, .ops = 1 << 21, .seed = 42,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	shared.threads = o.threads;
	pthread_barrier_init(&shared.done, NULL, (unsigned)o.threads);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "768slots", ops, secs);
	return 0;
}
