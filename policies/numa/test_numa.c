// SPDX-License-Identifier: MIT
/*
 * The numa policy, on any machine (one node is enough): a fresh segment carries the requested
 * memory policy and node (get_mempolicy MPOL_F_ADDR), the node stamped in its header is
 * numa_node_of_cpu(sched_getcpu()), refill prefers same-node segments, and cross-thread frees
 * between threads stay correct. With the policy off: segments carry no node.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/heap.h"
#include "core/segment.h"
#include "core/span.h"
#include "selftest/unit/unit.h"

#if IS_ENABLED(CONFIG_POLICY_NUMA)
#include <numa.h>
#include <numaif.h>

#define WANT_MODE (IS_ENABLED(CONFIG_NUMA_BIND) ? MPOL_BIND : MPOL_PREFERRED)

/* Pin the caller to the CPU it runs on now, so its node cannot change under the test. */
static int pin_here(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	return cpu;
}

static void check_placed(struct segment *seg, int node)
{
	unsigned long mask[16] = { 0 };
	int mode = -1;

	ck_assert_int_eq(seg->node, node);
	ck_assert_int_eq(get_mempolicy(&mode, mask, sizeof(mask) * 8, seg, MPOL_F_ADDR), 0);
	ck_assert_int_eq(mode, WANT_MODE);
	ck_assert_msg(mask[node / 64] >> (node % 64) & 1, "node %d not in the policy's mask", node);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(__builtin_popcountl(mask[i]), i == node / 64);
}

START_TEST(numa_fresh_large_segment)
{
	int node = numa_node_of_cpu(pin_here());
	void *p = sefer_malloc((size_t)12 << 20);

	ck_assert_int_ge(node, 0);
	check_placed(segment_of(p), node);
	sefer_free(p);
}
END_TEST

static void *fresh_small(void *arg)
{
	int node = numa_node_of_cpu(pin_here());
	void *p = sefer_malloc(48); /* a new thread's first block: a freshly mapped segment */

	check_placed(segment_of(p), node);
	*(int *)arg = segment_of(p)->node;
	sefer_free(p);
	return NULL;
}

START_TEST(numa_fresh_small_segment)
{
	pthread_t t;
	int node = -2;

	pthread_create(&t, NULL, fresh_small, &node);
	pthread_join(t, NULL);
	ck_assert_int_ge(node, 0);
}
END_TEST

/* Two segments with space: refill takes the same-node one even when it is not first. */
START_TEST(numa_refill_prefers_node)
{
	int node = numa_node_of_cpu(pin_here());
	struct heap *h;
	struct segment *a, *b;
	struct page *pg;

	sefer_free(sefer_malloc(16));
	h = heap_get();
	b = h->segments.with_space;
	ck_assert_ptr_nonnull(b);
	a = sefer__segment_alloc_small(&h->segments, NULL, policy_segment_node(h)); /* before b */
	ck_assert_ptr_eq(h->segments.with_space, a);
	a->node = node + 1; /* pretend a lives on another node */
	pg = sefer__span_alloc(&h->segments, 1, policy_segment_node(h));
	ck_assert_ptr_eq(segment_of(pg), b);
	sefer__span_free(&h->segments, pg);
	b->node = node + 1; /* nothing on this node: any segment will do */
	pg = sefer__span_alloc(&h->segments, 1, policy_segment_node(h));
	ck_assert_ptr_nonnull(pg);
	sefer__span_free(&h->segments, pg);
	a->node = b->node = node;
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

#define XT_THREADS 4
#define XT_BLOCKS 20000

static _Atomic(void *) mailbox[XT_THREADS][XT_BLOCKS];
static pthread_barrier_t xt_barrier;

static void *xt_worker(void *arg)
{
	int me = (int)(intptr_t)arg, peer = (me + 1) % XT_THREADS;
	cpu_set_t set;

	/* spread the threads over every CPU (and so every node) there is */
	CPU_ZERO(&set);
	CPU_SET(me % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (int i = 0; i < XT_BLOCKS; i++) {
		size_t n = 16 + (size_t)(i % 64) * 24;
		unsigned char *p = sefer_malloc(n);

		p[0] = (unsigned char)me;
		p[n - 1] = (unsigned char)i;
		atomic_store(&mailbox[me][i], p);
	}
	pthread_barrier_wait(&xt_barrier);
	for (int i = 0; i < XT_BLOCKS; i++) {
		unsigned char *p = atomic_load(&mailbox[peer][i]);

		ck_assert_uint_eq(p[0], peer);
		ck_assert_int_eq(segment_of(p)->kind, SEG_SMALL);
		ck_assert_int_ge(segment_of(p)->node, 0);
		sefer_free(p);
	}
	pthread_barrier_wait(&xt_barrier);
	ck_assert_uint_eq(sefer_check_heap(), 0);
	return NULL;
}

START_TEST(numa_cross_thread_free)
{
	pthread_t t[XT_THREADS];

	pthread_barrier_init(&xt_barrier, NULL, XT_THREADS);
	for (int i = 0; i < XT_THREADS; i++)
		pthread_create(&t[i], NULL, xt_worker, (void *)(intptr_t)i);
	for (int i = 0; i < XT_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&xt_barrier);
	ck_assert_uint_eq(sefer_check_heap(), 0);
}
END_TEST

Suite *numa_suite(void)
{
	Suite *s = suite_create("numa");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, numa_fresh_large_segment);
	tcase_add_test(tc, numa_fresh_small_segment);
	tcase_add_test(tc, numa_refill_prefers_node);
	tcase_add_test(tc, numa_cross_thread_free);
	suite_add_tcase(s, tc);
	return s;
}

#else /* !CONFIG_POLICY_NUMA */

START_TEST(numa_off_no_node)
{
	void *p = sefer_malloc((size_t)12 << 20);

	ck_assert_int_eq(segment_of(p)->node, -1);
	sefer_free(p);
}
END_TEST

Suite *numa_suite(void)
{
	Suite *s = suite_create("numa");
	TCase *tc = tcase_create("off");

	tcase_add_test(tc, numa_off_no_node);
	suite_add_tcase(s, tc);
	return s;
}

#endif
