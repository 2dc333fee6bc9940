//! `tiermem`: the command-line front of tiermem.
//!
//! Thin by design: parse arguments, load and validate configs, call the libraries,
//! present results. Exit codes: 0 success, 1 runtime failure (e.g. an output directory
//! that cannot be written), 2 bad input (arguments, config, experiment file).

use anyhow::Context;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tiermem_core::config::SimConfig;
use tiermem_core::ConfigError;
use tiermem_lab::experiment;
use tiermem_sim::engine::{Progress, Simulation};

mod live;
mod report_cmd;
mod trace_cmd;
mod validate_cmd;
mod workload_cmd;

#[derive(Parser)]
#[command(
    name = "tiermem",
    version,
    about = "Tiered and heterogeneous memory: simulate Linux's tiering mechanisms and manage real hosts"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Log filter (e.g. `info`, `tiermem_sim=debug`); logs go to stderr.
    #[arg(long, global = true, default_value = "warn", value_parser = parse_log_filter)]
    log: String,
    /// The most host memory one simulation may take (e.g. `8GiB`); a config that needs more
    /// is refused before anything is allocated. Default: the host's available memory.
    #[arg(long, global = true, value_parser = parse_max_memory)]
    max_memory: Option<u64>,
}

fn parse_max_memory(s: &str) -> Result<u64, String> {
    tiermem_core::units::parse_bytes(s)
        .map(|b| b.0)
        .map_err(|e| format!("{e} (e.g. 8GiB)"))
}

