// SPDX-License-Identifier: MIT
/*
 * Process init: OS info, options, hardening key, policies, fork handlers.
 *
 * Runs from a constructor and, if malloc is called earlier (another library's constructor),
 * from the first slow path. One thread initialises; others wait on init_state; the
 * initialising thread itself may recurse into malloc (pthread_atfork can allocate) and is let
 * through, since everything the allocator needs was set up before that call.
 *
 * Fork: prepare takes every spinlock in the lock order (enum lock_rank, core/lock.h), so the
 * child starts with consistent lists; the child resets them.
 */
#include <pthread.h>

#include "core/debug.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/lock.h"
#include "core/init.h"
#include "core/options.h"
#include "core/segtab.h"
#include "core/stats.h"

SEFER_INTERNAL struct sefer_os_info sefer__os_info = {
	.page_size = 4096,
	.alloc_granularity = 4096,
	.node_count = 1,
	.max_request = PTRDIFF_MAX,
};
SEFER_INTERNAL uintptr_t sefer__list_key;
SEFER_INTERNAL uintptr_t sefer__mark_key;
SEFER_INTERNAL uint64_t sefer__shuffle_key;

static atomic_int init_state; /* 0 not started, 1 running, 2 done */
static __thread bool in_init __attribute__((tls_model("initial-exec")));

/* The locks of heap.c (parked pass, pool), unowned.c (abandoned, spare) and the registry
 * (sync.h). */
static void fork_prepare(void) __acquires(parked_pass_lock) __acquires(pool_lock)
	__acquires(abandoned_lock) __acquires(spare_lock) __acquires(reg_lock)
{
	sefer__heap_fork_prepare();
	sefer__sync_fork_prepare();
}

static void fork_parent(void) __releases(parked_pass_lock) __releases(pool_lock)
	__releases(abandoned_lock) __releases(spare_lock) __releases(reg_lock)
{
	sefer__sync_fork_parent();
	sefer__heap_fork_parent();
}

static void fork_child(void) __releases(parked_pass_lock) __releases(pool_lock)
	__releases(abandoned_lock) __releases(spare_lock) __releases(reg_lock)
{
	sefer__sync_fork_child();
	sefer__heap_fork_child();
}

void *sefer__list_corrupt(const struct page *pg, const void *b, uintptr_t bad)
{
	(void)pg;
	(void)bad;
	sefer__report_corruption("free-list link overwritten (use after free or overflow)", b);
}

/*
 * The segment table (core/segtab.h) is SEGTAB_BITS / 8 bytes of static data (4 MiB), a word of it
 * written per segment: where small-object segments get no huge page (SEFER_THP never, large
 * or auto), neither does it, which in THP mode "always" would be 2 MiB for a word
 * (THP_USE_TABLE: sefer__thp_advise).
 */
static void segtab_thp_advise(void)
{
	size_t ps = sefer__os_info.page_size;
	uintptr_t lo = align_up((uintptr_t)sefer__segtab, ps);
	uintptr_t hi = ((uintptr_t)sefer__segtab + sizeof(sefer__segtab)) & ~(uintptr_t)(ps - 1);

	if (hi > lo)
		sefer__thp_advise((void *)lo, hi - lo, THP_USE_TABLE);
}

void sefer__process_init(void)
{
	int expect = 0;

	/* acquire: pairs with the release store of 2 below, so a thread that sees "done" sees
	 * sefer_os_info, options and the list key as the initialising thread wrote them. */
	if (likely(atomic_load_explicit(&init_state, memory_order_acquire) == 2) || in_init)
		return;
	if (!atomic_compare_exchange_strong_explicit(&init_state, &expect, 1, memory_order_acquire,
						     memory_order_acquire)) {
		/* acquire (CAS failure and this loop): same pairing as above. The CAS's success
		 * order needs nothing (there is nothing to see yet); acquire is harmless. The
		 * initialising thread may be waiting for this CPU: wait_step() yields. */
		unsigned pauses = 0;

		while (atomic_load_explicit(&init_state, memory_order_acquire) != 2)
			wait_step(&pauses);
		return;
	}
	in_init = true;
	sefer__annotate_init(); /* before the first segment is mapped */
	sefer__os.init(&sefer__os_info);
	sefer_assert(sefer_os_features_agree(&sefer__os)); /* the port's features, its slots */
	sefer__options_init();
	if (sefer__opt.show_stats && os_has(SEFER_OS_KEEP_ERR))
		sefer__os.keep_err();
	if (!os_random_bytes(&sefer__list_key, sizeof(sefer__list_key)))
		sefer__list_key = (uintptr_t)&sefer__list_key ^
				  (uintptr_t)sefer__os.clock_ms() * 0x9e3779b97f4a7c15ULL;
	sefer__list_key |= 1;
	if (!os_random_bytes(&sefer__mark_key, sizeof(sefer__mark_key)))
		sefer__mark_key = sefer__list_key * 0xbf58476d1ce4e5b9ULL ^ (sefer__list_key >> 31);
	sefer__mark_key |= 1; /* odd: no mark is an aligned pointer (a self-pointer included) */
	/* the seed of every heap's free-list shuffle (heap.c, page.c) */
	if (IS_ENABLED(CONFIG_HARDENED) &&
	    !os_random_bytes(&sefer__shuffle_key, sizeof(sefer__shuffle_key)))
		sefer__shuffle_key = sefer__mark_key * 0x94d049bb133111ebULL ^ sefer__os.clock_ms();
	sefer__policy_init_all();
	segtab_thp_advise();
#ifndef _WIN32
	pthread_atfork(fork_prepare, fork_parent, fork_child);
#else
	(void)fork_prepare;
	(void)fork_parent;
	(void)fork_child;
#endif
	if (sefer__opt.verbose)
		sefer__message(
			"initialised: backend %s, %zu KiB segments, %zu KiB pages, %d node(s)",
			sefer__os.name, SEGMENT_SIZE >> 10, SPAGE_SIZE >> 10,
			sefer__os_info.node_count);
	in_init = false;
	/* release: publishes everything initialised above to the acquire loads of init_state. */
	atomic_store_explicit(&init_state, 2, memory_order_release);
}

__attribute__((constructor)) static void sefer_constructor(void)
{
	sefer__process_init();
}
