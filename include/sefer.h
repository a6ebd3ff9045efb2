/* SPDX-License-Identifier: MIT */
/*
 * sefer: a memory allocator. The prefixed API is always available; when built with
 * CONFIG_MALLOC_FACE the standard malloc family is exported too (same implementation).
 */
#ifndef SEFER_H
#define SEFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release; the shared library's SONAME is libsefer.so.SEFER_VERSION_MAJOR. */
#define SEFER_VERSION_MAJOR 0
#define SEFER_VERSION_MINOR 2
#define SEFER_VERSION_PATCH 0

/*
 * SEFER_STATIC_API: only for a program that #includes the amalgamated sefer.c with
 * SEFER_STATIC_ALL (Documentation/vendoring.rst); the API becomes static there too.
 */
#if defined(SEFER_STATIC_API)
#define SEFER_API static __attribute__((__unused__))
#elif defined(_WIN32) && !defined(SEFER_STATIC)
#ifdef SEFER_BUILD
#define SEFER_API __declspec(dllexport)
#else
#define SEFER_API __declspec(dllimport)
#endif
#else
#define SEFER_API __attribute__((visibility("default")))
#endif

/*
 * A result that must not be dropped (a dropped block is a leak; a dropped realloc result loses
 * the block when it moved): glibc marks its realloc and posix_memalign the same way.
 */
#if defined(__GNUC__) || defined(__clang__)
#define SEFER_MUST_CHECK __attribute__((warn_unused_result))
#else
#define SEFER_MUST_CHECK
#endif

SEFER_API SEFER_MUST_CHECK void *sefer_malloc(size_t size);
SEFER_API void sefer_free(void *p);
/*
 * C23's sized frees: size (and alignment) as passed to the call that allocated p. With
 * CONFIG_HARDENED a size or alignment that cannot describe the block is reported like a bad
 * free and the block is kept; otherwise they are sefer_free(p).
 */
