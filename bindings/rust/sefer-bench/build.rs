// SPDX-License-Identifier: MIT
//! Records the compiler's version for the benchmark's report (SEFER_BENCH_RUSTC).
fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let v = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into());
    println!("cargo:rustc-env=SEFER_BENCH_RUSTC={}", v);
}
