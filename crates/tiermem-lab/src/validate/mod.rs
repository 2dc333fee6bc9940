//! `tiermem validate`: run the simulator on a scenario and compare it with a kernel's
//! recording of the same scenario (`tiermem workload run`).
//!
//! A scenario is a simulator config with one `synthetic` workload and a `[validate]` table
//! (see [`ValidateSpec`]); its recording is a directory with `timeline.csv` and `meta.json`
//! (default `kernel/` beside the scenario). The simulated machine starts in the recorded
//! state: each node's capacity is the recording's `MemTotal` and the memory other than the
//! workload's that was in use at time 0 (kernel, page cache, other programs) is `reserved`.
//! That is an initial condition, the same for every check; nothing is fitted.
//!
//! Call order: [`Scenario::load`] → [`Scenario::run`] → [`Outcome::write`].

pub mod checks;
pub mod plot;
pub mod qemu;
pub mod timeline;

use checks::{CheckResult, CheckSpec, Tolerances};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tiermem_core::config::{SimConfig, WorkloadConfig};
use tiermem_core::units::{Bytes, PAGE_SIZE};
use timeline::Timeline;

/// Errors of validation; `Input` is bad input (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{file}: {message}")]
    Input { file: String, message: String },
    #[error("{0}")]
    Config(#[from] tiermem_core::ConfigError),
    #[error("{0}")]
    Sim(#[from] tiermem_sim::SimError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl Error {
    pub fn input(file: &str, message: impl Into<String>) -> Self {
        Error::Input {
            file: file.to_string(),
            message: message.into(),
        }
    }
    fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
    pub fn is_input_error(&self) -> bool {
        match self {
            Error::Input { .. } | Error::Config(_) => true,
            Error::Sim(e) => e.is_input_error(),
            Error::Io { .. } => false,
        }
    }
}

/// `[validate]`: where the recording is and what to compare.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidateSpec {
    /// One line on what the scenario shows.
    pub description: String,
    /// The recording directory, relative to the scenario file. Default `kernel`.
    pub kernel: Option<String>,
    pub checks: Vec<CheckSpec>,
}

/// What `tiermem workload run` wrote in `meta.json` (the fields validation reads).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct RecordingMeta {
    pub kernel_release: String,
    pub nodes: Vec<RecordedNode>,
    pub populate_seconds: f64,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RecordedNode {
    pub id: u32,
    pub mem_total_bytes: u64,
    pub mem_free_bytes_at_start: u64,
}

/// A loaded scenario with its recording.
pub struct Scenario {
    pub name: String,
    pub path: PathBuf,
    /// The config as simulated: the scenario's, in the recording's start state.
    pub cfg: SimConfig,
    pub spec: ValidateSpec,
    pub kernel: Timeline,
    pub meta: Option<RecordingMeta>,
    pub kernel_dir: PathBuf,
    /// Repeat recordings of the same scenario (`<kernel dir>-*/` beside the recording,
    /// e.g. `kernel-2/`), by directory name; see [`merge_repeats`].
    pub repeats: Vec<(String, Timeline)>,
}

/// The result of one scenario.
pub struct Outcome {
    pub name: String,
    pub kernel_release: String,
    pub tolerances: Tolerances,
    pub results: Vec<CheckResult>,
    pub sim: Timeline,
    pub sim_csv: String,
    pub kernel: Timeline,
    pub columns: Vec<String>,
    /// Recordings compared: the primary and its repeats.
    pub recordings: usize,
    /// How the checks fare under other seeds (`tiermem validate --seeds`).
    pub seeds: Option<SeedSpread>,
}

/// Each check's passes over several seeds ([`Scenario::seed_spread`]); the scenario's own
/// seed is the first run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SeedSpread {
    pub runs: usize,
    /// Runs in which every check passed.
    pub all_pass: usize,
    /// Per row of the outcome (same order): the runs in which it passed. A row a run does
    /// not produce counts as failed there.
    pub passes: Vec<usize>,
}

impl SeedSpread {
    fn count(rows: &[CheckResult], runs: &[Vec<CheckResult>]) -> SeedSpread {
        let passed =
            |run: &[CheckResult], check: &str| run.iter().any(|r| r.check == check && r.pass);
        SeedSpread {
            runs: runs.len(),
            all_pass: runs.iter().filter(|run| run.iter().all(|r| r.pass)).count(),
            passes: rows
                .iter()
                .map(|row| runs.iter().filter(|run| passed(run, &row.check)).count())
                .collect(),
        }
    }
}

