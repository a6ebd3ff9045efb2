/* SPDX-License-Identifier: MIT */
/*
 * fastbin hot paths, inlined into malloc and free through core/policy.h's wrappers (a direct,
 * inlined call over the constant policy_fastbin: no indirect call, no lock, no atomic RMW).
 * Needs struct heap, so core/heap.h includes it (via core/policy_hot.h) after defining it.
 */
#ifndef SEFER_POLICY_FASTBIN_HOT_H
#define SEFER_POLICY_FASTBIN_HOT_H

#if IS_ENABLED(CONFIG_POLICY_FASTBIN)

_Static_assert(FASTBIN_MAX <= DIRECT_MAX, "the magazine serves direct-table sizes only");

/* Pop the newest block of size's class, or NULL (the bins serve it). */
static always_inline void *fastbin_small_alloc(struct heap *h, size_t size)
{
	struct fastbin_heap *fb = &h->policy.fastbin;
	unsigned bin;
	uint32_t n;
	void *p;

	if (size > FASTBIN_MAX)
		return NULL;
	bin = bin_index(size);
	n = fb->count[bin];
	if (!n)
		return NULL;
	p = fb->slot[bin][--n];
	fb->count[bin] = n;
	block_clear_mark(p);
	heap_stat_call(h, mallocs);
	return p;
}

/* Keep a block the owner just freed (free mark written) unless its class's magazine is full. */
static always_inline bool fastbin_small_free(struct heap *h, struct page *pg, void *p)
{
	struct fastbin_heap *fb = &h->policy.fastbin;
	unsigned bin = pg->bin;
	uint32_t n;

	if (bin >= FASTBIN_BINS)
		return false;
	n = fb->count[bin];
	if (n >= CONFIG_FASTBIN_DEPTH)
		return false;
	fb->slot[bin][n] = p;
	fb->count[bin] = n + 1;
	heap_stat_call(h, frees);
	return true;
}

#endif

#endif
