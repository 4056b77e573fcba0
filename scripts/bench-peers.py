#!/usr/bin/env python3
"""Side by side with htsim on the TCP dumbbell of ../shared/bench/peers (w1, w2, w3-N).

Runs mpsched and a prebuilt htsim driver alternately on the same work (mpsched, htsim, mpsched,
htsim, ...) and prints, per workload, the medians of each simulator's wall time and CPU time, its
delivered packets per wall second and per CPU second, peak memory, and mpsched's rate over
htsim's by both. It builds nothing: make the driver and the scenarios with the kit's build.sh
first (see ../shared/bench/peers/README.md), then

    scripts/bench-peers.py --mpsched target/release/mpsched \\
        --htsim PEERS/htsim_perf_dumbbell --scenarios PEERS [--reps 3] [--only w1,w3-1000] [--json]

What it measures: each run is a whole process timed by /usr/bin/time, so setup (reading the
scenario, building the network; htsim's the same) is included for both, as in every earlier
figure. Wall time is elapsed time; CPU time is user + system time of the process. Both are
single-threaded, so on an idle core the two agree; on a shared machine wall time also counts the
time the process waited for a core, and CPU time is the steadier measure. A ratio above 1 means
mpsched delivered more packets per second than htsim. When w3-1 and w3-1000 both run, the cost
per packet from 1 to 1 000 flows (time per delivered packet at 1 000 flows over that at 1) is
printed for each. The machine's date, cores and load average are printed before and after.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

WORKLOADS = [  # name, flows, bottleneck Mbit/s, seconds
    ("w1", 1, 1000, 150), ("w2", 10, 10000, 20),
    ("w3-1", 1, 10000, 10), ("w3-10", 10, 10000, 10),
    ("w3-100", 100, 10000, 10), ("w3-1000", 1000, 10000, 10),
]


def timed(cmd):
    """{wall, cpu (user + system) s, rss KiB}, stdout of one process."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, capture_output=True, text=True, check=True)
    wall, user, sys_, rss = out.stderr.strip().splitlines()[-1].split()
    return {"wall": float(wall), "cpu": float(user) + float(sys_), "rss": int(rss)}, out.stdout


def mpsched(binary, scenario, out):
    run, _ = timed([binary, "run", scenario, "--no-plot", "--out", out])
    s = json.load(open(os.path.join(out, "summary.json")))
    run["pkts"] = sum(f["delivered_pkts"] for f in (s.get("repetitions") or [s])[0]["flows"])
    return run


def htsim(binary, flows, mbps, seconds):
    run, text = timed([binary, "-conns", str(flows), "-mbps", str(mbps), "-qs", "100", "-end", str(seconds)])
    run["pkts"] = int(re.search(r"delivered_pkts=(\d+)", text).group(1))
    return run


def summary(runs):
    """Medians of one simulator's runs of one workload, and its rates by wall and CPU time."""
    med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "pkts")}
    return dict(med, rss=max(r["rss"] for r in runs), per_wall=med["pkts"] / med["wall"], per_cpu=med["pkts"] / med["cpu"])


def machine():
    return f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {os.cpu_count()} cores, " \
           f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpsched", required=True)
    ap.add_argument("--htsim", required=True)
    ap.add_argument("--scenarios", required=True, help="folder with w1.toml, w2.toml, w3-N.toml")
    ap.add_argument("--reps", type=int, default=3, help="alternated pairs per workload")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--json", action="store_true", help="print every run and the medians as JSON instead")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    result = {"start": machine(), "workloads": {}}
    if not a.json:
        print("start:", result["start"])
        print("| workload | wall s, mpsched / htsim | CPU s, mpsched / htsim | M pkt per wall s | M pkt per CPU s "
              "| ratio by wall | ratio by CPU | MiB |")
        print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flows, mbps, secs in WORKLOADS:
            if only and name not in only:
                continue
            m, h = [], []
            for _ in range(a.reps):  # alternate, so drift hits both alike
                m.append(mpsched(a.mpsched, os.path.join(a.scenarios, name + ".toml"), os.path.join(tmp, name)))
                h.append(htsim(a.htsim, flows, mbps, secs))
            ms, hs = summary(m), summary(h)
            w = result["workloads"][name] = {"mpsched": ms, "htsim": hs, "mpsched_runs": m, "htsim_runs": h,
                                             "ratio_wall": ms["per_wall"] / hs["per_wall"],
                                             "ratio_cpu": ms["per_cpu"] / hs["per_cpu"]}
            if not a.json:
                print(f"| {name} | {ms['wall']:.2f} / {hs['wall']:.2f} | {ms['cpu']:.2f} / {hs['cpu']:.2f} "
                      f"| {ms['per_wall'] / 1e6:.2f} / {hs['per_wall'] / 1e6:.2f} "
                      f"| {ms['per_cpu'] / 1e6:.2f} / {hs['per_cpu'] / 1e6:.2f} "
                      f"| {w['ratio_wall']:.2f} | {w['ratio_cpu']:.2f} "
                      f"| {ms['rss'] / 1024:.1f} / {hs['rss'] / 1024:.1f} |", flush=True)
    ws = result["workloads"]
    if "w3-1" in ws and "w3-1000" in ws:  # time per packet at 1 000 flows over that at 1
        result["cost_1_to_1000"] = {sim: {by: ws["w3-1"][sim][by] / ws["w3-1000"][sim][by] for by in ("per_wall", "per_cpu")}
                                    for sim in ("mpsched", "htsim")}
        if not a.json:
            c = result["cost_1_to_1000"]
            print(f"cost per packet, 1 -> 1 000 flows: mpsched {c['mpsched']['per_wall']:.2f}x by wall, "
                  f"{c['mpsched']['per_cpu']:.2f}x by CPU; htsim {c['htsim']['per_wall']:.2f}x, {c['htsim']['per_cpu']:.2f}x")
    result["end"] = machine()
    print(json.dumps(result, indent=1) if a.json else f"end: {result['end']}")


if __name__ == "__main__":
    sys.exit(main())
