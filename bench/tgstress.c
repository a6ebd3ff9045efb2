// SPDX-License-Identifier: MIT
/*
 * tgstress: thread generations under load, with zero-initialised and checked items,
 * per-thread pointer arrays grown by realloc, and a shared transfer array.
 *
 * The program runs --gens generations. In each, --threads threads (run.py gives four per
 * CPU) are created, each runs its share of --ops steps and exits, and the main thread joins
 * them all before the next generation starts. A thread keeps its items in a pointer array that
 * grows by realloc in 800 KiB steps from nothing (its first item makes it: a fresh 800 KiB
 * block, a large one, every thread lifetime), and callocs a 100 KiB array at its start for the
 * items it leaves behind. At each step it
 *
 *   - (half of the steps) makes an item: calloc of 8..1024 B (one item in a hundred is 100
 *     times larger, up to 100 KiB), checked to be all zero, then filled with a pattern that
 *     follows from its address and size, and appends it to the array;
 *   - (three in ten) frees a random item of the array: checks the pattern first;
 *   - (two in ten) swaps a random item of the array into a random slot of a shared transfer
 *     array of 1000 slots (one atomic exchange) and takes what was there, usually another
 *     thread's item, maybe one of an earlier generation.
 *
 * At exit a thread frees three in four of its items and its pointer array, and leaves the
 * rest, in the 100 KiB array, to its lane: the next generation's thread of the same lane starts
 * by checking and freeing them and that array (frees of blocks whose allocating thread has
 * exited). So every generation starts with fresh threads whose first large requests (the
 * 100 KiB calloc, the 800 KiB array) meet what the last generation gave back, and whose heaps
 * meet the memory a dying thread left behind. (At the bench's budgets a thread makes 1,900 to
 * 10,000 items: the array's first 800 KiB always hold them; a first array of 100 KiB, as
 * before 2026-12-07, never grew, and the large request never came.) After the last generation
 * the main thread checks and frees everything still live. A mismatch aborts with the item's
 * address.
 *
 *   tgstress --gens 50 --ops 8M --threads 8 [--pin] [--seed N]
 *
 * --ops is the number of steps over all threads and generations. Reported ops count every
 * calloc, realloc and free; the clock runs from the first thread creation to the end of the
 * final frees. The param is "<gens>gen".
 */
#include "common.h"

#define XFER_SLOTS	1000
#define KEPT_SLOTS	(100 * 1024 / sizeof(void *))	/* entries of the kept array's calloc */
#define ARRAY_STEP	(800 * 1024 / sizeof(void *))	/* entries added by each realloc */
#define MAX_WORDS	128				/* 1024 B */
#define BIG_FACTOR	100

struct lane {
	uintptr_t **items; /* what the last thread of this lane left */
	size_t count;
};

struct gen_arg {
	struct lane *lane;
	uint64_t steps;
	uint64_t seed;
};

static _Atomic(uintptr_t *) xfer[XFER_SLOTS];

/* An item is a calloc'd array of words: word 0 its word count, then a pattern of its address. */
static inline uintptr_t pattern(const uintptr_t *p, size_t i)
{
	return ((uintptr_t)p >> 3) * 0x9e3779b97f4a7c15ull + i;
}

static uintptr_t *item_make(struct rng *r, uint64_t *ops)
{
	size_t words = 1 + rng_below(r, MAX_WORDS);
	uintptr_t *p;

	if (rng_below(r, 100) == 0)
		words *= BIG_FACTOR;
	p = calloc(words, sizeof(uintptr_t));
	(*ops)++;
	if (!p) {
		fprintf(stderr, "tgstress: out of memory (%zu words)\n", words);
		exit(1);
	}
	for (size_t i = 0; i < words; i++) {
		if (p[i]) {
			fprintf(stderr, "tgstress: calloc'd item %p not zero at word %zu\n",
				(void *)p, i);
			abort();
		}
	}
	p[0] = words;
	for (size_t i = 1; i < words; i++)
		p[i] = pattern(p, i);
	return p;
}

static void item_free(uintptr_t *p, uint64_t *ops)
{
	if (!p)
		return;
	for (size_t i = 1; i < p[0]; i++) {
		if (p[i] != pattern(p, i)) {
			fprintf(stderr, "tgstress: item %p (%zu words) corrupt at word %zu\n",
				(void *)p, (size_t)p[0], i);
			abort();
		}
	}
	free(p);
	(*ops)++;
}

