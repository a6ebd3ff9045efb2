// SPDX-License-Identifier: MIT
/*
 * check-secure's program: linked with libsefer.a, so its malloc is sefer's even when setuid
 * (ld.so ignores LD_PRELOAD there). Prints its effective uid and AT_SECURE, proves sefer
 * serves malloc, then frees one block twice. "survived" on stdout means the double free was
 * only a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <sefer.h>

int main(void)
{
	char *volatile p = malloc(48);

	printf("euid=%d secure=%lu\n", (int)geteuid(), getauxval(AT_SECURE));
	if (!p || !sefer_owns(p)) {
		printf("malloc is not sefer's\n");
		return 2;
	}
	p[0] = 1;
	fflush(stdout);
	free(p);
	free(p);
	printf("survived\n");
	return 0;
}
