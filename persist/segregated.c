// SPDX-License-Identifier: MIT
/*
 * The segregated allocator (magic ALSG): 33 free lists, O(1) alloc and free, group commit.
 *
 * Arena: blocks from PA_HDR_END to the tail word, each starting with a checked header word
 * (size, a multiple of 16, | in-use bit); the user offset is block + 8 (16-byte aligned). A
 * free block's second word is a checked link to the next block of its list (0 ends it).
 *
 * Classes (register arithmetic, no table): block sizes 16..256 in 16-byte steps (classes
 * 0-15), then 4 classes per power of two up to 4096 (16-31), then one oversized list (32).
 * Alloc rounds up to a class size and pops that list, else extends the tail. Free pushes onto
 * the list of the largest class not above the block size (so a popped block always fits) or,
 * for the last block, gives it back (the tail shrinks). Oversized blocks are found first-fit
 * on list 32 in at most OVERSIZE_PROBE steps and split when the rest is worth a block.
 *
 * Invariants (checked by verify):
 *  - blocks tile [PA_HDR_END, tail) exactly; every header and link word passes its check;
 *  - every free block is on exactly the list floor_class(size), lists are acyclic;
 *  - heads[] (memory) equal the checked head words as of the latest appended record.
 * Each operation is one store record, so a crash leaves it done or not done: no block is
 * ever half-linked. Orphans (free, on no list) cannot arise from this code; the recovery scan
 * still finds and relinks them (files from older writers, manual edits).
 *
 * Lock: pa->lock (held by pstore.c around every op) protects heads[] and pa->tail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"
#include "persist/segregated.h"

#define NLISTS SEGREGATED_CLASSES
#define OVERSIZE 32
#define OVERSIZE_PROBE 64

struct seg {
	uint64_t heads[NLISTS];
};

/* Smallest class whose size is >= bsize (bsize a multiple of 16, >= 16). */
unsigned sefer__segregated_class(uint64_t bsize)
{
	if (bsize <= 256)
		return (unsigned)(bsize >> 4) - 1;
	if (bsize > 4096)
		return OVERSIZE;
	uint64_t s = bsize - 1;
	unsigned p = 63 - (unsigned)__builtin_clzll(s);

	return 16 + (p - 8) * 4 + (unsigned)((s >> (p - 2)) & 3);
}

uint64_t sefer__segregated_class_size(unsigned c)
{
	if (c < 16)
		return (uint64_t)(c + 1) << 4;
	if (c >= OVERSIZE)
		return UINT64_MAX;
	unsigned p = 8 + (c - 16) / 4, q = (c - 16) % 4;

	return (1ULL << p) + ((uint64_t)(q + 1) << (p - 2));
}

/* The list a free block of bsize belongs on: the largest class with size <= bsize. */
unsigned sefer__segregated_list(uint64_t bsize)
{
	unsigned c = sefer__segregated_class(bsize);

	if (c == OVERSIZE || sefer__segregated_class_size(c) == bsize)
		return c;
	return c - 1;		/* class c would promise more than bsize */
}

static struct seg *S(struct palloc *pa)
{
	return pa->priv;
}

/* Read and check a block header; -EINVAL when `b` is not a block start. */
static int get_hdr(struct palloc *pa, uint64_t b, uint64_t *v)
{
	uint64_t w;
	int r;

	if (b < PA_HDR_END || b % 16 != 8 || b + 16 > pa->tail)
		return -EINVAL;
	r = sefer__pstore_read_word(pa->s, b, &w);
	if (r)
		return r;
	if (!sefer__pword_ok(pa->salt, b, w))
		return -EINVAL;
	*v = pword_val(w);
	if (pb_size(*v) < 16 || b + pb_size(*v) > pa->tail)
		return -EUCLEAN;
	return 0;
}

static void put_hdr(struct palloc *pa, uint64_t b, uint64_t size, bool used)
{
	sefer__pa_put_word(pa, b, size | (used ? PB_USED : 0));
}

