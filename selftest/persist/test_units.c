// SPDX-License-Identifier: MIT
/*
 * Unit tests: class arithmetic, the plain byte stack, the file lock, allocator invariants
 * after random operation sequences (each allocator), errors that must change nothing, the
 * root slot, the coalescer, orphan relinking, group commit, the page cache and 1M-block
 * recovery time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "persist/internal.h"
#include "persist/segregated.h"
#include "model.h"
#include "tests.h"

static void self(void *arg, const struct pm_msg *m)
{
	pm_apply(arg, m);
}

START_TEST(test_classes)
{
	unsigned seen[SEGREGATED_CLASSES] = { 0 };

	ck_assert_uint_eq(sefer__segregated_class_size(0), 16);
	ck_assert_uint_eq(sefer__segregated_class_size(15), 256);
	ck_assert_uint_eq(sefer__segregated_class_size(31), 4096);
	for (unsigned c = 0; c + 1 < 32; c++)
		ck_assert_uint_lt(sefer__segregated_class_size(c),
				  sefer__segregated_class_size(c + 1));
	for (uint64_t size = 0; size <= 65536; size++) {
		uint64_t need = (size + 8 + 15) & ~15ULL;
		unsigned c = sefer__segregated_class(need);

		ck_assert_uint_lt(c, SEGREGATED_CLASSES);
		seen[c]++;
		if (need > 4096) {
			ck_assert_uint_eq(c, 32);
			continue;
		}
		ck_assert_uint_ge(sefer__segregated_class_size(c), need);
		if (c)
			ck_assert_uint_lt(sefer__segregated_class_size(c - 1), need);
		if (need > 256)	/* 4 classes per power of two: waste under 25% */
			ck_assert_uint_le(sefer__segregated_class_size(c) - need, need / 4);
		ck_assert_uint_eq(need & 15, 0);
	}
	for (unsigned c = 0; c < SEGREGATED_CLASSES; c++)
		ck_assert_uint_gt(seen[c], 0);
	for (uint64_t b = 16; b <= 65536; b += 16) {
		unsigned l = sefer__segregated_list(b);

		if (b > 4096) {
			ck_assert_uint_eq(l, 32);
			continue;
		}
		ck_assert_uint_le(sefer__segregated_class_size(l), b);
		if (l + 1 < 32)
			ck_assert_uint_gt(sefer__segregated_class_size(l + 1), b);
	}
}
END_TEST

START_TEST(test_store_stack)
{
	const char *p = tpath("stack");
	struct pstore s;
	struct pstore_open_info info;
	char err[256] = "", buf[10000];
	uint64_t off, trimmed;

	ck_assert_int_eq(sefer__pstore_create(&s, p, 64 << 10, err, sizeof(err)), 0);
	ck_assert_int_eq(sefer__pstore_extend(&s, 20000, &off), 0);
	ck_assert_uint_eq(off, 0);
	memset(buf, 'a', sizeof(buf));
	ck_assert_int_eq(sefer__pstore_set(&s, 100, buf, sizeof(buf)), 0);	/* spans sectors */
	ck_assert_int_eq(sefer__pstore_set(&s, 5, "hello", 5), 0);
	ck_assert_int_eq(sefer__pstore_discard(&s, 5000), 0);
	ck_assert_int_eq(sefer__pstore_set(&s, 15000, "x", 1), -EINVAL); /* beyond the length */
	ck_assert_int_eq(sefer__pstore_discard(&s, 1 << 30), -EINVAL);
	ck_assert_uint_eq(sefer__pstore_len(&s), 15000);
	ck_assert_int_eq(sefer__pstore_close(&s, false), 0);		/* as if crashed: replay */

	ck_assert_int_eq(sefer__pstore_open(&s, p, false, &info, err, sizeof(err)), 0);
	ck_assert(!info.clean);
	ck_assert_uint_eq(info.replayed, 4);
	ck_assert_uint_eq(sefer__pstore_len(&s), 15000);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(sefer__pstore_read(&s, 0, buf, 200), 0);
	ck_assert(!memcmp(buf + 5, "hello", 5));
	ck_assert_int_eq(buf[100], 'a');
	ck_assert_int_eq(sefer__pstore_finish_open(&s, &trimmed), 0);
	ck_assert_int_eq(sefer__pstore_close(&s, true), 0);
	ck_assert_int_eq(sefer__pstore_open(&s, p, false, &info, err, sizeof(err)), 0);
	ck_assert(info.clean);
	ck_assert_uint_eq(info.replayed, 0);
	ck_assert_int_eq(sefer__pstore_read(&s, 10099, buf, 3), 0);
	ck_assert(buf[0] == 'a' && buf[1] == 0 && buf[2] == 0);
	ck_assert_int_eq(sefer__pstore_close(&s, true), 0);
	unlink(p);
}
END_TEST

