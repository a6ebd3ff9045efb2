// SPDX-License-Identifier: MIT
/*
 * check-newpolicy's program: linked with a libsefer.a built with the throwaway callcount
 * policy, it makes ALLOCS large allocations and checks that the policy's large_alloc hook saw
 * them, through its process-wide counter and its per-heap state, and that init ran once.
 *
 *   test_callcount first|last     where callcount's source line is in policies/Kconfig
 *
 * Chain order: a policy sourced first is asked before large_cache, so it sees every call; one
 * sourced last is asked only when large_cache has no segment to give (its misses).
 */
#include <stdio.h>
#include <string.h>

#include "core/heap.h"
#include "sefer.h"

#define ALLOCS 4
#define SIZE ((size_t)4 << 20)

int main(int argc, char **argv)
{
	bool first = argc > 1 && !strcmp(argv[1], "first");
	unsigned long calls, hits = 0, want;
	int fail = 0;

	for (int i = 0; i < ALLOCS; i++) {
		char *p = sefer_malloc(SIZE);

		if (!p)
			return 2;
		memset(p, i, 4096);
		sefer_free(p);
	}
	calls = atomic_load(&callcount_large_allocs);
#if IS_ENABLED(CONFIG_POLICY_LARGE_CACHE)
	hits = heap_get()->policy.large_cache.hits;
#endif
	want = first ? ALLOCS : ALLOCS - hits;
	printf("callcount (%s): %d large allocations, large_cache hits %lu, hook calls %lu "
	       "(want %lu), per heap %llu, init %d\n", first ? "first" : "last", ALLOCS, hits, calls,
	       want, (unsigned long long)heap_get()->policy.callcount.large_allocs,
	       atomic_load(&callcount_inits));
	fail |= calls != want || calls == 0;
	fail |= heap_get()->policy.callcount.large_allocs != calls;
	fail |= atomic_load(&callcount_inits) != 1;
	return fail;
}
