// SPDX-License-Identifier: MIT
/*
 * The Windows backend: VirtualAlloc/VirtualFree, VirtualAllocExNuma, FlsAlloc thread exit,
 * BCryptGenRandom, GetTickCount64, the process's working set and times (procinfo) and Win32
 * file handles for persist/. See include/sefer/os.h for each op's contract and
 * Documentation/backends/win32.rst for what is tested where.
 *
 * Nothing here calls the C runtime's malloc: environment, error output and file I/O go
 * straight to kernel32.
 *
 * Address space: VirtualAlloc reserves at the allocation granularity (64 KiB) and a
 * reservation can only be released whole (MEM_RELEASE with size 0), so the POSIX trick of
 * over-mapping and trimming does not exist. An aligned reservation is made by (1) trying the
 * address just past the previous one, (2) reserving size + align to find an aligned hole,
 * releasing it and reserving again exactly at the aligned address, retried because another
 * thread may take the hole in between, (3) as a last resort keeping an over-sized reservation
 * and remembering its base in a small table so release() frees the real base.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <bcrypt.h>
#include <psapi.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "sefer/os.h"

#ifndef STATUS_SUCCESS
#define STATUS_SUCCESS ((NTSTATUS)0)
#endif

static size_t page_size = 4096;
static size_t granularity = 65536;
static int node_count = 1;
static _Atomic(uintptr_t) next_hint;

static void win32_init(struct sefer_os_info *info)
{
	SYSTEM_INFO si;
	ULONG highest = 0;

	GetSystemInfo(&si);
	if (si.dwPageSize)
		page_size = si.dwPageSize;
	if (si.dwAllocationGranularity)
		granularity = si.dwAllocationGranularity;
	if (GetNumaHighestNodeNumber(&highest) && highest < 1024)
		node_count = (int)highest + 1;
	info->page_size = page_size;
	info->alloc_granularity = granularity;
	info->node_count = node_count;
}

/* VirtualAlloc, or VirtualAllocExNuma when a node is given. NULL on failure. */
static void *valloc(void *addr, size_t size, DWORD type, int node)
{
	if (node >= 0 && node < node_count)
		return VirtualAllocExNuma(GetCurrentProcess(), addr, size, type, PAGE_READWRITE,
					  (DWORD)node);
	return VirtualAlloc(addr, size, type, PAGE_READWRITE);
}

/*
 * Over-sized reservations kept as a last resort: release() must hand VirtualFree the base
 * of the reservation, not the aligned address inside it. A fixed table (no allocation);
 * when it is full the last resort is simply not taken.
 */
#define SLACK_SLOTS 64
static struct {
	_Atomic(uintptr_t) aligned;
	uintptr_t base;
} slack[SLACK_SLOTS];

static void *reserve_slack(size_t size, size_t align, int node)
{
	for (int i = 0; i < SLACK_SLOTS; i++) {
		uintptr_t expect = 0;

		/* Claim the slot with a placeholder (1) before reserving. */
		if (!atomic_compare_exchange_strong_explicit(&slack[i].aligned, &expect, 1,
							     memory_order_relaxed,
							     memory_order_relaxed))
			continue;
		uint8_t *base = valloc(NULL, size + align, MEM_RESERVE, node);

		if (!base) {
			atomic_store_explicit(&slack[i].aligned, 0, memory_order_relaxed);
			return NULL;
		}
		uintptr_t start = ((uintptr_t)base + align - 1) & ~(uintptr_t)(align - 1);

		if (!valloc((void *)start, size, MEM_COMMIT, node)) {
			VirtualFree(base, 0, MEM_RELEASE);
			atomic_store_explicit(&slack[i].aligned, 0, memory_order_relaxed);
			return NULL;
		}
		slack[i].base = (uintptr_t)base;
		/* release: a release() that finds `start` here also sees `base`. */
		atomic_store_explicit(&slack[i].aligned, start, memory_order_release);
		return (void *)start;
	}
	return NULL;
}

static void *win32_reserve(size_t size, size_t align, int node)
{
	uintptr_t hint = atomic_load_explicit(&next_hint, memory_order_relaxed);
	uint8_t *p;

	if (size + align < size)
		return NULL;
	if (align <= granularity) {
		p = valloc(NULL, size, MEM_RESERVE | MEM_COMMIT, node);
		return p;
	}
	/* 1. Right after the previous reservation: usually free and already aligned. */
	if (hint && !(hint & (align - 1))) {
		p = valloc((void *)hint, size, MEM_RESERVE | MEM_COMMIT, node);
		if (p) {
			atomic_store_explicit(&next_hint, (uintptr_t)p + size,
					      memory_order_relaxed);
			return p;
		}
	}
	/* 2. Find an aligned hole, give it back, take exactly the aligned part. */
	for (int tries = 0; tries < 8; tries++) {
		p = VirtualAlloc(NULL, size + align, MEM_RESERVE, PAGE_NOACCESS);
		if (!p)
			return NULL;
		uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);

		VirtualFree(p, 0, MEM_RELEASE);
		p = valloc((void *)start, size, MEM_RESERVE | MEM_COMMIT, node);
		if (p) {
			atomic_store_explicit(&next_hint, start + size, memory_order_relaxed);
			return p;
		}
		/* another thread took part of the hole meanwhile: try again */
	}
	/* 3. Keep an over-sized reservation. */
	return reserve_slack(size, align, node);
}

