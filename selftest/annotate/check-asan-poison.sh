#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# AddressSanitizer sees sefer's blocks (CONFIG_SANITIZE_ADDRESS, core/annotate.h): each misuse
# of selftest/annotate/misuse.c, built with ASan against the poisoning library, must end in
# ASan's report for exactly the byte misused in the sefer block it printed. sefer poisons by
# hand, so ASan says "use-after-poison" (its word for a poisoned byte it did not allocate
# itself), never "heap-use-after-free". The correct uses must run clean.
#
#   check-asan-poison.sh ASAN_BUILD_DIR
set -u
dir=$1
bin=$dir/selftest/annotate/misuse
out=$dir/check-asan-poison
mkdir -p "$out"
pass=0 fail=0

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL $1"
	[ -n "${2:-}" ] && sed 's/^/     | /' "$2" | tail -25
	fail=$((fail + 1))
}

# the address the mode printed plus an offset, as ASan prints it (0x7f3c50001140)
addr() { printf '0x%x' $(($(sed -n "s/^$2: block \(0x[0-9a-f]*\).*/\1/p" "$1" | head -1) + $3)); }

# report MODE OFFSET READ|WRITE WHAT [unmapped]: the mode dies with ASan's report on block +
# OFFSET. unmapped: the block's segment may have gone back to the OS at the free (no large
# cache in this configuration), and the read fault there instead.
report() {
	local m=$1 off=$2 kind=$3 what=$4 unmapped=${5:-} log=$out/$1.log a
	ASAN_OPTIONS=detect_leaks=0 "$bin" "$m" >"$log" 2>&1
	rc=$?
	a=$(addr "$log" "$m" "$off")
	if [ $rc -ne 0 ] && grep -q "ERROR: AddressSanitizer: use-after-poison on address $a " "$log" &&
		grep -qE "^$kind of size 1 at $a thread T0" "$log" &&
		grep -qE "#0 0x[0-9a-f]+ in (main|heap_mode) .*misuse.c" "$log"; then
		ok "$what: use-after-poison, $kind of block + $off"
	elif [ -n "$unmapped" ] && ! grep -q '^CONFIG_POLICY_LARGE_CACHE=y' "$dir/.config" &&
		grep -q "ERROR: AddressSanitizer: SEGV on unknown address $a " "$log"; then
		ok "$what: the segment is unmapped (no large cache): SEGV at block + $off"
	else
		bad "$what: no use-after-poison $kind at $a (exit $rc)" "$log"
	fi
}

clean() {
	local m=$1 what=$2 log=$out/$1.log
	ASAN_OPTIONS=detect_leaks=0 "$bin" "$m" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && ! grep -q AddressSanitizer "$log"; then
		ok "$what: no report"
	else
		bad "$what: exit $rc" "$log"
	fi
}

clean clean "clean program (calloc, realloc in place and moved, aligned, large)"
clean slack "writing a block up to sefer_usable_size"
report uaf 32 READ "use after free of a 64-byte block"
report overflow 64 WRITE "overflow one past a 64-byte block"
report overflow-tail 50 WRITE "overflow past a 50-byte request (inside the 64-byte class)"
report large-uaf 4096 READ "use after free of a 3 MiB block" unmapped
report large-overflow 1049576 WRITE "overflow past a 1 MiB + 1000 request (large block tail)"
report realloc-uaf 40 READ "use of the old block after a realloc moved it"
if grep -q '^CONFIG_HEAPS=y' "$dir/.config"; then
	clean heap-clean "a first-class heap's life, then its memory reused"
	report heap-destroy-uaf 32 READ "use of a block after its heap was destroyed"
fi

echo "check-asan-poison: $pass passed, $fail failed"
[ $fail -eq 0 ]