static int get_link(struct palloc *pa, uint64_t b, uint64_t *next)
{
	int r = sefer__pa_get_word(pa, b + 8, next);

	if (r)
		return r;
	if (*next && (*next < PA_HDR_END || *next % 16 != 8 || *next >= pa->tail))
		return -EUCLEAN;
	return 0;
}

static void push(struct palloc *pa, uint64_t b, uint64_t size)
{
	unsigned c = sefer__segregated_list(size);

	put_hdr(pa, b, size, false);
	sefer__pa_put_word(pa, b + 8, S(pa)->heads[c]);
	sefer__pa_put_word(pa, PA_LIST_OFF + 8ULL * c, b);
	S(pa)->heads[c] = b;
}

/*
 * Find a block of at least `need` bytes (reads only), then take it (appends to the open
 * record and changes memory only after every read succeeded).
 */
static int segregated_take(struct palloc *pa, uint64_t need, uint64_t *bp, uint64_t *sizep)
{
	unsigned c = sefer__segregated_class(need);
	uint64_t b, v, next;
	int r;

	if (c < OVERSIZE) {
		need = sefer__segregated_class_size(c);
		b = S(pa)->heads[c];
		if (b) {
			r = get_hdr(pa, b, &v);
			if (!r && ((v & PB_USED) || pb_size(v) < need))
				r = -EUCLEAN;
			if (!r)
				r = get_link(pa, b, &next);
			if (r)
				return r == -EINVAL ? -EUCLEAN : r;
			sefer__pa_put_word(pa, PA_LIST_OFF + 8ULL * c, next);
			S(pa)->heads[c] = next;
			put_hdr(pa, b, pb_size(v), true);
			*bp = b;
			*sizep = pb_size(v);
			return 0;
		}
	} else {
		uint64_t prev = 0, cur = S(pa)->heads[OVERSIZE];

		for (int i = 0; cur && i < OVERSIZE_PROBE; i++) {
			r = get_hdr(pa, cur, &v);
			if (!r && (v & PB_USED))
				r = -EUCLEAN;
			if (!r)
				r = get_link(pa, cur, &next);
			if (r)
				return r == -EINVAL ? -EUCLEAN : r;
			if (pb_size(v) >= need) {
				uint64_t size = pb_size(v);

				if (prev)
					sefer__pa_put_word(pa, prev + 8, next);
				else {
					sefer__pa_put_word(pa, PA_LIST_OFF + 8ULL * OVERSIZE, next);
					S(pa)->heads[OVERSIZE] = next;
				}
				if (size - need >= 256) {
					push(pa, cur + need, size - need);
					size = need;
				}
				put_hdr(pa, cur, size, true);
				*bp = cur;
				*sizep = size;
				return 0;
			}
			prev = cur;
			cur = next;
		}
	}
	b = pa->tail;
	if (b + need < b || b + need > (1ULL << 47))
		return -ENOMEM;
	put_hdr(pa, b, need, true);
	pa->tail = b + need;
	sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
	sefer__pstore_tx_len(pa->s, pa->tail);
	*bp = b;
	*sizep = need;
	return 0;
}

/* Give a free block back: the tail shrinks if it is the last block, else push. */
static void segregated_give(struct palloc *pa, uint64_t b, uint64_t size)
{
	if (b + size == pa->tail) {
		pa->tail = b;
		sefer__pa_put_word(pa, PA_TAIL_OFF, b);
		sefer__pstore_tx_len(pa->s, b);
	} else {
		push(pa, b, size);
	}
}

static uint64_t need_of(uint64_t size)
{
	uint64_t n = (size + 8 + 15) & ~15ULL;

	return n < 16 ? 16 : n;
}

static int segregated_alloc(struct palloc *pa, uint64_t size, uint64_t *off)
{
	uint64_t b, bs;
	int r;

	if (size > (1ULL << 46))
		return -ENOMEM;
	sefer__pstore_tx_begin(pa->s);
	r = segregated_take(pa, need_of(size), &b, &bs);
	if (r) {
		sefer__pstore_tx_abort(pa->s);
		return r;
	}
	*off = b + 8;
	return sefer__pa_commit(pa);
}

