#!/bin/bash
# SPDX-License-Identifier: MIT
# check-amalgamation.sh SRCTREE DIR LIBS: checks of the amalgamation in DIR (sefer.c, sefer.h)
#  - sefer.c compiles alone (no -I) with gcc and with clang, -Wall -Wextra and the project's
#    warnings, as errors;
#  - static_all.c, which #includes it with SEFER_STATIC_ALL, has no global symbol but main,
#    the public API (SEFER_API in sefer.h) and, with CONFIG_MALLOC_FACE, the C library names
#    the malloc face defines (FACE in sefer.c); the same program without SEFER_STATIC_ALL has
#    the internal globals (so the nm check can fail); with SEFER_STATIC_API too, only main
#    (or, with the malloc face, SEFER_STATIC_API is refused at compile time); each program runs.
set -u
src=$1 dir=$2 libs=$3
warn="-std=gnu11 -O2 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
cd "$dir" || exit 1

for cc in gcc clang; do
	if $cc $warn -c -o sefer-$cc.o sefer.c 2>err-$cc.txt; then
		ok "$cc $warn: sefer.c alone ($(wc -l <sefer.c) lines)"
	else
		bad "$cc: sefer.c does not compile alone: $(head -5 err-$cc.txt)"
	fi
done

api=$(grep -ho 'SEFER_API[^(;]*[ *]\([a-z_0-9]*\)(' sefer.h | sed 's/.*[ *]\([a-z_0-9]*\)($/\1/' |
	sort -u)
face=
grep -q '^#define CONFIG_MALLOC_FACE 1' sefer.c &&
	face=$(grep -o '^FACE [^(]*[ *]\([a-z_0-9]*\)(' sefer.c | sed 's/.*[ *]\([a-z_0-9]*\)($/\1/')
[ "$(echo "$api" | wc -w)" -gt 15 ] || bad "found only $(echo "$api" | wc -w) API names in sefer.h"
allowed=$(printf '%s\n' main $api $face | sort -u)
globals() { nm -g --defined-only "$1" | awk '{print $3}' | sort -u; }

for cc in gcc clang; do
	if ! $cc $warn -I. -o static-all-$cc "$src/selftest/amalgamation/static_all.c" $libs \
		2>err-sa-$cc.txt; then
		bad "$cc: static_all.c (SEFER_STATIC_ALL) does not compile: $(head -5 err-sa-$cc.txt)"
		continue
	fi
	$cc $warn -I. -c -o static-all-$cc.o "$src/selftest/amalgamation/static_all.c"
	extra=$(comm -23 <(globals static-all-$cc.o) <(echo "$allowed"))
	if [ -z "$extra" ]; then
		ok "$cc SEFER_STATIC_ALL: $(globals static-all-$cc.o | wc -l) global symbols, all" \
			"main, API$([ -n "$face" ] && echo ' or malloc face')"
	else
		bad "$cc SEFER_STATIC_ALL: internal symbols are global: $(echo $extra | head -c 400)"
	fi
	# The control: without SEFER_STATIC_ALL the same file has its internal globals.
	sed 's/^#define SEFER_STATIC_ALL$//' "$src/selftest/amalgamation/static_all.c" >plain.c
	$cc -std=gnu11 -O2 -I. -c -o plain-$cc.o plain.c
	n=$(comm -23 <(globals plain-$cc.o) <(echo "$allowed") | wc -l)
	if [ "$n" -gt 100 ]; then
		ok "$cc control: without SEFER_STATIC_ALL the check sees $n internal globals"
	else
		bad "$cc control: without SEFER_STATIC_ALL only $n internal globals (is nm blind?)"
	fi
	if out=$(./static-all-$cc 2>&1); then
		ok "$cc static-all program runs: $out"
	else
		bad "$cc static-all program failed: $out"
	fi
	if [ -n "$face" ]; then
		if ! $cc $warn -I. -DSEFER_STATIC_API -c -o /dev/null \
			"$src/selftest/amalgamation/static_all.c" 2>err-api-$cc.txt &&
			grep -q 'malloc face' err-api-$cc.txt; then
			ok "$cc SEFER_STATIC_API with the malloc face: refused with its reason"
		else
			bad "$cc SEFER_STATIC_API with the malloc face was not refused"
		fi
		continue
	fi
	if $cc $warn -I. -DSEFER_STATIC_API -o static-api-$cc \
		"$src/selftest/amalgamation/static_all.c" $libs 2>err-api-$cc.txt &&
		$cc $warn -I. -DSEFER_STATIC_API -c -o static-api-$cc.o \
			"$src/selftest/amalgamation/static_all.c" && ./static-api-$cc >/dev/null; then
		g=$(globals static-api-$cc.o | tr '\n' ' ')
		if [ "$g" = "main " ]; then
			ok "$cc SEFER_STATIC_API: main is the only global symbol; the program runs"
		else
			bad "$cc SEFER_STATIC_API: global symbols besides main: $g"
		fi
	else
		bad "$cc SEFER_STATIC_API: $(head -5 err-api-$cc.txt)"
	fi
done
[ $fails -eq 0 ]
