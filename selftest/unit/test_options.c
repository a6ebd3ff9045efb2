// SPDX-License-Identifier: MIT
/* The option table, its parsers, the secure rules and sefer_option_set/get/origin. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#include "core/options.h"
#include "sefer.h"
#include "unit.h"

START_TEST(sizes)
{
	uint64_t v;

	ck_assert(sefer__parse_size("0", &v) == PARSE_OK && v == 0);
	ck_assert(sefer__parse_size("4096", &v) == PARSE_OK && v == 4096);
	ck_assert(sefer__parse_size("512K", &v) == PARSE_OK && v == 512ULL << 10);
	ck_assert(sefer__parse_size("512M", &v) == PARSE_OK && v == 512ULL << 20);
	ck_assert(sefer__parse_size("2g", &v) == PARSE_OK && v == 2ULL << 30);
	ck_assert(sefer__parse_size("3T", &v) == PARSE_OK && v == 3ULL << 40);
	ck_assert(sefer__parse_size("64MiB", &v) == PARSE_OK && v == 64ULL << 20);
	ck_assert(sefer__parse_size("64MB", &v) == PARSE_OK && v == 64ULL << 20);
	ck_assert(sefer__parse_size("", &v) == PARSE_BAD);
	ck_assert(sefer__parse_size("M", &v) == PARSE_BAD);
	ck_assert(sefer__parse_size("12X", &v) == PARSE_BAD);
	ck_assert(sefer__parse_size("12KK", &v) == PARSE_BAD);
	ck_assert(sefer__parse_size("-1", &v) == PARSE_BAD);
	/* too large is out of range, not malformed */
	ck_assert(sefer__parse_size("99999999999999999999", &v) == PARSE_RANGE);
	ck_assert(sefer__parse_size("17179869184G", &v) == PARSE_RANGE); /* overflows 64 bits */
	ck_assert(sefer__parse_size("1234567890123456789012345678901234567890", &v) ==
		  PARSE_RANGE);
}
END_TEST

START_TEST(numbers)
{
	uint64_t v;

	ck_assert(sefer__parse_uint("0", &v) == PARSE_OK && v == 0);
	ck_assert(sefer__parse_uint("18446744073709551615", &v) == PARSE_OK && v == UINT64_MAX);
	ck_assert(sefer__parse_uint("18446744073709551616", &v) == PARSE_RANGE);
	ck_assert(sefer__parse_uint("99999999999999999999", &v) == PARSE_RANGE);
	ck_assert(sefer__parse_uint("99999999999999999999x", &v) == PARSE_BAD);
	ck_assert(sefer__parse_uint("1.5", &v) == PARSE_BAD);
	ck_assert(sefer__parse_uint(" 1", &v) == PARSE_BAD);
	ck_assert(sefer__parse_uint("", &v) == PARSE_BAD);
}
END_TEST

START_TEST(booleans)
{
	static const char *const yes[] = { "1", "yes", "true", "on", "YES", "True", "ON" };
	static const char *const no[] = { "0", "no", "false", "off", "No", "FALSE", "Off" };
	static const char *const bad[] = { "", "2", "y", "n", "enable", "yess", "o" };
	bool b;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		b = false;
		ck_assert_msg(sefer__parse_bool(yes[i], &b) == PARSE_OK && b, "%s", yes[i]);
		ck_assert_msg(sefer__parse_bool(no[i], &b) == PARSE_OK && !b, "%s", no[i]);
		ck_assert_msg(sefer__parse_bool(bad[i], &b) == PARSE_BAD, "%s", bad[i]);
	}
}
END_TEST

START_TEST(edit_distance)
{
	ck_assert_uint_eq(sefer__edit_distance("SHOW_STATS", "SHOW_STATS"), 0);
	ck_assert_uint_eq(sefer__edit_distance("SHOW_STAT", "SHOW_STATS"), 1);
	ck_assert_uint_eq(sefer__edit_distance("show_stats", "SHOW_STATS"), 0);
	ck_assert_uint_eq(sefer__edit_distance("PURGE_DELAY", "PURGE_DELAY_MS"), 3);
	ck_assert_uint_eq(sefer__edit_distance("VERBSOE", "VERBOSE"), 2);
	ck_assert_uint_eq(sefer__edit_distance("", "ABC"), 3);
}
END_TEST

static unsigned checked;

