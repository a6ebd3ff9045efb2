/* SPDX-License-Identifier: MIT */
/* Build-time constants derived from Kconfig, and small compiler helpers used everywhere. */
#ifndef SEFER_CORE_CONFIG_H
#define SEFER_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sefer/compiler.h"

/* IS_ENABLED(CONFIG_FOO): 1 when CONFIG_FOO is defined to 1 by autoconf.h, else 0. */
#define __SEFER_ARG_PLACEHOLDER_1 0,
#define __sefer_take_second(ignored, val, ...) val
#define __sefer_is_defined(x) ___sefer_is_defined(x)
#define ___sefer_is_defined(val) ____sefer_is_defined(__SEFER_ARG_PLACEHOLDER_##val)
#define ____sefer_is_defined(arg1_or_junk) __sefer_take_second(arg1_or_junk 1, 0, 0)
#define IS_ENABLED(option) __sefer_is_defined(option)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define noinline __attribute__((__noinline__))
#define __cold __attribute__((__cold__)) __attribute__((__noinline__))
#define always_inline inline __attribute__((always_inline))
#define CACHELINE 64
/*
 * x, which the compiler may no longer treat as a constant: a loop that fills memory with it is
 * vectorized from a register, not from a 16-byte constant in .rodata. Paths every process runs
 * (init, a fresh segment, a thread's exit) read nothing in .rodata: one read there maps the
 * whole read-only segment (fault-around), the unwind tables with it (decommit.rst, "Peak RSS
 * of the small rows").
 */
#define opaque_value(x)                        \
	({                                     \
		__typeof__(x) __v = (x);       \
		__asm__("" : "+r"(__v));       \
		__v;                           \
	})
#define cacheline_aligned __attribute__((aligned(CACHELINE)))
/*
 * The fast-path entry points (malloc, free and their twins) start on a cache line: where they
 * fall otherwise depends on the size of unrelated code before them, and a free that straddled
 * three lines instead of two cost 16-byte bulk churn 7% after a slow-path change elsewhere in
 * the library.
 */
#define hot_entry __attribute__((aligned(CACHELINE)))
/*
 * Fetch p's cache line to write it soon: a line another core wrote last, read and then written,
 * crosses once instead of coming shared and being taken over at the write. On x86-64 it is
 * PREFETCHW whatever -march says: gcc emits it for __builtin_prefetch(p, 1) only with -mprfchw,
 * and otherwise a PREFETCHT0, which fetches the line shared: the cross-thread free (read the
 * block's mark, then write it and the link) then took the line twice. With this and a shorter
 * batch check (core/free.c) xfer 64 B 1:1 went from 1.27x the time of a build without
 * CONFIG_DEBUG_DOUBLE_FREE to 1.06x-1.17x in three runs (Documentation/benchmarks.rst).
 * Every x86-64 processor executes the instruction (those before PREFETCHW's CPUID bit, Intel's
 * up to Haswell, as a no-op). A plain prefetch elsewhere.
 */
#if defined(__x86_64__) && !defined(__PRFCHW__)
#define prefetch_for_write(p) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p)))
#else
#define prefetch_for_write(p) __builtin_prefetch((p), 1)
#endif
/* sefer_vformat is C99 printf (%zu, %llu), not the msvcrt one mingw's "printf" checks for. */
#if defined(_WIN32) && !defined(__clang__)
#define __sefer_printf(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define __sefer_printf(f, a) __attribute__((format(printf, f, a)))
#endif
#define SEGMENT_SHIFT CONFIG_SEGMENT_SHIFT
#define SEGMENT_SIZE ((size_t)1 << SEGMENT_SHIFT)
#define SEGMENT_MASK (SEGMENT_SIZE - 1)
#define SPAGE_SHIFT CONFIG_PAGE_SHIFT /* a sefer page, not the OS page */
#define SPAGE_SIZE ((size_t)1 << SPAGE_SHIFT)
#define PAGES_PER_SEGMENT (SEGMENT_SIZE >> SPAGE_SHIFT)
#define GRANULE_SHIFT 4 /* every block is 16-byte aligned */
#define GRANULE ((size_t)1 << GRANULE_SHIFT)

#if CONFIG_SEGMENT_SHIFT - CONFIG_PAGE_SHIFT < 3 || CONFIG_SEGMENT_SHIFT - CONFIG_PAGE_SHIFT > 6
#error "CONFIG_SEGMENT_SHIFT - CONFIG_PAGE_SHIFT must be 3..6 (8 to 64 pages per segment)"
#endif

static inline size_t align_up(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

static inline bool is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

#endif
