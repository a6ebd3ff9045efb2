#!/bin/sh
# SPDX-License-Identifier: MIT
# sefer-pstore tests: create (and its option checks), stat, verify, dump, list, compact, put,
# get, del; a bad file is refused; the read commands leave every byte and the mtime of a
# clean store, a mode 0444 store and a crashed store as they were.
# Usage: cli-test.sh SEFER_PSTORE TMPDIR PERSIST_TEST
set -e
cli=$1
dir=$2
ptest=$3
f=$dir/cli-$$.pst
tmp=$dir/cli-$$
cleanup() { chmod 644 "$f" 2>/dev/null || :; rm -f "$f" "$f.bad" "$tmp".*; }
fail() { echo "cli-test: FAIL: $*"; cleanup; exit 1; }
cleanup

# expect STATUS CMD...: run CMD, its status must be STATUS (stderr kept in $tmp.err).
expect() {
	want=$1
	shift
	st=0
	"$@" >"$tmp.out" 2>"$tmp.err" || st=$?
	[ "$st" = "$want" ] || fail "'$*' exited $st, not $want: $(cat "$tmp.err")"
}

for a in segregated first-fit best-fit; do
	rm -f "$f"
	"$cli" create -a $a -w 256 "$f" || fail "create $a"
	"$cli" stat "$f" | grep -q "allocator     $a" || fail "stat $a"
	"$cli" verify "$f" | grep -q ": ok" || fail "verify $a"
	"$cli" dump "$f" 5 >/dev/null || fail "dump $a"
	"$cli" compact "$f" >/dev/null || fail "compact $a"
	"$cli" create "$f" 2>/dev/null && fail "create over an existing file"
done

# create's options: a bad value is refused, naming the option, and creates nothing.
rm -f "$f"
for opt in "-w abc" "-w 0" "-w 12x" "-w -3" "-a buddy"; do
	expect 2 "$cli" create $opt "$f"
	grep -q "^sefer-pstore: ${opt%% *}: '" "$tmp.err" || fail "create $opt: $(cat "$tmp.err")"
	[ -e "$f" ] && fail "create $opt made the file"
done

# put, get, del, list.
"$cli" create -w 256 "$f"
h1=$(printf 'hello, store' | "$cli" put "$f") || fail "put from stdin"
head -c 300000 /dev/urandom >"$tmp.val"	# more than a record: several atomic pieces
h2=$("$cli" put -f "$tmp.val" "$f") || fail "put -f"
h3=$("$cli" put "$f" </dev/null) || fail "put of an empty value"
[ "$("$cli" get "$f" "$h1")" = "hello, store" ] || fail "get $h1"
"$cli" get "$f" "$h2" | cmp -s - "$tmp.val" || fail "get $h2 differs from the value put"
expect 0 "$cli" get "$f" "$h3"
[ -s "$tmp.out" ] && fail "get of the empty value printed something"
"$cli" list "$f" >"$tmp.list"
printf '%s 12\n%s 300000\n%s 0\n' "$h1" "$h2" "$h3" | cmp -s - "$tmp.list" ||
	fail "list: $(cat "$tmp.list")"
expect 0 "$cli" del "$f" "$h2"
expect 1 "$cli" del "$f" "$h2"
grep -q "no block at handle $h2" "$tmp.err" || fail "del twice: $(cat "$tmp.err")"
expect 1 "$cli" get "$f" "$h2"
expect 2 "$cli" get "$f" notanumber
expect 2 "$cli" put -x "$f"
expect 1 "$cli" put -f "$tmp.missing" "$f"
[ "$("$cli" list "$f" | wc -l)" = 2 ] || fail "list after del"
"$cli" verify "$f" | grep -q ": ok" || fail "verify after put/del"

# The read commands change nothing: bytes (cmp against a copy) and mtime (set to 2001 first).
readonly_checks() {	# FILE WHAT; $as: the runner (empty, or setpriv to another user)
	touch -d @1000000000 "$1"
	cp -p "$1" "$tmp.copy"
	for c in stat verify dump list get; do
		arg=
		[ $c = get ] && arg=$h1
		$as "$cli" $c "$1" $arg >/dev/null 2>"$tmp.err" ||
			fail "$c on $2: $(cat "$tmp.err")"
		cmp -s "$1" "$tmp.copy" || fail "$c on $2 changed the file's bytes"
		[ "$(stat -c %Y "$1")" = 1000000000 ] || fail "$c on $2 moved the mtime"
	done
}
as=
readonly_checks "$f" "a clean store"

# Mode 0444, read by a user who may not write it (as root: nobody, if it can reach the file).
chmod 444 "$f"
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null &&
	   setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$f"; then
		as="setpriv --reuid=65534 --regid=65534 --clear-groups"
	else
		echo "cli-test: note: the 0444 store is read as root (nobody cannot reach $dir)"
	fi
fi
readonly_checks "$f" "a 0444 store"
[ -n "$as" ] && { $as "$cli" compact "$f" >/dev/null 2>&1 && fail "compact wrote a 0444 file"; }
chmod 644 "$f"

# A crashed store: the read commands show it recovered, say so, and still write nothing.
rm -f "$f"
"$ptest" make-crashed "$f" 16 || fail "persist-test make-crashed"
touch -d @1000000000 "$f"
cp -p "$f" "$tmp.copy"
"$cli" stat "$f" >"$tmp.out" || fail "stat of a crashed store"
grep -q "UNCLEAN: recovery needed, not done" "$tmp.out" || fail "stat: $(cat "$tmp.out")"
grep -q "would replay [1-9][0-9]* log records" "$tmp.out" || fail "stat: $(cat "$tmp.out")"
for c in verify "dump" list; do
	"$cli" $c "$f" >/dev/null 2>"$tmp.err" || fail "$c on a crashed store: $(cat "$tmp.err")"
	grep -q "not closed cleanly" "$tmp.err" || fail "$c did not say: $(cat "$tmp.err")"
done
cmp -s "$f" "$tmp.copy" || fail "a read command changed the crashed store's bytes"
[ "$(stat -c %Y "$f")" = 1000000000 ] || fail "a read command moved the crashed store's mtime"
"$cli" compact "$f" >/dev/null || fail "compact (recovers) a crashed store"
"$cli" stat "$f" | grep -q "last close    clean" || fail "not clean after compact"

# Refused files: bad magic; only the magic (8 bytes) is a truncated header, said so.
cp "$f" "$f.bad"
printf 'X' | dd of="$f.bad" bs=1 seek=0 conv=notrunc 2>/dev/null
msg=$("$cli" stat "$f.bad" 2>&1) && fail "bad magic accepted"
echo "$msg" | grep -q "bad magic" || fail "message: $msg"
cmp -s "$f" "$f.bad" && fail "copy identical"
printf 'SEFERPS\000' >"$f.bad"
expect 1 "$cli" stat "$f.bad"
grep -q "truncated header: the file is 8 bytes" "$tmp.err" || fail "8-byte file: $(cat "$tmp.err")"
cleanup
echo "cli-test: 3 allocators created, stat, verify, dump, compact; option checks; put, get," \
	"del, list; read commands write nothing (clean, 0444${as:+ as nobody}, crashed);" \
	"bad files refused: ok"
