"""Plots of simulation timelines and experiment reports.

Entry points:

* :func:`plot_timeline` draws one run's ``timeline.csv`` (as a DataFrame): memory
  placement, bandwidth, latency per node, or vmstat event rates. ``Result.plot`` uses it.
* :func:`plot_sweep` draws a :func:`tiermem.sweep` DataFrame (a metric against another,
  one line per parameter value) with the same code as the ``line`` plots below.
* :func:`render_experiment` turns the ``results.json`` of an experiment directory into the
  PNG files it asks for (``python3 -m tiermem.plots OUT_DIR``). The ``tiermem`` command
  line draws the same entries natively (``tiermem plot OUT_DIR``).

``results.json`` has this shape (paths are relative to the directory)::

    {
      "experiment": "demotion",
      "variants": [
        {"name": "swap", "metrics": {"throughput": 1.2e7, ...},
         "timeline_csv": "swap/timeline.csv"},
        ...
      ],
      "plots": [
        {"file": "throughput.png", "type": "bar", "title": "...", "y": ["throughput"],
         "variants": null, "ylabel": "accesses/s"},
        {"file": "sweep.png", "type": "line", "x": "wsf", "y": ["throughput"],
         "logx": true},
        {"file": "placement.png", "type": "timeline", "kind": "placement",
         "variants": ["swap", "demote"]}
      ]
    }

Plot types: ``bar``, ``line``, ``timeline`` and ``weights`` (a metric against an interleave
weight: the sweep's curve with its best point, other variants as reference lines or, with an
``auto_<x>`` metric, as a marker at the bandwidth-derived weight).

Plot fields: ``file`` and ``type`` are required; ``title``, ``x``, ``y`` (a metric or
column name, or a list of them), ``variants`` (names to include, all when null),
``xlabel``, ``ylabel``, ``logx``, ``logy``, for line plots ``group`` (one line per
distinct value of that variant label or metric, as sweeps write them: a variant may carry
``"labels": {parameter: value}``) and, for timelines, ``kind`` (one of
:data:`KINDS`) and ``subplots`` (one panel per variant instead of a shared axes) are
optional. A ``heatmap`` plot names in ``data`` the JSON matrix written by
``tiermem trace heatmap`` (time x address access counts). Metric names are keys of a variant's ``metrics`` (such as
``"workloads[0].triad_mbps"``) or dotted paths into nested metric objects. A variant may
also carry ``"published": {metric: value}``: bar and line plots draw those reference
figures beside the simulated ones. A plot whose data
is missing is skipped with a warning on stderr; the other plots are still written.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import matplotlib

if (
    sys.platform.startswith("linux")
    and not os.environ.get("MPLBACKEND")
    and not os.environ.get("DISPLAY")
    and not os.environ.get("WAYLAND_DISPLAY")
    and "matplotlib.pyplot" not in sys.modules
):
    # No display: render to files. MPLBACKEND (set by Jupyter kernels) takes precedence.
    matplotlib.use("Agg")

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "KINDS",
    "ResultsError",
    "main",
    "node_ids",
    "plot_sweep",
    "plot_timeline",
    "render_experiment",
    "timeline_series",
    "vmstat_columns",
]

#: Timeline plot kinds understood by :func:`plot_timeline`.
KINDS = ("placement", "bandwidth", "latency", "vmstat", "promotion", "threshold")

#: Base page size of the simulated machine; ``nodeN_used_pages`` counts these.
PAGE_SIZE = 4096

_BASE_COLUMNS = frozenset({"time_s", "throughput_accesses_per_s", "mean_latency_ns"})
_NODE_COLUMN = re.compile(r"^node(\d+)_")
_LINESTYLES = ("-", "--", ":", "-.")
_FIGSIZE = (8.0, 4.5)
_DPI = 120

_KIND_TITLES = {
    "placement": "Memory placement",
    "bandwidth": "Memory bandwidth",
    "latency": "Loaded memory latency",
    "vmstat": "vmstat event rates",
    "promotion": "Promotion and demotion rates",
    "threshold": "NUMA-balancing hot threshold",
}

Series = Tuple[str, np.ndarray, np.ndarray]


class ResultsError(ValueError):
    """``results.json`` is missing or malformed."""


class _SkipPlot(Exception):
    """A plot cannot be drawn from the available data."""


# ---------------------------------------------------------------------------------------
# Timelines
# ---------------------------------------------------------------------------------------


def node_ids(df: pd.DataFrame) -> List[int]:
    """The node ids that have columns (``nodeN_*``) in a timeline, sorted."""
    ids = {int(m.group(1)) for c in df.columns if (m := _NODE_COLUMN.match(str(c)))}
    return sorted(ids)


def vmstat_columns(df: pd.DataFrame, nonzero: bool = True) -> List[str]:
    """The numeric vmstat counter columns of a timeline.

    These are the columns that are neither the base columns (``time_s``, throughput,
    mean latency) nor per-node columns. With ``nonzero`` only counters that moved are
    returned.
    """
    cols = []
    for c in df.columns:
        name = str(c)
        if name in _BASE_COLUMNS or _NODE_COLUMN.match(name):
            continue
        if not pd.api.types.is_numeric_dtype(df[c]):
            continue
        if nonzero and not (df[c].fillna(0) != 0).any():
            continue
        cols.append(name)
    return cols


def _time(df: pd.DataFrame) -> np.ndarray:
    if "time_s" not in df.columns:
        raise ValueError("the timeline has no time_s column")
    return df["time_s"].to_numpy(dtype=float)


def _node_series(df: pd.DataFrame, suffixes: Sequence[str], scale: float) -> List[Series]:
    """Per node: the sum of columns ``nodeN_<suffix>`` times ``scale``."""
    t = _time(df)
    out = []
    for n in node_ids(df):
        cols = [f"node{n}_{s}" for s in suffixes]
        if not all(c in df.columns for c in cols):
            continue
        y = sum(df[c].to_numpy(dtype=float) for c in cols) * scale
        out.append((f"node {n}", t, y))
    if not out:
        wanted = ", ".join(f"nodeN_{s}" for s in suffixes)
        raise ValueError(f"the timeline has no {wanted} columns")
    return out


def _rates(t: np.ndarray, cumulative: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Per-second rates of a cumulative counter that starts at 0 at time 0.

    The rate of each sample covers the interval since the previous sample (since time 0
    for the first one); samples with no elapsed time are dropped.
    """
    prev_t = np.concatenate(([0.0], t[:-1]))
    prev_v = np.concatenate(([0.0], cumulative[:-1]))
    dt = t - prev_t
    keep = dt > 0
    return t[keep], (cumulative[keep] - prev_v[keep]) / dt[keep]


