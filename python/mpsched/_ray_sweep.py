"""`mpsched sweep --ray [ADDRESS]`: the command writes the sweep's plan (its scenario text,
key, values, variants, seeds) to OUT/ray-plan.json and runs ``python -m mpsched._ray_sweep
PLAN``, which runs every point as a Ray task into OUT/points/ (points already there are not run
again); the command then reads those files for its table, CSVs and plot.

Exit codes: 0 every point ran; 1 some failed (their errors printed; the others written);
2 a bad plan; 3 no Ray here.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m mpsched._ray_sweep OUT/ray-plan.json", file=sys.stderr)
        return 2
    try:
        import ray  # noqa: F401 - only to fail early and clearly
    except ImportError:
        print("mpsched sweep --ray: this Python has no Ray (pip install 'ray[default]')", file=sys.stderr)
        return 3
    import mpsched
    from mpsched import _native

    with open(argv[0]) as f:
        plan = json.load(f)
    try:
        sc = mpsched.Scenario.from_toml(plan["text"], plan["origin"])
    except mpsched.ScenarioError as e:
        print(f"mpsched sweep --ray: {e}", file=sys.stderr)
        return 2
    grid = {plan["parameter"]: [_native.toml_to_python(v) for v in plan["values"]]} if plan["parameter"] else {}
    address = None if plan["address"] == "local" else plan["address"]
    df = mpsched.sweep(sc, grid=grid, variants=plan["variants"], seeds=plan["seeds"], backend="ray",
                       address=address, out=plan["out"])
    failed = df[df["error"].notna()]
    for _, r in failed.iterrows():
        print(f"point {r['point']} (variant {r['variant']}, seed {r['seed']}): {r['error']}", file=sys.stderr)
    return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
