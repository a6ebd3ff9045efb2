// SPDX-License-Identifier: MIT
/*
 * make check-symbols: a program with functions of its own named as sefer's internals were
 * before they had the sefer__ prefix (report_error, parse_size, page_find, options_init),
 * linked statically against libsefer.a and against the compiled amalgamation. It must link (no
 * "multiple definition"), and the calls must reach the program's own functions, not sefer's:
 * each prints a line the script looks for. The program also allocates through sefer so that
 * the archive members defining sefer's versions are pulled into the link.
 *
 * Built with -DCOLLIDE_CONTROL, the same functions are named sefer__*, sefer's own internal
 * names: that link must fail with "multiple definition", which proves that the members holding
 * those names were in the link, so that the plain build's success means something.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sefer.h>

#ifdef COLLIDE_CONTROL
#define NAME(x) sefer__##x
#else
#define NAME(x) x
#endif

struct page {
	int number;
};

/* Signatures of the program's own, unlike sefer's. */
int NAME(report_error)(int code);
long NAME(parse_size)(const char *text, int scale);
struct page *NAME(page_find)(struct page *pages, int n, int number);
void NAME(options_init)(int *verbose);

int NAME(report_error)(int code)
{
	printf("program report_error(%d)\n", code);
	return code + 1;
}

long NAME(parse_size)(const char *text, int scale)
{
	long v = strtol(text, NULL, 10) * scale;

	printf("program parse_size(%s) = %ld\n", text, v);
	return v;
}

struct page *NAME(page_find)(struct page *pages, int n, int number)
{
	for (int i = 0; i < n; i++) {
		if (pages[i].number == number) {
			printf("program page_find(%d) at %d\n", number, i);
			return &pages[i];
		}
	}
	return NULL;
}

void NAME(options_init)(int *verbose)
{
	*verbose = 7;
	printf("program options_init\n");
}

int main(void)
{
	struct page pages[3] = { { 10 }, { 20 }, { 30 } };
	int verbose = 0;
	char *p = sefer_malloc(100);
	char *q = malloc(200);	/* the malloc face's, where the configuration has it */

	if (!p || !q)
		return 1;
	memset(p, 1, 100);
	memset(q, 2, 200);
	NAME(options_init)(&verbose);
	if (verbose != 7 || NAME(report_error)(41) != 42 || NAME(parse_size)("12", 1024) != 12288 ||
	    NAME(page_find)(pages, 3, 20) != &pages[1])
		return 1;
	printf("sefer owns its block: %s; heap check: %zu errors\n", sefer_owns(p) ? "yes" : "no",
	       sefer_check_heap());
	free(q);
	sefer_free(p);
	return 0;
}
