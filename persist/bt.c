// SPDX-License-Identifier: MIT
/*
 * The best-fit tree baseline (magic ALBT): boundary-tagged blocks (tags.c) on disk, free
 * blocks indexed in memory by a treap keyed (size, offset), rebuilt from the tags at open.
 * Alloc takes the smallest free block that fits (lowest offset among equals) and splits it;
 * free merges with free neighbours through the tags and gives a free tail back.
 *
 * Invariants (checked by verify): blocks tile [PA_HDR_END, tail); no two free blocks are
 * adjacent; the tree holds exactly the free blocks of the arena.
 *
 * Every operation is one record, its lock held across the sync (.group_commit = false). The
 * tree is changed only after every read of the operation succeeded; a failure after that
 * (no memory for a record) kills the handle (pa->dead) rather than leave tree and disk apart.
 *
 * Lock: pa->lock protects the tree and pa->tail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist/internal.h"

struct node {
	uint64_t size, off, prio;
	struct node *l, *r;
};

struct bt {
	struct node *root;
	uint64_t n, rng;
};

static struct bt *T(struct palloc *pa)
{
	return pa->priv;
}

static bool less(uint64_t s1, uint64_t o1, uint64_t s2, uint64_t o2)
{
	return s1 < s2 || (s1 == s2 && o1 < o2);
}

/* Split t into keys < (s, o) and keys >= (s, o). */
static void split(struct node *t, uint64_t s, uint64_t o, struct node **a, struct node **b)
{
	if (!t) {
		*a = *b = NULL;
	} else if (less(t->size, t->off, s, o)) {
		split(t->r, s, o, &t->r, b);
		*a = t;
	} else {
		split(t->l, s, o, a, &t->l);
		*b = t;
	}
}

static struct node *merge(struct node *a, struct node *b)
{
	if (!a || !b)
		return a ? a : b;
	if (a->prio > b->prio) {
		a->r = merge(a->r, b);
		return a;
	}
	b->l = merge(a, b->l);
	return b;
}

static int tree_insert(struct bt *t, uint64_t size, uint64_t off)
{
	struct node *n = calloc(1, sizeof(*n)), *a, *b;

	if (!n)
		return -ENOMEM;
	t->rng = t->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	n->size = size;
	n->off = off;
	n->prio = t->rng >> 11;
	split(t->root, size, off, &a, &b);
	t->root = merge(merge(a, n), b);
	t->n++;
	return 0;
}

static void tree_remove(struct bt *t, uint64_t size, uint64_t off)
{
	struct node **p = &t->root;

	while (*p && ((*p)->size != size || (*p)->off != off))
		p = less(size, off, (*p)->size, (*p)->off) ? &(*p)->l : &(*p)->r;
	if (*p) {
		struct node *d = *p;

		*p = merge(d->l, d->r);
		free(d);
		t->n--;
	}
}

static struct node *lower_bound(struct bt *t, uint64_t size)
{
	struct node *best = NULL;

	for (struct node *c = t->root; c;) {
		if (c->size >= size) {
			best = c;
			c = c->l;
		} else {
			c = c->r;
		}
	}
	return best;
}

static void tree_free(struct node *n)
{
	if (n) {
		tree_free(n->l);
		tree_free(n->r);
		free(n);
	}
}

/* Reads done: take the best fit or extend the tail. */
static int bt_take(struct palloc *pa, uint64_t need, uint64_t *bp)
{
	struct node *n = lower_bound(T(pa), need);

	if (!n) {
		if (pa->tail + need > (1ULL << 47))
			return -ENOMEM;
		*bp = pa->tail;
		sefer__pt_set(pa, pa->tail, need, true);
		pa->tail += need;
		sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
		sefer__pstore_tx_len(pa->s, pa->tail);
		return 0;
	}
	uint64_t b = n->off, size = n->size;

	tree_remove(T(pa), size, b);
	if (size - need >= PT_MIN) {
		sefer__pt_set(pa, b + need, size - need, false);
		if (tree_insert(T(pa), size - need, b + need))
			return -ENOMEM;
		size = need;
	}
	sefer__pt_set(pa, b, size, true);
	*bp = b;
	return 0;
}

