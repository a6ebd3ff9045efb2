// SPDX-License-Identifier: MIT
/*
 * The process-wide state a test of thread exits, purges and parking starts from. Check runs
 * each test in a child it forks from the runner, on which no test ran; with CK_FORK=no every
 * test runs in the one process, after the others, and meets what they left: a parked heap
 * (the next thread takes it over instead of making a heap), a kept hand-off (the next last
 * exit keeps instead of purging at once), spare segments whose slots a pass purged a moment
 * ago (a span that takes them raises its heap's delay or the unowned delay), a raised unowned
 * backoff, options a test changed and did not restore because an assertion failed first.
 * unit_fresh_state(), a checked fixture (it runs in the test's process, forked or not), gives
 * back the fork's state; the suites whose tests assume it (generations, pages) use it.
 */
#include <stdatomic.h>

#include "core/options.h"
#include "core/purge.h"
#include "core/unowned.h"
#include "unit.h"

static struct sefer_options opt_at_start;

void unit_fresh_state_save(void)
{
	opt_at_start = sefer__opt; /* set by the library's constructor, before main() */
}

void unit_fresh_state(void)
{
	sefer__opt = opt_at_start;
	sefer_collect(true); /* parked heaps dismantled, everything dirty purged, no hand-off */
	sefer__spares_release_all();
	atomic_store(&sefer__unowned_backoff, 0);
}