/// A `--log` value must be a valid `tracing` filter: a typo is an error (exit code 2), not a
/// silent fall-back to `warn`.
fn parse_log_filter(s: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(s)
        .map(|_| s.to_string())
        .map_err(|e| format!("not a log filter ({e}); e.g. `info` or `tiermem_agent=debug,warn`"))
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one simulation from a TOML config.
    Sim {
        /// The config file.
        config: PathBuf,
        /// Output directory for summary.json, timeline.csv and run.json.
        #[arg(long)]
        out: PathBuf,
        /// Override the config's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the simulated duration, in seconds.
        #[arg(long)]
        duration: Option<f64>,
    },
    /// Run a named or file-defined experiment and write results.json, report.md and plots.
    Experiment {
        /// A built-in name (see --list) or an experiment TOML file.
        name: Option<String>,
        /// Output directory (with --all: one subdirectory per experiment).
        #[arg(long)]
        out: Option<PathBuf>,
        /// List the built-in experiments.
        #[arg(long)]
        list: bool,
        /// Run every built-in experiment.
        #[arg(long)]
        all: bool,
        /// Do not render PNG plots (they need the tiermem Python package).
        #[arg(long)]
        no_plots: bool,
    },
    /// Measure simulator speed and memory: pmbench normal_ih over simulated memory on a 2-node machine.
    Bench {
        /// Simulated memory footprint of the single pmbench process.
        #[arg(long, default_value = "16GiB")]
        size: String,
        /// Simulated seconds to run.
        #[arg(long, default_value_t = 30.0)]
        duration: f64,
        /// Run with NUMA-balancing memory tiering on (numa_balancing = 2, demotion enabled).
        #[arg(long)]
        tiering: bool,
        /// Replay this trace (looped) instead of running pmbench.
        #[arg(long)]
        trace: Option<PathBuf>,
    },
    /// List the machine presets, or print one as TOML.
    Presets { name: Option<String> },
    /// Run a parameter-sweep file (base config + grid) in parallel and write results.csv,
    /// results.json, per-point outputs and plots. Runs the Python package
    /// (`python3 -m tiermem.sweeps`, or $TIERMEM_PYTHON).
    Sweep {
        /// The sweep file (TOML: `base`, `[set]`, `[grid]`, `[[plots]]`).
        file: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Where the points run: local processes, or a Dask distributed cluster.
        #[arg(long, value_parser = ["local", "dask"])]
        engine: Option<String>,
        /// Dask scheduler address (`tcp://host:8786`); implies `--engine dask`.
        #[arg(long)]
        address: Option<String>,
        /// Local processes (default: the CPU count), or the size of the local Dask
        /// cluster started by `--engine dask` without `--address`.
        #[arg(long)]
        workers: Option<u32>,
        /// Override every point's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override every point's simulated duration, in seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Do not render the sweep file's plots.
        #[arg(long)]
        no_plots: bool,
    },
    /// Find the weighted-interleave weights that maximise a workload's throughput: simulate
    /// the fastest node of the policy at weight 1..=max-weight (others at 1) and the
    /// bandwidth-derived `auto` weights.
    Tune {
        /// A config whose workload uses a weighted_interleave policy (task policy or mbind).
        config: PathBuf,
        /// The metric to maximise, a summary.json path (default: the workload's main figure).
        #[arg(long)]
        metric: Option<String>,
        /// Which workload (index in `[[workloads]]`).
        #[arg(long, default_value_t = 0)]
        workload: usize,
        /// Largest weight tried on the fastest node.
        #[arg(long, default_value_t = 16)]
        max_weight: u8,
        /// Write the sweep as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Memory traces of real programs: import, info, record (Valgrind Lackey), heatmap.
    Trace {
        #[command(subcommand)]
        cmd: trace_cmd::TraceCmd,
    },
    /// damo report's views of a DAMON record (from `damon record`, a simulated run or
    /// damo): heatmap, working-set sizes, the regions of a snapshot.
    Report {
        #[command(subcommand)]
        cmd: report_cmd::ReportCmd,
    },
    /// Show this host's NUMA nodes, memory tiers, HMAT figures and tiering settings.
    Topology(live::TopologyArgs),
    /// Per-node allocation counters, or one process's memory per node (`-p PID`), as
    /// numactl's numastat prints them.
    Numastat(live::NumastatArgs),
    /// DAMON on this host: every kdamond, its contexts, schemes and statistics.
    Damon {
        #[command(subcommand)]
        cmd: live::DamonCmd,
    },
    /// Move a process's pages from some nodes to others (`migrate_pages(2)`, as
    /// migratepages(8)).
    Migrate(live::MigrateArgs),
    /// Apply a tiering config to this host, run its controllers, restore on exit.
    Agent(live::AgentArgs),
    /// Start a program under a memory policy and/or process-wide KSM merging.
    Exec(live::ExecArgs),
    /// Check the simulator against kernel recordings: simulate each scenario, compare with
    /// its recording, print the table; exit 1 when a check is out of tolerance.
    Validate(validate_cmd::ValidateArgs),
    /// Run a scenario's synthetic workload on this host and record the kernel's timeline.
    Workload {
        #[command(subcommand)]
        cmd: workload_cmd::WorkloadCmd,
    },
}

/// An error with the exit code it maps to.
struct Failure {
    code: u8,
    err: anyhow::Error,
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        Failure { code: 1, err }
    }
}

fn input(err: impl std::fmt::Display) -> Failure {
    Failure {
        code: 2,
        err: anyhow::anyhow!("{err}"),
    }
}

fn live_failure(e: tiermem_agent::Error) -> Failure {
    Failure {
        code: if e.is_input_error() { 2 } else { 1 },
        err: anyhow::anyhow!("{e}"),
    }
}

fn sim_failure(e: tiermem_sim::SimError) -> Failure {
    if e.is_input_error() {
        input(e)
    } else {
        Failure {
            code: 1,
            err: anyhow::anyhow!("{e}"),
        }
    }
}

