// SPDX-License-Identifier: MIT
/*
 * Whole-process behaviour, each case in a fresh child (this binary re-executed): invalid and
 * double frees are reported with the address and abort (or continue with SEFER_ON_ERROR=warn),
 * bad SEFER_* values are named, out of memory returns NULL/ENOMEM, fork from a threaded parent.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/block.h"
#include "core/config.h"
#include "core/heap.h"
#include "core/segment.h"
#include "bad_frees.h"
#include "unit.h"

static char out[8192];
/* Blocks a child allocates only to keep their page in use (sefer_malloc is warn_unused_result). */
static void *volatile kept;

static void *free_it(void *p)
{
	sefer_free(p);
	return NULL;
}

static atomic_int stop_spin;

static void *spin_alloc(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_spin)) {
		void *p[64];

		for (int i = 0; i < 64; i++)
			p[i] = sefer_malloc((size_t)i * 24 + 1);
		for (int i = 0; i < 64; i++)
			sefer_free(p[i]);
	}
	return NULL;
}

/* Free p on a new thread, joined (bad_free_child()'s cross-thread cases). */
static void free_on_thread(void *p)
{
	pthread_t t;

	pthread_create(&t, NULL, free_it, p);
	pthread_join(t, NULL);
}

/*
 * A freer that holds p in its open batch (core/remote.h: not published, it blocks): held_p is
 * freed on it, then `held` is posted and it waits for ever (the child ends at the report).
 */
static sem_t held;

static void *free_and_hold(void *p)
{
	sefer_free(p);
	sem_post(&held);
	for (;;)
		pause();
	return NULL;
}

static void *free_twice(void *p)
{
	sefer_free(p);
	sefer_free(p); /* still in this thread's batch */
	return NULL;
}

/*
 * 1 when the page at p is a private page of this process (written: bit 56 of its pagemap
 * entry, "exclusively mapped"), 0 when it is not mapped or is the shared zero page a read
 * maps (which RSS does not count), -1 when pagemap cannot be read.
 */
static int page_written(uintptr_t p)
{
	FILE *f = fopen("/proc/self/pagemap", "r");
	uint64_t e = 0;
	bool ok = f && !fseek(f, (long)(p / 4096 * sizeof(e)), SEEK_SET) &&
		  fread(&e, sizeof(e), 1, f) == 1;

	if (f)
		fclose(f);
	return ok ? (int)((e >> 63) & (e >> 56) & 1) : -1;
}