/* Neighbours of [b, b+size): free sizes (0 when used or absent). Reads only. */
static int neighbours(struct palloc *pa, uint64_t b, uint64_t size, uint64_t *prev_b,
		      uint64_t *prev_size, uint64_t *next_size)
{
	uint64_t v;
	int r;

	*prev_size = *next_size = 0;
	if (b + size < pa->tail) {
		r = sefer__pt_hdr(pa, b + size, &v);
		if (r)
			return r == -EINVAL ? -EUCLEAN : r;
		if (!(v & PB_USED))
			*next_size = pb_size(v);
	}
	r = sefer__pt_prev(pa, b, prev_b, &v);
	if (r && r != -ENOENT)
		return r;
	if (!r && !(v & PB_USED))
		*prev_size = pb_size(v);
	return 0;
}

static int bt_give(struct palloc *pa, uint64_t b, uint64_t size, uint64_t pb, uint64_t ps,
		   uint64_t ns)
{
	if (ns)
		tree_remove(T(pa), ns, b + size);
	if (ps) {
		tree_remove(T(pa), ps, pb);
		b = pb;
	}
	size += ps + ns;
	if (b + size == pa->tail) {
		pa->tail = b;
		sefer__pa_put_word(pa, PA_TAIL_OFF, b);
		sefer__pstore_tx_len(pa->s, b);
		return 0;
	}
	sefer__pt_set(pa, b, size, false);
	return tree_insert(T(pa), size, b);
}

static int fail(struct palloc *pa, int r) __releases(&pa->s->tx_lock)
{
	sefer__pstore_tx_abort(pa->s);
	if (!pa->dead)
		pa->dead = r;
	return r;
}

static int bt_alloc(struct palloc *pa, uint64_t size, uint64_t *off)
{
	uint64_t b;
	int r;

	if (size > (1ULL << 46))
		return -ENOMEM;
	sefer__pstore_tx_begin(pa->s);
	r = bt_take(pa, sefer__pt_round(size), &b);
	if (r)
		return fail(pa, r);
	*off = b + 8;
	return sefer__pa_commit(pa);
}

static int bt_free(struct palloc *pa, uint64_t off)
{
	uint64_t b, v, pb = 0, ps, ns;
	int r;

	sefer__pstore_tx_begin(pa->s);
	r = sefer__pt_user_block(pa, off, &b, &v);
	if (!r)
		r = neighbours(pa, b, pb_size(v), &pb, &ps, &ns);
	if (r) {
		sefer__pstore_tx_abort(pa->s);
		return r;
	}
	r = bt_give(pa, b, pb_size(v), pb, ps, ns);
	return r ? fail(pa, r) : sefer__pa_commit(pa);
}

static int bt_realloc(struct palloc *pa, uint64_t off, uint64_t size, uint64_t *newoff)
{
	uint64_t b, v, need = sefer__pt_round(size), nb, pb = 0, ps, ns;
	int r;

	if (size > (1ULL << 46))
		return -ENOMEM;
	*newoff = off;
	sefer__pstore_tx_begin(pa->s);
	r = sefer__pt_user_block(pa, off, &b, &v);
	uint64_t bs = pb_size(v);

	if (!r && need <= bs) {
		sefer__pstore_tx_abort(pa->s);
		return 0;
	}
	if (!r)
		r = neighbours(pa, b, bs, &pb, &ps, &ns);
	if (r) {
		sefer__pstore_tx_abort(pa->s);
		return r;
	}
	if (b + bs == pa->tail) {
		sefer__pt_set(pa, b, need, true);
		pa->tail = b + need;
		sefer__pa_put_word(pa, PA_TAIL_OFF, pa->tail);
		sefer__pstore_tx_len(pa->s, pa->tail);
		return sefer__pa_commit(pa);
	}
	if (ns && bs + ns >= need) {		/* absorb the free neighbour */
		uint64_t total = bs + ns;

		tree_remove(T(pa), ns, b + bs);
		if (total - need >= PT_MIN) {
			sefer__pt_set(pa, b + need, total - need, false);
			if (tree_insert(T(pa), total - need, b + need))
				return fail(pa, -ENOMEM);
			total = need;
		}
		sefer__pt_set(pa, b, total, true);
		return sefer__pa_commit(pa);
	}
	uint64_t keep = bs - 16;

	if (keep + 256 > sefer__pstore_max_record(pa->s) / 2) {
		sefer__pstore_tx_abort(pa->s);
		return -E2BIG;
	}
	uint8_t *tmp = malloc(keep);

	if (!tmp || sefer__pstore_read(pa->s, off, tmp, keep)) {
		free(tmp);
		sefer__pstore_tx_abort(pa->s);
		return tmp ? -EIO : -ENOMEM;
	}
	r = bt_take(pa, need, &nb);
	if (!r) {
		sefer__pstore_tx_blob(pa->s, nb + 8, tmp, keep);
		/* bt_take() may have carved the new block out of a free neighbour: look again. */
		r = neighbours(pa, b, bs, &pb, &ps, &ns);
	}
	if (!r)
		r = bt_give(pa, b, bs, pb, ps, ns);
	free(tmp);
	if (r)
		return fail(pa, r);
	*newoff = nb + 8;
	return sefer__pa_commit(pa);
}

