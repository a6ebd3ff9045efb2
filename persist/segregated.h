/* SPDX-License-Identifier: MIT */
/* Size classes of the segregated allocator (persist/segregated.c), exported for the unit tests. */
#ifndef SEFER_PERSIST_SEGREGATED_H
#define SEFER_PERSIST_SEGREGATED_H

#include <stdint.h>

#include "include/sefer/compiler.h"

#define SEGREGATED_CLASSES 33

/* The smallest class with size >= bsize. */
SEFER_INTERNAL unsigned sefer__segregated_class(uint64_t bsize);
/* A class's block size; UINT64_MAX for the oversized class. */
SEFER_INTERNAL uint64_t sefer__segregated_class_size(unsigned c);
/* The list of a free block: the largest class <= bsize. */
SEFER_INTERNAL unsigned sefer__segregated_list(uint64_t bsize);

#endif
