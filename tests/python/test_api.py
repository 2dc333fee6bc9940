"""Tests of the Python API: the TOML writer, durations, plots and (when the native
module is built) simulations.

Run from the repository root with ``pytest`` (pyproject.toml puts ``python/`` on the
path); the simulation tests are skipped unless ``maturin develop`` has built
``tiermem._tiermem``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tiermem
from tiermem import parse_duration, to_toml
from tiermem.plots import ResultsError, main, plot_timeline, render_experiment, timeline_series

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli", reason="needs tomllib (3.11+) or tomli")

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"

SMALL_PMBENCH = """\
machine = "small"
duration = "100ms"

[[workloads]]
type = "pmbench"
mapsize = "64MiB"
duration = "50ms"
"""

# --------------------------------------------------------------------------------------
# TOML writer
# --------------------------------------------------------------------------------------


def test_to_toml_round_trips_a_config():
    config = {
        "seed": 7,
        "duration": "10s",
        "machine": {
            "preset": "small",
            "nodes": [{"id": 0, "capacity": "2GiB"}, {"id": 1, "capacity": "16GiB"}],
        },
        "kernel": {
            "demotion_enabled": True,
            "watermark_scale_factor": 200,
            "zram": {"capacity": "4GiB", "compression_ratio": 2.5},
        },
        "workloads": [
            {
                "type": "pmbench",
                "mapsize": "1GiB",
                "read_ratio": 80,
                "cpu_nodes": [0],
                "policy": {"mode": "bind", "nodes": [0, 1]},
            },
            {"type": "stream", "threads": 4, "nt_stores": False},
        ],
    }
    text = to_toml(config)
    assert tomllib.loads(text) == config
    assert text.count("[[workloads]]") == 2
    assert "[[machine.nodes]]" in text
    assert "[workloads.policy]" in text


def test_to_toml_values_and_keys():
    data = {
        "plain": "a \"quoted\" \\ string\nwith\ttabs and \x01 control",
        "unicode": "µs ü 日本",
        "needs quotes": 1,
        "ü": 2,
        "": 3,
        "big": 2**63 - 1,
        "negative": -5,
        "floats": [0.1, 1e20, -2.5e-7, 3.0],
        "bools": [True, False],
        "empty_list": [],
        "tuple": (1, 2),
        "nested_lists": [[1, 2], ["a"]],
        "mixed": [1, "two", {"three": 3}],
        "empty_table": {},
        "deep": {"a": {"b": {"c": 1}}},
        "skipped": None,
        "table_with_none": {"x": None, "y": 1},
        "path": Path("/tmp/x.toml"),
        "np_int": np.int64(4),
        "np_float": np.float32(0.5),
        "np_bool": np.bool_(True),
        "np_array": np.array([1, 2, 3]),
    }
    parsed = tomllib.loads(to_toml(data))
    expected = dict(data)
    del expected["skipped"]
    expected.update(
        {
            "tuple": [1, 2],
            "table_with_none": {"y": 1},
            "path": "/tmp/x.toml",
            "np_int": 4,
            "np_float": 0.5,
            "np_bool": True,
            "np_array": [1, 2, 3],
        }
    )
    assert parsed == expected


def test_to_toml_special_floats():
    parsed = tomllib.loads(to_toml({"n": math.nan, "p": math.inf, "m": -math.inf}))
    assert math.isnan(parsed["n"])
    assert parsed["p"] == math.inf and parsed["m"] == -math.inf


def test_to_toml_array_of_tables_with_nested_arrays():
    data = {"a": [{"x": 1, "b": [{"y": 2}, {"y": 3}], "t": {"z": 4}}, {"x": 5}]}
    assert tomllib.loads(to_toml(data)) == data


def test_to_toml_empty_document():
    assert to_toml({}) == ""
    assert tomllib.loads(to_toml({"skipped": None})) == {}


@pytest.mark.parametrize(
    "data, error",
    [
        ({1: "x"}, TypeError),
        ({"a": {2: "x"}}, TypeError),
        ({"a": [1, None]}, ValueError),
        ({"a": 2**64}, ValueError),
        ({"a": object()}, TypeError),
        ({"a": {1, 2}}, TypeError),
    ],
)
def test_to_toml_rejects(data, error):
    with pytest.raises(error):
        to_toml(data)


def test_to_toml_rejects_non_dict_document():
    with pytest.raises(TypeError):
        to_toml([1, 2])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Durations and config arguments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("10s", 10.0),
        ("1.5ms", 1.5e-3),
        ("80ns", 80e-9),
        ("250us", 250e-6),
        ("5µs", 5e-6),
        ("2min", 120.0),
        ("1h", 3600.0),
        ("1_000ms", 1.0),
        (" 100 ms ", 0.1),
        (".5s", 0.5),
        ("0s", 0.0),
        (3, 3.0),
        (0.25, 0.25),
        (np.float64(2.0), 2.0),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    "text", ["10", "10 parsec", "-1s", "s", "", "1.2.3s", "ten s", -1.0, math.nan, math.inf]
)
def test_parse_duration_rejects_bad_values(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("value", [None, True, [1]])
def test_parse_duration_rejects_bad_types(value):
    with pytest.raises(TypeError):
        parse_duration(value)


def test_simulate_checks_arguments_before_running():
    with pytest.raises(ValueError, match="seed"):
        tiermem.simulate(SMALL_PMBENCH, seed=-1)
    with pytest.raises(TypeError, match="seed"):
        tiermem.simulate(SMALL_PMBENCH, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unit"):
        tiermem.simulate(SMALL_PMBENCH, duration="10")
    with pytest.raises(ValueError, match="positive"):
        tiermem.simulate(SMALL_PMBENCH, duration=0)
    with pytest.raises(TypeError, match="config"):
        tiermem.simulate(42)  # type: ignore[arg-type]


def test_config_argument_forms(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(SMALL_PMBENCH)
    assert tiermem._config_text(path) == (SMALL_PMBENCH, str(path))
    assert tiermem._config_text(str(path)) == (SMALL_PMBENCH, str(path))
    assert tiermem._config_text(SMALL_PMBENCH) == (SMALL_PMBENCH, "<string>")
    assert tiermem._config_text('machine = "small"') == ('machine = "small"', "<string>")
    text, origin = tiermem._config_text({"machine": "small"})
    assert (text, origin) == ('machine = "small"\n', "<dict>")
    with pytest.raises(FileNotFoundError):
        tiermem._config_text(str(tmp_path / "missing.toml"))


def test_config_error_is_a_value_error():
    assert issubclass(tiermem.ConfigError, ValueError)


# --------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------


def synthetic_timeline(rows: int = 20, demote_from: int = 5) -> pd.DataFrame:
    """A timeline shaped like the simulator's: 2 nodes, cumulative vmstat counters."""
    t = np.round(np.arange(1, rows + 1) * 0.1, 6)
    used0 = np.minimum(np.arange(1, rows + 1) * 50_000, 600_000)
    demoted = np.maximum(np.arange(rows) - demote_from, 0) * 1000
    return pd.DataFrame(
        {
            "time_s": t,
            "throughput_accesses_per_s": np.full(rows, 1.0e7),
            "mean_latency_ns": np.linspace(90, 140, rows),
            "node0_used_pages": used0,
            "node0_free_pages": 1_048_576 - used0,
            "node0_read_MBps": np.full(rows, 900.0),
            "node0_write_MBps": np.full(rows, 100.0),
            "node0_latency_ns": np.linspace(85, 120, rows),
            "node1_used_pages": demoted,
            "node1_free_pages": 2_097_152 - demoted,
            "node1_read_MBps": np.linspace(0, 300, rows),
            "node1_write_MBps": np.linspace(0, 200, rows),
            "node1_latency_ns": np.full(rows, 200.0),
            "pgdemote_kswapd": demoted,
            "pgsteal_kswapd": demoted,
            "pswpout": np.zeros(rows, dtype=int),
        }
    )