def timeline_series(df: pd.DataFrame, kind: str) -> Tuple[List[Series], str]:
    """The lines a timeline plot of ``kind`` draws, and the label of its y axis.

    Returns:
        ``([(label, time_s, values), ...], ylabel)``. For ``vmstat`` the list is empty
        when no counter moved.

    Raises:
        ValueError: unknown kind, or the columns the kind needs are missing.
    """
    if kind == "placement":
        return _node_series(df, ["used_pages"], PAGE_SIZE / 2**30), "used memory (GiB)"
    if kind == "bandwidth":
        return _node_series(df, ["read_MBps", "write_MBps"], 1.0), "read + write (MB/s)"
    if kind == "latency":
        return _node_series(df, ["latency_ns"], 1.0), "loaded latency (ns)"
    if kind == "vmstat":
        t = _time(df)
        series = []
        for c in vmstat_columns(df):
            x, y = _rates(t, df[c].fillna(0).to_numpy(dtype=float))
            series.append((c, x, y))
        return series, "events per second"
    if kind == "promotion":
        t = _time(df)
        series = []
        for c in ("pgpromote_success", "pgdemote_kswapd", "pgdemote_direct"):
            if c in df.columns and df[c].fillna(0).to_numpy(dtype=float).max() > 0:
                x, y = _rates(t, df[c].fillna(0).to_numpy(dtype=float) * PAGE_SIZE / 1e6)
                series.append((c.replace("pgpromote_success", "promoted").replace("pgdemote_", "demoted by "), x, y))
        return series, "MB/s"
    if kind == "threshold":
        series = [
            (label, x, y)
            for label, x, y in _node_series(df, ["hot_threshold_ms"], 1.0)
            if np.nanmax(y, initial=0.0) > 0
        ]
        return series, "hot threshold (ms)"
    raise ValueError(f"unknown timeline plot kind {kind!r}: expected one of {', '.join(KINDS)}")


