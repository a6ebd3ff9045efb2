#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sefer benchmark runner: sefer against glibc, mimalloc, jemalloc, tcmalloc.

Usage (normally through make, see Documentation/benchmarks.rst):

  run.py --bindir build/bench --sefer build/libsefer.so [--quick]
         [--threads 1,2,4] [--reps N] [--only REGEX] [--alloc a,b]
         [--out bench/results] [--no-real] [--headline]
  run.py --rst-summary bench/results/latest.csv     (benchmarks.rst tables)
  run.py --md-summary [--full] bench/results/latest.csv   (README headline)
  run.py --png bench/results/latest.csv out.png    (redraw the plot)

Each benchmark program prints one RESULT line (see bench/common.h). Every
configuration runs once per repetition under every allocator, the allocator
order rotating from one repetition to the next, so slow drifts of the machine
spread evenly; the figure reported is the median over the repetitions, and a
ratio to a peer the median of the paired ratios (each run over the peer's run
next to it).
Results go to OUT/latest.csv, OUT/latest.md and OUT/latest.png (the headline
mode writes BINDIR/headline.{csv,md} instead and leaves OUT alone).
"""
import argparse
import csv
import glob
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"

# name, Debian package, soname.  glibc needs no preload; sefer is the build.
PEERS = [
    ("mimalloc", "libmimalloc2.0", "libmimalloc.so.2"),
    ("jemalloc", "libjemalloc2", "libjemalloc.so.2"),
    ("tcmalloc", "libtcmalloc-minimal4", "libtcmalloc_minimal.so.4"),
]
ORDER = ["sefer", "glibc", "mimalloc", "jemalloc", "tcmalloc"]


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


def discover(sefer_path, wanted):
    """Return (allocators present, [(name, why) missing])."""
    found, missing = [], []
    for name in ORDER:
        if wanted and name not in wanted:
            continue
        if name == "glibc":
            ver = platform.libc_ver()[1] or sh(["ldd", "--version"]).split("\n")[0]
            found.append(Alloc("glibc", None, "libc.so.6", ver))
        elif name == "sefer":
            if sefer_path and os.path.exists(sefer_path):
                commit = sh(["git", "-C", os.path.dirname(HERE), "rev-parse",
                             "--short", "HEAD"])
                found.append(Alloc("sefer", os.path.abspath(sefer_path),
                                   os.path.basename(sefer_path), commit))
            else:
                missing.append(("sefer", "%s not built (run 'make')" %
                                (sefer_path or "libsefer.so")))
        else:
            pkg, soname = next((p, s) for n, p, s in PEERS if n == name)
            path = find_peer(pkg, soname)
            if path:
                ver = sh(["dpkg-query", "-W", "-f=${Version}", pkg]) or "?"
                # dladdr names the object by the path it was loaded as, so
                # preload the soname path, not the resolved file.
                found.append(Alloc(name, os.path.join(os.path.dirname(path), soname),
                                   soname, ver))
            else:
                missing.append((name, "%s not found: install Debian package %s "
                                "(scripts/install-deps)" % (soname, pkg)))
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
    "large": (1000000, 5000000, 0),  # 20,000 ran 1-4 ms at sefer's rate: thread start dominated
    "larson-rounds": (1200, 2000, 0),
    "randpos": (2000000, 4000000, 0),
    "threadgen": (16000, 40000, 0),
    "threadgen-10gen": (8000, 20000, 0),
    "bignum": (20000, 50000, 0),
    "largewin": (10, 100, 0),  # whole budget always run: UNCAPPED
    "bursts": (8, 20, 0),  # bursts 100 ms apart: 0.7 s of idle gaps per run in QUICK; UNCAPPED
    "falseshare": (32000, 100000, 0),  # steps of 8 blocks x 8 B x 100 writes
}

# Rows that run their whole budget under every allocator (--max-secs 0): their peak RSS depends
# on how many steps ran, so a time cap that lets a faster allocator run more of them compares
# peaks of different work. largewin's window is a random walk of sizes whose peak only grows
# with the steps (seed 42, one thread: sefer 322, 335, 337 and 365 MB after 4, 8, 16 and 30
# steps, mimalloc 331, 337, 338 and 390); with 30 steps and the 0.2 s cap sefer ran all 30 and
# mimalloc about 5, and read 1.012x its peak. 10 steps take mimalloc and glibc 0.6-1.9 s.
# bursts: its idle gaps are part of the shape (what the allocator gives back meanwhile), and a
# cap would cut its bursts to the first two or three, before any allocator reaches a steady
# state.
UNCAPPED = ("largewin", "bursts")

# Rows whose blocks are large objects (1 MiB and up): the geometric means
# "without large" / "small-object rows" leave them out.
LARGE_BENCHES = ("large", "largewin")


def is_large(bench, param):
    return bench in LARGE_BENCHES or param.endswith("-1M") or param == "1..4M"  # vecgrow to 32 MiB
MAX_SECS = ("0.2", "1.5", "0.6")
QUICK, FULL, HEADLINE = 0, 1, 2


def micro_configs(bindir, threads, mode, pin_all, only):
    maxs = MAX_SECS[mode]
    qi = mode
    # pinned twins: everything threaded in full mode, larson only in quick
    pinned = (lambda b: b not in LARGE_BENCHES) if pin_all else (lambda b: b == "larson")
    out = []

    def add(bench, param, extra, ts, budget=None):
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
            key if key in BUDGET else None)
    add("steady", "256live", [], threads)
    add("vecgrow", "1..512", [], threads)
    add("vecgrow", "1..4M", ["--size", "4194304"], threads, "vecgrow-4M")
    add("larson", "768slots", [], threads)
    add("mstress", "512mixed", [], threads)
    add("prodcons", "1toN", [], [t for t in threads if t >= 2])
    add("prodcons", "1toN-1M", ["--size", "1M"], [t for t in threads if t >= 2],
        "prodcons-1M")
    for mib in (4, 16, 64):
        add("large", "%dM" % mib, ["--size", "%dM" % mib], threads)
    add("larson-rounds", "1000slots", [], threads)
    add("randpos", "8..4K", [], threads)
    add("threadgen", "50gen", ["--gens", "50"], threads)
    add("threadgen", "10gen", ["--gens", "10"], threads, "threadgen-10gen")
    add("bignum", "pi+e", [], threads)
    add("largewin", "20x5..25M", [], threads)
    add("bursts", "100ms", [], threads)
    add("falseshare", "active", ["--passive", "0"], threads)
    add("falseshare", "passive", ["--passive", "1"], threads)
    return out


# Runs per repetition of each real program in QUICK mode. A QUICK real program lasts 0.1-0.15 s,
# most of it process start and first-touch faults that no allocator controls: the median of 5
# runs moved by 3-4% from one run of the suite to the next (sqlite3 read 0.98x and 1.04x
# mimalloc at the same commit), the median of 15 by about 1%. Every allocator gets the same
# count, interleaved as the repetitions are.
REAL_QUICK_RUNS = 3


def real_configs(bindir, quick, only):
    out = []
    scale = "1" if quick else "4"
    out.append(Config("real", "python3", "pywork x%s" % scale, 1, 0,
                      [PY, os.path.join(HERE, "programs", "pywork.py"), scale, "42"],
                      kind="python"))
    rows = 10000 if quick else 40000
    sql = os.path.join(bindir, "sqlite-%d.sql" % rows)
    if not os.path.exists(sql):
        with open(sql + ".tmp", "w") as f:
            subprocess.run([PY, os.path.join(HERE, "programs", "sqlgen.py"),
                            str(rows), "42"], stdout=f, check=True)
        os.replace(sql + ".tmp", sql)
    out.append(Config("real", "sqlite3", "%dk rows" % (rows // 1000), 1, 0,
                      ["sqlite3", "-bail", ":memory:"], stdin=sql, kind="sqlite"))
    n = 20000 if quick else 200000
    out.append(Config("real", "redis", "%dk req x7" % (n // 1000), 1, 0,
                      ["redis-benchmark", "-h", "127.0.0.1", "-q", "--csv",
                       "-n", str(n), "-P", "32", "-c", "8", "-r", "200000",
                       "-d", "256", "-t", "set,get,lpush,lpop,sadd,hset,incr"],
                      kind="redis"))
    for c in out:
        c.runs_per_rep = REAL_QUICK_RUNS if quick else 1
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


def spawn_wait(argv, env, timeout, stdin=None, stdout=subprocess.PIPE):
    """Run argv; return (rc, wall seconds, ru_maxrss KiB, stdout, stderr)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    errf = tempfile.TemporaryFile()
    outf = tempfile.TemporaryFile() if stdout == subprocess.PIPE else stdout
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, stdin=fin, stdout=outf, stderr=errf)
        killer = threading.Timer(timeout, lambda: p.kill())
        killer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
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
        return rc, wall, ru.ru_maxrss, out, err
    finally:
        if stdin:
            fin.close()
        errf.close()
        if stdout == subprocess.PIPE:
            outf.close()


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


