// SPDX-License-Identifier: MIT
//! One workload of the GlobalAlloc benchmark, under one allocator, outside criterion: for
//! perf and callgrind (bindings/rust/README.md, "Profiling a row").
//!
//!     alloc-profile ALLOCATOR WORKLOAD THREADS ITERS
//!
//! ALLOCATOR: sefer, mimalloc or system; WORKLOAD: a row's name (bulk_16B, steady_64B,
//! pairs_256B, vec_grow_512: sefer_bench::Workload).
//! Prints the time per iteration (each thread runs ITERS iterations).
use std::alloc::{GlobalAlloc, System};
use std::time::Duration;

use sefer::Sefer;
use sefer_bench::{on_threads, run, Mimalloc, Workload};

fn time<A: GlobalAlloc + Sync>(a: &A, w: Workload, threads: usize, iters: u64) -> Duration {
    on_threads(threads, iters, |n| run(a, w, n))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: alloc-profile sefer|mimalloc|system WORKLOAD THREADS ITERS");
        std::process::exit(2);
    }
    let (threads, iters): (usize, u64) = (args[3].parse().unwrap(), args[4].parse().unwrap());
    let w = Workload::parse(&args[2]).unwrap_or_else(|| panic!("unknown workload {}", args[2]));
    let t = match args[1].as_str() {
        "sefer" => time(&Sefer, w, threads, iters),
        "mimalloc" => time(&Mimalloc::load().unwrap(), w, threads, iters),
        "system" => time(&System, w, threads, iters),
        a => panic!("unknown allocator {}", a),
    };
    println!(
        "{} {} t={}: {:.1} ns/iteration",
        args[1],
        args[2],
        threads,
        t.as_nanos() as f64 / iters as f64
    );
}
