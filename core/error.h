/* SPDX-License-Identifier: MIT */
/* Messages and error reports, formatted without allocating (sefer may be malloc itself). */
#ifndef SEFER_CORE_ERROR_H
#define SEFER_CORE_ERROR_H

#include <stdarg.h>

#include "core/config.h"

/*
 * printf subset: %s %c %d %u %x %p %zu %zx %lu %llu %ld %lld %lx %llx %%. Writes "sefer: " and
 * the message to the error stream in one write.
 */
SEFER_INTERNAL void sefer__message(const char *fmt, ...) __sefer_printf(1, 2);
SEFER_INTERNAL void sefer__vformat(char *buf, size_t len, const char *fmt, va_list ap);
SEFER_INTERNAL void sefer__format(char *buf, size_t len, const char *fmt, ...) __sefer_printf(3, 4);

/*
 * A heap misuse by the program (double free, invalid pointer): report it with the address and
 * the reason, then abort unless SEFER_ON_ERROR=warn. With warn, the call that detected it
 * returns without touching the heap.
 */
SEFER_INTERNAL void sefer__report_error(const char *what, const void *p, const char *reason) __cold;

/* An internal invariant was found broken (heap corruption): report and abort. */
SEFER_INTERNAL void sefer__report_corruption(const char *what, const void *p) __cold
	__attribute__((noreturn));

#endif
