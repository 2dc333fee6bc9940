#!/usr/bin/env python3
"""Read the access pattern of a PARSEC3/SPLASH-2X program off DAMON's published heatmaps.

DAMON's v24 evaluation published, for each of the 24 programs of seed 004, heatmaps of its
virtual address space recorded by DAMON (`damo record`, 5 ms sampling, 100 ms aggregation):
`test/result/visual/v24/<suite>/<program>/rec/heatmap.<region>.png` in
`damonitor/damonitor.github.io`, with the recording's time span and the regions' sizes in
`report.html` beside them. Each image plots time (x) against address (y), black where DAMON
saw no access in an aggregation interval.

For each region this prints what the workload models take from the images
(docs/workload-models.md §6):
  - lit: the share of the (time × address) plot where DAMON saw accesses;
  - idle>MIN_AGE: the share of row-time that lies more than MIN_AGE into an unlit stretch,
    the most a pageout of regions idle for MIN_AGE could take (DAMON's view; vaddr sampling
    misses light accesses, so this is an upper bound);
  - rows in use: the share of rows (addresses) lit at least 10 % of the time, and their mean
    lit share;
  - use and cycle: in each row, lit stretches less than MIN_AGE / 2 apart are joined into
    one use (DAMON's sampling leaves short dark gaps inside a busy stretch); the median
    use's length and the median time from one use's start to the next one's (for a moving
    band: its width in time and the sweep's period; their ratio is the band's width as a
    share of the swept area);
  - swept: the share of rows used in at least half of the cycles (at least recording /
    cycle / 2 uses: the memory a sweep goes over), and the median start of those rows' first
    use;
  - the idle stretches' distribution by length, weighted by time.

Needs Pillow and numpy. Usage:
  scripts/damon-heatmaps.py GIT_DIR splash2x/water_nsquared [...] [--min-age 5]
where GIT_DIR is a clone of damonitor/damonitor.github.io (tiermem's `fetch` gives one), or
  scripts/damon-heatmaps.py --sim DIR/heatmap.json [...]
for the same reading of a simulated recording: `tiermem sim` of the program's workload under a
vaddr context with `record = true` (5 ms / 100 ms, as the published recordings), then
`tiermem report heatmap RUN --time-bins 400 --addr-bins 350 --out DIR` (about the images'
resolution); a bin is lit when DAMON saw any access in it.
"""
import argparse
import io
import re
import subprocess

import numpy as np
from PIL import Image

BASE = "test/result/visual/v24"
# A pixel is "lit" when DAMON saw accesses: any colour but the palette's black.
LIT_SUM = 60
WHITE_SUM = 700


def git_show(git_dir, path, text=False):
    r = subprocess.run(["git", "-C", git_dir, "show", f"HEAD:{path}"], capture_output=True,
                       text=text)
    if r.returncode != 0:
        raise SystemExit(f"{git_dir}: {path}: {r.stderr.strip() if text else r.stderr.decode().strip()}")
    return r.stdout


def regions(git_dir, program):
    """(recording seconds, [region sizes in bytes]) from the heatmaps' report.html."""
    html = git_show(git_dir, f"{BASE}/{program}/rec/report.html", text=True)
    span = re.search(r"time: \d+-\d+ \((\d+)\)", html)
    sizes = [int(s) for s in re.findall(r"region \d+: \S+ \((\d+)\)", html)]
    if not span or not sizes:
        raise SystemExit(f"{program}: report.html has no time span or regions")
    return int(span.group(1)) / 1e9, sizes


def longest_run(mask):
    best, i = (0, 0), 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            if j - i > best[1] - best[0]:
                best = (i, j)
            i = j
        else:
            i += 1
    return best


