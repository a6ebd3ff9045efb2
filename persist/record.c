// SPDX-License-Identifier: MIT
/*
 * Log records: walking a record's entries (record format: persist/wal.h,
 * Documentation/persist.rst). Applying them is the page cache's job (persist/pcache.c).
 */
#include <string.h>

#include "persist/internal.h"
#include "persist/wal.h"

/* Walk a record's entries; fn(off, data, len). Returns false when malformed. */
bool sefer__prec_entries(const uint8_t *r, const struct rec *h,
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
