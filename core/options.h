/* SPDX-License-Identifier: MIT */
/*
 * Options from SEFER_* environment variables, read once at process init without allocating.
 * A bad value is named in a message and the default kept. Documentation/kconfig.rst lists them.
 */
#ifndef SEFER_CORE_OPTIONS_H
#define SEFER_CORE_OPTIONS_H

#include "core/config.h"

enum on_error { ON_ERROR_ABORT, ON_ERROR_WARN };

struct sefer_options {
	bool show_stats;	 /* SEFER_SHOW_STATS=1: summary on stderr at exit */
	bool verbose;		 /* SEFER_VERBOSE=1: report init, segments, purges */
	enum on_error on_error;	 /* SEFER_ON_ERROR=abort|warn */
	uint64_t purge_delay_ms; /* SEFER_PURGE_DELAY_MS */
};

extern struct sefer_options sefer_opt SEFER_INTERNAL;

void options_init(void) SEFER_INTERNAL;

/*
 * Parsers shared with the policies. Each reads SEFER_<name>; returns true and stores the value
 * if it is set and valid; reports "sefer: bad value ... for SEFER_<name>" and returns false if
 * set but invalid; false silently if unset.
 */
bool option_bool(const char *name, bool *out) SEFER_INTERNAL;
bool option_uint(const char *name, uint64_t *out) SEFER_INTERNAL;
/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
bool option_size(const char *name, uint64_t *out) SEFER_INTERNAL;

/* Pure parsers (unit-tested): true on success. */
bool parse_uint(const char *s, uint64_t *out) SEFER_INTERNAL;
bool parse_size(const char *s, uint64_t *out) SEFER_INTERNAL;

#endif