/*
 * The page cache: a sync carries the log only; changed pages reach their place at a
 * checkpoint, which a full cache forces even when the log has room; a crash loses nothing.
 */
START_TEST(test_page_cache)
{
	const char *p = tpath("pcache");
	struct pstore s;
	struct pstore_open_info info;
	char err[256] = "";
	uint64_t off, trimmed, ckpts;
	const int npages = 200;
	int fd;

	ck_assert_int_eq(sefer__pstore_create(&s, p, 64 << 10, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.cache_max, 64);
	ck_assert_int_eq(sefer__pstore_extend(&s, (uint64_t)npages * 4096, &off), 0);
	ckpts = s.ckpt_count;
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < npages; i++) {
		uint8_t v = (uint8_t)(i + 1), back = 0, disk = 0;
		uint64_t at = (uint64_t)i * 4096 + (uint64_t)(i % 4000);

		ck_assert_int_eq(sefer__pstore_set(&s, at, &v, 1), 0);
		ck_assert_int_eq(sefer__pstore_read(&s, at, &back, 1), 0);
		ck_assert_uint_eq(back, v);
		/* durable in the log, not yet in place (until the cache holds 64 pages) */
		ck_assert_int_eq(pread(fd, &disk, 1, (off_t)(s.data_off + at)), 1);
		ck_assert_uint_eq(disk, 0);
		ck_assert_uint_le(s.cache.n, s.cache_max + 1);
	}
	close(fd);
	/* 200 records of 64 bytes never fill a 64 KiB log: the cache forced the checkpoints */
	ck_assert_uint_ge(s.ckpt_count - ckpts, 3);
	ck_assert_int_eq(sefer__pstore_close(&s, false), 0); /* crash: the cache is lost */
	ck_assert_int_eq(sefer__pstore_open(&s, p, false, &info, err, sizeof(err)), 0);
	ck_assert_uint_gt(info.replayed, 0);
	for (int i = 0; i < npages; i++) {
		uint8_t back = 0;

		ck_assert_int_eq(
			sefer__pstore_read(&s, (uint64_t)i * 4096 + (uint64_t)(i % 4000), &back, 1),
			0);
		ck_assert_uint_eq(back, (uint8_t)(i + 1));
	}
	ck_assert_int_eq(sefer__pstore_finish_open(&s, &trimmed), 0);
	ck_assert_uint_eq(s.file_len % 4096, 0);
	ck_assert_int_eq(sefer__pstore_close(&s, true), 0);
	unlink(p);
}
END_TEST

/* fsync interposed for this program: count the calls on directories (then do the sync). */
static _Atomic int dir_syncs;

int fsync(int fd)
{
	struct stat st;

	if (!fstat(fd, &st) && S_ISDIR(st.st_mode))
		atomic_fetch_add(&dir_syncs, 1);
	return (int)syscall(SYS_fsync, fd);
}

/* Creating a store syncs its directory, so a power cut cannot take the new file away. */
START_TEST(test_create_syncs_dir)
{
	const char *p = tpath("dirsync");
	struct sefer_pstore *h;
	int before = atomic_load(&dir_syncs), after_create, after_open;

	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, NULL, &h), 0);
	after_create = atomic_load(&dir_syncs);
	ck_assert_int_eq(after_create, before + 1);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, NULL, &h), 0);	/* opening creates nothing */
	after_open = atomic_load(&dir_syncs);
	ck_assert_int_eq(after_open, after_create);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

