# SPDX-License-Identifier: MIT
"""The benchmark runner's results: summaries of the runs, the ratios to a peer (the median of
the paired ratios, Documentation/benchmarks.rst, "Reading the tables"), the targets against
mimalloc, and the files and summaries written from them (latest.md, latest.csv, and the README and
benchmarks.rst tables read back from a latest.csv). bench/run.py runs the benchmarks and calls
these; bench/plot.py draws latest.png from the same summaries.
"""
import csv
import math
import os
import platform
import statistics

# The allocators in the order of every table's columns (a second sefer build, --sefer-b,
# follows sefer; a peer named by --peer alone comes last).
ORDER = ["sefer", "glibc", "mimalloc", "mimalloc3", "snmalloc", "jemalloc", "tcmalloc"]

# The peers issue 44's targets compare against: the fastest of each row among them (and any
# other peer in the run) is "the best peer"; a target that needs one that is missing is not
# evaluated.
STRONG_PEERS = ("mimalloc", "mimalloc3", "snmalloc")

# Rows whose blocks are large objects (1 MiB and up): the headline geometric means leave them
# out, and latest.md reports them in a section of their own.
LARGE_BENCHES = ("large", "largewin")

# The noise band of a verdict: a row whose median paired ratio to the best peer lies within
# 1 +- NOISE_BAND reads "parity" whatever its interval. Derived from an A/A run and a test-retest
# pair, QUICK, 4 repetitions, on the 2-vCPU VM at load average 4-15 (other helpers' builds and
# benchmarks beside it, 2026-12-06; Documentation/benchmarks.rst, "Verdicts"):
# - A/A (sefer against a byte-identical copy of itself as a second column), 58 rows: with the
#   range of the paired ratios as the interval, a band of 0.15 left 4 throughput and time rows
#   a win or a loss, 0.20 three (xfer 64B-1to1 1.79, the 32 MiB loop 0.66 and 1.33); peak RSS
#   none at 0.05;
# - two consecutive make bench QUICK=1 runs, the verdicts of sefer against the best peer: 13 of
#   58 throughput and time rows differed at 0.15 and 8 at 0.20; peak RSS 12 at 0.05, 6 at 0.15,
#   1 at 0.20 (capped runs do less work when the machine is slow, and peak RSS follows).
NOISE_BAND = {"median": 0.20, "rss": 0.20}


def is_peer(name):
    """Every column but sefer's builds (sefer, and the --sefer-b ones named sefer-*)."""
    return not name.startswith("sefer")


def is_large(bench, param):
    return bench in LARGE_BENCHES or param.endswith("-1M") or param == "1..4M"  # vecgrow to 32 MiB


def fmt_rate(v):
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def fmt_rss(kb):
    """MiB, the unit every RSS column names: 0.1 MiB steps below 1 GiB, whole MiB from there."""
    if kb is None:
        return "?"
    return "%.1f" % (kb / 1024.0) if kb < 1024 * 1024 else "%.0f" % (kb / 1024.0)


def fmt_value(cfg, v):
    return fmt_rate(v) if cfg.section == "micro" else "%.3fs" % v


# ------------------------------------------------------------ reporting
def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarise(configs, allocs, runs):
    """runs: {(key, alloc): [Outcome]} -> {(key, alloc): dict}"""
    summ = {}
    for cfg in configs:
        for a in allocs:
            rs = runs.get((cfg.key, a.name), [])
            ok = [r for r in rs if r.err is None]
            errs = [r.err for r in rs if r.err is not None]
            if errs:
                summ[(cfg.key, a.name)] = {"err": errs[0]}
            elif ok:
                vals = [r.value for r in ok]
                rss = [r.rss_kb for r in ok if r.rss_kb is not None]
                summ[(cfg.key, a.name)] = {
                    "err": None, "median": statistics.median(vals),
                    "min": min(vals), "max": max(vals), "n": len(vals),
                    "rss": statistics.median(rss) if rss else None,
                    # per turn, in run order: what ratio() pairs
                    "turns": {"median": vals, "rss": [r.rss_kb for r in ok]},
                }
    return summ


