// SPDX-License-Identifier: MIT
/*
 * check-secure's program: linked with libsefer.a, so its malloc is sefer's even when setuid
 * (ld.so ignores LD_PRELOAD there). Prints its effective uid and AT_SECURE, proves sefer
 * serves malloc, prints some options with their origins (sefer_option_get/origin), then frees
 * one block twice. "survived" on stdout means the double free was only a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <sefer.h>

static const char *const options[] = { "on_error", "purge_delay_ms", "calloc_prefault",
					"verbose", "show_stats" };

int main(void)
{
	char *volatile p = malloc(48);

	printf("euid=%d secure=%lu\n", (int)geteuid(), getauxval(AT_SECURE));
	if (!p || !sefer_owns(p)) {
		printf("malloc is not sefer's\n");
		return 2;
	}
	p[0] = 1;
	/* the options as the environment left them, with their origins */
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		char v[32];

		if (sefer_option_get(options[i], v, sizeof(v)))
			return 3;
		printf("%s=%s (%s)\n", options[i], v, sefer_option_origin(options[i]));
	}
	fflush(stdout);
	free(p);
	free(p);
	printf("survived\n");
	return 0;
}
