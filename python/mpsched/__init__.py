"""mpsched from Python: scenarios run in-process, results as pandas data frames.

    >>> import mpsched
    >>> sc = mpsched.Scenario.load("motohashi2022/s3b-dwrr-two-flows")
    >>> r = sc.with_variant("DWRR").run(duration=2)
    >>> r.flows[["id", "delivered_mbps"]]

The simulator runs in this process with the GIL released (`Scenario.run`); the kernel and
BMv2 backends run as `mpsched run --backend netns|bmv2` does, as root. A result's `summary`
is the `summary.json` that `mpsched run` writes, and `write(dir)` writes the same files.
docs/python.md has the whole of it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from .errors import MpschedError, RunError, ScenarioError, UsageError

__all__ = [
    "Scenario",
    "Result",
    "builtins",
    "sweep",
    "summarize",
    "MpschedError",
    "ScenarioError",
    "UsageError",
    "RunError",
    "MAX_REPETITIONS",
    "MAX_SWEEP_POINTS",
    "MAX_SWEEP_SEEDS",
    "MAX_SWEEP_SEED",
    "MAX_VALUE_DEPTH",
    "MAX_VALUE_ITEMS",
    "__version__",
]

__version__: str = _native.__version__

#: The bounds `mpsched run` and `mpsched sweep` hold their arguments to
#: (`mpsched_scenario::limits`), which `Scenario.run`, `Scenario.set` and `sweep` hold theirs
#: to.
MAX_REPETITIONS: int = _native.MAX_REPETITIONS
MAX_SWEEP_POINTS: int = _native.MAX_SWEEP_POINTS
MAX_SWEEP_SEEDS: int = _native.MAX_SWEEP_SEEDS
MAX_SWEEP_SEED: int = _native.MAX_SWEEP_SEED
MAX_VALUE_DEPTH: int = _native.MAX_VALUE_DEPTH
MAX_VALUE_ITEMS: int = _native.MAX_VALUE_ITEMS

Value = Union[bool, int, float, str, Sequence[Any], Mapping[str, Any]]


def builtins() -> list[str]:
    """The built-in scenarios' names (`mpsched list`), each loadable by `Scenario.load`."""
    return list(_native.builtins())


