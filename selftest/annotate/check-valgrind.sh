#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Valgrind sees sefer's blocks (CONFIG_VALGRIND, core/annotate.h). Runs under valgrind:
#  1. selftest/annotate/misuse.c, one misuse a mode, and asserts memcheck's report: its kind,
#     and the address and block size, which proves memcheck tracks sefer's blocks (without the
#     annotations it would see one big mmap'd range and report none of these);
#  2. the unit suite (the suites that fit the time), the stress test and two real programs
#     (python3 and sqlite3 with libsefer.so preloaded), which must give no error at all;
#  3. with a FACE program (linked to the default-configured libsefer.so) and FACE_STATIC (the
#     same linked with libsefer.a), the other way: --soname-synonyms=somalloc=libsefer.so*
#     (=NONE) makes Valgrind replace sefer's malloc.
#
#   check-valgrind.sh VALGRIND_BUILD_DIR [FACE_PROGRAM FACE_STATIC]
set -u
dir=$(cd "$1" && pwd)
face=${2:-}
face_static=${3:-}
out=$dir/check-valgrind
mkdir -p "$out"
pass=0 fail=0
# Valgrind (3.19) replaces the malloc family of whichever object defines it, libsefer.so or a
# program linked with libsefer.a, unless --soname-synonyms names another: a pattern that
# matches no object keeps sefer's own malloc, whose blocks CONFIG_VALGRIND describes.
# --fair-sched=yes: valgrind runs one thread at a time, and without it a thread that spins
# waiting for another (the threads suite's producer and consumer) can starve it for minutes.
vg=(valgrind --error-exitcode=99 --leak-check=full --num-callers=12 --fair-sched=yes
	--soname-synonyms=somalloc=no-such-object)

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL $1"
	[ -n "${2:-}" ] && sed 's/^/     | /' "$2" | tail -30
	fail=$((fail + 1))
}

# expect LOG NAME PATTERN...: every extended regex must match a line of LOG
expect() {
	local log=$1 name=$2 pat
	shift 2
	for pat in "$@"; do
		if ! grep -qE -- "$pat" "$log"; then
			bad "$name: no line matches /$pat/" "$log"
			return 1
		fi
	done
	ok "$name"
}

# the free's stack: sefer_free, or the free path it tail-called (no frame of its own)
sefer_free='(at|by) 0x[0-9A-F]+: (sefer_free|sefer__free_local_block|sefer__large_free)'
sefer_free+=' \((api|free).c'

# the block address the mode printed, plus an offset, as valgrind prints it (0x4c50060)
# An allocation's stack: sefer's path (a page's first block comes from the slow path, which
# sefer_malloc and sefer_heap_malloc tail-call, so their own frame may be gone) down to the
# program's line that asked.
alloc_stack='by 0x[0-9A-F]+: (sefer_malloc|sefer_heap_malloc|pop_block[.a-z0-9]*) '
alloc_site='by 0x[0-9A-F]+: (block|leak_mode|heap_mode|main) \(misuse.c:[0-9]+\)'

addr() { printf '0x%x' $(($(sed -n "s/^$2: block \(0x[0-9a-f]*\).*/\1/p" "$1" | head -1) + $3)); }

misuse() {
	local m=$1
	"${vg[@]}" "$dir/selftest/annotate/misuse" "$m" >"$out/$m.log" 2>&1
	echo $? >"$out/$m.rc"
}

heaps=$(grep -q '^CONFIG_HEAPS=y' "$dir/.config" && echo y)
for m in clean slack uaf overflow leak uninit large-uaf realloc-uaf \
	${heaps:+heap-destroy-uaf heap-clean}; do
	misuse $m
done
if [ "$(cat "$out/clean.rc")" = 0 ]; then
	expect "$out/clean.log" "clean program: no error" 'ERROR SUMMARY: 0 errors' '^clean: '
else
	bad "clean program: exit status $(cat "$out/clean.rc")" "$out/clean.log"
fi
expect "$out/slack.log" "slack up to sefer_usable_size: no error" 'ERROR SUMMARY: 0 errors'
a=$(addr "$out/uaf.log" uaf 32)
expect "$out/uaf.log" "use after free: invalid read inside the freed 64-byte block" \
	'Invalid read of size 1' "Address $a is 32 bytes inside a block of size 64 free'd" \
	"$sefer_free" 'Block was alloc.d at' "$alloc_stack" "$alloc_site"
a=$(addr "$out/overflow.log" overflow 64)
expect "$out/overflow.log" "overflow: invalid write just past the 64-byte block" \
	'Invalid write of size 1' "Address $a is 0 bytes after a block of size 64 alloc'd" \
	"$alloc_stack" "$alloc_site"
