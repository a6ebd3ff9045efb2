#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sefer benchmark runner: sefer against glibc, mimalloc, jemalloc, tcmalloc.

Usage (normally through make, see Documentation/benchmarks.rst):

  run.py --bindir build/bench --sefer build/libsefer.so [--quick]
         [--threads 1,2,4] [--reps N] [--only REGEX] [--alloc a,b]
         [--out bench/results] [--no-real] [--headline] [--cpu auto|none|N]
  run.py --rst-summary bench/results/latest.csv     (benchmarks.rst tables)
  run.py --md-summary [--full] bench/results/latest.csv   (README headline)
  run.py --png bench/results/latest.csv out.png    (redraw the plot)

Each benchmark program prints one RESULT line (see bench/common.h). Every
configuration runs once per repetition under every allocator, the allocator
order rotating from one repetition to the next, so slow drifts of the machine
spread evenly; the figure reported is the median over the repetitions, and a
ratio to a peer the median of the paired ratios (each run over the peer's run
next to it). The one-thread rows and the one-process real programs run on one
CPU (--cpu, default the fastest of a calibration run), the same for every
allocator.
Results go to OUT/latest.csv, OUT/latest.md and OUT/latest.png (the headline
mode writes BINDIR/headline.{csv,md} instead and leaves OUT alone): their
summaries, ratios, targets and tables are bench/report.py's, the plot
bench/plot.py's.
"""
import argparse
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from plot import write_png
from report import (LARGE_BENCHES, ORDER, compare_verdicts, csv_summary,
                    fmt_rss, fmt_value, headline_table, load_csv, machine_info, md_summary,
                    rst_summary, summarise, write_csv, write_md)

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"

# name, Debian package, soname.  glibc needs no preload; sefer is the build.
PEERS = [
    ("mimalloc", "libmimalloc2.0", "libmimalloc.so.2"),
    ("jemalloc", "libjemalloc2", "libjemalloc.so.2"),
    ("tcmalloc", "libtcmalloc-minimal4", "libtcmalloc_minimal.so.4"),
]

# Optional peers that Debian does not package, prebuilt beside the source tree in
# ../shared/peers (its README.md says how): name, file. --peer NAME=PATH (make bench
# PEERS=mi3=PATH,sn=PATH) names another file; where neither loads, the peer is reported
# missing and the run goes on without it.
SHARED_PEERS_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "peers")
OPTIONAL_PEERS = [
    ("mimalloc3", "libmimalloc3.so"),
    ("snmalloc", "libsnmalloc.so"),
]
PEER_ALIASES = {"mi3": "mimalloc3", "sn": "snmalloc", "mi": "mimalloc", "je": "jemalloc",
                "tc": "tcmalloc"}

# The allocators a QUICK run measures when --alloc does not name them: sefer, glibc and the
# three fastest peers (issue 44's targets). jemalloc and tcmalloc are never the fastest of a
# small-object row nor the leanest on the geometric mean (latest.md of 2026-12-05: 0.42-0.89x
# mimalloc on bulk; peak-RSS geometric means above sefer's and glibc's); they run in the full
# mode, or in QUICK when BENCH_ALLOC names them.
QUICK_ALLOCS = ("sefer", "glibc", "mimalloc", "mimalloc3", "snmalloc")


class Alloc:
    def __init__(self, name, path, owner, version):
        self.name = name
        self.path = path        # LD_PRELOAD value, None for glibc
        self.owner = owner      # basename of the object that must define malloc
        self.version = version


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


PEER_DIRS = []   # --peer-dir: extra places to look, after the package


def find_peer(pkg, soname):
    """The peer's .so from its Debian package, else from the usual dirs."""
    for line in sh(["dpkg-query", "-L", pkg]).splitlines():
        if os.path.basename(line) == soname and os.path.exists(line):
            return os.path.realpath(line)
    for d in PEER_DIRS + ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                          "/usr/lib64", "/usr/lib", "/usr/local/lib"]:
        p = os.path.join(d, soname)
        if os.path.exists(p):
            return os.path.realpath(p)
    return None


def parse_peer_specs(specs):
    """--peer values ("mi3=PATH,sn=PATH", repeatable) -> {name: absolute path}; the short
    names mi3, sn, mi, je, tc stand for mimalloc3, snmalloc, mimalloc, jemalloc, tcmalloc."""
    out = {}
    for spec in specs:
        for part in spec.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                sys.exit("run.py: --peer wants NAME=PATH, not %r" % part)
            name, path = part.split("=", 1)
            name = PEER_ALIASES.get(name.strip(), name.strip())
            if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name) or name.startswith("sefer"):
                sys.exit("run.py: bad peer name %r" % name)
            out[name] = os.path.abspath(os.path.expanduser(path.strip()))
    return out


def shared_peer_version(fname):
    """The version column of ../shared/peers/README.md's row for fname, or '?'."""
    try:
        with open(os.path.join(SHARED_PEERS_DIR, "README.md")) as f:
            for line in f:
                cols = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cols) >= 3 and cols[0] == fname:
                    return cols[2]
    except OSError:
        pass
    return "?"


