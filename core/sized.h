/* SPDX-License-Identifier: MIT */
/*
 * The contract of the sized frees: C23's free_sized and free_aligned_sized, C++'s sized and
 * aligned operator delete, and their sefer_* twins. The caller passes back the size (and the
 * alignment) it allocated with; with CONFIG_HARDENED a pair that cannot describe the block is
 * reported like a bad free, and the block is not freed. Without it the size is ignored.
 */
#ifndef SEFER_CORE_SIZED_H
#define SEFER_CORE_SIZED_H

#include "core/config.h"

/* The size for a call that passes only an alignment (C++'s aligned unsized delete). */
#define SIZE_UNKNOWN SIZE_MAX

/*
 * Report and return false when (size, align) cannot be the request that made block p: p not
 * aligned to align or align not a power of two, size beyond the block, or the block more than
 * twice what the request rounds to (a granule, or a sefer page for a large block, at least:
 * sefer's size classes waste at most 25% and realloc keeps a block down to half its size).
 * A large block's last request (malloc's or realloc's, seg->large_req) is right whatever its
 * room: a realloc that grows a block may move it into a segment a policy kept with up to 4
 * times the request (policies/large_cache), and later reallocs grow it there in place.
 * align 0 means the function takes none. Pointers sefer does not know are left to free().
 */
SEFER_INTERNAL bool sefer__sized_free_check(const char *fn, const void *p, size_t size,
		      size_t align) __cold;

static inline bool sized_free_ok(const char *fn, const void *p, size_t size, size_t align)
{
	return !IS_ENABLED(CONFIG_HARDENED) || !p || sefer__sized_free_check(fn, p, size, align);
}

#endif
