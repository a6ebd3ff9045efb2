# SPDX-License-Identifier: MIT
"""latest.png: one panel per workload (throughput against threads), peak-RSS and real-program
bars against mimalloc, and a legend, from the summaries bench/report.py makes (bench/run.py
calls write_png after a run, and to redraw the plot from a latest.csv).
"""
import sys

from report import ratio

COLORS = {"sefer": "#d62728", "glibc": "#7f7f7f", "mimalloc": "#1f77b4",
          "mimalloc3": "#17becf", "snmalloc": "#9467bd", "jemalloc": "#2ca02c",
          "tcmalloc": "#ff7f0e"}
SECOND_BUILD_COLOR = "#8c564b"  # a --sefer-b build


def color(name):
    return COLORS.get(name) or (SECOND_BUILD_COLOR if name.startswith("sefer") else None)


def ratio_ticks(lo, hi):
    """A few round ticks for a log-scale ratio axis covering [lo, hi]."""
    cands = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200,
             500, 1000, 2000, 5000, 10000]
    if hi / lo < 8:
        cands = sorted(cands + [0.25, 0.3, 0.4, 0.7, 1.5, 3, 4])
    ticks = [t for t in cands if lo <= t <= hi]
    if 1 not in ticks:
        ticks = sorted(ticks + [1])
    while len(ticks) > 7:
        ticks = ticks[::2] if 1 in ticks[::2] else ticks[1::2]
    return ticks


