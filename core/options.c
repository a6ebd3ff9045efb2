// SPDX-License-Identifier: MIT
/* SEFER_* environment options (see options.h). */
#include "core/error.h"
#include "core/init.h"
#include "core/options.h"
#include "sefer/os.h"

SEFER_INTERNAL struct sefer_options sefer__opt = {
	.show_stats = false,
	.verbose = false,
	.on_error = ON_ERROR_ABORT,
	/* Documentation/decommit.rst: 10 ms gave back what redis freed between two commands
	 * and faulted it in again; peers: mimalloc 2.0.9 25 ms (500 for a segment), jemalloc 10 s
	 */
	.purge_delay_ms = 50,
	.calloc_prefault = (uint64_t)CONFIG_CALLOC_PREFAULT_KB << 10,
};

bool sefer__parse_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

bool sefer__parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t n = 0;
	unsigned shift = 0;
	uint64_t v;

	while (s[n] >= '0' && s[n] <= '9' && n < sizeof(num) - 1) {
		num[n] = s[n];
		n++;
	}
	num[n] = '\0';
	switch (s[n]) {
	case '\0':
		break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default:
		return false;
	}
	if (s[n] && s[n + 1] && !((s[n + 1] == 'B' || s[n + 1] == 'b') && !s[n + 2]) &&
	    !((s[n + 1] == 'i') && (s[n + 2] == 'B') && !s[n + 3]))
		return false;
	if (!sefer__parse_uint(num, &v) || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = v << shift;
	return true;
}

static bool read_env(const char *name, char *buf, size_t len)
{
	char full[64] = "SEFER_";
	size_t i = 6;

	for (const char *s = name; *s && i < sizeof(full) - 1; s++)
		full[i++] = *s;
	full[i] = '\0';
	return sefer__os.getenv(full, buf, len);
}

static void bad_value(const char *name, const char *val, const char *expect)
{
	if (sefer__opt.secure)
		return;
	sefer__message("bad value '%s' for SEFER_%s (expected %s); keeping the default", val, name,
		      expect);
}

bool sefer__option_bool(const char *name, bool *out)
{
	char v[32];

	/* Every boolean option prints (SHOW_STATS, VERBOSE): never from a secure process. */
	if (sefer__opt.secure || !read_env(name, v, sizeof(v)))
		return false;
	if ((v[0] == '1' || v[0] == '0') && !v[1]) {
		*out = v[0] == '1';
		return true;
	}
	bad_value(name, v, "0 or 1");
	return false;
}

/* Secure execution: a number may lower its option (tighten), never raise it. */
static bool take(uint64_t v, uint64_t *out)
{
	if (sefer__opt.secure && v > *out)
		return false;
	*out = v;
	return true;
}

bool sefer__option_uint(const char *name, uint64_t *out)
{
	char v[32];
	uint64_t n;

	if (!read_env(name, v, sizeof(v)))
		return false;
	if (sefer__parse_uint(v, &n))
		return take(n, out);
	bad_value(name, v, "a whole number");
	return false;
}

bool sefer__option_size(const char *name, uint64_t *out)
{
	char v[32];
	uint64_t n;

	if (!read_env(name, v, sizeof(v)))
		return false;
	if (sefer__parse_size(v, &n))
		return take(n, out);
	bad_value(name, v, "a byte count with an optional K, M, G or T suffix");
	return false;
}

void sefer__options_init(void)
{
	char v[32];

	sefer__opt.secure = os_has(SEFER_OS_SECURE) && sefer__os.secure();
	sefer__option_bool("SHOW_STATS", &sefer__opt.show_stats);
	sefer__option_bool("VERBOSE", &sefer__opt.verbose);
	sefer__option_uint("PURGE_DELAY_MS", &sefer__opt.purge_delay_ms);
	sefer__option_size("CALLOC_PREFAULT", &sefer__opt.calloc_prefault);
	if (read_env("ON_ERROR", v, sizeof(v))) {
		if (!__builtin_strcmp(v, "abort"))
			sefer__opt.on_error = ON_ERROR_ABORT;
		else if (!__builtin_strcmp(v, "warn"))
			/* warn turns a double free into "carry on": not on a caller's say-so */
			sefer__opt.on_error = sefer__opt.secure ? ON_ERROR_ABORT : ON_ERROR_WARN;
		else
			bad_value("ON_ERROR", v, "abort or warn");
	}
}
