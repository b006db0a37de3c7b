#!/usr/bin/env python3
"""Every table and plot of docs/ from a device's runs of record (bench/suite.sh writes them).

  python3 bench/report.py bench/results/h100 --docs docs     rewrite the generated tables in
                                                             docs/*.md and the plots in docs/img/
  python3 bench/report.py bench/results/h100                 print the tables
  python3 bench/report.py bench/results/h100 --docs docs --check
                                                             exit 1 if the docs are not what the
                                                             results give (nothing written)

A generated table sits in a doc between `<!-- BEGIN table:DEVICE-NAME -->` and
`<!-- END table:DEVICE-NAME -->` (DEVICE: the results folder's name, e.g. h100); a marker
naming no table this script makes is an error. Plots go to DOCS/img/DEVICE_NAME.png; without
matplotlib (Debian: python3-matplotlib) they are skipped with a message and the tables are
still written.

Reads CSV files only, and fails (exit status 1, naming the file and line) on any result row
with verified=0, and on a measurement file without a verified column. Files whose rows are
not gpuagg results carry no verified column, each for its reason (FILES below): the oracle's
sweep (an unverified sweep query is also written to default.csv as system oracle-sweep,
verified=0), the PyTorch peers (peers.py asserts its own sums; suite.sh keeps no file from a
failed run), the replay (tuner_eval's output) and the per-block search space (each of its
configurations must have a verified row in space.csv). Missing files or rows make their
tables say "not measured", never "pass".
"""
import argparse
import csv
import math
import os
import re
import sys
from collections import defaultdict

# file -> (what it holds, the suite part that writes it, how its rows are verified)
FILES = {
    "default.csv": ("every timed query of the default call and the oracle", "uniform, skew, host, cold", "column"),
    "sweep.csv": ("the oracle's sweep: every configuration's median", "uniform, skew", "via default.csv"),
    "peers.csv": ("PyTorch in the same lease", "peers", "peers.py"),
    "baselines.csv": ("sort + reduce_by_key, sort-then-atomics", "baselines", "column"),
    "values.csv": ("int64 and double values", "values", "column"),
    "space.csv": ("section 3's full evaluation, one verified row per configuration", "space", "column"),
    "search_space_full.csv": ("section 3's full evaluation, one row per block: tuner_eval's input", "space",
                              "via space.csv"),
    "tuner_eval.csv": ("the replay of search_space_full.csv", "replay", "replay"),
    "tuner_ablation.csv": ("the replay of each extension alone and of the default without each", "replay", "replay"),
    "tuned_live.csv": ("the live tuner against exhaustive search", "live", "column"),
    "tuned_live_filled.csv": ("the same, reference after 48 warm blocks", "live-filled", "column"),
    "tuned_queries.csv": ("six queries sharing one winners file", "live-queries", "column"),
    "fill.csv": ("one query per SHARED configuration, every block", "fill", "column"),
    "fill_blocks.csv": ("the same, one row per block", "fill", "via fill.csv"),
    "composite.csv": ("the default call and the oracle with two uint32 key columns, keys(a, b), spread over 32 bits "
                      "(distribution uniform) and of narrow ranges (narrow)", "composite",
                      "column"),
    "composite_one.csv": ("the single uint32 key's default call at the composite part's group counts, a query after "
                          "each of the pairs' (the pairs' reference; distribution: the pairs' beside which it ran)",
                          "composite", "column"),
    "scattered.csv": ("the default call and the oracle on one uint32 key column spread over 32 bits",
                      "scattered", "column"),
    "wide.csv": ("the default call with two uint64 key columns (the key dictionary), device and pinned input",
                 "wide", "column"),
    "tpch.csv": ("TPC-H Q1 (tpch_q1_bench) at SF 10 and SF 100, device, pinned and pageable input", "tpch", "column"),
    "tpch_pyarrow.csv": ("TPC-H Q1 in pyarrow on the host's cores over the same columns", "tpch", "column"),
    "multi_device.csv": ("several devices alone and together (multi_device_bench): on h100 the GPU and the CPU "
                         "(PoCL) on host input; on h100x2 and h200x2 two GPUs on device, pinned and pageable input",
                         "none: bench/multi_device_bench, docs/multi_device.md", "column"),
    "profile_kernels.csv": ("Nsight Compute counters of the CUDA twin and of PyTorch's kernels", "profile",
                            "column (twin rows)"),
}
# Files in a results folder that no table reads (kept for other tools).
OTHER_FILES = {
    "suite.log": ("the suite's log", "every part"),
    "plan_sweep.csv": ("the oracle's sweeps bench/plan_data.py wrote this device's plan_data.hpp entry from",
                       "uniform, skew (an earlier run of record's sweep.csv); on h100 also scattered: groupby_bench "
                       "--keys scattered --groups-log2 0:26:2 --systems oracle --sweep-reps 2 --reps 1 --sweep-csv"),
    "plan_sweep_direct.csv": ("the oracle's sweep of SHARED with direct addressing asked, on uniform keys: the "
                              "entry's direct configurations (bench/plan_data.py --direct)", "direct"),
    "plan_direct.csv": ("the direct sweep's oracle queries, each with direct_addressing 1 (the sweep addressed "
                        "its tables directly)", "direct"),
    "composite_sweep.csv": ("the oracle's sweep with two uint32 key columns: the scattered-keys configurations "
                            "measured on 8-byte key words (plan/tuning.hpp)", "composite"),
    "search_space.csv": ("the earlier recording of the spaces (8 blocks per configuration), for tuner_eval",
                         "none (git history has its command)"),
    "profile_reference.csv": ("the OpenCL run the CUDA twin is compared with", "profile"),
    "profile_reference_peers.csv": ("PyTorch in the reference run's lease", "profile"),
    "profile_twin_runs.csv": ("the CUDA twin's own timings and checks", "profile"),
    "profile_skew.txt": ("the twin under Nsight Compute on skewed keys", "profile"),
}

TARGET_ROWS = 27
MEMORY_CEILING = 3012 / 8  # G tuples/s: the H100's device memory copy (docs/benchmarks.md), 8 bytes a tuple
NOT_MEASURED = "not measured"


