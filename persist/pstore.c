// SPDX-License-Identifier: MIT
/*
 * The public persist API: a handle is a store plus the allocator its magic names.
 *
 * Every mutating call runs the allocator op under pa->lock, which appends at most one store
 * record, and returns once that record is durable. With .group_commit the lock is dropped
 * before waiting, so records of concurrent calls are synced together by one leader; otherwise
 * the lock is held across the sync (the baselines: one sync per op, serialised).
 *
 * Lock order: pa->lock, then store tx_lock, then store lock.
 *
 * Files of persist/ and which may call which: each calls only files below it; pstore.c
 * reaches the allocators through their struct sefer_palloc_ops.
 *
 *   pstore.c        the public API: handles, open, create, close, ops   all below
 *   segregated.c,   the allocators (tags.c: the boundary tags that      palloc.c, tags.c,
 *   ff.c, bt.c      first-fit and best-fit share)                       commit.c, crc.c
 *   palloc.c        the allocator header, checked words, op commit      commit.c, crc.c
 *   commit.c        records, group commit, reads, the plain byte stack  store.c and below
 *   store.c         create, open (header, replay, sync discovery),      record.c, pcache.c,
 *                   checkpoint, close                                   io.c, crc.c
 *   record.c        record entries; the log reader                      io.c, crc.c
 *   pcache.c        the page cache of changed payload pages             io.c
 *   io.c, crc.c     file access over sefer__os (fault, crash injection); sefer__os
 *                   CRC-32C
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "persist/internal.h"

struct sefer_pstore {
	struct pstore s;
	struct palloc pa;
	_Atomic uint64_t ops;
};

static const struct sefer_palloc_ops *const all_ops[SEFER_PALLOC_KINDS] = {
#ifdef CONFIG_PERSIST_SEGREGATED
	[SEFER_PALLOC_SEGREGATED] = &sefer__pa_segregated_ops,
#endif
#ifdef CONFIG_PERSIST_FIRSTFIT
	[SEFER_PALLOC_FIRSTFIT] = &sefer__pa_firstfit_ops,
#endif
#ifdef CONFIG_PERSIST_BESTFIT
	[SEFER_PALLOC_BESTFIT] = &sefer__pa_bestfit_ops,
#endif
};
static const char *const kind_names[SEFER_PALLOC_KINDS] = { "segregated", "first-fit",
							   "best-fit-tree" };
static const char kind_magic[SEFER_PALLOC_KINDS][4] = { "ALSG", "ALFF", "ALBT" };

/* ---------------------------------------------------------------- open, create, close */

static struct sefer_pstore *new_handle(const struct sefer_popts *o)
{
	struct sefer_pstore *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->pa.lock, NULL);
	h->pa.s = &h->s;
	if (o && o->errbuf && o->errlen) {
		h->pa.err = o->errbuf;
		h->pa.elen = o->errlen;
		o->errbuf[0] = '\0';
	}
	return h;
}

