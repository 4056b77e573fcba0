#!/usr/bin/env python3
"""A markdown table of one figure from a `mpsched sweep` output's sweep_summary.csv: rows are the
parameter's values, columns the variants, each cell the mean over seeds with its 95 % confidence
interval in brackets.

    python3 scripts/sweep-table.py OUT/sweep_summary.csv fct_mean_ms [0.1,0.5,0.9]
"""

import csv
import sys


def main():
    path, column = sys.argv[1], sys.argv[2]
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    rows = list(csv.DictReader(open(path)))
    key = next(iter(rows[0]))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    values = [v for v in dict.fromkeys(r[key] for r in rows) if only is None or v in only]
    print(f"| {key} | " + " | ".join(variants) + " |")
    print("|---|" + "---|" * len(variants))
    for v in values:
        cells = []
        for var in variants:
            r = next(x for x in rows if x[key] == v and x["variant"] == var)
            m, lo, hi = (r[f"{column}_{s}"] for s in ("mean", "ci95_lo", "ci95_hi"))
            cells.append(f"{float(m):.1f} [{max(float(lo), 0):.1f}-{float(hi):.1f}]" if m else "-")
        print(f"| {v} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
