// SPDX-License-Identifier: MIT
/* The prefixed API (include/sefer.h). The malloc family in face.c shares these paths. */
#include <errno.h>

#include "core/align.h"
#include "core/alloc.h"
#include "core/init.h"
#include "core/sized.h"
#include "sefer.h"

SEFER_API hot_entry void *sefer_malloc(size_t size)
{
	return sefer_malloc_inline(size);
}

SEFER_API hot_entry void sefer_free(void *p)
{
	sefer_free_inline(p);
}

SEFER_API void sefer_free_sized(void *p, size_t size)
{
	if (sized_free_ok("sefer_free_sized", p, size, 0))
		sefer_free_inline(p);
}

SEFER_API void sefer_free_aligned_sized(void *p, size_t alignment, size_t size)
{
	if (sized_free_ok("sefer_free_aligned_sized", p, size, alignment))
		sefer_free_inline(p);
}

SEFER_API void *sefer_calloc(size_t n, size_t size)
{
	return sefer__calloc_checked(n, size);
}

SEFER_API void *sefer_realloc(void *p, size_t size)
{
	return sefer__realloc_any(p, size);
}

SEFER_API void *sefer_reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return sefer__realloc_any(p, total);
}

SEFER_API void *sefer_aligned_alloc(size_t alignment, size_t size)
{
	return sefer__aligned_any(alignment, size);
}

SEFER_API int sefer_posix_memalign(void **out, size_t alignment, size_t size)
{
	void *p;

	if (!is_pow2(alignment) || alignment % sizeof(void *))
		return EINVAL;
	p = sefer__aligned_any(alignment, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

SEFER_API void *sefer_memalign(size_t alignment, size_t size)
{
	return sefer__aligned_any(alignment, size);
}

SEFER_API void *sefer_valloc(size_t size)
{
	sefer__process_init();
	return sefer__aligned_any(sefer__os_info.page_size, size);
}

SEFER_API void *sefer_pvalloc(size_t size)
{
	size_t ps;

	sefer__process_init();
	ps = sefer__os_info.page_size;
	if (size > SIZE_MAX - ps) {
		errno = ENOMEM;
		return NULL;
	}
	return sefer__aligned_any(ps, align_up(size ? size : 1, ps));
}

/*
 * sefer_usable_size() of p, a block of n usable bytes: with ASan the program may now use all
 * of them if the block is live, as its free mark (CONFIG_SANITIZE_ADDRESS needs
 * CONFIG_DEBUG_DOUBLE_FREE) or a large segment's flag says: a malloc(0) block is poisoned
 * whole, as a free one is, so only the mark tells them apart.
 */
static inline void annotate_usable(const void *p, size_t n)
{
	struct segment *seg = segment_of(p);
	bool live;

	if (!IS_ENABLED(CONFIG_SANITIZE_ADDRESS) || !n)
		return;
	if (!segtab_contains(seg))
		seg = sefer__aligned_segment_of(p);
	if (atomic_load_explicit(&seg->owner, memory_order_relaxed) == LARGE_OWNER)
		live = atomic_load_explicit(&seg->large_live, memory_order_relaxed);
	else
		live = block_live(p);
	annotate_block_grant(p, n, live);
}

SEFER_API size_t sefer_usable_size(const void *p)
{
	size_t n = sefer__usable_size_any(p);

	annotate_usable(p, n); /* the program may now use all n bytes (ASan) */
	return n;
}

SEFER_API size_t sefer_max_alignment(void)
{
	return MAX_ALIGN;
}

SEFER_API bool sefer_owns(const void *p)
{
	return p && (segtab_contains(segment_of(p)) || sefer__aligned_segment_of(p));
}

SEFER_API void sefer_collect(bool force)
{
	struct heap *heap = heap_get();

	if (heap != &sefer__heap_empty)
		sefer__heap_collect(heap, force);
}

SEFER_API void sefer_thread_done(void)
{
	struct heap *heap = heap_get();

	if (heap != &sefer__heap_empty)
		sefer__heap_abandon(heap);
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define VERSION STR(SEFER_VERSION_MAJOR) "." STR(SEFER_VERSION_MINOR) "." STR(SEFER_VERSION_PATCH)

SEFER_API const char *sefer_version(void)
{
	return "sefer " VERSION;
}
