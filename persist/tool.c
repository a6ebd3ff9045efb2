// SPDX-License-Identifier: MIT
/*
 * sefer-pstore: create, inspect, fill and compact persist store files (sefer-pstore(1)).
 *
 *   sefer-pstore create [-a segregated|first-fit|best-fit] [-w LOG_KIB] FILE
 *   sefer-pstore stat FILE          header, what recovery did or would do, counts, free lists
 *   sefer-pstore verify FILE        fsck: exit 0 when consistent, 1 with the problem
 *   sefer-pstore dump FILE [N]      the first N (default 50) allocated blocks
 *   sefer-pstore list FILE          every block: handle and value length
 *   sefer-pstore get FILE HANDLE    the value put at HANDLE, to standard output
 *   sefer-pstore put [-f VALUE_FILE] FILE   store a value (standard input), print its handle
 *   sefer-pstore del FILE HANDLE    free the block at HANDLE
 *   sefer-pstore compact FILE       merge free neighbours, give the free tail back
 *
 * stat, verify, dump, list and get open the store read-only (SEFER_P_RDONLY: a shared lock,
 * the file never written); after a crash they show the store as recovery would leave it and
 * say so. put, del and compact open it for writing, which recovers it for good.
 *
 * A value is stored as put writes it: its length (8 bytes, little-endian), then its bytes.
 * Exit status: 0 done, 1 failed (the reason on standard error), 2 wrong usage.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/sefer/persist.h"

#define VALUE_HDR 8

static int usage(void)
{
	fprintf(stderr, "usage: sefer-pstore create [-a segregated|first-fit|best-fit] "
			"[-w LOG_KIB] FILE\n"
			"       sefer-pstore stat|verify|list|compact FILE\n"
			"       sefer-pstore dump FILE [N]\n"
			"       sefer-pstore put [-f VALUE_FILE] FILE\n"
			"       sefer-pstore get|del FILE HANDLE\n");
	return 2;
}

/* The reason on standard error; returns the exit status of a failed command. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sefer-pstore: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return 1;
}

static struct sefer_precovery rep;
static char err[512];

/* Open read-only (the inspection commands) or for writing (recovery happens then). */
static struct sefer_pstore *open_store(const char *path, bool write)
{
	struct sefer_popts o = { .flags = write ? 0 : SEFER_P_RDONLY, .errbuf = err,
				 .errlen = sizeof(err), .report = &rep };
	struct sefer_pstore *h;
	int r = sefer_pstore_open(path, &o, &h);

	if (r) {
		fprintf(stderr, "sefer-pstore: %s\n", err[0] ? err : strerror(-r));
		return NULL;
	}
	return h;
}

/* What recovery would do to a store opened read-only after a crash, in one line. */
static void recovery_would(FILE *out, const char *lead)
{
	fprintf(out, "%swould replay %llu log records, trim %llu bytes and relink %llu orphaned "
		"free blocks (%llu bytes); the next command that writes (put, del, compact) "
		"recovers it\n", lead, (unsigned long long)rep.wal_records,
		(unsigned long long)rep.bytes_trimmed, (unsigned long long)rep.orphans_relinked,
		(unsigned long long)rep.orphan_bytes);
}

/* A read command on a crashed store: say that what it shows is the recovered state. */
static void note_unclean(const char *path)
{
	if (rep.clean)
		return;
	fprintf(stderr, "sefer-pstore: %s was not closed cleanly; shown as recovery would leave "
		"it (read-only: nothing written). Recovery ", path);
	recovery_would(stderr, "");
}

/* A whole decimal number in [min, max], or false. */
static bool parse_u64(const char *s, unsigned long long min, unsigned long long max,
		      unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end && *v >= min && *v <= max;
}