SEFER_API void sefer_free_sized(void *p, size_t size);
SEFER_API void sefer_free_aligned_sized(void *p, size_t alignment, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_calloc(size_t n, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_realloc(void *p, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_reallocarray(void *p, size_t n, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_aligned_alloc(size_t alignment, size_t size);
SEFER_API SEFER_MUST_CHECK int sefer_posix_memalign(void **out, size_t alignment, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_memalign(size_t alignment, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_valloc(size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_pvalloc(size_t size);
SEFER_API size_t sefer_usable_size(const void *p);

/*
 * Largest alignment sefer_aligned_alloc and friends accept: every power of two up to a quarter
 * of the address space sefer covers (2^(CONFIG_VA_BITS - 2), 32 TiB with 47 bits). A block
 * aligned to A takes at most A bytes of address space beyond its size, and no memory; the
 * largest is served where the process has that range free.
 */
SEFER_API size_t sefer_max_alignment(void);

/* Whether p lies in memory sefer manages (any pointer value is safe to ask about). */
SEFER_API bool sefer_owns(const void *p);

/*
 * Process-wide statistics. The struct only grows at its end: a program passes the size it was
 * built with (sizeof), the library fills the fields both know and zeroes the rest, so a
 * program built against an older, smaller struct keeps working with a newer library, and a
 * newer program on an older library reads zeros in the fields that library lacks.
 */
struct sefer_stats {
	uint64_t mallocs;	  /* allocations of every kind (0 without CONFIG_STATS_CALLS) */
	uint64_t frees;		  /* frees, local and cross-thread (likewise) */
	uint64_t xthread_frees;	  /* frees of a block owned by another (or no) thread */
	uint64_t large_allocs;	  /* allocations served by a dedicated segment */
	uint64_t segments;	  /* segments mapped now */
	uint64_t segments_peak;	  /* most segments mapped at once */
	uint64_t segments_mapped; /* segments mapped since start (each one an OS call) */
	uint64_t committed;	  /* bytes of segment memory mapped and not purged, now */
	uint64_t committed_peak;  /* peak of committed */
	uint64_t purged;	  /* bytes handed back to the OS while staying mapped */
	uint64_t abandoned;	  /* segments left by exited threads, still live */
	uint64_t reclaimed;	  /* abandoned segments adopted by another thread */
	uint64_t threads;	  /* heaps created (thread and first-class heaps' structs mapped) */
	uint64_t heaps;		  /* first-class heaps (sefer_heap_new) alive now */
	/* --- sefer 0.2 --- */
	uint64_t in_use_bytes;	     /* usable bytes of the blocks allocated now (small + large) */
	uint64_t in_use_blocks;	     /* blocks allocated now */
	uint64_t in_use_peak_bytes;  /* highest in_use_bytes seen at a sample (sefer(3)) */
	uint64_t in_use_peak_blocks; /* highest in_use_blocks seen at a sample */
	uint64_t large_blocks;	     /* large blocks allocated now (part of in_use_blocks) */
	uint64_t large_bytes;	     /* their usable bytes (part of in_use_bytes) */
	uint64_t small_bytes;	     /* bytes of the small-block segments mapped now */
	uint64_t purge_raises;	     /* times a purge delay was raised (purged memory needed) */
	uint64_t lock_yields;	     /* spinlock waiters that gave their CPU away */
	uint64_t handoffs_kept;	     /* last workers' exits that kept memory for the next threads */
	uint64_t heaps_parked;	     /* exited threads' heaps kept whole for the next threads, now */
	uint64_t heaps_adopted;	     /* parked heaps a new thread took over */
	uint64_t heaps_switched;     /* parked heaps a running thread took for its own (which
				      * it parked in their place) rather than map fresh memory;
				      * only from a heap it had taken over itself */
};

/*
 * Fill the first `size` bytes of *st (size: sizeof the caller's struct sefer_stats): the
 * fields this library knows, zeros past them. Returns how many bytes it filled with figures
 * (at most size). A query walks every live segment (sefer(3): about 20 us per 100
 * segments, whatever the number of threads).
 */
SEFER_API size_t sefer_stats_get(struct sefer_stats *st, size_t size);

/* sefer_stats_print() flags */
#define SEFER_STATS_CLASSES 1u /* add the per-size-class table (SEFER_SHOW_STATS=2) */
#define SEFER_STATS_JSON 2u    /* one JSON object instead of the table (SEFER_SHOW_STATS=json) */
/*
 * Print the stats: the table SEFER_SHOW_STATS=1 prints at exit, or one JSON object. fp NULL
 * writes to stderr without allocating; a FILE goes through stdio (which may allocate).
 */
SEFER_API void sefer_stats_print(FILE *fp, unsigned flags);

/*
 * Return the calling thread's free memory: collect cross-thread frees, release empty pages
 * and, with force, purge every pending page now regardless of SEFER_PURGE_DELAY_MS and give
 * back every large object the large_cache holds (without force: those that aged out).
 * The malloc face's malloc_trim() is sefer_collect(true).
 */
SEFER_API void sefer_collect(bool force);

/* Tear down the calling thread's heap now (as at thread exit); later calls make a new one. */
SEFER_API void sefer_thread_done(void);

/*
 * Walk every live segment and check the allocator's invariants (page map, free lists, used
 * counts, bitmaps). Returns the number of problems found (each reported on stderr); 0 when
 * the heap is sound. Other threads may keep allocating; their pages are checked loosely.
 */
SEFER_API size_t sefer_check_heap(void);

/*
 * First-class heaps (CONFIG_HEAPS, Documentation/heaps.rst). A heap belongs to the thread that
 * made it: only that thread allocates from, visits, collects or destroys it (another thread's
 * call is reported as a misuse and returns NULL / does nothing). Any thread frees its blocks
 * with sefer_free (free). When the owner exits, the heap is orphaned: its blocks stay valid
 * and freeable, and any one thread may then destroy it.
 */
struct sefer_heap;
SEFER_API SEFER_MUST_CHECK struct sefer_heap *sefer_heap_new(void);
/* Frees every block still in h at once (pages and segments in bulk); h is gone. */
SEFER_API void sefer_heap_destroy(struct sefer_heap *h);
SEFER_API SEFER_MUST_CHECK void *sefer_heap_malloc(struct sefer_heap *h, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_heap_calloc(struct sefer_heap *h, size_t n, size_t size);
/* The result is a block of h: a block of another heap is moved into h, never kept. */
SEFER_API SEFER_MUST_CHECK void *sefer_heap_realloc(struct sefer_heap *h, void *p, size_t size);
SEFER_API SEFER_MUST_CHECK void *sefer_heap_aligned_alloc(struct sefer_heap *h, size_t align,
						     size_t size);
/*
 * Call fn(block, usable size, arg) once for every live block of h, small and large, after
 * collecting the frees other threads completed before the call; stop when fn returns false.
 * Returns false if fn stopped the walk, true if every block was seen. fn may free blocks of h
 * but must not allocate from, collect, visit or destroy h.
 */
SEFER_API bool sefer_heap_visit(struct sefer_heap *h,
				bool (*fn)(void *block, size_t usable, void *arg), void *arg);
/* sefer_collect() for h: collect frees, release empty pages, purge (all with force). */
SEFER_API void sefer_heap_collect(struct sefer_heap *h, bool force);

/*
 * One heap's figures, for a runtime that paces a collector on them. Grows at its end like
 * struct sefer_stats (pass sizeof).
 */
struct sefer_heap_stats {
	uint64_t in_use_bytes;	     /* usable bytes of h's blocks allocated now */
	uint64_t in_use_blocks;	     /* h's blocks allocated now */
	uint64_t in_use_peak_bytes;  /* highest in_use_bytes seen at a sample (sefer(3)) */
	uint64_t in_use_peak_blocks; /* highest in_use_blocks seen at a sample */
	uint64_t committed;	     /* bytes of h's small segments backed by memory, and its
				      * large blocks' segments */
	uint64_t segments;	     /* small segments h owns */
	uint64_t large_blocks;	     /* large blocks of h allocated now */
	uint64_t large_bytes;	     /* their usable bytes */
};

/*
 * Fill the first size bytes of *st with h's figures, or with the calling thread's default
 * heap's when h is NULL; returns the bytes filled with figures (0 and a misuse report when h
 * is not a live heap). Any thread may ask about any live heap: the figures of a heap in use
 * by another thread are a snapshot taken while it runs.
 */
SEFER_API size_t sefer_heap_stats(struct sefer_heap *h, struct sefer_heap_stats *st,
				  size_t size);

/*
 * Moving a heap between threads (Documentation/heaps.rst). The owner calls release: the heap
 * then belongs to no thread and may not be used (allocate, realloc, collect, visit) until a
 * thread adopts it; its blocks stay valid and any thread may free them meanwhile, or destroy
 * it. adopt makes the calling thread the owner of a released heap. Each returns false, and
 * reports a misuse, when the heap is not in the state it needs (release: owned by the caller;
 * adopt: released).
 */
SEFER_API bool sefer_heap_release(struct sefer_heap *h);
SEFER_API bool sefer_heap_adopt(struct sefer_heap *h);

/* "sefer MAJOR.MINOR.PATCH" of the library in use (which may be newer than this header). */
SEFER_API const char *sefer_version(void);

/*
 * Run-time options, by name: "purge_delay_ms", "PURGE_DELAY_MS" or "SEFER_PURGE_DELAY_MS" (any
 * case); sefer(7) lists them. Values are text, as in the environment ("0", "16M", "warn",
 * "yes"). Work with or without the malloc face; mallopt() sets the same options.
 *   sefer_option_set     0, ENOENT (no such option), EINVAL (not a value of its type) or
 *                        ERANGE (outside its range); the option is unchanged on error.
 *   sefer_option_get     copies the value, NUL-terminated, into buf: 0, ENOENT, or ERANGE
 *                        when it did not fit (truncated).
 *   sefer_option_origin  where the value came from: "default", "environment",
 *                        "SEFER_OPTIONS", "API" (this call or mallopt), "secure execution"
 *                        (the environment asked for a value secure execution refused); NULL
 *                        for no such option.
 */
SEFER_API int sefer_option_set(const char *name, const char *value);
SEFER_API int sefer_option_get(const char *name, char *buf, size_t len);
SEFER_API const char *sefer_option_origin(const char *name);

/*
 * mallopt() parameters beyond glibc's <malloc.h>, honoured by the malloc face (sefer(3)):
 * Android's numbers for its purge calls, and sefer's own purge delay.
 */
#ifndef M_DECAY_TIME
#define M_DECAY_TIME (-100) /* 0: purge empty pages at once; else after the default delay */
#endif
#ifndef M_PURGE
#define M_PURGE (-101)	    /* give free memory back now (malloc_trim(0)) */
#endif
#ifndef M_PURGE_ALL
#define M_PURGE_ALL (-104)  /* the same */
#endif
#define SEFER_M_PURGE_DELAY_MS (-1000) /* SEFER_PURGE_DELAY_MS at run time, value >= 0 */

#ifdef __cplusplus
}
#endif

#endif /* SEFER_H */
