/* SPDX-License-Identifier: MIT */
/* Process-wide initialisation and fork handling. */
#ifndef SEFER_CORE_INIT_H
#define SEFER_CORE_INIT_H

#include "core/config.h"
#include "sefer/os.h"

extern struct sefer_os_info sefer_os_info SEFER_INTERNAL;

/*
 * Idempotent and thread-safe; cheap after the first call. A recursive call from the thread
 * running it (the C library allocating inside an OS call) returns at once: what the
 * allocator needs is ready before any call that could recurse.
 */
void process_init(void) SEFER_INTERNAL;

#endif
