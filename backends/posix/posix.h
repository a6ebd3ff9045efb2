/* SPDX-License-Identifier: MIT */
/*
 * The POSIX part shared by the Linux and Darwin backends: mmap reservation, clock,
 * environment, error output and file operations. Each backend builds its sefer_os instance
 * from these plus its own few OS-specific ops.
 */
#ifndef SEFER_BACKEND_POSIX_H
#define SEFER_BACKEND_POSIX_H

#include <sefer/os.h>

SEFER_INTERNAL void sefer__posix_init(struct sefer_os_info *info);
SEFER_INTERNAL void *sefer__posix_reserve(size_t size, size_t align, int node);
SEFER_INTERNAL void sefer__posix_hint_skip(uintptr_t old_end, uintptr_t new_end);
SEFER_INTERNAL void sefer__posix_release(void *addr, size_t size);
SEFER_INTERNAL bool sefer__posix_protect(void *addr, size_t size, bool none);
SEFER_INTERNAL uint64_t sefer__posix_clock_ms(void);
SEFER_INTERNAL bool sefer__posix_getenv(const char *name, char *buf, size_t len);
SEFER_INTERNAL bool sefer__posix_env_entry(size_t i, char *buf, size_t len);
SEFER_INTERNAL void sefer__posix_write_err(const char *msg, size_t len);
SEFER_INTERNAL void sefer__posix_keep_err(void);
SEFER_INTERNAL bool sefer__posix_thread_exit_hook(void (*fn)(void *), void *arg);
SEFER_INTERNAL void sefer__posix_yield(void);

SEFER_INTERNAL sefer_file_t sefer__posix_open_file(const char *path, int flags);
SEFER_INTERNAL void sefer__posix_close_file(sefer_file_t f);
SEFER_INTERNAL int64_t sefer__posix_pread(sefer_file_t f, void *buf, size_t len, uint64_t off);
SEFER_INTERNAL int64_t sefer__posix_pwrite(sefer_file_t f, const void *buf, size_t len,
					   uint64_t off);
SEFER_INTERNAL int sefer__posix_truncate(sefer_file_t f, uint64_t len);
SEFER_INTERNAL int64_t sefer__posix_file_size(sefer_file_t f);
SEFER_INTERNAL int sefer__posix_lock_file(sefer_file_t f, bool shared);

#endif
