/* SPDX-License-Identifier: MIT */
/*
 * The decommit scenario's workload, shared by the unit test (selftest/unit/test_decommit.c,
 * through sefer_malloc) and the measurement program (selftest/decommit/rss_curve.c, through
 * whatever malloc is preloaded): block sizes, a sleep, and the producer/consumer pipe.
 */
#ifndef SEFER_DECOMMIT_WORKLOAD_H
#define SEFER_DECOMMIT_WORKLOAD_H

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "selftest/proc_rss.h"

#define DECOMMIT_RING 4096

static inline size_t decommit_block_size(size_t i)
{
	return 32 + (i * 97 % 31) * 32; /* 32 .. 992 bytes, average ~512 */
}

static inline void decommit_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * One thread allocates `total` blocks (writing their first and last byte) and hands them
 * through a bounded ring to another thread, which frees them: far more bytes pass than are
 * ever live. Start decommit_producer and decommit_consumer on the same pipe.
 */
struct decommit_pipe {
	void *(*alloc)(size_t);
	void (*release)(void *);
	size_t total;
	_Atomic(void *) ring[DECOMMIT_RING];
	atomic_size_t head, tail;
};

static inline void *decommit_producer(void *arg)
{
	struct decommit_pipe *q = arg;

	for (size_t i = 0; i < q->total; i++) {
		size_t sz = decommit_block_size(i);
		unsigned char *p = q->alloc(sz);

		p[0] = 1;
		p[sz - 1] = 2;
		while (atomic_load(&q->head) - atomic_load(&q->tail) >= DECOMMIT_RING)
			sched_yield();
		atomic_store(&q->ring[atomic_load(&q->head) % DECOMMIT_RING], p);
		atomic_fetch_add(&q->head, 1);
	}
	return NULL;
}

static inline void *decommit_consumer(void *arg)
{
	struct decommit_pipe *q = arg;

	for (size_t i = 0; i < q->total; i++) {
		while (atomic_load(&q->tail) == atomic_load(&q->head))
			sched_yield();
		q->release(atomic_load(&q->ring[atomic_load(&q->tail) % DECOMMIT_RING]));
		atomic_fetch_add(&q->tail, 1);
	}
	return NULL;
}

#endif
