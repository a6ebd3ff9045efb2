// SPDX-License-Identifier: MIT
/*
 * C++'s replaceable operator new and delete (CONFIG_CXX_NEW), written in C under their
 * Itanium C++ ABI names, so a C++ program's allocations reach sefer's fast paths without the
 * hop through libstdc++'s own operator new. The whole family: plain and array; nothrow;
 * sized delete; aligned (std::align_val_t, passed as a size_t); aligned and sized delete.
 *
 * Failure (only the throwing forms): as [new.delete.single] asks, call the installed
 * std::new_handler and try again while there is one; with none, throw std::bad_alloc through
 * the C++ runtime's std::__throw_bad_alloc() (libstdc++ and libc++ both export it). This file
 * is built with -fexceptions, so the exception unwinds through these C frames to the
 * program's catch. The nothrow forms return NULL without calling the handler: a handler may
 * throw, and C cannot catch. Without a C++ runtime in the process (a C program that calls
 * these by their mangled names) a failure is reported and aborts.
 *
 * Built twice: new.o for libsefer.a binds the C++ runtime's two functions strongly, so a
 * static C++ link pulls them in; new_so.o (SEFER_CXX_RT_WEAK) for libsefer.so binds them
 * weakly, because a C program that preloads libsefer.so has no C++ runtime and must still
 * load it.
 *
 * Sized and aligned deletes check what they are told against the block with
 * CONFIG_HARDENED (core/sized.h); otherwise the size and alignment are not needed.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/sized.h"

#if __SIZEOF_SIZE_T__ != 8 || __SIZEOF_LONG__ != 8
#error "new.c spells size_t as 'm' (unsigned long) in the mangled names: LP64 only"
#endif

#define FACE __attribute__((visibility("default")))

#ifdef SEFER_CXX_RT_WEAK
#define CXX_RT __attribute__((weak))
#else
#define CXX_RT
#endif

typedef void (*new_handler_fn)(void);

/* std::get_new_handler() and std::__throw_bad_alloc(). */
new_handler_fn _ZSt15get_new_handlerv(void) CXX_RT;
void _ZSt17__throw_bad_allocv(void) CXX_RT __attribute__((noreturn));

/* The runtime's function, or NULL where a weak binding found none (never for a strong one). */
static void *runtime(void (*fn)(void))
{
	void *volatile f = (void *)fn; /* not folded to "always true" for the strong binding */

	return f;
}

static __cold void *new_failed(size_t size, size_t align)
{
	for (;;) {
		new_handler_fn h = NULL;

		if (runtime((void (*)(void))_ZSt15get_new_handlerv))
			h = _ZSt15get_new_handlerv();
		if (!h)
			break;
		h(); /* may make memory available, throw, or end the program */
		void *p = align ? sefer__aligned_any(align, size) : sefer_malloc_inline(size);

		if (p)
			return p;
	}
	if (runtime(_ZSt17__throw_bad_allocv))
		_ZSt17__throw_bad_allocv();
	sefer__message("operator new: out of memory for %zu bytes, and no C++ runtime in the "
		      "process to throw std::bad_alloc",
		      size);
	abort();
}

static always_inline void *new_plain(size_t size)
{
	void *p = sefer_malloc_inline(size);

	if (likely(p))
		return p;
	return new_failed(size, 0);
}

static always_inline void *new_aligned(size_t size, size_t align)
{
	void *p = sefer__aligned_any(align, size);

	if (likely(p))
		return p;
	return new_failed(size, align);
}

/* ---- prototypes (their C++ declarations live in <new>) ---- */
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt);
void *_ZnamRKSt9nothrow_t(size_t size, const void *nt);
void *_ZnwmSt11align_val_t(size_t size, size_t align);
void *_ZnamSt11align_val_t(size_t size, size_t align);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
void _ZdlPv(void *p);
void _ZdaPv(void *p);
void _ZdlPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size);
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
void _ZdlPvSt11align_val_t(void *p, size_t align);
void _ZdaPvSt11align_val_t(void *p, size_t align);
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt);
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt);

/* ---- operator new ---- */
FACE hot_entry void *_Znwm(size_t size)
{
	return new_plain(size);
}

FACE void *_Znam(size_t size)
{
	return new_plain(size);
}

FACE void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt)
{
	return sefer_malloc_inline(size);
}

FACE void *_ZnamRKSt9nothrow_t(size_t size, const void *nt)
{
	return sefer_malloc_inline(size);
}

FACE void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
	return new_aligned(size, align);
}

FACE void *_ZnamSt11align_val_t(size_t size, size_t align)
{
	return new_aligned(size, align);
}

FACE void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
	return sefer__aligned_any(align, size);
}

FACE void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
	return sefer__aligned_any(align, size);
}

/* ---- operator delete ---- */
FACE hot_entry void _ZdlPv(void *p)
{
	sefer_free_inline(p);
}

FACE void _ZdaPv(void *p)
{
	sefer_free_inline(p);
}

FACE hot_entry void _ZdlPvm(void *p, size_t size)
{
	if (sized_free_ok("operator delete", p, size, 0))
		sefer_free_inline(p);
}

FACE void _ZdaPvm(void *p, size_t size)
{
	if (sized_free_ok("operator delete[]", p, size, 0))
		sefer_free_inline(p);
}

FACE void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	sefer_free_inline(p);
}

FACE void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	sefer_free_inline(p);
}

FACE void _ZdlPvSt11align_val_t(void *p, size_t align)
{
	if (sized_free_ok("operator delete", p, SIZE_UNKNOWN, align))
		sefer_free_inline(p);
}

FACE void _ZdaPvSt11align_val_t(void *p, size_t align)
{
	if (sized_free_ok("operator delete[]", p, SIZE_UNKNOWN, align))
		sefer_free_inline(p);
}

FACE void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	if (sized_free_ok("operator delete", p, size, align))
		sefer_free_inline(p);
}

FACE void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	if (sized_free_ok("operator delete[]", p, size, align))
		sefer_free_inline(p);
}

FACE void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
	if (sized_free_ok("operator delete", p, SIZE_UNKNOWN, align))
		sefer_free_inline(p);
}

FACE void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
	if (sized_free_ok("operator delete[]", p, SIZE_UNKNOWN, align))
		sefer_free_inline(p);
}
