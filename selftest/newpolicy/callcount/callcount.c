// SPDX-License-Identifier: MIT
/* The callcount test policy (callcount.h). */
#include "core/error.h"
#include "core/heap.h"

atomic_ulong callcount_large_allocs;
atomic_int callcount_inits;

bool callcount_init(void)
{
	atomic_fetch_add(&callcount_inits, 1);
	return true;
}

struct segment *callcount_large_alloc(struct heap *h, size_t size, size_t align, size_t *dirty)
{
	atomic_fetch_add_explicit(&callcount_large_allocs, 1, memory_order_relaxed);
	h->policy.callcount.large_allocs++;
	return NULL;
}

void callcount_print_stats(void)
{
	sefer__message("callcount: large_alloc called %lu times",
		      (unsigned long)atomic_load(&callcount_large_allocs));
}
