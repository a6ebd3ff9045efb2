// SPDX-License-Identifier: MIT
/* CONFIG_VALGRIND: is this process running under valgrind? (core/annotate.h) */
#include "core/annotate.h"

SEFER_INTERNAL bool sefer__on_valgrind;

void sefer__annotate_init(void)
{
	sefer__on_valgrind = RUNNING_ON_VALGRIND != 0;
}
