#!/usr/bin/env python3
"""The bookkeeping of run_profile.sh (plain Python, no packages):

  collect.py plan --reference REFERENCE.csv --groups 4,10,16 > plan.txt
      cl_on_cuda's plan: per group count SHARED + hashing and SHARED + direct addressing, and up
      to 2^12 groups WORKGROUPLOCAL + hashing and + direct addressing, each with the thread
      configuration the OpenCL reference run (bench/results/h100/profile_reference.csv) used ('query' rows),
      else 4x256.
  collect.py metrics --available FILE [--drop M1,M2] > metrics.txt
      the wanted ncu metrics, comma-separated, less those ncu refused (--drop); notes on stderr
      the ones `ncu --query-metrics` (FILE) does not list.
  collect.py join --twin twin_runs.csv --twin-ncu ours_raw.csv --peers-ncu peers_raw.csv
                  --ranges peers_ranges.txt --reference REFERENCE --reference-peers REFERENCE_PEERS --rows N -o profile.csv
      one row per kernel and group count: the twin's AGGREGATE (with its own event timing and the
      OpenCL kernel time of the same configuration in the reference run), PyTorch's kernels of each timed peer
      query, and a sum row per peer query; prints a summary table.
"""
import argparse
import csv
import math
import re
import sys

# What run_profile.sh asks ncu for. Names as `ncu --query-metrics` lists them (base name) with
# the rollup ncu reports.
STALLS = ["long_scoreboard", "lg_throttle", "membar", "barrier", "short_scoreboard", "mio_throttle",
          "math_pipe_throttle", "tex_throttle", "drain", "wait", "not_selected", "selected", "no_instruction",
          "branch_resolving", "dispatch_stall", "imc_miss", "misc", "sleeping"]
