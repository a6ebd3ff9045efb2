/* SPDX-License-Identifier: MIT */
/* Size classes of the segregated allocator (persist/seg.c), exported for the unit tests. */
#ifndef SEFER_PERSIST_SEG_H
#define SEFER_PERSIST_SEG_H

#include <stdint.h>

#include "include/sefer/compiler.h"

#define SEG_NUM_CLASSES 33

SEFER_INTERNAL unsigned sefer__seg_class(uint64_t bsize);  /* smallest class with size >= bsize */
SEFER_INTERNAL uint64_t sefer__seg_class_size(unsigned c); /* UINT64_MAX for the oversized class */
SEFER_INTERNAL unsigned
sefer__seg_list(uint64_t bsize); /* list of a free block: largest class <= bsize */

#endif
