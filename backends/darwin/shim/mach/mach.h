/* SPDX-License-Identifier: MIT */
/*
 * BUILD-CHECK SHIM, NOT DARWIN: the few identifiers of <mach/mach.h> the darwin backend's
 * procinfo uses, with placeholder values and a reduced struct (Darwin's has more fields).
 */
#ifndef SEFER_DARWIN_SHIM_MACH_H
#define SEFER_DARWIN_SHIM_MACH_H
#include <stdint.h>

typedef int kern_return_t;
typedef unsigned int mach_port_t, task_flavor_t, mach_msg_type_number_t;
typedef int *task_info_t;
struct mach_task_basic_info {
	uint64_t virtual_size, resident_size, resident_size_max;
};
#define KERN_SUCCESS 0
#define MACH_TASK_BASIC_INFO 20 /* placeholder */
#define MACH_TASK_BASIC_INFO_COUNT \
	((mach_msg_type_number_t)(sizeof(struct mach_task_basic_info) / sizeof(int)))
mach_port_t mach_task_self(void);
kern_return_t task_info(mach_port_t task, task_flavor_t flavor, task_info_t info,
			mach_msg_type_number_t *count);
#endif
