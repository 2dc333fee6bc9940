//! `tiermem experiment`, `tiermem sweep`, `tiermem tune`: many simulations of variants of a
//! config (tiermem-lab's experiments and tuner; sweeps in the Python package).

use crate::{input, progress_bar, render_plots, sim_failure, write_file, Failure};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tiermem_lab::experiment;

#[derive(Args)]
pub struct ExperimentArgs {
    /// A built-in name (see --list) or an experiment TOML file.
    pub name: Option<String>,
    /// Output directory (with --all: one subdirectory per experiment).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// List the built-in experiments.
    #[arg(long)]
    pub list: bool,
    /// Run every built-in experiment.
    #[arg(long)]
    pub all: bool,
    /// Do not render PNG plots (they need the tiermem Python package).
    #[arg(long)]
    pub no_plots: bool,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep file (TOML: `base`, `[set]`, `[grid]`, `[[plots]]`).
    pub file: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Where the points run: local processes, or a Dask distributed cluster.
    #[arg(long, value_parser = ["local", "dask"])]
    pub engine: Option<String>,
    /// Dask scheduler address (`tcp://host:8786`); implies `--engine dask`.
    #[arg(long)]
    pub address: Option<String>,
    /// Local processes (default: the CPU count), or the size of the local Dask
    /// cluster started by `--engine dask` without `--address`.
    #[arg(long)]
    pub workers: Option<u32>,
    /// Override every point's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override every point's simulated duration, in seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Do not render the sweep file's plots.
    #[arg(long)]
    pub no_plots: bool,
}

#[derive(Args)]
pub struct TuneArgs {
    /// A config whose workload uses a weighted_interleave policy (task policy or mbind).
    pub config: PathBuf,
    /// The metric to maximise, a summary.json path (default: the workload's main figure).
    #[arg(long)]
    pub metric: Option<String>,
    /// Which workload (index in `[[workloads]]`).
    #[arg(long, default_value_t = 0)]
    pub workload: usize,
    /// Largest weight tried on the fastest node.
    #[arg(long, default_value_t = 16)]
    pub max_weight: u8,
    /// Write the sweep as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: ExperimentArgs) -> Result<(), Failure> {
    cmd_experiment(a.name, a.out, a.list, a.all, a.no_plots)
}

pub fn tune(a: TuneArgs) -> Result<(), Failure> {
    cmd_tune(&a.config, a.metric, a.workload, a.max_weight, a.out)
}

/// The sweep runs in the Python package: its arguments, passed on.
pub fn sweep(a: SweepArgs) -> Result<(), Failure> {
    let SweepArgs {
        file,
        out,
        engine,
        address,
        workers,
        seed,
        duration,
        no_plots,
    } = a;
    let mut args: Vec<std::ffi::OsString> = vec![file.into(), "--out".into(), out.into()];
    let options = [
        ("--engine", engine),
        ("--address", address),
        ("--workers", workers.map(|w| w.to_string())),
        ("--seed", seed.map(|s| s.to_string())),
        ("--duration", duration.map(|d| d.to_string())),
    ];
    for (flag, value) in options {
        if let Some(v) = value {
            args.push(flag.into());
            args.push(v.into());
        }
    }
    if no_plots {
        args.push("--no-plots".into());
    }
    cmd_sweep(&args)
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own types to JSON cannot fail"
)]
fn cmd_tune(
    config: &Path,
    metric: Option<String>,
    workload: usize,
    max_weight: u8,
    out: Option<PathBuf>,
) -> Result<(), Failure> {
    let (cfg, _) = tiermem_core::config::SimConfig::from_file(config).map_err(input)?;
    let w = cfg.workloads.get(workload).ok_or_else(|| {
        input(format!(
            "--workload {workload}: the config has {} workloads",
            cfg.workloads.len()
        ))
    })?;
    let metric = metric.unwrap_or_else(|| {
        let m = match w {
            tiermem_core::config::WorkloadConfig::Stream(_) => "triad_mbps",
            tiermem_core::config::WorkloadConfig::Mlc(_) => "bandwidth_mbps",
            tiermem_core::config::WorkloadConfig::Xsbench(_) => "lookups_per_s",
            tiermem_core::config::WorkloadConfig::Pmbench(_) => "score_accesses_per_s",
            tiermem_core::config::WorkloadConfig::Hotregions(_) => "accesses",
            tiermem_core::config::WorkloadConfig::Parsec(_) => "accesses",
            tiermem_core::config::WorkloadConfig::VmGuest(_) => "mean_access_ns",
            tiermem_core::config::WorkloadConfig::Trace(_) => "accesses_per_s",
            tiermem_core::config::WorkloadConfig::Synthetic(_) => "accesses_per_s",
        };
        format!("workloads[{workload}].{m}")
    });
    let pb = progress_bar(max_weight as u64 + 1, "tuning");
    let r = tiermem_lab::tuner::tune_weights(&cfg, workload, &metric, max_weight, &|d, _| {
        if let Some(pb) = &pb {
            pb.set_position(d as u64);
        }
    })
    .map_err(sim_failure)?;
    println!("{metric} by weight of node {} (others 1):", {
        let t = tiermem_core::topology::Topology::new(&cfg.machine).map_err(input)?;
        tiermem_lab::tuner::fastest_node(&t, &r.nodes)
    });
    for c in &r.sweep {
        let mark = if c.weights == r.best.weights {
            "  <- best"
        } else {
            ""
        };
        println!("  {:>3}  {:>14.1}{mark}", c.k.unwrap_or(0), c.value);
    }
    let show = |w: &[u8]| {
        r.nodes
            .iter()
            .map(|&n| w[n as usize].to_string())
            .collect::<Vec<_>>()
            .join(":")
    };
    println!(
        "best weights (nodes {:?}): {} = {:.1}",
        r.nodes,
        show(&r.best.weights),
        r.best.value
    );
    println!(
        "auto weights from bandwidth: {} = {:.1} ({:+.1} % vs best)",
        show(&r.auto.weights),
        r.auto.value,
        (r.auto.value / r.best.value - 1.0) * 100.0
    );
    if let Some(p) = out {
        write_file(
            &p,
            &serde_json::to_string_pretty(&r).expect("tune result serialises"),
        )?;
    }
    Ok(())
}

