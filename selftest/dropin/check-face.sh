#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-face: selftest/dropin/face.c under LD_PRELOAD, against the configured library and
# its CONFIG_HARDENED twin; each misuse must be reported and end the process as documented.
#
#   check-face.sh <face> <libsefer.so> <hardened libsefer.so> <workdir>
set -uo pipefail
face=$1
lib=$2
hard=$3
work=$4
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
run "$lib" delete-warn 0 'double free of 0x[0-9a-f]+ \(block is already free\)'
run "$lib" sized-bad 0 ""	# without CONFIG_HARDENED the size is not checked
run "$hard" all 0 ""
run "$hard" contract 0 ""
run "$hard" sized-bad 134 'free_sized of 0x[0-9a-f]+ \(size 4000 does not match'
run "$hard" aligned-bad 134 'free_aligned_sized of 0x[0-9a-f]+ \(alignment 4194304: the block'
[ $fail -eq 0 ] && echo "ok   glibc and C23 names, mallinfo, mallopt, malloc_info, alignments"
exit $fail
