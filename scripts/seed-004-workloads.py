#!/usr/bin/env python3
"""Write the [[base.workloads]] of the seed-004 experiments from the per-workload facts below.

The 24 PARSEC3 / SPLASH-2X programs of the DAMON_RECLAIM evaluation (RFC v3: 24 workloads,
native inputs, one after another, caches dropped before each run). Per program:
  runtime, RSS, RSS cut: DAMON v24's per-workload table (docs/workload-models.md §6: orig runtime,
    rss.avg, and the RSS cut of its `prcl` runs, the share of the RSS idle for ≥ min_age);
  shape: the heatmap shapes of docs/workload-models.md §6 where it names the program; otherwise
    grow_then_cold with cold_frac = the RSS cut, or sweep when the cut is 0;
  BANDS: the programs whose DAMON v24 heatmap shows a band of use sweeping through their
    memory (not a grow-then-cold shape), with the sweep's passes per run, the band's width
    and the share of the footprint swept, read off the heatmap by scripts/damon-heatmaps.py;
  RECORDED: the programs built from PARSEC's public source and recorded on a real kernel by
    scripts/reaccess-probe.py (docs/recordings/parsec-reaccess.md): the recorded shape
    replaces the heatmap's or the RSS cut's;
  input / output: docs/seed-004-page-cache.md §2 (native input archive sizes, mostly inferred from
    the smaller inputs' formats; its notes [a]..[q] give the derivation of each);
  input_read / output_write: when the program reads its input and writes its output (§2's notes:
    frame and image streams are read during the run; results are written at the end);
  harness: the harness's own memory that comes into use in every run and then stays idle (its
    shell and script processes, the page cache of the binaries re-read after the drop): the
    sys-used of parsec3/swaptions (13 MiB) minus its RSS (6 MiB) in DAMON v24's table, the
    program with no input and the smallest RSS, so that nearly all of the difference is the
    harness (docs/seed-004-damon-tests-daily.md).

Usage: scripts/seed-004-workloads.py full|reduced  (prints TOML to paste over the workloads);
       scripts/seed-004-workloads.py full|reduced --write  (replaces them in the experiment file).
"""
import sys

