/* SPDX-License-Identifier: MIT */
/*
 * struct sefer_policy_ops: hooks where the core would otherwise decide alone.
 *
 * The core names no policy. A policy is a folder <name> in the policy tree with a Kconfig
 * (sourced by the policy menu's Kconfig), a Kbuild that names it when enabled
 * (policy-$(CONFIG_POLICY_X) += <name>) and a header <name>.h defining
 * `static const struct sefer_policy_ops policy_<name>` plus its state. At configure time the
 * Makefile writes include/generated/policies.h: the enabled policies in chain order (the order
 * of their source lines in the policy menu), their headers and which of them keep per-heap
 * state. The wrappers below expand that list for each slot, and each expansion reads a slot of
 * a constant instance the compiler can see, so a filled slot is a direct (usually inlined) call
 * and an empty one compiles to nothing: no indirect call, no #ifdef in the core's callers.
 * writing-a-policy.rst (the policy documentation) walks through adding one.
 *
 * Two policies filling the same slot form a chain in policy order; for each slot:
 *   init, heap_exit, heap_park, collect, print_stats, segment_placed, held: every policy's
 *                       hook runs, in order.
 *   small_alloc, large_alloc, large_regrow, segment_node: the first answer wins (non-NULL, a
 *                       node other than SEFER_NO_NODE); the later policies are not asked.
 *   small_free, large_free: the first policy that keeps the block or segment wins; the later
 *                       ones are not offered it.
 * A hot slot filled by two policies puts both bodies inline on the fast path.
 *
 * Slot contract (NULL = no opinion, the core does its default):
 *   init()              process init, after options are read; no lock held; may not allocate
 *                       through malloc. Returns false to disable the policy (with a message).
 *   heap_exit(h)        the heap is being torn down (thread exit): release everything cached.
 *                       Owner thread, no lock held. Runs again on a heap torn down twice (a
 *                       parked heap's kept state released, then the heap dismantled): a no-op
 *                       then.
 *   heap_park(h)        the heap is parked whole for the next thread to take over (core/heap.c,
 *                       "parked heaps"): keep what that thread can use, release the rest, and
 *                       leave the state ready for a new owner (the core does not reset it).
 *                       Returns whether it kept anything: the core then runs heap_exit on the
 *                       parked heap once the purge delay of memory no thread owns has passed
 *                       (core/purge.c), or when it dismantles it, whichever comes first, unless
 *                       a thread took the heap over before. The exiting (or switching) owner
 *                       thread, no lock held. Without it the core runs heap_exit and zeroes
 *                       the policy's state.
 *   collect(h, force)   sefer_collect() / malloc_trim(): give cached memory back to the OS,
 *                       all of it with force, else what has aged out. Without force also the
 *                       owner's heartbeat (every 64th slow path that takes no span, core/heap.h)
 *                       while the policy keeps memory that ages: it calls heap_keep_aging(h)
 *                       when it starts keeping some and at each collect that leaves some,
 *                       and another thread that hands h's policy some calls it after it
 *                       did.
 *                       Owner thread (or the holder of a parked heap), no lock held; the heap
 *                       stays in use.
 *   small_alloc(h, sz)  HOT, owner thread, no lock: a block of bin_block_size(bin(sz))
 *                       bytes or NULL to fall through to the bins. Must not fail otherwise.
 *   small_free(h, pg, p) HOT, owner thread, p is a block of pg owned by h that was just
 *                       checked and given its free mark: true if the policy kept it (it stays
 *                       counted in pg->used; small_alloc must block_clear_mark() a block it
 *                       hands out again).
 *   segment_node(h)     slow path: NUMA node for a new segment or SEFER_NO_NODE; also the node
 *                       whose segments span_alloc() tries first when refilling.
 *   segment_placed(addr, size, node) slow path: right after reserve, before the memory is
 *                       first touched (bind it to node).
 *   large_alloc(h, size, align, &dirty) slow path: a cached large segment fitting the request
 *                       or NULL. *dirty (SIZE_MAX on entry) is how many bytes from the block's
 *                       start may not read as zero: a policy lowers it where it knows more
 *                       (calloc clears only those).
 *   large_free(h, s)    slow path, any thread: true if the policy kept the segment.
 *   large_regrow(h, size) slow path, owner thread: realloc is growing one of its large blocks
 *                       past its room to size; a kept segment with its block placed for size at
 *                       the default alignment and room to grow further (more than large_alloc's
 *                       fit would give), or NULL. The core copies the block into it.
 *   print_stats()       at exit with SEFER_SHOW_STATS; writes through the error stream.
 *   held(h, counts)     a stats query (core/inuse.c), any thread, pool_lock held (h stays
 *                       mapped): add to counts[bin] (NBINS entries) the blocks of h the policy
 *                       keeps (small_free), which their pages still count as used. Races with
 *                       the owner: a snapshot, read once per field, no lock taken.
 * And one field that is not a hook:
 *   options             the policy's SEFER_* options, defined in its own files: process init
 *                       reads them with the core's, before init() (core/options.h).
 * HOT slots are inlined into malloc and free: no lock, no atomic read-modify-write, no call
 * that is not itself inlined (selftest/fastpath checks the disassembly). Their bodies need
 * struct heap, so they live in a separate header (Kbuild's <name>-hot) that core/heap.h
 * includes through core/policy_hot.h.
 */
#ifndef SEFER_CORE_POLICY_H
#define SEFER_CORE_POLICY_H

#include "core/config.h"
#include "sefer/os.h" /* SEFER_NO_NODE */

struct heap;
struct page;
struct segment;
struct sefer_option;

