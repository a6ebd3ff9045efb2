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

# The allocators in the order of every table's columns.
ORDER = ["sefer", "glibc", "mimalloc", "jemalloc", "tcmalloc"]

# Rows whose blocks are large objects (1 MiB and up): the geometric means
# "without large" / "small-object rows" leave them out.
LARGE_BENCHES = ("large", "largewin")


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


def md_table(title, note, configs, allocs, summ, field, fmt, higher_better):
    names = [a.name for a in allocs]
    refs = [r for r in ("mimalloc", "glibc") if r in names]
    lines = ["### " + title, "", note, ""]
    hdr = "| benchmark | " + " | ".join(names) + " |"
    lines += [hdr, "|---|" + "---:|" * len(names)]
    gm = {(n, r): [] for n in names for r in refs}
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
        lines.append("| %s | %s |" % (cfg.label(), " | ".join(cells)))
    cells = []
    for n in names:
        rs = []
        for r in refs:
            g = geomean(gm[(n, r)])
            rs.append("%.2f" % g if g else "-")
        cells.append("**(%s)**" % " / ".join(rs))
    lines.append("| **geometric mean** | %s |" % " | ".join(cells))
    for label, rows in subset_means(configs, field):
        cells = []
        for n in names:
            rs = []
            for r in refs:
                g = geomean([ratio(summ, c.key, n, r, field) for c in rows])
                rs.append("%.2f" % g if g else "-")
            cells.append("(%s)" % " / ".join(rs))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    lines.append("")
    return lines


