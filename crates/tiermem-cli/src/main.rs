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
use tiermem_sim::engine::{Progress, Simulation};

mod agent_sim;
mod bench_cmd;
mod capture;
mod experiment_cmd;
mod live;
mod presets_cmd;
mod profile_cmd;
mod report_cmd;
mod sim_cmd;
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

/// A `--duration` on the command line: what a config file takes (`"2s"`, `"500ms"`,
/// `"5min"`) or a bare number of seconds (`2`, `0.5`); zero, a negative or a non-finite
/// value is refused (exit code 2). Args using it set `allow_hyphen_values` so that `-1`
/// reaches this check instead of reading as an unknown flag.
pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let secs = match t.parse::<f64>() {
        Ok(v) => v,
        Err(_) if t.starts_with('-') => return Err(format!("{t:?}: a duration must be positive")),
        Err(_) => tiermem_core::units::parse_duration(t)?.secs_f64(),
    };
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!(
            "{t:?}: a duration must be positive (seconds, or with a unit: 2s, 500ms, 5min)"
        ));
    }
    Ok(secs)
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
    Sim(sim_cmd::SimArgs),
    /// Run a named or file-defined experiment and write results.json, report.md and plots.
    Experiment(experiment_cmd::ExperimentArgs),
    /// Measure simulator speed and memory: pmbench normal_ih over simulated memory on a 2-node machine.
    Bench(bench_cmd::BenchArgs),
    /// List the machine presets, or print one as TOML.
    Presets(presets_cmd::PresetsArgs),
    /// Run a parameter-sweep file (base config + grid) in parallel and write results.csv,
    /// results.json, per-point outputs and plots.
    Sweep(experiment_cmd::SweepArgs),
    /// Draw the plots an experiment's or sweep's output directory asks for (its
    /// results.json `plots`), as PNG (or SVG for a `.svg` file name).
    Plot {
        /// The output directory (holds results.json).
        dir: PathBuf,
    },
    /// Find the weighted-interleave weights that maximise a workload's throughput: simulate
    /// the fastest node of the policy at weight 1..=max-weight (others at 1) and the
    /// bandwidth-derived `auto` weights.
    Tune(experiment_cmd::TuneArgs),
    /// Memory traces of real programs: import, info, record (under QEMU with tiermem's plugin, or Valgrind Lackey), heatmap.
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
    classified(true, err)
}

/// Exit 2 for bad input (config, trace, argument), 1 for anything else.
pub(crate) fn classified(input_error: bool, err: impl std::fmt::Display) -> Failure {
    Failure {
        code: if input_error { 2 } else { 1 },
        err: anyhow::anyhow!("{err}"),
    }
}

pub(crate) fn live_failure(e: tiermem_agent::Error) -> Failure {
    classified(e.is_input_error(), e)
}

fn sim_failure(e: tiermem_sim::SimError) -> Failure {
    classified(e.is_input_error(), e)
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
    tiermem_sim::mm::budget::set_limit(cli.max_memory);
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
        Cmd::Sim(a) => sim_cmd::run(a),
        Cmd::Experiment(a) => experiment_cmd::run(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Presets(a) => presets_cmd::cmd_presets(a.name),
        Cmd::Sweep(a) => experiment_cmd::sweep(a),
        Cmd::Plot { dir } => plot(&dir),
        Cmd::Tune(a) => experiment_cmd::tune(a),
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

/// Run a simulation with a progress bar on a terminal (simulated time, wall time and the
/// estimated time left); `observe` sees (wall seconds so far,
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
                pb.set_message(format!("{what}: simulated {:.1} s", p.sim_seconds));
            }
        })
        .map_err(sim_failure)?;
    let wall = t0.elapsed().as_secs_f64();
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    Ok((res, wall))
}

fn write_file(path: &Path, body: &str) -> Result<(), Failure> {
    std::fs::write(path, body)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::from)
}

/// `tiermem plot DIR`: draw the directory's plots; a missing or malformed results.json is
/// bad input.
fn plot(dir: &Path) -> Result<(), Failure> {
    let r = tiermem_lab::plots::render_experiment(dir).map_err(input)?;
    for w in &r.warnings {
        eprintln!("tiermem: warning: plot {w}");
    }
    println!(
        "tiermem plot: wrote {} plot(s) in {}",
        r.written.len(),
        dir.display()
    );
    Ok(())
}

/// Draw the plots an output directory's `results.json` asks for (natively, with
/// tiermem-lab's [`tiermem_lab::plots`]); a plot that cannot be drawn is a warning.
fn render_plots(dir: &Path) {
    match tiermem_lab::plots::render_experiment(dir) {
        Ok(r) => {
            for w in r.warnings {
                eprintln!("tiermem: warning: plot {w}");
            }
        }
        Err(e) => eprintln!("tiermem: warning: plots not drawn: {e}"),
    }
}
