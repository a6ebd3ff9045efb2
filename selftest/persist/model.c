// SPDX-License-Identifier: MIT
/* The store model shared by the crash, fault, kill and fuzz tests: see model.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * A third of the contents imitate allocator metadata: words that look like block offsets
 * (8 mod 16) and block sizes with the in-use bit, so an allocator that trusted unchecked
 * words (or a replay that wrote user data as metadata) would be caught.
 */
void pm_fill(uint8_t *buf, uint32_t slot, uint32_t ver, size_t len)
{
	uint64_t s = ((uint64_t)slot << 32 | ver) * 0x2545F4914F6CDD1DULL;
	bool meta = (slot + ver) % 3 == 0;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = rnd(&s);

		if (meta)
			v = v & 1 ? ((v >> 8) % 65536) * 16 + 8 : ((v >> 8) % 256) * 16 + 1;

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}

void pm_init(struct pmodel *m, unsigned nslots, uint64_t seed, unsigned max_size)
{
	memset(m, 0, sizeof(*m));
	m->slot = calloc(nslots, sizeof(*m->slot));
	m->n = nslots;
	m->rng = seed;
	m->max_size = max_size;
}

void pm_free(struct pmodel *m)
{
	free(m->slot);
	m->slot = NULL;
}

void pm_apply(struct pmodel *m, const struct pm_msg *msg)
{
	struct pm_slot *s = &m->slot[msg->slot];

	if (msg->kind == PM_BEGIN) {
		m->inflight = true;
		m->fl = *msg;
		m->before = *s;
		return;
	}
	m->inflight = false;
	if (msg->op == PM_FREE) {
		s->live = false;
		return;
	}
	s->live = true;
	s->off = msg->off;
	s->len = msg->len;
	s->ver = msg->ver;
}

static uint32_t pick_size(struct pmodel *m)
{
	uint64_t r = rnd(&m->rng);

	if (r % 16 == 0)
		return (uint32_t)(rnd(&m->rng) % m->max_size);
	return (uint32_t)(rnd(&m->rng) % (m->max_size < 1100 ? m->max_size : 1100));
}

int pm_step(struct pmodel *m, struct sefer_pstore *h,
	    void (*report)(void *, const struct pm_msg *), void *arg)
{
	uint32_t i = (uint32_t)(rnd(&m->rng) % m->n);
	struct pm_slot *s = &m->slot[i];
	struct pm_msg b = { .kind = PM_BEGIN, .slot = i };
	uint8_t *buf = NULL;
	uint64_t off;
	int r;

	if (!s->live) {
		b.op = PM_ALLOC;
		b.len = pick_size(m);
		b.ver = s->ver + 1;
	} else {
		uint64_t k = rnd(&m->rng) % 10;

		b.op = k < 4 ? PM_FREE : k < 7 ? PM_REALLOC : PM_WRITE;
		b.off = s->off;
		b.len = b.op == PM_REALLOC ? pick_size(m) : s->len;
		b.ver = b.op == PM_WRITE ? s->ver + 1 : s->ver;
	}
	report(arg, &b);
	struct pm_msg a = b;

	a.kind = PM_ACK;
	switch (b.op) {
	case PM_ALLOC:
		r = sefer_palloc(h, b.len, &off);
		if (r)
			return r;
		buf = malloc(b.len + 1);
		pm_fill(buf, i, b.ver, b.len);
		r = sefer_pwrite(h, off, 0, buf, b.len);
		a.off = off;
		break;
	case PM_FREE:
		r = sefer_pfree(h, s->off);
		break;
	case PM_REALLOC:
		r = sefer_prealloc(h, s->off, b.len, &off);
		a.off = off;
		a.len = b.len < s->len ? b.len : s->len;
		break;
	default:
		buf = malloc(b.len + 1);
		pm_fill(buf, i, b.ver, b.len);
		r = sefer_pwrite(h, s->off, 0, buf, b.len);
		a.off = s->off;
		break;
	}
	free(buf);
	if (!r)
		report(arg, &a);
	return r;
}

static int content_ok(struct sefer_pstore *h, uint64_t off, uint32_t slot, uint32_t ver,
		      uint32_t len)
{
	uint8_t *want, *got;
	int ok;

	if (sefer_pusable(h, off) < len)
		return 0;
	want = malloc(len + 1);
	got = malloc(len + 1);
	pm_fill(want, slot, ver, len);
	ok = sefer_pread(h, off, 0, got, len) == 0 && memcmp(want, got, len) == 0;
	free(want);
	free(got);
	return ok;
}

int pm_check(struct pmodel *m, struct sefer_pstore *h, char *msg, size_t len)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct pm_slot *s = &m->slot[i];

		if (s->live && !content_ok(h, s->off, i, s->ver, s->len)) {
			snprintf(msg, len, "slot %u (off %llu len %u ver %u) does not read back", i,
				 (unsigned long long)s->off, s->len, s->ver);
			return -1;
		}
	}
	return 0;
}

