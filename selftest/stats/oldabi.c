// SPDX-License-Identifier: MIT
/*
 * A program as built against sefer 0.1 (check-stats.sh): its own copy of 0.1's declarations
 * (struct sefer_stats of fourteen fields, sefer_stats_get(st), sefer_stats_print(void)),
 * linked against a stand-in libsefer.so.0 without symbol versions (oldabi_stub.c), as 0.1
 * was; run against the real library, whose SEFER_0.1 versions must serve it. Exit 0 when the
 * figures are sane and nothing was written past the old struct.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct sefer_stats { /* 0.1 */
	uint64_t mallocs, frees, xthread_frees, large_allocs, segments, segments_peak,
		segments_mapped, committed, committed_peak, purged, abandoned, reclaimed, threads,
		heaps;
};

void sefer_stats_get(struct sefer_stats *st);
void sefer_stats_print(void);
void *sefer_malloc(size_t size);

int main(void)
{
	struct {
		struct sefer_stats st;
		uint64_t canary[8];
	} s;

	for (int i = 0; i < 8; i++)
		s.canary[i] = 0x0123456789abcdefULL;
	if (!sefer_malloc(100))
		return 2;
	sefer_stats_get(&s.st);
	for (int i = 0; i < 8; i++)
		if (s.canary[i] != 0x0123456789abcdefULL) {
			printf("written past the 0.1 struct\n");
			return 1;
		}
	printf("segments %llu committed %llu threads %llu\n", (unsigned long long)s.st.segments,
	       (unsigned long long)s.st.committed, (unsigned long long)s.st.threads);
	sefer_stats_print();
	return s.st.segments >= 1 && s.st.committed >= 1 && s.st.threads >= 1 ? 0 : 3;
}