impl Outcome {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.pass).count()
    }
    pub fn all_pass(&self) -> bool {
        self.results.iter().all(|r| r.pass)
    }
    /// ", 3 recordings (a check passes within tolerance of any)" when there are repeats.
    pub fn recordings_note(&self) -> String {
        if self.recordings > 1 {
            format!(
                ", {} recordings (kernel values listed primary first; a check passes within tolerance of any)",
                self.recordings
            )
        } else {
            String::new()
        }
    }
}

/// The scenario file of a path: the file itself, or `DIR/scenario.toml`.
pub fn scenario_file(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("scenario.toml")
    } else {
        p.to_path_buf()
    }
}

impl Scenario {
    /// Read the scenario and its recording (`kernel_dir` overrides `[validate].kernel`).
    pub fn load(path: &Path, kernel_dir: Option<&Path>) -> Result<Scenario, Error> {
        let path = scenario_file(path);
        let origin = path.display().to_string();
        let (cfg, value) = SimConfig::from_file(&path)?;
        let spec: ValidateSpec = match value.get("validate") {
            Some(v) => tiermem_core::config::typed(v.clone(), "validate")
                .map_err(|e| e.in_file(&origin))?,
            None => ValidateSpec::default(),
        };
        let kernel_dir = match kernel_dir {
            Some(d) => d.to_path_buf(),
            None => path
                .parent()
                .unwrap_or(Path::new("."))
                .join(spec.kernel.as_deref().unwrap_or("kernel")),
        };
        let tl_path = kernel_dir.join("timeline.csv");
        let text = std::fs::read_to_string(&tl_path).map_err(|e| {
            Error::input(
                &tl_path.display().to_string(),
                format!("cannot read the kernel recording ({e}); record it with `tiermem workload run {origin} --out {}`", kernel_dir.display()),
            )
        })?;
        let kernel = Timeline::parse(&text, &tl_path.display().to_string())?;
        let repeats = load_repeats(&kernel_dir)?;
        let meta_path = kernel_dir.join("meta.json");
        let meta = match std::fs::read_to_string(&meta_path) {
            Ok(t) => Some(serde_json::from_str::<RecordingMeta>(&t).map_err(|e| {
                Error::input(
                    &meta_path.display().to_string(),
                    format!("not a recording's meta.json: {e}"),
                )
            })?),
            Err(_) => None,
        };
        let name = path
            .parent()
            .and_then(|d| d.file_name())
            .filter(|_| path.file_name().is_some_and(|f| f == "scenario.toml"))
            .or_else(|| path.file_stem())
            .map_or_else(|| origin.clone(), |s| s.to_string_lossy().into_owned());
        let mut sc = Scenario {
            name,
            path,
            cfg,
            spec,
            kernel,
            meta,
            kernel_dir,
            repeats,
        };
        sc.apply_start_state()?;
        Ok(sc)
    }

    /// Capacity = recorded `MemTotal`; reserved = what was in use at time 0 besides the
    /// workload's own pages (`node<N>_used_pages` of the recording's first row); the kernel
    /// release modelled = the recorded one unless the scenario names one.
    fn apply_start_state(&mut self) -> Result<(), Error> {
        let Some(meta) = &self.meta else {
            return Ok(());
        };
        if self.cfg.kernel.release.is_none() {
            self.cfg.kernel.release =
                tiermem_core::release::KernelRelease::parse(&meta.kernel_release).ok();
        }
        let first = &self.kernel.rows[0];
        let pagesets = std::fs::read_to_string(self.kernel_dir.join("zoneinfo.txt"))
            .map(|t| pageset_pages(&t))
            .unwrap_or_default();
        for (i, node) in self.cfg.machine.nodes.iter_mut().enumerate() {
            let Some(rec) = meta.nodes.iter().find(|n| n.id as usize == i) else {
                continue;
            };
            let used = self
                .kernel
                .column(&format!("node{i}_used_pages"))
                .and_then(|j| first[j])
                .unwrap_or(0.0) as u64
                * PAGE_SIZE;
            node.capacity = Bytes(rec.mem_total_bytes);
            let in_use = rec
                .mem_total_bytes
                .saturating_sub(rec.mem_free_bytes_at_start);
            // MemFree leaves out the pagesets' pages: they are free, not reserved.
            if node.pagesets.is_none() {
                let (count, high) = pagesets.get(&(i as u32)).copied().unwrap_or((0, 0));
                node.pagesets = Some(Bytes(count * PAGE_SIZE));
                node.pagesets_high = Some(Bytes(high * PAGE_SIZE));
            }
            let pcp = node.pagesets.map_or(0, |b| b.0);
            node.reserved = Some(Bytes(in_use.saturating_sub(used).saturating_sub(pcp)));
        }
        self.cfg.validate()?;
        Ok(())
    }

