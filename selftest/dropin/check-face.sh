#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-face: selftest/dropin/face.c under LD_PRELOAD, against the configured library and
# its CONFIG_HARDENED twin; each misuse must be reported and end the process as documented.
#
#   check-face.sh <face> <libsefer.so> <hardened libsefer.so> <workdir> <hottrace.so>
set -uo pipefail
face=$1
lib=$2
hard=$3
work=$4
tracer=$5
fail=0
bad() { echo "check-face: FAIL: $*"; fail=1; }

# run <lib> <mode> <expected exit status> <stderr pattern, or "" for an empty stderr>
run() {
	local out err rc
	out=$(LD_PRELOAD=$1 "$face" "$2" ${5:-} 2>"$work/face.err")
	rc=$?
	err=$(cat "$work/face.err")
	[ "$rc" -eq "$3" ] || bad "$2 under $(basename "$(dirname "$1")"): exit $rc, not $3: $err"
	if [ -z "$4" ]; then
		[ -z "$err" ] || bad "$2: unexpected report: $err"
	else
		grep -Eq "$4" <<<"$err" || bad "$2: no report matching '$4' in: $err"
	fi
	[ -n "$out" ] && echo "     $out"
	[ -n "$err" ] && echo "     (stderr) $err"
	return 0
}

run "$lib" all 0 "" "$work/malloc_info.xml"
/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
assert r.tag == "malloc" and r.get("version") == "1"
assert r.find("heap").get("nr") == "0" and r.find("heap/sizes") is not None
sizes = r.findall("heap/sizes/size")
assert sizes, "no <size> under <sizes>"
for z in sizes:  # a size class: its free blocks, count * block size bytes
    assert int(z.get("from")) <= int(z.get("to")) and int(z.get("count")) * int(z.get("to")) == int(z.get("total")), z.attrib
kinds = {(t.tag, t.get("type")) for t in r}
for k in (("total", "fast"), ("total", "rest"), ("total", "mmap"), ("system", "current"),
          ("system", "max"), ("aspace", "total"), ("aspace", "mprotect")):
    assert k in kinds, k
print("     malloc_info: well-formed XML in glibc'"'"'s shape")' "$work/malloc_info.xml" ||
	bad "malloc_info's XML"
run "$lib" registry-quiet 0 ""
run "$lib" delete-warn 0 'double free of 0x[0-9a-f]+ \(block is already free\)'
run "$lib" sized-bad 0 ""	# without CONFIG_HARDENED the size is not checked
run "$hard" all 0 ""
run "$hard" contract 0 ""
run "$hard" sized-bad 134 'free_sized of 0x[0-9a-f]+ \(size 4000 does not match'
run "$hard" aligned-bad 134 'free_aligned_sized of 0x[0-9a-f]+ \(alignment 4194304: the block'
[ $fail -eq 0 ] && echo "ok   glibc and C23 names, mallinfo, mallopt, malloc_info, alignments"

# Loaded by dlopen, not preloaded: its initial-exec TLS must fit glibc's static TLS surplus.
tls=$(($(readelf -lW "$lib" | awk '$1 == "TLS" { print $6 }')))
if out=$("$face" dlopen "$lib" 2>&1); then
	echo "ok   dlopen: the sefer_* API from four threads ($tls bytes of static TLS)"
else
	bad "dlopen of $lib ($tls bytes of static TLS): $out"
fi

# The text a small program maps: the core's alone (check-hot-text.sh, which names what ran past
# it when that fails).
bash "$(dirname "$0")/check-hot-text.sh" "$lib" "$tracer" "$work" check-face || fail=1

# The .bss variables a process writes at start-up share .data's last page (resident anyway): the
# segment table, 4 MiB of .bss, and the empty heap, 7.5 KiB that are only read, are linked after
# them (so-bss-last, Makefile). Under cat, the anonymous mapping after the library's data holds
# no written page (the segment table's one lies in a mapping of its own, which its
# MADV_NOHUGEPAGE splits off); it read 4 KiB with segtab.o linked in its Kbuild place, and 4 KiB
# with the empty heap there.
bss=$(LD_PRELOAD=$lib cat /proc/self/smaps | /usr/bin/python3 -c '
import sys
lib, state = sys.argv[1], 0
for l in sys.stdin:
    w = l.split()
    if len(w) >= 5 and "-" in w[0] and len(w[1]) == 4:
        named = len(w) > 5
        state = 1 if named and w[1] == "rw-p" and w[-1].endswith("/" + lib) else \
            2 if state == 1 and not named else 0
    elif state == 2 and w and w[0] == "Rss:":
        print(w[1])
        break' "$(basename "$lib")")
if [ -z "$bss" ]; then
	bad "no anonymous .bss mapping after the data of $(basename "$lib") in smaps"
elif [ "$bss" -gt 4 ]; then
	bad "$bss KiB of libsefer.so's .bss are resident: start-up variables left .data's last page"
else
	echo "ok   a program under sefer writes $bss KiB of libsefer.so's .bss"
fi

# Nothing a program that mallocs runs reads libsefer.so's read-only data (.rodata and the unwind
# tables, the r--p mapping after the text): one read there maps all of it, 40 KiB (core/config.h,
# opaque_value and startup_data). The mapping's Rss under cat must be 0, with no SEFER_*
# variable set (reading one looks its name up in .rodata's option table).
unset_sefer=()
for v in $(compgen -e | grep '^SEFER_'); do
	unset_sefer+=(-u "$v")
done
ro=$(env "${unset_sefer[@]}" LD_PRELOAD="$lib" cat /proc/self/smaps | /usr/bin/python3 -c '
import sys
lib, state = sys.argv[1], 0
for l in sys.stdin:
    w = l.split()
    if len(w) >= 6 and w[-1].endswith("/" + lib):
        state = 1 if w[1] == "r-xp" else 2 if state == 1 and w[1] == "r--p" else 0
    elif state == 2 and w and w[0] == "Rss:":
        print(w[1])
        break' "$(basename "$lib")")
if [ -z "$ro" ]; then
	bad "no r--p mapping after the text of $(basename "$lib") in smaps"
elif [ "$ro" -ne 0 ]; then
	bad "$ro KiB of libsefer.so's read-only data are resident: a start-up path read .rodata"
else
	echo "ok   a program under sefer maps none of libsefer.so's read-only data"
fi
exit $fail