START_TEST(test_lock)
{
	const char *p = tpath("lock");
	char err[256];
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h, *h2;

	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, &o, &h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, &o, &h2), -EWOULDBLOCK);
	ck_assert_ptr_null(h2);
	ck_assert_msg(strstr(err, "in use"), "message: %s", err);
	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, &o, &h2), -EEXIST);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, &o, &h2), 0);
	ck_assert_int_eq(sefer_pstore_close(h2), 0);
	unlink(p);
}
END_TEST

START_TEST(test_invariants)
{
	const char *p = tpath(kind_name[_i]);
	char err[256], msg[256];
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err), .wal_bytes = 256 << 10 };
	struct sefer_pstore *h;
	struct sefer_pverify v;
	struct pmodel m;

	ck_assert_int_eq(sefer_pstore_create(p, _i, &o, &h), 0);
	pm_init(&m, 96, 7 + _i, 20000);
	for (int i = 0; i < 1500; i++) {
		ck_assert_int_eq(pm_step(&m, h, self, &m), 0);
		if (i % 100 == 99) {
			ck_assert_msg(sefer_pverify(h, &v) == 0, "step %d: %s", i, v.msg);
			ck_assert_msg(pm_check(&m, h, msg, sizeof(msg)) == 0, "%s", msg);
		}
	}
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, &o, &h), 0);
	ck_assert_msg(pm_check(&m, h, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_msg(sefer_pverify(h, &v) == 0, "%s", v.msg);
	ck_assert_uint_eq(v.orphans, 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	pm_free(&m);
	unlink(p);
}
END_TEST

START_TEST(test_errors_change_nothing)
{
	const char *p = tpath(kind_name[_i]);
	struct sefer_pstore *h;
	struct sefer_pverify v;
	struct sefer_pstats st;
	uint64_t a, b, n;
	char buf[64] = "payload";

	ck_assert_int_eq(sefer_pstore_create(p, _i, NULL, &h), 0);
	ck_assert_int_eq(sefer_palloc(h, 40, &a), 0);
	ck_assert_int_eq(sefer_palloc(h, 40, &b), 0);
	ck_assert_uint_eq(a % 16, 0);
	ck_assert_int_eq(sefer_pwrite(h, b, 0, buf, 8), 0);
	ck_assert_int_eq(sefer_pfree(h, a), 0);
	sefer_pstats(h, &st);
	uint64_t syncs = st.syncs, len = st.payload_bytes;

	ck_assert_int_eq(sefer_pfree(h, a), -EINVAL);		/* double free */
	ck_assert_int_eq(sefer_pfree(h, b + 16), -EINVAL);	/* interior */
	ck_assert_int_eq(sefer_pfree(h, 3), -EINVAL);		/* header area */
	ck_assert_int_eq(sefer_pfree(h, 1ULL << 40), -EINVAL);	/* beyond the arena */
	ck_assert_int_eq(sefer_prealloc(h, a, 100, &n), -EINVAL);
	ck_assert_int_eq(sefer_pwrite(h, a, 0, buf, 8), -EINVAL);
	ck_assert_int_eq(sefer_pwrite(h, b, 30, buf, 64), -EINVAL);	/* past usable */
	ck_assert_int_eq(sefer_pset_root(h, a), -EINVAL);
	ck_assert_uint_eq(sefer_pusable(h, a), 0);
	sefer_pstats(h, &st);
	ck_assert_uint_eq(st.syncs, syncs);
	ck_assert_uint_eq(st.payload_bytes, len);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(sefer_pread(h, b, 0, buf, 8), 0);
	ck_assert_str_eq(buf, "payload");
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

START_TEST(test_root)
{
	const char *p = tpath(kind_name[_i]);
	struct sefer_pstore *h;
	uint64_t a;

	ck_assert_int_eq(sefer_pstore_create(p, _i, NULL, &h), 0);
	ck_assert_uint_eq(sefer_pget_root(h), 0);
	ck_assert_int_eq(sefer_palloc(h, 100, &a), 0);
	ck_assert_int_eq(sefer_pwrite(h, a, 0, "root data", 10), 0);
	ck_assert_int_eq(sefer_pset_root(h, a), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, NULL, &h), 0);
	a = sefer_pget_root(h);
	char buf[10];

	ck_assert_int_eq(sefer_pread(h, a, 0, buf, 10), 0);
	ck_assert_str_eq(buf, "root data");
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

START_TEST(test_compact)
{
	const char *p = tpath("compact");
	struct sefer_pstore *h;
	struct sefer_pstats st;
	struct sefer_pverify v;
	uint64_t off[64], merged, trimmed, before;

	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, NULL, &h), 0);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(sefer_palloc(h, 24 + 40 * (i % 5), &off[i]), 0);
	for (int i = 0; i < 63; i++)	/* the last stays: the tail cannot shrink on free */
		if (i % 8 != 3)
			ck_assert_int_eq(sefer_pfree(h, off[i]), 0);
	ck_assert_int_eq(sefer_pfree(h, off[63]), 0);
	sefer_pstats(h, &st);
	before = st.payload_bytes;
	ck_assert_uint_gt(st.free_blocks, 8);
	ck_assert_int_eq(sefer_pcompact(h, &merged, &trimmed), 0);
	ck_assert_uint_gt(merged, 20);
	ck_assert_uint_gt(trimmed, 0);
	sefer_pstats(h, &st);
	ck_assert_uint_eq(st.payload_bytes, before - trimmed);
	ck_assert_uint_le(st.free_blocks, 8);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	ck_assert_int_eq(sefer_pstore_open(p, NULL, &h), 0);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_uint_eq(v.used_blocks, 8);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

/* A free block on no list (what an older writer could leave) is found and relinked at open. */
START_TEST(test_orphan_relink)
{
	const char *p = tpath("orphan");
	struct sefer_pstore *h;
	struct sefer_precovery rep;
	struct sefer_popts o = { .report = &rep };
	struct sefer_pverify v;
	struct pstore_open_info info;
	struct pstore s;
	uint64_t a, b, c, salt, n, trimmed, seq;
	char err[256];

	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, NULL, &h), 0);
	ck_assert_int_eq(sefer_palloc(h, 100, &a), 0);
	ck_assert_int_eq(sefer_palloc(h, 100, &b), 0);
	ck_assert_int_eq(sefer_palloc(h, 100, &c), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);

	ck_assert_int_eq(sefer__pstore_open(&s, p, false, &info, err, sizeof(err)), 0);
	ck_assert_int_eq(sefer__pstore_read(&s, PA_SALT_OFF, &salt, 8), 0);
	sefer__pstore_tx_begin(&s);		/* mark b free without linking it */
	sefer__pstore_tx_word(&s, b - 8, sefer__pword_make(salt, b - 8, 112));
	ck_assert_int_eq(sefer__pstore_tx_end(&s, &seq), 0);
	ck_assert_int_eq(sefer__pstore_wait(&s, seq), 0);
	ck_assert_int_eq(sefer__pstore_finish_open(&s, &trimmed), 0);
	ck_assert_int_eq(sefer__pstore_close(&s, true), 0);

	ck_assert_int_eq(sefer_pstore_open(p, &o, &h), 0);
	ck_assert_uint_eq(rep.orphans_relinked, 1);
	ck_assert_uint_eq(rep.orphan_bytes, 112);
	ck_assert_uint_eq(rep.blocks_scanned, 3);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_int_eq(sefer_palloc(h, 100, &n), 0);
	ck_assert_uint_eq(n, b);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

struct thr {
	struct sefer_pstore *h;
	int id, ops;
	int err;
};

static void *worker(void *arg)
{
	struct thr *t = arg;
	uint64_t off[16] = { 0 }, rng = (uint64_t)t->id * 7919 + 1;

	for (int i = 0; i < t->ops && !t->err; i++) {
		int k = i % 16;

		rng = rng * 6364136223846793005ULL + 1;
		if (off[k]) {
			uint64_t got;

			if (sefer_pread(t->h, off[k], 0, &got, 8) || got != off[k] * 31 + (uint64_t)t->id)
				t->err = -1000;
			else
				t->err = sefer_pfree(t->h, off[k]);
			off[k] = 0;
		} else {
			uint64_t tag;

			t->err = sefer_palloc(t->h, 8 + (rng >> 33) % 600, &off[k]);
			tag = off[k] * 31 + (uint64_t)t->id;
			if (!t->err)
				t->err = sefer_pwrite(t->h, off[k], 0, &tag, 8);
		}
	}
	return NULL;
}

START_TEST(test_group_commit)
{
	const char *p = tpath("group");
	struct sefer_pstore *h;
	struct sefer_pstats st;
	struct sefer_pverify v;
	struct thr t[8];
	pthread_t tid[8];

	ck_assert_int_eq(sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, NULL, &h), 0);
	sefer_pstats(h, &st);
	uint64_t s0 = st.syncs;

	for (int i = 0; i < 8; i++) {
		t[i] = (struct thr){ .h = h, .id = i, .ops = 300 };
		pthread_create(&tid[i], NULL, worker, &t[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_int_eq(t[i].err, 0);
	}
	sefer_pstats(h, &st);
	double per = (double)(st.syncs - s0) / (double)st.ops;

	printf("group commit: %llu ops (alloc+write+free), %llu syncs, %.3f syncs/op\n",
	       (unsigned long long)st.ops, (unsigned long long)(st.syncs - s0), per);
	ck_assert_msg(per < 0.6, "syncs per op %.3f", per);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1M blocks, the process dies without closing: reopen (replay + full scan) under 1 s. */
START_TEST(test_recovery_1m)
{
	const char *p = tpath("million");
	long nblocks = tenv("PERSIST_RECOVERY_BLOCKS", 1000000);
	struct sefer_precovery rep;
	struct sefer_popts o = { .flags = SEFER_P_ASYNC, .report = &rep };
	struct sefer_pstore *h;
	struct sefer_pverify v;
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		uint64_t *off = malloc((size_t)nblocks * sizeof(*off));

		if (!off || sefer_pstore_create(p, SEFER_PALLOC_SEGREGATED, &o, &h))
			_exit(2);
		for (long i = 0; i < nblocks; i++)
			if (sefer_palloc(h, 8 + (uint64_t)(i % 7) * 16, &off[i]))
				_exit(3);
		for (long i = 0; i + 1 < nblocks; i += 3)	/* every third block freed */
			if (sefer_pfree(h, off[i]))
				_exit(4);
		if (sefer_psync(h))
			_exit(5);
		_exit(0);	/* no close: the header still says unclean */
	}
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	o.flags = 0;
	double t0 = now_s();

	ck_assert_int_eq(sefer_pstore_open(p, &o, &h), 0);
	double dt = now_s() - t0;

	printf("recovery: %llu blocks scanned, %llu log records replayed, %.3f s\n",
	       (unsigned long long)rep.blocks_scanned, (unsigned long long)rep.wal_records, dt);
	ck_assert(!rep.clean);
	ck_assert_uint_ge(rep.blocks_scanned, (uint64_t)nblocks);
	ck_assert_msg(dt < 1.0, "recovery took %.3f s", dt);
	ck_assert_int_eq(sefer_pverify(h, &v), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	unlink(p);
}
END_TEST

Suite *units_suite(void)
{
	Suite *s = suite_create("persist-units");
	TCase *tc = tcase_create("units");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_classes);
	tcase_add_test(tc, test_store_stack);
	tcase_add_test(tc, test_page_cache);
	tcase_add_test(tc, test_create_syncs_dir);
	tcase_add_test(tc, test_lock);
	tcase_add_loop_test(tc, test_invariants, 0, SEFER_PALLOC_KINDS);
	tcase_add_loop_test(tc, test_errors_change_nothing, 0, SEFER_PALLOC_KINDS);
	tcase_add_loop_test(tc, test_root, 0, SEFER_PALLOC_KINDS);
	tcase_add_test(tc, test_compact);
	tcase_add_test(tc, test_orphan_relink);
	tcase_add_test(tc, test_group_commit);
	tcase_add_test(tc, test_recovery_1m);
	suite_add_tcase(s, tc);
	return s;
}
