#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packaged crates used from outside the tree (make check-rust):
#   check-outside.sh PACKAGE_DIR TARGET_DIR CARGO
# unpacks sefer-sys-*.crate and sefer-*.crate from PACKAGE_DIR into an empty directory under
# /tmp, builds sefer-sys there alone (it must carry its C sources), then builds and runs
# selftest/rust/outside, a program that depends on the unpacked sefer by path and makes it its
# #[global_allocator]. Crates come from Debian's registry, configured in the directory.
set -euo pipefail
pkg=$1 target=$2 cargo=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/sefer-rust-outside.XXXXXX)
trap 'rm -rf "$dir"' EXIT

mkdir -p "$dir/crates" "$dir/.cargo" "$dir/prog/src"
cp "$here/../../bindings/rust/.cargo/config.toml" "$dir/.cargo/"
for c in sefer-sys sefer; do
	tar -xzf "$pkg/$c-0.1.0.crate" -C "$dir/crates"
done
# Nothing of the tree may be needed: the unpacked crate is built where no sefer tree is above.
if ! [ -f "$dir/crates/sefer-sys-0.1.0/csrc/sefer.c" ]; then
	echo "FAIL sefer-sys-0.1.0.crate has no csrc/sefer.c"
	exit 1
fi
(cd "$dir/crates/sefer-sys-0.1.0" && CARGO_TARGET_DIR=$target "$cargo" build --offline -q)
echo "ok   sefer-sys-0.1.0.crate builds alone in $dir (its bundled amalgamation)"

sed "s#@CRATES@#$dir/crates#" "$here/outside/Cargo.toml.in" >"$dir/prog/Cargo.toml"
cp "$here/outside/src/main.rs" "$dir/prog/src/"
(cd "$dir/prog" && CARGO_TARGET_DIR=$target "$cargo" run --offline -q)
