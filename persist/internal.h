/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of persist/: checksums, the I/O layer (fault and crash injection over
 * sefer__os), the store (header + write-ahead log + payload) and the allocator ops contract.
 */
#ifndef SEFER_PERSIST_INTERNAL_H
#define SEFER_PERSIST_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/sefer/os.h"
#include "include/sefer/persist.h"

#include <errno.h>
#ifndef EUCLEAN			/* "structure needs cleaning": corrupt metadata */
#define EUCLEAN 117
#endif
#ifndef CONFIG_PERSIST_WAL_KIB
#define CONFIG_PERSIST_WAL_KIB 4096
#endif

/* ---------------------------------------------------------------- crc.c */
SEFER_INTERNAL uint32_t sefer__pcrc32c(uint32_t crc, const void *buf, size_t len);

/*
 * Checked metadata words: 48 bits of value, 16 bits of check derived from the value, the
 * word's own offset and a per-file salt. A flipped bit, a zeroed word or a word copied to
 * another offset fails the check (with probability 1 - 2^-16 each).
 */
#define PW_MASK ((1ULL << 48) - 1)
SEFER_INTERNAL uint64_t sefer__pword_make(uint64_t salt, uint64_t off, uint64_t val);
SEFER_INTERNAL bool sefer__pword_ok(uint64_t salt, uint64_t off, uint64_t word);
static inline uint64_t pword_val(uint64_t word)
{
	return word & PW_MASK;
}

/*
 * persist's mutexes, taken and dropped through these two so that sparse (make C=2) counts
 * them: a path that returns holding one, or drops one it does not hold, is reported unless
 * the function declares it (__acquires, __releases, __must_hold; include/sefer/compiler.h).
 * pthread_cond_wait and pthread_cond_timedwait drop and retake the mutex: no change.
 */
static inline void pmutex_lock(pthread_mutex_t *m) __acquires(m)
{
	pthread_mutex_lock(m);
	__acquire(m);
}

static inline void pmutex_unlock(pthread_mutex_t *m) __releases(m)
{
	__release(m);
	pthread_mutex_unlock(m);
}

/* ---------------------------------------------------------------- io.c */
/*
 * Every file access of persist/ goes through these wrappers over sefer__os. With a fault plan
 * installed they inject seeded failures (before or after a write, short writes, failed
 * syncs); with crash simulation on they remember unsynced writes so that sefer__pio_crash() can
 * leave the file as a crash would: any subset of them, in any order, torn at 512-byte sectors.
 */
struct pio_plan {
	uint64_t seed;
	unsigned permille;	/* chance per write or sync call to fail */
	bool crash_sim;		/* keep undo records for unsynced writes */
	bool keep_all;		/* the crash keeps every write (a killed process, not power) */
	uint64_t crash_at;	/* crash at this I/O call (1-based), 0: never */
};

SEFER_INTERNAL void sefer__pio_set_plan(const struct pio_plan *plan);	/* NULL: plain I/O */
/* Crash now: roll the file back to a random crash image; every later call fails with -EIO. */
SEFER_INTERNAL void sefer__pio_crash(void);
SEFER_INTERNAL bool sefer__pio_crashed(void);
SEFER_INTERNAL uint64_t sefer__pio_calls(void);
SEFER_INTERNAL uint64_t sefer__pio_faults(void);

SEFER_INTERNAL __must_check sefer_file_t sefer__pio_open(const char *path, int flags);
SEFER_INTERNAL void sefer__pio_close(sefer_file_t f);
/* sefer__pio_read and sefer__pio_write: all of len, or -errno */
SEFER_INTERNAL __must_check int sefer__pio_read(sefer_file_t f, void *buf, size_t len,
						uint64_t off);
SEFER_INTERNAL __must_check int sefer__pio_write(sefer_file_t f, const void *buf, size_t len,
						 uint64_t off);
