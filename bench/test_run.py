#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The ratio rules of bench/report.py (the runner's results) on made-up runs: a ratio to a peer
is the median of the paired ratios (each run over the peer's run of the same turn), not the
ratio of two medians; latest.csv keeps the runs so that the summaries read back from it pair
the same way; a CSV written before it kept them falls back to the ratio of the medians; which
rows QUICK and the full mode run; RSS cells are in MiB; single-thread runs share one CPU; and
issue 44's rules: the best column, the parity verdict, a missing optional peer, the headline
geometric means without the large-block rows, the targets, two runs' verdicts compared. Run by
make check-bench-harness; prints one line, exits 1 on a mismatch."""
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

# Rows: every row runs once per repetition; QUICK has issue 44's rows (tgstress at four threads per
# CPU, xfer at 1:1 on 2 threads and 1:3 on 4, 64 B and mixed; the large loop at 4, 16, 32 MiB)
# and leaves the 64 MiB loop, largewin, bursts and the other full-only rows to the full mode.
for mode, name in ((run.QUICK, "QUICK"), (run.FULL, "full")):
    cs = run.micro_configs("/nonexistent", [1, 2, 4], mode, mode == run.FULL, None)
    labels = {c.label() for c in cs}
    for c in cs:
        if c.runs_per_rep != 1:
            failures.append("%s: %s runs %d times per repetition" % (name, c.label(),
                                                                     c.runs_per_rep))
    want = {"tgstress 50gen t=%d" % (4 * (os.cpu_count() or 1)), "xfer 64B-1to1 t=2",
            "xfer 64B-1to3 t=4", "xfer mixed-1to1 t=2", "xfer mixed-1to3 t=4",
            "large 4M t=1", "large 16M t=2", "large 32M t=4"}
    if not want <= labels:
        failures.append("%s lacks rows %s" % (name, sorted(want - labels)))
    full_only = {"large 64M t=1", "largewin 20x5..25M t=1", "bursts 100ms t=1"}
    if (mode == run.QUICK) == bool(full_only & labels):
        failures.append("%s: the full-only rows %s" % (name, sorted(full_only & labels)))
    # Time cap: the rows whose peak RSS grows with the steps run (UNCAPPED) run their whole
    # budget (--max-secs 0) under every allocator; every other row has the mode's cap.
    for c in cs:
        cap = c.argv[c.argv.index("--max-secs") + 1]
        want_cap = "0" if c.bench in run.UNCAPPED else run.MAX_SECS[mode]
        if cap != want_cap:
            failures.append("%s: %s runs with --max-secs %s, want %s"
                            % (name, c.label(), cap, want_cap))
    uncapped = {c.bench for c in cs if c.argv[c.argv.index("--max-secs") + 1] == "0"}
    for bench in ("mstress", "larson", "larson-rounds", "threadgen", "randpos"):
        if bench not in uncapped:
            failures.append("%s: %s runs under the time cap" % (name, bench))
    for bench in ("bulk", "steady", "bignum", "falseshare", "xfer"):
        if bench in uncapped:
            failures.append("%s: %s runs without the time cap" % (name, bench))

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

# ---- issue 44's rules on made-up runs: five allocators, four turns per row.
ALL5 = ("sefer", "glibc", "mimalloc", "mimalloc3", "snmalloc")


def made_up(rows, names=ALL5):
    """rows: [(Config, {alloc: (values per turn, rss KiB)})] -> (configs, allocs, summ)."""
    allocs = [run.Alloc(n, None, "", "") for n in names]
    runs_ = {}
    for c, by in rows:
        for n in names:
            if n in by:
                vals, rss = by[n]
                runs_[(c.key, n)] = outcomes(vals, [rss] * len(vals))
    cfgs = [c for c, _ in rows]
    return cfgs, allocs, report.summarise(cfgs, allocs, runs_)


def mc(bench, param, t):
    return run.Config("micro", bench, param, t, 0, [])


base = {"glibc": ([50] * 4, 2000), "mimalloc": ([90, 91, 89, 90], 3000),
        "mimalloc3": ([100] * 4, 4000)}
steady1 = mc("steady", "256live", 1)     # snmalloc fastest: a clear loss
bulk1 = mc("bulk", "16B", 1)             # median 1.43, but the pairs' interval holds 1.00: parity
bulk2 = mc("bulk", "16B", 2)             # every pair 1.02-1.04: excludes 1.00, inside the band
xfer2 = mc("xfer", "64B-1to1", 2)        # a clear win
large16 = mc("large", "16M", 1)          # 5000x glibc: in no headline mean
large4 = mc("large", "4M", 1)            # slower than glibc
rows = [
    (steady1, dict(base, sefer=([100, 102, 98, 101], 1000), snmalloc=([160, 159, 161, 160],
                                                                     1500))),
    (bulk1, dict(base, sefer=([100] * 4, 1000), snmalloc=([66, 69, 105, 71], 1500),
                 mimalloc=([50] * 4, 3000), mimalloc3=([50] * 4, 4000))),
    (bulk2, dict(base, sefer=([102, 103, 104, 103], 1000), snmalloc=([100] * 4, 1500))),
    (xfer2, dict(base, sefer=([150] * 4, 1000), snmalloc=([100] * 4, 1500))),
    (large16, dict(base, sefer=([5e6] * 4, 9000), snmalloc=([1e6] * 4, 9000),
                   glibc=([1e3] * 4, 9000))),
    (large4, dict(base, sefer=([600] * 4, 9000), snmalloc=([1e3] * 4, 9000),
                  glibc=([1e3] * 4, 9000))),
]
cfgs, allocs, summ = made_up(rows)
names = list(ALL5)
if report.best_name(summ, steady1.key, names, "median", True) != "snmalloc":
    failures.append("best of steady is %s, want snmalloc"
                    % report.best_name(summ, steady1.key, names, "median", True))
if report.best_name(summ, steady1.key, names, "rss", False) != "sefer":
    failures.append("leanest of steady is not sefer")
if max(report.NOISE_BAND.values()) >= 0.3:
    failures.append("the made-up rows below assume noise bands under 0.30")
for c, want in ((steady1, "loss"), (bulk1, "parity"), (bulk2, "parity"), (xfer2, "win"),
                (large4, "loss")):
    v = report.row_verdict(summ, c.key, names, "median", True)
    if not v or v[0] != want:
        failures.append("%s reads %s, want %s" % (c.label(), v, want))
if report.row_verdict(summ, bulk2.key, names, "median", True)[3] <= 1.0:
    failures.append("bulk 16B t=2's interval should lie above 1.00 (parity by the band only)")

with tempfile.TemporaryDirectory() as d:
    md = report.write_md(os.path.join(d, "latest.md"), cfgs, allocs,
                         [("snmalloc2", "made-up reason")], summ, [])
    sections = {sec.split("\n", 1)[0]: sec for sec in md.split("### ")[1:]}
    thr = next((v for k, v in sections.items() if k.startswith("Small-object rows: thr")), "")
    lrg = next((v for k, v in sections.items() if k.startswith("Large blocks: thr")), "")
    line = next((ln for ln in thr.splitlines() if ln.startswith("| steady 256live t=1 |")), "")
    if line.split(" | ")[-2:-1] != ["snmalloc"]:
        failures.append("the best column of steady reads %r" % line)
    if "large 16M" in thr or "large 16M t=1" not in lrg:
        failures.append("the large rows are not apart from the small-object table")
    gm_line = next((ln for ln in thr.splitlines() if "geometric mean" in ln), "")
    small = [c for c in cfgs if c.bench != "large"]
    want = report.geomean([report.ratio(summ, c.key, "sefer", "glibc", "median")
                           for c in small])
    if "/ %.2f)**" % want not in gm_line.split(" | ")[1]:
        failures.append("the headline geometric mean %r is not the small rows' %.2f"
                        % (gm_line.split(" | ")[1], want))
    if "MISSING: snmalloc2" not in md:
        failures.append("a missing peer is not named in latest.md")

    # Targets: all five allocators, then without snmalloc.
    res = report.evaluate_targets(cfgs, names, summ)

    def status(prefix):
        return next((st for t, _, st, _ in res if t.startswith(prefix)), None)
    g_sn = report.geomean([report.ratio(summ, c.key, "sefer", "snmalloc", "median")
                           for c in small])
    for prefix, want in (("every small-object row", "FAIL"),
                         ("small-object throughput geometric mean >= 1.05x snmalloc",
                          "PASS" if g_sn >= 1.05 else "FAIL"),
                         ("tgstress and xfer", "PASS"), ("peak-RSS geometric mean", "PASS"),
                         ("large loop", "FAIL")):
        if status(prefix) != want:
            failures.append("target %r: %s, want %s" % (prefix, status(prefix), want))
    turns = report.turn_geomeans(summ, small, "sefer", "snmalloc", "median")
    want = [report.geomean([summ[(c.key, "sefer")]["turns"]["median"][i] /
                            summ[(c.key, "snmalloc")]["turns"]["median"][i] for c in small])
            for i in range(4)]
    if len(turns) != 4 or any(abs(x - y) > 1e-9 for x, y in zip(turns, want)):
        failures.append("geometric means by repetition %s, want %s" % (turns, want))
    if not (status("default build") or "").startswith("not evaluated"):
        failures.append("the second-build target is evaluated without a second build")
    no_sn = [n for n in names if n != "snmalloc"]
    for t, fig, st, _ in report.evaluate_targets(cfgs, no_sn, summ):
        needs = "snmalloc" in t or "best peer" in t or "leanest" in t
        if needs and st != "not evaluated (snmalloc missing)":
            failures.append("without snmalloc, %r reads %s" % (t, st))

    # Two runs' verdicts: the same file twice, then with xfer's win gone.
    a_csv, b_csv = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
    report.write_csv(a_csv, cfgs, allocs, summ)
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        same = report.compare_verdicts(a_csv, a_csv)
    if same[1] or same[2] or not same[0]:
        failures.append("a run compared with itself: %s" % (same,))
    rows[3] = (xfer2, dict(base, sefer=([60] * 4, 1000), snmalloc=([100] * 4, 1500)))
    cfgs2, allocs2, summ2 = made_up(rows)
    report.write_csv(b_csv, cfgs2, allocs2, summ2)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        diff = report.compare_verdicts(a_csv, b_csv)
    if diff[1] < 2 or "xfer 64B-1to1 t=2: throughput: win / loss" not in out.getvalue() or \
            "target: tgstress and xfer >= 1.00x the best peer's throughput: PASS / FAIL" \
            not in out.getvalue():
        failures.append("xfer's flip (and its target) not reported: %s %r"
                        % (diff, out.getvalue()))

    # Optional peers: a file that is not there, one whose malloc is not its own, one that is.
    fake_bin = os.path.join(d, "bin")
    os.makedirs(fake_bin)
    open(os.path.join(fake_bin, "steady"), "w").close()
    shared = os.path.join(d, "peers")
    os.makedirs(shared)
    open(os.path.join(shared, "libmimalloc3.so"), "w").close()
    saved = run.SHARED_PEERS_DIR, run.spawn_wait
    run.SHARED_PEERS_DIR = shared
    owner = ["libc.so.6"]
    run.spawn_wait = lambda argv, env, timeout, **kw: (
        0, 0.01, "RESULT bench=steady malloc=%s\n" % owner[0], "")
    try:
        found, missing = run.discover(None, ["mimalloc3", "snmalloc"], fake_bin,
                                      {"snmalloc": os.path.join(d, "none", "libsn.so")})
        why = dict(missing)
        if found or "not found" not in why.get("snmalloc", "") or \
                "does not resolve" not in why.get("mimalloc3", ""):
            failures.append("optional peers: found %s, missing %s"
                            % ([a.name for a in found], missing))
        owner[0] = "libmimalloc3.so"
        found, missing = run.discover(None, ["mimalloc3"], fake_bin, {})
        if [a.name for a in found] != ["mimalloc3"] or missing:
            failures.append("a loading mimalloc3 is not found: %s" % missing)
    finally:
        run.SHARED_PEERS_DIR, run.spawn_wait = saved

if run.parse_peer_specs(["mi3=/a/libmimalloc3.so,sn=/b/libsnmalloc.so"]) != {
        "mimalloc3": "/a/libmimalloc3.so", "snmalloc": "/b/libsnmalloc.so"}:
    failures.append("PEERS=mi3=...,sn=... is not parsed into mimalloc3 and snmalloc")

# A sefer run that writes to stderr is refused (its environment changed what is measured:
# make once exported SEFER_B into every run, whose warning cost ~100 KiB of peak RSS); a
# peer's stderr is its own business, and a silent sefer run is taken.
saved = run.spawn_wait
try:
    said = {"err": ""}
    run.spawn_wait = lambda *a, **k: (0, 0.1, "RESULT ops_per_s=5.0 maxrss_kb=1700 "
                                      "malloc=%s\n" % said["owner"], said["err"])
    micro = run.Config("micro", "bulk", "16B", 1, 0, ["bulk"])
    for name, owner, err, refused in (
            ("sefer", "libsefer.so", "sefer: unknown option SEFER_B (sefer(7) lists them)\n",
             True),
            ("sefer-nodf", "libsefer.so", "sefer: unknown option SEFER_B\n", True),
            ("sefer", "libsefer.so", "", False),
            ("glibc", "libc.so.6", "sefer: unknown option SEFER_B\n", False)):
        said.update(owner=owner, err=err)
        got = run.run_micro(micro, run.Alloc(name, None, owner, ""), 10)
        if refused != bool(got.err) or (refused and "unknown option" not in got.err) or \
                (not refused and got.rss_kb != 1700):
            failures.append("%s run with stderr %r: err %r, rss %r" % (name, err, got.err,
                                                                       got.rss_kb))
finally:
    run.spawn_wait = saved

# A real program's peak RSS is bench/peakrss's line (spawn_wait reports none: wait4's figure was
# the runner's own peak when the program's is lower, and sqlite3 read 15.9 MiB under every
# allocator that way), and the line is not the program's stderr; a run without the line is
# refused.
saved = run.spawn_wait
try:
    said = {}
    run.spawn_wait = lambda *a, **k: (0, 0.1, "out\n", said["err"])
    real = run.Config("real", "sqlite3", "10k rows", 1, 0,
                      ["peakrss", "sqlite3"], kind="sqlite")
    for err, rss, refused in (("peakrss: maxrss_kb=9800\n", 9800, False),
                              ("sefer: unknown option SEFER_X\npeakrss: maxrss_kb=9800\n",
                               None, True),
                              ("", None, True)):
        said["err"] = err
        got = run.run_real(real, run.Alloc("sefer", None, "libsefer.so", ""), 10, {})
        if refused != bool(got.err) or got.rss_kb != rss:
            failures.append("real run with stderr %r: err %r, rss %r (want %r)" %
                            (err, got.err, got.rss_kb, rss))
finally:
    run.spawn_wait = saved

# latest.md's header names the SEFER_* variables the runs inherit.
saved = dict(os.environ)
try:
    for k in [k for k in os.environ if k.startswith("SEFER_")]:
        del os.environ[k]
    if run.sefer_environment() != "none (the defaults)":
        failures.append("no SEFER_* variable: header says %r" % run.sefer_environment())
    os.environ["SEFER_PURGE_DELAY_MS"] = "1000"
    if run.sefer_environment() != "SEFER_PURGE_DELAY_MS=1000":
        failures.append("SEFER_PURGE_DELAY_MS=1000: header says %r" % run.sefer_environment())
finally:
    os.environ.clear()
    os.environ.update(saved)

if failures:
    print("bench harness: %d failure(s)" % len(failures))
    for f in failures:
        print("  " + f)
    sys.exit(1)
print("bench harness: ratio, verdict, peer and target rules hold (paired median %.3f, ratio of medians %.3f)"
      % (paired, sorted(a)[2] / sorted(b)[2]))
