// SPDX-License-Identifier: MIT
/*
 * Slow-path hooks run over every enabled policy, in chain order (core/policy.h): each step is
 * a direct call to a constant instance's slot, an empty slot compiles to nothing.
 */
#include <string.h>

#include "core/policy.h"
#include "core/heap.h"

#define INIT_STEP(n)                                                                               \
	if (policy_##n.init)                                                                       \
		policy_##n.init();
#define HEAP_EXIT_STEP(n)                                                                          \
	if (policy_##n.heap_exit)                                                                  \
		policy_##n.heap_exit(h);
#define HEAP_PARK_STEP(n)                                                                          \
	if (policy_##n.heap_park)                                                                  \
		kept |= policy_##n.heap_park(h);                                                   \
	else if (policy_##n.heap_exit)                                                             \
		policy_##n.heap_exit(h);
#define HEAP_PARK_RESET_STEP(n)                                                                    \
	if (!policy_##n.heap_park)                                                                 \
		memset(&h->policy.n, 0, sizeof(h->policy.n));
#define COLLECT_STEP(n)                                                                            \
	if (policy_##n.collect)                                                                    \
		policy_##n.collect(h, force);
#define HELD_STEP(n)                                                                               \
	if (policy_##n.held)                                                                       \
		policy_##n.held(h, counts);
#define PRINT_STATS_STEP(n)                                                                        \
	if (policy_##n.print_stats)                                                                \
		policy_##n.print_stats();

void sefer__policy_init_all(void)
{
	SEFER_POLICIES(INIT_STEP)
}

void sefer__policy_heap_exit_all(struct heap *h)
{
	SEFER_POLICIES(HEAP_EXIT_STEP)
}

/* Each policy keeps what it can for the heap's next owner, or releases all (heap_park). */
bool sefer__policy_heap_park_all(struct heap *h)
{
	bool kept = false;

	SEFER_POLICIES(HEAP_PARK_STEP)
	SEFER_POLICY_HEAP_STATE(HEAP_PARK_RESET_STEP)
	return kept;
}

void sefer__policy_collect_all(struct heap *h, bool force)
{
	SEFER_POLICIES(COLLECT_STEP)
}

void sefer__policy_print_stats_all(void)
{
	SEFER_POLICIES(PRINT_STATS_STEP)
}

void sefer__policy_held_all(struct heap *h, uint64_t *counts)
{
	SEFER_POLICIES(HELD_STEP)
}
