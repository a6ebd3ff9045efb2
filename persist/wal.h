/* SPDX-License-Identifier: MIT */
/*
 * Shared by store.c (open, checkpoint), commit.c (records, group commit) and record.c
 * (walking records): the log record format.
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
