/* SPDX-License-Identifier: MIT */
/*
 * Annotations for the static checker sparse (make C=1 / C=2, Documentation/debugging.rst), the
 * kernel's way: under sparse (__CHECKER__) they are sparse attributes and statements; for the
 * compiler they are nothing, except __must_check, which is gcc's and clang's
 * warn_unused_result for both.
 *
 *   __must_check       the caller must use the result (a mapping, an error, a success flag)
 *   __acquires(x)      the function returns holding lock x, which it did not hold on entry
 *   __releases(x)      the function returns without lock x, which it held on entry
 *   __must_hold(x)     x is held on entry and still held on return
 *   __acquire(x), __release(x)
 *                      statements telling sparse that x was taken / dropped here (inside
 *                      the lock helpers themselves, where the real work is an atomic op)
 *   __sefer_rcu        a pointer published to lock-free readers: it may not be dereferenced
 *                      or copied into a plain pointer except through an accessor that
 *                      states the memory order (core/sync.h); the accessor casts with __force.
 *                      Not named __rcu: liburcu's urcu/compiler.h defines __rcu (as nothing)
 *                      and would redefine ours in every file that sees both.
 *   __force            a cast sparse accepts between address spaces / bitwise types
 *   __bitwise          an integer type sparse keeps apart from plain integers
 *
 * Context checking: sparse counts each lock expression's context (+1 on __acquire, -1 on
 * __release) along every path of a function, and compares the balance on return with what the
 * function's attributes declare. An unlock missing on one path, a lock taken twice, or a
 * function that returns holding a lock it does not declare is reported as "context imbalance".
 *
 * Included by core/config.h (hence by every core, policy and persist file) and by
 * include/sefer/os.h (the backend contract, whose fallible ops are __must_check).
 */
#ifndef SEFER_COMPILER_H
#define SEFER_COMPILER_H

#ifdef __CHECKER__
#define __must_check __attribute__((warn_unused_result))
#define __acquires(x) __attribute__((context(x, 0, 1)))
#define __releases(x) __attribute__((context(x, 1, 0)))
#define __must_hold(x) __attribute__((context(x, 1, 1)))
#define __acquire(x) __context__(x, 1)
#define __release(x) __context__(x, -1)
#define __sefer_rcu __attribute__((noderef, address_space(__sefer_rcu)))
#define __force __attribute__((force))
#define __bitwise __attribute__((bitwise))
/*
 * sparse 0.6.4 (Debian 12) parses _Atomic only as a qualifier (`_Atomic int`, `T *_Atomic`),
 * not as C11's type specifier `_Atomic(T)`, and stops at the first struct that uses it. A
 * function-like macro is expanded only where _Atomic is followed by '(' and is not expanded
 * again inside its own replacement, so the qualifier form is untouched; __typeof__ keeps
 * `_Atomic(struct heap *)` an atomic pointer (not a pointer to an atomic struct). Seen by sparse
 * alone: the compilers parse `_Atomic(T)` themselves.
 */
#define _Atomic(T) __typeof__(T) _Atomic
#else
#if defined(__GNUC__) || defined(__clang__)
#define __must_check __attribute__((warn_unused_result))
#else
#define __must_check
#endif
#define __acquires(x)
#define __releases(x)
#define __must_hold(x)
#define __acquire(x) ((void)0)
#define __release(x) ((void)0)
#define __sefer_rcu
#define __force
#define __bitwise
#endif

/*
 * The naming rule (Documentation/architecture.rst, "Names"): a symbol another file of the
 * library uses and programs must not is named sefer__* and carries one of two markers, in
 * front of its declaration, so that it stays out of the way of the program sefer is linked
 * into (libsefer.a, the amalgamation) and out of libsefer.so's symbol table:
 *
 *   SEFER_INTERNAL         a function's declaration (its definition inherits the linkage),
 *                          and an object's definition
 *   SEFER_INTERNAL_EXTERN  an object's declaration in a header
 *
 * Under SEFER_STATIC_ALL (a program that #includes the amalgamation, Documentation/
 * vendoring.rst) both are `static`; PE has no ELF visibility (only dllexport'ed symbols leave
 * the DLL). make check-symbols holds the libraries and the amalgamation to the rule with nm.
 */
#if defined(SEFER_STATIC_ALL)
#define SEFER_INTERNAL static __attribute__((__unused__))
#define SEFER_INTERNAL_EXTERN static __attribute__((__unused__))
#elif defined(_WIN32)
#define SEFER_INTERNAL
#define SEFER_INTERNAL_EXTERN extern
#else
#define SEFER_INTERNAL __attribute__((visibility("hidden")))
#define SEFER_INTERNAL_EXTERN extern __attribute__((visibility("hidden")))
#endif

/*
 * A string every process reads at its start (core init, the backend's init), in .data: one read
 * of .rodata maps the whole read-only segment through the kernel's fault-around, the unwind
 * tables with it (core/config.h, opaque_value; Documentation/decommit.rst, "Peak RSS of the
 * small rows"). A static array never written goes to .rodata without the attribute; declare it
 * non-const, since a const one in .data draws the assembler's section-flags warning.
 */
#define startup_data __attribute__((section(".data")))

#endif