def subset_means(configs, field):
    """The extra geometric-mean rows of a table: [(label, configs)].

    Throughput: without the large-object rows (they differ by orders of
    magnitude). Peak RSS: the small-object micro rows, the target figure for
    memory, and the large-object rows on their own."""
    micro = [c for c in configs if c.section == "micro"]
    small = [c for c in micro if not is_large(c.bench, c.param)]
    large = [c for c in micro if is_large(c.bench, c.param)]
    out = []
    if field == "median" and small and large:
        out.append(("geometric mean without large", small))
    if field == "rss" and small and len(small) != len(configs):
        out.append(("geometric mean, small-object rows", small))
    if field == "rss" and large and len(large) != len(configs):
        out.append(("geometric mean, large-object rows", large))
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
# The new workloads the throughput targets hold to parity with mimalloc
# (Documentation/benchmarks.rst, "Reading the tables").
NEW_WORKLOADS = ("larson-rounds", "randpos", "threadgen", "bignum", "largewin")
# Rows added after the targets were set: in every table, in no throughput target (those name the
# rows that existed then and the five above), listed under the targets with their ratios.
LATER_WORKLOADS = ("bursts", "falseshare")


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def targets_section(configs, summ):
    """The targets, met or not, and each missing row with its paired ratios."""
    if not {"sefer", "mimalloc"} <= {n for _, n in summ}:
        return []
    micro = [c for c in configs if c.section == "micro"]
    real = [c for c in configs if c.section == "real"]
    small = [c for c in micro if not is_large(c.bench, c.param)]
    new = [c for c in micro if c.bench in NEW_WORKLOADS and c.threads <= 2]
    old = [c for c in small if c.bench not in NEW_WORKLOADS + LATER_WORKLOADS]
    later = [c for c in micro if c.bench in LATER_WORKLOADS]
    win = [c for c in micro if c.bench == "largewin"]

    rows, misses = [], []

    def measured(cs, field, bound, higher_better):
        """[(ratio, row)] of the rows of cs that have one, and those on the wrong side."""
        got = [(ratio(summ, c.key, "sefer", "mimalloc", field), c) for c in cs]
        got = [(x, c) for x, c in got if x is not None]
        bad = [(c, field, x, higher_better) for x, c in got
               if (x < bound if higher_better else x > bound)]
        return got, bad

    def each_row(name, cs, field, bound, higher_better):
        got, bad = measured(cs, field, bound, higher_better)
        if not got:
            return
        worst = (min if higher_better else max)(got, key=lambda x: x[0])
        rows.append((name, "worst: %s %.3f" % (worst[1].label(), worst[0]), not bad))
        misses.extend(bad)

    def mean_row(name, cs, field, bound, higher_better):
        got, bad = measured(cs, field, bound, higher_better)
        g = geomean([x for x, _ in got])
        if g is None:
            return
        ok = g >= bound if higher_better else g <= bound
        rows.append((name, "%.3f" % g, ok))
        if not ok:  # the rows on the wrong side of the bound
            misses.extend(bad)

    each_row("new workloads at 1 and 2 threads: throughput >= 1.00x", new, "median",
             1.0, True)
    each_row("the other small-object rows: throughput >= 0.90x", old, "median", 0.9, True)
    mean_row("small-object rows: peak-RSS geometric mean <= 0.90x", small, "rss", 0.9,
             False)
    each_row("largewin: peak RSS <= 1.00x", win, "rss", 1.0, False)
    mean_row("real programs: time geometric mean <= 1.00x", real, "median", 1.0, False)
    if not rows:
        return []
    lines = ["### Targets (sefer / mimalloc: throughput, peak RSS, real programs' time)", "",
             "| target | this run | met |", "|---|---:|:---:|"]
    lines += ["| %s | %s | %s |" % (n, fig, "yes" if ok else "**no**") for n, fig, ok in rows]
    lines.append("")
    if misses:
        lines += ["Rows that miss their target, with the spread of their paired ratios "
                  "(each run of sefer divided by the mimalloc run next to it; the "
                  "ratio is their median): when the quartiles straddle the target the "
                  "miss is within this machine's noise.", "",
                  "| row | ratio | paired ratios: quartiles (min-max) | sefer ahead |",
                  "|---|---:|---:|---:|"]
        for c, field, x, higher_better in misses:
            pr = paired_ratios(summ, c.key, "sefer", "mimalloc", field)
            ahead = sum(1 for v in pr if (v > 1.0 if higher_better else v < 1.0))
            if pr:
                q1, q3 = quartiles(pr)
                spread = "%.3f-%.3f (%.2f-%.2f)" % (q1, q3, min(pr), max(pr))
                won = "%d of %d" % (ahead, len(pr))
            else:
                spread, won = "not paired", "-"
            lines.append("| %s%s | %.3f | %s | %s |" % (
                c.label(), " (RSS)" if field == "rss" else "", x, spread, won))
        lines.append("")
    got = [(c, ratio(summ, c.key, "sefer", "mimalloc", "median")) for c in later]
    got = [(c, x) for c, x in got if x is not None]
    if got:
        lines += ["Rows added after these targets were set (in no throughput target; "
                  "Documentation/benchmarks.rst): " +
                  ", ".join("%s %.3f" % (c.label(), x) for c, x in got) + ".", ""]
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
    return "%s, %d CPUs, Linux %s" % (cpu or platform.machine(),
                                      os.cpu_count() or 0, platform.release())


def write_md(path, configs, allocs, missing, summ, meta):
    micro = [c for c in configs if c.section == "micro"]
    real = [c for c in configs if c.section == "real"]
    refs = " / ".join(r for r in ("mimalloc", "glibc") if r in [a.name for a in allocs])
    lines = ["# sefer benchmark results", ""]
    lines += ["- %s: %s" % kv for kv in meta]
    lines.append("- allocators: " + ", ".join(
        "%s (%s)" % (a.name, a.version or "?") for a in allocs))
    for n, why in missing:
        lines.append("- **missing: %s** - %s" % (n, why))
    lines.append("")
    lines.append("Each cell: median over the repetitions, then in parentheses "
                 "the ratio to %s: the median of the paired ratios, each run divided "
                 "by the reference's run of the same turn (run next to it), so that "
                 "the machine's drifts between repetitions cancel; it can differ from "
                 "the ratio of the two medians. The geometric-mean row is the geometric "
                 "mean of those ratios over the rows of the table." % refs)
    lines.append("")
    if micro:
        lines += md_table(
            "Throughput (allocator calls per second; higher is better)",
            "Ratio = this allocator / reference: above 1.00 is faster.",
            micro, allocs, summ, "median", fmt_value, True)
    if real:
        lines += md_table(
            "Real programs (wall seconds; lower is better)",
            "Ratio = this allocator / reference: below 1.00 is faster.",
            real, allocs, summ, "median", fmt_value, False)
    lines += md_table(
        "Peak RSS (MiB, VmHWM / ru_maxrss of the process; lower is better)",
        "Ratio = this allocator / reference: below 1.00 uses less memory. "
        "For redis it is the server's peak.",
        configs, allocs, summ, "rss", lambda c, v: fmt_rss(v), False)
    lines += targets_section(configs, summ)
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
    """latest.csv -> (allocator names in ORDER, row keys in order, lookup)."""
    rows = list(csv.DictReader(open(path)))
    names = [n for n in ORDER if any(r["allocator"] == n for r in rows)]
    keys = []
    for r in rows:
        k = (r["section"], r["bench"], r["param"], r["threads"], r["pin"])
        if k not in keys:
            keys.append(k)
    by = {(r["section"], r["bench"], r["param"], r["threads"], r["pin"],
           r["allocator"]): r for r in rows}
    return names, keys, by


