//! Experiments: named sets of config variants run on the simulator, with metrics, the
//! published numbers beside them, a Markdown report and plot specifications.
//!
//! An experiment is data ([`Experiment`]): a list of variants, each a fully resolved TOML
//! config, plus which metrics to tabulate and which plots to draw. Every experiment is a
//! TOML file (the built-ins are `experiments/*.toml`, embedded; the format is in
//! [`crate::experiment_file`]), for example:
//!
//! ```toml
//! name = "my-experiment"
//! description = "what it shows"
//! base = "config.toml"            # relative to this file (or an inline [base] table)
//! metrics = ["throughput_accesses_per_s", "workloads[0].score_accesses_per_s"]
//! [[variants]]
//! name = "wsf-10"
//! set = { "kernel.watermark_scale_factor" = 10 }
//! published = { "throughput_accesses_per_s" = 1.0e8 }
//! ```
//!
//! Metrics are paths into `summary.json` (plus derived metrics some built-ins add).
//! Results go to `OUT/results.json`, `OUT/report.md` and `OUT/variants/<name>/`
//! (`config.toml`, `summary.json`, `timeline.csv`); PNG plots are drawn from
//! `results.json` by [`crate::plots`] (or the Python package's `tiermem.plots`).

use crate::published::{verdict, Agreement};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use tiermem_core::config::SimConfig;
use tiermem_core::topology::Topology;
use tiermem_sim::engine::Simulation;
use tiermem_sim::SimError;

/// One variant of an experiment.
#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    /// Resolved config value.
    pub config: toml::Value,
    /// Published figures for metrics of this variant.
    pub published: BTreeMap<String, f64>,
    /// Extra labels (e.g. a sweep coordinate) copied into the metrics.
    pub labels: BTreeMap<String, f64>,
}

/// Metrics computed after a run from the summary and the topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Derive {
    /// Loaded-latency check: the curve's latency at the measured bandwidth of `node`, and
    /// the relative error of the measured latency against it.
    LoadedLatencyCurve { node: usize, read_fraction: f64 },
    /// Against an earlier variant (the baseline): `memory_saving_pct` (memused.avg, see
    /// [`memory_saving_pct`]),
    /// `slowdown_pct` (mean over workloads with a runtime), and kdamond CPU
    /// (`damon_cpu_pct`, `damon_monitor_cpu_pct`; `kdamond_cpu_per_run_pct`, the mean over
    /// the workloads' runs).
    RelativeToBaseline { baseline: String },
    /// A row named by the entry that repeats the variant of `among` with the highest
    /// `metric` (the tuner's pick), with its own published figures.
    BestOf {
        among: Vec<String>,
        metric: String,
        published: BTreeMap<String, f64>,
    },
    /// `key` = the variant's `metric` divided by the `baseline` variant's (after `BestOf`
    /// rows exist, so they can be related too).
    Relative {
        baseline: String,
        metric: String,
        key: String,
    },
}

/// A plot request (drawn by [`crate::plots`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    pub file: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    #[serde(default)]
    pub x: Option<String>,
    pub y: Vec<String>,
    #[serde(default)]
    pub variants: Option<Vec<String>>,
    #[serde(default)]
    pub xlabel: Option<String>,
    #[serde(default)]
    pub ylabel: Option<String>,
    #[serde(default)]
    pub logx: bool,
    #[serde(rename = "kind", default)]
    pub timeline_kind: Option<String>,
}

/// The direction a [`Step`] is expected to take, from the published results.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// `to` > `from`.
    Higher,
    /// `to` < `from`.
    Lower,
    /// `to` ≥ `from`.
    NotLower,
    /// `to` ≤ `from`.
    NotHigher,
    /// `to` ≤ fraction × `from`.
    AtMostFraction(f64),
    /// `to` ≥ factor × `from`.
    AtLeastFactor(f64),
    /// |`to` − `from`| ≤ fraction × |`from`|.
    Within(f64),
    /// No direction is expected: the change is reported only.
    Reported,
}

impl Expect {
    fn holds(self, from: f64, to: f64) -> bool {
        match self {
            Expect::Higher => to > from,
            Expect::Lower => to < from,
            Expect::NotLower => to >= from,
            Expect::NotHigher => to <= from,
            Expect::AtMostFraction(f) => to <= f * from,
            Expect::AtLeastFactor(f) => to >= f * from,
            Expect::Within(f) => (to - from).abs() <= f * from.abs(),
            Expect::Reported => true,
        }
    }

    fn describe(self) -> String {
        match self {
            Expect::Higher => "higher".into(),
            Expect::Lower => "lower".into(),
            Expect::NotLower => "not lower".into(),
            Expect::NotHigher => "not higher".into(),
            Expect::AtMostFraction(f) => format!("at most {f}×"),
            Expect::AtLeastFactor(f) => format!("at least {f}×"),
            Expect::Within(f) => format!("within ±{} %", f * 100.0),
            Expect::Reported => "–".into(),
        }
    }

    /// The experiment-file spelling ([`Expect::parse`] reads it back).
    pub fn spelling(self) -> String {
        match self {
            Expect::Higher => "higher".into(),
            Expect::Lower => "lower".into(),
            Expect::NotLower => "not-lower".into(),
            Expect::NotHigher => "not-higher".into(),
            Expect::Reported => "reported".into(),
            Expect::AtMostFraction(f) => format!("at-most:{f}"),
            Expect::AtLeastFactor(f) => format!("at-least:{f}"),
            Expect::Within(f) => format!("within:{f}"),
        }
    }

    /// Parse the experiment-file spelling: `higher`, `lower`, `not-lower`, `not-higher`,
    /// `at-most:F`, `at-least:F`, `within:F` or `reported`.
    pub fn parse(s: &str) -> Option<Expect> {
        Some(match s {
            "higher" => Expect::Higher,
            "lower" => Expect::Lower,
            "not-lower" => Expect::NotLower,
            "not-higher" => Expect::NotHigher,
            "reported" => Expect::Reported,
            _ => {
                let (kind, f) = s.split_once(':')?;
                let f: f64 = f.parse().ok()?;
                if !(f.is_finite() && f > 0.0) {
                    return None;
                }
                match kind {
                    "at-most" => Expect::AtMostFraction(f),
                    "at-least" => Expect::AtLeastFactor(f),
                    "within" => Expect::Within(f),
                    _ => return None,
                }
            }
        })
    }
}

/// A step between two variants that the report tabulates: the change of `metric` from
/// `from` to `to` in per cent, beside the published change, and whether the expected
/// direction holds.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub from: String,
    pub to: String,
    pub metric: String,
    pub published_pct: Option<f64>,
    pub expect: Expect,
    /// Why the simulated change differs from the published one (the report shows it when
    /// the change is outside its tolerance, [`crate::published`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<String>,
}

