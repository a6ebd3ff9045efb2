#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make bench-lua: the Lua workloads of examples/lua/bench under three allocators.

    run.py --hosts DIR [--runs N] [--out DIR]

  sefer     DIR/sefer-lua: the amalgamation compiled in, a sefer heap per lua_State, the
            heap destroyed at close (per-object frees skipped)
  glibc     DIR/sefer-lua-libc: the same host on realloc/free (glibc)
  mimalloc  DIR/sefer-lua-libc with libmimalloc.so.2 preloaded

Each workload runs N times per allocator, interleaved (run 1 of every allocator, then run 2,
...), and the median wall time and median peak RSS (VmHWM, which the host prints at exit
under SEFER_LUA_TIMES=1: ru_maxrss would count this script's own pages from before exec) are
reported;
each run's stdout (the workload's checksum) must be the same under every allocator. Then the
teardown of a state holding 1M live objects: the time of lua_close (plus the heap destroy)
that the host prints under SEFER_LUA_TIMES=1, for sefer with the heap destroyed, sefer with
per-object frees (SEFER_LUA_CLOSE=free), glibc and mimalloc.

Writes OUT/lua-latest.md and OUT/lua-latest.csv (the columns of bench/results/latest.csv) and
prints the tables.
"""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCTREE = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
WORKLOADS = [  # name, script, argument
    ("binary_trees", "binary_trees.lua", "16"),
    ("strings", "strings.lua", "3000"),
    ("table_churn", "table_churn.lua", "1500000"),
    ("growth", "growth.lua", "4000000"),
]
TEARDOWN_N = "1000000"
ALLOCS = ["sefer", "glibc", "mimalloc"]
CSV_HEAD = ("section,bench,param,threads,pin,allocator,metric,median,min,max,runs,peak_rss_kb,"
            "ratio_mimalloc,ratio_glibc,rss_ratio_mimalloc,rss_ratio_glibc,status")


def host_cmd(hosts, alloc):
    """(program, extra environment) of an allocator."""
    if alloc.startswith("sefer"):
        return os.path.join(hosts, "sefer-lua"), {}
    env = {"LD_PRELOAD": MIMALLOC} if alloc == "mimalloc" else {}
    return os.path.join(hosts, "sefer-lua-libc"), env


def run_one(argv, extra_env):
    """(wall seconds, peak RSS KiB, stdout, stderr, exit status) of one run of argv."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "SEFER_LUA_CLOSE", "SEFER_LUA_TIMES", "SEFER_SHOW_STATS"):
        env.pop(k, None)
    env.update(extra_env)
    rfd, wfd = os.pipe()
    efd_r, efd_w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.chdir(HERE)
        os.dup2(wfd, 1)
        os.dup2(efd_w, 2)
        for fd in (rfd, wfd, efd_r, efd_w):
            os.close(fd)
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(wfd)
    os.close(efd_w)
    out = err = b""
    # the outputs are small (a checksum, a timing line): read them after each other
    with os.fdopen(rfd, "rb") as f:
        out = f.read()
    with os.fdopen(efd_r, "rb") as f:
        err = f.read()
    _, status, _ = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    m = re.search(r"peak RSS (\d+) KiB", err.decode())
    return wall, int(m.group(1)) if m else None, out.decode(), err.decode(), \
        os.waitstatus_to_exitcode(status)


