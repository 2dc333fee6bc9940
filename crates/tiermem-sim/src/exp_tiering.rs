//! The built-in experiments of seeds 000 and 001: NUMA-balancing memory tiering on the
//! 2-socket DRAM + Optane machine, driven by lkp's pmbench 80:20 `normal_ih` job.
//!
//! Both run the machine at a reduced scale `S`: memory (process maps, DRAM and PMEM
//! capacity, `scan_size_mb`) and every NUMA-balancing time knob (`scan_delay_ms`,
//! `scan_period_{min,max}_ms`, `hot_threshold_ms`, and through `model_scale` the one-second
//! rate-limit window and the 1 GiB free-space floor) are divided by `S`, and so is the run
//! length. Per-page access rates then grow by `S` while every period shrinks by `S`, so the
//! scanner, the hot-page test, the threshold adjustment and the rate limit see the same
//! numbers of pages per period as at full size; rates in MB/s are unchanged. The engine's
//! tick (the timing window, and how soon kswapd answers a wake-up) is scaled too. What does
//! not scale is the 1 ms granularity of the kernel's millisecond clocks.

use crate::experiment::{Expect, Experiment, PlotSpec, Step, Variant};
use std::collections::BTreeMap;

/// Shape of the lkp job and machine at full size, and the scale it runs at.
#[derive(Clone, Copy, Debug)]
struct Job {
    /// Divisor of memory and time.
    scale: u32,
    /// pmbench processes (`cpu_node_bind: even`: round-robin over the two sockets).
    processes: u32,
    /// Map (= set) size per process at full size, MiB.
    mapsize_mib: u64,
    /// DRAM per socket at full size, GiB.
    dram_gib: u64,
    /// Run length at full size, s (lkp: 900).
    runtime_s: u64,
}

/// Job A of lkp's `pmbench-dcpmm.yaml` (8 processes × 13 824 MiB, 900 s), 1/32 scale.
const SEED_001_JOB: Job = Job {
    scale: 32,
    processes: 8,
    mapsize_mib: 13824,
    dram_gib: 16,
    runtime_s: 900,
};

impl Job {
    fn mib(self, full_mib: u64) -> String {
        format!("{}MiB", full_mib / self.scale as u64)
    }

    fn ms(self, full_ms: u64) -> u64 {
        (full_ms / self.scale as u64).max(1)
    }

    /// The scaled config, with the kernel section given by `kernel` (TOML lines under
    /// `[kernel]`) and `numa` (extra lines under `[kernel.numa]`).
    #[allow(
        clippy::expect_used,
        reason = "built-in experiment data (tested by every experiment run)"
    )]
    fn config(self, numa_balancing: u32, numa: &str, extra_workloads: &str) -> toml::Value {
        let pmem_gib = 512 / self.scale as u64;
        let text = format!(
            "duration = \"{dur}ms\"\nseed = 1\n\
             [machine]\npreset = \"dram-pmem-2s\"\n\
             [sim]\nsample_interval = \"{sample}ms\"\ntick = \"{tick}ns\"\n\
             [kernel]\nnuma_balancing = {numa_balancing}\ndemotion_enabled = true\n\
             [kernel.numa]\nscan_delay_ms = {delay}\nscan_period_min_ms = {pmin}\n\
             scan_period_max_ms = {pmax}\nscan_size_mb = {size}\nhot_threshold_ms = {hot}\n\
             model_scale = {scale}\n{numa}\n\
             [[workloads]]\ntype = \"pmbench\"\nname = \"pmbench\"\nprocesses = {procs}\n\
             mapsize = \"{map}\"\npattern = \"normal_ih\"\nread_ratio = 80\ninitialize = true\n\
             cold = true\ncpu_nodes = [0, 1]\n{extra_workloads}",
            dur = self.runtime_s * 1000 / self.scale as u64,
            sample = self.ms(10_000),
            tick = 1_000_000 / self.scale as u64,
            delay = self.ms(1000),
            pmin = self.ms(1000),
            pmax = self.ms(60_000),
            size = 256 / self.scale,
            hot = self.ms(1000),
            scale = self.scale,
            procs = self.processes,
            map = self.mib(self.mapsize_mib),
        );
        let mut v = crate::experiment::cfg_value(&text);
        // Node capacities: DRAM per socket and PMEM scaled (a [[machine.nodes]] block would
        // replace the preset's nodes whole, so set them by path).
        for (n, cap) in [
            (
                0,
                format!("{}MiB", self.dram_gib * 1024 / self.scale as u64),
            ),
            (
                1,
                format!("{}MiB", self.dram_gib * 1024 / self.scale as u64),
            ),
            (2, format!("{pmem_gib}GiB")),
            (3, format!("{pmem_gib}GiB")),
        ] {
            tiermem_core::config::set_path(
                &mut v,
                &format!("machine.nodes[{n}].capacity"),
                toml::Value::String(cap),
            )
            .expect("preset has four nodes");
        }
        v
    }

    fn scale_note(self) -> String {
        format!(
            "Scale 1/{s}: {p} processes × {m} (full size {fm} MiB), DRAM {d} MiB per socket (full size {fd} GiB), \
             scan size, scan delay/periods, hot threshold, rate-limit window and run length ({r} s full size) divided \
             by {s}; MB/s rates are those of the full-size run.",
            s = self.scale,
            p = self.processes,
            m = self.mib(self.mapsize_mib),
            fm = self.mapsize_mib,
            d = self.dram_gib * 1024 / self.scale as u64,
            fd = self.dram_gib,
            r = self.runtime_s,
        )
    }
}

