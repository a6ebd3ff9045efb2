/* SPDX-License-Identifier: MIT */
/*
 * The bad frees and reallocs that every runner's child process makes (bad_free_child() in
 * bad_frees.c, called by test_process.c for POSIX and the portable runner's test_win32.c for
 * Windows): each must be reported with the address and this reason, then abort, or with
 * SEFER_ON_ERROR=warn (`warn`) exit 0. BAD_FREES_COMMON needs CONFIG_DEBUG_DOUBLE_FREE; a
 * runner lists it in its own table, after which it may add cases its child alone knows how to
 * make. BAD_FREES_ALWAYS holds in every configuration.
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
	{ "xthread-then-owner-free", "double free", "cross-thread, pending", false },              \
	{ "interior-free", "invalid free", "inside of a block", false },                           \
	{ "misaligned-free", "invalid free", "inside of a block", false }, /* p + 8 */             \
	{ "warn", "double free", "already free", true },                                           \
	{ "realloc-freed", "realloc after free", "already free", false },                          \
	{ "realloc-warn", "realloc after free", "already free", true } /* NULL, EINVAL */

/* With large_cache the freed segment stays mapped, so a second free (or a realloc after the
 * free) is named exactly; without, it went back to the OS at the first free and the table no
 * longer knows it. */
#define LARGE_FREED(named, unknown) (IS_ENABLED(CONFIG_POLICY_LARGE_CACHE) ? (named) : (unknown))
#define BAD_FREES_ALWAYS                                                                           \
	{ "invalid-free", "invalid free", "not allocated by sefer", false },                       \
	{ "large-double-free", LARGE_FREED("double free", "invalid free"),                         \
	  LARGE_FREED("already free", "not allocated by sefer"), false },                          \
	{ "realloc-interior", "invalid realloc", "inside of a block", false },                     \
	{ "realloc-large-freed", LARGE_FREED("realloc after free", "realloc"),                     \
	  LARGE_FREED("already free", "not allocated by sefer"), false }

/*
 * The child of every mode above (and of none else: -1). free_on_thread(p) frees p on a new
 * thread and returns once that thread has ended.
 */
int bad_free_child(const char *mode, void (*free_on_thread)(void *p));

#endif
