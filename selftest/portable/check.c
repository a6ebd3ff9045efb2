// SPDX-License-Identifier: MIT
/*
 * The minimal Check stand-in (check.h): suites hold test cases, test cases hold tests, the
 * runner calls each test in turn and prints its name and result. Lists are fixed arrays:
 * the runner itself does not need malloc (it is linked next to the allocator under test).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MAX_SUITES 16
#define MAX_TCASES 8
#define MAX_TESTS 64

struct test {
	ck_test_fn fn;
	const char *name;
	int start, end;		/* loop tests: fn(i) for i in [start, end) */
};

struct tcase {
	const char *name;
	int ntests;
	struct test tests[MAX_TESTS];
};

struct suite {
	const char *name;
	int ntcases;
	struct tcase *tcases[MAX_TCASES];
};

struct srunner {
	int nsuites, passed, failed;
	struct suite *suites[MAX_SUITES];
};

static struct suite suite_pool[MAX_SUITES];
static struct tcase tcase_pool[MAX_SUITES * MAX_TCASES];
static struct srunner runner;
static int nsuite_pool, ntcase_pool;

/* The test now running, where a failure on the runner's thread jumps back to. */
static _Thread_local int on_runner;
static jmp_buf test_env;
static atomic_int test_failed;

static void too_many(const char *what)
{
	fprintf(stderr, "check (portable): too many %s\n", what);
	exit(2);
}

Suite *suite_create(const char *name)
{
	if (nsuite_pool == MAX_SUITES)
		too_many("suites");
	suite_pool[nsuite_pool].name = name;
	return &suite_pool[nsuite_pool++];
}

TCase *tcase_create(const char *name)
{
	if (ntcase_pool == MAX_SUITES * MAX_TCASES)
		too_many("test cases");
	tcase_pool[ntcase_pool].name = name;
	return &tcase_pool[ntcase_pool++];
}

void suite_add_tcase(Suite *s, TCase *tc)
{
	if (s->ntcases == MAX_TCASES)
		too_many("test cases in a suite");
	s->tcases[s->ntcases++] = tc;
}

void _tcase_add_test(TCase *tc, ck_test_fn fn, const char *name, int start, int end)
{
	if (tc->ntests == MAX_TESTS)
		too_many("tests in a test case");
	tc->tests[tc->ntests].fn = fn;
	tc->tests[tc->ntests].start = start;
	tc->tests[tc->ntests].end = end;
	tc->tests[tc->ntests++].name = name;
}

void tcase_set_timeout(TCase *tc, double seconds)
{
	(void)tc;
	(void)seconds;
}

SRunner *srunner_create(Suite *s)
{
	if (s)
		srunner_add_suite(&runner, s);
	return &runner;
}

void srunner_add_suite(SRunner *sr, Suite *s)
{
	if (sr->nsuites == MAX_SUITES)
		too_many("suites in the runner");
	sr->suites[sr->nsuites++] = s;
}

void _ck_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "  %s:%d: ", file, line);
	if (expr)
		fprintf(stdout, "Assertion '%s' failed: ", expr);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	atomic_store(&test_failed, 1);
	if (on_runner)
		longjmp(test_env, 1);
}

/* SEFER_TEST_SKIP: space/comma separated names of suites or tests to leave out. */
static int skipped(const char *name)
{
	const char *skip = getenv("SEFER_TEST_SKIP");
	size_t n = strlen(name);

	for (const char *p = skip; p && (p = strstr(p, name)); p += n) {
		if ((p == skip || strchr(" ,", p[-1])) && (p[n] == '\0' || strchr(" ,", p[n])))
			return 1;
	}
	return 0;
}

/* Run one test; true if it failed. Its own frame, so nothing live is clobbered by longjmp. */
static bool run_one(struct test *te, int i)
{
	atomic_store(&test_failed, 0);
	on_runner = 1;
	if (!setjmp(test_env))
		te->fn(i);
	on_runner = 0;
	return atomic_load(&test_failed);
}

void srunner_run_all(SRunner *sr, enum print_output mode)
{
	(void)mode;
	for (int s = 0; s < sr->nsuites; s++) {
		struct suite *su = sr->suites[s];

		if (skipped(su->name)) {
			printf("SKIP %s (SEFER_TEST_SKIP)\n", su->name);
			continue;
		}
		for (int c = 0; c < su->ntcases; c++) {
			struct tcase *tc = su->tcases[c];

			for (int t = 0; t < tc->ntests; t++) {
				struct test *te = &tc->tests[t];

				if (skipped(te->name)) {
					printf("SKIP %s/%s/%s (SEFER_TEST_SKIP)\n", su->name, tc->name,
					       te->name);
					continue;
				}
				for (int i = te->start; i < te->end; i++) {
					char name[128];

					snprintf(name, sizeof(name), te->end - te->start > 1 ? "%s:%d" :
						 "%s", te->name, i);
					printf("RUN  %s/%s/%s\n", su->name, tc->name, name);
					fflush(stdout);
					if (run_one(te, i)) {
						sr->failed++;
						printf("FAIL %s/%s/%s\n", su->name, tc->name, name);
					} else {
						sr->passed++;
						printf("PASS %s/%s/%s\n", su->name, tc->name, name);
					}
					fflush(stdout);
				}
			}
		}
	}
	printf("%d passed, %d failed\n", sr->passed, sr->failed);
	fflush(stdout);
}

int srunner_ntests_failed(SRunner *sr)
{
	return sr->failed;
}

int srunner_ntests_passed(SRunner *sr)
{
	return sr->passed;
}

void srunner_free(SRunner *sr)
{
	(void)sr;
}
