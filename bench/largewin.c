// SPDX-License-Identifier: MIT
/*
 * largewin: a sliding window of large blocks of assorted sizes.
 *
 * Each worker keeps a window of 20 live blocks of 5..25 MiB (uniform, in
 * whole KiB). A step picks a block of the window at random, checks and frees
 * it, and mallocs a block of a new random size in its place, writing one
 * byte in every 4 KiB page of it (and its last byte), so the whole block is
 * faulted in as a program filling a buffer would. The live set is about
 * 300 MiB per worker and never grows, but the sizes keep changing: an
 * allocator that caches freed large blocks can serve some requests from the
 * cache (a block big enough) and must decide how much freed memory to keep
 * mapped. The figure to watch is peak RSS beside the rate.
 *
 * The byte written in each page is derived from the block's step number and
 * the page; it is checked before the block is freed, and a mismatch aborts
 * with the block, the page and the bytes (the allocator handed out memory
 * that was still in use, or wrote into a live block).
 *
 *   largewin --ops 60 --threads 2 [--pin] [--seed N]
 *
 * --ops is the number of replace steps per thread. Each worker fills its
 * window first; the clock starts when all windows are full (filling is not
 * timed, but its pages count in peak RSS). Reported ops count every malloc
 * and free after that, the final frees of the window included.
 */
#include "common.h"

#define WINDOW		20
#define MIN_KIB		(5u << 10)
#define MAX_KIB		(25u << 10)
#define PAGE		4096

static pthread_barrier_t filled;

struct big {
	unsigned char *p;
	size_t size;
	uint32_t tag;
};

static unsigned char page_byte(uint32_t tag, size_t page)
{
	return (unsigned char)(tag * 31u + page * 7u + 1);
}

static void big_new(struct big *b, struct rng *r, uint32_t tag)
{
	b->size = (size_t)(MIN_KIB + rng_below(r, MAX_KIB - MIN_KIB + 1)) << 10;
	b->tag = tag;
	b->p = xmalloc(b->size);
	for (size_t off = 0; off < b->size; off += PAGE)
		b->p[off] = page_byte(tag, off / PAGE);
	b->p[b->size - 1] = (unsigned char)tag;
}

static void big_check_free(struct big *b)
{
	for (size_t off = 0; off < b->size; off += PAGE) {
		unsigned char want = page_byte(b->tag, off / PAGE);

		if (b->p[off] != want) {
			fprintf(stderr,
				"largewin: block %p (%zu bytes, step %u) corrupted at "
				"offset %zu: expected 0x%02x, found 0x%02x\n",
				(void *)b->p, b->size, b->tag, off, want, b->p[off]);
			abort();
		}
	}
	if (b->p[b->size - 1] != (unsigned char)b->tag) {
		fprintf(stderr, "largewin: block %p (%zu bytes, step %u): last "
			"byte corrupted\n", (void *)b->p, b->size, b->tag);
		abort();
	}
	free(b->p);
	b->p = NULL;
}

static void worker(struct worker *w)
{
	struct big win[WINDOW];
	uint64_t steps = w->o->ops, done = 0;
	struct rng r;
	uint32_t tag = 0;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (int i = 0; i < WINDOW; i++)
		big_new(&win[i], &r, tag++);
	/* The clock starts when every window is full. */
	pthread_barrier_wait(&filled);
	w->t_start = now_sec();
	if (w->o->max_secs > 0)
		w->deadline = w->t_start + w->o->max_secs;
	while (done < steps) {
		struct big *b = &win[rng_below(&r, WINDOW)];

		big_check_free(b);
		big_new(b, &r, tag++);
		done++;
		if (bench_expired(w))
			break;
	}
	for (int i = 0; i < WINDOW; i++)
		big_check_free(&win[i]);
	w->ops = 2 * done + WINDOW;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "largewin", .threads = 1, .ops = 60, .seed = 42,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	pthread_barrier_init(&filled, NULL, (unsigned)o.threads);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "20x5..25M", ops, secs);
	return 0;
}
