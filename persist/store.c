// SPDX-License-Identifier: MIT
/*
 * The store: one file holding a header, a write-ahead log and the payload. This file creates,
 * opens (header, log replay, sync discovery), checkpoints and closes it; records and group
 * commit are commit.c's, which calls this file and never the other way (persist/pstore.c).
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
	/*
	 * Not const: a const array lands in .rodata, in the library's file pages, where the
	 * kernel's fault-around maps all 64 KiB of it into every process that reads a
	 * neighbouring constant, persist or not (the malloc face's peak RSS). In .bss it costs
	 * nothing until a store is zero-filled, and reads of it map the shared zero page.
	 */
	static uint8_t zero[64 << 10];
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
	r = sefer__pio_lock(s->f, false);
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

/* Check the header (sector 0) against the file and take the checkpoint it names. */
static int read_header(struct pstore *s, const char *path, struct pstore_open_info *info,
		       char *err, size_t elen)
{
	int64_t fsz = sefer__pio_size(s->f);
	struct shdr h;

	if (fsz < 0) {
		emsg(err, elen, "%s: cannot stat: %s", path, strerror((int)-fsz));
		return (int)fsz;
	}
	if (fsz < 8 || sefer__pio_read(s->f, &h, 8, 0) || memcmp(h.magic, store_magic, 7)) {
		emsg(err, elen, "%s: bad magic: not a sefer persist store", path);
		return -EUCLEAN;
	}
	/* The size first: the version byte of a file cut short says nothing. */
	if (fsz < PSTORE_HDR_BYTES) {
		emsg(err, elen, "%s: truncated header: the file is %lld bytes, a store header is %d "
		     "(a store cut short, or not a whole store)", path, (long long)fsz,
		     PSTORE_HDR_BYTES);
		return -EUCLEAN;
	}
	if (!(uint8_t)h.magic[7]) {
		emsg(err, elen, "%s: store version 0 is not a version (corrupted header)", path);
		return -EUCLEAN;
	}
	if ((uint8_t)h.magic[7] != PSTORE_VERSION) {
		emsg(err, elen, "%s: store version %u is newer than this library (version %u)",
		     path, (uint8_t)h.magic[7], PSTORE_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (sefer__pio_read(s->f, &h, sizeof(h), 0)) {
		emsg(err, elen, "%s: cannot read header", path);
		return -EIO;
	}
	if (sefer__pcrc32c(0, &h, offsetof(struct shdr, crc)) != h.crc) {
		emsg(err, elen, "%s: header checksum mismatch (corrupted metadata)", path);
		return -EUCLEAN;
	}
	if (h.hdr_bytes != PSTORE_HDR_BYTES || h.wal_off != PSTORE_WAL_OFF || h.wal_size < 4096 ||
	    h.wal_size % 4096 || h.wal_size > (1ULL << 40)) {
		emsg(err, elen, "%s: header fields out of range (log size %llu)", path,
		     (unsigned long long)h.wal_size);
		return -EUCLEAN;
	}
	set_wal_size(s, h.wal_size);
	if ((uint64_t)fsz < s->data_off + h.committed_len) {
		emsg(err, elen, "%s: committed length %llu is beyond the end of the file "
		     "(%lld bytes of payload)", path, (unsigned long long)h.committed_len,
		     (long long)fsz - (long long)s->data_off);
		return -EUCLEAN;
	}
	s->ckpt_seq = h.ckpt_seq;
	s->ckpt_count = h.ckpt_count;
	s->hdr_flags = h.flags;
	s->len = h.committed_len;
	s->file_len = (uint64_t)fsz;
	info->clean = h.flags & HDR_CLEAN;
	return 0;
}

/*
 * Replay the log's valid prefix, the consecutive well-formed records from ckpt_seq on, into
 * the page cache (memory: nothing is written). Leaves the store after its last record.
 */
static int replay_log(struct pstore *s, struct prec_reader *rd, const char *path, char *err,
		      size_t elen)
{
	uint64_t pos = 0, seq = s->ckpt_seq, len = s->len;
	const uint8_t *rp;
	struct rec h;

	while (sefer__prec_reader_ok(rd, pos, &h, &rp) && h.seq == seq) {
		if (!sefer__prec_entries(rp, &h, NULL, NULL)) {
			emsg(err, elen, "%s: log record %llu is malformed", path,
			     (unsigned long long)seq);
			return -EUCLEAN;
		}
		sefer__prec_entries(rp, &h, sefer__pcache_apply_entry, s);
		len = h.new_len;
		pos += h.len;
		seq++;
	}
	s->next_seq = s->durable_seq = seq;
	s->len = s->durable_len = len;
	s->wal_pos = pos;
	return 0;
}

/*
 * Sync discovery: the replay stopped at a record that is torn or missing. A later record
 * whose synced_before lies beyond it proves it was synced: corruption, not a torn tail.
 */
static int check_log_tail(struct pstore *s, struct prec_reader *rd, const char *path, char *err,
			  size_t elen)
{
	struct rec h;
	int r;

	if (sefer__prec_reader_synced_after(rd, s->wal_pos, s->next_seq, &h)) {
		emsg(err, elen, "%s: log record %llu is corrupt (checksum) although record %llu "
		     "shows it was synced", path, (unsigned long long)s->next_seq,
		     (unsigned long long)h.seq);
		return -EUCLEAN;
	}
	r = rd->err ? rd->err : s->cache.err;
	if (r)
		emsg(err, elen, "%s: cannot read the log: %s", path, strerror(-r));
	return r;
}

/*
 * Open: lock, read the header, replay the log into the page cache, check what follows the
 * replayed records. Nothing is written: sefer__pstore_finish_open does that once the
 * allocator has accepted the image too.
 */
int sefer__pstore_open(struct pstore *s, const char *path, bool read_only,
		       struct pstore_open_info *info, char *err, size_t elen)
{
	struct prec_reader rd = { .s = s };
	int r;

	init_common(s);
	memset(info, 0, sizeof(*info));
	s->read_only = read_only;
	s->f = sefer__pio_open(path, read_only ? SEFER_OPEN_READ : 0);
	if (s->f < 0) {
		r = (int)s->f;
		emsg(err, elen, "%s: cannot open: %s", path, strerror(-r));
		free_common(s);
		return r;
	}
	r = sefer__pio_lock(s->f, s->read_only); /* readers share the lock, a writer excludes */
	if (r)
		emsg(err, elen, "%s: store is in use by another process (file lock held)", path);
	if (!r)
		r = read_header(s, path, info, err, elen);
	if (!r)
		r = replay_log(s, &rd, path, err, elen);
	if (!r)
		r = check_log_tail(s, &rd, path, err, elen);
	sefer__prec_reader_end(&rd);
	if (r) {
		sefer__pio_close(s->f);
		free_common(s);
		return r;
	}
	info->replayed = s->next_seq - s->ckpt_seq;
	return 0;
}

/*
 * Give back the file beyond the payload, keeping whole pages: the file length stays a multiple
 * of the page size, so a page written back never ends past file_len.
 */
static uint64_t trim_keep(struct pstore *s)
{
	return (s->data_off + s->len + PCACHE_PAGE - 1) & ~(uint64_t)(PCACHE_PAGE - 1);
}

static int trim_file(struct pstore *s, uint64_t *trimmed)
{
	uint64_t keep = trim_keep(s);
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
	int r;

	*trimmed = 0;
	if (s->read_only) {
		if (s->file_len > trim_keep(s))
			*trimmed = s->file_len - trim_keep(s);
		return 0;
	}
	r = sefer__pstore_checkpoint(s, s->next_seq, s->len, 0);
	return r ? r : trim_file(s, trimmed);
}

int sefer__pstore_close(struct pstore *s, bool clean)
{
	uint64_t trimmed;
	int r = 0;

	if (s->read_only)
		clean = false;		/* nothing to write, and nothing may be */
	if (clean)
		r = sefer__pstore_checkpoint(s, s->next_seq, s->len, HDR_CLEAN);
	if (clean && !r)
		r = trim_file(s, &trimmed);
	sefer__pio_close(s->f);
	free_common(s);
	return clean ? r : 0;
}
