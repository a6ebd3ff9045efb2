/* SPDX-License-Identifier: MIT */
/* The Linux backend's ops that live outside backends/linux/os.c, which assembles sefer__os. */
#ifndef SEFER_BACKEND_LINUX_H
#define SEFER_BACKEND_LINUX_H

#include <sefer/os.h>

/* SEFER_OS_PROCINFO from /proc/self (backends/linux/procinfo.c). */
SEFER_INTERNAL void sefer__linux_procinfo(struct sefer_os_procinfo *p);

#endif