# Every leaked block "definitely lost", whatever sefer's metadata knows of its address; none
# "still reachable" (the page descriptors, the large segments' headers and the large cache
# hold those addresses only as hidden words: core/segment.h, meta_ptr_hide).
expect "$out/leak.log" "leak: a page's and a segment's first block definitely lost" \
	'112 bytes in 1 blocks are definitely lost' "$alloc_stack" "$alloc_site"
expect "$out/leak.log" "leak: a block from the middle of a page definitely lost" \
	'224 bytes in 1 blocks are definitely lost'
expect "$out/leak.log" "leak: a large block definitely lost" \
	'5,[0-9,]+ bytes in 1 blocks are definitely lost'
if [ -n "$heaps" ]; then
	expect "$out/leak.log" "leak: a first-class heap's block definitely lost" \
		'320 bytes in 1 blocks are definitely lost'
fi
if grep -q '^CONFIG_POLICY_LARGE_CACHE=y' "$dir/.config"; then
	expect "$out/leak.log" "leak: a large block placed in a cached segment definitely lost" \
		'^leak-recached: the cached segment' '8,[0-9,]+ bytes in 1 blocks are definitely lost'
else
	expect "$out/leak.log" "leak: a second large block definitely lost" \
		'8,[0-9,]+ bytes in 1 blocks are definitely lost'
fi
expect "$out/leak.log" "leak: nothing still reachable, nothing possibly lost" \
	'still reachable: 0 bytes in 0 blocks' 'possibly lost: 0 bytes in 0 blocks'
expect "$out/uninit.log" "uninitialised read: a branch on malloc'd bytes" \
	'Conditional jump or move depends on uninitialised value' 'at 0x[0-9A-F]+: main \(misuse.c'
a=$(addr "$out/large-uaf.log" large-uaf 4096)
expect "$out/large-uaf.log" "large use after free: inside the freed large block" \
	'Invalid read of size 1' "Address $a is 4,096 bytes inside a block of size 3,[0-9,]+ free'd" \
	"$sefer_free"
a=$(addr "$out/realloc-uaf.log" realloc-uaf 40)
expect "$out/realloc-uaf.log" "realloc: the moved block's old copy is freed" \
	'Invalid read of size 1' "Address $a is 40 bytes inside a block of size 64 free'd" \
	'by 0x[0-9A-F]+: (sefer_realloc|sefer__realloc_any) '
if [ -n "$heaps" ]; then
	a=$(addr "$out/heap-destroy-uaf.log" heap-destroy-uaf 32)
	expect "$out/heap-destroy-uaf.log" "a destroyed first-class heap's block: freed by the destroy" \
		'Invalid read of size 1' "Address $a is 32 bytes inside a block of size 64 free'd" \
		'by 0x[0-9A-F]+: sefer_heap_destroy ' "$alloc_stack" "$alloc_site"
	if [ "$(cat "$out/heap-clean.rc")" = 0 ]; then
		expect "$out/heap-clean.log" "a first-class heap's life, then its memory reused: no error" \
			'ERROR SUMMARY: 0 errors' 'All heap blocks were freed' '^heap-clean: '
	else
		bad "heap-clean: exit status $(cat "$out/heap-clean.rc")" "$out/heap-clean.log"
	fi
fi

# 2. sefer's own code gives memcheck nothing to report. The suites left out: process (fork
# with RLIMIT_AS, exec'd children), decommit and generations (their RSS checks count valgrind's
# own memory; decommit alone takes 60 s under valgrind) and heaps (over three minutes under
# valgrind: the heap-* misuse modes above cover what the annotations do for heaps), os and
# remap_undo (the backend's mremap moves, asserted with mincore and /proc/self/maps: valgrind
# 3.19 emulates mremap itself, and after a stepped move it reports the grown part unaddressable
# and the source still mapped, and a source that starts in a hole, made on purpose, crashes it:
# "the 'impossible' happened"; both suites run natively and under ASan and TSan).
# Check's per-test timeouts are for native speed: ten times longer under valgrind.
SEFER_TEST_SKIP="process decommit generations heaps os remap_undo" CK_TIMEOUT_MULTIPLIER=10 \
	"${vg[@]}" --leak-check=no "$dir/selftest/unit/sefer-unit" >"$out/unit.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$out/unit.log" &&
	! grep -qE '^==[0-9]+== (Invalid|Conditional|Use of|Syscall)' "$out/unit.log"; then
	ok "unit suite under valgrind: $(grep -oE 'Checks: [0-9]+' "$out/unit.log"), 0 errors"
else
	bad "unit suite under valgrind (exit $rc)" "$out/unit.log"
