#!/usr/bin/env python3
"""Per-workload DAMON_RECLAIM-scheme figures from damon-tests' published daily reports.

damon-tests (awslabs/damon-tests, perf/full_once_config.sh) runs the 24 PARSEC3/SPLASH-2X
programs of seed 004 every day on mm-unstable kernels and publishes each run's report.txt
under test/result/perf/after_merge/<kernel>/<date>/report/ of damonitor/damonitor.github.io.
Its variant `pdarc_v4_2_2` (perf/schemes/pdarc_v4_2_2.damos) is a paddr DAMOS pageout scheme:
regions of at least 4 KiB with no access for 5 s or more, a 50 ms/s time quota, quota weights
sz 0 / nr_accesses 3 / age 7, watermarks on free memory 1000/999/0 permil; damo starts it once
the program's pid appears and stops it when the program exits. That is the DAMON_RECLAIM
RFC's "50ms/s, prioritization" row with min_age 5 s, measured by the same harness and
statistics (memused.avg from MemFree, runtime, kdamond CPU).

Usage: damon-tests-reports.py GIT_DIR [--variant pdarc_v4_2_2] [--markdown]
GIT_DIR is a checkout or bare clone of damonitor/damonitor.github.io (read with `git show`).
Prints, per workload, the median and the quartiles over the reports of `orig`'s memused.avg
(kB in the reports, MiB here), the variant's memused.avg saving, runtime overhead and kdamond CPU against the same report's `orig` column
and its major faults (refaults from zram and re-reads of dropped page cache), then the mean
over workloads per report (the figure the seed's table gives), summarised over the reports.
Beside them, from the same reports: `orig`'s own major faults (loading the program after
the drop) and the runtime overhead of `prec`, DAMON's paddr monitoring alone (no scheme,
`damo record` of the physical address space): what monitoring costs the program.
"""
import argparse
import statistics as st
import subprocess
import sys

SECTIONS = ("runtime", "kdamond_cpu_util", "memused.avg", "pgmajfaults")


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True, text=True).stdout


def parse_report(text):
    """{section: {workload: {variant: value}}} from a damon-tests report.txt's Summary."""
    out = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].split()
        if head and head[0] in SECTIONS and head[0] not in out:
            # Header: name, then variants, each but `orig` followed by "(overhead)".
            variants = [w for w in head[1:] if w != "(overhead)"]
            table = {}
            i += 1
            while i < len(lines) and lines[i].strip():
                cells = lines[i].split()
                name, vals = cells[0], [c for c in cells[1:] if not c.startswith("(")]
                if len(vals) == len(variants) and name not in ("total", "average"):
                    try:
                        table[name] = {v: float(x) for v, x in zip(variants, vals)}
                    except ValueError:
                        pass
                i += 1
            out[head[0]] = table
        i += 1
    return out


