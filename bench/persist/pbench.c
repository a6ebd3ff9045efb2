// SPDX-License-Identifier: MIT
/*
 * pbench: the persist benchmark. Segregated, first-fit and best-fit tree over a sefer store,
 * and PMDK's libpmemobj on a regular file, all on the same workload and the same disk.
 *
 * Workload (per cell: size distribution x thread count): op mix alloc 45 / realloc 20 /
 * free 35; sizes 0..1024 B from uniform, gamma (k=2, theta=256, resampled above 1024) or
 * bimodal (32 B w.p. 0.8 else 1024 B); 64 blocks pre-allocated and split across the threads;
 * 1, 2, 4, 16 threads on one shared allocator. Time per op = slowest thread's time / total
 * ops. Each cell runs RUNS times on a fresh file; reported: median and quintiles of ops/s,
 * syncs per op (fdatasync for sefer, msync for PMDK, counted by interposing msync) and the
 * p99 latency of single operations. PMDK uses pmemobj_zalloc/zrealloc/free with the oids
 * kept in a persistent root array.
 *
 * Also measured: reopen of a segregated store holding 1M blocks after a crash.
 *
 *   pbench [--quick] [--dir DIR] [--out PREFIX]   writes PREFIX.csv and PREFIX.md
 *   pbench [--quick] [--dir DIR] --only ALLOC,DIST,THREADS
 *          one cell of one allocator (ALLOC: segregated, first-fit, best-fit-tree, pmdk), no table
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libpmemobj.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/sefer/persist.h"

#define MAXT 16
#define SLOTS 4096		/* per-thread slot capacity in the PMDK root array */
#define NALLOC 4		/* segregated, first-fit, best-fit, pmdk */

static const char *const alloc_name[NALLOC] = { "segregated", "first-fit", "best-fit-tree",
						"pmdk-libpmemobj" };
static const char *const dist_name[3] = { "uniform", "gamma", "bimodal" };
static const int thread_counts[4] = { 1, 2, 4, 16 };

/* ---------------------------------------------------------------- msync interposition */
static _Atomic uint64_t msyncs;

int msync(void *addr, size_t len, int flags)
{
	atomic_fetch_add_explicit(&msyncs, 1, memory_order_relaxed);
	return (int)syscall(SYS_msync, addr, len, flags);
}