impl Step {
    pub fn new(
        from: impl Into<String>,
        to: impl Into<String>,
        metric: impl Into<String>,
        published_pct: Option<f64>,
        expect: Expect,
    ) -> Step {
        Step {
            from: from.into(),
            to: to.into(),
            metric: metric.into(),
            published_pct,
            expect,
            explain: None,
        }
    }

    /// The change from `a` to `b`, per cent (None from 0).
    pub fn pct(a: f64, b: f64) -> Option<f64> {
        (a != 0.0).then(|| (b - a) / a * 100.0)
    }
}

/// A step's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    #[serde(flatten)]
    pub step: Step,
    /// Simulated change, per cent (None when a value is missing or `from` is 0).
    pub simulated_pct: Option<f64>,
    pub holds: bool,
    /// Whether the simulated change is within its tolerance of the published one
    /// ([`crate::published`])
    /// (None without a published change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_published: Option<bool>,
    /// Over several seeds: the change in each seed (its `to` against its `from`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_seed: Option<StepSeeds>,
}

/// A step's change seed by seed (the step itself is judged on the means).
#[derive(Clone, Debug, Serialize)]
pub struct StepSeeds {
    /// Standard deviation of the per-seed changes, percentage points.
    pub sd_pct: Option<f64>,
    /// Seeds in which the expected direction holds.
    pub holds: usize,
    /// Seeds with both values.
    pub seeds: usize,
}

/// The step's change in each seed that produced both values.
fn step_spread(st: &Step, from: &VariantResult, to: &VariantResult) -> Option<StepSeeds> {
    if from.per_seed.is_empty() {
        return None;
    }
    let pairs: Vec<(f64, f64)> = from
        .per_seed
        .iter()
        .filter_map(|(seed, fm)| {
            let (_, tm) = to.per_seed.iter().find(|(s, _)| s == seed)?;
            Some((*fm.get(&st.metric)?, *tm.get(&st.metric)?))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let pcts: Vec<f64> = pairs.iter().filter_map(|&(a, b)| Step::pct(a, b)).collect();
    Some(StepSeeds {
        sd_pct: crate::seeds::mean_sd(&pcts).and_then(|(_, sd)| sd),
        holds: pairs
            .iter()
            .filter(|(a, b)| st.expect.holds(*a, *b))
            .count(),
        seeds: pairs.len(),
    })
}

/// Evaluate the steps of an experiment on its results.
pub fn evaluate_steps(exp: &Experiment, results: &[VariantResult]) -> Vec<StepResult> {
    let row = |v: &str| results.iter().find(|r| r.name == v);
    let value = |v: &str, m: &str| row(v).and_then(|r| r.metrics.get(m).copied());
    exp.steps
        .iter()
        .map(|st| {
            let (a, b) = (value(&st.from, &st.metric), value(&st.to, &st.metric));
            let per_seed = match (row(&st.from), row(&st.to)) {
                (Some(f), Some(t)) => step_spread(st, f, t),
                _ => None,
            };
            let (simulated_pct, holds) = match (a, b) {
                (Some(a), Some(b)) => (Step::pct(a, b), st.expect.holds(a, b)),
                _ => (None, false),
            };
            let within_published = st
                .published_pct
                .map(|p| simulated_pct.is_some_and(|s| exp.tolerance.step(&st.metric).holds(s, p)));
            StepResult {
                step: st.clone(),
                simulated_pct,
                holds,
                within_published,
                per_seed,
            }
        })
        .collect()
}

/// An experiment definition.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub variants: Vec<Variant>,
    /// Metric paths tabulated in the report.
    pub metrics: Vec<String>,
    pub derive: Vec<(String, Derive)>,
    pub plots: Vec<PlotSpec>,
    /// Sentences for the report (what to look for, where the published numbers come from).
    pub notes: Vec<String>,
    /// Variant-to-variant changes checked against the published direction.
    pub steps: Vec<Step>,
    /// Why a figure differs from its published value: row (variant or derived row) →
    /// metric → explanation, shown in the report where the figure is outside its tolerance.
    pub explain: BTreeMap<String, BTreeMap<String, String>>,
    /// The seeds every variant runs with (empty: once, with the config's own `seed`); see
    /// [`crate::seeds`].
    pub seeds: Vec<u64>,
    /// Floors that widen ±25 % for some metrics ([`crate::published`]).
    pub tolerance: crate::published::Floors,
}

/// Every published figure of the results against its simulated value, in row order.
pub fn agreements(exp: &Experiment, results: &[VariantResult]) -> Vec<Agreement> {
    results
        .iter()
        .flat_map(|r| {
            r.published.iter().map(|(m, p)| {
                let why = exp.explain.get(&r.name).and_then(|e| e.get(m));
                let t = exp.tolerance.figure(m);
                let mut a = Agreement::figure(&r.name, m, r.metrics.get(m).copied(), *p, t, why);
                a.simulated_sd = r.sd.get(m).copied();
                a
            })
        })
        .collect()
}

/// Utilisation from which the loaded-latency check compares bandwidth with `Bsat`
/// instead of latency with the curve.
pub const SATURATION_CHECK_U: f64 = 0.95;

/// Results of one variant.
#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    pub name: String,
    pub metrics: BTreeMap<String, f64>,
    pub published: BTreeMap<String, f64>,
    pub timeline_csv: String,
    pub summary_json: String,
    /// Each metric's standard deviation over the seeds (empty for one seed).
    pub sd: BTreeMap<String, f64>,
    /// Each seed's metrics (empty for one seed), for the steps' per-seed changes.
    pub per_seed: Vec<(u64, BTreeMap<String, f64>)>,
}

/// Look a metric path up in a JSON value (`workloads[0].score_accesses_per_s`, `vmstat.pswpout`).
pub fn metric(value: &serde_json::Value, path: &str) -> Option<f64> {
    let mut cur = value;
    for part in tiermem_core::config::split_path(path).ok()? {
        cur = match part {
            tiermem_core::config::PathPart::Key(k) => cur.get(k.as_str())?,
            tiermem_core::config::PathPart::Index(i) => cur.get(i)?,
        };
    }
    cur.as_f64()
}

/// Run every config on up to one thread per CPU, in any order; results come back in the
/// configs' order. `progress(done, total, index)` is called as each run ends.
pub fn run_all(
    configs: &[SimConfig],
    progress: &(dyn Fn(usize, usize, usize) + Sync),
) -> Vec<Result<tiermem_sim::engine::SimResult, SimError>> {
    run_all_on(configs, None, progress)
}

