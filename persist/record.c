// SPDX-License-Identifier: MIT
/*
 * Log records: walking a record's entries, and writing entries in place, one pwrite each or
 * gathered into 4 KiB pages (record format: persist/wal.h, Documentation/persist.rst).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"
#include "persist/wal.h"

/* Walk a record's entries; fn(off, data, len). Returns false when malformed. */
bool prec_entries(const uint8_t *r, const struct rec *h,
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

void papply_fn(void *arg, uint64_t off, const void *data, uint64_t len)
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

void papply_drop(struct apply_ctx *c)
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
int papply_flush(struct apply_ctx *c)
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

