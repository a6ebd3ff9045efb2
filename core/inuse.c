// SPDX-License-Identifier: MIT
/*
 * Bytes and blocks in use, counted when someone asks: no counter on the allocation paths.
 *
 * A small span's descriptor already counts its blocks handed out (page->used, segment.h), so
 * the blocks in use are the sum of used over every span of every live segment, and their bytes
 * used * block_size; a large segment holds one block, in use while large_live is set. The first
 * page of each bin queue counts nothing (core/block.h): its figure is reserved minus the length
 * of its free list, walked (inuse_uncounted). The walk
 * goes through the segment registry (core/sync.h) inside one read-side critical section, so no
 * segment it reads is unmapped under it. A span of another thread's heap changes while it is
 * read: each field is read once, relaxed, and the sum is a snapshot of a moving heap, exact
 * for a heap that does not run meanwhile.
 *
 * What counts as in use: a block from its malloc until its free reaches its page: a local free
 * at once, a free from another thread when it is pushed on the page's cross-thread list. The
 * page counts such a block as handed out until the owner collects the list, which may be long
 * after (the owner of an exited thread's parked heap is the next thread to take it), so the
 * walk takes the list's length (page->xthread, segment.h) off the page's figure. A free still
 * in the freeing thread's batch (core/remote.h: less than REMOTE_HELD_BYTES per thread,
 * published when its slot is wanted or it fills, at that thread's slow paths and at its exit)
 * counts until published; so does every pending free on a 32-bit target, whose xthread word
 * has no room for the length. A block a policy keeps (fastbin's magazine) is free: its page
 * still counts it as used, so the walk takes the policies' own counts off (held).
 * Bytes are usable bytes: the block size of the size class, the large block's size.
 *
 * Peaks are sampled, not tracked: in_use_peak_* is the highest total seen at a sample, taken
 * at every stats query (sefer_stats_get, sefer_heap_stats, mallinfo2, the printers) and on the
 * slow paths that grow the bound in use lies under (inuse_bound: a carve of small blocks, a
 * large block handed out in a segment mapped or grown for it, not a cached one) when the bound
 * has grown by a step (a sixteenth of it, at least INUSE_STEP_MIN, 4 MiB) since the last such
 * sample and lies a step above the peak known. So the peak never exceeds the true one. It
 * misses less than a step while the bound lies within a step of it; past that, what was
 * allocated since the last sample out of blocks carved before: a program that grows by
 * carving (no sample came after the last, so the bound lies less than a step above the last
 * sample's bound) is missed by less than a step and what the pages being filled have carved
 * and not handed out. A process whose bound stays under 4 MiB samples only when asked: its
 * walk would run code a small program otherwise leaves unmapped (core/libsefer-hot.lds) and
 * register the thread as a reader of the segment registry (under liburcu-bp, a page) for a
 * figure nobody asked for (Documentation/decommit.rst, "The fixed cost per process").
 * sefer__inuse_grown() runs at every carve: the core's text; the sample it may take, the hot
 * text's. One walk also feeds every heap's peak: each segment's figures are added to its
 * owner's running sum for that sample, tagged with the sample's generation, and folded into
 * the heap's peak at the end (a concurrent sample of another generation restarts the sum: a
 * lower figure, never a higher one).
 *
 * Cost: a walk reads the descriptors of every span (up to PAGES_PER_SEGMENT per segment) and
 * the header of every large segment: about 20 us per 100 segments, read from other threads'
 * caches (selftest/stats/query_cost.c; sefer(3)).
 */
#include "core/block.h"
#include "core/heap.h"
#include "core/large.h"
#include "core/stats.h"
#include "core/sync.h"

/*
 * One load of a field the owner writes with plain stores: volatile, so the compiler reads it
 * once; the walk's functions are left out of ThreadSanitizer's instrumentation (a snapshot
 * of a running heap is what is asked for: the race is by design).
 */
#define INUSE_READ(x) (*(volatile __typeof__(x) *)&(x))
#define INUSE_RACY __attribute__((no_sanitize("thread")))

#define INUSE_GEN_SHIFT 48
#define INUSE_SUM_MASK	(((uint64_t)1 << INUSE_GEN_SHIFT) - 1)

static _Atomic(uint64_t) inuse_sample_gen;

static bool inuse_is_heap(const struct heap *h)
{
	return (uintptr_t)h > (uintptr_t)HELD_OWNER;
}

/* Add v to a heap's running sum of sample gen (a sum of another generation starts again). */
static void inuse_sample_add(_Atomic(uint64_t) *sum, uint64_t gen, uint64_t v)
{
	uint64_t old = atomic_load_explicit(sum, memory_order_relaxed), new;

	do
		new = gen << INUSE_GEN_SHIFT |
		      (((old >> INUSE_GEN_SHIFT == gen ? old : 0) + v) & INUSE_SUM_MASK);
	while (!atomic_compare_exchange_weak_explicit(sum, &old, new, memory_order_relaxed,
						      memory_order_relaxed));
}

