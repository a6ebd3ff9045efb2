#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write bench/results/rust-latest.md from the GlobalAlloc benchmark's criterion estimates
(make bench-rust; bindings/rust/sefer-bench).

    rust_report.py --criterion DIR --meta FILE --out FILE [--profile TEXT]

DIR is criterion's output (target/criterion): DIR/<row>/<allocator>/new/estimates.json, the
row named t<threads>_<workload>. FILE (--meta) holds the lines the benchmark binary wrote:
`key: value` (allocators, rustc). Each cell is criterion's median of one iteration, with the
speed-up against mimalloc and against System in parentheses (the reference's median divided
by this one: above 1.00 is faster). The last column says whether sefer meets the Rust face's
target: at least as fast as the faster of mimalloc and System in the row.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import machine_info  # noqa: E402

ALLOCS = ("sefer", "mimalloc", "system")
WORKLOADS = (["bulk_%dB" % s for s in (16, 64, 256, 1024)] +
             ["steady_%dB" % s for s in (16, 64, 256, 1024)] +
             ["pairs_%dB" % s for s in (16, 64, 256, 1024)] + ["vec_grow_512"])
LABELS = {
    "bulk": "churn bulk %s (1024 alloc, then 1024 dealloc)",
    "steady": "churn steady %s (1024 dealloc+alloc, 64 live)",
    "pairs": "churn pairs %s (1024 dealloc+alloc, 1 live)",
}


def label(workload):
    if workload == "vec_grow_512":
        return "Vec<i64> push to 512 (realloc doubling)"
    kind, size = workload.split("_")
    return LABELS[kind] % size


def fmt_ns(ns):
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.2f µs" % (ns / 1e3)
    return "%.1f ns" % ns


def median_ns(root, row, alloc):
    path = os.path.join(root, row, alloc, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def git_describe(srctree):
    try:
        return subprocess.run(["git", "-C", srctree, "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--criterion", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--load-start", default="?", help="the 1-minute load average at the start")
    args = ap.parse_args()

    meta = {}
    with open(args.meta) as f:
        for line in f:
            k, _, v = line.partition(":")
            meta[k.strip()] = v.strip()

    lines = []
    misses = []
    for threads in (1, 4):
        for w in WORKLOADS:
            row = "t%d_%s" % (threads, w)
            t = {a: median_ns(args.criterion, row, a) for a in ALLOCS}
            cells = []
            for a in ALLOCS:
                cells.append("%s (%.2f / %.2f)" % (fmt_ns(t[a]), t["mimalloc"] / t[a],
                                                   t["system"] / t[a]))
            best = min(("mimalloc", "system"), key=lambda a: t[a])
            if t["sefer"] <= t[best]:
                verdict = "yes"
            else:
                verdict = "**no**: %.1f%% slower than %s" % ((t["sefer"] / t[best] - 1) * 100,
                                                            best)
                misses.append("%s t=%d" % (label(w), threads))
            lines.append("| %s | %d | %s | %s |" % (label(w), threads, " | ".join(cells), verdict))

    srctree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = """# sefer GlobalAlloc benchmark (make bench-rust)

- date: %s
- machine: %s
- profile: %s; run time %s s
- load average: %s at start, %s at end (anything else running on the machine skews the
  figures)
- sefer: %s, amalgamation of configs/vendor_defconfig built by the sefer-sys crate
- allocators: %s
- compiler: %s

Each allocator is called through its `GlobalAlloc` methods from the same generic code
(bindings/rust/sefer-bench), none of them the binary's global allocator; every pointer goes
through `black_box`. mimalloc is Debian's libmimalloc.so.2 opened with `RTLD_LOCAL` (so that
it does not replace `malloc` for `System`), called like the mimalloc crate calls it. At 4
threads each of the 4 threads runs the workload; the time is from their common start to the
last one's end (this machine has %d CPUs).

Each cell: criterion's median time of one iteration; in parentheses the speed-up against
mimalloc / against System (their median divided by this one: above 1.00 is faster). Target
(the Rust face's): sefer at least as fast as the faster of mimalloc and System in every row.

| workload | threads | sefer | mimalloc | System (glibc) | sefer meets the target |
|---|---:|---:|---:|---:|---|
%s
""" % (now, machine_info(), args.profile, args.seconds, args.load_start,
       "%.2f" % os.getloadavg()[0], git_describe(srctree),
       meta.get("allocators", "?"), meta.get("rustc", "?"), os.cpu_count() or 0,
       "\n".join(lines))
    if misses:
        out += "\nRows where sefer is slower: %s.\n" % "; ".join(misses)
    else:
        out += "\nsefer meets the target in every row of this run.\n"
    with open(args.out, "w") as f:
        f.write(out)
    print(out)


if __name__ == "__main__":
    main()
