#!/usr/bin/env python3
"""MP-HULA's Fig. 9: mean utilisation of the fabric's links (the [[path]]s of
scenarios/mphula2018/fig7-websearch-mptcp-uncoupled.toml, data direction pod 1 -> pod 2) per
scheme, averaged over runs with different seeds:

    for s in 1 2 3; do mpsched run mphula2018/fig7-websearch-mptcp-uncoupled --seed $s --out OUT-s$s; done
    python3 scripts/mphula-links.py OUT-s1 OUT-s2 OUT-s3 [--plot FILE.png]

With --plot (needs matplotlib), also a bar chart: one group of bars per link, one bar per scheme,
the seeds' spread as error bars.
"""

import json
import sys
from collections import defaultdict


def plot(util, links, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(13, 5))
    width = 0.8 / len(util)
    for i, (v, per_link) in enumerate(util.items()):
        xs = [j + (i - (len(util) - 1) / 2) * width for j in range(len(links))]
        mean = [sum(per_link[l]) / len(per_link[l]) for l in links]
        lo = [max(m - min(per_link[l]), 0.0) for m, l in zip(mean, links)]
        hi = [max(max(per_link[l]) - m, 0.0) for m, l in zip(mean, links)]
        ax.bar(xs, mean, width, yerr=[lo, hi], capsize=2, label=v)
    ax.set_xticks(range(len(links)))
    ax.set_xticklabels([l.replace(".", "\n-> ") for l in links], fontsize=8)
    ax.set_ylabel("mean utilisation over the run")
    ax.set_title("MP-HULA Fig. 9, ours: link utilisation, web-search, MPTCP uncoupled, 50 % load (bars: min-max over seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    util = defaultdict(lambda: defaultdict(list))
    links = []
    args = sys.argv[1:]
    plot_to = None
    if "--plot" in args:
        i = args.index("--plot")
        plot_to = args[i + 1]
        del args[i : i + 2]
    for out in args:
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
    if plot_to:
        plot(util, links, plot_to)


if __name__ == "__main__":
    main()
