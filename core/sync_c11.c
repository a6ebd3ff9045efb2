// SPDX-License-Identifier: MIT
/*
 * Registry on C11 atomics, for platforms without liburcu.
 *
 * Readers announce themselves in a global count; a writer unlinks under reg_lock and
 * sync_synchronize() spins until the count drains to zero. Readers are rare (stats, checks),
 * so a shared count is cheaper than per-thread state and needs no registration.
 *
 * Memory orders (weak-memory review, Documentation/backends/aarch64.rst): the grace period is
 * a store-buffering pattern. The writer stores the unlink, then reads the count; a reader
 * increments the count, then reads the links. At least one side must see the other's write:
 * either the writer sees the reader's increment (and waits), or the reader sees the unlink
 * (and never reaches the node). C11 guarantees that only with a seq_cst fence on both sides
 * (fence-fence rule); a seq_cst increment followed by acquire loads is not enough, since an
 * acquire load may be satisfied before an earlier store becomes visible (ARMv8.3 LDAPR after
 * the store half of the increment). Readers are rare (stats, checks), so the reader's fence
 * costs nothing that matters. Links are published with release and followed with acquire so
 * that a reader that sees a node also sees its initialised contents.
 */
#include <stdatomic.h>

#include "core/lock.h"
#include "core/sync.h"

static struct sync_node registry = { .next = (struct sync_node __force __sefer_rcu *)&registry,
				     .prev = &registry };
static struct spinlock reg_lock = SPINLOCK_INIT(LOCK_RANK_REGISTRY);
static atomic_long readers;

/* The accessors of a published link (the __sefer_rcu space, core/sync.h), each with its order. */
static inline struct sync_node *link_load(struct sync_node *n, memory_order mo)
{
	return (struct sync_node __force *)atomic_load_explicit(&n->next, mo);
}

static inline void link_store(struct sync_node *n, struct sync_node *next, memory_order mo)
{
	atomic_store_explicit(&n->next, (struct sync_node __force __sefer_rcu *)next, mo);
}

void sefer__sync_registry_add(struct sync_node *n)
{
	spin_lock(&reg_lock);
	struct sync_node *first = link_load(&registry, memory_order_relaxed);

	link_store(n, first, memory_order_relaxed);
	n->prev = &registry;
	first->prev = n;
	/* release: a reader that loads n from registry.next sees n->next initialised. */
	link_store(&registry, n, memory_order_release);
	spin_unlock(&reg_lock);
}

void sefer__sync_registry_del(struct sync_node *n)
{
	spin_lock(&reg_lock);
	struct sync_node *next = link_load(n, memory_order_relaxed);

	/* release: readers that follow prev->next reach next with its contents visible. */
	link_store(n->prev, next, memory_order_release);
	next->prev = n->prev;
	spin_unlock(&reg_lock);
}

void sefer__sync_registry_walk(void (*fn)(struct sync_node *n, void *arg), void *arg)
{
	atomic_fetch_add_explicit(&readers, 1, memory_order_seq_cst);
	/* seq_cst fence: pairs with the fence in sync_synchronize() (store-buffering, above). */
	atomic_thread_fence(memory_order_seq_cst);
	for (struct sync_node *n = link_load(&registry, memory_order_acquire); n != &registry;
	     n = link_load(n, memory_order_acquire))
		fn(n, arg);
	/* release: the reader's loads of node contents happen before the writer frees them (the
	 * writer's acquire load of 0 reads the end of a release sequence of RMWs, so it
	 * synchronizes with every reader's decrement). */
	atomic_fetch_sub_explicit(&readers, 1, memory_order_release);
}

void sefer__sync_synchronize(void)
{
	/* seq_cst fence: the unlink is ordered before the count is read (pairs with the reader's
	 * fence after its increment), and acquire on the loads pairs with the readers' release. */
	atomic_thread_fence(memory_order_seq_cst);
	while (atomic_load_explicit(&readers, memory_order_acquire))
		cpu_relax();
}

void sefer__sync_fork_prepare(void) __acquires(reg_lock)
{
	spin_lock(&reg_lock);
}

void sefer__sync_fork_parent(void) __releases(reg_lock)
{
	spin_unlock(&reg_lock);
}

void sefer__sync_fork_child(void) __releases(reg_lock)
{
	spin_reset(&reg_lock);
	atomic_store_explicit(&readers, 0, memory_order_relaxed);
}
