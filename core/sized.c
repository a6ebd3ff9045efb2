// SPDX-License-Identifier: MIT
/* The sized frees' contract, checked with CONFIG_HARDENED (see sized.h). */
#include "core/sized.h"
#include "core/align.h"
#include "core/alloc.h"
#include "core/error.h"

bool sefer__sized_free_check(const char *fn, const void *p, size_t size, size_t align)
{
	struct segment *seg = segment_of(p);
	char why[160];
	size_t usable, need = size, slack;
	bool large;

	if (align && (!is_pow2(align) || (uintptr_t)p % align)) {
		sefer__format(why, sizeof(why), "alignment %zu: %s", align,
			     is_pow2(align) ? "the block is not aligned to it"
					    : "not a power of two");
		sefer__report_error(fn, p, why);
		return false;
	}
	if (size == SIZE_UNKNOWN)
		return true;
	if (!segtab_contains(seg) && !(seg = sefer__aligned_segment_of(p)))
		return true; /* foreign: free() reports it */
	usable = sefer__usable_size_any(p);
	if (!usable)
		return true; /* not a block: free() reports it */
	large = atomic_load_explicit(&seg->owner, memory_order_relaxed) == LARGE_OWNER;
	/* A small aligned request is served from the class of align_up(size, align) (alloc.c). */
	if (!large && align > GRANULE)
		need = align_up(size ? size : 1, align);
	slack = large ? (size > SPAGE_SIZE ? size : SPAGE_SIZE) : (need > GRANULE ? need : GRANULE);
	if (need <= usable && usable - need <= slack)
		return true;
	/* a large block's last request, whatever room the block has (sized.h) */
	if (large && p == large_block(seg) && size == seg->large_req)
		return true;
	sefer__format(why, sizeof(why), "size %zu does not match the block's %zu usable bytes",
		      size, usable);
	sefer__report_error(fn, p, why);
	return false;
}
