#!/bin/bash
# SPDX-License-Identifier: MIT
# check-stats.sh OBJTREE BINDIR: the stats a program and a tool read (core/stats*.c).
#  - sefer_stats_print's JSON, parsed by python3's json module, against sefer_stats_get();
#  - SEFER_SHOW_STATS=json at exit parses, =1 prints the table with pid and program name,
#    =2 adds the size classes, a bad value is named;
#  - a program built against sefer 0.1's stats calls runs on this library (symbol versions);
#  - persist's sefer_pstats_get with an older, smaller and a newer, bigger struct;
#  - the cost of a query with 64 threads churning (printed; sefer(3) quotes it);
#  - the in-use peak of four threads with a segment each, sampled by the slow paths alone.
set -u
obj=$1 bin=$2
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
export LD_LIBRARY_PATH=$obj

# JSON against the struct, taken one after the other with nothing allocated between
"$bin/stats-json" >"$work/out" 2>"$work/err" || bad "stats-json exited $?"
$py - "$work/out" "$work/err" <<'PY' || bad "JSON figures differ from sefer_stats_get()"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
want = dict(l.split() for l in lines if l)
doc = json.loads(open(sys.argv[2]).read())
ok = True
for k, v in want.items():
    got = doc.get(k)
    if str(got) != v:
        print("  %s: JSON %s, sefer_stats_get %s" % (k, got, v)); ok = False
if doc.get("program") != "stats-json":
    print("  program: %r" % doc.get("program")); ok = False
small = sum(c["blocks"] for c in doc["classes"])
if small != doc["in_use_blocks"] - doc["large_blocks"]:
    print("  classes hold %d blocks, in use %d small" % (small, doc["in_use_blocks"] - doc["large_blocks"])); ok = False
if doc["large_blocks"] < 5 or doc["in_use_blocks"] < 3000:
    print("  the live set is missing: %r" % doc); ok = False
for k in ("rss", "rss_peak", "elapsed_ms", "cpu_user_ms", "cpu_system_ms"):
    if k not in doc:
        print("  no %s" % k); ok = False
sys.exit(0 if ok else 1)
PY

# SEFER_SHOW_STATS=json at exit: one JSON object a real parser takes, of this process
SEFER_SHOW_STATS=json "$bin/stats-json" exit >"$work/out" 2>"$work/err"
if ! $py -m json.tool <"$work/err" >/dev/null; then
	bad "SEFER_SHOW_STATS=json is not JSON:"; head -c 600 "$work/err"
fi
pid=$(sed -n 's/^pid //p' "$work/out")
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["pid"] != int(sys.argv[2]))' \
	"$work/err" "$pid" || bad "SEFER_SHOW_STATS=json: pid is not $pid"

# =1: the table, one header naming the program and its pid
SEFER_SHOW_STATS=1 "$bin/stats-json" exit >"$work/out" 2>"$work/err"
pid=$(sed -n 's/^pid //p' "$work/out")
for want in "sefer: stats of stats-json (pid $pid)" "sefer:   in use " "sefer:   committed " \
	"sefer:   RSS " "sefer:   time " "elapsed" "cross-thread frees" "purged"; do
	grep -qF -- "$want" "$work/err" || bad "SEFER_SHOW_STATS=1 lacks '$want'"
done
grep -q "block size" "$work/err" && bad "SEFER_SHOW_STATS=1 prints the size classes"
[ "$(grep -c "stats of" "$work/err")" = 1 ] || bad "SEFER_SHOW_STATS=1: not one table"
SEFER_SHOW_STATS=2 "$bin/stats-json" exit >/dev/null 2>"$work/err"
grep -q "class  block size" "$work/err" || bad "SEFER_SHOW_STATS=2 lacks the size classes"
# a boolean word is 1 (the table), another word is named with what is expected
SEFER_SHOW_STATS=yes "$bin/stats-json" exit >/dev/null 2>"$work/err"
[ "$(grep -c "stats of" "$work/err")" = 1 ] || bad "SEFER_SHOW_STATS=yes: not one table"
SEFER_SHOW_STATS=maybe "$bin/stats-json" exit >/dev/null 2>"$work/err"
grep -qF "bad value 'maybe' for SEFER_SHOW_STATS (expected 0, 1, 2 or json" "$work/err" ||
	bad "SEFER_SHOW_STATS=maybe not reported"

# a program linked against 0.1's stats calls (unversioned) keeps working
if "$bin/oldabi" >"$work/out" 2>"$work/err"; then
	grep -q "sefer: stats of oldabi" "$work/err" || bad "0.1's sefer_stats_print() printed nothing"
else
	bad "the 0.1 program failed ($?): $(cat "$work/out" "$work/err")"
fi

# persist's stats with the caller's struct size (CONFIG_PERSIST)
if [ -x "$bin/pstats-size" ]; then
	"$bin/pstats-size" "$work" || bad "sefer_pstats_get with an older and a newer struct"
fi

"$bin/query-cost" 64 5000 || bad "query-cost"
"$bin/peak-threads" || bad "the in-use peak of threads with a segment each was not sampled"

[ $fails -eq 0 ] && echo "check-stats: all passed"
[ $fails -eq 0 ]
