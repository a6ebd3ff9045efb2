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
/* Environment knob with a default. */
long tenv(const char *name, long def);
extern const char *const kind_name[SEFER_PALLOC_KINDS];

#endif