static int do_create(int argc, char **argv)
{
	enum sefer_palloc_kind kind = SEFER_PALLOC_SEGREGATED;
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h;
	unsigned long long kib;
	int i, r;

	for (i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-a")) {
			if (!strcmp(argv[i + 1], "first-fit"))
				kind = SEFER_PALLOC_FIRSTFIT;
			else if (!strcmp(argv[i + 1], "best-fit"))
				kind = SEFER_PALLOC_BESTFIT;
			else if (strcmp(argv[i + 1], "segregated")) {
				fail("-a: '%s' is not an allocator (segregated, first-fit, "
				     "best-fit)", argv[i + 1]);
				return 2;
			}
		} else if (!strcmp(argv[i], "-w")) {
			if (!parse_u64(argv[i + 1], 1, 1ULL << 30, &kib)) {
				fail("-w: '%s' is not a log size in KiB (a whole number from 1 to "
				     "1073741824)", argv[i + 1]);
				return 2;
			}
			o.wal_bytes = kib << 10;
		} else {
			return usage();
		}
	}
	if (i != argc - 1)
		return usage();
	r = sefer_pstore_create(argv[i], kind, &o, &h);
	if (r)
		return fail("%s", err[0] ? err : strerror(-r));
	return sefer_pstore_close(h) ? 1 : 0;
}

static int do_stat(const char *path)
{
	struct sefer_pstore *h = open_store(path, false);
	struct sefer_pstats st;

	if (!h)
		return 1;
	sefer_pstats(h, &st);
	printf("file          %s\n", path);
	printf("allocator     %s\n", st.allocator);
	printf("file bytes    %llu\n", (unsigned long long)st.file_bytes);
	printf("payload bytes %llu\n", (unsigned long long)st.payload_bytes);
	printf("root          %llu\n", (unsigned long long)sefer_pget_root(h));
	if (rep.clean) {
		printf("last close    clean\n");
		printf("recovery      none needed (%llu blocks scanned, %llu us)\n",
		       (unsigned long long)rep.blocks_scanned, (unsigned long long)rep.usec);
	} else {
		printf("last close    UNCLEAN: recovery needed, not done (stat opens read-only)\n");
		recovery_would(stdout, "recovery      ");
	}
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
	struct sefer_pstore *h = open_store(path, false);
	struct sefer_pverify v;
	int r;

	if (!h)
		return 1;
	note_unclean(path);
	r = sefer_pverify(h, &v);
	printf("%s: %llu blocks (%llu used, %llu free), %llu orphans: %s%s\n", path,
	       (unsigned long long)v.blocks, (unsigned long long)v.used_blocks,
	       (unsigned long long)v.free_blocks, (unsigned long long)v.orphans,
	       r ? "ERROR: " : "ok", r ? v.msg : "");
	sefer_pstore_close(h);
	return r ? 1 : 0;
}

/* The allocated blocks, in address order, up to `max`. */
struct blocks {
	unsigned long long max, n;
	unsigned long long *off, *use;
};

static int collect(void *arg, uint64_t off, uint64_t usable)
{
	struct blocks *d = arg;

	if (d->n == d->max)
		return 1;
	if (!(d->n & (d->n + 1))) {	/* n + 1 a power of two: grow */
		unsigned long long *o = realloc(d->off, 2 * (d->n + 1) * sizeof(*o));
		unsigned long long *u = o ? realloc(d->use, 2 * (d->n + 1) * sizeof(*u)) : NULL;

		if (o)
			d->off = o;
		if (!u)
			return -ENOMEM;
		d->use = u;
	}
	d->off[d->n] = off;
	d->use[d->n++] = usable;
	return 0;
}

static int walk(struct sefer_pstore *h, struct blocks *d)
{
	int r = sefer_pwalk(h, collect, d);

	if (r < 0)
		fprintf(stderr, "sefer-pstore: walking the blocks: %s\n", strerror(-r));
	return r < 0 ? r : 0;
}

