// SPDX-License-Identifier: MIT
//! One workload of the GlobalAlloc benchmark, under one allocator, outside criterion: for
//! perf and callgrind (bindings/rust/README.md, "Profiling a row").
//!
//!     alloc-profile ALLOCATOR WORKLOAD THREADS ITERS
//!
//! ALLOCATOR: sefer, mimalloc or system; WORKLOAD: bulk_<size>, steady_<size> or vec_grow.
//! Prints the time per iteration (each thread runs ITERS iterations).
use std::alloc::{GlobalAlloc, Layout, System};

use sefer::Sefer;
use sefer_bench::{churn_bulk, churn_steady, on_threads, vec_grow, Mimalloc, CHURN, WINDOW};

fn run<A: GlobalAlloc + Sync>(
    a: &A,
    workload: &str,
    threads: usize,
    iters: u64,
) -> std::time::Duration {
    let size =
        |w: &str| -> usize { w.rsplit('_').next().unwrap().trim_end_matches('B').parse().unwrap() };
    on_threads(threads, iters, |n| {
        if workload == "vec_grow" {
            for _ in 0..n {
                std::hint::black_box(vec_grow(a));
            }
        } else if workload.starts_with("bulk_") {
            let l = Layout::from_size_align(size(workload), 8).unwrap();
            let mut ptrs = vec![std::ptr::null_mut(); CHURN];
            for _ in 0..n {
                churn_bulk(a, l, &mut ptrs);
            }
        } else if workload.starts_with("steady_") {
            let l = Layout::from_size_align(size(workload), 8).unwrap();
            let mut w: Vec<*mut u8> = (0..WINDOW).map(|_| unsafe { a.alloc(l) }).collect();
            for _ in 0..n {
                churn_steady(a, l, &mut w);
            }
            for p in w {
                unsafe { a.dealloc(p, l) };
            }
        } else {
            panic!("unknown workload {}", workload);
        }
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: alloc-profile sefer|mimalloc|system WORKLOAD THREADS ITERS");
        std::process::exit(2);
    }
    let (threads, iters): (usize, u64) = (args[3].parse().unwrap(), args[4].parse().unwrap());
    let t = match args[1].as_str() {
        "sefer" => run(&Sefer, &args[2], threads, iters),
        "mimalloc" => run(&Mimalloc::load().unwrap(), &args[2], threads, iters),
        "system" => run(&System, &args[2], threads, iters),
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
