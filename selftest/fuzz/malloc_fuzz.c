// SPDX-License-Identifier: MIT
/*
 * libFuzzer target over streams of allocator calls on the sefer_* API (the malloc face is off
 * in this build: ASan owns malloc). Each input is read four bytes at a time, (op, slot, a, b):
 *   op % 16:  0-1 malloc, 2 calloc, 3 realloc, 4 aligned_alloc, 5 posix_memalign, 6 free,
 *             7 free_sized (free_aligned_sized for an aligned block: CONFIG_HARDENED checks
 *             the contract), 8 usable size, 9 a request that must fail (too big, overflowing,
 *             a bad alignment) and leave the heap and the slot as they were;
 *             first-class heaps (CONFIG_HEAPS), heap number a % NHEAPS, made on first use:
 *             10 sefer_heap_malloc, 11 _calloc, 12 _realloc (the block moves into that heap),
 *             13 _aligned_alloc, 14 sefer_heap_destroy (every slot of the heap is checked,
 *             and the heap visited as in 15, then dropped without a free), 15 sefer_heap_visit, which must report exactly
 *             the slots of that heap, then sefer_heap_collect (forced when b is odd);
 *             An op byte of 0xf0 or more with op % 16 at most 8 runs that call on a second
 *             thread, the helper, while this one waits (one thread at a time: the input stays
 *             deterministic): its blocks are the helper's heap's, and frees, reallocs and
 *             usable sizes of the other thread's blocks cross threads both ways;
 *   slot:     one of NSLOTS live blocks (a busy slot is freed first);
 *   a, b:     the size: 2^(b % 23) plus a/4 sixty-fourths of it, or one less, or one more,
 *             or b itself, at most MAX_SIZE: every size class and large blocks of a few MiB.
 * Every live block carries a pattern derived from a tag unique to its allocation, written at
 * allocation and checked at free and realloc (the preserved part); calloc's block is checked
 * for zeros first. sefer_check_heap() runs every CHECK_EVERY operations and after the input's
 * last free, and must find nothing. Each slot knows its heap (-1: the thread's own); a realloc
 * that moves a block puts it in the heap it was called for. At the end of an input the
 * remaining blocks are freed, the heaps destroyed and both threads' cached memory given back
 * (sefer_collect), so that an input does not depend on the ones before it: a crash replays
 * from its input alone (only the purge clocks are the machine's). Any mismatch aborts, and so
 * does a block handed out that overlaps a live one.
 *
 * Built with MALLOC_FUZZ_FAULTS (check-malloc-fuzz-faults: CONFIG_FAULT_INJECTION, run with
 * SEFER_FAIL_*), an allocation may fail, but only as the malloc face promises: NULL (or
 * posix_memalign's ENOMEM) with errno = ENOMEM, during a call in which a fault was injected
 * (core/fault.h counts them). The slot is then empty, or for a realloc keeps its old block,
 * which must be intact; anything else still aborts. At exit the faults and the outcomes of the
 * calls they hit are printed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sefer.h>

#ifdef MALLOC_FUZZ_FAULTS
#include "core/fault.h"
#endif

#define NSLOTS 32
#define NHEAPS 4
#define MAX_SIZE ((size_t)6 << 20)
#define MAX_ALIGN_SHIFT 24	/* aligned requests up to 16 MiB: address space, not memory */
#define CHECK_EVERY 8
/* A block of up to FULL_WORDS words carries its pattern in every word; a bigger one in its
 * first and last EDGE_WORDS words and in one word of every STRIDE, at a phase that its tag
 * picks: a 6 MiB block faults in one OS page of four, not all of them (first-touch faults
 * were three quarters of the corpus replay: 43 s against 17 s). The phase moves one word
 * from one tag to the next, so the page of four that is checked moves every 512 tags. */
#define FULL_WORDS 8192
#define EDGE_WORDS 1024
#define STRIDE 2039

struct slot {
	unsigned char *p;
	size_t n;
	size_t align; /* what aligned_alloc or posix_memalign was asked for; 1 otherwise */
	uint64_t tag;
	int heap; /* index into heaps[], or -1: the thread's own heap */
};

static struct slot slots[NSLOTS];
static struct sefer_heap *heaps[NHEAPS];
static uint64_t next_tag;
static int trace = -1;	/* MALLOC_FUZZ_TRACE=1: each step on stderr, to replay a crash */

/*
 * Fault injection: faults injected before the current call (call_begin()), and the outcomes
 * of the calls during which one was: failed with ENOMEM, or succeeded all the same (a failed
 * remap, purge, protect or populate that the core worked around).
 */
static uint64_t faults_before;
static uint64_t calls_failed, calls_survived, faults_in_calls;

