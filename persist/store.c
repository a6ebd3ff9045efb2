// SPDX-License-Identifier: MIT
/*
 * The store: a durable byte stack over one file, with a write-ahead log and group commit.
 *
 * File: [header, one 512-byte sector][zero to 4 KiB][log: wal_size bytes][payload]. Every
 * change to the payload, its length included, is a log record of absolute writes. A record is
 * durable when the leader has written its batch to the log and synced; then the leader writes
 * the batch in place (unsynced). A full log is checkpointed: sync (in-place writes durable),
 * header := {ckpt_seq, committed length}, sync; the log restarts at its beginning. Open replays
 * the records from ckpt_seq on (checksummed, consecutive seq) in place, then checkpoints and
 * trims the file to the committed length.
 *
 * Invariants:
 *  - records are numbered consecutively; durable_seq only grows; a record is written to the log
 *    only after every earlier record is durable, so at a crash only the last batch can be
 *    partly on disk, in any subset of its writes;
 *  - the payload on disk equals the checkpoint image plus the in-place writes of a prefix of
 *    the records since, and replaying every record from ckpt_seq (absolute writes, in order)
 *    gives the state after the last durable record, whatever subset of in-place writes landed;
 *  - each record carries synced_before (every record below it was durable when it was
 *    written): a bad record followed by a good one whose synced_before is beyond it is
 *    corruption of synced data, not a torn tail, and open refuses the file;
 *  - reads see every appended record (disk, then the in-flight batch, then the pending one).
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

#define REC_MAGIC 0x4c415753u	/* "SWAL" */
#define REC_HDR 40
#define ENT_BLOB (1ULL << 63)
#define HDR_CLEAN 1u
#define ASYNC_FLUSH (64u << 10)
#define COMMIT_DELAY_US 150

static const char store_magic[7] = { 'S', 'E', 'F', 'E', 'R', 'P', 'S' };

/* Record header, little-endian on disk. */
struct rec {
	uint32_t magic, len;
	uint64_t seq, synced_before, new_len;
	uint32_t nent, crc;
};
_Static_assert(sizeof(struct rec) == REC_HDR, "record header layout");

/* Store header, sector 0. */
struct shdr {
	char magic[8];		/* "SEFERPS" + version byte */
	uint32_t hdr_bytes, flags;
	uint64_t wal_off, wal_size, committed_len, ckpt_seq, ckpt_count;
	uint8_t pad[PSTORE_HDR_BYTES - 60];
	uint32_t crc;		/* crc32c of bytes 0..507 */
};
_Static_assert(sizeof(struct shdr) == PSTORE_HDR_BYTES, "store header layout");

static void emsg(char *err, size_t elen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void emsg(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !elen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, elen, fmt, ap);
	va_end(ap);
}

static int buf_reserve(struct precbuf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 4096;

	while (nc < b->len + more)
		nc *= 2;
	uint8_t *np = realloc(b->p, nc);

	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = nc;
	return 0;
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

static void free_common(struct pstore *s)
{
	free(s->pend.p);
	free(s->flight.p);
	free(s->tx.p);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->tx_lock);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->appended);
}

void pstore_op_begin(struct pstore *s)
{
	atomic_fetch_add(&s->preparing, 1);
}

void pstore_op_appended(struct pstore *s)
{
	if (atomic_fetch_sub(&s->preparing, 1) == 1) {
		pthread_mutex_lock(&s->lock);
		pthread_cond_broadcast(&s->appended);
		pthread_mutex_unlock(&s->lock);
	}
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
	h.crc = pcrc32c(0, &h, offsetof(struct shdr, crc));
	/*
	 * One sector, written whole by the device. A failed (or short) write is retried: a torn
	 * header left behind would make the store unreadable, and the log it names may already
	 * be reused.
	 */
	int r = -EIO;

	for (int i = 0; i < 8 && r; i++)
		r = pio_write(s->f, &h, sizeof(h), 0);
	return r;
}

/*
 * Extend the file to `end` with written zeros, not a hole: a sync after writing into a hole
 * also commits the file system's block allocation (a journal commit, several times the cost
 * of a data sync). The log region is filled at create; the payload grows a megabyte ahead.
 */
static int zero_fill(struct pstore *s, uint64_t from, uint64_t end)
{
	static const uint8_t zero[64 << 10];
	int r = 0;

	while (!r && from < end) {
		uint64_t n = end - from < sizeof(zero) ? end - from : sizeof(zero);

		r = pio_write(s->f, zero, n, from);
		from += n;
	}
	return r;
}

