#!/usr/bin/env python3
"""Joins gpuagg_bench --blocks-csv files into the search-space file tuner_eval replays, keeping
the hash strategies' spaces only. Files written before the benchmark labelled direct
addressing "DIRECT_<strategy>" carry its blocks under the plain strategy name, after the hash
run of the same strategy; those are recognised by a configuration's first block appearing a
second time for the same (group count, strategy), and dropped.

usage: make_search_space.py OUT.csv IN.csv [IN.csv ...]
"""
import csv
import sys


def main():
    out_path, inputs = sys.argv[1], sys.argv[2:]
    fields = ["device", "distribution", "groups_log2", "strategy", "work_groups_per_cu", "work_group_size", "rep",
              "block", "aggregate_ns"]
    kept = dropped = 0
    with open(out_path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields)
        writer.writeheader()
        for path in inputs:
            seen = set()       # (groups, strategy, config) whose block 0 was read
            direct = set()     # (groups, strategy) whose later rows are direct addressing
            for row in csv.DictReader(open(path)):
                if row["strategy"].startswith("DIRECT_"):
                    dropped += 1
                    continue
                space = (row["groups_log2"], row["strategy"])
                config = space + (row["work_groups_per_cu"], row["work_group_size"])
                if row["block"] == "0":
                    if config in seen:
                        direct.add(space)
                    seen.add(config)
                if space in direct:
                    dropped += 1
                    continue
                writer.writerow({k: row[k] for k in fields})
                kept += 1
    print(f"{out_path}: {kept} blocks kept, {dropped} dropped (direct addressing)")


if __name__ == "__main__":
    main()