class Unverified(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Reading


class Results:
    def __init__(self, folder):
        self.folder = folder
        self.device = os.path.basename(os.path.normpath(folder))
        self.errors = []
        self.cache = {}

    def path(self, name):
        return os.path.join(self.folder, name)

    def has(self, name):
        return os.path.exists(self.path(name))

    def rows(self, name):
        """The rows of a file, checked by its rule; [] when it does not exist."""
        if name in self.cache:
            return self.cache[name]
        if not self.has(name):
            self.cache[name] = []
            return []
        with open(self.path(name), newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
        rule = FILES[name][2]
        if rule.startswith("column"):
            if "verified" not in header:
                self.errors.append(f"{self.path(name)}: no verified column (a measurement file must have one)")
            for i, r in enumerate(rows):
                if rule == "column (twin rows)" and r.get("source") != "twin":
                    continue  # PyTorch's kernels: peers.py checks its own sums
                if "verified" in header and r.get("verified") != "1":
                    what = ", ".join(f"{k}={r[k]}" for k in ("system", "phase", "groups_log2", "groups", "distribution",
                                                            "input", "strategy", "rep") if r.get(k) not in (None, ""))
                    self.errors.append(f"{self.path(name)} line {i + 2}: verified={r.get('verified')!r} ({what})")
        self.cache[name] = rows
        return rows


def median(values):
    """groupby_bench's median: the upper middle of an even count."""
    v = sorted(values)
    return v[len(v) // 2] if v else None


def true_median(values):
    v = sorted(values)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


def fmt(x, digits=3):
    """A rate or ratio with about three significant digits."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.{digits}f}"


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def config_of(r, strategy="strategy", wg="work_groups_per_cu", size="work_group_size"):
    # Direct addressing over the key column's exact range, where the plan took it.
    direct = "direct, " if r.get("direct_addressing") == "1" else ""
    return f"{direct}{r[strategy]} {r[wg]}x{r[size]}"


# ---------------------------------------------------------------------------------------------
# The default path (default.csv, sweep.csv, peers.csv)


class DefaultRun:
    def one_key(self, g, dist="uniform"):
        """The single key's default at 2^g groups beside the pairs of `dist`: timed in their turns
        where it was (its rows carry the pairs' distribution), else in the composite part's own
        command (distribution uniform), else the uniform part's."""
        return (self.composite_one.get((dist, g)) or self.composite_one.get(("uniform", g))
                or self.get("device", "uniform", g, "default"))

    def __init__(self, res):
        self.res = res
        rows = res.rows("default.csv")
        self.rows_log2 = max((round(math.log2(int(r["rows"]))) for r in rows), default=None)
        self.rows = [r for r in rows if self.rows_log2 is not None and round(math.log2(int(r["rows"]))) == self.rows_log2]
        self.queries = defaultdict(list)  # (input, distribution, groups_log2, system, phase) -> rows
        for r in self.rows:
            self.queries[(r["input"], r["distribution"], int(r["groups_log2"]), r["system"], r["phase"])].append(r)
        # (distribution, groups_log2) -> warm rows of keys(a, b): "uniform", columns spread over
        # 32 bits; "narrow", columns of narrow ranges (groupby_bench --keys two-narrow)
        self.composite = defaultdict(list)
        self.composite_oracle = defaultdict(list)
        for r in self.warm_rows("composite.csv"):
            key = (r["distribution"], int(r["groups_log2"]))
            if r["system"] == "default":
                self.composite[key].append(r)
            elif r["system"] == "oracle":
                self.composite_oracle[key].append(r)
        # (distribution, groups_log2) -> warm rows of the single key's default measured beside the
        # pairs of that distribution (composite_one.csv): the pairs' reference of the same turns
        self.composite_one = defaultdict(list)
        for r in self.warm_rows("composite_one.csv"):
            if r["system"] == "default":
                self.composite_one[(r["distribution"], int(r["groups_log2"]))].append(r)
        self.scattered = defaultdict(list)  # (system, groups_log2) -> warm rows, keys spread over 32 bits
        for r in self.warm_rows("scattered.csv"):
            self.scattered[(r["system"], int(r["groups_log2"]))].append(r)
        self.wide = defaultdict(list)  # (input, groups_log2) -> warm rows of keys(a, b), two uint64 columns
        for r in self.warm_rows("wide.csv"):
            if r["system"] == "default":
                self.wide[(r["input"], int(r["groups_log2"]))].append(r)
        self.tpch = defaultdict(list)  # (scale, input) -> timed rows
        for r in res.rows("tpch.csv"):
            self.tpch[(int(r["scale"]), r["input"])].append(r)
        self.peers = defaultdict(dict)  # system -> groups_log2 -> G tuples/s
        for r in res.rows("peers.csv"):
            if r.get("groups", "").isdigit():
                self.peers[r["system"]][round(math.log2(int(r["groups"])))] = float(r["gtuples_per_s"])

    def warm_rows(self, name):
        """The warm queries of results file `name` over this run's row count (default.csv's)."""
        if self.rows_log2 is None:
            return []
        return [r for r in self.res.rows(name)
                if r["phase"] == "warm" and round(math.log2(int(r["rows"]))) == self.rows_log2]

    def get(self, input_, dist, g, system, phase="warm"):
        return self.queries.get((input_, dist, g, system, phase), [])

    def rate(self, rows):
        """G tuples/s of the median wall time."""
        if not rows:
            return None
        return int(rows[0]["rows"]) / median([float(r["wall_ms"]) for r in rows]) / 1e6

    def best(self, rows):
        return max((float(r["wall_gtuples"]) for r in rows), default=None)

    def wall_ms(self, rows):
        return median([float(r["wall_ms"]) for r in rows]) if rows else None

    def groups_log2(self, input_, dist):
        return sorted({g for (i, d, g, s, p) in self.queries if i == input_ and d == dist and p == "warm"})

    def plan(self, rows):
        if not rows:
            return "-"
        r = rows[len(rows) // 2]
        return config_of(r)


def table_default(run):
    gs = run.groups_log2("device", "uniform")
    if not gs:
        return None
    out = []
    for g in gs:
        d, o = run.get("device", "uniform", g, "default"), run.get("device", "uniform", g, "oracle")
        rd, ro = run.rate(d), run.rate(o)
        unique, dense = run.peers["torch_unique_index_add"].get(g), run.peers["torch_index_add_dense"].get(g)
        est = median([float(r["estimate_ratio"]) for r in d]) if d else None
        kernels = int(d[0]["rows"]) / median([float(r["kernel_ms"]) for r in d]) / 1e6 if d else None
        out.append([f"2^{g}", d[0]["groups"] if d else (o[0]["groups"] if o else "-"), run.plan(d), fmt(rd),
                    fmt(run.best(d)), fmt(kernels), fmt(ro), fmt(rd / ro) if rd and ro else "-", fmt(est),
                    fmt(unique), fmt(dense), fmt(rd / unique) if rd and unique else "-",
                    fmt(rd / dense) if rd and dense else "-"])
    return table(["groups", "distinct keys", "default's plan (last block)", "default, median", "default, best",
                  "default, kernels only", "oracle, median", "default / oracle", "estimate / true groups", "torch unique + index_add",
                  "torch index_add (dense keys)", "default / torch unique", "default / torch dense"], out)


def table_cold(run):
    gs = sorted({g for (i, d, g, s, p) in run.queries if p.startswith("cold")})
    if not gs:
        return None
    out = []
    for g in gs:
        def ms(phase):
            rows = run.get("device", "uniform", g, "default", phase)
            return fmt(run.wall_ms(rows)) if rows else NOT_MEASURED
        empty = run.get("device", "uniform", g, "default", "cold-empty")
        out.append([f"2^{g}", fmt(run.wall_ms(run.get("device", "uniform", g, "default"))), ms("first"),
                    ms("cold-disk"), ms("cold-programs"), ms("cold-empty"),
                    empty[0]["programs_built"] if empty else "-",
                    fmt(float(empty[0]["host_programs_ms"])) if empty else "-"])
    return table(["groups", "warm, median", "first of its shape", "cold, caches on disk", "cold, program binaries only",
                  "cold, every cache empty", "programs built (empty)", "program lookups, ms (empty)"], out)


def table_inputs(run, inputs, dists, with_input):
    out = []
    for input_ in inputs:
        for dist in dists:
            for g in run.groups_log2(input_, dist):
                d, o = run.get(input_, dist, g, "default"), run.get(input_, dist, g, "oracle")
                rd, ro = run.rate(d), run.rate(o)
                est = median([float(r["estimate_ratio"]) for r in d]) if d else None
                out.append(([input_] if with_input else []) + [dist, f"2^{g}", run.plan(d), fmt(rd), fmt(run.best(d)),
                                                               fmt(ro), fmt(rd / ro) if rd and ro else "-", fmt(est)])
    if not out:
        return None
    return table((["input"] if with_input else []) + ["keys", "groups", "default's plan (last block)", "default, median",
                                                      "default, best", "oracle, median", "default / oracle",
                                                      "estimate / true groups"], out)


def signed_bytes(n):
    """'+ 1.5 MiB', '- 20 KiB': a difference of byte counts in the largest unit that keeps it >= 1."""
    sign, n = ("-" if n < 0 else "+"), abs(n)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{sign} {fmt(n / size)} {unit}"
    return f"{sign} {n} B"


def table_bytes(groups):
    """Bytes of the hash table the true group count needs (plan.hpp: load factor 0.5, a power of
    two of at least 16 buckets and the EMPTY_KEY bucket; 12 bytes a bucket for a uint32 key and
    one 64-bit sum, 16 in the interleaved layout above 2^23 buckets)."""
    wanted = max(math.ceil(groups / 0.5), 16)
    capacity = 1 << (wanted - 1).bit_length()
    return (capacity + 1) * (16 if capacity > (1 << 23) else 12)


def targets(run):
    """[(target, case, measured, required, verdict)]."""
    out = []
    even = list(range(0, 29, 2))
    five = [4, 10, 16, 20, 24]

    def ratio_row(target, case, num, den, need, what):
        if num is None or den is None:
            out.append((target, case, NOT_MEASURED, need_text(need), NOT_MEASURED))
        else:
            r = num / den
            out.append((target, case, f"{r:.3f}x ({what(num, den)})", need_text(need), "pass" if r >= need else "FAIL"))

    def need_text(need):
        return f">= {need:g}x"

    rates = lambda a, b: f"{fmt(a)} / {fmt(b)} G/s"  # noqa: E731
    t1 = "1. default >= 0.8x oracle"
    for g in even:
        ratio_row(t1, f"uniform 2^{g}", run.rate(run.get("device", "uniform", g, "default")),
                  run.rate(run.get("device", "uniform", g, "oracle")), 0.8, rates)
    for dist in ("zipf", "heavy", "sorted", "periodic"):
        if dist == "periodic" and not run.groups_log2("device", dist):
            continue  # the periodic part was not run
        for g in five:
            ratio_row(t1, f"{dist} 2^{g}", run.rate(run.get("device", dist, g, "default")),
                      run.rate(run.get("device", dist, g, "oracle")), 0.8, rates)
    t2 = "2. default vs torch unique + index_add"
    for g in even:
        ratio_row(t2, f"uniform 2^{g}", run.rate(run.get("device", "uniform", g, "default")),
                  run.peers["torch_unique_index_add"].get(g), 3.0 if g <= 24 else 1.0, rates)
    t3 = "3. cold query"
    for g in (4, 16, 24):
        warm = run.wall_ms(run.get("device", "uniform", g, "default"))
        disk = run.wall_ms(run.get("device", "uniform", g, "default", "cold-disk"))
        empty = run.wall_ms(run.get("device", "uniform", g, "default", "cold-empty"))
        if warm is None or disk is None:
            out.append((t3, f"2^{g}, caches on disk", NOT_MEASURED, "<= warm + 50 ms", NOT_MEASURED))
        else:
            out.append((t3, f"2^{g}, caches on disk", f"{fmt(disk)} ms (warm {fmt(warm)})", f"<= {fmt(warm + 50)} ms",
                        "pass" if disk <= warm + 50 else "FAIL"))
        if empty is None:
            out.append((t3, f"2^{g}, every cache empty", NOT_MEASURED, "<= 2000 ms", NOT_MEASURED))
        else:
            out.append((t3, f"2^{g}, every cache empty", f"{fmt(empty)} ms", "<= 2000 ms",
                        "pass" if empty <= 2000 else "FAIL"))
    t4 = "4. host input: default >= 0.9x oracle"
    for input_ in ("pinned", "pageable"):
        for g in five:
            ratio_row(t4, f"{input_} 2^{g}", run.rate(run.get(input_, "uniform", g, "default")),
                      run.rate(run.get(input_, "uniform", g, "oracle")), 0.9, rates)
        # Skewed keys where the host's estimate extrapolates its sample (suite part host-skew).
        for dist in ("zipf", "heavy", "periodic"):
            if dist == "periodic" and not run.groups_log2(input_, dist):
                continue
            for g in (16, 20, 24):
                ratio_row(t4, f"{input_} {dist} 2^{g}", run.rate(run.get(input_, dist, g, "default")),
                          run.rate(run.get(input_, dist, g, "oracle")), 0.9, rates)
    t5 = "5. peak device memory <= input + 2x table"
    for dist, gs in (("uniform", even), ("zipf", five), ("heavy", five), ("sorted", five), ("periodic", five)):
        if dist == "periodic" and not run.groups_log2("device", dist):
            continue
        for g in gs:
            d = run.get("device", dist, g, "default")
            if not d:
                out.append((t5, f"{dist} 2^{g}", NOT_MEASURED, "-", NOT_MEASURED))
                continue
            # peak_device_bytes is what the query allocates; the input (the caller's columns)
            # is on the device beside it.
            held = max(int(r["peak_device_bytes"]) for r in d)
            bound = 2 * table_bytes(int(d[0]["groups"]))
            out.append((t5, f"{dist} 2^{g}", f"input {signed_bytes(held)}",
                        f"<= input + {signed_bytes(bound)[2:]}", "pass" if held <= bound else "FAIL"))
    t6 = "6. two key columns >= 0.8x one"
    for dist, label in (("uniform", "spread columns"), ("narrow", "narrow columns")):
        if dist == "narrow" and not any(d == dist for d, _ in run.composite):
            continue
        for g in (10, 16, 20, 24):
            ratio_row(t6, f"{label} 2^{g}", run.rate(run.composite.get((dist, g), [])),
                      run.rate(run.one_key(g, dist)), 0.8, rates)
    t7 = "7. TPC-H Q1, SF 100"
    dev = run.tpch.get((100, "device"), [])
    if dev:
        ms = median([float(r["wall_ms"]) for r in dev])
        out.append((t7, "device input", f"{fmt(ms)} ms", "<= 10 ms", "pass" if ms <= 10 else "FAIL"))
    else:
        out.append((t7, "device input", NOT_MEASURED, "<= 10 ms", NOT_MEASURED))
    pinned = run.tpch.get((100, "pinned"), [])
    if pinned:
        ms = median([float(r["wall_ms"]) for r in pinned])
        copy = median([float(r["copy_ms"]) for r in pinned])
        out.append((t7, "pinned input / column copy", f"{ms / copy:.3f}x ({fmt(ms)} / {fmt(copy)} ms)", "<= 1.1x",
                    "pass" if ms <= 1.1 * copy else "FAIL"))
    else:
        out.append((t7, "pinned input / column copy", NOT_MEASURED, "<= 1.1x", NOT_MEASURED))
    return out


def table_composite(run, dist="uniform"):
    gs = sorted(g for d, g in run.composite if d == dist)
    if not gs:
        return None
    out = []
    for g in gs:
        two, one = run.composite[(dist, g)], run.one_key(g, dist)
        scattered = run.scattered.get(("default", g), [])
        r2, r1, ro, rs = (run.rate(two), run.rate(one), run.rate(run.composite_oracle.get((dist, g), [])),
                          run.rate(scattered))
        out.append([f"2^{g}", two[0]["groups"], run.plan(two), fmt(r2), fmt(run.best(two)), fmt(ro),
                    fmt(r2 / ro) if ro and r2 else "-", fmt(r1), fmt(r2 / r1) if r1 and r2 else "-", fmt(rs),
                    fmt(r2 / rs) if rs and r2 else "-", fmt(median([float(r["estimate_ratio"]) for r in two]))])
    return table(["groups", "distinct keys", "default's plan (last block)", "keys(a, b), median", "keys(a, b), best",
                  "keys(a, b), oracle", "default / oracle", "one key, median", "two / one",
                  "one scattered key, median", "two / scattered", "estimate / true groups"], out)


def table_scattered(run):
    gs = sorted({g for (system, g) in run.scattered})
    if not gs:
        return None
    out = []
    for g in gs:
        d, o = run.scattered.get(("default", g), []), run.scattered.get(("oracle", g), [])
        dense = run.get("device", "uniform", g, "default")
        rd, ro, rdense = run.rate(d), run.rate(o), run.rate(dense)
        out.append([f"2^{g}", run.plan(d), fmt(rd), fmt(run.best(d)), run.plan(o), fmt(ro),
                    fmt(rd / ro) if rd and ro else "-", fmt(rdense), fmt(rd / rdense) if rd and rdense else "-"])
    return table(["groups", "default's plan (last block)", "default, median", "default, best", "oracle's configuration",
                  "oracle, median", "default / oracle", "dense keys' default, median", "scattered / dense"], out)


def table_wide(run):
    if not run.wide:
        return None
    out = []
    for (input_, g) in sorted(run.wide, key=lambda k: (k[0] != "device", k[1])):
        wide, one = run.wide[(input_, g)], run.get(input_, "uniform", g, "default")
        r2, r1 = run.rate(wide), run.rate(one)
        out.append([input_, f"2^{g}", wide[0]["groups"], run.plan(wide), fmt(r2), fmt(run.best(wide)),
                    fmt(r1) if r1 else "-", fmt(r2 / r1) if r1 and r2 else "-"])
    return table(["input", "groups", "distinct keys", "plan over the ids (last block)", "two uint64 keys, median",
                  "two uint64 keys, best", "one uint32 key, median", "wide / one"], out)


def table_tpch(run):
    if not run.tpch:
        return None
    arrow = defaultdict(list)
    for r in run.res.rows("tpch_pyarrow.csv"):
        arrow[int(r["scale"])].append(float(r["wall_ms"]))
    out = []
    for (scale, input_) in sorted(run.tpch, key=lambda k: (k[0], ["device", "pinned", "pageable"].index(k[1]))):
        rows = run.tpch[(scale, input_)]
        ms = median([float(r["wall_ms"]) for r in rows])
        kernel = median([float(r["kernel_ms"]) for r in rows])
        copy = median([float(r["copy_ms"]) for r in rows]) if input_ == "pinned" else None
        gb = int(rows[0]["column_bytes"]) / 1e9
        out.append([str(scale), rows[0]["rows"], f"{gb:.2f}", input_, fmt(ms),
                    fmt(min(float(r["wall_ms"]) for r in rows)), fmt(kernel), fmt(copy) if copy else "-",
                    f"{ms / copy:.3f}x" if copy else "-",
                    f"{rows[0]['strategy']} {rows[0]['work_groups_per_cu']}x{rows[0]['work_group_size']}",
                    rows[0]["blocks"], fmt(median(arrow[scale]) / ms) if arrow.get(scale) else "-"])
    return table(["SF", "lineitems", "GB of columns", "input", "wall ms, median", "wall ms, best", "kernels ms",
                  "column copy ms", "wall / copy", "plan (first row)", "blocks", "pyarrow / gpuagg"], out)


def table_tpch_pyarrow(run):
    rows = run.res.rows("tpch_pyarrow.csv")
    if not rows:
        return None
    by = defaultdict(list)
    for r in rows:
        by[(int(r["scale"]), r["device"])].append(float(r["wall_ms"]))
    return table(["SF", "pyarrow on", "wall ms, median", "wall ms, best"],
                 [[str(sf), t, fmt(median(v)), fmt(min(v))] for (sf, t), v in sorted(by.items())])


def table_multi_device(res):
    rows = res.rows("multi_device.csv")
    if not rows:
        return None
    by = defaultdict(lambda: {"both": [], "singles": []})
    for r in rows:
        entry = by[(r["input"], int(r["groups"]))]
        if " + " in r["device_set"]:
            entry["both"].append(r)
        else:
            entry["singles"].append(r)
    forms = "merge" in rows[0]
    order = ["device", "pinned-parts", "pinned", "pageable"]
    phases = "merge_ms" in rows[0]
    first = "first_query_ms" in rows[0]
    out = []
    for (input_, groups), d in sorted(by.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order
                                                                  else len(order), kv[0][1])):
        singles = d["singles"]
        if not d["both"] or not singles:
            continue
        best = min(singles, key=lambda r: float(r["wall_median_ms"]))
        rest = sorted((r for r in singles if r is not best), key=lambda r: float(r["wall_median_ms"]))
        for both in d["both"]:
            out.append(multi_device_line(input_, groups, both, best, rest, first, phases, forms))
    header = ["input", "groups", "best single device, ms", "other device, ms", "together, ms",
              "together vs best single"]
    if forms:
        header[4:4] = ["merge"]
    if first:
        header += ["together, the shape's first query (every member in it), ms"]
    header += ["rows per device"]
    if phases:
        header += ["together: set-up / run / merge / finalize, ms", "best single: set-up / run / finalize, ms"]
    return table(header, out)


def multi_device_line(input_, groups, both, best, rest, first, phases, forms):
    """One line of the multi-device table: the set together (in one merge form) beside the best
    single device and the others."""
    per = [int(x) for x in both["rows_per_device"].split(";")]
    line = [input_, f"2^{lg(groups)}", f"{fmt(float(best['wall_median_ms']))} ({best['device_set']})",
            ", ".join(f"{fmt(float(r['wall_median_ms']))}" for r in rest),
            fmt(float(both["wall_median_ms"])),
            f"{float(best['wall_median_ms']) / float(both['wall_median_ms']):.2f}x"]
    if forms:
        line[4:4] = [both["merge"]]
    if first:
        line += [fmt(float(both["first_query_ms"])) if both["first_query_ms"] else "-"]
    line += [" / ".join(f"{100 * p / sum(per):.1f}%" for p in per)]
    if phases:
        line += [" / ".join(fmt(float(both[k])) for k in ("members_setup_ms", "members_run_ms", "merge_ms",
                                                          "finalize_ms")),
                 " / ".join(fmt(float(best[k])) for k in ("members_setup_ms", "members_run_ms",
                                                          "finalize_ms"))]
    return line


def table_targets(run):
    rows = targets(run)
    note = ""
    if run.rows_log2 is not None and run.rows_log2 != TARGET_ROWS:
        note = (f"\n\nThe targets are stated for 2^{TARGET_ROWS} rows; this run has 2^{run.rows_log2} "
                f"(default.csv), so its verdicts are not the targets'.")
    return table(["target", "case", "measured", "required", "result"], [list(r) for r in rows]) + note


def table_targets_summary(run):
    rows = targets(run)
    by = defaultdict(lambda: [0, 0, 0])
    order = []
    for t, _, _, _, verdict in rows:
        if t not in by:
            order.append(t)
        by[t][0 if verdict == "pass" else 1 if verdict == "FAIL" else 2] += 1
    out = [[t, sum(by[t]), by[t][0], by[t][1], by[t][2]] for t in order]
    total = [sum(c) for c in zip(*(by[t] for t in order))]
    out.append(["all", sum(total), *total])
    return table(["target", "cases", "pass", "fail", "not measured"], out)


# ---------------------------------------------------------------------------------------------
# Other gpuagg_bench runs


def lg(groups):
    return round(math.log2(int(groups)))


def table_baselines(res, run):
    rows = res.rows("baselines.csv")
    if not rows:
        return None
    best = defaultdict(dict)  # groups_log2 -> system -> best query rate
    for r in rows:
        g, s, v = lg(r["groups"]), r["system"], float(r["gtuples_per_s_query"])
        best[g][s] = max(best[g].get(s, 0.0), v)
    out = []
    for g in sorted(best):
        reduce_ = best[g].get("sort_reduce")
        atomics = {s: v for s, v in best[g].items() if s.startswith("sort_atomics")}
        top = max(atomics, key=atomics.get) if atomics else None
        d = run.rate(run.get("device", "uniform", g, "default"))
        out.append([f"2^{g}", fmt(reduce_), f"{fmt(atomics[top])} ({top[len('sort_atomics_'):]})" if top else "-",
                    fmt(d), fmt(d / reduce_) if d and reduce_ else "-"])
    return table(["groups", "sort + reduce_by_key", "sort, then atomics (best variant)", "default (default.csv)",
                  "default / sort + reduce_by_key"], out)


def table_values(res):
    rows = res.rows("values.csv")
    if not rows:
        return None
    best = {}
    for r in rows:
        if r.get("mode") not in ("query", "blocks"):
            continue
        key = (r["value_type"], lg(r["groups"]), r["system"])
        v = float(r["gtuples_per_s_query"])
        if key not in best or v > best[key][0]:
            best[key] = (v, r)
    out = [[vt, f"2^{g}", f"{s} {r['work_groups_per_cu']}x{r['work_group_size']}", fmt(v)]
           for (vt, g, s), (v, r) in sorted(best.items())]
    return table(["values", "groups", "system (configuration)", "whole query, G tuples/s"], out)


def space_best(res):
    """(strategy, groups_log2) -> the row of the configuration with the shortest mean block."""
    best = {}
    for r in res.rows("space.csv"):
        if r.get("mode") != "blocks":
            continue
        key = (r["system"], lg(r["groups"]))
        if key not in best or float(r["block_mean_us"]) < float(best[key]["block_mean_us"]):
            best[key] = r
    return best


def check_space(res):
    """Every configuration of search_space_full.csv must have a verified row in space.csv."""
    if not res.has("search_space_full.csv"):
        return
    verified = {(r["system"].upper().replace("_", ""), str(lg(r["groups"])), r["work_groups_per_cu"], r["work_group_size"])
                for r in res.rows("space.csv") if r.get("verified") == "1"}
    seen = set()
    with open(res.path("search_space_full.csv"), newline="") as f:
        for i, r in enumerate(csv.DictReader(f)):
            key = (r["strategy"].upper().replace("_", ""), r["groups_log2"], r["work_groups_per_cu"], r["work_group_size"])
            if key in seen:
                continue
            seen.add(key)
            if key not in verified:
                res.errors.append(f"{res.path('search_space_full.csv')} line {i + 2}: configuration {key} has no "
                                  f"verified row in space.csv")


def check_fill(res):
    if not res.has("fill_blocks.csv"):
        return
    verified = {(r["work_groups_per_cu"], r["work_group_size"]) for r in res.rows("fill.csv") if r.get("verified") == "1"}
    with open(res.path("fill_blocks.csv"), newline="") as f:
        for i, r in enumerate(csv.DictReader(f)):
            if (r["work_groups_per_cu"], r["work_group_size"]) not in verified:
                res.errors.append(f"{res.path('fill_blocks.csv')} line {i + 2}: configuration "
                                  f"{r['work_groups_per_cu']}x{r['work_group_size']} has no verified row in fill.csv")
                return


def table_space(res):
    best = space_best(res)
    if not best:
        return None
    strategies = [s for s in ("workgroup_local", "shared", "independent") if any(k[0] == s for k in best)]
    names = {"workgroup_local": "WORKGROUPLOCAL", "shared": "SHARED", "independent": "INDEPENDENT"}
    out = []
    for g in sorted({k[1] for k in best}):
        row = [f"2^{g}"]
        for s in strategies:
            r = best.get((s, g))
            row.append(f"{fmt(float(r['gtuples_per_s_blocks']))} ({r['work_groups_per_cu']}x{r['work_group_size']})"
                       if r else "-")
        out.append(row)
    return table(["groups"] + [f"{names[s]}, G tuples/s per block (fastest configuration)" for s in strategies], out)


def table_bounds(res):
    rows = res.rows("profile_kernels.csv")
    if not rows:
        return None
    out = []
    for r in rows:
        twin = r["source"] == "twin"
        if not twin and not (r["system"] == "torch_index_add_dense" and r["kernel"] == "indexFuncLargeIndex"):
            continue
        # The strategy the default runs there: WORKGROUPLOCAL while the table fits local memory.
        if twin and r["system"].startswith("shared") == (int(r["groups_log2"]) <= 10):
            continue
        name = (r["system"].replace("workgroup_local", "WORKGROUPLOCAL").replace("shared", "SHARED")
                .replace("+hash", ", hashing").replace("+direct", ", direct") + f" {r['config']}") if twin else \
            "torch index_add (dense)"
        stalls = ", ".join(s for s in (r["top_stall_1"], r["top_stall_2"]) if s)
        out.append((int(r["groups_log2"]), not twin, [f"2^{r['groups_log2']}", name, fmt(float(r["duration_ms"])),
                                                      fmt(float(r["dram_bytes_per_row"])), r["l2_hit_pct"] + "%",
                                                      r["l2_throughput_pct"] + "%", r["dram_throughput_pct"] + "%",
                                                      r["issue_active_pct"] + "%", stalls]))
    out.sort(key=lambda x: (x[0], x[1]))
    return table(["groups", "kernel", "ms", "DRAM bytes a row", "L2 hit", "L2 busy", "DRAM busy", "issue busy",
                  "top stalls"], [r for _, _, r in out])


# ---------------------------------------------------------------------------------------------
# The tuner (tuner_eval.csv, tuned_*.csv, fill_blocks.csv)

SCENARIOS = [("paper s=0", "Algorithm 1, s = 0"), ("paper s=0.06,p=1.07", "Algorithm 1, s = 0.06, p = 1.07"),
             ("default (refined)", "**default** (refined)"),
             ("default, neighbour entry", "default, starting from the nearest group count's cache entry")]


def table_replay(res, all_strategies):
    rows = res.rows("tuner_eval.csv")
    if not rows:
        return None
    out = []
    for mode, label in SCENARIOS:
        cases = [r for r in rows if r["mode"] == mode and (r["strategy"] == "ALL") == all_strategies]
        if not cases:
            continue

        def part(half):
            return [r for r in cases if half in ("*", r["half"])]

        def within(cs):
            return sum(float(r["quality"]) <= 1.01 for r in cs) / len(cs)

        def worst(cs):
            return max(float(r["quality"]) for r in cs)

        def effort(cs):
            return true_median([float(r["effort"]) for r in cs])

        a, b = part("A"), part("B")
        found = sum(float(r["quality"]) <= 1.0 + 1e-12 for r in cases) / len(cases)
        row = [label, len(cases), pct(found), f"{pct(within(cases))} ({pct(within(a))} / {pct(within(b))})",
               f"{worst(cases):.3f}x ({worst(a):.3f}x / {worst(b):.3f}x)"]
        if all_strategies:
            blocks = [float(r["exploration_blocks"]) for r in cases]
            row += [f"{100 * effort(cases):.2f}%", fmt(true_median(blocks)), f"{max(blocks):.0f}"]
        else:
            row += [fmt(true_median([float(r["cost_blocks"]) for r in cases])),
                    f"{100 * effort(cases):.2f}% ({100 * effort(a):.2f}% / {100 * effort(b):.2f}%)"]
        out.append(row)
    head = ["scenario", "group counts" if all_strategies else "cases", "optimum found", "within 1% (A / B)",
            "worst (A / B)"]
    head += ["median effort", "median blocks to converge", "most blocks"] if all_strategies else \
        ["median cost (blocks)", "median effort (A / B)"]
    return table(head, out)


def table_ablation(res):
    rows = res.rows("tuner_ablation.csv")
    if not rows:
        return None
    by = defaultdict(dict)
    order = []
    for r in rows:
        if r["variant"] not in by:
            order.append(r["variant"])
        by[r["variant"]][r["half"]] = r
    replay = res.rows("tuner_eval.csv")
    out = []

    def summary(cases):
        a, b = [r for r in cases if r["half"] == "A"], [r for r in cases if r["half"] == "B"]
        within = lambda cs: sum(float(r["quality"]) <= 1.01 for r in cs) / len(cs)  # noqa: E731
        worst = lambda cs: max(float(r["quality"]) for r in cs)  # noqa: E731
        effort = lambda cs: true_median([float(r["effort"]) for r in cs])  # noqa: E731
        return (f"{pct(within(cases))} ({pct(within(a))} / {pct(within(b))})",
                f"{worst(cases):.3f}x ({worst(a):.3f}x / {worst(b):.3f}x)",
                f"{100 * effort(cases):.2f}% ({100 * effort(a):.2f}% / {100 * effort(b):.2f}%)")

    for mode, label in (("paper s=0.06,p=1.07", "Algorithm 1, s = 0.06, p = 1.07"), ("default (refined)", "**default**")):
        cases = [r for r in replay if r["mode"] == mode and r["strategy"] != "ALL"]
        if cases:
            out.append([label, *summary(cases)])
    for v in order:
        h = by[v]
        if not all(k in h for k in ("all", "A", "B")):
            continue
        name = (v.replace("paper +", "Algorithm 1 +").replace("default -", "default without")
                .replace("all three new", "paired, first-block and quiet window").replace("rejection", "early rejection"))
        out.append([name,
                    f"{pct(float(h['all']['within_1pct']))} ({pct(float(h['A']['within_1pct']))} / "
                    f"{pct(float(h['B']['within_1pct']))})",
                    f"{float(h['all']['worst']):.3f}x ({float(h['A']['worst']):.3f}x / {float(h['B']['worst']):.3f}x)",
                    f"{100 * float(h['all']['median_effort']):.2f}% ({100 * float(h['A']['median_effort']):.2f}% / "
                    f"{100 * float(h['B']['median_effort']):.2f}%)"])
    return table(["variant", "within 1% (A / B)", "worst (A / B)", "median effort (A / B)"], out)


def table_live(res):
    out = []
    for name, reference in (("tuned_live.csv", "4 warm blocks"), ("tuned_live_filled.csv", "48 warm blocks")):
        by = defaultdict(list)
        for r in res.rows(name):
            by[int(r["groups_log2"])].append(r)
        for g in sorted(by):
            rs = by[g]
            winners = []
            for r in rs:
                w = f"{r['winner_strategy']} {r['winner_wgpcu']}x{r['winner_wgs']}"
                if w not in winners:
                    winners.append(w)
            q = [float(r["quality"]) for r in rs]
            conf = [int(r["configurations_tried"]) for r in rs]
            blocks = [int(r["exploration_blocks"]) for r in rs]
            out.append([f"2^{g}", reference, ", ".join(winners), ", ".join(f"{x:.3f}" for x in q),
                        f"{min(conf)} to {max(conf)}" if min(conf) != max(conf) else str(conf[0]),
                        f"{min(blocks)} to {max(blocks)}" if min(blocks) != max(blocks) else str(blocks[0])])
    if not out:
        return None
    return table(["groups", "exhaustive reference after", "winners (one per run)", "quality per run",
                  "configurations", "exploration blocks"], out)


def table_queries(res):
    rows = res.rows("tuned_queries.csv")
    if not rows:
        return None
    by = defaultdict(list)
    for r in rows:
        by[int(r["groups_log2"])].append(r)
    n = max(len(v) for v in by.values())
    out = []
    for g in sorted(by):
        rs = sorted(by[g], key=lambda r: int(r["rep"]))
        cells = []
        for r in rs:
            cache, blocks = r["cache"].strip('"').replace("resumed from a provisional entry", "resumed"), \
                r["exploration_blocks"]
            if cache == "hit":
                cells.append("hit")
            else:
                cells.append(f"{cache}, {'converged' if r['converged'] == '1' else 'cut short'} after {blocks}")
        cells += ["-"] * (n - len(cells))
        last = rs[-1]
        out.append([f"2^{g}"] + cells + [f"{last['winner_strategy']} {last['winner_wgpcu']}x{last['winner_wgs']}, "
                                         f"{float(last['quality']):.3f}"])
    return table(["groups"] + [f"query {i + 1}" for i in range(n)] + ["last winner, quality"], out)


def fill_means(res):
    by = defaultdict(list)
    for r in res.rows("fill_blocks.csv"):
        by[(r["work_groups_per_cu"], r["work_group_size"])].append((int(r["block"]), float(r["aggregate_ns"])))
    return {k: [t for _, t in sorted(v)] for k, v in by.items()}


def table_fill(res):
    means = fill_means(res)
    if not means:
        return None
    groups = res.rows("fill.csv")
    g = f"2^{lg(groups[0]['groups'])}" if groups else "?"
    width = 8
    n = max(len(v) for v in means.values())
    out = []
    for (w, s), ts in means.items():
        cells = [fmt(sum(ts[i:i + width]) / len(ts[i:i + width]) / 1e3) for i in range(0, len(ts), width)]
        out.append([f"SHARED {w}x{s}"] + cells)
    return table([f"{g} groups"] + [f"blocks {i}-{min(i + width, n) - 1}" for i in range(0, n, width)], out)


def table_files(res):
    out = []
    for name in sorted(os.listdir(res.folder)):
        if name in FILES:
            what, part, _ = FILES[name]
        elif name in OTHER_FILES:
            what, part = OTHER_FILES[name]
        else:
            what, part = "not a run of record this script knows", "-"
        path = res.path(name)
        if os.path.isdir(path):
            if name == "held_out":
                what, part = "recorded search spaces no tuner parameter was chosen on (its README.md)", "space"
            out.append([f"`{name}/`", what, f"{len(os.listdir(path))} files", part])
            continue
        lines = sum(1 for _ in open(path, errors="replace")) - (1 if name.endswith(".csv") else 0)
        out.append([f"`{name}`", what, str(lines), part])
    return table(["file", "what", "rows (lines)", "suite part"], out)


# ---------------------------------------------------------------------------------------------
# Plots


def plots(res, run, img):
    try:
        import matplotlib
    except ImportError:
        print("report.py: plots skipped: no matplotlib (Debian: python3-matplotlib)")
        return []
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "gpuagg"
    import matplotlib.pyplot as plt

    os.makedirs(img, exist_ok=True)
    written = []

    def save(fig, name):
        path = os.path.join(img, f"{res.device}_{name}.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110, metadata={"Software": None})
        plt.close(fig)
        written.append(path)

    device_name = run.rows[0]["device"] if run.rows else res.device
    gs = run.groups_log2("device", "uniform")
    if gs:
        fig, ax = plt.subplots(figsize=(9, 6))
        for system, style, label in (("default", "o-", "gpuagg, the default call (median)"),
                                     ("oracle", "s--", "gpuagg, the oracle (median)")):
            xs = [g for g in gs if run.get("device", "uniform", g, system)]
            ax.plot(xs, [run.rate(run.get("device", "uniform", g, system)) for g in xs], style, label=label)
        for dist, style in (("zipf", "v:"), ("heavy", "^:"), ("sorted", "d:")):
            xs = run.groups_log2("device", dist)
            if xs:
                ax.plot(xs, [run.rate(run.get("device", dist, g, "default")) for g in xs], style,
                        label=f"default call, {dist} keys")
        for system, style in (("torch_unique_index_add", "k-."), ("torch_index_add_dense", "k:")):
            xs = sorted(run.peers[system])
            if xs:
                ax.plot(xs, [run.peers[system][g] for g in xs], style, label="PyTorch " + system[6:])
        base = defaultdict(float)
        for r in res.rows("baselines.csv"):
            if r["system"] == "sort_reduce":
                base[lg(r["groups"])] = max(base[lg(r["groups"])], float(r["gtuples_per_s_query"]))
        if base:
            xs = sorted(base)
            ax.plot(xs, [base[g] for g in xs], "x--", color="grey", label="sort + reduce_by_key (baselines.csv)")
        ax.axhline(MEMORY_CEILING, color="grey", lw=1)
        ax.text(0, MEMORY_CEILING * 1.1, "device memory copy (8 B a tuple)", color="grey", fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel("groups (log2)")
        ax.set_ylabel("G tuples/s (whole query, wall time)")
        ax.set_title(f"SELECT g, sum(v) GROUP BY g, 2^{run.rows_log2} uint32 tuples on the device, {device_name}",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "default")

    best = space_best(res)
    styles = {"workgroup_local": ("WORKGROUPLOCAL", "o-"), "shared": ("SHARED", "s-"),
              "independent": ("INDEPENDENT", "^-")}
    if best:
        fig, ax = plt.subplots(figsize=(7, 4))
        for system, (label, style) in styles.items():
            xs = sorted(g for (s, g) in best if s == system)
            ys = [int(best[(system, g)]["work_groups_per_cu"]) * int(best[(system, g)]["work_group_size"]) for g in xs]
            if xs:
                ax.plot(xs, ys, style, label=label)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("groups (log2)")
        ax.set_ylabel("threads per compute unit, fastest configuration")
        ax.set_title("Optimal number of threads (space.csv)", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
        save(fig, "optimal_threads")

        target = [r for r in res.rows("space.csv") if r["system"] == "shared" and lg(r["groups"]) == 24
                  and r.get("mode") == "blocks"]
        if target:
            times = {(int(r["work_groups_per_cu"]), int(r["work_group_size"])): float(r["block_mean_us"]) for r in target}
            fastest = min(times.values())
            per_cu = sorted({k[0] for k in times})
            sizes = sorted({k[1] for k in times})
            grid = [[times.get((w, s), float("nan")) / fastest for s in sizes] for w in per_cu]
            fig, ax = plt.subplots(figsize=(7, 6))
            im = ax.imshow([[min(v, 4.0) for v in row] for row in grid], cmap="Greys", origin="lower", aspect="auto")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                                color="white" if v > 2.5 else "black", weight="bold" if v == 1.0 else "normal")
            ax.set_xticks(range(len(sizes)), sizes)
            ax.set_yticks(range(len(per_cu)), per_cu)
            ax.set_xlabel("work items per work group")
            ax.set_ylabel("work groups per compute unit")
            ax.set_title("SHARED, 2^24 groups: mean block time / fastest (capped at 4)", fontsize=10)
            fig.colorbar(im)
            save(fig, "heatmap_shared_2p24")

    replay = res.rows("tuner_eval.csv")
    if replay:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
        for mode, style, name in (("default (refined)", "-", "refined"), ("paper s=0.06,p=1.07", "--", "Algorithm 1")):
            for (strategy, marker), colour in zip((("SHARED", "s"), ("INDEPENDENT", "^"), ("WORKGROUPLOCAL", "o")),
                                                  ("C0", "C1", "C2")):
                mine = sorted((int(r["groups_log2"]), r) for r in replay if r["mode"] == mode and r["strategy"] == strategy)
                top.plot([g for g, _ in mine], [float(r["quality"]) for _, r in mine], marker + style, color=colour,
                         label=f"{strategy}, {name}", alpha=1.0 if style == "-" else 0.6)
                bottom.plot([g for g, _ in mine], [float(r["cost_blocks"]) for _, r in mine], marker + style,
                            color=colour, alpha=1.0 if style == "-" else 0.6)
        top.axhline(1.01, color="grey", ls=":", lw=1)
        top.set_ylabel("quality (found / optimum)")
        top.set_yscale("log")
        top.set_title("The tuner replayed on search_space_full.csv (solid: refined, dashed: Algorithm 1)", fontsize=9)
        top.legend(fontsize=7, ncol=2)
        bottom.set_ylabel("cost (blocks)")
        bottom.set_yscale("symlog")
        bottom.set_ylim(bottom=0)
        bottom.set_xlabel("groups (log2)")
        for axis in (top, bottom):
            axis.grid(True, alpha=0.3)
        save(fig, "tuner_quality_cost")
    return written


# ---------------------------------------------------------------------------------------------
# Docs


def make_tables(res):
    run = DefaultRun(res)
    check_space(res)
    check_fill(res)
    makers = {
        "files": lambda: table_files(res),
        "default": lambda: table_default(run),
        "cold": lambda: table_cold(run),
        "skew": lambda: table_inputs(run, ["device"], ["zipf", "heavy", "sorted"], False),
        "host": lambda: table_inputs(run, ["pinned", "pageable"], ["uniform", "zipf", "heavy"], True),
        "periodic": lambda: table_inputs(run, ["device", "pinned", "pageable"], ["periodic"], True),
        "composite": lambda: table_composite(run),
        "composite-narrow": lambda: table_composite(run, "narrow"),
        "scattered": lambda: table_scattered(run),
        "wide": lambda: table_wide(run),
        "multi-device": lambda: table_multi_device(res),
        "tpch": lambda: table_tpch(run),
        "tpch-pyarrow": lambda: table_tpch_pyarrow(run),
        "targets-summary": lambda: table_targets_summary(run),
        "targets": lambda: table_targets(run),
        "baselines": lambda: table_baselines(res, run),
        "values": lambda: table_values(res),
        "space": lambda: table_space(res),
        "bounds": lambda: table_bounds(res),
        "replay": lambda: table_replay(res, False),
        "replay-all": lambda: table_replay(res, True),
        "ablation": lambda: table_ablation(res),
        "live": lambda: table_live(res),
        "queries": lambda: table_queries(res),
        "fill": lambda: table_fill(res),
    }
    tables = {}
    for name, make in makers.items():
        text = make()
        parts = {"default": "uniform, peers", "cold": "cold", "skew": "skew", "host": "host",
                 "periodic": "periodic", "composite": "composite", "composite-narrow": "composite", "scattered": "scattered", "tpch": "tpch", "tpch-pyarrow": "tpch",
                 "baselines": "baselines", "values": "values", "space": "space", "bounds": "profile",
                 "replay": "replay", "replay-all": "replay", "ablation": "replay", "live": "live, live-filled", "queries": "live-queries",
                 "fill": "fill"}
        if text is None:
            text = f"Not measured in this run of record (`bench/suite.sh --parts {parts.get(name, name)}`)."
        tables[f"{res.device}-{name}"] = text
    return run, tables


MARKER = re.compile(r"(<!-- BEGIN table:([\w.-]+) -->\n)(.*?)(<!-- END table:\2 -->)", re.S)


def rewrite_docs(docs, device, tables, check):
    changed, placed, errors = [], set(), []
    for name in sorted(os.listdir(docs)):
        if not name.endswith(".md"):
            continue
        path = os.path.join(docs, name)
        text = open(path).read()

        def replace(m):
            key = m.group(2)
            if not key.startswith(device + "-"):
                return m.group(0)
            if key not in tables:
                errors.append(f"{path}: marker table:{key} names no table report.py makes for {device}")
                return m.group(0)
            placed.add(key)
            return m.group(1) + tables[key].rstrip("\n") + "\n" + m.group(4)

        new = MARKER.sub(replace, text)
        for m in re.finditer(r"<!-- (BEGIN|END) table:([\w.-]+) -->", text):
            if text.count(f"<!-- BEGIN table:{m.group(2)} -->") != text.count(f"<!-- END table:{m.group(2)} -->"):
                errors.append(f"{path}: unmatched marker table:{m.group(2)}")
                break
        if new != text:
            changed.append((path, new))
    if not check and not errors:
        for path, new in changed:
            open(path, "w").write(new)
    return [path for path, _ in changed], sorted(set(tables) - placed), errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a device's results folder, e.g. bench/results/h100")
    ap.add_argument("--docs", help="the docs folder whose tables (and img/) to rewrite")
    ap.add_argument("--check", action="store_true", help="with --docs: only say whether the docs are current")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.results):
        sys.exit(f"report.py: {a.results} is not a folder")
    res = Results(a.results)
    run, tables = make_tables(res)
    if res.errors:
        for e in res.errors[:20]:
            print(f"report.py: {e}", file=sys.stderr)
        if len(res.errors) > 20:
            print(f"report.py: ... and {len(res.errors) - 20} more", file=sys.stderr)
        print("report.py: unverified or unverifiable results: nothing written", file=sys.stderr)
        return 1
    if not a.docs:
        for key, text in tables.items():
            print(f"## {key}\n\n{text}\n")
        return 0
    changed, unplaced, errors = rewrite_docs(a.docs, res.device, tables, a.check)
    for e in errors:
        print(f"report.py: {e}", file=sys.stderr)
    if errors:
        return 1
    for key in unplaced:
        print(f"report.py: table:{key} is in no doc (add its markers where it belongs)")
    if a.check:
        for path in changed:
            print(f"report.py: {path} is not what {a.results} gives (python3 bench/report.py {a.results} --docs "
                  f"{a.docs})")
        return 1 if changed else 0
    for path in changed:
        print(f"report.py: rewrote {path}")
    if not a.no_plots:
        for path in plots(res, run, os.path.join(a.docs, "img")):
            print(f"report.py: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
