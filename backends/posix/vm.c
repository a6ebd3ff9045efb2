// SPDX-License-Identifier: MIT
/*
 * POSIX virtual memory: aligned reservation by a hint, or by over-mapping and trimming.
 *
 * mmap gives page alignment only. A segment-aligned reservation (a segment, 4 MiB by default,
 * or a large block's) first asks for the next aligned address after the previous one (one
 * syscall) and otherwise maps size + align and unmaps the unaligned head and tail (three).
 *
 * The hint starts in a range that top-down mmap does not reach on a 64-bit address space
 * (HINT_BASE plus an offset from the library's load address; not with CONFIG_HARDENED), so thread
 * stacks, files and the program's own maps, placed below the lowest mapping, do not take the
 * addresses the next segment wants (the hint used to follow the first over-mapped segment, into the
 * gap left below the mapping above it, and fail at each thread's first segments). A reservation
 * claims its range by one CAS on the hint before it maps, so two threads never ask for the same
 * address. When the kernel puts the mapping elsewhere (the range is taken, outside a smaller
 * address space, or a sanitizer's runtime moved the hint) it is unmapped, the reservation
 * over-maps, and the hint follows that result, as it always did. Page-aligned reservations
 * (heap structs) map anywhere and leave the hint alone: one used to take the hint's address
 * and leave it unaligned for the segment after it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/posix/posix.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

static size_t os_page = 4096;
static _Atomic(uintptr_t) next_hint; /* 0: none yet (the first reservation over-maps) */

#define HINT_BASE ((uint64_t)2 << 40) /* 2 TiB; the first hint is in [2 TiB, 3 TiB) */

#ifdef CONFIG_HARDENED
#define HINT_FAR 0 /* segments where the kernel's own mmap randomisation puts them */
#else
#define HINT_FAR 1
#endif

/*
 * The first hint: HINT_BASE plus one of 2^18 multiples of 4 MiB, chosen from where ASLR loaded
 * the library. 0 (follow the first over-mapped reservation) where pointers have 32 bits, and
 * with CONFIG_HARDENED: a fixed range with 18 bits of randomness is easier to guess than the
 * kernel's placement (28 bits on x86-64).
 */
static uintptr_t hint_first(void)
{
	uint64_t mix = (uint64_t)(uintptr_t)&next_hint * 0x9e3779b97f4a7c15ULL;

	if (sizeof(uintptr_t) < 8 || !HINT_FAR)
		return 0;
	return (uintptr_t)(HINT_BASE + ((mix >> 46) << 22));
}

void sefer__posix_init(struct sefer_os_info *info)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		os_page = (size_t)ps;
	info->page_size = os_page;
	info->alloc_granularity = os_page;
	info->node_count = 1;
	atomic_store_explicit(&next_hint, hint_first(), memory_order_relaxed);
}

static void *map(void *hint, size_t size)
{
	void *p = mmap(hint, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uintptr_t align_up_ptr(uintptr_t x, size_t align)
{
	return (x + align - 1) & ~(uintptr_t)(align - 1);
}

/* Claim [start, start + size) at the hint, start aligned; 0 when there is no hint. */
static uintptr_t hint_claim(size_t size, size_t align)
{
	uintptr_t h = atomic_load_explicit(&next_hint, memory_order_relaxed), start, next;

	do {
		if (!h)
			return 0;
		start = align_up_ptr(h, align);
		next = align_up_ptr(start + size, align);
		if (start < h || next <= start) /* past the top of the address space */
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&next_hint, &h, next, memory_order_relaxed,
							memory_order_relaxed));
	return start;
}

/*
 * A reservation [.., old_end) is about to grow in place to new_end (linux_remap): when the hint
 * lies in [old_end, new_end), the growth takes the addresses the next reservation would ask
 * for, whose mmap would then land elsewhere and take the hint out of its range for good (the
 * growth of a large block past its alignment did). Move the hint past new_end first; a growth
 * that fails leaves a gap, no harm.
 */
void sefer__posix_hint_skip(uintptr_t old_end, uintptr_t new_end)
{
	uintptr_t h = atomic_load_explicit(&next_hint, memory_order_relaxed);

	while (h >= old_end && h < new_end &&
	       !atomic_compare_exchange_weak_explicit(&next_hint, &h, new_end, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

void *sefer__posix_reserve(size_t size, size_t align, int node)
{
	uintptr_t start;
	void *p;

	if (size + align < size)
		return NULL;
	if (align <= os_page)
		return map(NULL, size);
	start = hint_claim(size, align);
	if (start) {
		p = map((void *)start, size);
		if (p == (void *)start)
			return p;
		if (p)
			munmap(p, size);
	}
	p = map(NULL, size + align);
	if (!p)
		return NULL;
	start = align_up_ptr((uintptr_t)p, align);
	size_t head = start - (uintptr_t)p, tail = align - head;

	if (head)
		munmap(p, head);
	if (tail)
		munmap((void *)(start + size), tail);
	atomic_store_explicit(&next_hint, align_up_ptr(start + size, align), memory_order_relaxed);
	return (void *)start;
}

void sefer__posix_release(void *addr, size_t size)
{
	munmap(addr, size);
}

bool sefer__posix_protect(void *addr, size_t size, bool none)
{
	return mprotect(addr, size, none ? PROT_NONE : PROT_READ | PROT_WRITE) == 0;
}
