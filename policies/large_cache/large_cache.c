// SPDX-License-Identifier: MIT
/*
 * large_cache: freed large segments kept, pages committed, for the next large request.
 *
 * Invariants (per heap, owner thread only, no lock):
 *  - every cached segment is a SEG_LARGE segment still registered in the segment table, with
 *    large_live == 0 (so a second free of its old block is still reported as a double free);
 *  - head..tail links them oldest first through seg->next/prev; bytes is the sum of their
 *    seg->size and never exceeds large_cache_opt.budget after a call returns;
 *  - cached_total is the bytes of every heap's cache but each heap's tail: a heap publishes
 *    its newest segment (unpublished holds its size) only when a newer one joins it, and a
 *    segment that leaves as the tail was never published. So a thread that frees a buffer and
 *    asks for one again writes no shared cache line (two threads doing that with 4 MiB ran at
 *    a third of one thread's rate when every free and hit wrote this counter and the core's
 *    count of live bytes). A heap's own tests add its tail back (cached_view);
 *  - admission: after a free, the bytes cached by all heaps as the freeing heap sees them
 *    (cached_view) are at most max(headroom, live / LIVE_SHARE), live being the mapped large
 *    bytes not published as cached (sefer_large_mapped - cached_total): the freeing heap evicts
 *    its oldest until they are, but always keeps its newest segment. All caches together so
 *    hold at most that bound plus one segment per heap (the others' tails). The cache holds
 *    what a program of that size may soon ask for again, not a second copy of its peak (a
 *    window of replaced 5-25 MiB buffers kept 1.2x mimalloc's peak RSS under the old rule, a
 *    per-heap cache bounded by the headroom only). A miss, after which the core maps the
 *    request anew, first evicts the heap's oldest until cached_view + the request fit that
 *    bound;
 *  - a segment is reused as it is only for a request with size <= usable <= 2 * size, or (at
 *    the default alignment) with usable - size <= HIT_SLACK and usable <= REGROW_ROOM times
 *    the room of a segment mapped for the request (fits_as_is), where usable is what the segment
 * offers at the request's alignment (the block is re-placed): a buffer that a program regrows by
 * realloc from a fraction of its last size gets its old pages back to grow into, where a shrink and
 * a regrowth would fault them in again (sqlite3's sorter: 128 KiB -> 256 KiB -> 512 KiB, freed, and
 * again), at most HIT_SLACK unused per block; when none is, the core resizes one where it can
 * (segment_resize_large: its pages move, a shrink gives the rest back), which leaves the cache like
 * a hit (resize_one);
 *  - a realloc growing a block (large_regrow) takes the smallest segment with
 *    size <= usable <= REGROW_ROOM * size: the block grows into the rest without a fault, and
 *    at most REGROW_ROOM - 1 parts in REGROW_ROOM of what the cache held stay mapped unused
 *    while the program does not grow it further;
 *  - decay: while bytes > headroom, every whole 100 ms since decay_ms shrinks the excess
 *    over headroom by 0.9^(1/10) (10% per second) and evicts oldest first down to it. The
 *    clock is read only while bytes > headroom, so the common case costs no clock call. A
 *    free into an empty cache that takes it over the headroom does not read it either: the
 *    cache's next call (alloc, free, collect) starts the clock (DECAY_PENDING), and an alloc
 *    decays after its hit, on what stays cached. So a thread that frees a block larger than
 *    the headroom and asks for it again reads no clock; a single segment left cached so
 *    outlives its free by the time to the next call plus 100 ms, the one difference;
 *  - expiry: a segment that stays cached, unused, for the heap's purge delay (the small pages'
 *    SEFER_PURGE_DELAY_MS with the heap's backoff, core/purge.c) is released, under the
 *    headroom too: aging passes (expire) run at the owner's heartbeat while the cache holds
 *    any (heap_keep_aging: every 64th slow path that takes no span, core/heap.h), at
 *    collect(h, false) and before a miss maps. A segment's age counts from the first pass
 *    that saw it cached (seg->large_cached_ms, 0 until then; a segment appended starts at
 *    0), so a free and a hit read no clock and a segment goes one to two passes' spacing
 *    past a delay after its free. Stamps are non-decreasing from head to tail, zeros last. A
 *    miss soon after an expiry, for a request the released segment could have served (at most
 *    twice its size), raises the heap's purge delay as a span taking slots purged too soon
 *    does (expired_wanted; core/purge.c, "purge backoff"): a program that asks for its buffer
 *    every 60 ms loses it once, not every time;
 *  - a segment freed by a thread other than the one whose heap allocated it (seg->large_heap)
 *    is handed back to that heap: pushed on its inbox with one CAS (no lock), taken into the
 *    FIFO by the owner at its next large request, collect (its heartbeat's too: the freeing
 *    thread asks for it, heap_keep_aging) or exit. The inbox holds at most
 *    budget bytes (inbox_bytes; a push beyond it is refused);
 *  - the inbox lives in policy_heap_remote, which heap reuse does not reset, because a freeing
 *    thread may reach a heap through a stale large_heap: heap_exit closes it (exchange with
 *    LC_INBOX_CLOSED, releasing what was in it), a push to a closed inbox is refused, and the
 *    heap's next owner reopens it at its first large request, before it owns any large block;
 *  - a segment that is neither handed back nor cached by a thread with a live heap (a free
 *    from a thread that never allocated, or during thread teardown), or is freed after the
 *    process-exit destructor ran, is released at once. heap_exit and the destructor release
 *    everything;
 *  - a parked heap (core/heap.c) keeps its cached segments for its next owner (heap_park,
 *    the inbox closed); the core releases them (heap_exit) when the purge delay of memory no
 *    thread owns has passed, or when it dismantles the heap, if no thread took it over first.
 *    Whoever holds the parked heap (a purge pass) acts as its owner.
 *
 * Decay toward "live + headroom": the live large bytes are not part of the cache, so bounding
 * live + cached by live + headroom is bounding cached by headroom.
 */
