/* SPDX-License-Identifier: MIT */
/*
 * struct sefer_os_ops: the one contract between sefer and an operating system.
 *
 * Exactly one backend (backends/<os>/) is built, chosen by Kconfig; it defines the constant
 * instance `sefer__os`. The core never calls the OS any other way, so a port is one folder
 * implementing this struct (Documentation/porting.rst). The struct holds only ops something
 * calls: each op's comment names its callers.
 *
 * Who calls: the core's slow paths (segment reservation and release, purge, guard pages,
 * large-segment resizing, calloc's populate, init, error reporting, thread exit, spinlock
 * waits), the numa policy, and persist/ (file ops). Never the malloc/free fast paths.
 *
 * Locks held: none of sefer's locks is held across any op, except yield (a spinlock waiter may
 * hold other spinlocks of lower rank, core/lock.h) and the registry lock around nothing but
 * its list update. reserve/release/remap/purge/protect may be called with the calling heap's
 * (thread-local, uncontended) state in flux, and init() runs under the process-init state.
 * No op may call malloc or any function that may allocate through the C library (sefer may be
 * that allocator).
 *
 * Failure: ops that can fail return false / NULL / negative errno as stated; they never abort
 * and never print (remap's split pages excepted, see there).
 *
 * Optional ops: a port declares which it implements in `features` (SEFER_OS_* below), and
 * fills exactly those slots; the slots of an undeclared feature stay NULL. The core tests the
 * bit, never the slot. sefer_os_features_agree() (at the end) holds when the declaration
 * and the filled slots match: the unit tests (selftest/unit/test_os.c,
 * selftest/portable/test_win32.c) and a CONFIG_DEBUG_CORE build's init check it. Every other
 * slot is required and must be filled.
 */
#ifndef SEFER_OS_H
#define SEFER_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sefer/compiler.h"

/* Filled by init(). */
struct sefer_os_info {
	size_t page_size;	/* OS page size: unit of purge, protect and populate */
	size_t alloc_granularity; /* unit and alignment of reserve (64 KiB on Windows) */
	int node_count;		/* NUMA nodes, >= 1 */
	/*
	 * The largest single request the machine could ever back, in bytes: larger ones fail
	 * with ENOMEM at once instead of reserving address space that touching would never
	 * get (Documentation/architecture.rst, "Requests that can never be backed"). Preset
	 * to PTRDIFF_MAX; a backend that knows a lower bound (Linux: RAM + swap under the
	 * kernel's heuristic overcommit) lowers it, without allocating.
	 */
	size_t max_request;
};

#define SEFER_NO_NODE (-1)

/* Opaque file handle for persist: an fd on POSIX, a HANDLE on Windows. */
typedef intptr_t sefer_file_t;
#define SEFER_FILE_INVALID ((sefer_file_t)-1)

/* Flags for open_file(). */
#define SEFER_OPEN_CREATE 0x1	/* create if missing */
#define SEFER_OPEN_EXCL 0x2	/* fail if it exists */
#define SEFER_OPEN_READ 0x4	/* for reading only (not with CREATE) */

/* Optional features, declared in sefer_os_ops.features; each names the slots it fills. */
#define SEFER_OS_REMAP (1u << 0)	/* remap */
#define SEFER_OS_POPULATE (1u << 1)	/* populate */
#define SEFER_OS_PROTECT (1u << 2)	/* protect */
#define SEFER_OS_NUMA (1u << 3)		/* bind_node and current_node */
#define SEFER_OS_SECURE (1u << 4)	/* secure */
#define SEFER_OS_KEEP_ERR (1u << 5)	/* keep_err */
#define SEFER_OS_RANDOM (1u << 6)	/* random_bytes */
#define SEFER_OS_YIELD (1u << 7)	/* yield */
#define SEFER_OS_ENV (1u << 8)		/* env_entry */
#define SEFER_OS_PROCINFO (1u << 9)	/* procinfo */
#define SEFER_OS_HUGEPAGE (1u << 10)	/* hugepage */

/*
 * The process's own figures for the stats printout (sefer_stats_print, SEFER_SHOW_STATS):
 * filled by procinfo() into a zeroed struct; a group whose have_* stays false is unknown and
 * printed as such.
 */
struct sefer_os_procinfo {
	uint64_t pid;
	char name[64]; /* the program's file name, NUL-terminated, maybe truncated */
	bool have_rss, have_cpu, have_elapsed;
	uint64_t rss, rss_peak; /* resident bytes now and at the process's peak */
	uint64_t cpu_user_ms, cpu_sys_ms, elapsed_ms;
};

