/* SPDX-License-Identifier: MIT */
/*
 * bench/common.h - shared helpers for the sefer benchmark programs.
 *
 * Every benchmark is a plain C program that allocates through malloc, free
 * and realloc, so any allocator can be swapped in with LD_PRELOAD. This
 * header gives them one option parser, a seeded PRNG, a start barrier for
 * pre-spawned workers, optional core pinning, timing, peak RSS, and one
 * result line in a fixed key=value format that bench/run.py parses:
 *
 *   RESULT bench=<name> param=<p> threads=<n> pin=<0|1> ops=<n> secs=<s>
 *          ops_per_s=<x> maxrss_kb=<k> malloc=<object that defines malloc>
 *
 * "ops" counts allocator calls: each malloc, realloc and free is one op.
 */
#ifndef SEFER_BENCH_COMMON_H
#define SEFER_BENCH_COMMON_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

struct bench_opts {
	const char *name;	/* workload name, printed as bench= */
	int threads;		/* --threads N (default 1) */
	int pin;		/* --pin: worker i runs on the i-th allowed CPU (bench_pin) */
	uint64_t ops;		/* --ops N: op budget, meaning per workload */
	uint64_t seed;		/* --seed N (default 42) */
	size_t size;		/* --size N: block size in bytes, where used */
	int touch_pages;	/* --touch-pages: large touches every page */
	double max_secs;	/* --max-secs S: stop a worker early (0: never) */
};

static inline void bench_usage(const struct bench_opts *o, const char *extra)
{
	fprintf(stderr,
		"usage: %s [--threads N] [--ops N] [--seed N] [--pin] "
		"[--max-secs S]%s\n",
		o->name, extra ? extra : "");
	exit(2);
}

static inline uint64_t bench_parse_u64(const struct bench_opts *o,
				       const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		bench_usage(o, NULL);
	/* k/m/g suffixes, powers of 1024 */
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		bench_usage(o, NULL);
	return v;
}

/*
 * Take a workload-specific option "NAME VALUE" out of argv before
 * bench_parse sees it: return its value parsed like --ops (k/m/g suffixes),
 * or def when it is absent. Call it for each own option, then bench_parse.
 */
static inline uint64_t bench_take_u64(const struct bench_opts *o, int *argc,
				      char **argv, const char *name,
				      uint64_t def)
{
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], name))
			continue;
		if (i + 1 >= *argc)
			bench_usage(o, NULL);
		def = bench_parse_u64(o, argv[i + 1]);
		for (int j = i; j + 2 <= *argc; j++)
			argv[j] = argv[j + 2];
		*argc -= 2;
		i--;
	}
	return def;
}

/* Parse the common options; defaults come in through *o. */
static inline void bench_parse(struct bench_opts *o, int argc, char **argv,
			       const char *extra)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pin")) {
			o->pin = 1;
		} else if (!strcmp(a, "--touch-pages")) {
			o->touch_pages = 1;
		} else if (!strcmp(a, "--threads") && v) {
			o->threads = (int)bench_parse_u64(o, v);
			i++;
		} else if (!strcmp(a, "--ops") && v) {
			o->ops = bench_parse_u64(o, v);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			o->seed = bench_parse_u64(o, v);
			i++;
		} else if (!strcmp(a, "--max-secs") && v) {
			o->max_secs = strtod(v, NULL);
			i++;
		} else if (!strcmp(a, "--size") && v) {
			o->size = bench_parse_u64(o, v);
			i++;
		} else {
			bench_usage(o, extra);
		}
	}
	if (o->threads < 1 || o->threads > MAX_THREADS) {
		fprintf(stderr, "%s: --threads must be 1..%d\n", o->name,
			MAX_THREADS);
		exit(2);
	}
}

/* splitmix64: small, fast, and deterministic for a given seed. */
struct rng {
	uint64_t s;
};

static inline void rng_init(struct rng *r, uint64_t seed, uint64_t stream)
{
	r->s = seed * 0x9e3779b97f4a7c15ull + stream * 0xd1b54a32d192ed03ull + 1;
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) without division on the fast path (Lemire). */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static inline double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Pin the calling thread to the (idx % n)-th of the n CPUs the process may run on (its affinity
 * mask, which a runner may have narrowed: bench/run.py pins single-thread runs to one CPU).
 */
static inline void bench_pin(int idx)
{
	cpu_set_t allowed, set;
	int n, k = -1;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) || (n = CPU_COUNT(&allowed)) < 1) {
		perror("sched_getaffinity");
		return;
	}
	idx %= n;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && ++k == idx) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				perror("sched_setaffinity");
			return;
		}
}

