/* SPDX-License-Identifier: MIT */
/*
 * The numa policy: new segments bound to the calling thread's node; refill prefers segments
 * of that node. See policies/numa/numa.c and Documentation/policies/numa.rst.
 */
#ifndef SEFER_POLICY_NUMA_H
#define SEFER_POLICY_NUMA_H

#if IS_ENABLED(CONFIG_POLICY_NUMA)

bool numa_policy_init(void) SEFER_INTERNAL;
int numa_segment_node(struct heap *h) SEFER_INTERNAL;
void numa_segment_placed(void *addr, size_t size, int node) SEFER_INTERNAL;
void numa_print_stats(void) SEFER_INTERNAL;

static const struct sefer_policy_ops policy_numa = {
	.name = "numa",
	.init = numa_policy_init,
	.segment_node = numa_segment_node,
	.segment_placed = numa_segment_placed,
	.print_stats = numa_print_stats,
};

#else

static const struct sefer_policy_ops policy_numa = {
	.name = "numa",
};

#endif

#endif
