// SPDX-License-Identifier: MIT
/*
 * Building records, group commit, reads that see records not yet checkpointed, and the plain
 * byte stack (one record a call). Below it: store.c (checkpoint, file growth); which file may
 * call which: the top of persist/pstore.c.
 *
 * The invariants and the lock order are stated at the top of persist/store.c: tx_lock (held by
 * the builder from sefer__pstore_tx_begin to sefer__pstore_tx_end) before lock. The leader does its
 * I/O without lock; `flight` belongs to it until it has applied it to the page cache and cleared
 * it, under lock.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "persist/internal.h"
#include "persist/wal.h"

#define ASYNC_FLUSH (64u << 10)	/* SEFER_P_ASYNC: flush once this much is pending */
#define COMMIT_DELAY_US 150	/* longest wait of a leader for records on their way */

int sefer__pbuf_reserve(struct precbuf *b, size_t more)
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

void sefer__pstore_op_begin(struct pstore *s)
{
	atomic_fetch_add(&s->preparing, 1);
}

void sefer__pstore_op_appended(struct pstore *s)
{
	if (atomic_fetch_sub(&s->preparing, 1) == 1) {
		pmutex_lock(&s->lock);
		pthread_cond_broadcast(&s->appended);
		pmutex_unlock(&s->lock);
	}
}

/* ---------------------------------------------------------------- records */

void sefer__pstore_tx_begin(struct pstore *s) __acquires(&s->tx_lock)
{
	pmutex_lock(&s->tx_lock);
	s->tx.len = 0;
	s->tx.nrec = 0;		/* entry count while building */
	s->tx_oom = sefer__pbuf_reserve(&s->tx, REC_HDR) != 0;
	s->tx.len = REC_HDR;
	pmutex_lock(&s->lock);
	s->tx_len = s->len;
	pmutex_unlock(&s->lock);
}

