/* SPDX-License-Identifier: MIT */
/*
 * struct sefer_policy_ops: hooks where the core would otherwise decide alone.
 *
 * Each policy (policies/<name>/) defines one `static const struct sefer_policy_ops` instance
 * in its header, visible to the core at compile time, plus the per-heap state it needs. The
 * core reaches a policy only through the static inline wrappers below: each tests a
 * build-time constant (IS_ENABLED) and calls the constant instance's slot, which the compiler
 * turns into a direct (usually inlined) call. A disabled policy's header provides an empty
 * instance and an empty state struct, so the wrapper compiles to nothing: no indirect call and
 * no #ifdef in the core's callers.
 *
 * Slot contract (NULL = no opinion, the core does its default):
 *   init()              process init, after options are read; no lock held; may not allocate
 *                       through malloc. Returns false to disable the policy (with a message).
 *   heap_exit(h)        the heap is being torn down (thread exit): release everything cached.
 *                       Owner thread, no lock held.
 *   collect(h, force)   sefer_collect() / malloc_trim(): give cached memory back to the OS,
 *                       all of it with force, else what has aged out. Owner thread, no lock
 *                       held; the heap stays in use.
 *   small_alloc(h, sz)  hot path, owner thread, no lock: a block of bin_block_size(bin(sz))
 *                       bytes or NULL to fall through to the bins. Must not fail otherwise.
 *   small_free(h, pg, p) hot path, owner thread, p is a block of pg owned by h whose live bit
 *                       was just cleared: true if the policy kept it (it stays counted in
 *                       pg->used; small_alloc must live_set() a block it hands out again).
 *   segment_node(h)     slow path: NUMA node for a new segment or SEFER_NO_NODE; also the node
 *                       whose segments span_alloc() tries first when refilling.
 *   segment_placed(addr, size, node) slow path: right after reserve, before the memory is
 *                       first touched (bind it to node).
 *   large_alloc(h, size, align, &zero) slow path: a cached large segment fitting the request or
 *                       NULL. *zero tells whether its block reads as zero.
 *   large_free(h, s)    slow path, any thread: true if the policy kept the segment.
 *   print_stats(out)    at exit with SEFER_SHOW_STATS; writes through the error stream.
 */
#ifndef SEFER_CORE_POLICY_H
#define SEFER_CORE_POLICY_H

#include "core/config.h"

struct heap;
struct page;
struct segment;

struct sefer_policy_ops {
	const char *name;
	bool (*init)(void);
	void (*heap_exit)(struct heap *h);
	void (*collect)(struct heap *h, bool force);
	void *(*small_alloc)(struct heap *h, size_t size);
	bool (*small_free)(struct heap *h, struct page *pg, void *p);
	int (*segment_node)(struct heap *h);
	void (*segment_placed)(void *addr, size_t size, int node);
	struct segment *(*large_alloc)(struct heap *h, size_t size, size_t align, bool *zero);
	bool (*large_free)(struct heap *h, struct segment *s);
	void (*print_stats)(void);
};

#include "policies/fastbin/fastbin.h"
#include "policies/large_cache/large_cache.h"
#include "policies/numa/numa.h"

/* Per-heap state of every policy (empty structs for disabled ones). */
struct policy_heap {
	struct fastbin_heap fastbin;
	struct large_cache_heap large_cache;
};

/*
 * Per-heap policy state that other threads reach (atomics only), possibly through a stale
 * pointer to a heap that has since exited and been reused: it is never reset with the heap;
 * each policy keeps it valid across reuse.
 */
struct policy_heap_remote {
	struct large_cache_remote large_cache;
};

/* Every built policy, for the slow-path hooks (init, exit, stats). */
#define POLICY_LIST (&policy_fastbin), (&policy_large_cache), (&policy_numa)

static always_inline void *policy_small_alloc(struct heap *h, size_t size)
{
	if (IS_ENABLED(CONFIG_POLICY_FASTBIN) && policy_fastbin.small_alloc)
		return policy_fastbin.small_alloc(h, size);
	return NULL;
}

static always_inline bool policy_small_free(struct heap *h, struct page *pg, void *p)
{
	if (IS_ENABLED(CONFIG_POLICY_FASTBIN) && policy_fastbin.small_free)
		return policy_fastbin.small_free(h, pg, p);
	return false;
}

static inline int policy_segment_node(struct heap *h)
{
	if (IS_ENABLED(CONFIG_POLICY_NUMA) && policy_numa.segment_node)
		return policy_numa.segment_node(h);
	return -1;
}

static inline void policy_segment_placed(void *addr, size_t size, int node)
{
	if (IS_ENABLED(CONFIG_POLICY_NUMA) && policy_numa.segment_placed)
		policy_numa.segment_placed(addr, size, node);
}

static inline struct segment *policy_large_alloc(struct heap *h, size_t size, size_t align,
						 bool *zero)
{
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) && policy_large_cache.large_alloc)
		return policy_large_cache.large_alloc(h, size, align, zero);
	return NULL;
}

static inline bool policy_large_free(struct heap *h, struct segment *s)
{
	if (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) && policy_large_cache.large_free)
		return policy_large_cache.large_free(h, s);
	return false;
}

/* core/policy.c: run a slow-path hook of every policy. */
void policy_init_all(void) SEFER_INTERNAL;
void policy_heap_exit_all(struct heap *h) SEFER_INTERNAL;
void policy_collect_all(struct heap *h, bool force) SEFER_INTERNAL;
void policy_print_stats_all(void) SEFER_INTERNAL;

#endif
