/* SPDX-License-Identifier: MIT */
/*
 * A thread with a heap that stays alive until stop_keepalive() (test_generations.c): an exit
 * under test is then never the last but one, which purges and dismantles what exited threads
 * left (core/purge.c, "thread generations"). The calling thread gets a heap too.
 */
#ifndef SEFER_SELFTEST_UNIT_KEEPALIVE_H
#define SEFER_SELFTEST_UNIT_KEEPALIVE_H

#include <pthread.h>

pthread_t start_keepalive(void);
void stop_keepalive(pthread_t t);

#endif
