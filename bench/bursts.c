// SPDX-License-Identifier: MIT
/*
 * bursts: a server's request bursts, with idle gaps between them.
 *
 * Each worker runs --ops bursts. A burst allocates 16,384 blocks of 16..1024 B (random sizes,
 * multiples of 8), writes every block, and frees them all in a random order: the buffers and
 * parsed objects of a batch of requests. Then the worker idles for --idle-ms milliseconds
 * (default 100: a server's 10 Hz tick, a batch job's poll) before its next burst. An allocator
 * that gives the burst's memory back to the OS during the gap faults it in again in the next
 * burst; one that keeps it pays in resident memory, which peak RSS shows.
 *
 *   bursts --ops 8 --threads 2 [--idle-ms N] [--pin] [--seed N]
 *
 * The reported time is busy time: each worker's bursts, without its idle gaps (the largest
 * sum among the workers). Reported ops count every malloc and free. The param is
 * "<idle>ms".
 */
#include "common.h"

#include <time.h>

#define BURST 16384
#define MIN_SIZE 16
#define MAX_SIZE 1024

static uint64_t idle_ms = 100;

struct burst_state {
	double busy; /* seconds spent in bursts */
	void *blk[BURST];
};

static void idle(void)
{
	struct timespec ts = { (time_t)(idle_ms / 1000), (long)(idle_ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static void worker(struct worker *w)
{
	struct burst_state *st = w->arg;
	struct rng r;
	uint64_t b;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (b = 0; b < w->o->ops; b++) {
		double t0 = now_sec();

		for (uint32_t i = 0; i < BURST; i++) {
			size_t n = MIN_SIZE + 8 * rng_below(&r, (MAX_SIZE - MIN_SIZE) / 8 + 1);

			st->blk[i] = xmalloc(n);
			touch(st->blk[i], n);
		}
		for (uint32_t i = BURST - 1; i > 0; i--) { /* free in a random order */
			uint32_t j = rng_below(&r, i + 1);
			void *t = st->blk[i];

			st->blk[i] = st->blk[j];
			st->blk[j] = t;
		}
		for (uint32_t i = 0; i < BURST; i++)
			free(st->blk[i]);
		st->busy += now_sec() - t0;
		if (b + 1 < w->o->ops)
			idle();
	}
	w->ops = b * 2 * BURST;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "bursts", .threads = 1, .ops = 8, .seed = 42,
	};
	struct burst_state *st[MAX_THREADS];
	char param[32];
	double busy = 0;
	uint64_t ops;

	idle_ms = bench_take_u64(&o, &argc, argv, "--idle-ms", idle_ms);
	bench_parse(&o, argc, argv, " [--idle-ms N]");
	for (int i = 0; i < o.threads; i++) {
		st[i] = calloc(1, sizeof(*st[i]));
		if (!st[i]) {
			fprintf(stderr, "bursts: out of memory\n");
			return 1;
		}
	}
	bench_run_threads(&o, worker, (void **)st, &ops);
	for (int i = 0; i < o.threads; i++)
		if (st[i]->busy > busy)
			busy = st[i]->busy;
	snprintf(param, sizeof(param), "%llums", (unsigned long long)idle_ms);
	bench_report(&o, param, ops, busy);
	return 0;
}
