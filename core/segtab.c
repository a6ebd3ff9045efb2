// SPDX-License-Identifier: MIT
/* The segment table bitmap (see segtab.h). Writers use atomic or/and: slow path only. */
#include "core/segtab.h"

_Atomic(uint64_t) sefer_segtab[SEGTAB_BITS / 64];

void segtab_insert(const void *seg)
{
	uintptr_t i = (uintptr_t)seg >> SEGMENT_SHIFT;

	/* release: a thread that sees the bit (and a pointer into the segment) sees the header. */
	atomic_fetch_or_explicit(&sefer_segtab[i >> 6], 1ULL << (i & 63), memory_order_release);
}

void segtab_remove(const void *seg)
{
	uintptr_t i = (uintptr_t)seg >> SEGMENT_SHIFT;

	atomic_fetch_and_explicit(&sefer_segtab[i >> 6], ~(1ULL << (i & 63)), memory_order_relaxed);
}
