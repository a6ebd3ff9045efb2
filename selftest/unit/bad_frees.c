// SPDX-License-Identifier: MIT
/*
 * The child processes of the bad-free table (bad_frees.h) that every runner makes alike: the
 * Check and portable runners on POSIX (test_process.c) and the Windows runner (test_win32.c)
 * call bad_free_child() from their child_main() before their own modes. Each child prints
 * "addr=0x..." (the address the report must name, as sefer prints it) and then frees or
 * reallocs a pointer wrongly; what the parent expects is in bad_frees.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bad_frees.h"
#include "unit.h"

/* Blocks a child allocates only to keep their page in use (sefer_malloc is warn_unused_result). */
static void *volatile kept;

/* "0x" and lowercase hex, as sefer's reports print addresses (msvcrt's %p does not). */
static void print_addr(const void *p)
{
	fprintf(stderr, "addr=0x%llx\n", (unsigned long long)(uintptr_t)p);
	fflush(stderr);
}

int bad_free_child(const char *mode, void (*free_on_thread)(void *p))
{
	char *p;

	if (!strcmp(mode, "double-free") || !strcmp(mode, "warn")) {
		void *q[100];

		p = sefer_malloc(64);
		print_addr(p);
		sefer_free(p);
		sefer_free(p);
		/* only reached with SEFER_ON_ERROR=warn: the heap must still be sound */
		for (int i = 0; i < 100; i++)
			q[i] = sefer_malloc(64);
		for (int i = 0; i < 100; i++)
			for (int j = i + 1; j < 100; j++)
				if (q[i] == q[j])
					return 3; /* the double free corrupted the free list */
		for (int i = 0; i < 100; i++)
			sefer_free(q[i]);
		return sefer_check_heap() ? 4 : 0;
	}
	if (!strcmp(mode, "xthread-double-free")) {
		p = sefer_malloc(64);
		kept = sefer_malloc(64); /* keep the page alive */
		print_addr(p);
		free_on_thread(p);
		free_on_thread(p);
		return 0;
	}
	if (!strcmp(mode, "xthread-then-owner-free")) {
		/* Another thread frees p (pending on the page's cross-thread list, not collected
		 * yet), then its owner frees it again. The owner's earlier free of q caches the
		 * segment, so this second free of p takes the owner's fast path: it must leave it. */
		char *q = sefer_malloc(64);

		p = sefer_malloc(64);
		kept = sefer_malloc(64); /* keep the page alive */
		sefer_free(q);
		print_addr(p);
		free_on_thread(p);
		sefer_free(p);
		return 0;
	}
	if (!strcmp(mode, "invalid-free")) {
		static char not_ours[64];

		print_addr(not_ours);
		sefer_free(not_ours);
		return 0;
	}
	if (!strcmp(mode, "misaligned-free")) {
		/* off the 16-byte grid, inside a block */
		p = sefer_malloc(64);
		print_addr(p + 8);
		sefer_free(p + 8);
		return 0;
	}
	if (!strcmp(mode, "interior-free")) {
		p = sefer_malloc(64);
		print_addr(p + 16);
		sefer_free(p + 16);
		return 0;
	}
	if (!strcmp(mode, "large-double-free")) {
		p = sefer_malloc((size_t)8 << 20);
		print_addr(p);
		sefer_free(p);
		sefer_free(p);
		return 0;
	}
	if (!strcmp(mode, "realloc-freed") || !strcmp(mode, "realloc-warn")) {
		/* kept in place (it fits), this would hand the freed block back */
		p = sefer_malloc(64);
		print_addr(p);
		sefer_free(p);
		errno = 0;
		if (sefer_realloc(p, 48) || errno != EINVAL)
			return 5; /* only reached with SEFER_ON_ERROR=warn */
		return sefer_check_heap() ? 4 : 0;
	}
	if (!strcmp(mode, "realloc-interior")) {
		p = sefer_malloc(64);
		print_addr(p + 16);
		kept = sefer_realloc(p + 16, 40);
		return 0;
	}
	if (!strcmp(mode, "realloc-large-freed")) {
		p = sefer_malloc((size_t)8 << 20);
		print_addr(p);
		sefer_free(p);
		kept = sefer_realloc(p, (size_t)7 << 20);
		return 0;
	}
	return -1;
}