def test_timeline_series_kinds():
    df = synthetic_timeline()
    series, ylabel = timeline_series(df, "placement")
    assert [s[0] for s in series] == ["node 0", "node 1"]
    assert "GiB" in ylabel
    assert series[0][2][-1] == pytest.approx(600_000 * 4096 / 2**30)
    series, _ = timeline_series(df, "bandwidth")
    assert series[0][2][0] == pytest.approx(1000.0)
    series, _ = timeline_series(df, "latency")
    assert series[1][2][0] == pytest.approx(200.0)
    series, _ = timeline_series(df, "vmstat")
    # pswpout never moved; the others are per-second rates of the cumulative counts.
    assert [s[0] for s in series] == ["pgdemote_kswapd", "pgsteal_kswapd"]
    assert series[0][2][-1] == pytest.approx(1000 / 0.1)
    assert series[0][2][0] == 0.0
    with pytest.raises(ValueError, match="kind"):
        timeline_series(df, "nonsense")
    with pytest.raises(ValueError, match="used_pages"):
        timeline_series(df[["time_s", "pswpout"]], "placement")


def test_vmstat_rates_skip_a_sample_at_time_zero():
    df = pd.DataFrame({"time_s": [0.0, 0.5, 1.0], "pswpout": [0, 10, 30]})
    (label, x, y), = timeline_series(df, "vmstat")[0]
    assert label == "pswpout"
    assert list(x) == [0.5, 1.0]
    assert list(y) == pytest.approx([20.0, 40.0])


