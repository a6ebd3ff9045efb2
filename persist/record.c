// SPDX-License-Identifier: MIT
/*
 * Log records: walking a record's entries, and reading the log back at open (record format:
 * persist/wal.h, Documentation/persist.rst). Applying them is the page cache's job
 * (persist/pcache.c). Calls only io.c and crc.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"
#include "persist/wal.h"

/* Walk a record's entries; fn(off, data, len). Returns false when malformed. */
bool sefer__prec_entries(const uint8_t *r, const struct rec *h,
			void (*fn)(void *, uint64_t, const void *, uint64_t), void *arg)
{
	uint64_t pos = REC_HDR;

	for (uint32_t i = 0; i < h->nent; i++) {
		uint64_t e[2];

		if (pos + 16 > h->len)
			return false;
		memcpy(e, r + pos, 16);
		pos += 16;
		if (e[0] & ENT_BLOB) {
			uint64_t off = e[0] & ~ENT_BLOB, len = e[1];

			if (len > h->len - pos)
				return false;
			if (fn)
				fn(arg, off, r + pos, len);
			pos += (len + 7) & ~7ULL;
		} else {
			if (fn)
				fn(arg, e[0], &e[1], 8);
		}
	}
	return pos == h->len;
}

/* ---------------------------------------------------------------- the log reader */

#define READ_WINDOW (1u << 20)

const uint8_t *sefer__prec_reader_at(struct prec_reader *rd, uint64_t pos, uint64_t n)
{
	uint64_t want;

	if (rd->buf && pos >= rd->pos && pos + n <= rd->pos + rd->len)
		return rd->buf + (pos - rd->pos);
	if (rd->err || pos + n > rd->s->wal_size)
		return NULL;
	want = n > READ_WINDOW ? n : READ_WINDOW;
	if (want > rd->s->wal_size - pos)
		want = rd->s->wal_size - pos;
	if (want > rd->cap) {
		uint8_t *nb = realloc(rd->buf, want);

		if (!nb) {
			rd->err = -ENOMEM;
			return NULL;
		}
		rd->buf = nb;
		rd->cap = want;
	}
	rd->err = sefer__pio_read(rd->s->f, rd->buf, want, PSTORE_WAL_OFF + pos);
	if (rd->err) {
		rd->len = 0;
		return NULL;
	}
	rd->pos = pos;
	rd->len = want;
	return rd->buf;
}

bool sefer__prec_reader_ok(struct prec_reader *rd, uint64_t pos, struct rec *h,
			   const uint8_t **rp)
{
	const uint8_t *p = sefer__prec_reader_at(rd, pos, REC_HDR);

	if (!p)
		return false;
	memcpy(h, p, REC_HDR);
	if (h->magic != REC_MAGIC || h->len < REC_HDR || h->len % 8 ||
	    h->len > rd->s->wal_size - pos)
		return false;
	p = sefer__prec_reader_at(rd, pos, h->len);
	if (!p)
		return false;
	struct rec z = *h;
	uint32_t crc;

	z.crc = 0;
	crc = sefer__pcrc32c(0, &z, REC_HDR);
	crc = sefer__pcrc32c(crc, p + REC_HDR, h->len - REC_HDR);
	*rp = p;
	return crc == h->crc;
}

bool sefer__prec_reader_synced_after(struct prec_reader *rd, uint64_t from, uint64_t seq,
				     struct rec *h)
{
	const uint8_t *rp;

	for (uint64_t q = from; q + REC_HDR <= rd->s->wal_size && !rd->err; q += 8) {
		const uint8_t *m = sefer__prec_reader_at(rd, q, 8);
		uint32_t mg;

		if (!m)
			break;
		memcpy(&mg, m, 4);
		if (mg != REC_MAGIC)
			continue;
		m = sefer__prec_reader_at(rd, q, REC_HDR);
		if (!m)
			break;
		memcpy(h, m, REC_HDR);
		if (h->seq <= seq || h->synced_before <= seq ||
		    !sefer__prec_reader_ok(rd, q, h, &rp))
			continue;
		return true;
	}
	return false;
}

void sefer__prec_reader_end(struct prec_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->len = rd->cap = 0;
}
