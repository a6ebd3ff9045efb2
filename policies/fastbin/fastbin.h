/* SPDX-License-Identifier: MIT */
/* The fastbin policy (not implemented yet: an empty instance, see core/policy.h). */
#ifndef SEFER_POLICY_FASTBIN_H
#define SEFER_POLICY_FASTBIN_H

struct fastbin_heap {
};

static const struct sefer_policy_ops policy_fastbin = {
	.name = "fastbin",
};

#endif