def paired_ratios(summ, key, a, b, field="median"):
    """a/b for each run of a and the run of b in the same turn (the same repetition, the
    same run of it; run next to each other), skipping turns without a figure: the
    machine's drifts over the minutes between repetitions cancel out of these, not out of
    the ratio of two medians. [] when a run failed or the runs do not pair up (a summary
    read back from a CSV file written before it kept the runs)."""
    x, y = summ.get((key, a)), summ.get((key, b))
    if not x or not y or x["err"] or y["err"]:
        return []
    xs, ys = x.get("turns", {}).get(field), y.get("turns", {}).get(field)
    if not xs or not ys or len(xs) != len(ys):
        return []
    return [u / v for u, v in zip(xs, ys) if u and v]


def ratio(summ, key, a, b, field):
    """a's figure over b's: the median of the paired ratios, or the ratio of the two
    medians where the runs do not pair up."""
    x, y = summ.get((key, a)), summ.get((key, b))
    if not x or not y or x["err"] or y["err"] or not x.get(field) or not y.get(field):
        return None
    pr = paired_ratios(summ, key, a, b, field)
    return statistics.median(pr) if pr else x[field] / y[field]


def interval(pr):
    """The interval a verdict reads from a row's paired ratios: their range, min..max (with 4
    or 5 pairs the quartiles excluded 1.00 on 13 of 58 rows of an A/A run, the range on 8)."""
    return (min(pr), max(pr)) if pr else (None, None)


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def ok_cell(summ, key, name, field):
    s = summ.get((key, name))
    return s and not s["err"] and s.get(field) is not None


def best_name(summ, key, names, field, higher_better):
    """The allocator of names with the best median figure of the row, or None."""
    got = [(summ[(key, n)][field], n) for n in names if ok_cell(summ, key, n, field)]
    if not got:
        return None
    return (max if higher_better else min)(got, key=lambda x: x[0])[1]


def best_peer(summ, key, names, field, higher_better, who="sefer"):
    """(peer, who/peer) for the peer that who compares worst against (the lowest paired ratio
    for throughput, the highest for time and RSS): the best peer of the row; (None, None)."""
    got = [(ratio(summ, key, who, p, field), p) for p in names if is_peer(p)]
    got = [(x, p) for x, p in got if x is not None]
    if not got:
        return None, None
    x, p = (min if higher_better else max)(got)
    return p, x


def verdict(summ, key, a, b, field, higher_better):
    """a against b on one row: (word, median paired ratio a/b, interval low, interval high).
    "parity" when the interval of the paired ratios includes 1.0 or the median lies within
    the noise band; else "win" (a better) or "loss". (None, ...) without a ratio."""
    x = ratio(summ, key, a, b, field)
    if x is None:
        return None, None, None, None
    pr = paired_ratios(summ, key, a, b, field)
    lo, hi = interval(pr) if pr else (x, x)
    band = NOISE_BAND[field]
    if lo <= 1.0 <= hi or abs(x - 1.0) <= band:
        word = "parity"
    else:
        word = "win" if (x > 1.0) == higher_better else "loss"
    return word, x, lo, hi


def row_verdict(summ, key, names, field, higher_better):
    """sefer against the row's best peer: (word, peer, ratio, low, high) or None."""
    if "sefer" not in names:
        return None
    p, _ = best_peer(summ, key, names, field, higher_better)
    if p is None:
        return None
    word, x, lo, hi = verdict(summ, key, "sefer", p, field, higher_better)
    return (word, p, x, lo, hi) if word else None


def fmt_verdict(v):
    if not v:
        return "-"
    word, p, x, lo, hi = v
    return "%s %.2f (%.2f-%.2f) vs %s" % (word if word == "parity" else "**%s**" % word,
                                          x, lo, hi, p)


