// SPDX-License-Identifier: MIT
/*
 * vecgrow: grow a vector of int64 from 1 to 512 elements by push_back with
 * capacity doubling through realloc (10 reallocs: 1, 2, 4, ... 512
 * elements), then free it; repeated.
 *
 * Models dynamic arrays and string builders. Every element is written, so
 * the copies realloc makes when it cannot grow in place are part of the
 * cost, as they are in real programs.
 *
 *   vecgrow --ops 1M --threads 2 [--pin] [--size ELEMENTS]
 *
 * --ops is the number of vectors built per thread; reported ops count the
 * reallocs and the free of each vector (11 per vector at 512 elements).
 * --size sets the final element count (a power of two, default 512): with
 * 4M elements the vector ends at 32 MiB and its last reallocs are of large
 * blocks, which an allocator copies or moves by remapping their pages.
 */
#include "common.h"

#define MAX_ELEMS 512 /* default final size */

static volatile int64_t sink;

static void worker(struct worker *w)
{
	uint64_t vectors = w->o->ops;
	uint64_t calls = 0;
	size_t elems = w->o->size;
	int64_t sum = 0;

	for (uint64_t v = 0; v < vectors; v++) {
		if ((v & 63) == 63 && bench_expired(w))
			break;
		int64_t *vec = NULL;
		size_t cap = 0;

		for (size_t n = 0; n < elems; n++) {
			if (n == cap) {
				int64_t *nv;

				cap = cap ? cap * 2 : 1;
				nv = realloc(vec, cap * sizeof(*vec));
				if (!nv) {
					fprintf(stderr, "vecgrow: out of memory\n");
					exit(1);
				}
				vec = nv;
				calls++;
			}
			vec[n] = (int64_t)(n ^ v);
		}
		sum += vec[elems - 1] + vec[v % elems];
		free(vec);
		calls++;
	}
	w->ops = calls;
	sink += sum;	/* keep the stores observable */
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "vecgrow", .threads = 1, .ops = 1 << 18, .seed = 42,
		.size = MAX_ELEMS,
	};
	uint64_t ops;
	double secs;
	char param[32];

	bench_parse(&o, argc, argv, " [--size ELEMENTS]");
	if (!o.size || (o.size & (o.size - 1)))
		bench_usage(&o, " [--size ELEMENTS, a power of two]");
	secs = bench_run_threads(&o, worker, NULL, &ops);
	if (o.size >= 1 << 20)
		snprintf(param, sizeof(param), "1..%zuM", o.size >> 20);
	else
		snprintf(param, sizeof(param), "1..%zu", o.size);
	bench_report(&o, param, ops, secs);
	return 0;
}
