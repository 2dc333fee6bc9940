//! Experiment files: an [`Experiment`] as TOML, read by one generic parser. The built-in
//! experiments are files under `experiments/` too (embedded in the binary), so adding an
//! experiment means adding a file.
//!
//! ```toml
//! name = "my-experiment"
//! description = "what it shows"
//! base = "config.toml"             # relative to this file, or an inline [base] table
//! metrics = ["throughput_accesses_per_s"]
//! notes = ["a sentence for the report"]
//! seeds = [4, 5, 6, 7]             # optional: every variant once per seed, means ± sd
//!
//! [tolerance.floors]               # optional: widen ±25 % for a metric (with the reason)
//! "slowdown_pct" = { value = 0.5, why = "the published runs' spread" }
//!
//! [[variants]]
//! name = "wsf-10"
//! set = { "kernel.watermark_scale_factor" = 10 }   # dotted paths into the base config
//! unset = ["kernel.zram"]                           # keys the variant removes
//! published = { "throughput_accesses_per_s" = 1.0e8 }
//! explain = { "throughput_accesses_per_s" = "why it differs from the published figure" }
//! labels = { wsf = 10 }                             # copied into the metrics
//!
//! [[derive]]                       # metrics computed after the runs
//! row = "wsf-10"
//! compute = { kind = "relative-to-baseline", baseline = "wsf-100" }
//!
//! [[plots]]                        # drawn from results.json
//! file = "rate.png"
//! type = "bar"
//! title = "..."
//! y = ["throughput_accesses_per_s"]
//!
//! [[steps]]                        # published directions checked by the report
//! from = "wsf-100"
//! to = "wsf-10"
//! metric = "throughput_accesses_per_s"
//! expect = "lower"                 # higher, lower, not-lower, not-higher, at-most:F, at-least:F, within:F, reported
//! published_pct = -3.0
//! explain = "why the simulated change differs from the published one"
//! ```
//!
//! The report holds every published figure and every published change to ±25 %, or to the
//! file's `[tolerance]` floor for its metric ([`crate::published`]); an `explain` is shown
//! beside a figure outside, so that a reader sees why (a `[[derive]]` row takes `explain`
//! too, for its `best-of` figures). An `explain` must name a figure that has a published
//! value.
//!
//! [`to_toml`] writes an experiment in this form (the base is the first variant's config,
//! each variant the paths where its config differs), so a generated experiment can be
//! saved as a file and read back to the same variants.

use crate::experiment::{Derive, Expect, Experiment, PlotSpec, Step, Variant};
use crate::published::Floors;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use tiermem_core::config::{
    expand_machine_preset, resolve_toml, set_path, split_path, PathPart, SimConfig,
};
use tiermem_core::ConfigError;

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    name: String,
    /// One line for `tiermem experiment --list`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    summary: String,
    #[serde(default)]
    description: String,
    base: toml::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    /// Run every variant once per seed and report means ± deviations ([`crate::seeds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seeds: Option<Vec<u64>>,
    variants: Vec<VariantFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    derive: Vec<DeriveFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    plots: Vec<PlotSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps: Vec<StepFile>,
    /// Floors that widen the ±25 % of some metrics ([`crate::published`]).
    #[serde(default, skip_serializing_if = "Floors::is_empty")]
    tolerance: Floors,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct VariantFile {
    name: String,
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    set: toml::Table,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    unset: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    published: BTreeMap<String, f64>,
    /// Why a published figure is not reproduced: metric → explanation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    explain: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, f64>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct DeriveFile {
    /// The result row the metrics go to (a variant, or a new row for `best-of`).
    row: String,
    compute: Derive,
    /// Why a published figure of a `best-of` row is not reproduced: metric → explanation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    explain: BTreeMap<String, String>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    from: String,
    to: String,
    metric: String,
    expect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    published_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    explain: Option<String>,
}

