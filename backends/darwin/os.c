// SPDX-License-Identifier: MIT
/*
 * The Darwin (macOS) backend: the POSIX part (backends/posix/) plus the few Darwin-only
 * lines, each marked DARWIN below. See include/sefer/os.h for each op's contract.
 *
 *   purge     MADV_FREE_REUSABLE (lazy: the pages leave the task's footprint at once, the
 *             kernel takes them when it needs to), or a MAP_FIXED remap when the range must
 *             read as zero (Darwin's MADV_DONTNEED does not zero anonymous memory).
 *   commit    MADV_FREE_REUSE first, so a range purged with MADV_FREE_REUSABLE is accounted
 *             to the task again.
 *   sync      fcntl(F_FULLFSYNC): fsync() on Darwin does not flush the drive's cache.
 *   NUMA      none: current_node() is SEFER_NO_NODE and bind_node is NULL, so the numa policy
 *             compiles to nothing (BACKEND_DARWIN does not select BACKEND_HAS_NUMA).
 *   thread exit  the POSIX pthread key (posix_thread_exit_hook).
 *
 * Not compiled on a Mac in this project's CI: see Documentation/backends/darwin.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/posix/posix.h"

static bool darwin_commit(void *addr, size_t size, bool *is_zero)
{
	/* DARWIN: undo MADV_FREE_REUSABLE's accounting; harmless on other ranges. */
	madvise(addr, size, MADV_FREE_REUSE);
	return sefer__posix_commit(addr, size, is_zero);
}

static bool darwin_purge(void *addr, size_t size, bool eager)
{
	if (!eager) {
		/* DARWIN: lazy reclaim that also drops the pages from the footprint now. */
		if (madvise(addr, size, MADV_FREE_REUSABLE) == 0)
			return false;
	}
	/* Fresh anonymous pages over the range: no RSS, reads as zero, still usable. */
	return mmap(addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANON, -1,
		    0) != MAP_FAILED;
}

static int darwin_current_node(void)
{
	return SEFER_NO_NODE;
}

static bool darwin_random_bytes(void *buf, size_t len)
{
	arc4random_buf(buf, len); /* the kernel's CSPRNG; never fails */
	return true;
}

static uint64_t darwin_thread_id(void)
{
	uint64_t tid = 0;

	/* DARWIN: the system-wide thread id (what Activity Monitor and lldb show). */
	if (pthread_threadid_np(pthread_self(), &tid) != 0)
		return sefer__posix_thread_id();
	return tid;
}

static int darwin_sync(sefer_file_t f)
{
	/* DARWIN: F_FULLFSYNC asks the drive to flush its cache too; some file systems
	 * (network, FAT) do not support it, and fsync is the best they offer. */
	if (fcntl((int)f, F_FULLFSYNC) == 0)
		return 0;
	return fsync((int)f) ? -errno : 0;
}

/* DARWIN: issetugid(2) is true for a process that changed its ids at exec (setuid/setgid). */
static bool darwin_secure(void)
{
	return issetugid() != 0;
}

SEFER_INTERNAL const struct sefer_os_ops SEFER_OS_BACKEND = {
	.name = "darwin",
	.init = sefer__posix_init,
	.reserve = sefer__posix_reserve,
	.release = sefer__posix_release,
	.commit = darwin_commit,
	.decommit = sefer__posix_decommit,
	.protect = sefer__posix_protect,
	.purge = darwin_purge,
	.bind_node = NULL, /* no NUMA API on Darwin */
	.current_node = darwin_current_node,
	.clock_ms = sefer__posix_clock_ms,
	.getenv = sefer__posix_getenv,
	.env_entry = sefer__posix_env_entry,
	.secure = darwin_secure,
	.write_err = sefer__posix_write_err,
	.keep_err = sefer__posix_keep_err,
	.random_bytes = darwin_random_bytes,
	.thread_exit_hook = sefer__posix_thread_exit_hook,
	.thread_id = darwin_thread_id,
	.yield = sefer__posix_yield,
	.open_file = sefer__posix_open_file,
	.close_file = sefer__posix_close_file,
	.pread = sefer__posix_pread,
	.pwrite = sefer__posix_pwrite,
	.sync = darwin_sync,
	.truncate = sefer__posix_truncate,
	.file_size = sefer__posix_file_size,
	.lock_file = sefer__posix_lock_file,
};
