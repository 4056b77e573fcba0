#!/usr/bin/env python3
"""Generate a WiFi-like capacity trace for `[[rate_trace]]`: a CSV of `time_s,rate_mbps`.

Two shapes, both deterministic for a seed:

  markov   The link's modulation and coding moves between rate states (a Markov chain, as
           WiFi rate adaptation does when a device moves, walls and other stations come and
           go): each state has a mean rate (--states, Mbit/s) and a mean dwell time (--dwell,
           s, exponentially distributed); from a state the chain moves to a neighbouring state
           (one up or one down, equally likely, reflected at the ends). Within a state each
           sample is the state's rate times a log-normal factor (--jitter is its sigma:
           contention and retries).
  profile  A piecewise-linear capacity through the points of --profile (`t:rate,t:rate,...`,
           s and Mbit/s), with the same log-normal jitter: a capacity that falls and comes
           back, for showing a scheduler move traffic and take it back.

--outage START:LEN gives rate 0 (the link carries nothing) for LEN seconds from START (a
device out of range); the trace goes on after it as before.

Examples (the built-in traces, data/traces/):
  scripts/gen-wifi-trace.py profile --profile 0:60,8:60,12:6,20:6,24:60,30:60 --seed 1 --duration 30 > data/traces/wifi-falling.csv
  scripts/gen-wifi-trace.py markov --seed 7 --duration 60 > data/traces/wifi-office.csv
"""

import argparse
import math
import random
import sys


def parse_floats(text):
    return [float(x) for x in text.split(",") if x.strip()]


def sample_times(args):
    """The points' times, rounded to the microsecond so that they compare exactly."""
    n = int(round(args.duration / args.interval))
    return (round(i * args.interval, 6) for i in range(n + 1))


def markov(args, rng):
    rates = parse_floats(args.states)
    dwell = parse_floats(args.dwell)
    if len(rates) != len(dwell) or not rates:
        sys.exit("--states and --dwell need the same number of values")
    state = min(args.start_state, len(rates) - 1)
    leave_at = rng.expovariate(1.0 / dwell[state])
    for t in sample_times(args):
        while t >= leave_at:
            step = rng.choice((-1, 1))
            state = state + step if 0 <= state + step < len(rates) else state - step
            state = max(0, min(len(rates) - 1, state))
            leave_at += rng.expovariate(1.0 / dwell[state])
        yield t, rates[state]


def profile(args, rng):
    points = []
    for item in args.profile.split(","):
        t, r = item.split(":")
        points.append((float(t), float(r)))
    if not points or any(b[0] < a[0] for a, b in zip(points, points[1:])):
        sys.exit("--profile needs points in time order")
    for t in sample_times(args):
        if t <= points[0][0]:
            base = points[0][1]
        elif t >= points[-1][0]:
            base = points[-1][1]
        else:
            for (t0, r0), (t1, r1) in zip(points, points[1:]):
                if t0 <= t <= t1:
                    base = r0 if t1 == t0 else r0 + (r1 - r0) * (t - t0) / (t1 - t0)
                    break
        yield t, base


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shape", choices=("markov", "profile"))
    p.add_argument("--duration", type=float, default=30.0, help="seconds of trace (default 30)")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between points (default 0.1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jitter", type=float, default=0.15, help="sigma of the log-normal factor per point (default 0.15)")
    p.add_argument("--states", default="65,40,20,8", help="markov: the states' mean rates, Mbit/s")
    p.add_argument("--dwell", default="4,3,2,1.5", help="markov: the states' mean dwell times, s")
    p.add_argument("--start-state", type=int, default=0, help="markov: the state at time 0")
    p.add_argument("--profile", default="0:60,8:60,12:6,20:6,24:60,30:60", help="profile: t:rate points (s, Mbit/s)")
    p.add_argument("--outage", default=None, help="START:LEN seconds of rate 0")
    p.add_argument("--min-rate", type=float, default=0.5, help="lowest rate outside an outage, Mbit/s (default 0.5)")
    args = p.parse_args()
    if args.interval <= 0 or args.duration <= 0:
        sys.exit("--interval and --duration must be positive")
    rng = random.Random(args.seed)
    outage = None
    if args.outage:
        start, length = (float(x) for x in args.outage.split(":"))
        outage = (start, start + length)
    print("# " + " ".join(["scripts/gen-wifi-trace.py"] + sys.argv[1:]))
    print("time_s,rate_mbps")
    gen = markov(args, rng) if args.shape == "markov" else profile(args, rng)
    emitted_outage = False
    for t, base in gen:
        rate = max(args.min_rate, base * math.exp(rng.gauss(0.0, args.jitter)))
        if outage and outage[0] <= t < outage[1]:
            if not emitted_outage:
                print(f"{outage[0]:.3f},0")
                emitted_outage = True
            continue
        if outage and emitted_outage and t >= outage[1] and t - args.interval < outage[1]:
            print(f"{outage[1]:.3f},{rate:.3f}")
            if abs(t - outage[1]) < 1e-9:
                continue
        print(f"{t:.3f},{rate:.3f}")


if __name__ == "__main__":
    main()
