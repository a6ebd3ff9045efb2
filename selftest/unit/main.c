// SPDX-License-Identifier: MIT
/* The unit-test runner: every suite, Check's summary line, exit status = failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

static const char *self_path;

size_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, rss = 0;

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (size_t)sysconf(_SC_PAGESIZE);
}

int run_child(const char *mode, const char *const *env, char *buf, size_t len)
{
	int pfd[2], status = -1;
	pid_t pid;
	size_t got = 0;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		for (; env && *env; env++)
			putenv((char *)*env);
		execl(self_path, self_path, "--child", mode, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t r = read(pfd[0], buf + got, len - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
		if (got >= len - 1)
			break;
	}
	buf[got] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return status;
}

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "bins", bins_suite },		{ "segment", segment_suite },
	{ "api", api_suite },		{ "options", options_suite },
	{ "threads", threads_suite },	{ "process", process_suite },
	{ "large_cache", large_cache_suite }, { "numa", numa_suite },
	{ "decommit", decommit_suite }, { "fastbin", fastbin_suite },
};

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	self_path = argv[0];
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2]);
	sr = srunner_create(NULL);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		const char *skip = getenv("SEFER_TEST_SKIP");

		if (skip && strstr(skip, suites[i].name)) {
			printf("skipping suite %s in this build (SEFER_TEST_SKIP)\n", suites[i].name);
			continue;
		}
		srunner_add_suite(sr, suites[i].make());
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