def md_table(title, note, configs, allocs, summ, field, fmt, higher_better):
    names = [a.name for a in allocs]
    refs = [r for r in ("mimalloc", "glibc") if r in names]
    lines = ["### " + title, "", note, ""]
    hdr = "| benchmark | " + " | ".join(names) + " | best | sefer vs best peer |"
    lines += [hdr, "|---|" + "---:|" * len(names) + ":---|---|"]
    gm = {(n, r): [] for n in names for r in refs}
    vs_best = []
    for cfg in configs:
        cells = []
        for n in names:
            s = summ.get((cfg.key, n))
            if not s:
                cells.append("—")
                continue
            if s["err"]:
                cells.append("FAIL: " + s["err"])
                continue
            if s.get(field) is None:
                cells.append("?")
                continue
            rs = []
            for r in refs:
                x = ratio(summ, cfg.key, n, r, field)
                if x is not None:
                    gm[(n, r)].append(x)
                rs.append("%.2f" % x if x is not None else "-")
            cells.append("%s (%s)" % (fmt(cfg, s[field]), " / ".join(rs)))
        v = row_verdict(summ, cfg.key, names, field, higher_better)
        if v:
            vs_best.append(v[2])
        cells.append(best_name(summ, cfg.key, names, field, higher_better) or "-")
        cells.append(fmt_verdict(v))
        lines.append("| %s | %s |" % (cfg.label(), " | ".join(cells)))
    cells = []
    for n in names:
        rs = []
        for r in refs:
            g = geomean(gm[(n, r)])
            rs.append("%.2f" % g if g else "-")
        cells.append("**(%s)**" % " / ".join(rs))
    g = geomean(vs_best)
    cells += ["", "sefer/best peer %.2f" % g if g else "-"]
    lines.append("| **geometric mean** | %s |" % " | ".join(cells))
    lines.append("")
    return lines


def verdict_counts(configs, names, summ):
    """{(table, word): rows} over the verdicts of latest.md's tables."""
    out = {}
    for cfg in configs:
        for field, hb in (("median", cfg.section == "micro"), ("rss", False)):
            v = row_verdict(summ, cfg.key, names, field, hb)
            if v:
                k = ("throughput" if field == "median" and hb else
                     "time" if field == "median" else "peak RSS", v[0])
                out[k] = out.get(k, 0) + 1
    return out


def headline_table(configs, allocs, summ):
    """Compact table for 'make run': figures and sefer's ratios."""
    names = [a.name for a in allocs]
    refs = [r for r in ("mimalloc", "glibc") if r in names and "sefer" in names]
    hdr = ["benchmark"] + names + ["sefer/%s" % r for r in refs]
    rows = []
    gm = {r: [] for r in refs}
    for c in configs:
        row = [c.label()]
        for n in names:
            s = summ.get((c.key, n))
            row.append("FAIL" if s and s["err"] else
                       fmt_rate(s["median"]) if s else "-")
        for r in refs:
            x = ratio(summ, c.key, "sefer", r, "median")
            if x:
                gm[r].append(x)
            row.append("%.2fx" % x if x else "-")
        rows.append(row)
    if refs:
        rows.append(["geometric mean"] + [""] * len(names) +
                    ["%.2fx" % geomean(gm[r]) if gm[r] else "-" for r in refs])
    widths = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
    out = []
    for k, r in enumerate([hdr] + rows):
        out.append("  ".join(str(v).ljust(widths[0]) if i == 0 else
                             str(v).rjust(widths[i]) for i, v in enumerate(r)))
        if k == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ targets
# Issue 44's bounds.
TARGET_ROW_FLOOR = 0.95          # every small-object row at 1, 2, 4 threads vs the best peer
TARGET_GEOMEAN = (("snmalloc", 1.05), ("mimalloc", 1.10))
TARGET_NEW_SHAPES = ("tgstress", "xfer")  # >= 1.00x the best peer
TARGET_LARGE_SIZES = ("4M", "16M", "32M")  # large loop: at most glibc's time
TARGET_SECOND_BUILD = 0.97       # default build >= 0.97x a second build (--sefer-b), every row


def small_rows(configs):
    return [c for c in configs if c.section == "micro" and not is_large(c.bench, c.param)]


def turn_geomeans(summ, rows, a, b, field):
    """The geometric mean over rows of a/b's paired ratio of each turn: one figure per
    repetition, whose range shows how far the geometric mean itself moves within a run ([]
    when a row's runs do not pair up)."""
    per_row = [paired_ratios(summ, c.key, a, b, field) for c in rows]
    if not per_row or any(not pr or len(pr) != len(per_row[0]) for pr in per_row):
        return []
    return [geomean([pr[i] for pr in per_row]) for i in range(len(per_row[0]))]


