// SPDX-License-Identifier: MIT
/*
 * Purging: giving the memory of free dirty page slots back to the OS (sefer_os.purge), and
 * deciding when. Everything about it is here: the slots of one segment, the passes over a
 * segment set (a heap's segments), the timing rules that adjust a set's delay to the program,
 * and the process-wide pass over the segments no heap owns (core/unowned.c walks their lists
 * under their locks and hands each held segment here).
 *
 * Timing: a slot that becomes free and dirty is purged once it has stayed so for the delay: each
 * dirty slot has its time (its descriptor's slot_since, unused while the slot is in a span) and
 * seg->purge_at is the earliest deadline, which the owner's slow path checks (purge_pass). A
 * deadline purges the slots that are due, not every dirty slot of the segment. The delay is
 * SEFER_PURGE_DELAY_MS, longer when purged slots are soon taken again (backoff: a set's own, and
 * one for all the segments no heap owns), and a set's pass that comes late (resuming after a pause)
 * leaves the slots one more delay. A purged slot's slot_since holds when it was purged (0: by
 * force). The slow path purges after it took what span it needed, and a new span takes dirty slots
 * first (core/span.c): memory one phase of a program freed is reused warm by the next instead of
 * being given back and faulted in again. Empty segments in a set's cache and on the spare list keep
 * their memory until then too, so a heap that empties and refills a segment, or a thread generation
 * that follows an exited one, reuses warm memory instead of faulting it in again (and the purge's
 * TLB shootdown is saved). Spare and abandoned segments have no owner to purge them: their
 * deadlines feed sefer_purge_at, which every thread's slow path checks (purge_pass, global_purge),
 * and the last heap but one to exit purges them all at once (heap_abandon), so an idle process's
 * RSS still follows its live set, unless the last such exit's leftovers were taken over at once
 * (thread generations, at the end).
 *
 * Invariants: the delay of a set is SEFER_PURGE_DELAY_MS << purge_backoff with purge_backoff <=
 * PURGE_BACKOFF_MAX, and SEFER_PURGE_DELAY_MS << sefer__unowned_backoff (at most
 * UNOWNED_BACKOFF_MAX) for segments no heap owns (spares, abandoned ones); a delay of 0 (purge at
 * once) or "never" is never changed; forced purges (thread exit, sefer_collect(true)) are neither
 * deferred nor counted; seg->unowned_purged is a subset of seg->purged_pages. A set's state is its
 * owner's, a segment's its owner's or its holder's (HELD_OWNER); sefer_purge_at is atomic.
 */
#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/stats.h"
#include "core/unowned.h"
#include "sefer/os.h"

/* ---- a segment's slots ---- */

/*
 * Purge a range the configured way (CONFIG_PURGE_DONTNEED: eager). Returns whether its memory
 * was given back: a lazy purge returns false by the os contract (the range does not read as
 * zero) and gives it back all the same; an eager one that returns false was refused, and the
 * old contents stay (CONFIG_FAULT_INJECTION's purge faults, selftest/unit/test_fault.c).
 */
static bool purge_range(void *addr, size_t len)
{
	return sefer__os.purge(addr, len, IS_ENABLED(CONFIG_PURGE_DONTNEED)) ||
	       !IS_ENABLED(CONFIG_PURGE_DONTNEED);
}

/*
 * Give back the memory of the dirty slots in mask, at `now` (0: by force, not by a deadline).
 * Returns 0, or when the OS refused an eager purge, the deadline at which to try the slots it
 * left dirty again (their delay counted from now).
 */
