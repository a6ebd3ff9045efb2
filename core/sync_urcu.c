// SPDX-License-Identifier: MIT
/*
 * Registry on liburcu, bulletproof flavour: urcu-bp registers a reader thread on its first
 * read lock by itself (its registry lives in mmap'd arenas, not malloc), which suits a
 * library that does not own its threads. The list is liburcu's RCU list.
 *
 * Only slow paths come here (segment map/unmap, stats, heap checks), never malloc/free fast
 * paths. Writers serialise on reg_lock (innermost: enum lock_rank, core/lock.h).
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>
#include <urcu/rculist.h>

#include "core/lock.h"
#include "core/sync.h"

/*
 * ThreadSanitizer does not see liburcu's barriers (inline assembly), so a TSan build tells it
 * what RCU guarantees: a node's contents, written before it is published, happen before the
 * walker that reaches it (release and acquire on the node), and a walker's reads happen before
 * the synchronize that waits for it (release and acquire on `grace`). The list links
 * themselves are written while walkers read them, as RCU means them to be:
 * selftest/tsan-urcu.supp names those two liburcu functions. Other builds: nothing.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SEFER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(SEFER_TSAN)
#include <sanitizer/tsan_interface.h>
static char grace;
#define tsan_release(p) __tsan_release(p)
#define tsan_acquire(p) __tsan_acquire(p)
#else
#define tsan_release(p) ((void)0)
#define tsan_acquire(p) ((void)0)
#endif

static CDS_LIST_HEAD(registry);
static struct spinlock reg_lock = SPINLOCK_INIT(LOCK_RANK_REGISTRY);

void sefer__sync_registry_add(struct sync_node *n)
{
	tsan_release(n);
	spin_lock(&reg_lock);
	cds_list_add_rcu(&n->l, &registry);
	spin_unlock(&reg_lock);
}

void sefer__sync_registry_del(struct sync_node *n)
{
	spin_lock(&reg_lock);
	cds_list_del_rcu(&n->l);
	spin_unlock(&reg_lock);
}

void sefer__sync_registry_walk(void (*fn)(struct sync_node *n, void *arg), void *arg)
{
	struct sync_node *n;

	urcu_bp_read_lock();
	cds_list_for_each_entry_rcu(n, &registry, l) {
		tsan_acquire(n);
		fn(n, arg);
	}
	tsan_release(&grace);
	urcu_bp_read_unlock();
}

void sefer__sync_synchronize(void)
{
	urcu_bp_synchronize_rcu();
	tsan_acquire(&grace);
}

void sefer__sync_fork_prepare(void) __acquires(reg_lock)
{
	spin_lock(&reg_lock);
	urcu_bp_before_fork();
}

void sefer__sync_fork_parent(void) __releases(reg_lock)
{
	urcu_bp_after_fork_parent();
	spin_unlock(&reg_lock);
}

void sefer__sync_fork_child(void) __releases(reg_lock)
{
	urcu_bp_after_fork_child();
	spin_reset(&reg_lock);
}
