/* SPDX-License-Identifier: MIT */
/*
 * Memory-checker annotations: telling Valgrind's memcheck (CONFIG_VALGRIND) and
 * AddressSanitizer (CONFIG_SANITIZE_ADDRESS) which bytes of sefer's memory a program may touch.
 * With both options off every function here is an empty static inline and the callers compile
 * to the same instructions as without them (check-fastpath; Documentation/debugging.rst).
 *
 * The states of a byte of segment memory, and who moves it between them:
 *
 *   header        struct segment (page map, descriptors): always accessible. sefer reads it on
 *                 every call, so it cannot be hidden from a program without hiding it from
 *                 sefer (whose accesses the checkers cannot tell apart).
 *   unused        the rest of the metadata pages, pages not yet carved, free blocks, a large
 *                 segment past its block: unaddressable (annotate_noaccess() when the segment
 *                 is mapped; annotate_block_free()).
 *   live block    annotate_block_alloc() makes the whole block (its usable size) the
 *                 program's: for memcheck one MALLOCLIKE block, undefined (annotate_block_
 *                 zeroed() for calloc); annotate_block_trim() then, for ASan, poisons the
 *                 tail past the requested size (annotate_block_resize() at an in-place
 *                 realloc).
 *
 * sefer's own accesses to free blocks are the first GRANULE bytes of a block: the free-list
 * link and the free mark (core/segment.h). Each of those accessors opens the granule around
 * its load or store (annotate_link_open/close), so neither checker reports sefer itself. The
 * accessors are only ever called on blocks that are free or being freed, so closing the
 * granule never hides bytes of a live block; a walker that tests whether a block is live reads
 * its mark with annotate_peek_word(), which changes nothing.
 *
 * Memcheck registers the usable size (block size), ASan the requested size: memcheck has no
 * query for a block's registered size, which realloc() needs to copy without reading bytes
 * the program was not given; ASan's shadow answers it (annotate_live_bytes()).
 */
#ifndef SEFER_CORE_ANNOTATE_H
#define SEFER_CORE_ANNOTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#if IS_ENABLED(CONFIG_VALGRIND)
#include <valgrind/memcheck.h>
/*
 * Whether the process runs under valgrind, asked once by process_init() (annotate.c) before
 * the first segment is mapped: outside valgrind each hook is then a load and a branch, not a
 * client request (whose magic instruction sequence and argument block cost more: measured in
 * Documentation/debugging.rst).
 */
SEFER_INTERNAL_EXTERN bool sefer__on_valgrind;
SEFER_INTERNAL void sefer__annotate_init(void);
#define ANNOTATE_VALGRIND(request)                                                                 \
	do {                                                                                       \
		if (unlikely(sefer__on_valgrind))                                                  \
			request;                                                                   \
	} while (0)
#else
static inline void sefer__annotate_init(void)
{
}
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
#include <sanitizer/asan_interface.h>
#endif

#define ANNOTATE_LINK_BYTES ((size_t)16) /* the link and the free mark: one granule */

/* sefer is about to read or write the link words of a free block (or one being freed). */
static always_inline void annotate_link_open(const void *b)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MAKE_MEM_DEFINED(b, ANNOTATE_LINK_BYTES));
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_unpoison_memory_region(b, ANNOTATE_LINK_BYTES);
#endif
	(void)b;
}

/* ... and is done with them: unaddressable again. */
static always_inline void annotate_link_close(const void *b)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MAKE_MEM_NOACCESS(b, ANNOTATE_LINK_BYTES));
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_poison_memory_region(b, ANNOTATE_LINK_BYTES);
#endif
	(void)b;
}

/* A block of `usable` bytes is handed to the program: all of it addressable, undefined. */
static always_inline void annotate_block_alloc(const void *p, size_t usable)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MALLOCLIKE_BLOCK(p, usable, 0, 0));
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_unpoison_memory_region(p, usable);
#endif
	(void)p;
	(void)usable;
}

