/* SPDX-License-Identifier: MIT */
/*
 * The fastbin policy: a per-thread magazine of recently freed blocks per small size class,
 * popped before the bins (policies/fastbin/fastbin_hot.h has the hot-path bodies, which need
 * struct heap; include/generated/policies_hot.h includes them after it).
 *
 * Invariants: slot[bin][0 .. count[bin]) hold blocks of bin `bin` from pages of this heap's
 * segments, freed by the owner (free mark written) and still counted in their page's used count;
 * only the owning thread touches the magazine; heap_exit gives every block back to its page.
 */
#ifndef SEFER_POLICY_FASTBIN_H
#define SEFER_POLICY_FASTBIN_H

#define FASTBIN_MAX 1024 /* largest block size kept: the direct-table sizes */
#define FASTBIN_BINS 21	 /* bins 1 .. bin_index(FASTBIN_MAX) */

struct fastbin_heap {
	uint32_t count[FASTBIN_BINS];
	void *slot[FASTBIN_BINS][CONFIG_FASTBIN_DEPTH];
};

static inline void *fastbin_small_alloc(struct heap *h, size_t size);
static inline bool fastbin_small_free(struct heap *h, struct page *pg, void *p);
SEFER_INTERNAL void sefer__fastbin_heap_exit(struct heap *h);
SEFER_INTERNAL void sefer__fastbin_held(struct heap *h, uint64_t *counts);

/*
 * Included (through include/generated/policies.h) only when CONFIG_POLICY_FASTBIN=y. Fills the
 * two hot slots, small_alloc and small_free (bodies in fastbin_hot.h, Kbuild's fastbin-hot),
 * and heap_exit; the contract of each is at struct sefer_policy_ops (core/policy.h).
 */
static const struct sefer_policy_ops policy_fastbin = {
	.name = "fastbin",
	.heap_exit = sefer__fastbin_heap_exit,
	.held = sefer__fastbin_held,
	.small_alloc = fastbin_small_alloc,
	.small_free = fastbin_small_free,
};

#endif