static int do_dump(const char *path, unsigned long long n)
{
	struct blocks d = { .max = n };
	struct sefer_pstore *h = open_store(path, false);
	int r;

	if (!h)
		return 1;
	note_unclean(path);
	r = walk(h, &d);
	printf("%-14s %-10s first bytes\n", "offset", "usable");
	for (unsigned long long i = 0; i < d.n; i++) {
		unsigned char b[16] = { 0 };
		size_t k = d.use[i] < 16 ? d.use[i] : 16;

		if (sefer_pread(h, d.off[i], 0, b, k))
			r = -EIO;
		printf("%-14llu %-10llu", d.off[i], d.use[i]);
		for (size_t j = 0; j < k; j++)
			printf(" %02x", b[j]);
		printf("\n");
	}
	free(d.off);
	free(d.use);
	return sefer_pstore_close(h) || r ? 1 : 0;
}

/* The length of the value put stored at off, or false when the block holds none. */
static bool value_len(struct sefer_pstore *h, uint64_t off, uint64_t usable, uint64_t *len)
{
	uint8_t b[VALUE_HDR];

	if (usable < VALUE_HDR || sefer_pread(h, off, 0, b, VALUE_HDR))
		return false;
	*len = 0;
	for (int i = VALUE_HDR - 1; i >= 0; i--)
		*len = *len << 8 | b[i];
	return *len <= usable - VALUE_HDR;
}

static int do_list(const char *path)
{
	struct blocks d = { .max = ~0ULL };
	struct sefer_pstore *h = open_store(path, false);
	uint64_t len;
	int r;

	if (!h)
		return 1;
	note_unclean(path);
	r = walk(h, &d);
	for (unsigned long long i = 0; i < d.n; i++) {
		if (value_len(h, d.off[i], d.use[i], &len))
			printf("%llu %llu\n", d.off[i], (unsigned long long)len);
		else
			printf("%llu -\n", d.off[i]);
	}
	free(d.off);
	free(d.use);
	return sefer_pstore_close(h) || r ? 1 : 0;
}

/* HANDLE: a block's offset, as put prints it. */
static bool parse_handle(const char *s, uint64_t *off)
{
	unsigned long long v;

	if (!parse_u64(s, 1, ~0ULL, &v)) {
		fprintf(stderr, "sefer-pstore: '%s' is not a handle (a block offset that put "
			"printed)\n", s);
		return false;
	}
	*off = v;
	return true;
}

static int do_get(const char *path, const char *handle)
{
	struct sefer_pstore *h;
	uint64_t off, usable, len;
	uint8_t *buf;
	int r;

	if (!parse_handle(handle, &off))
		return 2;
	h = open_store(path, false);
	if (!h)
		return 1;
	note_unclean(path);
	usable = sefer_pusable(h, off);
	if (!usable || !value_len(h, off, usable, &len)) {
		sefer_pstore_close(h);
		return fail(usable ? "block %s of %s holds no value put by sefer-pstore" :
				     "no block at handle %s in %s", handle, path);
	}
	buf = malloc(len ? len : 1);
	r = buf ? sefer_pread(h, off, VALUE_HDR, buf, len) : -ENOMEM;
	if (!r && fwrite(buf, 1, len, stdout) != len)
		r = -EIO;
	if (!r && fflush(stdout))
		r = -errno;
	free(buf);
	if (r)
		fprintf(stderr, "sefer-pstore: get %s: %s\n", handle, strerror(-r));
	return sefer_pstore_close(h) || r ? 1 : 0;
}

/* The whole of f into a malloc'ed buffer after VALUE_HDR free bytes; NULL on failure. */
static uint8_t *read_all(FILE *f, size_t *len)
{
	size_t cap = 4096 + VALUE_HDR, n = VALUE_HDR;
	uint8_t *b = malloc(cap), *nb;

	while (b) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		nb = cap < ((size_t)-1) / 2 ? realloc(b, cap * 2) : NULL;
		if (!nb) {
			free(b);
			return NULL;
		}
		b = nb;
		cap *= 2;
	}
	if (!b || ferror(f)) {
		free(b);
		return NULL;
	}
	*len = n - VALUE_HDR;
	return b;
}

