/* SPDX-License-Identifier: MIT */
/*
 * Options from SEFER_* environment variables, read once at process init without allocating.
 * A bad value is named in a message and the default kept. Documentation/kconfig.rst lists them.
 *
 * Secure execution (sefer_os.secure(): setuid, setgid, file capabilities) hands sefer the
 * environment of a less privileged caller, as glibc's tunables see it. There every option that
 * weakens a check, sends output somewhere or raises a limit is ignored without a word: the
 * boolean options (all of them print) are ignored, SEFER_ON_ERROR keeps only "abort", and a
 * number (all of them are "lower is tighter") is taken only when it does not exceed the value
 * it replaces. Bad values are not reported either.
 */
#ifndef SEFER_CORE_OPTIONS_H
#define SEFER_CORE_OPTIONS_H

#include "core/config.h"

enum on_error { ON_ERROR_ABORT, ON_ERROR_WARN };

/* SEFER_SHOW_STATS: 0 none, 1 the table, 2 the table and the size classes, json */
enum show_stats { SHOW_STATS_TABLE = 1, SHOW_STATS_CLASSES = 2, SHOW_STATS_JSON = 3 };

struct sefer_options {
	unsigned show_stats;	 /* SEFER_SHOW_STATS=1|2|json: summary on stderr at exit */
	bool verbose;		 /* SEFER_VERBOSE=1: report init, segments, purges */
	enum on_error on_error;	 /* SEFER_ON_ERROR=abort|warn */
	uint64_t purge_delay_ms; /* SEFER_PURGE_DELAY_MS */
	uint64_t calloc_prefault; /* SEFER_CALLOC_PREFAULT: bytes (CONFIG_CALLOC_PREFAULT_KB) */
	bool secure;		 /* secure execution: see above */
};

SEFER_INTERNAL_EXTERN struct sefer_options sefer__opt;

SEFER_INTERNAL void sefer__options_init(void);

/*
 * Parsers shared with the policies. Each reads SEFER_<name>; returns true and stores the value
 * if it is set and valid; reports "sefer: bad value ... for SEFER_<name>" and returns false if
 * set but invalid; false silently if unset. In secure execution option_bool always returns
 * false, and option_uint/option_size return false (silently) for a bad value or one above
 * *out, so a number option must hold its default in *out when it is read.
 */
SEFER_INTERNAL bool sefer__option_bool(const char *name, bool *out);
SEFER_INTERNAL bool sefer__option_uint(const char *name, uint64_t *out);
/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
SEFER_INTERNAL bool sefer__option_size(const char *name, uint64_t *out);

/* Pure parsers (unit-tested): true on success. */
SEFER_INTERNAL __must_check bool sefer__parse_uint(const char *s, uint64_t *out);
SEFER_INTERNAL __must_check bool sefer__parse_size(const char *s, uint64_t *out);

#endif
