// SPDX-License-Identifier: MIT
/*
 * A use after free through the malloc face, for Valgrind on the default build: linked to
 * libsefer.so, run under valgrind --soname-synonyms=somalloc=libsefer.so*, Valgrind's own
 * malloc replaces sefer's and memcheck reports the read (check-valgrind.sh). Without the
 * option valgrind does not replace sefer's malloc and, with CONFIG_VALGRIND off, sees nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sefer.h"

static volatile unsigned char sink;

int main(void)
{
	unsigned char *p = malloc(64);
	unsigned char *volatile stale = p; /* the compiler need not know it is p */

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("face_uaf: block %p size 64 sefer %d\n", (void *)p, sefer_owns(p));
	memset(p, 1, 64);
	free(p);
	sink = stale[32];
	return 0;
}
