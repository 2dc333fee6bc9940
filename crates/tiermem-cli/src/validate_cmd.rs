//! `tiermem validate`: the simulator against kernel recordings, scenario by scenario.
//! Thin: load, run, print the table, write the report; exit 1 when a check fails.

use clap::Args;
use std::path::PathBuf;
use tiermem_lab::validate::{qemu, Error, Scenario};

#[derive(Args)]
pub struct ValidateArgs {
    /// Scenario files or directories (a directory holds `scenario.toml`, or scenario
    /// directories: `tiermem validate validation/` runs the whole suite).
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// The kernel recording (default: the scenario's `[validate].kernel`, else `kernel/`
    /// beside it). Only with one scenario.
    #[arg(long)]
    kernel: Option<PathBuf>,
    /// Write each scenario's report, results.json, overlay.svg and simulated timeline to
    /// DIR/<scenario>/.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also run each scenario under N − 1 further seeds (its seed + 1, + 2, …) and show in
    /// how many of the N runs each check passes. The verdict and the exit code stay the
    /// scenario's own seed's.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    seeds: u64,
    /// Run each scenario under both engines (`sim.engine = "access"` and `"events"`), each
    /// under --seeds seeds, and print each check's mean simulated value under both, with
    /// their difference and the seeds' noise; exit 1 when a check's means differ by more
    /// than 3 %, than 1 % of the scenario's pages (small counts) and than two standard
    /// errors. The kernel recordings play no part; KSM scenarios, where the page-event
    /// engine does not apply, are skipped.
    #[arg(long)]
    compare_engines: bool,
    /// Print the QEMU arguments of the scenario's machine and exit (used by
    /// validation/record.sh).
    #[arg(long, hide = true)]
    qemu_args: bool,
}

/// Scenario paths: files, `DIR/scenario.toml`, or each `DIR/*/scenario.toml` of a suite.
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() && !p.join("scenario.toml").exists() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|rd| {
                    rd.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|d| d.join("scenario.toml").exists())
                        .collect()
                })
                .unwrap_or_default();
            subs.sort();
            out.extend(subs);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Returns whether every check of every scenario passed.
