// SPDX-License-Identifier: MIT
/*
 * prodcons: one producer thread allocates, the other threads free.
 *
 * Worker 0 allocates blocks of random size 16..1024 B, writes them and
 * passes them round-robin to the consumers (workers 1..N-1) through bounded
 * single-producer single-consumer rings; consumers free what they receive.
 * Models a pipeline stage or a network thread handing buffers to workers.
 * Every free is a cross-thread free, and since at most RING blocks per
 * consumer are in flight, the live set is bounded: peak RSS must stay
 * bounded too, whatever the run length. An allocator that cannot hand
 * remotely freed memory back to the producer shows it here as RSS growth.
 *
 *   prodcons --ops 4M --threads 3 [--pin] [--seed N] [--size BYTES]
 *
 * --threads counts the producer (so it must be at least 2); --ops is the
 * total number of blocks produced. Reported ops count malloc and free.
 * --size N: every block is N bytes (say 1M: I/O buffers handed to workers,
 * large blocks freed by another thread than the allocating one); the
 * producer then writes one byte per 4 KiB page, as a reader filling a
 * buffer would fault its pages in, not a full memset.
 *
 * The producer publishes its ring head every `batch` blocks (and before it
 * waits for room, and at the end), as a pipeline stage hands work over in
 * batches: 32 small blocks, or 64 KiB of big ones. Publishing every block,
 * the run had two modes on 2 vCPUs, under every allocator: with both threads
 * running, each block's hand-off moved the ring's head and tail lines
 * between the cores (about 16M calls/s); with the consumer descheduled, the
 * ring filled and was drained in one go (about 90M). The scheduler picked
 * the mode, so a median of 5 measured it. For the same reason a ring holds
 * at most 4 MiB of big blocks (4 of 1 MiB), not 1024 blocks: with 1 GiB
 * allowed in flight per consumer, peak RSS at 4 threads was 8 MiB in one
 * run and 374 MiB in the next, depending on how far the consumers fell
 * behind (and 6 or 38 MiB with 32 MiB per ring).
 */
#include "common.h"

#define RING 1024		/* slots, a power of two */
#define BATCH 32		/* small blocks per publication of the ring head */
#define BATCH_BYTES (64 << 10)	/* big blocks: bytes per publication */
#define RING_BYTES (4 << 20)	/* big blocks: bytes a ring may hold */

static uint64_t batch = BATCH, ring_cap = RING;

struct ring {
	_Alignas(64) _Atomic uint64_t head;	/* written by the producer */
	_Alignas(64) _Atomic uint64_t tail;	/* written by the consumer */
	_Alignas(64) void *slot[RING];
};

static struct ring *rings;
static _Atomic int producer_done;

static void produce(struct worker *w)
{
	int consumers = w->o->threads - 1;
	uint64_t total = w->o->ops;
	uint64_t *head = calloc((size_t)consumers, sizeof(*head));
	uint64_t *tail = calloc((size_t)consumers, sizeof(*tail));
	struct rng r;

	if (!head || !tail)
		exit(1);
	rng_init(&r, w->o->seed, 0);
	uint64_t k;

	for (k = 0; k < total; k++) {
		int c = (int)(k % (uint64_t)consumers);
		struct ring *q = &rings[c];
		size_t n = w->o->size ? w->o->size : 16 + rng_below(&r, 1024 - 16 + 1);
		unsigned char *p = xmalloc(n);

		if (w->o->size > 4096) {
			for (size_t off = 0; off < n; off += 4096)
				p[off] = (unsigned char)k;
		} else {
			touch(p, n);
		}
		if (head[c] - tail[c] == ring_cap) {
			/* the consumer must see everything before we wait on it */
			atomic_store_explicit(&q->head, head[c], memory_order_release);
			while (head[c] - tail[c] == ring_cap) {
				tail[c] = atomic_load_explicit(&q->tail,
							       memory_order_acquire);
				if (head[c] - tail[c] == ring_cap)
					sched_yield();
			}
		}
		q->slot[head[c] & (RING - 1)] = p;
		head[c]++;
		if (head[c] % batch == 0)
			atomic_store_explicit(&q->head, head[c], memory_order_release);
		if ((k & 4095) == 4095 && bench_expired(w)) {
			k++;
			break;
		}
	}
	for (int c = 0; c < consumers; c++)
		atomic_store_explicit(&rings[c].head, head[c], memory_order_release);
	atomic_store_explicit(&producer_done, 1, memory_order_release);
	free(head);
	free(tail);
	w->ops = k;
}

static void consume(struct worker *w)
{
	struct ring *q = &rings[w->idx - 1];
	uint64_t tail = 0, freed = 0;

	for (;;) {
		uint64_t head = atomic_load_explicit(&q->head,
						     memory_order_acquire);

		if (head == tail) {
			if (atomic_load_explicit(&producer_done,
						 memory_order_acquire) &&
			    atomic_load_explicit(&q->head,
						 memory_order_acquire) == tail)
				break;
			sched_yield();
			continue;
		}
		while (tail != head) {
			free(q->slot[tail & (RING - 1)]);
			tail++;
			freed++;
		}
		atomic_store_explicit(&q->tail, tail, memory_order_release);
	}
	w->ops = freed;
}

static void worker(struct worker *w)
{
	if (w->idx == 0)
		produce(w);
	else
		consume(w);
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "prodcons", .threads = 2, .ops = 1 << 22, .seed = 42,
	};
	uint64_t ops;
	double secs;

	char param[32] = "1toN";

	bench_parse(&o, argc, argv, " [--size BYTES]");
	if (o.threads < 2) {
		fprintf(stderr, "prodcons: --threads must be at least 2\n");
		return 2;
	}
	if (o.size) { /* batch: BATCH_BYTES, 1..BATCH blocks; ring: RING_BYTES, batch..RING */
		batch = BATCH_BYTES / o.size;
		batch = batch < 1 ? 1 : batch > BATCH ? BATCH : batch;
		ring_cap = RING_BYTES / o.size;
		ring_cap = ring_cap < batch ? batch : ring_cap > RING ? RING : ring_cap;
	}
	rings = aligned_alloc(64, sizeof(*rings) * (size_t)(o.threads - 1));
	if (!rings)
		return 1;
	memset(rings, 0, sizeof(*rings) * (size_t)(o.threads - 1));
	secs = bench_run_threads(&o, worker, NULL, &ops);
	if (o.size >= 1 << 20 && !(o.size & ((1 << 20) - 1)))
		snprintf(param, sizeof(param), "1toN-%zuM", o.size >> 20);
	else if (o.size)
		snprintf(param, sizeof(param), "1toN-%zu", o.size);
	bench_report(&o, param, ops, secs);
	free(rings);
	return 0;
}