int child_main(const char *mode)
{
	char *p;
	int rc = bad_free_child(mode, free_on_thread);

	if (rc >= 0)
		return rc;

	if (!strcmp(mode, "heap-remote-pages")) {
		/* a fresh process's thread that frees only its own blocks */
		struct heap *heap;
		uintptr_t first, last;

		for (size_t n = 16; n <= 64 << 10; n *= 2)
			sefer_free(sefer_malloc(n));
		heap = sefer__heap;
		first = (uintptr_t)heap & ~(uintptr_t)4095;
		last = (uintptr_t)&heap->remote.slot[REMOTE_SLOTS - 1] & ~(uintptr_t)4095;
		fprintf(stderr, "pages=%zu first=%d last=%d\n", (size_t)((last - first) / 4096),
			page_written(first), page_written(last));
		return 0;
	}
	if (!strcmp(mode, "xthread-after-collect") || !strcmp(mode, "xthread-after-local") ||
	    !strcmp(mode, "xthread-interior")) {
		pthread_t t;
		bool interior = !strcmp(mode, "xthread-interior");

		p = sefer_malloc(64);
		kept = sefer_malloc(64); /* keep the page alive */
		fprintf(stderr, "addr=%p\n", (void *)(interior ? p + 16 : p));
		if (!strcmp(mode, "xthread-after-collect")) {
			pthread_create(&t, NULL, free_it, p);
			pthread_join(t, NULL);
			sefer_collect(false); /* the owner takes it back: free, no longer pending */
		} else if (!interior) {
			sefer_free(p);	      /* freed by its owner, then by another thread */
		}
		pthread_create(&t, NULL, free_it, interior ? p + 16 : p);
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(mode, "batch-double-free") || !strcmp(mode, "batch-then-owner-free") ||
	    !strcmp(mode, "batch-then-other-free")) {
		/* A second free of a block that another thread's batch holds, unpublished: by that
		 * thread, by the owner, by a third thread. Its pending mark was written when the
		 * block joined the batch. */
		pthread_t t;

		p = sefer_malloc(64);
		kept = sefer_malloc(64); /* keep the page alive */
		fprintf(stderr, "addr=%p\n", (void *)p);
		if (!strcmp(mode, "batch-double-free")) {
			pthread_create(&t, NULL, free_twice, p);
			pthread_join(t, NULL);
			return 0;
		}
		sem_init(&held, 0, 0);
		pthread_create(&t, NULL, free_and_hold, p);
		sem_wait(&held);
		if (!strcmp(mode, "batch-then-owner-free")) {
			sefer_free(p);
		} else {
			pthread_create(&t, NULL, free_it, p);
			pthread_join(t, NULL);
		}
		return 0;
	}
	if (!strcmp(mode, "self-pointer")) {
		/* Live blocks whose second word points at the block itself (an empty list head at
		 * offset 0 does that), holds a stale copy of a free block's header, or holds the
		 * block's own free mark but for its third byte (the fast path compares the first
		 * two only: segment.h, block_mark_head_matches) are freed by their owner and
		 * by other threads, again and again: none is a free mark (the mark is keyed), so no
		 * report, and the heap stays sound. */
		for (int round = 0; round < 2000; round++) {
			pthread_t t;
			void *q[8];

			for (int i = 0; i < 8; i++) {
				q[i] = sefer_malloc(16 + (size_t)(round % 3) * 16);
				((uintptr_t *)q[i])[0] = (uintptr_t)q[i];
				((uintptr_t *)q[i])[1] = (uintptr_t)q[i];
				if (i & 1) /* the second word a free block of the class had, keyed */
					((uintptr_t *)q[i])[1] = free_mark(q[i ^ 1]);
				if (i % 4 == 2 && sizeof(uintptr_t) == 8) { /* the mark's head only */
					((uintptr_t *)q[i])[1] = free_mark(q[i]);
					((unsigned char *)q[i])[10] ^= 0x5a;
				}
			}
			for (int i = 0; i < 8; i++) {
				if (i < 4) {
					pthread_create(&t, NULL, free_it, q[i]);
					pthread_join(t, NULL);
				} else {
					sefer_free(q[i]);
				}
			}
			if (round % 7 == 0)
				sefer_collect(false);
		}
		return sefer_check_heap() ? 5 : 0;
	}
	if (!strcmp(mode, "uncarved-free") || !strcmp(mode, "xthread-uncarved")) {
		/* a block boundary of a page in use past the blocks it has carved: never handed
		 * out, though its second word is no free mark */
		p = sefer_malloc(64);
		struct page *pg = page_of(segment_of(p), p);
		char *q = (char *)page_start(pg) + (size_t)(pg->capacity - 1) * pg->block_size;

		if (pg->reserved >= pg->capacity)
			return 20;
		fprintf(stderr, "addr=%p\n", (void *)q);
		if (!strcmp(mode, "uncarved-free")) {
			sefer_free(q);
		} else {
			pthread_t t;

			pthread_create(&t, NULL, free_it, q);
			pthread_join(t, NULL);
		}
		return 0;
	}
	if (!strcmp(mode, "corrupt-link") || !strcmp(mode, "corrupt-link-count")) {
		/*
		 * A use-after-free write over a free block's link, then allocate until it is used:
		 * eight bytes of text, or a counter's small number (a stale refcount decremented).
		 * The first frees may stay with a policy that keeps blocks in an array of its own
		 * (fastbin: at most 256 per class, no link to corrupt), so the block overwritten
		 * is freed after 300 others and goes back to its page's list.
		 */
		void *blk[301];

		for (int i = 0; i < 301; i++)
			blk[i] = sefer_malloc(64);
		for (int i = 0; i < 301; i++)
			sefer_free(blk[i]);
		p = blk[300];
		fprintf(stderr, "addr=%p\n", (void *)p);
		if (!strcmp(mode, "corrupt-link"))
			memset(p, 0x41, 8);
		else
			*(uintptr_t *)p = 41;
		for (int i = 0; i < 100000; i++)
			kept = sefer_malloc(64);
		return 0; /* not reached with CONFIG_HARDENED or CONFIG_DEBUG_FREE_LIST */
	}
	if (!strcmp(mode, "bad-env")) {
		p = sefer_malloc(10);
		sefer_free(p);
		return 0;
	}
	if (!strcmp(mode, "rlimit-as")) {
		/* RLIMIT_AS as it is when the request comes, not as it was at init: lowered to
		 * what the process holds plus 256 MiB, it refuses 1 GiB (a realloc to it keeps
		 * the block) and serves 64 MiB; raised again, it serves 1 GiB. */
		struct rlimit rl = { 0, RLIM_INFINITY };
		long pages = 0;
		FILE *f = fopen("/proc/self/statm", "r");
		char *q;

		if (!f || fscanf(f, "%ld", &pages) != 1)
			return 30;
		fclose(f);
		p = sefer_malloc((size_t)8 << 20);
		if (!p)
			return 31;
		memset(p, 0x3c, (size_t)8 << 20);
		rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
		if (setrlimit(RLIMIT_AS, &rl))
			return 32;
		errno = 0;
		if ((kept = sefer_malloc((size_t)1 << 30)) || errno != ENOMEM)
			return 33;
		errno = 0;
		if ((kept = sefer_realloc(p, (size_t)1 << 30)) || errno != ENOMEM)
			return 34;
		if (p[0] != 0x3c || p[((size_t)8 << 20) - 1] != 0x3c)
			return 35;
		q = sefer_malloc((size_t)64 << 20);
		if (!q)
			return 36;
		memset(q, 1, (size_t)64 << 20);
		sefer_free(q);
		rl.rlim_cur = RLIM_INFINITY;
		if (setrlimit(RLIMIT_AS, &rl) || !(q = sefer_realloc(p, (size_t)1 << 30)) ||
		    q[((size_t)8 << 20) - 1] != 0x3c)
			return 37;
		sefer_free(q);
		fprintf(stderr, "rlimit-as: refused and served as the limit in force says\n");
		return 0;
	}
	if (!strcmp(mode, "oom")) {
		struct rlimit rl = { (rlim_t)512 << 20, (rlim_t)512 << 20 };
		size_t n = 0;

		if (setrlimit(RLIMIT_AS, &rl))
			return 10;
		errno = 0;
		if (sefer_malloc((size_t)1 << 30) || errno != ENOMEM)
			return 11;
		errno = 0;
		if (sefer_calloc(1, (size_t)700 << 20) || errno != ENOMEM)
			return 12;
		for (;;) { /* small blocks until the address space runs out: NULL, not a crash */
			errno = 0;
			p = sefer_malloc(1000);
			if (!p)
				break;
			p[0] = 1;
			n++;
		}
		if (errno != ENOMEM || n < 1000)
			return 13;
		fprintf(stderr, "oom after %zu blocks\n", n);
		return 0;
	}
	if (!strcmp(mode, "fork")) {
		pthread_t t[4];

		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, spin_alloc, NULL);
		for (int round = 0; round < 50; round++) {
			pid_t pid = fork();

			if (pid == 0) {
				/* the other threads are gone, maybe mid-allocation: we must still work */
				for (int i = 0; i < 10000; i++)
					sefer_free(sefer_malloc((size_t)i % 5000));
				pthread_t c;

				pthread_create(&c, NULL, spin_alloc, NULL);
				atomic_store(&stop_spin, 1);
				pthread_join(c, NULL);
				_exit(sefer_check_heap() ? 2 : 0);
			}
			int st;

			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				return 20;
		}
		atomic_store(&stop_spin, 1);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	rc = hardening_child(mode);
	if (rc < 0)
		rc = heaps_move_child(mode);
	return rc >= 0 ? rc : 99;
}

