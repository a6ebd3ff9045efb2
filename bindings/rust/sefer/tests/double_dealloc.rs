// SPDX-License-Identifier: MIT
//! A double `dealloc` through the crate.
//!
//! Rust's safety contract: `GlobalAlloc::dealloc` is `unsafe`, and calling it twice on a block
//! is undefined behaviour of the caller; safe Rust (Box, Vec, ...) never does it, so only
//! `unsafe` code can. The contract promises nothing about what happens then.
//!
//! What sefer adds (CONFIG_DEBUG_DOUBLE_FREE, on in the crate's configuration): the second
//! free of a block that was not reused in between is caught in O(1), reported on stderr as
//! "sefer: double free of 0x... (block is already free)", and the process aborts (SIGABRT)
//! before the free list is corrupted. This test runs the misuse in a child process (this same
//! test binary, asked through an environment variable) and checks both.

use std::alloc::{GlobalAlloc, Layout};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use sefer::Sefer;

const CHILD: &str = "SEFER_RS_DOUBLE_DEALLOC_CHILD";

/// The child's part: free a block twice. Runs only in the child.
#[test]
fn child_double_dealloc() {
    let size = match std::env::var(CHILD) {
        Ok(s) => s.parse::<usize>().unwrap(),
        Err(_) => return,
    };
    let l = Layout::from_size_align(size, 8).unwrap();
    unsafe {
        let keep = Sefer.alloc(l); // a neighbour, so that the page is not emptied
        let p = Sefer.alloc(l);
        eprintln!("child: block {:p}", p);
        Sefer.dealloc(p, l);
        Sefer.dealloc(p, l);
        Sefer.dealloc(keep, l);
    }
    eprintln!("child: still running after a double dealloc");
}

#[test]
fn double_dealloc_is_reported_and_aborts() {
    for size in [16, 1000, 5 << 20] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["child_double_dealloc", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, size.to_string())
            .env_remove("SEFER_ON_ERROR")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(6),
            "size {}: not killed by SIGABRT: {:?}\n{}",
            size,
            out.status,
            err
        );
        assert!(
            err.contains("sefer: double free of 0x"),
            "size {}: no sefer report:\n{}",
            size,
            err
        );
        assert!(!err.contains("still running"), "{}", err);
        let block =
            err.lines().find_map(|l| l.strip_prefix("child: block ")).expect("child's block");
        assert!(
            err.contains(&format!("double free of {}", block)),
            "the report names another block:\n{}",
            err
        );
    }
}
