// SPDX-License-Identifier: MIT
/* Segment and page arithmetic on real allocations, and the segment table. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/heap.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/segment.h"
#include "core/segtab.h"
#include "core/span.h"
#include "sefer/os.h"
#include "unit.h"

START_TEST(segment_and_page_of)
{
	for (size_t size = 1; size <= SMALL_MAX; size = size * 3 / 2 + 1) {
		uint8_t *p = sefer_malloc(size);
		struct segment *seg = segment_of(p);
		struct page *pg = page_of(seg, p);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)seg % SEGMENT_SIZE, 0);
		ck_assert(segtab_contains(seg));
		ck_assert_uint_eq(seg->kind, SEG_SMALL);
		ck_assert_ptr_eq(atomic_load(&seg->owner), heap_get());
		ck_assert_uint_ge(pg->index, META_PAGES);
		ck_assert_uint_eq(page_start_addr(pg),
				  (uintptr_t)seg + ((size_t)pg->index << SPAGE_SHIFT));
		ck_assert(p >= page_start(pg) && p < page_start(pg) + page_span_bytes(pg));
		ck_assert_uint_eq((size_t)(p - page_start(pg)) % pg->block_size, 0);
		/* its class's block, or above the direct table one lent by a larger class */
		if (pg->bin != bin_index(size)) {
			ck_assert_uint_gt(bin_block_size(bin_index(size)), BORROW_MIN_SIZE);
			ck_assert_uint_gt(pg->bin, bin_index(size));
			ck_assert_uint_le(pg->bin, bin_index(size) + BORROW_BINS);
		}
		ck_assert_uint_eq(pg->block_size, bin_block_size(pg->bin));
		ck_assert_uint_eq((uintptr_t)p % 16, 0);
		sefer_free(p);
	}
}
END_TEST

START_TEST(large_segment_layout)
{
	size_t size = (size_t)5 << 20;
	uint8_t *p = sefer_malloc(size);
	struct segment *seg = segment_of(p);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(seg->kind, SEG_LARGE);
	ck_assert_ptr_eq(large_block(seg), p);
	ck_assert_uint_ge(seg->large_size, size);
	ck_assert(segtab_contains(seg));
	p[0] = 1;
	p[size - 1] = 2;
	sefer_free(p);
}
END_TEST

START_TEST(segment_table_foreign)
{
	int on_stack = 0;
	static int in_data;

	ck_assert(!sefer_owns(&on_stack));
	ck_assert(!sefer_owns(&in_data));
	ck_assert(!sefer_owns(NULL));
	ck_assert(!sefer_owns((void *)UINTPTR_MAX));
	ck_assert(!sefer_owns((void *)((uintptr_t)1 << 62)));
	void *p = sefer_malloc(10);

	ck_assert(sefer_owns(p));
	sefer_free(p);
}
END_TEST

START_TEST(metadata_fits)
{
	ck_assert_uint_le(sizeof(struct segment), META_PAGES << SPAGE_SHIFT);
	ck_assert_uint_le(META_PAGES, PAGES_PER_SEGMENT / 2);
	ck_assert_uint_eq(sizeof(struct page) % 64, 0);
	ck_assert_uint_eq(__builtin_offsetof(struct page, xthread) % 64, 0);
	ck_assert_uint_eq(sizeof(struct heap) % 64, 0);
}
END_TEST

START_TEST(heap_is_consistent)
{
	void *p[4096];

	for (int i = 0; i < 4096; i++)
		p[i] = sefer_malloc((size_t)(i * 37) % 3000 + 1);
	for (int i = 0; i < 4096; i += 2)
		sefer_free(p[i]);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	for (int i = 1; i < 4096; i += 2)
		sefer_free(p[i]);
	sefer_collect(true);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

/* Run fn(arg) on a new thread (a fresh heap of its own) and wait for it. */
static void on_new_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}

/* A one-slot span of heap's segments, placed as page_find() places one. */
static struct page *span_take(struct heap *heap)
{
	return sefer__span_alloc(&heap->segments, 1, policy_segment_node(heap));
}

/* Can the purge-backoff tests run: purging on, a delay, one the clock can measure? */
static bool backoff_testable(void)
{
	uint64_t base = sefer__purge_delay(NULL);

	return IS_ENABLED(CONFIG_DECOMMIT) && base && base <= 1000;
}

/*
 * Purge timing and warm reuse (purge.c, span.c): a slot is purged once it stayed free and dirty for
 * the delay, not because another slot of its segment is due; a new span takes a dirty slot
 * before a purged or never used one.
 */
struct purge_case {
	bool same_segment, a_due_first, b_later, a_purged, a_stamped, b_kept, b_next, warm_taken;
};

#define SLOT(i) ((uint64_t)1 << (i))

