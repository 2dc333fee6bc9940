"""Parameter sweeps: one base config, a grid of ``set``-path values, one DataFrame.

:func:`sweep` runs every point of a grid and returns a pandas DataFrame with one row per
point: the parameters as columns, then the run's summary flattened by
:func:`tiermem.flatten_summary` (``accesses``, ``vmstat.pgpromote_success``,
``workloads[0].score_accesses_per_s``, ``promote_mbps``, ...)::

    import tiermem

    df = tiermem.sweep(
        "experiments/seed-001-base.toml",
        {"kernel.numa.promote_rate_limit_mbps": [16, 64, 256],
         "kernel.numa.hot_threshold_ms": [62, 250, 1000]},
        duration="20s",
    )

Parameters are the ``set`` paths of experiment files (``docs/config.md``): they are
applied after the machine preset is expanded, in the order given, so a path may name one
node of a preset (``machine.nodes[0].capacity``). Every point is validated by the
simulator's parser before anything runs; a bad point raises :class:`tiermem.ConfigError`
naming the point and the key.

Engines: ``"local"`` (the default) runs the points on a pool of local processes;
``"dask"`` sends them to a Dask distributed cluster (``address`` of a running scheduler,
or a ``distributed.Client``; without an address a ``LocalCluster`` is started for the
sweep). Each point is a pure function of (config, overrides, seed), so both engines give
the same DataFrame, row for row, in grid order.

The command line front is ``python -m tiermem.sweeps FILE --out DIR`` (``tiermem sweep FILE
--out DIR`` runs the same file natively, on local cores only), reading a sweep file::

    name = "promotion"
    description = "rate limit x hot threshold"
    base = "seed-001-base.toml"       # a config file relative to this file, or a [base] table
    metrics = ["workloads[0].score_accesses_per_s", "promote_mbps"]   # optional
    [set]                              # optional: fixed overrides of every point
    "machine.nodes[0].capacity" = "1GiB"
    [grid]                             # parameter -> list of values; the product is run
    "kernel.numa.promote_rate_limit_mbps" = [16, 64, 256]
    "kernel.numa.hot_threshold_ms" = [62, 250]
    [[plots]]                          # optional: plots as in an experiment's results.json
    file = "score-vs-promote-rate.png"
    type = "line"
    x = "promote_mbps"
    y = "workloads[0].score_accesses_per_s"
    group = "kernel.numa.hot_threshold_ms"

and writing ``DIR/results.csv`` (the DataFrame), ``DIR/results.json`` (the experiment
report shape, so :func:`tiermem.plots.render_experiment` draws the ``plots``) and
``DIR/points/NNNN/`` (``overrides.toml``, ``config.json``, ``summary.json``,
``timeline.csv``) per point.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["ENGINES", "SweepFile", "expand_grid", "load_sweep_file", "main", "sweep"]

#: Execution engines of :func:`sweep`.
ENGINES = ("local", "dask")

Grid = Union[Mapping[str, Sequence[Any]], Sequence[Mapping[str, Any]]]


# ---------------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------------


def _values(path: str, values: Any) -> List[Any]:
    """A grid axis as a list; strings and dicts are single values, not sequences."""
    try:
        import numpy as np

        if isinstance(values, np.ndarray):
            values = values.tolist()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"grid[{path!r}] must be a list of values, not {type(values).__name__} "
            f"(write [{values!r}] for a single value)"
        )
    out = list(values)
    if not out:
        raise ValueError(f"grid[{path!r}] is empty")
    return out


def expand_grid(grid: Grid) -> List[Dict[str, Any]]:
    """The points of a grid, in run (and row) order.

    ``grid`` is either a dict ``{path: [values]}``, whose Cartesian product is taken with
    the last path varying fastest, or a list of dicts, each one point as is.

    Raises:
        TypeError: a path is not a string or an axis is not a list of values.
        ValueError: an axis is empty, or a list of points names different paths.
    """
    if isinstance(grid, Mapping):
        axes = []
        for path, values in grid.items():
            if not isinstance(path, str) or not path:
                raise TypeError(f"grid paths must be non-empty strings, got {path!r}")
            axes.append((path, _values(path, values)))
        if not axes:
            return [{}]
        paths = [p for p, _ in axes]
        return [dict(zip(paths, combo)) for combo in itertools.product(*(v for _, v in axes))]
    if isinstance(grid, (list, tuple)):
        points = []
        for i, point in enumerate(grid):
            if not isinstance(point, Mapping):
                raise TypeError(f"grid point {i} must be a dict of path -> value")
            for path in point:
                if not isinstance(path, str) or not path:
                    raise TypeError(f"grid paths must be non-empty strings, got {path!r}")
            points.append(dict(point))
        if points and any(list(p) != list(points[0]) for p in points):
            raise ValueError("every grid point must set the same paths, in the same order")
        return points
    raise TypeError(f"grid must be a dict of path -> values or a list of points, not {type(grid).__name__}")


def _label(point: Mapping[str, Any]) -> str:
    """``path=value, ...`` for messages."""
    from ._config import _format_value

    return ", ".join(f"{p}={_format_value(v, p)}" for p, v in point.items())


def _column_value(value: Any) -> Any:
    """A parameter value as a DataFrame cell: scalars as they are, the rest as TOML text."""
    from ._config import _format_value, _normalize

    value = _normalize(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _format_value(value, "value")


# ---------------------------------------------------------------------------------------
# Running points
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    """One point as sent to a worker: plain data only, so it pickles anywhere."""

    index: int
    text: str
    origin: str
    overrides: Tuple[Tuple[str, str], ...]
    seed: Optional[int]
    duration_s: Optional[float]
    keep_timeline: bool


def _run_point(task: _Task) -> Tuple[int, str, Optional[str]]:
    """Run one point (in a worker process): ``(index, summary_json, timeline_csv)``."""
    from . import _native

    summary_json, timeline_csv, _ = _native().simulate_text(
        task.text, task.origin, task.seed, task.duration_s, list(task.overrides)
    )
    return task.index, summary_json, timeline_csv if task.keep_timeline else None


Outcome = Tuple[int, str, Optional[str]]


def _run_local(tasks: Sequence[_Task], workers: Optional[int]) -> Iterator[Outcome]:
    """Run tasks on a pool of local processes (in this process when one worker)."""
    n = min(workers or os.cpu_count() or 1, len(tasks))
    if n <= 1:
        for task in tasks:
            yield _run_point(task)
        return
    pool = ProcessPoolExecutor(max_workers=n)
    try:
        futures = [pool.submit(_run_point, t) for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()  # re-raises a worker's exception
    finally:
        # On an error or an interrupt, do not start the points still queued.
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(tasks: Sequence[_Task], address: Any, workers: Optional[int]) -> Iterator[Outcome]:
    """Run tasks on a Dask distributed cluster (a LocalCluster when no address)."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ImportError(
            "engine='dask' needs Dask distributed: pip install 'tiermem[dask]' "
            "(or pip install 'dask[distributed]')"
        ) from None
    cluster = None
    if isinstance(address, Client):
        client, own_client = address, False
    elif address:
        client, own_client = Client(address), True
    else:
        cluster = LocalCluster(
            n_workers=min(workers or os.cpu_count() or 1, len(tasks)),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        client, own_client = Client(cluster), True
    futures = []
    try:
        futures = [client.submit(_run_point, t, pure=False) for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()  # re-raises a worker's exception
    finally:
        for fut in futures:
            if not fut.done():
                fut.cancel()
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()


def _progress(total: int, enabled: bool, desc: str) -> Any:
    """A tqdm progress bar (a no-op object when disabled or tqdm is missing)."""
    if enabled:
        try:
            from tqdm.auto import tqdm

            return tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True)
        except ImportError:  # pragma: no cover - tqdm is a dependency
            pass

    class _NoBar:
        def update(self, n: int = 1) -> None:
            pass

        def close(self) -> None:
            pass

    return _NoBar()


# ---------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------


def sweep(
    base_config: Any,
    grid: Grid,
    *,
    fixed: Optional[Mapping[str, Any]] = None,
    seed: Optional[int] = None,
    duration: Union[float, str, None] = None,
    engine: str = "local",
    address: Any = None,
    workers: Optional[int] = None,
    metrics: Optional[Sequence[str]] = None,
    progress: bool = True,
    out_dir: Union[str, "os.PathLike[str]", None] = None,
    plots: Optional[Sequence[Mapping[str, Any]]] = None,
    name: str = "sweep",
    description: str = "",
    origin: Optional[str] = None,
) -> "pandas.DataFrame":
    """Run ``base_config`` at every point of ``grid``; one DataFrame row per point.

    Args:
        base_config: as for :func:`tiermem.simulate`: a path, TOML text, a dict or a
            :class:`tiermem.Config`.
        grid: ``{path: [values], ...}`` (the Cartesian product, last path fastest) or a
            list of points ``[{path: value, ...}, ...]``. Paths are experiment ``set``
            paths (``kernel.numa.hot_threshold_ms``, ``machine.nodes[0].capacity``,
            ``workloads[0].policy``, ``seed``); values are typed as in a config file
            (``"2GiB"``, ``"80ns"``, ``10``; dicts and config objects become tables).
        fixed: overrides applied to every point, before the grid's.
        seed, duration: as for :func:`tiermem.simulate`, for every point.
        engine: ``"local"`` (processes on this machine) or ``"dask"``.
        address: with ``engine="dask"``: a scheduler address (``"tcp://host:8786"``) or
            a ``distributed.Client``; none starts a ``LocalCluster`` for the sweep. An
            address alone implies ``engine="dask"``.
        workers: local processes (default: the CPU count; 1 runs in this process), or
            the size of the LocalCluster started without an address.
        metrics: summary metric columns to keep (paths as in
            :func:`tiermem.flatten_summary`); all numeric metrics when omitted.
        progress: show a progress bar (tqdm) while points complete.
        out_dir: also write ``results.csv``, ``results.json`` and ``points/NNNN/`` here
            (see the module documentation), and render ``plots``.
        plots: plot specs as in an experiment's ``results.json`` (``type`` ``line``
            with ``x``, ``y`` and optional ``group``, ``bar``, ``timeline``); only used
            with ``out_dir``.
        name, description: recorded in ``results.json``.
        origin: how error messages name the base config (default: its path,
            ``<string>`` or ``<dict>``).

    Returns:
        A DataFrame with the grid's paths as the first columns (in grid order; values
        that are not scalars as TOML text), then the metrics, one row per point in grid
        order (index 0..n-1). Identical for every engine and worker count.

    Raises:
        ConfigError: a point is invalid (message: the point, then the simulator's
            ``key `...`: ...``), checked for every point before any run starts.
        ValueError, TypeError: a malformed grid, engine or argument.
        RuntimeError: a run failed for a reason other than its config.
    """
    import pandas as pd

    from . import _config_text, _native, _override_pairs, _run_args, flatten_summary

    if address is not None and engine == "local":
        engine = "dask"
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer (got {workers!r})")
    seed, duration_s = _run_args(seed, duration)
    text, base_origin = _config_text(base_config)
    origin = origin or base_origin
    points = expand_grid(grid)
    fixed_pairs = _override_pairs(fixed) or []
    native = _native()
    keep = out_dir is not None

    # Validate every point first, as `tiermem experiment` validates every variant.
    tasks: List[_Task] = []
    effective: List[str] = []
    for i, point in enumerate(points):
        point_origin = f"{origin} (sweep point {i}: {_label(point)})" if point else origin
        pairs = tuple(fixed_pairs + (_override_pairs(point) or []))
        effective.append(native.check_config(text, point_origin, list(pairs)))
        tasks.append(_Task(i, text, point_origin, pairs, seed, duration_s, keep))

    summaries: List[Optional[str]] = [None] * len(tasks)
    timelines: List[Optional[str]] = [None] * len(tasks)
    runs = _run_local(tasks, workers) if engine == "local" else _run_dask(tasks, address, workers)
    bar = _progress(len(tasks), progress, name)
    try:
        for index, summary_json, timeline_csv in runs:
            summaries[index] = summary_json
            timelines[index] = timeline_csv
            bar.update(1)
    finally:
        bar.close()
        close = getattr(runs, "close", None)
        if close is not None:
            close()

    param_names = list(points[0]) if points else []
    rows = []
    flat_rows = []
    for point, done in zip(points, summaries):
        if done is None:  # pragma: no cover - every run either returned or raised
            raise RuntimeError("a sweep point returned no result")
        flat = flatten_summary(json.loads(done))
        flat_rows.append(flat)
        row: Dict[str, Any] = {p: _column_value(point[p]) for p in param_names}
        if metrics is None:
            row.update((k, v) for k, v in flat.items() if k not in row)
        else:
            row.update((m, flat.get(m, math.nan)) for m in metrics if m not in row)
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["parameters"] = param_names

    if out_dir is not None:
        _write_outputs(
            Path(out_dir), name, description, df, points, param_names, flat_rows,
            summaries, timelines, effective, plots,
        )
    return df


def _point_name(i: int) -> str:
    return f"{i:04d}"


def _write_outputs(
    out: Path,
    name: str,
    description: str,
    df: "pandas.DataFrame",
    points: Sequence[Mapping[str, Any]],
    param_names: Sequence[str],
    flat_rows: Sequence[Mapping[str, Any]],
    summaries: Sequence[Optional[str]],
    timelines: Sequence[Optional[str]],
    effective: Sequence[str],
    plots: Optional[Sequence[Mapping[str, Any]]],
) -> None:
    """Write results.csv, results.json, points/NNNN/ and the requested plots."""
    from ._config import _format_string, _format_value

    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "results.csv", index_label="point")
    variants = []
    for i, point in enumerate(points):
        rel = Path("points") / _point_name(i)
        d = out / rel
        d.mkdir(parents=True, exist_ok=True)
        (d / "overrides.toml").write_text(
            "".join(f"{_format_string(p)} = {_format_value(v, p)}\n" for p, v in point.items()),
            encoding="utf-8",
        )
        (d / "config.json").write_text(effective[i], encoding="utf-8")
        (d / "summary.json").write_text(summaries[i] or "", encoding="utf-8")
        if timelines[i] is not None:
            (d / "timeline.csv").write_text(timelines[i] or "", encoding="utf-8")
        labels = {p: _column_value(point[p]) for p in param_names}
        numeric_params = {
            p: v for p, v in labels.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        metrics = {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in flat_rows[i].items()
        }
        variants.append(
            {
                "name": ",".join(f"{p.rsplit('.', 1)[-1]}={labels[p]}" for p in param_names)
                or _point_name(i),
                "point": i,
                "labels": labels,
                "metrics": {**metrics, **numeric_params},
                "timeline_csv": str(rel / "timeline.csv") if timelines[i] is not None else None,
            }
        )
    results = {
        "experiment": name,
        "description": description,
        "parameters": list(param_names),
        "variants": variants,
        "plots": [dict(p) for p in plots or []],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if plots:
        from .plots import render_experiment

        render_experiment(out)


# ---------------------------------------------------------------------------------------
# Sweep files and the command line
# ---------------------------------------------------------------------------------------

_FILE_KEYS = ("name", "description", "base", "set", "grid", "metrics", "plots")


@dataclass
class SweepFile:
    """A parsed sweep file (see the module documentation for the format)."""

    path: Path
    name: str
    #: The base config: its file, or the TOML text of an inline ``[base]`` table.
    base: Union[Path, str]
    base_origin: str
    grid: Dict[str, List[Any]]
    fixed: Dict[str, Any] = field(default_factory=dict)
    description: str = ""
    metrics: Optional[List[str]] = None
    plots: List[Dict[str, Any]] = field(default_factory=list)

    def run(self, out_dir: Union[str, "os.PathLike[str]"], **kwargs: Any) -> "pandas.DataFrame":
        """Run the sweep into ``out_dir``; ``kwargs`` as for :func:`sweep`."""
        return sweep(
            self.base,
            self.grid,
            origin=self.base_origin,
            fixed=self.fixed,
            metrics=self.metrics,
            out_dir=out_dir,
            plots=self.plots,
            name=self.name,
            description=self.description,
            **kwargs,
        )


def load_sweep_file(path: Union[str, "os.PathLike[str]"]) -> SweepFile:
    """Read and check a sweep file.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or has a missing, unknown or
            malformed key (the message names the file and the key). The base config
            and the points are checked when the sweep runs.
    """
    from . import ConfigError
    from ._config import read_toml, to_toml

    p = Path(path)
    origin = str(p)

    def bad(key: str, message: str) -> ConfigError:
        return ConfigError(f"{origin}: key `{key}`: {message}" if key else f"{origin}: {message}")

    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise bad("", f"cannot read: {e.strerror or e}") from None
    data = read_toml(text, origin)
    for key in data:
        if key not in _FILE_KEYS:
            raise bad(key, f"unknown key (expected {', '.join(_FILE_KEYS)})")

    name = data.get("name", p.stem)
    if not isinstance(name, str) or not name:
        raise bad("name", "must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise bad("description", "must be a string")

    base = data.get("base")
    if isinstance(base, str):
        base_path = p.parent / base
        if not base_path.is_file():
            raise bad("base", f"cannot read {base_path}: no such file")
        base_value: Union[Path, str] = base_path
        base_origin = str(base_path)
    elif isinstance(base, dict):
        base_value, base_origin = to_toml(base), origin
    else:
        raise bad("base", "missing: a config file path or an inline [base] table")

    fixed = data.get("set", {})
    if not isinstance(fixed, dict):
        raise bad("set", 'must be a table of "path" = value')
    grid = data.get("grid")
    if not isinstance(grid, dict) or not grid:
        raise bad("grid", 'missing: a [grid] table of "path" = [values]')
    for gpath, values in grid.items():
        if not isinstance(values, list) or not values:
            raise bad(f"grid.{gpath}", "must be a non-empty array of values")

    metrics = data.get("metrics")
    if metrics is not None and (
        not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics)
    ):
        raise bad("metrics", "must be an array of metric paths")
    plots = data.get("plots", [])
    if not isinstance(plots, list) or not all(isinstance(x, dict) for x in plots):
        raise bad("plots", "must be an array of tables ([[plots]])")
    for i, spec in enumerate(plots):
        if not isinstance(spec.get("file"), str) or not isinstance(spec.get("type"), str):
            raise bad(f"plots[{i}]", "needs `file` and `type` strings")

    # The base is named by its own file in errors; by the sweep file when inline.
    return SweepFile(p, name, base_value, base_origin, grid, fixed, description, metrics, plots)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tiermem.sweeps FILE --out DIR``: run a sweep file.

    Returns 0 on success, 2 for bad input (the file, the base config or a point), 1 for
    other failures.
    """
    parser = argparse.ArgumentParser(
        prog="tiermem sweep",
        description="Run a parameter sweep file: every point of its grid, in parallel; "
        "writes results.csv, results.json, per-point outputs and plots into --out.",
    )
    parser.add_argument("file", help="sweep file (TOML: base, [set], [grid], [[plots]])")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--engine", choices=ENGINES, default=None,
                        help="local processes (default) or a Dask distributed cluster")
    parser.add_argument("--address", default=None,
                        help="Dask scheduler address (tcp://host:8786); implies --engine dask")
    parser.add_argument("--workers", type=int, default=None,
                        help="local processes (default: CPU count), or the size of the "
                        "LocalCluster started by --engine dask without --address")
    parser.add_argument("--seed", type=int, default=None, help="override every point's seed")
    parser.add_argument("--duration", type=float, default=None,
                        help="override every point's simulated duration, in seconds")
    parser.add_argument("--no-plots", action="store_true", help="do not render the [[plots]]")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    from . import ConfigError

    def fail(code: int, message: str) -> int:
        print(f"tiermem sweep: error: {message}", file=sys.stderr)
        return code

    engine = args.engine or ("dask" if args.address else "local")
    if args.address and engine == "local":
        return fail(2, "--address needs --engine dask")
    try:
        spec = load_sweep_file(args.file)
        if args.no_plots:
            spec.plots = []
        df = spec.run(
            args.out,
            engine=engine,
            address=args.address,
            workers=args.workers,
            seed=args.seed,
            duration=args.duration,
            progress=not args.quiet and sys.stderr.isatty(),
        )
    except ConfigError as e:
        return fail(2, str(e))
    except (ValueError, TypeError) as e:
        return fail(2, str(e))
    except ImportError as e:
        return fail(1, str(e))
    except (OSError, RuntimeError) as e:
        return fail(1, str(e))
    print(f"tiermem sweep: {len(df)} points of {spec.name} in {args.out}/results.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
