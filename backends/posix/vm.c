// SPDX-License-Identifier: MIT
/*
 * POSIX virtual memory: aligned reservation by over-mapping and trimming.
 *
 * mmap gives page alignment only. To get `align` (a segment, 4 MiB by default) we first try
 * a hint just after the previous reservation (usually aligned and free, one syscall), and
 * otherwise map size + align and unmap the unaligned head and tail.
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
static _Atomic(uintptr_t) next_hint;

void posix_init(struct sefer_os_info *info)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		os_page = (size_t)ps;
	info->page_size = os_page;
	info->alloc_granularity = os_page;
	info->node_count = 1;
	info->overcommit = true;
}

static void *map(void *hint, size_t size)
{
	void *p = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void *posix_reserve(size_t size, size_t align, int node)
{
	uintptr_t hint = atomic_load_explicit(&next_hint, memory_order_relaxed);
	void *p;

	if (size + align < size)
		return NULL;
	if (hint && !(hint & (align - 1))) {
		p = map((void *)hint, size);
		if (p && !((uintptr_t)p & (align - 1))) {
			atomic_store_explicit(&next_hint, (uintptr_t)p + size, memory_order_relaxed);
			return p;
		}
		if (p)
			munmap(p, size);
	}
	p = map(NULL, size + align);
	if (!p)
		return NULL;
	uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = start - (uintptr_t)p, tail = align - head;

	if (head)
		munmap(p, head);
	if (tail)
		munmap((void *)(start + size), tail);
	atomic_store_explicit(&next_hint, start + size, memory_order_relaxed);
	return (void *)start;
}

void posix_release(void *addr, size_t size)
{
	munmap(addr, size);
}

bool posix_commit(void *addr, size_t size, bool *is_zero)
{
	*is_zero = false;
	return mprotect(addr, size, PROT_READ | PROT_WRITE) == 0;
}

bool posix_protect(void *addr, size_t size, bool none)
{
	return mprotect(addr, size, none ? PROT_NONE : PROT_READ | PROT_WRITE) == 0;
}

bool posix_decommit(void *addr, size_t size)
{
	/* Fresh anonymous pages replace the range: reads as zero, no RSS, no access until commit. */
	void *p = mmap(addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	return p != MAP_FAILED;
}
