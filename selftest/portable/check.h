/* SPDX-License-Identifier: MIT */
/*
 * A minimal stand-in for the Check unit-test framework, for targets where Check is not
 * available (mingw-w64 under wine, aarch64 under qemu-user). It implements the subset of
 * Check's API that selftest/unit/ uses, so the same test sources build against either; it is
 * selected by putting selftest/portable/ first on the include path.
 *
 * Differences from Check: tests run in the runner's process, one after the other (no fork),
 * so a crashing test ends the run; timeouts are not enforced here (the make rule wraps the
 * whole run in timeout(1)). A failed assertion on the runner's thread ends the test; on any
 * other thread it is recorded and that thread carries on.
 *
 * Output: one line per test, "PASS suite/tcase/test" or "FAIL suite/tcase/test: message",
 * then "N passed, N failed".
 */
#ifndef SEFER_PORTABLE_CHECK_H
#define SEFER_PORTABLE_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct suite Suite;
typedef struct tcase TCase;
typedef struct srunner SRunner;
typedef void (*ck_test_fn)(int _i);

enum print_output { CK_SILENT, CK_MINIMAL, CK_NORMAL, CK_VERBOSE };

Suite *suite_create(const char *name);
TCase *tcase_create(const char *name);
void suite_add_tcase(Suite *s, TCase *tc);
void _tcase_add_test(TCase *tc, ck_test_fn fn, const char *name, int start, int end);
#define tcase_add_test(tc, fn) _tcase_add_test((tc), (fn), #fn, 0, 1)
/* fn(_i) for each _i in [start, end), each a test of its own (named fn:_i). */
#define tcase_add_loop_test(tc, fn, start, end) _tcase_add_test((tc), (fn), #fn, (start), (end))
void tcase_set_timeout(TCase *tc, double seconds);

SRunner *srunner_create(Suite *s);
void srunner_add_suite(SRunner *sr, Suite *s);
void srunner_run_all(SRunner *sr, enum print_output mode);
int srunner_ntests_failed(SRunner *sr);
int srunner_ntests_passed(SRunner *sr);
void srunner_free(SRunner *sr);

#if defined(_WIN32) && !defined(__clang__)
#define _ck_printf __attribute__((format(gnu_printf, 4, 5))) /* C99 stdio (mingw ANSI) */
#else
#define _ck_printf __attribute__((format(printf, 4, 5)))
#endif
/* expr: the failed expression or NULL; fmt: the message. */
void _ck_fail(const char *file, int line, const char *expr, const char *fmt, ...) _ck_printf;

#define START_TEST(name) static void name(int _i __attribute__((unused)))
#define END_TEST

#define ck_assert_msg(expr, ...)                                                                 \
	do {                                                                                       \
		if (!(expr))                                                                       \
			_ck_fail(__FILE__, __LINE__, #expr, __VA_ARGS__);                 \
	} while (0)
#define ck_assert(expr)                                                                          \
	do {                                                                                       \
		if (!(expr))                                                                       \
			_ck_fail(__FILE__, __LINE__, #expr, "%s", "");                   \
	} while (0)
#define ck_abort_msg(...) _ck_fail(__FILE__, __LINE__, NULL, __VA_ARGS__)

#define _ck_cmp(type, fmt, X, OP, Y)                                                             \
	do {                                                                                       \
		type _x = (type)(X), _y = (type)(Y);                                               \
		if (!(_x OP _y))                                                                   \
			_ck_fail(__FILE__, __LINE__, #X " " #OP " " #Y, "%s == " fmt ", %s == " fmt, \
				 #X, _x, #Y, _y);                                                 \
	} while (0)
#define ck_assert_int_eq(X, Y) _ck_cmp(long long, "%lld", X, ==, Y)
#define ck_assert_int_ne(X, Y) _ck_cmp(long long, "%lld", X, !=, Y)
#define ck_assert_uint_eq(X, Y) _ck_cmp(unsigned long long, "%llu", X, ==, Y)
#define ck_assert_uint_ne(X, Y) _ck_cmp(unsigned long long, "%llu", X, !=, Y)
#define ck_assert_uint_ge(X, Y) _ck_cmp(unsigned long long, "%llu", X, >=, Y)
#define ck_assert_uint_gt(X, Y) _ck_cmp(unsigned long long, "%llu", X, >, Y)
#define ck_assert_uint_le(X, Y) _ck_cmp(unsigned long long, "%llu", X, <=, Y)
#define ck_assert_uint_lt(X, Y) _ck_cmp(unsigned long long, "%llu", X, <, Y)
#define _ck_ptr(X, OP, Y)                                                                        \
	do {                                                                                       \
		const void *_x = (const void *)(X), *_y = (const void *)(Y);                       \
		if (!(_x OP _y))                                                                   \
			_ck_fail(__FILE__, __LINE__, #X " " #OP " " #Y, "%s == %#llx, %s == %#llx",  \
				 #X, (unsigned long long)(uintptr_t)_x, #Y,                         \
				 (unsigned long long)(uintptr_t)_y);                                \
	} while (0)
#define ck_assert_ptr_eq(X, Y) _ck_ptr(X, ==, Y)
#define ck_assert_ptr_ne(X, Y) _ck_ptr(X, !=, Y)
#define ck_assert_ptr_null(X) _ck_ptr(X, ==, NULL)
#define ck_assert_ptr_nonnull(X) _ck_ptr(X, !=, NULL)
#define ck_assert_str_eq(X, Y)                                                                     \
	do {                                                                                       \
		const char *_x = (X), *_y = (Y);                                                   \
		if (!_x || !_y || strcmp(_x, _y))                                                  \
			_ck_fail(__FILE__, __LINE__, #X " == " #Y, "%s == \"%s\", %s == \"%s\"", #X, \
				 _x ? _x : "(null)", #Y, _y ? _y : "(null)");                       \
	} while (0)

#endif
