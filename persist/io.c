// SPDX-License-Identifier: MIT
/*
 * The persist I/O layer: every file access of persist/ goes through here to sefer__os.
 *
 * Without a plan it only loops over short counts. A plan (tests only) adds:
 *  - faults: each write, sync, truncate or read call fails with probability permille/1000,
 *    seeded; a failing write is dropped before it is issued, issued in full and then reported
 *    failed, or issued short (a prefix) and reported failed;
 *  - crash simulation: every write since the last successful sync is remembered with the bytes
 *    it replaced. sefer__pio_crash() rolls those writes back and then re-applies a random subset of
 *    them in a random order, each either whole or torn at 512-byte sector boundaries: the file
 *    then holds what a power cut could have left on the disk. Later calls fail with -EIO, as
 *    for a process that died.
 *
 * Lock: io_lock protects the plan, the random state and the undo list. Truncates and syncs are
 * treated as durable when they return (the store only truncates after a sync).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"

#define SECTOR 512

struct undo {
	sefer_file_t f;
	uint64_t off, len, old_size;
	uint8_t *old, *new;
};

static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pio_plan plan;
static bool have_plan, crashed;
static uint64_t rng, ncalls, nfaults;
static struct undo *undo;
static size_t nundo, cap_undo;

static uint64_t rnd(void)
{
	rng += 0x9e3779b97f4a7c15ULL;
	uint64_t z = rng;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void undo_clear(sefer_file_t f)
{
	size_t j = 0;

	for (size_t i = 0; i < nundo; i++) {
		if (undo[i].f == f) {
			free(undo[i].old);
			free(undo[i].new);
		} else {
			undo[j++] = undo[i];
		}
	}
	nundo = j;
}

void sefer__pio_set_plan(const struct pio_plan *p)
{
	pmutex_lock(&io_lock);
	for (size_t i = 0; i < nundo; i++) {
		free(undo[i].old);
		free(undo[i].new);
	}
	nundo = 0;
	crashed = false;
	ncalls = nfaults = 0;
	have_plan = p != NULL;
	if (p) {
		plan = *p;
		rng = p->seed * 0x2545F4914F6CDD1DULL + 1;
	}
	pmutex_unlock(&io_lock);
}

static int64_t raw_write(sefer_file_t f, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		int64_t w = sefer__os.pwrite(f, p, len, off);

		if (w < 0)
			return w;
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int raw_read(sefer_file_t f, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		int64_t r = sefer__os.pread(f, p, len, off);

		if (r < 0)
			return (int)r;
		if (r == 0) {		/* beyond the end reads as zero */
			memset(p, 0, len);
			return 0;
		}
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Roll back unsynced writes, then re-apply a random subset, reordered and torn. */
static void crash_locked(void) __must_hold(&io_lock)
{
	if (plan.keep_all) {
		for (size_t i = 0; i < nundo; i++) {
			free(undo[i].old);
			free(undo[i].new);
		}
		nundo = 0;
		crashed = true;
		return;
	}
	for (size_t i = nundo; i-- > 0;) {
		struct undo *u = &undo[i];
		uint64_t keep = u->off < u->old_size ? u->old_size - u->off : 0;

		if (keep > u->len)
			keep = u->len;
		if (keep)
			raw_write(u->f, u->old, keep, u->off);
		/* A truncate that fails leaves the file longer: a state a real crash can leave
		 * too (the length was not yet durable). `(void)!`: gcc's warn_unused_result
		 * ignores a plain (void) cast. */
		if (sefer__os.file_size(u->f) > (int64_t)u->old_size)
			(void)!sefer__os.truncate(u->f, u->old_size);
	}
	for (size_t i = nundo; i > 1; i--) {		/* shuffle */
		size_t j = rnd() % i;
		struct undo t = undo[i - 1];

		undo[i - 1] = undo[j];
		undo[j] = t;
	}
	for (size_t i = 0; i < nundo; i++) {
		struct undo *u = &undo[i];
		unsigned how = rnd() % 3;	/* 0: lost, 1: whole, 2: torn */

		if (how == 1) {
			raw_write(u->f, u->new, u->len, u->off);
		} else if (how == 2) {
			uint64_t s = u->off;

			while (s < u->off + u->len) {
				uint64_t e = (s / SECTOR + 1) * SECTOR;

				if (e > u->off + u->len)
					e = u->off + u->len;
				if (rnd() & 1)
					raw_write(u->f, u->new + (s - u->off), e - s, s);
				s = e;
			}
		}
		free(u->old);
		free(u->new);
	}
	nundo = 0;
	crashed = true;
}

