#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot bench/results/persist-latest.csv: ops/s per cell for each allocator (log scale)."""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["allocator"] != "recovery_1m"]
allocs = list(dict.fromkeys(r["allocator"] for r in rows))
cells = list(dict.fromkeys((r["dist"], r["threads"]) for r in rows))
fig, ax = plt.subplots(figsize=(13, 5))
w = 0.8 / len(allocs)
for i, a in enumerate(allocs):
    ys, lo, hi = [], [], []
    for d, t in cells:
        r = next(x for x in rows if x["allocator"] == a and x["dist"] == d and x["threads"] == t)
        m = float(r["ops_s_median"])
        ys.append(m)
        lo.append(m - float(r["ops_s_q20"]))
        hi.append(float(r["ops_s_q80"]) - m)
    xs = [j + i * w for j in range(len(cells))]
    ax.bar(xs, ys, w, yerr=[lo, hi], label=a, capsize=2)
ax.set_xticks([j + 0.4 - w / 2 for j in range(len(cells))])
ax.set_xticklabels(["%s\n%s thr" % c for c in cells], fontsize=8)
ax.set_yscale("log")
ax.set_ylabel("ops/s (median, q20-q80)")
ax.set_title("sefer persist: alloc 45 / realloc 20 / free 35, real fdatasync")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("  PLOT     %s" % sys.argv[2])
