// SPDX-License-Identifier: MIT
/*
 * The malloc face's drop-in extras, run under LD_PRELOAD=libsefer.so (check-face): glibc's
 * __libc_* names, C23's sized frees, mallinfo2/mallinfo, mallopt, malloc_info, and every
 * power-of-two alignment. It is linked to nothing of sefer's: what it calls by the usual names
 * must be sefer's, which sefer_owns (found with dlsym) confirms.
 *
 *   face all [XML]        every check; malloc_info's report goes to XML when given
 *                         (with the requests no machine here could back: never_backed)
 *   face contract         the sized frees, right sizes only (no report expected: HARDENED)
 *   face sized-bad | aligned-bad | align-missing | delete-warn   one misuse each (check-face.sh
 *                         expects the report and how the process ends)
 *   face dlopen LIB       not preloaded: dlopen(LIB) and its sefer_* API from four threads
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#define M_PURGE		       (-101)
#define M_DECAY_TIME	       (-100)
#define SEFER_M_PURGE_DELAY_MS (-1000)

static int failures, checks;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			fprintf(stderr, "face: FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

static bool (*owns)(const void *);
/* Stores the compiler cannot drop, so a malloc/free pair is not optimised away. */
static void *volatile sink;
static void (*f_free_sized)(void *, size_t);
static void (*f_free_aligned_sized)(void *, size_t, size_t);

static void *sym(const char *name)
{
	void *s = dlsym(RTLD_DEFAULT, name);

	if (!s) {
		fprintf(stderr, "face: %s not found: run under LD_PRELOAD=libsefer.so\n", name);
		exit(2);
	}
	return s;
}

