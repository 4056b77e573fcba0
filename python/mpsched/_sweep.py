"""Sweeps: a scenario over a grid of keys x variants x seeds, one simulator run per point, on
Ray (locally by default, a cluster by address) or on this machine's threads.

A point is a pure function of the scenario's text, the keys it sets, its variant and its seed:
it shares nothing with other points, so they run in any order on any worker, and the same
point gives the same figures wherever it runs. Each point's results are written, as it
finishes, to ``OUT/points/NNNNN.json`` in the format `mpsched sweep` writes; a sweep run again
into the same folder takes the points already there (same scenario digest, same point) and
runs only the rest.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from .errors import UsageError

__all__ = ["sweep", "summarize", "Point", "points_of"]

#: The figures of a point, as `mpsched sweep`'s `sweep.csv` has them (after point, value,
#: variant, seed; events last).
FIGURES = [
    "delivered_mbps",
    "finished_pct",
    "fct_mean_ms",
    "fct_p99_ms",
    "mice_fct_mean_ms",
    "mice_fct_p99_ms",
    "elephants_fct_mean_ms",
    "slowdown_mean",
    "slowdown_p99",
]


@dataclass(frozen=True)
class Point:
    """One point: its index among the sweep's, the keys it sets, its variant and seed."""

    index: int
    keys: dict
    variant: Optional[str]
    seed: int
    label: str


def _scenario(scenario: Any) -> Any:
    from . import Scenario

    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, (str, os.PathLike)):
        return Scenario.load(scenario)
    raise TypeError(f"a sweep runs a mpsched.Scenario or a scenario's path or name, not {type(scenario).__name__}")


def points_of(
    scenario: Any,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    variants: Optional[Iterable[str]] = None,
    seeds: Optional[Iterable[int]] = None,
) -> tuple[Optional[str], list[Point]]:
    """The sweep's points, values outermost (the grid's keys in order, the last fastest), then
    variants, then seeds, as `mpsched sweep` orders them; and the parameter's name (the keys,
    comma-separated). Defaults are the scenario's `[sweep]`: its key and values, its variants
    (else those chosen with `with_variant`, else all), its seeds (else the scenario's seed)."""
    sc = _scenario(scenario)
    spec = sc._inner.sweep_spec()
    if grid is None:
        grid = {spec[0]: spec[1]} if spec and spec[0] else {}
    grid = {str(k): list(v) for k, v in grid.items()}
    for k, v in grid.items():
        if not v:
            raise UsageError(f"grid key `{k}` has no values")
    if variants is None:
        variants = (spec[2] if spec else None) or sc.selected_variants or sc.variants
    variants = list(variants) or [None]
    for v in variants:
        if v is not None and v not in sc.variants:
            raise UsageError(f"scenario `{sc.name}` has no variant `{v}`; it has: {', '.join(sc.variants)}")
    seeds = list(seeds) if seeds is not None else (spec[3] if spec else [sc.seed])
    if not seeds:
        raise UsageError("no seeds")
    parameter = ",".join(grid) or None
    out = []
    for combo in itertools.product(*grid.values()) if grid else [()]:
        keys = dict(zip(grid, combo))
        label = sc._inner.value_label(keys) if keys else "-"
        for variant in variants:
            for seed in seeds:
                out.append(Point(len(out), keys, variant, int(seed), label))
    return parameter, out


