//! Parameter sweeps from a sweep file (`tiermem sweep FILE --out DIR`): one base config,
//! fixed overrides, a grid of `set`-path values whose Cartesian product is run (the last
//! path varying fastest), on every core of this machine. The output is what the Python
//! package's `tiermem.sweeps` writes (which also runs sweeps on a Dask cluster):
//! `results.csv` (one row per point: the parameters, then the metrics), `results.json`
//! (the experiment report shape, whose `plots` are drawn natively) and `points/NNNN/`
//! (`overrides.toml`, `config.json`, `summary.json`, `timeline.csv`).
//!
//! ```toml
//! name = "promotion"
//! base = "seed-001-base.toml"    # a config file relative to this file, or a [base] table
//! metrics = ["workloads[0].score_accesses_per_s", "promote_mbps"]   # optional
//! [set]
//! "machine.nodes[0].capacity" = "1GiB"
//! [grid]
//! "kernel.numa.promote_rate_limit_mbps" = [16, 64, 256]
//! "kernel.numa.hot_threshold_ms" = [62, 250]
//! ```

use crate::experiment::run_all_on;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use tiermem_core::config::SimConfig;
use tiermem_core::ConfigError;
use tiermem_sim::SimError;

const KEYS: [&str; 7] = [
    "name",
    "description",
    "base",
    "set",
    "grid",
    "metrics",
    "plots",
];

/// A parsed sweep file.
#[derive(Clone, Debug)]
pub struct SweepFile {
    pub name: String,
    pub description: String,
    /// The base config's text and how errors name it (its file, or the sweep file for an
    /// inline `[base]` table).
    pub base_text: String,
    pub base_origin: String,
    /// `[set]`: applied to every point, before the grid's values.
    pub fixed: Vec<(String, toml::Value)>,
    /// `[grid]`, in file order.
    pub grid: Vec<(String, Vec<toml::Value>)>,
    /// Metric columns to keep (all numeric summary values when absent).
    pub metrics: Option<Vec<String>>,
    /// `[[plots]]`, as an experiment's `results.json` takes them.
    pub plots: Vec<Value>,
}

/// The CLI's overrides of every point.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub seed: Option<u64>,
    pub duration_s: Option<f64>,
    /// Simulations at once (default: the CPU count).
    pub workers: Option<usize>,
}

fn bad(origin: &str, key: &str, msg: impl Into<String>) -> ConfigError {
    ConfigError::invalid(key, msg).in_file(origin)
}