@pytest.mark.parametrize("kind", ["placement", "bandwidth", "latency", "vmstat"])
def test_plot_timeline_draws_lines(kind):
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    returned = plot_timeline(synthetic_timeline(), kind, ax=ax, title="t")
    assert returned is ax
    assert len(ax.get_lines()) == 2
    assert ax.get_title() == "t"


def test_plot_timeline_without_moving_counters_notes_it():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    df = synthetic_timeline().assign(pgdemote_kswapd=0, pgsteal_kswapd=0)
    plot_timeline(df, "vmstat", ax=ax)
    assert not ax.get_lines()
    assert any("no vmstat" in t.get_text() for t in ax.texts)


def write_experiment(out: Path) -> dict:
    """A synthetic experiment directory: two variants with timelines, one without."""
    for name, start in (("swap", 15), ("demote", 5)):
        (out / name).mkdir(parents=True)
        synthetic_timeline(demote_from=start).to_csv(out / name / "timeline.csv", index=False)
    results = {
        "experiment": "synthetic",
        "variants": [
            {"name": "swap", "metrics": {"throughput": 9.5e6, "wsf": 10, "lat": {"p50": 120}},
             "published": {"throughput": 9.0e6, "lat.p50": 125},
             "timeline_csv": "swap/timeline.csv"},
            {"name": "demote", "metrics": {"throughput": 1.2e7, "wsf": 100, "lat": {"p50": 110}},
             "timeline_csv": "demote/timeline.csv"},
            {"name": "no-timeline", "metrics": {"throughput": 1.0e7, "wsf": 1000},
             "timeline_csv": None},
        ],
        "plots": [
            {"file": "throughput.png", "type": "bar", "title": "Throughput", "y": ["throughput"],
             "variants": None, "ylabel": "accesses/s"},
            {"file": "two-metrics.png", "type": "bar", "y": ["throughput", "wsf"],
             "variants": ["swap", "demote"]},
            {"file": "sweep.png", "type": "line", "x": "wsf", "y": ["throughput", "lat.p50"],
             "logx": True, "xlabel": "watermark_scale_factor"},
            {"file": "placement.png", "type": "timeline", "kind": "placement",
             "variants": ["swap", "demote"]},
            {"file": "vmstat.png", "type": "timeline", "kind": "vmstat", "subplots": True,
             "variants": None},
            {"file": "plots/columns.png", "type": "timeline", "y": ["mean_latency_ns"]},
            {"file": "missing-metric.png", "type": "bar", "y": ["no_such_metric"]},
            {"file": "bad-type.png", "type": "pie", "y": ["throughput"]},
            {"file": "no-timelines.png", "type": "timeline", "kind": "latency",
             "variants": ["no-timeline"]},
            {"file": "../escape.png", "type": "bar", "y": ["throughput"]},
        ],
    }
    (out / "results.json").write_text(json.dumps(results))
    return results