def probe_preload(bindir, alloc):
    """None when a short run of bench/steady under alloc's preload really calls alloc's malloc
    (the RESULT line's malloc= names it), else why not."""
    prog = os.path.join(bindir or "", "steady")
    if not os.path.exists(prog):
        return None  # nothing to probe with: the runs themselves check every RESULT line
    rc, _, out, err = spawn_wait([prog, "--ops", "10000"], alloc_env(alloc), 20)
    if preload_failed(err):
        return "cannot be preloaded: " + err.strip().splitlines()[0][:100]
    if rc != 0:
        return "a probe run failed: " + describe_rc(rc, err)
    said = sefer_spoke(alloc, err)
    if said:
        return "a probe run wrote to stderr: " + said
    m = re.search(r"malloc=(\S+)", out)
    if not m or m.group(1) != alloc.owner:
        return "malloc does not resolve into it (a probe run's malloc came from %s)" % (
            m.group(1) if m else "nowhere")
    return None


def discover(sefer_path, wanted, bindir=None, peer_paths=None, sefer_b=None):
    """Return (allocators present, [(name, why) missing]). wanted: the names to run (all when
    empty); peer_paths: {name: .so} from --peer; sefer_b: [(name, path)], more sefer builds
    run as columns of their own."""
    peer_paths = dict(peer_paths or {})
    optional = dict(OPTIONAL_PEERS)
    names = list(ORDER) + [n for n in peer_paths if n not in ORDER]
    found, missing = [], []
    for name in names:
        if wanted and name not in wanted:
            continue
        if name == "glibc":
            ver = platform.libc_ver()[1] or sh(["ldd", "--version"]).split("\n")[0]
            found.append(Alloc("glibc", None, "libc.so.6", ver))
            continue
        if name == "sefer":
            if sefer_path and os.path.exists(sefer_path):
                commit = sh(["git", "-C", os.path.dirname(HERE), "rev-parse",
                             "--short", "HEAD"])
                found.append(Alloc("sefer", os.path.abspath(sefer_path),
                                   os.path.basename(sefer_path), commit))
            else:
                missing.append(("sefer", "%s not built (run 'make')" %
                                (sefer_path or "libsefer.so")))
            for bname, bpath in sefer_b or []:
                if os.path.exists(bpath):
                    found.append(Alloc(bname, os.path.abspath(bpath),
                                       os.path.basename(bpath), "second build: " + bpath))
                else:
                    missing.append((bname, "%s does not exist (--sefer-b)" % bpath))
            continue
        if name in peer_paths or name in optional:
            path = peer_paths.get(name) or os.path.join(SHARED_PEERS_DIR, optional[name])
            how = "--peer" if name in peer_paths else "the default, ../shared/peers"
            if not os.path.exists(path):
                missing.append((name, "%s not found (%s; make bench PEERS=%s=PATH)"
                                % (path, how, name)))
                continue
            a = Alloc(name, path, os.path.basename(path),
                      shared_peer_version(os.path.basename(path))
                      if name in optional else "?")
        else:
            pkg, soname = next((p, s) for n, p, s in PEERS if n == name)
            path = find_peer(pkg, soname)
            if not path:
                missing.append((name, "%s not found: install Debian package %s "
                                "(scripts/install-deps)" % (soname, pkg)))
                continue
            ver = sh(["dpkg-query", "-W", "-f=${Version}", pkg]) or "?"
            # dladdr names the object by the path it was loaded as, so
            # preload the soname path, not the resolved file.
            a = Alloc(name, os.path.join(os.path.dirname(path), soname), soname, ver)
        why = probe_preload(bindir, a)
        if why:
            missing.append((name, "%s: %s" % (a.path, why)))
        else:
            found.append(a)
    return found, missing


def parse_threads(spec):
    out = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:(?:-|\.\.)(\d+))?", part)
        if not m:
            sys.exit("run.py: bad THREADS spec %r (use e.g. 1,2,4 or 1-16)" % spec)
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        out.extend(range(lo, hi + 1))
    return sorted(set(t for t in out if t >= 1))


def default_threads():
    n = os.cpu_count() or 1
    ts = [1, 2, 4]
    t = 8
    while t <= n:
        ts.append(t)
        t *= 2
    if n > 4 and n not in ts:
        ts.append(n)
    return sorted(ts)


# ------------------------------------------------------------ configurations
class Config:
    """One benchmark configuration, run under every allocator."""

    def __init__(self, section, bench, param, threads, pin, argv, stdin=None,
                 kind="micro", runs_per_rep=1):
        self.section = section      # "micro" or "real"
        self.runs_per_rep = runs_per_rep  # runs under each allocator per repetition
        self.bench = bench
        self.param = param
        self.threads = threads
        self.pin = pin
        self.argv = argv
        self.stdin = stdin
        self.kind = kind            # micro | python | sqlite | redis

    @property
    def key(self):
        return (self.section, self.bench, self.param, self.threads, self.pin)

    def label(self):
        if self.section == "real":
            return "%s %s" % (self.bench, self.param)
        s = "%s %s t=%d" % (self.bench, self.param, self.threads)
        return s + (" pin" if self.pin else "")


