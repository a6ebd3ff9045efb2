/* SPDX-License-Identifier: MIT */
/*
 * Process-wide counters. Per-heap counters (mallocs, frees, ...) are plain owner-only
 * increments in struct heap; the ones here change on slow paths only and are atomics.
 */
#ifndef SEFER_CORE_STATS_H
#define SEFER_CORE_STATS_H

#include <stdatomic.h>

#include "core/config.h"

struct global_stats {
	atomic_llong segments, segments_peak, segments_mapped;
	atomic_llong committed, committed_peak;
	atomic_llong purged;
	atomic_llong purge_backoffs; /* heaps' purge delay raised: purged memory needed again */
	atomic_llong abandoned, reclaimed;
	atomic_llong lock_yields; /* spinlock waiters that gave their CPU away (core/lock.h) */
	atomic_llong threads;
	atomic_llong heaps; /* first-class heaps alive */
};

SEFER_INTERNAL_EXTERN struct global_stats sefer__gstats;

static inline void stat_max(atomic_llong *peak, long long v)
{
	long long old = atomic_load_explicit(peak, memory_order_relaxed);

	while (v > old && !atomic_compare_exchange_weak_explicit(
				  peak, &old, v, memory_order_relaxed, memory_order_relaxed))
		;
}

static inline void stat_add(atomic_llong *c, atomic_llong *peak, long long delta)
{
	if (!IS_ENABLED(CONFIG_STATS))
		return;
	long long v = atomic_fetch_add_explicit(c, delta, memory_order_relaxed) + delta;

	if (peak)
		stat_max(peak, v);
}

SEFER_INTERNAL void sefer__stats_at_exit(void);

#endif