/* ---------------------------------------------------------------- workload */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double unif(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static size_t pick_size(int dist, uint64_t *s)
{
	if (dist == 0)
		return (size_t)(rnd(s) % 1025);
	if (dist == 2)
		return unif(s) < 0.8 ? 32 : 1024;
	for (;;) {	/* gamma(k=2, theta=256): sum of two exponentials */
		double g = -256.0 * (log(1.0 - unif(s)) + log(1.0 - unif(s)));

		if (g <= 1024.0)
			return (size_t)g;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct pmdk_root {
	PMEMoid oid[MAXT * SLOTS];
};

struct run {
	int kind, dist, nthreads, ops_per_thread;
	double deadline;		/* each thread stops here (or after ops_per_thread) */
	struct sefer_pstore *h;
	PMEMobjpool *pop;
	struct pmdk_root *root;
	pthread_barrier_t bar;
};

struct worker {
	struct run *run;
	int id;
	uint64_t rng;
	uint64_t off[SLOTS];	/* sefer: live offsets; pmdk: slot in use (1) */
	int nlive;
	int pslot[SLOTS];	/* pmdk: which root slots are live */
	double secs;
	double *lat;
	int nlat, err;
	long nops;
};

static int op_alloc(struct worker *w, size_t size)
{
	struct run *r = w->run;

	if (w->nlive >= SLOTS)
		return 0;
	if (r->kind < 3) {
		uint64_t off;
		int e = sefer_palloc(r->h, size, &off);

		if (!e)
			w->off[w->nlive++] = off;
		return e;
	}
	/* pmdk: find a free root slot of this thread */
	int base = w->id * SLOTS;

	for (int i = 0; i < SLOTS; i++) {
		int s = (int)((w->rng + (uint64_t)i) % SLOTS);

		if (OID_IS_NULL(r->root->oid[base + s])) {
			if (pmemobj_zalloc(r->pop, &r->root->oid[base + s], size ? size : 1, 1))
				return -errno;
			w->pslot[w->nlive++] = base + s;
			return 0;
		}
	}
	return 0;
}

static int op_free(struct worker *w, int k)
{
	struct run *r = w->run;

	if (r->kind < 3) {
		int e = sefer_pfree(r->h, w->off[k]);

		w->off[k] = w->off[--w->nlive];
		return e;
	}
	pmemobj_free(&r->root->oid[w->pslot[k]]);
	w->pslot[k] = w->pslot[--w->nlive];
	return 0;
}

static int op_realloc(struct worker *w, int k, size_t size)
{
	struct run *r = w->run;

	if (r->kind < 3)
		return sefer_prealloc(r->h, w->off[k], size, &w->off[k]);
	if (pmemobj_zrealloc(r->pop, &r->root->oid[w->pslot[k]], size ? size : 1, 1))
		return -errno;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;

	pthread_barrier_wait(&r->bar);
	double t0 = now();

	for (int i = 0; i < r->ops_per_thread && !w->err && (i & 7 || now() < r->deadline); i++) {
		unsigned p = (unsigned)(rnd(&w->rng) % 100);
		size_t size = pick_size(r->dist, &w->rng);
		double a = now();

		if (p < 45 || w->nlive == 0)
			w->err = op_alloc(w, size);
		else if (p < 65)
			w->err = op_realloc(w, (int)(rnd(&w->rng) % (uint64_t)w->nlive), size);
		else
			w->err = op_free(w, (int)(rnd(&w->rng) % (uint64_t)w->nlive));
		if (w->nlat < (1 << 16))
			w->lat[w->nlat++] = now() - a;
		w->nops++;
	}
	w->secs = now() - t0;
	return NULL;
}

struct result {
	double ops_s, syncs_per_op, p99_us;
};

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_once(const char *dir, int kind, int dist, int nthreads, double budget,
		    struct result *res)
{
	static struct worker ws[MAXT];
	struct run r = { .kind = kind, .dist = dist, .nthreads = nthreads,
			 .ops_per_thread = 1 << 20 };
	char path[512];
	pthread_t tid[MAXT];
	uint64_t syncs0 = 0;
	int e = 0;

	snprintf(path, sizeof(path), "%s/pbench-%d.%s", dir, (int)getpid(),
		 kind < 3 ? "pst" : "pmdk");
	unlink(path);
	if (kind < 3) {
		char err[256];
		struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err), .wal_bytes = 1 << 20 };

		e = sefer_pstore_create(path, (enum sefer_palloc_kind)kind, &o, &r.h);
		if (e) {
			fprintf(stderr, "pbench: %s\n", err);
			return e;
		}
	} else {
		r.pop = pmemobj_create(path, "pbench", 32 << 20, 0644);
		if (!r.pop) {
			fprintf(stderr, "pbench: pmemobj_create: %s\n", pmemobj_errormsg());
			return -1;
		}
		PMEMoid root = pmemobj_root(r.pop, sizeof(struct pmdk_root));

		r.root = pmemobj_direct(root);
	}
	/* 64 blocks pre-allocated, split across the threads */
	for (int t = 0; t < nthreads; t++) {
		struct worker *w = &ws[t];

		memset(w, 0, offsetof(struct worker, secs));
		w->run = &r;
		w->id = t;
		w->rng = 0x1234567ULL * (uint64_t)(t + 1) + (uint64_t)dist * 77 + (uint64_t)kind;
		w->lat = calloc(1 << 16, sizeof(double));
		w->nlat = 0;
		w->nops = 0;
		w->err = 0;
		for (int i = 0; i < 64 / nthreads; i++)
			if (op_alloc(w, pick_size(dist, &w->rng)))
				return -1;
	}
	if (kind < 3) {
		struct sefer_pstats st;

		sefer_pstats(r.h, &st);
		syncs0 = st.syncs;
	} else {
		syncs0 = atomic_load(&msyncs);
	}
	pthread_barrier_init(&r.bar, NULL, (unsigned)nthreads);
	r.deadline = now() + budget;
	for (int t = 0; t < nthreads; t++)
		pthread_create(&tid[t], NULL, worker_main, &ws[t]);
	double slowest = 0;
	int nlat = 0;
	long done = 0;

	for (int t = 0; t < nthreads; t++) {
		pthread_join(tid[t], NULL);
		if (ws[t].secs > slowest)
			slowest = ws[t].secs;
		if (ws[t].err)
			e = ws[t].err;
		nlat += ws[t].nlat;
		done += ws[t].nops;
	}
	pthread_barrier_destroy(&r.bar);
	uint64_t syncs;

	if (kind < 3) {
		struct sefer_pstats st;
		struct sefer_pverify v;

		sefer_pstats(r.h, &st);
		syncs = st.syncs - syncs0;
		if (sefer_pverify(r.h, &v)) {
			fprintf(stderr, "pbench: verify after run: %s\n", v.msg);
			e = -1;
		}
		sefer_pstore_close(r.h);
	} else {
		syncs = atomic_load(&msyncs) - syncs0;
		pmemobj_close(r.pop);
	}
	unlink(path);
	double *all = malloc((size_t)nlat * sizeof(double) + 8);
	int k = 0;

	for (int t = 0; t < nthreads; t++) {
		memcpy(all + k, ws[t].lat, (size_t)ws[t].nlat * sizeof(double));
		k += ws[t].nlat;
		free(ws[t].lat);
	}
	qsort(all, (size_t)k, sizeof(double), cmpd);
	res->ops_s = (double)done / slowest;
	res->syncs_per_op = (double)syncs / done;
	res->p99_us = k ? all[(int)(0.99 * (k - 1))] * 1e6 : 0;
	free(all);
	return e;
}

/* 1M blocks, the writer dies without closing; time the reopen (replay + full scan). */
static double recovery_1m(const char *dir, long nblocks, uint64_t *scanned)
{
	char path[512];
	struct sefer_precovery rep;
	struct sefer_popts o = { .flags = SEFER_P_ASYNC, .report = &rep };
	struct sefer_pstore *h;
	int status;

	snprintf(path, sizeof(path), "%s/pbench-recovery-%d.pst", dir, (int)getpid());
	unlink(path);
	pid_t pid = fork();

	if (pid == 0) {
		uint64_t *off = malloc((size_t)nblocks * sizeof(*off));

		if (!off || sefer_pstore_create(path, SEFER_PALLOC_SEGREGATED, &o, &h))
			_exit(2);
		for (long i = 0; i < nblocks; i++)
			if (sefer_palloc(h, 8 + (uint64_t)(i % 7) * 16, &off[i]))
				_exit(3);
		for (long i = 0; i + 1 < nblocks; i += 3)
			if (sefer_pfree(h, off[i]))
				_exit(4);
		_exit(sefer_psync(h) ? 5 : 0);
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	o.flags = 0;
	double t0 = now();

	if (sefer_pstore_open(path, &o, &h))
		return -1;
	double dt = now() - t0;

	*scanned = rep.blocks_scanned;
	sefer_pstore_close(h);
	unlink(path);
	return dt;
}

static double quant(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(double), cmpd);
	double pos = q * (n - 1);
	int lo = (int)pos;

	return lo + 1 < n ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

/* --only ALLOC,DIST,THREADS: one cell, RUNS runs, each printed, for profiling. */
static int run_only(const char *dir, const char *spec, int runs, double budget)
{
	char a[32], d[32];
	int k, dist, nt;

	if (sscanf(spec, "%31[^,],%31[^,],%d", a, d, &nt) != 3 || nt < 1 || nt > MAXT)
		goto bad;
	for (k = 0; k < NALLOC && strncmp(alloc_name[k], a, strlen(a)); k++)
		;
	for (dist = 0; dist < 3 && strcmp(dist_name[dist], d); dist++)
		;
	if (k == NALLOC || dist == 3 || !a[0])
		goto bad;
	for (int rr = 0; rr < runs; rr++) {
		struct result res;

		if (run_once(dir, k, dist, nt, budget, &res))
			return 1;
		printf("%s %s %d threads: %.0f ops/s  %.3f syncs/op  p99 %.0f us\n", alloc_name[k],
		       dist_name[dist], nt, res.ops_s, res.syncs_per_op, res.p99_us);
	}
	return 0;
bad:
	fprintf(stderr, "pbench: --only wants ALLOC,DIST,THREADS (e.g. seg,uniform,2), not '%s'\n",
		spec);
	return 2;
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp", *out = NULL, *only = NULL;
	bool quick = false;
	int runs;
	double budget;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(stderr, "pbench: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	runs = quick ? 3 : 5;
	budget = quick ? 0.35 : 2.0;
	if (only)
		return run_only(dir, only, runs, budget);

	static struct { double med, q20, q80, spo, p99; } cell[NALLOC][3][4];
	FILE *csv = NULL;
	char fn[1024];

	if (out) {
		snprintf(fn, sizeof(fn), "%s.csv", out);
		csv = fopen(fn, "w");
		if (csv)
			fprintf(csv, "allocator,dist,threads,runs,secs_per_run,ops_s_median,ops_s_q20,"
				     "ops_s_q80,syncs_per_op,p99_us\n");
	}
	printf("persist benchmark: %d runs x %.2f s per cell, files in %s (real fdatasync/msync)\n",
	       runs, budget, dir);
	for (int d = 0; d < 3; d++) {
		for (int ti = 0; ti < 4; ti++) {
			double v[NALLOC][8], spo[NALLOC][8], p99[NALLOC][8];

			for (int rr = 0; rr < runs; rr++) {	/* interleaved: disk noise hits all */
				for (int k = 0; k < NALLOC; k++) {
					struct result res;

					if (run_once(dir, k, d, thread_counts[ti], budget, &res)) {
						fprintf(stderr, "pbench: %s failed\n", alloc_name[k]);
						return 1;
					}
					v[k][rr] = res.ops_s;
					spo[k][rr] = res.syncs_per_op;
					p99[k][rr] = res.p99_us;
				}
			}
			for (int k = 0; k < NALLOC; k++) {
				cell[k][d][ti].med = quant(v[k], runs, 0.5);
				cell[k][d][ti].q20 = quant(v[k], runs, 0.2);
				cell[k][d][ti].q80 = quant(v[k], runs, 0.8);
				cell[k][d][ti].spo = quant(spo[k], runs, 0.5);
				cell[k][d][ti].p99 = quant(p99[k], runs, 0.5);
				printf("  %-8s %2d threads %-16s %9.0f ops/s  %.3f syncs/op  p99 %8.0f us\n",
				       dist_name[d], thread_counts[ti], alloc_name[k],
				       cell[k][d][ti].med, cell[k][d][ti].spo, cell[k][d][ti].p99);
				fflush(stdout);
				if (csv)
					fprintf(csv, "%s,%s,%d,%d,%.2f,%.1f,%.1f,%.1f,%.4f,%.0f\n",
						alloc_name[k], dist_name[d], thread_counts[ti], runs, budget,
						cell[k][d][ti].med, cell[k][d][ti].q20,
						cell[k][d][ti].q80, cell[k][d][ti].spo,
						cell[k][d][ti].p99);
			}
		}
	}
	uint64_t scanned = 0;
	double rec = recovery_1m(dir, 1000000, &scanned);

	/* the table */
	char md[16384];
	size_t n = 0;
	double gm[NALLOC] = { 0 };

	n += (size_t)snprintf(md + n, sizeof(md) - n,
		"| dist | threads | segregated ops/s (q20-q80) | syncs/op | p99 us | first-fit ops/s |"
		" syncs/op | best-fit ops/s | syncs/op | PMDK ops/s | msyncs/op | seg/ff | seg/bt |"
		" seg/PMDK |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int d = 0; d < 3; d++) {
		for (int ti = 0; ti < 4; ti++) {
			typeof(cell[0][0][0]) *c[NALLOC];

			for (int k = 0; k < NALLOC; k++) {
				c[k] = &cell[k][d][ti];
				gm[k] += log(c[0]->med / c[k]->med);
			}
			n += (size_t)snprintf(md + n, sizeof(md) - n,
				"| %s | %d | %.0f (%.0f-%.0f) | %.3f | %.0f | %.0f | %.2f | %.0f | %.2f |"
				" %.0f | %.2f | %.2fx | %.2fx | %.2fx |\n", dist_name[d],
				thread_counts[ti], c[0]->med, c[0]->q20, c[0]->q80, c[0]->spo,
				c[0]->p99, c[1]->med, c[1]->spo, c[2]->med, c[2]->spo, c[3]->med,
				c[3]->spo, c[0]->med / c[1]->med, c[0]->med / c[2]->med,
				c[0]->med / c[3]->med);
		}
	}
	n += (size_t)snprintf(md + n, sizeof(md) - n,
		"\nGeometric mean over the 12 cells: segregated / first-fit %.2fx, / best-fit tree "
		"%.2fx, / PMDK %.2fx.\n", exp(gm[1] / 12), exp(gm[2] / 12), exp(gm[3] / 12));
	n += (size_t)snprintf(md + n, sizeof(md) - n,
		"Recovery after a crash of a segregated store with %llu blocks (log replay + full "
		"arena scan): %.3f s.\n", (unsigned long long)scanned, rec);
	printf("\n%s", md);
	if (out) {
		snprintf(fn, sizeof(fn), "%s.md", out);
		FILE *f = fopen(fn, "w");

		if (f) {
			fprintf(f, "# persist benchmark (%s: %d runs x %.2f s per cell)\n\n%s",
				quick ? "QUICK" : "full", runs, budget, md);
			fclose(f);
		}
	}
	if (csv) {
		fprintf(csv, "recovery_1m,segregated,1,1,%llu,%.4f,,,,\n",
			(unsigned long long)scanned, rec);
		fclose(csv);
	}
	return 0;
}
