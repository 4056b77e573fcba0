#!/usr/bin/env python3
"""PMQECN's scenarios ranked: reads the results of `mpsched run pmqecn2024/s1-performance`
(or s2-fairness) from OUT (one folder per variant, as `mpsched run --out OUT` writes them) and
prints, per scheme, the paper's measures beside its headline figures:

- the bottleneck's queue (`bottleneck_queue_max_pkts`, `bottleneck_queue_pkts`): maximum and
  time-averaged packets waiting at S1's port to S2, all its queues together;
- RTT: twice the mean one-way delay of the delivered packets (the paper doubles the arrival
  delay), weighted by packets delivered;
- H5's throughput per second (the flows' goodput, summed): mean, standard deviation and
  coefficient of variation over the steady middle (the first and last `--trim` seconds left
  out, as the paper leaves out "the header and tail data");
- loss per class (sent but never delivered).

Standard library only. Usage: scripts/pmqecn-compare.py OUT [--trim 10]
"""
import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

# The paper's headlines (scenario 1): PMQECN's reduction against each baseline, percent.
PAPER_QUEUE_MAX_REDUCTION = {"DCQCN": 56, "P4QCN": 31, "TCN": 17}
PAPER_RTT_REDUCTION = {"DCQCN": 89.4, "P4QCN": 5.3, "TCN": 47}


def rows_of(path):
    with open(path, newline="") as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def per_second(rows, column_names):
    """Goodput summed over `column_names`, averaged into whole seconds."""
    seconds = {}
    for r in rows:
        s = int(r["time_s"] - 1e-9)
        seconds.setdefault(s, []).append(sum(r[c] for c in column_names))
    return {s: statistics.fmean(v) for s, v in seconds.items()}


def measure(folder, trim_s):
    summary = json.loads((folder / "summary.json").read_text())
    rows = rows_of(folder / "timeseries.csv")
    flows = summary["flows"]
    duration = summary["duration_s"]
    rates = per_second(rows, [f"{f['id']}_mbps" for f in flows])
    steady = [v for s, v in rates.items() if trim_s <= s < duration - trim_s]
    if not steady:
        sys.exit(f"{folder}: a {duration:g} s run has no steady middle with --trim {trim_s:g}")
    mean = statistics.fmean(steady)
    sd = statistics.stdev(steady) if len(steady) > 1 else 0.0
    reps = summary["repetitions"][0]["flows"]
    delivered = sum(f["delivered_pkts"] for f in reps)
    # A flow that delivered nothing has no delay (null): it weighs nothing.
    owd = sum((f["mean_owd_ms"] or 0.0) * f["delivered_pkts"] for f in reps) / max(delivered, 1)
    return {
        "queue_max": max(r["bottleneck_queue_max_pkts"] for r in rows),
        "queue_mean": statistics.fmean(r["bottleneck_queue_pkts"] for r in rows),
        "rtt_ms": 2 * owd,
        "tput_mean": mean,
        "tput_sd": sd,
        "tput_cv": sd / mean if mean else float("nan"),
        "loss": {f["id"]: f["loss_pct"] for f in reps},
        "total_loss": 100 * (1 - delivered / max(sum(f["sent_pkts"] for f in reps), 1)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--trim", type=float, default=10.0, help="seconds left out at each end (default 10)")
    a = ap.parse_args()
    # One folder per variant, or one variant's results (`--variant NAME`) in OUT itself.
    single = (a.out / "timeseries.csv").is_file()
    folders = [a.out] if single else sorted(p for p in a.out.iterdir() if (p / "timeseries.csv").is_file())
    if not folders:
        sys.exit(f"{a.out}: no variant folders with timeseries.csv (run `mpsched run ... --out {a.out}` first)")
    name = lambda p: json.loads((p / "summary.json").read_text()).get("variant") or p.name
    m = {name(p): measure(p, a.trim) for p in folders}
    classes = sorted({c for v in m.values() for c in v["loss"]})
    head = f"{'scheme':<8} {'queue max':>9} {'mean':>6} {'RTT ms':>7} {'Mbit/s':>7} {'sd':>6} {'CV':>6} {'loss %':>7} " + " ".join(
        f"{c + ' %':>6}" for c in classes
    )
    print(head)
    for name, v in m.items():
        loss = " ".join(f"{v['loss'].get(c, float('nan')):>6.2f}" for c in classes)
        print(
            f"{name:<8} {v['queue_max']:>9.0f} {v['queue_mean']:>6.1f} {v['rtt_ms']:>7.1f} {v['tput_mean']:>7.2f} "
            f"{v['tput_sd']:>6.2f} {v['tput_cv']:>6.3f} {v['total_loss']:>7.2f} {loss}"
        )
    scenario = json.loads((folders[0] / "summary.json").read_text()).get("scenario", "")
    if "PMQECN" in m and scenario.endswith("-s1"):
        p = m["PMQECN"]
        print("\nPMQECN's reduction against each baseline, percent (paper's in brackets; negative: PMQECN higher)")
        for name, v in m.items():
            if name == "PMQECN":
                continue
            q = 100 * (1 - p["queue_max"] / v["queue_max"]) if v["queue_max"] else float("nan")
            r = 100 * (1 - p["rtt_ms"] / v["rtt_ms"]) if v["rtt_ms"] else float("nan")
            pq = PAPER_QUEUE_MAX_REDUCTION.get(name, "-")
            pr = PAPER_RTT_REDUCTION.get(name, "-")
            print(f"  {name:<6} maximum queue {q:>7.1f} ({pq})   RTT {r:>7.1f} ({pr})")


if __name__ == "__main__":
    main()
