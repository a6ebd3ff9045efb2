/* SPDX-License-Identifier: MIT */
/*
 * A small spinlock for sefer's few global slow-path lists (heap pool, abandoned segments,
 * segment registry writers). Portable C11, safe to reset in a fork child. Critical sections are
 * a handful of pointer updates; waiters back off with the CPU's pause, and after SPIN_PAUSES of
 * them give their CPU away (sefer_os.yield, the only OS call): a holder that has not released
 * by then is not running, and with more runnable threads than CPUs it may be waiting for this
 * very CPU. Four threads on two CPUs (threadgen) spent 6% of their time spinning on the
 * abandoned-segment lock while its holder waited to run.
 */
#ifndef SEFER_CORE_LOCK_H
#define SEFER_CORE_LOCK_H

#include <stdatomic.h>

#include "core/config.h"
#include "core/stats.h"
#include "sefer/os.h"

#define SPIN_PAUSES 128

struct spinlock {
	atomic_int v;
};
#define SPINLOCK_INIT { 0 }

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * One step of a wait for another thread (*pauses starts at 0): the CPU's pause, and every
 * SPIN_PAUSES steps a yield to another thread (SEFER_SHOW_STATS counts them).
 */
static inline void wait_step(unsigned *pauses)
{
	if (++*pauses < SPIN_PAUSES || !(sefer__os.features & SEFER_OS_YIELD)) {
		cpu_relax();
		return;
	}
	*pauses = 0;
	stat_add(&sefer__gstats.lock_yields, NULL, 1);
	sefer__os.yield();
}

/* Until l looks free. */
static inline void spin_wait(struct spinlock *l)
{
	unsigned pauses = 0;

	while (atomic_load_explicit(&l->v, memory_order_relaxed))
		wait_step(&pauses);
}

/*
 * The context annotations (include/sefer/compiler.h) let sparse (make C=2) count, along every
 * path of a function, the locks taken and dropped: a function that returns holding a lock it
 * does not declare with __acquires, or drops one it does not declare with __releases, is
 * reported.
 */
static inline void spin_lock(struct spinlock *l) __acquires(l)
{
	for (;;) {
		/* acquire: the critical section sees every write made under the previous holder. */
		if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire)) {
			__acquire(l);
			return;
		}
		spin_wait(l);
	}
}

static inline void spin_unlock(struct spinlock *l) __releases(l)
{
	__release(l);
	/* release: publishes the critical section's writes to the next acquirer. */
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

/*
 * In a fork child only the forking thread exists: locks held at fork are reset. Called only
 * by the child's fork handlers, on the locks the prepare handlers took: a release.
 */
static inline void spin_reset(struct spinlock *l) __releases(l)
{
	__release(l);
	atomic_store_explicit(&l->v, 0, memory_order_relaxed);
}

#endif
