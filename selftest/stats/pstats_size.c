// SPDX-License-Identifier: MIT
/*
 * sefer_pstats_get (persist/pstats_sized.c) with the caller's struct size (check-stats.sh):
 * a struct cut after ops (an older, smaller one) gets those fields and nothing past them; a
 * bigger one (a newer header) gets the whole struct and zeros after it; both agree with
 * sefer_pstats. Usage: pstats-size DIR (a store is made there). Exit 0 when all hold.
 */
#include <stdio.h>
#include <string.h>

#include "sefer/persist.h"

int main(int argc, char **argv)
{
	char path[512];
	struct sefer_pstore *h;
	struct sefer_pstats full;
	struct {
		struct sefer_pstats st;
		uint64_t later[4];
	} big;
	unsigned char small[sizeof(full)];
	size_t cut = offsetof(struct sefer_pstats, syncs);
	uint64_t off;

	if (argc < 2)
		return 2;
	snprintf(path, sizeof(path), "%s/pstats.store", argv[1]);
	if (sefer_pstore_create(path, SEFER_PALLOC_SEGREGATED, NULL, &h) ||
	    sefer_palloc(h, 100, &off))
		return 3;
	sefer_pstats(h, &full);
	memset(small, 0xa5, sizeof(small));
	memset(&big, 0xff, sizeof(big));
	if (sefer_pstats_get(h, (struct sefer_pstats *)small, cut) ||
	    sefer_pstats_get(h, &big.st, sizeof(big)))
		return 4;
	for (size_t i = cut; i < sizeof(small); i++)
		if (small[i] != 0xa5) {
			printf("pstats-size: byte %zu past the caller's %zu written\n", i, cut);
			return 1;
		}
	if (memcmp(small, &full, cut) || big.st.ops != full.ops ||
	    big.st.used_blocks != full.used_blocks || big.later[0] || big.later[3]) {
		printf("pstats-size: figures differ from sefer_pstats\n");
		return 1;
	}
	sefer_pstore_close(h);
	printf("pstats-size: an older (%zu bytes) and a newer (%zu bytes) struct both served\n", cut,
	       sizeof(big));
	return 0;
}
