// SPDX-License-Identifier: MIT
/* The unit-test runner: every suite, Check's summary line, exit status = failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "generated/policy_tests.h" /* SEFER_POLICY_TESTS */
#include "unit.h"

/* Each policy's suite, beside its policy (policies/<name>/test_<name>.c) */
#define POLICY_SUITE(name) { #name, name##_suite },

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "bins", bins_suite },		{ "segment", segment_suite },
	{ "api", api_suite },		{ "options", options_suite },
	{ "threads", threads_suite },	{ "process", process_suite },
	{ "decommit", decommit_suite },
	{ "pages", pages_suite },	{ "generations", generations_suite },
	{ "hardening", hardening_suite }, { "heaps", heaps_suite },
	{ "os", os_suite },		{ "remap_undo", remap_undo_suite },
	{ "stats", stats_suite },
	{ "fault", fault_suite },
	{ "debug", debug_suite },
	SEFER_POLICY_TESTS(POLICY_SUITE)
};

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	unit_self_path = argv[0];
	if (argc == 3 && !strcmp(argv[1], "--child")) {
		int rc = fault_child(argv[2]);

		return rc >= 0 ? rc : child_main(argv[2]);
	}
	unit_fresh_state_save();
	sr = srunner_create(NULL);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		const char *skip = getenv("SEFER_TEST_SKIP");

		if (skip && strstr(skip, suites[i].name)) {
			printf("skipping suite %s in this build (SEFER_TEST_SKIP)\n", suites[i].name);
			continue;
		}
		/* ASan's shadow does not fit the process suite's RLIMIT_AS, and the poisoning
		 * reports its deliberate write into a free block before sefer can (check-asan
		 * skips it too) */
		if (IS_ENABLED(CONFIG_SANITIZE_ADDRESS) && !strcmp(suites[i].name, "process")) {
			printf("skipping suite process: CONFIG_SANITIZE_ADDRESS=y\n");
			continue;
		}
		srunner_add_suite(sr, suites[i].make());
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
