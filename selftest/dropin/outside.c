// SPDX-License-Identifier: MIT
/*
 * An outside program, built against an installed sefer with pkg-config alone (check-install):
 * its malloc is sefer's (sefer_owns says so), the header is the library's, and the version
 * the library reports is the header's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sefer.h>

#define STR_(x) #x
#define STR(x)	STR_(x)

int main(void)
{
	const char *want = "sefer " STR(SEFER_VERSION_MAJOR) "." STR(SEFER_VERSION_MINOR) "." STR(
		SEFER_VERSION_PATCH);
	char *p = malloc(100);
	void *q = sefer_malloc(1000);

	if (!p || !q || !sefer_owns(p) || !sefer_owns(q)) {
		fprintf(stderr, "outside: malloc is not sefer's\n");
		return 1;
	}
	if (strcmp(sefer_version(), want)) {
		fprintf(stderr, "outside: library is %s, header %s\n", sefer_version(), want);
		return 1;
	}
	strcpy(p, "hello");
	free(p);
	sefer_free(q);
	printf("outside: %s serves malloc\n", sefer_version());
	return 0;
}
