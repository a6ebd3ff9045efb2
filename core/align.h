/* SPDX-License-Identifier: MIT */
/*
 * Alignments beyond half a segment.
 *
 * A large segment places its block at large_block_offset(align) from its start, which is
 * `align` itself once the alignment exceeds the header. Up to SEGMENT_SIZE / 2 the block starts
 * in the segment's first slot, so segment_of(block) is the header like for every other block.
 * From SEGMENT_SIZE up the reservation is aligned to `align` (the OS contract's reserve() takes
 * any power of two) and the block starts `align` bytes in: segment_of(block) is the block
 * itself, a slot the segment table does not know. The paths that meet such a pointer there
 * (free_foreign, realloc, malloc_usable_size, sefer_owns) ask aligned_segment_of() before they
 * call it foreign.
 *
 * The address space the gap takes is the alignment, and nothing else: the OS maps no memory
 * behind it until it is touched, and nothing touches it (Linux and Darwin map with
 * MAP_NORESERVE; Windows commits it, so it counts against the commit limit there).
 */
#ifndef SEFER_CORE_ALIGN_H
#define SEFER_CORE_ALIGN_H

#include "core/segment.h"

/*
 * The largest alignment accepted: a quarter of the address space the segment table covers. A
 * block aligned to A lies A bytes into a reservation aligned to A, which starts at a nonzero
 * multiple of A: at 2^(VA_BITS - 1) the block would start at 2^VA_BITS, outside the address
 * space, so that alignment could never be served. At 2^(VA_BITS - 2) the header is at
 * 2^(VA_BITS - 2) and the block at 2^(VA_BITS - 1), in a process with that range free (on
 * x86-64 Linux, 32 TiB at 32 TiB, below where programs and libraries are mapped).
 */
#define MAX_ALIGN ((size_t)1 << (CONFIG_VA_BITS - 2))

/*
 * The large segment whose block is exactly p, when p is a block aligned to SEGMENT_SIZE or
 * more; NULL for every other pointer. Probes p - 2^k for each 2^k that divides p, from
 * SEGMENT_SIZE up (at most VA_BITS - SEGMENT_SHIFT segment-table bits), and believes a header
 * only when its large_block is p. Any pointer value is safe to ask about.
 */
SEFER_INTERNAL struct segment *sefer__aligned_segment_of(const void *p) __cold;

#endif
