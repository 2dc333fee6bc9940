#!/usr/bin/env python3
"""Idle stretches and re-access of a program's pages, from a reaccess-probe.py recording.

    scripts/reaccess-stats.py DIR [--min-age 3,5,8] [--json OUT]

For every page the probe saw, the ticks in which it was touched split its life into use
and idle stretches. An idle stretch that ends in a touch is a re-access after that much
idleness; one that runs to the end of the program never comes back. For each min_age A
the script gives what a page-level pageout of every page idle for A would do (the ideal
that DAMON_RECLAIM's region sampling approximates):

  paged out   stretches longer than A (each pages the page out once)
  refaults    those of them that end in a touch (a major fault each)
  saved       page-time spent paged out, as a share of the page-time from first touch
              to the end of the run
  refaults/page out, and when the re-accesses come (median idle stretch before them)

and, over the run, the program's footprint and the share of it touched per tick, and the
shape the simulator's PARSEC models take (scripts/seed-004-workloads.py RECORDED):

  grown by    the share of the run by which 95 % of the pages were first touched
  warm        the share of the pages touched in at least half of the ticks
  first visit the mean length of the other pages' first visit (consecutive ticks touched
              from the first touch), as a share of the run: the hot window after creation
  revisited   the share of them visited again after an idle tick, and the mean time between
              their visits (their page-time from the first touch over their visits after
              it) as a share of the run

and, when the recording has zram's columns (the probe on a zram swap), how well the
program's data compresses: the pages paged out over the run over what they take in zram,
zero-filled pages taking nothing (6.12+ keeps them out of zram, older kernels store a flag)
and the others their compressed size (zram's orig over compressed bytes, summed over the
ticks); the latter by quarter of the run, the share of them zram stored uncompressed
("huge"), and the memory zram's allocator took over the compressed size (about 3 % more at
hundreds of MiB; for a few MiB its fixed per-class pages dominate). The first figure is the
simulator's `compression_ratio` for the program.
"""

import argparse
import json
import os
import sys

import numpy as np


