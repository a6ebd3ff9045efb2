// SPDX-License-Identifier: MIT
/* core/new.c for libsefer.so: the C++ runtime bound weakly (see new.c). */
#define SEFER_CXX_RT_WEAK 1
#include "core/new.c"
