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
import operator
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


def _size(items: Any, what: str) -> Optional[int]:
    """How many `items` has, if it says (a list, a range), without listing them."""
    try:
        return len(items)
    except TypeError:
        return None  # a generator: listed below, but never past the bound
    except OverflowError as e:  # a length past sys.maxsize
        raise UsageError(f"{what}: more than {_native.MAX_SWEEP_POINTS} of them") from e


def _listed(items: Iterable[Any], most: int) -> list:
    """`items` as a list of at most `most` + 1 of them: enough to tell it is past `most`, so
    that an endless iterator is refused rather than listed for ever."""
    return list(itertools.islice(items, most + 1))


def _seed(s: Any) -> int:
    """A seed as `mpsched sweep --seeds` takes it: an int (numpy's too), 0 to MAX_SWEEP_SEED
    (a point writes it into its text as `scenario.seed`, a signed 64-bit TOML integer)."""
    if isinstance(s, bool):
        raise TypeError("seeds: expected ints, got a bool")
    try:
        n = operator.index(s)
    except TypeError:
        raise TypeError(f"seeds: expected ints, got {type(s).__name__} {s!r}") from None
    if not 0 <= n <= _native.MAX_SWEEP_SEED:
        raise UsageError(f"seeds: expected 0 to {_native.MAX_SWEEP_SEED}, got {n}")
    return n


def points_of(
    scenario: Any,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    variants: Optional[Iterable[str]] = None,
    seeds: Optional[Iterable[int]] = None,
) -> tuple[Optional[str], list[Point]]:
    """The sweep's points, values outermost (the grid's keys in order, the last fastest), then
    variants, then seeds, as `mpsched sweep` orders them; and the parameter's name (the keys,
    comma-separated). Defaults are the scenario's `[sweep]`: its key and values, its variants
    (else those chosen with `with_variant`, else all), its seeds (else the scenario's seed).

    At most `MAX_SWEEP_POINTS` points (and `MAX_SWEEP_SEEDS` seeds), as `mpsched sweep`:
    checked from the sizes of the grid's values, the variants and the seeds before any of them
    is listed, so that a sweep too large is refused at once, not after its points fill the
    memory (`UsageError`)."""
    sc = _scenario(scenario)
    spec = sc._inner.sweep_spec()
    if grid is None:
        grid = {spec[0]: spec[1]} if spec and spec[0] else {}
    if variants is None:
        variants = (spec[2] if spec else None) or sc.selected_variants or sc.variants
    if seeds is None:
        seeds = spec[3] if spec else [sc.seed]
    most = _native.MAX_SWEEP_POINTS
    # First from the sizes the inputs give, before anything is listed: a range or a list of a
    # million values is refused here. Python's ints do not overflow; past sys.maxsize the
    # native check says "too many".
    sizes = {str(k): _size(v, f"grid key `{k}`") for k, v in grid.items()}
    n_variants, n_seeds = _size(variants, "variants"), _size(seeds, "seeds")

    def check(values: int, n_variants: int, n_seeds: int) -> None:
        _native.check_sweep_size(*(min(n, sys.maxsize) for n in (values, n_variants, n_seeds)))

    known = [n for n in sizes.values() if n is not None]
    values = 1
    for n in known:
        values *= n
    check(values, n_variants or 1, n_seeds or 1)
    # Then listed, none past the bound (one more than it is enough to refuse).
    grid = {k: _listed(v, most) for k, v in grid.items()}
    for k, v in grid.items():
        if not v:
            raise UsageError(f"grid key `{k}` has no values")
    variants = _listed(variants, most) or [None]
    for v in variants:
        if v is not None and v not in sc.variants:
            raise UsageError(f"scenario `{sc.name}` has no variant `{v}`; it has: {', '.join(sc.variants)}")
    seeds = [_seed(s) for s in _listed(seeds, most)]
    if not seeds:
        raise UsageError("no seeds")
    values = 1
    for v in grid.values():
        values *= len(v)
    check(values if grid else 0, len(variants), len(seeds))
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


def _cores() -> int:
    """The cores this process may run on (its affinity, as Rust's `available_parallelism`)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _jobs(jobs: Any) -> Optional[int]:
    """`jobs` as `mpsched sweep --jobs` takes it: None (one per core) or an int of at least 1."""
    if jobs is None:
        return None
    if isinstance(jobs, bool):
        raise TypeError("jobs: expected an int, got a bool")
    try:
        n = operator.index(jobs)
    except TypeError:
        raise TypeError(f"jobs: expected an int, got {type(jobs).__name__}") from None
    if n < 1:
        raise UsageError(f"jobs: expected at least 1, got {n}")
    return n


def _workers(jobs: Optional[int], points: int) -> int:
    """How many points run at once, as `mpsched sweep` decides it: as asked (default one per
    core), never more than there are cores or points, since a point keeps its thread busy
    from start to end (and a thread pool of a million threads would not start)."""
    return max(1, min(jobs or _cores(), _cores(), points))


def _run_local(parts, todo, parameter, duration, jobs, on_done) -> None:
    pool = ThreadPoolExecutor(max_workers=_workers(jobs, len(todo)))
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
    `duration` cuts every point's scenario short as `Scenario.run` does (seconds or "500ms"); it
    is part of what the points' files are matched by.

    The bounds are `mpsched sweep`'s: at most `MAX_SWEEP_POINTS` points, refused from the
    sizes before any point is made; seeds 0 to `MAX_SWEEP_SEED`; `jobs` at least 1 (capped
    at the cores and the points). Every argument is checked before any point runs.
    """
    sc = _scenario(scenario)
    if backend not in ("ray", "local"):
        raise UsageError(f"unknown sweep backend `{backend}`: use ray or local")
    jobs = _jobs(jobs)
    # As `Scenario.run` reads it (seconds without an exponent, or a time), checked now.
    duration = None if duration is None else _native.duration_text(duration)
    if duration is not None:
        sc._inner.check_duration(duration)
    parameter, points = points_of(sc, grid, variants, seeds)
    for key in {p.label: p for p in points}.values():  # each value once: a bad one fails now
        sc.set(key.keys)
    parts = sc._inner.parts()
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