/// `tiermem … | head`: a reader that closes the pipe ends the command with SIGPIPE, as for
/// any Unix filter, instead of a panic in `println!` (Rust ignores SIGPIPE by default).
/// Not for the commands that change the host (`agent`, `exec`, `workload run`, `damon
/// record`): they must reach their restore paths, and keep the default, where a closed pipe
/// is a write error.
fn die_quietly_on_closed_pipe() {
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[allow(clippy::expect_used, reason = "parse_log_filter accepted this filter")]
fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter =
        tracing_subscriber::EnvFilter::try_new(&cli.log).expect("checked by parse_log_filter");
    // Colour only on a terminal: `tiermem agent 2>agent.log` writes plain text.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    tiermem_sim::budget::set_limit(cli.max_memory);
    if !matches!(
        cli.cmd,
        Cmd::Agent(_)
            | Cmd::Exec(_)
            | Cmd::Workload { .. }
            | Cmd::Damon {
                cmd: live::DamonCmd::Record(_)
            }
    ) {
        die_quietly_on_closed_pipe();
    }
    let r = match cli.cmd {
        Cmd::Sim {
            config,
            out,
            seed,
            duration,
        } => cmd_sim(&config, &out, seed, duration),
        Cmd::Experiment {
            name,
            out,
            list,
            all,
            no_plots,
        } => cmd_experiment(name, out, list, all, no_plots),
        Cmd::Bench {
            size,
            duration,
            tiering,
            trace,
        } => cmd_bench(&size, duration, tiering, trace.as_deref()),
        Cmd::Presets { name } => cmd_presets(name),
        Cmd::Sweep {
            file,
            out,
            engine,
            address,
            workers,
            seed,
            duration,
            no_plots,
        } => {
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
        Cmd::Tune {
            config,
            metric,
            workload,
            max_weight,
            out,
        } => cmd_tune(&config, metric, workload, max_weight, out),
        Cmd::Trace { cmd } => trace_cmd::run(cmd),
        Cmd::Report { cmd } => report_cmd::run(cmd),
        Cmd::Topology(a) => live::cmd_topology(a).map_err(live_failure),
        Cmd::Numastat(a) => live::cmd_numastat(a).map_err(live_failure),
        Cmd::Damon { cmd } => live::cmd_damon(cmd).map_err(live_failure),
        Cmd::Migrate(a) => live::cmd_migrate(a).map_err(live_failure),
        Cmd::Agent(a) => live::cmd_agent(a).map_err(live_failure),
        Cmd::Exec(a) => live::cmd_exec(a).map_err(live_failure),
        Cmd::Workload { cmd } => workload_cmd::run(cmd).map_err(live_failure),
        Cmd::Validate(a) => match validate_cmd::run(a) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure {
                code: 1,
                err: anyhow::anyhow!("some checks are out of tolerance"),
            }),
            Err(e) => Err(Failure {
                code: if e.is_input_error() { 2 } else { 1 },
                err: anyhow::anyhow!("{e}"),
            }),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            // Whatever the command printed comes before the error.
            let _ = std::io::Write::flush(&mut std::io::stdout());
            eprintln!("tiermem: error: {:#}", f.err);
            ExitCode::from(f.code)
        }
    }
}

#[allow(clippy::expect_used, reason = "a constant, valid template")]
fn progress_bar(len: u64, what: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:40}] {percent}% ({elapsed}, eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    Some(pb)
}

