/* SPDX-License-Identifier: MIT */
/* The numa policy (not implemented yet: an empty instance, see core/policy.h). */
#ifndef SEFER_POLICY_NUMA_H
#define SEFER_POLICY_NUMA_H

static const struct sefer_policy_ops policy_numa = {
	.name = "numa",
};

#endif