static int segregated_free(struct palloc *pa, uint64_t off)
{
	uint64_t b = off - 8, v;
	int r = get_hdr(pa, b, &v);

	if (r)
		return r;
	if (!(v & PB_USED))
		return -EINVAL;		/* double free */
	sefer__pstore_tx_begin(pa->s);
	segregated_give(pa, b, pb_size(v));
	return sefer__pa_commit(pa);
}

static int segregated_realloc(struct palloc *pa, uint64_t off, uint64_t size, uint64_t *newoff)
{
	uint64_t b = off - 8, v, need = need_of(size), nb, ns;
	int r = get_hdr(pa, b, &v);

	if (r)
		return r;
	if (!(v & PB_USED))
		return -EINVAL;
	if (size > (1ULL << 46))
		return -ENOMEM;
	uint64_t bs = pb_size(v);

	*newoff = off;
	if (need <= bs)
		return 0;			/* fits: nothing changes on disk */
	if (b + bs == pa->tail) {		/* last block: grow in place */
		unsigned c = sefer__segregated_class(need);

		if (c < OVERSIZE)
			need = sefer__segregated_class_size(c);
		sefer__pstore_tx_begin(pa->s);
		put_hdr(pa, b, need, true);
		pa->tail = b + need;
		sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
		sefer__pstore_tx_len(pa->s, pa->tail);
		return sefer__pa_commit(pa);
	}
	uint64_t keep = bs - 8;

	if (keep + 256 > sefer__pstore_max_record(pa->s) / 2)
		return -E2BIG;			/* pstore.c moves it in several records */
	uint8_t *tmp = malloc(keep);

	if (!tmp)
		return -ENOMEM;
	r = sefer__pstore_read(pa->s, off, tmp, keep);
	if (!r) {
		sefer__pstore_tx_begin(pa->s);
		r = segregated_take(pa, need, &nb, &ns);
		if (r) {
			sefer__pstore_tx_abort(pa->s);
		} else {
			sefer__pstore_tx_blob(pa->s, nb + 8, tmp, keep);
			segregated_give(pa, b, bs);
			*newoff = nb + 8;
			r = sefer__pa_commit(pa);
		}
	}
	free(tmp);
	return r;
}

static uint64_t segregated_usable(struct palloc *pa, uint64_t off)
{
	uint64_t v;

	if (get_hdr(pa, off - 8, &v) || !(v & PB_USED))
		return 0;
	return pb_size(v) - 8;
}

static int segregated_create(struct palloc *pa)
{
	pa->priv = calloc(1, sizeof(struct seg));
	if (!pa->priv)
		return -ENOMEM;
	return sefer__pa_header_create(pa, NLISTS);
}

/* ---------------------------------------------------------------- the arena scan */

struct fblk {
	uint64_t b, size, next;
	unsigned list;
	bool seen, link_ok;	/* an orphan's link word is stale: checked only on a list */
};

struct scan {
	struct fblk *f;
	size_t n, cap;
	uint64_t blocks, used, used_bytes, free_bytes;
};

