"""tiermem: a simulator of tiered memory (DRAM, CXL, PMEM) under the Linux kernel's
memory-tiering policies.

The simulation itself runs in Rust (the native module ``tiermem._tiermem``); this
package is the Python face of it::

    import tiermem

    result = tiermem.simulate({
        "machine": "small",
        "duration": "1s",
        "workloads": [{"type": "pmbench", "mapsize": "1GiB", "pattern": "normal_ih"}],
    })
    result.summary["accesses"]        # summary.json as a dict
    result.timeline                   # timeline.csv as a pandas DataFrame
    result.plot("placement")          # used memory per node over time

Configs are the same TOML files the ``tiermem`` command line reads, dicts of the same
shape, or config objects (:class:`Config`, :class:`Machine`, :class:`Pmbench`, ...); bad
configs raise :class:`ConfigError` naming the offending key, with the command line's
message. :func:`sweep` runs a grid of configs in parallel (local processes, or a Dask
cluster) and returns one DataFrame.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _builders
from ._builders import (
    CacheLevel,
    Caches,
    Config,
    Kernel,
    KernelCosts,
    Machine,
    MemPolicy,
    Mlc,
    Node,
    NumaBalancing,
    Pmbench,
    Sim,
    Stream,
    Swap,
    Workload,
    Zram,
    _Table,
)
from ._config import parse_duration, to_toml

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.axes import Axes

try:
    from . import _tiermem
    from ._tiermem import ConfigError
except ImportError as _err:  # the native module is not built (e.g. plotting-only use)
    _tiermem = None
    _NATIVE_IMPORT_ERROR: Optional[ImportError] = _err

    class ConfigError(ValueError):  # type: ignore[no-redef]
        """A configuration problem (stand-in used when the native module is missing)."""

else:
    _NATIVE_IMPORT_ERROR = None


def _package_version() -> str:
    if _tiermem is not None:
        return _tiermem.version()
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return "unknown"
    try:
        return version("tiermem")
    except PackageNotFoundError:
        return "unknown"


__version__ = _package_version()

__all__ = [
    "ConfigError",
    "Result",
    "__version__",
    "check_config",
    "flatten_summary",
    "machine_presets",
    "parse_duration",
    "simulate",
    "sweep",
    "to_toml",
]
# The config builders (Config, Kernel, Machine, Pmbench, ...): their module's names.
__all__ += _builders.__all__

#: Submodules loaded on first use (`tiermem.plots.plot_sweep(...)` after `import tiermem`):
#: matplotlib and the sweep engines load only when asked for, and
#: `python -m tiermem.sweeps` finds its module not yet imported.
_LAZY_SUBMODULES = ("plots", "sweeps")


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        import importlib

        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))


ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Config]
#: ``set``-path overrides: ``{"kernel.numa.hot_threshold_ms": 500, ...}`` or pairs.
Overrides = Union[Mapping[str, Any], Sequence["tuple[str, Any]"], None]


def _native():
    """The native module, or a clear error explaining that it is missing."""
    if _tiermem is None:
        raise ImportError(
            "the tiermem native extension (tiermem._tiermem) is not available; build it "
            "with `maturin develop` or install the package with `pip install .`"
        ) from _NATIVE_IMPORT_ERROR
    return _tiermem


def machine_presets() -> List[str]:
    """Names of the built-in machines usable as ``machine = "NAME"`` in a config."""
    return list(_native().machine_presets())


def _looks_like_path(text: str) -> bool:
    """Whether a string argument names a config file rather than holding TOML text."""
    if "\n" in text:
        return False
    stripped = text.strip()
    return stripped.endswith(".toml") or os.path.isfile(stripped)


def _config_text(config: ConfigLike) -> "tuple[str, str]":
    """(TOML text, origin used in error messages) of a config argument."""
    if isinstance(config, Mapping):
        return to_toml(config), "<dict>"
    if isinstance(config, _Table):
        return to_toml(config.to_dict()), f"<{type(config).__name__}>"
    if isinstance(config, os.PathLike):
        path = Path(config)
        return path.read_text(encoding="utf-8"), str(path)
    if isinstance(config, str):
        if _looks_like_path(config):
            path = Path(config.strip())
            return path.read_text(encoding="utf-8"), str(path)
        return config, "<string>"
    raise TypeError(
        "config must be a path to a .toml file, a TOML string, a dict or a tiermem.Config, "
        f"not {type(config).__name__}"
    )


def simulate(
    config: ConfigLike,
    *,
    seed: Optional[int] = None,
    duration: Union[float, str, None] = None,
    overrides: Overrides = None,
) -> "Result":
    """Run one simulation.

    Args:
        config: a path (``str`` ending in ``.toml`` or naming an existing file, or a
            ``pathlib.Path``), TOML text, a dict with the same structure as the TOML, or
            a :class:`Config`.
        seed: overrides the config's ``seed``.
        duration: overrides the config's simulated ``duration``: seconds, or a string
            with a unit such as ``"10s"`` or ``"500ms"``.
        overrides: ``set`` paths applied after preset expansion, exactly as an
            experiment variant's ``set`` table (``{"machine.nodes[1].capacity": "2GiB",
            "kernel.numa.promotion": "mru"}``); applied in the order given.

    Returns:
        The run's :class:`Result`.

    Raises:
        ConfigError: the config is invalid; the message names the file and key.
        ValueError: ``seed`` or ``duration`` is out of range.
        FileNotFoundError: ``config`` names a file that does not exist.
        RuntimeError: the simulation failed for a reason other than its input.

    The simulation runs without holding the GIL, so several can run in threads.
    """
    seed, duration_s = _run_args(seed, duration)
    text, origin = _config_text(config)
    summary_json, timeline_csv, config_json = _native().simulate_text(
        text, origin, seed, duration_s, _override_pairs(overrides)
    )
    return Result(summary_json, timeline_csv, config_json)


def _run_args(
    seed: Optional[int], duration: Union[float, str, None]
) -> "tuple[Optional[int], Optional[float]]":
    """Check the ``seed`` and ``duration`` overrides; duration in seconds."""
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, not {type(seed).__name__}")
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed must be within 0..2**64-1 (got {seed})")
    duration_s = None
    if duration is not None:
        duration_s = parse_duration(duration)
        if not (duration_s > 0 and math.isfinite(duration_s)):
            raise ValueError(f"duration must be positive (got {duration!r})")
    return seed, duration_s


def _override_pairs(overrides: Overrides) -> Optional[List[Tuple[str, str]]]:
    """``(path, TOML value text)`` pairs for the native module."""
    if overrides is None:
        return None
    from ._config import _format_value

    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    pairs = []
    for item in items:
        try:
            path, value = item
        except (TypeError, ValueError):
            raise TypeError(
                "overrides must be a dict of path -> value or a list of (path, value) pairs"
            ) from None
        if not isinstance(path, str):
            raise TypeError(f"override paths must be strings, not {type(path).__name__}")
        pairs.append((path, _format_value(value, path)))
    return pairs


def check_config(config: ConfigLike, overrides: Overrides = None) -> Dict[str, Any]:
    """Validate a config (and ``set``-path overrides) without running it.

    The checks are the simulator's, so the errors are those :func:`simulate` and the
    command line report.

    Returns:
        The effective config: presets expanded, overrides applied, every default filled
        in (the ``effective_config`` of ``run.json``).

    Raises:
        ConfigError: the config is invalid; the message names the file and key.
    """
    text, origin = _config_text(config)
    return json.loads(_native().check_config(text, origin, _override_pairs(overrides)))


#: Bytes per base page: the unit of the page counters in ``vmstat``.


def flatten_summary(summary: Mapping[str, Any]) -> Dict[str, Union[int, float, bool]]:
    """The numeric values of a summary as one flat dict keyed by metric path.

    Keys use the path syntax of experiment metrics (``accesses``, ``vmstat.pgfault``,
    ``nodes[1].used_bytes``, ``workloads[0].score_accesses_per_s``); strings (names)
    are left out; ``null`` (NaN in the simulator's JSON) becomes ``nan``. The summary's
    ``promote_mbps`` and ``demote_mbps`` are the seed-001 "promote rate": pages migrated
    times 4 KiB, in MB (1e6 B) per simulated second of the whole run.
    """
    out: Dict[str, Union[int, float, bool]] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif isinstance(value, (list, tuple)):
            for i, sub in enumerate(value):
                walk(f"{prefix}[{i}]", sub)
        elif value is None:
            out[prefix] = math.nan
        elif isinstance(value, (bool, int, float)):
            out[prefix] = value

    walk("", summary)
    return out


def sweep(base_config: ConfigLike, grid: Any, **kwargs: Any) -> "pandas.DataFrame":
    """Run ``base_config`` at every point of ``grid``; one DataFrame row per point.

    ``grid`` is ``{set path: [values], ...}`` (the Cartesian product) or a list of
    points. Runs on local processes by default, or on a Dask distributed cluster with
    ``engine="dask"`` / ``address=...``. See :func:`tiermem.sweeps.sweep` for every
    argument.
    """
    # Imported on use, so that `python -m tiermem.sweeps` finds the module unloaded.
    from .sweeps import sweep as run

    return run(base_config, grid, **kwargs)


class Result:
    """The outcome of one simulation.

    Attributes:
        summary_json: the ``summary.json`` text of the run.
        timeline_csv: the ``timeline.csv`` text of the run.
        config_json: the fully resolved config (presets expanded, defaults filled in),
            as JSON text.
    """

    def __init__(self, summary_json: str, timeline_csv: str, config_json: str) -> None:
        self.summary_json = summary_json
        self.timeline_csv = timeline_csv
        self.config_json = config_json
        self._summary: Optional[Dict[str, Any]] = None
        self._config: Optional[Dict[str, Any]] = None
        self._timeline: Optional["pandas.DataFrame"] = None

    @property
    def summary(self) -> Dict[str, Any]:
        """The run's summary (``summary.json``) as a dict."""
        if self._summary is None:
            self._summary = json.loads(self.summary_json)
        return self._summary

    @property
    def config(self) -> Dict[str, Any]:
        """The fully resolved config of the run as a dict."""
        if self._config is None:
            self._config = json.loads(self.config_json)
        return self._config

    @property
    def timeline(self) -> "pandas.DataFrame":
        """The sampled timeline (``timeline.csv``) as a DataFrame, one row per sample.

        Columns: ``time_s``, ``throughput_accesses_per_s``, ``mean_latency_ns``; per node
        N ``nodeN_used_pages``, ``nodeN_free_pages``, ``nodeN_read_MBps``,
        ``nodeN_write_MBps``, ``nodeN_latency_ns``; then cumulative ``/proc/vmstat``
        counters under their kernel names (``pgdemote_kswapd``, ``pswpout``, ...).
        """
        if self._timeline is None:
            import io

            import pandas as pd

            self._timeline = pd.read_csv(io.StringIO(self.timeline_csv))
        return self._timeline

    def plot(self, kind: str = "placement", ax: Optional["Axes"] = None) -> "Axes":
        """Plot the timeline; see :func:`tiermem.plots.plot_timeline`.

        Args:
            kind: ``"placement"`` (used memory per node), ``"bandwidth"`` (read + write
                MB/s per node), ``"latency"`` (loaded latency per node), ``"vmstat"``
                (per-second rates of the vmstat counters that moved), ``"promotion"``
                (promoted and demoted MB/s) or ``"threshold"`` (the NUMA-balancing hot
                threshold per node, as the automatic adjustment moves it).
            ax: matplotlib axes to draw on; a new figure when omitted.

        Returns:
            The axes drawn on.
        """
        from . import plots

        return plots.plot_timeline(self.timeline, kind, ax=ax)

    def __repr__(self) -> str:
        rows = sum(1 for line in self.timeline_csv.splitlines()[1:] if line.strip())
        keys = list(self.summary)
        shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"<tiermem.Result: {rows} timeline rows; summary keys: {shown}>"
