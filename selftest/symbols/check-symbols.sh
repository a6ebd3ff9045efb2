#!/bin/bash
# SPDX-License-Identifier: MIT
# make check-symbols (Documentation/architecture.rst, "Names"): every global symbol sefer
# defines is one of
#   - the public API: the sefer_* functions declared SEFER_API in include/sefer.h and
#     include/sefer/persist.h (read from the headers);
#   - the malloc face: the C library's names (malloc family, glibc's __libc_* and mallinfo,
#     C23's sized frees) and C++'s operator new/delete (_Z*), read from the FACE-marked
#     definitions in core/*.c, checked against a few names that must be among them;
#   - internal: sefer__* (in libsefer.so not even those: hidden, out of the dynamic table).
# Anything else fails the group, named with the artefact and configuration it came from.
#
#   check-symbols.sh SRCTREE WORKDIR "ALL-POLICIES ASSIGNMENTS"
#
# For each configuration (linux_defconfig, linux_min, hardened, all policies: linux_defconfig
# with the assignments check-policies uses for its all-on build) it builds libsefer.a,
# libsefer.so and the amalgamation in WORKDIR/<name>, compiles the amalgamation's sefer.c alone
# (cc -std=gnu11 -O2 -c) and runs nm over the three. Then selftest/symbols/collide.c, whose own
# report_error, parse_size, page_find and options_init must link and be the ones called, is
# linked against libsefer.a and the compiled amalgamation. First, the judge is tried on a
# made-up listing, so that a judge that passes everything fails the group.
set -u
src=$1 work=$2 all_policies=$3
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir -p "$work" || exit 1

# ---- the allowed names
api=$(sed -n 's/^SEFER_API[^(]*[ *]\(sefer_[a-z_0-9]*\)(.*/\1/p' "$src/include/sefer.h" \
	"$src/include/sefer/persist.h" | sort -u)
