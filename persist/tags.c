// SPDX-License-Identifier: MIT
/*
 * Boundary tags shared by the first-fit and best-fit baselines: every block has a checked
 * header word at its start and an identical checked footer word at its end, so both
 * neighbours of a block are found in O(1) when it is freed and merged.
 */
#include <errno.h>
#include <stdio.h>

#include "persist/internal.h"

uint64_t sefer__pt_round(uint64_t size)
{
	uint64_t n = (size + 16 + 15) & ~15ULL;

	return n < PT_MIN ? PT_MIN : n;
}

int sefer__pt_word(struct palloc *pa, uint64_t off, uint64_t *val)
{
	uint64_t w;
	int r = sefer__pstore_read_tx(pa->s, off, &w, 8);

	if (r)
		return r;
	if (!sefer__pword_ok(pa->salt, off, w))
		return -EUCLEAN;
	*val = pword_val(w);
	return 0;
}

int sefer__pt_hdr(struct palloc *pa, uint64_t b, uint64_t *v)
{
	int r;

	if (b < PA_HDR_END || b % 16 != 8 || b + PT_MIN > pa->tail)
		return -EINVAL;
	r = sefer__pt_word(pa, b, v);
	if (r)
		return r == -EUCLEAN ? -EINVAL : r;
	if (pb_size(*v) < PT_MIN || b + pb_size(*v) > pa->tail)
		return -EUCLEAN;
	return 0;
}

void sefer__pt_set(struct palloc *pa, uint64_t b, uint64_t size, bool used)
{
	uint64_t v = size | (used ? PB_USED : 0);

	sefer__pa_put_word(pa, b, v);
	sefer__pa_put_word(pa, b + size - 8, v);
}

int sefer__pt_prev(struct palloc *pa, uint64_t b, uint64_t *pb, uint64_t *pv)
{
	uint64_t fv, hv;
	int r;

	if (b <= PA_HDR_END)
		return -ENOENT;
	r = sefer__pt_word(pa, b - 8, &fv);
	if (r)
		return r;
	if (pb_size(fv) < PT_MIN || pb_size(fv) > b - PA_HDR_END)
		return -EUCLEAN;
	*pb = b - pb_size(fv);
	r = sefer__pt_hdr(pa, *pb, &hv);
	if (r)
		return r == -EINVAL ? -EUCLEAN : r;
	if (hv != fv)
		return -EUCLEAN;
	*pv = hv;
	return 0;
}

int sefer__pt_user_block(struct palloc *pa, uint64_t off, uint64_t *b, uint64_t *v)
{
	int r;

	*b = off - 8;
	r = sefer__pt_hdr(pa, *b, v);
	if (r)
		return r;
	return *v & PB_USED ? 0 : -EINVAL;
}

uint64_t sefer__pt_usable(struct palloc *pa, uint64_t off)
{
	uint64_t b, v;

	if (sefer__pt_user_block(pa, off, &b, &v))
		return 0;
	return pb_size(v) - 16;
}

int sefer__pt_compact(struct palloc *pa, uint64_t *merged, uint64_t *trimmed)
{
	*merged = *trimmed = 0;
	pa->seq = 0;
	return 0;
}

bool sefer__pt_walk_block(struct pt_walk *w, uint64_t b, uint64_t size, bool used, int *ret)
{
	*ret = 0;
	if (w->fn) {
		if (used)
			*ret = w->fn(w->arg, b + 8, size - 16);
		return true;
	}
	w->v->blocks++;
	if (used) {
		w->v->used_blocks++;
		w->v->used_bytes += size;
		return true;
	}
	w->v->free_blocks++;
	w->v->free_bytes += size;
	return false;
}

int sefer__pt_walk(struct palloc *pa, int (*fn)(void *, uint64_t, uint64_t, bool), void *arg,
	    char *msg, size_t mlen)
{
	int r = 0;
	bool prev_free = false;

	for (uint64_t b = PA_HDR_END; b < pa->tail;) {
		uint64_t w, f, size;

		r = sefer__pa_scan_read(pa, b, &w);
		if (r)
			break;
		size = pb_size(pword_val(w));
		r = -EUCLEAN;
		if (!sefer__pword_ok(pa->salt, b, w)) {
			snprintf(msg, mlen, "block header at %llu fails its check",
				 (unsigned long long)b);
			break;
		}
		if (size < PT_MIN || b + size > pa->tail) {
			snprintf(msg, mlen, "block at %llu: size %llu runs past the tail",
				 (unsigned long long)b, (unsigned long long)size);
			break;
		}
		r = sefer__pa_scan_read(pa, b + size - 8, &f);
		if (r)
			break;
		r = -EUCLEAN;
		if (!sefer__pword_ok(pa->salt, b + size - 8, f) || pword_val(f) != pword_val(w)) {
			snprintf(msg, mlen, "block at %llu: footer does not match its header",
				 (unsigned long long)b);
			break;
		}
		bool used = pword_val(w) & PB_USED;

		if (!used && prev_free) {
			snprintf(msg, mlen, "free blocks at %llu and before it were not merged",
				 (unsigned long long)b);
			break;
		}
		prev_free = !used;
		r = 0;
		if (fn && fn(arg, b, size, used))
			break;
		b += size;
	}
	sefer__pa_scan_end(pa);
	return r;
}
