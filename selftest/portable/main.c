// SPDX-License-Identifier: MIT
/*
 * The portable unit-test runner: the selftest/unit/ suites built against the Check stand-in
 * (check.h), for targets without Check (Windows under wine, aarch64 under qemu-user).
 *
 * It provides what selftest/unit/main.c provides for the native build, portably:
 * rss_bytes() and run_child(). On POSIX a child is this binary re-executed, through the
 * command in SEFER_TEST_EXEC when set (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu": an
 * emulated process cannot exec a foreign binary by itself). On Windows the child is started
 * with CreateProcess and its exit code stands in for the wait status (see unit-win32.h).
 *
 * Prints one line per test and ends with "N passed, N failed"; exit status 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#else
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "unit.h"

#ifdef _WIN32
Suite *win32_suite(void);
#endif

static const char *self_path;

#ifdef _WIN32
size_t rss_bytes(void)
{
	PROCESS_MEMORY_COUNTERS pmc;

	if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof(pmc)))
		return 0;
	return pmc.WorkingSetSize;
}

/* Returns the child's exit code (abort() exits with 3), or -1 if it could not run. */
int run_child(const char *mode, const char *const *env, char *buf, size_t len)
{
	SECURITY_ATTRIBUTES sa = { sizeof(sa), NULL, TRUE };
	STARTUPINFOA si;
	PROCESS_INFORMATION pi;
	HANDLE rd, wr;
	char cmd[1024];
	DWORD code = (DWORD)-1, got = 0, n;
	const char *const *e;

	if (!CreatePipe(&rd, &wr, &sa, 0))
		return -1;
	SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
	snprintf(cmd, sizeof(cmd), "\"%s\" --child %s", self_path, mode);
	/* The child inherits our environment: set the assignments for it, then undo them. */
	for (e = env; e && *e; e++) {
		char name[128];
		const char *eq = strchr(*e, '=');
		size_t k = (size_t)(eq - *e);

		snprintf(name, sizeof(name), "%.*s", (int)k, *e);
		SetEnvironmentVariableA(name, eq + 1);
	}
	memset(&si, 0, sizeof(si));
	si.cb = sizeof(si);
	si.dwFlags = STARTF_USESTDHANDLES;
	si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
	si.hStdOutput = wr;
	si.hStdError = wr;
	BOOL ok = CreateProcessA(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);

	for (e = env; e && *e; e++) {
		char name[128];

		snprintf(name, sizeof(name), "%.*s", (int)(strchr(*e, '=') - *e), *e);
		SetEnvironmentVariableA(name, NULL);
	}
	CloseHandle(wr);
	if (ok) {
		while (got + 1 < len && ReadFile(rd, buf + got, (DWORD)(len - 1 - got), &n, NULL) && n)
			got += n;
		WaitForSingleObject(pi.hProcess, INFINITE);
		GetExitCodeProcess(pi.hProcess, &code);
		CloseHandle(pi.hProcess);
		CloseHandle(pi.hThread);
	}
	buf[got] = '\0';
	CloseHandle(rd);
	return ok ? (int)code : -1;
}
#else
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
	argv[argc++] = (char *)self_path;
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
#endif

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "bins", bins_suite },	      { "segment", segment_suite }, { "api", api_suite },
	{ "options", options_suite }, { "threads", threads_suite },
#ifdef _WIN32
	{ "win32", win32_suite },
#else
	{ "process", process_suite },
#endif
};

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

#ifdef _WIN32
	static char path[MAX_PATH];

	self_path = GetModuleFileNameA(NULL, path, sizeof(path)) ? path : argv[0];
#else
	self_path = argv[0];
#endif
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child_main(argv[2]);
	setvbuf(stdout, NULL, _IONBF, 0);
	sr = srunner_create(NULL);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		srunner_add_suite(sr, suites[i].make());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
