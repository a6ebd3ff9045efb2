#!/bin/sh
# SPDX-License-Identifier: MIT
# sefer-pstore smoke test: create, stat, verify, dump, compact; a bad file is refused.
set -e
cli=$1
dir=$2
f=$dir/cli-$$.pst
rm -f "$f" "$f.bad"
fail() { echo "cli-test: FAIL: $*"; rm -f "$f" "$f.bad"; exit 1; }
for a in segregated first-fit best-fit; do
	rm -f "$f"
	"$cli" create -a $a -w 256 "$f" || fail "create $a"
	"$cli" stat "$f" | grep -q "allocator     $a" || fail "stat $a"
	"$cli" verify "$f" | grep -q ": ok" || fail "verify $a"
	"$cli" dump "$f" 5 >/dev/null || fail "dump $a"
	"$cli" compact "$f" >/dev/null || fail "compact $a"
	"$cli" create "$f" 2>/dev/null && fail "create over an existing file"
done
cp "$f" "$f.bad"
printf 'X' | dd of="$f.bad" bs=1 seek=0 conv=notrunc 2>/dev/null
msg=$("$cli" stat "$f.bad" 2>&1) && fail "bad magic accepted"
echo "$msg" | grep -q "bad magic" || fail "message: $msg"
cmp -s "$f" "$f.bad" && fail "copy identical"
rm -f "$f" "$f.bad"
echo "cli-test: 3 allocators created, stat, verify, dump, compact; bad magic refused: ok"
