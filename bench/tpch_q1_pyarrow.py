#!/usr/bin/env python3
"""TPC-H Q1 with pyarrow on the host's cores, over the columns tpch_q1_bench --dump wrote (the
same narrow, scaled-integer columns gpuagg reads): filter, the derived products, group_by with
the eight aggregates. Prints CSV rows like tpch_q1_bench's (system pyarrow), and the answer's
count per group so it can be checked against the bench's.

  python3 bench/tpch_q1_pyarrow.py DUMP/sf10.000000 --scale 10 --reps 3 [--threads 16]
"""
import argparse, os, sys, time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

CUTOFF = 2436  # days since 1992-01-01 of 1998-09-02 (tpch::q1_cutoff)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        pa.set_cpu_count(a.threads)
    col = lambda name, dtype: np.fromfile(os.path.join(a.dir, name), dtype=dtype)
    table = pa.table({
        "quantity": col("quantity.i8", np.int8),
        "extendedprice": col("extendedprice.i32", np.int32),
        "discount": col("discount.i8", np.int8),
        "tax": col("tax.i8", np.int8),
        "returnflag": col("returnflag.u8", np.uint8),
        "linestatus": col("linestatus.u8", np.uint8),
        "shipdate": col("shipdate.i16", np.int16),
    })
    rows = table.num_rows
    column_bytes = rows * 11

    def q1():
        t = table.filter(pc.less_equal(table["shipdate"], CUTOFF))
        price = pc.cast(t["extendedprice"], pa.int64())
        disc_price = pc.multiply(price, pc.subtract(100, pc.cast(t["discount"], pa.int64())))
        charge_part = pc.multiply(disc_price, pc.cast(t["tax"], pa.int64()))
        t = t.append_column("disc_price", disc_price).append_column("charge_part", charge_part)
        return t.group_by(["returnflag", "linestatus"]).aggregate([
            ("quantity", "sum"), ("extendedprice", "sum"), ("disc_price", "sum"), ("charge_part", "sum"),
            ("quantity", "mean"), ("extendedprice", "mean"), ("discount", "mean"), ("quantity", "count")])

    q1()  # warm-up
    print("device,scale,rows,column_bytes,input,system,rep,wall_ms,kernel_ms,copy_ms,strategy,work_groups_per_cu,"
          "work_group_size,blocks,groups,verified")
    # The CPU pass's answer tpch_q1_bench wrote beside the columns: every exact sum must match.
    expected = {}
    with open(os.path.join(a.dir, "answer.csv")) as f:
        next(f)
        for line in f:
            flag, status, qty, base, disc, count = line.strip().split(",")
            expected[(ord(flag), ord(status))] = (int(qty), int(base), int(disc), int(count))
    failed = 0
    for rep in range(a.reps):
        start = time.perf_counter()
        result = q1()
        wall = (time.perf_counter() - start) * 1e3
        got = {(r["returnflag"], r["linestatus"]): (r["quantity_sum"], r["extendedprice_sum"], r["disc_price_sum"],
                                                   r["quantity_count"]) for r in result.to_pylist()}
        ok = got == expected
        failed += not ok
        print(f'"host CPU, {pa.cpu_count()} threads",{a.scale},{rows},{column_bytes},host,pyarrow,{rep},{wall:.3f},'
              f',,,,,,{result.num_rows},{int(ok)}')
    if failed:
        sys.exit(f"tpch_q1_pyarrow.py: {failed} answers differ from the CPU pass's")


if __name__ == "__main__":
    main()
