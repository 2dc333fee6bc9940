//! `tiermem sim`: one simulation from a config, its outputs and the summary it prints.

use crate::{input, run_with_progress, sim_failure, write_file, Failure};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use tiermem_core::config::SimConfig;
use tiermem_sim::engine::Simulation;

#[derive(Args)]
pub struct SimArgs {
    /// The config file.
    pub config: PathBuf,
    /// Output directory for summary.json, timeline.csv and run.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Override the config's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the simulated duration (`2s`, `500ms`, or seconds).
    #[arg(long, allow_hyphen_values = true, value_parser = crate::parse_seconds)]
    pub duration: Option<f64>,
}

pub fn run(a: SimArgs) -> Result<(), Failure> {
    cmd_sim(&a.config, &a.out, a.seed, a.duration)
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
fn cmd_sim(
    config: &Path,
    out: &Path,
    seed: Option<u64>,
    duration: Option<f64>,
) -> Result<(), Failure> {
    let (mut cfg, value) = SimConfig::from_file(config).map_err(input)?;
    tiermem_sim::apply_overrides(&mut cfg, seed, duration).map_err(sim_failure)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut sim = Simulation::new(&cfg)
        .map_err(|e| match e {
            tiermem_sim::SimError::Config(c) => {
                tiermem_sim::SimError::Config(c.in_file(&config.display().to_string()))
            }
            e => e,
        })
        .map_err(sim_failure)?;
    let (res, wall) = run_with_progress(
        &mut sim,
        &format!("simulating {}", config.display()),
        |_, _| {},
    )?;
    let s = &res.summary;
    write_file(
        &out.join("summary.json"),
        &serde_json::to_string_pretty(s).expect("summary serialises"),
    )?;
    write_file(&out.join("timeline.csv"), &res.timeline_csv)?;
    if !res.damon_records.is_empty() {
        // Contexts with `record = true`: damo's record shape, for `tiermem report`.
        write_file(
            &out.join("damon.json"),
            &tiermem_core::damon_record::to_damo_json(&res.damon_records, "tiermem sim"),
        )?;
    }
    let run = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "config_file": config.display().to_string(),
        "seed": cfg.seed,
        "wall_seconds": wall,
        "simulated_accesses_per_wall_second": s.accesses as f64 / wall.max(1e-9),
        "host_table_bytes": res.host_table_bytes,
        "resolved_config": value,
        "effective_config": cfg,
    });
    write_file(
        &out.join("run.json"),
        &serde_json::to_string_pretty(&run).expect("run serialises"),
    )?;
    print_summary(s, wall);
    println!("results in {}", out.display());
    Ok(())
}

