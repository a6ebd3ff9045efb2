// SPDX-License-Identifier: MIT
/*
 * The stats printout: SEFER_SHOW_STATS=1 (a table), 2 (the table and the size classes), json
 * (one JSON object), and sefer_stats_print() for a program that wants either.
 *
 * Every figure is taken first (one sample, core/inuse.c, and the process's own figures), then
 * printed line by line through sefer's own formatter into a stack buffer. To stderr (fp NULL,
 * and at exit) the lines go out through the backend's write_err: nothing is allocated, so the
 * printout can run from a destructor while the program's heaps are torn down. A FILE goes
 * through stdio, which may allocate its buffer after the figures were taken.
 */
#include <stdarg.h>

#include "core/error.h"
#include "core/heap.h"
#include "core/stats.h"
#include "sefer.h"
#include "sefer/os.h"

struct stats_sink {
	FILE *fp;
	bool json;
	unsigned items; /* JSON members written in the current object */
};

static __sefer_printf(2, 3) void stats_out(struct stats_sink *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	size_t n = 0;

	va_start(ap, fmt);
	sefer__vformat(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	while (buf[n])
		n++;
	if (s->fp)
		fputs(buf, s->fp);
	else
		sefer__os.write_err(buf, n);
}

/* "12.3 MiB": bytes in the largest binary unit that keeps the number at least 1 */
struct stats_human {
	char s[24];
};

static struct stats_human stats_human(uint64_t v)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	struct stats_human h;
	unsigned u = 0;
	uint64_t scale = 1;

	while (u + 1 < sizeof(unit) / sizeof(unit[0]) && v / scale >= 1024) {
		scale <<= 10;
		u++;
	}
	if (!u)
		sefer__format(h.s, sizeof(h.s), "%llu B", (unsigned long long)v);
	else
		sefer__format(h.s, sizeof(h.s), "%llu.%llu %s", (unsigned long long)(v / scale),
			      (unsigned long long)(v % scale * 10 / scale), unit[u]);
	return h;
}

/* "1.234 s" */
static struct stats_human stats_seconds(uint64_t ms)
{
	struct stats_human h;

	sefer__format(h.s, sizeof(h.s), "%llu.%llu%llu%llu s", (unsigned long long)(ms / 1000),
		      (unsigned long long)(ms / 100 % 10), (unsigned long long)(ms / 10 % 10),
		      (unsigned long long)(ms % 10));
	return h;
}

static void stats_table(struct stats_sink *s, const struct sefer_stats *st,
			const struct sefer_os_procinfo *p, const struct class_use *classes)
{
	stats_out(s, "sefer: stats of %s (pid %llu), %s\n", p->name[0] ? p->name : "?",
		  (unsigned long long)p->pid, sefer_version());
	if (p->have_elapsed && p->have_cpu)
		stats_out(s, "sefer:   time %s elapsed, %s CPU (%s user, %s system)\n",
			  stats_seconds(p->elapsed_ms).s,
			  stats_seconds(p->cpu_user_ms + p->cpu_sys_ms).s,
			  stats_seconds(p->cpu_user_ms).s, stats_seconds(p->cpu_sys_ms).s);
	stats_out(s, "sefer:                     now         peak\n");
	stats_out(s, "sefer:   in use     %12s %12s   %llu blocks (peak %llu)\n",
		  stats_human(st->in_use_bytes).s, stats_human(st->in_use_peak_bytes).s,
		  (unsigned long long)st->in_use_blocks,
		  (unsigned long long)st->in_use_peak_blocks);
	stats_out(
		s, "sefer:   committed  %12s %12s   %s of it free\n", stats_human(st->committed).s,
		stats_human(st->committed_peak).s,
		stats_human(st->committed > st->in_use_bytes ? st->committed - st->in_use_bytes : 0)
			.s);
	if (p->have_rss)
		stats_out(s, "sefer:   RSS        %12s %12s\n", stats_human(p->rss).s,
			  stats_human(p->rss_peak).s);
	else
		stats_out(s, "sefer:   RSS                 n/a          n/a\n");
	stats_out(s, "sefer:   segments   %12llu %12llu   %llu mapped in all\n",
		  (unsigned long long)st->segments, (unsigned long long)st->segments_peak,
		  (unsigned long long)st->segments_mapped);
	stats_out(s,
		  "sefer:   large blocks %llu (%s), cross-thread frees %llu, purged %s "
		  "(purge delay raised %llu times, last exits kept for the next threads %llu)\n",
		  (unsigned long long)st->large_blocks, stats_human(st->large_bytes).s,
		  (unsigned long long)st->xthread_frees, stats_human(st->purged).s,
		  (unsigned long long)st->purge_raises, (unsigned long long)st->handoffs_kept);
	stats_out(s,
		  "sefer:   heaps %llu made (first-class alive %llu, parked %llu, adopted %llu, "
		  "switched %llu), segments abandoned %llu, reclaimed %llu, lock waits yielded %llu\n",
		  (unsigned long long)st->threads, (unsigned long long)st->heaps,
		  (unsigned long long)st->heaps_parked, (unsigned long long)st->heaps_adopted,
		  (unsigned long long)st->heaps_switched,
		  (unsigned long long)st->abandoned, (unsigned long long)st->reclaimed,
		  (unsigned long long)st->lock_yields);
	if (IS_ENABLED(CONFIG_STATS_CALLS))
		stats_out(s, "sefer:   mallocs %llu, frees %llu, large %llu\n",
			  (unsigned long long)st->mallocs, (unsigned long long)st->frees,
			  (unsigned long long)st->large_allocs);
	else
		stats_out(s,
			  "sefer:   large allocations %llu (mallocs and frees are counted with "
			  "CONFIG_STATS_CALLS)\n",
			  (unsigned long long)st->large_allocs);
	if (!classes)
		return;
	stats_out(s, "sefer:   class  block size  spans   blocks in use  capacity        in use\n");
	for (unsigned b = 1; b < NBINS; b++)
		if (classes[b].spans)
			stats_out(s, "sefer:   %5u %11llu %6llu %15llu %9llu  %12s\n", b,
				  (unsigned long long)bin_block_size(b),
				  (unsigned long long)classes[b].spans,
				  (unsigned long long)classes[b].blocks,
				  (unsigned long long)classes[b].capacity,
				  stats_human(classes[b].blocks * bin_block_size(b)).s);
}