static uint64_t faults_now(void)
{
#ifdef MALLOC_FUZZ_FAULTS
	return sefer__fault_injected_total();
#else
	return 0;
#endif
}

static void call_begin(void)
{
	faults_before = faults_now();
	errno = 0;
}

/* Whether the call that gave p (err: its errno, or posix_memalign's result) may fail so. */
static bool failed_as_promised(const void *p, int err)
{
	bool faulted = faults_now() != faults_before;

	faults_in_calls += faults_now() - faults_before;
	if (p) {
		calls_survived += faulted;
		return false;
	}
	if (!faulted || err != ENOMEM)
		return false;
	calls_failed++;
	if (trace)
		fprintf(stderr, "  failed with ENOMEM under an injected fault\n");
	return true;
}

#ifdef MALLOC_FUZZ_FAULTS
__attribute__((destructor)) static void fault_summary(void)
{
	fprintf(stderr, "malloc-fuzz: faults injected: %llu (", (unsigned long long)faults_now());
	for (int op = 0; op < FAULT_OPS; op++)
		fprintf(stderr, "%s%s %llu of %llu calls", op ? ", " : "",
			sefer__fault_op_name((enum fault_op)op),
			(unsigned long long)sefer__fault_injected((enum fault_op)op),
			(unsigned long long)sefer__fault_calls((enum fault_op)op));
	fprintf(stderr, "); %llu in allocation calls: %llu calls failed with NULL/ENOMEM, %llu "
		"succeeded; %llu in frees, collects and heap destroys\n",
		(unsigned long long)faults_in_calls, (unsigned long long)calls_failed,
		(unsigned long long)calls_survived,
		(unsigned long long)(faults_now() - faults_in_calls));
}
#endif

static uint64_t pat(uint64_t tag, size_t i)
{
	uint64_t x = tag * 0x9e3779b97f4a7c15ULL ^ (i + 1) * 0xbf58476d1ce4e5b9ULL;

	return x ^ x >> 29;
}

/* The first patterned word at or after i, in a block of `words` words with tag `tag`. */
static size_t next_word(size_t i, size_t words, uint64_t tag)
{
	size_t phase = tag % STRIDE, s;

	if (words <= FULL_WORDS || i < EDGE_WORDS || i + EDGE_WORDS >= words)
		return i;
	s = i + (phase + STRIDE - i % STRIDE) % STRIDE;
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

	if (!s->p)
		return; /* an allocation failed under an injected fault */
	for (size_t i = next_word(0, words, s->tag); i < words; i = next_word(i + 1, words, s->tag))
		w[i] = pat(s->tag, i);
	for (size_t k = words * 8; k < s->n; k++)
		s->p[k] = (unsigned char)(pat(s->tag, words) >> (k % 8 * 8));
}

