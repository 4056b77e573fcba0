"""The Python door as tight as the command line's: a value `set` cannot convert (too deep,
referring to itself, too many items, out of range) raises naming the key; `run` and `sweep`
hold their arguments to the bounds `mpsched run` and `mpsched sweep` hold theirs to
(`mpsched_scenario::limits`), refusing before anything is built or run. A call that crashed
the interpreter before runs in a child process, memory-capped, so that a crash fails the test
instead of ending pytest."""

from __future__ import annotations

import itertools
import os
import resource
import subprocess
import sys
import textwrap

import pytest

import mpsched
from mpsched import _native

# Tiny, so that a test that gets past a bound by mistake is still quick.
NAME = "tcp/two-flows"
SHORT = "0.01"
MEMORY_CAP = 2 << 30


def _capped() -> None:
    # A child that over-allocates aborts at the cap instead of taking the shared machine's RAM.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def child(code: str, timeout: float = 60) -> str:
    """Run `code` in a child Python (memory-capped): its standard output; the test fails when
    the child dies of a signal or exits non-zero."""
    p = subprocess.run(
        [sys.executable, "-c", "import mpsched\n" + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, preexec_fn=_capped,
    )
    assert p.returncode == 0, f"the child exited {p.returncode} (negative: killed by that signal):\n{p.stderr[-3000:]}"
    return p.stdout


# What a child prints for the exception a call raised: its class, field and message.
RAISES = """
def raises(f):
    try:
        f()
    except Exception as e:
        print(type(e).__name__, getattr(e, "field", "-"), str(e).replace("\\n", " "), sep="|")
    else:
        print("no exception")
sc = mpsched.Scenario.load("tcp/two-flows")
"""


@pytest.mark.parametrize("make, what", [
    ("v = {}\nfor _ in range(100_000):\n    v = {'a': v}", "deeper than"),
    ("v = []\nfor _ in range(100_000):\n    v = [v]", "deeper than"),
    ("v = []\nv.append(v)", "contains itself"),
    ("v = {}\nv['a'] = [1, v]", "contains itself"),
])
def test_set_refuses_a_deep_or_self_referencing_value_without_crashing(make, what):
    out = child(RAISES + make + "\nraises(lambda: sc.set({'workload.load': v}))\n")
    cls, field, msg = out.strip().split("|", 2)
    assert cls == "ScenarioError" and field.startswith("workload.load"), out
    assert what in msg and "workload.load" in msg, out


def test_set_refuses_a_value_shared_into_a_billion_items_without_allocating_them():
    # Three lists of 1 000 references each: small in Python, 10^9 items once copied.
    out = child(RAISES + "a = [0] * 1000\nb = [a] * 1000\nc = [b] * 1000\n"
                "raises(lambda: sc.set({'workload.load': c}))\n")
    cls, field, msg = out.strip().split("|", 2)
    assert cls == "ScenarioError" and field.startswith("workload.load"), out
    assert f"{_native.MAX_VALUE_ITEMS}" in msg, out


def test_a_value_at_the_depth_bound_is_converted():
    sc = mpsched.Scenario.load(NAME)
    v = 1
    for _ in range(_native.MAX_VALUE_DEPTH):
        v = [v]
    # The key does not exist, so validation refuses it: conversion itself went through.
    with pytest.raises(mpsched.ScenarioError) as e:
        sc.set({"no_such_table.x": v})
    assert "deeper" not in str(e.value)
    with pytest.raises(mpsched.ScenarioError, match="deeper than"):
        sc.set({"no_such_table.x": [v]})


def test_set_names_the_key_of_a_value_it_cannot_convert():
    sc = mpsched.Scenario.load(NAME)
    with pytest.raises(TypeError, match=r"scenario\.seed"):
        sc.set({"scenario.seed": object()})
    with pytest.raises(TypeError, match=r"workload\.x\[1\]"):
        sc.set({"workload.x": [1, {2, 3}]})
    with pytest.raises(TypeError, match=r"flow\.a.*keys are strings"):
        sc.set({"flow.a": {1: 2}})
    with pytest.raises(TypeError, match="dotted key"):
        sc.set({7: 1})
    with pytest.raises(mpsched.ScenarioError) as e:
        sc.set({"scenario.seed": 2**70})
    assert e.value.field == "scenario.seed" and "64-bit" in e.value.message


def test_the_bounds_are_the_command_lines():
    # One place: mpsched_scenario::limits, which `mpsched run` and `mpsched sweep` use too.
    assert _native.MAX_REPETITIONS == 1_000
    assert _native.MAX_SWEEP_POINTS == 100_000
    assert _native.MAX_SWEEP_SEEDS == 100_000
    assert _native.MAX_SWEEP_SEED == 2**63 - 1


def test_the_cli_refuses_what_python_refuses(cli):
    for args in (["run", NAME, "--repetitions", "0"], ["run", NAME, "--repetitions", "1001"],
                 ["sweep", NAME, "--variant", "reno", "--seeds", "0-100000", "--list"],
                 ["sweep", NAME, "--seeds", "1-100000", "--list"]):  # two variants: 200 000 points
        p = subprocess.run([cli, *args], capture_output=True, text=True)
        assert p.returncode == 2 and "at most" in p.stderr + p.stdout or "1 to 1000" in p.stderr, (args, p.stderr)
    p = subprocess.run([cli, "sweep", NAME, "--variant", "reno", "--seeds", "1-100000", "--list"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 100_001, p.stderr


@pytest.mark.parametrize("reps", [0, 1001, -1, 2**64])
def test_run_refuses_repetitions_outside_one_to_the_bound(reps):
    with pytest.raises(mpsched.UsageError, match="repetitions.*1 to 1000"):
        mpsched.Scenario.load(NAME).run(duration=SHORT, repetitions=reps)


def test_a_billion_repetitions_is_refused_not_an_abort():
    out = child(RAISES + f"raises(lambda: sc.run(duration={SHORT!r}, repetitions=10**9))\n", timeout=120)
    assert out.startswith("UsageError|") and "1 to 1000" in out, out


@pytest.mark.parametrize("arg", ["seed", "repetitions"])
@pytest.mark.parametrize("bad", [1.5, "3", True, [1]])
def test_run_refuses_a_seed_or_repetitions_that_is_not_an_int(arg, bad):
    with pytest.raises(TypeError, match=arg):
        mpsched.Scenario.load(NAME).run(duration=SHORT, **{arg: bad})


@pytest.mark.parametrize("seed", [-1, 2**64, 2**200])
def test_run_refuses_a_seed_outside_64_bits(seed):
    with pytest.raises(mpsched.UsageError, match="seed"):
        mpsched.Scenario.load(NAME).run(duration=SHORT, seed=seed)


def test_run_refuses_a_seed_whose_repetitions_would_wrap():
    sc = mpsched.Scenario.load(NAME)
    assert sc.run(duration=SHORT, seed=2**64 - 1, repetitions=1).summary["seed"] == 2**64 - 1
    with pytest.raises(mpsched.UsageError, match="seed"):
        sc.run(duration=SHORT, seed=2**64 - 1, repetitions=2)


@pytest.mark.parametrize("d", [float("nan"), float("inf"), -1.0, -1, 0, 0.0, 1e300, 10**400, "-1s", ""])
def test_run_refuses_a_duration_that_is_no_time(d):
    with pytest.raises(mpsched.UsageError, match="duration"):
        mpsched.Scenario.load(NAME).run(duration=d)


@pytest.mark.parametrize("d", [True, b"1s", [1]])
def test_run_refuses_a_duration_of_another_type(d):
    with pytest.raises(TypeError, match="duration"):
        mpsched.Scenario.load(NAME).run(duration=d)


def test_a_duration_is_read_the_same_by_run_and_sweep():
    # Python writes 5e-05 with an exponent; the time it means is still 50 us.
    assert _native.duration_text(5e-05) == "0.00005"
    assert _native.duration_text(2) == "2" and _native.duration_text("500ms") == "500ms"


def test_from_toml_holds_a_text_to_the_file_bound():
    text = "#" * (64 * 1024 * 1024 + 1)
    with pytest.raises(mpsched.ScenarioError, match="at most"):
        mpsched.Scenario.from_toml(text)


class Sized:
    """A grid's values or seeds that have a length and fail when listed: a sweep past the
    bound must be refused from the sizes alone."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        raise AssertionError("listed before the point count was checked")


@pytest.mark.parametrize("grid, seeds", [
    ({"workload.load": Sized(2_000_000)}, [1]),
    ({"workload.load": Sized(1_000), "scenario.seed": Sized(1_000)}, [1]),
    ({"workload.load": [0.5, 0.6]}, Sized(60_000)),
    ({"workload.load": [0.5]}, range(10**12)),
])
def test_sweep_refuses_more_points_than_the_bound_from_the_sizes(grid, seeds):
    with pytest.raises(mpsched.UsageError, match="at most 100000"):
        mpsched.sweep(NAME, grid=grid, seeds=seeds, backend="local", progress=False)


def test_sweep_refuses_an_endless_grid_without_listing_it():
    out = child(RAISES + "import itertools\n"
                "raises(lambda: mpsched.sweep(sc, grid={'workload.load': itertools.count()}, "
                "backend='local', progress=False))\n")
    assert out.startswith("UsageError|") and "at most 100000" in out, out


@pytest.mark.parametrize("seeds, error", [
    ([-1], mpsched.UsageError), ([2**63], mpsched.UsageError), ([1.5], TypeError), (["3"], TypeError),
    ([True], TypeError), ([], mpsched.UsageError),
])
def test_sweep_refuses_a_seed_the_command_line_refuses(seeds, error):
    with pytest.raises(error, match="seed"):
        mpsched.sweep(NAME, seeds=seeds, backend="local", progress=False, duration=SHORT)


@pytest.mark.parametrize("jobs, error", [(0, mpsched.UsageError), (-2, mpsched.UsageError), (1.5, TypeError)])
def test_sweep_refuses_jobs_the_command_line_refuses(jobs, error):
    with pytest.raises(error, match="jobs"):
        mpsched.sweep(NAME, seeds=[1], backend="local", jobs=jobs, progress=False, duration=SHORT)


def test_sweep_threads_are_capped_at_the_cores_and_the_points():
    import mpsched._sweep as msweep

    cores = len(os.sched_getaffinity(0))
    assert msweep._workers(10**9, 100_000) == cores
    assert msweep._workers(None, 1) == 1 and msweep._workers(1, 50) == 1


def test_a_sweep_within_the_bounds_still_runs():
    df = mpsched.sweep(NAME, variants=["reno"], seeds=itertools.islice(itertools.count(1), 2), backend="local",
                       jobs=10**6, progress=False, duration=SHORT)
    assert list(df["seed"]) == [1, 2] and df["error"].isna().all(), df["error"]
