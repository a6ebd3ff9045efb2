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
