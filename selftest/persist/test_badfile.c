// SPDX-License-Identifier: MIT
/*
 * Bad files: each is refused with a message naming the problem, and the file is left byte for
 * byte as it was. Wrong magic, a future version, a truncated header, a committed length beyond
 * the file, flipped bits in the store header, the allocator header, its checked words, block
 * headers, footers and free-list links, and a corrupt record inside the synced log.
 * Files that must not be written: a store opened read-only (SEFER_P_RDONLY), crashed or clean,
 * mode 0444 or not, keeps its bytes and its mtime.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/internal.h"
#include "tests.h"

#define WAL (64u << 10)
#define DATA (PSTORE_WAL_OFF + WAL)

static char good[512], bad[512];
static uint64_t good_off[40]; /* make_good's blocks */

/* Which of make_good's blocks it keeps: it frees every third, but the last. */
static bool good_live(int i)
{
	return i % 3 || i == 39;
}

/* A cleanly closed store: 40 blocks, every third freed (not the last), the root on block 1. */
static void make_good(int kind)
{
	struct sefer_popts o = { .wal_bytes = WAL };
	struct sefer_pstore *h;

	snprintf(good, sizeof(good), "%s", tpath("good"));
	snprintf(bad, sizeof(bad), "%s", tpath("bad"));
	ck_assert_int_eq(sefer_pstore_create(good, kind, &o, &h), 0);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(sefer_palloc(h, 40 + 8 * (i % 4), &good_off[i]), 0);
		ck_assert_int_eq(sefer_pwrite(h, good_off[i], 0, "data", 4), 0);
	}
	for (int i = 0; i < 40; i++)
		if (!good_live(i))
			ck_assert_int_eq(sefer_pfree(h, good_off[i]), 0);
	ck_assert_int_eq(sefer_pset_root(h, good_off[1]), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
}

static uint8_t *slurp(const char *p, size_t *len)
{
	struct stat st;
	int fd = open(p, O_RDONLY);
	uint8_t *b;

	ck_assert_int_ge(fd, 0);
	fstat(fd, &st);
	*len = (size_t)st.st_size;
	b = malloc(*len + 1);
	ck_assert_int_eq(read(fd, b, *len), (ssize_t)*len);
	close(fd);
	return b;
}

static void spit(const char *p, const uint8_t *b, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
}

/* Does `bad` hold exactly b[0, len)? (A refused file is never written to.) */
static bool bad_is(const uint8_t *b, size_t len)
{
	size_t len2;
	uint8_t *after = slurp(bad, &len2);
	bool same = len2 == len && !memcmp(after, b, len);

	free(after);
	return same;
}

/* Write `bad` from good with bit `bit` of byte `at` flipped (at < 0: no flip), truncated to
 * `trunc` (0: keep), open it and expect refusal naming `want`, file unchanged. */
static void expect_refused(long at, int bit, size_t trunc, const char *want)
{
	size_t len;
	uint8_t *b = slurp(good, &len);
	struct sefer_pstore *h;
	char err[256] = "";
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	int r;

	if (at >= 0) {
		ck_assert_uint_lt((size_t)at, len);
		b[at] ^= (uint8_t)(1u << bit);
	}
	if (trunc)
		len = trunc;
	spit(bad, b, len);
	r = sefer_pstore_open(bad, &o, &h);
	if (!r)
		sefer_pstore_close(h);
	ck_assert_msg(r < 0, "corruption at %ld (want '%s') was accepted", at, want);
	ck_assert_msg(strstr(err, want), "at %ld: message '%s' does not name '%s'", at, err, want);
	ck_assert_msg(bad_is(b, len), "refused file was modified");
	free(b);
}

START_TEST(test_store_header)
{
	make_good(SEFER_PALLOC_SEGREGATED);
	expect_refused(0, 1, 0, "bad magic");
	expect_refused(7, 1, 0, "newer than this library");
	expect_refused(-1, 0, 100, "truncated header");
	expect_refused(-1, 0, 8, "truncated header: the file is 8 bytes");	/* only the magic */
	expect_refused(7, 0, 8, "truncated header: the file is 8 bytes");	/* magic, version 0 */
	expect_refused(7, 0, 0, "store version 0 is not a version");
	expect_refused(-1, 0, 5, "bad magic");
	expect_refused(-1, 0, DATA + 600, "beyond the end of the file");
	expect_refused(33, 4, 0, "header checksum mismatch");
	expect_refused(20, 0, 0, "header checksum mismatch");
	expect_refused(507, 7, 0, "header checksum mismatch");
	unlink(good);
	unlink(bad);
}
END_TEST

