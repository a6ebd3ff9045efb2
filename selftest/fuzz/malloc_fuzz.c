// SPDX-License-Identifier: MIT
/*
 * libFuzzer target over streams of allocator calls on the sefer_* API (the malloc face is off
 * in this build: ASan owns malloc). Each input is read four bytes at a time, (op, slot, a, b):
 *   op % 10:  0-1 malloc, 2 calloc, 3 realloc, 4 aligned_alloc, 5 posix_memalign, 6 free,
 *             7 free_sized, 8 usable size, 9 a request that must fail (too big, overflowing,
 *             a bad alignment) and leave the heap and the slot as they were;
 *   slot:     one of NSLOTS live blocks (a busy slot is freed first);
 *   a, b:     the size: 2^(b % 23) plus a/4 sixty-fourths of it, or one less, or one more,
 *             or b itself, at most MAX_SIZE: every size class and large blocks of a few MiB.
 * Every live block carries a pattern derived from a tag unique to its allocation, written at
 * allocation and checked at free and realloc (the preserved part); calloc's block is checked
 * for zeros first. sefer_check_heap() runs every CHECK_EVERY operations and after the input's
 * last free, and must find nothing. Any mismatch aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sefer.h>

#define NSLOTS 32
#define MAX_SIZE ((size_t)6 << 20)
#define MAX_ALIGN_SHIFT 24	/* aligned requests up to 16 MiB: address space, not memory */
#define CHECK_EVERY 8
/* A block of up to FULL_WORDS words carries its pattern in every word; a bigger one in its
 * first and last EDGE_WORDS words and every STRIDE-th word, so a 6 MiB block stays cheap. */
#define FULL_WORDS 8192
#define EDGE_WORDS 1024
#define STRIDE 509

struct slot {
	unsigned char *p;
	size_t n;
	uint64_t tag;
};

static struct slot slots[NSLOTS];
static uint64_t next_tag;
static int trace = -1;	/* MALLOC_FUZZ_TRACE=1: each step on stderr, to replay a crash */

static uint64_t pat(uint64_t tag, size_t i)
{
	uint64_t x = tag * 0x9e3779b97f4a7c15ULL ^ (i + 1) * 0xbf58476d1ce4e5b9ULL;

	return x ^ x >> 29;
}

/* The first patterned word at or after i, in a block of `words` words. */
static size_t next_word(size_t i, size_t words)
{
	size_t s;

	if (words <= FULL_WORDS || i < EDGE_WORDS || i + EDGE_WORDS >= words)
		return i;
	s = (i + STRIDE - 1) / STRIDE * STRIDE;
	return s < words - EDGE_WORDS ? s : words - EDGE_WORDS;
}

static void fail(const char *what, const struct slot *s, size_t off)
{
	fprintf(stderr, "malloc-fuzz: %s: block %p of %zu bytes (tag %llu), offset %zu\n", what,
		(void *)s->p, s->n, (unsigned long long)s->tag, off);
	abort();
}

static void fill(const struct slot *s)
{
	size_t words = s->n / 8;
	uint64_t *w = (uint64_t *)s->p;

	for (size_t i = next_word(0, words); i < words; i = next_word(i + 1, words))
		w[i] = pat(s->tag, i);
	for (size_t k = words * 8; k < s->n; k++)
		s->p[k] = (unsigned char)(pat(s->tag, words) >> (k % 8 * 8));
}

/* Check the first `limit` bytes of s's pattern (zeros when `zero`) at s->p. */
static void verify(const struct slot *s, size_t limit, int zero)
{
	size_t words = s->n / 8;

	for (size_t i = next_word(0, words); i < words; i = next_word(i + 1, words)) {
		uint64_t want = zero ? 0 : pat(s->tag, i);

		if (i * 8 + 8 <= limit) {
			if (((uint64_t *)s->p)[i] != want)
				fail(zero ? "calloc block not zero" : "pattern overwritten", s, i * 8);
			continue;
		}
		for (size_t k = i * 8; k < limit; k++)
			if (s->p[k] != (unsigned char)(want >> (k % 8 * 8)))
				fail(zero ? "calloc block not zero" : "pattern overwritten", s, k);
		return;
	}
	for (size_t k = words * 8; k < s->n && k < limit; k++)
		if (s->p[k] != (zero ? 0 : (unsigned char)(pat(s->tag, words) >> (k % 8 * 8))))
			fail(zero ? "calloc block not zero" : "pattern overwritten", s, k);
}

static void took(struct slot *s, void *p, size_t n, size_t align)
{
	if (!p) {
		fprintf(stderr, "malloc-fuzz: allocation of %zu bytes (align %zu) failed\n", n,
			align);
		abort();
	}
	if ((uintptr_t)p % align || !sefer_owns(p) || sefer_usable_size(p) < n) {
		fprintf(stderr, "malloc-fuzz: block %p of %zu bytes: align %zu, owned %d, "
			"usable %zu\n", p, n, align, sefer_owns(p), sefer_usable_size(p));
		abort();
	}
	s->p = p;
	s->n = n;
	s->tag = ++next_tag;
	if (trace)
		fprintf(stderr, "  got %p (usable %zu)\n", p, sefer_usable_size(p));
}

