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

static CDS_LIST_HEAD(registry);
static struct spinlock reg_lock = SPINLOCK_INIT(LOCK_RANK_REGISTRY);

void sefer__sync_registry_add(struct sync_node *n)
{
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
	cds_list_for_each_entry_rcu(n, &registry, l)
		fn(n, arg);
	urcu_bp_read_unlock();
}

void sefer__sync_synchronize(void)
{
	urcu_bp_synchronize_rcu();
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
