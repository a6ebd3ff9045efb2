/* SPDX-License-Identifier: MIT */
/*
 * Run-time options: one table per part of sefer (the core's in core/options.c, each policy's
 * in its own files, reached through struct sefer_policy_ops.options), each entry giving an
 * option's name, type, range, default, help and where its value came from. Everything that
 * lists, reads, sets or documents the options walks these tables:
 *
 *   - process init (options_init) applies the defaults, then SEFER_OPTIONS="key=value,...",
 *     then each SEFER_<NAME> variable (a single variable wins over SEFER_OPTIONS), walking the
 *     environment without allocating; an unknown SEFER_* name is reported with the closest
 *     known one; with SEFER_VERBOSE=1 every option is listed with its value and origin;
 *   - sefer_option_set/get/origin (include/sefer.h) and mallopt set and read them by name;
 *   - scripts/genoptions.py reads the tables' source and writes sefer(7)'s option list
 *     (make check-man fails when the committed page differs).
 *
 * Secure execution (sefer_os.secure(): setuid, setgid, file capabilities) hands sefer the
 * environment of a less privileged caller, as glibc's tunables see it. There, whatever comes
 * from the environment (a SEFER_<NAME> variable or SEFER_OPTIONS) obeys the option's `secure`
 * rule, and nothing about the environment is printed (bad values, unknown names, the
 * listing): OPT_SECURE_IGNORED options (every one that prints) keep their value, and
 * OPT_SECURE_LOWER ones (numbers where lower is tighter, choices listed tightest first) take
 * a value only when it does not exceed the one it replaces. A refused value leaves the origin
 * "secure execution". The program's own calls (sefer_option_set, mallopt) are not limited.
 */
#ifndef SEFER_CORE_OPTIONS_H
#define SEFER_CORE_OPTIONS_H

#include "core/config.h"

enum on_error { ON_ERROR_ABORT, ON_ERROR_WARN };

/* SEFER_THP: which segments the OS may back with transparent huge pages (core/segment.c) */
enum thp_mode { THP_NEVER, THP_LARGE, THP_SYSTEM, THP_ALWAYS, THP_AUTO };

/* SEFER_SHOW_STATS: 0 none, 1 the table, 2 the table and the size classes, json (its choices) */
enum show_stats { SHOW_STATS_TABLE = 1, SHOW_STATS_CLASSES = 2, SHOW_STATS_JSON = 3 };

/* A purge delay this long means "never" (mallopt's M_TRIM_THRESHOLD < 0); core/purge.c. */
#define PURGE_DELAY_NEVER ((uint64_t)1 << 62)

struct sefer_options {
	unsigned show_stats;	  /* SEFER_SHOW_STATS: enum show_stats, summary at exit */
	bool verbose;		  /* SEFER_VERBOSE: report init, segments, purges */
	unsigned on_error;	  /* SEFER_ON_ERROR: enum on_error */
	uint64_t purge_delay_ms;  /* SEFER_PURGE_DELAY_MS */
	uint64_t calloc_prefault; /* SEFER_CALLOC_PREFAULT: bytes */
	uint64_t parked_heaps;	  /* SEFER_PARKED_HEAPS: exited threads' heaps kept whole */
	unsigned thp;		  /* SEFER_THP: enum thp_mode */
	bool secure;		  /* secure execution: see above */
};

SEFER_INTERNAL_EXTERN struct sefer_options sefer__opt;

enum option_type {
	OPT_BOOL,   /* value.b; 1/0, yes/no, true/false, on/off */
	OPT_UINT,   /* value.u; a whole number in min..max */
	OPT_SIZE,   /* value.u; bytes, an optional K, M, G or T suffix (powers of 1024) */
	OPT_CHOICE, /* value.c; the index of one of choices */
};

enum option_secure {
	OPT_SECURE_IGNORED, /* the environment cannot set it under secure execution */
	OPT_SECURE_LOWER,   /* it may lower it (tighten), never raise it */
};

