// SPDX-License-Identifier: MIT
/*
 * xfer: producer threads allocate, consumer threads free, through a shared queue of batches.
 *
 * The threads split into producers and consumers at --ratio P:C (1:1 or 1:3; --threads is
 * rounded down to a multiple of P + C, at least one of each). A producer allocates a batch of
 * BATCH blocks (64 B each with --size 64, or 16..1024 B at random with --size 0, "mixed"),
 * writes their first and last bytes, puts the pointers into a batch array it also allocated,
 * and appends the batch to one queue shared by all threads. A consumer takes the oldest
 * batch, frees every block and the batch array. Every free is a cross-thread free of a block
 * the freeing thread never saw allocated, in runs of BATCH from one producer, the shape of a
 * server whose network threads allocate requests that worker threads retire. The queue holds
 * at most QUEUE_MAX batches (a producer waits while it is full), so the live set and the peak
 * RSS stay bounded whatever the allocator's speed.
 *
 *   xfer --threads 2 --ratio 1:1 --size 64 --ops 8M [--seed N]
 *
 * --ops is the number of blocks over all producers. Reported ops count every malloc and free
 * (of blocks and batch arrays). The param is "<size>-<P>to<C>", size "64B" or "mixed".
 */
#include "common.h"

#define BATCH		256
#define QUEUE_MAX	64

struct batch {
	struct batch *next;
	unsigned count;
	void *block[BATCH];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct batch *head, *tail;
	unsigned length;
	int producers_left;
} queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
};

static int producers, group_p, group_c;

static void queue_put(struct batch *b)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.length == QUEUE_MAX)
		pthread_cond_wait(&queue.not_full, &queue.lock);
	b->next = NULL;
	if (queue.tail)
		queue.tail->next = b;
	else
		queue.head = b;
	queue.tail = b;
	queue.length++;
	pthread_cond_signal(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
}

/* The oldest batch, or NULL once every producer is done and the queue is empty. */
static struct batch *queue_take(void)
{
	struct batch *b;

	pthread_mutex_lock(&queue.lock);
	while (!queue.head && queue.producers_left)
		pthread_cond_wait(&queue.not_empty, &queue.lock);
	b = queue.head;
	if (b) {
		queue.head = b->next;
		if (!queue.head)
			queue.tail = NULL;
		queue.length--;
		pthread_cond_signal(&queue.not_full);
	}
	pthread_mutex_unlock(&queue.lock);
	return b;
}

static void produce(struct worker *w)
{
	uint64_t blocks = w->o->ops / (uint64_t)producers, made = 0, ops = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	while (made < blocks) {
		struct batch *b = xmalloc(sizeof(*b));

		ops++;
		b->count = 0;
		while (b->count < BATCH && made < blocks) {
			size_t n = w->o->size ? w->o->size : 16 + rng_below(&r, 1024 - 16 + 1);
			void *p = xmalloc(n);

			touch(p, n);
			b->block[b->count++] = p;
			made++;
			ops++;
		}
		queue_put(b);
		if (bench_expired(w))
			break;
	}
	pthread_mutex_lock(&queue.lock);
	if (!--queue.producers_left)
		pthread_cond_broadcast(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
	w->ops = ops;
}

static void consume(struct worker *w)
{
	struct batch *b;
	uint64_t ops = 0;

	while ((b = queue_take())) {
		for (unsigned i = 0; i < b->count; i++)
			free(b->block[i]);
		ops += b->count + 1;
		free(b);
	}
	w->ops = ops;
}

/* In each group of P + C threads, the first P produce and the others consume. */
static void worker(struct worker *w)
{
	if (w->idx % (group_p + group_c) < group_p)
		produce(w);
	else
		consume(w);
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "xfer", .threads = 2, .ops = 8u << 20, .seed = 42, .size = 64,
	};
	const char *ratio = "1:1";
	int p = 1, c = 1, groups;
	uint64_t ops;
	double secs;
	char param[48];

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--ratio"))
			continue;
		ratio = argv[i + 1];
		for (int j = i; j + 2 <= argc; j++)
			argv[j] = argv[j + 2];
		argc -= 2;
		break;
	}
	if (sscanf(ratio, "%d:%d", &p, &c) != 2 || p < 1 || c < 1) {
		fprintf(stderr, "xfer: --ratio must be P:C, as 1:1 or 1:3\n");
		return 2;
	}
	bench_parse(&o, argc, argv, " [--ratio P:C] [--size BYTES|0]");
	groups = o.threads / (p + c);
	if (groups < 1) {
		fprintf(stderr, "xfer: --threads %d is less than one group of %d:%d\n", o.threads,
			p, c);
		return 2;
	}
	o.threads = groups * (p + c);
	producers = groups * p;
	group_p = p;
	group_c = c;
	queue.producers_left = producers;
	secs = bench_run_threads(&o, worker, NULL, &ops);
	if (o.size)
		snprintf(param, sizeof(param), "%zuB-%dto%d", o.size, p, c);
	else
		snprintf(param, sizeof(param), "mixed-%dto%d", p, c);
	bench_report(&o, param, ops, secs);
	return 0;
}
