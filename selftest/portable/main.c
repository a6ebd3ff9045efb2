// SPDX-License-Identifier: MIT
/*
 * The portable unit-test runner: the selftest/unit/ suites built against the Check stand-in
 * (check.h), for targets without Check (Windows under wine, aarch64 under qemu-user).
 *
 * On POSIX, rss_bytes() and run_child() come from selftest/unit/child.c, as for the native
 * build. On Windows they are here: the child is started with CreateProcess and its exit code
 * stands in for the wait status (see unit-win32.h).
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
#endif

#include "unit.h"

#ifdef _WIN32
Suite *win32_suite(void);
#endif

#ifdef _WIN32
static const char *self_path;

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
	{ "process", process_suite }, { "hardening", hardening_suite },
	{ "heaps", heaps_suite },
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
	unit_self_path = argv[0];
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