enum option_origin {
	ORIGIN_DEFAULT,
	ORIGIN_ENV,	/* its own SEFER_<NAME> variable */
	ORIGIN_OPTIONS, /* SEFER_OPTIONS */
	ORIGIN_API,	/* sefer_option_set or mallopt */
	ORIGIN_SECURE,	/* the environment asked for a value secure execution refused */
};

/*
 * One option. Tables are arrays ending with an entry whose name is NULL. The fields after
 * `help` serve sefer(7) only (scripts/genoptions.py reads them from the source, so each is a
 * string literal or a plain number there); `origin` is the only one that changes.
 */
struct sefer_option {
	const char *name; /* upper case: SEFER_<name> in the environment, lower case in
			   * SEFER_OPTIONS and sefer_option_set */
	enum option_type type;
	enum option_secure secure;
	union {
		bool *b;
		uint64_t *u;
		unsigned *c;
	} value;
	uint64_t def;		     /* the default: 0/1, a number, an index into choices */
	uint64_t min, max;	     /* OPT_UINT, OPT_SIZE: the range (both inclusive) */
	const char *const *choices; /* OPT_CHOICE: the names, NULL-terminated, tightest first */
	bool bool_words;	     /* OPT_CHOICE: yes/no, true/false, on/off name choices 1 and 0 */
	const char *help;	     /* sefer(7)'s paragraph: plain sentences, `code` in bold */
	const char *doc_default;     /* sefer(7)'s words for the default, where def is not enough */
	const char *needs;	     /* the Kconfig option without which it does nothing */
	const char *example;	     /* sefer(7): a command line using it, `comment` after it */
	enum option_origin origin;
};

SEFER_INTERNAL void sefer__options_init(void);

/* The first option (the core's, then each policy's in chain order) for which fn is true. */
SEFER_INTERNAL struct sefer_option *
sefer__options_visit(bool (*fn)(struct sefer_option *, const void *), const void *arg);

/* The option called name (SEFER_PURGE_DELAY_MS, PURGE_DELAY_MS or purge_delay_ms), or NULL. */
SEFER_INTERNAL struct sefer_option *sefer__option_find(const char *name);

/*
 * Set o from text as `from` asks: 0, or EINVAL (not a value of its type) or ERANGE (outside
 * its range) with o unchanged. From the environment the secure rules apply (0 and o
 * unchanged when refused) and errors are reported on stderr; from ORIGIN_API nothing is
 * printed.
 */
SEFER_INTERNAL int sefer__option_apply(struct sefer_option *o, const char *text,
				       enum option_origin from);
/* The same with a number (OPT_CHOICE: an index): mallopt's path. */
SEFER_INTERNAL int sefer__option_store(struct sefer_option *o, uint64_t v, enum option_origin from);
/* o's current value as text ("50", "16M", "warn", "yes"); returns its length. */
SEFER_INTERNAL size_t sefer__option_format(const struct sefer_option *o, char *buf, size_t len);

enum parse_result { PARSE_OK, PARSE_BAD, PARSE_RANGE /* a number too large for 64 bits */ };

/* Pure parsers (unit-tested). */
SEFER_INTERNAL __must_check enum parse_result sefer__parse_uint(const char *s, uint64_t *out);
/* A byte count with an optional K, M, G or T suffix (powers of 1024), then B or iB. */
SEFER_INTERNAL __must_check enum parse_result sefer__parse_size(const char *s, uint64_t *out);
/* 1/0, yes/no, true/false, on/off, any case. */
SEFER_INTERNAL __must_check enum parse_result sefer__parse_bool(const char *s, bool *out);
/* Edit distance between a and b (case-insensitive), capped at 255: the did-you-mean. */
SEFER_INTERNAL unsigned sefer__edit_distance(const char *a, const char *b);

#endif
