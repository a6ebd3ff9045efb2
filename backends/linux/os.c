// SPDX-License-Identifier: MIT
/*
 * The Linux backend: the POSIX part (backends/posix/) plus madvise purging, mbind NUMA
 * binding, getcpu, getrandom, fdatasync, AT_SECURE and /proc/self (procinfo.c). See
 * include/sefer/os.h for each op's contract.
 *
 * mbind is called through syscall(2) with the constants from <numaif.h>, so the core does not
 * link libnuma (whose constructor allocates through malloc while the process starts).
 *
 * Page work in steps of at most OS_STEP bytes: release, purge and remap zap or move the pages
 * of a range larger than OS_STEP one step per call (then unmap the whole), so that no single
 * call asks the kernel to flush more than OS_STEP of TLB. Under a hypervisor that shadows the
 * guest's page tables (measured in a 2-vCPU Firecracker guest with PVM), one call that zaps
 * more than about 5 MiB of populated pages, or moves more than about 2 MiB, makes the host
 * drop the process's shadow page tables: every page the program touches afterwards faults into
 * the host again. A program reading 300 MiB it had written took 370 ms instead of 2.5 ms after
 * one 20 MiB munmap, and as long after the first 20 MiB mremap move; the same work done in
 * 2 MiB steps left the read at 2-3 ms. On bare metal or with hardware-assisted paging the steps
 * cost one system call per 2 MiB against the zeroing or moving of 512 pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <numaif.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "backends/linux/linux.h"
#include "backends/posix/posix.h"

static int node_count = 1;
static size_t page_size = 4096;

/*
 * The largest single request the machine could ever back (os.h, max_request). sefer reserves
 * with MAP_NORESERVE, which the kernel's heuristic overcommit (vm.overcommit_memory = 0, the
 * default) does not account, so a 64 TiB request would be granted where glibc's mmap, which
 * is accounted, fails: the heuristic refuses one mapping larger than RAM + swap, and so does
 * this bound. Under 1 (always overcommit) the kernel grants glibc anything too: no bound.
 * Under 2 (never) the kernel ignores MAP_NORESERVE and refuses what passes its commit limit
 * itself. RLIMIT_AS needs nothing here: the kernel applies the limit in force to every mmap
 * and mremap. Read once, at init: no allocation (open, read, sysinfo), and no /proc needed to
 * get the default's bound.
 */
static size_t max_request(void)
{
	char mode = '0';
	struct sysinfo si;
	uint64_t units, bytes;
	static char path[] startup_data = "/proc/sys/vm/overcommit_memory";
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &mode, 1) != 1)
			mode = '0';
		close(fd);
	}
	if (mode != '0' || sysinfo(&si) != 0)
		return PTRDIFF_MAX;
	units = (uint64_t)si.totalram + si.totalswap;
	if (__builtin_mul_overflow(units, (uint64_t)(si.mem_unit ? si.mem_unit : 1), &bytes) ||
	    bytes > PTRDIFF_MAX)
		return PTRDIFF_MAX;
	return (size_t)bytes;
}

static void linux_init(struct sefer_os_info *info)
{
	sefer__posix_init(info);
	page_size = info->page_size;
	/* Count nodes without libnuma: probe /sys node directories with access(2). */
	static char base[] startup_data = "/sys/devices/system/node/node";
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
	info->max_request = max_request();
}

#define OS_STEP ((size_t)2 << 20)

/* madvise(advice) over [addr, addr+size) one OS_STEP at a time; 0, or -1 at the first failure. */
static int madvise_steps(void *addr, size_t size, int advice)
{
	for (size_t off = 0; off < size; off += OS_STEP) {
		size_t n = size - off < OS_STEP ? size - off : OS_STEP;

		if (madvise((uint8_t *)addr + off, n, advice))
			return -1;
	}
	return 0;
}

/* munmap, the pages first zapped in steps (a range that was never touched costs nothing). */
static void linux_release(void *addr, size_t size)
{
	if (size > OS_STEP)
		madvise_steps(addr, size, MADV_DONTNEED);
	munmap(addr, size);
}