/// The metrics a file without `metrics` tabulates.
const DEFAULT_METRICS: [&str; 2] = ["throughput_accesses_per_s", "mean_latency_ns"];

/// The built-in experiments: the files under `experiments/`, embedded in the binary. Which
/// of them `--all` and `--suite` run is [`SUITES_FILE`]'s.
const BUILTIN_FILES: [(&str, &str); 12] = [
    (
        "loaded-latency",
        include_str!("../../../experiments/loaded-latency.toml"),
    ),
    (
        "stream-placement",
        include_str!("../../../experiments/stream-placement.toml"),
    ),
    (
        "seed-001-hot-page-selection",
        include_str!("../../../experiments/seed-001-hot-page-selection.toml"),
    ),
    (
        "seed-001-hot-page-selection-scaled",
        include_str!("../../../experiments/seed-001-hot-page-selection-scaled.toml"),
    ),
    (
        "seed-000-tiering",
        include_str!("../../../experiments/seed-000-tiering.toml"),
    ),
    (
        "seed-000-tiering-scaled",
        include_str!("../../../experiments/seed-000-tiering-scaled.toml"),
    ),
    (
        "seed-004-damon-reclaim",
        include_str!("../../../experiments/seed-004-damon-reclaim.toml"),
    ),
    (
        "seed-004-damon-reclaim-full",
        include_str!("../../../experiments/seed-004-damon-reclaim-full.toml"),
    ),
    (
        "seed-003-ksm-numa",
        include_str!("../../../experiments/seed-003-ksm-numa.toml"),
    ),
    (
        "seed-003-ksm-numa-full",
        include_str!("../../../experiments/seed-003-ksm-numa-full.toml"),
    ),
    (
        "seed-002-weighted-interleave",
        include_str!("../../../experiments/seed-002-weighted-interleave.toml"),
    ),
    (
        "controller-vs-kernel",
        include_str!("../../../experiments/controller-vs-kernel.toml"),
    ),
];

/// Names and one-line summaries of the built-in experiments.
pub fn builtins() -> Vec<(&'static str, String)> {
    BUILTIN_FILES
        .iter()
        .map(|(name, text)| (*name, summary(text)))
        .collect()
}

/// `experiments/suites.toml`: which built-ins `tiermem experiment --suite NAME` runs.
const SUITES_FILE: &str = include_str!("../../../experiments/suites.toml");

/// A named list of built-in experiments run one after another (`--suite`, `--all`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    /// One line: what the suite shows and how long it takes.
    pub summary: String,
    pub runs: Vec<SuiteRun>,
}

/// One experiment of a suite.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteRun {
    /// A built-in experiment's name.
    pub experiment: String,
    /// Replaces the experiment file's `seeds` for this suite.
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    /// Why the run differs from the file (shown in the suite's index and the report).
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuitesFile {
    suite: Vec<Suite>,
}

/// Every suite of `experiments/suites.toml` (the file is tested to parse and to name only
/// built-ins).
#[allow(
    clippy::expect_used,
    reason = "the embedded file is tested (experiment_file::tests)"
)]
pub fn suites() -> Vec<Suite> {
    toml::from_str::<SuitesFile>(SUITES_FILE)
        .expect("experiments/suites.toml is valid")
        .suite
}

/// The suite named `name`.
pub fn suite(name: &str) -> Option<Suite> {
    suites().into_iter().find(|s| s.name == name)
}

/// The suites that run `experiment`, by name.
pub fn suites_of(experiment: &str) -> Vec<String> {
    suites()
        .into_iter()
        .filter(|s| s.runs.iter().any(|r| r.experiment == experiment))
        .map(|s| s.name)
        .collect()
}

/// A built-in experiment by name.
#[allow(
    clippy::expect_used,
    reason = "the embedded files are tested to parse (experiment_file::tests)"
)]
pub fn builtin(name: &str) -> Option<Experiment> {
    let (_, text) = BUILTIN_FILES.iter().find(|(n, _)| *n == name)?;
    Some(
        parse(text, &format!("experiments/{name}.toml"), None)
            .expect("built-in experiment files are valid"),
    )
}