# Per-thread op budgets: (quick, full, headline). Sized so that mimalloc
# takes about 0.1 s (quick; 0.05 s for the large-block and vector rows) or
# 0.3 s (full) per run on the 2-vCPU reference VM; an allocator that is much
# slower is cut by --max-secs (see common.h). The small-object rows' quick
# budgets were doubled on 2026-12-02: on a VM whose speed jitters within a
# second, steady at 2 threads read paired ratios with quartiles 0.88-1.02
# at 8M steps and 0.97-1.02 at 24M (11 interleaved runs each).
BUDGET = {
    # bulk by block size: one budget for all four left 16 B at 12 ms in QUICK
    "bulk-16": (32000000, 100000000, 0),
    "bulk-64": (20000000, 70000000, 0),
    "bulk-256": (16000000, 50000000, 0),
    "bulk": (8000000, 30000000, 0),
    "steady": (16000000, 40000000, 30000000),
    "vecgrow": (100000, 500000, 0),
    "vecgrow-4M": (20, 100, 0),
    "larson": (8000000, 30000000, 3000000),
    "mstress": (8000, 30000, 0),
    "prodcons": (1000000, 2500000, 0),
    "prodcons-1M": (20000, 100000, 0),
    # 20,000 ran 1-4 ms at sefer's rate: thread start dominated. 200k ran 8 ms, 60% of it in
    # the clock read that large.c then made every pair; with the clock read every 256 pairs
    # it ran 3 ms (sefer) and 4 ms (glibc), and a repetition whose two threads shared one CPU
    # for the first milliseconds (the scheduler separates them within a few ticks) read up to
    # twice the time. 2M: about 30 ms (sefer) and 40 ms (glibc) per run, where such a start
    # costs a tenth; mimalloc, mimalloc v3 and snmalloc (a map and an unmap per block) run
    # into the 0.2 s cap, as glibc does at 32 MiB (above its mmap threshold)
    "large": (2000000, 20000000, 0),
    "larson-rounds": (1200, 2000, 0),
    "randpos": (2000000, 4000000, 0),
    "threadgen": (16000, 40000, 0),
    "threadgen-10gen": (8000, 20000, 0),
    "bignum": (20000, 50000, 0),
    "largewin": (10, 100, 0),  # whole budget always run: UNCAPPED
    "bursts": (8, 20, 0),  # bursts 100 ms apart: 0.7 s of idle gaps per run in QUICK; UNCAPPED
    "falseshare": (32000, 100000, 0),  # steps of 8 blocks x 8 B x 100 writes
    # steps over all threads and generations, at 8 threads on the 2-vCPU VM: 2M steps took
    # 0.64 s under mimalloc 2.0.9 idle, 1.06 s under load (mimalloc v3 0.53, snmalloc 0.38,
    # sefer 1.03 s idle); QUICK 1.5M, about 0.5-0.8 s; UNCAPPED
    "tgstress": (1500000, 8000000, 0),
    "xfer-64B": (8000000, 24000000, 0),   # blocks over all producers; 1:1 mimalloc 0.07 s at 4M
    "xfer-mixed": (2000000, 8000000, 0),  # 1:3 mimalloc 0.3-0.8 s at 4M (peers vary 3x)
}

# Rows that run their whole budget under every allocator (--max-secs 0): their peak RSS depends
# on how many steps ran, so a time cap that lets a faster allocator run more of them compares
# peaks of different work. largewin's window is a random walk of sizes whose peak only grows
# with the steps (seed 42, one thread: sefer 322, 335, 337 and 365 MB after 4, 8, 16 and 30
# steps, mimalloc 331, 337, 338 and 390); with 30 steps and the 0.2 s cap sefer ran all 30 and
# mimalloc about 5, and read 1.012x its peak. 10 steps take mimalloc and glibc 0.6-1.9 s.
# bursts: its idle gaps are part of its shape (what the allocator gives back meanwhile), and a
# cap would cut its bursts to the first two or three, before any allocator reaches a steady
# state. tgstress has no cap (it reads no --max-secs): its generations are its shape.
# The QUICK small-object rows below were measured on 2026-12-06 (each row under each allocator
# capped and at its whole budget, interleaved, 5 runs each, median VmHWM in KiB, capped/whole;
# "cut": the allocator's whole budget takes the 2-vCPU VM over 0.2 s at latest.csv's rate):
# - mstress (a class's peak count only rises with the rounds): glibc cut at 1, 2, 4 threads,
#   mimalloc and mimalloc v3 at 4; at 2 threads glibc 4284/4656 (0.92), mimalloc 0.93; at 4
#   glibc 6808/7708 (0.88), mimalloc 0.86, mimalloc v3 38920/59120 (0.66), snmalloc 0.92,
#   sefer 0.93.
# - larson: glibc cut at 2 and 4 threads, the peers at 4; a small growth: at a fifth of the
#   budget against all of it (both uncapped, 10 runs each) sefer 0.92, 0.96, 0.96 and glibc
#   1.06, 0.98, 0.97 at 1, 2, 4 threads; capped/whole glibc at 4 threads 0.94 (5 runs), 1.00
#   (8 runs). Paired sefer/glibc at 2 threads read 1.115 capped, 1.018 at equal work.
# - larson-rounds: glibc cut at 2 and 4 threads, mimalloc at 4; at 4 threads mimalloc
#   14844/19880 (0.75; 8 more runs 0.86), snmalloc 0.89 (0.83), glibc 0.92 (0.87).
# - threadgen: every allocator cut at 4 threads (about 0.3 s each), and every peak grows:
#   sefer 11264/15252 (0.74), mimalloc 0.77, mimalloc v3 0.79, snmalloc 0.82, glibc 0.92.
# - randpos: every allocator cut at 4 threads; mimalloc v3 32772/36764 (0.89; 8 more runs
#   0.94), mimalloc 0.96 (0.99), sefer 0.97 (0.98), glibc 0.98 (0.99): small, but all ten
#   below 1.
# Together they add about 4 s a repetition to QUICK at latest.csv's rates (16 s over 4), most
# of it glibc's mstress (0.4, 0.7 and 1.0 s a run at 1, 2, 4 threads); measured at load average
# 4 (these 15 rows, 5 allocators, one repetition, twice each): 14-16 s capped, 25-28 uncapped.
# Capped, because their peak does not grow with the steps (same measurement, capped/whole
# within run-to-run noise, and the capped peak not the lower one): steady (0.95-1.03 where
# anyone is cut), bignum (0.96-1.13), falseshare (nobody cut), vecgrow and prodcons (nobody
# cut), xfer (glibc cut on all four rows: 1.01-1.11, not lower), and bulk: glibc, cut on every
# row (1-20% of its budget), keeps its peak from 2% of the budget to all of it (1024 B at one
# thread 2348 and 2336 KiB, 256 B 1728 and 1852 at 2% and the whole, 3 runs each), and its
# whole budget would add about 23 s a repetition. One known exception stays: mimalloc v3's
# bulk peak at 2 and 4 threads lies in 2 MiB steps (6/8 or 8/10/12 MiB) and its capped runs
# land in the lower step more often (256 B at 2 threads 6140/7996, 1024 B at 4 10248/11888,
# 3 runs each): the cap can only show mimalloc v3 leaner there, never sefer.
UNCAPPED = ("largewin", "bursts", "tgstress", "mstress", "larson", "larson-rounds", "threadgen",
            "randpos")

