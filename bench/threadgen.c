// SPDX-License-Identifier: MIT
/*
 * threadgen: generations of threads that share items and leave some behind.
 *
 * The program runs --gens generations. In each, --threads threads are
 * created; each makes --ops items and exits, and the main thread joins them
 * all before the next generation starts. An item is a block of 16..1024 B
 * whose whole content follows from a 64-bit id: a header (id, size, a check
 * word) and then a pattern stream seeded from the id. For every item made,
 * a thread either
 *
 *   - swaps it into a random slot of a shared exchange of 4096 slots (one
 *     atomic exchange) and takes whatever was there: usually another
 *     thread's item, possibly one from an earlier generation, or
 *   - puts it into a random slot of its lane's 256 local slots, taking the
 *     item that was there (the lane's items outlive the thread: the next
 *     generation's thread of the same lane takes them over).
 *
 * Every item taken out is verified completely (header and every byte of the
 * pattern) and freed; a mismatch aborts with the item's address and the
 * first bad offset. So threads exit with live blocks in their heaps, items
 * are freed by threads that did not allocate them (often after their
 * allocator exited), and each generation starts with fresh threads on a heap
 * the previous one left behind. After the last generation the main thread
 * verifies and frees everything still live.
 *
 *   threadgen --gens 50 --ops 4000 --threads 2 [--pin] [--seed N]
 *
 * --ops is the number of items per thread per generation. The clock runs
 * from the first thread creation to the end of the final frees. Reported
 * ops count every malloc and free. The param is "<gens>gen".
 */
#include "common.h"

#define XSLOTS		4096
#define LSLOTS		256
#define MIN_SIZE	16
#define MAX_SIZE	1024

struct item {
	uint64_t id;
	uint32_t size;
	uint32_t check;
	unsigned char data[];
};

struct lane {
	const struct bench_opts *o;
	int idx;
	uint64_t gen;
	struct item *local[LSLOTS];
	struct rng r;
	uint64_t ops;
	double deadline;
};

static _Atomic(struct item *) exch[XSLOTS];

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t item_check(uint64_t id, uint32_t size)
{
	return (uint32_t)(mix64(id ^ ((uint64_t)size << 48)) >> 16);
}

/* The pattern: 64-bit words of an arithmetic progression seeded by the id. */
static void item_fill(struct item *it)
{
	size_t n = it->size - sizeof(*it), k;
	uint64_t v = mix64(it->id), step = mix64(~it->id) | 1;

	for (k = 0; k + 8 <= n; k += 8, v += step)
		memcpy(it->data + k, &v, 8);
	for (; k < n; k++)
		it->data[k] = (unsigned char)(v >> (k % 8 * 8));
}

static void item_bad(const struct item *it, const char *what, size_t off)
{
	fprintf(stderr,
		"threadgen: item %p corrupted (%s, offset %zu): header id %#llx "
		"size %u check %#x\n", (const void *)it, what, off,
		(unsigned long long)it->id, it->size, it->check);
	abort();
}

static void item_verify(const struct item *it)
{
	size_t n, k;
	uint64_t v, step;

	if (it->size < MIN_SIZE || it->size > MAX_SIZE)
		item_bad(it, "size out of range", 8);
	if (it->check != item_check(it->id, it->size))
		item_bad(it, "header check word", 12);
	n = it->size - sizeof(*it);
	v = mix64(it->id);
	step = mix64(~it->id) | 1;
	for (k = 0; k + 8 <= n; k += 8, v += step) {
		uint64_t got;

		memcpy(&got, it->data + k, 8);
		if (got != v)
			item_bad(it, "pattern word", sizeof(*it) + k);
	}
	for (; k < n; k++)
		if (it->data[k] != (unsigned char)(v >> (k % 8 * 8)))
			item_bad(it, "pattern tail", sizeof(*it) + k);
}

static struct item *item_new(struct lane *l, uint64_t seq)
{
	uint32_t size = MIN_SIZE + rng_below(&l->r, MAX_SIZE - MIN_SIZE + 1);
	struct item *it = xmalloc(size);

	it->id = l->gen << 40 | (uint64_t)l->idx << 32 | seq;
	it->size = size;
	it->check = item_check(it->id, size);
	item_fill(it);
	return it;
}

/* Verify and free; NULL is an empty slot. Returns the ops done. */
static uint64_t item_drop(struct item *it)
{
	if (!it)
		return 0;
	item_verify(it);
	free(it);
	return 1;
}

static void *gen_thread(void *p)
{
	struct lane *l = p;
	uint64_t n = l->o->ops, ops = 0, k;

	if (l->o->pin)
		bench_pin(l->idx);
	for (k = 0; k < n; k++) {
		struct item *it = item_new(l, k);
		uint64_t x = rng_next(&l->r);

		ops++;
		if (x & 1) {
			ops += item_drop(atomic_exchange(&exch[(x >> 32) % XSLOTS], it));
		} else {
			uint32_t i = (uint32_t)(x >> 32) % LSLOTS;

			ops += item_drop(l->local[i]);
			l->local[i] = it;
		}
		if ((k & 1023) == 1023 && l->deadline > 0 && now_sec() > l->deadline)
			break;
	}
	l->ops += ops;
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "threadgen", .threads = 1, .ops = 4000, .seed = 42,
	};
	static struct lane lane[MAX_THREADS];
	static pthread_t tid[MAX_THREADS];
	uint64_t gens, ops = 0;
	double t0, t1;
	char param[32];

	gens = bench_take_u64(&o, &argc, argv, "--gens", 50);
	bench_parse(&o, argc, argv, " [--gens N]");
	if (!gens || gens >= 1 << 24)
		bench_usage(&o, " [--gens 1..16M]");
	t0 = now_sec();
	for (int i = 0; i < o.threads; i++) {
		lane[i] = (struct lane){
			.o = &o, .idx = i,
			.deadline = o.max_secs > 0 ? t0 + o.max_secs : 0,
		};
		rng_init(&lane[i].r, o.seed, (uint64_t)i);
	}
	for (uint64_t g = 0; g < gens; g++) {
		for (int i = 0; i < o.threads; i++) {
			lane[i].gen = g;
			if (pthread_create(&tid[i], NULL, gen_thread, &lane[i])) {
				fprintf(stderr, "threadgen: pthread_create failed\n");
				exit(1);
			}
		}
		for (int i = 0; i < o.threads; i++)
			pthread_join(tid[i], NULL);
		if (o.max_secs > 0 && now_sec() > t0 + o.max_secs)
			break;
	}
	for (int i = 0; i < o.threads; i++) {
		for (int k = 0; k < LSLOTS; k++)
			ops += item_drop(lane[i].local[k]);
		ops += lane[i].ops;
	}
	for (int k = 0; k < XSLOTS; k++)
		ops += item_drop(atomic_exchange(&exch[k], NULL));
	t1 = now_sec();
	snprintf(param, sizeof(param), "%llugen", (unsigned long long)gens);
	bench_report(&o, param, ops, t1 - t0);
	return 0;
}
