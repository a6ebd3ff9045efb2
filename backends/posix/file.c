// SPDX-License-Identifier: MIT
/*
 * POSIX file operations for persist/: open (a created file's directory synced), positional
 * I/O, truncate, size and an exclusive lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/posix/posix.h"

/*
 * A new file's name lives in its directory: until the directory is synced, a power cut can
 * take the file away even after the file itself was synced. 0 or -errno.
 */
static int sync_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	int fd, r = 0;

	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash && n == 0)
		n = 1;					/* "/file": the root */
	memcpy(dir, slash ? path : ".", slash ? n : 1);
	dir[slash ? n : 1] = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd))
		r = -errno;
	close(fd);
	return r;
}

sefer_file_t sefer__posix_open_file(const char *path, int flags)
{
	int oflags = (flags & SEFER_OPEN_READ ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int fd, r;

	if (flags & SEFER_OPEN_CREATE)
		oflags |= O_CREAT;
	if (flags & SEFER_OPEN_EXCL)
		oflags |= O_EXCL;
	fd = open(path, oflags, 0644);
	if (fd < 0)
		return -errno;
	if ((flags & SEFER_OPEN_CREATE) && (r = sync_parent_dir(path))) {
		close(fd);
		if (flags & SEFER_OPEN_EXCL)
			unlink(path); /* ours: do not leave a file we could not make durable */
		return r;
	}
	return fd;
}

void sefer__posix_close_file(sefer_file_t f)
{
	close((int)f);
}

int64_t sefer__posix_pread(sefer_file_t f, void *buf, size_t len, uint64_t off)
{
	ssize_t r;

	do
		r = pread((int)f, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int64_t sefer__posix_pwrite(sefer_file_t f, const void *buf, size_t len, uint64_t off)
{
	ssize_t r;

	do
		r = pwrite((int)f, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int sefer__posix_truncate(sefer_file_t f, uint64_t len)
{
	return ftruncate((int)f, (off_t)len) ? -errno : 0;
}

int64_t sefer__posix_file_size(sefer_file_t f)
{
	struct stat st;

	return fstat((int)f, &st) ? -errno : (int64_t)st.st_size;
}

int sefer__posix_lock_file(sefer_file_t f, bool shared)
{
	if (flock((int)f, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
}
