// SPDX-License-Identifier: MIT
/*
 * A program that compiles sefer into itself: #include "sefer.c" with SEFER_STATIC_ALL, so that
 * every internal function and object of the allocator is static here (check-amalgamation.sh
 * proves it with nm). Built with -DSEFER_STATIC_API as well, the API is static too. It then
 * uses the allocator a little, checks the heap and sets an option (sefer_option_set: a copy
 * without the malloc face has no mallopt), so that the static copy is seen to work.
 */
#define SEFER_STATIC_ALL
#include "sefer.c"

#include <stdio.h>
#include <string.h>

int main(void)
{
	void *p[1000];
	size_t i;

	for (i = 0; i < 1000; i++) {
		p[i] = sefer_malloc(i * 7 + 1);
		if (!p[i])
			return 1;
		memset(p[i], (int)i, i * 7 + 1);
	}
	for (i = 0; i < 1000; i += 2)
		p[i] = sefer_realloc(p[i], i * 13 + 5);
	for (i = 0; i < 1000; i++) {
		if (((unsigned char *)p[i])[0] != (unsigned char)i)
			return 2;
		sefer_free(p[i]);
	}
	if (sefer_check_heap() != 0)
		return 3;
	/* options from code without the malloc face (no mallopt here) */
	char v[32];

	if (sefer_option_set("purge_delay_ms", "7") || sefer_option_get("purge_delay_ms", v, 32) ||
	    strcmp(v, "7") || strcmp(sefer_option_origin("purge_delay_ms"), "API") ||
	    sefer_option_set("purge_delay_ms", "soon") == 0)
		return 4;
	printf("static_all: 1000 blocks allocated, resized, checked and freed; an option set\n");
	return 0;
}