static int do_put(int argc, char **argv)
{
	const char *vfile = NULL, *path = NULL;
	struct sefer_pstore *h;
	FILE *in = stdin;
	uint64_t off;
	uint8_t *b;
	size_t len;
	int r;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-f") && i + 1 < argc && !vfile)
			vfile = argv[++i];
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			return usage();
	}
	if (!path)
		return usage();
	if (vfile && !(in = fopen(vfile, "rb")))
		return fail("-f %s: %s", vfile, strerror(errno));
	b = read_all(in, &len);
	if (vfile)
		fclose(in);
	if (!b)
		return fail("reading the value from %s: read error or out of memory",
			    vfile ? vfile : "standard input");
	for (int i = 0; i < VALUE_HDR; i++)
		b[i] = (uint8_t)((uint64_t)len >> (8 * i));
	h = open_store(path, true);
	if (!h) {
		free(b);
		return 1;
	}
	r = sefer_palloc(h, VALUE_HDR + len, &off);
	if (!r)
		r = sefer_pwrite(h, off, 0, b, VALUE_HDR + len);
	free(b);
	if (r)
		fprintf(stderr, "sefer-pstore: put: %s\n", strerror(-r));
	else
		printf("%llu\n", (unsigned long long)off);
	return sefer_pstore_close(h) || r ? 1 : 0;
}

static int do_del(const char *path, const char *handle)
{
	struct sefer_pstore *h;
	uint64_t off;
	int r;

	if (!parse_handle(handle, &off))
		return 2;
	h = open_store(path, true);
	if (!h)
		return 1;
	r = sefer_pfree(h, off);
	if (r == -EINVAL)
		fprintf(stderr, "sefer-pstore: no block at handle %s in %s\n", handle, path);
	else if (r)
		fprintf(stderr, "sefer-pstore: del %s: %s\n", handle, strerror(-r));
	return sefer_pstore_close(h) || r ? 1 : 0;
}

static int do_compact(const char *path)
{
	struct sefer_pstore *h = open_store(path, true);
	uint64_t merged, trimmed;
	int r;

	if (!h)
		return 1;
	r = sefer_pcompact(h, &merged, &trimmed);
	if (r)
		fprintf(stderr, "sefer-pstore: compact: %s\n", strerror(-r));
	else
		printf("merged %llu blocks, gave back %llu bytes\n", (unsigned long long)merged,
		       (unsigned long long)trimmed);
	return sefer_pstore_close(h) || r ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	unsigned long long n = 50;

	if (argc < 3)
		return usage();
	if (!strcmp(cmd, "create"))
		return do_create(argc, argv);
	if (!strcmp(cmd, "put"))
		return do_put(argc, argv);
	if (!strcmp(cmd, "get") || !strcmp(cmd, "del")) {
		if (argc != 4)
			return usage();
		return cmd[0] == 'g' ? do_get(argv[2], argv[3]) : do_del(argv[2], argv[3]);
	}
	if (!strcmp(cmd, "dump") && argc == 4) {
		if (!parse_u64(argv[3], 0, ~0ULL, &n)) {
			fprintf(stderr, "sefer-pstore: dump: '%s' is not a block count\n", argv[3]);
			return 2;
		}
	} else if (argc != 3) {
		return usage();
	}
	if (!strcmp(cmd, "stat"))
		return do_stat(argv[2]);
	if (!strcmp(cmd, "verify"))
		return do_verify(argv[2]);
	if (!strcmp(cmd, "dump"))
		return do_dump(argv[2], n);
	if (!strcmp(cmd, "list"))
		return do_list(argv[2]);
	if (!strcmp(cmd, "compact"))
		return do_compact(argv[2]);
	return usage();
}