def write_png(path, configs, allocs, summ, title):
    """One picture that says who wins each row without the tables:

    - a legend for the whole figure under the title (allocator -> colour,
      solid/dashed for unpinned/pinned);
    - one panel per workload, throughput against thread count, with sefer's
      ratio to mimalloc at each thread count under the title;
    - peak RSS relative to mimalloc at 1 thread and at the most threads, and
      the real programs' time and RSS, as horizontal bars (one line per row,
      so the labels never overlap), sefer's figure written beside its bar."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    except ImportError:
        print("bench: matplotlib missing (Debian package python3-matplotlib); "
              "no plot written", file=sys.stderr)
        return False
    plain = FuncFormatter(lambda v, _: "%g" % v)
    names = [a.name for a in allocs]
    ref = "mimalloc" if "mimalloc" in names else names[0]
    micro = [c for c in configs if c.section == "micro"]
    real = [c for c in configs if c.section == "real"]
    panels = []
    for c in micro:
        k = (c.bench, c.param)
        if k not in panels:
            panels.append(k)

    # Horizontal-bar panels: (title, xlabel, [(row label, key, field, hatch)]).
    hpanels = []
    if micro:
        tmax = max(c.threads for c in micro)
        rows1, rowsn = [], []
        for bench, param in panels:
            cand = [c for c in micro if (c.bench, c.param) == (bench, param)
                    and not c.pin]
            one = [c for c in cand if c.threads == 1]
            if one:
                rows1.append(("%s %s" % (bench, param), one[0].key, "rss", None))
            if cand:
                c = max(cand, key=lambda c: c.threads)
                rowsn.append(("%s %s t=%d" % (bench, param, c.threads), c.key,
                              "rss", None))
        xl = "peak RSS / %s's (log scale; %s is the line at 1;\nlower is better)" % (
            ref, ref)
        hpanels.append(("peak RSS at 1 thread", xl, rows1))
        hpanels.append(("peak RSS at each workload's most threads (up to t=%d)" % tmax, xl,
                        rowsn))
    if real:
        rows = [("%s: time" % c.bench, c.key, "median", None) for c in real]
        rows += [("%s: peak RSS" % c.bench, c.key, "rss", "//") for c in real]
        hpanels.append(("real programs", "ratio to %s (log scale;\nlower is "
                        "better)" % ref, rows))

    # Layout in inches: header (title, legend), the grid of throughput
    # panels, a gap, the bar panels, a footer for their axis labels.
    ncols = 4
    nrows = (len(panels) + ncols - 1) // ncols
    head, grid_h, gap, foot = 1.55, 3.1 * nrows, 1.0 if panels else 0.0, 0.8
    bar_h = 0.075 * len(names) + 0.07       # inches per row of bars
    hrows = max([len(r) for _, _, r in hpanels] + [0])
    bars_h = bar_h * hrows + 0.35 if hpanels else 0.0
    fig_w = 4.3 * ncols
    fig_h = head + grid_h + gap + bars_h + foot
    fig = plt.figure(figsize=(fig_w, fig_h))
    if panels:
        top = fig.add_gridspec(nrows, ncols, left=0.045, right=0.99,
                               top=1 - head / fig_h,
                               bottom=(foot + bars_h + gap) / fig_h,
                               hspace=0.55, wspace=0.28)
    # Bar panels side by side, each with room for its row labels on the left.
    label_w, right_pad = 2.0, 0.45
    weights = [0.7 if t == "real programs" else 1.0 for t, _, _ in hpanels]
    free_w = fig_w - 0.2 - len(hpanels) * (label_w + right_pad)
    hx = 0.2

    for i, (bench, param) in enumerate(panels):
        ax = fig.add_subplot(top[i // ncols, i % ncols])
        best = max([summ[(c.key, a)]["median"] for c in micro for a in names
                    if (c.bench, c.param) == (bench, param)
                    and not summ.get((c.key, a), {"err": 1})["err"]] or [0])
        unit, uname = (1e6, "M") if best >= 1e6 else (1e3, "k") if best >= 1e3 else (1, "")
        for a in allocs:
            for pin in (0, 1):
                pts = []
                for c in micro:
                    if (c.bench, c.param, c.pin) != (bench, param, pin):
                        continue
                    s = summ.get((c.key, a.name))
                    if s and not s["err"]:
                        pts.append((c.threads, s["median"] / unit))
                if not pts:
                    continue
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        marker="o" if not pin else "x", markersize=4,
                        linestyle="-" if not pin else "--",
                        color=color(a.name),
                        linewidth=2.2 if a.name == "sefer" else 1.2,
                        zorder=3 if a.name == "sefer" else 2)
        ts = sorted({c.threads for c in micro if (c.bench, c.param) == (bench, param)})
        ax.set_xscale("log", base=2)
        ax.set_xticks(ts)
        ax.set_xticklabels([str(t) for t in ts])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("threads", fontsize=8, labelpad=1)
        ax.set_ylabel("%s calls/s" % uname, fontsize=8)
        ttl = "%s %s" % (bench, param)
        ys = [y for line in ax.get_lines() for y in line.get_ydata()]
        if ys and min(ys) > 0 and max(ys) / min(ys) > 20:
            ax.set_yscale("log")
            ttl += " (log)"
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_ylim(bottom=0)
        rs = []
        if "sefer" in names and ref != "sefer":
            for t in ts:
                c = [c for c in micro if (c.bench, c.param, c.threads, c.pin)
                     == (bench, param, t, 0)]
                x = ratio(summ, c[0].key, "sefer", ref, "median") if c else None
                rs.append("%.2f" % x if x else "-")
        ax.set_title(ttl, fontsize=10, pad=13 if rs else 4)
        if rs:
            ax.text(0.5, 1.015, "sefer/%s at t=%s: %s" % (
                        ref, ",".join(map(str, ts)), "  ".join(rs)),
                    transform=ax.transAxes, ha="center", va="bottom",
                    fontsize=7.5, color=COLORS["sefer"])
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)

    for j, (ttl, xlabel, rows) in enumerate(hpanels):
        w = free_w * weights[j] / sum(weights)
        hx += label_w
        # Each panel is as tall as its rows need, top-aligned.
        ph = bar_h * len(rows)
        ax = fig.add_axes([hx / fig_w, (foot + bars_h - 0.35 - ph) / fig_h,
                           w / fig_w, ph / fig_h])
        hx += w + right_pad
        n = len(names)
        h = 0.8 / n
        vals = []
        for r, (lab, key, field, hatch) in enumerate(rows):
            for i, a in enumerate(names):
                x = ratio(summ, key, a, ref, field)
                if x is None:
                    continue
                y = r + (i - (n - 1) / 2) * h
                # from the reference line: left of it is lower than ref's
                ax.barh(y, x - 1.0, h, left=1.0, color=color(a), hatch=hatch,
                        edgecolor="white" if not hatch else "black",
                        linewidth=0.3)
                vals.append(x)
                if a == "sefer":
                    ax.text(x, y, " %.2f " % x, va="center",
                            ha="left" if x >= 1 else "right",
                            fontsize=6.5, color=COLORS["sefer"])
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([lab for lab, _, _, _ in rows], fontsize=8)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        if vals:
            lo, hi = min(vals + [1.0]) / 1.3, max(vals + [1.0]) * 1.45
            ticks = ratio_ticks(lo / 1.6, hi)
            # a labelled tick below 1 at least, when bars go left of the line
            lo = min(lo, max([t for t in ticks if t < 1] or [lo]))
            ax.set_xlim(lo / 1.08, hi)
            ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if t >= lo]))
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(ttl, fontsize=10)
        ax.grid(alpha=0.3, axis="x")

    h = [Patch(color=color(a.name)) for a in allocs]
    labels = list(names)
    if any(c.pin for c in micro):
        h += [Line2D([], [], color="black", marker="o", markersize=4),
              Line2D([], [], color="black", marker="x", markersize=4, linestyle="--")]
        labels += ["unpinned", "pinned (--pin)"]
    fig.suptitle(title, fontsize=13, y=1 - 0.12 / fig_h, va="top")
    fig.legend(h, labels, loc="upper center", ncol=len(labels), fontsize=11,
               bbox_to_anchor=(0.5, 1 - 0.45 / fig_h), frameon=True,
               handlelength=2.2, columnspacing=1.6,
               title="allocator" + (" (throughput panels: higher is better; bars: "
                                    "ratio to %s, left of 1 is lower)" % ref
                                    if panels and hpanels else ""),
               title_fontsize=9)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
