// SPDX-License-Identifier: MIT
/*
 * The first-fit baseline (magic ALFF): boundary-tagged blocks (tags.c), one doubly linked
 * free list (checked prev link at b + 8, next at b + 16) whose head is list word 0, searched
 * first-fit from the head; a free block is merged with free neighbours at once and a free
 * block that reaches the tail is given back.
 *
 * Invariants (checked by verify): blocks tile [PA_HDR_END, tail); no two free blocks are
 * adjacent; the list holds exactly the free blocks, with prev(next(b)) == b.
 *
 * Every operation is one record; its lock is held across the sync (.group_commit = false), as
 * in the reference design this baseline reproduces. All reads inside an operation go through
 * sefer__pstore_read_tx, so they see the links the operation has already rewritten.
 *
 * Lock: pa->lock protects head and pa->tail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"

struct ff {
	uint64_t head;
};

static struct ff *F(struct palloc *pa)
{
	return pa->priv;
}

static int links(struct palloc *pa, uint64_t b, uint64_t *prev, uint64_t *next)
{
	int r = sefer__pt_word(pa, b + 8, prev);

	if (!r)
		r = sefer__pt_word(pa, b + 16, next);
	if (!r && ((*prev && *prev >= pa->tail) || (*next && *next >= pa->tail)))
		r = -EUCLEAN;
	return r;
}

static void set_head(struct palloc *pa, uint64_t b)
{
	F(pa)->head = b;
	sefer__pa_put_word(pa, PA_LIST_OFF, b);
}

static void unlink_blk(struct palloc *pa, uint64_t prev, uint64_t next)
{
	if (prev)
		sefer__pa_put_word(pa, prev + 16, next);
	else
		set_head(pa, next);
	if (next)
		sefer__pa_put_word(pa, next + 8, prev);
}

static int ff_take(struct palloc *pa, uint64_t need, uint64_t *bp)
{
	uint64_t v, p, n;
	int r;

	for (uint64_t cur = F(pa)->head; cur; cur = n) {
		r = sefer__pt_hdr(pa, cur, &v);
		if (!r && (v & PB_USED))
			r = -EUCLEAN;
		if (!r)
			r = links(pa, cur, &p, &n);
		if (r)
			return r == -EINVAL ? -EUCLEAN : r;
		uint64_t size = pb_size(v);

		if (size < need)
			continue;
		if (size - need >= PT_MIN) {
			uint64_t nb = cur + need;

			sefer__pt_set(pa, nb, size - need, false);
			sefer__pa_put_word(pa, nb + 8, p);
			sefer__pa_put_word(pa, nb + 16, n);
			if (p)
				sefer__pa_put_word(pa, p + 16, nb);
			else
				set_head(pa, nb);
			if (n)
				sefer__pa_put_word(pa, n + 8, nb);
			size = need;
		} else {
			unlink_blk(pa, p, n);
		}
		sefer__pt_set(pa, cur, size, true);
		*bp = cur;
		return 0;
	}
	if (pa->tail + need > (1ULL << 47))
		return -ENOMEM;
	*bp = pa->tail;
	sefer__pt_set(pa, pa->tail, need, true);
	pa->tail += need;
	sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
	sefer__pstore_tx_len(pa->s, pa->tail);
	return 0;
}

/* Free block b of `size`: merge with free neighbours, give back at the tail, else push. */
static int ff_give(struct palloc *pa, uint64_t b, uint64_t size)
{
	uint64_t v, p, n, pb;
	int r;

	if (b + size < pa->tail) {
		r = sefer__pt_hdr(pa, b + size, &v);
		if (r)
			return r == -EINVAL ? -EUCLEAN : r;
		if (!(v & PB_USED)) {
			r = links(pa, b + size, &p, &n);
			if (r)
				return r;
			unlink_blk(pa, p, n);
			size += pb_size(v);
		}
	}
	r = sefer__pt_prev(pa, b, &pb, &v);
	if (r && r != -ENOENT)
		return r;
	if (!r && !(v & PB_USED)) {
		r = links(pa, pb, &p, &n);
		if (r)
			return r;
		unlink_blk(pa, p, n);
		b = pb;
		size += pb_size(v);
	}
	if (b + size == pa->tail) {
		pa->tail = b;
		sefer__pa_put_word(pa, PA_TAIL_OFF, b);
		sefer__pstore_tx_len(pa->s, b);
		return 0;
	}
	uint64_t head = F(pa)->head;

	sefer__pt_set(pa, b, size, false);
	sefer__pa_put_word(pa, b + 8, 0);
	sefer__pa_put_word(pa, b + 16, head);
	if (head)
		sefer__pa_put_word(pa, head + 8, b);
	set_head(pa, b);
	return 0;
}