#[allow(clippy::expect_used, reason = "the names come from the built-in list")]
fn cmd_experiment(
    name: Option<String>,
    out: Option<PathBuf>,
    list: bool,
    all: bool,
    no_plots: bool,
) -> Result<(), Failure> {
    if list {
        let list = experiment::builtins();
        let w = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (n, d) in list {
            println!("{n:<w$}  {d}");
        }
        return Ok(());
    }
    let out = out.ok_or_else(|| input("--out DIR is required"))?;
    let exps: Vec<experiment::Experiment> = if all {
        experiment::builtins()
            .iter()
            .map(|(n, _)| experiment::builtin(n).expect("listed"))
            .collect()
    } else {
        let name =
            name.ok_or_else(|| input("give an experiment name or file (see --list), or --all"))?;
        let e = match experiment::builtin(&name) {
            Some(e) => e,
            None => {
                let p = Path::new(&name);
                if !p.exists() {
                    let names: Vec<&str> = experiment::builtins().iter().map(|(n, _)| *n).collect();
                    return Err(input(format!(
                        "no built-in experiment or file named {name:?} (built-ins: {})",
                        names.join(", ")
                    )));
                }
                experiment::from_file(p).map_err(input)?
            }
        };
        vec![e]
    };
    let mut index = String::from("# tiermem experiments\n\n");
    for e in &exps {
        let dir = if all { out.join(&e.name) } else { out.clone() };
        eprintln!("experiment {}: {} variants", e.name, e.variants.len());
        let pb = progress_bar(e.variants.len() as u64, &e.name);
        let t0 = Instant::now();
        let results = experiment::run(e, &dir, &|done, _n, vname| {
            if let Some(pb) = &pb {
                pb.set_position(done as u64);
                pb.set_message(format!("{} ({vname})", e.name));
            } else {
                eprintln!("  [{done}/{_n}] {vname}");
            }
        })
        .map_err(sim_failure)?;
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        let steps = experiment::evaluate_steps(e, &results);
        let failed: Vec<String> = steps
            .iter()
            .filter(|r| !r.holds)
            .map(|r| format!("{} → {} ({})", r.step.from, r.step.to, r.step.metric))
            .collect();
        if !steps.is_empty() {
            eprintln!(
                "experiment {}: {} of {} steps follow the published direction{}",
                e.name,
                steps.len() - failed.len(),
                steps.len(),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!("; not: {}", failed.join(", "))
                }
            );
        }
        eprintln!(
            "experiment {} done in {:.1} s: {}",
            e.name,
            t0.elapsed().as_secs_f64(),
            dir.join("report.md").display()
        );
        if !no_plots {
            render_plots(&dir);
        }
        experiment::note_missing_plots(&dir)
            .with_context(|| format!("cannot update {}", dir.join("report.md").display()))?;
        index.push_str(&format!(
            "- [{}]({}/report.md): {} ({} variants)\n",
            e.name,
            e.name,
            e.description.split(". ").next().unwrap_or(""),
            results.len()
        ));
    }
    if all {
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        write_file(&out.join("README.md"), &index)?;
    }
    Ok(())
}

/// `tiermem sweep`: the sweep runs in the Python package (`python3 -m tiermem.sweeps`, or
/// `$TIERMEM_PYTHON`), which fans the points out to local processes or a Dask cluster;
/// its exit code (2 for bad input, 1 for failures) becomes ours.
fn cmd_sweep(args: &[std::ffi::OsString]) -> Result<(), Failure> {
    let python = std::env::var("TIERMEM_PYTHON").unwrap_or_else(|_| "python3".into());
    let status = std::process::Command::new(&python)
        .args(["-m", "tiermem.sweeps"])
        .args(args)
        .status()
        .with_context(|| {
            format!(
                "cannot run {python}: sweeps need Python and the tiermem package (`pip install .`)"
            )
        })?;
    match status.code() {
        Some(0) => Ok(()),
        // The Python side printed its error (`tiermem sweep: error: ...`): keep its exit code.
        Some(code) => std::process::exit(code),
        None => {
            Err(anyhow::anyhow!("sweep interrupted ({python} -m tiermem.sweeps: {status})").into())
        }
    }
}