/// [`run_all`] on `workers` threads (default: one per CPU).
#[allow(
    clippy::expect_used,
    reason = "every index below n is taken by one worker, which stores its run"
)]
pub fn run_all_on(
    configs: &[SimConfig],
    workers: Option<usize>,
    progress: &(dyn Fn(usize, usize, usize) + Sync),
) -> Vec<Result<tiermem_sim::engine::SimResult, SimError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let n = configs.len();
    let cores = std::thread::available_parallelism().map_or(1, |p| p.get());
    let workers = workers.unwrap_or(cores).min(n).max(1);
    // Producer threads pay only where a core would otherwise idle: with a variant on
    // every core they slow the run down (seed-001: 107 s against 96 s on 2 cores).
    let opts = tiermem_sim::engine::RunOptions {
        generate_ahead: workers < cores,
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<tiermem_sim::engine::SimResult, SimError>>>> =
        (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let r = Simulation::new_with(&configs[i], opts)
                    .and_then(|mut sim| sim.run(&mut |_| {}));
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                progress(done.fetch_add(1, Ordering::SeqCst) + 1, n, i);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every run ran")
        })
        .collect()
}

/// Run every variant (in parallel on the available cores, results in variant order) and
/// write `results.json`, `report.md` and the per-variant files under `out`. With
/// [`Experiment::seeds`], every variant runs once per seed (its files under
/// `variants/<name>/seed-<seed>/`), derived metrics relate runs of the same seed, and each
/// result holds the mean over the seeds with the deviation beside it ([`crate::seeds`]).
pub fn run(
    exp: &Experiment,
    out: &Path,
    progress: &(dyn Fn(usize, usize, &str) + Sync),
) -> Result<Vec<VariantResult>, SimError> {
    if !exp.seeds.is_empty() {
        crate::seeds::check(&exp.seeds).map_err(|m| {
            tiermem_core::ConfigError::invalid("seeds", m)
                .in_file(&format!("experiment {}", exp.name))
        })?;
    }
    std::fs::create_dir_all(out).map_err(|e| io_error(out, e))?;
    let seeds: Vec<Option<u64>> = if exp.seeds.is_empty() {
        vec![None]
    } else {
        exp.seeds.iter().copied().map(Some).collect()
    };
    let mut configs = Vec::with_capacity(seeds.len() * exp.variants.len());
    let mut values = Vec::with_capacity(configs.capacity());
    for seed in &seeds {
        for v in &exp.variants {
            let (cfg, value) = seeded_config(exp, v, *seed)?;
            configs.push(cfg);
            values.push(value);
        }
    }
    let nv = exp.variants.len();
    let label = |i: usize| match seeds[i / nv] {
        Some(s) => format!("{} (seed {s})", exp.variants[i % nv].name),
        None => exp.variants[i % nv].name.clone(),
    };
    let mut runs = run_all(&configs, &|done, n, i| progress(done, n, &label(i))).into_iter();
    let mut per_seed = Vec::with_capacity(seeds.len());
    for (k, seed) in seeds.iter().enumerate() {
        let mut results: Vec<VariantResult> = Vec::with_capacity(nv);
        for (i, v) in exp.variants.iter().enumerate() {
            let Some(r) = runs.next() else { break };
            let r = r?;
            let run = (&configs[k * nv + i], &values[k * nv + i]);
            let r = variant_result(exp, v, run, r, *seed, &results, out)?;
            results.push(r);
        }
        // Rows across variants relate runs of one seed: a `best-of` row is that seed's
        // pick, a `relative` ratio that seed's.
        cross_variant_rows(exp, &mut results);
        per_seed.push((*seed, results));
    }
    let results = combine_seeds(per_seed);
    write_results(exp, out, &results)?;
    Ok(results)
}

fn io_error(p: &Path, e: std::io::Error) -> SimError {
    SimError::Io {
        path: p.display().to_string(),
        source: e,
    }
}

/// A variant's config (and its TOML), with the experiment's `seed` in place of the base's
/// when it runs over several seeds.
fn seeded_config(
    exp: &Experiment,
    v: &Variant,
    seed: Option<u64>,
) -> Result<(SimConfig, toml::Value), SimError> {
    let mut value = v.config.clone();
    let origin = match seed {
        Some(s) => format!("experiment {} variant {} seed {s}", exp.name, v.name),
        None => format!("experiment {} variant {}", exp.name, v.name),
    };
    if let (Some(s), Some(t)) = (seed, value.as_table_mut()) {
        let s = i64::try_from(s).map_err(|_| {
            tiermem_core::ConfigError::invalid("seeds", format!("seed {s} is above {}", i64::MAX))
                .in_file(&origin)
        })?;
        t.insert("seed".into(), toml::Value::Integer(s));
    }
    let cfg = SimConfig::from_value(&value, &origin)?;
    Ok((cfg, value))
}

/// One run's result: its metrics (with those derived against `earlier` variants of the same
/// seed), its files written under `variants/<name>/` (`…/seed-<seed>/` with a seed).
#[allow(
    clippy::expect_used,
    reason = "a summary and a resolved config serialise (the config was deserialised from TOML)"
)]
fn variant_result(
    exp: &Experiment,
    v: &Variant,
    (cfg, value): (&SimConfig, &toml::Value),
    r: tiermem_sim::engine::SimResult,
    seed: Option<u64>,
    earlier: &[VariantResult],
    out: &Path,
) -> Result<VariantResult, SimError> {
    let summary_json = serde_json::to_string_pretty(&r.summary).expect("summary serialises");
    let sv: serde_json::Value = serde_json::from_str(&summary_json).expect("valid json");
    let mut metrics = BTreeMap::new();
    for m in &exp.metrics {
        if let Some(x) = metric(&sv, m) {
            metrics.insert(m.clone(), x);
        }
    }
    for (k, x) in &v.labels {
        metrics.insert(k.clone(), *x);
    }
    for (vn, d) in &exp.derive {
        if vn != &v.name {
            continue;
        }
        match d {
            Derive::LoadedLatencyCurve {
                node,
                read_fraction,
            } => loaded_latency_curve(cfg, *node, *read_fraction, &sv, &mut metrics)?,
            Derive::RelativeToBaseline { baseline } => {
                if let Some(b) = earlier.iter().find(|r| &r.name == baseline) {
                    let bv: serde_json::Value =
                        serde_json::from_str(&b.summary_json).expect("valid json");
                    relative_to_baseline(&bv, &sv, &mut metrics);
                }
            }
            // Rows across variants: computed once every variant has run.
            Derive::BestOf { .. } | Derive::Relative { .. } => {}
        }
    }
    let rel = match seed {
        Some(s) => format!("variants/{}/seed-{s}", v.name),
        None => format!("variants/{}", v.name),
    };
    let vdir = out.join(&rel);
    std::fs::create_dir_all(&vdir).map_err(|e| io_error(&vdir, e))?;
    let cfg_text = toml::to_string(value).expect("config serialises");
    for (f, body) in [
        ("config.toml", &cfg_text),
        ("summary.json", &summary_json),
        ("timeline.csv", &r.timeline_csv),
    ] {
        let p = vdir.join(f);
        std::fs::write(&p, body).map_err(|e| io_error(&p, e))?;
    }
    Ok(VariantResult {
        name: v.name.clone(),
        metrics,
        published: v.published.clone(),
        timeline_csv: format!("{rel}/timeline.csv"),
        summary_json,
        sd: BTreeMap::new(),
        per_seed: Vec::new(),
    })
}