/* Run an op inside a record; on failure undo the in-memory changes. */
#define FF_OP(pa, body)                                                                    \
	({                                                                                 \
		uint64_t _h = F(pa)->head, _t = pa->tail;                                  \
		int _r;                                                                    \
		sefer__pstore_tx_begin(pa->s);                                                    \
		_r = (body);                                                               \
		if (_r) {                                                                  \
			sefer__pstore_tx_abort(pa->s);                                            \
			F(pa)->head = _h;                                                  \
			pa->tail = _t;                                                     \
		} else {                                                                   \
			_r = sefer__pa_commit(pa);                                                \
		}                                                                          \
		_r;                                                                        \
	})

static int ff_alloc(struct palloc *pa, uint64_t size, uint64_t *off)
{
	uint64_t b = 0;
	int r;

	if (size > (1ULL << 46))
		return -ENOMEM;
	r = FF_OP(pa, ff_take(pa, sefer__pt_round(size), &b));
	*off = b + 8;
	return r;
}

static int do_free(struct palloc *pa, uint64_t off)
{
	uint64_t b, v;
	int r = sefer__pt_user_block(pa, off, &b, &v);

	return r ? r : ff_give(pa, b, pb_size(v));
}

static int ff_free(struct palloc *pa, uint64_t off)
{
	return FF_OP(pa, do_free(pa, off));
}

static int do_realloc(struct palloc *pa, uint64_t off, uint64_t size, uint64_t *newoff)
{
	uint64_t b, v, nv, need = sefer__pt_round(size), nb;
	int r = sefer__pt_user_block(pa, off, &b, &v);

	if (r)
		return r;
	uint64_t bs = pb_size(v);

	*newoff = off;
	if (need <= bs)
		return 0;
	if (b + bs == pa->tail) {
		sefer__pt_set(pa, b, need, true);
		pa->tail = b + need;
		sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
		sefer__pstore_tx_len(pa->s, pa->tail);
		return 0;
	}
	r = sefer__pt_hdr(pa, b + bs, &nv);
	if (r)
		return r == -EINVAL ? -EUCLEAN : r;
	if (!(nv & PB_USED) && bs + pb_size(nv) >= need) {	/* absorb the free neighbour */
		uint64_t p, n, total = bs + pb_size(nv);

		r = links(pa, b + bs, &p, &n);
		if (r)
			return r;
		unlink_blk(pa, p, n);
		if (total - need >= PT_MIN) {
			sefer__pt_set(pa, b, need, true);
			return ff_give(pa, b + need, total - need);
		}
		sefer__pt_set(pa, b, total, true);
		return 0;
	}
	uint64_t keep = bs - 16;

	if (keep + 256 > sefer__pstore_max_record(pa->s) / 2)
		return -E2BIG;
	uint8_t *tmp = malloc(keep);

	if (!tmp)
		return -ENOMEM;
	r = sefer__pstore_read_tx(pa->s, off, tmp, keep);
	if (!r)
		r = ff_take(pa, need, &nb);
	if (!r) {
		sefer__pstore_tx_blob(pa->s, nb + 8, tmp, keep);
		r = ff_give(pa, b, bs);
		*newoff = nb + 8;
	}
	free(tmp);
	return r;
}

static int ff_realloc(struct palloc *pa, uint64_t off, uint64_t size, uint64_t *newoff)
{
	if (size > (1ULL << 46))
		return -ENOMEM;
	return FF_OP(pa, do_realloc(pa, off, size, newoff));
}