static void win32_release(void *addr, size_t size)
{
	(void)size;
	for (int i = 0; i < SLACK_SLOTS; i++) {
		/* acquire: pairs with the release in reserve_slack, so base is the one stored. */
		if (atomic_load_explicit(&slack[i].aligned, memory_order_acquire) ==
		    (uintptr_t)addr) {
			VirtualFree((void *)slack[i].base, 0, MEM_RELEASE);
			atomic_store_explicit(&slack[i].aligned, 0, memory_order_relaxed);
			return;
		}
	}
	VirtualFree(addr, 0, MEM_RELEASE);
}

/* Guard pages: PAGE_NOACCESS keeps the pages committed (they count against the commit
 * limit, one page per guard) but any access raises an access violation. */
static bool win32_protect(void *addr, size_t size, bool none)
{
	DWORD old;

	return VirtualProtect(addr, size, none ? PAGE_NOACCESS : PAGE_READWRITE, &old) != 0;
}

static bool win32_purge(void *addr, size_t size, bool eager)
{
	if (!eager) {
		/* MEM_RESET: the pages stay committed, their contents may be discarded. */
		if (VirtualAlloc(addr, size, MEM_RESET, PAGE_READWRITE))
			return false;
	}
	/*
	 * Decommit and recommit: the working set drops now and the range reads as zero. The
	 * recommit takes back the commit charge the decommit just returned, so it fails only if
	 * another thread took that charge in between: retry, since the range must stay usable.
	 */
	if (!VirtualFree(addr, size, MEM_DECOMMIT))
		return false;
	for (int tries = 0; tries < 100; tries++) {
		if (VirtualAlloc(addr, size, MEM_COMMIT, PAGE_READWRITE))
			return true;
		Sleep(tries < 10 ? 0 : 1);
	}
	return false;
}

/*
 * Windows places pages on a node when the reservation is made (VirtualAllocExNuma), not
 * afterwards: reserve() takes the node. Binding an existing range is not supported.
 */
static int win32_bind_node(void *addr, size_t size, int node, bool strict)
{
	(void)addr;
	(void)size;
	(void)strict;
	return node >= 0 && node < node_count ? -EOPNOTSUPP : -EINVAL;
}

static int win32_current_node(void)
{
	PROCESSOR_NUMBER pn;
	USHORT node;

	if (node_count <= 1)
		return node_count == 1 ? 0 : SEFER_NO_NODE;
	GetCurrentProcessorNumberEx(&pn);
	if (!GetNumaProcessorNodeEx(&pn, &node))
		return SEFER_NO_NODE;
	return (int)node;
}

static uint64_t win32_clock_ms(void)
{
	return (uint64_t)GetTickCount64();
}

static bool win32_getenv(const char *name, char *buf, size_t len)
{
	DWORD n;

	if (!len)
		return false;
	/* Reads the process environment block into buf: no allocation. */
	n = GetEnvironmentVariableA(name, buf, len > 0x7fffffff ? 0x7fffffff : (DWORD)len);
	if (n == 0) {
		buf[0] = '\0';
		return GetLastError() != ERROR_ENVVAR_NOT_FOUND; /* set but empty */
	}
	if (n >= len) {
		/* Too long: buf is unspecified; fetch a truncated copy through a bounded stack
		 * buffer. */
		char tmp[1024];

		if (n < sizeof(tmp) &&
		    GetEnvironmentVariableA(name, tmp, sizeof(tmp)) < sizeof(tmp)) {
			size_t i;

			for (i = 0; i + 1 < len && tmp[i]; i++)
				buf[i] = tmp[i];
			buf[i] = '\0';
			return true;
		}
		buf[0] = '\0';
		return true;
	}
	return true;
}

/*
 * The i-th "NAME=value" of the environment block. The block is a copy Windows makes on the
 * process heap (not sefer's), walked from the start at each call: sefer asks once per entry,
 * at init. Entries starting with '=' (the per-drive current directories) are not variables.
 */