/// Loaded-latency check: the curve's latency at the measured bandwidth of `node`, and the
/// relative error of the measured latency against it.
fn loaded_latency_curve(
    cfg: &SimConfig,
    node: usize,
    read_fraction: f64,
    sv: &serde_json::Value,
    metrics: &mut BTreeMap<String, f64>,
) -> Result<(), SimError> {
    let topo = Topology::new(&cfg.machine)?;
    let nd = &topo.nodes[node];
    let bw = metric(sv, "workloads[0].bandwidth_mbps").unwrap_or(0.0) * 1e6;
    let lat = metric(sv, "workloads[0].latency_ns").unwrap_or(0.0);
    let bsat = nd.curve.bsat(read_fraction);
    let u = bw / bsat;
    let curve = nd.read_latency.ns_f64() * nd.curve.factor_or_saturated(u, read_fraction);
    if u < SATURATION_CHECK_U {
        metrics.insert("curve_latency_ns".into(), curve);
    }
    metrics.insert("utilisation".into(), u);
    // Near saturation the curve is too steep for a latency comparison to mean anything;
    // there the check is horizontal: the delivered bandwidth against the bandwidth at which
    // the curve gives the measured latency. Throttled (from U_CAP) the node must deliver
    // Bsat.
    let err = if u < SATURATION_CHECK_U {
        (lat - curve) / curve
    } else if u < tiermem_core::timing::U_CAP {
        let factor = lat / nd.read_latency.ns_f64();
        let b_curve = nd.curve.utilisation_at(factor, read_fraction) * bsat;
        (bw - b_curve) / b_curve
    } else {
        (bw - bsat) / bsat
    };
    metrics.insert("curve_error_pct".into(), err * 100.0);
    Ok(())
}

/// Against the baseline's summary `bv`: `memory_saving_pct`, `slowdown_pct` (mean over the
/// workloads with a runtime) and kdamond CPU (`damon_cpu_pct`, `damon_monitor_cpu_pct` over
/// the whole run; `kdamond_cpu_per_run_pct`, the mean over the workloads' runs).
fn relative_to_baseline(
    bv: &serde_json::Value,
    sv: &serde_json::Value,
    metrics: &mut BTreeMap<String, f64>,
) {
    if let Some(saving) = memory_saving_pct(bv, sv) {
        metrics.insert("memory_saving_pct".into(), saving);
    }
    let (mut sum, mut n) = (0.0, 0);
    for i in 0.. {
        let key = format!("workloads[{i}].runtime_seconds");
        let (Some(x), Some(y)) = (metric(sv, &key), metric(bv, &key)) else {
            break;
        };
        if y > 0.0 {
            sum += x / y - 1.0;
            n += 1;
        }
    }
    if n > 0 {
        metrics.insert("slowdown_pct".into(), sum / n as f64 * 100.0);
    }
    let (mut cpu, mut mon) = (0.0, 0.0);
    for i in 0.. {
        let Some(c) = metric(sv, &format!("damon[{i}].cpu_percent")) else {
            break;
        };
        cpu += c;
        mon += metric(sv, &format!("damon[{i}].monitor_cpu_percent")).unwrap_or(0.0);
    }
    metrics.insert("damon_cpu_pct".into(), cpu);
    metrics.insert("damon_monitor_cpu_pct".into(), mon);
    if let Some(c) = kdamond_cpu_per_run_pct(sv) {
        metrics.insert("kdamond_cpu_per_run_pct".into(), c);
    }
}

/// damon-tests' average `kdamond_cpu_util`: the mean over the workloads' runs of the
/// kdamonds' CPU while each ran (`workloads[i].kdamond_cpu_pct`), where a harness measures
/// the kdamond of each run over that run (`0007_kdamond_cpu_util.sh`).
fn kdamond_cpu_per_run_pct(v: &serde_json::Value) -> Option<f64> {
    let n = v
        .get("workloads")
        .and_then(|w| w.as_array())
        .map_or(0, Vec::len);
    let per_run: Vec<f64> = (0..n)
        .filter_map(|i| metric(v, &format!("workloads[{i}].kdamond_cpu_pct")))
        .collect();
    (!per_run.is_empty()).then(|| per_run.iter().sum::<f64>() / per_run.len() as f64)
}

/// The variants' results over the seeds: one seed's as they are; several seeds' as the
/// mean of each metric with its deviation, each seed's metrics kept for the steps, and the
/// first seed's summary and timeline standing for the variant.
fn combine_seeds(per_seed: Vec<(Option<u64>, Vec<VariantResult>)>) -> Vec<VariantResult> {
    if per_seed.len() <= 1 {
        return per_seed.into_iter().next().map_or(Vec::new(), |(_, r)| r);
    }
    let Some((_, first)) = per_seed.first() else {
        return Vec::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let runs: Vec<(u64, &VariantResult)> = per_seed
                .iter()
                .filter_map(|(s, rs)| Some(((*s)?, rs.get(i)?)))
                .collect();
            let maps: Vec<&BTreeMap<String, f64>> = runs.iter().map(|(_, r)| &r.metrics).collect();
            let (metrics, sd) = crate::seeds::combine(&maps);
            VariantResult {
                metrics,
                sd,
                per_seed: runs.iter().map(|(s, r)| (*s, r.metrics.clone())).collect(),
                ..r.clone()
            }
        })
        .collect()
}

