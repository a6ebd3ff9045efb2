/* SPDX-License-Identifier: MIT */
/*
 * Shared by store.c (open, checkpoint), commit.c (records, group commit) and record.c
 * (applying records): the log record format and the in-place writer.
 */
#ifndef SEFER_PERSIST_WAL_H
#define SEFER_PERSIST_WAL_H

#include "persist/internal.h"

#define REC_MAGIC 0x4c415753u	/* "SWAL" */
#define REC_HDR 40
#define ENT_BLOB (1ULL << 63)	/* entry: a blob follows (else an 8-byte word) */
#define PAGED_ENTRIES 64	/* more entries than this are written through pages */

/* Record header, little-endian on disk. */
struct rec {
	uint32_t magic, len;		/* len: whole record, multiple of 8 */
	uint64_t seq, synced_before, new_len;
	uint32_t nent, crc;		/* crc: CRC-32C of the record with crc = 0 */
};
_Static_assert(sizeof(struct rec) == REC_HDR, "record header layout");

/* Walk a record's entries, fn(arg, off, data, len) for each; false when malformed. */
bool prec_entries(const uint8_t *r, const struct rec *h,
		  void (*fn)(void *, uint64_t, const void *, uint64_t), void *arg);

/* Writing entries in place: direct pwrites, or (paged) gathered into 4 KiB pages. */
struct apply_ctx {
	struct pstore *s;
	int err;
	bool paged;
	uint64_t *key;		/* open addressing: page number + 1, 0 = empty */
	uint8_t **page;
	size_t cap, n;
};

void papply_fn(void *arg, uint64_t off, const void *data, uint64_t len);
int papply_flush(struct apply_ctx *c);	/* write the pages, free the map */
void papply_drop(struct apply_ctx *c);	/* free the map without writing */

int pbuf_reserve(struct precbuf *b, size_t more);
/* sync, header := (ckpt_seq, len, flags), sync; the log restarts at offset 0. */
int pstore_checkpoint(struct pstore *s, uint64_t ckpt_seq, uint64_t len, uint32_t flags);
/* Extend the file to `end` with written zeros (not a hole). */
int pstore_zero_fill(struct pstore *s, uint64_t from, uint64_t end);

#endif
