/* SPDX-License-Identifier: MIT */
/* Process-wide initialisation and fork handling. */
#ifndef SEFER_CORE_INIT_H
#define SEFER_CORE_INIT_H

#include "core/config.h"
#include "sefer/os.h"

SEFER_INTERNAL_EXTERN struct sefer_os_info sefer__os_info;

/* Whether the backend implements the optional op(s) of `feature` (SEFER_OS_*, sefer/os.h). */
static inline bool os_has(unsigned feature)
{
	return (sefer__os.features & feature) == feature;
}

/* Fill buf from the OS's random source; false when it has none or it failed (keys then mix). */
static inline bool os_random_bytes(void *buf, size_t len)
{
	return os_has(SEFER_OS_RANDOM) && sefer__os.random_bytes(buf, len);
}

/*
 * Idempotent and thread-safe; cheap after the first call. A recursive call from the thread
 * running it (the C library allocating inside an OS call) returns at once: what the
 * allocator needs is ready before any call that could recurse.
 */
SEFER_INTERNAL void sefer__process_init(void);

#endif
