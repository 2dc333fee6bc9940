//! `tiermem experiment`, `tiermem sweep`, `tiermem tune`: many simulations of variants of a
//! config (tiermem-lab's experiments, sweeps and tuner).

use crate::{input, progress_bar, render_plots, sim_failure, write_file, Failure};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tiermem_lab::{experiment, experiment_file};

#[derive(Args)]
pub struct ExperimentArgs {
    /// A built-in name (see --list) or an experiment TOML file.
    pub name: Option<String>,
    /// Output directory (with --suite or --all: one subdirectory per experiment).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// List the built-in experiments.
    #[arg(long)]
    pub list: bool,
    /// Run the main suite (`--suite main`: every seed's report in a few minutes).
    #[arg(long, conflicts_with_all = ["name", "suite"])]
    pub all: bool,
    /// Run a suite of built-in experiments (`main`, `full`; experiments/suites.toml) into
    /// OUT/<experiment>/, with an index OUT/README.md.
    #[arg(long, conflicts_with = "name")]
    pub suite: Option<String>,
    /// Do not draw the PNG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Run every variant once per seed (`--seeds 4,5,6,7`) and report each figure's mean
    /// and standard deviation over them; replaces the experiment file's `seeds`. (A list
    /// of seeds; `tiermem validate --seeds N` takes a count.)
    #[arg(long, value_delimiter = ',', value_name = "SEED,...")]
    pub seeds: Option<Vec<u64>>,
    /// Run every variant for this simulated time instead of its config's (`10s`, or
    /// seconds): a quick check of a long experiment; the report says so, and figures that
    /// depend on the run's length are not the experiment's.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::parse_seconds)]
    pub duration: Option<f64>,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep file (TOML: `base`, `[set]`, `[grid]`, `[[plots]]`).
    pub file: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Where the points run: this machine's cores (`local`); `dask` is the Python
    /// package's (`python3 -m tiermem.sweeps`).
    #[arg(long, value_parser = ["local", "dask"])]
    pub engine: Option<String>,
    /// Dask scheduler address (`tcp://host:8786`); implies `--engine dask`.
    #[arg(long)]
    pub address: Option<String>,
    /// Simulations run at once (default: the CPU count).
    #[arg(long)]
    pub workers: Option<u32>,
    /// Override every point's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override every point's simulated duration (`2s`, `500ms`, or seconds).
    #[arg(long, allow_hyphen_values = true, value_parser = crate::parse_seconds)]
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
    if let Some(seeds) = &a.seeds {
        tiermem_lab::seeds::check(seeds).map_err(|m| input(format!("--seeds: {m}")))?;
    }
    let suite = if a.all {
        Some("main".to_string())
    } else {
        a.suite
    };
    cmd_experiment(
        a.name,
        a.out,
        a.list,
        suite,
        a.no_plots,
        Overrides {
            seeds: a.seeds,
            duration_s: a.duration,
        },
    )
}

/// What the command line changes in every experiment it runs.
struct Overrides {
    seeds: Option<Vec<u64>>,
    duration_s: Option<f64>,
}

impl Overrides {
    fn apply(&self, e: &mut experiment::Experiment) -> Result<(), Failure> {
        if let Some(seeds) = &self.seeds {
            e.seeds = seeds.clone();
        }
        if let Some(d) = self.duration_s {
            for v in &mut e.variants {
                tiermem_core::config::set_path(
                    &mut v.config,
                    "duration",
                    toml::Value::String(format!("{d}s")),
                )
                .map_err(input)?;
            }
            e.notes.insert(
                0,
                format!(
                    "Run for {d} simulated seconds per variant (--duration), not the experiment's own length: \
                     a check that it runs, not its results."
                ),
            );
        }
        Ok(())
    }
}

pub fn tune(a: TuneArgs) -> Result<(), Failure> {
    cmd_tune(&a.config, a.metric, a.workload, a.max_weight, a.out)
}

