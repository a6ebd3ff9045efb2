/* SPDX-License-Identifier: MIT */
/*
 * BUILD-CHECK SHIM, NOT DARWIN. Force-included by backends/darwin/build-check.sh when the
 * darwin configuration is compiled by the Linux host gcc: it supplies the few Darwin-only
 * identifiers the backend uses, with placeholder values, so the compiler can check syntax,
 * types and warnings of everything else. Objects built with it are never linked or run.
 */
#ifndef SEFER_DARWIN_SHIM_H
#define SEFER_DARWIN_SHIM_H

#include <fcntl.h>
#include <sys/mman.h>

#ifndef F_FULLFSYNC
#define F_FULLFSYNC 51 /* placeholder */
#endif
int issetugid(void); /* <unistd.h> on Darwin */
const char *getprogname(void); /* <stdlib.h> on Darwin */

#endif
