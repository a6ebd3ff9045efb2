// SPDX-License-Identifier: MIT
/*
 * Misuses of sefer's blocks that a memory checker must report, one per mode, through the
 * sefer_* calls (so the same program serves Valgrind, with CONFIG_VALGRIND, and ASan, with
 * CONFIG_SANITIZE_ADDRESS). check-valgrind.sh and check-asan-poison.sh run each mode and assert
 * what the checker says. Every mode prints the block it misuses ("block 0x... size N") so the
 * scripts can check that the report names that block.
 *
 *   misuse MODE     uaf | overflow | overflow-tail | leak | uninit | large-uaf |
 *                   large-overflow | realloc-uaf | slack | clean
 *                   heap-destroy-uaf | heap-clean          (with CONFIG_HEAPS)
 *
 * slack, clean and heap-clean use their blocks correctly: the checker must report nothing.
 *
 * Each mode misuses a block that is the first of its page (as a fresh process's first block of
 * a class is), so what a checker says of such a block is what is checked; the leak mode leaks
 * one of every kind besides. Reads after free are 32 bytes or more into the block:
 * memcheck describes an address a little past a live block's end (it allows for a redzone,
 * seen at 8 and 20 bytes) as lying after that block, and sefer's blocks have no redzones.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sefer.h"

/* Reads the optimiser cannot drop. */
static volatile unsigned char sink;

static void *held; /* a block live until the end (leak mode) */

#ifdef CONFIG_HEAPS
static bool count_block(void *block, size_t usable, void *arg)
{
	(void)block;
	(void)usable;
	++*(size_t *)arg;
	return true;
}

/* The first-class heap modes: a block of a destroyed heap, and a heap's whole life. */
static int heap_mode(const char *mode)
{
	struct sefer_heap *h = sefer_heap_new();
	unsigned char *p, *q;
	size_t n = 0;

	if (!strcmp(mode, "heap-destroy-uaf")) {
		/* a read of a block after its heap was destroyed */
		p = sefer_heap_malloc(h, 64);
		printf("heap-destroy-uaf: block %p size 64\n", (void *)p);
		memset(p, 1, 64);
		sefer_heap_destroy(h);
		sink = p[32];
		return 0;
	}
	if (!strcmp(mode, "heap-clean")) {
		/* every call of a heap used correctly, then its memory reused by the default heap
		 */
		p = sefer_heap_calloc(h, 3, 100);
		for (size_t i = 0; i < 300; i++)
			n += p[i];
		p = sefer_heap_realloc(h, p, 3000);
		memset(p + 300, 2, 2700);
		q = sefer_heap_aligned_alloc(h, 512, 700);
		memset(q, 3, 700);
		for (int i = 0; i < 500; i++)
			memset(sefer_heap_malloc(h, (size_t)i % 900 + 1), 4, (size_t)i % 900 + 1);
		memset(sefer_heap_malloc(h, 2 << 20), 5, 2 << 20);
		sefer_free(q);
		sefer_heap_visit(h, count_block, &n);
		sefer_heap_destroy(h);
		for (int i = 0; i < 500; i++) {
			q = sefer_malloc((size_t)i % 900 + 1);
			memset(q, 6, (size_t)i % 900 + 1);
			sefer_free(q);
		}
		printf("heap-clean: %zu\n", n);
		return 0;
	}
	sefer_heap_destroy(h);
	return -1;
}
#else
static int heap_mode(const char *mode)
{
	(void)mode;
	return -1;
}
#endif

static void *block(size_t size, const char *what)
{
	void *p = sefer_malloc(size);

	printf("%s: block %p size %zu\n", what, p, size);
	return p;
}

/*
 * Blocks nothing points to at exit, one of each kind whose address sefer's metadata knows:
 * the first block of the process's first segment and page (100 -> 112 bytes), a block from
 * the middle of a page (200 -> 224), a large block (5 MiB), a first-class heap's block (300 ->
 * 320, CONFIG_HEAPS) and, with the large cache, a large block placed in a cached segment.
 */