#include <stdatomic.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/heap.h"
#include "core/large.h"
#include "core/options.h"
#include "core/purge.h"
#include "core/stats.h"
#include "sefer/os.h"

#define DECAY_STEP_MS 100
#define DECAY_KEEP_16 64849 /* 0.9^(1/10) * 65536: 10% per second in 100 ms steps */
#define DECAY_MAX_STEPS 600 /* a minute: the excess is gone */
#define LIVE_SHARE 64	    /* the caches may hold 1/64 of the live large bytes beyond headroom */
#define REGROW_ROOM 4	    /* large_regrow hands out at most 4 times the request */
#define SPARE_RATIO 16	    /* a segment over 16 times a request is not shrunk for it */
#define HIT_SLACK ((size_t)1 << 20) /* a hit over twice a request leaves at most 1 MiB unused */

/* decay_ms of a cache over the headroom whose clock the next call starts (the invariants) */
#define DECAY_PENDING UINT64_MAX

SEFER_INTERNAL struct large_cache_options sefer__large_cache_opt;

/* Read at process init with the core's (core/options.h); sefer(7)'s text, from this source. */
SEFER_INTERNAL struct sefer_option sefer__large_cache_options[LARGE_CACHE_OPTIONS + 1] = {
	{
		.name = "LARGE_CACHE_BUDGET",
		.type = OPT_SIZE,
		.secure = OPT_SECURE_LOWER,
		.value.u = &sefer__large_cache_opt.budget,
		.def = UINT64_MAX,
		.min = 0,
		.max = UINT64_MAX,
		.help = "Bytes of freed large blocks (over 128 KiB) one heap may keep for reuse. "
			"A freed block larger than the budget is unmapped at once; otherwise the "
			"oldest cached blocks are released until the cache fits.",
		.doc_default = "unbounded",
		.needs = "CONFIG_POLICY_LARGE_CACHE",
		.example = "SEFER_LARGE_CACHE_BUDGET=256M ./image-server",
	},
	{
		.name = "LARGE_CACHE_HEADROOM",
		.type = OPT_SIZE,
		.secure = OPT_SECURE_LOWER,
		.value.u = &sefer__large_cache_opt.headroom,
		.def = 16777216,
		.min = 0,
		.max = UINT64_MAX,
		.help = "Cached bytes, all threads together, above which the large cache decays (by "
			"10% a second, oldest first) and admits no more than 1/64 of the bytes of "
			"the large blocks in use.",
		.needs = "CONFIG_POLICY_LARGE_CACHE",
		.example = "SEFER_LARGE_CACHE_HEADROOM=0 ./tool "
			   "`(keep only what the live large blocks justify)`",
	},
	{ .name = NULL },
};