def quartiles(xs):
    if len(xs) < 2:
        return (xs[0], xs[0], xs[0]) if xs else (float("nan"),) * 3
    q = st.quantiles(xs, n=4)
    return q[0], st.median(xs), q[2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gitdir")
    ap.add_argument("--variant", default="pdarc_v4_2_2")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    files = [f for f in git(a.gitdir, "ls-tree", "-r", "--name-only", "HEAD",
                            "test/result/perf/after_merge").splitlines()
             if f.endswith("/report.txt")]
    per = {}  # workload -> metric -> [values over reports]
    means = {"saving": [], "slowdown": [], "cpu": [], "monitoring": []}
    kernels = set()
    used = 0
    for f in files:
        rep = parse_report(git(a.gitdir, "show", f"HEAD:{f}"))
        mem, rt, cpu = rep.get("memused.avg", {}), rep.get("runtime", {}), rep.get("kdamond_cpu_util", {})
        majf = rep.get("pgmajfaults", {})
        rows = [w for w in mem if a.variant in mem[w] and mem[w].get("orig", 0) > 0
                and w in rt and rt[w].get("orig", 0) > 0 and w in cpu]
        if len(rows) < 20:
            continue
        used += 1
        kernels.add(f.split("/")[4])
        s_r, d_r, c_r, p_r = [], [], [], []
        for w in rows:
            s = 100 * (mem[w]["orig"] - mem[w][a.variant]) / mem[w]["orig"]
            d = 100 * (rt[w][a.variant] / rt[w]["orig"] - 1)
            c = cpu[w][a.variant]
            for k, v in (("saving", s), ("slowdown", d)):
                per.setdefault(w, {}).setdefault(k, []).append(v)
            per[w].setdefault("orig_mib", []).append(mem[w]["orig"] / 1024)
            if a.variant in majf.get(w, {}):
                per[w].setdefault("majflt", []).append(majf[w][a.variant])
            if "orig" in majf.get(w, {}):
                per[w].setdefault("orig_majflt", []).append(majf[w]["orig"])
            if "prec" in rt[w]:
                p = 100 * (rt[w]["prec"] / rt[w]["orig"] - 1)
                per[w].setdefault("monitoring", []).append(p)
                p_r.append(p)
            # A report whose kdamond CPU column is 0 did not find the kdamond: not a figure.
            if c > 0:
                per[w].setdefault("cpu", []).append(c)
                c_r.append(c)
            s_r.append(s); d_r.append(d)
        means["saving"].append(st.mean(s_r))
        means["slowdown"].append(st.mean(d_r))
        if c_r:
            means["cpu"].append(st.mean(c_r))
        if len(p_r) >= 20:
            means["monitoring"].append(st.mean(p_r))
    if not used:
        sys.exit(f"no report.txt with a {a.variant} column under test/result/perf/after_merge")
    def release(k):  # "6.1.0-rc4-mm-unstable-damon+" -> (6, 1, 0, 4); a release after its rcs
        base, _, rest = k.partition("-")
        rc = rest[2:].split("-")[0] if rest.startswith("rc") else ""
        return tuple(int(x) for x in base.split(".") if x.isdigit()) + (int(rc) if rc.isdigit() else 99, k)
    kv = sorted(kernels, key=release)
    print(f"# {a.variant} against orig: {used} daily reports, kernels {kv[0]} .. {kv[-1]}")
    print("# per workload: median [quartiles] over the reports; saving = memused.avg cut, %;")
    print("# kdamond CPU over the reports that measured it (> 0)")
    hdr = ("workload", "reports", "orig memused MiB", "saving %", "slowdown %", "kdamond CPU %",
           "major faults", "orig major faults", "prec slowdown %")
    if a.markdown:
        print("| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr))
    for w in sorted(per):
        m = per[w]
        q1, med, q3 = quartiles(m["orig_mib"])
        cells = [w, str(len(m["saving"])), f"{med:.0f} [{q1:.0f}, {q3:.0f}]"]
        for k in ("saving", "slowdown", "cpu"):
            q1, med, q3 = quartiles(m.get(k, []))
            cells.append(f"{med:.1f} [{q1:.1f}, {q3:.1f}]")
        q1, med, q3 = quartiles(m.get("majflt", []))
        cells.append(f"{med:.0f} [{q1:.0f}, {q3:.0f}]")
        cells.append(f"{quartiles(m.get('orig_majflt', []))[1]:.0f}")
        q1, med, q3 = quartiles(m.get("monitoring", []))
        cells.append(f"{med:.2f} [{q1:.2f}, {q3:.2f}]")
        print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells))
    for k in ("saving", "slowdown", "cpu", "monitoring"):
        if not means[k]:
            continue
        q1, med, q3 = quartiles(means[k])
        print(f"# mean over workloads, {k}: mean {st.mean(means[k]):.2f}, median {med:.2f}, "
              f"quartiles [{q1:.2f}, {q3:.2f}], min {min(means[k]):.2f}, max {max(means[k]):.2f}")


if __name__ == "__main__":
    main()
