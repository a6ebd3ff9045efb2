// SPDX-License-Identifier: MIT
/*
 * check-stats's program (check-stats.sh), linked against libsefer.so. "json": make a known
 * live set, take sefer_stats_get(), print its figures as "name value" lines on stdout, then
 * sefer_stats_print(NULL, SEFER_STATS_JSON) on stderr; the script parses the JSON with
 * python3's json module and compares. "exit": a small live set, then exit (SEFER_SHOW_STATS
 * prints at exit). Either prints "pid N" first.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sefer.h"

static void *keep[3000];

int main(int argc, char **argv)
{
	struct sefer_stats st;

	setvbuf(stdout, NULL, _IONBF, 0); /* stdio allocates nothing between the two takes */
	printf("pid %d\n", (int)getpid());
	for (int i = 0; i < 3000; i++)
		keep[i] = sefer_malloc(i < 2995 ? 16 + (size_t)(i % 50) * 24
						: (size_t)(i - 2994) << 20);
	if (argc > 1 && !strcmp(argv[1], "exit"))
		return 0;
	sefer_stats_get(&st, sizeof(st));
	sefer_stats_print(NULL, SEFER_STATS_JSON);
#define P(f) printf(#f " %llu\n", (unsigned long long)st.f)
	P(in_use_bytes);
	P(in_use_blocks);
	P(in_use_peak_bytes);
	P(in_use_peak_blocks);
	P(committed);
	P(committed_peak);
	P(small_bytes);
	P(large_blocks);
	P(large_bytes);
	P(segments);
	P(segments_peak);
	P(segments_mapped);
	P(xthread_frees);
	P(large_allocs);
	P(purged);
	P(threads);
	P(heaps);
#undef P
	return 0;
}
