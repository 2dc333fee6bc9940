//! The seed-004 experiment: DAMON_RECLAIM with no quota and with 10/50/200 ms/s time
//! quotas, without and with prioritisation, on PARSEC3/SPLASH-2X-shaped workloads
//! (`workload-models.md` §6), against the RFC's published table.
//!
//! Each variant runs the workload set one after another on one machine (each alone, as
//! the seed runs each benchmark alone) with DAMON_RECLAIM monitoring all of RAM and a
//! zram swap device; the baseline runs without DAMON. Per variant: memory saving (system
//! `memused.avg` against the baseline), the mean runtime slowdown over the workloads, and
//! kdamond's CPU use as a share of one CPU.

use crate::experiment::{Derive, Expect, Experiment, PlotSpec, Step, Variant};
use std::collections::BTreeMap;

/// One workload of the set: name, shape, RSS (MiB, full scale), cold fraction (the
/// published RSS cut), runtime (s, full scale).
const SET: [(&str, &str, u64, f64, u64); 6] = [
    ("parsec3/freqmine", "grow_then_cold", 540, 0.93, 446),
    ("splash2x/radiosity", "grow_then_cold", 1440, 0.93, 144),
    ("parsec3/blackscholes", "grow_then_cold", 574, 0.57, 140),
    ("parsec3/canneal", "hot_sparse", 823, 0.0, 207),
    ("splash2x/fft", "sweep", 9683, 0.09, 60),
    ("splash2x/ocean_ncp", "sweep", 3855, 0.0, 154),
];

