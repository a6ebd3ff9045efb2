#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-randconfig [N=k] [KCONFIG_SEED=s]: options compose. Builds k random configurations
# of the host's backend with -Werror and runs the unit suite and a short stress test on each.
#
# The seeds are consecutive, s, s+1, ..., from KCONFIG_SEED or from a fresh random s, and a
# seed's parity picks the compiler (even: gcc, odd: clang), so the compilers alternate and one
# seed alone reproduces a run: make check-randconfig N=1 KCONFIG_SEED=<seed>. The backend is
# held by KCONFIG_ALLCONFIG; everything else is scripts/kconfig.py randconfig's draw. A failure
# prints the seed, the compiler, what failed and the minimal config (savedefconfig).
#   check-randconfig.sh SRCTREE SCRATCH N BACKEND_SYMBOL [JOBS]
set -u
src=$1
tmp=$2
n=$3
backend=$4
jobs=${5:-2}
rm -rf "$tmp" && mkdir -p "$tmp"
printf 'CONFIG_%s=y\n' "$backend" >"$tmp/host.config"
if [ -n "${KCONFIG_SEED:-}" ]; then
	base=$((KCONFIG_SEED))
else
	base=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
fi
pass=0 fail=0 failed=""
t0=$(date +%s)

for i in $(seq 0 $((n - 1))); do
	seed=$(((base + i) & 0xffffffff))
	hex=$(printf '0x%x' "$seed")
	cc=$([ $((seed % 2)) -eq 0 ] && echo gcc || echo clang)
	out=$tmp/$hex
	mk() { make -s -C "$src" O="$out" "$@"; }
	t=$(date +%s)
	step=configure
	# on the command line: they override what make's MAKEFLAGS hands down from the caller
	mk randconfig KCONFIG_SEED=$seed KCONFIG_ALLCONFIG="$tmp/host.config" >"$out.log" 2>&1 &&
		step="build ($cc -Werror)" &&
		mk -j"$jobs" CC="$cc" EXTRA_CFLAGS=-Werror all "$out/selftest/unit/sefer-unit" \
			"$out/selftest/stress/stress" >>"$out.log" 2>&1 &&
		step="unit suite" && (cd "$out" && ./selftest/unit/sefer-unit) >>"$out.log" 2>&1 &&
		step="stress test" && "$out/selftest/stress/stress" 4 20000 2 >>"$out.log" 2>&1 &&
		step=
	on=$(grep -E '^CONFIG_[A-Z0-9_]+=y' "$out/.config" 2>/dev/null | sed 's/^CONFIG_//; s/=y$//' |
		grep -vE '^(BACKEND_|SELFTEST_)' | tr '\n' ' ')
	if [ -z "$step" ]; then
		pass=$((pass + 1))
		printf 'ok   seed %s, %-5s %3ss: %s\n' "$hex" "$cc," $(($(date +%s) - t)) "$on"
		rm -rf "$out" "$out.log"
	else
		fail=$((fail + 1))
		failed="$failed $hex"
		echo "FAIL seed $hex, $cc: $step failed after $(($(date +%s) - t))s"
		grep -vE '^ *(CC|AR|LD|[0-9]+%:? )' "$out.log" | grep -v '^Running suite' | tail -25 |
			sed 's/^/     | /'
		echo "     minimal config (make savedefconfig), also in $out/defconfig:"
		mk savedefconfig >/dev/null 2>&1
		sed 's/^/     | /' "$out/defconfig"
		echo "     reproduce: make check-randconfig N=1 KCONFIG_SEED=$hex"
	fi
done

echo "randconfig: $n configuration(s) from seed $(printf '0x%x' "$base") in $(($(date +%s) - t0))s:" \
	"$pass passed, $fail failed${failed:+ (seeds$failed)}"
[ "$fail" -eq 0 ]