/// Read an experiment file; `dir` resolves a `base` given as a path (`None`: only an
/// inline `[base]` table is accepted, as for the embedded built-ins).
pub fn parse(text: &str, origin: &str, dir: Option<&Path>) -> Result<Experiment, ConfigError> {
    // The config reader: syntax errors with line and column. Its preset expansion touches
    // only a top-level `machine`, which an experiment file does not have.
    let value = resolve_toml(text, origin)?;
    let f: ExperimentFile = serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        ConfigError::invalid(
            if key == "." { String::new() } else { key },
            e.inner().message(),
        )
        .in_file(origin)
    })?;
    let base = load_base(&f.base, origin, dir)?;
    let mut variants = Vec::with_capacity(f.variants.len());
    for (i, v) in f.variants.iter().enumerate() {
        variants.push(variant(&base, v, i, origin)?);
    }
    // Steps relate variants or rows that derived metrics add (`best-of`).
    let names: Vec<&str> = variants
        .iter()
        .map(|v| v.name.as_str())
        .chain(f.derive.iter().map(|d| d.row.as_str()))
        .collect();
    let steps = f
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| step(s, i, &names, origin))
        .collect::<Result<Vec<_>, _>>()?;
    let explain = explanations(&f, origin)?;
    if let Some(seeds) = &f.seeds {
        crate::seeds::check(seeds).map_err(|m| ConfigError::invalid("seeds", m).in_file(origin))?;
    }
    check_floors(&f, &steps, origin)?;
    Ok(Experiment {
        name: f.name,
        description: f.description,
        variants,
        metrics: f
            .metrics
            .unwrap_or_else(|| DEFAULT_METRICS.iter().map(|m| m.to_string()).collect()),
        derive: f.derive.into_iter().map(|d| (d.row, d.compute)).collect(),
        plots: f.plots,
        notes: f.notes,
        steps,
        explain,
        seeds: f.seeds.unwrap_or_default(),
        tolerance: f.tolerance,
    })
}

/// The file's floors against every published figure and change they apply to.
fn check_floors(f: &ExperimentFile, steps: &[Step], origin: &str) -> Result<(), ConfigError> {
    let mut figures: Vec<(String, String, f64)> = f
        .variants
        .iter()
        .flat_map(|v| {
            v.published
                .iter()
                .map(|(m, p)| (v.name.clone(), m.clone(), *p))
        })
        .collect();
    for d in &f.derive {
        if let Derive::BestOf { published, .. } = &d.compute {
            figures.extend(
                published
                    .iter()
                    .map(|(m, p)| (d.row.clone(), m.clone(), *p)),
            );
        }
    }
    let changes: Vec<(String, String, f64)> = steps
        .iter()
        .filter_map(|s| {
            s.published_pct
                .map(|p| (format!("{} → {}", s.from, s.to), s.metric.clone(), p))
        })
        .collect();
    f.tolerance
        .check(&figures, &changes)
        .map_err(|(key, msg)| ConfigError::invalid(key, msg).in_file(origin))
}

