// SPDX-License-Identifier: MIT
/*
 * sefer-pstore: inspect persist store files.
 *
 *   sefer-pstore create [-a segregated|first-fit|best-fit] [-w LOG_KIB] FILE
 *   sefer-pstore stat FILE       header, recovery report, counts, free lists
 *   sefer-pstore verify FILE     fsck: exit 0 when consistent, 1 with the problem
 *   sefer-pstore dump FILE [N]   the first N (default 50) allocated blocks
 *   sefer-pstore compact FILE    merge free neighbours, give the free tail back
 *
 * Opening a store replays its log (after a crash) like any other opener; a file that is
 * refused is not written to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/sefer/persist.h"

static int usage(void)
{
	fprintf(stderr, "usage: sefer-pstore create [-a segregated|first-fit|best-fit] "
			"[-w LOG_KIB] FILE\n"
			"       sefer-pstore stat|verify|compact FILE\n"
			"       sefer-pstore dump FILE [N]\n");
	return 2;
}

static struct sefer_precovery rep;
static char err[512];

static struct sefer_pstore *open_or_die(const char *path)
{
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err), .report = &rep };
	struct sefer_pstore *h;
	int r = sefer_pstore_open(path, &o, &h);

	if (r) {
		fprintf(stderr, "sefer-pstore: %s\n", err[0] ? err : strerror(-r));
		exit(1);
	}
	return h;
}

static int do_create(int argc, char **argv)
{
	enum sefer_palloc_kind kind = SEFER_PALLOC_SEGREGATED;
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h;
	int i, r;

	for (i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-a")) {
			if (!strcmp(argv[i + 1], "first-fit"))
				kind = SEFER_PALLOC_FIRSTFIT;
			else if (!strcmp(argv[i + 1], "best-fit"))
				kind = SEFER_PALLOC_BESTFIT;
			else if (strcmp(argv[i + 1], "segregated"))
				return usage();
		} else if (!strcmp(argv[i], "-w")) {
			o.wal_bytes = strtoull(argv[i + 1], NULL, 0) << 10;
		} else {
			return usage();
		}
	}
	if (i != argc - 1)
		return usage();
	r = sefer_pstore_create(argv[i], kind, &o, &h);
	if (r) {
		fprintf(stderr, "sefer-pstore: %s\n", err[0] ? err : strerror(-r));
		return 1;
	}
	return sefer_pstore_close(h) ? 1 : 0;
}

static int do_stat(const char *path)
{
	struct sefer_pstore *h = open_or_die(path);
	struct sefer_pstats st;

	sefer_pstats(h, &st);
	printf("file          %s\n", path);
	printf("allocator     %s\n", st.allocator);
	printf("file bytes    %llu\n", (unsigned long long)st.file_bytes);
	printf("payload bytes %llu\n", (unsigned long long)st.payload_bytes);
	printf("root          %llu\n", (unsigned long long)sefer_pget_root(h));
	printf("last close    %s\n", rep.clean ? "clean" : "UNCLEAN (recovered now)");
	printf("recovery      %llu log records replayed, %llu bytes trimmed, %llu blocks scanned,"
	       " %llu orphans relinked, %llu us\n", (unsigned long long)rep.wal_records,
	       (unsigned long long)rep.bytes_trimmed, (unsigned long long)rep.blocks_scanned,
	       (unsigned long long)rep.orphans_relinked, (unsigned long long)rep.usec);
	printf("used          %llu blocks, %llu bytes\n", (unsigned long long)st.used_blocks,
	       (unsigned long long)st.used_bytes);
	printf("free          %llu blocks, %llu bytes\n", (unsigned long long)st.free_blocks,
	       (unsigned long long)st.free_bytes);
	printf("free lists   ");
	for (unsigned i = 0; i < st.nlists; i++)
		printf(" %llu", (unsigned long long)st.list_len[i]);
	printf("\n");
	return sefer_pstore_close(h) ? 1 : 0;
}

static int do_verify(const char *path)
{
	struct sefer_pstore *h = open_or_die(path);
	struct sefer_pverify v;
	int r = sefer_pverify(h, &v);

	printf("%s: %llu blocks (%llu used, %llu free), %llu orphans: %s%s\n", path,
	       (unsigned long long)v.blocks, (unsigned long long)v.used_blocks,
	       (unsigned long long)v.free_blocks, (unsigned long long)v.orphans,
	       r ? "ERROR: " : "ok", r ? v.msg : "");
	sefer_pstore_close(h);
	return r ? 1 : 0;
}

struct dump {
	struct sefer_pstore *h;
	unsigned long left;
	unsigned long long *off, *use;
	unsigned long n;
};

static int dump_fn(void *arg, uint64_t off, uint64_t usable)
{
	struct dump *d = arg;

	if (!d->left)
		return 1;
	d->off[d->n] = off;
	d->use[d->n++] = usable;
	d->left--;
	return 0;
}

static int do_dump(const char *path, unsigned long n)
{
	struct dump d = { .left = n };
	struct sefer_pstore *h = open_or_die(path);

	d.h = h;
	d.off = calloc(n + 1, sizeof(*d.off));
	d.use = calloc(n + 1, sizeof(*d.use));
	sefer_pwalk(h, dump_fn, &d);
	printf("%-14s %-10s first bytes\n", "offset", "usable");
	for (unsigned long i = 0; i < d.n; i++) {
		unsigned char b[16] = { 0 };
		size_t k = d.use[i] < 16 ? d.use[i] : 16;

		sefer_pread(h, d.off[i], 0, b, k);
		printf("%-14llu %-10llu", d.off[i], d.use[i]);
		for (size_t j = 0; j < k; j++)
			printf(" %02x", b[j]);
		printf("\n");
	}
	free(d.off);
	free(d.use);
	return sefer_pstore_close(h) ? 1 : 0;
}

static int do_compact(const char *path)
{
	struct sefer_pstore *h = open_or_die(path);
	uint64_t merged, trimmed;
	int r = sefer_pcompact(h, &merged, &trimmed);

	if (r)
		fprintf(stderr, "sefer-pstore: compact: %s\n", strerror(-r));
	else
		printf("merged %llu blocks, gave back %llu bytes\n", (unsigned long long)merged,
		       (unsigned long long)trimmed);
	return sefer_pstore_close(h) || r ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	if (!strcmp(argv[1], "create"))
		return do_create(argc, argv);
	if (argc > 4 || (argc == 4 && strcmp(argv[1], "dump")))
		return usage();
	if (!strcmp(argv[1], "stat"))
		return do_stat(argv[2]);
	if (!strcmp(argv[1], "verify"))
		return do_verify(argv[2]);
	if (!strcmp(argv[1], "compact"))
		return do_compact(argv[2]);
	if (!strcmp(argv[1], "dump"))
		return do_dump(argv[2], argc == 4 ? strtoul(argv[3], NULL, 0) : 50);
	return usage();
}
