// SPDX-License-Identifier: MIT
/*
 * CONFIG_DEBUG_CORE (core/debug.h, core/lock.h): a lock-order inversion, a release of a lock
 * not held, a lock without a rank, a failed assertion and a segment whose slot bits were
 * corrupted are each reported with the file, the line and what failed, and abort; in a forked child, whose stderr the test reads. Without the
 * option the same calls report nothing and the child runs to its end.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/debug.h"
#include "core/lock.h"
#include "core/segment.h"
#include "sefer.h"
#include "unit.h"

static struct spinlock outer = SPINLOCK_INIT(LOCK_RANK_HEAP_POOL);
static struct spinlock inner = SPINLOCK_INIT(LOCK_RANK_ABANDONED);
static struct spinlock same_a = SPINLOCK_INIT(LOCK_RANK_HEAP_LARGE);
static struct spinlock same_b = SPINLOCK_INIT(LOCK_RANK_HEAP_LARGE);

/* Run fn in a forked child with stderr into buf; the raw wait status. */
static int in_child(void (*fn)(void), char *buf, size_t len)
{
	int pfd[2], status = -1;
	size_t got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		fn();
		_exit(0);
	}
	close(pfd[1]);
	for (ssize_t r; got < len - 1 && (r = read(pfd[0], buf + got, len - 1 - got)) > 0;)
		got += (size_t)r;
	buf[got] = '\0';
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* Reported and aborted with `what` in the message, or with the option off: a clean exit. */
static void check_reported(void (*fn)(void), const char *what)
{
	char buf[1024];
	int status = in_child(fn, buf, sizeof(buf));

	if (!IS_ENABLED(CONFIG_DEBUG_CORE)) {
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !buf[0],
			      "reported without CONFIG_DEBUG_CORE: %s", buf);
		return;
	}
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "no abort (status %#x), stderr: %s", status, buf);
	ck_assert_msg(strstr(buf, "sefer: core check failed: ") && strstr(buf, "test_debug.c:"),
		      "no file:line report: %s", buf);
	ck_assert_msg(strstr(buf, what), "report lacks \"%s\": %s", what, buf);
}

static void take_inverted(void)
{
	spin_lock(&inner);
	spin_lock(&outer); /* rank 2 while holding rank 4 */
	spin_unlock(&outer);
	spin_unlock(&inner);
}

static void take_same_rank(void)
{
	spin_lock(&same_a);
	spin_lock(&same_b); /* equal rank, not spin_lock_nested */
	spin_unlock(&same_b);
	spin_unlock(&same_a);
}

static void release_unheld(void)
{
	__acquire(&inner);
	spin_unlock(&inner);
}

static void take_unranked(void)
{
	static struct spinlock zeroed; /* never given a rank */

	spin_lock(&zeroed);
	spin_unlock(&zeroed);
}

static void assert_false(void)
{
	volatile int two = 2;

	sefer_assert(two == 3);
	sefer_assert_expensive(two == 2); /* holds: not reported */
}

/*
 * The slot of a live block's span marked free, as a stray write into the header would: the
 * assertions at a span's release (segment_free_slots, core/segment.c) report it when the collect
 * gives the segment's emptied pages back.
 */
static void corrupt_slot_bits(void)
{
	void *p = sefer_malloc(64);
	struct segment *seg = segment_of(p);
	struct page *pg = page_of(seg, p);

	seg->free_pages |= (uint64_t)1 << pg->index;
	sefer_free(p);
	sefer_collect(true);
}

START_TEST(lock_inversion_reported)
{
	check_reported(take_inverted,
		       "lock order: taking pool_lock (rank 2) while holding abandoned_lock (rank 4)");
}
END_TEST

START_TEST(same_rank_reported)
{
	check_reported(take_same_rank, "taking large_lock (rank 3) while holding large_lock");
}
END_TEST

START_TEST(release_unheld_reported)
{
	check_reported(release_unheld, "releasing abandoned_lock, not held by this thread");
}
END_TEST

START_TEST(unranked_reported)
{
	check_reported(take_unranked, "a lock without a rank");
}
END_TEST

START_TEST(assertion_reported)
{
	check_reported(assert_false, ": two == 3");
}
END_TEST

START_TEST(corrupt_slots_reported)
{
	char buf[1024];
	int status = in_child(corrupt_slot_bits, buf, sizeof(buf));

	/* without the option nothing notices: the child just runs (what it leaves is moot) */
	if (IS_ENABLED(CONFIG_DEBUG_CORE)) {
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "no abort: %s", buf);
		/* by the span's own check, or by the slot-state check of an earlier span of
		 * the segment that the collect gives back first */
		ck_assert_msg(strstr(buf, "core check failed: ") && strstr(buf, "core/segment.c:") &&
				      (strstr(buf, "!(seg->free_pages & bits)") ||
				       strstr(buf, "segment_slots_agree(seg)")),
			      "not reported at a span's release: %s", buf);
	}
}
END_TEST

/* The orders the library uses pass: increasing ranks, and one rank nested where allowed. */
START_TEST(lock_order_kept)
{
	spin_lock(&outer);
	spin_lock_nested(&same_a);
	spin_lock_nested(&same_b);
	spin_lock(&inner);
	ck_assert(spin_held(&inner));
	spin_unlock(&inner);
	ck_assert(!spin_held(&inner));
	spin_unlock(&same_b);
	spin_unlock(&same_a);
	spin_unlock(&outer);
	spin_lock(&inner); /* all released: any rank again */
	spin_unlock(&inner);
}
END_TEST

Suite *debug_suite(void)
{
	Suite *s = suite_create("debug");
	TCase *tc = tcase_create("witness");

	tcase_add_test(tc, lock_inversion_reported);
	tcase_add_test(tc, same_rank_reported);
	tcase_add_test(tc, release_unheld_reported);
	tcase_add_test(tc, unranked_reported);
	tcase_add_test(tc, assertion_reported);
	tcase_add_test(tc, corrupt_slots_reported);
	tcase_add_test(tc, lock_order_kept);
	suite_add_tcase(s, tc);
	return s;
}
