// SPDX-License-Identifier: MIT
/*
 * persist-test: the Check suites of the persist face. Environment: PERSIST_TMP (directory for
 * store files, default /tmp), PERSIST_KILLS (kill-loop crashes, default 200), PERSIST_SIMS
 * (simulated crashes per allocator, default 150), PERSIST_SUITE (run one suite only).
 *
 * persist-test make-crashed FILE [N]: leave FILE as a power cut leaves a store with N (default
 * 16) blocks, for the sefer-pstore tests (selftest/persist/cli-test.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests.h"

const char *const kind_name[SEFER_PALLOC_KINDS] = { "segregated", "first-fit", "best-fit" };

const char *tpath(const char *tag)
{
	static char buf[512];
	const char *dir = getenv("PERSIST_TMP");

	snprintf(buf, sizeof(buf), "%s/sefer-ptest-%d-%s.pst", dir ? dir : "/tmp", (int)getpid(),
		 tag);
	unlink(buf);
	return buf;
}

long tenv(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? atol(v) : def;
}

int main(int argc, char **argv)
{
	const char *only = getenv("PERSIST_SUITE");
	SRunner *sr;
	int failed;

	if (argc >= 3 && !strcmp(argv[1], "make-crashed"))
		return make_crashed_store(argv[2], argc > 3 ? (unsigned)atoi(argv[3]) : 16, NULL) ?
			       EXIT_FAILURE : EXIT_SUCCESS;
	sr = srunner_create(NULL);
	if (!only || !strcmp(only, "units"))
		srunner_add_suite(sr, units_suite());
	if (!only || !strcmp(only, "badfile"))
		srunner_add_suite(sr, badfile_suite());
	if (!only || !strcmp(only, "crash"))
		srunner_add_suite(sr, crash_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
