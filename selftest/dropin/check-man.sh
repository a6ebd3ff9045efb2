#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-man: each rendered man page formats with man -l, without a groff warning, to a
# page with its sections; and the pages keep up with the code: sefer(7)'s option list is the
# one scripts/genoptions.py makes from the option tables, every call include/sefer.h declares
# is in sefer(3).
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
# sefer(7)'s option list is generated from the option tables (scripts/genoptions.py): the
# committed page must match them, and the rendered page must name every option.
/usr/bin/python3 "$src/scripts/genoptions.py" "$src" --check "$src/Documentation/man/sefer.7" ||
	bad "sefer(7)'s option list differs from the option tables (make man-options)"
vars=$(/usr/bin/python3 "$src/scripts/genoptions.py" "$src" | grep -oE '^\.B[IR] SEFER_[A-Z_]+' |
	sed 's/^.* //' | sort -u)
n=0
for v in $vars; do
	n=$((n + 1))
	grep -q "$v" <<<"$text7" || bad "sefer(7) does not describe $v"
done
[ "$n" -ge 7 ] || bad "found only $n SEFER_* options in the option tables"
echo "ok   sefer(7) describes all $n SEFER_* options of the option tables, as generated"
calls=$(grep -oE 'SEFER_API [^(]*\b(sefer_[a-z_0-9]+)\(' "$src/include/sefer.h" |
	grep -oE 'sefer_[a-z_0-9]+\($' | tr -d '(' | sort -u)
n=0
for c in $calls; do
	n=$((n + 1))
	grep -q "$c" <<<"$text3" || bad "sefer(3) does not describe $c"
done
echo "ok   sefer(3) describes all $n calls of include/sefer.h"
exit $fail
