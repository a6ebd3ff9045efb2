// SPDX-License-Identifier: MIT
/*
 * The page cache: payload pages that durable log records have changed since the last
 * checkpoint, held in memory and written in place only at the next checkpoint.
 *
 * Why: fdatasync writes every dirty page of the file. Writing each batch in place right
 * after its sync made the next sync carry those pages too, scattered over the arena, about
 * 10 us each on the disk measured here; with the cache a sync carries the log pages only,
 * and a page changed by a thousand records is written once per checkpoint.
 *
 * Invariants: a cached page holds the payload as of every record applied to the cache (the
 * durable records since the checkpoint, in order); a page not cached is current on disk,
 * because the disk only changes at a checkpoint, which writes every cached page back before
 * the header names a later checkpoint. A page is read from disk once, on first change.
 *
 * Locking: the store's lock protects the map. Only the leader (or the opener) changes it;
 * the leader reads it without the lock while writing it back, since nobody else changes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"
#include "persist/wal.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

/* The slot of page pg, or of the empty slot where it would go. */
static size_t find_slot(const struct pcache *c, uint64_t pg)
{
	size_t j = slot_of(pg + 1, c->cap);

	while (c->key[j] && c->key[j] != pg + 1)
		j = (j + 1) & (c->cap - 1);
	return j;
}

const uint8_t *sefer__pcache_find(const struct pcache *c, uint64_t pg)
{
	if (!c->n)
		return NULL;
	size_t j = find_slot(c, pg);

	return c->key[j] ? c->page[j] : NULL;
}

static int grow(struct pcache *c)
{
	size_t nc = c->cap ? c->cap * 2 : 256;
	uint64_t *nk = calloc(nc, sizeof(*nk));
	uint8_t **np = calloc(nc, sizeof(*np));

	if (!nk || !np) {
		free(nk);
		free(np);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->key[i])
			continue;
		size_t j = slot_of(c->key[i], nc);

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
	return 0;
}

/* Page pg, read from disk when not cached yet; NULL with c->err set on failure. */
static uint8_t *page_get(struct pcache *c, struct pstore *s, uint64_t pg)
{
	if (2 * (c->n + 1) > c->cap && (c->err = grow(c)))
		return NULL;
	size_t j = find_slot(c, pg);

	if (c->key[j])
		return c->page[j];
	uint8_t *p = malloc(PCACHE_PAGE);

	if (!p) {
		c->err = -ENOMEM;
		return NULL;
	}
	c->err = sefer__pio_read(s->f, p, PCACHE_PAGE, s->data_off + pg * PCACHE_PAGE);
	if (c->err) {
		free(p);
		return NULL;
	}
	c->key[j] = pg + 1;
	c->page[j] = p;
	c->n++;
	return p;
}

void sefer__pcache_apply(struct pcache *c, struct pstore *s, uint64_t off, const void *data,
		  uint64_t len)
{
	const uint8_t *d = data;

	while (len && !c->err) {
		uint64_t in = off % PCACHE_PAGE;
		uint64_t n = PCACHE_PAGE - in < len ? PCACHE_PAGE - in : len;
		uint8_t *p = page_get(c, s, off / PCACHE_PAGE);

		if (!p)
			return;
		memcpy(p + in, d, n);
		d += n;
		off += n;
		len -= n;
	}
}

void sefer__pcache_apply_entry(void *store, uint64_t off, const void *data, uint64_t len)
{
	struct pstore *s = store;

	sefer__pcache_apply(&s->cache, s, off, data, len);
}

int sefer__pcache_read(const struct pcache *c, struct pstore *s, uint64_t off, void *buf,
		       size_t len)
{
	uint8_t *out = buf;
	uint64_t miss_off = 0;
	size_t miss_len = 0;

	while (len) {
		uint64_t in = off % PCACHE_PAGE;
		size_t n = PCACHE_PAGE - in < len ? (size_t)(PCACHE_PAGE - in) : len;
		const uint8_t *p = sefer__pcache_find(c, off / PCACHE_PAGE);

		if (p) {
			if (miss_len) {		/* read the pages not cached in one call */
				int r = sefer__pio_read(s->f, out - miss_len, miss_len,
						 s->data_off + miss_off);

				if (r)
					return r;
				miss_len = 0;
			}
			memcpy(out, p + in, n);
		} else {
			if (!miss_len)
				miss_off = off;
			miss_len += n;
		}
		out += n;
		off += n;
		len -= n;
	}
	return miss_len ? sefer__pio_read(s->f, out - miss_len, miss_len, s->data_off + miss_off)
			: 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int sefer__pcache_write_back(const struct pcache *c, struct pstore *s)
{
	uint64_t *order;
	size_t k = 0;
	int r = 0;

	if (!c->n)
		return 0;
	order = malloc(c->n * 2 * sizeof(uint64_t));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		if (c->key[i]) {
			order[2 * k] = c->key[i] - 1;
			order[2 * k + 1] = i;
			k++;
		}
	}
	qsort(order, k, 2 * sizeof(uint64_t), cmp_u64);	/* in file order */
	for (size_t i = 0; i < k && !r; i++)
		r = sefer__pio_write(s->f, c->page[order[2 * i + 1]], PCACHE_PAGE,
			      s->data_off + order[2 * i] * PCACHE_PAGE);
	/* a page past the end (replayed at open) made the file longer: zero_fill starts after */
	uint64_t end = s->data_off + (order[2 * (k - 1)] + 1) * PCACHE_PAGE;

	if (!r && end > s->file_len)
		s->file_len = end;
	free(order);
	return r;
}

void sefer__pcache_drop(struct pcache *c)
{
	for (size_t i = 0; i < c->cap; i++)
		free(c->page[i]);
	free(c->key);
	free(c->page);
	memset(c, 0, sizeof(*c));
}