static void stats_member(struct stats_sink *s, const char *name, uint64_t v)
{
	stats_out(s, "%s\"%s\": %llu", s->items++ ? ", " : "", name, (unsigned long long)v);
}

/* A JSON string: quotes, backslashes and control characters escaped */
static void stats_member_str(struct stats_sink *s, const char *name, const char *v)
{
	char buf[160];
	size_t n = 0;

	for (; *v && n + 7 < sizeof(buf); v++) {
		unsigned char c = (unsigned char)*v;

		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			sefer__format(buf + n, 7, "\\u00%c%c", "0123456789abcdef"[c >> 4],
				      "0123456789abcdef"[c & 15]);
			n += 6;
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	stats_out(s, "%s\"%s\": \"%s\"", s->items++ ? ", " : "", name, buf);
}

static void stats_json(struct stats_sink *s, const struct sefer_stats *st,
		       const struct sefer_os_procinfo *p, const struct class_use *classes)
{
	stats_out(s, "{");
	stats_member_str(s, "version", sefer_version());
	stats_member(s, "pid", p->pid);
	stats_member_str(s, "program", p->name);
	if (p->have_elapsed)
		stats_member(s, "elapsed_ms", p->elapsed_ms);
	if (p->have_cpu) {
		stats_member(s, "cpu_user_ms", p->cpu_user_ms);
		stats_member(s, "cpu_system_ms", p->cpu_sys_ms);
	}
	if (p->have_rss) {
		stats_member(s, "rss", p->rss);
		stats_member(s, "rss_peak", p->rss_peak);
	}
#define M(f) stats_member(s, #f, st->f)
	M(in_use_bytes);
	M(in_use_blocks);
	M(in_use_peak_bytes);
	M(in_use_peak_blocks);
	M(committed);
	M(committed_peak);
	M(small_bytes);
	M(large_blocks);
	M(large_bytes);
	M(segments);
	M(segments_peak);
	M(segments_mapped);
	M(xthread_frees);
	M(large_allocs);
	M(mallocs);
	M(frees);
	M(purged);
	M(purge_raises);
	M(abandoned);
	M(reclaimed);
	M(threads);
	M(heaps);
	M(lock_yields);
	M(handoffs_kept);
	M(heaps_parked);
	M(heaps_adopted);
	M(heaps_switched);
#undef M
	stats_out(s, ", \"classes\": [");
	for (unsigned b = 1, first = 1; b < NBINS; b++) {
		if (!classes[b].spans)
			continue;
		stats_out(s, "%s{", first ? "" : ", ");
		first = 0;
		s->items = 0;
		stats_member(s, "class", b);
		stats_member(s, "block_size", bin_block_size(b));
		stats_member(s, "spans", classes[b].spans);
		stats_member(s, "blocks", classes[b].blocks);
		stats_member(s, "capacity", classes[b].capacity);
		stats_out(s, "}");
	}
	stats_out(s, "]}\n");
}

/* The OS's figures of the process, as far as the backend tells them (SEFER_OS_PROCINFO). */
static void procinfo_get(struct sefer_os_procinfo *p)
{
	__builtin_memset(p, 0, sizeof(*p));
	if (sefer__os.features & SEFER_OS_PROCINFO)
		sefer__os.procinfo(p);
}

SEFER_API void sefer_stats_print(FILE *fp, unsigned flags)
{
	struct class_use classes[NBINS];
	struct sefer_stats st;
	struct sefer_os_procinfo p;
	struct stats_sink s = {fp, (flags & SEFER_STATS_JSON) != 0, 0};

	__builtin_memset(classes, 0, sizeof(classes));
	sefer__stats_collect(&st, classes);
	procinfo_get(&p);
	if (s.json) {
		stats_json(&s, &st, &p, classes);
	} else {
		stats_table(&s, &st, &p, (flags & SEFER_STATS_CLASSES) ? classes : NULL);
		if (!fp)
			sefer__policy_print_stats_all(); /* through the error stream */
	}
	if (fp)
		fflush(fp);
}
