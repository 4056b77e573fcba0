#!/usr/bin/env python3
"""Time to move traffic off a failed link, from a run of scenarios/mphula2018/fig8-failover.toml:
`mpsched run mphula2018/fig8-failover --out DIR`, then `python3 scripts/mphula-failover.py DIR`.

Per variant, from summary.json's queue counters and each variant's timeseries.csv (1 ms samples):
- packets the switches sent into the failed link after it failed, and when the last one went
  (the data plane still choosing the dead port: ECMP without a control plane never stops);
- flows hit by the failure (goodput over the 10 ms after it below half their mean over the
  100 ms before), and when each moved again (a 10 ms mean at a tenth of its earlier rate: after
  the failure 16 flows share 60 Gbit/s instead of 80, so "as fast as before" is not the test):
  median and largest time, and how many never did within the run (600 ms);
- the total goodput's return to 90 % of its mean over the 100 ms before the failure."""

import csv
import json
import statistics
import sys
from pathlib import Path

FAIL_S = 0.300
LINK = ("pod0-agg0", "core0")


def window_mean(rows, col, t0, t1):
    xs = [float(r[col]) for r in rows if t0 < float(r["time_s"]) <= t1]
    return sum(xs) / len(xs) if xs else 0.0


def recovery(rows, col, before, end_s):
    """First time after the failure when the 10 ms mean of `col` is back at a tenth of `before`."""
    t = FAIL_S
    while t + 0.010 <= end_s:
        if window_mean(rows, col, t, t + 0.010) >= 0.1 * before:
            return t + 0.010 - FAIL_S
        t += 0.001
    return None


def variant_report(out: Path, v: dict):
    name = v["variant"]
    q = v["repetitions"][0]["counters"]["queues"]
    sent = sum(q.get(f"{a}->{b}.sent_into_down", 0) for a, b in (LINK, LINK[::-1]))
    last_us = max(q.get(f"{a}->{b}.last_sent_into_down_us", 0) for a, b in (LINK, LINK[::-1]))
    rows = list(csv.DictReader(open(out / name / "timeseries.csv")))
    end_s = float(v["duration_s"])
    flows = [c for c in rows[0] if c.endswith("_mbps") and c.startswith("bulk-") and c.count("_") == 1]
    hit, back = 0, []
    for c in flows:
        before = window_mean(rows, c, FAIL_S - 0.100, FAIL_S)
        if before <= 0 or window_mean(rows, c, FAIL_S, FAIL_S + 0.010) >= 0.5 * before:
            continue
        hit += 1
        back.append(recovery(rows, c, before, end_s))
    total = lambda r: sum(float(r[c]) for c in flows)
    pre = statistics.mean(total(r) for r in rows if FAIL_S - 0.100 < float(r["time_s"]) <= FAIL_S)
    agg_back = next((float(r["time_s"]) - FAIL_S for r in rows
                     if float(r["time_s"]) > FAIL_S and total(r) >= 0.9 * pre and float(r["time_s"]) <= end_s), None)
    came = sorted(b for b in back if b is not None)
    ms = lambda x: "-" if x is None else f"{x * 1000:.0f}"
    last = f"{last_us / 1000 - FAIL_S * 1000:.1f}" if sent else "-"
    return (f"| {name} | {sent} | {last} | {hit} | {ms(statistics.median(came)) if came else '-'} | "
            f"{ms(came[-1]) if came else '-'} | {len(back) - len(came)} | {pre / 1000:.1f} | {ms(agg_back)} |")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/mphula-fig8-failover")
    summary = json.load(open(out / "summary.json"))
    print("| variant | packets sent into the dead link | last one, ms after the failure | flows hit | "
          "back after, median ms | slowest ms | never back | goodput before, Gbit/s | total at 90 % after, ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for v in summary["variants"]:
        print(variant_report(out, v))


if __name__ == "__main__":
    main()
