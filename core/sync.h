/* SPDX-License-Identifier: MIT */
/*
 * The sync layer: the registry of live segments, read without locks.
 *
 * Readers (stats, sefer_check_heap, purge of abandoned segments) walk the registry inside a
 * read-side critical section; writers add and remove segments under the registry lock, and a
 * removed segment is unmapped only after sync_synchronize() has waited out every reader that
 * could still see it. Two implementations, chosen by Kconfig:
 *   CONFIG_SYNC_URCU  liburcu's bulletproof flavour (urcu-bp) and its RCU list (Linux)
 *   CONFIG_SYNC_C11   a reader count and spinning grace period on C11 atomics (portable)
 *
 * Lock order: enum lock_rank (core/lock.h); the registry lock is innermost.
 */
#ifndef SEFER_CORE_SYNC_H
#define SEFER_CORE_SYNC_H

#include "core/config.h"

#if IS_ENABLED(CONFIG_SYNC_URCU)
#include <urcu/list.h>
struct sync_node {
	struct cds_list_head l;
};
#else
#include <stdatomic.h>
/*
 * next is read by lock-free walkers: under sparse it lives in the __sefer_rcu address space
 * (include/sefer/compiler.h), so that only sync_c11.c's accessors, which state the memory
 * order, can read or publish it; prev is the writers' alone (under the registry lock). A
 * distinct address space only here, where the accessors exist: sparse follows address spaces
 * through _Atomic and the atomic_* macros without complaint, so nothing else needs a cast.
 */
struct sync_node {
	struct sync_node __sefer_rcu *_Atomic next;
	struct sync_node *prev;
};
#endif

SEFER_INTERNAL void sefer__sync_registry_add(struct sync_node *n);
/* Unlink n; the caller must sync_synchronize() before reusing or unmapping its memory. */
SEFER_INTERNAL void sefer__sync_registry_del(struct sync_node *n);
/* Call fn on every registered node inside one read-side critical section. */
SEFER_INTERNAL void sefer__sync_registry_walk(void (*fn)(struct sync_node *n, void *arg),
					      void *arg);
/* Wait until no reader that started before this call is still inside the registry. */
SEFER_INTERNAL void sefer__sync_synchronize(void);
/* Fork handlers: prepare returns holding the registry lock, parent and child drop it. */
SEFER_INTERNAL void sefer__sync_fork_prepare(void) __acquires(reg_lock);
SEFER_INTERNAL void sefer__sync_fork_parent(void) __releases(reg_lock);
SEFER_INTERNAL void sefer__sync_fork_child(void) __releases(reg_lock);

#endif
