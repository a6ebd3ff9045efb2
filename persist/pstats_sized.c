// SPDX-License-Identifier: MIT
/*
 * sefer_pstats_get(): sefer_pstats() with the caller's struct size, so that struct
 * sefer_pstats can grow at its end as struct sefer_stats does (include/sefer.h): the fields
 * both sides know are filled, the rest of the caller's struct zeroed. sefer_pstats() itself
 * fills the whole struct as this header declares it, which is right only while the struct
 * keeps its 0.2 size: the assertion below stops a change that grows it until sefer_pstats()
 * is made to fill just the 0.2 part (sefer_pstats_get(h, st, SEFER_PSTATS_SIZE_0_2)).
 */
#include <errno.h>

#include "core/stats.h"
#include "sefer/persist.h"

/* struct sefer_pstats as sefer 0.2 has it */
#define SEFER_PSTATS_SIZE_0_2                                                                     \
	(__builtin_offsetof(struct sefer_pstats, nlists) + sizeof(unsigned))

_Static_assert(sizeof(struct sefer_pstats) == ((SEFER_PSTATS_SIZE_0_2 + 7) & ~(size_t)7),
	       "struct sefer_pstats grew: make sefer_pstats() fill only SEFER_PSTATS_SIZE_0_2 bytes");

SEFER_API int sefer_pstats_get(struct sefer_pstore *h, struct sefer_pstats *st, size_t size)
{
	struct sefer_pstats full;
	int r;

	if (!st)
		return -EINVAL;
	r = sefer_pstats(h, &full);
	stats_copy_out(st, size, &full, sizeof(full));
	return r;
}