SEFER_INTERNAL __must_check int sefer__pio_sync(sefer_file_t f);
SEFER_INTERNAL __must_check int sefer__pio_truncate(sefer_file_t f, uint64_t len);
SEFER_INTERNAL __must_check int64_t sefer__pio_size(sefer_file_t f);
SEFER_INTERNAL __must_check int sefer__pio_lock(sefer_file_t f, bool shared);

/* ---------------------------------------------------------------- store.c */
#define PSTORE_HDR_BYTES 512
#define PSTORE_WAL_OFF 4096
#define PSTORE_VERSION 1

/*
 * pcache.c: payload pages changed by durable records since the last checkpoint, written in
 * place only at the next checkpoint (open addressing on page number + 1, 0 = empty).
 */
#define PCACHE_PAGE 4096u
struct pcache {
	uint64_t *key;
	uint8_t **page;
	size_t cap, n;
	int err;		/* sticky error of sefer__pcache_apply (a failed read, no memory) */
};

struct pstore;
SEFER_INTERNAL const uint8_t *sefer__pcache_find(const struct pcache *c, uint64_t pg);
/* Write len bytes at payload offset off into the cache (pages read from disk on first use). */
SEFER_INTERNAL void sefer__pcache_apply(struct pcache *c, struct pstore *s, uint64_t off,
					const void *data, uint64_t len);
/* sefer__prec_entries callback: sefer__pcache_apply into the store's own cache (arg: the store). */
SEFER_INTERNAL void sefer__pcache_apply_entry(void *store, uint64_t off, const void *data,
					      uint64_t len);
/* Payload bytes [off, off + len): cached pages from memory, the others from disk. */
SEFER_INTERNAL __must_check int sefer__pcache_read(const struct pcache *c, struct pstore *s,
						   uint64_t off, void *buf, size_t len);
/* Write every cached page in place, in file order (unsynced); grows s->file_len to cover. */
SEFER_INTERNAL __must_check int sefer__pcache_write_back(const struct pcache *c, struct pstore *s);
SEFER_INTERNAL void sefer__pcache_drop(struct pcache *c);

struct precbuf {		/* a growable byte buffer of log records */
	uint8_t *p;
	size_t len, cap;
	uint64_t first_seq, nrec;
};

struct pstore {
	sefer_file_t f;
	uint64_t wal_size, data_off;	/* data_off: file offset of payload byte 0 */
	pthread_mutex_t tx_lock;	/* serialises record building (tx, tx_len, tx_oom) */
	uint64_t tx_len;		/* payload length after the record being built */
	bool tx_oom;
	pthread_mutex_t lock;		/* protects everything below; see store.c */
	pthread_cond_t done;
	pthread_cond_t appended;	/* preparing fell to 0 (the leader may stop waiting) */
	_Atomic int preparing;		/* group-commit ops started that have not appended yet */
	struct precbuf pend, flight;	/* appended, not yet taken / being written by the leader */
	struct precbuf tx;		/* the record being built by the caller holding tx_lock */
	uint64_t pend_max_len, pend_last_len;	/* largest / last new_len in pend */
	uint64_t next_seq;		/* seq of the next record */
	uint64_t durable_seq;		/* every record < durable_seq is synced and in cache */
	struct pcache cache;		/* their pages, until the next checkpoint */
	size_t cache_max;		/* more cached pages than this: checkpoint */
	uint64_t len, durable_len;	/* payload length: latest / as of durable_seq */
	_Atomic uint64_t file_len;	/* bytes the file has (it may be longer than needed) */
	uint64_t wal_pos, ckpt_seq;
	_Atomic uint64_t ckpt_count;	/* atomics: written by the leader, read by stats */
	bool leader, async, gathering;	/* gathering: the leader waits for more records */
	bool read_only;			/* opened for reading: records stay in memory */
	uint64_t last_batch;		/* records in the previous batch */
	int err;			/* sticky: the first I/O error; every later commit fails */
	_Atomic uint64_t syncs;
	uint64_t records;
	uint32_t hdr_flags;
};

