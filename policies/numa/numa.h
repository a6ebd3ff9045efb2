/* SPDX-License-Identifier: MIT */
/*
 * The numa policy: new segments bound to the calling thread's node; refill prefers segments
 * of that node. See policies/numa/numa.c and Documentation/policies/numa.rst.
 */
#ifndef SEFER_POLICY_NUMA_H
#define SEFER_POLICY_NUMA_H

SEFER_INTERNAL __must_check bool sefer__numa_policy_init(void);
SEFER_INTERNAL int sefer__numa_segment_node(struct heap *h);
SEFER_INTERNAL void sefer__numa_segment_placed(void *addr, size_t size, int node);
SEFER_INTERNAL void sefer__numa_print_stats(void);

/*
 * Included (through include/generated/policies.h) only when CONFIG_POLICY_NUMA=y. Slow-path
 * slots only; the contract of each is at struct sefer_policy_ops (core/policy.h).
 */
static const struct sefer_policy_ops policy_numa = {
	.name = "numa",
	.init = sefer__numa_policy_init,
	.segment_node = sefer__numa_segment_node,
	.segment_placed = sefer__numa_segment_placed,
	.print_stats = sefer__numa_print_stats,
};

#endif
