"""scripts/reaccess-stats.py on a recording whose answer is known; reaccess-probe.py's refusals."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"


def load_stats():
    spec = importlib.util.spec_from_file_location("reaccess_stats", SCRIPTS / "reaccess-stats.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_recording(d, ticks, interval=1.0):
    """ticks: per tick, the touched page numbers, written as the probe writes them."""
    stats = load_stats()
    starts, lens, offsets = [], [], [0]
    for pages in ticks:
        pages = np.array(sorted(pages), np.uint64)
        breaks = np.flatnonzero(np.diff(pages) != 1) + 1 if pages.size else []
        s = pages[np.r_[0, breaks]] if pages.size else np.empty(0, np.uint64)
        ends = np.r_[breaks, pages.size] if pages.size else []
        ln = np.diff(np.r_[0, ends]).astype(np.uint32) if pages.size else np.empty(0, np.uint32)
        starts.append(s)
        lens.append(ln)
        offsets.append(offsets[-1] + len(s))
    np.savez_compressed(d / "touched.npz", starts=np.concatenate(starts), lens=np.concatenate(lens),
                        offsets=np.array(offsets, np.uint64), t=np.arange(len(ticks)) * interval)
    (d / "meta.json").write_text(json.dumps({
        "command": ["synthetic"], "interval_s": interval, "runtime_s": len(ticks) * interval,
        "page_size": 4096}))
    return stats


def test_idle_stretches_give_pageouts_refaults_and_savings(tmp_path):
    # Page 100 touched in every one of 10 ticks, page 7 at ticks 0 and 6 (idle 5 ticks,
    # then back), page 8 at tick 0 only (idle 9 ticks to the end).
    ticks = [[7, 8, 100]] + [[100]] * 5 + [[7, 100]] + [[100]] * 3
    stats = write_recording(tmp_path, ticks)
    t, meta = stats.load(tmp_path)
    assert [sorted(int(p) for p in x) for x in t] == [sorted(x) for x in ticks]
    s = stats.summarise(t, meta, [3, 6])
    assert s["pages"] == 3
    a3, a6 = s["by_min_age"]
    assert (a3["paged_out"], a3["refaults"]) == (2, 1)
    assert abs(a3["saved_share"] - ((5 - 3) + (9 - 3)) / 30) < 1e-9
    assert a3["median_idle_before_refault_s"] == 5
    assert (a6["paged_out"], a6["refaults"]) == (1, 0)
    assert abs(a6["saved_share"] - 3 / 30) < 1e-9
    # The model's shape: page 100 warm, page 7 visited again once in its 10-tick life; the
    # first visits of pages 7 and 8 last one tick.
    sh = s["shape"]
    assert (sh["warm"], sh["revisited"]) == (1 / 3, 1 / 3)
    assert sh["revisit_interval_share"] == 1.0
    assert sh["grown_by"] == 0.1
    assert sh["first_visit_share"] == 0.1


def test_probe_refuses_bad_arguments_with_exit_2(tmp_path):
    probe = str(SCRIPTS / "reaccess-probe.py")
    for args, said in [(["--interval", "0", "--out", str(tmp_path), "--", "true"], "--interval"),
                       (["--out", str(tmp_path)], "no program")]:
        r = subprocess.run([sys.executable, probe, *args], capture_output=True, text=True)
        assert r.returncode == 2, r
        assert said in r.stderr


def test_stats_names_a_directory_that_is_not_a_recording(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPTS / "reaccess-stats.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert str(tmp_path) in r.stderr