static void release(struct slot *s, int sized)
{
	if (!s->p)
		return;
	verify(s, s->n, 0);
	if (trace)
		fprintf(stderr, "  free %p (%zu bytes, usable %zu)\n", (void *)s->p, s->n,
			sefer_usable_size(s->p));
	if (sized)
		sefer_free_sized(s->p, s->n);
	else
		sefer_free(s->p);
	s->p = NULL;
}

static size_t size_of(uint8_t a, uint8_t b)
{
	size_t base = (size_t)1 << (b % 23);
	size_t n = base + (base * (size_t)(a >> 2) >> 6);

	switch (a & 3) {
	case 1: n--; break;
	case 2: n++; break;
	case 3: n = b; break;
	}
	return n < MAX_SIZE ? n : MAX_SIZE;
}

/* Requests that must fail with NULL (or an error) and change nothing. */
static void must_fail(struct slot *s, uint8_t a)
{
	void *q = NULL;
	int r;

	switch (a % 5) {
	case 0:
		q = sefer_malloc(SIZE_MAX - a);
		break;
	case 1:
		q = sefer_calloc(SIZE_MAX / 2 + 1 + a, 2);
		break;
	case 2:
		if (s->p) {
			q = sefer_realloc(s->p, (size_t)PTRDIFF_MAX + 1 + a);
			verify(s, s->n, 0);
		}
		break;
	case 3:
		q = sefer_aligned_alloc((size_t)3 << (a % 20), 64);	/* not a power of two */
		break;
	case 4:
		r = sefer_posix_memalign(&q, 24, 64);
		if (r != EINVAL) {
			fprintf(stderr, "malloc-fuzz: posix_memalign(24) returned %d\n", r);
			abort();
		}
		break;
	}
	if (q) {
		fprintf(stderr, "malloc-fuzz: impossible request %u succeeded: %p\n", a % 5, q);
		abort();
	}
}

static void step(uint8_t op, uint8_t idx, uint8_t a, uint8_t b)
{
	struct slot *s = &slots[idx % NSLOTS];
	size_t n = size_of(a, b), align;
	void *p;

	if (trace)
		fprintf(stderr, "op %u slot %u (%p, %zu) a %u b %u size %zu\n", op % 10,
			idx % NSLOTS, (void *)s->p, s->n, a, b, n);

	switch (op % 10) {
	case 0: case 1:
		release(s, 0);
		took(s, sefer_malloc(n), n, 1);
		break;
	case 2: {
		size_t k = 1 + (idx / NSLOTS % 8);

		release(s, 0);
		n /= k;
		took(s, sefer_calloc(k, n), k * n, 1);
		verify(s, s->n, 1);
		break;
	}
	case 3:
		if (!s->p) {
			took(s, sefer_realloc(NULL, n), n, 1);
			break;
		}
		if (n == 0) {	/* realloc(p, 0) frees, as glibc's does */
			verify(s, s->n, 0);
			if (sefer_realloc(s->p, 0))
				fail("realloc to 0 returned a block", s, 0);
			s->p = NULL;
			return;
		}
		p = sefer_realloc(s->p, n);
		if (!p)
			fail("realloc failed", s, 0);
		s->p = p;
		verify(s, n < s->n ? n : s->n, 0);
		took(s, p, n, 1);
		break;
	case 4:
		align = (size_t)1 << (idx / NSLOTS % 8 * 3 + a % 3) % (MAX_ALIGN_SHIFT + 1);
		release(s, 0);
		took(s, sefer_aligned_alloc(align, n), n, align);
		break;
	case 5:
		align = (size_t)1 << (3 + (idx / NSLOTS % 8 * 3 + a % 3) % (MAX_ALIGN_SHIFT - 2));
		release(s, 0);
		p = NULL;
		if (sefer_posix_memalign(&p, align, n))
			p = NULL;
		took(s, p, n, align);
		break;
	case 6:
		release(s, 0);
		return;
	case 7:
		release(s, 1);
		return;
	case 8:
		if (s->p) {
			size_t u = sefer_usable_size(s->p);

			if (u < s->n)
				fail("usable size below the request", s, u);
			if (u > s->n)
				s->p[u - 1] = 0xa5;	/* the slack is the caller's to write */
		}
		return;
	case 9:
		must_fail(s, a);
		return;
	}
	fill(s);
}

static void check_heap(void)
{
	size_t bad = sefer_check_heap();

	if (bad) {
		fprintf(stderr, "malloc-fuzz: sefer_check_heap found %zu problem(s)\n", bad);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ops = 0;

	if (trace < 0)
		trace = getenv("MALLOC_FUZZ_TRACE") != NULL;
	for (size_t i = 0; i + 3 < size; i += 4) {
		step(data[i], data[i + 1], data[i + 2], data[i + 3]);
		if (++ops % CHECK_EVERY == 0)
			check_heap();
	}
	for (int i = 0; i < NSLOTS; i++)
		release(&slots[i], 0);
	check_heap();
	return 0;
}
