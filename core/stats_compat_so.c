// SPDX-License-Identifier: MIT
/*
 * sefer 0.1's stats calls, kept in libsefer.so for the programs linked against them (the
 * SONAME stays libsefer.so.0). 0.1 had sefer_stats_get(struct sefer_stats *) with a struct of
 * fourteen fields and sefer_stats_print(void); 0.2 takes the caller's struct size and a FILE.
 *
 * ELF symbol versions tell the two apart (core/libsefer.map): the 0.1 calls are
 * sefer_stats_get@SEFER_0.1 and sefer_stats_print@SEFER_0.1, the first version node, which is
 * what the dynamic linker binds a program's unversioned reference to (every program linked
 * against 0.1, which had no versions); a program linked against 0.2 records
 * sefer_stats_get@@SEFER_0.2 and gets the new calls. Everything else, the malloc family
 * included, stays unversioned, so LD_PRELOAD interposes it as before. libsefer.a, the
 * amalgamation and Windows have only the 0.2 calls (a program rebuilds against them).
 */
#include <stddef.h>

#include "core/config.h"
#include "sefer.h"

/* The end of 0.1's struct: its fourteen fields, up to heaps */
#define STATS_V0_1_SIZE (offsetof(struct sefer_stats, heaps) + sizeof(uint64_t))

/* Exported (their versioned aliases must be); core/libsefer.map keeps these names local. */
#define SO_COMPAT __attribute__((visibility("default")))
SO_COMPAT void sefer__stats_get_v0_1(struct sefer_stats *st);
SO_COMPAT void sefer__stats_print_v0_1(void);

SO_COMPAT void sefer__stats_get_v0_1(struct sefer_stats *st)
{
	(void)sefer_stats_get(st, STATS_V0_1_SIZE);
}

SO_COMPAT void sefer__stats_print_v0_1(void)
{
	sefer_stats_print(NULL, 0);
}

__asm__(".symver sefer__stats_get_v0_1, sefer_stats_get@SEFER_0.1");
__asm__(".symver sefer__stats_print_v0_1, sefer_stats_print@SEFER_0.1");
