/* SPDX-License-Identifier: MIT */
/*
 * struct sefer_os_ops: the one contract between sefer and an operating system.
 *
 * Exactly one backend (backends/<os>/) is built, chosen by Kconfig; it defines the constant
 * instance `sefer_os`. The core never calls the OS any other way, so a port is one folder
 * implementing this struct (Documentation/porting.rst).
 *
 * Who calls: the core's slow paths (segment reservation, purge, init, error reporting,
 * thread exit) and persist/ (file ops). Never the malloc/free fast paths.
 *
 * Locks held: none of sefer's locks is held across any op, except that reserve/release/commit/
 * decommit/purge may be called with the calling heap's (thread-local, uncontended) state in
 * flux, and init() runs under the process-init lock. No op may call malloc or any function
 * that may allocate through the C library (sefer may be that allocator).
 *
 * Failure: ops that can fail return false / NULL / negative errno as stated; they never abort
 * and never print. A NULL slot means "not supported / no opinion": the core uses a default.
 */
#ifndef SEFER_OS_H
#define SEFER_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sefer/compiler.h"

/* Filled by init(). */
struct sefer_os_info {
	size_t page_size;	/* OS page size: unit of commit/decommit/purge */
	size_t alloc_granularity; /* unit and alignment of reserve (64 KiB on Windows) */
	int node_count;		/* NUMA nodes, >= 1 */
	bool overcommit;	/* reserved memory may be touched without commit */
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
#define SEFER_OPEN_READ 0x4	/* for reading only (not with CREATE): lock_file shares */

struct sefer_os_ops {
	const char *name;

	/* Called once at process init, before any other op. Must not allocate. */
	void (*init)(struct sefer_os_info *info);

	/*
	 * Reserve `size` bytes of address space aligned to `align` (a power of two, a multiple of
	 * alloc_granularity), committed and readable/writable, reading as zero. `node` is a NUMA
	 * node hint or SEFER_NO_NODE; the backend may ignore it (the numa policy binds
	 * explicitly). Returns NULL on failure (the core sets errno = ENOMEM).
	 */
	__must_check void *(*reserve)(size_t size, size_t align, int node);

	/* Release a whole reservation made by reserve(addr, size, ...). */
	void (*release)(void *addr, size_t size);

	/*
	 * Optional. Resize a whole reservation made by reserve (or by remap) from old_size to
	 * new_size bytes, both multiples of the page size, keeping the contents of its first
	 * min(old_size, new_size) bytes without copying or faulting them in again: the OS moves
	 * the pages (Linux: mremap). The result is aligned to `align` and may be at another
	 * address; bytes past old_size read as zero; a shrink gives the pages past new_size back.
	 * Returns NULL on failure, the old reservation then unchanged (a backend that moves the
	 * pages in several calls moves the done ones back; where the OS refuses that too it
	 * reports and aborts, the one exception to "never abort and never print" above, as the
	 * pages would be split between two places). The core calls it on a large segment whose
	 * block no other thread may touch meanwhile (a cached one, or the one realloc resizes),
	 * unpublished meanwhile, under no lock. NULL: the core maps a new segment and releases
	 * the old one instead (the large cache), or copies (realloc).
	 */
	__must_check void *(*remap)(void *addr, size_t old_size, size_t new_size, size_t align);

	/*
	 * Make [addr, addr+size) usable again after decommit(). Sets *is_zero when the range is
	 * known to read as zero. Returns false on failure. NULL slot: memory is always committed.
	 */
	__must_check bool (*commit)(void *addr, size_t size, bool *is_zero);

	/* Return the physical memory of a range; it must be commit()ed before reuse. */
	__must_check bool (*decommit)(void *addr, size_t size);

	/*
	 * Give the physical memory of a range back to the OS while keeping it usable. With
	 * `eager` the RSS drops at once and the range reads as zero afterwards (returns true in
	 * that case); otherwise the OS may reclaim lazily and the contents are undefined (returns
	 * false). Returns whether the range now reads as zero.
	 */
	bool (*purge)(void *addr, size_t size, bool eager);

	/*
	 * Optional. Fault [addr, addr+size) in for writing now, in as few calls as the OS allows,
	 * without changing what it reads: the range reads as zero (fresh or purged memory), it is
	 * about to be read and written by the program, and nobody else touches it meanwhile
	 * (calloc's block, its pages wholly inside it). addr and size are multiples of
	 * page_size. Where the OS maps one shared zero page on the first read of such memory
	 * (Linux), a program that reads a page before writing it takes two faults for it; this
	 * makes it one, batched. Best effort, no failure: on an OS that cannot, it does nothing.
	 * Called by calloc's slow paths, under no lock. NULL: reading such memory costs no extra
	 * fault (Windows commits a private zeroed page on the first touch).
	 */
	void (*populate)(void *addr, size_t size);