START_TEST(test_alloc_header)
{
	make_good(_i);
	expect_refused(DATA + 0, 0, 0, "bad allocator magic");
	expect_refused(DATA + 9, 3, 0, "allocator header checksum");
	expect_refused(DATA + 4, 1, 0, "allocator header checksum");
	expect_refused(DATA + PA_TAIL_OFF + 1, 2, 0, "tail word");
	expect_refused(DATA + PA_ROOT_OFF + 6, 5, 0, "root slot");
	if (_i != SEFER_PALLOC_BESTFIT)
		expect_refused(DATA + PA_LIST_OFF + 2, 0, 0, "head");
	unlink(good);
	unlink(bad);
}
END_TEST

START_TEST(test_block_metadata)
{
	make_good(_i);
	/* block 0 (freed: every third) header, block 1 header, a free block's link */
	expect_refused(DATA + PA_HDR_END, 4, 0, "block header at 504");
	expect_refused(DATA + PA_HDR_END + 1, 0, 0, "block header at 504");
	size_t len;
	uint8_t *b = slurp(good, &len);
	uint64_t w, size;

	memcpy(&w, b + DATA + PA_HDR_END, 8);
	size = pword_val(w) & ~15ULL;
	expect_refused(DATA + PA_HDR_END + (long)size + 7, 6, 0, "at");
	if (_i == SEFER_PALLOC_SEGREGATED)	/* block 0 is free: its link word */
		expect_refused(DATA + PA_HDR_END + 8 + 3, 1, 0, "link fails its check");
	else					/* block 0's footer */
		expect_refused(DATA + PA_HDR_END + (long)size - 8 + 2, 1, 0, "footer");
	free(b);
	unlink(good);
	unlink(bad);
}
END_TEST

/* sefer_pwalk's callback: count each of make_good's blocks seen, and any other. */
static int walk_count(void *arg, uint64_t o, uint64_t usable)
{
	int *seen = arg;

	(void)usable;
	for (int i = 0; i < 40; i++)
		if (good_off[i] == o) {
			seen[i]++;
			return 0;
		}
	seen[40]++;
	return 0;
}

/*
 * One bit flipped in a good store: refused with a message and the file left as it was, or
 * accepted with exactly its live blocks, their payloads (but for the flipped byte, when it is
 * one: payloads carry no checksum) and its root, consistent to fsck, and closing cleanly.
 */
static void flip_refused_or_intact(const uint8_t *g, size_t len, long at, int bit)
{
	char err[256] = "";
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h;
	struct sefer_pverify v;
	uint8_t *b = malloc(len);
	int seen[41] = { 0 };

	memcpy(b, g, len);
	b[at] ^= (uint8_t)(1u << bit);
	spit(bad, b, len);
	if (sefer_pstore_open(bad, &o, &h) < 0) {
		ck_assert_msg(err[0], "flip at %ld bit %d: refused without a message", at, bit);
		ck_assert_msg(bad_is(b, len), "flip at %ld bit %d: refused file was modified", at,
			      bit);
		free(b);
		return;
	}
	ck_assert_msg(!sefer_pverify(h, &v), "flip at %ld bit %d accepted, fsck: %s", at, bit,
		      v.msg);
	ck_assert_int_eq(sefer_pwalk(h, walk_count, seen), 0);
	for (int i = 0; i < 40; i++) {
		char data[4];
		uint64_t pos = DATA + good_off[i];
		bool flipped = (uint64_t)at >= pos && (uint64_t)at < pos + 4;

		ck_assert_msg(seen[i] == good_live(i), "flip at %ld bit %d accepted: block %d %s", at,
			      bit, i, seen[i] ? "live again" : "lost");
		if (!good_live(i))
			continue;
		ck_assert_int_eq(sefer_pread(h, good_off[i], 0, data, 4), 0);
		ck_assert_msg(flipped || !memcmp(data, "data", 4),
			      "flip at %ld bit %d accepted: block %d's payload changed", at, bit, i);
	}
	ck_assert_msg(!seen[40], "flip at %ld bit %d accepted: %d unknown blocks", at, bit,
		      seen[40]);
	ck_assert_msg(sefer_pget_root(h) == good_off[1], "flip at %ld bit %d accepted: root moved",
		      at, bit);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	free(b);
}

