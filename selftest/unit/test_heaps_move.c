// SPDX-License-Identifier: MIT
/*
 * Moving a first-class heap between threads (sefer_heap_release / sefer_heap_adopt,
 * Documentation/heaps.rst) and a heap's own figures (sefer_heap_stats). Each misuse of the
 * protocol runs in a child process with the default SEFER_ON_ERROR=abort: the child must die
 * of SIGABRT with the report that names the call and the reason. Part of the "heaps" suite.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "core/config.h"
#include "heaps.h"

#if IS_ENABLED(CONFIG_HEAPS)

/* ---- sefer_heap_stats: exact for a heap nobody runs meanwhile ---- */
START_TEST(heap_stats_known_set)
{
	enum { N = 500 };
	static void *p[N];
	struct sefer_heap *h = sefer_heap_new();
	struct sefer_heap_stats st, def0, def1;
	void *big[2], *mine[10];
	uint64_t small = 0, large = 0;

	ck_assert_ptr_nonnull(h);
	for (int i = 0; i < N; i++) {
		p[i] = sefer_heap_malloc(h, 48 + (size_t)(i % 5) * 40);
		small += sefer_usable_size(p[i]);
	}
	for (int i = 0; i < 2; i++) {
		big[i] = sefer_heap_malloc(h, LARGE * (size_t)(i + 1));
		large += sefer_usable_size(big[i]);
	}
	ck_assert_uint_eq(sefer_heap_stats(h, &st, sizeof(st)), sizeof(st));
	ck_assert_uint_eq(st.in_use_blocks, N + 2);
	ck_assert_uint_eq(st.in_use_bytes, small + large);
	ck_assert_uint_eq(st.large_blocks, 2);
	ck_assert_uint_eq(st.large_bytes, large);
	ck_assert_uint_ge(st.segments, 1);
	ck_assert_uint_ge(st.committed, st.in_use_bytes);
	ck_assert_uint_eq(st.in_use_peak_blocks, N + 2);
	for (int i = 0; i < N; i += 2)
		sefer_free(p[i]);
	sefer_free(big[1]);
	sefer_heap_stats(h, &st, sizeof(st));
	ck_assert_uint_eq(st.in_use_blocks, N / 2 + 1);
	ck_assert_uint_eq(st.in_use_peak_blocks, N + 2); /* the peak stays */
	ck_assert_uint_eq(st.in_use_peak_bytes, small + large);
	/* NULL: the calling thread's default heap */
	sefer_heap_stats(NULL, &def0, sizeof(def0));
	for (int i = 0; i < 10; i++)
		mine[i] = sefer_malloc(64);
	sefer_heap_stats(NULL, &def1, sizeof(def1));
	ck_assert_uint_eq(def1.in_use_blocks - def0.in_use_blocks, 10);
	for (int i = 0; i < 10; i++)
		sefer_free(mine[i]);
	/* a smaller, older struct: only its fields */
	struct {
		uint64_t in_use_bytes, in_use_blocks, canary;
	} old = {0, 0, 77};
	ck_assert_uint_eq(sefer_heap_stats(h, (struct sefer_heap_stats *)&old, 16), 16);
	ck_assert_uint_eq(old.in_use_blocks, N / 2 + 1);
	ck_assert_uint_eq(old.canary, 77);
	sefer_heap_destroy(h);
}
END_TEST

/* ---- hand-off: made and filled on one thread, used and destroyed on another ---- */
struct handoff {
	struct sefer_heap *h;
	void *p[100];
	bool ok;
};

static void *make_and_release(void *arg)
{
	struct handoff *m = arg;

	m->h = sefer_heap_new();
	for (int i = 0; i < 100; i++) {
		m->p[i] = sefer_heap_malloc(m->h, 24 + (size_t)i);
		memset(m->p[i], 0x5c, 24);
	}
	m->ok = sefer_heap_release(m->h);
	/* the old owner may still free the heap's blocks: now cross-thread frees */
	for (int i = 0; i < 100; i += 4)
		sefer_free(m->p[i]);
	return NULL;
}

static void *adopt_and_run(void *arg)
{
	struct handoff *m = arg;
	struct sefer_heap_stats st;
	void *q[200];

	if (!sefer_heap_adopt(m->h))
		return NULL;
	for (int i = 0; i < 200; i++)
		if (!(q[i] = sefer_heap_malloc(m->h, 40)))
			return NULL;
	for (int i = 1; i < 100; i++)
		if (i % 4)
			sefer_free(m->p[i]); /* frees by the new owner: local */
	sefer_heap_collect(m->h, true);
	sefer_heap_stats(m->h, &st, sizeof(st));
	m->ok = st.in_use_blocks == 200;
	for (int i = 0; i < 200; i++)
		sefer_free(q[i]);
	sefer_heap_destroy(m->h);
	return NULL;
}