	/*
	 * Guard pages (CONFIG_GUARD_PAGES). With `none` make [addr, addr+size) inaccessible: any
	 * read or write there faults (SIGSEGV / an access violation) and the range takes no
	 * physical memory; without it make the range readable and writable again, its contents
	 * undefined. addr and size are multiples of page_size, inside one reservation made by
	 * reserve(); release() of the whole reservation releases guarded ranges as well. May
	 * be called with the calling heap's state in flux, like commit. Returns false on failure
	 * (the range is then left as it was). NULL slot: no guard pages (the option does
	 * nothing).
	 */
	__must_check bool (*protect)(void *addr, size_t size, bool none);

	/* Bind [addr, addr+size) to `node` (strict: only that node). Returns 0 or -errno. */
	__must_check int (*bind_node)(void *addr, size_t size, int node, bool strict);

	/* The NUMA node of the calling thread's CPU, or SEFER_NO_NODE. */
	int (*current_node)(void);

	/*
	 * A monotonic clock in milliseconds. Its resolution may be a scheduler tick (up to about
	 * 16 ms: Windows' tick count, Linux's coarse clock); sefer's deadlines (purge delays, the
	 * large cache's decay) are tens of milliseconds, and it is read on free paths, so a cheap
	 * coarse clock is preferred to a fine one.
	 */
	uint64_t (*clock_ms)(void);

	/*
	 * Copy the value of environment variable `name` into buf (NUL-terminated, truncated to
	 * len). Returns false when unset. Must not allocate: safe before the C library is ready.
	 */
	bool (*getenv)(const char *name, char *buf, size_t len);

	/*
	 * Optional. Copy the i-th entry of the environment ("NAME=value", NUL-terminated,
	 * truncated to len) into buf; false past the last. Must not allocate. sefer walks it
	 * once at init for its SEFER_* variables, to name those it does not know. NULL: an
	 * unknown SEFER_* variable goes unreported.
	 */
	bool (*env_entry)(size_t i, char *buf, size_t len);

	/*
	 * Optional. True when the process runs in secure-execution mode: its environment comes
	 * from a less privileged caller (setuid, setgid, file capabilities; AT_SECURE on Linux).
	 * Options that weaken a check, redirect output or raise a limit are then ignored (see
	 * core/options.c). Called once, at init, after init(); must not allocate. NULL: never.
	 */
	bool (*secure)(void);

	/* Write a message to the error stream (stderr). Must not allocate; may be partial. */
	void (*write_err)(const char *msg, size_t len);

	/*
	 * Optional. Called once at init when sefer will print at exit (SEFER_SHOW_STATS): keep a
	 * private handle on the error stream so that write_err still reaches it after the
	 * program closed stderr (coreutils close it in an atexit handler).
	 */
	void (*keep_err)(void);

	/* Fill buf with random bytes (for hardening keys); false if no source is available. */
	__must_check bool (*random_bytes)(void *buf, size_t len);

	/*
	 * Arrange for fn(arg) to be called when the calling thread exits, with arg the value
	 * passed in the latest call on that thread. Called once per thread, from the slow path.
	 * Returns false if unsupported.
	 */
	bool (*thread_exit_hook)(void (*fn)(void *), void *arg);

	/* A small integer id of the calling thread, for messages. */
	uint64_t (*thread_id)(void);

	/*
	 * Optional. Give the rest of the calling thread's time slice to another runnable thread
	 * (sched_yield, SwitchToThread). Called by a waiter on one of sefer's spinlocks
	 * (core/lock.h), maybe holding another of them (the lock order allows it), or on another
	 * thread's process initialisation, once it has spun for a while: the thread it waits for
	 * may have been preempted, and with more threads than CPUs it may be waiting for this
	 * very CPU. NULL: waiters only spin.
	 */
	void (*yield)(void);

	/* ---- file operations (persist/) ---- */

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
	 * Lock the whole file without waiting: 0, -EWOULDBLOCK, -errno. The lock is exclusive, or
	 * shared when the handle was opened with SEFER_OPEN_READ (POSIX; Windows' LockFileEx
	 * cannot tell the handle's access, its lock stays exclusive).
	 */
	__must_check int (*lock_file)(sefer_file_t f);
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

#endif /* SEFER_OS_H */