def data_area(png):
    """The plotted data as a lit mask, rows top (high address) to bottom, columns in time:
    inside the plot's frame, the rows and columns that are not the white margin above and
    right of the data."""
    a = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int).sum(axis=2)
    h = a.shape[0]
    nonwhite = a < WHITE_SUM
    x0, x1 = longest_run(nonwhite[h // 8: h * 7 // 8].mean(axis=0) > 0.5)
    ys = np.where(nonwhite[:, x0:x1].mean(axis=1) > 0.9)[0]
    frame = a[ys.min() + 1: ys.max(), x0 + 1: x1 - 1]
    white = frame >= WHITE_SUM
    r = np.where(white.mean(axis=1) < 0.5)[0]
    c = np.where(white.mean(axis=0) < 0.5)[0]
    return frame[r.min(): r.max() + 1, c.min(): c.max() + 1] > LIT_SUM


def runs(row):
    """(start, length, lit) of the runs of a boolean row."""
    out, start = [], 0
    for i in range(1, len(row) + 1):
        if i == len(row) or row[i] != row[start]:
            out.append((start, i - start, bool(row[start])))
            start = i
    return out


def uses(rr, join):
    """(start, length) of the lit runs of a row, joining those less than `join` pixels apart."""
    out = []
    for s, n, on in rr:
        if not on:
            continue
        if out and s - (out[-1][0] + out[-1][1]) < join:
            out[-1] = (out[-1][0], s + n - out[-1][0])
        else:
            out.append((s, n))
    return out


def describe(lit, seconds, min_age):
    h, w = lit.shape
    px = seconds / w
    idle, cycles, lengths, gaps, per_row = 0.0, [], [], [], []
    for y in range(h):
        rr = runs(lit[y])
        for _, n, on in rr:
            if not on:
                gaps.append(n * px)
                idle += max(0.0, n * px - min_age)
        u = uses(rr, min_age / 2 / px)
        per_row.append((len(u), u[0][0] * px if u else 0.0))
        lengths += [n * px for _, n in u[:-1]]
        cycles += [(b[0] - a[0]) * px for a, b in zip(u, u[1:])]
    cycle = float(np.median(cycles)) if cycles else float("nan")
    firsts = [f for n, f in per_row if cycles and n >= seconds / cycle / 2]
    share = lit.mean(axis=1)
    used = share >= 0.1
    g = np.array(gaps) if gaps else np.zeros(1)
    edges = [0, 5, 10, 20, 30, 60, 1e9]
    hist = [g[(g >= lo) & (g < hi)].sum() / max(g.sum(), 1e-9) for lo, hi in zip(edges, edges[1:])]
    return {
        "px_s": px,
        "lit": lit.mean(),
        "idle": idle / (h * seconds),
        "rows_used": used.mean(),
        "band": share[used].mean() if used.any() else 0.0,
        "use": float(np.median(lengths)) if lengths else float("nan"),
        "cycle": cycle,
        "swept": len(firsts) / h,
        "first": float(np.median(firsts)) if firsts else float("nan"),
        "gaps": hist,
    }


def simulated(path):
    """(seconds, lit mask with rows top = high address) of a `tiermem report heatmap` matrix."""
    import json
    with open(path) as f:
        d = json.load(f)
    counts = np.array(d["counts"], dtype=float)  # time bins x address bins
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[d.get("time_unit", "ns")]
    seconds = (d["last_time"] - d["first_time"]) * scale
    return seconds, (counts > 0).T[::-1]


def print_row(name, region, mib, d):
    gaps = "/".join(f"{x:.2f}" for x in d["gaps"])
    print(f"| {name} | {region} | {mib} | {d['px_s']:.2f} | {d['lit']:.3f} | {d['idle']:.2f} "
          f"| {d['rows_used']:.2f} | {d['band']:.2f} | {d['use']:.1f} | {d['cycle']:.1f} "
          f"| {d['swept']:.2f} | {d['first']:.1f} | {gaps} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("git_dir", nargs="?")
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--min-age", type=float, default=5.0)
    ap.add_argument("--sim", nargs="+", metavar="HEATMAP_JSON",
                    help="read simulated heatmaps (tiermem report heatmap --out) instead")
    args = ap.parse_args()
    if not args.sim and not (args.git_dir and args.programs):
        ap.error("give GIT_DIR and programs, or --sim HEATMAP_JSON...")
    print("| program | region | MiB | s/px | lit | idle>%gs | rows in use | their lit share | use s "
          "| cycle s | swept | first use s | idle stretches <5/5-10/10-20/20-30/30-60/>60 s |" % args.min_age)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.sim or []:
        seconds, lit = simulated(path)
        print_row(path, "sim", "-", describe(lit, seconds, args.min_age))
    for prog in args.programs if not args.sim else []:
        seconds, sizes = regions(args.git_dir, prog)
        for i, size in enumerate(sizes):
            if size < 8 << 20:
                continue
            lit = data_area(git_show(args.git_dir, f"{BASE}/{prog}/rec/heatmap.{i}.png"))
            print_row(prog, i, size >> 20, describe(lit, seconds, args.min_age))


main()
