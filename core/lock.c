// SPDX-License-Identifier: MIT
/*
 * The spinlocks' out-of-line parts (core/lock.h): a waiter's yield, and with CONFIG_DEBUG_CORE
 * the witness that checks the lock order (enum lock_rank) on every spin_lock.
 *
 * The witness keeps, per thread, how many locks of each rank the thread holds. Taking a lock
 * is reported when the thread holds one of an equal or higher rank (equal is allowed for
 * spin_lock_nested), releasing one when it holds none of that rank (a lock released by a
 * thread that did not take it, or twice), and taking a lock without a rank. The check runs
 * before the lock is taken, so an inversion is reported whether or not it would have
 * deadlocked this time.
 */
#include "core/debug.h"
#include "core/error.h"
#include "core/init.h"
#include "core/lock.h"
#include "core/stats.h"

void sefer__lock_yield(void)
{
	if (!os_has(SEFER_OS_YIELD)) {
		cpu_relax();
		return;
	}
	stat_add(&sefer__gstats.lock_yields, NULL, 1);
	sefer__os.yield();
}

#if IS_ENABLED(CONFIG_DEBUG_CORE)
static const char *const rank_names[LOCK_RANK_COUNT] = {
	[LOCK_RANK_NONE] = "unranked",		 [LOCK_RANK_HEAP_POOL] = "pool_lock",
	[LOCK_RANK_HEAP_LARGE] = "large_lock", [LOCK_RANK_ABANDONED] = "abandoned_lock",
	[LOCK_RANK_SPARE] = "spare_lock",	 [LOCK_RANK_REGISTRY] = "registry lock",
};

static __thread unsigned witness_held[LOCK_RANK_COUNT] __attribute__((tls_model("initial-exec")));

/* The highest rank the calling thread holds, LOCK_RANK_NONE when none. */
static enum lock_rank witness_top(void)
{
	for (int r = LOCK_RANK_COUNT - 1; r > LOCK_RANK_NONE; r--)
		if (witness_held[r])
			return (enum lock_rank)r;
	return LOCK_RANK_NONE;
}

void sefer__witness_acquire(enum lock_rank rank, bool nested, const char *file, int line)
{
	enum lock_rank top = witness_top();
	char what[160];

	if (rank <= LOCK_RANK_NONE || rank >= LOCK_RANK_COUNT)
		sefer__debug_failed(file, line, "lock order: a lock without a rank (enum lock_rank)");
	if (top > rank || (top == rank && !nested)) {
		sefer__format(what, sizeof(what),
			      "lock order: taking %s (rank %d) while holding %s (rank %d)",
			      rank_names[rank], (int)rank, rank_names[top], (int)top);
		sefer__debug_failed(file, line, what);
	}
	witness_held[rank]++;
}

void sefer__witness_release(enum lock_rank rank, const char *file, int line)
{
	char what[160];

	if (rank <= LOCK_RANK_NONE || rank >= LOCK_RANK_COUNT || !witness_held[rank]) {
		sefer__format(what, sizeof(what), "lock order: releasing %s, not held by this thread",
			      rank > LOCK_RANK_NONE && rank < LOCK_RANK_COUNT ? rank_names[rank] :
										  "a lock without a rank");
		sefer__debug_failed(file, line, what);
	}
	witness_held[rank]--;
}

bool sefer__witness_holds(enum lock_rank rank)
{
	return rank > LOCK_RANK_NONE && rank < LOCK_RANK_COUNT && witness_held[rank];
}
#endif