/* The child printed "addr=0x..." first: the report must name that address and the reason. */
static void expect_report(const char *mode, const char *const *env, const char *what,
			  const char *reason, bool aborts)
{
	int st = run_child(mode, env, out, sizeof(out));
	char want[128];
	const char *a = strstr(out, "addr=");

	ck_assert_msg(a, "child printed no address: %s", out);
	snprintf(want, sizeof(want), "sefer: %s of %.*s (", what, (int)strcspn(a + 5, "\n"), a + 5);
	ck_assert_msg(strstr(out, want), "expected '%s' in: %s", want, out);
	ck_assert_msg(strstr(out, reason), "expected reason '%s' in: %s", reason, out);
	if (aborts)
		ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d: %s", st, out);
	else
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
}

/* Each bad free reported with its address and reason, then abort (CONFIG_DEBUG_DOUBLE_FREE). */
static const struct bad_free bad_frees[] = {
	BAD_FREES_COMMON,
	{ "xthread-after-collect", "double free", "already free", false },
	{ "xthread-after-local", "double free", "already free", false },
	{ "xthread-interior", "invalid free", "inside of a block", false },
	{ "uncarved-free", "invalid free", "not inside an allocated block", false },
	{ "xthread-uncarved", "invalid free", "not inside an allocated block", false },
	{ "batch-double-free", "double free", "already free", false },
	{ "batch-then-owner-free", "double free", "cross-thread, pending", false },
	{ "batch-then-other-free", "double free", "already free", false },
};