static void tx_put(struct pstore *s, uint64_t a, uint64_t b, const void *data, size_t len)
{
	size_t pad = (len + 7) & ~(size_t)7;

	if (sefer__pbuf_reserve(&s->tx, 16 + pad)) {
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

void sefer__pstore_tx_word(struct pstore *s, uint64_t off, uint64_t val) __must_hold(&s->tx_lock)
{
	tx_put(s, off, val, NULL, 0);
}

void sefer__pstore_tx_blob(struct pstore *s, uint64_t off, const void *buf, size_t len)
	__must_hold(&s->tx_lock)
{
	tx_put(s, off | ENT_BLOB, len, buf, len);
}

void sefer__pstore_tx_len(struct pstore *s, uint64_t len) __must_hold(&s->tx_lock)
{
	s->tx_len = len;
}

size_t sefer__pstore_tx_size(struct pstore *s) __must_hold(&s->tx_lock)
{
	return s->tx.len;
}

size_t sefer__pstore_max_record(struct pstore *s)
{
	return s->wal_size / 4;
}

void sefer__pstore_tx_abort(struct pstore *s) __releases(&s->tx_lock)
{
	s->tx_oom = false;
	s->tx.len = 0;
	s->tx.nrec = 0;
	pmutex_unlock(&s->tx_lock);
}

/*
 * Make the flight batch durable: checkpoint if the log or the page cache is full, grow the
 * file, write the batch to the log, sync. The leader, without lock. A read-only store writes
 * nothing: its records (recovery's, at open) live in the page cache alone.
 */
static int write_batch(struct pstore *s, uint64_t durable_len, uint64_t max_len)
{
	struct precbuf *b = &s->flight;
	int r = 0;

	if (s->read_only)
		return 0;
	if (s->wal_pos + b->len > s->wal_size || s->cache.n > s->cache_max) {
		r = sefer__pstore_checkpoint(s, b->first_seq, durable_len, 0);
		if (r)
			return r;
	}
	if (s->data_off + max_len > s->file_len) {
		uint64_t grow = (s->data_off + max_len + (max_len >> 3) + (1 << 20)) & ~4095ULL;

		r = sefer__pstore_zero_fill(s, s->file_len, grow);
		if (r)
			return r;
		s->file_len = grow;
	}
	r = sefer__pio_write(s->f, b->p, b->len, PSTORE_WAL_OFF + s->wal_pos);
	if (r)
		return r;
	s->wal_pos += b->len;
	r = sefer__pio_sync(s->f);
	s->syncs++;
	return r;
}

/* Apply the (durable) flight batch to the page cache. Called with lock held. */
static int apply_batch(struct pstore *s) __must_hold(&s->lock)
{
	struct precbuf *b = &s->flight;

	for (size_t p = 0; p < b->len && !s->cache.err; ) {
		struct rec h;

		memcpy(&h, b->p + p, REC_HDR);
		sefer__prec_entries(b->p + p, &h, sefer__pcache_apply_entry, s);
		p += h.len;
	}
	return s->cache.err;
}

/* Lead or follow until record `seq` is durable. Called with lock held. */
static int wait_locked(struct pstore *s, uint64_t seq) __must_hold(&s->lock)
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
		uint64_t dl = s->durable_len, ml = s->pend_max_len;
		uint64_t nl = s->pend_last_len;

		s->flight = s->pend;
		s->pend = t;
		s->pend.len = 0;
		s->pend.nrec = 0;
		s->pend.first_seq = s->next_seq;
		s->pend_max_len = 0;
		s->leader = true;
		pmutex_unlock(&s->lock);
		int r = write_batch(s, dl, ml);

		pmutex_lock(&s->lock);
		if (r) {
			s->err = r;
		} else {
			/*
			 * Durable: into the page cache (memory; a page's first change reads it),
			 * then its writers may return. A failed apply poisons the store, but the
			 * batch's records are durable and their operations done.
			 */
			r = apply_batch(s);
			if (r && !s->err)
				s->err = r;
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

int sefer__pstore_wait(struct pstore *s, uint64_t seq)
{
	int r;

	if (!seq)
		return 0;
	pmutex_lock(&s->lock);
	r = wait_locked(s, seq);
	pmutex_unlock(&s->lock);
	return r;
}

int sefer__pstore_tx_end(struct pstore *s, uint64_t *seqp) __releases(&s->tx_lock)
{
	uint64_t seq = 0;
	bool flush = false;
	int r = 0;

	*seqp = 0;
	if (s->tx_oom) {
		sefer__pstore_tx_abort(s);
		return -ENOMEM;
	}
	if (s->tx.len > sefer__pstore_max_record(s)) {
		sefer__pstore_tx_abort(s);
		return -E2BIG;
	}
	pmutex_lock(&s->lock);
	if (!s->tx.nrec && s->tx_len == s->len)
		goto out;
	if (s->pend.len + s->tx.len > s->wal_size / 2 && s->pend.nrec)
		wait_locked(s, s->next_seq - 1);
	r = s->err;
	if (!r && sefer__pbuf_reserve(&s->pend, s->tx.len))
		r = -ENOMEM;
	if (r)
		goto out;
	/*
	 * Sealed here, never touched again (readers overlay pend and flight under lock while the
	 * leader writes them): synced_before is durable_seq now, a lower bound of its value when
	 * the record reaches the log, so the claim "every record below was synced" stays true.
	 */
	struct rec h = { .magic = REC_MAGIC, .len = (uint32_t)s->tx.len, .seq = s->next_seq,
			 .synced_before = s->durable_seq, .new_len = s->tx_len,
			 .nent = (uint32_t)s->tx.nrec };

	memcpy(s->tx.p, &h, REC_HDR);
	h.crc = sefer__pcrc32c(0, s->tx.p, s->tx.len);
	memcpy(s->tx.p + offsetof(struct rec, crc), &h.crc, 4);
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
	pmutex_unlock(&s->lock);
	s->tx.len = 0;
	s->tx.nrec = 0;
	pmutex_unlock(&s->tx_lock);
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
		sefer__prec_entries(b->p + p, &h, ovl_fn, c);
		p += h.len;
	}
}

int sefer__pstore_read(struct pstore *s, uint64_t off, void *buf, size_t len)
{
	struct ovl_ctx c = { .off = off, .len = len, .buf = buf };
	int r;

	pmutex_lock(&s->lock);
	r = sefer__pcache_read(&s->cache, s, off, buf, len);
	if (!r) {
		overlay(&s->flight, &c);
		overlay(&s->pend, &c);
	}
	pmutex_unlock(&s->lock);
	return r;
}

int sefer__pstore_read_tx(struct pstore *s, uint64_t off, void *buf, size_t len)
{
	struct ovl_ctx c = { .off = off, .len = len, .buf = buf };
	struct rec h = { .len = (uint32_t)s->tx.len, .nent = (uint32_t)s->tx.nrec };
	int r = sefer__pstore_read(s, off, buf, len);

	if (!r && !s->tx_oom)
		sefer__prec_entries(s->tx.p, &h, ovl_fn, &c);
	return r;
}

int sefer__pstore_read_word(struct pstore *s, uint64_t off, uint64_t *w)
{
	return sefer__pstore_read(s, off, w, 8);
}

uint64_t sefer__pstore_len(struct pstore *s)
{
	uint64_t l;

	pmutex_lock(&s->lock);
	l = s->len;
	pmutex_unlock(&s->lock);
	return l;
}

int sefer__pstore_sync_all(struct pstore *s)
{
	int r;

	pmutex_lock(&s->lock);
	r = s->next_seq > 1 ? wait_locked(s, s->next_seq - 1) : 0;
	if (!r)
		r = s->err;
	pmutex_unlock(&s->lock);
	return r;
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