static bool linux_purge(void *addr, size_t size, bool eager)
{
#ifdef MADV_FREE
	if (!eager) {
		if (madvise_steps(addr, size, MADV_FREE) == 0)
			return false;
	}
#endif
	madvise_steps(addr, size, MADV_DONTNEED);
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

/*
 * Transparent huge pages, as the core asks (os.h, hugepage). A kernel whose THP mode is
 * "always" (the upstream default, Debian's among others) backs every 2 MiB-aligned piece of an
 * anonymous mapping with a huge page at its first touch, and khugepaged collapses pieces later:
 * a 64 KiB sefer page then costs 2 MiB, and a purge of 64 KiB inside a huge page splits it
 * without giving the rest back (Documentation/decommit.rst, "Huge pages"). The advice is a
 * flag on the mapping, kept through mremap. A kernel built without THP answers EINVAL: then
 * no further call.
 */
static void linux_hugepage(void *addr, size_t size, bool huge)
{
	static _Atomic bool unsupported;
	int saved = errno; /* the caller's malloc succeeds either way */

	if (atomic_load_explicit(&unsupported, memory_order_relaxed))
		return;
	if (madvise(addr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) && errno == EINVAL)
		atomic_store_explicit(&unsupported, true, memory_order_relaxed);
	errno = saved;
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

static int linux_sync(sefer_file_t f)
{
	return fdatasync((int)f) ? -errno : 0;
}

/* Report a large block's pages left split between two places, and abort (see remap in os.h). */
static void split_pages(void)
{
	static const char msg[] =
		"sefer: mremap failed moving pages back; a large block is split\n";

	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	abort();
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif

/*
 * Move the pages of [from, from+old_size) to the start of [to, to+new_size), a reservation of
 * the caller's, one OS_STEP a call (MREMAP_FIXED replaces what lies at `to`). Every step but
 * the last leaves its source mapped (MREMAP_DONTUNMAP: an empty anonymous range), so that no
 * other thread can map there while a later step may still fail: the done steps then move back
 * into their own places. The last step also grows its piece to new_size, so the result is
 * one mapping (a later in-place mremap needs that) reading as zero past old_size; then the
 * emptied sources are unmapped. Returns 1 moved, 0 failed (the pages where they were), -1
 * when the first MREMAP_DONTUNMAP step was refused with EINVAL (a kernel before 5.7) and
 * nothing moved. A range of one step is moved by the last step alone: its failure is 0.
 */
static int move_steps(uint8_t *from, size_t old_size, uint8_t *to, size_t new_size)
{
	size_t off;

	for (off = 0; off + OS_STEP < old_size; off += OS_STEP)
		if (mremap(from + off, OS_STEP, OS_STEP,
			   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
			   to + off) == MAP_FAILED)
			break;
	if (off + OS_STEP >= old_size &&
	    mremap(from + off, old_size - off, new_size - off, MREMAP_MAYMOVE | MREMAP_FIXED,
		   to + off) != MAP_FAILED) {
		if (off)
			munmap(from, off);
		return 1;
	}
	if (!off && old_size > OS_STEP && errno == EINVAL)
		return -1;
	while (off) {
		off -= OS_STEP;
		if (mremap(to + off, OS_STEP, OS_STEP, MREMAP_MAYMOVE | MREMAP_FIXED, from + off) ==
		    MAP_FAILED)
			split_pages();
	}
	return 0;
}

/*
 * Resize a reservation with mremap, which moves page-table entries, not bytes: in place when
 * it shrinks or when the address space after it is free, else into a new aligned reservation
 * (move_steps; without MREMAP_DONTUNMAP, in one call, MREMAP_FIXED replacing the reservation
 * and the old range unmapped by the move).
 */
static void *linux_remap(void *addr, size_t old_size, size_t new_size, size_t align)
{
	uint8_t *dst;
	void *p;
	int moved;

	if (new_size <= old_size) {
		if (new_size < old_size)
			linux_release((uint8_t *)addr + new_size, old_size - new_size);
		return addr;
	}
	sefer__posix_hint_skip((uintptr_t)addr + old_size, (uintptr_t)addr + new_size);
	p = mremap(addr, old_size, new_size, 0);
	if (p != MAP_FAILED)
		return p;
	dst = sefer__posix_reserve(new_size, align, SEFER_NO_NODE);
	if (!dst)
		return NULL;
	moved = move_steps(addr, old_size, dst, new_size);
	if (moved < 0 && mremap(addr, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst) !=
			 MAP_FAILED)
		moved = 1;
	if (moved <= 0) {
		munmap(dst, new_size);
		return NULL;
	}
	return dst;
}

/* The kernel sets AT_SECURE for setuid/setgid exec, file capabilities and LSM transitions. */
static bool linux_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

SEFER_INTERNAL const struct sefer_os_ops SEFER_OS_BACKEND = {
	.name = "linux",
	.features = SEFER_OS_REMAP | SEFER_OS_POPULATE | SEFER_OS_PROTECT | SEFER_OS_NUMA |
		    SEFER_OS_SECURE | SEFER_OS_KEEP_ERR | SEFER_OS_RANDOM | SEFER_OS_YIELD | SEFER_OS_ENV |
		    SEFER_OS_PROCINFO | SEFER_OS_HUGEPAGE,
	.init = linux_init,
	.reserve = sefer__posix_reserve,
	.release = linux_release,
	.remap = linux_remap,
	.protect = sefer__posix_protect,
	.purge = linux_purge,
	.populate = linux_populate,
	.hugepage = linux_hugepage,
	.bind_node = linux_bind_node,
	.current_node = linux_current_node,
	.clock_ms = sefer__posix_clock_ms,
	.getenv = sefer__posix_getenv,
	.env_entry = sefer__posix_env_entry,
	.secure = linux_secure,
	.write_err = sefer__posix_write_err,
	.keep_err = sefer__posix_keep_err,
	.random_bytes = linux_random_bytes,
	.thread_exit_hook = sefer__posix_thread_exit_hook,
	.yield = sefer__posix_yield,
	.procinfo = sefer__linux_procinfo,
	.open_file = sefer__posix_open_file,
	.close_file = sefer__posix_close_file,
	.pread = sefer__posix_pread,
	.pwrite = sefer__posix_pwrite,
	.sync = linux_sync,
	.truncate = sefer__posix_truncate,
	.file_size = sefer__posix_file_size,
	.lock_file = sefer__posix_lock_file,
};
