//! The scenario's `[kernel]` knobs as writes to the running kernel's files.
//!
//! A simulator config states every knob (defaults filled in), so the live run writes every
//! knob it can: the kernel then runs with exactly the values the simulator assumed, not
//! with whatever the host had (Debian boots with `numa_balancing = 1`, for one). Knobs are
//! split in two: the ones written before the workload maps its memory, and the ones that
//! start mechanisms (`numa_balancing`, `ksm/run`), written at time 0, after population,
//! as the simulator's regions are populated before its clock starts. Every original is
//! recorded in the state file first and restored at the end.

use crate::host::{
    DEBUGFS_NB, DEMOTION_ENABLED, KSM_DIR, NUMA_BALANCING, PROMOTE_RATE_LIMIT,
    WATERMARK_SCALE_FACTOR, WI_DIR,
};
use crate::Error;

/// `transparent_hugepage/enabled` (written as a word; reads back as `always madvise [never]`).
pub const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
/// The multi-generational LRU's switch (`0x0007` when fully on).
pub const LRU_GEN_ENABLED: &str = "/sys/kernel/mm/lru_gen/enabled";
use tiermem_core::config::{KernelConfig, PromotionPolicy};
use tiermem_core::ConfigError;

/// One file and the value to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knob {
    pub path: String,
    pub value: String,
    /// Skip when the file is absent (optional kernel features) instead of failing.
    pub optional: bool,
}

fn knob(path: impl Into<String>, value: impl ToString) -> Knob {
    Knob {
        path: path.into(),
        value: value.to_string(),
        optional: false,
    }
}

/// The writes of a scenario: (before population, at time 0), and the kdamonds started at
/// time 0 (filled in by [`super::damon::plan`]; [`plan`] leaves them empty).
pub struct KnobPlan {
    pub before: Vec<Knob>,
    pub at_start: Vec<Knob>,
    pub kdamonds: Vec<crate::damon::ConfiguredKdamond>,
}

/// Translate `[kernel]` into knob writes. Settings that are simulator assumptions, not
/// kernel knobs (`numa.promotion` other than the current kernel's, `numa.model_scale`,
/// swap and zram devices) are refused or left to the host's setup, with a message naming
/// the key. DAMON contexts are kdamonds, not knobs: [`super::damon`].
/// `host_total_pages`: the host's memory (sum of the nodes' `MemTotal`), from which the
/// simulator's default `min_free_kbytes` follows.
pub fn plan(k: &KernelConfig, nr_nodes: usize, host_total_pages: u64) -> Result<KnobPlan, Error> {
    refuse_simulator_only(k)?;
    let n = &k.numa;
    let mut before = vec![
        // NUMA balancing stays off while the workload populates its regions.
        knob(NUMA_BALANCING, 0),
        knob(PROMOTE_RATE_LIMIT, n.promote_rate_limit_mbps),
        knob(format!("{DEBUGFS_NB}/scan_delay_ms"), n.scan_delay_ms),
        knob(
            format!("{DEBUGFS_NB}/scan_period_min_ms"),
            n.scan_period_min_ms,
        ),
        knob(
            format!("{DEBUGFS_NB}/scan_period_max_ms"),
            n.scan_period_max_ms,
        ),
        knob(format!("{DEBUGFS_NB}/scan_size_mb"), n.scan_size_mb),
        knob(format!("{DEBUGFS_NB}/hot_threshold_ms"), n.hot_threshold_ms),
        knob(
            DEMOTION_ENABLED,
            if k.demotion_enabled { "true" } else { "false" },
        ),
        knob(WATERMARK_SCALE_FACTOR, k.watermark_scale_factor),
        knob(THP_ENABLED, k.transparent_hugepage.sysfs()),
        Knob {
            path: LRU_GEN_ENABLED.into(),
            value: if k.lru_gen { "y" } else { "n" }.into(),
            // Kernels without CONFIG_LRU_GEN have only the classic lists.
            optional: !k.lru_gen,
        },
    ];
    // Written after transparent_hugepage: changing THP's mode recomputes min_free_kbytes
    // (set_recommended_min_free_kbytes replaces smaller values), so the scenario's value
    // goes last; it is restored first, then THP's restore raises it again as at boot.
    let mfk = k
        .min_free_kbytes
        .unwrap_or_else(|| tiermem_core::watermarks::default_min_free_kbytes(host_total_pages));
    let thp = before
        .iter()
        .position(|k| k.path == THP_ENABLED)
        .map_or(before.len(), |i| i + 1);
    before.insert(thp, knob("/proc/sys/vm/min_free_kbytes", mfk));
    if let Some(w) = &k.weighted_interleave.weights {
        for (node, v) in w.iter().enumerate().take(nr_nodes) {
            before.push(knob(format!("{WI_DIR}/node{node}"), v));
        }
    }
    if let Some(a) = k.weighted_interleave.auto {
        before.push(knob(crate::host::WI_AUTO, if a { "true" } else { "false" }));
    }
    let mut at_start = vec![knob(NUMA_BALANCING, k.numa_balancing)];
    if let Some(r) = k.damon.reclaim.as_ref().filter(|r| r.enabled) {
        // Parameters first (the module reads them when it is enabled), `enabled` at time 0.
        before.extend(damon_reclaim_params(r));
        at_start.push(knob(format!("{DAMON_RECLAIM_DIR}/enabled"), "Y"));
    }
    if let Some(ksm) = &k.ksm {
        // ksmd stops while the knobs change (merge_across_nodes needs no KSM pages).
        before.push(knob(format!("{KSM_DIR}/run"), 2));
        for (f, v) in ksm.tunables() {
            before.push(knob(format!("{KSM_DIR}/{f}"), v));
        }
        let mut smart = knob(format!("{KSM_DIR}/smart_scan"), ksm.smart_scan);
        smart.optional = true;
        before.push(smart);
        at_start.push(knob(format!("{KSM_DIR}/run"), ksm.run));
    }
    Ok(KnobPlan {
        before,
        at_start,
        kdamonds: Vec::new(),
    })
}