static void *purge_after_the_delay(void *arg)
{
	struct purge_case *c = arg;
	void *keep = sefer_malloc(16); /* this thread's heap, a segment it keeps */
	struct heap *heap = heap_get();
	struct page *a = span_take(heap), *b = span_take(heap), *n;
	struct segment *seg = segment_of(a);
	unsigned ia = a->index, ib = b->index;
	uint64_t delay = sefer__opt.purge_delay_ms, due, then;
	struct timespec ts = { 0, 1000000 };

	/* Measured first, asserted after: Check's assertions allocate through sefer. */
	c->same_segment = seg == segment_of(b) && seg == segment_of(keep) && ia < ib;
	sefer__span_free(&heap->segments, a);
	due = seg->purge_at;
	c->a_due_first = due == seg->pages[ia].slot_since + delay;
	then = sefer__os.clock_ms();
	while (sefer__os.clock_ms() == then) /* the clock may tick every few ms (os.h) */
		nanosleep(&ts, NULL);
	sefer__span_free(&heap->segments, b);
	c->b_later = seg->pages[ib].slot_since > seg->pages[ia].slot_since && seg->purge_at == due;
	sefer__segment_purge(&heap->segments, seg, due,
			     false); /* the pass at a's deadline, wherever the clock is */
	c->a_purged = (seg->purged_pages & SLOT(ia)) && !(seg->dirty_pages & SLOT(ia));
	c->a_stamped = seg->pages[ia].slot_since == due; /* when: for the purge backoff */
	c->b_kept = (seg->dirty_pages & SLOT(ib)) && !(seg->purged_pages & SLOT(ib));
	c->b_next = seg->purge_at == seg->pages[ib].slot_since + delay;
	n = span_take(heap); /* a's slot is lower, purged; b's is dirty */
	c->warm_taken = n->index == ib;
	sefer__span_free(&heap->segments, n);
	sefer_free(keep);
	return NULL;
}

START_TEST(purge_after_the_delay_warm_first)
{
	struct purge_case c = { 0 };

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !sefer__opt.purge_delay_ms)
		return; /* nothing is purged, or everything at once */
	on_new_thread(purge_after_the_delay, &c);
	ck_assert_msg(c.same_segment, "two one-slot spans of a fresh heap share its segment");
	ck_assert_msg(c.a_due_first, "the segment's deadline is its first dirty slot's");
	ck_assert_msg(c.b_later, "a slot freed later keeps the earlier deadline pending");
	ck_assert_msg(c.a_purged, "at its deadline the first slot is purged");
	ck_assert_msg(c.a_stamped, "a purged slot keeps the time of the pass that purged it");
	ck_assert_msg(c.b_kept, "the slot freed later is not purged with it");
	ck_assert_msg(c.b_next, "the segment's next deadline is that slot's");
	ck_assert_msg(c.warm_taken, "a new span takes the dirty slot, not the lower purged one");
}
END_TEST

/*
 * Purge backoff (purge.c): a span that takes slots a deadline purged a short while ago
 * raises its heap's delay to twice the time they were free (at least one step, at most
 * PURGE_BACKOFF_MAX = 4); slots purged by force, or longer ago than the longest delay, raise
 * nothing; a purge pass CALM_DELAYS (8) delays after the last change lowers it one step.
 */
struct backoff_case {
	unsigned after_soon, after_forced, after_old, after_long, after_cap, cap_again;
	uint64_t delay_after_soon;
	unsigned before_calm, after_calm;
	bool same_slot;
};

/* Free pg's span, purge its slot (by a deadline at purged_at; by force with 0), take it. */
static struct page *purge_and_retake(struct heap *heap, struct page *pg, uint64_t purged_at,
				     bool *same)
{
	struct segment *seg = segment_of(pg);
	unsigned i = pg->index;
	struct page *n;

	sefer__span_free(&heap->segments, pg);
	sefer__purge_dirty(seg); /* forced */
	if (purged_at)
		seg->pages[i].slot_since = purged_at; /* as a deadline's pass at purged_at would */
	n = span_take(heap);
	*same = *same && n == &seg->pages[i];
	return n;
}