struct pstore_open_info {
	bool clean;
	uint64_t replayed, trimmed;
};

SEFER_INTERNAL __must_check int sefer__pstore_create(struct pstore *s, const char *path,
						     uint64_t wal_size, char *err, size_t elen);
/*
 * read_only: open for reading under a shared lock; the store then never writes to the file,
 * records are applied to the page cache only (what recovery does stays in memory).
 */
SEFER_INTERNAL __must_check int sefer__pstore_open(struct pstore *s, const char *path,
						   bool read_only, struct pstore_open_info *info,
						   char *err, size_t elen);
/*
 * After the allocator accepted the replayed image: make it the checkpoint, mark unclean, trim.
 * Read-only: *trimmed says what would be trimmed; nothing is written.
 */
SEFER_INTERNAL __must_check int sefer__pstore_finish_open(struct pstore *s, uint64_t *trimmed);
/*
 * clean: the caller has synced every record (sefer__pstore_sync_all); checkpoint, mark the
 * store clean and trim it. Otherwise close the file as it is, as a crash would leave it.
 */
SEFER_INTERNAL int sefer__pstore_close(struct pstore *s, bool clean);

/*
 * Building a record: the caller serialises tx_begin..tx_end (the allocator's lock).
 * tx_word/tx_blob add absolute writes; tx_len sets the payload length after the record.
 * tx_end appends it and gives its seq (0 when the record is empty); sefer__pstore_wait(seq) returns
 * once that record is synced and applied to the page cache (or the store failed).
 */
SEFER_INTERNAL void sefer__pstore_tx_begin(struct pstore *s) __acquires(&s->tx_lock);
SEFER_INTERNAL void sefer__pstore_tx_word(struct pstore *s, uint64_t off, uint64_t val)
	__must_hold(&s->tx_lock);
SEFER_INTERNAL void sefer__pstore_tx_blob(struct pstore *s, uint64_t off, const void *buf,
					  size_t len) __must_hold(&s->tx_lock);
SEFER_INTERNAL void sefer__pstore_tx_len(struct pstore *s, uint64_t len) __must_hold(&s->tx_lock);
SEFER_INTERNAL size_t sefer__pstore_tx_size(struct pstore *s) __must_hold(&s->tx_lock);
/* *seq = 0: an empty record */
SEFER_INTERNAL int sefer__pstore_tx_end(struct pstore *s, uint64_t *seq) __releases(&s->tx_lock);
SEFER_INTERNAL void sefer__pstore_tx_abort(struct pstore *s) __releases(&s->tx_lock);
SEFER_INTERNAL __must_check int sefer__pstore_wait(struct pstore *s, uint64_t seq);
/* Group commit: an op starts / has appended its record (or will append none). */
SEFER_INTERNAL void sefer__pstore_op_begin(struct pstore *s);
SEFER_INTERNAL void sefer__pstore_op_appended(struct pstore *s);
SEFER_INTERNAL size_t sefer__pstore_max_record(struct pstore *s);

/* Reads see every appended record, synced or not. */
SEFER_INTERNAL __must_check int sefer__pstore_read(struct pstore *s, uint64_t off, void *buf,
						   size_t len);
SEFER_INTERNAL __must_check int sefer__pstore_read_word(struct pstore *s, uint64_t off,
							uint64_t *w);
/* As sefer__pstore_read, also seeing the record being built (caller is inside tx_begin..tx_end). */
SEFER_INTERNAL __must_check int sefer__pstore_read_tx(struct pstore *s, uint64_t off, void *buf,
						      size_t len);
SEFER_INTERNAL uint64_t sefer__pstore_len(struct pstore *s);
SEFER_INTERNAL __must_check int sefer__pstore_sync_all(struct pstore *s);