/// The `damon_reclaim` module's parameter directory.
pub const DAMON_RECLAIM_DIR: &str = "/sys/module/damon_reclaim/parameters";

/// `[kernel.damon.reclaim]` as the module's parameters (`mm/damon/reclaim.c`; times in
/// microseconds and sizes in bytes, as the module takes them).
fn damon_reclaim_params(r: &tiermem_core::damon::ReclaimParams) -> Vec<Knob> {
    let yn = |b: bool| if b { "Y" } else { "N" };
    let mut v: Vec<Knob> = [
        ("min_age", r.min_age_us),
        ("quota_ms", r.quota_ms),
        ("quota_sz", r.quota_sz),
        ("quota_reset_interval_ms", r.quota_reset_interval_ms),
        ("wmarks_interval", r.wmarks_interval_us),
        ("wmarks_high", r.wmarks_high),
        ("wmarks_mid", r.wmarks_mid),
        ("wmarks_low", r.wmarks_low),
        ("sample_interval", r.sample_interval_us),
        ("aggr_interval", r.aggr_interval_us),
        ("min_nr_regions", u64::from(r.min_nr_regions)),
        ("max_nr_regions", u64::from(r.max_nr_regions)),
        ("monitor_region_start", r.monitor_region_start),
        ("monitor_region_end", r.monitor_region_end),
    ]
    .iter()
    .map(|(p, v)| knob(format!("{DAMON_RECLAIM_DIR}/{p}"), v))
    .collect();
    v.push(knob(
        format!("{DAMON_RECLAIM_DIR}/skip_anon"),
        yn(r.skip_anon),
    ));
    // Added in 6.9 (goals): written when the kernel has them, required when set.
    for (p, val) in [
        ("quota_mem_pressure_us", r.quota_mem_pressure_us),
        ("quota_autotune_feedback", r.quota_autotune_feedback),
    ] {
        let mut k = knob(format!("{DAMON_RECLAIM_DIR}/{p}"), val);
        k.optional = val == 0;
        v.push(k);
    }
    v
}