SEFER_INTERNAL uint64_t (*sefer__large_cache_clock)(void);

static atomic_bool closed;
static atomic_size_t cached_total; /* bytes in every heap's cache (not in inboxes) */
static atomic_ullong done_hits, done_misses, done_evictions, done_expired, done_handoffs,
	done_resizes, done_regrows; /* exited heaps' counts */

#define LC_INBOX_CLOSED ((struct segment *)1)

static uint64_t now_ms(void)
{
	return sefer__large_cache_clock ? sefer__large_cache_clock() : sefer__os.clock_ms();
}

size_t sefer__large_cache_published(void)
{
	return atomic_load_explicit(&cached_total, memory_order_relaxed);
}

/* The bytes of every heap's cache as far as c's heap knows: the published ones and its own tail. */
static size_t cached_view(const struct large_cache_heap *c)
{
	return sefer__large_cache_published() + c->unpublished;
}

static always_inline void unlink_seg(struct large_cache_heap *c, struct segment *s)
{
	if (!s->next && c->unpublished) /* the tail, never published */
		c->unpublished = 0;
	else
		atomic_fetch_sub_explicit(&cached_total, s->size, memory_order_relaxed);
	if (s->prev)
		s->prev->next = s->next;
	else
		c->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		c->tail = s->prev;
	s->next = s->prev = NULL;
	c->bytes -= s->size;
	c->count--;
}

static always_inline void append(struct large_cache_heap *c, struct segment *s)
{
	s->next = NULL;
	s->large_cached_ms = 0; /* unused from now: the next aging pass stamps it */
	s->prev = c->tail;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
	c->bytes += s->size;
	c->count++;
	/* the old tail is no longer the newest: publish it; s waits until it is not either */
	if (c->unpublished)
		atomic_fetch_add_explicit(&cached_total, c->unpublished, memory_order_relaxed);
	c->unpublished = s->size;
}

static void release_oldest(struct large_cache_heap *c)
{
	struct segment *s = c->head;

	unlink_seg(c, s);
	sefer__segment_release(s);
}

static void evict_oldest(struct large_cache_heap *c)
{
	release_oldest(c);
	c->evictions++;
}

/*
 * An aging pass (the invariants, "expiry"): release what stayed cached for h's purge delay
 * since a pass first saw it, stamp what no pass saw yet. Reads the clock only when something is
 * cached and the delay is not "never" (returns it, else 0); asks for the next pass while
 * something stays.
 */
static uint64_t expire(struct heap *h, struct large_cache_heap *c)
{
	uint64_t delay = sefer__purge_delay(&h->segments), now;
	struct segment *s;

	if (!c->count || delay_is_never(delay))
		return 0;
	now = now_ms();
	size_t largest = 0;

	while ((s = c->head) && s->large_cached_ms && now >= s->large_cached_ms + delay) {
		if (s->size > largest)
			largest = s->size;
		release_oldest(c);
		c->expired++;
	}
	if (largest) { /* expired_wanted's: this pass released some */
		c->expired_ms = now;
		c->expired_size = largest;
	}
	for (s = c->tail; s && !s->large_cached_ms; s = s->prev)
		s->large_cached_ms = now ? now : 1;
	if (c->count)
		heap_keep_aging(h);
	return now;
}

/*
 * A miss for size bytes, after the last aging pass released a segment of up to twice that: it
 * was released too soon (the backoff rule of the small pages' slots: core/purge.c, "purge
 * backoff"), and the heap's purge delay, which ages the cache too, rises. Once per expiry.
 */
static void expired_wanted(struct heap *h, struct large_cache_heap *c, size_t size, uint64_t now)
{
	if (!c->expired_ms || size > 2 * c->expired_size)
		return;
	sefer__purge_backoff_wanted(&h->segments, c->expired_ms, now ? now : now_ms());
	c->expired_ms = 0;
}

