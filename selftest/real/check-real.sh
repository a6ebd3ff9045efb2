#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real programs under LD_PRELOAD=libsefer.so with SEFER_SHOW_STATS=json: each must give the same
# result as without sefer, and its stats (one JSON object a process, parsed by python3) must
# show that sefer served it.
#   check-real.sh LIBSEFER.so SCRATCH
set -u
lib=$(readlink -f "$1")
tmp=$2
here=$(dirname "$(readlink -f "$0")")
rm -rf "$tmp" && mkdir -p "$tmp"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# stat LOG FIELD [all]: FIELD of the last stats object in LOG (or the largest over every
# object with all, one a process); empty when there is none. committed_peak is the memory sefer
# mapped for the program (mallocs are counted only with CONFIG_STATS_CALLS).
stat() {
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
vals = []
for line in open(sys.argv[1], errors="replace"):
    if line.startswith('{"version": "sefer'):
        vals.append(json.loads(line)[sys.argv[2]])
if vals:
    print(max(vals) if len(sys.argv) > 3 else vals[-1])
PY
}
count() { grep -c '^{"version": "sefer' "$1"; }
peak() { v=$(stat "$1" committed_peak "${2:-}"); [ -n "$v" ] && echo $((v / 1024)); }
under() { LD_PRELOAD=$lib SEFER_SHOW_STATS=json "$@"; }

# PYTHONMALLOC=malloc: every Python object through malloc (not pymalloc's arenas).
want=$(/usr/bin/python3 "$here/alloc_heavy.py" 20)
got=$(PYTHONMALLOC=malloc under /usr/bin/python3 "$here/alloc_heavy.py" 20 2>"$tmp/py.err")
m=$(peak "$tmp/py.err")
if [ "$got" = "$want" ] && [ "${m:-0}" -gt 8192 ]; then
	ok "python3 allocation-heavy script: same output, $m KiB of sefer segments at the peak"
else
	bad "python3: got '$got' want '$want', peak '${m:-none}' KiB: $(head -3 "$tmp/py.err")"
fi

got=$(under /usr/bin/python3 -c 'print(sum(range(10**6)))' 2>"$tmp/sum.err")
if [ "$got" = 499999500000 ] && [ "$(peak "$tmp/sum.err")" -gt 0 ] 2>/dev/null; then
	ok "python3 -c 'print(sum(range(10**6)))' prints the sum and a stats summary"
else
	bad "python3 sum: '$got' $(cat "$tmp/sum.err")"
fi

if under gcc -O2 -o "$tmp/sample" "$here/sample.c" 2>"$tmp/gcc.err" && [ "$("$tmp/sample")" = 14 ] ||
	[ "$("$tmp/sample" 2>/dev/null)" = "$(gcc -O2 -o "$tmp/ref" "$here/sample.c" && "$tmp/ref")" ]; then
	n=$(count "$tmp/gcc.err")
	m=$(peak "$tmp/gcc.err" all)
	if [ "$n" -ge 2 ] && [ "${m:-0}" -gt 1024 ]; then
		ok "gcc compiled and linked a program: $n processes under sefer, up to $m KiB"
	else
		bad "gcc: stats missing ($n summaries, max peak '${m:-none}' KiB)"
	fi
else
	bad "gcc under sefer failed: $(head -5 "$tmp/gcc.err")"
fi

# A multithreaded program: Python threads allocate, the main thread frees what they made.
want=$(/usr/bin/python3 "$here/threads.py")
got=$(PYTHONMALLOC=malloc under /usr/bin/python3 "$here/threads.py" 2>"$tmp/mt.err")
h=$(stat "$tmp/mt.err" threads)
x=$(stat "$tmp/mt.err" xthread_frees)
if [ "$got" = "$want" ] && [ "${h:-0}" -ge 3 ] && [ "${x:-0}" -gt 1000 ]; then
	ok "multithreaded python3: same output, $h heaps, $x cross-thread frees"
else
	bad "multithreaded python3: got '$got' want '$want', heaps '${h:-none}', xfrees '${x:-none}'"
fi

echo "real programs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
