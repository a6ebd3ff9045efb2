#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The ratio rules of bench/report.py (the runner's results) on made-up runs: a ratio to a peer
is the median of the paired ratios (each run over the peer's run of the same turn), not the
ratio of two medians; latest.csv keeps the runs so that the summaries read back from it pair
the same way; a CSV written before it kept them falls back to the ratio of the medians; QUICK
runs the rows held to parity three times per repetition; RSS cells are in MiB; single-thread
runs share one CPU. Run by make check-bench-harness; prints one line, exits 1 on a mismatch."""
import csv
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import run  # noqa: E402

failures = []


def expect(what, got, want):
    if got is None or abs(got - want) > 1e-3:
        failures.append("%s: got %s, want %.4f" % (what, got, want))


def outcomes(values, rss):
    return [run.Outcome(value=v, rss_kb=r) for v, r in zip(values, rss)]


# One micro row, five turns. The machine runs at speed 1, 1, 1.5, 1.5, 1.5 (a drift):
# a is 5% ahead of b in every turn, but the two medians fall in different phases.
speed = [1.0, 1.0, 1.5, 1.5, 1.5]
a = [100 * 1.05 * s for s in speed]
b = [100 * s for s in speed]
b[2] = 98.0  # one slow run of b in the fast phase: b's median is 150, a's 157.5
cfg = run.Config("micro", "steady", "256live", 1, 0, [])
allocs = [run.Alloc(n, None, "", "") for n in ("sefer", "mimalloc")]
runs = {(cfg.key, "sefer"): outcomes(a, [1000, 1000, 1100, None, 1000]),
        (cfg.key, "mimalloc"): outcomes(b, [2000, 2000, 2200, 2000, 2000])}
summ = report.summarise([cfg], allocs, runs)
paired = sorted(x / y for x, y in zip(a, b))[2]
expect("throughput ratio is the paired median",
       report.ratio(summ, cfg.key, "sefer", "mimalloc", "median"), paired)
expect("the paired median here is a's lead", paired, 1.05)
expect("RSS ratio pairs the runs that have one",
       report.ratio(summ, cfg.key, "sefer", "mimalloc", "rss"), 0.5)
expect("a row against itself", report.ratio(summ, cfg.key, "sefer", "sefer", "median"), 1.0)

# A failed run: no ratio at all.
bad = dict(runs)
bad[(cfg.key, "mimalloc")] = outcomes(b, [1] * 5)[:4] + [run.Outcome(err="timeout")]
if report.ratio(report.summarise([cfg], allocs, bad), cfg.key, "sefer", "mimalloc",
                "median") is not None:
    failures.append("a row with a failed run still has a ratio")

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "latest.csv")
    report.write_csv(path, [cfg], allocs, summ)
    rows = {r["allocator"]: r for r in csv.DictReader(open(path))}
    expect("CSV ratio column", float(rows["sefer"]["ratio_mimalloc"]), paired)
    back = {(cfg.key, n): report.csv_summary(rows[n]) for n in rows}
    expect("ratio read back from the CSV",
           report.ratio(back, cfg.key, "sefer", "mimalloc", "median"), paired)
    expect("RSS ratio read back from the CSV",
           report.ratio(back, cfg.key, "sefer", "mimalloc", "rss"), 0.5)
    # a CSV from before the per-turn columns: the ratio of the medians
    for n in rows:
        del rows[n]["turn_values"], rows[n]["turn_rss_kb"]
    old = {(cfg.key, n): report.csv_summary(rows[n]) for n in rows}
    expect("an old CSV falls back to the ratio of the medians",
           report.ratio(old, cfg.key, "sefer", "mimalloc", "median"),
           sorted(a)[2] / sorted(b)[2])

# Run counts: QUICK runs the rows held to parity and bulk (and the real programs) 3 times per
# repetition, every other row once; the full mode runs each row once.
for mode, name in ((run.QUICK, "QUICK"), (run.FULL, "full")):
    for c in run.micro_configs("/nonexistent", [1, 2], mode, False, None):
        want = run.RERUNS_QUICK if mode == run.QUICK and c.bench in run.RERUN_ROWS else 1
        if c.runs_per_rep != want:
            failures.append("%s: %s runs %d times per repetition, want %d"
                            % (name, c.label(), c.runs_per_rep, want))
if set(run.RERUN_ROWS) != (set(report.NEW_WORKLOADS) - {"largewin"}) | {"bulk"}:
    failures.append("the rows run 3 times %s are not the new workloads but largewin, and bulk"
                    % (run.RERUN_ROWS,))

# Single-thread runs: the CPU with the best median calibration rate (not the best single run);
# one-thread micro rows and python3/sqlite3 on it, multi-thread rows anywhere (redis below).
if run.fastest_cpu({0: [90, 300, 95], 1: [120, 118, 60], 2: []}) != 1:
    failures.append("fastest_cpu did not pick the best median")
if run.fastest_cpu({0: [], 1: []}) is not None:
    failures.append("fastest_cpu picked a CPU without a calibration rate")
run.SINGLE_CPU = 1
for c, want in ((run.Config("micro", "steady", "256live", 1, 0, []), {1}),
                (run.Config("micro", "larson", "768slots", 1, 1, []), {1}),
                (run.Config("micro", "steady", "256live", 2, 0, []), None),
                (run.Config("real", "sqlite3", "10k rows", 1, 0, [], kind="sqlite"), {1}),
                (run.Config("real", "python3", "pywork x1", 1, 0, [], kind="python"), {1}),
                (run.Config("real", "redis", "20k req x7", 1, 0, [], kind="redis"), None)):
    if run.single_cpu_set(c) != want:
        failures.append("%s runs on %s, want %s" % (c.label(), run.single_cpu_set(c), want))
# redis: the server under test on the single-thread CPU, its client on the others (disjoint).
cpus = os.sched_getaffinity(0)
run.SINGLE_CPU = min(cpus)
server, client = run.redis_cpu_sets()
if len(cpus) > 1 and (server != {min(cpus)} or client != cpus - {min(cpus)}):
    failures.append("redis server on %s, client on %s; want %s and %s"
                    % (server, client, {min(cpus)}, cpus - {min(cpus)}))
if len(cpus) == 1 and (server, client) != (None, None):
    failures.append("redis pinned to %s and %s on a single CPU" % (server, client))
run.SINGLE_CPU = None
if run.single_cpu_set(run.Config("micro", "steady", "256live", 1, 0, [])) is not None:
    failures.append("--cpu none still pins")
if run.redis_cpu_sets() != (None, None):
    failures.append("--cpu none still pins redis")

# Peak RSS cells are MiB, the unit the column names, also past 1 GiB (largewin at 4 threads).
for kb, want in ((1843, "1.8"), (1048575, "1024.0"), (1352704, "1321"), (None, "?")):
    if report.fmt_rss(kb) != want:
        failures.append("fmt_rss(%s) is %r, want %r" % (kb, report.fmt_rss(kb), want))

if failures:
    print("bench harness: %d failure(s)" % len(failures))
    for f in failures:
        print("  " + f)
    sys.exit(1)
print("bench harness: ratio rules hold (paired median %.3f, ratio of medians %.3f)"
      % (paired, sorted(a)[2] / sorted(b)[2]))
