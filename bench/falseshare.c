// SPDX-License-Identifier: MIT
/*
 * falseshare: does the allocator put blocks that different threads write on one cache line?
 *
 * Each worker repeats --ops steps: malloc --blocks small blocks (default 8 of --size 8 B), write
 * every byte of each --writes times (default 100, each a read-modify-write of a volatile byte),
 * check the bytes, free the blocks. The workers share nothing, so the time per step should not
 * grow with the thread count; it does when the allocator makes them share: two threads' blocks
 * on one 64-byte line turn their writes into coherence misses (the line moves between cores).
 *
 *   - active (--passive 0): the workers' own blocks. An allocator that hands several threads
 *     blocks from one page's run (a shared free list, batches of one span) puts neighbouring
 *     threads on one line ("active false sharing", after Hoard's cache-thrash).
 *   - passive (--passive 1): before the workers start, the main thread mallocs --blocks blocks
 *     per worker one after another, dealt round-robin (block j to worker j % threads), so
 *     every line of them holds blocks of several workers; each worker writes and frees its
 *     own, then runs the steps above. An allocator whose free keeps a block in the freeing
 *     thread's cache gives it back to that worker at its next malloc, on a line the others
 *     write too ("passive false sharing", after Hoard's cache-scratch).
 *
 *   falseshare --ops 20000 --threads 2 [--passive 0|1] [--blocks 8] [--size 8] [--writes 100]
 *              [--pin]
 *
 * Reported ops count every malloc and free; the time is dominated by the writes, which is the
 * point: at one thread it is the cost of the writes alone, and with one core per thread it
 * should stay that. The param is "active" or "passive".
 */
#include "common.h"

#define MAX_BLOCKS 64

static uint64_t writes = 100, passive, nblocks = 8;

/* one line each, written once at the end: the harness must not share lines itself */
struct fs_worker {
	unsigned char *handed[MAX_BLOCKS]; /* passive: the main thread's blocks for it */
	uint64_t bad;			   /* bytes that did not hold what this worker wrote */
} __attribute__((aligned(64)));

/* Write each of the n bytes of p `writes` times and check the result. */
static uint64_t scribble(unsigned char *p, size_t n)
{
	volatile unsigned char *v = p;
	uint64_t bad = 0;

	for (size_t i = 0; i < n; i++)
		v[i] = 0;
	for (uint64_t k = 0; k < writes; k++)
		for (size_t i = 0; i < n; i++)
			v[i]++;
	for (size_t i = 0; i < n; i++)
		bad += v[i] != (unsigned char)writes;
	return bad;
}

static void worker(struct worker *w)
{
	struct fs_worker *fw = w->arg;
	unsigned char *blk[MAX_BLOCKS];
	size_t n = w->o->size;
	uint64_t s, calls = 0, bad = 0;

	for (uint64_t b = 0; b < nblocks && fw->handed[b]; b++) {
		bad += scribble(fw->handed[b], n);
		free(fw->handed[b]);
		calls++;
	}
	for (s = 0; s < w->o->ops; s++) {
		for (uint64_t b = 0; b < nblocks; b++) {
			blk[b] = xmalloc(n);
			bad += scribble(blk[b], n);
		}
		for (uint64_t b = 0; b < nblocks; b++)
			free(blk[b]);
		if ((s & 255) == 255 && bench_expired(w)) {
			s++;
			break;
		}
	}
	fw->bad = bad;
	w->ops = calls + 2 * nblocks * s;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "falseshare", .threads = 1, .ops = 20000, .seed = 42, .size = 8,
	};
	static struct fs_worker fw[MAX_THREADS];
	void *args[MAX_THREADS];
	uint64_t ops, bad = 0;
	double secs;

	passive = bench_take_u64(&o, &argc, argv, "--passive", 0);
	writes = bench_take_u64(&o, &argc, argv, "--writes", writes);
	nblocks = bench_take_u64(&o, &argc, argv, "--blocks", nblocks);
	bench_parse(&o, argc, argv, " [--passive 0|1] [--blocks N] [--writes N]");
	if (o.size < 1 || o.size > 64 || passive > 1 || writes < 1 || writes > 255 || nblocks < 1 ||
	    nblocks > MAX_BLOCKS)
		bench_usage(&o,
			    " [--passive 0|1] [--blocks 1..64] [--size 1..64] [--writes 1..255]");
	for (uint64_t j = 0; passive && j < nblocks * (uint64_t)o.threads; j++)
		fw[j % (uint64_t)o.threads].handed[j / (uint64_t)o.threads] = xmalloc(o.size);
	for (int i = 0; i < o.threads; i++)
		args[i] = &fw[i];
	secs = bench_run_threads(&o, worker, args, &ops);
	for (int i = 0; i < o.threads; i++)
		bad += fw[i].bad;
	if (bad) {
		fprintf(stderr,
			"falseshare: %llu bytes did not hold what their thread wrote: two "
			"live blocks overlap\n",
			(unsigned long long)bad);
		return 1;
	}
	bench_report(&o, passive ? "passive" : "active", ops, secs);
	return 0;
}
