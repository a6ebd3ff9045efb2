// SPDX-License-Identifier: MIT
/*
 * The malloc face (CONFIG_MALLOC_FACE): the C library's allocation functions, exported so
 * that sefer replaces the system allocator through LD_PRELOAD or static linking. Each inlines
 * the same fast path as its sefer_* twin. Also here: glibc's internal names for them
 * (__libc_malloc and friends) and C23's sized frees. glibc's mallinfo, mallinfo2, mallopt and
 * malloc_info are in face_glibc.c; C++'s operator new and delete in new.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/sized.h"
#include "sefer.h"

#define FACE __attribute__((visibility("default")))

FACE hot_entry void *malloc(size_t size)
{
	return sefer_malloc_inline(size);
}

FACE hot_entry void free(void *p)
{
	sefer_free_inline(p);
}

FACE void *calloc(size_t n, size_t size)
{
	return sefer__calloc_checked(n, size);
}

FACE void *realloc(void *p, size_t size)
{
	return sefer__realloc_any(p, size);
}

FACE void *reallocarray(void *p, size_t n, size_t size)
{
	return sefer_reallocarray(p, n, size);
}

FACE void *aligned_alloc(size_t alignment, size_t size)
{
	return sefer__aligned_any(alignment, size);
}

FACE int posix_memalign(void **out, size_t alignment, size_t size)
{
	return sefer_posix_memalign(out, alignment, size);
}

FACE void *memalign(size_t alignment, size_t size)
{
	return sefer__aligned_any(alignment, size);
}

FACE void *valloc(size_t size)
{
	return sefer_valloc(size);
}

FACE void *pvalloc(size_t size)
{
	return sefer_pvalloc(size);
}

FACE size_t malloc_usable_size(void *p)
{
	return sefer__usable_size_any(p);
}

/*
 * glibc's: give the calling thread's free memory back to the OS (sefer_collect(true); `pad`,
 * the top-of-heap slack glibc keeps, has no meaning here). Returns 1 when the committed
 * bytes went down, 0 otherwise, and 0 without CONFIG_STATS, where nothing is counted.
 */
FACE int malloc_trim(size_t pad)
{
	struct sefer_stats before, after;

	(void)pad;
	sefer_stats_get(&before, sizeof(before));
	sefer_collect(true);
	sefer_stats_get(&after, sizeof(after));
	return after.committed < before.committed;
}

/* glibc's: print the allocator's statistics on stderr (sefer's summary). */
FACE void malloc_stats(void)
{
	sefer_stats_print(NULL, 0);
}

/* The old SunOS name that some programs still call. */
void cfree(void *p);
FACE void cfree(void *p)
{
	sefer_free_inline(p);
}

/*
 * C23 (<stdlib.h>; glibc 2.36 does not declare them yet). size and alignment are what the
 * block was allocated with: checked with CONFIG_HARDENED (core/sized.h), else ignored.
 */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);

FACE void free_sized(void *p, size_t size)
{
	if (sized_free_ok("free_sized", p, size, 0))
		sefer_free_inline(p);
}

FACE void free_aligned_sized(void *p, size_t alignment, size_t size)
{
	if (sized_free_ok("free_aligned_sized", p, size, alignment))
		sefer_free_inline(p);
}

/*
 * glibc's own names for its allocator, which some programs and tools call to reach "the real
 * malloc" (and which glibc's static libc.a pulls in): the same functions under a second name.
 * Plain definitions rather than aliases: Mach-O has no aliases.
 */
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

FACE void *__libc_malloc(size_t size)
{
	return sefer_malloc_inline(size);
}

FACE void __libc_free(void *p)
{
	sefer_free_inline(p);
}

FACE void *__libc_calloc(size_t n, size_t size)
{
	return sefer__calloc_checked(n, size);
}

FACE void *__libc_realloc(void *p, size_t size)
{
	return sefer__realloc_any(p, size);
}

FACE void *__libc_memalign(size_t alignment, size_t size)
{
	return sefer__aligned_any(alignment, size);
}

FACE void *__libc_valloc(size_t size)
{
	return sefer_valloc(size);
}

FACE void *__libc_pvalloc(size_t size)
{
	return sefer_pvalloc(size);
}
