// SPDX-License-Identifier: MIT
/*
 * The store: a durable byte stack over one file, with a write-ahead log and group commit.
 *
 * File: [header, one 512-byte sector][zero to 4 KiB][log: wal_size bytes][payload]. Every
 * change to the payload, its length included, is a log record of absolute writes. A record is
 * durable when the leader has written its batch to the log and synced; then the leader applies
 * the batch to the page cache (pcache.c: memory). A full log or a full cache is checkpointed:
 * write the cached pages in place, sync, header := {ckpt_seq, committed length}, sync; the
 * cache empties and the log restarts at its beginning. Open replays the records from ckpt_seq
 * on (checksummed, consecutive seq) into the cache, then (sefer__pstore_finish_open) checkpoints
 * and trims the file to the committed length, rounded up to a page.
 *
 * Invariants:
 *  - records are numbered consecutively; durable_seq only grows; a record is written to the log
 *    only after every earlier record is durable, so at a crash only the last batch can be
 *    partly on disk, in any subset of its writes;
 *  - the payload on disk is the checkpoint image, except while a checkpoint writes the cache
 *    back, when any subset of pages may hold the newer state; replaying every record from
 *    ckpt_seq (absolute writes, in order) gives the state after the last durable record
 *    either way, since every byte a page write can change was written by such a record;
 *  - the payload as of durable_seq is the disk under the page cache; reads add the in-flight
 *    and pending batches on top;
 *  - file_len is a multiple of the page size once open is finished, and covers every page
 *    a record touched (write_batch grows it before the batch is applied);
 *  - each record carries synced_before (every record below it was durable when it was
 *    appended): a bad record followed by a good one whose synced_before is beyond it is
 *    corruption of synced data, not a torn tail, and open refuses the file;
 *  - reads see every appended record (disk, cache, then the in-flight batch, then the
 *    pending one).
 *
 * Lock order: tx_lock (record building; held by the caller from tx_begin to tx_end) before
 * lock (pend, flight, seqs, lengths, the leader flag, err). The leader does its I/O without
 * lock; `flight` is owned by the leader until it clears it under lock.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "persist/internal.h"
#include "persist/wal.h"

#define HDR_CLEAN 1u

static const char store_magic[7] = { 'S', 'E', 'F', 'E', 'R', 'P', 'S' };

/* Store header, sector 0. */
struct shdr {
	char magic[8];		/* "SEFERPS" + version byte */
	uint32_t hdr_bytes, flags;
	uint64_t wal_off, wal_size, committed_len, ckpt_seq, ckpt_count;
	uint8_t pad[PSTORE_HDR_BYTES - 60];
	uint32_t crc;		/* crc32c of bytes 0..507 */
};
_Static_assert(sizeof(struct shdr) == PSTORE_HDR_BYTES, "store header layout");

static void emsg(char *err, size_t elen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void emsg(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !elen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, elen, fmt, ap);
	va_end(ap);
}

static void init_common(struct pstore *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->tx_lock, NULL);
	pthread_cond_init(&s->done, NULL);
	pthread_cond_init(&s->appended, NULL);
	s->f = SEFER_FILE_INVALID;
}

/* The log size and what follows from it: where the payload starts, how many pages to cache. */
static void set_wal_size(struct pstore *s, uint64_t wal_size)
{
	s->wal_size = wal_size;
	s->data_off = PSTORE_WAL_OFF + wal_size;
	s->cache_max = wal_size / 1024;		/* 1 MiB log: 1024 pages (4 MiB) */
	if (s->cache_max < 64)
		s->cache_max = 64;
	if (s->cache_max > 4096)
		s->cache_max = 4096;
}

static void free_common(struct pstore *s)
{
	sefer__pcache_drop(&s->cache);
	free(s->pend.p);
	free(s->flight.p);
	free(s->tx.p);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->tx_lock);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->appended);
}

static int write_header(struct pstore *s, uint64_t ckpt_seq, uint64_t len, uint32_t flags)
{
	struct shdr h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, store_magic, 7);
	h.magic[7] = PSTORE_VERSION;
	h.hdr_bytes = PSTORE_HDR_BYTES;
	h.flags = flags;
	h.wal_off = PSTORE_WAL_OFF;
	h.wal_size = s->wal_size;
	h.committed_len = len;
	h.ckpt_seq = ckpt_seq;
	h.ckpt_count = s->ckpt_count;
	h.crc = sefer__pcrc32c(0, &h, offsetof(struct shdr, crc));
	/*
	 * One sector, written whole by the device. A failed (or short) write is retried: a torn
	 * header left behind would make the store unreadable, and the log it names may already
	 * be reused.
	 */
	int r = -EIO;

	for (int i = 0; i < 8 && r; i++)
		r = sefer__pio_write(s->f, &h, sizeof(h), 0);
	return r;
}

