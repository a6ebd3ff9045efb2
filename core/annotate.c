// SPDX-License-Identifier: MIT
/* CONFIG_VALGRIND: is this process running under valgrind? (core/annotate.h) */
#include "core/annotate.h"

bool sefer_on_valgrind;

void annotate_init(void)
{
	sefer_on_valgrind = RUNNING_ON_VALGRIND != 0;
}
