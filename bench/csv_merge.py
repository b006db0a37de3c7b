#!/usr/bin/env python3
"""Moves a benchmark's CSV output into a run of record (bench/suite.sh calls it after each step).

  csv_merge.py DEST SRC [SRC ...]              DEST := the rows of every SRC
  csv_merge.py DEST SRC [SRC ...] --key a,b,c  DEST := DEST's rows whose key (columns a, b, c)
                                               no SRC row has, then every SRC row

With --key a part of the suite that runs again replaces exactly what it measured before and
keeps the other parts' rows. A row that a process killed mid-write left incomplete (missing
fields, or the last line without its newline) is not copied; the count is printed, so the
suite's log says so. Never drops or rewrites a complete row's fields: whether a result was
verified is bench/report.py's business, which fails on verified=0.
"""
import argparse
import csv
import os
import sys


def complete_rows(path):
    """(header, rows, incomplete): the rows with every field present."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return [], [], 0
    with open(path, newline="") as f:
        text = f.read()
    lines_end_cleanly = text.endswith("\n")
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = list(reader.fieldnames or [])
    rows = list(reader)
    incomplete = 0
    if rows and not lines_end_cleanly:
        rows.pop()
        incomplete += 1
    kept = []
    for row in rows:
        if None in row or any(v is None for v in row.values()):
            incomplete += 1
        else:
            kept.append(row)
    return header, kept, incomplete


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest")
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--key", help="columns that name a measurement: DEST rows with a key some SRC row has are replaced")
    a = ap.parse_args()

    header, new_rows, incomplete = [], [], 0
    for path in a.sources:
        h, rows, bad = complete_rows(path)
        header += [c for c in h if c not in header]
        new_rows += rows
        incomplete += bad
    old_rows, replaced = [], 0
    if a.key:
        key_columns = a.key.split(",")
        old_header, old_rows, _ = complete_rows(a.dest)
        header = old_header + [c for c in header if c not in old_header]
        missing = [c for c in key_columns if c not in header]
        if missing:
            sys.exit(f"csv_merge.py: key column(s) {', '.join(missing)} not in {a.dest} or the new rows")
        new_keys = {tuple(r.get(c, "") for c in key_columns) for r in new_rows}
        kept = [r for r in old_rows if tuple(r.get(c, "") for c in key_columns) not in new_keys]
        replaced = len(old_rows) - len(kept)
        old_rows = kept
    if not header:
        print(f"csv_merge.py: {a.dest}: no rows in {' '.join(a.sources)}; left as it was")
        return
    tmp = a.dest + ".tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(old_rows + new_rows)
    os.replace(tmp, a.dest)
    note = f", {incomplete} incomplete row(s) not copied (a process cut short)" if incomplete else ""
    print(f"csv_merge.py: {a.dest}: {len(new_rows)} new rows, {replaced} replaced, {len(old_rows)} kept{note}")


if __name__ == "__main__":
    main()