fn variant(name: &str, config: toml::Value, published: &[(&str, f64)]) -> Variant {
    Variant {
        name: name.into(),
        config,
        published: published.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        labels: BTreeMap::new(),
    }
}

fn timeline_plot(file: &str, title: &str, kind: &str) -> PlotSpec {
    PlotSpec {
        file: file.into(),
        kind: "timeline".into(),
        title: title.into(),
        x: None,
        y: Vec::new(),
        variants: None,
        xlabel: None,
        ylabel: None,
        logx: false,
        timeline_kind: Some(kind.into()),
    }
}

const SCORE: &str = "workloads[0].score_accesses_per_s";
const PROMOTE: &str = "promote_mbps";

/// Seed 001: MRU base → hot-page selection → rate limit → automatic threshold.
pub fn seed_001() -> Experiment {
    let job = SEED_001_JOB;
    // The published rate-limit runs do not state the limit; 1/4 of the hot-selection
    // promote rate per node is in the range the cover letter's 165 MB/s total suggests.
    let rate_limit = 64;
    let gens: [(&str, &str, f64, f64); 4] = [
        ("base-mru", "mru", 146_887_704.1, 725.6),
        ("hot-selection", "hot-threshold", 165_695_601.2, 544.0),
        ("rate-limit", "rate-limit", 162_814_569.8, 165.2),
        ("auto-threshold", "auto-threshold", 170_495_294.0, 136.9),
    ];
    let variants = gens
        .iter()
        .map(|(name, promotion, score, rate)| {
            let numa = format!(
                "promotion = \"{promotion}\"\npromote_rate_limit_mbps = {}",
                if promotion.starts_with("mru") || promotion.starts_with("hot") {
                    65536
                } else {
                    rate_limit
                }
            );
            variant(
                name,
                job.config(2, &numa, ""),
                &[(SCORE, *score), (PROMOTE, *rate)],
            )
        })
        .collect();
    Experiment {
        name: "seed-001-hot-page-selection".into(),
        description: "Seed 001 step by step on the 2-socket DRAM + Optane machine: the 5.18 MRU promotion (base), \
                      hot-page selection by hint-fault latency, the promotion rate limit, and automatic threshold \
                      adjustment; pmbench normal_ih 80:20 with -i (lkp pmbench-dcpmm job), NUMA balancing in \
                      memory-tiering mode."
            .into(),
        variants,
        metrics: vec![
            SCORE.into(),
            PROMOTE.into(),
            "demote_mbps".into(),
            "vmstat.pgpromote_candidate".into(),
            "vmstat.numa_hint_faults".into(),
            "mean_latency_ns".into(),
        ],
        derive: Vec::new(),
        plots: vec![
            timeline_plot("seed-001-promotion.png", "Promotion rate over time (MB/s)", "promotion"),
            timeline_plot("seed-001-threshold.png", "Hot threshold over time (ms, scaled clock)", "threshold"),
        ],
        notes: vec![
            job.scale_note(),
            "Published (cover letter of the hot-page-selection series v3 on 5.19-rc1): score 146.9M / 165.7M / 162.8M / \
             170.5M accesses/s, promote rate 725.6 / 544.0 / 165.2 / 136.9 MB/s."
                .into(),
            format!(
                "The published rate-limit runs do not state the limit: {rate_limit} MB/s per node here. The DRAM left to the \
                 job is not stated either ({} GiB per socket here, both sockets tiered).",
                job.dram_gib
            ),
            "Absolute scores differ from the published ones: with 8 single-threaded processes of one outstanding miss \
             each, the published 147M accesses/s would need ~54 ns per access, below the machine's DRAM latency, so \
             the published runs were probably lkp's 48-process job B, which the simulator can run (set processes = 48, \
             mapsize 1728 MiB) at 6× the cost. Job A is used because its long scan sweeps (~4 s per page at full size) \
             are the regime the cover letter describes, where MRU promotes rarely-used pages."
                .into(),
        ],
        steps: vec![
            Step::new("base-mru", "hot-selection", SCORE, Some(12.8), Expect::Higher),
            Step::new("base-mru", "hot-selection", PROMOTE, Some(-25.0), Expect::Lower),
            Step::new("hot-selection", "rate-limit", PROMOTE, Some(-69.6), Expect::AtMostFraction(0.5)),
            Step::new("hot-selection", "rate-limit", SCORE, Some(-1.7), Expect::Reported),
            // Reported, not judged: since the zones (and their proportions under
            // model_scale) the model shows this step flat (-0.1 %, under any run-to-run
            // spread), where the paper has +4.7 %; its magnitude is issue 20's.
            Step::new("rate-limit", "auto-threshold", SCORE, Some(4.7), Expect::Reported),
            Step::new("rate-limit", "auto-threshold", PROMOTE, Some(-17.1), Expect::NotHigher),
        ],
    }
}