def key_label(k):
    if k[0] == "real":
        return "%s %s" % (k[1], k[2])
    return "%s %s t=%s%s" % (k[1], k[2], k[3], " pin" if k[4] == "1" else "")


def summary_tables(path):
    """The tables of rst_summary/md_summary: [(title, rows)], rows[0] the
    header, from a latest.csv."""
    names, keys, by = load_csv(path)

    def cell(k, n, field):
        r = by.get(k + (n,))
        if not r:
            return "-"
        if r["status"] != "ok":
            return "FAIL"
        v = float(r[field]) if r[field] else None
        if v is None:
            return "?"
        if field == "peak_rss_kb":
            return fmt_rss(v)
        return fmt_rate(v) if k[0] == "micro" else "%.3fs" % v

    def ratio_cell(k, field):
        r = by.get(k + ("sefer",))
        return ("%.2f" % float(r[field])) if r and r.get(field) else "-"

    def gm_cells(ks, rf):
        return ["%.2f" % g if g else "-" for g in
                (geomean([float(ratio_cell(k, f)) for k in ks
                          if ratio_cell(k, f) != "-"]) for f in rf)]

    hdr = ["benchmark"] + names + ["sefer/mimalloc", "sefer/glibc"]
    out = []
    for title, sect, field, rf in (
            ("Throughput, allocator calls/s (higher is better)", "micro",
             "median", ("ratio_mimalloc", "ratio_glibc")),
            ("Real programs, wall seconds (lower is better)", "real",
             "median", ("ratio_mimalloc", "ratio_glibc")),
            ("Peak RSS, MiB (lower is better)", None, "peak_rss_kb",
             ("rss_ratio_mimalloc", "rss_ratio_glibc"))):
        ks = [k for k in keys if sect is None or k[0] == sect]
        if not ks:
            continue
        table = [hdr]
        for k in ks:
            table.append([key_label(k)] + [cell(k, n, field) for n in names] +
                         [ratio_cell(k, rf[0]), ratio_cell(k, rf[1])])
        table.append(["geometric mean"] + [""] * len(names) + gm_cells(ks, rf))
        small = [k for k in ks if k[0] == "micro" and not is_large(k[1], k[2])]
        large = [k for k in ks if k[0] == "micro" and is_large(k[1], k[2])]
        if field == "median" and small and large:
            table.append(["geometric mean without large"] + [""] * len(names) +
                         gm_cells(small, rf))
        if field == "peak_rss_kb" and small and len(small) != len(ks):
            table.append(["geometric mean, small-object rows"] + [""] * len(names) +
                         gm_cells(small, rf))
        if field == "peak_rss_kb" and large and len(large) != len(ks):
            table.append(["geometric mean, large-object rows"] + [""] * len(names) +
                         gm_cells(large, rf))
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
        ("throughput, all micro rows (higher is better)", micro, "median"),
        ("throughput, small-object rows", small, "median"),
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