void sefer__pio_crash(void)
{
	pmutex_lock(&io_lock);
	if (!crashed)
		crash_locked();
	pmutex_unlock(&io_lock);
}

bool sefer__pio_crashed(void)
{
	bool c;

	pmutex_lock(&io_lock);
	c = crashed;
	pmutex_unlock(&io_lock);
	return c;
}

uint64_t sefer__pio_calls(void)
{
	return ncalls;
}

uint64_t sefer__pio_faults(void)
{
	return nfaults;
}

/*
 * Account one call: returns -EIO when crashed (or crashing now), 1 when this call is to fail,
 * else 0. Called with io_lock held.
 */
static int step(void) __must_hold(&io_lock)
{
	if (crashed)
		return -EIO;
	ncalls++;
	if (plan.crash_at && ncalls >= plan.crash_at) {
		crash_locked();
		return -EIO;
	}
	if (plan.permille && rnd() % 1000 < plan.permille) {
		nfaults++;
		return 1;
	}
	return 0;
}

static void remember(sefer_file_t f, const void *buf, size_t len, uint64_t off)
{
	struct undo u = { .f = f, .off = off, .len = len };
	int64_t sz = sefer__os.file_size(f);

	u.old_size = sz > 0 ? (uint64_t)sz : 0;
	u.old = malloc(len);
	u.new = malloc(len);
	if (!u.old || !u.new) {
		free(u.old);
		free(u.new);
		return;
	}
	raw_read(f, u.old, len, off);
	memcpy(u.new, buf, len);
	if (nundo == cap_undo) {
		size_t nc = cap_undo ? cap_undo * 2 : 64;
		struct undo *nu = realloc(undo, nc * sizeof(*nu));

		if (!nu) {
			free(u.old);
			free(u.new);
			return;
		}
		undo = nu;
		cap_undo = nc;
	}
	undo[nundo++] = u;
}

int sefer__pio_write(sefer_file_t f, const void *buf, size_t len, uint64_t off)
{
	int r;

	if (!have_plan)
		return (int)raw_write(f, buf, len, off);
	pmutex_lock(&io_lock);
	r = step();
	if (r < 0)
		goto out;
	if (r == 1) {
		unsigned mode = rnd() % 3;

		r = -EIO;
		if (mode == 0)
			goto out;
		if (mode == 2) {
			len = len > 1 ? (size_t)(rnd() % (len - 1)) + 1 : len;
			r = -ENOSPC;
		}
	}
	if (plan.crash_sim)
		remember(f, buf, len, off);
	{
		int w = (int)raw_write(f, buf, len, off);

		if (r == 0)
			r = w;
	}
out:
	pmutex_unlock(&io_lock);
	return r;
}

int sefer__pio_read(sefer_file_t f, void *buf, size_t len, uint64_t off)
{
	int r;

	if (!have_plan)
		return raw_read(f, buf, len, off);
	pmutex_lock(&io_lock);
	r = crashed ? -EIO : 0;
	if (!r && plan.permille && rnd() % 4000 < plan.permille) {	/* reads fail 4x rarer */
		nfaults++;
		r = -EIO;
	}
	pmutex_unlock(&io_lock);
	return r ? r : raw_read(f, buf, len, off);
}

int sefer__pio_sync(sefer_file_t f)
{
	int r;

	if (!have_plan)
		return sefer__os.sync(f);
	pmutex_lock(&io_lock);
	r = step();
	if (r == 1)
		r = -EIO;	/* a failed sync: the unsynced writes stay undecided */
	if (r == 0) {
		r = sefer__os.sync(f);
		if (r == 0)
			undo_clear(f);
	}
	pmutex_unlock(&io_lock);
	return r;
}

int sefer__pio_truncate(sefer_file_t f, uint64_t len)
{
	int r;

	if (!have_plan)
		return sefer__os.truncate(f, len);
	pmutex_lock(&io_lock);
	r = step();
	if (r == 1)
		r = -EIO;
	if (r == 0)
		r = sefer__os.truncate(f, len);
	pmutex_unlock(&io_lock);
	return r;
}

sefer_file_t sefer__pio_open(const char *path, int flags)
{
	return sefer__os.open_file(path, flags);
}

void sefer__pio_close(sefer_file_t f)
{
	pmutex_lock(&io_lock);
	undo_clear(f);
	pmutex_unlock(&io_lock);
	sefer__os.close_file(f);
}

int64_t sefer__pio_size(sefer_file_t f)
{
	return sefer__os.file_size(f);
}

int sefer__pio_lock(sefer_file_t f, bool shared)
{
	return sefer__os.lock_file(f, shared);
}
