#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-man: each rendered man page formats with man -l, without a groff warning, to a
# page with its sections; and the pages keep up with the code: every SEFER_* variable the
# sources read is described in sefer(7), every call include/sefer.h declares in sefer(3).
#
#   check-man.sh <srctree> <rendered page>...
set -uo pipefail
src=$1
shift
fail=0
bad() { echo "check-man: FAIL: $*"; fail=1; }

command -v man >/dev/null || { echo "check-man: man not found (scripts/install-deps)"; exit 1; }
for page in "$@"; do
	name=$(basename "$page")
	grep -q '@VERSION@' "$page" && bad "$name: @VERSION@ not filled in"
	out=$(MANWIDTH=80 man --warnings -l "$page" 2>/tmp/check-man.$$) || bad "$name: man -l failed"
	if [ -s /tmp/check-man.$$ ]; then
		bad "$name: groff warnings:"
		sed 's/^/    /' /tmp/check-man.$$
	fi
	rm -f /tmp/check-man.$$
	for sec in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^$sec" <<<"$out" || bad "$name: no $sec section"
	done
	echo "ok   $name: $(wc -l <<<"$out") lines at 80 columns, no warnings"
done

page7=$(printf '%s\n' "$@" | grep '/sefer\.7$')
page3=$(printf '%s\n' "$@" | grep '/sefer\.3$')
text7=$(MANWIDTH=200 man -l "$page7" 2>/dev/null)
text3=$(MANWIDTH=200 man -l "$page3" 2>/dev/null)
# The option names the code reads: option_bool/uint/size("NAME") and read_env("NAME").
vars=$(grep -rhoE '(option_(bool|uint|size)|read_env)\("[A-Z_]+"' "$src/core" "$src/policies" \
	"$src/backends" "$src/persist" | sed -E 's/.*\("([A-Z_]+)"/SEFER_\1/' | sort -u)
n=0
for v in $vars; do
	n=$((n + 1))
	grep -q "$v" <<<"$text7" || bad "sefer(7) does not describe $v"
done
[ "$n" -ge 6 ] || bad "found only $n SEFER_* options in the sources"
echo "ok   sefer(7) describes all $n SEFER_* options the sources read"
calls=$(grep -oE 'SEFER_API [^(]*\b(sefer_[a-z_0-9]+)\(' "$src/include/sefer.h" |
	grep -oE 'sefer_[a-z_0-9]+\($' | tr -d '(' | sort -u)
n=0
for c in $calls; do
	n=$((n + 1))
	grep -q "$c" <<<"$text3" || bad "sefer(3) does not describe $c"
done
echo "ok   sefer(3) describes all $n calls of include/sefer.h"
exit $fail
