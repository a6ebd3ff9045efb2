// SPDX-License-Identifier: MIT
/* The option parsers (SEFER_* values). */
#include <stdlib.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#include "core/options.h"
#include "unit.h"

START_TEST(sizes)
{
	uint64_t v;

	ck_assert(sefer__parse_size("0", &v) && v == 0);
	ck_assert(sefer__parse_size("4096", &v) && v == 4096);
	ck_assert(sefer__parse_size("512K", &v) && v == 512ULL << 10);
	ck_assert(sefer__parse_size("512M", &v) && v == 512ULL << 20);
	ck_assert(sefer__parse_size("2g", &v) && v == 2ULL << 30);
	ck_assert(sefer__parse_size("3T", &v) && v == 3ULL << 40);
	ck_assert(sefer__parse_size("64MiB", &v) && v == 64ULL << 20);
	ck_assert(sefer__parse_size("64MB", &v) && v == 64ULL << 20);
	ck_assert(!sefer__parse_size("", &v));
	ck_assert(!sefer__parse_size("M", &v));
	ck_assert(!sefer__parse_size("12X", &v));
	ck_assert(!sefer__parse_size("12KK", &v));
	ck_assert(!sefer__parse_size("-1", &v));
	ck_assert(!sefer__parse_size("99999999999999999999", &v));
	ck_assert(!sefer__parse_size("17179869184G", &v)); /* overflows 64 bits */
}
END_TEST

START_TEST(numbers)
{
	uint64_t v;

	ck_assert(sefer__parse_uint("0", &v) && v == 0);
	ck_assert(sefer__parse_uint("18446744073709551609", &v));
	ck_assert(!sefer__parse_uint("18446744073709551616", &v));
	ck_assert(!sefer__parse_uint("1.5", &v));
	ck_assert(!sefer__parse_uint(" 1", &v));
	ck_assert(!sefer__parse_uint("", &v));
}
END_TEST

#ifndef _WIN32	/* no secure execution there (no sefer_os.secure), nor setenv */
/* Bytes option_uint wrote to stderr while reading SEFER_UNIT_N=val into *v. */
static ssize_t read_uint(const char *val, uint64_t *v, bool *taken)
{
	int fd[2], saved = dup(2);
	char msg[256];
	ssize_t n;

	ck_assert_int_eq(pipe(fd), 0);
	dup2(fd[1], 2);
	setenv("SEFER_UNIT_N", val, 1);
	*taken = sefer__option_uint("UNIT_N", v);
	unsetenv("SEFER_UNIT_N");
	dup2(saved, 2);
	close(saved);
	close(fd[1]);
	n = read(fd[0], msg, sizeof(msg));
	close(fd[0]);
	return n;
}

/* Secure execution: booleans ignored, numbers may only go down, bad values are not named. */
START_TEST(secure)
{
	bool was = sefer__opt.secure, b = false, taken;
	uint64_t v = 10;

	sefer__opt.secure = true;
	setenv("SEFER_UNIT_B", "1", 1);
	ck_assert(!sefer__option_bool("UNIT_B", &b) && !b);
	unsetenv("SEFER_UNIT_B");
	ck_assert_int_eq(read_uint("50", &v, &taken), 0);
	ck_assert(!taken && v == 10);
	ck_assert_int_eq(read_uint("soon", &v, &taken), 0);
	ck_assert(!taken && v == 10);
	ck_assert_int_eq(read_uint("3", &v, &taken), 0);
	ck_assert(taken && v == 3);
	sefer__opt.secure = false;
	ck_assert(read_uint("soon", &v, &taken) > 0);
	ck_assert_int_eq(read_uint("50", &v, &taken), 0);
	ck_assert(taken && v == 50);
	sefer__opt.secure = was;
}
END_TEST
#endif

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, numbers);
#ifndef _WIN32
	tcase_add_test(tc, secure);
#endif
	suite_add_tcase(s, tc);
	return s;
}