static int ff_create(struct palloc *pa)
{
	pa->priv = calloc(1, sizeof(struct ff));
	if (!pa->priv)
		return -ENOMEM;
	return sefer__pa_header_create(pa, 1);
}

static int ff_open(struct palloc *pa, bool scan, struct sefer_precovery *rep)
{
	int r;

	pa->priv = calloc(1, sizeof(struct ff));
	if (!pa->priv)
		return -ENOMEM;
	r = sefer__pa_header_open(pa, 1);
	if (!r && sefer__pa_get_word(pa, PA_LIST_OFF, &F(pa)->head)) {
		sefer__pa_msg(pa, "free list head fails its check (corrupted metadata)");
		r = -EUCLEAN;
	}
	if (!r && scan) {
		struct sefer_pverify v = { 0 };

		r = sefer__pa_firstfit_ops.verify(pa, &v);
		rep->blocks_scanned = v.blocks;
		if (r)
			sefer__pa_msg(pa, "arena scan: %s", v.msg);
	}
	return r;
}

static int ff_walk_fn(void *arg, uint64_t b, uint64_t size, bool used)
{
	int r;

	sefer__pt_walk_block(arg, b, size, used, &r);
	return r; /* a free block needs no check here: ff_verify walks the list itself */
}

static int ff_verify(struct palloc *pa, struct sefer_pverify *v)
{
	struct pt_walk w = { .v = v };
	int r = sefer__pt_walk(pa, ff_walk_fn, &w, v->msg, sizeof(v->msg));
	uint64_t n = 0, prev = 0, p, nx, hv;

	for (uint64_t b = F(pa)->head; !r && b; b = nx, n++) {
		if (n > v->free_blocks) {
			snprintf(v->msg, sizeof(v->msg), "free list has a cycle");
			r = -EUCLEAN;
			break;
		}
		r = sefer__pt_hdr(pa, b, &hv);
		if (!r && (hv & PB_USED))
			r = -EUCLEAN;
		if (!r)
			r = links(pa, b, &p, &nx);
		if (!r && p != prev)
			r = -EUCLEAN;
		if (r)
			snprintf(v->msg, sizeof(v->msg), "free list node %llu is bad",
				 (unsigned long long)b);
		prev = b;
	}
	if (!r && n != v->free_blocks) {
		v->orphans = v->free_blocks - n;
		snprintf(v->msg, sizeof(v->msg), "%llu free blocks are not on the list",
			 (unsigned long long)v->orphans);
		r = -EUCLEAN;
	}
	v->errors = r != 0;
	return r;
}

static int ff_walk_blocks(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	struct sefer_pverify v = { 0 };
	struct pt_walk w = { .v = &v, .fn = fn, .arg = arg };

	return sefer__pt_walk(pa, ff_walk_fn, &w, v.msg, sizeof(v.msg));
}

static void ff_stats(struct palloc *pa, struct sefer_pstats *st)
{
	struct sefer_pverify v = { 0 };

	ff_verify(pa, &v);
	st->nlists = 1;
	st->list_len[0] = v.free_blocks;
	st->used_blocks = v.used_blocks;
	st->used_bytes = v.used_bytes;
	st->free_blocks = v.free_blocks;
	st->free_bytes = v.free_bytes;
}

static void ff_close(struct palloc *pa)
{
	free(pa->priv);
	pa->priv = NULL;
}

SEFER_INTERNAL const struct sefer_palloc_ops sefer__pa_firstfit_ops = {
	.name = "first-fit",
	.magic = { 'A', 'L', 'F', 'F' },
	.group_commit = false,
	.create = ff_create,
	.open = ff_open,
	.alloc = ff_alloc,
	.realloc = ff_realloc,
	.free = ff_free,
	.usable = sefer__pt_usable,
	.verify = ff_verify,
	.walk = ff_walk_blocks,
	.compact = sefer__pt_compact,
	.stats = ff_stats,
	.close = ff_close,
};
