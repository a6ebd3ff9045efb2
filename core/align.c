// SPDX-License-Identifier: MIT
/* Blocks aligned to a segment or more: finding their header (see align.h). */
#include "core/align.h"
#include "core/segtab.h"

struct segment *sefer__aligned_segment_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;

	if (!a || (a & SEGMENT_MASK))
		return NULL;
	for (unsigned k = SEGMENT_SHIFT; k < CONFIG_VA_BITS; k++) {
		uintptr_t step = (uintptr_t)1 << k;
		struct segment *seg = (struct segment *)(a - step);

		if ((a & (step - 1)) || a < step)
			break;
		if (!segtab_contains(seg))
			continue;
		if (atomic_load_explicit(&seg->owner, memory_order_acquire) == LARGE_OWNER &&
		    seg->kind == SEG_LARGE && large_block(seg) == (const uint8_t *)p)
			return seg;
	}
	return NULL;
}
