#!/usr/bin/python3
"""Plots and tables of the H100 results in bench/results/h100 for docs/benchmarks.md.

Figures (like the paper's): throughput of the fastest configuration per strategy and baseline
against the group count with the peers and the memory and PCIe ceilings (Figure 2); the
optimal number of threads per compute unit (Figure 3); a thread-configuration heatmap
(Figure 5). Prints a markdown table of G tuples/s and ratios.

Needs matplotlib (Debian: python3-matplotlib). usage: bench/plot_results.py [results_dir] [docs_img_dir]
"""
import csv
import glob
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h100"
IMG = sys.argv[2] if len(sys.argv) > 2 else "docs/img"
# Measured on this H100 with the device kit (see ../shared/device/README.md): device memory copy
# 3012 GB/s, pinned host-to-device 55.3 GB/s; 8 bytes a tuple.
MEMORY_CEILING = 3012 / 8
PCIE_CEILING = 55.3 / 8


def rows(pattern):
    out = []
    for path in sorted(glob.glob(os.path.join(RESULTS, pattern))):
        out += [r for r in csv.DictReader(open(path)) if r.get("verified", "1") == "1"]
    return out


def log2(groups):
    return int(round(math.log2(int(groups))))


def best_by(rows_, key, value):
    best = {}
    for r in rows_:
        k = key(r)
        v = float(r[value])
        if k not in best or v > best[k][0]:
            best[k] = (v, r)
    return best