/* Every entry is complete and its default is a value it accepts. */
static bool entry_ok(struct sefer_option *o, const void *arg)
{
	char buf[32];

	(void)arg;
	checked++;
	for (const char *c = o->name; *c; c++)
		ck_assert_msg((*c >= 'A' && *c <= 'Z') || *c == '_' || (*c >= '0' && *c <= '9'),
			      "%s: not an upper-case name", o->name);
	ck_assert_msg(o->help && strlen(o->help) > 40, "%s: no help", o->name);
	ck_assert_msg(o->value.b, "%s: no value", o->name);
	ck_assert_msg(o->type != OPT_CHOICE || (o->choices && o->choices[0]), "%s", o->name);
	if (o->type == OPT_UINT || o->type == OPT_SIZE)
		ck_assert_msg(o->min <= o->def && o->def <= o->max, "%s: default out of range",
			      o->name);
	ck_assert_msg(o->type != OPT_BOOL || o->secure == OPT_SECURE_IGNORED,
		      "%s: a boolean prints; secure execution must ignore it", o->name);
	ck_assert_ptr_eq(sefer__option_find(o->name), o);
	ck_assert(sefer__option_format(o, buf, sizeof(buf)) > 0);
	return false;
}

START_TEST(table)
{
	sefer_free(sefer_malloc(1)); /* process init: the defaults applied */
	checked = 0;
	ck_assert_ptr_null(sefer__options_visit(entry_ok, NULL));
	ck_assert_uint_ge(checked, 5);
	ck_assert_ptr_nonnull(sefer__option_find("SEFER_PURGE_DELAY_MS"));
	ck_assert_ptr_nonnull(sefer__option_find("purge_delay_ms"));
	ck_assert_ptr_null(sefer__option_find("PURGE_DELAY"));
	ck_assert_ptr_null(sefer__option_find("SEFER_"));
}
END_TEST