/* sync, header := (ckpt_seq, len, flags), sync. Leader or exclusive owner only. */
static int checkpoint(struct pstore *s, uint64_t ckpt_seq, uint64_t len, uint32_t flags)
{
	int r = pio_sync(s->f);

	if (!r) {
		s->ckpt_count++;
		r = write_header(s, ckpt_seq, len, flags);
	}
	if (!r)
		r = pio_sync(s->f);
	s->syncs += 2;
	if (!r) {
		s->ckpt_seq = ckpt_seq;
		s->wal_pos = 0;
	}
	return r;
}

int pstore_create(struct pstore *s, const char *path, uint64_t wal_size, char *err, size_t elen)
{
	int r;

	init_common(s);
	s->wal_size = (wal_size + 4095) & ~4095ULL;
	s->data_off = PSTORE_WAL_OFF + s->wal_size;
	s->f = pio_open(path, SEFER_OPEN_CREATE | SEFER_OPEN_EXCL);
	if (s->f < 0) {
		r = (int)s->f;
		emsg(err, elen, "%s: cannot create: %s", path, strerror(-r));
		free_common(s);
		return r;
	}
	r = pio_lock(s->f);
	if (!r)
		r = zero_fill(s, PSTORE_WAL_OFF, s->data_off);
	s->next_seq = s->durable_seq = s->ckpt_seq = 1;
	s->file_len = s->data_off;
	if (!r)
		r = write_header(s, 1, 0, 0);
	if (!r)
		r = pio_sync(s->f);
	if (r) {
		emsg(err, elen, "%s: cannot initialise: %s", path, strerror(-r));
		pio_close(s->f);
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
	w->err = pio_read(w->s->f, w->buf, want, PSTORE_WAL_OFF + pos);
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
	crc = pcrc32c(0, &z, REC_HDR);
	crc = pcrc32c(crc, p + REC_HDR, h->len - REC_HDR);
	*rp = p;
	return crc == h->crc;
}

/* Walk a record's entries; fn(off, data, len). Returns false when malformed. */
static bool rec_entries(const uint8_t *r, const struct rec *h,
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

/*
 * Writing records in place. Few entries: one pwrite each. Many (replay at open, large
 * batches): gather them into 4 KiB pages (read once, patched in memory) and write each dirty
 * page once. Only the leader (or the opener) writes the payload, so read-modify-write of a
 * page cannot lose a concurrent write.
 */
#define PG 4096u
#define PAGED_ENTRIES 64

struct apply_ctx {
	struct pstore *s;
	int err;
	bool paged;
	uint64_t *key;		/* open addressing: page number + 1, 0 = empty */
	uint8_t **page;
	size_t cap, n;
};

static uint8_t *page_get(struct apply_ctx *c, uint64_t pg)
{
	if (2 * (c->n + 1) > c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 1024;
		uint64_t *nk = calloc(nc, sizeof(*nk));
		uint8_t **np = calloc(nc, sizeof(*np));

		if (!nk || !np) {
			free(nk);
			free(np);
			c->err = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < c->cap; i++) {
			if (!c->key[i])
				continue;
			size_t j = (size_t)((c->key[i] * 0x9e3779b97f4a7c15ULL) >> 20) & (nc - 1);

			while (nk[j])
				j = (j + 1) & (nc - 1);
			nk[j] = c->key[i];
			np[j] = c->page[i];
		}
		free(c->key);
		free(c->page);
		c->key = nk;
		c->page = np;
		c->cap = nc;
	}
	size_t j = (size_t)(((pg + 1) * 0x9e3779b97f4a7c15ULL) >> 20) & (c->cap - 1);

	while (c->key[j] && c->key[j] != pg + 1)
		j = (j + 1) & (c->cap - 1);
	if (c->key[j])
		return c->page[j];
	uint8_t *p = malloc(PG);

	if (!p) {
		c->err = -ENOMEM;
		return NULL;
	}
	c->err = pio_read(c->s->f, p, PG, c->s->data_off + pg * PG);
	if (c->err) {
		free(p);
		return NULL;
	}
	c->key[j] = pg + 1;
	c->page[j] = p;
	c->n++;
	return p;
}

static void apply_fn(void *arg, uint64_t off, const void *data, uint64_t len)
{
	struct apply_ctx *c = arg;
	const uint8_t *d = data;

	if (c->err)
		return;
	if (!c->paged) {
		c->err = pio_write(c->s->f, data, len, c->s->data_off + off);
		return;
	}
	while (len) {
		uint64_t in = off % PG, n = PG - in < len ? PG - in : len;
		uint8_t *p = page_get(c, off / PG);

		if (!p)
			return;
		memcpy(p + in, d, n);
		d += n;
		off += n;
		len -= n;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void apply_flush_free(struct apply_ctx *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->page[i]);
	free(c->key);
	free(c->page);
	c->key = NULL;
	c->page = NULL;
	c->cap = c->n = 0;
}

/* Write the dirty pages (in file order) and free the map. */
static int apply_flush(struct apply_ctx *c)
{
	uint64_t *order = c->n ? malloc(c->n * 2 * sizeof(uint64_t)) : NULL;
	size_t k = 0;

	if (c->n && !order && !c->err)
		c->err = -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->key[i])
			continue;
		if (order) {
			order[2 * k] = c->key[i] - 1;
			order[2 * k + 1] = i;
			k++;
		}
	}
	if (order)
		qsort(order, k, 2 * sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < k && !c->err; i++)
		c->err = pio_write(c->s->f, c->page[order[2 * i + 1]], PG,
				   c->s->data_off + order[2 * i] * PG);
	for (size_t i = 0; i < c->cap; i++)
		free(c->page[i]);
	free(order);
	free(c->key);
	free(c->page);
	c->key = NULL;
	c->page = NULL;
	c->cap = c->n = 0;
	return c->err;
}

int pstore_open(struct pstore *s, const char *path, struct pstore_open_info *info, char *err,
		size_t elen)
{
	struct shdr h;
	int64_t fsz;
	struct wal_rd w = { .s = s };
	struct apply_ctx ac = { .s = s };
	int r;

	init_common(s);
	memset(info, 0, sizeof(*info));
	s->f = pio_open(path, 0);
	if (s->f < 0) {
		r = (int)s->f;
		emsg(err, elen, "%s: cannot open: %s", path, strerror(-r));
		free_common(s);
		return r;
	}
	r = pio_lock(s->f);
	if (r) {
		emsg(err, elen, "%s: store is in use by another process (file lock held)", path);
		goto fail;
	}
	fsz = pio_size(s->f);
	if (fsz < 0) {
		r = (int)fsz;
		emsg(err, elen, "%s: cannot stat: %s", path, strerror(-r));
		goto fail;
	}
	r = -EUCLEAN;
	if (fsz < 8 || pio_read(s->f, &h, 8, 0) || memcmp(h.magic, store_magic, 7)) {
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
	if (pio_read(s->f, &h, sizeof(h), 0)) {
		r = -EIO;
		emsg(err, elen, "%s: cannot read header", path);
		goto fail;
	}
	if (pcrc32c(0, &h, offsetof(struct shdr, crc)) != h.crc) {
		emsg(err, elen, "%s: header checksum mismatch (corrupted metadata)", path);
		goto fail;
	}
	if (h.hdr_bytes != PSTORE_HDR_BYTES || h.wal_off != PSTORE_WAL_OFF || h.wal_size < 4096 ||
	    h.wal_size % 4096 || h.wal_size > (1ULL << 40)) {
		emsg(err, elen, "%s: header fields out of range (log size %llu)", path,
		     (unsigned long long)h.wal_size);
		goto fail;
	}
	s->wal_size = h.wal_size;
	s->data_off = PSTORE_WAL_OFF + h.wal_size;
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
	 * Read the log through a window: the valid prefix from ckpt_seq is gathered into pages
	 * (nothing written yet), then the rest of the log is searched for a record that proves
	 * a synced record bad. Only then is anything written.
	 */
	ac.paged = true;
	uint64_t pos = 0, seq = h.ckpt_seq, len = h.committed_len, max_len = len;
	const uint8_t *rp;
	struct rec rh;

	while (rec_ok_at(&w, pos, &rh, &rp) && rh.seq == seq) {
		if (!rec_entries(rp, &rh, NULL, NULL)) {
			r = -EUCLEAN;
			emsg(err, elen, "%s: log record %llu is malformed", path,
			     (unsigned long long)seq);
			goto fail;
		}
		rec_entries(rp, &rh, apply_fn, &ac);
		len = rh.new_len;
		if (len > max_len)
			max_len = len;
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
	if (w.err || ac.err) {
		r = w.err ? w.err : ac.err;
		emsg(err, elen, "%s: cannot read the log: %s", path, strerror(-r));
		goto fail;
	}
	/* The image is acceptable: replay in place (not yet synced, header unchanged). */
	if (s->data_off + max_len > s->file_len) {
		ac.err = pio_truncate(s->f, s->data_off + max_len);
		s->file_len = s->data_off + max_len;
	}
	apply_flush(&ac);
	if (ac.err) {
		r = ac.err;
		emsg(err, elen, "%s: cannot replay the log: %s", path, strerror(-r));
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
	apply_flush_free(&ac);
	pio_close(s->f);
	free_common(s);
	return r;
}

int pstore_finish_open(struct pstore *s, uint64_t *trimmed)
{
	int r = checkpoint(s, s->next_seq, s->len, 0);

	*trimmed = 0;
	if (!r && s->file_len > s->data_off + s->len) {
		*trimmed = s->file_len - (s->data_off + s->len);
		r = pio_truncate(s->f, s->data_off + s->len);
		s->file_len = s->data_off + s->len;
	}
	return r;
}

/* ---------------------------------------------------------------- records */

void pstore_tx_begin(struct pstore *s)
{
	pthread_mutex_lock(&s->tx_lock);
	s->tx.len = 0;
	s->tx.nrec = 0;		/* entry count while building */
	s->tx_oom = buf_reserve(&s->tx, REC_HDR) != 0;
	s->tx.len = REC_HDR;
	pthread_mutex_lock(&s->lock);
	s->tx_len = s->len;
	pthread_mutex_unlock(&s->lock);
}

static void tx_put(struct pstore *s, uint64_t a, uint64_t b, const void *data, size_t len)
{
	size_t pad = (len + 7) & ~(size_t)7;

	if (buf_reserve(&s->tx, 16 + pad)) {
		s->tx_oom = true;
		return;
	}
	memcpy(s->tx.p + s->tx.len, &a, 8);
	memcpy(s->tx.p + s->tx.len + 8, &b, 8);
	s->tx.len += 16;
	if (len) {
		memcpy(s->tx.p + s->tx.len, data, len);
		memset(s->tx.p + s->tx.len + len, 0, pad - len);
		s->tx.len += pad;
	}
	s->tx.nrec++;
}

void pstore_tx_word(struct pstore *s, uint64_t off, uint64_t val)
{
	tx_put(s, off, val, NULL, 0);
}

void pstore_tx_blob(struct pstore *s, uint64_t off, const void *buf, size_t len)
{
	tx_put(s, off | ENT_BLOB, len, buf, len);
}

void pstore_tx_len(struct pstore *s, uint64_t len)
{
	s->tx_len = len;
}

size_t pstore_tx_size(struct pstore *s)
{
	return s->tx.len;
}

size_t pstore_max_record(struct pstore *s)
{
	return s->wal_size / 4;
}

void pstore_tx_abort(struct pstore *s)
{
	s->tx_oom = false;
	s->tx.len = 0;
	s->tx.nrec = 0;
	pthread_mutex_unlock(&s->tx_lock);
}

/* Write the flight batch: checkpoint if the log is full, log write, sync, in place. */
static int write_batch(struct pstore *s, uint64_t synced_before, uint64_t durable_len,
		       uint64_t max_len)
{
	struct precbuf *b = &s->flight;
	int r = 0;

	if (s->wal_pos + b->len > s->wal_size) {
		r = checkpoint(s, b->first_seq, durable_len, 0);
		if (r)
			return r;
	}
	for (size_t p = 0; p < b->len;) {
		struct rec h;

		memcpy(&h, b->p + p, REC_HDR);
		h.synced_before = synced_before;
		h.crc = 0;
		memcpy(b->p + p, &h, REC_HDR);
		h.crc = pcrc32c(pcrc32c(0, &h, REC_HDR), b->p + p + REC_HDR, h.len - REC_HDR);
		memcpy(b->p + p + offsetof(struct rec, crc), &h.crc, 4);
		p += h.len;
	}
	if (s->data_off + max_len > s->file_len) {
		uint64_t grow = (s->data_off + max_len + (max_len >> 3) + (1 << 20)) & ~4095ULL;

		r = zero_fill(s, s->file_len, grow);
		if (r)
			return r;
		s->file_len = grow;
	}
	r = pio_write(s->f, b->p, b->len, PSTORE_WAL_OFF + s->wal_pos);
	if (r)
		return r;
	s->wal_pos += b->len;
	r = pio_sync(s->f);
	s->syncs++;
	if (r)
		return r;
	struct apply_ctx ac = { .s = s, .paged = b->nrec * 3 > PAGED_ENTRIES };

	for (size_t p = 0; p < b->len && !ac.err;) {
		struct rec h;

		memcpy(&h, b->p + p, REC_HDR);
		rec_entries(b->p + p, &h, apply_fn, &ac);
		p += h.len;
	}
	return apply_flush(&ac);
}

/* Lead or follow until record `seq` is durable. Called with lock held. */
static int wait_locked(struct pstore *s, uint64_t seq)
{
	while (s->durable_seq <= seq && !s->err) {
		if (s->leader) {
			pthread_cond_wait(&s->done, &s->lock);
			continue;
		}
		if (!s->pend.nrec)
			break;
		/*
		 * Group commit delay: operations that have started but not yet appended their
		 * record, or fewer records than the last batch had (its writers are on their way
		 * back), are worth a short wait so that one sync covers them too. At most
		 * COMMIT_DELAY_US; a lone writer (batches of one, nobody preparing) never waits.
		 */
		if (atomic_load(&s->preparing) > 0 || s->pend.nrec < s->last_batch) {
			struct timespec dl;

			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += COMMIT_DELAY_US * 1000;
			if (dl.tv_nsec >= 1000000000) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000;
			}
			s->leader = true;
			s->gathering = true;
			while ((atomic_load(&s->preparing) > 0 || s->pend.nrec < s->last_batch) &&
			       pthread_cond_timedwait(&s->appended, &s->lock, &dl) == 0)
				;
			s->gathering = false;
			s->leader = false;
		}
		s->last_batch = s->pend.nrec;
		struct precbuf t = s->flight;
		uint64_t sb = s->durable_seq, dl = s->durable_len, ml = s->pend_max_len;
		uint64_t nl = s->pend_last_len;

		s->flight = s->pend;
		s->pend = t;
		s->pend.len = 0;
		s->pend.nrec = 0;
		s->pend.first_seq = s->next_seq;
		s->pend_max_len = 0;
		s->leader = true;
		pthread_mutex_unlock(&s->lock);
		int r = write_batch(s, sb, dl, ml);

		pthread_mutex_lock(&s->lock);
		if (r)
			s->err = r;
		else {
			s->durable_seq = s->flight.first_seq + s->flight.nrec;
			s->durable_len = nl;
		}
		s->flight.len = 0;
		s->flight.nrec = 0;
		s->leader = false;
		pthread_cond_broadcast(&s->done);
	}
	return s->durable_seq > seq ? 0 : (s->err ? s->err : -EIO);
}

int pstore_wait(struct pstore *s, uint64_t seq)
{
	int r;

	if (!seq)
		return 0;
	pthread_mutex_lock(&s->lock);
	r = wait_locked(s, seq);
	pthread_mutex_unlock(&s->lock);
	return r;
}

int pstore_tx_end(struct pstore *s, uint64_t *seqp)
{
	uint64_t seq = 0;
	bool flush = false;
	int r = 0;

	*seqp = 0;
	if (s->tx_oom) {
		pstore_tx_abort(s);
		return -ENOMEM;
	}
	if (s->tx.len > pstore_max_record(s)) {
		pstore_tx_abort(s);
		return -E2BIG;
	}
	pthread_mutex_lock(&s->lock);
	if (!s->tx.nrec && s->tx_len == s->len)
		goto out;
	if (s->pend.len + s->tx.len > s->wal_size / 2 && s->pend.nrec)
		wait_locked(s, s->next_seq - 1);
	r = s->err;
	if (!r && buf_reserve(&s->pend, s->tx.len))
		r = -ENOMEM;
	if (r)
		goto out;
	struct rec h = { .magic = REC_MAGIC, .len = (uint32_t)s->tx.len, .seq = s->next_seq,
			 .new_len = s->tx_len, .nent = (uint32_t)s->tx.nrec };

	memcpy(s->tx.p, &h, REC_HDR);
	memcpy(s->pend.p + s->pend.len, s->tx.p, s->tx.len);
	if (!s->pend.nrec)
		s->pend.first_seq = s->next_seq;
	s->pend.len += s->tx.len;
	s->pend.nrec++;
	s->pend_last_len = s->tx_len;
	if (s->gathering)
		pthread_cond_broadcast(&s->appended);
	if (s->tx_len > s->pend_max_len)
		s->pend_max_len = s->tx_len;
	seq = s->next_seq++;
	s->len = s->tx_len;
	s->records++;
	flush = s->async && s->pend.len > ASYNC_FLUSH;
	*seqp = seq;
out:
	if (flush)
		r = wait_locked(s, seq);
	pthread_mutex_unlock(&s->lock);
	s->tx.len = 0;
	s->tx.nrec = 0;
	pthread_mutex_unlock(&s->tx_lock);
	return r;
}

/* ---------------------------------------------------------------- reads */

struct ovl_ctx {
	uint64_t off, len;
	uint8_t *buf;
};

static void ovl_fn(void *arg, uint64_t off, const void *data, uint64_t len)
{
	struct ovl_ctx *c = arg;
	uint64_t a = off > c->off ? off : c->off;
	uint64_t e = off + len < c->off + c->len ? off + len : c->off + c->len;

	if (a < e)
		memcpy(c->buf + (a - c->off), (const uint8_t *)data + (a - off), e - a);
}

static void overlay(struct precbuf *b, struct ovl_ctx *c)
{
	for (size_t p = 0; p < b->len;) {
		struct rec h;

		memcpy(&h, b->p + p, REC_HDR);
		rec_entries(b->p + p, &h, ovl_fn, c);
		p += h.len;
	}
}

int pstore_read(struct pstore *s, uint64_t off, void *buf, size_t len)
{
	struct ovl_ctx c = { .off = off, .len = len, .buf = buf };
	int r;

	pthread_mutex_lock(&s->lock);
	r = pio_read(s->f, buf, len, s->data_off + off);
	if (!r) {
		overlay(&s->flight, &c);
		overlay(&s->pend, &c);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int pstore_read_tx(struct pstore *s, uint64_t off, void *buf, size_t len)
{
	struct ovl_ctx c = { .off = off, .len = len, .buf = buf };
	struct rec h = { .len = (uint32_t)s->tx.len, .nent = (uint32_t)s->tx.nrec };
	int r = pstore_read(s, off, buf, len);

	if (!r && !s->tx_oom)
		rec_entries(s->tx.p, &h, ovl_fn, &c);
	return r;
}

int pstore_read_word(struct pstore *s, uint64_t off, uint64_t *w)
{
	return pstore_read(s, off, w, 8);
}

uint64_t pstore_len(struct pstore *s)
{
	uint64_t l;

	pthread_mutex_lock(&s->lock);
	l = s->len;
	pthread_mutex_unlock(&s->lock);
	return l;
}

int pstore_sync_all(struct pstore *s)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = s->next_seq > 1 ? wait_locked(s, s->next_seq - 1) : 0;
	if (!r)
		r = s->err;
	pthread_mutex_unlock(&s->lock);
	return r;
}

int pstore_close(struct pstore *s, bool clean)
{
	int r = clean ? pstore_sync_all(s) : -EIO;

	if (clean && !r)
		r = checkpoint(s, s->next_seq, s->len, HDR_CLEAN);
	if (clean && !r && s->file_len > s->data_off + s->len)
		r = pio_truncate(s->f, s->data_off + s->len);
	pio_close(s->f);
	free_common(s);
	return clean ? r : 0;
}

/* ---------------------------------------------------------------- the plain byte stack */

static int end_wait(struct pstore *s)
{
	uint64_t seq;
	int r = pstore_tx_end(s, &seq);

	return r ? r : pstore_wait(s, seq);
}

int pstore_extend(struct pstore *s, uint64_t len, uint64_t *off)
{
	pstore_tx_begin(s);
	*off = s->tx_len;
	pstore_tx_len(s, s->tx_len + len);
	return end_wait(s);
}

int pstore_discard(struct pstore *s, uint64_t len)
{
	pstore_tx_begin(s);
	if (len > s->tx_len) {
		pstore_tx_abort(s);
		return -EINVAL;
	}
	pstore_tx_len(s, s->tx_len - len);
	return end_wait(s);
}

int pstore_set(struct pstore *s, uint64_t off, const void *buf, size_t len)
{
	size_t chunk = pstore_max_record(s) - REC_HDR - 16;
	const uint8_t *p = buf;
	uint64_t seq = 0;

	while (len) {
		size_t n = len < chunk ? len : chunk;

		pstore_tx_begin(s);
		if (off + n > s->tx_len) {
			pstore_tx_abort(s);
			return -EINVAL;
		}
		pstore_tx_blob(s, off, p, n);
		int r = pstore_tx_end(s, &seq);

		if (r)
			return r;
		p += n;
		off += n;
		len -= n;
	}
	return pstore_wait(s, seq);
}