/*
 * Every byte of the store header and of the arena (allocator header, block headers, footers,
 * links, payloads, free space), and a sample of the header page's padding and of the log area,
 * one bit each (the bit moves with the offset).
 */
START_TEST(test_every_byte)
{
	size_t len;
	uint8_t *g;

	make_good(_i);
	g = slurp(good, &len);
	for (long at = 0; at < (long)len; at++) {
		if ((at >= PSTORE_HDR_BYTES && at < PSTORE_WAL_OFF && at % 61) ||
		    (at >= PSTORE_WAL_OFF && at < (long)DATA && at % 251))
			continue;
		flip_refused_or_intact(g, len, at, (int)(at % 8));
	}
	free(g);
	unlink(good);
	unlink(bad);
}
END_TEST

/* A flipped bit inside a synced log record (a later record proves it was synced). */
START_TEST(test_log_record)
{
	struct sefer_popts o = { .wal_bytes = WAL };
	struct sefer_pstore *h;
	pid_t pid;
	int status;

	snprintf(good, sizeof(good), "%s", tpath("good"));
	snprintf(bad, sizeof(bad), "%s", tpath("bad"));
	pid = fork();
	if (pid == 0) {
		uint64_t off;

		if (sefer_pstore_create(good, SEFER_PALLOC_SEGREGATED, &o, &h))
			_exit(2);
		for (int i = 0; i < 20; i++)
			if (sefer_palloc(h, 64, &off))
				_exit(3);
		_exit(0);	/* unclean: the log holds the records */
	}
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* find the 6th record in the log: records are 8-byte aligned, "SWAL" magic */
	size_t len;
	uint8_t *b = slurp(good, &len);
	long at = -1;
	int n = 0;

	for (size_t p = PSTORE_WAL_OFF; p < DATA; p += 8)
		if (!memcmp(b + p, "SWAL", 4) && ++n == 6) {
			at = (long)p + 44;
			break;
		}
	free(b);
	ck_assert_int_ge(at, 0);
	expect_refused(at, 2, 0, "is corrupt (checksum)");
	/* the unmodified file opens and replays */
	ck_assert_int_eq(sefer_pstore_open(good, NULL, &h), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(good);
	unlink(bad);
}
END_TEST

/* Set p's mtime to a fixed moment in the past: a write would move it to now. */
static void age(const char *p)
{
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };

	ck_assert_int_eq(utimensat(AT_FDCWD, p, t, 0), 0);
}

/* p holds b[0, len) and its mtime is age()'s. */
static void unchanged(const char *p, const uint8_t *b, size_t len, const char *when)
{
	struct stat st;
	size_t now_len;
	uint8_t *now = slurp(p, &now_len);

	ck_assert_msg(now_len == len && !memcmp(now, b, len), "%s: the file's bytes changed",
		      when);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_msg(st.st_mtim.tv_sec == 1000000000 && st.st_mtim.tv_nsec == 0,
		      "%s: the file's mtime moved", when);
	free(now);
}

/*
 * Open read-only, check the recovered contents and that nothing may change; the child's exit
 * status: 0 ok, 1 open failed, 2 contents or a refusal wrong, 3 the writable open was let in.
 */
