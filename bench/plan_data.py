#!/usr/bin/env python3
"""Writes a device's entry of the plan's per-device model (include/gpuagg/plan_data.hpp) from
the oracle's recorded sweep (bench/suite.sh: sweep.csv): for every group count, the fastest
configuration of WORKGROUPLOCAL and of SHARED on uniform keys, and on sorted keys (the runs
configurations; where sorted keys were not measured at a group count, the nearest that was).

  bench/plan_data.py bench/results/h100/sweep.csv --name h100 [--write include/gpuagg/plan_data.hpp]

Without --write it prints the entry; with it, it replaces the entry between the markers
"// BEGIN <name>" and "// END <name>" in the header.
"""
import argparse, csv, collections, re, sys

def best(rows, strategy):
    out = {}
    for g in sorted({int(r["groups_log2"]) for r in rows}):
        cands = [r for r in rows if int(r["groups_log2"]) == g and r["strategy"] == strategy]
        if cands:
            b = min(cands, key=lambda r: float(r["median_wall_ms"]))
            out[g] = (int(b["work_groups_per_cu"]), int(b["work_group_size"]))
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
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.sweep)) if r["input"] == a.input]
    uniform = [r for r in rows if r["distribution"] == "uniform"]
    sorted_ = [r for r in rows if r["distribution"] == "sorted"]
    if not uniform: sys.exit("plan_data.py: no uniform rows in " + a.sweep)
    device = uniform[0]["device"]
    wgl, shared = best(uniform, "WORKGROUPLOCAL"), best(uniform, "SHARED")
    wgl_runs, shared_runs = best(sorted_, "WORKGROUPLOCAL"), best(sorted_, "SHARED")
    groups = sorted(shared)
    lines = [f"// {device}: bench/results/{a.name}/sweep.csv, by bench/plan_data.py.",
             f"inline constexpr plan_regime {a.name}[] = {{"]
    last_wgl = (4, 256)
    for i, g in enumerate(groups):
        w = wgl.get(g, last_wgl); last_wgl = w
        s = shared[g]
        wr = nearest({k: v for k, v in wgl_runs.items()}, g, w) if wgl_runs else w
        sr = nearest(shared_runs, g, s)
        bound = 63 if i == len(groups) - 1 else g
        lines.append(f"    {{{bound}, {{{w[0]}, {w[1]}}}, {{{s[0]}, {s[1]}}}, {{{wr[0]}, {wr[1]}}}, {{{sr[0]}, {sr[1]}}}}},")
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