def evaluate_targets(configs, names, summ):
    """Issue 44's targets on this run: [(target, figure, status, [(row, field, ratio, peer,
    higher_better)] of the rows that miss)], status "PASS", "FAIL" or "not evaluated (why)".
    A target whose peers are not all in the run is not evaluated, never passed."""
    out = []
    small = small_rows(configs)
    peers = [n for n in names if is_peer(n)]

    def absent(need):
        gone = [p for p in need if p not in names]
        return "not evaluated (%s missing)" % ", ".join(gone) if gone else None

    def per_row(target, rows, bound, need, peer_of, field="median", hb=True):
        why = absent(need)
        if why or not rows:
            out.append((target, "-", why or "not evaluated (no such row in this run)", []))
            return
        got = []
        for c in rows:
            p, x = peer_of(c)
            if x is not None:
                got.append((c, field, x, p, hb))
        if not got:
            out.append((target, "-", "not evaluated (no ratio: failed runs)", []))
            return
        bad = [g for g in got if (g[2] < bound if hb else g[2] > bound)]
        worst = (min if hb else max)(got, key=lambda g: g[2])
        fig = "worst %s %.3f vs %s; %d of %d rows %s %.2f" % (
            worst[0].label(), worst[2], worst[3], len(bad), len(got),
            "below" if hb else "above", bound)
        out.append((target, fig, "FAIL" if bad else "PASS", bad))

    def vs_best(c):
        return best_peer(summ, c.key, names, "median", True)

    strong = list(STRONG_PEERS)
    per_row("every small-object row at 1, 2, 4 threads >= %.2fx the best peer's throughput"
            % TARGET_ROW_FLOOR, [c for c in small if c.threads in (1, 2, 4)],
            TARGET_ROW_FLOOR, strong, vs_best)
    for peer, bound in TARGET_GEOMEAN:
        target = "small-object throughput geometric mean >= %.2fx %s" % (bound, peer)
        why = absent([peer])
        g = None if why else geomean([ratio(summ, c.key, "sefer", peer, "median")
                                      for c in small])
        if why or g is None:
            out.append((target, "-", why or "not evaluated (no ratio)", []))
        else:
            reps = turn_geomeans(summ, small, "sefer", peer, "median")
            out.append((target, "%.3f over %d rows%s" % (
                g, len(small), "; by repetition %.3f-%.3f" % (min(reps), max(reps))
                if reps else ""), "PASS" if g >= bound else "FAIL", []))
    per_row("tgstress and xfer >= 1.00x the best peer's throughput",
            [c for c in small if c.bench in TARGET_NEW_SHAPES], 1.0, strong, vs_best)
    target = ("peak-RSS geometric mean of the small-object rows <= the leanest peer's "
              "(glibc included)")
    why = absent(strong + ["glibc"])
    gms = {} if why else {p: geomean([ratio(summ, c.key, "sefer", p, "rss") for c in small])
                          for p in peers}
    gms = {p: g for p, g in gms.items() if g}
    if why or not gms:
        out.append((target, "-", why or "not evaluated (no RSS figure)", []))
    else:
        lean = max(gms, key=gms.get)  # the peer sefer's RSS compares worst against
        out.append((target, "sefer/%s %.3f (the leanest peer; %s)" % (
            lean, gms[lean], ", ".join("/%s %.3f" % (p, g) for p, g in gms.items()
                                       if p != lean)),
                    "PASS" if gms[lean] <= 1.0 else "FAIL", []))
    builds = [n for n in names if n != "sefer" and not is_peer(n)]
    target = ("default build >= %.2fx a second build (no CONFIG_DEBUG_DOUBLE_FREE) on every "
              "row" % TARGET_SECOND_BUILD)
    if not builds:
        out.append((target, "-", "not evaluated (no second build: make bench without "
                    "SEFER_B=none and BENCH_ALLOC, or SEFER_B=sefer-nodf=PATH)", []))
    else:
        b = builds[0]
        per_row(target.replace("a second build", b), [c for c in configs
                                                       if c.section == "micro"],
                TARGET_SECOND_BUILD, [], lambda c: (b, ratio(summ, c.key, "sefer", b,
                                                              "median")))
    per_row("large loop at %s: time <= glibc's (throughput >= 1.00x)" % ", ".join(
        s.replace("M", " MiB") for s in TARGET_LARGE_SIZES),
            [c for c in configs if c.section == "micro" and c.bench == "large"
             and c.param in TARGET_LARGE_SIZES], 1.0, ["glibc"],
            lambda c: ("glibc", ratio(summ, c.key, "sefer", "glibc", "median")))
    return out