    /// The tolerances of this scenario (see [`checks`]).
    pub fn tolerances(&self) -> Tolerances {
        let (pages, workload) = self
            .cfg
            .workloads
            .iter()
            .find_map(|w| match w {
                WorkloadConfig::Synthetic(s) => {
                    Some((s.regions.iter().map(|r| r.pages()).sum::<u64>(), s))
                }
                _ => None,
            })
            .map_or((0, None), |(p, s)| (p, Some(s)));
        let populated: u64 = workload
            .map(|s| {
                s.regions
                    .iter()
                    .filter(|r| r.populate)
                    .map(|r| r.pages())
                    .sum()
            })
            .unwrap_or(pages);
        let n = &self.cfg.kernel.numa;
        let scan_pages = ((n.scan_size_mb as u64) << 20) / PAGE_SIZE;
        let windows = populated.div_ceil(scan_pages.max(1)).max(1);
        let floor_ms = 1000 / (2560 / n.scan_size_mb.clamp(1, 2560) as u64).max(1);
        let scan_ms = (n.scan_period_min_ms as u64 / windows).max(floor_ms);
        Tolerances {
            count_rel: 0.10,
            count_abs: (pages as f64 * 0.01).max(1.0),
            time_s: scan_ms as f64 / 1000.0 + self.cfg.sim.sample_interval.secs_f64(),
            exact_rel: 0.01,
        }
    }

    /// Simulate and compare.
    pub fn run(&self) -> Result<Outcome, Error> {
        let out = tiermem_sim::run_config(&self.cfg)?;
        self.compare(out.timeline_csv)
    }

    /// The scenario under `n` − 1 further seeds (the scenario's seed + 1, + 2, …), run in
    /// parallel: how often each check passes. The kernel's own runs differ from boot to
    /// boot (DAMON's random splits, where a scan lands), and so do the simulator's from
    /// seed to seed; a check that passes under one seed only is luck, not fidelity.
    pub fn seed_spread(&self, outcome: &Outcome, n: u64) -> Result<SeedSpread, Error> {
        let configs: Vec<SimConfig> = (1..n)
            .map(|k| {
                let mut cfg = self.cfg.clone();
                cfg.seed = self.cfg.seed.wrapping_add(k);
                cfg
            })
            .collect();
        let mut runs = vec![outcome.results.clone()];
        for r in crate::experiment::run_all(&configs, &|_, _, _| {}) {
            runs.push(self.compare(r?.timeline_csv)?.results);
        }
        Ok(SeedSpread::count(&outcome.results, &runs))
    }

    /// The scenario under both engines, each under `seeds` seeds (the scenario's and the
    /// next ones), all in parallel: each check's simulated value under the access engine
    /// and under the page-event engine, as means over the seeds
    /// (`tiermem validate --compare-engines`). The kernel recording plays no part.
    /// `None` when the page-event engine does not apply (KSM); with the rows, how many
    /// threads ran as page events in the first events run.
    pub fn compare_engines(&self, seeds: u64) -> Result<Option<(Vec<EngineRow>, usize)>, Error> {
        use tiermem_core::config::EngineKind;
        if self.cfg.kernel.ksm.is_some() {
            return Ok(None);
        }
        let seeds = seeds.max(1);
        let configs: Vec<SimConfig> = [EngineKind::Access, EngineKind::Events]
            .into_iter()
            .flat_map(|e| {
                (0..seeds).map(move |k| {
                    let mut cfg = self.cfg.clone();
                    cfg.sim.engine = e;
                    cfg.seed = self.cfg.seed.wrapping_add(k);
                    cfg
                })
            })
            .collect();
        let (mut runs, mut event_threads) = (Vec::new(), Vec::new());
        for r in crate::experiment::run_all(&configs, &|_, _, _| {}) {
            let r = r?;
            event_threads.push(r.event_threads);
            runs.push(self.compare(r.timeline_csv)?.results);
        }
        let events = runs.split_off(seeds as usize);
        let floor = self.tolerances().count_abs;
        let rows = (0..runs[0].len())
            .map(|i| EngineRow::new(&runs, &events, i, floor))
            .collect();
        Ok(Some((rows, event_threads[seeds as usize])))
    }

