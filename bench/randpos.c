// SPDX-License-Identifier: MIT
/*
 * randpos: random-position, random-size churn over a large live array.
 *
 * Each worker owns 10000 slots, filled first. A step picks a slot at random,
 * checks the pattern of the block in it, frees it, and mallocs a block of a
 * new random size in its place: 80% 8..256 B, 15% 257 B..1 KiB, 5% 1..4 KiB.
 * Because the victim is anywhere in a live set of about 3 MiB, frees land
 * all over the heap: pages keep going from full to not quite full and back,
 * unlike a stack-like churn where the same few pages are recycled. Workers
 * are independent (no block crosses threads).
 *
 * Every block carries a pattern derived from its slot and a sequence number:
 * an 8-byte tag at the start, the tag's complement in the last 8 bytes (when
 * the block has 16 or more), and one byte in every 64. It is checked before
 * the block is freed; a mismatch aborts with the slot, the offset and the
 * bytes, as it means two live blocks overlap or the allocator wrote into a
 * live block.
 *
 *   randpos --ops 1M --threads 2 [--pin] [--seed N]
 *
 * --ops is the number of steps per thread; reported ops count every malloc
 * and free (the prefill and the final frees too).
 */
#include "common.h"

#define SLOTS	10000

struct blk {
	unsigned char *p;
	uint32_t size;
	uint32_t seq;
};

static size_t randpos_size(struct rng *r)
{
	uint64_t x = rng_next(r);
	uint32_t pick = (uint32_t)(x % 100);
	uint32_t hi = (uint32_t)(x >> 32);

	if (pick < 80)
		return 8 + hi % (256 - 8 + 1);
	if (pick < 95)
		return 257 + hi % (1024 - 257 + 1);
	return 1025 + hi % (4096 - 1025 + 1);
}

static uint64_t blk_tag(uint32_t slot, uint32_t seq, uint32_t size)
{
	uint64_t t = ((uint64_t)seq << 32 | slot) * 0x9e3779b97f4a7c15ull;

	return t ^ size;
}

static void fill(struct blk *b, uint32_t slot)
{
	uint64_t tag = blk_tag(slot, b->seq, b->size), inv = ~tag;
	size_t n = b->size;

	memcpy(b->p, &tag, n < 8 ? n : 8);
	if (n >= 16)
		memcpy(b->p + n - 8, &inv, 8);
	for (size_t off = 64; off + 8 < n; off += 64)
		b->p[off] = (unsigned char)(tag >> (off / 64 % 8 * 8)) ^ (unsigned char)off;
}

static void corrupt(const struct blk *b, uint32_t slot, size_t off,
		    unsigned want, unsigned got)
{
	fprintf(stderr,
		"randpos: block %p (slot %u, %u bytes, generation %u) corrupted at "
		"offset %zu: expected 0x%02x, found 0x%02x\n",
		(void *)b->p, slot, b->size, b->seq, off, want, got);
	abort();
}

static void check(const struct blk *b, uint32_t slot)
{
	uint64_t tag = blk_tag(slot, b->seq, b->size), inv = ~tag;
	size_t n = b->size;
	unsigned char want[8];

	memcpy(want, &tag, 8);
	for (size_t i = 0; i < n && i < 8; i++)
		if (b->p[i] != want[i])
			corrupt(b, slot, i, want[i], b->p[i]);
	if (n >= 16) {
		memcpy(want, &inv, 8);
		for (size_t i = 0; i < 8; i++)
			if (b->p[n - 8 + i] != want[i])
				corrupt(b, slot, n - 8 + i, want[i], b->p[n - 8 + i]);
	}
	for (size_t off = 64; off + 8 < n; off += 64) {
		unsigned char w = (unsigned char)(tag >> (off / 64 % 8 * 8)) ^
				  (unsigned char)off;

		if (b->p[off] != w)
			corrupt(b, slot, off, w, b->p[off]);
	}
}

static void worker(struct worker *w)
{
	struct blk *slot = xmalloc(SLOTS * sizeof(*slot));
	uint64_t steps = w->o->ops, ops = 0, done = 0;
	struct rng r;

	rng_init(&r, w->o->seed, (uint64_t)w->idx);
	for (uint32_t i = 0; i < SLOTS; i++) {
		slot[i].size = (uint32_t)randpos_size(&r);
		slot[i].seq = 0;
		slot[i].p = xmalloc(slot[i].size);
		fill(&slot[i], i);
	}
	ops += SLOTS;
	while (done < steps) {
		uint32_t i = rng_below(&r, SLOTS);
		struct blk *b = &slot[i];

		check(b, i);
		free(b->p);
		b->size = (uint32_t)randpos_size(&r);
		b->seq++;
		b->p = xmalloc(b->size);
		fill(b, i);
		if ((++done & 4095) == 0 && bench_expired(w))
			break;
	}
	ops += 2 * done;
	for (uint32_t i = 0; i < SLOTS; i++) {
		check(&slot[i], i);
		free(slot[i].p);
	}
	ops += SLOTS;
	free(slot);
	w->ops = ops;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "randpos", .threads = 1, .ops = 1 << 20, .seed = 42,
	};
	uint64_t ops;
	double secs;

	bench_parse(&o, argc, argv, NULL);
	secs = bench_run_threads(&o, worker, NULL, &ops);
	bench_report(&o, "8..4K", ops, secs);
	return 0;
}