/// `tiermem sweep`: every point of the sweep file's grid, on this machine's cores
/// (tiermem-lab's [`tiermem_lab::sweep`]); the Dask engine is the Python package's.
pub fn sweep(a: SweepArgs) -> Result<(), Failure> {
    if a.engine.as_deref() == Some("dask") || a.address.is_some() {
        return Err(input(
            "--engine dask runs from the Python package: `python3 -m tiermem.sweeps FILE \
             --out DIR --engine dask [--address tcp://host:8786]` (or tiermem.sweep in a notebook)",
        ));
    }
    if a.workers == Some(0) {
        return Err(input("--workers must be at least 1"));
    }
    let file = tiermem_lab::sweep::load(&a.file).map_err(input)?;
    let opts = tiermem_lab::sweep::Options {
        seed: a.seed,
        duration_s: a.duration,
        workers: a.workers.map(|w| w as usize),
    };
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let points = tiermem_lab::sweep::expand(&file.grid).len();
    let pb = progress_bar(points as u64, &file.name);
    let outcome = tiermem_lab::sweep::run(&file, &a.out, opts, &|done, _| {
        if let Some(pb) = &pb {
            pb.set_position(done as u64);
        }
    })
    .map_err(sim_failure)?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    if !a.no_plots && !file.plots.is_empty() {
        render_plots(&a.out);
    }
    println!(
        "tiermem sweep: {} points of {} in {}",
        outcome.points,
        file.name,
        outcome.csv.display()
    );
    Ok(())
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

fn cmd_experiment(
    name: Option<String>,
    out: Option<PathBuf>,
    list: bool,
    suite: Option<String>,
    no_plots: bool,
    overrides: Overrides,
) -> Result<(), Failure> {
    if list {
        print_list();
        return Ok(());
    }
    let out = out.ok_or_else(|| input("--out DIR is required"))?;
    let suite = match suite {
        Some(s) => Some(experiment_file::suite(&s).ok_or_else(|| {
            let names: Vec<String> = experiment_file::suites()
                .into_iter()
                .map(|s| s.name)
                .collect();
            input(format!("no suite {s:?} (suites: {})", names.join(", ")))
        })?),
        None => None,
    };
    let mut runs: Vec<(experiment::Experiment, Option<String>)> = match &suite {
        Some(s) => suite_experiments(s),
        None => {
            let name = name.ok_or_else(|| {
                input("give an experiment name or file (see --list), --suite NAME or --all")
            })?;
            vec![(named_experiment(&name)?, None)]
        }
    };
    for (e, _) in &mut runs {
        overrides.apply(e)?;
    }
    if let Some(s) = &suite {
        eprintln!(
            "suite {}: {} experiments ({})",
            s.name,
            runs.len(),
            s.summary
        );
    }
    let mut outcomes = Vec::with_capacity(runs.len());
    for (e, note) in &runs {
        let dir = if suite.is_some() {
            out.join(&e.name)
        } else {
            out.clone()
        };
        let mut o = run_one_experiment(e, &dir, no_plots)?;
        o.note = note.clone();
        outcomes.push(o);
    }
    if let Some(s) = &suite {
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        write_file(&out.join("README.md"), &index_markdown(s, &outcomes))?;
        eprintln!(
            "suite {} done in {:.0} s: {}",
            s.name,
            outcomes.iter().map(|o| o.seconds).sum::<f64>(),
            out.join("README.md").display()
        );
    }
    Ok(())
}

/// `--list`: every built-in with the suites that run it.
fn print_list() {
    let list = experiment_file::builtins();
    let w = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (n, d) in list {
        let suites = experiment_file::suites_of(n);
        println!("{n:<w$}  [{}]  {d}", suites.join(", "));
    }
    println!();
    for s in experiment_file::suites() {
        println!("--suite {}: {}", s.name, s.summary);
    }
}

/// A suite's experiments as it runs them: its seeds in place of the file's, and its note
/// first among the report's notes.
#[allow(clippy::expect_used, reason = "suites name built-ins (tested)")]
fn suite_experiments(s: &experiment_file::Suite) -> Vec<(experiment::Experiment, Option<String>)> {
    s.runs
        .iter()
        .map(|r| {
            let mut e = experiment_file::builtin(&r.experiment).expect("a built-in");
            if let Some(seeds) = &r.seeds {
                e.seeds = seeds.clone();
            }
            if let Some(n) = &r.note {
                e.notes
                    .insert(0, format!("As the {} suite runs it: {n}.", s.name));
            }
            (e, r.note.clone())
        })
        .collect()
}

/// A built-in experiment by name, or an experiment file by path.
fn named_experiment(name: &str) -> Result<experiment::Experiment, Failure> {
    if let Some(e) = experiment_file::builtin(name) {
        return Ok(e);
    }
    let p = Path::new(name);
    if !p.exists() {
        let names: Vec<&str> = experiment_file::builtins()
            .iter()
            .map(|(n, _)| *n)
            .collect();
        return Err(input(format!(
            "no built-in experiment or file named {name:?} (built-ins: {})",
            names.join(", ")
        )));
    }
    experiment_file::from_file(p).map_err(input)
}

/// What one experiment run came to, for standard error and a suite's index.
struct Outcome {
    name: String,
    headline: String,
    variants: usize,
    /// Seeds every variant ran with (0: once, with its config's seed).
    seeds: usize,
    /// Steps whose published direction holds, of those with one.
    directions: (usize, usize),
    /// Published figures within their tolerance.
    figures: (usize, usize),
    /// Published changes within their tolerance.
    changes: (usize, usize),
    seconds: f64,
    /// How a suite runs it differently from its file.
    note: Option<String>,
}

/// Run one experiment into `dir` with a progress bar, report how it compares with the
/// published results, and draw its plots.
fn run_one_experiment(
    e: &experiment::Experiment,
    dir: &Path,
    no_plots: bool,
) -> Result<Outcome, Failure> {
    let runs = e.variants.len() * e.seeds.len().max(1);
    match e.seeds.len() {
        0 => eprintln!("experiment {}: {} variants", e.name, e.variants.len()),
        1 => eprintln!(
            "experiment {}: {} variants, seed {}",
            e.name,
            e.variants.len(),
            e.seeds[0]
        ),
        n => eprintln!(
            "experiment {}: {} variants × {n} seeds = {runs} runs",
            e.name,
            e.variants.len()
        ),
    }
    let pb = progress_bar(runs as u64, &e.name);
    let t0 = Instant::now();
    let results = experiment::run(e, dir, &|done, n, vname| {
        if let Some(pb) = &pb {
            pb.set_position(done as u64);
            pb.set_message(format!("{} ({vname})", e.name));
        } else {
            eprintln!("  [{done}/{n}] {vname}");
        }
    })
    .map_err(sim_failure)?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let steps = experiment::evaluate_steps(e, &results);
    let outcome = outcome(e, &results, &steps, t0.elapsed().as_secs_f64());
    print_outcome(&outcome, &steps);
    eprintln!(
        "experiment {} done in {:.1} s: {}",
        e.name,
        outcome.seconds,
        dir.join("report.md").display()
    );
    if !no_plots {
        render_plots(dir);
    }
    experiment::note_missing_plots(dir)
        .with_context(|| format!("cannot update {}", dir.join("report.md").display()))?;
    Ok(outcome)
}

fn outcome(
    e: &experiment::Experiment,
    results: &[experiment::VariantResult],
    steps: &[experiment::StepResult],
    seconds: f64,
) -> Outcome {
    let directed = steps
        .iter()
        .filter(|s| s.step.expect != experiment::Expect::Reported);
    Outcome {
        name: e.name.clone(),
        headline: e.description.split(". ").next().unwrap_or("").to_string(),
        variants: results.len(),
        seeds: e.seeds.len(),
        directions: tally(directed.map(|s| s.holds)),
        figures: tally(experiment::agreements(e, results).iter().map(|a| a.within)),
        changes: tally(steps.iter().filter_map(|s| s.within_published)),
        seconds,
        note: None,
    }
}

/// (how many are true, how many there are).
fn tally(verdicts: impl Iterator<Item = bool>) -> (usize, usize) {
    verdicts.fold((0, 0), |(n, t), ok| (n + usize::from(ok), t + 1))
}

/// The run's comparison with the published results on standard error: directions, then
/// figures and changes against their tolerances (`tiermem_lab::published`).
fn print_outcome(o: &Outcome, steps: &[experiment::StepResult]) {
    if o.directions.1 > 0 {
        let failed: Vec<String> = steps
            .iter()
            .filter(|r| !r.holds)
            .map(|r| format!("{} → {} ({})", r.step.from, r.step.to, r.step.metric))
            .collect();
        eprintln!(
            "experiment {}: {} of {} steps follow the published direction{}",
            o.name,
            o.directions.0,
            o.directions.1,
            if failed.is_empty() {
                String::new()
            } else {
                format!("; not: {}", failed.join(", "))
            }
        );
    }
    let mut parts = Vec::new();
    if o.figures.1 > 0 {
        parts.push(format!(
            "{} of {} published figures within tolerance",
            o.figures.0, o.figures.1
        ));
    }
    if o.changes.1 > 0 {
        parts.push(format!(
            "{} of {} published changes within tolerance",
            o.changes.0, o.changes.1
        ));
    }
    if !parts.is_empty() {
        let all_within = o.figures.0 == o.figures.1 && o.changes.0 == o.changes.1;
        eprintln!(
            "experiment {}: {}{}",
            o.name,
            parts.join(", "),
            if all_within {
                ""
            } else {
                " (report.md says why for the others)"
            }
        );
    }
}

/// A suite's `README.md`: one row per experiment, with how it compares with the published
/// results, then what each shows and how the suite runs it.
fn index_markdown(suite: &experiment_file::Suite, outcomes: &[Outcome]) -> String {
    let frac = |(n, t): (usize, usize)| {
        if t == 0 {
            "–".to_string()
        } else {
            format!("{n} of {t}")
        }
    };
    let mut s = format!(
        "# tiermem experiments: the {} suite\n\n{}.\n\n",
        suite.name, suite.summary
    );
    s.push_str(
        "| experiment | variants | published directions held | published figures within tolerance | published changes within tolerance | wall s |\n\
         |---|---:|---|---|---|---:|\n",
    );
    for o in outcomes {
        s.push_str(&format!(
            "| [{}]({}/report.md) | {} | {} | {} | {} | {:.1} |\n",
            o.name,
            o.name,
            match o.seeds {
                0 | 1 => o.variants.to_string(),
                n => format!("{} × {n} seeds", o.variants),
            },
            frac(o.directions),
            frac(o.figures),
            frac(o.changes),
            o.seconds
        ));
    }
    s.push_str(&format!(
        "\nIn all {:.1} s. A figure or change is within tolerance when it is within ±25 % of \
         the published one, or of an experiment's floor for the metric where that is wider \
         (each below half of every published value it applies to); each report lists the \
         floors and says why for the figures outside.\n\n",
        outcomes.iter().map(|o| o.seconds).sum::<f64>()
    ));
    for o in outcomes {
        s.push_str(&format!("- **{}**: {}", o.name, o.headline));
        if let Some(n) = &o.note {
            s.push_str(&format!(" *Run here with {n}.*"));
        }
        s.push('\n');
    }
    if suite.name == "main" {
        s.push_str(
            "\nThe published sizes and every seed: `tiermem experiment --suite full` \
             (`scripts/reproduce.sh --full`).\n",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_tabulates_each_experiment_against_the_published_results() {
        let o = |name: &str, figures, seconds| Outcome {
            name: name.into(),
            headline: format!("{name} shows something"),
            variants: 4,
            seeds: 0,
            directions: (6, 6),
            figures,
            changes: (0, 0),
            seconds,
            note: None,
        };
        let main = experiment_file::suite("main").unwrap();
        let s = index_markdown(
            &main,
            &[o("seed-x", (1, 8), 474.6), o("other", (0, 0), 1.0)],
        );
        assert!(
            s.contains("| [seed-x](seed-x/report.md) | 4 | 6 of 6 | 1 of 8 | – | 474.6 |"),
            "{s}"
        );
        assert!(
            s.contains("| [other](other/report.md) | 4 | 6 of 6 | – | – | 1.0 |"),
            "{s}"
        );
        assert!(s.contains("In all 475.6 s."), "{s}");
        let seeded = Outcome {
            seeds: 4,
            ..o("s", (0, 0), 1.0)
        };
        assert!(index_markdown(&main, &[seeded]).contains("| [s](s/report.md) | 4 × 4 seeds |"));
        assert!(s.contains("- **seed-x**: seed-x shows something"), "{s}");
        let noted = Outcome {
            note: Some("one seed".into()),
            ..o("n", (0, 0), 1.0)
        };
        assert!(index_markdown(&main, &[noted]).contains("*Run here with one seed.*"));
        assert!(s.contains("--suite full"), "{s}");
    }
}