static void free_handle(struct sefer_pstore *h)
{
	if (h->pa.ops && h->pa.priv)
		h->pa.ops->close(&h->pa);
	sefer__pa_scan_end(&h->pa);
	pthread_mutex_destroy(&h->pa.lock);
	free(h);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int sefer_pstore_create(const char *path, enum sefer_palloc_kind kind,
			const struct sefer_popts *o, struct sefer_pstore **out)
{
	struct sefer_pstore *h;
	uint64_t wal = o && o->wal_bytes ? o->wal_bytes : (uint64_t)CONFIG_PERSIST_WAL_KIB << 10;
	int r;

	*out = NULL;
	if (o && (o->flags & SEFER_P_RDONLY)) {
		if (o->errbuf && o->errlen)
			snprintf(o->errbuf, o->errlen, "%s: cannot create a store read-only", path);
		return -EINVAL;
	}
	if ((unsigned)kind >= SEFER_PALLOC_KINDS || !all_ops[kind]) {
		if (o && o->errbuf && o->errlen)
			snprintf(o->errbuf, o->errlen, "allocator kind %d is not built in", kind);
		return -EOPNOTSUPP;
	}
	h = new_handle(o);
	if (!h)
		return -ENOMEM;
	if (wal < 64 * 1024)
		wal = 64 * 1024;
	r = sefer__pstore_create(&h->s, path, wal, h->pa.err, h->pa.elen);
	if (r) {
		free_handle(h);
		return r;
	}
	h->s.async = o && (o->flags & SEFER_P_ASYNC);
	h->pa.ops = all_ops[kind];
	r = h->pa.ops->create(&h->pa);
	if (!r)
		r = sefer__pstore_wait(&h->s, h->pa.seq);
	if (r) {
		sefer__pa_msg(&h->pa, "%s: cannot write the allocator header: %s", path,
			      strerror(-r));
		sefer__pstore_close(&h->s, false);
		free_handle(h);
		return r;
	}
	*out = h;
	return 0;
}

int sefer_pstore_open(const char *path, const struct sefer_popts *o, struct sefer_pstore **out)
{
	struct sefer_precovery rep = { 0 };
	struct pstore_open_info info;
	struct sefer_pstore *h;
	uint64_t t0 = now_us();
	char magic[4];
	int r, kind;

	*out = NULL;
	h = new_handle(o);
	if (!h)
		return -ENOMEM;
	r = sefer__pstore_open(&h->s, path, o && (o->flags & SEFER_P_RDONLY), &info, h->pa.err,
			       h->pa.elen);
	if (r) {
		free_handle(h);
		return r;
	}
	rep.clean = info.clean;
	rep.wal_records = info.replayed;
	r = -EUCLEAN;
	if (sefer__pstore_len(&h->s) < PA_HDR_END) {
		sefer__pa_msg(&h->pa, "%s: truncated allocator header (payload is %llu bytes)",
			      path, (unsigned long long)sefer__pstore_len(&h->s));
		goto fail;
	}
	r = sefer__pstore_read(&h->s, 0, magic, 4);
	if (r)
		goto fail;
	for (kind = 0; kind < SEFER_PALLOC_KINDS; kind++)
		if (!memcmp(magic, kind_magic[kind], 4))
			break;
	r = -EUCLEAN;
	if (kind == SEFER_PALLOC_KINDS) {
		sefer__pa_msg(&h->pa, "%s: bad allocator magic %02x%02x%02x%02x", path,
			      (uint8_t)magic[0], (uint8_t)magic[1], (uint8_t)magic[2],
			      (uint8_t)magic[3]);
		goto fail;
	}
	if (!all_ops[kind]) {
		r = -EOPNOTSUPP;
		sefer__pa_msg(&h->pa, "%s: allocator %s is not built in", path, kind_names[kind]);
		goto fail;
	}
	h->pa.ops = all_ops[kind];
	r = h->pa.ops->open(&h->pa, !(o && (o->flags & SEFER_P_NOSCAN)), &rep);
	if (r) {
		sefer__pa_msg(&h->pa, "%s: %s allocator refused the file: %s", path,
			      h->pa.ops->name, strerror(-r));
		goto fail;
	}
	r = sefer__pstore_finish_open(&h->s, &rep.bytes_trimmed);
	if (r) {
		sefer__pa_msg(&h->pa, "%s: cannot commit recovery: %s", path, strerror(-r));
		goto fail;
	}
	h->s.async = o && (o->flags & SEFER_P_ASYNC);
	h->s.syncs = 0;
	rep.usec = now_us() - t0;
	if (o && o->report)
		*o->report = rep;
	*out = h;
	return 0;
fail:
	sefer__pstore_close(&h->s, false);
	free_handle(h);
	return r;
}

int sefer_pstore_close(struct sefer_pstore *h)
{
	bool clean;
	int r = 0;

	if (!h)
		return 0;
	clean = !h->pa.dead && !h->s.err;
	if (clean)
		r = sefer__pstore_sync_all(&h->s);
	if (!r)
		r = sefer__pstore_close(&h->s, clean);
	else
		sefer__pstore_close(&h->s, false);
	if (!r)
		r = h->pa.dead ? h->pa.dead : h->s.err;
	free_handle(h);
	return r;
}

/* ---------------------------------------------------------------- operations */

/* Wait for the op's record: after unlocking (group commit) or before. */
static int finish(struct sefer_pstore *h, int r) __releases(&h->pa.lock)
{
	uint64_t seq = r ? 0 : h->pa.seq;

	h->pa.seq = 0;
	if (h->s.async)
		seq = 0;	/* SEFER_P_ASYNC: durable at the next sefer_psync() or flush */
	if (h->pa.ops->group_commit) {
		pmutex_unlock(&h->pa.lock);
		sefer__pstore_op_appended(&h->s);
		return r ? r : sefer__pstore_wait(&h->s, seq);
	}
	if (!r)
		r = sefer__pstore_wait(&h->s, seq);
	pmutex_unlock(&h->pa.lock);
	return r;
}

/*
 * Start an op: returns holding pa.lock, with 0 or the error that poisoned the allocator or its
 * store. Every enter() is paired with finish() or, when it returned an error or the op
 * appended nothing, leave(): one lock state on every return, so that sparse can check the
 * pairing (Documentation/debugging.rst).
 */
static int enter(struct sefer_pstore *h) __acquires(&h->pa.lock)
{
	atomic_fetch_add_explicit(&h->ops, 1, memory_order_relaxed);
	if (h->pa.ops->group_commit)
		sefer__pstore_op_begin(&h->s);
	pmutex_lock(&h->pa.lock);
	h->pa.seq = 0;
	if (h->s.read_only)
		return -EROFS;
	return h->pa.dead ? h->pa.dead : h->s.err;
}

/* Leave an op that appended nothing. */
static int leave(struct sefer_pstore *h, int r) __releases(&h->pa.lock)
{
	pmutex_unlock(&h->pa.lock);
	if (h->pa.ops->group_commit)
		sefer__pstore_op_appended(&h->s);
	return r;
}

int sefer_palloc(struct sefer_pstore *h, size_t size, uint64_t *off)
{
	int r = enter(h);

	return r ? leave(h, r) : finish(h, h->pa.ops->alloc(&h->pa, size, off));
}

int sefer_pfree(struct sefer_pstore *h, uint64_t off)
{
	int r = enter(h);

	return r ? leave(h, r) : finish(h, h->pa.ops->free(&h->pa, off));
}

int sefer_prealloc(struct sefer_pstore *h, uint64_t off, size_t size, uint64_t *newoff)
{
	int r = enter(h);

	if (r)
		return leave(h, r);
	r = h->pa.ops->realloc(&h->pa, off, size, newoff);
	if (r != -E2BIG)
		return finish(h, r);
	/* Too big to copy in one record: alloc, copy in pieces, free (a crash leaks the new). */
	uint64_t keep = h->pa.ops->usable(&h->pa, off), n;

	r = finish(h, 0);
	if (keep > size)
		keep = size;
	r = sefer_palloc(h, size, &n);
	size_t chunk = sefer__pstore_max_record(&h->s) / 2;
	uint8_t *tmp = r ? NULL : malloc(chunk);

	if (!r && !tmp)
		r = -ENOMEM;
	for (uint64_t p = 0; !r && p < keep; p += chunk) {
		size_t c = keep - p < chunk ? keep - p : chunk;

		r = sefer_pread(h, off, p, tmp, c);
		if (!r)
			r = sefer_pwrite(h, n, p, tmp, c);
	}
	free(tmp);
	if (!r)
		r = sefer_pfree(h, off);
	if (!r)
		*newoff = n;
	return r;
}

size_t sefer_pusable(struct sefer_pstore *h, uint64_t off)
{
	uint64_t u;

	pmutex_lock(&h->pa.lock);
	u = h->pa.ops->usable(&h->pa, off);
	pmutex_unlock(&h->pa.lock);
	return u;
}

int sefer_pwrite(struct sefer_pstore *h, uint64_t off, uint64_t pos, const void *buf, size_t len)
{
	size_t chunk = sefer__pstore_max_record(&h->s) - 64;
	const uint8_t *p = buf;
	int r = 0;

	do {
		size_t n = len < chunk ? len : chunk;

		r = enter(h);
		if (r)
			return leave(h, r);
		uint64_t u = h->pa.ops->usable(&h->pa, off);

		if (!u || pos + len > u || pos + len < pos)
			return leave(h, -EINVAL);
		sefer__pstore_tx_begin(&h->s);
		sefer__pstore_tx_blob(&h->s, off + pos, p, n);
		r = finish(h, sefer__pa_commit(&h->pa));
		p += n;
		pos += n;
		len -= n;
	} while (!r && len);
	return r;
}

int sefer_pread(struct sefer_pstore *h, uint64_t off, uint64_t pos, void *buf, size_t len)
{
	uint64_t u = sefer_pusable(h, off);

	if (!u || pos + len > u || pos + len < pos)
		return -EINVAL;
	return sefer__pstore_read(&h->s, off + pos, buf, len);
}

int sefer_pset_root(struct sefer_pstore *h, uint64_t off)
{
	int r = enter(h);

	if (r)
		return leave(h, r);
	if (off && !h->pa.ops->usable(&h->pa, off))
		return leave(h, -EINVAL);
	sefer__pstore_tx_begin(&h->s);
	sefer__pa_put_word(&h->pa, PA_ROOT_OFF, off);
	return finish(h, sefer__pa_commit(&h->pa));
}

uint64_t sefer_pget_root(struct sefer_pstore *h)
{
	uint64_t v = 0;

	pmutex_lock(&h->pa.lock);
	if (sefer__pa_get_word(&h->pa, PA_ROOT_OFF, &v))
		v = 0;
	pmutex_unlock(&h->pa.lock);
	return v;
}

int sefer_psync(struct sefer_pstore *h)
{
	return sefer__pstore_sync_all(&h->s);
}

int sefer_pcompact(struct sefer_pstore *h, uint64_t *merged, uint64_t *trimmed)
{
	uint64_t m, t;
	int r = enter(h);

	if (r)
		return leave(h, r);
	r = finish(h, h->pa.ops->compact(&h->pa, merged ? merged : &m, trimmed ? trimmed : &t));
	if (!r)
		r = sefer__pstore_sync_all(&h->s);
	return r;
}

int sefer_pstats(struct sefer_pstore *h, struct sefer_pstats *st)
{
	memset(st, 0, sizeof(*st));
	pmutex_lock(&h->pa.lock);
	for (int k = 0; k < SEFER_PALLOC_KINDS; k++)
		if (all_ops[k] == h->pa.ops)
			st->kind = (enum sefer_palloc_kind)k;
	st->allocator = h->pa.ops->name;
	st->ops = atomic_load(&h->ops);
	pmutex_lock(&h->s.lock);
	st->syncs = h->s.syncs;
	st->wal_records = h->s.records;
	st->checkpoints = h->s.ckpt_count;
	st->payload_bytes = h->s.len;
	st->file_bytes = h->s.file_len;
	pmutex_unlock(&h->s.lock);
	h->pa.ops->stats(&h->pa, st);
	pmutex_unlock(&h->pa.lock);
	return 0;
}

int sefer_pverify(struct sefer_pstore *h, struct sefer_pverify *v)
{
	int r;

	memset(v, 0, sizeof(*v));
	pmutex_lock(&h->pa.lock);
	r = h->pa.ops->verify(&h->pa, v);
	pmutex_unlock(&h->pa.lock);
	if (r && !v->msg[0])
		snprintf(v->msg, sizeof(v->msg), "%s", strerror(-r));
	if (r)
		v->errors = v->errors ? v->errors : 1;
	return r;
}

int sefer_pwalk(struct sefer_pstore *h, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	int r;

	pmutex_lock(&h->pa.lock);
	r = h->pa.ops->walk(&h->pa, fn, arg);
	pmutex_unlock(&h->pa.lock);
	return r;
}
