/* SPDX-License-Identifier: MIT */
/*
 * A small spinlock for sefer's few global slow-path lists (heap pool, abandoned segments,
 * spare segments, segment registry writers, a first-class heap's large blocks), and the one
 * lock order, enum lock_rank. Portable C11, safe to reset in a fork child. Critical sections
 * are a handful of pointer updates; waiters back off with the CPU's pause, and after
 * SPIN_PAUSES of them give their CPU away (sefer__lock_yield, core/lock.c): a holder that has
 * not released by then is not running, and with more runnable threads than CPUs it may be
 * waiting for this very CPU. Four threads on two CPUs (threadgen) spent 6% of their time
 * spinning on the abandoned-segment lock while its holder waited to run.
 *
 * The lowest primitive of the core: it includes nothing of sefer's but config.h.
 */
#ifndef SEFER_CORE_LOCK_H
#define SEFER_CORE_LOCK_H

#include <stdatomic.h>

#include "core/config.h"

#define SPIN_PAUSES 128

/*
 * THE lock order: every spinlock has a rank, and a thread takes locks in increasing rank
 * only (outermost first). A CONFIG_DEBUG_CORE build checks it on every spin_lock (core/lock.c,
 * after jemalloc's witnesses): each thread records the ranks it holds, and taking a lock whose
 * rank is not above every rank it holds is reported and aborts. No lock is held on a fast path,
 * and none across an OS call but yield and write_err (include/sefer/os.h). pthread_atfork's
 * handlers (core/init.c) take them all in this order before fork and release (parent) or
 * reset (child) them after, so the child starts with consistent lists.
 */
enum lock_rank {
	LOCK_RANK_NONE,		/* never given one (a zeroed lock): taking it is reported */
	LOCK_RANK_PARKED_PASS,	/* parked_pass_lock (heap.c): a pass over the parked heaps, or
				 * their dismantling; held across the pass (purges included) */
	LOCK_RANK_HEAP_POOL,	/* pool_lock (heap.c): the pool of exited and destroyed heaps,
				 * the list of all heaps */
	LOCK_RANK_HEAP_LARGE,	/* every first-class heap's fc.large_lock (heaps.c): its large
				 * blocks. Nothing is taken under one; only the fork handlers hold
				 * several at once (spin_lock_nested), inside pool_lock */
	LOCK_RANK_ABANDONED,	/* abandoned_lock (unowned.c): the abandoned-segment list */
	LOCK_RANK_SPARE,	/* spare_lock (unowned.c): the spare-segment list */
	LOCK_RANK_REGISTRY,	/* reg_lock (sync_urcu.c, sync_c11.c): registry writers; innermost */
	LOCK_RANK_COUNT
};

struct spinlock {
	atomic_int v;
#if IS_ENABLED(CONFIG_DEBUG_CORE)
	enum lock_rank rank;
#endif
};

#if IS_ENABLED(CONFIG_DEBUG_CORE)
#define SPINLOCK_INIT(rank) { 0, (rank) }
#else
#define SPINLOCK_INIT(rank) { 0 }
#endif

/* A lock in memory that was not statically initialised; free, of the given rank. */
static inline void spin_init(struct spinlock *l, enum lock_rank rank)
{
	atomic_store_explicit(&l->v, 0, memory_order_relaxed);
#if IS_ENABLED(CONFIG_DEBUG_CORE)
	l->rank = rank;
#else
	(void)rank;
#endif
}

#if IS_ENABLED(CONFIG_DEBUG_CORE)
/* The witness (core/lock.c): the calling thread's held ranks, checked at file:line. */
SEFER_INTERNAL void sefer__witness_acquire(enum lock_rank rank, bool nested, const char *file,
					   int line);
SEFER_INTERNAL void sefer__witness_release(enum lock_rank rank, const char *file, int line);
SEFER_INTERNAL bool sefer__witness_holds(enum lock_rank rank);
#endif

/* Give the CPU away, or pause where the OS cannot (core/lock.c; counted with SHOW_STATS). */
SEFER_INTERNAL void sefer__lock_yield(void);

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
 * SPIN_PAUSES steps a yield to another thread.
 */
static inline void wait_step(unsigned *pauses)
{
	if (++*pauses < SPIN_PAUSES) {
		cpu_relax();
		return;
	}
	*pauses = 0;
	sefer__lock_yield();
}

/* Until l looks free. */
static inline void spin_wait(struct spinlock *l)
{
	unsigned pauses = 0;

	while (atomic_load_explicit(&l->v, memory_order_relaxed))
		wait_step(&pauses);
}

/* The witness's bookkeeping for l at file:line (CONFIG_DEBUG_CORE; nothing without it). */
static inline void witness_acquire(struct spinlock *l, bool nested, const char *file, int line)
{
#if IS_ENABLED(CONFIG_DEBUG_CORE)
	sefer__witness_acquire(l->rank, nested, file, line);
#else
	(void)l, (void)nested, (void)file, (void)line;
#endif
}

static inline void witness_release(struct spinlock *l, const char *file, int line)
{
#if IS_ENABLED(CONFIG_DEBUG_CORE)
	sefer__witness_release(l->rank, file, line);
#else
	(void)l, (void)file, (void)line;
#endif
}

/*
 * The context annotations (include/sefer/compiler.h) let sparse (make C=2) count, along every
 * path of a function, the locks taken and dropped: a function that returns holding a lock it
 * does not declare with __acquires, or drops one it does not declare with __releases, is
 * reported. `nested`: the caller may already hold locks of l's own rank (spin_lock_nested).
 */
static inline void spin_lock_at(struct spinlock *l, bool nested, const char *file, int line)
	__acquires(l)
{
	witness_acquire(l, nested, file, line);
	for (;;) {
		/* acquire: the critical section sees every write made under the previous holder. */
		if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire)) {
			__acquire(l);
			return;
		}
		spin_wait(l);
	}
}

static inline void spin_unlock_at(struct spinlock *l, const char *file, int line) __releases(l)
{
	witness_release(l, file, line);
	__release(l);
	/* release: publishes the critical section's writes to the next acquirer. */
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

/*
 * In a fork child only the forking thread exists: locks held at fork are reset. Called only
 * by the child's fork handlers, on the locks the prepare handlers took: a release.
 */
static inline void spin_reset_at(struct spinlock *l, const char *file, int line) __releases(l)
{
	witness_release(l, file, line);
	__release(l);
	atomic_store_explicit(&l->v, 0, memory_order_relaxed);
}

/* The caller's file and line go to the witness's report (CONFIG_DEBUG_CORE). */
#define spin_lock(l) spin_lock_at(l, false, __FILE__, __LINE__)
/* Take l while holding other locks of its rank: only the fork handlers (every large_lock). */
#define spin_lock_nested(l) spin_lock_at(l, true, __FILE__, __LINE__)
#define spin_unlock(l) spin_unlock_at(l, __FILE__, __LINE__)
#define spin_reset(l) spin_reset_at(l, __FILE__, __LINE__)

/*
 * For assertions (sefer_assert(spin_held(&lock)), core/debug.h): l is taken, and the calling
 * thread holds a lock of l's rank. Exact for a lock alone in its rank (every one but the
 * large_locks); only meaningful with CONFIG_DEBUG_CORE, where assertions are evaluated.
 */
static inline bool spin_held(struct spinlock *l)
{
#if IS_ENABLED(CONFIG_DEBUG_CORE)
	return atomic_load_explicit(&l->v, memory_order_relaxed) && sefer__witness_holds(l->rank);
#else
	return atomic_load_explicit(&l->v, memory_order_relaxed) != 0;
#endif
}

#endif