static void *backoff_thread(void *arg)
{
	struct backoff_case *c = arg;
	void *keep = sefer_malloc(16); /* this thread's heap, a segment it keeps */
	struct heap *heap = heap_get();
	uint64_t base = sefer__purge_delay(NULL), now, calm;
	struct page *pg = span_take(heap);

	/* Without fork (the ports' runner), this heap's segment may be a spare an earlier test's
	 * thread left, whose slots a global pass purged a moment ago: a span taking one raises
	 * the delay already. Start from the base. */
	heap->segments.purge_backoff = 0;
	c->same_slot = true;
	/* purged at its deadline, taken again at once: free for one delay -> 2 delays (the
	 * purge a little after now: the clock may tick before the span looks at it) */
	now = sefer__os.clock_ms();
	pg = purge_and_retake(heap, pg, now + base / 2, &c->same_slot);
	c->after_soon = heap->segments.purge_backoff;
	c->delay_after_soon = sefer__purge_delay(&heap->segments);
	heap->segments.purge_backoff = 0;
	pg = purge_and_retake(heap, pg, 0, &c->same_slot); /* by force */
	c->after_forced = heap->segments.purge_backoff;
	now = sefer__os.clock_ms();
	pg = purge_and_retake(heap, pg, now - 17 * base, &c->same_slot); /* long ago */
	c->after_old = heap->segments.purge_backoff;
	/* purged 2 delays ago, by a deadline 1 delay after the free: free for 3 -> 8 delays */
	now = sefer__os.clock_ms();
	pg = purge_and_retake(heap, pg, now - 2 * base, &c->same_slot);
	c->after_long = heap->segments.purge_backoff;
	heap->segments.purge_backoff = 0;
	now = sefer__os.clock_ms();
	pg = purge_and_retake(heap, pg, now - 15 * base, &c->same_slot); /* free for 16+ */
	c->after_cap = heap->segments.purge_backoff;
	now = sefer__os.clock_ms();
	pg = purge_and_retake(heap, pg, now, &c->same_slot);
	c->cap_again = heap->segments.purge_backoff;
	calm = heap->segments.backoff_since + 8 * sefer__purge_delay(&heap->segments);
	sefer__purge_calm(&heap->segments, calm - 1);
	c->before_calm = heap->segments.purge_backoff;
	sefer__purge_calm(&heap->segments, calm);
	c->after_calm = heap->segments.purge_backoff;
	sefer__span_free(&heap->segments, pg);
	sefer_free(keep);
	return NULL;
}

START_TEST(purge_backoff_follows_reuse)
{
	struct backoff_case c = { 0 };
	uint64_t base = sefer__purge_delay(NULL);

	if (!backoff_testable())
		return; /* nothing is purged, everything at once, or a delay the clock cannot test
			 */
	on_new_thread(backoff_thread, &c);
	ck_assert_msg(c.same_slot, "a one-slot span takes the lowest free slot, the purged one");
	ck_assert_uint_eq(c.after_soon, 1);
	ck_assert_uint_eq(c.delay_after_soon, 2 * base);
	ck_assert_uint_eq(c.after_forced, 0);
	ck_assert_uint_eq(c.after_old, 0);
	ck_assert_uint_eq(c.after_long, 3);
	ck_assert_uint_eq(c.after_cap, 4);
	ck_assert_uint_eq(c.cap_again, 4);
	ck_assert_uint_eq(c.before_calm, 4);
	ck_assert_uint_eq(c.after_calm, 3);
}
END_TEST

/*
 * Resuming (purge.c): a pass half a delay or more after the heap's deadline leaves the heap's
 * slots for one more delay; the next late pass purges unless the heap took dirty slots since.
 */
struct resume_case {
	bool timely_purges, late_defers, next_in_a_delay, again_purges, warm_counted,
		after_warm_defers, collect_purges;
};

static void *resume_thread(void *arg)
{
	struct resume_case *c = arg;
	void *keep = sefer_malloc(16);
	struct heap *heap = heap_get();
	uint64_t delay = sefer__purge_delay(&heap->segments), t = 1000000;
	uint64_t warm;
	struct segment *seg;
	struct page *pg;
	unsigned i;

	heap->segments.next_purge = t;
	c->timely_purges = !sefer__purge_deferred(&heap->segments, t + delay / 2 - 1);
	c->late_defers = sefer__purge_deferred(&heap->segments, t + delay / 2);
	c->next_in_a_delay = heap->segments.next_purge == t + delay / 2 + delay;
	t = heap->segments.next_purge;
	c->again_purges =
		!sefer__purge_deferred(&heap->segments, t + delay); /* no dirty slot taken since */
	heap->segments.next_purge = t;
	c->late_defers = c->late_defers && sefer__purge_deferred(&heap->segments, t + delay);
	t = heap->segments.next_purge;
	pg = span_take(heap);
	sefer__span_free(&heap->segments, pg); /* a dirty slot ... */
	warm = heap->segments.warm_spans;
	pg = span_take(heap); /* ... taken again */
	c->warm_counted = heap->segments.warm_spans == warm + 1;
	c->after_warm_defers = sefer__purge_deferred(&heap->segments, t + delay);
	/* sefer_collect(false) purges what aged out, however late it comes */
	seg = segment_of(pg);
	i = pg->index;
	sefer__span_free(&heap->segments, pg);
	seg->pages[i].slot_since = sefer__os.clock_ms() - 2 * delay;
	seg->purge_at = seg->pages[i].slot_since + delay;
	heap->segments.next_purge = seg->purge_at; /* the pass comes a whole delay late */
	heap->segments.purge_deferred = false;
	sefer__heap_collect(heap, false);
	c->collect_purges = !(seg->dirty_pages & SLOT(i)) && (seg->purged_pages & SLOT(i));
	heap->segments.next_purge = 0;
	heap->segments.purge_deferred = false;
	sefer_free(keep);
	return NULL;
}

