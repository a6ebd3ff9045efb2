/* SPDX-License-Identifier: MIT */
/*
 * The segment table: one bit per possible segment address below 2^VA_BITS, answering
 * "is this pointer's segment one of ours?" in one load, without a lock.
 *
 * The bitmap is a zero-initialised static array: pages of it that were never written are
 * the OS's shared zero page, so it commits memory only where segments exist (each 4 KiB of
 * bitmap covers 128 GiB of address space with 4 MiB segments). It never moves, so readers
 * need no RCU: a bit is set before a segment is handed out and cleared before it is
 * unmapped. The registry (core/sync.h) lists the same segments for walkers.
 */
#ifndef SEFER_CORE_SEGTAB_H
#define SEFER_CORE_SEGTAB_H

#include <stdatomic.h>

#include "core/config.h"

#define SEGTAB_BITS ((size_t)1 << (CONFIG_VA_BITS - SEGMENT_SHIFT))
SEFER_INTERNAL_EXTERN _Atomic(uint64_t) sefer__segtab[SEGTAB_BITS / 64];

static always_inline bool segtab_contains(const void *seg)
{
	uintptr_t i = (uintptr_t)seg >> SEGMENT_SHIFT;

	if (unlikely(i >= SEGTAB_BITS))
		return false;
	return atomic_load_explicit(&sefer__segtab[i >> 6], memory_order_relaxed) >> (i & 63) & 1;
}

SEFER_INTERNAL void sefer__segtab_insert(const void *seg);
SEFER_INTERNAL void sefer__segtab_remove(const void *seg);

#endif