static uint64_t shrink(uint64_t excess, uint64_t steps)
{
	if (steps >= DECAY_MAX_STEPS)
		return 0;
	while (steps--)
		excess = (excess >> 16) * DECAY_KEEP_16 + ((excess & 0xffff) * DECAY_KEEP_16 >> 16);
	return excess;
}

/* decay() over the headroom: reads the clock. */
static noinline void decay_over(struct large_cache_heap *c)
{
	uint64_t headroom = sefer__large_cache_opt.headroom, now, steps;

	now = now_ms();
	if (!c->decay_ms || now < c->decay_ms) { /* DECAY_PENDING included */
		c->decay_ms = now ? now : 1;
		return;
	}
	steps = (now - c->decay_ms) / DECAY_STEP_MS;
	if (!steps)
		return;
	c->decay_ms += steps * DECAY_STEP_MS;

	uint64_t target = headroom + shrink(c->bytes - headroom, steps);

	while (c->bytes > target)
		evict_oldest(c);
	if (c->bytes <= headroom)
		c->decay_ms = 0;
}

/* Lazy decay of the bytes above headroom (see the invariants). */
static always_inline void decay(struct large_cache_heap *c)
{
	if (c->bytes <= sefer__large_cache_opt.headroom)
		c->decay_ms = 0;
	else
		decay_over(c);
}

/* Another thread frees s, which `owner` allocated: push it on owner's inbox. */
static bool hand_back(struct heap *owner, struct segment *s)
{
	struct large_cache_remote *r = &owner->policy_remote.large_cache;
	struct segment *head;

	/* s->size <= budget (checked by the caller), so this cannot wrap */
	if (atomic_fetch_add_explicit(&r->inbox_bytes, s->size, memory_order_relaxed) >
	    sefer__large_cache_opt.budget - s->size)
		goto refused;
	head = atomic_load_explicit(&r->inbox, memory_order_relaxed);
	do {
		if (head == LC_INBOX_CLOSED)
			goto refused;
		s->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&r->inbox, &head, s, memory_order_release,
							memory_order_relaxed));
	heap_keep_aging(owner); /* its heartbeat takes the inbox, and ages what it took */
	return true;
refused:
	atomic_fetch_sub_explicit(&r->inbox_bytes, s->size, memory_order_relaxed);
	return false;
}

/* take_handoffs() with something in the inbox, s its head. */
static noinline void take_inbox(struct heap *h, struct segment *s)
{
	struct large_cache_remote *r = &h->policy_remote.large_cache;
	struct large_cache_heap *c = &h->policy.large_cache;

	if (s == LC_INBOX_CLOSED) {	/* only the owner changes a closed inbox */
		atomic_store_explicit(&r->inbox, NULL, memory_order_relaxed);
		return;
	}
	s = atomic_exchange_explicit(&r->inbox, NULL, memory_order_acquire);
	while (s) {
		struct segment *next = s->next;

		atomic_fetch_sub_explicit(&r->inbox_bytes, s->size, memory_order_relaxed);
		append(c, s);
		c->handoffs++;
		s = next;
	}
	while (c->bytes > sefer__large_cache_opt.budget)
		evict_oldest(c);
	heap_keep_aging(h);
}

/* Owner: move the inbox into the FIFO (a reused heap's closed inbox is reopened instead). */
static always_inline void take_handoffs(struct heap *h)
{
	struct segment *s =
		atomic_load_explicit(&h->policy_remote.large_cache.inbox, memory_order_relaxed);

	if (s)
		take_inbox(h, s);
}

/*
 * What all caches together may hold: max(headroom, live large bytes / LIVE_SHARE), the live
 * bytes being the mapped ones not in a cache (the unpublished tails and the inboxes count as
 * live: at most one segment per heap, and a 64th of it).
 */
static size_t cache_cap(void)
{
	size_t mapped = atomic_load_explicit(&sefer__large_mapped, memory_order_relaxed);
	size_t cached = sefer__large_cache_published();
	size_t live = (mapped > cached ? mapped - cached : 0) / LIVE_SHARE;

	return live > sefer__large_cache_opt.headroom ? live
						      : (size_t)sefer__large_cache_opt.headroom;
}

