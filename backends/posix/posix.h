/* SPDX-License-Identifier: MIT */
/*
 * The POSIX part shared by the Linux and Darwin backends: mmap reservation, clock,
 * environment, error output and file operations. Each backend builds its sefer_os instance
 * from these plus its own few OS-specific ops.
 */
#ifndef SEFER_BACKEND_POSIX_H
#define SEFER_BACKEND_POSIX_H

#include <sefer/os.h>

void posix_init(struct sefer_os_info *info);
void *posix_reserve(size_t size, size_t align, int node);
void posix_release(void *addr, size_t size);
bool posix_commit(void *addr, size_t size, bool *is_zero);
bool posix_decommit(void *addr, size_t size);
bool posix_protect(void *addr, size_t size, bool none);
uint64_t posix_clock_ms(void);
bool posix_getenv(const char *name, char *buf, size_t len);
void posix_write_err(const char *msg, size_t len);
void posix_keep_err(void);
bool posix_thread_exit_hook(void (*fn)(void *), void *arg);
uint64_t posix_thread_id(void);
void posix_yield(void);

sefer_file_t posix_open_file(const char *path, int flags);
void posix_close_file(sefer_file_t f);
int64_t posix_pread(sefer_file_t f, void *buf, size_t len, uint64_t off);
int64_t posix_pwrite(sefer_file_t f, const void *buf, size_t len, uint64_t off);
int posix_truncate(sefer_file_t f, uint64_t len);
int64_t posix_file_size(sefer_file_t f);
int posix_lock_file(sefer_file_t f);

#endif