/// Run a simulation with a progress bar on a terminal; `observe` sees (wall seconds so far,
/// progress) at every report. Returns the result and the wall time.
fn run_with_progress(
    sim: &mut Simulation,
    what: &str,
    mut observe: impl FnMut(f64, Progress),
) -> Result<(tiermem_sim::engine::SimResult, f64), Failure> {
    let pb = progress_bar(1000, what);
    let t0 = Instant::now();
    let res = sim
        .run(&mut |p: Progress| {
            observe(t0.elapsed().as_secs_f64(), p);
            if let Some(pb) = &pb {
                pb.set_position((p.fraction * 1000.0) as u64);
            }
        })
        .map_err(sim_failure)?;
    let wall = t0.elapsed().as_secs_f64();
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok((res, wall))
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

fn write_file(path: &Path, body: &str) -> Result<(), Failure> {
    std::fs::write(path, body)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::from)
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
            tiermem_sim::workload::WorkloadResult::Parsec { name, runtime_seconds, complete, .. } => println!(
                "{name}: runtime {runtime_seconds:.3} s{}",
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

/// Draw the experiment's plots with the Python package (`python3 -m tiermem.plots DIR`).
fn render_plots(dir: &Path) {
    let python = std::env::var("TIERMEM_PYTHON").unwrap_or_else(|_| "python3".into());
    match std::process::Command::new(&python).args(["-m", "tiermem.plots"]).arg(dir).status() {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("tiermem: warning: plots not rendered ({python} -m tiermem.plots exited with {s}); install the Python package with `pip install .`"),
        Err(e) => eprintln!("tiermem: warning: plots not rendered: cannot run {python}: {e}"),
    }
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

/// A memory figure of this process from `/proc/self/status` (`VmHWM`, `VmRSS`), in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[allow(clippy::expect_used, reason = "a constant machine description")]
fn cmd_bench(
    size: &str,
    duration: f64,
    tiering: bool,
    trace: Option<&Path>,
) -> Result<(), Failure> {
    let bytes =
        tiermem_core::units::parse_bytes(size).map_err(|e| input(format!("--size: {e}")))?;
    if bytes.0 < (64 << 20) {
        return Err(input("--size: at least 64MiB"));
    }
    if !(duration > 0.0 && duration <= 3600.0) {
        return Err(input("--duration: seconds within (0, 3600]"));
    }
    // A 2-node machine: DRAM holding half the footprint, a CXL node holding the rest.
    let dram = bytes.0 / 2;
    let text = format!(
        "machine = {{ preset = \"small\", nodes = [] }}\nduration = \"{duration}s\"\nseed = 1\n[sim]\nsample_interval = \"1s\"\n\
         [[workloads]]\ntype = \"pmbench\"\nmapsize = \"{}\"\npattern = \"normal_ih\"\nread_ratio = 80\ninitialize = true\ncold = true\n",
        bytes.0
    );
    let text = match trace {
        // Trace replay instead: the trace looped for the whole run.
        Some(t) => format!(
            "machine = {{ preset = \"small\", nodes = [] }}\nduration = \"{duration}s\"\nseed = 1\n[sim]\nsample_interval = \"1s\"\n\
             [[workloads]]\ntype = \"trace\"\nfile = {}\nloops = 0\n",
            toml::Value::String(t.display().to_string())
        ),
        None => text,
    };
    let text = if tiering {
        format!("{text}[kernel]\nnuma_balancing = 2\ndemotion_enabled = true\n")
    } else {
        text
    };
    let mut value = tiermem_core::config::resolve_toml(&text, "<bench>").map_err(input)?;
    // Replace the preset's nodes with sized ones.
    let nodes = format!(
        "[[nodes]]\nid = 0\ncpus = 4\ncapacity = {dram}\nkind = \"dram\"\nread_latency = \"85ns\"\nread_bandwidth = \"50GB/s\"\n\
         [[nodes]]\nid = 1\ncapacity = {}\nkind = \"cxl\"\nread_latency = \"200ns\"\nread_bandwidth = \"26.8GB/s\"\nwrite_bandwidth = \"20GB/s\"\n",
        bytes.0
    );
    let nodes_v: toml::Value = toml::from_str(&nodes).expect("valid");
    tiermem_core::config::set_path(
        &mut value,
        "machine.nodes",
        nodes_v.get("nodes").expect("nodes").clone(),
    )
    .map_err(input)?;
    let cfg = SimConfig::from_value(&value, "<bench>").map_err(input)?;
    let rss0 = proc_status_bytes("VmRSS:").unwrap_or(0);
    let mut sim = Simulation::new(&cfg).map_err(sim_failure)?;
    let mut samples: Vec<(f64, f64, u64)> = Vec::new();
    let (res, wall) = run_with_progress(&mut sim, "bench", |wall_s, p| {
        samples.push((wall_s, p.sim_seconds, p.accesses))
    })?;
    let pages = bytes.pages_ceil().0 as f64;
    let peak = proc_status_bytes("VmHWM:").unwrap_or(0);
    // Steady state: the second half of the run by wall time (after initialisation).
    let half = samples.iter().position(|s| s.0 >= wall / 2.0).unwrap_or(0);
    let (w0, _, a0) = samples.get(half).copied().unwrap_or((0.0, 0.0, 0));
    let steady = (res.summary.accesses - a0) as f64 / (wall - w0).max(1e-9);
    println!(
        "bench: {}, {} over a 2-node machine (DRAM {} + CXL), {duration} simulated s, tiering {}",
        match trace {
            Some(t) => format!("replay of {} (looped)", t.display()),
            None => "pmbench normal_ih 80% reads".to_string(),
        },
        bytes,
        tiermem_core::units::Bytes(dram),
        if tiering { "on" } else { "off" }
    );
    if tiering {
        let v = &res.summary.vmstat;
        println!(
            "  promoted / demoted pages          {} / {}",
            v["pgpromote_success"], v["pgdemote_kswapd"]
        );
    }
    println!("  wall time                         {wall:.2} s");
    println!(
        "  simulated accesses                {}",
        res.summary.accesses
    );
    println!(
        "  accesses per wall second (all)    {:.2} M",
        res.summary.accesses as f64 / wall / 1e6
    );
    println!("  accesses per wall second (steady) {:.2} M", steady / 1e6);
    println!(
        "  page+frame tables                 {:.1} bytes per simulated page",
        res.host_table_bytes as f64 / pages
    );
    println!(
        "  peak RSS growth                   {:.1} bytes per simulated page",
        peak.saturating_sub(rss0) as f64 / pages
    );
    Ok(())
}

/// What the simulator computes from a machine, as TOML comments (the preset stays a valid
/// file): each node's abstract distance and tier (`mm/memory-tiers.c`), its demotion
/// targets (`node_demotion[].preferred`, and the lower-tier mask any lower node may take)
/// and its zonelist (allocation fallback order), as `tiermem topology` shows them for a
/// host.
fn describe_topology(t: &tiermem_core::topology::Topology) -> String {
    let ids = |v: &[tiermem_core::units::NodeId]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|n| n.0.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let mut o = String::from("\n# As the simulator computes it (mm/memory-tiers.c, zonelists):\n");
    for (i, n) in t.nodes.iter().enumerate() {
        let tier = t
            .tiers
            .iter()
            .find(|x| x.nodes.contains(&n.id))
            .map_or("-".to_string(), |x| x.id.to_string());
        let top = if t.is_toptier(n.id) { ", top tier" } else { "" };
        o.push_str(&format!(
            "#   node {}: adistance {}, memory_tier{tier}{top}; demotion to {} (allowed: {}); zonelist {}\n",
            n.id.0,
            n.adistance,
            ids(&t.demotion_preferred[i]),
            ids(&t.lower_tier_mask[i]),
            ids(&t.fallback[i]),
        ));
    }
    o
}

#[allow(
    clippy::expect_used,
    reason = "the names come from the built-in presets"
)]
fn cmd_presets(name: Option<String>) -> Result<(), Failure> {
    match name {
        None => {
            for n in tiermem_core::presets::machine_names() {
                let v = tiermem_core::presets::machine_value(n).expect("preset");
                let m: tiermem_core::topology::MachineConfig =
                    tiermem_core::config::typed(v, "machine").map_err(|e: ConfigError| input(e))?;
                let t = tiermem_core::topology::Topology::new(&m).map_err(input)?;
                let tiers: Vec<String> = t
                    .tiers
                    .iter()
                    .map(|x| {
                        format!(
                            "tier{}={:?}",
                            x.id,
                            x.nodes.iter().map(|n| n.0).collect::<Vec<_>>()
                        )
                    })
                    .collect();
                println!("{n:<14} {} nodes  {}", m.nodes.len(), tiers.join(" "));
            }
            Ok(())
        }
        Some(n) => match tiermem_core::presets::machine_text(&n) {
            Some(t) => {
                print!("{t}");
                let v = tiermem_core::presets::machine_value(&n).expect("preset");
                let m: tiermem_core::topology::MachineConfig =
                    tiermem_core::config::typed(v, "machine").map_err(|e: ConfigError| input(e))?;
                let topo = tiermem_core::topology::Topology::new(&m).map_err(input)?;
                print!("{}", describe_topology(&topo));
                Ok(())
            }
            None => Err(input(format!(
                "no preset {n:?}; available: {}",
                tiermem_core::presets::machine_names().join(", ")
            ))),
        },
    }
}
