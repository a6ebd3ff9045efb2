/* SPDX-License-Identifier: MIT */
/* Resident set size of this process from /proc/self/statm (Linux; 0 when unreadable). */
#ifndef SEFER_SELFTEST_PROC_RSS_H
#define SEFER_SELFTEST_PROC_RSS_H

#include <stdio.h>
#include <unistd.h>

static inline size_t proc_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, rss = 0;

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (size_t)sysconf(_SC_PAGESIZE);
}

#endif
