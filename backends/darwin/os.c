// SPDX-License-Identifier: MIT
/*
 * The Darwin (macOS) backend: the POSIX part (backends/posix/) plus the few Darwin-only
 * lines, each marked DARWIN below. See include/sefer/os.h for each op's contract.
 *
 *   purge     MADV_FREE when lazy (the kernel takes the pages when it needs them; until then
 *             they stay in the task's footprint), or a MAP_FIXED remap when the range must
 *             read as zero (Darwin's MADV_DONTNEED does not zero anonymous memory). Not
 *             MADV_FREE_REUSABLE, whose pages leave the footprint at once: they must be
 *             handed back with MADV_FREE_REUSE before reuse, and the contract has no such
 *             step (purge leaves a range usable as it is; the core reuses purged pages
 *             directly), so reused pages would be missing from the footprint.
 *   sync      fcntl(F_FULLFSYNC): fsync() on Darwin does not flush the drive's cache.
 *   NUMA      none: no SEFER_OS_NUMA, and BACKEND_DARWIN does not select BACKEND_HAS_NUMA,
 *             so the numa policy compiles to nothing.
 *   thread exit  the POSIX pthread key (posix_thread_exit_hook).
 *
 * Not compiled on a Mac in this project's CI: see Documentation/backends/darwin.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <mach/mach.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backends/posix/posix.h"

static bool darwin_purge(void *addr, size_t size, bool eager)
{
	if (!eager) {
		/* DARWIN: lazy reclaim; the pages stay usable with no step before reuse. */
		if (madvise(addr, size, MADV_FREE) == 0)
			return false;
	}
	/* Fresh anonymous pages over the range: no RSS, reads as zero, still usable. */
	return mmap(addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANON, -1,
		    0) != MAP_FAILED;
}

static bool darwin_random_bytes(void *buf, size_t len)
{
	arc4random_buf(buf, len); /* the kernel's CSPRNG; never fails */
	return true;
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

/*
 * DARWIN: the task's resident size from task_info, its peak from getrusage (ru_maxrss counts
 * bytes on Darwin, KiB on Linux), CPU times from getrusage, the name from getprogname. The
 * elapsed time stays unknown (the printout then leaves the time line out).
 */
static void darwin_procinfo(struct sefer_os_procinfo *p)
{
	struct mach_task_basic_info info;
	mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
	const char *name = getprogname();
	struct rusage ru;

	p->pid = (uint64_t)getpid();
	for (size_t i = 0; name && name[i] && i < sizeof(p->name) - 1; i++)
		p->name[i] = name[i];
	if (getrusage(RUSAGE_SELF, &ru))
		return;
	p->cpu_user_ms = (uint64_t)ru.ru_utime.tv_sec * 1000 + (uint64_t)ru.ru_utime.tv_usec / 1000;
	p->cpu_sys_ms = (uint64_t)ru.ru_stime.tv_sec * 1000 + (uint64_t)ru.ru_stime.tv_usec / 1000;
	p->have_cpu = true;
	if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) ==
	    KERN_SUCCESS) {
		p->rss = info.resident_size;
		p->rss_peak = (uint64_t)ru.ru_maxrss > p->rss ? (uint64_t)ru.ru_maxrss : p->rss;
		p->have_rss = true;
	}
}

SEFER_INTERNAL const struct sefer_os_ops SEFER_OS_BACKEND = {
	.name = "darwin",
	.features = SEFER_OS_PROTECT | SEFER_OS_SECURE | SEFER_OS_KEEP_ERR | SEFER_OS_RANDOM |
		    SEFER_OS_YIELD | SEFER_OS_ENV | SEFER_OS_PROCINFO, /* no NUMA API on Darwin */
	.init = sefer__posix_init,
	.reserve = sefer__posix_reserve,
	.release = sefer__posix_release,
	.protect = sefer__posix_protect,
	.purge = darwin_purge,
	.clock_ms = sefer__posix_clock_ms,
	.getenv = sefer__posix_getenv,
	.env_entry = sefer__posix_env_entry,
	.secure = darwin_secure,
	.write_err = sefer__posix_write_err,
	.keep_err = sefer__posix_keep_err,
	.random_bytes = darwin_random_bytes,
	.thread_exit_hook = sefer__posix_thread_exit_hook,
	.yield = sefer__posix_yield,
	.procinfo = darwin_procinfo,
	.open_file = sefer__posix_open_file,
	.close_file = sefer__posix_close_file,
	.pread = sefer__posix_pread,
	.pwrite = sefer__posix_pwrite,
	.sync = darwin_sync,
	.truncate = sefer__posix_truncate,
	.file_size = sefer__posix_file_size,
	.lock_file = sefer__posix_lock_file,
};