static size_t rss(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static void glibc_names(void)
{
	void *(*l_malloc)(size_t) = sym("__libc_malloc");
	void (*l_free)(void *) = sym("__libc_free");
	void *(*l_calloc)(size_t, size_t) = sym("__libc_calloc");
	void *(*l_realloc)(void *, size_t) = sym("__libc_realloc");
	void *(*l_memalign)(size_t, size_t) = sym("__libc_memalign");
	Dl_info di;

	CHECK(dladdr((void *)l_malloc, &di) && strstr(di.dli_fname, "libsefer"),
	      "__libc_malloc from %s", di.dli_fname);
	char *p = l_malloc(100), *q = l_calloc(10, 10);

	CHECK(owns(p) && owns(q), "__libc_malloc/__libc_calloc not sefer's");
	for (int i = 0; i < 100; i++)
		CHECK(q[i] == 0, "__libc_calloc byte %d", i);
	memset(p, 7, 100);
	p = l_realloc(p, 5000);
	CHECK(owns(p) && p[99] == 7, "__libc_realloc");
	free(p); /* one family into the other */
	l_free(q);
	p = l_memalign(4096, 10);
	CHECK(owns(p) && (uintptr_t)p % 4096 == 0, "__libc_memalign");
	l_free(p);
	p = malloc(10);
	l_free(p);
}

/* Right sizes, as the allocating calls were given them: no report even with HARDENED. */
static void sized_frees(void)
{
	for (size_t n = 0; n < 600000; n = n * 3 / 2 + 1) {
		void *p = malloc(n);

		f_free_sized(p, n);
		p = calloc(1, n);
		f_free_sized(p, n);
		p = malloc(n + n / 3);
		p = realloc(p, n); /* may stay in place, bigger than n */
		f_free_sized(p, n);
		for (size_t a = 1; a <= ((size_t)1 << 22); a <<= 3) {
			p = aligned_alloc(a, n);
			CHECK(p && (uintptr_t)p % a == 0, "aligned_alloc(%zu, %zu)", a, n);
			f_free_aligned_sized(p, a, n);
		}
	}
	/* A realloc that grows a large block may move it into a segment a policy kept, with room
	 * to grow into (policies/large_cache: up to 4 times the request), where later reallocs
	 * grow it in place: the block is then more than twice the request, and the sized free of
	 * the last request is still right. */
	for (size_t n = (size_t)9 << 20; n <= ((size_t)12 << 20); n += (size_t)3 << 20) {
		void *room = malloc((size_t)32 << 20), *p;

		sink = room;
		free(room); /* kept by the large-object cache, where there is one */
		p = realloc(malloc((size_t)2 << 20), (size_t)8 << 20);
		CHECK(p, "realloc to 8 MiB");
		p = realloc(p, n);
		CHECK(p, "realloc to %zu", n);
		f_free_sized(p, n);
	}
	f_free_sized(NULL, 10);
	f_free_aligned_sized(NULL, 64, 10);
}

static void info(void)
{
	struct mallinfo2 before = mallinfo2(), mid, after;
	char *big = malloc((size_t)10 << 20);
	void *small[1000];

	sink = big;
	for (int i = 0; i < 1000; i++)
		sink = small[i] = malloc(1000);
	mid = mallinfo2();
	CHECK(mid.hblks == before.hblks + 1, "hblks %zu -> %zu", before.hblks, mid.hblks);
	CHECK(mid.hblkhd >= before.hblkhd + ((size_t)10 << 20), "hblkhd %zu -> %zu", before.hblkhd,
	      mid.hblkhd);
	CHECK(mid.arena >= ((size_t)1 << 20) && mid.ordblks >= 1, "arena %zu ordblks %zu",
	      mid.arena, mid.ordblks);
	CHECK(mid.arena == mid.uordblks + mid.fordblks, "arena %zu != %zu + %zu", mid.arena,
	      mid.uordblks, mid.fordblks);
	CHECK(mid.usmblks >= mid.uordblks + mid.hblkhd, "usmblks %zu", mid.usmblks);
	CHECK(mid.smblks == 0 && mid.fsmblks == 0, "smblks/fsmblks");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo old = mallinfo();
#pragma GCC diagnostic pop

	CHECK((size_t)old.hblkhd == mid.hblkhd && (size_t)old.hblks == mid.hblks, "mallinfo");
	free(big);
	for (int i = 0; i < 1000; i++)
		free(small[i]);
	after = mallinfo2();
	CHECK(after.hblks == before.hblks, "hblks after free %zu", after.hblks);
	/* the large cache keeps the freed block: keepcost; malloc_trim gives it back */
	CHECK(after.keepcost >= ((size_t)10 << 20) || after.hblkhd < mid.hblkhd, "keepcost %zu",
	      after.keepcost);
	malloc_trim(0);
	after = mallinfo2();
	CHECK(after.keepcost == 0, "keepcost after malloc_trim %zu", after.keepcost);
}

/* CHECKs that option name reads want, set by mallopt (origin "API"). */
static void option_is(const char *name, const char *want)
{
	static int (*get)(const char *, char *, size_t);
	static const char *(*origin)(const char *);
	char buf[32] = "";

	if (!get) {
		get = (int (*)(const char *, char *, size_t))sym("sefer_option_get");
		origin = (const char *(*)(const char *))sym("sefer_option_origin");
	}
	CHECK(get(name, buf, sizeof(buf)) == 0 && !strcmp(buf, want), "%s is '%s', not '%s'",
	      name, buf, want);
	CHECK(!strcmp(origin(name), "API"), "%s comes from %s, not mallopt", name, origin(name));
}

static void opt(void)
{
	/* mallopt sets the options sefer_option_get reads */
	CHECK(mallopt(M_CHECK_ACTION, 1) == 1, "M_CHECK_ACTION 1");
	option_is("on_error", "warn");
	CHECK(mallopt(M_CHECK_ACTION, 3) == 1, "M_CHECK_ACTION 3");
	option_is("SEFER_ON_ERROR", "abort");
	CHECK(mallopt(SEFER_M_PURGE_DELAY_MS, 125) == 1, "SEFER_M_PURGE_DELAY_MS 125");
	option_is("purge_delay_ms", "125");
	CHECK(mallopt(M_TRIM_THRESHOLD, -1) == 1, "M_TRIM_THRESHOLD -1");
	option_is("purge_delay_ms", "4611686018427387904"); /* never */
	CHECK(mallopt(M_DECAY_TIME, 0) == 1, "M_DECAY_TIME 0");
	option_is("purge_delay_ms", "0");
	CHECK(mallopt(12345, 1) == 0, "unknown parameter accepted");
	CHECK(mallopt(M_MXFAST, 64) == 1 && mallopt(M_MXFAST, 1000) == 0, "M_MXFAST");
	CHECK(mallopt(M_ARENA_MAX, 4) == 1 && mallopt(M_ARENA_MAX, 0) == 0, "M_ARENA_MAX");
	CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1 && mallopt(M_MMAP_THRESHOLD, -1) == 0,
	      "M_MMAP_THRESHOLD");
	CHECK(mallopt(M_TOP_PAD, 0) == 1 && mallopt(M_PERTURB, 0xa5) == 1, "ignored ones");
	CHECK(mallopt(SEFER_M_PURGE_DELAY_MS, -1) == 0, "negative delay accepted");
	CHECK(mallopt(M_PURGE, 0) == 1, "M_PURGE");

	/* M_TRIM_THRESHOLD 0: empty pages purged as they empty: arena (committed) shrinks, and
	 * uordblks (in use) drops by what was freed */
	CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1, "M_TRIM_THRESHOLD");
	static void *v[20000];

	for (int i = 0; i < 20000; i++)
		memset(v[i] = malloc(1024), 1, 1024);
	size_t full = rss();
	struct mallinfo2 at_full = mallinfo2();

	for (int i = 0; i < 20000; i++)
		free(v[i]);
	struct mallinfo2 mi = mallinfo2();

	CHECK(at_full.arena >= mi.arena + ((size_t)8 << 20),
	      "arena %zu -> %zu after freeing 20 MB with delay 0", at_full.arena, mi.arena);
	CHECK(at_full.uordblks >= mi.uordblks + 20000 * 1024, "uordblks %zu -> %zu",
	      at_full.uordblks, mi.uordblks);
	CHECK(rss() + ((size_t)8 << 20) < full, "RSS %zu -> %zu", full, rss());
	CHECK(mallopt(M_TRIM_THRESHOLD, 128 * 1024) == 1, "M_TRIM_THRESHOLD back");
	CHECK(mallopt(SEFER_M_PURGE_DELAY_MS, 10) == 1, "SEFER_M_PURGE_DELAY_MS");
}