def _column_series(df: pd.DataFrame, columns: Sequence[str]) -> List[Series]:
    """Raw timeline columns as series (for timeline plots that name ``y`` columns)."""
    t = _time(df)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"the timeline has no column(s) {', '.join(missing)}")
    return [(c, t, df[c].to_numpy(dtype=float)) for c in columns]


def _draw(
    ax: Axes,
    series: Sequence[Series],
    prefix: Optional[str] = None,
    color: Any = None,
) -> None:
    """Draw series on ``ax``; with a ``color`` the series differ by line style."""
    for i, (label, x, y) in enumerate(series):
        style: Dict[str, Any] = {}
        if color is not None:
            style = {"color": color, "linestyle": _LINESTYLES[i % len(_LINESTYLES)]}
        ax.plot(x, y, label=f"{prefix}: {label}" if prefix else label, **style)


def _finish(ax: Axes, xlabel: str, ylabel: str, title: Optional[str]) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if len(handles) > 8:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    elif handles:
        ax.legend(fontsize="small")


def _note(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="gray")


def plot_timeline(
    df: pd.DataFrame,
    kind: str,
    ax: Optional[Axes] = None,
    title: Optional[str] = None,
    *,
    label_prefix: Optional[str] = None,
    color: Any = None,
) -> Axes:
    """Plot one run's timeline.

    Args:
        df: the timeline (``timeline.csv`` read with pandas).
        kind: ``"placement"``: used memory per node in GiB; ``"bandwidth"``: read +
            write MB/s per node; ``"latency"``: loaded latency per node in ns;
            ``"vmstat"``: per-second rates of the vmstat counters that moved (the
            difference between samples divided by the time between them).
        ax: axes to draw on; a new pyplot figure when omitted.
        title: axes title; a default per kind when omitted.
        label_prefix: prepended to each line's label (``"<prefix>: node 0"``), to tell
            runs apart when several are drawn on one axes.
        color: one color for all lines of this call, told apart by line style.

    Returns:
        The axes drawn on.

    Raises:
        ValueError: unknown kind, or the timeline lacks the columns the kind needs.
    """
    series, ylabel = timeline_series(df, kind)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=_FIGSIZE)
    _draw(ax, series, label_prefix, color)
    if not series:
        _note(ax, "no vmstat counter changed")
    _finish(ax, "time (s)", ylabel, title if title is not None else _KIND_TITLES[kind])
    if kind != "latency":
        ax.set_ylim(bottom=0)
    return ax


# ---------------------------------------------------------------------------------------
# Experiment reports
# ---------------------------------------------------------------------------------------


def _warn(message: str) -> None:
    print(f"tiermem.plots: warning: {message}", file=sys.stderr)


def load_results(out_dir: Union[str, os.PathLike]) -> Dict[str, Any]:
    """Read and check ``out_dir/results.json``.

    Raises:
        ResultsError: the file is missing, is not JSON, or does not have the expected
            structure (see the module documentation).
    """
    path = Path(out_dir) / "results.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: not found") from None
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        results = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(
            f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    if not isinstance(results, dict):
        raise ResultsError(f"{path}: expected a JSON object at the top level")
    variants = results.get("variants")
    if not isinstance(variants, list):
        raise ResultsError(f"{path}: `variants` must be a list")
    for i, v in enumerate(variants):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str):
            raise ResultsError(f"{path}: variants[{i}] must be an object with a string `name`")
        for field in ("metrics", "published"):
            if not isinstance(v.get(field) or {}, dict):
                raise ResultsError(f"{path}: variants[{i}].{field} must be an object or null")
        csv = v.get("timeline_csv")
        if csv is not None and not isinstance(csv, str):
            raise ResultsError(f"{path}: variants[{i}].timeline_csv must be a string or null")
    plots = results.get("plots", [])
    if not isinstance(plots, list):
        raise ResultsError(f"{path}: `plots` must be a list")
    for i, p in enumerate(plots):
        if not isinstance(p, dict):
            raise ResultsError(f"{path}: plots[{i}] must be an object")
    return results