def test_render_experiment_writes_requested_pngs(tmp_path, capsys):
    out = tmp_path / "exp"
    write_experiment(out)
    written = render_experiment(out)
    expected = ["throughput.png", "two-metrics.png", "sweep.png", "placement.png",
                "vmstat.png", "plots/columns.png"]
    assert sorted(p.relative_to(out.resolve()).as_posix() for p in written) == sorted(expected)
    for name in expected:
        data = (out / name).read_bytes()
        assert len(data) > 1000
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    for name in ["missing-metric.png", "bad-type.png", "no-timelines.png"]:
        assert not (out / name).exists()
    assert not (tmp_path / "escape.png").exists()
    err = capsys.readouterr().err
    for fragment in ["missing-metric.png", "pie", "no-timelines.png", "escape.png",
                     "no-timeline has no timeline"]:
        assert fragment in err


def test_render_experiment_in_the_simulators_shape(tmp_path, capsys):
    """results.json as tiermem-sim's experiment.rs writes it: every plot field present,
    flat metric names with indices, published figures, NaN metrics as null."""
    out = tmp_path / "exp"
    for name in ("dram-only", "cxl-only"):
        (out / "variants" / name).mkdir(parents=True)
        synthetic_timeline().to_csv(out / "variants" / name / "timeline.csv", index=False)
    results = {
        "experiment": "stream-placement",
        "description": "STREAM bound to each node",
        "version": "0.1.0",
        "variants": [
            {"name": "dram-only",
             "metrics": {"workloads[0].copy_mbps": 190000.0, "workloads[0].triad_mbps": 200000.0,
                         "workloads[0].bandwidth_mbps": 180000.0, "curve_error_pct": None},
             "published": {"workloads[0].copy_mbps": 200923.2,
                           "workloads[0].triad_mbps": 208523.8},
             "timeline_csv": "variants/dram-only/timeline.csv"},
            {"name": "cxl-only",
             "metrics": {"workloads[0].copy_mbps": 21000.0, "workloads[0].triad_mbps": 23000.0,
                         "workloads[0].bandwidth_mbps": 20000.0, "curve_error_pct": 1.5},
             "published": {"workloads[0].copy_mbps": 22209.7},
             "timeline_csv": "variants/cxl-only/timeline.csv"},
        ],
        "plots": [
            {"file": "stream-placement.png", "type": "bar", "title": "STREAM best rate",
             "x": None, "y": ["workloads[0].copy_mbps", "workloads[0].triad_mbps"],
             "variants": None, "xlabel": None, "ylabel": "MB/s", "logx": False, "kind": None},
            {"file": "curve.png", "type": "line", "title": "",
             "x": "workloads[0].bandwidth_mbps",
             "y": ["workloads[0].copy_mbps"], "variants": None, "xlabel": None,
             "ylabel": None, "logx": False, "kind": None},
            {"file": "error.png", "type": "bar", "title": "", "x": None,
             "y": ["curve_error_pct"], "variants": None, "xlabel": None, "ylabel": None,
             "logx": False, "kind": None},
            {"file": "bandwidth.png", "type": "timeline", "title": "", "x": None, "y": [],
             "variants": None, "xlabel": None, "ylabel": None, "logx": False,
             "kind": "bandwidth"},
        ],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    written = render_experiment(out)
    assert [p.name for p in written] == [
        "stream-placement.png", "curve.png", "error.png", "bandwidth.png"
    ]
    assert all(p.stat().st_size > 0 for p in written)
    # The null metric of one variant is reported, not fatal.
    assert "curve_error_pct missing for dram-only" in capsys.readouterr().err


def test_bars_of_an_experiment_over_several_seeds_carry_whiskers(tmp_path):
    """results.json of `--seeds`: means in ``metrics``, deviations in ``sd`` (not for every
    metric or variant), each seed's metrics in ``per_seed``."""
    from tiermem.plots import _bar

    results = {
        "experiment": "e", "seeds": [4, 5],
        "variants": [
            {"name": "a", "metrics": {"s": 20.0}, "sd": {"s": 2.5},
             "per_seed": [{"seed": 4, "metrics": {"s": 18.2}}, {"seed": 5, "metrics": {"s": 21.8}}],
             "published": {"s": 40.0}},
            {"name": "b", "metrics": {"s": 5.0}},
        ],
        "plots": [{"file": "s.png", "type": "bar", "y": ["s"]}],
    }
    fig = _bar(results, results["plots"][0])
    ax = fig.axes[0]
    # The whisker of "a" spans mean ± sd; "b" has none (zero length).
    segments = [seg for coll in ax.collections for seg in getattr(coll, "get_segments", lambda: [])()]
    spans = sorted(round(abs(seg[1][1] - seg[0][1]), 6) for seg in segments if len(seg) == 2
                   and seg[0][0] == seg[1][0])
    assert 5.0 in spans
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert [p.name for p in render_experiment(tmp_path)] == ["s.png"]


def test_plots_module_entry_point(tmp_path):
    out = tmp_path / "exp"
    write_experiment(out)
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "tiermem.plots", str(out)],
        capture_output=True, text=True, env=env, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "placement.png").stat().st_size > 0
    assert "wrote 6 plot(s)" in proc.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tiermem.plots", str(empty)],
        capture_output=True, text=True, env=env, check=False,
    )
    assert proc.returncode == 2
    assert "results.json" in proc.stderr and "not found" in proc.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "invalid JSON"),
        ("[]", "JSON object"),
        ('{"variants": {}}', "variants"),
        ('{"variants": [{"metrics": {}}]}', "name"),
        ('{"variants": [], "plots": 3}', "plots"),
    ],
)
def test_malformed_results_exit_2(tmp_path, capsys, content, message):
    (tmp_path / "results.json").write_text(content)
    with pytest.raises(ResultsError, match=message):
        render_experiment(tmp_path)
    assert main([str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


# --------------------------------------------------------------------------------------
# Simulations (need the native module)
# --------------------------------------------------------------------------------------


# The `native` fixture is in conftest.py.


def check_small_run(result: tiermem.Result) -> None:
    assert result.summary["accesses"] > 0
    df = result.timeline
    assert len(df) > 0
    assert "time_s" in df.columns
    assert isinstance(result.config, dict)


def test_simulate_toml_string(native):
    result = tiermem.simulate(SMALL_PMBENCH)
    check_small_run(result)
    assert "timeline rows" in repr(result)


def test_simulate_dict_path_and_overrides(native, tmp_path):
    config = {
        "machine": "small",
        "duration": "1s",
        "workloads": [{"type": "pmbench", "mapsize": "64MiB", "duration": "50ms"}],
    }
    check_small_run(tiermem.simulate(config, seed=3, duration="100ms"))
    path = tmp_path / "small.toml"
    path.write_text(SMALL_PMBENCH)
    check_small_run(tiermem.simulate(path, duration=0.1))
    check_small_run(tiermem.simulate(str(path)))


def test_simulate_result_plots(native):
    from matplotlib.figure import Figure

    result = tiermem.simulate(SMALL_PMBENCH)
    for kind in ("placement", "bandwidth", "latency", "vmstat"):
        ax = Figure().subplots()
        assert result.plot(kind, ax=ax) is ax


def test_unknown_key_raises_config_error(native):
    bad = SMALL_PMBENCH + "[kernel]\nwatermark_scale_factr = 10\n"
    with pytest.raises(tiermem.ConfigError, match="watermark_scale_factr"):
        tiermem.simulate(bad)
    with pytest.raises(ValueError, match="mapsiz"):
        tiermem.simulate({"machine": "small", "workloads": [{"type": "pmbench", "mapsiz": "1GiB"}]})


def test_hostile_overrides_raise_config_error_not_a_crash(native):
    # A path thousands of keys deep used to build tables nested deep enough to overflow
    # the stack (a segfault of the interpreter).
    deep = ".".join(["a"] * 100_000)
    with pytest.raises(tiermem.ConfigError, match="deeper than"):
        tiermem.simulate(SMALL_PMBENCH, overrides={deep: 1})
    # A config asking for more host memory than allowed: refused with the estimate.
    huge = {"machine": "small", "duration": "10ms",
            "workloads": [{"type": "pmbench", "mapsize": "1TiB", "processes": 4096}]}
    with pytest.raises(tiermem.ConfigError, match="host memory"):
        tiermem.simulate(huge)


def test_native_metadata(native):
    assert "small" in tiermem.machine_presets()
    assert tiermem.__version__ == native.version()
    assert tiermem.ConfigError is native.ConfigError


def test_weights_plot_draws_the_sweep_and_references(tmp_path, capsys):
    """The `weights` plot kind (seed 002's bandwidth-vs-weights curve): sweep variants have
    the x metric; references without it become lines, or markers with `auto_<x>`."""
    out = tmp_path / "exp"
    out.mkdir()
    sweep = [{"name": f"w{k}-1", "metrics": {"weight_dram": k, "triad": 50000 + 20000 * min(k, 9)},
              "timeline_csv": None} for k in (1, 2, 4, 9, 16)]
    refs = [
        {"name": "dram-only", "metrics": {"triad": 210000.0}, "timeline_csv": None},
        {"name": "auto", "metrics": {"triad": 215000.0, "auto_weight_dram": 14.5},
         "timeline_csv": None},
    ]
    results = {
        "experiment": "w", "variants": sweep + refs,
        "plots": [
            {"file": "weights.png", "type": "weights", "title": "Triad vs weight",
             "x": "weight_dram", "y": ["triad"], "variants": None, "xlabel": None,
             "ylabel": None, "logx": True, "kind": None},
            {"file": "two-y.png", "type": "weights", "x": "weight_dram", "y": ["triad", "x"]},
            {"file": "no-sweep.png", "type": "weights", "x": "weight_dram", "y": ["triad"],
             "variants": ["dram-only"]},
        ],
    }
    (out / "results.json").write_text(json.dumps(results))
    written = render_experiment(out)
    assert [p.name for p in written] == ["weights.png"]
    assert (out / "weights.png").read_bytes().startswith(b"\x89PNG")
    err = capsys.readouterr().err
    assert "two-y.png" in err and "no-sweep.png" in err
def test_render_trace_heatmap(tmp_path):
    """A `heatmap` plot (written by `tiermem trace heatmap`) renders from its JSON matrix;
    a missing matrix file is skipped with a warning, not an error."""
    counts = [[0] * 8 for _ in range(5)]
    counts[1][2] = 40
    counts[3][7] = 1
    (tmp_path / "heatmap.json").write_text(json.dumps({
        "file": "t.tmt", "time_unit": "instructions", "first_time": 0, "last_time": 1000,
        "ranges": [[16, 20], [100, 104]], "pages": 8, "time_bins": 5, "addr_bins": 8,
        "counts": counts,
    }))
    (tmp_path / "results.json").write_text(json.dumps({
        "experiment": "trace-heatmap", "variants": [],
        "plots": [{"file": "heatmap.png", "type": "heatmap", "data": "heatmap.json"},
                  {"file": "missing.png", "type": "heatmap", "data": "nope.json"}],
    }))
    written = render_experiment(tmp_path)
    assert [p.name for p in written] == ["heatmap.png"]
    assert (tmp_path / "heatmap.png").stat().st_size > 1000
