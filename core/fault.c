// SPDX-License-Identifier: MIT
/*
 * CONFIG_FAULT_INJECTION (core/fault.h): sefer__os is a copy of the backend's ops
 * (sefer__os_backend, include/sefer/os.h) made at init, whose fallible slots are wrappers
 * that fail the call on demand, returning what the op returns when the OS refuses, and
 * otherwise call the backend. The core is unchanged: it sees an OS that sometimes says no.
 *
 * Set by SEFER_FAIL_OPS, SEFER_FAIL_PROBABILITY, SEFER_FAIL_INTERVAL, SEFER_FAIL_TIMES and
 * SEFER_FAIL_SEED (Documentation/debugging.rst), read once at init without allocating and
 * ignored in secure execution; tests arm it with sefer__fault_set(). The decision follows the
 * kernel's should_fail(): op selected, times left, the interval's count, then the draw.
 */
#include <errno.h>
#include <stdatomic.h>

#include "core/error.h"
#include "core/fault.h"
#include "core/options.h"
#include "sefer/os.h"

static const char *const op_names[FAULT_OPS] = {
	[FAULT_MAP] = "map",		[FAULT_REMAP] = "remap",
	[FAULT_PURGE] = "purge",	[FAULT_PROTECT] = "protect",
	[FAULT_POPULATE] = "populate",	[FAULT_BIND] = "bind",
};

static struct {
	atomic_uint ops;
	atomic_uint probability;
	atomic_uint_fast64_t interval;
	atomic_int_fast64_t times;
	uint64_t seed;
	atomic_uint_fast64_t count; /* eligible calls, for the interval */
	atomic_uint_fast64_t draws; /* random draws made */
	atomic_uint_fast64_t calls[FAULT_OPS];
	atomic_uint_fast64_t injected[FAULT_OPS];
} attr = { .interval = 1, .times = FAULT_TIMES_UNLIMITED, .seed = 1 };

/* faults injected into this thread's calls (initial-exec: as sefer__heap, core/heap.c) */
static __thread uint64_t injected_here __attribute__((tls_model("initial-exec")));

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Take one of the faults left; false when none is. */
static bool take_time(void)
{
	int_fast64_t t = atomic_load_explicit(&attr.times, memory_order_relaxed);

	do {
		if (t == 0)
			return false;
		if (t < 0)
			return true;
	} while (!atomic_compare_exchange_weak_explicit(&attr.times, &t, t - 1,
							memory_order_relaxed, memory_order_relaxed));
	return true;
}

static bool should_fail(enum fault_op op, const void *addr, size_t size)
{
	unsigned prob;
	uint64_t interval, n;

	if (!(atomic_load_explicit(&attr.ops, memory_order_relaxed) & 1u << op))
		return false;
	atomic_fetch_add_explicit(&attr.calls[op], 1, memory_order_relaxed);
	if (!atomic_load_explicit(&attr.times, memory_order_relaxed))
		return false;
	interval = atomic_load_explicit(&attr.interval, memory_order_relaxed);
	n = atomic_fetch_add_explicit(&attr.count, 1, memory_order_relaxed) + 1;
	if (interval > 1 && n % interval)
		return false;
	prob = atomic_load_explicit(&attr.probability, memory_order_relaxed);
	if (prob < 100) {
		uint64_t d = atomic_fetch_add_explicit(&attr.draws, 1, memory_order_relaxed);

		if (mix(attr.seed ^ mix(d)) % 100 >= prob)
			return false;
	}
	if (!take_time())
		return false;
	atomic_fetch_add_explicit(&attr.injected[op], 1, memory_order_relaxed);
	injected_here++;
	if (sefer__opt.verbose)
		sefer__message("fault injection: %s of %zu bytes at %p failed (call %llu)",
			      op_names[op], size, addr, (unsigned long long)n);
	return true;
}

static void *fault_reserve(size_t size, size_t align, int node)
{
	if (should_fail(FAULT_MAP, NULL, size))
		return NULL;
	return sefer__os_backend.reserve(size, align, node);
}

static void *fault_remap(void *addr, size_t old_size, size_t new_size, size_t align)
{
	if (should_fail(FAULT_REMAP, addr, new_size))
		return NULL; /* the old reservation unchanged, as the contract says */
	return sefer__os_backend.remap(addr, old_size, new_size, align);
}

static bool fault_purge(void *addr, size_t size, bool eager)
{
	if (should_fail(FAULT_PURGE, addr, size))
		return false; /* nothing given back: the old contents stay */
	return sefer__os_backend.purge(addr, size, eager);
}

static bool fault_protect(void *addr, size_t size, bool none)
{
	if (should_fail(FAULT_PROTECT, addr, size))
		return false; /* the range left as it was */
	return sefer__os_backend.protect(addr, size, none);
}

static void fault_populate(void *addr, size_t size)
{
	if (should_fail(FAULT_POPULATE, addr, size))
		return; /* best effort: skipped */
	sefer__os_backend.populate(addr, size);
}

static int fault_bind_node(void *addr, size_t size, int node, bool strict)
{
	if (should_fail(FAULT_BIND, addr, size))
		return -ENOMEM;
	return sefer__os_backend.bind_node(addr, size, node, strict);
}

void sefer__fault_set(unsigned ops, unsigned probability, uint64_t interval, int64_t times)
{
	atomic_store_explicit(&attr.ops, 0, memory_order_relaxed);
	atomic_store_explicit(&attr.probability, probability > 100 ? 100 : probability,
			      memory_order_relaxed);
	atomic_store_explicit(&attr.interval, interval ? interval : 1, memory_order_relaxed);
	atomic_store_explicit(&attr.times, times, memory_order_relaxed);
	atomic_store_explicit(&attr.count, 0, memory_order_relaxed);
	atomic_store_explicit(&attr.ops, ops & FAULT_ALL, memory_order_relaxed);
}