/*
 * Is s, cached, too big to be cut down to a request of size bytes? Shrinking it would give
 * back pages a growing block could take without a fault (large_cache_regrow): a vector that
 * grows to 32 MiB, is freed and starts again at 256 KiB keeps its old segment for its next
 * doublings rather than the first one cutting it to 256 KiB.
 */
static bool spared_for_regrow(const struct segment *s, size_t size)
{
	return s->size / SPARE_RATIO > size;
}

/*
 * Is a cached segment offering `usable` bytes handed out as it is for a request of `size` at
 * block offset `off`? Against REGROW_ROOM it is weighed with the room a segment mapped for the
 * request would give (whole SPAGE_SIZE pages): a buffer regrown by doubling from a quarter of
 * its old size asks for a quarter of its old room less the rounding.
 */
static bool fits_as_is(size_t usable, size_t size, size_t off)
{
	if (usable < size)
		return false;
	if (usable - size <= size)
		return true;
	/* with guard pages a block ends where its request does: no room to grow into; an
	 * aligned block is not resized by realloc (large_resize), nor held to growing in place */
	return !IS_ENABLED(CONFIG_GUARD_PAGES) && off == large_block_offset(0) &&
	       usable - size <= HIT_SLACK &&
	       usable / REGROW_ROOM <= align_up(off + size, SPAGE_SIZE) - off;
}

/*
 * No cached segment fits `size` as it is: resize the one closest above it (a shrink gives the
 * least back), else the largest below (a growth faults in the least), keeping its pages
 * (segment_resize_large). NULL where the core cannot resize; the segment then stays cached.
 * A growth's new pages are fresh: *dirty is cut to the bytes of the block that were the old
 * segment's.
 */
static struct segment *resize_one(struct large_cache_heap *c, size_t size, size_t align,
				  size_t *dirty)
{
	struct segment *above = NULL, *below = NULL, *s, *r;

	for (s = c->head; s; s = s->next) {
		if (spared_for_regrow(s, size))
			continue;
		if (s->size >= size) {
			if (!above || s->size < above->size)
				above = s;
		} else if (!below || s->size > below->size) {
			below = s;
		}
	}
	s = above ? above : below;
	if (!s)
		return NULL;
	size_t old = s->size;

	unlink_seg(c, s);
	r = sefer__segment_resize_large(s, size, align);
	if (!r)
		append(c, s); /* back, as the newest: it was kept for a request and may be wanted */
	else if (r->size > old)
		*dirty = old - (size_t)(large_block(r) - (uint8_t *)r);
	return r;
}

/*
 * Take cached segment s for a request of size bytes at block offset off if it fits as it is
 * (fits_as_is) and its block can be placed: off the list, counted as a hit. The caller then
 * runs the decay on what stays: a segment handed out is no longer cached, and a cache emptied
 * by the hit reads no clock (a loop that frees and re-asks for one block larger than the
 * headroom).
 */
static always_inline bool take_if_fits(struct large_cache_heap *c, struct segment *s, size_t size,
				       size_t off)
{
	size_t usable = large_room(s, off);

	if (!usable || !fits_as_is(usable, size, off))
		return false;
	/* the block and, with CONFIG_GUARD_PAGES, its guard page (core/large.h) */
	if (!large_place(s, off, size))
		return false;
	unlink_seg(c, s); /* *dirty stays: the whole block */
	c->hits++;
	return true;
}

/* large_cache_alloc() past its common case: the inbox taken, every segment tried. */
static noinline struct segment *alloc_search(struct heap *h, size_t size, size_t align,
					     size_t *dirty)
{
	struct large_cache_heap *c = &h->policy.large_cache;
	size_t off = large_block_offset(align);

	take_handoffs(h);
	if (!c->count) {
		c->misses++; /* a request the cache could not serve, empty or not */
		expired_wanted(h, c, size, 0);
		return NULL;
	}
	/* Newest first: its pages are the most likely to be warm in the caches and TLB. */
	for (struct segment *s = c->tail; s; s = s->prev) {
		if (take_if_fits(c, s, size, off)) {
			decay(c);
			return s;
		}
	}
	decay(c);
	/* none fits as it is: move one's pages into a segment of the right size (on Linux) */
	struct segment *resized = resize_one(c, size, align, dirty);

	if (resized) {
		c->resizes++;
		return resized;
	}
	c->misses++;
	/* the core maps now: what aged out goes first (a clock read beside an mmap), and what aged
	 * out too soon raises the delay */
	expired_wanted(h, c, size, expire(h, c));
	/* The core maps `size` bytes now: the cache gives way first, so a program that frees a
	 * buffer and asks for a bigger one peaks at live + the larger of the two, not both. The
	 * newest segment stays if it is spared for a regrow (decay still ages it out). */
	while (c->count && cached_view(c) + size > cache_cap()) {
		if (c->count == 1 && spared_for_regrow(c->tail, size))
			break;
		evict_oldest(c);
	}
	return NULL;
}