static void *generation_thread(void *arg)
{
	struct gen_arg *a = arg;
	struct lane *lane = a->lane;
	uintptr_t **items = NULL, **kept;
	size_t cap = 0, len = 0, nkept = 0;
	uint64_t ops = 0;
	struct rng r;

	rng_init(&r, a->seed, 0);
	/* the last generation's leftovers: freed by a thread that did not allocate them */
	for (size_t i = 0; i < lane->count; i++)
		item_free(lane->items[i], &ops);
	free(lane->items);
	ops += lane->items != NULL;
	lane->items = NULL;
	lane->count = 0;

	kept = calloc(KEPT_SLOTS, sizeof(*kept));
	ops++;
	if (!kept) {
		fprintf(stderr, "tgstress: out of memory (kept array)\n");
		exit(1);
	}
	for (uint64_t s = 0; s < a->steps; s++) {
		uint32_t what = rng_below(&r, 10);

		if (what < 5 || !len) {
			if (len == cap) {
				uintptr_t **grown = realloc(items, (cap + ARRAY_STEP) * sizeof(*items));

				ops++;
				if (!grown) {
					fprintf(stderr, "tgstress: out of memory (regrowth)\n");
					exit(1);
				}
				items = grown;
				cap += ARRAY_STEP;
			}
			items[len++] = item_make(&r, &ops);
		} else if (what < 8) {
			size_t i = rng_below(&r, (uint32_t)len);

			item_free(items[i], &ops);
			items[i] = NULL;
		} else {
			size_t i = rng_below(&r, (uint32_t)len);

			items[i] = atomic_exchange_explicit(&xfer[rng_below(&r, XFER_SLOTS)],
							    items[i], memory_order_acq_rel);
		}
	}
	/* three in four freed now, the rest left to the lane's next thread in the kept array */
	for (size_t i = 0; i < len; i++) {
		if (rng_below(&r, 4) || nkept == KEPT_SLOTS)
			item_free(items[i], &ops);
		else
			kept[nkept++] = items[i];
	}
	free(items);
	ops += items != NULL;
	lane->items = kept;
	lane->count = nkept;
	a->steps = ops; /* hand the count back through the argument */
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "tgstress", .threads = 8, .ops = 8u << 20, .seed = 42,
	};
	uint64_t gens, ops = 0;
	struct lane *lanes;
	struct gen_arg *args;
	pthread_t *tid;
	double t0, secs;
	char param[32];

	gens = bench_take_u64(&o, &argc, argv, "--gens", 50);
	bench_parse(&o, argc, argv, " [--gens N]");
	if (o.threads < 1 || o.threads > MAX_THREADS || !gens)
		bench_usage(&o, " [--gens N]");
	lanes = calloc((size_t)o.threads, sizeof(*lanes));
	args = calloc((size_t)o.threads, sizeof(*args));
	tid = calloc((size_t)o.threads, sizeof(*tid));
	if (!lanes || !args || !tid)
		return 1;

	t0 = now_sec();
	for (uint64_t g = 0; g < gens; g++) {
		for (int i = 0; i < o.threads; i++) {
			args[i] = (struct gen_arg){
				.lane = &lanes[i],
				.steps = o.ops / gens / (uint64_t)o.threads,
				.seed = o.seed * 1000003 + g * MAX_THREADS + (uint64_t)i,
			};
			if (pthread_create(&tid[i], NULL, generation_thread, &args[i])) {
				fprintf(stderr, "tgstress: pthread_create failed\n");
				return 1;
			}
		}
		for (int i = 0; i < o.threads; i++) {
			pthread_join(tid[i], NULL);
			ops += args[i].steps;
		}
	}
	for (int i = 0; i < o.threads; i++) {
		for (size_t k = 0; k < lanes[i].count; k++)
			item_free(lanes[i].items[k], &ops);
		free(lanes[i].items);
		ops++;
	}
	for (int i = 0; i < XFER_SLOTS; i++)
		item_free(atomic_load(&xfer[i]), &ops);
	secs = now_sec() - t0;
	snprintf(param, sizeof(param), "%llugen", (unsigned long long)gens);
	bench_report(&o, param, ops, secs);
	free(lanes);
	free(args);
	free(tid);
	return 0;
}
