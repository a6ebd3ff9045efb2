// SPDX-License-Identifier: MIT
/* Statistics: per-heap counters summed over every heap, process-wide atomics, the summary. */
#include "core/error.h"
#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer.h"

SEFER_INTERNAL struct global_stats sefer__gstats;

static void sum_heap(struct heap *h, void *arg)
{
	struct sefer_stats *st = arg;

	st->mallocs += h->stats.mallocs;
	st->frees += h->stats.frees;
	st->xthread_frees += h->stats.xthread_frees;
	st->large_allocs += h->stats.large_allocs;
}

SEFER_API void sefer_stats_get(struct sefer_stats *st)
{
	__builtin_memset(st, 0, sizeof(*st));
	sefer__heap_visit_all(sum_heap, st);
#define G(f) ((uint64_t)atomic_load_explicit(&sefer__gstats.f, memory_order_relaxed))
	st->segments = G(segments);
	st->segments_peak = G(segments_peak);
	st->segments_mapped = G(segments_mapped);
	st->committed = G(committed);
	st->committed_peak = G(committed_peak);
	st->purged = G(purged);
	st->abandoned = G(abandoned);
	st->reclaimed = G(reclaimed);
	st->threads = G(threads);
	st->heaps = G(heaps);
#undef G
}

SEFER_API void sefer_stats_print(void)
{
	struct sefer_stats st;

	sefer_stats_get(&st);
	if (IS_ENABLED(CONFIG_STATS_CALLS))
		sefer__message(
			"stats: mallocs %llu, frees %llu, cross-thread frees %llu, large %llu",
			(unsigned long long)st.mallocs, (unsigned long long)st.frees,
			(unsigned long long)st.xthread_frees, (unsigned long long)st.large_allocs);
	else
		sefer__message("stats: mallocs and frees not counted (CONFIG_STATS_CALLS=n), "
			      "cross-thread frees %llu, large %llu",
			      (unsigned long long)st.xthread_frees,
			      (unsigned long long)st.large_allocs);
	sefer__message("stats: segments %llu (peak %llu, mapped %llu), committed %llu KiB (peak "
		      "%llu KiB), purged %llu KiB (purge delay raised %llu times)",
		      (unsigned long long)st.segments, (unsigned long long)st.segments_peak,
		      (unsigned long long)st.segments_mapped,
		      (unsigned long long)st.committed >> 10,
		      (unsigned long long)st.committed_peak >> 10,
		      (unsigned long long)st.purged >> 10,
		      (unsigned long long)atomic_load_explicit(&sefer__gstats.purge_backoffs,
							       memory_order_relaxed));
	sefer__message("stats: heaps %llu (first-class alive %llu), abandoned segments %llu, "
		      "reclaimed %llu, lock waits yielded %llu",
		      (unsigned long long)st.threads, (unsigned long long)st.heaps,
		      (unsigned long long)st.abandoned, (unsigned long long)st.reclaimed,
		      (unsigned long long)atomic_load_explicit(&sefer__gstats.lock_yields,
							       memory_order_relaxed));
	sefer__policy_print_stats_all();
}

void sefer__stats_at_exit(void)
{
	if (sefer__opt.show_stats)
		sefer_stats_print();
}

__attribute__((destructor)) static void sefer_destructor(void)
{
	sefer__stats_at_exit();
}
