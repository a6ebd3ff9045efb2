/* SPDX-License-Identifier: MIT */
/*
 * Spans (core/span.c): runs of 1..16 page slots of a small segment that serve one size class.
 * Where a span goes among the segments of a set (the policy's node first, dirty slots first),
 * and the slots' state when it is given back.
 */
#ifndef SEFER_CORE_SPAN_H
#define SEFER_CORE_SPAN_H

#include "core/segment.h"

SEFER_INTERNAL __must_check struct page *sefer__span_alloc(struct segment_set *set, unsigned pages,
							   int node);
SEFER_INTERNAL bool sefer__span_has_space(struct segment_set *set, unsigned pages);
SEFER_INTERNAL bool sefer__span_has_dirty_space(struct segment_set *set, unsigned pages);
SEFER_INTERNAL void sefer__span_free(struct segment_set *set, struct page *pg);

#endif
