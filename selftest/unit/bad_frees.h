/* SPDX-License-Identifier: MIT */
/*
 * The bad frees that every runner's child process makes (test_process.c for POSIX, the
 * portable runner's test_win32.c for Windows): each must be reported with the address and
 * this reason, then abort, or with SEFER_ON_ERROR=warn (`warn`) exit 0. BAD_FREES_COMMON
 * needs CONFIG_DEBUG_DOUBLE_FREE; a runner lists it in its own table, after which it may add
 * cases its child alone knows how to make. BAD_FREES_ALWAYS holds in every configuration.
 */
#include <stdbool.h>

#ifndef SEFER_SELFTEST_BAD_FREES_H
#define SEFER_SELFTEST_BAD_FREES_H

struct bad_free {
	const char *mode;	/* the child's mode */
	const char *what;	/* "sefer: <what> of <address> (" */
	const char *reason;	/* a part of the reason in the report */
	bool warn;		/* run with SEFER_ON_ERROR=warn: reported, then exit 0 */
};

#define BAD_FREES_COMMON                                                                           \
	{ "double-free", "double free", "already free", false },                                   \
	{ "xthread-double-free", "double free", "already free", false }, /* pending */             \
	{ "interior-free", "invalid free", "inside of a block", false },                           \
	{ "misaligned-free", "invalid free", "inside of a block", false }, /* p + 8 */             \
	{ "warn", "double free", "already free", true }

/* With large_cache the freed segment stays mapped, so the second free is named exactly;
 * without, it went back to the OS at the first free and the table no longer knows it. */
#define BAD_FREES_ALWAYS                                                                           \
	{ "invalid-free", "invalid free", "not allocated by sefer", false },                       \
	{ "large-double-free",                                                                     \
	  IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) ? "double free" : "invalid free",                  \
	  IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) ? "already free" : "not allocated by sefer", false }

#endif