static const struct bad_free bad_frees_always[] = {
	BAD_FREES_ALWAYS,
};

static void expect_bad_free(const struct bad_free *t)
{
	static const char *const warn_env[] = { "SEFER_ON_ERROR=warn", NULL };

	expect_report(t->mode, t->warn ? warn_env : NULL, t->what, t->reason, !t->warn);
}

START_TEST(bad_free_aborts)
{
	expect_bad_free(&bad_frees[_i]);
}
END_TEST

START_TEST(bad_free_always)
{
	expect_bad_free(&bad_frees_always[_i]);
}
END_TEST

/* A live block whose second word points at itself is not mistaken for a free one. */
START_TEST(self_pointer_ok)
{
	int st = run_child("self-pointer", NULL, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(!strstr(out, "sefer:"), "unexpected report: %s", out);
}
END_TEST

/* Both writes leave a link outside the block's segment: reported, then abort. */
START_TEST(corrupt_link_detected)
{
	int st = run_child(_i ? "corrupt-link-count" : "corrupt-link", NULL, out, sizeof(out));

	ck_assert_msg(strstr(out, "sefer: heap corruption: free-list link overwritten"), "%s", out);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d: %s", st, out);
}
END_TEST

START_TEST(bad_env_named)
{
	static const char *const env[] = { "SEFER_PURGE_DELAY_MS=soon", "SEFER_ON_ERROR=maybe",
					   "SEFER_SHOW_STATS=often",
					   "SEFER_CALLOC_PREFAULT=99999999999999999999", NULL };
	int st = run_child("bad-env", env, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, "bad value 'soon' for SEFER_PURGE_DELAY_MS"), "%s", out);
	ck_assert_msg(strstr(out, "bad value 'maybe' for SEFER_ON_ERROR"), "%s", out);
	ck_assert_msg(strstr(out, "bad value 'often' for SEFER_SHOW_STATS (expected 0, 1, 2 or json "
				  "(yes, true, on: 1; no, false, off: 0)); keeping 0 (default)"),
		      "%s", out);
	ck_assert_msg(strstr(out, "value '99999999999999999999' for SEFER_CALLOC_PREFAULT is out "
				  "of range (0 to 18446744073709551615)"), "%s", out);
}
END_TEST