struct sefer_os_ops {
	const char *name; /* printed by SEFER_VERBOSE=1 */
	unsigned features; /* SEFER_OS_* bits: the optional slots this port fills */

	/*
	 * Fill *info. Called once by the core's process init (core/init.c), before any other op,
	 * under the process-init state. Cannot fail; must not allocate.
	 */
	void (*init)(struct sefer_os_info *info);

	/*
	 * Reserve `size` bytes of address space aligned to `align` (a power of two, a multiple of
	 * alloc_granularity), committed and readable/writable, reading as zero. `node` is a NUMA
	 * node hint or SEFER_NO_NODE; the backend may ignore it (the numa policy binds
	 * explicitly). Called when a segment or a heap struct is mapped, under no lock. Returns
	 * NULL on failure (the core sets errno = ENOMEM).
	 */
	__must_check void *(*reserve)(size_t size, size_t align, int node);

	/*
	 * Release a whole reservation made by reserve(addr, size, ...) (or by remap). Called when
	 * a segment is unmapped, under no lock. Cannot fail.
	 */
	void (*release)(void *addr, size_t size);

	/*
	 * SEFER_OS_REMAP. Resize a whole reservation made by reserve (or by remap) from old_size
	 * to new_size bytes, both multiples of the page size, keeping the contents of its first
	 * min(old_size, new_size) bytes without copying or faulting them in again: the OS moves
	 * the pages (Linux: mremap). The result is aligned to `align` and may be at another
	 * address; bytes past old_size read as zero; a shrink gives the pages past new_size back.
	 * Returns NULL on failure, the old reservation then unchanged (a backend that moves the
	 * pages in several calls moves the done ones back; where the OS refuses that too it
	 * reports and aborts, the one exception to "never abort and never print" above, as the
	 * pages would be split between two places). The core calls it on a large segment whose
	 * block no other thread may touch meanwhile (a cached one, or the one realloc resizes),
	 * unpublished meanwhile, under no lock. Without the feature the core maps a new segment
	 * and releases the old one instead (the large cache), or copies (realloc).
	 */
	__must_check void *(*remap)(void *addr, size_t old_size, size_t new_size, size_t align);

	/*
	 * Give the physical memory of a range back to the OS while keeping it usable: no step is
	 * needed before the core uses the range again. With `eager` the RSS drops at once and the
	 * range reads as zero afterwards (returns true in that case); otherwise the OS may
	 * reclaim lazily and the contents are undefined until written (returns false). Returns
	 * whether the range now reads as zero. Called by the core's purge (CONFIG_DECOMMIT) on
	 * free pages of a segment it holds, under no lock. Cannot fail (a failed purge leaves
	 * the memory in place, reported as not zero).
	 */
	bool (*purge)(void *addr, size_t size, bool eager);

	/*
	 * SEFER_OS_POPULATE. Fault [addr, addr+size) in for writing now, in as few calls as the
	 * OS allows, without changing what it reads: the range reads as zero (fresh or purged
	 * memory), it is about to be read and written by the program, and nobody else touches it
	 * meanwhile (calloc's block, its pages wholly inside it). addr and size are multiples of
	 * page_size. Where the OS maps one shared zero page on the first read of such memory
	 * (Linux), a program that reads a page before writing it takes two faults for it; this
	 * makes it one, batched. Best effort, no failure: on an OS that cannot, it does nothing.
	 * Called by calloc's slow paths, under no lock. Without the feature, reading such memory
	 * costs no extra fault (Windows commits a private zeroed page on the first touch).
	 */
	void (*populate)(void *addr, size_t size);

	/*
	 * SEFER_OS_PROTECT: guard pages (CONFIG_GUARD_PAGES). With `none` make [addr, addr+size)
	 * inaccessible: any read or write there faults (SIGSEGV / an access violation) and the
	 * range takes no physical memory; without it make the range readable and writable again,
	 * its contents undefined. addr and size are multiples of page_size, inside one
	 * reservation made by reserve(); release() of the whole reservation releases guarded
	 * ranges as well. Called when a segment is mapped or a large one re-placed, under no lock,
	 * the calling heap's state in flux. Returns false on failure (the range is then left as
	 * it was). Without the feature there are no guard pages (the option does nothing).
	 */
	__must_check bool (*protect)(void *addr, size_t size, bool none);