/* sefer_option_set/get/origin: a round trip per type, and each error. */
START_TEST(api_round_trip)
{
	char buf[32], was[32];

	ck_assert_int_eq(sefer_option_get("purge_delay_ms", was, sizeof(was)), 0);
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", "125"), 0);
	ck_assert_int_eq(sefer_option_get("SEFER_PURGE_DELAY_MS", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "125");
	ck_assert_uint_eq(sefer__opt.purge_delay_ms, 125);
	ck_assert_str_eq(sefer_option_origin("purge_delay_ms"), "API");
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", "soon"), EINVAL);
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", "99999999999999999999"), ERANGE);
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", "4611686018427387905"), ERANGE);
	ck_assert_uint_eq(sefer__opt.purge_delay_ms, 125); /* unchanged by the errors */
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", was), 0);

	ck_assert_int_eq(sefer_option_set("calloc_prefault", "2M"), 0);
	ck_assert_int_eq(sefer_option_get("calloc_prefault", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2M");
	ck_assert_uint_eq(sefer__opt.calloc_prefault, 2 << 20);
	ck_assert_int_eq(sefer_option_set("calloc_prefault", "1000"), 0);
	ck_assert_int_eq(sefer_option_get("calloc_prefault", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1000");

	ck_assert_int_eq(sefer_option_set("on_error", "warn"), 0);
	ck_assert_int_eq(sefer_option_get("on_error", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "warn");
	ck_assert_uint_eq(sefer__opt.on_error, ON_ERROR_WARN);
	ck_assert_int_eq(sefer_option_set("on_error", "maybe"), EINVAL);
	ck_assert_int_eq(sefer_option_set("on_error", "abort"), 0);
	ck_assert_uint_eq(sefer__opt.on_error, ON_ERROR_ABORT);

	ck_assert_int_eq(sefer_option_set("show_stats", "on"), 0);
	ck_assert(sefer__opt.show_stats);
	ck_assert_int_eq(sefer_option_get("show_stats", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1");
	ck_assert_int_eq(sefer_option_set("show_stats", "off"), 0);
	ck_assert(!sefer__opt.show_stats);

	ck_assert_int_eq(sefer_option_set("show_stat", "1"), ENOENT);
	ck_assert_int_eq(sefer_option_get("show_stat", buf, sizeof(buf)), ENOENT);
	ck_assert_ptr_null(sefer_option_origin("show_stat"));
	ck_assert_int_eq(sefer_option_set(NULL, "1"), ENOENT);
	ck_assert_int_eq(sefer_option_set("verbose", NULL), EINVAL);
	/* too small a buffer: truncated, terminated, ERANGE */
	ck_assert_int_eq(sefer_option_get("on_error", buf, 3), ERANGE);
	ck_assert_str_eq(buf, "ab");
}
END_TEST

#ifndef _WIN32 /* stderr captured through a pipe */
/* Applies text to option name from the environment; returns what it printed. */
static const char *apply_env(const char *name, const char *text, int *rc)
{
	static char msg[512];
	int fd[2], saved = dup(2);
	ssize_t n;

	ck_assert_int_eq(pipe(fd), 0);
	dup2(fd[1], 2);
	*rc = sefer__option_apply(sefer__option_find(name), text, ORIGIN_ENV);
	dup2(saved, 2);
	close(saved);
	close(fd[1]);
	n = read(fd[0], msg, sizeof(msg) - 1);
	close(fd[0]);
	msg[n > 0 ? n : 0] = '\0';
	return msg;
}

/* The messages: a bad value names the type, a number out of range names the range. */
START_TEST(env_messages)
{
	struct sefer_option *o = sefer__option_find("PURGE_DELAY_MS");
	uint64_t was = sefer__opt.purge_delay_ms;
	enum option_origin from = o->origin;
	const char *m;
	int rc;

	m = apply_env("PURGE_DELAY_MS", "99999999999999999999", &rc);
	ck_assert_int_eq(rc, ERANGE);
	ck_assert_msg(strstr(m, "value '99999999999999999999' for SEFER_PURGE_DELAY_MS is out of "
				"range (0 to 4611686018427387904)"), "%s", m);
	m = apply_env("PURGE_DELAY_MS", "soon", &rc);
	ck_assert_int_eq(rc, EINVAL);
	ck_assert_msg(strstr(m, "bad value 'soon' for SEFER_PURGE_DELAY_MS (expected a whole "
				"number)"), "%s", m);
	ck_assert_uint_eq(sefer__opt.purge_delay_ms, was);
	m = apply_env("SHOW_STATS", "maybe", &rc);
	ck_assert_msg(strstr(m, "(expected 0, 1, 2 or json (yes, true, on: 1; no, false, off: 0))"),
		      "%s", m);
	m = apply_env("ON_ERROR", "maybe", &rc);
	ck_assert_msg(strstr(m, "(expected abort or warn)"), "%s", m);
	m = apply_env("CALLOC_PREFAULT", "17179869184G", &rc);
	ck_assert_msg(strstr(m, "out of range (0 to 18446744073709551615)"), "%s", m);
	m = apply_env("SHOW_STATS", "yes", &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(m, "");
	ck_assert(sefer__opt.show_stats);
	ck_assert_str_eq(sefer_option_origin("show_stats"), "environment");
	sefer__option_apply(sefer__option_find("SHOW_STATS"), "no", ORIGIN_API);
	o->origin = from;
}
END_TEST

/* Secure execution: booleans ignored, numbers and choices only tighten, nothing printed. */
START_TEST(secure)
{
	struct sefer_option *delay = sefer__option_find("PURGE_DELAY_MS");
	bool was = sefer__opt.secure;
	uint64_t delay_was = sefer__opt.purge_delay_ms;
	const char *m;
	int rc;

	sefer__opt.secure = true;
	sefer__opt.purge_delay_ms = 10;
	m = apply_env("VERBOSE", "1", &rc);
	ck_assert(!sefer__opt.verbose && !*m);
	ck_assert_str_eq(sefer_option_origin("verbose"), "secure execution");
	m = apply_env("PURGE_DELAY_MS", "50", &rc);
	ck_assert(sefer__opt.purge_delay_ms == 10 && !*m);
	ck_assert_str_eq(sefer_option_origin("purge_delay_ms"), "secure execution");
	m = apply_env("PURGE_DELAY_MS", "soon", &rc);
	ck_assert(sefer__opt.purge_delay_ms == 10 && !*m && rc == EINVAL);
	m = apply_env("PURGE_DELAY_MS", "99999999999999999999", &rc);
	ck_assert(sefer__opt.purge_delay_ms == 10 && !*m && rc == ERANGE);
	m = apply_env("PURGE_DELAY_MS", "3", &rc);
	ck_assert(sefer__opt.purge_delay_ms == 3 && !*m);
	ck_assert_str_eq(sefer_option_origin("purge_delay_ms"), "environment");
	m = apply_env("ON_ERROR", "warn", &rc);
	ck_assert(sefer__opt.on_error == ON_ERROR_ABORT && !*m);
	/* SEFER_OPTIONS is the environment too */
	ck_assert_int_eq(sefer__option_apply(delay, "40", ORIGIN_OPTIONS), 0);
	ck_assert_uint_eq(sefer__opt.purge_delay_ms, 3);
	/* the program's own call is not the caller's environment */
	ck_assert_int_eq(sefer_option_set("purge_delay_ms", "40"), 0);
	ck_assert_uint_eq(sefer__opt.purge_delay_ms, 40);
	sefer__opt.secure = false;
	m = apply_env("PURGE_DELAY_MS", "soon", &rc);
	ck_assert(*m);
	m = apply_env("PURGE_DELAY_MS", "50", &rc);
	ck_assert(sefer__opt.purge_delay_ms == 50 && !*m);
	sefer__opt.secure = was;
	sefer__opt.purge_delay_ms = delay_was;
	delay->origin = ORIGIN_DEFAULT;
	sefer__option_find("VERBOSE")->origin = ORIGIN_DEFAULT;
}
END_TEST
#endif

Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, booleans);
	tcase_add_test(tc, edit_distance);
	tcase_add_test(tc, table);
	tcase_add_test(tc, api_round_trip);
#ifndef _WIN32
	tcase_add_test(tc, env_messages);
	tcase_add_test(tc, secure);
#endif
	suite_add_tcase(s, tc);
	return s;
}
