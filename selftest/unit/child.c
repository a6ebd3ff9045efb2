// SPDX-License-Identifier: MIT
/*
 * POSIX helpers of the unit tests, shared by the Check runner (main.c) and the portable runner
 * (selftest/portable/main.c, aarch64 under qemu-user): rss_bytes(), resident_pages() and
 * run_child(). A child is this binary re-executed with "--child MODE", through the command in
 * SEFER_TEST_EXEC when set (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu": an emulated
 * process cannot exec a foreign binary by itself).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "selftest/proc_rss.h"
#include "unit.h"

const char *unit_self_path;

size_t rss_bytes(void)
{
	return proc_rss_bytes();
}

#ifdef __linux__
size_t resident_pages(const void *p, size_t n)
{
	size_t pages = n / 4096, in = 0;
	unsigned char *vec = malloc(pages);

	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore((void *)p, n, vec), 0);
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	return in;
}
#endif

int run_child(const char *mode, const char *const *env, char *buf, size_t len)
{
	const char *exec = getenv("SEFER_TEST_EXEC");
	char prefix[512];
	char *argv[32];
	int pfd[2], status = -1, argc = 0;
	pid_t pid;
	size_t got = 0;

	if (exec && *exec) {
		snprintf(prefix, sizeof(prefix), "%s", exec);
		for (char *t = strtok(prefix, " "); t && argc < 28; t = strtok(NULL, " "))
			argv[argc++] = t;
	}
	argv[argc++] = (char *)unit_self_path;
	argv[argc++] = (char *)"--child";
	argv[argc++] = (char *)mode;
	argv[argc] = NULL;
	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		for (; env && *env; env++)
			putenv((char *)*env);
		execvp(argv[0], argv);
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