static uint64_t purge_slots(struct segment *seg, uint64_t mask, uint64_t now)
{
	uint64_t done = mask & seg->dirty_pages, retry = 0;

	sefer_assert(!(done & ~seg->free_pages)); /* never the memory of a slot in a span */
	mask = done;
	if (!mask)
		return 0;
	for (uint64_t m = done; m; m &= m - 1)
		seg->pages[__builtin_ctzll(m)].slot_since = now;
	while (mask) {
		unsigned lo = (unsigned)__builtin_ctzll(mask);
		uint64_t run = mask >> lo;
		unsigned len = ~run ? (unsigned)__builtin_ctzll(~run) : 64 - lo;
		uint64_t run_bits = len >= 64 ? ~0ULL : ((1ULL << len) - 1) << lo;

		/* A refused purge gave nothing back: the slots stay dirty (span_alloc would take
		 * them for zeroed memory), due again after the delay */
		if (!purge_range((uint8_t *)seg + ((size_t)lo << SPAGE_SHIFT),
				 (size_t)len << SPAGE_SHIFT)) {
			uint64_t at = sefer__os.clock_ms();

			for (uint64_t m = run_bits; m; m &= m - 1)
				seg->pages[__builtin_ctzll(m)].slot_since = at;
			retry = at + sefer__opt.purge_delay_ms + 1;
			done &= ~run_bits;
		}
		mask &= ~run_bits;
	}
	long long bytes = (long long)__builtin_popcountll(done) << SPAGE_SHIFT;

	seg->dirty_pages &= ~done;
	seg->purged_pages |= done;
	stat_add(&sefer__gstats.committed, NULL, -bytes);
	stat_add(&sefer__gstats.purged, NULL, bytes);
	return retry;
}

/* Give back every dirty slot of seg now (its owner, or the holder of HELD_OWNER). */
void sefer__purge_dirty(struct segment *seg)
{
	seg->purge_at = purge_slots(seg, seg->dirty_pages, 0);
}

/* seg's next purge deadline: when its longest-dirty slot is due; 0 if no slot is dirty. */
uint64_t sefer__segment_deadline(struct segment *seg)
{
	if (!IS_ENABLED(CONFIG_DECOMMIT) || !seg->dirty_pages)
		return 0;
	return seg->purge_at;
}

/*
 * Purge the slots of seg that have been dirty for the delay at `now` (every dirty slot with
 * force) and return its next deadline, 0 when no slot stays dirty. Its owner, or the holder
 * of HELD_OWNER.
 */
uint64_t sefer__segment_purge_due(struct segment *seg, uint64_t now, bool force, uint64_t delay)
{
	uint64_t due = 0, next = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return 0;
	if (force) {
		sefer__purge_dirty(seg);
		return sefer__segment_deadline(seg); /* 0 unless the OS refused a purge */
	}
	if (!seg->purge_at || now < seg->purge_at)
		return sefer__segment_deadline(seg);
	for (uint64_t m = seg->dirty_pages; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctzll(m);
		uint64_t at = seg->pages[i].slot_since + delay;

		if (now >= at)
			due |= (uint64_t)1 << i;
		else if (!next || at < next)
			next = at;
	}
	due = purge_slots(seg, due, now);
	next = deadline_first(next, due);
	seg->purge_at = next;
	return next;
}

/* The slots `bits` of seg become free and dirty now (core/span.c): their time starts. */
void sefer__purge_slots_freed(struct segment *seg, uint64_t bits, uint64_t delay)
{
	uint64_t now;

	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	now = sefer__os.clock_ms();
	for (uint64_t m = bits; m; m &= m - 1)
		seg->pages[__builtin_ctzll(m)].slot_since = now;
	if (!seg->purge_at)
		seg->purge_at = now + delay;
}

/* ---- a segment set's passes ---- */

/* What of set's segment seg is due; its next deadline becomes the set's. */
void sefer__segment_purge(struct segment_set *set, struct segment *seg, uint64_t now, bool force)
{
	set_purge_at(set, sefer__segment_purge_due(seg, now, force, sefer__purge_delay(set)));
}

/* Slots of seg became dirty (span_free, segment_free): its deadline becomes the set's. */
void sefer__purge_schedule(struct segment_set *set, struct segment *seg)
{
	if (!IS_ENABLED(CONFIG_DECOMMIT))
		return;
	if (sefer__purge_delay(set) == 0)
		sefer__purge_dirty(seg); /* a refused purge leaves a deadline */
	set_purge_at(set, sefer__segment_deadline(seg));
}

/* What is due in every segment of set at `now` (everything dirty with force). */
void sefer__purge_set(struct segment_set *set, uint64_t now, bool force)
{
	set->next_purge = 0;
	for_each_set_segment(set, s, true)
		sefer__segment_purge(set, s, now, force);
}

/*
 * Purge what is due: the set's segments (its cached empty ones included), then the spare and
 * abandoned segments of exited heaps when the global deadline has passed. All with force.
 * on_the_way: a pass the owner's slow path makes on its way (page_find after a span, and
 * heap_heartbeat): a late one may defer ("resuming"); not sefer_collect()'s, which purges
 * what aged out whenever the program asks.
 */