static void report(const char *xml)
{
	FILE *f = xml ? fopen(xml, "w+") : tmpfile();
	char *big = malloc((size_t)3 << 20), buf[8192];
	size_t n;

	CHECK(f, "fopen %s", xml);
	if (!f)
		return;
	sink = big;
	CHECK(malloc_info(0, f) == 0, "malloc_info");
	errno = 0;
	CHECK(malloc_info(1, f) == -1 && errno == EINVAL, "malloc_info(1)");
	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	CHECK(!strncmp(buf, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", 42),
	      "head: %.60s", buf);
	CHECK(strstr(buf, "<total type=\"mmap\" count=\"1\""), "the 3 MB block is not \"mmap\"");
	CHECK(n > 10 && !strcmp(buf + n - 10, "</malloc>\n"), "tail");
	CHECK(strstr(buf, "<total type=\"mmap\" count=\"") && strstr(buf, "<system type=\"max\""),
	      "body");
	free(big);
}

static void alignments(void)
{
	void *p = NULL;
	size_t before = rss();

	/* the case: glibc, mimalloc and tcmalloc serve it */
	CHECK(posix_memalign(&p, (size_t)1 << 30, 100) == 0 &&
		      (uintptr_t)p % ((size_t)1 << 30) == 0,
	      "posix_memalign(1 GiB) = %p", p);
	memset(p, 1, 100);
	CHECK(owns(p) && malloc_usable_size(p) >= 100, "1 GiB-aligned block");
	CHECK(rss() < before + ((size_t)1 << 20), "1 GiB-aligned block costs %zu bytes of RSS",
	      rss() - before);
	free(p);
	for (unsigned k = 0; k <= 40; k++) {
		size_t a = (size_t)1 << k;
		char *q = aligned_alloc(a, 1000);

		CHECK(q && (uintptr_t)q % a == 0, "aligned_alloc(2^%u) = %p", k, (void *)q);
		if (!q)
			continue;
		q[0] = q[999] = 1;
		q = realloc(q, 3000);
		CHECK(q && q[0] == 1 && q[999] == 1, "realloc of a 2^%u-aligned block", k);
		free(q);
		p = memalign(a, 10);
		CHECK(p && (uintptr_t)p % a == 0, "memalign(2^%u)", k);
		free(p);
	}
	/*
	 * The largest alignment sefer reports is served (the range it needs, a quarter of the
	 * address space at a quarter, is free in this process), and twice it is refused: until
	 * 2026-12-06 it reported 2^46, which no 47-bit process can serve (core/align.h).
	 */
	size_t max = ((size_t (*)(void))sym("sefer_max_alignment"))();
	char *top = aligned_alloc(max, 1000);

	CHECK(top && (uintptr_t)top % max == 0, "aligned_alloc(sefer_max_alignment() = %#zx) = %p",
	      max, (void *)top);
	if (top) {
		top[0] = top[999] = 1;
		CHECK(owns(top) && malloc_usable_size(top) >= 1000, "the %#zx-aligned block", max);
		free(top);
	}
	errno = 0;
	CHECK(!aligned_alloc(max * 2, 10) && errno == ENOMEM, "aligned_alloc(%#zx) served",
	      max * 2);
	errno = 0;
	CHECK(!aligned_alloc((size_t)1 << 62, 10) && errno == ENOMEM, "2^62 served");
	CHECK(posix_memalign(&p, 3 * sizeof(void *), 10) == EINVAL, "alignment 24");
}

/* Address space the process holds, from /proc/self/statm. */
static size_t vm_size(void)
{
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * A request the machine could never back fails with ENOMEM, as glibc's does, whatever the call
 * (Documentation/architecture.rst): 64 TiB, on a machine with less RAM + swap than that under
 * the kernel's default heuristic overcommit. A realloc to it leaves the block as it was. Then,
 * in a child, RLIMIT_AS lowered to what the process holds plus 256 MiB refuses 1 GiB and still
 * serves 64 MiB.
 */
/* p is NULL with errno ENOMEM; what was served instead is freed (the next check needs the
 * address space). */
static bool refused(void *p)
{
	bool enomem = errno == ENOMEM;

	free(p);
	return !p && enomem;
}

static void never_backed(void)
{
	const size_t huge = (size_t)1 << 46;
	struct sysinfo si;
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = 0, st = -1;
	void *p = NULL;
	char *q;
	pid_t pid;

	if (f) {
		if (fscanf(f, "%d", &mode) != 1)
			mode = 0;
		fclose(f);
	}
	if (mode == 0 && !sysinfo(&si) &&
	    ((double)si.totalram + (double)si.totalswap) * si.mem_unit < (double)huge) {
		CHECK(refused((errno = 0, malloc(huge))), "malloc(64 TiB) served");
		CHECK(refused((errno = 0, calloc((size_t)1 << 23, (size_t)1 << 23))),
		      "calloc(2^23, 2^23) served");
		CHECK(refused((errno = 0, aligned_alloc(4096, huge))),
		      "aligned_alloc(4096, 64 TiB) served");
		CHECK(refused((errno = 0, reallocarray(NULL, (size_t)1 << 36, (size_t)1 << 10))),
		      "reallocarray(NULL, 2^36, 2^10) served");
		st = posix_memalign(&p, (size_t)1 << 30, huge);
		CHECK(st == ENOMEM && !p, "posix_memalign(1 GiB, 64 TiB) gave %d", st);
		free(p);
		for (size_t n = 100; n <= ((size_t)8 << 20); n *= 1000) { /* small, then large */
			q = malloc(n);
			memset(q, 0x5a, n);
			errno = 0;
			CHECK(!realloc(q, huge) && errno == ENOMEM, "realloc(%zu, 64 TiB) served", n);
			CHECK(q[0] == 0x5a && q[n - 1] == 0x5a && malloc_usable_size(q) >= n,
			      "the %zu-byte block changed by a failed realloc", n);
			free(q);
		}
	} else {
		printf("face: never_backed: this machine might back 64 TiB: not checked\n");
	}
	CHECK(refused((errno = 0, calloc(SIZE_MAX / 2, 3))), "calloc overflow served");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { vm_size() + ((size_t)256 << 20), RLIM_INFINITY };

		if (setrlimit(RLIMIT_AS, &rl))
			_exit(3);
		errno = 0;
		if ((sink = malloc((size_t)1 << 30)) || errno != ENOMEM)
			_exit(4);
		q = malloc((size_t)64 << 20);
		if (!q)
			_exit(5);
		memset(q, 1, (size_t)64 << 20);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "RLIMIT_AS child: status %d (3 setrlimit, 4 1 GiB served, 5 64 MiB refused)", st);
}

/*
 * A small program never walks sefer's segment registry: under liburcu-bp a walk registers the
 * thread as a reader (urcu_bp_reader, its thread-local pointer, set) and maps a page of the
 * reader arena. The in-use sample at a heap's first segment did, in the main thread and in each
 * new thread (Documentation/decommit.rst, "The fixed cost per process"). Returns the thread's
 * reader, NULL when it never registered; (void *)1 where liburcu-bp is not loaded.
 */
static void *registry_reader(void *arg)
{
	void **reader = dlsym(RTLD_DEFAULT, "urcu_bp_reader"); /* this thread's instance */
	void *p[64];

	(void)arg;
	for (int i = 0; i < 64; i++)
		p[i] = malloc(16 + (size_t)i * 24);
	for (int i = 0; i < 64; i++)
		free(p[i]);
	return reader ? *reader : (void *)1;
}

static void registry_quiet(void)
{
	pthread_t t;
	void *main_reader = registry_reader(NULL), *thread_reader = NULL;

	if (main_reader == (void *)1) {
		printf("face: no liburcu-bp loaded: registry-quiet not applicable\n");
		return;
	}
	CHECK(pthread_create(&t, NULL, registry_reader, NULL) == 0 &&
		      pthread_join(t, &thread_reader) == 0,
	      "thread");
	CHECK(main_reader == NULL, "the main thread is a liburcu-bp reader: the registry was walked");
	CHECK(thread_reader == NULL, "a new thread is a liburcu-bp reader: the registry was walked");
}

/*
 * libsefer.so loaded by dlopen, as a plugin or a foreign-function interface loads it, not
 * preloaded: its initial-exec TLS (the heap pointer, the direct table's copy, the owned-segment
 * cache) must fit glibc's static TLS surplus, or dlopen fails with "cannot allocate memory in
 * static TLS block". Four threads then allocate and free through the loaded API, so each
 * thread's TLS is set up and used, and the main thread frees what they left after they exit.
 */
#define DL_THREADS 4
#define DL_BLOCKS  512

static void *(*dl_malloc)(size_t);
static void (*dl_free)(void *);
static void *dl_blocks[DL_THREADS][DL_BLOCKS];

static void *dl_worker(void *arg)
{
	size_t t = (size_t)arg;

	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < DL_BLOCKS; i++) {
			size_t size = 8 + (size_t)((i * 37 + round) % 1500);
			unsigned char *p = dl_malloc(size);

			if (!p)
				return "sefer_malloc returned NULL";
			memset(p, (int)t + 1, size);
			dl_blocks[t][i] = p;
		}
		for (int i = 0; i < DL_BLOCKS; i++) {
			unsigned char *p = dl_blocks[t][i];

			if (p[0] != (unsigned char)(t + 1))
				return "a block's contents changed";
			dl_free(p);
		}
	}
	/* blocks left live at exit, freed by the main thread (cross-thread frees) */
	for (int i = 0; i < DL_BLOCKS; i++)
		dl_blocks[t][i] = dl_malloc(64);
	return NULL;
}

