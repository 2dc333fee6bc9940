"""scripts/reaccess-stats.py on a recording whose answer is known; reaccess-probe.py's refusals."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import numpy as np

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"


def load_script(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_recording(d, ticks, interval=1.0):
    """ticks: per tick, the touched page numbers, written as the probe writes them."""
    probe = load_script("reaccess-probe")
    runs = [probe.runs_of(np.array(sorted(pages), np.uint64)) for pages in ticks]
    offsets = np.cumsum([0] + [len(st) for st, _ in runs]).astype(np.uint64)
    np.savez_compressed(d / "touched.npz", starts=np.concatenate([st for st, _ in runs]),
                        lens=np.concatenate([ln for _, ln in runs]), offsets=offsets,
                        t=np.arange(len(ticks)) * interval)
    (d / "meta.json").write_text(json.dumps({
        "command": ["synthetic"], "interval_s": interval, "runtime_s": len(ticks) * interval,
        "page_size": 4096}))
    return load_script("reaccess-stats")


def test_idle_stretches_give_pageouts_refaults_and_savings(tmp_path):
    # Page 100 touched in every one of 10 ticks, page 7 at ticks 0 and 6 (idle 5 ticks,
    # then back), page 8 at tick 0 only (idle 9 ticks to the end).
    ticks = [[7, 8, 100]] + [[100]] * 5 + [[7, 100]] + [[100]] * 3
    stats = write_recording(tmp_path, ticks)
    t, meta = stats.load(tmp_path)
    assert [sorted(int(p) for p in x) for x in t] == [sorted(x) for x in ticks]
    s = stats.summarise(t, meta, [3, 6], tmp_path)
    assert s["compression"] is None  # no ticks.tsv with zram columns
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


def test_compression_counts_zero_filled_pages_as_free(tmp_path):
    # Three ticks: zram holds 8 then 16 then 16 MiB compressed 4:1; the swap counters say
    # that of the 12 000 pages paged out over the run 3 000 were zero-filled.
    stats = write_recording(tmp_path, [[1], [1], [1]])
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["swap_counters_at_start"] = {"pswpout": 1000, "swpout_zero": 50}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    mib = 2 ** 20
    rows = [(8 * mib, 2 * mib, 4000, 50), (16 * mib, 4 * mib, 8000, 1050),
            (16 * mib, 4 * mib, 10000, 3050)]
    lines = ["t_s\tpresent\tswapped\tzero\ttouched\tmajor_faults\tprobe_s\tzram_orig_bytes"
             "\tzram_compr_bytes\tzram_used_bytes\tzram_same_pages\tzram_huge_pages"
             "\tpswpout\tswpout_zero"]
    for i, (orig, compr, out, zero) in enumerate(rows):
        lines.append(f"{i + 1}\t1\t1\t0\t1\t0\t0.1\t{orig}\t{compr}\t{compr + compr // 32}"
                     f"\t0\t{orig // 4096 // 8}\t{out}\t{zero}")
    (tmp_path / "ticks.tsv").write_text("\n".join(lines) + "\n")
    c = stats.compression(tmp_path, meta)
    assert c["nonzero_ratio"] == 4.0
    assert c["zero_share"] == 3000 / 12000
    assert abs(c["ratio"] - 4.0 / 0.75) < 1e-12
    assert abs(c["allocator_overhead"] - 33 / 32) < 1e-12
    assert c["huge_share"] == 1 / 8


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
    # A recording without a touched page (the program ended before the first tick).
    write_recording(tmp_path, [[]])
    r = subprocess.run([sys.executable, str(SCRIPTS / "reaccess-stats.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no page was touched" in r.stderr, r.stderr