void sefer__purge_pass(struct segment_set *set, bool force, bool on_the_way)
{
	uint64_t now = sefer__os.clock_ms();
	uint64_t global = atomic_load_explicit(&sefer__purge_at, memory_order_relaxed);

	if (force || (global && now >= global))
		sefer__global_purge(now, force);
	if (!force && (!set->next_purge || now < set->next_purge))
		return;
	if (!force && on_the_way && sefer__purge_deferred(set, now))
		return;
	sefer__purge_calm(set, now);
	sefer__purge_set(set, now, force);
}

/*
 * ---- purge backoff ----
 * A set's delay is the base delay doubled purge_backoff times (at most PURGE_BACKOFF_MAX
 * times: 16 times SEFER_PURGE_DELAY_MS, 800 ms by default). A span that takes slots which a
 * deadline purged less than the longest delay ago finds memory given back only to be faulted
 * in again: the set's delay rises at once to twice the time those slots were free (the time
 * since their purge plus the delay that purged them), at least one step. CALM_DELAYS delays
 * after the last change with no such span, the set's next purge pass lowers it one step.
 * Forced purges (thread exit, sefer_collect(true)) leave slot_since 0 and count for nothing.
 * Owner only.
 */
#define PURGE_BACKOFF_MAX 4
#define CALM_DELAYS 8

/* Is a backoff at level k, last changed at since, with delay now, due to come down a step? */
static inline bool calm_due(unsigned k, uint64_t since, uint64_t delay, uint64_t now)
{
	return k && now >= since + CALM_DELAYS * delay;
}

/* The purge delay of set's segments; SEFER_PURGE_DELAY_MS with set NULL (no owner). */
uint64_t sefer__purge_delay(const struct segment_set *set)
{
	uint64_t base = __atomic_load_n(&sefer__opt.purge_delay_ms, __ATOMIC_RELAXED);

	if (!set || delay_is_never(base))
		return base;
	return base << set->purge_backoff;
}

/*
 * ---- span tails ----
 * A span that took dirty slots (span_alloc: warm_tail) may lie over memory an earlier span
 * carved further than it has: a slot a class of 1 KiB blocks filled and gave back, taken by a
 * class of 48 B blocks that carves 4 KiB of it, keeps the other 60 KiB resident for as long as
 * the new span lives. In thread generations (bench/threadgen at four threads) every heap takes
 * its turn holding most of the live items, its slots are then reused by whatever class comes
 * next, and these tails were 0.4-0.8 MiB of each heap's 3.0-3.5 MiB resident. A heap parking
 * (its thread exiting: core/heap.c) gives back every such tail of TAIL_MIN bytes or more: the
 * blocks past the carved ones, from the first OS page no carved block touches to the span's
 * end. The span keeps its slots and its blocks; a later carve faults the pages in again, and
 * is_zero stays clear (the span took dirty slots), so nothing reads them as zeroed. Only spans
 * of TAIL_MIN_BLOCKS blocks or more (blocks up to 256 B in 64 KiB pages): a class of bigger
 * blocks carves its span on at its next busy turn, and faults the tail in again (threadgen:
 * 40-66% of the tails purged of the classes from 320 B to 1 KiB were carved again, 0-20% of
 * those of 256 B and under; with them, 1.3x the faults for a peak 0.96x). Not with a delay of
 * "never" (mallopt's M_TRIM_THRESHOLD < 0).
 */
#define TAIL_MIN ((size_t)16 << 10)

void sefer__purge_span_tails(struct segment_set *set)
{
	int64_t bytes = 0;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || delay_is_never(sefer__purge_delay(NULL)))
		return;
	for_each_set_segment(set, seg, false) {
		struct page *pg;

		for_each_span(seg, pg, idx) {
			uint8_t *from = page_start(pg) + span_carved_bytes(pg);
			uint8_t *end = page_start(pg) + page_span_bytes(pg);

			if (!pg->warm_tail || from + TAIL_MIN > end || !span_tail_purgeable(pg))
				continue;
			pg->warm_tail = 0; /* given back, or refused: tried once */
			if (purge_range(from, (size_t)(end - from))) {
				pg->purged_tail = (uint32_t)(from - page_start(pg));
				bytes += end - from;
			}
		}
	}
	if (bytes) {
		stat_add(&sefer__gstats.purged, NULL, bytes);
		stat_add(&sefer__gstats.committed, NULL, -bytes);
	}
}

