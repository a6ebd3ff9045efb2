#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The malloc and free fast paths take no lock, no atomic read-modify-write and no indirect call:
# disassemble the exported functions and fail on a lock prefix, xchg, cmpxchg, an indirect call
# or jump, or any call at all (slow paths are reached by direct tail jumps).
#   [FASTPATH_EXTRA="fn ..."] check-fastpath.sh LIBSEFER.so [OBJDUMP]
set -u
lib=$1
objdump=${2:-objdump}
pass=0 fail=0
# FASTPATH_EXTRA names more functions held to the same rules: sefer_heap_malloc with
# CONFIG_HEAPS (malloc's fast path from a given heap after one owner compare).
#
# Each function also has a budget: the lines of its body (instructions and the padding between
# its out-of-line tails), as gcc 12 -O2 emits them in the default configuration, where a change
# that lengthens a fast path fails here. FASTPATH_BUDGET=0 (the other configurations, other
# compilers) keeps only the 80-line bound.
budget() {
	[ "${FASTPATH_BUDGET:-1}" = 0 ] && { echo 80; return; }
	case $1 in
	malloc | sefer_malloc) echo 30 ;;
	free | sefer_free) echo 34 ;;
	sefer_heap_malloc) echo 36 ;;
	*) echo 80 ;;
	esac
}
for fn in malloc free sefer_malloc sefer_free ${FASTPATH_EXTRA:-}; do
	body=$($objdump -d --no-show-raw-insn "$lib" | awk -v f="<$fn>:" '$2 == f {p = 1; next} p && /^$/ {exit} p')
	n=$(printf '%s\n' "$body" | grep -c .)
	max=$(budget "$fn")
	bad=$(printf '%s\n' "$body" | grep -E '\block\b|xchg[a-z]* +[^,]*\(|xchg[a-z]* +.*,.*\(|cmpxchg|call|jmpq? +\*' || true)
	[ -z "$bad" ] && [ "$n" -gt "$max" ] && bad="over its budget of $max"
	if [ "$n" -gt 0 ] && [ "$n" -lt 80 ] && [ -z "$bad" ]; then
		echo "ok   $fn: $n instructions (budget $max), no lock, no atomic RMW, no call or indirect jump"
		pass=$((pass + 1))
	else
		echo "FAIL $fn ($n instructions): ${bad:-function missing or too long}"
		fail=$((fail + 1))
	fi
done
echo "fast path: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
