"""The examples run: the notebook headless (nbconvert) with its plot written, and the Fig. 11
script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

EXAMPLES = REPO / "examples" / "python"


def _needs(module: str):
    if os.environ.get("CI") == "true":
        return __import__(module)
    return pytest.importorskip(module)


def test_the_notebook_sweeps_on_ray_and_writes_its_plot(tmp_path):
    for m in ("ray", "nbconvert", "matplotlib", "ipykernel"):
        _needs(m)
    out = tmp_path / "sweep"
    env = {
        **os.environ,
        "MPSCHED_NB_DURATION": "0.2s",
        "MPSCHED_NB_LOADS": "0.2,0.6",
        "MPSCHED_NB_OUT": str(out),
    }
    nb = tmp_path / "executed.ipynb"
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.timeout=600", "--output", str(nb), str(EXAMPLES / "mphula-load-sweep.ipynb")],
        check=True, env=env, capture_output=True,
    )
    png = out / "mphula-load-sweep.png"
    assert png.stat().st_size > 10_000
    assert len(list((out / "points").glob("*.json"))) == 2 * 2 * 3


def test_the_fig11_script_draws_the_figure(tmp_path):
    _needs("matplotlib")
    png = tmp_path / "fig11.png"
    p = subprocess.run([sys.executable, str(EXAMPLES / "fig11.py"), "--duration", "30", "--out", str(png)],
                       check=True, capture_output=True, text=True)
    assert png.stat().st_size > 10_000
    assert "DWRR" in p.stdout and "WRR" in p.stdout
