// SPDX-License-Identifier: MIT
/*
 * Stress test: N threads allocate random sizes, fill each block with a pattern derived from
 * its address and size, hand every few blocks to another thread through a lock-free mailbox,
 * and check every block's content before freeing it. Threads exit and are replaced while
 * others still free their blocks. Uses the sefer_* API (so it also runs under sanitizers).
 *
 *   stress [threads] [ops per thread] [generations]
 *
 * With CONFIG_FAULT_INJECTION (check-stress-faults, SEFER_FAIL_*), an allocation may fail, but
 * only as the malloc face promises: NULL with errno = ENOMEM, in a call during which a fault
 * was injected into this thread (core/fault.h); a failed realloc leaves its old block intact
 * (checked, then freed). Any other failure is an error. The faults and outcomes are printed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sefer.h"
#ifdef CONFIG_FAULT_INJECTION
#include "core/fault.h"
#endif

#define SLOTS 512
#define MAILBOX 1024

struct item {
	unsigned char *p;
	size_t n;
};

static _Atomic(struct item *) mailbox[MAILBOX];
static atomic_long errors, handed, received, failed_enomem, survived;
static unsigned nthreads = 4;
static unsigned long ops = 200000;

static unsigned long long rng(unsigned long long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t faults_here(void)
{
#ifdef CONFIG_FAULT_INJECTION
	return sefer__fault_injected_thread();
#else
	return 0;
#endif
}

/* p, from a call that began with `before` faults on this thread: false if it failed as the
 * malloc face promises under an injected fault (counted); an error if it failed otherwise. */
static bool got(const void *p, uint64_t before, size_t n)
{
	bool faulted = faults_here() != before;

	if (p) {
		if (faulted)
			atomic_fetch_add(&survived, 1);
		return true;
	}
	if (faulted && errno == ENOMEM) {
		atomic_fetch_add(&failed_enomem, 1);
		return false;
	}
	fprintf(stderr, "stress: out of memory for %zu bytes (errno %d, %s fault)\n", n, errno,
		faulted ? "after a" : "without a");
	atomic_fetch_add(&errors, 1);
	return false;
}

static unsigned char pat(const void *p, size_t i)
{
	return (unsigned char)(((uintptr_t)p >> 4) * 31 + i * 7);
}

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(p, i);
}

static void check_free(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != pat(p, i)) {
			fprintf(stderr, "stress: block %p (%zu bytes) corrupted at byte %zu\n",
				(void *)p, n, i);
			atomic_fetch_add(&errors, 1);
			break;
		}
	}
	if (sefer_usable_size(p) < n) {
		fprintf(stderr, "stress: usable size %zu < %zu\n", sefer_usable_size(p), n);
		atomic_fetch_add(&errors, 1);
	}
	sefer_free(p);
}

static size_t pick_size(unsigned long long *s)
{
	unsigned r = (unsigned)(rng(s) % 1000);

	if (r < 700)
		return rng(s) % 128 + 1;
	if (r < 950)
		return rng(s) % 2048 + 1;
	if (r < 998)
		return rng(s) % 65536 + 1;
	return rng(s) % (3u << 20) + 1;
}

static void *worker(void *arg)
{
	unsigned long long s = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	struct item slot[SLOTS] = { { 0 } };

	for (unsigned long i = 0; i < ops; i++) {
		unsigned k = (unsigned)(rng(&s) % SLOTS);

		if (slot[k].p) {
			struct item *it = NULL;

			if (rng(&s) % 8 == 0)
				it = malloc(sizeof(*it)); /* sefer's own malloc: it may fail too */
			if (it) {
				unsigned m = (unsigned)(rng(&s) % MAILBOX);

				*it = slot[k];
				it = atomic_exchange(&mailbox[m], it);
				atomic_fetch_add(&handed, 1);
				if (it) {
					check_free(it->p, it->n);
					free(it);
					atomic_fetch_add(&received, 1);
				}
			} else {
				check_free(slot[k].p, slot[k].n);
			}
			slot[k].p = NULL;
		}
		size_t n = pick_size(&s);
		uint64_t before = faults_here();
		unsigned char *p;

		errno = 0;
		switch (rng(&s) % 4) {
		case 0:
			p = sefer_calloc(1, n);
			for (size_t j = 0; p && j < n; j++)
				if (p[j]) {
					fprintf(stderr, "stress: calloc block not zero\n");
					atomic_fetch_add(&errors, 1);
					break;
				}
			break;
		case 1: {
			size_t a = (size_t)16 << (rng(&s) % 8);

			p = sefer_aligned_alloc(a, n);
			if ((uintptr_t)p % a) {
				fprintf(stderr, "stress: misaligned %p for %zu\n", (void *)p, a);
				atomic_fetch_add(&errors, 1);
			}
			break;
		}
		case 2: {
			size_t half = n / 2 + 1;

			p = sefer_malloc(half);
			if (p) {
				unsigned char *q;

				fill(p, half);
				before = faults_here();
				errno = 0;
				q = sefer_realloc(p, n);
				if (!q)
					check_free(p, half); /* the old block stays, intact */
				p = q;
			}
			break;
		}
		default:
			p = sefer_malloc(n);
		}
		if (!got(p, before, n))
			continue;
		fill(p, n);
		slot[k].p = p;
		slot[k].n = n;
	}
	for (unsigned k = 0; k < SLOTS; k++)
		if (slot[k].p)
			check_free(slot[k].p, slot[k].n);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned gens = 3;

	if (argc > 1)
		nthreads = (unsigned)atoi(argv[1]);
	if (argc > 2)
		ops = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		gens = (unsigned)atoi(argv[3]);
	for (unsigned g = 0; g < gens; g++) {
		pthread_t t[64];

		for (unsigned i = 0; i < nthreads && i < 64; i++) {
			unsigned tries = 0;

			/* glibc's thread setup allocates (through sefer): retry an injected fault */
			while (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(g * 64 + i + 1)))
				if (++tries == 1000) {
					fprintf(stderr, "stress: pthread_create keeps failing\n");
					return 1;
				}
		}
		for (unsigned i = 0; i < nthreads && i < 64; i++)
			pthread_join(t[i], NULL);
	}
	for (unsigned m = 0; m < MAILBOX; m++) {
		struct item *it = atomic_exchange(&mailbox[m], NULL);

		if (it) {
			check_free(it->p, it->n);
			free(it);
		}
	}
	size_t problems = sefer_check_heap();
	struct sefer_stats st;

	sefer_stats_get(&st, sizeof(st));
	printf("stress: %u threads x %lu ops x %u generations: handed %ld, errors %ld, heap "
	       "problems %zu, xthread frees %llu, reclaimed %llu\n",
	       nthreads, ops, gens, atomic_load(&handed), atomic_load(&errors), problems,
	       (unsigned long long)st.xthread_frees, (unsigned long long)st.reclaimed);
#ifdef CONFIG_FAULT_INJECTION
	printf("stress: faults injected %llu (", (unsigned long long)sefer__fault_injected_total());
	for (int op = 0; op < FAULT_OPS; op++)
		printf("%s%s %llu of %llu calls", op ? ", " : "",
		       sefer__fault_op_name((enum fault_op)op),
		       (unsigned long long)sefer__fault_injected((enum fault_op)op),
		       (unsigned long long)sefer__fault_calls((enum fault_op)op));
	printf("); allocation calls hit: %ld failed with NULL/ENOMEM, %ld succeeded\n",
	       atomic_load(&failed_enomem), atomic_load(&survived));
#endif
	return atomic_load(&errors) || problems ? 1 : 0;
}