/* Check the first `limit` bytes of s's pattern (zeros when `zero`) at s->p. */
static void verify(const struct slot *s, size_t limit, int zero)
{
	size_t words = s->n / 8;

	if (!s->p)
		return;
	for (size_t i = next_word(0, words, s->tag); i < words;
	     i = next_word(i + 1, words, s->tag)) {
		uint64_t want = zero ? 0 : pat(s->tag, i);

		if (i * 8 + 8 <= limit) {
			if (((uint64_t *)s->p)[i] != want)
				fail(zero ? "calloc block not zero" : "pattern overwritten", s,
				     i * 8);
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

/* Whether [p, p + n) overlaps a live block other than s's. */
static const struct slot *overlap(const struct slot *s, const void *p, size_t n)
{
	for (int i = 0; i < NSLOTS; i++) {
		const struct slot *o = &slots[i];

		if (o != s && o->p && (const unsigned char *)p < o->p + o->n &&
		    o->p < (const unsigned char *)p + n)
			return o;
	}
	return NULL;
}

/* s's new block p (err: the call's errno); false when it failed as promised (s->p NULL). */
static bool took(struct slot *s, void *p, size_t n, size_t align, int err)
{
	const struct slot *o;

	if (failed_as_promised(p, err)) {
		s->p = NULL;
		return false;
	}
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
	o = overlap(s, p, n);
	if (o) {
		fprintf(stderr, "malloc-fuzz: block %p of %zu bytes handed out twice: ", p, n);
		fail("it overlaps a live block", o, 0);
	}
	s->p = p;
	s->n = n;
	s->tag = ++next_tag;
	s->align = align;
	s->heap = -1;
	if (trace)
		fprintf(stderr, "  got %p (usable %zu)\n", p, sefer_usable_size(p));
	return true;
}

static void release(struct slot *s, int sized)
{
	if (!s->p)
		return;
	verify(s, s->n, 0);
	if (trace)
		fprintf(stderr, "  free %p (%zu bytes, usable %zu)\n", (void *)s->p, s->n,
			sefer_usable_size(s->p));
	if (!sized)
		sefer_free(s->p);
	else if (s->align > 1) /* C23: an aligned block's sized free names its alignment */
		sefer_free_aligned_sized(s->p, s->align, s->n);
	else
		sefer_free_sized(s->p, s->n);
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

struct visit_seen {
	int heap;
	size_t seen;
};

/* sefer_heap_visit's callback: block must be a slot of the visited heap, seen once. */
static bool visited(void *block, size_t usable, void *arg)
{
	struct visit_seen *v = arg;

	for (int i = 0; i < NSLOTS; i++) {
		if (slots[i].p != block)
			continue;
		if (slots[i].heap != v->heap)
			fail("visit reported a block of another heap", &slots[i], 0);
		if (usable < slots[i].n)
			fail("visit reported a usable size below the request", &slots[i], usable);
		v->seen++;
		return true;
	}
	fprintf(stderr, "malloc-fuzz: visit of heap %d reported %p (usable %zu), no live block\n",
		v->heap, block, usable);
	abort();
}

/* Heap hi, made on first use; NULL when making it failed as promised (an injected fault). */
static struct sefer_heap *heap_at(int hi)
{
	if (heaps[hi])
		return heaps[hi];
	call_begin();
	heaps[hi] = sefer_heap_new();
	if (!heaps[hi] && !failed_as_promised(NULL, errno)) {
		fprintf(stderr, "malloc-fuzz: sefer_heap_new failed\n");
		abort();
	}
	return heaps[hi];
}

/* sefer_heap_visit must report exactly the live slots of heap hi: none lost, none extra. */
static void visit_check(int hi)
{
	struct visit_seen v = { hi, 0 };
	size_t want = 0;

	for (int i = 0; i < NSLOTS; i++)
		want += slots[i].p && slots[i].heap == hi;
	if (!sefer_heap_visit(heaps[hi], visited, &v) || v.seen != want) {
		fprintf(stderr, "malloc-fuzz: visit of heap %d saw %zu blocks of %zu\n", hi,
			v.seen, want);
		abort();
	}
}

static void heap_destroy(int hi)
{
	if (!heaps[hi])
		return;
	visit_check(hi);
	for (int i = 0; i < NSLOTS; i++) {
		if (slots[i].p && slots[i].heap == hi) {
			verify(&slots[i], slots[i].n, 0);
			slots[i].p = NULL; /* destroy frees it */
		}
	}
	if (trace)
		fprintf(stderr, "  destroy heap %d\n", hi);
	sefer_heap_destroy(heaps[hi]);
	heaps[hi] = NULL;
}

/* ops 10-15: the first-class heap calls, on heap a % NHEAPS. */
static void heap_step(unsigned op, struct slot *s, uint8_t a, uint8_t b, size_t n, unsigned k)
{
	int hi = a % NHEAPS;
	struct sefer_heap *h = NULL;
	size_t align;
	void *p;

	if (op <= 13 && !(h = heap_at(hi)))
		return; /* the heap could not be made: nothing else changes */
	switch (op) {
	case 10:
		release(s, 0);
		call_begin();
		p = sefer_heap_malloc(h, n);
		took(s, p, n, 1, errno);
		break;
	case 11:
		release(s, 0);
		n /= k + 1;
		call_begin();
		p = sefer_heap_calloc(h, k + 1, n);
		took(s, p, (k + 1) * n, 1, errno);
		verify(s, s->n, 1);
		break;
	case 12:
		if (!s->p) {
			call_begin();
			p = sefer_heap_realloc(h, NULL, n);
			took(s, p, n, 1, errno);
			break;
		}
		if (n == 0) {
			verify(s, s->n, 0);
			if (sefer_heap_realloc(h, s->p, 0))
				fail("heap realloc to 0 returned a block", s, 0);
			s->p = NULL;
			return;
		}
		call_begin();
		p = sefer_heap_realloc(h, s->p, n);
		if (failed_as_promised(p, errno)) {
			verify(s, s->n, 0); /* the old block stays, whole */
			return;
		}
		if (!p)
			fail("heap realloc failed", s, 0);
		s->p = p;
		verify(s, n < s->n ? n : s->n, 0);
		took(s, p, n, 1, 0);
		break;
	case 13:
		align = (size_t)1 << (k * 3 + b % 3) % (MAX_ALIGN_SHIFT + 1);
		release(s, 0);
		call_begin();
		p = sefer_heap_aligned_alloc(h, align, n);
		took(s, p, n, align, errno);
		break;
	case 14:
		heap_destroy(hi);
		return;
	case 15:
		if (!heaps[hi])
			return;
		visit_check(hi);
		sefer_heap_collect(heaps[hi], b & 1);
		return;
	}
	if (s->p)
		s->heap = hi;
	fill(s);
}

/* ---- the helper thread: runs one step at a time while the fuzzing thread waits ---- */
struct helper_step {
	uint8_t op, idx, a, b;
	bool collect; /* instead of the step: sefer_collect(true) on the helper's heap */
};

static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t helper_cond = PTHREAD_COND_INITIALIZER;
static struct helper_step *helper_job;

static void step(uint8_t op, uint8_t idx, uint8_t a, uint8_t b);

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&helper_lock);
	for (;;) {
		while (!helper_job)
			pthread_cond_wait(&helper_cond, &helper_lock);
		if (helper_job->collect)
			sefer_collect(true);
		else
			step(helper_job->op % 16, helper_job->idx, helper_job->a, helper_job->b);
		helper_job = NULL;
		pthread_cond_broadcast(&helper_cond);
	}
	return NULL;
}

static bool helper_started;

static void run_on_helper(struct helper_step job)
{
	static pthread_t helper;

	if (!helper_started) {
		if (pthread_create(&helper, NULL, helper_main, NULL)) {
			fprintf(stderr, "malloc-fuzz: no helper thread\n");
			abort();
		}
		helper_started = true;
	}
	pthread_mutex_lock(&helper_lock);
	helper_job = &job;
	pthread_cond_broadcast(&helper_cond);
	while (helper_job)
		pthread_cond_wait(&helper_cond, &helper_lock);
	pthread_mutex_unlock(&helper_lock);
}

static void step(uint8_t op, uint8_t idx, uint8_t a, uint8_t b)
{
	struct slot *s = &slots[idx % NSLOTS];
	size_t n = size_of(a, b), align;
	bool moved;
	int hi;
	void *p;

	if (trace)
		fprintf(stderr, "op %u slot %u (%p, %zu, heap %d) a %u b %u size %zu\n", op % 16,
			idx % NSLOTS, (void *)s->p, s->n, s->heap, a, b, n);
	if (op >= 0xf0 && op % 16 <= 8) {
		if (trace)
			fprintf(stderr, "on the helper thread:\n");
		run_on_helper((struct helper_step){ op, idx, a, b, false });
		return;
	}
	if (op % 16 >= 10) {
		heap_step(op % 16, s, a, b, n, idx / NSLOTS % 8);
		return;
	}


	switch (op % 16) {
	case 0: case 1:
		release(s, 0);
		call_begin();
		p = sefer_malloc(n);
		took(s, p, n, 1, errno);
		break;
	case 2: {
		size_t k = 1 + (idx / NSLOTS % 8);

		release(s, 0);
		n /= k;
		call_begin();
		p = sefer_calloc(k, n);
		took(s, p, k * n, 1, errno);
		verify(s, s->n, 1);
		break;
	}
	case 3:
		if (!s->p) {
			call_begin();
			p = sefer_realloc(NULL, n);
			took(s, p, n, 1, errno);
			break;
		}
		if (n == 0) {	/* realloc(p, 0) frees, as glibc's does */
			verify(s, s->n, 0);
			if (sefer_realloc(s->p, 0))
				fail("realloc to 0 returned a block", s, 0);
			s->p = NULL;
			return;
		}
		call_begin();
		p = sefer_realloc(s->p, n);
		if (failed_as_promised(p, errno)) {
			verify(s, s->n, 0); /* the old block stays, whole */
			return;
		}
		if (!p)
			fail("realloc failed", s, 0);
		moved = p != s->p;
		hi = s->heap;
		s->p = p;
		verify(s, n < s->n ? n : s->n, 0);
		took(s, p, n, 1, 0);
		if (!moved)
			s->heap = hi; /* in place: still the block of the heap it came from */
		break;
	case 4:
		align = (size_t)1 << (idx / NSLOTS % 8 * 3 + a % 3) % (MAX_ALIGN_SHIFT + 1);
		release(s, 0);
		call_begin();
		p = sefer_aligned_alloc(align, n);
		took(s, p, n, align, errno);
		break;
	case 5: {
		int r;

		align = (size_t)1 << (3 + (idx / NSLOTS % 8 * 3 + a % 3) % (MAX_ALIGN_SHIFT - 2));
		release(s, 0);
		p = NULL;
		call_begin();
		r = sefer_posix_memalign(&p, align, n);
		if (r)
			p = NULL;
		took(s, p, n, align, r);
		break;
	}
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
		if (slots[i].heap < 0 || i % 2) /* the others go with their heap */
			release(&slots[i], 0);
	for (int hi = 0; hi < NHEAPS; hi++)
		heap_destroy(hi);
	check_heap();
	/* what the input left cached (large segments, pages) goes back: the next input starts
	 * from the same state */
	sefer_collect(true);
	if (helper_started)
		run_on_helper((struct helper_step){ .collect = true });
	return 0;
}