static int scan_arena(struct palloc *pa, struct scan *sc, struct sefer_pverify *v,
		      int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	int r = 0;

	memset(sc, 0, sizeof(*sc));
	for (uint64_t b = PA_HDR_END; b < pa->tail;) {
		uint64_t w, val, size;

		r = sefer__pa_scan_read(pa, b, &w);
		if (r)
			break;
		if (!sefer__pword_ok(pa->salt, b, w)) {
			snprintf(v->msg, sizeof(v->msg), "block header at %llu fails its check",
				 (unsigned long long)b);
			r = -EUCLEAN;
			break;
		}
		val = pword_val(w);
		size = pb_size(val);
		if (size < 16 || b + size > pa->tail) {
			snprintf(v->msg, sizeof(v->msg), "block at %llu has size %llu beyond the tail",
				 (unsigned long long)b, (unsigned long long)size);
			r = -EUCLEAN;
			break;
		}
		sc->blocks++;
		if (val & PB_USED) {
			sc->used++;
			sc->used_bytes += size;
			if (fn && fn(arg, b + 8, size - 8))
				break;
		} else if (!fn) {
			uint64_t lw;

			r = sefer__pa_scan_read(pa, b + 8, &lw);
			if (r)
				break;
			if (sc->n == sc->cap) {
				size_t nc = sc->cap ? sc->cap * 2 : 1024;
				struct fblk *nf = realloc(sc->f, nc * sizeof(*nf));

				if (!nf) {
					r = -ENOMEM;
					break;
				}
				sc->f = nf;
				sc->cap = nc;
			}
			sc->f[sc->n++] = (struct fblk){ b, size, pword_val(lw), sefer__segregated_list(size), false,
							sefer__pword_ok(pa->salt, b + 8, lw) };
			sc->free_bytes += size;
		}
		b += size;
	}
	sefer__pa_scan_end(pa);
	return r;
}

static struct fblk *find(struct scan *sc, uint64_t b)
{
	size_t lo = 0, hi = sc->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sc->f[mid].b < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sc->n && sc->f[lo].b == b ? &sc->f[lo] : NULL;
}

/* Walk every list over the scan; count orphans. */
static int check_lists(struct palloc *pa, struct scan *sc, struct sefer_pverify *v,
		       uint64_t *len)
{
	for (unsigned c = 0; c < NLISTS; c++) {
		uint64_t n = 0;

		for (uint64_t b = S(pa)->heads[c]; b;) {
			struct fblk *f = find(sc, b);

			if (!f || f->seen || f->list != c) {
				snprintf(v->msg, sizeof(v->msg), "list %u: node %llu is %s", c,
					 (unsigned long long)b, !f ? "not a free block" :
					 f->seen ? "linked twice (cycle)" : "of another class");
				return -EUCLEAN;
			}
			if (!f->link_ok) {
				snprintf(v->msg, sizeof(v->msg), "list %u: free block at %llu: link fails "
					 "its check", c, (unsigned long long)b);
				return -EUCLEAN;
			}
			f->seen = true;
			n++;
			b = f->next;
		}
		if (len)
			len[c] = n;
	}
	return 0;
}

static int segregated_verify(struct palloc *pa, struct sefer_pverify *v)
{
	struct scan sc;
	int r = scan_arena(pa, &sc, v, NULL, NULL);

	if (!r)
		r = check_lists(pa, &sc, v, NULL);
	v->blocks = sc.blocks;
	v->used_blocks = sc.used;
	v->free_blocks = sc.n;
	v->used_bytes = sc.used_bytes;
	v->free_bytes = sc.free_bytes;
	for (size_t i = 0; !r && i < sc.n; i++)
		v->orphans += !sc.f[i].seen;
	if (!r && v->orphans)
		snprintf(v->msg, sizeof(v->msg), "%llu free blocks are on no list",
			 (unsigned long long)v->orphans);
	v->errors = r || v->orphans;
	free(sc.f);
	return r ? r : v->orphans ? -EUCLEAN : 0;
}