def targets_section(configs, names, summ):
    """latest.md's Targets: issue 44's, PASS/FAIL with the figure, and the rows that miss with
    the interval of their paired ratios."""
    if "sefer" not in names:
        return []
    results = evaluate_targets(configs, names, summ)
    lines = ["## Targets (issue 44)", "",
             "Judged on the median paired ratios of the tables (sefer / peer). The peers in "
             "this run: %s. Not judged by this run: the fast-path disassembly check (`make "
             "check-fastpath`) and the decommit guarantee (`make check-unit`'s decommit "
             "suite)." %
             (", ".join(n for n in names if is_peer(n)) or "none"), "",
             "| target | this run | status |", "|---|---|:---:|"]
    lines += ["| %s | %s | %s |" % (t, fig, st if st != "FAIL" else "**FAIL**")
              for t, fig, st, _ in results]
    lines.append("")
    misses = [m for _, _, _, bad in results for m in bad]
    if misses:
        lines += ["Rows that miss their target, with the interval of their paired ratios "
                  "(each run of sefer over the peer's run next to it: min-max, and the "
                  "quartiles) and the verdict of its table: where the interval "
                  "reaches the bound, the miss is within this machine's noise.", "",
                  "| row | against | ratio | paired ratios: min-max (quartiles) | verdict |",
                  "|---|---|---:|---:|---|"]
        seen = set()
        for c, field, x, p, hb in misses:
            if (c.key, p, field) in seen:
                continue
            seen.add((c.key, p, field))
            pr = paired_ratios(summ, c.key, "sefer", p, field)
            word = verdict(summ, c.key, "sefer", p, field, hb)[0]
            if pr:
                q1, q3 = quartiles(pr)
                spread = "%.3f-%.3f (%.2f-%.2f)" % (min(pr), max(pr), q1, q3)
            else:
                spread = "not paired"
            lines.append("| %s%s | %s | %.3f | %s | %s |" % (
                c.label(), " (RSS)" if field == "rss" else "", p, x, spread, word or "-"))
        lines.append("")
    return lines


def machine_info():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d CPUs, Linux %s%s" % (cpu or platform.machine(), os.cpu_count() or 0,
                                        platform.release(), thp_mode())


