#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a configuration change costs: two sefer builds, A and B, run interleaved on the
small-object rows of the QUICK bench (run.py's programs and budgets) and on tgstress and xfer.

  config_pair.py --bindir build/bench --a build/libsefer.so --b build-pair/libsefer.so
                 [--rounds 9] [--threads 1,2] [--only REGEX] [--csv FILE]

Normally run by 'make bench-config-pair CONFIG_B=SYM=val[,SYM=val...]' (Documentation/
benchmarks.rst), which builds B from the current configuration in its own O= directory.

Each round runs every row under A and under B, the order alternating from one round to the
next (ABBA), and pairs the two runs. A row's figure is the median of its paired time ratios
A/B (B's throughput over A's): above 1.00 A is slower. Its interval is the distribution-free
confidence interval of that median (two order statistics of the pairs, the narrowest pair of
them with a confidence of at least 95%: the 2nd and 8th of 9, the extremes of 7); a row whose
interval holds 1.00 is within the noise of this machine.
"""
import argparse
import csv
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the programs, budgets and the one-run helper)

# The small-object rows: every size class, one and several threads, no large blocks (vecgrow at
# 1..512 elements only: its 4M row is the full mode's). vecgrow and larson-rounds are the rows
# that read furthest below the 3% target in the QUICK run of 2026-12-05.
SMALL = ("bulk", "steady", "larson", "mstress", "randpos", "threadgen", "bignum", "bursts",
         "vecgrow", "larson-rounds")
# tgstress and xfer at the thread counts of issue 44's targets, with op budgets that take sefer
# 0.3-1 s on 2 CPUs (tgstress runs its whole budget: it has no time cap). argv after the
# program, then the budget in ops.
EXTRA = [
    ("tgstress", "50gen", 8, ["--gens", "50"], 1000000),
    ("xfer", "64B-1to1", 2, ["--ratio", "1:1", "--size", "64"], 16000000),
    ("xfer", "mixed-1to3", 4, ["--ratio", "1:3", "--size", "0"], 4000000),
    # frees of blocks whose lines have gone cold, not read first and read first (coldfree.c):
    # what a check that reads the freed block costs beyond its instructions
    ("coldfree", "64B", 1, ["--size", "64"], 60),
    ("coldfree", "64B-read", 1, ["--size", "64", "--read", "1"], 60),
]


def rows(bindir, threads, only):
    out = [c for c in run.micro_configs(bindir, threads, run.QUICK, False, None)
           if c.bench in SMALL and not c.pin]
    for bench, param, t, extra, ops in EXTRA:
        argv = [os.path.join(bindir, bench), "--threads", str(t), "--ops", str(ops),
                "--max-secs", "1", "--seed", "42"] + extra
        out.append(run.Config("micro", bench, param, t, 0, argv))
    return [c for c in out if not only or re.search(only, c.label())]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def median_interval(xs):
    """(lo, hi, confidence): the narrowest interval between order statistics x_(k) and
    x_(n-k+1) that holds the median with a confidence of at least 0.95 (the extremes when
    even they fall short, with their confidence)."""
    xs = sorted(xs)
    n = len(xs)

    def conf(k):  # P(x_(k) <= median <= x_(n-k+1)), k counted from 1
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= n // 2 and conf(k + 1) >= 0.95:
        k += 1
    return xs[k - 1], xs[n - k], conf(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--a", required=True, help="libsefer.so of build A")
    ap.add_argument("--b", required=True, help="libsefer.so of build B")
    ap.add_argument("--name-a", default="A")
    ap.add_argument("--name-b", default="B")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default=None, help="regex over row labels")
    ap.add_argument("--csv", default=None, help="every pair, one line each")
    args = ap.parse_args()

    builds = [run.Alloc(args.name_a, os.path.abspath(args.a), os.path.basename(args.a), "A"),
              run.Alloc(args.name_b, os.path.abspath(args.b), os.path.basename(args.b), "B")]
    for a in builds:
        if not os.path.exists(a.path):
            sys.exit("config_pair: %s not found" % a.path)
    cfgs = rows(args.bindir, run.parse_threads(args.threads), args.only)
    if not cfgs:
        sys.exit("config_pair: no row selected")
    # one-thread rows on one CPU, the fastest, as run.py does: the CPUs of a VM may differ
    # by 1.6x, and a pair split across them measures the CPUs (benchmarks.rst, "Method")
    if len(os.sched_getaffinity(0)) > 1:
        run.SINGLE_CPU = run.calibrate_cpus(args.bindir)[0]
    print("config_pair: one-thread rows on CPU %s" % run.SINGLE_CPU, flush=True)
    print("config_pair: %d rows x %d rounds, A=%s (%s), B=%s (%s)" % (
        len(cfgs), args.rounds, args.name_a, builds[0].path, args.name_b, builds[1].path),
        flush=True)
    pairs = {c.key: [] for c in cfgs}
    t0 = time.time()
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        for c in cfgs:
            got = {}
            for a in order:
                got[a.name] = run.run_micro(c, a, 60)
            oa, ob = got[args.name_a], got[args.name_b]
            if oa.err or ob.err:
                sys.exit("config_pair: %s: %s" % (c.label(), oa.err or ob.err))
            pairs[c.key].append((oa.value, ob.value))
        print("config_pair: round %d/%d done, %.0f s" % (r + 1, args.rounds,
                                                          time.time() - t0), flush=True)

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["row", "round", "ops_per_s_a", "ops_per_s_b", "time_ratio_a_over_b"])
            for c in cfgs:
                for i, (va, vb) in enumerate(pairs[c.key]):
                    w.writerow([c.label(), i + 1, "%.0f" % va, "%.0f" % vb, "%.4f" % (vb / va)])
    print()
    print("time %s / time %s, median of %d paired runs, [interval] (confidence):"
          % (args.name_a, args.name_b, args.rounds))
    print("%-32s %7s  %-17s %s" % ("row", "ratio", "interval", "verdict"))
    logs = []
    for c in cfgs:
        ratios = [vb / va for va, vb in pairs[c.key]]
        m = median(ratios)
        lo, hi, cf = median_interval(ratios)
        logs.append(math.log(m))
        verdict = "noise" if lo <= 1.0 <= hi else ("A slower" if lo > 1.0 else "A faster")
        print("%-32s %6.3fx  [%.3f, %.3f] (%2.0f%%) %s" % (c.label(), m, lo, hi, 100 * cf,
                                                          verdict))
    print("%-32s %6.3fx" % ("geometric mean of the medians", math.exp(sum(logs) / len(logs))))
    # the same cost seen per round: each round's geometric mean over the rows, a paired figure
    per_round = [math.exp(sum(math.log(pairs[c.key][r][1] / pairs[c.key][r][0]) for c in cfgs)
                          / len(cfgs)) for r in range(args.rounds)]
    lo, hi, cf = median_interval(per_round)
    print("%-32s %6.3fx  [%.3f, %.3f] (%2.0f%%)" % ("rounds' geometric means", median(per_round),
                                                   lo, hi, 100 * cf))
    return 0


if __name__ == "__main__":
    sys.exit(main())
