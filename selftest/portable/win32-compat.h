/* SPDX-License-Identifier: MIT */
/*
 * Test-only shims for building selftest/unit/ sources with mingw-w64: the few POSIX calls
 * they use that the Windows C runtime lacks. Force-included (-include) into the Windows test
 * build only; never part of the library.
 */
#ifndef SEFER_PORTABLE_WIN32_COMPAT_H
#define SEFER_PORTABLE_WIN32_COMPAT_H
#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#ifndef _SC_PAGESIZE
#define _SC_PAGESIZE 30
#endif

static inline long sefer_test_sysconf(int name)
{
	SYSTEM_INFO si;

	if (name != _SC_PAGESIZE)
		return -1;
	GetSystemInfo(&si);
	return (long)si.dwPageSize;
}
#define sysconf(name) sefer_test_sysconf(name)

#endif
#endif
