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
 *   vecgrow --ops 1M --threads 2 [--pin]
 *
 * --ops is the number of vectors built per thread; reported ops count the
 * 10 reallocs and the free of each vector (11 per vector).
 */
#include "common.h"

#define MAX_ELEMS 512

static volatile int64_t sink;

static void worker(struct worker *w)
{
	uint64_t vectors = w->o->ops;
	uint64_t calls = 0;
	int64_t sum = 0;

	for (uint64_t v = 0; v < vectors; v++) {
		if ((v & 63) == 63 && bench_expired(w))
			break;
		int64_t *vec = NULL;
		size_t cap = 0;

		for (size_t n = 0; n < MAX_ELEMS; n++) {
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
		sum += vec[MAX_ELEMS - 1] + vec[v % MAX_ELEMS];
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
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "1..512", ops, secs);
	return 0;
}