/* s, just taken from c, is handed out after the decay ran on what stays over the headroom. */
static noinline struct segment *decay_and_hand_out(struct large_cache_heap *c, struct segment *s)
{
	decay_over(c);
	return s;
}

/*
 * The common case inline (nothing handed back, the newest segment fits as it is: a thread
 * that frees a block and asks for one of its size again), with no call; the rest in
 * alloc_search.
 */
struct segment *sefer__large_cache_alloc(struct heap *h, size_t size, size_t align, size_t *dirty)
{
	struct large_cache_heap *c = &h->policy.large_cache;
	struct segment *newest = c->tail;

	if (unlikely(atomic_load_explicit(&h->policy_remote.large_cache.inbox,
					  memory_order_relaxed)) ||
	    !newest || !take_if_fits(c, newest, size, large_block_offset(align)))
		return alloc_search(h, size, align, dirty);
	if (c->bytes > sefer__large_cache_opt.headroom)
		return decay_and_hand_out(c, newest);
	c->decay_ms = 0;
	return newest;
}

struct segment *sefer__large_cache_regrow(struct heap *h, size_t size)
{
	struct large_cache_heap *c = &h->policy.large_cache;
	size_t off = large_block_offset(0), best_room = 0;
	struct segment *best = NULL;

	/* with guard pages a block ends where its request does: no room to grow into */
	if (IS_ENABLED(CONFIG_GUARD_PAGES))
		return NULL;
	take_handoffs(h);
	if (!c->count)
		return NULL;
	decay(c);
	for (struct segment *s = c->tail; s; s = s->prev) {
		size_t room = large_room(s, off);

		if (room >= size && room / REGROW_ROOM <= size && (!best || room < best_room)) {
			best = s;
			best_room = room;
		}
	}
	if (!best || !large_place(best, off, size))
		return NULL;
	unlink_seg(c, best);
	c->regrows++;
	return best;
}

/* large_cache_free() of s, this heap's, into a cache that holds some already. */
static noinline bool free_into_cache(struct large_cache_heap *c, struct segment *s)
{
	append(c, s);
	while (c->bytes > sefer__large_cache_opt.budget)
		evict_oldest(c);
	while (c->count > 1 && cached_view(c) > cache_cap())
		evict_oldest(c);
	decay(c);
	return true;
}

bool sefer__large_cache_free(struct heap *h, struct segment *s)
{
	struct large_cache_heap *c = &h->policy.large_cache;
	struct heap *owner = s->large_heap;

	if (atomic_load_explicit(&closed, memory_order_relaxed) ||
	    s->size > sefer__large_cache_opt.budget)
		return false;
	if (unlikely(owner != h) && owner && owner != &sefer__heap_empty && hand_back(owner, s))
		return true;
	if (h == &sefer__heap_empty || !h->segments.live)
		return false;
	heap_keep_aging(h); /* the heartbeat ages what is cached from now */
	if (c->count)
		return free_into_cache(c, s);
	/* The common case (a block freed after a hit emptied the cache): s alone, the newest, is
	 * admitted whatever its size (s->size <= budget); over the headroom its excess starts
	 * now, and the cache's next call reads the clock. */
	append(c, s);
	c->decay_ms = c->bytes > sefer__large_cache_opt.headroom ? DECAY_PENDING : 0;
	return true;
}

