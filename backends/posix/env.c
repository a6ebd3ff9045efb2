// SPDX-License-Identifier: MIT
/*
 * POSIX clock, environment, error output and thread-exit notification. Nothing here
 * allocates: sefer may be the process's malloc and these run inside it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/posix/posix.h"

#ifdef __APPLE__
/* DARWIN: a dylib cannot reference `environ` directly; libSystem hands it out. */
#include <crt_externs.h>
#define environ (*_NSGetEnviron())
#else
extern char **environ;
#endif

/*
 * The tick clock where the system has one: Linux's CLOCK_MONOTONIC_COARSE is the time of the
 * last scheduler tick (1-10 ms resolution), read in 4 ns where CLOCK_MONOTONIC took 16 ns here.
 * sefer's deadlines are tens of milliseconds, and a large free may read the clock (the large
 * cache's decay): at 16 ns a 16 MiB buffer freed and reallocated in a loop spent most of its
 * time there.
 */
#ifdef CLOCK_MONOTONIC_COARSE
#define SEFER_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define SEFER_CLOCK CLOCK_MONOTONIC
#endif

uint64_t sefer__posix_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(SEFER_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool sefer__posix_getenv(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	if (!environ || !len)
		return false;
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
			const char *v = *e + n + 1;
			size_t i;

			for (i = 0; i + 1 < len && v[i]; i++)
				buf[i] = v[i];
			buf[i] = '\0';
			return true;
		}
	}
	return false;
}

bool sefer__posix_env_entry(size_t i, char *buf, size_t len)
{
	const char *e;
	size_t n;

	if (!environ || !len)
		return false;
	for (n = 0; n < i; n++)
		if (!environ[n])
			return false;
	e = environ[i];
	if (!e)
		return false;
	for (n = 0; n + 1 < len && e[n]; n++)
		buf[n] = e[n];
	buf[n] = '\0';
	return true;
}

static int err_fd = STDERR_FILENO;

void sefer__posix_keep_err(void)
{
	int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 100);

	if (fd >= 0)
		err_fd = fd;
}

void sefer__posix_write_err(const char *msg, size_t len)
{
	while (len) {
		ssize_t w = write(err_fd, msg, len);

		if (w <= 0)
			return;
		msg += w;
		len -= (size_t)w;
	}
}

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static void (*_Atomic exit_fn)(void *);

static void exit_trampoline(void *arg)
{
	void (*fn)(void *) = atomic_load_explicit(&exit_fn, memory_order_relaxed);

	if (fn)
		fn(arg);
}

static void exit_key_init(void)
{
	pthread_key_create(&exit_key, exit_trampoline);
}

bool sefer__posix_thread_exit_hook(void (*fn)(void *), void *arg)
{
	pthread_once(&exit_once, exit_key_init);
	atomic_store_explicit(&exit_fn, fn, memory_order_relaxed);
	return pthread_setspecific(exit_key, arg) == 0;
}

void sefer__posix_yield(void)
{
	sched_yield();
}