/*
 * Extend the file to `end` with written zeros, not a hole: a sync after writing into a hole
 * also commits the file system's block allocation (a journal commit, several times the cost
 * of a data sync). The log region is filled at create; the payload grows a megabyte ahead.
 */
int sefer__pstore_zero_fill(struct pstore *s, uint64_t from, uint64_t end)
{
	static const uint8_t zero[64 << 10];
	int r = 0;

	while (!r && from < end) {
		uint64_t n = end - from < sizeof(zero) ? end - from : sizeof(zero);

		r = sefer__pio_write(s->f, zero, n, from);
		from += n;
	}
	return r;
}

/* write back, sync, header := (ckpt_seq, len, flags), sync. Leader or exclusive owner only. */
int sefer__pstore_checkpoint(struct pstore *s, uint64_t ckpt_seq, uint64_t len, uint32_t flags)
{
	int r = sefer__pcache_write_back(&s->cache, s);

	if (!r)
		r = sefer__pio_sync(s->f);

	if (!r) {
		s->ckpt_count++;
		r = write_header(s, ckpt_seq, len, flags);
	}
	if (!r)
		r = sefer__pio_sync(s->f);
	s->syncs += 2;
	if (!r) {
		s->ckpt_seq = ckpt_seq;
		s->wal_pos = 0;
		pmutex_lock(&s->lock);	/* readers look at the cache under lock */
		sefer__pcache_drop(&s->cache);
		pmutex_unlock(&s->lock);
	}
	return r;
}

int sefer__pstore_create(struct pstore *s, const char *path, uint64_t wal_size, char *err,
			 size_t elen)
{
	int r;

	init_common(s);
	set_wal_size(s, (wal_size + 4095) & ~4095ULL);
	s->f = sefer__pio_open(path, SEFER_OPEN_CREATE | SEFER_OPEN_EXCL);
	if (s->f < 0) {
		r = (int)s->f;
		emsg(err, elen, "%s: cannot create: %s", path, strerror(-r));
		free_common(s);
		return r;
	}
	r = sefer__pio_lock(s->f);
	if (!r)
		r = sefer__pstore_zero_fill(s, PSTORE_WAL_OFF, s->data_off);
	s->next_seq = s->durable_seq = s->ckpt_seq = 1;
	s->file_len = s->data_off;
	if (!r)
		r = write_header(s, 1, 0, 0);
	if (!r)
		r = sefer__pio_sync(s->f);
	if (r) {
		emsg(err, elen, "%s: cannot initialise: %s", path, strerror(-r));
		sefer__pio_close(s->f);
		free_common(s);
	}
	return r;
}

/* The log read through a window at open (records may straddle windows: reread). */
#define WAL_WIN (1u << 20)

struct wal_rd {
	struct pstore *s;
	uint8_t *buf;
	uint64_t pos, len, cap;
	int err;
};

/* Log bytes [pos, pos + n) or NULL (read error, or beyond the log). */
static const uint8_t *wal_at(struct wal_rd *w, uint64_t pos, uint64_t n)
{
	uint64_t want;

	if (w->buf && pos >= w->pos && pos + n <= w->pos + w->len)
		return w->buf + (pos - w->pos);
	if (w->err || pos + n > w->s->wal_size)
		return NULL;
	want = n > WAL_WIN ? n : WAL_WIN;
	if (want > w->s->wal_size - pos)
		want = w->s->wal_size - pos;
	if (want > w->cap) {
		uint8_t *nb = realloc(w->buf, want);

		if (!nb) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->buf = nb;
		w->cap = want;
	}
	w->err = sefer__pio_read(w->s->f, w->buf, want, PSTORE_WAL_OFF + pos);
	if (w->err) {
		w->len = 0;
		return NULL;
	}
	w->pos = pos;
	w->len = want;
	return w->buf;
}

