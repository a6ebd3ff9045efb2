// SPDX-License-Identifier: MIT
/*
 * larson-rounds: Larson and Krishnan's server benchmark in its published
 * form, with threads that live for one round each (written from the paper's
 * description, not from its code).
 *
 * There are --threads lanes. A lane is an array of 1000 slots, each holding
 * a block of 10..500 B (uniform), filled by the main thread before the clock
 * starts. In every round each lane gets a freshly created thread that does
 * --steps replace steps on the lane's slots (pick a random slot, free its
 * block, malloc a block of a new random size there, write its first and last
 * byte) and exits. The next round's thread is created only after that one
 * has been joined, and takes over the same slots: most of the blocks it
 * frees were allocated by a thread that no longer exists, so the frees land
 * in the segments and pages that thread left behind. After the last round
 * the main thread frees what is left.
 *
 * Each lane is driven by a controller thread that only creates and joins the
 * round threads (it allocates nothing itself), so lanes run independently.
 *
 *   larson-rounds --ops 2000 --threads 2 [--steps 2000] [--seed N]
 *
 * --ops is the number of rounds (threads created per lane). The clock runs
 * from the first thread creation to the end of the final frees, thread
 * creation and exit included: they are the point. Reported ops count every
 * malloc and free (2 per step, plus the final frees).
 */
#include "common.h"

#define SLOTS		1000
#define MIN_SIZE	10
#define MAX_SIZE	500

struct lane {
	const struct bench_opts *o;
	int idx;
	uint64_t steps;		/* per round */
	void **slot;
	struct rng r;
	uint64_t ops;
	uint64_t rounds_done;
	double deadline;
};

static size_t rounds_size(struct rng *r)
{
	return MIN_SIZE + rng_below(r, MAX_SIZE - MIN_SIZE + 1);
}

/* One round: a thread's whole life. */
static void *round_thread(void *p)
{
	struct lane *l = p;
	void **slot = l->slot;
	uint64_t steps = l->steps;

	for (uint64_t s = 0; s < steps; s++) {
		uint32_t i = rng_below(&l->r, SLOTS);
		size_t n = rounds_size(&l->r);

		free(slot[i]);
		slot[i] = xmalloc(n);
		touch(slot[i], n);
	}
	l->ops += 2 * steps;
	return NULL;
}

static void *controller(void *p)
{
	struct lane *l = p;
	uint64_t rounds = l->o->ops;

	if (l->o->pin)
		bench_pin(l->idx);
	for (uint64_t k = 0; k < rounds; k++) {
		pthread_t t;

		if (pthread_create(&t, NULL, round_thread, l)) {
			fprintf(stderr, "larson-rounds: pthread_create failed\n");
			exit(1);
		}
		pthread_join(t, NULL);
		l->rounds_done++;
		if (l->deadline > 0 && (k & 15) == 15 && now_sec() > l->deadline)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "larson-rounds", .threads = 1, .ops = 2000, .seed = 42,
	};
	static struct lane lane[MAX_THREADS];
	static pthread_t ctl[MAX_THREADS];
	uint64_t steps, ops = 0;
	double t0, t1;

	steps = bench_take_u64(&o, &argc, argv, "--steps", 2000);
	bench_parse(&o, argc, argv, " [--steps N]");
	for (int i = 0; i < o.threads; i++) {
		struct lane *l = &lane[i];

		*l = (struct lane){ .o = &o, .idx = i, .steps = steps };
		rng_init(&l->r, o.seed, (uint64_t)i);
		l->slot = xmalloc(SLOTS * sizeof(*l->slot));
		for (int k = 0; k < SLOTS; k++) {
			size_t n = rounds_size(&l->r);

			l->slot[k] = xmalloc(n);
			touch(l->slot[k], n);
		}
	}
	t0 = now_sec();
	for (int i = 0; i < o.threads; i++) {
		lane[i].deadline = o.max_secs > 0 ? t0 + o.max_secs : 0;
		if (pthread_create(&ctl[i], NULL, controller, &lane[i])) {
			fprintf(stderr, "larson-rounds: pthread_create failed\n");
			exit(1);
		}
	}
	for (int i = 0; i < o.threads; i++)
		pthread_join(ctl[i], NULL);
	/* The last round's threads are gone too: these frees are all remote. */
	for (int i = 0; i < o.threads; i++) {
		for (int k = 0; k < SLOTS; k++)
			free(lane[i].slot[k]);
		ops += lane[i].ops + SLOTS;
	}
	t1 = now_sec();
	for (int i = 0; i < o.threads; i++)
		free(lane[i].slot);
	bench_report(&o, "1000slots", ops, t1 - t0);
	return 0;
}
