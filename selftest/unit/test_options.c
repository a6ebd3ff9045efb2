// SPDX-License-Identifier: MIT
/* The option parsers (SEFER_* values). */
#include "core/options.h"
#include "unit.h"

START_TEST(sizes)
{
	uint64_t v;

	ck_assert(parse_size("0", &v) && v == 0);
	ck_assert(parse_size("4096", &v) && v == 4096);
	ck_assert(parse_size("512K", &v) && v == 512ULL << 10);
	ck_assert(parse_size("512M", &v) && v == 512ULL << 20);
	ck_assert(parse_size("2g", &v) && v == 2ULL << 30);
	ck_assert(parse_size("3T", &v) && v == 3ULL << 40);
	ck_assert(parse_size("64MiB", &v) && v == 64ULL << 20);
	ck_assert(parse_size("64MB", &v) && v == 64ULL << 20);
	ck_assert(!parse_size("", &v));
	ck_assert(!parse_size("M", &v));
	ck_assert(!parse_size("12X", &v));
	ck_assert(!parse_size("12KK", &v));
	ck_assert(!parse_size("-1", &v));
	ck_assert(!parse_size("99999999999999999999", &v));
	ck_assert(!parse_size("17179869184G", &v)); /* overflows 64 bits */
}
END_TEST

START_TEST(numbers)
{
	uint64_t v;

	ck_assert(parse_uint("0", &v) && v == 0);
	ck_assert(parse_uint("18446744073709551609", &v));
	ck_assert(!parse_uint("18446744073709551616", &v));
	ck_assert(!parse_uint("1.5", &v));
	ck_assert(!parse_uint(" 1", &v));
	ck_assert(!parse_uint("", &v));
}
END_TEST

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, numbers);
	suite_add_tcase(s, tc);
	return s;
}
