// SPDX-License-Identifier: MIT
/*
 * What the allocators share: the allocator header, checked words read and written through
 * the store, the commit of an op's record, and a windowed reader for arena scans.
 *
 * Allocator header (payload offset 0, shared by all allocators):
 *   0 magic[4], 4 u32 version, 8 u64 salt, 16 u32 nlists, 20 u32 0, 24 u32 crc32c(0..23),
 *   64 checked tail word, 72 checked root word, 80 + 8*i checked head of list i.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "persist/internal.h"

#define PA_VERSION 1
#define WINDOW (1u << 20)	/* sefer__pa_scan_read's window */

void sefer__pa_msg(struct palloc *pa, const char *fmt, ...)
{
	va_list ap;

	if (!pa->err || !pa->elen || pa->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(pa->err, pa->elen, fmt, ap);
	va_end(ap);
}

int sefer__pa_get_word(struct palloc *pa, uint64_t off, uint64_t *val)
{
	uint64_t w;
	int r = sefer__pstore_read_word(pa->s, off, &w);

	if (r)
		return r;
	if (!sefer__pword_ok(pa->salt, off, w))
		return -EUCLEAN;
	*val = pword_val(w);
	return 0;
}

void sefer__pa_put_word(struct palloc *pa, uint64_t off, uint64_t val) __must_hold(&pa->s->tx_lock)
{
	sefer__pstore_tx_word(pa->s, off, sefer__pword_make(pa->salt, off, val));
}

int sefer__pa_commit(struct palloc *pa) __releases(&pa->s->tx_lock)
{
	int r = sefer__pstore_tx_end(pa->s, &pa->seq);

	if (r && !pa->dead)
		pa->dead = r;
	return r;
}

int sefer__pa_scan_read(struct palloc *pa, uint64_t off, uint64_t *w)
{
	if (!pa->win) {
		pa->win = malloc(WINDOW);
		if (!pa->win)
			return -ENOMEM;
		pa->wlen = 0;
	}
	if (off < pa->wpos || off + 8 > pa->wpos + pa->wlen) {
		uint64_t end = sefer__pstore_len(pa->s);
		uint64_t n = end > off ? end - off : 8;
		int r;

		if (n > WINDOW)
			n = WINDOW;
		if (n < 8)
			n = 8;
		r = sefer__pstore_read(pa->s, off, pa->win, n);
		if (r) {
			pa->wlen = 0;
			return r;
		}
		pa->wpos = off;
		pa->wlen = n;
	}
	memcpy(w, pa->win + (off - pa->wpos), 8);
	return 0;
}

void sefer__pa_scan_end(struct palloc *pa)
{
	free(pa->win);
	pa->win = NULL;
	pa->wlen = 0;
}

static uint64_t new_salt(void)
{
	uint64_t salt = 0;
	struct timespec ts;

	if (!(sefer__os.features & SEFER_OS_RANDOM) || !sefer__os.random_bytes(&salt, sizeof(salt))) {
		clock_gettime(CLOCK_REALTIME, &ts);
		salt = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_sec;
	}
	return salt | 1;
}

int sefer__pa_header_create(struct palloc *pa, unsigned nlists)
{
	uint8_t h[32] = { 0 };
	uint32_t v = PA_VERSION, crc;

	pa->salt = new_salt();
	memcpy(h, pa->ops->magic, 4);
	memcpy(h + 4, &v, 4);
	memcpy(h + 8, &pa->salt, 8);
	memcpy(h + 16, &nlists, 4);
	crc = sefer__pcrc32c(0, h, 24);
	memcpy(h + 24, &crc, 4);
	pa->tail = PA_HDR_END;
	sefer__pstore_tx_begin(pa->s);
	sefer__pstore_tx_len(pa->s, PA_HDR_END);
	sefer__pstore_tx_blob(pa->s, 0, h, 32);
	sefer__pa_put_word(pa, PA_TAIL_OFF, PA_HDR_END);
	sefer__pa_put_word(pa, PA_ROOT_OFF, 0);
	for (unsigned i = 0; i < nlists; i++)
		sefer__pa_put_word(pa, PA_LIST_OFF + 8ULL * i, 0);
	return sefer__pa_commit(pa);
}

int sefer__pa_header_open(struct palloc *pa, unsigned nlists)
{
	uint8_t h[32];
	uint32_t v, n, crc;
	uint64_t root;
	int r = sefer__pstore_read(pa->s, 0, h, 32);

	if (r)
		return r;
	memcpy(&v, h + 4, 4);
	memcpy(&pa->salt, h + 8, 8);
	memcpy(&n, h + 16, 4);
	memcpy(&crc, h + 24, 4);
	if (sefer__pcrc32c(0, h, 24) != crc) {
		sefer__pa_msg(pa, "allocator header checksum mismatch (corrupted metadata)");
		return -EUCLEAN;
	}
	if (v != PA_VERSION) {
		sefer__pa_msg(pa, "allocator version %u is newer than this library (version %u)", v,
		       PA_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (n != nlists) {
		sefer__pa_msg(pa, "allocator header names %u lists, %s has %u", n, pa->ops->name,
			      nlists);
		return -EUCLEAN;
	}
	if (sefer__pa_get_word(pa, PA_TAIL_OFF, &pa->tail)) {
		sefer__pa_msg(pa, "allocator tail word fails its check (corrupted metadata)");
		return -EUCLEAN;
	}
	if (pa->tail < PA_HDR_END || pa->tail > sefer__pstore_len(pa->s)) {
		sefer__pa_msg(
			pa, "allocator tail %llu is outside the committed payload (%llu bytes)",
			(unsigned long long)pa->tail, (unsigned long long)sefer__pstore_len(pa->s));
		return -EUCLEAN;
	}
	if (sefer__pa_get_word(pa, PA_ROOT_OFF, &root)) {
		sefer__pa_msg(pa, "root slot fails its check (corrupted metadata)");
		return -EUCLEAN;
	}
	return 0;
}