def run_micro(cfg, alloc, timeout):
    rc, wall, rss, out, err = spawn_wait(cfg.argv, alloc_env(alloc), timeout)
    if preload_failed(err):
        return Outcome(err="preload failed: " + err.strip().splitlines()[0][:100])
    if rc != 0:
        return Outcome(err=describe_rc(rc, err))
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
    with tempfile.TemporaryDirectory(prefix="sefer-redis-") as d:
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", d,
             "--daemonize", "no", "--loglevel", "warning",
             "--protected-mode", "yes"],
            env=alloc_env(alloc), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
            rc, wall, _, out, err = spawn_wait(argv, alloc_env(Alloc(
                "glibc", None, "", "")), timeout)
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


def run_real(cfg, alloc, timeout, expect):
    if cfg.kind == "redis":
        return run_redis(cfg, alloc, timeout)
    extra = {"PYTHONMALLOC": "malloc"} if cfg.kind == "python" else {}
    rc, wall, rss, out, err = spawn_wait(cfg.argv, alloc_env(alloc, extra),
                                         timeout, stdin=cfg.stdin)
    if preload_failed(err):
        return Outcome(err="preload failed")
    if rc != 0:
        return Outcome(err=describe_rc(rc, err))
    key = cfg.key
    if key in expect and expect[key] != out:
        return Outcome(err="output differs from the first allocator's")
    expect.setdefault(key, out)
    return Outcome(wall, rss)