/* The plain durable byte stack (commit.c): each call is one record, returns after its sync. */
SEFER_INTERNAL __must_check int sefer__pstore_extend(struct pstore *s, uint64_t len, uint64_t *off);
SEFER_INTERNAL __must_check int sefer__pstore_discard(struct pstore *s, uint64_t len);
SEFER_INTERNAL __must_check int sefer__pstore_set(struct pstore *s, uint64_t off, const void *buf,
						  size_t len);

/* ---------------------------------------------------------------- allocators */
#define PA_HDR_END 504		/* first block header; user offsets are 16-byte aligned */
#define PA_SALT_OFF 8
#define PA_TAIL_OFF 64		/* checked word: end of the arena */
#define PA_ROOT_OFF 72		/* checked word: the root slot */
#define PA_LIST_OFF 80		/* checked words: free list heads */

struct palloc;

/*
 * struct sefer_palloc_ops: one allocator over a store. The file's first 4 bytes (the magic)
 * select the instance at open.
 *
 * Locking: every op runs under the palloc's own mutex (pa->lock) and builds at most one store
 * record between sefer__pstore_tx_begin and sefer__pstore_tx_end; the generic layer (pstore.c)
 *waits for that record's sync, after releasing pa->lock when .group_commit is set (so concurrent
 * operations share a sync) or while holding it otherwise.
 *
 * Return values: 0 or a negative errno; -EINVAL for a foreign offset or double free (nothing
 * changed), -EIO/-EUCLEAN for corrupt metadata met on the way (nothing changed).
 *
 * create(pa): write the allocator header into an empty store (one record).
 * open(pa, scan, rep): check the header (magic, version, CRC of the static part, checked words)
 *	and load any in-memory index; with `scan`, walk the arena, relink orphans, fill rep.
 * alloc/realloc/free: as the public calls; realloc copies through the record when it moves.
 * usable(pa, off): block's usable bytes or 0 when off is not an allocated block.
 * verify(pa, v): walk arena and lists without changing anything.
 * walk(pa, fn, arg): visit allocated blocks in address order.
 * compact(pa, merged, trimmed): merge free neighbours, give the free tail back (may be NULL).
 * stats(pa, st): fill the list lengths and block counts.
 * close(pa): free the in-memory index.
 */
struct sefer_palloc_ops {
	const char *name;
	char magic[4];
	bool group_commit;
	__must_check int (*create)(struct palloc *pa);
	__must_check int (*open)(struct palloc *pa, bool scan, struct sefer_precovery *rep);
	__must_check int (*alloc)(struct palloc *pa, uint64_t size, uint64_t *off);
	__must_check int (*realloc)(struct palloc *pa, uint64_t off, uint64_t size,
				    uint64_t *newoff);
	__must_check int (*free)(struct palloc *pa, uint64_t off);
	uint64_t (*usable)(struct palloc *pa, uint64_t off);
	__must_check int (*verify)(struct palloc *pa, struct sefer_pverify *v);
	int (*walk)(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t), void *arg);
	__must_check int (*compact)(struct palloc *pa, uint64_t *merged, uint64_t *trimmed);
	void (*stats)(struct palloc *pa, struct sefer_pstats *st);
	void (*close)(struct palloc *pa);
};

struct palloc {
	struct pstore *s;
	const struct sefer_palloc_ops *ops;
	pthread_mutex_t lock;		/* the allocator's state; taken before pstore.lock */
	uint64_t salt;
	uint64_t tail;			/* end of the arena (== store length except in flight) */
	void *priv;			/* the allocator's in-memory state */
	uint64_t seq;			/* the record the current op appended (0: none) */
	int dead;			/* an op failed after changing memory: all ops fail */
	uint8_t *win;			/* sefer__pa_scan_read's window over the arena */
	uint64_t wpos, wlen;
	char *err;			/* where open explains a refusal */
	size_t elen;
};

SEFER_INTERNAL_EXTERN const struct sefer_palloc_ops sefer__pa_segregated_ops;
SEFER_INTERNAL_EXTERN const struct sefer_palloc_ops sefer__pa_firstfit_ops;
SEFER_INTERNAL_EXTERN const struct sefer_palloc_ops sefer__pa_bestfit_ops;

