/* SPDX-License-Identifier: MIT */
/*
 * CONFIG_FAULT_INJECTION: OS calls failed on purpose (core/fault.c), as the kernel's
 * failslab and fail_page_alloc fail allocations, so that the failure paths behind them run.
 *
 * The attributes, set from SEFER_FAIL_* at init or by sefer__fault_set() (tests):
 *   ops          the ops that may fail, a mask of 1 << enum fault_op
 *   probability  percent of the eligible calls that fail (0-100)
 *   interval     only every interval-th eligible call may fail (1: every call)
 *   times        how many faults may still be injected (-1: no limit)
 * A call of an op in the mask counts towards the interval; it fails when the interval lets it
 * through, the random draw falls under the probability, and times is not used up.
 */
#ifndef SEFER_CORE_FAULT_H
#define SEFER_CORE_FAULT_H

#include <stdint.h>

#include "sefer/compiler.h"

/* The fallible ops, by the names SEFER_FAIL_OPS takes. */
enum fault_op {
	FAULT_MAP,	/* reserve: a segment, a large block, a heap struct */
	FAULT_REMAP,	/* remap: realloc of a large block, a large-cache re-place */
	FAULT_PURGE,	/* purge: nothing given back, the contents kept */
	FAULT_PROTECT,	/* protect: a guard page set or lifted */
	FAULT_POPULATE, /* populate: calloc's prefault skipped */
	FAULT_BIND,	/* bind_node: NUMA placement refused */
	FAULT_OPS
};

#define FAULT_ALL ((1u << FAULT_OPS) - 1)
#define FAULT_TIMES_UNLIMITED (-1)

/* Arm (or, with ops 0, disarm) injection; the interval's call count starts again. */
SEFER_INTERNAL void sefer__fault_set(unsigned ops, unsigned probability, uint64_t interval,
				     int64_t times);
/* Faults injected into op so far, and calls of op seen while it was armed. */
SEFER_INTERNAL uint64_t sefer__fault_injected(enum fault_op op);
SEFER_INTERNAL uint64_t sefer__fault_calls(enum fault_op op);
/* Faults injected into every op so far. */
SEFER_INTERNAL uint64_t sefer__fault_injected_total(void);
/* Faults injected so far into the calling thread's calls (a test's "did my call meet one"). */
SEFER_INTERNAL uint64_t sefer__fault_injected_thread(void);
/* The op's name in SEFER_FAIL_OPS ("map", "purge", ...). */
SEFER_INTERNAL const char *sefer__fault_op_name(enum fault_op op);
/* One line per op armed or hit: "fault injection: map 12 of 40 calls failed, ..." */
SEFER_INTERNAL void sefer__fault_print(void);

#endif /* SEFER_CORE_FAULT_H */
