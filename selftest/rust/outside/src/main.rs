// SPDX-License-Identifier: MIT
//! A program outside the sefer tree with sefer as its global allocator, built from the
//! packaged crates alone (make check-rust): its blocks must be sefer's.
use std::collections::BTreeMap;

#[global_allocator]
static GLOBAL: sefer::Sefer = sefer::Sefer;

fn main() {
    let mut m: BTreeMap<u32, String> = BTreeMap::new();
    for i in 0..10_000u32 {
        m.insert(i, format!("value {}", i));
    }
    let foreign = sefer::owns(&m as *const _);
    assert!(!foreign, "a stack address taken for sefer's");
    assert!(m.values().all(|s| sefer::owns(s.as_ptr())), "a String is not sefer's");
    let big = vec![7u8; 16 << 20];
    assert!(sefer::owns(big.as_ptr()));
    println!("ok   outside program: {} Strings and a 16 MiB Vec from {}, {} segments mapped",
             m.len(), sefer::version(), sefer::stats().segments);
}
