/* SPDX-License-Identifier: MIT */
/*
 * Static inline bodies of the enabled policies' hot-path slots (core/policy.h). They
 * dereference struct heap, so they come after it: core/heap.h includes this file at its end.
 * include/generated/policies_hot.h lists the headers each policy's Kbuild names as <name>-hot.
 */
#ifndef SEFER_CORE_POLICY_HOT_H
#define SEFER_CORE_POLICY_HOT_H

#include "generated/policies_hot.h"

#endif