static int segregated_open(struct palloc *pa, bool scan, struct sefer_precovery *rep)
{
	int r;

	pa->priv = calloc(1, sizeof(struct seg));
	if (!pa->priv)
		return -ENOMEM;
	r = sefer__pa_header_open(pa, NLISTS);
	for (unsigned c = 0; !r && c < NLISTS; c++) {
		r = sefer__pa_get_word(pa, PA_LIST_OFF + 8ULL * c, &S(pa)->heads[c]);
		if (r)
			sefer__pa_msg(pa, "free list head %u fails its check (corrupted metadata)",
				      c);
	}
	if (r || !scan)
		return r;

	/* After an unclean shutdown: check the whole arena and relink orphans in one batch. */
	struct sefer_pverify v = { 0 };
	struct scan sc;

	r = scan_arena(pa, &sc, &v, NULL, NULL);
	if (!r)
		r = check_lists(pa, &sc, &v, NULL);
	if (r) {
		sefer__pa_msg(pa, "arena scan: %s", v.msg);
		free(sc.f);
		return r;
	}
	rep->blocks_scanned = sc.blocks;
	sefer__pstore_tx_begin(pa->s);
	for (size_t i = 0; i < sc.n; i++) {
		if (sc.f[i].seen)
			continue;
		if (sefer__pstore_tx_size(pa->s) + 64 > sefer__pstore_max_record(pa->s)) {
			r = sefer__pa_commit(pa);
			if (r) {
				free(sc.f);
				return r;
			}
			sefer__pstore_tx_begin(pa->s);
		}
		push(pa, sc.f[i].b, sc.f[i].size);
		rep->orphans_relinked++;
		rep->orphan_bytes += sc.f[i].size;
	}
	r = sefer__pa_commit(pa);
	free(sc.f);
	return r;
}

static int segregated_walk(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	struct sefer_pverify v;
	struct scan sc;
	int r = scan_arena(pa, &sc, &v, fn, arg);

	free(sc.f);
	return r;
}

/* Merge runs of free blocks, trim a free tail, rebuild every list: one record. */
static int segregated_compact(struct palloc *pa, uint64_t *merged, uint64_t *trimmed)
{
	struct sefer_pverify v = { 0 };
	struct scan sc;
	int r = scan_arena(pa, &sc, &v, NULL, NULL);
	size_t out = 0;

	*merged = *trimmed = 0;
	if (r) {
		free(sc.f);
		return r;
	}
	for (size_t i = 0; i < sc.n; i++) {
		if (out && sc.f[out - 1].b + sc.f[out - 1].size == sc.f[i].b) {
			sc.f[out - 1].size += sc.f[i].size;
			(*merged)++;
		} else {
			sc.f[out++] = sc.f[i];
		}
	}
	if ((uint64_t)out * 48 + 1024 > sefer__pstore_max_record(pa->s)) {
		free(sc.f);
		return -E2BIG;
	}
	sefer__pstore_tx_begin(pa->s);
	for (unsigned c = 0; c < NLISTS; c++) {
		S(pa)->heads[c] = 0;
		sefer__pa_put_word(pa, PA_LIST_OFF + 8ULL * c, 0);
	}
	if (out && sc.f[out - 1].b + sc.f[out - 1].size == pa->tail) {
		out--;
		*trimmed = sc.f[out].size;
		pa->tail = sc.f[out].b;
		sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
		sefer__pstore_tx_len(pa->s, pa->tail);
	}
	for (size_t i = out; i-- > 0;)
		push(pa, sc.f[i].b, sc.f[i].size);
	free(sc.f);
	return sefer__pa_commit(pa);
}

static void segregated_stats(struct palloc *pa, struct sefer_pstats *st)
{
	struct sefer_pverify v = { 0 };
	struct scan sc;

	st->nlists = NLISTS;
	if (!scan_arena(pa, &sc, &v, NULL, NULL))
		check_lists(pa, &sc, &v, st->list_len);
	st->used_blocks = sc.used;
	st->used_bytes = sc.used_bytes;
	st->free_blocks = sc.n;
	st->free_bytes = sc.free_bytes;
	free(sc.f);
}

static void segregated_close(struct palloc *pa)
{
	free(pa->priv);
	pa->priv = NULL;
}

SEFER_INTERNAL const struct sefer_palloc_ops sefer__pa_segregated_ops = {
	.name = "segregated",
	.magic = { 'A', 'L', 'S', 'G' },
	.group_commit = true,
	.create = segregated_create,
	.open = segregated_open,
	.alloc = segregated_alloc,
	.realloc = segregated_realloc,
	.free = segregated_free,
	.usable = segregated_usable,
	.verify = segregated_verify,
	.walk = segregated_walk,
	.compact = segregated_compact,
	.stats = segregated_stats,
	.close = segregated_close,
};
