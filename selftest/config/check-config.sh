#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build-system checks: every defconfig round-trips through savedefconfig, bad Kconfig input is
# refused with the symbol named, menuconfig fails fast without a terminal and works in one
# (driven under tmux), and a changed option rebuilds while deselected objects leave the archive.
#   check-config.sh SRCTREE SCRATCH
set -u
src=$1
tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
mk() { make -s -C "$src" O="$tmp/$1" "${@:2}"; }
# significant lines of a defconfig: assignments and "is not set" markers
sig() { grep -E '^(CONFIG_|# CONFIG_.* is not set)' "$1" | sort; }

for cfg in "$src"/configs/*_defconfig; do
	name=$(basename "$cfg")
	if mk "rt-$name" "$name" >/dev/null 2>"$tmp/err" && mk "rt-$name" savedefconfig >/dev/null &&
		diff <(sig "$cfg") <(sig "$tmp/rt-$name/defconfig") >"$tmp/diff"; then
		ok "savedefconfig round-trips $name"
	else
		bad "savedefconfig round-trips $name: $(cat "$tmp/err" "$tmp/diff" 2>/dev/null | head -5)"
	fi
done

printf 'CONFIG_NO_SUCH_OPTION=y\n' >"$tmp/unknown_defconfig"
if ! KCONFIG_CONFIG="$tmp/u/.config" /usr/bin/python3 "$src/scripts/kconfig.py" defconfig \
	"$tmp/unknown_defconfig" 2>"$tmp/err" && grep -q NO_SUCH_OPTION "$tmp/err"; then
	ok "unknown Kconfig symbol is an error naming it"
else
	bad "unknown Kconfig symbol: $(cat "$tmp/err")"
fi
printf 'CONFIG_SEGMENT_SHIFT=huge\n' >"$tmp/badval_defconfig"
if ! KCONFIG_CONFIG="$tmp/v/.config" /usr/bin/python3 "$src/scripts/kconfig.py" defconfig \
	"$tmp/badval_defconfig" 2>"$tmp/err" && grep -q SEGMENT_SHIFT "$tmp/err" &&
	[ ! -e "$tmp/v/.config" ]; then
	ok "invalid Kconfig value is an error naming the symbol, nothing written"
else
	bad "invalid Kconfig value: $(cat "$tmp/err")"
fi

start=$(date +%s)
if ! timeout 20 make -s -C "$src" O="$tmp/mc" menuconfig </dev/null >"$tmp/out" 2>&1 &&
	grep -q "needs an interactive terminal" "$tmp/out" && [ $(($(date +%s) - start)) -lt 10 ]; then
	ok "menuconfig without a terminal fails at once with a message"
else
	bad "menuconfig without a terminal: $(cat "$tmp/out")"
fi

if command -v tmux >/dev/null; then
	mk mc linux_defconfig >/dev/null
	sock="$tmp/tmux.sock"
	tmux -S "$sock" new-session -d -x 120 -y 40 "make -C $src O=$tmp/mc menuconfig; touch $tmp/mc/done"
	step() { tmux -S "$sock" send-keys "$@"; sleep 0.7; }
	sleep 2
	step / ; step DEBUG_DOUBLE_FREE; step Enter; step " "; step S; step Enter; step Enter; step Q
	for _ in $(seq 20); do [ -e "$tmp/mc/done" ] && break; sleep 0.5; done
	tmux -S "$sock" kill-server 2>/dev/null
	if grep -q '^# CONFIG_DEBUG_DOUBLE_FREE is not set' "$tmp/mc/.config"; then
		ok "menuconfig in a terminal (tmux): toggled DEBUG_DOUBLE_FREE and saved"
	else
		bad "menuconfig in a terminal: option not toggled in .config"
	fi
else
	bad "menuconfig in a terminal: tmux is not installed (scripts/install-deps)"
fi

# Config targets (scripts/kconfig.py): all*config, randconfig's seed, KCONFIG_ALLCONFIG,
# listnewconfig. check-allconfig and check-randconfig build and test such configurations.
kc() { grep -E "^(CONFIG_$2=|# CONFIG_$2 is not set)" "$tmp/$1/.config"; }
mk ano allnoconfig >/dev/null && mk ayes allyesconfig >/dev/null && mk adef alldefconfig >/dev/null
if [ "$(kc ano POLICY_FASTBIN)" = "# CONFIG_POLICY_FASTBIN is not set" ] &&
	[ "$(kc ano MALLOC_FACE)" = "# CONFIG_MALLOC_FACE is not set" ] &&
	[ "$(kc ayes POLICY_FASTBIN)" = CONFIG_POLICY_FASTBIN=y ] &&
	[ "$(kc ayes HARDENED)" = CONFIG_HARDENED=y ] && [ "$(kc ayes BACKEND_LINUX)" = CONFIG_BACKEND_LINUX=y ] &&
	[ "$(kc adef POLICY_LARGE_CACHE)" = CONFIG_POLICY_LARGE_CACHE=y ] &&
	[ "$(kc adef HARDENED)" = "# CONFIG_HARDENED is not set" ]; then
	ok "allnoconfig, allyesconfig and alldefconfig set bools n, y and to their defaults"
else
	bad "all*config: $(kc ano POLICY_FASTBIN) / $(kc ayes POLICY_FASTBIN) / $(kc adef HARDENED)"
fi
seed1=$(mk r1 randconfig | sed -n 's/^KCONFIG_SEED=//p')
mk r2 randconfig KCONFIG_SEED="$seed1" >/dev/null
mk r3 randconfig KCONFIG_SEED=$((seed1 + 1)) >/dev/null
mk r4 randconfig KCONFIG_SEED=$((seed1 + 2)) >/dev/null
hosted=$(cat "$tmp"/r[1-4]/.config | grep -c '^CONFIG_BACKEND_LINUX=y')
if [ -n "$seed1" ] && cmp -s "$tmp/r1/.config" "$tmp/r2/.config" &&
	! { cmp -s "$tmp/r1/.config" "$tmp/r3/.config" && cmp -s "$tmp/r1/.config" "$tmp/r4/.config"; } &&
	[ "$hosted" = 4 ]; then
	ok "randconfig prints its seed (KCONFIG_SEED=$seed1); that seed gives the same .config, others another, all for the host's backend"
else
	bad "randconfig is not reproducible from its printed seed '$seed1' or left the host's backend ($hosted of 4)"
fi
printf 'CONFIG_HARDENED=y\n# CONFIG_POLICY_FASTBIN is not set\n' >"$tmp/keep.config"
kept=0
for s in 1 2 3 4 5 6; do
	mk k$s randconfig KCONFIG_SEED=$s KCONFIG_ALLCONFIG="$tmp/keep.config" >/dev/null &&
		[ "$(kc k$s HARDENED)" = CONFIG_HARDENED=y ] &&
		[ "$(kc k$s POLICY_FASTBIN)" = "# CONFIG_POLICY_FASTBIN is not set" ] && kept=$((kept + 1))
done
mk kno allnoconfig KCONFIG_ALLCONFIG="$tmp/keep.config" >/dev/null
if [ $kept = 6 ] && [ "$(kc kno HARDENED)" = CONFIG_HARDENED=y ]; then
	ok "KCONFIG_ALLCONFIG settings survive randconfig (6 seeds) and allnoconfig"
else
	bad "KCONFIG_ALLCONFIG: kept in $kept of 6 randconfigs; allnoconfig: $(kc kno HARDENED)"
fi
mk lnc linux_defconfig >/dev/null
none=$(mk lnc listnewconfig)
grep -v -e POLICY_FASTBIN -e STATS_CALLS "$tmp/lnc/.config" >"$tmp/lnc/old" && mv "$tmp/lnc/old" "$tmp/lnc/.config"
new=$(mk lnc listnewconfig | tr '\n' ' ')
if [ -z "$none" ] && [ "$new" = "CONFIG_STATS_CALLS=n CONFIG_POLICY_FASTBIN=n " ]; then
	ok "listnewconfig lists the options a .config lacks, nothing for a complete one"
else
	bad "listnewconfig: complete '$none', lacking two: '$new'"
fi
mk lnc help >"$tmp/help.txt"
# every .PHONY target but generated files (a path)
phony=$(make -C "$src" -pq O="$tmp/lnc" 2>/dev/null | sed -n 's/^\.PHONY: //p' | tr ' ' '\n' |
	grep -v / | sort -u)
missing=$(for t in $phony; do grep -qwe "$t" "$tmp/help.txt" || echo "$t"; done | tr '\n' ' ')
if [ -n "$phony" ] && [ -z "$missing" ] && grep -q linux_min_defconfig "$tmp/help.txt"; then
	ok "make help lists all $(echo $phony | wc -w) .PHONY targets and the configs/"
else
	bad "make help does not list: $missing"
fi

# Incremental builds: unchanged .config rebuilds nothing; a changed option rebuilds and a
# deselected object leaves the archive.
mk inc linux_defconfig >/dev/null && mk inc all >/dev/null 2>&1
stamp=$(stat -c %Y "$tmp/inc/include/generated/autoconf.h")
sleep 1
if [ -z "$(mk inc all 2>&1)" ] && [ "$(stat -c %Y "$tmp/inc/include/generated/autoconf.h")" = "$stamp" ]; then
	ok "an unchanged configuration rebuilds nothing and keeps autoconf.h"
else
	bad "an unchanged configuration rebuilt something"
fi
if ar t "$tmp/inc/libsefer.a" | grep -q '^face.o$'; then
	KCONFIG_CONFIG="$tmp/inc/.config" /usr/bin/python3 "$src/scripts/kconfig.py" set \
		"$tmp/inc/.config" MALLOC_FACE=n >/dev/null
	mk inc all >/dev/null 2>&1
	if ! ar t "$tmp/inc/libsefer.a" | grep -q '^face.o$' &&
		! nm -D --defined-only "$tmp/inc/libsefer.so" | grep -qw malloc; then
		ok "deselecting MALLOC_FACE drops face.o from libsefer.a and malloc from libsefer.so"
	else
		bad "deselected object still in the libraries"
	fi
else
	bad "face.o missing from the default archive"
fi

echo "config checks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
