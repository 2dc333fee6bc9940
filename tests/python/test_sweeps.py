"""Tests of the config objects, check_config/overrides and parameter sweeps (local
processes and a Dask LocalCluster), their files and their command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import tiermem
from tiermem import Config, Kernel, Machine, MemPolicy, Node, NumaBalancing, Pmbench, Stream
from tiermem.sweeps import expand_grid, load_sweep_file

# A run of ~0.1 s simulated on the small machine: tens of milliseconds of wall time.
TINY = Config(
    machine="small",
    duration="100ms",
    workloads=[Pmbench(mapsize="64MiB", duration="50ms", pattern="normal_ih")],
)

# --------------------------------------------------------------------------------------
# Config objects
# --------------------------------------------------------------------------------------


def test_objects_serialise_to_the_config_language():
    cfg = Config(
        machine=Machine.from_preset("small", name="mine"),
        seed=3,
        kernel=Kernel(
            numa_balancing=2,
            demotion_enabled=True,
            numa=NumaBalancing(promotion="rate-limit", promote_rate_limit_mbps=64),
        ),
        workloads=[
            Pmbench(mapsize="1GiB", read_ratio=80, policy=MemPolicy.bind([0, 1])),
            Stream(threads=2, extra={"future_key": 1}),
        ],
    )
    assert cfg.to_dict() == {
        "machine": {"preset": "small", "name": "mine"},
        "workloads": [
            {"type": "pmbench", "mapsize": "1GiB", "read_ratio": 80,
             "policy": {"mode": "bind", "nodes": [0, 1]}},
            {"type": "stream", "threads": 2, "future_key": 1},
        ],
        "kernel": {
            "demotion_enabled": True,
            "numa_balancing": 2,
            "numa": {"promote_rate_limit_mbps": 64, "promotion": "rate-limit"},
        },
        "seed": 3,
    }
    # Objects nest inside plain dicts too.
    text = tiermem.to_toml({"machine": "small", "workloads": [Pmbench(mapsize="1GiB")]})
    assert text == 'machine = "small"\n\n[[workloads]]\ntype = "pmbench"\nmapsize = "1GiB"\n'


def test_config_from_toml_builds_objects(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(TINY.to_toml() + "\n[kernel.numa]\nhot_threshold_ms = 5\n")
    cfg = Config.from_toml(path)
    assert cfg.workloads == TINY.workloads
    assert cfg.kernel == Kernel(numa=NumaBalancing(hot_threshold_ms=5))
    assert Config.from_toml(path.read_text()) == cfg
    with pytest.raises(tiermem.ConfigError, match="TOML syntax error"):
        Config.from_toml("machine = \n")
    with pytest.raises(ValueError, match="unknown workload type 'fio'"):
        Config.from_dict({"machine": "small", "workloads": [{"type": "fio"}]})


def test_objects_run_and_check(native):
    result = TINY.simulate(seed=2)
    assert result.summary["accesses"] > 0 and result.summary["seed"] == 2
    eff = TINY.check()
    assert eff["workloads"][0]["pattern"] == "normal_ih"
    assert eff["kernel"]["watermark_scale_factor"] == 10  # the default, filled in
    node = Node(0, capacity="2GiB", read_latency="80ns", read_bandwidth="40GB/s", cpus=2)
    eff = tiermem.check_config(Config(machine=Machine(nodes=[node])))
    assert eff["machine"]["nodes"][0]["capacity"] == 2**31


def test_object_errors_are_the_command_lines(native, tiermem_binary, tmp_path):
    bad = Config(machine="small", workloads=[Pmbench(mapsize="1GiB", read_ratio=101)])
    path = tmp_path / "bad.toml"
    path.write_text(bad.to_toml())
    cli = subprocess.run(
        [str(tiermem_binary), "sim", str(path), "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert cli.returncode == 2
    with pytest.raises(tiermem.ConfigError) as err:
        tiermem.simulate(path)
    assert cli.stderr.strip() == f"tiermem: error: {err.value}"
    assert "key `workloads[0].read_ratio`" in str(err.value)
    # The object itself (origin "<Config>") gives the same key and message.
    with pytest.raises(tiermem.ConfigError, match=r"<Config>: key `workloads\[0\]\.read_ratio`"):
        bad.check()
    # Keys the simulator does not know are rejected by it, whether written via `extra`...
    with pytest.raises(tiermem.ConfigError, match="unknown field `hot_treshold_ms`"):
        Config(machine="small", kernel=Kernel(numa=NumaBalancing(extra={"hot_treshold_ms": 1}))).check()
    # ... or through from_dict.
    with pytest.raises(tiermem.ConfigError, match="unknown field `mapsiz`"):
        Config.from_dict({"machine": "small", "workloads": [{"type": "pmbench", "mapsiz": 1}]}).check()


def test_overrides_are_experiment_set_paths(native):
    eff = tiermem.check_config(
        TINY,
        {"machine.nodes[0].capacity": "1GiB", "kernel.zram": {"capacity": "1GiB"},
         "workloads[0].policy": MemPolicy.preferred(1)},
    )
    assert eff["machine"]["nodes"][0]["capacity"] == 2**30
    assert eff["kernel"]["zram"]["capacity"] == 2**30
    assert eff["workloads"][0]["policy"] == {"mode": "preferred", "nodes": [1]}
    # Applied in order: the later path wins.
    eff = tiermem.check_config(TINY, [("seed", 5), ("seed", 6)])
    assert eff["seed"] == 6
    with pytest.raises(tiermem.ConfigError, match=r"key `machine.nodes\[7\].capacity`: index 7 is out of range \(length 2\)"):
        tiermem.check_config(TINY, {"machine.nodes[7].capacity": "1GiB"})
    with pytest.raises(tiermem.ConfigError, match="key `kernel.numa.hot_threshold_ms`: must be positive"):
        tiermem.simulate(TINY, overrides={"kernel.numa.hot_threshold_ms": 0})
    with pytest.raises(TypeError, match="overrides"):
        tiermem.check_config(TINY, [1, 2])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------
# Grids
# --------------------------------------------------------------------------------------


def test_expand_grid_order_and_forms():
    points = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert points[:4] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"}, {"a": 2, "b": "x"}]
    assert len(points) == 6
    assert expand_grid([{"a": 1}, {"a": 5}]) == [{"a": 1}, {"a": 5}]
    assert expand_grid({}) == [{}]
    with pytest.raises(ValueError, match="empty"):
        expand_grid({"a": []})
    with pytest.raises(TypeError, match="list of values"):
        expand_grid({"a": "1GiB"})
    with pytest.raises(ValueError, match="same paths"):
        expand_grid([{"a": 1}, {"b": 1}])
    with pytest.raises(TypeError):
        expand_grid(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------

GRID = {"workloads[0].read_ratio": [0, 50, 100], "seed": [1, 2]}


def test_local_sweep_dataframe(native):
    df = tiermem.sweep(TINY, GRID, fixed={"machine.nodes[0].capacity": "1GiB"}, workers=2,
                       progress=False)
    assert list(df.columns[:2]) == list(GRID)
    assert df.attrs["parameters"] == list(GRID)
    assert list(df["workloads[0].read_ratio"]) == [0, 0, 50, 50, 100, 100]
    assert list(df["seed"]) == [1, 2] * 3
    assert (df["nodes[0].capacity_bytes"] == 2**30).all()
    assert (df["accesses"] > 0).all()
    # All reads (0 %) write nothing back; all writes (100 %) do.
    writes = df["nodes[0].mean_write_bandwidth_bytes_per_s"]
    assert writes[df["workloads[0].read_ratio"] == 100].min() < writes[df["workloads[0].read_ratio"] == 0].min()
    # Each row is the single run it stands for, whatever the worker count.
    single = tiermem.simulate(TINY, seed=2, overrides={"machine.nodes[0].capacity": "1GiB",
                                                       "workloads[0].read_ratio": 50})
    row = df.iloc[3]
    assert row["accesses"] == single.summary["accesses"]
    assert row["mean_latency_ns"] == single.summary["mean_latency_ns"]
    in_process = tiermem.sweep(TINY, GRID, fixed={"machine.nodes[0].capacity": "1GiB"},
                               workers=1, progress=False)
    pd.testing.assert_frame_equal(df, in_process, check_exact=True)


def test_sweep_metrics_and_values(native):
    df = tiermem.sweep(
        TINY,
        {"workloads[0].policy": [MemPolicy.bind([0]), MemPolicy.bind([1])]},
        metrics=["nodes[0].used_bytes", "nodes[1].used_bytes", "no.such.metric"],
        progress=False,
        workers=1,
    )
    assert list(df.columns) == ["workloads[0].policy", "nodes[0].used_bytes",
                                "nodes[1].used_bytes", "no.such.metric"]
    assert df["workloads[0].policy"][0] == '{ mode = "bind", nodes = [0] }'
    assert df["nodes[1].used_bytes"][0] == 0 and df["nodes[0].used_bytes"][1] == 0
    assert df["no.such.metric"].isna().all()


def test_sweep_errors_before_running(native):
    start = time.monotonic()
    with pytest.raises(tiermem.ConfigError) as err:
        tiermem.sweep(TINY.to_toml(), {"kernel.numa.hot_threshold_ms": [100, 0, 5]}, progress=False)
    assert str(err.value) == (
        "<string> (sweep point 1: kernel.numa.hot_threshold_ms=0): "
        "key `kernel.numa.hot_threshold_ms`: must be positive"
    )
    with pytest.raises(tiermem.ConfigError, match=r"sweep point 0: machine.nodes\[3\].capacity=\"1GiB\"\): key `machine.nodes\[3\].capacity`: index 3"):
        tiermem.sweep(TINY, {"machine.nodes[3].capacity": ["1GiB"]}, progress=False)
    assert time.monotonic() - start < 5  # nothing ran
    with pytest.raises(ValueError, match="unknown engine 'ray'"):
        tiermem.sweep(TINY, GRID, engine="ray")
    with pytest.raises(ValueError, match="workers"):
        tiermem.sweep(TINY, GRID, workers=0)
    with pytest.raises(ValueError, match="seed"):
        tiermem.sweep(TINY, GRID, seed=-1)


def test_sweep_outputs(native, tmp_path):
    plots = [
        {"file": "latency.png", "type": "line", "x": "workloads[0].read_ratio",
         "y": "mean_latency_ns", "group": "seed"},
        {"file": "bandwidth.png", "type": "timeline", "kind": "bandwidth"},
    ]
    df = tiermem.sweep(TINY, GRID, out_dir=tmp_path, plots=plots, name="rr", progress=False)
    csv = pd.read_csv(tmp_path / "results.csv", index_col="point")
    pd.testing.assert_frame_equal(csv, df, check_dtype=False, check_names=False)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["experiment"] == "rr" and results["parameters"] == list(GRID)
    assert [v["name"] for v in results["variants"]][:2] == ["read_ratio=0,seed=1", "read_ratio=0,seed=2"]
    point = tmp_path / "points" / "0005"
    assert (point / "overrides.toml").read_text() == '"workloads[0].read_ratio" = 100\n"seed" = 2\n'
    assert json.loads((point / "summary.json").read_text())["seed"] == 2
    assert json.loads((point / "config.json").read_text())["workloads"][0]["read_ratio"] == 100
    assert (point / "timeline.csv").read_text().startswith("time_s,")
    assert (tmp_path / "latency.png").stat().st_size > 0
    assert (tmp_path / "bandwidth.png").stat().st_size > 0


def test_plot_sweep(native):
    from matplotlib.figure import Figure

    from tiermem.plots import plot_sweep

    df = tiermem.sweep(TINY, GRID, progress=False, workers=1)
    ax = plot_sweep(df, "workloads[0].read_ratio", "mean_latency_ns", group="seed",
                    ax=Figure().subplots())
    assert [line.get_label() for line in ax.lines] == ["seed = 1", "seed = 2"]
    assert list(ax.lines[0].get_xdata()) == [0, 50, 100]
    with pytest.raises(ValueError, match="no column"):
        plot_sweep(df, "nope", "mean_latency_ns")


def test_sweep_on_a_dask_local_cluster_matches_local_processes(native):
    distributed = pytest.importorskip("distributed")
    grid = {"workloads[0].read_ratio": [0, 20, 40, 60, 80, 100, 30, 70], "seed": [1, 2]}
    local = tiermem.sweep(TINY, grid, workers=2, progress=False)
    assert len(local) == 16
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = tiermem.sweep(TINY, grid, engine="dask", address=cluster.scheduler_address,
                               progress=False)
        with distributed.Client(cluster) as client:
            via_client = tiermem.sweep(TINY, grid, address=client, progress=False)
    pd.testing.assert_frame_equal(local, remote, check_exact=True)
    pd.testing.assert_frame_equal(local, via_client, check_exact=True)


# --------------------------------------------------------------------------------------
# Sweep files and the command line
# --------------------------------------------------------------------------------------

SWEEP_FILE = """\
name = "tiny"
base = "base.toml"
metrics = ["accesses", "mean_latency_ns"]

