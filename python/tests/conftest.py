"""Shared fixtures: the `mpsched` command the Python results are held to."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _cli() -> str:
    """The command line tool built from this checkout: $MPSCHED_BIN, else target/release,
    else target/debug, else `mpsched` on PATH."""
    env = os.environ.get("MPSCHED_BIN")
    if env:
        return env
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "mpsched"
        if p.exists():
            return str(p)
    found = shutil.which("mpsched")
    if found:
        return found
    raise RuntimeError("no mpsched binary: build it (cargo build --release -p mpsched-cli) or set MPSCHED_BIN")


@pytest.fixture(scope="session")
def cli() -> str:
    return _cli()


def run_cli(cli: str, *args: str, env: "dict[str, str] | None" = None) -> subprocess.CompletedProcess:
    p = subprocess.run([cli, *args], capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
    if p.returncode != 0:
        raise AssertionError(f"mpsched {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p
