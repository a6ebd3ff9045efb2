/* SPDX-License-Identifier: MIT */
/*
 * sefer persist face: a crash-safe allocator over one file.
 *
 * A store is one file: a header, a write-ahead log and a payload. An allocator (chosen at
 * create, recorded by the payload's magic) hands out payload offsets. Every mutating call is
 * durable before it returns 0; concurrent calls on one handle share syncs (group commit).
 *
 * Crash contract: a crash (or a failed call) leaves each operation either entirely done or
 * not done at all; at most the block of an unacknowledged alloc is leaked; every acknowledged
 * allocation reads back byte for byte after reopen. Formats: Documentation/persist.rst.
 *
 * Errors are negative errno values; open/create also fill opts->errbuf with a sentence that
 * names the problem (bad magic, future version, truncated header, ...). A refused file is not
 * written to.
 */
#ifndef SEFER_PERSIST_H
#define SEFER_PERSIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * SEFER_STATIC_API: only for a program that #includes the amalgamated sefer.c with
 * SEFER_STATIC_ALL (Documentation/vendoring.rst); the API becomes static there too.
 */
#if defined(SEFER_STATIC_API)
#define SEFER_API static __attribute__((__unused__))
#elif defined(_WIN32)
#define SEFER_API
#else
#define SEFER_API __attribute__((visibility("default")))
#endif

struct sefer_pstore;

enum sefer_palloc_kind {
	SEFER_PALLOC_SEGREGATED = 0,	/* magic ALSG */
	SEFER_PALLOC_FIRSTFIT = 1,	/* magic ALFF */
	SEFER_PALLOC_BESTFIT = 2,	/* magic ALBT */
	SEFER_PALLOC_KINDS
};

/* Flags for sefer_popts.flags. */
#define SEFER_P_ASYNC 0x1	/* calls return before their sync (bulk loads); see sefer_psync() */
#define SEFER_P_NOSCAN 0x2	/* skip the arena scan at open (fsck + orphan relink) */
/*
 * Open for reading only, under a shared lock (other read-only openers may share it; a writer
 * is refused with -EWOULDBLOCK, as a reader is while a writer has the store). Nothing is ever
 * written to the file: recovery after a crash (log replay, orphan relink) is done in memory
 * only, so reads see the recovered state and opts->report says what recovery would do; the
 * next writable open does it for good. Calls that would change the store fail with -EROFS.
 */
#define SEFER_P_RDONLY 0x4

/* What open found and did; filled when opts->report is set. */
struct sefer_precovery {
	int clean;			/* the previous user closed the store */
	uint64_t wal_records;		/* log records replayed */
	uint64_t bytes_trimmed;		/* file bytes beyond the committed length cut off */
	uint64_t blocks_scanned;	/* blocks walked by the arena scan (0: no scan) */
	uint64_t orphans_relinked;	/* free blocks found on no free list, relinked */
	uint64_t orphan_bytes;
	uint64_t usec;			/* time open took */
};

struct sefer_popts {
	unsigned flags;			/* SEFER_P_* */
	uint64_t wal_bytes;		/* create: log size (0: CONFIG_PERSIST_WAL_KIB); the
				 * page cache holds at most wal_bytes / 1024 pages */
	char *errbuf;			/* optional: why open/create failed */
	size_t errlen;
	struct sefer_precovery *report;	/* optional: what recovery did */
};

struct sefer_pstats {
	enum sefer_palloc_kind kind;
	const char *allocator;		/* "segregated", "first-fit", "best-fit-tree" */
	uint64_t ops;			/* alloc + realloc + free + write calls on this handle */
	uint64_t syncs;			/* data syncs issued on this handle */
	uint64_t wal_records, checkpoints;
	uint64_t payload_bytes;		/* committed payload length */
	uint64_t file_bytes;
	uint64_t used_blocks, used_bytes;
	uint64_t free_blocks, free_bytes;
	uint64_t list_len[40];		/* free blocks per class (segregated) or list (others) */
	unsigned nlists;
};

struct sefer_pverify {
	uint64_t blocks, used_blocks, free_blocks;
	uint64_t used_bytes, free_bytes;
	uint64_t orphans;		/* free blocks on no list */
	uint64_t errors;		/* 0: the arena is consistent */
	char msg[256];			/* the first error found */
};

/* Create a new store (fails with -EEXIST if `path` exists). */
SEFER_API int sefer_pstore_create(const char *path, enum sefer_palloc_kind kind,
				  const struct sefer_popts *opts, struct sefer_pstore **out);
/*
 * Open an existing store, replaying its log; a second opener gets -EWOULDBLOCK (two
 * SEFER_P_RDONLY openers excepted).
 */
SEFER_API int sefer_pstore_open(const char *path, const struct sefer_popts *opts,
				struct sefer_pstore **out);
/* Checkpoint, mark clean, trim and close. Returns the first error seen (the handle is freed). */
SEFER_API int sefer_pstore_close(struct sefer_pstore *h);

/* Allocate `size` bytes; *off receives the payload offset (16-byte aligned). */
SEFER_API int sefer_palloc(struct sefer_pstore *h, size_t size, uint64_t *off);
/* Resize; contents kept up to the smaller size; *newoff may equal off. */
SEFER_API int sefer_prealloc(struct sefer_pstore *h, uint64_t off, size_t size,
			     uint64_t *newoff);
/* Free; a double free or an offset that is no block start is -EINVAL and changes nothing. */
SEFER_API int sefer_pfree(struct sefer_pstore *h, uint64_t off);
/* Usable size of the block at off, or 0 when off is not an allocated block. */
SEFER_API size_t sefer_pusable(struct sefer_pstore *h, uint64_t off);

/*
 * Write/read [pos, pos+len) of the allocated block at `off` (pos + len <= usable size, else
 * -EINVAL). A write is durable on return and atomic (all or nothing after a crash) up to a
 * quarter of the log size; a longer one is split into atomic pieces.
 */
SEFER_API int sefer_pwrite(struct sefer_pstore *h, uint64_t off, uint64_t pos, const void *buf,
			   size_t len);
SEFER_API int sefer_pread(struct sefer_pstore *h, uint64_t off, uint64_t pos, void *buf,
			  size_t len);

/* The root slot: one offset the application finds again after a restart (0: none). */
SEFER_API int sefer_pset_root(struct sefer_pstore *h, uint64_t off);
SEFER_API uint64_t sefer_pget_root(struct sefer_pstore *h);

/* Wait until every call made so far is durable (needed only with SEFER_P_ASYNC). */
SEFER_API int sefer_psync(struct sefer_pstore *h);

/* Merge adjacent free blocks and give the free tail back to the file system. */
SEFER_API int sefer_pcompact(struct sefer_pstore *h, uint64_t *merged, uint64_t *trimmed);

SEFER_API int sefer_pstats(struct sefer_pstore *h, struct sefer_pstats *st);
/* The same into the first size bytes of *st (pass sizeof): the struct grows at its end. */
SEFER_API int sefer_pstats_get(struct sefer_pstore *h, struct sefer_pstats *st, size_t size);
/* fsck: walk the whole arena and every free list. Returns 0 when consistent. */
SEFER_API int sefer_pverify(struct sefer_pstore *h, struct sefer_pverify *v);

/*
 * Visit every allocated block in address order (fn returns non-zero to stop). For tools and
 * for finding blocks leaked by a crash.
 */
SEFER_API int sefer_pwalk(struct sefer_pstore *h,
			  int (*fn)(void *arg, uint64_t off, uint64_t usable), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* SEFER_PERSIST_H */