[set]
"machine.nodes[0].capacity" = "1GiB"

[grid]
"workloads[0].read_ratio" = [0, 100]
"seed" = [1, 2]

[[plots]]
file = "latency.png"
type = "line"
x = "workloads[0].read_ratio"
y = "mean_latency_ns"
group = "seed"
"""


def write_sweep(tmp_path: Path, text: str = SWEEP_FILE) -> Path:
    (tmp_path / "base.toml").write_text(TINY.to_toml())
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_sweep_file(native, tmp_path):
    spec = load_sweep_file(write_sweep(tmp_path))
    assert spec.name == "tiny" and spec.base == tmp_path / "base.toml"
    df = spec.run(tmp_path / "out", progress=False, workers=1)
    assert list(df.columns) == ["workloads[0].read_ratio", "seed", "accesses", "mean_latency_ns"]
    assert (tmp_path / "out" / "latency.png").is_file()
    # Inline base tables work too, and errors name the sweep file.
    inline = SWEEP_FILE.replace('base = "base.toml"\n', "") + "\n[base]\n" + TINY.to_toml().replace(
        "[[workloads]]", "[[base.workloads]]")
    spec = load_sweep_file(write_sweep(tmp_path, inline))
    assert spec.run(tmp_path / "out2", progress=False, workers=1).equals(df)


@pytest.mark.parametrize(
    "edit, message, where",
    [
        (lambda s: "extra = 1\n" + s, "key `extra`: unknown key", "sweep.toml"),
        (lambda s: s.replace('base = "base.toml"', 'base = "missing.toml"'), "key `base`: cannot read", "sweep.toml"),
        (lambda s: s.replace("[0, 100]", "[]"), "key `grid.workloads[0].read_ratio`: must be a non-empty array", "sweep.toml"),
        (lambda s: s.replace("[grid]", "[grud]"), "key `grud`: unknown key", "sweep.toml"),
        (lambda s: s.replace('file = "latency.png"\n', ""), "key `plots[0]`: needs `file` and `type`", "sweep.toml"),
        (lambda s: s.replace("[grid]", "[grid"), "TOML syntax error", "sweep.toml"),
        # A bad point is reported against the base config it modifies, naming the point.
        (lambda s: s.replace("= [0, 100]", "= [0, 101]"),
         "(sweep point 2: workloads[0].read_ratio=101, seed=1): key `workloads[0].read_ratio`: is a percentage",
         "base.toml"),
    ],
)
def test_sweep_file_errors_exit_2(native, tmp_path, edit, message, where):
    path = write_sweep(tmp_path, edit(SWEEP_FILE))
    proc = subprocess.run(
        [sys.executable, "-m", "tiermem.sweeps", str(path), "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"tiermem sweep: error: {tmp_path / where}"), proc.stderr
    assert message in proc.stderr
    assert not (tmp_path / "out").exists()


def test_cli_sweep_is_native_and_matches_the_python_sweep(native, tiermem_binary, tmp_path):
    # The binary runs the sweep itself (no Python on its PATH) and writes what the Python
    # front writes, with the same numbers.
    path = write_sweep(tmp_path)
    env = dict(os.environ, PATH=str(tmp_path / "no-bin"))
    proc = subprocess.run(
        [str(tiermem_binary), "sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "2",
         "--duration", "0.05"],
        capture_output=True, text=True, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "4 points of tiny" in proc.stdout
    df = pd.read_csv(tmp_path / "out" / "results.csv")
    assert len(df) == 4
    assert (tmp_path / "out" / "latency.png").stat().st_size > 0
    summary = json.loads((tmp_path / "out" / "points" / "0000" / "summary.json").read_text())
    assert summary["sim_seconds"] == pytest.approx(0.05)
    py = load_sweep_file(path)
    py.plots = []
    ref = py.run(tmp_path / "py", progress=False, workers=1, duration=0.05)
    pd.testing.assert_frame_equal(
        df.drop(columns="point"), ref.reset_index(drop=True), check_dtype=False, check_exact=False,
        rtol=1e-12,
    )
    native_json = json.loads((tmp_path / "out" / "results.json").read_text())
    py_json = json.loads((tmp_path / "py" / "results.json").read_text())
    assert [v["name"] for v in native_json["variants"]] == [v["name"] for v in py_json["variants"]]
    assert [v["labels"] for v in native_json["variants"]] == [v["labels"] for v in py_json["variants"]]
    env = dict(os.environ)
    bad = subprocess.run(
        [str(tiermem_binary), "sweep", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, env=env,
    )
    assert bad.returncode == 2
    assert "cannot read" in bad.stderr
    bad = subprocess.run(
        [str(tiermem_binary), "sweep", str(path), "--out", str(tmp_path / "o"), "--engine", "ray"],
        capture_output=True, text=True, env=env,
    )
    assert bad.returncode == 2  # clap rejects the engine
