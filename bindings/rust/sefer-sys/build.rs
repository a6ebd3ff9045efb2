// SPDX-License-Identifier: MIT
//! Builds sefer for the crate, from one of three places:
//!
//! * feature `system`: an installed libsefer, found with pkg-config (`sefer.pc`, written by
//!   `make install`); nothing is compiled.
//! * inside the sefer source tree (this crate at `bindings/rust/sefer-sys`): the amalgamation
//!   is generated into OUT_DIR by the tree's own `make vendor_defconfig amalgamation`, so the
//!   crate always compiles the tree as it is now.
//! * the packaged crate: `csrc/sefer.c`, the amalgamation `make rust-package` put in it.
//!
//! The C file is compiled with SEFER_STATIC_ALL: every internal symbol of sefer is static,
//! and only the `sefer_*` API is visible to the linker (Documentation/vendoring.rst).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    if env::var_os("CARGO_FEATURE_SYSTEM").is_some() {
        link_system();
        return;
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let srctree = manifest.join("../../..");
    let amalg = if srctree.join("scripts/amalgamate.py").is_file() {
        amalgamate_from_tree(&srctree, &out)
    } else {
        println!("cargo:rerun-if-changed=csrc/sefer.c");
        println!("cargo:rerun-if-changed=csrc/sefer.h");
        manifest.join("csrc")
    };
    let c = amalg.join("sefer.c");
    if !c.is_file() {
        panic!(
            "sefer-sys: {} is missing: run `make rust-package` in the sefer tree to bundle \
             the amalgamation, or enable the `system` feature to link an installed libsefer",
            c.display()
        );
    }
    compile(&c);
    println!("cargo:include={}", amalg.display());
}

/// The flags of the library's own build that matter for the code (Makefile, SEFER_CFLAGS):
/// gnu11, -O2 whatever the Rust profile (a debug build of the program still gets a fast
/// allocator), initial-exec TLS, no builtin knowledge of malloc, and no SLP vectorizer: it
/// merges the free fast path's two stores (a block's link and its free mark) through an SSE
/// register, three instructions more on every free.
fn compile(c: &Path) {
    let mut b = cc::Build::new();
    let no_slp = if b.get_compiler().is_like_clang() {
        "-fno-slp-vectorize"
    } else {
        "-fno-tree-slp-vectorize"
    };
    b.file(c)
        .define("SEFER_STATIC_ALL", None)
        .opt_level(2)
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag_if_supported("-fno-plt")
        .flag_if_supported("-ftls-model=initial-exec")
        .flag_if_supported("-fno-builtin-malloc")
        .flag_if_supported("-fno-builtin-free")
        .flag_if_supported("-fno-builtin-calloc")
        .flag_if_supported("-fno-builtin-realloc")
        .flag_if_supported(no_slp)
        .warnings(false);
    b.compile("sefer");
    // What the amalgamation's "Link with:" line says for the configurations this crate uses
    // (C11 sync, no NUMA policy): the threads library.
    println!("cargo:rustc-link-lib=pthread");
}

/// Generates the amalgamation of configs/vendor_defconfig with the tree's make, into OUT_DIR.
fn amalgamate_from_tree(srctree: &Path, out: &Path) -> PathBuf {
    let objtree = out.join("sefer-vendor");
    for dir in ["core", "backends", "policies", "include", "scripts", "configs"] {
        println!("cargo:rerun-if-changed={}", srctree.join(dir).display());
    }
    for file in ["Makefile", "Kconfig"] {
        println!("cargo:rerun-if-changed={}", srctree.join(file).display());
    }
    let make = env::var("MAKE").unwrap_or_else(|_| "make".to_string());
    for goal in ["vendor_defconfig", "amalgamation"] {
        let status = Command::new(&make)
            .arg("-s")
            .arg("-C")
            .arg(srctree)
            .arg(format!("O={}", objtree.display()))
            .arg(goal)
            // A make above cargo (make check-rust) must not pass its goals and variables down.
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .status()
            .unwrap_or_else(|e| panic!("sefer-sys: cannot run {}: {}", make, e));
        if !status.success() {
            panic!(
                "sefer-sys: `make O={} {}` failed in {}",
                objtree.display(),
                goal,
                srctree.display()
            );
        }
    }
    objtree.join("amalgamation")
}

fn link_system() {
    #[cfg(feature = "system")]
    {
        let lib = pkg_config::Config::new()
            .atleast_version("0.1")
            .probe("sefer")
            .unwrap_or_else(|e| panic!("sefer-sys: feature `system`: no libsefer found: {}", e));
        for dir in lib.include_paths {
            println!("cargo:include={}", dir.display());
        }
    }
}
