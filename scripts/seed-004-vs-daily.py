#!/usr/bin/env python3
"""Each seed-004 program in a simulated run against damon-tests' daily runs of the same scheme.

    scripts/seed-004-vs-daily.py RUN_DIR [VARIANT] [--seeds 4,5,6,7]

RUN_DIR: the output of `tiermem experiment seed-004-damon-reclaim-full --out RUN_DIR` (its
variants/<variant>/seed-<n>/summary.json, with the baseline `orig`). VARIANT: default
50ms-prio (damon-tests' pdarc_v4_2_2). The daily figures are the per-workload table of
docs/seed-004-damon-tests-daily.md (medians and quartiles over 693 published runs, from
scripts/damon-tests-reports.py). Prints the markdown table of that document's section "The
simulator against the daily runs" (means over the seeds; ✓ within the daily quartiles) and
how many programs are within the quartiles.
"""

import argparse
import json
import pathlib
import re
import statistics as st
import sys

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "seed-004-damon-tests-daily.md"
NUM = r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]"
ROW = re.compile(r"\| ((?:parsec3|splash2x)/\w+) \| (\d+) \| " + r" \| ".join([NUM] * 5)
                 + r" \| (\d+) \| ")
METRICS = (("saving", "%.1f"), ("slowdown", "%.2f"), ("cpu", "%.1f"))


def fail(msg):
    print(f"seed-004-vs-daily: error: {msg}", file=sys.stderr)
    sys.exit(2)


def daily_table():
    """program → {metric: (median, q1, q3)}, 'faults': median major faults."""
    out = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            g = m.groups()
            f = [float(x) for x in g[2:17]]
            out[g[0]] = {"saving": tuple(f[3:6]), "slowdown": tuple(f[6:9]),
                         "cpu": tuple(f[9:12]), "faults": float(f[12])}
    if not out:
        fail(f"{DOC}: no per-workload table found")
    return out


def load(run, variant, seed):
    path = run / "variants" / variant / f"seed-{seed}" / "summary.json"
    try:
        return {w["name"]: w for w in json.loads(path.read_text())["workloads"]}
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path}: {e}")


def simulated(run, variant, seeds):
    """program → metric → list over seeds."""
    sims = {}
    for s in seeds:
        base, var = load(run, "orig", s), load(run, variant, s)
        for name, w in var.items():
            o = base[name]
            d = sims.setdefault(name, {"saving": [], "slowdown": [], "cpu": [], "faults": []})
            d["saving"].append((o["memused_avg_bytes"] - w["memused_avg_bytes"])
                               / o["memused_avg_bytes"] * 100)
            d["slowdown"].append((w["runtime_seconds"] / o["runtime_seconds"] - 1) * 100)
            d["cpu"].append(w.get("kdamond_cpu_pct", 0.0))
            d["faults"].append(w["major_faults"])
    return sims


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("variant", nargs="?", default="50ms-prio")
    ap.add_argument("--seeds", default="4,5,6,7")
    a = ap.parse_args()
    try:
        seeds = [int(x) for x in a.seeds.split(",")]
    except ValueError:
        fail(f"--seeds: {a.seeds!r} is not a list of numbers")
    daily, sims = daily_table(), simulated(pathlib.Path(a.run), a.variant, seeds)
    within = {k: 0 for k, _ in METRICS}
    print("| workload | saving: sim | daily median [IQR] | slowdown: sim | daily | kdamond CPU: sim"
          " | daily | major faults: sim | daily |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, dd in daily.items():
        if name not in sims:
            fail(f"{a.run}: no {name} in variant {a.variant}")
        cells = []
        for k, fmt in METRICS:
            x = st.mean(sims[name][k])
            med, lo, hi = dd[k]
            ok = lo <= x <= hi
            within[k] += ok
            cells += [fmt % x + (" ✓" if ok else ""), f"{med:.1f} [{lo:.1f}, {hi:.1f}]"]
        cells += ["%d" % round(st.mean(sims[name]["faults"])), "%d" % dd["faults"]]
        print(f"| {name} | " + " | ".join(cells) + " |")
    n = len(daily)
    print(f"\nWithin the daily quartiles: saving {within['saving']} of {n}, slowdown "
          f"{within['slowdown']}, kdamond CPU {within['cpu']}.")


if __name__ == "__main__":
    main()
