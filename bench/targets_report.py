#!/usr/bin/python3
"""The speed targets of the H100 closing run (bench/h100_sweeps.sh 9): a markdown table per
target with the measured figure and pass or fail, and docs/img/h100_targets.png.

Rates are G tuples/s of whole queries of 2^27 tuples: "kernels" over the profiled kernel time
(INITIALIZE + AGGREGATE + MERGE + FINALIZE), "wall" over the host time from the driver's
construction to the result on the device. Hashing is the best of SHARED and WORKGROUPLOCAL.

Needs matplotlib (Debian: python3-matplotlib).
usage: bench/targets_report.py [results_dir] [docs_img_dir] [stage]
(stage: the file prefix, s10 by default; skewed inputs a stage lacks come from s9)
"""
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h100"
IMG = sys.argv[2] if len(sys.argv) > 2 else "docs/img"
STAGE = sys.argv[3] if len(sys.argv) > 3 else "s10"
MEMORY_CEILING = 3012 / 8  # G tuples/s: device memory copy, 8 bytes a tuple


def read(name):
    with open(os.path.join(RESULTS, name)) as f:
        return [r for r in csv.DictReader(f)]


def lg(groups):
    return int(round(math.log2(int(groups))))


def best(rows, system_names, field, distribution=None):
    out = defaultdict(float)
    for r in rows:
        if r["verified"] != "1" or r["system"] not in system_names:
            continue
        if distribution and r["distribution"] != distribution:
            continue
        if r["mode"] not in ("query", "baseline"):
            continue
        value = float(r[field] if r["mode"] == "query" else r["gtuples_per_s_query"])
        out[lg(r["groups"])] = max(out[lg(r["groups"])], value)
    return out


def verdict(measured, needed):
    return "pass" if measured >= needed else "FAIL"


def main():
    uniform = read(f"{STAGE}_targets.csv")
    peers = defaultdict(dict)
    for r in read(f"{STAGE}_peers_gpu.csv"):
        peers[r["system"]][lg(r["groups"])] = float(r["gtuples_per_s"])
    hashed = {"shared", "workgroup_local"}
    hash_k = best(uniform, hashed, "gtuples_per_s_kernels")
    hash_w = best(uniform, hashed, "gtuples_per_s_query")
    direct_k = best(uniform, {"direct"}, "gtuples_per_s_kernels")
    direct_w = best(uniform, {"direct"}, "gtuples_per_s_query")
    sort_reduce = best(uniform, {"sort_reduce"}, "gtuples_per_s_query")
    dense = peers["torch_index_add_dense"]
    unique = peers["torch_unique_index_add"]
    passes = defaultdict(lambda: [0, 0])

    def row(target, g, measured_k, measured_w, needed, needed_w=None):
        needed_w = needed if needed_w is None else needed_w
        ok = measured_k >= needed
        passes[target][0] += ok
        passes[target][1] += 1
        print(f"| {target} | 2^{g} | {needed:.1f} | {measured_k:.1f} {verdict(measured_k, needed)} | "
              f"{needed_w:.1f} | {measured_w:.1f} {verdict(measured_w, needed_w)} |")

    print("| target | groups | needed (kernels) | kernels | needed (wall) | wall |")
    print("| --- | --- | --- | --- | --- | --- |")
    for g in range(0, 29):
        if g <= 10:
            row("1: >= 250", g, max(hash_k[g], direct_k[g]), max(hash_w[g], direct_w[g]), 250)
        row("2a: hashing >= 3x torch_unique", g, hash_k[g], hash_w[g], 3 * unique.get(g, 0))
        row("2b: hashing >= 10x sort+reduce_by_key", g, hash_k[g], hash_w[g], 10 * sort_reduce[g])
        if g <= 20:
            row("2c: hashing >= torch_dense", g, hash_k[g], hash_w[g], dense.get(g, 0))
        row("2d: direct >= torch_dense", g, direct_k[g], direct_w[g], dense.get(g, 0))
    skew = read(f"{STAGE}_skew.csv")
    complete = {(r["distribution"], r["groups"]) for r in skew if r["mode"] == "query"}
    if STAGE != "s9" and os.path.exists(os.path.join(RESULTS, "s9_skew.csv")):
        skew += [r for r in read("s9_skew.csv") if (r["distribution"], r["groups"]) not in complete]
    for dist in ("zipf", "heavy"):
        for name, pick in (("hashing", hashed | {"default"}), ("direct", {"direct"})):
            skewed = best(skew, pick, "gtuples_per_s_kernels", dist)
            flat = best(uniform, pick - {"default"}, "gtuples_per_s_kernels")
            flat_w = best(uniform, pick - {"default"}, "gtuples_per_s_query")
            for g in sorted(skewed):
                row(f"3: {dist} {name} >= uniform / 2", g, skewed[g],
                    best(skew, pick, "gtuples_per_s_query", dist)[g], flat[g] / 2, flat_w[g] / 2)
    print()
    print("| target | group counts passing (kernels) |")
    print("| --- | --- |")
    for target, (ok, n) in passes.items():
        print(f"| {target} | {ok} of {n} |")

    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(9, 5.2))
    xs = list(range(29))
    ax.plot(xs, [hash_k[g] for g in xs], "o-", color="tab:blue", label="gpuagg hashing (kernels)")
    ax.plot(xs, [hash_w[g] for g in xs], "o:", color="tab:blue", alpha=0.6, label="gpuagg hashing (wall)")
    ax.plot(xs, [direct_k[g] for g in xs], "s-", color="tab:green", label="gpuagg direct addressing (kernels)")
    ax.plot(xs, [dense.get(g) for g in xs], "^-", color="tab:red", label="torch index_add dense")
    ax.plot(xs, [unique.get(g) for g in xs], "v-", color="tab:orange", label="torch unique + index_add")
    ax.plot(xs, [sort_reduce[g] for g in xs], "x-", color="tab:gray", label="Boost.Compute sort + reduce_by_key")
    ax.axhline(250, color="black", ls="--", lw=1, label="target 1: 250")
    ax.axhline(MEMORY_CEILING, color="black", ls=":", lw=1, label="device memory copy")
    ax.set_yscale("log")
    ax.set_xlabel("log2(groups)")
    ax.set_ylabel("G tuples/s (2^27 uint32 tuples on the device)")
    ax.set_title("SELECT g, sum(v) GROUP BY g on the H100: gpuagg against its peers, one lease")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "h100_targets.png"), dpi=110)


if __name__ == "__main__":
    main()
