// SPDX-License-Identifier: MIT
/*
 * sefer_check_heap(): the invariants of segment.h, checked by walking the registry. Segments
 * owned by the calling thread (its default heap or its first-class heaps, or abandoned) are
 * checked in full; those of other live threads only in their immutable parts, since their
 * owners change them meanwhile.
 */
#include "core/error.h"
#include "core/heap.h"
#include "core/heaps.h"
#include "sefer.h"

struct check_ctx {
	struct heap *me;
	size_t problems;
	size_t segments;
};

static void problem(struct check_ctx *c, const char *what, const void *where)
{
	sefer__message("check: %s at %p", what, where);
	c->problems++;
}

/* The length of pg's free list from b; *pending: how many of them carry the pending mark. */
static size_t walk_list(struct check_ctx *c, struct page *pg, struct block *b, size_t *pending)
{
	size_t n = 0, span = page_span_bytes(pg);

	for (; b; b = block_next(pg, b)) {
		size_t off = (size_t)((uint8_t *)b - page_start(pg));

		if (off >= span || off % pg->block_size) {
			problem(c, "free-list entry outside its page or misaligned", b);
			break;
		}
		if (IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE) && !block_marked_free_or_pending(b))
			problem(c, "free block without its free mark", b);
		*pending += block_marked_pending(b);
		if (++n > pg->capacity) {
			problem(c, "free list longer than the page (cycle)", pg);
			break;
		}
	}
	return n;
}

static void check_page(struct check_ctx *c, struct segment *seg, struct page *pg, size_t idx)
{
	for (size_t i = idx; i < idx + pg->span; i++)
		if (seg->page_off[i] != page_desc_off(idx))
			problem(c, "page map does not point at the span head", &seg->pages[i]);
	uint32_t used = page_used(pg); /* a walk of an uncounted page's free list (block.h) */

	if (pg->block_size != bin_block_size(pg->bin) ||
	    pg->capacity != page_span_bytes(pg) / pg->block_size || pg->reserved > pg->capacity ||
	    used > pg->reserved)
		problem(c, "page descriptor inconsistent", pg);
	size_t pending_free = 0, nfree = walk_list(c, pg, pg->free, &pending_free);

	/* an uncounted page's figure is this walk (block.h): its test is the marks' below */
	if (nfree + used != pg->reserved)
		problem(c, "free list + used blocks differ from carved blocks", pg);
	/* a local free into a full page takes it out of the full queue (page_unfull) */
	if ((pg->flags & PAGE_FULL) && (pg->free || pg->reserved != pg->capacity))
		problem(c, "full page with a free or uncarved block", pg);
#if IS_ENABLED(CONFIG_DEBUG_DOUBLE_FREE)
	size_t live = 0;

	/* used counts the live blocks and the pending ones not collected yet (block.h) */
	for (size_t i = 0; i < pg->reserved; i++) {
		const struct block *b = (struct block *)(page_start(pg) + i * pg->block_size);

		live += block_live(b) + block_pending(b);
	}
	live -= pending_free;
	if (!policy_keeps_small_blocks() && live != used)
		problem(c, "free marks disagree with the used count", pg);
	if (pg->div_magic != div_magic_of(pg->block_size) ||
	    pg->fast_limit != page_fast_limit(pg))
		problem(c, "page descriptor's block-start test inconsistent", pg);
#endif
}

static void check_segment(struct sync_node *n, void *arg)
{
	struct check_ctx *c = arg;
	struct segment *seg =
		(struct segment *)((uint8_t *)n - __builtin_offsetof(struct segment, reg));
	struct heap *owner = atomic_load_explicit(&seg->owner, memory_order_acquire);

	c->segments++;
	if (seg->cookie != ((uintptr_t)seg ^ sefer__list_key))
		problem(c, "segment header cookie overwritten", seg);
	if (seg->kind == SEG_LARGE) {
		if (owner != LARGE_OWNER || large_block(seg) < (uint8_t *)seg ||
		    large_block(seg) + seg->large_size > (uint8_t *)seg + seg->size)
			problem(c, "large segment header inconsistent", seg);
		for (size_t i = 0; i < PAGES_PER_SEGMENT; i++)
			if (seg->page_off[i])
				problem(c, "large segment maps a page descriptor", seg);
		return;
	}
	if (seg->kind != SEG_SMALL) {
		problem(c, "segment kind unknown", seg);
		return;
	}
	if (owner != c->me && owner != NULL && !heap_is_mine(owner, c->me))
		return;
	size_t used = 0;
	struct page *pg;

	for (size_t idx = META_PAGES; idx < PAGES_PER_SEGMENT;) {
		pg = &seg->pages[idx];
		if (!pg->span) {
			if (!(seg->free_pages >> idx & 1))
				problem(c, "slot in no span but not free", pg);
			idx++;
			continue;
		}
		if (seg->free_pages >> idx & 1)
			problem(c, "span head marked free", pg);
		check_page(c, seg, pg, idx);
		used += pg->span;
		idx += pg->span;
	}
	if (used != seg->used_pages)
		problem(c, "used page count wrong", seg);
	/* span.c, purge.c: dirty and purged slots are free ones; a dirty slot has a deadline */
	if ((seg->dirty_pages | seg->purged_pages) & ~seg->free_pages ||
	    seg->dirty_pages & seg->purged_pages ||
	    (IS_ENABLED(CONFIG_DECOMMIT) && seg->dirty_pages && !seg->purge_at))
		problem(c, "segment slot masks inconsistent", seg);
}

/*
 * heap.h: every direct-table slot points at its bin's first page, or at page_empty (NULL in
 * heap_empty's table), and the calling thread's TLS copy of its default heap's table (what
 * malloc reads) equals the table, page_empty where heap_empty's holds NULL.
 */
static void check_direct(struct check_ctx *c, struct heap *heap)
{
	struct page *none = heap == &sefer__heap_empty ? NULL : &sefer__page_empty;

	for (size_t s = 0; s < DIRECT_SLOTS; s++) {
		struct page *first = heap->bins[bin_index(s << GRANULE_SHIFT)].first;
		struct page *want = first ? first : none;

		if (heap->direct[s] != want)
			problem(c, "direct table slot not its bin's first page", &heap->direct[s]);
		if (heap == heap_get() && s < DIRECT_TLS_SLOTS &&
		    sefer__direct[s] != (want ? want : &sefer__page_empty))
			problem(c, "thread's copy of the direct table differs", &sefer__direct[s]);
	}
}

SEFER_API size_t sefer_check_heap(void)
{
	struct check_ctx c = { heap_get(), 0, 0 };

	check_direct(&c, c.me);
	sefer__sync_registry_walk(check_segment, &c);
	return c.problems;
}