METRICS = [
    ("duration_ns", "gpu__time_duration.sum"),
    ("dram_read_bytes", "dram__bytes_read.sum"),
    ("dram_write_bytes", "dram__bytes_write.sum"),
    ("l2_hit_pct", "lts__t_sector_hit_rate.pct"),
    ("l2_read_hit_pct", "lts__t_sector_op_read_hit_rate.pct"),
    ("l2_atom_sectors", "lts__t_sectors_op_atom.sum"),
    ("l2_red_sectors", "lts__t_sectors_op_red.sum"),
    ("l2_atom_hit_pct", "lts__t_sector_op_atom_hit_rate.pct"),
    ("l2_red_hit_pct", "lts__t_sector_op_red_hit_rate.pct"),
    ("l2_read_sectors", "lts__t_sectors_op_read.sum"),
    ("l2_write_sectors", "lts__t_sectors_op_write.sum"),
    ("l1_hit_pct", "l1tex__t_sector_hit_rate.pct"),
    ("shared_atom_wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"),
    ("occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("issue_active_pct", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("memory_throughput_pct", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l2_throughput_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l1_throughput_pct", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("instructions", "smsp__inst_executed.sum"),
    ("sm_clock_hz", "sm__cycles_elapsed.avg.per_second"),
    ("registers", "launch__registers_per_thread"),
    ("grid", "launch__grid_size"),
    ("block", "launch__block_size"),
] + [("stall_" + s + "_pct", "smsp__warp_issue_stalled_%s_per_warp_active.pct" % s) for s in STALLS]
ADDITIVE = {"duration_ns", "dram_read_bytes", "dram_write_bytes", "l2_atom_sectors", "l2_red_sectors",
            "l2_read_sectors", "l2_write_sectors", "shared_atom_wavefronts", "instructions"}
# twin (strategy, scheme) -> the reference run's system that ran the same AGGREGATE
REFERENCE_SYSTEM = {("shared", "hash"): "shared", ("workgroup_local", "hash"): "workgroup_local",
              ("workgroup_local", "direct"): "direct", ("shared", "direct"): "direct"}
# The driver's default for direct addressing (section 3.7): WORKGROUPLOCAL while the domain's
# table fits in 48 KiB of local memory (4089 buckets of 12 bytes), SHARED beyond.
DIRECT_LOCAL_MAX = 4089


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def reference_rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def reference_lookup(rows, system, groups, config=None):
    """(config, AGGREGATE ms median) of the reference run's 'query' rows for system and groups; with
    `config`, only that configuration ('blocks' rows if no 'query' row has it)."""
    for mode in ("query", "blocks"):
        found = [r for r in rows if r["system"] == system and int(r["groups"]) == groups and r["mode"] == mode and
                 (config is None or (r["work_groups_per_cu"], r["work_group_size"]) == config)]
        if found:
            ms = sorted(float(r["aggregate_ms"]) for r in found)
            mid = ms[len(ms) // 2] if len(ms) % 2 else 0.5 * (ms[len(ms) // 2 - 1] + ms[len(ms) // 2])
            return (found[0]["work_groups_per_cu"], found[0]["work_group_size"]), mid, mode
    return None, None, None


def cmd_plan(a):
    rows = reference_rows(a.reference)
    print("# groups_log2 strategy scheme work_groups_per_cu work_group_size run_cache (collect.py plan)")
    for g in [int(x) for x in a.groups.split(",")]:
        groups = 1 << g
        runs = [("shared", "hash"), ("shared", "direct")]
        if groups <= DIRECT_LOCAL_MAX:
            runs += [("workgroup_local", "hash"), ("workgroup_local", "direct")]
        for strategy, scheme in runs:
            system = REFERENCE_SYSTEM[(strategy, scheme)]
            if (strategy, scheme) == ("shared", "direct") and groups <= DIRECT_LOCAL_MAX:
                system = "shared"  # the reference's direct ran WORKGROUPLOCAL here: take SHARED's configuration
            config, _, _ = reference_lookup(rows, system, groups)
            w, s = config if config else ("4", "256")
            print(g, strategy, scheme, w, s, 0)


def cmd_metrics(a):
    available = set()
    with open(a.available) as f:
        for line in f:
            word = line.strip().split(" ")[0] if line.strip() else ""
            if re.match(r"^[a-z0-9]+__\w+$", word):
                available.add(word)
    drop = set(a.drop.split(",")) if a.drop else set()
    keep = []
    for _, metric in METRICS:
        base = metric.split(".")[0]
        if metric in drop:
            continue
        if available and base not in available and not base.startswith("launch__"):
            # Only a note: some ratio metrics may be missing from the listing and still work.
            print("collect.py: `ncu --query-metrics` does not list %s" % base, file=sys.stderr)
        keep.append(metric)
    print(",".join(keep))


def read_ncu(path):
    """Rows of `ncu --import R --csv --page raw --print-units base`: dicts of metric -> value."""
    try:
        with open(path, newline="") as f:
            lines = [l for l in f if not l.startswith("==")]
    except OSError:
        return []
    rows = list(csv.DictReader(lines))
    if rows and not rows[0].get("ID", "").strip():
        rows = rows[1:]  # the units row
    out = []
    for r in rows:
        name = r.get("Kernel Name", "")
        rec = {"kernel": re.sub(r"\(.*$", "", name).strip() or name, "kernel_full": name}
        for key, metric in METRICS:
            if metric in r:
                rec[key] = number(r[metric])
        out.append(rec)
    return out


def derive(rec, rows):
    if rec.get("dram_read_bytes") is not None and rec.get("dram_write_bytes") is not None:
        rec["dram_bytes_per_row"] = (rec["dram_read_bytes"] + rec["dram_write_bytes"]) / rows
    if rec.get("duration_ns") is not None:
        rec["duration_ms"] = rec["duration_ns"] / 1e6
        rec["ncu_gtuples_per_s"] = rows / rec["duration_ns"] if rec["duration_ns"] else None
    stalls = [(s, rec.get("stall_" + s + "_pct")) for s in STALLS if s not in ("selected",)]
    stalls = sorted([x for x in stalls if x[1] is not None], key=lambda x: -x[1])
    for i in range(3):
        rec["top_stall_%d" % (i + 1)] = "%s %.0f%%" % stalls[i] if i < len(stalls) else ""


COLUMNS = (["source", "system", "kernel", "groups_log2", "groups", "config", "registers", "grid", "block",
            "twin_ms_median", "twin_ms_best", "twin_gtuples_best", "twin_blocks", "twin_blocks_ms_median", "verified",
            "reference_ms", "reference",
            "twin_over_reference", "duration_ms", "ncu_gtuples_per_s", "dram_read_bytes", "dram_write_bytes",
            "dram_bytes_per_row"] +
           [k for k, _ in METRICS if k not in ("duration_ns", "dram_read_bytes", "dram_write_bytes", "registers",
                                               "grid", "block") and not k.startswith("stall_")] +
           ["top_stall_1", "top_stall_2", "top_stall_3"] + ["stall_" + s + "_pct" for s in STALLS] +
           ["kernel_full"])


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return "%.6g" % v
    return str(v)


def cmd_join(a):
    reference = reference_rows(a.reference)
    out = []
    # The twin: one profiled AGGREGATE per harness run, in order.
    twin = []
    try:
        with open(a.twin) as f:
            twin = list(csv.DictReader(f))
    except OSError:
        print("collect.py: no twin runs (%s)" % a.twin, file=sys.stderr)
    ncu_twin = read_ncu(a.twin_ncu) if a.twin_ncu else []
    profiled = sorted([r for r in twin if int(r["profiled_index"]) >= 0], key=lambda r: int(r["profiled_index"]))
    if ncu_twin and len(ncu_twin) != len(profiled):
        print("collect.py: %d twin runs were profiled but ncu has %d rows: joined in order as far as they go" %
              (len(profiled), len(ncu_twin)), file=sys.stderr)
    by_index = {int(r["profiled_index"]): i for i, r in enumerate(profiled)}
    for r in twin:
        i = int(r["profiled_index"])
        rec = dict(ncu_twin[by_index[i]]) if i >= 0 and by_index[i] < len(ncu_twin) else {"kernel": "gpuagg_aggregate"}
        g, groups = int(r["groups_log2"]), int(r["groups"])
        config = (r["work_groups_per_cu"], r["work_group_size"])
        rec.update(source="twin", system="%s+%s%s" % (r["strategy"], r["scheme"], "+run_cache" if r["run_cache"] == "1" else ""),
                   groups_log2=g, groups=groups, config="%sx%s" % config, twin_ms_median=number(r["ms_median"]),
                   twin_ms_best=number(r["ms_best"]), twin_gtuples_best=number(r["gtuples_best"]), verified=r["verified"],
                   twin_blocks=number(r.get("blocks")), twin_blocks_ms_median=number(r.get("blocks_ms_median")) or None)
        rec.setdefault("registers", number(r["registers"]))
        rec.setdefault("grid", number(r["grid"]))
        rec.setdefault("block", number(r["block"]))
        system = REFERENCE_SYSTEM[(r["strategy"], r["scheme"])]
        direct_strategy = "workgroup_local" if groups <= DIRECT_LOCAL_MAX else "shared"
        if system != "direct" or r["strategy"] == direct_strategy:
            _, ms, mode = reference_lookup(reference, system, groups, config)
            if ms is not None:
                rec["reference_ms"] = ms
                rec["reference"] = "OpenCL %s %sx%s reference %s (AGGREGATE, the driver's blocks)" % (
                    system, config[0], config[1], mode)
                # Like for like: the twin run as the driver's blocks, where it was.
                twin_ms = rec["twin_blocks_ms_median"] or rec["twin_ms_median"]
                if twin_ms:
                    rec["twin_over_reference"] = twin_ms / ms
        derive(rec, a.rows)
        out.append(rec)
    # The peers: ranges in order, each begun by the marker kernel.
    ranges = []
    try:
        with open(a.ranges) as f:
            for line in f:
                m = re.match(r"PROFILED_RANGE (\d+) (\d+) (\S+)", line)
                if m:
                    ranges.append((int(m.group(2)), m.group(3)))
    except OSError:
        pass
    peer_rows = read_ncu(a.peers_ncu) if a.peers_ncu else []
    peers_reference = {}
    for r in reference_rows(a.reference_peers):
        peers_reference[(r.get("system"), int(r.get("groups", 0) or 0))] = number(r.get("ms"))
    chunks, current = [], None
    for rec in peer_rows:
        if rec["kernel"] == "spin_kernel" or current is None:
            current = []
            chunks.append(current)
            if rec["kernel"] == "spin_kernel":
                continue
        current.append(rec)
    if ranges and len(chunks) != len(ranges):
        print("collect.py: %d peer ranges announced, %d found in ncu's rows" % (len(ranges), len(chunks)),
              file=sys.stderr)
    for n, chunk in enumerate(chunks):
        groups, peer = ranges[n] if n < len(ranges) else (0, "peer_range_%d" % n)
        g = int(round(math.log2(groups))) if groups else None
        total = {"kernel": "(sum of %d kernels)" % len(chunk)}
        for rec in chunk:
            rec.update(source="peer", system=peer, groups_log2=g, groups=groups)
            derive(rec, a.rows)
            out.append(rec)
            for k in ADDITIVE:
                if rec.get(k) is not None:
                    total[k] = total.get(k, 0.0) + rec[k]
        total.update(source="peer", system=peer, groups_log2=g, groups=groups)
        ref = peers_reference.get((peer, groups))
        if ref:
            total["reference_ms"] = ref
            total["reference"] = "peers.py best of 3, reference run"
        derive(total, a.rows)
        out.append(total)
    with open(a.output, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for rec in out:
            w.writerow([fmt(rec.get(c)) for c in COLUMNS])
    # Summary: per kernel x group count, the key figures.
    print("%-6s %-26s %-30s %9s %9s %9s %9s %8s %7s %-22s %-22s" % (
        "groups", "system", "kernel", "ncu ms", "twin ms", "blocks ms", "ref ms", "DRAM B/r", "L2 hit", "top stall",
        "2nd stall"))
    for rec in out:
        if rec["source"] == "peer" and not rec["kernel"].startswith("(sum") and (rec.get("duration_ms") or 0) < 0.05:
            continue  # small peer kernels: in the CSV
        print("%-6s %-26s %-30s %9s %9s %9s %9s %8s %7s %-22s %-22s" % (
            "2^%s" % rec.get("groups_log2"), rec["system"][:26], rec["kernel"][:30], fmt(rec.get("duration_ms")),
            fmt(rec.get("twin_ms_median")), fmt(rec.get("twin_blocks_ms_median")), fmt(rec.get("reference_ms")),
            fmt(rec.get("dram_bytes_per_row")),
            fmt(rec.get("l2_hit_pct")), rec.get("top_stall_1", ""), rec.get("top_stall_2", "")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--reference", required=True)
    p.add_argument("--groups", default="4,10,16,20,21,24,28")
    p.set_defaults(run=cmd_plan)
    p = sub.add_parser("metrics")
    p.add_argument("--available", required=True)
    p.add_argument("--drop", default="", help="metrics ncu refused (comma-separated)")
    p.set_defaults(run=cmd_metrics)
    p = sub.add_parser("join")
    p.add_argument("--twin", required=True)
    p.add_argument("--twin-ncu")
    p.add_argument("--peers-ncu")
    p.add_argument("--ranges")
    p.add_argument("--reference", default="")
    p.add_argument("--reference-peers", default="")
    p.add_argument("--rows", type=int, default=1 << 27)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(run=cmd_join)
    a = ap.parse_args()
    a.run(a)


if __name__ == "__main__":
    main()