static bool win32_env_entry(size_t i, char *buf, size_t len)
{
	char *block = GetEnvironmentStringsA(), *e;
	bool found = false;

	if (!block || !len)
		return false;
	for (e = block; *e; e += strlen(e) + 1) {
		if (*e == '=')
			continue;
		if (i-- == 0) {
			size_t n;

			for (n = 0; n + 1 < len && e[n]; n++)
				buf[n] = e[n];
			buf[n] = '\0';
			found = true;
			break;
		}
	}
	FreeEnvironmentStringsA(block);
	return found;
}

static HANDLE err_handle;

static void win32_keep_err(void)
{
	HANDLE h = GetStdHandle(STD_ERROR_HANDLE), dup;

	if (h && h != INVALID_HANDLE_VALUE &&
	    DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, FALSE,
			    DUPLICATE_SAME_ACCESS))
		err_handle = dup;
}

static void win32_write_err(const char *msg, size_t len)
{
	HANDLE h = err_handle ? err_handle : GetStdHandle(STD_ERROR_HANDLE);

	if (!h || h == INVALID_HANDLE_VALUE)
		return;
	while (len) {
		DWORD w = 0, chunk = len > 0x10000 ? 0x10000 : (DWORD)len;

		if (!WriteFile(h, msg, chunk, &w, NULL) || !w)
			return;
		msg += w;
		len -= w;
	}
}

static bool win32_random_bytes(void *buf, size_t len)
{
	if (len > 0xffffffffu)
		return false;
	return BCryptGenRandom(NULL, buf, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) ==
	       STATUS_SUCCESS;
}

/*
 * Thread exit: a fiber-local-storage slot with a destructor. Windows calls the callback when
 * a thread with a non-NULL value exits (and for fibers deleted), on that thread, before its
 * TLS is torn down.
 */
static DWORD fls_index = FLS_OUT_OF_INDEXES;
static INIT_ONCE fls_once = INIT_ONCE_STATIC_INIT;
static void (*_Atomic exit_fn)(void *);

static void WINAPI fls_callback(void *arg)
{
	void (*fn)(void *) = atomic_load_explicit(&exit_fn, memory_order_relaxed);

	if (fn && arg)
		fn(arg);
}

static BOOL CALLBACK fls_init(PINIT_ONCE once, void *param, void **ctx)
{
	(void)once;
	(void)param;
	(void)ctx;
	fls_index = FlsAlloc(fls_callback);
	return TRUE;
}

static bool win32_thread_exit_hook(void (*fn)(void *), void *arg)
{
	/* InitOnceExecuteOnce orders fls_index for every caller (it is a full barrier). */
	InitOnceExecuteOnce(&fls_once, fls_init, NULL, NULL);
	if (fls_index == FLS_OUT_OF_INDEXES)
		return false;
	atomic_store_explicit(&exit_fn, fn, memory_order_relaxed);
	return FlsSetValue(fls_index, arg) != 0;
}

static void win32_yield(void)
{
	SwitchToThread();
}

