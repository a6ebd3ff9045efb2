/* SPDX-License-Identifier: MIT */
/*
 * The bad frees that every runner's child process makes (test_process.c for POSIX, the
 * portable runner's test_win32.c for Windows): each must be reported with the address and
 * this reason, then abort (CONFIG_DEBUG_DOUBLE_FREE). A runner lists BAD_FREES_COMMON in its
 * own table, after which it may add cases its child alone knows how to make.
 */
#ifndef SEFER_SELFTEST_BAD_FREES_H
#define SEFER_SELFTEST_BAD_FREES_H

struct bad_free {
	const char *mode;	/* the child's mode */
	const char *what;	/* "sefer: <what> of <address> (" */
	const char *reason;	/* a part of the reason in the report */
};

#define BAD_FREES_COMMON                                                                           \
	{ "double-free", "double free", "already free" },                                          \
	{ "xthread-double-free", "double free", "already free" }, /* still pending */             \
	{ "interior-free", "invalid free", "inside of a block" }

#endif