/* Close h's inbox, releasing what it held (heap_exit, heap_park). */
static void inbox_close(struct heap *h)
{
	struct large_cache_remote *r = &h->policy_remote.large_cache;
	struct segment *s = atomic_exchange_explicit(&r->inbox, LC_INBOX_CLOSED,
						     memory_order_acquire);

	while (s && s != LC_INBOX_CLOSED) {	/* closed already: a second teardown */
		struct segment *next = s->next;

		atomic_fetch_sub_explicit(&r->inbox_bytes, s->size, memory_order_relaxed);
		sefer__segment_release(s);
		s = next;
	}
}

/*
 * The heap is parked for the next thread to take over (core/heap.c): its cached segments stay
 * for that thread's large requests (a thread generation's fresh threads ask for the buffers
 * the last one freed: tgstress's 800 KiB arrays missed every time when the cache went with
 * its thread, Documentation/benchmarks.rst), until the core releases them (heap_exit) at the
 * purge delay of memory no thread owns or at the heap's dismantling. The inbox closes as at
 * exit; the next owner reopens it at its first large request.
 */
bool sefer__large_cache_heap_park(struct heap *h)
{
	inbox_close(h);
	return h->policy.large_cache.count != 0;
}

void sefer__large_cache_heap_exit(struct heap *h)
{
	struct large_cache_heap *c = &h->policy.large_cache;

	inbox_close(h);
	while (c->head)
		evict_oldest(c);
	atomic_fetch_add_explicit(&done_hits, c->hits, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_misses, c->misses, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_evictions, c->evictions, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_expired, c->expired, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_handoffs, c->handoffs, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_resizes, c->resizes, memory_order_relaxed);
	atomic_fetch_add_explicit(&done_regrows, c->regrows, memory_order_relaxed);
	c->hits = c->misses = c->evictions = c->expired = c->handoffs = c->resizes = c->regrows = 0;
	c->decay_ms = c->expired_ms = 0;
	c->expired_size = 0;
}

/*
 * sefer_collect() and the owner's heartbeat (heap_keep_aging): force empties the cache (counted
 * as evictions), else the decay and an aging pass run now.
 */
void sefer__large_cache_collect(struct heap *h, bool force)
{
	struct large_cache_heap *c = &h->policy.large_cache;

	take_handoffs(h);
	if (!force) {
		decay(c);
		expire(h, c);
		return;
	}
	while (c->head)
		evict_oldest(c);
	c->decay_ms = 0;
}

/*
 * Process exit: release the exiting thread's cache and cache nothing from now on (frees from
 * later destructors go straight back to the OS). Other threads' heaps are theirs to touch;
 * the OS takes their memory with the process.
 */
__attribute__((destructor)) static void large_cache_exit(void)
{
	struct heap *h = heap_get();

	atomic_store_explicit(&closed, true, memory_order_relaxed);
	if (h != &sefer__heap_empty)
		sefer__large_cache_heap_exit(h);
}

struct lc_sum {
	unsigned long long hits, misses, evictions, expired, handoffs, resizes, regrows, bytes, count;
};

static void add_heap(struct heap *h, void *arg)
{
	struct lc_sum *sum = arg;
	const struct large_cache_heap *c = &h->policy.large_cache;

	sum->hits += c->hits;
	sum->misses += c->misses;
	sum->evictions += c->evictions;
	sum->expired += c->expired;
	sum->handoffs += c->handoffs;
	sum->resizes += c->resizes;
	sum->regrows += c->regrows;
	sum->bytes += c->bytes;
	sum->count += c->count;
}

void sefer__large_cache_print_stats(void)
{
	struct lc_sum sum = {
		atomic_load(&done_hits), atomic_load(&done_misses), atomic_load(&done_evictions),
		atomic_load(&done_expired), atomic_load(&done_handoffs), atomic_load(&done_resizes),
		atomic_load(&done_regrows), 0, 0,
	};

	sefer__heap_visit_all(add_heap, &sum);
	sefer__message("large_cache: hits %llu, resized %llu, regrown %llu, misses %llu, evictions "
		      "%llu, expired %llu, handed back %llu, cached %llu KiB in %llu", sum.hits,
		      sum.resizes, sum.regrows, sum.misses, sum.evictions, sum.expired, sum.handoffs,
		      sum.bytes >> 10, sum.count);
}