face=$(sed -n 's/^FACE [^(]*[ *]\([A-Za-z_0-9]*\)(.*/\1/p' \
	$(grep -l '^#define FACE ' "$src"/core/*.c) | sort -u)
# The cross-check: the parse must find these (a FACE spelled another way would drop them).
for must in malloc free calloc realloc posix_memalign __libc_malloc free_sized \
	free_aligned_sized mallinfo2 malloc_usable_size _Znwm _ZdlPv _ZdlPvm; do
	grep -qx "$must" <<<"$face" || bad "the FACE definitions in core/*.c have no $must"
done
for must in sefer_malloc sefer_free sefer_check_heap sefer_pstore_open sefer_palloc; do
	grep -qx "$must" <<<"$api" || bad "the SEFER_API declarations in include/ have no $must"
done
printf '%s\n' $api $face | sort -u >"$work/allowed"
echo "     allowed: $(wc -w <<<"$api") API names, $(wc -w <<<"$face") malloc-face names, sefer__*"

# judge WHAT INTERNAL: reads symbol names on stdin; prints those outside the rule. INTERNAL
# is "internal" where sefer__* is allowed (an archive, an object), "hidden" where it is not
# (libsefer.so's dynamic table).
judge() {
	sort -u | comm -23 - "$work/allowed" | if [ "$2" = internal ]; then
		grep -v '^sefer__'
	else
		cat
	fi
}

# ---- the judge itself, on a made-up nm listing: an API name, a face name, an internal and
# two that break the rule must give exactly those two.
fake=$(printf '%s\n' sefer_malloc malloc _Znwm sefer__page_find report_error sefer_secret | judge fake internal |
	tr '\n' ' ')
if [ "$fake" = "report_error sefer_secret " ]; then
	ok "the judge, on a made-up listing, names report_error and sefer_secret and only them"
else
	bad "the judge, on a made-up listing, named '$fake', not 'report_error sefer_secret'"
fi
fake=$(echo sefer__page_find | judge fake hidden)
[ "$fake" = sefer__page_find ] && ok "the judge refuses sefer__* in a dynamic symbol table" ||
	bad "the judge let sefer__page_find into a dynamic symbol table"

# ---- the configurations
globals() { nm -g --defined-only "$1" | awk 'NF == 3 { print $3 }'; }
# libsefer.so versions its stats calls (core/libsefer.map): a name is judged without its
# @VERSION, and the version nodes themselves (absolute symbols SEFER_0.1 ...) are no code.
dynamic() {
	nm -D --defined-only "$1" | awk 'NF == 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' |
		sort -u
}

# verdict CONFIG ARTEFACT-NAME INTERNAL: the nm listing on stdin (not from a pipe: bad()
# counts in this shell)
verdict() {
	local list extra
	list=$(cat)
	if [ -z "$list" ]; then
		bad "$1 $2: nm lists no global symbol"
		return
	fi
	extra=$(judge x "$3" <<<"$list")
	if [ -z "$extra" ]; then
		ok "$1 $2: $(sort -u <<<"$list" | wc -l) global symbols, all within the rule"
	else
		bad "$1 $2: outside the rule: $(echo $extra)"
	fi
}

# collide CONFIG DIR HOW OBJECTS...: link collide.c against OBJECTS and check its output
collide() {
	local cfg=$1 d=$2 how=$3 out
	shift 3
	if ! cc -std=gnu11 -O2 -Wall -Wextra -I"$src/include" -o "$d/collide-$how" \
		"$src/selftest/symbols/collide.c" "$@" $libs 2>"$d/collide-$how.err"; then
		bad "$cfg collide.c against $how does not link: $(head -c 400 "$d/collide-$how.err")"
		return
	fi
	if ! out=$("$d/collide-$how" 2>&1); then
		bad "$cfg collide.c against $how failed: $out"
		return
	fi
	if grep -q 'program report_error(41)' <<<"$out" &&
		grep -q 'program parse_size(12) = 12288' <<<"$out" &&
		grep -q 'program page_find(20) at 1' <<<"$out" &&
		grep -q 'program options_init' <<<"$out" &&
		grep -q 'sefer owns its block: yes; heap check: 0 errors' <<<"$out"; then
		ok "$cfg collide.c against $how: links, and its own four functions are called"
	else
		bad "$cfg collide.c against $how: unexpected output: $out"
	fi
	# The control: the same four named sefer__* must collide, or the members were not linked.
	if cc -std=gnu11 -O2 -DCOLLIDE_CONTROL -I"$src/include" -o "$d/control-$how" \
		"$src/selftest/symbols/collide.c" "$@" $libs 2>"$d/control-$how.err"; then
		bad "$cfg control: sefer__report_error & co. defined twice link against $how"
	elif [ "$(grep -cE 'multiple definition of .sefer__(report_error|parse_size|page_find|options_init)' \
		"$d/control-$how.err")" -eq 4 ]; then
		ok "$cfg control: the same four named sefer__* collide with $how's"
	else
		bad "$cfg control against $how: not the four expected collisions: $(head -c 400 \
			"$d/control-$how.err")"
	fi
}

mk() { make -s -f "$src/Makefile" O="$d" "$@"; }
for cfg in linux_defconfig linux_min hardened all-policies; do
	d=$work/$cfg
	rm -rf "$d" && mkdir -p "$d" || exit 1
	case $cfg in
	linux_defconfig) mk linux_defconfig ;;
	all-policies) KCONFIG_CONFIG=$d/.config /usr/bin/python3 "$src/scripts/kconfig.py" set \
		"$src/configs/linux_defconfig" $all_policies ;;
	*) mk ${cfg}_defconfig ;;
	esac >/dev/null || { bad "$cfg: configuration failed"; continue; }
	if ! mk "$d/libsefer.a" "$d/libsefer.so" amalgamation >"$d/build.log" 2>&1; then
		bad "$cfg: build failed: $(tail -5 "$d/build.log")"
		continue
	fi
	libs=$(mk ldlibs)
	if ! cc -std=gnu11 -O2 -c -o "$d/sefer.o" "$d/amalgamation/sefer.c" 2>"$d/amalg.err"; then
		bad "$cfg: the amalgamation does not compile: $(head -5 "$d/amalg.err")"
		continue
	fi
	verdict "$cfg" libsefer.a internal < <(globals "$d/libsefer.a")
	verdict "$cfg" "libsefer.so (dynamic)" hidden < <(dynamic "$d/libsefer.so")
	verdict "$cfg" "amalgamation sefer.o" internal < <(globals "$d/sefer.o")
	collide "$cfg" "$d" libsefer.a "$d/libsefer.a"
	collide "$cfg" "$d" amalgamation "$d/sefer.o"
done
[ $fails -eq 0 ]
