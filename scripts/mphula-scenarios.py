#!/usr/bin/env python3
"""Write the MP-HULA evaluation scenarios (scenarios/mphula2018/fig*.toml) from one template, so
that the figures share everything but what the paper varies: the workload, the congestion
control of MPTCP, and the failed link. Run from the repository root; the files are checked in."""

from pathlib import Path

CLIENTS = ", ".join(f'"tor0-h{i}"' for i in range(16))
SERVERS = ", ".join(f'"tor1-h{i}"' for i in range(16))

HEADER = """# Written by scripts/mphula-scenarios.py: edit the script, not this file.
#
# MP-HULA (Benet et al., NetCompute 2018), Sec. 3, {what}.
#
# Fig. 4's layout as fig5-websearch-tcp-ecmp.toml reads it (the reasons are there): two pods of
# one rack (16 hosts at 10 Gbit/s), two aggregation switches a pod, two cores, 40 Gbit/s in the
# fabric, 1 us a link, 100-packet queues; 16 clients in pod 1 sending to servers drawn among the
# 16 hosts of pod 2; load as a fraction of the rack's 80 Gbit/s of uplinks; flows arriving for
# 0.5 s, 1 s run plus the drain. MPTCP connections have two subflows (each its own source port)
# and use version 0 (SHA-1 tokens), as the paper's ns-2 MPTCP; TCP is NewReno without SACK, Linux's
# timers (initial RTO 1 s, minimum RTO 200 ms), initial window 10 (docs/reproduction.md sets them
# beside ns-2's defaults). HULA and MP-HULA run with the papers' probe period (200 us) and flowlet
# gap (100 us); MP-HULA keeps k = 2 next hops; ageing (1 ms) and the estimator's time constant
# (512 us) are ours (crates/programs/src/hula/README.md). Nothing here was tuned to a figure.
[scenario]
name = "{name}"
title = "{title}"
reproduces = "{reproduces}"
duration = "1s"
seed = 1
sample_interval = "100ms"

[topology]
kind = "three-tier"
pods = 2
tors_per_pod = 1
aggs_per_pod = 2
cores = 2
hosts_per_tor = 16
{down}
[topology.host_links]
rate = "10Gbps"
delay = "1us"
queue_pkts = 100

[topology.edge_links]
rate = "40Gbps"
delay = "1us"
queue_pkts = 100

[topology.core_links]
rate = "40Gbps"
delay = "1us"
queue_pkts = 100

[tcp]
cc = "{cc}"

[[workload]]
name = "{wl}"
cdf = "{cdf}"
load = 0.5
capacity = "80Gbps"                  # load is a fraction of the 80 Gbit/s between the pods
stop = "500ms"
protocol = "mptcp"
mptcp = {{ subflows = 2, version = 0 }}
clients = [{clients}]
servers = [{servers}]
{paths}
# The schemes of the paper's legends: single-path TCP (`protocol = "tcp"`: each MPTCP flow runs
# as one TCP connection, LIA becoming Reno) on ECMP and HULA, and MPTCP on ECMP, HULA and MP-HULA;
# LetFlow (NSDI 2017) as a further baseline the paper does not have.
[[variant]]
name = "TCP-ECMP"
protocol = "tcp"
program = "ecmp"

[[variant]]
name = "TCP-HULA"
protocol = "tcp"
program = "hula"

[[variant]]
name = "MPTCP-ECMP"
program = "ecmp"

[[variant]]
name = "MPTCP-LetFlow"
program = "letflow"

[[variant]]
name = "MPTCP-HULA"
program = "hula"

[[variant]]
name = "MPTCP-MP-HULA"
program = "mphula"

[programs.letflow]
flowlet_gap = "100us"
table_entries = 4096

[programs.hula]
probe_period = "200us"
flowlet_gap = "100us"
ageing = "1ms"
util_tau = "512us"
table_entries = 4096

[programs.mphula]
probe_period = "200us"
flowlet_gap = "100us"
ageing = "1ms"
util_tau = "512us"
table_entries = 4096
best_k = 2
assoc_entries = 4096
conn_entries = 4096

[sweep]
parameter = "workload.load"
values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
seeds = [1, 2, 3]
"""

# The fabric's upward links out of pod 1 and downward into pod 2: their rates are Fig. 9's.
LINKS = [
    ("tor0", "pod0-agg0"), ("tor0", "pod0-agg1"),
    ("pod0-agg0", "core0"), ("pod0-agg0", "core1"), ("pod0-agg1", "core0"), ("pod0-agg1", "core1"),
    ("core0", "pod1-agg0"), ("core0", "pod1-agg1"), ("core1", "pod1-agg0"), ("core1", "pod1-agg1"),
    ("pod1-agg0", "tor1"), ("pod1-agg1", "tor1"),
]


def paths(down):
    out = ["", "# Monitored links (each a two-switch path: its rate is a time-series column and a mean in",
           "# summary.json's paths), the data direction from pod 1 to pod 2."]
    for a, b in LINKS:
        if down and {a, b} == set(down):
            continue
        out += ["[[path]]", f'name = "{a}.{b}"', f'nodes = ["{a}", "{b}"]', ""]
    return "\n".join(out)


FIGS = [
    ("fig5-websearch-mptcp-coupled", "web-search, MPTCP coupled (LIA)",
     "MP-HULA Fig. 4 layout, web-search flows pod 1 -> pod 2, TCP and MPTCP (LIA) over ECMP, LetFlow, HULA, MP-HULA",
     "MP-HULA (NetCompute 2018) Figs. 5 and 6 (average FCT of all flows and of mice < 100 KB against load, MPTCP coupled)",
     "lia", "websearch", "ws", None),
    ("fig7-websearch-mptcp-uncoupled", "web-search, MPTCP uncoupled (each subflow Reno), with the links of Fig. 9",
     "MP-HULA Fig. 4 layout, web-search flows pod 1 -> pod 2, TCP and uncoupled MPTCP over ECMP, LetFlow, HULA, MP-HULA",
     "MP-HULA (NetCompute 2018) Figs. 7 and 9 (average FCT against load, MPTCP uncoupled; link utilisation)",
     "reno", "websearch", "ws", None),
    ("fig8-websearch-asymmetric", "web-search on the asymmetric layout: the link core1 - pod1-agg1 is down",
     "MP-HULA Fig. 4 layout without the link core1 - pod1-agg1, web-search flows pod 1 -> pod 2, MPTCP coupled",
     "MP-HULA (NetCompute 2018) Fig. 8 (average FCT against load, one core-aggregation link down)",
     "lia", "websearch", "ws", ("core1", "pod1-agg1")),
    ("fig10-datamining-mptcp-coupled", "data-mining, MPTCP coupled (LIA)",
     "MP-HULA Fig. 4 layout, data-mining flows pod 1 -> pod 2, TCP and MPTCP (LIA) over ECMP, LetFlow, HULA, MP-HULA",
     "MP-HULA (NetCompute 2018) Fig. 10 (average FCT against load, data-mining, MPTCP coupled)",
     "lia", "datamining", "dm", None),
]

for name, what, title, reproduces, cc, cdf, wl, down in FIGS:
    d = f'down = [["{down[0]}", "{down[1]}"]]       # Fig. 8: one core-aggregation link down\n' if down else ""
    text = HEADER.format(what=what, name=f"mphula-{name}", title=title, reproduces=reproduces, down=d,
                         cc=cc, cdf=cdf, wl=wl, clients=CLIENTS, servers=SERVERS, paths=paths(down))
    Path(f"scenarios/mphula2018/{name}.toml").write_text(text)
    print(f"wrote scenarios/mphula2018/{name}.toml")