def _metric(variant: Mapping[str, Any], name: str, field: str = "metrics") -> Optional[float]:
    """A variant's numeric metric (a key or a dotted path into nested metrics).

    ``field`` selects the table: ``"metrics"`` (simulated) or ``"published"``. Missing,
    null (NaN in the simulator's JSON) and non-numeric values are None.
    """
    value: Any = variant.get(field) or {}
    if name in value:
        value = value[name]
    else:
        for part in name.split("."):
            if not isinstance(value, Mapping) or part not in value:
                return None
            value = value[part]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _names(value: Any, field: str) -> List[str]:
    """A plot field that is one name or a list of names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise _SkipPlot(f"`{field}` must be a name or a list of names")


def _select_variants(results: Mapping[str, Any], spec: Mapping[str, Any]) -> List[Dict[str, Any]]:
    variants = results["variants"]
    wanted = spec.get("variants")
    if wanted is None:
        chosen = list(variants)
    else:
        names = _names(wanted, "variants")
        by_name = {v["name"]: v for v in variants}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            _warn(f"{spec['file']}: unknown variant(s) {', '.join(unknown)} ignored")
        chosen = [by_name[n] for n in names if n in by_name]
    if not chosen:
        raise _SkipPlot("no variants to plot")
    return chosen


def _new_figure(rows: int = 1) -> Tuple[Figure, List[Axes]]:
    """A figure (not registered with pyplot) with ``rows`` stacked axes sharing x."""
    width, height = _FIGSIZE
    fig = Figure(figsize=(width, height if rows == 1 else 0.45 * height * rows + 1.0))
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, list(axes)


def _scales(ax: Axes, spec: Mapping[str, Any], xs: Any, ys: Any) -> None:
    """Apply the spec's ``logx``/``logy`` when the data (array-likes) allow it."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    y = y[~np.isnan(y)]
    if spec.get("logx"):
        if x.size and (x > 0).all():
            ax.set_xscale("log")
        else:
            _warn(f"{spec['file']}: logx ignored (x values must be positive)")
    if spec.get("logy"):
        if y.size and (y > 0).all():
            ax.set_yscale("log")
        else:
            _warn(f"{spec['file']}: logy ignored (y values must be positive)")


def _bar(results: Mapping[str, Any], spec: Mapping[str, Any]) -> Figure:
    """One group of bars per variant, one bar per ``y`` metric (with ±1 sd whiskers for an
    experiment run over several seeds)."""
    if spec.get("logx"):
        _warn(f"{spec['file']}: logx does not apply to bar plots")
    ys = _names(spec.get("y"), "y")
    if not ys:
        raise _SkipPlot("a bar plot needs `y` metrics")
    variants = _select_variants(results, spec)
    metrics = [[_metric(v, y) for y in ys] for v in variants]
    values = np.array([[np.nan if m is None else m for m in row] for row in metrics], dtype=float)
    if np.isnan(values).all():
        raise _SkipPlot(f"no variant has metric(s) {', '.join(ys)}")
    for j, y in enumerate(ys):
        lacking = [v["name"] for v, val in zip(variants, values[:, j]) if np.isnan(val)]
        if lacking:
            _warn(f"{spec['file']}: metric {y} missing for {', '.join(lacking)}")

    fig, (ax,) = _new_figure()
    positions = np.arange(len(variants))
    width = 0.8 / len(ys)
    published_label = "published"
    for j, y in enumerate(ys):
        offset = (j - (len(ys) - 1) / 2) * width
        # Over several seeds (``sd`` in results.json): ±1 standard deviation whiskers.
        sd = [_metric(v, y, "sd") for v in variants]
        yerr = None
        if any(e is not None for e in sd):
            upper = [0.0 if e is None else e for e in sd]
            # On a log axis a whisker below zero stops just above it, as the native plots'.
            lower = [min(e, 0.999 * v) if spec.get("logy") and v > 0 else e
                     for e, v in zip(upper, np.nan_to_num(values[:, j]))]
            yerr = [lower, upper]
        bars = ax.bar(positions + offset, values[:, j], width, yerr=yerr, capsize=3,
                      label=y if len(ys) > 1 else None)
        ax.bar_label(bars, fmt="%.3g", fontsize="x-small", padding=2)
        # Published figures, when the experiment has them: a dashed line across the bar.
        for pos, v in zip(positions + offset, variants):
            pub = _metric(v, y, "published")
            if pub is not None:
                ax.hlines(pub, pos - width / 2, pos + width / 2, colors="black",
                          linestyles="--", linewidth=1.5, zorder=3, label=published_label)
                published_label = None
    names = [v["name"] for v in variants]
    slanted = len(names) > 6 or max(len(n) for n in names) > 12
    ax.set_xticks(positions)
    ax.set_xticklabels(names, rotation=30 if slanted else 0, ha="right" if slanted else "center")
    _scales(ax, {**spec, "logx": False}, [], values.ravel())
    _finish(ax, spec.get("xlabel") or "", spec.get("ylabel") or ", ".join(ys), spec.get("title"))
    ax.grid(False)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def _group_value(variant: Mapping[str, Any], name: str) -> Any:
    """A variant's value of a grouping key: a label (sweep parameter) or a metric."""
    labels = variant.get("labels") or {}
    if name in labels:
        return labels[name]
    value = _metric(variant, name)
    return "missing" if value is None else value


