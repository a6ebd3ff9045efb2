// SPDX-License-Identifier: MIT
/*
 * Which code of libsefer.so's text past the core a program runs: the tracer behind
 * check-hot-text.sh's failure message (make check-face; Documentation/decommit.rst, "The fixed
 * cost per process"). Preloaded after the library, LD_PRELOAD="libsefer.so hottrace.so" (ld.so
 * runs its constructor before the library's), with HOTTRACE_LIB the library's path as
 * /proc/self/maps spells it and HOTTRACE_OUT a file to append to.
 *
 * Its constructor makes every r-xp mapping of the library but the first (the core text)
 * PROT_NONE. The first instruction fetch, or read, on each of their pages faults: the handler
 * writes "ran ADDR" (ADDR the library's own address, as nm prints it), gives the page its
 * protection back and returns, so the program goes on and the first function it entered on
 * each page is named. The pages already mapped when the constructor runs (what ld.so or an
 * earlier constructor ran) are written as "before PAGE", from /proc/self/pagemap's present bit
 * (mincore would not do: it tells whether a file's page is cached, not whether this process
 * maps it).
 *
 * It calls no malloc (the library's malloc is the one being traced): system calls, getenv and
 * static buffers only.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_RANGES 16

static struct {
	uintptr_t start, end;
} ranges[MAX_RANGES];
static int nr_ranges;
static uintptr_t lib_base, page_size;
static int out_fd = -1;
static char maps[1 << 18];

/* one line, "WORD 0xHEX\n", with one write (async-signal-safe) */
static void put(const char *word, uintptr_t value)
{
	char line[64];
	size_t n = strlen(word), i;
	int shift;

	memcpy(line, word, n);
	line[n++] = ' ';
	line[n++] = '0';
	line[n++] = 'x';
	for (shift = 60; shift > 0 && !(value >> shift); shift -= 4)
		;
	for (; shift >= 0; shift -= 4)
		line[n++] = "0123456789abcdef"[(value >> shift) & 15];
	line[n++] = '\n';
	for (i = 0; i < n;) {
		ssize_t w = write(out_fd, line + i, n - i);

		if (w <= 0)
			return;
		i += (size_t)w;
	}
}

static void on_fault(int sig, siginfo_t *info, void *context)
{
	uintptr_t addr = (uintptr_t)info->si_addr;
	int i;

	for (i = 0; i < nr_ranges; i++) {
		if (addr >= ranges[i].start && addr < ranges[i].end) {
			put("ran", addr - lib_base);
			mprotect((void *)(addr & ~(page_size - 1)), page_size,
				 PROT_READ | PROT_EXEC);
			return;
		}
	}
	/* not ours: the default action, on the same fault again */
	signal(sig, SIG_DFL);
}

static uintptr_t parse_hex(const char **p)
{
	uintptr_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* the library's base, and its r-xp mappings past the first into ranges[] */
static int read_maps(const char *lib)
{
	size_t len = 0, lib_len = strlen(lib);
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), text = 0;
	const char *line, *next;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (len < sizeof(maps) - 1 && (n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	maps[len] = 0;
	for (line = maps; *line; line = next) {
		const char *p = line, *path;
		uintptr_t start, end, offset;
		char exec;

		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		start = parse_hex(&p);
		p++;
		end = parse_hex(&p);
		exec = p[3];
		p += 6;
		offset = parse_hex(&p);
		path = memchr(line, '/', (size_t)(next - line));
		if (!path || (size_t)(next - path) < lib_len || memcmp(path, lib, lib_len) ||
		    (path[lib_len] != '\n' && path[lib_len] != 0))
			continue;
		if (!lib_base)
			lib_base = start - offset;
		if (exec != 'x' || text++ == 0 || nr_ranges == MAX_RANGES)
			continue;
		ranges[nr_ranges].start = start;
		ranges[nr_ranges].end = end;
		nr_ranges++;
	}
	return lib_base ? 0 : -1;
}

/* the pages of ranges[] this process maps already, from pagemap's present bit (63) */
static void put_mapped(void)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), i;
	uintptr_t page;
	uint64_t entry;

	if (fd < 0)
		return;
	for (i = 0; i < nr_ranges; i++)
		for (page = ranges[i].start; page < ranges[i].end; page += page_size)
			if (pread(fd, &entry, sizeof(entry),
				  (off_t)(page / page_size * sizeof(entry))) == sizeof(entry) &&
			    (entry >> 63))
				put("before", page - lib_base);
	close(fd);
}

__attribute__((constructor)) static void hottrace_start(void)
{
	const char *lib = getenv("HOTTRACE_LIB"), *out = getenv("HOTTRACE_OUT");
	struct sigaction sa;
	int i;

	page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (!lib || !out || read_maps(lib))
		return;
	out_fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (out_fd < 0)
		return;
	put("base", lib_base);
	put_mapped();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return;
	for (i = 0; i < nr_ranges; i++)
		mprotect((void *)ranges[i].start, ranges[i].end - ranges[i].start, PROT_NONE);
}