/* The first len bytes of a just allocated block are zero (calloc). */
static always_inline void annotate_block_zeroed(const void *p, size_t len)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MAKE_MEM_DEFINED(p, len));
#endif
	(void)p;
	(void)len;
}

/*
 * The program asked for `size` of the block's `usable` bytes, all of which are the program's
 * now (annotate_block_alloc()): ASan poisons the rest. One call: the tail ends at a multiple of
 * 16 bytes, and a poisoned region may start inside an 8-byte granule when it runs to the
 * granule's end (the granule then reads as partly addressable).
 */
static always_inline void annotate_block_trim(const void *p, size_t size, size_t usable)
{
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	if (p && size < usable)
		__asan_poison_memory_region((const char *)p + size, usable - size);
#endif
	(void)p;
	(void)size;
	(void)usable;
}

/* A live block is resized in place to `size` of its `usable` bytes (realloc). */
static always_inline void annotate_block_resize(const void *p, size_t size, size_t usable)
{
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_unpoison_memory_region(p, size);
	annotate_block_trim(p, size, usable);
#endif
	(void)p;
	(void)size;
	(void)usable;
}

/*
 * sefer_usable_size() told the program it may use all `usable` bytes of p's block: they are its
 * now if the block is live (a freed block stays poisoned).
 */
static always_inline void annotate_block_grant(const void *p, size_t usable, bool live)
{
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	if (usable && live)
		__asan_unpoison_memory_region(p, usable);
#endif
	(void)p;
	(void)usable;
	(void)live;
}

/* How many of a live block's `usable` bytes the program was given (what realloc copies). */
static always_inline size_t annotate_live_bytes(const void *p, size_t usable)
{
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	const char *bad = __asan_region_is_poisoned((void *)p, usable);

	if (bad)
		return (size_t)(bad - (const char *)p);
#endif
	(void)p;
	return usable;
}

/*
 * Read a word of a block that may be live, for walkers (checks, visits, the checkers' own
 * bookkeeping), leaving the block as the program made it to the memory checkers: ASan does not
 * instrument the load (a function of its own, not inlined into instrumented code), memcheck
 * reports nothing while it runs and takes the value read as defined. The load is atomic: a
 * visit reads the marks of blocks other threads may be freeing (block_mark_pending).
 */
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
static __attribute__((no_sanitize_address, unused)) noinline uintptr_t
annotate_peek_word(const uintptr_t *w)
#else
static inline uintptr_t annotate_peek_word(const uintptr_t *w)
#endif
{
	uintptr_t v;

#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_DISABLE_ERROR_REPORTING);
#endif
	/* relaxed atomic: another thread may be pushing the block meanwhile (block_mark_pending) */
	v = __atomic_load_n(w, __ATOMIC_RELAXED);
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MAKE_MEM_DEFINED(&v, sizeof(v)));
	ANNOTATE_VALGRIND(VALGRIND_ENABLE_ERROR_REPORTING);
#endif
	return v;
}

/* A block of `usable` bytes is free again: unaddressable. */
static always_inline void annotate_block_free(const void *p, size_t usable)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_FREELIKE_BLOCK(p, 0));
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_poison_memory_region(p, usable);
#endif
	(void)p;
	(void)usable;
}

/* Memory of sefer's that is neither header nor live block (a segment just mapped). */
static always_inline void annotate_noaccess(const void *p, size_t len)
{
#if IS_ENABLED(CONFIG_VALGRIND)
	ANNOTATE_VALGRIND(VALGRIND_MAKE_MEM_NOACCESS(p, len));
#endif
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_poison_memory_region(p, len);
#endif
	(void)p;
	(void)len;
}

/*
 * A mapping is about to go back to the OS: ASan's shadow must not stay poisoned for whatever
 * is mapped there next (memcheck forgets an unmapped range by itself).
 */
static always_inline void annotate_unmap(const void *p, size_t len)
{
#if IS_ENABLED(CONFIG_SANITIZE_ADDRESS)
	__asan_unpoison_memory_region(p, len);
#endif
	(void)p;
	(void)len;
}

#endif
