// SPDX-License-Identifier: MIT
/* Run-time options: the core's table, the environment, SEFER_OPTIONS and the API (options.h). */
#include <errno.h>

#include "core/error.h"
#include "core/heap.h" /* the policies' hot bodies, which policy.h declares */
#include "core/init.h"
#include "core/options.h"
#include "core/policy.h"
#include "sefer/os.h"
#include "sefer.h"

SEFER_INTERNAL struct sefer_options sefer__opt;

/*
 * The core's options. Their help is sefer(7)'s text (scripts/genoptions.py): keep each field a
 * string literal or a plain number, as the script reads them from this source.
 */
static struct sefer_option core_options[] = {
	{
		.name = "SHOW_STATS",
		.type = OPT_CHOICE,
		.secure = OPT_SECURE_IGNORED,
		.value.c = &sefer__opt.show_stats,
		.def = 0,
		.choices = (const char *const[]){ "0", "1", "2", "json", NULL },
		.bool_words = true,
		.help = "With 1 (or yes, true, on), print a table of sefer's statistics on standard "
			"error at exit: a header with the program's name and pid, its elapsed and CPU "
			"time; bytes in use, committed and the process's RSS, now and at peak, in "
			"KiB/MiB/GiB; segments; large blocks, frees from other threads, purged bytes; "
			"heaps, abandoned and reclaimed segments, how often a thread waiting for one "
			"of sefer's internal locks gave its CPU away; calls served (with "
			"`CONFIG_STATS_CALLS`); and each policy's figures. With 2, the same and a table "
			"of the size classes in use (block size, pages, blocks in use, capacity). With "
			"json, one JSON object with the same figures (`sefer_stats_print`). The "
			"printout allocates nothing.",
		.needs = "CONFIG_STATS",
		.example = "SEFER_SHOW_STATS=1 ls",
	},
	{
		.name = "VERBOSE",
		.type = OPT_BOOL,
		.secure = OPT_SECURE_IGNORED,
		.value.b = &sefer__opt.verbose,
		.def = 0,
		.help = "With 1, list every option with its value and where the value came from "
			"(default, environment, SEFER_OPTIONS, API for `sefer_option_set` and "
			"`mallopt`, secure execution for a value it refused) at start, then report "
			"initialisation (the backend, segment and page sizes, NUMA nodes) and every "
			"segment mapped and released, on standard error. "
			"Meant for debugging sefer, not for production: a busy program prints a "
			"great deal.",
		.example = "SEFER_VERBOSE=1 ls 2>&1 | grep option",
	},
	{
		.name = "ON_ERROR",
		.type = OPT_CHOICE,
		.secure = OPT_SECURE_LOWER,
		.value.c = &sefer__opt.on_error,
		.def = 0, /* ON_ERROR_ABORT */
		.choices = (const char *const[]){ "abort", "warn", NULL },
		.help = "What happens after a heap misuse is reported (see ERROR REPORTS): "
			"`abort` ends the process with SIGABRT, so a core dump or a debugger shows "
			"the culprit; `warn` returns from the call that found it without touching "
			"the heap (the block stays as it was), and the program runs on. "
			"`mallopt(M_CHECK_ACTION, ...)` changes it at run time.",
		.example = "SEFER_ON_ERROR=warn ./legacy-server",
	},
	{
		.name = "PURGE_DELAY_MS",
		.type = OPT_UINT,
		.secure = OPT_SECURE_LOWER,
		.value.u = &sefer__opt.purge_delay_ms,
		/* Documentation/decommit.rst: 10 ms gave back what redis freed between two
		 * commands and faulted it in again; peers: mimalloc 2.0.9 25 ms (500 for a
		 * segment), jemalloc 10 s */
		.def = 50,
		.min = 0,
		.max = 4611686018427387904, /* PURGE_DELAY_NEVER */
		.help = "Milliseconds a page or segment stays empty before its memory is purged "
			"(handed back to the operating system while staying mapped); 0 purges at "
			"once, and more than 2^48 (mallopt's M_TRIM_THRESHOLD below 0 sets 2^62) "
			"never. "
			"A longer delay keeps memory warm for a program that frees and allocates in "
			"waves, at the cost of a higher resident size meanwhile. "
			"This is the shortest delay: a thread whose purged memory is soon needed "
			"again waits longer, up to 16 times as long, and a thread that resumes after "
			"a pause keeps what it freed before the pause for one more delay (see "
			"decommit.rst in the documentation). "
			"Empty pages are purged by the owning thread's next slow path, and by the "
			"last threads to exit; there is no background thread. "
			"A freed large block the large cache keeps, unused for this delay, is "
			"unmapped the same way.",
		.needs = "CONFIG_DECOMMIT",
		.example = "SEFER_PURGE_DELAY_MS=0 ./batch-job "
			   "`(resident size follows the live set as closely as it can)`",
	},
	{
		.name = "CALLOC_PREFAULT",
		.type = OPT_SIZE,
		.secure = OPT_SECURE_LOWER,
		.value.u = &sefer__opt.calloc_prefault,
		.def = (uint64_t)CONFIG_CALLOC_PREFAULT_KB << 10,
		.min = 0,
		.max = UINT64_MAX,
		.help = "How far into a `calloc` block whose pages were never written (fresh or "
			"given back to the operating system) sefer faults them in for writing at "
			"once; 0 never does. "
			"Such a block is not cleared (it reads as zero already), but on Linux a page "
			"that the program reads before it writes takes two page faults (the shared "
			"zero page, then its own), as hash tables do; faulting it in first makes "
			"that one. "
			"A program that allocates a big array with `calloc` and touches little of it "
			"commits up to this much of it. "
			"Linux only (other systems take no extra fault).",
		.doc_default = "16M (the build's CONFIG_CALLOC_PREFAULT_KB)",
		.example = "SEFER_CALLOC_PREFAULT=0 ./sparse-matrix "
			   "`(nothing committed before the program touches it)`",
	},
	{
		.name = "PARKED_HEAPS",
		.type = OPT_UINT,
		.secure = OPT_SECURE_LOWER,
		.value.u = &sefer__opt.parked_heaps,
		.def = 32,
		.min = 0,
		.max = 1024,
		.help = "How many exited threads' heaps are kept whole (parked) for the next "
			"threads to take over, with their pages, free lists, segments and large "
			"cache; 0 keeps none. A thread that exits while this many are parked gives its "
			"memory up instead: its empty segments are kept as spares, the others left "
			"for any thread to reclaim. A new thread takes over a parked heap (the one its "
			"first call frees into, if that is a free), so a program that runs its threads "
			"in generations (start them, join them, start the next ones) reuses what the "
			"last one left warm, with no purge and no fault. Parked heaps' free pages are "
			"purged, and their cached large blocks released, after the purge delay by "
			"other threads' slow paths, and when the last worker exits, as exited "
			"threads' memory is (see decommit.rst in the documentation).",
		.example = "SEFER_PARKED_HEAPS=0 ./thread-pool-server",
	},
	{
		.name = "THP",
		.type = OPT_CHOICE,
		.secure = OPT_SECURE_LOWER,
		.value.c = &sefer__opt.thp,
		.def = IS_ENABLED(CONFIG_THP_NEVER)    ? THP_NEVER :
		       IS_ENABLED(CONFIG_THP_SYSTEM)   ? THP_SYSTEM :
		       IS_ENABLED(CONFIG_THP_ALWAYS)   ? THP_ALWAYS :
		       IS_ENABLED(CONFIG_THP_LARGE)    ? THP_LARGE : THP_AUTO,
		.choices = (const char *const[]){ "never", "large", "system", "always", "auto",
						  NULL },
		.help = "Which of sefer's memory Linux may back with transparent huge pages. "
			"`large`: small-object segments never (a kernel in THP mode `always`, the "
			"upstream default, would back each 2 MiB of them with one huge page at the "
			"first touch, and a purge of one sefer page inside it gives nothing back), "
			"large blocks as the kernel's mode says, as glibc's are; `auto`: as `large`, "
			"but a heap that already holds CONFIG_THP_DENSE_SEGMENTS small-object "
			"segments (16: 64 MiB) maps its next ones as the kernel's mode says too, so "
			"that a big heap of small blocks gets huge pages and a small one does not; "
			"`never`: none of it, large blocks included; `system`: no advice, the "
			"kernel's mode decides; "
			"`always`: every segment asks for huge pages (fewer TLB misses and page "
			"faults for a big heap, more resident memory), in kernel mode `madvise` "
			"too. Read at init; the mode of a segment is set when it is mapped. "
			"Linux only (other systems give no huge pages unasked).",
		.doc_default = "auto (the build's CONFIG_THP_* choice)",
		.example = "SEFER_THP=always ./in-memory-database "
			   "`(huge pages for the whole heap)`",
	},
	{ .name = NULL },
};