static int bt_create(struct palloc *pa)
{
	pa->priv = calloc(1, sizeof(struct bt));
	if (!pa->priv)
		return -ENOMEM;
	T(pa)->rng = 0x853c49e6748fea9bULL;
	return sefer__pa_header_create(pa, 0);
}

struct bt_walk {
	struct pt_walk pt;
	struct palloc *pa;
	bool build;
};

static int bt_walk_fn(void *arg, uint64_t b, uint64_t size, bool used)
{
	struct bt_walk *w = arg;
	int r;

	if (sefer__pt_walk_block(&w->pt, b, size, used, &r))
		return r;
	if (w->build)
		return tree_insert(T(w->pa), size, b);
	/* verify: the tree must hold it */
	struct node *c = T(w->pa)->root;

	while (c && (c->size != size || c->off != b))
		c = less(size, b, c->size, c->off) ? c->l : c->r;
	if (!c) {
		w->pt.v->orphans++;
		snprintf(w->pt.v->msg, sizeof(w->pt.v->msg), "free block %llu is not in the tree",
			 (unsigned long long)b);
	}
	return 0;
}

static int bt_verify(struct palloc *pa, struct sefer_pverify *v)
{
	struct bt_walk w = { .pt.v = v, .pa = pa };
	int r = sefer__pt_walk(pa, bt_walk_fn, &w, v->msg, sizeof(v->msg));

	if (!r && (v->orphans || T(pa)->n != v->free_blocks)) {
		if (!v->orphans)
			snprintf(v->msg, sizeof(v->msg), "tree holds %llu blocks, arena has %llu free",
				 (unsigned long long)T(pa)->n, (unsigned long long)v->free_blocks);
		r = -EUCLEAN;
	}
	v->errors = r != 0;
	return r;
}

static int bt_open(struct palloc *pa, bool scan, struct sefer_precovery *rep)
{
	struct sefer_pverify v = { 0 };
	struct bt_walk w = { .pt.v = &v, .pa = pa, .build = true };
	int r;

	pa->priv = calloc(1, sizeof(struct bt));
	if (!pa->priv)
		return -ENOMEM;
	T(pa)->rng = 0x853c49e6748fea9bULL;
	r = sefer__pa_header_open(pa, 0);
	if (r)
		return r;
	r = sefer__pt_walk(pa, bt_walk_fn, &w, v.msg, sizeof(v.msg));
	if (r)
		sefer__pa_msg(pa, "arena scan: %s", v.msg);
	rep->blocks_scanned = v.blocks;
	return r;
}

static int bt_walk_blocks(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	struct sefer_pverify v = { 0 };
	struct bt_walk w = { .pt = { &v, fn, arg }, .pa = pa };

	return sefer__pt_walk(pa, bt_walk_fn, &w, v.msg, sizeof(v.msg));
}

static void bt_stats(struct palloc *pa, struct sefer_pstats *st)
{
	struct sefer_pverify v = { 0 };

	bt_verify(pa, &v);
	st->nlists = 1;
	st->list_len[0] = T(pa)->n;
	st->used_blocks = v.used_blocks;
	st->used_bytes = v.used_bytes;
	st->free_blocks = v.free_blocks;
	st->free_bytes = v.free_bytes;
}

static void bt_close(struct palloc *pa)
{
	tree_free(T(pa)->root);
	free(pa->priv);
	pa->priv = NULL;
}

SEFER_INTERNAL const struct sefer_palloc_ops sefer__pa_bestfit_ops = {
	.name = "best-fit-tree",
	.magic = { 'A', 'L', 'B', 'T' },
	.group_commit = false,
	.create = bt_create,
	.open = bt_open,
	.alloc = bt_alloc,
	.realloc = bt_realloc,
	.free = bt_free,
	.usable = sefer__pt_usable,
	.verify = bt_verify,
	.walk = bt_walk_blocks,
	.compact = sefer__pt_compact,
	.stats = bt_stats,
	.close = bt_close,
};
