// SPDX-License-Identifier: MIT
/*
 * glibc's allocator introspection and tuning calls, answered from sefer's own figures
 * (CONFIG_MALLOC_FACE): mallinfo2, mallinfo, mallopt and malloc_info. Programs call them to
 * log their heap or to tune glibc; under sefer they get sefer's numbers and the tuning that
 * has a meaning here. Each field's meaning for sefer is in sefer(3).
 *
 * The figures come from one walk of the segment registry, which reads only what other
 * threads never change under a published segment (kind, size, owner, large_live), plus the
 * process-wide counters (committed bytes and their peak, without CONFIG_STATS zero), and the
 * bytes in use from a second walk over the spans (core/inuse.c). None of it allocates;
 * malloc_info's stdio may, after the walks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>

#include "core/heap.h"
#include "core/init.h"
#include "core/options.h"
#include "core/stats.h"
#include "sefer.h"

#define FACE __attribute__((visibility("default")))

struct face_figures {
	size_t small_segs, small_bytes; /* small-block segments mapped, and their bytes */
	size_t large_live, large_bytes; /* large blocks in use, and their segments' bytes */
	size_t large_free, free_bytes;	/* freed large segments the large_cache keeps */
	size_t committed, peak;		/* stats: committed bytes now and at most */
	size_t small_inuse;		/* bytes of small blocks in use (core/inuse.c) */
};

static void count_segment(struct sync_node *n, void *arg)
{
	struct face_figures *f = arg;
	struct segment *seg =
		(struct segment *)((uint8_t *)n - __builtin_offsetof(struct segment, reg));

	if (seg->kind != SEG_LARGE) {
		f->small_segs++;
		f->small_bytes += seg->size;
	} else if (atomic_load_explicit(&seg->large_live, memory_order_relaxed)) {
		f->large_live++;
		f->large_bytes += seg->size;
	} else {
		f->large_free++;
		f->free_bytes += seg->size;
	}
}

/* classes: NULL, or NBINS entries that receive the size classes' spans and blocks */
static void figures(struct face_figures *f, struct class_use *classes)
{
	struct sefer_stats st;

	__builtin_memset(f, 0, sizeof(*f));
	sefer__process_init();
	sefer__sync_registry_walk(count_segment, f);
	sefer__stats_collect(&st, classes);
	f->committed = (size_t)st.committed;
	f->peak = (size_t)st.committed_peak;
	/* glibc's uordblks leaves mmapped chunks to hblkhd: sefer's large blocks likewise */
	f->small_inuse = (size_t)(st.in_use_bytes - st.large_bytes);
}

/* Bytes of the small-block segments the OS backs now: committed less the large segments. */
static size_t small_committed(const struct face_figures *f)
{
	size_t large = f->large_bytes + f->free_bytes;

	if (!IS_ENABLED(CONFIG_STATS))
		return f->small_bytes; /* nothing counted: all of it, as far as we know */
	if (f->committed < large || f->committed - large > f->small_bytes)
		return f->small_bytes;
	return f->committed - large;
}

FACE struct mallinfo2 mallinfo2(void)
{
	struct face_figures f;
	struct mallinfo2 mi;

	figures(&f, NULL);
	mi.ordblks = f.small_segs;
	mi.smblks = 0;
	mi.hblks = f.large_live;
	mi.hblkhd = f.large_bytes;
	mi.usmblks = f.peak;
	mi.fsmblks = 0;
	mi.arena = small_committed(&f);
	mi.uordblks = f.small_inuse < mi.arena ? f.small_inuse : mi.arena;
	mi.fordblks = mi.arena - mi.uordblks;
	mi.keepcost = f.free_bytes;
	return mi;
}

static int clamp_int(size_t v)
{
	return v > INT_MAX ? INT_MAX : (int)v;
}

/* The old int-sized form: the same figures, saturated at INT_MAX instead of wrapped. */
FACE struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo mi;

	mi.arena = clamp_int(m2.arena);
	mi.ordblks = clamp_int(m2.ordblks);
	mi.smblks = clamp_int(m2.smblks);
	mi.hblks = clamp_int(m2.hblks);
	mi.hblkhd = clamp_int(m2.hblkhd);
	mi.usmblks = clamp_int(m2.usmblks);
	mi.fsmblks = clamp_int(m2.fsmblks);
	mi.uordblks = clamp_int(m2.uordblks);
	mi.fordblks = clamp_int(m2.fordblks);
	mi.keepcost = clamp_int(m2.keepcost);
	return mi;
}

static void set_purge_delay(uint64_t ms)
{
	sefer__option_store(sefer__option_find("PURGE_DELAY_MS"), ms, ORIGIN_API);
}

/* SEFER_PURGE_DELAY_MS as the environment (or the default) set it, before any mallopt. */
static uint64_t env_purge_delay(void)
{
	static uint64_t env = UINT64_MAX;

	if (__atomic_load_n(&env, __ATOMIC_RELAXED) == UINT64_MAX)
		__atomic_store_n(&env, sefer__opt.purge_delay_ms, __ATOMIC_RELAXED);
	return env;
}

