#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-darwin-build: compile the darwin configuration with the Linux host gcc, as far as
# that is meaningful without a macOS SDK.
#
#   build-check.sh <srctree> <outdir>
#
# 1. configs/darwin_defconfig is configured, and every object of that configuration (core,
#    backends/posix, backends/darwin, policies, persist) is compiled with -Werror and
#    __APPLE__ defined, so the Darwin branches of the shared code are the ones compiled.
#    backends/darwin/shim/ supplies the Darwin-only identifiers (placeholders, see
#    darwin-shim.h): this checks syntax, types and warnings, NOT Darwin's headers or ABI.
# 2. The objects are archived and the archive must define sefer__os and the sefer_* API and
#    must not contain a Linux-only call (mbind, getcpu, getrandom, fdatasync).
# Nothing is linked into a program or run: no Mac is involved.
set -euo pipefail
src=$1
out=$2
shim=$src/backends/darwin/shim
mk=(make -f "$src/Makefile" O="$out" CC=gcc CROSS_COMPILE=)

"${mk[@]}" darwin_defconfig >/dev/null
"${mk[@]}" EXTRA_CFLAGS="-Werror -D__APPLE__ -I$shim -include $shim/darwin-shim.h" \
	"$out/libsefer.a" >/dev/null
lib=$out/libsefer.a
syms=$(nm -g --defined-only "$lib" 2>/dev/null)
for s in sefer__os sefer_malloc sefer_free sefer__posix_reserve sefer__posix_thread_exit_hook; do
	grep -qw "$s" <<<"$syms" || { echo "darwin build: $s missing from libsefer.a" >&2; exit 1; }
done
undef=$(nm -u "$lib" 2>/dev/null | awk '{print $2}' | sort -u)
for s in mbind getcpu getrandom fdatasync syscall; do
	if grep -qx "$s" <<<"$undef"; then
		echo "darwin build: Linux-only call $s referenced" >&2
		exit 1
	fi
done
for s in _NSGetEnviron arc4random_buf issetugid task_info getprogname; do
	grep -qx "$s" <<<"$undef" || { echo "darwin build: expected Darwin call $s" >&2; exit 1; }
done
nobj=$(ar t "$lib" | wc -l)
echo "ok   darwin: $nobj objects compiled warning-free by the host gcc against the shim" \
	"(syntax/type check only; nothing linked or run, no Mac involved)"
