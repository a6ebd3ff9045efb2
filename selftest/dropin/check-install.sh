#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check-install: install into a DESTDIR and check the tree; build and run an outside
# program with nothing but pkg-config's flags, linked dynamically and statically (and a C++ one
# dynamically); install again with every directory variable moved; uninstall leaves nothing.
#
#   check-install.sh <srctree> <objtree> <workdir> <CONFIG_PERSIST value>
set -euo pipefail
src=$1
obj=$2
work=$3
persist=$4
mk=(make -f "$src/Makefile" O="$obj" -s)
fail() { echo "check-install: FAIL: $*"; exit 1; }
ver=$("${mk[@]}" -p -q 2>/dev/null | sed -n 's/^SEFER_VERSION := //p')
major=${ver%%.*}
[ -n "$ver" ] || fail "no SEFER_VERSION"

rm -rf "$work"
mkdir -p "$work"
root=$work/root

# ---- 1. make install DESTDIR=...: the tree
"${mk[@]}" install DESTDIR="$root" >/dev/null
p=$root/usr/local
want=(lib/libsefer.so.$ver lib/libsefer.so.$major lib/libsefer.so lib/libsefer.a
	lib/pkgconfig/sefer.pc include/sefer.h share/man/man3/sefer.3 share/man/man7/sefer.7)
if [ "$persist" = y ]; then
	want+=(include/sefer/persist.h bin/sefer-pstore share/man/man1/sefer-pstore.1)
fi
for f in "${want[@]}"; do
	[ -e "$p/$f" ] || fail "make install did not write $f"
done
[ "$(readlink "$p/lib/libsefer.so.$major")" = "libsefer.so.$ver" ] || fail "SONAME link"
[ "$(readlink "$p/lib/libsefer.so")" = "libsefer.so.$major" ] || fail "libsefer.so link"
soname=$(readelf -d "$p/lib/libsefer.so.$ver" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libsefer.so.$major" ] || fail "SONAME is '$soname'"
nfiles=$(cd "$root" && find . -type f -o -type l | wc -l)
[ "$nfiles" -eq "${#want[@]}" ] || fail "install wrote $nfiles files, expected ${#want[@]}"
if [ "$persist" = y ]; then
	usage=$("$p/bin/sefer-pstore" 2>&1 || true)
	grep -q '^usage: sefer-pstore' <<<"$usage" || fail "installed sefer-pstore: $usage"
fi
echo "ok   install: $nfiles files under DESTDIR/usr/local, SONAME libsefer.so.$major"
sed 's/^/       /' "$p/lib/pkgconfig/sefer.pc"

# ---- 2. outside programs, with pkg-config's flags only
export PKG_CONFIG_PATH=$p/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=
pc() { pkg-config "$@" sefer; }
[ "$(pc --modversion)" = "$ver" ] || fail "pkg-config --modversion: $(pc --modversion)"
cc -o "$work/dyn" "$src/selftest/dropin/outside.c" $(pc --cflags --libs)
readelf -d "$work/dyn" | grep -q "NEEDED.*\[libsefer.so.$major\]" || fail "dyn: no NEEDED libsefer"
LD_LIBRARY_PATH=$p/lib "$work/dyn" || fail "dynamic program"
libs=$(pc --static --libs)
cc -o "$work/static" "$src/selftest/dropin/outside.c" $(pc --static --cflags --libs) -static
readelf -d "$work/static" 2>&1 | grep -q NEEDED && fail "static: a NEEDED entry"
"$work/static" || fail "static program"
echo "ok   pkg-config: dynamic ($(echo $(pc --libs))) and static ($(echo $libs)), both sefer's"
if command -v c++ >/dev/null; then
	c++ -DSEFER_LINKED -o "$work/cxx" "$src/selftest/dropin/cxx.cc" $(pc --cflags --libs) -ldl
	LD_LIBRARY_PATH=$p/lib "$work/cxx" linked || fail "C++ program"
fi

# ---- 3. every directory variable moved; uninstall removes exactly what install wrote
vars=(PREFIX=/opt/sefer LIBDIR=/opt/lib64 INCLUDEDIR=/opt/inc BINDIR=/opt/sbin MANDIR=/opt/man)
"${mk[@]}" install DESTDIR="$work/moved" "${vars[@]}" >/dev/null
for f in opt/lib64/libsefer.so.$major opt/lib64/libsefer.a opt/lib64/pkgconfig/sefer.pc \
	opt/inc/sefer.h opt/man/man3/sefer.3 opt/man/man7/sefer.7; do
	[ -e "$work/moved/$f" ] || fail "moved install: no $f"
done
[ "$persist" != y ] || [ -x "$work/moved/opt/sbin/sefer-pstore" ] || fail "BINDIR"
grep -q '^libdir=/opt/lib64$' "$work/moved/opt/lib64/pkgconfig/sefer.pc" || fail "moved libdir"
"${mk[@]}" uninstall DESTDIR="$work/moved" "${vars[@]}" >/dev/null
"${mk[@]}" uninstall DESTDIR="$root" >/dev/null
left=$(cd "$work" && find root moved -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"
echo "ok   PREFIX, LIBDIR, INCLUDEDIR, BINDIR, MANDIR honoured; uninstall leaves no file"