def fmt_rate(v):
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return "%.3g%s" % (v / div, suf)
    return "%.3g" % v


def fmt_rss(kb):
    if kb is None:
        return "?"
    return "%.1f" % (kb / 1024.0) if kb < 1024 * 1024 else "%.2fG" % (kb / 1048576.0)


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
# The rows issue 10 sets targets on (Documentation/benchmarks.rst, "Reading the tables").
NEW_WORKLOADS = ("larson-rounds", "randpos", "threadgen", "bignum", "largewin")
# Rows added after issue 10 set its targets: in every table, in no throughput target (the issue
# names "existing" rows and the five above), listed under the targets with their ratios.
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
    lines = ["### Targets (sefer / mimalloc, issue 10)", "",
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


COLORS = {"sefer": "#d62728", "glibc": "#7f7f7f", "mimalloc": "#1f77b4",
          "jemalloc": "#2ca02c", "tcmalloc": "#ff7f0e"}


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
        hpanels.append(("peak RSS at the most threads (t=%d)" % tmax, xl, rowsn))
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
                        color=COLORS.get(a.name),
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
                ax.barh(y, x - 1.0, h, left=1.0, color=COLORS.get(a), hatch=hatch,
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

    h = [Patch(color=COLORS.get(a.name)) for a in allocs]
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


# ------------------------------------------------------------ main
def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rst-summary":
        rst_summary(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--png":
        return 0 if png_from_csv(sys.argv[2], sys.argv[3]) else 1
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
    args = ap.parse_args()
    PEER_DIRS.extend(os.path.abspath(d) for d in args.peer_dir)

    wanted = [a for a in args.alloc.split(",") if a]
    if args.headline and not wanted:
        wanted = ["sefer", "glibc", "mimalloc"]
    allocs, missing = discover(args.sefer, wanted)
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
        reps = args.reps or 5  # QUICK too: with 3, two-thread rows on 2 vCPUs swung by 30%
        configs = micro_configs(args.bindir, threads, QUICK if args.quick else FULL,
                                not args.quick, args.only)
        if not args.no_real:
            configs += real_configs(args.bindir, args.quick, args.only)
            for n, why in MISSING_PROGS:
                print("bench: MISSING %s: %s" % (n, why), file=sys.stderr)
            missing += MISSING_PROGS
    if not configs:
        sys.exit("bench: nothing selected")

    timeout_micro = 30 if args.quick else 90
    timeout_real = 60 if args.quick else 180
    total = reps * sum(c.runs_per_rep for c in configs) * len(allocs)
    print("bench: %d configurations x %d allocators (%s) x %d repetitions = %d runs;"
          " threads %s" % (len(configs), len(allocs), ", ".join(a.name for a in allocs),
                           reps, total, ",".join(map(str, threads))), flush=True)
    runs, expect = {}, {}
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
    meta = [("date", time.strftime("%Y-%m-%d %H:%M %Z")),
            ("machine", machine_info()),
            ("mode", "%s, %d repetitions%s, median reported, threads %s"
             % ("QUICK" if args.quick else "full", reps,
                " (real programs: %d runs each, %d in all)" % (max_runs, reps * max_runs)
                if max_runs > 1 else "",
                ",".join(map(str, threads)))),
            ("run time", "%.0f s" % elapsed),
            ("load average", "%.2f at start, %.2f at end (anything else running "
             "on the machine skews the figures)" % (load0, os.getloadavg()[0]))]
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