    /// Compare a simulated timeline with the recordings.
    fn compare(&self, timeline_csv: String) -> Result<Outcome, Error> {
        let sim = Timeline::parse(&timeline_csv, "simulated timeline")?;
        let tol = self.tolerances();
        let mut results = Vec::new();
        let mut columns = Vec::new();
        let kernels: Vec<&Timeline> = std::iter::once(&self.kernel)
            .chain(self.repeats.iter().map(|(_, k)| k))
            .collect();
        for c in &self.spec.checks {
            if let CheckSpec::ScanPasses { workload } = c {
                results.extend(checks::scan_pass_rows(workload, &kernels, &sim, &tol));
            } else {
                let primary = checks::evaluate(c, &self.kernel, &sim, &tol);
                let repeats: Vec<Vec<CheckResult>> = self
                    .repeats
                    .iter()
                    .map(|(_, k)| checks::evaluate(c, k, &sim, &tol))
                    .collect();
                results.extend(merge_repeats(primary, &repeats));
            }
            for col in c.columns() {
                if !columns.contains(&col) {
                    columns.push(col);
                }
            }
        }
        Ok(Outcome {
            name: self.name.clone(),
            kernel_release: self
                .meta
                .as_ref()
                .map(|m| m.kernel_release.clone())
                .unwrap_or_default(),
            tolerances: tol,
            results,
            sim,
            sim_csv: timeline_csv,
            kernel: self.kernel.clone(),
            columns,
            recordings: 1 + self.repeats.len(),
            seeds: None,
        })
    }
}

/// Rows as aligned text columns: the first left-aligned, the others right-aligned.
pub fn text_table<const N: usize>(rows: &[[String; N]]) -> String {
    let mut w = [0usize; N];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(w[i] - c.chars().count());
                if i == 0 {
                    format!("{c}{pad}")
                } else {
                    format!("{pad}{c}")
                }
            })
            .collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
    }
    s
}

/// The page-event engine's agreement with the access engine that `--compare-engines` asks
/// for (issue 19): ±3 %.
pub const ENGINE_TOLERANCE: f64 = 0.03;

/// One check's simulated value under the two engines, over seeds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineRow {
    pub check: String,
    /// The mean over the seeds (the first seed's text where the row has no number).
    pub access: String,
    pub events: String,
    /// (events − access) / |access| of the means, where the row has numbers.
    pub rel: Option<f64>,
    /// Two standard errors of the difference of the means, relative to |access| (seed
    /// noise; 0 with one seed).
    pub noise: Option<f64>,
    /// The means differ by at most [`ENGINE_TOLERANCE`], by at most the scenario's absolute
    /// count floor (1 % of its pages: counts too small for a relative test), or by no
    /// more than the seeds' own noise; a row without numbers agrees when its texts do.
    pub agrees: bool,
}

/// Mean and variance of the mean of row `i`'s simulated values over runs (`None` when a
/// run has no number there).
fn mean_and_var(runs: &[Vec<CheckResult>], i: usize) -> Option<(f64, f64)> {
    let xs: Vec<f64> = runs
        .iter()
        .map(|r| r.get(i).and_then(|c| c.values).map(|v| v.1))
        .collect::<Option<_>>()?;
    let (mean, sd) = crate::seeds::mean_sd(&xs)?;
    // The variance of the mean: the sample variance over n.
    Some((mean, sd.map_or(0.0, |sd| sd * sd / xs.len() as f64)))
}

impl EngineRow {
    fn new(access: &[Vec<CheckResult>], events: &[Vec<CheckResult>], i: usize, floor: f64) -> Self {
        let text = |runs: &[Vec<CheckResult>]| {
            runs.first()
                .and_then(|r| r.get(i))
                .map_or(String::new(), |c| c.sim.clone())
        };
        let check = access
            .first()
            .and_then(|r| r.get(i))
            .map_or(String::new(), |c| c.check.clone());
        match (mean_and_var(access, i), mean_and_var(events, i)) {
            (Some((a, va)), Some((e, ve))) => {
                let scale = a.abs().max(f64::MIN_POSITIVE);
                let rel = if a == e { 0.0 } else { (e - a) / scale };
                let noise = 2.0 * (va + ve).sqrt();
                let diff = (e - a).abs();
                EngineRow {
                    check,
                    access: fmt_mean(a),
                    events: fmt_mean(e),
                    rel: Some(rel),
                    noise: Some(noise / scale),
                    agrees: rel.abs() <= ENGINE_TOLERANCE || diff <= floor || diff <= noise,
                }
            }
            _ => {
                let (a, e) = (text(access), text(events));
                EngineRow {
                    check,
                    agrees: a == e,
                    access: a,
                    events: e,
                    rel: None,
                    noise: None,
                }
            }
        }
    }
}

