#!/usr/bin/env python3
"""Writes a device's entry of the plan's per-device model (include/gpuagg/plan_data.hpp) from
a recorded sweep (groupby_bench --sweep-csv; bench/results/<device>/plan_sweep.csv is the one
the shipped entry was written from): for every group count, the configuration of WORKGROUPLOCAL
and of SHARED that is fastest and also good at the neighbouring group counts (best()), on
uniform keys, and on sorted, zipf, heavy-hitter and scattered keys (groupby_bench --keys
scattered; where one was not measured at a group count, the nearest count that was).

  bench/plan_data.py bench/results/h100/plan_sweep.csv --name h100 [--write include/gpuagg/plan_data.hpp]
  bench/plan_data.py bench/results/h200/plan_sweep.csv --name h200 --fill bench/results/h100/plan_sweep.csv

--fill names a sweep of a device of the same architecture whose rows stand in for a key
distribution the main sweep did not measure at all (the entry's comment lists which).
--direct names a sweep of SHARED with direct addressing asked (bench/suite.sh --parts direct:
plan_sweep_direct.csv): at each group count it measured, its uniform rows' best configuration
becomes the regime's direct one where it ran at least 2% faster there than the regime's SHARED
configuration for the hash table (which direct addressing runs otherwise); elsewhere, and
without --direct, {0, 0}. Within 2% the sweep's medians do not tell configurations apart, and a
change there bought nothing measured and risked keys the sweep does not draw (periodic keys at
2^20 groups ran 14% slower on the sweep's 1024x256 than on the hash table's 1024x128). The plan
sizes a direct table of 2^g keys as 2^g buckets of the hash table's bytes, those of the recorded
query's hash table at 2^(g-1) groups: regime g, for even g.

  bench/plan_data.py bench/results/h200/plan_sweep.csv --name h200 --fill bench/results/h100/plan_sweep.csv \
      --direct bench/results/h200/plan_sweep_direct.csv

Without --write it prints the entry; with it, it replaces the entry between the markers
"// BEGIN <name>" and "// END <name>" in the header.
"""
import argparse, csv, collections, re, sys

def times_of(rows, strategy, column):
    """group count -> configuration -> `column` (a median time) of `strategy`'s rows."""
    times = collections.defaultdict(dict)
    for r in rows:
        if r["strategy"] == strategy:
            times[int(r["groups_log2"])][(int(r["work_groups_per_cu"]), int(r["work_group_size"]))] = \
                float(r[column])
    return times

def best(rows, strategy, window=2, column="median_wall_ms"):
    """Per group count, the configuration of `strategy` whose worst ratio (of `column`) to the
    fastest over the measured group counts within `window` powers of two is lowest, ties broken by
    its time at the group count itself: near the optimum many configurations tie within the noise
    of one measurement, and the one that is also good next door is the one a query between them
    meets."""
    times = times_of(rows, strategy, column)
    counts = sorted(times)
    out = {}
    for i, g in enumerate(counts):
        near = [n for n in counts if abs(n - g) <= window]
        candidates = [c for c in times[g] if all(c in times[n] for n in near)] or list(times[g])
        def score(c):
            worst = max(times[n][c] / min(times[n].values()) for n in near if c in times[n])
            return (round(worst, 3), times[g][c])
        out[g] = min(candidates, key=score)
    return out

def nearest(table, g, fallback):
    if not table: return fallback
    return table[min(table, key=lambda k: (abs(k - g), k))]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweep")
    ap.add_argument("--name", required=True)
    ap.add_argument("--input", default="device")
    ap.add_argument("--write")
    ap.add_argument("--fill")
    ap.add_argument("--direct")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.sweep)) if r["input"] == a.input]
    filled = []
    if a.fill:
        have = {r["distribution"] for r in rows}
        extra_rows = [r for r in csv.DictReader(open(a.fill)) if r["input"] == a.input and r["distribution"] not in have]
        filled = sorted({r["distribution"] for r in extra_rows})
        rows += extra_rows
    uniform = [r for r in rows if r["distribution"] == "uniform"]
    by = lambda d: [r for r in rows if r["distribution"] == d]
    if not uniform: sys.exit("plan_data.py: no uniform rows in " + a.sweep)
    device = uniform[0]["device"]
    wgl, shared = best(uniform, "WORKGROUPLOCAL"), best(uniform, "SHARED")
    # Keys in runs (sorted), frequent keys (zipf), one dominant key (heavy): where a distribution
    # was not measured at a group count, the nearest count that was; where not at all, uniform's.
    extra = {d: (best(by(d), "WORKGROUPLOCAL"), best(by(d), "SHARED"))
             for d in ("sorted", "zipf", "heavy", "scattered")}
    direct, direct_times = {}, {}
    if a.direct:
        direct_rows = [r for r in csv.DictReader(open(a.direct))
                       if r["input"] == a.input and r["distribution"] == "uniform"]
        if not direct_rows: sys.exit("plan_data.py: no uniform rows in " + a.direct)
        # By the kernels' time: the configuration changes only the kernels, and the set-up's
        # host work (0.2-0.5 ms) varied between one configuration's queries more than the
        # kernels of the good configurations differ.
        direct = best(direct_rows, "SHARED", column="median_kernel_ms")
        direct_times = times_of(direct_rows, "SHARED", "median_kernel_ms")
    groups = sorted(shared)
    source = a.sweep + "".join(f"; {d} keys from {a.fill}" for d in filled) + \
        (f"; direct addressing from {a.direct}" if a.direct else "")
    lines = [f"// {device}: {source}, by bench/plan_data.py.",
             f"inline constexpr plan_regime {a.name}[] = {{"]
    last_wgl = (4, 256)
    for i, g in enumerate(groups):
        w = wgl.get(g, last_wgl); last_wgl = w
        s = shared[g]
        fields = [w, s]
        for d in ("sorted", "zipf", "heavy"):
            dw, ds = extra[d]
            fields += [nearest(dw, g, w), nearest(ds, g, s)]
        # Scattered keys: {0, 0} (the shuffled keys' configuration) where never measured.
        dw, ds = extra["scattered"]
        fields += [nearest(dw, g, (0, 0)), nearest(ds, g, (0, 0))]
        d = direct.get(g)
        t = direct_times.get(g, {})
        fields.append(d if d and s in t and t[s] >= 1.02 * t[d] else (0, 0))
        bound = 63 if i == len(groups) - 1 else g
        lines.append(f"    {{{bound}, " + ", ".join(f"{{{c[0]}, {c[1]}}}" for c in fields) + "},")
    lines.append("};")
    text = "\n".join(lines)
    if not a.write:
        print(text); return
    header = open(a.write).read()
    pattern = re.compile(rf"(// BEGIN {a.name}\n).*?(\n// END {a.name})", re.S)
    if not pattern.search(header): sys.exit(f"plan_data.py: no BEGIN/END {a.name} markers in {a.write}")
    open(a.write, "w").write(pattern.sub(lambda m: m.group(1) + text + m.group(2), header))
    print(f"wrote {a.name} ({len(groups)} regimes) into {a.write}")

if __name__ == "__main__":
    main()
