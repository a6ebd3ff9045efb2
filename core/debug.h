/* SPDX-License-Identifier: MIT */
/*
 * Assertions of the core's invariants (CONFIG_DEBUG_CORE, Documentation/debugging.rst).
 *
 *   sefer_assert(cond)            a precondition or invariant the code relies on, O(1)
 *   sefer_assert_expensive(cond)  one whose check walks a list or a bitmap (O(n)); it runs
 *                                 only with CONFIG_DEBUG_CORE_EXPENSIVE as well
 *
 * A failed assertion is reported through the library's error path (core/error.c) as
 * "sefer: core check failed: <file>:<line>: <cond>" and aborts. Without the option each
 * compiles to nothing: the condition is only type-checked (inside sizeof, never evaluated), so
 * it cannot rot and costs no instruction.
 */
#ifndef SEFER_CORE_DEBUG_H
#define SEFER_CORE_DEBUG_H

#include "core/config.h"

#if IS_ENABLED(CONFIG_DEBUG_CORE)
/* Report "core check failed" at file:line with what was checked, then abort. */
SEFER_INTERNAL void sefer__debug_failed(const char *file, int line, const char *what) __cold
	__attribute__((noreturn));
#define sefer_assert(cond) \
	(likely(cond) ? (void)0 : sefer__debug_failed(__FILE__, __LINE__, #cond))
#else
#define sefer_assert(cond) ((void)sizeof(!(cond)))
#endif

#if IS_ENABLED(CONFIG_DEBUG_CORE_EXPENSIVE)
#define sefer_assert_expensive(cond) sefer_assert(cond)
#else
#define sefer_assert_expensive(cond) ((void)sizeof(!(cond)))
#endif

#endif
