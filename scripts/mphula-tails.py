#!/usr/bin/env python3
"""Which flows wait out a retransmission timeout, load by load, on MP-HULA's web-search scenario
(scenarios/mphula2018/fig5-websearch-mptcp-coupled.toml): one run per load (seed 1) of the
variants named, then from each flows.csv the flows whose completion time exceeds their ideal one
by at least the minimum RTO (200 ms: at least one timeout) and by at least the initial RTO (1 s:
a lost SYN, or a loss before the first RTT sample, waits that long), all flows and mice apart.

    python3 scripts/mphula-tails.py [MPSCHED] [OUTDIR]
"""

import csv
import subprocess
import sys
from pathlib import Path

MPSCHED = sys.argv[1] if len(sys.argv) > 1 else "target/release/mpsched"
OUT = Path(sys.argv[2] if len(sys.argv) > 2 else "out/mphula-tails")
SCENARIO = Path("scenarios/mphula2018/fig5-websearch-mptcp-coupled.toml")
VARIANTS = ["TCP-ECMP", "MPTCP-ECMP", "MPTCP-MP-HULA"]
LOADS = ["0.1", "0.3", "0.5", "0.7", "0.9"]


def classify(flows):
    done = [f for f in flows if f["fct_s"]]
    waited = lambda f, s: float(f["fct_s"]) - float(f["ideal_fct_s"]) >= s
    mice = [f for f in done if int(f["size_bytes"]) < 100_000]
    share = lambda xs, s: 100.0 * sum(waited(f, s) for f in xs) / max(len(xs), 1)
    unfinished = len(flows) - len(done)
    return len(flows), share(done, 0.2), share(done, 1.0), share(mice, 0.2), share(mice, 1.0), unfinished


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    text = SCENARIO.read_text()
    print("| load | variant | flows | waited >= 200 ms % | waited >= 1 s % | mice >= 200 ms % | mice >= 1 s % | unfinished |")
    print("|---|---|---|---|---|---|---|---|")
    for load in LOADS:
        f = OUT / f"load-{load}.toml"
        f.write_text(text.replace("load = 0.5", f"load = {load}", 1))
        args = [MPSCHED, "run", str(f), "--out", str(OUT / load), "--no-plot"]
        for v in VARIANTS:
            args += ["--variant", v]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        for v in VARIANTS:
            rows = list(csv.DictReader(open(OUT / load / v / "flows.csv")))
            n, a, b, c, d, u = classify(rows)
            print(f"| {load} | {v} | {n} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.1f} | {u} |")


if __name__ == "__main__":
    main()
