// SPDX-License-Identifier: MIT
/*
 * Statistics: per-heap counters summed over every heap, process-wide atomics, the bytes and
 * blocks in use (core/inuse.c). sefer_stats_get() fills the caller's struct up to the size the
 * caller was built with (include/sefer.h): the struct only grows at its end.
 */
#include "core/stats.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
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

static uint64_t stats_max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

void sefer__stats_collect(struct sefer_stats *st, struct class_use *classes)
{
	struct inuse u = {.classes = classes};

	__builtin_memset(st, 0, sizeof(*st));
	sefer__process_init();
	sefer__heap_visit_all(sum_heap, st);
	sefer__inuse_sample(&u);
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
	st->purge_raises = G(purge_backoffs);
	st->lock_yields = G(lock_yields);
	st->handoffs_kept = G(handoffs_kept);
	st->heaps_parked = G(parked);
	st->heaps_adopted = G(adopted);
	st->heaps_switched = G(switches);
	st->in_use_peak_bytes = stats_max_u64(G(inuse_peak_bytes), u.bytes);
	st->in_use_peak_blocks = stats_max_u64(G(inuse_peak_blocks), u.blocks);
#undef G
	st->in_use_bytes = u.bytes;
	st->in_use_blocks = u.blocks;
	st->large_blocks = u.large_blocks;
	st->large_bytes = u.large_bytes;
	st->small_bytes = u.small_bytes;
}

SEFER_API size_t sefer_stats_get(struct sefer_stats *st, size_t size)
{
	struct sefer_stats full;

	if (!st)
		return 0;
	sefer__stats_collect(&full, NULL);
	return stats_copy_out(st, size, &full, sizeof(full));
}

void sefer__stats_at_exit(void)
{
	if (sefer__opt.show_stats)
		sefer_stats_print(NULL, sefer__opt.show_stats == SHOW_STATS_JSON ? SEFER_STATS_JSON
					: sefer__opt.show_stats == SHOW_STATS_CLASSES
						? SEFER_STATS_CLASSES
						: 0);
}

__attribute__((destructor)) static void sefer_destructor(void)
{
	sefer__stats_at_exit();
}