MAX_SECS = ("0.2", "1.5", "0.6")
QUICK, FULL, HEADLINE = 0, 1, 2


def micro_configs(bindir, threads, mode, pin_all, only):
    maxs = MAX_SECS[mode]
    qi = mode
    # pinned twins: every threaded workload in full mode but the large-block ones and the
    # two that run more threads than CPUs by design; none in QUICK
    pinned = (lambda b: b not in LARGE_BENCHES + ("tgstress", "xfer")) if pin_all \
        else (lambda b: False)
    out = []

    def add(bench, param, extra, ts, budget=None, full_only=False):
        if full_only and mode == QUICK:
            return
        for pin in (0, 1):
            if pin and not pinned(bench):
                continue
            for t in ts:
                argv = [os.path.join(bindir, bench), "--threads", str(t),
                        "--ops", str(BUDGET[budget or bench][qi]),
                        "--max-secs", "0" if bench in UNCAPPED else maxs,
                        "--seed", "42"] + extra + (["--pin"] if pin else [])
                c = Config("micro", bench, param, t, pin, argv)
                if not only or re.search(only, c.label()):
                    out.append(c)

    for size in (16, 64, 256, 1024):
        key = "bulk-%d" % size
        add("bulk", "%dB" % size, ["--size", str(size)], threads,
            key if key in BUDGET else None, full_only=size in QUICK_SKIP_BULK)
    add("steady", "256live", [], threads)
    add("vecgrow", "1..512", [], threads)
    add("vecgrow", "1..4M", ["--size", "4194304"], threads, "vecgrow-4M", full_only=True)
    add("larson", "768slots", [], threads)
    add("mstress", "512mixed", [], threads)
    add("prodcons", "1toN", [], [t for t in threads if t >= 2])
    add("prodcons", "1toN-1M", ["--size", "1M"], [t for t in threads if t >= 2],
        "prodcons-1M", full_only=True)
    for mib in (4, 16, 32, 64):
        add("large", "%dM" % mib, ["--size", "%dM" % mib], threads, full_only=mib == 64)
    add("larson-rounds", "1000slots", [], threads)
    add("randpos", "8..4K", [], threads)
    add("threadgen", "50gen", ["--gens", "50"], threads)
    add("threadgen", "10gen", ["--gens", "10"], threads, "threadgen-10gen", full_only=True)
    add("bignum", "pi+e", [], threads)
    add("largewin", "20x5..25M", [], threads, full_only=True)
    add("bursts", "100ms", [], threads, full_only=True)
    add("falseshare", "active", ["--passive", "0"], threads)
    add("falseshare", "passive", ["--passive", "1"], threads, full_only=True)
    # issue 44's shapes: thread generations at four threads per CPU; producers and
    # consumers at 1:1 (2 threads) and 1:3 (4 threads), 64 B and mixed 16..1024 B blocks
    add("tgstress", "50gen", ["--gens", "50"], [TGSTRESS_THREADS_PER_CPU * (os.cpu_count() or 1)])
    for size, sname in ((64, "64B"), (0, "mixed")):
        for ratio_, t in (("1:1", 2), ("1:3", 4)):
            add("xfer", "%s-%s" % (sname, ratio_.replace(":", "to")),
                ["--ratio", ratio_, "--size", str(size)], [t], "xfer-%s" % sname)
    return out


TGSTRESS_THREADS_PER_CPU = 4
# bulk sizes measured in the full mode only
QUICK_SKIP_BULK = ()


# QUICK: repetitions, each row (real programs too) once per repetition under each allocator.
# Until issue 44 QUICK ran 5 repetitions and ran bulk, the rows held to parity with mimalloc
# and the real programs 3 times per repetition (15 paired ratios), and took about 19 minutes
# with five allocators; with seven it would have taken 27. A row now reads "parity" unless
# the interval of its paired ratios excludes 1.00 and its median lies outside the noise band
# (report.py, NOISE_BAND), so fewer pairs widen the interval into parity instead of flipping a
# verdict. 4 repetitions of the QUICK rows under 5 allocators: about 4 minutes on the 2-vCPU VM
# (Documentation/benchmarks.rst, "Running", has the breakdown by workload).
QUICK_REPS = 4
FULL_REPS = 5