START_TEST(late_pass_defers_once)
{
	struct resume_case c = { 0 };

	if (!backoff_testable())
		return;
	on_new_thread(resume_thread, &c);
	ck_assert_msg(c.timely_purges, "a pass less than half a delay late purges");
	ck_assert_msg(c.late_defers, "a late pass defers");
	ck_assert_msg(c.next_in_a_delay, "the deferred pass comes a delay later");
	ck_assert_msg(c.again_purges, "a second late pass with no warm span since purges");
	ck_assert_msg(c.warm_counted, "a span that takes a dirty slot is counted warm");
	ck_assert_msg(c.after_warm_defers, "a late pass after a warm span defers again");
	ck_assert_msg(c.collect_purges, "sefer_collect(false) purges an aged-out slot when late");
}
END_TEST

/*
 * The owner's slow paths that take no span look at the purge deadlines too (core/heap.h,
 * heap_heartbeat): a slot that is due is purged by a run of malloc and free that empties its
 * one page again and again (page_retire) and never takes a span. Within a few delays: a pass
 * that comes late (this thread slept to the deadline, and may wake past it) defers once
 * (purge.c, "resuming"), and the next purges.
 */
#define HEARTBEAT_SIZE 96 /* a class of its own in the fresh heap */

struct heartbeat_case {
	bool dirty_when_due, one_page, purged;
};

static void *heartbeat_thread(void *arg)
{
	struct heartbeat_case *c = arg;
	void *keep = sefer_malloc(16); /* this thread's heap, a segment it keeps */
	struct heap *heap = heap_get();
	void *p = sefer_malloc(HEARTBEAT_SIZE); /* its class's page, before the clock starts */
	struct page *churn = page_of(segment_of(p), p), *pg;
	struct segment *seg;
	struct timespec ts = { 0, 1000000 };
	uint64_t until;
	unsigned i;

	sefer_free(p);
	/* Without fork (the ports' runner), this heap's segment may be a spare an earlier test's
	 * thread left, with dirty slots of its own and their deadlines: purged first, so the
	 * set's deadline is this test's slot's. */
	sefer__purge_set(&heap->segments, sefer__os.clock_ms(), true);
	pg = span_take(heap);
	seg = segment_of(pg);
	i = pg->index;
	sefer__span_free(&heap->segments, pg);
	until = seg->purge_at + 4 * sefer__purge_delay(&heap->segments);
	while (sefer__os.clock_ms() < seg->purge_at)
		nanosleep(&ts, NULL);
	c->dirty_when_due = (seg->dirty_pages & SLOT(i)) && !(seg->purged_pages & SLOT(i));
	c->one_page = true;
	do {
		for (unsigned k = 0; k < 2 * PURGE_BEAT; k++) {
			p = sefer_malloc(HEARTBEAT_SIZE);
			c->one_page = c->one_page && page_of(segment_of(p), p) == churn;
			sefer_free(p); /* empties churn: page_retire */
		}
		c->purged = !(seg->dirty_pages & SLOT(i)) && (seg->purged_pages & SLOT(i));
	} while (!c->purged && sefer__os.clock_ms() < until);
	sefer_free(keep);
	return NULL;
}

START_TEST(purge_without_a_span)
{
	struct heartbeat_case c = { 0 };

	if (!backoff_testable() || policy_keeps_small_blocks())
		return; /* a magazine serves the run: no slow path runs (decommit.rst) */
	on_new_thread(heartbeat_thread, &c);
	ck_assert_msg(c.dirty_when_due, "the freed slot waits dirty for its deadline");
	ck_assert_msg(c.one_page, "the run of malloc and free stays on its page");
	ck_assert_msg(c.purged, "a run that takes no span purges the slot that is due");
}
END_TEST

Suite *segment_suite(void)
{
	Suite *s = suite_create("segment");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, segment_and_page_of);
	tcase_add_test(tc, large_segment_layout);
	tcase_add_test(tc, segment_table_foreign);
	tcase_add_test(tc, metadata_fits);
	tcase_add_test(tc, heap_is_consistent);
	tcase_add_test(tc, purge_after_the_delay_warm_first);
	tcase_add_test(tc, purge_backoff_follows_reuse);
	tcase_add_test(tc, late_pass_defers_once);
	tcase_add_test(tc, purge_without_a_span);
	suite_add_tcase(s, tc);
	return s;
}