/* An unknown SEFER_* variable is named, with the nearest option when it looks like a typo. */
START_TEST(unknown_env_named)
{
	static const char *const env[] = { "SEFER_SHOW_STAT=1", "SEFER_PURGE_DELAY=5",
					   "SEFER_NO_SUCH_THING=1", "SEFER_TEST_NOT_AN_OPTION=1",
					   "SEFER_LUA_TIMES=1", NULL };
	int st = run_child("bad-env", env, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, "sefer: unknown option SEFER_SHOW_STAT (did you mean "
				  "SEFER_SHOW_STATS?)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: unknown option SEFER_PURGE_DELAY (did you mean "
				  "SEFER_PURGE_DELAY_MS?)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: unknown option SEFER_NO_SUCH_THING (sefer(7) lists "
				  "them)\n"), "%s", out);
	/* the test harness's and the Lua host's variables are not options */
	ck_assert_msg(!strstr(out, "SEFER_TEST_") && !strstr(out, "SEFER_LUA_"), "%s", out);
	ck_assert_msg(!strstr(out, "stats:"), "SEFER_SHOW_STAT taken for SHOW_STATS: %s", out);
}
END_TEST

/*
 * An option of a policy the build leaves out (here large_cache, with CONFIG_POLICY_LARGE_CACHE
 * off, as in linux_min_defconfig) is named as such, its Kconfig symbol with it, not as an
 * unknown name with a far-fetched "did you mean"; the program runs on. With the policy built
 * the same settings are applied without a word.
 */
START_TEST(policy_option_built_out)
{
	static const char *const env[] = { "SEFER_LARGE_CACHE_BUDGET=1M",
					   "SEFER_OPTIONS=large_cache_headroom=0", NULL };
	int st = run_child("bad-env", env, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE)) {
		ck_assert_msg(!strstr(out, "LARGE_CACHE") && !strstr(out, "large_cache"), "%s",
			      out);
		return;
	}
	ck_assert_msg(strstr(out, "sefer: SEFER_LARGE_CACHE_BUDGET is an option of the large_cache "
				  "policy, which this build leaves out (CONFIG_POLICY_LARGE_CACHE "
				  "is not set): ignored\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: SEFER_OPTIONS: large_cache_headroom is an option of the "
				  "large_cache policy, which this build leaves out "
				  "(CONFIG_POLICY_LARGE_CACHE is not set): ignored\n"), "%s", out);
	ck_assert_msg(!strstr(out, "unknown option"), "%s", out);
}
END_TEST

/*
 * A thread that never frees into another heap never writes the last OS page of its heap
 * struct, the remote-free slots (core/heap.h): 4 KiB a thread. Fails with the slots in the
 * middle of the struct, or with a reset that writes every slot.
 */
START_TEST(heap_remote_slots_untouched)
{
	size_t pages = 0;
	int first = 0, last = 1;
	int st = run_child("heap-remote-pages", NULL, out, sizeof(out));
	const char *line = strstr(out, "pages=");

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(line && sscanf(line, "pages=%zu first=%d last=%d", &pages, &first,
				      &last) == 3, "%s", out);
	ck_assert_uint_ge(pages, 1); /* the slots reach past the struct's first page */
	ck_assert_int_eq(first, 1); /* written, and pagemap readable */
	ck_assert_msg(last == 0, "the remote-free slots' page was written: %s", out);
}
END_TEST