/// One row of the RFC's table: (name, quota ms/s or None, prioritisation, saving %, CPU %,
/// slowdown %).
type PublishedRow = (&'static str, Option<u64>, bool, f64, f64, f64);

/// The RFC's table.
const PUBLISHED: [PublishedRow; 7] = [
    ("no-quota", None, false, 47.16, 11.62, 5.4),
    ("10ms-noprio", Some(10), false, 4.55, 1.78, 2.51),
    ("50ms-noprio", Some(50), false, 40.84, 5.7, 4.53),
    ("200ms-noprio", Some(200), false, 48.42, 10.92, 4.69),
    ("10ms-prio", Some(10), true, 0.77, 1.37, 1.84),
    ("50ms-prio", Some(50), true, 40.34, 5.16, 3.38),
    ("200ms-prio", Some(200), true, 47.99, 10.41, 5.1),
];

/// Build the experiment. Reduced scale (the default, in `--all`): every workload 8 s of
/// work with RSS scaled to 64–256 MiB, hot windows 1 s, `min_age` 0.5 s, sweeps every
/// 0.125 s. Full scale: the
/// published RSS and runtimes with `min_age` 5 s (minutes of simulated time per variant).
pub fn seed_004_damon_reclaim(full: bool) -> Experiment {
    let (runtime_s, slot_s, min_age_us, hot_window, cpa_ns) = if full {
        (0u64, 0u64, 5_000_000u64, "5s", 400u64)
    } else {
        (8, 10, 500_000, "1s", 400)
    };
    let mut workloads = String::new();
    let mut start = 0u64;
    // Sweeps: 10 passes per run at full scale (period 6–15 s against DAMOOS-tuned
    // min_ages of 33–60 s); at reduced scale the period keeps the same ratio to min_age.
    let phases = if full { 10 } else { 64 };
    for (name, shape, rss_mib, cold, rt) in SET {
        let (rss, runtime) = if full {
            (rss_mib, rt)
        } else {
            ((rss_mib / 8).clamp(64, 256), runtime_s)
        };
        workloads.push_str(&format!(
            "[[workloads]]\ntype = \"parsec\"\nname = \"{name}\"\nshape = \"{shape}\"\nrss = \"{rss}MiB\"\nphases = {phases}\n\
             cold_frac = {cold}\nruntime = \"{runtime}s\"\nhot_window = \"{hot_window}\"\n\
             cpu_per_access = \"{cpa_ns}ns\"\nstart = \"{start}s\"\n"
        ));
        start += if full { runtime * 13 / 10 + 5 } else { slot_s };
    }
    let capacity = if full { "32GiB" } else { "4GiB" };
    let zram = if full { "4GiB" } else { "1GiB" };
    let base = format!(
        "seed = 4\nduration = \"{start}s\"\n[machine]\nname = \"seed004-vm\"\n[[machine.nodes]]\nid = 0\ncpus = 36\n\
         capacity = \"{capacity}\"\nkind = \"dram\"\nread_latency = \"85ns\"\nread_bandwidth = \"50GB/s\"\n\
         write_bandwidth = \"42GB/s\"\n[sim]\nsample_interval = \"1s\"\n[kernel.zram]\ncapacity = \"{zram}\"\n{workloads}"
    );
    let mut variants = vec![Variant {
        name: "orig".into(),
        config: value(&base),
        published: BTreeMap::new(),
        labels: BTreeMap::new(),
    }];
    let mut derive = Vec::new();
    for (name, quota, prio, saving, cpu, slowdown) in PUBLISHED {
        let text = format!(
            "{base}[kernel.damon.reclaim]\nenabled = true\nmin_age_us = {min_age_us}\nquota_ms = {}\nquota_sz = 0\n\
             prioritization = {prio}\nuse_watermarks = false\n",
            quota.unwrap_or(0)
        );
        let mut published = BTreeMap::new();
        published.insert("memory_saving_pct".to_string(), saving);
        published.insert("damon_cpu_pct".to_string(), cpu);
        published.insert("slowdown_pct".to_string(), slowdown);
        let mut labels = BTreeMap::new();
        labels.insert("time_quota_ms".to_string(), quota.unwrap_or(0) as f64);
        labels.insert("prioritization".to_string(), if prio { 1.0 } else { 0.0 });
        variants.push(Variant {
            name: name.into(),
            config: value(&text),
            published,
            labels,
        });
        derive.push((
            name.to_string(),
            Derive::RelativeToBaseline {
                baseline: "orig".into(),
            },
        ));
    }
    Experiment {
        name: if full {
            "seed-004-damon-reclaim-full".into()
        } else {
            "seed-004-damon-reclaim".into()
        },
        description: format!(
            "DAMON_RECLAIM (paddr, pageout of regions idle for min_age, zram swap) without a quota and with 10/50/200 \
             ms/s time quotas, without and with prioritisation (quota weights 0 vs the module's age weight), on six \
             PARSEC3/SPLASH-2X-shaped workloads run one after another ({}). Published: the DAMON_RECLAIM RFC v3 \
             cover letter (24 workloads on a 130 GiB QEMU/KVM guest with 4 GiB zram, 5 runs).",
            if full {
                "full scale: published RSS and runtimes, min_age 5 s"
            } else {
                "reduced scale: 8 s of work each, RSS/8 clamped to 64–256 MiB, hot windows 1 s, sweeps every 0.125 s, min_age 0.5 s"
            }
        ),
        variants,
        metrics: vec![
            "memory_saving_pct".into(),
            "slowdown_pct".into(),
            "damon_cpu_pct".into(),
            "damon_monitor_cpu_pct".into(),
            "memused_avg_bytes".into(),
            "vmstat.pswpout".into(),
            "vmstat.pswpin".into(),
        ],
        derive,
        plots: vec![PlotSpec {
            file: "seed-004-damon-reclaim.png".into(),
            kind: "bar".into(),
            title: "DAMON_RECLAIM: memory saving, slowdown and kdamond CPU (%)".into(),
            x: None,
            y: vec![
                "memory_saving_pct".into(),
                "slowdown_pct".into(),
                "damon_cpu_pct".into(),
            ],
            variants: Some(PUBLISHED.iter().map(|p| p.0.to_string()).collect()),
            xlabel: None,
            ylabel: Some("%".into()),
            logx: false,
            timeline_kind: None,
        }],
        notes: vec![
            "Memory saving = (baseline − variant) / baseline of memused.avg (present − free pages over all nodes, the \
             zram pool included, averaged over the timeline); slowdown = mean over workloads of runtime / baseline \
             runtime − 1; CPU = kdamond CPU time / simulated time."
                .into(),
            "Watermarks are off (metric none): on a mostly free machine the module's 500/400/200‰ free-memory \
             watermarks would keep it inactive. min_age is scaled to the shortened runs (the seed's DAMOOS tuning used \
             0–60 s for runs of 18–600 s)."
                .into(),
            "The simulator has no CPU contention and zram refaults cost ~3.5 µs, so absolute slowdowns are lower than \
             the published ones; the directions are what the reduced scale shows."
                .into(),
        ],
        steps: steps(),
    }
}

/// The seed's directions as steps between variants, with the published change in per cent.
#[allow(
    clippy::expect_used,
    reason = "built-in experiment data (tested by every experiment run)"
)]
fn steps() -> Vec<Step> {
    let published = |name: &str, metric: &str| {
        let row = PUBLISHED.iter().find(|p| p.0 == name).expect("variant");
        match metric {
            "memory_saving_pct" => row.3,
            "damon_cpu_pct" => row.4,
            _ => row.5,
        }
    };
    let step = |from: &str, to: &str, metric: &str, expect: Expect| {
        let pct = Step::pct(published(from, metric), published(to, metric));
        Step::new(from, to, metric, pct, expect)
    };
    let mut v = Vec::new();
    for metric in ["memory_saving_pct", "damon_cpu_pct"] {
        v.push(step("10ms-noprio", "50ms-noprio", metric, Expect::Higher));
        v.push(step("50ms-noprio", "200ms-noprio", metric, Expect::Higher));
    }
    v.push(step(
        "200ms-noprio",
        "no-quota",
        "damon_cpu_pct",
        Expect::Higher,
    ));
    for q in ["10ms", "50ms", "200ms"] {
        let (np, p) = (format!("{q}-noprio"), format!("{q}-prio"));
        v.push(step(&np, &p, "slowdown_pct", Expect::NotHigher));
        v.push(step(&np, &p, "memory_saving_pct", Expect::Reported));
    }
    v
}

#[allow(
    clippy::expect_used,
    reason = "built-in experiment data (tested by every experiment run)"
)]
fn value(text: &str) -> toml::Value {
    tiermem_core::config::resolve_toml(text, "<built-in seed-004>")
        .expect("built-in experiment configs are valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::config::SimConfig;

    #[test]
    fn both_scales_build_valid_configs_with_the_published_table() {
        for full in [false, true] {
            let e = seed_004_damon_reclaim(full);
            assert_eq!(e.variants.len(), 8);
            assert_eq!(e.variants[0].name, "orig");
            for v in &e.variants {
                let c = SimConfig::from_value(&v.config, "t").unwrap();
                assert_eq!(c.workloads.len(), SET.len());
                assert_eq!(c.kernel.damon.reclaim.is_some(), v.name != "orig");
            }
            let p = &e.variants[2].published;
            assert_eq!(p["memory_saving_pct"], 4.55);
        }
    }
}