pub fn run(a: ValidateArgs) -> Result<bool, Error> {
    let paths = expand(&a.scenarios);
    if paths.is_empty() {
        return Err(Error::input(
            &a.scenarios[0].display().to_string(),
            "no scenario.toml found",
        ));
    }
    if a.kernel.is_some() && paths.len() > 1 {
        return Err(Error::input(
            "--kernel",
            "names one recording: give one scenario",
        ));
    }
    if a.qemu_args {
        let f = tiermem_lab::validate::scenario_file(&paths[0]);
        let (cfg, _) = tiermem_core::config::SimConfig::from_file(&f)?;
        for arg in qemu::args(&cfg.machine) {
            println!("{arg}");
        }
        return Ok(true);
    }
    if a.compare_engines {
        return compare_engines(&paths, a.seeds);
    }
    let (mut scenarios_ok, mut checks, mut passed) = (0, 0, 0);
    let mut errors = Vec::new();
    let mut summary = if a.seeds > 1 {
        String::from("| scenario | checks within tolerance | failing | seeds passing every check |\n|---|---|---|---|\n")
    } else {
        String::from("| scenario | checks within tolerance | failing |\n|---|---|---|\n")
    };
    let mut details = String::new();
    for p in &paths {
        let t0 = std::time::Instant::now();
        let run = |sc: Scenario| -> Result<_, Error> {
            let mut o = sc.run()?;
            if a.seeds > 1 {
                o.seeds = Some(sc.seed_spread(&o, a.seeds)?);
            }
            Ok(o)
        };
        let o = match Scenario::load(p, a.kernel.as_deref()).and_then(run) {
            Ok(o) => o,
            Err(e) if paths.len() > 1 => {
                println!("== {}: {e}\n", p.display());
                errors.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        println!(
            "== {} (kernel {}{}; simulated in {:.1} s)",
            o.name,
            if o.kernel_release.is_empty() {
                "?"
            } else {
                &o.kernel_release
            },
            o.recordings_note(),
            t0.elapsed().as_secs_f64()
        );
        print!("{}", o.table());
        let spread = o.seeds.as_ref().map_or(String::new(), |sp| {
            format!("{} of {}", sp.all_pass, sp.runs)
        });
        if !spread.is_empty() {
            println!("every check within tolerance under {spread} seeds");
        }
        if let Some(dir) = &a.out {
            let d = o.write(dir)?;
            println!("report: {}", d.join("report.md").display());
        }
        println!();
        checks += o.results.len();
        passed += o.passed();
        scenarios_ok += usize::from(o.all_pass());
        let failing: Vec<&str> = o
            .results
            .iter()
            .filter(|r| !r.pass)
            .map(|r| r.check.as_str())
            .collect();
        summary.push_str(&format!(
            "| [{}](#{}) | {} of {} | {} |{}\n",
            o.name,
            o.name,
            o.passed(),
            o.results.len(),
            failing.join("; "),
            if spread.is_empty() {
                String::new()
            } else {
                format!(" {spread} |")
            }
        ));
        let note = o.recordings_note();
        let note = note.trim_start_matches(", ");
        let note = if note.is_empty() {
            String::new()
        } else {
            format!("{note}.\n\n")
        };
        details.push_str(&format!(
            "### {}\n\n{note}```\n{}```\n\n",
            o.name,
            o.table()
        ));
    }
    if let Some(dir) = &a.out {
        let p = dir.join("summary.md");
        let text = format!(
            "{passed} of {checks} checks within tolerance; {scenarios_ok} of {} scenarios pass.\n\n{summary}\n{details}",
            paths.len()
        );
        std::fs::write(&p, text).map_err(|e| Error::Io {
            path: p.display().to_string(),
            source: e,
        })?;
        println!("summary: {}", p.display());
    }
    println!(
        "{scenarios_ok} of {} scenarios pass; {passed} of {checks} checks within tolerance{}",
        paths.len(),
        if errors.is_empty() {
            String::new()
        } else {
            format!("; {} scenario(s) could not run", errors.len())
        }
    );
    Ok(passed == checks && errors.is_empty())
}

/// `--compare-engines`: every scenario under both engines; whether every check agrees.
fn compare_engines(paths: &[PathBuf], seeds: u64) -> Result<bool, Error> {
    let (mut rows_ok, mut rows, mut scenarios_ok, mut compared) = (0, 0, 0, 0);
    for p in paths {
        let t0 = std::time::Instant::now();
        let sc = Scenario::load(p, None)?;
        let Some((r, event_threads)) = sc.compare_engines(seeds)? else {
            println!(
                "== {}: skipped (KSM: the page-event engine does not apply)\n",
                sc.name
            );
            continue;
        };
        println!(
            "== {} (both engines, {seeds} seed(s) each, in {:.1} s; {event_threads} thread(s) on page events)",
            sc.name,
            t0.elapsed().as_secs_f64()
        );
        let mut table = vec![[
            "check".to_string(),
            "access".into(),
            "events".into(),
            "difference".into(),
            "seed noise".into(),
            "".into(),
        ]];
        let pct = |x: Option<f64>, sign: bool| {
            x.map_or("-".into(), |x| {
                if sign {
                    format!("{:+.1} %", 100.0 * x)
                } else {
                    format!("±{:.1} %", 100.0 * x)
                }
            })
        };
        for row in &r {
            table.push([
                row.check.clone(),
                row.access.clone(),
                row.events.clone(),
                pct(row.rel, true),
                pct(row.noise, false),
                if row.agrees { "ok" } else { "DIFFERS" }.into(),
            ]);
        }
        print!("{}", tiermem_lab::validate::text_table(&table));
        println!();
        let ok = r.iter().filter(|x| x.agrees).count();
        rows += r.len();
        rows_ok += ok;
        compared += 1;
        scenarios_ok += usize::from(ok == r.len());
    }
    println!(
        "{scenarios_ok} of {compared} scenarios agree ({} skipped); {rows_ok} of {rows} checks within {:.0} % between the engines, or within the seeds' noise",
        paths.len() - compared,
        100.0 * tiermem_lab::validate::ENGINE_TOLERANCE
    );
    Ok(rows_ok == rows)
}
