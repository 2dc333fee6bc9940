# %% [markdown]
# # Seed 001: promotion rate limit × hot threshold
#
# A notebook-style script (open it in Jupyter/VS Code as a notebook, or run it with
# `python examples/seed001_promotion_sweep.py` from the repository root). It sweeps the
# NUMA-balancing promotion rate limit and the hot threshold on the seed-001 machine
# (preset `dram-pmem-2s`: 2 sockets of DRAM + Optane PMEM) running pmbench `normal_ih`
# 80:20, and plots the pmbench score against the promote rate, as seed 001 reports its
# results (score in accesses/s, promote rate in MB/s).
#
# Scale: `experiments/seed-001-base.toml` runs the workload at 1/32 of the published
# memory sizes with the NUMA-balancing periods divided by 32 too, so the hot
# threshold of 31 ms here stands for the kernel's default of 1 s. Each point simulates
# 10 s (about 20-30 s of CPU); the 16 points take several minutes on two cores. The same
# grid runs from the command line with
# `tiermem sweep experiments/seed-001-sweep.toml --out out/seed-001-sweep`.
#
# Note for scripts: where Python starts worker processes with `spawn` or `forkserver`
# (macOS, Windows, Python 3.14+), the workers re-import the main script, so the cells that
# run sweeps are guarded by `if __name__ == "__main__":` (true in notebooks too).

# %%
from pathlib import Path

import matplotlib.pyplot as plt

import tiermem
from tiermem.plots import plot_sweep

try:
    REPO = Path(__file__).resolve().parents[1]
except NameError:  # in a notebook: run from the repository root or examples/
    REPO = Path.cwd() if (Path.cwd() / "experiments").is_dir() else Path.cwd().parent
OUT = REPO / "out" / "seed001-example"

# %% [markdown]
# ## The base config, as Python objects
#
# `Config.from_toml` reads the TOML file into objects (`Machine`, `Kernel`,
# `NumaBalancing`, `Pmbench`) that can be edited and are validated by the simulator's own
# parser (`check()`), so a mistake gives the command line's error message.

# %%
base = tiermem.Config.from_toml(REPO / "experiments" / "seed-001-base.toml")
base.duration = "10s"
base.kernel.numa.promotion = "rate-limit"  # hot-page selection + the rate limit (patch 2/3)
print(base.machine, base.kernel, base.workloads[0], sep="\n")

# The base's machine has 512 MiB of DRAM and 16 GiB of PMEM per socket (the 1/32 scale).
# `set` paths applied to every point go in `fixed`, e.g. a quarter more DRAM on socket 0:
# {"machine.nodes[0].capacity": "640MiB"}. The sweep file runs the base as it is.
fixed: dict = {}
effective = tiermem.check_config(base, fixed)
print({n["id"]: n["capacity"] for n in effective["machine"]["nodes"]})

# %% [markdown]
# ## The sweep
#
# 4 rate limits (MiB/s per target node, the unit of
# `/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps`) × 4 hot thresholds. The points
# run in parallel on local processes; pass `engine="dask", address="tcp://scheduler:8786"`
# to run them on a Dask cluster instead (the DataFrame is the same).

# %%
grid = {
    "kernel.numa.promote_rate_limit_mbps": [16, 64, 256, 1024],
    "kernel.numa.hot_threshold_ms": [8, 31, 125, 500],
}
metrics = [
    "workloads[0].score_accesses_per_s",
    "promote_mbps",
    "demote_mbps",
    "vmstat.pgpromote_candidate",
    "mean_latency_ns",
]
if __name__ == "__main__":
    df = tiermem.sweep(base, grid, fixed=fixed, metrics=metrics, out_dir=OUT)
    print(df.to_string())

# %% [markdown]
# ## Score against promote rate
#
# One line per hot threshold; along each line the rate limit grows. Seed 001 (full scale,
# 2-socket Xeon + Optane) reports 146.9 M accesses/s at 725.6 MB/s with MRU promotion,
# 165.7 M at 544.0 MB/s with hot-page selection and 162.8 M at 165.2 MB/s with the rate
# limit. The simulated scores are those of the 1/32-scale model, so compare the shape
# (how score and promotion traffic trade off), not absolute values.

# %%
if __name__ == "__main__":
    fig, (ax_score, ax_rate) = plt.subplots(1, 2, figsize=(13, 4.5))
    plot_sweep(
        df,
        x="promote_mbps",
        y="workloads[0].score_accesses_per_s",
        group="kernel.numa.hot_threshold_ms",
        ax=ax_score,
        title="pmbench score against promote rate",
        xlabel="promote rate (MB/s)",
        ylabel="score (accesses/s)",
    )
    plot_sweep(
        df,
        x="kernel.numa.promote_rate_limit_mbps",
        y="promote_mbps",
        group="kernel.numa.hot_threshold_ms",
        ax=ax_rate,
        logx=True,
        title="promote rate against the rate limit",
        xlabel="promote_rate_limit_MBps",
        ylabel="promote rate (MB/s)",
    )
    # The limit caps promotion candidates once DRAM is tight; promotions through the
    # free-space bypass (while DRAM still has room) are not limited, so a run's average
    # can exceed a small limit.
    limits = sorted(df["kernel.numa.promote_rate_limit_mbps"].unique())
    ax_rate.plot(limits, limits, color="gray", linestyle=":", label="rate limit")
    ax_rate.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(OUT / "score-vs-promote-rate.png", dpi=120)
    print(f"figure: {OUT / 'score-vs-promote-rate.png'}")

# %% [markdown]
# ## The best point
#
# The highest score, and how much promotion traffic it cost.

# %%
if __name__ == "__main__":
    best = df.loc[df["workloads[0].score_accesses_per_s"].idxmax()]
    print(best.to_string())
