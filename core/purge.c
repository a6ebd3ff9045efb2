// SPDX-License-Identifier: MIT
/*
 * Purge timing of a heap's segments: how long its free dirty slots wait before segment.c gives
 * them back (segment.c, "Purge timing", has the mechanism: slot times, deadlines, passes).
 *
 * Two rules adjust the wait to the program, both on the owner's slow path, owner-only state in
 * struct heap, no locks:
 *  - backoff: a span that takes slots purged a short while ago raises the heap's delay;
 *  - resuming: a pass that comes late (the heap took no span for a while) leaves the slots for
 *    one more delay.
 * Invariants: the delay of a heap is SEFER_PURGE_DELAY_MS << purge_backoff with purge_backoff
 * <= PURGE_BACKOFF_MAX, and SEFER_PURGE_DELAY_MS itself for segments no heap owns (spares,
 * abandoned ones); a delay of 0 (purge at once) or "never" is never changed; forced purges
 * (thread exit, sefer_collect(true)) are neither deferred nor counted.
 */
#include "core/heap.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer/os.h"

/*
 * ---- purge backoff ----
 * A heap's delay is the base delay doubled purge_backoff times (at most PURGE_BACKOFF_MAX
 * times: 16 times SEFER_PURGE_DELAY_MS, 800 ms by default). A span that takes slots which a
 * deadline purged less than the longest delay ago finds memory given back only to be faulted
 * in again: the heap's delay rises at once to twice the time those slots were free (the time
 * since their purge plus the delay that purged them), at least one step. CALM_DELAYS delays
 * after the last change with no such span, the heap's next purge pass lowers it one step.
 * Forced purges (thread exit, sefer_collect(true)) leave slot_since 0 and count for nothing.
 * Owner only.
 */
#define PURGE_BACKOFF_MAX 4
#define CALM_DELAYS 8

/* A base delay this long is "never" (mallopt's M_TRIM_THRESHOLD < 0): no backoff applies. */
static inline bool delay_is_never(uint64_t base)
{
	return base > ((uint64_t)1 << 48);
}

/* The purge delay of heap's segments; SEFER_PURGE_DELAY_MS with heap NULL (no owner). */
uint64_t sefer__heap_purge_delay(const struct heap *heap)
{
	uint64_t base = __atomic_load_n(&sefer__opt.purge_delay_ms, __ATOMIC_RELAXED);

	if (!heap || delay_is_never(base))
		return base;
	return base << heap->purge_backoff;
}

/* A span of heap takes the purged slots `purged` of seg: were they purged too soon? */
void sefer__purge_backoff_check(struct heap *heap, struct segment *seg, uint64_t purged)
{
	uint64_t base = sefer__heap_purge_delay(NULL), delay = sefer__heap_purge_delay(heap), now,
		 since = 0;
	unsigned k = heap->purge_backoff;

	if (!IS_ENABLED(CONFIG_DECOMMIT) || !base || delay_is_never(base) || k >= PURGE_BACKOFF_MAX)
		return;
	for (uint64_t m = purged; m; m &= m - 1) {
		uint64_t t = seg->pages[__builtin_ctzll(m)].slot_since;

		if (t > since)
			since = t;
	}
	if (!since)
		return;
	now = sefer__os.clock_ms();
	if (now >= since + (base << PURGE_BACKOFF_MAX))
		return; /* it stayed unused for longer than any delay would have kept it */
	uint64_t idle = (now > since ? now - since : 0) + delay; /* how long it was free */

	do
		k++;
	while (k < PURGE_BACKOFF_MAX && base << k < 2 * idle);
	heap->purge_backoff = k;
	heap->backoff_since = now;
	stat_add(&sefer__gstats.purge_backoffs, NULL, 1);
}

/*
 * ---- resuming ----
 * There is no background thread: a heap's pass runs when its slow path takes a new span. A
 * pass that comes half a delay or more after the heap's deadline finds a heap that took no
 * span for that long and takes one now: it resumes after a pause. What it freed before the
 * pause stayed resident through it, and giving it back now, as the new phase starts, would
 * make the phase fault it in again (a server's next burst of requests). Such a pass leaves
 * the heap's slots for one more delay, and the next one purges what is still due, unless the
 * heap took dirty slots since (the deferral was right: the new phase reused the memory).
 * Only the pass after a span (page_find) asks; sefer_collect() purges what aged out. Returns
 * whether this pass is deferred.
 */
bool sefer__heap_purge_deferred(struct heap *heap, uint64_t now)
{
	uint64_t delay = sefer__heap_purge_delay(heap);

	if (now < heap->next_purge + delay / 2 ||
	    (heap->purge_deferred && heap->warm_spans == heap->warm_at_deferral)) {
		heap->purge_deferred = false;
		return false;
	}
	heap->purge_deferred = true;
	heap->warm_at_deferral = heap->warm_spans;
	heap->next_purge = now + delay;
	return true;
}

/* A purge pass of heap at `now`: lower its delay a step after a calm spell. */
void sefer__heap_purge_calm(struct heap *heap, uint64_t now)
{
	uint64_t calm = CALM_DELAYS * sefer__heap_purge_delay(heap);

	if (heap->purge_backoff && now >= heap->backoff_since + calm) {
		heap->purge_backoff--;
		heap->backoff_since = now;
	}
}