/// The derived metrics that need other variants' results: `BestOf` rows (inserted before
/// the first variant they choose among), then `Relative` ratios.
fn cross_variant_rows(exp: &Experiment, results: &mut Vec<VariantResult>) {
    for (row, d) in &exp.derive {
        if let Derive::BestOf {
            among,
            metric,
            published,
        } = d
        {
            let best = results
                .iter()
                .filter(|r| among.contains(&r.name))
                .filter_map(|r| r.metrics.get(metric).map(|v| (r, *v)))
                .fold(None::<(&VariantResult, f64)>, |b, (r, v)| match b {
                    Some((_, bv)) if bv >= v => b,
                    _ => Some((r, v)),
                });
            if let Some((b, _)) = best {
                let mut r = b.clone();
                r.name = row.clone();
                r.published = published.clone();
                let at = results
                    .iter()
                    .position(|x| among.contains(&x.name))
                    .unwrap_or(results.len());
                results.insert(at, r);
            }
        }
    }
    for (row, d) in &exp.derive {
        if let Derive::Relative {
            baseline,
            metric,
            key,
        } = d
        {
            let base = results
                .iter()
                .find(|r| &r.name == baseline)
                .and_then(|r| r.metrics.get(metric).copied());
            if let (Some(b), Some(r)) = (base, results.iter_mut().find(|r| &r.name == row)) {
                if let Some(v) = r.metrics.get(metric).copied() {
                    if b > 0.0 {
                        r.metrics.insert(key.clone(), v / b);
                    }
                }
            }
        }
    }
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own result types cannot fail"
)]
fn write_results(exp: &Experiment, out: &Path, results: &[VariantResult]) -> Result<(), SimError> {
    #[derive(Serialize)]
    struct VariantOut<'a> {
        name: &'a str,
        metrics: &'a BTreeMap<String, f64>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        sd: &'a BTreeMap<String, f64>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        per_seed: Vec<SeedOut<'a>>,
        published: &'a BTreeMap<String, f64>,
        timeline_csv: &'a str,
    }
    #[derive(Serialize)]
    struct SeedOut<'a> {
        seed: u64,
        metrics: &'a BTreeMap<String, f64>,
    }
    #[derive(Serialize)]
    struct ResultsOut<'a> {
        experiment: &'a str,
        description: &'a str,
        version: &'a str,
        #[serde(skip_serializing_if = "<[u64]>::is_empty")]
        seeds: &'a [u64],
        variants: Vec<VariantOut<'a>>,
        steps: Vec<StepResult>,
        published: Vec<Agreement>,
        plots: &'a [PlotSpec],
    }
    let ro = ResultsOut {
        experiment: &exp.name,
        description: &exp.description,
        version: env!("CARGO_PKG_VERSION"),
        seeds: &exp.seeds,
        variants: results
            .iter()
            .map(|r| VariantOut {
                name: &r.name,
                metrics: &r.metrics,
                sd: &r.sd,
                per_seed: r
                    .per_seed
                    .iter()
                    .map(|(seed, metrics)| SeedOut {
                        seed: *seed,
                        metrics,
                    })
                    .collect(),
                published: &r.published,
                timeline_csv: &r.timeline_csv,
            })
            .collect(),
        steps: evaluate_steps(exp, results),
        published: agreements(exp, results),
        plots: &exp.plots,
    };
    let p = out.join("results.json");
    std::fs::write(
        &p,
        serde_json::to_string_pretty(&ro).expect("results serialise"),
    )
    .map_err(|e| io_error(&p, e))?;
    let p = out.join("report.md");
    std::fs::write(&p, report_markdown(exp, results)).map_err(|e| io_error(&p, e))?;
    Ok(())
}

/// A figure, with its deviation over the seeds where there is one: `25.1 ± 2.9`.
fn with_sd(x: f64, sd: Option<f64>) -> String {
    match sd {
        Some(sd) => format!("{} ± {}", fmt_num(x), fmt_num(sd)),
        None => fmt_num(x),
    }
}

/// The report's paragraph on the seeds, for an experiment run over several.
fn seeds_paragraph(exp: &Experiment) -> String {
    if exp.seeds.is_empty() {
        return String::new();
    }
    if let [seed] = exp.seeds[..] {
        return format!("Every variant ran with seed {seed}.\n\n");
    }
    let list: Vec<String> = exp.seeds.iter().map(u64::to_string).collect();
    format!(
        "Every variant ran with seeds {}: each figure is the mean over the seeds ± the sample \
         standard deviation; a derived figure (saving, slowdown, CPU, a ratio, a best-of row) \
         relates runs of the same seed. A step is the change between the means, judged as \
         such; beside it, the standard deviation of the per-seed changes and the seeds in \
         which its direction holds. The per-workload tables and the timeline plots show the \
         first seed's runs; bar plots show the means with ±1 sd whiskers.\n\n",
        list.join(", ")
    )
}

fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.4e}", x)
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// The Markdown report: description, a table of metrics (simulated, and published where
/// known, with the ratio), notes and plots.
pub fn report_markdown(exp: &Experiment, results: &[VariantResult]) -> String {
    let mut s = format!(
        "# Experiment `{}`\n\n{}\n\ntiermem {}\n\n",
        exp.name,
        exp.description,
        env!("CARGO_PKG_VERSION")
    );
    s.push_str(&seeds_paragraph(exp));
    let mut cols: Vec<String> = exp.metrics.clone();
    for r in results {
        for k in r.metrics.keys() {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let has_pub = results.iter().any(|r| !r.published.is_empty());
    s.push_str("| variant |");
    for c in &cols {
        s.push_str(&format!(" {c} |"));
        if has_pub && results.iter().any(|r| r.published.contains_key(c)) {
            s.push_str(&format!(" {c} (published) | sim/published |"));
        }
    }
    s.push('\n');
    s.push_str("|---|");
    for c in &cols {
        s.push_str("---:|");
        if has_pub && results.iter().any(|r| r.published.contains_key(c)) {
            s.push_str("---:|---:|");
        }
    }
    s.push('\n');
    for r in results {
        s.push_str(&format!("| {} |", r.name));
        for c in &cols {
            let v = r.metrics.get(c);
            s.push_str(&format!(
                " {} |",
                v.map_or("–".into(), |x| with_sd(*x, r.sd.get(c).copied()))
            ));
            if has_pub && results.iter().any(|rr| rr.published.contains_key(c)) {
                match (v, r.published.get(c)) {
                    (Some(x), Some(p)) => s.push_str(&format!(" {} | {:.2} |", fmt_num(*p), x / p)),
                    (_, Some(p)) => s.push_str(&format!(" {} | – |", fmt_num(*p))),
                    _ => s.push_str(" – | – |"),
                }
            }
        }
        s.push('\n');
    }
    s.push_str(&published_section(exp, results));
    s.push_str(&steps_section(exp, &evaluate_steps(exp, results)));
    s.push_str(&per_workload_section(exp, results));
    if !exp.notes.is_empty() {
        s.push('\n');
        for n in &exp.notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    if !exp.plots.is_empty() {
        s.push_str("\n## Plots\n\n");
        for p in &exp.plots {
            s.push_str(&format!("![{}]({})\n\n", p.title, p.file));
        }
    }
    s.push_str("\nPer-variant configs, summaries and timelines are in `variants/`.\n");
    s
}

/// The memory saving per workload, for experiments that derive it against a baseline from
/// workloads reporting the harness's `memused.avg`: the baseline's memused and each other
/// variant's saving, one row per workload (the figures `memory_saving_pct` averages).
fn per_workload_section(exp: &Experiment, results: &[VariantResult]) -> String {
    let Some(t) = PerWorkload::new(exp, results) else {
        return String::new();
    };
    let mib = |b: f64| format!("{:.1}", b / 1048576.0);
    let count = |x: f64| format!("{x:.0}");
    let mut s = t.table(
        "Memory saving per workload",
        &|b| format!("memused.avg of `{b}` (MiB) and each variant's saving against it (%)"),
        "memused_avg_bytes",
        &|b| b.filter(|&b| b > 0.0).map(mib),
        &|b, x| b.map_or("–".into(), |b| format!("{:.1}", (b - x) / b * 100.0)),
    );
    s.push_str(&t.table(
        "Major faults per workload",
        &|b| {
            format!(
                "Major faults of each run's program (swap-ins; the simulator's file pages never \
                 fault) from its `drop_caches` to its exit, `{b}` and each variant"
            )
        },
        "major_faults",
        &|b| b.map(count),
        &|_, x| count(x),
    ));
    s.push_str(&t.table(
        "kdamond CPU per workload",
        &|b| {
            format!(
                "The kdamonds' CPU time while each run's program ran, % of one CPU (damon-tests' \
                 per-run `kdamond_cpu_util`), `{b}` and each variant"
            )
        },
        "kdamond_cpu_pct",
        &|b| Some(b.map_or("–".into(), |b| format!("{b:.2}"))),
        &|_, x| format!("{x:.2}"),
    ));
    s
}

/// The summaries behind the per-workload tables: the baseline's and every other variant's
/// (the first seed's runs).
struct PerWorkload<'a> {
    baseline: &'a str,
    base: serde_json::Value,
    others: Vec<(&'a str, serde_json::Value)>,
    of_seed: String,
}

impl<'a> PerWorkload<'a> {
    fn new(exp: &'a Experiment, results: &'a [VariantResult]) -> Option<Self> {
        let baseline = exp.derive.iter().find_map(|(_, d)| match d {
            Derive::RelativeToBaseline { baseline } => Some(baseline.as_str()),
            _ => None,
        })?;
        let parse =
            |r: &VariantResult| serde_json::from_str::<serde_json::Value>(&r.summary_json).ok();
        let base = results
            .iter()
            .find(|r| r.name == baseline)
            .and_then(parse)?;
        let others = results
            .iter()
            .filter(|r| r.name != baseline)
            .filter_map(|r| Some((r.name.as_str(), parse(r)?)))
            .collect();
        let of_seed = results
            .first()
            .and_then(|r| r.per_seed.first())
            .map_or(String::new(), |(seed, _)| format!(", seed {seed}"));
        Some(PerWorkload {
            baseline,
            base,
            others,
            of_seed,
        })
    }

    /// One row per workload whose baseline `field` (absent: None) `base_cell` shows, one
    /// column per variant with `cell(baseline, variant)`; empty when no run of any
    /// workload has the field.
    fn table(
        &self,
        title: &str,
        intro: &dyn Fn(&str) -> String,
        field: &str,
        base_cell: &dyn Fn(Option<f64>) -> Option<String>,
        cell: &dyn Fn(Option<f64>, f64) -> String,
    ) -> String {
        let workloads = self
            .base
            .get("workloads")
            .and_then(|w| w.as_array())
            .map_or(0, Vec::len);
        let mut rows = String::new();
        let mut any = false;
        for i in 0..workloads {
            let key = format!("workloads[{i}].{field}");
            let b = metric(&self.base, &key);
            let Some(shown) = base_cell(b) else {
                continue;
            };
            let name = self.base["workloads"][i]["name"].as_str().unwrap_or("?");
            rows.push_str(&format!("| {name} | {shown} |"));
            any |= b.is_some();
            for (_, v) in &self.others {
                let x = metric(v, &key);
                any |= x.is_some();
                rows.push_str(&format!(" {} |", x.map_or("–".into(), |x| cell(b, x))));
            }
            rows.push('\n');
        }
        if !any {
            return String::new();
        }
        let (baseline, of_seed) = (self.baseline, &self.of_seed);
        let intro = intro(baseline);
        let mut s = format!("\n## {title}\n\n{intro}{of_seed}.\n\n| workload | {baseline} |");
        for (name, _) in &self.others {
            s.push_str(&format!(" {name} |"));
        }
        s.push_str("\n|---|---:|");
        s.push_str(&"---:|".repeat(self.others.len()));
        s.push('\n');
        s.push_str(&rows);
        s
    }
}

/// The report's table of published figures: each against its simulated value, with the
/// verdict and, outside the tolerance, the experiment's explanation.
fn published_section(exp: &Experiment, results: &[VariantResult]) -> String {
    let figures = agreements(exp, results);
    if figures.is_empty() {
        return String::new();
    }
    let within = figures.iter().filter(|a| a.within).count();
    let mut s = format!(
        "\n## Against the published figures\n\n{within} of {} simulated figures are within \
         their tolerance: ±25 % of the published one{}.\n\n",
        figures.len(),
        floors_sentence(&exp.tolerance.floors, "")
    );
    s.push_str(
        "| variant | metric | simulated | published | sim/published | tolerance | within? | why not |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---|---|---|\n");
    for a in &figures {
        let ratio = a
            .simulated
            .filter(|_| a.published != 0.0)
            .map_or("–".into(), |x| format!("{:.2}", x / a.published));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {ratio} | {} | {} | {} |\n",
            a.row,
            a.metric,
            a.simulated
                .map_or("–".into(), |x| with_sd(x, a.simulated_sd)),
            fmt_num(a.published),
            a.tolerance.describe(
                a.published,
                if a.metric.ends_with("_pct") {
                    " pp"
                } else {
                    ""
                }
            ),
            verdict(a.within),
            why_not(a.within, a.explain.as_deref()),
        ));
    }
    s
}

/// ", or the experiment file's floor where it is wider (metric: floor, why)" for the floors
/// of a report's table (`unit` after each floor), or nothing.
fn floors_sentence(floors: &BTreeMap<String, crate::published::Floor>, unit: &str) -> String {
    if floors.is_empty() {
        return String::new();
    }
    let list: Vec<String> = floors
        .iter()
        .map(|(m, f)| format!("{m} ±{}{unit}: {}", f.value, f.why))
        .collect();
    format!(
        ", or the experiment file's floor where that is wider ({})",
        list.join("; ")
    )
}

/// The steps table: each change against its published direction and size.
fn steps_section(exp: &Experiment, steps: &[StepResult]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n## Steps against the published direction\n\n");
    if steps.iter().any(|r| r.step.published_pct.is_some()) {
        s.push_str(&format!(
            "A change is within its tolerance when it is within ±25 % of the published change{}.\n\n",
            floors_sentence(&exp.tolerance.step_floors, " pp")
        ));
    }
    s.push_str(
        "| step | metric | simulated | published | expected | holds | within tolerance? | why not |\n",
    );
    s.push_str("|---|---|---:|---:|---|---|---|---|\n");
    let pct = |x: Option<f64>| x.map_or("–".to_string(), |x| format!("{x:+.1} %"));
    for r in steps {
        let spread = r.per_seed.as_ref();
        let simulated = match spread.and_then(|p| p.sd_pct) {
            Some(sd) => format!("{} ± {sd:.1}", pct(r.simulated_pct)),
            None => pct(r.simulated_pct),
        };
        let holds = match (r.step.expect, r.holds) {
            (Expect::Reported, _) => "–",
            (_, true) => "yes",
            (_, false) => "**no**",
        };
        let holds = match spread {
            Some(p) if r.step.expect != Expect::Reported => {
                format!("{holds} ({} of {} seeds)", p.holds, p.seeds)
            }
            _ => holds.to_string(),
        };
        s.push_str(&format!(
            "| {} → {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.step.from,
            r.step.to,
            r.step.metric,
            simulated,
            pct(r.step.published_pct),
            r.step.expect.describe(),
            holds,
            r.within_published.map_or("–", verdict),
            r.within_published
                .map_or(String::new(), |w| why_not(w, r.step.explain.as_deref())),
        ));
    }
    s
}

/// The "why not" cell: empty for a figure within its tolerance.
fn why_not(within: bool, explain: Option<&str>) -> String {
    match (within, explain) {
        (true, _) => String::new(),
        (false, Some(e)) => e.to_string(),
        (false, None) => "_no explanation recorded_".into(),
    }
}

/// Replace the report's links to plots that were not drawn (`--no-plots`, or data the plot
/// needs is missing) with a line that says how to draw them, so that `report.md` never
/// shows a broken image.
pub fn note_missing_plots(dir: &std::path::Path) -> std::io::Result<()> {
    let path = dir.join("report.md");
    let text = std::fs::read_to_string(&path)?;
    let mut changed = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let file = line
                .strip_prefix("![")
                .and_then(|r| r.split_once("]("))
                .and_then(|(_, r)| r.strip_suffix(')'));
            match file {
                Some(f) if !dir.join(f).exists() => {
                    changed = true;
                    format!(
                        "_Plot `{f}` not drawn (`--no-plots`, or its data is missing): `tiermem plot {}` draws it._",
                        dir.display()
                    )
                }
                _ => line.to_string(),
            }
        })
        .collect();
    if changed {
        std::fs::write(&path, lines.join("\n") + "\n")?;
    }
    Ok(())
}

