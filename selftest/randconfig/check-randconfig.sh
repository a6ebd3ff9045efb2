#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Options compose: configurations of the host's backend are generated, built with -Werror
# (the libraries, the unit suite and the stress test) and run (the unit suite and a short
# stress test). A failure prints what to reproduce it with, what failed, the end of its log
# and the minimal config (savedefconfig).
#
#   check-randconfig.sh SRCTREE SCRATCH BACKEND_SYMBOL rand N [SECS]  make check-randconfig [N=k]
#   check-randconfig.sh SRCTREE SCRATCH BACKEND_SYMBOL all        make check-allconfig
#
# rand: N random configurations from consecutive seeds s, s+1, ..., s being KCONFIG_SEED or a
# fresh random number; with SECS > 0 no configuration starts once SECS seconds have passed (the
# first always runs: make check's time budget). A seed's parity picks the compiler (even: gcc, odd: clang), so the
# compilers alternate and one seed alone reproduces a run: make check-randconfig N=1
# KCONFIG_SEED=<seed>. all: allnoconfig with gcc, allyesconfig with clang. The backend is held
# by KCONFIG_ALLCONFIG; everything else is scripts/kconfig.py's.
set -u
src=$1
tmp=$2
backend=$3
mode=$4
n=${5:-4}
secs=${6:-0}
jobs=${JOBS:-2}
rm -rf "$tmp" && mkdir -p "$tmp"
printf 'CONFIG_%s=y\n' "$backend" >"$tmp/host.config"
pass=0 fail=0 failed=""
t0=$(date +%s)

# try NAME DIR CC REPRODUCE CONFIG-GOAL [VAR=VALUE...]: one configuration, start to end
try() {
	local name=$1 out=$tmp/$2 cc=$3 again=$4 goal=$5 step t
	shift 5
	mk() { make -s -C "$src" O="$out" "$@"; }
	t=$(date +%s)
	step=configure
	# variables on the command line: they override what MAKEFLAGS hands down from the caller
	mk "$goal" "$@" KCONFIG_ALLCONFIG="$tmp/host.config" >"$out.log" 2>&1 &&
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
		printf 'ok   %s, %-5s %3ss: %s\n' "$name" "$cc," $(($(date +%s) - t)) "$on"
		rm -rf "$out" "$out.log"
	else
		fail=$((fail + 1))
		failed="$failed, $name"
		echo "FAIL $name, $cc: $step failed after $(($(date +%s) - t))s"
		grep -vE '^ *(CC|AR|LD|[0-9]+%:? )' "$out.log" | grep -vE '^(Running suite| [a-z_0-9]+$)' | tail -25 |
			sed 's/^/     | /'
		echo "     minimal config (make savedefconfig), also in $out/defconfig:"
		mk savedefconfig >/dev/null 2>&1
		sed 's/^/     | /' "$out/defconfig"
		echo "     reproduce: $again"
	fi
}

if [ "$mode" = rand ]; then
	if [ -n "${KCONFIG_SEED:-}" ]; then
		base=$((KCONFIG_SEED))
	else
		base=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
	fi
	ran=0
	for i in $(seq 0 $((n - 1))); do
		if [ "$secs" -gt 0 ] && [ "$ran" -gt 0 ] && [ $(($(date +%s) - t0)) -ge "$secs" ]; then
			break
		fi
		ran=$((ran + 1))
		seed=$(((base + i) & 0xffffffff))
		hex=$(printf '0x%x' "$seed")
		cc=$([ $((seed % 2)) -eq 0 ] && echo gcc || echo clang)
		try "seed $hex" "$hex" $cc "make check-randconfig N=1 KCONFIG_SEED=$hex" randconfig \
			KCONFIG_SEED="$seed"
	done
	what="$ran random configuration(s) from seed $(printf '0x%x' "$base")"
	[ "$ran" -lt "$n" ] && what="$what (of N=$n: SECS=$secs spent)"
else
	try allnoconfig allno gcc "make check-allconfig" allnoconfig
	try allyesconfig allyes clang "make check-allconfig" allyesconfig
	what="allnoconfig and allyesconfig"
fi

echo "randconfig: $what in $(($(date +%s) - t0))s: $pass passed, $fail failed${failed:+ (${failed#, })}"
[ "$fail" -eq 0 ]