/* SEFER_* variables that are not options: sefer's test harness's, the Lua host's, and
 * CONFIG_FAULT_INJECTION's SEFER_FAIL_* (core/fault.c reads them, in that build only). */
static const char *const not_options[] = { "SEFER_TEST_", "SEFER_LUA_", "SEFER_FAIL_", NULL };

static const char *const origin_names[] = {
	[ORIGIN_DEFAULT] = "default",
	[ORIGIN_ENV] = "environment",
	[ORIGIN_OPTIONS] = "SEFER_OPTIONS",
	[ORIGIN_API] = "API",
	[ORIGIN_SECURE] = "secure execution",
};

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool same(const char *a, const char *b)
{
	for (; *a && lower(*a) == lower(*b); a++, b++)
		;
	return lower(*a) == lower(*b);
}

static bool starts(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (lower(*s) != lower(*prefix))
			return false;
	return true;
}

/* A name without its SEFER_ prefix, if it has one. */
static const char *bare(const char *name)
{
	return starts(name, "SEFER_") ? name + 6 : name;
}

#define POLICY_OPTIONS_STEP(n)                                                                     \
	if (!o && policy_##n.options)                                                              \
		o = visit_table(policy_##n.options, fn, arg);

static struct sefer_option *visit_table(struct sefer_option *t,
					bool (*fn)(struct sefer_option *, const void *),
					const void *arg)
{
	for (; t->name; t++)
		if (fn(t, arg))
			return t;
	return NULL;
}

struct sefer_option *sefer__options_visit(bool (*fn)(struct sefer_option *, const void *),
					  const void *arg)
{
	struct sefer_option *o = visit_table(core_options, fn, arg);

	SEFER_POLICIES(POLICY_OPTIONS_STEP)
	return o;
}

static bool named(struct sefer_option *o, const void *name)
{
	return same(o->name, name);
}

struct sefer_option *sefer__option_find(const char *name)
{
	return sefer__options_visit(named, bare(name));
}

enum parse_result sefer__parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	bool big = false;

	if (!*s)
		return PARSE_BAD;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return PARSE_BAD;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			big = true;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (big)
		return PARSE_RANGE;
	*out = v;
	return PARSE_OK;
}

enum parse_result sefer__parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t n = 0;
	unsigned shift = 0;
	enum parse_result r;
	uint64_t v;

	while (s[n] >= '0' && s[n] <= '9' && n < sizeof(num) - 1) {
		num[n] = s[n];
		n++;
	}
	num[n] = '\0';
	if (s[n] >= '0' && s[n] <= '9') /* 31 digits and more */
		return PARSE_RANGE;
	switch (s[n]) {
	case '\0':
		break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default:
		return PARSE_BAD;
	}
	if (s[n] && s[n + 1] && !((s[n + 1] == 'B' || s[n + 1] == 'b') && !s[n + 2]) &&
	    !((s[n + 1] == 'i') && (s[n + 2] == 'B') && !s[n + 3]))
		return PARSE_BAD;
	r = sefer__parse_uint(num, &v);
	if (r != PARSE_OK)
		return r;
	if (shift && v > (UINT64_MAX >> shift))
		return PARSE_RANGE;
	*out = v << shift;
	return PARSE_OK;
}