/*
 * The blocks pg's heap handed out when pg is the first page of its bin queue, uncounted
 * (block.h): reserved minus the length of its free list. The owner's walk is exact. Another
 * thread's follows links the owner may be rewriting, so each is read once and followed only
 * to the start of a carved block of pg (never out of its span), at most reserved of them: a
 * snapshot of a running heap, like the rest (memory-checker builds count every page).
 */
INUSE_RACY static uint32_t inuse_uncounted(const struct page *pg, struct heap *owner,
					   uint32_t reserved)
{
	struct block_geometry g;
	const struct block *b;
	uint32_t n = 0;

	if (owner == sefer__heap)
		return page_used(pg);
	b = INUSE_READ(pg->free);
	g.start = page_start_addr(pg);
	g.div_magic = INUSE_READ(pg->div_magic);
	g.block_size = INUSE_READ(pg->block_size);
	g.reserved = reserved;
	geometry_set_limit(&g); /* a bound of 0 (a magic not the size's) tests every link bad */
	if (b && !geometry_block_start(&g, b))
		return reserved; /* caught mid-change */
	while (b && n < reserved) {
		const struct block *next = (const struct block *)link_decode(b, INUSE_READ(b->next));

		n++;
		if (next && !geometry_block_start(&g, next))
			break;
		b = next;
	}
	return reserved - n;
}

INUSE_RACY static void inuse_small(struct inuse *u, struct segment *seg, struct heap *owner)
{
	uint64_t bytes = 0, blocks = 0, tails = 0;

	for (size_t idx = META_PAGES; idx < PAGES_PER_SEGMENT;) {
		struct page *pg = &seg->pages[idx];
		unsigned span = INUSE_READ(pg->span);
		uint32_t used, cap, tail, pending;
		unsigned bin;

		if (!span) {
			idx++;
			continue;
		}
		pending = xt_count(atomic_load_explicit(&pg->xthread, memory_order_relaxed));
		used = INUSE_READ(pg->used);
		cap = INUSE_READ(pg->capacity);
		if (PAGE_FIRST_UNCOUNTED && INUSE_READ(pg->uncounted)) {
			uint32_t reserved = INUSE_READ(pg->reserved);

			used = inuse_uncounted(pg, owner, reserved < cap ? reserved : cap);
		}
		bin = INUSE_READ(pg->bin);
		if (used > cap) /* a descriptor caught while it was set up for another span */
			used = cap;
		if (pending != XT_COUNT_UNKNOWN) /* freed, on the cross-thread list: not in use */
			used -= pending < used ? pending : used;
		bytes += (uint64_t)used * INUSE_READ(pg->block_size);
		blocks += used;
		tail = INUSE_READ(pg->purged_tail); /* not committed (core/purge.c, "span tails") */
		if (tail && tail < (uint64_t)span << SPAGE_SHIFT)
			tails += ((uint64_t)span << SPAGE_SHIFT) - tail;
		if (u->classes && bin < NBINS) {
			u->classes[bin].spans++;
			u->classes[bin].blocks += used;
			u->classes[bin].capacity += cap;
		}
		idx += span;
	}
	u->bytes += bytes;
	u->blocks += blocks;
	u->small_segments++;
	u->small_bytes += seg->size;
	if (u->only)
		u->committed +=
			seg->size - tails -
			((uint64_t)__builtin_popcountll(INUSE_READ(seg->purged_pages))
			 << SPAGE_SHIFT);
	if (u->gen && inuse_is_heap(owner)) {
		inuse_sample_add(&owner->stats.sample_bytes, u->gen, bytes);
		inuse_sample_add(&owner->stats.sample_blocks, u->gen, blocks);
	}
}

INUSE_RACY static void inuse_large(struct inuse *u, struct segment *seg)
{
	struct heap *heap = INUSE_READ(seg->large_heap);
	uint64_t size = INUSE_READ(seg->large_size);

	u->bytes += size;
	u->blocks++;
	u->large_blocks++;
	u->large_bytes += size;
	if (u->only)
		u->committed += seg->size;
	if (u->gen && inuse_is_heap(heap)) {
		inuse_sample_add(&heap->stats.sample_bytes, u->gen, size);
		inuse_sample_add(&heap->stats.sample_blocks, u->gen, 1);
	}
}

INUSE_RACY static void inuse_segment(struct sync_node *n, void *arg)
{
	struct inuse *u = arg;
	struct segment *seg =
		(struct segment *)((uint8_t *)n - __builtin_offsetof(struct segment, reg));

	if (seg->kind == SEG_SMALL) {
		struct heap *owner = atomic_load_explicit(&seg->owner, memory_order_relaxed);

		if (!u->only || owner == u->only)
			inuse_small(u, seg, owner);
	} else if (seg->kind == SEG_LARGE &&
		   atomic_load_explicit(&seg->large_live, memory_order_relaxed) &&
		   (!u->only || INUSE_READ(seg->large_heap) == u->only)) {
		inuse_large(u, seg);
	}
}

/*
 * Take off one heap's blocks that a policy keeps (counted as used by their pages): from the
 * totals, the size classes and the heap's sample.
 */