/*
 * glibc's parameters, and Android's and sefer's own (include/sefer.h), set in the option table
 * as sefer_option_set sets them (their origin becomes "API"). Returns 1 when the parameter is
 * known and its value valid, 0 otherwise (glibc returns 1 for an unknown one).
 * Honoured:
 *   M_TRIM_THRESHOLD  < 0 (glibc: no trimming): empty pages are never purged, nor at thread
 *                     exits (core/purge.c, "thread generations"); 0: purged at
 *                     once; > 0: after the default delay (SEFER_PURGE_DELAY_MS)
 *   M_CHECK_ACTION    bit 1 (abort) set: SEFER_ON_ERROR=abort, clear: warn (sefer always
 *                     prints the report)
 *   M_PURGE, M_PURGE_ALL   give free memory back now (malloc_trim); the value is ignored
 *   M_DECAY_TIME      0: purge at once; otherwise the default delay (Android's on/off switch)
 *   SEFER_M_PURGE_DELAY_MS  the purge delay in milliseconds (>= 0)
 * Accepted and ignored, with glibc's checks on the value: M_MXFAST (0..160), M_TOP_PAD,
 * M_MMAP_THRESHOLD, M_MMAP_MAX (>= 0), M_PERTURB, M_ARENA_TEST and M_ARENA_MAX (> 0), and
 * the unused SVID M_NLBLKS, M_GRAIN and M_KEEP. sefer has no top pad, fixed size classes, a
 * heap per thread and no perturbation.
 */
FACE int mallopt(int param, int value)
{
	sefer__process_init(); /* before the environment is read, a setting would be overwritten */
	uint64_t env_delay = env_purge_delay();

	switch (param) {
	case M_TRIM_THRESHOLD:
		set_purge_delay(value < 0 ? PURGE_DELAY_NEVER : value == 0 ? 0 : env_delay);
		return 1;
	case M_CHECK_ACTION:
		sefer__option_store(sefer__option_find("ON_ERROR"),
				    (value & 2) ? ON_ERROR_ABORT : ON_ERROR_WARN, ORIGIN_API);
		return 1;
	case M_PURGE:
	case M_PURGE_ALL:
		sefer_collect(true);
		return 1;
	case M_DECAY_TIME:
		set_purge_delay(value == 0 ? 0 : env_delay);
		return 1;
	case SEFER_M_PURGE_DELAY_MS:
		if (value < 0)
			return 0;
		set_purge_delay((uint64_t)value);
		return 1;
	case M_MXFAST:
		return value >= 0 && (size_t)value <= 80 * sizeof(size_t) / 4;
	case M_TOP_PAD:
	case M_MMAP_THRESHOLD:
	case M_MMAP_MAX:
		return value >= 0;
	case M_ARENA_TEST:
	case M_ARENA_MAX:
		return value > 0;
	case M_PERTURB:
	case M_NLBLKS:
	case M_GRAIN:
	case M_KEEP:
		return 1;
	default:
		return 0;
	}
}

/*
 * glibc's XML report, with sefer's figures: one <heap> for the small-block segments of every
 * thread, whose <sizes> lists each size class's free blocks (carved or not) in its spans, the
 * large blocks as "mmap", and as "rest" those free blocks, the freed large segments the
 * large_cache keeps and the purged small-segment bytes.
 * options must be 0 (EINVAL otherwise, as glibc).
 */
FACE int malloc_info(int options, FILE *fp)
{
	struct face_figures f;
	struct class_use classes[NBINS];
	size_t used, purged, mapped, free_small = 0, nfree_small = 0;

	if (options != 0) {
		errno = EINVAL;
		return -1;
	}
	__builtin_memset(classes, 0, sizeof(classes));
	figures(&f, classes);
	used = small_committed(&f);
	purged = f.small_bytes - used;
	mapped = f.small_bytes + f.large_bytes + f.free_bytes;
	fprintf(fp, "<malloc version=\"1\">\n");
	fprintf(fp, "<heap nr=\"0\">\n<sizes>\n");
	/* glibc lists its free chunks by size: here the free blocks of each size class's spans */
	for (unsigned b = 1; b < NBINS; b++) {
		size_t bs = bin_block_size(b), nfree = classes[b].capacity - classes[b].blocks;

		if (!classes[b].spans)
			continue;
		fprintf(fp, "<size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
			b > 1 ? bin_block_size(b - 1) + 1 : 1, bs, nfree * bs, nfree);
		free_small += nfree * bs;
		nfree_small += nfree;
	}
	fprintf(fp, "</sizes>\n");
	fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
	fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
		nfree_small + f.large_free, free_small + purged + f.free_bytes);
	fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", used);
	fprintf(fp, "<system type=\"max\" size=\"%zu\"/>\n", f.peak);
	fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", f.small_bytes);
	fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", f.small_bytes);
	fprintf(fp, "</heap>\n");
	fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
	fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n",
		nfree_small + f.large_free, free_small + purged + f.free_bytes);
	fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", f.large_live,
		f.large_bytes);
	fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n",
		IS_ENABLED(CONFIG_STATS) ? f.committed : mapped);
	fprintf(fp, "<system type=\"max\" size=\"%zu\"/>\n", f.peak);
	fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n", mapped);
	fprintf(fp, "<aspace type=\"mprotect\" size=\"%zu\"/>\n", mapped);
	fprintf(fp, "</malloc>\n");
	return 0;
}