def _line(results: Mapping[str, Any], spec: Mapping[str, Any]) -> Figure:
    """``y`` metrics against the ``x`` metric across variants, one line per ``y``
    (or, with ``group``, one line per distinct value of that label or metric)."""
    fig, (ax,) = _new_figure()
    _line_on(ax, results, spec)
    return fig


def _line_on(ax: Axes, results: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
    """Draw a line plot (see :func:`_line`) on ``ax``."""
    x_name = spec.get("x")
    if not isinstance(x_name, str):
        raise _SkipPlot("a line plot needs an `x` metric")
    ys = _names(spec.get("y"), "y")
    if not ys:
        raise _SkipPlot("a line plot needs `y` metrics")
    variants = _select_variants(results, spec)
    with_x = [(v, _metric(v, x_name)) for v in variants]
    lacking = [v["name"] for v, x in with_x if x is None]
    if lacking:
        _warn(f"{spec['file']}: metric {x_name} missing for {', '.join(lacking)}")
    points = sorted(((x, v) for v, x in with_x if x is not None), key=lambda p: p[0])
    if not points:
        raise _SkipPlot(f"no variant has metric {x_name}")

    lines = []
    for y_name in ys:
        pairs = [(x, _metric(v, y_name)) for x, v in points]
        pairs = [(x, y) for x, y in pairs if y is not None]
        if pairs:
            lines.append((y_name, pairs))
        else:
            _warn(f"{spec['file']}: no variant has metric {y_name}")
    if not lines:
        raise _SkipPlot(f"no variant has metric(s) {', '.join(ys)}")

    all_y = [y for _, pairs in lines for _, y in pairs]
    group = spec.get("group")
    if group is not None:
        # One line per distinct value of `group` (a sweep parameter), per y metric.
        if not isinstance(group, str):
            raise _SkipPlot("`group` must be a metric or parameter name")
        groups: Dict[Any, List[Tuple[float, Mapping[str, Any]]]] = {}
        for x, v in points:
            groups.setdefault(_group_value(v, group), []).append((x, v))
        for y_name, _ in lines:
            for value, members in groups.items():
                pairs = [(x, _metric(v, y_name)) for x, v in members]
                pairs = [(x, y) for x, y in pairs if y is not None]
                if pairs:
                    label = f"{group} = {value}" + (f" ({y_name})" if len(lines) > 1 else "")
                    ax.plot([p[0] for p in pairs], [p[1] for p in pairs], marker="o", label=label)
        lines = []
    for y_name, pairs in lines:
        # Published figures, when the experiment has them, as crosses of the same color.
        published = [(x, _metric(v, y_name, "published")) for x, v in points]
        published = [(x, p) for x, p in published if p is not None]
        label = y_name if len(lines) > 1 else ("simulated" if published else None)
        (line,) = ax.plot([p[0] for p in pairs], [p[1] for p in pairs], marker="o", label=label)
        if published:
            ax.plot([p[0] for p in published], [p[1] for p in published], linestyle="none",
                    marker="x", markersize=8, color=line.get_color(),
                    label=f"{y_name} (published)")
    _scales(ax, spec, [x for x, _ in points], all_y)
    _finish(ax, spec.get("xlabel") or x_name, spec.get("ylabel") or ", ".join(ys),
            spec.get("title"))


def plot_sweep(
    df: pd.DataFrame,
    x: str,
    y: Union[str, Sequence[str]],
    group: Optional[str] = None,
    ax: Optional[Axes] = None,
    *,
    title: Optional[str] = None,
    xlabel: Optional[str] = None,
    ylabel: Optional[str] = None,
    logx: bool = False,
    logy: bool = False,
) -> Axes:
    """Plot a :func:`tiermem.sweep` DataFrame: ``y`` against ``x``, one line per value
    of ``group``; the same drawing as a ``line`` plot of a sweep's ``results.json``.

    Args:
        df: the sweep's DataFrame (parameters and metrics as columns).
        x, y: column names (``y`` may be a list).
        group: a column whose distinct values get one line each (e.g. a parameter).
        ax: axes to draw on; a new pyplot figure when omitted.

    Returns:
        The axes drawn on.

    Raises:
        ValueError: a column is missing, or no row has the values to draw.
    """
    ys = [y] if isinstance(y, str) else list(y)
    missing = [c for c in [x, *ys, *([group] if group else [])] if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame has no column(s) {', '.join(missing)}")
    variants = []
    for i, row in enumerate(df.to_dict(orient="records")):
        metrics = {
            k: float(v)
            for k, v in row.items()
            if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
            and not (isinstance(v, float) and np.isnan(v))
        }
        labels = {group: row[group]} if group else {}
        variants.append({"name": str(i), "metrics": metrics, "labels": labels})
    spec = {"file": "<plot_sweep>", "x": x, "y": ys, "group": group, "title": title,
            "xlabel": xlabel, "ylabel": ylabel, "logx": logx, "logy": logy}
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=_FIGSIZE)
    try:
        _line_on(ax, {"variants": variants}, spec)
    except _SkipPlot as e:
        raise ValueError(str(e)) from None
    return ax


def _read_timeline(
    out_dir: Path, variant: Mapping[str, Any], file: str
) -> Optional[pd.DataFrame]:
    """A variant's timeline, or None (with a warning) when it is missing or unreadable."""
    rel = variant.get("timeline_csv")
    if rel is None:
        _warn(f"{file}: variant {variant['name']} has no timeline")
        return None
    path = out_dir / rel
    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        _warn(f"{file}: {path} not found")
    except (OSError, ValueError) as e:
        _warn(f"{file}: cannot read {path}: {e}")
    return None


def _with_x_column(df: pd.DataFrame, series: List[Series], x: str) -> List[Series]:
    """Series re-plotted against another timeline column instead of time."""
    if x not in df.columns:
        raise ValueError(f"the timeline has no column {x}")
    by_time = dict(zip(_time(df).tolist(), df[x].to_numpy(dtype=float).tolist()))
    # Series may have dropped samples (vmstat rates); match them back by time.
    return [(label, np.array([by_time[t] for t in ts.tolist()]), y) for label, ts, y in series]


def _timeline(out_dir: Path, results: Mapping[str, Any], spec: Mapping[str, Any]) -> Figure:
    """Timelines of the variants: a ``kind`` (see :func:`plot_timeline`) or raw ``y`` columns.

    On one shared axes each variant has its own color and its lines differ by style;
    with ``subplots`` each variant gets its own panel.
    """
    file = spec["file"]
    columns = _names(spec.get("y"), "y")
    kind = spec.get("kind")
    if kind is None and not columns:
        kind = "placement"
    if kind is not None and kind not in KINDS:
        raise _SkipPlot(f"unknown timeline kind {kind!r}: expected one of {', '.join(KINDS)}")
    x_col = spec.get("x") if spec.get("x") not in (None, "time_s") else None

    runs = []
    for v in _select_variants(results, spec):
        df = _read_timeline(out_dir, v, file)
        if df is None:
            continue
        try:
            if kind is not None:
                series, ylabel = timeline_series(df, kind)
            else:
                series, ylabel = _column_series(df, columns), ", ".join(columns)
            if x_col is not None:
                series = _with_x_column(df, series, x_col)
        except ValueError as e:
            _warn(f"{file}: variant {v['name']}: {e}")
            continue
        runs.append((v["name"], series, ylabel))
    if not runs:
        raise _SkipPlot("no variant has a usable timeline")

    ylabel = spec.get("ylabel") or runs[0][2]
    xlabel = spec.get("xlabel") or x_col or "time (s)"
    title = spec.get("title") or None
    if title is None and kind is not None:
        experiment = results.get("experiment")
        title = f"{experiment}: {_KIND_TITLES[kind]}" if experiment else _KIND_TITLES[kind]
    all_x = np.concatenate([s[1] for _, series, _ in runs for s in series] or [np.empty(0)])
    all_y = np.concatenate([s[2] for _, series, _ in runs for s in series] or [np.empty(0)])
    zero_based = kind in ("placement", "bandwidth", "vmstat") and not spec.get("logy")

    if spec.get("subplots"):
        fig, axes = _new_figure(len(runs))
        for ax, (name, series, _) in zip(axes, runs):
            _draw(ax, series)
            if not series:
                _note(ax, "no vmstat counter changed")
            _finish(ax, "", ylabel, name)
            _scales(ax, spec, all_x, all_y)
            if zero_based:
                ax.set_ylim(bottom=0)
        axes[-1].set_xlabel(xlabel)
        if title:
            fig.suptitle(title)
    else:
        fig, (ax,) = _new_figure()
        colors = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
        for i, (name, series, _) in enumerate(runs):
            _draw(ax, series, prefix=name, color=colors[i % len(colors)])
        if not any(series for _, series, _ in runs):
            _note(ax, "no vmstat counter changed")
        _finish(ax, xlabel, ylabel, title)
        _scales(ax, spec, all_x, all_y)
        if zero_based:
            ax.set_ylim(bottom=0)
    return fig


def _heatmap(out_dir: Path, spec: Mapping[str, Any]) -> Figure:
    """A trace heatmap (time x address, colour = accesses, log scale) from the JSON matrix
    that ``tiermem trace heatmap`` writes (``spec["data"]``, relative to the directory)."""
    data_file = spec.get("data")
    if not isinstance(data_file, str):
        raise _SkipPlot("`data` must name the heatmap JSON file")
    data_path = _output_path(out_dir, data_file)
    try:
        hm = json.loads(data_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise _SkipPlot(f"cannot read {data_file}: {e}") from None
    counts = np.asarray(hm.get("counts") or [[0]], dtype=float)
    if counts.ndim != 2 or counts.size == 0:
        raise _SkipPlot(f"{data_file}: `counts` must be a non-empty matrix")
    fig, axes = _new_figure()
    ax = axes[0]
    unit = hm.get("time_unit", "instructions")
    t0, t1 = float(hm.get("first_time", 0)), float(hm.get("last_time", 1))
    scale, tlabel = (1e-9, "time (s)") if unit == "ns" else (1e-6, "instructions (millions)")
    mib = float(hm.get("pages", 1)) * 4096 / 2**20
    shown = np.where(counts > 0, counts, np.nan)
    from matplotlib.colors import LogNorm

    vmax = np.nanmax(shown) if np.isfinite(np.nanmax(shown)) else 1.0
    # Trace heatmaps count accesses (>= 1); DAMON heatmaps are rates that can be below 1.
    vmin = min(1.0, float(np.nanmin(shown))) if np.isfinite(np.nanmin(shown)) else 1.0
    image = ax.imshow(
        shown.T,
        origin="lower",
        aspect="auto",
        interpolation="nearest",
        extent=(t0 * scale, max(t1, t0 + 1) * scale, 0, mib),
        norm=LogNorm(vmin=vmin, vmax=max(vmax, vmin)),
        cmap="viridis",
    )
    fig.colorbar(image, ax=ax, label=hm.get("value_label", "accesses per cell"))
    # Boundaries of the concatenated address ranges.
    pos = 0.0
    for first, end in (hm.get("ranges") or [])[:-1]:
        pos += (end - first) * 4096 / 2**20
        ax.axhline(pos, color="white", linewidth=0.5, alpha=0.6)
    _finish(
        ax,
        spec.get("xlabel") or tlabel,
        spec.get("ylabel") or "touched address space (MiB, gaps removed)",
        spec.get("title") or f"access heatmap of {hm.get('file', '')}",
    )
    return fig


def _output_path(out_dir: Path, file: Any) -> Path:
    """Where a plot goes: ``file`` relative to the output directory, never outside it."""
    if not isinstance(file, str) or not file:
        raise _SkipPlot("`file` must be a non-empty string")
    path = (out_dir / file).resolve()
    root = out_dir.resolve()
    if os.path.commonpath([str(root), str(path)]) != str(root):
        raise _SkipPlot(f"{file} is outside {out_dir}")
    return path


def _weights(results: Mapping[str, Any], spec: Mapping[str, Any]) -> Figure:
    """A metric against an interleave weight (the tuner's sweep).

    Variants that have the ``x`` metric (the weight) form the curve, with the best point
    marked; variants without it (DRAM only, default interleave...) are drawn as labelled
    horizontal reference lines, except those with an ``auto_<x>`` metric (the weights a
    kernel derives from bandwidth), drawn as a marker at that weight.
    """
    x_name = spec.get("x")
    if not isinstance(x_name, str):
        raise _SkipPlot("a weights plot needs an `x` metric (the weight)")
    ys = _names(spec.get("y"), "y")
    if len(ys) != 1:
        raise _SkipPlot("a weights plot needs exactly one `y` metric")
    y_name = ys[0]
    variants = _select_variants(results, spec)
    curve = []
    refs = []
    for v in variants:
        y = _metric(v, y_name)
        if y is None:
            _warn(f"{spec['file']}: metric {y_name} missing for {v['name']}")
            continue
        x = _metric(v, x_name)
        if x is not None:
            curve.append((x, y, v["name"]))
        else:
            refs.append((v["name"], y, _metric(v, f"auto_{x_name}")))
    if not curve:
        raise _SkipPlot(f"no sweep variant has metrics {x_name} and {y_name}")
    curve.sort()
    fig, (ax,) = _new_figure()
    ax.plot([c[0] for c in curve], [c[1] for c in curve], marker="o", label="sweep")
    best = max(curve, key=lambda c: c[1])
    ax.plot([best[0]], [best[1]], marker="*", markersize=16, linestyle="none", color="tab:red",
            label=f"best: {best[0]:g}")
    styles = ["--", ":", "-.", (0, (5, 1))]
    for i, (name, y, x) in enumerate(refs):
        if x is not None:
            ax.plot([x], [y], marker="D", markersize=8, linestyle="none", label=f"{name} ({x:g})")
        else:
            ax.axhline(y, linestyle=styles[i % len(styles)], color="gray", linewidth=1.2)
            ax.annotate(name, (curve[0][0], y), textcoords="offset points", xytext=(2, 3),
                        fontsize="x-small", color="dimgray")
    _scales(ax, spec, [c[0] for c in curve], [c[1] for c in curve] + [r[1] for r in refs])
    _finish(ax, spec.get("xlabel") or x_name, spec.get("ylabel") or y_name, spec.get("title"))
    return fig


def render_experiment(out_dir: Union[str, os.PathLike]) -> List[Path]:
    """Write the plots that ``out_dir/results.json`` asks for into ``out_dir``.

    Plots that cannot be drawn (missing metrics, timelines or columns, bad fields) are
    skipped with a warning on stderr.

    Returns:
        The paths of the PNG files written.

    Raises:
        ResultsError: ``results.json`` is missing or malformed.
    """
    out = Path(out_dir)
    results = load_results(out)
    written: List[Path] = []
    for i, spec in enumerate(results.get("plots", [])):
        label = spec.get("file") if isinstance(spec.get("file"), str) else f"plots[{i}]"
        try:
            path = _output_path(out, spec.get("file"))
            kind = spec.get("type")
            if kind == "bar":
                fig = _bar(results, spec)
            elif kind == "line":
                fig = _line(results, spec)
            elif kind == "timeline":
                fig = _timeline(out, results, spec)
            elif kind == "weights":
                fig = _weights(results, spec)
            elif kind == "heatmap":
                fig = _heatmap(out, spec)
            else:
                raise _SkipPlot(
                    f"unknown plot type {kind!r}: expected bar, line, timeline, weights or heatmap"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=_DPI, bbox_inches="tight")
        except _SkipPlot as e:
            _warn(f"skipping {label}: {e}")
            continue
        except Exception as e:  # one bad plot must not cost the others
            _warn(f"skipping {label}: {type(e).__name__}: {e}")
            continue
        written.append(path)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tiermem.plots OUT_DIR``: render an experiment's plots.

    Returns 0 on success (plots that cannot be drawn are skipped with a warning) and 2
    when ``results.json`` is missing or malformed.
    """
    parser = argparse.ArgumentParser(
        prog="python -m tiermem.plots",
        description="Render the plots an experiment's results.json asks for, as PNG files "
        "in the same directory.",
    )
    parser.add_argument("out_dir", help="experiment output directory holding results.json")
    args = parser.parse_args(argv)
    try:
        written = render_experiment(args.out_dir)
    except ResultsError as e:
        print(f"tiermem.plots: error: {e}", file=sys.stderr)
        return 2
    print(f"tiermem.plots: wrote {len(written)} plot(s) in {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