/// The explanations of variants and derived rows, each checked to name a published figure.
fn explanations(
    f: &ExperimentFile,
    origin: &str,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, ConfigError> {
    let variants = f.variants.iter().enumerate().map(|(i, v)| {
        (
            format!("variants[{i}]"),
            &v.name,
            &v.explain,
            Some(&v.published),
        )
    });
    let derived = f.derive.iter().enumerate().map(|(i, d)| {
        let published = match &d.compute {
            Derive::BestOf { published, .. } => Some(published),
            _ => None,
        };
        (format!("derive[{i}]"), &d.row, &d.explain, published)
    });
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (key, row, explain, published) in variants.chain(derived) {
        for (metric, text) in explain {
            if !published.is_some_and(|p| p.contains_key(metric)) {
                return Err(ConfigError::invalid(
                    format!("{key}.explain.{metric}"),
                    "explains a figure with no published value",
                )
                .in_file(origin));
            }
            out.entry(row.clone())
                .or_default()
                .insert(metric.clone(), text.clone());
        }
    }
    Ok(out)
}

/// The `summary` of an experiment file (its `description` when it has none).
pub fn summary(text: &str) -> String {
    let v: toml::Table = toml::from_str(text).unwrap_or_default();
    let get = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    get("summary")
        .or_else(|| get("description"))
        .unwrap_or_default()
}

/// Read an experiment file from disk.
pub fn from_file(path: &Path) -> Result<Experiment, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::whole_file(&origin, format!("cannot read: {e}")))?;
    parse(
        &text,
        &origin,
        Some(path.parent().unwrap_or(Path::new("."))),
    )
}

fn load_base(
    base: &toml::Value,
    origin: &str,
    dir: Option<&Path>,
) -> Result<toml::Value, ConfigError> {
    match (base, dir) {
        (toml::Value::String(p), Some(dir)) => {
            let bp = dir.join(p);
            let text = std::fs::read_to_string(&bp).map_err(|e| {
                ConfigError::invalid("base", format!("cannot read {}: {e}", bp.display()))
                    .in_file(origin)
            })?;
            resolve_toml(&text, &bp.display().to_string())
        }
        (toml::Value::String(_), None) => Err(ConfigError::invalid(
            "base",
            "a built-in experiment carries its base inline ([base])",
        )
        .in_file(origin)),
        (toml::Value::Table(t), _) => {
            let text = toml::to_string(t)
                .map_err(|e| ConfigError::invalid("base", e.to_string()).in_file(origin))?;
            resolve_toml(&text, origin)
        }
        _ => Err(
            ConfigError::invalid("base", "a config file path or an inline [base] table")
                .in_file(origin),
        ),
    }
}

/// A variant: the base with its `unset` keys removed and its `set` paths applied,
/// validated as a simulator config.
fn variant(
    base: &toml::Value,
    v: &VariantFile,
    i: usize,
    origin: &str,
) -> Result<Variant, ConfigError> {
    let key = |f: &str| format!("variants[{i}].{f}");
    if !v
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(ConfigError::invalid(
            key("name"),
            "use letters, digits, '-', '_' and '.' only",
        )
        .in_file(origin));
    }
    let mut cfg = base.clone();
    for p in &v.unset {
        unset_path(&mut cfg, p).map_err(|m| {
            ConfigError::invalid(format!("{}.{p}", key("unset")), m).in_file(origin)
        })?;
    }
    for (p, val) in &v.set {
        set_path(&mut cfg, p, val.clone()).map_err(|e| {
            ConfigError::invalid(format!("{}.{}", key("set"), e.key), e.message).in_file(origin)
        })?;
    }
    // A variant may name another machine preset.
    expand_machine_preset(&mut cfg).map_err(|e| {
        ConfigError::invalid(format!("{}.{}", key("set"), e.key), e.message).in_file(origin)
    })?;
    SimConfig::from_value(&cfg, &format!("{origin} (variant {})", v.name))?;
    Ok(Variant {
        name: v.name.clone(),
        config: cfg,
        published: v.published.clone(),
        labels: v.labels.clone(),
    })
}

fn step(s: &StepFile, i: usize, names: &[&str], origin: &str) -> Result<Step, ConfigError> {
    let key = |f: &str| format!("steps[{i}].{f}");
    for (f, name) in [("from", &s.from), ("to", &s.to)] {
        if !names.contains(&name.as_str()) {
            return Err(ConfigError::invalid(
                key(f),
                format!("no variant or derived row named {name:?}"),
            )
            .in_file(origin));
        }
    }
    let expect = Expect::parse(&s.expect).ok_or_else(|| {
        ConfigError::invalid(
            key("expect"),
            format!(
                "{:?}: expected higher, lower, not-lower, not-higher, at-most:F, at-least:F, within:F or reported",
                s.expect
            ),
        )
        .in_file(origin)
    })?;
    Ok(Step {
        from: s.from.clone(),
        to: s.to.clone(),
        metric: s.metric.clone(),
        published_pct: s.published_pct,
        expect,
        explain: s.explain.clone(),
    })
}