def _node() -> Optional[str]:
    """The Ray node this runs on (its IP address), or None outside a Ray worker."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - where it ran is a nicety
        return None


def _run_one(
    parts: tuple, p: Point, parameter: Optional[str], duration: Optional[str] = None
) -> tuple[str, str, Optional[str]]:
    """Run point `p` of the scenario `parts` describes: ("ok", its file's text, node) or
    ("error", why, node). Never raises, so that one point's failure is a row, not the sweep's
    end."""
    try:
        sc = _native.Scenario.from_parts(*parts)
        return "ok", sc.run_point(p.keys, p.variant, p.seed, p.index, parameter, p.label, duration), _node()
    except Exception as e:  # noqa: BLE001 - a point's failure of any kind is recorded
        return "error", f"{type(e).__name__}: {e}", _node()


def _done_points(dir: Path, digest: str, points: Sequence[Point]) -> dict[int, str]:
    """The point files in `dir` of this sweep: same digest, same index, variant, seed, value."""
    done = {}
    if not dir.is_dir():
        return done
    for f in dir.glob("*.json"):
        try:
            text = f.read_text()
            r = json.loads(text)
            i = int(r["index"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if r.get("digest") != digest or not 0 <= i < len(points):
            continue
        p = points[i]
        if (r.get("variant"), r.get("seed"), r.get("value")) == (p.variant, p.seed, p.label):
            done[i] = text
    return done


def _progress(total: int, initial: int, enabled: bool) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency of the extras
        return None
    return tqdm(total=total, initial=initial, unit="point", desc="sweep", disable=not enabled)


def _run_local(parts, todo, parameter, duration, jobs, on_done) -> None:
    pool = ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)
    try:
        futures = {pool.submit(_run_one, parts, p, parameter, duration): p for p in todo}
        for f in as_completed(futures):
            on_done(futures[f], *f.result())  # node None: this machine
    finally:
        # On Ctrl-C: the points not started are dropped, the running ones finish (a run
        # cannot be stopped halfway); their files are written for the rerun.
        pool.shutdown(wait=True, cancel_futures=True)


_remote = None


def _run_ray(parts, todo, parameter, duration, address, on_done) -> None:
    global _remote
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            "sweep(backend='ray') needs Ray: pip install 'ray[default]' (or backend='local')"
        ) from e
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    if _remote is None:
        _remote = ray.remote(num_cpus=1, max_retries=0)(_run_one)
    pending = {_remote.remote(parts, p, parameter, duration): p for p in todo}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                p = pending.pop(ref)
                try:
                    status, text, node = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a worker lost, a task killed
                    status, text, node = "error", f"{type(e).__name__}: {e}", None
                on_done(p, status, text, node)
    finally:
        # On Ctrl-C (or any error here): the cluster is not left running this sweep's tasks.
        for ref in pending:
            ray.cancel(ref, force=True)


def sweep(
    scenario: Any,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    variants: Optional[Iterable[str]] = None,
    seeds: Optional[Iterable[int]] = None,
    backend: str = "ray",
    address: Optional[str] = None,
    out: Union[None, str, "os.PathLike[str]"] = None,
    jobs: Optional[int] = None,
    progress: bool = True,
    duration: Union[None, float, int, str] = None,
) -> Any:
    """Run `scenario` at every point of `grid` (dotted key -> values; several keys make their
    product) x `variants` x `seeds`, one simulator run of one repetition per point, and
    return one data frame of the points: point, one column per key, variant, seed, the figures
    of `mpsched sweep`'s table (`FIGURES`), events, engine_s, error (None, or why the point
    failed: the others go on), node (the Ray node's address that ran it; None for points run
    here or taken from `out`).

    `backend="ray"` runs one Ray task per point: on a local Ray runtime (`ray.init()`) by
    default, on the cluster at `address` otherwise (`"auto"`, `"ray://host:10001"`).
    `backend="local"` runs `jobs` points at once on this machine's threads (one per core by
    default; the simulator releases the GIL). With `out`, each point's results go to
    `out/points/NNNNN.json` as it finishes, and points already there are not run again.
    `duration` scales every point's scenario as `Scenario.run` does (seconds or "500ms"); it
    is part of what the points' files are matched by.
    """
    sc = _scenario(scenario)
    if backend not in ("ray", "local"):
        raise UsageError(f"unknown sweep backend `{backend}`: use ray or local")
    parameter, points = points_of(sc, grid, variants, seeds)
    for key in {p.label: p for p in points}.values():  # each value once: a bad one fails now
        sc.set(key.keys)
    parts = sc._inner.parts()
    duration = None if duration is None else (str(duration) if isinstance(duration, str) else f"{duration}")
    if duration is not None:
        sc._inner.check_duration(duration)
    digest = sc._inner.digest if duration is None else f"{sc._inner.digest}-{duration}"
    dir = Path(out) / "points" if out is not None else None
    if dir is not None:
        dir.mkdir(parents=True, exist_ok=True)
    done_text = _done_points(dir, digest, points) if dir is not None else {}
    results: dict[int, tuple[str, str, Optional[str]]] = {i: ("ok", t, None) for i, t in done_text.items()}
    todo = [p for p in points if p.index not in results]
    bar = _progress(len(points), len(results), progress)

    def on_done(p: Point, status: str, text: str, node: Optional[str]) -> None:
        results[p.index] = (status, text, node)
        if status == "ok" and dir is not None:
            tmp = dir / f".{p.index:05}.json.tmp"
            tmp.write_text(text)
            tmp.replace(dir / f"{p.index:05}.json")
        if bar is not None:
            bar.update(1)

    try:
        if todo and backend == "local":
            _run_local(parts, todo, parameter, duration, jobs, on_done)
        elif todo:
            _run_ray(parts, todo, parameter, duration, address, on_done)
    finally:
        if bar is not None:
            bar.close()
    return _frame(points, results, list(grid.keys()) if grid else _grid_keys(parameter))


def _grid_keys(parameter: Optional[str]) -> list[str]:
    return parameter.split(",") if parameter else []


def _frame(points: Sequence[Point], results: Mapping[int, tuple[str, str, Optional[str]]], keys: list[str]) -> Any:
    import pandas as pd

    rows, texts = [], []
    for p in points:
        status, text, node = results[p.index]
        row: dict[str, Any] = {"point": p.index}
        for k in keys:
            row[k] = p.keys.get(k)
        row.update(variant=p.variant, seed=p.seed)
        if status == "ok":
            figures = dict(_native.point_columns(text))
            r = json.loads(text)
            row.update({n: figures.get(n) for n in FIGURES})
            row.update(events=r["events"], engine_s=r["engine_s"], error=None, node=node)
            texts.append(text)
        else:
            row.update({n: None for n in FIGURES})
            row.update(events=None, engine_s=None, error=text, node=node)
        rows.append(row)
    df = pd.DataFrame(
        rows, columns=["point", *keys, "variant", "seed", *FIGURES, "events", "engine_s", "error", "node"]
    )
    for n in [*FIGURES, "engine_s"]:
        df[n] = df[n].astype("float64")
    df["events"] = df["events"].astype("Int64")
    df["variant"] = df["variant"].astype("string")
    df["error"] = df["error"].astype("string")
    df["node"] = df["node"].astype("string")
    df.attrs["points"] = texts
    return df


def summarize(points: Any) -> Any:
    """A sweep's frame over its seeds, as `mpsched sweep`'s `sweep_summary.csv`: one row per
    (value, variant), `seeds`, and for each figure its mean, min, max and 95 % confidence
    interval (`<figure>_mean`, `_min`, `_max`, `_ci95_lo`, `_ci95_hi`). Failed points are left
    out."""
    import pandas as pd

    rows = []
    for value, variant, n, figures in _native.aggregate_points(list(points.attrs.get("points", []))):
        row: dict[str, Any] = {"value": value, "variant": variant, "seeds": n}
        for name, f in figures:
            for suffix, x in zip(("mean", "min", "max", "ci95_lo", "ci95_hi"), f or (None,) * 5):
                row[f"{name}_{suffix}"] = x
        rows.append(row)
    return pd.DataFrame(rows)