/* Shared allocator-header helpers (palloc.c). */
SEFER_INTERNAL __must_check int sefer__pa_header_create(struct palloc *pa, unsigned nlists);
SEFER_INTERNAL __must_check int sefer__pa_header_open(struct palloc *pa, unsigned nlists);
SEFER_INTERNAL int sefer__pa_get_word(struct palloc *pa, uint64_t off,
				      uint64_t *val); /* checked read */
/* A checked tx write; sefer__pa_commit: sefer__pstore_tx_end into pa->seq, a failure kills pa. */
SEFER_INTERNAL void sefer__pa_put_word(struct palloc *pa, uint64_t off, uint64_t val)
	__must_hold(&pa->s->tx_lock);
SEFER_INTERNAL int sefer__pa_commit(struct palloc *pa) __releases(&pa->s->tx_lock);
SEFER_INTERNAL int sefer__pa_scan_read(struct palloc *pa, uint64_t off,
				       uint64_t *w); /* windowed arena reader */
SEFER_INTERNAL void sefer__pa_scan_end(struct palloc *pa);
SEFER_INTERNAL void sefer__pa_msg(struct palloc *pa, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Block header word value: size (multiple of 16) | in-use bit. */
#define PB_USED 1ULL
static inline uint64_t pb_size(uint64_t v)
{
	return v & ~15ULL;
}

/*
 * tags.c: boundary-tagged blocks for first-fit and best-fit: a checked header word at b and
 * the same value as a checked footer word at b + size - 8; user offset b + 8, usable
 * size - 16. Reads go through sefer__pstore_read_tx (callers are inside a record).
 */
#define PT_MIN 32ULL
SEFER_INTERNAL uint64_t sefer__pt_round(uint64_t size);
SEFER_INTERNAL int sefer__pt_word(struct palloc *pa, uint64_t off,
				  uint64_t *val); /* checked, tx-aware */
SEFER_INTERNAL int sefer__pt_hdr(struct palloc *pa, uint64_t b,
				 uint64_t *v); /* checked header read */
SEFER_INTERNAL void sefer__pt_set(struct palloc *pa, uint64_t b, uint64_t size,
				  bool used); /* header + footer */
SEFER_INTERNAL int sefer__pt_prev(struct palloc *pa, uint64_t b, uint64_t *pb,
				  uint64_t *pv); /* -ENOENT: first */
SEFER_INTERNAL int sefer__pt_user_block(struct palloc *pa, uint64_t off, uint64_t *b, uint64_t *v);
/* Walk the arena checking tags; fn(arg, b, size, used) non-zero stops. msg: first problem. */
/* What both boundary-tag allocators' walk callbacks share (tags.c). */
struct pt_walk {
	struct sefer_pverify *v;
	int (*fn)(void *, uint64_t, uint64_t); /* walking for sefer_pwalk: used blocks */
	void *arg;
};
/*
 * Hand a used block to w->fn when walking for the user, else count the block in w->v.
 * Returns true when the block is handled (*ret is the callback's result), false for a free
 * block during verification, which the allocator then checks against its own index.
 */
SEFER_INTERNAL bool sefer__pt_walk_block(struct pt_walk *w, uint64_t b, uint64_t size, bool used,
					 int *ret);
/* usable() of the boundary-tag allocators: the block's size less its two tags. */
SEFER_INTERNAL uint64_t sefer__pt_usable(struct palloc *pa, uint64_t off);
/* compact() of the boundary-tag allocators: they merge and trim at every free already. */
SEFER_INTERNAL int sefer__pt_compact(struct palloc *pa, uint64_t *merged, uint64_t *trimmed);
SEFER_INTERNAL int sefer__pt_walk(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t, bool),
				  void *arg, char *msg, size_t mlen);

#endif /* SEFER_PERSIST_INTERNAL_H */