/// Remove the key at a dotted path (`kernel.zram`, `workloads[1].mbind`).
pub fn unset_path(value: &mut toml::Value, path: &str) -> Result<(), String> {
    let parts = split_path(path)?;
    let Some((last, parents)) = parts.split_last() else {
        return Err("empty path".into());
    };
    let mut cur = value;
    for part in parents {
        cur = match part {
            PathPart::Key(k) => cur
                .as_table_mut()
                .and_then(|t| t.get_mut(k))
                .ok_or_else(|| format!("no key `{k}`"))?,
            PathPart::Index(i) => cur
                .as_array_mut()
                .and_then(|a| a.get_mut(*i))
                .ok_or_else(|| format!("no element {i}"))?,
        };
    }
    match last {
        PathPart::Key(k) => cur
            .as_table_mut()
            .and_then(|t| t.remove(k))
            .map(|_| ())
            .ok_or_else(|| format!("no key `{k}` to remove")),
        PathPart::Index(_) => Err("remove a whole array, not one element".into()),
    }
}

/// An experiment as a file [`parse`] reads back to the same variants: the first variant's
/// config as the inline base, each variant as the paths where its config differs.
pub fn to_toml(e: &Experiment) -> Result<String, String> {
    let mut base = e
        .variants
        .first()
        .map(|v| v.config.clone())
        .ok_or("an experiment without variants")?;
    let variants = e
        .variants
        .iter()
        .map(|v| {
            let mut set = toml::Table::new();
            let mut unset = Vec::new();
            diff(&base, &v.config, "", &mut set, &mut unset);
            if let Some(m) = set.get_mut("machine") {
                name_preset(m);
            }
            VariantFile {
                name: v.name.clone(),
                set,
                unset,
                published: v.published.clone(),
                explain: e.explain.get(&v.name).cloned().unwrap_or_default(),
                labels: v.labels.clone(),
            }
        })
        .collect();
    if let Some(m) = base.get_mut("machine") {
        name_preset(m);
    }
    let file = ExperimentFile {
        name: e.name.clone(),
        summary: String::new(),
        description: e.description.clone(),
        base,
        metrics: Some(e.metrics.clone()),
        notes: e.notes.clone(),
        variants,
        derive: e
            .derive
            .iter()
            .map(|(row, d)| DeriveFile {
                row: row.clone(),
                compute: d.clone(),
                explain: match d {
                    Derive::BestOf { .. } => e.explain.get(row).cloned().unwrap_or_default(),
                    _ => BTreeMap::new(),
                },
            })
            .collect(),
        plots: e.plots.clone(),
        tolerance: e.tolerance.clone(),
        steps: e
            .steps
            .iter()
            .map(|s| StepFile {
                from: s.from.clone(),
                to: s.to.clone(),
                metric: s.metric.clone(),
                expect: s.expect.spelling(),
                published_pct: s.published_pct,
                explain: s.explain.clone(),
            })
            .collect(),
        seeds: (!e.seeds.is_empty()).then(|| e.seeds.clone()),
    };
    toml::to_string(&file).map_err(|e| e.to_string())
}

/// A machine table that is exactly a preset becomes the preset's name.
fn name_preset(machine: &mut toml::Value) {
    let name = machine
        .get("name")
        .and_then(|n| n.as_str())
        .map(str::to_string);
    if let Some(name) = name {
        if tiermem_core::presets::machine_value(&name).as_ref() == Some(machine) {
            *machine = toml::Value::String(name);
        }
    }
}