/// Read and check a sweep file (the base config and the points are checked by [`run`]).
pub fn load(path: &Path) -> Result<SweepFile, ConfigError> {
    let origin = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(&origin, "", format!("cannot read: {e}")))?;
    let value = tiermem_core::config::parse_toml(&text, &origin)?;
    let table = value
        .as_table()
        .ok_or_else(|| bad(&origin, "", "expected a table"))?;
    if let Some(k) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(bad(
            &origin,
            k,
            format!("unknown key (expected {})", KEYS.join(", ")),
        ));
    }
    let string = |k: &str, default: &str| -> Result<String, ConfigError> {
        match table.get(k) {
            None => Ok(default.to_string()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(&origin, k, "must be a string")),
        }
    };
    let stem = path
        .file_stem()
        .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
    let name = string("name", &stem)?;
    if name.is_empty() {
        return Err(bad(&origin, "name", "must be a non-empty string"));
    }
    let (base_text, base_origin) = match table.get("base") {
        Some(toml::Value::String(f)) => {
            let p = path.parent().unwrap_or(Path::new(".")).join(f);
            let t = std::fs::read_to_string(&p)
                .map_err(|e| bad(&origin, "base", format!("cannot read {}: {e}", p.display())))?;
            (t, p.display().to_string())
        }
        Some(toml::Value::Table(t)) => (
            toml::to_string(t).map_err(|e| bad(&origin, "base", e.to_string()))?,
            origin.clone(),
        ),
        _ => {
            return Err(bad(
                &origin,
                "base",
                "missing: a config file path or an inline [base] table",
            ))
        }
    };
    let fixed = match table.get("set") {
        None => Vec::new(),
        Some(toml::Value::Table(t)) => in_file_order(&text, "set", t),
        Some(_) => return Err(bad(&origin, "set", "must be a table of \"path\" = value")),
    };
    let grid = match table.get("grid") {
        Some(toml::Value::Table(t)) if !t.is_empty() => in_file_order(&text, "grid", t)
            .into_iter()
            .map(|(p, v)| match v {
                toml::Value::Array(a) if !a.is_empty() => Ok((p, a)),
                _ => Err(bad(
                    &origin,
                    &format!("grid.{p}"),
                    "must be a non-empty array of values",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => {
            return Err(bad(
                &origin,
                "grid",
                "missing: a [grid] table of \"path\" = [values]",
            ))
        }
    };
    let metrics = match table.get("metrics") {
        None => None,
        Some(toml::Value::Array(a)) => Some(
            a.iter()
                .map(|m| m.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(&origin, "metrics", "must be an array of metric paths"))?,
        ),
        Some(_) => return Err(bad(&origin, "metrics", "must be an array of metric paths")),
    };
    let plots = match table.get("plots") {
        None => Vec::new(),
        Some(toml::Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let json = serde_json::to_value(p).ok().filter(|j| {
                    j.get("file").is_some_and(Value::is_string)
                        && j.get("type").is_some_and(Value::is_string)
                });
                json.ok_or_else(|| {
                    bad(
                        &origin,
                        &format!("plots[{i}]"),
                        "needs `file` and `type` strings",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(bad(
                &origin,
                "plots",
                "must be an array of tables ([[plots]])",
            ))
        }
    };
    Ok(SweepFile {
        name,
        description: string("description", "")?,
        base_text,
        base_origin,
        fixed,
        grid,
        metrics,
        plots,
    })
}

/// A table's entries in the order the file wrote them (the `toml` crate sorts keys; the
/// grid's order decides the points' order and the columns').
fn in_file_order(text: &str, key: &str, t: &toml::Table) -> Vec<(String, toml::Value)> {
    let order: Vec<String> = text
        .parse::<toml_edit::DocumentMut>()
        .ok()
        .and_then(|d| {
            d.get(key)
                .and_then(|i| i.as_table_like())
                .map(|tl| tl.iter().map(|(k, _)| k.to_string()).collect())
        })
        .unwrap_or_default();
    let mut out: Vec<(String, toml::Value)> = order
        .iter()
        .filter_map(|k| Some((k.clone(), t.get(k)?.clone())))
        .collect();
    for (k, v) in t {
        if !order.contains(k) {
            out.push((k.clone(), v.clone()));
        }
    }
    out
}

/// The grid's points: its Cartesian product, the last path varying fastest.
pub fn expand(grid: &[(String, Vec<toml::Value>)]) -> Vec<Vec<(String, toml::Value)>> {
    let mut points: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
    for (path, values) in grid {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((path.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
}

/// `path=value, ...` for messages and point names.
fn label(point: &[(String, toml::Value)], short: bool) -> String {
    point
        .iter()
        .map(|(p, v)| {
            let p = if short {
                p.rsplit('.').next().unwrap_or(p)
            } else {
                p
            };
            format!("{p}={}", cell(v))
        })
        .collect::<Vec<_>>()
        .join(if short { "," } else { ", " })
}

/// A parameter value as a table cell: strings bare, the rest as TOML.
fn cell(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The numeric values of a summary keyed by metric path (`vmstat.pgfault`,
/// `workloads[0].score_accesses_per_s`); null becomes NaN, strings are left out.
pub fn flatten(v: &Value) -> Vec<(String, f64)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, f64)>) {
        match v {
            Value::Object(m) => {
                for (k, sub) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, sub, out);
                }
            }
            Value::Array(a) => {
                for (i, sub) in a.iter().enumerate() {
                    walk(&format!("{prefix}[{i}]"), sub, out);
                }
            }
            Value::Null => out.push((prefix.to_string(), f64::NAN)),
            Value::Bool(b) => out.push((prefix.to_string(), f64::from(u8::from(*b)))),
            Value::Number(n) => out.push((prefix.to_string(), n.as_f64().unwrap_or(f64::NAN))),
            Value::String(_) => {}
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}

/// What a sweep produced.
#[derive(Debug)]
pub struct Outcome {
    pub points: usize,
    pub csv: PathBuf,
}

/// Validate every point, run them all (in parallel, results in grid order) and write the
/// outputs under `out`. `progress(done, total)` is called as points finish.
#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own config and summary types cannot fail"
)]
pub fn run(
    file: &SweepFile,
    out: &Path,
    opts: Options,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome, SimError> {
    let points = expand(&file.grid);
    let mut configs = Vec::with_capacity(points.len());
    for (i, point) in points.iter().enumerate() {
        let origin = format!(
            "{} (sweep point {i}: {})",
            file.base_origin,
            label(point, false)
        );
        let overrides: Vec<(String, toml::Value)> =
            file.fixed.iter().chain(point).cloned().collect();
        let mut cfg: SimConfig =
            tiermem_sim::config_from_text(&file.base_text, &origin, &overrides)?;
        tiermem_sim::apply_overrides(&mut cfg, opts.seed, opts.duration_s)?;
        configs.push(cfg);
    }
    let runs = run_all_on(&configs, opts.workers, &|done, n, _| progress(done, n));
    let io = |p: &Path, e: std::io::Error| SimError::Io {
        path: p.display().to_string(),
        source: e,
    };
    let params: Vec<&String> = file.grid.iter().map(|(p, _)| p).collect();
    let mut rows: Vec<Vec<(String, f64)>> = Vec::new();
    let mut variants = Vec::new();
    for (i, ((point, cfg), r)) in points.iter().zip(&configs).zip(runs).enumerate() {
        let r = r?;
        let summary = serde_json::to_value(&r.summary).expect("summary serialises");
        let rel = PathBuf::from("points").join(format!("{i:04}"));
        let dir = out.join(&rel);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let overrides: String = point
            .iter()
            .map(|(p, v)| format!("{} = {v}\n", toml::Value::String(p.clone())))
            .collect();
        let files = [
            ("overrides.toml", overrides),
            (
                "config.json",
                serde_json::to_string_pretty(cfg).expect("config serialises"),
            ),
            (
                "summary.json",
                serde_json::to_string_pretty(&summary).expect("summary serialises"),
            ),
            ("timeline.csv", r.timeline_csv),
        ];
        for (name, body) in files {
            let p = dir.join(name);
            std::fs::write(&p, body).map_err(|e| io(&p, e))?;
        }
        let flat = flatten(&summary);
        let kept: Vec<(String, f64)> = match &file.metrics {
            None => flat.clone(),
            Some(ms) => ms
                .iter()
                .map(|m| {
                    let v = flat.iter().find(|f| &f.0 == m).map_or(f64::NAN, |f| f.1);
                    (m.clone(), v)
                })
                .collect(),
        };
        variants.push(variant_json(i, point, &flat, &rel));
        rows.push(kept);
    }
    let csv = out.join("results.csv");
    std::fs::write(&csv, results_csv(&params, &points, &rows)).map_err(|e| io(&csv, e))?;
    let results = serde_json::json!({
        "experiment": file.name,
        "description": file.description,
        "parameters": params,
        "variants": variants,
        "plots": file.plots,
    });
    let p = out.join("results.json");
    let text = serde_json::to_string_pretty(&results).expect("JSON serialises") + "\n";
    std::fs::write(&p, text).map_err(|e| io(&p, e))?;
    Ok(Outcome {
        points: points.len(),
        csv,
    })
}

/// One point as a `results.json` variant: its labels (the parameters), its metrics (the
/// flattened summary and the numeric parameters) and its timeline.
fn variant_json(
    i: usize,
    point: &[(String, toml::Value)],
    flat: &[(String, f64)],
    rel: &Path,
) -> Value {
    let mut labels = Map::new();
    let mut metrics = Map::new();
    for (k, v) in flat {
        metrics.insert(
            k.clone(),
            serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number),
        );
    }
    for (p, v) in point {
        let j = serde_json::to_value(v).unwrap_or(Value::Null);
        if let Some(x) = j.as_f64() {
            metrics.insert(p.clone(), serde_json::json!(x));
        }
        labels.insert(p.clone(), j);
    }
    let name = if point.is_empty() {
        format!("{i:04}")
    } else {
        label(point, true)
    };
    serde_json::json!({
        "name": name,
        "point": i,
        "labels": labels,
        "metrics": metrics,
        "timeline_csv": rel.join("timeline.csv").display().to_string(),
    })
}

/// `results.csv`: `point`, the parameters, then the metric columns (the union over points,
/// in first-seen order; empty where a point lacks one or it is NaN).
fn results_csv(
    params: &[&String],
    points: &[Vec<(String, toml::Value)>],
    rows: &[Vec<(String, f64)>],
) -> String {
    let mut cols: Vec<&str> = Vec::new();
    for row in rows {
        for (k, _) in row {
            if !cols.contains(&k.as_str()) && !params.iter().any(|p| p.as_str() == k) {
                cols.push(k);
            }
        }
    }
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut s = String::from("point");
    for c in params
        .iter()
        .map(|p| p.as_str())
        .chain(cols.iter().copied())
    {
        s.push(',');
        s.push_str(&quote(c));
    }
    s.push('\n');
    for (i, (point, row)) in points.iter().zip(rows).enumerate() {
        s.push_str(&i.to_string());
        for (_, v) in point {
            s.push(',');
            s.push_str(&quote(&cell(v)));
        }
        for c in &cols {
            s.push(',');
            if let Some((_, v)) = row.iter().find(|(k, _)| k == c) {
                if v.is_finite() {
                    s.push_str(&format!("{v}"));
                }
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("s.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_grid_keeps_file_order_and_the_last_path_varies_fastest() {
        let d = tempfile::tempdir().unwrap();
        let p = file(
            d.path(),
            "base = { duration = \"1s\" }\n[grid]\n\"z.b\" = [1, 2]\n\"a.c\" = [\"x\", \"y\"]\n",
        );
        let s = load(&p).unwrap();
        assert_eq!(s.grid[0].0, "z.b");
        let pts = expand(&s.grid);
        assert_eq!(pts.len(), 4);
        assert_eq!(label(&pts[1], true), "b=1,c=y");
        assert_eq!(label(&pts[2], false), "z.b=2, a.c=x");
    }

    #[test]
    fn bad_sweep_files_name_the_key() {
        let d = tempfile::tempdir().unwrap();
        for (text, key) in [
            ("base = { }\n", "grid"),
            ("[grid]\na = [1]\n", "base"),
            ("base = { }\n[grid]\na = []\n", "grid.a"),
            ("base = { }\nfoo = 1\n[grid]\na = [1]\n", "foo"),
            ("base = { }\nmetrics = [1]\n[grid]\na = [1]\n", "metrics"),
            (
                "base = { }\n[grid]\na = [1]\n[[plots]]\nfile = \"x.png\"\n",
                "plots[0]",
            ),
        ] {
            let e = load(&file(d.path(), text)).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn summaries_flatten_to_metric_paths() {
        let v = serde_json::json!({"a": 1, "b": {"c": [2, null]}, "s": "x"});
        let f = flatten(&v);
        assert_eq!(f[0], ("a".to_string(), 1.0));
        assert_eq!(f[1], ("b.c[0]".to_string(), 2.0));
        assert!(f[2].1.is_nan());
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn the_csv_has_parameters_then_metrics() {
        let params = ["p".to_string()];
        let pr: Vec<&String> = params.iter().collect();
        let points = vec![vec![("p".to_string(), toml::Value::Integer(1))]];
        let rows = vec![vec![("m".to_string(), 2.5), ("n".to_string(), f64::NAN)]];
        assert_eq!(results_csv(&pr, &points, &rows), "point,p,m,n\n0,1,2.5,\n");
    }
}
