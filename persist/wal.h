/* SPDX-License-Identifier: MIT */
/*
 * Shared by store.c (open, checkpoint), commit.c (records, group commit) and record.c
 * (walking records, reading the log back): the log record format.
 */
#ifndef SEFER_PERSIST_WAL_H
#define SEFER_PERSIST_WAL_H

#include "persist/internal.h"

#define REC_MAGIC 0x4c415753u	/* "SWAL" */
#define REC_HDR 40
#define ENT_BLOB (1ULL << 63)	/* entry: a blob follows (else an 8-byte word) */

/* Record header, little-endian on disk. */
struct rec {
	uint32_t magic, len;		/* len: whole record, multiple of 8 */
	uint64_t seq, synced_before, new_len;
	uint32_t nent, crc;		/* crc: CRC-32C of the record with crc = 0 */
};
_Static_assert(sizeof(struct rec) == REC_HDR, "record header layout");

/* Walk a record's entries, fn(arg, off, data, len) for each; false when malformed. */
SEFER_INTERNAL bool sefer__prec_entries(const uint8_t *r, const struct rec *h,
		  void (*fn)(void *, uint64_t, const void *, uint64_t), void *arg);

/*
 * The log read back at open (record.c), through a window of the file: a record may straddle
 * two windows, then it is read again. err: the first read error (-errno), sticky.
 */
struct prec_reader {
	struct pstore *s;
	uint8_t *buf;
	uint64_t pos, len, cap;
	int err;
};

/* Log bytes [pos, pos + n), or NULL (a read error, or beyond the log). */
SEFER_INTERNAL const uint8_t *sefer__prec_reader_at(struct prec_reader *rd, uint64_t pos,
						    uint64_t n);
/* Is there a well-formed record at pos? Checks everything but its seq; *rp: its bytes. */
SEFER_INTERNAL bool sefer__prec_reader_ok(struct prec_reader *rd, uint64_t pos, struct rec *h,
					  const uint8_t **rp);
/*
 * Sync discovery: is there, at an 8-byte boundary from `from` on, a well-formed record
 * after `seq` whose synced_before says record `seq` was synced? *h: that record's header.
 */
SEFER_INTERNAL bool sefer__prec_reader_synced_after(struct prec_reader *rd, uint64_t from,
						    uint64_t seq, struct rec *h);
SEFER_INTERNAL void sefer__prec_reader_end(struct prec_reader *rd);

SEFER_INTERNAL int sefer__pbuf_reserve(struct precbuf *b, size_t more);
/*
 * Write the page cache back, sync, header := (ckpt_seq, len, flags), sync, empty the cache;
 * the log restarts at offset 0. The leader or the exclusive owner, without s->lock.
 */
SEFER_INTERNAL int sefer__pstore_checkpoint(struct pstore *s, uint64_t ckpt_seq, uint64_t len,
					    uint32_t flags);
/* Extend the file to `end` with written zeros (not a hole). */
SEFER_INTERNAL int sefer__pstore_zero_fill(struct pstore *s, uint64_t from, uint64_t end);

#endif
