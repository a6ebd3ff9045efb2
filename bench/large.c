// SPDX-License-Identifier: MIT
/*
 * large: allocate and free one large block (default 4 MiB), repeated.
 *
 * Models I/O buffers, image and column buffers, arena chunks: requests far
 * above the small size classes that go to the OS or to a large-block cache.
 * By default only the first and last byte of each block are written, so the
 * figure measures the allocator (mmap/munmap, cache hit, zeroing it may do),
 * not the kernel's page-fault path for memory the program would fill; with
 * --touch-pages one byte per 4 KiB page is written instead.
 *
 *   large --size 16M --ops 2000 --threads 2 [--pin] [--touch-pages]
 *
 * --ops is the number of alloc/free pairs per thread; reported ops count
 * malloc and free.
 */
#include "common.h"

static void worker(struct worker *w)
{
	size_t size = w->o->size;
	uint64_t iters = w->o->ops, i;

	for (i = 0; i < iters; i++) {
		unsigned char *p;

		/* the clock every 256 pairs: read every pair, it took 60% of a cached pair */
		if ((i & 255) == 255 && bench_expired(w))
			break;
		p = xmalloc(size);

		if (w->o->touch_pages) {
			for (size_t off = 0; off < size; off += 4096)
				p[off] = (unsigned char)i;
		}
		touch(p, size);
		free(p);
	}
	w->ops = i * 2;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.name = "large", .threads = 1, .ops = 1000, .seed = 42,
		.size = 4 << 20,
	};
	uint64_t ops;
	double secs;
	char param[32];

	bench_parse(&o, argc, argv, " [--size BYTES] [--touch-pages]");
	if (!o.size)
		bench_usage(&o, " [--size BYTES]");
	secs = bench_run_threads(&o, worker, NULL, &ops);
	if (o.size >= 1 << 20 && !(o.size & ((1 << 20) - 1)))
		snprintf(param, sizeof(param), "%zuM%s", o.size >> 20,
			 o.touch_pages ? "-pages" : "");
	else
		snprintf(param, sizeof(param), "%zu%s", o.size,
			 o.touch_pages ? "-pages" : "");
	bench_report(&o, param, ops, secs);
	return 0;
}
