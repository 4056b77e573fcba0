#!/usr/bin/env python3
"""MP-HULA's Fig. 9: mean utilisation of the fabric's links (the [[path]]s of
scenarios/mphula2018/fig7-websearch-mptcp-uncoupled.toml, data direction pod 1 -> pod 2) per
scheme, averaged over runs with different seeds:

    for s in 1 2 3; do mpsched run mphula2018/fig7-websearch-mptcp-uncoupled --seed $s --out OUT-s$s; done
    python3 scripts/mphula-links.py OUT-s1 OUT-s2 OUT-s3
"""

import json
import sys
from collections import defaultdict


def main():
    util = defaultdict(lambda: defaultdict(list))
    links = []
    for out in sys.argv[1:]:
        for v in json.load(open(f"{out}/summary.json"))["variants"]:
            for p in v["paths"]:
                if p["id"] not in links:
                    links.append(p["id"])
                util[v["variant"]][p["id"]].append(p["mean_mbps"] / p["capacity_mbps"])
    print("| link | " + " | ".join(util) + " |")
    print("|---|" + "---|" * len(util))
    for l in links:
        cells = [f"{sum(util[v][l]) / len(util[v][l]):.2f}" for v in util]
        print(f"| {l.replace('.', ' -> ')} | " + " | ".join(cells) + " |")
    fabric = [l for l in links if "core" in l]
    for v in util:
        xs = [sum(util[v][l]) / len(util[v][l]) for l in fabric]
        mean = sum(xs) / len(xs)
        print(f"{v}: agg-core links mean {mean:.2f}, spread (max - min) {max(xs) - min(xs):.2f}")


if __name__ == "__main__":
    main()
