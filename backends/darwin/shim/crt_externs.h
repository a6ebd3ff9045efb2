/* SPDX-License-Identifier: MIT */
/* BUILD-CHECK SHIM, NOT DARWIN: the one declaration of <crt_externs.h> backends/posix uses. */
#ifndef SEFER_DARWIN_SHIM_CRT_EXTERNS_H
#define SEFER_DARWIN_SHIM_CRT_EXTERNS_H
char ***_NSGetEnviron(void);
#endif
