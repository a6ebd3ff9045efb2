// SPDX-License-Identifier: MIT
/*
 * Thread generations: what an exiting thread leaves is reused by the next one, stays bounded,
 * and goes back to the OS once no other thread is left to reuse it.
 *
 *  - parked heaps: an exiting thread's heap is kept whole; the next thread takes it over (the
 *    one it frees into first, when its first call is a free) and allocates from its pages;
 *    at most SEFER_PARKED_HEAPS are kept; their free pages are purged after the delay by
 *    another thread's slow path; the last exit and sefer_collect(true) dismantle them.
 *  - spares: a thread's empty segments become spares; the next thread maps none of its own.
 *  - reclaim, not adopt-on-free (with parking off, SEFER_PARKED_HEAPS=0, or past its bound): a
 *    thread that only frees an exited thread's blocks does not take its segments over; the
 *    next thread that needs memory reclaims them, first the ones it has freed into (two lanes
 *    of thread rounds each take their own predecessor's memory).
 *  - bounded: 40 generations of threads that share items keep the segment count where the
 *    first generations left it; when the last worker exits, committed bytes and RSS come back.
 *  - deferred purge: an abandoned segment's free pages are purged after the purge delay by
 *    another thread's slow path, not at exit, while that thread lives.
 *  - partial pages: the page a bin was allocating from, with live blocks, is left with its
 *    free list at exit; the next thread allocates from it with every block accounted for,
 *    and what is left is returned when the last worker exits.
 *  - hand-off kept: when the next thread takes over what the last worker left right away,
 *    the next last worker's exit leaves its memory dirty for the thread after it, which
 *    reuses it warm; after a pause longer than the longest delay, the last exit purges again.
 *  - unowned backoff: slots the global pass purged, taken by a span soon after, raise the
 *    delay of the segments no heap owns.
 *
 * Counts come from sefer_stats (CONFIG_STATS); RSS is checked with CONFIG_DECOMMIT and
 * without a sanitizer, as in test_decommit.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core/block.h"
#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
#include "core/purge.h"
#include "sefer/os.h"
#include "selftest/decommit/workload.h"
#include "keepalive.h"
#include "unit.h"

#define MiB ((size_t)1 << 20)
#define STATS IS_ENABLED(CONFIG_STATS)
/* With SEGMENT_CACHE=0 a heap unmaps a segment as soon as it is empty, so a thread that fills
 * and frees leaves no spare behind and the next one maps again: that is the option's point. */
#define KEEPS_EMPTY (STATS && CONFIG_SEGMENT_CACHE > 0)
#define CHECK_RSS (IS_ENABLED(CONFIG_DECOMMIT) && !SANITIZED)

static struct sefer_stats stats(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st, sizeof(st));
	return st;
}

/* A thread that stays alive (with a heap) until told to stop: the exits under test are then
 * never the last but one, which purges everything at once. It allocates on request
 * (keepalive_malloc). */
static atomic_int keep_running, keep_ready;
static atomic_size_t keep_alloc_size;
static void *_Atomic keep_alloc_block;

static void *keepalive(void *arg)
{
	(void)arg;
	sefer_free(sefer_malloc(32));
	atomic_store(&keep_ready, 1);
	while (atomic_load(&keep_running)) {
		size_t n = atomic_load(&keep_alloc_size);

		if (n) {
			atomic_store(&keep_alloc_block, sefer_malloc(n));
			atomic_store(&keep_alloc_size, 0);
		}
		decommit_sleep_ms(1);
	}
	return NULL;
}

/*
 * sefer_malloc(n), n > 32, by the keepalive thread: its heap has a page of 32-byte blocks
 * only, so the call takes its slow path to a new span, which then purges what is due. (This
 * thread's own heap may hold pages of any class, the C library's blocks among them, when the
 * tests run in one process: a free block of a larger class is borrowed instead.)
 */
static void *keepalive_malloc(size_t n)
{
	atomic_store(&keep_alloc_block, NULL);
	atomic_store(&keep_alloc_size, n);
	while (atomic_load(&keep_alloc_size))
		decommit_sleep_ms(1);
	return atomic_load(&keep_alloc_block);
}

pthread_t start_keepalive(void)
{
	pthread_t t;

	sefer_free(sefer_malloc(32)); /* this thread has a heap too (not so under a sanitizer,
				       * whose runtime owns malloc) */
	atomic_store(&keep_running, 1);
	atomic_store(&keep_ready, 0);
	pthread_create(&t, NULL, keepalive, NULL);
	while (!atomic_load(&keep_ready)) /* its heap exists before anything is measured */
		decommit_sleep_ms(1);
	return t;
}

void stop_keepalive(pthread_t t)
{
	atomic_store(&keep_running, 0);
	pthread_join(t, NULL);
}

/*
 * The tests of what a dismantled heap leaves (spares, abandoned segments, reclaim) run with
 * parking off and no heap parked (an earlier test's, when the runner does not fork); the
 * option comes back with parking_back().
 */
static uint64_t parked_heaps_opt;

static void parking_off(void)
{
	parked_heaps_opt = sefer__opt.parked_heaps;
	sefer__opt.parked_heaps = 0;
	sefer__parked_dismantle();
}

static void parking_back(void)
{
	sefer__opt.parked_heaps = parked_heaps_opt;
}

#define SPARE_BYTES (6 * MiB)

static void *fill_v[SPARE_BYTES / 256]; /* not from sefer: a large block maps a segment */

static void *fill_and_free(void *arg)
{
	size_t n = SPARE_BYTES / 256;

	for (size_t i = 0; i < n; i++) {
		fill_v[i] = sefer_malloc(256);
		memset(fill_v[i], 1, 256);
	}
	for (size_t i = 0; i < n; i++)
		sefer_free(fill_v[i]);
	(void)arg;
	return NULL;
}

