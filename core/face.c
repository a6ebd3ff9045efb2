// SPDX-License-Identifier: MIT
/*
 * The malloc face (CONFIG_MALLOC_FACE): the C library's allocation functions, exported so
 * that sefer replaces the system allocator through LD_PRELOAD or static linking. Each inlines
 * the same fast path as its sefer_* twin.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "sefer.h"

#define FACE __attribute__((visibility("default")))

FACE void *malloc(size_t size)
{
	return sefer_malloc_inline(size);
}

FACE void free(void *p)
{
	sefer_free_inline(p);
}

FACE void *calloc(size_t n, size_t size)
{
	return calloc_checked(n, size);
}

FACE void *realloc(void *p, size_t size)
{
	return realloc_any(p, size);
}

FACE void *reallocarray(void *p, size_t n, size_t size)
{
	return sefer_reallocarray(p, n, size);
}

FACE void *aligned_alloc(size_t alignment, size_t size)
{
	return aligned_any(alignment, size);
}

FACE int posix_memalign(void **out, size_t alignment, size_t size)
{
	return sefer_posix_memalign(out, alignment, size);
}

FACE void *memalign(size_t alignment, size_t size)
{
	return aligned_any(alignment, size);
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
	return usable_size_any(p);
}

/* The old SunOS name that some programs still call. */
void cfree(void *p);
FACE void cfree(void *p)
{
	sefer_free_inline(p);
}