fi
"${vg[@]}" --leak-check=no "$dir/selftest/stress/stress" 4 3000 1 >"$out/stress.log" 2>&1
expect "$out/stress.log" "stress test (4 threads) under valgrind: 0 errors" \
	'ERROR SUMMARY: 0 errors'

lib=$dir/libsefer.so
if [ -f "$lib" ] && grep -q '^CONFIG_MALLOC_FACE=y' "$dir/.config"; then
	# Real programs, every allocation through sefer (PYTHONMALLOC=malloc: not pymalloc).
	SEFER_TEST_VG_LIB=$lib PYTHONMALLOC=malloc LD_PRELOAD=$lib "${vg[@]}" --leak-check=no \
		/usr/bin/python3 -c '
import ctypes, json, os
sefer = ctypes.CDLL(os.environ["SEFER_TEST_VG_LIB"])
sefer.sefer_owns.argtypes = [ctypes.c_void_p]
sefer.sefer_owns.restype = ctypes.c_bool
buf = ctypes.CDLL(None).malloc
buf.restype = ctypes.c_void_p
p = buf(100)
d = {str(i): [i] * (i % 7) for i in range(20000)}
s = json.dumps(d)
print("python3 ok", len(json.loads(s)), "served by sefer:", sefer.sefer_owns(p))
' >"$out/python3.log" 2>&1
	expect "$out/python3.log" "python3 with libsefer.so preloaded: 0 errors" \
		'python3 ok 20000 served by sefer: True' 'ERROR SUMMARY: 0 errors'
	if command -v sqlite3 >/dev/null; then
		sql="create table t(a, b); with recursive c(x) as (select 1 union all"
		sql="$sql select x + 1 from c where x < 20000) insert into t select x,"
		sql="$sql printf('%0*d', x % 300, x) from c; create index i on t(b);"
		sql="$sql select count(*), sum(length(b)) from t;"
		LD_PRELOAD=$lib "${vg[@]}" --leak-check=no sqlite3 :memory: "$sql" \
			>"$out/sqlite3.log" 2>&1
		expect "$out/sqlite3.log" "sqlite3 with libsefer.so preloaded: 0 errors" \
			'^20000\|' 'ERROR SUMMARY: 0 errors'
	fi
fi

# 3. The default build. Valgrind replaces sefer's malloc face with its own when told that
# libsefer.so is the malloc library, and (3.19) even when not told; kept (the pattern that
# matches nothing), sefer serves the program and, without CONFIG_VALGRIND, memcheck sees
# nothing of its blocks. The face program is linked to the build check-valgrind ran from.
if [ -n "$face" ]; then
	froot=$(dirname "$(dirname "$(dirname "$face")")")
	LD_LIBRARY_PATH=$froot valgrind --soname-synonyms='somalloc=libsefer.so*' "$face" \
		>"$out/face.log" 2>&1
	a=$(addr "$out/face.log" face_uaf 32)
	expect "$out/face.log" "libsefer.so, --soname-synonyms=somalloc=libsefer.so*: valgrind's malloc" \
		'face_uaf: block .* sefer 0' 'Invalid read of size 1' \
		"Address $a is 32 bytes inside a block of size 64 free'd" \
		'at 0x[0-9A-F]+: free \(in .*vgpreload_memcheck'
	LD_LIBRARY_PATH=$froot valgrind "$face" >"$out/face-default.log" 2>&1
	expect "$out/face-default.log" "libsefer.so, no option: valgrind's malloc all the same" \
		'face_uaf: block .* sefer 0' 'Invalid read of size 1'
	if [ -n "$face_static" ]; then
		valgrind --soname-synonyms=somalloc=NONE "$face_static" >"$out/face-static.log" 2>&1
		a=$(addr "$out/face-static.log" face_uaf 32)
		expect "$out/face-static.log" "libsefer.a, --soname-synonyms=somalloc=NONE: valgrind's malloc" \
			'face_uaf: block .* sefer 0' 'Invalid read of size 1' \
			"Address $a is 32 bytes inside a block of size 64 free'd"
	fi
	if ! grep -q '^CONFIG_VALGRIND=y' "$froot/.config"; then
		LD_LIBRARY_PATH=$froot "${vg[@]}" --leak-check=no "$face" >"$out/face-kept.log" 2>&1
		expect "$out/face-kept.log" "libsefer.so kept, CONFIG_VALGRIND off: the use after free unseen" \
			'face_uaf: block .* sefer 1' 'ERROR SUMMARY: 0 errors'
	fi
fi

echo "check-valgrind: $pass passed, $fail failed"
[ $fail -eq 0 ]