/// Swap devices are the host's setup, not knobs: check that the ones the scenario states
/// are there (`/proc/swaps`), the same kind and size within 1 MiB, so that the live kernel
/// reclaims into what the simulator assumed.
pub fn check_swap_devices(k: &KernelConfig, swaps: &str) -> Result<(), Error> {
    // `Filename Type Size Used Priority`, sizes in KiB.
    let devices: Vec<(bool, u64)> = swaps
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let kib: u64 = f.get(2)?.parse().ok()?;
            Some((f.first()?.starts_with("/dev/zram"), kib * 1024))
        })
        .collect();
    let bad = |key: &str, why: String| Err(Error::Config(ConfigError::invalid(key, why)));
    for (key, zram, want) in [
        ("kernel.zram", true, k.zram.as_ref().map(|z| z.capacity.0)),
        ("kernel.swap", false, k.swap.as_ref().map(|s| s.capacity.0)),
    ] {
        let have: Vec<u64> = devices
            .iter()
            .filter(|d| d.0 == zram)
            .map(|d| d.1)
            .collect();
        match want {
            Some(w) if !have.iter().any(|&h| h.abs_diff(w) <= 1 << 20) => {
                return bad(
                    key,
                    format!(
                        "needs an active {} swap device of {} MiB (/proc/swaps has {:?} MiB); set it up before the run (e.g. zramctl, mkswap, swapon)",
                        if zram { "zram" } else { "non-zram" },
                        w >> 20,
                        have.iter().map(|h| h >> 20).collect::<Vec<_>>()
                    ),
                );
            }
            None if !have.is_empty() => {
                return bad(
                    key,
                    format!(
                        "the scenario has no {key} but the host has an active {} swap device: swapoff it, or describe it in the scenario",
                        if zram { "zram" } else { "non-zram" }
                    ),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

fn refuse_simulator_only(k: &KernelConfig) -> Result<(), Error> {
    let bad = |key: &str, why: &str| Err(Error::Config(ConfigError::invalid(key, why)));
    if k.numa.promotion != PromotionPolicy::AutoThreshold {
        return bad(
            "kernel.numa.promotion",
            "replays an older kernel's promotion logic in the simulator; a live kernel runs its own",
        );
    }
    if k.numa.model_scale != 1 {
        return bad(
            "kernel.numa.model_scale",
            "scales the simulator's clocks; it is not a kernel knob (set it to 1 to run live)",
        );
    }
    if k.numa.promote_ignore_watermarks {
        return bad(
            "kernel.numa.promote_ignore_watermarks",
            "is a simulator experiment, not a kernel knob",
        );
    }
    if let Some(r) = &k.damon.reclaim {
        for (key, sim_only) in [
            ("prioritization", !r.prioritization),
            ("use_watermarks", !r.use_watermarks),
            (
                "autotune_monitoring_intervals",
                r.autotune_monitoring_intervals,
            ),
        ] {
            if sim_only {
                return bad(
                    &format!("kernel.damon.reclaim.{key}"),
                    "is a simulator experiment, not a damon_reclaim parameter of this kernel",
                );
            }
        }
    }
    for (key, set) in [
        ("kernel.damon.lru_sort", k.damon.lru_sort.is_some()),
        ("kernel.damon.tiering", k.damon.tiering.is_some()),
    ] {
        if set {
            return bad(
                key,
                "the workload runner does not start DAMON yet; run `tiermem agent` beside it",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_balancing_is_off_during_population_and_on_at_start() {
        let cfg = tiermem_core::config::SimConfig::from_toml_str(
            "machine = \"small\"\n[kernel]\nnuma_balancing = 2\n[kernel.numa]\nhot_threshold_ms = 500\n[kernel.ksm]\nrun = 1\npages_to_scan = 1000\n",
            "t.toml",
        )
        .unwrap();
        let p = plan(&cfg.kernel, 2, 1 << 18).unwrap();
        assert!(
            p.before
                .contains(&knob("/proc/sys/vm/min_free_kbytes", 4096)),
            "the simulator's default for 1 GiB"
        );
        assert_eq!(p.before[0], knob(NUMA_BALANCING, 0));
        assert!(p
            .before
            .contains(&knob(format!("{DEBUGFS_NB}/hot_threshold_ms"), 500)));
        assert!(p
            .before
            .contains(&knob(format!("{KSM_DIR}/pages_to_scan"), 1000)));
        assert!(p.before.contains(&knob(format!("{KSM_DIR}/run"), 2)));
        assert_eq!(
            p.at_start,
            vec![knob(NUMA_BALANCING, 2), knob(format!("{KSM_DIR}/run"), 1)]
        );
    }

    #[test]
    fn simulator_only_settings_are_refused_by_key() {
        let cfg = tiermem_core::config::SimConfig::from_toml_str(
            "machine = \"small\"\n[kernel.numa]\nmodel_scale = 32\n",
            "t.toml",
        )
        .unwrap();
        let e = plan(&cfg.kernel, 2, 1 << 18)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("kernel.numa.model_scale"), "{e}");
    }

    #[test]
    fn damon_reclaim_parameters_before_and_enabled_at_start() {
        let cfg = tiermem_core::config::SimConfig::from_toml_str(
            "machine = \"small\"\n[kernel.damon.reclaim]\nenabled = true\nmin_age_us = 3000000\nwmarks_high = 1000\nwmarks_mid = 999\nwmarks_low = 0\n",
            "t.toml",
        )
        .unwrap();
        let p = plan(&cfg.kernel, 2, 1 << 18).unwrap();
        assert!(p
            .before
            .contains(&knob(format!("{DAMON_RECLAIM_DIR}/min_age"), 3000000)));
        assert!(p
            .before
            .contains(&knob(format!("{DAMON_RECLAIM_DIR}/wmarks_mid"), 999)));
        assert!(p
            .at_start
            .contains(&knob(format!("{DAMON_RECLAIM_DIR}/enabled"), "Y")));
        for k in p.before.iter().chain(&p.at_start) {
            assert_eq!(crate::allow::check_write(&k.path), Ok(()), "{}", k.path);
        }
    }

    #[test]
    fn swap_devices_must_match_the_scenario() {
        let cfg = |extra: &str| {
            tiermem_core::config::SimConfig::from_toml_str(
                &format!("machine = \"small\"\n{extra}"),
                "t.toml",
            )
            .unwrap()
            .kernel
        };
        let swaps = "Filename\tType\tSize\tUsed\tPriority\n/dev/zram0 partition\t524284\t0\t100\n";
        let z = cfg("[kernel.zram]\ncapacity = \"512MiB\"\n");
        check_swap_devices(&z, swaps).unwrap();
        let e = check_swap_devices(&z, "Filename\tType\tSize\tUsed\tPriority\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("kernel.zram") && e.contains("512 MiB"), "{e}");
        let e = check_swap_devices(&cfg(""), swaps).unwrap_err().to_string();
        assert!(e.contains("swapoff"), "{e}");
        check_swap_devices(&cfg(""), "Filename\tType\tSize\tUsed\tPriority\n").unwrap();
    }
}
