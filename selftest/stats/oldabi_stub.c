// SPDX-License-Identifier: MIT
/* sefer 0.1's stats calls as its libsefer.so.0 exported them: no symbol versions. Only for
 * linking oldabi.c (check-stats.sh); never run. */
#include <stddef.h>

struct sefer_stats;

void sefer_stats_get(struct sefer_stats *st);
void sefer_stats_print(void);
void *sefer_malloc(size_t size);

void sefer_stats_get(struct sefer_stats *st)
{
	(void)st;
}

void sefer_stats_print(void)
{
}

void *sefer_malloc(size_t size)
{
	(void)size;
	return NULL;
}