fn fmt_mean(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:.4e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl Outcome {
    /// The comparison as a text table.
    pub fn table(&self) -> String {
        let mut rows = vec![[
            "check".to_string(),
            "kernel".into(),
            "simulated".into(),
            "difference".into(),
            "tolerance".into(),
            "".into(),
            if self.seeds.is_some() { "seeds" } else { "" }.into(),
        ]];
        for (i, r) in self.results.iter().enumerate() {
            let spread = self.seeds.as_ref().map_or(String::new(), |sp| {
                format!("{}/{}", sp.passes.get(i).copied().unwrap_or(0), sp.runs)
            });
            rows.push([
                r.check.clone(),
                r.kernel.clone(),
                r.sim.clone(),
                r.diff.clone(),
                r.tolerance.clone(),
                if r.pass { "ok" } else { "FAIL" }.into(),
                spread,
            ]);
        }
        text_table(&rows)
    }

    /// Write `DIR/<scenario>/`: `results.json`, `report.md`, `overlay.svg` and the simulated
    /// `timeline.csv`.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, Error> {
        let d = dir.join(&self.name);
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        let put = |f: &str, text: String| -> Result<(), Error> {
            let p = d.join(f);
            std::fs::write(&p, text).map_err(|e| Error::io(&p, e))
        };
        put("timeline.csv", self.sim_csv.clone())?;
        let json = serde_json::json!({
            "scenario": self.name,
            "kernel_release": self.kernel_release,
            "tiermem_version": env!("CARGO_PKG_VERSION"),
            "tolerances": self.tolerances,
            "recordings": self.recordings,
            "passed": self.passed(),
            "checks": self.results,
            "seeds": self.seeds,
        });
        put("results.json", format!("{json:#}\n"))?;
        let svg = plot::overlay(&self.name, &self.kernel, &self.sim, &self.columns);
        put("overlay.svg", svg)?;
        put(
            "report.md",
            format!(
                "# {}\n\nKernel {}{}; {} of {} checks within tolerance.\n\n```\n{}```\n\n![overlay](overlay.svg)\n",
                self.name,
                self.kernel_release,
                self.recordings_note(),
                self.passed(),
                self.results.len(),
                self.table()
            ),
        )?;
        Ok(d)
    }
}

/// The repeat recordings beside `kernel_dir`: every `<name>-<number>` directory holding a
/// `timeline.csv` (`kernel-2/`, `kernel-3/`), in name order. Other suffixes are not
/// repeats: `kernel-trace/` is a traced run, slowed by its tracing.
fn load_repeats(kernel_dir: &Path) -> Result<Vec<(String, Timeline)>, Error> {
    let (Some(parent), Some(name)) = (kernel_dir.parent(), kernel_dir.file_name()) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{}-", name.to_string_lossy());
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|f| {
                f.to_string_lossy()
                    .strip_prefix(&prefix)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            }) && p.join("timeline.csv").is_file()
        })
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let f = d.join("timeline.csv");
            let text = std::fs::read_to_string(&f).map_err(|e| Error::io(&f, e))?;
            let tl = Timeline::parse(&text, &f.display().to_string())?;
            let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
            Ok((name.unwrap_or_default(), tl))
        })
        .collect()
}

/// One check's rows against the primary recording and its repeats, as one set of rows.
///
/// The kernel does not repeat itself exactly: when DAMON's random region splits meet the
/// cold set, or a scan lands, differs from boot to boot. With repeat recordings a row
/// passes when the simulator is within tolerance of at least one recording, i.e. as close
/// to the kernel as some run of the kernel; the row lists every recording's value
/// (primary first) and shows the difference to the first recording it matches. When the
/// repeats give a different row (another worst burst), the primary's row stands alone.
/// Scan passes are matched pass by pass instead ([`checks::scan_pass_rows`]).
pub fn merge_repeats(primary: Vec<CheckResult>, repeats: &[Vec<CheckResult>]) -> Vec<CheckResult> {
    primary
        .into_iter()
        .enumerate()
        .map(|(j, row)| {
            let others: Vec<CheckResult> = repeats
                .iter()
                .filter_map(|rs| rs.get(j).filter(|r| r.check == row.check).cloned())
                .collect();
            if others.is_empty() {
                return row;
            }
            checks::any_of(row, others)
        })
        .collect()
}

