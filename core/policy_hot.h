/* SPDX-License-Identifier: MIT */
/*
 * Static inline bodies of the policies' hot-path slots (core/policy.h). They dereference
 * struct heap, so they come after it: core/heap.h includes this file at its end. A disabled
 * policy's header is empty here, and policy.h's wrappers never name its functions.
 */
#ifndef SEFER_CORE_POLICY_HOT_H
#define SEFER_CORE_POLICY_HOT_H

#include "policies/fastbin/fastbin_hot.h"

#endif
