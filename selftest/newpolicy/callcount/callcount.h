/* SPDX-License-Identifier: MIT */
/*
 * The callcount test policy: counts the calls of the large_alloc hook. Its state shows both
 * kinds a policy can keep: a process-wide counter (any thread) and a per-heap one (the
 * owner's, heap->policy.callcount).
 */
#ifndef SEFER_POLICY_CALLCOUNT_H
#define SEFER_POLICY_CALLCOUNT_H

#include <stdatomic.h>

struct callcount_heap {
	uint64_t large_allocs; /* calls made by this heap's thread */
};

extern atomic_ulong callcount_large_allocs SEFER_INTERNAL; /* every thread's calls */
extern atomic_int callcount_inits SEFER_INTERNAL;

bool callcount_init(void) SEFER_INTERNAL;
struct segment *callcount_large_alloc(struct heap *h, size_t size, size_t align, size_t *dirty)
	SEFER_INTERNAL;
void callcount_print_stats(void) SEFER_INTERNAL;

/*
 * init, large_alloc and print_stats; large_alloc always answers NULL (no segment of its
 * own), so the chain goes on to the next policy or the core. Contracts: struct
 * sefer_policy_ops (core/policy.h).
 */
static const struct sefer_policy_ops policy_callcount = {
	.name = "callcount",
	.init = callcount_init,
	.large_alloc = callcount_large_alloc,
	.print_stats = callcount_print_stats,
};

#endif
