"""Scenarios from Python: every built-in runs with the summary `mpsched run` writes; bad input
raises with the file and the field; frames are typed; the GIL is released while a run runs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import mpsched
from conftest import run_cli

# Short enough for 30 scenarios in a minute or two, long enough for every flow to start
# (scenarios are scaled to it, their timelines with them).
DURATION = "0.1"
SEED = 7


def test_builtins_are_listed_and_load():
    names = mpsched.builtins()
    assert "motohashi2022/s3b-dwrr-two-flows" in names and len(names) >= 30
    for n in names:
        sc = mpsched.Scenario.load(n)
        assert sc.name and sc.origin.startswith("<builtin>/scenarios/")


@pytest.mark.parametrize("name", mpsched.builtins())
def test_every_builtin_runs_as_the_cli_runs_it(name, cli, tmp_path):
    sc = mpsched.Scenario.load(name)
    r = sc.run(seed=SEED, duration=DURATION, repetitions=1)
    run_cli(cli, "run", name, "--seed", str(SEED), "--duration", DURATION, "--repetitions", "1",
            "--out", str(tmp_path), "--no-plot")
    written = (tmp_path / "summary.json").read_text()
    assert r.summary_json() == written
    assert r.summary == json.loads(written)
    assert r.events > 0 and r.backend == "sim"


def test_a_result_writes_what_the_cli_writes(cli, tmp_path):
    name = "tcp/two-flows"
    cli_out, py_out = tmp_path / "cli", tmp_path / "py"
    run_cli(cli, "run", name, "--seed", "3", "--duration", "1", "--out", str(cli_out), "--no-plot")
    mpsched.Scenario.load(name).run(seed=3, duration=1).write(py_out, plot=False)
    cli_files = sorted(p.relative_to(cli_out) for p in cli_out.rglob("*") if p.is_file())
    py_files = sorted(p.relative_to(py_out) for p in py_out.rglob("*") if p.is_file())
    assert cli_files == py_files and cli_files
    for f in cli_files:
        assert (cli_out / f).read_bytes() == (py_out / f).read_bytes(), f


def test_plots_are_written_too(tmp_path):
    mpsched.Scenario.load("motohashi2022/s3b-dwrr-two-flows").with_variant("DWRR").run(duration=1).write(tmp_path)
    assert (tmp_path / "throughput.png").stat().st_size > 1000


def test_frames_have_typed_columns_with_units():
    r = mpsched.Scenario.load("motohashi2022/s3b-dwrr-two-flows").run(duration=2, repetitions=1)
    assert r.variants == mpsched.Scenario.load("motohashi2022/s3b-dwrr-two-flows").variants
    f = r.flows
    assert list(f.columns[:3]) == ["variant", "id", "offered_mbps"]
    assert str(f["delivered_mbps"].dtype) == "float64" and str(f["id"].dtype) == "string"
    assert len(f) == sum(len(s["flows"]) for s in r.summary["variants"])
    p = r.paths
    assert set(p["variant"]) == set(r.variants) and (p["mean_mbps"] >= 0).all()
    ts = r.timeseries
    assert ts.columns[1] == "time_s" and (ts.dtypes.iloc[1:] == "float64").all()
    assert len(ts) > 0


def test_transfers_are_a_frame_of_completion_times():
    r = mpsched.Scenario.load("dc/websearch-k4-load").with_variant(
        mpsched.Scenario.load("dc/websearch-k4-load").variants[0]).run(duration=0.5, repetitions=1)
    t = r.transfers
    assert len(t) > 0 and str(t["size_bytes"].dtype) == "int64"
    done = t.dropna(subset=["fct_s"])
    assert len(done) > 0 and (done["fct_s"] >= done["ideal_fct_s"] * 0.999).all()


def test_set_changes_the_run_as_the_cli_set_does(cli, tmp_path):
    name = "motohashi2022/s3b-dwrr-two-flows"
    r = mpsched.Scenario.load(name).with_variant("DWRR").set({"scenario.seed": 11}).run(duration=1)
    run_cli(cli, "run", name, "--variant", "DWRR", "--seed", "11", "--duration", "1", "--out", str(tmp_path),
            "--no-plot")
    assert r.summary == json.loads((tmp_path / "summary.json").read_text())


BAD_RATE = """
[scenario]
name = "bad"
duration = "1s"
[[node]]
name = "h1"
kind = "host"
[[node]]
name = "h2"
kind = "host"
[[link]]
a = "h1"
b = "h2"
rate = "fast"
"""


def test_a_bad_field_raises_with_the_file_and_the_field():
    with pytest.raises(mpsched.ScenarioError) as e:
        mpsched.Scenario.from_toml(BAD_RATE, "my.toml")
    assert e.value.file == "my.toml"
    assert "link" in e.value.field and "rate" in e.value.field
    assert e.value.message and isinstance(e.value, ValueError)


def test_a_file_that_is_not_toml_raises(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("[scenario\nname = 1\n")
    with pytest.raises(mpsched.ScenarioError) as e:
        mpsched.Scenario.load(p)
    assert e.value.file == str(p)


def test_set_refuses_unknown_keys_and_bad_values():
    sc = mpsched.Scenario.load("tcp/two-flows")
    with pytest.raises(mpsched.ScenarioError):
        sc.set({"no_such_table.x": 1})
    with pytest.raises(mpsched.ScenarioError) as e:
        sc.set({"scenario.duration": 5})
    assert "duration" in e.value.field
    with pytest.raises(TypeError):
        sc.set({"scenario.seed": object()})


def test_bad_arguments_raise_usage_errors():
    sc = mpsched.Scenario.load("motohashi2022/s3b-dwrr-two-flows")
    with pytest.raises(mpsched.UsageError, match="no variant"):
        sc.with_variant("NOPE")
    with pytest.raises(mpsched.UsageError, match="backend"):
        sc.run(backend="ns3")
    with pytest.raises(mpsched.UsageError, match="duration"):
        sc.run(duration="soon")
    with pytest.raises(mpsched.UsageError, match="neither a file nor a built-in"):
        mpsched.Scenario.load("no/such/scenario")


def test_the_gil_is_released_while_a_run_runs():
    sc = mpsched.Scenario.load("dc/fat-tree-k4-permutation")
    done = threading.Event()
    ticks = 0

    def work():
        sc.run(duration=1, repetitions=1)
        done.set()

    t = threading.Thread(target=work)
    start = time.monotonic()
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.monotonic() - start
    # With the GIL held for the run, this loop would not run at all until it ended.
    assert elapsed > 0.05 and ticks > elapsed * 100, (elapsed, ticks)


def test_the_kernel_backend_runs_from_python_as_root():
    import os

    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the kernel backend's test needs root, and CI=true does not skip it")
        pytest.skip("needs root (network namespaces, eBPF)")
    sc = mpsched.Scenario.load("motohashi2022/s1-homogeneous").with_variant("WRR")
    r = sc.run(duration=3, repetitions=1, backend="netns")
    assert r.backend == "netns" and r.summary["backend"] == "netns"
    f = r.flows.set_index("id")
    assert (f["delivered_mbps"] > 0).all(), f
    with pytest.raises(mpsched.UsageError):
        sc.run(duration="0s", backend="netns")


def test_bmv2_runs_from_python_as_root():
    import os
    import shutil

    has_p4 = shutil.which("simple_switch") or os.path.exists("/opt/p4/bin/simple_switch")
    if os.geteuid() != 0 or not has_p4:
        if os.environ.get("CI") == "true":
            pytest.fail("BMv2 from Python needs root and the P4 toolchain, and CI=true does not skip it")
        pytest.skip("needs root and BMv2 (scripts/install-deps.sh installs it into /opt/p4)")
    r = mpsched.Scenario.load("motohashi2022/s1-homogeneous").with_variant("WRR").run(
        duration=5, repetitions=1, backend="bmv2")
    assert r.summary["backend"] == "bmv2"
    f = r.flows.set_index("id")
    assert f.loc["flow1", "delivered_mbps"] > 0.5 * f.loc["flow1", "offered_mbps"], f


def _needs_root_for_signals() -> None:
    import os

    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the kernel backend's signal test needs root, and CI=true does not skip it")
        pytest.skip("needs root (network namespaces, eBPF)")


def _namespaces() -> str:
    import subprocess

    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_ctrl_c_stops_a_kernel_run_from_python_and_leaves_no_namespace(tmp_path):
    import signal
    import subprocess
    import sys

    _needs_root_for_signals()
    namespaces = _namespaces
    before = namespaces()
    script = (
        "import mpsched\n"
        "try:\n"
        "    mpsched.Scenario.load('motohashi2022/s1-homogeneous').with_variant('WRR')"
        ".run(duration=20, repetitions=1, backend='netns')\n"
        "except KeyboardInterrupt:\n"
        "    raise SystemExit(130)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script])
    time.sleep(4)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == 130
    assert namespaces() == before


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM"])
def test_a_closed_terminal_or_kill_ends_a_kernel_run_from_python_by_its_signal_and_leaves_nothing(sig):
    """Issue 45 item 3: SIGHUP (a closed terminal or SSH session) and SIGTERM killed the
    interpreter at once, leaving the run's namespaces, programs and processes. Now the run
    removes what it made, and then the signal ends the process as it would have."""
    import signal
    import subprocess
    import sys

    _needs_root_for_signals()
    namespaces = _namespaces
    before = namespaces()
    script = (
        "import mpsched\n"
        "mpsched.Scenario.load('motohashi2022/s1-homogeneous').with_variant('WRR')"
        ".run(duration=20, repetitions=1, backend='netns')\n"
    )
    p = subprocess.Popen([sys.executable, "-c", script])
    time.sleep(4)
    assert namespaces() != before, "the run had made its namespaces"
    p.send_signal(getattr(signal, sig))
    assert p.wait(timeout=30) == -getattr(signal, sig), "ended by the signal"
    assert namespaces() == before
