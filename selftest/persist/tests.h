/* SPDX-License-Identifier: MIT */
/* The persist Check suites (one per file) and helpers they share. */
#ifndef SEFER_PERSIST_TESTS_H
#define SEFER_PERSIST_TESTS_H

#include <check.h>
#include <stdint.h>

#include <sefer/persist.h>

Suite *units_suite(void);
Suite *badfile_suite(void);
Suite *crash_suite(void);

/* A fresh path under $PERSIST_TMP (default /tmp) unique to this process and tag. */
const char *tpath(const char *tag);
/*
 * Leave at `path` a store as a power cut leaves it (test_crash.c): n acknowledged blocks of
 * 64 bytes, block i filled with byte i, the even ones then freed, every record since the last
 * checkpoint in the log and the header marked open. off[]: the n offsets (NULL: not wanted).
 * 0, or a negative errno with a line on stderr. No Check assertions: main() uses it too.
 */
int make_crashed_store(const char *path, unsigned n, uint64_t *off);
/* Environment knob with a default. */
long tenv(const char *name, long def);
extern const char *const kind_name[SEFER_PALLOC_KINDS];

#endif
