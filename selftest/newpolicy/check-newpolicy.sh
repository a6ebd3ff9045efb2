#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-newpolicy: a policy plugs in without an edit under core/.
#
# Copies the source tree to a temporary folder, adds the throwaway callcount policy there (the
# folder selftest/newpolicy/callcount/ as policies/callcount/, plus one source line in
# policies/Kconfig), checks that nothing else differs from the source tree, builds it with the
# policy on and runs test_callcount.c, which checks that the policy's slow-path hook
# (large_alloc) was called. Done twice: the source line last in the policy menu (the chain
# asks large_cache first) and first (callcount is asked first).
#   check-newpolicy.sh SRCTREE [CC]
set -u
src=$1
cc=${2:-gcc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sefer-newpolicy.XXXXXX")
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# the tree as the working copy has it (tracked and new files, not build output)
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
	(cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - 2>/dev/null) |
		(mkdir -p "$tmp/orig" && tar -xf - -C "$tmp/orig")
else
	mkdir -p "$tmp/orig" && (cd "$src" && tar -cf - --exclude='./build*' .) | tar -xf - -C "$tmp/orig"
fi
line='source "policies/callcount/Kconfig"'

for where in last first; do
	tree=$tmp/$where
	cp -a "$tmp/orig" "$tree"
	cp -r "$src/selftest/newpolicy/callcount" "$tree/policies/callcount"
	if [ $where = last ]; then
		sed -i "/^endmenu/i $line" "$tree/policies/Kconfig"
	else
		sed -i "/^menu /a $line" "$tree/policies/Kconfig"
	fi
	changed=$(diff -rq "$tmp/orig" "$tree" | sed "s|$tmp/orig|.|; s|$tree|.|g")
	nlines=$(diff "$tmp/orig/policies/Kconfig" "$tree/policies/Kconfig" | grep -c '^>')
	if [ "$changed" = "$(printf 'Files ./policies/Kconfig and ./policies/Kconfig differ\nOnly in ./policies: callcount')" ] &&
		[ "$nlines" = 1 ]; then
		ok "$where: the policy is a folder and one line in policies/Kconfig, nothing under core/"
	else
		bad "$where: the copy differs elsewhere: $changed"
		continue
	fi

	out=$tree/build
	mk() { make -s -C "$tree" O="$out" CC="$cc" "$@"; }
	if ! mk linux_defconfig >/dev/null ||
		! KCONFIG_CONFIG=$out/.config /usr/bin/python3 "$tree/scripts/kconfig.py" set \
			"$out/.config" POLICY_CALLCOUNT=y >/dev/null ||
		! mk EXTRA_CFLAGS=-Werror all >"$tmp/build.log" 2>&1; then
		bad "$where: build with POLICY_CALLCOUNT=y: $(tail -5 "$tmp/build.log" 2>/dev/null)"
		continue
	fi
	order=$(sed -n 's/^#define SEFER_POLICIES(X) //p' "$out/include/generated/policies.h")
	echo "     generated chain: $order"
	case "$where:$order" in
	last:*"X(callcount)") ok "last: callcount ends the generated chain" ;;
	first:"X(callcount)"*) ok "first: callcount starts the generated chain" ;;
	*) bad "$where: callcount misplaced in the generated chain: $order" ;;
	esac

	prog=$out/test_callcount
	if ! "$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -I"$tree/include" -I"$tree" \
		-I"$out/include" -include "$out/include/generated/autoconf.h" -o "$prog" \
		"$src/selftest/newpolicy/test_callcount.c" "$out/libsefer.a" $(mk ldlibs) \
		2>"$tmp/cc.log"; then
		bad "$where: test_callcount does not build: $(head -5 "$tmp/cc.log")"
		continue
	fi
	if SEFER_SHOW_STATS=1 "$prog" $where >"$tmp/run.log" 2>&1; then
		ok "$where: $(grep '^callcount' "$tmp/run.log")"
	else
		bad "$where: $(cat "$tmp/run.log")"
	fi
	calls=$(sed -n 's/.*hook calls \([0-9]*\).*/\1/p' "$tmp/run.log")
	if grep -q "callcount: large_alloc called $calls times" "$tmp/run.log"; then
		ok "$where: the print_stats hook reported $calls calls at exit"
	else
		bad "$where: no print_stats line for $calls calls"
	fi
done

echo "new policy: $pass passed, $fail failed"
if [ "$fail" -eq 0 ]; then
	rm -rf "$tmp"
else
	echo "(the trees are kept in $tmp)"
fi
[ "$fail" -eq 0 ]