/// The `set` paths and `unset` keys that turn `a` into `b`.
fn diff(
    a: &toml::Value,
    b: &toml::Value,
    path: &str,
    set: &mut toml::Table,
    unset: &mut Vec<String>,
) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (toml::Value::Table(x), toml::Value::Table(y)) => {
            for (k, vb) in y {
                match x.get(k) {
                    Some(va) => diff(va, vb, &join(k), set, unset),
                    None => {
                        set.insert(join(k), vb.clone());
                    }
                }
            }
            for k in x.keys().filter(|k| !y.contains_key(*k)) {
                unset.push(join(k));
            }
        }
        (toml::Value::Array(x), toml::Value::Array(y))
            if x.len() == y.len() && !path.is_empty() =>
        {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(va, vb, &format!("{path}[{i}]"), set, unset);
            }
        }
        _ if a != b => {
            set.insert(path.to_string(), b.clone());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{builtin, builtins};

    /// Every built-in file parses, and written back by `to_toml` and read again has the
    /// same variants, metrics, derived metrics, plots, notes and steps.
    #[test]
    fn built_ins_round_trip_through_files() {
        let names: Vec<String> = builtins().iter().map(|(n, _)| n.to_string()).collect();
        for name in names {
            let e = builtin(&name).unwrap();
            let text = to_toml(&e).unwrap();
            let back = parse(&text, &name, None).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(back.name, e.name);
            assert_eq!(back.description, e.description);
            assert_eq!(back.metrics, e.metrics);
            assert_eq!(back.notes, e.notes);
            assert_eq!(back.explain, e.explain, "{name}");
            assert_eq!(back.derive, e.derive, "{name}");
            assert_eq!(back.plots, e.plots, "{name}");
            assert_eq!(
                format!("{:?}", back.steps),
                format!("{:?}", e.steps),
                "{name}"
            );
            assert_eq!(back.variants.len(), e.variants.len());
            for (a, b) in back.variants.iter().zip(&e.variants) {
                assert_eq!(a.name, b.name);
                assert_eq!(a.config, b.config, "{name} variant {}", a.name);
                assert_eq!(a.published, b.published);
                assert_eq!(a.labels, b.labels);
            }
        }
    }

    /// The suites name only built-ins; the main one shows every seed (000 to 004) and runs
    /// no experiment at full size; together they run every built-in.
    #[test]
    fn suites_name_built_ins_and_the_main_one_covers_every_seed() {
        let all = suites();
        let main = suite("main").unwrap();
        for s in &all {
            for r in &s.runs {
                let e = builtin(&r.experiment)
                    .unwrap_or_else(|| panic!("suite {}: no built-in {}", s.name, r.experiment));
                if let Some(seeds) = &r.seeds {
                    crate::seeds::check(seeds).unwrap();
                    assert!(r.note.is_some(), "{}: say why the seeds differ", e.name);
                }
            }
        }
        for seed in ["seed-000", "seed-001", "seed-002", "seed-003", "seed-004"] {
            assert!(
                main.runs.iter().any(|r| r.experiment.starts_with(seed)),
                "the main suite has no {seed} experiment"
            );
        }
        assert!(!main.runs.iter().any(|r| r.experiment.ends_with("-full")));
        for (name, _) in builtins() {
            assert!(!suites_of(name).is_empty(), "{name} is in no suite");
        }
    }

    #[test]
    fn unset_removes_keys_and_refuses_what_is_not_there() {
        let mut v: toml::Value = toml::from_str("a = 1\n[b]\nc = 2\nd = [1, 2]\n").unwrap();
        unset_path(&mut v, "b.c").unwrap();
        assert!(v["b"].get("c").is_none());
        assert!(unset_path(&mut v, "b.c").unwrap_err().contains("no key"));
        assert!(unset_path(&mut v, "b.d[0]").is_err());
    }
}
