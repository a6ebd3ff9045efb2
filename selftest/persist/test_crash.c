// SPDX-License-Identifier: MIT
/*
 * The crash contract, tested three ways for each allocator:
 *  - simulated power cuts: the I/O layer keeps every write since the last sync and, at a
 *    random I/O call, leaves the file with a random subset of them, reordered and torn at
 *    sector boundaries; reopen and check against the model (PERSIST_SIMS per allocator);
 *  - injected faults: seeded per-mille failures of writes (before, after, short), syncs,
 *    truncates and reads; after every failed call reopen and check;
 *  - a kill loop: a child runs random operations and reports each acknowledged one through a
 *    pipe; the parent SIGKILLs it at a random moment, reopens and checks (PERSIST_KILLS).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "persist/internal.h"
#include "model.h"
#include "tests.h"

static void self(void *arg, const struct pm_msg *m)
{
	pm_apply(arg, m);
}

static struct sefer_pstore *reopen(const char *p)
{
	char err[256];
	struct sefer_popts o = { .errbuf = err, .errlen = sizeof(err) };
	struct sefer_pstore *h;
	int r = sefer_pstore_open(p, &o, &h);

	ck_assert_msg(r == 0, "reopen: %s", err);
	return h;
}

START_TEST(test_power_cut)
{
	const char *p = tpath(kind_name[_i]);
	long sims = tenv("PERSIST_SIMS", 150);
	struct sefer_popts o = { .wal_bytes = 128 << 10 };	/* small: checkpoints happen */
	struct sefer_pstore *h;
	struct pmodel m;
	char msg[256];
	uint64_t rng = 99 + (uint64_t)_i;

	ck_assert_int_eq(sefer_pstore_create(p, _i, &o, &h), 0);
	pm_init(&m, 48, 1000 + (uint64_t)_i, 6000);
	for (long it = 0; it < sims; it++) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		struct pio_plan plan = {.seed = rng,
					.crash_sim = true,
					.crash_at = 1 + (rng >> 33) % 120,
					.keep_all = it % 4 == 3};

		sefer__pio_set_plan(&plan);
		while (!sefer__pio_crashed()) {
			int r = pm_step(&m, h, self, &m);

			ck_assert_msg(r == 0 || sefer__pio_crashed(),
				      "op failed without a crash: %d", r);
		}
		sefer_pstore_close(h);
		sefer__pio_set_plan(NULL);
		h = reopen(p);
		ck_assert_msg(pm_recover(&m, h, msg, sizeof(msg)) == 0, "crash %ld: %s", it, msg);
	}
	printf("%s: %ld simulated power cuts, in-flight ops done %llu / not done %llu, leaked "
	       "blocks recovered %llu\n", kind_name[_i], sims, (unsigned long long)m.settled_done,
	       (unsigned long long)m.settled_undone, (unsigned long long)m.leaked);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	pm_free(&m);
	unlink(p);
}
END_TEST

