// SPDX-License-Identifier: MIT
/* The segment table bitmap (see segtab.h). Writers use atomic or/and: slow path only. */
#include "core/segtab.h"

SEFER_INTERNAL _Atomic(uint64_t) sefer__segtab[SEGTAB_BITS / 64];

void sefer__segtab_insert(const void *seg)
{
	uintptr_t i = (uintptr_t)seg >> SEGMENT_SHIFT;

	/*
	 * release: orders the header's initialisation before the bit for an acquire reader.
	 * segtab_contains() reads with relaxed on purpose (it is on the free path): a thread
	 * that legitimately holds a pointer into the segment got it through some synchronisation
	 * that happens after segment_publish(), and that is what makes the header visible, not
	 * the bit. A relaxed reader with a pointer it did not get that way (a wild free) may see
	 * the bit before the header; that free is an error report either way.
	 */
	atomic_fetch_or_explicit(&sefer__segtab[i >> 6], 1ULL << (i & 63), memory_order_release);
}

void sefer__segtab_remove(const void *seg)
{
	uintptr_t i = (uintptr_t)seg >> SEGMENT_SHIFT;

	atomic_fetch_and_explicit(&sefer__segtab[i >> 6], ~(1ULL << (i & 63)),
				  memory_order_relaxed);
}