/// The memory saving of a variant against the baseline, in percent. With workloads that
/// report the harness's own `memused.avg` (damon-tests: from the `drop_caches` before each
/// run to its end, docs/seed-004-page-cache.md §3), the mean over those workloads of each
/// one's saving, as the published tables average per-workload figures (an inference: the
/// RFC does not state how its averages were formed); otherwise the saving of the
/// system-wide `memused_avg_bytes` over the whole timeline.
fn memory_saving_pct(baseline: &serde_json::Value, variant: &serde_json::Value) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0);
    let workloads = baseline
        .get("workloads")
        .and_then(|w| w.as_array())
        .map_or(0, Vec::len);
    for i in 0..workloads {
        let key = format!("workloads[{i}].memused_avg_bytes");
        if let (Some(b), Some(v)) = (metric(baseline, &key), metric(variant, &key)) {
            if b > 0.0 {
                sum += (b - v) / b * 100.0;
                n += 1;
            }
        }
    }
    if n > 0 {
        return Some(sum / n as f64);
    }
    let b = metric(baseline, "memused_avg_bytes")?;
    let v = metric(variant, "memused_avg_bytes")?;
    (b > 0.0).then(|| (b - v) / b * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kdamond_cpu_per_run_is_the_mean_over_the_runs_that_report_it() {
        let v = serde_json::json!({"workloads": [
            {"kdamond_cpu_pct": 4.0}, {"name": "no run"}, {"kdamond_cpu_pct": 6.5}]});
        assert_eq!(kdamond_cpu_per_run_pct(&v), Some(5.25));
        assert_eq!(
            kdamond_cpu_per_run_pct(&serde_json::json!({"workloads": []})),
            None
        );
    }

    #[test]
    fn metric_paths_resolve() {
        let v: serde_json::Value = serde_json::json!({"a": {"b": [1.0, {"c": 2.5}]}, "x": 3});
        assert_eq!(metric(&v, "a.b[1].c"), Some(2.5));
        assert_eq!(metric(&v, "x"), Some(3.0));
        assert_eq!(metric(&v, "a.b[7]"), None);
    }

    #[test]
    fn expectations_parse_and_judge() {
        assert_eq!(Expect::parse("higher"), Some(Expect::Higher));
        assert_eq!(
            Expect::parse("at-most:0.5"),
            Some(Expect::AtMostFraction(0.5))
        );
        assert_eq!(Expect::parse("at-most:-1"), None);
        assert_eq!(Expect::parse("bigger"), None);
        assert!(Expect::AtMostFraction(0.5).holds(100.0, 50.0));
        assert!(!Expect::AtMostFraction(0.5).holds(100.0, 51.0));
        assert!(Expect::NotLower.holds(1.0, 1.0) && !Expect::Higher.holds(1.0, 1.0));
    }

    /// The per-workload table lists the baseline's memused and each variant's saving, and
    /// `memory_saving_pct` is their mean.
    #[test]
    fn memory_saving_is_the_mean_of_the_per_workload_savings() {
        use crate::experiment_file::from_file;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.toml");
        std::fs::write(
            &p,
            "name = \"e\"\nbase = { machine = \"small\" }\n[[variants]]\nname = \"orig\"\n\
             [[variants]]\nname = \"v\"\n[[derive]]\nrow = \"v\"\n\
             [derive.compute]\nkind = \"relative-to-baseline\"\nbaseline = \"orig\"\n",
        )
        .unwrap();
        let e = from_file(&p).unwrap();
        let summary = |a: f64, b: f64| {
            serde_json::json!({"memused_avg_bytes": 9.0, "workloads": [
                {"name": "w0", "memused_avg_bytes": a},
                {"name": "w1", "memused_avg_bytes": b},
                {"name": "w2"}]})
        };
        let (b, v) = (summary(1048576.0, 4194304.0), summary(524288.0, 4194304.0));
        assert_eq!(memory_saving_pct(&b, &v), Some(25.0));
        let result = |name: &str, s: &serde_json::Value| VariantResult {
            name: name.into(),
            metrics: BTreeMap::new(),
            published: BTreeMap::new(),
            timeline_csv: String::new(),
            summary_json: s.to_string(),
            sd: BTreeMap::new(),
            per_seed: Vec::new(),
        };
        let t = per_workload_section(&e, &[result("orig", &b), result("v", &v)]);
        assert!(t.contains("| workload | orig | v |"), "{t}");
        assert!(t.contains("| w0 | 1.0 | 50.0 |"), "{t}");
        assert!(t.contains("| w1 | 4.0 | 0.0 |"), "{t}");
        assert!(!t.contains("w2"), "{t}");
        assert!(!t.contains("Major faults"), "no workload reports them: {t}");
        // Major faults per workload, where the runs report them (a baseline's 0 included).
        let faults = |n: u64| {
            serde_json::json!({"workloads": [
                {"name": "w0", "memused_avg_bytes": 1048576.0, "major_faults": 0},
                {"name": "w1", "memused_avg_bytes": 1048576.0, "major_faults": n}]})
        };
        let t = per_workload_section(
            &e,
            &[result("orig", &faults(0)), result("v", &faults(1234))],
        );
        assert!(t.contains("## Major faults per workload"), "{t}");
        assert!(t.contains("| w1 | 0 | 1234 |"), "{t}");
        assert!(!t.contains("kdamond CPU"), "no run reports it: {t}");
        // kdamond CPU per workload: the baseline, without DAMON, has none.
        let cpu = |pct: Option<f64>| {
            serde_json::json!({"workloads": [
                {"name": "w0", "memused_avg_bytes": 1048576.0, "kdamond_cpu_pct": pct}]})
        };
        let t = per_workload_section(
            &e,
            &[result("orig", &cpu(None)), result("v", &cpu(Some(4.25)))],
        );
        assert!(t.contains("## kdamond CPU per workload"), "{t}");
        assert!(t.contains("| w0 | – | 4.25 |"), "{t}");
    }

    #[test]
    fn steps_in_files_name_existing_variants() {
        use crate::experiment_file::from_file;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.toml");
        let body = |to: &str| {
            format!(
                "name = \"e\"\nbase = {{ machine = \"small\" }}\n[[variants]]\nname = \"a\"\n\
                 [[variants]]\nname = \"b\"\n[[steps]]\nfrom = \"a\"\nto = \"{to}\"\n\
                 metric = \"throughput_accesses_per_s\"\nexpect = \"higher\"\npublished_pct = 5\n"
            )
        };
        std::fs::write(&p, body("b")).unwrap();
        let e = from_file(&p).unwrap();
        assert_eq!(e.steps.len(), 1);
        assert_eq!(e.steps[0].published_pct, Some(5.0));
        std::fs::write(&p, body("c")).unwrap();
        let err = from_file(&p).unwrap_err();
        assert_eq!(err.key, "steps[0].to");
        assert!(err.message.contains("no variant or derived row named"));
        let results = vec![
            VariantResult {
                name: "a".into(),
                metrics: [("throughput_accesses_per_s".to_string(), 10.0)].into(),
                published: BTreeMap::new(),
                timeline_csv: String::new(),
                summary_json: String::new(),
                sd: BTreeMap::new(),
                per_seed: Vec::new(),
            },
            VariantResult {
                name: "b".into(),
                metrics: [("throughput_accesses_per_s".to_string(), 12.0)].into(),
                published: BTreeMap::new(),
                timeline_csv: String::new(),
                summary_json: String::new(),
                sd: BTreeMap::new(),
                per_seed: Vec::new(),
            },
        ];
        std::fs::write(&p, body("b")).unwrap();
        let e = from_file(&p).unwrap();
        let r = evaluate_steps(&e, &results);
        assert!(r[0].holds);
        assert!((r[0].simulated_pct.unwrap() - 20.0).abs() < 1e-9);
        // +20 % against +5 %: the direction holds, the size is 15 points off (±1.25).
        assert_eq!(r[0].within_published, Some(false));
        let report = report_markdown(&e, &results);
        assert!(report.contains(
            "| a → b | throughput_accesses_per_s | +20.0 % | +5.0 % | higher | yes | **no** | _no explanation recorded_ |"
        ), "{report}");
    }

    /// Published figures are listed with their verdicts; an explanation shows only beside a
    /// figure outside its tolerance, and one naming a figure without a published value is
    /// refused with its key.
    #[test]
    fn published_figures_get_verdicts_and_explanations() {
        use crate::experiment_file::parse;
        let text = "name = \"e\"\nbase = { machine = \"small\" }\n\
             [[variants]]\nname = \"a\"\n\
             published = { throughput_accesses_per_s = 100.0, mean_latency_ns = 50.0 }\n\
             explain = { throughput_accesses_per_s = \"reduced scale\", mean_latency_ns = \"unused\" }\n";
        let e = parse(text, "e.toml", None).unwrap();
        let results = vec![VariantResult {
            name: "a".into(),
            metrics: [
                ("throughput_accesses_per_s".to_string(), 60.0),
                ("mean_latency_ns".to_string(), 55.0),
            ]
            .into(),
            published: e.variants[0].published.clone(),
            timeline_csv: String::new(),
            summary_json: String::new(),
            sd: BTreeMap::new(),
            per_seed: Vec::new(),
        }];
        let a = agreements(&e, &results);
        assert_eq!(a.len(), 2);
        let report = report_markdown(&e, &results);
        assert!(
            report.contains("1 of 2 simulated figures are within"),
            "{report}"
        );
        assert!(report.contains(
            "| a | throughput_accesses_per_s | 60.000 | 100.0 | 0.60 | ±25 % | **no** | reduced scale |"
        ), "{report}");
        assert!(
            report.contains("| a | mean_latency_ns | 55.000 | 50.000 | 1.10 | ±25 % | yes |  |"),
            "{report}"
        );
        let bad = text.replace("mean_latency_ns = \"unused\"", "p99_ns = \"x\"");
        let err = parse(&bad, "e.toml", None).unwrap_err();
        assert_eq!(err.key, "variants[0].explain.p99_ns");
        assert!(
            err.message.contains("no published value"),
            "{}",
            err.message
        );
    }

    #[test]
    fn builtins_build() {
        use crate::experiment_file::{builtin, builtins};
        for (name, _) in builtins() {
            let e = builtin(name).unwrap();
            assert!(!e.variants.is_empty());
            for v in &e.variants {
                SimConfig::from_value(&v.config, "t").unwrap();
            }
        }
    }
}

#[cfg(test)]
mod missing_plot_tests {
    #[test]
    fn links_to_plots_that_were_not_drawn_become_a_note() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.png"), b"png").unwrap();
        std::fs::write(
            d.path().join("report.md"),
            "# r\n\n![drawn](a.png)\n\n![missing](b.png)\n",
        )
        .unwrap();
        super::note_missing_plots(d.path()).unwrap();
        let r = std::fs::read_to_string(d.path().join("report.md")).unwrap();
        assert!(r.contains("![drawn](a.png)"), "{r}");
        assert!(!r.contains("![missing](b.png)"), "{r}");
        assert!(r.contains("Plot `b.png` not drawn"), "{r}");
    }
}