/// Pages in the per-CPU pagesets per node and their `high` marks: the sums of the
/// `count:` and `high:` lines under each `Node N, zone Z` section of `/proc/zoneinfo`.
fn pageset_pages(zoneinfo: &str) -> std::collections::BTreeMap<u32, (u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for z in tiermem_core::zoneinfo::parse(zoneinfo) {
        let e: &mut (u64, u64) = out.entry(z.node).or_insert((0, 0));
        e.0 += z.pcp_count;
        e.1 += z.pcp_high;
    }
    out
}

#[cfg(test)]
mod pageset_tests {
    #[test]
    fn pagesets_are_summed_per_node_from_zoneinfo() {
        let z = "Node 0, zone      DMA\n  pagesets\n    cpu: 0\n              count: 0\n              high:  0\n\
                 Node 0, zone    DMA32\n  pagesets\n    cpu: 0\n              count: 3968\n              high:  15263\n              batch: 63\n  vm stats threshold: 16\n    cpu: 1\n              count: 1483\n              high:  6307\n\
                 Node 1, zone    DMA32\n  pagesets\n    cpu: 0\n              count: 12\n              high:  100\n";
        let p = super::pageset_pages(z);
        assert_eq!(p[&0], (5451, 21570));
        assert_eq!(p[&1], (12, 100));
    }
}

#[cfg(test)]
mod repeat_tests {
    use super::checks::CheckResult;

    fn row(check: &str, kernel: &str, pass: bool) -> CheckResult {
        CheckResult {
            check: check.into(),
            kernel: kernel.into(),
            sim: "100".into(),
            diff: format!("vs {kernel}"),
            tolerance: "±10".into(),
            pass,
            values: kernel.parse().ok().map(|k| (k, 100.0)),
        }
    }

    #[test]
    fn a_row_passes_within_tolerance_of_any_recording_and_lists_them_all() {
        let primary = vec![row("final x", "50", false), row("final y", "95", true)];
        let repeats = vec![
            vec![row("final x", "104", true), row("final y", "60", false)],
            vec![row("final x", "70", false), row("final y", "99", true)],
        ];
        let m = super::merge_repeats(primary, &repeats);
        assert!(m[0].pass && m[1].pass);
        assert_eq!(m[0].kernel, "50 / 104 / 70");
        assert_eq!(
            m[0].diff, "vs 104",
            "the difference to the recording it matches"
        );
        assert_eq!(m[1].diff, "vs 95", "the primary first when it matches");
        let none = super::merge_repeats(
            vec![row("final x", "50", false)],
            &[vec![row("final x", "60", false)]],
        );
        assert!(!none[0].pass);
        assert_eq!(
            none[0].diff, "vs 50",
            "failing rows show the primary's difference"
        );
        // Rows that do not line up (another number of scan passes) stand alone.
        let odd = super::merge_repeats(
            vec![row("pass 2", "3 s", false)],
            &[vec![row("pass 1", "1 s", true)]],
        );
        assert_eq!(odd[0].kernel, "3 s");
        assert!(!odd[0].pass);
    }

    #[test]
    fn a_value_between_the_recordings_passes_and_says_so() {
        let m = super::merge_repeats(
            vec![row("final x", "50", false)],
            &[vec![row("final x", "150", false)]],
        );
        assert!(m[0].pass, "100 lies between the recordings' 50 and 150");
        assert_eq!(m[0].diff, "within the recordings' range");
        assert_eq!(m[0].kernel, "50 / 150");
        let one = super::merge_repeats(vec![row("final x", "50", false)], &[]);
        assert!(!one[0].pass, "a single recording has no spread");
        let mut text = row("final x", "50", false);
        text.values = None;
        let mut other = row("final x", "150", false);
        other.values = None;
        assert!(
            !super::merge_repeats(vec![text], &[vec![other]])[0].pass,
            "rows without values (exact outcomes) need a recording within tolerance"
        );
    }
}