class Scenario:
    """A scenario: a file's (or a built-in's) text, keys set on it, variants chosen.

    Every instance is valid: each constructor and each method that returns a new scenario
    validates it and raises `ScenarioError` (with `.file`, `.field`, `.message`) otherwise.
    Scenarios are immutable; `set` and `with_variant` return new ones.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: "_native.Scenario") -> None:
        self._inner = inner

    @staticmethod
    def load(path_or_name: Union[str, "os.PathLike[str]"]) -> "Scenario":
        """A scenario file, or a built-in scenario by name, as `mpsched run` takes it."""
        return Scenario(_native.Scenario.load(os.fspath(path_or_name)))

    @staticmethod
    def from_toml(text: str, origin: str = "<string>") -> "Scenario":
        """A scenario from its TOML text; `origin` names it in errors."""
        return Scenario(_native.Scenario.from_toml(text, origin))

    @property
    def name(self) -> str:
        """The scenario's name (`[scenario] name`)."""
        return self._inner.name

    @property
    def origin(self) -> str:
        """Where it came from: a path, `<builtin>/scenarios/...`, or `from_toml`'s origin."""
        return self._inner.origin

    @property
    def reproduces(self) -> str:
        """The paper's figure or table it reproduces."""
        return self._inner.reproduces

    @property
    def variants(self) -> list[str]:
        """The names of all its variants (empty for a scenario without any)."""
        return list(self._inner.variants)

    @property
    def selected_variants(self) -> list[str]:
        """The variants `run` runs; empty: all of them."""
        return list(self._inner.selected_variants)

    @property
    def seed(self) -> int:
        """Its base seed (repetition i runs with seed + i)."""
        return self._inner.seed

    @property
    def duration_s(self) -> float:
        """Its duration, seconds."""
        return self._inner.duration_s

    @property
    def overrides(self) -> list[tuple[str, str]]:
        """The keys set so far: (dotted key, value as TOML)."""
        return list(self._inner.overrides)

    def with_variant(self, name: Union[str, Iterable[str]]) -> "Scenario":
        """The scenario running only variant `name` (or the variants named)."""
        names = [name] if isinstance(name, str) else list(name)
        return Scenario(self._inner.with_variants(names))

    def set(self, keys: Mapping[str, Value]) -> "Scenario":
        """The scenario with each dotted key set before validation, as a sweep sets them:
        ``sc.set({"workload.load": 0.5, "scenario.duration": "2s"})``. Values are typed as
        Python types them (0.5 a float, "2s" a string). A value of another type raises
        `TypeError`; one nested deeper than `MAX_VALUE_DEPTH` lists and dicts, with more than
        `MAX_VALUE_ITEMS` items, containing itself, or an int outside 64 bits raises
        `ScenarioError`; both name the key (and where in its value)."""
        return Scenario(self._inner.set(dict(keys)))

    def validate(self) -> None:
        """Validate again; raises `ScenarioError`. (A scenario is validated when made.)"""
        self._inner.validate()

    def run(
        self,
        seed: Optional[int] = None,
        duration: Union[None, float, int, str] = None,
        backend: str = "sim",
        repetitions: Optional[int] = None,
    ) -> "Result":
        """Run it, as `mpsched run` does: every selected variant (all by default), each
        `repetitions` times (default the scenario's) from `seed` (default the scenario's),
        cut short at `duration` (seconds, or a time such as "500ms": the same experiment
        stopped earlier, at most the scenario's own duration, as `mpsched run --duration`). `backend` is "sim" (this
        process, the GIL released), or as root "netns" or "bmv2" (Ctrl-C stops a kernel run
        and removes what it made).

        The bounds are `mpsched run`'s: `repetitions` 1 to `MAX_REPETITIONS`, `seed` 0 to
        2**64 - 1 (and the last repetition's seed + i too), `duration` above zero and at most
        the scenario's. An argument of the wrong type raises `TypeError`, one out of
        bounds `UsageError`, before anything runs."""
        return Result(self._inner.run(seed, duration, backend, repetitions))

    def __repr__(self) -> str:
        return f"Scenario({self.name!r}, origin={self.origin!r})"

    def __reduce__(self) -> tuple:
        # Pickled as what makes it (text, origin, keys set, variants): for Ray and processes.
        return (_from_parts, self._inner.parts())


def _from_parts(text: str, origin: str, overrides: list, variants: list) -> Scenario:
    return Scenario(_native.Scenario.from_parts(text, origin, overrides, variants))


