// SPDX-License-Identifier: MIT
/*
 * SEFER_OS_PROCINFO on Linux: pid, program name, RSS now and at peak, elapsed and CPU time,
 * read from /proc/self with plain system calls into stack buffers (no allocation: the stats
 * printout runs at exit, from a destructor).
 */
#include <fcntl.h>
#include <unistd.h>

#include "backends/linux/linux.h"

/* USER_HZ: the unit of /proc's clock ticks, 100 on every Linux architecture */
#define PROC_TICKS_PER_S 100

static size_t proc_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	return n;
}

static uint64_t proc_u64(const char **s)
{
	uint64_t v = 0;

	while (**s == ' ' || **s == '\t')
		(*s)++;
	while (**s >= '0' && **s <= '9')
		v = v * 10 + (uint64_t)(*(*s)++ - '0');
	return v;
}

/* "Key:   123 kB" in /proc/self/status: the value in bytes, 0 when absent */
static uint64_t proc_status_kib(const char *status, const char *key)
{
	size_t klen = __builtin_strlen(key);

	for (const char *s = status; *s;) {
		if (!__builtin_strncmp(s, key, klen) && s[klen] == ':') {
			s += klen + 1;
			return proc_u64(&s) << 10;
		}
		while (*s && *s++ != '\n')
			;
	}
	return 0;
}

void sefer__linux_procinfo(struct sefer_os_procinfo *p)
{
	char buf[4096];
	const char *s, *name;
	uint64_t start = 0, up_cs = 0;

	p->pid = (uint64_t)getpid();
	if (proc_read_file("/proc/self/cmdline", buf, sizeof(buf))) {
		for (s = name = buf; *s; s++)
			if (*s == '/')
				name = s + 1;
		for (size_t i = 0; name[i] && i < sizeof(p->name) - 1; i++)
			p->name[i] = name[i];
	}
	if (proc_read_file("/proc/self/status", buf, sizeof(buf))) {
		p->rss = proc_status_kib(buf, "VmRSS");
		p->rss_peak = proc_status_kib(buf, "VmHWM");
		p->have_rss = p->rss != 0;
	}
	/* pid (comm) state, then fields 4..: utime is field 14, stime 15, starttime 22 */
	if (proc_read_file("/proc/self/stat", buf, sizeof(buf)) &&
	    (s = __builtin_strrchr(buf, ')'))) {
		s += 2; /* ") " */
		for (int field = 3; *s && field < 22; field++) {
			while (*s && *s != ' ')
				s++;
			if (field + 1 == 14)
				p->cpu_user_ms = proc_u64(&s) * (1000 / PROC_TICKS_PER_S);
			else if (field + 1 == 15)
				p->cpu_sys_ms = proc_u64(&s) * (1000 / PROC_TICKS_PER_S);
			else if (field + 1 == 22)
				start = proc_u64(&s);
			else if (*s)
				s++;
		}
		p->have_cpu = true;
		if (!p->name[0]) {
			const char *open = __builtin_strchr(buf, '(');
			size_t i = 0;

			for (open = open ? open + 1 : buf;
			     *open && *open != ')' && i < sizeof(p->name) - 1;)
				p->name[i++] = *open++;
		}
	}
	/* seconds since boot with two decimals */
	if (start && proc_read_file("/proc/uptime", buf, sizeof(buf))) {
		s = buf;
		up_cs = proc_u64(&s) * 100;
		if (*s == '.') {
			s++;
			up_cs += (uint64_t)(s[0] - '0') * 10 + (uint64_t)(s[1] - '0');
		}
		if (up_cs >= start * (100 / PROC_TICKS_PER_S)) {
			p->elapsed_ms = (up_cs - start * (100 / PROC_TICKS_PER_S)) * 10;
			p->have_elapsed = true;
		}
	}
}