def thp_mode():
    """The kernel's transparent-huge-page mode, which moves every peak-RSS figure: in mode
    "always" a 2 MiB-aligned piece of an allocator's memory gets a huge page at its first touch
    (Documentation/decommit.rst, "Huge pages"). "" where the kernel has no THP."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            words = f.read().split()
    except OSError:
        return ""
    mode = next((w[1:-1] for w in words if w.startswith("[")), "?")
    return ", transparent huge pages: %s" % mode


def write_md(path, configs, allocs, missing, summ, meta):
    names = [a.name for a in allocs]
    micro = [c for c in configs if c.section == "micro"]
    small = small_rows(configs)
    large = [c for c in micro if c not in small]
    real = [c for c in configs if c.section == "real"]
    refs = " / ".join(r for r in ("mimalloc", "glibc") if r in names)
    lines = ["# sefer benchmark results", ""]
    lines += ["- %s: %s" % kv for kv in meta]
    lines.append("- allocators: " + ", ".join(
        "%s (%s)" % (a.name, a.version or "?") for a in allocs))
    for n, why in missing:
        lines.append("- **MISSING: %s** - %s" % (n, why))
    counts = verdict_counts(configs, names, summ)
    if counts:
        lines.append("- sefer against the best peer of each row: " + "; ".join(
            "%s %s" % (t, ", ".join("%d %s" % (counts[(t, w)], w)
                                    for w in ("win", "parity", "loss") if (t, w) in counts))
            for t in ("throughput", "time", "peak RSS")
            if any(k[0] == t for k in counts)))
    lines.append("")
    lines += targets_section(configs, names, summ)
    lines += ["## Tables", "",
              "Each cell: median over the repetitions, then in parentheses the ratio to %s: "
              "the median of the paired ratios, each run divided by the reference's run of "
              "the same turn (run next to it), so that the machine's drifts between "
              "repetitions cancel; it can differ from the ratio of the two medians. **best** "
              "names the allocator with the best median of the row. **sefer vs best peer**: "
              "the verdict, the median paired ratio sefer/peer, the interval of the paired "
              "ratios (min-max), and the peer that sefer compares "
              "worst against. The verdict is parity when that interval includes 1.00 or the "
              "ratio lies within 1 +- %.2f (throughput, time) or 1 +- %.2f (peak RSS), the "
              "noise band of Documentation/benchmarks.rst; else win or loss. The "
              "geometric-mean row is the geometric mean of the ratios over the rows of the "
              "table. Rows of 1 MiB blocks and up are apart, under Large blocks: they are in "
              "no headline geometric mean." % (refs, NOISE_BAND["median"], NOISE_BAND["rss"]),
              ""]
    def figure_and_rss(what, rows, figure, rss_note=""):
        """Two tables of rows: their figure (throughput, or the real programs' seconds) and
        their peak RSS."""
        micro_rows = rows[0].section == "micro"
        return md_table(
            "%s: %s" % (what, figure),
            "Ratio = this allocator / reference: %s 1.00 is faster." % (
                "above" if micro_rows else "below"),
            rows, allocs, summ, "median", fmt_value, micro_rows) + md_table(
            "%s: peak RSS (MiB, VmHWM of the process; lower is better)" % what,
            "Ratio = this allocator / reference: below 1.00 uses less memory." + rss_note,
            rows, allocs, summ, "rss", lambda c, v: fmt_rss(v), False)

    calls = "throughput (allocator calls per second; higher is better)"
    if small:
        lines += figure_and_rss("Small-object rows", small, calls)
    if real:
        lines += figure_and_rss("Real programs", real, "wall seconds (lower is better)",
                                " For redis it is the server's peak.")
    if large:
        lines += ["## Large blocks (1 MiB and up)", "",
                  "Apart from the headline: a cached block against an mmap/munmap pair "
                  "differs by orders of magnitude, which would swamp any geometric mean.", ""]
        lines += figure_and_rss("Large blocks", large, calls)
    text = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return text


def write_csv(path, configs, allocs, summ):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["section", "bench", "param", "threads", "pin", "allocator",
                    "metric", "median", "min", "max", "runs", "peak_rss_kb",
                    "ratio_mimalloc", "ratio_glibc", "rss_ratio_mimalloc",
                    "rss_ratio_glibc", "status", "turn_values", "turn_rss_kb"])
        for cfg in configs:
            metric = "ops_per_s" if cfg.section == "micro" else "seconds"
            for a in allocs:
                s = summ.get((cfg.key, a.name))
                if not s:
                    continue
                row = [cfg.section, cfg.bench, cfg.param, cfg.threads, cfg.pin,
                       a.name, metric]
                if s["err"]:
                    w.writerow(row + [""] * 9 + [s["err"]])
                    continue

                def r(ref, field):
                    x = ratio(summ, cfg.key, a.name, ref, field)
                    return "%.4f" % x if x is not None else ""
                w.writerow(row + ["%.6g" % s["median"], "%.6g" % s["min"],
                                  "%.6g" % s["max"], s["n"],
                                  "%d" % s["rss"] if s["rss"] else "",
                                  r("mimalloc", "median"), r("glibc", "median"),
                                  r("mimalloc", "rss"), r("glibc", "rss"), "ok",
                                  " ".join("%.6g" % v for v in s["turns"]["median"]),
                                  " ".join("%d" % v if v else "-"
                                           for v in s["turns"]["rss"])])


def csv_summary(r):
    """One latest.csv line -> the summarise() entry ratio() reads (the per-turn figures
    where the file has them; a file written before them pairs nothing)."""
    if r["status"] != "ok":
        return {"err": r["status"]}

    def turns(col, conv):
        return [None if v == "-" else conv(v) for v in (r.get(col) or "").split()]
    return {"err": None, "median": float(r["median"]),
            "rss": float(r["peak_rss_kb"]) if r["peak_rss_kb"] else None,
            "turns": {"median": turns("turn_values", float),
                      "rss": turns("turn_rss_kb", int)}}


def load_csv(path):
    """latest.csv -> (allocator names in ORDER, then the others in the order of the file; row
    keys in order; lookup)."""
    rows = list(csv.DictReader(open(path)))
    seen = list(dict.fromkeys(r["allocator"] for r in rows))
    names = [n for n in ORDER if n in seen]
    names[1:1] = [n for n in seen if n not in ORDER and not is_peer(n)]  # sefer's builds
    names += [n for n in seen if n not in names]
    keys = []
    for r in rows:
        k = (r["section"], r["bench"], r["param"], r["threads"], r["pin"])
        if k not in keys:
            keys.append(k)
    by = {(r["section"], r["bench"], r["param"], r["threads"], r["pin"],
           r["allocator"]): r for r in rows}
    return names, keys, by


class CsvRow:
    """A row of a latest.csv, with what the reports read of a bench/run.py Config."""

    def __init__(self, k):
        self.key = k
        self.section, self.bench, self.param = k[0], k[1], k[2]
        self.threads, self.pin = int(k[3]), int(k[4])

    def label(self):
        return key_label(self.key)


def load_summary(path):
    """latest.csv -> (names, [CsvRow], summ): what write_md reads, from the file."""
    names, keys, by = load_csv(path)
    summ = {(k, n): csv_summary(by[k + (n,)]) for k in keys for n in names if k + (n,) in by}
    return names, [CsvRow(k) for k in keys], summ


def verdicts(path):
    """A latest.csv's verdicts: {what: word}, what a row's "label: throughput|time|peak RSS"
    (sefer against the row's best peer) or "target: ..." (PASS, FAIL or not evaluated)."""
    names, rows, summ = load_summary(path)
    out = {}
    for c in rows:
        for field, hb, what in (("median", c.section == "micro",
                                 "throughput" if c.section == "micro" else "time"),
                                ("rss", False, "peak RSS")):
            v = row_verdict(summ, c.key, names, field, hb)
            if v:
                out["%s: %s" % (c.label(), what)] = v[0]
    for t, _, st, _ in evaluate_targets(rows, names, summ):
        out["target: " + t] = st
    return out


def compare_verdicts(a, b):
    """Print how two latest.csv files' verdicts differ; return (same, differing, only in
    one)."""
    va, vb = verdicts(a), verdicts(b)
    both = [k for k in va if k in vb]
    diff = [k for k in both if va[k] != vb[k]]
    lone = [k for k in va if k not in vb] + [k for k in vb if k not in va]
    for k in diff:
        print("differs: %s: %s / %s" % (k, va[k], vb[k]))
    for k in lone:
        print("in one run only: %s" % k)
    print("verdicts: %d the same, %d differ, %d in one run only" % (
        len(both) - len(diff), len(diff), len(lone)))
    return len(both) - len(diff), len(diff), len(lone)


def key_label(k):
    if k[0] == "real":
        return "%s %s" % (k[1], k[2])
    return "%s %s t=%s%s" % (k[1], k[2], k[3], " pin" if k[4] == "1" else "")


def summary_tables(path):
    """The tables of rst_summary/md_summary: [(title, rows)], rows[0] the
    header, from a latest.csv: small-object rows, real programs and large blocks apart."""
    names, rows, summ = load_summary(path)
    refs = [r for r in ("mimalloc", "glibc") if r in names and "sefer" in names]

    def cell(c, n, field):
        s = summ.get((c.key, n))
        if not s:
            return "-"
        if s["err"]:
            return "FAIL"
        if s.get(field) is None:
            return "?"
        if field == "rss":
            return fmt_rss(s[field])
        return fmt_rate(s[field]) if c.section == "micro" else "%.3fs" % s[field]

    def r_cell(c, ref, field):
        x = ratio(summ, c.key, "sefer", ref, field)
        return "%.2f" % x if x is not None else "-"

    small = small_rows(rows)
    large = [c for c in rows if c.section == "micro" and c not in small]
    real = [c for c in rows if c.section == "real"]
    hdr = ["benchmark"] + names + ["sefer/%s" % r for r in refs] + ["best", "sefer vs best"]
    out = []
    for title, rs, field, hb in (
            ("Throughput, small-object rows, allocator calls/s (higher is better)", small,
             "median", True),
            ("Real programs, wall seconds (lower is better)", real, "median", False),
            ("Peak RSS, small-object rows, MiB (lower is better)", small, "rss", False),
            ("Peak RSS, real programs, MiB (lower is better)", real, "rss", False),
            ("Large blocks, throughput, allocator calls/s (higher is better)", large,
             "median", True),
            ("Large blocks, peak RSS, MiB (lower is better)", large, "rss", False)):
        if not rs:
            continue
        table = [hdr]
        for c in rs:
            v = row_verdict(summ, c.key, names, field, hb)
            table.append([c.label()] + [cell(c, n, field) for n in names] +
                         [r_cell(c, r, field) for r in refs] +
                         [best_name(summ, c.key, names, field, hb) or "-",
                          "%s %.2f" % (v[0], v[2]) if v else "-"])
        gms = [geomean([ratio(summ, c.key, "sefer", r, field) for c in rs]) for r in refs]
        table.append(["geometric mean"] + [""] * len(names) +
                     ["%.2f" % g if g else "-" for g in gms] + ["", ""])
        out.append((title, table))
    return out


def rst_summary(path):
    """Print RST tables of sefer against the peers from a latest.csv, for
    the 'Current results' section of Documentation/benchmarks.rst."""
    for title, table in summary_tables(path):
        w = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        sep = "  ".join("=" * x for x in w)
        print(title)
        print("-" * len(title))
        print()
        print(sep)
        for i, r in enumerate(table):
            print("  ".join(v.ljust(w[j]) for j, v in enumerate(r)).rstrip())
            if i == 0:
                print(sep)
        print(sep)
        print()


def md_summary(path, full=False):
    """Print the headline of a latest.csv as Markdown, for the README: sefer's
    figure divided by each peer's, as geometric means over groups of rows
    (throughput: above 1.00 is better for sefer; time and RSS: below 1.00).
    With full, the per-row tables follow."""
    names, keys, by = load_csv(path)
    peers = [n for n in names if n != "sefer"]

    summ = {(k, r["allocator"]): csv_summary(r) for k in keys for r in
            [by.get(k + (n,)) for n in names] if r}

    def gm(ks, field, peer):
        g = geomean([ratio(summ, k, "sefer", peer, field) for k in ks])
        return ("%.2f" % g) if g else "-"

    micro = [k for k in keys if k[0] == "micro"]
    real = [k for k in keys if k[0] == "real"]
    small = [k for k in micro if not is_large(k[1], k[2])]
    large = [k for k in micro if is_large(k[1], k[2])]
    groups = [
        ("throughput, small-object rows (higher is better)", small, "median"),
        ("throughput, large-object rows", large, "median"),
        ("real programs, wall time (lower is better)", real, "median"),
        ("peak RSS, small-object rows (lower is better)", small, "rss"),
        ("peak RSS, large-object rows", large, "rss"),
        ("peak RSS, real programs", real, "rss"),
    ]
    print("| sefer / peer, geometric mean | " +
          " | ".join("/%s" % p for p in peers) + " |")
    print("|---|" + "---:|" * len(peers))
    for label, ks, field in groups:
        if ks:
            print("| %s (%d rows) | %s |" % (label, len(ks), " | ".join(
                gm(ks, field, p) for p in peers)))
    names_, rows, summ_ = load_summary(path)
    print()
    print("| target (issue 44) | this run | status |")
    print("|---|---|:---:|")
    for t, fig, st, _ in evaluate_targets(rows, names_, summ_):
        print("| %s | %s | %s |" % (t, fig, st))
    if not full:
        return
    for title, table in summary_tables(path):
        print()
        print("**%s**" % title)
        print()
        print("| " + " | ".join(table[0]) + " |")
        print("|---|" + "---:|" * (len(table[0]) - 1))
        for r in table[1:]:
            print("| " + " | ".join(r) + " |")