uint64_t sefer__fault_injected(enum fault_op op)
{
	return atomic_load_explicit(&attr.injected[op], memory_order_relaxed);
}

uint64_t sefer__fault_calls(enum fault_op op)
{
	return atomic_load_explicit(&attr.calls[op], memory_order_relaxed);
}

uint64_t sefer__fault_injected_total(void)
{
	uint64_t n = 0;

	for (int op = 0; op < FAULT_OPS; op++)
		n += sefer__fault_injected((enum fault_op)op);
	return n;
}

uint64_t sefer__fault_injected_thread(void)
{
	return injected_here;
}

const char *sefer__fault_op_name(enum fault_op op)
{
	return op < FAULT_OPS ? op_names[op] : "?";
}

static void bad_op(const char *s, size_t n)
{
	char name[32];
	size_t i;

	for (i = 0; i < n && i < sizeof(name) - 1; i++)
		name[i] = s[i];
	name[i] = '\0';
	sefer__message("SEFER_FAIL_OPS: no op named '%s' (map, remap, purge, protect, populate, "
		      "bind or all)", name);
}

/* SEFER_FAIL_OPS: a comma list of op names, or "all". 0 when nothing valid is named. */
static unsigned parse_ops(const char *s)
{
	unsigned ops = 0;

	while (*s) {
		size_t n = 0;
		int op;

		while (s[n] && s[n] != ',')
			n++;
		for (op = 0; op < FAULT_OPS; op++)
			if (!__builtin_strncmp(s, op_names[op], n) && !op_names[op][n])
				break;
		if (op < FAULT_OPS)
			ops |= 1u << op;
		else if (n == 3 && !__builtin_strncmp(s, "all", 3))
			ops |= FAULT_ALL;
		else
			bad_op(s, n);
		s += n + (s[n] == ',');
	}
	return ops;
}

/* SEFER_<name> as a whole number, into *out; false when unset or not one (said so). */
static bool fail_number(const char *name, uint64_t *out)
{
	char v[32];

	if (!sefer__os.getenv(name, v, sizeof(v)))
		return false;
	if (sefer__parse_uint(v, out) == PARSE_OK)
		return true;
	sefer__message("%s: '%s' is not a whole number; ignored", name, v);
	return false;
}

/*
 * The SEFER_FAIL_* options, read here rather than from the option table (core/options.c
 * skips their names): they exist in this build only. The backend's secure() is asked
 * directly: this runs in init(), before core/options.c has looked.
 */
static void fault_options(void)
{
	uint64_t prob = 0, interval = 1, seed = 1, p;
	int64_t times = FAULT_TIMES_UNLIMITED;
	unsigned ops = FAULT_ALL;
	bool armed = false;
	char v[128];

	if (sefer__os_backend.secure && sefer__os_backend.secure())
		return;
	if (sefer__os.getenv("SEFER_FAIL_OPS", v, sizeof(v)))
		ops = parse_ops(v);
	if (fail_number("SEFER_FAIL_INTERVAL", &interval)) {
		prob = 100; /* every Nth call, unless a probability thins them out */
		armed = true;
	}
	if (fail_number("SEFER_FAIL_PROBABILITY", &p)) {
		if (p > 100)
			sefer__message("SEFER_FAIL_PROBABILITY: %llu is not a percentage (0-100)",
				      (unsigned long long)p);
		else
			prob = p;
		armed = true;
	}
	if (sefer__os.getenv("SEFER_FAIL_TIMES", v, sizeof(v))) {
		uint64_t t;

		if (!__builtin_strcmp(v, "-1"))
			times = FAULT_TIMES_UNLIMITED;
		else if (sefer__parse_uint(v, &t) == PARSE_OK && t <= INT64_MAX)
			times = (int64_t)t;
		else
			sefer__message("SEFER_FAIL_TIMES: '%s' is not a count or -1", v);
	}
	fail_number("SEFER_FAIL_SEED", &seed);
	attr.seed = seed;
	if (armed && prob)
		sefer__fault_set(ops, (unsigned)prob, interval, times);
}

/* init() of sefer__os: make the copy, wrap its fallible slots, then the backend's init. */
static void fault_init(struct sefer_os_info *info)
{
	sefer__os = sefer__os_backend;
	sefer__os.init = fault_init;
#define WRAP(slot)                                                                          \
	do {                                                                                 \
		if (sefer__os.slot) /* a NULL slot stays NULL: "not supported" */           \
			sefer__os.slot = fault_##slot;                                       \
	} while (0)
	WRAP(reserve);
	WRAP(remap);
	WRAP(purge);
	WRAP(protect);
	WRAP(populate);
	WRAP(bind_node);
#undef WRAP
	sefer__os_backend.init(info);
	fault_options();
}

/* Before init only init() may be called (include/sefer/os.h). */
SEFER_INTERNAL struct sefer_os_ops sefer__os = { .name = "fault", .init = fault_init };

void sefer__fault_print(void)
{
	char line[400];
	size_t n = 0;

	for (int op = 0; op < FAULT_OPS; op++) {
		uint64_t calls = sefer__fault_calls((enum fault_op)op);

		if (!calls)
			continue;
		sefer__format(line + n, sizeof(line) - n, "%s%s %llu of %llu", n ? ", " : "",
			      op_names[op], (unsigned long long)sefer__fault_injected((enum fault_op)op),
			      (unsigned long long)calls);
		while (line[n])
			n++;
	}
	if (n)
		sefer__message("fault injection: calls failed: %s", line);
}

__attribute__((destructor)) static void fault_at_exit(void)
{
	if (sefer__opt.verbose || sefer__opt.show_stats)
		sefer__fault_print();
}