/*
 * pg's purged tail counts committed again: whole (the span is freed or its segment released),
 * or up to where its carved blocks now reach (a carve went into it). Its owner, or the holder
 * of a segment no heap owns.
 */
void sefer__purge_tail_recommit(struct page *pg, bool whole)
{
	size_t end = page_span_bytes(pg), from = pg->purged_tail, to = end;

	if (!whole && span_carved_bytes(pg) < end)
		to = span_carved_bytes(pg);
	if (to <= from)
		return;
	stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak, (long long)(to - from));
	pg->purged_tail = to < end ? (uint32_t)to : 0;
}

/*
 * The backoff level when memory given back at `since` (ms; 0: by force) is wanted again at
 * `now`, at level k: was it given back too soon? k when not (by force, or longer ago than the
 * longest delay would have kept it).
 */
static unsigned backoff_after(uint64_t since, unsigned k, unsigned max, uint64_t now)
{
	uint64_t base = sefer__purge_delay(NULL), delay = base << k;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !base || delay_is_never(base) || k >= max)
		return k;
	if (!since || now >= since + (base << PURGE_BACKOFF_MAX))
		return k; /* by force, or it stayed unused longer than any delay would keep it */
	uint64_t idle = (now > since ? now - since : 0) + delay; /* how long it was free */

	do
		k++;
	while (k < max && base << k < 2 * idle);
	stat_add(&sefer__gstats.purge_backoffs, NULL, 1);
	return k;
}

/* The backoff level after a span takes the purged slots `purged` of seg, at level k. */
static unsigned backoff_raised(const struct segment *seg, uint64_t purged, unsigned k,
			       unsigned max, uint64_t now)
{
	uint64_t since = 0;

	for (uint64_t m = purged; m; m &= m - 1) {
		uint64_t t = seg->pages[__builtin_ctzll(m)].slot_since;

		if (t > since)
			since = t;
	}
	return backoff_after(since, k, max, now);
}

static void set_backoff(struct segment_set *set, unsigned k, uint64_t now)
{
	if (k != set->purge_backoff) {
		set->purge_backoff = k;
		set->backoff_since = now;
	}
}

/* A span of set takes the purged slots `purged` of seg: were they purged too soon? */
void sefer__purge_backoff_check(struct segment_set *set, struct segment *seg, uint64_t purged)
{
	uint64_t now = sefer__os.clock_ms();

	set_backoff(set, backoff_raised(seg, purged, set->purge_backoff, PURGE_BACKOFF_MAX, now),
		    now);
}

/*
 * Memory a policy kept for set's heap and gave back at `since` (ms), once it had gone unused for
 * the set's delay (heap_keep_aging), is wanted again at `now` (the policy's clock): the same
 * rule as for the slots. The owner.
 */
void sefer__purge_backoff_wanted(struct segment_set *set, uint64_t since, uint64_t now)
{
	set_backoff(set, backoff_after(since, set->purge_backoff, PURGE_BACKOFF_MAX, now), now);
}

/*
 * The segments no heap owns (spares, abandoned ones) have one delay for the whole process,
 * SEFER_PURGE_DELAY_MS << sefer__unowned_backoff, with the same rule: a span that takes slots
 * the global pass purged (seg->unowned_purged) a short while ago raises it, and a global pass
 * CALM_DELAYS of its delays after the last change lowers it a step. The next generation of
 * threads, which takes over what the last one left a little after its deadline (abandoned
 * segments no new thread needed at first), so makes later leftovers wait longer. It stops at
 * UNOWNED_BACKOFF_MAX (8 times the base), a step below a set's cap: memory no thread owns is
 * what RSS carries from one generation to the next, and each step trades purges for peak RSS
 * (bench/tgstress, 8 threads on 2 CPUs, against snmalloc in the same runs: caps of 2, 3 and 4
 * steps purged 472, 227 and 76-116 MiB over the run, for 1.10x, 1.04x and 0.99x its CPU time
 * and a peak RSS of 121, 128 and 140 MiB against its 108-113; 4 against 3 in the same runs:
 * 0.98x the CPU time, 154 MiB against 139). Any thread: relaxed atomics, a lost update only
 * delays a change.
 */
#define UNOWNED_BACKOFF_MAX 3
SEFER_INTERNAL _Atomic(unsigned) sefer__unowned_backoff;
static _Atomic(uint64_t) unowned_backoff_since;