/* FILETIME's 100 ns units in milliseconds */
static uint64_t filetime_ms(FILETIME t)
{
	return (((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime) / 10000;
}

/*
 * The process's figures: the working set (Windows' resident set) now and at peak, the
 * kernel's CPU times and the time since its creation; the name is the executable's file name.
 */
static void win32_procinfo(struct sefer_os_procinfo *p)
{
	PROCESS_MEMORY_COUNTERS mc;
	FILETIME created, exited, kernel, user, now;
	char path[MAX_PATH];
	DWORD n = GetModuleFileNameA(NULL, path, sizeof(path));
	const char *name = path;

	p->pid = GetCurrentProcessId();
	for (DWORD i = 0; i < n && i < sizeof(path); i++)
		if (path[i] == '\\' || path[i] == '/')
			name = path + i + 1;
	for (size_t i = 0; n && name[i] && i < sizeof(p->name) - 1; i++)
		p->name[i] = name[i];
	mc.cb = sizeof(mc);
	if (K32GetProcessMemoryInfo(GetCurrentProcess(), &mc, sizeof(mc))) {
		p->rss = mc.WorkingSetSize;
		p->rss_peak = mc.PeakWorkingSetSize;
		p->have_rss = true;
	}
	if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) {
		p->cpu_user_ms = filetime_ms(user);
		p->cpu_sys_ms = filetime_ms(kernel);
		p->have_cpu = true;
		GetSystemTimeAsFileTime(&now);
		if (filetime_ms(now) >= filetime_ms(created)) {
			p->elapsed_ms = filetime_ms(now) - filetime_ms(created);
			p->have_elapsed = true;
		}
	}
}

/* ---- files ---- */

static int werr(void)
{
	switch (GetLastError()) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
		return -ENOENT;
	case ERROR_FILE_EXISTS:
	case ERROR_ALREADY_EXISTS:
		return -EEXIST;
	case ERROR_ACCESS_DENIED:
		return -EACCES;
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
		return -EWOULDBLOCK;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL:
		return -ENOSPC;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
		return -ENOMEM;
	case ERROR_INVALID_PARAMETER:
	case ERROR_NEGATIVE_SEEK:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static sefer_file_t win32_open_file(const char *path, int flags)
{
	DWORD disp = OPEN_EXISTING;
	HANDLE h;

	if ((flags & SEFER_OPEN_CREATE) && (flags & SEFER_OPEN_EXCL))
		disp = CREATE_NEW;
	else if (flags & SEFER_OPEN_CREATE)
		disp = OPEN_ALWAYS;
	/* Shared read/write/delete like a POSIX fd: exclusion is lock_file()'s job. */
	h = CreateFileA(path, flags & SEFER_OPEN_READ ? GENERIC_READ : GENERIC_READ | GENERIC_WRITE,
			FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, disp,
			FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return werr();
	return (sefer_file_t)h;
}

static void win32_close_file(sefer_file_t f)
{
	CloseHandle((HANDLE)f);
}

static void set_offset(OVERLAPPED *ov, uint64_t off)
{
	ZeroMemory(ov, sizeof(*ov));
	ov->Offset = (DWORD)off;
	ov->OffsetHigh = (DWORD)(off >> 32);
}

/* Positional I/O on a synchronous handle: the OVERLAPPED offset is used, the file pointer
 * is not relied on, so concurrent calls at different offsets do not interfere. */
static int64_t win32_pread(sefer_file_t f, void *buf, size_t len, uint64_t off)
{
	OVERLAPPED ov;
	DWORD got = 0, n = len > 0x40000000 ? 0x40000000 : (DWORD)len;

	set_offset(&ov, off);
	if (!ReadFile((HANDLE)f, buf, n, &got, &ov))
		return GetLastError() == ERROR_HANDLE_EOF ? 0 : werr();
	return got;
}

static int64_t win32_pwrite(sefer_file_t f, const void *buf, size_t len, uint64_t off)
{
	OVERLAPPED ov;
	DWORD done = 0, n = len > 0x40000000 ? 0x40000000 : (DWORD)len;

	set_offset(&ov, off);
	if (!WriteFile((HANDLE)f, buf, n, &done, &ov))
		return werr();
	return done;
}

static int win32_sync(sefer_file_t f)
{
	return FlushFileBuffers((HANDLE)f) ? 0 : werr();
}

static int win32_truncate(sefer_file_t f, uint64_t len)
{
	LARGE_INTEGER li;

	li.QuadPart = (LONGLONG)len;
	if (!SetFilePointerEx((HANDLE)f, li, NULL, FILE_BEGIN) || !SetEndOfFile((HANDLE)f))
		return werr();
	return 0;
}

static int64_t win32_file_size(sefer_file_t f)
{
	LARGE_INTEGER li;

	if (!GetFileSizeEx((HANDLE)f, &li))
		return werr();
	return (int64_t)li.QuadPart;
}

/*
 * A byte-range lock over every possible offset. Windows enforces it on I/O: a shared lock lets
 * every handle read and none write, an exclusive one keeps other handles from the file; a
 * store opened read-only takes the shared one and only reads.
 */
static int win32_lock_file(sefer_file_t f, bool shared)
{
	DWORD flags = LOCKFILE_FAIL_IMMEDIATELY | (shared ? 0 : LOCKFILE_EXCLUSIVE_LOCK);
	OVERLAPPED ov;

	set_offset(&ov, 0);
	if (LockFileEx((HANDLE)f, flags, 0, MAXDWORD, MAXDWORD, &ov))
		return 0;
	return GetLastError() == ERROR_LOCK_VIOLATION ? -EWOULDBLOCK : werr();
}

SEFER_INTERNAL const struct sefer_os_ops SEFER_OS_BACKEND = {
	.name = "win32",
	.features = SEFER_OS_PROTECT | SEFER_OS_NUMA | SEFER_OS_KEEP_ERR | SEFER_OS_RANDOM |
		    SEFER_OS_YIELD | SEFER_OS_ENV | SEFER_OS_PROCINFO,
	.init = win32_init,
	.reserve = win32_reserve,
	.release = win32_release,
	.protect = win32_protect,
	.purge = win32_purge,
	.bind_node = win32_bind_node,
	.current_node = win32_current_node,
	.clock_ms = win32_clock_ms,
	.getenv = win32_getenv,
	.env_entry = win32_env_entry,
	.write_err = win32_write_err,
	.keep_err = win32_keep_err,
	.random_bytes = win32_random_bytes,
	.thread_exit_hook = win32_thread_exit_hook,
	.yield = win32_yield,
	.procinfo = win32_procinfo,
	.open_file = win32_open_file,
	.close_file = win32_close_file,
	.pread = win32_pread,
	.pwrite = win32_pwrite,
	.sync = win32_sync,
	.truncate = win32_truncate,
	.file_size = win32_file_size,
	.lock_file = win32_lock_file,
};