static int read_only_pass(const char *p, const uint64_t *off, unsigned n, int want_w)
{
	struct sefer_precovery rep;
	struct sefer_popts ro = { .flags = SEFER_P_RDONLY, .report = &rep };
	struct sefer_pstore *h, *h2;
	uint8_t b[64];
	uint64_t x;

	if (sefer_pstore_open(p, &ro, &h))
		return 1;
	for (unsigned i = 1; i < n; i += 2)
		if (sefer_pread(h, off[i], 0, b, 64) || b[0] != i || b[63] != i)
			return 2;
	if (sefer_palloc(h, 16, &x) != -EROFS || sefer_pfree(h, off[1]) != -EROFS ||
	    sefer_pwrite(h, off[1], 0, "x", 1) != -EROFS || sefer_pset_root(h, off[1]) != -EROFS ||
	    sefer_prealloc(h, off[1], 200, &x) != -EROFS || sefer_pcompact(h, NULL, NULL) != -EROFS)
		return 2;
	/* A second reader shares the lock; a writer is refused (by the lock or the mode bits). */
	if (sefer_pstore_open(p, &ro, &h2))
		return 2;
	sefer_pstore_close(h2);
	if (sefer_pstore_open(p, NULL, &h2) != want_w)
		return 3;
	return sefer_pstore_close(h) ? 2 : 0;
}

START_TEST(test_read_only)
{
	const char *p = tpath("rdonly");
	struct sefer_precovery rep = { 0 }, rep2 = { 0 };
	struct sefer_popts ro = { .flags = SEFER_P_RDONLY, .report = &rep };
	struct sefer_popts rw = { .report = &rep2 };
	struct sefer_pstore *h, *w;
	struct sefer_pverify v;
	uint64_t off[16];
	size_t len;
	uint8_t *b;
	int st;

	ck_assert_int_eq(make_crashed_store(p, 16, off), 0);
	age(p);
	b = slurp(p, &len);

	/* The crashed store, read-only: recovery in memory, reported, nothing written. */
	ck_assert_int_eq(sefer_pstore_open(p, &ro, &h), 0);
	ck_assert_int_eq(rep.clean, 0);
	ck_assert_uint_gt(rep.wal_records, 16);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_uint_eq(v.used_blocks, 8);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(read_only_pass(p, off, 16, -EWOULDBLOCK), 0);
	unchanged(p, b, len, "read-only open of a crashed store");

	/* Mode 0444, opened by a user who may not write it (root: a child as nobody). */
	ck_assert_int_eq(chmod(p, 0444), 0);
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(4);
		_exit(read_only_pass(p, off, 16, -EACCES));
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "0444 file: read-only pass status %d",
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	unchanged(p, b, len, "read-only open of a 0444 file");
	ck_assert_int_eq(chmod(p, 0644), 0);

	/* The next writable open recovers for good, as the read-only one said it would. */
	ck_assert_int_eq(sefer_pstore_open(p, &rw, &w), 0);
	ck_assert_int_eq(rep2.clean, 0);
	ck_assert_uint_eq(rep2.wal_records, rep.wal_records);
	ck_assert_uint_eq(rep2.bytes_trimmed, rep.bytes_trimmed);
	ck_assert_uint_eq(rep2.orphans_relinked, rep.orphans_relinked);
	ck_assert_int_eq(sefer_pstore_open(p, &ro, &h), -EWOULDBLOCK);	/* a writer has it */
	ck_assert_int_eq(sefer_pstore_close(w), 0);
	free(b);

	/* A clean store, read-only: not a byte or the mtime changes either. */
	age(p);
	b = slurp(p, &len);
	ck_assert_int_eq(sefer_pstore_open(p, &ro, &h), 0);
	ck_assert_int_eq(rep.clean, 1);
	ck_assert_uint_eq(rep.wal_records, 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unchanged(p, b, len, "read-only open of a clean store");
	free(b);
	unlink(p);

	/* Nothing is created read-only. */
	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, &ro, &h), -EINVAL);
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

Suite *badfile_suite(void)
{
	Suite *s = suite_create("persist-badfile");
	TCase *tc = tcase_create("badfile");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_store_header);
	tcase_add_loop_test(tc, test_alloc_header, 0, SEFER_PALLOC_KINDS);
	tcase_add_loop_test(tc, test_block_metadata, 0, SEFER_PALLOC_KINDS);
	tcase_add_test(tc, test_log_record);
	tcase_add_loop_test(tc, test_every_byte, 0, SEFER_PALLOC_KINDS);
	tcase_add_test(tc, test_read_only);
	suite_add_tcase(s, tc);
	return s;
}