def real_configs(bindir, quick, only):
    out = []
    scale = "1" if quick else "4"
    # python3 and sqlite3 run under bench/peakrss, which reports their own peak (run_real)
    peak = [os.path.join(bindir, "peakrss")]
    out.append(Config("real", "python3", "pywork x%s" % scale, 1, 0,
                      peak + [PY, os.path.join(HERE, "programs", "pywork.py"), scale, "42"],
                      kind="python"))
    rows = 10000 if quick else 40000
    sql = os.path.join(bindir, "sqlite-%d.sql" % rows)
    if not os.path.exists(sql):
        with open(sql + ".tmp", "w") as f:
            subprocess.run([PY, os.path.join(HERE, "programs", "sqlgen.py"),
                            str(rows), "42"], stdout=f, check=True)
        os.replace(sql + ".tmp", sql)
    out.append(Config("real", "sqlite3", "%dk rows" % (rows // 1000), 1, 0,
                      peak + ["sqlite3", "-bail", ":memory:"], stdin=sql, kind="sqlite"))
    n = 20000 if quick else 200000
    out.append(Config("real", "redis", "%dk req x7" % (n // 1000), 1, 0,
                      ["redis-benchmark", "-h", "127.0.0.1", "-q", "--csv",
                       "-n", str(n), "-P", "32", "-c", "8", "-r", "200000",
                       "-d", "256", "-t", "set,get,lpush,lpop,sadd,hset,incr"],
                      kind="redis"))
    keep = []
    for c in out:
        if only and not re.search(only, c.label()):
            continue
        need = {"python": [PY], "sqlite": ["sqlite3"],
                "redis": ["redis-server", "redis-benchmark"]}[c.kind]
        gone = [p for p in need if not shutil.which(p)]
        if gone:
            MISSING_PROGS.append((c.bench, "%s not found (Debian packages python3, "
                                  "sqlite3, redis-server, redis-tools; "
                                  "scripts/install-deps)" % ", ".join(gone)))
            continue
        if c.argv[:1] == peak and not os.access(peak[0], os.X_OK):
            MISSING_PROGS.append((c.bench, "%s not built (make bench-progs)" % peak[0]))
            continue
        keep.append(c)
    return keep


MISSING_PROGS = []


# ------------------------------------------------------------ running
class Outcome:
    def __init__(self, value=None, rss_kb=None, err=None, out=""):
        self.value = value      # ops/s (micro) or seconds (real)
        self.rss_kb = rss_kb
        self.err = err
        self.out = out


def alloc_env(alloc, extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if alloc.path:
        env["LD_PRELOAD"] = alloc.path
    env.update(extra or {})
    return env


def spawn_wait(argv, env, timeout, stdin=None, stdout=subprocess.PIPE, cpus=None):
    """Run argv, on the CPUs in cpus if given (its affinity mask); return (rc, wall seconds,
    stdout, stderr). No peak RSS: wait4's ru_maxrss of a child that execs is at least the high
    water mark of the runner's copy the exec replaced (about 16 MiB); a program's own peak is
    its VmHWM (the micro programs print it) or bench/peakrss's line (peakrss_split)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    errf = tempfile.TemporaryFile()
    outf = tempfile.TemporaryFile() if stdout == subprocess.PIPE else stdout
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, stdin=fin, stdout=outf, stderr=errf,
                             preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus
                             else None)
        killer = threading.Timer(timeout, lambda: p.kill())
        killer.start()
        try:
            _, status, _ = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        rc = p.returncode
        timed_out = wall >= timeout and rc == -signal.SIGKILL
        errf.seek(0)
        err = errf.read().decode(errors="replace")
        out = ""
        if stdout == subprocess.PIPE:
            outf.seek(0)
            out = outf.read().decode(errors="replace")
        if timed_out:
            rc = "timeout"
        return rc, wall, out, err
    finally:
        if stdin:
            fin.close()
        errf.close()
        if stdout == subprocess.PIPE:
            outf.close()


# The CPU that runs the single-thread runs (--cpu), or None: every allocator's run of a row on
# the same CPU. On the 2-vCPU reference VM one vCPU ran a whole process 1.6-1.75x slower than
# the other for hours (sqlite3: 0.28-0.31 s on CPU 0, 0.16-0.18 s on CPU 1, 6 runs each), and
# the scheduler put each process on either: paired ratios of unpinned runs were bimodal
# (sqlite3, 15 pairs: 0.62-0.66 or 1.55-1.67), pinned ones were not (10 pairs: 0.97-1.07 but
# one 1.21).
SINGLE_CPU = None


def upper_median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0.0


def fastest_cpu(rates):
    """The CPU with the highest median calibration rate, or None if no run gave one;
    rates: {cpu: [ops/s, ...]}."""
    cpus = [c for c in sorted(rates) if rates[c]]
    return max(cpus, key=lambda c: upper_median(rates[c])) if cpus else None


def calibrate_cpus(bindir, rounds=3):
    """Time the steady workload under glibc on each allowed CPU, interleaved; (cpu, rates)."""
    cpus = sorted(os.sched_getaffinity(0))
    rates = {c: [] for c in cpus}
    argv = [os.path.join(bindir, "steady"), "--threads", "1", "--ops", "4000000"]
    for _ in range(rounds):
        for c in cpus:
            rc, _, out, _ = spawn_wait(argv, alloc_env(Alloc("glibc", None, "", "")), 30,
                                          cpus={c})
            m = re.search(r"ops_per_s=([\d.]+)", out)
            if rc == 0 and m:
                rates[c].append(float(m.group(1)))
    return fastest_cpu(rates), rates


def describe_rc(rc, err):
    if rc == "timeout":
        return "timeout"
    if isinstance(rc, int) and rc < 0:
        try:
            return "crash (%s)" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    tail = err.strip().splitlines()[-1:] if err.strip() else []
    return "exit %s%s" % (rc, (": " + tail[0][:80]) if tail else "")


def preload_failed(err):
    return "cannot be preloaded" in err or "ERROR: ld.so" in err


def sefer_environment():
    """The SEFER_* variables every measured program inherits, as latest.md's header states them
    (a valid one changes what sefer does without a word on stderr)."""
    env = sorted("%s=%s" % kv for kv in os.environ.items() if kv[0].startswith("SEFER_"))
    return ", ".join(env) if env else "none (the defaults)"


def sefer_spoke(alloc, err):
    """The first line a sefer build wrote to stderr in a run, or None. A benchmarked run of the
    default configuration says nothing: a line means its environment changed what is measured
    (an unknown SEFER_* variable's warning alone maps about 100 KiB of cold text and data into
    every run), so the run is refused rather than reported."""
    if not alloc.name.startswith("sefer"):
        return None
    m = re.search(r"^sefer: .*$", err, re.M)
    return m.group(0)[:120] if m else None


def single_cpu_set(cfg):
    """The affinity of cfg's runs: SINGLE_CPU for one-thread rows and single-process real
    programs (redis, a server and its client: redis_cpu_sets), else None (every CPU)."""
    one = cfg.threads == 1 if cfg.section == "micro" else cfg.kind in ("python", "sqlite")
    return {SINGLE_CPU} if one and SINGLE_CPU is not None else None


def redis_cpu_sets():
    """The affinities of the redis row's (server, client): the server under test on SINGLE_CPU,
    its client on the other CPUs, so that neither is scheduled on top of the other; (None,
    None), every CPU for both, when there is no SINGLE_CPU or no other CPU to give the client."""
    if SINGLE_CPU is None:
        return None, None
    rest = os.sched_getaffinity(0) - {SINGLE_CPU}
    return ({SINGLE_CPU}, rest) if rest else (None, None)


def run_micro(cfg, alloc, timeout):
    rc, wall, out, err = spawn_wait(cfg.argv, alloc_env(alloc), timeout,
                                         cpus=single_cpu_set(cfg))
    if preload_failed(err):
        return Outcome(err="preload failed: " + err.strip().splitlines()[0][:100])
    if rc != 0:
        return Outcome(err=describe_rc(rc, err))
    said = sefer_spoke(alloc, err)
    if said:
        return Outcome(err="wrote to stderr: " + said)
    m = re.search(r"^RESULT (.*)$", out, re.M)
    if not m:
        return Outcome(err="no RESULT line")
    kv = dict(f.split("=", 1) for f in m.group(1).split())
    if kv.get("malloc") != alloc.owner:
        return Outcome(err="malloc came from %s, not %s" % (kv.get("malloc"),
                                                              alloc.owner))
    return Outcome(float(kv["ops_per_s"]), int(kv["maxrss_kb"]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_redis(cfg, alloc, timeout):
    """Start our own redis-server under the allocator, drive it, stop it."""
    port = free_port()
    server_cpus, client_cpus = redis_cpu_sets()
    with tempfile.TemporaryDirectory(prefix="sefer-redis-") as d:
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", d,
             "--daemonize", "no", "--loglevel", "warning",
             "--protected-mode", "yes"],
            env=alloc_env(alloc), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=(lambda: os.sched_setaffinity(0, server_cpus)) if server_cpus else None)
        try:
            t_end = time.time() + 10
            while not redis_ping(port):
                if server.poll() is not None or time.time() > t_end:
                    err = server.stderr.read().decode(errors="replace") \
                        if server.poll() is not None else ""
                    if preload_failed(err):
                        return Outcome(err="preload failed")
                    return Outcome(err="redis-server did not start: " +
                                   describe_rc(server.poll() if server.poll()
                                               is not None else "timeout", err))
                time.sleep(0.02)
            argv = cfg.argv + ["-p", str(port)]
            rc, wall, out, err = spawn_wait(argv, alloc_env(Alloc(
                "glibc", None, "", "")), timeout, cpus=client_cpus)
            if server.poll() is not None:
                return Outcome(err="redis-server died: " +
                               describe_rc(server.returncode, ""))
            hwm = vm_hwm_kb(server.pid)
            if rc != 0:
                return Outcome(err="redis-benchmark " + describe_rc(rc, err))
            rps = re.findall(r'^"[^"]+","([\d.]+)"', out, re.M)
            if len(rps) < 7:
                return Outcome(err="redis-benchmark: incomplete output")
            return Outcome(wall, hwm, out=" ".join(rps))
        finally:
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(5)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            if server.stderr:
                server.stderr.close()


PEAKRSS_LINE = re.compile(r"^peakrss: maxrss_kb=(\d+)\n?\Z", re.M)


def peakrss_split(err):
    """(the program's peak RSS in KiB, its stderr) from bench/peakrss's stderr, whose last line
    says the peak; (None, err) when that line is missing (the program was killed, or peakrss
    could not run)."""
    m = PEAKRSS_LINE.search(err)
    if not m:
        return None, err
    return int(m.group(1)), err[:m.start()]


def run_real(cfg, alloc, timeout, expect):
    if cfg.kind == "redis":
        return run_redis(cfg, alloc, timeout)
    extra = {"PYTHONMALLOC": "malloc"} if cfg.kind == "python" else {}
    # The rss spawn_wait returns is wait4's: the runner's own peak for a program that stays
    # below it (bench/peakrss.c says why). peakrss reports the program's.
    rc, wall, out, err = spawn_wait(cfg.argv, alloc_env(alloc, extra),
                                       timeout, stdin=cfg.stdin, cpus=single_cpu_set(cfg))
    rss, err = peakrss_split(err)
    if preload_failed(err):
        return Outcome(err="preload failed")
    if rc != 0:
        return Outcome(err=describe_rc(rc, err))
    said = sefer_spoke(alloc, err)
    if said:
        return Outcome(err="wrote to stderr: " + said)
    key = cfg.key
    if key in expect and expect[key] != out:
        return Outcome(err="output differs from the first allocator's")
    expect.setdefault(key, out)
    if rss is None:
        return Outcome(err="bench/peakrss reported no peak RSS")
    return Outcome(wall, rss)


def png_from_csv(csv_path, png_path):
    """Redraw latest.png from a latest.csv (no benchmark is run)."""
    names, keys, by = load_csv(csv_path)
    allocs = [Alloc(n, None, "", "") for n in names]
    configs, summ = [], {}
    for k in keys:
        c = Config(k[0], k[1], k[2], int(k[3]), int(k[4]), [])
        configs.append(c)
        for n in names:
            r = by.get(k + (n,))
            if not r:
                continue
            summ[(c.key, n)] = csv_summary(r)
    return write_png(png_path, configs, allocs, summ,
                     "sefer vs peers - from %s" % os.path.basename(csv_path))


# ------------------------------------------------------------ main
def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rst-summary":
        rst_summary(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--png":
        return 0 if png_from_csv(sys.argv[2], sys.argv[3]) else 1
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare_verdicts(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--md-summary":
        md_summary(sys.argv[-1], full=sys.argv[2] == "--full")
        return 0
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--sefer", default=None)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", default=os.environ.get("THREADS") or "")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--only", default=None, help="regex over row labels")
    ap.add_argument("--alloc", default="", help="comma list of allocators")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--headline", action="store_true")
    ap.add_argument("--peer-dir", action="append", default=[],
                    help="also look for the peers' .so files here")
    ap.add_argument("--peer", action="append", default=[],
                    help="NAME=PATH[,NAME=PATH]: a peer's .so (mi3 and sn name mimalloc3 and "
                    "snmalloc, which default to ../shared/peers)")
    ap.add_argument("--sefer-b", action="append", default=[],
                    help="NAME=PATH: a second sefer build, a column of its own with its paired "
                    "ratio to sefer (NAME starts with 'sefer')")
    ap.add_argument("--cpu", default="auto",
                    help="CPU for the single-thread runs: auto (the fastest in a calibration "
                    "run), none (unpinned), or a CPU number")
    args = ap.parse_args()
    PEER_DIRS.extend(os.path.abspath(d) for d in args.peer_dir)

    wanted = [PEER_ALIASES.get(a, a) for a in args.alloc.split(",") if a]
    peer_paths = parse_peer_specs(args.peer)
    sefer_b = []
    for spec in args.sefer_b:
        name, _, path = spec.rpartition("=")
        name = name or "sefer-b"
        sefer_b.append((name if name.startswith("sefer") else "sefer-" + name,
                        os.path.abspath(path)))
    if args.headline and not wanted:
        wanted = ["sefer", "glibc", "mimalloc"]
    elif args.quick and not wanted:
        wanted = list(QUICK_ALLOCS) + [n for n in peer_paths if n not in QUICK_ALLOCS]
    allocs, missing = discover(args.sefer, wanted, args.bindir, peer_paths, sefer_b)
    for n, why in missing:
        print("bench: MISSING %s: %s" % (n, why), file=sys.stderr)
    if not allocs:
        sys.exit("bench: no allocator to run")

    threads = parse_threads(args.threads) if args.threads else default_threads()
    if args.headline:
        threads = [t for t in threads if t <= 2] or [1]
        reps = args.reps or 5
        configs = [c for c in micro_configs(args.bindir, threads, HEADLINE, False, None)
                   if c.bench in ("steady", "larson") and not c.pin]
    else:
        reps = args.reps or (QUICK_REPS if args.quick else FULL_REPS)
        configs = micro_configs(args.bindir, threads, QUICK if args.quick else FULL,
                                not args.quick, args.only)
        if not args.no_real:
            configs += real_configs(args.bindir, args.quick, args.only)
            for n, why in MISSING_PROGS:
                print("bench: MISSING %s: %s" % (n, why), file=sys.stderr)
            missing += MISSING_PROGS
    if not configs:
        sys.exit("bench: nothing selected")

    global SINGLE_CPU
    cpu_note = "none (--cpu none): the scheduler's choice"
    allowed = sorted(os.sched_getaffinity(0))
    if args.cpu == "auto" and len(allowed) > 1:
        SINGLE_CPU, rates = calibrate_cpus(args.bindir)
        if SINGLE_CPU is None:
            cpu_note = "unpinned: the calibration run (steady under glibc) failed"
        else:
            best = upper_median(rates[SINGLE_CPU])
            cpu_note = ("CPU %d, the fastest of %s in a calibration run (steady under glibc,"
                        " speed relative to it: %s)" % (
                            SINGLE_CPU, ",".join(map(str, allowed)), ", ".join(
                                "CPU %d %.2f" % (c, upper_median(r) / best)
                                for c, r in sorted(rates.items()) if r)))
    elif args.cpu == "auto":
        cpu_note = "the only CPU this runner may use"
    elif args.cpu != "none":
        try:
            SINGLE_CPU = int(args.cpu)
        except ValueError:
            sys.exit("bench: --cpu (BENCH_CPU) must be auto, none or a CPU number, not %r"
                     % args.cpu)
        if SINGLE_CPU not in allowed:
            sys.exit("bench: --cpu %d is not one of this process's CPUs (%s)"
                     % (SINGLE_CPU, ",".join(map(str, allowed))))
        cpu_note = "CPU %d (--cpu)" % SINGLE_CPU
    print("bench: single-thread runs on %s" % cpu_note, flush=True)

    timeout_micro = 30 if args.quick else 90
    timeout_real = 60 if args.quick else 180
    total = reps * sum(c.runs_per_rep for c in configs) * len(allocs)
    print("bench: %d configurations x %d allocators (%s) x %d repetitions = %d runs;"
          " threads %s" % (len(configs), len(allocs), ", ".join(a.name for a in allocs),
                           reps, total, ",".join(map(str, threads))), flush=True)
    runs, expect, spent = {}, {}, {}
    load0 = os.getloadavg()[0]
    t_start = time.time()
    n = 0
    for rep in range(reps):
        for cfg, k in [(c, k) for c in configs for k in range(c.runs_per_rep)]:
            turn = rep * cfg.runs_per_rep + k
            order = allocs[turn % len(allocs):] + allocs[:turn % len(allocs)]
            for a in order:
                n += 1
                prev = runs.setdefault((cfg.key, a.name), [])
                if any(r.err for r in prev):
                    print("[%4d/%d] %-9s %-28s rep %d: skipped (failed before)"
                          % (n, total, a.name, cfg.label(), rep + 1), flush=True)
                    continue
                t0 = time.time()
                if cfg.section == "micro":
                    o = run_micro(cfg, a, timeout_micro)
                else:
                    o = run_real(cfg, a, timeout_real, expect)
                prev.append(o)
                label = cfg.bench if cfg.section == "micro" else "real programs"
                spent[label] = spent.get(label, 0.0) + time.time() - t0
                if o.err:
                    msg = "FAIL: " + o.err
                else:
                    msg = "%9s  %8s MiB" % (fmt_value(cfg, o.value), fmt_rss(o.rss_kb))
                print("[%4d/%d] %-9s %-28s rep %d: %s  (%.2fs)"
                      % (n, total, a.name, cfg.label(), rep + 1, msg,
                         time.time() - t0), flush=True)
    elapsed = time.time() - t_start
    summ = summarise(configs, allocs, runs)

    max_runs = max(c.runs_per_rep for c in configs)
    multi = [c.bench if c.section == "micro" else "real programs" for c in configs
             if c.runs_per_rep == max_runs]
    multi = ", ".join(dict.fromkeys(multi))  # in order, once each
    meta = [("date", time.strftime("%Y-%m-%d %H:%M %Z")),
            ("machine", machine_info()),
            ("mode", "%s, %d repetitions%s, median reported, threads %s"
             % ("QUICK" if args.quick else "full", reps,
                " (%s: %d runs each, %d in all)" % (multi, max_runs, reps * max_runs)
                if max_runs > 1 else "",
                ",".join(map(str, threads)))),
            ("single-thread runs (t=1 rows, python3, sqlite3, the redis server; its client on the "
             "other CPUs)", cpu_note),
            ("run time", "%.0f s (by workload, all allocators: %s)" % (elapsed, ", ".join(
                "%s %.0f s" % kv for kv in sorted(spent.items(), key=lambda kv: -kv[1])))),
            ("load average", "%.2f at start, %.2f at end (anything else running "
             "on the machine skews the figures)" % (load0, os.getloadavg()[0])),
            ("sefer options from the environment", sefer_environment())]
    if args.headline:
        os.makedirs(args.bindir, exist_ok=True)
        md = os.path.join(args.bindir, "headline.md")
        text = write_md(md, configs, allocs, missing, summ, meta)
        write_csv(os.path.join(args.bindir, "headline.csv"), configs, allocs, summ)
        print()
        print("Headline (allocator calls/s, median of %d; sefer/x above 1.00x "
              "means sefer is faster; full tables: %s)" % (reps, md))
        print(headline_table(configs, allocs, summ))
    else:
        os.makedirs(args.out, exist_ok=True)
        text = write_md(os.path.join(args.out, "latest.md"), configs, allocs,
                        missing, summ, meta)
        write_csv(os.path.join(args.out, "latest.csv"), configs, allocs, summ)
        png = os.path.join(args.out, "latest.png")
        ok = write_png(png, configs, allocs, summ,
                       "sefer vs peers - %s (%s)" % (machine_info(),
                                                     "QUICK" if args.quick else "full"))
        print()
        print(text)
        print("bench: wrote %s/latest.{csv,md%s} in %.0f s" %
              (args.out, ",png" if ok else "", elapsed))
    for n_, why in missing:
        print("bench: MISSING %s: %s" % (n_, why))
    fails = sorted({(k, v["err"]) for k, v in summ.items() if v["err"]})
    if fails:
        print("bench: %d failed cells (see FAIL in the tables)" % len(fails))
    return 0


if __name__ == "__main__":
    sys.exit(main())
