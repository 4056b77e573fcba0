#!/usr/bin/env python3
"""Side by side with htsim on the TCP dumbbell of ../shared/bench/peers (w1, w2, w3-N).

Runs mpsched and a prebuilt htsim driver alternately on the same work and prints, per workload,
the median wall time, peak memory, delivered packets and packets per wall second of each, and
their ratio. It builds nothing: make the driver and the scenarios with the kit's build.sh first
(see ../shared/bench/peers/README.md), then

    scripts/bench-peers.py --mpsched target/release/mpsched \\
        --htsim PEERS/htsim_perf_dumbbell --scenarios PEERS [--reps 3] [--only w1,w3-1000]

Wall time is the whole process (setup included, as for htsim), measured with /usr/bin/time.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile

WORKLOADS = [  # name, flows, bottleneck Mbit/s, seconds
    ("w1", 1, 1000, 150), ("w2", 10, 10000, 20),
    ("w3-1", 1, 10000, 10), ("w3-10", 10, 10000, 10),
    ("w3-100", 100, 10000, 10), ("w3-1000", 1000, 10000, 10),
]


def timed(cmd):
    """(wall s, peak RSS KiB, stdout) of one process."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True, check=True)
    wall, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss), out.stdout


def mpsched(binary, scenario, out):
    wall, rss, _ = timed([binary, "run", scenario, "--no-plot", "--out", out])
    s = json.load(open(os.path.join(out, "summary.json")))
    runs = s.get("repetitions") or [s]
    return wall, rss, sum(f["delivered_pkts"] for f in runs[0]["flows"])


def htsim(binary, flows, mbps, seconds):
    wall, rss, text = timed([binary, "-conns", str(flows), "-mbps", str(mbps), "-qs", "100", "-end", str(seconds)])
    return wall, rss, int(re.search(r"delivered_pkts=(\d+)", text).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpsched", required=True)
    ap.add_argument("--htsim", required=True)
    ap.add_argument("--scenarios", required=True, help="folder with w1.toml, w2.toml, w3-N.toml")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    print("| workload | mpsched wall s | htsim wall s | mpsched M pkt/s | htsim M pkt/s | ratio | mpsched MiB | htsim MiB |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flows, mbps, secs in WORKLOADS:
            if only and name not in only:
                continue
            m, h = [], []
            for _ in range(a.reps):  # alternate, so drift hits both alike
                m.append(mpsched(a.mpsched, os.path.join(a.scenarios, name + ".toml"), os.path.join(tmp, name)))
                h.append(htsim(a.htsim, flows, mbps, secs))
            mw, hw = statistics.median(x[0] for x in m), statistics.median(x[0] for x in h)
            mr, hr = m[0][2] / mw, h[0][2] / hw
            print(f"| {name} | {mw:.2f} | {hw:.2f} | {mr / 1e6:.2f} | {hr / 1e6:.2f} | {mr / hr:.2f} | "
                  f"{max(x[1] for x in m) / 1024:.1f} | {max(x[1] for x in h) / 1024:.1f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