/* The purge delay of the segments no heap owns. */
uint64_t sefer__purge_unowned_delay(void)
{
	uint64_t base = sefer__purge_delay(NULL);

	if (delay_is_never(base))
		return base;
	return base << atomic_load_explicit(&sefer__unowned_backoff, memory_order_relaxed);
}

static void unowned_backoff_check(struct segment *seg, uint64_t purged)
{
	unsigned k = atomic_load_explicit(&sefer__unowned_backoff, memory_order_relaxed);
	uint64_t now = sefer__os.clock_ms();
	unsigned raised = backoff_raised(seg, purged, k, UNOWNED_BACKOFF_MAX, now);

	if (raised != k) {
		atomic_store_explicit(&sefer__unowned_backoff, raised, memory_order_relaxed);
		atomic_store_explicit(&unowned_backoff_since, now, memory_order_relaxed);
	}
}

/* A global pass at `now`: lower the unowned delay a step after a calm spell. */
static void unowned_calm(uint64_t now)
{
	unsigned k = atomic_load_explicit(&sefer__unowned_backoff, memory_order_relaxed);
	uint64_t since = atomic_load_explicit(&unowned_backoff_since, memory_order_relaxed);

	if (calm_due(k, since, sefer__purge_unowned_delay(), now)) {
		atomic_store_explicit(&sefer__unowned_backoff, k - 1, memory_order_relaxed);
		atomic_store_explicit(&unowned_backoff_since, now, memory_order_relaxed);
	}
}

/*
 * ---- resuming ----
 * There is no background thread: a set's pass runs on its owner's slow paths, when one takes a
 * new span and every PURGE_BEAT-th one that takes none while a deadline is pending
 * (heap_heartbeat, core/heap.h). A pass that comes half a delay or more after the set's deadline
 * finds an owner that ran none of them for that long: it resumes after a pause. What it freed
 * before the pause stayed resident through it, and giving it back now, as the new phase
 * starts, would make the phase fault it in again (a server's next burst of requests). Such a
 * pass leaves the set's slots for one more delay, and the next one purges what is still due,
 * unless the set took dirty slots since (the deferral was right: the new phase reused the
 * memory). Only the passes on the owner's way (page_find, heap_heartbeat) ask;
 * sefer_collect() purges what aged out. Returns whether this pass is deferred.
 */
bool sefer__purge_deferred(struct segment_set *set, uint64_t now)
{
	uint64_t delay = sefer__purge_delay(set);

	if (now < set->next_purge + delay / 2 ||
	    (set->purge_deferred && set->warm_spans == set->warm_at_deferral)) {
		set->purge_deferred = false;
		return false;
	}
	set->purge_deferred = true;
	set->warm_at_deferral = set->warm_spans;
	set->next_purge = now + delay;
	return true;
}

/* A purge pass of set at `now`: lower its delay a step after a calm spell. */
void sefer__purge_calm(struct segment_set *set, uint64_t now)
{
	if (calm_due(set->purge_backoff, set->backoff_since, sefer__purge_delay(set), now)) {
		set->purge_backoff--;
		set->backoff_since = now;
	}
}

/*
 * A span of set takes the slots `bits` of seg, before they leave the free masks
 * (span_alloc): count a span that reuses dirty slots (resuming), check the backoff for purged
 * ones, and count their memory committed again.
 */
void sefer__purge_span_taken(struct segment_set *set, struct segment *seg, uint64_t bits)
{
	uint64_t purged = seg->purged_pages & bits, unowned = purged & seg->unowned_purged;

	if (seg->dirty_pages & bits)
		set->warm_spans++;
	if (seg->handoff_pages & bits)
		sefer__purge_handoff_used(seg, bits);
	if (unowned) { /* the pass over segments no heap owns purged them: its delay learns */
		unowned_backoff_check(seg, unowned);
		seg->unowned_purged &= ~unowned;
	}
	if (purged) {
		if (purged & ~unowned)
			sefer__purge_backoff_check(set, seg, purged & ~unowned);
		stat_add(&sefer__gstats.committed, &sefer__gstats.committed_peak,
			 (long long)__builtin_popcountll(purged) << SPAGE_SHIFT);
	}
}

/* ---- the segments no heap owns ---- */

/* earliest spare/abandoned purge deadline, 0 = none */
SEFER_INTERNAL _Atomic(uint64_t) sefer__purge_at;