class Result:
    """What a run produced.

    `summary` is the `summary.json` `mpsched run` writes (a dict); `flows`, `paths`,
    `timeseries` and `transfers` are pandas data frames (one row per flow, path, sample or
    transfer, a `variant` column first when the scenario has variants); `write(dir)` writes
    `mpsched run`'s files.
    """

    def __init__(self, inner: "_native.RunResult") -> None:
        self._inner = inner
        self._summary: Optional[dict[str, Any]] = None

    @property
    def summary(self) -> dict[str, Any]:
        """The summary, as `summary.json` holds it."""
        if self._summary is None:
            self._summary = json.loads(self._inner.summary_json())
        return self._summary

    def summary_json(self) -> str:
        """`summary.json`'s text, byte for byte as `mpsched run` writes it."""
        return self._inner.summary_json()

    @property
    def variants(self) -> list[Optional[str]]:
        """The variants that ran, in order (None for a scenario without variants)."""
        return list(self._inner.variants)

    @property
    def backend(self) -> str:
        """sim, netns or bmv2."""
        return self._inner.backend

    @property
    def events(self) -> int:
        """Events processed, all variants and repetitions (0 on the kernel)."""
        return self._inner.events

    @property
    def engine_s(self) -> float:
        """Engine seconds, all variants and repetitions (setup and collection apart)."""
        return self._inner.engine_s

    def _summaries(self) -> list[dict[str, Any]]:
        s = self.summary
        return s["variants"] if "variants" in s else [s]

    def _frame(self, rows: list[dict[str, Any]], columns: list[str]) -> "Any":
        import pandas as pd

        df = pd.DataFrame(rows, columns=columns)
        if any(v is not None for v in self.variants):
            df.insert(0, "variant", pd.Series([r["_variant"] for r in rows], dtype="string"))
        return df

    @property
    def flows(self) -> "Any":
        """Per flow, averaged over repetitions: id, offered_mbps, delivered_mbps, loss_pct,
        mean_owd_ms, reordered_pct, delivered_mib, delivered_min_mbps, delivered_max_mbps."""
        cols = [
            "id",
            "offered_mbps",
            "delivered_mbps",
            "loss_pct",
            "mean_owd_ms",
            "reordered_pct",
            "delivered_mib",
            "delivered_min_mbps",
            "delivered_max_mbps",
        ]
        rows = []
        for v, s in zip(self.variants, self._summaries()):
            for f in s["flows"]:
                spread = f.get("delivered_spread_mbps") or {}
                row = {c: f.get(c) for c in cols[:7]}
                row.update(delivered_min_mbps=spread.get("min"), delivered_max_mbps=spread.get("max"), _variant=v)
                rows.append(row)
        return _typed(self._frame(rows, cols), floats=cols[1:])

    @property
    def paths(self) -> "Any":
        """Per path, averaged over repetitions: id, mean_mbps, capacity_mbps, min_mbps,
        max_mbps."""
        cols = ["id", "mean_mbps", "capacity_mbps", "min_mbps", "max_mbps"]
        rows = []
        for v, s in zip(self.variants, self._summaries()):
            for p in s["paths"]:
                spread = p.get("spread_mbps") or {}
                rows.append(
                    dict(
                        id=p["id"],
                        mean_mbps=p["mean_mbps"],
                        capacity_mbps=p["capacity_mbps"],
                        min_mbps=spread.get("min"),
                        max_mbps=spread.get("max"),
                        _variant=v,
                    )
                )
        return _typed(self._frame(rows, cols), floats=cols[1:])

    @property
    def timeseries(self) -> "Any":
        """The first repetition's samples, `timeseries.csv`'s columns (time_s first, each
        with its unit in its name), all variants stacked."""
        import pandas as pd

        frames = []
        for i, v in enumerate(self.variants):
            columns, rows = self._inner.timeseries(i)
            df = pd.DataFrame(rows, columns=columns, dtype="float64")
            if v is not None:
                df.insert(0, "variant", pd.Series([v] * len(df), dtype="string"))
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def transfers(self) -> "Any":
        """The first repetition's fixed-size transfers (`flows.csv`): id, src, dst,
        size_bytes, start_s, fct_s (NaN when unfinished), ideal_fct_s, slowdown,
        retransmissions."""
        cols = ["id", "src", "dst", "size_bytes", "start_s", "fct_s", "ideal_fct_s", "slowdown", "retransmissions"]
        rows = []
        for i, v in enumerate(self.variants):
            for t in self._inner.transfers(i):
                row = dict(zip(cols, t))
                row["_variant"] = v
                rows.append(row)
        df = self._frame(rows, cols)
        df = _typed(df, floats=["start_s", "fct_s", "ideal_fct_s", "slowdown"])
        df["size_bytes"] = df["size_bytes"].astype("int64")
        df["retransmissions"] = df["retransmissions"].astype("Int64")
        return df

    def write(self, dir: Union[str, "os.PathLike[str]"], plot: bool = True) -> None:
        """Write what `mpsched run --out DIR` writes (with `plot`, its PNGs too)."""
        self._inner.write(os.fspath(dir), plot)

    def __repr__(self) -> str:
        names = ", ".join(v for v in self.variants if v) or "-"
        return f"Result({self.summary['scenario']!r}, backend={self.backend!r}, variants=[{names}])"


def _typed(df: "Any", floats: list[str]) -> "Any":
    for c in floats:
        df[c] = df[c].astype("float64")
    df["id"] = df["id"].astype("string")
    for c in ("src", "dst"):
        if c in df:
            df[c] = df[c].astype("string")
    return df


from ._sweep import summarize, sweep  # noqa: E402 - the sweep module uses Scenario
