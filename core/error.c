// SPDX-License-Identifier: MIT
/* A small printf for diagnostics that never allocates, and the error reports built on it. */
#include <stdlib.h>

#include "core/debug.h"
#include "core/error.h"
#include "core/options.h"
#include "sefer/os.h"

struct out {
	char *buf;
	size_t len, pos;
};

static void put(struct out *o, char c)
{
	if (o->pos + 1 < o->len)
		o->buf[o->pos++] = c;
}

static void put_num(struct out *o, unsigned long long v, unsigned base, int neg)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = "0123456789abcdef"[v % base];
	while ((v /= base));
	if (neg)
		put(o, '-');
	while (n)
		put(o, tmp[--n]);
}

/* A width (%12s, %5u): right-align what was written from at in width characters. */
static void pad_left(struct out *o, size_t at, size_t width)
{
	size_t n = o->pos - at, pad;

	if (n >= width)
		return;
	pad = width - n;
	if (o->pos + pad + 1 > o->len)
		pad = o->len > o->pos + 1 ? o->len - o->pos - 1 : 0;
	for (size_t i = o->pos; i-- > at;)
		o->buf[i + pad] = o->buf[i];
	for (size_t i = 0; i < pad; i++)
		o->buf[at + i] = ' ';
	o->pos += pad;
}

void sefer__vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct out o = { buf, len, 0 };

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		int lng = 0, sz = 0;
		size_t width = 0, at;

		fmt++;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (size_t)(*fmt++ - '0');
		at = o.pos;
		while (*fmt == 'l')
			lng++, fmt++;
		if (*fmt == 'z')
			sz = 1, fmt++;
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);

			for (s = s ? s : "(null)"; *s; s++)
				put(&o, *s);
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, 0);
			break;
		case 'd': {
			long long v = sz ? (long long)va_arg(ap, ptrdiff_t) :
			    lng == 1 ? (long long)va_arg(ap, long) :
			    lng ? va_arg(ap, long long) : (long long)va_arg(ap, int);

			put_num(&o, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v,
				10, v < 0);
			break;
		}
		case 'u':
		case 'x': {
			unsigned long long v =
				sz	   ? (unsigned long long)va_arg(ap, size_t)
				: lng == 1 ? (unsigned long long)va_arg(ap, unsigned long)
				: lng	   ? va_arg(ap, unsigned long long)
					   : (unsigned long long)va_arg(ap, unsigned);

			put_num(&o, v, *fmt == 'x' ? 16 : 10, 0);
			break;
		}
		case '%':
			put(&o, '%');
			break;
		default:
			put(&o, '?');
		}
		pad_left(&o, at, width);
	}
	o.buf[o.pos < o.len ? o.pos : o.len - 1] = '\0';
}

void sefer__format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sefer__vformat(buf, len, fmt, ap);
	va_end(ap);
}

void sefer__message(const char *fmt, ...)
{
	char buf[512] = "sefer: ";
	va_list ap;
	size_t n = 7;

	va_start(ap, fmt);
	sefer__vformat(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	while (buf[n])
		n++;
	buf[n++] = '\n';
	sefer__os.write_err(buf, n);
}

void sefer__report_error(const char *what, const void *p, const char *reason)
{
	sefer__message("%s of %p (%s)", what, p, reason);
	if (sefer__opt.on_error != ON_ERROR_WARN)
		abort();
}

void sefer__report_corruption(const char *what, const void *p)
{
	sefer__message("heap corruption: %s at %p", what, p);
	abort();
}

#if IS_ENABLED(CONFIG_DEBUG_CORE)
void sefer__debug_failed(const char *file, int line, const char *what)
{
	sefer__message("core check failed: %s:%d: %s", file, line, what);
	abort();
}
#endif