/* Lower the global deadline to `when` (a spare or abandoned segment has dirty slots). */
void sefer__global_purge_at(uint64_t when)
{
	uint64_t cur = atomic_load_explicit(&sefer__purge_at, memory_order_relaxed);

	while ((!cur || when < cur) &&
	       !atomic_compare_exchange_weak_explicit(&sefer__purge_at, &cur, when,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

struct unowned_pass {
	uint64_t now, delay;
	bool force;
	bool handoff;	      /* a last exit's pass: mark what the next threads may take */
	uint64_t keep_slots;  /* with handoff and not force: dirty slots it may still keep */
};

static void handoff_bound(struct segment *seg, struct unowned_pass *pass);

/*
 * A spare or abandoned segment, held: what of it is due (the unowned delay, no owner). What a
 * deadline purges is marked, for the backoff when a span takes it.
 */
static uint64_t unowned_purge_due(struct segment *seg, void *arg)
{
	struct unowned_pass *pass = arg;
	uint64_t purged = seg->purged_pages, next;

	next = sefer__segment_purge_due(seg, pass->now, pass->force, pass->delay);
	seg->unowned_purged |= seg->purged_pages & ~purged;
	if (pass->handoff) {
		handoff_bound(seg, pass);
		next = sefer__segment_deadline(seg);
	}
	return next;
}

/* Purge the spare segments that are due (all with force); returns the next deadline or 0. */
static uint64_t spare_purge(struct unowned_pass *pass)
{
	if (pass->force && IS_ENABLED(CONFIG_PURGE_FREE)) {
		/* MADV_FREE leaves a purged range resident until the kernel needs it: what must
		 * go back now (the last exit, sefer_collect(true)) is unmapped instead. */
		sefer__spares_release_all();
		return 0;
	}
	return sefer__spares_each(unowned_purge_due, pass);
}

/*
 * Purge the dirty slots of abandoned segments that are due (all with force); one that emptied
 * meanwhile becomes a spare, purged first with force. Returns the next deadline or 0.
 */
static uint64_t abandoned_purge(struct unowned_pass *pass)
{
	struct segment *emptied, *next_seg;
	uint64_t next = sefer__abandoned_each_held(unowned_purge_due, pass, &emptied);

	for (; emptied; emptied = next_seg) {
		next_seg = emptied->next;
		if (pass->force)
			sefer__purge_dirty(emptied);
		else if (pass->handoff)
			handoff_bound(emptied, pass);
		sefer__spare_put(emptied);
	}
	return next;
}

/*
 * When a heap parked now releases what its policies kept for its next owner (heap_park: its
 * large cache): once the purge delay of memory no thread owns has passed, as its dirty slots;
 * 0 (no deadline: at its dismantling only) where nothing is purged by time.
 */
uint64_t sefer__purge_kept_until(void)
{
	uint64_t delay = sefer__purge_unowned_delay();

	if (!IS_ENABLED(CONFIG_DECOMMIT) || delay_is_never(delay))
		return 0;
	return sefer__os.clock_ms() + delay;
}

/*
 * A parked heap (core/heap.c), held: release what its policies kept for its next owner once
 * that is due (their heap_exit), collect it as its owner's slow path would (the frees other
 * threads pushed, the pages they emptied), purge what its own deadlines make due, and at a
 * last exit's pass bound its dirty slots as the hand-off's. Returns its next deadline or 0.
 * A forced pass finds no parked heap (dismantled first).
 */
static uint64_t parked_purge_due(struct heap *heap, void *arg)
{
	struct unowned_pass *pass = arg;
	struct segment_set *set = &heap->segments;
	uint64_t kept = heap->policy_kept_until, first = heap->first_kept_until;
	bool walk = first && pass->now >= first; /* its first pages walked whole, once due */

	if (kept && pass->now >= kept) {
		sefer__policy_heap_exit_all(heap);
		heap->policy_kept_until = kept = 0;
	}
	sefer__heap_drain_delayed(heap);
	if (!sefer__heap_release_empty(heap, false, walk ? UINT32_MAX : RELEASE_FIRST_WALK))
		heap->first_kept_until = first = 0;
	kept = deadline_first(kept, first);
	if (!set->next_purge && !pass->handoff)
		return kept;
	if (!set->next_purge || pass->now >= set->next_purge)
		sefer__purge_set(set, pass->now, false);
	if (pass->handoff) {
		for_each_set_segment(set, seg, true)
			handoff_bound(seg, pass);
	}
	return deadline_first(set->next_purge, kept);
}

/*
 * Purge the spare and abandoned segments and the parked heaps' slots whose deadline passed
 * (all with force) and set sefer_purge_at to the next deadline. Any thread, no lock held.
 * Only through unowned_release().
 */
static void unowned_pass_run(struct unowned_pass *pass)
{
	uint64_t next;

	if (!pass->force)
		unowned_calm(pass->now);
	pass->delay = sefer__purge_unowned_delay();
	atomic_store_explicit(&sefer__purge_at, 0, memory_order_relaxed);
	next = sefer__parked_each(parked_purge_due, pass);
	next = deadline_first(next, spare_purge(pass));
	next = deadline_first(next, abandoned_purge(pass));
	if (next)
		sefer__global_purge_at(next);
}

/*
 * The one way to release what no thread owns, with or without CONFIG_DECOMMIT: a forced pass
 * first dismantles the parked heaps (their memory then goes where an unparked exit's would),
 * and purges only where the build decommits at all.
 */
static void unowned_release(struct unowned_pass *pass)
{
	if (pass->force)
		sefer__parked_dismantle();
	if (IS_ENABLED(CONFIG_DECOMMIT))
		unowned_pass_run(pass);
}

static void handoff_forget(void);

/* With force (sefer_collect(true), malloc_trim): everything, and no hand-off is left either. */
void sefer__global_purge(uint64_t now, bool force)
{
	struct unowned_pass pass = { .now = now, .force = force };

	if (force)
		handoff_forget();
	unowned_release(&pass);
}

/*
 * ---- thread generations ----
 * The exit that leaves at most one other heap alive (the last worker) purges what exited
 * heaps left, spares and abandoned segments, at once (heap_abandon): no slow path may come to
 * purge it at its deadline. A program that runs its threads in generations (start them, join
 * them all, start the next ones) then gives back at every generation's end what the next one
 * faults in again a moment later, and every purge interrupts the other CPUs for their TLBs.
 * So that exit looks at what followed the last one: when a heap took over what it left (a
 * spare, an abandoned segment) within the longest delay (16 times SEFER_PURGE_DELAY_MS), the
 * program starts its next threads right away, and this exit leaves what it would purge to the
 * deadline of the segments no heap owns instead, which the next threads' slow paths check.
 * The first exit of a program, and one whose leftovers nobody took soon enough, still purges
 * at once; so does sefer_collect(true) (malloc_trim), which also forgets the last exit
 * (handoff_forget). With a delay of "never" every such exit keeps all it would purge, unbounded:
 * until 2026-12-07 it purged everything at once instead, and mallopt(M_TRIM_THRESHOLD, -1), which
 * a program calls so as never to give memory back, gave back the most (20 generations of two
 * threads that each fill and free 10 MB of 100-byte blocks: 427 MiB purged, 117,000 faults,
 * against 21 MiB and 12,500 with the default delay). What a kept hand-off costs a program
 * that stops starting threads: one generation's leftovers stay resident until any thread's
 * next slow path after the deadline, or sefer_collect(). Any thread: relaxed atomics (hints).
 */
static _Atomic(uint64_t) last_exit_at; /* ms of the last such exit, 0: none yet */
static atomic_bool handoff_taken;      /* a heap took over what it left, soon after */
/* slots of the last such exit's hand-off (seg->handoff_pages) that spans took since */
static _Atomic(uint64_t) handoff_used;
static _Atomic(uint64_t) handoff_bound_last;

/*
 * A kept hand-off is bounded: it keeps at most HANDOFF_KEEP_FACTOR times the slots that the
 * threads after the last such exit took of that exit's hand-off (its spare and abandoned
 * segments' free slots, seg->handoff_pages), or 7/8 of the last bound when that is more (the
 * exits of one generation's workers need not all come at its end, and what one interval took
 * varies 10x); the dirty slots over the bound are purged at once. Without it, tgstress
 * (8 threads, 50 generations) kept 35-39 MiB of dirty slots at each exit, of which the next
 * threads took 1-10 MiB, and its peak RSS was 85-90 MiB against glibc's 23-25 (2.3x mimalloc
 * 2.0.9's); with it 40-43 MiB, at 0.85-0.92x the throughput (Documentation/decommit.rst).
 */
#define HANDOFF_KEEP_FACTOR 4

/* A span takes the slots bits of seg: those of the last hand-off count as used (span_alloc). */
void sefer__purge_handoff_used(struct segment *seg, uint64_t bits)
{
	uint64_t h = seg->handoff_pages & bits;

	seg->handoff_pages &= ~h;
	atomic_fetch_add_explicit(&handoff_used, (uint64_t)__builtin_popcountll(h),
				  memory_order_relaxed);
}

/*
 * A last exit's pass over seg (spare or abandoned, held): keep its dirty slots while the bound
 * allows, else purge them all now; then mark its free slots as this hand-off.
 */
static void handoff_bound(struct segment *seg, struct unowned_pass *pass)
{
	uint64_t n = (uint64_t)__builtin_popcountll(seg->dirty_pages);

	if (!pass->force && n > pass->keep_slots) {
		uint64_t keep = seg->dirty_pages;

		for (uint64_t k = pass->keep_slots; k; k--)
			keep &= keep - 1; /* keep the lowest keep_slots dirty slots */
		keep = seg->dirty_pages & ~keep;
		uint64_t at = seg->purge_at, retry = purge_slots(seg, seg->dirty_pages & ~keep, 0);

		seg->purge_at = deadline_first(retry, at);
		n = pass->keep_slots;
	}
	pass->keep_slots -= n;
	seg->handoff_pages = seg->free_pages;
}

/*
 * sefer_collect(true) gives back what the last exit left: there is no hand-off for the next
 * threads to take, so the next last exit is a program's first again and purges at once (a
 * program that collects, then runs and joins threads and goes idle gets its memory back; the
 * decommit suite's rss test, run after other suites' threads, kept 13 MiB in a PURGE_FREE
 * configuration when a taken hand-off of theirs counted for its exit).
 */
static void handoff_forget(void)
{
	atomic_store_explicit(&last_exit_at, 0, memory_order_relaxed);
	atomic_store_explicit(&handoff_taken, false, memory_order_relaxed);
	atomic_store_explicit(&handoff_used, 0, memory_order_relaxed);
	atomic_store_explicit(&handoff_bound_last, 0, memory_order_relaxed);
}

/* A heap takes a spare or an abandoned segment (core/unowned.c). */
void sefer__purge_handoff_taken(void)
{
	uint64_t at = atomic_load_explicit(&last_exit_at, memory_order_relaxed);

	if (!at || atomic_load_explicit(&handoff_taken, memory_order_relaxed))
		return;
	if (sefer__os.clock_ms() < at + (sefer__purge_delay(NULL) << PURGE_BACKOFF_MAX))
		atomic_store_explicit(&handoff_taken, true, memory_order_relaxed);
}

/*
 * The exit that leaves at most one other heap alive, after the exiting heap's segments went
 * to the spare and abandoned lists: purge them all now, or leave them to their deadline when
 * the last such exit's leftovers were taken over soon.
 */
void sefer__purge_last_exit(void)
{
	uint64_t now = sefer__os.clock_ms(), base = sefer__purge_delay(NULL);
	bool keep = atomic_exchange_explicit(&handoff_taken, false, memory_order_relaxed);
	bool never = delay_is_never(base);

	atomic_store_explicit(&last_exit_at, now ? now : 1, memory_order_relaxed);
	/* a delay of "never" (mallopt's M_TRIM_THRESHOLD < 0) purges nothing here either, and
	 * dismantles no parked heap: what the exits left stays for whoever comes next */
	keep = (keep || never) && IS_ENABLED(CONFIG_DECOMMIT) && base;
	struct unowned_pass pass = { .now = now, .force = !keep, .handoff = true };

	uint64_t used = HANDOFF_KEEP_FACTOR *
			atomic_exchange_explicit(&handoff_used, 0, memory_order_relaxed);
	uint64_t last = atomic_load_explicit(&handoff_bound_last, memory_order_relaxed);

	pass.keep_slots = used > last - last / 8 ? used : last - last / 8;
	atomic_store_explicit(&handoff_bound_last, pass.keep_slots, memory_order_relaxed);
	if (never)
		pass.keep_slots = UINT64_MAX; /* no bound either */
	if (keep)
		stat_add(&sefer__gstats.handoffs_kept, NULL, 1);
	unowned_release(&pass);
}