START_TEST(spares_serve_the_next_thread)
{
	pthread_t k = start_keepalive(), t;

	pthread_create(&t, NULL, fill_and_free, NULL);
	pthread_join(t, NULL);
	struct sefer_stats st0 = stats();

	for (int gen = 0; gen < 10; gen++) {
		pthread_create(&t, NULL, fill_and_free, NULL);
		pthread_join(t, NULL);
	}
	struct sefer_stats st1 = stats();

	if (KEEPS_EMPTY)
		ck_assert_msg(st1.segments_mapped == st0.segments_mapped,
			      "10 more generations mapped %lld more segments",
			      (long long)(st1.segments_mapped - st0.segments_mapped));
	stop_keepalive(k);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

#define NLEFT 2000
static void *left[NLEFT];

static void *alloc_and_leave(void *arg)
{
	(void)arg;
	for (int i = 0; i < NLEFT; i++) {
		left[i] = sefer_malloc(48 + (size_t)(i % 8) * 16);
		memset(left[i], 7, 48);
	}
	return NULL; /* exits with every block live: its segments are abandoned */
}

static void *alloc_some(void *arg)
{
	void **v = arg;

	for (int i = 0; i < NLEFT; i++)
		v[i] = sefer_malloc(48 + (size_t)(i % 8) * 16);
	return NULL;
}

START_TEST(freeing_thread_does_not_adopt)
{
	pthread_t k, t;
	struct segment *seg;
	static void *again[NLEFT];

	parking_off();
	k = start_keepalive();

	pthread_create(&t, NULL, alloc_and_leave, NULL);
	pthread_join(t, NULL);
	seg = segment_of(left[0]);
	ck_assert_ptr_null(atomic_load(&seg->owner));
	/* this (older) thread frees them all: pushed as cross-thread frees, nothing adopted */
	for (int i = 0; i < NLEFT; i++) {
		ck_assert_uint_eq(((uint8_t *)left[i])[0], 7);
		sefer_free(left[i]);
	}
	ck_assert_ptr_null(atomic_load(&seg->owner));
	struct sefer_stats st0 = stats();

	/* a new thread that needs memory reclaims the segment and reuses its blocks */
	pthread_create(&t, NULL, alloc_some, again);
	pthread_join(t, NULL);
	struct sefer_stats st1 = stats();
	bool reused = false;

	for (int i = 0; i < NLEFT; i++)
		reused |= segment_of(again[i]) == seg;
	ck_assert_msg(reused, "the next thread did not reuse the abandoned segment");
	if (STATS)
		ck_assert_uint_gt(st1.reclaimed, st0.reclaimed);
	if (KEEPS_EMPTY)
		ck_assert_uint_eq(st1.segments_mapped, st0.segments_mapped);
	for (int i = 0; i < NLEFT; i++)
		sefer_free(again[i]);
	stop_keepalive(k);
	parking_back();
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* Two lanes, as in larson-rounds: lane l's thread fills lane_v[l] and stays alive until told
 * to exit, so the two lanes' blocks are in different segments. */
#define NLANE 2000
#define LANE_SIZE 64
static void *lane_v[2][NLANE];
static void *lane_again[NLANE / 2];
static atomic_int lanes_ready, lane_exit[2];

static void *lane_fill(void *arg)
{
	int l = (int)(intptr_t)arg;

	for (int i = 0; i < NLANE; i++) {
		lane_v[l][i] = sefer_malloc(LANE_SIZE);
		memset(lane_v[l][i], 'a' + l, LANE_SIZE);
	}
	atomic_fetch_add(&lanes_ready, 1);
	while (!atomic_load(&lane_exit[l]))
		decommit_sleep_ms(1);
	return NULL; /* exits with every block live: its segment is abandoned */
}

struct successor {
	struct segment *own, *other;
	struct heap *me, *own_owner, *other_owner;
};

/* Lane 0's next thread: frees half its predecessor's blocks, then allocates as many. */
static void *lane_successor(void *arg)
{
	struct successor *s = arg;

	/* no ck_assert here: Check's bookkeeping mallocs, which would reclaim before the frees */
	for (int i = 0; i < NLANE / 2; i++)
		sefer_free(lane_v[0][i]);
	for (int i = 0; i < NLANE / 2; i++)
		lane_again[i] = sefer_malloc(LANE_SIZE);
	s->me = heap_get();
	s->own_owner = atomic_load(&s->own->owner);
	s->other_owner = atomic_load(&s->other->owner);
	return NULL;
}

/* Both lanes fill (lane 1 while lane 0 lives) and exit, lane 0 first. */
static void lanes_fill_and_exit(struct successor *s)
{
	pthread_t t[2];

	atomic_store(&lanes_ready, 0);
	for (int l = 0; l < 2; l++) {
		atomic_store(&lane_exit[l], 0);
		pthread_create(&t[l], NULL, lane_fill, (void *)(intptr_t)l);
		while (atomic_load(&lanes_ready) <= l) /* lane 1 fills while lane 0 lives */
			decommit_sleep_ms(1);
	}
	for (int l = 0; l < 2; l++) { /* lane 0 exits first */
		atomic_store(&lane_exit[l], 1);
		pthread_join(t[l], NULL);
	}
	s->own = segment_of(lane_v[0][0]);
	s->other = segment_of(lane_v[1][0]);
	ck_assert_ptr_ne(s->own, s->other);
}

/* Lane 0's successor allocated from lane 0's segment; then everything is checked and freed. */
static void lanes_check_and_free(const struct successor *s)
{
	for (int i = 0; i < NLANE / 2; i++)
		ck_assert_ptr_eq(segment_of(lane_again[i]), s->own);
	for (int i = 0; i < NLANE / 2; i++) {
		sefer_free(lane_again[i]);
		sefer_free(lane_v[0][NLANE / 2 + i]);
	}
	for (int i = 0; i < NLANE; i++) {
		ck_assert_uint_eq(((uint8_t *)lane_v[1][i])[0], 'b');
		sefer_free(lane_v[1][i]);
	}
}

START_TEST(reclaim_takes_the_segment_freed_into)
{
	pthread_t k, t;
	struct successor s;

	parking_off();
	k = start_keepalive();
	lanes_fill_and_exit(&s); /* lane 1's segment heads the abandoned list */
	ck_assert_ptr_null(atomic_load(&s.own->owner));
	ck_assert_ptr_null(atomic_load(&s.other->owner));

	for (int i = 0; i < NLANE; i++)
		ck_assert_uint_eq(((uint8_t *)lane_v[0][i])[LANE_SIZE - 1], 'a');
	pthread_create(&t, NULL, lane_successor, &s);
	pthread_join(t, NULL);
	/* With the list head alone it took lane 1's segment, whose blocks another thread would
	 * free: every one of them a cross-thread free into a live owner. */
	ck_assert_msg(s.own_owner == s.me, "lane 0's successor did not reclaim lane 0's segment");
	ck_assert_msg(s.other_owner == NULL, "lane 0's successor took lane 1's segment");
	lanes_check_and_free(&s);
	stop_keepalive(k);
	parking_back();
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * The same two lanes with parking on: both lanes' heaps are parked whole (lane 1's last, so
 * first on the list), and lane 0's successor, whose first call frees lane 0's block, takes
 * over lane 0's heap: its frees are local, its allocations come from that segment, and lane
 * 1's heap stays parked.
 */
START_TEST(parked_heap_taken_by_the_thread_freeing_into_it)
{
	pthread_t k, t;
	struct successor s;
	struct heap *own_heap, *other_heap;
	struct sefer_stats st0, st1;

	if (!sefer__opt.parked_heaps)
		return; /* SEFER_PARKED_HEAPS=0 in the environment */
	sefer__parked_dismantle();
	k = start_keepalive();
	lanes_fill_and_exit(&s); /* lane 1's heap heads the parked list */
	own_heap = atomic_load(&s.own->owner);
	other_heap = atomic_load(&s.other->owner);
	ck_assert_msg(owner_is_heap(own_heap) && own_heap->parked, "lane 0's heap is not parked");
	ck_assert_msg(owner_is_heap(other_heap) && other_heap->parked,
		      "lane 1's heap is not parked");
	st0 = stats();
	if (STATS)
		ck_assert_uint_ge(st0.heaps_parked, 2);
	pthread_create(&t, NULL, lane_successor, &s);
	pthread_join(t, NULL);
	st1 = stats();
	ck_assert_msg(s.me == own_heap, "lane 0's successor did not take over lane 0's heap");
	ck_assert_ptr_eq(s.own_owner, own_heap);
	ck_assert_ptr_eq(s.other_owner, other_heap);
	ck_assert_msg(other_heap->parked, "lane 1's heap left the parked list");
	if (STATS) {
		ck_assert_uint_eq(st1.heaps_adopted, st0.heaps_adopted + 1);
		ck_assert_uint_eq(st1.reclaimed, st0.reclaimed);
		ck_assert_uint_eq(st1.segments_mapped, st0.segments_mapped);
	}
	lanes_check_and_free(&s);
	stop_keepalive(k);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

#define DIRECT_SIZE 48
#define DIRECT_SLOT ((DIRECT_SIZE + GRANULE - 1) >> GRANULE_SHIFT)

/* The calling thread's TLS copy of its default heap's direct table equals the table. */
static bool direct_copy_matches(void)
{
	struct heap *heap = heap_get();

	for (size_t s = 0; s < DIRECT_TLS_SLOTS; s++)
		if (sefer__direct[s] != heap->direct[s])
			return false;
	return true;
}

struct direct_gen {
	void *left;		/* a block the first thread leaves live */
	struct heap *heap;	/* its heap */
	bool copy_at_exit;	/* its copy matched before it exited */
	struct heap *taken;	/* the heap the second thread took over by freeing left */
	bool copy_taken;	/* the second thread's copy matched the taken heap's table */
	bool page_in_copy;	/* ... with left's page in the slot of DIRECT_SIZE */
	bool malloc_from_page;	/* its malloc of DIRECT_SIZE then came from that page */
	bool copy_after;	/* and its copy still matched */
};

static void *direct_leave(void *arg)
{
	struct direct_gen *g = arg;

	g->left = sefer_malloc(DIRECT_SIZE);
	g->heap = heap_get();
	g->copy_at_exit = direct_copy_matches();
	return NULL;
}

static void *direct_take(void *arg)
{
	struct direct_gen *g = arg;
	struct page *pg = page_of(segment_of(g->left), g->left);
	void *p;

	sefer_free(g->left); /* the first call: takes over the parked heap it frees into */
	g->taken = heap_get();
	g->copy_taken = direct_copy_matches();
	g->page_in_copy = sefer__direct[DIRECT_SLOT] == pg;
	p = sefer_malloc(DIRECT_SIZE);
	g->malloc_from_page = page_of(segment_of(p), p) == pg;
	g->copy_after = direct_copy_matches();
	sefer_free(p);
	return NULL;
}

/*
 * malloc reads the page of its size from the thread's TLS copy of its default heap's direct
 * table (core/heap.h): a thread that takes over a parked heap finds the heap's table copied
 * whole, before its first malloc, so that malloc is served from the parked heap's page by the
 * fast path (a copy left at &page_empty would send it to the slow path, and sefer_check_heap()
 * would report the difference).
 */
START_TEST(parked_heap_direct_table_copied)
{
	struct direct_gen g = { 0 };
	pthread_t k, t;

	if (!sefer__opt.parked_heaps || IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return; /* SEFER_PARKED_HEAPS=0; the magazine serves before the direct table */
	sefer__parked_dismantle();
	k = start_keepalive(); /* the exit below is then not the last but one */
	ck_assert(direct_copy_matches());
	pthread_create(&t, NULL, direct_leave, &g);
	pthread_join(t, NULL);
	ck_assert_msg(g.copy_at_exit, "the first thread's copy differed from its table");
	ck_assert_msg(g.heap->parked, "the first thread's heap is not parked");
	pthread_create(&t, NULL, direct_take, &g);
	pthread_join(t, NULL);
	ck_assert_ptr_eq(g.taken, g.heap);
	ck_assert_msg(g.copy_taken, "the taken heap's table was not copied");
	ck_assert_msg(g.page_in_copy, "the copy lacks the parked heap's page");
	ck_assert_msg(g.malloc_from_page, "malloc did not take the parked heap's page");
	ck_assert_msg(g.copy_after, "the copy differed after a malloc");
	stop_keepalive(k);
	ck_assert(direct_copy_matches());
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

static atomic_int holders_ready, holders_go;

static void *hold_a_block(void *arg)
{
	*(void **)arg = sefer_malloc(100);
	atomic_fetch_add(&holders_ready, 1);
	while (!atomic_load(&holders_go))
		decommit_sleep_ms(1);
	return NULL;
}

static void *exit_with_a_block(void *arg)
{
	*(void **)arg = sefer_malloc(100);
	return NULL;
}

/*
 * At most SEFER_PARKED_HEAPS are parked: with 1, the second of two threads that exit while
 * another lives is dismantled (its segment abandoned). sefer_collect(true) dismantles the
 * parked one, and its segment, empty once the block is freed, goes back.
 */
START_TEST(parked_heaps_bounded_and_collected)
{
	pthread_t k, t;
	void *a, *b;
	uint64_t opt = sefer__opt.parked_heaps;
	struct sefer_stats st0, st1, st2;

	if (!STATS || !opt)
		return;
	sefer__parked_dismantle();
	sefer__opt.parked_heaps = 1;
	k = start_keepalive();
	st0 = stats();
	pthread_create(&t, NULL, exit_with_a_block, &a);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, exit_with_a_block, &b);
	pthread_join(t, NULL); /* took the parked heap over, and parked it again */
	ck_assert_ptr_eq(segment_of(a), segment_of(b));
	st1 = stats();
	ck_assert_uint_eq(st1.heaps_parked, 1);
	ck_assert_uint_eq(st1.heaps_adopted, st0.heaps_adopted + 1);
	ck_assert(atomic_load(&segment_of(a)->owner)->parked);
	sefer_free(a); /* into the parked heap: pushed at once, not batched */
	sefer_free(b);
	sefer_collect(true);
	st2 = stats();
	ck_assert_uint_eq(st2.heaps_parked, 0);
	if (IS_ENABLED(CONFIG_DECOMMIT)) {
		/* emptied: a spare, purged (or unmapped: PURGE_FREE's forced pass, or no segment
		 * cache) */
		ck_assert_uint_eq(st2.abandoned, 0);
		ck_assert_uint_lt(st2.committed, st1.committed);
	}
	/* two threads live at once, then exit: one heap parked, the other dismantled */
	atomic_store(&holders_ready, 0);
	atomic_store(&holders_go, 0);
	pthread_t h[2];

	pthread_create(&h[0], NULL, hold_a_block, &a);
	pthread_create(&h[1], NULL, hold_a_block, &b);
	while (atomic_load(&holders_ready) < 2)
		decommit_sleep_ms(1);
	st1 = stats();
	atomic_store(&holders_go, 1);
	pthread_join(h[0], NULL);
	pthread_join(h[1], NULL);
	st2 = stats();
	ck_assert_ptr_ne(segment_of(a), segment_of(b));
	ck_assert_uint_eq(st2.heaps_parked, 1);
	ck_assert_uint_eq(st2.abandoned, st1.abandoned + 1);
	struct heap *oa = atomic_load(&segment_of(a)->owner), *ob = atomic_load(&segment_of(b)->owner);

	ck_assert_msg((oa == NULL && owner_is_heap(ob) && ob->parked) ||
			      (ob == NULL && owner_is_heap(oa) && oa->parked),
		      "not one segment parked and one abandoned: owners %p %p", (void *)oa,
		      (void *)ob);
	sefer_free(a);
	sefer_free(b);
	stop_keepalive(k);
	sefer__opt.parked_heaps = opt;
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* Generations of two threads sharing items through an exchange, verified when freed. */
#define XCHG 512
#define ITEMS 6000
static _Atomic(uint64_t *) xchg[XCHG];
static atomic_long corrupt;

static uint64_t *item_new(uint64_t id)
{
	size_t words = 2 + id % 60;
	uint64_t *it = sefer_malloc(words * 8);

	it[0] = words;
	for (size_t i = 1; i < words; i++)
		it[i] = id * 31 + i;
	it[1] = id;
	return it;
}

static void item_free(uint64_t *it)
{
	if (!it)
		return;
	for (size_t i = 2; i < it[0]; i++)
		if (it[i] != it[1] * 31 + i)
			atomic_fetch_add(&corrupt, 1);
	sefer_free(it);
}

static void *generation_worker(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg * 1000003u;
	uint64_t *local[64] = { 0 };

	for (uint64_t i = 0; i < ITEMS; i++) {
		uint64_t *it = item_new(id + i);

		if (i % 4 == 0)
			it = atomic_exchange(&xchg[(id + i * 13) % XCHG], it);
		else {
			uint64_t *old = local[i % 64];

			local[i % 64] = it;
			it = old;
		}
		item_free(it);
	}
	for (int i = 0; i < 64; i++)
		item_free(local[i]);
	return NULL;
}

START_TEST(generations_bounded_then_returned)
{
	pthread_t k = start_keepalive(), t[2];
	size_t rss0;
	struct sefer_stats st3 = { 0 }, st;

	sefer_collect(true);
	rss0 = rss_bytes();
	for (int gen = 0; gen < 40; gen++) {
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, generation_worker,
				       (void *)(uintptr_t)(gen * 2 + i + 1));
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		if (gen == 3)
			st3 = stats();
	}
	st = stats();
	ck_assert_int_eq(atomic_load(&corrupt), 0);
	if (STATS)
		ck_assert_msg(st.segments_peak <= st3.segments_peak + 1,
			      "segments at the peak grew from %llu after 4 generations to %llu "
			      "after 40", (unsigned long long)st3.segments_peak,
			      (unsigned long long)st.segments_peak);
	for (int i = 0; i < XCHG; i++)
		item_free(atomic_exchange(&xchg[i], NULL));
	/* the last worker goes: only this thread is left, and what exited threads kept is
	 * returned without waiting for a slow path that may never come */
	stop_keepalive(k);
	st = stats();
	/* every item was freed, most by threads that did not own it: the segments their
	 * owners abandoned were collected and emptied, none is left abandoned */
	if (STATS && IS_ENABLED(CONFIG_DECOMMIT))
		ck_assert_msg(st.abandoned == 0, "%llu segments still abandoned",
			      (unsigned long long)st.abandoned);
	if (CHECK_RSS)
		ck_assert_msg(rss_bytes() <= rss0 + 6 * MiB, "RSS %zu KiB at start, %zu KiB after",
			      rss0 >> 10, rss_bytes() >> 10);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

#define HOLES 3
static void *kept[HOLES];

/* Fill HOLES segments' worth, free all but one block per segment, exit. */
static void *leave_holes(void *arg)
{
	size_t n = HOLES * SEGMENT_SIZE / 512;
	void **v = sefer_malloc(n * sizeof(*v));
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		v[i] = sefer_malloc(512);
		memset(v[i], 3, 512);
	}
	for (size_t i = 0; i < n; i++) {
		if (k < HOLES && (i == 0 || segment_of(v[i]) != segment_of(kept[k - 1]))) {
			kept[k++] = v[i];
			continue;
		}
		sefer_free(v[i]);
	}
	sefer_free(v);
	(void)arg;
	return NULL;
}

static void *allocate_new_class(void *arg)
{
	void **p = arg;

	*p = sefer_malloc(3000); /* a class with no page yet: the slow path runs */
	return NULL;
}

START_TEST(abandoned_purged_after_delay)
{
	pthread_t k, t;
	void *p = NULL;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS)
		return;
	parking_off();
	k = start_keepalive();
	struct sefer_stats st0 = stats();

	pthread_create(&t, NULL, leave_holes, NULL);
	pthread_join(t, NULL);
	struct sefer_stats st1 = stats();

	/* not purged at exit: another thread lives and may reuse the pages */
	ck_assert_uint_lt(st1.purged - st0.purged, SEGMENT_SIZE);
	decommit_sleep_ms((long)sefer__opt.purge_delay_ms + 20);
	pthread_create(&t, NULL, allocate_new_class, &p);
	pthread_join(t, NULL);
	struct sefer_stats st2 = stats();

	ck_assert_msg(st2.purged - st1.purged >= HOLES * SEGMENT_SIZE / 2,
		      "only %llu KiB purged after the delay",
		      (unsigned long long)(st2.purged - st1.purged) >> 10);
	for (int i = 0; i < HOLES; i++) {
		ck_assert_uint_eq(((uint8_t *)kept[i])[511], 3);
		sefer_free(kept[i]);
	}
	sefer_free(p);
	stop_keepalive(k);
	parking_back();
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * The first page of a bin is uncounted (core/block.h): whether it is empty takes a walk of its
 * free list, which an exit makes only up to RELEASE_FIRST_WALK links (core/heap.c). A thread
 * that carved a page of 48 B blocks and freed them all leaves that page in its parked heap at
 * exit; the pass over the parked heaps after the purge delay walks it whole and gives it back,
 * as it gives back any empty page: without that walk the page stayed for as long as the heap
 * was parked.
 */
struct first_gen {
	struct page *pg;
	struct heap *heap;
	uint32_t reserved;
};

static void *empty_first_page(void *arg)
{
	struct first_gen *g = arg;
	enum { N = 4 * RELEASE_FIRST_WALK };
	void *b[N];

	for (int i = 0; i < N; i++) {
		b[i] = sefer_malloc(48);
		ck_assert_ptr_nonnull(b[i]);
	}
	g->pg = page_of(segment_of(b[0]), b[0]);
	g->heap = heap_get();
	for (int i = 0; i < N; i++) {
		ck_assert_ptr_eq(page_of(segment_of(b[i]), b[i]), g->pg);
		sefer_free(b[i]);
	}
	g->reserved = g->pg->reserved;
	return NULL;
}

START_TEST(parked_first_page_given_back_after_delay)
{
	struct first_gen g = { 0 };
	pthread_t k, t;
	void *p;

	if (!PAGE_FIRST_UNCOUNTED || !IS_ENABLED(CONFIG_DECOMMIT) || !sefer__opt.parked_heaps ||
	    sefer__opt.purge_delay_ms > 1000 || policy_keeps_small_blocks())
		return; /* every page counted; nothing given back; or the magazine keeps the blocks */
	sefer__parked_dismantle();
	k = start_keepalive(); /* the exit below is then not the last but one */
	pthread_create(&t, NULL, empty_first_page, &g);
	pthread_join(t, NULL);
	ck_assert_msg(g.heap->parked, "the thread's heap is not parked");
	ck_assert_uint_gt(g.reserved, RELEASE_FIRST_WALK);
	ck_assert_msg(g.pg->span != 0 && g.heap->bins[g.pg->bin].first == g.pg,
		      "the exit walked the first page's %u free blocks", g.reserved);
	decommit_sleep_ms((long)sefer__opt.purge_delay_ms + 20);
	p = keepalive_malloc(3000); /* another thread's slow path: the parked heaps' pass */
	ck_assert_msg(g.heap->bins[g.pg->bin].first != g.pg,
		      "the parked heap's empty first page kept after the delay");
	ck_assert_msg(g.heap->parked, "the pass took the heap off the parked list");
	sefer_free(p);
	stop_keepalive(k);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A parked heap's free pages are purged after the delay by another thread's slow path (the
 * global deadline the exit lowered), not at exit while that thread lives; the heap stays
 * parked, its live blocks intact.
 */
START_TEST(parked_purged_after_delay)
{
	pthread_t k, t;
	void *p;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS || !sefer__opt.parked_heaps ||
	    sefer__opt.purge_delay_ms > 1000)
		return;
	sefer__parked_dismantle();
	k = start_keepalive();
	struct sefer_stats st0 = stats();

	pthread_create(&t, NULL, leave_holes, NULL);
	pthread_join(t, NULL);
	struct sefer_stats st1 = stats();
	struct heap *parked_heap = atomic_load(&segment_of(kept[0])->owner);

	ck_assert_msg(owner_is_heap(parked_heap) && parked_heap->parked,
		      "the exited thread's heap is not parked");
	ck_assert_uint_eq(st1.heaps_parked, st0.heaps_parked + 1);
	/* not purged at exit: another thread lives and may take the heap over */
	ck_assert_uint_lt(st1.purged - st0.purged, SEGMENT_SIZE);
	decommit_sleep_ms((long)sefer__opt.purge_delay_ms + 20);
	p = keepalive_malloc(3000); /* another thread's slow path (a class with no page yet) */
	struct sefer_stats st2 = stats();

	ck_assert_msg(st2.purged - st1.purged >= HOLES * SEGMENT_SIZE / 2,
		      "only %llu KiB purged after the delay",
		      (unsigned long long)(st2.purged - st1.purged) >> 10);
	ck_assert_msg(parked_heap->parked, "the purge took the heap off the parked list");
	for (int i = 0; i < HOLES; i++) {
		ck_assert_ptr_eq(atomic_load(&segment_of(kept[i])->owner), parked_heap);
		ck_assert_uint_eq(((uint8_t *)kept[i])[511], 3);
		sefer_free(kept[i]);
	}
	sefer_free(p);
	stop_keepalive(k);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * Span tails: a span of 48-byte blocks takes the dirty slot that 64 blocks of 1 KiB filled
 * and gave back, and carves 4 KiB of it. The thread exits with the span live: its heap parks
 * and gives back the 60 KiB past the carved blocks, which stayed resident before (core/purge.c,
 * "span tails"). The span keeps its blocks, and the next carve of the span works.
 */
#define TAIL_BIG 1008 /* the 1 KiB class: 64 blocks fill a 64 KiB page */
#define TAIL_SMALL 48
static void *tail_keep, *tail_small;
static uint8_t *tail_start; /* the slot both spans took */
static size_t tail_bytes;   /* the small span's bytes (the big one held them all) */

/*
 * In the calling thread's heap (fresh: its first blocks are these), a 1 KiB span filled, every
 * OS page written, and freed, then a span of TAIL_SMALL blocks over the same dirty slot: the
 * latter's descriptor, its first block in *small, a 16-byte block that keeps the segment in use
 * in *keep, and the 1 KiB span's bytes in *big_bytes.
 */
static struct page *span_over_dirty_slot(void **keep, void **small, size_t *big_bytes)
{
	static void *big[1024];
	struct page *pg;
	uint8_t *slot;
	uint32_t n;

	*keep = sefer_malloc(16); /* keeps the segment in use when the 1 KiB span goes */
	big[0] = sefer_malloc(TAIL_BIG); /* a fresh span: the heap starts empty */
	pg = page_of(segment_of(big[0]), big[0]);
	n = pg->capacity;
	ck_assert_uint_le(n, 1024);
	for (uint32_t i = 1; i < n; i++)
		big[i] = sefer_malloc(TAIL_BIG);
	for (uint32_t i = 0; i < n; i++)
		memset(big[i], 9, TAIL_BIG); /* blocks 1 KiB apart: every OS page of the span */
	slot = page_start(pg);
	*big_bytes = page_span_bytes(pg);
	ck_assert_uint_eq(pg->reserved, pg->capacity); /* all carved, all ours */
	for (uint32_t i = 0; i < n; i++)
		sefer_free(big[i]);
	sefer_collect(false); /* the empty span goes: its slots are free and dirty */
	*small = sefer_malloc(TAIL_SMALL); /* a class with no page yet: a new span */
	memset(*small, 4, TAIL_SMALL);
	pg = page_of(segment_of(*small), *small);
	ck_assert_ptr_eq(page_start(pg), slot); /* it took the dirty slot */
	ck_assert(pg->warm_tail);
	return pg;
}

static void *leave_span_tail(void *arg)
{
	struct page *pg = span_over_dirty_slot(&tail_keep, &tail_small, &tail_bytes);

	tail_start = page_start(pg);
	if (page_span_bytes(pg) < tail_bytes)
		tail_bytes = page_span_bytes(pg);
#ifdef __linux__
	ck_assert_uint_eq(resident_pages(tail_start, tail_bytes), tail_bytes >> 12);
#endif
	(void)arg;
	return NULL;
}

#define TAIL_MORE 400 /* past the 85 blocks of the first carve: into the tail */
static void *tail_more[TAIL_MORE];

static void *carve_into_tail(void *arg)
{
	int in_span = 0;

	for (int i = 0; i < TAIL_MORE; i++) {
		tail_more[i] = sefer_malloc(TAIL_SMALL);
		memset(tail_more[i], 6, TAIL_SMALL);
		in_span += (uint8_t *)tail_more[i] >= tail_start &&
			   (uint8_t *)tail_more[i] < tail_start + tail_bytes;
	}
	ck_assert_int_gt(in_span, TAIL_MORE / 2); /* the heap taken over, its span carved on */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	(void)arg;
	return NULL;
}

START_TEST(parked_heap_gives_back_span_tails)
{
	uint64_t delay = sefer__opt.purge_delay_ms;
	pthread_t k, t;

	/* POLICY_FASTBIN keeps the last blocks freed of a class until the thread exits: the
	 * 1 KiB span would not empty */
	if (!sefer__opt.parked_heaps || IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return;
	/* the fixture (unit_fresh_state) leaves no parked heap and nothing dirty: the thread's
	 * heap starts empty */
	sefer__opt.purge_delay_ms = 60000; /* no purge by deadline while the test runs */
	k = start_keepalive(); /* so the exit parks and is not the last one */
	pthread_create(&t, NULL, leave_span_tail, NULL);
	pthread_join(t, NULL);
	struct heap *h = atomic_load(&segment_of(tail_small)->owner);

	ck_assert_msg(owner_is_heap(h) && h->parked, "the exited thread's heap is not parked");
#ifdef __linux__
	if (CHECK_RSS && IS_ENABLED(CONFIG_PURGE_DONTNEED)) {
		size_t carved = align_up(page_of(segment_of(tail_small), tail_small)->reserved *
						 (size_t)TAIL_SMALL, 4096);

		ck_assert_uint_eq(resident_pages(tail_start, carved), carved >> 12);
		ck_assert_uint_lt(carved, tail_bytes);
		ck_assert_msg(resident_pages(tail_start + carved, tail_bytes - carved) == 0,
			      "%zu pages of the span's tail still resident after parking",
			      resident_pages(tail_start + carved, tail_bytes - carved));
	}
#endif
	ck_assert_uint_eq(((uint8_t *)tail_small)[TAIL_SMALL - 1], 4);
	/* given back (or tried once): only where the build purges at all */
	if (IS_ENABLED(CONFIG_DECOMMIT))
		ck_assert(!page_of(segment_of(tail_small), tail_small)->warm_tail);
	sefer__opt.purge_delay_ms = delay;
	/* the next thread takes the heap over and carves the span into the purged tail */
	pthread_create(&t, NULL, carve_into_tail, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < TAIL_MORE; i++) {
		ck_assert_uint_eq(((uint8_t *)tail_more[i])[TAIL_SMALL - 1], 6);
		sefer_free(tail_more[i]);
	}
	sefer_free(tail_small);
	sefer_free(tail_keep);
	stop_keepalive(k);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

static uint64_t committed_now(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st, sizeof(st));
	return st.committed;
}

/* The bytes of set's purged span tails (core/purge.c, "span tails"). */
static uint64_t purged_tails(struct segment_set *set)
{
	uint64_t tails = 0;

	for_each_set_segment(set, seg, false) {
		struct page *p;

		for_each_span(seg, p, idx)
			if (p->purged_tail)
				tails += page_span_bytes(p) - p->purged_tail;
	}
	return tails;
}

/* The bytes of pg's span up to the first OS page none of its carved blocks touches. */
static size_t carved_bytes(const struct page *pg)
{
	return align_up((size_t)pg->reserved * pg->block_size, sefer__os_info.page_size);
}

static void *tail_committed(void *arg)
{
	size_t carved, recarved, span, big_bytes;
	static void *small[1400];
	struct segment_set *set;
	uint64_t c0, c1, c2, segs, tails;
	struct sefer_stats st;
	struct page *pg;
	uint32_t k = 1;
	void *keep;

	pg = span_over_dirty_slot(&keep, &small[0], &big_bytes);
	set = &heap_get()->segments; /* the thread's heap, made at its first malloc */
	span = page_span_bytes(pg);

	c0 = committed_now();
	sefer__purge_span_tails(set); /* what the heap's parking does */
	c1 = committed_now();
	carved = carved_bytes(pg);
	ck_assert_uint_eq(pg->purged_tail, carved);
	/* every tail given back leaves committed (the other spans' too, if they took dirty slots) */
	tails = purged_tails(set);
	ck_assert_uint_ge(tails, span - carved);
	ck_assert_uint_eq(c0 - c1, tails);

	/* carve on into the tail: committed takes back what the carve reaches, no more */
	sefer_stats_get(&st, sizeof(st));
	segs = st.segments;
	while (carved_bytes(pg) == carved) {
		ck_assert_uint_lt(k, 1400);
		small[k] = sefer_malloc(TAIL_SMALL);
		ck_assert_ptr_eq(page_of(segment_of(small[k]), small[k]), pg);
		k++;
	}
	recarved = carved_bytes(pg);
	c2 = committed_now();
	sefer_stats_get(&st, sizeof(st));
	ck_assert_uint_eq(st.segments, segs); /* no segment mapped meanwhile */
	ck_assert_uint_eq(pg->purged_tail, recarved);
	ck_assert_uint_eq(c2 - c1, recarved - carved);

	/* the span freed: its slot counts committed whole again (dirty), as before the purge; so
	 * does any other span with a purged tail that emptied meanwhile */
	for (uint32_t i = 0; i < k; i++)
		sefer_free(small[i]);
	sefer_collect(false);
	ck_assert_uint_eq(pg->span, 0);
	ck_assert_uint_eq(committed_now(), c0 - purged_tails(set));
	sefer_free(keep);
	(void)arg;
	return NULL;
}

/*
 * A purged span tail leaves committed (core/purge.c, "span tails"), a carve into it brings back
 * what the carve reaches, and the span's free the rest: committed counts the bytes exactly,
 * where it counted the tail committed while it was given back and drifted by it for the span's
 * life.
 */
START_TEST(purged_span_tail_leaves_committed)
{
	uint64_t delay = sefer__opt.purge_delay_ms;
	pthread_t t;

	/* committed is counted with CONFIG_STATS; only a build that purges gives a tail back;
	 * POLICY_FASTBIN keeps the last blocks freed, so the 1 KiB span would not empty */
	if (!IS_ENABLED(CONFIG_STATS) || !IS_ENABLED(CONFIG_DECOMMIT) ||
	    IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return;
	sefer__opt.purge_delay_ms = 60000; /* no purge by deadline while the test runs */
	pthread_create(&t, NULL, tail_committed, NULL);
	pthread_join(t, NULL);
	sefer__opt.purge_delay_ms = delay;
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

#define CUR_SIZE 48
#define CUR_TAKE 400
static void **cur_v;   /* the exited thread's blocks: cur_n, all live */
static size_t cur_n;

/*
 * Fill one page of the 48-byte bin (it goes full: no free list, live blocks) and start a
 * second, which is left with a free list (the carved rest) and live blocks, and exit. The exit
 * gives back empty pages only (heap_release_empty), so the second page stays as it was.
 */
static void *leave_current_page(void *arg)
{
	void *first = sefer_malloc(CUR_SIZE);
	struct page *pg = page_of(segment_of(first), first);
	size_t n = pg->capacity + 8;

	cur_v = sefer_malloc(n * sizeof(*cur_v)); /* another class */
	cur_v[0] = first;
	for (size_t i = 1; i < n; i++)
		cur_v[i] = sefer_malloc(CUR_SIZE);
	for (size_t i = 0; i < n; i++)
		memset(cur_v[i], 5, CUR_SIZE);
	cur_n = n;
	(void)arg;
	return NULL;
}

/* The next thread takes the segment over and allocates from that page as it was left. */
static void *take_current_page(void *arg)
{
	void **v = sefer_malloc(CUR_TAKE * sizeof(*v));
	int *in_left_page = arg;
	void *last = cur_v[cur_n - 1];

	for (int i = 0; i < CUR_TAKE; i++) {
		v[i] = sefer_malloc(CUR_SIZE);
		ck_assert_ptr_nonnull(v[i]);
		memset(v[i], i & 0xff, CUR_SIZE);
		if (page_of(segment_of(v[i]), v[i]) == page_of(segment_of(last), last))
			(*in_left_page)++;
	}
	/* every block accounted for: the page's free list and live blocks agree */
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 0; i < CUR_TAKE; i++) {
		ck_assert_uint_eq(((uint8_t *)v[i])[CUR_SIZE - 1], i & 0xff);
		sefer_free(v[i]);
	}
	sefer_free(v);
	return NULL;
}

START_TEST(partial_pages_taken_over)
{
	pthread_t k = start_keepalive(), t;
	int in_left_page = 0;
	struct sefer_stats st;
	void *first, *last;
	bool cur_same_segment, cur_partial;

	pthread_create(&t, NULL, leave_current_page, NULL);
	pthread_join(t, NULL);
	first = cur_v[0];
	last = cur_v[cur_n - 1];
	cur_same_segment = segment_of(first) == segment_of(last);
	cur_partial = page_of(segment_of(last), last)->free != NULL;
	ck_assert_msg(cur_same_segment, "the two pages are in one segment");
	ck_assert_msg(cur_partial, "the exit left the current page's free list alone");
	ck_assert_uint_eq(sefer_check_heap(), 0);
	pthread_create(&t, NULL, take_current_page, &in_left_page);
	pthread_join(t, NULL);
	ck_assert_msg(in_left_page > 0, "the next thread did not allocate from the page left");
	for (size_t i = 0; i < cur_n; i++) {
		ck_assert_uint_eq(((uint8_t *)cur_v[i])[CUR_SIZE - 1], 5);
		sefer_free(cur_v[i]);
	}
	sefer_free(cur_v);
	/* the last worker goes: whatever is left is returned now */
	stop_keepalive(k);
	st = stats();
	if (STATS && IS_ENABLED(CONFIG_DECOMMIT))
		ck_assert_msg(st.abandoned == 0, "%llu segments still abandoned",
			      (unsigned long long)st.abandoned);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * Thread generations with no other worker alive (core/purge.c, "thread generations"): each
 * worker is the last, and leaves one 512-byte block live and a few free pages in its segment.
 * The next worker frees that block, then needs a span: it reclaims the segment.
 */
#define HANDOFF_SIZE 512
#define HANDOFF_N (3 * SPAGE_SIZE / HANDOFF_SIZE) /* three pages of the class */
static void *handoff_left;

struct handoff_gen {
	struct segment *seg;    /* the segment the last generation left (NULL: none) */
	uint64_t dirty_at_start; /* its dirty slots when this worker started */
	bool took_dirty;	 /* this worker's new span took one of them */
	bool in_seg;		 /* and it is in that segment */
};

static void *handoff_worker(void *arg)
{
	struct handoff_gen *g = arg;
	static void *v[HANDOFF_N];
	void *big;
	struct segment *s;

	if (g->seg)
		g->dirty_at_start = g->seg->dirty_pages;
	sefer_free(handoff_left); /* into an abandoned segment: pushed, nothing adopted */
	big = sefer_malloc(3000); /* a new span: the segment is reclaimed, a dirty slot taken */
	s = segment_of(big);
	if (g->seg) {
		g->in_seg = s == g->seg;
		g->took_dirty = g->in_seg &&
				(g->dirty_at_start & ((uint64_t)1 << page_of(s, big)->index));
	}
	for (size_t i = 0; i < HANDOFF_N; i++) {
		v[i] = sefer_malloc(HANDOFF_SIZE);
		memset(v[i], 9, HANDOFF_SIZE);
	}
	handoff_left = v[HANDOFF_N / 2];
	for (size_t i = 0; i < HANDOFF_N; i++)
		if (i != HANDOFF_N / 2)
			sefer_free(v[i]);
	sefer_free(big);
	return NULL; /* the pages it emptied are free dirty slots of an abandoned segment */
}

static void handoff_generation(struct handoff_gen *g)
{
	pthread_t t;

	pthread_create(&t, NULL, handoff_worker, g);
	pthread_join(t, NULL);
}

START_TEST(handoff_kept_for_the_next_generation)
{
	uint64_t base = sefer__opt.purge_delay_ms;
	struct handoff_gen a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 }, e = { 0 }, f = { 0 };
	struct sefer_stats s0, s1, s2, s3, s4;
	struct segment *seg;
	uint64_t dirty_b;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS || !base || base > 1000)
		return; /* nothing purged, everything at once, or a delay too long to wait out */
	sefer_free(sefer_malloc(32)); /* this thread's heap: each worker is the last but one */
	handoff_left = NULL;
	handoff_generation(&a); /* its exit purges, or not: an earlier test may have run */
	seg = segment_of(handoff_left);
	b.seg = seg;
	s0 = stats();
	handoff_generation(&b); /* takes over what a left at once */
	s1 = stats();
	dirty_b = seg->dirty_pages;
	c.seg = segment_of(handoff_left);
	handoff_generation(&c); /* and so does c */
	s2 = stats();
	ck_assert_msg(b.in_seg, "the next worker did not reclaim the last one's segment");
	ck_assert_uint_eq(s1.handoffs_kept, s0.handoffs_kept + 1);
	ck_assert_msg(dirty_b != 0, "the kept exit purged the free pages it left");
	ck_assert_ptr_eq(c.seg, seg);
	ck_assert_msg(c.took_dirty, "the worker after a kept exit did not reuse a dirty slot");
	ck_assert_uint_eq(s2.handoffs_kept, s1.handoffs_kept + 1);

	/* a pause longer than the longest delay: the program is not in generations now */
	decommit_sleep_ms((long)(base << 4) + 50);
	d.seg = segment_of(handoff_left);
	handoff_generation(&d);
	s3 = stats();
	ck_assert_uint_eq(s3.handoffs_kept, s2.handoffs_kept);
	ck_assert_msg(s3.purged > s2.purged, "the last exit after a pause purged nothing");
	ck_assert_uint_eq(((uint8_t *)handoff_left)[HANDOFF_SIZE - 1], 9);

	/* sefer_collect(true) gave d's hand-off back: e, at once, takes none, its exit purges */
	sefer_collect(true);
	e.seg = segment_of(handoff_left);
	handoff_generation(&e);
	s4 = stats();
	ck_assert_uint_eq(s4.handoffs_kept, s3.handoffs_kept);
	ck_assert_msg(s4.purged > s3.purged, "the last exit after sefer_collect(true) purged nothing");
	/* and f, at once after e, is in generations again */
	f.seg = segment_of(handoff_left);
	handoff_generation(&f);
	ck_assert_uint_eq(stats().handoffs_kept, s4.handoffs_kept + 1);
	sefer_free(handoff_left);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * With a delay of "never" (mallopt's M_TRIM_THRESHOLD < 0) a generation's last exit purges
 * nothing, the program's first included, and dismantles no parked heap: the slots the worker
 * emptied stay dirty for the next one. It used to purge everything at once.
 */
START_TEST(never_purges_at_last_exit)
{
	uint64_t base = sefer__opt.purge_delay_ms;
	struct handoff_gen a = { 0 }, b = { 0 };
	struct sefer_stats s0, s1;
	struct segment *seg;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS)
		return;
	sefer_free(sefer_malloc(32)); /* this thread's heap: each worker is the last but one */
	sefer_collect(true);	      /* no hand-off: the next last exit is a program's first */
	sefer__opt.purge_delay_ms = PURGE_DELAY_NEVER;
	handoff_left = NULL;
	s0 = stats();
	handoff_generation(&a);
	s1 = stats();
	seg = segment_of(handoff_left);
	ck_assert_uint_eq(s1.purged, s0.purged);
	ck_assert_uint_eq(s1.handoffs_kept, s0.handoffs_kept + 1);
	ck_assert_msg(seg->dirty_pages != 0, "the exit purged the pages its worker emptied");
	b.seg = seg;
	handoff_generation(&b);
	ck_assert_uint_eq(stats().purged, s0.purged);
	ck_assert_msg(b.took_dirty, "the next worker did not reuse a dirty slot the last one left");
	sefer_free(handoff_left);
	sefer__opt.purge_delay_ms = base;
	sefer_collect(true);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A kept hand-off is bounded by what the next threads took of the last one (core/purge.c,
 * "thread generations"): one worker leaves 48 dirty slots of 64 KiB blocks, then workers that
 * each take a span or two of what was handed to them follow at once. With a delay no test waits
 * out, no deadline purges anything: the bound alone gives the big worker's slots back, while
 * every exit is still a kept one.
 */
#define BOUND_BIG (48 * SPAGE_SIZE / (64 << 10)) /* 64 KiB blocks: 48 slots */
static void *bound_worker(void *arg)
{
	static void *v[BOUND_BIG];
	size_t n = arg ? BOUND_BIG : 0;

	sefer_free(handoff_left);
	handoff_left = sefer_malloc(3000);
	memset(handoff_left, 9, 3000);
	for (size_t i = 0; i < n; i++) {
		v[i] = sefer_malloc(64 << 10);
		memset(v[i], 7, 64 << 10);
	}
	for (size_t i = 0; i < n; i++)
		sefer_free(v[i]);
	return NULL;
}

static void bound_generation(bool big)
{
	pthread_t t;

	pthread_create(&t, NULL, bound_worker, big ? (void *)1 : NULL);
	pthread_join(t, NULL);
}

START_TEST(handoff_bounded_by_next_use)
{
	uint64_t base = sefer__opt.purge_delay_ms;
	struct sefer_stats s0, s1;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS || !base || base > 1000)
		return;
	sefer__opt.purge_delay_ms = 100000; /* no deadline comes during the test */
	sefer_free(sefer_malloc(32)); /* this thread's heap: each worker is the last but one */
	handoff_left = NULL;
	bound_generation(false);
	bound_generation(false);
	bound_generation(true); /* its exit is kept: 48 dirty slots and more stay */
	s0 = stats();
	for (int i = 0; i < 40; i++)
		bound_generation(false);
	s1 = stats();
	ck_assert_uint_eq(s1.handoffs_kept, s0.handoffs_kept + 40);
	ck_assert_msg(s1.purged >= s0.purged + (uint64_t)40 * SPAGE_SIZE,
		      "kept hand-offs held %llu bytes of dirty slots the next workers did not need",
		      (unsigned long long)(s1.purged - s0.purged));
	ck_assert_uint_eq(((uint8_t *)handoff_left)[2999], 9);
	sefer_free(handoff_left);
	sefer__opt.purge_delay_ms = base;
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * The unowned delay's backoff (core/purge.c): the global pass purges an abandoned segment's
 * free slots at their deadline and marks them; a span that takes them soon after raises the
 * delay of the segments no heap owns, by at least one step.
 */
static void *take_one_span(void *arg)
{
	void **p = arg;

	*p = sefer_malloc(3000); /* a class with no page yet: reclaims a segment, takes a span */
	return NULL;
}

START_TEST(unowned_backoff_follows_reuse)
{
	pthread_t k, t;
	void *p = NULL;
	uint64_t d0, raises0, marked = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !STATS || !sefer__opt.purge_delay_ms ||
	    sefer__opt.purge_delay_ms > 1000)
		return;
	parking_off();
	k = start_keepalive(); /* the exit below is not the last: nothing is purged at once */
	pthread_create(&t, NULL, leave_holes, NULL);
	pthread_join(t, NULL);
	d0 = sefer__purge_unowned_delay();
	decommit_sleep_ms((long)d0 + 20);
	sefer__global_purge(sefer__os.clock_ms(), false); /* the pass at their deadline */
	for (int i = 0; i < HOLES; i++) {
		struct segment *seg = segment_of(kept[i]);

		marked |= seg->unowned_purged;
		ck_assert_uint_eq(seg->unowned_purged & ~seg->purged_pages, 0);
	}
	ck_assert_msg(marked, "the global pass marked none of the slots it purged");
	raises0 = stats().purge_raises;
	pthread_create(&t, NULL, take_one_span, &p);
	pthread_join(t, NULL);
	ck_assert_msg(sefer__purge_unowned_delay() >= 2 * d0,
		      "unowned delay %llu ms after a span took slots just purged (base %llu)",
		      (unsigned long long)sefer__purge_unowned_delay(), (unsigned long long)d0);
	ck_assert_uint_gt(stats().purge_raises, raises0);
	for (int i = 0; i < HOLES; i++) {
		ck_assert_uint_eq(((uint8_t *)kept[i])[511], 3);
		sefer_free(kept[i]);
	}
	sefer_free(p);
	stop_keepalive(k);
	parking_back();
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/*
 * A running thread whose heap is about to take fresh memory for a span (no block, nothing to
 * carve, no dirty slot) switches to a parked heap that has memory for that class, and its own
 * heap is parked in its place (core/heap.c, heap_switch), when its heap is one it took over
 * (a thread of a generation). B takes over the heap C left, fills a page of SWITCH_SIZE blocks
 * in it; A, started after, leaves a page of that class with 15 free blocks and exits
 * (parked); B's next block of the class, a realloc of a block of its heap, comes from A's
 * heap, which is B's heap from then on. The realloc's free of the old block then goes to the
 * old heap (now parked) as any thread's free does, not onto its page's free list as its
 * owner's.
 */
#define SWITCH_SIZE 512 /* a class whose span is one 64 KiB page, no other test's here */
#define SWITCH_OLD 80

struct switch_gen {
	atomic_int filled, go, done;
	struct heap *b_heap, *a_heap, *b_after, *c_heap;
	void *a_left, *b_from_a, *old, *moved, *c_left;
	bool old_on_free_list;
	pthread_t keepalive;
	void *held[1024];
	size_t nheld;
};

static void *switch_leave(void *arg)
{
	struct switch_gen *g = arg;
	void *v[16];

	/* 15 freed: more than an OS page's worth (8), what a switch asks of a parked heap */
	for (int i = 0; i < 16; i++)
		v[i] = sefer_malloc(SWITCH_SIZE);
	for (int i = 1; i < 16; i++)
		sefer_free(v[i]);
	g->a_left = v[0];
	g->a_heap = heap_get();
	return NULL;
}

static bool on_free_list(const struct page *pg, const void *p)
{
	for (const struct block *b = pg->free; b; b = block_next(pg, b))
		if (b == p)
			return true;
	return false;
}

static void *switch_run(void *arg)
{
	struct switch_gen *g = arg;
	struct page *first, *old_pg;
	void *p;

	g->old = sefer_malloc(SWITCH_OLD);
	sefer_free(sefer_malloc(SWITCH_OLD)); /* a free opens the page's fast path (is_zero) */
	g->b_heap = heap_get();
	p = sefer_malloc(SWITCH_SIZE);
	first = page_of(segment_of(p), p);
	g->held[g->nheld++] = p;
	while (first->free || first->reserved < first->capacity) { /* fill it, carved whole */
		p = sefer_malloc(SWITCH_SIZE);
		ck_assert_ptr_eq(page_of(segment_of(p), p), first);
		g->held[g->nheld++] = p;
	}
	atomic_store(&g->filled, 1);
	while (!atomic_load(&g->go))
		decommit_sleep_ms(1);
	/* the realloc's malloc switches: the old block's page is no longer this thread's */
	memset(g->old, 7, SWITCH_OLD);
	old_pg = page_of(segment_of(g->old), g->old);
	g->moved = sefer_realloc(g->old, SWITCH_SIZE);
	g->b_after = heap_get();
	g->old_on_free_list = on_free_list(old_pg, g->old);
	g->b_from_a = sefer_malloc(SWITCH_SIZE);
	atomic_store(&g->done, 1);
	return NULL;
}

/* C: leaves a heap with one live block and no dirty slot, parked, for B to take over. */
static void *switch_first(void *arg)
{
	struct switch_gen *g = arg;

	g->c_left = sefer_malloc(SWITCH_OLD);
	g->c_heap = heap_get();
	return NULL;
}

/*
 * B fills its page, A leaves a parked heap with free blocks of the class, B reallocs: B on a
 * heap it took over from C (b_takes_over), or on the heap made for it. Returns the count of
 * switches over the run; the keepalive thread makes no exit the last but one.
 */
static uint64_t switch_scenario(struct switch_gen *g, bool b_takes_over)
{
	pthread_t a, b, c;
	uint64_t switched;

	memset(g, 0, sizeof(*g));
	sefer__parked_dismantle();
	g->keepalive = start_keepalive(); /* A's exit is then not the last but one */
	switched = stats().heaps_switched;
	if (b_takes_over) {
		pthread_create(&c, NULL, switch_first, g);
		pthread_join(c, NULL);
		ck_assert_msg(g->c_heap->parked, "C's heap is not parked");
	}
	pthread_create(&b, NULL, switch_run, g);
	while (!atomic_load(&g->filled))
		decommit_sleep_ms(1);
	if (b_takes_over)
		ck_assert_msg(g->b_heap == g->c_heap, "B did not take C's parked heap over");
	pthread_create(&a, NULL, switch_leave, g);
	pthread_join(a, NULL);
	ck_assert_msg(g->a_heap->parked, "A's heap is not parked");
	atomic_store(&g->go, 1);
	pthread_join(b, NULL);
	switched = stats().heaps_switched - switched;
	ck_assert_ptr_nonnull(g->moved);
	ck_assert_uint_eq(((uint8_t *)g->moved)[SWITCH_OLD - 1], 7);
	return switched;
}

/* Every block the scenario left, freed; the keepalive thread's exit is the last but one. */
static void switch_cleanup(struct switch_gen *g)
{
	for (size_t i = 0; i < g->nheld; i++)
		sefer_free(g->held[i]);
	sefer_free(g->b_from_a);
	sefer_free(g->moved);
	sefer_free(g->a_left);
	sefer_free(g->c_left);
	stop_keepalive(g->keepalive);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}

START_TEST(running_heap_switches_to_parked)
{
	static struct switch_gen g;
	uint64_t switched;

	if (!sefer__opt.parked_heaps || IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return; /* SEFER_PARKED_HEAPS=0; the magazine keeps A's freed blocks */
	switched = switch_scenario(&g, true);
	ck_assert_ptr_ne(g.a_heap, g.b_heap);
	ck_assert_msg(g.b_after == g.a_heap, "B did not switch to A's parked heap");
	ck_assert_msg(atomic_load(&segment_of(g.b_from_a)->owner) == g.a_heap,
		      "B's block is not from A's heap");
	ck_assert_msg(g.b_heap->parked, "B's old heap is not parked");
	if (STATS) /* sefer_stats counts the switch */
		ck_assert_uint_eq(switched, 1);
	ck_assert_msg(atomic_load(&segment_of(g.moved)->owner) == g.a_heap,
		      "the realloc's block is not from A's heap");
	ck_assert_msg(!g.old_on_free_list,
		      "realloc freed the old block as its owner after the switch");
	switch_cleanup(&g);
}
END_TEST

/*
 * The same with B on the heap made for it: no switch (heap_switch: only a heap taken over).
 * B's realloc maps fresh memory; A's heap stays parked. Were B's own heap parked, the last
 * exit would dismantle it with B's blocks in it (core/heap.c).
 */
START_TEST(own_heap_does_not_switch)
{
	static struct switch_gen g;
	uint64_t switched;

	if (!sefer__opt.parked_heaps || IS_ENABLED(CONFIG_POLICY_FASTBIN))
		return;
	switched = switch_scenario(&g, false);
	ck_assert_msg(g.b_after == g.b_heap, "B switched away from its own heap");
	if (STATS)
		ck_assert_uint_eq(switched, 0);
	ck_assert_msg(atomic_load(&segment_of(g.moved)->owner) == g.b_heap,
		      "the realloc's block is not from B's heap");
	ck_assert_msg(g.a_heap->parked, "A's heap was taken off the parked list");
	ck_assert_msg(g.old_on_free_list, "B's realloc did not free its old block as its owner");
	switch_cleanup(&g);
}
END_TEST

Suite *generations_suite(void)
{
	Suite *s = suite_create("generations");
	TCase *tc = tcase_create("exit");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, unit_fresh_state, NULL);
	tcase_add_test(tc, spares_serve_the_next_thread);
	tcase_add_test(tc, freeing_thread_does_not_adopt);
	tcase_add_test(tc, reclaim_takes_the_segment_freed_into);
	tcase_add_test(tc, parked_heap_taken_by_the_thread_freeing_into_it);
	tcase_add_test(tc, parked_heap_direct_table_copied);
	tcase_add_test(tc, parked_heaps_bounded_and_collected);
	tcase_add_test(tc, generations_bounded_then_returned);
	tcase_add_test(tc, abandoned_purged_after_delay);
	tcase_add_test(tc, parked_purged_after_delay);
	tcase_add_test(tc, parked_first_page_given_back_after_delay);
	tcase_add_test(tc, parked_heap_gives_back_span_tails);
	tcase_add_test(tc, purged_span_tail_leaves_committed);
	tcase_add_test(tc, partial_pages_taken_over);
	tcase_add_test(tc, handoff_kept_for_the_next_generation);
	tcase_add_test(tc, handoff_bounded_by_next_use);
	tcase_add_test(tc, never_purges_at_last_exit);
	tcase_add_test(tc, unowned_backoff_follows_reuse);
	tcase_add_test(tc, running_heap_switches_to_parked);
	tcase_add_test(tc, own_heap_does_not_switch);
	suite_add_tcase(s, tc);
	return s;
}
