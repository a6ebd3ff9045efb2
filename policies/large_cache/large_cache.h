/* SPDX-License-Identifier: MIT */
/* The large_cache policy (not implemented yet: an empty instance, see core/policy.h). */
#ifndef SEFER_POLICY_LARGE_CACHE_H
#define SEFER_POLICY_LARGE_CACHE_H

struct large_cache_heap {
};

static const struct sefer_policy_ops policy_large_cache = {
	.name = "large_cache",
};

#endif