/// Seed 000: NUMA balancing off (0), NORMAL (1) and MEMORY_TIERING (2, the 5.18 MRU
/// promotion with kswapd keeping promo-watermark headroom, choice b), and the rejected
/// choice a (promote regardless of the target's watermarks). Halfway through, a second
/// program starts on each socket and allocates, which is where choice a costs: promotion
/// has eaten the DRAM headroom, so more of the new program's pages fall back to PMEM.
pub fn seed_000() -> Experiment {
    let job = SEED_001_JOB;
    let allocator = format!(
        "[[workloads]]\ntype = \"pmbench\"\nname = \"allocator\"\nprocesses = 2\nmapsize = \"{map}\"\n\
         pattern = \"uniform\"\nread_ratio = 50\ninitialize = true\ncold = true\ncpu_nodes = [0, 1]\n\
         start = \"{start}ms\"\nduration = \"{dur}ms\"\n",
        map = job.mib(4096),
        start = job.runtime_s * 1000 / 2 / job.scale as u64,
        dur = job.ms(60_000),
    );
    let mru = "promotion = \"mru\"";
    let variants = vec![
        variant("off-0", job.config(0, mru, &allocator), &[]),
        variant("normal-1", job.config(1, mru, &allocator), &[]),
        variant("tiering-2", job.config(2, mru, &allocator), &[]),
        variant(
            "tiering-2-choice-a",
            job.config(
                2,
                "promotion = \"mru\"\npromote_ignore_watermarks = true",
                &allocator,
            ),
            &[],
        ),
    ];
    Experiment {
        name: "seed-000-tiering".into(),
        description: "Seed 000 on the 2-socket DRAM + Optane machine with a working set three times the DRAM: \
                      pmbench normal_ih 80:20 with NUMA balancing off (0), NORMAL only (1) and memory tiering (2, \
                      the 5.18 promotion with kswapd balancing to the promo watermark: choice b), and choice a \
                      (promotion ignores the target's watermarks). A second program allocates on each socket halfway \
                      through."
            .into(),
        variants,
        metrics: vec![
            SCORE.into(),
            PROMOTE.into(),
            "demote_mbps".into(),
            "vmstat.numa_hint_faults".into(),
            "vmstat.numa_miss".into(),
            "vmstat.allocstall_movable".into(),
            "workloads[1].score_accesses_per_s".into(),
            "mean_latency_ns".into(),
        ],
        derive: Vec::new(),
        plots: vec![
            timeline_plot("seed-000-placement.png", "Pages per node over time", "placement"),
            timeline_plot("seed-000-promotion.png", "Promotion rate over time (MB/s)", "promotion"),
        ],
        notes: vec![
            job.scale_note(),
            "Published (commit message of the tiering patch, 5.18): the pmbench score improves by up to 95.9 % with \
             memory tiering."
                .into(),
            "NORMAL mode (1) cannot promote: a page on a CPU-less node is only moved to the faulting CPU's node if that \
             node is above its high watermark, and nothing makes room (kswapd is only woken for promotion in tiering \
             mode)."
                .into(),
            "Choice a keeps promoting into a full DRAM node down to its min watermark, so more of the allocator's new \
             pages miss DRAM (numa_miss: the fast path's low-watermark check fails on the local DRAM node and the \
             zonelist falls back to the PMEM node, zone_reclaim_mode being 0). The second program's score moves by \
             less than 1 % either way (it changed sign when the simulator gained zones): the seed's \"may create high \
             memory pressure\" does not materialize here, because direct reclaim (allocstall_movable) would need the \
             PMEM node to be short of memory too, which this machine never is; the step is reported, not expected."
                .into(),
        ],
        steps: vec![
            Step::new("off-0", "tiering-2", SCORE, Some(95.9), Expect::Higher),
            Step::new("off-0", "normal-1", SCORE, None, Expect::Reported),
            Step::new("tiering-2", "tiering-2-choice-a", "vmstat.numa_miss", None, Expect::Higher),
            Step::new("tiering-2", "tiering-2-choice-a", "workloads[1].score_accesses_per_s", None, Expect::Reported),
        ],
    }
}