START_TEST(test_faults)
{
	const char *p = tpath(kind_name[_i]);
	struct sefer_popts o = { .wal_bytes = 128 << 10 };
	struct sefer_pstore *h;
	struct pmodel m;
	char msg[256];
	long faults = 0, steps = tenv("PERSIST_FAULT_STEPS", 3000);

	ck_assert_int_eq(sefer_pstore_create(p, _i, &o, &h), 0);
	pm_init(&m, 48, 500 + (uint64_t)_i, 6000);
	struct pio_plan plan = { .seed = 42 + (uint64_t)_i, .permille = 15 };

	sefer__pio_set_plan(&plan);
	for (long i = 0; i < steps; i++) {
		int r = pm_step(&m, h, self, &m);

		if (!r)
			continue;
		/* the failed op is in flight in the model: reopen (faults off) and settle it */
		faults++;
		sefer_pstore_close(h);
		sefer__pio_set_plan(NULL);
		h = reopen(p);
		ck_assert_msg(pm_recover(&m, h, msg, sizeof(msg)) == 0, "fault %ld: %s", faults,
			      msg);
		plan.seed++;
		sefer__pio_set_plan(&plan);
	}
	sefer__pio_set_plan(NULL);
	printf("%s: %ld failed calls (injected faults), each reopened and checked\n",
	       kind_name[_i], faults);
	ck_assert_int_gt(faults, 20);
	ck_assert_msg(pm_check(&m, h, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	pm_free(&m);
	unlink(p);
}
END_TEST

static int pipe_fd;

/* In the child: keep its own model current and tell the parent. */
static void to_parent(void *arg, const struct pm_msg *m)
{
	pm_apply(arg, m);
	if (write(pipe_fd, m, sizeof(*m)) != (ssize_t)sizeof(*m))
		_exit(7);
}

/* Runs PERSIST_KILLS crashes split over the allocators. */
START_TEST(test_kill_loop)
{
	const char *p = tpath(kind_name[_i]);
	long kills =
		(tenv("PERSIST_KILLS", 200) + SEFER_PALLOC_KINDS - 1 - _i) / SEFER_PALLOC_KINDS;
	struct sefer_pstore *h;
	struct pmodel m;
	char msg[256];
	uint64_t acks = 0;

	struct sefer_popts o = { .wal_bytes = 256 << 10 };	/* quick to open, checkpoints */

	ck_assert_int_eq(sefer_pstore_create(p, _i, &o, &h), 0);
	ck_assert_int_eq(sefer_pstore_close(h), 0);
	pm_init(&m, 64, 77 + (uint64_t)_i, 6000);
	srand(1234 + _i);
	for (long it = 0; it < kills; it++) {
		int fds[2];
		pid_t pid;

		ck_assert_int_eq(pipe(fds), 0);
		m.rng += (uint64_t)it * 0x9e3779b97f4a7c15ULL;
		pid = fork();
		if (pid == 0) {
			close(fds[0]);
			pipe_fd = fds[1];
			h = reopen(p);
			for (;;)
				if (pm_step(&m, h, to_parent, &m))
					_exit(8);
		}
		close(fds[1]);
		usleep(20000 + (useconds_t)(rand() % 80000));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		struct pm_msg msgs[64];
		ssize_t n;

		while ((n = read(fds[0], msgs, sizeof(msgs))) > 0) {
			for (size_t k = 0; k < (size_t)n / sizeof(msgs[0]); k++) {
				pm_apply(&m, &msgs[k]);
				acks += msgs[k].kind == PM_ACK;
			}
		}
		close(fds[0]);
		h = reopen(p);
		ck_assert_msg(pm_recover(&m, h, msg, sizeof(msg)) == 0, "kill %ld: %s", it, msg);
		ck_assert_int_eq(sefer_pstore_close(h), 0);
	}
	printf("%s: %ld SIGKILLs, %llu acknowledged ops verified, leaked blocks recovered %llu\n",
	       kind_name[_i], kills, (unsigned long long)acks, (unsigned long long)m.leaked);
	pm_free(&m);
	unlink(p);
}
END_TEST

int make_crashed_store(const char *path, unsigned n, uint64_t *off)
{
	struct pio_plan plan = { .seed = 7, .crash_sim = true, .keep_all = true };
	struct sefer_popts o = { .wal_bytes = 1 << 20 };
	struct sefer_pstore *h;
	uint8_t fill[64];
	uint64_t b;
	int r;

	unlink(path);
	r = sefer_pstore_create(path, SEFER_PALLOC_SEGREGATED, &o, &h);
	if (r) {
		fprintf(stderr, "make_crashed_store: create %s: %s\n", path, strerror(-r));
		return r;
	}
	sefer__pio_set_plan(&plan);
	for (unsigned i = 0; i < n && !r; i++) {
		memset(fill, (int)i, sizeof(fill));
		r = sefer_palloc(h, sizeof(fill), &b);
		if (!r)
			r = sefer_pwrite(h, b, 0, fill, sizeof(fill));
		if (!r && off)
			off[i] = b;
		if (!r && i % 2 == 0)
			r = sefer_pfree(h, b);
	}
	sefer__pio_crash();	/* keep_all: every write stays, as after a killed process */
	sefer_pstore_close(h);	/* fails: no I/O after the crash, the header stays "open" */
	sefer__pio_set_plan(NULL);
	if (r)
		fprintf(stderr, "make_crashed_store: %s\n", strerror(-r));
	return r;
}

Suite *crash_suite(void)
{
	Suite *s = suite_create("persist-crash");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 3600);
	tcase_add_loop_test(tc, test_power_cut, 0, SEFER_PALLOC_KINDS);
	tcase_add_loop_test(tc, test_faults, 0, SEFER_PALLOC_KINDS);
	tcase_add_loop_test(tc, test_kill_loop, 0, SEFER_PALLOC_KINDS);
	suite_add_tcase(s, tc);
	return s;
}
