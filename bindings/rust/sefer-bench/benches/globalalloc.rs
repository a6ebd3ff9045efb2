// SPDX-License-Identifier: MIT
//! The GlobalAlloc benchmark (make bench-rust): sefer, mimalloc and the system allocator
//! (glibc), each driven through its `GlobalAlloc` methods from the same generic workloads
//! (sefer_bench), at 1 thread and at 4. Criterion's quick profile by default (sample size 10,
//! 150 ms warm-up, 600 ms measurement); SEFER_BENCH_FULL=1 keeps criterion's defaults.
//! SEFER_BENCH_META=file: where to write the allocators' versions for the report.
//! bench/rust_report.py turns criterion's estimates into bench/results/rust-latest.md.

use std::alloc::System;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use sefer::Sefer;
use sefer_bench::{on_threads, run, Mimalloc, Workload};

/// Every row, each with its three allocators back to back (one criterion group per row:
/// `t<threads>/<row>/<allocator>` in criterion's ids).
fn rows(c: &mut Criterion, mi: &Mimalloc) {
    for threads in [1usize, 4] {
        for w in Workload::all() {
            row(
                c,
                &format!("t{}/{}", threads, w.name()),
                threads,
                |n| run(&Sefer, w, n),
                |n| run(mi, w, n),
                |n| run(&System, w, n),
            );
        }
    }
}

fn row<S, M, Y>(c: &mut Criterion, name: &str, threads: usize, sefer: S, mimalloc: M, system: Y)
where
    S: Fn(u64) + Sync,
    M: Fn(u64) + Sync,
    Y: Fn(u64) + Sync,
{
    let mut g = c.benchmark_group(name);
    one(&mut g, "sefer", threads, sefer);
    one(&mut g, "mimalloc", threads, mimalloc);
    one(&mut g, "system", threads, system);
    g.finish();
}

/// One allocator's run of a row: `iters` runs of the workload on this thread, or on each of
/// `threads` threads at once.
fn one<F: Fn(u64) + Sync>(g: &mut BenchmarkGroup<WallTime>, name: &str, threads: usize, work: F) {
    g.bench_function(name, |b| {
        b.iter_custom(|n| {
            if threads == 1 {
                let t0 = Instant::now();
                work(n);
                t0.elapsed()
            } else {
                on_threads(threads, n, &work)
            }
        })
    });
}

fn main() {
    let libc = sefer_bench::system_malloc_file();
    assert!(libc.contains("libc.so"), "System's malloc is not the C library's: {}", libc);
    let mi = Mimalloc::load()
        .unwrap_or_else(|e| panic!("mimalloc: {} (apt-get install libmimalloc2.0)", e));
    let allocators = format!(
        "{} (sefer-sys), mimalloc {} (libmimalloc.so.2, RTLD_LOCAL), System (malloc of {})",
        sefer::version(),
        mi.version(),
        libc
    );
    println!("allocators: {}", allocators);
    // What bench/rust_report.py puts in the table's header.
    if let Some(path) = std::env::var_os("SEFER_BENCH_META") {
        let rustc = option_env!("SEFER_BENCH_RUSTC").unwrap_or("?");
        std::fs::write(path, format!("allocators: {}\nrustc: {}\n", allocators, rustc)).unwrap();
    }
    // No plots: the table is the output (and plotting takes longer than measuring).
    let mut c = Criterion::default().without_plots();
    if std::env::var_os("SEFER_BENCH_FULL").is_none_or(|v| v != "1") {
        // The quick profile. Fewer bootstrap resamples than criterion's 100000: they only
        // make the confidence intervals, not the medians the report reads, and took longer
        // than the measurements.
        c = c
            .sample_size(10)
            .warm_up_time(Duration::from_millis(150))
            .measurement_time(Duration::from_millis(600))
            .nresamples(10_000);
    }
    let mut c = c.configure_from_args();
    rows(&mut c, &mi);
    c.final_summary();
}