	/*
	 * SEFER_OS_HUGEPAGE. Say whether the OS may back [addr, addr+size) with huge pages
	 * without being asked for each (Linux: transparent huge pages, MADV_HUGEPAGE with `huge`,
	 * MADV_NOHUGEPAGE without): with `huge` it may (where the system allows it at all),
	 * without it it must not, whatever the system's default. addr and size are multiples of
	 * page_size, inside mappings sefer made or its own static data. Best effort, no failure:
	 * a kernel without the mechanism ignores it. Called by the core when a segment or a heap
	 * struct is mapped and once at init (the segment table), under no lock, by the
	 * SEFER_THP option (core/options.c). Without the feature the system's default applies.
	 */
	void (*hugepage)(void *addr, size_t size, bool huge);

	/*
	 * SEFER_OS_NUMA (with current_node). Bind [addr, addr+size) to `node` (strict: only that
	 * node). Called by the numa policy on a fresh segment, under no lock. Returns 0 or
	 * -errno (a port that places memory only at reserve time answers -EOPNOTSUPP).
	 */
	__must_check int (*bind_node)(void *addr, size_t size, int node, bool strict);

	/*
	 * SEFER_OS_NUMA (with bind_node). The NUMA node of the calling thread's CPU, or
	 * SEFER_NO_NODE. Called by the numa policy when a heap needs a segment, under no lock.
	 */
	int (*current_node)(void);

	/*
	 * A monotonic clock in milliseconds. Its resolution may be a scheduler tick (up to about
	 * 16 ms: Windows' tick count, Linux's coarse clock); sefer's deadlines (purge delays, the
	 * large cache's decay) are tens of milliseconds, and it is read on free paths, so a cheap
	 * coarse clock is preferred to a fine one. Called by purge, the large cache and init (a
	 * seed), under no lock. Cannot fail.
	 */
	uint64_t (*clock_ms)(void);

	/*
	 * Copy the value of environment variable `name` into buf (NUL-terminated, truncated to
	 * len). Returns false when unset. Called by option parsing at init (core/options.c).
	 * Must not allocate: safe before the C library is ready.
	 */
	bool (*getenv)(const char *name, char *buf, size_t len);

	/*
	 * SEFER_OS_ENV. Copy the i-th entry of the environment ("NAME=value", NUL-terminated,
	 * truncated to len) into buf; false past the last. Must not allocate. sefer walks it
	 * once at init for its SEFER_* variables, to name those it does not know. Without the
	 * feature an unknown SEFER_* variable goes unreported.
	 */
	bool (*env_entry)(size_t i, char *buf, size_t len);

	/*
	 * SEFER_OS_SECURE. True when the process runs in secure-execution mode: its environment
	 * comes from a less privileged caller (setuid, setgid, file capabilities; AT_SECURE on
	 * Linux). Options that weaken a check, redirect output or raise a limit are then ignored
	 * (see core/options.c). Called once, at init, after init(); must not allocate. Without
	 * the feature: never.
	 */
	bool (*secure)(void);

	/*
	 * Write a message to the error stream (stderr). Called by the core's error path
	 * (core/error.c), maybe with any of sefer's locks held (a report from inside a critical
	 * section). Must not allocate, nor take a lock; may be partial.
	 */
	void (*write_err)(const char *msg, size_t len);

	/*
	 * SEFER_OS_KEEP_ERR. Called once at init when sefer will print at exit
	 * (SEFER_SHOW_STATS): keep a private handle on the error stream so that write_err still
	 * reaches it after the program closed stderr (coreutils close it in an atexit handler).
	 */
	void (*keep_err)(void);

	/*
	 * SEFER_OS_RANDOM. Fill buf with random bytes (hardening keys), at init and when a fork
	 * child re-keys; false if no source answered. Without the feature (or on false) the keys
	 * are derived from addresses and the clock.
	 */
	__must_check bool (*random_bytes)(void *buf, size_t len);

	/*
	 * Arrange for fn(arg) to be called when the calling thread exits, with arg the value
	 * passed in the latest call on that thread. Called once per thread, from the slow path
	 * that gives the thread its heap, under no lock. Returns false if unsupported (the
	 * thread's heap is then never abandoned).
	 */
	bool (*thread_exit_hook)(void (*fn)(void *), void *arg);

	/*
	 * SEFER_OS_YIELD. Give the rest of the calling thread's time slice to another runnable
	 * thread (sched_yield, SwitchToThread). Called by a waiter on one of sefer's spinlocks
	 * (core/lock.c), maybe holding others of lower rank (enum lock_rank, core/lock.h), or on
	 * another thread's process initialisation, once it has spun for a while: the thread it
	 * waits for may have been preempted, and with more threads than CPUs it may be waiting
	 * for this very CPU. Without the feature waiters only spin.
	 */
	void (*yield)(void);