struct sefer_policy_ops {
	const char *name;
	bool (*init)(void);
	void (*heap_exit)(struct heap *h);
	bool (*heap_park)(struct heap *h);
	void (*collect)(struct heap *h, bool force);
	void *(*small_alloc)(struct heap *h, size_t size);
	bool (*small_free)(struct heap *h, struct page *pg, void *p);
	int (*segment_node)(struct heap *h);
	void (*segment_placed)(void *addr, size_t size, int node);
	struct segment *(*large_alloc)(struct heap *h, size_t size, size_t align, size_t *dirty);
	bool (*large_free)(struct heap *h, struct segment *s);
	struct segment *(*large_regrow)(struct heap *h, size_t size);
	void (*print_stats)(void);
	void (*held)(struct heap *h, uint64_t *counts);
	/* Its run-time options (core/options.h): a table ending with a NULL name, or NULL. */
	struct sefer_option *options;
};

#include "generated/policies.h"

/* Per-heap state of the enabled policies that keep some (Kbuild: <name>-state := heap). */
#define POLICY_HEAP_MEMBER(n) struct n##_heap n;
struct policy_heap {
	SEFER_POLICY_HEAP_STATE(POLICY_HEAP_MEMBER)
};

/*
 * Per-heap policy state that other threads reach (atomics only), possibly through a stale
 * pointer to a heap that has since exited and been reused: it is never reset with the heap;
 * each policy keeps it valid across reuse (Kbuild: <name>-state := remote).
 */
#define POLICY_REMOTE_MEMBER(n) struct n##_remote n;
struct policy_heap_remote {
	SEFER_POLICY_REMOTE_STATE(POLICY_REMOTE_MEMBER)
};

/*
 * The chains. Each step tests a slot of a constant instance (folded at compile time) and
 * calls it directly; the step variables live in their own block, so a list of any length,
 * none included, expands cleanly.
 */
#define POLICY_SMALL_ALLOC_STEP(n)                                                                 \
	if (policy_##n.small_alloc) {                                                              \
		void *p_##n = policy_##n.small_alloc(h, size);                                     \
		if (p_##n)                                                                         \
			return p_##n;                                                              \
	}
#define POLICY_SMALL_FREE_STEP(n)                                                                  \
	if (policy_##n.small_free && policy_##n.small_free(h, pg, p))                              \
		return true;
#define POLICY_SEGMENT_NODE_STEP(n)                                                                \
	if (policy_##n.segment_node) {                                                             \
		int node_##n = policy_##n.segment_node(h);                                         \
		if (node_##n != SEFER_NO_NODE)                                                     \
			return node_##n;                                                           \
	}
#define POLICY_SEGMENT_PLACED_STEP(n)                                                              \
	if (policy_##n.segment_placed)                                                             \
		policy_##n.segment_placed(addr, size, node);
#define POLICY_LARGE_ALLOC_STEP(n)                                                                 \
	if (policy_##n.large_alloc) {                                                              \
		struct segment *s_##n = policy_##n.large_alloc(h, size, align, dirty);             \
		if (s_##n)                                                                         \
			return s_##n;                                                              \
	}
#define POLICY_LARGE_FREE_STEP(n)                                                                  \
	if (policy_##n.large_free && policy_##n.large_free(h, s))                                  \
		return true;
#define POLICY_LARGE_REGROW_STEP(n)                                                                \
	if (policy_##n.large_regrow) {                                                             \
		struct segment *r_##n = policy_##n.large_regrow(h, size);                          \
		if (r_##n)                                                                         \
			return r_##n;                                                              \
	}
#define POLICY_KEEPS_SMALL(n) || policy_##n.small_free

static always_inline void *policy_small_alloc(struct heap *h, size_t size)
{
	SEFER_POLICIES(POLICY_SMALL_ALLOC_STEP)
	return NULL;
}

static always_inline bool policy_small_free(struct heap *h, struct page *pg, void *p)
{
	SEFER_POLICIES(POLICY_SMALL_FREE_STEP)
	return false;
}

static inline int policy_segment_node(struct heap *h)
{
	SEFER_POLICIES(POLICY_SEGMENT_NODE_STEP)
	return SEFER_NO_NODE;
}

static inline void policy_segment_placed(void *addr, size_t size, int node)
{
	SEFER_POLICIES(POLICY_SEGMENT_PLACED_STEP)
}

static inline struct segment *policy_large_alloc(struct heap *h, size_t size, size_t align,
						 size_t *dirty)
{
	SEFER_POLICIES(POLICY_LARGE_ALLOC_STEP)
	return NULL;
}

static inline bool policy_large_free(struct heap *h, struct segment *s)
{
	SEFER_POLICIES(POLICY_LARGE_FREE_STEP)
	return false;
}

static inline struct segment *policy_large_regrow(struct heap *h, size_t size)
{
	SEFER_POLICIES(POLICY_LARGE_REGROW_STEP)
	return NULL;
}

/*
 * Whether an enabled policy may keep freed small blocks (small_free): such blocks stay
 * counted in their page's used count but are on no free list and not live (core/check.c).
 */
static inline bool policy_keeps_small_blocks(void)
{
	return false SEFER_POLICIES(POLICY_KEEPS_SMALL);
}

/* core/policy.c: run a slow-path hook of every policy. */
SEFER_INTERNAL void sefer__policy_init_all(void);
SEFER_INTERNAL void sefer__policy_heap_exit_all(struct heap *h);
SEFER_INTERNAL bool sefer__policy_heap_park_all(struct heap *h);
SEFER_INTERNAL void sefer__policy_collect_all(struct heap *h, bool force);
SEFER_INTERNAL void sefer__policy_print_stats_all(void);
SEFER_INTERNAL void sefer__policy_held_all(struct heap *h, uint64_t *counts);

#endif
