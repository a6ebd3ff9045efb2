#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What text of libsefer.so a small program maps: make check-face runs it against the configured
# library, make check-warnings against the same configuration built by clang.
#
#   check-hot-text.sh <libsefer.so> <hottrace.so> <workdir> <group name> [<what, for the ok line>]
#
# The code a program that mallocs runs is a text segment of its own, the first (the functions
# core/libsefer-hot.lds lists under .text.sefer_core), the rest of the profile another, and the
# rest of the text a third: the kernel's fault-around (64 KiB windows of the file's cached pages)
# stops at a mapping's end, so a program that runs none of a mapping leaves it unmapped. cat
# reads its own smaps while it runs, under sefer: every r-xp mapping of the library but the first
# must have an Rss of 0 (it fails against a list without malloc, with a gap page of the linker
# script removed, or with sefer__malloc_slow moved out of the core list). When it fails, cat runs
# again with selftest/dropin/hottrace.c preloaded, which names the first function run on each page
# of those mappings, and the functions each such page holds (nm): what the core list lacks.
set -uo pipefail
lib=$1
tracer=$2
work=$3
group=$4
what=${5:+$5: }

text=$(LD_PRELOAD=$lib cat /proc/self/smaps | /usr/bin/python3 -c '
import sys
lib, maps, cur = sys.argv[1], [], None
for l in sys.stdin:
    w = l.split()
    if len(w) >= 6 and "-" in w[0] and len(w[1]) == 4:
        cur = None
        if w[1] == "r-xp" and w[-1].endswith("/" + lib):
            a, b = (int(x, 16) for x in w[0].split("-"))
            cur = [(b - a) // 1024, None]
            maps.append(cur)
    elif cur is not None and w and w[0] == "Rss:":
        cur[1] = int(w[1])
print(" ".join("%d:%d" % (m[1], m[0]) for m in maps))' "$(basename "$lib")")
read -r -a textmaps <<<"$text"

# Every text segment's file offset is its address (core/libsefer-hot.lds, the gap pages): perf
# probe places a uprobe by one distance between the two for the whole library, and a text
# segment at another distance took probes into the middle of other functions' instructions (the
# traced program died of SIGSEGV). The data segment may lie a page off, as ld's own script puts it.
skewed=""
while read -r type off vaddr rest; do
	[ "$type" = LOAD ] && [[ " $rest " == *" E "* ]] && [ $((off)) -ne $((vaddr)) ] &&
		skewed+=" $vaddr@$off"
done < <(readelf -lW "$lib")
if [ -n "$skewed" ]; then
	echo "$group: FAIL: $lib has text segments whose file offset is not their address" \
		"(address@offset:$skewed): a gap of the linker script without file pages?"
	exit 1
fi

# traced <command...>: the command under the library and the tracer, which writes to $trace
trace=$work/hottrace.out
traced() {
	rm -f "$trace"
	HOTTRACE_LIB=$(realpath "$lib") HOTTRACE_OUT=$trace LD_PRELOAD="$lib $tracer" "$@" \
		>/dev/null
}

# The tracer itself, so that the failure message does not rot unseen: python3 calling
# malloc_trim (cold text) under it must have the first run on malloc_trim's page recorded.
traced /usr/bin/python3 -c 'import ctypes; ctypes.CDLL(None).malloc_trim(0)'
page=$(getconf PAGESIZE)
trim=$(nm --defined-only "$lib" | awk '$3 == "malloc_trim" { print $1 }')
ran_trim=0
while read -r word addr; do
	[ "$word" = ran ] && [ $((addr / page)) -eq $((0x${trim:-0} / page)) ] && ran_trim=1
done < <(cat "$trace" 2>/dev/null)
if [ -z "$trim" ] || [ $ran_trim -eq 0 ]; then
	echo "$group: FAIL: hottrace.so recorded no run on malloc_trim's page (0x${trim:-none})" \
		"under python3: $(tr '\n' ' ' <"$trace" 2>/dev/null)"
	exit 1
fi

resident=0
for m in "${textmaps[@]:1}"; do
	[ "${m%%:*}" -ne 0 ] && resident=1
done
if [ "${#textmaps[@]}" -lt 3 ]; then
	echo "$group: FAIL: $lib's text is ${#textmaps[@]} mapping(s) (${text:-none}), not the" \
		"core, the rest of the hot text and the cold text"
	exit 1
elif [ $resident -eq 0 ]; then
	echo "ok   ${what}a program under sefer maps ${textmaps[0]/:/ of } KiB of core text and none" \
		"of the other text mappings (Rss:size KiB, $text); every text segment at its address"
	exit 0
fi
echo "$group: FAIL: $lib's text past the core is resident (Rss:size KiB, $text): code the core" \
	"list lacks ran"
traced cat /proc/self/smaps
/usr/bin/python3 -c '
import subprocess, sys
lib, trace, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
funcs = []  # (address, end, name) of every function, from the symbol table
for l in subprocess.run(["nm", "-n", "-S", "--defined-only", lib], capture_output=True,
                        text=True).stdout.splitlines():
    w = l.split()
    if len(w) == 4 and w[2] in "tTwWiI":
        a = int(w[0], 16)
        funcs.append((a, a + max(int(w[1], 16), 1), w[3]))
def holds(page):
    return ", ".join(n for a, e, n in funcs if a < page + size and e > page) or "no function"
def named(addr):
    f = [(a, n) for a, e, n in funcs if a <= addr < e]
    return "%s+0x%x" % (f[0][1], addr - f[0][0]) if f else "0x%x" % addr
events = [l.split() for l in open(trace)] if __import__("os").path.exists(trace) else []
if not events:
    print("     (the tracer did not start: HOTTRACE_LIB not found in /proc/self/maps?)")
for word, value in events:
    addr = int(value, 16)
    page = addr - addr % size
    if word == "before":
        print("     resident page at 0x%x (mapped before the tracer started) holds: %s" %
              (page, holds(page)))
    elif word == "ran":
        print("     resident page at 0x%x (first run: %s) holds: %s" % (page, named(addr),
                                                                       holds(page)))
if len(events) == 1:
    print("     (under the tracer nothing ran past the core: a run that differs; try perf record"
          " -e page-faults -d)")
print("     add the functions that ran to .text.sefer_core in core/libsefer-hot.lds (one run"
      " names the first one entered on each page: check again after adding them)")
' "$lib" "$trace" "$page"
exit 1