enum parse_result sefer__parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (same(s, yes[i]) || same(s, no[i])) {
			*out = same(s, yes[i]);
			return PARSE_OK;
		}
	}
	return PARSE_BAD;
}

#define NAME_MAX_EDIT 64

unsigned sefer__edit_distance(const char *a, const char *b)
{
	unsigned char row[NAME_MAX_EDIT + 1];
	size_t na = 0, nb = 0;

	while (a[na] && na < NAME_MAX_EDIT)
		na++;
	while (b[nb] && nb < NAME_MAX_EDIT)
		nb++;
	for (size_t j = 0; j <= nb; j++)
		row[j] = (unsigned char)j;
	for (size_t i = 1; i <= na; i++) {
		unsigned diag = row[0], best;

		row[0] = (unsigned char)(i > 255 ? 255 : i);
		for (size_t j = 1; j <= nb; j++) {
			unsigned up = row[j];

			best = diag + (lower(a[i - 1]) != lower(b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1u < best)
				best = row[j - 1] + 1u;
			row[j] = (unsigned char)(best > 255 ? 255 : best);
			diag = up;
		}
	}
	return row[nb];
}

/* Formats v as bytes: with the largest K/M/G/T suffix that divides it exactly. */
static void format_size(char *buf, size_t len, uint64_t v)
{
	static const char suffix[] = "KMGT";
	int s = -1;

	while (v && s < 3 && !(v & 1023)) {
		v >>= 10;
		s++;
	}
	if (s < 0)
		sefer__format(buf, len, "%llu", (unsigned long long)v);
	else
		sefer__format(buf, len, "%llu%c", (unsigned long long)v, suffix[s]);
}

static uint64_t load(const struct sefer_option *o)
{
	switch (o->type) {
	case OPT_BOOL:
		return __atomic_load_n(o->value.b, __ATOMIC_RELAXED);
	case OPT_CHOICE:
		return __atomic_load_n(o->value.c, __ATOMIC_RELAXED);
	default:
		return __atomic_load_n(o->value.u, __ATOMIC_RELAXED);
	}
}

static void format_value(const struct sefer_option *o, uint64_t v, char *buf, size_t len)
{
	if (o->type == OPT_CHOICE)
		sefer__format(buf, len, "%s", o->choices[v]);
	else if (o->type == OPT_SIZE)
		format_size(buf, len, v);
	else
		sefer__format(buf, len, "%llu", (unsigned long long)v);
}

size_t sefer__option_format(const struct sefer_option *o, char *buf, size_t len)
{
	size_t n = 0;

	format_value(o, load(o), buf, len);
	while (n + 1 < len && buf[n])
		n++;
	return n;
}

/* o's name as the messages spell it: SEFER_NAME for a variable, its key in SEFER_OPTIONS. */
static void spell(const struct sefer_option *o, bool variable, char *buf, size_t len)
{
	size_t i = 0;

	if (variable) {
		sefer__format(buf, len, "SEFER_%s", o->name);
		return;
	}
	for (; o->name[i] && i + 1 < len; i++)
		buf[i] = lower(o->name[i]);
	buf[i] = '\0';
}

static void report_bad_value(const struct sefer_option *o, const char *text,
			     enum option_origin from, enum parse_result r)
{
	const char *in = from == ORIGIN_OPTIONS ? "SEFER_OPTIONS: " : "";
	char where[64], now[32], expect[96], lo[32], hi[32];

	spell(o, from != ORIGIN_OPTIONS, where, sizeof(where));
	sefer__option_format(o, now, sizeof(now));
	if (r == PARSE_RANGE) {
		format_value(o, o->min, lo, sizeof(lo));
		format_value(o, o->max, hi, sizeof(hi));
		sefer__message("%svalue '%s' for %s is out of range (%s to %s); keeping %s (%s)",
			       in, text, where, lo, hi, now, origin_names[o->origin]);
		return;
	}
	switch (o->type) {
	case OPT_BOOL:
		sefer__format(expect, sizeof(expect), "1, 0, yes, no, true, false, on or off");
		break;
	case OPT_UINT:
		sefer__format(expect, sizeof(expect), "a whole number");
		break;
	case OPT_SIZE:
		sefer__format(expect, sizeof(expect),
			      "a byte count with an optional K, M, G or T suffix");
		break;
	case OPT_CHOICE: {
		size_t n = 0;

		expect[0] = '\0';
		for (size_t i = 0; o->choices[i]; i++) {
			const char *sep = !i ? "" : o->choices[i + 1] ? ", " : " or ";

			sefer__format(expect + n, sizeof(expect) - n, "%s%s", sep, o->choices[i]);
			while (expect[n])
				n++;
		}
		if (o->bool_words)
			sefer__format(expect + n, sizeof(expect) - n,
				      " (yes, true, on: 1; no, false, off: 0)");
		break;
	}
	}
	sefer__message("%sbad value '%s' for %s (expected %s); keeping %s (%s)", in, text, where,
		       expect, now, origin_names[o->origin]);
}

static enum parse_result parse(const struct sefer_option *o, const char *text, uint64_t *v)
{
	enum parse_result r = PARSE_BAD;
	bool b;

	switch (o->type) {
	case OPT_BOOL:
		r = sefer__parse_bool(text, &b);
		*v = b;
		return r;
	case OPT_UINT:
		r = sefer__parse_uint(text, v);
		break;
	case OPT_SIZE:
		r = sefer__parse_size(text, v);
		break;
	case OPT_CHOICE:
		for (size_t i = 0; o->choices[i]; i++) {
			if (same(text, o->choices[i])) {
				*v = i;
				return PARSE_OK;
			}
		}
		if (o->bool_words && sefer__parse_bool(text, &b) == PARSE_OK) {
			*v = b;
			return PARSE_OK;
		}
		return PARSE_BAD;
	}
	if (r == PARSE_OK && (*v < o->min || *v > o->max))
		r = PARSE_RANGE;
	return r;
}

int sefer__option_store(struct sefer_option *o, uint64_t v, enum option_origin from)
{
	bool env = from == ORIGIN_ENV || from == ORIGIN_OPTIONS;

	uint64_t n = 0;

	if (o->type == OPT_CHOICE)
		while (o->choices[n])
			n++;
	if (o->type == OPT_BOOL ? v > 1 : o->type == OPT_CHOICE ? v >= n : v < o->min || v > o->max)
		return ERANGE;
	if (env && sefer__opt.secure &&
	    (o->secure == OPT_SECURE_IGNORED || v > load(o))) {
		o->origin = ORIGIN_SECURE;
		return 0;
	}
	switch (o->type) {
	case OPT_BOOL:
		__atomic_store_n(o->value.b, v != 0, __ATOMIC_RELAXED);
		break;
	case OPT_CHOICE:
		__atomic_store_n(o->value.c, (unsigned)v, __ATOMIC_RELAXED);
		break;
	default:
		__atomic_store_n(o->value.u, v, __ATOMIC_RELAXED);
		break;
	}
	o->origin = from;
	return 0;
}

int sefer__option_apply(struct sefer_option *o, const char *text, enum option_origin from)
{
	bool env = from == ORIGIN_ENV || from == ORIGIN_OPTIONS;
	uint64_t v = 0;
	enum parse_result r = parse(o, text, &v);

	if (r == PARSE_OK)
		return sefer__option_store(o, v, from);
	if (env && !sefer__opt.secure)
		report_bad_value(o, text, from, r);
	return r == PARSE_RANGE ? ERANGE : EINVAL;
}

/* The best did-you-mean so far: the option nearest to name. */
struct nearest {
	const char *name;
	const struct sefer_option *best;
	unsigned dist;
};

static bool nearer(struct sefer_option *o, const void *arg)
{
	struct nearest *n = (struct nearest *)arg;
	unsigned d = sefer__edit_distance(n->name, o->name);

	if (d < n->dist) {
		n->dist = d;
		n->best = o;
	}
	return false;
}

static size_t length(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/*
 * The closest option to name, when it is close enough to be a typo of it: at most a third of
 * the longer name's letters (at least 2) edited.
 */
static const struct sefer_option *closest(const char *name)
{
	struct nearest n = { .name = name, .dist = ~0u };
	size_t len;

	sefer__options_visit(nearer, &n);
	if (!n.best)
		return NULL;
	len = length(name) > length(n.best->name) ? length(name) : length(n.best->name);
	return n.dist <= (len < 6 ? 2 : len / 3) ? n.best : NULL;
}

/* An option of a policy this build leaves out (include/generated/policies.h). */
struct option_out {
	const char *name, *policy, *config;
};

#define OPTION_OUT(n, p, c) { .name = n, .policy = p, .config = c },
static const struct option_out options_out[] = {
	SEFER_POLICY_OPTIONS_OUT(OPTION_OUT){ .name = NULL },
};

/*
 * "unknown option NAME (did you mean BEST?)": name as written, BEST spelt the same way. An
 * option of a policy left out of the build is named as such: it does exist, elsewhere.
 */
static void report_unknown(const char *in, const char *name, bool env)
{
	const struct sefer_option *o;
	char best[64];

	for (const struct option_out *out = options_out; out->name; out++) {
		if (same(bare(name), out->name)) {
			sefer__message("%s%s is an option of the %s policy, which this build "
				       "leaves out (%s is not set): ignored",
				       in, name, out->policy, out->config);
			return;
		}
	}
	o = closest(bare(name));
	if (!o) {
		sefer__message("%sunknown option %s (sefer(7) lists them)", in, name);
		return;
	}
	spell(o, env, best, sizeof(best));
	sefer__message("%sunknown option %s (did you mean %s?)", in, name, best);
}

/* SEFER_OPTIONS="key=value,key=value": each key an option's name (any case). */
static void read_options_variable(void)
{
	static char variable[] startup_data = "SEFER_OPTIONS";
	char buf[1024];
	char *item = buf;

	if (!sefer__os.getenv(variable, buf, sizeof(buf)))
		return;
	while (*item) {
		char *end = item, *eq = NULL;
		struct sefer_option *o;
		bool last;

		while (*end && *end != ',') {
			if (*end == '=' && !eq)
				eq = end;
			end++;
		}
		last = !*end;
		*end = '\0';
		if (eq)
			*eq = '\0';
		o = *item ? sefer__option_find(item) : NULL;
		if (!*item && !eq) {
			/* an empty item: "a=1,,b=2" or a trailing comma */
		} else if (!eq) {
			if (!sefer__opt.secure)
				sefer__message("SEFER_OPTIONS: '%s' is not key=value", item);
		} else if (!o) {
			if (!sefer__opt.secure)
				report_unknown("SEFER_OPTIONS: ", item, false);
		} else {
			sefer__option_apply(o, eq + 1, ORIGIN_OPTIONS);
		}
		if (last)
			break;
		item = end + 1;
	}
}

static bool reserved(const char *name)
{
	for (size_t i = 0; not_options[i]; i++)
		if (starts(name, not_options[i]))
			return true;
	return false;
}

/* Each SEFER_<NAME> variable, found by walking the environment (no allocation). */
static void read_variables(void)
{
	char entry[80], value[256];

	if (!os_has(SEFER_OS_ENV))
		return;
	for (size_t i = 0; sefer__os.env_entry(i, entry, sizeof(entry)); i++) {
		struct sefer_option *o;
		size_t n = 0;

		if (__builtin_strncmp(entry, "SEFER_", 6))
			continue;
		while (entry[n] && entry[n] != '=')
			n++;
		entry[n] = '\0';
		if (same(entry, "SEFER_OPTIONS") || reserved(entry))
			continue;
		o = sefer__option_find(entry);
		if (!o) {
			if (!sefer__opt.secure)
				report_unknown("", entry, true);
		} else if (sefer__os.getenv(entry, value, sizeof(value))) {
			sefer__option_apply(o, value, ORIGIN_ENV);
		}
	}
}

static bool set_default(struct sefer_option *o, const void *arg)
{
	(void)arg;
	sefer__option_store(o, o->def, ORIGIN_DEFAULT);
	return false;
}

static bool list(struct sefer_option *o, const void *arg)
{
	char v[32];

	(void)arg;
	sefer__option_format(o, v, sizeof(v));
	sefer__message("option SEFER_%s=%s (%s)", o->name, v, origin_names[o->origin]);
	return false;
}

void sefer__options_init(void)
{
	sefer__opt.secure = os_has(SEFER_OS_SECURE) && sefer__os.secure();
	sefer__options_visit(set_default, NULL);
	read_options_variable();
	read_variables();
	if (sefer__opt.verbose)
		sefer__options_visit(list, NULL);
}

SEFER_API int sefer_option_set(const char *name, const char *value)
{
	struct sefer_option *o;

	sefer__process_init(); /* before the environment is read, a setting would be overwritten */
	o = name ? sefer__option_find(name) : NULL;
	if (!o)
		return ENOENT;
	return value ? sefer__option_apply(o, value, ORIGIN_API) : EINVAL;
}

SEFER_API int sefer_option_get(const char *name, char *buf, size_t len)
{
	const struct sefer_option *o;
	char v[32];
	size_t n;

	sefer__process_init();
	o = name ? sefer__option_find(name) : NULL;
	if (!o)
		return ENOENT;
	n = sefer__option_format(o, v, sizeof(v));
	if (!buf || !len)
		return ERANGE;
	for (size_t i = 0; i < len; i++)
		buf[i] = i + 1 < len && i < n ? v[i] : '\0';
	return n < len ? 0 : ERANGE;
}

SEFER_API const char *sefer_option_origin(const char *name)
{
	const struct sefer_option *o;

	sefer__process_init();
	o = name ? sefer__option_find(name) : NULL;
	return o ? origin_names[o->origin] : NULL;
}
