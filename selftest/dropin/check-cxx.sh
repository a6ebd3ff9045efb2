#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-cxx: selftest/dropin/cxx.cc preloaded, linked to libsefer.so and to libsefer.a, then
# against the CONFIG_HARDENED twin, where a lying sized or aligned delete is reported.
#
#   check-cxx.sh <dir with cxx-preload, cxx-linked, cxx-static> <libsefer.so> <hardened .so>
set -uo pipefail
dir=$1
lib=$2
hard=$3
fail=0
bad() { echo "check-cxx: FAIL: $*"; fail=1; }

LD_PRELOAD=$lib "$dir/cxx-preload" preload || bad "preloaded"
"$dir/cxx-linked" linked || bad "linked to libsefer.so"
"$dir/cxx-static" static || bad "linked to libsefer.a"
LD_PRELOAD=$hard "$dir/cxx-preload" preload >/dev/null || bad "preloaded, hardened"
for m in delete-bad delete-align-bad; do
	err=$(LD_PRELOAD=$hard "$dir/cxx-preload" $m 2>&1)
	rc=$?
	[ $rc -eq 134 ] || bad "$m: exit $rc, not 134 (SIGABRT)"
	want='^sefer: operator delete of 0x[0-9a-f]+ \((size 5000 does not match|alignment 1048576)'
	grep -Eq "$want" <<<"$err" || bad "$m: report: $err"
	echo "     hardened, $m: $err"
done
[ $fail -eq 0 ] && echo "ok   operator new/delete are sefer's, bad_alloc caught, sized deletes checked"
exit $fail
