// SPDX-License-Identifier: MIT
/*
 * numa: steer new segments to the calling thread's NUMA node.
 *
 * Invariants:
 *  - segment_node() is the node of the CPU the caller runs on now (getcpu: the kernel's own
 *    cpu -> node map, the one numa_node_of_cpu() reads), or SEFER_NO_NODE when the backend
 *    cannot tell or the policy is off;
 *  - segment_placed() binds the fresh reservation with mbind (MPOL_PREFERRED, or MPOL_BIND
 *    with CONFIG_NUMA_BIND) before anything touches it, so first-touch faults place every page
 *    on that node; the core stamps the node into seg->node;
 *  - only new reservations are steered: a thread that migrates keeps using the segments it
 *    has, and nothing is ever migrated.
 *
 * Reentrancy: nothing here calls libnuma or anything else that may allocate. libnuma's own
 * initialisation allocates through malloc (sefer may be malloc), so the policy goes to the
 * kernel: getcpu (vDSO) and the backend's bind_node (the raw mbind system call), which are
 * safe from inside any slow path. libnuma is linked for the tests and tools only (numa_node_of_cpu,
 * get_mempolicy), never called by the allocator.
 */
#define _GNU_SOURCE /* getcpu */
#include <sched.h>
#include <stdatomic.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
#include "sefer/os.h"

static bool numa_on;
static atomic_ullong bound, bind_failed;

/*
 * The caller's node. On Linux through glibc's getcpu(), which reads the vDSO (about 20 ns
 * here, against 1.3 us for the getcpu system call the backend makes): this runs on every span
 * refill, not just per new segment. Neither allocates.
 */
static int current_node(void)
{
#if IS_ENABLED(CONFIG_BACKEND_LINUX)
	unsigned cpu, node;

	return getcpu(&cpu, &node) ? SEFER_NO_NODE : (int)node;
#else
	return sefer__os.current_node();
#endif
}

int sefer__numa_segment_node(struct heap *h)
{
	(void)h;
	return numa_on ? current_node() : SEFER_NO_NODE;
}

bool sefer__numa_policy_init(void)
{
	numa_on = os_has(SEFER_OS_NUMA) && current_node() != SEFER_NO_NODE;
	if (!numa_on && sefer__opt.verbose)
		sefer__message("numa: the backend reports no node for this CPU; policy off");
	return numa_on;
}

void sefer__numa_segment_placed(void *addr, size_t size, int node)
{
	int err;

	if (node < 0)
		return;
	err = sefer__os.bind_node(addr, size, node, IS_ENABLED(CONFIG_NUMA_BIND));
	if (!err) {
		atomic_fetch_add_explicit(&bound, 1, memory_order_relaxed);
		return;
	}
	/* The first failure is worth a word; the memory still works, just unplaced. */
	if (!atomic_fetch_add_explicit(&bind_failed, 1, memory_order_relaxed))
		sefer__message("numa: mbind of %p (%zu bytes) to node %d failed (errno %d)", addr,
			      size, node, -err);
}

void sefer__numa_print_stats(void)
{
	sefer__message("numa: %llu segments bound (%s), %llu bind failures, %d node(s)",
		      (unsigned long long)atomic_load(&bound),
		      IS_ENABLED(CONFIG_NUMA_BIND) ? "MPOL_BIND" : "MPOL_PREFERRED",
		      (unsigned long long)atomic_load(&bind_failed), sefer__os_info.node_count);
}