static void dlopen_lib(const char *lib)
{
	pthread_t th[DL_THREADS];
	void *why[DL_THREADS];
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	CHECK(h != NULL, "dlopen(%s): %s", lib, dlerror());
	if (!h)
		return;
	dl_malloc = (void *(*)(size_t))dlsym(h, "sefer_malloc");
	dl_free = (void (*)(void *))dlsym(h, "sefer_free");
	CHECK(dl_malloc && dl_free, "sefer_malloc or sefer_free not found in %s", lib);
	if (!dl_malloc || !dl_free)
		return;
	for (size_t t = 0; t < DL_THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, dl_worker, (void *)t) == 0, "thread %zu", t);
	for (size_t t = 0; t < DL_THREADS; t++) {
		CHECK(pthread_join(th[t], &why[t]) == 0, "join %zu", t);
		CHECK(why[t] == NULL, "thread %zu: %s", t, (const char *)why[t]);
	}
	for (size_t t = 0; t < DL_THREADS; t++)
		for (int i = 0; i < DL_BLOCKS; i++)
			dl_free(dl_blocks[t][i]);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	if (!strcmp(mode, "dlopen")) { /* not preloaded: the usual names are glibc's here */
		dlopen_lib(argc > 2 ? argv[2] : "libsefer.so");
		printf("face: %s: %d checks, %d failed\n", mode, checks, failures);
		return failures ? 1 : 0;
	}
	owns = sym("sefer_owns");
	f_free_sized = sym("free_sized");
	f_free_aligned_sized = sym("free_aligned_sized");
	if (!strcmp(mode, "contract")) {
		sized_frees();
	} else if (!strcmp(mode, "sized-bad")) {
		void *p = malloc(100);

		sink = p;
		f_free_sized(p, 4000); /* reported with HARDENED */
		return 0;
	} else if (!strcmp(mode, "aligned-bad")) {
		void *p = aligned_alloc(64, 100);

		f_free_aligned_sized(p, 4096 * 1024, 100); /* not aligned to it */
		return 0;
	} else if (!strcmp(mode, "registry-quiet")) {
		registry_quiet();
	} else if (!strcmp(mode, "delete-warn")) {
		/* M_CHECK_ACTION without bit 1: the double free is reported and the program goes on
		 */
		void (*volatile release)(void *) = free; /* twice, unseen by -Wuse-after-free */
		void *p = malloc(100);

		sink = p;
		mallopt(M_CHECK_ACTION, 1);
		release(p);
		release(p);
		printf("face: still running after the double free\n");
		return 0;
	} else {
		glibc_names();
		sized_frees();
		info();
		opt();
		report(argc > 2 ? argv[2] : NULL);
		alignments();
		never_backed();
	}
	printf("face: %s: %d checks, %d failed\n", mode, checks, failures);
	return failures ? 1 : 0;
}