/* Is there a well-formed record at pos? Checks everything but seq; *rp: its bytes. */
static bool rec_ok_at(struct wal_rd *w, uint64_t pos, struct rec *h, const uint8_t **rp)
{
	const uint8_t *p = wal_at(w, pos, REC_HDR);

	if (!p)
		return false;
	memcpy(h, p, REC_HDR);
	if (h->magic != REC_MAGIC || h->len < REC_HDR || h->len % 8 ||
	    h->len > w->s->wal_size - pos)
		return false;
	p = wal_at(w, pos, h->len);
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
int sefer__pstore_open(struct pstore *s, const char *path, struct pstore_open_info *info, char *err,
		size_t elen)
{
	struct shdr h;
	int64_t fsz;
	struct wal_rd w = { .s = s };
	int r;

	init_common(s);
	memset(info, 0, sizeof(*info));
	s->f = sefer__pio_open(path, 0);
	if (s->f < 0) {
		r = (int)s->f;
		emsg(err, elen, "%s: cannot open: %s", path, strerror(-r));
		free_common(s);
		return r;
	}
	r = sefer__pio_lock(s->f);
	if (r) {
		emsg(err, elen, "%s: store is in use by another process (file lock held)", path);
		goto fail;
	}
	fsz = sefer__pio_size(s->f);
	if (fsz < 0) {
		r = (int)fsz;
		emsg(err, elen, "%s: cannot stat: %s", path, strerror(-r));
		goto fail;
	}
	r = -EUCLEAN;
	if (fsz < 8 || sefer__pio_read(s->f, &h, 8, 0) || memcmp(h.magic, store_magic, 7)) {
		emsg(err, elen, "%s: bad magic: not a sefer persist store", path);
		goto fail;
	}
	if ((uint8_t)h.magic[7] != PSTORE_VERSION) {
		emsg(err, elen, "%s: store version %u is newer than this library (version %u)",
		     path, (uint8_t)h.magic[7], PSTORE_VERSION);
		r = -EPROTONOSUPPORT;
		goto fail;
	}
	if (fsz < PSTORE_HDR_BYTES) {
		emsg(err, elen, "%s: truncated header: file is %lld bytes, header needs %d", path,
		     (long long)fsz, PSTORE_HDR_BYTES);
		goto fail;
	}
	if (sefer__pio_read(s->f, &h, sizeof(h), 0)) {
		r = -EIO;
		emsg(err, elen, "%s: cannot read header", path);
		goto fail;
	}
	if (sefer__pcrc32c(0, &h, offsetof(struct shdr, crc)) != h.crc) {
		emsg(err, elen, "%s: header checksum mismatch (corrupted metadata)", path);
		goto fail;
	}
	if (h.hdr_bytes != PSTORE_HDR_BYTES || h.wal_off != PSTORE_WAL_OFF || h.wal_size < 4096 ||
	    h.wal_size % 4096 || h.wal_size > (1ULL << 40)) {
		emsg(err, elen, "%s: header fields out of range (log size %llu)", path,
		     (unsigned long long)h.wal_size);
		goto fail;
	}
	set_wal_size(s, h.wal_size);
	if ((uint64_t)fsz < s->data_off + h.committed_len) {
		emsg(err, elen, "%s: committed length %llu is beyond the end of the file (%lld bytes "
		     "of payload)", path, (unsigned long long)h.committed_len,
		     (long long)fsz - (long long)s->data_off);
		goto fail;
	}
	s->ckpt_seq = h.ckpt_seq;
	s->ckpt_count = h.ckpt_count;
	s->hdr_flags = h.flags;
	s->len = h.committed_len;
	s->file_len = (uint64_t)fsz;
	info->clean = h.flags & HDR_CLEAN;

	/*
	 * Read the log through a window: the valid prefix from ckpt_seq is applied to the page
	 * cache (nothing written), then the rest of the log is searched for a record that proves
	 * a synced record bad. The file is first written by sefer__pstore_finish_open, once the
	 * allocator has accepted the image too.
	 */
	uint64_t pos = 0, seq = h.ckpt_seq, len = h.committed_len;
	const uint8_t *rp;
	struct rec rh;

	while (rec_ok_at(&w, pos, &rh, &rp) && rh.seq == seq) {
		if (!sefer__prec_entries(rp, &rh, NULL, NULL)) {
			r = -EUCLEAN;
			emsg(err, elen, "%s: log record %llu is malformed", path,
			     (unsigned long long)seq);
			goto fail;
		}
		sefer__prec_entries(rp, &rh, sefer__pcache_apply_entry, s);
		len = rh.new_len;
		pos += rh.len;
		seq++;
	}
	for (uint64_t q = pos; q + REC_HDR <= s->wal_size && !w.err; q += 8) {
		const uint8_t *m = wal_at(&w, q, 8);
		uint32_t mg;

		if (!m)
			break;
		memcpy(&mg, m, 4);
		if (mg != REC_MAGIC)
			continue;
		m = wal_at(&w, q, REC_HDR);
		if (!m)
			break;
		memcpy(&rh, m, REC_HDR);
		if (rh.seq <= seq || rh.synced_before <= seq || !rec_ok_at(&w, q, &rh, &rp))
			continue;
		r = -EUCLEAN;
		emsg(err, elen, "%s: log record %llu is corrupt (checksum) although record %llu "
		     "shows it was synced", path, (unsigned long long)seq,
		     (unsigned long long)rh.seq);
		goto fail;
	}
	if (w.err || s->cache.err) {
		r = w.err ? w.err : s->cache.err;
		emsg(err, elen, "%s: cannot read the log: %s", path, strerror(-r));
		goto fail;
	}
	info->replayed = seq - h.ckpt_seq;
	free(w.buf);
	s->next_seq = s->durable_seq = seq;
	s->len = s->durable_len = len;
	s->wal_pos = pos;
	return 0;
fail:
	free(w.buf);
	sefer__pio_close(s->f);
	free_common(s);
	return r;
}

/*
 * Give back the file beyond the payload, keeping whole pages: the file length stays a multiple
 * of the page size, so a page written back never ends past file_len.
 */
static int trim_file(struct pstore *s, uint64_t *trimmed)
{
	uint64_t keep = (s->data_off + s->len + PCACHE_PAGE - 1) & ~(uint64_t)(PCACHE_PAGE - 1);
	int r = 0;

	*trimmed = 0;
	if (s->file_len > keep) {
		*trimmed = s->file_len - keep;
		r = sefer__pio_truncate(s->f, keep);
		s->file_len = keep;
	}
	return r;
}

int sefer__pstore_finish_open(struct pstore *s, uint64_t *trimmed)
{
	int r = sefer__pstore_checkpoint(s, s->next_seq, s->len, 0);

	*trimmed = 0;
	return r ? r : trim_file(s, trimmed);
}

int sefer__pstore_close(struct pstore *s, bool clean)
{
	uint64_t trimmed;
	int r = clean ? sefer__pstore_sync_all(s) : -EIO;

	if (clean && !r)
		r = sefer__pstore_checkpoint(s, s->next_seq, s->len, HDR_CLEAN);
	if (clean && !r)
		r = trim_file(s, &trimmed);
	sefer__pio_close(s->f);
	free_common(s);
	return clean ? r : 0;
}

/* ---------------------------------------------------------------- the plain byte stack */

static int end_wait(struct pstore *s) __releases(&s->tx_lock)
{
	uint64_t seq;
	int r = sefer__pstore_tx_end(s, &seq);

	return r ? r : sefer__pstore_wait(s, seq);
}

int sefer__pstore_extend(struct pstore *s, uint64_t len, uint64_t *off)
{
	sefer__pstore_tx_begin(s);
	*off = s->tx_len;
	sefer__pstore_tx_len(s, s->tx_len + len);
	return end_wait(s);
}

int sefer__pstore_discard(struct pstore *s, uint64_t len)
{
	sefer__pstore_tx_begin(s);
	if (len > s->tx_len) {
		sefer__pstore_tx_abort(s);
		return -EINVAL;
	}
	sefer__pstore_tx_len(s, s->tx_len - len);
	return end_wait(s);
}

int sefer__pstore_set(struct pstore *s, uint64_t off, const void *buf, size_t len)
{
	size_t chunk = sefer__pstore_max_record(s) - REC_HDR - 16;
	const uint8_t *p = buf;
	uint64_t seq = 0;

	while (len) {
		size_t n = len < chunk ? len : chunk;

		sefer__pstore_tx_begin(s);
		if (off + n > s->tx_len) {
			sefer__pstore_tx_abort(s);
			return -EINVAL;
		}
		sefer__pstore_tx_blob(s, off, p, n);
		int r = sefer__pstore_tx_end(s, &seq);

		if (r)
			return r;
		p += n;
		off += n;
		len -= n;
	}
	return sefer__pstore_wait(s, seq);
}