fn print_summary(s: &tiermem_sim::engine::Summary, wall: f64) {
    println!(
        "machine {}  seed {}  simulated {:.3} s in {:.2} s wall",
        s.machine, s.seed, s.sim_seconds, wall
    );
    println!(
        "accesses {}  throughput {:.3e}/s  mean latency {:.1} ns  ({:.1} M simulated accesses per wall second)",
        s.accesses,
        s.throughput_accesses_per_s,
        s.mean_latency_ns,
        s.accesses as f64 / wall.max(1e-9) / 1e6
    );
    println!(
        "{:<6} {:>5} {:>6} {:>12} {:>12} {:>12} {:>10}",
        "node", "tier", "kind", "capacity", "used", "free", "bw GB/s"
    );
    for n in &s.nodes {
        println!(
            "{:<6} {:>5} {:>6} {:>12} {:>12} {:>12} {:>10.2}",
            format!("node{}", n.id),
            n.tier,
            n.kind,
            tiermem_core::units::Bytes(n.capacity_bytes).to_string(),
            tiermem_core::units::Bytes(n.used_bytes).to_string(),
            tiermem_core::units::Bytes(n.free_bytes).to_string(),
            n.mean_bandwidth_bytes_per_s / 1e9
        );
    }
    for w in &s.workloads {
        match w {
            tiermem_sim::workload::WorkloadResult::Pmbench { name, score_accesses_per_s, mean_access_ns, run_seconds, .. } => {
                if *run_seconds > 0.0 {
                    println!("{name}: pmbench score {score_accesses_per_s:.4e} accesses/s, mean access {mean_access_ns:.1} ns over {run_seconds:.2} s")
                } else {
                    println!("{name}: pmbench run phase not reached (initialisation or warm-up still running: raise duration)")
                }
            }
            tiermem_sim::workload::WorkloadResult::Stream { name, copy_mbps, scale_mbps, add_mbps, triad_mbps, complete, .. } => println!(
                "{name}: STREAM copy {copy_mbps:.1} scale {scale_mbps:.1} add {add_mbps:.1} triad {triad_mbps:.1} MB/s{}",
                if *complete { "" } else { " (incomplete: raise duration)" }
            ),
            tiermem_sim::workload::WorkloadResult::Mlc { name, bandwidth_mbps, latency_ns, .. } => {
                println!("{name}: MLC {bandwidth_mbps:.1} MB/s at {latency_ns:.1} ns")
            }
            tiermem_sim::workload::WorkloadResult::Parsec { name, runtime_seconds, complete, memused_avg_bytes, major_faults, kdamond_cpu_pct, .. } => println!(
                "{name}: runtime {runtime_seconds:.3} s{}{}{}{}",
                memused_avg_bytes.map_or(String::new(), |m| format!(", memused.avg {:.1} MiB", m / 1048576.0)),
                major_faults.map_or(String::new(), |n| format!(", {n} major faults")),
                kdamond_cpu_pct.map_or(String::new(), |c| format!(", kdamond {c:.2} % of a CPU")),
                if *complete { "" } else { " (incomplete: raise duration)" }
            ),
            tiermem_sim::workload::WorkloadResult::Hotregions { name, accesses, run_seconds } => {
                println!("{name}: {accesses} accesses in {run_seconds:.2} s")
            }
            tiermem_sim::workload::WorkloadResult::VmGuest { name, guests, access_time_spread_pct, mean_access_ns, .. } => println!(
                "{name}: {} guests, probe {mean_access_ns:.1} ns per access, spread (population std-dev / mean) {access_time_spread_pct:.3} %",
                guests.len()
            ),
            tiermem_sim::workload::WorkloadResult::Xsbench { name, lookups_per_s, complete, .. } => println!(
                "{name}: XSBench {lookups_per_s:.0} lookups/s{}",
                if *complete { "" } else { " (incomplete: raise duration)" }
            ),
            tiermem_sim::workload::WorkloadResult::Synthetic { name, threads, accesses, accesses_per_s, .. } => println!(
                "{name}: {threads} thread(s), {accesses} accesses ({accesses_per_s:.0} per s)"
            ),
            tiermem_sim::workload::WorkloadResult::Trace { name, accesses, trace_accesses, run_seconds, mean_access_ns, .. } => println!(
                "{name}: trace replay {accesses} accesses (trace: {trace_accesses} per pass) in {run_seconds:.4} s, mean access {mean_access_ns:.1} ns"
            ),
        }
    }
    for k in &s.damon {
        println!(
            "kdamond {} ({}): {:.2} % of a CPU ({:.2} % monitoring), {} regions",
            k.name, k.ops, k.cpu_percent, k.monitor_cpu_percent, k.nr_regions
        );
        for sc in &k.schemes {
            println!(
                "  scheme {}: tried {} B in {} regions, applied {} B, quota exceeded {} times",
                sc.action,
                sc.stats.sz_tried,
                sc.stats.nr_tried,
                sc.stats.sz_applied,
                sc.stats.qt_exceeds
            );
        }
    }
    if let Some(t) = &s.tiering {
        let get = |k: &str| t.get(k).copied().unwrap_or(0);
        let bytes = |k: &str| tiermem_core::units::Bytes(get(k));
        println!(
            "tiering controller: promoted {} (candidates {}, rate-limited {}, no headroom {}, failed {}), demoted {}, hot threshold {} ‰",
            bytes("promoted_bytes"),
            bytes("candidate_bytes"),
            bytes("rate_limited_bytes"),
            bytes("headroom_skipped_bytes"),
            bytes("promote_failed_bytes"),
            bytes("demoted_bytes"),
            get("threshold_permil")
        );
    }
    if let Some(k) = &s.ksm {
        println!(
            "ksm: pages_shared {} pages_sharing {} ksm_zero_pages {} full_scans {} general_profit {} B, saved {}, ksmd CPU {:.2} %",
            k.sysfs["pages_shared"],
            k.sysfs["pages_sharing"],
            k.sysfs["ksm_zero_pages"],
            k.sysfs["full_scans"],
            k.sysfs["general_profit"],
            tiermem_core::units::Bytes(k.memory_saved_bytes),
            k.ksmd_cpu_pct
        );
    }
    let interesting = [
        "pgfault",
        "pgmajfault",
        "pgscan_kswapd",
        "pgsteal_kswapd",
        "pgsteal_direct",
        "pgdemote_kswapd",
        "pgdemote_direct",
        "pswpout",
        "pswpin",
        "oom_kill",
    ];
    let line: Vec<String> = interesting
        .iter()
        .filter_map(|k| {
            s.vmstat
                .get(*k)
                .filter(|v| **v > 0)
                .map(|v| format!("{k} {v}"))
        })
        .collect();
    if !line.is_empty() {
        println!("vmstat: {}", line.join("  "));
    }
}
