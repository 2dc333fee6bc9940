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

Configs are the same TOML files the ``tiermem`` command line reads; bad configs raise
:class:`ConfigError` naming the offending key.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

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
    "machine_presets",
    "parse_duration",
    "simulate",
    "to_toml",
]

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


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
    if isinstance(config, os.PathLike):
        path = Path(config)
        return path.read_text(encoding="utf-8"), str(path)
    if isinstance(config, str):
        if _looks_like_path(config):
            path = Path(config.strip())
            return path.read_text(encoding="utf-8"), str(path)
        return config, "<string>"
    raise TypeError(
        "config must be a path to a .toml file, a TOML string or a dict, "
        f"not {type(config).__name__}"
    )


def simulate(
    config: ConfigLike,
    *,
    seed: Optional[int] = None,
    duration: Union[float, str, None] = None,
) -> "Result":
    """Run one simulation.

    Args:
        config: a path (``str`` ending in ``.toml`` or naming an existing file, or a
            ``pathlib.Path``), TOML text, or a dict with the same structure as the TOML.
        seed: overrides the config's ``seed``.
        duration: overrides the config's simulated ``duration``: seconds, or a string
            with a unit such as ``"10s"`` or ``"500ms"``.

    Returns:
        The run's :class:`Result`.

    Raises:
        ConfigError: the config is invalid; the message names the file and key.
        ValueError: ``seed`` or ``duration`` is out of range.
        FileNotFoundError: ``config`` names a file that does not exist.
        RuntimeError: the simulation failed for a reason other than its input.

    The simulation runs without holding the GIL, so several can run in threads.
    """
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
    text, origin = _config_text(config)
    summary_json, timeline_csv, config_json = _native().simulate_text(
        text, origin, seed, duration_s
    )
    return Result(summary_json, timeline_csv, config_json)


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
                MB/s per node), ``"latency"`` (loaded latency per node) or ``"vmstat"``
                (per-second rates of the vmstat counters that moved).
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