START_TEST(handoff_between_threads)
{
	static struct handoff m;
	pthread_t t;

	for (int round = 0; round < 20; round++) {
		m.ok = false;
		pthread_create(&t, NULL, make_and_release, &m);
		pthread_join(t, NULL); /* the maker has exited: released, not orphaned */
		ck_assert(m.ok);
		m.ok = false;
		pthread_create(&t, NULL, adopt_and_run, &m);
		pthread_join(t, NULL);
		ck_assert(m.ok);
		ck_assert_uint_eq(sefer_check_heap(), 0);
	}
}
END_TEST

/* Released, then adopted back by the same thread; a released heap may be destroyed. */
START_TEST(release_adopt_same_thread_and_destroy_released)
{
	struct sefer_heap *h = sefer_heap_new(), *g = sefer_heap_new();
	void *p = sefer_heap_malloc(h, 100);

	ck_assert(sefer_heap_release(h));
	sefer_free(p); /* pushed like a cross-thread free */
	ck_assert(sefer_heap_adopt(h));
	ck_assert_ptr_nonnull(p = sefer_heap_malloc(h, 100));
	sefer_free(p);
	sefer_heap_destroy(h);
	ck_assert_ptr_nonnull(sefer_heap_malloc(g, 300));
	ck_assert(sefer_heap_release(g));
	sefer_heap_destroy(g); /* any thread may destroy a released heap */
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* ---- misuses, one child each ---- */
static void *release_it(void *arg)
{
	return (void *)(uintptr_t)sefer_heap_release(arg);
}

static void *hold_heap(void *arg)
{
	struct sefer_heap **h = arg;

	*h = sefer_heap_new();
	return NULL;
}

int heaps_move_child(const char *mode)
{
	struct sefer_heap *h;
	struct sefer_heap_stats st;
	pthread_t t;

	if (strncmp(mode, "move-", 5))
		return -1;
	h = sefer_heap_new();
	if (!strcmp(mode, "move-release-not-owner")) {
		pthread_create(&t, NULL, release_it, h);
		pthread_join(t, NULL);
	} else if (!strcmp(mode, "move-release-twice")) {
		(void)sefer_heap_release(h);
		(void)sefer_heap_release(h);
	} else if (!strcmp(mode, "move-malloc-released")) {
		(void)sefer_heap_release(h);
		if (sefer_heap_malloc(h, 16))
			return 1;
	} else if (!strcmp(mode, "move-adopt-owned")) {
		(void)sefer_heap_adopt(h);
	} else if (!strcmp(mode, "move-adopt-other")) {
		pthread_create(&t, NULL, hold_heap, &h);
		pthread_join(t, NULL); /* h is now an orphan: not released */
		(void)sefer_heap_adopt(h);
	} else if (!strcmp(mode, "move-adopt-destroyed")) {
		sefer_heap_destroy(h);
		(void)sefer_heap_adopt(h);
	} else if (!strcmp(mode, "move-stats-destroyed")) {
		sefer_heap_destroy(h);
		(void)sefer_heap_stats(h, &st, sizeof(st));
	} else {
		return -1;
	}
	return 0; /* not reached: the report aborts */
}

/* Each misuse of the protocol: the child's mode, the call and the reason the report names */
static const struct misuse {
	const char *mode, *call, *why;
} misuses[] = {
	{"move-release-not-owner", "sefer_heap_release", "does not own the heap"},
	{"move-release-twice", "sefer_heap_release", "was released"},
	{"move-malloc-released", "sefer_heap_malloc", "sefer_heap_adopt it first"},
	{"move-adopt-owned", "sefer_heap_adopt", "the caller owns it already"},
	{"move-adopt-other", "sefer_heap_adopt (the heap must be released first)", "thread exited"},
	{"move-adopt-destroyed", "sefer_heap_adopt", "not a live heap"},
	{"move-stats-destroyed", "sefer_heap_stats", "not a live heap"},
};

START_TEST(misuse_reported_and_aborts)
{
	const struct misuse *m = &misuses[_i];
	char out[4096];
	int st = run_child(m->mode, NULL, out, sizeof(out));

	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: status %d: %s", m->mode, st,
		      out);
	ck_assert_msg(strstr(out, "heap misuse") && strstr(out, m->call) && strstr(out, m->why),
		      "%s: %s", m->mode, out);
}
END_TEST

void heaps_add_move_tests(TCase *tc)
{
	tcase_add_test(tc, heap_stats_known_set);
	tcase_add_test(tc, handoff_between_threads);
	tcase_add_test(tc, release_adopt_same_thread_and_destroy_released);
	tcase_add_loop_test(tc, misuse_reported_and_aborts, 0,
			    (int)(sizeof(misuses) / sizeof(misuses[0])));
}

#else
int heaps_move_child(const char *mode)
{
	(void)mode;
	return -1;
}
#endif