/* SEFER_OPTIONS sets several at once; its errors name the key; a variable wins over it. */
START_TEST(options_variable)
{
	static const char *const env[] = {
		"SEFER_OPTIONS=purge_delay_ms=0,on_error=warn,purge_dely=3,calloc_prefault=lots,"
		"verbose=yes,show_stats,CALLOC_PREFAULT=1M,large_cache_budget=99999999999999999999",
		"SEFER_ON_ERROR=abort", NULL
	};
	int st = run_child("bad-env", env, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, "sefer: SEFER_OPTIONS: unknown option purge_dely (did you mean "
				  "purge_delay_ms?)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: SEFER_OPTIONS: bad value 'lots' for calloc_prefault "
				  "(expected a byte count"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: SEFER_OPTIONS: 'show_stats' is not key=value\n"), "%s",
		      out);
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE))
		ck_assert_msg(strstr(out, "sefer: SEFER_OPTIONS: value '99999999999999999999' for "
					  "large_cache_budget is out of range"), "%s", out);
	/* verbose=yes from SEFER_OPTIONS lists every option with its origin */
	ck_assert_msg(strstr(out, "sefer: option SEFER_PURGE_DELAY_MS=0 (SEFER_OPTIONS)\n"), "%s",
		      out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_CALLOC_PREFAULT=1M (SEFER_OPTIONS)\n"),
		      "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_VERBOSE=1 (SEFER_OPTIONS)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_ON_ERROR=abort (environment)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_SHOW_STATS=0 (default)\n"), "%s", out);
}
END_TEST

/* SEFER_VERBOSE=1 lists every option, each with its value and where it came from. */
START_TEST(verbose_lists_options)
{
	static const char *const env[] = { "SEFER_VERBOSE=on", "SEFER_PURGE_DELAY_MS=7", NULL };
	int st = run_child("bad-env", env, out, sizeof(out));
	unsigned lines = 0;

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	for (const char *l = out; (l = strstr(l, "sefer: option SEFER_")); l++)
		lines++;
	ck_assert_uint_eq(lines, IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) ? 9 : 7);
	ck_assert_msg(strstr(out, "sefer: option SEFER_VERBOSE=1 (environment)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_PARKED_HEAPS=32 (default)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_THP="), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_PURGE_DELAY_MS=7 (environment)\n"), "%s",
		      out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_ON_ERROR=abort (default)\n"), "%s", out);
	ck_assert_msg(strstr(out, "sefer: option SEFER_CALLOC_PREFAULT="), "%s", out);
	ck_assert_msg(strstr(out, "sefer: initialised"), "%s", out);
}
END_TEST

START_TEST(out_of_memory)
{
	int st = run_child("oom", NULL, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, "oom after"), "%s", out);
}
END_TEST

START_TEST(rlimit_as_in_force)
{
	int st = run_child("rlimit-as", NULL, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
	ck_assert_msg(strstr(out, "rlimit-as: refused and served"), "%s", out);
}
END_TEST

START_TEST(fork_from_threads)
{
	int st = run_child("fork", NULL, out, sizeof(out));

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
}
END_TEST

Suite *process_suite(void)
{
	Suite *s = suite_create("process");
	TCase *tc = tcase_create("errors");
	TCase *tp = tcase_create("process");

	/* Pointers outside every segment are caught in every configuration; double and
	 * interior frees need the free marks and the block-start test. */
	if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)) {
		tcase_add_loop_test(tc, bad_free_aborts, 0,
				    (int)(sizeof(bad_frees) / sizeof(bad_frees[0])));
		tcase_add_test(tc, self_pointer_ok);
	} else {
		printf("CONFIG_DEBUG_DOUBLE_FREE=n: double and interior free tests not built\n");
	}
	tcase_add_loop_test(tc, bad_free_always, 0,
			    (int)(sizeof(bad_frees_always) / sizeof(bad_frees_always[0])));
	if (IS_ENABLED(CONFIG_HARDENED) || IS_ENABLED(CONFIG_DEBUG_FREE_LIST))
		tcase_add_loop_test(tc, corrupt_link_detected, 0, 2);
	tcase_add_test(tc, bad_env_named);
	tcase_add_test(tc, unknown_env_named);
	tcase_add_test(tc, policy_option_built_out);
	tcase_add_test(tc, options_variable);
#ifdef __linux__
	tcase_add_test(tc, heap_remote_slots_untouched);
#endif
	tcase_add_test(tc, verbose_lists_options);
	suite_add_tcase(s, tc);
	tcase_add_test(tp, out_of_memory);
	tcase_add_test(tp, rlimit_as_in_force);
	tcase_add_test(tp, fork_from_threads);
	tcase_set_timeout(tp, 120);
	suite_add_tcase(s, tp);
	return s;
}