struct blocks {
	uint64_t *off;
	bool *claimed;
	size_t n, cap;
};

static int collect(void *arg, uint64_t off, uint64_t usable)
{
	struct blocks *b = arg;

	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->off = realloc(b->off, b->cap * sizeof(*b->off));
	}
	b->off[b->n++] = off;
	return 0;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Index of the unclaimed block at off, or -1. */
static long find(struct blocks *b, uint64_t off)
{
	uint64_t *p = b->n ? bsearch(&off, b->off, b->n, sizeof(*b->off), cmp64) : NULL;

	return p && !b->claimed[p - b->off] ? p - b->off : -1;
}

int pm_recover(struct pmodel *m, struct sefer_pstore *h, char *msg, size_t len)
{
	struct blocks bl = { 0 };
	struct sefer_pverify v;
	int ret = -1;

	if (sefer_pverify(h, &v)) {
		snprintf(msg, len, "verify after reopen: %s", v.msg);
		return -1;
	}
	if (sefer_pwalk(h, collect, &bl)) {
		snprintf(msg, len, "walk failed");
		goto out;
	}
	if (bl.n)
		qsort(bl.off, bl.n, sizeof(*bl.off), cmp64);
	bl.claimed = calloc(bl.n + 1, sizeof(bool));
	/* Settle the op in flight: its slot is excluded from the plain check. */
	int fl = m->inflight ? (int)m->fl.slot : -1;

	for (unsigned i = 0; i < m->n; i++) {
		struct pm_slot *s = &m->slot[i];

		if ((int)i == fl || !s->live)
			continue;
		long p = find(&bl, s->off);

		if (p < 0 || !content_ok(h, s->off, i, s->ver, s->len)) {
			snprintf(msg, len, "acknowledged slot %u (off %llu len %u ver %u) %s", i,
				 (unsigned long long)s->off, s->len, s->ver,
				 p >= 0 ? "does not read back" : "is not allocated");
			goto out;
		}
		bl.claimed[p] = true;
	}
	if (fl >= 0) {
		struct pm_slot *s = &m->slot[fl], old = m->before;
		const struct pm_msg *b = &m->fl;
		long p = old.live ? find(&bl, old.off) : -1;
		bool done = false;

		switch (b->op) {
		case PM_ALLOC:
			done = false;	/* its block, if any, is leaked: freed below */
			s->live = false;
			s->ver = b->ver;
			break;
		case PM_FREE:
			if (p >= 0 && content_ok(h, old.off, fl, old.ver, old.len)) {
				*s = old;
				bl.claimed[p] = true;
			} else if (p >= 0) {
				snprintf(msg, len, "free in flight left slot %d torn", fl);
				goto out;
			} else {
				s->live = false;
				done = true;
			}
			break;
		case PM_REALLOC: {
			uint32_t keep = b->len < old.len ? b->len : old.len;

			*s = old;
			s->len = keep;
			if (p >= 0 && content_ok(h, old.off, fl, old.ver, keep)) {
				bl.claimed[p] = true;
				done = sefer_pusable(h, old.off) >= b->len;
				break;
			}
			for (size_t k = 0; k < bl.n; k++) {
				if (!bl.claimed[k] && content_ok(h, bl.off[k], fl, old.ver, keep)) {
					s->off = bl.off[k];
					bl.claimed[k] = true;
					done = true;
					break;
				}
			}
			if (!done) {
				size_t un = 0;

				for (size_t k = 0; k < bl.n; k++)
					un += !bl.claimed[k];
				snprintf(msg, len, "realloc in flight lost slot %d (old off %llu len %u, "
					 "new len %u, old block %s, usable %zu, %zu unclaimed blocks)", fl,
					 (unsigned long long)old.off, old.len, b->len,
					 p >= 0 ? "allocated" : "not allocated",
					 sefer_pusable(h, old.off), un);
				goto out;
			}
			break;
		}
		default:
			*s = old;
			if (p < 0) {
				snprintf(msg, len, "write in flight: slot %d not allocated", fl);
				goto out;
			}
			if (content_ok(h, old.off, fl, b->ver, old.len)) {
				s->ver = b->ver;
				done = true;
			} else if (!content_ok(h, old.off, fl, old.ver, old.len)) {
				snprintf(msg, len, "write in flight left slot %d torn", fl);
				goto out;
			}
			bl.claimed[p] = true;
		}
		if (done)
			m->settled_done++;
		else
			m->settled_undone++;
		m->inflight = false;
	}
	for (size_t k = 0; k < bl.n; k++) {
		if (bl.claimed[k])
			continue;
		if (sefer_pfree(h, bl.off[k])) {
			snprintf(msg, len, "cannot free leaked block %llu",
				 (unsigned long long)bl.off[k]);
			goto out;
		}
		m->leaked++;
	}
	if (sefer_pverify(h, &v)) {
		snprintf(msg, len, "verify after leak recovery: %s", v.msg);
		goto out;
	}
	ret = 0;
out:
	free(bl.off);
	free(bl.claimed);
	return ret;
}