# name, runtime s, RSS MiB, RSS cut %, shape, input MiB, input_read, output MiB, output_write, note
W = [
    ("parsec3/blackscholes", 140, 574, 57, None, 607, "start", 200, "end", "[a][b]"),
    ("parsec3/bodytrack", 124, 32, 79, None, 614, "during", 0, "end", "[c][d]: 261 frames read in turn"),
    ("parsec3/canneal", 207, 823, 0, "hot_sparse", 100, "start", 0, "end", "[e] weak"),
    ("parsec3/dedup", 18, 1153, 52, None, 627, "during", 0, "end", "[f]; output size unknown"),
    ("parsec3/facesim", 344, 305, 40, None, 0, "start", 0, "end", "[g]: input size unknown"),
    ("parsec3/fluidanimate", 340, 519, 22, None, 17, "start", 17, "end", "[h]"),
    ("parsec3/freqmine", 446, 540, 93, "grow_then_cold", 209, "start", 0, "end", "[i]"),
    ("parsec3/raytrace", 184, 859, 67, "grow_then_cold", 396, "start", 0, "end", "[j]"),
    ("parsec3/streamcluster", 600, 108, 1, "hot_sparse", 0, "start", 0, "end", "[k]: generated input"),
    ("parsec3/swaptions", 220, 6, 36, None, 0, "start", 0, "end", "no input"),
    ("parsec3/vips", 88, 31, 13, None, 1236, "during", 979, "during", "[l]"),
    ("parsec3/x264", 111, 80, 0, "sweep", 1519, "during", 0, "end", "[m]: 512 frames read in turn"),
    ("splash2x/barnes", 131, 1192, 44, None, 0, "start", 0, "end", "[n]: bodies generated in memory"),
    ("splash2x/fft", 60, 9683, 9, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/lu_cb", 133, 499, 34, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/lu_ncb", 150, 500, 21, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/ocean_cp", 84, 3319, 0, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/ocean_ncp", 154, 3855, 0, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/radiosity", 144, 1440, 93, "grow_then_cold", 0, "start", 0, "end", "no input"),
    ("splash2x/radix", 50, 2374, 0, "sweep", 0, "start", 0, "end", "no input"),
    ("splash2x/raytrace", 133, 23, 76, "grow_then_cold", 4, "start", 0, "end", "[o]: at least car.geo"),
    ("splash2x/volrend", 122, 43, 62, "grow_then_cold", 26, "start", 0, "end", "[p]; TIFF output size unknown"),
    ("splash2x/water_nsquared", 371, 29, 55, "sweep", 0, "start", 0, "end", "[q]: ~0.1 MiB"),
    ("splash2x/water_spatial", 133, 649, 61, "sweep", 0, "start", 0, "end", "[q]: ~0.1 MiB"),
]

# program: (passes per run, band width, swept share, shrink, what the heatmap shows), from
# `scripts/damon-heatmaps.py GIT_DIR <program>` on damonitor/damonitor.github.io's
# test/result/visual/v24/<program>/rec/heatmap.<region>.png (DAMON v24's published recordings)
# of the program's data region, taken to stand for its footprint: passes = runtime / the median
# cycle, width = the median use / the median cycle, swept share = the rows used in at least
# half of the cycles; shrink: the swept part shrinks as LU's trailing matrix (the used rows lie
# above a boundary rising as 1 - (1 - t)^(1/3) of the run, t the share of the run).
BANDS = {
    # Region 1 (511 MiB): the trailing matrix used all over (lit 0.76 of the plot), above the
    # rising boundary (0.25 of the rows at t = 0.53, 0.43 at t = 0.8): used at random.
    "splash2x/lu_ncb": (10, 1.0, 1.0, True, "heatmap.1: the used rows above LU's rising boundary"),
    # Region 1 (511 MiB): the current block column as a thin rising line and light passes over
    # the rows above it, each row in use for 0.3 s of every 10.4 s.
    "splash2x/lu_cb": (13, 0.03, 1.0, True, "heatmap.1: use 0.3 s a 10.4 s cycle above LU's rising boundary"),
    # Region 1 (35 MiB): a band of use moving up through the rows, 11 diagonals in 372 s.
    "splash2x/water_nsquared": (11, 0.56, 0.77, False, "heatmap.1: use 18.5 s a 33.0 s cycle over 77 % of it"),
    # Region 0 (675 MiB, the heap): a thin diagonal through the heap, a few quick passes between.
    "splash2x/water_spatial": (8, 0.06, 0.90, False, "heatmap.0: use 1.0 s a 16.0 s cycle over 90 % of it"),
}


# program: (keys replacing the shape, cold_frac and phases above, what the recording shows),
# from scripts/reaccess-probe.py recordings (1 s ticks) of the programs built from PARSEC 3.0's
# source (cirosantilli/parsec-benchmark) with their native inputs, on Linux 6.18 with zram
# swap (docs/recordings/parsec-reaccess.md; scripts/reaccess-stats.py). Times are given as
# shares of the recorded run, so that they scale with the runtime above.
RECORDED = {
    # 368 065 pages (1438 MiB), 95 % first touched by 0.020 of the 99 ticks, each staying in
    # use for 0.014 of the run; 0.27 % touched in at least half of the ticks; 31.7 % visited
    # again after an idle tick, each about every 0.205 of the run; the rest never again.
    "splash2x/radiosity": (dict(shape="grow_then_cold", cold_frac=0.997, grow=0.02,
                                hot_window=0.014, revisit_frac=0.317, revisit_interval=0.205),
                           "all touched in 2 % of the run; 32 % revisited every 0.205 of it"),
    # 154 291 pages (603 MiB): the option array parsed from the input (58 %) read once more
    # when copied and never again, the arrays the 100 pricing runs go over (44.3 %) touched
    # in every tick.
    "parsec3/blackscholes": (dict(shape="sweep", phases=100, swept_frac=0.443),
                             "44 % swept by the 100 pricing runs, the parsed options idle"),
    # 768 pages (3 MiB of anonymous memory; the rest of the 6 MiB RSS is its mapped files):
    # first touched over the whole run (95 % by 0.956 of it, as the 128 swaptions allocate),
    # each in use for 0.025 of the run; 0.7 % warm; 2.6 % visited again, every 0.438 of it.
    "parsec3/swaptions": (dict(shape="grow_then_cold", cold_frac=0.993, grow=0.956,
                               hot_window=0.025, revisit_frac=0.026, revisit_interval=0.438),
                          "grows all run, each page in use for 0.025 of it"),
}


# program: how well its data compresses in zram (lzo-rle), `compression_ratio`: the pages it
# paged out over what they took in zram, zero-filled pages taking nothing, over the whole run
# (`scripts/reaccess-stats.py` on `scripts/reaccess-probe.py` recordings on Linux 6.18 with
# zram, 2026-11-29, docs/recordings/parsec-reaccess.md "Compression"). The other programs keep
# the zram device's 3.0.
COMPRESSION = {
    "splash2x/radiosity": 4.81,  # 1 s ticks; 7.05 in the first quarter of the run, 3.97 in the last
    "parsec3/blackscholes": 3.77,  # the parsed options and the pricing arrays
    "parsec3/swaptions": 1.77,  # 15 % of its pages stored uncompressed
    "splash2x/lu_cb": 1.00,  # a matrix of drand48() doubles: every page stored uncompressed
    "splash2x/lu_ncb": 1.00,  # the same matrix
    "splash2x/radix": 1.67,  # 2^28 random keys below 2^31 and their rank arrays
    "splash2x/fft": 1.00,  # random complex doubles; recorded with -m26 (a quarter of native)
    # the grids of doubles (5 % of the pages zero-filled); recorded with -n2050 (a quarter of
    # native's grid memory); ocean_ncp computes the same fields (taken to compress the same)
    "splash2x/ocean_cp": 1.06,
    "splash2x/ocean_ncp": 1.06,
}


# parsec3/swaptions in DAMON v24's table: sys used 13 MiB, RSS 6 MiB.
HARNESS_MIB = 13 - 6


def mib(x):
    return f'"{int(x)}MiB"' if x == int(x) else f'"{round(x * 1024)}KiB"'


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "full"
    reduced = mode == "reduced"
    t = 0.0
    out = []
    for name, runtime, rss, cut, shape, inp, inp_read, outp, out_write, note in W:
        if shape is None:
            shape = "grow_then_cold" if cut > 0 else "sweep"
        band = None
        if name in BANDS:
            passes, band, swept, shrink, seen = BANDS[name]
            note += f"; sweep band from DAMON v24's {seen}"
        if name in COMPRESSION:
            note += f"; its data compresses {COMPRESSION[name]}:1 in zram (measured)"
        rec = RECORDED.get(name, (None, None))[0]
        if rec is not None:
            shape = rec["shape"]
            note += f"; recorded: {RECORDED[name][1]}"
        if reduced:
            # Sizes and times / 8: RSS at least 8 MiB and at most 1 GiB, at least 4 s of
            # work, hot windows 625 ms (min_age is 625 ms in the variants).
            rss = min(max(rss / 8, 8), 1024)
            inp, outp = inp / 8, outp / 8
            harness = HARNESS_MIB / 8
            runtime, window, phases = max(round(runtime / 8, 1), 4), "625ms", 10
        else:
            window, phases = "5s", 10
            harness = HARNESS_MIB
        if rec is not None and "hot_window" in rec:
            window = f"{round(rec['hot_window'] * runtime, 2)}s"
        if band is not None:
            phases = passes
        if rec is not None and "phases" in rec:
            phases = rec["phases"]
        rss = round(rss, 3)
        inp, outp = round(inp, 3), round(outp, 3)
        untar = inp * 256 * 5e-6  # archive read + extracted write, ~5 us per page
        out.append(f"# {name}: runtime, RSS, cut from DAMON v24's table; input/output {note}")
        out.append("[[base.workloads]]")
        if band is not None:
            out.append(f"band = {band}")
        if shape == "grow_then_cold":
            out.append(f"cold_frac = {rec['cold_frac'] if rec else cut / 100}")
        if name in COMPRESSION:
            out.append(f"compression_ratio = {COMPRESSION[name]}")
        if rec is not None and "grow" in rec:
            out.append(f"grow = {rec['grow']}")
        out.append('cpu_per_access = "400ns"')
        out.append(f"harness = {mib(harness)}")
        out.append(f'hot_window = "{window}"')
        if inp:
            out.append(f"input = {mib(inp)}")
            if inp_read != "start":
                out.append(f'input_read = "{inp_read}"')
        out.append(f'name = "{name}"')
        if outp:
            out.append(f"output = {mib(outp)}")
            if out_write != "end":
                out.append(f'output_write = "{out_write}"')
        out.append(f"phases = {phases}")
        out.append(f"rss = {mib(rss)}")
        if rec is not None and "revisit_frac" in rec:
            out.append(f"revisit_frac = {rec['revisit_frac']}")
            out.append(f'revisit_interval = "{round(rec["revisit_interval"] * runtime, 2)}s"')
        out.append(f'runtime = "{runtime}s"')
        out.append(f'shape = "{shape}"')
        out.append(f'start = "{round(t)}s"')
        if band is not None and shrink:
            out.append("shrink = true")
        if band is not None and swept < 1:
            out.append(f"swept_frac = {swept}")
        if rec is not None and "swept_frac" in rec:
            out.append(f"swept_frac = {rec['swept_frac']}")
        out.append('type = "parsec"')
        out.append("")
        t += untar + runtime * 1.25 + (2 if reduced else 5)
    text = "\n".join(out)
    if "--write" in sys.argv:
        write(reduced, text)
    else:
        print(text)
    print(f"# duration = \"{round(t)}s\"", file=sys.stderr)


def write(reduced, text):
    """Replace the [[base.workloads]] tables (from the first workload's comment to the first
    [[variants]]) of the experiment file."""
    import pathlib
    name = "seed-004-damon-reclaim" + ("" if reduced else "-full")
    path = pathlib.Path(__file__).resolve().parents[1] / "experiments" / f"{name}.toml"
    old = path.read_text()
    start = old.index("# " + W[0][0] + ":")
    end = old.index("[[variants]]")
    path.write_text(old[:start] + text + "\n" + old[end:])


main()
