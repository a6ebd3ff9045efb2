// SPDX-License-Identifier: MIT
/*
 * The Linux backend: the POSIX part (backends/posix/) plus madvise purging, mbind NUMA
 * binding, getcpu, getrandom, fdatasync and AT_SECURE. See include/sefer/os.h for each op's contract.
 *
 * mbind is called through syscall(2) with the constants from <numaif.h>, so the core does not
 * link libnuma (whose constructor allocates through malloc while the process starts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <numaif.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/posix/posix.h"

static int node_count = 1;
static size_t page_size = 4096;

static void linux_init(struct sefer_os_info *info)
{
	posix_init(info);
	page_size = info->page_size;
	/* Count nodes without libnuma: probe /sys node directories with access(2). */
	static const char base[] = "/sys/devices/system/node/node";
	char path[sizeof(base) + 8];
	int n = 0;

	for (;;) {
		int i = 0, v = n, len = 0;
		char digits[8];

		do
			digits[len++] = (char)('0' + v % 10);
		while ((v /= 10) && len < 7);
		for (i = 0; base[i]; i++)
			path[i] = base[i];
		while (len)
			path[i++] = digits[--len];
		path[i] = '\0';
		if (access(path, F_OK) != 0)
			break;
		n++;
	}
	node_count = n > 0 ? n : 1;
	info->node_count = node_count;
}

static bool linux_purge(void *addr, size_t size, bool eager)
{
#ifdef MADV_FREE
	if (!eager) {
		if (madvise(addr, size, MADV_FREE) == 0)
			return false;
	}
#endif
	madvise(addr, size, MADV_DONTNEED);
	return true;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

/*
 * MADV_POPULATE_WRITE faults the range in writable in one call. A kernel before 5.14 answers
 * EINVAL: then one store of zero per page (the range reads as zero, by the contract) does it a
 * fault at a time, still one fault per page instead of a read fault and a write fault.
 */
static void linux_populate(void *addr, size_t size)
{
	static _Atomic bool unsupported;
	int saved = errno; /* calloc succeeds either way: errno as the program left it */

	if (!atomic_load_explicit(&unsupported, memory_order_relaxed)) {
		if (madvise(addr, size, MADV_POPULATE_WRITE) == 0 || errno != EINVAL) {
			/* done, or ENOMEM/EFAULT: the pages then fault as the program goes */
			errno = saved;
			return;
		}
		atomic_store_explicit(&unsupported, true, memory_order_relaxed);
		errno = saved;
	}
	for (size_t off = 0; off < size; off += page_size)
		((volatile uint8_t *)addr)[off] = 0;
}

static int linux_bind_node(void *addr, size_t size, int node, bool strict)
{
	unsigned long mask[16] = { 0 };

	if (node < 0 || node >= (int)(sizeof(mask) * 8))
		return -EINVAL;
	mask[node / (8 * sizeof(long))] = 1UL << (node % (8 * sizeof(long)));
	if (syscall(SYS_mbind, addr, size, strict ? MPOL_BIND : MPOL_PREFERRED, mask,
		    sizeof(mask) * 8, 0UL))
		return -errno;
	return 0;
}

static int linux_current_node(void)
{
	unsigned cpu, node;

	if (syscall(SYS_getcpu, &cpu, &node, NULL))
		return SEFER_NO_NODE;
	return (int)node;
}

static bool linux_random_bytes(void *buf, size_t len)
{
	return getrandom(buf, len, GRND_NONBLOCK) == (ssize_t)len;
}

static uint64_t linux_thread_id(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

static int linux_sync(sefer_file_t f)
{
	return fdatasync((int)f) ? -errno : 0;
}

/*
 * Resize a reservation with mremap, which moves page-table entries, not bytes: in place when
 * it shrinks or when the address space after it is free, else into a new aligned reservation
 * (MREMAP_FIXED replaces that mapping; the old range is unmapped by the move).
 */
static void *linux_remap(void *addr, size_t old_size, size_t new_size, size_t align)
{
	void *dst, *p;

	if (new_size <= old_size) {
		if (new_size < old_size)
			munmap((uint8_t *)addr + new_size, old_size - new_size);
		return addr;
	}
	p = mremap(addr, old_size, new_size, 0);
	if (p != MAP_FAILED)
		return p;
	dst = posix_reserve(new_size, align, SEFER_NO_NODE);
	if (!dst)
		return NULL;
	p = mremap(addr, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (p == MAP_FAILED) {
		munmap(dst, new_size);
		return NULL;
	}
	return p;
}

/* The kernel sets AT_SECURE for setuid/setgid exec, file capabilities and LSM transitions. */
static bool linux_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

const struct sefer_os_ops sefer_os = {
	.name = "linux",
	.init = linux_init,
	.reserve = posix_reserve,
	.release = posix_release,
	.remap = linux_remap,
	.commit = posix_commit,
	.decommit = posix_decommit,
	.protect = posix_protect,
	.purge = linux_purge,
	.populate = linux_populate,
	.bind_node = linux_bind_node,
	.current_node = linux_current_node,
	.clock_ms = posix_clock_ms,
	.getenv = posix_getenv,
	.secure = linux_secure,
	.write_err = posix_write_err,
	.keep_err = posix_keep_err,
	.random_bytes = linux_random_bytes,
	.thread_exit_hook = posix_thread_exit_hook,
	.thread_id = linux_thread_id,
	.yield = posix_yield,
	.open_file = posix_open_file,
	.close_file = posix_close_file,
	.pread = posix_pread,
	.pwrite = posix_pwrite,
	.sync = linux_sync,
	.truncate = posix_truncate,
	.file_size = posix_file_size,
	.lock_file = posix_lock_file,
};