static void leak_mode(void)
{
	uintptr_t seg;
	void *p;

	p = block(100, "leak-first");
	memset(p, 2, 100);
	held = sefer_malloc(200); /* the next 200-byte block is not its page's first */
	p = block(200, "leak-middle");
	memset(p, 2, 200);
	p = block(5 << 20, "leak-large");
	memset(p, 2, 4096);
#ifdef CONFIG_HEAPS
	p = sefer_heap_malloc(sefer_heap_new(), 300);
	printf("leak-heap: block %p size 300\n", p);
	memset(p, 2, 300);
#endif
	p = sefer_malloc(8 << 20);
	seg = (uintptr_t)p & ~(uintptr_t)((4 << 20) - 1);
	sefer_free(p);
	p = block((8 << 20) - 4096, "leak-recached");
	printf("leak-recached: %s segment\n",
	       ((uintptr_t)p & ~(uintptr_t)((4 << 20) - 1)) == seg ? "the cached" : "a new");
	memset(p, 2, 4096);
	p = NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clean";
	unsigned char *p;

	setvbuf(stdout, NULL, _IONBF, 0); /* the block's line before the checker's report */

	if (!strcmp(mode, "uaf")) {
		/* a read of a freed small block */
		p = block(64, "uaf");
		memset(p, 1, 64);
		sefer_free(p);
		sink = p[32];
	} else if (!strcmp(mode, "overflow")) {
		/* a write one byte past a small block whose size is its class's (no slack) */
		p = block(64, "overflow");
		p[64] = 1;
		sefer_free(p);
	} else if (!strcmp(mode, "overflow-tail")) {
		/* a write one byte past the requested size, inside the class's slack (50 -> 64) */
		p = block(50, "overflow-tail");
		p[50] = 1;
		sefer_free(p);
	} else if (!strcmp(mode, "leak")) {
		leak_mode();
	} else if (!strcmp(mode, "uninit")) {
		/* a branch on a byte malloc never initialised */
		p = block(32, "uninit");
		if (p[5] == 42)
			puts("forty-two");
		sefer_free(p);
	} else if (!strcmp(mode, "large-uaf")) {
		/* a read of a freed large block (its own segment) */
		p = sefer_malloc(3 << 20);
		printf("large-uaf: block %p size %d\n", (void *)p, 3 << 20);
		memset(p, 3, 3 << 20);
		sefer_free(p);
		sink = p[4096];
	} else if (!strcmp(mode, "large-overflow")) {
		/* a write one byte past the requested size of a large block */
		size_t n = (1 << 20) + 1000;

		p = sefer_malloc(n);
		printf("large-overflow: block %p size %zu\n", (void *)p, n);
		p[n] = 1;
		sefer_free(p);
	} else if (!strcmp(mode, "realloc-uaf")) {
		/* the old block of a realloc that moved is freed */
		unsigned char *q;

		p = block(64, "realloc-uaf");
		memset(p, 4, 64);
		q = sefer_realloc(p, 4000);
		if (q == p)
			return 2;
		sink = p[40];
		sefer_free(q);
	} else if (!strcmp(mode, "slack")) {
		/* sefer_usable_size() says the whole block is the program's: writing it is fine */
		size_t n;

		p = block(50, "slack");
		n = sefer_usable_size(p);
		memset(p, 9, n);
		sink = p[n - 1];
		sefer_free(p);
		p = sefer_malloc(0); /* none of it is the program's until it asks */
		n = sefer_usable_size(p);
		memset(p, 9, n);
		sefer_free(p);
	} else if (!strcmp(mode, "clean")) {
		/* everything used correctly: the checker must say nothing */
		unsigned char *q, *big;
		size_t i, sum = 0;

		p = sefer_calloc(10, 7);
		for (i = 0; i < 70; i++)
			sum += p[i]; /* calloc'd: defined zeros */
		p = sefer_realloc(p, 5000); /* moves: the 70 bytes copied */
		for (i = 0; i < 70; i++)
			sum += p[i];
		memset(p + 70, 5, 5000 - 70);
		p = sefer_realloc(p, 4000); /* in place */
		q = sefer_aligned_alloc(256, 300);
		memset(q, 6, 300);
		big = sefer_calloc(1, 5 << 20);
		sum += big[(5 << 20) - 1];
		big = sefer_realloc(big, 9 << 20);
		big[(9 << 20) - 1] = 7;
		for (i = 0; i < 2000; i++) {
			void *t = sefer_malloc(i % 700 + 1);

			memset(t, 8, i % 700 + 1);
			sefer_free(t);
		}
		sum += p[3999] + q[299];
		sefer_free(p);
		sefer_free(q);
		sefer_free(big);
		printf("clean: %zu\n", sum);
	} else if (heap_mode(mode) < 0) {
		fprintf(stderr, "misuse: unknown mode %s\n", mode);
		return 2;
	}
	sefer_free(held);
	return 0;
}