def fail(msg):
    print(f"reaccess-stats: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(d):
    try:
        z = np.load(f"{d}/touched.npz")
        meta = json.load(open(f"{d}/meta.json"))
    except (OSError, ValueError) as e:
        fail(f"{d}: not a reaccess-probe recording ({e})")
    starts, lens, offs = z["starts"], z["lens"].astype(np.int64), z["offsets"].astype(np.int64)
    ticks = []
    for k in range(len(offs) - 1):
        s, l = starts[offs[k]:offs[k + 1]], lens[offs[k]:offs[k + 1]]
        if s.size == 0:
            ticks.append(np.empty(0, np.uint64))
            continue
        rep = np.repeat(s, l)
        within = np.arange(rep.size) - np.repeat(np.cumsum(l) - l, l)
        ticks.append(rep + within.astype(np.uint64))
    if not any(t.size for t in ticks):
        fail(f"{d}: no page was touched in any tick (the program ended before the first?)")
    return ticks, meta


def page_indices(ticks):
    """The number of distinct pages and each tick's pages as indices 0..n into them."""
    allp = np.unique(np.concatenate(ticks))
    return allp.size, [np.searchsorted(allp, pages) for pages in ticks]


def stretches(npages, idx_ticks):
    """Idle stretches ending in a touch (lengths in ticks), trailing ones, first touches."""
    last = np.full(npages, -1, np.int64)
    first = np.full(npages, -1, np.int64)
    gaps = []
    for k, idx in enumerate(idx_ticks):
        seen = last[idx] >= 0
        g = k - last[idx[seen]] - 1
        gaps.append(g[g > 0])
        first[idx[~seen]] = k
        last[idx] = k
    trailing = len(idx_ticks) - 1 - last
    return np.concatenate(gaps), trailing, first


def shape(npages, idx_ticks, first):
    """Growth, warm share, first visit, revisited share and interval (shares of the run).

    A visit is a stretch of consecutive ticks in which a page is touched: revisits count
    the returns after at least one idle tick, as a program comes back to a structure, not
    the ticks of one stay."""
    n = len(idx_ticks)
    touches = np.zeros(npages, np.int64)
    visits = np.zeros(npages, np.int64)
    first_visit = np.zeros(npages, np.int64)
    last = np.full(npages, -2, np.int64)
    for k, i in enumerate(idx_ticks):
        touches[i] += 1
        visits[i] += last[i] != k - 1
        first_visit[i] += visits[i] == 1
        last[i] = k
    warm = touches >= n / 2
    rev = (visits >= 2) & ~warm
    life = n - first
    interval = float(life[rev].sum() / (visits[rev] - 1).sum()) / n if rev.any() else None
    return {"grown_by": float(np.sort(first)[int(0.95 * (first.size - 1))] + 1) / n,
            "warm": float(warm.mean()),
            "first_visit_share": float(first_visit[~warm].mean()) / n if (~warm).any() else None,
            "revisited": float(rev.mean()), "revisit_interval_share": interval}


def compression(d, meta):
    """The zram columns of ticks.tsv summarised, or None when the recording has none.

    zram's orig/compressed bytes give how well the non-zero pages compress (stale copies of
    pages swapped back in but still in the swap cache included: the same data); the swap
    counters' share of zero-filled pages (kept out of zram on 6.12+, stored as a flag before)
    take nothing. Both over the whole run, so weighted by how much was paged out when."""
    path = f"{d}/ticks.tsv"
    if not os.path.exists(path):
        return None
    try:
        t = np.genfromtxt(path, delimiter="\t", names=True)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    t = np.atleast_1d(t)
    names = t.dtype.names or ()
    if "zram_compr_bytes" not in names:
        return None
    t = t[t["zram_compr_bytes"] > 0]
    if t.size == 0:
        return None
    orig, compr = t["zram_orig_bytes"], t["zram_compr_bytes"]
    quarters = [float(np.sum(orig[q]) / np.sum(compr[q]))
                for q in np.array_split(np.arange(t.size), 4) if q.size]
    nonzero_ratio = float(np.sum(orig) / np.sum(compr))
    zero_share = 0.0
    start = meta.get("swap_counters_at_start")
    if "swpout_zero" in names and start:
        written = t["pswpout"][-1] - start["pswpout"]
        zero = t["swpout_zero"][-1] - start["swpout_zero"]
        zero_share = float(zero / (written + zero)) if written + zero > 0 else 0.0
    return {"ratio": nonzero_ratio / (1.0 - zero_share) if zero_share < 1 else None,
            "nonzero_ratio": nonzero_ratio, "nonzero_ratio_by_quarter": quarters,
            "zero_share": zero_share,
            "allocator_overhead": float(np.sum(t["zram_used_bytes"]) / np.sum(compr)),
            "huge_share": float(np.sum(t["zram_huge_pages"]) * meta["page_size"]
                                / np.sum(orig))}


def summarise(ticks, meta, ages, d):
    dt = meta["interval_s"]
    npages, idx_ticks = page_indices(ticks)
    gaps, trailing, first = stretches(npages, idx_ticks)
    n = len(ticks)
    life = float(np.sum(n - first))  # page-ticks from first touch to the end
    touched = np.array([p.size for p in ticks])
    foot = np.array([np.count_nonzero(first <= k) for k in range(n)])
    out = {"program": " ".join(meta["command"]), "interval_s": dt, "ticks": n,
           "runtime_s": meta["runtime_s"], "pages": int(first.size),
           "footprint_mib": first.size * meta["page_size"] / 2**20,
           "touched_share_median": float(np.median(touched[foot > 0] / foot[foot > 0])),
           "shape": shape(npages, idx_ticks, first),
           "compression": compression(d, meta), "by_min_age": []}
    for a in ages:
        at = max(1, int(round(a / dt)))
        back = gaps[gaps > at]
        gone = trailing[trailing > at]
        saved = float(np.sum(back - at) + np.sum(gone - at)) / life if life else 0.0
        outs = back.size + gone.size
        out["by_min_age"].append({
            "min_age_s": a, "paged_out": int(outs), "refaults": int(back.size),
            "refaults_per_pageout": back.size / outs if outs else 0.0,
            "refaults_per_page": back.size / first.size if first.size else 0.0,
            "saved_share": saved,
            "median_idle_before_refault_s": float(np.median(back) * dt) if back.size else None,
        })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--min-age", default="3,5,8,15", help="seconds, comma-separated")
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args()
    try:
        ages = [float(x) for x in args.min_age.split(",")]
    except ValueError:
        fail(f"--min-age: {args.min_age!r} is not a list of seconds")
    res = []
    for d in args.dirs:
        ticks, meta = load(d)
        s = summarise(ticks, meta, ages, d)
        res.append(s)
        print(f"{s['program']}: {s['ticks']} ticks of {s['interval_s']} s, "
              f"{s['footprint_mib']:.0f} MiB touched, median {s['touched_share_median']:.3f} "
              f"of the footprint touched per tick")
        sh = s["shape"]
        iv = sh["revisit_interval_share"]
        fv = sh["first_visit_share"]
        print(f"  grown by {sh['grown_by']:.3f} of the run; warm {sh['warm']:.4f}; first visit "
              + ("-" if fv is None else f"{fv:.3f}") + f" of the run; revisited "
              f"{sh['revisited']:.3f}" + ("" if iv is None else f", every {iv:.3f} of the run"))
        c = s["compression"]
        if c is not None and c["ratio"] is not None:
            print(f"  compression in zram {c['ratio']:.2f}: zero-filled {c['zero_share']:.3f} of "
                  f"the pages paged out, the others {c['nonzero_ratio']:.2f} (by quarter of the "
                  "run " + " ".join(f"{r:.2f}" for r in c["nonzero_ratio_by_quarter"])
                  + f"), {c['huge_share']:.3f} of them stored uncompressed; zram's memory "
                  f"{c['allocator_overhead']:.3f} x the compressed size")
        print("  min_age s | paged out | refaults | per page out | per page | saved | idle before refault s")
        for r in s["by_min_age"]:
            med = r["median_idle_before_refault_s"]
            print(f"  {r['min_age_s']:9g} | {r['paged_out']:9d} | {r['refaults']:8d} | "
                  f"{r['refaults_per_pageout']:12.2f} | {r['refaults_per_page']:8.2f} | "
                  f"{r['saved_share']:5.2f} | {'-' if med is None else f'{med:.0f}'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