static void inuse_unheld(struct heap *h, void *arg)
{
	struct inuse *u = arg;
	uint64_t counts[NBINS] = { 0 }, bytes = 0, blocks = 0;

	if (u->only && h != u->only)
		return;
	sefer__policy_held_all(h, counts);
	for (unsigned bin = 0; bin < NBINS; bin++) {
		if (!counts[bin])
			continue;
		blocks += counts[bin];
		bytes += counts[bin] * bin_block_size(bin);
		if (u->classes)
			u->classes[bin].blocks -= counts[bin];
	}
	/* two snapshots of a running heap: never below zero */
	u->bytes -= bytes < u->bytes ? bytes : u->bytes;
	u->blocks -= blocks < u->blocks ? blocks : u->blocks;
	if (u->gen && blocks) {
		inuse_sample_add(&h->stats.sample_bytes, u->gen, -bytes);
		inuse_sample_add(&h->stats.sample_blocks, u->gen, -blocks);
	}
}

void sefer__inuse_walk(struct inuse *u)
{
	struct heap *only = u->only;
	struct class_use *classes = u->classes;
	uint64_t gen = u->gen;

	__builtin_memset(u, 0, sizeof(*u));
	u->only = only;
	u->classes = classes;
	u->gen = gen;
	sefer__sync_registry_walk(inuse_segment, u);
	if (policy_keeps_small_blocks())
		sefer__heap_visit_all(inuse_unheld, u);
}

static void inuse_fold_heap(struct heap *h, void *arg)
{
	uint64_t gen = *(uint64_t *)arg;
	uint64_t b = atomic_load_explicit(&h->stats.sample_bytes, memory_order_relaxed);
	uint64_t n = atomic_load_explicit(&h->stats.sample_blocks, memory_order_relaxed);

	if (b >> INUSE_GEN_SHIFT == gen)
		inuse_peak_raise(&h->stats.peak_bytes, b & INUSE_SUM_MASK);
	if (n >> INUSE_GEN_SHIFT == gen)
		inuse_peak_raise(&h->stats.peak_blocks, n & INUSE_SUM_MASK);
}

void sefer__inuse_sample(struct inuse *u)
{
	/* generations 1..65535: 0 marks a walk that feeds no heap's peak */
	uint64_t gen =
		atomic_fetch_add_explicit(&inuse_sample_gen, 1, memory_order_relaxed) % 0xffff + 1;

	u->only = NULL;
	u->gen = gen;
	sefer__inuse_walk(u);
	if (!IS_ENABLED(CONFIG_STATS))
		return;
	stat_max(&sefer__gstats.inuse_peak_bytes, (long long)u->bytes);
	stat_max(&sefer__gstats.inuse_peak_blocks, (long long)u->blocks);
	sefer__heap_visit_all(inuse_fold_heap, &gen);
}

/* sefer__inuse_grown()'s sample, out of its line: the hot text's, where the walk is. */
static noinline void inuse_sample_grown(void)
{
	struct inuse u = {0};

	sefer__inuse_sample(&u);
}

/* The least step of sefer__inuse_grown()'s samples. */
#define INUSE_STEP_MIN ((long long)SEGMENT_SIZE)

/*
 * The bound in use lies under: the bytes of the small blocks carved (in use or free) and of
 * the large segments mapped. Blocks are carved 4 KiB at a time when a page has no free block,
 * so the bound grows just ahead of what is in use, and stays put while freed blocks are reused.
 * The committed bytes it replaced grew a segment at a time, and a set's first segment took no
 * sample: a process whose threads had a segment each (threadgen) was never sampled, and its
 * peak read what the exit's query saw. The bytes of the spans taken grew ahead of use as well,
 * by a span's uncarved room, and came back after each thread's exit: tgstress sampled at each
 * step of that (80 samples in 0.25 s, 3% of its time in the walks, perf record).
 */
static long long inuse_bound(void)
{
	return atomic_load_explicit(&sefer__gstats.carved_bytes, memory_order_relaxed) +
	       (long long)atomic_load_explicit(&sefer__large_mapped, memory_order_relaxed);
}

void sefer__inuse_grown(void)
{
	long long bound, last, peak, step;

	if (!IS_ENABLED(CONFIG_STATS))
		return;
	bound = inuse_bound();
	last = atomic_load_explicit(&sefer__gstats.sampled_bound, memory_order_relaxed);
	peak = atomic_load_explicit(&sefer__gstats.inuse_peak_bytes, memory_order_relaxed);
	if (bound < last) { /* shrank since: count the next step from here */
		atomic_compare_exchange_strong_explicit(&sefer__gstats.sampled_bound, &last, bound,
							memory_order_relaxed, memory_order_relaxed);
		return;
	}
	/* a step past the last sample, and room for a peak a step above the one known */
	step = bound / 16 > INUSE_STEP_MIN ? bound / 16 : INUSE_STEP_MIN;
	if (bound - (last > peak ? last : peak) < step)
		return;
	/* one sampler per step; the others go on */
	if (atomic_compare_exchange_strong_explicit(&sefer__gstats.sampled_bound, &last, bound,
						    memory_order_relaxed, memory_order_relaxed))
		inuse_sample_grown();
}