/* Peak resident set in KiB: VmHWM, or ru_maxrss when /proc is absent. */
static inline long bench_peak_rss_kb(void)
{
	char buf[4096];
	struct rusage ru;
	ssize_t n;
	int fd;

	fd = open("/proc/self/status", O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			char *p;

			buf[n] = 0;
			p = strstr(buf, "VmHWM:");
			if (p)
				return strtol(p + 6, NULL, 10);
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* The object that defines the malloc this process really calls. */
static inline const char *bench_malloc_owner(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;
	const char *slash;

	if (!sym || !dladdr(sym, &info) || !info.dli_fname)
		return "unknown";
	slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

static inline void bench_report(const struct bench_opts *o, const char *param,
				uint64_t ops, double secs)
{
	printf("RESULT bench=%s param=%s threads=%d pin=%d ops=%llu secs=%.6f "
	       "ops_per_s=%.1f maxrss_kb=%ld malloc=%s\n",
	       o->name, param, o->threads, o->pin, (unsigned long long)ops,
	       secs, secs > 0 ? (double)ops / secs : 0.0, bench_peak_rss_kb(),
	       bench_malloc_owner());
	fflush(stdout);
}

/*
 * Worker threads are all created first and held at a barrier; the clock
 * starts when the last one (and the main thread) arrives, and stops when the
 * last one has been joined.
 */
struct worker {
	int idx;
	const struct bench_opts *o;
	pthread_barrier_t *start;
	uint64_t ops;		/* allocator calls done by this worker */
	void *arg;		/* workload-specific */
	double t_start, t_end;	/* this worker's own clock readings */
	double deadline;	/* t_start + max_secs, or 0 */
};

/*
 * --max-secs is a safety net for allocators that are orders of magnitude
 * slower on one workload: a worker polls this every few thousand ops and
 * stops early when the time is up. The op sequence stays deterministic for
 * a seed; only its length is cut, and ops/s stays a fair rate.
 */
static inline int bench_expired(const struct worker *w)
{
	return w->deadline > 0 && now_sec() > w->deadline;
}

typedef void (*worker_fn)(struct worker *w);

struct bench_run_ctx {
	struct worker w;
	worker_fn fn;
};

static inline void *bench_thread_main(void *p)
{
	struct bench_run_ctx *c = p;

	if (c->w.o->pin)
		bench_pin(c->w.idx);
	pthread_barrier_wait(c->w.start);
	c->w.t_start = now_sec();
	if (c->w.o->max_secs > 0)
		c->w.deadline = c->w.t_start + c->w.o->max_secs;
	c->fn(&c->w);
	c->w.t_end = now_sec();
	return NULL;
}

/*
 * Run fn on o->threads pre-spawned workers; return elapsed seconds (first
 * worker start to last worker end, as each worker read the clock itself)
 * and the summed op count. args[i] (may be NULL) is worker i's argument.
 */
static inline double bench_run_threads(const struct bench_opts *o,
				       worker_fn fn, void **args,
				       uint64_t *total_ops)
{
	static struct bench_run_ctx ctx[MAX_THREADS];
	static pthread_t tid[MAX_THREADS];
	pthread_barrier_t start;
	double t0 = 0, t1 = 0;

	pthread_barrier_init(&start, NULL, (unsigned)o->threads + 1);
	for (int i = 0; i < o->threads; i++) {
		ctx[i].w = (struct worker){
			.idx = i, .o = o, .start = &start,
			.arg = args ? args[i] : NULL,
		};
		ctx[i].fn = fn;
		if (pthread_create(&tid[i], NULL, bench_thread_main, &ctx[i])) {
			fprintf(stderr, "%s: pthread_create failed\n", o->name);
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < o->threads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&start);
	*total_ops = 0;
	for (int i = 0; i < o->threads; i++) {
		struct worker *w = &ctx[i].w;

		*total_ops += w->ops;
		if (i == 0 || w->t_start < t0)
			t0 = w->t_start;
		if (w->t_end > t1)
			t1 = w->t_end;
	}
	return t1 - t0;
}

static inline void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* Write the first and last byte so the block is really used. */
static inline void touch(void *p, size_t n)
{
	unsigned char *c = p;

	c[0] = (unsigned char)n;
	c[n - 1] = (unsigned char)(n >> 3);
}

/*
 * A Treiber stack of blocks used as a mailbox for cross-thread frees: the
 * block's first word is the link. Pushers CAS, the owner takes everything
 * with one exchange, so there is no ABA.
 *
 * The mailbox is bounded: a push is refused (the caller frees the block
 * itself) while `cap` blocks wait in it. Unbounded, the backlog measured the
 * scheduler, not the allocator: on a 2-vCPU machine a worker descheduled for
 * a few milliseconds let its neighbour pile up hundreds of thousands of
 * blocks (mstress at 2 threads swung between 5 and 16 MiB of peak RSS, and
 * 2.5x in time, from run to run under every allocator). A real server's hand-off
 * queue is bounded the same way. One pusher per mailbox (each worker pushes to
 * the next one), so the count needs no read-modify-write.
 */
struct mailbox {
	_Alignas(64) _Atomic(void *) head;
	_Atomic(uint64_t) drained;	/* blocks the owner has taken, in all */
	_Alignas(64) _Atomic(uint64_t) pushed;	/* blocks handed in, written by the pusher */
};

static inline bool mailbox_push(struct mailbox *m, void *blk, uint64_t cap)
{
	uint64_t pushed = atomic_load_explicit(&m->pushed, memory_order_relaxed);
	void *old;

	if (pushed - atomic_load_explicit(&m->drained, memory_order_relaxed) >= cap)
		return false;
	atomic_store_explicit(&m->pushed, pushed + 1, memory_order_relaxed);
	old = atomic_load_explicit(&m->head, memory_order_relaxed);
	do {
		*(void **)blk = old;
	} while (!atomic_compare_exchange_weak_explicit(&m->head, &old, blk,
			memory_order_release, memory_order_relaxed));
	return true;
}

/* Free everything in the mailbox; return how many blocks were freed. */
static inline uint64_t mailbox_drain(struct mailbox *m)
{
	void *p = atomic_exchange_explicit(&m->head, NULL, memory_order_acquire);
	uint64_t n = 0;

	while (p) {
		void *next = *(void **)p;

		free(p);
		p = next;
		n++;
	}
	atomic_store_explicit(&m->drained,
			      atomic_load_explicit(&m->drained, memory_order_relaxed) + n,
			      memory_order_relaxed);
	return n;
}

#endif /* SEFER_BENCH_COMMON_H */