	/*
	 * SEFER_OS_PROCINFO. Fill *p (zeroed by the caller) with what the OS tells of the calling
	 * process: pid and program name always, each other group with its have_* set when known.
	 * Called by the stats printout (core/stats_print.c), which may run at exit from a
	 * destructor, under no lock. Must not allocate (stack buffers only); best effort, no
	 * failure. Without the feature the printout knows the figures of sefer's own counters
	 * only and says so.
	 */
	void (*procinfo)(struct sefer_os_procinfo *p);

	/* ---- file operations: called by persist/ only (CONFIG_PERSIST), under its locks ---- */

	/*
	 * Open or create a file for reading and writing. Returns a handle or -errno. With
	 * SEFER_OPEN_CREATE the file's directory entry is durable before it returns (POSIX: the
	 * parent directory is fsynced; Windows: NTFS journals the create, flushed by sync).
	 */
	__must_check sefer_file_t (*open_file)(const char *path, int flags);
	void (*close_file)(sefer_file_t f);
	/* Positional I/O. Return the byte count done (short counts are possible) or -errno. */
	__must_check int64_t (*pread)(sefer_file_t f, void *buf, size_t len, uint64_t off);
	__must_check int64_t (*pwrite)(sefer_file_t f, const void *buf, size_t len, uint64_t off);
	/* Make every completed write durable (fdatasync, F_FULLFSYNC, FlushFileBuffers). */
	__must_check int (*sync)(sefer_file_t f);
	__must_check int (*truncate)(sefer_file_t f, uint64_t len);
	/* File size in bytes, or -errno. */
	__must_check int64_t (*file_size)(sefer_file_t f);
	/*
	 * Lock the whole file without waiting: 0, -EWOULDBLOCK (a holder's lock conflicts),
	 * -errno. shared: a reader's lock, which other shared locks may hold at the same time
	 * (persist passes it for a handle opened with SEFER_OPEN_READ); otherwise exclusive. The
	 * lock goes with the handle's close.
	 */
	__must_check int (*lock_file)(sefer_file_t f, bool shared);
};

/*
 * The selected backend, defined in backends/<os>/ under the name SEFER_OS_BACKEND. With
 * CONFIG_FAULT_INJECTION that is sefer__os_backend, and sefer__os is core/fault.c's copy of it
 * whose fallible slots fail on demand.
 */
#ifdef CONFIG_FAULT_INJECTION
#define SEFER_OS_BACKEND sefer__os_backend
SEFER_INTERNAL_EXTERN const struct sefer_os_ops sefer__os_backend;
SEFER_INTERNAL_EXTERN struct sefer_os_ops sefer__os;
#else
#define SEFER_OS_BACKEND sefer__os
SEFER_INTERNAL_EXTERN const struct sefer_os_ops sefer__os;
#endif

/*
 * The SEFER_OS_* bits of the features whose slots are filled in os: all of a feature's slots
 * (any == false) or at least one (any == true). A port agrees with its declaration when
 * os->features equals both: every declared feature has all its slots, no other slot is set.
 */
static inline unsigned sefer_os_filled_features(const struct sefer_os_ops *os, bool any)
{
	bool numa = any ? os->bind_node || os->current_node : os->bind_node && os->current_node;

	return (os->remap ? SEFER_OS_REMAP : 0) | (os->populate ? SEFER_OS_POPULATE : 0) |
	       (os->protect ? SEFER_OS_PROTECT : 0) | (numa ? SEFER_OS_NUMA : 0) |
	       (os->secure ? SEFER_OS_SECURE : 0) | (os->keep_err ? SEFER_OS_KEEP_ERR : 0) |
	       (os->random_bytes ? SEFER_OS_RANDOM : 0) | (os->yield ? SEFER_OS_YIELD : 0) |
	       (os->env_entry ? SEFER_OS_ENV : 0) | (os->procinfo ? SEFER_OS_PROCINFO : 0) |
	       (os->hugepage ? SEFER_OS_HUGEPAGE : 0);
}

static inline bool sefer_os_features_agree(const struct sefer_os_ops *os)
{
	return os->features == sefer_os_filled_features(os, false) &&
	       os->features == sefer_os_filled_features(os, true);
}

#endif /* SEFER_OS_H */