def main():
    os.makedirs(IMG, exist_ok=True)
    space = rows("space_*.csv") if glob.glob(os.path.join(RESULTS, "space_lo.csv")) else []
    space = [r for r in rows("space_lo.csv") + rows("space_hi.csv")]
    blocks = [r for r in space if r["mode"] == "blocks"]
    queries = [r for r in space if r["mode"] == "query"]
    block_best = best_by(blocks, lambda r: (r["system"], log2(r["groups"])), "gtuples_per_s_blocks")
    query_best = best_by(queries, lambda r: (r["system"], log2(r["groups"])), "gtuples_per_s_query")
    baselines = rows("baselines_*.csv")
    base_best = best_by(baselines, lambda r: ("sort_reduce" if r["system"] == "sort_reduce" else "sort_atomics",
                                              log2(r["groups"])), "gtuples_per_s_query")
    peers = defaultdict(dict)
    for r in csv.DictReader(open(os.path.join(RESULTS, "peers_gpu.csv"))):
        if r["groups"].isdigit():
            peers[r["system"]][log2(r["groups"])] = float(r["gtuples_per_s"])

    # Figure 2: throughput against groups.
    fig, ax = plt.subplots(figsize=(9, 5.5))
    styles = {"workgroup_local": ("WORKGROUPLOCAL", "o-"), "shared": ("SHARED", "s-"),
              "independent": ("INDEPENDENT", "^-"), "direct": ("direct addressing (identity)", "d-")}
    for system, (label, style) in styles.items():
        xs = sorted(g for (s, g) in block_best if s == system)
        ax.plot(xs, [block_best[(system, g)][0] for g in xs], style, label=label + ", AGGREGATE per block")
    for system in ("shared", "direct"):
        xs = sorted(g for (s, g) in query_best if s == system)
        ax.plot(xs, [query_best[(system, g)][0] for g in xs], ":", label=styles[system][0] + ", whole query")
    for system, style in (("sort_reduce", "x--"), ("sort_atomics", "+--")):
        xs = sorted(g for (s, g) in base_best if s == system)
        label = "Boost.Compute sort + reduce_by_key" if system == "sort_reduce" else "sort, then atomics (best)"
        ax.plot(xs, [base_best[(system, g)][0] for g in xs], style, label=label)
    for system, style in (("torch_index_add_dense", "k--"), ("torch_unique_index_add", "k-.")):
        xs = sorted(peers[system])
        ax.plot(xs, [peers[system][g] for g in xs], style, label="PyTorch " + system[6:])
    ax.axhline(MEMORY_CEILING, color="grey", lw=1)
    ax.text(0, MEMORY_CEILING * 1.1, "device memory bandwidth (8 B/tuple)", color="grey", fontsize=8)
    ax.axhline(PCIE_CEILING, color="grey", lw=1, ls="--")
    ax.text(0, PCIE_CEILING * 1.1, "pinned PCIe host-to-device", color="grey", fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("groups (log2)")
    ax.set_ylabel("G tuples/s")
    ax.set_title("SELECT g, sum(v) GROUP BY g, 2^27 uint32 tuples on the device, NVIDIA H100")
    ax.legend(fontsize=7, loc="lower left", ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "h100_throughput.png"), dpi=110)

    # Figure 3: optimal threads per compute unit.
    fig, ax = plt.subplots(figsize=(7, 4))
    for system, (label, style) in styles.items():
        if system == "direct":
            continue
        xs = sorted(g for (s, g) in block_best if s == system)
        ys = [int(block_best[(system, g)][1]["work_groups_per_cu"]) * int(block_best[(system, g)][1]["work_group_size"])
              for g in xs]
        ax.plot(xs, ys, style[0], label=label)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("groups (log2)")
    ax.set_ylabel("threads per compute unit of the fastest configuration")
    ax.set_title("Optimal number of threads, NVIDIA H100")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "h100_optimal_threads.png"), dpi=110)

    # Figure 5: heatmap of SHARED at 2^24 groups, runtime normalized to the fastest.
    target = [r for r in blocks if r["system"] == "shared" and log2(r["groups"]) == 24]
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
        ax.set_title("SHARED, 2^24 groups: AGGREGATE time / fastest (capped at 4)", fontsize=10)
        fig.colorbar(im)
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, "h100_heatmap_shared_2p24.png"), dpi=110)

    # The tuner (tuner_eval's replay of search_space.csv): quality and cost per group count, the
    # default tuner (the refined search) solid, Algorithm 1 as the paper states it dashed.
    eval_path = os.path.join(RESULTS, "tuner_eval.csv")
    if os.path.exists(eval_path):
        rows_by_mode = defaultdict(list)
        for r in csv.DictReader(open(eval_path)):
            if r["strategy"] != "ALL":  # one strategy at a time, as the paper replays them
                rows_by_mode[r["mode"]].append(r)
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
        for mode, style, name in (("default (refined)", "-", "refined"), ("paper s=0.06,p=1.07", "--", "Algorithm 1")):
            cases = rows_by_mode.get(mode, [])
            for (strategy, marker), colour in zip((("SHARED", "s"), ("INDEPENDENT", "^"), ("WORKGROUPLOCAL", "o")),
                                                  ("C0", "C1", "C2")):
                mine = sorted((int(r["groups_log2"]), r) for r in cases if r["strategy"] == strategy)
                label = f"{strategy}, {name}"
                top.plot([g for g, _ in mine], [float(r["quality"]) for _, r in mine], marker + style, color=colour,
                         label=label, alpha=1.0 if style == "-" else 0.6)
                bottom.plot([g for g, _ in mine], [float(r["cost_blocks"]) for _, r in mine], marker + style,
                            color=colour, alpha=1.0 if style == "-" else 0.6)
        top.axhline(1.01, color="grey", ls=":", lw=1)
        top.set_ylabel("quality (found / optimum)")
        top.set_yscale("log")
        top.set_title("The tuner replayed on the H100's search spaces (solid: refined, dashed: Algorithm 1)",
                      fontsize=9)
        top.legend(fontsize=7, ncol=2)
        bottom.set_ylabel("cost (blocks)")
        bottom.set_yscale("symlog")
        bottom.set_ylim(bottom=0)
        bottom.set_xlabel("groups (log2)")
        for axis in (top, bottom):
            axis.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(IMG, "h100_tuner_quality_cost.png"), dpi=110)

    # The table.
    print("| groups | fastest hash strategy (config) | G tuples/s per block | whole query | direct addressing |"
          " torch dense | torch unique | best sort baseline | query / torch unique | query / torch dense |"
          " query / sort baseline |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for g in range(0, 29, 2):
        hashes = [(block_best[(s, g)][0], s) for s in ("shared", "independent", "workgroup_local") if (s, g) in block_best]
        if not hashes:
            continue
        rate, system = max(hashes)
        r = block_best[(system, g)][1]
        query = max([query_best[(s, g)][0] for s in ("shared", "independent", "workgroup_local") if (s, g) in query_best]
                    or [0])
        direct = block_best.get(("direct", g), (0,))[0]
        dense = peers["torch_index_add_dense"].get(g, 0)
        unique = peers["torch_unique_index_add"].get(g, 0)
        base = max(base_best.get(("sort_reduce", g), (0,))[0], base_best.get(("sort_atomics", g), (0,))[0])

        def ratio(a, b):
            return f"{a / b:.1f}x" if a and b else "-"

        print(f"| 2^{g} | {styles[system][0]} {r['work_groups_per_cu']}x{r['work_group_size']} | {rate:.1f} | "
              f"{query:.1f} | {direct:.1f} | {dense or '-'} | {unique or '-'} | "
              f"{f'{base:.2f}' if base else '-'} | {ratio(query, unique)} | {ratio(query, dense)} | {ratio(query, base)} |")


if __name__ == "__main__":
    main()