def version_of(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                              text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            model = m.group(1) if m else model
    except OSError:
        pass
    return "%s, %d CPUs, Linux %s" % (model, os.cpu_count(), platform.release())


def fmt_s(v):
    return "%.3f s" % v if v >= 1 else "%.1f ms" % (v * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(MIMALLOC):
        sys.exit("bench-lua: %s missing (scripts/install-deps)" % MIMALLOC)
    start = time.monotonic()
    load0 = os.getloadavg()[0]

    # ---- workloads: wall time and peak RSS
    res = {}  # (bench, alloc) -> list of (wall, rss)
    outputs = {}
    for r in range(a.runs):
        for name, script, param in WORKLOADS:
            for alloc in ALLOCS:
                prog, env = host_cmd(a.hosts, alloc)
                env["SEFER_LUA_TIMES"] = "1"
                wall, rss, out, err, st = run_one([prog, script, param], env)
                if st != 0 or rss is None:
                    sys.exit("bench-lua: %s %s failed (%d): %s" % (alloc, name, st, err[-500:]))
                if outputs.setdefault(name, out) != out:
                    sys.exit("bench-lua: %s under %s printed %r, not %r"
                             % (name, alloc, out, outputs[name]))
                res.setdefault((name, alloc), []).append((wall, rss))
        print("bench-lua: run %d of %d done" % (r + 1, a.runs), file=sys.stderr)

    # ---- teardown of 1M live objects: lua_close (+ destroy) as the host times it
    tear_variants = [("sefer", "sefer heap destroyed", {"SEFER_LUA_TIMES": "1"}),
                     ("sefer-free", "sefer, per-object frees",
                      {"SEFER_LUA_TIMES": "1", "SEFER_LUA_CLOSE": "free"}),
                     ("glibc", "glibc free per object", {"SEFER_LUA_TIMES": "1"}),
                     ("mimalloc", "mimalloc free per object", {"SEFER_LUA_TIMES": "1"})]
    tear, destroy = {}, {}
    for r in range(a.runs):
        for alloc, _, extra in tear_variants:
            prog, env = host_cmd(a.hosts, alloc)
            env = dict(env, **extra)
            wall, rss, out, err, st = run_one([prog, "teardown.lua", TEARDOWN_N], env)
            m = re.search(r"close ([0-9.]+) ms \(lua_close [0-9.]+, heap destroy ([0-9.]+)\)",
                          err)
            if st != 0 or not m:
                sys.exit("bench-lua: teardown under %s failed (%d): %s" % (alloc, st, err[-300:]))
            tear.setdefault(alloc, []).append((float(m.group(1)) / 1e3, rss))
            destroy.setdefault(alloc, []).append(float(m.group(2)) / 1e3)

    # ---- tables
    def med(xs):
        return statistics.median(xs)

    rows, rss_rows, csv = [], [], [CSV_HEAD]
    for name, _, param in WORKLOADS:
        t = {al: med([w for w, _ in res[(name, al)]]) for al in ALLOCS}
        m = {al: med([x for _, x in res[(name, al)]]) for al in ALLOCS}
        cells, rss_cells = [], []
        for al in ALLOCS:
            walls = [w for w, _ in res[(name, al)]]
            cells.append("%s (%.2f / %.2f)" % (fmt_s(t[al]), t["mimalloc"] / t[al],
                                               t["glibc"] / t[al]))
            rss_cells.append("%.1f MiB (%.2f / %.2f)" % (m[al] / 1024, m[al] / m["mimalloc"],
                                                         m[al] / m["glibc"]))
            csv.append("lua,%s,%s,1,0,%s,seconds,%.6g,%.6g,%.6g,%d,%d,%.4f,%.4f,%.4f,%.4f,ok" % (
                name, param, al, t[al], min(walls), max(walls), len(walls), m[al],
                t["mimalloc"] / t[al], t["glibc"] / t[al], m[al] / m["mimalloc"],
                m[al] / m["glibc"]))
        rows.append("| %s %s | %s |" % (name, param, " | ".join(cells)))
        rss_rows.append("| %s %s | %s |" % (name, param, " | ".join(rss_cells)))
    tt = {al: med([w for w, _ in tear[al]]) for al, _, _ in tear_variants}
    tear_rows = []
    for al, label, _ in tear_variants:
        ws = [w for w, _ in tear[al]]
        rss = med([x for _, x in tear[al]])
        tear_rows.append("| %s | %s | %s | %.2f | %.2f | %.1f MiB |" % (
            label, fmt_s(tt[al]), fmt_s(med(destroy[al])) if al.startswith("sefer") else "-",
            tt["mimalloc"] / tt[al], tt["glibc"] / tt[al], rss / 1024))
        csv.append("lua,teardown,%s,1,0,%s,close_seconds,%.6g,%.6g,%.6g,%d,%d,%.4f,%.4f,,,ok" % (
            TEARDOWN_N, al, tt[al], min(ws), max(ws), len(ws), rss,
            tt["mimalloc"] / tt[al], tt["glibc"] / tt[al]))

    describe = subprocess.run(["git", "-C", SRCTREE, "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip()
    md = """# sefer-lua benchmark results (make bench-lua)

- date: %s
- machine: %s
- runs: %d per allocator, interleaved; median reported
- run time: %d s; load average %.2f at start, %.2f at end
- allocators: sefer (%s, amalgamation of configs/vendor_defconfig compiled into the host, a
  heap per lua_State), glibc (%s, the same host with realloc/free), mimalloc
  (%s, that host with libmimalloc.so.2 preloaded); Lua %s (liblua5.4)

Workloads (examples/lua/bench/*.lua, argument after the name) print a checksum, the same
under every allocator.

### Wall time (median; speed-up vs mimalloc / glibc in parentheses: above 1.00 is faster)

| workload | sefer | glibc | mimalloc |
|---|---:|---:|---:|
%s

### Peak RSS (VmHWM, median; ratio to mimalloc / glibc: below 1.00 is smaller)

| workload | sefer | glibc | mimalloc |
|---|---:|---:|---:|
%s

Teardown of a state holding %s live objects (teardown.lua: half small tables, half short
strings): the time lua_close takes, plus sefer_heap_destroy's for sefer (the host's
SEFER_LUA_TIMES=1 figures; medians of each). Speed-up against mimalloc / glibc.

| teardown | close time | of which heap destroy | vs mimalloc | vs glibc | peak RSS |
|---|---:|---:|---:|---:|---:|
%s
""" % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), machine(),
       a.runs, time.monotonic() - start, load0, os.getloadavg()[0], describe,
       version_of("libc6"), version_of("libmimalloc2.0"), version_of("liblua5.4-0"),
       "\n".join(rows), "\n".join(rss_rows), TEARDOWN_N, "\n".join(tear_rows))
    print(md)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "lua-latest.md"), "w") as f:
            f.write(md)
        with open(os.path.join(a.out, "lua-latest.csv"), "w") as f:
            f.write("\n".join(csv) + "\n")
        print("bench-lua: wrote %s/lua-latest.md and lua-latest.csv" % a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
